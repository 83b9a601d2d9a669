"""The single-agent Gymnasium view (popejoan_env.envs.gymnasium_env): API, masks, rewards, table sizes, opponents, seeding."""

from __future__ import annotations

import collections
import hashlib
import json
import warnings
from typing import Any

import numpy as np
import pytest

from popejoan_env.errors import IllegalActionError, PopeJoanError
from popejoan_env.observation import OBS_SIZE, decode
from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv, make_vec_env
from popejoan_env.opponents import OpponentMixError, parse_mix


def play_episode(env: PopeJoanGymEnv, rng: np.random.Generator, seed: int | None = None):
    """One episode with random legal actions: (observations, rewards, last info)."""
    obs, _ = env.reset(seed=seed)
    observations, rewards = [obs], []
    while True:
        legal = np.flatnonzero(env.action_masks())
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(legal)))
        observations.append(obs)
        rewards.append(reward)
        assert not truncated
        if terminated:
            return observations, rewards, info


def checker_warnings(check: Any, env: PopeJoanGymEnv, **kwargs: Any) -> list[str]:
    """Run an env checker; the warnings it raised, but for gymnasium's notice that an env built without
    ``gymnasium.make`` has no spec to test other render modes with."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check(env, **kwargs)
    return [str(w.message) for w in caught if "spec" not in str(w.message)]


@pytest.mark.parametrize("render_mode", [None, "ansi"])
def test_gymnasiums_env_checker_passes_on_the_env_as_shipped(render_mode: str | None) -> None:
    from gymnasium.utils.env_checker import check_env

    # The checker steps with unmasked random cards: without a wrapper they end episodes (illegal_action).
    env = PopeJoanGymEnv(players="3,5", opponents="random", render_mode=render_mode)
    assert checker_warnings(check_env, env) == []


def test_stable_baselines3s_env_checker_passes_on_the_env_as_shipped() -> None:
    pytest.importorskip("stable_baselines3", reason="pip install -e '.[train]'")
    from stable_baselines3.common.env_checker import check_env

    assert checker_warnings(check_env, PopeJoanGymEnv(players=4, opponents="stops_first")) == []


def test_spaces_and_observation_is_the_learners_view() -> None:
    env = PopeJoanGymEnv(players=5, opponents="stops_first")
    obs, info = env.reset(seed=0)
    assert obs.shape == (OBS_SIZE,) and obs.dtype == np.float32
    assert env.observation_space.contains(obs)
    assert env.action_space.n == 52
    view = decode(obs, env.action_masks().astype(np.int8))
    assert view.to_act == 0 and view.forced == -1 and view.players == 5
    assert set(view.legal) == set(np.flatnonzero(env.action_masks()).tolist())


@pytest.mark.parametrize("players", [3, 4, 6, 8])
def test_masks_are_the_learners_real_choices(players: int) -> None:
    env = PopeJoanGymEnv(players=players, opponents="random,lowest")
    rng = np.random.default_rng(players)
    for episode in range(40):
        env.reset(seed=episode)
        while True:
            mask = env.action_masks()
            deal, learner = env._deal, env._learner
            assert mask.dtype == bool and mask.shape == (52,)
            assert deal.to_act == learner and deal.forced < 0, "the learner is only asked to lead"
            assert sorted(np.flatnonzero(mask).tolist()) == sorted(deal.legal_actions())
            assert mask.sum() >= 2, "a lone legal lead is played automatically (lone_leads)"
            assert not mask[20], "the 8D is never legal"
            _, _, terminated, _, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
            if terminated:
                assert not env.action_masks().any()
                break


def test_lone_leads_off_asks_for_lone_leads_too() -> None:
    env = PopeJoanGymEnv(players=3, opponents="random", lone_leads=False)
    rng = np.random.default_rng(1)
    sizes = collections.Counter()
    for episode in range(60):
        env.reset(seed=episode)
        while True:
            mask = env.action_masks()
            sizes[int(mask.sum())] += 1
            if env.step(int(rng.choice(np.flatnonzero(mask))))[2]:
                break
    assert sizes[1] > 0


@pytest.mark.parametrize("deals", [1, 3])
def test_rewards_sum_to_the_learners_counters(deals: int) -> None:
    env = PopeJoanGymEnv(players=4, opponents="stops_first:1,random:1", deals=deals)
    rng = np.random.default_rng(2)
    for episode in range(60):
        _, rewards, info = play_episode(env, rng, seed=100 + episode)
        assert sum(rewards) == info["counters"]
        learner = info["learner"]
        if deals == 1:
            # the deal's delta includes the dressing (dealer), the turn-up, compartments and the settlement
            assert info["counters"] == env._deal.delta[learner]
        else:
            assert info["counters"] == env._deal.balances[learner] - env.rules.start_counters


def test_reward_scale_scales_rewards_not_counters() -> None:
    a = PopeJoanGymEnv(players=4, opponents="lowest")
    b = PopeJoanGymEnv(players=4, opponents="lowest", reward_scale=0.1)
    _, ra, ia = play_episode(a, np.random.default_rng(0), seed=7)
    _, rb, ib = play_episode(b, np.random.default_rng(0), seed=7)
    assert ia["counters"] == ib["counters"]
    assert np.allclose(np.array(ra) * 0.1, rb)


def test_mixed_table_sizes_share_one_observation_shape() -> None:
    env = PopeJoanGymEnv(players="3,5,8", opponents="random")
    rng = np.random.default_rng(3)
    seen = collections.Counter()
    for episode in range(90):
        observations, _, info = play_episode(env, rng, seed=episode)
        seen[info["players"]] += 1
        assert all(o.shape == (OBS_SIZE,) for o in observations)
        assert decode(observations[0]).players == info["players"]
    assert set(seen) == {3, 5, 8}
    assert min(seen.values()) >= 15


def test_learner_seat_and_opponents_are_drawn_from_the_pool() -> None:
    env = PopeJoanGymEnv(players=4, opponents="stops_first:0.75,random:0.25")
    rng = np.random.default_rng(4)
    names, seats = collections.Counter(), collections.Counter()
    for episode in range(200):
        _, _, info = play_episode(env, rng, seed=episode)
        seats[info["learner"]] += 1
        assert info["opponents"][info["learner"]] == "learner"
        names.update(n for n in info["opponents"] if n != "learner")
    assert set(seats) == {0, 1, 2, 3}
    share = names["stops_first"] / sum(names.values())
    assert 0.68 < share < 0.82


def test_opponent_mix_parsing_and_errors() -> None:
    assert parse_mix("stops_first:0.4,pool_hunter:0.2,random:0.1,self:0.3") == [
        ("stops_first", 0.4), ("pool_hunter", 0.2), ("random", 0.1), ("self", 0.3)]
    assert parse_mix({"a": 1, "b": 3}) == [("a", 0.25), ("b", 0.75)]
    assert parse_mix(["random", "lowest"]) == [("random", 0.5), ("lowest", 0.5)]
    with pytest.raises(OpponentMixError, match="not a number"):
        parse_mix("random:lots")
    with pytest.raises(OpponentMixError, match="positive, finite sum"):
        parse_mix("random:0")
    # Each weight finite, their sum not: the shares were 0 and the draw table NaN (a traceback, or a silent
    # batch env drawing from NaN).
    with pytest.raises(OpponentMixError, match="finite sum"):
        parse_mix("random:1e308,lowest:1e308")
    assert parse_mix("random:1e307,lowest:3e307") == [("random", 0.25), ("lowest", 0.75)]
    with pytest.raises(OpponentMixError, match="twice"):
        parse_mix("random,random")
    with pytest.raises(PopeJoanError, match="nobody|unknown player"):
        PopeJoanGymEnv(opponents="nobody:1")
    with pytest.raises(PopeJoanError, match="no learner snapshot"):
        PopeJoanGymEnv(opponents="self").reset(seed=0)


def test_an_illegal_card_ends_the_episode_with_the_penalty_and_says_so() -> None:
    env = PopeJoanGymEnv(players=4, opponents="random", reward_scale=0.5)
    rng = np.random.default_rng(8)
    for episode in range(30):
        env.reset(seed=episode)
        rewards = []
        for _ in range(int(rng.integers(0, 4))):  # a few legal cards first, so some counters have moved
            _, reward, terminated, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            rewards.append(reward)
            if terminated:
                break
        else:
            legal = np.flatnonzero(env.action_masks()).tolist()
            illegal = int(rng.choice(np.flatnonzero(~env.action_masks())))
            plays = list(env._deal.plays)
            obs, reward, terminated, truncated, info = env.step(np.int64(illegal))
            assert env._deal.plays == plays, "the illegal card is not played"
            assert terminated and not truncated
            assert info["illegal_action"] == illegal and info["legal"] == legal and info["winner"] is None
            # the penalty, and the counters moved since the last decision (the dressing, before the first)
            assert sum(rewards) + reward == (info["counters"] - 100.0) * 0.5
            assert env.observation_space.contains(obs) and not env.action_masks().any()
            with pytest.raises(PopeJoanError, match="episode is over"):
                env.step(legal[0])
    custom = PopeJoanGymEnv(players=3, opponents="random", illegal_reward=-7)
    custom.reset(seed=0)
    _, reward, _, _, info = custom.step(int(np.flatnonzero(~custom.action_masks())[0]))
    assert reward == info["counters"] - 7.0


@pytest.mark.parametrize("illegal_action", ["terminate", "raise"])
def test_actions_outside_the_action_space_are_refused_and_change_nothing(illegal_action: str) -> None:
    env = PopeJoanGymEnv(players=4, opponents="random", illegal_action=illegal_action)
    env.reset(seed=5)
    mask, plays = env.action_masks(), list(env._deal.plays)
    for action in (-1, 52, 1000, True, None, "AS", 2.0):
        with pytest.raises(IllegalActionError, match="card id 0..51"):
            env.step(action)
    assert np.array_equal(env.action_masks(), mask) and env._deal.plays == plays


def test_illegal_action_raise_refuses_an_illegal_card_and_changes_nothing() -> None:
    env = PopeJoanGymEnv(players=4, opponents="random", illegal_action="raise")
    env.reset(seed=5)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    plays = list(env._deal.plays)
    with pytest.raises(IllegalActionError, match="seat"):
        env.step(illegal)
    assert env._deal.plays == plays and env.action_masks().any()
    with pytest.raises(PopeJoanError, match="reset"):
        PopeJoanGymEnv(players=4).step(0)


def test_bad_illegal_action_options_are_refused() -> None:
    with pytest.raises(PopeJoanError, match="illegal_action must be one of"):
        PopeJoanGymEnv(illegal_action="ignore")
    for bad in (float("nan"), "much", None, True):
        with pytest.raises(PopeJoanError, match="illegal_reward"):
            PopeJoanGymEnv(illegal_reward=bad)


MASKED_PLAY_DIGEST = "e59fe81a20ebf6687f895609c1147cf37bcddde18e734ecf46a3753ea12ca3f6"
"""sha256 of ``masked_play_digest()``, recorded before illegal cards could end an episode (when they raised)."""


def masked_play_digest(**env_kwargs: Any) -> str:
    """sha256 over every observation, mask, reward and last ``info`` of 30 episodes of masked random play."""
    h = hashlib.sha256()
    env = PopeJoanGymEnv(players="3,4,6", opponents="random:1,stops_first:1", deals=2, **env_kwargs)
    rng = np.random.default_rng(0)
    for episode in range(30):
        obs, _ = env.reset(seed=episode if episode % 3 == 0 else None)
        h.update(obs.tobytes())
        while True:
            mask = env.action_masks()
            h.update(mask.tobytes())
            obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
            h.update(obs.tobytes())
            h.update(repr((float(reward), terminated, truncated)).encode())
            if terminated:
                h.update(json.dumps(info, sort_keys=True).encode())
                break
    return h.hexdigest()


def test_masked_play_is_unchanged_by_the_illegal_card_rule() -> None:
    # Every legal step gives what it gave before the rule existed, in either mode.
    assert masked_play_digest() == MASKED_PLAY_DIGEST
    assert masked_play_digest(illegal_action="raise") == MASKED_PLAY_DIGEST


def test_maskable_ppo_trains_the_same_model_whatever_illegal_cards_do() -> None:
    torch = pytest.importorskip("torch", reason="pip install torch==2.13.0 && pip install -e '.[train]'")
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="pip install -e '.[train]'")
    torch.set_num_threads(1)

    def train(illegal_action: str) -> tuple[list[np.ndarray], dict[str, Any]]:
        env = PopeJoanGymEnv(players=4, opponents="random", illegal_action=illegal_action)
        model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=2, seed=0,
                                        device="cpu", policy_kwargs=dict(net_arch=[16]))
        model.learn(256)
        buffer = model.rollout_buffer
        return ([buffer.observations, buffer.actions, buffer.rewards, buffer.action_masks],
                model.policy.state_dict())

    rollout, params = train("terminate")
    rollout_raise, params_raise = train("raise")  # "raise" is the step as it was before the rule
    assert all(np.array_equal(a, b) for a, b in zip(rollout, rollout_raise))
    assert params.keys() == params_raise.keys() and all(torch.equal(params[k], params_raise[k]) for k in params)


def test_unmasked_ppo_trains_on_the_view_and_meets_the_penalty() -> None:
    torch = pytest.importorskip("torch", reason="pip install torch==2.13.0 && pip install -e '.[train]'")
    sb3 = pytest.importorskip("stable_baselines3", reason="pip install -e '.[train]'")
    torch.set_num_threads(1)
    env = PopeJoanGymEnv(players=4, opponents="random")
    model = sb3.PPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu",
                    policy_kwargs=dict(net_arch=[16]))
    model.learn(64)
    assert (model.rollout_buffer.rewards == -100.0).any()  # a random card is mostly illegal


def test_same_seed_same_episodes_different_seed_different() -> None:
    def trace(seed: int) -> list:
        env = PopeJoanGymEnv(players="3,4", opponents="random:1,pimc:1")
        rng = np.random.default_rng(0)
        out = []
        for k in range(4):
            observations, rewards, info = play_episode(env, rng, seed=seed if k == 0 else None)
            out.append((np.concatenate(observations).tobytes(), tuple(rewards), info["learner"], info["players"]))
        return out

    assert trace(11) == trace(11)
    assert trace(11) != trace(12)


def test_vec_envs_expose_masks_for_maskable_ppo() -> None:
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    vec = make_vec_env(3, seed=0, vec_env="dummy", players=4, opponents="random")
    assert is_masking_supported(vec)
    vec.reset()
    masks = get_action_masks(vec)
    assert masks.shape == (3, 52) and masks.any(axis=1).all()
    vec.close()


@pytest.mark.parametrize("n_envs, seed, vec_env, said", [
    (0, 0, "dummy", "n_envs must be an integer from 1 to 65,536, got 0"),
    (-1, 0, "subproc", "n_envs must be an integer from 1 to 65,536, got -1"),
    (2.5, 0, "dummy", "n_envs must be an integer from 1 to 65,536, got 2.5"),
    ("2", 0, "dummy", "n_envs must be an integer from 1 to 65,536, got '2'"),
    (2, -1, "subproc", "a seed must be None or a non-negative integer, got -1"),
    (2, 0, "thread", "vec_env must be 'dummy' or 'subproc', got 'thread'"),
])
def test_make_vec_env_refuses_bad_arguments_before_building(n_envs: object, seed: object, vec_env: str,
                                                            said: str) -> None:
    """A bad count, seed or kind is a PopeJoanError naming it, raised before any env or worker process exists."""
    with pytest.raises(PopeJoanError) as err:
        make_vec_env(n_envs, seed=seed, vec_env=vec_env, players=4, opponents="random")  # type: ignore[arg-type]
    assert str(err.value) == said


def test_subproc_vec_env_works_with_masks() -> None:
    from sb3_contrib.common.maskable.utils import get_action_masks

    vec = make_vec_env(2, seed=0, vec_env="subproc", players=4, opponents="stops_first")
    try:
        vec.reset()
        for _ in range(20):
            masks = get_action_masks(vec)
            actions = [int(np.flatnonzero(m)[0]) for m in masks]
            vec.step(np.array(actions))
    finally:
        vec.close()


def test_self_play_snapshots_take_seats(tmp_path) -> None:
    from sb3_contrib import MaskablePPO

    from popejoan_env.nets.model_file import model_metadata, save_model

    env = PopeJoanGymEnv(players=4, opponents="random")
    model = MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=16, policy_kwargs=dict(net_arch=[16]), seed=0)
    path = save_model(model, tmp_path / "snap.zip", model_metadata("modern", [4], [16]))
    env = PopeJoanGymEnv(players=4, opponents="self", snapshots=[path], max_snapshots=2)
    rng = np.random.default_rng(6)
    for episode in range(10):
        _, rewards, info = play_episode(env, rng, seed=episode)
        assert sum(rewards) == info["counters"]
        assert sum(n.startswith("self:") for n in info["opponents"]) == 3
    for _ in range(2):
        env.add_snapshot(path)
    assert len(env.snapshot_paths) == 2  # the oldest left the pool
    with pytest.raises(PopeJoanError, match="rules"):
        PopeJoanGymEnv(players=4, rules="victorian", opponents="self", snapshots=[path])


def test_balances_start_as_in_a_session_or_drawn_from_a_range() -> None:
    env = PopeJoanGymEnv(players=4, opponents="random")
    env.reset(seed=0)
    start = env.rules.start_counters
    assert env._deal.balances_before == (start,) * 4  # before the dealer's dressing
    ranged = PopeJoanGymEnv(players=4, opponents="random", balance_range=(-5, 10))
    seen = set()
    for seed in range(20):
        ranged.reset(seed=seed)
        before = list(ranged._deal.balances_before)
        seen.update(before)
        _, rewards, info = play_episode(ranged, np.random.default_rng(seed))
        assert sum(rewards) == info["counters"] == ranged._deal.delta[info["learner"]]
    assert min(seen) >= -5 and max(seen) <= 10 and len(seen) > 5
    with pytest.raises(PopeJoanError, match="balance_range"):
        PopeJoanGymEnv(balance_range=(3, 1))
    with pytest.raises(PopeJoanError, match="observation's bound"):
        PopeJoanGymEnv(balance_range=(0, 2**20))  # the observation Box could not hold it
