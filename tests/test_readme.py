"""The README's runnable parts stay runnable: the engine tour, the batch engine tour and the two quick-start commands."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def block_after(marker: str) -> str:
    """The fenced code block that follows an HTML comment marker."""
    match = re.search(rf"<!-- {marker} -->\s*```\w*\n(.*?)```", README, re.S)
    assert match, f"no code block after <!-- {marker} --> in README.md"
    return match.group(1)


def test_engine_tour_runs() -> None:
    code = block_after("tour")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "winner" in out.stdout and "cannot play KS" in out.stdout


def test_batch_engine_tour_runs() -> None:
    code = block_after("batch-tour")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    played = out.stdout.split()[0]
    assert int(played) > 100 * 4096


def test_quick_start_is_two_one_line_commands() -> None:
    main, tests = block_after("main-command").strip(), block_after("test-command").strip()
    for command in (main, tests):
        assert "\n" not in command and command.startswith("pip install torch==2.13.0 && ")
    assert "train_ppo.py" in main and "pytest" in tests


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "test-command" in ci
    extracted = subprocess.run(
        ["awk", "/<!-- test-command -->/{getline; getline; print; exit}", "README.md"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    ).stdout.strip()
    assert extracted == block_after("test-command").strip()


def test_a_user_written_player_plugs_into_the_tournament_and_the_env() -> None:
    code = block_after("your-player")
    assert len([line for line in code.splitlines() if line.strip()]) <= 16
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "highest_first" in out.stdout and "stops_first" in out.stdout


def test_numba_is_a_core_dependency_and_the_commands_name_no_fast_extra() -> None:
    """The batch engine's rules are compiled loops only: numba is installed with the package, not an extra."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    core = re.search(r"^dependencies = \[(.*?)^\]", pyproject, re.S | re.M)
    assert core and re.search(r'"numba>=', core.group(1))
    assert not re.search(r"^fast = \[", pyproject, re.M)
    for command in (block_after("main-command"), block_after("test-command")):
        assert "fast" not in command
