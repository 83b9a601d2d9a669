"""Shared helpers for the engine tests: explicit deals from short strings, state snapshots, random play."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from popejoan_env.cards import CARD_NAMES, PACK, PACK_MASK, parse_card
from popejoan_env.engine import DEAD, NOT_IN_PACK, PLAYED, Deal
from popejoan_env.rules import MODERN, Rules


def make_deal(
    hands: Sequence[str],
    turnup: str,
    *,
    dead: str = "",
    dealer: int = 0,
    rules: Rules = MODERN,
    board: Sequence[int] | Mapping[str, int] | None = None,
    balances: Sequence[int] | None = None,
) -> Deal:
    """A deal from short hand strings such as ``"2C 3C KH"`` (seat 0 first).

    Every card not named in a hand goes to the dead hand (``dead`` first, then
    the rest in id order), and the ``turnup`` is the dead hand's last card, so
    a test names only the cards that matter.
    """
    named = [parse_card(c) for h in hands for c in h.split()] + [parse_card(c) for c in dead.split()]
    named.append(parse_card(turnup))
    rest = [CARD_NAMES[c] for c in PACK if c not in set(named)]
    dead_cards = dead.split() + rest + [turnup]
    return Deal.from_cards([h.split() for h in hands], dead_cards, dealer, rules, board=board, balances=balances)


def play_all(deal: Deal, cards: str) -> None:
    """Play a space-separated list of cards in order (each must be legal)."""
    for c in cards.split():
        deal.play(c)


def names(cards: Sequence[int]) -> list[str]:
    """Notation of card ids, in the given order."""
    return [CARD_NAMES[c] for c in cards]


def snapshot(deal: Deal) -> dict[str, Any]:
    """A deep copy of every slot of a deal, for before/after comparisons."""
    return {name: copy.deepcopy(getattr(deal, name)) for name in Deal.__slots__}


def check_partition(deal: Deal) -> None:
    """The 51 cards are split exactly between the hands, the dead hand and the played cards."""
    dead = deal.dead_mask
    assert len(deal.dead) == dead.bit_count()
    seen = dead | deal.played_mask
    assert dead & deal.played_mask == 0
    assert deal.played_mask.bit_count() == len(deal.plays)
    for seat, hand in enumerate(deal.hands):
        assert hand & seen == 0, f"seat {seat} shares cards"
        assert hand.bit_count() == deal.hand_sizes[seat]
        seen |= hand
    assert seen == PACK_MASK
    for c in range(52):
        o = deal.owner[c]
        if o >= 0:
            assert (deal.hands[o] >> c) & 1
        elif o == DEAD:
            assert (dead >> c) & 1
        elif o == PLAYED:
            assert (deal.played_mask >> c) & 1
        else:
            assert o == NOT_IN_PACK and c == 20
    assert (dead >> deal.turnup) & 1 and deal.dead[-1] == deal.turnup


def random_choice(deal: Deal, rng: np.random.Generator) -> int:
    """A uniformly random legal card for the seat to act."""
    legal = deal.legal_actions()
    return legal[0] if len(legal) == 1 else legal[int(rng.integers(len(legal)))]


def network_card(policy: Any, deal: Deal) -> int:
    """The card ``policy`` (a numpy ``Policy``) plays for the seat to act, one deal at a time (no batch)."""
    from popejoan_env.observation import action_mask, encode

    return int(policy.choose(encode(deal, deal.to_act)[None], action_mask(deal, deal.to_act)[None].astype(bool))[0])


def network_play_out(policy: Any, deal: Deal, card: int) -> float:
    """The counters the seat to act gains leading ``card`` in ``deal`` (changed), ``policy`` then playing every
    seat to the end, one decision at a time."""
    seat, before = deal.to_act, deal.balances[deal.to_act]
    deal.play(card)
    while deal.advance():
        deal.play(network_card(policy, deal))
    return deal.balances[seat] - before


def network_file(path: str, rules: Sequence[str] = ("modern", "victorian"), players: Sequence[int] = (3, 8),
                 seed: int = 5) -> str:
    """A small untrained ``suits`` network saved as a model file for ``rules`` and ``players`` (what a test needs
    when the weights do not matter)."""
    import torch

    from popejoan_env.nets import suits
    from popejoan_env.nets.model_file import model_metadata, save_state_dict

    gen = torch.Generator().manual_seed(seed)
    state = {suits.PREFIX + k: torch.randn(*shape, generator=gen) * 0.2 for k, shape in suits.shapes((8, 16)).items()}
    meta = model_metadata(list(rules), list(players), [8, 16], activation="tanh", architecture=suits.ARCHITECTURE,
                          critic_arch=[8])
    return save_state_dict(state, path, meta)
