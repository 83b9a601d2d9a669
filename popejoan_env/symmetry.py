"""The suits that play alike: clubs, hearts and spades, and the relabellings of an observation among them.

Diamonds hold the Pope (the 9♦) and lack the 8♦, so they play unlike the other
suits. Every other rule (R1–R12 and the variants) sees a suit only as trumps or
not trumps. So relabelling clubs, hearts and spades among themselves — in the
hands, the dead hand and the turn-up, and so in the trumps — gives a deal that is
played card for card the same way and pays the same (``tests/test_symmetry.py``
plays deals beside their relabellings to hold this). ``pack=small`` holds only
diamonds and spades: nothing is relabelled there (``plays_alike``).

``relabellings()`` gives, for each of the six orders of the three suits, the
index arrays that relabel an observation (the card planes of ``observation.LAYOUT``
and its trumps) and a 52-wide card array: six views of every decision for the
games of one, for a researcher's data augmentation. (Showing the imitation its
batches relabelled, measured in ``docs/training.md``, gained nothing significant.)
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

import numpy as np

from popejoan_env.cards import CLUBS, HEARTS, NUM_CARD_IDS, SPADES, card_id, rank_of, suit_of
from popejoan_env.observation import LAYOUT, OBS_SIZE
from popejoan_env.rules import Rules

ALIKE = (CLUBS, HEARTS, SPADES)
"""The suits that play alike."""

CARD_PLANES = frozenset({"hand", "played_by", "play_order", "led", "turnup", "forced", "known_dead", "dead_hand",
                         "inferred"})
"""The observation's fields made of 52-entry planes indexed by card id."""
SUIT_PLANES = frozenset({"trumps"})
"""The observation's fields indexed by suit."""
SUIT_FREE = frozenset({"board", "balances", "hand_sizes", "dealer", "leader", "to_act", "lead_due", "sees_dead_hand",
                       "dead_size", "pope_out", "seats", "rules", "winner", "pope_holder"})
"""The observation's fields that name no card and no suit (a test holds that the three sets cover ``LAYOUT``)."""


@dataclasses.dataclass(frozen=True)
class Relabelling:
    """One order of the suits alike, as gathers: ``obs[..., self.obs]`` and ``cards[..., self.cards]`` relabel."""

    suits: tuple[int, ...]
    """``suits[s]``: what suit ``s`` becomes (0..3; diamonds stay)."""
    obs: np.ndarray
    """int64 [OBS_SIZE]"""
    cards: np.ndarray
    """int64 [52]"""

    def card(self, card: int) -> int:
        """What ``card`` becomes."""
        return _moved(self.suits, card)


def _moved(suits: tuple[int, ...] | list[int], card: int) -> int:
    """What ``card`` becomes when suit ``s`` becomes ``suits[s]``."""
    return card_id(suits[suit_of(card)], rank_of(card))


def plays_alike(rules: Rules) -> bool:
    """Whether clubs, hearts and spades are all in the pack of ``rules`` (the full pack), so relabel freely."""
    return rules.pack == "full"


def _relabelling(order: tuple[int, ...]) -> Relabelling:
    """The gathers of the order that sends ``ALIKE[i]`` to ``order[i]``."""
    suits = list(range(4))
    for a, b in zip(ALIKE, order):
        suits[a] = b
    new = np.array([_moved(suits, c) for c in range(NUM_CARD_IDS)])
    cards = np.empty(NUM_CARD_IDS, dtype=np.int64)
    cards[new] = np.arange(NUM_CARD_IDS)  # relabelled[new(c)] = original[c]
    trumps = np.empty(4, dtype=np.int64)
    trumps[suits] = np.arange(4)
    obs = np.arange(OBS_SIZE, dtype=np.int64)
    for name, start, length, _ in LAYOUT:
        if name in CARD_PLANES:
            for plane in range(start, start + length, NUM_CARD_IDS):
                obs[plane:plane + NUM_CARD_IDS] = plane + cards
        elif name in SUIT_PLANES:
            obs[start:start + 4] = start + trumps
    return Relabelling(tuple(suits), obs, cards)


@functools.cache
def relabellings() -> tuple[Relabelling, ...]:
    """The six orders of the suits alike, the identity first."""
    return tuple(_relabelling(order) for order in itertools.permutations(ALIKE))
