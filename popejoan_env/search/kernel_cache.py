"""Numba's on-disk caches of functions that compile another module's functions inline.

Numba checks a cached function against its own file only: a function that compiles ``play_rows`` (or
another module's kernel) in would keep running the old code after that module changed.  ``drop_stale``
keeps a stamp of the other modules (modification time and size) beside the cache and flushes the caches
when it differs; they compile again, once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from types import ModuleType
from typing import Any


def drop_stale(functions: Sequence[Any], sources: Sequence[ModuleType], stamp_name: str) -> None:
    """Flush the caches of ``functions`` when a file of ``sources`` is not the one they were cached with."""
    caches = [getattr(function, "_cache", None) for function in functions]
    if not all(hasattr(c, "flush") and hasattr(c, "_cache_path") for c in caches):
        return  # a numba whose dispatchers keep their cache otherwise: nothing this guard knows how to flush
    stamp = ""
    for source in sources:
        info = os.stat(str(source.__file__))
        stamp += f"{info.st_mtime_ns} {info.st_size}\n"
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
