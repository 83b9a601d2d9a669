"""The web app's API (``popejoan_env/web``) through FastAPI's TestClient: play, hints, replays, refusals, limits."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the web app needs the web extra: pip install -e '.[web]'")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx: pip install httpx")

with warnings.catch_warnings():  # Starlette's notice that it prefers httpx2 to httpx: not this package's concern
    warnings.simplefilter("ignore", UserWarning)  # StarletteDeprecationWarning is a UserWarning
    from fastapi.testclient import TestClient  # noqa: E402

from popejoan_env.__main__ import main  # noqa: E402
from popejoan_env.engine import Deal  # noqa: E402
from popejoan_env.record import deal_record, read_records, verify_record  # noqa: E402
from popejoan_env.web import replays as replays_module  # noqa: E402
from popejoan_env.web.app import create_app  # noqa: E402
from conftest import network_file  # noqa: E402
from web_server import simulated  # noqa: E402
from popejoan_env.players import SHIPPED_MODEL  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = Path(SHIPPED_MODEL)
GOLDEN = ROOT / "tests" / "data" / "golden_records.jsonl"
needs_model = pytest.mark.skipif(not SHIPPED.is_file(), reason=f"the shipped model {SHIPPED} is not installed")


JSON = {"content-type": "application/json"}
"""The content type of a JSON body sent as raw bytes."""
UPLOAD = {"content-type": "application/octet-stream"}
"""The content type the replay page sends an upload as."""


def upload(client: TestClient, body: Any) -> Any:
    """POST a records file to ``/api/replays`` as the replay page does."""
    return client.post("/api/replays", headers=UPLOAD, content=body)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models directory holding ``four_modern``, a small untrained network for 4 seats of ``modern`` only: what a
    mismatch is shown with (the shipped network is package data, always offered beside it as ``shipped``)."""
    root = tmp_path_factory.mktemp("web") / "models"
    root.mkdir(parents=True)
    network_file(str(root / "four_modern" / "model.zip"), ("modern",), (4,))
    return root


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A records file written by ``popejoan simulate`` (6 deals, 4 players, modern)."""
    return simulated(tmp_path_factory.mktemp("records"), deals=6, seed=3)


@pytest.fixture(scope="module")
def client(models: Path, records: Path) -> TestClient:
    return TestClient(create_app(records=str(records), models_dir=str(models), seed=1))


def new_game(client: TestClient, **body: Any) -> tuple[str, dict[str, Any]]:
    r = client.post("/api/games", json=body)
    assert r.status_code == 201, r.text
    return r.json()["game_id"], r.json()["state"]


def engine_deal(client: TestClient, game_id: str) -> Deal:
    """The engine's deal behind a game (to check the state against it)."""
    return client.app.state.games._get(game_id).deal


def play_to_end(client: TestClient, game_id: str, state: dict[str, Any], rng: np.random.Generator,
                check: Any = None) -> dict[str, Any]:
    """Send a random legal card until the deal is over; ``check(before, after)`` after each play."""
    while not state["over"]:
        card = state["legal"][int(rng.integers(len(state["legal"])))]
        r = client.post(f"/api/games/{game_id}/play", json={"card": card})
        assert r.status_code == 200, r.text
        if check is not None:
            check(state, r.json(), card)
        state = r.json()
    return state


def error_of(r: Any, status: int) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and isinstance(body["error"], str) and body["error"]
    return body["error"]


def without_id(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k != "game_id"}


# --------------------------------------------------------------------- options and pages
@needs_model
def test_options_list_scripted_players_and_the_model_files(client: TestClient, models: Path) -> None:
    body = client.get("/api/options").json()
    shipped, four = "shipped", f"{models.name}/four_modern/model.zip"
    assert body["presets"] == ["modern", "victorian"] and body["players"] == [3, 4, 5, 6, 7, 8]
    assert body["opponents"] == ["random", "lowest", "stops_first", "pool_hunter", "pimc", shipped, four]
    assert body["default_opponent"] == "stops_first" and body["hint_model"] == shipped
    assert body["models"] == [
        {"path": shipped, "name": "shipped", "players": [3, 4, 5, 6, 7, 8], "presets": ["modern", "victorian"]},
        {"path": four, "name": "four_modern", "players": [4], "presets": ["modern"]}]
    assert str(models) not in str(body), "the server's own paths are never shown"


def test_pages_and_static_files_are_served_and_nothing_outside(client: TestClient) -> None:
    static = ROOT / "popejoan_env" / "web" / "static"
    for url, name in (("/", "index.html"), ("/replay", "replay.html")):
        r = client.get(url)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
        assert r.content == (static / name).read_bytes()
    assert client.get("/static/style.css").content == (static / "style.css").read_bytes()
    for url in ("/static/../app.py", "/static/%2e%2e/app.py", "/static/..%2fgames.py", "/static/nothing.js"):
        assert client.get(url).status_code == 404, url
    assert "no such page" in error_of(client.get("/api/nothing"), 404)
    assert "not allowed" in error_of(client.delete("/api/options"), 405)


# --------------------------------------------------------------------- playing
def test_a_whole_deal_played_by_legal_cards_matches_the_engine(client: TestClient) -> None:
    game_id, state = new_game(client, players=4, preset="modern", opponents=["random", "stops_first", "pimc"])
    assert state["game_id"] == game_id and state["players"] == 4 and state["deals"] == 1
    assert state["new_plays"] == len(state["history"]) and state["rules"]["preset"] == "modern"
    assert client.get(f"/api/games/{game_id}").json() == {**state, "new_plays": 0}

    def check(before: dict[str, Any], after: dict[str, Any], card: str) -> None:
        assert card in before["legal"] and card in before["hand"] and card not in after["hand"]
        assert after["history"][:len(before["history"])] == before["history"]
        added = after["history"][len(before["history"]):]
        assert len(added) == after["new_plays"] >= 1
        assert added[0] == {"seat": 0, "card": card, "lead": added[0]["lead"], "auto": False}
        counters = sum(s["balance"] for s in after["seats"]) + sum(after["board"].values())
        assert counters == 4 * 48  # counters are conserved
        held = sum(s["cards_left"] for s in after["seats"])
        assert held + len(after["history"]) == 51 - len(engine_deal(client, game_id).dead)
        assert after["seats"][0]["cards_left"] == len(after["hand"])
        assert sorted(sum(after["played_by_suit"].values(), [])) == sorted(h["card"] for h in after["history"])
        if not after["over"]:
            assert after["to_act"] == 0 and after["why"] == "lead" and len(after["legal"]) >= 2
            assert set(after["legal"]) <= set(after["hand"]) and after["delta"] is None

    state = play_to_end(client, game_id, state, np.random.default_rng(5), check)
    record = deal_record(engine_deal(client, game_id))
    verify_record(record)
    assert state["why"] == "over" and state["to_act"] is None and state["legal"] == [] and state["session_over"]
    assert [[h["seat"], h["card"]] for h in state["history"]] == record["plays"]
    for key in ("awards", "payments", "winner", "delta"):
        assert state[key] == record[key], key
    assert state["board"] == record["board_after"] and state["turnup"] == record["turnup"]
    assert state["trumps"] == record["turnup"][-1] and state["dealer"] == record["dealer"]
    assert "session is over" in error_of(client.post(f"/api/games/{game_id}/next"), 400)
    assert "over" in error_of(client.post(f"/api/games/{game_id}/play", json={"card": state["hand"][0]}), 400)
    assert "only when you are to choose" in error_of(client.get(f"/api/games/{game_id}/hint"), 400)


def test_the_same_seed_and_cards_give_the_same_game(models: Path) -> None:
    states = []
    for _ in range(2):
        c = TestClient(create_app(models_dir=str(models), seed=7))
        game_id, state = new_game(c, players=5, preset="victorian", opponents=["pimc", "pool_hunter", "lowest", "random"])
        states.append(without_id(play_to_end(c, game_id, state, np.random.default_rng(1))))
    assert states[0] == states[1]
    other = TestClient(create_app(models_dir=str(models), seed=8))
    game_id, state = new_game(other, players=5, preset="victorian", opponents=["pimc", "pool_hunter", "lowest", "random"])
    assert without_id(play_to_end(other, game_id, state, np.random.default_rng(1))) != states[0]


def test_a_session_carries_balances_and_board_from_deal_to_deal(client: TestClient) -> None:
    game_id, state = new_game(client, players=3, deals=3, opponents=["stops_first", "stops_first"])
    rng = np.random.default_rng(2)
    previous = None
    for number in (1, 2, 3):
        assert state["deal_number"] == number and state["deals"] == 3
        deal = engine_deal(client, game_id)
        if previous is not None:
            assert list(deal.balances_before) == previous.balances and list(deal.board_before) == previous.board
            assert deal.dealer == (previous.dealer + 1) % 3
            assert state["new_plays"] == len(state["history"])
        if not state["over"]:
            assert "not over" in error_of(client.post(f"/api/games/{game_id}/next"), 400)
        state = play_to_end(client, game_id, state, rng)
        assert state["session_over"] == (number == 3)
        assert sum(s["balance"] for s in state["seats"]) + sum(state["board"].values()) == 3 * 48
        previous = engine_deal(client, game_id)
        if number < 3:
            r = client.post(f"/api/games/{game_id}/next")
            assert r.status_code == 200, r.text
            state = r.json()
    assert "session is over after 3" in error_of(client.post(f"/api/games/{game_id}/next"), 400)


def test_refused_requests_say_why_and_change_nothing(client: TestClient) -> None:
    game_id, state = new_game(client, players=4, opponents=["lowest"] * 3)
    while state["over"]:  # a game where you have a choice
        game_id, state = new_game(client, players=4, opponents=["lowest"] * 3)
    before = client.get(f"/api/games/{game_id}").json()
    count = len(client.app.state.games)
    deal = engine_deal(client, game_id)
    held_not_legal = [c for c in state["hand"] if c not in state["legal"]]
    not_held = next(c for c in ("AS", "2S", "3S", "AH", "2H") if c not in state["hand"])
    play = f"/api/games/{game_id}/play"
    if held_not_legal:
        assert "lowest card held of its suit" in error_of(client.post(play, json={"card": held_not_legal[0]}), 400)
    assert "does not hold" in error_of(client.post(play, json={"card": not_held}), 400)
    assert "legal" in error_of(client.post(play, json={"card": "ZZ"}), 400)
    assert "not in the" in error_of(client.post(play, json={"card": "8D"}), 400)
    assert "must be a card" in error_of(client.post(play, json={"card": 5}), 400)
    assert "must be a card" in error_of(client.post(play, json={"card": [state["legal"][0]]}), 400)
    assert "JSON object" in error_of(client.post(play, json={"card": state["legal"][0], "x": 1}), 400)
    assert "JSON object" in error_of(client.post(play, json=[state["legal"][0]]), 400)
    assert "not valid JSON" in error_of(client.post(play, content=b'{"card": "5S"', headers=JSON), 400)
    assert "not UTF-8" in error_of(client.post(play, content=b'\xff\xfe', headers=JSON), 400)
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None):
        headers = {"content-type": kind} if kind else {}  # what a foreign page can send without asking first
        assert "must be sent as application/json" in error_of(
            client.post(play, content=b'{"card": "5S"}', headers=headers), 415)
        assert "must be sent as application/json" in error_of(
            client.post("/api/games", content=b"{}", headers=headers), 415)
    assert "empty" in error_of(client.post(play, content=b""), 400)
    assert "over the limit" in error_of(client.post(play, content=b" " * 70_000 + b'{"card": "5S"}'), 413)
    assert "not over" in error_of(client.post(f"/api/games/{game_id}/next"), 400)
    for bad, words in [
        ({"players": "four"}, "players must be an integer 3..8"), ({"players": 9}, "3..8"),
        ({"players": True}, "3..8"), ({"players": 4.0}, "3..8"), ({"preset": "georgian"}, "preset must be one of"),
        ({"players": 3, "opponents": ["random"]}, "list of 2 names"), ({"opponents": "random"}, "list of 3"),
        ({"opponents": ["random", "nobody", "random"]}, "unknown opponent (seat 2) 'nobody'"),
        ({"opponents": ["random", 3, "random"]}, "seat 2"), ({"deals": 0}, "deals must be an integer 1..100"),
        ({"deals": 101}, "1..100"), ({"deals": "2"}, "1..100"), ({"seed": 3}, "unknown field(s) ['seed']"),
        (["players", 4], "JSON object"),
    ]:
        assert words in error_of(client.post("/api/games", json=bad), 400), bad
    assert "not valid JSON" in error_of(client.post("/api/games", content=b"{players: 4}", headers=JSON), 400)
    assert len(client.app.state.games) == count
    defaults = client.post("/api/games")  # an empty body: every default
    assert defaults.status_code == 201 and defaults.json()["state"]["players"] == 4
    assert [s["name"] for s in defaults.json()["state"]["seats"]] == ["you"] + ["stops_first"] * 3
    count += 1
    for path in ("", "/hint"):
        assert "no game 'nope'" in error_of(client.get(f"/api/games/nope{path}"), 404)
    for path in ("/play", "/next"):
        assert "no game" in error_of(client.post(f"/api/games/nope{path}", json={"card": "5S"}), 404)
    assert client.get(f"/api/games/{game_id}").json() == before
    assert len(client.app.state.games) == count and engine_deal(client, game_id) is deal
    assert len(deal.plays) == len(state["history"])


def test_paths_outside_the_models_directory_are_refused(tmp_path: Path) -> None:
    models = tmp_path / "models"
    (models / "good").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "model.zip").write_bytes(b"not a model")
    (models / "escape").mkdir()
    os.symlink(outside / "model.zip", models / "escape" / "model.zip")  # a file link out of the directory
    os.symlink(outside, models / "linked")  # a folder link out of it
    (models / "good" / "model.zip").write_bytes(b"PK not really a zip")  # inside, but not a model file
    c = TestClient(create_app(models_dir=str(models), seed=1))
    assert c.get("/api/options").json()["opponents"] == ["random", "lowest", "stops_first", "pool_hunter", "pimc",
                                                         "shipped"]
    for spec in ("../../etc/passwd", "/etc/passwd", f"{models}/../outside/model.zip", f"{models}/escape/model.zip",
                 f"{models}/linked/model.zip", str(outside / "model.zip"), f"{models}/good/model.zip",
                 "models/../../../etc/passwd", "pimc:samples=1000000"):
        message = error_of(c.post("/api/games", json={"players": 3, "opponents": ["random", spec]}), 400)
        assert "unknown opponent (seat 2)" in message and "models offered are ['shipped']" in message, spec
    assert len(c.app.state.games) == 0


@needs_model
def test_a_model_opponent_plays_and_a_mismatched_one_is_refused(client: TestClient, models: Path) -> None:
    shipped, four = "shipped", f"{models.name}/four_modern/model.zip"
    for players, preset in ((4, "modern"), (3, "victorian")):
        opponents = [shipped, "random", shipped][:players - 1]
        game_id, state = new_game(client, players=players, preset=preset, opponents=opponents)
        assert [s["name"] for s in state["seats"]] == ["you", "shipped", "random", "shipped"][:players]
        state = play_to_end(client, game_id, state, np.random.default_rng(3))
        verify_record(deal_record(engine_deal(client, game_id)))
    assert "trained for 4 players, not for a table of 3" in error_of(
        client.post("/api/games", json={"players": 3, "opponents": [four, "random"]}), 400)
    assert "modern rules, not the victorian" in error_of(
        client.post("/api/games", json={"players": 4, "preset": "victorian", "opponents": [four] * 3}), 400)


@needs_model
def test_the_hint_gives_the_network_probabilities_and_pimc(client: TestClient, models: Path) -> None:
    game_id, state = new_game(client, players=4, opponents=["stops_first"] * 3)
    while state["over"]:
        game_id, state = new_game(client, players=4, opponents=["stops_first"] * 3)
    hint = client.get(f"/api/games/{game_id}/hint").json()
    probs = hint["network"]["probs"]
    assert hint["network"]["model"] == "shipped" and hint["network_reason"] is None
    assert sorted(probs) == sorted(state["legal"]) and abs(sum(probs.values()) - 1) < 1e-9
    assert hint["network"]["best"] == max(probs, key=probs.get) and hint["pimc"]["best"] in state["legal"]
    from popejoan_env.nets.policy import load_policy
    from popejoan_env.seat_view import seat_view
    from popejoan_env.web.games import policy_probs

    view = seat_view(engine_deal(client, game_id), 0)
    assert probs == pytest.approx(policy_probs(load_policy(str(SHIPPED)), view))
    assert client.get(f"/api/games/{game_id}/hint").json() == hint  # the same position, the same hint
    assert client.get(f"/api/games/{game_id}").json()["history"] == state["history"]  # a hint plays nothing
    for body in ({"players": 3, "opponents": ["random"] * 2}, {"players": 8, "opponents": ["random"] * 7},
                 {"players": 4, "preset": "victorian", "opponents": ["random"] * 3}):  # every table it was trained for
        game_id, state = new_game(client, **body)
        while state["over"]:
            game_id, state = new_game(client, **body)
        hint = client.get(f"/api/games/{game_id}/hint").json()
        assert hint["network_reason"] is None and sorted(hint["network"]["probs"]) == sorted(state["legal"])


def test_without_the_shipped_model_the_hint_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import popejoan_env.nets.shipped as shipped

    monkeypatch.setattr(shipped, "SHIPPED_MODEL", str(tmp_path / "absent.zip"))
    c = TestClient(create_app(models_dir=str(tmp_path), seed=2))
    game_id, state = new_game(c, players=3, opponents=["random"] * 2)
    while state["over"]:
        game_id, state = new_game(c, players=3, opponents=["random"] * 2)
    hint = c.get(f"/api/games/{game_id}/hint").json()
    assert hint["network"] is None and "shipped network is not installed" in hint["network_reason"]


def test_interleaved_games_do_not_interfere(models: Path) -> None:
    def played(interleave: bool) -> list[dict[str, Any]]:
        c = TestClient(create_app(models_dir=str(models), seed=11))
        games = [new_game(c, players=n, opponents=["pimc"] * (n - 1)) for n in (3, 4)]
        rngs = [np.random.default_rng(k) for k in range(2)]
        states = [s for _, s in games]
        order = [0, 1] * 60 if interleave else [0] * 60 + [1] * 60
        for k in order:
            if not states[k]["over"]:
                legal = states[k]["legal"]
                r = c.post(f"/api/games/{games[k][0]}/play", json={"card": legal[int(rngs[k].integers(len(legal)))]})
                states[k] = r.json()
        return [without_id(s) for s in states]

    alone = played(False)
    assert all(s["over"] for s in alone) and played(True) == alone


def test_concurrent_plays_on_one_game_are_serialised_by_its_lock(client: TestClient) -> None:
    game_id, state = new_game(client, players=4, opponents=["random"] * 3)
    while state["over"]:
        game_id, state = new_game(client, players=4, opponents=["random"] * 3)
    card = state["legal"][0]
    codes: list[int] = []
    start = threading.Barrier(8)

    def send() -> None:
        start.wait()
        codes.append(client.post(f"/api/games/{game_id}/play", json={"card": card}).status_code)

    threads = [threading.Thread(target=send) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(codes) == [200] + [400] * 7
    history = client.get(f"/api/games/{game_id}").json()["history"]
    assert [h["card"] for h in history].count(card) == 1
    verify_prefix = engine_deal(client, game_id)
    assert len(verify_prefix.plays) == len(history)


def test_a_play_from_a_page_that_shows_an_older_position_is_refused_not_played_there(client: TestClient) -> None:
    # Two tabs on one game: the second plays on; the first's click names the position it shows and is refused (409)
    # where it was played at the later position before, whenever its card was legal there too.
    game_id, state = new_game(client, players=3, opponents=["random"] * 2, deals=2)
    while state["over"] or len(state["legal"]) < 2:
        game_id, state = new_game(client, players=3, opponents=["random"] * 2, deals=2)
    shown = {"deal_number": state["deal_number"], "plays": len(state["history"])}
    url = f"/api/games/{game_id}/play"
    after = client.post(url, json={"card": state["legal"][0], **shown})
    assert after.status_code == 200, after.text
    later = after.json()
    stale = client.post(url, json={"card": (later["legal"] or state["legal"])[0], **shown})
    assert stale.status_code == 409 and "reload" in stale.json()["error"], stale.text
    assert client.get(f"/api/games/{game_id}").json()["history"] == later["history"]  # nothing was played
    for bad in ({"card": "5S", "plays": 3}, {"card": "5S", "deal_number": 1, "plays": -1},
                {"card": "5S", "deal_number": True, "plays": 0}, {"card": "5S", "deal_number": 1, "plays": 2.0}):
        assert client.post(url, json=bad).status_code == 400, bad
    if not later["over"]:  # the position it shows now: played
        now = {"deal_number": later["deal_number"], "plays": len(later["history"])}
        assert client.post(url, json={"card": later["legal"][0], **now}).status_code == 200


def test_idle_games_expire_and_the_least_recently_used_is_evicted(models: Path) -> None:
    clock = Clock()
    c = TestClient(create_app(models_dir=str(models), seed=3, max_games=3, idle_seconds=10, clock=clock))
    ids = [new_game(c, players=3, opponents=["random"] * 2)[0] for _ in range(3)]
    clock.now += 5
    assert c.get(f"/api/games/{ids[0]}").status_code == 200  # used: now the most recent
    fourth, _ = new_game(c, players=3, opponents=["random"] * 2)
    assert c.get(f"/api/games/{ids[1]}").status_code == 404  # the least recently used made room
    assert all(c.get(f"/api/games/{g}").status_code == 200 for g in (ids[0], ids[2], fourth))
    assert len(c.app.state.games) == 3
    clock.now += 6
    assert c.get(f"/api/games/{fourth}").status_code == 200
    clock.now += 5  # ids[0] and ids[2] idle 11 s, the fourth 5 s
    assert "expired" in error_of(c.get(f"/api/games/{ids[0]}"), 404)
    assert c.get(f"/api/games/{fourth}").status_code == 200 and len(c.app.state.games) == 1


# --------------------------------------------------------------------- replays
def frames_of(c: TestClient, replay_id: str, k: int, **params: str) -> dict[str, Any]:
    r = c.get(f"/api/replays/{replay_id}/deals/{k}", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def check_frames(out: dict[str, Any], record: dict[str, Any]) -> None:
    """The frames replay the record: its plays, awards and payments in order, its final board and balances."""
    frames = out["frames"]
    assert [f["step"] for f in frames] == list(range(len(record["plays"]) + 1)) and frames[0]["play"] is None
    assert [[f["play"]["seat"], f["play"]["card"]] for f in frames[1:]] == record["plays"]
    assert sum((f["awards"] for f in frames), []) == record["awards"]
    assert sum((f["payments"] for f in frames), []) == record["payments"]
    assert all(not f["payments"] for f in frames[:-1])
    assert frames[-1]["board"] == record["board_after"] == out["final"]["board_after"]
    start = record.get("balances_before", [0] * record["players"])
    assert frames[-1]["balances"] == [b + d for b, d in zip(start, record["delta"])]
    assert out["final"]["winner"] == record["winner"] and out["final"]["delta"] == record["delta"]
    assert frames[-1]["to_act"] is None and frames[-1]["legal"] == []
    assert out["dealer"] == record["dealer"] and out["turnup"] == record["turnup"] and out["rules"] == record["rules"]
    for before, after in zip(frames, frames[1:]):
        assert after["play"]["seat"] == before["to_act"] and after["play"]["card"] in before["legal"]


def test_a_replay_of_a_simulate_file_is_the_engine_step_by_step(client: TestClient, records: Path) -> None:
    assert client.get("/api/records").json() == {"files": ["deals.jsonl"]}
    r = client.post("/api/replays/from-records")
    assert r.status_code == 201, r.text
    replay_id = r.json()["replay_id"]
    assert r.json()["deals"] == 6
    recs = [rec for _, rec in read_records(records)]
    for k, record in enumerate(recs, start=1):
        out = frames_of(client, replay_id, k)
        assert out["deal"] == k and out["deals"] == 6 and out["players"] == 4
        check_frames(out, record)
        assert [len(h) for h in out["frames"][0]["hands"]] == [len(h) for h in record["hands"]]
        assert all(f["policy"] is None for f in out["frames"])
    seen = frames_of(client, replay_id, 2, view="1")
    full = frames_of(client, replay_id, 2, view="all")
    for f, g in zip(seen["frames"], full["frames"]):
        assert f["hands"][1] == g["hands"][1] and isinstance(f["hands"][1], list)
        assert [h for s, h in enumerate(f["hands"]) if s != 1] == [len(h) for s, h in enumerate(g["hands"]) if s != 1]
        assert f["legal"] == (g["legal"] if g["to_act"] == 1 else [])
        assert f["board"] == g["board"] and f["awards"] == g["awards"] and f["play"] == g["play"]


@needs_model
def test_a_replay_gives_a_matching_models_policy_and_refuses_others(client: TestClient, models: Path,
                                                                     records: Path) -> None:
    shipped, four = "shipped", f"{models.name}/four_modern/model.zip"
    replay_id = upload(client, records.read_bytes()).json()["replay_id"]
    out = frames_of(client, replay_id, 1, model=shipped)
    choices = [f for f in out["frames"] if len(f["legal"]) >= 2]
    assert choices and all(f["policy"] is None for f in out["frames"] if len(f["legal"]) < 2)
    for f in choices:
        assert sorted(f["policy"]) == sorted(f["legal"]) and abs(sum(f["policy"].values()) - 1) < 1e-9
    seen = frames_of(client, replay_id, 1, model=shipped, view="2")
    assert all(f["policy"] is None or f["to_act"] == 2 for f in seen["frames"])
    assert any(f["policy"] is not None for f in seen["frames"]) == any(f["to_act"] == 2 for f in choices)
    golden = upload(client, GOLDEN.read_bytes()).json()["replay_id"]
    victorian = next(k for k, (_, r) in enumerate(read_records(GOLDEN), 1) if r["rules"]["preset"] == "victorian")
    three = next(k for k, (_, r) in enumerate(read_records(GOLDEN), 1)
                 if r["players"] == 3 and r["rules"]["preset"] == "modern")
    base = f"/api/replays/{golden}/deals"
    for deal in (victorian, three):  # the shipped network plays both
        assert any(f["policy"] is not None for f in frames_of(client, golden, deal, model=shipped)["frames"])
    assert "modern rules, not the victorian" in error_of(client.get(f"{base}/{victorian}", params={"model": four}), 400)
    assert "not for a table of 3" in error_of(client.get(f"{base}/{three}", params={"model": four}), 400)
    for bad in ("../../etc/passwd", "/etc/passwd", str(SHIPPED), f"{models}/shipped/../x/model.zip",
                f"{models}/shipped/model.zip/..", f"{models}/shipped/./model.zip"):
        assert "unknown model" in error_of(client.get(f"{base}/1", params={"model": bad}), 400), bad


def test_every_golden_record_replays_from_an_upload_text_or_gzip(client: TestClient) -> None:
    text = GOLDEN.read_bytes()
    recs = [rec for _, rec in read_records(GOLDEN)]
    for body in (text, gzip.compress(text)):
        r = upload(client, body)
        assert r.status_code == 201 and r.json()["deals"] == len(recs) == 28, r.text
        replay_id = r.json()["replay_id"]
        for k, record in enumerate(recs, start=1):
            check_frames(frames_of(client, replay_id, k), record)
    ended = next(k for k, rec in enumerate(recs, 1) if rec["winner"] is None)  # a Pope turn-up under ends_deal
    out = frames_of(client, replay_id, ended)
    assert len(out["frames"]) == 1 and out["frames"][0]["payments"] == recs[ended - 1]["payments"]


def test_bad_uploads_and_replay_requests_are_refused(client: TestClient, records: Path, models: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    count = len(client.app.state.replays._replays)
    assert "empty" in error_of(upload(client, b"  \n"), 400)
    assert "the upload, line 2: not a valid JSON record" in error_of(
        upload(client, records.read_bytes().splitlines(True)[0] + b"{oops\n"), 400)
    assert "not UTF-8" in error_of(upload(client, b"\xff\xfe\n"), 400)
    assert "cannot be read" in error_of(upload(client, gzip.compress(b"{}\n")[:12]), 400)
    assert "a record must be a JSON object" in error_of(upload(client, b"[1, 2]\n"), 400)
    small = TestClient(create_app(models_dir=str(models), max_upload_bytes=1000))
    assert "over the limit of 1,000 bytes" in error_of(upload(small, records.read_bytes()), 413)
    chunked = iter([b"x" * 600, b"y" * 600])  # no Content-Length: the limit holds while reading
    assert "over the limit of 1,000 bytes" in error_of(upload(small, chunked), 413)
    assert "without a records file" in error_of(small.post("/api/replays/from-records"), 400)
    assert small.get("/api/records").json() == {"files": []}
    monkeypatch.setattr(replays_module, "MAX_TEXT_BYTES", 20_000)
    many = b"".join([records.read_bytes()] * 4)
    assert "unpacks to more than 20,000 bytes" in error_of(upload(client, gzip.compress(many)), 413)
    blank = gzip.compress(b"\n" * (replays_module.MAX_LINES + 1))  # 20 kB of gzip: no record, every line read
    assert f"more than {replays_module.MAX_LINES:,} lines (blank lines count too)" in error_of(
        upload(client, blank), 413)
    assert "more than 20,000 bytes" in error_of(
        upload(client, gzip.compress(b" " * 30_000 + b"\n")), 413)
    for kind in ("text/plain", "application/x-www-form-urlencoded", None):
        assert "a records upload must be sent as application/octet-stream" in error_of(client.post(
            "/api/replays", headers={"content-type": kind} if kind else {}, content=records.read_bytes()), 415)
    monkeypatch.setattr(replays_module, "MAX_DEALS", 5)
    assert "more than 5 deals" in error_of(upload(client, records.read_bytes()), 413)
    monkeypatch.undo()
    assert len(client.app.state.replays._replays) == count
    lines = records.read_bytes().splitlines(True)
    tampered = json.loads(lines[1])
    tampered["delta"][0] += 1
    r = upload(client, lines[0] + json.dumps(tampered).encode() + b"\n")
    replay_id = r.json()["replay_id"]
    assert "deal 2 does not replay: delta[0]" in error_of(client.get(f"/api/replays/{replay_id}/deals/2"), 400)
    for k in ("0", "3", "abc", "-1", "1.0", "99999999999"):
        assert "deals are numbered 1..2" in error_of(client.get(f"/api/replays/{replay_id}/deals/{k}"), 404), k
    for view in ("4", "-1", "x", "ALL", ""):
        assert "view must be 'all' or a seat 0..3" in error_of(
            client.get(f"/api/replays/{replay_id}/deals/1", params={"view": view}), 400), view
    assert "no replay 'nope'" in error_of(client.get("/api/replays/nope/deals/1"), 404)


def test_idle_replays_expire(models: Path, records: Path) -> None:
    clock = Clock()
    c = TestClient(create_app(records=str(records), models_dir=str(models), idle_seconds=10, clock=clock,
                              max_replays=2))
    ids = [c.post("/api/replays/from-records").json()["replay_id"] for _ in range(3)]
    assert c.get(f"/api/replays/{ids[0]}/deals/1").status_code == 404  # evicted: at most 2 kept
    assert c.get(f"/api/replays/{ids[2]}/deals/1").status_code == 200
    clock.now += 11
    assert "expired" in error_of(c.get(f"/api/replays/{ids[2]}/deals/1"), 404)


# --------------------------------------------------------------------- the command and the load test
def test_serve_help_and_bad_flags(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["serve", "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert all(flag in out for flag in ("--host", "--port", "--records", "--models"))
    with pytest.raises(SystemExit) as stop:
        main(["serve", "--port", "eighty"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and "invalid int value: 'eighty'" in err
    with pytest.raises(SystemExit) as stop:
        main(["serve", "--port", "70000"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and "(an integer 1..65,535 is needed)" in err
    for argv, words in ((["--records", str(tmp_path / "none.jsonl")], "No such file"),
                        (["--models", str(tmp_path / "none")], "not a directory")):
        assert main(["serve", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err, err


@pytest.mark.slow
def test_a_short_load_test_has_no_errors_and_loses_no_game() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_web.py"), "--clients", "20",
                          "--seconds", "3", "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    figures = json.loads(out.stdout)
    assert figures["errors"] == 0 and figures["games_lost"] == 0 and figures["games_completed"] > 20
