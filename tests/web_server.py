"""A real ``popejoan serve`` process on a free loopback port, and raw HTTP requests to it (for the web tests).

``http.client`` is used directly so that a test can send any Host, Origin or
Content-Type, from any loopback source address (127.0.0.2 is another client).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]


@dataclass
class Answer:
    """One HTTP answer: status, headers (lowercase names) and body."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def error(self) -> str:
        """The ``error`` sentence of a JSON refusal."""
        import json

        return str(json.loads(self.body)["error"])


@dataclass
class Server:
    """A running ``popejoan serve``: its process, port and base URL."""

    process: subprocess.Popen[str]
    port: int

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def origin(self) -> str:
        return f"http://{self.host}"

    def request(self, method: str, path: str, body: bytes = b"", headers: Mapping[str, str] | None = None,
                host: str | None = None, source: str = "127.0.0.1", timeout: float = 30) -> Answer:
        """Send one request with exactly these headers (Host defaults to the server's own) and read the answer."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout, source_address=(source, 0))
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            sent = {k.lower(): v for k, v in (headers or {}).items()}
            if host is not None or "host" not in sent:
                conn.putheader("Host", self.host if host is None else host)
            for key, value in sent.items():
                conn.putheader(key, value)
            if body or method in ("POST", "PUT", "PATCH"):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body or None)
            response = conn.getresponse()
            return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
        finally:
            conn.close()

    def rss_bytes(self) -> int:
        """The server process's resident memory (Linux ``/proc``)."""
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")


def simulated(directory: pathlib.Path, deals: int, seed: int) -> pathlib.Path:
    """A records file ``popejoan simulate`` writes in ``directory`` (4 players, modern): ``deals.jsonl``."""
    from popejoan_env.__main__ import main

    path = directory / "deals.jsonl"
    assert main(["simulate", "--players", "4", "--deals", str(deals), "--seed", str(seed), "--quiet",
                 "--out", str(path)]) == 0
    return path


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def serving(*flags: str, limits: Mapping[str, float] | None = None) -> Iterator[Server]:
    """``popejoan serve --port P *flags`` (this checkout's package), once it answers; stopped afterwards.

    ``limits`` first sets constants of ``popejoan_env.web.app`` (``HEADER_SECONDS``, ``MAX_CONNECTIONS`` …) in the
    server's process, so a test of a deadline need not wait for the real one.
    """
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    log = tempfile.TemporaryFile("w+")
    command = [sys.executable, "-m", "popejoan_env", "serve", "--port", str(port), *flags]
    if limits:
        code = ("import sys\nimport popejoan_env.web.app as app\n"
                f"for name, value in {dict(limits)!r}.items():\n    setattr(app, name, value)\n"
                "from popejoan_env.__main__ import main\nsys.exit(main(sys.argv[1:]))")
        command = [sys.executable, "-c", code, *command[3:]]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    server = Server(process, port)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"popejoan serve exited ({process.returncode}): {log.read()[-2000:]}")
            try:
                if server.request("GET", "/api/options", timeout=5).status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("popejoan serve did not answer within 60 s")
            time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes ``sock`` within ``seconds`` (whatever it sends before closing is read and dropped)."""
    sock.settimeout(0.5)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if not sock.recv(65536):
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False
