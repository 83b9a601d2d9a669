"""PPO held near the imitated policy (``--anchor-kl``, ``popejoan_env/training/anchor.py``)."""

from __future__ import annotations

import copy

import pytest
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

from popejoan_env.envs.sb3_vec_env import make_batch_vec_env
from popejoan_env.errors import PopeJoanError
from popejoan_env.sb3_policies import SuitsPolicy
from popejoan_env.training.anchor import anchor


def _model(ent_coef: float = 0.01, lr: float = 3e-4, actor: str = "mlp") -> MaskablePPO:
    torch.manual_seed(0)
    suits = dict(actor_arch=[16, 16], activation="tanh")
    policy, kwargs = ("MlpPolicy", {}) if actor == "mlp" else (SuitsPolicy, suits)
    return MaskablePPO(policy, make_batch_vec_env(8, 0, players="4", opponents="random"), n_steps=64,
                       batch_size=128, n_epochs=4, learning_rate=lr, ent_coef=ent_coef, device="cpu", seed=0,
                       policy_kwargs=dict(net_arch=dict(pi=[32], vf=[16]), **kwargs))


def _kl(policy: MaskableActorCriticPolicy, fixed: MaskableActorCriticPolicy, data) -> float:
    """Mean KL(policy || fixed) over the legal cards of the states of ``data`` (a rollout minibatch)."""
    with torch.no_grad():
        p = policy.get_distribution(data.observations, data.action_masks).distribution
        q = fixed.get_distribution(data.observations, data.action_masks).distribution
        return float(torch.distributions.kl_divergence(p, q).mean())


@pytest.mark.parametrize("actor", ["mlp", "suits"])
def test_the_anchor_changes_nothing_while_the_policy_is_where_it_was_anchored(actor: str) -> None:
    model = _model(actor=actor)
    model.learn(512)
    anchor(model, 0.5)
    data = next(model.rollout_buffer.get(256))
    actions = data.actions.long().flatten()
    mine = model.policy.evaluate_actions(data.observations, actions, action_masks=data.action_masks)
    theirs = MaskableActorCriticPolicy.evaluate_actions(model.policy, data.observations, actions,
                                                        action_masks=data.action_masks)
    for a, b in zip(mine, theirs):
        assert torch.equal(a, b)


def test_the_anchor_holds_ppo_near_the_policy_it_started_from() -> None:
    """The same PPO run (same seed, a large learning rate) with and without the penalty: the anchored policy
    ends much closer to where it started, and each update logs its KL."""
    drift = {}
    for coef in (0.0, 2.0):
        model = _model(lr=3e-3)
        start = anchor(model, coef) if coef else copy.deepcopy(model.policy)
        model.learn(2048)
        drift[coef] = _kl(model.policy, start, next(model.rollout_buffer.get(512)))
        if coef:  # the last update's mean KL, not yet written out
            assert model.logger.name_to_value["train/anchor_kl"] == pytest.approx(drift[coef], rel=1.0)
    assert drift[0.0] > 0.02, drift  # unanchored, the policy moved
    assert drift[2.0] < drift[0.0] / 3, drift


def test_an_anchor_that_cannot_work_is_refused() -> None:
    with pytest.raises(PopeJoanError, match="must be > 0"):
        anchor(_model(), 0.0)
    with pytest.raises(PopeJoanError, match="--ent-coef > 0"):
        anchor(_model(ent_coef=0.0), 1.0)
