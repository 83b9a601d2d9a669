"""The adapters: the game as each framework expects it, each a thin layer over the engine and the players.

| module | framework | what |
|---|---|---|
| ``pettingzoo_aec`` | PettingZoo | ``env()``/``raw_env``: the AEC environment ``pope_joan_v2``, every seat an agent |
| ``gymnasium_env`` | Gymnasium | ``PopeJoanGymEnv``: one learner seat, the others played by opponents |
| ``sb3_vec_env`` | Stable-Baselines3 | ``BatchVecEnv``: N learner seats on the batch engine, for MaskablePPO |
| ``gymnasium_vector_env`` | Gymnasium | ``PopeJoanVectorEnv``: every seat of N deals on the batch engine, for your own algorithms |
| ``rllib_env`` | Ray RLlib | ``MixedTablesEnv``: the AEC env at mixed table sizes as one multi-agent env |
| ``rllib_policy`` | Ray RLlib | the masking RLModule ``training/train_rllib.py`` trains, the seat-to-module mapping, the export to a model file |
| ``openspiel_game`` | OpenSpiel | ``python_pope_joan`` and ``python_pope_joan_small``, registered with ``pyspiel`` when imported |
| ``registration`` | Gymnasium | ``ENV_VERSION``, the one version of every id; ``popejoan/PopeJoan-v2`` for ``gymnasium.make`` |

Each is imported on its own (``from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv``): importing
this package imports no framework.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from popejoan_env.errors import MissingDependencyError


def register_for(specs: Iterable[str]) -> None:
    """Import the adapters that player specs need before ``make_player`` builds them: the ``openspiel_*``
    players search the OpenSpiel game, which ``openspiel_game`` registers (the players sit a layer below it).
    Without OpenSpiel, the players' own one-line refusal says what to install."""
    from popejoan_env.players import OPENSPIEL

    if any(str(spec).split(":")[0] in OPENSPIEL for spec in specs):
        with contextlib.suppress(MissingDependencyError):
            import popejoan_env.envs.openspiel_game  # noqa: F401
