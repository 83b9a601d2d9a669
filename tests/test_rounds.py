"""Rounds of policy improvement (``popejoan train --rounds N``), kept on disk as they finish: a run stopped after a
round and resumed with ``--resume`` gives the network of a run never stopped, bit for bit; a state that does not
belong to the run is refused in one line that names the file and the reason, and nothing is removed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="pip install torch==2.13.0 && pip install -e '.[train]'")

from popejoan_env.training import ppo  # noqa: E402
from popejoan_env.files import file_sha256  # noqa: E402
from popejoan_env.training.rounds import FORMAT, GONE, ResumeError, Rounds, identity, seeds  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--imitate-deals", "40", "--imitate-player", "pimc:samples=8", "--imitate-epochs", "1", "--imitate-workers",
        "1", "--rollout-deals", "24", "--rollout-worlds", "2", "--rollout-epochs", "1", "--actor-arch", "8,16,16",
        "--eval-interval", "1", "--eval-deals", "2", "--eval-opponents", "random", "--final-eval-deals", "0",
        "--no-progress", "--no-tensorboard"]
"""A run of a few seconds a round."""


def _dropping(flags: list[str], drop: Callable[[str], bool]) -> list[str]:
    """``flags`` without each flag for which ``drop`` holds and the value after it (every dropped flag has one)."""
    return [flag for i, flag in enumerate(flags) if not drop(flag) and not (i and drop(flags[i - 1]))]


IMITATION = ["--rounds", "0", *_dropping(TINY, lambda flag: flag.startswith("--rollout-"))]
"""TINY's imitation alone (a --rollout-* flag with --rounds 0 is refused)."""
FROM_START = _dropping(TINY, lambda flag: flag.startswith("--imitate-") and flag != "--imitate-workers")
"""TINY's rounds, for a run from --start-model (the flags of the imitation alone are refused with it)."""


def _weights(path: Path) -> bytes:
    """The network of a model file (its weights member: the metadata names the run, which may differ)."""
    with zipfile.ZipFile(path) as archive:
        return archive.read("policy.pth")


def test_a_resumed_run_trains_the_network_of_a_run_never_stopped(tmp_path: Path, capsys: Any) -> None:
    whole = ppo.main(["--output-dir", str(tmp_path), "--run-name", "whole", "--rounds", "2", *TINY])
    ppo.main(["--output-dir", str(tmp_path), "--run-name", "cut", "--rounds", "1", *TINY])
    capsys.readouterr()
    resumed = ppo.main(["--output-dir", str(tmp_path), "--run-name", "cut", "--rounds", "2", "--resume", *TINY])
    assert "resuming cut after round 1" in capsys.readouterr().out
    assert _weights(tmp_path / "whole" / "model.zip") == _weights(tmp_path / "cut" / "model.zip")
    for k in range(3):
        assert _weights(tmp_path / "whole" / "rounds" / f"round_{k}.zip") == \
            _weights(tmp_path / "cut" / "rounds" / f"round_{k}.zip")
    assert [r["decisions"] for r in whole["rounds"]] == [r["decisions"] for r in resumed["rounds"]]
    # the learning curve of the resumed run holds every stage's points, the earlier session's too
    assert [(e["stage"], e["epoch"]) for e in resumed["evaluations"]] == \
        [("imitation", 0), ("imitation", 1), ("round 1", 1), ("round 2", 1)]
    assert [(e["stage"], e["epoch"]) for e in whole["evaluations"]] == \
        [(e["stage"], e["epoch"]) for e in resumed["evaluations"]]
    state = json.loads((tmp_path / "cut" / "rounds" / "state.json").read_text())
    assert state["format"] == FORMAT and [entry["round"] for entry in state["done"]] == [0, 1, 2]
    assert all(not name.endswith(".tmp") for name in os.listdir(tmp_path / "cut" / "rounds"))
    # each round's network is another network: the rounds learned
    assert _weights(tmp_path / "whole" / "rounds" / "round_1.zip") != \
        _weights(tmp_path / "whole" / "rounds" / "round_2.zip")


def test_each_round_has_its_own_seeds() -> None:
    got = [seeds(1, k) for k in range(1, 5)]
    assert len(set(got)) == 4 and seeds(1, 1) == (40_001, 3)  # round 1 is the single stage of 0.2.0
    assert all(a not in (1, 10_001, 20_001) for a, _ in got)  # never the imitation's nor the evaluations' seed


def _state(tmp_path: Path, args: Any, rounds: int = 2) -> Rounds:
    """A run directory with ``rounds + 1`` finished rounds of stand-in files (the checks read files, not weights)."""
    state = Rounds.start(str(tmp_path), args)
    for k in range(rounds + 1):
        state.finish(k, lambda path, k=k: Path(path).write_bytes(f"round {k}".encode()), record(args, k),
                     [point(args, k)])
    return state


def record(args: Any, k: int) -> dict[str, Any]:
    """Round ``k``'s record as ``ppo.recipe`` writes it (the fields a resumed run reads)."""
    deals = args.imitate_deals if k == 0 else args.rollout_deals
    return {"deals": deals, "decisions": 9 * deals, "epochs": [{"epoch": 1, "held_out_agreement": 0.5}], "seconds": 1.0}


def point(args: Any, k: int) -> dict[str, Any]:
    """A learning-curve point of round ``k`` as ``ppo.recipe`` writes it."""
    row = {"deals": 2, "model_mean": 1.0, "model_ci95": 2.0, "opponent_mean": -1.0, "opponent_ci95": 2.0,
           "diff_mean": 2.0, "diff_ci95": 3.0, "significant": False}
    return {"timesteps": 0, "train_seconds": 1.5 * k, "stage": "imitation" if k == 0 else f"round {k}", "epoch": 1,
            "results": {name: dict(row) for name in args.eval_opponents.split(",")}}


@pytest.fixture
def args() -> ppo.Args:
    return ppo.Args(rounds=3, resume=True)


def test_resume_reads_back_the_finished_rounds(tmp_path: Path, args: ppo.Args) -> None:
    _state(tmp_path, args)
    back = Rounds.resume(str(tmp_path), args)
    assert [entry["round"] for entry in back.done] == [0, 1, 2] and back.identity == identity(args)
    # more rounds, more workers, another backend: the same data
    import dataclasses

    Rounds.resume(str(tmp_path), dataclasses.replace(args, rounds=9, imitate_workers=1, progress=False))


@pytest.mark.parametrize("spoil, says", [
    (lambda d: (d / "state.json").unlink(), "does not exist: this run has no finished round"),
    (lambda d: (d / "state.json").write_text("{not json"), "cannot be read as JSON"),
    (lambda d: (d / "state.json").write_text("[1, 2]"), "is not a popejoan-rounds/1 state"),
    (lambda d: (d / "state.json").write_text(json.dumps({"format": FORMAT, "identity": {}, "done": []})),
     "holds no identity or no finished round"),
    (lambda d: (d / "round_1.zip").unlink(), "round_1.zip is missing or is not the file"),
    (lambda d: (d / "round_2.zip").write_bytes(b"another network"), "round_2.zip is missing or is not the file"),
    (lambda d: _edit(d, lambda s: s["done"][1].update(round=7)), "round 1's entry is not what"),
    (lambda d: _edit(d, lambda s: s["identity"].update(seed=2)), "--seed is 2 in this run"),
    (lambda d: _edit(d, lambda s: s["identity"].update(rollout_deals=5)), "--rollout-deals is 5 in this run"),
    (lambda d: _edit(d, lambda s: s["identity"].pop("actor")), "--actor is '(absent)' in this run"),
    (lambda d: _edit(d, lambda s: s["identity"].update(rollout_belief="leads")),
     "trained with --rollout-belief 'leads', a flag that went in 0.3.0: commit 21b19f4 resumes it"),
    (lambda d: _edit(d, lambda s: s["identity"].update(rollout_field="field.zip")),
     "trained with --rollout-field 'field.zip', a flag that went in 0.3.0"),
    (lambda d: _edit(d, lambda s: s["identity"].update(rollout_worlds_x=8)),
     "names 'rollout_worlds_x', which is no flag of this command"),
    (lambda d: _edit(d, lambda s: s["versions"].update(torch="0.1.0")),
     "trained with other versions (torch '0.1.0' there, "),
    (lambda d: _edit(d, lambda s: s["versions"].update(numpy="1.0.0", popejoan="0.0.1")),
     "trained with other versions (popejoan '0.0.1' there, "),
    (lambda d: _edit(d, lambda s: s.update(versions=[1])), r"holds versions \[1\], not an object of versions"),
])
def test_a_state_that_is_not_this_runs_is_refused(tmp_path: Path, args: ppo.Args, spoil: Any, says: str) -> None:
    _state(tmp_path, args)
    spoil(tmp_path / "rounds")
    with pytest.raises(ResumeError, match=says.replace("(", r"\(").replace(")", r"\)")):
        Rounds.resume(str(tmp_path), args)


def test_a_run_saved_with_a_gone_flag_at_what_every_run_now_trains_by_resumes(tmp_path: Path,
                                                                             args: ppo.Args) -> None:
    # Runs saved before 0.3.0 dropped the recipes measured and not kept name them: at the values every run now
    # trains by (rounds.GONE), a run trained as this one would is resumed; runs saved before two of them existed
    # lack them, and resume too.
    _state(tmp_path, args)
    _edit(tmp_path / "rounds", lambda s: s["identity"].update(GONE))
    assert len(Rounds.resume(str(tmp_path), args).done) == 3
    _edit(tmp_path / "rounds", lambda s: [s["identity"].pop(key) for key in ("rollout_play", "rollout_field")])
    assert len(Rounds.resume(str(tmp_path), args).done) == 3


def _edit(directory: Path, change: Any) -> None:
    state = json.loads((directory / "state.json").read_text())
    change(state)
    (directory / "state.json").write_text(json.dumps(state))


def test_more_finished_rounds_than_asked_for_are_refused(tmp_path: Path, args: ppo.Args) -> None:
    import dataclasses

    _state(tmp_path, args, rounds=3)
    with pytest.raises(ResumeError, match="has 3 finished rounds and --rounds 2 asks for fewer"):
        Rounds.resume(str(tmp_path), dataclasses.replace(args, rounds=2))


def test_a_refused_resume_is_one_line_and_removes_nothing(tmp_path: Path) -> None:
    run = tmp_path / "r"
    (run / "rounds").mkdir(parents=True)
    (run / "model.zip").write_bytes(b"the last run's model")
    (run / "rounds" / "state.json").write_text(json.dumps({"format": FORMAT, "identity": {"seed": 9},
                                                           "done": [{"round": 0}]}))
    done = subprocess.run([sys.executable, str(ROOT / "training" / "train_ppo.py"), "--output-dir", str(tmp_path),
                           "--run-name", "r", "--resume", "--no-progress"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "--resume:" in done.stderr and "state.json" in done.stderr
    assert (run / "model.zip").read_bytes() == b"the last run's model", "nothing is removed before the check"


def test_a_resume_of_a_run_that_is_not_there_makes_no_directory(tmp_path: Path) -> None:
    # It was refused in one line after the run's directory, and every missing one above it, had been made.
    done = subprocess.run([sys.executable, str(ROOT / "training" / "train_ppo.py"), "--output-dir",
                           str(tmp_path / "new" / "deeper"), "--run-name", "zz", "--resume", "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "--resume:" in done.stderr and "does not exist" in done.stderr
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("flags, says", [
    (["--rounds", "1", "--rules-option", "pack=small", "--players", "3", "--vec-env", "dummy"], "add --rounds 0"),
    (["--resume", "--imitate-deals", "0"], "--imitate-deals 0 has none"),
    (["--backend", "cluster"], "--backend must be one of local, ray"),
    (["--address", "10.0.0.1:6379"], "give --backend ray with it"),
    (["--backend", "ray", "--address", "not an address"], "a Ray address is auto"),
])
def test_flags_that_cannot_run_are_refused_before_any_work(flags: list[str], says: str) -> None:
    with pytest.raises(ppo.PopeJoanError, match=says):
        ppo.check_args(ppo.parse_flags(ppo.Args, flags, ""))


def test_the_state_records_what_it_names(tmp_path: Path, args: ppo.Args) -> None:
    import torch

    import popejoan_env

    state = _state(tmp_path, args, rounds=1)
    saved = json.loads(Path(state.path).read_text())
    assert saved["identity"] == identity(args) and "resume" not in saved["identity"]
    assert saved["versions"] == {"popejoan": popejoan_env.__version__, "numpy": np.__version__,
                                 "torch": torch.__version__}
    _edit(Path(state.directory), lambda s: s.pop("versions"))  # a state written before they were kept
    assert len(Rounds.resume(str(tmp_path), args).done) == 2
    assert [entry["sha256"] for entry in saved["done"]] == [file_sha256(state.model(k)) for k in range(2)]
    assert np.array_equal([entry["round"] for entry in saved["done"]], [0, 1])


def test_the_learning_curve_names_each_stage_where_it_starts(monkeypatch: Any, tmp_path: Path) -> None:
    from popejoan_env.training import common

    figures = []
    monkeypatch.setattr(common, "save_png", lambda fig, path: figures.append(fig) or path)
    row = {"random": {"diff_mean": 1.0, "diff_ci95": 0.5}}
    evals = [{"train_seconds": 60.0 * m, "stage": stage, "epoch": e, "results": row}
             for m, (stage, e) in enumerate([("imitation", 0), ("imitation", 1), ("round 1", 1), ("round 1", 2),
                                             ("round 2", 1)])]
    common.write_learning_curve(str(tmp_path / "c.png"), "t", evals, final=row, train_seconds=400.0)
    [ax] = figures[0].axes
    assert [t.get_text() for t in ax.texts] == ["imitation", "round 1", "round 2"]
    assert [round(line.get_xdata()[0]) for line in ax.lines if line.get_linestyle() == ":"] == [0, 2, 4]


def _raw(directory: Path, change: Any) -> None:
    (directory / "state.json").write_text(change((directory / "state.json").read_text()))


@pytest.mark.parametrize("spoil, says", [
    # what the recipe reads of a finished round (was: a KeyError, TypeError or OverflowError after the training)
    (lambda d: _edit(d, lambda s: s["done"][0]["record"].pop("seconds")), r"\(seconds None, not from 0 to"),
    (lambda d: _edit(d, lambda s: s["done"][0]["record"].update(seconds="1")), r"\(seconds '1', not from 0 to"),
    (lambda d: _edit(d, lambda s: s["done"][1]["record"].update(seconds=1e308)), r"\(seconds 1e\+308, not from 0"),
    (lambda d: _edit(d, lambda s: s["done"][1]["record"].update(seconds=-1)), r"\(seconds -1, not from 0"),
    (lambda d: _edit(d, lambda s: s["done"][0]["record"].update(seconds=10**400)), "an integer of about 400 digits"),
    (lambda d: _edit(d, lambda s: s["done"][0]["record"].pop("decisions")), r"\(decisions None\)"),
    (lambda d: _edit(d, lambda s: s["done"][2]["record"].update(deals=7)), "deals 7, where this run plays 25000"),
    # numbers JSON does not have (was: a run.json that no JSON reader reads, or an OverflowError at the end)
    (lambda d: _raw(d, lambda t: t.replace('"seconds": 1.0', '"seconds": NaN', 1)), "NaN is not a number of a state"),
    (lambda d: _raw(d, lambda t: t.replace('"seconds": 1.0', '"seconds": -Infinity', 1)), "-Infinity is not a num"),
    (lambda d: _raw(d, lambda t: t.replace('"seconds": 1.0', '"seconds": 1' + "0" * 400, 1)), "not a finite number"),
    (lambda d: _raw(d, lambda t: t.replace('"format"', '"format": "x", "format"', 1)), "a key is given twice"),
    # nesting a later json.dumps of the state or of run.json could not write
    (lambda d: _edit(d, lambda s: s["done"][0]["record"].update(x=json.loads("[" * 800 + "]" * 800))),
     "nested more than 6 levels deep"),
    # the entry's own fields, of the right type and value only (was: True for round 1, 0.0 for round 0)
    (lambda d: _edit(d, lambda s: s["done"][1].update(round=True)), r"\(round True\)"),
    (lambda d: _edit(d, lambda s: s["done"][0].update(round=0.0)), r"\(round 0.0\)"),
    (lambda d: _edit(d, lambda s: s["done"][0].update(sha256="../" * 30)), r"\(sha256 '\.\./"),
    (lambda d: _edit(d, lambda s: s["done"][0].update(model="../other/round_0.zip")), "model '../other/round_0.zip'"),
    (lambda d: _edit(d, lambda s: s["done"][0].update(extra=1)), "an object of round, model, sha256, record, evals"),
    # learning-curve points the final figure would trip on
    (lambda d: _edit(d, lambda s: s["done"][0].update(evals=[1, "x"])), "a learning-curve point 1, not one of"),
    (lambda d: _edit(d, lambda s: s["done"][1]["evals"][0].update(stage="imitation")), "not one of round 1"),
    (lambda d: _edit(d, lambda s: s["done"][1]["evals"][0]["results"].pop("pimc")), "not one of round 1 against"),
    (lambda d: _edit(d, lambda s: s["done"][0]["evals"][0]["results"]["pimc"].update(diff_mean="x")),
     "not one of imitation"),
    # the identity: a key that is no flag is named in one line, a value shown briefly; true is not 1
    (lambda d: _edit(d, lambda s: s["identity"].update({"a\nb": 1})), r"names 'a\\nb', which is no flag"),
    (lambda d: _edit(d, lambda s: s["identity"].update(seed="x" * 10**5)), r"--seed is 'xxx+\.\.\. in this run"),
    (lambda d: _edit(d, lambda s: s["identity"].update(seed=True)), "--seed is True in this run"),
    # a state file that is not a regular file is named as that, not as missing
    (lambda d: ((d / "state.json").unlink(), (d / "state.json").mkdir()), "state.json is not a regular file"),
    (lambda d: ((d / "state.json").unlink(), (d / "state.json").symlink_to("/dev/zero")), "is not a regular file"),
])
def test_a_forged_state_is_refused_in_one_line(tmp_path: Path, args: ppo.Args, spoil: Any, says: str) -> None:
    _state(tmp_path, args)
    spoil(tmp_path / "rounds")
    with pytest.raises(ResumeError, match=says) as refused:
        Rounds.resume(str(tmp_path), args)
    assert len(str(refused.value).splitlines()) == 1 and len(str(refused.value)) < 400


def test_the_same_numbers_given_as_int_or_float_are_one_flag(tmp_path: Path, args: ppo.Args) -> None:
    _state(tmp_path, args)
    _edit(tmp_path / "rounds", lambda s: s["identity"].update(imitate_lr=1, seed=1.0))
    import dataclasses

    Rounds.resume(str(tmp_path), dataclasses.replace(args, imitate_lr=1.0))


def test_a_round_file_of_another_network_is_refused(tmp_path: Path, args: ppo.Args) -> None:
    from test_edges import tiny_metadata, tiny_state, weights_bytes, write_model

    state = _state(tmp_path, args, rounds=1)
    path = write_model(Path(state.model(1)), weights_bytes(tiny_state((8,))), tiny_metadata((8,)))
    _edit(tmp_path / "rounds", lambda s: s["done"][1].update(sha256=file_sha256(str(path))))  # its SHA-256 forged too
    with pytest.raises(ResumeError, match=r"round_1.zip is not a network of this run's flags: its net_arch is \[8\]"):
        Rounds.resume(str(tmp_path), args, tiny_metadata((16,)))
    theirs = dict(tiny_metadata((8,)), run_name="another", package_version="0.0.1")
    Rounds.resume(str(tmp_path), args, theirs)  # its name and the package's version may differ


@pytest.mark.parametrize("place, says", [
    (lambda run: (run / "rounds").write_text("a file"), "rounds: it is not a directory"),
    (lambda run: (run / "rounds" / "state.json").mkdir(parents=True), "state.json: it is a directory"),
    (lambda run: (run / "rounds" / "round_0.zip").mkdir(parents=True), "round_0.zip: it is a directory"),
    (lambda run: (run / "checkpoints" / "a.zip").mkdir(parents=True), "a.zip: it is a directory"),
    (lambda run: (run / "checkpoints").write_text("a file"), "checkpoints: it is not a directory"),
])
def test_a_run_whose_files_cannot_be_kept_is_refused_before_anything_is_removed(
        tmp_path: Path, capsys: Any, place: Any, says: str) -> None:
    run = tmp_path / "r"
    run.mkdir()
    (run / "model.zip").write_bytes(b"the last run's model")
    place(run)
    with pytest.raises(SystemExit) as exited:
        ppo.run(["--output-dir", str(tmp_path), "--run-name", "r", "--no-progress", "--imitate-deals", "8",
                 "--imitate-player", "random", "--imitate-loss", "choice", "--rounds", "0"], prog="train")
    err = capsys.readouterr().err
    assert exited.value.code == 2 and len(err.splitlines()) == 1 and says in err, err
    assert (run / "model.zip").read_bytes() == b"the last run's model", "nothing is removed before the check"


def test_a_run_from_start_model_plays_the_rounds_a_run_after_that_network_plays(tmp_path: Path) -> None:
    whole = ppo.main(["--output-dir", str(tmp_path), "--run-name", "whole", "--rounds", "2", *TINY])
    first = tmp_path / "whole" / "rounds" / "round_0.zip"
    grown = ppo.main(["--output-dir", str(tmp_path), "--run-name", "grown", "--rounds", "2", "--start-model",
                      str(first), *FROM_START])
    for k in range(3):
        assert _weights(tmp_path / "whole" / "rounds" / f"round_{k}.zip") == \
            _weights(tmp_path / "grown" / "rounds" / f"round_{k}.zip"), f"round {k}"
    assert [r["decisions"] for r in whole["rounds"]] == [r["decisions"] for r in grown["rounds"]]
    assert "imitation" not in grown and grown["start_model"]["start_model"] == str(first)
    assert grown["start_model"]["decisions"] == 0 and grown["start_model"]["start_sha256"] == file_sha256(str(first))
    assert [(e["stage"], e["epoch"]) for e in grown["evaluations"]] == \
        [("start model", 0), ("round 1", 1), ("round 2", 1)]


def test_a_run_from_start_model_resumes_only_from_the_same_file(tmp_path: Path, capsys: Any) -> None:
    ppo.main(["--output-dir", str(tmp_path), "--run-name", "a", *IMITATION])
    start = tmp_path / "start.zip"
    start.write_bytes((tmp_path / "a" / "model.zip").read_bytes())
    whole = ["--output-dir", str(tmp_path), "--run-name", "b", "--start-model", str(start), *FROM_START]
    ppo.main(whole + ["--rounds", "1"])
    capsys.readouterr()
    ppo.main(whole + ["--rounds", "2", "--resume"])
    assert "resuming b after round 1" in capsys.readouterr().out
    start.write_bytes((tmp_path / "b" / "model.zip").read_bytes())  # another network at the same path
    with pytest.raises(ResumeError, match="is not the file this run started from"):
        ppo.main(whole + ["--rounds", "3", "--resume"])


@pytest.mark.parametrize("flags, says", [
    (["--rounds", "0"], "with --rounds 0 would only copy it"),
    (["--actor-arch", "8,16,32"], r"net_arch \[8, 16, 16\] \(this run: \[8, 16, 32\]\)"),
    (["--activation", "relu"], "activation 'tanh'"),
])
def test_a_start_model_that_does_not_fit_the_run_is_refused(tmp_path: Path, flags: list[str], says: str) -> None:
    ppo.main(["--output-dir", str(tmp_path), "--run-name", "a", *IMITATION])
    with pytest.raises(ppo.PopeJoanError, match=says):
        ppo.check_args(ppo.parse_flags(ppo.Args, [*FROM_START, "--start-model", str(tmp_path / "a" / "model.zip"),
                                                  "--rounds", "1", *flags], ""))


def test_a_missing_start_model_is_one_line_at_the_command_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "training" / "train_ppo.py"), "--output-dir", str(tmp_path),
                           "--start-model", str(tmp_path / "none.zip"), "--no-progress"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "none.zip" in done.stderr and not os.path.exists(tmp_path / "ppo_modern_4p")


def test_a_run_without_ppo_writes_its_learning_curve_to_tensorboard(tmp_path: Path) -> None:
    """The default run has no PPO stage: its TensorBoard logs held no scalar at all before the recipe's points were
    written there (docs/training.md promises TensorBoard logs in ``<run>/tb``)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    flags = [flag for flag in TINY if flag != "--no-tensorboard"]
    run = ppo.main(["--output-dir", str(tmp_path), "--run-name", "tb", "--rounds", "1", *flags])
    board = EventAccumulator(str(tmp_path / "tb" / "tb"))
    board.Reload()
    points = board.Scalars("recipe/random/model_minus_opponent")
    assert [p.step for p in points] == list(range(len(run["evaluations"]))) and len(points) == 3
    assert [p.value for p in points] == pytest.approx(
        [e["results"]["random"]["diff_mean"] for e in run["evaluations"]])
    assert "recipe/train_minutes" in board.Tags()["scalars"]


def test_a_rounds_state_over_the_limit_is_refused_as_such_not_as_bad_json(tmp_path: Path) -> None:
    # was: "--resume: P cannot be read as JSON (--resume: P is not a regular file of at most ... bytes ...)"
    from popejoan_env.training.rounds import MAX_STATE_BYTES, _load

    path = tmp_path / "state.json"
    with open(path, "wb") as fh:
        fh.truncate(MAX_STATE_BYTES + 1)
    with pytest.raises(ResumeError) as refused:
        _load(str(path))
    message = str(refused.value)
    assert "MAX_STATE_BYTES" in message and "cannot be read as JSON" not in message, message
    assert message.count("--resume:") == 1, message
