"""Dealing a batch's slots: the order of the cards (``rng``, ``deal_seed`` or explicit orders), sessions, R1–R6."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import ModuleType

import numpy as np

from popejoan_env.batch.state import BatchState, Tables
from popejoan_env.cards import NUM_CARD_IDS, PACK
from popejoan_env.engine import Deal
from popejoan_env.errors import GameOverError, InvalidDealError
from popejoan_env.rules import Rules

__all__ = ["DealSource", "check_orders", "deal_slots", "order_of_deal"]

PACK_ARRAY = np.array(PACK, dtype=np.int64)


@dataclasses.dataclass
class DealSource:
    """How a batch deals its slots: the order of the cards from one of ``rng``, ``deal_seed`` or ``orders`` (none of
    them: it deals no more), the deals and sessions begun so far, a new session's board, each slot's next dealer."""

    next_dealer: np.ndarray
    """[n] int64: the seat that deals the slot's next deal."""
    rng: np.random.Generator | None = None
    """Shuffles every new deal of the batch at once."""
    deal_seed: int | None = None
    """Deal ``d`` is dealt as ``Deal.new(..., rng=default_rng(deal_seed + d))``."""
    orders: np.ndarray | None = None
    """[deals, 51] int64: explicit orders of the cards (checked by ``check_orders``), dealt in turn."""
    start_board: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(8, dtype=np.int64))
    """[8] int64: the board a new session starts with."""
    dealt: int = 0
    """Deals dealt so far (the next deal's global number)."""
    sessions: int = 0
    """Sessions started so far (the next session's number)."""

    def left(self) -> int | None:
        """Explicit deals not dealt yet (None: ``rng`` and ``deal_seed`` never run out)."""
        return None if self.orders is None else len(self.orders) - self.dealt

    def for_slots(self, slots: np.ndarray) -> DealSource:
        """A source for copies of ``slots``: the same counts, board and next dealers, nothing to deal from."""
        return DealSource(self.next_dealer[slots].copy(), start_board=self.start_board, dealt=self.dealt,
                          sessions=self.sessions)


def check_orders(orders: np.ndarray) -> np.ndarray:
    """``orders`` as int64 [deals, 51], each row the pack once, else ``InvalidDealError``."""
    arr = np.asarray(orders)
    if arr.ndim != 2 or arr.shape[1] != len(PACK) or not np.issubdtype(arr.dtype, np.integer):
        raise InvalidDealError(f"orders must be an integer array [deals, 51] of card ids, got shape {arr.shape}")
    if (np.sort(arr, axis=1) != PACK_ARRAY).any():
        raise InvalidDealError("every row of orders must be the 51 cards of the pack, each once")
    return arr.astype(np.int64)


def _draw_orders(source: DealSource, k: int, shuffle: Callable[[np.ndarray, np.ndarray], None]) -> np.ndarray:
    """The order of the cards of the source's next ``k`` deals (``shuffle`` is the compiled Fisher–Yates)."""
    first = source.dealt
    if source.rng is not None:
        # Fisher–Yates from one block of uniforms: every new deal of the batch shuffled at once.
        orders = np.broadcast_to(PACK_ARRAY, (k, len(PACK))).copy()
        shuffle(orders, source.rng.random((k, len(PACK))))
        return orders
    if source.deal_seed is not None:
        return PACK_ARRAY[np.stack([np.random.default_rng(source.deal_seed + d).permutation(len(PACK))
                                    for d in range(first, first + k)])]
    assert source.orders is not None
    if first + k > len(source.orders):
        raise GameOverError(f"the batch has dealt all {len(source.orders)} explicit deals")
    return source.orders[first:first + k]


def deal_slots(kernels: ModuleType, state: BatchState, tables: Tables, rules: Rules, players: int,
               source: DealSource, slots: np.ndarray, new_session: np.ndarray, record: bool) -> None:
    """Deal ``source``'s next deal into each slot (R1-R6) with the compiled ``kernels`` (``state.compiled()``),
    starting a session where ``new_session``."""
    k = len(slots)
    if not k:
        return
    orders = _draw_orders(source, k, kernels.shuffle)
    state.deal_ids[slots] = np.arange(source.dealt, source.dealt + k)
    source.dealt += k
    fresh = slots[new_session]
    if len(fresh):
        state.board[fresh] = source.start_board
        state.balances[fresh] = rules.start_counters
        state.deal_in_session[fresh] = 0
        state.session_ids[fresh] = np.arange(source.sessions, source.sessions + len(fresh))
        source.sessions += len(fresh)
    state.deal_in_session[slots] += 1
    dealer = source.next_dealer[slots]
    state.dealer[slots] = dealer
    source.next_dealer[slots] = (dealer + 1) % players
    kernels.deal(state, tables, slots, orders, dealer, record)


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
