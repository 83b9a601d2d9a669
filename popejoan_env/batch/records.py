"""A batch's state and the scalar engine's objects: reports of finished deals (``Finished``), game records, a row as
a scalar ``Deal`` (``to_deal``), and states written from scalar deals (``state_of_deals``, ``write_worlds``)."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Sequence
from typing import Any

import numpy as np

from popejoan_env.batch.state import BatchState, Tables, allocate, popcount, position_masks, tables_of
from popejoan_env.cards import CARD_NAMES, POPE
from popejoan_env.checks import brief
from popejoan_env.engine import EMPTY_OWNER, PLAYED, SUCCESSOR, Deal
from popejoan_env.errors import InvalidDealError
from popejoan_env.rules import COMPARTMENTS, Rules

__all__ = ["Finished", "dead_of", "game_records", "plays_of", "report", "state_of_deals", "to_deal", "write_worlds"]

_CAUSES = ("turnup", "play", "game")
"""The cause column of ``BatchState.events``: 0 the turn-up (R5), 1 a play (R10), 2 going out (R11)."""


@dataclasses.dataclass
class Finished:
    """The deals that ended in one ``step`` (or ``reset``), before their slots were dealt again."""

    slots: np.ndarray
    """Slot of each finished deal (a slot can appear twice: a deal can end at its turn-up, R5)."""
    deal_ids: np.ndarray
    """Global number of each deal (in the order dealt; ``deal_seed + deal_id`` seeded it)."""
    sessions: np.ndarray
    """Number of the session each deal belongs to (sessions are numbered in the order they started)."""
    delta: np.ndarray
    """[k, players] each seat's net counters in the deal, dressing included."""
    winner: np.ndarray
    """Seat that went out, or -1 (the deal ended at the turn-up)."""
    plays: np.ndarray
    """Number of cards played in each deal."""
    balances: np.ndarray
    """[k, players] balances after the deal."""
    board: np.ndarray
    """[k, 8] board after the deal."""
    records: list[dict[str, Any]] | None = None
    """``popejoan-record/1`` objects, when the batch was made with ``record=True``."""

    def __len__(self) -> int:
        return len(self.slots)

    @staticmethod
    def concat(parts: list[Finished], players: int, record: bool) -> Finished:
        """One report from several (in order)."""
        if not parts:
            e = np.zeros(0, dtype=np.int64)
            return Finished(e, e.copy(), e.copy(), np.zeros((0, players), np.int64), e.copy(), e.copy(),
                            np.zeros((0, players), np.int64), np.zeros((0, 8), np.int64), [] if record else None)
        if len(parts) == 1:
            return parts[0]
        return Finished(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in
              ("slots", "deal_ids", "sessions", "delta", "winner", "plays", "balances", "board")),
            records=[r for p in parts for r in p.records] if record else None,  # type: ignore[union-attr]
        )


def report(s: BatchState, rules: Rules, players: int, rows: np.ndarray, record: bool) -> Finished:
    """The finished deals in ``rows`` of a state as a ``Finished`` (with their game records if ``record``)."""
    return Finished(
        slots=rows.copy(), deal_ids=s.deal_ids[rows].copy(), sessions=s.session_ids[rows].copy(),
        delta=s.balances[rows] - s.balances_before[rows], winner=s.winner[rows].copy(),
        plays=s.num_plays[rows].copy(), balances=s.balances[rows].copy(), board=s.board[rows].copy(),
        records=game_records(s, rules, players, rows) if record else None,
    )


def game_records(s: BatchState, rules: Rules, players: int, rows: np.ndarray) -> list[dict[str, Any]]:
    """The records of the finished deals in ``rows`` of a state (of ``rules`` at ``players`` seats): every array read
    once for all of them, then plain Python (with the cyclic garbage collector paused: thousands of live records
    made it 3× slower; they hold no cycles)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _build_records(s, rules, players, rows)
    finally:
        if enabled:
            gc.enable()


def _build_records(s: BatchState, rules: Rules, players: int, rows: np.ndarray) -> list[dict[str, Any]]:
    names = CARD_NAMES
    holder = s.owner[rows, POPE].tolist() if rules.pope_excused else [-1] * len(rows)
    settings = rules.to_dict()
    used = int(s.num_events[rows].max(initial=0))
    out = []
    for (initial, order, dealer, before_board, before, dead, turnup, winner, balances, board, events, count,
         sizes, pope) in zip(
            s.initial_owner[rows].tolist(), s.play_order[rows].tolist(), s.dealer[rows].tolist(),
            s.board_before[rows].tolist(), s.balances_before[rows].tolist(), s.dead_cards[rows].tolist(),
            s.turnup[rows].tolist(), s.winner[rows].tolist(), s.balances[rows].tolist(),
            s.board[rows].tolist(), s.events[rows, :used].tolist(), s.num_events[rows].tolist(),
            popcount(s.hands[rows]).tolist(), holder):
        hands: list[list[str]] = [[] for _ in range(players)]
        played = []
        for c, seat in enumerate(initial):
            if seat >= 0:
                hands[seat].append(names[c])
            if order[c]:
                played.append((order[c], c))
        played.sort()
        awards = sorted(events[:count])
        payee = winner if winner >= 0 else dealer
        excused = pope if winner >= 0 else -1
        record: dict[str, Any] = {
            "format": "popejoan-record/1",
            "rules": {**settings, "dressing": dict(settings["dressing"])},
            "players": players,
            "dealer": dealer,
            "board_before": dict(zip(COMPARTMENTS, before_board)),
        }
        if any(before):
            record["balances_before"] = before
        record.update(
            hands=hands,
            dead=[names[c] for c in dead if c >= 0],
            turnup=names[turnup],
            plays=[[initial[c], names[c]] for _, c in played],
            awards=[[_CAUSES[cause], seat, COMPARTMENTS[comp], a] for _, cause, seat, comp, a in awards],
            payments=[[o, payee, 0 if o == excused else sizes[o]]
                      for o in ((payee + i) % players for i in range(1, players))],
            winner=None if winner < 0 else winner,
            delta=[b - a for a, b in zip(before, balances)],
            board_after=dict(zip(COMPARTMENTS, board)),
        )
        out.append(record)
    return out


def dead_of(s: BatchState, slot: int) -> list[int]:
    """Card ids of the dead hand of the deal in ``slot``, the turn-up last."""
    return [c for c in s.dead_cards[slot].tolist() if c >= 0]


def plays_of(s: BatchState, slot: int) -> list[int]:
    """Card ids of the deal in ``slot`` in the order played."""
    order = s.play_order[slot]
    played = np.nonzero(order)[0]
    return played[np.argsort(order[played])].tolist()


def to_deal(s: BatchState, rules: Rules, players: int, slot: int) -> Deal:
    """The deal in ``slot`` of a state (of ``rules`` at ``players`` seats) as a scalar ``Deal`` in the same state
    (dealt from its cards and board, its plays replayed)."""
    num_deals = len(s.to_act)
    if not 0 <= slot < num_deals:
        raise InvalidDealError(f"slot must be 0..{num_deals - 1}, got {brief(slot)}")
    initial = s.initial_owner[slot]
    if ((s.owner[slot] == PLAYED) & (initial < 0)).any():
        raise InvalidDealError(
            f"slot {slot} was loaded from a position without its history (Deal.from_position: who played which "
            "card is not known), so to_deal cannot rebuild it")
    hands = [np.nonzero(initial == seat)[0].tolist() for seat in range(players)]
    deal = Deal.from_cards(hands, dead_of(s, slot), int(s.dealer[slot]), rules, board=s.board_before[slot].tolist(),
                           balances=s.balances_before[slot].tolist())
    for card in plays_of(s, slot):
        deal.play(card)
    return deal


def state_of_deals(deals: Sequence[Deal]) -> BatchState:
    """A state holding copies of scalar deals (of one rules object and table size) as they stand; a card due in one
    is left for the batch to play (``Deal.forced``)."""
    if not deals:
        raise InvalidDealError("from_deals needs at least one deal")
    first = deals[0]
    rules, players = first.rules, first.players
    if any(d.rules != rules or d.players != players for d in deals):
        raise InvalidDealError("every deal of a batch has the same rules and table size")
    n = len(deals)
    s, tables = allocate(n, players, max(len(d.dead) for d in deals)), tables_of(rules, players)

    def positions(masks: list[int]) -> np.ndarray:
        return position_masks(tables, np.array(masks, dtype=np.uint64))

    s.hands[:] = positions([d.hands for d in deals])
    s.held[:] = np.bitwise_or.reduce(s.hands, axis=1)
    s.played[:] = positions([d.played_mask for d in deals])
    s.dead[:] = positions([d.dead_mask for d in deals])
    s.revealed[:] = positions([d.revealed_dead for d in deals])
    s.owner[:] = np.array([d.owner for d in deals], dtype=np.int8)
    init = np.array([EMPTY_OWNER] * n, dtype=np.int8)
    for i, d in enumerate(deals):
        for seat, h in enumerate(d.initial_hands):
            m = h
            while m:
                low = m & -m
                init[i, low.bit_length() - 1] = seat
                m ^= low
    s.initial_owner[:] = init
    s.dead_cards[:] = -1  # dead hands of different sizes: -1 pads the shorter ones
    for i, d in enumerate(deals):
        s.dead_cards[i, :len(d.dead)] = d.dead
    s.board[:] = [d.board for d in deals]
    s.balances[:] = [d.balances for d in deals]
    s.board_before[:] = [d.board_before for d in deals]
    s.balances_before[:] = [d.balances_before for d in deals]
    s.dealer[:] = [d.dealer for d in deals]
    s.to_act[:] = [d.to_act for d in deals]
    s.leader[:] = [d.leader for d in deals]
    s.winner[:] = [-1 if d.winner is None else d.winner for d in deals]
    s.done[:] = [d.done for d in deals]
    s.turnup[:] = [d.turnup for d in deals]
    s.trumps[:] = [d.trumps for d in deals]
    s.pair_by[:] = [d.trump_pair_by for d in deals]
    succ = SUCCESSOR[rules.ace_high]
    for i, d in enumerate(deals):
        prev = -1
        for j, (_, card) in enumerate(d.plays):
            s.play_order[i, card] = j + 1
            s.led[i, card] = prev < 0 or succ[prev] != card  # a card that is not due was led
            prev = card
    s.num_plays[:] = [len(d.plays) for d in deals]
    return s


def write_worlds(s: BatchState, tables: Tables, worlds: Sequence[Deal], rows: np.ndarray) -> None:
    """Write into a state of copies of one position (``rows[i]`` the world of row ``i``) each world's hands, dead
    hand, dead cards shown and owner table: the worlds are that position with its unplayed cards placed otherwise."""
    hands = position_masks(tables, np.array([w.hands for w in worlds], dtype=np.uint64))
    owner = np.array([w.owner for w in worlds], dtype=np.int8)
    s.hands[:] = hands[rows]
    s.held[:] = np.bitwise_or.reduce(hands, axis=1)[rows]
    s.dead[:] = position_masks(tables, np.array([w.dead_mask for w in worlds], dtype=np.uint64))[rows]
    s.revealed[:] = position_masks(tables, np.array([w.revealed_dead for w in worlds], dtype=np.uint64))[rows]
    # A card in a hand or dead now was there as dealt; a card played, where the position's history says.
    s.initial_owner[:] = np.where(owner[rows] == PLAYED, s.initial_owner, owner[rows])
    s.owner[:] = owner[rows]
    s.dead_cards[:] = np.array([w.dead for w in worlds], dtype=np.int8)[rows]
