"""The web app: play Pope Joan in the browser against the agents, and replay game records (FastAPI).

``create_app(...)`` builds the ASGI app; ``popejoan serve`` runs it with
uvicorn.  The endpoints and the JSON they exchange are described in the
README ("Play in the browser") and by the routes below; the game logic is in
``games.py`` and ``replays.py``, which know nothing of HTTP.  Every error is
``{"error": "<one sentence>"}`` with a 4xx status; bodies are read within a
size limit before they are parsed, and JSON is checked field by field.

FastAPI is imported inside ``create_app``, so the package (and this module)
import without the ``web`` extra installed.
"""

# No ``from __future__ import annotations``: FastAPI reads the endpoints' annotations (``Request``), which are
# imported inside create_app, at definition time.
import json
import logging
import os
import pathlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from popejoan_env.errors import PopeJoanError
from popejoan_env.web.games import GameManager, ModelShelf, NotFoundError, TooLargeError, WebError
from popejoan_env.web.replays import ReplayStore

if TYPE_CHECKING:
    from fastapi import FastAPI, Request

STATIC = pathlib.Path(__file__).resolve().parent / "static"
"""The front end (HTML, JavaScript, CSS), shipped inside the package."""
MAX_JSON_BYTES = 64 * 1024
"""Largest JSON request body read (a request is a few dozen bytes)."""

log = logging.getLogger("popejoan.web")


async def read_body(request: "Request", limit: int, what: str) -> bytes:
    """The request body, refused with a TooLargeError as soon as it is known to exceed ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise TooLargeError(f"{what} of {int(declared):,} bytes is over the limit of {limit:,} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:  # a body sent without (or with a false) Content-Length
            raise TooLargeError(f"{what} is over the limit of {limit:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def json_body(request: "Request", empty: Any = None) -> Any:
    """The request's JSON value (``empty`` for an empty body), with one clear sentence when it is not JSON."""
    body = await read_body(request, MAX_JSON_BYTES, "the request body")
    if not body.strip():
        if empty is None:
            raise WebError("the request body is empty; it must be a JSON object")
        return empty
    try:
        text = body.decode("utf-8")  # json.loads would guess UTF-16 or UTF-32 from the bytes
    except UnicodeDecodeError:
        raise WebError("the request body is not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise WebError(f"the request body is not valid JSON ({err.msg} at column {err.colno})") from None
    except (RecursionError, ValueError) as err:
        raise WebError(f"the request body is not valid JSON ({str(err)[:100]})") from None


def create_app(
    records: str | None = None,
    models_dir: str = "models",
    max_games: int = 200,
    idle_seconds: float = 1800,
    max_upload_bytes: int = 5_000_000,
    *,
    seed: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    max_replays: int = 16,
) -> "FastAPI":
    """The web app: the play and replay API under ``/api``, the pages ``/`` and ``/replay``, and ``/static``."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import FileResponse, JSONResponse, Response
    from fastapi.staticfiles import StaticFiles
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException

    if records is not None and not os.path.isfile(records):
        raise PopeJoanError(f"records file {records!r} does not exist (or is not a file)")
    if not isinstance(max_upload_bytes, int) or max_upload_bytes < 1:
        raise PopeJoanError(f"max_upload_bytes must be a positive integer, got {max_upload_bytes!r}")
    shelf = ModelShelf(models_dir)
    games = GameManager(max_games=max_games, idle_seconds=idle_seconds, seed=seed, clock=clock, shelf=shelf)
    replays = ReplayStore(shelf, records, max_replays=max_replays, idle_seconds=idle_seconds, clock=clock)

    app = FastAPI(title="Pope Joan", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.games, app.state.replays = games, replays

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"error": message}, status_code=status)

    @app.exception_handler(PopeJoanError)
    async def refused(request: Request, err: PopeJoanError) -> JSONResponse:
        return error(getattr(err, "status", 400), str(err))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException) -> JSONResponse:
        if err.status_code == 404:
            return error(404, f"no such page or endpoint: {request.method} {request.url.path}")
        if err.status_code == 405:
            return error(405, f"{request.method} is not allowed on {request.url.path}")
        return error(err.status_code, str(err.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0] if err.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return error(422, f"invalid request: {where}: {first.get('msg', 'not valid')}")

    @app.exception_handler(Exception)
    async def failed(request: Request, err: Exception) -> JSONResponse:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return error(500, f"internal error ({type(err).__name__}); the request changed nothing")

    # ----------------------------------------------------------------- pages
    def page(name: str) -> Response:
        path = STATIC / name
        if not path.is_file():
            raise NotFoundError(f"the front end is not installed: {name} is missing from popejoan_env/web/static")
        return FileResponse(path, media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC, check_dir=False), name="static")

    @app.get("/", include_in_schema=False)
    def play_page() -> Response:
        return page("index.html")

    @app.get("/replay", include_in_schema=False)
    def replay_page() -> Response:
        return page("replay.html")

    # ----------------------------------------------------------------- play
    def ok(data: Any, status: int = 200) -> JSONResponse:
        return JSONResponse(data, status_code=status)

    @app.get("/api/options")
    def options() -> JSONResponse:
        return ok(games.options())

    @app.post("/api/games")
    async def new_game(request: Request) -> JSONResponse:
        body = await json_body(request, empty={})
        game_id, state = await run_in_threadpool(games.create, body)
        return ok({"game_id": game_id, "state": state}, 201)

    @app.get("/api/games/{game_id}")
    def get_game(game_id: str) -> JSONResponse:
        return ok(games.get(game_id))

    @app.post("/api/games/{game_id}/play")
    async def play(game_id: str, request: Request) -> JSONResponse:
        body = await json_body(request)
        return ok(await run_in_threadpool(games.play, game_id, body))

    @app.post("/api/games/{game_id}/next")
    async def next_deal(game_id: str, request: Request) -> JSONResponse:
        await read_body(request, MAX_JSON_BYTES, "the request body")  # nothing is expected; a huge body is refused
        return ok(await run_in_threadpool(games.next_deal, game_id))

    @app.get("/api/games/{game_id}/hint")
    def hint(game_id: str) -> JSONResponse:
        return ok(games.hint(game_id))

    # ----------------------------------------------------------------- replay
    @app.get("/api/records")
    def record_files() -> JSONResponse:
        return ok(replays.files())

    @app.post("/api/replays")
    async def upload(request: Request) -> JSONResponse:
        body = await read_body(request, max_upload_bytes, "the upload")
        return ok(await run_in_threadpool(replays.upload, body), 201)

    @app.post("/api/replays/from-records")
    async def from_records(request: Request) -> JSONResponse:
        await read_body(request, MAX_JSON_BYTES, "the request body")
        return ok(await run_in_threadpool(replays.from_records), 201)

    @app.get("/api/replays/{replay_id}/deals/{k}")
    def replay_deal(replay_id: str, k: str, view: str = "all", model: str = "") -> JSONResponse:
        return ok(replays.deal(replay_id, k, view, model))

    return app
