"""Command lines of the scripts (``training/``, ``benchmarks/``): refusals are one line and exit status 2, Ctrl-C is
one line and exit status 130 (stdlib only).

Kept out of ``checks`` so that importing the engine does not import argparse.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import secrets
import signal
import sys
import tempfile
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from popejoan_env.checks import MAX_EPISODE_DEALS, MAX_REWARD_SCALE
from popejoan_env.rules import MAX_PLAYERS, MIN_PLAYERS

if TYPE_CHECKING:
    import multiprocessing.pool

INTERRUPTED = 130
"""The exit status of a command stopped by Ctrl-C: 128 + SIGINT, as a shell reports a process it ended."""


def interrupted(prog: str) -> int:
    """Say on one line of stderr that ``prog`` was interrupted (Ctrl-C); the exit status to give, ``INTERRUPTED``."""
    print(f"{prog}: interrupted", file=sys.stderr)
    return INTERRUPTED


def reader_gone() -> int:
    """Stop quietly when stdout's reader went away (``| head``): stdout points at the null device, so the
    interpreter's final flush does not complain; the exit status to give, 1."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1


def file_failed(err: OSError) -> str:
    """An OSError as one line: its message and the file it names (a rename's destination, not the temporary file)."""
    named = getattr(err, "filename2", None) or getattr(err, "filename", None)
    return f"{err.strerror or err}: {named}" if named else str(err.strerror or err)


def leave_interrupts_to_parent() -> None:
    """In a worker process: ignore Ctrl-C, which the terminal sends to every process of the command; the command
    itself stops, says so in one line and ends its workers (else each worker prints its own traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def one_blas_thread() -> None:
    """In a worker process: numpy's BLAS on one thread, since the workers are the parallelism.

    A network's matrix products (a model file in a tournament, ``pimc_net``'s batches) otherwise start as many
    BLAS threads in every worker as the machine has cores, and they spin against each other: a network twice
    the default's width played 4-5 times slower in two workers than with one thread each (CHANGELOG, 0.3.0).
    threadpoolctl comes with the ``train`` extra, which every network needs; without it there is no network."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(limits=1, user_api="blas")


def _worker_starts() -> None:
    """What every forked worker does first."""
    leave_interrupts_to_parent()
    one_blas_thread()


_asked: list[bool] = []
_shared: list[Any] = []
COMMAND_TOKEN = "POPEJOAN_COMMAND"
"""The environment variable naming one command to the Ray workers of its tasks (``command_token``)."""
_TOKEN = re.compile(r"[0-9a-f]{32}")


def first_in_command() -> bool:
    """True the first time this command asks, in its own process, a worker ``fork_pool`` forked or, on each
    machine, the Ray workers of its tasks (``command_token``), and False after: a notice every worker would give
    (numba compiling, in each) is given once."""
    first = not _asked
    if _shared:
        with _shared[0].get_lock():
            first = not _shared[0].value
            _shared[0].value = 1
    elif first and _TOKEN.fullmatch(os.environ.get(COMMAND_TOKEN, "")):
        first = _claim(os.environ[COMMAND_TOKEN])
    _asked[:] = [True]
    return first


def _marker(token: str) -> str:
    """The file whose creation claims ``first_in_command`` for command ``token`` on this machine."""
    return os.path.join(tempfile.gettempdir(), f"popejoan-first-{token}")


def _claim(token: str) -> bool:
    """True for the one process of this machine that creates ``_marker(token)`` (exclusively), False for the
    others; True when no such file can be made (the notice twice rather than never)."""
    try:
        os.close(os.open(_marker(token), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except OSError:
        return True
    return True


@contextlib.contextmanager
def command_token() -> Iterator[dict[str, str]]:
    """For the length of a ``with``: the environment variables that make Ray workers share ``first_in_command``
    with this command (a fresh token, also set here; ``cluster.connected`` gives them to the workers it starts),
    its claim on this machine made already if the command has asked; the marker removed after."""
    token = secrets.token_hex(16)
    before = os.environ.get(COMMAND_TOKEN)
    os.environ[COMMAND_TOKEN] = token
    if _asked:  # this command gave its notice already: its workers on this machine stay silent
        _claim(token)
    try:
        yield {COMMAND_TOKEN: token}
    finally:
        if before is None:
            os.environ.pop(COMMAND_TOKEN, None)
        else:
            os.environ[COMMAND_TOKEN] = before
        with contextlib.suppress(OSError):
            os.remove(_marker(token))


def fork_pool(workers: int) -> multiprocessing.pool.Pool:
    """A pool of ``workers`` forked processes that leave Ctrl-C to the command (``leave_interrupts_to_parent``)
    and run BLAS on one thread each (``one_blas_thread``); leaving its ``with`` on an error or a Ctrl-C
    terminates them. They share ``first_in_command``'s answer with the command."""
    import multiprocessing

    import threading

    context = multiprocessing.get_context("fork")
    if not _shared:
        _shared.append(context.Value("b", bool(_asked)))
    if threading.current_thread() is not threading.main_thread():
        return context.Pool(workers, initializer=_worker_starts)
    # A Ctrl-C that lands while a worker is forked would be raised inside one of the interpreter's at-fork handlers,
    # where Python reports "Exception ignored" and goes on: the command then ran to its end.  It is noted while the
    # workers are made, and raised once they exist, the pool ended first.
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        pool = context.Pool(workers, initializer=_worker_starts)
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed and previous is not signal.SIG_IGN:
        try:
            if not callable(previous):  # SIG_DFL: the process would have ended
                raise KeyboardInterrupt
            previous(signal.SIGINT, None)  # Python's own handler raises KeyboardInterrupt; another may not
        except BaseException:
            pool.terminate()
            raise
    return pool


_NEGATIVE = re.compile(r"-\.?\d")
"""The start of a negative number: a value, not an option."""
NUMBER_LIST = "number_list"
"""The ``action`` of a flag whose value is a comma list of numbers that may start with '-' (``--balance-range
-24,72``): ``OneLineParser`` reads ``--flag -24,72`` as ``--flag=-24,72``, where argparse alone takes ``-24,72`` for
an option and says the flag has no value.  The value is kept as the text given."""


class _NumberList(argparse.Action):
    """Store a ``NUMBER_LIST`` flag's value as given (the command checks its numbers, naming the flag)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        """Set the flag's destination to its text."""
        setattr(namespace, self.dest, values)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose every refusal is one line on stderr and exit status 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.number_list_flags: set[str] = set()
        # Registered with the parser, whose argument groups share its registry: a flag of a group is known too.
        self.register("action", NUMBER_LIST, self._number_list)

    def _number_list(self, **kwargs: Any) -> argparse.Action:
        """A ``NUMBER_LIST`` flag's action, its option strings noted for ``parse_known_args``."""
        action = _NumberList(**kwargs)
        self.number_list_flags.update(action.option_strings)
        return action

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        """argparse's, with ``--flag -24,72`` of a ``NUMBER_LIST`` flag joined into ``--flag=-24,72``."""
        argv = list(sys.argv[1:] if args is None else args)
        joined: list[str] = []
        i = 0
        while i < len(argv):
            token = argv[i]
            if token == "--":  # what follows is positional, left as it is
                joined.extend(argv[i:])
                break
            after = argv[i + 1] if i + 1 < len(argv) else None
            # A value of '-' then a digit (or '.digit') is never an option here: no flag is a short '-<digit>'.
            if token in self.number_list_flags and isinstance(after, str) and _NEGATIVE.match(after):
                joined.append(f"{token}={after}")
                i += 2
                continue
            joined.append(token)
            i += 1
        return super().parse_known_args(joined, namespace)

    def error(self, message: str) -> NoReturn:
        """Print ``prog: error: message`` on one line and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {' '.join(message.splitlines())}\n")


def _shown(text: str) -> str:
    """A command-line value as an error quotes it (a long one cut)."""
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text):,} characters)"


class Integer:
    """An argparse ``type``: an integer from ``low`` to ``high`` (one kind of value, shared by every flag of it)."""

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high

    def __call__(self, text: str) -> int:
        """The value, or an ``ArgumentTypeError`` saying what is needed."""
        if len(text) > 100:  # Python converts no more than 4,300 digits anyway; no count here needs 100
            raise argparse.ArgumentTypeError(f"invalid int value: {_shown(text)}: too long")
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {_shown(text)}") from None
        if not self.low <= value <= self.high:
            raise argparse.ArgumentTypeError(f"invalid value: {_shown(text)} (an integer {self.low:,}..{self.high:,} "
                                             "is needed)")
        return value

    def __repr__(self) -> str:
        return f"Integer({self.low}, {self.high})"


class Number:
    """An argparse ``type``: a finite float from ``low`` (excluded when ``low_open``) to ``high``."""

    def __init__(self, low: float, high: float, low_open: bool = False) -> None:
        self.low, self.high, self.low_open = low, high, low_open

    def __call__(self, text: str) -> float:
        """The value, or an ``ArgumentTypeError`` saying what is needed."""
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid float value: {_shown(text)}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"invalid float value: {_shown(text)} (a finite number is needed)")
        if not (self.low < value if self.low_open else self.low <= value) or value > self.high:
            bracket = "(" if self.low_open else "["
            raise argparse.ArgumentTypeError(f"invalid value: {_shown(text)} (a number in {bracket}{self.low:g}, "
                                             f"{self.high:g}] is needed)")
        return value

    def __repr__(self) -> str:
        return f"Number({self.low}, {self.high}, low_open={self.low_open})"


def file_name(text: str) -> str:
    """An argparse ``type``: a file or directory name; an empty one (an unset variable's ``--out "$DIR"``) or one
    holding a NUL is refused, never read as the default."""
    if not text.strip() or "\0" in text:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is not a file or directory name")
    return text


TABLE_SIZE = Integer(MIN_PLAYERS, MAX_PLAYERS)
"""A table size flag: the players the rules deal to (``rules.MIN_PLAYERS`` to ``rules.MAX_PLAYERS``)."""
SEED = Integer(0, 2**31 - 1)
"""A seed flag: numpy's legacy seeding (which SB3 calls) takes < 2**32, and runs derive seeds a little above it."""
EPISODE_DEALS = Integer(1, MAX_EPISODE_DEALS)
"""Deals in one episode or session of an env (the envs' own bound, ``checks.MAX_EPISODE_DEALS``)."""
THREADS = Integer(0, 256)
"""Torch threads (0: torch's own default)."""
PROBABILITY = Number(0.0, 1.0)
"""A probability or a discount in [0, 1]."""
RATE = Number(0.0, 1.0, low_open=True)
"""A learning rate in (0, 1]."""
CLIP = Number(0.0, 10.0, low_open=True)
"""A PPO clip range in (0, 10]."""
COEFFICIENT = Number(0.0, 100.0)
"""A loss weight in [0, 100] (entropy, value)."""
GRAD_NORM = Number(0.0, 1e6, low_open=True)
"""A gradient-norm clip in (0, 1e6]."""
SCALE = Number(0.0, MAX_REWARD_SCALE, low_open=True)
"""A reward scale in (0, 1000]."""
