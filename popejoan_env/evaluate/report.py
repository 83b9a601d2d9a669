"""The report of an evaluation (format ``popejoan-evaluation/1``): text, JSON and Markdown, from one dict.

Per opponent: the **margin** (counters per deal: the agent alone against the opponent's field minus the
opponent alone against the agent's field, on the same deals in every rotation) with its 95% Student-t
interval over deals; the **deal win rate** (DouZero's WP analogue: the share of deals whose margin is
positive, a tie counting half); the mean counters each side took alone (ADP's analogue); each side's
go-out rate alone (the share of its games in which it went out first and took the game); milliseconds
per decision.  The **panel margin** is the mean of the margins over the opponents played, deal by deal,
with its interval.  The report names the command, the deal set and its SHA-256, the panel, the versions
of the package, Python, numpy and torch.
"""

from __future__ import annotations

import json
import os
import platform
from typing import Any

import numpy as np

from popejoan_env.evaluate import panel
from popejoan_env.evaluate.runner import Settings, State
from popejoan_env.files import held_versions, write_atomic
from popejoan_env.tournament import mean_ci
from popejoan_env.tournament.result import json_safe

FORMAT = "popejoan-evaluation/1"
"""The report's format and version (a new field is a new version)."""


def versions(kept: dict[str, Any] | None = None) -> dict[str, str | None]:
    """The versions that can change a result: the package, Python, numpy, and torch when it was used (else None),
    here or by the blocks of a resumed state (``kept``: ``files.held_versions``)."""
    held = held_versions(kept)  # torch is imported by the players that need it; a scripted evaluation has none
    return {"popejoan": held["popejoan"], "python": platform.python_version(), "numpy": held["numpy"],
            "torch": held["torch"]}


def deal_win(margin: np.ndarray) -> np.ndarray:
    """Per deal, 1 when the margin is positive, 0.5 for a tie, 0 when negative (the deal win rate's terms)."""
    return np.where(margin > 0, 1.0, np.where(margin == 0, 0.5, 0.0))


def _ci(x: np.ndarray) -> dict[str, float]:
    mean, half = mean_ci(x)
    return {"mean": mean, "ci95": half}


def opponent_row(name: str, series: dict[str, np.ndarray], timing: dict[str, float]) -> dict[str, Any]:
    """The report's figures against one opponent."""
    ms = {side: 1000 * timing[f"{side}_seconds"] / timing[f"{side}_decisions"] if timing[f"{side}_decisions"]
          else 0.0 for side in ("agent", "opponent")}
    return {
        "opponent": name,
        "deals": int(len(series["margin"])),
        "margin": _ci(series["margin"]),
        "deal_win_rate": _ci(deal_win(series["margin"])),
        "agent_counters": _ci(series["agent_net"]),
        "opponent_counters": _ci(series["opponent_net"]),
        "agent_go_out_rate": float(series["agent_out"].mean()),
        "opponent_go_out_rate": float(series["opponent_out"].mean()),
        "agent_ms_per_decision": ms["agent"],
        "opponent_ms_per_decision": ms["opponent"],
        "wall_seconds": timing["wall_seconds"],
    }


def build(settings: Settings, state: State, command: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report as one JSON-friendly dict (NaN as None); ``extra`` adds sections (variance reduction ...)."""
    from popejoan_env.evaluate import dealset

    rows, margins = [], []
    for name in settings.opponents:
        series = state.series(name)
        rows.append(opponent_row(name, series, state.timing(name)))
        margins.append(series["margin"])
    report: dict[str, Any] = {
        "format": FORMAT,
        "command": command,
        "agent": settings.agent,
        "agent_sha256": settings.agent_sha256,
        "preset": settings.preset,
        "seats": settings.seats,
        "deals": settings.deals,
        "deal_set": {"version": dealset.VERSION, "sha256": dealset.SHA256, "first_deals": settings.deals},
        "panel": {"version": settings.panel, "shipped_sha256": panel.SHIPPED_SHA256,
                  "opponents": list(settings.opponents)},
        "versions": versions(state.kept),
        "panel_margin": _ci(np.mean(margins, axis=0)),
        "opponents": rows,
        "per_deal_margin": {name: m.tolist() for name, m in zip(settings.opponents, margins)},
    }
    report.update(extra or {})
    return json_safe(report)


def _pm(cell: dict[str, Any], digits: int = 2, sign: bool = True) -> str:
    mean, half = cell["mean"], cell["ci95"]
    if mean is None:
        return "n/a"
    text = f"{mean:+.{digits}f}" if sign else f"{mean:.{digits}f}"
    return text + ("" if half is None else f" ± {half:.{digits}f}")


def _head(report: dict[str, Any]) -> list[str]:
    ds, v = report["deal_set"], report["versions"]
    return [
        f"agent {report['agent']}" + (f" (sha256 {report['agent_sha256'][:16]}...)" if report["agent_sha256"] else ""),
        f"{report['seats']} seats, rules {report['preset']}, the first {report['deals']:,} deals of {ds['version']} "
        f"(sha256 {ds['sha256']}), {report['panel']['version']} (shipped: sha256 "
        f"{report['panel']['shipped_sha256'][:16]}...)",
        f"command: {report['command']}",
        f"versions: popejoan {v['popejoan']}, Python {v['python']}, numpy {v['numpy']}, "
        + (f"torch {v['torch']}" if v["torch"] else "torch not used"),
    ]


_COLUMNS = ("opponent", "margin/deal (95% CI)", "deal win rate", "agent alone", "opponent alone", "agent out",
            "opp. out", "agent ms/dec")


def _cells(row: dict[str, Any]) -> list[str]:
    return [row["opponent"], _pm(row["margin"]), _pm(row["deal_win_rate"], 3, sign=False), _pm(row["agent_counters"]),
            _pm(row["opponent_counters"]), f"{100 * row['agent_go_out_rate']:.1f}%",
            f"{100 * row['opponent_go_out_rate']:.1f}%", f"{row['agent_ms_per_decision']:.2f}"]


def text(report: dict[str, Any]) -> str:
    """The report as plain terminal text."""
    rows = [list(_COLUMNS)] + [_cells(r) for r in report["opponents"]]
    widths = [max(len(r[k]) for r in rows) for k in range(len(_COLUMNS))]
    lines = [f"Evaluation ({report['format']})", *_head(report), ""]
    for i, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines += ["", f"panel margin (mean over these opponents, counters per deal): {_pm(report['panel_margin'])}"]
    lines += _sections_text(report)
    return "\n".join(lines) + "\n"


def _sections_text(report: dict[str, Any]) -> list[str]:
    out = []
    vr = report.get("variance_reduction")
    if vr:
        out.append("")
        out.append(f"with the control variate ({vr['method']}):")
        for r in vr["opponents"]:
            narrower = f"{r['narrowing']:.2f}x narrower" if r["narrowing"] is not None else "no spread"
            out.append(f"  {r['opponent']}: {_pm(r['margin'])} (plain ± {r['plain_ci95']:.2f}, {narrower})")
        out.append(f"  panel margin: {_pm(vr['panel_margin'])} (plain ± {vr['panel_plain_ci95']:.2f})")
    rated = report.get("ratings")
    if rated:
        out += ["", f"ratings ({rated['method']}):"]
        for seats, table in rated["tables"].items():
            out.append(f"  {seats} seats, {table['deals']} deals (residual {table['residual']:.2f} counters/deal):")
            for row in table["rows"]:
                out.append(f"    {row['player']:<24} {row['rating']:+6.2f}  [{row['low']:+.2f}, {row['high']:+.2f}]")
    return out


def markdown(report: dict[str, Any]) -> str:
    """The report in Markdown (for a paper's appendix, or the docs)."""
    out = [f"**Evaluation** (`{report['format']}`)", ""] + [f"* {line}" for line in _head(report)] + [""]
    out.append("| " + " | ".join(_COLUMNS) + " |")
    out.append("|---|" + "---:|" * (len(_COLUMNS) - 1))
    for r in report["opponents"]:
        out.append("| " + " | ".join(_cells(r)) + " |")
    out += ["", f"Panel margin (mean over these opponents, counters per deal, 95% CI): "
            f"**{_pm(report['panel_margin'])}**"]
    extra = _sections_text(report)
    if extra:
        out += ["", "```", *extra[1:], "```"]
    return "\n".join(out) + "\n"


def paths(prefix: str) -> dict[str, str]:
    """The files of a report: ``PREFIX.json``, ``.md``, ``.txt`` and the state file ``PREFIX.state.json``."""
    return {"json": prefix + ".json", "md": prefix + ".md", "txt": prefix + ".txt", "state": prefix + ".state.json"}


def save(report: dict[str, Any], prefix: str) -> list[str]:
    """Write the report's JSON, Markdown and text atomically; returns the paths."""
    where = paths(prefix)
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    write_atomic(where["json"], json.dumps(report, indent=1) + "\n")
    write_atomic(where["md"], markdown(report))
    write_atomic(where["txt"], text(report))
    return [where["json"], where["md"], where["txt"]]
