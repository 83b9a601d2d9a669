"""A Ray address that answers but is not Ray (a silent port, a web server, an HTTP/2 or gRPC server) is refused
within seconds, by every command that takes ``--address``, and a real Ray head is not: ``cluster._probe`` speaks
the first words of HTTP/2, then makes the call Ray makes first, before Ray is asked to join."""

from __future__ import annotations

import contextlib
import http.server
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from popejoan_env import cluster
from loopback import responder
from popejoan_env.__main__ import main

ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never says a word."""
    with responder() as port:
        yield port


@pytest.fixture
def web_port() -> Iterator[int]:
    """A loopback port where an HTTP/1.1 web server answers."""

    class Quiet(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def test_a_port_that_answers_nothing_is_refused_after_the_probe_time(silent_port: int) -> None:
    start = time.perf_counter()
    with pytest.raises(cluster.ClusterError, match=r"answers but is not Ray \(not gRPC: it said nothing within 3 s\)"):
        with cluster.connected(f"127.0.0.1:{silent_port}"):
            pass
    assert time.perf_counter() - start < cluster.PROBE_SECONDS + 5
    assert not ray.is_initialized()


def test_a_web_server_is_refused_at_once_and_the_command_exits_2(web_port: int, tmp_path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    start = time.perf_counter()
    with pytest.raises(cluster.ClusterError, match=r"127\.0\.0\.1:\d+ answers but is not Ray \(not gRPC: it"):
        with cluster.connected(f"127.0.0.1:{web_port}"):
            pass
    assert time.perf_counter() - start < cluster.PROBE_SECONDS
    out = tmp_path / "x.jsonl"
    code = main(["simulate", "--deals", "4", "--out", str(out), "--backend", "ray", "--address",
                 f"ray://127.0.0.1:{web_port}"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "is not Ray" in err
    assert not out.exists()


def test_a_real_ray_head_passes_the_probe() -> None:
    if ray.is_initialized():
        pytest.skip("a Ray is already running in this process")
    ray.init(address="local", num_cpus=1, include_dashboard=False, logging_level="ERROR")
    try:
        gcs = ray._private.worker.global_worker.node.gcs_address
        cluster._probe(gcs)  # no ClusterError: the head's GCS answers as gRPC does
    finally:
        ray.shutdown()


# ---------------------------------------------------------------------- strangers that speak HTTP/2 or gRPC
SETTINGS_FRAME = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
"""An empty HTTP/2 SETTINGS frame: what a server sends first."""


@pytest.fixture
def http2_port() -> Iterator[int]:
    """A loopback port that answers the HTTP/2 preface with SETTINGS, as any HTTP/2 server does, then says
    nothing more: the stranger the first probe let through, after which Ray waited minutes."""
    with responder(SETTINGS_FRAME) as port:
        yield port


def grpc_server(answer: Callable[[str], str | None]) -> tuple[Any, int]:
    """A loopback gRPC server (grpcio, which Ray brings) that answers each method as ``answer(method)`` says: a
    status code's name, or None for a method it does not have."""
    import grpc
    from concurrent import futures

    class Handler(grpc.GenericRpcHandler):
        def service(self, details: Any) -> Any:
            code = answer(details.method)
            if code is None:
                return None

            def reply(request: bytes, context: Any) -> bytes:
                if code != "OK":
                    context.abort(getattr(grpc.StatusCode, code), "as the test says")
                return b""

            return grpc.unary_unary_rpc_method_handler(reply, request_deserializer=None, response_serializer=None)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[Handler()])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


@contextlib.contextmanager
def serving(answer: Callable[[str], str | None]) -> Iterator[int]:
    """``grpc_server`` for the length of a ``with``, yielding its port."""
    server, port = grpc_server(answer)
    try:
        yield port
    finally:
        server.stop(0)


def refused_within_the_probe(address: str, says: str) -> None:
    """``cluster.connected(address)`` is a ClusterError saying ``says``, within the probe's time, with no Ray."""
    start = time.perf_counter()
    with pytest.raises(cluster.ClusterError, match=says):
        with cluster.connected(address):
            pass
    assert time.perf_counter() - start < 2 * cluster.PROBE_SECONDS + 2
    assert not ray.is_initialized()


def test_an_http2_server_that_is_not_ray_is_refused_within_the_probe_time(http2_port: int) -> None:
    for address in (f"127.0.0.1:{http2_port}", f"ray://127.0.0.1:{http2_port}"):
        refused_within_the_probe(address, r"answers but is not Ray \(it did not answer Ray's \w+ within 3 s\)")


def test_a_grpc_server_without_rays_services_is_refused() -> None:
    with serving(lambda method: None) as port:
        refused_within_the_probe(f"127.0.0.1:{port}", r"a gRPC server without Ray's ray\.rpc\.NodeInfoGcsService")
        refused_within_the_probe(f"ray://127.0.0.1:{port}", r"a gRPC server without Ray's ray\.rpc\.RayletDriver")
    with serving(lambda method: "UNAVAILABLE") as port:
        refused_within_the_probe(f"127.0.0.1:{port}", r"Ray's GetClusterId got UNAVAILABLE: as the test says")


def test_a_server_that_refuses_every_call_is_not_taken_for_ray_asking_for_its_token() -> None:
    with serving(lambda method: "UNAUTHENTICATED") as port:
        refused_within_the_probe(f"127.0.0.1:{port}", r"it refuses every call \(UNAUTHENTICATED\), not only Ray's")


def test_rays_own_answers_pass_the_probe_and_a_head_given_as_a_client_is_named() -> None:
    head = {"/ray.rpc.NodeInfoGcsService/GetClusterId": "OK"}
    with serving(head.get) as port:
        cluster._probe(f"127.0.0.1:{port}")  # answers GetClusterId: a head
        refused_within_the_probe(f"ray://127.0.0.1:{port}", r"it is a Ray head, not a Ray client server: drop ray://")
    with serving({"/ray.rpc.RayletDriver/ClusterInfo": "OK"}.get) as port:
        cluster._probe(f"ray://127.0.0.1:{port}")
        refused_within_the_probe(f"127.0.0.1:{port}", r"it is a Ray client server, not a Ray head: give it as ray://")
    with serving({"/ray.rpc.NodeInfoGcsService/GetClusterId": "UNAUTHENTICATED"}.get) as port:
        cluster._probe(f"127.0.0.1:{port}")  # a Ray that asks for its token, which ray.init sends


@pytest.mark.parametrize("command", ["simulate", "evaluate", "benchmark", "train-rllib"])
def test_every_command_with_an_address_refuses_a_stranger_in_one_line(
        command: str, http2_port: int, tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    address = f"127.0.0.1:{http2_port}"
    out = tmp_path / "out"
    argv = {
        "simulate": ["simulate", "--deals", "4", "--out", str(out), "--backend", "ray", "--address", address],
        "evaluate": ["evaluate", "random", "--quick", "--opponents", "lowest", "--backend", "ray", "--address",
                     address, "--out", str(out), "--quiet"],
        "benchmark": ["benchmark", "--players", "random,lowest", "--deals", "4", "--backend", "ray", "--address",
                      address, "--out", str(out), "--no-progress"],
        "train-rllib": ["train-rllib", "--address", address, "--output-dir", str(out), "--run-name", "r"],
    }[command]
    start = time.perf_counter()
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "is not Ray" in err, err
    assert time.perf_counter() - start < 2 * cluster.PROBE_SECONDS + 5
    assert not ray.is_initialized() and list(tmp_path.iterdir()) == []
