"""The cost of a round's games: CPU seconds of the rollout stage's search per deal, for each belief and player.

Run from the repository root::

    python benchmarks/bench_rounds.py                          # the shipped network, 128 deals, 4 seats modern
    python benchmarks/bench_rounds.py models/ppo_modern_4p/model.zip --deals 256 --worlds 8

The deals are played in this process, one lockstep group at a time, as one worker of ``popejoan train`` plays
them (``training.rollout_games``), on one thread; a first group of 4 deals is played and not counted (numba's
compile).  The rows: each belief with the search playing its best card (``--rollout-play search``, the
default), then the default belief with the network playing its own (``--rollout-play network``: a forward
more a decision, and other positions), then the cards valued in the deal itself (``--rollout-belief deal``,
played by the network: no worlds).  CPU time, not wall time, so other work beside it changes the figures
little; the ratio to the first row is the figure to read.
"""

from __future__ import annotations

import time

from threadpoolctl import threadpool_limits

from popejoan_env.cli import SEED, Integer, OneLineParser
from popejoan_env.nets.policy import load_policy
from popejoan_env.players import shipped_model
from popejoan_env.rules import Rules
from popejoan_env.training import rollout_games
from popejoan_env.training.expert_games import tables_of


def main(argv: list[str] | None = None) -> None:
    """Time a round's games for each belief and player and print CPU ms per deal and the ratio to the first."""
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="shipped", help="a model file, or shipped (the default)")
    parser.add_argument("--deals", type=Integer(1, 4096), default=128, help="deals timed for each row")
    parser.add_argument("--worlds", type=Integer(1, 1024), default=8, help="worlds a decision")
    parser.add_argument("--seed", type=SEED, default=1, help="the deals' seed")
    args = parser.parse_args(argv)
    policy = load_policy(shipped_model() if args.model == "shipped" else args.model)
    table = tables_of([Rules.preset("modern")], [4])[0]
    base = None
    with threadpool_limits(limits=1):
        rows = [(belief, "search") for belief in rollout_games.WORLD_BELIEFS] + [("uniform", "network"),
                                                                                 ("deal", "network")]
        for belief, play in rows:
            rollout_games.play_group(policy, table, (-24, 72), 0.1, args.seed + 1, args.worlds, belief, range(4),
                                      play)
            start = time.process_time()
            for first in range(0, args.deals, rollout_games.GROUP):
                deals = range(first, min(first + rollout_games.GROUP, args.deals))
                rollout_games.play_group(policy, table, (-24, 72), 0.1, args.seed, args.worlds, belief, deals, play)
            ms = 1000 * (time.process_time() - start) / args.deals
            base = base or ms
            print(f"{belief:8s} played by the {play:8s} {ms:8.1f} CPU ms a deal  {ms / base:5.2f}x the first",
                  flush=True)


if __name__ == "__main__":
    main()
