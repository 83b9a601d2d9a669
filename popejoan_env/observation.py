"""One seat's observation as a numpy vector, seats relative to the observer, padded to 8 seats.

The observation encodes exactly the fields of ``SeatView`` (``seat_view.py``,
the single source of truth for what a seat may know), so nothing hidden can
leak, and ``decode`` turns it back into that ``SeatView``.  Relative seat 0 is
the observer, 1 the player on its left, and so on clockwise; rows for seats
``>= players`` are zero, so one network can play any table size from 3 to 8.

Counts are scaled by powers of two so that decoding is exact: board counters
÷16, balances ÷64 (they can be negative), hand sizes and the dead-hand size
÷16.  Card planes have 52 entries indexed by card id (``cards.py``; entry 20,
the 8♦, is always 0).

``OBS_VERSION = 2``, ``OBS_SIZE = 1285``.  Layout (``LAYOUT`` is its one source: the table below is
filled in from it when the module is imported, by ``layout_table()``):

{LAYOUT_TABLE}

The public history reads back exactly: the cards played are those with a
non-zero ``play_order`` (their order), ``played_by`` says who played each and
``led`` which were leads; stops and their causes follow from it
(``SeatView.stops``).  ``inferred`` is ``inference.inferred`` of the
view (what the table can infer beyond the cards it sees), row ``k`` for relative
seat ``k``; with the cards it sees the observer knows more (``inference.cannot_hold``).

``decode`` rebuilds ``SeatView.rules`` from the rule flags; the options that
do not change play as seen by a seat (``dressing``, ``start_counters``,
``allow_credit``) are not stored and come back at their defaults, so for the
``modern`` and ``victorian`` presets ``decode(encode(deal, s), mask) ==
seat_view(deal, s)`` exactly.

>>> import numpy as np
>>> from popejoan_env import Deal, MODERN
>>> from popejoan_env.seat_view import seat_view
>>> deal = Deal.new(MODERN, players=4, dealer=0, rng=np.random.default_rng(1))
>>> obs = encode(deal, 1)
>>> obs.shape, obs.dtype, int(obs[TO_ACT])       # seat 1 is eldest: it acts (relative seat 0)
((1285,), dtype('float32'), 1)
>>> decode(obs, action_mask(deal, 1)) == seat_view(deal, 1)
True

There is one encoder, ``Encoder``: it keeps an absolute-seat state buffer
that is updated incrementally as cards are played and builds a seat's
observation with one gather through a precomputed index array.  The
environment keeps one per deal; ``encode(deal, seat)`` is a fresh
``Encoder(deal).observe(seat)`` and ``encode_view(view)`` runs the same code
on a ``SeatView`` (its observer is seat 0), so every observation comes from
the same lines.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from popejoan_env.cards import NUM_CARD_IDS, PACK_MASK, PACKS, POPE, CardMask, iter_cards
from popejoan_env.engine import SUCCESSOR, Deal, legal_leads
from popejoan_env.inference import below_lead
from popejoan_env.errors import InvalidDealError, PopeJoanError
from popejoan_env.rules import COMPARTMENTS, MAX_PLAYERS, Rules
from popejoan_env.seat_view import Play, SeatView
from popejoan_env.seats import absolute

OBS_VERSION: int = 2
"""Version of the layout below; bumped whenever the layout or its meaning changes (v1 → v2: the public
history, ``winner``/``pope_holder`` and the ``inferred`` planes)."""

MAX_SEATS = MAX_PLAYERS
"""Seat rows in the observation: tables of fewer players are padded with zeros."""

BOARD_SCALE = 1.0 / 16
"""Board counters are stored ×1/16 (a power of two, so decoding is exact)."""
BALANCE_SCALE = 1.0 / 64
"""Balances are stored ×1/64."""
SIZE_SCALE = 1.0 / 16
"""Hand sizes and the dead-hand size are stored ×1/16."""
ORDER_SCALE = 1.0 / 64
"""A played card's place in the history (1 = the first card of the deal) is stored ×1/64."""

RULE_FLAGS: tuple[tuple[str, object], ...] = (
    ("lead", "any"),
    ("deal", "equal"),
    ("deal", "all_round"),
    ("deal", "fixed_stock"),
    ("pope_turnup", "ends_deal"),
    ("pair_split", "halves"),
    ("ace_high", True),
    ("pope_excused", True),
    ("dealer_sees_dead_hand", True),
)
"""The rules flags, in order: each is 1 when ``getattr(rules, option) == value``."""

_C = NUM_CARD_IDS
_S = MAX_SEATS

_FIELDS: tuple[tuple[str, int, str], ...] = (
    ("hand", _C, "1 for each card in the observer's hand"),
    ("played_by", _S * _C, "8 planes of 52: cards played this deal by relative seat 0..7"),
    ("play_order", _C, "for each card played, its place in the deal's history (1 = first card) ÷64; 0 if unplayed"),
    ("led", _C, "1 for each card played as a lead (R7), 0 for continuations (R8) and unplayed cards"),
    ("turnup", _C, "one-hot: the turned-up card (in the dead hand, seen by all)"),
    ("trumps", 4, "one-hot: trumps suit (C, D, H, S)"),
    ("board", len(COMPARTMENTS), f"counters on {', '.join(COMPARTMENTS)}, ÷16"),
    ("balances", _S, "each relative seat's counters, ÷64 (may be negative)"),
    ("hand_sizes", _S, "cards left in each relative seat's hand, ÷16"),
    ("dealer", _S, "one-hot: relative seat of the dealer"),
    ("leader", _S, "one-hot: relative seat that led the current sequence (or must lead)"),
    ("to_act", _S, "one-hot: relative seat to act (all 0 once the deal is over)"),
    ("forced", _C, "one-hot: the card that must be played next (R8), all 0 when none"),
    ("lead_due", 1, "1 when the seat to act must lead (R7)"),
    ("known_dead", _C, "cards known to be in the dead hand: the turn-up and successors revealed by stops"),
    ("dead_hand", _C, "the whole dead hand, only when this seat may see it (else 0)"),
    ("sees_dead_hand", 1, "1 when dead_hand is filled in (dealer, rule dealer_sees_dead_hand)"),
    ("dead_size", 1, "cards in the dead hand, ÷16"),
    ("pope_out", 1, "1 while the 9♦ has not been played"),
    ("seats", _S, "1 for each relative seat present at the table"),
    ("rules", len(RULE_FLAGS), "rule flags: " + ", ".join(
        f"{k}={v}" if isinstance(v, str) else k for k, v in RULE_FLAGS)),
    ("winner", _S, "one-hot: relative seat that went out (all 0 while the deal goes on)"),
    ("pope_holder", _S, "one-hot: relative seat the settlement showed to hold the 9♦ (excused, R11)"),
    ("inferred", _S * _C, "8 planes of 52: cards relative seat 0..7 is inferred not to hold, beyond the cards "
                          "played and known dead (inference.inferred: its leads, the settlement)"),
)


def _layout(fields: tuple[tuple[str, int, str], ...]) -> tuple[tuple[str, int, int, str], ...]:
    rows, start = [], 0
    for name, length, text in fields:
        rows.append((name, start, length, text))
        start += length
    return tuple(rows)


LAYOUT: tuple[tuple[str, int, int, str], ...] = _layout(_FIELDS)
"""The observation layout: rows of ``(name, start, length, description)``."""
OBS_SIZE: int = LAYOUT[-1][1] + LAYOUT[-1][2]
"""Length of the observation vector."""

_START = {name: start for name, start, _, _ in LAYOUT}
HAND = _START["hand"]
PLAYED_BY = _START["played_by"]
PLAY_ORDER = _START["play_order"]
LED = _START["led"]
TURNUP = _START["turnup"]
TRUMPS = _START["trumps"]
BOARD = _START["board"]
BALANCES = _START["balances"]
HAND_SIZES = _START["hand_sizes"]
DEALER = _START["dealer"]
LEADER = _START["leader"]
TO_ACT = _START["to_act"]
FORCED = _START["forced"]
LEAD_DUE = _START["lead_due"]
KNOWN_DEAD = _START["known_dead"]
DEAD_HAND = _START["dead_hand"]
SEES_DEAD_HAND = _START["sees_dead_hand"]
DEAD_SIZE = _START["dead_size"]
POPE_OUT = _START["pope_out"]
SEATS = _START["seats"]
RULES = _START["rules"]
WINNER = _START["winner"]
POPE_HOLDER = _START["pope_holder"]
INFERRED = _START["inferred"]

_STATE_FIELDS: tuple[tuple[str, int, str], ...] = (
    ("hands", _S * _C, "8 planes of 52: the cards each seat 0..7 holds now"),
    ("dead_hand", _C, "the whole dead hand (turn-up included)"),
    ("turnup", _C, "one-hot: the turned-up card"),
    ("trumps", 4, "one-hot: trumps suit (C, D, H, S)"),
    ("board", len(COMPARTMENTS), "counters on each compartment, ÷16"),
    ("balances", _S, "each seat's counters, ÷64"),
    ("hand_sizes", _S, "cards left in each seat's hand, ÷16"),
    ("dealer", _S, "one-hot: the dealer"),
    ("leader", _S, "one-hot: the seat that led the current sequence (or must lead)"),
    ("to_act", _S, "one-hot: the seat to act (all 0 once the deal is over)"),
    ("forced", _C, "one-hot: the card due (R8)"),
    ("lead_due", 1, "1 when the seat to act must lead"),
    ("played_by", _S * _C, "8 planes of 52: cards played by seat 0..7"),
    ("play_order", _C, "each played card's place in the history ÷64"),
    ("led", _C, "1 for each card played as a lead"),
    ("known_dead", _C, "dead cards every seat knows (turn-up, successors revealed by stops)"),
    ("dead_size", 1, "cards in the dead hand, ÷16"),
    ("pope_out", 1, "1 while the 9♦ has not been played"),
    ("seats", _S, "1 for each seat at the table"),
    ("rules", len(RULE_FLAGS), "the rule flags of the observation"),
    ("winner", _S, "one-hot: the seat that went out"),
)
STATE_LAYOUT: tuple[tuple[str, int, int, str], ...] = _layout(_STATE_FIELDS)
"""The layout of ``raw_env.state()``, in absolute seats: the full hidden state, an oracle for critics."""
STATE_SIZE: int = STATE_LAYOUT[-1][1] + STATE_LAYOUT[-1][2]
"""Length of the state vector."""


MAX_COUNTERS = 1 << 20
"""Board compartments and |balances| are assumed below this for the bounds (float32 stays exact to 2**24)."""


def check_counters_fit(rules: Rules, deals: int, balance_low: int, balance_high: int, board_total: int,
                       what: str) -> None:
    """Refuse an episode whose counters could leave the observation's Box (``MAX_COUNTERS``): starting balances in
    ``balance_low..balance_high`` and ``board_total`` counters on the board, then ``deals`` deals with play.

    Counters move only deal by deal: each deal can add at most its dressing to the board and move at most the
    dressing and a counter per card (the settlement) between balances, and a seat takes from the board only what
    lies on it; so a balance stays within ``[low - k·c, high + board + k·c]`` and the board below ``board + k·c``,
    ``c`` the dressing plus the pack, ``k`` the deals (twice as many when a turned-up Pope may end deals, R5: those
    do not count as deals with play)."""
    per_deal = sum(rules.dressing) + rules.pack_size
    span = deals * (2 if rules.pope_turnup == "ends_deal" else 1) * per_deal
    if max(balance_high, 0) + board_total + span > MAX_COUNTERS or balance_low - span < -MAX_COUNTERS:
        raise InvalidDealError(
            f"{what}: balances from {balance_low:,} to {balance_high:,} and {board_total:,} counters on the board, "
            f"then {deals:,} deal(s) moving up to {per_deal:,} counters each (dressing {sum(rules.dressing):,} and a "
            f"counter per card), could take a balance or the board past ±{MAX_COUNTERS:,} counters, the bound of "
            "the observation space (MAX_COUNTERS): use smaller counts, a smaller dressing or fewer deals")


def bounds(size: int = OBS_SIZE, layout: tuple[tuple[str, int, int, str], ...] = LAYOUT) -> tuple[np.ndarray, np.ndarray]:
    """Finite ``(low, high)`` float32 arrays for a Box space holding every reachable observation (or state)."""
    start = {name: (s, n) for name, s, n, _ in layout}
    low = np.zeros(size, dtype=np.float32)
    high = np.ones(size, dtype=np.float32)
    b, nb = start["board"]
    high[b:b + nb] = MAX_COUNTERS * BOARD_SCALE
    b, nb = start["balances"]
    low[b:b + nb] = -MAX_COUNTERS * BALANCE_SCALE
    high[b:b + nb] = MAX_COUNTERS * BALANCE_SCALE
    b, nb = start["hand_sizes"]
    high[b:b + nb] = 51 * SIZE_SCALE
    high[start["dead_size"][0]] = 51 * SIZE_SCALE
    return low, high


def layout_table(layout: tuple[tuple[str, int, int, str], ...] = LAYOUT) -> str:
    """The layout as a Markdown table (the docstrings of this module and of the AEC env, and so the docs'
    environment page, carry it, filled in from ``LAYOUT``)."""
    lines = ["| field | start | length | contents |", "|---|---|---|---|"]
    lines += [f"| {name} | {start} | {length} | {text} |" for name, start, length, text in layout]
    return "\n".join(lines)


# ---------------------------------------------------------------- bit planes
def card_planes(masks: Any) -> np.ndarray:
    """Card bitmasks (any shape) -> uint8 array of that shape and one more axis of 52 card ids, 0/1."""
    words = np.ascontiguousarray(masks, dtype="<u8")
    planes = np.unpackbits(words.reshape(-1, 1).view(np.uint8), axis=1, bitorder="little")[:, :_C]
    return planes.reshape(*words.shape, _C)


def _mask_of_plane(plane: np.ndarray) -> CardMask:
    """A 0/1 plane of 52 -> card bitmask."""
    bits = np.zeros(64, dtype=np.uint8)
    bits[:_C] = plane != 0
    return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")


def _rule_flags(rules: Rules) -> list[float]:
    return [1.0 if getattr(rules, k) == v else 0.0 for k, v in RULE_FLAGS]


def _one_hot_index(part: np.ndarray) -> int:
    hits = np.flatnonzero(part)
    return int(hits[0]) if len(hits) else -1


# ---------------------------------------------------------------- one-shot calls (the Encoder's code)
def encode(deal: Deal, seat: int, out: np.ndarray | None = None) -> np.ndarray:
    """The observation of ``deal`` from absolute ``seat`` (float32 [OBS_SIZE]); fills ``out`` if given."""
    obs = Encoder(deal).observe(seat)
    if out is None:
        return obs
    out[:] = obs
    return out


def encode_view(view: SeatView) -> np.ndarray:
    """The observation of a ``SeatView`` (float32 [OBS_SIZE]): the ``Encoder`` run on the view."""
    return Encoder.of_view(view).observe(0)


def action_mask(deal: Deal, seat: int) -> np.ndarray:
    """int8[52]: 1 for each card ``seat`` may play now; all 0 unless it is ``seat``'s turn."""
    mask = np.zeros(_C, dtype=np.int8)
    if deal.to_act == seat and not deal.done:
        mask[deal.legal_actions()] = 1
    return mask


def _rules_of_flags(flags: Sequence[bool]) -> Rules:
    (lead_any, equal, all_round, fixed, ends, halves, ace_high, excused, sees) = (bool(f) for f in flags)
    kind = "equal" if equal else "all_round" if all_round else "fixed_stock" if fixed else None
    if kind is None:
        raise PopeJoanError("not an observation: no deal kind flag is set")
    return Rules(
        lead="any" if lead_any else "lowest_of_suit",
        deal=kind,
        pope_turnup="ends_deal" if ends else "pays_pope",
        pair_split="halves" if halves else "none",
        ace_high=ace_high,
        pope_excused=excused,
        dealer_sees_dead_hand=sees,
    )


@functools.lru_cache(maxsize=64)
def play_rules(rules: Rules) -> Rules:
    """The rules as a seat's observation carries them: the flag options and the pack, the others at their defaults."""
    flagged = _rules_of_flags([f != 0.0 for f in _rule_flags(rules)])
    return flagged if rules.pack == "full" else flagged.replace(pack=rules.pack)


_PACK_OF_SIZE: dict[int, str] = {len(cards): name for name, cards in PACKS.items()}
"""The pack of each pack size: an observation shows its pack by its cards (in hands, played and dead)."""


def decode_rules(vector: np.ndarray) -> Rules:
    """The ``Rules`` stored in an observation's rule flags; other options at their defaults."""
    return _rules_of_flags(vector[RULES:RULES + len(RULE_FLAGS)] != 0)


def decode(vector: np.ndarray, mask: np.ndarray | None = None) -> SeatView:
    """The ``SeatView`` an observation encodes (the exact inverse of ``encode``), public history included.

    ``legal`` comes from ``mask`` when given; without it, it is worked out from
    the observer's hand, the forced card and the rules.  ``rules`` comes from the
    rule flags (``dressing``, ``start_counters``, ``allow_credit`` at defaults).
    """
    v = np.asarray(vector)
    if v.shape != (OBS_SIZE,):
        raise PopeJoanError(f"an observation (version {OBS_VERSION}) has shape ({OBS_SIZE},), got {v.shape}")
    rules = decode_rules(v)
    n = int(np.count_nonzero(v[SEATS:SEATS + _S]))
    cards = round(float(v[HAND_SIZES:HAND_SIZES + n].sum() + v[DEAD_SIZE]) / SIZE_SCALE) + int(
        np.count_nonzero(v[PLAY_ORDER:PLAY_ORDER + _C]))
    if _PACK_OF_SIZE.get(cards, "full") != "full":
        rules = rules.replace(pack=_PACK_OF_SIZE[cards])  # the layout has no pack flag: the card count tells it
    hand = _mask_of_plane(v[HAND:HAND + _C])
    by_seat = v[PLAYED_BY:PLAYED_BY + n * _C].reshape(n, _C)
    order = np.rint(v[PLAY_ORDER:PLAY_ORDER + _C] / ORDER_SCALE).astype(np.int64)
    led = v[LED:LED + _C]
    played = np.flatnonzero(order)
    history = tuple(
        Play(int(np.flatnonzero(by_seat[:, c])[0]), int(c), bool(led[c]))
        for c in played[np.argsort(order[played], kind="stable")]
    )
    to_act = _one_hot_index(v[TO_ACT:TO_ACT + _S])
    forced = _one_hot_index(v[FORCED:FORCED + _C])
    if mask is not None:
        legal = tuple(int(c) for c in np.flatnonzero(np.asarray(mask)))
    elif to_act != 0:
        legal = ()
    elif forced >= 0:
        legal = (forced,)
    else:
        legal = tuple(legal_leads(hand, rules.lead == "any", rules.ace_high))
    return SeatView(
        rules=rules,
        players=n,
        hand=hand,
        history=history,
        turnup=_one_hot_index(v[TURNUP:TURNUP + _C]),
        trumps=_one_hot_index(v[TRUMPS:TRUMPS + 4]),
        board=tuple(int(round(float(x) / BOARD_SCALE)) for x in v[BOARD:BOARD + len(COMPARTMENTS)]),
        balances=tuple(int(round(float(x) / BALANCE_SCALE)) for x in v[BALANCES:BALANCES + n]),
        hand_sizes=tuple(int(round(float(x) / SIZE_SCALE)) for x in v[HAND_SIZES:HAND_SIZES + n]),
        dealer=_one_hot_index(v[DEALER:DEALER + _S]),
        leader=_one_hot_index(v[LEADER:LEADER + _S]),
        to_act=to_act,
        forced=forced,
        known_dead=_mask_of_plane(v[KNOWN_DEAD:KNOWN_DEAD + _C]),
        dead_hand=_mask_of_plane(v[DEAD_HAND:DEAD_HAND + _C]) if v[SEES_DEAD_HAND] else None,
        dead_size=int(round(float(v[DEAD_SIZE]) / SIZE_SCALE)),
        legal=legal,
        winner=_one_hot_index(v[WINNER:WINNER + _S]),
        pope_holder=_one_hot_index(v[POPE_HOLDER:POPE_HOLDER + _S]),
    )


# ---------------------------------------------------------------- incremental
# The encoder keeps one float32 buffer in ABSOLUTE seats ("state") and builds an observation with a
# single gather ``state[index[seat]]``.  The state holds,
# at the same offsets as the observation for the shared fields, every per-seat field for all 8 absolute
# seats, plus a constant 0 and 1 cell that padding rows and per-observer flags point at.  The
# observation's played_by planes are stored by ABSOLUTE seat at PLAYED_BY.
_ST_HANDS = OBS_SIZE                       # 8 × 52: hand of absolute seat s
_ST_BAL = _ST_HANDS + _S * _C              # 8: balances by absolute seat
_ST_SIZES = _ST_BAL + _S                   # 8: hand sizes by absolute seat
_ST_DEALER = _ST_SIZES + _S                # 8: one-hot over absolute seats
_ST_LEADER = _ST_DEALER + _S
_ST_TO_ACT = _ST_LEADER + _S
_ST_WINNER = _ST_TO_ACT + _S
_ST_POPE = _ST_WINNER + _S
_ST_EXCLUDED = _ST_POPE + _S               # 8 × 52: what absolute seat s is inferred not to hold (inference.inferred)
_ST_ZERO = _ST_EXCLUDED + _S * _C          # constant 0.0
_ST_ONE = _ST_ZERO + 1                     # constant 1.0
_ST_SIZE = _ST_ONE + 1

_PACK_PLANE = card_planes([PACK_MASK])[0].astype(np.float32)
_INDEX_CACHE: dict[tuple[int, int, int], np.ndarray] = {}
_STATE_INDEX: dict[int, np.ndarray] = {}


def _index(players: int, seat: int, dead_seer: int) -> np.ndarray:
    """Gather indices: observation position -> state position, for one observer."""
    key = (players, seat, dead_seer)
    idx = _INDEX_CACHE.get(key)
    if idx is not None:
        return idx
    idx = np.arange(OBS_SIZE, dtype=np.intp)
    cards = np.arange(_C)
    idx[HAND:HAND + _C] = _ST_HANDS + seat * _C + cards
    for k in range(_S):
        base = PLAYED_BY + k * _C
        if k < players:
            a = absolute(k, seat, players)
            idx[base:base + _C] = PLAYED_BY + a * _C + cards
            idx[INFERRED + k * _C:INFERRED + (k + 1) * _C] = _ST_EXCLUDED + a * _C + cards
            for part, st in ((BALANCES, _ST_BAL), (HAND_SIZES, _ST_SIZES), (DEALER, _ST_DEALER),
                             (LEADER, _ST_LEADER), (TO_ACT, _ST_TO_ACT), (WINNER, _ST_WINNER),
                             (POPE_HOLDER, _ST_POPE)):
                idx[part + k] = st + a
            idx[SEATS + k] = _ST_ONE
        else:
            idx[base:base + _C] = _ST_ZERO
            idx[INFERRED + k * _C:INFERRED + (k + 1) * _C] = _ST_ZERO
            for part in (BALANCES, HAND_SIZES, DEALER, LEADER, TO_ACT, SEATS, WINNER, POPE_HOLDER):
                idx[part + k] = _ST_ZERO
    sees = seat == dead_seer
    idx[DEAD_HAND:DEAD_HAND + _C] = DEAD_HAND + cards if sees else _ST_ZERO
    idx[SEES_DEAD_HAND] = _ST_ONE if sees else _ST_ZERO
    idx.setflags(write=False)
    _INDEX_CACHE[key] = idx
    return idx


def _state_index(players: int) -> np.ndarray:
    """Gather indices: state-vector position -> encoder state position (absolute seats)."""
    idx = _STATE_INDEX.get(players)
    if idx is not None:
        return idx
    parts = []
    cards = np.arange(_C)
    for name, _, length, _ in STATE_LAYOUT:
        if name in ("hands", "played_by"):
            base = _ST_HANDS if name == "hands" else PLAYED_BY
            part = np.full(length, _ST_ZERO)
            part[:players * _C] = (base + np.arange(players)[:, None] * _C + cards).reshape(-1)
        elif name in ("balances", "hand_sizes", "dealer", "leader", "to_act", "winner", "seats"):
            base = {"balances": _ST_BAL, "hand_sizes": _ST_SIZES, "dealer": _ST_DEALER, "leader": _ST_LEADER,
                    "to_act": _ST_TO_ACT, "winner": _ST_WINNER}.get(name)
            part = np.full(length, _ST_ZERO)
            part[:players] = _ST_ONE if base is None else base + np.arange(players)
        else:  # a field kept at the observation's own offset
            part = _START[name] + np.arange(length)
        parts.append(part)
    idx = np.concatenate(parts).astype(np.intp)
    idx.setflags(write=False)
    _STATE_INDEX[players] = idx
    return idx


class Encoder:
    """Incremental observations of one deal: call ``sync()`` after cards are played, then ``observe(seat)``."""

    __slots__ = ("deal", "state", "_mv", "_index", "_plays", "_awards", "_payments", "_revealed",
                 "_to_act", "_leader", "_forced", "_n", "_prev", "_succ", "_lead_rule", "_ace_high",
                 "_over", "_excused")

    def __init__(self, deal: Deal) -> None:
        seer = deal.dealer if deal.rules.dealer_sees_dead_hand else -1
        self._start(deal, deal.rules, deal.players, deal.dealer, deal.turnup, deal.dead_mask, len(deal.dead),
                    deal.initial_hands, [h.bit_count() for h in deal.initial_hands], seer)

    @classmethod
    def of_view(cls, view: SeatView) -> Encoder:
        """The encoder of a ``SeatView``: the view's observer is seat 0, its relative seats the table's seats."""
        self = cls.__new__(cls)
        n = view.players
        dead = view.dead_hand if view.dead_hand is not None else 0
        hands = [view.hand | view.played_by[0]] + [0] * (n - 1)
        sizes = [view.hand_sizes[k] + view.played_by[k].bit_count() for k in range(n)]
        self._start(_ViewDeal(view), view.rules, n, view.dealer, view.turnup, dead, view.dead_size,
                    hands, sizes, 0 if view.dead_hand is not None else -1)
        return self

    def _start(self, deal: Any, rules: Rules, n: int, dealer: int, turnup: int, dead_mask: CardMask,
               dead_size: int, hands: Sequence[CardMask], sizes: Sequence[int], seer: int) -> None:
        """Fill the state with what a deal starts from, then ``sync`` the plays and counters so far."""
        self.deal = deal
        self._n = n
        state = np.zeros(_ST_SIZE, dtype=np.float32)
        state[_ST_ONE] = 1.0
        planes = card_planes([*hands, 1 << turnup, dead_mask])
        state[_ST_HANDS:_ST_HANDS + n * _C] = planes[:n].reshape(-1)
        state[TURNUP:TURNUP + _C] = planes[n]
        state[DEAD_HAND:DEAD_HAND + _C] = planes[n + 1]
        state[TRUMPS + turnup // 13] = 1.0
        state[_ST_SIZES:_ST_SIZES + n] = np.array(sizes) * SIZE_SCALE
        state[_ST_DEALER + dealer] = 1.0
        state[DEAD_SIZE] = dead_size * SIZE_SCALE
        state[POPE_OUT] = 1.0
        state[RULES:RULES + len(RULE_FLAGS)] = _rule_flags(rules)
        self.state = state
        self._mv = memoryview(state)
        self._index = [_index(n, s, seer) for s in range(n)]
        self._succ = SUCCESSOR[rules.ace_high]
        self._lead_rule = rules.lead != "any"
        self._ace_high = rules.ace_high
        self._excused = rules.pope_excused
        self._plays = 0
        self._prev = -1
        self._awards = -1
        self._payments = -1
        self._revealed = 0
        self._over = False
        self._to_act = self._leader = self._forced = -1
        self.sync()

    def __getstate__(self) -> dict[str, Any]:
        """Every slot but the memoryview (which no pickle or deepcopy takes): an env holding an encoder copies."""
        return {name: getattr(self, name) for name in self.__slots__ if name != "_mv" and hasattr(self, name)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._mv = memoryview(self.state)

    def sync(self) -> None:
        """Bring the state up to date with the deal (cheap: only what changed since the last call)."""
        deal = self.deal
        mv = self._mv
        plays = deal.plays
        k = self._plays
        if len(plays) != k:
            succ, prev = self._succ, self._prev
            for seat, card in plays[k:]:
                k += 1
                mv[_ST_HANDS + seat * _C + card] = 0.0
                mv[PLAYED_BY + seat * _C + card] = 1.0
                mv[PLAY_ORDER + card] = k * ORDER_SCALE
                mv[_ST_SIZES + seat] -= SIZE_SCALE
                if card == POPE:
                    mv[POPE_OUT] = 0.0
                if prev < 0 or succ[prev] != card:  # a lead (see seat_view.history_of)
                    mv[LED + card] = 1.0
                    if self._lead_rule:
                        for c in iter_cards(below_lead(card, self._ace_high)):
                            mv[_ST_EXCLUDED + seat * _C + c] = 1.0
                prev = card
            self._prev = prev
            self._plays = k
        if len(deal.awards) != self._awards or len(deal.payments) != self._payments:
            self._awards = len(deal.awards)
            self._payments = len(deal.payments)
            for i, x in enumerate(deal.board):
                mv[BOARD + i] = x * BOARD_SCALE
            for i, x in enumerate(deal.balances):
                mv[_ST_BAL + i] = x * BALANCE_SCALE
        revealed = deal.revealed_dead
        if revealed != self._revealed:
            for card in iter_cards(revealed & ~self._revealed):
                mv[KNOWN_DEAD + card] = 1.0
            self._revealed = revealed
        to_act = deal.to_act
        if to_act != self._to_act:
            if self._to_act >= 0:
                mv[_ST_TO_ACT + self._to_act] = 0.0
            if to_act >= 0:
                mv[_ST_TO_ACT + to_act] = 1.0
            self._to_act = to_act
        leader = deal.leader
        if leader != self._leader:
            if self._leader >= 0:
                mv[_ST_LEADER + self._leader] = 0.0
            if leader >= 0:
                mv[_ST_LEADER + leader] = 1.0
            self._leader = leader
        forced = deal.forced
        if forced != self._forced:
            if self._forced >= 0:
                mv[FORCED + self._forced] = 0.0
            if forced >= 0:
                mv[FORCED + forced] = 1.0
            self._forced = forced
        mv[LEAD_DUE] = 1.0 if forced < 0 and to_act >= 0 else 0.0
        if not self._over and deal.winner is not None and deal.winner >= 0:
            self._over = True
            self._settle(deal.winner, _pope_holder(deal) if self._excused else -1)

    def _settle(self, winner: int, pope_holder: int) -> None:
        """What going out shows (R11): the winner holds nothing, an excused seat holds the 9♦, no other does."""
        state = self.state
        state[_ST_WINNER + winner] = 1.0
        state[_ST_EXCLUDED + winner * _C:_ST_EXCLUDED + (winner + 1) * _C] = _PACK_PLANE
        if pope_holder >= 0:
            state[_ST_POPE + pope_holder] = 1.0
        if self._excused:
            for seat in range(self._n):
                if seat != pope_holder:
                    state[_ST_EXCLUDED + seat * _C + POPE] = 1.0

    def observe(self, seat: int) -> np.ndarray:
        """The observation of absolute ``seat`` as of the last ``sync()`` (a new float32 array)."""
        return self.state.take(self._index[seat])

    def state_vector(self) -> np.ndarray:
        """The full hidden state (``STATE_LAYOUT``, absolute seats) as of the last ``sync()``."""
        return self.state.take(_state_index(self._n))


def _pope_holder(deal: Deal) -> int:
    """The seat excused at the settlement for holding the 9♦, or -1."""
    holder = deal.owner[POPE]
    return holder if holder >= 0 else -1


class _ViewDeal:
    """What ``Encoder.sync`` reads of a deal, taken from a ``SeatView`` (relative seats, observer = 0)."""

    __slots__ = ("plays", "awards", "payments", "board", "balances", "revealed_dead", "to_act", "leader",
                 "forced", "winner", "owner")

    def __init__(self, view: SeatView) -> None:
        self.plays = [(seat, card) for seat, card, _ in view.history]
        self.awards: tuple[()] = ()
        self.payments: tuple[()] = ()
        self.board = view.board
        self.balances = view.balances
        self.revealed_dead = view.known_dead
        self.to_act = view.to_act
        self.leader = view.leader
        self.forced = view.forced
        self.winner = view.winner if view.winner >= 0 else None
        self.owner = {POPE: view.pope_holder}


__doc__ = __doc__.replace("{LAYOUT_TABLE}", layout_table(LAYOUT)) if __doc__ else None
