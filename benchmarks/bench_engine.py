"""Engine speed: card plays and deals per second with random legal play, side by side with OpenSpiel Hearts.

Run from the repository root::

    python benchmarks/bench_engine.py            # ~2 s per configuration, ~22 s in all
    python benchmarks/bench_engine.py --seconds 5 --players 4 --presets modern

Pope Joan: for 3, 4, 6 and 8 players and both presets, deals are played back
to back for a fixed wall time (the dealer passing left, board and balances
carried, as in a session), every card through the public ``Deal.play`` with
its legality check: forced cards as they come, each lead uniform among the
legal leads.  Dealing (the shuffle), payouts and settlement are in the time.
"card plays" counts every card played, forced ones included; "choices" counts
the steps where more than one action was legal (for Pope Joan, what an agent
with ``auto_forced`` is asked).

OpenSpiel's C++ Hearts (``pyspiel.load_game("hearts")``), when importable, is
driven from Python the same way: uniform random legal actions, chance nodes
sampled from their listed probabilities with the same Generator.  Only player
decision steps (passes and card plays) are counted; chance steps (the deal)
are in the time but not in the count.  No observation is read on either side.

Both harnesses draw their uniforms from one ``numpy.random.Generator`` in
blocks (``rng.random(65536).tolist()``): a numpy call per step costs more
than a step of either engine.  A second Hearts row ("numpy call per step",
``rng.choice``/``rng.integers`` at every node) shows what such a harness
measures instead.

The batch engine (``popejoan_env.batch.BatchDeals``) runs 4 players ``modern``
at N = 1, 64, 1024 and 8192 deals in flight (its compiled kernels, numba):
every step reads the legal-action masks of all N
deals (``legal_mask()``, [N, 52]), draws a uniform legal lead per deal
(``random_actions``) and plays them (``step``: forced cards, lone leads,
settlement and the auto-reset dealing inside); "with observations" also
encodes the v2 observation of every seat to act (``encode_batch``, [N, 1285]).
Memory per deal is the batch's state arrays (plus the observation row).

Results are printed as a table and written to ``benchmarks/results/engine.json``.
Speed is never asserted by a test; read the figures ±30% on a shared machine.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import platform
import sys
import time
from typing import Any

import numpy as np

import popejoan_env
from popejoan_env.cli import SEED, TABLE_SIZE, Integer, Number, OneLineParser, file_name
from popejoan_env.engine import Deal
from popejoan_env.errors import PopeJoanError
from popejoan_env.files import check_writable, write_atomic
from popejoan_env.rules import PRESETS, Rules
from popejoan_env.seats import next_dealer

BLOCK = 65536
RESULTS = pathlib.Path(__file__).parent / "results" / "engine.json"
MAX_SECONDS = 3600.0
"""The longest wall time per configuration (an hour; the default is 2 s)."""
MAX_BATCH = 65_536
"""The most deals in flight of a batch row: with observations, 5 kB a deal (337 MB at this bound)."""


class Uniforms:
    """Uniforms in [0, 1) from a Generator, drawn a block at a time."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.values: list[float] = rng.random(BLOCK).tolist()
        self.i = 0

    def refill(self) -> None:
        """Draw the next block."""
        self.values = self.rng.random(BLOCK).tolist()
        self.i = 0


def bench_popejoan(rules: Rules, players: int, seconds: float, rng: np.random.Generator) -> dict[str, Any]:
    """Random legal play for ``seconds``: card plays, choices and deals per second."""
    uniforms = Uniforms(rng)
    choices = 0

    def choose(deal: Deal, legal: list[int]) -> int:
        nonlocal choices
        if uniforms.i == BLOCK:
            uniforms.refill()
        u = uniforms.values[uniforms.i]
        uniforms.i += 1
        choices += 1
        return legal[int(u * len(legal))]

    board: list[int] | None = None
    balances = [rules.start_counters] * players
    dealer = plays = deals = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        deal = Deal.new(rules, players, dealer, rng, board=board, balances=balances)
        deal.play_out(choose)  # the engine's own loop: forced cards and lone leads inside, choose the rest
        plays += len(deal.plays)
        deals += 1
        board, balances, dealer = deal.board, deal.balances, next_dealer(dealer, players)
        if time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    return {
        "game": "popejoan", "preset": rules.name, "players": players, "seconds": elapsed,
        "card_plays": plays, "choices": choices, "deals": deals,
        "card_plays_per_s": plays / elapsed, "choices_per_s": choices / elapsed, "deals_per_s": deals / elapsed,
        "plays_per_deal": plays / deals,
    }


def bench_hearts(seconds: float, rng: np.random.Generator) -> dict[str, Any] | None:
    """OpenSpiel C++ Hearts from Python, random legal actions; counts player decision steps only."""
    try:
        import pyspiel
    except ImportError:
        return None
    game = pyspiel.load_game("hearts")
    uniforms = Uniforms(rng)
    values, i = uniforms.values, 0
    steps = choices = games = chance = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        state = game.new_initial_state()
        while not state.is_terminal():
            if i == BLOCK:
                uniforms.refill()
                values, i = uniforms.values, 0
            u = values[i]
            i += 1
            if state.is_chance_node():
                # Inverse-CDF sampling from the listed probabilities (exact for any chance node).
                outcomes = state.chance_outcomes()
                action = outcomes[-1][0]
                for a, p in outcomes:
                    u -= p
                    if u < 0:
                        action = a
                        break
                state.apply_action(action)
                chance += 1
            else:
                legal = state.legal_actions()
                n = len(legal)
                state.apply_action(legal[int(u * n)])
                steps += 1
                choices += n > 1
        games += 1
        if time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    return {
        "game": "hearts", "harness": "block of uniforms", "players": 4, "seconds": elapsed,
        "decision_steps": steps, "choices": choices, "chance_steps": chance, "games": games,
        "steps_per_s": steps / elapsed, "choices_per_s": choices / elapsed, "games_per_s": games / elapsed,
        "steps_per_game": steps / games,
    }


def bench_hearts_numpy_per_step(seconds: float, rng: np.random.Generator) -> dict[str, Any] | None:
    """Hearts with a numpy call at every node (``rng.choice`` for chance, ``rng.integers`` for actions)."""
    try:
        import pyspiel
    except ImportError:
        return None
    game = pyspiel.load_game("hearts")
    steps = choices = games = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                actions, probs = zip(*state.chance_outcomes())
                state.apply_action(int(rng.choice(actions, p=probs)))
            else:
                legal = state.legal_actions()
                state.apply_action(legal[int(rng.integers(len(legal)))])
                steps += 1
                choices += len(legal) > 1
        games += 1
        if time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    return {
        "game": "hearts", "harness": "numpy call per step", "players": 4, "seconds": elapsed,
        "decision_steps": steps, "choices": choices, "games": games, "steps_per_s": steps / elapsed,
        "choices_per_s": choices / elapsed, "games_per_s": games / elapsed,
    }


def bench_batch(rules: Rules, players: int, num_deals: int, seconds: float,
                rng: np.random.Generator, observe: bool) -> dict[str, Any] | None:
    """The batch engine with random legal play for ``seconds``: card plays, choices and deals per second."""
    from popejoan_env.batch import BatchDeals

    encode = None
    if observe:
        try:
            from popejoan_env.batch_observation import encode_batch as encode
        except ImportError:
            return None
    batch = BatchDeals(rules, players, num_deals, rng=rng, session_length=2 * players)
    obs = np.zeros((num_deals, 1285), dtype=np.float32) if observe else None
    for _ in range(3):  # compile (numba) and warm up
        batch.legal_mask()
        batch.step(batch.random_actions(rng))
    played, dealt = batch.cards_played, batch.deals_dealt
    steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        batch.legal_mask()
        if encode is not None:
            encode(batch, out=obs)
        batch.step(batch.random_actions(rng))
        steps += 1
        if time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    plays = batch.cards_played - played
    deals = batch.deals_dealt - dealt
    memory = batch.memory_bytes + (obs.nbytes // num_deals if obs is not None else 0)
    return {
        "game": "popejoan-batch", "engine": "numba", "observations": observe, "preset": rules.name,
        "players": players, "num_deals": num_deals, "seconds": elapsed, "steps": steps, "card_plays": plays,
        "choices": steps * num_deals, "deals": deals, "card_plays_per_s": plays / elapsed,
        "choices_per_s": steps * num_deals / elapsed, "deals_per_s": deals / elapsed, "bytes_per_deal": memory,
    }


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    info: dict[str, Any] = {
        "python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
        "numpy": np.__version__, "popejoan": popejoan_env.__version__,
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if hasattr(os, "getloadavg"):
        info["load_average_start"] = os.getloadavg()
    return info


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table and write the JSON results."""
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=Number(0.0, MAX_SECONDS, low_open=True), default=2.0,
                        help="wall time per configuration (default 2)")
    parser.add_argument("--players", type=TABLE_SIZE, nargs="+", default=[3, 4, 6, 8], help="player counts")
    parser.add_argument("--presets", choices=sorted(PRESETS), nargs="+", default=["modern", "victorian"],
                        help="rules presets")
    parser.add_argument("--seed", type=SEED, default=0, help="seed of the numpy Generator")
    parser.add_argument("--no-hearts", action="store_true", help="skip OpenSpiel Hearts")
    parser.add_argument("--batch-sizes", type=Integer(1, MAX_BATCH), nargs="*", default=[1, 64, 1024, 8192],
                        help="deals in flight for the batch engine (4 players, modern); none to skip it")
    parser.add_argument("--out", type=file_name, default=str(RESULTS), help=f"JSON output (default {RESULTS})")
    args = parser.parse_args(argv)
    for flag, values in (("--players", args.players), ("--presets", args.presets),
                         ("--batch-sizes", args.batch_sizes)):
        twice = sorted({str(v) for v in values if values.count(v) > 1})
        if twice:  # each value is a row measured for --seconds: a repeated one is a mistake, not a wish
            parser.error(f"{flag}: {', '.join(twice)} given more than once")
    try:
        check_writable([args.out])  # before any measuring: a bad --out was a traceback after the whole run
    except PopeJoanError as err:
        parser.error(str(err))

    rng = np.random.default_rng(args.seed)
    info = machine()
    rows: list[dict[str, Any]] = []
    bench_popejoan(Rules.preset("modern"), 4, min(0.3, args.seconds), rng)  # warm caches and tables
    for preset in args.presets:
        for players in args.players:
            row = bench_popejoan(Rules.preset(preset), players, args.seconds, rng)
            rows.append(row)
            print(
                f"popejoan {preset:9s} {players}p  {row['card_plays_per_s']:>10,.0f} card plays/s  "
                f"{row['choices_per_s']:>9,.0f} choices/s  {row['deals_per_s']:>8,.0f} deals/s",
                file=sys.stderr,
            )
    batch_rows: list[dict[str, Any]] = []
    for observe in (False, True):
        for n in args.batch_sizes:
            row = bench_batch(Rules.preset("modern"), 4, n, args.seconds, rng, observe)
            if row is None:
                continue
            batch_rows.append(row)
            print(f"batch N={n:<5d} {'obs ' if observe else '    '} "
                  f"{row['card_plays_per_s']:>12,.0f} card plays/s  {row['bytes_per_deal']:,} bytes/deal",
                  file=sys.stderr)
    hearts = None if args.no_hearts else bench_hearts(args.seconds, rng)
    hearts_numpy = None if args.no_hearts else bench_hearts_numpy_per_step(args.seconds, rng)
    if hasattr(os, "getloadavg"):
        info["load_average_end"] = os.getloadavg()

    print()
    print("| system | players | card plays (steps)/s | choices/s | deals (games)/s | plays per deal |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| popejoan {row['preset']} | {row['players']} | {row['card_plays_per_s']:,.0f} | "
            f"{row['choices_per_s']:,.0f} | {row['deals_per_s']:,.0f} | {row['plays_per_deal']:.1f} |"
        )
    for h in (hearts, hearts_numpy):
        if h is not None:
            print(
                f"| OpenSpiel hearts (C++), {h['harness']} | 4 | {h['steps_per_s']:,.0f} decision steps | "
                f"{h['choices_per_s']:,.0f} | {h['games_per_s']:,.0f} | {h['decision_steps'] / h['games']:.1f} |"
            )
    if batch_rows:
        print("\n| batch engine (4p modern) | N | observations | card plays/s | × scalar | × Hearts | deals/s | "
              "bytes/deal |\n|---|---:|---|---:|---:|---:|---:|---:|")
        scalar = next((r["card_plays_per_s"] for r in rows if r["preset"] == "modern" and r["players"] == 4), None)
        for row in batch_rows:
            vs_scalar = f"{row['card_plays_per_s'] / scalar:.1f}" if scalar else "–"
            vs_hearts = f"{row['card_plays_per_s'] / hearts['steps_per_s']:.1f}" if hearts else "–"
            print(f"| {row['engine']} | {row['num_deals']} | {'yes' if row['observations'] else 'no'} | "
                  f"{row['card_plays_per_s']:,.0f} | {vs_scalar} | {vs_hearts} | {row['deals_per_s']:,.0f} | "
                  f"{row['bytes_per_deal']:,} |")
    result: dict[str, Any] = {"machine": info, "seconds_each": args.seconds, "seed": args.seed, "popejoan": rows,
                              "batch": batch_rows}
    modern4 = next((r for r in rows if r["preset"] == "modern" and r["players"] == 4), None)
    if hearts is not None:
        result["hearts"] = hearts
        result["hearts_numpy_per_step"] = hearts_numpy
    if modern4 is not None:
        print(f"\npopejoan 4p modern: {modern4['card_plays_per_s']:,.0f} card plays/s (goal ≥ 300,000)")
        if hearts is not None:
            ratio = modern4["card_plays_per_s"] / hearts["steps_per_s"]
            result["ratio_popejoan_4p_modern_to_hearts"] = ratio
            print(f"ratio popejoan(4p modern) card plays/s / hearts decision steps/s = {ratio:.2f} (goal > 2)")
            choice_ratio = modern4["choices_per_s"] / hearts["choices_per_s"]
            result["ratio_popejoan_4p_modern_choices_to_hearts_choices"] = choice_ratio
            print(f"ratio of choices/s (steps with more than one legal action) = {choice_ratio:.2f}")
    write_atomic(args.out, json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
