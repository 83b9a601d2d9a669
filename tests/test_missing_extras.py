"""Without the train extra (torch, matplotlib, SB3), the base install's commands that need it say so in one line
(exit status 2, before any deal is played), never with a traceback: a network as a player, a chart, a learner."""

from __future__ import annotations

import pathlib
import shutil
import sys

import pytest

from popejoan_env.__main__ import main
from popejoan_env.errors import MissingDependencyError
from popejoan_env.players import SHIPPED_MODEL, make_player


def _without(monkeypatch: pytest.MonkeyPatch, *packages: str) -> None:
    """Make ``import`` of each package fail as it does where the package is not installed."""
    for name in packages:
        monkeypatch.setitem(sys.modules, name, None)


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a refused command writes (exit status 2)."""
    with pytest.raises(SystemExit) as info:
        raise SystemExit(main(argv))
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_a_network_without_torch_is_a_missing_dependency(tmp_path: pathlib.Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a model file's weights without torch names torch and the extra, not a damaged zip."""
    model = shutil.copy(SHIPPED_MODEL, tmp_path / "net.zip")  # a path of its own: nothing read earlier stands in
    _without(monkeypatch, "torch")
    with pytest.raises(MissingDependencyError) as err:
        make_player(str(model))
    assert str(err.value) == (f"reading the network of {model} needs torch, which is not installed: pip install "
                              "torch==2.13.0 && pip install 'popejoan[train]'")


@pytest.mark.parametrize("argv, said", [
    (["play", "--opponents", "{model}", "--seed", "1"], "reading the network of {model} needs torch"),
    (["benchmark", "--players", "{model},random", "--deals", "2", "--no-progress", "--out", "{out}"],
     "reading the network of {model} needs torch"),
    (["evaluate", "{model}", "--deals", "50", "--opponents", "random", "--quiet", "--out", "{out}"],
     "reading the network of {model} needs torch"),
])
def test_commands_refuse_a_network_without_torch_in_one_line(argv: list[str], said: str, tmp_path: pathlib.Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """play, benchmark and evaluate with a model file and no torch: one line naming the extra."""
    model = shutil.copy(SHIPPED_MODEL, tmp_path / "net.zip")
    fill = {"model": str(model), "out": str(tmp_path / "out" / "x")}
    _without(monkeypatch, "torch")
    err = _refused([a.format(**fill) for a in argv], capsys)
    assert said.format(**fill) in err and "pip install 'popejoan[train]'" in err


def test_benchmark_refuses_a_chart_without_matplotlib_before_playing(tmp_path: pathlib.Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The chart is refused before the first deal, with --no-chart named; --no-chart then runs."""
    out = tmp_path / "ladder"
    _without(monkeypatch, "matplotlib", "matplotlib.pyplot")
    err = _refused(["benchmark", "--players", "random,lowest", "--deals", "2", "--no-progress", "--out", str(out)],
                   capsys)
    assert f"the chart {out}.png needs matplotlib" in err and "--no-chart" in err
    assert not list(tmp_path.glob("ladder.*"))
    assert main(["benchmark", "--players", "random,lowest", "--deals", "2", "--no-progress", "--no-chart",
                 "--out", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.glob("ladder.*")) == ["ladder.json", "ladder.md"]


def test_exploit_learn_without_sb3_is_refused_in_one_line(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """--method learn trains with SB3: without it, one line."""
    monkeypatch.delitem(sys.modules, "popejoan_env.training.ppo", raising=False)  # imported anew, without SB3
    _without(monkeypatch, "sb3_contrib")
    err = _refused(["exploit", "random", "--method", "learn", "--steps", "100", "--quiet", "--out",
                    str(tmp_path / "ex")], capsys)
    assert "--method learn needs sb3_contrib" in err and "pip install 'popejoan[train]'" in err


def test_a_missing_module_of_popejoan_itself_is_not_called_a_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """A popejoan_env module that fails to import (a broken install) is raised as it is: the extra would not help."""
    from popejoan_env.checks import import_extra

    monkeypatch.delitem(sys.modules, "popejoan_env.training.ppo", raising=False)  # imported anew
    _without(monkeypatch, "popejoan_env.training.rounds")
    with pytest.raises(ModuleNotFoundError) as err:
        import_extra("popejoan_env.training.ppo", "train", "--method learn")
    assert err.value.name == "popejoan_env.training.rounds"
