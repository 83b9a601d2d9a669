"""The README's runnable parts stay runnable (the engine tour, the batch engine tour and the two quick-start
commands), and its generated parts are generated: each table between ``<!-- NAME -->`` and ``<!-- /NAME -->``
is written from its one source (``python tests/test_readme.py`` rewrites them all)."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
from collections.abc import Callable

import pytest

from popejoan_env.observation import layout_table
from test_architecture import layers_table

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
GENERATED: dict[str, Callable[[], str]] = {
    "layers": layers_table,                                  # tests/test_architecture.py: LAYERS
    "observation-layout": lambda: layout_table() + "\n",     # popejoan_env/observation.py: LAYOUT
}
"""The README's generated tables: marker name -> the function that writes the table from its source."""


def section(name: str, text: str = README) -> re.Match[str] | None:
    """The generated table ``name`` of the README: group 2 is the table between its markers."""
    return re.search(rf"(<!-- {name} -->\n)(.*?)(<!-- /{name} -->)", text, re.S)


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_the_generated_tables_are_what_their_source_writes(name: str) -> None:
    found = section(name)
    assert found, f"README.md has no <!-- {name} --> ... <!-- /{name} --> table"
    assert found.group(2) == GENERATED[name](), f"README's {name} table is stale: run python tests/test_readme.py"


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


if __name__ == "__main__":
    text = README
    for name, write in GENERATED.items():
        found = section(name, text)
        assert found, f"README.md has no <!-- {name} --> marker"
        text = text[:found.start(2)] + write() + text[found.end(2):]
    (ROOT / "README.md").write_text(text)
