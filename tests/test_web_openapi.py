"""The web API described: ``/api/openapi.json`` (and the ``/docs`` page of ours) served by ``popejoan serve`` to this
machine only and behind the same guard as the rest; every endpoint in it; real answers checked against its
models (strict, closed), so the description cannot drift; and the bot of docs/web.md playing a whole session."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the web app needs the web extra: pip install -e '.[web]'")
pytest.importorskip("uvicorn", reason="the web app needs the web extra: pip install -e '.[web]'")

from popejoan_env import __version__  # noqa: E402
from popejoan_env.__main__ import main  # noqa: E402
from popejoan_env.rules import MAX_PLAYERS, MIN_PLAYERS  # noqa: E402
from popejoan_env.web import schema  # noqa: E402
from popejoan_env.web.app import create_app, is_loopback  # noqa: E402
from web_server import ROOT, Server, serving  # noqa: E402

JSON = {"content-type": "application/json"}
WEB_PAGE = ROOT / "docs" / "web.md"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    records = tmp_path_factory.mktemp("records") / "deals.jsonl"
    assert main(["simulate", "--players", "5", "--preset", "victorian", "--deals", "4", "--seed", "5", "--quiet",
                 "--out", str(records)]) == 0
    with serving("--records", str(records), "--models", str(tmp_path_factory.mktemp("models"))) as running:
        yield running


def call(server: Server, method: str, path: str, body: object = None) -> object:
    """A request with a JSON body (or none) that must succeed; its JSON answer."""
    answer = server.request(method, path, b"" if body is None else json.dumps(body).encode(), JSON)
    assert answer.status in (200, 201), (method, path, answer.status, answer.body[:300])
    return json.loads(answer.body)


def valid(model: type, answer: object) -> None:
    """``answer`` is exactly what ``model`` describes: every field, of its type, and no other."""
    model.model_validate_json(json.dumps(answer))


# ------------------------------------------------------------------ served, guarded
def test_the_description_is_served_with_every_endpoint_of_the_api(server: Server) -> None:
    answer = server.request("GET", "/api/openapi.json")
    assert answer.status == 200 and answer.headers["content-type"].startswith("application/json")
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    spec = json.loads(answer.body)
    assert spec["openapi"].startswith("3.1") and spec["info"]["version"] == __version__
    app = create_app(models_dir="no-such-dir")
    routes = {(path, method.lower()) for route in app.routes for method in getattr(route, "methods", ())
              if (path := getattr(route, "path", "")).startswith("/api/") and path != "/api/openapi.json"}
    described = {(path, method) for path, operations in spec["paths"].items() for method in operations}
    assert described == routes and len(routes) == 10
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            assert operation.get("summary"), (method, path)
            ok = [status for status in operation["responses"] if status.startswith("2")]
            assert len(ok) == 1 and "$ref" in str(operation["responses"][ok[0]]), (method, path)
            for status, response in operation["responses"].items():
                if status.startswith("4"):  # every refusal is documented as what the server sends: {"error": ...}
                    assert response["content"]["application/json"]["schema"]["$ref"].endswith("/Error"), status
    assert "HTTPValidationError" not in spec["components"]["schemas"], "422 is {'error': ...} here, not FastAPI's"
    new_game = spec["paths"]["/api/games"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert new_game["properties"]["players"]["minimum"] == MIN_PLAYERS
    assert new_game["properties"]["players"]["maximum"] == MAX_PLAYERS and new_game["additionalProperties"] is False


def test_the_description_answers_under_the_same_guard(server: Server) -> None:
    for path in ("/api/openapi.json", "/docs"):
        foreign_host = server.request("GET", path, host=f"rebind.example:{server.port}")
        assert foreign_host.status == 403 and "DNS-rebinding" in foreign_host.error, path
        foreign_origin = server.request("GET", path, headers={"origin": "http://evil.example"})
        assert foreign_origin.status == 403 and "cross-origin request" in foreign_origin.error, path
    cross_site = server.request("GET", "/api/openapi.json", headers={"sec-fetch-site": "cross-site"})
    assert cross_site.status == 403 and "only this server's own pages" in cross_site.error
    assert server.request("GET", "/api/openapi.json", source="127.0.0.2").status == 200  # 127/8 is this machine


def test_the_description_is_for_this_machine_only() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        from fastapi.testclient import TestClient
    app = create_app(models_dir="no-such-dir", host="0.0.0.0")
    lan = TestClient(app, base_url="http://192.168.1.5:8000", client=("192.168.1.7", 50000))
    for path in ("/api/openapi.json", "/docs"):
        refused = lan.get(path)
        assert refused.status_code == 403 and refused.json() == {"error": "the API description is served to this "
                                                                          "machine only"}
    assert lan.get("/api/options").status_code == 200, "the API itself is served as --host says"
    here = TestClient(app, base_url="http://127.0.0.1:8000", client=("127.0.0.1", 50000))
    assert here.get("/api/openapi.json").status_code == 200
    assert [is_loopback(a) for a in ("127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1")] == [True] * 4
    others = ("192.168.1.7", "::ffff:10.0.0.1", "fe80::1", "testclient", "", None)
    assert [is_loopback(a) for a in others] == [False] * len(others)


def test_the_docs_page_is_ours_and_loads_nothing_from_elsewhere(server: Server) -> None:
    page = server.request("GET", "/docs")
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    sources = re.findall(r'(?:src|href)="([^"]*)"', page.body.decode())
    assert "/static/api.js" in sources and all(not re.match(r"(https?:)?//", s) for s in sources), sources
    script = server.request("GET", "/static/api.js")
    assert script.status == 200 and b"http" not in script.body.replace(b"HTTP ", b""), "no address but our own"


def test_the_docs_page_draws_every_endpoint_under_the_content_security_policy(server: Server) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install playwright")
    chromium = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None)
    if chromium is None:
        pytest.skip("no system chromium (apt-get install chromium)")
    problems: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda err: problems.append(str(err)))
            page.goto(server.origin + "/docs")
            page.wait_for_selector("[data-testid=api][data-loaded=true]", timeout=20_000)
            drawn = page.locator("[data-testid=api-endpoints] section").count()
            assert page.locator("[data-testid='endpoint-POST-/api/games/{game_id}/play']").count() == 1
            assert page.locator("[data-testid=schema-State]").count() == 1
        finally:
            browser.close()
    assert drawn == 10 and problems == []


# ------------------------------------------------------------------ the description is what the server does
def test_real_answers_are_exactly_what_the_description_says(server: Server) -> None:
    valid(schema.Options, call(server, "GET", "/api/options"))
    tables = [{}, {"players": 3, "preset": "victorian", "deals": 3, "opponents": ["pool_hunter", "shipped"]},
              {"players": 8, "opponents": ["random"] * 7, "deals": 2}]
    for table in tables:
        game = call(server, "POST", "/api/games", table)
        valid(schema.NewGameAnswer, game)
        game_id, state = game["game_id"], game["state"]
        hinted = False
        while True:
            while not state["over"]:
                if not hinted:
                    valid(schema.Hint, call(server, "GET", f"/api/games/{game_id}/hint"))
                    hinted = True
                state = call(server, "POST", f"/api/games/{game_id}/play", {"card": state["legal"][-1]})
                valid(schema.State, state)
            if state["session_over"]:
                break
            state = call(server, "POST", f"/api/games/{game_id}/next")
            valid(schema.State, state)
        valid(schema.State, call(server, "GET", f"/api/games/{game_id}"))
    valid(schema.RecordFiles, call(server, "GET", "/api/records"))
    replay = call(server, "POST", "/api/replays/from-records")
    valid(schema.ReplayCreated, replay)
    for k in range(1, replay["deals"] + 1):
        for view in ("all", "2"):
            valid(schema.ReplayDeal, call(server, "GET", f"/api/replays/{replay['replay_id']}/deals/{k}?view={view}"
                                                         "&model=shipped"))
    refusal = server.request("POST", "/api/games", json.dumps({"players": MAX_PLAYERS + 1}).encode(), JSON)
    assert refusal.status == 400
    valid(schema.Error, json.loads(refusal.body))
    assert [json.loads(refusal.body)["error"]] == schema.Error.model_fields["error"].examples, "the example is real"


def test_a_closed_strict_model_refuses_what_the_server_does_not_send() -> None:
    """The check above can fail: a field too many, one missing or of another type is refused."""
    from pydantic import ValidationError

    answer = {"replay_id": "x", "deals": 3}
    valid(schema.ReplayCreated, answer)
    for wrong in ({**answer, "extra": 1}, {"replay_id": "x"}, {**answer, "deals": "3"}):
        with pytest.raises(ValidationError):
            valid(schema.ReplayCreated, wrong)


# ------------------------------------------------------------------ the bot on the web page
def test_the_bot_on_the_web_page_plays_a_whole_session_over_http(server: Server) -> None:
    marker = "web-bot"  # the block's name on the page
    match = re.search(rf"<!-- {marker} -->\s*```\w*\n(.*?)```", WEB_PAGE.read_text(), re.S)
    assert match, "docs/web.md has no code block after <!-- web-bot -->"
    out = subprocess.run([sys.executable, "-c", match.group(1)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "POPEJOAN_URL": server.origin})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["deal 1", "deal 2", "my balance"], lines
    deltas = [json.loads(line.split("counters ")[1]) for line in lines[:2]]
    assert all(len(d) == 4 for d in deltas)
