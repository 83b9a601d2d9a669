"""The batch engine: N deals of one rules object and table size stepped at once in numpy.

Every deal follows the scalar engine (``engine.Deal``) card for card: the same
deal from the same seed (``deal_seed``), the same legal cards, the same
payouts, settlement, board and balances (``tests/test_batch_engine.py`` plays
over 100,000 deals through both).  The state is a structure of arrays: per deal
a 64-bit hand mask per seat, the owner of every card, the board, the balances
and a card-indexed log of the plays.

Speed comes from resolving a whole sequence (R8) at once: after a lead, the
cards that follow are the run of consecutive successors that some seat holds,
found with bit operations on the union of the hands; the deal ends inside the
run at the first seat whose whole hand lies in it (R11).  So one ``step`` is a
fixed number of array operations whatever the sequences' lengths.  Internally
cards are kept in *positions*: under ``ace_high`` the Ace moves above the King
of its suit, so a successor is always the next position.

Two paths play the same arrays: numpy operations over the deals that need
work, or, with numba installed, compiled loops (``batch_kernels``) one deal at
a time; ``engine="auto"`` picks numba when it is there.  Both deal the same
cards from a seed and reach the same states (tested).

>>> import numpy as np
>>> batch = BatchDeals("modern", players=4, num_deals=3, rng=np.random.default_rng(0))
>>> mask = batch.legal_mask()          # [3, 52] bool, the seat to act in each deal
>>> finished = batch.step(batch.random_actions(np.random.default_rng(1)))
>>> bool(batch.legal_mask().any(axis=1).all())   # finished deals restart in place
True
"""

from __future__ import annotations

import dataclasses
import gc
import importlib.util
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from popejoan_env.cards import (
    ACE, CARD_NAMES, EIGHT_DIAMONDS, JACK, KING, NUM_CARD_IDS, PACK, POPE, QUEEN, card_id,
)
from popejoan_env.checks import as_int, brief
from popejoan_env.engine import DEAD, EMPTY_OWNER, PLAYED, SUCCESSOR, Deal, parse_board
from popejoan_env.errors import GameOverError, IllegalActionError, InvalidDealError
from popejoan_env.rules import (
    ACE_C, COMPARTMENTS, GAME_C, INTRIGUE_C, JACK_C, KING_C, MATRIMONY_C, MODERN, POPE_C, QUEEN_C,
    Rules, check_players, resolve_rules,
)

__all__ = ["BatchDeals", "ENGINES", "Finished", "order_of_deal"]

NUMBA = importlib.util.find_spec("numba") is not None
"""True when numba is installed (``pip install numba``, or the ``fast`` extra): the compiled path can run."""
ENGINES = ("auto", "numpy", "numba")
"""How a batch plays its cards: ``numba`` (compiled, needs numba), ``numpy``, or ``auto`` (numba when installed)."""

_U = np.uint64
_ONE = _U(1)
_SUIT_BITS = _U(0x1FFF)
_PACK_ARRAY = np.array(PACK, dtype=np.int64)
_NO_POS = 99

# Positions: ace low, position = card id; ace high, the Ace sits above the King of its suit.
_POS_OF_CARD = {
    False: np.arange(NUM_CARD_IDS, dtype=np.int64),
    True: np.array([(c // 13) * 13 + (c % 13 + 12) % 13 for c in range(NUM_CARD_IDS)], dtype=np.int64),
}
_CARD_OF_POS = {k: np.argsort(v).astype(np.int64) for k, v in _POS_OF_CARD.items()}


def _table(f: Any, size: int = 1 << 13) -> np.ndarray:
    return np.array([f(x) for x in range(size)], dtype=np.int64)


_POPCOUNT = _table(lambda x: bin(x).count("1"))
_HIGHEST = _table(lambda x: x.bit_length() - 1)
_LOWBIT = _table(lambda x: x & -x).astype(np.uint64)
_LOWEST = _table(lambda x: (x & -x).bit_length() - 1)
_TRAILING_ONES = _table(lambda x: ((~x) & (x + 1)).bit_length() - 1)

# Award order inside one play (the scalar engine's order): the card's compartment, matrimony, intrigue,
# each pair paid to the other player first when split; the game compartment after the last card.
_K_CARD, _K_MAT_OTHER, _K_MAT, _K_INT_OTHER, _K_INT, _K_GAME = range(6)
_CAUSES = ("turnup", "play", "game")
MAX_EVENTS = 16
"""Most awards one deal can make (12): turn-up and game (R5), four trump honours and the Pope, two pairs split, the game."""


def _popcount(x: np.ndarray) -> np.ndarray:
    """Bits set in each uint64 (as int64)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    return sum(_POPCOUNT16[(x >> _U(16 * i)) & _U(0xFFFF)] for i in range(4))


_POPCOUNT16 = np.array([bin(x).count("1") for x in range(1 << 16)], dtype=np.int64)


def _bits_of(flags: np.ndarray) -> np.ndarray:
    """uint64 bitmasks of [k, 52] booleans (bit i set where column i is True)."""
    packed = np.zeros((len(flags), 8), dtype=np.uint8)
    packed[:, :7] = np.packbits(flags, axis=1, bitorder="little")
    return packed.view("<u8")[:, 0].astype(np.uint64)


_TABLES: dict[tuple[Rules, int], dict[str, Any]] = {}
"""``BatchDeals`` look-up tables per (rules, table size)."""


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


class BatchDeals:
    """N deals of one ``Rules`` and table size, each waiting for its seat to act to lead (or over).

    Deals are dealt by ``rng`` (one ``numpy.random.Generator`` shuffling every
    new deal of the batch at once: fast) or by ``deal_seed`` (deal number ``d``
    is the scalar engine's ``Deal.new(rules, players, dealer, rng=default_rng(deal_seed + d))``:
    exact, slower to deal), or by explicit ``orders`` (``order_of_deal``).  Each slot plays
    sessions of ``session_length`` deals back to back, the deal passing left and the board and
    balances carried, fresh balances and an empty board at each new session (as ``simulate``);
    the first dealer is ``first_dealer`` (an int or one per slot).

    ``step(actions)`` plays the chosen lead of the seat to act in every deal
    (or in the deals ``which`` selects), then every forced card and, with
    ``lone_leads``, every lead that has one legal card, until each deal waits
    for a real choice or is over; finished deals are reported and, with
    ``auto_reset``, dealt again in place.  With ``record=True`` the finished
    deals come with their game records.
    """

    def __init__(
        self,
        rules: Rules | str | Mapping[str, Any] = MODERN,
        players: int = 4,
        num_deals: int = 1,
        rng: np.random.Generator | None = None,
        deal_seed: int | None = None,
        orders: np.ndarray | None = None,
        session_length: int = 1,
        first_dealer: int | Sequence[int] = 0,
        lone_leads: bool = True,
        auto_reset: bool = True,
        record: bool = False,
        board: Sequence[int] | Mapping[str, int] | None = None,
        engine: str = "auto",
    ) -> None:
        self.rules = rules = resolve_rules(rules)
        try:
            check_players(players)
        except ValueError:
            raise InvalidDealError(f"a batch needs 3 to 8 players, got {brief(players)}") from None
        n = as_int(num_deals)
        if n is None or n < 1:
            raise InvalidDealError(f"num_deals must be a positive integer, got {brief(num_deals)}")
        if sum(x is not None for x in (rng, deal_seed, orders)) != 1:
            raise InvalidDealError("a batch is dealt by exactly one of rng=, deal_seed= or orders=")
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise InvalidDealError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if deal_seed is not None and (as_int(deal_seed) is None or deal_seed < 0):
            raise InvalidDealError(f"deal_seed must be a non-negative integer, got {brief(deal_seed)}")
        length = as_int(session_length)
        if length is None or length < 1:
            raise InvalidDealError(f"session_length must be a positive integer, got {brief(session_length)}")
        self.players = players
        self.num_deals = n
        self._choose_engine(engine)
        self.lone_leads = bool(lone_leads)
        self.auto_reset = bool(auto_reset)
        self.record = bool(record)
        self.session_length = length
        self._rng = rng
        self._deal_seed = None if deal_seed is None else int(deal_seed)
        self._orders = None if orders is None else self._check_orders(orders)
        self._start_board = np.array(parse_board(board), dtype=np.int64)
        dealers = np.asarray(first_dealer)
        if dealers.dtype == bool or not np.issubdtype(dealers.dtype, np.integer) or dealers.shape not in ((), (n,)) \
                or ((dealers < 0) | (dealers >= players)).any():
            raise InvalidDealError(
                f"first_dealer must be a seat 0..{players - 1} (or one per deal), got {brief(first_dealer)}")
        dealers = np.broadcast_to(dealers.astype(np.int64), (n,)).copy()
        if not rules.allow_credit and rules.start_counters < sum(rules.dressing):
            raise InvalidDealError(
                f"no deal can start: with allow_credit=false a dealer needs {sum(rules.dressing)} counters for "
                f"the dressing and start_counters is {rules.start_counters}")
        self._setup_tables()
        self._allocate(n)
        self._next_dealer = dealers
        self.deals_dealt = 0
        self._reported = np.zeros(n, dtype=bool)
        self._pending: list[Finished] = []
        self._deal(np.arange(n), new_session=np.ones(n, dtype=bool))
        self._advance(np.arange(n))
        self._pending = [self._settle_new()]

    # ----------------------------------------------------------------- set-up
    def _choose_engine(self, engine: str) -> None:
        if engine not in ENGINES:
            raise InvalidDealError(f"engine must be one of {list(ENGINES)}, got {brief(engine)}")
        if engine == "numba" and not NUMBA:
            raise InvalidDealError("engine='numba' needs numba: pip install numba (or use engine='numpy')")
        self._kernel = engine == "numba" or engine == "auto" and NUMBA
        self.engine = "numba" if self._kernel else "numpy"
        """The path that plays the cards: ``numba`` (compiled loops, batch_kernels) or ``numpy`` (array operations)."""
        if self._kernel:
            from popejoan_env import batch_kernels  # imports numba: only where the compiled path runs

            self._k = batch_kernels

    def _setup_tables(self) -> None:
        """The look-up tables of this rules object and table size (built once per pair, shared read-only)."""
        key = (self.rules, self.players)
        tables = _TABLES.get(key)
        if tables is None:
            before = set(vars(self))
            self._build_tables()
            tables = {k: v for k, v in vars(self).items() if k not in before}
            for v in tables.values():
                if isinstance(v, np.ndarray):
                    v.flags.writeable = False
            _TABLES[key] = tables
        vars(self).update(tables)

    def _build_tables(self) -> None:
        rules, players = self.rules, self.players
        self._ace_high = ace_high = rules.ace_high
        self._lead_any = rules.lead == "any"
        self.pos_of_card = _POS_OF_CARD[ace_high]
        self.card_of_pos = _CARD_OF_POS[ace_high]
        self._pos_bit = _ONE << self.pos_of_card.astype(np.uint64)  # card id -> its position's bit
        self._pos_bit[EIGHT_DIAMONDS] = _U(0)
        sizes, dead_size = rules.hand_sizes(players)
        self.dead_size = dead_size
        # seat_table[dealer, j]: the seat receiving the j-th card dealt, -1 for the dead hand.
        table = np.full((players, len(PACK)), -1, dtype=np.int64)
        for dealer in range(players):
            first = (dealer + 1) % players
            if rules.deal == "all_round":
                for j in range(len(PACK)):
                    pile = j % (players + 1)
                    if pile < players:
                        table[dealer, j] = (first + pile) % players
            else:
                q = sizes[0]
                for j in range(q * players):
                    table[dealer, j] = (first + j % players) % players
        self._seat_table = table
        self._dead_columns = np.nonzero(table[0] < 0)[0]  # the dead hand in order dealt; the turn-up last
        # Award positions per trumps suit, in compartment order pope, ace, king, queen, jack.
        self._award_comps = (POPE_C, ACE_C, KING_C, QUEEN_C, JACK_C)
        self._award_pos = np.array(
            [[self.pos_of_card[POPE]] * 4] + [[self.pos_of_card[card_id(t, r)] for t in range(4)]
                                              for r in (ACE, KING, QUEEN, JACK)], dtype=np.int64)
        self._award_mask = np.bitwise_or.reduce(
            _ONE << self._award_pos.astype(np.uint64), axis=0)  # [trumps] -> position bits of its award cards
        self._pair_mask = np.bitwise_or.reduce(
            _ONE << self._award_pos[2:].astype(np.uint64), axis=0)  # [trumps] -> bits of its K, Q, J
        self._comp_of_pos = np.full(4 * 64, -1, dtype=np.int64)  # [trumps * 64 + position] -> compartment
        for comp, pos_by_trumps in zip(self._award_comps, self._award_pos):
            for t in range(4):
                self._comp_of_pos[t * 64 + pos_by_trumps[t]] = comp
        self._pair_index = np.full(8, -1, dtype=np.int64)  # compartment -> column of pair_by
        self._pair_index[[KING_C, QUEEN_C, JACK_C]] = [0, 1, 2]
        self._turnup_comp = np.full(NUM_CARD_IDS * 4, -1, dtype=np.int64)  # [trumps*52 + card]
        for t in range(4):
            for comp, r in ((ACE_C, ACE), (KING_C, KING), (QUEEN_C, QUEEN), (JACK_C, JACK)):
                self._turnup_comp[t * 52 + card_id(t, r)] = comp
            self._turnup_comp[t * 52 + POPE] = POPE_C
        self._dressing = np.array(rules.dressing, dtype=np.int64)
        self._empty_owner = np.array(EMPTY_OWNER, dtype=np.int8)

    def _allocate(self, n: int) -> None:
        p = self.players
        self._hands = np.zeros((n, p), dtype=np.uint64)
        self._held = np.zeros(n, dtype=np.uint64)
        self._played = np.zeros(n, dtype=np.uint64)
        self._dead = np.zeros(n, dtype=np.uint64)
        self._revealed = np.zeros(n, dtype=np.uint64)
        self.owner = np.zeros((n, NUM_CARD_IDS), dtype=np.int8)
        """[n, 52] by card id: seat holding it, or ``DEAD`` (-1), ``PLAYED`` (-2), ``NOT_IN_PACK`` (-3)."""
        self.initial_owner = np.zeros((n, NUM_CARD_IDS), dtype=np.int8)
        """[n, 52] the owner table as dealt."""
        self.dead_cards = np.zeros((n, self.dead_size), dtype=np.int8)
        """[n, dead size] the dead hand by card id, the turn-up last (-1 pads a shorter one, after ``from_deals``)."""
        self.board = np.zeros((n, 8), dtype=np.int64)
        self.balances = np.zeros((n, p), dtype=np.int64)
        self.board_before = np.zeros((n, 8), dtype=np.int64)
        """[n, 8] the board before this deal's dressing."""
        self.balances_before = np.zeros((n, p), dtype=np.int64)
        self.dealer = np.zeros(n, dtype=np.int64)
        self.to_act = np.zeros(n, dtype=np.int64)
        """Seat to lead in each deal, -1 in a deal that is over (only without ``auto_reset``)."""
        self.leader = np.zeros(n, dtype=np.int64)
        self.winner = np.full(n, -1, dtype=np.int64)
        self.done = np.zeros(n, dtype=bool)
        self.turnup = np.zeros(n, dtype=np.int64)
        self.trumps = np.zeros(n, dtype=np.int64)
        self.pair_by = np.full((n, 3), -1, dtype=np.int64)
        """[n, 3] who played the King, Queen and Jack of trumps (-1: not played)."""
        self.play_order = np.zeros((n, NUM_CARD_IDS), dtype=np.int8)
        """[n, 52] by card id: the card's place in the deal's history (1 = first card played), 0 if unplayed."""
        self.led = np.zeros((n, NUM_CARD_IDS), dtype=bool)
        """[n, 52] by card id: True for a card played as a lead (R7)."""
        self.num_plays = np.zeros(n, dtype=np.int64)
        self._owner_flat = self.owner.reshape(-1)
        self._initial_flat = self.initial_owner.reshape(-1)
        self._order_flat = self.play_order.reshape(-1)
        self._led_flat = self.led.reshape(-1)
        self.deal_ids = np.zeros(n, dtype=np.int64)
        self.deal_in_session = np.zeros(n, dtype=np.int64)
        self.session_ids = np.zeros(n, dtype=np.int64)
        self._sessions_started = 0
        self.cards_played = 0
        """Cards played in the batch so far (forced and lone ones included)."""
        self.events = np.zeros((n, MAX_EVENTS, 5), dtype=np.int32)
        """[n, 16, 5] the awards of each deal (with ``record``; sort by the key for their order): order key, cause (0 turnup, 1 play, 2 game),
        seat, compartment, counters; the first ``num_events`` of each row."""
        self.num_events = np.zeros(n, dtype=np.int64)

    def _check_orders(self, orders: np.ndarray) -> np.ndarray:
        arr = np.asarray(orders)
        if arr.ndim != 2 or arr.shape[1] != len(PACK) or not np.issubdtype(arr.dtype, np.integer):
            raise InvalidDealError(f"orders must be an integer array [deals, 51] of card ids, got shape {arr.shape}")
        if (np.sort(arr, axis=1) != _PACK_ARRAY).any():
            raise InvalidDealError("every row of orders must be the 51 cards of the pack, each once")
        return arr.astype(np.int64)

    @property
    def hand_sizes(self) -> np.ndarray:
        """[n, players] cards left in each seat's hand."""
        return _popcount(self._hands)

    @property
    def memory_bytes(self) -> int:
        """Bytes of state arrays held per deal."""
        arrays = [v for v in vars(self).values() if isinstance(v, np.ndarray) and v.shape[:1] == (self.num_deals,)]
        return sum(a.nbytes for a in arrays) // self.num_deals

    # ----------------------------------------------------------------- dealing
    def _draw_orders(self, k: int) -> np.ndarray:
        first = self.deals_dealt
        if self._rng is not None:
            # One shuffle for both paths (so a seed deals the same cards with or without numba): Fisher–Yates
            # from a block of uniforms.
            orders = np.broadcast_to(_PACK_ARRAY, (k, len(PACK))).copy()
            uniforms = self._rng.random((k, len(PACK)))
            if self._kernel:
                self._k.shuffle(orders, uniforms)
            else:
                rows = np.arange(k)
                for j in range(len(PACK) - 1, 0, -1):
                    r = (uniforms[:, j] * (j + 1)).astype(np.int64)
                    x = orders[:, j].copy()
                    orders[:, j] = orders[rows, r]
                    orders[rows, r] = x
            return orders
        if self._deal_seed is not None:
            return _PACK_ARRAY[np.stack([np.random.default_rng(self._deal_seed + d).permutation(len(PACK))
                                         for d in range(first, first + k)])]
        assert self._orders is not None
        if first + k > len(self._orders):
            raise GameOverError(f"the batch has dealt all {len(self._orders)} explicit deals")
        return self._orders[first:first + k]

    def _deal(self, slots: np.ndarray, new_session: np.ndarray) -> None:
        """Deal the next deal into each slot (R1-R6), starting a session where ``new_session``."""
        k = len(slots)
        if not k:
            return
        rules, players = self.rules, self.players
        orders = self._draw_orders(k)
        ids = np.arange(self.deals_dealt, self.deals_dealt + k)
        self.deals_dealt += k
        self.deal_ids[slots] = ids
        fresh = slots[new_session]
        if len(fresh):
            self.board[fresh] = self._start_board
            self.balances[fresh] = rules.start_counters
            self.deal_in_session[fresh] = 0
            self.session_ids[fresh] = np.arange(self._sessions_started, self._sessions_started + len(fresh))
            self._sessions_started += len(fresh)
        self.deal_in_session[slots] += 1
        dealer = self._next_dealer[slots]
        self.dealer[slots] = dealer
        self._next_dealer[slots] = (dealer + 1) % players
        if self._kernel:
            self._k.deal(
                slots, orders, dealer, self._seat_table, self._dead_columns, self._pos_bit, self._empty_owner,
                self._turnup_comp, self._dressing, rules.pope_turnup == "ends_deal", self.record, self._hands,
                self._held, self._played, self._dead, self._revealed, self.owner, self.initial_owner,
                self.play_order, self.led, self.num_plays, self.dead_cards, self.board, self.balances,
                self.board_before, self.balances_before, self.pair_by, self.to_act, self.leader, self.winner,
                self.done, self.turnup, self.trumps, self.events, self.num_events)
            return
        seats = self._seat_table[dealer]                      # [k, 51]
        owner = np.broadcast_to(self._empty_owner, (k, NUM_CARD_IDS)).copy()
        rows = np.arange(k)[:, None]
        owner[rows, orders] = seats
        self.owner[slots] = owner
        self.initial_owner[slots] = owner
        by_pos = owner[:, self.card_of_pos] if self._ace_high else owner
        hands = np.stack([_bits_of(by_pos == p) for p in range(players)], axis=1)
        self._hands[slots] = hands
        self._held[slots] = np.bitwise_or.reduce(hands, axis=1)
        dead_cards = orders[:, self._dead_columns]
        self.dead_cards[slots] = dead_cards
        self._dead[slots] = _bits_of(by_pos == DEAD)
        turnup = dead_cards[:, -1]
        trumps = turnup // 13
        self.turnup[slots] = turnup
        self.trumps[slots] = trumps
        self._revealed[slots] = self._pos_bit[turnup]
        self._played[slots] = 0
        self.pair_by[slots] = -1
        self.num_plays[slots] = 0
        self.play_order[slots] = 0
        self.led[slots] = False
        self.winner[slots] = -1
        self.done[slots] = False
        self.board_before[slots] = self.board[slots]
        self.balances_before[slots] = self.balances[slots]
        self.num_events[slots] = 0
        # R1 dressing
        self.board[slots] += self._dressing
        self.balances[slots, dealer] -= int(self._dressing.sum())
        # R5 turn-up payout
        comp = self._turnup_comp[trumps * 52 + turnup]
        paid = comp >= 0
        if paid.any():
            ps, pc, pd = slots[paid], comp[paid], dealer[paid]
            self._take(ps, pd, pc, self.board[ps, pc], -2, _K_CARD, "turnup")
            if rules.pope_turnup == "ends_deal":
                ends = turnup[paid] == POPE
                if ends.any():
                    es, ed = ps[ends], pd[ends]
                    self._take(es, ed, np.full(len(es), GAME_C), self.board[es, GAME_C], -2, _K_MAT_OTHER,
                               "turnup")
                    self._settle(es, ed)
        live = slots[~self.done[slots]]
        self.to_act[live] = self.leader[live] = (self.dealer[live] + 1) % players  # R6
        ended = slots[self.done[slots]]
        self.to_act[ended] = self.leader[ended] = -1

    # ----------------------------------------------------------------- queries
    def _legal_bits(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Legal leads of the seat to act (position bits) and how many, for the deals ``rows``."""
        h = self._hands[rows, self.to_act[rows]]
        if self._lead_any:
            count = sum(_POPCOUNT[(h >> _U(13 * s)) & _SUIT_BITS] for s in range(4))
            return h, count
        legal = np.zeros(len(rows), dtype=np.uint64)
        count = np.zeros(len(rows), dtype=np.int64)
        for s in range(4):
            x = (h >> _U(13 * s)) & _SUIT_BITS
            legal |= _LOWBIT[x] << _U(13 * s)
            count += x != 0
        return legal, count

    def _all_legal(self) -> tuple[np.ndarray, np.ndarray]:
        """Legal leads (position bits) of every deal's seat to act and how many (0 in a finished deal)."""
        if self._kernel:
            bits = np.empty(self.num_deals, dtype=np.uint64)
            count = np.empty(self.num_deals, dtype=np.int64)
            self._k.legal_bits(self._hands, self.to_act, self.done, self._lead_any, bits, count)
            return bits, count
        bits, count = self._legal_bits(np.arange(self.num_deals))
        bits[self.done] = 0
        count[self.done] = 0
        return bits, count

    def legal_mask(self) -> np.ndarray:
        """[n, 52] bool by card id: the cards the seat to act may lead (all False in a finished deal)."""
        return self._cards_of_bits(self._all_legal()[0])

    def _cards_of_bits(self, bits: np.ndarray) -> np.ndarray:
        """[k, 52] bool by card id of position bitmasks."""
        if self._kernel:
            out = np.empty((len(bits), NUM_CARD_IDS), dtype=bool)
            self._k.cards_of_bits(bits, self.pos_of_card, out)
            return out
        planes = np.unpackbits(bits.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        planes = planes[:, :NUM_CARD_IDS].view(bool)
        return planes[:, self.pos_of_card] if self._ace_high else planes

    def hands_of(self, seats: np.ndarray | None = None) -> np.ndarray:
        """[n, 52] bool by card id: the hand of ``seats[i]`` in deal i (default the seat to act)."""
        rows = np.arange(self.num_deals)
        seats = self.to_act if seats is None else np.asarray(seats)
        return self._cards_of_bits(np.where(seats >= 0, self._hands[rows, np.maximum(seats, 0)], _U(0)))

    def dead_of(self, slot: int) -> list[int]:
        """Card ids of the dead hand of the deal in ``slot``, the turn-up last."""
        return [c for c in self.dead_cards[slot].tolist() if c >= 0]

    def plays_of(self, slot: int) -> list[int]:
        """Card ids of the deal in ``slot`` in the order played."""
        order = self.play_order[slot]
        played = np.nonzero(order)[0]
        return played[np.argsort(order[played])].tolist()

    @property
    def play_cards(self) -> np.ndarray:
        """[n, 51] card ids in the order played (the first ``num_plays`` of each row; derived from ``play_order``)."""
        key = np.where(self.play_order > 0, self.play_order, 127)
        return np.argsort(key, axis=1, kind="stable")[:, :len(PACK)].astype(np.int8)

    @property
    def play_seats(self) -> np.ndarray:
        """[n, 51] the seat of each play in ``play_cards`` (a card is played by the seat dealt it)."""
        return np.take_along_axis(self.initial_owner, self.play_cards.astype(np.int64), axis=1)

    @property
    def play_leads(self) -> np.ndarray:
        """[n, 51] True where the play in ``play_cards`` was a lead (R7), False where it was due (R8)."""
        return np.take_along_axis(self.led, self.play_cards.astype(np.int64), axis=1)

    @property
    def revealed_dead(self) -> np.ndarray:
        """[n, 52] bool: dead cards everyone has seen (the turn-up, and successors at which a sequence stopped)."""
        return self._cards_of_bits(self._revealed)

    def random_actions(self, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random legal lead per deal (-1 in a finished deal), drawn with ``rng``."""
        legal, count = self._all_legal()
        uniforms = rng.random(self.num_deals)
        if self._kernel:
            out = np.empty(self.num_deals, dtype=np.int64)
            self._k.pick(legal, count, uniforms, self.card_of_pos, out)
            return out
        pick = (uniforms * count).astype(np.int64)
        for _ in range(int(pick.max(initial=0))):
            drop = pick > 0
            legal = np.where(drop, legal & (legal - _ONE), legal)
            pick -= drop
        out = self._lowest_card(legal)
        out[self.done | (count == 0)] = -1
        return out

    def _lowest_card(self, bits: np.ndarray) -> np.ndarray:
        """Card id of the lowest position bit of each mask (a mask with one bit: its card)."""
        pos = np.full(len(bits), _NO_POS, dtype=np.int64)
        for s in (3, 2, 1, 0):
            x = (bits >> _U(13 * s)) & _SUIT_BITS
            pos = np.where(x != 0, 13 * s + _LOWEST[x], pos)
        return self.card_of_pos[np.minimum(pos, NUM_CARD_IDS - 1)]

    # ----------------------------------------------------------------- playing
    def step(self, actions: Sequence[int] | np.ndarray, which: np.ndarray | None = None) -> Finished:
        """Play ``actions[i]`` (a card id) as the lead of deal i's seat to act — for every deal, or for the
        deals ``which`` selects (a bool mask or indices; ``actions`` then gives one card per selected deal
        or one per deal) — and play on to the next real choices.  An illegal card raises and changes nothing.
        Returns the deals that finished (dealt again in place with ``auto_reset``)."""
        rows = self._rows(which)
        acts = np.asarray(actions)
        if acts.ndim != 1 or (len(acts) and not np.issubdtype(acts.dtype, np.integer)):
            raise IllegalActionError(f"actions must be a 1-d array of card ids, got {brief(actions)}")
        if len(acts) == self.num_deals and len(rows) != self.num_deals:
            acts = acts[rows]
        if len(acts) != len(rows):
            raise IllegalActionError(f"actions give {len(acts)} cards for {len(rows)} deals")
        acts = acts.astype(np.int64)
        if self.done[rows].any():
            bad = int(rows[self.done[rows]][0])
            raise GameOverError(f"deal {bad} of the batch is over; no card can be played")
        legal = self._all_legal()[0][rows] if self._kernel else self._legal_bits(rows)[0]
        ok = (acts >= 0) & (acts < NUM_CARD_IDS)
        bits = np.where(ok, self._pos_bit[np.clip(acts, 0, NUM_CARD_IDS - 1)], _U(0))
        bad = (legal & bits) == 0
        if bad.any():
            i = int(np.argmax(bad))
            r = int(rows[i])
            names = [CARD_NAMES[c] for c in np.nonzero(self._cards_of_bits(legal[i:i + 1])[0])[0]]
            card = CARD_NAMES[acts[i]] if ok[i] and acts[i] != EIGHT_DIAMONDS else f"card id {acts[i]}"
            raise IllegalActionError(f"deal {r} of the batch: seat {self.to_act[r]} cannot lead {card}; legal: {names}")
        self._lead(rows, self.pos_of_card[acts])
        if not self._kernel:  # the compiled loop plays lone leads itself
            self._advance(rows)
        return self._settle_new()

    def _rows(self, which: np.ndarray | None) -> np.ndarray:
        if which is None:
            return np.arange(self.num_deals)
        w = np.asarray(which)
        if w.dtype == bool:
            if w.shape != (self.num_deals,):
                raise IllegalActionError(f"which must be {self.num_deals} booleans, got shape {w.shape}")
            return np.nonzero(w)[0]
        if w.ndim != 1 or (len(w) and not np.issubdtype(w.dtype, np.integer)):
            raise IllegalActionError(f"which must be a bool mask or deal indices, got {brief(which)}")
        if len(w) and (w.min() < 0 or w.max() >= self.num_deals or len(np.unique(w)) != len(w)):
            raise IllegalActionError(f"which must name distinct deals 0..{self.num_deals - 1}")
        return w.astype(np.int64)

    def advance(self) -> Finished:
        """Play forced cards and (with ``lone_leads``) lone leads in every deal; report those that ended."""
        self._advance(np.nonzero(~self.done)[0])
        return self._settle_new()

    def _advance(self, rows: np.ndarray) -> None:
        """Forced cards are played inside ``_lead``; here the lone leads, until each deal has a choice."""
        if not self.lone_leads:
            return
        rows = rows[~self.done[rows]]
        while len(rows):
            legal, count = self._legal_bits(rows)
            single = count == 1
            if not single.any():
                return
            rows, legal = rows[single], legal[single]
            self._lead(rows, self.pos_of_card[self._lowest_card(legal)])
            rows = rows[~self.done[rows]]

    def _lead(self, rows: np.ndarray, c: np.ndarray, lead: bool = True) -> None:
        """Seat ``to_act`` leads position ``c`` in each deal of ``rows``; the sequence (R8) is played to its stop
        (R9) or to the end of the deal (R11).  With ``lead=False`` the first card was due, not led."""
        k = len(rows)
        if not k:
            return
        if self._kernel:
            self.cards_played += self._k.play_leads(
                rows.astype(np.int64), c.astype(np.int64), lead, self.lone_leads, self._lead_any,
                self.rules.pope_excused, self.rules.pair_split == "halves", self.record, self._hands, self._held,
                self._played, self._dead, self._revealed, self.owner, self.play_order, self.led, self.num_plays,
                self.board, self.balances, self.pair_by, self.to_act, self.leader, self.winner, self.done,
                self.trumps, self.card_of_pos, self._comp_of_pos, self.events, self.num_events)
            return
        cu = c.astype(np.uint64)
        s13 = c - c % 13
        held = self._held[rows]
        span = (s13 + 12 - c).astype(np.uint64)
        run = _TRAILING_ONES[(held >> (cu + _ONE)) & ((_ONE << span) - _ONE)]
        hands = self._hands[rows]                                         # [k, p]
        chain = ((_ONE << (run + 1).astype(np.uint64)) - _ONE) << cu
        end = c + run
        # R11: a seat whose whole hand lies in the run goes out at its highest card there (the first such ends it).
        inside = (hands & ~chain[:, None]) == 0
        maybe = np.nonzero(inside.any(axis=1))[0]
        out = np.zeros(k, dtype=bool)
        if len(maybe):
            sub = s13[maybe]
            top = sub[:, None] + _HIGHEST[(hands[maybe] >> sub.astype(np.uint64)[:, None]) & _SUIT_BITS]
            end[maybe] = np.where(inside[maybe], top, _NO_POS).min(axis=1)
            out[maybe] = True
        length = end - c + 1
        seg = ((_ONE << length.astype(np.uint64)) - _ONE) << cu
        # The plays: each card of the segment gets its place in the history and leaves its holder.
        start = self.num_plays[rows]
        if self._ace_high or length.max() > 1:
            rep = np.repeat(np.arange(k), length)
            j = np.arange(len(rep)) - np.repeat(np.cumsum(length) - length, length)
            pos = c[rep] + j
            flat = rows[rep] * NUM_CARD_IDS + (self.card_of_pos[pos] if self._ace_high else pos)
            order = (start[rep] + j + 1).astype(np.int8)
        else:
            flat = rows * NUM_CARD_IDS + c
            order = (start + 1).astype(np.int8)
        self._owner_flat[flat] = PLAYED
        self._order_flat[flat] = order
        first_card = rows * NUM_CARD_IDS + (self.card_of_pos[c] if self._ace_high else c)
        if lead:
            self._led_flat[first_card] = True
        self.num_plays[rows] = start + length
        self.cards_played += int(length.sum())
        self._hands[rows] = hands & ~seg[:, None]
        self._held[rows] = held & ~seg
        self._played[rows] |= seg
        # R10: the compartments of the trump honours and the Pope, and the pairs, in the segments that hold one.
        trumps = self.trumps[rows]
        hit = np.nonzero(seg & self._award_mask[trumps])[0]
        if len(hit):
            self._awards(rows[hit], trumps[hit], seg[hit], c[hit], start[hit])
        last_card = rows * NUM_CARD_IDS + (self.card_of_pos[end] if self._ace_high else end)
        last_seat = self._initial_flat[last_card].astype(np.int64)
        # R11: going out.
        if out.any():
            orows, w = rows[out], last_seat[out]
            self._take(orows, w, np.full(len(orows), GAME_C), self.board[orows, GAME_C],
                       start[out] + length[out] - 1, _K_GAME, "game")
            self._settle(orows, w)
            stay = ~out
            rows, end, s13, last_seat = rows[stay], end[stay], s13[stay], last_seat[stay]
        # R9: the stop; a successor in the dead hand is shown to everyone, and the player of the last card leads.
        nxt = np.minimum(end + 1, 63).astype(np.uint64)
        nbit = np.where(end < s13 + 12, _ONE << nxt, _U(0))
        self._revealed[rows] |= nbit & self._dead[rows]
        self.to_act[rows] = last_seat
        self.leader[rows] = last_seat

    def _awards(self, rows: np.ndarray, trumps: np.ndarray, seg: np.ndarray, c: np.ndarray, start: np.ndarray) -> None:
        """R10 for segments holding a trump honour or the Pope: each compartment to the card's player."""
        bits = seg & self._award_mask[trumps]
        pairs = (seg & self._pair_mask[trumps]) != 0
        r, t, sub_c, sub_start = rows, trumps, c, start
        while len(r):
            low = bits & (~bits + _ONE)
            p = np.frexp(low.astype(np.float64))[1].astype(np.int64) - 1
            comp = self._comp_of_pos[t * 64 + p]
            who = self._initial_flat[r * NUM_CARD_IDS + self.card_of_pos[p]].astype(np.int64)
            self._take(r, who, comp, self.board[r, comp], sub_start + p - sub_c, _K_CARD, "play")
            rank = self._pair_index[comp]
            honour = rank >= 0
            self.pair_by[r[honour], rank[honour]] = who[honour]
            bits ^= low
            more = bits != 0
            r, t, sub_c, sub_start, bits = r[more], t[more], sub_c[more], sub_start[more], bits[more]
        if pairs.any():
            self._pairs(rows[pairs], trumps[pairs], seg[pairs], c[pairs], start[pairs])

    def _pairs(self, rows: np.ndarray, trumps: np.ndarray, seg: np.ndarray, c: np.ndarray, start: np.ndarray) -> None:
        """Matrimony (K+Q) and intrigue (Q+J) when the second card of a pair was played in this segment."""
        halves = self.rules.pair_split == "halves"
        for comp, (hi, lo), (k_other, k_seat) in (
            (MATRIMONY_C, (KING, QUEEN), (_K_MAT_OTHER, _K_MAT)),
            (INTRIGUE_C, (QUEEN, JACK), (_K_INT_OTHER, _K_INT)),
        ):
            hi_pos = self.pos_of_card[trumps * 13 + hi]
            lo_pos = self.pos_of_card[trumps * 13 + lo]
            hi_hit = ((seg >> hi_pos.astype(np.uint64)) & _ONE) != 0
            lo_hit = ((seg >> lo_pos.astype(np.uint64)) & _ONE) != 0
            hi_by = self.pair_by[rows, (KING, QUEEN, JACK).index(hi)]
            lo_by = self.pair_by[rows, (KING, QUEEN, JACK).index(lo)]
            due = (hi_hit | lo_hit) & (hi_by >= 0) & (lo_by >= 0)
            if not due.any():
                continue
            # The later of the two cards is the one this segment played last: the higher, if both are here.
            later_hi = hi_hit  # if both are here, the higher (K of K+Q, Q of Q+J) came later
            seat = np.where(later_hi, hi_by, lo_by)
            other = np.where(later_hi, lo_by, hi_by)
            at = start + np.where(later_hi, hi_pos, lo_pos) - c
            same = due & (seat == other)
            if same.any():
                r = rows[same]
                self._take(r, seat[same], np.full(len(r), comp), self.board[r, comp], at[same], k_seat, "play")
            if halves:
                split = due & (seat != other)
                if split.any():
                    r = rows[split]
                    half = self.board[r, comp] // 2
                    comps = np.full(len(r), comp)
                    self._take(r, other[split], comps, half, at[split], k_other, "play")
                    self._take(r, seat[split], comps, half, at[split], k_seat, "play")

    def _take(self, rows: np.ndarray, seats: np.ndarray, comps: np.ndarray, amounts: np.ndarray,
              at: np.ndarray | int, key: int, cause: str) -> None:
        """Move ``amounts`` from compartments to seats (rows are distinct deals)."""
        self.board[rows, comps] -= amounts
        self.balances[rows, seats] += amounts
        if self.record:
            e = self.num_events[rows]
            self.events[rows, e] = np.stack(np.broadcast_arrays(
                np.asarray(at) * 8 + key, _CAUSES.index(cause), seats, comps, amounts), axis=1)
            self.num_events[rows] = e + 1

    def _settle(self, rows: np.ndarray, winners: np.ndarray) -> None:
        """R11 (or R5 ``ends_deal``): every other seat pays the winner a counter per card held, the holder of
        the 9♦ excused under ``pope_excused`` when a seat went out; the deals are over."""
        sizes = _popcount(self._hands[rows])
        k = len(rows)
        ar = np.arange(k)
        went_out = self.num_plays[rows] > 0
        if self.rules.pope_excused:
            holder = self.owner[rows, POPE].astype(np.int64)
            excused = went_out & (holder >= 0)
            sizes[ar[excused], holder[excused]] = 0
        sizes[ar, winners] = 0
        self.balances[rows] -= sizes
        self.balances[rows, winners] += sizes.sum(axis=1)
        self.done[rows] = True
        self.winner[rows] = np.where(went_out, winners, -1)
        self.to_act[rows] = -1

    def _settle_new(self) -> Finished:
        """Report the finished deals and (with ``auto_reset``) deal their slots again, until none is over."""
        parts, self._pending = self._pending, []
        while True:
            ended = np.nonzero(self.done & ~self._reported)[0]
            if not len(ended):
                break
            parts.append(self._report(ended))
            if not self.auto_reset:
                self._reported[ended] = True
                break
            if self._orders is not None and self.deals_dealt + len(ended) > len(self._orders):
                # Out of explicit deals: the slots beyond the last one stay over (a step on them is refused).
                left = len(self._orders) - self.deals_dealt
                self._reported[ended[left:]] = True
                ended = ended[:left]
                if not len(ended):
                    break
            new_session = self.deal_in_session[ended] >= self.session_length
            if not self.rules.allow_credit:
                nxt = self._next_dealer[ended]
                new_session |= self.balances[ended, nxt] < int(self._dressing.sum())
            self._deal(ended, new_session)
            self._advance(ended)
        return Finished.concat(parts, self.players, self.record)

    def _report(self, rows: np.ndarray) -> Finished:
        records = self._records(rows) if self.record else None
        return Finished(
            slots=rows.copy(), deal_ids=self.deal_ids[rows].copy(), sessions=self.session_ids[rows].copy(),
            delta=self.balances[rows] - self.balances_before[rows], winner=self.winner[rows].copy(),
            plays=self.num_plays[rows].copy(), balances=self.balances[rows].copy(), board=self.board[rows].copy(),
            records=records,
        )

    # ----------------------------------------------------------------- records
    def deal_record(self, slot: int) -> dict[str, Any]:
        """The ``popejoan-record/1`` object of the finished deal in ``slot`` (needs ``record=True``)."""
        if not self.record:
            raise GameOverError("records need a batch made with record=True")
        if not 0 <= slot < self.num_deals or not self.done[slot]:
            raise GameOverError(f"deal {brief(slot)} of the batch is not a finished deal")
        return self._records(np.array([slot]))[0]

    def _records(self, rows: np.ndarray) -> list[dict[str, Any]]:
        """The records of the finished deals in ``rows``: every array read once for all of them, then plain Python
        (with the cyclic garbage collector paused: thousands of live records made it 3× slower; they hold no cycles)."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._build_records(rows)
        finally:
            if enabled:
                gc.enable()

    def _build_records(self, rows: np.ndarray) -> list[dict[str, Any]]:
        players = self.players
        rules = self.rules.to_dict()
        names = CARD_NAMES
        holder = self.owner[rows, POPE].tolist() if self.rules.pope_excused else [-1] * len(rows)
        used = int(self.num_events[rows].max(initial=0))
        out = []
        for (initial, order, dealer, before_board, before, dead, turnup, winner, balances, board, events, count,
             sizes, pope) in zip(
                self.initial_owner[rows].tolist(), self.play_order[rows].tolist(), self.dealer[rows].tolist(),
                self.board_before[rows].tolist(), self.balances_before[rows].tolist(), self.dead_cards[rows].tolist(),
                self.turnup[rows].tolist(), self.winner[rows].tolist(), self.balances[rows].tolist(),
                self.board[rows].tolist(), self.events[rows, :used].tolist(), self.num_events[rows].tolist(),
                _popcount(self._hands[rows]).tolist(), holder):
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
                "rules": {**rules, "dressing": dict(rules["dressing"])},
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

    def to_deal(self, slot: int) -> Deal:
        """The deal in ``slot`` as a scalar ``Deal`` in the same state (dealt from its cards and board, its plays
        replayed): for players and checks that need the scalar engine's objects (``SeatView`` included)."""
        if not 0 <= slot < self.num_deals:
            raise InvalidDealError(f"slot must be 0..{self.num_deals - 1}, got {brief(slot)}")
        initial = self.initial_owner[slot]
        if ((self.owner[slot] == PLAYED) & (initial < 0)).any():
            raise InvalidDealError(
                f"slot {slot} was loaded from a position without its history (Deal.from_position: who played which "
                "card is not known), so to_deal cannot rebuild it")
        hands = [np.nonzero(initial == s)[0].tolist() for s in range(self.players)]
        deal = Deal.from_cards(hands, self.dead_of(slot), int(self.dealer[slot]), self.rules,
                               self.board_before[slot].tolist(), self.balances_before[slot].tolist())
        for card in self.plays_of(slot):
            deal.play(card)
        return deal

    # ----------------------------------------------------------------- from scalar deals
    @classmethod
    def from_deals(cls, deals: Sequence[Deal], lone_leads: bool = True, engine: str = "auto") -> BatchDeals:
        """A batch holding copies of scalar deals (of one rules object and table size), as they stand; it does not
        deal again when they end (``auto_reset`` off).  Forced cards due are played at once, as ``Deal.advance``."""
        if not deals:
            raise InvalidDealError("from_deals needs at least one deal")
        first = deals[0]
        rules, players = first.rules, first.players
        if any(d.rules != rules or d.players != players for d in deals):
            raise InvalidDealError("every deal of a batch has the same rules and table size")
        self = cls.__new__(cls)
        self.rules, self.players, self.num_deals = rules, players, len(deals)
        self._choose_engine(engine)
        self.lone_leads, self.auto_reset, self.record = bool(lone_leads), False, False
        self.session_length = 1
        self._rng = self._deal_seed = self._orders = None
        self._start_board = np.zeros(8, dtype=np.int64)
        self._setup_tables()
        n = len(deals)
        if any(len(d.dead) != self.dead_size for d in deals):
            self.dead_size = max(len(d.dead) for d in deals)
        self._allocate(n)
        self._next_dealer = np.zeros(n, dtype=np.int64)
        self.deals_dealt = n
        self._reported = np.zeros(n, dtype=bool)
        self._pending = []
        pos_bit = self._pos_bit.tolist()

        def to_pos(mask: int) -> int:
            out = 0
            while mask:
                low = mask & -mask
                out |= pos_bit[low.bit_length() - 1]
                mask ^= low
            return out

        identity = not self._ace_high
        self._hands[:] = np.array([[h if identity else to_pos(h) for h in d.hands] for d in deals], dtype=np.uint64)
        self._held[:] = np.bitwise_or.reduce(self._hands, axis=1)
        self._played[:] = np.array([d.played_mask if identity else to_pos(d.played_mask) for d in deals],
                                   dtype=np.uint64)
        self._dead[:] = np.array([d.dead_mask if identity else to_pos(d.dead_mask) for d in deals], dtype=np.uint64)
        self._revealed[:] = np.array([d.revealed_dead if identity else to_pos(d.revealed_dead) for d in deals],
                                     dtype=np.uint64)
        self.owner[:] = np.array([d.owner for d in deals], dtype=np.int8)
        init = np.array([EMPTY_OWNER] * n, dtype=np.int8)
        for i, d in enumerate(deals):
            for s, h in enumerate(d.initial_hands):
                m = h
                while m:
                    low = m & -m
                    init[i, low.bit_length() - 1] = s
                    m ^= low
        self.initial_owner[:] = init
        self.dead_cards[:] = -1  # dead hands of different sizes: -1 pads the shorter ones
        for i, d in enumerate(deals):
            self.dead_cards[i, :len(d.dead)] = d.dead
        self.board[:] = [d.board for d in deals]
        self.balances[:] = [d.balances for d in deals]
        self.board_before[:] = [d.board_before for d in deals]
        self.balances_before[:] = [d.balances_before for d in deals]
        self.dealer[:] = [d.dealer for d in deals]
        self.to_act[:] = [d.to_act for d in deals]
        self.leader[:] = [d.leader for d in deals]
        self.winner[:] = [-1 if d.winner is None else d.winner for d in deals]
        self.done[:] = [d.done for d in deals]
        self.turnup[:] = [d.turnup for d in deals]
        self.trumps[:] = [d.trumps for d in deals]
        self.pair_by[:] = [[d._pair_by[KING], d._pair_by[QUEEN], d._pair_by[JACK]] for d in deals]
        succ = SUCCESSOR[rules.ace_high]
        for i, d in enumerate(deals):
            prev = -1
            for j, (_, card) in enumerate(d.plays):
                self.play_order[i, card] = j + 1
                self.led[i, card] = prev < 0 or succ[prev] != card  # a card that is not due was led
                prev = card
        self.num_plays[:] = [len(d.plays) for d in deals]
        # A card due (R8) is played now, as the sequence it belongs to.
        due = np.array([d.forced for d in deals], dtype=np.int64)
        forced = np.nonzero(due >= 0)[0]
        if len(forced):
            self._continue(forced, self.pos_of_card[due[forced]])
        self._advance(np.nonzero(~self.done)[0])
        self._reported[:] = np.array([d.done for d in deals])
        return self

    def take(self, slots: Sequence[int] | np.ndarray) -> BatchDeals:
        """A new batch holding copies of the deals in ``slots`` (repeats allowed), as they stand; it does not deal
        again when they end (``auto_reset`` off) and does not record."""
        idx = np.asarray(slots)
        if idx.ndim != 1 or not len(idx) or not np.issubdtype(idx.dtype, np.integer) \
                or idx.min() < 0 or idx.max() >= self.num_deals:
            raise InvalidDealError(f"take needs a non-empty list of slots 0..{self.num_deals - 1}, got {brief(slots)}")
        new = object.__new__(BatchDeals)
        new.__dict__.update(self.__dict__)
        for name, value in self.__dict__.items():
            if isinstance(value, np.ndarray) and value.shape[:1] == (self.num_deals,) and name != "_next_dealer":
                setattr(new, name, value[idx].copy())
        new.num_deals = len(idx)
        new._next_dealer = self._next_dealer[idx].copy()
        new.auto_reset, new.record = False, False
        new._rng = new._deal_seed = new._orders = None
        new._pending = []
        new.cards_played = 0
        new._owner_flat = new.owner.reshape(-1)
        new._initial_flat = new.initial_owner.reshape(-1)
        new._order_flat = new.play_order.reshape(-1)
        new._led_flat = new.led.reshape(-1)
        return new

    def _continue(self, rows: np.ndarray, pos: np.ndarray) -> None:
        """Play on a sequence whose next card (position ``pos``) is due: as a lead of that card by its holder,
        logged as due rather than led."""
        self.to_act[rows] = self.owner[rows, self.card_of_pos[pos]]
        self._lead(rows, pos, lead=False)


def order_of_deal(deal: Deal) -> np.ndarray:
    """The order of the 51 cards that, dealt by ``BatchDeals`` (``orders=``) with this deal's dealer, gives its
    hands and dead hand (a scalar deal from ``Deal.new`` or ``from_cards`` with the rules' hand sizes)."""
    rules, players = deal.rules, deal.players
    sizes, dead_size = rules.hand_sizes(players)
    hands = [[c for c in range(NUM_CARD_IDS) if (h >> c) & 1] for h in deal.initial_hands]
    first = (deal.dealer + 1) % players
    if sorted(len(hands[(first + k) % players]) for k in range(players)) != sorted(sizes) or \
            len(deal.dead) != dead_size:
        raise InvalidDealError("the deal's hand sizes are not those its rules deal")
    order = np.full(len(PACK), -1, dtype=np.int64)
    if rules.deal == "all_round":
        piles = [hands[(first + k) % players] for k in range(players)] + [list(deal.dead)]
        for k, pile in enumerate(piles):
            if len(pile) != len(range(k, len(PACK), players + 1)):
                raise InvalidDealError("the deal's hand sizes are not those its rules deal")
            order[k::players + 1] = pile
    else:
        q = sizes[0]
        for k in range(players):
            order[k:q * players:players] = hands[(first + k) % players]
        order[q * players:] = deal.dead
    return order
