"""The direction of imports: each layer of the package imports only itself and the layers below it.

``LAYERS`` below is the one list of the layers (lowest first) and what each holds; the docs' architecture
page has its table from it (``layers_table``, called when the site is built: ``docs/_ext/popejoan_docs.py``).

Every ``import``/``from … import`` of ``popejoan_env`` in every module (function-level ones too) is
checked, nothing in the package imports ``training`` or ``benchmarks``, and no modules import each other
in a circle (within a layer either: a circle means two modules are one idea, or one belongs below the other).
"""

from __future__ import annotations

import ast
import pathlib
from typing import NamedTuple

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "popejoan_env"


class Layer(NamedTuple):
    """One floor of the package: its modules (top-level names) and what it holds."""

    modules: tuple[str, ...]
    what: str


LAYERS: list[Layer] = [
    Layer(("errors", "cards", "checks", "seats", "rules", "files", "cluster", "cli", "moved"),
          "the vocabulary: errors, card ids and notation, input checks (an int that is not a bool, comma lists, "
          "small JSON values), seat arithmetic (relative seats, eldest, next dealer), the `Rules` object (and "
          "`--rules-option`), atomic file writes, the scripts' one-line-refusal parser (`cli`) — stdlib only; "
          "`cluster`: the one way to start or join Ray and run tasks on it (ray imported only there, when used); "
          "`moved`: what 0.3.0 moved, refused in one line that names the new place"),
    Layer(("engine",),
          "the game: `Deal` (dealing, legal actions, play, payouts, settlement), the one decision loop "
          "(`advance`, `play_out`), the mid-game constructor `from_position` — stdlib only"),
    Layer(("session", "seat_view", "record", "render", "inference", "small_game"),
          "around a deal: sessions (carry-over and rotation live only here), what one seat may know and what "
          "the table can infer of each hand, game records, the one text picture of a seat's view, every deal of "
          "the small game (`small_game`) — stdlib only"),
    Layer(("observation", "batch", "batch_observation", "symmetry"),
          "numpy: the one encoder (a seat's view as a vector and back); the batch engine (N deals as one typed "
          "state: dealing, play, records, and its compiled kernels, numba: card for card the scalar engine) and "
          "its observations in batch; the suits that play alike and the relabellings of an observation among "
          "them (`symmetry`)"),
    Layer(("search", "nets"),
          "what the players share, in two rooms that do not import each other: `search/`, the search machinery "
          "(worlds consistent with what a seat knows and their weights, every world × candidate played out, "
          "the compiled kernels of `pimc`'s one-call search and of the scripted players' batched leads); `nets/`, "
          "networks as files and forwards (the model file's format and its checked reader, plain SB3 zips, the "
          "`suits` actor, the numpy `Policy`, the shipped network's file)"),
    Layer(("players", "table"),
          "the agents: every player answers `act(view)` (scripted, `pimc`, `pimc_net`, learned, human, "
          "OpenSpiel's) and `make_player` names them; `table`: the table loop (the other seats play until a seat "
          "without a player must choose)"),
    Layer(("envs", "opponents", "sb3_policies"),
          "adapters, in `envs/`: the PettingZoo AEC env, the Gymnasium single-agent view, the batch engine as "
          "vector environments (SB3 `VecEnv`, Gymnasium `VectorEnv`), Ray RLlib (mixed table sizes, the masking "
          "RLModule, its export to a model file), OpenSpiel's games; the opponent pool with self-play snapshots; "
          "MaskablePPO's oracle-critic and `suits` policies (importable, so `MaskablePPO.load` resumes their "
          "models anywhere)"),
    Layer(("tournament", "evaluate", "web", "simulate", "training", "__main__"),
          "applications: the duplicate tournament (schedule, runner, scores, statistics, reports), `evaluate` (the "
          "citable evaluation: the frozen deal set, the reference panel, variance reduction, ratings, the "
          "report, exact exploitability on the small game and `popejoan exploit`), the web app, "
          "`simulate`'s datasets (one stream or shards, locally or on Ray), the training and benchmark commands "
          "(`training/`: one module per recipe, `popejoan train` ...; the repository's `training/*.py` are thin "
          "wrappers of them) and the command line"),
]

def layer_of(module: str) -> int:
    """The layer of a module named relative to the package (``players.pimc`` is in ``players``)."""
    top = module.split(".")[0]
    for k, layer in enumerate(LAYERS):
        if top in layer.modules:
            return k
    raise AssertionError(f"popejoan_env.{module} is in no layer: add it to LAYERS")


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


def package_imports(module: str, path: pathlib.Path) -> set[str]:
    """The package modules (named as ``modules()`` names them) that a module imports: ``from popejoan_env.x
    import y`` counts ``x.y`` where ``y`` is a submodule, else ``x``; the module itself and the package
    facade are left out."""
    known = {m for m, _ in modules()}
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = [f"{node.module}.{alias.name}" for alias in node.names]
            # ``from popejoan_env.players import suits`` takes a submodule, not a name of the facade
            names = subs if all(n[len("popejoan_env."):] in known for n in subs) else [node.module]
        else:
            continue
        for name in names:
            if name.startswith("popejoan_env.") and name[len("popejoan_env."):] in known:
                out.add(name[len("popejoan_env."):])
    out.discard(module)
    return out


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """A list of modules that import each other in a circle (the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_find_circle_finds_one_and_only_one() -> None:
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = {module: package_imports(module, path) for module, path in modules()}
    circle = find_circle(graph)
    assert circle is None, "these modules import each other in a circle: " + " -> ".join(circle or [])


def layers_table() -> str:
    """The README's table of the layers, from ``LAYERS``."""
    rows = ["| layer | modules | what it holds |", "|---:|---|---|"]
    for k, layer in enumerate(LAYERS):
        names = ", ".join(f"`{m}/`" if (PACKAGE / m).is_dir() else f"`{m}`" for m in layer.modules)
        rows.append(f"| {k} | {names} | {layer.what} |")
    return "\n".join(rows) + "\n"

def private_imports(source: str) -> list[tuple[int, str]]:
    """(line, name) of every private name (``_x``, not a dunder) imported from one of the package's modules."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("popejoan_env"):
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def test_private_imports_finds_a_private_name_and_not_a_public_or_dunder_one() -> None:
    source = "from popejoan_env.engine import Deal, __doc__\ndef f():\n    from popejoan_env.search.worlds import _x\n"
    assert private_imports(source) == [(3, "popejoan_env.search.worlds._x")]


@pytest.mark.parametrize("root", ["popejoan_env", "training", "benchmarks"])
def test_no_module_imports_another_modules_private_names(root: str) -> None:
    # A private name stays with its owner (one source of truth a reader can find by its public name); tests may
    # reach inside, the package and its scripts may not.
    found = [f"{path.relative_to(ROOT)}:{line} imports {name}"
             for path in sorted((ROOT / root).rglob("*.py")) for line, name in private_imports(path.read_text())]
    assert not found, "\n".join(found)


def test_search_and_nets_do_not_import_each_other() -> None:
    # Two rooms of one floor: the search machinery plays worlds out without networks, and a network file knows
    # nothing of search; a player that needs both (pimc_net) brings them together one floor up.
    for module, path in modules():
        room = module.split(".")[0]
        if room not in ("search", "nets"):
            continue
        other = "nets" if room == "search" else "search"
        for line, name in imports_of(path):
            assert not name.startswith(f"popejoan_env.{other}"), f"{path.name}:{line} imports {name}"


@pytest.mark.parametrize("old", sorted(__import__("popejoan_env.moved", fromlist=["MODULES"]).MODULES))
def test_an_old_module_is_refused_naming_its_new_place(old: str) -> None:
    import importlib

    from popejoan_env.moved import MODULES

    with pytest.raises(ModuleNotFoundError, match=f"{old} is gone since popejoan 0.3.0: import from "):
        importlib.import_module(old)
    for new in MODULES[old].replace(" and ", " ").replace("(", " ").split():
        if new.startswith("popejoan_env."):  # every place the message names exists
            try:
                importlib.import_module(new.rstrip(",)"))
            except ModuleNotFoundError as err:  # a place that needs an extra (ray): skipped without it, as elsewhere
                if (err.name or "popejoan_env").partition(".")[0] == "popejoan_env":
                    raise
                pytest.skip(f"{new.rstrip(',)')} needs {err.name}, which an extra installs")


def test_a_name_that_left_a_module_is_refused_naming_its_new_place() -> None:
    import importlib

    from popejoan_env.moved import NAMES

    for old, names in NAMES.items():
        module = importlib.import_module(old)
        for name, new in names.items():
            if name in vars(module):  # still offered (the module uses it): an import keeps working
                assert getattr(module, name) is getattr(importlib.import_module(new), name)
                continue
            with pytest.raises(ImportError, match=f"{old}.{name} moved in popejoan 0.3.0: import it from {new}"):
                exec(f"from {old} import {name}", {})
            assert getattr(importlib.import_module(new), name) is not None
    assert not hasattr(importlib.import_module("popejoan_env.players.learned"), "no_such_name")

