"""What each seat cannot hold, inferred from everything a seat knows (stdlib only).

``inferred(view)`` is the one statement of the inference: what the table can
infer each seat does not hold beyond the cards everyone sees; the observation
encodes it (its ``inferred`` planes), and ``cannot_hold(view)`` adds the cards
seen (played, known dead, the observer's own) for the search, which samples
worlds that respect it, and the scripted players.  For every relative seat
``k`` ``cannot_hold`` gives the cards ``k`` certainly does not hold now:

* every card played and every dead card shown to all (the turn-up, the
  successors stops revealed); and, as the observer knows it, its own cards and
  the whole dead hand when it may see it;
* **leads** under ``lead="lowest_of_suit"`` (R7): a seat that led ``c`` held no
  card of ``c``'s suit below it, and hands never gain cards, so it holds none
  of them for the rest of the deal.  Under ``ace_high`` the Ace ranks above
  the King: a led 2…K says nothing about the Ace, a led Ace means the seat had
  no other card of the suit.  Under ``lead="any"`` a lead says nothing;
* the **settlement** (R11): when a seat goes out and the holder of the 9♦ is
  excused, everybody sees who paid nothing, so every other seat does not hold
  the 9♦;
* a seat with no cards holds nothing.

Forced continuations (R8) reveal nothing beyond the cards themselves, and a
stop on a successor in the dead hand is already in ``known_dead``.

>>> from popejoan_env.cards import SUIT_MASKS, card_id, names_of
>>> names_of(below_lead(card_id(3, 5), ace_high=False))       # leading the 6♠: no A..5 of spades
['AS', '2S', '3S', '4S', '5S']
"""

from __future__ import annotations

from popejoan_env.cards import ACE, PACK_MASK, POPE, SUIT_MASKS, CardMask
from popejoan_env.seat_view import SeatView

_ACES: CardMask = sum(1 << (suit * 13 + ACE) for suit in range(4))


def below_lead(card: int, ace_high: bool) -> CardMask:
    """The cards of ``card``'s suit a seat cannot have held when it led ``card`` under ``lowest_of_suit``."""
    suit = SUIT_MASKS[card // 13]
    if not ace_high:
        return suit & ((1 << card) - 1)
    if card % 13 == ACE:
        return suit & ~(1 << card)  # the Ace is led only when it is the seat's last card of the suit
    return suit & ~_ACES & ((1 << card) - 1)


def lead_exclusions(view: SeatView) -> list[CardMask]:
    """Per relative seat, the cards its leads show it cannot hold (nothing under ``lead="any"``)."""
    out = [0] * view.players
    if view.rules.lead == "any":
        return out
    ace_high = view.rules.ace_high
    for seat, card, lead in view.history:
        if lead:
            out[seat] |= below_lead(card, ace_high)
    return out


def inferred(view: SeatView) -> tuple[CardMask, ...]:
    """Per relative seat, the cards everyone at the table can infer it does not hold, beyond the cards
    played and the dead cards shown to all: from its leads, from the settlement, and every card for a seat
    with none left.  This is what the observation's ``inferred`` planes hold."""
    pope = 1 << POPE
    excused_known = view.winner >= 0 and view.rules.pope_excused
    out = []
    for k, excluded in enumerate(lead_exclusions(view)):
        if view.hand_sizes[k] == 0:
            out.append(PACK_MASK)
            continue
        if excused_known and k != view.pope_holder:
            excluded |= pope
        out.append(excluded & PACK_MASK)
    return tuple(out)


def cannot_hold(view: SeatView) -> tuple[CardMask, ...]:
    """Per relative seat (0 = the observer), the cards it certainly does not hold now, as the observer knows
    it: the cards played, the dead cards it knows, its own cards, and what ``inferred`` adds."""
    known = view.played | (view.dead_hand if view.dead_hand is not None else view.known_dead) | view.hand
    return (PACK_MASK & ~view.hand,) + tuple((mask | known) & PACK_MASK for mask in inferred(view)[1:])


def must_be_dead(view: SeatView) -> CardMask:
    """Cards the observer cannot see that no other seat can hold: they lie in the dead hand."""
    unseen = view.unseen
    if not unseen:
        return 0
    nowhere = unseen
    for mask in cannot_hold(view)[1:]:
        nowhere &= mask
    return nowhere
