"""MaskablePPO policies beyond SB3's MLP: the oracle critic (``OraclePolicy``, for the SB3 batch vec env's
``oracle=True``) and the ``suits`` actor (``popejoan train --actor suits``).

They live in the package, not in the training script, so a saved model names an importable class and
``MaskablePPO.load`` resumes it from any process.  What they save is what ``players.learned`` plays: an
ordinary MLP actor (``OraclePolicy``) or a ``suits`` actor under ``suits.PREFIX``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import MlpExtractor

from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.observation import OBS_SIZE
from popejoan_env.nets import suits
from popejoan_env.nets.model_file import mlp_values

__all__ = ["OraclePolicy", "SuitsPolicy", "policy_values"]


def policy_values(actor: str, net_arch: Sequence[int], actor_arch: Sequence[int], critic_inputs: int = OBS_SIZE) -> int:
    """How many values the ``state_dict`` of a policy below holds, counted from its shapes without building it: an
    MLP actor of ``net_arch`` (or a ``suits`` actor of ``actor_arch``) and SB3's MLP critic of ``net_arch`` over
    ``critic_inputs`` features."""
    critic = mlp_values([critic_inputs, *net_arch, 1])
    if actor == suits.ARCHITECTURE:
        return critic + sum(math.prod(shape) for shape in suits.shapes(actor_arch).values())
    return critic + mlp_values([OBS_SIZE, *net_arch, NUM_CARD_IDS])


class OracleExtractor(MlpExtractor):
    """SB3's two MLPs, but the policy's reads only the observation (the first OBS_SIZE features) and the value
    network's reads the hidden hands as well: an oracle critic."""

    def __init__(self, feature_dim: int, net_arch: dict[str, list[int]], activation_fn: type[torch.nn.Module],
                 device: Any = "auto") -> None:
        super().__init__(feature_dim, net_arch, activation_fn, device)
        first = self.policy_net[0]
        self.policy_net[0] = torch.nn.Linear(OBS_SIZE, first.out_features).to(first.weight.device)

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy's and the value network's latents."""
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        """The policy's latent, from the observation alone."""
        return self.policy_net(features[..., :OBS_SIZE])


class OraclePolicy(MaskableActorCriticPolicy):
    """MaskablePPO's MLP policy with an ``OracleExtractor``: the saved actor is an ordinary one."""

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = OracleExtractor(self.features_dim, self.net_arch, self.activation_fn, self.device)


class SuitsActor(torch.nn.Module):
    """The suits actor's layers as torch modules (``suits.shapes``' names) and its forward."""

    def __init__(self, actor_arch: list[int], activation: str) -> None:
        super().__init__()
        self.activation = activation
        for name, shape in suits.shapes(actor_arch).items():
            if name.endswith(".weight"):
                setattr(self, name[:-len(".weight")], torch.nn.Linear(shape[1], shape[0]))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """The logits [B, 52] of the observations ``obs`` [B, OBS_SIZE]."""
        return suits.logits_torch(dict(self.named_parameters()), obs, self.activation)


class SuitsExtractor(torch.nn.Module):
    """The suits actor on the observation (the first OBS_SIZE features) and SB3's MLP critic on every feature
    (with --oracle-critic, the hidden hands too)."""

    def __init__(self, feature_dim: int, net_arch: list[int], actor_arch: list[int],
                 activation_fn: type[torch.nn.Module], activation: str) -> None:
        super().__init__()
        self.actor = SuitsActor(actor_arch, activation)
        critic = MlpExtractor(feature_dim, dict(pi=[], vf=net_arch), activation_fn)  # SB3's, for its value net
        self.value_net = critic.value_net
        self.latent_dim_pi, self.latent_dim_vf = NUM_CARD_IDS, critic.latent_dim_vf

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The logits and the critic's latent."""
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        """The logits, from the observation alone."""
        return self.actor(features[..., :OBS_SIZE])

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        """The critic's latent."""
        return self.value_net(features)


class SuitsPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's policy with the suits actor: its logits are the action logits (no action_net)."""

    def __init__(self, *args: Any, actor_arch: list[int], activation: str, **kwargs: Any) -> None:
        self.actor_arch, self.activation = actor_arch, activation
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = SuitsExtractor(self.features_dim, self.net_arch["vf"], self.actor_arch,
                                               self.activation_fn, self.activation)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = torch.nn.Identity()
        torch.nn.init.orthogonal_(self.mlp_extractor.actor.out.weight, gain=0.01)  # SB3's action_net gain
        torch.nn.init.zeros_(self.mlp_extractor.actor.out.bias)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)
