"""Replays for the web app: records files read, kept by id, and turned into frames by the engine (no framework).

A replay is the list of a records file's deals (each kept as its compact JSON
line, compressed ``BLOCK_DEALS`` lines at a time: a small gzip upload can
unpack to ``MAX_TEXT_BYTES`` of repetitive text, which ``MAX_REPLAYS`` replays
would otherwise hold in memory as it unpacked).  A deal's frames come from the engine, never from the record's
outcome: ``verify_record`` first checks that the record replays to what it
says, then ``replay_record`` of the record without its plays gives the deal
after the dressing and the turn-up, and each recorded card is played with
``Deal.play``; every frame is the position after one more card, with the awards
and payments made by that card.

>>> import numpy as np
>>> from popejoan_env.engine import Deal
>>> from popejoan_env.record import deal_record
>>> deal = Deal.new(players=3, rng=np.random.default_rng(2))
>>> deal.play_out(lambda d, legal: legal[0])
>>> out = deal_frames(deal_record(deal), 1, 1)
>>> len(out["frames"]) == len(deal.plays) + 1, out["frames"][-1]["board"] == out["final"]["board_after"]
(True, True)
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import tempfile
import time
import zlib
from collections.abc import Callable, Mapping
from typing import Any

from popejoan_env.cards import CARD_NAMES, SUITS, names_of
from popejoan_env.checks import brief
from popejoan_env.engine import Deal
from popejoan_env.errors import PopeJoanError
from popejoan_env.record import (GZIP_MAGIC, RecordLimitError, deal_record, read_records, replay_record,
                                 verify_record)
from popejoan_env.rules import COMPARTMENTS, Rules
from popejoan_env.seat_view import history_of, seat_view
from popejoan_env.web.clients import IDLE_SECONDS, ClientTable
from popejoan_env.web.games import ModelShelf, NotFoundError, TooLargeError, WebError, policy_probs

MAX_DEALS = 10_000
"""Most deals one replay holds."""
MAX_REPLAYS = 16
"""Most replays the server keeps."""
MAX_REPLAYS_PER_CLIENT = 4
"""Most replays one client (one address) keeps: its own oldest replay makes room for its next one."""
MAX_TEXT_BYTES = 32 * 2**20
"""Most bytes of records text one replay reads, unpacked (blank lines included): a file beyond it is refused."""
MAX_LINES = 2 * MAX_DEALS
"""Most lines one replay reads, blank ones included (a records file has one line a deal)."""


BLOCK_DEALS = 64
"""Deals a replay compresses together (showing one deal unpacks its block, about 100 kB at most)."""


class Replay:
    """The deals of one records file: compact JSON lines, compressed (``zlib``) ``BLOCK_DEALS`` lines at a time."""

    def __init__(self, replay_id: str, blocks: list[bytes], deals: int) -> None:
        self.replay_id = replay_id
        self.blocks = blocks
        self.deals = deals

    def record(self, number: int) -> Any:
        """The record of deal ``number`` (from 1)."""
        block, at = divmod(number - 1, BLOCK_DEALS)
        return json.loads(zlib.decompress(self.blocks[block]).split(b"\n")[at])


def _lines_of(path: str, shown: str) -> tuple[list[bytes], int]:
    """The records of a file as compressed blocks of compact JSON lines (``Replay``), and their number, within
    ``MAX_DEALS``, ``MAX_LINES`` and ``MAX_TEXT_BYTES``.

    ``read_records`` reads a gzip stream line by line and counts every line and
    byte it unpacks, so a file that unpacks to far more than its size (a gzip of
    newlines) stops being read as soon as a limit is passed.
    """
    out: list[str] = []  # the block being filled
    blocks: list[bytes] = []
    total = deals = 0
    try:
        for _, record in read_records(path, max_bytes=MAX_TEXT_BYTES, max_lines=MAX_LINES):
            if deals >= MAX_DEALS:
                raise TooLargeError(f"{shown} holds more than {MAX_DEALS:,} deals; a replay takes at most that many")
            line = json.dumps(record, separators=(",", ":"))
            total += len(line)
            if total > MAX_TEXT_BYTES:
                raise TooLargeError(f"{shown} unpacks to more than {MAX_TEXT_BYTES:,} bytes of records; "
                                    "a replay takes at most that much")
            out.append(line)
            deals += 1
            if len(out) == BLOCK_DEALS:
                blocks.append(zlib.compress("\n".join(out).encode("utf-8")))
                out = []
    except RecordLimitError as err:
        raise TooLargeError(f"{str(err).replace(path, shown)} by a replay") from None
    except PopeJoanError as err:
        if isinstance(err, WebError):
            raise
        raise WebError(str(err).replace(path, shown)) from None
    if not deals:
        raise WebError(f"{shown} holds no records (one JSON object per line, as popejoan simulate writes)")
    if out:
        blocks.append(zlib.compress("\n".join(out).encode("utf-8")))
    return blocks, deals


def check_records_file(path: str, shown: str | None = None) -> None:
    """Refuse a records path that is not a readable regular file (a pipe, a device, a directory), without waiting.

    The file is opened non-blocking, so a named pipe with no writer is refused
    at once instead of hanging the reader.
    """
    shown = path if shown is None else shown
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as err:  # ValueError: a NUL in the name
        raise WebError(f"the records file {shown} cannot be read: {getattr(err, 'strerror', None) or err}") from None
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if not stat.S_ISREG(mode):
        raise WebError(f"the records file {shown} is not a regular file (a pipe, a device or a directory "
                       "cannot be replayed)")


class ReplayStore:
    """Replays by id: from uploads or the server's ``--records`` file; idle ones expire, the oldest evicted."""

    def __init__(self, shelf: ModelShelf, records: str | os.PathLike[str] | None = None,
                 *,
                 max_replays: int = MAX_REPLAYS, idle_seconds: float = IDLE_SECONDS,
                 clock: Callable[[], float] = time.monotonic, max_replays_per_client: int = MAX_REPLAYS_PER_CLIENT,
                 ) -> None:
        self._replays: ClientTable[Replay] = ClientTable(max_replays, max_replays_per_client, idle_seconds, clock=clock,
                                                         what="replays")
        self.shelf = shelf
        self.records = os.fspath(records) if records is not None else None
        self.max_replays = self._replays.capacity

    def files(self) -> dict[str, list[str]]:
        """The records file the server was started with (its name only), if any."""
        return {"files": [os.path.basename(self.records)] if self.records is not None else []}

    def _keep(self, read: tuple[list[bytes], int], client: str) -> dict[str, Any]:
        """Store a replay of ``client`` (``_lines_of``'s blocks and count); its id and number of deals."""
        replay = Replay(secrets.token_urlsafe(12), *read)
        self._replays.add(replay.replay_id, replay, client)
        return {"replay_id": replay.replay_id, "deals": replay.deals}

    def upload(self, body: bytes, client: str = "") -> dict[str, Any]:
        """A replay of an uploaded records file: JSON Lines text or its gzip."""
        if not body.strip():
            raise WebError("the upload is empty; send the JSON Lines text (or .gz) of a records file")
        gz = body.startswith(GZIP_MAGIC)
        with tempfile.TemporaryDirectory(prefix="popejoan-upload-") as folder:
            path = os.path.join(folder, "upload.jsonl.gz" if gz else "upload.jsonl")
            with open(path, "wb") as f:
                f.write(body)
            return self._keep(_lines_of(path, "the upload"), client)

    def from_records(self, client: str = "") -> dict[str, Any]:
        """A replay of the server's ``--records`` file."""
        if self.records is None:
            raise WebError("the server was started without a records file (popejoan serve --records FILE)")
        shown = os.path.basename(self.records)
        try:
            check_records_file(self.records, shown)  # replaced by a pipe since the start: refused, not waited on
            return self._keep(_lines_of(self.records, shown), client)
        except OSError as err:
            raise WebError(f"the records file {shown} cannot be read: {err.strerror or err}") from None

    def deal(self, replay_id: str, k: str, view: str = "all", model: str = "") -> dict[str, Any]:
        """Deal ``k`` (1-based) of a replay as frames, seen by everyone or one seat, with a model's policy."""
        replay = self._replays.get(replay_id)
        if replay is None:
            raise NotFoundError(f"no replay {brief(replay_id)}: it never existed, expired or was evicted; "
                                "upload the file again")
        number = int(k) if isinstance(k, str) and k.isascii() and k.isdigit() and len(k) < 10 else None
        if number is None or not 1 <= number <= replay.deals:
            raise NotFoundError(f"no deal {brief(k)} in this replay: deals are numbered 1..{replay.deals}")
        record = replay.record(number)
        try:
            verify_record(record)
        except PopeJoanError as err:
            raise WebError(f"deal {number} does not replay: {err}") from None
        players = record["players"]
        if view == "all":
            seat = None
        elif isinstance(view, str) and view.isascii() and view.isdigit() and len(view) < 10 and int(view) < players:
            seat = int(view)
        else:
            raise WebError(f"view must be 'all' or a seat 0..{players - 1}, got {brief(view)}")
        policy = None
        if model:
            real = self.shelf.resolve(model)
            why = self.shelf.mismatch(real, Rules.from_dict(record["rules"]), players)
            if why is not None:
                raise WebError(f"no policy from {model}: {why}")
            policy = self.shelf.policy(real)
        return deal_frames(record, number, replay.deals, seat, policy)


def deal_frames(record: Mapping[str, Any], number: int, deals: int, view: int | None = None,
                policy: Any = None) -> dict[str, Any]:
    """The frames of a verified record (web_spec.md "Replay"): one per position, from the engine."""
    deal = replay_record({**record, "plays": []})
    frames = [_frame(deal, 0, None, list(deal.awards), list(deal.payments), view, policy)]
    for step, (_, text) in enumerate(record["plays"], start=1):
        awards, payments = len(deal.awards), len(deal.payments)
        deal.play(text)
        seat, card, lead = history_of(deal, 0)[-1]
        frames.append(_frame(deal, step, {"seat": seat, "card": CARD_NAMES[card], "lead": lead},
                             deal.awards[awards:], deal.payments[payments:], view, policy))
    final = deal_record(deal)
    return {
        "deal": number, "deals": deals, "players": deal.players, "rules": deal.rules.to_dict(),
        "dealer": deal.dealer, "turnup": CARD_NAMES[deal.turnup], "trumps": SUITS[deal.trumps],
        "frames": frames,
        "final": {"winner": final["winner"], "delta": final["delta"], "board_after": final["board_after"]},
    }


def _frame(deal: Deal, step: int, play: dict[str, Any] | None, awards: list[tuple[str, int, int, int]],
           payments: list[tuple[int, int, int]], view: int | None, policy: Any) -> dict[str, Any]:
    """One frame: the position of ``deal`` now, and what the last card did."""
    to_act = deal.to_act if not deal.done else None
    shown = to_act is not None and (view is None or view == to_act)
    legal = deal.legal_actions() if shown else []
    probs = None
    if policy is not None and len(legal) >= 2:
        probs = policy_probs(policy, seat_view(deal, to_act))
    return {
        "step": step,
        "play": play,
        "hands": [names_of(h) if view is None or s == view else deal.hand_sizes[s] for s, h in enumerate(deal.hands)],
        "board": dict(zip(COMPARTMENTS, deal.board)),
        "balances": list(deal.balances),
        "to_act": to_act,
        "legal": names_of(legal),
        "awards": [[cause, seat, COMPARTMENTS[comp], x] for cause, seat, comp, x in awards],
        "payments": [list(p) for p in payments],
        "policy": probs,
    }

