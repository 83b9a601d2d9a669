"""Possible worlds: the hidden cards dealt out consistently with one seat's view, as a playable ``Deal``.

A search player does not know the other hands or the unseen part of the dead
hand.  ``WorldSampler(view)`` deals the cards the seat cannot place
(``view.unseen``) at random into the other hands (with their known sizes) and
the dead hand (its size less the cards known dead: the turn-up and the
successors that stops revealed), and ``world_deal`` builds the mid-game
``Deal`` of such a world with the engine's public ``Deal.from_position``,
ready to play on with the engine's own rules.

Seats in a world are the view's *relative* seats (the observer is seat 0).  A
world starts *now* (see ``Deal.from_position``): its ``plays``, ``awards``
and ``payments`` are empty, ``board_before``/``balances_before`` are the
current board and balances (so ``delta`` is what each seat gains from here
on) and ``initial_hands`` are the hands now.  Nothing in a ``SeatView``
beyond hand sizes and known dead cards constrains where a card lies (the view
keeps no play order, so a lead's "lowest of its suit" cannot be read back),
so the sampling is uniform.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from popejoan_env.cards import CardMask, cards_of
from popejoan_env.engine import Deal
from popejoan_env.errors import InvalidDealError
from popejoan_env.seat_view import SeatView


def world_deal(view: SeatView, hands: Sequence[CardMask], dead: CardMask) -> Deal:
    """The mid-game ``Deal`` where relative seat ``k`` holds ``hands[k]`` and the dead hand is ``dead``."""
    n = view.players
    if len(hands) != n or hands[0] != view.hand:
        raise InvalidDealError("a world needs one hand per seat, and seat 0's must be the observer's own hand")
    for k, hand in enumerate(hands):
        if hand.bit_count() != view.hand_sizes[k]:
            raise InvalidDealError(f"relative seat {k} holds {view.hand_sizes[k]} cards, the world gives it {hand.bit_count()}")
    if dead.bit_count() != view.dead_size or not (dead >> view.turnup) & 1:
        raise InvalidDealError("a world must deal out exactly the 51 cards, with the turn-up in the dead hand")
    return _position(view, list(hands), dead)


def _position(view: SeatView, hands: list[CardMask], dead: CardMask) -> Deal:
    """``Deal.from_position`` of a world: the view's public state with these hidden cards."""
    turnup = view.turnup
    return Deal.from_position(
        hands, [c for c in cards_of(dead) if c != turnup] + [turnup], view.played_by,
        to_act=view.to_act, forced=view.forced, leader=view.leader, dealer=view.dealer, rules=view.rules,
        board=view.board, balances=view.balances,
    )


class WorldSampler:
    """Deals the cards a seat cannot place into the other hands and the dead hand, uniformly at random."""

    def __init__(self, view: SeatView) -> None:
        self.view = view
        self.unseen = np.array(cards_of(view.unseen), dtype=np.int64)
        self.sizes = list(view.hand_sizes[1:])
        known_dead = view.dead_hand if view.dead_hand is not None else view.known_dead
        self.known_dead = known_dead
        hidden_dead = view.dead_size - known_dead.bit_count()
        if sum(self.sizes) + hidden_dead != len(self.unseen) or hidden_dead < 0:
            raise InvalidDealError(
                f"the view is inconsistent: {len(self.unseen)} unseen cards for hands of {self.sizes} "
                f"and {hidden_dead} unseen dead-hand cards"
            )
        self._cuts = np.cumsum([0, *self.sizes]).tolist()

    def sample(self, rng: np.random.Generator) -> Deal:
        """One world consistent with the view, as a playable ``Deal`` (relative seats, observer = 0)."""
        view = self.view
        order = self.unseen[rng.permutation(len(self.unseen))].tolist()
        hands = [view.hand]
        cuts = self._cuts
        for k in range(1, view.players):
            mask = 0
            for card in order[cuts[k - 1]:cuts[k]]:
                mask |= 1 << card
            hands.append(mask)
        dead = self.known_dead
        for card in order[cuts[-1]:]:
            dead |= 1 << card
        return _position(view, hands, dead)  # sizes and the turn-up hold by construction
