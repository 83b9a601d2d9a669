"""The floors of pyproject.toml's dependencies are versions the package runs on: a floor below the first version
with an API the package imports lets pip install a set in which that module fails to import."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _floor(package: str) -> tuple[int, ...]:
    """The ``>=`` floor pyproject.toml's dependencies give ``package``, as a tuple of ints."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11's TOML reader")
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [d for d in deps if re.match(rf"{package}\b", d)]
    return tuple(int(part) for part in re.search(r">=\s*([0-9.]+)", spec)[1].split("."))


def test_gymnasium_floor_has_autoreset_mode() -> None:
    """The vector env imports ``gymnasium.vector.AutoresetMode``, which gymnasium added in 1.1."""
    source = (ROOT / "popejoan_env" / "envs" / "gymnasium_vector_env.py").read_text()
    assert "from gymnasium.vector import AutoresetMode" in source
    assert _floor("gymnasium") >= (1, 1)
