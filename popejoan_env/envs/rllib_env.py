"""Ray RLlib adapters: the AEC env at mixed table sizes as one multi-agent env, and a masking policy network.

``MixedTablesEnv`` holds one RLlib ``PettingZooEnv`` (RLlib's own wrapper of a
PettingZoo AEC env) per table size and deals every episode at a size drawn
from its own numpy ``Generator``; the agents are ``player_0 … player_7`` and
an episode uses the first ``n``.  Each seat's reward reaches that seat: the
AEC env accumulates every award and payment for every seat, and RLlib's
wrapper hands a seat its sum when it next acts and at the end of the deal, so
a seat's rewards over an episode sum to its delta (times ``reward_scale``).

``MaskedPolicyModule`` is the RLModule PPO trains: an actor MLP and a critic
MLP on the observation, the action mask applied to the logits (an illegal
card gets probability 0, in sampling, inference and the loss alike).  Its
actor keeps Stable-Baselines3's layer names, so ``export_policy`` writes a
model file that ``make_player`` and ``training/benchmark.py`` load like any
other (``players.learned``).

Importing this module imports ray (``pip install -e '.[ray]'``).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
from torch import nn

from popejoan_env.envs.pettingzoo_aec import env as aec_env
from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.errors import PopeJoanError
from popejoan_env.observation import OBS_SIZE
from popejoan_env.players.learned import model_metadata, save_state_dict
from popejoan_env.rules import MAX_PLAYERS, MIN_PLAYERS, Rules, RulesLike, check_players, resolve_rules

AGENTS = [f"player_{i}" for i in range(MAX_PLAYERS)]
"""Every agent id an episode may use (a table of n seats uses the first n)."""
ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}
"""Hidden activations of ``MaskedPolicyModule`` (the names ``players.learned`` reads)."""


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


def _mlp(widths: Sequence[int], activation: str) -> nn.Sequential:
    """Linear layers of ``widths`` (input first), each followed by the activation."""
    layers: list[nn.Module] = []
    for a, b in zip(widths, widths[1:]):
        layers += [nn.Linear(a, b), ACTIVATIONS[activation]()]
    return nn.Sequential(*layers)


class MaskedPolicyModule(TorchRLModule, ValueFunctionAPI):
    """Actor and critic MLPs over the observation; illegal cards masked out of the logits."""

    def setup(self) -> None:
        """Build the networks from ``model_config`` (``net_arch``, ``activation``)."""
        config = self.model_config or {}
        arch = [int(w) for w in config.get("net_arch", [128, 128])]
        activation = str(config.get("activation", "tanh"))
        if activation not in ACTIVATIONS:
            raise PopeJoanError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.mlp_extractor = nn.Module()
        self.mlp_extractor.policy_net = _mlp([OBS_SIZE, *arch], activation)
        self.action_net = nn.Linear(arch[-1], NUM_CARD_IDS)
        self.critic = _mlp([OBS_SIZE, *arch], activation)
        self.value_head = nn.Linear(arch[-1], 1)
        for lin in self.modules():
            if isinstance(lin, nn.Linear):
                nn.init.orthogonal_(lin.weight, float(np.sqrt(2)))
                nn.init.zeros_(lin.bias)
        nn.init.orthogonal_(self.action_net.weight, 0.01)
        nn.init.orthogonal_(self.value_head.weight, 1.0)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Masked action logits."""
        obs = batch[Columns.OBS]
        logits = self.action_net(self.mlp_extractor.policy_net(obs["observation"]))
        legal = obs["action_mask"] > 0
        return {Columns.ACTION_DIST_INPUTS: logits.masked_fill(~legal, torch.finfo(logits.dtype).min)}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        """V(observation) of the seat whose observation it is."""
        return self.value_head(self.critic(batch[Columns.OBS]["observation"])).squeeze(-1)


def module_ids(snapshots: int) -> list[str]:
    """The modules of a run: ``main`` and its frozen snapshots."""
    return ["main"] + [f"snapshot_{k}" for k in range(snapshots)]


class SeatModules:
    """RLlib's agent-to-module mapping: ``main`` at every seat, or with chance ``prob`` a snapshot (never every seat).

    Drawn from a stable hash of the episode id and the seat, so every call for
    the same seat of an episode agrees, in any process.
    """

    def __init__(self, snapshots: int, prob: float) -> None:
        self.snapshots = int(snapshots)
        self.prob = float(prob)

    def __call__(self, agent_id: str, episode: Any, **kwargs: Any) -> str:
        """The module that plays ``agent_id`` in ``episode``."""
        return self.module(str(episode.id_), agent_id)

    def module(self, episode_id: str, agent_id: str) -> str:
        """The module at a seat of the episode with this id."""
        if self.snapshots == 0 or self.prob == 0.0:
            return "main"
        anchor = zlib.crc32(episode_id.encode()) % MIN_PLAYERS  # a seat every table has always plays main
        if int(agent_id.rsplit("_", 1)[1]) == anchor:
            return "main"
        u = zlib.crc32(f"{episode_id}/{agent_id}".encode()) / 2**32
        if u >= self.prob:
            return "main"
        return f"snapshot_{int(u / self.prob * self.snapshots) % self.snapshots}"


class TorchThreads(RLlibCallback):
    """Give the torch of every env runner ``threads`` threads (2 threads on 2 busy cores are ~10x slower than 1)."""

    def __init__(self, threads: int = 1) -> None:
        super().__init__()
        self.threads = int(threads)

    def on_environment_created(self, *, env_runner: Any, metrics_logger: Any = None, env: Any = None,
                               env_context: Any = None, **kwargs: Any) -> None:
        """Set the thread count once the env runner has its env."""
        torch.set_num_threads(self.threads)


def policy_state(weights: Mapping[str, Any] | nn.Module) -> dict[str, torch.Tensor]:
    """The actor's tensors of a module or its weights, under the names ``players.learned`` reads."""
    state = weights.state_dict() if isinstance(weights, nn.Module) else weights
    return {k: torch.as_tensor(v).detach().cpu().clone()  # tensors, or the numpy arrays of the learner's weights
            for k, v in state.items() if k.startswith(("mlp_extractor.policy_net.", "action_net."))}


def export_policy(weights: Mapping[str, Any] | nn.Module, path: str | os.PathLike[str], rules: RulesLike,
                  table_sizes: Sequence[int], net_arch: Sequence[int], activation: str, **extra: Any) -> str:
    """Write the actor of a module (or of its weights) as a model file ``make_player`` loads; returns the path."""
    meta = model_metadata(rules, list(table_sizes), list(net_arch), activation, **extra)
    meta["algorithm"] = "RLlib PPO"
    return save_state_dict(policy_state(weights), path, meta)


__all__ = [
    "AGENTS", "MaskedPolicyModule", "MixedTablesEnv", "SeatModules", "TorchThreads", "export_policy", "module_ids",
    "policy_state",
]
