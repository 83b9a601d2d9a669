"""Input checks shared by every layer: integers that are not bools, comma lists, small JSON values (stdlib only).

Each input is checked once, where it enters; these helpers say what "an
integer" and "a comma list" mean everywhere, so every entry point refuses the
same things with the same words.

>>> as_int(3), as_int(True), as_int(2.0)
(3, None, None)
>>> split_list(" 3, 4,,5 ")
['3', '4', '5']
"""

from __future__ import annotations

import importlib
import json
import math
import numbers
import operator
from typing import Any

from popejoan_env.errors import MissingDependencyError, PopeJoanError, RulesError

MAX_JSON_CHARS = 10_000
"""Longest JSON value accepted for one ``--rules-option`` (a dressing is a few dozen characters)."""
MAX_JSON_DEPTH = 8
"""Deepest nesting of lists and objects accepted in such a value."""
MAX_REWARD_SCALE = 1000.0
"""Largest reward scale (rewards are counters times it) an env or a training command takes."""
MAX_EPISODE_DEALS = 1000
"""Most deals one episode (a session, board and balances carried) holds, in the envs and the commands alike."""
EXTRA_PACKAGES = frozenset({"torch", "stable_baselines3", "sb3_contrib", "tensorboard", "matplotlib", "threadpoolctl",
                            "ray", "torchrl", "tensordict"})
"""Top-level packages of the extras whose absence is named as a missing extra, not a traceback."""
MAX_ENVS = 1 << 16
"""Most deals one vector env steps together (``PopeJoanVectorEnv``, ``make_vec_env``; observations alone take 5 kB
a deal)."""


def as_int(value: object) -> int | None:
    """The int of an int or an integer-like value (numpy integers), else None; bools are never ints here."""
    if type(value) is int:
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, (float, str, bytes)):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def is_int(value: object) -> bool:
    """True for ints and integer-like values (numpy integers), False for bools and everything else."""
    return as_int(value) is not None


def brief(value: object, limit: int = 80) -> str:
    """A short ``repr`` for error messages, safe on anything: deep nesting, huge integers, long strings."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of about {int(value.bit_length() * 0.30103):,} digits"
    if isinstance(value, (list, tuple, dict, set)) and _depth(value, 4) > 4:
        return f"a {type(value).__name__} nested more than 4 levels deep"
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return f"a {type(value).__name__} that cannot be shown"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line (its whitespace runs made one space), cut to ``limit`` characters: another's message
    (an exception of a researcher's code) quoted in a refusal."""
    said = " ".join(text.split())
    return said if len(said) <= limit else said[: limit - 3] + "..."


def as_flag(value: object, name: str) -> bool:
    """``value`` if it is True or False (a numpy bool too), else a ``PopeJoanError`` naming ``name``: a string such as
    ``"False"`` or ``"no"`` is truthy, and read with ``bool()`` it would silently mean True."""
    if isinstance(value, bool):
        return value
    if type(value).__module__ == "numpy" and getattr(value, "dtype", None) is not None and value.dtype.kind == "b" \
            and getattr(value, "shape", None) == ():  # type: ignore[attr-defined]
        return bool(value)
    raise PopeJoanError(f"{name} must be True or False, got {brief(value)}")


def as_seed(seed: object) -> int | None:
    """A seed for ``numpy.random.default_rng``: None or a non-negative integer (numpy ints too, never bools)."""
    if seed is None:
        return None
    value = as_int(seed)
    if value is None or value < 0:
        raise PopeJoanError(f"a seed must be None or a non-negative integer, got {brief(seed)}")
    return value


def import_extra(module: str, extra: str, what: str, hint: str = "") -> Any:
    """``module`` imported, or a ``MissingDependencyError`` in one line: ``what`` needs it, and ``extra`` brings it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if (err.name or module).partition(".")[0] not in EXTRA_PACKAGES:
            raise  # not an extra's (a module of this package: a broken install), which no extra mends
        raise MissingDependencyError(f"{what} needs {err.name or module}, which is not installed: pip install "
                                     f"torch==2.13.0 && pip install 'popejoan[{extra}]'{hint}") from None


def split_list(text: str) -> list[str]:
    """The non-empty, stripped items of a comma-separated list."""
    return [item.strip() for item in text.split(",") if item.strip()]


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of lists, tuples, sets and dicts in a value, stopping once it passes ``limit``."""
    stack, deepest = [(value, 1)], 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, tuple, dict, set)):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def parse_json_value(text: str, what: str) -> Any:
    """A small JSON value (``true``, ``3``, ``{"pope": 8}``), else the text itself; refuses huge or deep input."""
    if len(text) > MAX_JSON_CHARS:
        raise RulesError(f"{what}: the value is {len(text):,} characters long; at most {MAX_JSON_CHARS:,} are read")
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text.strip()
    except (RecursionError, ValueError) as err:  # deep nesting, or an integer of thousands of digits
        raise RulesError(f"{what}: the value cannot be read ({type(err).__name__}: {str(err)[:80]})") from None
    if _depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise RulesError(f"{what}: the value is nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def ascii_count(text: object, what: str, most: int) -> int:
    """A whole number written in the ASCII digits 0-9 alone, at most ``most``; anything else (a sign, a space, an
    underscore, another script's digits, which ``int`` would read) is a ``PopeJoanError`` naming ``what``.  The
    digits are counted before ``int`` reads them, so its limit of 4,300 digits is never reached."""
    if not isinstance(text, str) or not text or not text.isascii() or not text.isdigit():
        raise PopeJoanError(f"{what} must be written in the digits 0-9 alone, got {brief(text)}")
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(most)) or int(digits) > most:
        shown = f"{len(digits):,} digits" if len(digits) > 30 else digits
        raise PopeJoanError(f"{what} must be at most {most:,}, got {shown}")
    return int(digits)


def check_reward_scale(value: object) -> float:
    """A reward scale as a float: a finite number in (0, ``MAX_REWARD_SCALE``] (never a bool); else a PopeJoanError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value <= MAX_REWARD_SCALE:
        raise PopeJoanError(f"reward_scale must be a number greater than 0 and at most {MAX_REWARD_SCALE:g} (rewards "
                            f"are counters times it), got {brief(value)}")
    return float(value)


def check_illegal_reward(value: object) -> float:
    """The reward of an illegal card in counters: a finite number (never a bool), as a float; else a PopeJoanError."""
    try:
        reward = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int too large for a float
        reward = float("nan")
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(reward):
        raise PopeJoanError(f"illegal_reward must be a finite number of counters, got {brief(value)}")
    return reward


def episode_deals(value: object) -> int:
    """Deals per episode as an int: 1..``MAX_EPISODE_DEALS`` (never a bool); else a PopeJoanError."""
    deals = as_int(value)
    if deals is None or not 1 <= deals <= MAX_EPISODE_DEALS:
        raise PopeJoanError(f"deals (per episode) must be an integer 1..{MAX_EPISODE_DEALS:,}, got {brief(value)}")
    return deals


def check_render_mode(value: object, modes: list[str]) -> str | None:
    """A render mode: None or one of ``modes`` (a string, compared as one); else a PopeJoanError naming it."""
    if value is not None and (not isinstance(value, str) or value not in modes):
        raise PopeJoanError(f"render_mode must be None or one of {modes}, got {brief(value)}")
    return value
