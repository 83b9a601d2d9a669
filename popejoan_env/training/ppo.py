"""Train a Pope Joan policy. The default run, stage by stage: 60,000 deals of the pimc search with 128 worlds at
every seat; 4 epochs of imitation, in which the actor learns to give up the fewest counters by the search's values
of the cards (plus a little of its choices; no critic, since no PPO step reads it); then policy improvement: 25,000
deals of the search whose rollouts the imitated network plays at every seat, and 2 epochs learning its values;
no PPO step, since PPO after the imitation made every tried model weaker or, at best, left it level.
--total-timesteps N adds MaskablePPO (sb3-contrib) after it; --rounds N plays N rounds of policy improvement
(round k's rollouts played by round k-1's network), --rounds 0 none.

    python training/train_ppo.py                       # defaults: modern, 4 players, < 15 min on 2 cores
    python training/train_ppo.py --players 3,4,5 --opponents "stops_first:0.5,self:0.5" --total-timesteps 3000000
    python training/train_ppo.py --imitate-deals 0 --actor mlp --total-timesteps 1000000   # PPO alone, as before
    python training/train_ppo.py --quick               # a first run of about a minute (models/quick/)
    python training/train_ppo.py --help                # every knob, with its help text

The default recipe is the one that measured strongest in 15 minutes (docs/training.md, "The recipe"): 60,000
deals of ``pimc:samples=128`` at every seat (``--imitate-deals``, ``--imitate-player``,
``popejoan_env/training/expert_games.py``), the ``suits`` actor of widths 128, 256, 256 (``--actor``,
``--actor-arch``) trained on the expected regret under the search's values (``--imitate-loss regret``), and the
critic to value the positions only when PPO follows; then the network's own rollouts (``--rollout-deals``,
``popejoan_env/training/rollout_games.py``): the search with the imitated network at every seat of its
rollouts plays 25,000 deals and the network learns its values, which beats the imitation alone; and no PPO steps after it (``--total-timesteps 0``): PPO fine-tuning from the
imitation lost strength against ``pimc`` in every setting tried.  With ``--total-timesteps N`` PPO trains on from
there.  The recipes measured and not kept (expert iteration, PPO held near the imitated policy, the suits
relabelled, soft targets, the oracle critic; the rounds' other beliefs, players and fields) are in
docs/training.md with the commit that had their flags.

The learner plays one random seat of each deal, as ``popejoan_env.envs.gymnasium_env.PopeJoanGymEnv``
defines it; the other seats are scripted players and frozen snapshots of the learner
(self-play), drawn from the ``--opponents`` mix (``popejoan_env.opponents``).  The envs
are stepped by ``popejoan_env.envs.sb3_vec_env.BatchVecEnv`` (``--vec-env batch``: every deal in
the batch engine, the opponents vectorised) or by copies of the Gymnasium view
(``dummy``, ``subproc``).
During training: a progress bar, TensorBoard logs (``charts/...``,
``losses/...``, ``eval/...``) under ``<output-dir>/<run-name>/tb``, a
duplicate-tournament evaluation against the scripted players every
``--eval-interval`` steps, checkpoints.  At the end it writes
``<output-dir>/<run-name>/model.zip`` (loadable with
``popejoan_env.players.learned.load_player`` or by name in
``training/benchmark.py``) and ``run.json`` (arguments, rules, observation
version, package version, seed, evaluation results, throughput), both
atomically, then prints how the model does against each scripted player.

The script reads top to bottom: the flags and their checks, the callback that runs
during training, the imitation, then ``main``: seeding, the envs, the model, the
imitation and PPO, saving, the final evaluation, ``run.json``.  What the training
scripts share (flags, evaluation, the learning curve, ``run.json``) is in
``popejoan_env/training/common.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import math
import os
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import sb3_contrib
import stable_baselines3
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.logger import Logger, TensorBoardOutputFormat

from popejoan_env import __version__, cluster
from popejoan_env.checks import split_list
from popejoan_env.envs.gymnasium_env import episode_options, make_vec_env
from popejoan_env.envs.sb3_vec_env import make_batch_vec_env
from popejoan_env.cli import (CLIP, COEFFICIENT, EPISODE_DEALS, GRAD_NORM, Integer, Number, PROBABILITY, RATE, SCALE,
                              SEED, THREADS)
from popejoan_env.cli import NUMBER_LIST, fork_pool
from popejoan_env.errors import PopeJoanError
from popejoan_env.observation import OBS_SIZE, OBS_VERSION
from popejoan_env.opponents import SELF, parse_mix
from popejoan_env.nets import suits
from popejoan_env.players import make_player, model_files
from popejoan_env.players.lists import split_specs
from popejoan_env.nets.model_file import model_metadata, read_metadata, read_model, rules_field, save_model
from popejoan_env.nets.policy import policy_from_state
from popejoan_env.players.pimc import MAX_SAMPLES
from popejoan_env.rules import Rules, check_players, parse_rules_options
from popejoan_env.nets.model_file import MAX_NETWORK_VALUES
from popejoan_env.sb3_policies import SuitsPolicy, policy_values
from popejoan_env.training.common import (RUN_JSON, RUN_MODEL, arg, check_given_address, check_run_name, command,
                                          evaluate, flag_of, format_eval, make_run_dir, parse_flags, parse_given,
                                          run_script, set_torch_threads, with_quick, write_learning_curve,
                                          write_run_json)
from popejoan_env.training.expert_games import LOSSES, expert_games, imitate, tables_of
from popejoan_env.training.rollout_games import rollout_games
from popejoan_env.files import OutputPathError, file_sha256
from popejoan_env.training.rounds import DIRECTORY as ROUNDS_DIRECTORY
from popejoan_env.training.rounds import ResumeError, Rounds, check_place
from popejoan_env.training.rounds import seeds as round_seeds
from popejoan_env.training.rounds import stage as round_stage
from popejoan_env.training.workers import check_backend


VEC_ENVS = {"batch": 512, "dummy": 8, "subproc": 8}
"""The ways to step the training envs (``--vec-env``) and the number of envs each steps by default."""
ROLLOUT = 4096
"""Steps in a rollout when ``--n-steps`` is not given (``n_envs * n_steps``)."""


QUICK = {"run_name": "quick", "imitate_deals": 2_000, "rollout_deals": 500, "eval_deals": 50,
         "final_eval_deals": 100, "final_eval_opponents": "random,stops_first,pimc"}
"""What ``--quick`` changes: the fields whose flags the command line did not give take these values."""


def _in_words(names: str) -> str:
    """A comma list as a sentence says it: ``a,b,c`` -> ``a, b and c``."""
    *rest, last = names.split(",")
    return f"{', '.join(rest)} and {last}" if rest else last


RUN = "the run"
RECIPE = "the recipe: the search imitated, then policy improvement by the network's own rollouts"
NETWORK = "the network"
PPO = "PPO after the recipe (none by default: --total-timesteps N adds it)"
EVALUATION = "evaluations (the learning curve and the final table)"


@dataclasses.dataclass
class Args:
    """The flags of train_ppo.py: each field's help text is its --help, listed under its heading."""

    # ------------------------------------------------------------------ the run
    run_name: str = arg("ppo_modern_4p",
                        "name of the run: everything is written to <output-dir>/<run-name>/ (an existing run of that "
                        "name is replaced)", group=RUN)
    output_dir: str = arg("models", "directory that holds one sub-directory per run", group=RUN)
    seed: int = arg(1,
                    "seed of everything: the deals, the opponents' generators, the network's initialisation, PPO's "
                    "sampling", kind=SEED, group=RUN)
    preset: str = arg("modern",
                      "rules preset to train on: modern or victorian, or both (modern,victorian) for an imitation-only "
                      "run (--total-timesteps 0) whose network plays both; evaluations use the first", group=RUN)
    rules_option: list[str] = arg([], "override one rules option of every --preset, e.g. pack=small (a JSON value, "
                                      "else text; repeatable)", group=RUN, action="append", metavar="KEY=VALUE")
    players: str = arg("4",
                       "table size, or a comma list such as 3,4,5 to mix table sizes in one run (observations are "
                       "padded to 8 seats); a size listed twice gets twice the deals", group=RUN)
    quick: bool = arg(False,
                      f"a first run of about a minute: the imitation of {QUICK['imitate_deals']:,} deals of the "
                      f"--imitate-player, a round of {QUICK['rollout_deals']:,}, evaluations of {QUICK['eval_deals']} "
                      f"deals and a final one of {QUICK['final_eval_deals']} against "
                      f"{_in_words(QUICK['final_eval_opponents'])}, in <output-dir>/{QUICK['run_name']} (flags given "
                      "with it win)", group=RUN)
    torch_threads: int = arg(1,
                             "torch CPU threads (0 = torch's default); 1 because on 2 cores 2 threads were ~10% faster "
                             "only on a quiet machine and 4-10x slower as soon as anything else ran (88-97 against "
                             "409-890 learner steps/s)", kind=THREADS, group=RUN)
    resume: bool = arg(False,
                       "continue this run after its last finished round (<output-dir>/<run-name>/rounds/: the "
                       "imitation is round 0), with the same data as a run never stopped; refused in one line if a "
                       "flag that shapes the network differs from the run's (--rounds may grow)", group=RUN)
    backend: str = arg("local",
                       "where the game stages play (the imitated search's games, each round's rollout games): local "
                       "(--imitate-workers forked processes) or ray (Ray tasks; the same data, byte for byte)",
                       group=RUN)
    address: str = arg("", "with --backend ray: the cluster to join (auto, HOST:PORT or ray://HOST:PORT); empty: a Ray "
                           "of this machine's CPUs", group=RUN)
    progress: bool = arg(True, "show progress bars", group=RUN)
    tensorboard: bool = arg(True, "write TensorBoard logs to <run>/tb", group=RUN)

    # ------------------------------------------------------------------ the recipe
    start_model: str = arg("",
                           "begin from this model file instead of the imitation: its network is round 0 (it must be "
                           "one of this run's --actor, --actor-arch, --net-arch and --activation), and the flags of "
                           "the imitation alone are refused (--imitate-deals, -player, -epochs, -loss, -lr); the "
                           "--rounds of policy improvement start from it (how the shipped network's third round was "
                           "made from its second)", group=RECIPE)
    imitate_deals: int = arg(60_000,
                             "deals of the --imitate-player at every seat whose decisions the policy and critic learn "
                             "first (imitation, popejoan_env/training/expert_games.py); 0 = none",
                             kind=Integer(0, 10**7), group=RECIPE)
    imitate_player: str = arg("pimc:samples=128", "the player imitated (a make_player spec)", group=RECIPE)
    imitate_epochs: int = arg(4, "passes over the imitation data", kind=Integer(1, 1000), group=RECIPE)
    imitate_loss: str = arg("regret",
                            "what the actor learns: regret (the expected counters its cards fall short of the "
                            "expert's best by the expert's values, plus --imitate-choice-weight x the cross-entropy "
                            "to the expert's card) or choice (that cross-entropy alone: the recipe before, kept for "
                            "the commands that reproduce the models of models/round1/ and models/shipped/ and the "
                            "small game's in docs/openspiel.md; expert_games.imitate)", group=RECIPE)
    imitate_choice_weight: float = arg(0.1, "the cross-entropy's weight under --imitate-loss regret and in the rounds",
                                       kind=Number(0.0, 100.0), group=RECIPE)
    imitate_lr: float = arg(1e-3, "Adam learning rate of the imitation", kind=RATE, group=RECIPE)
    imitate_workers: int = arg(2, "forked processes playing the imitation's and the rollout stage's deals (the data "
                                  "do not change)", kind=Integer(1, 256), group=RECIPE)
    rounds: int = arg(1,
                      "rounds of policy improvement after the imitation (or --start-model): in round k the "
                      "network of round k-1 plays the rollouts of the search whose values it then learns; each round "
                      "is kept in <run>/rounds/ as it finishes (--resume); 0 = the imitation alone",
                      kind=Integer(0, 1000), group=RECIPE)
    rollout_deals: int = arg(25_000,
                             "deals a round: played by the search whose rollouts the network plays at every seat of "
                             "every world (each seat from its own observation), whose values of the cards the network "
                             "then learns (popejoan_env/training/rollout_games.py; full pack only)",
                             kind=Integer(1, 10**7), group=RECIPE)
    rollout_worlds: int = arg(8, "worlds a decision of a round's search", kind=Integer(1, MAX_SAMPLES), group=RECIPE)
    rollout_epochs: int = arg(2, "passes over a round's decisions", kind=Integer(1, 1000), group=RECIPE)
    rollout_lr: float = arg(3e-4, "Adam learning rate of a round's training", kind=RATE, group=RECIPE)
    batch_size: int = arg(512, "minibatch size of the imitation, the rollout stage and the PPO update",
                          kind=Integer(1, 10**6), group=RECIPE)
    reward_scale: float = arg(0.1, "rewards and values are counters times this (counters per deal run to tens)",
                              kind=SCALE, group=RECIPE)
    balance_range: str = arg("-24,72",
                             "each seat's starting balance is drawn from this range (the tournament starts deals at 0, "
                             "sessions at 48): balances do not change play, and the network should learn that",
                             group=RECIPE, action=NUMBER_LIST)  # --balance-range -24,72 reads as a value

    # ------------------------------------------------------------------ the network
    actor: str = arg("suits",
                     "the policy network: mlp (--net-arch) or suits (one network shared by the four suits, scoring "
                     "each suit's 13 ranks: popejoan_env.nets.suits; widths --actor-arch)", group=NETWORK)
    actor_arch: str = arg("128,256,256",
                          "widths of a suits actor: the context layer, then the suit network's hidden layers",
                          group=NETWORK)
    net_arch: str = arg("128,128", "hidden layer widths of the value network (and of an mlp policy)", group=NETWORK)
    activation: str = arg("tanh", "hidden activation: tanh or relu", group=NETWORK)

    # ------------------------------------------------------------------ PPO
    total_timesteps: int = arg(0,
                               "PPO learner decisions to train for after the recipe (forced cards and lone legal "
                               "leads are not decisions); 0 = none, the default", kind=Integer(0, 10**10), group=PPO)
    opponents: str = arg("stops_first:0.5,pool_hunter:0.2,random:0.05,self:0.25",
                         "opponents mix name:weight,...; each other seat draws a player from it every deal; 'self' = a "
                         "frozen snapshot of the learner", group=PPO)
    deals_per_episode: int = arg(1, "deals in one episode (K > 1: a session with board and balances carried)",
                                 kind=EPISODE_DEALS, group=PPO)
    vec_env: str = arg("batch",
                       "batch: every env in one BatchVecEnv on the batch engine, opponents vectorised (fastest); "
                       "dummy: copies of the Gymnasium view in this process; subproc: one worker process per env",
                       group=PPO)
    n_envs: int = arg(0,
                      "environments (learner seats) stepped together; 0 = the --vec-env's own: "
                      f"{VEC_ENVS['batch']} for batch, {VEC_ENVS['dummy']} for dummy, {VEC_ENVS['subproc']} for "
                      "subproc",
                      kind=Integer(0, 65536), group=PPO)
    n_steps: int = arg(0,
                       f"steps per environment per rollout; 0 = {ROLLOUT} / n_envs, so a rollout of {ROLLOUT} steps "
                       "whatever the number of envs", kind=Integer(0, 10**6), group=PPO)
    learning_rate: float = arg(3e-4, "Adam learning rate", kind=RATE, group=PPO)
    anneal_lr: bool = arg(True, "decay the learning rate linearly to 0 over the run", group=PPO)
    n_epochs: int = arg(10, "passes over each rollout", kind=Integer(1, 1000), group=PPO)
    gamma: float = arg(1.0, "discount; an episode is a handful of decisions and every counter counts the same, so 1.0",
                       kind=PROBABILITY, group=PPO)
    gae_lambda: float = arg(0.95, "GAE lambda", kind=PROBABILITY, group=PPO)
    clip_range: float = arg(0.2, "PPO clipping", kind=CLIP, group=PPO)
    ent_coef: float = arg(0.01, "entropy bonus", kind=COEFFICIENT, group=PPO)
    vf_coef: float = arg(0.5, "value-loss weight", kind=COEFFICIENT, group=PPO)
    max_grad_norm: float = arg(0.5, "gradient clipping", kind=GRAD_NORM, group=PPO)
    snapshot_interval: int = arg(100_000, "steps between self-play snapshots added to the opponents' 'self' pool",
                                 kind=Integer(1, 10**10), group=PPO)
    max_snapshots: int = arg(5, "snapshots kept in the 'self' pool (the oldest leave)", kind=Integer(1, 1000),
                             group=PPO)
    checkpoint_interval: int = arg(500_000, "steps between checkpoints in <run>/checkpoints/ (0 = none)",
                                   kind=Integer(0, 10**10), group=PPO)
    validate_args: bool = arg(False,
                              "torch.distributions argument checks; off is ~14% faster and the masks already keep "
                              "actions legal", group=PPO)
    max_minutes: float = arg(0.0,
                             "stop PPO after this many minutes of it (0 = no limit; --total-timesteps still caps it): "
                             "kept for popejoan exploit --method learn, whose budget it is", kind=Number(0.0, 10**6),
                             group=PPO)

    # ------------------------------------------------------------------ evaluations
    eval_interval: int = arg(250_000,
                             "PPO steps between evaluations (0 = only the final one, and none during the recipe)",
                             kind=Integer(0, 10**10), group=EVALUATION)
    eval_deals: int = arg(200, "duplicate deals per opponent in a periodic evaluation", kind=Integer(2, 10**6),
                          group=EVALUATION)
    eval_opponents: str = arg("stops_first,pool_hunter,pimc",
                              "scripted players to evaluate against periodically (comma list); evaluations use the "
                              "first table size of --players and the first --preset; they make the learning curve "
                              "(learning_curve.png; during the recipe they run in a process beside the training)",
                              group=EVALUATION)
    final_eval_deals: int = arg(300, "duplicate deals per opponent in the final evaluation (0 = skip)",
                                kind=Integer(0, 10**6), group=EVALUATION)
    final_eval_opponents: str = arg("random,lowest,stops_first,pool_hunter,pimc",
                                    "scripted players of the final evaluation (comma list)", group=EVALUATION)


def apply_quick(args: Args, given: frozenset[str]) -> Args:
    """``args`` with ``--quick``'s values in the fields whose flags the command line did not give (``given``)."""
    return with_quick(args, given, QUICK) if args.quick else args


# ---------------------------------------------------------------------- checking the flags
@dataclasses.dataclass(frozen=True)
class Setup:
    """What the flags mean once checked: the rules, table sizes, network widths, starting balances, self-play."""

    presets: list[Rules]
    table_sizes: list[int]
    net_arch: list[int]
    actor_arch: list[int]
    balance_range: list[int] | None
    uses_self: bool
    n_envs: int
    n_steps: int

    @property
    def rules(self) -> Rules:
        """The rules PPO and the evaluations play: the first preset."""
        return self.presets[0]


def _ints(text: str, flag: str) -> list[int]:
    """The integers of ``flag``'s comma list (``checks.split_list``); a PopeJoanError names the flag and the first
    item that is not one."""
    numbers: list[int] = []
    for item in split_list(text):
        try:
            numbers.append(int(item))
        except ValueError:
            raise PopeJoanError(f"{flag} takes a comma list of integers: {item!r} is not one "
                                f"(got {text!r})") from None
    return numbers


def check_args(args: Args) -> Setup:
    """Check every flag that can be wrong (a PopeJoanError says which), before anything is written."""
    check_run_name(args.run_name)
    presets = [parse_rules_options(preset, args.rules_option) for preset in split_list(args.preset)]
    if not presets or len({rules.name for rules in presets}) < len(presets):
        raise PopeJoanError(f"--preset takes one preset or a comma list of different ones, got {args.preset!r}")
    if len(presets) > 1 and (args.total_timesteps or not has_recipe(args)):
        raise PopeJoanError(f"--preset {args.preset} (several presets) is for the imitation alone: PPO's "
                            f"environments play one preset, so give --total-timesteps 0 and --imitate-deals > 0 "
                            f"(got {args.total_timesteps} and {args.imitate_deals})")
    table_sizes, net_arch = _ints(args.players, "--players"), _ints(args.net_arch, "--net-arch")
    actor_arch = _ints(args.actor_arch, "--actor-arch")
    balance_range = _ints(args.balance_range, "--balance-range") or None
    if balance_range is not None and (len(balance_range) != 2 or balance_range[0] > balance_range[1]):
        raise PopeJoanError(f"--balance-range must be LOW,HIGH with LOW <= HIGH, got {args.balance_range!r}")
    for n in table_sizes:
        check_players(n)
        for rules in presets:
            rules.hand_sizes(n)  # a table the pack cannot be dealt to (pack=small: 3 players) is refused here
    mix = parse_mix(args.opponents)
    for name, _ in mix:
        if name != SELF:
            make_player(name)  # an unknown opponent is refused before anything is written
    if args.activation not in ("tanh", "relu") or args.vec_env not in VEC_ENVS or not net_arch:
        raise PopeJoanError(f"--activation must be tanh or relu, --vec-env one of {', '.join(VEC_ENVS)}, "
                            f"--net-arch non-empty; got {args.activation!r}, {args.vec_env!r}, {args.net_arch!r}")
    if args.actor not in ("mlp", suits.ARCHITECTURE) or len(actor_arch) < 2 or min(actor_arch) < 1:
        raise PopeJoanError(f"--actor must be mlp or suits and --actor-arch at least 2 positive widths, "
                            f"got {args.actor!r} and {args.actor_arch!r}")
    if args.imitate_loss not in LOSSES:
        raise PopeJoanError(f"--imitate-loss must be one of {', '.join(LOSSES)}, got {args.imitate_loss!r}")
    expert = make_player(args.imitate_player)  # an unknown player is refused before anything is written
    if args.imitate_deals and args.imitate_loss == "regret" and not hasattr(expert, "last_values"):
        raise PopeJoanError(f"--imitate-loss regret learns the values of a search (pimc, pimc_net); "
                            f"--imitate-player {args.imitate_player} gives none: add --imitate-loss choice")
    if args.rounds and has_recipe(args) and any(rules.pack != "full" for rules in presets):
        raise PopeJoanError("a round of policy improvement plays its rollouts in the batch engine, which plays the "
                            "full pack only: add --rounds 0")
    if args.resume and not has_recipe(args):
        raise PopeJoanError("--resume continues the recipe's rounds, and --imitate-deals 0 has none")
    if not has_recipe(args) and not args.total_timesteps:
        raise PopeJoanError("nothing to train: --imitate-deals 0 with no --start-model and --total-timesteps 0 "
                            "(give --total-timesteps N for PPO alone, or leave --imitate-deals at its default)")
    check_backend(args.backend, args.address)
    for flag, names in (("--eval-opponents", args.eval_opponents),
                        ("--final-eval-opponents", args.final_eval_opponents)):
        split_specs(names, flag)  # a model path with a comma is refused as that, not as its first half
        for name in split_list(names):
            try:
                make_player(name)  # refused now, not after the training
            except PopeJoanError as err:
                raise PopeJoanError(f"{flag}: {err}") from None
    n_envs = args.n_envs or VEC_ENVS[args.vec_env]
    n_steps = args.n_steps or max(1, ROLLOUT // n_envs)
    setup = Setup(presets, table_sizes, net_arch, actor_arch, balance_range,
                  uses_self=any(name == SELF for name, _ in mix), n_envs=n_envs, n_steps=n_steps)
    check_runnable(args, setup)
    if args.start_model:
        check_start_model(args, setup)
    return setup


ROUND_FLAGS = ("rounds", "rollout_deals", "rollout_worlds", "rollout_epochs", "rollout_lr")
"""The fields of the flags that shape the rounds of policy improvement."""
IMITATION_FLAGS = ("imitate_deals", "imitate_player", "imitate_epochs", "imitate_loss", "imitate_lr")
"""The fields of the flags that shape the imitation alone (the rounds use ``--imitate-workers`` and
``--imitate-choice-weight`` too)."""
PPO_FLAGS = ("opponents", "deals_per_episode", "n_steps", "learning_rate", "anneal_lr", "n_epochs", "gamma",
             "gae_lambda", "clip_range", "ent_coef", "vf_coef", "max_grad_norm", "snapshot_interval", "max_snapshots",
             "checkpoint_interval", "max_minutes")
"""The fields of the flags that shape PPO's learning alone (the envs, --vec-env and --n-envs, are built either way)."""
NO_STAGE = {"imitate_deals": 0, "rounds": 0}
"""The values of these flags that say the run has no such stage: given so, they agree with a run without it."""


def check_given_stages(args: Args, given: frozenset[str]) -> None:
    """Refuse a flag of a stage that the command line gave where the run has no such stage: it would go unused."""
    recipe = has_recipe(args)
    absent = [  # (the fields of a stage this run does not have, why, what to do besides leaving the flag out)
        (IMITATION_FLAGS if args.start_model else (), f"--start-model {args.start_model} takes the imitation's place",
         ""),
        (() if recipe else (*IMITATION_FLAGS, "imitate_choice_weight", "imitate_workers"),
         "--imitate-deals 0 trains no imitation and no round", ""),
        (() if recipe else ROUND_FLAGS,
         "the rounds of policy improvement follow the imitation, and --imitate-deals 0 has none",
         "give --start-model, or "),
        (ROUND_FLAGS if recipe and not args.rounds else (), "--rounds 0 trains no round of policy improvement",
         "give --rounds 1 or more, or "),
        (() if args.total_timesteps else PPO_FLAGS, "--total-timesteps 0 (the default) trains no PPO",
         "give --total-timesteps N, or "),
    ]
    for fields, why, instead in absent:
        for name in fields:
            if name in given and (name not in NO_STAGE or getattr(args, name) != NO_STAGE[name]):
                flag = flag_of(name)
                if getattr(args, name) is False:  # a switch is named as it was given: --no-anneal-lr
                    flag = f"--no-{flag[2:]}"
                raise PopeJoanError(f"{flag} would go unused: {why} ({instead}leave {flag} out)")


def has_recipe(args: Args) -> bool:
    """Whether the run has the recipe's rounds: an imitation, or a --start-model in its place."""
    return bool(args.imitate_deals or args.start_model)


def check_start_model(args: Args, setup: Setup) -> None:
    """Refuse a --start-model that is not a readable model of this run's network, or one with no round after it."""
    if not args.rounds:
        raise PopeJoanError(f"--start-model {args.start_model} with --rounds 0 would only copy it: give --rounds 1 "
                            f"or more")
    theirs = read_metadata(args.start_model)  # a missing or unreadable file is refused here (a ModelFileError)
    mine = metadata(args, setup, 0)
    keys = ("obs_version", "architecture", "net_arch", "critic_arch", "activation")
    differ = [f"{key} {theirs.get(key)!r} (this run: {mine.get(key)!r})" for key in keys
              if theirs.get(key) != mine.get(key)]
    if differ:
        raise PopeJoanError(f"--start-model {args.start_model} is not a network of this run's flags: "
                            f"{'; '.join(differ)} (--actor, --actor-arch, --net-arch, --activation)")


def check_runnable(args: Args, setup: Setup) -> None:
    """Refuse the flags that are each fine but together cannot run, or would run to a model that cannot be read
    back, before anything is written."""
    if args.vec_env == "batch" and any(rules.pack != "full" for rules in setup.presets):
        raise PopeJoanError("--vec-env batch steps the envs in the batch engine, which plays the full pack only: add "
                            "--vec-env dummy (or subproc) for pack=small")
    if min(setup.net_arch) < 1:
        raise PopeJoanError(f"--net-arch takes positive layer widths, got {args.net_arch!r}")
    try:
        episode_options(args.deals_per_episode, setup.balance_range)  # the observation's bound on balances
    except PopeJoanError as err:
        raise PopeJoanError(f"--balance-range {args.balance_range}: {err}") from None
    rollout = setup.n_envs * setup.n_steps
    if args.total_timesteps and (rollout < 2 or args.batch_size < 2 or rollout % args.batch_size == 1):
        # MaskablePPO normalises each minibatch's advantages by their spread: one decision has none, and the
        # network's weights turn to NaN (a model no loader reads).
        raise PopeJoanError(f"PPO normalises each minibatch's advantages, which a minibatch of one decision cannot "
                            f"give: a rollout of {rollout} (--n-envs {setup.n_envs} x --n-steps {setup.n_steps}) in "
                            f"minibatches of --batch-size {args.batch_size} leaves one of 1; choose them so none is")
    values = policy_values(args.actor, setup.net_arch, setup.actor_arch)
    if values > MAX_NETWORK_VALUES:
        raise PopeJoanError(f"the network of --net-arch {args.net_arch}" +
                            (f" and --actor-arch {args.actor_arch}" if args.actor == suits.ARCHITECTURE else "") +
                            f" holds {values:,} values; a model file holds at most {MAX_NETWORK_VALUES:,} "
                            "(MAX_NETWORK_VALUES), so its model.zip could not be read back: choose narrower layers")


def policy_spec(args: Args, setup: Setup) -> tuple[Any, dict[str, Any]]:
    """MaskablePPO's ``policy`` and ``policy_kwargs`` from the flags."""
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[args.activation]
    policy: Any = "MlpPolicy"
    policy_kwargs: dict[str, Any] = dict(net_arch=dict(pi=setup.net_arch, vf=setup.net_arch), activation_fn=activation)
    if args.actor == suits.ARCHITECTURE:
        policy = SuitsPolicy
        policy_kwargs.update(actor_arch=setup.actor_arch, activation=args.activation)
    return policy, policy_kwargs


REPLACED = (RUN_MODEL, RUN_JSON, "learning_curve.png", "checkpoints/*.zip", "tb/events.out.tfevents.*")
"""What an earlier run of the same name wrote and a new one removes (``clear_run``): its rounds too, unless it
resumes (``Rounds.start``)."""


def check_inputs_kept(args: Args, run_dir: str, resumed: bool) -> None:
    """Refuse, before anything is removed, a file the flags play from that this run removes as an earlier run's
    output: ``--start-model <run>/model.zip`` deleted the model it named and then failed on it."""
    patterns = [*REPLACED, *(() if resumed else (os.path.join(ROUNDS_DIRECTORY, "round_*.zip"),))]
    doomed = [path for pattern in patterns for path in glob.glob(os.path.join(run_dir, pattern))]
    if not doomed:
        return
    named = [("--start-model", args.start_model)]
    named += [("--opponents", path) for spec, _ in parse_mix(args.opponents) for path in model_files(spec)]
    for flag, text in (("--imitate-player", args.imitate_player), ("--eval-opponents", args.eval_opponents),
                       ("--final-eval-opponents", args.final_eval_opponents)):
        named += [(flag, path) for spec in split_specs(text, flag) for path in model_files(spec)]
    for flag, path in named:
        if path and os.path.isfile(path) and any(os.path.samefile(path, old) for old in doomed):
            raise PopeJoanError(f"{flag} {path} is a file of the run {run_dir}, which this run replaces (an earlier "
                                "run's output is removed as it starts): copy it out of the run, or give another "
                                "--run-name")


def clear_run(run_dir: str) -> None:
    """Remove what an earlier run of the same name wrote (model, run.json, learning curve, checkpoints, logs),
    nothing else; a directory in the place of one of them is refused before anything is removed."""
    paths = [path for pattern in REPLACED for path in glob.glob(os.path.join(run_dir, pattern))]
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            raise OutputPathError(f"cannot replace {path}: it is a directory")
    for name in ("checkpoints", "tb"):
        path = os.path.join(run_dir, name)
        if os.path.lexists(path) and not os.path.isdir(path):
            raise OutputPathError(f"cannot write in {path}: it is not a directory")
    for path in paths:
        os.remove(path)


def metadata(args: Args, setup: Setup, steps: int) -> dict[str, Any]:
    """The metadata saved with a model (or snapshot) after ``steps`` learner steps."""
    sizes = list(dict.fromkeys(setup.table_sizes))  # each size once, however often --players weights it
    if args.actor == suits.ARCHITECTURE:
        return model_metadata(setup.presets, sizes, setup.actor_arch, activation=args.activation, timesteps=steps,
                              run_name=args.run_name, seed=args.seed, opponents=args.opponents,
                              architecture=suits.ARCHITECTURE, critic_arch=setup.net_arch)
    return model_metadata(setup.presets, sizes, setup.net_arch, activation=args.activation, timesteps=steps,
                          run_name=args.run_name, seed=args.seed, opponents=args.opponents)


def current_policy(model: MaskablePPO, args: Args, setup: Setup, steps: int) -> Any:
    """The learner's network now, as a numpy policy for the tournament."""
    return policy_from_state(model.policy.state_dict(), metadata(args, setup, steps))


# ---------------------------------------------------------------------- during training
class Callback(BaseCallback):
    """Progress bar, charts, self-play snapshots, checkpoints and periodic evaluations."""

    def __init__(self, args: Args, setup: Setup, ckpt_dir: str, eval_seed: int) -> None:
        super().__init__()
        self.args, self.setup, self.ckpt_dir, self.eval_seed = args, setup, ckpt_dir, eval_seed
        self.evals: list[dict[str, Any]] = []
        """Each periodic evaluation: its step and its results."""
        self.eval_seconds = 0.0
        """Wall time spent in periodic evaluations (not training)."""
        self.before_seconds = 0.0
        """Seconds of training before PPO (the imitation), counted in the learning curve's time."""
        self.first_eval_seconds = 0.0
        """Seconds of the evaluations during the imitation, before PPO."""

    def _init_callback(self) -> None:
        args = self.args
        self.bar = None
        if args.progress and args.total_timesteps:  # no PPO stage, no bar (it was an empty "0step" one)
            from tqdm.auto import tqdm

            self.bar = tqdm(total=args.total_timesteps, unit="step", dynamic_ncols=True, smoothing=0.05,
                            mininterval=1.0)
        self.next_snap = args.snapshot_interval
        self.next_eval = args.eval_interval or math.inf  # 0: none (a last rollout overshoots any total)
        self.started = time.perf_counter()
        self.next_ckpt = args.checkpoint_interval or math.inf
        self.last_eval = ""

    def _on_step(self) -> bool:
        args, n = self.args, self.num_timesteps
        if self.bar is not None and self.bar.n < args.total_timesteps:
            # the last rollout may overshoot the total; the bar stops at it
            self.bar.update(min(self.training_env.num_envs, args.total_timesteps - self.bar.n))
        if self.setup.uses_self and n >= self.next_snap:
            self.next_snap += args.snapshot_interval
            path = save_model(self.model, os.path.join(self.ckpt_dir, f"snapshot_{n:07d}.zip"),
                              metadata(args, self.setup, n))
            self.training_env.env_method("add_snapshot", path)
        if n >= self.next_ckpt:
            self.next_ckpt += args.checkpoint_interval
            save_model(self.model, os.path.join(self.ckpt_dir, f"step_{n:07d}.zip"), metadata(args, self.setup, n))
        if n >= self.next_eval:
            self.next_eval += args.eval_interval
            t0 = time.perf_counter()
            trained = t0 - self.started - self.eval_seconds  # seconds of training so far, evaluations left out
            rows = self.record_eval(self.model, n, trained + self.before_seconds)
            self.eval_seconds += time.perf_counter() - t0
            for name, r in rows.items():
                self.logger.record(f"eval/{name}/model_counters_per_deal", r["model_mean"])
                self.logger.record(f"eval/{name}/model_minus_opponent", r["diff_mean"])
        if args.max_minutes and time.perf_counter() - self.started - self.eval_seconds > 60 * args.max_minutes:
            return False  # the time budget is spent (evaluations not counted)
        return True

    def record_eval(self, model: MaskablePPO, n: int, trained: float) -> dict[str, dict[str, Any]]:
        """Evaluate the network now (after ``n`` PPO steps and ``trained`` seconds of training); kept for the
        learning curve."""
        args = self.args
        rows = evaluate(current_policy(model, args, self.setup, n), split_list(args.eval_opponents),
                        args.eval_deals, self.eval_seed, rules=self.setup.rules, seats=self.setup.table_sizes[0])
        self.evals.append({"timesteps": n, "train_seconds": round(trained, 1), "results": rows})
        self.last_eval = " ".join(f"model-{k} {r['diff_mean']:+.2f}" for k, r in rows.items())
        return rows

    def _on_rollout_end(self) -> None:
        buf = self.model.ep_info_buffer
        if buf:
            counters = float(np.mean([e["counters"] for e in buf]))
            self.logger.record("charts/counters_per_episode", counters)
            if self.bar is not None:
                post = f"counters/ep {counters:+.2f}"
                self.bar.set_postfix_str(post + (f" | eval {self.last_eval}" if self.last_eval else ""))

    def _on_training_end(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _clean_name(key: str) -> str:
    """SB3 logger keys -> CleanRL's TensorBoard names."""
    if key.startswith("train/"):
        return "losses/" + key[len("train/"):]
    return {"rollout/ep_rew_mean": "charts/episodic_return", "rollout/ep_len_mean": "charts/episodic_length",
            "time/fps": "charts/SPS"}.get(key, key)


class CleanRLBoard(TensorBoardOutputFormat):
    """TensorBoard output with CleanRL's key names (charts/..., losses/...)."""

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        """Write SB3's values under CleanRL's names."""
        kv = {_clean_name(k): v for k, v in key_values.items()}
        ex = {_clean_name(k): v for k, v in key_excluded.items()}
        super().write(kv, ex, step)


def log_recipe_points(logger: Logger, evals: list[dict[str, Any]]) -> None:
    """The recipe's learning-curve points in TensorBoard: ``recipe/<opponent>/model_minus_opponent`` and
    ``recipe/<opponent>/model_counters_per_deal`` with the point's index as the step, and its minutes of training
    as ``recipe/train_minutes``.  Without them a run with no PPO stage (the default) left ``tb/`` empty."""
    for point, row in enumerate(evals):
        if not row.get("results"):
            continue
        for name, r in row["results"].items():
            logger.record(f"recipe/{name}/model_minus_opponent", r["diff_mean"])
            logger.record(f"recipe/{name}/model_counters_per_deal", r["model_mean"])
        logger.record("recipe/train_minutes", row["train_seconds"] / 60)
        logger.dump(step=point)


# ---------------------------------------------------------------------- the recipe
def recipe(model: MaskablePPO, args: Args, setup: Setup, callback: Callback, run_dir: str,
           resumed: Rounds | None) -> dict[str, Any]:
    """The recipe before PPO: round 0, the imitation of the search, then ``--rounds`` rounds of policy improvement,
    each kept on disk as it finishes (``rounds.Rounds``; ``resumed``: the run's finished rounds, read back by
    ``--resume``); the learning curve's points during it; what ``run.json`` records of it."""
    state = resumed if resumed is not None else Rounds.start(run_dir, args)
    if state.done:
        last = state.model(len(state.done) - 1)
        _, weights = read_model(last)
        try:
            model.policy.load_state_dict(weights)  # the last finished round's network, as it was saved
        except (RuntimeError, TypeError, ValueError) as err:  # its SHA-256 is the state's, its shapes not this run's
            raise ResumeError(f"--resume: {last} is not a network of this run's flags "
                              f"({' '.join(str(err).split())[:160]})") from None
        for entry in state.done:
            callback.evals += entry["evals"]
        print(f"resuming {args.run_name} after round {len(state.done) - 1} ({state.path})", flush=True)
    earlier = sum(entry["record"]["seconds"] for entry in state.done)  # training seconds of the finished rounds
    beside = Beside(args, setup, callback.eval_seed) if args.eval_interval else None
    try:
        for k in range(len(state.done), args.rounds + 1):
            t0 = time.perf_counter()
            waits = callback.first_eval_seconds
            evals: list[dict[str, Any]] = []
            stage = round_stage(k, args.start_model)

            def after_epoch(epoch: int) -> None:  # the learning curve's points: after each epoch of the stage
                if beside is not None:
                    trained = earlier + time.perf_counter() - t0 - (callback.first_eval_seconds - waits)
                    row = {"timesteps": 0, "train_seconds": round(trained, 1), "stage": stage, "epoch": epoch}
                    evals.append(row)
                    callback.evals.append(row)
                    beside.submit(current_policy(model, args, setup, 0), row)

            if k == 0:
                record = start(model, args, after_epoch) if args.start_model else imitation(model, args, setup,
                                                                                             after_epoch)
            else:
                record = improvement(model, args, setup, k, after_epoch)
            if beside is not None:  # a round's points are saved with it: wait for them (evaluation time)
                t1 = time.perf_counter()
                beside.collect(wait=True)
                callback.first_eval_seconds += time.perf_counter() - t1
            record["seconds"] = round(time.perf_counter() - t0 - (callback.first_eval_seconds - waits), 1)
            earlier += record["seconds"]
            state.finish(k, lambda path: save_model(model, path, metadata(args, setup, 0)), record, evals)
    except BaseException:
        if beside is not None:
            beside.pool.terminate()  # an interrupted run leaves no evaluation process behind
        raise
    if beside is not None:
        beside.close()
        callback.last_eval = beside.last
    callback.before_seconds = earlier
    return {"imitation": state.done[0]["record"], "rounds": [entry["record"] for entry in state.done[1:]],
            "seconds": round(earlier, 1)}


def _bar(args: Args, total: int, what: str) -> Any:
    """A progress bar of the deals of a game stage (None without --progress)."""
    if not args.progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="deal", desc=what, dynamic_ncols=True, mininterval=1.0, leave=False)


def imitation(model: MaskablePPO, args: Args, setup: Setup, after_epoch: Callable[[int], None]) -> dict[str, Any]:
    """Round 0: the imitated search's games, then the network trained on them (the critic too when PPO follows);
    what ``run.json`` records of it."""
    print(f"imitation: {args.imitate_deals:,} deals of {args.imitate_player} at every seat, "
          f"{args.imitate_workers if args.backend == 'local' else 'Ray'} worker(s)", flush=True)
    bar = _bar(args, args.imitate_deals, "imitation: games")
    games = expert_games(args.imitate_player, tables_of(setup.presets, setup.table_sizes), args.imitate_deals,
                         args.seed + 20_000, balance_range=setup.balance_range, reward_scale=args.reward_scale,
                         workers=args.imitate_workers, backend=args.backend, address=args.address or None,
                         on_done=None if bar is None else bar.update)
    if bar is not None:
        bar.close()
    t0 = time.perf_counter()
    after_epoch(0)  # the network before it learns anything
    history = imitate(model.policy, games, epochs=args.imitate_epochs, lr=args.imitate_lr,
                      batch_size=args.batch_size, seed=args.seed, loss=args.imitate_loss,
                      choice_weight=args.imitate_choice_weight, critic=args.total_timesteps > 0,
                      after_epoch=after_epoch)
    print(f"imitation: {len(games.action):,} decisions in {games.seconds:.0f} s, trained in "
          f"{time.perf_counter() - t0:.0f} s; held-out agreement with {args.imitate_player} "
          f"{history[-1]['held_out_agreement']:.1%}", flush=True)
    return {"deals": args.imitate_deals, "decisions": int(len(games.action)), "player": args.imitate_player,
            "games_seconds": round(games.seconds, 1), "epochs": history}


def start(model: MaskablePPO, args: Args, after_epoch: Callable[[int], None]) -> dict[str, Any]:
    """Round 0 from --start-model: its network, as it was saved (checked against this run's by ``check_args``);
    what ``run.json`` records of it (the file and its SHA-256, which ``--resume`` holds the file to)."""
    sha = file_sha256(args.start_model)  # of the file as it is read (it may be replaced while the run goes on)
    _, weights = read_model(args.start_model)
    try:
        model.policy.load_state_dict(weights)
    except (RuntimeError, TypeError, ValueError) as err:  # metadata that names this run's widths, weights that are not
        raise PopeJoanError(f"--start-model {args.start_model} is not a network of this run's flags "
                            f"({' '.join(str(err).split())[:160]})") from None
    print(f"round 0: the network of {args.start_model}", flush=True)
    after_epoch(0)
    return {"deals": 0, "decisions": 0, "start_model": args.start_model,
            "start_sha256": sha, "epochs": []}


def improvement(model: MaskablePPO, args: Args, setup: Setup, k: int,
                after_epoch: Callable[[int], None]) -> dict[str, Any]:
    """Round ``k`` of policy improvement: the search whose rollouts the network plays (``rollout_games``) plays
    ``--rollout-deals`` deals, and the network learns its values of the cards; what ``run.json`` records of it."""
    games_seed, learn_seed = round_seeds(args.seed, k)
    print(f"round {k} of {args.rounds}: {args.rollout_deals:,} deals of the search whose rollouts the network plays, "
          f"{args.rollout_worlds} worlds a decision, "
          f"{args.imitate_workers if args.backend == 'local' else 'Ray'} worker(s)", flush=True)
    bar = _bar(args, args.rollout_deals, f"round {k}: games")
    games = rollout_games(current_policy(model, args, setup, 0), tables_of(setup.presets, setup.table_sizes),
                          args.rollout_deals, games_seed, worlds=args.rollout_worlds,
                          balance_range=setup.balance_range, reward_scale=args.reward_scale,
                          workers=args.imitate_workers, backend=args.backend, address=args.address or None,
                          on_done=None if bar is None else bar.update)
    if bar is not None:
        bar.close()
    t0 = time.perf_counter()
    history = imitate(model.policy, games, epochs=args.rollout_epochs, lr=args.rollout_lr,
                      batch_size=args.batch_size, seed=learn_seed, loss="regret",
                      choice_weight=args.imitate_choice_weight, critic=args.total_timesteps > 0,
                      after_epoch=after_epoch)
    print(f"round {k}: {len(games.action):,} decisions in {games.seconds:.0f} s, trained in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    return {"round": k, "deals": args.rollout_deals, "worlds": args.rollout_worlds,
            "decisions": int(len(games.action)), "games_seconds": round(games.seconds, 1), "epochs": history}


class Beside:
    """The learning curve's evaluations during the recipe, in one forked process beside the training: the
    training uses one torch thread, so on two cores they cost it little wall time.  Each result fills its row of
    ``Callback.evals`` and is printed as it arrives."""

    def __init__(self, args: Args, setup: Setup, seed: int) -> None:
        self.args, self.setup, self.seed = args, setup, seed
        self.pool = fork_pool(1)
        self.pending: list[tuple[dict[str, Any], Any]] = []
        self.last = ""
        """The latest evaluation, as text."""

    def submit(self, policy: Any, row: dict[str, Any]) -> None:
        """Evaluate ``policy`` (a numpy ``Policy``) against --eval-opponents; its results go to ``row``."""
        args = self.args
        job = (policy, split_list(args.eval_opponents), args.eval_deals, self.seed)
        where = {"rules": self.setup.rules, "seats": self.setup.table_sizes[0]}
        self.pending.append((row, self.pool.apply_async(evaluate, job, where)))
        self.collect()

    def collect(self, wait: bool = False) -> None:
        """Fill the rows whose evaluations are done (all of them, with ``wait``), in order."""
        while self.pending and (wait or self.pending[0][1].ready()):
            row, result = self.pending.pop(0)
            row["results"] = result.get()
            self.last = " ".join(f"model-{k} {r['diff_mean']:+.2f}" for k, r in row["results"].items())
            print(f"{row['stage']}, epoch {row['epoch']} ({row['train_seconds'] / 60:.1f} min): {self.last}",
                  flush=True)

    def close(self) -> None:
        """Wait for every evaluation, then end the process."""
        self.collect(wait=True)
        self.pool.close()
        self.pool.join()


# ---------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train, evaluate, save; returns the run summary written to run.json."""
    args, given = parse_given(Args, argv, __doc__.split("\n\n")[0])
    check_given_address(args.address, given)
    args = apply_quick(args, given)
    check_given_stages(args, given)
    setup = check_args(args)  # every flag that can be wrong is checked before anything is written
    # --backend ray: the cluster is joined (or a local Ray started) once, before anything is written, for every
    # game stage of the run
    with cluster.connected(args.address or None) if args.backend == "ray" else contextlib.nullcontext():
        return train(args, setup, argv)


def held_to(path: str, done: list[dict[str, Any]], key: str, what: str) -> None:
    """Refuse a resume whose file at ``path`` is not the one each finished round recorded under ``key``."""
    sha = file_sha256(path) if path and done else ""
    for finished in done if sha else ():
        if finished["record"].get(key) != sha:
            raise ResumeError(f"--resume: {path} is not {what.format(finished['round'])} (SHA-256 "
                              f"{str(finished['record'].get(key))[:16]}…, the file now {sha[:16]}…)")


def train(args: Args, setup: Setup, argv: list[str] | None) -> dict[str, Any]:
    """The run of ``main``, once its flags are checked."""
    # A run to resume is checked before anything is made, removed or played (a refused --resume of a directory that
    # is not there made it), its last network against the one these flags build.
    resumed = Rounds.resume(os.path.join(args.output_dir, args.run_name), args,
                            metadata(args, setup, 0)) if args.resume else None
    run_dir = make_run_dir(args.output_dir, args.run_name)
    check_place(run_dir)  # the rounds' files can be written (checked before anything is removed or played)
    check_inputs_kept(args, run_dir, resumed is not None)
    if resumed is not None:  # the files the run's rounds grew from are the files there now
        held_to(args.start_model, resumed.done[:1], "start_sha256", "the file this run started from")
    ckpt_dir = os.path.join(run_dir, "checkpoints")
    clear_run(run_dir)
    os.makedirs(ckpt_dir, exist_ok=True)
    torch.distributions.Distribution.set_default_validate_args(args.validate_args)  # off: ~14% faster (MEASURED.md)
    set_torch_threads(args.torch_threads)

    # ---------------------------------------------------------------- seeding
    # One place: the env seeds (batch: every stream of the BatchVecEnv from the seed; dummy/subproc: env i
    # gets seed + i and seeds its opponents), PPO's own seed (python random, numpy, torch via
    # set_random_seed, which seeds the envs again with the same seed), eval seeds.
    torch.manual_seed(args.seed)
    env_seed = args.seed
    ppo_seed = args.seed
    eval_seed = args.seed + 10_000
    # ---------------------------------------------------------------- seeding

    # the envs: BatchVecEnv (batch) or copies of PopeJoanGymEnv (dummy, subproc)
    env_kwargs = dict(players=setup.table_sizes, rules=setup.rules, opponents=args.opponents,
                      max_snapshots=args.max_snapshots, deals=args.deals_per_episode, reward_scale=args.reward_scale,
                      balance_range=setup.balance_range)
    if args.vec_env == "batch":
        # PPO reads terminal observations only for truncated episodes, and no episode here is truncated.
        vec = make_batch_vec_env(setup.n_envs, env_seed, terminal_observation=False, **env_kwargs)
    else:
        vec = make_vec_env(setup.n_envs, env_seed, args.vec_env, **env_kwargs)

    # the model: MaskablePPO with the flags' network, schedule and PPO settings, on CPU
    lr: Any = args.learning_rate
    if args.anneal_lr:
        rate = float(args.learning_rate)  # a float, not the Args: the schedule is pickled into the model file
        lr = lambda progress: rate * progress  # noqa: E731  (progress goes 1 -> 0)
    policy, policy_kwargs = policy_spec(args, setup)
    model = MaskablePPO(
        policy, vec, learning_rate=lr, n_steps=setup.n_steps, batch_size=args.batch_size,
        n_epochs=args.n_epochs, gamma=args.gamma, gae_lambda=args.gae_lambda, clip_range=args.clip_range,
        ent_coef=args.ent_coef, vf_coef=args.vf_coef, max_grad_norm=args.max_grad_norm,
        policy_kwargs=policy_kwargs,
        seed=ppo_seed, device="cpu", verbose=0,
        stats_window_size=2000,  # counters per deal are noisy (sd ~10): average many episodes for the charts
    )

    # the recipe (the imitation, then rounds of policy improvement), then PPO
    callback = Callback(args, setup, ckpt_dir, eval_seed)
    done = recipe(model, args, setup, callback, run_dir, resumed) if has_recipe(args) else None
    if setup.uses_self:  # the 'self' share needs a snapshot before the first reset: the network PPO starts from
        first = save_model(model, os.path.join(ckpt_dir, "snapshot_0000000.zip"), metadata(args, setup, 0))
        vec.env_method("add_snapshot", first)
    if args.tensorboard:
        model.set_logger(Logger(os.path.join(run_dir, "tb"), [CleanRLBoard(os.path.join(run_dir, "tb"))]))
        log_recipe_points(model.logger, callback.evals)

    if args.total_timesteps or not has_recipe(args):  # the PPO stage, when there is one
        print(f"training {args.run_name}: {args.preset}, players {setup.table_sizes}, opponents {args.opponents}, "
              f"{args.total_timesteps:,} steps, {setup.n_envs} {args.vec_env} envs x {setup.n_steps} steps a "
              f"rollout, obs {OBS_SIZE} (v{OBS_VERSION})", flush=True)
    t_start = time.perf_counter()
    model.learn(total_timesteps=args.total_timesteps, callback=CallbackList([callback]))
    wall = time.perf_counter() - t_start
    steps = int(model.num_timesteps)
    train_time = wall - callback.eval_seconds + callback.before_seconds  # the recipe is training too

    # saving, the final evaluation, run.json
    model_path = save_model(model, os.path.join(run_dir, RUN_MODEL), metadata(args, setup, steps))
    vec.close()
    final: dict[str, Any] = {}
    final_time = 0.0
    if args.final_eval_deals > 0:
        print(f"final evaluation: {args.final_eval_deals} duplicate deals against each of "
              f"{args.final_eval_opponents}", flush=True)
        t0 = time.perf_counter()
        final = evaluate(current_policy(model, args, setup, steps), split_list(args.final_eval_opponents),
                         args.final_eval_deals, eval_seed, rules=setup.rules, seats=setup.table_sizes[0],
                         progress=args.progress, workers=args.imitate_workers)
        final_time = time.perf_counter() - t0

    seconds = {"train": train_time, "recipe": callback.before_seconds,
               "periodic_eval": callback.eval_seconds + callback.first_eval_seconds, "final_eval": final_time}
    summary: dict[str, Any] = {
        "run_name": args.run_name,
        "command": command("train_ppo.py", argv),
        "args": dataclasses.asdict(args),
        "rules": rules_field(setup.presets),
        "obs_version": OBS_VERSION,
        "obs_size": OBS_SIZE,
        "package_version": __version__,
        "seed": args.seed,
        "envs": {"vec_env": args.vec_env, "n_envs": setup.n_envs, "n_steps": setup.n_steps},
        "timesteps": steps,
        "wall_seconds": {k: round(v, 1) for k, v in seconds.items()},
        "learner_steps_per_s": round(steps / max(seconds["train"] - seconds["recipe"], 1e-9), 1),
        "evaluations": callback.evals,
        "final_evaluation": final,
        "model": os.path.relpath(model_path, run_dir),
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "stable_baselines3": stable_baselines3.__version__, "sb3_contrib": sb3_contrib.__version__,
                     "numpy": np.__version__},
    }
    if done is not None:
        round0 = "start_model" if args.start_model else "imitation"  # round 0's record
        summary.update({round0: done["imitation"], "rounds": done["rounds"]})
    if callback.evals or final:
        deals = f"{args.eval_deals} duplicate deals a point" + (f", the last {args.final_eval_deals}" if final else "")
        title = f"{args.run_name}: {setup.rules.name}, {setup.table_sizes[0]} seats, {deals}"
        curve = write_learning_curve(os.path.join(run_dir, "learning_curve.png"), title, callback.evals, final=final,
                                     train_seconds=train_time)
        summary["learning_curve"] = os.path.relpath(curve, run_dir)
    write_run_json(run_dir, summary)
    stages = []
    if done is not None:
        stages.append(f"the network of {args.start_model}" if args.start_model else
                      f"the imitation of {done['imitation']['decisions']:,} {args.imitate_player} decisions")
        if done["rounds"]:
            decisions = sum(r["decisions"] for r in done["rounds"])
            rounds = f"{len(done['rounds'])} round{'s' if len(done['rounds']) > 1 else ''}"
            stages.append(f"{rounds} of policy improvement on {decisions:,} decisions of the search with the "
                          f"network's rollouts")
    stages.append(f"{steps:,} PPO learner steps ({summary['learner_steps_per_s']:,.0f}/s)")
    line = " and ".join([", ".join(stages[:-1]), stages[-1]]) if len(stages) > 1 else stages[0]
    print(f"\n{line} in {train_time:.0f} s of training; model: {model_path}")
    if final:
        print(f"\nagainst the scripted players ({args.final_eval_deals} duplicate deals each, "
              f"{setup.table_sizes[0]} players, counters per deal, 95% CI):")
        print(format_eval(final))
    return summary


def run(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run the command on ``argv`` (default ``sys.argv[1:]``) as ``prog``; the exit status."""
    return run_script(main, argv, prog)


if __name__ == "__main__":
    raise SystemExit(run(prog="popejoan train"))
