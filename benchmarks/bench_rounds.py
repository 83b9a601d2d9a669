"""The cost of a round's games: CPU seconds of the rollout stage's search per deal, for each number of worlds.

Run from the repository root::

    python benchmarks/bench_rounds.py                          # the shipped network, 128 deals, 4 seats modern
    python benchmarks/bench_rounds.py models/ppo_modern_4p/model.zip --deals 256 --worlds 8,32

The deals are played in this process, one lockstep group at a time, as one worker of ``popejoan train`` plays
them (``training.rollout_games``), on one thread; a first group of 4 deals is played and not counted (numba's
compile).  A row for each ``--worlds`` (``popejoan train --rollout-worlds``; the recipe's is 8).  CPU time, not
wall time, so other work beside it changes the figures little; the ratio to the first row is the figure to read.
(The rows of the beliefs and players measured and not kept, ``--rollout-belief`` and ``--rollout-play``, are
timed by this script at commit ``21b19f4``.)
"""

from __future__ import annotations

import argparse
import time

from threadpoolctl import threadpool_limits

from popejoan_env.cli import SEED, Integer, OneLineParser
from popejoan_env.nets.policy import load_policy
from popejoan_env.players.pimc import MAX_SAMPLES
from popejoan_env.players import shipped_model
from popejoan_env.rules import Rules
from popejoan_env.training import rollout_games
from popejoan_env.training.expert_games import tables_of


def worlds_list(text: str) -> list[int]:
    """An argparse ``type``: a comma list of worlds a decision, each 1..``MAX_SAMPLES``."""
    worlds = [Integer(1, MAX_SAMPLES)(part) for part in text.split(",")]
    if len(set(worlds)) < len(worlds):
        raise argparse.ArgumentTypeError(f"{text!r}: each number of worlds once (a row is timed for each)")
    return worlds


def main(argv: list[str] | None = None) -> None:
    """Time a round's games for each number of worlds and print CPU ms per deal and the ratio to the first."""
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="shipped", help="a model file, or shipped (the default)")
    parser.add_argument("--deals", type=Integer(1, 4096), default=128, help="deals timed for each row")
    parser.add_argument("--worlds", type=worlds_list, default=[8, 32],
                        help="worlds a decision, a row for each (a comma list; default 8,32)")
    parser.add_argument("--seed", type=SEED, default=1, help="the deals' seed")
    args = parser.parse_args(argv)
    policy = load_policy(shipped_model() if args.model == "shipped" else args.model)
    table = tables_of([Rules.preset("modern")], [4])[0]
    base = None
    with threadpool_limits(limits=1):
        for worlds in args.worlds:
            rollout_games.play_group(policy, table, (-24, 72), 0.1, args.seed + 1, worlds, range(4))
            start = time.process_time()
            for first in range(0, args.deals, rollout_games.GROUP):
                deals = range(first, min(first + rollout_games.GROUP, args.deals))
                rollout_games.play_group(policy, table, (-24, 72), 0.1, args.seed, worlds, deals)
            ms = 1000 * (time.process_time() - start) / args.deals
            base = base or ms
            print(f"{worlds:5d} worlds a decision {ms:8.1f} CPU ms a deal  {ms / base:5.2f}x the first", flush=True)


if __name__ == "__main__":
    main()
