"""The first compilation is announced: once, before numba compiles a function that has no machine code on disk
for its source, and never when numba's cache holds it (``search.kernel_cache.announce_first_compile``)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from popejoan_env.search.kernel_cache import FIRST_COMPILE

TINY = """
import numba

@numba.njit(cache=True)
def next_card(x):
    return x + 1
"""

RUN = """
from popejoan_env.search import kernel_cache
import tiny
print(kernel_cache.on_disk(tiny.next_card))
kernel_cache.announce_first_compile((tiny.next_card,))
kernel_cache.announce_first_compile((tiny.next_card,))
print(tiny.next_card(41))
kernel_cache.announce_first_compile((tiny.next_card,))
print(kernel_cache.on_disk(tiny.next_card))
"""


def run(script: str, cwd: pathlib.Path, *argv: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter with its own, at first empty, numba cache directory."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cwd / "numba-cache"), "PYTHONPATH": str(cwd)}
    return subprocess.run([sys.executable, *argv] if argv else [sys.executable, "-c", script], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=env)


def test_a_function_with_no_cache_is_announced_once_and_a_cached_one_never(tmp_path: pathlib.Path) -> None:
    (tmp_path / "tiny.py").write_text(TINY)
    first = run(RUN, tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["False", "42", "True"], "no code on disk, then the compiled call wrote it"
    assert first.stderr.count(FIRST_COMPILE) == 1
    again = run(RUN, tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["True", "42", "True"]
    assert FIRST_COMPILE not in again.stderr, "loaded from numba's cache: nothing to announce"
    (tmp_path / "tiny.py").write_text(TINY.replace("x + 1", "x + 2"))  # another source: its cache is stale
    changed = run(RUN, tmp_path)
    assert changed.stdout.split() == ["False", "43", "True"] and changed.stderr.count(FIRST_COMPILE) == 1


WORKERS = """
import multiprocessing, sys
from popejoan_env.cli import fork_pool
from popejoan_env.search import kernel_cache
import tiny

barrier = multiprocessing.get_context("fork").Barrier(2)

def worker_announces(_):
    barrier.wait(timeout=60)  # both workers are here: each would compile for itself
    kernel_cache.announce_first_compile((tiny.next_card,))
    return kernel_cache.on_disk(tiny.next_card)

if sys.argv[1] == "parent":
    kernel_cache.announce_first_compile((tiny.next_card,))
with fork_pool(2) as pool:
    print(pool.map(worker_announces, [0, 1], chunksize=1))
"""


@pytest.mark.parametrize("parent", ["parent", "workers"])
def test_the_workers_of_one_command_announce_once_between_them(tmp_path: pathlib.Path, parent: str) -> None:
    """Two forked workers that each will compile, with or without the command announcing it first: one notice."""
    (tmp_path / "tiny.py").write_text(TINY)
    (tmp_path / "run.py").write_text(WORKERS)
    out = run("", tmp_path, "run.py", parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[False,", "False]"], "neither worker found code on disk"
    assert out.stderr.count(FIRST_COMPILE) == 1


RAY_WORKERS = """
import os, sys, tempfile, time
from popejoan_env import cli
from popejoan_env.cluster import connected, map_tasks

def asks(barrier, item):
    open(os.path.join(barrier, str(item)), "w").close()
    deadline = time.time() + 60
    while len(os.listdir(barrier)) < 2 and time.time() < deadline:  # both tasks running: two worker processes
        time.sleep(0.05)
    return os.getpid(), cli.first_in_command()

def markers():
    return sorted(f for f in os.listdir(tempfile.gettempdir()) if f.startswith("popejoan-first-"))

before = markers()
if sys.argv[2] == "parent":
    cli.first_in_command()
with connected(num_cpus=2):
    answers = list(map_tasks(asks, sys.argv[1], range(2)))
print(len({pid for pid, _ in answers}), sum(first for _, first in answers), markers() == before)
"""


@pytest.mark.parametrize(("parent", "workers_first"), [("parent", 0), ("workers", 1)])
def test_the_ray_workers_of_one_command_share_its_first_time(tmp_path: pathlib.Path, parent: str,
                                                            workers_first: int) -> None:
    """Ray workers (their own interpreters, not forked) ask ``first_in_command`` at once: one of them is first,
    or none when the command asked before; the claim leaves no file behind."""
    pytest.importorskip("ray")
    (tmp_path / "barrier").mkdir()
    (tmp_path / "run.py").write_text(RAY_WORKERS)
    out = run("", tmp_path, "run.py", str(tmp_path / "barrier"), parent, timeout=180)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", str(workers_first), "True"], out.stdout


@pytest.mark.slow
def test_play_announces_pimcs_first_compilation_and_only_the_first(tmp_path: pathlib.Path) -> None:
    """A fresh install's first pimc game (an empty numba cache): the notice, then the game; then no notice."""
    from popejoan_env.cards import CARD_NAMES, PACK

    typed = "\n".join([CARD_NAMES[c] for c in PACK] * 12) + "\n"
    argv = ("-m", "popejoan_env", "play", "--seed", "3", "--opponents", "pimc:samples=8")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    for expected in (1, 0):
        out = subprocess.run([sys.executable, *argv], input=typed, capture_output=True, text=True, timeout=600,
                             cwd=tmp_path, env=env)
        assert out.returncode == 0, out.stderr
        assert out.stderr.count(FIRST_COMPILE) == expected and "deal 1: " in out.stdout
