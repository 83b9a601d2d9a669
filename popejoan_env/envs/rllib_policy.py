"""Ray RLlib's policy side: the masking policy network, which module plays each seat, and the export to a model file.

``MaskedPolicyModule`` is the RLModule PPO trains (``training/train_rllib.py``): an
actor MLP and a critic MLP on the observation, the action mask applied to the
logits (an illegal card gets probability 0, in sampling, inference and the loss
alike).  Its actor keeps Stable-Baselines3's layer names, so ``export_policy``
writes a model file (``nets.model_file``) that ``make_player`` and
``training/benchmark.py`` load like any other and play with the one forward of
``players.learned``.  ``SeatModules`` maps each seat of an episode to ``main`` or a
frozen snapshot; ``TorchThreads`` keeps every env runner's torch to one thread.

Importing this module imports ray and torch (``pip install 'popejoan[ray]'``).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import nn

from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.errors import PopeJoanError
from popejoan_env.observation import OBS_SIZE
from popejoan_env.nets.model_file import model_metadata, save_state_dict
from popejoan_env.rules import MIN_PLAYERS, RulesLike

ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}
"""Hidden activations of ``MaskedPolicyModule`` (the names ``nets.model_file`` reads)."""


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


def set_torch_threads(*, threads: int, **kwargs: Any) -> None:
    """An ``on_environment_created`` hook: give the env runner's torch ``threads`` threads."""
    torch.set_num_threads(threads)


def policy_state(weights: Mapping[str, Any] | nn.Module) -> dict[str, torch.Tensor]:
    """The actor's tensors of a module or its weights, under the names ``players.learned`` reads."""
    state = weights.state_dict() if isinstance(weights, nn.Module) else weights
    return {k: torch.as_tensor(v).detach().cpu().clone()  # tensors, or the numpy arrays of the learner's weights
            for k, v in state.items() if k.startswith(("mlp_extractor.policy_net.", "action_net."))}


def export_policy(weights: Mapping[str, Any] | nn.Module, path: str | os.PathLike[str], *, rules: RulesLike,
                  table_sizes: Sequence[int], net_arch: Sequence[int], activation: str, **extra: Any) -> str:
    """Write the actor of a module (or of its weights) as a model file ``make_player`` loads; returns the path."""
    meta = model_metadata(rules, list(table_sizes), list(net_arch), activation=activation, **extra)
    meta["algorithm"] = "RLlib PPO"
    return save_state_dict(policy_state(weights), path, meta)


__all__ = ["ACTIVATIONS", "MaskedPolicyModule", "SeatModules", "TorchThreads", "export_policy", "module_ids",
           "policy_state", "set_torch_threads"]
