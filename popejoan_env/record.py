"""Game records: one JSON object per finished deal, written, read, replayed and verified (stdlib only).

The format (``popejoan-record/1``) is the contract of INTERFACE.md "Game
records".  A record carries the inputs of a deal (rules, players, dealer,
``board_before``, ``hands``, ``dead``; ``balances_before`` when not all zero)
and every card played; the outcome (``awards``, ``payments``, ``winner``,
``delta``, ``board_after``) is stored too, so that another implementation can
be checked against it and a file can be checked against this engine.

>>> import numpy as np
>>> from popejoan_env.engine import Deal
>>> deal = Deal.new(players=3, rng=np.random.default_rng(3))
>>> while not deal.done:
...     deal.play(deal.legal_actions()[0])
>>> record = deal_record(deal)
>>> record["format"], len(record["hands"]), record["turnup"] == record["dead"][-1]
('popejoan-record/1', 3, True)
>>> verify_record(record)  # replays the plays; raises RecordError on any difference
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import sys
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import IO, Any

from popejoan_env.cards import CARD_NAMES, iter_cards, parse_card
from popejoan_env.checks import as_int, brief, is_int
from popejoan_env.engine import Deal, parse_balances, parse_board
from popejoan_env.errors import InvalidDealError, PopeJoanError, RecordError, RulesError
from popejoan_env.files import replacing
from popejoan_env.rules import COMPARTMENTS, MAX_PLAYERS, MIN_PLAYERS, Rules

FORMAT = "popejoan-record/1"
"""Value of every record's ``format`` key; bumped when the meaning of a key changes."""

INPUT_KEYS: tuple[str, ...] = ("format", "rules", "players", "dealer", "board_before", "hands", "dead", "plays")
"""Keys ``replay_record`` needs."""
OUTCOME_KEYS: tuple[str, ...] = ("turnup", "awards", "payments", "winner", "delta", "board_after")
"""Keys ``verify_record`` compares with the replay (in this order, after ``turnup``)."""
REQUIRED_KEYS: tuple[str, ...] = INPUT_KEYS + OUTCOME_KEYS
"""Every key INTERFACE.md requires."""

MAX_LINE_BYTES = 10 * 2**20
"""Longest line ``read_records`` reads (a record is a few kB): a longer one is refused, not parsed."""
MAX_DEPTH = 8
"""Deepest nesting of lists and objects in a record's known keys (a record needs 3)."""
MAX_ITEMS = 10_000
"""Most entries of one list or object in a record's known keys (a deal has at most 51 plays)."""
MAX_TEXT = 1_000
"""Longest string in a record's known keys (cards, causes and options are a few characters)."""
MAX_COUNT = 2**63 - 1
"""Largest integer (in size) a record's known keys may hold: bigger ones are refused before anything prints them."""

PathLike = str | os.PathLike[str]


# --------------------------------------------------------------------- writing
def deal_record(deal: Deal) -> dict[str, Any]:
    """The JSON object of INTERFACE.md "Game records" for a finished deal."""
    if not deal.done:
        raise RecordError(
            f"only a finished deal can be recorded; this one has {len(deal.plays)} plays and seat "
            f"{deal.to_act} is to act"
        )
    record: dict[str, Any] = {
        "format": FORMAT,
        "rules": deal.rules.to_dict(),
        "players": deal.players,
        "dealer": deal.dealer,
        "board_before": dict(zip(COMPARTMENTS, deal.board_before)),
    }
    if any(deal.balances_before):
        record["balances_before"] = list(deal.balances_before)
    record.update(
        hands=[[CARD_NAMES[c] for c in iter_cards(h)] for h in deal.initial_hands],
        dead=[CARD_NAMES[c] for c in deal.dead],
        turnup=CARD_NAMES[deal.turnup],
        plays=[[seat, CARD_NAMES[card]] for seat, card in deal.plays],
        awards=[[cause, seat, COMPARTMENTS[comp], counters] for cause, seat, comp, counters in deal.awards],
        payments=[[payer, payee, counters] for payer, payee, counters in deal.payments],
        winner=deal.winner,
        delta=deal.delta,
        board_after=dict(zip(COMPARTMENTS, deal.board)),
    )
    return record


def record_line(record: Mapping[str, Any]) -> str:
    """A record as its line of compact JSON (no newline), as files of records hold it."""
    return json.dumps(record, separators=(",", ":"))


def records_path(path: object) -> str:
    """``path`` as a string (a ``str`` or an ``os.PathLike``); else a RecordError naming what was given."""
    if not isinstance(path, (str, os.PathLike)):
        raise RecordError(f"a records path must be a str or os.PathLike, got {brief(path)}")
    return os.fspath(path)  # type: ignore[return-value]


class RecordWriter:
    """Streams records to a JSON Lines file, one object a line (gzip if the name ends in ``.gz``; ``-`` is stdout).

    The records go to a temporary file beside the target (``files.replacing``),
    which replaces the target only when the writer is closed without an error:
    an exception or a Ctrl-C (``KeyboardInterrupt``) inside ``with
    RecordWriter(...)``, or ``abort()``, removes the temporary file and leaves
    the target as it was, so a reader never finds a half-written file.  The
    gzip header carries no time and no file name, so the same records give the
    same bytes.  A target that exists and is not a regular file (a device such
    as ``/dev/null``, a pipe) is written in place.
    """

    def __init__(self, path: PathLike) -> None:
        self.path = records_path(path)
        self.count = 0
        self._file: IO[str] | None = None
        self._raw: IO[bytes] | None = None
        self._replace = contextlib.ExitStack()
        if self.path == "-":
            self._file = sys.stdout
            return
        try:
            if os.path.exists(self.path) and not os.path.isfile(self.path):
                self._raw = open(self.path, "wb")
            else:
                # A symbolic link is followed: the file it points to is the one replaced.
                tmp = self._replace.enter_context(replacing(os.path.realpath(self.path)))
                self._raw = open(tmp, "wb")
            if self.path.endswith(".gz"):
                # filename="" and mtime=0: no name and no time in the header (byte-identical output).
                binary: IO[bytes] = gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, compresslevel=6, mtime=0)
            else:
                binary = self._raw
            self._file = io.TextIOWrapper(binary, encoding="utf-8")
        except BaseException as err:
            self.abort(err)
            raise

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record as a line of compact JSON."""
        self.write_line(record_line(record))

    def write_line(self, line: str) -> None:
        """Append one record already turned into its line (``record_line``)."""
        if self._file is None:
            raise RecordError(f"{self.path}: the writer is closed")
        self._file.write(line)
        self._file.write("\n")
        self.count += 1

    def close(self) -> None:
        """Finish the file: flush, close and move it onto the target (stdout is only flushed)."""
        if self._file is sys.stdout:
            self._file.flush()
            return
        if self._file is None:
            return  # closed or aborted already
        try:
            self._file.close()  # writes the gzip trailer
            if self._raw is not None:
                self._raw.close()
            self._file = self._raw = None
            self._replace.close()  # os.replace onto the target
        except BaseException as err:
            self.abort(err)
            raise

    def abort(self, error: BaseException | None = None) -> None:
        """Give up: close and remove the temporary file; the target keeps whatever it held before.

        ``error`` is what made the writer give up, passed on to ``files.replacing`` (so a signal that
        arrived mid-write still ends the process once the temporary file is gone).
        """
        if self._file is sys.stdout:
            with contextlib.suppress(OSError):  # a closed pipe: the error that brought us here says more
                self._file.flush()
            return
        for f in (self._file, self._raw):
            if f is not None:
                # What the file would have held no longer matters: it is removed below.
                with contextlib.suppress(OSError, ValueError, zlib.error):
                    f.close()
        self._file = self._raw = None
        # Leaving ``replacing`` with an exception removes the temporary file and replaces nothing.
        if error is None:
            error = RecordError("aborted")
        self._replace.__exit__(type(error), error, error.__traceback__)

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort(exc)


def write_records(path: PathLike, records: Iterable[Mapping[str, Any]]) -> int:
    """Write records to a JSON Lines file; returns how many were written."""
    with RecordWriter(path) as writer:
        for record in records:
            writer.write(record)
        return writer.count


# --------------------------------------------------------------------- reading
class RecordLimitError(RecordError):
    """A records file over a limit its reader set (``max_bytes`` unpacked, ``max_lines``): refused, not read on."""


GZIP_MAGIC = b"\x1f\x8b"
"""The first bytes of a gzip stream: a records file that starts with them is a ``.gz`` file."""


def read_records(path: PathLike, max_bytes: int | None = None,
                 max_lines: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, record)`` from a JSON Lines file (``.gz`` too), skipping blank lines.

    Whatever the file holds, a problem with its content is a ``RecordError``
    naming the file and the line: bytes that are not UTF-8, a line that is not
    JSON (nested too deep, an integer of thousands of digits, cut short), a
    line longer than ``MAX_LINE_BYTES``, a corrupt or truncated gzip stream.
    With ``max_bytes`` (bytes read, unpacked) or ``max_lines`` (lines, blank ones
    included) a file beyond either is refused with a ``RecordLimitError`` as
    soon as the limit is passed, so the work is bounded whatever the file holds.
    A file that cannot be opened raises the ``OSError`` (``FileNotFoundError``).
    """
    name = records_path(path)
    with open(name, "rb") as plain:
        # The name says how the file is read (as RecordWriter writes it); a file whose first bytes say otherwise
        # is refused for that, not for the bytes that follow.
        packed = plain.peek(len(GZIP_MAGIC))[:len(GZIP_MAGIC)] == GZIP_MAGIC
        if packed and not name.endswith(".gz"):
            raise RecordError(f"{name} is gzip-compressed (it starts with gzip's bytes 1f 8b) but its name does not "
                              "end in .gz: name it *.gz, or unpack it")
        if name.endswith(".gz") and not packed and plain.peek(1):
            raise RecordError(f"{name} ends in .gz but is not gzip-compressed: name it without .gz, or compress it")
        raw: IO[bytes] = gzip.GzipFile(fileobj=plain, mode="rb") if name.endswith(".gz") else plain
        lineno = total = 0
        try:
            while True:
                # A bounded read: a file of one endless line is refused, not loaded.
                data = raw.readline(MAX_LINE_BYTES + 1)
                if not data:
                    break
                lineno += 1
                total += len(data)
                if max_lines is not None and lineno > max_lines:
                    raise RecordLimitError(f"{name} has more than {max_lines:,} lines (blank lines count too); "
                                           f"at most {max_lines:,} are read")
                if max_bytes is not None and total > max_bytes:
                    raise RecordLimitError(f"{name} unpacks to more than {max_bytes:,} bytes; "
                                           f"at most {max_bytes:,} are read")
                if len(data) > MAX_LINE_BYTES:
                    raise RecordError(
                        f"{name}, line {lineno}: longer than {MAX_LINE_BYTES:,} bytes; "
                        "a record is one line of a few kB (not a JSON Lines records file?)"
                    )
                record = _parse_line(name, lineno, data)
                if record is not None:
                    yield lineno, record
        except (EOFError, OSError, zlib.error) as err:
            # A truncated or corrupt .gz stream fails while reading, not while parsing.
            raise RecordError(f"{name}, after line {lineno}: the file cannot be read ({_clip(str(err))})") from None
        finally:
            if raw is not plain:
                raw.close()


def _parse_line(name: str, lineno: int, data: bytes) -> dict[str, Any] | None:
    """The record of one line, None for a blank line, or a RecordError naming the line."""
    try:
        line = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RecordError(f"{name}, line {lineno}: not UTF-8 text") from None
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        # A last line without its newline is the usual sign of an interrupted writer.
        hint = "; the line looks truncated" if not line.endswith("\n") else ""
        raise RecordError(
            f"{name}, line {lineno}: not a valid JSON record ({err.msg}: column {err.colno}){hint}"
        ) from None
    except RecursionError:
        raise RecordError(f"{name}, line {lineno}: not a valid JSON record (nested too deeply to read)") from None
    except ValueError as err:  # an integer of thousands of digits
        raise RecordError(f"{name}, line {lineno}: not a valid JSON record ({_clip(str(err))})") from None
    if not isinstance(record, dict):
        raise RecordError(f"{name}, line {lineno}: a record must be a JSON object, got {type(record).__name__}")
    return record


# --------------------------------------------------------------------- replaying
def replay_record(record: Mapping[str, Any]) -> Deal:
    """Rebuild a record's deal and play its ``plays`` in order; returns the Deal after the last play.

    The shape and values of every input key are checked, and a RecordError names
    the field (``hands[2][4]``, ``plays[17]``, ``rules`` …).  Whether the deal
    is finished and the outcome matches is ``verify_record``'s business.
    """
    if not isinstance(record, Mapping):
        raise RecordError(f"a record must be a JSON object (mapping), got {type(record).__name__}")
    for key in INPUT_KEYS:
        if key not in record:
            raise RecordError(f"missing field {key!r}; a record needs {list(REQUIRED_KEYS)}")
    _check_sizes(record)
    if record["format"] != FORMAT:
        raise RecordError(f"format: expected {FORMAT!r}, got {_show(record['format'])}")
    rules = _rules_of(record["rules"])
    players = _int_field(record["players"], "players", MIN_PLAYERS, MAX_PLAYERS)
    hands = _hands_of(record["hands"], players)
    dead = _cards_of(record["dead"], "dead")
    if not dead:
        raise RecordError("dead: the dead hand is empty; its last card is the turn-up")
    dealer = _int_field(record["dealer"], "dealer", 0, players - 1)
    try:
        board = parse_board(record["board_before"])
    except InvalidDealError as err:
        raise RecordError(f"board_before: {_clip(str(err))}") from None
    balances = record.get("balances_before")
    if balances is not None:
        if not isinstance(balances, list) or len(balances) != players or not all(is_int(b) for b in balances):
            raise RecordError(f"balances_before: expected {players} integers, got {_show(balances)}")
        try:
            parse_balances(balances, players)  # within the engine's MAX_COUNTERS
        except InvalidDealError as err:
            raise RecordError(f"balances_before: {_clip(str(err))}") from None
    try:
        deal = Deal.from_cards(hands, dead, dealer, rules, board=board, balances=balances)
    except InvalidDealError as err:
        raise RecordError(f"hands/dead: {_clip(str(err))}") from None
    plays = record["plays"]
    if not isinstance(plays, list):
        raise RecordError(f"plays: expected a list of [seat, card] pairs, got {type(plays).__name__}")
    for i, play in enumerate(plays):
        _play_one(deal, i, play)
    return deal


def _play_one(deal: Deal, i: int, play: Any) -> None:
    """Play ``plays[i]`` on the deal, or raise a RecordError naming the play, seat and card."""
    if not isinstance(play, (list, tuple)) or len(play) != 2 or not is_int(play[0]):
        raise RecordError(f"plays[{i}]: expected a [seat, card] pair, got {_show(play)}")
    seat, text = as_int(play[0]), play[1]
    try:
        card = parse_card(text)
    except ValueError as err:
        raise RecordError(f"plays[{i}] (seat {seat}): {_clip(str(err))}") from None
    name = CARD_NAMES[card]
    if deal.done:
        how = f"seat {deal.winner} went out" if deal.winner is not None else "it ended at the turn-up"
        raise RecordError(f"plays[{i}] (seat {seat}, {name}): the deal is already over ({how}) after {i} plays")
    if seat != deal.to_act:
        raise RecordError(
            f"plays[{i}] (seat {seat}, {name}): seat {deal.to_act} is to act, not seat {seat}; "
            f"legal: {[CARD_NAMES[c] for c in deal.legal_actions()]}"
        )
    try:
        deal.play(card)
    except PopeJoanError as err:
        raise RecordError(f"plays[{i}] (seat {seat}, {name}): illegal play: {err}") from None


def verify_record(record: Mapping[str, Any]) -> None:
    """Replay a record and compare its outcome; a RecordError names the first field that differs.

    The outcome must match in value and in type: a count or a seat is an
    integer, so ``6.0`` or ``true`` where the replay has ``6`` or ``1`` is a
    difference (JSON's ``true`` is no count, and a float is no seat).
    """
    deal = replay_record(record)
    for key in OUTCOME_KEYS:
        if key not in record:
            raise RecordError(f"missing field {key!r}; a record needs {list(REQUIRED_KEYS)}")
    turnup = CARD_NAMES[deal.turnup]
    if not isinstance(record["turnup"], str) or record["turnup"] != turnup:
        raise RecordError(
            f"turnup: expected {_show(record['turnup'])} (record), got {turnup!r} (the dead hand's last card)"
        )
    if not deal.done:
        legal = [CARD_NAMES[c] for c in deal.legal_actions()]
        raise RecordError(
            f"plays: the deal is not finished after the {len(deal.plays)} recorded plays "
            f"(seat {deal.to_act} is to act, legal: {legal})"
        )
    got = deal_record(deal)
    for key in ("awards", "payments"):
        _compare_lists(key, record[key], got[key])
    _compare("winner", record["winner"], got["winner"])
    _compare_lists("delta", record["delta"], got["delta"])
    expected_board = record["board_after"]
    if not isinstance(expected_board, Mapping):
        raise RecordError(f"board_after: expected an object of compartment counters, got {_show(expected_board)}")
    extra = sorted(str(k) for k in set(expected_board) - set(COMPARTMENTS))
    if extra:
        raise RecordError(f"board_after: unknown compartment(s) {_show(extra)}; compartments are {list(COMPARTMENTS)}")
    for comp in COMPARTMENTS:
        _compare(f"board_after.{comp}", expected_board.get(comp), got["board_after"][comp])


def _compare(field: str, expected: Any, got: Any) -> None:
    """Raise a RecordError naming ``field`` unless the recorded value is the replay's, in value and type."""
    if _same(expected, got):
        return
    wrong = _wrong_type(expected, got) if _loose(expected, got) else None
    if wrong is not None:
        where, value = wrong
        raise RecordError(
            f"{field}{where}: expected an integer (replay: {_show(got)}), got {_show(value)} "
            f"({type(value).__name__}) in the record"
        )
    raise RecordError(f"{field}: expected {_show(expected)} (record), got {_show(got)} (replay)")


def _compare_lists(key: str, expected: Any, got: list[Any]) -> None:
    """Raise a RecordError at the first entry where a recorded list differs from the replay's."""
    if not isinstance(expected, list):
        raise RecordError(f"{key}: expected a list, got {type(expected).__name__}")
    for i, (e, g) in enumerate(zip(expected, got)):
        _compare(f"{key}[{i}]", e, g)
    if len(expected) != len(got):
        i = min(len(expected), len(got))
        first = f"expected {_show(expected[i])} (record), got nothing" if len(expected) > len(got) else (
            f"expected nothing (record), got {_show(got[i])} (replay)"
        )
        raise RecordError(f"{key}: the record has {len(expected)} entries, the replay {len(got)}; {key}[{i}]: {first}")


def _same(expected: Any, got: Any) -> bool:
    """``expected == got`` where an int matches only an integer (never a bool or a float) and a list a list."""
    if got is None:
        return expected is None
    if isinstance(got, int):
        return as_int(expected) == got
    if isinstance(got, str):
        return isinstance(expected, str) and expected == got
    if isinstance(got, (list, tuple)):
        return (isinstance(expected, (list, tuple)) and len(expected) == len(got)
                and all(_same(e, g) for e, g in zip(expected, got)))
    return False  # the replay's outcome holds nothing else


def _loose(expected: Any, got: Any) -> bool:
    """Equal when numbers of any type count (``6.0``, ``True`` for ``1``): tells a wrong type from a wrong value."""
    if isinstance(got, (list, tuple)):
        return (isinstance(expected, (list, tuple)) and len(expected) == len(got)
                and all(_loose(e, g) for e, g in zip(expected, got)))
    if isinstance(got, int) and isinstance(expected, (bool, float)):
        return expected == got
    return _same(expected, got)


def _wrong_type(expected: Any, got: Any, where: str = "") -> tuple[str, Any] | None:
    """The first place where a recorded number stands for the replay's integer: (sub-path, the recorded value)."""
    if isinstance(got, (list, tuple)):
        for j, (e, g) in enumerate(zip(expected, got)):
            wrong = _wrong_type(e, g, f"{where}[{j}]")
            if wrong is not None:
                return wrong
        return None
    return (where, expected) if isinstance(got, int) and isinstance(expected, (bool, float)) else None


# --------------------------------------------------------------------- field checks
def _show(value: Any, limit: int = 200) -> str:
    """``repr(value)``, cut to ``limit`` characters; never fails (deep nesting, huge integers)."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        text = f"<{type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[:limit] + "..."


def _clip(text: str, limit: int = 500) -> str:
    """A message cut to ``limit`` characters."""
    return text if len(text) <= limit else text[:limit] + "..."


def _check_sizes(record: Mapping[str, Any]) -> None:
    """Refuse known keys nested deeper than MAX_DEPTH or holding absurd sizes, before any field is parsed.

    Every later check and message can then handle the values without
    recursion or conversion limits (Python prints no integer of more than
    4,300 digits, and ``repr`` of a list nested 5,000 deep overflows the stack).
    """
    stack: list[tuple[str, Any, int]] = [
        (key, record[key], 0) for key in REQUIRED_KEYS + ("balances_before",) if key in record
    ]
    while stack:
        field, value, depth = stack.pop()
        if isinstance(value, (str, bytes)):
            if len(value) > MAX_TEXT:
                raise RecordError(f"{field}: a text of {len(value):,} characters; at most {MAX_TEXT:,} are read")
        elif isinstance(value, int) and not isinstance(value, bool):
            if not -MAX_COUNT <= value <= MAX_COUNT:
                raise RecordError(f"{field}: an integer of {value.bit_length():,} bits; at most 63 are read")
        elif isinstance(value, (Mapping, list, tuple)):
            if depth >= MAX_DEPTH:
                raise RecordError(f"{field}: nested more than {MAX_DEPTH} levels deep (a record needs 3)")
            if len(value) > MAX_ITEMS:
                raise RecordError(f"{field}: {len(value):,} entries; at most {MAX_ITEMS:,} are read")
            if isinstance(value, Mapping):
                for k, v in value.items():
                    if not isinstance(k, str):
                        raise RecordError(f"{field}: a key must be text, got {_show(k)}")
                    stack.append((f"{field}.{_clip(k, 40)}", v, depth + 1))
            else:
                stack.extend((f"{field}[{j}]", v, depth + 1) for j, v in enumerate(value))


def _int_field(value: Any, field: str, low: int, high: int) -> int:
    number = as_int(value)
    if number is None or not low <= number <= high:
        raise RecordError(f"{field}: expected an integer {low}..{high}, got {_show(value)}")
    return number


def _rules_of(value: Any) -> Rules:
    """The Rules of a record's ``rules`` object (``preset`` names the base, the other keys override it)."""
    if not isinstance(value, Mapping):
        raise RecordError(f"rules: expected an object of rules options, got {_show(value)}")
    try:
        return Rules.from_dict(value)
    except (RulesError, TypeError) as err:
        raise RecordError(f"rules: {_clip(str(err))}") from None


def _cards_of(value: Any, field: str) -> list[int]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise RecordError(f"{field}: expected a list of cards, got {_show(value)}")
    out = []
    for j, text in enumerate(value):
        try:
            out.append(parse_card(text))
        except ValueError as err:
            raise RecordError(f"{field}[{j}]: {_clip(str(err))}") from None
    return out


def _hands_of(value: Any, players: int) -> list[list[int]]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise RecordError(f"hands: expected a list of {players} card lists, got {_show(value)}")
    if len(value) != players:
        raise RecordError(f"hands: {len(value)} hands for players={players}")
    return [_cards_of(hand, f"hands[{seat}]") for seat, hand in enumerate(value)]
