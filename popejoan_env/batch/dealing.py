"""Dealing a batch's slots: the order of the cards (``rng``, ``deal_seed`` or explicit orders), sessions, R1–R6."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from popejoan_env.cards import NUM_CARD_IDS, PACK
from popejoan_env.engine import Deal
from popejoan_env.errors import GameOverError, InvalidDealError

if TYPE_CHECKING:
    from popejoan_env.batch.play import BatchDeals

__all__ = ["check_orders", "deal_slots", "order_of_deal"]

PACK_ARRAY = np.array(PACK, dtype=np.int64)


def check_orders(orders: np.ndarray) -> np.ndarray:
    """``orders`` as int64 [deals, 51], each row the pack once, else ``InvalidDealError``."""
    arr = np.asarray(orders)
    if arr.ndim != 2 or arr.shape[1] != len(PACK) or not np.issubdtype(arr.dtype, np.integer):
        raise InvalidDealError(f"orders must be an integer array [deals, 51] of card ids, got shape {arr.shape}")
    if (np.sort(arr, axis=1) != PACK_ARRAY).any():
        raise InvalidDealError("every row of orders must be the 51 cards of the pack, each once")
    return arr.astype(np.int64)


def _draw_orders(batch: BatchDeals, k: int) -> np.ndarray:
    """The order of the cards of the batch's next ``k`` deals."""
    first = batch.deals_dealt
    if batch._rng is not None:
        # Fisher–Yates from one block of uniforms: every new deal of the batch shuffled at once.
        orders = np.broadcast_to(PACK_ARRAY, (k, len(PACK))).copy()
        batch._kernels.shuffle(orders, batch._rng.random((k, len(PACK))))
        return orders
    if batch._deal_seed is not None:
        return PACK_ARRAY[np.stack([np.random.default_rng(batch._deal_seed + d).permutation(len(PACK))
                                    for d in range(first, first + k)])]
    assert batch._orders is not None
    if first + k > len(batch._orders):
        raise GameOverError(f"the batch has dealt all {len(batch._orders)} explicit deals")
    return batch._orders[first:first + k]


def deal_slots(batch: BatchDeals, slots: np.ndarray, new_session: np.ndarray) -> None:
    """Deal the next deal into each slot (R1-R6), starting a session where ``new_session``."""
    k = len(slots)
    if not k:
        return
    state = batch.state
    orders = _draw_orders(batch, k)
    state.deal_ids[slots] = np.arange(batch.deals_dealt, batch.deals_dealt + k)
    batch.deals_dealt += k
    fresh = slots[new_session]
    if len(fresh):
        state.board[fresh] = batch._start_board
        state.balances[fresh] = batch.rules.start_counters
        state.deal_in_session[fresh] = 0
        state.session_ids[fresh] = np.arange(batch._sessions_started, batch._sessions_started + len(fresh))
        batch._sessions_started += len(fresh)
    state.deal_in_session[slots] += 1
    dealer = batch._next_dealer[slots]
    state.dealer[slots] = dealer
    batch._next_dealer[slots] = (dealer + 1) % batch.players
    batch._kernels.deal(state, batch.tables, slots, orders, dealer, batch.record)


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
