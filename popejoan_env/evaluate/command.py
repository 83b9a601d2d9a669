"""``popejoan evaluate AGENT``: the flags, the run, and ``evaluate_agent`` (the same from Python).

The flags are read here and everything heavy (the tournament, the players, torch) is imported only when
the command runs, so ``popejoan --help`` stays fast.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import sys
from collections.abc import Callable
from typing import Any

from popejoan_env.cli import TABLE_SIZE, Integer, file_name
from popejoan_env.errors import PopeJoanError
from popejoan_env.evaluate import dealset, panel
from popejoan_env.files import remove_stale
from popejoan_env.rules import MAX_PLAYERS, MIN_PLAYERS, PRESETS

BACKENDS = ("local", "ray")
"""Where the deals are played: this machine (``--workers`` processes) or Ray (``--address``)."""


def add_table_arguments(parser: argparse.ArgumentParser) -> None:
    """``--preset`` and ``--seats``: the table an evaluation (or ``popejoan exploit``) plays at."""
    parser.add_argument("--preset", default="modern", help=f"rules preset: {', '.join(PRESETS)} (default modern)")
    parser.add_argument("--seats", type=TABLE_SIZE, default=4,
                        help=f"seats at the table, {MIN_PLAYERS}..{MAX_PLAYERS} (default 4)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``popejoan evaluate``."""
    parser.add_argument("agent", metavar="AGENT",
                        help="the player to evaluate: a saved model (.zip), a scripted name, shipped, pimc_net, or "
                             "module:factory for your own (factory(seed=...) returns a player with act(view))")
    add_table_arguments(parser)
    parser.add_argument("--deals", type=Integer(dealset.BLOCK, dealset.DEALS), default=None,
                        help=f"deals of {dealset.VERSION} to play, a multiple of {dealset.BLOCK} (default "
                             f"{dealset.DEALS:,}, the size for a paper)")
    parser.add_argument("--quick", action="store_true",
                        help=f"the set's first {dealset.QUICK_DEALS} deals (minutes; not for a paper)")
    parser.add_argument("--opponents", default=None, metavar="LIST",
                        help=f"a comma list of {panel.VERSION}'s players to play (default all: "
                             f"{','.join(panel.PANEL)})")
    parser.add_argument("--out", type=file_name, default=None, metavar="PREFIX",
                        help="write PREFIX.json, PREFIX.md, PREFIX.txt (and PREFIX.state.json while it runs, to "
                             "resume from); default evaluations/<agent>_<preset>_<seats>p_<deals>")
    parser.add_argument("--backend", choices=BACKENDS, default="local",
                        help="local (default): this machine, --workers processes; ray: each block of deals as Ray "
                             "tasks (a local Ray, or the cluster at --address)")
    parser.add_argument("--address", default=None, metavar="ADDRESS",
                        help="with --backend ray: auto, HOST:PORT of the head node, or ray://HOST:10001")
    parser.add_argument("--workers", type=Integer(1, 256), default=1,
                        help="with --backend local: forked processes playing the deals (default 1)")
    parser.add_argument("--ratings", default=None, metavar="SEATS",
                        help="also play every pair of the opponents on the same deals at these table sizes (a comma "
                             "list, e.g. 4 or 3,4,6) and rate the agent and the opponents together (report section "
                             "and PREFIX.ratings.png; without it an earlier PREFIX.ratings.png is removed)")
    parser.add_argument("--aivat", action="store_true",
                        help="also correct each margin for the random choices of the players that make them (random, "
                             "pimc, pimc_net: AIVAT with a rollout value, as one more control variate); one process, "
                             "slower")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no table")


def agent_name(agent: str) -> str:
    """A file-name-safe name for an agent spec: a model file's directory and stem (``models/quick/model.zip``:
    ``quick-model``, so two runs' ``model.zip`` do not share a report), else the spec with odd characters as ``-``."""
    name = agent
    if os.sep in agent or "/" in agent or agent.endswith(".zip"):
        path = agent.rstrip("/\\")
        stem = os.path.splitext(os.path.basename(path))[0]
        parent = os.path.basename(os.path.dirname(path)).strip(".")
        name = f"{parent}-{stem}" if parent else stem
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "agent"


def default_prefix(agent: str, preset: str, seats: int, deals: int) -> str:
    """Where a report goes without ``--out``: ``evaluations/<agent>_<preset>_<seats>p_<deals>``."""
    return os.path.join("evaluations", f"{agent_name(agent)}_{preset}_{seats}p_{deals}")


def canonical_command(agent: str, preset: str, seats: int, deals: int, opponents: list[str],
                      ratings: list[int] | None = None, aivat: bool = False) -> str:
    """The command that plays the same games (the report prints it)."""
    words = ["popejoan", "evaluate", agent, "--preset", preset, "--seats", str(seats), "--deals", str(deals)]
    if list(opponents) != list(panel.PANEL):
        words += ["--opponents", ",".join(opponents)]
    if ratings:
        words += ["--ratings", ",".join(map(str, ratings))]
    if aivat:
        words.append("--aivat")
    return shlex.join(words)


def parse_ratings(text: str | None) -> list[int]:
    """The table sizes of ``--ratings`` (a comma list of seats, each once), or none."""
    from popejoan_env.checks import split_list
    from popejoan_env.rules import check_players

    if text is None:
        return []
    try:
        sizes = [int(x) for x in split_list(text)]
    except ValueError:
        raise PopeJoanError(f"--ratings takes a comma list of table sizes such as 3,4,6, got {text!r}") from None
    if not sizes or len(set(sizes)) != len(sizes):
        raise PopeJoanError(f"--ratings takes one or more different table sizes, got {text!r}")
    for n in sizes:
        try:
            check_players(n)
        except PopeJoanError as err:
            raise PopeJoanError(f"--ratings: {err}") from None
    return sizes


def references(preset: str, seats: int, main: int, opponents: list[str], ratings: list[int]) -> list[tuple[str, str]]:
    """The pairs of opponents also played at a table of ``seats``: the control variate's (at the main table, when
    its means are known) and, for ratings at this table size, every pair of the opponents."""
    from popejoan_env.evaluate import ratings as rating, variance

    out = list(variance.references(preset, seats)) if seats == main else []
    if seats in ratings:
        out += [p for p in rating.pairs_of(opponents, variance.REFERENCE_PAIRS) if p not in out]
    return out


def matches(preset: str, seats: int, opponents: list[str], ratings: list[int]) -> int:
    """How many matches (an agent or a pair against another) an evaluation plays over every block of deals."""
    tables = [seats, *(n for n in ratings if n != seats)]
    return sum((len(opponents) + len(references(preset, n, seats, opponents, ratings))) for n in tables)


def evaluate_agent(agent: str, *, preset: str = "modern", seats: int = 4, deals: int = dealset.DEALS,
                   opponents: str | list[str] | None = None, out: str | None = None, workers: int = 1,
                   backend: str = "local", address: str | None = None,
                   on_block: Callable[[str, int], None] | None = None,
                   ratings: list[int] | None = None,
                   on_start: Callable[[int], None] | None = None, aivat: bool = False) -> dict[str, Any]:
    """Evaluate ``agent`` against the panel on the frozen deals; the report (and its files when ``out``).

    ``ratings``: table sizes at which every pair of the opponents is played too, to rate them and the agent
    together (``ratings.rate``).  ``on_start(deals)`` is told the deals a resumed run already has, and
    ``on_block(match, block)`` each block as it is played.  ``aivat``: the agent's games record the AIVAT
    corrections of the margins (``evaluate.aivat``; one local process).
    """
    from popejoan_env.checks import import_extra
    from popejoan_env.evaluate import ratings as rating
    from popejoan_env.envs import register_for
    from popejoan_env.evaluate import report, runner, variance
    from popejoan_env.files import check_prefix, check_writable
    from popejoan_env.players import make_player
    from popejoan_env.rules import check_players
    from popejoan_env.tournament import check_settings

    check_players(seats)
    sizes = list(ratings or [])
    chosen = panel.choose(opponents)
    found = runner.settings(agent, preset, seats, deals, chosen, aivat=aivat)
    check_settings(dealset.BLOCK, 0, seats, 1, workers, backend, address)
    if aivat and (workers > 1 or backend != "local"):
        raise PopeJoanError("--aivat plays the agent's games in this one process: leave out --workers and "
                            "--backend ray")
    register_for([agent])  # the adapters an agent may need (an openspiel_* player's game)
    make_player(agent)  # an agent that cannot be built is refused before any work
    if sizes and len(chosen) < 2:
        raise PopeJoanError("ratings need at least two opponents (every pair of them is played)")
    if out is not None:
        check_prefix(out)
        if sizes:  # the ratings' chart, refused before the games rather than after them
            import_extra("matplotlib", "train", f"the chart {out}.ratings.png")
    where = report.paths(out) if out is not None else None
    tables = [seats, *(n for n in sizes if n != seats)]
    state_paths = {n: (where["state"] if n == seats else f"{out}.ratings-{n}p.state.json") if where else None
                   for n in tables}
    if where is not None:
        check_writable(list(where.values()) + [p for p in state_paths.values() if p])
    states = {}
    for n in tables:
        setting = found if n == seats else dataclasses.replace(found, seats=n)
        states[n] = runner.State(state_paths[n], setting, tuple(references(preset, n, seats, chosen, sizes)))
    if on_start is not None:  # what an earlier, interrupted run already played
        on_start(sum(len(blocks) for st in states.values() for blocks in st.blocks.values()) * dealset.BLOCK)
    for n in tables:
        runner.play(states[n].settings, states[n], workers=workers, backend=backend, address=address,
                    on_block=on_block)
    state = states[seats]
    command = canonical_command(agent, preset, seats, deals, chosen, sizes, aivat)
    extra = variance.section(state)
    if sizes:
        # An agent of the panel is rated once, from the panel's pairs (its own matches are the same pairings).
        players = chosen if agent in chosen else [agent, *chosen]
        rated, margins = {}, {}
        for n in sizes:
            per_deal = {} if agent in chosen else {(agent, o): states[n].series(o)["margin"] for o in chosen}
            per_deal.update({(a, b): states[n].series(runner.pair_key(a, b))["margin"]
                             for a, b in rating.pairs_of(chosen, variance.REFERENCE_PAIRS)})
            rated[str(n)] = rating.rate(players, per_deal)
            margins[str(n)] = {runner.pair_key(a, b): m.tolist() for (a, b), m in per_deal.items()}
        extra["ratings"] = {"method": rating.METHOD, "bootstrap": rating.BOOTSTRAP, "tables": rated,
                            "per_deal_margin": margins}
    result = report.build(found, state, command, extra)
    if out is not None and where is not None:
        report.save(result, out)
        if sizes:
            rating.write_chart({int(n): t for n, t in rated.items()},
                               f"Ratings: {agent}, rules {preset}, {deals} deals of {dealset.VERSION}",
                               out + ".ratings.png")
        else:  # an earlier evaluation's ratings chart must not stand beside this report
            remove_stale(out + ".ratings.png")
        for path in state_paths.values():
            if path:
                remove_stale(path)
    return result


def run(args: argparse.Namespace) -> int:
    """Run ``popejoan evaluate``: play, write the report, print it."""
    from popejoan_env.evaluate import report

    if args.quick and args.deals is not None:
        raise PopeJoanError("--quick plays the first 200 deals; give it or --deals, not both")
    deals = dealset.QUICK_DEALS if args.quick else (args.deals or dealset.DEALS)
    if deals % dealset.BLOCK:
        raise PopeJoanError(f"--deals must be a multiple of {dealset.BLOCK} (whole blocks of {dealset.VERSION}), "
                            f"got {deals}")
    if args.backend != "ray" and args.address is not None:
        raise PopeJoanError("--address applies only to --backend ray")
    out = args.out or default_prefix(args.agent, args.preset, args.seats, deals)
    chosen = panel.choose(args.opponents)
    sizes = parse_ratings(args.ratings)
    bar = None
    if not args.quiet and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=deals * matches(args.preset, args.seats, chosen, sizes), unit="deal", desc="evaluate",
                   file=sys.stderr, mininterval=0.5)

    def tick(name: str, block: int) -> None:
        if bar is not None:
            bar.set_postfix_str(name)
            bar.update(dealset.BLOCK)

    def resumed(done: int) -> None:
        if bar is not None and done:
            bar.update(done)

    try:
        result = evaluate_agent(args.agent, preset=args.preset, seats=args.seats, deals=deals, opponents=chosen,
                                out=out, workers=args.workers,
                                backend=args.backend, address=args.address, on_block=tick, ratings=sizes,
                                on_start=resumed, aivat=args.aivat)
    finally:
        if bar is not None:
            bar.close()
    if not args.quiet:
        print(report.text(result), end="")
        chart = f", {out}.ratings.png" if sizes else ""
        print(f"\nwrote {out}.json, {out}.md, {out}.txt{chart}")
    return 0
