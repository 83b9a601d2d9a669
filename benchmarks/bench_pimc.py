"""pimc and pimc_net speed: milliseconds per decision with the worlds drawn in Python and compiled, same positions.

Run from the repository root::

    python benchmarks/bench_pimc.py                    # modern 4p and victorian 6p, 200 positions, 5 rounds
    python benchmarks/bench_pimc.py --configs modern:4 --rounds 1 --profile

The positions: deal ``d`` (``numpy.random.default_rng([seed, d])``, dealer
``d mod players``) is played by ``stops_first`` at every seat, and the position
kept is its ``(3 d mod n)``-th of the ``n`` leads where ``pimc`` would think (two
or more candidate leads).  Each player plays ``choose`` on every position
(seeded once per round, so a player sees the same worlds every round) after a
warm-up (numba compiles, caches fill).

The rows: ``pimc:draws=python`` and ``pimc_net:draws=python`` are the path
before issue 26, left as it was: ``WorldSampler(view)``, each world drawn in
Python (``WorldSampler.sample``/``draw``), the first world as a ``Deal`` and a
one-deal ``BatchDeals``, the placements checked, and the compiled rollouts of
``playout_kernels.world_gains`` (the batch engine's ``play_rows`` called once per
lead).  ``pimc`` and ``pimc_net`` (``draws=compiled``, the default) run
``decision.search_gains``: the view read once in Python, then one compiled call
(``decision_kernels.search``) that works out the placing order, draws the worlds
(``world_kernels``) and plays every world x candidate out with ``play_rows``
compiled inline.  Both weigh the worlds with ``PimcPlayer.weigh``; both
``pimc_net`` rows add the network's prior (``encode_view``, ``Policy.logits``).
The rounds interleave the players (old, new, old, new ...), so a busy spell of
a shared machine slows both of a pair alike; the ratio old / new is taken per
round and its median reported, with each row's best round.  Every player
must make the same decisions in every round (the run fails otherwise).

The split replays the compiled ``pimc`` stage by stage to show where its
time goes: ``set-up`` (``decision.view_inputs``: the view read and checked, what it
rules out, ``inference.cannot_hold``), ``draws`` (the compiled call with no
candidate: the seed, the placing order, the draws and each world's tables),
``rollouts`` (the full compiled call less that), and ``choice`` (weights and the
pick), each stage's best of the rounds.  ``--profile`` adds the cProfile top
functions of each row.  Speed is never asserted by a test; read the figures
±30% on a shared machine.

``--choices K`` also checks that the compiled draws choose as the Python ones
do, position by position: each of ``pimc:draws=python`` and ``pimc`` decides
every position with ``K`` seeds, and a chi-square test of homogeneity (summed
over the positions where either chose more than one card) compares how often
each card is chosen; ``--control SPEC`` runs the same test for another player
against ``pimc:draws=python`` (e.g. ``pimc:sampler=uniform``), to see what a
real difference of behaviour scores.  ``z`` is the Wilson-Hilferty normal score
of the statistic: about 0 for the same behaviour, above 3 a difference.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import platform
import pstats
import statistics
import time
from collections import Counter
from typing import Any

import numpy as np

from popejoan_env.checks import brief
from popejoan_env.cli import SEED, TABLE_SIZE, Integer, OneLineParser, file_name
from popejoan_env.engine import Deal
from popejoan_env.errors import PopeJoanError
from popejoan_env.files import check_writable, write_atomic
from popejoan_env.players import make_player
from popejoan_env.players.pimc import PimcPlayer
from popejoan_env.players.stops import lead_candidates
from popejoan_env.rules import PRESETS, Rules
from popejoan_env.search import decision
from popejoan_env.seat_view import SeatView, seat_view

PAIRS = {"pimc": ("pimc:draws=python", "pimc"), "pimc_net": ("pimc_net:draws=python", "pimc_net")}
"""Per player, its old (Python draws) and new (compiled draws) spec."""


def table_configs(text: str) -> list[tuple[str, int]]:
    """An argparse ``type``: the tables of ``--configs``, ``PRESET:SEATS`` comma-separated, each at most once."""
    configs: list[tuple[str, int]] = []
    for item in text.split(","):
        preset, colon, seats = (part.strip() for part in item.partition(":"))
        if not colon or preset not in PRESETS:
            raise argparse.ArgumentTypeError(f"{brief(item.strip())} is not PRESET:SEATS with a preset of "
                                             f"{sorted(PRESETS)} (e.g. modern:4,victorian:6)")
        try:
            config = (preset, TABLE_SIZE(seats))
        except argparse.ArgumentTypeError as err:
            raise argparse.ArgumentTypeError(f"{brief(item.strip())}: the seats: {err}") from None
        if config in configs:
            raise argparse.ArgumentTypeError(f"{preset}:{config[1]} given more than once")
        configs.append(config)
    return configs


def pair_names(text: str) -> list[str]:
    """An argparse ``type``: the players of ``--pairs``, a comma list of ``PAIRS``' names, each at most once."""
    pairs = [p.strip() for p in text.split(",") if p.strip()]
    if not pairs or any(p not in PAIRS for p in pairs) or len(set(pairs)) < len(pairs):
        raise argparse.ArgumentTypeError(f"{brief(text)}: choose from {list(PAIRS)}, comma-separated, each once")
    return pairs


def positions(rules: Rules, players: int, deals: int, seed: int) -> list[SeatView]:
    """One position per deal where pimc thinks (see the module docstring)."""
    guide = make_player("stops_first")
    out = []
    for d in range(deals):
        deal = Deal.new(rules, players, d % players, np.random.default_rng([seed, d]))
        found = []
        legal = deal.advance()
        while legal:
            view = seat_view(deal, deal.to_act)
            if len(lead_candidates(view)) > 1:
                found.append(view)
            deal.play(guide.act(view))
            legal = deal.advance()
        if found:
            out.append(found[(3 * d) % len(found)])
    return out


def time_choices(player: PimcPlayer, views: list[SeatView], seed: int) -> tuple[float, list[int]]:
    """Mean ms per decision over the views, and the cards chosen."""
    player.reset(seed)
    choices = []
    start = time.perf_counter()
    for view in views:
        choices.append(player.choose(view))
    return 1000 * (time.perf_counter() - start) / len(views), choices


def split(views: list[SeatView], samples: int, seed: int) -> dict[str, float]:
    """ms per decision of each stage of the compiled pimc's evaluation and choice."""
    player = PimcPlayer(seed=seed, samples=samples)
    rng = player.rng
    spent = dict.fromkeys(("set-up", "draws", "rollouts", "choice"), 0.0)
    for view in views:
        candidates = lead_candidates(view)
        t0 = time.perf_counter()
        inputs = decision.view_inputs(view, candidates, "consistent")
        t1 = time.perf_counter()
        gains, logs = decision.run(view, inputs, rng, samples)
        t2 = time.perf_counter()
        totals = player.weigh(gains, logs, candidates)
        max(zip(candidates, totals), key=lambda ct: ct[1])
        t3 = time.perf_counter()
        # The same call without a candidate: the seed, the placing order and the draws, no rollout.
        position = inputs.position._replace(leads=inputs.position.leads[:0])
        t4 = time.perf_counter()
        decision.run(view, inputs._replace(position=position), rng, samples)
        t5 = time.perf_counter()
        spent["set-up"] += t1 - t0
        spent["draws"] += t5 - t4
        spent["rollouts"] += max(0.0, (t2 - t1) - (t5 - t4))
        spent["choice"] += t3 - t2
    return {k: 1000 * v / len(views) for k, v in spent.items()}


def choice_counts(spec: str, views: list[SeatView], seeds: int, first_seed: int) -> list[Counter[int]]:
    """Per position, how often ``spec`` chooses each card over ``seeds`` consecutive seeds from ``first_seed``."""
    player = make_player(spec)
    out = []
    for view in views:
        count: Counter[int] = Counter()
        for seed in range(first_seed, first_seed + seeds):
            player.reset(seed)
            count[player.choose(view)] += 1
        out.append(count)
    return out


def homogeneity(a: list[Counter[int]], b: list[Counter[int]]) -> tuple[float, int, float]:
    """Chi-square statistic of homogeneity of two players' choice counts (equal seeds per position), summed over
    the positions with more than one card chosen; its degrees of freedom; its Wilson-Hilferty z score."""
    stat, dof = 0.0, 0
    for x, y in zip(a, b):
        cards = set(x) | set(y)
        if len(cards) < 2:
            continue
        for card in cards:
            expected = (x[card] + y[card]) / 2
            stat += ((x[card] - expected) ** 2 + (y[card] - expected) ** 2) / expected
        dof += len(cards) - 1
    if not dof:
        return 0.0, 0, 0.0
    z = ((stat / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return stat, dof, z


def profile(player: PimcPlayer, views: list[SeatView], seed: int, top: int = 12) -> str:
    """The cProfile table (by own time) of one pass of ``choose`` over the views."""
    player.reset(seed)
    prof = cProfile.Profile()
    prof.runcall(lambda: [player.choose(v) for v in views])
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


def measure(rules: str, players: int, views: list[SeatView], args: argparse.Namespace) -> dict[str, Any]:
    """Time the old and new rows of every pair on one table's positions; print the table and the split."""
    candidates = np.mean([len(lead_candidates(v)) for v in views])
    rows = {spec: make_player(spec) for pair in args.pairs for spec in PAIRS[pair]}
    for player in rows.values():  # warm-up: numba compiles, first-call caches
        player.reset(args.seed)
        for view in views[:3]:
            player.choose(view)
    times: dict[str, list[float]] = {spec: [] for spec in rows}
    choices: dict[str, list[int]] = {}
    steady = True
    for _ in range(args.rounds):
        for spec, player in rows.items():
            ms, chosen = time_choices(player, views, args.seed)
            times[spec].append(ms)
            steady &= choices.setdefault(spec, chosen) == chosen
    ratios = {pair: [old / new for old, new in zip(times[PAIRS[pair][0]], times[PAIRS[pair][1]])]
              for pair in args.pairs}

    print(f"\n{rules} {players}p: {len(views)} positions from {args.deals} deals, {candidates:.2f} candidate leads "
          f"on average, {args.rounds} interleaved rounds")
    print("| player | samples | ms/decision, Python draws | ms/decision, compiled draws | old / new, median of "
          "rounds (range) |")
    print("|---|---:|---:|---:|---:|")
    for pair in args.pairs:
        old, new = PAIRS[pair]
        r = ratios[pair]
        print(f"| {pair} | {rows[new].samples} | {min(times[old]):.3f} | {min(times[new]):.3f} | "
              f"**{statistics.median(r):.2f}x** ({min(r):.2f}-{max(r):.2f}) |")
    stages: dict[str, float] = {}
    if "pimc" in args.pairs:
        for _ in range(args.rounds):
            for k, v in split(views, rows["pimc"].samples, args.seed).items():
                stages[k] = min(v, stages.get(k, v))
        total = sum(stages.values())
        print(f"where the compiled pimc's time goes (ms per decision, each stage's best of {args.rounds} rounds, "
              f"sum {total:.3f}): " + ", ".join(f"{k} {v:.3f} ({100 * v / total:.0f}%)" for k, v in stages.items()))
    same_choices: dict[str, Any] = {}
    if args.choices:
        old = choice_counts("pimc:draws=python", views, args.choices, 0)
        for spec in ["pimc", *args.control]:
            stat, dof, z = homogeneity(old, choice_counts(spec, views, args.choices, 10**6))
            same_choices[spec] = {"chi_square": stat, "dof": dof, "z": z}
            print(f"choices of {spec} against pimc:draws=python, {args.choices} seeds per position: chi-square "
                  f"{stat:.1f} on {dof} degrees of freedom, z = {z:+.2f}")
    if args.profile:
        for spec, player in rows.items():
            print(f"\n--- cProfile, {spec}, {rules} {players}p ---")
            print(profile(player, views[:50], args.seed))
    return {"rules": rules, "players": players, "positions": len(views), "candidates": float(candidates),
            "ms_per_decision": times, "best_ms_per_decision": {s: min(t) for s, t in times.items()},
            "ratio_old_to_new_per_round": ratios,
            "median_ratio_old_to_new": {p: statistics.median(r) for p, r in ratios.items()},
            "split_ms_per_decision": stages, "same_decisions_every_round": steady, "same_choices": same_choices}


def main(argv: list[str] | None = None) -> int:
    """Time the players on each table, print the tables, the ratios and the split."""
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=table_configs, default="modern:4,victorian:6",
                        help="tables as PRESET:SEATS, comma-separated (default modern:4,victorian:6)")
    parser.add_argument("--pairs", type=pair_names, default="pimc,pimc_net",
                        help="players to time: pimc, pimc_net or both")
    parser.add_argument("--deals", type=Integer(1, 100_000), default=200,
                        help="deals, one position from each (default 200)")
    parser.add_argument("--seed", type=SEED, default=0, help="seed of the deals and of the players")
    parser.add_argument("--rounds", type=Integer(1, 1000), default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--profile", action="store_true", help="print the cProfile top functions of each row")
    parser.add_argument("--choices", type=Integer(0, 100_000), default=0,
                        help="also compare the choices of pimc and pimc:draws=python over this many seeds per position")
    parser.add_argument("--control", action="append", default=[],
                        help="with --choices, another player spec to compare with pimc:draws=python (repeatable)")
    parser.add_argument("--json", type=file_name, default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    for spec in args.control:  # refused before any work, as a --json that cannot be written
        try:
            control = make_player(spec)
        except PopeJoanError as err:
            parser.error(f"--control: {err}")
        if not (callable(getattr(control, "choose", None)) and callable(getattr(control, "reset", None))):
            parser.error(f"--control: {brief(spec)} is no player whose choices can be counted (choose, reset)")
    if args.control and len(set(args.control)) < len(args.control):
        parser.error("--control: a player spec given more than once")
    if args.json is not None:
        try:
            check_writable([args.json])
        except PopeJoanError as err:
            parser.error(str(err))
    tables = [(rules, players, positions(Rules.preset(rules), players, args.deals, args.seed))
              for rules, players in args.configs]
    for rules, players, views in tables:  # deals where no seat thinks give none: refused before any timing
        if not views:
            parser.error(f"--deals {args.deals} gave no position where pimc thinks at {rules}:{players}; give more")

    results = [measure(rules, players, views, args) for rules, players, views in tables]
    if args.json is not None:
        info: dict[str, Any] = {"python": platform.python_version(), "numpy": np.__version__,
                                "machine": platform.machine(), "cpus": os.cpu_count()}
        if hasattr(os, "getloadavg"):
            info["load_average"] = os.getloadavg()
        out = {"machine": info, "deals": args.deals, "seed": args.seed, "rounds": args.rounds, "tables": results}
        write_atomic(args.json, json.dumps(out, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0 if all(r["same_decisions_every_round"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
