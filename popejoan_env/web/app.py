"""The web app: play Pope Joan in the browser against the agents, and replay game records (FastAPI).

``create_app(...)`` builds the ASGI app; ``popejoan serve`` runs it with
uvicorn (``serve``: with the connection limits below).  The endpoints and the
JSON they exchange are described in docs/web.md and by
the routes below; the game logic is in ``games.py`` and ``replays.py``, which
know nothing of HTTP.  Every error is ``{"error": "<one sentence>"}`` with a
4xx status; requests from other sites are refused (``guard.py``); a JSON body
is taken only as ``application/json``, read within a size and a time limit
before it is parsed, and checked field by field.  docs/reliability.md lists
every limit.

The API is described by OpenAPI at ``/api/openapi.json`` (the models are ``schema.py``) and shown by a page of
ours at ``/docs`` (FastAPI's own pages load their scripts from a CDN, which the content security policy and a
machine without a network both forbid); both answer this machine only (a loopback client).

FastAPI is imported inside ``create_app``, so the package (and this module)
import without the ``web`` extra installed.
"""

# No ``from __future__ import annotations``: FastAPI reads the endpoints' annotations (``Request``), which are
# imported inside create_app, at definition time.
import ipaddress
import json
import logging
import os
import pathlib
import socket
import struct
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from popejoan_env.errors import PopeJoanError
from popejoan_env.web.clients import IDLE_SECONDS, client_of
from popejoan_env.web.games import (
    MAX_GAMES,
    GameManager,
    ModelShelf,
    NotFoundError,
    TooLargeError,
    UnsupportedTypeError,
    WebError,
)
from popejoan_env.web.guard import SECURITY_HEADERS, Guard, with_security_headers
from popejoan_env.web.replays import MAX_REPLAYS, ReplayStore, check_records_file

if TYPE_CHECKING:
    from fastapi import FastAPI, Request

STATIC = pathlib.Path(__file__).resolve().parent / "static"
"""The front end (HTML, JavaScript, CSS), shipped inside the package."""
MAX_JSON_BYTES = 64 * 1024
"""Largest JSON request body read (a request is a few dozen bytes)."""
MAX_UPLOAD_BYTES = 5_000_000
"""Largest records upload read, as sent (``replays.MAX_TEXT_BYTES`` bounds it unpacked)."""
BODY_SECONDS = 30.0
"""Longest time a request body may take to arrive: a client sending it slower is answered 408."""
JSON_TYPES = ("application/json",)
"""Content types a JSON body may be sent as."""
UPLOAD_TYPES = ("application/octet-stream", "application/gzip", "application/x-gzip", "application/jsonl",
                "application/x-ndjson", "application/json")
"""Content types a records upload may be sent as (not the form or text types a foreign page can send unasked)."""
HEADER_SECONDS = 10.0
"""Longest time a connection may take to send a request's headers (a new or a kept-alive one): then it is closed."""
SEND_SECONDS = 30.0
"""Longest time an answer may wait on a client that does not read it (the server's send buffers full), or an answer
still unsent when its connection is closed: then the connection is dropped (a client that never reads would hold its
place among the ``MAX_CONNECTIONS`` for ever)."""
KEEP_ALIVE_SECONDS = 5
"""How long an idle kept-alive connection stays open (uvicorn's ``timeout_keep_alive``)."""
MAX_CONNECTIONS = 100
"""Most connections and requests at once (uvicorn's ``limit_concurrency``): beyond, a request is answered 503."""
MAX_HEADER_BYTES = 16 * 1024
"""Largest request line and headers read (h11's ``max_incomplete_event_size``): beyond, the answer is 400."""

log = logging.getLogger("popejoan.web")

API_DESCRIPTION = """Play Pope Joan at seat 0 of a table against the server's agents, and replay game records.

A game: `POST /api/games` (the table), then `POST /api/games/{game_id}/play` with one of the state's `legal`
cards until the state says `over`; `POST /api/games/{game_id}/next` deals the session's next deal. The server
plays forced cards, lone leads and every other seat itself, so each answer is the position where seat 0 must
choose (or the deal's end). Every refusal is `{"error": sentence}` with a 4xx status and changes nothing.
JSON bodies only as `application/json`. Only this server's own pages and programs on this machine are answered
(the Host must be the server's, a browser's Origin its own). Limits: docs/reliability.md."""
"""The description at the top of ``/api/openapi.json``."""


class ForbiddenError(WebError):
    """A request the server answers only from this machine (HTTP 403)."""

    status = 403


def is_loopback(address: str | None) -> bool:
    """Whether a client address is this machine (127.0.0.0/8, ``::1``; an IPv4-mapped loopback too)."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool((mapped or ip).is_loopback)


class SlowBodyError(WebError):
    """A request body that did not arrive within ``BODY_SECONDS`` (HTTP 408)."""

    status = 408


class GoneError(WebError):
    """A client that closed its connection before its request body arrived: answered (to no one) without a log."""


async def read_body(request: "Request", limit: int, what: str) -> bytes:
    """The request body, refused with a TooLargeError as soon as it is known to exceed ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise TooLargeError(f"{what} of {int(declared):,} bytes is over the limit of {limit:,} bytes")
    chunks, size = [], 0
    import anyio  # Starlette's own dependency: a deadline on every Python this package supports
    from starlette.requests import ClientDisconnect

    try:
        with anyio.fail_after(BODY_SECONDS):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:  # a body sent without (or with a false) Content-Length
                    raise TooLargeError(f"{what} is over the limit of {limit:,} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise SlowBodyError(f"{what} did not arrive within {BODY_SECONDS:g} s") from None
    except ClientDisconnect:  # not a failure of the server: no "internal error" and no traceback on its log
        raise GoneError(f"the client closed the connection before {what} arrived") from None
    return b"".join(chunks)


def media_type(request: "Request") -> str | None:
    """The request's content type without its parameters, lowercased (None when it names none)."""
    declared = request.headers.get("content-type")
    return None if declared is None else declared.split(";", 1)[0].strip().lower()


def check_type(request: "Request", allowed: tuple[str, ...], what: str, body: bytes) -> None:
    """Refuse a body whose content type is not one of ``allowed`` (an empty body may name none)."""
    kind = media_type(request)
    if (kind is None and body) or (kind is not None and kind not in allowed):
        raise UnsupportedTypeError(f"{what} must be sent as {' or '.join(allowed)}, "
                                   f"not {kind or 'without a Content-Type'}")


async def json_body(request: "Request", empty: Any = None) -> Any:
    """The request's JSON value (``empty`` for an empty body), with one clear sentence when it is not JSON."""
    body = await read_body(request, MAX_JSON_BYTES, "the request body")
    check_type(request, JSON_TYPES, "a JSON request body", body)
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
    max_games: int = MAX_GAMES,
    idle_seconds: float = IDLE_SECONDS,
    max_upload_bytes: int = MAX_UPLOAD_BYTES,
    *,
    seed: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    max_replays: int = MAX_REPLAYS,
    host: str | None = None,
) -> "FastAPI":
    """The web app: the play and replay API under ``/api``, the pages ``/`` and ``/replay``, and ``/static``.

    ``host`` is the name the server is reached by (``popejoan serve --host``):
    with the loopback names and the listening address, the only Host accepted.
    """
    from fastapi import FastAPI, Query, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import FileResponse, JSONResponse, Response
    from fastapi.staticfiles import StaticFiles
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException

    if records is not None:
        check_records_file(records)
    if not isinstance(max_upload_bytes, int) or max_upload_bytes < 1:
        raise PopeJoanError(f"max_upload_bytes must be a positive integer, got {max_upload_bytes!r}")
    shelf = ModelShelf(models_dir)
    games = GameManager(max_games=max_games, idle_seconds=idle_seconds, seed=seed, clock=clock, shelf=shelf)
    replays = ReplayStore(shelf, records, max_replays=max_replays, idle_seconds=idle_seconds, clock=clock)

    from popejoan_env import __version__
    from popejoan_env.web import schema

    # openapi_url=None: the schema is served by a route of ours below, to this machine only.
    app = FastAPI(title="Pope Joan", version=__version__, description=API_DESCRIPTION, docs_url=None,
                  redoc_url=None, openapi_url=None)
    app.state.games, app.state.replays = games, replays
    app.add_middleware(Guard, hosts=(host,) if host else ())
    # Server paths a refusal may carry, as the page may show them: the models directory by its own name.
    hidden = [(shelf.root, shelf.shown), (os.path.realpath(tempfile.gettempdir()), "<temporary>"),
              (tempfile.gettempdir(), "<temporary>")]
    if records is not None:
        hidden.append((os.path.dirname(os.path.abspath(records)), "<records folder>"))

    def error(status: int, message: str) -> JSONResponse:
        # The security headers here too: an answer to an internal error leaves by a path around the Guard.
        return JSONResponse({"error": message}, status_code=status, headers=dict(SECURITY_HEADERS))

    def client(request: Request) -> str:
        return client_of(request.client.host if request.client is not None else None)

    @app.exception_handler(PopeJoanError)
    async def refused(request: Request, err: PopeJoanError) -> JSONResponse:
        message = str(err)
        for path, shown in sorted(hidden, key=lambda pair: -len(pair[0])):
            if len(path) > 1:
                message = message.replace(path, shown)
        return error(getattr(err, "status", 400), message)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException) -> JSONResponse:
        path = request.url.path if len(request.url.path) <= 100 else request.url.path[:100] + "..."
        if err.status_code == 404:
            return error(404, f"no such page or endpoint: {request.method[:20]} {path}")
        if err.status_code == 405:
            return error(405, f"{request.method[:20]} is not allowed on {path}")
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

    # ----------------------------------------------------------------- the API described
    def this_machine(request: Request) -> None:
        if not is_loopback(request.client.host if request.client is not None else None):
            raise ForbiddenError("the API description is served to this machine only")

    @app.get("/docs", include_in_schema=False)
    def api_page(request: Request) -> Response:
        this_machine(request)
        return page("api.html")

    @app.get("/api/openapi.json", include_in_schema=False)
    def openapi(request: Request) -> JSONResponse:
        this_machine(request)
        return ok(app.openapi())

    # ----------------------------------------------------------------- play
    def ok(data: Any, status: int = 200) -> JSONResponse:
        return JSONResponse(data, status_code=status)

    @app.get("/api/options", summary="What a new game may be", responses={200: {"model": schema.Options}})
    def options() -> JSONResponse:
        return ok(games.options())

    async def no_body(request: Request) -> None:
        """Read (and drop) the body of a request that takes none; a huge or mistyped one is refused."""
        body = await read_body(request, MAX_JSON_BYTES, "the request body")
        check_type(request, JSON_TYPES, "a request body", body)

    @app.post("/api/games", summary="Start a game (you are seat 0)", status_code=201,
              responses={201: {"model": schema.NewGameAnswer}, **schema.errors(400, 413, 415)},
              openapi_extra=schema.request_body(schema.NewGame, required=False,
                                                example={"players": 4, "preset": "modern", "deals": 2,
                                                         "opponents": ["stops_first", "pimc", "random"]}))
    async def new_game(request: Request) -> JSONResponse:
        body = await json_body(request, empty={})
        game_id, state = await run_in_threadpool(games.create, body, client(request))
        return ok({"game_id": game_id, "state": state}, 201)

    @app.get("/api/games/{game_id}", summary="A game's state",
             responses={200: {"model": schema.State}, **schema.errors(404, 422)})
    def get_game(game_id: str) -> JSONResponse:
        return ok(games.get(game_id))

    @app.post("/api/games/{game_id}/play", summary="Play seat 0's card; the others play up to its next choice",
              responses={200: {"model": schema.State}, **schema.errors(400, 404, 413, 415, 422)},
              openapi_extra=schema.request_body(schema.PlayCard, example={"card": "5S"}))
    async def play(game_id: str, request: Request) -> JSONResponse:
        body = await json_body(request)
        return ok(await run_in_threadpool(games.play, game_id, body))

    @app.post("/api/games/{game_id}/next", summary="Deal the session's next deal (no body)",
              responses={200: {"model": schema.State}, **schema.errors(400, 404, 413, 415, 422)})
    async def next_deal(game_id: str, request: Request) -> JSONResponse:
        await no_body(request)
        return ok(await run_in_threadpool(games.next_deal, game_id))

    @app.get("/api/games/{game_id}/hint", summary="The network's probabilities and pimc's card for seat 0 now",
             responses={200: {"model": schema.Hint}, **schema.errors(400, 404, 422)})
    def hint(game_id: str) -> JSONResponse:
        return ok(games.hint(game_id))

    # ----------------------------------------------------------------- replay
    @app.get("/api/records", summary="The server's records file (--records), by name",
             responses={200: {"model": schema.RecordFiles}})
    def record_files() -> JSONResponse:
        return ok(replays.files())

    @app.post("/api/replays", summary="Replay an uploaded records file (JSON Lines, or its gzip)", status_code=201,
              responses={201: {"model": schema.ReplayCreated}, **schema.errors(400, 413, 415)},
              openapi_extra={"requestBody": {"required": True, "content": {
                  kind: {"schema": {"type": "string", "format": "binary"}} for kind in UPLOAD_TYPES}}})
    async def upload(request: Request) -> JSONResponse:
        body = await read_body(request, max_upload_bytes, "the upload")
        check_type(request, UPLOAD_TYPES, "a records upload", body)
        return ok(await run_in_threadpool(replays.upload, body, client(request)), 201)

    @app.post("/api/replays/from-records", summary="Replay the server's records file (no body)", status_code=201,
              responses={201: {"model": schema.ReplayCreated}, **schema.errors(400, 413, 415)})
    async def from_records(request: Request) -> JSONResponse:
        await no_body(request)
        return ok(await run_in_threadpool(replays.from_records, client(request)), 201)

    @app.get("/api/replays/{replay_id}/deals/{k}", summary="Deal k (from 1) of a replay, frame by frame",
             responses={200: {"model": schema.ReplayDeal}, **schema.errors(400, 404, 422)})
    def replay_deal(replay_id: str, k: str,
                    view: str = Query("all", description="``all`` (every hand face up) or a seat number"),
                    model: str = Query("", description="a model's path from /api/options: its probabilities "
                                                       "at every real choice")) -> JSONResponse:
        return ok(replays.deal(replay_id, k, view, model))

    return app


def serve(app: Any, host: str, port: int) -> None:
    """Run ``app`` with uvicorn on ``host``:``port`` with the connection limits above, until interrupted."""
    import uvicorn

    uvicorn.run(
        app, host=host, port=port, log_level="warning", http=header_deadline_protocol(),
        timeout_keep_alive=KEEP_ALIVE_SECONDS, limit_concurrency=MAX_CONNECTIONS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        # The client is the connection's address, never what an X-Forwarded-For header claims: the per-client
        # caps of games and replays count addresses.
        proxy_headers=False, server_header=False,
    )


def header_deadline_protocol() -> type:
    """uvicorn's HTTP protocol (h11) with ``HEADER_SECONDS`` to send each request's headers, then closed.

    uvicorn times out a kept-alive connection only while it sends nothing, so a
    client that opens connections and sends a byte now and then (slowloris)
    would hold them, and with them the ``MAX_CONNECTIONS`` places, forever.
    """
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadline(H11Protocol):  # type: ignore[misc]
        """Closes a connection whose request headers have not all arrived ``HEADER_SECONDS`` after it waits for them,
        and drops one whose client leaves its answer unread for ``SEND_SECONDS``."""

        _stall: Any = None
        """The timer that drops the connection while its writing is paused (the client reads nothing)."""

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._stall is None:
                self._stall = self.loop.call_later(SEND_SECONDS, self._drop)

        def resume_writing(self) -> None:
            super().resume_writing()
            if self._stall is not None:
                self._stall.cancel()
                self._stall = None

        def _drop(self) -> None:
            """Reset the connection: its unsent answer is dropped, by the kernel too (no FIN queued behind it)."""
            self._stall = None
            sock = self.transport.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:  # already closed
                    pass
            self.transport.abort()  # connection_lost follows: the answer's task stops waiting to write

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm(self.cycle)

        def on_response_complete(self) -> None:
            answered = self.cycle
            # super() may start the next request at once (pipelined, already read): its headers came in time, so
            # the deadline waits for the request after the one answered, not after that next one.
            super().on_response_complete()
            self._arm(answered)

        def _arm(self, waiting_for: Any = None) -> None:
            # A new request replaces the cycle: then the headers came in time.
            self.loop.call_later(HEADER_SECONDS, self._expired, waiting_for)

        def _expired(self, waiting_for: Any) -> None:
            if self.cycle is not waiting_for:
                return
            if not self.transport.is_closing():
                self.transport.close()
            if self.transport.get_write_buffer_size():
                # close() waits for the answer still buffered to be sent: a client that never reads it would keep
                # the connection (and its place) for ever.
                self.loop.call_later(SEND_SECONDS, self._drop)

        def send_400_response(self, msg: str) -> None:
            """A request HTTP itself refuses (bad bytes in a header, headers too long): one JSON sentence."""
            import h11

            body = json.dumps({"error": f"not a valid HTTP request ({msg.rstrip('.')})"}).encode("utf-8")
            headers = with_security_headers([(b"content-type", b"application/json"), (b"connection", b"close"),
                                             (b"content-length", str(len(body)).encode("ascii"))])
            for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"), h11.Data(data=body),
                          h11.EndOfMessage()):
                self.transport.write(self.conn.send(event))
            self.transport.close()

    return HeaderDeadline
