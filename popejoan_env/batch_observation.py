"""The v2 observation (``observation.py``) of many deals of a ``BatchDeals`` at once, in whole-array numpy.

``encode_batch(batch)`` gives, for every selected deal, exactly the vector
``observation.encode(batch.to_deal(slot), seat)`` would give (bit for bit:
the public history, the rule flags, relative seats, the dead hand a dealer
may see, and the ``inferred`` planes of ``inference.inferred``), without a
Python loop over the deals: the per-card fields come from the owner tables
(``owner``, ``initial_owner``) and the public history the batch keeps by card
(``play_order``, ``led``), the per-seat fields from the seat arrays.
``state_batch`` does the same for ``raw_env.state()`` (``STATE_LAYOUT``),
``hidden_batch`` gives what an observer cannot see (the hands, counted from
it, and the dead hand: an oracle critic's extra input) and ``action_masks``
gives the legal cards.

How the ``inferred`` planes are found without replaying the log: under
``lowest_of_suit`` a seat that led a card holds no card of its suit ranked
below it (``inference.below_lead``; with ``ace_high`` the Ace ranks above the
King, which is exactly the batch's *position* order), so a card is excluded
for every seat that led a higher card of its suit — a suffix OR over the 13
positions of each suit, all 8 seats at once as the bits of a byte.  Going out
(R11) adds every card for the winner and, under ``pope_excused``, the 9♦ for
every seat but the one excused.

The 0/1 fields are built in a ``uint8`` buffer and cast to ``float32`` in one
pass; the counters (play order, board, balances, hand and dead-hand sizes)
are written scaled afterwards.  Rows are done in chunks that fit in cache.

>>> import numpy as np
>>> from popejoan_env.batch import BatchDeals
>>> from popejoan_env.observation import encode
>>> batch = BatchDeals("modern", players=4, num_deals=3, deal_seed=5)
>>> _ = batch.step(batch.random_actions(np.random.default_rng(0)))
>>> obs = encode_batch(batch)                       # float32 [3, OBS_SIZE], the seat to act in each deal
>>> bool((obs[1] == encode(batch.to_deal(1), int(batch.to_act[1]))).all())
True
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from popejoan_env.batch import BatchDeals
from popejoan_env.cards import EIGHT_DIAMONDS, NUM_CARD_IDS, PACK, POPE
from popejoan_env.checks import brief
from popejoan_env.engine import DEAD, PLAYED
from popejoan_env.errors import GameOverError, InvalidDealError
from popejoan_env.observation import (
    BALANCE_SCALE, BOARD_SCALE, LAYOUT, OBS_SIZE, ORDER_SCALE, RULE_FLAGS, SIZE_SCALE, STATE_LAYOUT,
    STATE_SIZE,
)
from popejoan_env.rules import Rules

__all__ = ["HIDDEN_SIZE", "action_masks", "encode_batch", "hidden_batch", "state_batch"]

_C = NUM_CARD_IDS
_OBS_AT: Mapping[str, int] = {name: start for name, start, _, _ in LAYOUT}
_STATE_AT: Mapping[str, int] = {name: start for name, start, _, _ in STATE_LAYOUT}
HIDDEN_SIZE: int = 9 * _C
"""Length of ``hidden_batch``'s rows: 8 planes of 52, the cards each seat holds counted from the observer
(plane 0 is its own hand, planes of absent seats are 0), then the dead hand."""
_CHUNK = 1024
"""Rows encoded per pass: the uint8 buffer of a chunk (1.3 MB) stays in cache."""


class _Tables(NamedTuple):
    """What depends only on the rules and the table size."""

    players: int
    rule_flags: np.ndarray       # uint8 [len(RULE_FLAGS)]
    lowest_of_suit: bool         # leads show what a seat does not hold (R7)
    ace_high: bool
    card_of_pos: np.ndarray      # the batch's positions: the Ace above the King under ace_high
    pos_of_card: np.ndarray
    excused: bool                # pope_excused: the settlement shows who holds the 9♦ (R11)
    dealer_sees: bool            # dealer_sees_dead_hand
    all_seats: np.uint8          # one bit per seat at the table


@functools.lru_cache(maxsize=64)
def _tables(rules: Rules, players: int, card_of_pos: tuple[int, ...]) -> _Tables:
    flags = np.array([getattr(rules, option) == value for option, value in RULE_FLAGS], dtype=np.uint8)
    order = np.array(card_of_pos, dtype=np.intp)
    return _Tables(players, flags, rules.lead != "any", rules.ace_high, order, np.argsort(order).astype(np.intp),
                   rules.pope_excused, rules.dealer_sees_dead_hand, np.uint8((1 << players) - 1))


def _tables_of(batch: BatchDeals) -> _Tables:
    return _tables(batch.rules, batch.players, tuple(int(c) for c in batch.card_of_pos))


# ----------------------------------------------------------------- arguments
def _selection(batch: BatchDeals, rows: np.ndarray | Sequence[int] | None) -> np.ndarray:
    """The selected deals as indices (every deal by default); a bad ``rows`` raises ``InvalidDealError``."""
    if not isinstance(batch, BatchDeals):
        raise InvalidDealError(f"a batch observation needs a BatchDeals, got {brief(batch)}")
    n = batch.num_deals
    if rows is None:
        return np.arange(n)
    r = np.asarray(rows)
    if r.dtype == bool:
        if r.shape != (n,):
            raise InvalidDealError(f"rows as a mask must be {n} booleans, got shape {r.shape}")
        return np.flatnonzero(r)
    if r.ndim != 1 or (r.size and not np.issubdtype(r.dtype, np.integer)):
        raise InvalidDealError(f"rows must be a bool mask or a 1-d array of deal indices, got {brief(rows)}")
    if r.size and (int(r.min()) < 0 or int(r.max()) >= n):
        raise InvalidDealError(f"rows must name deals 0..{n - 1} of the batch, got {brief(rows)}")
    return r.astype(np.intp)


def _observers(batch: BatchDeals, sel: np.ndarray, seats: np.ndarray | Sequence[int] | int | None) -> np.ndarray:
    """The observing seat of each selected deal (the seat to act by default), checked."""
    if seats is None:
        seat = batch.to_act[sel].astype(np.int64)
        over = seat < 0
        if over.any():
            slot = int(sel[np.argmax(over)])
            raise GameOverError(f"deal {slot} of the batch is over: it has no seat to act; pass seats= to observe it")
        return seat
    s = np.asarray(seats)
    if s.ndim == 0:
        s = np.full(len(sel), s)
    if s.shape != (len(sel),) or (s.size and not np.issubdtype(s.dtype, np.integer)):
        raise InvalidDealError(f"seats must be a seat or {len(sel)} seats (one per selected deal), got {brief(seats)}")
    if s.size and (int(s.min()) < 0 or int(s.max()) >= batch.players):
        raise InvalidDealError(f"seats must be seats 0..{batch.players - 1}, got {brief(seats)}")
    return s.astype(np.int64)


def _output(out: np.ndarray | None, k: int, width: int) -> np.ndarray:
    """``out`` checked (float32 [k, width], writable), or a new array."""
    if out is None:
        return np.empty((k, width), dtype=np.float32)
    if not isinstance(out, np.ndarray) or out.dtype != np.float32 or out.shape != (k, width) \
            or not out.flags.writeable:
        shape = getattr(out, "shape", None)
        raise InvalidDealError(f"out must be a writable float32 array of shape ({k}, {width}), got "
                               f"{getattr(out, 'dtype', type(out).__name__)} {shape}")
    return out


# ----------------------------------------------------------------- public calls
def encode_batch(batch: BatchDeals, rows: np.ndarray | Sequence[int] | None = None,
                 seats: np.ndarray | Sequence[int] | int | None = None, *, out: np.ndarray | None = None) -> np.ndarray:
    """float32 [k, OBS_SIZE]: ``observation.encode`` of each selected deal (``rows``: indices or a bool mask,
    default all) from ``seats[i]`` (default the seat to act); fills ``out`` if given."""
    sel = _selection(batch, rows)
    observer = _observers(batch, sel, seats)
    result = _output(out, len(sel), OBS_SIZE)
    _fill(batch, sel, rows is None, observer, result, _OBS_AT, observation=True)
    return result


def state_batch(batch: BatchDeals, rows: np.ndarray | Sequence[int] | None = None,
                out: np.ndarray | None = None) -> np.ndarray:
    """float32 [k, STATE_SIZE]: the full hidden state (``STATE_LAYOUT``, ``Encoder.state_vector``) of each
    selected deal; fills ``out`` if given."""
    sel = _selection(batch, rows)
    result = _output(out, len(sel), STATE_SIZE)
    _fill(batch, sel, rows is None, np.zeros(len(sel), dtype=np.int64), result, _STATE_AT, observation=False)
    return result


def hidden_batch(batch: BatchDeals, rows: np.ndarray | Sequence[int] | None = None,
                 seats: np.ndarray | Sequence[int] | int | None = None, *, out: np.ndarray | None = None) -> np.ndarray:
    """float32 [k, HIDDEN_SIZE]: every hand counted from ``seats[i]`` (default the seat to act), then the dead
    hand, of each selected deal: what a critic may know and a policy may not; fills ``out`` if given."""
    sel = _selection(batch, rows)
    observer = _observers(batch, sel, seats)
    result = _output(out, len(sel), HIDDEN_SIZE)
    n = batch.players
    owner = batch.owner[sel].astype(np.int64)
    rel = np.where(owner >= 0, (owner - observer[:, None]) % n, -1)
    for j in range(8):
        np.equal(rel, j, out=result[:, j * _C:(j + 1) * _C], casting="unsafe")
    np.equal(owner, DEAD, out=result[:, 8 * _C:], casting="unsafe")
    return result


def action_masks(batch: BatchDeals, rows: np.ndarray | Sequence[int] | None = None) -> np.ndarray:
    """bool [k, 52]: the cards the seat to act may lead in each selected deal (``batch.legal_mask()`` rows)."""
    sel = _selection(batch, rows)
    mask = batch.legal_mask()
    return mask if rows is None else mask[sel]


# ----------------------------------------------------------------- the encoder
def _fill(batch: BatchDeals, sel: np.ndarray, every: bool, observer: np.ndarray, out: np.ndarray,
          at: Mapping[str, int], observation: bool) -> None:
    """Write the observations (or states) of the deals ``sel`` (``every`` deal in order) seen from ``observer``
    into ``out``: per chunk of rows, the 0/1 fields in a uint8 buffer, one cast, then the counters."""
    k, width = out.shape
    if not k:
        return
    t = _tables_of(batch)
    n = t.players
    known = batch.revealed_dead  # derived for the whole batch: once per call
    pick = slice(None) if every else sel  # a slice when every deal is encoded: views, not copies
    # The one-hot fields of absent seats set the dead-size cell, which the counters overwrite after the cast.
    ones = _ones(batch, t, pick, observer, at, observation, at["dead_size"])
    sizes = batch.hand_sizes
    around = sel[:, None], (observer[:, None] + np.arange(n)) % n
    board = batch.board[pick] * np.float32(BOARD_SCALE)
    balances = batch.balances[around] * np.float32(BALANCE_SCALE)
    hand_sizes = sizes[around] * np.float32(SIZE_SCALE)
    # Every card is in a hand, played or dead: the dead hand's size follows (from_deals may hold odd sizes).
    dead_size = (len(PACK) - sizes[pick].sum(axis=1) - batch.num_plays[pick]) * np.float32(SIZE_SCALE)
    chunk = min(_CHUNK, k)
    buf = np.empty((chunk, width), dtype=np.uint8)
    base = (np.arange(chunk, dtype=np.intp) * width)[:, None]
    order, seats_at, rules_at = at["play_order"], at["seats"], at["rules"]
    for lo in range(0, k, chunk):
        hi = min(lo + chunk, k)
        part = buf[:hi - lo]
        part.fill(0)
        rows = slice(lo, hi) if every else sel[lo:hi]
        _cards(batch, t, rows, observer[lo:hi], known[rows], part, at, observation)
        part.reshape(-1)[base[:hi - lo] + ones[lo:hi]] = 1
        part[:, seats_at:seats_at + n] = 1
        part[:, rules_at:rules_at + len(t.rule_flags)] = t.rule_flags
        dest = out[lo:hi]
        np.copyto(dest, part)
        # The counters, while the chunk is in cache, scaled as the scalar encoder scales them.
        dest[:, order:order + _C] *= np.float32(ORDER_SCALE)
        dest[:, at["board"]:at["board"] + 8] = board[lo:hi]
        dest[:, at["balances"]:at["balances"] + n] = balances[lo:hi]
        dest[:, at["hand_sizes"]:at["hand_sizes"] + n] = hand_sizes[lo:hi]
        dest[:, at["dead_size"]] = dead_size[lo:hi]


def _ones(batch: BatchDeals, t: _Tables, sel: np.ndarray | slice, observer: np.ndarray, at: Mapping[str, int],
          observation: bool, absent: int) -> np.ndarray:
    """[k, m] the columns of the one-hot and flag fields that are 1 in each deal (``absent`` where none is)."""
    n = t.players
    owner_pope = batch.owner[sel, POPE]
    winner, to_act, dealer, leader = batch.winner[sel], batch.to_act[sel], batch.dealer[sel], batch.leader[sel]
    cols = [at["turnup"] + batch.turnup[sel], at["trumps"] + batch.trumps[sel]]
    for name, seat in (("dealer", dealer), ("leader", leader), ("to_act", to_act), ("winner", winner)):
        rel = _relative(seat, observer, n)
        cols.append(np.where(rel >= 0, at[name] + rel, absent))
    cols.append(np.where(to_act >= 0, at["lead_due"], absent))  # the batch waits for leads: no card is due
    cols.append(np.where(owner_pope != PLAYED, at["pope_out"], absent))
    if observation and t.dealer_sees:
        cols.append(np.where(dealer == observer, at["sees_dead_hand"], absent))
    if observation and t.excused:
        holder = np.where(winner >= 0, _relative(owner_pope.astype(np.int64), observer, n), -1)
        cols.append(np.where(holder >= 0, at["pope_holder"] + holder, absent))
    return np.stack(cols, axis=1).astype(np.intp)


def _flags(buf: np.ndarray, start: int, width: int) -> np.ndarray:
    """A bool view of ``buf[:, start:start + width]`` to write 0/1 fields into."""
    return buf[:, start:start + width].view(bool)


def _cards(batch: BatchDeals, t: _Tables, rows: np.ndarray | slice, observer: np.ndarray, known: np.ndarray,
           buf: np.ndarray, at: Mapping[str, int], observation: bool) -> None:
    """The card planes of one chunk of deals into the zeroed uint8 ``buf`` (play order unscaled)."""
    n = t.players
    owner = batch.owner[rows]
    obs8 = observer.astype(np.int8)[:, None]
    # Who played each card, as a relative seat (-1: unplayed): the seat dealt it, counted from the observer.
    by = batch.initial_owner[rows] - obs8
    by += (by < 0).view(np.int8) * np.int8(n)
    by += np.int8(1)
    by *= (owner == PLAYED).view(np.int8)
    by -= np.int8(1)
    start = at["played_by"]
    for j in range(n):
        np.equal(by, j, out=_flags(buf, start + j * _C, _C))
    if observation:
        np.equal(owner, obs8, out=_flags(buf, at["hand"], _C))
    else:
        start = at["hands"]
        for j in range(n):
            np.equal(owner, j, out=_flags(buf, start + j * _C, _C))
    # The public history: each card's place in it and whether it was a lead (the batch keeps both by card).
    led = batch.led[rows]
    buf[:, at["play_order"]:at["play_order"] + _C] = batch.play_order[rows]
    _flags(buf, at["led"], _C)[:] = led
    _flags(buf, at["known_dead"], _C)[:] = known
    if not observation:
        np.equal(owner, DEAD, out=_flags(buf, at["dead_hand"], _C))
        return
    if t.dealer_sees:
        sees = (batch.dealer[rows] == observer)[:, None]
        np.logical_and(owner == DEAD, sees, out=_flags(buf, at["dead_hand"], _C))
    excluded = _excluded(t, owner, by, led, batch.winner[rows], observer)
    start = at["inferred"]
    for j in range(n):
        np.not_equal(excluded & np.uint8(1 << j), 0, out=_flags(buf, start + j * _C, _C))


def _excluded(t: _Tables, owner: np.ndarray, by: np.ndarray, led: np.ndarray, winner: np.ndarray,
              observer: np.ndarray) -> np.ndarray:
    """uint8 [k, 52]: per card, bit j set when relative seat j is inferred not to hold it
    (``inference.inferred``): from the leads (R7) and the settlement (R11)."""
    k, n = owner.shape[0], t.players
    if t.lowest_of_suit:
        leads = np.left_shift(led.view(np.uint8), np.maximum(by, 0).view(np.uint8))  # the bit of its leader
        if t.ace_high:
            leads = leads[:, t.card_of_pos]
        # Each position gets the OR of the leads above it in its suit: a suffix OR, rank by rank.
        leads = leads.reshape(k, 4, 13)
        below = np.zeros_like(leads)
        for r in range(11, -1, -1):
            np.bitwise_or(below[:, :, r + 1], leads[:, :, r + 1], out=below[:, :, r])
        excluded = below.reshape(k, _C)
        if t.ace_high:
            excluded = excluded[:, t.pos_of_card]
    else:
        excluded = np.zeros((k, _C), dtype=np.uint8)
    won = np.flatnonzero(winner >= 0)
    if len(won):
        w_obs = observer[won]
        excluded[won] |= np.left_shift(np.uint8(1), ((winner[won] - w_obs) % n).astype(np.uint8))[:, None]
        if t.excused:
            holder = _relative(owner[won, POPE].astype(np.int64), w_obs, n)
            holder_bit = np.where(holder >= 0, np.left_shift(1, np.maximum(holder, 0)), 0).astype(np.uint8)
            excluded[won, POPE] |= t.all_seats & ~holder_bit
    excluded[:, EIGHT_DIAMONDS] = 0
    return excluded


def _relative(seat: np.ndarray, observer: np.ndarray, players: int) -> np.ndarray:
    """Seats counted from the observers (``seats.relative``), -1 kept for no seat."""
    return np.where(seat >= 0, (seat - observer) % players, -1)
