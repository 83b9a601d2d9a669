"""The direction of imports: each layer of the package imports only itself and the layers below it.

The layers, lowest first (README "Architecture"):

0. vocabulary: ``errors``, ``cards``, ``checks``, ``seats``, ``rules``, ``files``, ``cluster`` (Ray tasks), ``cli`` (scripts' parser)
1. the game: ``engine``
2. around a deal: ``session``, ``seat_view``, ``record``, ``render``, ``inference``
3. numpy: ``observation``, the batch engine ``batch/`` (its state, dealing, play, records and compiled kernels) and its encoder ``batch_observation``
4. players: ``players/*``
5. adapters: ``aec`` (PettingZoo), ``opponents`` and ``gym_env`` (Gymnasium), ``vec_env`` and ``vector_env`` (the batch engine), ``rllib_env`` (Ray RLlib), ``wrappers`` (old alias)
6. applications: ``tournament``, ``stats``, the web app ``web``, ``simulate``, ``__main__``

Every ``import``/``from … import`` of ``popejoan_env`` in every module (function-level ones too) is
checked, and nothing in the package imports ``training`` or ``benchmarks``.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "popejoan_env"
LAYERS: list[set[str]] = [
    {"errors", "cards", "checks", "seats", "rules", "files", "cluster", "cli"},
    {"engine"},
    {"session", "seat_view", "record", "render", "inference"},
    {"observation", "batch", "batch_observation"},
    {"players"},
    {"aec", "opponents", "gym_env", "wrappers", "vec_env", "vector_env", "rllib_env", "sb3_policies"},
    {"tournament", "stats", "web", "simulate", "__main__"},
]


def layer_of(module: str) -> int:
    """The layer of a module named relative to the package (``players.pimc`` is in ``players``)."""
    top = module.split(".")[0]
    for k, names in enumerate(LAYERS):
        if top in names:
            return k
    raise AssertionError(f"popejoan_env.{module} is in no layer: add it to LAYERS and to the README")


def modules() -> list[tuple[str, pathlib.Path]]:
    """Every module of the package but its facade ``__init__``, named relative to the package."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        if rel.name == "__init__" and rel.parent == pathlib.Path("."):
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out.append((".".join(parts), path))
    return out


def imports_of(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


@pytest.mark.parametrize(("module", "path"), modules(), ids=[m for m, _ in modules()])
def test_imports_point_down_the_layers(module: str, path: pathlib.Path) -> None:
    mine = layer_of(module)
    for line, name in imports_of(path):
        top = name.split(".")[0]
        assert top not in ("training", "benchmarks"), f"{path.name}:{line} imports {name}"
        if top != "popejoan_env" or name == "popejoan_env":
            continue
        other = name.split(".", 1)[1]
        assert layer_of(other) <= mine, (
            f"popejoan_env.{module} (layer {mine}) imports popejoan_env.{other} (layer {layer_of(other)}) "
            f"at line {line}: imports must point down the layers"
        )


def test_every_module_is_in_a_layer() -> None:
    for module, _ in modules():
        layer_of(module)
