"""The web app in a real browser: headless Debian chromium driven by Playwright against a live uvicorn server.

A whole deal is played by clicking legal cards only, with the page's counters checked against the API after every
click; the hint panel; illegal cards that cannot be played; the replay page stepped through with every control;
and the screenshots of the pages (1280x800), written to docs/screenshots/ when ``POPEJOAN_SCREENSHOTS=write``
(otherwise to a temporary folder: a test run leaves the checkout as it was).  Playwright never downloads a browser
here: it launches the system chromium.  Without playwright, chromium or the web extra the tests skip, naming what
to install.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason='the web extra is not installed: pip install -e ".[web]"')
uvicorn = pytest.importorskip("uvicorn", reason='the web extra is not installed: pip install -e ".[web]"')
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install playwright")

from popejoan_env.__main__ import main  # noqa: E402
from popejoan_env.rules import COMPARTMENTS  # noqa: E402
from popejoan_env.web import create_app  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "docs" / "screenshots"
VIEWPORT = {"width": 1280, "height": 800}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update"]
RECORD_DEALS = 3
"""Deals in the records file the server replays."""
WAIT_MS = 15_000
"""Longest wait for the page to settle after one action (a loaded 2-core machine; normally well under a second)."""


def chromium_path() -> str | None:
    """The system chromium (Debian's package), never a browser Playwright would download."""
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if pathlib.Path("/usr/bin/chromium").is_file() else None


# ----------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A records file written by ``popejoan simulate`` (4 players, modern)."""
    path = tmp_path_factory.mktemp("web") / "deals.jsonl"
    code = main(["simulate", "--players", "4", "--preset", "modern", "--deals", str(RECORD_DEALS),
                 "--seed", "5", "--out", str(path), "--quiet"])
    assert code == 0 and path.is_file()
    return path


@pytest.fixture(scope="module")
def server(records: pathlib.Path) -> Iterator[str]:
    """The app served by uvicorn in a background thread on a free port of 127.0.0.1; yields its base URL."""
    app = create_app(records=str(records), models_dir=str(ROOT / "models"), seed=13)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))  # the port is chosen and held here, so no other process can take it meanwhile
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if srv.started or not thread.is_alive():
            break
        thread.join(0.05)
    assert srv.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)
    sock.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless system chromium (skips, naming what to install, when there is none)."""
    path = chromium_path()
    if path is None:
        pytest.skip("chromium is not installed: apt-get install chromium")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser: Any, server: str) -> Iterator[Any]:
    """A fresh 1280x800 page; JavaScript errors on it fail the test."""
    context = browser.new_context(viewport=VIEWPORT, base_url=server)
    context.set_default_timeout(WAIT_MS)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda err: errors.append(str(err)))
    yield pg
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def api(server: str, path: str) -> Any:
    """GET an API endpoint of the server (outside the browser) and decode its JSON."""
    with urllib.request.urlopen(server + path, timeout=30) as answer:
        return json.loads(answer.read())


# ----------------------------------------------------------------------------------------------- play page helpers
def by_id(pg: Any, testid: str) -> Any:
    """The element of a data-testid."""
    return pg.get_by_test_id(testid)


def start_game(pg: Any, *, deals: int = 1, speed: int = 0,
               opponents: tuple[str, ...] = ("stops_first", "lowest", "random")) -> str:
    """Open the play page (``speed`` ms a shown play), deal a 4-player modern game of ``deals`` deals; its id."""
    pg.goto(f"/?speed={speed}")
    by_id(pg, "opponent-1").wait_for()
    by_id(pg, "players").select_option("4")
    by_id(pg, "preset").select_option("modern")
    for seat, name in enumerate(opponents, start=1):
        by_id(pg, f"opponent-{seat}").select_option(name)
    by_id(pg, "mode").select_option("single" if deals == 1 else "session")
    if deals > 1:
        by_id(pg, "session-deals").fill(str(deals))
    by_id(pg, "start-game").click()
    pg.wait_for_selector("[data-testid=table][data-game-id]")
    settle(pg, 0)
    return by_id(pg, "table").get_attribute("data-game-id")


def choice(pg: Any, server: str, wanted: Any = bool, games: int = 4, **start: Any) -> tuple[str, dict[str, Any]]:
    """A game on the page (``start_game(**start)``) at a choice of seat 0 for which ``wanted(state)`` holds
    (playing legal cards to reach it, dealing new games when a deal ends first); the game's id and state."""
    for _ in range(games):
        game_id = start_game(pg, **start)
        state = api(server, f"/api/games/{game_id}")
        while not state["over"]:
            if wanted(state):
                return game_id, state
            before = shown_plays(pg)
            by_id(pg, f"card-{state['legal'][0]}").click()
            settle(pg, before)
            state = api(server, f"/api/games/{game_id}")
    raise AssertionError(f"no choice of seat 0 as wanted in {games} seeded games")


def shown_plays(pg: Any) -> int:
    """How many plays the page's play log shows."""
    return pg.locator("#play-log li[data-index]").count()


def settle(pg: Any, before: int) -> None:
    """Wait until the table is idle and shows more than ``before`` plays (or the deal is over)."""
    pg.wait_for_function(
        """(before) => {
             const t = document.querySelector('[data-testid=table]');
             if (!t || t.dataset.busy !== 'false') return false;
             const n = document.querySelectorAll('#play-log li[data-index]').length;
             return n > before || t.dataset.over === 'true' || document.querySelector('#hand button[data-legal=true]');
           }""",
        arg=before,
    )


def legal_cards(pg: Any) -> list[str]:
    """The cards of the hand the page lets the player click."""
    return pg.eval_on_selector_all("#hand button[data-legal=true]", "bs => bs.map(b => b.dataset.card)")


def check_page_matches(pg: Any, state: dict[str, Any]) -> None:
    """The page's counters, hand, board and log are those of the API's state."""
    hand = pg.eval_on_selector_all("#hand button[data-card]", "bs => bs.map(b => b.dataset.card)")
    assert hand == state["hand"]
    assert sorted(legal_cards(pg)) == sorted(state["legal"])
    assert by_id(pg, "turn-info").get_attribute("data-why") == state["why"]
    for seat in state["seats"]:
        box = by_id(pg, f"seat-{seat['seat']}")
        assert box.get_attribute("data-cards-left") == str(seat["cards_left"]), seat
        assert box.get_attribute("data-balance") == str(seat["balance"]), seat
    for comp in COMPARTMENTS:
        assert by_id(pg, f"board-{comp}").get_attribute("data-count") == str(state["board"][comp]), comp
    assert by_id(pg, "turnup").get_attribute("data-card") == state["turnup"]
    assert by_id(pg, "trumps").get_attribute("data-suit") == state["trumps"]
    number = by_id(pg, "deal-number")
    assert (number.get_attribute("data-deal"), number.get_attribute("data-deals")) == (
        str(state["deal_number"]), str(state["deals"]))
    assert by_id(pg, "table").get_attribute("data-over") == str(state["over"]).lower()
    log = pg.eval_on_selector_all("#play-log li[data-index]", "ls => ls.map(l => [+l.dataset.index, l.dataset.card])")
    assert sorted(log) == [[i, h["card"]] for i, h in enumerate(state["history"])]
    for h in state["history"]:
        assert by_id(pg, f"played-{h['card']}").get_attribute("data-state") == "played"


# ----------------------------------------------------------------------------------------------- play page tests
def play_out(pg: Any, server: str, game_id: str) -> dict[str, Any]:
    """Click legal cards (cycling through them) until the deal is over, the page checked against the API before
    every click; the final state."""
    for clicks in range(60):
        state = api(server, f"/api/games/{game_id}")
        check_page_matches(pg, state)
        if state["over"]:
            return state
        assert state["to_act"] == 0 and state["legal"], "seat 0 is not to choose, yet the deal goes on"
        before = shown_plays(pg)
        by_id(pg, f"card-{state['legal'][clicks % len(state['legal'])]}").click()
        settle(pg, before)
    raise AssertionError("the deal does not end after 60 clicks")


def check_deal_over(pg: Any, state: dict[str, Any]) -> None:
    """The end-of-deal panel shows the API's winner, awards, payments, deltas and balances."""
    by_id(pg, "deal-over").wait_for(state="visible")
    assert by_id(pg, "deal-winner").get_attribute("data-winner") == str(state["winner"])
    assert state["delta"] is not None
    for seat in range(state["players"]):
        row = by_id(pg, f"delta-{seat}")
        assert row.get_attribute("data-delta") == str(state["delta"][seat])
        assert row.get_attribute("data-balance") == str(state["seats"][seat]["balance"])
    awards = pg.eval_on_selector_all("[data-testid^=award-]", "as => as.map(a => [a.dataset.cause, +a.dataset.seat, "
                                     "a.dataset.compartment, +a.dataset.counters])")
    assert awards == [list(a) for a in state["awards"]]
    payments = pg.eval_on_selector_all("[data-testid^=payment-]", "ps => ps.map(p => [+p.dataset.from, +p.dataset.to, "
                                       "+p.dataset.counters])")
    assert payments == [list(p) for p in state["payments"]]
    assert legal_cards(pg) == []


def test_a_whole_deal_is_played_by_clicking_legal_cards(page: Any, server: str) -> None:
    model = api(server, "/api/options")["hint_model"]
    opponents = ("stops_first", "random", model or "lowest")  # a network plays seat 3 when one is shipped
    game_id, _ = choice(page, server, opponents=opponents)
    assert page.url.endswith(f"#game={game_id}")
    names = [s["name"] for s in api(server, f"/api/games/{game_id}")["seats"][1:]]
    assert all(name in spec for name, spec in zip(names, opponents))  # a model seat is named by its run
    state = play_out(page, server, game_id)
    check_deal_over(page, state)
    assert by_id(page, "next-deal").count() == 0
    by_id(page, "deal-over-new-game").click()
    by_id(page, "setup").wait_for(state="visible")


def test_a_session_goes_on_to_its_next_deal_with_the_balances_carried(page: Any, server: str) -> None:
    game_id = start_game(page, deals=2, speed=60)  # plays shown one by one, as a player sees them
    first = play_out(page, server, game_id)
    check_deal_over(page, first)
    assert by_id(page, "session-over").count() == 0
    by_id(page, "speed").select_option("0")  # the second deal at once
    by_id(page, "next-deal").click()
    page.wait_for_selector("[data-testid=deal-number][data-deal='2']")
    settle(page, 0)
    second = api(server, f"/api/games/{game_id}")
    assert second["deal_number"] == 2 and not second["session_over"]
    check_page_matches(page, second)
    for seat, (before, now) in enumerate(zip(first["seats"], second["seats"])):
        if seat != second["dealer"]:  # only the new dealer's balance moves before the play (the dressing)
            assert now["balance"] == before["balance"]
    total = [sum(s["board"].values()) + sum(x["balance"] for x in s["seats"]) for s in (first, second)]
    assert total[0] == total[1]  # the counters left on the board are carried into the next deal
    last = play_out(page, server, game_id)
    check_deal_over(page, last)
    assert last["session_over"]
    by_id(page, "session-over").wait_for(state="visible")
    assert by_id(page, "next-deal").count() == 0 and by_id(page, "deal-over-new-game").is_visible()


def test_the_hint_shows_the_network_probabilities_or_why_not(page: Any, server: str) -> None:
    game_id, state = choice(page, server)
    hint_button = by_id(page, "hint")
    assert hint_button.is_enabled()
    hint_button.click()
    by_id(page, "hint-panel").wait_for(state="visible")
    hint = api(server, f"/api/games/{game_id}/hint")
    pimc = by_id(page, "hint-pimc").get_attribute("data-card")
    assert pimc in state["legal"]
    if hint["network"] is None:
        reason = by_id(page, "hint-unavailable").inner_text()
        assert hint.get("network_reason") and hint["network_reason"] in reason
        return
    bars = page.eval_on_selector_all("[data-testid^=hint-bar-]", "bs => bs.map(b => [b.dataset.card, +b.dataset.prob])")
    probs = dict(bars)
    assert sorted(probs) == sorted(state["legal"]) == sorted(hint["network"]["probs"])
    assert probs == pytest.approx(hint["network"]["probs"])
    assert sum(probs.values()) == pytest.approx(1.0, abs=1e-6)
    assert by_id(page, "hint-best").get_attribute("data-card") == hint["network"]["best"]
    assert by_id(page, "hint-model").get_attribute("data-model") == hint["network"]["model"]


def test_illegal_cards_cannot_be_played(page: Any, server: str) -> None:
    game_id, state = choice(page, server, lambda s: len(s["hand"]) > len(s["legal"]) > 0, speed=60)
    illegal = [c for c in state["hand"] if c not in state["legal"]]
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    for card in illegal:
        button = by_id(page, f"card-{card}")
        assert button.is_disabled() and button.get_attribute("data-legal") == "false"
    for card in illegal[:3]:
        by_id(page, f"card-{card}").click(force=True)  # a real mouse click, the disabled check bypassed
    for card in state["legal"]:
        assert by_id(page, f"card-{card}").is_enabled()
    page.evaluate("() => fetch('/api/options')")  # a round trip: any request the clicks started has gone out
    assert posts == []
    assert api(server, f"/api/games/{game_id}")["history"] == state["history"]
    assert by_id(page, "message").is_hidden()
    check_page_matches(page, state)
    page.reload()  # the URL names the game: the page resumes it
    page.wait_for_selector(f"[data-testid=table][data-game-id='{game_id}'][data-busy=false]")
    check_page_matches(page, state)


# ----------------------------------------------------------------------------------------------- replay page
def open_replay(pg: Any) -> str:
    """Open the server's records file on the replay page; the replay's id."""
    pg.goto("/replay")
    pg.wait_for_selector("[data-testid=records-open]:enabled")
    by_id(pg, "records-open").click()
    pg.wait_for_selector("[data-testid=replay-step][data-step='0']")
    info = by_id(pg, "replay-info")
    assert info.get_attribute("data-deals") == str(RECORD_DEALS)
    return info.get_attribute("data-replay-id")


def at_step(pg: Any, step: int) -> None:
    """Wait for the replay page to show ``step``."""
    pg.wait_for_selector(f"[data-testid=replay-step][data-step='{step}']")
    assert by_id(pg, "replay-table").get_attribute("data-busy") == "false"


def check_frame(pg: Any, deal: dict[str, Any], step: int) -> None:
    """The replay page shows frame ``step`` of the API's deal."""
    at_step(pg, step)
    frame = deal["frames"][step]
    play = by_id(pg, "replay-play")
    if frame["play"] is None:
        assert play.get_attribute("data-card") is None
    else:
        assert play.get_attribute("data-card") == frame["play"]["card"]
        assert play.get_attribute("data-seat") == str(frame["play"]["seat"])
    for seat, hand in enumerate(frame["hands"]):
        box = by_id(pg, f"replay-seat-{seat}")
        assert box.get_attribute("data-balance") == str(frame["balances"][seat])
        if isinstance(hand, list):
            shown = pg.eval_on_selector_all(f"[data-testid=replay-hand-{seat}] [data-card]",
                                            "cs => cs.map(c => c.dataset.card)")
            assert shown == hand
        else:
            assert by_id(pg, f"replay-hand-{seat}-count").get_attribute("data-count") == str(hand)
    for comp in COMPARTMENTS:
        assert by_id(pg, f"board-{comp}").get_attribute("data-count") == str(frame["board"][comp]), comp
    for f in deal["frames"][1:step + 1]:
        assert by_id(pg, f"played-{f['play']['card']}").get_attribute("data-state") == "played"


def test_a_replay_is_stepped_through_with_every_control(page: Any, server: str) -> None:
    replay_id = open_replay(page)
    deal = api(server, f"/api/replays/{replay_id}/deals/1?view=all&model=")
    last = len(deal["frames"]) - 1
    assert last >= 4
    step_text = by_id(page, "replay-step")
    assert step_text.get_attribute("data-steps") == str(last)
    check_frame(page, deal, 0)
    assert by_id(page, "replay-first").is_disabled() and by_id(page, "replay-prev").is_disabled()
    assert by_id(page, "replay-final").is_hidden()
    by_id(page, "replay-next").click()
    check_frame(page, deal, 1)
    by_id(page, "replay-next").click()
    check_frame(page, deal, 2)
    by_id(page, "replay-prev").click()
    check_frame(page, deal, 1)
    by_id(page, "replay-last").click()
    check_frame(page, deal, last)
    assert by_id(page, "replay-next").is_disabled() and by_id(page, "replay-last").is_disabled()
    by_id(page, "replay-final").wait_for(state="visible")
    assert by_id(page, "final-winner").get_attribute("data-winner") == str(deal["final"]["winner"])
    for seat, d in enumerate(deal["final"]["delta"]):
        assert by_id(page, f"final-delta-{seat}").get_attribute("data-delta") == str(d)
    assert json.loads(by_id(page, "final-board-after").get_attribute("data-board")) == deal["final"]["board_after"]
    by_id(page, "replay-first").click()
    check_frame(page, deal, 0)
    middle = last // 2
    by_id(page, "timeline").fill(str(middle))
    check_frame(page, deal, middle)
    page.evaluate("() => document.activeElement.blur()")  # the page's keys, not the focused range's own
    page.keyboard.press("ArrowRight")
    check_frame(page, deal, middle + 1)
    # One seat's view: the other hands become counts; the step is kept.
    by_id(page, "view-select").select_option("1")
    seat_view = api(server, f"/api/replays/{replay_id}/deals/1?view=1&model=")
    page.wait_for_selector("[data-testid=replay-hand-0-count]")
    check_frame(page, seat_view, middle + 1)
    assert page.locator("[data-testid^=replay-card-1-]").count() == len(seat_view["frames"][middle + 1]["hands"][1])
    assert page.locator("[data-testid^=replay-card-0-]").count() == 0
    # Another deal starts at its first step.
    by_id(page, "deal-select").select_option("2")
    page.wait_for_selector("[data-testid=replay-table][data-deal='2']")
    check_frame(page, api(server, f"/api/replays/{replay_id}/deals/2?view=1&model="), 0)
    assert "deal=2" in page.url and "view=1" in page.url


def test_an_uploaded_records_file_is_replayed(page: Any, records: pathlib.Path) -> None:
    page.goto("/replay")
    by_id(page, "upload").set_input_files(str(records))
    page.wait_for_selector(f"[data-testid=replay-info][data-deals='{RECORD_DEALS}']")
    assert records.name in by_id(page, "replay-info").inner_text()
    at_step(page, 0)


# ----------------------------------------------------------------------------------------------- screenshots
def test_screenshots_of_the_play_and_replay_pages(page: Any, server: str, tmp_path: Any) -> None:
    folder = SCREENSHOTS if os.environ.get("POPEJOAN_SCREENSHOTS") == "write" else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    # Mid-deal: a few cards of every seat played, seat 0 to choose among several.
    choice(page, server, lambda s: len(s["history"]) >= 12 and len(s["legal"]) >= 2 and len(s["hand"]) >= 4)
    by_id(page, "hint").click()
    by_id(page, "hint-panel").wait_for(state="visible")
    play_png = folder / "play.png"
    page.screenshot(path=str(play_png))
    replay_id = open_replay(page)
    model = api(server, "/api/options")["hint_model"]
    if model:  # the shipped network's policy at the decisions
        by_id(page, "model-select").select_option(model)
        page.wait_for_selector("[data-testid=replay-table][data-busy=false]")
    steps = len(api(server, f"/api/replays/{replay_id}/deals/1?view=all&model=")["frames"]) - 1
    by_id(page, "timeline").fill(str(steps // 2))
    at_step(page, steps // 2)
    if model:
        page.wait_for_selector("[data-testid=policy-seat], [data-testid=policy-none]")
    replay_png = folder / "replay.png"
    page.screenshot(path=str(replay_png))
    for png in (play_png, replay_png):
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert (width, height) == (VIEWPORT["width"], VIEWPORT["height"])
