"""pimc speed: milliseconds per decision with scalar rollouts and with batched ones, on the same positions.

Run from the repository root::

    python benchmarks/bench_pimc.py                  # 200 positions, 32 samples, ~40 s
    python benchmarks/bench_pimc.py --rounds 1 --profile

The positions: deal ``d`` (``numpy.random.default_rng([seed, d])``, dealer
``d mod players``) is played by ``stops_first`` at every seat, and the position
kept is its ``(3 d mod n)``-th of the ``n`` leads where ``pimc`` would think (two
or more candidate leads).  Each engine plays ``PimcPlayer.choose`` on every
position (seeded once per round, so all engines see the same worlds) after a
warm-up (numba compiles, caches fill); the rounds interleave the engines and
each engine's best round is reported.  The decisions of every engine are
checked to be the scalar ones.

``batch/numba`` is ``pimc:engine=batch`` (its compiled rollouts; ``scalar``
is ``pimc:engine=scalar``).  The split then replays one evaluation stage by
stage to show where the time goes: ``sampling`` (the ``WorldSampler`` and its
worlds, the same for every engine), ``build`` (the batch of the worlds:
``batch_rollout``'s checks and one-deal ``from_deals``, with the worlds'
cards as arrays) and ``rollouts`` (scalar: ``Deal.copy``, ``play``,
``rollout`` per world × candidate; batch: the candidates checked and the
compiled ``world_gains``), each stage's best of the rounds; the last line is the
share of sampling in a scalar decision, which bounds what faster rollouts
can gain.  ``--profile`` adds the cProfile top functions of each engine.
Speed is never asserted by a test; read the figures ±30% on a shared machine.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pathlib
import platform
import pstats
import time
from typing import Any

import numpy as np

from popejoan_env.engine import Deal
from popejoan_env.players import batch_rollout, make_player
from popejoan_env.players.pimc import PimcPlayer, rollout
from popejoan_env.players.stops import lead_candidates
from popejoan_env.players.worlds import WorldSampler
from popejoan_env.rules import Rules
from popejoan_env.seat_view import SeatView, seat_view


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


def engines(samples: int) -> dict[str, PimcPlayer]:
    """The players to time, by row name."""
    return {"scalar": PimcPlayer(samples=samples, engine="scalar"),
            "batch/numba": PimcPlayer(samples=samples, engine="batch")}


def time_choices(player: PimcPlayer, views: list[SeatView], seed: int) -> tuple[float, list[int]]:
    """Mean ms per decision over the views, and the cards chosen."""
    player.reset(seed)
    choices = []
    start = time.perf_counter()
    for view in views:
        choices.append(player.choose(view))
    return 1000 * (time.perf_counter() - start) / len(views), choices


def split(views: list[SeatView], samples: int, seed: int, engine: str | None) -> dict[str, float]:
    """ms per decision of each stage of one evaluation: scalar (``engine=None``) or batched (``numba``)."""
    rng = np.random.default_rng(seed)
    spent = dict.fromkeys(("sampling", "build", "rollouts"), 0.0)
    for view in views:
        candidates = lead_candidates(view)
        t0 = time.perf_counter()
        sampler = WorldSampler(view)
        worlds = [sampler.sample(rng) for _ in range(samples)]
        t1 = time.perf_counter()
        spent["sampling"] += t1 - t0
        if engine is None:
            for world in worlds:
                for card in candidates:
                    deal = world.copy()
                    deal.play(card)
                    rollout(deal)
            spent["rollouts"] += time.perf_counter() - t1
            continue
        base = batch_rollout._base(worlds)
        hands = np.array([w.hands for w in worlds], dtype=np.uint64)
        dead = np.array([w.dead_mask for w in worlds], dtype=np.uint64)
        t2 = time.perf_counter()
        batch_rollout._gains(base, worlds[0], hands, dead, candidates, 0)
        spent["build"] += t2 - t1
        spent["rollouts"] += time.perf_counter() - t2
    return {k: 1000 * v / len(views) for k, v in spent.items() if v}


def profile(player: PimcPlayer, views: list[SeatView], seed: int, top: int = 12) -> str:
    """The cProfile table (by own time) of one pass of ``choose`` over the views."""
    player.reset(seed)
    prof = cProfile.Profile()
    prof.runcall(lambda: [player.choose(v) for v in views])
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


def main(argv: list[str] | None = None) -> int:
    """Time the engines, print the table, the ratios and the split."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=200, help="deals, one position from each (default 200)")
    parser.add_argument("--samples", type=int, default=32, help="worlds per decision (default 32)")
    parser.add_argument("--rules", default="modern", help="rules preset (default modern)")
    parser.add_argument("--players", type=int, default=4, help="table size (default 4)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deals and of the players")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; each engine's best is kept")
    parser.add_argument("--profile", action="store_true", help="print the cProfile top functions of each engine")
    parser.add_argument("--json", type=pathlib.Path, default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)

    views = positions(Rules.preset(args.rules), args.players, args.deals, args.seed)
    candidates = np.mean([len(lead_candidates(v)) for v in views])
    rows = engines(args.samples)
    for player in rows.values():  # warm-up: numba compiles, first-call caches
        player.reset(args.seed)
        for view in views[:3]:
            player.choose(view)
    best = dict.fromkeys(rows, float("inf"))
    choices: dict[str, list[int]] = {}
    for _ in range(args.rounds):
        for name, player in rows.items():
            ms, chosen = time_choices(player, views, args.seed)
            best[name] = min(best[name], ms)
            choices[name] = chosen
    same = {name: choices[name] == choices["scalar"] for name in rows}

    print(f"pimc, {args.rules} {args.players}p, {len(views)} positions from {args.deals} deals, "
          f"{args.samples} samples, {candidates:.2f} candidate leads on average, best of {args.rounds} rounds")
    print("| engine | ms per decision | scalar / engine | same decisions as scalar |")
    print("|---|---|---|---|")
    for name in rows:
        print(f"| {name} | {best[name]:.2f} | {best['scalar'] / best[name]:.2f}x | {'yes' if same[name] else 'NO'} |")

    stages: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):  # each stage's best round
        for name in rows:
            parts = split(views, args.samples, args.seed, None if name == "scalar" else name.split("/")[1])
            stages[name] = {k: min(v, stages.get(name, {}).get(k, v)) for k, v in parts.items()}
    print(f"\nwhere the time goes (ms per decision, stage by stage, each stage's best of {args.rounds} rounds):")
    for name, parts in stages.items():
        print(f"  {name:12s} " + ", ".join(f"{k} {v:.2f}" for k, v in parts.items()))
    share = stages["scalar"]["sampling"] / sum(stages["scalar"].values())
    print(f"sampling the worlds is {100 * share:.0f}% of a scalar decision: no rollout engine can be more than "
          f"{1 / share:.1f}x faster than scalar")
    if args.profile:
        for name, player in rows.items():
            print(f"\n--- cProfile, {name} ---")
            print(profile(player, views[:50], args.seed))

    if args.json is not None:
        info: dict[str, Any] = {"python": platform.python_version(), "numpy": np.__version__,
                                "machine": platform.machine(), "cpus": os.cpu_count(),
                                "numba": True}
        if hasattr(os, "getloadavg"):
            info["load_average"] = os.getloadavg()
        result = {"machine": info, "rules": args.rules, "players": args.players, "deals": args.deals,
                  "positions": len(views), "samples": args.samples, "rounds": args.rounds,
                  "ms_per_decision": best, "ratio_scalar_to": {n: best["scalar"] / best[n] for n in rows},
                  "same_decisions": same, "split_ms_per_decision": stages,
                  "sampling_share_of_scalar": share}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
