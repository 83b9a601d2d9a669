"""Seats at the table: clockwise order, the next dealer, eldest, and seats relative to an observer (stdlib only).

Seats are ``0 … n-1`` clockwise; the deal passes to the left (``d`` → ``d+1 mod n``)
and eldest is the seat left of the dealer.  A *relative* seat counts from an
observer: 0 is the observer, 1 the player on its left, and so on.

>>> eldest(3, 4), next_dealer(3, 4), relative(1, observer=3, players=4), absolute(2, observer=3, players=4)
(0, 0, 2, 1)
"""

from __future__ import annotations


def left_of(seat: int, players: int) -> int:
    """The seat on the left of ``seat`` (the next one clockwise)."""
    return (seat + 1) % players


def eldest(dealer: int, players: int) -> int:
    """The seat left of the dealer, who leads first (R6)."""
    return (dealer + 1) % players


def next_dealer(dealer: int, players: int) -> int:
    """Who deals next: the deal passes to the left (Sessions)."""
    return (dealer + 1) % players


def relative(seat: int, observer: int, players: int) -> int:
    """``seat`` counted from ``observer`` (0 = the observer, 1 = its left …)."""
    return (seat - observer) % players


def absolute(rel: int, observer: int, players: int) -> int:
    """The absolute seat of relative seat ``rel`` of ``observer``."""
    return (observer + rel) % players


def clockwise_from(seat: int, players: int) -> list[int]:
    """Every seat in clockwise order starting with ``seat`` (index k = relative seat k)."""
    return [(seat + k) % players for k in range(players)]


def others_from(seat: int, players: int) -> list[int]:
    """The other seats in clockwise order starting on ``seat``'s left."""
    return [(seat + k) % players for k in range(1, players)]
