"""Duplicate tournaments: the same deals replayed with every seating rotation, so neither seat nor
cards favour anyone, and confidence intervals that take the deal as the unit of independence.

>>> result = run_duplicate(["random", "stops_first", "lowest", "pool_hunter"], deals=20, seed=1)
>>> [row["player"] for row in result.stats()][0] != "random"
True

**Deals.** Deal ``d`` is shuffled by ``numpy.random.default_rng([seed, d])``
and dealt by seat ``d mod seats`` (the deal passes left from deal to deal).
Every deal starts from an empty board plus the dealer's dressing (R1) and
zero balances: carry-over (R12) would make the board differ between the
rotations of a deal, and duplicate play needs them identical.  A deal is
played straight through the engine (``Deal`` and ``seat_view``), not the
PettingZoo environment, for speed.  A player is asked only when it has a
choice: forced cards (R8) and lone legal leads are played for it.  Players
with ``choose`` get ``seat_view(deal, seat)``; others get the AEC observation
dict (``observation.encode`` and ``action_mask``).

**Lineups.** A *lineup* puts entrants at the seats of the table; a *rotation*
shifts it one seat left, and each lineup is played in all ``seats``
rotations of every deal, so each entrant in it plays every hand.  Only the
cyclic rotations are played, not every permutation: in Pope Joan a seat's
neighbours matter only through who deals and who leads first, and the
rotations already give every entrant every hand and every distance from the
dealer.  Lineups come in *groups*, and an entrant's score in a group is its
mean per seat it fills there:

* ``subsets`` (the default when there are at least as many entrants as
  seats): every group is one lineup of ``seats`` different entrants, one
  group for each subset of that size (5 entrants at 4 seats: 5 groups of 4
  rotations, 20 games per deal).  When there are more subsets than
  ``max_groups``, deal ``d`` plays ``max_groups`` consecutive subsets
  starting at ``d·max_groups`` (cyclically), so over the deals every subset
  is played equally often (±1).
* ``field`` (the default with fewer entrants than seats): one group per pair
  of entrants A, B: A alone against ``seats-1`` copies of B, and B alone
  against copies of A.  Only the lone seat is scored, so A's score is "A
  against a field of B" and the pair's difference is (A against B's) minus
  (B against A's): both have played every hand of the deal alone.  Two
  entrants at a 4-seat table play 8 games per deal.

**Statistics.** For each entrant and deal, the scores of all its scored
seats are averaged (per group, then over its groups), which gives one number
per deal; the mean and a 95% Student-t interval are taken over the deals.  A
deal's rotations are not independent (they share the cards), so taking them
as separate samples would overstate the confidence.  Counters are the net
change per deal (``Deal.delta``): the dressing paid as dealer, the
compartments taken (by the turn-up, by playing, and the game), and the
settlement when someone goes out; the breakdown is reported too, and
``net = dressing + compartments + settlement``.  Head-to-head: for each pair
of entrants the per-deal mean difference of their scores in the groups where
both were scored, with a 95% interval over the deals where they met.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import multiprocessing
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from popejoan_env.engine import Deal
from popejoan_env.errors import IllegalActionError, PopeJoanError
from popejoan_env.observation import action_mask, encode
from popejoan_env.players import Player, make_player
from popejoan_env.rules import COMPARTMENTS, Rules, resolve_rules
from popejoan_env.seat_view import seat_view

FIELDS: tuple[str, ...] = ("net", *COMPARTMENTS, "settlement", "dressing", "went_out")
"""Per-seat quantities recorded for every game, in this order."""
NET, SETTLEMENT, DRESSING, WENT_OUT = 0, 1 + len(COMPARTMENTS), 2 + len(COMPARTMENTS), 3 + len(COMPARTMENTS)
_K = len(FIELDS)

_T975 = (
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157,
    2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.13145, 2.119905, 2.109816, 2.100922,
    2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831,
    2.048407, 2.04523, 2.042272,
)


def t_quantile_975(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom (two-sided 95% intervals)."""
    if df < 1:
        return math.nan
    if df <= len(_T975):
        return _T975[df - 1]
    # Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5); error < 1e-7 beyond 30 df.
    z = 1.959963984540054
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def mean_ci(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and the half-width of its 95% Student-t confidence interval (NaN when undefined)."""
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return math.nan, math.nan
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan
    return mean, t_quantile_975(len(x) - 1) * float(x.std(ddof=1)) / math.sqrt(len(x))


# --------------------------------------------------------------------- schedule
@dataclasses.dataclass(frozen=True)
class Lineup:
    """Entrant index at each seat offset (rotation 0 puts offset k at seat k) and which offsets are scored."""

    entrants: tuple[int, ...]
    scored: tuple[bool, ...]


def make_schedule(entrants: int, seats: int, mode: str = "auto") -> tuple[str, list[list[Lineup]]]:
    """The groups of lineups for ``entrants`` players at ``seats`` seats; returns the mode used too."""
    if entrants < 2:
        raise PopeJoanError(f"a tournament needs at least 2 entrants, got {entrants}")
    if mode == "auto":
        mode = "subsets" if entrants >= seats else "field"
    if mode == "subsets":
        if entrants < seats:
            raise PopeJoanError(
                f"lineups='subsets' needs at least as many entrants as seats ({entrants} < {seats}); use 'field'"
            )
        groups = [[Lineup(tuple(c), (True,) * seats)] for c in itertools.combinations(range(entrants), seats)]
    elif mode == "field":
        alone = (True,) + (False,) * (seats - 1)
        groups = [
            [Lineup((a,) + (b,) * (seats - 1), alone), Lineup((b,) + (a,) * (seats - 1), alone)]
            for a, b in itertools.combinations(range(entrants), 2)
        ]
    else:
        raise PopeJoanError(f"unknown lineups mode {mode!r}; choose 'auto', 'subsets' or 'field'")
    return mode, groups


def groups_of_deal(deal_index: int, n_groups: int, max_groups: int) -> list[int]:
    """Indices of the groups played on deal ``deal_index``: all, or a cyclic window of ``max_groups``."""
    if n_groups <= max_groups:
        return list(range(n_groups))
    start = deal_index * max_groups
    return [(start + j) % n_groups for j in range(max_groups)]


# --------------------------------------------------------------------- playing
def player_seed(seed: int, deal: int, group: int, lineup: int, rotation: int, entrant: int) -> int:
    """The seed a player is reset with for one game (so results do not depend on the order of play)."""
    return int(np.random.SeedSequence([seed, deal, group, lineup, rotation, entrant]).generate_state(1)[0])


def game_record(deal: Deal) -> np.ndarray:
    """Per seat, the ``FIELDS`` of a finished deal: net, counters by compartment, settlement, dressing, went out."""
    n = deal.players
    out = np.zeros((n, _K), dtype=np.float64)
    out[:, NET] = deal.delta
    out[deal.dealer, DRESSING] = -sum(deal.rules.dressing)
    for _cause, seat, comp, amount in deal.awards:
        out[seat, 1 + comp] += amount
    for payer, payee, amount in deal.payments:
        out[payer, SETTLEMENT] -= amount
        out[payee, SETTLEMENT] += amount
    if deal.winner is not None:
        out[deal.winner, WENT_OUT] = 1.0
    return out


class _Runner:
    """Plays the games of a tournament deal by deal; one per process."""

    def __init__(self, players: list[Player], rules: Rules, seats: int, seed: int,
                 groups: list[list[Lineup]], max_groups: int) -> None:
        self.players = players
        self.rules = rules
        self.seats = seats
        self.seed = seed
        self.groups = groups
        self.max_groups = max_groups
        self.choosers: list[Callable[..., int] | None] = [getattr(p, "choose", None) for p in players]
        self.decisions = np.zeros(len(players), dtype=np.int64)
        self.think = np.zeros(len(players), dtype=np.float64)
        self.games = 0

    def deal(self, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Play every game of deal ``d``: per-entrant sums and counts, and pair differences."""
        e = len(self.players)
        base = Deal.new(self.rules, self.seats, d % self.seats, np.random.default_rng([self.seed, d]))
        value = np.zeros((e, _K))
        groups_in = np.zeros(e)
        pair_sum = np.zeros((e, e))
        pair_n = np.zeros((e, e))
        for g in groups_of_deal(d, len(self.groups), self.max_groups):
            sums = np.zeros((e, _K))
            seats_filled = np.zeros(e)
            for li, lineup in enumerate(self.groups[g]):
                for r in range(self.seats):
                    at = [lineup.entrants[(s - r) % self.seats] for s in range(self.seats)]
                    for ent in sorted(set(at)):
                        self.players[ent].reset(player_seed(self.seed, d, g, li, r, ent))
                    deal = base.copy()
                    self._play(deal, at)
                    record = game_record(deal)
                    for s in range(self.seats):
                        if lineup.scored[(s - r) % self.seats]:
                            sums[at[s]] += record[s]
                            seats_filled[at[s]] += 1
            here = np.flatnonzero(seats_filled)
            means = sums[here] / seats_filled[here, None]
            value[here] += means
            groups_in[here] += 1
            for i, a in enumerate(here):
                for j, b in enumerate(here):
                    if a != b:
                        pair_sum[a, b] += means[i, NET] - means[j, NET]
                        pair_n[a, b] += 1
        return value, groups_in, np.where(pair_n > 0, pair_sum / np.maximum(pair_n, 1), np.nan)

    def _play(self, deal: Deal, at: list[int]) -> None:
        players, choosers = self.players, self.choosers
        while not deal.done:
            if deal.forced >= 0:
                deal.play(deal.forced)
                continue
            legal = deal.legal_actions()
            if len(legal) == 1:
                deal.play(legal[0])
                continue
            seat = deal.to_act
            ent = at[seat]
            start = time.perf_counter()
            chooser = choosers[ent]
            if chooser is not None:
                card = chooser(seat_view(deal, seat))
            else:
                card = players[ent].act({"observation": encode(deal, seat), "action_mask": action_mask(deal, seat)})
            self.think[ent] += time.perf_counter() - start
            self.decisions[ent] += 1
            try:
                deal.play(int(card))
            except PopeJoanError as err:
                raise IllegalActionError(f"player {players[ent].name!r} at seat {seat} chose badly: {err}") from None
        self.games += 1


_WORKER: _Runner | None = None


def _worker_deals(deals: list[int]) -> tuple[list[int], list[tuple[np.ndarray, np.ndarray, np.ndarray]], np.ndarray, np.ndarray, int]:
    runner = _WORKER
    assert runner is not None
    before = (runner.decisions.copy(), runner.think.copy(), runner.games)
    out = [runner.deal(d) for d in deals]
    return (deals, out, runner.decisions - before[0], runner.think - before[1], runner.games - before[2])


def run_duplicate(
    entrants: Sequence[Player | str],
    deals: int,
    seed: int,
    rules: Rules | str | Mapping[str, Any] = "modern",
    seats: int = 4,
    progress: bool = False,
    lineups: str = "auto",
    max_groups: int = 12,
    workers: int = 1,
) -> TournamentResult:
    """Play a duplicate tournament (see the module docstring) and return its result.

    ``entrants`` are players or player specs (``make_player``); ``lineups`` is
    ``auto``, ``subsets`` or ``field``; ``workers > 1`` plays deals in forked
    processes (the numbers do not change, only the time).
    """
    rules = resolve_rules(rules)
    if isinstance(deals, bool) or not isinstance(deals, int) or deals < 2:
        raise PopeJoanError(f"a tournament needs at least 2 deals (for a confidence interval), got {deals!r}")
    players = [make_player(p) if isinstance(p, str) else p for p in entrants]
    names = _unique_names([p.name for p in players])
    mode, groups = make_schedule(len(players), seats, lineups)
    Deal.new(rules, seats, 0, np.random.default_rng(0))  # refuse a bad table size before any work
    runner = _Runner(players, rules, seats, seed, groups, max_groups)
    e = len(players)
    per_deal = np.full((e, deals, _K), np.nan)
    pair = np.full((e, e, deals), np.nan)
    bar = _progress_bar(deals, progress)
    start = time.perf_counter()

    def store(d: int, out: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        value, groups_in, diff = out
        here = groups_in > 0
        per_deal[here, d] = value[here] / groups_in[here, None]
        pair[:, :, d] = diff

    if workers <= 1:
        for d in range(deals):
            store(d, runner.deal(d))
            if bar is not None:
                bar.update(1)
        decisions, think, games = runner.decisions, runner.think, runner.games
    else:
        global _WORKER
        _WORKER = runner
        chunks = [list(range(i, min(i + 10, deals))) for i in range(0, deals, 10)]
        decisions, think, games = np.zeros(e, dtype=np.int64), np.zeros(e), 0
        try:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                for idx, outs, dec, th, gm in pool.imap_unordered(_worker_deals, chunks):
                    for d, out in zip(idx, outs):
                        store(d, out)
                    decisions += dec
                    think += th
                    games += gm
                    if bar is not None:
                        bar.update(len(idx))
        finally:
            _WORKER = None
    if bar is not None:
        bar.close()
    wall = time.perf_counter() - start
    return TournamentResult(
        players=names,
        rules=rules.to_dict(),
        seats=seats,
        deals=deals,
        seed=seed,
        lineups=mode,
        schedule=[[[names[i] for i in lu.entrants] for lu in grp] for grp in groups],
        max_groups=max_groups,
        per_deal=per_deal,
        pair=pair,
        games=int(games),
        decisions=[int(x) for x in decisions],
        think_seconds=[float(x) for x in think],
        wall_seconds=wall,
    )


def _unique_names(names: Iterable[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def _progress_bar(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="deal", desc="duplicate deals")


# --------------------------------------------------------------------- results
@dataclasses.dataclass
class TournamentResult:
    """A finished duplicate tournament: per-deal scores and everything derived from them."""

    players: list[str]
    rules: dict[str, Any]
    seats: int
    deals: int
    seed: int
    lineups: str
    schedule: list[list[list[str]]]
    max_groups: int
    per_deal: np.ndarray
    """[entrant, deal, field]: the entrant's mean per scored seat in that deal (NaN if it did not play)."""
    pair: np.ndarray
    """[a, b, deal]: mean of (a's score − b's score) over the groups where both were scored (NaN if none)."""
    games: int
    decisions: list[int]
    think_seconds: list[float]
    wall_seconds: float

    def stats(self) -> list[dict[str, Any]]:
        """One row per entrant, best mean counters per deal first."""
        rows = []
        for i, name in enumerate(self.players):
            net = self.per_deal[i, :, NET]
            mean, half = mean_ci(net)
            played = ~np.isnan(net)
            row: dict[str, Any] = {
                "player": name,
                "mean": mean,
                "ci95": half,
                "low": mean - half,
                "high": mean + half,
                "deals": int(played.sum()),
                "go_out_rate": float(np.nanmean(self.per_deal[i, :, WENT_OUT])),
                "compartments": {
                    c: float(np.nanmean(self.per_deal[i, :, 1 + k])) for k, c in enumerate(COMPARTMENTS)
                },
                "settlement": float(np.nanmean(self.per_deal[i, :, SETTLEMENT])),
                "dressing": float(np.nanmean(self.per_deal[i, :, DRESSING])),
                "decisions": self.decisions[i],
                "ms_per_decision": 1000 * self.think_seconds[i] / self.decisions[i] if self.decisions[i] else 0.0,
            }
            rows.append(row)
        rows.sort(key=lambda r: -r["mean"] if not math.isnan(r["mean"]) else math.inf)
        for rank, row in enumerate(rows, 1):
            row["rank"] = rank
        return rows

    def head_to_head(self) -> dict[str, dict[str, dict[str, float]]]:
        """``[a][b]``: mean of a's minus b's counters per deal where both played, its 95% half-width, deals."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        for i, a in enumerate(self.players):
            out[a] = {}
            for j, b in enumerate(self.players):
                if i == j:
                    continue
                mean, half = mean_ci(self.pair[i, j])
                out[a][b] = {"mean": mean, "ci95": half, "deals": int((~np.isnan(self.pair[i, j])).sum())}
        return out

    def beats(self, a: str, b: str) -> bool:
        """True when ``a`` out-scores ``b`` head to head with 95% confidence."""
        h = self.head_to_head()[a][b]
        return bool(h["mean"] - h["ci95"] > 0)

    @property
    def deals_per_second(self) -> float:
        """Duplicate deals (all their games) played per second of wall time."""
        return self.deals / self.wall_seconds if self.wall_seconds > 0 else math.nan

    # ---------------------------------------------------------------- output
    def to_dict(self, per_deal: bool = True) -> dict[str, Any]:
        """Everything as JSON-friendly values (NaN becomes null); ``per_deal`` adds each deal's net scores."""
        out: dict[str, Any] = {
            "format": "popejoan-tournament/1",
            "players": self.players,
            "rules": self.rules,
            "seats": self.seats,
            "deals": self.deals,
            "seed": self.seed,
            "lineups": self.lineups,
            "schedule": self.schedule,
            "max_groups": self.max_groups,
            "games": self.games,
            "stats": self.stats(),
            "head_to_head": self.head_to_head(),
            "timing": {
                "wall_seconds": self.wall_seconds,
                "deals_per_second": self.deals_per_second,
                "games_per_second": self.games / self.wall_seconds if self.wall_seconds > 0 else None,
            },
        }
        if per_deal:
            out["per_deal_net"] = {
                name: self.per_deal[i, :, NET].tolist() for i, name in enumerate(self.players)
            }
        return _clean(out)

    def to_json(self, per_deal: bool = True) -> str:
        """The result as a JSON document (see ``to_dict``)."""
        return json.dumps(self.to_dict(per_deal), indent=1)

    def table(self) -> str:
        """The ranking, the counters by source, and the head-to-head matrix as plain terminal text."""
        rows = self.stats()
        width = max(6, *(len(r["player"]) for r in rows))
        short = ["pope", "matr", "intr", "ace", "king", "queen", "jack", "game"]
        head = (f"{'#':>2} {'player':<{width}} {'counters/deal':>17} {'go out':>7} "
                + " ".join(f"{s:>5}" for s in short) + f" {'settle':>7} {'dress':>6} {'ms/dec':>7}")
        lines = [self._title(), "", head, "-" * len(head)]
        for r in rows:
            comps = " ".join(f"{r['compartments'][c]:5.2f}" for c in COMPARTMENTS)
            lines.append(
                f"{r['rank']:>2} {r['player']:<{width}} {r['mean']:+8.3f} ± {r['ci95']:6.3f} "
                f"{100 * r['go_out_rate']:6.1f}% {comps} {r['settlement']:+7.2f} {r['dressing']:+6.2f} "
                f"{r['ms_per_decision']:7.3f}"
            )
        lines += ["", "head to head: row minus column, counters per deal (* = 95% CI excludes 0)"]
        order = [r["player"] for r in rows]
        h2h = self.head_to_head()
        cell = max(14, width)
        lines.append(" " * (width + 1) + "".join(f"{b:>{cell}}" for b in order))
        for a in order:
            cells = []
            for b in order:
                if a == b:
                    cells.append(f"{'—':>{cell}}")
                    continue
                h = h2h[a][b]
                mark = "*" if abs(h["mean"]) > h["ci95"] else " "
                cells.append(f"{h['mean']:+.2f}±{h['ci95']:.2f}{mark}".rjust(cell))
            lines.append(f"{a:<{width}} " + "".join(cells))
        lines.append("")
        lines.append(f"{self.games} games in {self.wall_seconds:.1f} s ({self.deals_per_second:.1f} duplicate deals/s)")
        return "\n".join(lines)

    def _title(self) -> str:
        return (f"Duplicate tournament: {self.deals} deals × rotations, {self.seats} seats, "
                f"rules {self.rules.get('preset', 'custom')}, seed {self.seed}, lineups {self.lineups}")

    def to_markdown(self) -> str:
        """The same tables in Markdown (for the README and result files)."""
        rows = self.stats()
        out = [f"**{self._title()}**", ""]
        out.append("| rank | player | counters/deal | 95% CI | go-out rate | ms/decision |")
        out.append("|---:|---|---:|---:|---:|---:|")
        for r in rows:
            out.append(
                f"| {r['rank']} | {r['player']} | {r['mean']:+.3f} | ±{r['ci95']:.3f} "
                f"| {100 * r['go_out_rate']:.1f}% | {r['ms_per_decision']:.3f} |"
            )
        out += ["", "Counters per deal by source (compartments won, settlement when someone goes out, dressing paid):", ""]
        out.append("| player | " + " | ".join(COMPARTMENTS) + " | settlement | dressing | net |")
        out.append("|---|" + "---:|" * (len(COMPARTMENTS) + 3))
        for r in rows:
            comps = " | ".join(f"{r['compartments'][c]:.2f}" for c in COMPARTMENTS)
            out.append(f"| {r['player']} | {comps} | {r['settlement']:+.2f} | {r['dressing']:+.2f} | {r['mean']:+.2f} |")
        order = [r["player"] for r in rows]
        h2h = self.head_to_head()
        out += ["", "Head to head (row minus column, counters per deal, 95% CI; **bold** = significant):", ""]
        out.append("| | " + " | ".join(order) + " |")
        out.append("|---|" + "---:|" * len(order))
        for a in order:
            cells = []
            for b in order:
                if a == b:
                    cells.append("—")
                    continue
                h = h2h[a][b]
                text = f"{h['mean']:+.2f} ± {h['ci95']:.2f}"
                cells.append(f"**{text}**" if abs(h["mean"]) > h["ci95"] else text)
            out.append(f"| {a} | " + " | ".join(cells) + " |")
        out += ["", f"{self.games} games, {self.wall_seconds:.0f} s wall time "
                f"({self.deals_per_second:.2f} duplicate deals/s)."]
        return "\n".join(out) + "\n"

    def write_chart(self, path: str) -> None:
        """A PNG chart: mean counters per deal with 95% intervals, and where the counters come from."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = self.stats()[::-1]
        names = [r["player"] for r in rows]
        y = np.arange(len(rows))
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 1.6 + 0.55 * len(rows)), sharey=True)
        ax1.barh(y, [r["mean"] for r in rows], xerr=[r["ci95"] for r in rows], color="#4c72b0", capsize=4)
        ax1.axvline(0, color="black", linewidth=0.8)
        ax1.set_yticks(y, names)
        ax1.set_xlabel("counters per deal (95% CI over deals)")
        ax1.set_title("Duplicate tournament")
        sources = [*COMPARTMENTS, "settlement", "dressing"]
        colours = plt.get_cmap("tab10").colors
        pos, neg = np.zeros(len(rows)), np.zeros(len(rows))
        for k, src in enumerate(sources):
            vals = np.array([r["compartments"][src] if src in COMPARTMENTS else r[src] for r in rows])
            left = np.where(vals >= 0, pos, neg)
            ax2.barh(y, vals, left=left, color=colours[k % len(colours)], label=src)
            pos += np.where(vals >= 0, vals, 0)
            neg += np.where(vals < 0, vals, 0)
        ax2.axvline(0, color="black", linewidth=0.8)
        ax2.set_xlabel("counters per deal by source")
        ax2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.suptitle(self._title(), fontsize=9)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    def save(self, prefix: str, chart: bool = True) -> list[str]:
        """Write ``prefix.json``, ``prefix.md`` and (with ``chart``) ``prefix.png``; returns the paths."""
        import os

        os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
        paths = [prefix + ".json", prefix + ".md"]
        with open(paths[0], "w") as f:
            f.write(self.to_json() + "\n")
        with open(paths[1], "w") as f:
            f.write(self.to_markdown())
        if chart:
            paths.append(prefix + ".png")
            self.write_chart(paths[2])
        return paths


def _clean(x: Any) -> Any:
    """NaN -> None, numpy scalars -> Python, recursively (JSON has no NaN)."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (float, np.floating)):
        return None if math.isnan(x) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    return x
