"""What a seat can work out about stops and runs from its ``SeatView`` (the scripted players' reading).

A **run** is what a lead plays out of the leader's own hand: the led card,
then its successor while the leader holds it, and so on (R8 makes him play
them himself).  The run **ends in a known stop** when the card after its last
card can never be played by anyone: it does not exist (a King, the 7♦, the
Ace under ``ace_high``), it has been played, or it is known to be in the dead
hand (the turn-up, a successor a stop revealed, the whole dead hand when the
seat may see it).  Leading such a run keeps the lead (R9).

A card is an **orphan** when nobody can ever lead up to it: it is no card's
successor (an Ace, the 9♦; a 2 under ``ace_high``) or its predecessor is gone.
An orphan leaves the hand only when its holder leads it.

>>> from popejoan_env.cards import mask_of, names_of, parse_card, parse_cards
>>> hand = mask_of(parse_cards(["JS", "QS", "KS", "2H"]))
>>> run = run_from(parse_card("JS"), hand, gone=0, successor=SUCCESSOR[False])
>>> names_of(run.cards), run.stops
(['JS', 'QS', 'KS'], True)
"""

from __future__ import annotations

from typing import NamedTuple

from popejoan_env.cards import CardMask, iter_cards
from popejoan_env.engine import PREDECESSOR, SUCCESSOR
from popejoan_env.inference import must_be_dead
from popejoan_env.seat_view import SeatView

__all__ = ["PREDECESSOR", "SUCCESSOR", "Run", "gone", "lead_candidates", "order_in_suit", "orphans", "run_from"]


def order_in_suit(card: int, ace_high: bool) -> int:
    """Position of a card in its suit's order, 0 = lowest (the Ace, or the 2 under ``ace_high``)."""
    rank = card % 13
    return (rank - 1) % 13 if ace_high else rank


class Run(NamedTuple):
    """The cards a lead plays from the leader's own hand, its last card, and whether it ends in a known stop."""

    cards: CardMask
    last: int
    length: int
    stops: bool


def gone(view: SeatView) -> CardMask:
    """Cards nobody can play any more: played, known to be in the dead hand, or held by no seat at all
    (``inference.must_be_dead``: e.g. the cards below a lead under ``lowest_of_suit`` that the observer
    cannot see and no other seat can hold)."""
    dead = view.dead_hand if view.dead_hand is not None else view.known_dead
    return view.played | dead | must_be_dead(view)


def run_from(lead: int, hand: CardMask, gone: CardMask, successor: tuple[int, ...]) -> Run:
    """The run that leading ``lead`` from ``hand`` plays, given the cards known ``gone``."""
    cards = 1 << lead
    last = lead
    length = 1
    while True:
        nxt = successor[last]
        if nxt < 0 or (gone >> nxt) & 1:
            return Run(cards, last, length, True)
        if not (hand >> nxt) & 1:
            return Run(cards, last, length, False)
        cards |= 1 << nxt
        last = nxt
        length += 1


def orphans(hand: CardMask, gone: CardMask, ace_high: bool) -> CardMask:
    """Cards of ``hand`` nobody can lead up to (no predecessor, or it is gone)."""
    pred = PREDECESSOR[ace_high]
    out = 0
    for card in iter_cards(hand):
        p = pred[card]
        if p < 0 or (gone >> p) & 1:
            out |= 1 << card
    return out


def lead_candidates(view: SeatView) -> list[int]:
    """The leads worth considering: every legal lead, except that under ``lead="any"``
    a card whose predecessor is in the same hand is left out (leading from the bottom
    of that run plays the same run and more)."""
    legal = list(view.legal)
    if view.forced >= 0 or view.rules.lead != "any":
        return legal
    pred = PREDECESSOR[view.rules.ace_high]
    hand = view.hand
    out = [c for c in legal if pred[c] < 0 or not (hand >> pred[c]) & 1]
    return out or legal

