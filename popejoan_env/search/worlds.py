"""Possible worlds: the hidden cards dealt out consistently with everything one seat knows, as a playable ``Deal``.

A search player does not know the other hands or the unseen part of the
dead hand.  ``WorldSampler(view)`` places the cards the seat cannot see
(``view.unseen``) into the other hands (with their known sizes) and the
unseen part of the dead hand (its size less the cards known dead), so that
every world respects what the seat knows: no seat gets a card that
``inference.cannot_hold`` rules out for it (its own leads under
``lowest_of_suit`` showed it has none of that suit below the lead; the
settlement showed who holds the 9♦), and a card due from another seat (R8)
stays with that seat.  So the cards played so far, replayed in such a world,
are legal there and give the same public history.

**The sampler** (``sampler="consistent"``, the default) places the most
constrained cards first (fewest places they may go), each in one of its
possible places with probability proportional to the room left there, then
the cards that may go anywhere in a uniformly random order; a dead end (a
card with no room left where it may go) restarts the world.  When nothing
constrains the cards (``lead="any"``, or no inference yet) this is exactly a
uniformly random deal of the unseen cards.  Otherwise it is close to, but not
exactly, uniform over the consistent worlds, so every world carries an
importance weight (``WorldSampler.log_weight``, see ``place``) and the search
weighs its worlds by it: weighted averages are averages over the consistent
worlds drawn uniformly.  ``tests/test_worlds.py`` measures this against exact
enumeration of small instances: total variation distance 0.074 and 0.155
unweighted on two constrained instances, 0.014 and 0.024 weighted (sampling
noise there is about 0.01-0.03).  ``sampler="uniform"`` is the old
sampler, which ignores the inference (the hidden cards dealt uniformly into
hands of the known sizes and the dead hand), kept to measure what the
inference is worth.

**Two ways to draw.**  ``draw`` and ``sample`` draw one world at a time in
Python (``place``: the readable reference).  ``draw_many`` draws a batch of
worlds in one compiled call (``place_many``, ``world_kernels.draw_worlds``),
as card masks, tens of times faster: the same placing order, the same
distribution and the same weights, from a seed the caller's generator draws,
so other worlds than ``draw`` would give.  ``pimc`` draws its worlds this way
unless told ``draws=python`` (through ``search.search_gains``, which draws the
same worlds with the same kernel inside its one compiled call).

Seats in a world are the view's *relative* seats (the observer is seat 0).  A
world starts *now* (see ``Deal.from_position``): its ``plays``, ``awards``
and ``payments`` are empty, ``board_before``/``balances_before`` are the
current board and balances (so ``delta`` is what each seat gains from here
on) and ``initial_hands`` are the hands now.  The first world of a sampler is
built with ``Deal.from_position`` (every check), the others as
``rearranged`` copies of it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from popejoan_env.cards import CardMask, cards_of
from popejoan_env.checks import as_int, brief
from popejoan_env.engine import Deal
from popejoan_env.errors import InvalidDealError
from popejoan_env.inference import cannot_hold
from popejoan_env.seat_view import SeatView

SAMPLERS = ("consistent", "uniform")
"""World samplers: ``consistent`` respects ``inference.cannot_hold``; ``uniform`` ignores it (the old one)."""
MAX_RESTARTS = 1000
"""Dead ends tolerated in a row before the sampler falls back to a search that always finds a world."""


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


def dead_list(dead: CardMask, turnup: int) -> list[int]:
    return [c for c in cards_of(dead) if c != turnup] + [turnup]


def _position(view: SeatView, hands: list[CardMask], dead: CardMask) -> Deal:
    """``Deal.from_position`` of a world: the view's public state, its history included, with these hidden
    cards."""
    return Deal.from_position(
        hands, dead_list(dead, view.turnup), view.played_by,
        to_act=view.to_act, forced=view.forced, leader=view.leader, dealer=view.dealer, rules=view.rules,
        board=view.board, balances=view.balances, history=[(seat, card) for seat, card, _ in view.history],
    )


class WorldSampler:
    """Places the cards a seat cannot see into the other hands and the dead hand, consistently with its view."""

    def __init__(self, view: SeatView, sampler: str = "consistent") -> None:
        if sampler not in SAMPLERS:
            raise InvalidDealError(f"unknown world sampler {sampler!r}; samplers are {list(SAMPLERS)}")
        self.view = view
        self.sampler = sampler
        n = view.players
        unseen = view.unseen  # a property that walks the history: read once
        self.unseen = np.array(cards_of(unseen), dtype=np.int64)
        known_dead = view.dead_hand if view.dead_hand is not None else view.known_dead
        self.known_dead = known_dead
        hidden_dead = view.dead_size - known_dead.bit_count()
        self.sizes = list(view.hand_sizes[1:])
        if sum(self.sizes) + hidden_dead != len(self.unseen) or hidden_dead < 0:
            raise InvalidDealError(
                f"the view is inconsistent: {len(self.unseen)} unseen cards for hands of {self.sizes} "
                f"and {hidden_dead} unseen dead-hand cards"
            )
        # Slots 0..n-2 are relative seats 1..n-1, slot n-1 the unseen part of the dead hand.
        self.room = self.sizes + [hidden_dead]
        self._cuts = list(itertools.accumulate(self.sizes, initial=0))
        self._base: Deal | None = None
        self.log_weight = 0.0
        """Log importance weight of the last world sampled (0 for the uniform sampler): see ``place``."""
        if sampler == "consistent":
            excluded = cannot_hold(view)
            dead_slot = 1 << (n - 1)
            forced_seat = view.to_act if view.forced >= 0 and view.to_act > 0 else -1
            # The cards that may go anywhere need no loop of their own: every seat may hold them and the dead hand
            # has room (they are placed last, in card order, as a sort by the number of places puts them).
            anywhere = unseen if hidden_dead else 0
            for k in range(1, n):
                anywhere &= ~excluded[k]
            if forced_seat > 0:
                anywhere &= ~(1 << view.forced)
            places = []
            for card in cards_of(unseen & ~anywhere):
                allowed = dead_slot if hidden_dead else 0
                for k in range(1, n):
                    if not (excluded[k] >> card) & 1:
                        allowed |= 1 << (k - 1)
                if card == view.forced and forced_seat > 0:
                    allowed = 1 << (forced_seat - 1)  # the card due is in the hand of the seat to act (R8)
                if not allowed:
                    raise InvalidDealError(f"the view is inconsistent: card {card} can be nowhere")
                places.append((allowed.bit_count(), card, allowed))
            places.sort()
            self._order = [(card, tuple(s for s in range(n) if (allowed >> s) & 1)) for _, card, allowed in places]
            self._free = cards_of(anywhere)
            self.constrained = bool(self._order)
            # The same placing order for the compiled draws: the constrained cards, then the free ones.
            self._cards = np.array([card for card, _ in self._order] + self._free, dtype=np.int64)
            self._allowed = np.array([a for _, _, a in places], dtype=np.int64)
        else:
            self._order, self._free = [], self.unseen.tolist()
            self._cards, self._allowed = self.unseen, np.zeros(0, dtype=np.int64)

    def places(self) -> list[tuple[int, tuple[int, ...]]]:
        """Every unseen card with the slots it may go to: the constrained ones in placing order, then the free ones."""
        every = tuple(range(len(self.room)))
        return list(self._order) + [(card, every) for card in self._free]

    def draw(self, rng: np.random.Generator) -> tuple[list[CardMask], CardMask]:
        """Where one world puts the cards (each relative seat's hand, the dead hand), drawn as ``sample`` draws them;
        a search that needs no ``Deal`` per world (the batched rollouts) stops here."""
        return self._uniform(rng) if self.sampler == "uniform" else self._consistent(rng)

    def sample(self, rng: np.random.Generator) -> Deal:
        """One world consistent with the view, as a playable ``Deal`` (relative seats, observer = 0)."""
        hands, dead = self.draw(rng)
        if self._base is None:
            self._base = _position(self.view, hands, dead)  # every check, once; kept unplayed
            return self._base.copy()
        return self._base.rearranged(hands, dead_list(dead, self.view.turnup))

    def draw_many(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``n`` worlds at once, drawn in compiled code (``world_kernels``) from one seed the generator draws: each
        relative seat's hand ``[n, players]`` and the dead hand ``[n]`` (uint64 card masks) and the log importance
        weights ``[n]`` (0 for the uniform sampler).  The same distribution as ``draw``, not the same worlds."""
        masks, log_weights = _place_arrays(self._cards, self._allowed, self.room, rng, n, self._order, self._free)
        hands = np.empty((len(masks), self.view.players), dtype=np.uint64)
        hands[:, 0] = self.view.hand
        hands[:, 1:] = masks[:, :-1]
        dead = masks[:, -1] | np.uint64(self.known_dead)
        if self.sampler == "uniform":
            log_weights[:] = 0.0
        return hands, dead, log_weights

    def deals(self, hands: np.ndarray, dead: np.ndarray) -> list[Deal]:
        """The worlds of ``draw_many`` as playable ``Deal`` objects, as ``sample`` makes them (the first world the
        sampler makes is built with every check, the others are checked ``rearranged`` copies of it)."""
        out = []
        for h, d in zip(np.asarray(hands).tolist(), np.asarray(dead).tolist()):
            if self._base is None:
                self._base = _position(self.view, h, d)
                out.append(self._base.copy())
            else:
                out.append(self._base.rearranged(h, dead_list(d, self.view.turnup)))
        return out

    def _uniform(self, rng: np.random.Generator) -> tuple[list[CardMask], CardMask]:
        order = self.unseen[rng.permutation(len(self.unseen))].tolist()
        hands = [self.view.hand]
        cuts = self._cuts
        for k in range(1, self.view.players):
            mask = 0
            for card in order[cuts[k - 1]:cuts[k]]:
                mask |= 1 << card
            hands.append(mask)
        dead = self.known_dead
        for card in order[cuts[-1]:]:
            dead |= 1 << card
        return hands, dead

    def _consistent(self, rng: np.random.Generator) -> tuple[list[CardMask], CardMask]:
        masks, self.log_weight = place(self._order, self.room, rng, free=self._free)
        return [self.view.hand] + masks[:-1], self.known_dead | masks[-1]



def place(order: Sequence[tuple[int, tuple[int, ...]]], room: Sequence[int], rng: np.random.Generator,
          *,
          free: Sequence[int] = ()) -> tuple[list[CardMask], float]:
    """Cards into slots: ``order`` lists each constrained card with the slots it may go to (most constrained
    first), ``free`` the cards that may go anywhere, ``room[s]`` how many cards slot ``s`` takes; returns a
    card mask per slot and the log of the placement's importance weight for a uniform target.

    Each constrained card goes to one of its slots with probability proportional to the room left there
    (a dead end starts again; after ``MAX_RESTARTS`` of them ``place_by_paths`` finds a placement, which exists
    whenever the view is consistent, with log weight 0, i.e. unweighted); the free cards then fill the room left in
    a uniformly random order, which is the same distribution as placing them one by one.  A placement
    drawn this way has probability ``q`` proportional to ``prod(room left where each constrained card
    went / room it could have gone) * prod(room left for the free cards)! / (free cards)!``; the weight
    is ``1 / q`` up to a constant, so weighted averages are averages over the consistent worlds drawn
    uniformly.
    """
    slots = len(room)
    for _ in range(MAX_RESTARTS):
        left = list(room)
        masks = [0] * slots
        log_weight = 0.0
        draws = rng.random(len(order)).tolist()
        for (card, places), u in zip(order, draws):
            total = 0
            for s in places:
                total += left[s]
            if not total:
                break  # a dead end: start again
            target = u * total
            for s in places:
                r = left[s]
                if r:
                    chosen = s
                    target -= r
                    if target < 0:
                        break
            log_weight += _LOG[total] - _LOG[left[chosen]]
            left[chosen] -= 1
            masks[chosen] |= 1 << card
        else:
            for s in range(slots):
                log_weight -= _LOG_FACTORIAL[left[s]]
            if free:
                shuffled = [free[i] for i in rng.permutation(len(free)).tolist()]
                at = 0
                for s in range(slots):
                    for card in shuffled[at:at + left[s]]:
                        masks[s] |= 1 << card
                    at += left[s]
            return masks, log_weight
    return place_by_paths(list(order) + [(card, tuple(range(slots))) for card in free], room, rng), 0.0


def place_many(order: Sequence[tuple[int, tuple[int, ...]]], room: Sequence[int], rng: np.random.Generator,
               *,
               free: Sequence[int] = (), n: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``place`` ``n`` times in compiled code (``world_kernels.draw_worlds``, one seed from ``rng``): the masks
    ``[n, slots]`` (uint64) and the log weights ``[n]``; the same distribution and weights as ``place``, other
    draws.  A placement that runs out of restarts is ``place_by_paths``'s, drawn with ``rng``, with log weight 0."""
    slots = len(room)
    bits = [sum(1 << s for s in places) for _, places in order]
    if any(not b or b >> slots for b in bits):
        raise InvalidDealError(f"every constrained card needs one or more of the slots 0..{slots - 1}")
    cards = np.array([card for card, _ in order] + list(free), dtype=np.int64)
    return _place_arrays(cards, np.array(bits, dtype=np.int64), room, rng, n, order, free)


def _place_arrays(cards: np.ndarray, allowed: np.ndarray, room: Sequence[int], rng: np.random.Generator, n: int,
                  order: Sequence[tuple[int, tuple[int, ...]]], free: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """``place_many`` with its cards as arrays (``cards``: the constrained ones, then the free ones; ``allowed``:
    each constrained card's slots as bits); ``order`` and ``free`` again for the fallback search."""
    from popejoan_env.search import world_kernels  # imports numba: only where worlds are drawn in batches

    if as_int(n) is None or n < 1:
        raise InvalidDealError(f"a batch of worlds needs a positive number of worlds, got {brief(n)}")
    n = int(n)
    seed = rng.integers(2**64, dtype=np.uint64)
    masks = np.empty((n, len(room)), dtype=np.uint64)
    log_weights = np.empty(n, dtype=np.float64)
    placed = np.empty(n, dtype=np.bool_)
    world_kernels.draw_worlds(seed, cards, allowed, np.asarray(room, dtype=np.int64), MAX_RESTARTS, LOG_ARRAY,
                              LOG_FACTORIAL_ARRAY, masks, log_weights, placed)
    if not placed.all():  # restarts kept failing: the polynomial search, world by world
        every = tuple(range(len(room)))
        full = list(order) + [(card, every) for card in free]
        for w in np.flatnonzero(~placed).tolist():
            masks[w] = place_by_paths(full, room, rng)
            log_weights[w] = 0.0
    return masks, log_weights


_LOG = [0.0] + [float(np.log(k)) for k in range(1, 64)]
_LOG_FACTORIAL = np.concatenate([[0.0], np.cumsum(_LOG[1:])]).tolist()
LOG_ARRAY, LOG_FACTORIAL_ARRAY = np.array(_LOG), np.array(_LOG_FACTORIAL)


def place_by_paths(order: Sequence[tuple[int, tuple[int, ...]]], room: Sequence[int],
                   rng: np.random.Generator) -> list[CardMask]:
    """A placement for views where restarts keep failing: the cards in random order, each put where there is
    room, or made room for by moving placed cards along a shortest chain of slots (augmenting paths, so it
    finds a placement whenever one exists, in polynomial time; a backtracking search could take hours)."""
    left = list(room)
    allowed = dict(order)
    held: list[list[int]] = [[] for _ in room]  # slot -> its cards
    for i in rng.permutation(len(order)).tolist():
        card, places = order[i]
        queue = rng.permutation(places).tolist()
        # slot reached -> (the card moved into it, the slot that card left: -1 for the new card)
        parent: dict[int, tuple[int, int]] = {s: (card, -1) for s in queue}
        end = -1
        for s in queue:  # breadth first: the queue grows as slots are reached
            if left[s]:
                end = s
                break
            for moved in held[s]:
                for t in allowed[moved]:
                    if t not in parent:
                        parent[t] = (moved, s)
                        queue.append(t)
        if end < 0:
            raise InvalidDealError("the view is inconsistent: no placement of the unseen cards respects it")
        left[end] -= 1
        s = end
        while s >= 0:
            moved, came_from = parent[s]
            held[s].append(moved)
            if came_from >= 0:
                held[came_from].remove(moved)
            s = came_from
    return [sum(1 << card for card in cards) for cards in held]
