"""Ray RLlib's multi-agent env: the AEC env at mixed table sizes as one env.

``MixedTablesEnv`` holds one RLlib ``PettingZooEnv`` (RLlib's own wrapper of a
PettingZoo AEC env) per table size and deals every episode at a size drawn
from its own numpy ``Generator``; the agents are ``player_0 … player_7`` and
an episode uses the first ``n``.  Each seat's reward reaches that seat: the
AEC env accumulates every award and payment for every seat, and RLlib's
wrapper hands a seat its sum when it next acts and at the end of the deal, so
a seat's rewards over an episode sum to its delta (times ``reward_scale``).

The networks RLlib trains on it, the seat-to-module mapping and the export to
a model file are ``envs.rllib_policy``.  Importing this module imports ray
(``pip install 'popejoan[ray]'``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

from popejoan_env.envs.pettingzoo_aec import env as aec_env
from popejoan_env.errors import PopeJoanError
from popejoan_env.rules import MAX_PLAYERS, Rules, check_players, resolve_rules

AGENTS = [f"player_{i}" for i in range(MAX_PLAYERS)]
"""Every agent id an episode may use (a table of n seats uses the first n)."""


class MixedTablesEnv(MultiAgentEnv):
    """Pope Joan deals at table sizes drawn per episode, through RLlib's ``PettingZooEnv`` of the AEC env."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        # Each env runner and sub-env gets its own stream (RLlib passes their indices in its EnvContext).
        index = [int(getattr(config, name, 0) or 0) for name in ("worker_index", "vector_index")]
        config = dict(config or {})
        sizes = [int(n) for n in config.get("table_sizes", [4])]
        if not sizes:
            raise PopeJoanError("table_sizes must name at least one table size (3..8)")
        for n in sizes:
            check_players(n)
        self.rules: Rules = resolve_rules(config.get("rules", "modern"))
        self.table_sizes = sizes
        self.reward_scale = float(config.get("reward_scale", 1.0))
        self.tables = {n: PettingZooEnv(aec_env(players=n, rules=self.rules, auto_forced=True)) for n in set(sizes)}
        first = self.tables[sizes[0]]
        space = first.observation_spaces["player_0"]
        self.possible_agents = list(AGENTS)
        self.agents = []
        self.observation_spaces = {a: space for a in AGENTS}
        self.action_spaces = {a: first.action_spaces["player_0"] for a in AGENTS}
        self.observation_space = gym.spaces.Dict(self.observation_spaces)
        self.action_space = gym.spaces.Dict(self.action_spaces)
        seed = config.get("seed")
        self.rng = np.random.default_rng(None if seed is None else [int(seed), *index])
        self.table: PettingZooEnv = first

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Deal a new episode at a drawn table size; ``seed`` restarts the env's Generator."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        n = self.table_sizes[int(self.rng.integers(len(self.table_sizes)))]
        self.table = self.tables[n]
        self.agents = AGENTS[:n]
        obs, infos = self.table.reset(seed=int(self.rng.integers(2**63)), options=options)
        return obs, infos

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        """Play the acting seat's card; rewards (scaled) of the seats that report them."""
        obs, rewards, terminated, truncated, infos = self.table.step(action_dict)
        rewards = {a: float(r) * self.reward_scale for a, r in rewards.items()}
        if terminated.get("__all__") or truncated.get("__all__"):
            self.agents = []
        return obs, rewards, terminated, truncated, infos


__all__ = ["AGENTS", "MixedTablesEnv"]
