"""popejoan: a rule-faithful Pope Joan engine, PettingZoo environment and training stack.

The engine (``cards``, ``rules``, ``engine``, ``session``, ``record``) is pure
Python; ``env``/``raw_env`` (PettingZoo, module ``envs.pettingzoo_aec``) and the Gymnasium wrappers are loaded
only when first used, so the engine works without them.  Importing it registers the single-agent view's
Gymnasium id, ``popejoan/PopeJoan-v2`` (``envs.registration``).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from popejoan_env.cards import CARD_NAMES, PACK, POPE, card_name, parse_card
from popejoan_env.engine import Deal
from popejoan_env import moved
from popejoan_env.envs.registration import register_when_gymnasium_loads
from popejoan_env.errors import (
    GameOverError, IllegalActionError, InvalidDealError, PopeJoanError, RecordError, RulesError,
    UnknownCardError,
)
from popejoan_env.rules import COMPARTMENTS, MODERN, PRESETS, VICTORIAN, Rules
from popejoan_env.session import Session

moved.install()  # the modules 0.3.0 moved are refused in one line that names their new place
# gymnasium.make("popejoan/PopeJoan-v2") after `import popejoan_env`, without importing gymnasium here.
register_when_gymnasium_loads()

try:
    __version__ = version("popejoan")
    """The installed distribution's version (``pyproject.toml`` is its one source)."""
except PackageNotFoundError:  # a source tree put on sys.path without installing it
    __version__ = "0+unknown"

__all__ = [
    "CARD_NAMES", "COMPARTMENTS", "Deal", "GameOverError", "IllegalActionError", "InvalidDealError",
    "MODERN", "PACK", "POPE", "PRESETS", "PopeJoanError", "RecordError", "Rules", "RulesError",
    "Session", "UnknownCardError", "VICTORIAN", "__version__", "card_name", "parse_card",
]



def __getattr__(name: str) -> Any:
    if name in ("env", "raw_env"):
        import importlib

        return getattr(importlib.import_module("popejoan_env.envs.pettingzoo_aec"), name)
    raise AttributeError(f"module 'popejoan_env' has no attribute {name!r}")
