"""How RLlib's sampling scales with env runners and envs per runner, on this machine, side by side in one run.

    python benchmarks/bench_rllib.py                                  # 0, 1, 2 env runners x 16, 64, 128 envs
    python benchmarks/bench_rllib.py --runners 0,2 --envs 64 --iterations 5
    python benchmarks/bench_rllib.py --address auto --runners 4,8,16  # on a running Ray cluster

Each set-up builds ``training/train_rllib.py``'s PPO (its defaults: 4 seats,
``modern``, 4096-step batches, 10 epochs of 512-step minibatches, 128x128,
1 torch thread), trains ``--iterations`` iterations after one warm-up, and
reports RLlib's own timers: env steps per second of sampling, of the update,
and of the whole iteration (PPO samples, then updates: the two do not
overlap).  Needs the ``ray`` extra.
"""

from __future__ import annotations

import time

from popejoan_env.cli import OneLineParser
from popejoan_env.cluster import ClusterError, connected
from popejoan_env.training import rllib as train_rllib


def measure(runners: int, envs: int, iterations: int, seed: int) -> dict[str, float]:
    """Steps per second of sampling, updating and whole iterations for one set-up."""
    import torch

    torch.set_num_threads(1)
    args = train_rllib.Args(num_env_runners=runners, num_envs_per_env_runner=envs, seed=seed, eval_deals=0,
                            output_dir="/tmp")
    train_rllib.check_args(args)
    algo = train_rllib.build_config(args).build_algo()
    try:
        algo.train()  # warm-up: the first iteration pays for building the connectors and the first episodes
        sample = update = wall = 0.0
        steps = 0
        for _ in range(iterations):
            start = time.perf_counter()
            result = algo.train()
            wall += time.perf_counter() - start
            # RLlib's timers are moving averages over the iterations so far
            timers = result["timers"]
            sample += timers["env_runner_sampling_timer"]
            update += timers["learner_update_timer"]
            steps += int(result["env_runners"]["num_env_steps_sampled"])
        per = steps / iterations
        return {"sample": per / (sample / iterations), "update": per / (update / iterations), "total": steps / wall}
    finally:
        algo.stop()


def main() -> None:
    """Run every set-up and print a table."""
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runners", default="0,1,2", help="comma list of --num-env-runners values")
    parser.add_argument("--envs", default="16,64,128", help="comma list of --num-envs-per-env-runner values")
    parser.add_argument("--iterations", type=int, default=3, help="timed iterations per set-up (after a warm-up)")
    parser.add_argument("--seed", type=int, default=1, help="seed of every set-up")
    parser.add_argument("--address", default="", help="Ray cluster to join (empty: a local Ray on this machine)")
    args = parser.parse_args()
    try:
        runners = [int(x) for x in args.runners.split(",") if x.strip()]
        envs = [int(x) for x in args.envs.split(",") if x.strip()]
    except ValueError:
        parser.error("--runners and --envs are comma lists of integers")
    if not runners or not envs or min(runners) < 0 or min(envs) < 1 or args.iterations < 1:
        parser.error("--runners >= 0, --envs >= 1 and --iterations >= 1")
    import ray

    try:
        with connected(args.address or None) as cpus:  # an address that is not Ray is refused in seconds
            print(f"Ray {ray.__version__}, {cpus} CPUs in the cluster\n")
            print("| env runners | envs per runner | sampling, env steps/s | update, env steps/s | whole iteration, "
                  "env steps/s |")
            print("|---:|---:|---:|---:|---:|")
            for r in runners:
                for e in envs:
                    row = measure(r, e, args.iterations, args.seed)
                    print(f"| {r} | {e} | {row['sample']:,.0f} | {row['update']:,.0f} | {row['total']:,.0f} |",
                          flush=True)
    except ClusterError as err:
        parser.error(str(err))


if __name__ == "__main__":
    main()
