"""The training and evaluation commands (``popejoan train``, ``popejoan benchmark`` ...): one module per recipe,
each with ``Args`` (its flags) and ``main(argv)``; ``training/*.py`` in a checkout are thin wrappers of them."""

from __future__ import annotations

import importlib
from typing import NamedTuple

from popejoan_env.checks import EXTRA_PACKAGES
from popejoan_env.cli import OneLineParser, interrupted


class Command(NamedTuple):
    """A training command: its module in this package, its script in ``training/``, the extras it needs, its help."""

    module: str
    script: str
    extras: str
    help: str


COMMANDS: dict[str, Command] = {
    "train": Command("ppo", "train_ppo.py", "train",
                     "the main job: imitate the pimc search (and optionally PPO after it), then measure the model"),
    "train-rllib": Command("rllib", "train_rllib.py", "train,ray",
                           "self-play PPO on Ray RLlib, one machine or a cluster"),
    "train-cleanrl": Command("cleanrl", "cleanrl_ppo.py", "train", "a single-file CleanRL-style PPO on the vector env"),
    "train-mappo": Command("mappo", "train_mappo.py", "train,marl",
                           "MAPPO on TorchRL: the PettingZoo env, a centralised critic on state()"),
    "benchmark": Command("benchmark", "benchmark.py", "",
                         "a duplicate tournament of players and model files: JSON, Markdown and a chart"),
    "learner-throughput": Command("learner_throughput", "learner_throughput.py", "train",
                                  "learner decisions per second of each training set-up"),
}
"""Every training command by its ``popejoan`` name."""

def run_command(name: str, argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run the training command ``name`` on ``argv`` (default ``sys.argv[1:]``) as ``prog``; the exit status."""
    command = COMMANDS[name]
    try:
        module = importlib.import_module(f"{__name__}.{command.module}")  # torch and friends: seconds
    except KeyboardInterrupt:
        return interrupted(OneLineParser(prog=prog).prog)
    except ModuleNotFoundError as err:
        if not command.extras or (err.name or "").split(".")[0] not in EXTRA_PACKAGES:
            raise
        OneLineParser(prog=prog).error(
            f"{err.name} is not installed: this command needs the '{command.extras}' extra "
            f"(pip install torch==2.13.0 && pip install 'popejoan[{command.extras}]')")
    return module.run(argv, prog)
