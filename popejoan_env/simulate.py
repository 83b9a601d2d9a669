"""``popejoan simulate``: deals played with random legal play, written as game records, in one stream or in shards.

One Generator for the whole file (``write_scalar``, ``write_batch``: the
default), or shards of K deals, shard ``j`` dealt and played from its own
``default_rng([seed, j])`` (``play_shard``), so a shard is the same wherever
it runs: here one after another, or as Ray tasks (``write_sharded``), the
driver writing them in order.  The command line and its checks are in
``__main__``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from popejoan_env.cluster import map_tasks
from popejoan_env.engine import Deal
from popejoan_env.record import RecordWriter, deal_record, record_line
from popejoan_env.rules import Rules
from popejoan_env.session import Session

if TYPE_CHECKING:
    import argparse

    import numpy as np

    from popejoan_env.batch import BatchDeals, Finished

BATCH_SIZE = 4096
"""Default ``--batch-size``: deals in flight with ``--engine batch``."""
MAX_BATCH_SIZE = 1_000_000
"""Largest ``--batch-size`` (about 1 kB of state per deal in flight)."""
SHARD_DEALS = 10_000
"""Deals per shard with ``--backend ray`` and no ``--shard-deals``, rounded up to whole sessions (~13 MB of records)."""

ShardSettings = tuple[Rules, int, int, str, int, int]
"""What every shard of a sharded simulate shares: rules, players, session length, engine, batch size, seed."""
Shard = tuple[int, int, int]
"""One shard: its number ``j``, the file position of its first deal, and its number of deals."""
ShardOutput = tuple[list[str], list[int], int, str]
"""A played shard: each record's JSON up to its ``session`` key, the sessions (from 0 in the shard), the cards
played, and a note on the engine for the summary."""


class RandomLeads:
    """Random legal play: forced cards as they come, each lead uniform among the legal ones."""

    def __init__(self, rng: np.random.Generator, block: int = 65536) -> None:
        # One rng.random() call per lead would cost more than the engine's move;
        # a block of uniforms drawn at once keeps the same Generator and seed.
        self.rng = rng
        self.block = block
        self._uniforms: list[float] = []
        self._next = 0

    def __call__(self, deal: Deal, legal: list[int]) -> int:
        """A lead drawn uniformly from ``legal`` (two or more cards)."""
        if self._next >= len(self._uniforms):
            self._uniforms, self._next = self.rng.random(self.block).tolist(), 0
        u = self._uniforms[self._next]
        self._next += 1
        return legal[int(u * len(legal))]


def scalar_records(
    rules: Rules, players: int, length: int, deals: int, rng: np.random.Generator, first_dealer: int = 0,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(session, record)`` of ``deals`` deals played by ``RandomLeads(rng)`` in sessions of ``length``, the
    first dealt by ``first_dealer`` and the deal passing left; sessions are numbered from 0."""
    choose = RandomLeads(rng)
    done = session_index = 0
    dealer = first_dealer
    while done < deals:
        session = Session(rules, players, rng, deals=min(length, deals - done), first_dealer=dealer)
        while not session.over:
            deal = session.next_deal()
            deal.play_out(choose)
            done += 1
            yield session_index, deal_record(deal)
        dealer = session.dealer
        session_index += 1


def write_scalar(
    args: argparse.Namespace, rules: Rules, length: int, rng: np.random.Generator, writer: RecordWriter, progress: Any,
) -> int:
    """``--engine scalar``: sessions one after another, each deal played out by ``RandomLeads``; the cards played."""
    plays = 0
    for session, record in scalar_records(rules, args.players, length, args.deals, rng):
        plays += len(record["plays"])
        record.update(seed=args.seed, deal_index=writer.count, session=session)
        writer.write(record)
        progress.update()
    return plays


def batch_records(
    rules: Rules, players: int, length: int, batch_size: int, deals: int, rng: np.random.Generator,
) -> tuple[Iterator[tuple[int, dict[str, Any]]], str]:
    """``(session, record)`` of ``deals`` deals played by slots of ``BatchDeals``, every lead random
    (``random_actions``), and a note on the engine for the summary.

    The one Generator ``rng`` deals (whenever the batch deals a slot again) and draws the leads.  The records
    come as whole sessions in the order they started (the batch's ``session_ids``, from 0), each session's deals
    in order, the last session cut short at ``deals``, as the scalar engine plays them.  The deal passes left
    within a session and, in each slot, from one session to the next.
    """
    from popejoan_env.batch import BatchDeals

    # Each session holds `length` deals, or (without credit) at least one: more slots would play unused sessions.
    shortest = length if rules.allow_credit else 1
    size = min(batch_size, -(-deals // shortest))
    batch = BatchDeals(rules, players, size, rng=rng, session_length=length, record=True)
    return _batch_sessions(batch, deals, shortest, rng), f"batch engine ({size:,} deals in flight)"


def _batch_sessions(
    batch: BatchDeals, deals: int, shortest: int, rng: np.random.Generator,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of ``_batch_records`` as the batch finishes whole sessions."""
    finished: dict[int, list[dict[str, Any]]] = {}  # session number -> its deals reported so far
    done = next_session = 0  # the number of the next session to give (every session is given, in order)

    def whole_sessions(report: Finished) -> list[tuple[int, dict[str, Any]]]:
        nonlocal done, next_session
        for record, session in zip(report.records or [], report.sessions.tolist()):
            finished.setdefault(session, []).append(record)
        playing = set(batch.session_ids.tolist())
        out = []
        while done < deals and next_session in finished and next_session not in playing:
            for record in finished.pop(next_session)[:deals - done]:
                out.append((next_session, record))
                done += 1
            next_session += 1
        return out

    yield from whole_sessions(batch.advance())  # deals that ended at their turn-up
    while done < deals:
        # Sessions from `needed` on cannot reach the file: their slots wait (their first deal dealt, not played).
        needed = next_session + -(-(deals - done) // shortest)
        live = batch.session_ids < needed
        assert live.any(), "a session the file needs is neither played nor finished"
        yield from whole_sessions(batch.step(batch.random_actions(rng), which=live))


def write_batch(
    args: argparse.Namespace, rules: Rules, length: int, batch_size: int, rng: np.random.Generator,
    writer: RecordWriter, progress: Any,
) -> tuple[int, str]:
    """``--engine batch``: the records of ``_batch_records`` written with their position in the file
    (``deal_index``) and session number; the cards played, and a note for the summary."""
    records, note = batch_records(rules, args.players, length, batch_size, args.deals, rng)
    plays = 0
    for session, record in records:
        plays += len(record["plays"])
        record.update(seed=args.seed, deal_index=writer.count, session=session)
        writer.write(record)
        progress.update()
    return plays, f", {note}"


def play_shard(settings: ShardSettings, shard: Shard) -> ShardOutput:
    """Play one shard of a sharded simulate, in this process or as a Ray task (``ShardOutput``).

    Shard ``j`` is dealt and played from ``default_rng([seed, j])`` alone, so
    it is the same wherever it runs.  Its sessions are numbered from 0: only
    the driver, writing the shards in order, knows how many came before
    (without credit a session can end early), so each record is returned as
    its JSON up to the ``session`` key, which is the last key of a record.
    """
    import numpy as np

    rules, players, length, engine, batch_size, seed = settings
    index, first, deals = shard
    rng = np.random.default_rng([seed, index])
    if engine == "batch":
        records, note = batch_records(rules, players, length, batch_size, deals, rng)
    else:
        # The deal passes left one seat each deal through the whole file: deal `first` is dealt by seat first mod n.
        records, note = scalar_records(rules, players, length, deals, rng, first_dealer=first % players), ""
    heads: list[str] = []
    sessions: list[int] = []
    plays = 0
    for i, (session, record) in enumerate(records):
        plays += len(record["plays"])
        record.update(seed=seed, deal_index=first + i)
        heads.append(record_line(record)[:-1])  # without the closing brace
        sessions.append(session)
    return heads, sessions, plays, note


def write_sharded(
    args: argparse.Namespace, rules: Rules, length: int, batch_size: int, shard_deals: int, cpus: int | None,
    writer: RecordWriter, progress: Any,
) -> tuple[int, str]:
    """``--shard-deals``: the shards played by ``play_shard`` one after another here, or as Ray tasks when
    ``cpus`` (the Ray cluster's) is given, and written in order; the cards played, and a note for the summary."""
    settings: ShardSettings = (rules, args.players, length, args.engine, batch_size, args.seed)
    starts = range(0, args.deals, shard_deals)
    shards = ((j, first, min(shard_deals, args.deals - first)) for j, first in enumerate(starts))
    if cpus is None:
        outputs: Iterator[ShardOutput] = (play_shard(settings, shard) for shard in shards)
    else:
        outputs = map_tasks(play_shard, settings, shards, ordered=True)
    plays = sessions_before = 0
    note = ""
    for heads, sessions, shard_plays, note in outputs:
        for head, session in zip(heads, sessions):
            writer.write_line(f'{head},"session":{sessions_before + session}}}')
        sessions_before += sessions[-1] + 1
        plays += shard_plays
        progress.update(len(heads))
    where = f" as Ray tasks on {cpus} CPUs" if cpus is not None else ""
    return plays, f"{', ' + note if note else ''}, {len(starts):,} shards of {shard_deals:,} deals{where}"
