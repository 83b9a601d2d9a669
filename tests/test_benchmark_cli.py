"""``training/benchmark.py`` as users run it: files written, numbers reproducible, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "training" / "benchmark.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def _numbers(path: Path) -> dict:
    data = json.loads(path.read_text())
    data.pop("timing")
    for row in data["stats"]:
        row.pop("ms_per_decision")
    return data


@pytest.mark.slow
def test_benchmark_writes_its_files_and_is_reproducible_with_a_seed(tmp_path) -> None:
    players = ["--players", "random,lowest,stops_first,pool_hunter,pimc:samples=2", "--deals", "8"]
    common = [*players, "--seed", "5", "--preset", "modern", "--seats", "4", "--no-progress"]
    first = _run(*common, "--out", str(tmp_path / "a" / "ladder"))
    assert first.returncode == 0, first.stderr
    for ext in ("json", "md", "png"):
        assert (tmp_path / "a" / f"ladder.{ext}").stat().st_size > 0
    assert "head to head" in first.stdout and "pimc:samples=2" in first.stdout
    second = _run(*common, "--out", str(tmp_path / "b" / "ladder"), "--no-chart")
    assert second.returncode == 0, second.stderr
    assert not (tmp_path / "b" / "ladder.png").exists()
    a, b = _numbers(tmp_path / "a" / "ladder.json"), _numbers(tmp_path / "b" / "ladder.json")
    assert a == b
    assert a["deals"] == 8 and a["seed"] == 5 and len(a["players"]) == 5
    third = _run(*players, "--seed", "6", "--no-progress", "--no-chart", "--out", str(tmp_path / "c" / "ladder"))
    assert _numbers(tmp_path / "c" / "ladder.json")["per_deal_net"] != a["per_deal_net"], third.stderr


def test_benchmark_options_and_errors(tmp_path) -> None:
    out = _run("--players", "random,lowest", "--deals", "3", "--seats", "3", "--preset", "victorian",
               "--rules-option", "ace_high=true", "--no-progress", "--no-chart", "--out", str(tmp_path / "x"))
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "x.json").read_text())
    assert data["rules"]["ace_high"] is True and data["rules"]["lead"] == "any" and data["lineups"] == "field"
    bad = _run("--players", "random,nobody", "--deals", "3", "--out", str(tmp_path / "y"))
    assert bad.returncode == 2 and "unknown player 'nobody'" in bad.stderr and "stops_first" in bad.stderr
    assert not (tmp_path / "y.json").exists()
    bad = _run("--players", "random,lowest", "--rules-option", "lead=sideways", "--out", str(tmp_path / "y"))
    assert bad.returncode == 2 and "lead" in bad.stderr
    bad = _run("--players", "random,models/none.zip", "--out", str(tmp_path / "y"))
    assert bad.returncode == 2 and "no saved model" in bad.stderr
