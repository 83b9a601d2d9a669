"""Edges of the web server found by a review (each test fails without its fix): a client that never reads its
answers, a pipelined request cut short, a seat number of thousands of digits, a client that hangs up mid-body,
replays that pin far more memory than their upload, and a model named by its file system path."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the web app needs the web extra: pip install -e '.[web]'")
pytest.importorskip("uvicorn", reason="the web app needs the web extra: pip install -e '.[web]'")

from popejoan_env.__main__ import main  # noqa: E402
from web_server import ROOT, Server, serving, simulated  # noqa: E402

JSON = {"content-type": "application/json"}
UPLOAD = {"content-type": "application/octet-stream"}


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated(tmp_path_factory.mktemp("edges-web"), deals=3, seed=5)


@pytest.fixture(scope="module")
def server(records: Path) -> Iterator[Server]:
    with serving("--records", str(records), "--models", str(ROOT / "models")) as running:
        yield running


def replay_of(server: Server, records: Path, source: str = "127.0.0.1") -> str:
    answer = server.request("POST", "/api/replays", records.read_bytes(), UPLOAD, source=source)
    assert answer.status == 201, answer.body
    return str(json.loads(answer.body)["replay_id"])


# ------------------------------------------------------------------ connections
def stall(server: Server, requests: int = 300) -> socket.socket:
    """A connection that pipelines ``requests`` asks for a 40 kB file and never reads: megabytes of answers fill the
    server's send buffers and its answer waits on the client."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    sock.sendall(f"GET /static/play.js HTTP/1.1\r\nHost: {server.host}\r\n\r\n".encode() * requests)
    return sock


def test_a_client_that_never_reads_its_answers_does_not_hold_its_connection_for_ever() -> None:
    # With MAX_CONNECTIONS = 2 the stalled connection and a probe fill the server: 503 until the stalled one is
    # dropped. Without a send deadline it is never dropped (the server answered 503 for minutes).
    with serving(limits={"HEADER_SECONDS": 1.0, "SEND_SECONDS": 1.0, "MAX_CONNECTIONS": 2}) as server:
        with stall(server):
            time.sleep(1)
            deadline, statuses = time.monotonic() + 20, []
            while time.monotonic() < deadline and statuses[-3:] != [200] * 3:
                statuses.append(server.request("GET", "/api/options", timeout=5).status)
                time.sleep(0.5)
            assert statuses[-3:] == [200] * 3, statuses


def test_a_pipelined_request_is_not_cut_by_the_header_deadline() -> None:
    # A request sent right behind another on one connection (its headers already read when the first is answered)
    # has its whole BODY_SECONDS for its body, as it has alone; it was closed HEADER_SECONDS after the first answer.
    with serving(limits={"HEADER_SECONDS": 1.0}) as server:
        first = f"GET /api/options HTTP/1.1\r\nHost: {server.host}\r\n\r\n".encode()
        body = b'{"players": 3}'
        second = (f"POST /api/games HTTP/1.1\r\nHost: {server.host}\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(first + second)
            for byte in body:  # the body over 3 s: three times the header deadline, well within BODY_SECONDS
                time.sleep(3 / len(body))
                sock.sendall(bytes([byte]))
            sock.settimeout(10)
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
        assert received.count(b"HTTP/1.1 200 OK") == 1 and b"HTTP/1.1 201 Created" in received, received[-300:]


# ------------------------------------------------------------------ query parameters
def test_a_seat_of_thousands_of_digits_is_refused_as_a_bad_view(server: Server, records: Path) -> None:
    # int() of more than 4,300 digits raises ValueError: the answer was a 500 "internal error (ValueError)".
    replay_id = replay_of(server, records)
    for view in ("9" * 5000, "0" * 4400 + "1"):
        answer = server.request("GET", f"/api/replays/{replay_id}/deals/1?view={view}")
        assert answer.status == 400 and answer.error.startswith("view must be 'all' or a seat 0..3"), answer.body[:200]


# ------------------------------------------------------------------ request bodies
@pytest.mark.parametrize("path", ["/api/games", "/api/replays", "/api/games/x/next"])
def test_a_client_that_hangs_up_mid_body_is_no_internal_error(path: str, caplog: pytest.LogCaptureFixture) -> None:
    # Each hang-up was a 500 "internal error (ClientDisconnect)" with two tracebacks on the server's log (about
    # 7 kB of log for a request of 120 bytes).
    import anyio

    from popejoan_env.web.app import create_app

    async def run() -> list[dict]:
        app = create_app(models_dir="no-such-dir")
        sent: list[dict] = []

        async def receive() -> dict:
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        kind = b"application/octet-stream" if path == "/api/replays" else b"application/json"
        scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(), "query_string": b"",
                 "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", kind), (b"content-length", b"1000")],
                 "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5000), "scheme": "http",
                 "http_version": "1.1", "root_path": ""}
        await app(scope, receive, send)
        return sent

    with caplog.at_level("WARNING"):
        sent = anyio.run(run)
    assert sent[0]["status"] == 400 and b"closed the connection" in sent[1]["body"], sent
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")], caplog.text[:500]


# ------------------------------------------------------------------ replays
def test_a_replay_does_not_hold_its_upload_unpacked(records: Path) -> None:
    # 5,000 copies of one record padded to 3.3 kB gzip to about 60 kB but unpack to 16 MB, which the replay kept
    # as text: MAX_REPLAYS (16) such uploads of 32 MB each pinned half a gigabyte (measured: +130 MB of the
    # server's memory for each client's 4 replays).
    import gzip
    import tracemalloc

    from popejoan_env.web.games import ModelShelf
    from popejoan_env.web.replays import ReplayStore

    record = json.loads(records.read_text().splitlines()[0])
    record["note"] = ""
    record["note"] = "x" * (3300 - len(json.dumps(record, separators=(",", ":"))))
    text = (json.dumps(record, separators=(",", ":")) + "\n") * 5000
    body = gzip.compress(text.encode())
    store = ReplayStore(ModelShelf("no-such-dir"))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        answer = store.upload(body, "client")
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert answer["deals"] == 5000
    assert kept < len(text) * 0.1, (kept, len(text))
    for k in (1, 64, 65, 4999, 5000):
        assert store.deal(answer["replay_id"], str(k))["deals"] == 5000


def test_a_replay_of_many_deals_gives_each_deal_as_recorded(tmp_path: Path) -> None:
    from popejoan_env.record import read_records
    from popejoan_env.web.games import ModelShelf
    from popejoan_env.web.replays import BLOCK_DEALS, ReplayStore

    path = tmp_path / "deals.jsonl.gz"
    deals = 2 * BLOCK_DEALS + 3
    assert main(["simulate", "--players", "5", "--deals", str(deals), "--seed", "8", "--quiet", "--out", str(path)]) == 0
    store = ReplayStore(ModelShelf("no-such-dir"), str(path))
    answer = store.from_records("client")
    replay = store._replays.get(answer["replay_id"])
    assert answer["deals"] == deals and replay is not None
    assert [replay.record(k) for k in range(1, deals + 1)] == [record for _, record in read_records(path)]


# ------------------------------------------------------------------ messages
def test_a_model_named_by_its_file_system_path_is_refused_for_that(server: Server) -> None:
    # The message showed the path from the models directory's name down, so it read "unknown opponent (seat 1)
    # 'models/round1/model.zip': the models offered are [..., 'models/round1/model.zip', ...]".
    path = str(ROOT / "models" / "round1" / "model.zip")
    answer = server.request("POST", "/api/games", json.dumps({"players": 3, "opponents": [path, "random"]}).encode(),
                            JSON)
    assert answer.status == 400 and "not by a file system path" in answer.error, answer.error
    answer = server.request("GET", "/api/options")
    assert "models/round1/model.zip" in json.loads(answer.body)["opponents"]
