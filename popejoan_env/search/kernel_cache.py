"""Numba's on-disk caches of functions that compile another module's functions inline.

Numba checks a cached function against its own file only: a function that compiles ``play_rows`` (or
another module's kernel) in would keep running the old code after that module changed.  ``drop_stale``
adds the other modules' stamps (modification time and size, taken when this process imports them, as numba
takes its own) to the stamp numba keeps in the function's cache index, so code compiled from other sources
is never loaded, whichever process saved it and when; it also keeps the stamp beside the cache and flushes
the caches when it differs (stale code is dropped from disk); they compile again, once.

A first compilation takes a while (the first ``pimc`` game of a fresh install ~20 s on 2 cores, the batch
engine's ~14 s): ``announce_first_compile`` says so on the ``popejoan`` logger before it starts, once per command
(its process and the workers it forks, ``cli.first_in_command``), so a command that waits says why (with no logging
set up, Python prints a warning of it on stderr).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from popejoan_env.cli import first_in_command


def drop_stale(functions: Sequence[Any], sources: Sequence[ModuleType], stamp_name: str) -> None:
    """Flush the caches of ``functions`` when a file of ``sources`` is not the one they were cached with."""
    caches = [getattr(function, "_cache", None) for function in functions]
    if not all(hasattr(c, "flush") and hasattr(c, "_cache_path") for c in caches):
        return  # a numba whose dispatchers keep their cache otherwise: nothing this guard knows how to flush
    stamp = ""
    for source in sources:
        info = os.stat(str(source.__file__))
        stamp += f"{info.st_mtime_ns} {info.st_size}\n"
    for cache in caches:
        # The sources this process compiles in are part of the stamp of its cache index: a process that imported
        # them before they changed saves its code under the old stamp, which no later process takes as fresh (the
        # stamp file alone did not hold: that process could save after a newer one had flushed and stamped).
        index = getattr(cache, "_cache_file", None)
        if index is not None and hasattr(index, "_source_stamp"):
            if not hasattr(index, "_own_source_stamp"):
                index._own_source_stamp = index._source_stamp
            index._source_stamp = (index._own_source_stamp, stamp)
    path = os.path.join(caches[0]._cache_path, stamp_name)  # type: ignore[union-attr]
    try:
        with open(path) as f:
            if f.read() == stamp:
                return
    except OSError:
        pass
    for cache in caches:
        cache.flush()  # type: ignore[union-attr]
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(stamp)
    except OSError:
        pass  # a read-only cache: flushed now, checked again next time


log = logging.getLogger("popejoan")
FIRST_COMPILE = ("popejoan: numba is compiling the game's kernels for their first use (about 20 s, once: later runs "
                 "load them from numba's cache)")
"""What ``announce_first_compile`` logs (a warning, so Python shows it with no logging set up)."""
_seen: set[int] = set()
_announced: list[bool] = []


def on_disk(function: Any) -> bool | None:
    """Whether numba holds compiled code of ``function`` (an ``njit(cache=True)`` dispatcher) for its current
    source on disk; None when this numba keeps its cache otherwise."""
    index = getattr(getattr(function, "_cache", None), "_cache_file", None)
    if not hasattr(index, "_load_index"):
        return None
    try:
        return bool(index._load_index())  # {} when absent, stale (another source or numba version) or flushed
    except Exception:  # noqa: BLE001 - an unreadable index: numba will compile, as for no index
        return False


def announce_first_compile(functions: Sequence[Any]) -> None:
    """Log ``FIRST_COMPILE`` once per command if a function of ``functions`` will compile on its first call
    (cheap after the first call for the same functions: the callers run it before every compiled call)."""
    if _announced:
        return
    key = sum(id(function) for function in functions)
    if key in _seen:
        return
    _seen.add(key)
    if any(on_disk(function) is False and not function.signatures for function in functions):
        _announced.append(True)
        if first_in_command():
            log.warning(FIRST_COMPILE)
