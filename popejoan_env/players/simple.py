"""The two naive players: ``random`` and ``lowest``."""

from __future__ import annotations

from popejoan_env.players.base import ScriptedPlayer
from popejoan_env.players.stops import order_in_suit
from popejoan_env.seat_view import SeatView


class RandomPlayer(ScriptedPlayer):
    """``random``: plays a legal card chosen uniformly at random (the floor of the ladder)."""

    name = "random"

    def choose(self, view: SeatView) -> int:
        """A uniformly random legal card."""
        return view.legal[int(self.rng.integers(len(view.legal)))]


class LowestPlayer(ScriptedPlayer):
    """``lowest``: always leads its lowest legal card, Aces first (an Ace can never be led up to);
    ties go to the lowest card id (clubs, diamonds, hearts, spades).  Under ``lead="any"`` that is
    the lowest card in the hand."""

    name = "lowest"

    def choose(self, view: SeatView) -> int:
        """The lowest legal card by rank, then by suit."""
        ace_high = view.rules.ace_high
        return min(view.legal, key=lambda c: (order_in_suit(c, ace_high), c))
