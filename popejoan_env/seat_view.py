"""What one seat can see of a deal, as plain Python (stdlib only).

Seats in a ``SeatView`` are *relative* to the observer: 0 is the observer,
1 the player on its left, and so on clockwise.  This is the single source of
truth for "what a seat may know"; the numpy observation (``observation.py``)
encodes exactly this and decodes back to it, and scripted players read it.
"""

from __future__ import annotations

import dataclasses

from popejoan_env.cards import PACK_MASK, POPE, CardMask
from popejoan_env.engine import Deal
from popejoan_env.rules import Rules
from popejoan_env.seats import clockwise_from, relative


@dataclasses.dataclass(frozen=True)
class SeatView:
    """Everything one seat knows at a decision point; seats relative to the observer."""

    rules: Rules
    """The rules in force (known to everybody)."""
    players: int
    """Number of seats at the table."""
    hand: CardMask
    """The observer's own cards."""
    played_by: tuple[CardMask, ...]
    """Cards played so far in this deal by each relative seat."""
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

    @property
    def pope_out(self) -> bool:
        """True while the 9♦ has not been played."""
        return not any((m >> POPE) & 1 for m in self.played_by)

    @property
    def played(self) -> CardMask:
        """Every card played so far."""
        out = 0
        for m in self.played_by:
            out |= m
        return out

    @property
    def unseen(self) -> CardMask:
        """Cards the observer cannot place: in other hands or the unseen part of the dead hand."""
        known = self.hand | self.played | (self.dead_hand if self.dead_hand is not None else self.known_dead)
        return PACK_MASK & ~known


def seat_view(deal: Deal, seat: int) -> SeatView:
    """The view of ``deal`` from ``seat`` (absolute seat id)."""
    n = deal.players
    rel = [relative(s, seat, n) for s in range(n)]
    order = clockwise_from(seat, n)
    played_by = [0] * n
    for s, c in deal.plays:
        played_by[rel[s]] |= 1 << c
    sees_dead = deal.rules.dealer_sees_dead_hand and seat == deal.dealer
    return SeatView(
        rules=deal.rules,
        players=n,
        hand=deal.hands[seat],
        played_by=tuple(played_by),
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
    )
