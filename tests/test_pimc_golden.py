"""pimc's decisions, pinned: a fingerprint of every card played in tournaments where pimc holds most seats.

A change meant to keep pimc's behaviour (a refactor of the search, the worlds, the batch rollouts, the
engines under them) must leave these hashes as they are; a change meant to alter its choices updates them
and says so.  Each hash covers the plays and the balances of every deal, with ``stops_first`` at seat 1 so
the search meets a non-mirror opponent; the default engine (batched, compiled rollouts) and the scalar one
are both pinned.

Two sets of pins: ``draws=python`` (the worlds drawn one at a time in Python, pinned before the compiled
sampler; these hashes are the ones recorded then) and the default ``draws=compiled`` (a decision's worlds drawn
in one compiled batch from one seed of the player's generator).  The two draw the same distribution of worlds
with other random numbers, so their decisions differ; each set holds its own.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from popejoan_env.engine import Deal
from popejoan_env.players import make_player
from popejoan_env.seat_view import seat_view

GOLDEN = [  # preset, seats, spec, deals, seed, sha256[:16] (recorded 2026-12-02 before the upper floors' redesign)
    ("modern", 4, "pimc:draws=python", 40, 1, "2173eb8deba5b39f"),
    ("victorian", 3, "pimc:draws=python", 30, 2, "84f9a1f1285caa68"),
    ("modern", 6, "pimc:draws=python", 20, 3, "dd293a7596101420"),
    ("victorian", 7, "pimc:draws=python", 12, 4, "4c8df4da3e8e9fd1"),
    ("modern", 4, "pimc:engine=scalar,draws=python", 25, 5, "3ed1247933ff6117"),
    ("modern", 5, "pimc:samples=16,draws=python", 30, 6, "e1120556584f4c3d"),
    # the compiled draws, the default (recorded 2026-12-02 with the compiled sampler)
    ("modern", 4, "pimc", 40, 1, "750bdafff0c746bb"),
    ("victorian", 3, "pimc", 30, 2, "ae628bdf3b2f93b5"),
    ("modern", 6, "pimc", 20, 3, "20f5946e2366c3f9"),
    ("victorian", 7, "pimc", 12, 4, "f9662e0ff6ab98e9"),
    ("modern", 4, "pimc:engine=scalar", 25, 5, "b107ca4becfeed49"),
    ("modern", 5, "pimc:samples=16", 30, 6, "d80307159afc0f96"),
]


def fingerprint(preset: str, players: int, spec: str, deals: int, seed: int) -> str:
    """sha256 (first 16 hex digits) of every deal's plays and balances, ``spec`` at every seat but 1."""
    h = hashlib.sha256()
    seats = [make_player(spec if s != 1 else "stops_first") for s in range(players)]
    for d in range(deals):
        for s, player in enumerate(seats):
            player.reset(seed * 1000 + d * 10 + s)
        deal = Deal.new(preset, players, dealer=d % players, rng=np.random.default_rng(seed + d))
        deal.play_out(lambda dl, legal: seats[dl.to_act].act(seat_view(dl, dl.to_act)))
        h.update(repr(deal.plays).encode())
        h.update(repr(deal.balances).encode())
    return h.hexdigest()[:16]


@pytest.mark.slow
@pytest.mark.parametrize(("preset", "players", "spec", "deals", "seed", "want"), GOLDEN,
                         ids=[f"{p}-{n}-{s}" for p, n, s, *_ in GOLDEN])
def test_pimc_makes_the_decisions_it_made(preset: str, players: int, spec: str, deals: int, seed: int,
                                          want: str) -> None:
    assert fingerprint(preset, players, spec, deals, seed) == want
