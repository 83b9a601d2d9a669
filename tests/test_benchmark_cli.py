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
    again = _run(*common, "--out", str(tmp_path / "a" / "ladder"), "--no-chart")  # before: a's chart stayed
    assert again.returncode == 0 and not (tmp_path / "a" / "ladder.png").exists(), again.stderr
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


# ---------------------------------------------------------------- nothing gets past the edges
def _refused(tmp_path: Path, *args: str, says: str) -> str:
    """Run with ``args`` and an output prefix under ``tmp_path``: exit 2, one line on stderr, nothing written."""
    done = _run("--players", "random,lowest", "--no-progress", "--out", str(tmp_path / "out" / "ladder"), *args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert says in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "out").exists(), "nothing is written before the flags are checked"
    return done.stderr


@pytest.mark.parametrize("how", ["script", "command"])
def test_a_reader_that_goes_away_stops_it_quietly_as_the_other_commands(tmp_path, how: str) -> None:
    # was: a BrokenPipeError traceback from print (`popejoan benchmark ... | head -1`); train-cleanrl died the same
    # way before saving its model, where `popejoan simulate --out - | head` stops quietly with status 1
    first = [str(SCRIPT)] if how == "script" else ["-m", "popejoan_env", "benchmark"]
    args = ["--players", "random,lowest", "--deals", "4", "--no-progress", "--no-chart", "--out", str(tmp_path / "b")]
    proc = subprocess.Popen([sys.executable, *first, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 1
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_negative_seed_is_one_line_exit_2(tmp_path) -> None:
    _refused(tmp_path, "--seed", "-1", says="argument --seed: invalid value: '-1' (an integer 0..2,147,483,647")


def test_huge_deal_count_is_refused_and_the_cap_is_named(tmp_path) -> None:
    _refused(tmp_path, "--deals", "100000000000", says="(an integer 2..10,000,000 is needed)")


def test_one_deal_is_refused(tmp_path) -> None:
    _refused(tmp_path, "--deals", "1", says="argument --deals: invalid value: '1' (an integer 2..")


def test_max_groups_zero_is_refused(tmp_path) -> None:
    _refused(tmp_path, "--max-groups", "0", says="argument --max-groups: invalid value: '0' (an integer 1..100,000")


def test_zero_workers_is_refused(tmp_path) -> None:
    _refused(tmp_path, "--workers", "0", says="workers")


def test_nine_seats_are_refused(tmp_path) -> None:
    _refused(tmp_path, "--seats", "9", says="argument --seats: invalid value: '9' (an integer 3..8")


def test_a_single_player_is_refused(tmp_path) -> None:
    done = _run("--players", "random", "--no-progress", "--out", str(tmp_path / "out" / "ladder"))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "at least 2 entrants" in done.stderr
    assert not (tmp_path / "out").exists()


def test_argparse_errors_are_one_line_too(tmp_path) -> None:
    _refused(tmp_path, "--deals", "many", says="invalid int value")
    _refused(tmp_path, "--lineups", "league", says="invalid choice")


def test_deeply_nested_rules_option_is_one_line(tmp_path) -> None:
    _refused(tmp_path, "--rules-option", "dressing=" + "[" * 5000 + "]" * 5000, says="--rules-option dressing")


def test_huge_rules_option_is_one_line(tmp_path) -> None:
    _refused(tmp_path, "--rules-option", "dressing=" + "[" * 100_000, says="at most 10,000")


def test_huge_integer_rules_option_is_one_line(tmp_path) -> None:
    _refused(tmp_path, "--rules-option", "start_counters=1" + "0" * 5000, says="start_counters")
    _refused(tmp_path, "--rules-option", "start_counters=1" + "0" * 4000, says="start_counters")


def test_rules_option_without_a_key_is_one_line(tmp_path) -> None:
    _refused(tmp_path, "--rules-option", "ace_high", says="KEY=VALUE")
    _refused(tmp_path, "--rules-option", "=true", says="KEY=VALUE")


def test_unwritable_out_is_refused_before_the_run(tmp_path) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory")
    for out in ("/proc/version", str(a_file / "sub" / "ladder")):
        done = _run("--players", "random,lowest", "--deals", "3", "--no-progress", "--out", out)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.splitlines()) == 1 and "cannot write" in done.stderr
        assert done.stdout == "", "refused before the tournament: no table printed"
    assert a_file.read_text() == "not a directory"


def test_a_directory_in_the_way_of_an_output_is_refused(tmp_path) -> None:
    (tmp_path / "ladder.json").mkdir()
    done = _run("--players", "random,lowest", "--deals", "3", "--no-progress", "--out", str(tmp_path / "ladder"))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "is a directory" in done.stderr
    assert done.stdout == ""


def test_a_new_output_directory_is_created_and_no_temporary_files_are_left(tmp_path) -> None:
    out = tmp_path / "new" / "deeper" / "ladder"
    done = _run("--players", "random,lowest", "--deals", "3", "--no-progress", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == ["ladder.json", "ladder.md", "ladder.png"]
