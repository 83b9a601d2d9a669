"""Learner steps per second of MaskablePPO on Pope Joan, for several set-ups side by side in one run.

    python training/throughput.py                 # ~5 minutes on 2 cores
    python training/throughput.py --steps 100000  # longer, steadier figures

Each set-up is ``training/train_ppo.py`` with the given flags, no evaluation,
no checkpoints, no TensorBoard, for the same number of learner decisions;
the figure is decisions per second of ``model.learn`` (rollouts and updates).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import train_ppo  # noqa: E402

SETUPS: dict[str, list[str]] = {
    # sb3-contrib's tutorial shape: SB3's PPO defaults on one environment
    "tutorial: 1 env, batch 64, n_steps 2048, 10 epochs, 64x64, torch defaults": [
        "--n-envs", "1", "--batch-size", "64", "--n-steps", "2048", "--n-epochs", "10", "--net-arch", "64,64",
        "--no-anneal-lr", "--torch-threads", "0", "--validate-args"],
    "8 envs in one process, batch 64, 64x64, torch defaults": [
        "--n-envs", "8", "--batch-size", "64", "--n-steps", "256", "--n-epochs", "10", "--net-arch", "64,64",
        "--torch-threads", "0", "--validate-args"],
    "2 envs in worker processes (subproc), batch 512, 1 thread": [
        "--n-envs", "2", "--vec-env", "subproc", "--n-steps", "1024"],
    "default set-up, but 1 torch thread": ["--torch-threads", "1"],
    "default set-up (train_ppo.py without flags)": [],
}


def main() -> None:
    """Run every set-up and print a table of learner steps per second."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40_000, help="learner decisions per set-up")
    parser.add_argument("--seed", type=int, default=1, help="seed of every run")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as out:
        for name, flags in SETUPS.items():
            summary = train_ppo.main([
                "--run-name", "throughput", "--output-dir", out, "--seed", str(args.seed),
                "--total-timesteps", str(args.steps), "--eval-interval", "0", "--final-eval-deals", "0",
                "--checkpoint-interval", "0", "--no-tensorboard", "--no-progress", *flags,
            ])
            rows.append((name, summary["learner_steps_per_s"]))
            print(f"{name}: {summary['learner_steps_per_s']:,.0f} learner steps/s", flush=True)
    base = rows[0][1]
    print("\n| set-up | learner steps/s | × tutorial |\n|---|---:|---:|")
    for name, sps in rows:
        print(f"| {name} | {sps:,.0f} | {sps / base:.1f} |")


if __name__ == "__main__":
    main()
