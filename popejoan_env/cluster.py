"""Ray, the one way this package spreads work beyond one process: start or join a cluster, run tasks on it.

Ray is optional (``pip install 'popejoan[ray]'``) and imported only inside these
functions, so the package works without it.  ``connected`` starts a local Ray
(``address=None``) or joins a running cluster (``"auto"``, ``"HOST:PORT"`` of
its head, or a Ray client ``"ray://HOST:10001"``), and shuts down only a Ray it
started itself; a Ray already initialised in this process is used as it is.
``map_tasks`` runs ``fn(common, item)`` as one Ray task per item (``common``
is shipped to the object store once) and yields the results in the order of
the items, or as they finish; at most ``in_flight`` tasks are submitted and
not yet taken, which bounds the memory their results hold.  Every node of a
cluster needs this package installed, at the same version as the driver: each
task first checks that its worker runs the driver's code (``code_identity``)
and refuses to play otherwise, so results of other code are never merged in.

>>> check_address("ray://head.example:10001"), check_address(None)
('ray://head.example:10001', None)
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import Any, TypeVar

from popejoan_env.cli import command_token
from popejoan_env.errors import PopeJoanError

RAY_EXTRA = "pip install 'popejoan[ray]'"
"""How to install Ray for this package (the ``ray`` extra of pyproject.toml)."""
PROBE_SECONDS = 3.0
"""How long ``connected`` waits for a cluster's address to answer, and then to answer as Ray (Ray would wait
minutes)."""
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
"""What an HTTP/2 client sends first (the preface, then an empty SETTINGS frame): a Ray head and a Ray client
server speak gRPC, so they answer with a SETTINGS frame of their own."""
RAY_CALLS = {
    "head": ("/ray.rpc.NodeInfoGcsService/GetClusterId", b""),
    "client": ("/ray.rpc.RayletDriver/ClusterInfo", b"\x08\x06"),
}
"""The first call Ray itself makes to a head's GCS (``HOST:PORT``: its cluster id) and to a Ray client server
(``ray://HOST:PORT``: ``ClusterInfo`` of type ``PING``, the request's bytes), which only Ray answers."""
UNKNOWN_CALL = {"head": "/ray.rpc.NodeInfoGcsService/PopejoanProbe", "client": "/ray.rpc.RayletDriver/PopejoanProbe"}
"""A method of the same service that Ray does not have: a Ray that asks for a token before answering its own calls
still says UNIMPLEMENTED to this one, which tells it from a stranger that refuses every call."""

_ADDRESS = re.compile(r"(?:ray://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})")

Item = TypeVar("Item")
Result = TypeVar("Result")


class ClusterError(PopeJoanError):
    """Ray is not installed, a cluster's address is malformed or cannot be reached, or a Ray worker was lost."""


def _checking(fn: Callable[[Any, Item], Result] | None,
              driver: tuple[str, str, str] | None) -> tuple[Callable[[Any, Item], Result], Callable[[], Any]]:
    """``(task, identity)``: ``task(common, item)`` is ``fn(common, item)`` on a worker whose ``identity()`` is
    ``driver``'s, a ClusterError naming both otherwise.  Both are defined in here so that they travel to the
    workers by value: a node with another version of this package, which may not have this check, runs it too."""

    def identity() -> tuple[str, str, str]:
        # This package's version, the SHA-256 of its Python files (a checkout at another commit has the same version)
        # and numpy's version (its shuffles deal the cards): what a task's results depend on besides its inputs.
        import hashlib
        import os

        import numpy

        import popejoan_env

        known = getattr(popejoan_env, "_code_identity", None)  # once a process
        if known is None:
            root = os.path.dirname(os.path.abspath(popejoan_env.__file__))
            digest = hashlib.sha256()
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in sorted(f for f in files if f.endswith(".py")):
                    path = os.path.join(folder, name)
                    digest.update(os.path.relpath(path, root).replace(os.sep, "/").encode() + b"\0")
                    with open(path, "rb") as fh:
                        digest.update(hashlib.sha256(fh.read()).digest())
            known = (str(popejoan_env.__version__), digest.hexdigest(), str(numpy.__version__))
            popejoan_env._code_identity = known  # type: ignore[attr-defined]
        return known

    def task(common: Any, item: Item) -> Result:
        mine = identity()
        if driver is None or tuple(driver) != mine:
            import os
            import socket

            from popejoan_env.errors import PopeJoanError

            try:
                from popejoan_env.cluster import ClusterError as error
            except ImportError:
                error = PopeJoanError
            import popejoan_env

            said = ["popejoan {} (source SHA-256 {}…) with numpy {}".format(v, s[:12], n)
                    for v, s, n in (mine, tuple(driver or ("?", "?", "?")))]
            where = os.path.dirname(os.path.abspath(popejoan_env.__file__))
            raise error(f"a Ray worker on {socket.gethostname()} runs {said[0]} from {where}, and this command "
                        f"{said[1]}: every node needs the driver's popejoan and numpy (a worker imports from the "
                        "command's working directory first: run it where no other checkout of popejoan_env lies)")
        assert fn is not None
        return fn(common, item)

    return task, identity


def code_identity() -> tuple[str, str, str]:
    """This process's popejoan version, the SHA-256 of its Python source files and numpy's version: a Ray task
    plays only on a worker that has the driver's (``map_tasks``)."""
    return _checking(None, None)[1]()  # type: ignore[no-any-return]


def import_ray() -> ModuleType:
    """The ``ray`` module, or a ClusterError saying how to install it."""
    try:
        import ray
    except ImportError as err:
        raise ClusterError(f"the ray backend needs Ray ({err.name or 'ray'} cannot be imported): {RAY_EXTRA}") from None
    return ray


def check_address(address: object) -> str | None:
    """``address`` if it is None (a local Ray), ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``; else a ClusterError."""
    if address is None or address == "auto":
        return address
    if isinstance(address, str):
        match = _ADDRESS.fullmatch(address)
        if match and 1 <= int(match["port"]) <= 65535:
            return address
    shown = repr(address) if len(repr(address)) <= 80 else repr(address)[:77] + "..."
    raise ClusterError(
        f"a Ray address is auto, HOST:PORT (the head node, e.g. 10.0.0.5:6379) or ray://HOST:PORT "
        f"(a Ray client, e.g. ray://10.0.0.5:10001), got {shown}"
    )


@contextlib.contextmanager
def connected(address: str | None = None, num_cpus: int | None = None) -> Iterator[int]:
    """Ray for the length of a ``with``, yielding the cluster's CPUs; shuts down only a Ray it started itself.

    The Ray this process already has is used as it is (whatever ``address``
    says); else ``address`` is joined, or without one a new local Ray starts
    on ``num_cpus`` of this machine's CPUs (default all).
    """
    address = check_address(address)
    ray = import_ray()
    started = False
    with contextlib.ExitStack() as stack:
        if not ray.is_initialized():
            _probe(address)
            # Ray's own notices (start-up, token authentication) stay quiet: what goes wrong is raised here. The
            # workers learn which command they work for, so a notice of theirs is given once a machine.
            options: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.ERROR,
                                       "runtime_env": {"env_vars": stack.enter_context(command_token())}}
            if address is None:
                # "local" starts a Ray of our own even when another one runs on this machine (RAY_ADDRESS is not
                # read).
                options.update(address="local", num_cpus=num_cpus)
            else:
                options["address"] = address
            try:
                ray.init(**options)
            except (ConnectionError, RuntimeError, TimeoutError, ValueError, ray.exceptions.RayError) as err:
                raise ClusterError(f"cannot start or join Ray at {address or 'a local Ray'}: "
                                   f"{_first_line(err)}") from None
            started = True
        try:
            yield max(1, int(ray.cluster_resources().get("CPU", 1)))
        finally:
            if started:
                ray.shutdown()


def map_tasks(
    fn: Callable[[Any, Item], Result],
    common: Any,
    items: Iterable[Item],
    *,
    ordered: bool = True,
    in_flight: int | None = None,
    on_finish: Callable[[Item], None] | None = None,
) -> Iterator[Result]:
    """``fn(common, item)`` for every item, each a Ray task (inside ``connected``), yielded in the order of
    ``items`` (``ordered``) or as they finish; ``on_finish(item)`` is called as each task finishes.

    ``fn`` must be importable by the workers (a module-level function of an
    installed module).  At most ``in_flight`` (default twice the cluster's
    CPUs) results are pending or finished and not yet yielded.  A
    PopeJoanError raised in a task is raised here as it was; a lost worker or
    node is a ClusterError.  Closing the iterator early cancels what is left.
    """
    ray = import_ray()
    if not ray.is_initialized():
        raise ClusterError("map_tasks needs a Ray session: call it inside cluster.connected()")
    limit = in_flight if in_flight is not None else 2 * max(1, int(ray.cluster_resources().get("CPU", 1)))
    if limit < 1:
        raise ClusterError(f"in_flight must be at least 1, got {limit}")
    remote = ray.remote(num_cpus=1)(_checking(fn, code_identity())[0])
    common_ref = ray.put(common)
    pending = iter(items)
    queue: deque[Any] = deque()  # submitted and not yet yielded, in the order of the items
    running: dict[Any, Item] = {}  # submitted and not finished (a dict: ordered, unlike a set)
    try:
        while True:
            while len(queue) < limit:
                item = next(pending, _END)
                if item is _END:
                    break
                ref = remote.remote(common_ref, item)
                queue.append(ref)
                running[ref] = item  # type: ignore[assignment]
            if not queue:
                return
            if running:
                ready, _ = ray.wait(list(running), num_returns=1)
                for ref in ready:
                    finished = running.pop(ref)
                    if on_finish is not None:
                        on_finish(finished)
            else:
                ready = []
            if ordered:
                while queue and queue[0] not in running:
                    yield _result(ray, queue.popleft())
            else:
                for ref in ready:
                    queue.remove(ref)
                    yield _result(ray, ref)
    finally:
        for ref in running:
            with contextlib.suppress(Exception):  # cancelling is best effort: the task may be finishing
                ray.cancel(ref)


_END = object()


def _result(ray: ModuleType, ref: Any) -> Any:
    """The value of a finished task: its PopeJoanError raised again, a lost worker a ClusterError."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as err:
        if isinstance(err.cause, PopeJoanError):
            raise err.cause from None
        raise
    except ray.exceptions.RayError as err:
        raise ClusterError(f"a Ray task was lost: {_first_line(err)}") from None


def _probe(address: str | None) -> None:
    """Refuse, within ``PROBE_SECONDS`` to answer TCP and as many again to answer as Ray, a ``HOST:PORT`` (or
    ``ray://HOST:PORT``) that nothing answers or that is not a Ray head (a Ray client server).

    Ray would retry for minutes against a port that does not answer, or hang on one that answers but is
    something else (a web server, a database, another gRPC or HTTP/2 server).  So the probe speaks the first
    words of HTTP/2, then makes the call Ray itself makes first (``RAY_CALLS``), which only Ray answers.  With
    ``RAY_USE_TLS`` set the cluster speaks TLS first, so only the TCP answer is checked.
    """
    if address is None or address == "auto":
        return  # a local Ray, or the address Ray finds itself (it fails fast when there is none)
    match = _ADDRESS.fullmatch(address)
    assert match is not None  # check_address accepted it
    host, port = match["host"].strip("[]"), int(match["port"])
    try:
        conn = socket.create_connection((host, port), timeout=PROBE_SECONDS)
    except OSError as err:
        why = "no answer" if isinstance(err, TimeoutError) else (err.strerror or str(err))
        raise ClusterError(
            f"cannot reach Ray at {address}: {why}; start a cluster with `ray start --head` "
            f"and pass its address (or auto on one of its nodes)"
        ) from None
    deadline = time.monotonic() + PROBE_SECONDS
    with conn:
        if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true", "yes"):
            return
        why = _not_grpc(conn, deadline)
    kind = "client" if address.startswith("ray://") else "head"
    if why is None:
        why = _not_ray(f"{host}:{port}" if ":" not in host else f"[{host}]:{port}", kind, deadline)
    if why is not None:
        raise ClusterError(
            f"{address} answers but is not Ray ({why}); pass the address `ray start --head` prints "
            f"(HOST:6379) or a Ray client server's (ray://HOST:10001)"
        )


def _not_grpc(conn: socket.socket, deadline: float) -> str | None:
    """Why the server on ``conn`` does not answer an HTTP/2 client as a gRPC server does, or None when it does."""
    head = b""
    try:
        conn.sendall(HTTP2_PREFACE)
        while len(head) < 9:  # a frame header: length (3), type (1), flags (1), stream (4)
            conn.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = conn.recv(9 - len(head))
            if not chunk:
                return "not gRPC: it closed the connection" + (f" after sending {head!r}" if head else "")
            head += chunk
    except TimeoutError:
        return f"not gRPC: it said nothing within {PROBE_SECONDS:g} s" if not head else \
            f"not gRPC: it sent only {head!r}"
    except OSError as err:
        return f"not gRPC: {err.strerror or err}"
    if head[3] != 4:  # an HTTP/2 server's first frame is its SETTINGS
        return f"not gRPC: it answered {head[:40]!r}"
    return None


def _not_ray(target: str, kind: str, deadline: float) -> str | None:
    """Why the gRPC server at ``target`` is not a Ray head (``kind`` ``head``) or a Ray client server
    (``client``), or None when it answers Ray's first call (or asks for Ray's token to answer it)."""
    try:
        import grpc
    except ImportError:  # Ray brings grpcio; without it Ray cannot run, and ray.init says so
        return None
    method, request = RAY_CALLS[kind]
    other = "client" if kind == "head" else "head"  # the address of the other kind, given by mistake
    channel = grpc.insecure_channel(target)
    try:
        code, details = _call(grpc, channel, method, request, deadline)
        if code == grpc.StatusCode.OK:
            return None
        if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
            # Ray with token authentication (Ray's default since 2.5x) refuses its own calls without the token,
            # which ray.init sends; it still knows no other method.
            unknown, _ = _call(grpc, channel, UNKNOWN_CALL[kind], request, deadline)
            if unknown == grpc.StatusCode.UNIMPLEMENTED:
                return None
            return f"it refuses every call ({code.name}), not only Ray's"
        if code == grpc.StatusCode.UNIMPLEMENTED:
            found, _ = _call(grpc, channel, RAY_CALLS[other][0], RAY_CALLS[other][1], deadline)
            if found in (grpc.StatusCode.OK, grpc.StatusCode.UNAUTHENTICATED):
                return ("it is a Ray head, not a Ray client server: drop ray://" if kind == "client" else
                        "it is a Ray client server, not a Ray head: give it as ray://HOST:PORT")
            return f"a gRPC server without Ray's {method.split('/')[1]}"
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return f"it did not answer Ray's {method.rsplit('/', 1)[1]} within {PROBE_SECONDS:g} s"
        return f"Ray's {method.rsplit('/', 1)[1]} got {code.name}: {' '.join(details.split())[:120]}"
    finally:
        channel.close()


def _call(grpc: ModuleType, channel: Any, method: str, request: bytes, deadline: float) -> tuple[Any, str]:
    """(status code, details) of one unary call of raw bytes on ``channel``, given until ``deadline``."""
    call = channel.unary_unary(method, request_serializer=_raw, response_deserializer=_raw)
    try:
        call(request, timeout=max(0.01, deadline - time.monotonic()))
    except grpc.RpcError as err:
        return err.code(), str(err.details() or "")
    return grpc.StatusCode.OK, ""


def _raw(data: bytes) -> bytes:
    """A message as the bytes it is (the probe sends and reads raw protobuf bytes)."""
    return data


def _first_line(err: BaseException) -> str:
    """The first non-empty line of an error's message (Ray's are often long)."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__
