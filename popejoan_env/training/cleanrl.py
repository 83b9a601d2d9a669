"""CleanRL-style PPO self-play on ``PopeJoanVectorEnv``: one shared policy plays every seat, masked categorical, GAE.

    python training/cleanrl_ppo.py                                  # 200k decisions, modern, 4 players
    python training/cleanrl_ppo.py --total-timesteps 2000000 --num-envs 128
    python training/cleanrl_ppo.py --help                           # every knob

One file, top to bottom: the arguments, the network, the rollout, the per-seat advantages, the update, saving
and the evaluation.  **Credit.** Every seat of every deal is the same network.  A decision's reward is what its
seat wins from that decision until its own next decision or the deal's end: the env's ``infos["seat_rewards"]``
go to each seat's latest decision (``popejoan_env.envs.gymnasium_vector_env``, "Rewards").  GAE runs along each seat's own chain
of decisions in a deal (a deal is the episode; ``gamma`` 1).  A decision whose seat has not acted again, nor its
deal ended, by the end of a rollout has an incomplete reward: it is left out of that update, and its value
bootstraps the decision before it.  **Saving.** The model is a ``popejoan-model/1`` file (``popejoan.json`` and
``policy.pth``, the actor under Stable-Baselines3's module names), so ``load_player``, ``make_player`` and the
tournament play it.  At the end a duplicate tournament against each ``--eval-opponents`` player, and ``run.json``.
What the training scripts share (flags, evaluation, ``run.json``) is in ``popejoan_env/training/common.py``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

from popejoan_env.checks import split_list
from popejoan_env.envs.gymnasium_vector_env import PopeJoanVectorEnv
from popejoan_env.cli import (CLIP, COEFFICIENT, EPISODE_DEALS, GRAD_NORM, Integer, PROBABILITY, RATE, SCALE, SEED,
                              TABLE_SIZE)
from popejoan_env.errors import PopeJoanError
from popejoan_env.observation import OBS_SIZE
from popejoan_env.players import make_player
from popejoan_env.nets.model_file import model_metadata, save_state_dict
from popejoan_env.nets.policy import load_policy
from popejoan_env.rules import Rules

from popejoan_env.training.common import (MAX_ROLLOUT_VALUES, RUN_JSON, RUN_MODEL, arg, check_model_path,
                                          check_network, command, evaluate, format_eval, mlp_values, model_destination,
                                          parse_flags, run_script, set_torch_threads, write_run_json)


@dataclasses.dataclass
class Args:
    """The flags of cleanrl_ppo.py: each field's help text is its --help."""

    model_path: str = arg(f"models/cleanrl_ppo/{RUN_MODEL}", f"where the model is saved ({RUN_JSON} goes beside it)")
    seed: int = arg(1, "seed of the deals, the network's initialisation, the sampling and the evaluation", kind=SEED)
    preset: str = arg("modern", "rules preset: modern or victorian")
    players: int = arg(4, f"table size, {TABLE_SIZE.low} to {TABLE_SIZE.high}", kind=TABLE_SIZE)
    session_length: int = arg(1, "deals per session in each slot (board and balances carried)", kind=EPISODE_DEALS)
    start_counters: int = arg(0, "balance every session starts from: 0 as the duplicate tournament's deals",
                              kind=Integer(0, 10**6))
    total_timesteps: int = arg(200_000, "decisions to train for (every seat's; forced cards and lone leads are none)",
                               kind=Integer(1, 10**10))
    num_envs: int = arg(64, "deals stepped together", kind=Integer(1, 65536))
    num_steps: int = arg(64, "steps per deal slot per rollout (a rollout is num_envs * num_steps decisions)",
                         kind=Integer(1, 10**6))
    learning_rate: float = arg(3e-4, "Adam learning rate", kind=RATE)
    anneal_lr: bool = arg(True, "decay the learning rate linearly to 0")
    gamma: float = arg(1.0, "discount along a seat's decisions (a deal is a handful; every counter counts)",
                       kind=PROBABILITY)
    gae_lambda: float = arg(0.95, "GAE lambda", kind=PROBABILITY)
    num_minibatches: int = arg(8, "minibatches per epoch", kind=Integer(1, 10**6))
    update_epochs: int = arg(10, "passes over each rollout", kind=Integer(1, 1000))
    clip_coef: float = arg(0.2, "PPO clipping of the ratio (and of the value change)", kind=CLIP)
    ent_coef: float = arg(0.01, "entropy bonus", kind=COEFFICIENT)
    vf_coef: float = arg(0.5, "value-loss weight", kind=COEFFICIENT)
    max_grad_norm: float = arg(0.5, "gradient clipping", kind=GRAD_NORM)
    reward_scale: float = arg(0.1, "rewards are counters times this", kind=SCALE)
    hidden: int = arg(128, "width of the two hidden layers of the actor and of the critic", kind=Integer(1, 65536))
    torch_threads: int = arg(1, "torch CPU threads", kind=Integer(1, 256))
    eval_deals: int = arg(200, "duplicate deals against each evaluation opponent (0: no evaluation)",
                          kind=Integer(0, 10**6))
    eval_opponents: str = arg("stops_first,random", "scripted players to evaluate against (comma list)")
    tensorboard: bool = arg(False, "write TensorBoard logs (charts/..., losses/...) beside the model")


def check_args(args: Args) -> None:
    """Refuse the flags that cannot work (a PopeJoanError), before anything is written."""
    check_model_path(args.model_path, Args.model_path)
    if args.eval_deals == 1:
        raise PopeJoanError("--eval-deals must be 0 or at least 2 (a confidence interval needs 2), got 1")
    for name in split_list(args.eval_opponents):
        make_player(name)  # an unknown opponent is refused before training
    check_sizes(args)


def check_sizes(args: Args) -> None:
    """Refuse a rollout too small to split into the minibatches asked, or a rollout or network too large to hold,
    counted before any tensor is allocated."""
    rollout = args.num_envs * args.num_steps
    if rollout < 2 * args.num_minibatches:
        # each minibatch's advantages are normalised by their spread, which a single decision has not (NaN weights)
        raise PopeJoanError(f"--num-envs {args.num_envs} x --num-steps {args.num_steps} makes rollouts of {rollout:,} "
                            f"decisions, too few for --num-minibatches {args.num_minibatches:,} of at least 2: "
                            "num-envs x num-steps must be at least 2 x num-minibatches")
    if rollout * OBS_SIZE > MAX_ROLLOUT_VALUES:
        raise PopeJoanError(f"--num-envs {args.num_envs:,} x --num-steps {args.num_steps:,} makes rollouts of "
                            f"{rollout:,} decisions, {rollout * OBS_SIZE:,} observation values; a rollout holds at "
                            f"most {MAX_ROLLOUT_VALUES:,} (MAX_ROLLOUT_VALUES): choose fewer")
    # the model file holds the actor and the critic
    check_network(f"--hidden {args.hidden:,}", mlp_values([OBS_SIZE, args.hidden, args.hidden, 52])
                  + mlp_values([OBS_SIZE, args.hidden, args.hidden, 1]))


def layer(n_in: int, n_out: int, std: float = float(np.sqrt(2))) -> nn.Linear:
    """A linear layer with CleanRL's orthogonal initialisation."""
    lin = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


class Agent(nn.Module):
    """Actor and critic MLPs; the actor keeps SB3's module names so a saved model loads as a ``LearnedPlayer``."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.mlp_extractor = nn.Module()
        for name in ("policy_net", "value_net"):
            setattr(self.mlp_extractor, name, nn.Sequential(layer(OBS_SIZE, hidden), nn.Tanh(),
                                                            layer(hidden, hidden), nn.Tanh()))
        self.action_net = layer(hidden, 52, std=0.01)
        self.value_net = layer(hidden, 1, std=1.0)

    def value(self, x: torch.Tensor) -> torch.Tensor:
        """V(observation) of the seat whose observation it is."""
        return self.value_net(self.mlp_extractor.value_net(x)).squeeze(-1)

    def act(self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        """A legal card (sampled unless given), its log-probability, the entropy and the value."""
        logits = self.action_net(self.mlp_extractor.policy_net(x)).masked_fill(~mask, -1e9)
        dist = Categorical(logits=logits)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.value(x)


def seat_advantages(rewards: np.ndarray, values: np.ndarray, seats: np.ndarray, ended: np.ndarray,
                    gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """GAE along each seat's own decisions ([T, N] arrays); returns the advantages and which decisions are complete."""
    steps, n = rewards.shape
    rows = np.arange(n)
    end, open_ = -1, -2  # no next decision: the deal ended / the rollout ended first
    upcoming = np.full((n, int(seats.max()) + 1), open_)
    nxt = np.empty((steps, n), dtype=np.int64)
    for t in reversed(range(steps)):
        upcoming[ended[t]] = end
        nxt[t] = upcoming[rows, seats[t]]
        upcoming[rows, seats[t]] = t
    adv = np.zeros((steps, n))
    for t in reversed(range(steps)):
        has, at = nxt[t] >= 0, np.maximum(nxt[t], 0)
        delta = rewards[t] + gamma * np.where(has, values[at, rows], 0.0) - values[t]
        adv[t] = np.where(nxt[t] == open_, 0.0, delta + gamma * lam * np.where(has, adv[at, rows], 0.0))
    return adv, nxt != open_


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train, save, evaluate; returns what run.json records."""
    args = parse_flags(Args, argv, __doc__.split("\n\n")[0])
    check_args(args)
    model_destination(args.model_path)  # the file written (.zip added) checked, an earlier run's record removed
    rules = Rules.preset(args.preset).replace(start_counters=args.start_counters)

    # ---------------------------------------------------------------- seeding
    set_torch_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    envs = PopeJoanVectorEnv(args.num_envs, args.players, rules, seed=args.seed, session_length=args.session_length)
    # ---------------------------------------------------------------- seeding

    agent = Agent(args.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    steps_, n, p = args.num_steps, args.num_envs, args.players
    obs_buf = torch.zeros((steps_, n, OBS_SIZE))
    mask_buf = torch.zeros((steps_, n, 52), dtype=torch.bool)
    act_buf, logp_buf, val_buf = (torch.zeros((steps_, n), dtype=d) for d in (torch.long, torch.float32, torch.float32))
    rew_buf, seat_buf, end_buf = np.zeros((steps_, n)), np.zeros((steps_, n), np.int64), np.zeros((steps_, n), bool)
    writer = None
    if args.tensorboard:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(os.path.join(os.path.dirname(os.path.abspath(args.model_path)), "tb"))
    rows = np.arange(n)
    updates = -(-args.total_timesteps // (n * steps_))
    obs, infos = envs.reset(seed=args.seed)
    step, deals, rollout_time, start = 0, 0, 0.0, time.perf_counter()
    for update in range(1, updates + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - (update - 1.0) / updates)
        t0 = time.perf_counter()
        latest = np.full((n, p), -1)  # each seat's latest decision in this rollout, per slot (-1: none)
        rew_buf[:] = 0.0
        for t in range(steps_):
            obs_buf[t], mask_buf[t] = torch.from_numpy(obs), torch.from_numpy(infos["action_mask"])
            seat_buf[t] = infos["seat"]
            with torch.no_grad():
                act_buf[t], logp_buf[t], _, val_buf[t] = agent.act(obs_buf[t], mask_buf[t])
            obs, _, end_buf[t], _, infos = envs.step(act_buf[t].numpy())
            latest[rows, seat_buf[t]] = t
            i, s = np.nonzero(latest >= 0)
            rew_buf[latest[i, s], i] += args.reward_scale * infos["seat_rewards"][i, s]
            latest[end_buf[t]] = -1
            deals += int(end_buf[t].sum())
        step += n * steps_
        rollout_time += time.perf_counter() - t0

        adv, complete = seat_advantages(rew_buf, val_buf.numpy().astype(np.float64), seat_buf, end_buf,
                                        args.gamma, args.gae_lambda)
        idx = np.flatnonzero(complete.reshape(-1))
        if len(idx) < 2:  # no advantages to normalise: a rollout too short for any seat to act again
            print(f"update {update}/{updates} steps {step:,} deals {deals:,}: {len(idx)} complete decision(s), "
                  "no update", flush=True)
            continue
        b_obs, b_mask = obs_buf.reshape(-1, OBS_SIZE)[idx], mask_buf.reshape(-1, 52)[idx]
        b_act, b_logp, b_val = act_buf.reshape(-1)[idx], logp_buf.reshape(-1)[idx], val_buf.reshape(-1)[idx]
        b_adv = torch.as_tensor(adv.reshape(-1)[idx], dtype=torch.float32)
        b_ret = b_adv + b_val
        # at least 2 a minibatch, whose advantages have a spread: fewer minibatches when few decisions are complete
        size = max(2, len(idx) // args.num_minibatches)
        for _ in range(args.update_epochs):
            order = torch.randperm(len(idx))
            for lo in range(0, len(idx) - size + 1, size):
                mb = order[lo:lo + size]
                _, logp, entropy, value = agent.act(b_obs[mb], b_mask[mb], b_act[mb])
                ratio = (logp - b_logp[mb]).exp()
                a = b_adv[mb]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg_loss = torch.max(-a * ratio, -a * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_clip = b_val[mb] + (value - b_val[mb]).clamp(-args.clip_coef, args.clip_coef)
                v_loss = 0.5 * torch.max((value - b_ret[mb]) ** 2, (v_clip - b_ret[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
            approx_kl = float(((ratio - 1) - ratio.log()).mean().detach())
        sps = step / (time.perf_counter() - start)
        print(f"update {update}/{updates} steps {step:,} {sps:,.0f} steps/s deals {deals:,} "
              f"pg {pg_loss.item():+.4f} v {v_loss.item():.4f} entropy {entropy.mean().item():.3f} "
              f"kl {approx_kl:.4f} complete {len(idx) / (n * steps_):.1%}", flush=True)
        if writer is not None:
            for key, value_ in (("charts/SPS", sps), ("charts/learning_rate", optimizer.param_groups[0]["lr"]),
                                ("losses/policy_loss", pg_loss.item()), ("losses/value_loss", v_loss.item()),
                                ("losses/entropy", entropy.mean().item()), ("losses/approx_kl", approx_kl)):
                writer.add_scalar(key, value_, step)
    train_time = time.perf_counter() - start
    envs.close()

    meta = model_metadata(args.preset, [args.players], [args.hidden] * 2, activation="tanh", algorithm="cleanrl_ppo",
                          timesteps=step, seed=args.seed, start_counters_trained=args.start_counters)
    path = save_state_dict(agent.state_dict(), args.model_path, meta)
    print(f"\n{step:,} decisions in {train_time:.0f} s ({step / train_time:,.0f} steps/s; rollouts alone "
          f"{step / rollout_time:,.0f} steps/s); model: {path}")
    evaluation = {}
    if args.eval_deals:  # the saved model against each opponent; the deals' seed is --seed + 1
        evaluation = evaluate(load_policy(path), split_list(args.eval_opponents), args.eval_deals, args.seed,
                              rules=args.preset, seats=args.players, name="cleanrl_ppo", deal_seed=args.seed + 1)
        print(f"\nduplicate tournament, {args.eval_deals} deals, {args.players} players, counters per deal (95% CI):")
        print(format_eval(evaluation))
    run = {"args": dataclasses.asdict(args), "command": command("cleanrl_ppo.py", argv), "timesteps": step,
           "deals": deals, "train_seconds": round(train_time, 1), "steps_per_s": round(step / train_time, 1),
           "rollout_steps_per_s": round(step / rollout_time, 1), "model": path, "evaluation": evaluation}
    write_run_json(os.path.dirname(os.path.abspath(path)), run)
    return run


def run(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run the command on ``argv`` (default ``sys.argv[1:]``) as ``prog``; the exit status."""
    return run_script(main, argv, prog)


if __name__ == "__main__":
    raise SystemExit(run(prog="popejoan train-cleanrl"))
