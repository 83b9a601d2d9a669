"""``popejoan train-mappo`` (``popejoan_env/training/mappo.py``): MAPPO on TorchRL over the PettingZoo env. TorchRL's
wrapper marks the one seat that acts and carries ``state()``; the actor learns only from the seats that acted; the
same seed trains the same network; a tiny run writes an actor that ``popejoan evaluate`` plays."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="pip install torch==2.13.0 && pip install -e '.[train]'")
pytest.importorskip("torchrl", reason="pip install -e '.[marl]'")

import torch  # noqa: E402

from popejoan_env.nets.model_file import read_metadata  # noqa: E402
from popejoan_env.nets.policy import load_policy  # noqa: E402
from popejoan_env.observation import OBS_SIZE, STATE_SIZE  # noqa: E402
from popejoan_env.rules import MODERN  # noqa: E402
from popejoan_env.training import mappo  # noqa: E402

TINY = ["--total-frames", "240", "--frames-per-batch", "120", "--minibatch-size", "40", "--num-epochs", "2",
        "--hidden", "16", "--critic-hidden", "16"]
"""A run of two batches: seconds, not minutes."""


@pytest.fixture(autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


def collect(frames: int, seed: int = 3) -> tuple[object, object]:
    """A batch of ``frames`` decisions played by a fresh policy on TorchRL's wrapper of the env, and the policy."""
    from torchrl.collectors import Collector

    torch.manual_seed(seed)
    actor = mappo.Actor(16)
    policy = mappo.make_policy(actor)
    collector = Collector(mappo.make_env(4, MODERN.replace(start_counters=0), seed), policy, frames_per_batch=frames,
                          total_frames=frames, auto_register_policy_transforms=False)
    batch = next(iter(collector))
    collector.shutdown()
    return batch, policy


def test_the_wrapped_env_marks_the_one_seat_that_acts_and_carries_the_state() -> None:
    batch, _ = collect(100)
    group = batch[mappo.GROUP]
    assert (group["mask"].sum(-1) == 1).all(), "a turn-based game: exactly one seat acts at each step"
    acting = group["mask"]
    assert group["observation", "observation"].shape[-1] == OBS_SIZE and batch["state"].shape == (100, STATE_SIZE)
    legal = group["action_mask"][acting]  # the acting seat's legal cards; a placeholder seat's mask is all True
    assert (legal.sum(-1) >= 1).all() and (legal.sum(-1) <= 4).all(), "auto_forced: every step is a lead (of a suit)"
    assert legal[torch.arange(len(legal)), group["action"][acting]].all(), "the card played is a legal one"
    assert (group["action_mask"][~acting]).all(), "TorchRL's placeholder for a seat that does not act"
    ends = batch["next", "done"].squeeze(-1)
    rewards = batch["next", mappo.GROUP, "reward"].squeeze(-1)
    assert ends.any() and (rewards[~ends] == 0).all() and rewards[ends].abs().sum() > 0, "counters at the deal's end"


def test_the_actor_learns_only_from_the_seats_that_acted() -> None:
    batch, policy = collect(120)
    args = mappo.Args()
    loss_module = mappo.make_loss(policy, mappo.StateCritic(4, 16), args)
    with torch.no_grad():
        loss_module.value_estimator(batch, params=loss_module.critic_network_params,
                                    target_params=loss_module.target_critic_network_params)
    before = [x.item() for x in mappo.mappo_losses(loss_module, batch)]
    placeholders = batch.clone()
    group = placeholders[mappo.GROUP]
    idle = ~group["mask"]
    group["action"][idle] = (group["action"][idle] + 7) % 52  # other cards where no seat chose: ignored
    group["sample_log_prob"][idle] = -3.0
    after = [x.item() for x in mappo.mappo_losses(loss_module, placeholders)]
    assert after == pytest.approx(before, abs=0.0)
    chosen = batch.clone()
    chosen[mappo.GROUP]["sample_log_prob"][chosen[mappo.GROUP]["mask"]] -= 0.5  # an acting seat's term: counted
    changed = [x.item() for x in mappo.mappo_losses(loss_module, chosen)]
    assert changed[0] != pytest.approx(before[0]) and changed[2] == pytest.approx(before[2])


def test_the_same_seed_trains_the_same_actor(tmp_path: Path) -> None:
    weights = []
    for k in range(2):
        path = tmp_path / f"run{k}" / "model.zip"
        mappo.main([*TINY, "--seed", "5", "--eval-deals", "0", "--model-path", str(path)])
        policy = load_policy(str(path))
        weights.append([w for layer in policy.layers for w in layer] + list(policy.head))
    assert all(np.array_equal(a, b) for a, b in zip(*weights))


def test_a_tiny_run_writes_an_actor_that_popejoan_evaluate_plays(tmp_path: Path) -> None:
    model = tmp_path / "mappo" / "model.zip"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "popejoan_env", "train-mappo", *TINY, "--eval-deals", "4",
                           "--eval-opponents", "random", "--model-path", str(model)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "240 decisions" in done.stdout and "random" in done.stdout
    meta = read_metadata(str(model))
    assert meta["algorithm"] == "torchrl_mappo" and meta["net_arch"] == [16, 16] and meta["timesteps"] == 240
    run = json.loads((model.parent / "run.json").read_text())
    assert run["versions"]["torchrl"] and run["evaluation"]["random"]["deals"] == 4
    evaluated = subprocess.run([sys.executable, "-m", "popejoan_env", "evaluate", str(model), "--deals", "50",
                                "--opponents", "random", "--quiet", "--out", str(tmp_path / "report")],
                               capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert evaluated.returncode == 0, evaluated.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["opponents"][0]["opponent"] == "random" and report["opponents"][0]["deals"] == 50


def test_without_torchrl_the_command_names_the_extra_in_one_line() -> None:
    script = ("import sys; sys.modules['torchrl'] = None\n"
              "from popejoan_env.training import run_command\n"
              "raise SystemExit(run_command('train-mappo', [], prog='popejoan train-mappo'))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "needs the 'train,marl' extra" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("flags, says", [
    # counted before any tensor is built (was: 65536 allocated a 17 GB actor, or ran for minutes)
    (["--hidden", "65536"], "--hidden 65,536 makes a network of"),
    (["--critic-hidden", "65536"], "--critic-hidden 65,536 makes a network of"),
    # one decision a batch has no spread to normalise its advantage by (was: an actor of NaN no loader reads)
    (["--frames-per-batch", "1", "--minibatch-size", "1"], "an integer 2..10,000,000 is needed"),
    # a path that names no file (was: 7 minutes of training, then a hidden .zip in the current directory)
    (["--model-path", ""], "--model-path must name a file"),
    (["--model-path", "models/"], "--model-path must name a file"),
    # an evaluation of nobody (was: accepted, and no evaluation made)
    (["--eval-opponents", "", "--eval-deals", "2"], "--eval-opponents names no player"),
    (["--eval-opponents", " , ", "--eval-deals", "2"], "--eval-opponents names no player"),
])
def test_flags_that_cannot_train_are_refused_in_one_line_before_any_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flags: list[str],
        says: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        mappo.run(flags, prog="popejoan train-mappo")
    err = capsys.readouterr().err
    assert exited.value.code == 2 and len(err.splitlines()) == 1 and says in err, err
    assert os.listdir(tmp_path) == [], "nothing is written"


def test_the_file_checked_is_the_file_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "actor.zip").mkdir()  # --model-path actor is saved as actor.zip: a directory there is refused first
    with pytest.raises(SystemExit) as exited:
        mappo.run(["--model-path", str(tmp_path / "actor"), "--eval-deals", "0"], prog="popejoan train-mappo")
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "actor.zip: it is a directory" in err, err
