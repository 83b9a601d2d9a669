"""A Ray address that answers but is not Ray (a silent port, a web server) is refused within seconds, and a real
Ray head is not: ``cluster._probe`` speaks the first words of gRPC (HTTP/2) before Ray is asked to join."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from popejoan_env import cluster
from popejoan_env.__main__ import main

ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield int(server.getsockname()[1])
    stop.set()
    server.close()
    for conn in held:
        conn.close()


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
