"""``pool_hunter``: plays for the counters on the board."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from popejoan_env.cards import JACK, KING, QUEEN, SUIT_MASKS, card_id, iter_cards
from popejoan_env.engine import AWARD_OF
from popejoan_env.players.base import ScriptedPlayer
from popejoan_env.players.stops import SUCCESSOR, gone, lead_candidates, order_in_suit, orphans, run_from
from popejoan_env.rules import INTRIGUE_C, MATRIMONY_C
from popejoan_env.seat_view import SeatView

if TYPE_CHECKING:
    from popejoan_env.batch import BatchDeals

DENY_WEIGHT = 0.5
"""A prize an opponent is expected to take counts this much against a lead (it is not our loss in full)."""
LEAD_VALUE = 1.0
"""Worth of keeping the lead (a run ending in a known stop), in counters."""
CARD_VALUE = 0.3
"""Worth of each card shed (a card left in hand costs a counter when someone goes out)."""
ORPHAN_VALUE = 0.3
"""Worth of shedding a card nobody can lead up to."""
CLEAR_WEIGHT = 0.3
"""Under lowest-of-suit leads: share of a prize's stake credited for leading the cards below it."""
WEIGHTS = np.array([DENY_WEIGHT, LEAD_VALUE, CARD_VALUE, ORPHAN_VALUE, CLEAR_WEIGHT], dtype=np.float64)
"""The weights above in the order the compiled loop reads them (``scripted_kernels.compiled_leads``)."""


class PoolHunterPlayer(ScriptedPlayer):
    """``pool_hunter``: leads to win the trump honours, Matrimony, Intrigue and the Pope, weighing
    what is staked on each compartment now.

    For each lead it counts the prizes its own run wins for sure (with Matrimony or Intrigue when it
    completes a pair it began), then walks on up the suit: each unseen card continues the sequence
    with the chance that it is in a hand rather than the dead hand; a prize of its own reached that
    way is credited, a prize an opponent would play is debited (at half weight).  Keeping the lead,
    cards shed and orphans shed add a little; under lowest-of-suit leads, clearing the cards below
    one of its own prizes earns part of that prize's stake.
    """

    name = "pool_hunter"

    def choose(self, view: SeatView) -> int:
        """The lead with the highest expected counters from the board."""
        values = lead_values(view)
        return max(values, key=lambda c: (values[c], -c))

    def act_batch(self, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """``act`` for every row at once, in one compiled loop over the batch (``scripted_kernels``: the same reading
        of each seat's view, the same arithmetic, the same choices)."""
        from popejoan_env.search.scripted_kernels import compiled_leads  # numba: only where a batch is played

        return compiled_leads("pool_hunter", batch, rows, legal, weights=WEIGHTS)


def lead_values_batch(batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``lead_values`` of the seat to act in each deal ``rows``, [k, 52] by card id (-inf where no candidate):
    the compiled loop's numbers, the very same as the scalar ones."""
    from popejoan_env.search.scripted_kernels import pool_hunter_values

    return pool_hunter_values(batch, rows, legal, WEIGHTS)


def lead_values(view: SeatView) -> dict[int, float]:
    """Expected counters (a heuristic estimate) of each candidate lead for ``pool_hunter``."""
    rules = view.rules
    ace_high = rules.ace_high
    succ = SUCCESSOR[ace_high]
    award = AWARD_OF[view.trumps]
    board = view.board
    hand = view.hand
    known_gone = gone(view)
    mine_played = view.played_by[0]
    lonely = orphans(hand, known_gone, ace_high)
    unseen = view.unseen
    n_unseen = unseen.bit_count()
    if view.dead_hand is not None:
        hidden_dead = 0
    else:
        hidden_dead = view.dead_size - view.known_dead.bit_count()
    # Chance that an unseen card is in somebody's hand (so a sequence reaching it goes on).
    in_hand = 1.0 - hidden_dead / n_unseen if n_unseen else 0.0
    trump_k, trump_q, trump_j = (card_id(view.trumps, r) for r in (KING, QUEEN, JACK))
    lowest_lead = rules.lead != "any"

    def pair_bonus(mine: int, new: int) -> float:
        """Matrimony/Intrigue completed by the cards ``new`` when ``mine`` is everything we will have played."""
        out = 0.0
        k, q, j = (mine >> trump_k) & 1, (mine >> trump_q) & 1, (mine >> trump_j) & 1
        if k and q and ((new >> trump_k) & 1 or (new >> trump_q) & 1):
            out += board[MATRIMONY_C]
        if q and j and ((new >> trump_q) & 1 or (new >> trump_j) & 1):
            out += board[INTRIGUE_C]
        return out

    values: dict[int, float] = {}
    for lead in lead_candidates(view):
        run = run_from(lead, hand, known_gone, succ)
        value = 0.0
        for card in iter_cards(run.cards):
            if award[card] >= 0:
                value += board[award[card]]
        value += pair_bonus(mine_played | run.cards, run.cards)
        # Walk on up the suit past the run: who plays what, with what chance.
        reach = 1.0
        nxt = succ[run.last]
        while nxt >= 0 and not (known_gone >> nxt) & 1 and reach > 0.05:
            if (hand >> nxt) & 1:
                if award[nxt] >= 0:
                    value += reach * board[award[nxt]]
            else:
                reach *= in_hand
                if award[nxt] >= 0:
                    value -= DENY_WEIGHT * reach * board[award[nxt]]
            nxt = succ[nxt]
        if lowest_lead:
            suit_left = sorted(iter_cards(hand & ~run.cards & SUIT_MASKS[lead // 13]),
                               key=lambda c: order_in_suit(c, ace_high))
            below = 0
            for card in suit_left:
                if award[card] >= 0:
                    value += CLEAR_WEIGHT * board[award[card]] / (1 + below)
                below += 1
        if run.stops:
            value += LEAD_VALUE
        value += CARD_VALUE * run.length
        if (lonely >> lead) & 1:
            value += ORPHAN_VALUE
        value -= 0.01 * order_in_suit(lead, ace_high)
        values[lead] = value
    return values

