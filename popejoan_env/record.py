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

import gzip
import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import IO, Any

from popejoan_env.cards import CARD_NAMES, iter_cards, parse_card
from popejoan_env.engine import Deal, parse_board
from popejoan_env.errors import InvalidDealError, PopeJoanError, RecordError, RulesError
from popejoan_env.rules import COMPARTMENTS, MAX_PLAYERS, MIN_PLAYERS, Rules

FORMAT = "popejoan-record/1"
"""Value of every record's ``format`` key; bumped when the meaning of a key changes."""

INPUT_KEYS: tuple[str, ...] = ("format", "rules", "players", "dealer", "board_before", "hands", "dead", "plays")
"""Keys ``replay_record`` needs."""
OUTCOME_KEYS: tuple[str, ...] = ("turnup", "awards", "payments", "winner", "delta", "board_after")
"""Keys ``verify_record`` compares with the replay (in this order, after ``turnup``)."""
REQUIRED_KEYS: tuple[str, ...] = INPUT_KEYS + OUTCOME_KEYS
"""Every key INTERFACE.md requires."""

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


class RecordWriter:
    """Streams records to a JSON Lines file, one object a line (gzip if the name ends in ``.gz``; ``-`` is stdout)."""

    def __init__(self, path: PathLike) -> None:
        self.path = os.fspath(path)
        self.count = 0
        self._file: IO[str]
        if self.path == "-":
            self._file = sys.stdout
        elif self.path.endswith(".gz"):
            self._file = gzip.open(self.path, "wt", encoding="utf-8", compresslevel=6)
        else:
            self._file = open(self.path, "w", encoding="utf-8")

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record as a line of compact JSON."""
        self._file.write(json.dumps(record, separators=(",", ":")))
        self._file.write("\n")
        self.count += 1

    def close(self) -> None:
        """Flush and close the file (stdout is only flushed)."""
        if self._file is sys.stdout:
            self._file.flush()
        else:
            self._file.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def write_records(path: PathLike, records: Iterable[Mapping[str, Any]]) -> int:
    """Write records to a JSON Lines file; returns how many were written."""
    with RecordWriter(path) as writer:
        for record in records:
            writer.write(record)
        return writer.count


# --------------------------------------------------------------------- reading
def read_records(path: PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, record)`` from a JSON Lines file (``.gz`` too), skipping blank lines."""
    name = os.fspath(path)
    opener = gzip.open if name.endswith(".gz") else open
    with opener(name, "rb") as raw:
        lineno = 0
        try:
            for lineno, data in enumerate(raw, 1):
                try:
                    line = data.decode("utf-8")
                except UnicodeDecodeError:
                    raise RecordError(f"{name}, line {lineno}: not UTF-8 text") from None
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    # A last line without its newline is the usual sign of an interrupted writer.
                    hint = "; the line looks truncated" if not line.endswith("\n") else ""
                    raise RecordError(
                        f"{name}, line {lineno}: not a valid JSON record ({err.msg}: column {err.colno}){hint}"
                    ) from None
                if not isinstance(record, dict):
                    raise RecordError(
                        f"{name}, line {lineno}: a record must be a JSON object, got {type(record).__name__}"
                    )
                yield lineno, record
        except (EOFError, gzip.BadGzipFile, OSError) as err:
            # A truncated or corrupt .gz stream fails while reading, not while parsing.
            if isinstance(err, FileNotFoundError):
                raise
            raise RecordError(f"{name}, after line {lineno}: the file cannot be read ({err})") from None


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
    if record["format"] != FORMAT:
        raise RecordError(f"format: expected {FORMAT!r}, got {record['format']!r}")
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
        raise RecordError(f"board_before: {err}") from None
    balances = record.get("balances_before")
    if balances is not None:
        if not isinstance(balances, list) or len(balances) != players or not all(_is_int(b) for b in balances):
            raise RecordError(f"balances_before: expected {players} integers, got {balances!r}")
    try:
        deal = Deal.from_cards(hands, dead, dealer, rules, board, balances)
    except InvalidDealError as err:
        raise RecordError(f"hands/dead: {err}") from None
    plays = record["plays"]
    if not isinstance(plays, list):
        raise RecordError(f"plays: expected a list of [seat, card] pairs, got {type(plays).__name__}")
    for i, play in enumerate(plays):
        _play_one(deal, i, play)
    return deal


def _play_one(deal: Deal, i: int, play: Any) -> None:
    """Play ``plays[i]`` on the deal, or raise a RecordError naming the play, seat and card."""
    if not isinstance(play, (list, tuple)) or len(play) != 2 or not _is_int(play[0]):
        raise RecordError(f"plays[{i}]: expected a [seat, card] pair, got {play!r}")
    seat, text = play
    try:
        card = parse_card(text)
    except ValueError as err:
        raise RecordError(f"plays[{i}] (seat {seat}): {err}") from None
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
    """Replay a record and compare its outcome; a RecordError names the first field that differs."""
    deal = replay_record(record)
    for key in OUTCOME_KEYS:
        if key not in record:
            raise RecordError(f"missing field {key!r}; a record needs {list(REQUIRED_KEYS)}")
    turnup = CARD_NAMES[deal.turnup]
    if record["turnup"] != turnup:
        raise RecordError(
            f"turnup: expected {record['turnup']!r} (record), got {turnup!r} (the dead hand's last card)"
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
    if record["winner"] != got["winner"] or isinstance(record["winner"], bool):
        raise RecordError(f"winner: expected {record['winner']!r} (record), got {got['winner']!r} (replay)")
    _compare_lists("delta", record["delta"], got["delta"])
    expected_board = record["board_after"]
    if not isinstance(expected_board, Mapping):
        raise RecordError(f"board_after: expected an object of compartment counters, got {expected_board!r}")
    extra = sorted(str(k) for k in set(expected_board) - set(COMPARTMENTS))
    if extra:
        raise RecordError(f"board_after: unknown compartment(s) {extra}; compartments are {list(COMPARTMENTS)}")
    for comp in COMPARTMENTS:
        if expected_board.get(comp) != got["board_after"][comp]:
            raise RecordError(
                f"board_after.{comp}: expected {expected_board.get(comp)!r} (record), "
                f"got {got['board_after'][comp]!r} (replay)"
            )


def _compare_lists(key: str, expected: Any, got: list[Any]) -> None:
    """Raise a RecordError at the first entry where a recorded list differs from the replay's."""
    if not isinstance(expected, list):
        raise RecordError(f"{key}: expected a list, got {type(expected).__name__}")
    for i, (e, g) in enumerate(zip(expected, got)):
        # JSON has no tuples; bools are ints in Python but never a count here.
        if _normal(e) != g:
            raise RecordError(f"{key}[{i}]: expected {e!r} (record), got {g!r} (replay)")
    if len(expected) != len(got):
        i = min(len(expected), len(got))
        first = f"expected {expected[i]!r} (record), got nothing" if len(expected) > len(got) else (
            f"expected nothing (record), got {got[i]!r} (replay)"
        )
        raise RecordError(f"{key}: the record has {len(expected)} entries, the replay {len(got)}; {key}[{i}]: {first}")


def _normal(value: Any) -> Any:
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (list, tuple)):
        return [_normal(v) for v in value]
    return value


# --------------------------------------------------------------------- field checks
def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_field(value: Any, field: str, low: int, high: int) -> int:
    if not _is_int(value) or not low <= value <= high:
        raise RecordError(f"{field}: expected an integer {low}..{high}, got {value!r}")
    return int(value)


def _rules_of(value: Any) -> Rules:
    """The Rules of a record's ``rules`` object (``preset`` names the base, the other keys override it)."""
    if not isinstance(value, Mapping):
        raise RecordError(f"rules: expected an object of rules options, got {value!r}")
    try:
        return Rules.from_dict(value)
    except (RulesError, TypeError) as err:
        raise RecordError(f"rules: {err}") from None


def _cards_of(value: Any, field: str) -> list[int]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise RecordError(f"{field}: expected a list of cards, got {value!r}")
    out = []
    for j, text in enumerate(value):
        try:
            out.append(parse_card(text))
        except ValueError as err:
            raise RecordError(f"{field}[{j}]: {err}") from None
    return out


def _hands_of(value: Any, players: int) -> list[list[int]]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise RecordError(f"hands: expected a list of {players} card lists, got {value!r}")
    if len(value) != players:
        raise RecordError(f"hands: {len(value)} hands for players={players}")
    return [_cards_of(hand, f"hands[{seat}]") for seat, hand in enumerate(value)]

