"""``stops_first``: the traditional advice of the c.1900 games book."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from popejoan_env.cards import POPE
from popejoan_env.players.base import ScriptedPlayer
from popejoan_env.players.stops import SUCCESSOR, gone, lead_candidates, order_in_suit, orphans, run_from
from popejoan_env.seat_view import SeatView

if TYPE_CHECKING:
    from popejoan_env.batch import BatchDeals


class StopsFirstPlayer(ScriptedPlayer):
    """``stops_first``: "first he leads cards which he knows will be stops, then Pope, if he has it,
    and afterward the lowest card in his suit, particularly an ace, for that can never be led up to."

    In order: the longest run it knows ends in a stop (a King, the 7♦, a card whose successor is
    played or known dead), so it keeps the lead; then the Pope; then a card nobody can lead up to
    (an orphan: an Ace, or one whose predecessor is gone), lowest first; then its lowest card.
    Under ``lead="any"`` the same order ranks every card that starts a run in its hand.
    """

    name = "stops_first"

    def choose(self, view: SeatView) -> int:
        """The lead the traditional advice ranks first."""
        return max(lead_candidates(view), key=stops_first_key(view))

    def act_batch(self, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """``act`` for every row at once, in one compiled loop over the batch (``scripted_kernels``: the same reading
        of each seat's view, the same choices)."""
        from popejoan_env.search.scripted_kernels import compiled_leads  # numba: only where a batch is played

        return compiled_leads("stops_first", batch, rows, legal)


def stops_first_key(view: SeatView) -> Callable[[int], tuple[int, int, int, int, int]]:
    """Sort key (higher is better) ranking leads by the traditional advice; shared by other players."""
    ace_high = view.rules.ace_high
    succ = SUCCESSOR[ace_high]
    known_gone = gone(view)
    hand = view.hand
    lonely = orphans(hand, known_gone, ace_high)

    def key(card: int) -> tuple[int, int, int, int, int]:
        run = run_from(card, hand, known_gone, succ)
        if run.stops:
            return (3, run.length, -order_in_suit(card, ace_high), 0, -card)
        tier = 2 if card == POPE else 1 if (lonely >> card) & 1 else 0
        return (tier, 0, -order_in_suit(card, ace_high), run.length, -card)

    return key
