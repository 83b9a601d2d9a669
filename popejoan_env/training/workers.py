"""Where the game stages play: in this process, in forked worker processes, or as Ray tasks on a cluster.

The training's expensive stages are games (the imitated search's, each round's rollout games), cut into tasks
of whole deals whose data depend only on the deals, never on who plays them.  ``play_tasks(task, common,
jobs)`` returns ``task(common, job)`` for every job, in the order of the jobs, whichever way they are played:

* ``workers == 1``: one after another in this process;
* ``workers > 1``: in that many forked processes, which inherit ``common`` (a network, the rules) rather than
  receive it with every job;
* ``backend="ray"``: one Ray task per job (``cluster.map_tasks``), ``common`` shipped to the object store once.

Every job runs with numpy's matrix products on one thread (and, in a worker, torch's too): a worker shares its
cores with the others, and one thread gives the same sums whoever plays.  So the same seed gives the same
games, byte for byte, on one core, two, or a cluster.  ``on_done(job)`` is called as each job finishes (a
progress bar).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from popejoan_env import cluster
from popejoan_env.cli import fork_pool
from popejoan_env.errors import PopeJoanError

Job = TypeVar("Job")
"""A task's own part of the work: some deals (the type of ``jobs``' items)."""
Part = TypeVar("Part")
"""What a task returns for its job (its games)."""

BACKENDS = ("local", "ray")
"""Where the tasks run: this machine's processes, or Ray."""

_COMMON: list[Any] = []
"""What every task of the running forked pool shares, set before the pool forks (its workers inherit it)."""


def check_backend(backend: str, address: str | None) -> None:
    """Refuse a backend this module does not know, an address without Ray, or a malformed address."""
    if backend not in BACKENDS:
        raise PopeJoanError(f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "local" and address:
        raise PopeJoanError(f"--address {address} joins a Ray cluster: give --backend ray with it")
    if backend == "ray":
        cluster.check_address(address or None)
        cluster.import_ray()  # a missing Ray is refused before any work


def _one_thread(task: Callable[[Any, Any], Any], common: Any, job: Any, worker: bool) -> Any:
    """``task(common, job)`` with numpy's BLAS on one thread (and torch's, in a worker process: never the parent's)."""
    import sys

    from threadpoolctl import threadpool_limits

    if worker and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    with threadpool_limits(limits=1):
        return task(common, job)


def _in_worker(item: tuple[Callable[[Any, Any], Any], Any]) -> Any:
    """A job in a forked worker, with the common part the worker inherited."""
    task, job = item
    return _one_thread(task, _COMMON[0], job, worker=True)


def _ray_task(common: Any, item: tuple[Callable[[Any, Any], Any], Any]) -> Any:
    """A job as a Ray task (``cluster.map_tasks`` runs this module-level function on the workers)."""
    task, job = item
    return _one_thread(task, common, job, worker=True)


def play_tasks(task: Callable[[Any, Job], Part], common: Any, jobs: Sequence[Job], *, workers: int = 1,
               backend: str = "local", address: str | None = None,
               on_done: Callable[[Job], None] | None = None) -> list[Part]:
    """``task(common, job)`` for every job, in the order of ``jobs`` (see the module's text for where)."""
    done = on_done if on_done is not None else (lambda job: None)
    parts: list[Part] = []
    if backend == "ray":
        with cluster.connected(address or None):
            for job, part in zip(jobs, cluster.map_tasks(_ray_task, common, [(task, job) for job in jobs])):
                done(job)
                parts.append(part)
        return parts
    if workers > 1:
        _COMMON[:] = [common]
        try:
            with fork_pool(workers) as pool:
                for job, part in zip(jobs, pool.imap(_in_worker, [(task, job) for job in jobs])):
                    done(job)
                    parts.append(part)
        finally:
            _COMMON.clear()
        return parts
    for job in jobs:
        parts.append(_one_thread(task, common, job, worker=False))
        done(job)
    return parts
