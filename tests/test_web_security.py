"""The web server trusts only its own pages, tested with real HTTP requests against a real ``popejoan serve``:
foreign Hosts (DNS rebinding) and Origins refused, JSON only as JSON, every answer with anti-framing, nosniff and
its content type, games kept per client, slow and idle connections closed, server paths never shown, a records
pipe refused at start; and the front end runs under the content security policy in a real chromium."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the web app needs the web extra: pip install -e '.[web]'")
pytest.importorskip("uvicorn", reason="the web app needs the web extra: pip install -e '.[web]'")

from popejoan_env.web import app as web_app  # noqa: E402
from popejoan_env.web.app import HEADER_SECONDS, KEEP_ALIVE_SECONDS, MAX_CONNECTIONS, create_app  # noqa: E402
from popejoan_env.web.games import MAX_GAMES_PER_CLIENT  # noqa: E402
from web_server import ROOT, Server, closed_within, serving, simulated  # noqa: E402

JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated(tmp_path_factory.mktemp("records"), deals=3, seed=3)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models directory with one model whose metadata reads but whose weights are NaN (refused when loaded)."""
    import torch

    from popejoan_env.nets import suits
    from popejoan_env.nets.model_file import model_metadata, save_state_dict

    root = tmp_path_factory.mktemp("secret-server-folder") / "models"
    state = {suits.PREFIX + k: torch.full(shape, float("nan")) for k, shape in suits.shapes((8, 16)).items()}
    meta = model_metadata(["modern"], [3], [8, 16], activation="tanh", architecture=suits.ARCHITECTURE, critic_arch=[8])
    save_state_dict(state, str(root / "nan" / "model.zip"), meta)
    return root


@pytest.fixture(scope="module")
def server(records: Path, models: Path) -> Iterator[Server]:
    with serving("--records", str(records), "--models", str(models)) as running:
        yield running


def has_security_headers(answer) -> bool:
    h = answer.headers
    return (h.get("x-content-type-options") == "nosniff" and h.get("x-frame-options") == "DENY"
            and "frame-ancestors 'none'" in h.get("content-security-policy", ""))


# ------------------------------------------------------------------ Host
def test_foreign_hosts_are_refused_and_loopback_names_with_the_port_accepted(server: Server) -> None:
    port = server.port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"LOCALHOST:{port}"):
        answer = server.request("GET", "/api/options", host=host)
        assert answer.status == 200, (host, answer.body)
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{port + 1}", "127.0.0.1", f"localhost:{port}.",
                 f"attacker.localhost:{port}", f"127.0.0.1:{port}@evil.example", f"127.0.0.2:{port}", " ",
                 f"localhost:{port}/x", f"[::1]:{port}:1"):
        answer = server.request("GET", "/api/options", host=host)
        assert answer.status in (400, 403), (host, answer.status)
        if answer.status == 403:
            assert "is not this server's" in answer.error and has_security_headers(answer), host
    rebound = server.request("POST", "/api/replays/from-records", host=f"rebind.example:{port}")
    assert rebound.status == 403 and "DNS-rebinding" in rebound.error  # the records file stays unread


def test_the_given_host_and_ip_addresses_on_a_wildcard_address_are_accepted() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        from fastapi.testclient import TestClient
    named = TestClient(create_app(models_dir="no-such-dir", host="popejoan.lan"), base_url="http://popejoan.lan")
    assert named.get("/api/options").status_code == 200
    assert named.get("/api/options", headers={"host": "other.lan"}).status_code == 403
    everywhere = TestClient(create_app(models_dir="no-such-dir", host="0.0.0.0"), base_url="http://192.168.1.5")
    assert everywhere.get("/api/options").status_code == 200  # an IP address cannot be re-pointed: no rebinding
    assert everywhere.get("/api/options", headers={"host": "[fe80::1]"}).status_code == 200
    assert everywhere.get("/api/options", headers={"host": "box.lan"}).status_code == 403


# ------------------------------------------------------------------ Origin and fetch metadata
def test_cross_origin_requests_are_refused_and_change_nothing(server: Server) -> None:
    body = b'{"players": 3}'
    for origin in ("http://evil.example", "null", f"http://localhost:{server.port}", f"https://{server.host}",
                   f"http://{server.host}.evil.example"):
        answer = server.request("POST", "/api/games", body, {**JSON, "origin": origin})
        assert answer.status == 403 and "cross-origin request" in answer.error, origin
    own = server.request("POST", "/api/games", body, {**JSON, "origin": server.origin})
    assert own.status == 201
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:  # two Origins: refused
        sock.sendall(f"POST /api/games HTTP/1.1\r\nHost: {server.host}\r\nOrigin: http://evil.example\r\n"
                     f"Origin: {server.origin}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
                     .encode())
        assert sock.recv(64).startswith(b"HTTP/1.1 403")
    for site in ("cross-site", "same-site"):
        answer = server.request("GET", "/api/options", headers={"sec-fetch-site": site})
        assert answer.status == 403 and "only this server's own pages" in answer.error
    assert server.request("GET", "/api/options", headers={"sec-fetch-site": "same-origin"}).status == 200
    assert server.request("GET", "/", headers={"sec-fetch-site": "cross-site"}).status == 200  # a link to the page


def test_json_bodies_only_with_a_json_content_type(server: Server) -> None:
    body = b'{"players": 3}'
    for kind in ("text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                 "multipart/form-data; boundary=x", "application/jsonx", "application/xml"):
        answer = server.request("POST", "/api/games", body, {"content-type": kind})
        assert answer.status == 415 and "must be sent as application/json" in answer.error, kind
    assert server.request("POST", "/api/games", body).status == 415  # no Content-Type at all
    for kind in ("application/json", "application/json; charset=utf-8", "APPLICATION/JSON"):
        assert server.request("POST", "/api/games", body, {"content-type": kind}).status == 201, kind
    answer = server.request("POST", "/api/replays", b"{}\n", {"content-type": "text/plain"})
    assert answer.status == 415 and "a records upload must be sent as application/octet-stream" in answer.error


# ------------------------------------------------------------------ headers on every answer
def test_every_answer_carries_the_security_headers_and_its_content_type(server: Server) -> None:
    expected = [
        ("GET", "/", b"", {}, 200, "text/html"), ("GET", "/replay", b"", {}, 200, "text/html"),
        ("GET", "/static/play.js", b"", {}, 200, "text/javascript"),
        ("GET", "/static/style.css", b"", {}, 200, "text/css"),
        ("GET", "/api/options", b"", {}, 200, "application/json"), ("GET", "/nope", b"", {}, 404, "application/json"),
        ("DELETE", "/api/options", b"", {}, 405, "application/json"),
        ("POST", "/api/games", b"x" * 70_000, JSON, 413, "application/json"),
        ("POST", "/api/games", b"{}", {"content-type": "text/plain"}, 415, "application/json"),
        ("GET", "/api/options", b"", {"origin": "http://evil.example"}, 403, "application/json"),
        ("GET", "/static/../app.py", b"", {}, 404, "application/json"),
    ]
    for method, path, body, headers, status, kind in expected:
        answer = server.request(method, path, body, headers)
        assert answer.status == status, (method, path, answer.status, answer.body[:200])
        assert answer.headers.get("content-type", "").startswith(kind), (path, answer.headers.get("content-type"))
        assert has_security_headers(answer), (method, path, answer.headers)
        assert "server" not in answer.headers  # uvicorn's banner is off


def test_no_server_path_in_an_error_message(server: Server, models: Path, records: Path) -> None:
    body = b'{"players": 3, "opponents": ["models/nan/model.zip", "random"]}'
    answer = server.request("POST", "/api/games", body, JSON)
    assert answer.status == 400 and "models/nan/model.zip" in answer.error and "NaN" in answer.error
    secret = str(models.parent)
    assert secret not in answer.error and "secret-server-folder" not in answer.error
    assert "/tmp" not in server.request("POST", "/api/replays", b"{oops\n",
                                        {"content-type": "application/octet-stream"}).error


# ------------------------------------------------------------------ per-client games
def test_another_client_cannot_push_your_game_out(server: Server) -> None:
    mine = server.request("POST", "/api/games", b'{"players": 3}', JSON)
    game_id = mine.body.decode().split('"game_id":"')[1].split('"')[0]
    # Another client (another address) floods past its own cap: only its own oldest games make room.
    for _ in range(MAX_GAMES_PER_CLIENT + 10):
        flood = server.request("POST", "/api/games", b'{"players": 3, "opponents": ["random", "random"]}', JSON,
                               source="127.0.0.2")
        assert flood.status == 201
    assert server.request("GET", f"/api/games/{game_id}").status == 200


# ------------------------------------------------------------------ connections
def test_slow_and_idle_connections_are_closed(server: Server) -> None:
    slow = socket.create_connection(("127.0.0.1", server.port))
    slow.sendall(b"GET /api/options HTTP/1.1\r\nHost: " + server.host.encode() + b"\r\n")  # never finished
    silent = socket.create_connection(("127.0.0.1", server.port))  # connects and says nothing
    kept = socket.create_connection(("127.0.0.1", server.port))
    kept.sendall(b"GET /api/options HTTP/1.1\r\nHost: " + server.host.encode() + b"\r\n\r\n")
    assert kept.recv(12).startswith(b"HTTP/1.1 200")
    start = time.monotonic()
    for sock in (slow, silent, kept):
        with sock:
            # A trickle of header bytes does not keep a connection open: the deadline counts from its start.
            if sock is slow:
                sock.sendall(b"X-Drip: 1\r\n")
            assert closed_within(sock, HEADER_SECONDS + 5 - (time.monotonic() - start)), "connection still open"
    assert time.monotonic() - start < HEADER_SECONDS + 5
    assert KEEP_ALIVE_SECONDS < HEADER_SECONDS


def test_a_flood_of_connections_is_answered_503_and_the_server_recovers(server: Server) -> None:
    held = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(MAX_CONNECTIONS + 5)]
    try:
        time.sleep(0.5)
        assert server.request("GET", "/api/options").status == 503
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 10
    while server.request("GET", "/api/options").status != 200:
        assert time.monotonic() < deadline, "the server did not recover"
        time.sleep(0.2)


def test_slow_request_bodies_are_refused_408(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_app, "BODY_SECONDS", 0.5)

    async def run() -> tuple[int, bytes]:
        app = create_app(models_dir="no-such-dir")
        sent: list[dict] = []

        async def receive() -> dict:
            import anyio

            await anyio.sleep(5)  # a body that never comes
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": "/api/games", "raw_path": b"/api/games",
                 "query_string": b"", "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")],
                 "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5000), "scheme": "http",
                 "http_version": "1.1", "root_path": ""}
        await app(scope, receive, send)
        return sent[0]["status"], sent[1]["body"]

    import anyio

    start = time.monotonic()
    status, body = anyio.run(run)
    assert status == 408 and b"did not arrive within 0.5 s" in body and time.monotonic() - start < 4


# ------------------------------------------------------------------ --records
def test_serve_refuses_a_records_pipe_at_start_in_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "records.fifo"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for target in (fifo, tmp_path, Path("/dev/null")):
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "popejoan_env", "serve", "--port", "1", "--records",
                               str(target)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "is not a regular file" in done.stderr, done.stderr
        assert time.monotonic() - start < 30


# ------------------------------------------------------------------ the front end under the CSP
def test_the_pages_run_under_the_content_security_policy(server: Server, records: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install playwright")
    chromium = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None)
    if chromium is None:
        pytest.skip("no system chromium")
    violations: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
            page.goto(server.origin + "/")
            page.get_by_test_id("start-game").click()
            page.wait_for_selector("[data-testid=table][data-game-id]", timeout=20_000)
            page.goto(server.origin + "/replay")
            page.wait_for_load_state("networkidle")
            framed = browser.new_page()
            framed.on("console", lambda m: violations.append("frame:" + m.text))
            framed.set_content(f'<iframe src="{server.origin}/"></iframe>')
            time.sleep(1)
        finally:
            browser.close()
    assert not [v for v in violations if not v.startswith("frame:")], violations
    assert any("frame-ancestors" in v or "X-Frame-Options" in v for v in violations), violations  # framing refused
