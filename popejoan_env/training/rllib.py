"""Self-play PPO for Pope Joan on Ray RLlib (new API stack): one shared policy at every seat, 3 to 8 seats at once.

    python training/train_rllib.py                                  # local Ray on this machine's cores, 4 seats
    python training/train_rllib.py --players 3,4,5,6,7,8 --snapshots 3 --total-timesteps 3000000
    python training/train_rllib.py --address auto --num-env-runners 16   # join a running Ray cluster
    python training/train_rllib.py --help                           # every knob, with its help text

The env is the PettingZoo AEC env through RLlib's ``PettingZooEnv``, one per
table size, behind ``popejoan_env.envs.rllib_env.MixedTablesEnv`` (a table size
drawn per episode).  Every seat is an agent; they all map to the module
``main`` (self-play, parameter sharing), except that with ``--snapshots K``
each seat but one of an episode plays, with probability
``--snapshot-prob``, one of K frozen copies of ``main``, refreshed in turn
every ``--snapshot-interval`` iterations (they start as copies of the
initial network).  Only ``main`` is trained, on the decisions it made.  The
module is ``MaskedPolicyModule``: masked logits, its own critic.  Every seat's
reward (counters × ``--reward-scale``) reaches that seat.

Written to ``<output-dir>/<run-name>/``: ``model.zip`` (the policy as a
``popejoan-model/1`` file, so ``make_player`` and ``training/benchmark.py``
load it like a MaskablePPO model), ``run.json`` (flags, throughput,
evaluation), RLlib checkpoints in ``checkpoints/`` (``--restore`` resumes
from one: its iterations, steps and snapshots go on, and a checkpoint of another
setup, ``SETUP``, is refused), TensorBoard logs in ``tb/``.  An earlier run's
``model.zip``, ``run.json`` and checkpoints after the one this run starts from
are removed when it starts.  Bad flags: one line and exit 2.
RLlib's sampling is asynchronous across env runners, so a run is seeded
(``--seed``: the network, the deals of every env) but not bit-reproducible.
What the training scripts share (flags, evaluation, ``run.json``) is in
``popejoan_env/training/common.py``.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import math
import os
import platform
import re
import shutil
import time
from typing import Any

from popejoan_env import __version__
from popejoan_env.checks import split_list
from popejoan_env.cluster import check_address, connected, import_ray
from popejoan_env.cli import CLIP, COEFFICIENT, GRAD_NORM, Integer, Number, PROBABILITY, RATE, SCALE, SEED
from popejoan_env.errors import PopeJoanError
from popejoan_env.files import remove_stale, write_atomic
from popejoan_env.observation import OBS_SIZE
from popejoan_env.players import make_player
from popejoan_env.players.lists import split_specs
from popejoan_env.rules import Rules, check_players

from popejoan_env.training.common import (MAX_ROLLOUT_VALUES, RUN_JSON, RUN_MODEL, arg, check_given_address,
                                          check_network, check_run_name, command, evaluate, format_eval, make_run_dir,
                                          mlp_values, parse_flags, parse_given, run_script, set_torch_threads,
                                          write_run_json)


@dataclasses.dataclass
class Args:
    """The flags of train_rllib.py: each field's help text is its --help (``lambda_`` is ``--lambda``)."""

    run_name: str = arg("rllib_modern_4p", "name of the run: everything goes to <output-dir>/<run-name>/")
    output_dir: str = arg("models", "directory holding one sub-directory per run")
    seed: int = arg(1, "seed of the network's initialisation and of every env's deals (not bit-reproducible: "
                       "sampling is asynchronous)", kind=SEED)
    preset: str = arg("modern", "rules preset: modern or victorian")
    players: str = arg("4", "table size, or a comma list such as 3,4,5,6,7,8: each episode draws one")
    total_timesteps: int = arg(1_000_000, "env steps to train for (one step = one seat's lead; forced cards are "
                                          "played by the env); with --restore, the checkpoint's steps count too "
                                          "(at least one iteration runs)", kind=Integer(1, 10**10))
    max_seconds: float = arg(0.0, "stop after this many seconds of training, whatever the steps (0: no limit)",
                             kind=Number(0.0, 1e7))
    address: str = arg("", "Ray cluster to join ('auto', 'ray://host:10001', 'host:6379'); empty: start a local Ray")
    num_cpus: int = arg(0, "CPUs of the local Ray (0: all of this machine's); ignored with --address",
                        kind=Integer(0, 4096))
    num_env_runners: int = arg(2, "Ray actors sampling episodes, one CPU each (0: sample in the driver between "
                                   "updates); on this 2-core machine 2 runners sample 1.9x faster than the driver; "
                                   "without --address, with the learners at most the local Ray's CPUs",
                               kind=Integer(0, 4096))
    num_envs_per_env_runner: int = arg(64, "envs each env runner (or the driver) steps together: one batched "
                                           "forward per step", kind=Integer(1, 65536))
    num_learners: int = arg(0, "remote learner actors (0: update in the driver); several train data-parallel, "
                               "each on its share of the batch; one CPU each (none with GPUs): without --address, "
                               "with the env runners at most the local Ray's CPUs (--num-cpus, or this machine's)",
                            kind=Integer(0, 1024))
    num_gpus_per_learner: float = arg(0.0, "GPUs per learner (a cluster with GPUs; this machine has none): refused "
                                           "when the GPUs asked of this machine are more than torch sees",
                                      kind=Number(0.0, 64.0))
    rollout_fragment_length: int = arg(0, "steps per env per sample call (0: RLlib's 'auto', from the batch size)",
                                       kind=Integer(0, 10**6))
    train_batch_size: int = arg(4096, "env steps per PPO update and learner (--num-learners N: N times this)",
                                kind=Integer(1, 10**7))
    minibatch_size: int = arg(512, "minibatch size of the PPO update", kind=Integer(1, 10**7))
    num_epochs: int = arg(10, "passes over each batch", kind=Integer(1, 1000))
    learning_rate: float = arg(3e-4, "Adam learning rate", kind=RATE)
    gamma: float = arg(1.0, "discount (an episode is a handful of decisions; every counter counts the same)",
                       kind=Number(0.0, 1.0, low_open=True))
    lambda_: float = arg(0.95, "GAE lambda", kind=PROBABILITY)
    clip_param: float = arg(0.2, "PPO clipping", kind=CLIP)
    entropy_coeff: float = arg(0.01, "entropy bonus", kind=COEFFICIENT)
    vf_loss_coeff: float = arg(0.5, "value-loss weight", kind=COEFFICIENT)
    grad_clip: float = arg(0.5, "gradient clipping (global norm)", kind=GRAD_NORM)
    reward_scale: float = arg(0.1, "rewards are counters times this", kind=SCALE)
    net_arch: str = arg("128,128", "hidden layer widths of the actor and of the critic")
    activation: str = arg("tanh", "hidden activation: tanh or relu")
    snapshots: int = arg(2, "frozen copies of the policy used as opponents (0: pure self-play)", kind=Integer(0, 100))
    snapshot_prob: float = arg(0.25, "chance that a seat (never all of them) plays a snapshot in an episode",
                               kind=Number(0.0, 0.999))
    snapshot_interval: int = arg(5, "iterations between snapshot refreshes (the oldest copy is replaced)",
                                 kind=Integer(1, 10**6))
    checkpoint_interval: int = arg(20, "iterations between RLlib checkpoints (0: only the last)",
                                   kind=Integer(0, 10**6))
    restore: str = arg("", "an RLlib checkpoint directory to resume from (the flags must build the same setup)")
    torch_threads: int = arg(1, "torch threads in the learner and in every env runner (1 is fastest on 2 cores)",
                             kind=Integer(1, 256))
    tensorboard: bool = arg(True, "write TensorBoard logs to <run>/tb")
    eval_deals: int = arg(200, "duplicate deals against each evaluation opponent at the end (0: none)",
                          kind=Integer(0, 10**6))
    eval_opponents: str = arg("stops_first,pool_hunter", "scripted players to evaluate against (comma list)")


def table_sizes(args: Args) -> list[int]:
    """The table sizes of ``--players``."""
    try:
        sizes = [int(x) for x in split_list(args.players)]
    except ValueError:
        raise PopeJoanError(f"--players must be a table size or a comma list of them, got {args.players!r}") from None
    if not sizes:
        raise PopeJoanError("--players names no table size")
    for n in sizes:
        check_players(n)
    return sizes


def net_arch(args: Args) -> list[int]:
    """The hidden widths of ``--net-arch``."""
    try:
        widths = [int(x) for x in split_list(args.net_arch)]
    except ValueError:
        widths = []
    if not widths or min(widths) < 1:
        raise PopeJoanError(f"--net-arch must be a comma list of positive widths, got {args.net_arch!r}")
    return widths


def check_args(args: Args) -> None:
    """Refuse every flag that cannot work (a PopeJoanError naming it), before Ray starts."""
    check_run_name(args.run_name)
    Rules.preset(args.preset)
    check_address(args.address or None)
    table_sizes(args)
    net_arch(args)
    if args.activation not in ("tanh", "relu"):
        raise PopeJoanError(f"--activation must be tanh or relu, got {args.activation!r}")
    if args.minibatch_size > args.train_batch_size:
        raise PopeJoanError(f"--minibatch-size {args.minibatch_size} is larger than --train-batch-size "
                            f"{args.train_batch_size}")
    if args.eval_deals == 1:
        raise PopeJoanError("--eval-deals must be 0 or at least 2 (a confidence interval needs 2), got 1")
    split_specs(args.eval_opponents, "--eval-opponents")  # a model path with a comma is refused as that
    for name in split_list(args.eval_opponents):
        make_player(name)
    if args.restore and not os.path.isdir(args.restore):
        raise PopeJoanError(f"--restore {args.restore!r} is not a checkpoint directory")
    if args.restore:
        check_checkpoint(args.restore, args)
    check_resources(args)  # before the sizes: 1000 learners are refused for the CPUs they lack, not their batches
    check_sizes(args)


CHECKPOINT_PARTS = (("algorithm_state.pkl", "algorithm_state.msgpack"), ("learner_group",))
"""What an RLlib checkpoint of this command holds (``Algorithm.save_to_path``), each as the names it may take: the
algorithm's state and the learners' (the network's weights)."""


SETUP = ("preset", "players", "reward_scale", "net_arch", "activation", "snapshots", "snapshot_prob", "seed")
"""The flags that make a run's game and modules, and its seed: a checkpoint keeps them (``SETUP_FILE``), and
``--restore`` refuses a checkpoint of other values rather than train its network on another game (or fail with a
traceback on its shapes), or go on under another seed and write a model whose metadata names that seed."""
SETUP_SINCE = frozenset({"seed"})
"""``SETUP`` flags a checkpoint keeps only since this check: one saved before has none, and is not held to it."""
SETUP_FILE = "popejoan_setup.json"
"""The file of a checkpoint that holds its ``SETUP`` flags, written once RLlib's files are (so a checkpoint cut short
has none)."""


def setup_of(args: Args) -> dict[str, Any]:
    """The ``SETUP`` flags of ``args``."""
    return {key: getattr(args, key) for key in SETUP}


def save_checkpoint(algo: Any, path: str, args: Args) -> str:
    """RLlib's checkpoint of ``algo`` at ``path``, then its ``SETUP_FILE``; the checkpoint's path."""
    out = algo.save_to_path(path)
    write_atomic(os.path.join(str(out), SETUP_FILE), json.dumps(setup_of(args), indent=1) + "\n")
    return str(out)


def check_checkpoint(path: str, args: Args | None = None) -> None:
    """Refuse a ``--restore`` directory that is not an RLlib checkpoint, naming what it lacks (RLlib would fail on it
    with a traceback after building the whole algorithm), and with ``args`` one of another ``SETUP``."""
    for names in CHECKPOINT_PARTS:
        if not any(os.path.exists(os.path.join(path, name)) for name in names):
            raise PopeJoanError(f"--restore {path!r} is not a checkpoint of train-rllib: it has no {names[0]} (the "
                                "checkpoints/iter_NNNNN directories of a run have one)")
    if args is None:
        return
    where = os.path.join(path, SETUP_FILE)
    try:
        with open(where, "rb") as fh:
            theirs = json.loads(fh.read(2**16).decode("utf-8"))
    except FileNotFoundError:
        raise PopeJoanError(f"--restore {path!r} has no {SETUP_FILE}: a checkpoint cut short, or of a train-rllib "
                            "that did not keep its flags, whose setup cannot be checked") from None
    except (OSError, ValueError) as err:
        raise PopeJoanError(f"--restore {path!r}: {SETUP_FILE} cannot be read ({' '.join(str(err).split())[:160]})"
                            ) from None
    mine = setup_of(args)
    for key in SETUP:
        if key in SETUP_SINCE and isinstance(theirs, dict) and key not in theirs:
            continue
        run = theirs.get(key, "(absent)") if isinstance(theirs, dict) else "(absent)"
        if run != mine[key] or isinstance(run, bool) != isinstance(mine[key], bool):
            raise PopeJoanError(f"--restore {path!r} is a checkpoint of --{key.replace('_', '-')} {run!r}, and this "
                                f"run's is {mine[key]!r}: give the flags of the checkpoint's run "
                                f"({', '.join('--' + k.replace('_', '-') for k in SETUP)})")


def clear_run(run_dir: str, after: int, fresh: bool) -> None:
    """Remove what an earlier run in ``run_dir`` wrote and this one would not replace: its ``model.zip`` and
    ``run.json`` (a run stopped before it writes its own must not leave them beside its checkpoints), its checkpoints
    after iteration ``after`` (those of the continuation a ``--restore`` leaves, or of an earlier run), and, with
    ``fresh`` (no --restore), its TensorBoard events."""
    for name in (RUN_MODEL, RUN_JSON):
        remove_stale(os.path.join(run_dir, name))
    folder = os.path.join(run_dir, "checkpoints")
    if os.path.isdir(folder):
        for name in sorted(os.listdir(folder)):
            found = re.fullmatch(r"iter_(\d{5,})", name)
            path = os.path.join(folder, name)
            if found and int(found.group(1)) > after and os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
    if fresh:
        for path in glob.glob(os.path.join(run_dir, "tb", "events.out.tfevents.*")):
            remove_stale(path)


def check_sizes(args: Args) -> None:
    """Refuse a network or a batch too large to hold, counted before Ray starts."""
    check_network(f"--net-arch {args.net_arch}", mlp_values([OBS_SIZE, *net_arch(args), 52]), "an actor")
    learners = max(1, args.num_learners)
    batch = args.train_batch_size * learners * OBS_SIZE
    if batch > MAX_ROLLOUT_VALUES:
        raise PopeJoanError(f"--train-batch-size {args.train_batch_size:,} x {learners} learner(s) makes batches of "
                            f"{batch:,} observation values; a batch holds at most {MAX_ROLLOUT_VALUES:,} "
                            "(MAX_ROLLOUT_VALUES): choose fewer steps")
    sample = args.num_envs_per_env_runner * max(1, args.rollout_fragment_length) * OBS_SIZE
    if sample > MAX_ROLLOUT_VALUES:
        raise PopeJoanError(f"--num-envs-per-env-runner {args.num_envs_per_env_runner:,} x --rollout-fragment-length "
                            f"{args.rollout_fragment_length:,} makes samples of {sample:,} observation values; a "
                            f"sample holds at most {MAX_ROLLOUT_VALUES:,} (MAX_ROLLOUT_VALUES): choose fewer")


def check_resources(args: Args) -> None:
    """Refuse GPUs that torch does not see here, and (on a local Ray) more learners and env runners than its CPUs:
    RLlib fails an assertion on the first and waits forever for the second."""
    if args.num_learners == 0:
        gpus = math.ceil(args.num_gpus_per_learner)  # the driver's own learner: this machine's, whatever --address
    else:  # remote learners share GPUs by their fractions; a cluster's (--address) are not this machine's to count
        gpus = 0 if args.address else math.ceil(args.num_gpus_per_learner * args.num_learners - 1e-9)
    if gpus:
        import torch  # only GPUs asked of this machine need torch's count of them

        if gpus > torch.cuda.device_count():
            raise PopeJoanError(f"--num-gpus-per-learner {args.num_gpus_per_learner:g} asks this machine for {gpus} "
                                f"GPU(s) and torch sees {torch.cuda.device_count()}: give 0, or join a cluster with "
                                "GPUs (--address) and --num-learners 1 or more")
    if args.address:
        return  # a cluster's CPUs are its own: Ray places the actors there
    cpus = args.num_cpus or os.cpu_count() or 1
    learners = args.num_learners if args.num_gpus_per_learner == 0 else 0  # RLlib gives a GPU learner no CPU
    if learners + args.num_env_runners > cpus:
        raise PopeJoanError(f"--num-learners {args.num_learners} and --num-env-runners {args.num_env_runners} take "
                            f"{learners + args.num_env_runners} CPUs, one each, and the local Ray has {cpus} "
                            f"({'--num-cpus' if args.num_cpus else 'this machine'}): Ray would wait for them forever; "
                            "ask for fewer, or join a cluster (--address)")


# ---------------------------------------------------------------------- building RLlib's config
def build_config(args: Args) -> Any:
    """The ``PPOConfig`` of a run: ``rllib_env.configure`` (the env, the masked modules, self-play's seats, one torch
    thread), then the run's env runners, learners and PPO settings."""
    from ray.rllib.algorithms.ppo import PPOConfig

    from popejoan_env.envs.rllib_env import configure

    config = configure(PPOConfig(), table_sizes(args), Rules.preset(args.preset), reward_scale=args.reward_scale,
                       seed=args.seed, net_arch=net_arch(args), activation=args.activation, snapshots=args.snapshots,
                       snapshot_prob=args.snapshot_prob, torch_threads=args.torch_threads)
    return (
        config
        .env_runners(
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=args.num_envs_per_env_runner,
            rollout_fragment_length=args.rollout_fragment_length or "auto",
            num_cpus_per_env_runner=1,
        )
        .learners(num_learners=args.num_learners, num_gpus_per_learner=args.num_gpus_per_learner)
        .training(
            train_batch_size_per_learner=args.train_batch_size, minibatch_size=args.minibatch_size,
            num_epochs=args.num_epochs, lr=args.learning_rate, gamma=args.gamma, lambda_=args.lambda_,
            clip_param=args.clip_param, entropy_coeff=args.entropy_coeff, vf_loss_coeff=args.vf_loss_coeff,
            grad_clip=args.grad_clip, grad_clip_by="global_norm",
        )
    )


def copy_module(algo: Any, source: str, target: str) -> None:
    """Copy the weights of module ``source`` into ``target``, in the learner and in every env runner."""
    state = algo.learner_group.get_weights([source])[source]
    algo.set_state({"learner_group": {"learner": {"rl_module": {target: state}}}})
    algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group, policies=[target],
                                       inference_only=True)


def _metric(result: dict[str, Any], *path: str) -> float | None:
    """A number deep in an RLlib result dict, or None."""
    value: Any = result
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return float(value) if isinstance(value, (int, float)) else None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train, checkpoint, export, evaluate; returns what run.json records."""
    args, given = parse_given(Args, argv, __doc__.split("\n\n")[0])
    check_given_address(args.address, given)
    check_args(args)  # every flag that cannot work is refused before Ray starts
    import_ray()
    start = time.perf_counter()
    with connected(args.address or None, num_cpus=args.num_cpus or None):
        # Ray first: a cluster out of reach writes nothing; then the run's directory, before any training.
        run_dir = os.path.abspath(make_run_dir(args.output_dir, args.run_name))
        ray_start = time.perf_counter() - start
        return train(args, argv, run_dir, ray_start)


def train(args: Args, argv: list[str] | None, run_dir: str, ray_start: float) -> dict[str, Any]:
    """The run itself, on the Ray that ``main`` started or joined: the algorithm, the loop, saving, evaluation."""
    import ray
    import torch
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

    from popejoan_env.envs.rllib_policy import export_policy, module_ids

    set_torch_threads(args.torch_threads)
    algo = build_config(args).build_algo()
    iteration, restored_steps = 0, 0
    if args.restore:
        try:
            algo.restore_from_path(os.path.abspath(args.restore))
        except Exception as err:  # noqa: BLE001 - RLlib's own errors, of many kinds: one line, not a traceback
            algo.stop()
            raise PopeJoanError(f"--restore {args.restore!r} cannot be restored with these flags "
                                f"({type(err).__name__}: {' '.join(str(err).split())[:200]})") from None
        # The run goes on: its iterations (checkpoint names, snapshot refreshes), its steps and its league.
        iteration = int(algo.iteration or 0)
        restored_steps = int(algo.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0) or 0)
    else:
        for m in module_ids(args.snapshots)[1:]:
            copy_module(algo, "main", m)  # the league starts as copies of the initial network
    first_iteration = iteration
    for name in split_list(args.eval_opponents):  # an opponent this run would remove, or write over, is refused
        theirs = os.path.join(run_dir, RUN_MODEL)
        if os.path.isfile(name) and os.path.isfile(theirs) and os.path.samefile(name, theirs):
            algo.stop()
            raise PopeJoanError(f"--eval-opponents names {name}, the model.zip of the run {run_dir} that this run "
                                "replaces: copy it out of the run, or give another --run-name")
    clear_run(run_dir, iteration, fresh=not args.restore)
    writer = None
    if args.tensorboard:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(os.path.join(run_dir, "tb"))
    steps, history = 0, []
    train_start = time.perf_counter()
    last_checkpoint = ""
    limit = args.max_seconds or float("inf")  # --max-seconds 0: no limit
    while steps < args.total_timesteps and time.perf_counter() - train_start < limit:
        result = algo.train()
        iteration += 1
        steps = int(_metric(result, ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME) or steps)
        elapsed = time.perf_counter() - train_start
        row = {
            "iteration": iteration, "env_steps": steps, "seconds": round(elapsed, 1),
            "steps_per_s": round((steps - restored_steps) / elapsed, 1),  # this run's steps, not the checkpoint's
            "episode_return_mean": _metric(result, ENV_RUNNER_RESULTS, "episode_return_mean"),
            "episode_len_mean": _metric(result, ENV_RUNNER_RESULTS, "episode_len_mean"),
            "policy_loss": _metric(result, "learners", "main", "policy_loss"),
            "vf_loss": _metric(result, "learners", "main", "vf_loss"),
            "entropy": _metric(result, "learners", "main", "entropy"),
            "mean_kl": _metric(result, "learners", "main", "mean_kl_loss"),
        }
        history.append(row)
        print(f"iteration {iteration} env steps {steps:,} {row['steps_per_s']:,.0f} steps/s "
              f"entropy {row['entropy'] or 0:.3f} vf_loss {row['vf_loss'] or 0:.4f}", flush=True)
        if writer is not None:
            for key, value in row.items():
                if key not in ("iteration", "env_steps") and value is not None:
                    writer.add_scalar(("charts/" if key in ("steps_per_s", "seconds", "episode_len_mean",
                                                            "episode_return_mean") else "losses/") + key, value, steps)
        if args.snapshots and iteration % args.snapshot_interval == 0:
            slot = (iteration // args.snapshot_interval - 1) % args.snapshots
            copy_module(algo, "main", f"snapshot_{slot}")
        if args.checkpoint_interval and iteration % args.checkpoint_interval == 0:
            last_checkpoint = save_checkpoint(algo, os.path.join(run_dir, "checkpoints", f"iter_{iteration:05d}"),
                                              args)
    train_seconds = time.perf_counter() - train_start
    final = os.path.join(run_dir, "checkpoints", f"iter_{iteration:05d}")
    if last_checkpoint != final:
        last_checkpoint = save_checkpoint(algo, final, args)
    sizes = table_sizes(args)
    weights = algo.learner_group.get_weights(["main"])["main"]  # the learner's, not an env runner's copy
    model = export_policy(weights, os.path.join(run_dir, RUN_MODEL), rules=Rules.preset(args.preset),
                          table_sizes=sizes,
                          net_arch=net_arch(args), activation=args.activation, timesteps=steps, seed=args.seed,
                          ray_version=ray.__version__, run_name=args.run_name)
    algo.stop()
    if writer is not None:
        writer.close()
    print(f"\n{steps:,} env steps in {train_seconds:.0f} s ({(steps - restored_steps) / train_seconds:,.0f} steps/s, "
          f"Ray started in {ray_start:.1f} s); model: {model}")
    evaluation = {}
    if args.eval_deals:  # the exported policy against each opponent at each table size; the deals' seed is --seed + 1
        from popejoan_env.nets.policy import load_policy

        for seats in sorted(set(sizes)):
            rows = evaluate(load_policy(model), split_list(args.eval_opponents), args.eval_deals, args.seed,
                            rules=args.preset, seats=seats, name="rllib_ppo", deal_seed=args.seed + 1)
            evaluation[str(seats)] = {name: {**row, "seats": seats} for name, row in rows.items()}
            print(f"\n{seats} seats, {args.eval_deals} duplicate deals, counters per deal (95% CI):\n"
                  + format_eval(rows), flush=True)
    run = {
        "args": dataclasses.asdict(args),
        "command": command("train_rllib.py", argv),
        "env_steps": steps, "iterations": iteration, "train_seconds": round(train_seconds, 1),
        "steps_per_s": round((steps - restored_steps) / train_seconds, 1), "ray_start_seconds": round(ray_start, 1),
        "model": model, "checkpoint": last_checkpoint, "history": history, "evaluation": evaluation,
        **({"restored": {"checkpoint": os.path.abspath(args.restore), "iteration": first_iteration,
                         "env_steps": restored_steps}} if args.restore else {}),
        "versions": {"popejoan": __version__, "ray": ray.__version__, "torch": torch.__version__,
                     "python": platform.python_version()},
    }
    write_run_json(run_dir, run)
    return run


def run(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run the command on ``argv`` (default ``sys.argv[1:]``) as ``prog``; the exit status."""
    return run_script(main, argv, prog)


if __name__ == "__main__":
    raise SystemExit(run(prog="popejoan train-rllib"))  # Ray missing or out of reach: one line, exit 2
