"""docs/reliability.md lists every limit with the value its constant has: the page and the code cannot drift."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reliability.md"
CHECKED_MODULES = ["popejoan_env.web.app", "popejoan_env.web.games", "popejoan_env.web.replays",
                   "popejoan_env.web.clients", "popejoan_env.record", "popejoan_env.nets.model_file",
                   "popejoan_env.engine", "popejoan_env.batch.state", "popejoan_env.files", "popejoan_env.cluster",
                   "popejoan_env.__main__", "popejoan_env.tournament.runner", "popejoan_env.tournament.schedule",
                   "popejoan_env.simulate", "popejoan_env.players.pimc",
                   "popejoan_env.evaluate.runner", "popejoan_env.players.openspiel_players",
                   "popejoan_env.envs.openspiel_game", "popejoan_env.evaluate.resume",
                   "popejoan_env.players.lists", "popejoan_env.players.best_response",
                   "popejoan_env.training.rounds", "popejoan_env.checks", "popejoan_env.training.common",
                   "popejoan_env.evaluate.clairvoyant"]
"""Modules whose every ``MAX_*`` and ``*_SECONDS`` constant the page must list."""
NOT_LIMITS = {"popejoan_env.batch.state.MAX_EVENTS"}
"""Constants so named that bound no input (the most awards one deal can make: an array's dimension)."""


def rows() -> list[tuple[str, str, str]]:
    """(constant name, value column, module) of every limit row of the page's tables."""
    out = []
    for line in PAGE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"`[A-Z0-9_]+`( \(\w+\))?", cells[0]):
            name = cells[0].split("`")[1]
            module = cells[2].strip("`").removesuffix(".py").replace("/", ".")
            out.append((name, cells[1], module))
    return out


def shown(value: object) -> str:
    """A constant's value as the page writes it (thousands separated)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


@pytest.mark.parametrize("name, column, module", rows(), ids=lambda x: str(x)[:40])
def test_each_listed_limit_has_the_value_of_its_constant(name: str, column: str, module: str) -> None:
    pytest.importorskip("fastapi") if module.startswith("popejoan_env.web") else None
    pytest.importorskip("pyspiel") if "openspiel" in module else None
    value = getattr(importlib.import_module(module), name)
    assert column.split()[0] == shown(value), f"{name} in {module} is {value!r}; the page says {column!r}"


def test_every_limit_of_the_checked_modules_is_listed() -> None:
    listed = {(name, module) for name, _, module in rows()}
    missing = []
    for module in CHECKED_MODULES:
        source = (ROOT / (module.replace(".", "/") + ".py")).read_text()
        for name in re.findall(r"^(MAX_[A-Z0-9_]+|[A-Z0-9_]+_SECONDS|TEMPORARY_ATTEMPTS)\b[^=\n]*=", source,
                               re.MULTILINE):
            if (name, module) not in listed and f"{module}.{name}" not in NOT_LIMITS:
                missing.append(f"{module}.{name}")
    assert not missing, f"limits not on docs/reliability.md: {missing}"
