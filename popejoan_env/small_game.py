"""The small game's deals, every one: the ways ``pack="small"`` (10 cards, ``docs/small_game.md``) falls to three
seats, in a fixed order (the exact best responses of ``evaluate.exploitability`` walk them; the OpenSpiel small game
deals one of them at its chance node)."""

from __future__ import annotations

import itertools

from popejoan_env.cards import PACKS
from popejoan_env.errors import PopeJoanError
from popejoan_env.rules import SMALL_PACK_PLAYERS, Rules

__all__ = ["small_deals"]


def small_deals(rules: Rules, dealer: int = 0, turnup: int | None = None) -> list[tuple[tuple[int, ...], ...]]:
    """Every deal of the small pack to 3 seats, as ``(hand of seat 0, 1, 2, dead hand with the turn-up last)``
    (each hand and the rest of the dead hand sorted), in a fixed order; only those turning up ``turnup`` when
    given.  ``deal=equal``: 16,800 deals (1,680 per turn-up); ``all_round``: 50,400 (5,040)."""
    if rules.pack != "small":
        raise PopeJoanError(f"small_deals lists the deals of pack=small, not pack={rules.pack}")
    pack = PACKS[rules.pack]
    if turnup is not None and turnup not in pack:
        raise PopeJoanError(f"turn-up {turnup} is not a card id of the small pack {list(pack)}")
    sizes, dead_size = rules.hand_sizes(SMALL_PACK_PLAYERS)
    seats = [(dealer + 1 + k) % SMALL_PACK_PLAYERS for k in range(SMALL_PACK_PLAYERS)]  # eldest first (R3)
    out = []

    def fill(k: int, left: tuple[int, ...], hands: dict[int, tuple[int, ...]], dead: tuple[int, ...]) -> None:
        if k == len(seats):
            out.append((*(hands[s] for s in range(SMALL_PACK_PLAYERS)), dead))
            return
        for hand in itertools.combinations(left, sizes[k]):
            fill(k + 1, tuple(c for c in left if c not in hand), {**hands, seats[k]: hand}, dead)

    for up in pack if turnup is None else (turnup,):
        rest = tuple(c for c in pack if c != up)
        for hidden in itertools.combinations(rest, dead_size - 1):
            fill(0, tuple(c for c in rest if c not in hidden), {}, (*hidden, up))
    return out
