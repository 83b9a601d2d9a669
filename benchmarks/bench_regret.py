"""Decision quality: the counters each player's card gives up, at the same positions, by a reference search's values.

Run from the repository root::

    python benchmarks/bench_regret.py models/ppo_modern_4p/model.zip pimc shipped     # 400 deals, 4 seats modern
    python benchmarks/bench_regret.py A.zip B.zip --deals 1000 --reference pimc:samples=4096 --json

The positions: deals (dealt from ``default_rng([seed, d])``) played by ``--driver`` at every seat.  At each
decision where the reference (``pimc:samples=1024`` by default) searches two or more cards, it gives its mean
counters for every card it considers, and each measured player chooses its card for the same view; its regret
is the reference's best value minus the value of its card.  Reported per player: the mean regret per decision
with a 95% interval, how often it picks the reference's best card, and the paired difference from the first
player (the same positions, so the interval is narrow).

This is a screen, not a strength claim: the reference is ``pimc`` with many worlds, so it scores a player by how
close it comes to that search (whose rollouts play a rule of thumb with every card in view), not by what it wins.
It ranks cheaply and with little noise; duplicate deals decide (``popejoan evaluate``, ``training/benchmark.py``).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from popejoan_env.cli import SEED, TABLE_SIZE, Integer, OneLineParser
from popejoan_env.engine import Deal
from popejoan_env.errors import PopeJoanError
from popejoan_env.players import make_player
from popejoan_env.rules import PRESETS, Rules
from popejoan_env.seat_view import SeatView
from popejoan_env.table import play_until


def regrets(measured: list[Any], ref: Any, playing: Any, rules: Rules, players: int, deals: int,
            seed: int) -> tuple[np.ndarray, np.ndarray]:
    """[decisions, players]: each measured player's regret by the values of ``ref`` (a search that keeps
    ``last_values``), and whether it chose ``ref``'s best card, at every real decision of ``deals`` deals played by
    ``playing``."""
    given_up: list[list[float]] = []
    best_card: list[list[bool]] = []

    class Driver:
        """``playing`` at every seat; at each decision, the reference and every measured player asked too."""

        name = playing.name

        def reset(self, seed: int | None = None) -> None:
            playing.reset(seed)

        def act(self, view: SeatView) -> int:
            values: dict[int, float] = {}
            if len(view.legal) > 1:
                ref.act(view)
                values = dict(ref.last_values)
            if len(values) >= 2:  # a single run to lead gives one value: nothing to compare
                top = max(values, key=values.__getitem__)
                worst = min(values.values())
                cards = [int(p.act(view)) for p in measured]
                # a card the reference did not search (the middle of a run in hand) counts as its worst one
                given_up.append([values[top] - values.get(c, worst) for c in cards])
                best_card.append([c == top for c in cards])
            return int(playing.act(view))

    seat_player = Driver()
    for d in range(deals):
        deal = Deal.new(rules, players, d % players, np.random.default_rng([seed, d]), board=None, balances=None)
        for p in measured:
            p.reset(d)
        ref.reset(d)
        seat_player.reset(d)
        play_until(deal, [seat_player] * players)
    return np.array(given_up, dtype=np.float64), np.array(best_card, dtype=bool)


def ci95(x: np.ndarray) -> float:
    """Half-width of the 95% normal interval of the mean of ``x``."""
    return float(1.96 * x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure the players; print the table (or JSON) and return it."""
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("players_measured", nargs="+", metavar="PLAYER",
                        help="players to measure (make_player specs or model files); the first is the baseline of "
                             "the paired differences")
    parser.add_argument("--players", type=TABLE_SIZE, default=4, help="seats (default 4)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="modern", help="rules preset (default modern)")
    parser.add_argument("--deals", type=Integer(1, 100_000), default=400, help="deals played (default 400)")
    parser.add_argument("--seed", type=SEED, default=1, help="seed of the deals and of every player (default 1)")
    parser.add_argument("--reference", default="pimc:samples=1024",
                        help="the search whose values score the cards (a pimc or pimc_net spec; default "
                             "pimc:samples=1024)")
    parser.add_argument("--driver", default="pimc", help="the player at every seat, whose deals give the positions "
                                                         "(default pimc)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    try:  # every player built once, before any deal: a bad spec is refused in one line
        ref = make_player(args.reference, seed=args.seed)
        playing = make_player(args.driver, seed=args.seed)
        measured = [make_player(spec, seed=args.seed) for spec in args.players_measured]
        if not hasattr(ref, "last_values"):
            raise PopeJoanError(f"--reference must be a search that gives its values (pimc, pimc_net), "
                                f"got {args.reference!r}")
    except PopeJoanError as exc:
        parser.error(str(exc))
    rules = Rules.preset(args.preset)
    given_up, best = regrets(measured, ref, playing, rules, args.players, args.deals, args.seed)
    out: dict[str, Any] = {"players": args.players, "preset": args.preset, "deals": args.deals, "seed": args.seed,
                           "reference": args.reference, "driver": args.driver, "decisions": len(given_up),
                           "measured": []}
    for i, spec in enumerate(args.players_measured):
        row = {"player": spec, "regret": round(float(given_up[:, i].mean()), 4), "ci95": round(ci95(given_up[:, i]), 4),
               "best_card": round(float(best[:, i].mean()), 4)}
        if i:
            diff = given_up[:, i] - given_up[:, 0]
            row["minus_first"] = round(float(diff.mean()), 4)
            row["minus_first_ci95"] = round(ci95(diff), 4)
        out["measured"].append(row)
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"regret per decision by {args.reference}'s values: {out['decisions']:,} decisions of {args.deals:,} "
              f"deals of {args.driver}, {args.players} seats {args.preset}, seed {args.seed}")
        print(f"  {'player':<40} {'counters given up':>20} {'its best card':>14} {'minus the first':>18}")
        for row in out["measured"]:
            diff = f"{row['minus_first']:+.4f} ± {row['minus_first_ci95']:.4f}" if "minus_first" in row else ""
            print(f"  {row['player']:<40} {row['regret']:>11.4f} ± {row['ci95']:.4f} {row['best_card']:>14.1%} "
                  f"{diff:>18}")
    return out


if __name__ == "__main__":
    main()
