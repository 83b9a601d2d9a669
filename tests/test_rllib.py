"""RLlib: the mixed-tables multi-agent env, the masking module and its export, and a short ``train_rllib.py`` run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from typing import Any

import numpy as np
import pytest

pytest.importorskip("ray", reason="Ray RLlib is not installed: pip install -e '.[ray]'")

import torch  # noqa: E402
from gymnasium import spaces  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402

from popejoan_env.observation import OBS_SIZE  # noqa: E402
from popejoan_env.players import make_player  # noqa: E402
from popejoan_env.nets.policy import load_policy, read_metadata  # noqa: E402
from popejoan_env.envs.rllib_env import AGENTS, MixedTablesEnv, configure  # noqa: E402
from popejoan_env.envs.rllib_policy import MaskedPolicyModule, SeatModules, export_policy  # noqa: E402
from popejoan_env.tournament import run_duplicate  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "training", "train_rllib.py")


def play_episode(env: MixedTablesEnv, rng: np.random.Generator) -> tuple[dict[str, float], list[int], int]:
    """One episode with random legal cards: each agent's summed rewards, the deal's deltas, the steps taken."""
    obs, _ = env.reset()
    totals: dict[str, float] = {}
    steps = 0
    while True:
        assert len(obs) == 1, obs.keys()  # one seat acts at a time
        (agent, o), = obs.items()
        legal = np.flatnonzero(o["action_mask"])
        assert len(legal) >= 1 and o["observation"].shape == (OBS_SIZE,)
        obs, rewards, terminated, truncated, _ = env.step({agent: int(rng.choice(legal))})
        steps += 1
        for a, r in rewards.items():
            totals[a] = totals.get(a, 0.0) + r
        if terminated["__all__"]:
            assert not obs or all(terminated[a] for a in obs)
            return totals, list(env.table.env.unwrapped.deal.delta), steps
        assert not truncated["__all__"]


def test_every_seat_earns_its_own_delta_at_every_table_size() -> None:
    env = MixedTablesEnv({"table_sizes": [3, 5, 8], "rules": "modern", "reward_scale": 0.1, "seed": 7})
    rng = np.random.default_rng(0)
    sizes = Counter()
    for _ in range(60):
        totals, delta, _ = play_episode(env, rng)
        n = len(delta)
        sizes[n] += 1
        assert set(totals) == set(AGENTS[:n])  # every seat heard its reward, nobody else
        np.testing.assert_allclose([totals[a] for a in AGENTS[:n]], np.array(delta) * 0.1, atol=1e-9)
    assert set(sizes) == {3, 5, 8}
    assert env.observation_space["player_7"] == env.observation_space["player_0"]


def test_the_seed_fixes_the_deals_and_the_table_sizes() -> None:
    def run(seed: int) -> list[tuple[int, bytes]]:
        env = MixedTablesEnv({"table_sizes": [3, 4, 6], "seed": seed})
        out = []
        for _ in range(8):
            obs, _ = env.reset()
            (agent, o), = obs.items()
            out.append((len(env.agents), o["observation"].tobytes()))
        return out

    assert run(3) == run(3)
    assert run(3) != run(4)


def _first_deals(config: Any, worker: int) -> list[tuple]:
    """The hands of each sub-env's first deal, as RLlib's env runner of index ``worker`` deals them (in this
    process: its env check's reset, then its own seeded one)."""
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

    runner = MultiAgentEnvRunner(config=config, worker_index=worker)
    try:
        runner._reset_envs(runner._ongoing_episodes, None, explore=True)
        return [tuple(env.unwrapped.table.env.unwrapped.deal.hands) for env in runner.env.envs]
    finally:
        runner.stop()


@pytest.mark.parametrize("seed", [None, 0])
def test_every_sub_env_of_every_env_runner_deals_its_own_deals(seed: int | None) -> None:
    # RLlib 2.60 builds a runner's sub-envs from one EnvContext (vector_index 0 for all), its env check resets each
    # with seed 42, and a runner seeds sub-env j of runner w with seed + w + j: restarted from the seed alone, the
    # sub-envs of a run dealt one sequence of deals (seed None), or runner 2's sub-env j runner 1's sub-env j + 1.
    from ray.rllib.algorithms.ppo import PPOConfig

    config = configure(PPOConfig(), players=[3, 4], seed=seed).env_runners(num_env_runners=2,
                                                                          num_envs_per_env_runner=3)
    deals = _first_deals(config, 1) + _first_deals(config, 2)
    assert len(set(deals)) == len(deals) == 6
    again = configure(PPOConfig(), players=[3, 4], seed=seed).env_runners(num_env_runners=2,
                                                                          num_envs_per_env_runner=3)
    if seed is not None:
        assert deals == _first_deals(again, 1) + _first_deals(again, 2), "the same seed, the same deals"
    else:  # a fresh seed each time (RLlib's env check seeds every sub-env with 42: unseeded, every run was one)
        assert again.seed != config.seed and _first_deals(again, 1) != deals[:3]


def test_the_env_refuses_bad_table_sizes() -> None:
    from popejoan_env.errors import PopeJoanError

    for bad in ([], [2], [9]):
        with pytest.raises(PopeJoanError):
            MixedTablesEnv({"table_sizes": bad})


def test_seat_modules_keep_main_at_a_seat_and_agree_with_themselves() -> None:
    mapping = SeatModules(snapshots=3, prob=0.5)
    counts = Counter()
    for e in range(2000):
        episode = f"episode-{e}"
        seats = [mapping.module(episode, a) for a in AGENTS[:3]]
        assert "main" in seats  # never a table of snapshots only
        assert seats == [mapping.module(episode, a) for a in AGENTS[:3]]
        counts.update(seats)
    share = 1 - counts["main"] / sum(counts.values())
    assert 0.25 < share < 0.40  # two seats of three at chance 0.5: a third of the seats
    assert {k for k in counts if k != "main"} == {"snapshot_0", "snapshot_1", "snapshot_2"}
    assert {SeatModules(0, 0.5).module("x", a) for a in AGENTS} == {"main"}
    assert {SeatModules(2, 0.0).module("x", a) for a in AGENTS} == {"main"}


def _module(arch: list[int]) -> tuple[MaskedPolicyModule, spaces.Dict]:
    env = MixedTablesEnv({"table_sizes": [4]})
    space = env.observation_space["player_0"]
    module = MaskedPolicyModule(observation_space=space, action_space=env.action_space["player_0"],
                                model_config={"net_arch": arch, "activation": "relu"})
    return module, space


def test_the_module_masks_illegal_cards_and_exports_the_same_network(tmp_path) -> None:
    torch.manual_seed(0)
    module, _ = _module([32, 16])
    env = MixedTablesEnv({"table_sizes": [4], "seed": 1})
    rows, masks = [], []
    rng = np.random.default_rng(1)
    for _ in range(5):
        obs, _ = env.reset()
        (agent, o), = obs.items()
        rows.append(o["observation"])
        masks.append(o["action_mask"])
        env.step({agent: int(rng.choice(np.flatnonzero(o["action_mask"])))})
    batch = {Columns.OBS: {"observation": torch.as_tensor(np.array(rows)),
                           "action_mask": torch.as_tensor(np.array(masks))}}
    out = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
    legal = np.array(masks) > 0
    probs = torch.softmax(out, -1).detach().numpy()
    assert np.all(probs[~legal] == 0.0) and np.allclose(probs.sum(-1), 1.0)
    values = module.compute_values(batch)
    assert values.shape == (5,)

    path = export_policy(module, tmp_path / "m.zip", rules="modern", table_sizes=[4], net_arch=[32, 16],
                         activation="relu", timesteps=0)
    policy = load_policy(path)
    assert read_metadata(path)["algorithm"] == "RLlib PPO"
    np.testing.assert_allclose(policy.logits(np.array(rows))[legal], out.detach().numpy()[legal], rtol=1e-5, atol=1e-5)


def test_configure_sets_up_a_fresh_ppo_config_that_trains_with_rllibs_env_check_on() -> None:
    import logging

    import ray
    from ray.rllib.algorithms.ppo import PPOConfig

    mine = []  # a hook of the researcher's own survives configure
    config = PPOConfig().callbacks(on_environment_created=lambda **kwargs: mine.append(1))
    config = configure(config, players=[3, 4], rules="victorian", seed=0, net_arch=[16], snapshots=1,
                       snapshot_prob=0.5)
    config = (config.env_runners(num_env_runners=0, num_envs_per_env_runner=1)
              .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1))
    assert config.disable_env_checking is False and config.policies_to_train == ["main"]
    assert config.env_config["table_sizes"] == [3, 4] and config.env_config["rules"]["preset"] == "victorian"
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=1, include_dashboard=False, logging_level=logging.ERROR)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        algo = config.build_algo()
        assert mine and torch.get_num_threads() == 1  # the env runner (here, this process) got one thread
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled"] >= 128 and "main" in result["learners"]
        module = algo.get_module("main")
        assert isinstance(module, MaskedPolicyModule) and set(algo.config.policies) == {"main", "snapshot_0"}
        algo.stop()
    finally:
        torch.set_num_threads(threads)
        if started:
            ray.shutdown()


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"players": [2]}, "players"), ({"rules": "georgian"}, "georgian"), ({"net_arch": [0]}, "net_arch"),
    ({"activation": "gelu"}, "activation"), ({"snapshots": -1}, "snapshots"), ({"snapshot_prob": 2}, "snapshot_prob"),
    ({"torch_threads": 0}, "torch_threads"),
])
def test_configure_refuses_bad_arguments_clearly(kwargs: dict[str, Any], says: str) -> None:
    from ray.rllib.algorithms.ppo import PPOConfig

    from popejoan_env.errors import PopeJoanError

    with pytest.raises(PopeJoanError, match=says):
        configure(PPOConfig(), **kwargs)


def _run(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@pytest.mark.parametrize("flags, says", [
    (["--players", "3,9"], "players"),
    (["--players", "four"], "--players"),
    (["--net-arch", "64,x"], "--net-arch"),
    (["--activation", "gelu"], "--activation"),
    (["--snapshot-prob", "1.5"], "--snapshot-prob"),
    (["--minibatch-size", "8192"], "--minibatch-size"),
    (["--num-env-runners", "-1"], "--num-env-runners"),
    (["--eval-opponents", "nobody"], "nobody"),
    (["--eval-deals", "1"], "--eval-deals"),
    (["--restore", "/no/such/checkpoint"], "--restore"),
    (["--preset", "georgian"], "georgian"),
    (["--total-timesteps", "many"], "--total-timesteps"),
    (["--address", "bogus"], "a Ray address is"),
    (["--address", "127.0.0.1:1"], "cannot reach Ray at 127.0.0.1:1"),
])
def test_bad_flags_are_one_line_and_exit_2_before_training_starts(flags: list[str], says: str, tmp_path) -> None:
    done = _run(["--output-dir", str(tmp_path), *flags], timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1 and says in done.stderr and "Traceback" not in done.stderr
    assert not os.listdir(tmp_path)  # nothing written


def test_a_short_run_at_three_table_sizes_yields_a_player_for_each(tmp_path) -> None:
    done = _run(["--output-dir", str(tmp_path), "--run-name", "r", "--players", "3,5,8", "--total-timesteps", "2048",
                 "--train-batch-size", "1024", "--minibatch-size", "256", "--num-epochs", "2", "--net-arch", "32",
                 "--num-envs-per-env-runner", "8", "--snapshots", "1", "--snapshot-interval", "1",
                 "--eval-deals", "0", "--seed", "3"])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run_dir = tmp_path / "r"
    run = json.loads((run_dir / "run.json").read_text())
    assert run["env_steps"] >= 2048 and run["iterations"] >= 2 and run["steps_per_s"] > 0
    assert [h["env_steps"] for h in run["history"]] == sorted(h["env_steps"] for h in run["history"])
    assert os.path.isdir(run["checkpoint"]) and any(f.startswith("events.") for f in os.listdir(run_dir / "tb"))
    meta = read_metadata(str(run_dir / "model.zip"))
    assert meta["players"] == [3, 5, 8] and meta["net_arch"] == [32] and meta["algorithm"] == "RLlib PPO"
    player = make_player(str(run_dir / "model.zip"), seed=0)
    for seats in (3, 5, 8):  # the tournament refuses any illegal card, so finishing is the proof
        result = run_duplicate([player, "random"], deals=3, seed=seats, seats=seats)
        assert result.decisions[0] > 0

    # the checkpoint resumes: one more iteration from where the run stopped
    again = _run(["--output-dir", str(tmp_path), "--run-name", "r2", "--players", "3,5,8", "--total-timesteps", "1024",
                  "--train-batch-size", "1024", "--minibatch-size", "256", "--num-epochs", "1", "--net-arch", "32",
                  "--num-envs-per-env-runner", "8", "--snapshots", "1", "--eval-deals", "0", "--seed", "3",
                  "--restore", run["checkpoint"]])
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    resumed = json.loads((tmp_path / "r2" / "run.json").read_text())
    assert resumed["env_steps"] > run["env_steps"]  # the sampled-steps counter came back with the checkpoint
