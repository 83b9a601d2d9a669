"""Edges of RLlib's MixedTablesEnv and configure: bad seeds and arguments refused by name, a refused reset
changing nothing, a step without the acting agent's card a PopeJoanError."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ray.rllib")

from popejoan_env.envs.rllib_env import MixedTablesEnv, configure  # noqa: E402
from popejoan_env.errors import PopeJoanError  # noqa: E402


# RLlib's MixedTablesEnv and configure: bad seeds and arguments refused by name; a refused reset changes nothing.

def test_refused_reset_changes_nothing():
    env = MixedTablesEnv({"seed": 1, "table_sizes": [3, 4, 5]})
    env.reset(seed=3)
    before = (env.rng.bit_generator.state, env.table, list(env.agents))
    for _ in range(10):
        with pytest.raises(PopeJoanError, match="balance"):
            env.reset(options={"balance": 3})
    assert before == (env.rng.bit_generator.state, env.table, list(env.agents))


@pytest.mark.parametrize("bad", [-1, 2.5, "3", True])
def test_reset_seed_refused(bad):
    env = MixedTablesEnv({"seed": 1})
    with pytest.raises(PopeJoanError, match="seed"):
        env.reset(seed=bad)


def test_reset_never_takes_the_callers_generator():
    env = MixedTablesEnv({"seed": 1})
    mine = np.random.default_rng(0)
    state = mine.bit_generator.state
    with pytest.raises(PopeJoanError, match="seed"):
        env.reset(seed=mine)
    assert mine.bit_generator.state == state and env.rng is not mine


@pytest.mark.parametrize("bad", [-1, 2.7, "abc"])
def test_config_seed_refused(bad):
    with pytest.raises(PopeJoanError, match="seed"):
        MixedTablesEnv({"seed": bad})


@pytest.mark.parametrize("kwargs", [{"net_arch": [1.5]}, {"net_arch": ["a"]}, {"net_arch": [10**9, 10**9]},
                                    {"snapshot_prob": "x"}, {"snapshot_prob": None}, {"seed": -1}, {"seed": "x"}],
                         ids=repr)
def test_configure_refuses(kwargs):
    from ray.rllib.algorithms.ppo import PPOConfig

    with pytest.raises(PopeJoanError):
        configure(PPOConfig(), **kwargs)


# MixedTablesEnv.step without the acting agent's card, or after the episode: a PopeJoanError, not a KeyError.

def test_step_needs_the_acting_agent():
    env = MixedTablesEnv({"seed": 1})
    obs, _ = env.reset(seed=2)
    (acting,) = obs
    others = [a for a in env.agents if a != acting]
    for bad in ({}, {others[0]: 3}, None, 5):
        with pytest.raises(PopeJoanError, match="agent to act"):
            env.step(bad)
    done = False
    while not done:
        (acting,) = obs
        obs, _, term, trunc, _ = env.step({acting: int(np.flatnonzero(obs[acting]["action_mask"])[0])})
        done = term["__all__"] or trunc["__all__"]
    with pytest.raises(PopeJoanError, match="over"):
        env.step({"player_0": 0})
