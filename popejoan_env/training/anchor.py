"""PPO held near the imitated policy: a KL penalty to a frozen copy of it in PPO's loss (``--anchor-kl``).

Fine-tuning an imitated policy with PPO, large-scale game agents add ``coef * KL(pi || pi_anchor)`` to
the loss, ``pi_anchor`` the supervised policy, so that the noisy policy gradient cannot walk far from what
the imitation learned.  MaskablePPO's loss already holds ``-ent_coef * mean(entropy)``, and the entropy
comes from the policy's ``evaluate_actions``; ``anchor`` replaces that method on one policy by one that
returns ``entropy - (coef / ent_coef) * KL`` instead, so the loss gains exactly ``coef * mean(KL)`` (the
KL of the masked distributions over the legal cards, at every state of each minibatch) from one forward
pass, without a copy of sb3-contrib's update.  The mean KL of each update is logged as
``train/anchor_kl``; ``train/entropy_loss`` then holds the penalty too.
"""

from __future__ import annotations

from typing import Any

import torch
from sb3_contrib import MaskablePPO

from popejoan_env.errors import PopeJoanError


def anchor(model: MaskablePPO, coef: float) -> Any:
    """Penalise ``model``'s PPO updates by ``coef`` x KL(policy || the policy as it is now); returns the frozen
    copy (the anchor).  Needs ``model.ent_coef > 0`` (the penalty rides on the entropy term)."""
    if not coef > 0:
        raise PopeJoanError(f"the anchor's KL weight must be > 0, got {coef!r}")
    if not model.ent_coef > 0:
        raise PopeJoanError(f"the KL anchor enters PPO's loss through its entropy term: it needs --ent-coef > 0, "
                            f"got {model.ent_coef!r}")
    policy = model.policy
    # Built as MaskablePPO builds its policy, then given its weights (a deepcopy trips on the tensors of the last
    # distribution a trained policy keeps).
    frozen = model.policy_class(model.observation_space, model.action_space, model.lr_schedule, **model.policy_kwargs)
    frozen.load_state_dict(policy.state_dict())
    frozen.set_training_mode(False)
    frozen.requires_grad_(False)
    scale = coef / float(model.ent_coef)

    def evaluate_actions(obs: torch.Tensor, actions: torch.Tensor,
                         action_masks: Any = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``evaluate_actions`` whose entropy carries the penalty: H(pi) - (coef / ent_coef) KL(pi || anchor)."""
        features = policy.extract_features(obs)
        if policy.share_features_extractor:
            latent_pi, latent_vf = policy.mlp_extractor(features)
        else:
            latent_pi = policy.mlp_extractor.forward_actor(features[0])
            latent_vf = policy.mlp_extractor.forward_critic(features[1])
        dist = policy._get_action_dist_from_latent(latent_pi)
        if action_masks is not None:
            dist.apply_masking(action_masks)
        with torch.no_grad():
            fixed = frozen.get_distribution(obs, action_masks)
        kl = torch.distributions.kl_divergence(dist.distribution, fixed.distribution)
        model.logger.record_mean("train/anchor_kl", float(kl.detach().mean()))
        return policy.value_net(latent_vf), dist.log_prob(actions), dist.entropy() - scale * kl

    policy.evaluate_actions = evaluate_actions
    return frozen
