"""Players for any seat: scripted ones from naive to strong, and the factory that names them.

| name | plays |
|---|---|
| ``random`` | a uniformly random legal card |
| ``lowest`` | its lowest legal card, Aces first |
| ``stops_first`` | the traditional advice: runs it knows end in a stop, then the Pope, then its lowest cards |
| ``pool_hunter`` | for the honours, Matrimony, Intrigue and the Pope, weighing what is staked |
| ``pimc`` | search: samples the hidden cards, plays each lead out, picks the best on average |
| ``shipped`` | the shipped network, package data (``nets/data/shipped.zip``; every table size, both presets) |
| ``pimc_net`` | ``pimc``'s search (128 worlds) with the shipped network's log-probabilities as a prior (``players/guided.py``) |
| ``exploit:AGENT`` | a search best response to AGENT at the other seats (``players/best_response.py``) |

``make_player("pimc:samples=32", seed=1)`` builds one from a spec (a name,
optionally ``:key=value,key=value``); a path to a saved model is loaded by
``popejoan_env.players.learned.load_player``, which reads no pickle.  A spec is
a model path when it ends in ``.zip`` or holds a path separator, or names an
existing file and is not a scripted name: ``random`` is always the scripted
player, even with a file called ``random`` in the current directory (write
``./random`` for the file), and ``shipped`` always the shipped network.
Your own player is ``module:factory`` (``mypackage.agent:make_agent``): the
module is imported only for a spec of that form (from ``sys.path``, else from the
current directory), and ``factory(seed=seed)`` (or ``factory()`` when it takes
no ``seed``) must return a ``Player``.
A comma list of specs (``benchmark --players``, ``train --opponents``) is split by
``players.lists.split_specs``, which keeps a spec's parameters with it.

>>> p = make_player("stops_first", seed=0)
>>> p.name, sorted(SCRIPTED)
('stops_first', ['lowest', 'pimc', 'pool_hunter', 'random', 'stops_first'])
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys

from popejoan_env.checks import as_seed, brief, one_line
from popejoan_env.nets.model_file import ModelFileError
from popejoan_env.nets.shipped import SHIPPED, SHIPPED_MODEL, shipped_model
from popejoan_env.players.base import Player, ScriptedPlayer, UnknownPlayerError
from popejoan_env.players.best_response import EXPLOIT
from popejoan_env.players.pimc import PimcPlayer
from popejoan_env.players.pool_hunter import PoolHunterPlayer
from popejoan_env.players.simple import LowestPlayer, RandomPlayer
from popejoan_env.players.stops_first import StopsFirstPlayer

__all__ = [
    "EXPLOIT", "FACTORY_SPEC", "GUIDED", "LowestPlayer", "PimcPlayer", "Player", "PoolHunterPlayer", "RandomPlayer",
    "SCRIPTED",
    "SHIPPED",
    "SHIPPED_MODEL", "ScriptedPlayer", "StopsFirstPlayer", "UnknownPlayerError", "is_model_path", "make_player",
    "model_files",
    "parse_exploit_spec", "parse_spec",
    "shipped_model",
]

SCRIPTED: dict[str, type[ScriptedPlayer]] = {
    "random": RandomPlayer,
    "lowest": LowestPlayer,
    "stops_first": StopsFirstPlayer,
    "pool_hunter": PoolHunterPlayer,
    "pimc": PimcPlayer,
}
"""The scripted players by name, weakest first."""

GUIDED = "pimc_net"
"""The spec of the search guided by a network (``guided.GuidedPimcPlayer``, imported when asked for)."""
OPENSPIEL: dict[str, str] = {"openspiel_ismcts": "IsmctsPlayer", "openspiel_nfsp": "NfspPlayer"}
"""OpenSpiel's algorithms as players (``openspiel_players``, imported when asked for: it needs OpenSpiel)."""


MAX_NAME_CHARS = 100
"""Longest name of a ``module:factory`` player (its reports' rows and refusals name it)."""
FACTORY_SPEC = re.compile(r"(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):(?P<factory>[A-Za-z_]\w*)")
"""A researcher's own player: ``module:factory``, a dotted module and a function in it that returns a player."""


def is_model_path(spec: str) -> bool:
    """True when a spec names a saved model file rather than a scripted player (a scripted name never does)."""
    if _name_of(spec) in (SHIPPED, GUIDED, EXPLOIT, *OPENSPIEL):
        return False
    if spec.endswith(".zip") or any(sep and sep in spec for sep in (os.path.sep, os.path.altsep)):
        return True
    return _name_of(spec) not in SCRIPTED and os.path.isfile(spec)


def model_files(spec: str) -> list[str]:
    """The files a player spec plays from, in the order it names them: a model path itself, ``pimc_net``'s
    ``model=``, ``openspiel_nfsp``'s ``path=``, and a best response's agent and ``continuation`` (each followed
    in turn); only names of existing files (the shipped network is package data, named by ``shipped``). What
    resumes a result played by a spec holds these files to their SHA-256 (``evaluate.runner.settings``)."""
    if not isinstance(spec, str) or not spec.strip():
        return []
    if is_model_path(spec):
        return [spec] if os.path.isfile(spec) else []
    name = _name_of(spec)
    try:
        if name == EXPLOIT:
            options, agent = parse_exploit_spec(spec)
            out = model_files(agent)
            continuation = options.get("continuation")
            if isinstance(continuation, str) and continuation.strip() != "agent":
                out += model_files(continuation)
            return out
        if name not in (GUIDED, *OPENSPIEL):
            return []
        params = parse_spec(spec)[1]
    except UnknownPlayerError:
        return []  # a spec that cannot be built names no file: make_player refuses it by name
    named = params.get("model" if name == GUIDED else "path")
    return [named] if isinstance(named, str) and named != SHIPPED and os.path.isfile(named) else []


def _name_of(spec: str) -> str:
    """The player name of a spec: ``"pimc:samples=32"`` -> ``"pimc"``."""
    return spec.strip().partition(":")[0].strip()


def parse_spec(spec: str) -> tuple[str, dict[str, int | float | str]]:
    """Split ``"pimc:samples=32,rollout=greedy"`` into the name and its parameters (numbers converted)."""
    name, rest = _name_of(spec), spec.strip().partition(":")[2]
    params: dict[str, int | float | str] = {}
    for item in filter(None, (p.strip() for p in rest.replace(":", ",").split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            hint = ("; a model path with a comma cannot be a spec's parameter (the comma ends it): rename it (or "
                    "link it) without the comma") if item.endswith(".zip") or "/" in item else ""
            raise UnknownPlayerError(f"player spec {brief(spec, 200)}: parameter {brief(item, 200)} is not "
                                     f"key=value{hint}")
        if key.strip() in params:  # else the last would silently win, as exploit: refuses too
            raise UnknownPlayerError(f"player spec {brief(spec, 200)}: parameter {key.strip()!r} given twice")
        params[key.strip()] = _number(value.strip())
    return name, params


def parse_exploit_spec(spec: str) -> tuple[dict[str, int | float | str], str]:
    """``exploit:worlds=8:draws=32:pimc:samples=32`` -> ``({"worlds": 8, "draws": 32}, "pimc:samples=32")``: the
    best response's options (``key=value`` items before the agent's spec, each of ``best_response.OPTIONS``) and
    the agent's spec."""
    from popejoan_env.players.best_response import OPTIONS

    head, sep, rest = spec.strip().partition(":")
    if head.strip() != EXPLOIT or not sep:
        raise UnknownPlayerError(f"a best response spec is {EXPLOIT}:AGENT (options first: "
                                 f"{EXPLOIT}:worlds=8:AGENT), got {brief(spec, 200)}")
    options: dict[str, int | float | str] = {}
    while True:
        item, sep, after = rest.partition(":")
        key, eq, value = item.partition("=")
        if not eq or "/" in key or "\\" in key:
            break
        key = key.strip()
        if key not in OPTIONS:
            raise UnknownPlayerError(f"{EXPLOIT}: unknown option {brief(key)} in {brief(spec, 200)}; options are "
                                     f"{list(OPTIONS)} "
                                     "(an agent whose spec starts with name=value: write ./ before a file's name)")
        if key in options:
            raise UnknownPlayerError(f"{EXPLOIT}: option {key!r} given twice in {brief(spec, 200)}")
        options[key] = _number(value.strip())
        rest = after if sep else ""
        if not sep:
            break
    agent = rest.strip()
    if not agent:
        raise UnknownPlayerError(f"{EXPLOIT}: no agent after the options in {brief(spec, 200)} ({EXPLOIT}:AGENT)")
    if _name_of(agent) == EXPLOIT:
        raise UnknownPlayerError(f"{EXPLOIT}: the agent of a best response cannot be a best response "
                                 f"({brief(spec, 200)})")
    return options, agent


def _best_response(spec: str, seed: int | None) -> Player:
    """The search best response ``exploit:[KEY=VALUE:...]AGENT`` (``best_response.BestResponsePlayer``)."""
    from popejoan_env.players.best_response import BestResponsePlayer, NoKnownPolicyError

    options, agent = parse_exploit_spec(spec)
    make_player(agent)  # an agent that cannot be built is refused by name, before anything else
    try:
        return BestResponsePlayer(lambda s: make_player(agent, seed=s), seed=seed, agent_name=agent,
                                  make=lambda text, s: make_player(text, seed=s), **options)  # type: ignore[arg-type]
    except NoKnownPolicyError as err:
        raise UnknownPlayerError(f"{EXPLOIT}: {err}") from None


def _shipped(spec: str, params: dict[str, int | float | str], seed: int | None) -> Player:
    """The shipped network as a player (package data), refused with a reason when absent."""
    if params:
        raise UnknownPlayerError(f"player {SHIPPED!r} takes no parameters, got {brief(spec, 200)}")
    from popejoan_env.players.learned import load_player

    try:
        path = shipped_model()
    except ModelFileError as err:  # the package data is missing: the spec cannot be played
        raise UnknownPlayerError(str(err)) from None
    return load_player(path, seed)


def _number(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def module_meant(spec: str) -> str | None:
    """The ``module:factory`` spec meant by one written with a file's path (``mypackage/agent.py:make_agent``,
    ``myagent.py:make_agent``: ``mypackage.agent:make_agent``, ``myagent:make_agent``), or None."""
    path, sep, factory = spec.strip().rpartition(":")
    if not sep or not (path.endswith(".py") or any(s and s in path for s in (os.path.sep, os.path.altsep))):
        return None
    parts = [part for part in re.split(r"[\\/]", path.removesuffix(".py")) if part not in ("", ".")]
    meant = f"{'.'.join(parts)}:{factory}"
    return meant if FACTORY_SPEC.fullmatch(meant) else None


def _in_current_directory(module: str) -> bool:
    """True when the current directory holds the top-level package or module of a dotted module name."""
    top = module.partition(".")[0]
    return os.path.isfile(f"{top}.py") or os.path.isdir(top)


def _import_own(module: str) -> object:
    """Import a researcher's module; one that is nowhere on ``sys.path`` but in the current directory is found
    there, as ``python -m popejoan_env`` finds it (the ``popejoan`` console command does not put the current
    directory on ``sys.path``).

    The directory is appended, and only when the import failed for want of the module itself, so it never
    hides an installed package (ours included): it can only supply names found nowhere else.  It stays on
    ``sys.path``, so the module's own later imports of its neighbours, and worker processes, find them too.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        top = module.partition(".")[0]
        here = os.getcwd()
        if err.name != top or not _in_current_directory(module) or here in sys.path:
            raise
    sys.path.append(here)
    return importlib.import_module(module)


def _from_factory(spec: str, module: str, factory: str, seed: int | None) -> Player:
    """The player ``module:factory`` builds; an UnknownPlayerError when the import, the call or the result fails."""
    try:
        own = _import_own(module)
    except KeyboardInterrupt:  # Ctrl-C during a slow import: the command's one line and status 130
        raise
    except BaseException as err:  # noqa: BLE001 - the researcher's module: whatever it raises, named
        # in one line (a sys.exit() in it too: it would end the command with status 0 and no report)
        meant = module_meant(spec) if isinstance(err, ModuleNotFoundError) else None
        hint = f"; module:factory names a module, not a file: {meant!r}" if meant else ""
        raise UnknownPlayerError(f"player spec {brief(spec, 200)}: cannot import module {module!r} "
                                 f"({type(err).__name__}: {one_line(str(err))}){hint}") from None
    make = getattr(own, factory, None)
    if make is None:
        where = getattr(own, "__file__", None) or ""
        here = os.getcwd()
        if _in_current_directory(module) and where and os.path.commonpath([os.path.abspath(where), here]) != here:
            # python -m would have found the current directory's first; the console command finds the other first.
            raise UnknownPlayerError(f"player spec {brief(spec, 200)}: module {module!r} is {where}, which has no "
                                     f"{factory!r}, "
                                     "not the one in the current directory: rename yours")
        raise UnknownPlayerError(f"player spec {brief(spec, 200)}: module {module!r} has no {factory!r}")
    if not callable(make):
        raise UnknownPlayerError(f"player spec {brief(spec, 200)}: {module}.{factory} is not callable")
    try:
        takes_seed = "seed" in inspect.signature(make).parameters
    except (TypeError, ValueError):
        takes_seed = False
    try:
        player = make(seed=seed) if takes_seed else make()
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - the researcher's factory (builtins:exit too)
        raise UnknownPlayerError(f"player spec {brief(spec, 200)}: {module}.{factory}() raised {type(err).__name__}: "
                                 f"{one_line(str(err))}") from None
    if not isinstance(player, Player):
        raise UnknownPlayerError(f"player spec {brief(spec, 200)}: {module}.{factory}() returned "
                                 f"{type(player).__name__}, "
                                 "not a player (it needs a name, reset(seed) and act(view))")
    name = player.name
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME_CHARS or not name.isprintable() \
            or not (callable(player.reset) and callable(player.act)):
        # the name heads every report's rows (one line each), and reset and act are called every game
        raise UnknownPlayerError(f"player spec {brief(spec, 200)}: {module}.{factory}() returned a player whose "
                                 f"name is not a line of 1..{MAX_NAME_CHARS} printable characters or whose reset or "
                                 f"act cannot be called (name {brief(name, 60)})")
    return player


def make_player(spec: str, seed: int | None = None) -> Player:
    """A player from a spec: a scripted name with optional parameters, or a saved model's path."""
    if not isinstance(spec, str) or not spec.strip():
        raise UnknownPlayerError(f"a player spec must be a non-empty string, got {brief(spec, 200)}")
    seed = as_seed(seed)  # before anything is loaded or imported: -1, 2.5 and a Generator are refused by name
    if is_model_path(spec):
        if not os.path.exists(spec):
            meant = module_meant(spec)
            if meant:
                raise UnknownPlayerError(f"player spec {brief(spec, 200)} is a file's path: your own player is "
                                         f"module:factory, a dotted module name ({meant!r})")
            raise UnknownPlayerError(f"no saved model at {brief(spec, 200)} (a player spec ending in .zip is a model "
                                     "file)")
        try:
            from popejoan_env.players.learned import load_player
        except ImportError as err:
            raise UnknownPlayerError(f"cannot load the model {brief(spec, 200)}: the learned-player module is missing ({err})") from None
        return load_player(spec, seed)
    if _name_of(spec) == EXPLOIT:
        return _best_response(spec, seed)
    own = FACTORY_SPEC.fullmatch(spec.strip())
    if own and own["module"] not in SCRIPTED and own["module"] not in (SHIPPED, GUIDED):
        return _from_factory(spec.strip(), own["module"], own["factory"], seed)
    name, params = parse_spec(spec)
    if name == SHIPPED:
        return _shipped(spec, params, seed)
    cls: type[ScriptedPlayer] | None = SCRIPTED.get(name)
    if name == GUIDED:
        from popejoan_env.players.guided import GuidedPimcPlayer

        cls = GuidedPimcPlayer
    if name in OPENSPIEL:
        from popejoan_env.players import openspiel_players

        cls = getattr(openspiel_players, OPENSPIEL[name])
    if cls is None:
        raise UnknownPlayerError(
            f"unknown player {brief(name, 200)}; scripted players are {list(SCRIPTED)}, the networks {SHIPPED!r} and "
            f"{GUIDED!r}, a path to a saved model (.zip), or module:factory for your own"
        )
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "seed")]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        takes = f"takes {accepted}" if accepted else "takes no parameters"
        raise UnknownPlayerError(f"player {brief(name, 200)} has no parameter(s) {unknown}; it {takes}")
    return cls(seed=seed, **params)  # type: ignore[call-arg]
