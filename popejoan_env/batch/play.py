"""``BatchDeals``: N deals of one rules object and table size, stepped at once by the compiled kernels.

Every deal follows the scalar engine (``engine.Deal``) card for card: the same
deal from the same seed (``deal_seed``), the same legal cards, the same
payouts, settlement, board and balances (``tests/test_batch_engine.py`` plays
over 100,000 deals through both).  The state is one ``BatchState`` (a structure
of arrays: per deal a 64-bit hand mask per seat, the owner of every card, the
board, the balances and a card-indexed log of the plays); every rule that
changes it is a compiled loop of ``kernels`` (numba, required: without it a
batch refuses to start, ``MissingDependencyError``).

>>> import numpy as np
>>> batch = BatchDeals("modern", players=4, num_deals=3, rng=np.random.default_rng(0))
>>> mask = batch.legal_mask()          # [3, 52] bool, the seat to act in each deal
>>> finished = batch.step(batch.random_actions(np.random.default_rng(1)))
>>> bool(batch.legal_mask().any(axis=1).all())   # finished deals restart in place
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from popejoan_env.batch import records
from popejoan_env.batch.dealing import DealSource, check_orders, deal_slots
from popejoan_env.batch.records import Finished
from popejoan_env.batch.state import BatchState, Tables, allocate, check_batch_size, compiled, popcount, tables_of
from popejoan_env.cards import CARD_NAMES, EIGHT_DIAMONDS, NUM_CARD_IDS, PACK
from popejoan_env.checks import MAX_EPISODE_DEALS, as_flag, as_int, brief
from popejoan_env.engine import Deal, parse_board
from popejoan_env.errors import GameOverError, IllegalActionError, InvalidDealError
from popejoan_env.rules import MAX_PLAYERS, MIN_PLAYERS, MODERN, Rules, RulesLike, check_players, resolve_rules

__all__ = ["BatchDeals"]

T = TypeVar("T")


class _Of(Generic[T]):
    """A field of the batch's ``state`` or ``tables`` read as an attribute of the batch (``batch.owner`` is
    ``batch.state.owner``): the NamedTuple is the one place each field is defined and documented."""

    def __init__(self, where: str) -> None:
        self.where = where

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, batch: Any, cls: type | None = None) -> T:
        return getattr(getattr(batch, self.where), self.name)  # type: ignore[no-any-return]


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

    The whole state is ``state`` (a ``BatchState``, its fields documented there and readable as attributes of
    the batch: ``batch.owner``, ``batch.to_act``...); ``tables`` holds the look-up tables of the rules and
    table size.
    """

    state: BatchState
    """Every deal's arrays: the batch's one state."""
    tables: Tables
    """The look-up tables of ``rules`` at ``players`` seats (shared, read-only)."""

    owner = _Of[np.ndarray]("state")
    initial_owner = _Of[np.ndarray]("state")
    dead_cards = _Of[np.ndarray]("state")
    board = _Of[np.ndarray]("state")
    balances = _Of[np.ndarray]("state")
    board_before = _Of[np.ndarray]("state")
    balances_before = _Of[np.ndarray]("state")
    dealer = _Of[np.ndarray]("state")
    to_act = _Of[np.ndarray]("state")
    leader = _Of[np.ndarray]("state")
    winner = _Of[np.ndarray]("state")
    done = _Of[np.ndarray]("state")
    turnup = _Of[np.ndarray]("state")
    trumps = _Of[np.ndarray]("state")
    pair_by = _Of[np.ndarray]("state")
    play_order = _Of[np.ndarray]("state")
    led = _Of[np.ndarray]("state")
    num_plays = _Of[np.ndarray]("state")
    deal_ids = _Of[np.ndarray]("state")
    deal_in_session = _Of[np.ndarray]("state")
    session_ids = _Of[np.ndarray]("state")
    events = _Of[np.ndarray]("state")
    num_events = _Of[np.ndarray]("state")
    pos_of_card = _Of[np.ndarray]("tables")
    card_of_pos = _Of[np.ndarray]("tables")

    def __init__(
        self,
        rules: RulesLike = MODERN,
        players: int = 4,
        num_deals: int = 1,
        *,
        rng: np.random.Generator | None = None,
        deal_seed: int | None = None,
        orders: np.ndarray | None = None,
        session_length: int = 1,
        first_dealer: int | Sequence[int] = 0,
        lone_leads: bool = True,
        auto_reset: bool = True,
        record: bool = False,
        board: Sequence[int] | Mapping[str, int] | None = None,
    ) -> None:
        rules = resolve_rules(rules)
        try:
            players = check_players(players)
        except ValueError:
            raise InvalidDealError(f"a batch needs {MIN_PLAYERS} to {MAX_PLAYERS} players, got "
                                   f"{brief(players)}") from None
        n = check_batch_size(num_deals)
        if sum(x is not None for x in (rng, deal_seed, orders)) != 1:
            raise InvalidDealError("a batch is dealt by exactly one of rng=, deal_seed= or orders=")
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise InvalidDealError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if deal_seed is not None and (as_int(deal_seed) is None or deal_seed < 0):
            raise InvalidDealError(f"deal_seed must be a non-negative integer, got {brief(deal_seed)}")
        length = as_int(session_length)
        if length is None or not 1 <= length <= MAX_EPISODE_DEALS:  # the observation's Box holds such sessions
            raise InvalidDealError(f"session_length must be an integer 1..{MAX_EPISODE_DEALS:,}, got "
                                   f"{brief(session_length)}")
        checked_orders = None if orders is None else check_orders(orders)
        start_board = np.array(parse_board(board), dtype=np.int64)
        dealers = np.asarray(first_dealer)
        if dealers.dtype == bool or not np.issubdtype(dealers.dtype, np.integer) or dealers.shape not in ((), (n,)) \
                or ((dealers < 0) | (dealers >= players)).any():
            raise InvalidDealError(
                f"first_dealer must be a seat 0..{players - 1} (or one per deal), got {brief(first_dealer)}")
        lone = as_flag(lone_leads, "lone_leads")
        auto, keep = as_flag(auto_reset, "auto_reset"), as_flag(record, "record")
        rules.check_startable()  # every session starts at start_counters: else no slot could ever deal
        self._setup(rules, players, allocate(n, players, len(tables_of(rules, players).dead_columns)), lone)
        self.auto_reset, self.record = auto, keep
        self.session_length = length
        self._source = DealSource(np.broadcast_to(dealers.astype(np.int64), (n,)).copy(), rng=rng,
                                  deal_seed=None if deal_seed is None else int(deal_seed), orders=checked_orders,
                                  start_board=start_board)
        all_slots = np.arange(n)
        deal_slots(self._kernels, self.state, self.tables, rules, players, self._source, all_slots,
                   new_session=np.ones(n, dtype=bool), record=self.record)
        self._play_lone_leads(all_slots)
        self._pending = [self._settle_new()]

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the compiled kernels (a module): a batch is copied, deep-copied and pickled as its data."""
        return {k: v for k, v in self.__dict__.items() if k != "_kernels"}

    def __setstate__(self, data: dict[str, Any]) -> None:
        self.__dict__.update(data)
        self._kernels = compiled()

    def _setup(self, rules: Rules, players: int, state: BatchState, lone_leads: bool) -> None:
        """What every batch holds, however made: the rules, the state, and nothing dealt or reported yet."""
        self._kernels = compiled()  # first: without numba nothing else is built
        self.rules = rules
        self.players = players
        self.tables = tables_of(rules, players)
        self.state = state
        self.num_deals = len(state.to_act)
        self.lone_leads = bool(lone_leads)
        self.auto_reset = self.record = False
        self.session_length = 1
        self._source = DealSource(np.zeros(self.num_deals, dtype=np.int64))
        self._reported = np.zeros(self.num_deals, dtype=bool)
        self._pending: list[Finished] = []
        self.cards_played = 0
        """Cards played in the batch so far (forced and lone ones included)."""

    @classmethod
    def _blank(cls, rules: Rules, players: int, state: BatchState, lone_leads: bool) -> BatchDeals:
        """A batch over ``state`` as it stands: it does not deal again when a deal ends, nor record."""
        batch = cls.__new__(cls)
        batch._setup(rules, players, state, lone_leads)
        return batch

    # ----------------------------------------------------------------- from positions
    @classmethod
    def from_deals(cls, deals: Sequence[Deal], lone_leads: bool = True) -> BatchDeals:
        """A batch holding copies of scalar deals (of one rules object and table size), as they stand; it does not
        deal again when they end (``auto_reset`` off).  Forced cards due are played at once, as ``Deal.advance``."""
        lone = as_flag(lone_leads, "lone_leads")
        state = records.state_of_deals(deals)
        batch = cls._blank(deals[0].rules, deals[0].players, state, lone)
        batch._source.dealt = len(deals)
        # A card due (R8) is played now, as the sequence it belongs to: a lead of it by its holder, logged as due.
        due = np.array([d.forced for d in deals], dtype=np.int64)
        forced = np.nonzero(due >= 0)[0]
        if len(forced):
            batch.cards_played += batch._kernels.play_leads(
                state, batch.tables, forced, batch.tables.pos_of_card[due[forced]], False, batch.lone_leads,
                batch.record)
        batch._play_lone_leads(np.nonzero(~state.done)[0])
        batch._reported[:] = np.array([d.done for d in deals])
        return batch

    def take(self, slots: Sequence[int] | np.ndarray) -> BatchDeals:
        """A new batch holding copies of the deals in ``slots`` (repeats allowed), as they stand; it does not deal
        again when they end (``auto_reset`` off) and does not record."""
        idx = np.asarray(slots)
        if idx.ndim != 1 or not len(idx) or not np.issubdtype(idx.dtype, np.integer) \
                or idx.min() < 0 or idx.max() >= self.num_deals:
            raise InvalidDealError(f"take needs a non-empty list of slots 0..{self.num_deals - 1}, got {brief(slots)}")
        check_batch_size(len(idx), "the number of slots taken")
        new = self._blank(self.rules, self.players, self.state._make(a[idx] for a in self.state), self.lone_leads)
        new.session_length = self.session_length
        new._source = self._source.for_slots(idx)
        new._reported = self._reported[idx].copy()
        return new

    @classmethod
    def stack(cls, batches: Sequence[BatchDeals]) -> BatchDeals:
        """One batch holding copies of every deal of ``batches`` (one rules object and table size), in order, as
        they stand; it does not deal again when they end (``auto_reset`` off) and does not record."""
        if not batches:
            raise InvalidDealError("stack needs at least one batch")
        first = batches[0]
        if any(b.rules != first.rules or b.players != first.players for b in batches):
            raise InvalidDealError("stack joins batches of one rules object and table size")
        check_batch_size(sum(b.num_deals for b in batches), "the deals stacked")
        state = first.state._make(np.concatenate([b.state[i] for b in batches]) for i in range(len(first.state)))
        new = cls._blank(first.rules, first.players, state, first.lone_leads)
        new.session_length = first.session_length
        new._reported = np.concatenate([b._reported for b in batches])
        return new

    def with_worlds(self, worlds: Sequence[Deal], repeat: int = 1, lone_leads: bool = True) -> BatchDeals:
        """Copies of this one-deal batch with each world's unplayed cards written in (``repeat`` rows per world,
        row ``k * repeat + i`` is world ``k``): the worlds must be its position with those cards placed otherwise
        (as ``WorldSampler`` draws them; the caller checks it)."""
        times = as_int(repeat)
        if times is None or times < 1:
            raise InvalidDealError(f"repeat must be a positive integer, got {brief(repeat)}")
        lone = as_flag(lone_leads, "lone_leads")
        check_batch_size(len(worlds) * times, "the rows of with_worlds (worlds x repeat)")
        rows = np.repeat(np.arange(len(worlds)), times)
        batch = self.take(np.zeros(len(rows), dtype=np.int64))
        records.write_worlds(batch.state, batch.tables, worlds, rows)
        batch.lone_leads = lone
        return batch

    def _slot(self, slot: object) -> int:
        """``slot`` as a slot number 0..n-1 (numpy integers too), else an InvalidDealError: never a numpy index
        (-1 is not the last slot, True not slot 1)."""
        value = as_int(slot)
        if value is None or not 0 <= value < self.num_deals:
            raise InvalidDealError(f"slot must be an integer 0..{self.num_deals - 1}, got {brief(slot)}")
        return value

    def to_deal(self, slot: int) -> Deal:
        """The deal in ``slot`` as a scalar ``Deal`` in the same state (dealt from its cards and board, its plays
        replayed): for players and checks that need the scalar engine's objects (``SeatView`` included)."""
        return records.to_deal(self.state, self.rules, self.players, self._slot(slot))

    def deal_record(self, slot: int) -> dict[str, Any]:
        """The ``popejoan-record/1`` object of the finished deal in ``slot`` (needs ``record=True``)."""
        if not self.record:
            raise GameOverError("records need a batch made with record=True")
        slot = self._slot(slot)
        if not self.done[slot]:
            raise GameOverError(f"deal {brief(slot)} of the batch is not a finished deal")
        return records.game_records(self.state, self.rules, self.players, np.array([slot]))[0]

    # ----------------------------------------------------------------- queries
    @property
    def deals_dealt(self) -> int:
        """Deals dealt so far (after ``take``, those of the batch taken from; after ``from_deals``, the deals given)."""
        return self._source.dealt

    @property
    def dead_size(self) -> int:
        """Cards in each dead hand (the longest, after ``from_deals`` of deals with several sizes)."""
        return int(self.state.dead_cards.shape[1])

    @property
    def hand_sizes(self) -> np.ndarray:
        """[n, players] cards left in each seat's hand."""
        return popcount(self.state.hands)

    @property
    def memory_bytes(self) -> int:
        """Bytes of state arrays held per deal."""
        arrays = [*self.state, self._source.next_dealer, self._reported]
        return sum(a.nbytes for a in arrays) // self.num_deals

    def _all_legal(self) -> tuple[np.ndarray, np.ndarray]:
        """Legal leads (position bits) of every deal's seat to act and how many (0 in a finished deal)."""
        bits = np.empty(self.num_deals, dtype=np.uint64)
        count = np.empty(self.num_deals, dtype=np.int64)
        self._kernels.legal_bits(self.state, self.tables.lead_any, bits, count)
        return bits, count

    def legal_mask(self) -> np.ndarray:
        """[n, 52] bool by card id: the cards the seat to act may lead (all False in a finished deal)."""
        return self._cards_of_bits(self._all_legal()[0])

    def _cards_of_bits(self, bits: np.ndarray) -> np.ndarray:
        """[k, 52] bool by card id of position bitmasks."""
        out = np.empty((len(bits), NUM_CARD_IDS), dtype=bool)
        self._kernels.cards_of_bits(bits, self.tables.pos_of_card, out)
        return out

    def hands_of(self, seats: np.ndarray | None = None) -> np.ndarray:
        """[n, 52] bool by card id: the hand of ``seats[i]`` in deal i (default the seat to act)."""
        rows = np.arange(self.num_deals)
        seats = self.to_act if seats is None else np.asarray(seats)
        if seats.shape != (self.num_deals,) or not np.issubdtype(seats.dtype, np.integer) or seats.dtype == bool \
                or ((seats < -1) | (seats >= self.players)).any():
            raise InvalidDealError(f"seats must be one seat -1..{self.players - 1} per deal (-1: none), "
                                   f"got {brief(seats)}")
        return self._cards_of_bits(np.where(seats >= 0, self.state.hands[rows, np.maximum(seats, 0)], np.uint64(0)))

    def dead_of(self, slot: int) -> list[int]:
        """Card ids of the dead hand of the deal in ``slot``, the turn-up last."""
        return records.dead_of(self.state, self._slot(slot))

    def plays_of(self, slot: int) -> list[int]:
        """Card ids of the deal in ``slot`` in the order played."""
        return records.plays_of(self.state, self._slot(slot))

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
        return self._cards_of_bits(self.state.revealed)

    def random_actions(self, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random legal lead per deal (-1 in a finished deal), drawn with ``rng``."""
        if not isinstance(rng, np.random.Generator):
            raise InvalidDealError(f"random_actions needs a numpy.random.Generator, got {type(rng).__name__}")
        legal, count = self._all_legal()
        uniforms = rng.random(self.num_deals)
        out = np.empty(self.num_deals, dtype=np.int64)
        self._kernels.pick(legal, count, uniforms, self.tables.card_of_pos, out)
        return out

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
        legal = self._all_legal()[0][rows]
        ok = (acts >= 0) & (acts < NUM_CARD_IDS)
        bits = np.where(ok, self.tables.pos_bit[np.clip(acts, 0, NUM_CARD_IDS - 1)], np.uint64(0))
        bad = (legal & bits) == 0
        if bad.any():
            i = int(np.argmax(bad))
            r = int(rows[i])
            names = [CARD_NAMES[c] for c in np.nonzero(self._cards_of_bits(legal[i:i + 1])[0])[0]]
            card = CARD_NAMES[acts[i]] if ok[i] and acts[i] != EIGHT_DIAMONDS else f"card id {acts[i]}"
            raise IllegalActionError(f"deal {r} of the batch: seat {self.to_act[r]} cannot lead {card}; legal: {names}")
        if len(rows):
            self.cards_played += self._kernels.play_leads(
                self.state, self.tables, rows.astype(np.int64), self.tables.pos_of_card[acts], True, self.lone_leads,
                self.record)
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
        self._play_lone_leads(np.nonzero(~self.done)[0])
        return self._settle_new()

    def _play_lone_leads(self, rows: np.ndarray) -> None:
        """Forced cards are played with the lead before them; here the lone leads (with ``lone_leads``), until each
        deal of ``rows`` has a choice or is over."""
        if self.lone_leads and len(rows):
            self.cards_played += self._kernels.play_lone_leads(self.state, self.tables, rows.astype(np.int64),
                                                               self.record)

    def _settle_new(self) -> Finished:
        """Report the finished deals and (with ``auto_reset``) deal their slots again, until none is over."""
        parts, self._pending = self._pending, []
        while True:
            ended = np.nonzero(self.done & ~self._reported)[0]
            if not len(ended):
                break
            parts.append(records.report(self.state, self.rules, self.players, ended, self.record))
            if not self.auto_reset:
                self._reported[ended] = True
                break
            left = self._source.left()
            if left is not None and len(ended) > left:
                # Out of explicit deals: the slots beyond the last one stay over (a step on them is refused).
                self._reported[ended[left:]] = True
                ended = ended[:left]
                if not len(ended):
                    break
            new_session = self.deal_in_session[ended] >= self.session_length
            new_session |= ~self.rules.can_deal(self.balances[ended, self._source.next_dealer[ended]])
            deal_slots(self._kernels, self.state, self.tables, self.rules, self.players, self._source, ended,
                       new_session, self.record)
            self._play_lone_leads(ended)
        return Finished.concat(parts, self.players, self.record)
