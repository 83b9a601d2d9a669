"""The Gymnasium vector env for self-play (``envs.gymnasium_vector_env.PopeJoanVectorEnv``): spaces, observations and masks
against the scalar engine, per-seat credit summing to each seat's delta, same-step autoreset, seeding, bad input,
and a tiny ``training/cleanrl_ppo.py`` run."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from popejoan_env.errors import IllegalActionError, PopeJoanError
from popejoan_env.observation import OBS_SIZE, encode
from popejoan_env.players import make_player
from popejoan_env.nets.policy import read_metadata
from popejoan_env.envs.gymnasium_vector_env import MAX_ENVS, PopeJoanVectorEnv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def play_random(env: PopeJoanVectorEnv, steps: int, seed: int = 0):
    """Yield (actor, actions, step result) for ``steps`` random legal steps."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        actor = env.batch.to_act.copy()
        actions = env.random_actions(rng)
        yield actor, actions, env.step(actions)


def test_spaces_shapes_and_metadata() -> None:
    env = PopeJoanVectorEnv(num_envs=5, players=4, seed=1)
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert env.single_observation_space.shape == (OBS_SIZE,) and env.single_observation_space.dtype == np.float32
    assert env.observation_space.shape == (5, OBS_SIZE)
    assert env.single_action_space == spaces.Discrete(52)
    assert isinstance(env.action_space, spaces.MultiDiscrete) and env.action_space.shape == (5,)
    obs, infos = env.reset()
    assert obs.dtype == np.float32 and obs in env.observation_space
    assert infos["seat"].shape == (5,) and infos["action_mask"].shape == (5, 52)
    assert infos["action_mask"].dtype == bool
    for _, actions, (obs, rewards, terms, truncs, infos) in play_random(env, 30):
        assert actions in env.action_space and obs in env.observation_space
        assert rewards.shape == terms.shape == truncs.shape == (5,)
        assert terms.dtype == truncs.dtype == bool and not truncs.any()
        assert infos["seat_rewards"].shape == infos["final_delta"].shape == (5, 4)
        assert infos["winner"].shape == infos["deal_id"].shape == infos["skipped_deals"].shape == (5,)
    env.close()
    with pytest.raises(PopeJoanError):
        env.step(np.zeros(5, dtype=np.int64))


@pytest.mark.parametrize(("players", "rules"), [(3, "modern"), (4, "victorian"), (5, "modern"),
                                                (6, {"ace_high": True}), (8, "victorian")])
def test_observations_masks_and_seats_equal_the_scalar_engine(players: int, rules) -> None:
    env = PopeJoanVectorEnv(num_envs=4, players=players, rules=rules, seed=players)
    obs, infos = env.reset()
    for step in range(25):
        for i in range(4):
            deal = env.batch.to_deal(i)
            assert infos["seat"][i] == deal.to_act
            assert np.flatnonzero(infos["action_mask"][i]).tolist() == sorted(deal.legal_actions())
            np.testing.assert_array_equal(obs[i], encode(deal, deal.to_act))
        np.testing.assert_array_equal(env.action_masks(), infos["action_mask"])
        obs, _, _, _, infos = env.step(env.random_actions(np.random.default_rng(step)))


def test_observe_gives_any_seats_observation() -> None:
    env = PopeJoanVectorEnv(num_envs=3, players=5, seed=2)
    env.reset()
    seats = np.array([0, 3, 4])
    obs = env.observe(seats)
    for i, s in enumerate(seats):
        np.testing.assert_array_equal(obs[i], encode(env.batch.to_deal(i), int(s)))


@pytest.mark.parametrize(("players", "rules", "lone_leads"), [(4, "modern", True), (3, "victorian", True),
                                                              (7, "modern", False)])
def test_a_seats_credited_rewards_sum_to_its_delta(players: int, rules: str, lone_leads: bool) -> None:
    n = 6
    env = PopeJoanVectorEnv(num_envs=n, players=players, rules=rules, seed=5, lone_leads=lone_leads)
    env.reset()
    credited = np.zeros((n, players))
    decided = np.zeros((n, players), dtype=bool)
    ended = 0
    for actor, actions, (_, rewards, terms, _, infos) in play_random(env, 300, seed=1):
        decided[np.arange(n), actor] = True
        sr = infos["seat_rewards"]
        np.testing.assert_array_equal(rewards, sr[np.arange(n), actor])
        assert (sr[~decided] == 0).all()  # changes of a seat with no decision yet are held back
        credited += sr
        for i in np.flatnonzero(terms):
            delta = infos["final_delta"][i]
            np.testing.assert_array_equal(credited[i][decided[i]], delta[decided[i]])
            ended += 1
        credited[terms] = 0
        decided[terms] = False
        assert (infos["final_delta"][~terms] == 0).all() and (infos["winner"][~terms] == -1).all()
    assert ended > 20


def test_final_delta_and_winner_equal_the_scalar_engine_playing_the_same_card() -> None:
    env = PopeJoanVectorEnv(num_envs=8, players=4, seed=3)
    env.reset()
    rng = np.random.default_rng(4)
    checked = 0
    for _ in range(120):
        before = [env.batch.to_deal(i) for i in range(8)]
        actions = env.random_actions(rng)
        _, _, terms, _, infos = env.step(actions)
        for i in range(8):
            deal = before[i]
            deal.play(int(actions[i]))
            assert bool(terms[i]) == (deal.advance() == [])
            if terms[i]:
                assert infos["final_delta"][i].tolist() == deal.delta
                assert infos["winner"][i] == (-1 if deal.winner is None else deal.winner)
                checked += 1
    assert checked > 10


@pytest.mark.parametrize("session_length", [1, 3])
def test_same_step_autoreset_deals_the_next_deal_of_the_slot(session_length: int) -> None:
    env = PopeJoanVectorEnv(num_envs=4, players=4, seed=6, session_length=session_length)
    obs, infos = env.reset()
    assert env.batch.dealer.tolist() == [0, 1, 2, 3]  # slot i's first dealer is seat i mod players
    restarted = 0
    for _ in range(200):
        ids, dealers = infos["deal_id"].copy(), env.batch.dealer.copy()
        in_session, start = env.batch.deal_in_session.copy(), env.batch.balances_before.copy()
        obs, _, terms, _, infos = env.step(env.random_actions(np.random.default_rng(restarted)))
        moved = infos["deal_id"] != ids
        assert (moved == (terms | (infos["skipped_deals"] > 0))).all()
        for i in np.flatnonzero(terms):
            restarted += 1
            deal = env.batch.to_deal(i)  # the new deal, at its first decision
            assert env.batch.dealer[i] == (dealers[i] + 1 + infos["skipped_deals"][i]) % 4
            np.testing.assert_array_equal(obs[i], encode(deal, int(infos["seat"][i])))
            assert infos["action_mask"][i].any()
            if in_session[i] < session_length:  # the session goes on: balances carried
                assert (env.batch.balances_before[i] == start[i] + infos["final_delta"][i]).all()
            else:
                assert (env.batch.balances_before[i] == env.rules.start_counters).all()
    assert restarted > 20


def run_steps(env: PopeJoanVectorEnv, seed: int | None, steps: int = 40) -> list:
    """Observations, rewards and infos of ``steps`` steps with actions from a fixed generator."""
    obs, infos = env.reset(seed=seed)
    rng = np.random.default_rng(9)
    out = [obs, infos["seat"]]
    for _ in range(steps):
        obs, rewards, terms, _, infos = env.step(env.random_actions(rng))
        out += [obs, rewards, terms, infos["seat_rewards"], infos["final_delta"]]
    return out


def same(a: list, b: list) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def test_determinism_per_seed() -> None:
    one = run_steps(PopeJoanVectorEnv(num_envs=6, seed=11), None)
    assert same(one, run_steps(PopeJoanVectorEnv(num_envs=6, seed=11), None))
    assert same(one, run_steps(PopeJoanVectorEnv(num_envs=6), 11))  # reset(seed=) = the constructor's seed
    assert not same(one, run_steps(PopeJoanVectorEnv(num_envs=6), 12))
    env = PopeJoanVectorEnv(num_envs=6, seed=11)
    env.np_random.random()  # drawing from the generator before the first reset does not change the deals
    assert same(one, run_steps(env, None)) and env.np_random_seed == 11
    assert not same(one, run_steps(env, None))  # a reset without a seed goes on drawing from the generator
    assert same(one, run_steps(env, 11))


@pytest.mark.parametrize("kwargs", [
    {"num_envs": 0}, {"num_envs": -3}, {"num_envs": True}, {"num_envs": 2.0}, {"num_envs": MAX_ENVS + 1},
    {"players": 2}, {"players": 9}, {"players": "4"}, {"rules": "nope"}, {"rules": {"lead": "sideways"}},
    {"seed": -1}, {"seed": 1.5}, {"session_length": 0}, {"session_length": "2"}, {"lone_leads": "yes"},
])
def test_bad_settings_are_refused(kwargs: dict) -> None:
    with pytest.raises(PopeJoanError):
        PopeJoanVectorEnv(**kwargs)


def test_bad_calls_are_refused_and_change_nothing() -> None:
    env = PopeJoanVectorEnv(num_envs=3, players=4, seed=0)
    with pytest.raises(PopeJoanError, match="reset"):
        env.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(PopeJoanError, match="options"):
        env.reset(options={"players": 5})
    with pytest.raises(PopeJoanError):
        env.reset(seed=-2)
    obs, infos = env.reset(seed=0)
    legal = env.random_actions(np.random.default_rng(0))
    illegal = legal.copy()
    illegal[1] = int(np.flatnonzero(~infos["action_mask"][1])[0])
    for bad in (legal[:2], legal.astype(float), np.stack([legal, legal]), illegal, [20, 20, 20], "AC"):
        with pytest.raises(IllegalActionError):
            env.step(bad)
        np.testing.assert_array_equal(env.observe(), obs)
        np.testing.assert_array_equal(env.action_masks(), infos["action_mask"])
    for seats in (np.array([0, 1]), np.array([0, 1, 4]), np.array([0, -1, 2]), np.array([0.0, 1.0, 2.0])):
        with pytest.raises(PopeJoanError):
            env.observe(seats)
    after = env.step(legal)  # the refused calls left the deals as they were
    fresh = PopeJoanVectorEnv(num_envs=3, players=4, seed=0)
    fresh.reset()
    assert same(list(after[:4]), list(fresh.step(legal)[:4]))


def test_gymnasium_vector_wrappers_take_it() -> None:
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    env = RecordEpisodeStatistics(PopeJoanVectorEnv(num_envs=4, seed=0))
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    lengths = []
    for _ in range(40):
        _, _, terms, _, infos = env.step(env.unwrapped.random_actions(rng))
        if terms.any():
            lengths += infos["episode"]["l"][terms].tolist()
    assert lengths and min(lengths) >= 1


def load_script(name: str):
    """A training command's module (``training/<name>.py`` is a thin wrapper of it)."""
    from popejoan_env.training import COMMANDS

    module = next(c.module for c in COMMANDS.values() if c.script == f"{name}.py")
    return importlib.import_module(f"popejoan_env.training.{module}")


def test_advantages_follow_each_seats_own_decisions() -> None:
    advantages = load_script("cleanrl_ppo").seat_advantages
    # one slot; seats 0, 1, 0 decide; the deal ends in the third step
    col = lambda *x: np.array(x)[:, None]  # noqa: E731
    adv, complete = advantages(col(1.0, 2.0, 3.0), col(0.0, 0.0, 0.0), col(0, 1, 0), col(False, False, True), 1.0, 1.0)
    assert adv.ravel().tolist() == [4.0, 2.0, 3.0] and complete.all()  # seat 0: 1 + 3; seat 1: 2
    # no end in the rollout: seat 0's first decision bootstraps from its second; the open ones are left out
    adv, complete = advantages(col(1.0, 2.0, 3.0), col(0.5, 0.25, 1.0), col(0, 1, 0), col(False, False, False),
                               1.0, 0.5)
    assert adv.ravel().tolist() == [1.5, 0.0, 0.0] and complete.ravel().tolist() == [True, False, False]
    # a deal boundary cuts the chain: seat 0's decision before the end does not reach the next deal's
    adv, complete = advantages(col(1.0, 5.0), col(0.0, 0.0), col(0, 0), col(True, True), 1.0, 1.0)
    assert adv.ravel().tolist() == [1.0, 5.0] and complete.all()


def test_tiny_cleanrl_ppo_run_writes_a_model_that_plays(tmp_path) -> None:
    model = tmp_path / "run" / "model.zip"
    cmd = [sys.executable, os.path.join(ROOT, "training", "cleanrl_ppo.py"), "--total-timesteps", "2048",
           "--num-envs", "8", "--num-steps", "32", "--update-epochs", "1", "--hidden", "16", "--seed", "2",
           "--eval-deals", "2", "--eval-opponents", "random", "--model-path", str(model)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "steps/s" in done.stdout and "random" in done.stdout
    meta = read_metadata(str(model))
    assert meta["algorithm"] == "cleanrl_ppo" and meta["net_arch"] == [16, 16] and meta["timesteps"] >= 2048
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["timesteps"] >= 2048 and run["steps_per_s"] > 0 and set(run["evaluation"]) == {"random"}
    player = make_player(str(model), seed=0)  # the saved file is a player for the tournament and the envs
    env = PopeJoanVectorEnv(num_envs=1, seed=0)
    env.reset()
    from popejoan_env.seat_view import seat_view

    deal = env.batch.to_deal(0)
    assert player.act(seat_view(deal, deal.to_act)) in deal.legal_actions()


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copy_mid_game_goes_on_as_the_original_and_leaves_it_alone(how: str) -> None:
    env = PopeJoanVectorEnv(5, seed=4)
    _, infos = env.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(5):
        _, _, _, _, infos = env.step(np.array([rng.choice(np.flatnonzero(m)) for m in infos["action_mask"]]))
    twin = copy.deepcopy(env) if how == "deepcopy" else pickle.loads(pickle.dumps(env))
    masks = infos["action_mask"]
    first = np.array([np.flatnonzero(m)[0] for m in masks])
    twin.step(first)  # the twin runs ahead one step; the original is where it was
    np.testing.assert_array_equal(env.action_masks(), masks)
    ours = env.step(first)
    for step in range(40):
        actions = np.array([np.random.default_rng([step, i]).choice(np.flatnonzero(m))
                            for i, m in enumerate(ours[4]["action_mask"])])
        ours, theirs = env.step(actions), twin.step(actions)
        for a, b in zip(ours[:4], theirs[:4]):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ours[4]["seat"], theirs[4]["seat"])
