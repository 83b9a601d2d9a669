"""Ray RLlib's multi-agent env: the AEC env at mixed table sizes as one env.

``MixedTablesEnv`` holds one RLlib ``PettingZooEnv`` (RLlib's own wrapper of a
PettingZoo AEC env) per table size and deals every episode at a size drawn
from its own numpy ``Generator``; the agents are ``player_0 … player_7`` and
an episode uses the first ``n``.  Each seat's reward reaches that seat: the
AEC env accumulates every award and payment for every seat, and RLlib's
wrapper hands a seat its sum when it next acts and at the end of the deal, so
a seat's rewards over an episode sum to its delta (times ``reward_scale``).

The networks RLlib trains on it, the seat-to-module mapping and the export to
a model file are ``envs.rllib_policy``.  ``configure`` sets up a researcher's
own ``PPOConfig`` (or any new-API-stack ``AlgorithmConfig``) with all of it.
Importing this module imports ray (``pip install 'popejoan[ray]'``).
"""

from __future__ import annotations

import functools
import numbers
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

from popejoan_env.envs.pettingzoo_aec import env as aec_env
from popejoan_env.checks import as_int, as_seed, brief, check_reward_scale
from popejoan_env.envs.gymnasium_env import table_sizes
from popejoan_env.errors import GameOverError, IllegalActionError, PopeJoanError
from popejoan_env.rules import MAX_PLAYERS, Rules, RulesLike, check_players, resolve_rules

AGENTS = [f"player_{i}" for i in range(MAX_PLAYERS)]
"""Every agent id an episode may use (a table of n seats uses the first n)."""


class MixedTablesEnv(MultiAgentEnv):
    """Pope Joan deals at table sizes drawn per episode, through RLlib's ``PettingZooEnv`` of the AEC env."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        # Each env runner and sub-env gets its own stream: [the runner's index, the sub-env's] (``sub_env``).
        self.index = (int(getattr(config, "worker_index", 0) or 0), sub_env(config))
        config = dict(config or {})
        sizes = list(table_sizes(config.get("table_sizes", [4])))  # 4.9 is refused, never read as 4
        self.rules: Rules = resolve_rules(config.get("rules", "modern"))
        self.table_sizes = sizes
        self.reward_scale = check_reward_scale(config.get("reward_scale", 1.0))
        self.tables = {n: PettingZooEnv(aec_env(players=n, rules=self.rules, auto_forced=True)) for n in set(sizes)}
        first = self.tables[sizes[0]]
        space = first.observation_spaces["player_0"]
        self.possible_agents = list(AGENTS)
        self.agents = []
        self.observation_spaces = {a: space for a in AGENTS}
        self.action_spaces = {a: first.action_spaces["player_0"] for a in AGENTS}
        self.observation_space = gym.spaces.Dict(self.observation_spaces)
        self.action_space = gym.spaces.Dict(self.action_spaces)
        seed = as_seed(config.get("seed"))  # 2.7 is refused, never read as 2; so are -1 and "abc"
        self.rng = np.random.default_rng(None if seed is None else [seed, *self.index])
        self.table: PettingZooEnv = first

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Deal a new episode at a drawn table size; ``seed`` restarts the env's Generator, with the env's runner
        and sub-env indices (RLlib's env check resets every sub-env with seed 42, and its runners seed sub-env j
        of runner w with seed + w + j: from the seed alone, sub-envs dealt the same deals).  A refused reset (a
        bad seed or bad options) changes nothing: not the table, not the agents, not the Generator."""
        seed = as_seed(seed)
        rng = np.random.default_rng([seed, *self.index]) if seed is not None else self.rng
        saved = rng.bit_generator.state
        try:
            n = self.table_sizes[int(rng.integers(len(self.table_sizes)))]
            table = self.tables[n]
            obs, infos = table.reset(seed=int(rng.integers(2**63)), options=options)
        except BaseException:
            rng.bit_generator.state = saved
            raise
        self.rng, self.table, self.agents = rng, table, AGENTS[:n]
        return obs, infos

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        """Play the acting seat's card; rewards (scaled) of the seats that report them."""
        aec = self.table.env
        if not aec.agents:
            raise GameOverError("the episode is over; call reset()")
        acting = aec.agent_selection
        if not isinstance(action_dict, Mapping) or acting not in action_dict:
            # RLlib's wrapper would raise a bare KeyError of the acting agent
            given = sorted(map(str, action_dict)) if isinstance(action_dict, Mapping) else action_dict
            raise IllegalActionError(f"step needs the card of {acting}, the agent to act; got actions for "
                                     f"{brief(given)}")
        obs, rewards, terminated, truncated, infos = self.table.step(action_dict)
        rewards = {a: float(r) * self.reward_scale for a, r in rewards.items()}
        # ``agents`` keeps the table's seats until the next reset: the last step's observations are theirs
        # (RLlib's env check requires every observed agent among ``agents``).
        return obs, rewards, terminated, truncated, infos


SUB_ENVS = "_popejoan_sub_envs"
"""The attribute of an RLlib ``EnvContext`` counting the sub-envs built from it (``sub_env``)."""


def sub_env(context: Any) -> int:
    """This sub-env's number in its env runner: its ``vector_index`` plus the sub-envs built before it from the same
    ``EnvContext`` object (RLlib 2.60 builds every sub-env of a runner from one context whose ``vector_index`` is
    0); 0 for a plain mapping.  A runner that rebuilds its envs makes a new context and counts from 0 again."""
    index = int(getattr(context, "vector_index", 0) or 0)
    if not hasattr(context, "worker_index"):  # a plain mapping: one env of its own
        return index
    built = getattr(context, SUB_ENVS, 0)
    setattr(context, SUB_ENVS, built + 1)
    return index + built


def configure(
    config: Any,
    players: int | Sequence[int] | str = 4,
    rules: RulesLike = "modern",
    *,
    reward_scale: float = 1.0,
    seed: int | None = None,
    net_arch: Sequence[int] = (128, 128),
    activation: str = "tanh",
    snapshots: int = 0,
    snapshot_prob: float = 0.0,
    torch_threads: int | None = 1,
) -> Any:
    """Set up an RLlib ``AlgorithmConfig`` (a ``PPOConfig``) for Pope Joan self-play; returns the config.

    ::

        from ray.rllib.algorithms.ppo import PPOConfig
        from popejoan_env.envs.rllib_env import configure

        config = configure(PPOConfig(), players=[3, 4, 5], rules="modern", seed=0)
        algo = config.training(lr=3e-4, train_batch_size_per_learner=4000).build_algo()
        print(algo.train()["env_runners"]["episode_return_mean"])

    What it sets, and nothing else (the PPO settings, env runners and learners stay yours):

    * the env: ``MixedTablesEnv`` with ``env_config`` (table sizes ``players``, ``rules``,
      ``reward_scale``, ``seed``: the deals of every env runner follow it); RLlib's env check stays on
      (an unmasked card it samples ends the episode: the AEC env's ``env()`` rule);
    * the torch framework and one module per policy, ``MaskedPolicyModule`` (masked logits, its own
      critic; ``net_arch`` and ``activation``), whose actor ``rllib_policy.export_policy`` writes as a
      model file ``make_player`` plays;
    * the agents-to-modules mapping: every seat plays ``main`` (self-play, shared weights); with
      ``snapshots=K``, each seat but one plays, with chance ``snapshot_prob``, one of the frozen
      ``snapshot_0..K-1`` (``SeatModules``; only ``main`` trains; refreshing them with ``main``'s
      weights is the training loop's job, as ``training/train_rllib.py`` does);
    * ``torch_threads`` torch threads in every env runner (one by default: on a busy machine two are
      several times slower; ``None`` leaves torch alone), added to any ``on_environment_created`` hook.

    ``seed`` also seeds RLlib (``debugging(seed=...)``); ``None`` draws a fresh one (RLlib's env check resets
    every sub-env with seed 42, so an unseeded RLlib would deal every run the same deals).  Bad arguments raise a
    ``PopeJoanError``.
    """
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from popejoan_env.envs.rllib_policy import (
        ACTIVATIONS, MaskedPolicyModule, SeatModules, module_ids, set_torch_threads,
    )

    from popejoan_env.nets.model_file import MAX_NETWORK_VALUES, mlp_values
    from popejoan_env.observation import OBS_SIZE

    sizes = list(table_sizes(players))
    rules_dict = resolve_rules(rules).to_dict()
    seed = as_seed(seed)
    if seed is None:
        seed = secrets.randbits(31)
    arch = [as_int(w) for w in net_arch] if isinstance(net_arch, (list, tuple)) else []
    if not arch or any(w is None or w < 1 for w in arch):  # 1.5 is refused, never read as 1
        raise PopeJoanError(f"net_arch must be a list of layer widths (positive integers), got {brief(net_arch)}")
    if mlp_values([OBS_SIZE, *arch, 52]) > MAX_NETWORK_VALUES:  # counted before RLlib builds it
        raise PopeJoanError(f"net_arch {brief(net_arch)} makes an actor of more than {MAX_NETWORK_VALUES:,} values, "
                            "which no model file holds (MAX_NETWORK_VALUES): choose narrower layers")
    if activation not in ACTIVATIONS:
        raise PopeJoanError(f"activation must be one of {sorted(ACTIVATIONS)}, got {brief(activation)}")
    if type(snapshots) is not int or snapshots < 0:
        raise PopeJoanError(f"snapshots must be a non-negative integer, got {brief(snapshots)}")
    if isinstance(snapshot_prob, bool) or not isinstance(snapshot_prob, numbers.Real) \
            or not 0.0 <= float(snapshot_prob) <= 1.0:
        raise PopeJoanError(f"snapshot_prob must lie in 0..1, got {brief(snapshot_prob)}")
    if torch_threads is not None and (type(torch_threads) is not int or torch_threads < 1):
        raise PopeJoanError(f"torch_threads must be None or a positive integer, got {brief(torch_threads)}")
    modules = module_ids(snapshots)
    model_config = {"net_arch": arch, "activation": activation}
    config = (
        config.environment(MixedTablesEnv, env_config={
            "table_sizes": sizes, "rules": rules_dict, "reward_scale": check_reward_scale(reward_scale), "seed": seed,
        })
        .framework("torch")
        .multi_agent(policies=set(modules), policy_mapping_fn=SeatModules(snapshots, float(snapshot_prob)),
                     policies_to_train=["main"])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            m: RLModuleSpec(module_class=MaskedPolicyModule, model_config=model_config) for m in modules
        }))
    )
    if torch_threads is not None:
        hooks = config.callbacks_on_environment_created
        hooks = [] if hooks is None else list(hooks) if isinstance(hooks, (list, tuple)) else [hooks]
        config = config.callbacks(on_environment_created=[*hooks, functools.partial(set_torch_threads,
                                                                                     threads=torch_threads)])
    return config.debugging(seed=seed)


__all__ = ["AGENTS", "MixedTablesEnv", "configure"]
