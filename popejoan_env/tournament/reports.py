"""The reports of a finished tournament: a terminal table, Markdown, a PNG chart, and the files they go to.

Every function takes a finished tournament (``Figures``: what a ``TournamentResult`` offers the
reports, so this module needs nothing of ``result`` and ``result`` can offer the reports as methods);
``save`` writes ``PREFIX.json``,
``PREFIX.md`` and ``PREFIX.png`` atomically (``popejoan_env.files``), and
``check_output`` refuses a prefix that cannot be written before a run starts.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

import numpy as np

from popejoan_env.checks import import_extra
from popejoan_env.files import check_prefix, check_writable, remove_stale, save_png, write_atomic
from popejoan_env.rules import COMPARTMENTS

CHART_HINT = " (or --no-chart: no chart)"
"""What the refusal of a chart without matplotlib adds: the flag that does without it."""


class Figures(Protocol):
    """What the reports read of a finished tournament (``result.TournamentResult`` has it all)."""

    deals: int
    seats: int
    rules: dict[str, Any]
    seed: int
    lineups: str
    games: int
    wall_seconds: float

    @property
    def deals_per_second(self) -> float:
        """Duplicate deals played per second of wall time."""

    def stats(self) -> list[dict[str, Any]]:
        """One row per entrant, best mean counters per deal first."""

    def head_to_head(self) -> dict[str, dict[str, dict[str, float]]]:
        """Mean and 95% interval of each pair's difference."""

    def to_json(self, per_deal: bool = True) -> str:
        """The result as JSON."""

_SHORT = ["pope", "matr", "intr", "ace", "king", "queen", "jack", "game"]
"""Column heads of the compartments in the terminal table (order of ``COMPARTMENTS``)."""


def title(result: Figures) -> str:
    """One line naming the tournament: deals, seats, rules, seed and lineups."""
    return (f"Duplicate tournament: {result.deals} deals × rotations, {result.seats} seats, "
            f"rules {result.rules.get('preset', 'custom')}, seed {result.seed}, lineups {result.lineups}")


def text_table(result: Figures) -> str:
    """The ranking, the counters by source, and the head-to-head matrix as plain terminal text."""
    rows = result.stats()
    width = max(6, *(len(r["player"]) for r in rows))
    head = (f"{'#':>2} {'player':<{width}} {'counters/deal':>17} {'go out':>7} "
            + " ".join(f"{s:>5}" for s in _SHORT) + f" {'settle':>7} {'dress':>6} {'ms/dec':>7}")
    lines = [title(result), "", head, "-" * len(head)]
    for r in rows:
        comps = " ".join(f"{r['compartments'][c]:5.2f}" for c in COMPARTMENTS)
        lines.append(
            f"{r['rank']:>2} {r['player']:<{width}} {r['mean']:+8.3f} ± {r['ci95']:6.3f} "
            f"{100 * r['go_out_rate']:6.1f}% {comps} {r['settlement']:+7.2f} {r['dressing']:+6.2f} "
            f"{r['ms_per_decision']:7.3f}"
        )
    lines += ["", "head to head: row minus column, counters per deal (* = 95% CI excludes 0)"]
    order = [r["player"] for r in rows]
    h2h = result.head_to_head()
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
    lines.append(f"{result.games} games in {result.wall_seconds:.1f} s ({result.deals_per_second:.1f} duplicate deals/s)")
    return "\n".join(lines)


def markdown(result: Figures) -> str:
    """The same tables in Markdown (for the docs and result files)."""
    rows = result.stats()
    out = [f"**{title(result)}**", ""]
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
    h2h = result.head_to_head()
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
    out += ["", f"{result.games} games, {result.wall_seconds:.0f} s wall time "
            f"({result.deals_per_second:.2f} duplicate deals/s)."]
    return "\n".join(out) + "\n"


def write_chart(result: Figures, path: str) -> None:
    """A PNG chart at ``path`` (written atomically): mean counters per deal with 95% intervals, and their sources."""
    matplotlib = import_extra("matplotlib", "train", f"the chart {path}", CHART_HINT)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result.stats()[::-1]
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
    fig.suptitle(title(result), fontsize=9)
    fig.tight_layout()
    save_png(fig, path)


def output_paths(prefix: str, chart: bool = True) -> list[str]:
    """The files ``save`` writes for ``prefix``: ``.json``, ``.md`` and, with ``chart``, ``.png``."""
    return [prefix + ".json", prefix + ".md"] + ([prefix + ".png"] if chart else [])


def check_output(prefix: str, chart: bool = True) -> None:
    """Create the directory of ``prefix`` and make sure ``save`` can write there; OutputPathError if not."""
    check_prefix(prefix)
    if chart:  # refused before the tournament, not after it
        import_extra("matplotlib", "train", f"the chart {prefix}.png", CHART_HINT)
    check_writable(output_paths(prefix, chart))


def save(result: Figures, prefix: str, chart: bool = True) -> list[str]:
    """Write ``prefix.json``, ``prefix.md`` and (with ``chart``) ``prefix.png`` atomically, else remove an earlier
    ``prefix.png``; returns the paths written."""
    paths = output_paths(prefix, chart)
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    if not chart:  # an earlier tournament's chart must not stand beside these figures
        remove_stale(prefix + ".png")
    write_atomic(paths[0], result.to_json() + "\n")
    write_atomic(paths[1], markdown(result))
    if chart:
        write_chart(result, paths[2])
    return paths
