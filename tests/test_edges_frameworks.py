"""Bad input to the framework training commands (``train-cleanrl``, ``train-mappo``, ``train-rllib``): refused in one
line with exit status 2 before anything is written or allocated, and the small rollouts that are fine train to a
model of finite weights."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from popejoan_env.__main__ import main

CLEANRL = ["train-cleanrl", "--model-path", "cl/model.zip", "--eval-deals", "0"]
MAPPO = ["train-mappo", "--model-path", "mp/model.zip", "--eval-deals", "0"]
RLLIB = ["train-rllib", "--total-timesteps", "100", "--eval-deals", "0", "--num-env-runners", "0",
         "--no-tensorboard", "--output-dir", "rl"]


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``main(argv)`` in-process: (exit status, stderr); argparse's SystemExit counts as a status."""
    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 2
    return status, capsys.readouterr().err


def assert_refused(argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                   before: list[str] | None = None) -> None:
    """Exit status 2, one line on stderr naming ``says``, and nothing created in ``tmp_path`` (the cwd)."""
    status, err = run_main(argv, capsys)
    assert status == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert says in err, err
    assert sorted(os.listdir(tmp_path)) == sorted(before or []), "nothing is written"


def finite_weights(path: Path) -> bool:
    """Whether every tensor of a model file's ``policy.pth`` is finite."""
    import torch

    with zipfile.ZipFile(path) as zf:
        state = torch.load(io.BytesIO(zf.read("policy.pth")), weights_only=True)
    return all(bool(torch.isfinite(t).all()) for t in state.values())


# ---------------------------------------------------------------------- train-cleanrl
@pytest.mark.parametrize(("flags", "says"), [
    # minibatches of one decision: its advantage normalised by the spread of one value (was: NaN weights, a traceback)
    (["--total-timesteps", "4096", "--num-minibatches", "4096"], "--num-minibatches 4,096"),
    (["--num-envs", "1", "--num-steps", "1", "--num-minibatches", "1"], "at least 2 x num-minibatches"),
    # a rollout of 336 TB (was: allocated until the memory ran out)
    (["--num-envs", "65536", "--num-steps", "1000000"], "MAX_ROLLOUT_VALUES"),
    # a network of 8.8 billion values (was: heading for out-of-memory)
    (["--hidden", "65536", "--num-minibatches", "1"], "--hidden 65,536"),
])
def test_cleanrl_refuses_rollouts_and_networks_that_cannot_train(
        flags: list[str], says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch", reason="pip install -e '.[train]'")
    monkeypatch.chdir(tmp_path)
    assert_refused([*CLEANRL, *flags], says, tmp_path, capsys)


@pytest.mark.parametrize("flags", [
    # 16 decisions a rollout, few of them complete: minibatches of 1 made NaN weights (a ValueError traceback)
    ["--total-timesteps", "64", "--num-envs", "4", "--num-steps", "4"],
    # a rollout of 2 steps, mostly no complete decision: no minibatch at all (an UnboundLocalError traceback)
    ["--total-timesteps", "16", "--num-envs", "2", "--num-steps", "1", "--num-minibatches", "1"],
])
def test_cleanrl_rollouts_with_few_complete_decisions_train_to_finite_weights(
        flags: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch", reason="pip install -e '.[train]'")
    monkeypatch.chdir(tmp_path)
    status, err = run_main([*CLEANRL, *flags], capsys)
    assert status == 0 and "Traceback" not in err, err
    assert finite_weights(tmp_path / "cl" / "model.zip")


# ---------------------------------------------------------------------- train-mappo
def test_mappo_refuses_a_batch_too_large_to_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torchrl", reason="pip install -e '.[marl]'")
    monkeypatch.chdir(tmp_path)  # 10 million frames: 205 GB of observations (was: allocated until out of memory)
    assert_refused([*MAPPO, "--total-frames", "10000000", "--frames-per-batch", "10000000", "--minibatch-size", "10",
                    "--num-epochs", "1"], "--frames-per-batch 10,000,000", tmp_path, capsys)


# ---------------------------------------------------------------------- train-rllib
@pytest.mark.parametrize(("flags", "says"), [
    # an actor of 1.3 trillion values (was: 5 TB asked of the learner)
    (["--net-arch", "1000000000"], "--net-arch 1000000000"),
    # more learners than CPUs (was: Ray waited for them forever)
    (["--num-learners", "1000"], "--num-learners 1000"),
    (["--num-learners", str((os.cpu_count() or 1) + 1)], "Ray would wait for them forever"),
    # a batch that cannot be held
    (["--train-batch-size", "10000000", "--minibatch-size", "10"], "MAX_ROLLOUT_VALUES"),
])
def test_rllib_refuses_what_cannot_run_here_before_ray_starts(
        flags: list[str], says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ray", reason="Ray RLlib is not installed: pip install -e '.[ray]'")
    monkeypatch.chdir(tmp_path)
    assert_refused([*RLLIB, *flags], says, tmp_path, capsys)


def test_rllib_refuses_gpus_torch_does_not_see(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ray", reason="Ray RLlib is not installed: pip install -e '.[ray]'")
    torch = pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)  # was: an AssertionError traceback once Ray had started
    asked = str(torch.cuda.device_count() + 1)
    assert_refused([*RLLIB, "--num-gpus-per-learner", asked], f"--num-gpus-per-learner {asked}", tmp_path, capsys)


@pytest.mark.parametrize(("made", "says"), [
    ([], "it has no algorithm_state.pkl"),
    (["algorithm_state.pkl"], "it has no learner_group"),
])
def test_rllib_refuses_a_restore_directory_that_is_no_checkpoint(
        made: list[str], says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ray", reason="Ray RLlib is not installed: pip install -e '.[ray]'")
    monkeypatch.chdir(tmp_path)  # was: a FileNotFoundError traceback once Ray had started
    (tmp_path / "adir").mkdir()
    for name in made:
        (tmp_path / "adir" / name).write_bytes(b"")
    assert_refused([*RLLIB, "--restore", "adir"], says, tmp_path, capsys, before=["adir"])
    assert sorted(os.listdir(tmp_path / "adir")) == made


def _checkpoint_of(where: Path, **setup: object) -> None:
    """A directory with what ``check_checkpoint`` looks for: RLlib's two parts and the run's ``SETUP_FILE``."""
    (where / "learner_group").mkdir(parents=True)
    (where / "algorithm_state.pkl").write_bytes(b"")
    (where / "popejoan_setup.json").write_text(json.dumps(setup), encoding="utf-8")


def test_rllib_refuses_a_checkpoint_of_another_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """--restore with another --seed went on (its model then named the new seed, its first steps the other's), where
    popejoan train --resume refuses it; a checkpoint saved before seeds were kept is not held to one."""
    pytest.importorskip("ray", reason="Ray RLlib is not installed: pip install -e '.[ray]'")
    from popejoan_env.training import rllib

    monkeypatch.chdir(tmp_path)
    args = rllib.Args()
    _checkpoint_of(tmp_path / "ck", **rllib.setup_of(args))
    assert_refused([*RLLIB, "--restore", "ck", "--seed", str(args.seed + 1)], "--seed", tmp_path, capsys,
                   before=["ck"])
    older = {k: v for k, v in rllib.setup_of(args).items() if k != "seed"}
    _checkpoint_of(tmp_path / "old", **older)
    rllib.check_checkpoint(str(tmp_path / "old"), dataclasses.replace(args, seed=args.seed + 1))  # not refused


def test_cleanrl_checks_the_file_it_writes_before_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # --model-path actor is saved as actor.zip: a directory there was found only after the training, as a traceback.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "actor.zip").mkdir()
    assert_refused(["train-cleanrl", "--model-path", "actor", "--eval-deals", "0", "--total-timesteps", "16",
                    "--num-envs", "2", "--num-steps", "8"], "actor.zip: it is a directory", tmp_path, capsys,
                   before=["actor.zip"])


@pytest.mark.parametrize("path", ["models/", "", ".zip", "models/ .zip"])
def test_cleanrl_refuses_a_model_path_that_names_no_file(path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # zip_path("models/") is "models/.zip", a hidden file that check_writable accepts: train-mappo's rule, before any
    # training (it refused "models/" until the file checked became the file written)
    monkeypatch.chdir(tmp_path)
    assert_refused(["train-cleanrl", "--model-path", path, "--eval-deals", "0", "--total-timesteps", "16",
                    "--num-envs", "2", "--num-steps", "8"], "--model-path must name a file", tmp_path, capsys)
