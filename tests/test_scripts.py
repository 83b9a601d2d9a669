"""Every script of ``benchmarks/`` and ``training/`` imports: a module moved inside the package is caught here, not by
the first reader who runs the script (``bench_pimc.py`` still imported ``players.search`` after 0.3.0 moved it)."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*ROOT.glob("benchmarks/*.py"), *ROOT.glob("training/*.py")])


def test_there_are_scripts_to_check() -> None:
    assert len(SCRIPTS) >= 15


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_script_imports(path: pathlib.Path) -> None:
    spec = importlib.util.spec_from_file_location(f"script_{path.parent.name}_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # each runs its work only under __main__
    assert callable(getattr(module, "main", None)) or "run_command" in vars(module)


# ------------------------------------------------------------------ bench_engine, bench_env, bench_pimc: their flags
BENCH_OUT = {"bench_engine": "--out", "bench_env": "--out", "bench_pimc": "--json"}
"""The flag naming each benchmark's JSON file."""
BENCH_TINY = {
    "bench_engine": ["--seconds", "0.05", "--players", "3", "--presets", "modern", "--no-hearts", "--batch-sizes", "1"],
    "bench_env": ["--seconds", "0.05", "--rounds", "1", "--quick"],
    "bench_pimc": ["--configs", "modern:3", "--pairs", "pimc", "--deals", "2", "--rounds", "1"],
}
"""A run of each of a second or so (the bad flags below come after these, and win)."""
BENCH_BAD = [
    ("bench_engine", ["--players", "9"], "an integer 3..8"),
    ("bench_engine", ["--players", "4", "4"], "given more than once"),
    ("bench_engine", ["--presets", "fancy"], "invalid choice"),
    ("bench_engine", ["--seconds", "nan"], "finite"),
    ("bench_engine", ["--seconds", "-1"], "(0, 3600]"),
    ("bench_engine", ["--batch-sizes", "0"], "--batch-sizes"),
    ("bench_engine", ["--seed", "-1"], "--seed"),
    ("bench_env", ["--seconds", "inf"], "finite"),
    ("bench_env", ["--seconds", "0"], "(0, 3600]"),
    ("bench_env", ["--rounds", "0"], "--rounds"),
    ("bench_pimc", ["--configs", "modern"], "PRESET:SEATS"),
    ("bench_pimc", ["--configs", "modern:9"], "an integer 3..8"),
    ("bench_pimc", ["--configs", "fancy:4"], "PRESET:SEATS"),
    ("bench_pimc", ["--pairs", "pimcc"], "choose from"),
    ("bench_pimc", ["--deals", "-3"], "--deals"),
    ("bench_pimc", ["--choices", "2", "--control", "nobody"], "unknown player 'nobody'"),
]


def _bench(script: str, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``benchmarks/<script>.py`` with ``args`` in this interpreter, from the repository's root."""
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{script}.py"), *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=timeout)


@pytest.mark.parametrize(("script", "bad", "says"), BENCH_BAD, ids=lambda x: " ".join(x) if isinstance(x, list) else x)
def test_a_bad_benchmark_flag_is_one_line_exit_2_and_no_file(script: str, bad: list[str], says: str,
                                                              tmp_path: pathlib.Path) -> None:
    # were plain int/float flags: --players 9 a traceback, --seconds nan a run that never ended, -3 deals accepted
    out = tmp_path / "out" / "results.json"
    done = _bench(script, [*BENCH_TINY[script], *bad, BENCH_OUT[script], str(out)], timeout=30)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and says in done.stderr, done.stderr
    assert done.stderr.startswith(f"{script}.py: error: ") and not list(tmp_path.iterdir())


@pytest.mark.parametrize("script", sorted(BENCH_OUT))
def test_a_benchmark_output_that_cannot_be_written_is_refused_before_the_measuring(script: str,
                                                                                    tmp_path: pathlib.Path) -> None:
    # was a traceback at the end of the run (Path.write_text on a directory), after minutes of measuring
    (tmp_path / "results.json").mkdir()
    blocked = tmp_path / "file"
    blocked.write_text("")
    for out, says in [(tmp_path / "results.json", "it is a directory"), (blocked / "results.json", "cannot write"),
                      ("", "not a file or directory name")]:
        done = _bench(script, [*BENCH_TINY[script], BENCH_OUT[script], str(out)], timeout=30)
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and says in done.stderr, done.stderr
        assert not done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "results.json"]
    assert not list((tmp_path / "results.json").iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(BENCH_OUT))
def test_a_tiny_benchmark_run_writes_its_json(script: str, tmp_path: pathlib.Path) -> None:
    if script == "bench_env":
        pytest.importorskip("pettingzoo")
    out = tmp_path / "new" / "results.json"
    done = _bench(script, [*BENCH_TINY[script], BENCH_OUT[script], str(out)], timeout=600)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert data["popejoan" if script == "bench_engine" else "results" if script == "bench_env" else "tables"]
    assert [p.name for p in out.parent.iterdir()] == ["results.json"]  # no temporary file left beside it
