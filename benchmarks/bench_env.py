"""AEC env speed: random masked games through ``raw_env`` and ``env()``, beside tictactoe_v3 and connect_four_v3.

Run from the repository root::

    python benchmarks/bench_env.py               # 3 rounds x 1 s per row, ~40 s in all
    python benchmarks/bench_env.py --rounds 5 --seconds 1 --quick

Every env is driven by the same loop, PettingZoo's documented one: for the
agent to act, ``env.last()`` (which builds the observation dict: observation
and action mask, read every step), then a uniformly random legal action from
the mask (``np.flatnonzero`` + a uniform drawn in blocks from one numpy
Generator), then ``env.step``.  Terminated agents step with ``None``; an
episode ends when no agent is left, and the next starts with ``reset()`` (the
first reset is seeded).  The rows are measured in interleaved rounds (every
row once per round, fresh env each time, the compared rows next to each
other); each row reports the median of its rounds and each ratio the median
of its per-round ratios, so that load from other processes on a shared
machine hits both sides of a ratio alike.  "steps/s" counts decision steps (actions that are not
``None``); resets and the dead agents' final steps are in the time.

PettingZoo's ``tictactoe_v3`` and ``connect_four_v3`` (pygame must be
installed: ``pip install pygame``) are built through ``pettingzoo.make`` and
their ``raw_env`` classes, and measured in the same run.  tictactoe's game
logic costs almost nothing, so it is the practical ceiling of a PettingZoo
AEC env.  Goals (issue 3): our ``raw_env`` at least as fast as tictactoe's
``raw_env``, and our ``env()`` within 25% of tictactoe's ``env()``.

Results are printed as a table and written to ``benchmarks/results/env.json``.
Speed is never asserted by a test; read the figures ±30% on a shared machine.
"""

from __future__ import annotations

import datetime
import json
import pathlib
import platform
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from popejoan_env.cli import Integer, Number, OneLineParser, file_name
from popejoan_env.errors import PopeJoanError
from popejoan_env.files import check_writable, write_atomic

BLOCK = 65536
RESULTS = pathlib.Path(__file__).parent / "results" / "env.json"
MAX_SECONDS = 3600.0
"""The longest wall time per row and round (an hour; the default is 1 s)."""


def play(make: Callable[[], Any], seconds: float, seed: int = 0) -> dict[str, float]:
    """Random masked games on a fresh env for ``seconds``; returns steps, episodes and steps/s."""
    e = make()
    rng = np.random.default_rng(seed)
    uniforms: list[float] = rng.random(BLOCK).tolist()
    u = 0
    steps = episodes = 0
    e.reset(seed=seed)
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        while e.agents:
            obs, _reward, terminated, truncated, _info = e.last()
            if terminated or truncated:
                e.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            if u == BLOCK:
                uniforms = rng.random(BLOCK).tolist()
                u = 0
            action = int(legal[int(uniforms[u] * len(legal))])
            u += 1
            e.step(action)
            steps += 1
        episodes += 1
        if time.perf_counter() >= deadline:
            break
        e.reset()
    elapsed = time.perf_counter() - start
    return {"steps": steps, "episodes": episodes, "seconds": elapsed, "steps_per_s": steps / elapsed,
            "steps_per_episode": steps / episodes}


def peers() -> dict[str, Callable[[], Any]]:
    """Constructors of PettingZoo's tictactoe_v3 and connect_four_v3 (raw and wrapped), if importable."""
    out: dict[str, Callable[[], Any]] = {}
    try:
        import pettingzoo
        from pettingzoo.classic.connect_four.connect_four import raw_env as c4_raw
        from pettingzoo.classic.tictactoe.tictactoe import raw_env as ttt_raw
    except ImportError as err:
        print(f"(peers skipped: {err}; pip install pygame)", file=sys.stderr)
        return out
    out["tictactoe_v3 raw_env"] = ttt_raw
    out["tictactoe_v3 env()"] = lambda: pettingzoo.make("aec", "classic/tictactoe-v3")
    out["connect_four_v3 raw_env"] = c4_raw
    out["connect_four_v3 env()"] = lambda: pettingzoo.make("aec", "classic/connect_four-v3")
    return out


def ours(quick: bool) -> dict[str, Callable[[], Any]]:
    """Constructors of the Pope Joan rows."""
    from popejoan_env.envs.pettingzoo_aec import env, raw_env

    rows: dict[str, Callable[[], Any]] = {
        "pope_joan_v2 raw_env (4p modern)": lambda: raw_env(players=4, rules="modern"),
        "pope_joan_v2 env() (4p modern)": lambda: env(players=4, rules="modern"),
    }
    if not quick:
        rows.update({
            "pope_joan_v2 raw_env (4p victorian)": lambda: raw_env(players=4, rules="victorian"),
            "pope_joan_v2 raw_env (3p modern)": lambda: raw_env(players=3, rules="modern"),
            "pope_joan_v2 raw_env (8p modern)": lambda: raw_env(players=8, rules="modern"),
            "pope_joan_v2 raw_env (4p modern, auto_forced)": lambda: raw_env(players=4, auto_forced=True),
            "pope_joan_v2 env() (4p modern, auto_forced)": lambda: env(players=4, auto_forced=True),
            "pope_joan_v2 raw_env (4p modern, deals=8)": lambda: raw_env(players=4, deals=8),
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    """Measure every row, print the table and the ratios, write the JSON results."""
    parser = OneLineParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=Number(0.0, MAX_SECONDS, low_open=True), default=1.0,
                        help="wall time per row and round")
    parser.add_argument("--rounds", type=Integer(1, 1000), default=3,
                        help="interleaved rounds; each row reports its median")
    parser.add_argument("--quick", action="store_true", help="only the 4-player modern rows and the peers")
    parser.add_argument("--out", type=file_name, default=str(RESULTS), help="where to write the JSON results")
    args = parser.parse_args(argv)
    try:
        check_writable([args.out])  # before any measuring: a bad --out was a traceback after the whole run
    except PopeJoanError as err:
        parser.error(str(err))
    warnings.simplefilter("ignore")  # PettingZoo's deprecation notices are not the subject here

    mine, others = ours(args.quick), peers()
    # The compared rows run next to each other in every round; the extra rows after them.
    key = ["pope_joan_v2 raw_env (4p modern)", "tictactoe_v3 raw_env", "connect_four_v3 raw_env",
           "pope_joan_v2 env() (4p modern)", "tictactoe_v3 env()", "connect_four_v3 env()"]
    everything = {**mine, **others}
    rows = {name: everything[name] for name in key if name in everything}
    rows.update({name: make for name, make in everything.items() if name not in rows})
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in rows}
    for round_ in range(args.rounds):
        for i, (name, make) in enumerate(rows.items()):
            runs[name].append(play(make, args.seconds, seed=round_ * 1000 + i))
    results: dict[str, dict[str, Any]] = {}
    print(f"{'env':<46} {'steps/s':>10} {'µs/step':>8} {'steps/episode':>14}   rounds (steps/s)")
    for name, rs in runs.items():
        rates = sorted(r["steps_per_s"] for r in rs)
        median = float(np.median(rates))
        per_episode = sum(r["steps"] for r in rs) / sum(r["episodes"] for r in rs)
        results[name] = {"steps_per_s": median, "rounds_steps_per_s": [r["steps_per_s"] for r in rs],
                         "steps": sum(r["steps"] for r in rs), "episodes": sum(r["episodes"] for r in rs),
                         "steps_per_episode": per_episode}
        spread = " ".join(f"{x:,.0f}" for x in rates)
        print(f"{name:<46} {median:>10,.0f} {1e6 / median:>8.1f} {per_episode:>14.1f}   {spread}")

    def ratio(a: str, b: str) -> float | None:
        # Median of per-round ratios: the two rows of a round ran seconds apart, under the same load.
        if a in runs and b in runs:
            return float(np.median([x["steps_per_s"] / y["steps_per_s"] for x, y in zip(runs[a], runs[b])]))
        return None

    ratios = {
        "ours raw / tictactoe raw": ratio("pope_joan_v2 raw_env (4p modern)", "tictactoe_v3 raw_env"),
        "ours raw / connect_four raw": ratio("pope_joan_v2 raw_env (4p modern)", "connect_four_v3 raw_env"),
        "ours env() / tictactoe env()": ratio("pope_joan_v2 env() (4p modern)", "tictactoe_v3 env()"),
        "ours env() / connect_four env()": ratio("pope_joan_v2 env() (4p modern)", "connect_four_v3 env()"),
    }
    print()
    for name, value in ratios.items():
        print(f"{name:<34} {'n/a' if value is None else f'{value:.2f}'}")
    goals = {
        "raw_env >= tictactoe raw_env": None if ratios["ours raw / tictactoe raw"] is None
        else ratios["ours raw / tictactoe raw"] >= 1.0,
        "env() within 25% of tictactoe env()": None if ratios["ours env() / tictactoe env()"] is None
        else ratios["ours env() / tictactoe env()"] >= 0.75,
    }
    for name, met in goals.items():
        print(f"goal {name}: {'n/a' if met is None else 'met' if met else 'NOT met'}")

    import pettingzoo

    import popejoan_env

    write_atomic(args.out, json.dumps({
        "benchmark": "bench_env",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "popejoan": popejoan_env.__version__,
        "pettingzoo": pettingzoo.__version__,
        "seconds_per_row_and_round": args.seconds,
        "rounds": args.rounds,
        "loop": "last() (observation + mask) every step, uniform legal action from the mask, step()",
        "results": results,
        "ratios": ratios,
        "goals": goals,
    }, indent=2) + "\n")
    print(f"\nwritten {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
