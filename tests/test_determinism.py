"""E19 across processes: the same seed gives the same deals, choices and outcomes whatever the hash seed."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = r"""
import hashlib, sys
import numpy as np
from popejoan_env import Deal, Rules, Session

seed = int(sys.argv[1])
digest = hashlib.sha256()
rng = np.random.default_rng(seed)
variants = [Rules.preset("modern"), Rules.preset("victorian"),
            Rules(ace_high=True, pair_split="halves"), Rules(deal="all_round", lead="any")]
for i in range(400):
    rules = variants[i % len(variants)]
    players = 3 + i % 6
    deal = Deal.new(rules, players, i % players, rng)
    while not deal.done:
        legal = deal.legal_actions()
        deal.play(legal[int(rng.integers(len(legal)))])
    digest.update(repr((deal.initial_hands, deal.dead, deal.plays, deal.awards, deal.payments,
                        deal.delta, deal.board, deal.winner)).encode())
session = Session(Rules.preset("victorian"), 5, np.random.default_rng(seed))
while not session.over:
    deal = session.next_deal()
    while not deal.done:
        deal.play(deal.legal_actions()[-1])
digest.update(repr((session.balances, session.board)).encode())
print(digest.hexdigest())
"""


def _digest(seed: int, hash_seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(seed)], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    return out.stdout.strip()


def test_e19_same_seed_same_digest_across_processes() -> None:
    first = _digest(2024, "0")
    assert len(first) == 64
    assert _digest(2024, "12345") == first
    assert _digest(2025, "0") != first
