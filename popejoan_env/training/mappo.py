"""MAPPO on TorchRL: the PettingZoo env through TorchRL's own wrapper, one shared actor for every seat and a
centralised critic that reads the env's ``state()``.

    popejoan train-mappo                                     # 80,000 decisions, modern, 4 seats: 7 min of a core
    popejoan train-mappo --total-frames 400000 --seed 2
    popejoan train-mappo --help                              # every knob

The standard pieces of TorchRL's multi-agent PPO, top to bottom: ``PettingZooWrapper`` over ``env()`` (the AEC env
with ``auto_forced=True``, so every step is a lead: the env plays forced cards itself), all seats in one group
``"player"``, ``use_mask`` (TorchRL's ``mask`` says which seat acts at each step of a turn-based game) and
``return_state`` (the env's ``state()``, every hand and the whole table, as ``"state"``); a ``ProbabilisticActor``
with a ``MaskedCategorical`` over the legal cards, its network shared by the seats (each reads its own observation);
a ``Collector``; GAE and ``ClipPPOLoss`` from ``torchrl.objectives``.

**Centralised critic.** The critic reads only ``state()`` and answers one value per seat (the seats are absolute in
``state()``): what each seat will win from here to the deal's end.  That value exists at every step, whoever acts,
so GAE runs along every seat's rewards at every step (``gamma`` 1: a deal is the episode and every counter counts),
and the critic learns from every seat at every step.  **The actor learns only from its own turns:** at a step where a
seat does not act, its ``action`` is a placeholder the env never sees, so its term of the PPO objective (and of the
entropy bonus) is masked out with TorchRL's ``mask``.  The state is an oracle for the critic, which only trains:
the actor, which plays, never sees it (as in MAPPO, PerfectDou, Suphx).

**Saving.** The actor is a ``popejoan-model/1`` file (its layers under Stable-Baselines3's names, as
``cleanrl.py`` saves), so ``popejoan evaluate models/mappo/model.zip``, ``make_player`` and the tournament play it.
At the end a duplicate tournament against each ``--eval-opponents`` player, and ``run.json``.
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from typing import Any

import numpy as np
import tensordict
import torch
import torchrl
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
from torchrl.envs.libs.pettingzoo import PettingZooWrapper
from torchrl.modules import MaskedCategorical, ProbabilisticActor
from torchrl.objectives import ClipPPOLoss

from popejoan_env.checks import split_list
from popejoan_env.cli import CLIP, COEFFICIENT, GRAD_NORM, Integer, PROBABILITY, RATE, SCALE, SEED, TABLE_SIZE
from popejoan_env.envs.pettingzoo_aec import env as pope_joan_env
from popejoan_env.errors import PopeJoanError
from popejoan_env.nets.model_file import model_metadata, save_state_dict
from popejoan_env.nets.policy import load_policy
from popejoan_env.observation import OBS_SIZE, STATE_SIZE
from popejoan_env.players import make_player
from popejoan_env.players.lists import split_specs
from popejoan_env.rules import Rules
from popejoan_env.training.common import (MAX_ROLLOUT_VALUES, RUN_JSON, RUN_MODEL, arg, check_model_path,
                                          check_network, command, evaluate, format_eval, mlp_values, model_destination,
                                          parse_flags, run_script, set_torch_threads, write_run_json)

GROUP = "player"
"""TorchRL's group of the seats: every agent ``player_i`` in one group, so one actor serves them all."""


@dataclasses.dataclass
class Args:
    """The flags of popejoan train-mappo: each field's help text is its --help."""

    model_path: str = arg(f"models/mappo/{RUN_MODEL}", f"where the actor is saved ({RUN_JSON} goes beside it)")
    seed: int = arg(1, "seed of the deals, the networks' initialisation, the sampling and the evaluation", kind=SEED)
    preset: str = arg("modern", "rules preset: modern or victorian")
    players: int = arg(4, f"table size, {TABLE_SIZE.low} to {TABLE_SIZE.high}", kind=TABLE_SIZE)
    start_counters: int = arg(0, "balance every deal starts from: 0, as the duplicate tournament's deals",
                              kind=Integer(0, 10**6))
    total_frames: int = arg(80_000, "decisions to train for (env steps: one seat's lead each)",
                            kind=Integer(1, 10**10))
    frames_per_batch: int = arg(4_000, "decisions collected between updates (at least 2: their advantages are "
                                       "normalised by their spread)", kind=Integer(2, 10**7))
    num_epochs: int = arg(4, "passes over each batch", kind=Integer(1, 1000))
    minibatch_size: int = arg(500, "decisions per gradient step", kind=Integer(1, 10**7))
    learning_rate: float = arg(3e-4, "Adam learning rate (actor and critic)", kind=RATE)
    gamma: float = arg(1.0, "discount per step (a deal is a dozen steps; every counter counts)", kind=PROBABILITY)
    lmbda: float = arg(0.95, "GAE lambda", kind=PROBABILITY)
    clip_epsilon: float = arg(0.2, "PPO clipping of the ratio", kind=CLIP)
    entropy_coef: float = arg(0.01, "entropy bonus (on the acting seat's turns only)", kind=COEFFICIENT)
    critic_coef: float = arg(0.5, "value-loss weight", kind=COEFFICIENT)
    max_grad_norm: float = arg(0.5, "gradient clipping", kind=GRAD_NORM)
    reward_scale: float = arg(0.1, "rewards are counters times this", kind=SCALE)
    hidden: int = arg(128, "width of the actor's two hidden layers", kind=Integer(1, 65536))
    critic_hidden: int = arg(256, "width of the critic's two hidden layers", kind=Integer(1, 65536))
    torch_threads: int = arg(1, "torch CPU threads", kind=Integer(1, 256))
    eval_deals: int = arg(200, "duplicate deals against each evaluation opponent (0: no evaluation)",
                          kind=Integer(0, 10**6))
    eval_opponents: str = arg("stops_first,random", "scripted players to evaluate against (comma list)")


def check_args(args: Args) -> None:
    """Refuse the flags that cannot work (a PopeJoanError), before anything is written."""
    Rules.preset(args.preset)
    check_model_path(args.model_path, Args.model_path)
    if args.eval_deals and not split_specs(args.eval_opponents, "--eval-opponents"):
        raise PopeJoanError(f"--eval-deals {args.eval_deals} asks for an evaluation and --eval-opponents names no "
                            "player: name one, or give --eval-deals 0")
    if args.minibatch_size > args.frames_per_batch:
        raise PopeJoanError(f"--minibatch-size ({args.minibatch_size:,}) must not exceed --frames-per-batch "
                            f"({args.frames_per_batch:,})")
    frame = batch_frame_values(args.players)
    if args.frames_per_batch * frame > MAX_ROLLOUT_VALUES:  # counted before the collector allocates the batch
        raise PopeJoanError(f"--frames-per-batch {args.frames_per_batch:,} makes batches of "
                            f"{args.frames_per_batch * frame:,} observation values ({frame:,} a decision at "
                            f"{args.players} seats); a batch holds at most {MAX_ROLLOUT_VALUES:,} "
                            f"(MAX_ROLLOUT_VALUES): choose at most {MAX_ROLLOUT_VALUES // frame:,}")
    if args.eval_deals == 1:
        raise PopeJoanError("--eval-deals must be 0 or at least 2 (a confidence interval needs 2), got 1")
    for name in split_list(args.eval_opponents):
        make_player(name)  # an unknown opponent is refused before training
    # counted before any tensor is allocated (65536 would ask for 17 GB)
    check_network(f"--hidden {args.hidden:,}", mlp_values([OBS_SIZE, args.hidden, args.hidden, 52]))
    check_network(f"--critic-hidden {args.critic_hidden:,}",
                  mlp_values([STATE_SIZE, args.critic_hidden, args.critic_hidden, args.players]))


def batch_frame_values(players: int) -> int:
    """The observation values a collected frame holds: every seat's observation and the state, before and after
    its step (TorchRL keeps the step's ``next``)."""
    return 2 * (players * OBS_SIZE + STATE_SIZE)


class Actor(nn.Module):
    """The seats' shared actor: observation -> logits of the 52 cards, under Stable-Baselines3's layer names (so the
    saved file is a ``popejoan-model/1`` model that ``load_player`` plays)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.mlp_extractor = nn.Module()
        self.mlp_extractor.policy_net = nn.Sequential(nn.Linear(OBS_SIZE, hidden), nn.Tanh(),
                                                      nn.Linear(hidden, hidden), nn.Tanh())
        self.action_net = nn.Linear(hidden, 52)
        nn.init.orthogonal_(self.action_net.weight, 0.01)  # a near-uniform first policy, as CleanRL starts
        nn.init.zeros_(self.action_net.bias)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        """Logits of every card (any leading dimensions: steps, seats)."""
        return self.action_net(self.mlp_extractor.policy_net(observation))


class StateCritic(nn.Module):
    """The centralised critic: ``state()`` -> one value per seat, [..., players, 1] (TorchRL's group shape)."""

    def __init__(self, players: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(STATE_SIZE, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, players))

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        """Every seat's value from the full state."""
        return self.net(state).unsqueeze(-1)


def make_env(players: int, rules: Rules, seed: int) -> Any:
    """The AEC env (forced cards played by the env) as a TorchRL env: one group, the acting-seat mask, the state."""
    with warnings.catch_warnings():  # TorchRL names the PettingZoo version it is tested with (1.24.3), not ours
        warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")
        return PettingZooWrapper(pope_joan_env(players=players, rules=rules, auto_forced=True), use_mask=True,
                                 return_state=True, group_map={GROUP: [f"player_{i}" for i in range(players)]},
                                 categorical_actions=True, seed=seed)


def make_policy(actor_net: Actor) -> ProbabilisticActor:
    """The acting policy: each seat's logits from its own observation, sampled over its legal cards."""
    logits = TensorDictModule(actor_net, in_keys=[(GROUP, "observation", "observation")], out_keys=[(GROUP, "logits")])
    return ProbabilisticActor(logits, in_keys={"logits": (GROUP, "logits"), "mask": (GROUP, "action_mask")},
                              out_keys=[(GROUP, "action")], distribution_class=MaskedCategorical,
                              return_log_prob=True, log_prob_key=(GROUP, "sample_log_prob"))


def make_loss(policy: ProbabilisticActor, critic_net: StateCritic, args: Args) -> ClipPPOLoss:
    """TorchRL's clipped PPO loss with GAE, the critic reading ``state``; per step and seat (``reduction="none"``),
    so that ``mappo_losses`` can keep the actor's terms to the seat that acted."""
    critic = TensorDictModule(critic_net, in_keys=["state"], out_keys=[(GROUP, "state_value")])
    loss_module = ClipPPOLoss(policy, critic, clip_epsilon=args.clip_epsilon, entropy_coeff=args.entropy_coef,
                              critic_coeff=args.critic_coef, loss_critic_type="l2", reduction="none")
    loss_module.set_keys(reward=(GROUP, "reward"), action=(GROUP, "action"), value=(GROUP, "state_value"),
                         sample_log_prob=(GROUP, "sample_log_prob"), done=(GROUP, "done"),
                         terminated=(GROUP, "terminated"), advantage=(GROUP, "advantage"),
                         value_target=(GROUP, "value_target"))
    loss_module.make_value_estimator(gamma=args.gamma, lmbda=args.lmbda)
    return loss_module


def mappo_losses(loss_module: ClipPPOLoss, sample: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The clipped policy loss and the entropy bonus over the seats that acted (TorchRL's ``mask``), and the critic's
    loss over every seat at every step."""
    losses = loss_module(sample)  # reduction="none": [minibatch, players]
    mask = sample[GROUP, "mask"].to(losses["loss_objective"].dtype)
    acted = mask.sum().clamp(min=1.0)
    policy_loss = (losses["loss_objective"] * mask).sum() / acted
    entropy_loss = (losses["loss_entropy"] * mask).sum() / acted
    return policy_loss, entropy_loss, losses["loss_critic"].mean()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train, save, evaluate; returns what run.json records."""
    args = parse_flags(Args, argv, __doc__.split("\n\n")[0])
    check_args(args)
    path = model_destination(args.model_path)  # the file written (.zip added) checked, an earlier record removed
    rules = Rules.preset(args.preset).replace(start_counters=args.start_counters)

    # ---------------------------------------------------------------- seeding
    set_torch_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    env = make_env(args.players, rules, args.seed)
    # ---------------------------------------------------------------- seeding

    actor_net = Actor(args.hidden)
    policy = make_policy(actor_net)
    loss_module = make_loss(policy, StateCritic(args.players, args.critic_hidden), args)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=args.learning_rate)
    collector = Collector(env, policy, frames_per_batch=args.frames_per_batch, total_frames=args.total_frames,
                          auto_register_policy_transforms=False)  # the policy needs no transform of the env
    buffer = ReplayBuffer(storage=LazyTensorStorage(args.frames_per_batch), sampler=SamplerWithoutReplacement(),
                          batch_size=args.minibatch_size)

    frames, deals, batches, collect_time, start = 0, 0, 0, 0.0, time.perf_counter()
    t0 = time.perf_counter()
    for batch in collector:
        collect_time += time.perf_counter() - t0
        batches += 1
        frames += batch.numel()
        deals += int(batch["next", "done"].sum())
        batch["next", GROUP, "reward"] *= args.reward_scale
        with torch.no_grad():
            loss_module.value_estimator(batch, params=loss_module.critic_network_params,
                                        target_params=loss_module.target_critic_network_params)
        acting = batch[GROUP, "mask"]
        advantage = batch[GROUP, "advantage"]
        chosen = advantage[acting]  # normalised over the decisions that were made, not the placeholders
        batch[GROUP, "advantage"] = (advantage - chosen.mean()) / (chosen.std() + 1e-8)
        buffer.extend(batch.reshape(-1))
        for _ in range(args.num_epochs):
            for _ in range(max(1, batch.numel() // args.minibatch_size)):
                policy_loss, entropy_loss, critic_loss = mappo_losses(loss_module, buffer.sample())
                loss = policy_loss + entropy_loss + critic_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(loss_module.parameters(), args.max_grad_norm)
                optimizer.step()
        collector.update_policy_weights_()
        buffer.empty()
        print(f"batch {batches} decisions {frames:,} deals {deals:,} {frames / (time.perf_counter() - start):,.0f} "
              f"decisions/s policy {policy_loss.item():+.4f} critic {critic_loss.item():.4f} "
              f"entropy {-entropy_loss.item() / max(args.entropy_coef, 1e-12):.3f}", flush=True)
        t0 = time.perf_counter()
    train_time = time.perf_counter() - start
    collector.shutdown()
    env.close()

    meta = model_metadata(args.preset, [args.players], [args.hidden] * 2, activation="tanh", algorithm="torchrl_mappo",
                          timesteps=frames, seed=args.seed, start_counters_trained=args.start_counters)
    path = save_state_dict(actor_net.state_dict(), path, meta)
    print(f"\n{frames:,} decisions ({deals:,} deals) in {train_time:.0f} s ({frames / train_time:,.0f} decisions/s; "
          f"collecting {collect_time:.0f} s); model: {path}")
    evaluation = {}
    if args.eval_deals:  # the saved actor against each opponent; the deals' seed is --seed + 1
        evaluation = evaluate(load_policy(path), split_list(args.eval_opponents), args.eval_deals, args.seed,
                              rules=args.preset, seats=args.players, name="mappo", deal_seed=args.seed + 1)
        print(f"\nduplicate tournament, {args.eval_deals} deals, {args.players} players, counters per deal (95% CI):")
        print(format_eval(evaluation))
    run = {"args": dataclasses.asdict(args), "command": command("train_mappo.py", argv), "timesteps": frames,
           "deals": deals, "train_seconds": round(train_time, 1), "steps_per_s": round(frames / train_time, 1),
           "collect_seconds": round(collect_time, 1), "model": path, "evaluation": evaluation,
           "versions": _versions()}
    write_run_json(os.path.dirname(os.path.abspath(path)), run)
    return run


def _versions() -> dict[str, str]:
    """The libraries the run was made with."""
    return {"torch": torch.__version__, "torchrl": torchrl.__version__, "tensordict": tensordict.__version__,
            "numpy": np.__version__}


def run(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run the command on ``argv`` (default ``sys.argv[1:]``) as ``prog``; the exit status."""
    return run_script(main, argv, prog)


if __name__ == "__main__":
    raise SystemExit(run(prog="popejoan train-mappo"))
