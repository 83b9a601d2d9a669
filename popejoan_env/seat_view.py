"""What one seat can see of a deal, as plain Python (stdlib only).

Seats in a ``SeatView`` are *relative* to the observer: 0 is the observer,
1 the player on its left, and so on clockwise.  This is the single source of
truth for "what a seat may know"; the numpy observation (``observation.py``)
encodes exactly this and decodes back to it, and players read it.

Besides the cards and counters now, a view holds the **public history**: every
card played, in order, with the relative seat that played it and whether it
was a lead (``history``), and every stop with its cause (``stops``).  What
each seat can therefore not hold is ``inference.cannot_hold(view)``.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

from popejoan_env.cards import PACK_MASKS, POPE, CardMask
from popejoan_env.engine import PLAYED, SUCCESSOR, Deal
from popejoan_env.rules import Rules
from popejoan_env.seats import clockwise_from, relative

NO_SUCCESSOR, SUCCESSOR_PLAYED, SUCCESSOR_DEAD = "no_successor", "successor_played", "successor_dead"
"""Causes of a stop (R9): the card has no successor (a King, the 7♦, the Ace under ``ace_high``), its
successor was played earlier, or its successor lies in the dead hand."""
STOP_CAUSES: tuple[str, ...] = (NO_SUCCESSOR, SUCCESSOR_PLAYED, SUCCESSOR_DEAD)


class Play(NamedTuple):
    """One card of the public history: who played it (relative seat), which card, and whether it was a lead."""

    seat: int
    card: int
    lead: bool


class Stop(NamedTuple):
    """A stop (R9): ``history[index]`` (card ``card`` by relative seat ``seat``) ended its sequence for ``cause``."""

    index: int
    seat: int
    card: int
    cause: str


@dataclasses.dataclass(frozen=True)
class SeatView:
    """Everything one seat knows at a decision point; seats relative to the observer."""

    rules: Rules
    """The rules in force (known to everybody)."""
    players: int
    """Number of seats at the table."""
    hand: CardMask
    """The observer's own cards."""
    history: tuple[Play, ...]
    """Every card played so far in this deal, in order: ``(relative seat, card, lead)``."""
    turnup: int
    """The turned-up card (in the dead hand, seen by all)."""
    trumps: int
    """Suit of the turn-up."""
    board: tuple[int, ...]
    """Counters on each compartment now (order of ``COMPARTMENTS``)."""
    balances: tuple[int, ...]
    """Each relative seat's counters now."""
    hand_sizes: tuple[int, ...]
    """Cards left in each relative seat's hand."""
    dealer: int
    """Relative seat of the dealer."""
    leader: int
    """Relative seat that led the current sequence (or is due to lead)."""
    to_act: int
    """Relative seat to act (0 when the observer decides), -1 once the deal is over."""
    forced: int
    """The card that must be played next (R8), or -1 when a lead is due."""
    known_dead: CardMask
    """Cards known to be in the dead hand: the turn-up and every successor a stop revealed."""
    dead_hand: CardMask | None
    """The whole dead hand when the rules let this seat see it (dealer, ``dealer_sees_dead_hand``), else None."""
    dead_size: int
    """Number of cards in the dead hand."""
    legal: tuple[int, ...]
    """Card ids the observer may play now (empty when it is not its turn)."""
    winner: int = -1
    """Relative seat that went out, -1 while the deal goes on (or when it ended at the turn-up)."""
    pope_holder: int = -1
    """Relative seat the settlement showed to hold the 9♦ (excused from paying, R11), else -1."""

    @functools.cached_property
    def played_by(self) -> tuple[CardMask, ...]:
        """Cards played so far in this deal by each relative seat."""
        out = [0] * self.players
        for seat, card, _ in self.history:
            out[seat] |= 1 << card
        return tuple(out)

    @functools.cached_property
    def played(self) -> CardMask:
        """Every card played so far."""
        out = 0
        for _, card, _ in self.history:
            out |= 1 << card
        return out

    @functools.cached_property
    def stops(self) -> tuple[Stop, ...]:
        """Every stop so far, in order, with its cause (derived from the history and the dead cards known)."""
        succ = SUCCESSOR[self.rules.ace_high]
        out = []
        played = 0
        last = len(self.history) - 1
        for i, (seat, card, _) in enumerate(self.history):
            played |= 1 << card
            if i < last:
                if not self.history[i + 1].lead:
                    continue
            elif self.forced >= 0 or self.winner >= 0 or self.to_act < 0:
                continue  # a sequence still running, or the deal ended on this card (R11): no stop
            nxt = succ[card]
            cause = NO_SUCCESSOR if nxt < 0 else SUCCESSOR_PLAYED if (played >> nxt) & 1 else SUCCESSOR_DEAD
            out.append(Stop(i, seat, card, cause))
        return tuple(out)

    @property
    def pope_out(self) -> bool:
        """True while the 9♦ has not been played."""
        return not (self.played >> POPE) & 1

    @property
    def unseen(self) -> CardMask:
        """Cards the observer cannot place: in other hands or the unseen part of the dead hand."""
        known = self.hand | self.played | (self.dead_hand if self.dead_hand is not None else self.known_dead)
        return PACK_MASKS[self.rules.pack] & ~known


def history_of(deal: Deal, observer: int) -> tuple[Play, ...]:
    """The public history of a deal with seats relative to ``observer``.

    A play is a continuation exactly when its card is the successor of the card before it: after a card
    whose successor somebody holds, that successor must come next (R8), and after a stop nobody holds it.
    """
    n = deal.players
    succ = SUCCESSOR[deal.rules.ace_high]
    out = []
    previous = -1
    for seat, card in deal.plays:
        out.append(Play((seat - observer) % n, card, previous < 0 or succ[previous] != card))
        previous = card
    return tuple(out)


def seat_view(deal: Deal, seat: int) -> SeatView:
    """The view of ``deal`` from ``seat`` (absolute seat id)."""
    n = deal.players
    rel = [relative(s, seat, n) for s in range(n)]
    order = clockwise_from(seat, n)
    sees_dead = deal.rules.dealer_sees_dead_hand and seat == deal.dealer
    pope_holder = -1
    if deal.winner is not None and deal.rules.pope_excused and deal.owner[POPE] >= 0:
        pope_holder = rel[deal.owner[POPE]]  # excused at the settlement, so everyone saw it (R11)
    return SeatView(
        rules=deal.rules,
        players=n,
        hand=deal.hands[seat],
        history=history_of(deal, seat),
        turnup=deal.turnup,
        trumps=deal.trumps,
        board=tuple(deal.board),
        balances=tuple(deal.balances[s] for s in order),
        hand_sizes=tuple(deal.hand_sizes[s] for s in order),
        dealer=rel[deal.dealer],
        leader=rel[deal.leader] if deal.leader >= 0 else -1,
        to_act=rel[deal.to_act] if deal.to_act >= 0 else -1,
        forced=deal.forced,
        known_dead=deal.revealed_dead,
        dead_hand=deal.dead_mask if sees_dead else None,
        dead_size=len(deal.dead),
        legal=tuple(deal.legal_actions()) if deal.to_act == seat else (),
        winner=rel[deal.winner] if deal.winner is not None else -1,
        pope_holder=pope_holder,
    )


__all__ = ["NO_SUCCESSOR", "PLAYED", "Play", "STOP_CAUSES", "SUCCESSOR_DEAD", "SUCCESSOR_PLAYED", "SeatView",
           "Stop", "history_of", "seat_view"]
