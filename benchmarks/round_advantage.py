"""What a round has left to learn: the gain of a round's search over each network, at one table (4 seats of modern).

Run from the repository root::

    python benchmarks/round_advantage.py models/ppo_modern_4p/rounds/round_0.zip models/ppo_modern_4p/rounds/round_1.zip
    python benchmarks/round_advantage.py shipped --deals 64 --workers 1 --seats 6 --preset victorian

Each network plays every seat of the same deals (``--seed``; the starting balances of ``popejoan train``'s
default ``--balance-range``); at each decision with two or more candidate leads, the round's search picks a
card from ``--worlds`` worlds and a judge values it against the network's card: ``--judge-worlds`` other
worlds, alike or read by the leads (``--judge-belief``), or the deal's own cards (``--judge-belief deal``,
unbiased: ``popejoan_env/training/advantage.py``).  The gain a decision is what one step of look-ahead adds
to the network there: what a further round of ``popejoan train --rounds`` can teach it.
"""

from __future__ import annotations

import time

from popejoan_env.cli import SEED, Integer, OneLineParser
from popejoan_env.errors import PopeJoanError
from popejoan_env.evaluate.command import add_table_arguments
from popejoan_env.nets.policy import load_policy
from popejoan_env.players import shipped_model
from popejoan_env.rules import Rules
from popejoan_env.training.advantage import BELIEFS, WORLD_BELIEFS, one_step_advantage
from popejoan_env.training.expert_games import tables_of

BALANCES = (-24, 72)
"""``popejoan train``'s default ``--balance-range``: the starting balances of a round's deals."""


def main(argv: list[str] | None = None) -> None:
    """Measure each model's one-step advantage and print one markdown row each."""
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="model files, or shipped")
    add_table_arguments(parser)
    parser.add_argument("--deals", type=Integer(2, 10**6), default=2000, help="deals a model (default 2000)")
    parser.add_argument("--worlds", type=Integer(1, 1024), default=8, help="worlds of the round's search (8)")
    parser.add_argument("--judge-worlds", type=Integer(1, 1024), default=None, help="worlds of the judge (64)")
    parser.add_argument("--belief", choices=WORLD_BELIEFS, default="uniform",
                        help="the round's search: worlds alike, or read by the leads (uniform)")
    parser.add_argument("--judge-belief", choices=BELIEFS, default="uniform",
                        help="the judge's worlds: alike, read by the leads, or the deal's own cards (uniform)")
    parser.add_argument("--seed", type=SEED, default=1, help="the deals' and worlds' seed")
    parser.add_argument("--workers", type=Integer(1, 256), default=2, help="forked processes (2)")
    args = parser.parse_args(argv)
    if args.judge_belief == "deal" and args.judge_worlds is not None:
        parser.error("--judge-worlds would go unused: --judge-belief deal judges in the deal itself, with no worlds")
    judge_worlds = 64 if args.judge_worlds is None else args.judge_worlds
    try:
        table = tables_of([Rules.preset(args.preset)], [args.seats])[0]
        policies = [load_policy(shipped_model() if name == "shipped" else name, table[0]) for name in args.models]
    except PopeJoanError as err:
        parser.error(str(err))
    for name, policy in zip(args.models, policies):
        if args.seats not in policy.metadata["players"]:
            parser.error(f"{name} was trained for {', '.join(map(str, policy.metadata['players']))} seats, "
                         f"not --seats {args.seats}")
    judge = "the deal itself" if args.judge_belief == "deal" else \
        f"{judge_worlds} others ({args.judge_belief})"
    print(f"{args.seats} seats of {args.preset}, {args.deals:,} deals of seed {args.seed}, the search's "
          f"{args.worlds} worlds ({args.belief}) judged on {judge}\n")
    print("| network | gain a decision (95% CI) | gain a deal, every seat | search ≠ network | decisions | s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, policy in zip(args.models, policies):
        start = time.perf_counter()
        found = one_step_advantage(policy, table, args.deals, args.seed, worlds=args.worlds,
                                   judge_worlds=judge_worlds, belief=args.belief,
                                   judge_belief=args.judge_belief, balance_range=BALANCES, workers=args.workers)
        (decision, ci), (deal, deal_ci) = found.per_decision(), found.per_deal()
        print(f"| {name} | {decision:+.3f} ± {ci:.3f} | {deal:+.2f} ± {deal_ci:.2f} | {found.differ.mean():.1%} | "
              f"{len(found.gain):,} | {time.perf_counter() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
