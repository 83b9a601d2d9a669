"""Duplicate tournament between players: the ladder of scripted players, or a trained model against them.

::

    python training/benchmark.py                       # the scripted ladder, 500 deals, ~8 s on 2 cores
    python training/benchmark.py --players random,lowest,stops_first,pool_hunter,pimc \\
        --deals 2000 --seed 1 --preset modern --seats 4 --out benchmarks/results/ladder
    python training/benchmark.py --players models/ppo_modern_4p/model.zip,stops_first --deals 2000
    python training/benchmark.py --backend ray --address auto   # deals as Ray tasks on a running cluster

Every deal is replayed with every seating rotation (see ``popejoan_env.tournament``
for the lineups and the statistics).  Prints the ranking with 95% confidence
intervals, counters by compartment and a head-to-head table, and writes
``OUT.json``, ``OUT.md`` and ``OUT.png``.  A player is a scripted name
(``random``, ``lowest``, ``stops_first``, ``pool_hunter``, ``pimc``), optionally
with parameters (``pimc:samples=32``), or the path of a saved model.

Every flag is checked before the tournament starts, the output directory
included (it is created, and a file is tried in it): a bad flag is one line on
stderr and exit status 2, and nothing is written.  ``--workers N`` plays deals in
N forked processes; ``--backend ray`` plays chunks of deals as Ray tasks, on a
local Ray or the cluster at ``--address`` (``--workers`` stays 1 then).  Either
way every number of the result is the one a plain run gives; only the time
differs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys

from popejoan_env.cli import SEED, TABLE_SIZE, Integer
from popejoan_env.cluster import connected
from popejoan_env.envs import register_for
from popejoan_env.errors import PopeJoanError
from popejoan_env.players import SCRIPTED, make_player
from popejoan_env.players.lists import split_specs
from popejoan_env.rules import MAX_PLAYERS, MIN_PLAYERS, parse_rules_options
from popejoan_env.tournament import (BACKENDS, MAX_DEALS, MAX_GROUPS, MAX_WORKERS, check_output, check_settings,
                                     make_schedule, run_duplicate)

from popejoan_env.training.common import arg, parse_flags, refuse, run_script

DEFAULT_PLAYERS = ",".join(SCRIPTED)


@dataclasses.dataclass
class Args:
    """The flags of benchmark.py: each field's help text is its --help."""

    players: list[str] | None = arg(None, f"comma-separated player specs (repeatable); default: {DEFAULT_PLAYERS}",
                                    action="append")
    deals: int = arg(500, f"duplicate deals, 2 to {MAX_DEALS:,} (each replayed in every rotation)",
                     kind=Integer(2, MAX_DEALS))
    seed: int = arg(1, "seed of the deals and the players' generators (>= 0)", kind=SEED)
    preset: str = arg("modern", "rules preset: modern or victorian")
    rules_option: list[str] = arg([], "override one rules option, e.g. ace_high=true (a JSON value, else text; "
                                      "repeatable)", action="append", metavar="KEY=VALUE")
    seats: int = arg(4, f"players at the table ({MIN_PLAYERS}..{MAX_PLAYERS})", kind=TABLE_SIZE)
    lineups: str = arg("auto", "subsets: every group of SEATS different players; field: each player alone against "
                               "copies of another; auto: subsets when there are at least SEATS players",
                       choices=["auto", "subsets", "field"])
    max_groups: int = arg(12, "most lineup groups played per deal (>= 1)", kind=Integer(1, MAX_GROUPS))
    workers: int = arg(1, "forked processes playing deals with --backend local, >= 1 (results do not change)",
                       kind=Integer(1, MAX_WORKERS))
    backend: str = arg("local", "local: this process (and --workers); ray: chunks of deals as Ray tasks on a local "
                                "Ray or the cluster at --address (results do not change; needs pip install "
                                "'popejoan[ray]')", choices=list(BACKENDS))
    address: str | None = arg(None, "with --backend ray, the running Ray cluster to join: auto, HOST:PORT of its "
                                    "head (ray start --head, port 6379) or ray://HOST:10001; default: start a local "
                                    "Ray", type=str, metavar="ADDRESS")
    out: str = arg("benchmarks/results/ladder", "output prefix: writes OUT.json, OUT.md and OUT.png")
    chart: bool = arg(True, "write OUT.png, the chart (--no-chart: none, and an earlier OUT.png is removed)")
    progress: bool = arg(True, "show a progress bar")


def split_players(text: str) -> list[str]:
    """Split a comma-separated player list; ``name:k=v,k=v`` keeps its parameters together (``split_specs``)."""
    return split_specs(text, "--players")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark from the command line; returns the exit status."""
    args = parse_flags(Args, argv, "Duplicate tournament between Pope Joan players (scripted or saved models).")
    try:  # every refusal comes here, before the first deal is played
        check_settings(args.deals, args.seed, args.seats, args.max_groups, args.workers, args.backend, args.address)
        rules = parse_rules_options(args.preset, args.rules_option)
        specs = [s for text in (args.players or [DEFAULT_PLAYERS]) for s in split_players(text)]
        make_schedule(len(specs), args.seats, args.lineups)
        register_for(specs)  # the adapters some players need (the openspiel_* players' game)
        players = [make_player(spec) for spec in specs]
        with contextlib.ExitStack() as ray_session:
            if args.backend == "ray":  # joined before the output directory is made: an unreachable Ray writes nothing
                ray_session.enter_context(connected(args.address))
            check_output(args.out, args.chart)
            result = run_duplicate(
                players, deals=args.deals, seed=args.seed, rules=rules, seats=args.seats,
                progress=args.progress, lineups=args.lineups, max_groups=args.max_groups,
                workers=args.workers, backend=args.backend, address=args.address,
            )
    except PopeJoanError as err:
        refuse(str(err))
    print(result.table())
    try:
        paths = result.save(args.out, chart=args.chart)
    except OSError as err:  # the disk filled or the directory went away during the run
        refuse(f"the results could not be saved: {err}", status=1)
    print("wrote " + ", ".join(paths))
    return 0


def run(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run the command on ``argv`` (default ``sys.argv[1:]``) as ``prog``; the exit status."""
    return run_script(main, argv, prog)


if __name__ == "__main__":
    raise SystemExit(run(prog="popejoan benchmark"))
