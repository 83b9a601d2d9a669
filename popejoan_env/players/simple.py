"""The two naive players: ``random`` and ``lowest`` (each also answers a whole batch at once)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.players.base import ScriptedPlayer
from popejoan_env.players.stops import order_in_suit
from popejoan_env.seat_view import SeatView

if TYPE_CHECKING:
    from popejoan_env.batch import BatchDeals


class RandomPlayer(ScriptedPlayer):
    """``random``: plays a legal card chosen uniformly at random (the floor of the ladder)."""

    name = "random"

    def choose(self, view: SeatView) -> int:
        """A uniformly random legal card."""
        return view.legal[int(self.rng.integers(len(view.legal)))]

    def act_batch(self, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """``act`` for every row at once: a lone legal card without a draw, else ``legal[rng.integers(count)]`` in
        card order (one vectorised draw gives the integers the calls row by row would)."""
        count = legal.sum(axis=1)
        pick = np.zeros(len(legal), dtype=np.int64)
        multi = count > 1
        if multi.any():
            pick[multi] = self.rng.integers(count[multi])
        return np.argmax(legal.cumsum(axis=1) > pick[:, None], axis=1)


class LowestPlayer(ScriptedPlayer):
    """``lowest``: always leads its lowest legal card, Aces first (an Ace can never be led up to);
    ties go to the lowest card id (clubs, diamonds, hearts, spades).  Under ``lead="any"`` that is
    the lowest card in the hand."""

    name = "lowest"

    def choose(self, view: SeatView) -> int:
        """The lowest legal card by rank, then by suit."""
        ace_high = view.rules.ace_high
        return min(view.legal, key=lambda c: (order_in_suit(c, ace_high), c))

    def act_batch(self, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """``act`` for every row at once: the lowest legal card by rank in suit (Aces first), then card id."""
        order = batch.pos_of_card % 13  # a card's rank in its suit, lowest first (the Ace on top under ace_high)
        key = np.where(legal, order * NUM_CARD_IDS + np.arange(NUM_CARD_IDS), np.iinfo(np.int64).max)
        return np.argmin(key, axis=1)
