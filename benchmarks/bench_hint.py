"""The web app's hint: milliseconds per ``GET /api/games/{id}/hint``, with ``pimc``'s worlds drawn in Python
(the path before issue 26) and in one compiled call (today's default), on the same positions.

Run from the repository root (needs the ``web`` extra)::

    python benchmarks/bench_hint.py                      # 4 seats modern, 300 positions, 3 rounds
    python benchmarks/bench_hint.py --players 6 --preset victorian --json

The positions: games of ``GameManager`` (seeded ``--seed``; ``stops_first`` at the other seats) in which the
human plays a random legal card; every position where the human chooses among two or more cards is kept.
Each round asks ``GameManager.hint`` at every position with ``HINT_SEARCH = "pimc:draws=python"`` and with
``"pimc"``, each first at every other position, so a busy spell slows both alike; the two
draw their worlds from different streams of the same distribution, so they show the same card at most
positions, not all (the share is reported).  A hint is the shipped network's probabilities plus the search's
choice; the HTTP layer around it adds about a millisecond (``bench_web.py``).  Reported: p50 and p99 of
each, and the ratio of the medians per round.  Speed is never asserted by a test; read the figures ±30% on a
shared machine.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

import numpy as np

from popejoan_env.cli import OneLineParser, SEED, TABLE_SIZE, Integer
from popejoan_env.rules import PRESETS
from popejoan_env.web import games as web_games

OLD, NEW = "pimc:draws=python", "pimc"


def hint_rows(manager: web_games.GameManager, players: int, preset: str, count: int, seed: int) -> list[Any]:
    """At ``count`` positions where the human chooses: each search's card and milliseconds for the hint."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    while len(rows) < count:
        game_id, state = manager.create({"players": players, "preset": preset, "deals": 1})
        while not state["over"] and len(rows) < count:
            if len(state["legal"]) > 1:
                row: dict[str, Any] = {}
                for spec in ((OLD, NEW) if len(rows) % 2 == 0 else (NEW, OLD)):  # each first at every other
                    web_games.HINT_SEARCH = spec
                    t0 = time.perf_counter()
                    row[spec] = manager.hint(game_id)["pimc"]["best"]
                    row[spec + "_ms"] = (time.perf_counter() - t0) * 1e3
                rows.append(row)
            state = manager.play(game_id, {"card": str(rng.choice(state["legal"]))})
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Time the hints; print the table (or JSON) and return it."""
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=TABLE_SIZE, default=4, help="seats (default 4)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="modern", help="rules preset (default modern)")
    parser.add_argument("--positions", type=Integer(1, 100_000), default=300, help="positions a round (default 300)")
    parser.add_argument("--rounds", type=Integer(1, 100), default=3, help="rounds after the warm-up (default 3)")
    parser.add_argument("--seed", type=SEED, default=1, help="seed of the games and the human's cards (default 1)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    rounds, same = [], []
    for r in range(args.rounds + 1):  # round 0 warms up (numba compiles, the network loads)
        manager = web_games.GameManager(seed=args.seed, max_games=100_000)
        rows = hint_rows(manager, args.players, args.preset, args.positions if r else 20, args.seed)
        if r:
            rounds.append({spec: [row[spec + "_ms"] for row in rows] for spec in (OLD, NEW)})
            same.extend(row[OLD] == row[NEW] for row in rows)
    web_games.HINT_SEARCH = NEW
    out = {"players": args.players, "preset": args.preset, "positions": args.positions, "rounds": args.rounds}
    for spec in (OLD, NEW):
        ms = [x for rnd in rounds for x in rnd[spec]]
        out[spec] = {"p50_ms": round(float(np.percentile(ms, 50)), 3), "p99_ms": round(float(np.percentile(ms, 99)), 3)}
    out["same_card"] = round(float(np.mean(same)), 3)
    ratios = [statistics.median(rnd[OLD]) / statistics.median(rnd[NEW]) for rnd in rounds]
    out["old_over_new"] = {"median": round(statistics.median(ratios), 2), "low": round(min(ratios), 2),
                           "high": round(max(ratios), 2)}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"hint at {args.players} seats {args.preset}, {args.positions} positions x {args.rounds} rounds")
        for spec in (OLD, NEW):
            print(f"  {spec:<20} p50 {out[spec]['p50_ms']:.2f} ms   p99 {out[spec]['p99_ms']:.2f} ms")
        print(f"  the same card shown by both: {out['same_card']:.0%} of the positions (different draws of the same "
              f"distribution)")
        r = out["old_over_new"]
        print(f"  old / new (median of the rounds' median ratios): {r['median']:.2f}x ({r['low']:.2f}-{r['high']:.2f})")
    return out


if __name__ == "__main__":
    main()
