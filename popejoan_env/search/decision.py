"""``pimc``'s default search, one compiled call per decision: the worlds drawn and every world × candidate played out.

``search_gains(view, candidates, rng, samples)`` gives what ``WorldSampler(view).draw_many`` followed by
``playouts.drawn_gains`` gives (the same worlds from the same generator, the same rollouts, the same
counters: ``tests/test_search.py`` compares them position by position), without the stages in between: no
``Deal`` of the position, no ``BatchState`` made of it, no second and third compiled call.  The position's state
is read from the view (the cards played, the board, the balances, who played the trump honours) and the placing
order is worked out in the compiled call (``decision_kernels``).

What the fast path does not cover goes the reference way, so every refusal is the reference's: a view that is
inconsistent is handed to ``WorldSampler``, which says why; a world that runs out of restarts is placed by
``worlds.place_by_paths``, drawn with the caller's generator, as ``draw_many`` places it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from popejoan_env.batch.state import Tables, tables_of
from popejoan_env.cards import CARD_NAMES, JACK, KING, PACK, QUEEN, card_id
from popejoan_env.checks import as_int, brief, is_int
from popejoan_env.engine import legal_leads, successors_of
from popejoan_env.errors import IllegalActionError, InvalidDealError
from popejoan_env.inference import cannot_hold
from popejoan_env.search.worlds import (
    LOG_ARRAY, LOG_FACTORIAL_ARRAY, MAX_RESTARTS, SAMPLERS, WorldSampler, place_by_paths,
)
from popejoan_env.seat_view import SeatView

__all__ = ["Inputs", "Position", "Sampling", "run", "search_gains"]


class Sampling(NamedTuple):
    """What the compiled placing order and draws read of a view (``decision_kernels.placing_order``, ``draw_into``)."""

    unseen: np.uint64           # the cards the observer cannot see (card-id bits)
    excluded: np.ndarray        # [players] uint64: what each relative seat cannot hold (inference.cannot_hold)
    hidden_dead: int            # the dead cards the observer has not seen
    forced: int                 # the card due (R8), -1: a lead
    forced_seat: int            # the relative seat that must play it, -1 when none
    uniform: bool               # the uniform sampler: every card free (its weights are set to 0 after)
    room: np.ndarray            # [players] int64: the cards each slot takes (seats 1.., then the unseen dead cards)
    max_restarts: int           # worlds.MAX_RESTARTS
    log_of: np.ndarray          # worlds' log table
    log_factorial: np.ndarray   # worlds' log-factorial table


class Position(NamedTuple):
    """The position every world of a search shares, as ``decision_kernels.play_worlds`` reads it (card-id bits)."""

    own_hand: np.uint64   # the observer's hand (relative seat 0)
    known_dead: np.uint64  # the dead cards the observer knows (the turn-up, those stops showed, or all of them)
    played: np.uint64     # the cards played
    shown: np.uint64      # the turn-up and the successors of the cards played (R9: shown where they are dead)
    board: np.ndarray     # [8] int64: the counters on each compartment
    balances: np.ndarray  # [players] int64: each relative seat's counters
    pair_by: np.ndarray   # [3] int64: who played the King, Queen and Jack of trumps, -1 for none
    trumps: int           # the trumps suit
    leads: np.ndarray     # [candidates] int64: the candidate leads as positions (batch.state)


class Inputs(NamedTuple):
    """What the compiled search reads of one view."""

    sampling: Sampling
    position: Position
    tables: Tables


def search_gains(view: SeatView, candidates: Sequence[int], rng: np.random.Generator, samples: int,
                 *,
                 sampler: str = "consistent") -> tuple[np.ndarray, np.ndarray]:
    """[samples, candidates] counters the observer gains when it leads each candidate in each of ``samples`` worlds
    and every seat then leads by ``greedy_lead``, and the worlds' log importance weights [samples]: the worlds
    ``WorldSampler(view, sampler).draw_many(rng, samples)`` draws, played out as ``playouts.drawn_gains``
    plays them.  The observer must be to lead (``InvalidDealError``), each candidate one of its legal leads
    (``IllegalActionError``)."""
    if as_int(samples) is None or samples < 1:
        raise InvalidDealError(f"a batch of worlds needs a positive number of worlds, got {brief(samples)}")
    return run(view, view_inputs(view, candidates, sampler), rng, int(samples))


def view_inputs(view: SeatView, candidates: Sequence[int], sampler: str) -> Inputs:
    """The view read once for the compiled search, checked (``search_gains`` says what it refuses)."""
    if sampler not in SAMPLERS:
        raise InvalidDealError(f"unknown world sampler {sampler!r}; samplers are {list(SAMPLERS)}")
    if view.to_act != 0 or view.forced >= 0:
        raise InvalidDealError("the search evaluates the observer's leads: the view must be the observer's, a lead "
                               "due (no card due, not over)")
    if not candidates:
        raise InvalidDealError("search_gains needs at least one candidate lead")
    rules, players = view.rules, view.players
    tables = tables_of(rules, players)  # the full pack only, as every batch
    legal = legal_leads(view.hand, tables.lead_any, tables.ace_high)
    for card in candidates:
        if not (is_int(card) and card in legal):
            name = CARD_NAMES[card] if is_int(card) and card in PACK else f"card id {brief(card)}"
            raise IllegalActionError(f"seat 0 cannot lead {name}; legal: {[CARD_NAMES[x] for x in legal]}")
    unseen = view.unseen
    known_dead = view.dead_hand if view.dead_hand is not None else view.known_dead
    hidden_dead = view.dead_size - known_dead.bit_count()
    uniform = sampler == "uniform"
    excluded = (0,) * players if uniform else cannot_hold(view)
    nowhere = 0
    if not uniform and not hidden_dead:  # no dead room: a card no other seat may hold can be nowhere
        nowhere = unseen
        for mask in excluded[1:]:
            nowhere &= mask
    if sum(view.hand_sizes[1:]) + hidden_dead != unseen.bit_count() or hidden_dead < 0 or nowhere:
        WorldSampler(view, sampler)  # the reference set-up names what is inconsistent
        raise InvalidDealError("the view is inconsistent: no placement of the unseen cards respects it")
    played_by = view.played_by
    pair_by = np.full(3, -1, dtype=np.int64)  # who played the King, Queen and Jack of trumps (matrimony, intrigue)
    for r, rank in enumerate((KING, QUEEN, JACK)):
        bit = 1 << card_id(view.trumps, rank)
        for seat in range(players):
            if played_by[seat] & bit:
                pair_by[r] = seat
    played = view.played
    shown = (1 << view.turnup) | successors_of(played, rules.ace_high)  # R9, with the dead hand of each world
    position = Position(np.uint64(view.hand), np.uint64(known_dead), np.uint64(played), np.uint64(shown),
                        np.array(view.board, dtype=np.int64), np.array(view.balances, dtype=np.int64), pair_by,
                        view.trumps, tables.pos_of_card[np.asarray(candidates, dtype=np.int64)])
    room = np.array([*view.hand_sizes[1:], hidden_dead], dtype=np.int64)
    sampling = Sampling(np.uint64(unseen), np.array(excluded, dtype=np.uint64), hidden_dead, -1, -1, uniform, room,
                        MAX_RESTARTS, LOG_ARRAY, LOG_FACTORIAL_ARRAY)
    return Inputs(sampling, position, tables)


def run(view: SeatView, inputs: Inputs, rng: np.random.Generator, samples: int) -> tuple[np.ndarray, np.ndarray]:
    """``search_gains`` from the view's ``Inputs``: one seed from ``rng``, one compiled call (and the reference's
    placement for a world out of restarts)."""
    from popejoan_env.search import decision_kernels, kernel_cache  # imports numba: only where a search runs

    kernel_cache.announce_first_compile((decision_kernels.search,))
    players, leads = view.players, len(inputs.position.leads)
    seed = rng.integers(2**64, dtype=np.uint64)  # the one draw of a decision, as draw_many's
    masks = np.empty((samples, players), dtype=np.uint64)
    log_weights = np.empty(samples, dtype=np.float64)
    placed = np.empty(samples, dtype=np.bool_)
    gains = np.empty((samples, leads), dtype=np.int64)
    status = decision_kernels.search(seed, *inputs, masks, log_weights, placed, gains)
    uniform = inputs.sampling.uniform
    sampler = "uniform" if uniform else "consistent"
    if status == decision_kernels.NOWHERE:  # view_inputs should have caught it
        WorldSampler(view, sampler)
        raise InvalidDealError("the view is inconsistent: no placement of the unseen cards respects it")
    if status == decision_kernels.UNPLACED:  # restarts kept failing: the polynomial search, world by world
        reference = WorldSampler(view, sampler)
        full = reference.places()
        for w in np.flatnonzero(~placed).tolist():
            masks[w] = place_by_paths(full, reference.room, rng)
            log_weights[w] = 0.0
        decision_kernels.play_worlds(masks, inputs.position, inputs.tables, gains)
    if uniform:
        log_weights[:] = 0.0
    return gains, log_weights
