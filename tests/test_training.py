"""Training end to end (a tiny run as a subprocess), loading models as players, refusing bad model files,
(the shipped network: ``test_shipped.py``)."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from popejoan_env.errors import PopeJoanError
from popejoan_env.observation import OBS_VERSION, decode
from popejoan_env.players import make_player
from popejoan_env.nets.model_file import ModelFileError, ModelMismatchError
from popejoan_env.nets.policy import read_metadata
from popejoan_env.players.learned import LearnedPlayer, load_player
from popejoan_env.nets.model_file import META_NAME

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> str:
    """Train a few hundred steps with tiny settings through the command line; returns the run directory."""
    out = tmp_path_factory.mktemp("models")
    cmd = [
        sys.executable, os.path.join(ROOT, "training", "train_ppo.py"),
        "--run-name", "tiny", "--output-dir", str(out), "--seed", "3",
        "--total-timesteps", "512", "--n-envs", "2", "--n-steps", "128", "--batch-size", "64", "--n-epochs", "1",
        "--net-arch", "16", "--opponents", "random:0.5,self:0.5", "--players", "3,4",
        "--imitate-deals", "0", "--actor", "mlp",
        "--snapshot-interval", "256", "--checkpoint-interval", "256",
        "--eval-interval", "256", "--eval-deals", "3", "--eval-opponents", "random",
        "--final-eval-deals", "3", "--final-eval-opponents", "random,lowest", "--no-progress",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "against the scripted players" in done.stdout
    return str(out / "tiny")


def test_tiny_run_writes_model_run_json_checkpoints_and_logs(tiny_run: str) -> None:
    run = json.load(open(os.path.join(tiny_run, "run.json")))
    assert run["timesteps"] >= 512
    assert run["obs_version"] == OBS_VERSION
    assert run["rules"]["preset"] == "modern"
    assert run["seed"] == 3 and run["args"]["players"] == "3,4"
    assert run["package_version"]
    assert run["learner_steps_per_s"] > 0
    assert set(run["final_evaluation"]) == {"random", "lowest"}
    assert run["evaluations"] and run["evaluations"][0]["timesteps"] >= 256
    assert 0 < run["evaluations"][0]["train_seconds"] <= run["wall_seconds"]["train"]
    with open(os.path.join(tiny_run, run["learning_curve"]), "rb") as curve:  # written by the run itself
        assert run["learning_curve"] == "learning_curve.png" and curve.read(8) == b"\x89PNG\r\n\x1a\n"
    assert glob.glob(os.path.join(tiny_run, "checkpoints", "step_*.zip"))
    assert glob.glob(os.path.join(tiny_run, "checkpoints", "snapshot_*.zip"))
    assert glob.glob(os.path.join(tiny_run, "tb", "events.out.tfevents.*"))
    meta = read_metadata(os.path.join(tiny_run, "model.zip"))
    assert meta["obs_version"] == OBS_VERSION and meta["players"] == [3, 4] and meta["net_arch"] == [16]


@pytest.mark.parametrize("players", [3, 5, 8])
def test_saved_model_plays_legal_moves_at_any_seat_of_the_aec_env(tiny_run: str, players: int) -> None:
    from popejoan_env.envs.pettingzoo_aec import raw_env

    model = load_player(os.path.join(tiny_run, "model.zip"), seed=0, rules="modern")
    other = make_player("random", seed=1)
    env = raw_env(players=players, rules="modern")
    for episode in range(3):
        env.reset(seed=episode)
        learned_agent = env.possible_agents[episode % players]
        for agent in env.agent_iter():
            obs, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            player = model if agent == learned_agent else other
            action = player.act(env.seat_view(agent))
            assert obs["action_mask"][action] == 1
            env.step(action)  # raw_env raises on an illegal card


def test_model_sits_in_every_seat_through_make_player(tiny_run: str) -> None:
    from popejoan_env.envs.pettingzoo_aec import raw_env

    path = os.path.join(tiny_run, "model.zip")
    player = make_player(path, seed=0)
    assert isinstance(player, LearnedPlayer) and player.name == "tiny"
    env = raw_env(players=4)
    env.reset(seed=9)
    for agent in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else player.act(env.seat_view(agent)))


def test_checkpoint_of_another_run_loads_and_agrees_with_sb3(tiny_run: str) -> None:
    from sb3_contrib import MaskablePPO

    from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv

    ckpt = sorted(glob.glob(os.path.join(tiny_run, "checkpoints", "step_*.zip")))[-1]
    player = load_player(ckpt)
    sb3 = MaskablePPO.load(ckpt, device="cpu")
    env = PopeJoanGymEnv(players=4, opponents="random")
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        mask = env.action_masks()
        mine = player.act(decode(obs, mask.astype(np.int8)))
        theirs, _ = sb3.predict(obs, action_masks=mask, deterministic=True)
        assert mine == int(theirs)


def test_every_flag_has_help_and_bad_flags_are_refused_clearly(tmp_path) -> None:
    script = os.path.join(ROOT, "training", "train_ppo.py")
    helps = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True, timeout=60)
    assert helps.returncode == 0
    text = " ".join(helps.stdout.split())
    for flag in ("--preset", "--players", "--opponents", "--total-timesteps", "--n-envs", "--vec-env", "--seed",
                 "--net-arch", "--learning-rate", "--n-steps", "--batch-size", "--n-epochs", "--gamma",
                 "--ent-coef", "--eval-interval", "--eval-deals", "--snapshot-interval", "--torch-threads",
                 "--output-dir", "--run-name"):
        assert flag in text
    assert "comma list such as 3,4,5" in text and "frozen snapshot of the learner" in text
    for flags, message in ((["--preset", "edwardian"], "unknown rules preset"),
                           (["--players", "9"], "players must be"),
                           (["--opponents", "nobody:1", "--total-timesteps", "1000"], "unknown player"),
                           (["--run-name", "../elsewhere"], "--run-name must be a plain name"),
                           (["--preset", "modern,modern", "--total-timesteps", "0"], "a comma list of different"),
                           (["--preset", "modern,victorian", "--total-timesteps", "1000"], "imitation alone"),
                           (["--anchor-kl", "0.5"], "unrecognized arguments: --anchor-kl")):
        done = subprocess.run([sys.executable, script, "--output-dir", str(tmp_path), *flags],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and message in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
        assert not os.listdir(tmp_path), "nothing is written before the flags are checked"


def _rewrite(src: str, dst: str, replace: dict[str, bytes | None]) -> None:
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, "w") as b:
        for name in a.namelist():
            if name in replace:
                if replace[name] is not None:
                    b.writestr(name, replace[name])
            else:
                b.writestr(name, a.read(name))


def test_bad_model_files_give_clear_errors(tiny_run: str, tmp_path) -> None:
    good = os.path.join(tiny_run, "model.zip")
    meta = read_metadata(good)

    with pytest.raises(ModelFileError, match="does not exist"):
        load_player(tmp_path / "missing.zip")
    text = tmp_path / "notes.zip"
    text.write_text("these are not the weights you are looking for")
    with pytest.raises(ModelFileError, match="not a readable model file"):
        load_player(text)
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(open(good, "rb").read()[: os.path.getsize(good) // 2])
    with pytest.raises(ModelFileError, match="not a (readable )?model file"):
        load_player(truncated)
    plain = tmp_path / "plain_sb3.zip"
    _rewrite(good, str(plain), {META_NAME: None})
    assert read_metadata(plain)["plain_sb3"] and load_player(plain)  # a plain SB3 zip loads (tests/test_sb3_zip.py)
    damaged = tmp_path / "damaged.zip"
    _rewrite(good, str(damaged), {"policy.pth": b"\x00garbage" * 100})
    with pytest.raises(ModelFileError, match="weights"):
        load_player(damaged)
    old = tmp_path / "old_obs.zip"
    _rewrite(good, str(old), {META_NAME: json.dumps({**meta, "obs_version": OBS_VERSION - 1}).encode()})
    with pytest.raises(ModelMismatchError, match="observation version"):
        load_player(old)
    with pytest.raises(ModelMismatchError, match="victorian"):
        load_player(good, rules="victorian")
    with pytest.raises(ModelMismatchError, match="rules"):
        load_player(good, rules={"preset": "modern", "ace_high": True})
    # a caller that does not state the rules: the observation's rule flags give the game away
    from popejoan_env.envs.pettingzoo_aec import raw_env

    env = raw_env(players=4, rules="victorian")
    env.reset(seed=0)
    with pytest.raises(ModelMismatchError, match="victorian"):
        load_player(good).act(env.seat_view(env.agent_selection))
    # through the player factory, and as a PopeJoanError (a ValueError) for callers that catch those
    with pytest.raises(PopeJoanError):
        make_player(str(truncated))
    player = load_player(good)
    with pytest.raises(PopeJoanError, match="observation"):
        player.act({"observation": np.zeros(10, np.float32), "action_mask": np.ones(52, np.int8)})
    env = raw_env(players=4, rules="modern")
    env.reset(seed=0)
    idle = next(a for a in env.agents if a != env.agent_selection)
    with pytest.raises(PopeJoanError, match="no legal card"):
        player.act(env.seat_view(idle))


def test_interval_zero_means_none_even_when_the_last_rollout_overshoots(tmp_path) -> None:
    """--eval-interval 0 and --checkpoint-interval 0: no periodic evaluation and no checkpoint, though a rollout of
    2 x 128 steps passes ten times a total of 20 (each once fired there)."""
    from popejoan_env.training import ppo

    run = ppo.main(["--run-name", "none", "--output-dir", str(tmp_path), "--seed", "3", "--total-timesteps", "20",
                    "--n-envs", "2", "--n-steps", "128", "--batch-size", "64", "--n-epochs", "1", "--net-arch", "8",
                    "--opponents", "random", "--imitate-deals", "0", "--actor", "mlp", "--eval-interval", "0",
                    "--checkpoint-interval", "0", "--eval-deals", "2", "--eval-opponents", "random",
                    "--final-eval-deals", "0", "--no-progress", "--no-tensorboard"])
    assert run["timesteps"] == 256
    assert run["evaluations"] == []
    assert not glob.glob(os.path.join(tmp_path, "none", "checkpoints", "step_*.zip"))
