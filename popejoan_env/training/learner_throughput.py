"""Learner steps per second of MaskablePPO on Pope Joan, for several set-ups side by side in one run.

    python training/learner_throughput.py                      # every set-up, ~10 minutes on 2 cores
    python training/learner_throughput.py --steps 100000       # longer, steadier figures
    python training/learner_throughput.py --setups old1,batch1 # the old and the new default, 1 torch thread

Each set-up is ``training/train_ppo.py`` with the given flags, no evaluation,
no checkpoints, no TensorBoard, for the same number of learner decisions;
the figure is decisions per second of ``model.learn`` (rollouts and updates).
Every set-up is PPO alone with the MLP actor (``--imitate-deals 0 --actor mlp``:
the recipe before the imitation became the default) unless it says otherwise;
``suits`` is the same with the suits actor.
``old`` is the default before the batch engine (8 copies of the Gymnasium view
in one process, 512 steps each a rollout), ``batch`` the default now
(``BatchVecEnv``, 512 envs, 8 steps each: the same 4096-step rollouts).
``rllib`` is ``training/train_rllib.py`` with its defaults (Ray RLlib PPO,
self-play at every seat: the same 4096-step batches, minibatches of 512, 10
epochs, 128x128), its figure env steps per second of training (sampling and
updates; Ray's start-up excluded); it needs the ``ray`` extra.

(This script was ``throughput.py``, the name of a PyPI package.)
"""

from __future__ import annotations

import dataclasses
import tempfile

from popejoan_env.cli import SEED, Integer
from popejoan_env.training import ppo as train_ppo
from popejoan_env.training import rllib as train_rllib
from popejoan_env.training.common import arg, parse_flags, refuse, run_script

PPO_ALONE = ["--imitate-deals", "0", "--actor", "mlp"]
"""PPO from scratch with the MLP actor (a set-up's own flags come after and may override it)."""
OLD_DEFAULT = ["--vec-env", "dummy", "--n-envs", "8", "--n-steps", "512"]
"""The default set-up before ``--vec-env batch``."""

SETUPS: dict[str, tuple[str, list[str]]] = {
    # sb3-contrib's tutorial shape: SB3's PPO defaults on one environment
    "tutorial": ("tutorial: 1 env, batch 64, n_steps 2048, 10 epochs, 64x64, torch defaults", [
        "--vec-env", "dummy", "--n-envs", "1", "--batch-size", "64", "--n-steps", "2048", "--n-epochs", "10",
        "--net-arch", "64,64", "--no-anneal-lr", "--torch-threads", "0", "--validate-args"]),
    "dummy64": ("8 envs in one process, batch 64, 64x64, torch defaults", [
        "--vec-env", "dummy", "--n-envs", "8", "--batch-size", "64", "--n-steps", "256", "--n-epochs", "10",
        "--net-arch", "64,64", "--torch-threads", "0", "--validate-args"]),
    "subproc": ("2 envs in worker processes (subproc), batch 512, 1 thread", [
        "--vec-env", "subproc", "--n-envs", "2", "--n-steps", "1024", "--torch-threads", "1"]),
    "old1": ("old default (8 dummy envs x 512 steps), 1 torch thread", [*OLD_DEFAULT, "--torch-threads", "1"]),
    "batch1": ("default set-up (batch env, 512 envs x 8 steps), 1 torch thread", ["--torch-threads", "1"]),
    # 2 threads asked for: the default is 1 since 0.2.0 (--torch-threads), so these rows passing nothing ran at 1
    "old": ("old default (8 dummy envs x 512 steps), 2 torch threads", [*OLD_DEFAULT, "--torch-threads", "2"]),
    "batch": ("PPO's default set-up (batch env, 512 envs x 8 steps, 128x128 MLP), 2 torch threads",
              ["--torch-threads", "2"]),
    "suits": ("PPO's default set-up with the suits actor (--actor suits), 2 torch threads",
              ["--actor", "suits", "--torch-threads", "2"]),
    "rllib": ("RLlib PPO self-play (train_rllib.py without flags), 1 torch thread", []),
}


@dataclasses.dataclass
class Args:
    """The flags of learner_throughput.py: each field's help text is its --help."""

    steps: int = arg(40_000, "learner decisions per set-up", kind=Integer(1, 10**9))
    seed: int = arg(1, "seed of every run", kind=SEED)
    setups: str = arg(",".join(SETUPS), f"comma list of set-ups to run, in order, from {', '.join(SETUPS)}")


def main(argv: list[str] | None = None) -> None:
    """Run the chosen set-ups and print a table of learner steps per second."""
    args = parse_flags(Args, argv, __doc__.split("\n\n")[0])
    chosen = [s.strip() for s in args.setups.split(",") if s.strip()]
    if not chosen:
        refuse(f"--setups needs at least one set-up, got {args.setups!r}; choose from {', '.join(SETUPS)}")
    unknown = [s for s in chosen if s not in SETUPS]
    if unknown:
        refuse(f"--setups: unknown set-up(s) {unknown}; choose from {', '.join(SETUPS)}")
    rows = []
    with tempfile.TemporaryDirectory() as out:
        for key in chosen:
            name, flags = SETUPS[key]
            if key == "rllib":
                run = train_rllib.main([
                    "--run-name", "throughput_rllib", "--output-dir", out, "--seed", str(args.seed),
                    "--total-timesteps", str(args.steps), "--eval-deals", "0", "--checkpoint-interval", "0",
                    "--no-tensorboard", *flags,
                ])
                rows.append((key, name, run["steps_per_s"]))
                print(f"{name}: {run['steps_per_s']:,.0f} env steps/s", flush=True)
                continue
            summary = train_ppo.main([
                "--run-name", "throughput", "--output-dir", out, "--seed", str(args.seed),
                "--total-timesteps", str(args.steps), "--eval-interval", "0", "--final-eval-deals", "0",
                "--checkpoint-interval", "0", "--no-tensorboard", "--no-progress", *PPO_ALONE, *flags,
            ])
            rows.append((key, name, summary["learner_steps_per_s"]))
            print(f"{name}: {summary['learner_steps_per_s']:,.0f} learner steps/s", flush=True)
    sps = {key: value for key, _, value in rows}
    base = rows[0][2]
    print(f"\n| set-up | learner steps/s | x {rows[0][0]} | x old default, same threads |\n|---|---:|---:|---:|")
    for key, name, value in rows:
        old = {"batch1": "old1", "batch": "old"}.get(key)
        versus = f"{value / sps[old]:.2f}" if old in sps else ""
        print(f"| {name} | {value:,.0f} | {value / base:.2f} | {versus} |")


def run(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run the command on ``argv`` (default ``sys.argv[1:]``) as ``prog``; the exit status."""
    return run_script(main, argv, prog)


if __name__ == "__main__":
    raise SystemExit(run(prog="popejoan learner-throughput"))
