"""Fuzz and abuse of a real ``popejoan serve`` on loopback, bounded in time (about 20 s): random and hostile
requests (bad hosts, origins, methods, paths, content types, huge and deep JSON, gzip bombs, bodies without a
length, many at once); every answer is a 2xx or a 4xx with one short JSON sentence and the security headers, the
server stays up and answers a real game afterwards, and its memory stays bounded."""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
import zlib
from collections.abc import Iterator

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the web app needs the web extra: pip install -e '.[web]'")
pytest.importorskip("uvicorn", reason="the web app needs the web extra: pip install -e '.[web]'")

from popejoan_env.__main__ import main  # noqa: E402
from popejoan_env.web.app import MAX_JSON_BYTES, MAX_UPLOAD_BYTES  # noqa: E402
from popejoan_env.web.replays import MAX_LINES  # noqa: E402
from web_server import ROOT, Answer, Server, serving  # noqa: E402

UPLOAD = {"content-type": "application/octet-stream"}
JSON = {"content-type": "application/json"}
MAX_MESSAGE = 600
"""Longest error sentence accepted as "short"."""
MEMORY_GROWTH = 300 * 2**20
"""Most the server's resident memory may grow over the whole suite."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    records = tmp_path_factory.mktemp("abuse") / "deals.jsonl"
    assert main(["simulate", "--players", "4", "--deals", "3", "--seed", "9", "--quiet", "--out", str(records)]) == 0
    with serving("--records", str(records), "--models", str(ROOT / "models")) as running:
        yield running


def check(answer: Answer, what: object) -> None:
    """A 2xx, or a 4xx whose body is one short JSON sentence naming no server path; the security headers always."""
    assert 200 <= answer.status < 300 or 400 <= answer.status < 500, (what, answer.status, answer.body[:300])
    assert answer.headers.get("x-content-type-options") == "nosniff", what
    assert answer.headers.get("x-frame-options") == "DENY", what
    if answer.status >= 400:
        assert answer.headers.get("content-type", "").startswith("application/json"), (what, answer.headers)
        message = answer.error
        assert 0 < len(message) <= MAX_MESSAGE, (what, message)
        assert str(ROOT) not in message and "/tmp/" not in message, (what, message)


def gzip_stream(block: bytes, repeat: int) -> bytes:
    """The gzip of ``block * repeat``, built block by block (a bomb without holding it unpacked)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [packer.compress(block) for _ in range(repeat)]
    out.append(packer.flush())
    return b"".join(out)


# ------------------------------------------------------------------ random hostile requests
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]
PATHS = ["/", "/replay", "/api/options", "/api/games", "/api/games/x/play", "/api/games/x/next", "/api/games/x/hint",
         "/api/games/x", "/api/records", "/api/replays", "/api/replays/from-records", "/api/replays/x/deals/1",
         "/api/replays/x/deals/99999999999999999999", "/static/play.js", "/static/../../etc/passwd",
         "/static/%2e%2e/app.py", "/api/games/%00", "/api/games/" + "a" * 4000, "/%ff%fe",
         "/api/replays/x/deals/1?view=9", "/api/replays/x/deals/1?model=../../etc/passwd", "/api/replays/x/deals/-1",
         "//api//options", "/api/games/%C3%A9"]
HOSTS = [None, None, None, "evil.example", "localhost", "127.0.0.1:1", "[::1]", "", "a" * 300]
ORIGINS = [None, None, None, "null", "http://evil.example", "http://localhost:1", "file://"]
TYPES = [None, "application/json", "application/json", "text/plain", "application/x-www-form-urlencoded",
         "multipart/form-data; boundary=z", "application/octet-stream", "application/gzip", "application/json; x=\0"]
BODIES = [b"", b"{}", b'{"players": 3}', b'{"players": 1e999}', b'{"players": ' + b"9" * 5000 + b"}",
          b"[" * 50_000, b'{"a":' * 20_000, b"\xff\xfe\x00", b'{"card": "5S"}', b'{"card": "\\ud800"}',
          b'{"opponents": ["random", "../../model.zip", "random"]}', b"null", b'"text"', b"\n" * 1000,
          gzip.compress(b"{}\n" * 10), gzip.compress(b"\n" * 50_000), b'{"players": 4, "deals": 100}',
          json.dumps({"x": ["y" * 100] * 500}).encode()]


def test_random_hostile_requests_get_a_4xx_or_a_correct_2xx(server: Server) -> None:
    rng = np.random.default_rng(25)
    game = server.request("POST", "/api/games", b'{"players": 3}', JSON)
    game_id = json.loads(game.body)["game_id"]
    start = time.monotonic()
    for i in range(300):
        method = METHODS[rng.integers(len(METHODS))]
        path = PATHS[rng.integers(len(PATHS))].replace("/x", f"/{game_id}" if rng.random() < 0.3 else "/x")
        headers = {}
        for name, pool in (("host", HOSTS), ("origin", ORIGINS), ("content-type", TYPES)):
            value = pool[rng.integers(len(pool))]
            if value is not None:
                headers[name] = value
        if rng.random() < 0.1:
            headers["sec-fetch-site"] = "cross-site"
        body = BODIES[rng.integers(len(BODIES))] if method not in ("GET", "HEAD") else b""
        answer = server.request(method, path, body, headers)
        if method == "HEAD":
            assert answer.status < 500, (method, path, answer.status)
            continue
        check(answer, (i, method, path, headers, body[:60]))
    assert time.monotonic() - start < 60


# ------------------------------------------------------------------ sizes
def test_huge_and_deep_json_is_refused_within_its_limits(server: Server) -> None:
    cases = [
        (b" " * (MAX_JSON_BYTES + 1), 413, "over the limit of 65,536 bytes"),
        (b"[" * (MAX_JSON_BYTES - 1), 400, "not valid JSON"),
        (b'{"players": ' + b"1" * 60_000 + b"}", 400, "not valid JSON"),
        (b'{"opponents": ' + b'["random",' * 5000 + b"]}", 400, "not valid JSON"),
    ]
    for body, status, words in cases:
        start = time.monotonic()
        answer = server.request("POST", "/api/games", body, JSON)
        assert answer.status == status and words in answer.error, (body[:40], answer.status, answer.body[:200])
        check(answer, body[:40])
        assert time.monotonic() - start < 5


def test_a_body_without_a_length_is_cut_at_the_limit(server: Server) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(f"POST /api/games HTTP/1.1\r\nHost: {server.host}\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n".encode())
        answer = b""
        try:
            for _ in range(200):  # 200 chunks of 1 kB: far past the 64 kB limit
                sock.sendall(b"400\r\n" + b" " * 1024 + b"\r\n")
        except OSError:
            pass  # the server answered and closed while the rest was still coming
        sock.settimeout(10)
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


@pytest.mark.parametrize("name, block, repeat, status, words", [
    ("newlines", b"\n" * 2**20, 100, 413, f"more than {MAX_LINES:,} lines"),
    ("one endless line", b" " * 2**20, 100, 400, "longer than 10,485,760 bytes"),
    ("empty objects", b"{}\n" * 2**18, 200, 413, "more than 10,000 deals"),
    ("zeros", b"\0" * 2**20, 200, 400, "line 1"),
], ids=["newlines", "endless-line", "empty-objects", "zeros"])
def test_gzip_bombs_are_refused_in_bounded_time(server: Server, name: str, block: bytes, repeat: int,
                                                status: int, words: str) -> None:
    bomb = gzip_stream(block, repeat)  # 100-200 MB unpacked, well under a megabyte packed
    assert len(bomb) < MAX_UPLOAD_BYTES
    start = time.monotonic()
    answer = server.request("POST", "/api/replays", bomb, UPLOAD)
    assert answer.status == status and words in answer.error, (name, answer.status, answer.body[:300])
    check(answer, name)
    assert time.monotonic() - start < 10, f"{name}: {time.monotonic() - start:.1f} s"


# ------------------------------------------------------------------ many at once, and still up
def test_many_clients_at_once_then_the_server_still_plays_and_memory_is_bounded(server: Server) -> None:
    before = server.rss_bytes()
    failures: list[object] = []

    def client(k: int) -> None:
        rng = np.random.default_rng(k)
        try:
            for _ in range(8):
                body = BODIES[rng.integers(len(BODIES))]
                answer = server.request("POST", ["/api/games", "/api/replays"][k % 2], body,
                                        JSON if k % 2 == 0 else UPLOAD, source=f"127.0.0.{2 + k % 5}")
                check(answer, (k, body[:40]))
        except BaseException as err:  # noqa: BLE001  (reported below, with the client that saw it)
            failures.append((k, err))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not failures, failures[:3]
    created = server.request("POST", "/api/games", b'{"players": 4}', JSON)
    assert created.status == 201
    state = json.loads(created.body)["state"]
    if state["legal"]:
        played = server.request("POST", f"/api/games/{state['game_id']}/play",
                                json.dumps({"card": state["legal"][0]}).encode(), JSON)
        assert played.status == 200
    after = server.rss_bytes()
    assert after - before < MEMORY_GROWTH, f"the server grew by {(after - before) / 2**20:.0f} MB"
    assert server.process.poll() is None
