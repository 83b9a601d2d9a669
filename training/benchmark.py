"""Duplicate tournament between players: the ladder of scripted players, or a trained model against them.

    python training/benchmark.py                       # the scripted ladder, 500 deals, a couple of minutes
    python training/benchmark.py --players random,lowest,stops_first,pool_hunter,pimc \\
        --deals 2000 --seed 1 --preset modern --seats 4 --out benchmarks/results/ladder
    python training/benchmark.py --players models/ppo_modern_4p.zip,stops_first --deals 2000

Every deal is replayed with every seating rotation (see ``popejoan_env/tournament.py``
for the lineups and the statistics).  Prints the ranking with 95% confidence
intervals, counters by compartment and a head-to-head table, and writes
``OUT.json``, ``OUT.md`` and ``OUT.png``.  A player is a scripted name
(``random``, ``lowest``, ``stops_first``, ``pool_hunter``, ``pimc``), optionally
with parameters (``pimc:samples=32``), or the path of a saved model.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from popejoan_env.errors import PopeJoanError
from popejoan_env.players import SCRIPTED, make_player
from popejoan_env.rules import Rules
from popejoan_env.tournament import run_duplicate

DEFAULT_PLAYERS = ",".join(SCRIPTED)


def split_players(text: str) -> list[str]:
    """Split a comma-separated player list; ``name:k=v,k=v`` keeps its parameters together."""
    out: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        if out and "=" in piece and ":" not in piece and "/" not in piece:
            out[-1] += "," + piece  # a further parameter of the previous spec
        else:
            out.append(piece)
    return out


def parse_option(text: str) -> tuple[str, Any]:
    """``key=value`` with a JSON value (``true``, ``3``, ``{"pope": 6}``) or else a plain string."""
    key, eq, value = text.partition("=")
    if not eq or not key:
        raise argparse.ArgumentTypeError(f"rules option {text!r} is not key=value")
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value.strip()


def build_parser() -> argparse.ArgumentParser:
    """The command line of the benchmark."""
    p = argparse.ArgumentParser(
        description="Duplicate tournament between Pope Joan players (scripted or saved models).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--players", action="append", default=None,
                   help=f"comma-separated player specs (repeatable); default: {DEFAULT_PLAYERS}")
    p.add_argument("--deals", type=int, default=500, help="duplicate deals (each replayed in every rotation)")
    p.add_argument("--seed", type=int, default=1, help="seed of the deals and the players' generators")
    p.add_argument("--preset", default="modern", help="rules preset: modern or victorian")
    p.add_argument("--rules-option", action="append", default=[], type=parse_option, metavar="KEY=VALUE",
                   help="override one rules option, e.g. ace_high=true (repeatable)")
    p.add_argument("--seats", type=int, default=4, help="players at the table (3..8)")
    p.add_argument("--lineups", default="auto", choices=["auto", "subsets", "field"],
                   help="subsets: every group of SEATS different players; field: each player alone against "
                        "copies of another; auto: subsets when there are at least SEATS players")
    p.add_argument("--max-groups", type=int, default=12, help="most lineup groups played per deal")
    p.add_argument("--workers", type=int, default=1, help="processes playing deals (results do not change)")
    p.add_argument("--out", default="benchmarks/results/ladder",
                   help="output prefix: writes OUT.json, OUT.md and OUT.png")
    p.add_argument("--no-chart", action="store_true", help="skip the PNG chart")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark from the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    specs = [s for text in (args.players or [DEFAULT_PLAYERS]) for s in split_players(text)]
    try:
        rules = Rules.preset(args.preset)
        if args.rules_option:
            rules = rules.replace(**dict(args.rules_option))
        players = [make_player(spec) for spec in specs]
    except PopeJoanError as err:
        parser.error(str(err))
    try:
        result = run_duplicate(
            players, deals=args.deals, seed=args.seed, rules=rules, seats=args.seats,
            progress=not args.no_progress, lineups=args.lineups, max_groups=args.max_groups,
            workers=args.workers,
        )
    except PopeJoanError as err:
        parser.error(str(err))
    print(result.table())
    paths = result.save(args.out, chart=not args.no_chart)
    print("wrote " + ", ".join(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
