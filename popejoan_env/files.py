"""Writing output files: atomically, and checking a destination before the work that fills it (stdlib only).

A result is written to a temporary file beside its destination and moved
into place with ``os.replace``, so a reader never finds half a file and an
interrupted run leaves the previous result whole.  ``check_writable`` is
called before a long run, so a bad destination is refused before the work
rather than after it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence

from popejoan_env.errors import PopeJoanError


class OutputPathError(PopeJoanError):
    """A destination that cannot be written: an unwritable or impossible directory, or a directory in the way."""


@contextlib.contextmanager
def replacing(path: str) -> Iterator[str]:
    """A temporary path beside ``path`` to write to; on success it replaces ``path``, on failure it is removed."""
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)


def write_atomic(path: str, data: str | bytes) -> str:
    """Write ``data`` (text or bytes) to ``path`` through a temporary file and ``os.replace``; returns the path."""
    with replacing(path) as tmp:
        with open(tmp, "wb" if isinstance(data, bytes) else "w") as fh:
            fh.write(data)
    return path


def check_writable(paths: Sequence[str]) -> None:
    """Create the directories of ``paths`` and make sure files can be created there; OutputPathError if not."""
    for path in paths:
        if os.path.isdir(path):
            raise OutputPathError(f"cannot write {path}: it is a directory")
    for path in paths:
        directory = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(directory, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=directory, prefix=".write-check-")
            os.close(fd)
            os.remove(probe)
        except OSError as err:
            raise OutputPathError(
                f"cannot write {path}: no file can be created in {directory} ({err.strerror or err})"
            ) from None
