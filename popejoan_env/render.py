"""The one text picture of a deal as a seat sees it (stdlib only): used by the AEC env, the Gymnasium view
and the human player.

>>> import numpy as np
>>> from popejoan_env.engine import Deal
>>> from popejoan_env.seat_view import seat_view
>>> print(describe(seat_view(Deal.new(players=3, rng=np.random.default_rng(1)), 1)).splitlines()[0])
Pope Joan (modern, 3 players) as seen by you; dealer +2
"""

from __future__ import annotations

from collections.abc import Sequence

from popejoan_env.cards import CARD_NAMES, EIGHT_DIAMONDS, RANKS, SUIT_SYMBOLS, names_of
from popejoan_env.rules import COMPARTMENTS
from popejoan_env.seat_view import SeatView


def seat_labels(players: int) -> list[str]:
    """Default labels of relative seats: ``you``, ``+1``, ``+2`` …"""
    return ["you"] + [f"+{k}" for k in range(1, players)]


def describe(view: SeatView, names: Sequence[str] | None = None) -> str:
    """A few lines: the table, trumps, the board, the cards played by suit, the seats, the hand and what is due.

    ``names`` labels the relative seats (default ``you``, ``+1`` …).
    """
    names = list(names) if names is not None else seat_labels(view.players)
    dead = view.dead_hand if view.dead_hand is not None else view.known_dead
    lines = [
        f"Pope Joan ({view.rules.name}, {view.players} players) as seen by {names[0]}; dealer {names[view.dealer]}",
        f"Turn-up {CARD_NAMES[view.turnup]}: trumps {SUIT_SYMBOLS[view.trumps]}"
        f"   {'dead hand' if view.dead_hand is not None else 'known dead'}: {' '.join(names_of(dead))}",
        "Board:  " + "  ".join(f"{c} {x}" for c, x in zip(COMPARTMENTS, view.board)),
        "Played:",
    ]
    played = view.played
    for suit in range(4):
        row = []
        for rank in range(13):
            card = suit * 13 + rank
            row.append(" " if card == EIGHT_DIAMONDS else RANKS[rank] if (played >> card) & 1 else ".")
        lines.append(f"  {SUIT_SYMBOLS[suit]} {' '.join(row)}")
    lines.append("Seats:")
    for k in range(view.players):
        marks = [m for m, on in (("dealer", k == view.dealer), ("leads", k == view.leader),
                                 ("to act", k == view.to_act)) if on]
        lines.append(f"  {names[k]:<9} {view.hand_sizes[k]:>2} cards  balance {view.balances[k]:>4}"
                     f"  {' '.join(marks)}".rstrip())
    owner = "your hand" if names[0] == "you" else f"Hand of {names[0]}"
    lines.append(f"{owner}: {' '.join(names_of(view.hand)) or '(empty)'}")
    if view.to_act < 0:
        lines.append("The deal is over.")
    elif view.forced >= 0:
        lines.append(f"{names[view.to_act]} to act: must play {CARD_NAMES[view.forced]} (R8)")
    elif view.to_act == 0:
        lines.append(f"{names[0]} to lead: one of {' '.join(names_of(view.legal))}")
    else:
        lines.append(f"{names[view.to_act]} to lead")
    return "\n".join(lines)
