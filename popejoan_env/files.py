"""Writing output files: atomically, and checking a destination before the work that fills it (stdlib only).

A result is written to a temporary file beside its destination and moved
into place with ``os.replace``, so a reader never finds half a file and an
interrupted run leaves the previous result whole.  The temporary file has an
unpredictable name and is created exclusively without following a symbolic
link (``O_CREAT | O_EXCL | O_NOFOLLOW``), so nothing planted beside the
destination can redirect the write.  While it exists, every catchable signal
whose default is to end the process (``CLEANUP_SIGNALS``: SIGTERM, SIGHUP…)
first removes it and then ends the process as the signal would have; Ctrl-C
(SIGINT) is Python's ``KeyboardInterrupt`` and cleans up the same way.  The
handlers are installed in the main thread only, and only for signals that
still have their default action (a program's own handlers are left alone).
SIGKILL (``kill -9``, the out-of-memory killer) reaches no handler: the writer
holds a lock on its temporary file while it writes, and the next write to the
same destination removes the temporary files no live writer holds that are
older than ``STALE_SECONDS`` (``_sweep``).
``check_writable`` is called before a long run, so a bad destination is
refused before the work rather than after it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import signal
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any

from popejoan_env.checks import brief
from popejoan_env.errors import PopeJoanError

CLEANUP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in (
        "SIGHUP", "SIGTERM", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGXCPU", "SIGVTALRM", "SIGPROF",
        "SIGPOLL", "SIGPWR", "SIGSTKFLT",
    ) if hasattr(signal, name)
)
"""Asynchronous signals that end the process by default: a temporary file is removed before they do."""
TEMPORARY_ATTEMPTS = 100
"""Fresh random names tried for a temporary file before giving up (a collision is a 1-in-2**64 event)."""
_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_LOCK_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
STALE_SECONDS = 60.0
"""How old an unlocked temporary file of a destination must be before a write to it removes it: a writer killed by
SIGKILL left it (a live one holds its lock; a younger one may be another writer's, made but not yet locked)."""
_TEMPORARY = re.compile(r"[0-9a-f]{16}\.tmp")
"""What follows ``.NAME.`` in a temporary file's name (``_create_temporary``)."""
try:
    import fcntl
except ImportError:  # Windows: no locks, no sweep
    fcntl = None  # type: ignore[assignment]


class OutputPathError(PopeJoanError):
    """A destination that cannot be written: an unwritable or impossible directory, or a directory in the way."""


class _Killed(BaseException):
    """A cleanup signal arrived while a temporary file existed (raised by the handler, so ``finally`` runs)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Killed(signum)


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    """Hold back the cleanup signals (in this thread) for a few statements that must not be cut."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield  # another thread (signals reach the main one), or a system without signal masks (Windows)
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, CLEANUP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def _cleanup_on_signals() -> Iterator[None]:
    """Turn the cleanup signals into an exception inside the block, then end the process as the signal would."""
    installed: list[tuple[int, object]] = []
    if threading.current_thread() is threading.main_thread():
        for signum in CLEANUP_SIGNALS:
            # Only a default action is replaced: a handler the program installed (uvicorn's, Ray's) is its own.
            if signal.getsignal(signum) is signal.SIG_DFL:
                installed.append((signum, signal.signal(signum, _on_signal)))
    try:
        yield
    except _Killed as killed:
        if not any(signum == killed.signum for signum, _ in installed):
            raise  # an outer block installed this handler: it ends the process after its own cleanup
        for signum, before in installed:
            signal.signal(signum, before)  # type: ignore[arg-type]
        installed = []
        signal.raise_signal(killed.signum)  # the default action now: the process ends as the signal asked
        raise  # a signal whose default is to stop the process, not end it: carry on unwinding
    finally:
        for signum, before in installed:
            signal.signal(signum, before)  # type: ignore[arg-type]


TEMPORARY_NAME_BYTES = 100
"""The most bytes of the destination's name a temporary file's name begins with (``_temporary_prefix``)."""


def _temporary_prefix(name: str) -> str:
    """``.NAME.`` with NAME the longest start of ``name`` of at most ``TEMPORARY_NAME_BYTES`` bytes in the file
    system's encoding: cut by characters, 100 of them were up to 400 bytes, past what a file system holds."""
    head = name[:TEMPORARY_NAME_BYTES]
    while len(os.fsencode(head)) > TEMPORARY_NAME_BYTES:
        head = head[:-1]
    return f".{head}."


def _create_temporary(path: str) -> str:
    """A new empty file beside ``path`` with an unpredictable name, created exclusively, never through a link."""
    directory, name = os.path.split(os.path.abspath(path))
    for _ in range(TEMPORARY_ATTEMPTS):
        tmp = os.path.join(directory, f"{_temporary_prefix(name)}{secrets.token_hex(8)}.tmp")
        try:
            fd = os.open(tmp, _OPEN_FLAGS, 0o666)  # the mode the umask allows, as open() would give
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise OutputPathError(f"cannot write {path}: {TEMPORARY_ATTEMPTS} fresh temporary names beside it all existed")


def _lock(tmp: str) -> int | None:
    """A descriptor of ``tmp`` holding an exclusive lock on it (None without locks): while it is open, ``_sweep``
    leaves the file alone."""
    if fcntl is None:
        return None
    try:
        fd = os.open(tmp, _LOCK_FLAGS)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass  # a file system without locks: the age alone then guards it
    return fd


def _sweep(path: str) -> None:
    """Remove the temporary files of ``path`` that killed writers left: no live writer holds their lock, and they are
    older than ``STALE_SECONDS``."""
    if fcntl is None:
        return
    directory, name = os.path.split(os.path.abspath(path))
    prefix = _temporary_prefix(name)
    try:
        entries = [e for e in os.scandir(directory)
                   if e.name.startswith(prefix) and _TEMPORARY.fullmatch(e.name[len(prefix):])]
    except OSError:
        return
    for entry in entries:
        try:
            fd = os.open(entry.path, _LOCK_FLAGS)  # never through a link
        except OSError:
            continue
        try:
            found = os.fstat(fd)
            if not stat.S_ISREG(found.st_mode) or time.time() - found.st_mtime < STALE_SECONDS:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # an OSError: a live writer holds it
            if os.path.samestat(found, os.stat(entry.path, follow_symlinks=False)):
                os.remove(entry.path)
        except OSError:
            continue
        finally:
            os.close(fd)


@contextlib.contextmanager
def replacing(path: str) -> Iterator[str]:
    """A new temporary file beside ``path`` to write to; on success it replaces ``path``, on failure it is removed
    (and the temporary files of writers killed before their cleanup, ``_sweep``, are removed first)."""
    _sweep(path)
    with _cleanup_on_signals():
        tmp = None
        lock = None
        try:
            # The file and the name that removes it come into being together, inside the ``try``: a signal held
            # back meanwhile is delivered as the block ends, and the ``finally`` must already stand behind it.
            with _signals_blocked():
                tmp = _create_temporary(path)
                lock = _lock(tmp)
            yield tmp
            os.replace(tmp, path)
        finally:
            if tmp is not None:
                with _signals_blocked(), contextlib.suppress(FileNotFoundError):
                    os.remove(tmp)
            if lock is not None:
                os.close(lock)


def write_atomic(path: str, data: str | bytes) -> str:
    """Write ``data`` (text or bytes) to ``path`` through a temporary file and ``os.replace``; returns the path."""
    with replacing(path) as tmp:
        with open(tmp, "wb" if isinstance(data, bytes) else "w") as fh:
            fh.write(data)
    return path


def save_png(fig: Any, path: str, dpi: int = 110) -> str:
    """Save a matplotlib figure to ``path`` as a PNG, atomically (``replacing``), and close it; returns the path."""
    import matplotlib.pyplot as plt

    try:
        with replacing(path) as tmp:
            fig.savefig(tmp, dpi=dpi, format="png")
    finally:
        plt.close(fig)
    return path


def remove_stale(path: str) -> None:
    """Remove the file ``path`` that an earlier run wrote and this one does not replace (a directory stays)."""
    if os.path.isdir(path) and not os.path.islink(path):
        return
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def names_no_file(path: str) -> bool:
    """True when the last part of ``path`` is no file's name: empty (``''``, ``dir/``), ``.``, ``..`` or blanks."""
    return os.path.basename(path).strip() in ("", ".", "..")


def check_prefix(prefix: str) -> None:
    """Refuse a report prefix (``PREFIX.json``, ``PREFIX.md``, ...) that names no file: ``--out /`` wrote ``/.json``,
    ``--out .`` ``..json``, both hidden files; OutputPathError."""
    if names_no_file(prefix):
        raise OutputPathError(f"cannot write reports to {brief(prefix)}: it ends in no name for the reports' files to "
                              "start with (e.g. results/ladder)")


def check_writable(paths: Sequence[str]) -> None:
    """Create the directories of ``paths`` and make sure files can be created there; OutputPathError if not."""
    for path in paths:
        if names_no_file(path):
            raise OutputPathError(f"cannot write {brief(path)}: it ends in no file name")
        if os.path.isdir(path):
            raise OutputPathError(f"cannot write {path}: it is a directory")
    for path in paths:
        directory = os.path.dirname(os.path.abspath(path))
        # The probe's name is as long as the file's (in bytes): a name the file system cannot hold is refused now,
        # where the temporary file written first (its name shortened) would meet it only at the final rename.
        size = len(os.fsencode(os.path.basename(os.path.abspath(path))))
        stem = f".write-check-{secrets.token_hex(8)}"
        probe = os.path.join(directory, stem + "x" * (size - len(stem)))
        try:
            os.makedirs(directory, exist_ok=True)
            os.close(os.open(probe, _OPEN_FLAGS, 0o600))
            os.remove(probe)
        except OSError as err:
            if err.errno == errno.ENAMETOOLONG and os.path.isdir(directory):
                raise OutputPathError(f"cannot write {brief(path)}: its name of {size:,} bytes is longer than the "
                                      f"file system holds in {directory}") from None
            raise OutputPathError(
                f"cannot write {path}: no file can be created in {directory} ({err.strerror or err})"
            ) from None


def file_sha256(path: str) -> str:
    """The SHA-256 (hex) of a file's bytes, read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


HELD_VERSIONS = ("popejoan", "numpy", "torch")
"""What a resumed file is held to besides its inputs: the package and the libraries whose arithmetic its results are
(numpy deals the cards and runs our networks' forward; torch trains, reads the weights, and plays SB3's own zips)."""


def _installed() -> dict[str, str | None]:
    """The ``HELD_VERSIONS`` installed here (torch None when it is not installed), read without importing torch."""
    from importlib import metadata

    import numpy

    from popejoan_env import __version__

    try:
        torch: str | None = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = None
    return {"popejoan": __version__, "numpy": numpy.__version__, "torch": torch}


def held_versions(kept: dict[str, Any] | None = None) -> dict[str, str | None]:
    """This process's ``HELD_VERSIONS``: torch's only when it has been imported (else None: a result without it), or
    when ``kept`` (the resumed file's, held to what is installed) names it: its results are the file's too."""
    import sys

    here = {**_installed(), **({} if "torch" in sys.modules else {"torch": None})}
    return {name: here[name] if here[name] is not None else (kept or {}).get(name) for name in HELD_VERSIONS}


def versions_changed(saved: dict[str, Any]) -> str:
    """What of ``saved`` (a file's ``held_versions``; a name it lacks or leaves None is not held) differs from what
    is installed here, as "torch '2.12.0' there, '2.13.0' here", or "" when nothing does."""
    here = _installed()
    return "; ".join(f"{name} {brief(saved[name], 40)} there, {brief(here[name], 40)} here" for name in HELD_VERSIONS
                     if saved.get(name) is not None and saved[name] != here[name])
