"""Your own agent from the current directory: ``popejoan evaluate myagent:make_agent`` finds ``./myagent.py``
through the console command as ``python -m popejoan_env`` does, without letting the directory hide anything
installed (docs/evaluation.md, "Your own player")."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from popejoan_env.players import UnknownPlayerError, make_player

POPEJOAN = pathlib.Path(sys.executable).with_name("popejoan")
"""The console command of the interpreter running the tests (what ``pip install`` put beside it)."""

AGENT = textwrap.dedent('''
    from helpers import highest  # a neighbour of the module: found too


    class Highest:
        name = "highest"

        def reset(self, seed=None):
            pass

        def act(self, view):
            return highest(view.legal)


    def make_agent(seed=None):
        return Highest()
''')


@pytest.fixture()
def agent_directory(tmp_path: pathlib.Path) -> pathlib.Path:
    """A directory holding ``myagent.py`` (which imports its neighbour ``helpers.py``) and nothing else."""
    (tmp_path / "myagent.py").write_text(AGENT)
    (tmp_path / "helpers.py").write_text("def highest(cards):\n    return max(cards)\n")
    return tmp_path


@pytest.mark.skipif(not POPEJOAN.is_file(), reason="the popejoan console command is not installed beside python")
@pytest.mark.parametrize("command", [[str(POPEJOAN)], [sys.executable, "-m", "popejoan_env"]],
                         ids=["console command", "python -m"])
def test_evaluate_finds_your_module_in_the_current_directory(agent_directory: pathlib.Path, command: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([*command, "evaluate", "myagent:make_agent", "--deals", "50", "--opponents", "random",
                          "--quiet", "--out", "report"], capture_output=True, text=True, timeout=300,
                         cwd=agent_directory, env=env)
    assert out.returncode == 0, out.stderr
    report = json.loads((agent_directory / "report.json").read_text())
    assert report["command"].startswith("popejoan evaluate myagent:make_agent ")
    assert [row["opponent"] for row in report["opponents"]] == ["random"]


def test_the_current_directory_never_hides_an_installed_module(tmp_path: pathlib.Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``json.py`` here is not the json module; the refusal says which module was found and what to do."""
    (tmp_path / "json.py").write_text("def make_agent(seed=None):\n    raise AssertionError('never imported')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    with pytest.raises(UnknownPlayerError, match=r"module 'json' is .*json.*, which has no 'make_agent', not the one "
                                                 r"in the current directory: rename yours"):
        make_player("json:make_agent")
    assert str(tmp_path) not in sys.path, "the directory is added only when the module is found nowhere else"


def test_a_module_found_nowhere_is_refused_and_the_path_left_alone(tmp_path: pathlib.Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    before = list(sys.path)
    with pytest.raises(UnknownPlayerError, match="cannot import module 'no_agent_here'"):
        make_player("no_agent_here:make_agent")
    assert sys.path == before


@pytest.mark.parametrize(("spec", "says"), [
    ("builtins:exit", r"builtins\.exit\(\) raised SystemExit"),
    ("exits_on_import:make_agent", r"cannot import module 'exits_on_import' \(SystemExit"),
])
def test_a_factory_or_module_that_calls_exit_is_refused_not_a_silent_success(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, spec: str, says: str) -> None:
    """Before: ``popejoan evaluate builtins:exit`` ended with status 0, no report and no word."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(0)\n")
    with pytest.raises(UnknownPlayerError, match=says):
        make_player(spec)
    done = subprocess.run([sys.executable, "-m", "popejoan_env", "evaluate", spec, "--quick", "--out", "r"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, (done.returncode, done.stderr)
    assert not list(tmp_path.glob("r*"))
