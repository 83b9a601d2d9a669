"""Playouts of a deviation: seat 0 played by one chooser, every other seat by another, from each seat's own view.

A best response (``players.best_response``) values each card it may lead by playing the deal out in worlds where
the other seats keep to the agent it deviates from and its own seat to a continuation policy.  ``playout_gains``
plays every world × card: the full pack in the batch engine (every row at once; at each step each chooser is asked
once, ``act_batch``, for all the rows where it is to act), the small pack in the scalar engine, one deal after
another.  Unlike ``playouts`` (``pimc``'s rollouts, a rule of thumb that sees the world's cards), no seat here sees
another's cards: each reads its own view of the world.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from popejoan_env.engine import Deal
from popejoan_env.search.posterior import Chooser
from popejoan_env.seat_view import seat_view

__all__ = ["playout_gains"]


def playout_gains(worlds: Sequence[Deal], candidates: Sequence[int], others: Chooser, own: Chooser) -> np.ndarray:
    """[worlds, candidates] counters relative seat 0 gains when it leads each candidate in each world (positions of
    one deal where it is to lead, as ``WorldSampler.deals`` gives them) and the deal is played out, seat 0 by
    ``own`` and every other seat by ``others``."""
    if worlds[0].rules.pack == "full":
        return _batch_gains(worlds, candidates, others, own)
    return _scalar_gains(worlds, candidates, others, own)


def _scalar_gains(worlds: Sequence[Deal], candidates: Sequence[int], others: Chooser, own: Chooser) -> np.ndarray:
    def choose(deal: Deal, legal: list[int]) -> int:
        seat = deal.to_act
        return int((own if seat == 0 else others).act(seat_view(deal, seat)))

    gains = np.empty((len(worlds), len(candidates)), dtype=np.int64)
    for k, world in enumerate(worlds):
        start = world.balances[0]
        for i, card in enumerate(candidates):
            deal = world.copy()
            deal.play(card)
            deal.play_out(choose)
            gains[k, i] = deal.balances[0] - start
    return gains


def _batch_gains(worlds: Sequence[Deal], candidates: Sequence[int], others: Chooser, own: Chooser) -> np.ndarray:
    from popejoan_env.search.playouts import worlds_batch  # the batch engine builds tables at import

    batch = worlds_batch(worlds, repeat=len(candidates))
    rows = np.arange(batch.num_deals)
    start = batch.balances[:, 0].copy()
    actions = np.tile(np.asarray(candidates, dtype=np.int64), len(worlds))
    batch.step(actions)
    while not batch.done.all():
        live = np.flatnonzero(~batch.done)
        legal = batch.legal_mask()[live]
        mine = batch.to_act[live] == 0
        for who, chooser in ((mine, own), (~mine, others)):
            if who.any():
                actions[live[who]] = chooser.act_batch(batch, live[who], legal[who])
        batch.step(actions[live], which=live)
    return (batch.balances[rows, 0] - start).reshape(len(worlds), len(candidates))
