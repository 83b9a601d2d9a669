"""Every example in the package's docstrings runs and prints what it says (``python -m doctest`` on each module)."""

from __future__ import annotations

import doctest
import importlib

import pytest

from test_architecture import modules

MODULES = [m for m, _ in modules() if m != "__main__"]
NEEDS = {"envs.rllib_env": ("ray", "pip install -e '.[ray]'"), "envs.rllib_policy": ("ray", "pip install -e '.[ray]'"),
         "envs.openspiel_game": ("pyspiel", "pip install -e '.[openspiel]'"),
         "players.openspiel_players": ("pyspiel", "pip install -e '.[openspiel]'"),
         "web.schema": ("pydantic", "pip install -e '.[web]'"),
         "training.mappo": ("torchrl", "pip install -e '.[marl]'")}
"""Modules that import an optional package at the top: (package, how to install it)."""


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module: str) -> None:
    if module in NEEDS:
        pytest.importorskip(NEEDS[module][0], reason=NEEDS[module][1])
    result = doctest.testmod(importlib.import_module(f"popejoan_env.{module}"), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples of popejoan_env.{module} fail"
