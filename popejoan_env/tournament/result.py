"""A finished tournament: its per-deal scores, the statistics derived from them, and its JSON form."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import numpy as np

from popejoan_env.rules import COMPARTMENTS
from popejoan_env.tournament import reports
from popejoan_env.tournament.scores import DRESSING, NET, SETTLEMENT, WENT_OUT
from popejoan_env.tournament.stats import ratio_ci


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
    weight: np.ndarray | None = None
    """[entrant, deal]: the groups the entrant was scored in on that deal (None: one per deal it played).  With
    ``max_groups`` below the number of groups a deal plays a window of them, and an entrant's mean is over its
    (deal, group) scores, each group alike, with the deal as the unit of its interval (``ratio_ci``): a mean of the
    per-deal means would weigh a group more on a deal where the entrant has fewer groups."""
    pair_weight: np.ndarray | None = None
    """[a, b, deal]: the groups where both were scored on that deal (None: one per deal they met)."""

    def _weights(self, w: np.ndarray | None, x: np.ndarray) -> np.ndarray:
        """The weights of ``x`` over deals: ``w``, or one for each deal with a value when none were kept."""
        return (~np.isnan(x)).astype(np.float64) if w is None else w

    def stats(self) -> list[dict[str, Any]]:
        """One row per entrant, best mean counters per deal first."""
        rows = []
        for i, name in enumerate(self.players):
            net = self.per_deal[i, :, NET]
            w = self._weights(None if self.weight is None else self.weight[i], net)
            mean, half = ratio_ci(net, w)

            def avg(k: int) -> float:
                return ratio_ci(self.per_deal[i, :, k], w)[0]

            played = ~np.isnan(net)
            row: dict[str, Any] = {
                "player": name,
                "mean": mean,
                "ci95": half,
                "low": mean - half,
                "high": mean + half,
                "deals": int(played.sum()),
                "go_out_rate": avg(WENT_OUT),
                "compartments": {
                    c: avg(1 + k) for k, c in enumerate(COMPARTMENTS)
                },
                "settlement": avg(SETTLEMENT),
                "dressing": avg(DRESSING),
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
                x = self.pair[i, j]
                met = None if self.pair_weight is None else self.pair_weight[i, j]
                mean, half = ratio_ci(x, self._weights(met, x))
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
            if self.weight is not None:  # the weights of the means and intervals above (ratio_ci): without them a
                # windowed tournament's figures cannot be had again from its per-deal scores
                out["per_deal_groups"] = {
                    name: self.weight[i].astype(int).tolist() for i, name in enumerate(self.players)
                }
        return json_safe(out)

    def to_json(self, per_deal: bool = True) -> str:
        """The result as a JSON document (see ``to_dict``)."""
        return json.dumps(self.to_dict(per_deal), indent=1)

    # The report formats live in ``reports``; these keep the result's own spelling of them.
    def table(self) -> str:
        """The ranking, the counters by source, and the head-to-head matrix as plain terminal text."""
        return reports.text_table(self)

    def to_markdown(self) -> str:
        """The same tables in Markdown (for the docs and result files)."""
        return reports.markdown(self)

    def write_chart(self, path: str) -> None:
        """A PNG chart: mean counters per deal with 95% intervals, and where the counters come from."""
        reports.write_chart(self, path)

    def save(self, prefix: str, chart: bool = True) -> list[str]:
        """Write ``prefix.json``, ``prefix.md`` and (with ``chart``) ``prefix.png`` (``reports.save``); the paths."""
        return reports.save(self, prefix, chart)


def json_safe(x: Any) -> Any:
    """NaN -> None, numpy scalars -> Python, recursively (JSON has no NaN)."""
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, (float, np.floating)):
        return None if math.isnan(x) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    return x
