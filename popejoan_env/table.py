"""The table loop: play a deal on until a seat without a player must choose.

Whoever runs a table hands the deal and one player (or ``None``) per seat to ``play_until``: the
engine plays forced cards (R8) and lone leads (``Deal.advance``), every seat with a player answers
``act(seat_view(deal, seat))``, and the loop stops where a seat without a player must choose (the
Gymnasium view's learner, the web app's human) or at the end of the deal.  The Gymnasium view, the
web games and the imitation data all play through it; the batch engine's tables do the same for N
deals at once with the players' batched ``act`` (``envs.sb3_vec_env``).

>>> import numpy as np
>>> from popejoan_env.engine import Deal
>>> from popejoan_env.players import make_player
>>> deal = Deal.new("modern", 4, rng=np.random.default_rng(3))
>>> legal = play_until(deal, [None] + [make_player("lowest") for _ in range(3)])
>>> deal.to_act == 0 and legal == deal.legal_actions()   # seat 0 has no player: it must choose
True
"""

from __future__ import annotations

from collections.abc import Sequence

from popejoan_env.engine import Deal
from popejoan_env.players.base import Player, ask
from popejoan_env.seat_view import seat_view


def play_until(deal: Deal, players: Sequence[Player | None], *, lone_leads: bool = True,
               chosen: list[int] | None = None) -> list[int]:
    """Play ``deal`` on until a seat whose player is ``None`` must choose: that seat's legal cards, or ``[]``
    when the deal is over.  ``chosen`` (a list), if given, gets the index in ``deal.plays`` of every card a
    player chose (the others were forced or lone)."""
    while True:
        legal = deal.advance(lone_leads)
        if not legal:
            return legal
        seat = deal.to_act
        player = players[seat]
        if player is None:
            return legal
        deal.play(ask(player, seat_view(deal, seat)))
        if chosen is not None:
            chosen.append(len(deal.plays) - 1)
