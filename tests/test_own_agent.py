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


# ===================================================================== the attack pass on module:factory (issue 42)
BROKEN = textwrap.dedent('''
    class Boom(BaseException):
        pass


    class Base:
        name = "base"

        def reset(self, seed=None):
            pass

        def act(self, view):
            return min(view.legal)


    def raises_base(seed=None):
        raise Boom("not an Exception")


    def raises_generator_exit(seed=None):
        raise GeneratorExit("closed")


    def raises_lines(seed=None):
        raise ValueError("line one\\nline two\\n" + "z" * 5000)


    def interrupted(seed=None):
        raise KeyboardInterrupt


    def named(name):
        player = Base()
        player.name = name
        return player


    def huge_name(seed=None):
        return named(10**5000)


    def long_name(seed=None):
        return named("n" * 100_000)


    def two_line_name(seed=None):
        return named("a\\nb")


    def uncallable(seed=None):
        player = Base()
        player.act = 5
        return player


    class ActRaises(Base):
        name = "act_raises"

        def act(self, view):
            raise ValueError("my act is broken\\nsecond line")


    class ActExits(Base):
        name = "act_exits"

        def act(self, view):
            raise SystemExit(0)


    class ResetRaises(Base):
        name = "reset_raises"

        def reset(self, seed=None):
            raise RuntimeError("reset broken")


    class Floaty(Base):
        name = "floaty"

        def act(self, view):
            return min(view.legal) + 0.7


    class Texty(Base):
        name = "texty"

        def act(self, view):
            return "AS" * 50_000


    def act_raises(seed=None):
        return ActRaises()


    def act_exits(seed=None):
        return ActExits()


    def reset_raises(seed=None):
        return ResetRaises()


    def floaty(seed=None):
        return Floaty()


    def texty(seed=None):
        return Texty()
''')


@pytest.fixture()
def broken(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """``broken_agents.py`` on ``sys.path``: factories and players that fail in every way found."""
    (tmp_path / "broken_agents.py").write_text(BROKEN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "broken_agents", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("factory, says", [
    ("raises_base", "raised Boom: not an Exception"),  # was: the BaseException itself, a traceback
    ("raises_generator_exit", "raised GeneratorExit: closed"),
    ("raises_lines", "raised ValueError: line one line two zzz"),  # was: a refusal of 5,000+ characters, 3 lines
    ("huge_name", "name is not a line of 1..100 printable characters"),  # was: accepted; a report could not show it
    ("long_name", "name is not a line of 1..100 printable characters"),  # was: a 100 kB name in every row
    ("two_line_name", "name is not a line of 1..100 printable characters"),  # was: a report's row in two lines
    ("uncallable", "returned"),
])
def test_a_factory_that_fails_or_returns_an_unusable_player_is_refused_in_one_line(
        broken: pathlib.Path, factory: str, says: str) -> None:
    with pytest.raises(UnknownPlayerError, match=says) as refused:
        make_player(f"broken_agents:{factory}")
    assert len(str(refused.value).splitlines()) == 1 and len(str(refused.value)) < 600


def test_a_ctrl_c_in_a_factory_stays_an_interruption(broken: pathlib.Path) -> None:
    # a slow import or factory interrupted by Ctrl-C: the command's "interrupted" and 130, not a refusal of the agent
    with pytest.raises(KeyboardInterrupt):
        make_player("broken_agents:interrupted")


@pytest.mark.parametrize("factory, says", [
    ("act_raises", "player 'act_raises': act() raised ValueError: my act is broken second line"),
    ("act_exits", "player 'act_exits': act() raised SystemExit"),  # was: the command ended, status 0, no report
    ("reset_raises", "player 'reset_raises': reset() raised RuntimeError: reset broken"),
])
def test_a_player_whose_own_code_raises_is_named_in_one_line_by_every_command(
        broken: pathlib.Path, factory: str, says: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # was: the player's exception and a traceback (evaluate, benchmark, play, exploit)
    from popejoan_env.__main__ import main

    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(""))
    spec = f"broken_agents:{factory}"
    for argv in (["evaluate", spec, "--quick", "--opponents", "random", "--out", "e"],
                 *([["play", "--opponents", spec, "--seed", "1"]] if "act" in factory else []),  # no reset in play
                 ["exploit", spec, "--posterior", "none", "--small", "--deals", "2", "--worlds", "2", "--out", "x"]):
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1, (argv, err)
    written = [os.path.join(d, f) for d, _, files in os.walk(broken) for f in files if "__pycache__" not in d]
    assert written == [str(broken / "broken_agents.py")], written  # no report, no state file


@pytest.mark.parametrize("factory", ["floaty", "texty"])
def test_an_answer_that_is_no_legal_card_is_refused_everywhere_never_truncated(broken: pathlib.Path,
                                                                                factory: str) -> None:
    # The search's playouts, the small game's check and AIVAT took int() of the answer: 22.7 was played as 22.
    from popejoan_env import Deal, Rules
    from popejoan_env.errors import IllegalActionError
    from popejoan_env.evaluate.exploit_search import best_response
    from popejoan_env.table import play_until
    from popejoan_env.tournament import run_duplicate

    import numpy as np

    spec = f"broken_agents:{factory}"
    deal = Deal.new(Rules.preset("modern"), 4, 0, np.random.default_rng(1))
    makers = [lambda: run_duplicate([spec, "random"], deals=2, seed=1, seats=3),
              lambda: play_until(deal, [make_player(spec)] * 4),
              lambda: best_response(spec, {"posterior": "none", "worlds": 2, "draws": 2}).act(
                  __import__("popejoan_env.seat_view", fromlist=["x"]).seat_view(deal, deal.to_act))]
    for make in makers:
        with pytest.raises(IllegalActionError, match="chose badly") as refused:
            make()
        assert len(str(refused.value)) < 600


@pytest.mark.parametrize(("spec", "meant"), [("mypackage/agent.py:make_agent", "mypackage.agent:make_agent"),
                                             ("./mypackage/agent:make_agent", "mypackage.agent:make_agent"),
                                             ("myagent.py:make_agent", "myagent:make_agent")])
def test_a_spec_written_as_a_file_path_is_refused_naming_the_module_spec_meant(
        agent_directory: pathlib.Path, monkeypatch: pytest.MonkeyPatch, spec: str, meant: str) -> None:
    """docs/evaluation.md's example is ``mypackage/agent.py``: written as a path, the spec was refused as a missing
    model file ("a player spec ending in .zip is a model file") or a module named ``myagent.py``, never naming the
    spec to write."""
    (agent_directory / "mypackage").mkdir()
    (agent_directory / "mypackage" / "agent.py").write_text(AGENT)
    monkeypatch.chdir(agent_directory)
    with pytest.raises(UnknownPlayerError, match=f"module:factory.*'{meant}'"):
        make_player(spec)
