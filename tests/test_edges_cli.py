"""Command-line edges a tester found: each bad input is refused with exit status 2 and one line on stderr that names
the flag or value at fault (never a traceback), and a value typed the usual way is accepted."""

from __future__ import annotations

import importlib.util
import io
import pathlib
import subprocess
import sys

import pytest

from test_edges import run_main  # the in-process command line runner the other CLI tests use


def assert_refused(status: int, err: str, *words: str) -> None:
    """Exit status 2, exactly one line on stderr (no traceback), holding every one of ``words``."""
    assert status == 2, err
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err


@pytest.mark.skipif(importlib.util.find_spec("pyspiel") is None, reason="needs OpenSpiel: pip install open_spiel")
def test_play_accepts_an_openspiel_opponent(tmp_path: pathlib.Path) -> None:
    """Before: refused with 'not registered: import popejoan_env.envs.openspiel_game', which no command-line user
    can do.  A fresh process, so that no other test has registered the game already."""
    argv = ["play", "--opponents", "openspiel_ismcts:simulations=2", "--players", "3", "--seed", "1"]
    done = subprocess.run([sys.executable, "-m", "popejoan_env", *argv], cwd=tmp_path, input="", capture_output=True,
                          text=True, timeout=300)
    assert "not registered" not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "no more input" in done.stderr, done.stderr  # the game began and asked the human (stdin is empty)


def test_a_number_list_flag_takes_a_value_starting_with_minus() -> None:
    """``--flag -24,72`` reads as ``--flag=-24,72`` for a NUMBER_LIST flag, in an argument group too."""
    from popejoan_env.cli import NUMBER_LIST, OneLineParser

    parser = OneLineParser(prog="t")
    parser.add_argument_group("g").add_argument("--range", action=NUMBER_LIST, default="0,1")
    parser.add_argument("rest", nargs="*")
    assert parser.parse_args(["--range", "-24,72"]).range == "-24,72"
    assert parser.parse_args(["--range", "-.5,2"]).range == "-.5,2"
    assert parser.parse_args(["--range=-3,4"]).range == "-3,4"
    assert parser.parse_args([]).range == "0,1"
    assert parser.parse_args(["--", "--range", "-1,2"]).rest == ["--range", "-1,2"]  # after --: positional


def test_train_balance_range_typed_the_usual_way_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: ``--balance-range -24,72`` (the documented default) was 'expected one argument'."""
    pytest.importorskip("sb3_contrib", reason="pip install -e '.[train]'")
    from popejoan_env.training import ppo

    args, given = ppo.parse_given(ppo.Args, ["--balance-range", "-24,72", "--seed", "3"], "")
    assert args.balance_range == "-24,72" and args.seed == 3 and "balance_range" in given
    status, _, err = run_main(["train", "--balance-range", "-24,72", "--imitate-deals", "0"], capsys)
    assert_refused(status, err, "nothing to train")  # read, and refused only for what is really missing
    assert "expected one argument" not in err


def test_train_balance_range_not_numbers_names_that_flag_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: '--players, --net-arch, --actor-arch and --balance-range take comma lists of integers'."""
    pytest.importorskip("sb3_contrib", reason="pip install -e '.[train]'")
    status, _, err = run_main(["train", "--balance-range", "foo"], capsys)
    assert_refused(status, err, "--balance-range", "'foo'")
    assert not any(flag in err for flag in ("--players", "--net-arch", "--actor-arch")), err


def test_simulate_out_under_a_file_says_it_is_a_file(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: '--out afile/x.jsonl: No such file or directory: afile', when afile is there, a file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("")
    for out in ("afile/x.jsonl", "afile/sub/x.jsonl"):
        status, _, err = run_main(["simulate", "--deals", "1", "--out", out], capsys)
        assert_refused(status, err, f"--out {out}", "afile is a file, not a directory")
    status, _, err = run_main(["simulate", "--deals", "1", "--out", "nodir/x.jsonl"], capsys)
    assert_refused(status, err, "No such file or directory: nodir")


@pytest.mark.skipif(not pathlib.Path("/proc/self/mem").exists(), reason="needs Linux's /proc")
def test_verify_a_file_that_fails_to_read_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: 'Input/output error' and no file name (the file opens; reading it fails)."""
    status, _, err = run_main(["verify", "--quiet", "/proc/self/mem"], capsys)
    assert_refused(status, err, "/proc/self/mem", "Input/output error")


@pytest.mark.parametrize("spec", ["pimc:samples=2,samples=3", "pimc:samples=2:samples=3",
                                  "pimc: samples=2, samples =3"])
def test_a_spec_parameter_given_twice_is_refused(spec: str, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: accepted silently, the last value winning (an exploit: spec refuses a repeated option)."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    status, _, err = run_main(["play", "--opponents", spec, "--seed", "1"], capsys)
    assert_refused(status, err, "'samples' given twice")


def test_learner_throughput_no_setups_says_one_is_needed(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: 'unknown set-up(s) []'."""
    pytest.importorskip("sb3_contrib", reason="pip install -e '.[train]'")
    for setups in ("", " , "):
        status, _, err = run_main(["learner-throughput", "--setups", setups], capsys)
        assert_refused(status, err, "--setups needs at least one set-up", "tutorial", "batch")
        assert "unknown" not in err
    status, _, err = run_main(["learner-throughput", "--setups", "batch,nope"], capsys)
    assert_refused(status, err, "--setups", "['nope']")


@pytest.mark.parametrize("opponents", ["pimc,random", "pimc:samples=8,rollout=greedy,random,lowest"])
def test_play_refuses_a_list_of_opponents_saying_it_takes_one_spec(opponents: str, capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: 'unknown player 'pimc,random'', although evaluate's and train's --opponents are comma lists."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    status, _, err = run_main(["play", "--opponents", opponents, "--seed", "1"], capsys)
    assert_refused(status, err, "--opponents takes one player spec", "every other seat", "pimc")
    assert "unknown player" not in err


def test_exploit_of_your_own_player_names_the_flag_that_searches_it(tmp_path: pathlib.Path,
                                                                    capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: 'use posterior=none ... or posterior=sampled', the spec's syntax, at a command line whose flag is
    --posterior."""
    (tmp_path / "own_exploited.py").write_text("class Own:\n    name = 'own'\n    def reset(self, seed=None): pass\n"
                                               "    def act(self, view): return min(view.legal)\n"
                                               "def make(seed=None):\n    return Own()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "own_exploited", raising=False)
    status, _, err = run_main(["exploit", "own_exploited:make", "--deals", "50", "--out", str(tmp_path / "x")],
                              capsys)
    assert_refused(status, err, "policy of 'own' is not known", "--posterior none", "--posterior sampled")
