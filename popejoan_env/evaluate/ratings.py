"""One rating per player from the same games: least squares on pairwise duplicate margins, with bootstrap intervals.

**Why this model.** Pope Joan at 3-8 seats is general-sum (counters left on the board belong to nobody)
and scored in counters, not in places: a finishing order (TrueSkill) keeps only who went out first and
drops what each player took; Elo and Bradley-Terry on wins keep only the sign of a margin; alpha-rank
ranks strategies by the mass of a stationary distribution, which says who survives in the meta-game but
gives no scale to compare across tables.  Here every pair ``(i, j)`` is measured directly, in duplicate
with field lineups (``i`` alone against ``j``'s field and the reverse, on the same deals and seats): its
mean margin ``M[i, j]`` in counters per deal.  The rating ``r`` is the least-squares fit of
``M[i, j] ~ r_i - r_j`` over all pairs with ``sum(r) = 0``; with every pair played on the same deals it is
simply ``r_i = mean_j M[i, j]`` (``M[i, i] = 0``): a player's mean duplicate margin against the rated field,
in counters per deal, so ``r_i - r_j`` predicts the margin of a pair.  The **residual** (the root mean
square of ``M[i, j] - (r_i - r_j)``) says how far the table is from transitive.  Intervals are percentile
bootstraps over deals (the same resampled deals for every pair, so their correlation is kept).
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

from popejoan_env.checks import import_extra
from popejoan_env.errors import PopeJoanError

BOOTSTRAP = 1000
"""Bootstrap resamples of the deals."""
METHOD = "least squares on pairwise duplicate margins (r_i = mean margin against the rated field), bootstrap over deals"
"""How the report names the ratings."""
TITLE_WIDTH = 70
"""Characters a line of the chart's title may hold (a longer title wraps; one line ran past the figure's edge)."""


def pairs_of(players: Sequence[str], oriented: Sequence[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """Every unordered pair of ``players`` once: as in ``oriented`` when it is there, else in the order given."""
    out = []
    for a, b in itertools.combinations(players, 2):
        out.append((b, a) if (b, a) in oriented else (a, b))
    return out


def fit(margins: np.ndarray) -> np.ndarray:
    """Ratings from an antisymmetric matrix of mean margins ``[e, e]`` (zero diagonal): each row's mean."""
    return margins.sum(axis=1) / margins.shape[0]


def rate(players: Sequence[str], per_deal: dict[tuple[str, str], np.ndarray], *, boot: int = BOOTSTRAP,
         seed: int = 0) -> dict[str, Any]:
    """Ratings, 95% bootstrap intervals and the residual from per-deal margins of every pair ``(a, b)``."""
    e = len(players)
    index = {p: i for i, p in enumerate(players)}
    lengths = {len(m) for m in per_deal.values()}
    if len(lengths) != 1:
        raise PopeJoanError(f"every pair must be measured on the same deals, got lengths {sorted(lengths)}")
    deals = lengths.pop()
    cube = np.zeros((e, e, deals))
    for (a, b), m in per_deal.items():
        cube[index[a], index[b]] = m
        cube[index[b], index[a]] = -np.asarray(m)
    missing = [(a, b) for a, b in itertools.combinations(players, 2)
               if (a, b) not in per_deal and (b, a) not in per_deal]
    if missing:
        raise PopeJoanError(f"ratings need every pair measured; missing {missing}")
    mean = cube.mean(axis=2)
    r = fit(mean)
    rng = np.random.default_rng(seed)
    draws = np.array([fit(cube[:, :, rng.integers(0, deals, deals)].mean(axis=2)) for _ in range(boot)])
    low, high = np.percentile(draws, [2.5, 97.5], axis=0)
    off = ~np.eye(e, dtype=bool)
    residual = float(np.sqrt(np.mean((mean - (r[:, None] - r[None, :]))[off] ** 2)))
    rows = sorted(({"player": p, "rating": float(r[i]), "low": float(low[i]), "high": float(high[i])}
                   for i, p in enumerate(players)), key=lambda row: -row["rating"])
    return {"deals": deals, "rows": rows, "residual": residual}


def write_chart(tables: dict[int, dict[str, Any]], title: str, path: str) -> None:
    """A PNG (written atomically): each player's rating with its 95% interval, one marker per table size."""
    matplotlib = import_extra("matplotlib", "train", f"the chart {path}")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from popejoan_env.files import save_png

    first = tables[min(tables)]
    order = [row["player"] for row in first["rows"]][::-1]
    fig, ax = plt.subplots(figsize=(8, 1.5 + 0.45 * len(order)))
    width = 0.8 / max(1, len(tables))
    for k, (seats, table) in enumerate(sorted(tables.items())):
        by = {row["player"]: row for row in table["rows"]}
        y = np.arange(len(order)) + (k - (len(tables) - 1) / 2) * width
        ratings = np.array([by[p]["rating"] for p in order])
        err = np.array([[by[p]["rating"] - by[p]["low"] for p in order],
                        [by[p]["high"] - by[p]["rating"] for p in order]])
        ax.errorbar(ratings, y, xerr=err, fmt="o", capsize=3, label=f"{seats} seats ({table['deals']} deals)")
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(np.arange(len(order)), order)
    # Two lines each: one line of either ran past the figure's right edge (the labels on the left narrow the axes).
    ax.set_xlabel("rating: mean duplicate margin against the rated field\n(counters per deal, 95% bootstrap CI)")
    ax.set_title(textwrap.fill(title, TITLE_WIDTH, break_on_hyphens=False), fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_png(fig, path)
