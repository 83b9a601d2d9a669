"""Batched greedy rollouts for ``pimc``: every sampled world × candidate lead played out at once.

``greedy_gains(worlds, candidates)`` is the counters each candidate wins in
each world when every seat then leads by ``greedy_lead``; ``greedy_gains_at``
is the same with the worlds given as card masks of one position (no ``Deal``
per world).  The first world becomes a one-deal ``BatchDeals`` and one
compiled call (``playout_kernels.world_gains``) deals each world into it,
leads each candidate and plays the deal to its end, every card by the
engine's own loop.  The lead is the scalar one exactly, ties included, so the
counters are those of ``pimc.rollout`` (the tests compare them position by
position).  ``drawn_gains`` is ``greedy_gains_at`` for the worlds a
``WorldSampler.draw_many`` drew: the position's one-deal state without a
``BatchDeals`` around it, and no per-world check of the placements, which the
sampler keeps (``pimc``'s default path before ``search.search_gains``, which
does the same in one compiled call and is tested against it).  ``worlds_batch`` gives the worlds
× candidates as one batch (``BatchDeals.with_worlds``), for players that play
them out otherwise.

The key, per card the seat to act may lead, in *positions* (``BatchDeals``:
the Ace above the King under ``ace_high``, so a successor is the next
position of the suit, and ``j`` below is a card's order in its suit): a run
of ``L`` cards of its own from ``j`` that ends in a stop scores
``3000 + 16 L - j``; else the Pope ``2000``; else ``1000`` if nobody can lead
up to it (``j = 0`` or the card below is held by no seat) plus
``16 (13 - j) + L``.  Two cards of one suit never tie, and the scalar loop
keeps the first of equal keys in card-id order, which is suit order: so the
first maximum over the positions, suit by suit, is the scalar choice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from popejoan_env.batch import BatchDeals, BatchState, Tables, position_masks
from popejoan_env.batch.records import state_of_deals
from popejoan_env.batch.state import tables_of
from popejoan_env.cards import CARD_NAMES, PACK, PACK_MASK, CardMask
from popejoan_env.checks import as_int, brief, is_int
from popejoan_env.engine import Deal, check_seat, legal_leads, successors_of
from popejoan_env.errors import IllegalActionError, InvalidDealError

__all__ = ["drawn_gains", "greedy_gains", "greedy_gains_at", "rollout_batch", "worlds_batch"]


def rollout_batch(batch: BatchDeals) -> None:
    """Play every deal of a batch (made with ``auto_reset`` off) to its end, each lead by ``greedy_lead``, in
    compiled loops (``playout_kernels.greedy_rollouts``); the finished deals are reported as ``step`` does."""
    from popejoan_env.search import playout_kernels  # imports numba: only where rollouts are played

    if batch.auto_reset:
        raise InvalidDealError("rollout_batch plays deals to their end: it needs a batch made with auto_reset off")
    live = np.nonzero(~batch.done)[0]
    batch.cards_played += playout_kernels.greedy_rollouts(batch.state, batch.tables, live, batch.record)
    batch.advance()


def worlds_batch(worlds: Sequence[Deal], repeat: int = 1, lone_leads: bool = True) -> BatchDeals:
    """The worlds of one position where a lead is due (as one ``WorldSampler`` gives them) as a batch, each
    ``repeat`` times in a row (row ``k * repeat + i`` is world ``k``), as they stand: the arrays of
    ``BatchDeals.from_deals(..., lone_leads=False)`` of that list; ``lone_leads`` applies to later steps.

    The worlds must share everything but where the unplayed cards lie (checked: rules, seats, dealer, seat
    to act, leader, turn-up, cards played and plays, board and balances), so the batch is the first world's
    position with each world's hands, dead hand and owner table written in (``BatchDeals.with_worlds``): a
    few array operations instead of a deal by deal load.
    """
    if as_int(repeat) is None or repeat < 1:
        raise InvalidDealError(f"repeat must be a positive integer, got {brief(repeat)}")
    return _base(worlds).with_worlds(worlds, repeat, lone_leads)


def _base(worlds: Sequence[Deal]) -> BatchDeals:
    """The first world as a one-deal batch, once the worlds are checked to be one position waiting for a lead."""
    if not worlds:
        raise InvalidDealError("a batch of worlds needs at least one world")
    first = worlds[0]
    if first.done or first.forced >= 0:
        raise InvalidDealError("a batch of worlds evaluates leads: its worlds must wait for a lead (no card due, "
                               "not over)")
    shared = _shared(first)
    if any(_shared(w) != shared for w in worlds):
        raise InvalidDealError("the worlds of a batch must be one position (same rules, seats, dealer, seat to "
                               "act, turn-up, cards played, board and balances) with the unplayed cards placed "
                               "otherwise")
    # No lone lead played at loading: that of the first world need not be one in another.
    return BatchDeals.from_deals([first], lone_leads=False)


def _shared(world: Deal) -> tuple[object, ...]:
    """What the worlds of one position have in common (a batch of worlds takes it from the first)."""
    return (world.rules, world.players, world.dealer, world.to_act, world.forced, world.leader, world.done,
            world.turnup, world.played_mask, world.plays, world.board, world.balances, world.board_before,
            world.balances_before, len(world.dead))


def greedy_gains(worlds: Sequence[Deal], candidates: Sequence[int], seat: int = 0) -> np.ndarray:
    """[worlds, candidates] counters ``seat`` gains when candidate ``i`` is led in world ``k`` and the deal is
    played out by ``greedy_lead`` for every seat: ``pimc.rollout`` of each pair, all at once.

    The worlds are positions of one deal where a lead is due (as ``WorldSampler`` gives them, see
    ``worlds_batch``); they are copied, not changed.  A candidate that is not a legal lead raises
    ``IllegalActionError``.  Every rollout is one compiled loop over a one-deal batch
    (``playout_kernels.world_gains``).
    """
    if not worlds or not candidates:
        raise InvalidDealError("greedy_gains needs at least one world and one candidate lead")
    base = _base(worlds)
    seat = check_seat(seat, base.players, "seat")
    hands = np.array([w.hands for w in worlds], dtype=np.uint64)
    dead = np.array([w.dead_mask for w in worlds], dtype=np.uint64)
    _check_leads(worlds[0], hands[:, worlds[0].to_act].tolist(), candidates)
    return _gains(base.state, base.tables, worlds[0], hands, dead, candidates, seat)


def greedy_gains_at(position: Deal, hands: Sequence[Sequence[CardMask]] | np.ndarray,
                    dead: Sequence[CardMask] | np.ndarray, candidates: Sequence[int], *, seat: int = 0) -> np.ndarray:
    """``greedy_gains`` of the worlds that are ``position`` (a lead due) with its unplayed cards placed otherwise:
    world ``k`` gives seat ``s`` the cards of mask ``hands[k][s]`` and the dead hand those of ``dead[k]``.

    No ``Deal`` is made per world (a search that draws only where the hidden cards lie skips building one);
    every world is checked to place each unplayed card once, in hands of the position's sizes and a dead hand
    of its size holding the turn-up (else ``InvalidDealError``).
    """
    if not candidates:
        raise InvalidDealError("greedy_gains_at needs at least one world and one candidate lead")
    base = _base([position])
    seat = check_seat(seat, base.players, "seat")
    hand_masks, dead_masks = _placements(position, hands, dead)
    _check_leads(position, hand_masks[:, position.to_act].tolist(), candidates)
    return _gains(base.state, base.tables, position, hand_masks, dead_masks, candidates, seat)


def drawn_gains(position: Deal, hands: np.ndarray, dead: np.ndarray, candidates: Sequence[int]) -> np.ndarray:
    """``greedy_gains_at`` for seat 0 of worlds ``WorldSampler.draw_many`` drew for ``position`` (uint64 arrays
    ``[worlds, players]`` and ``[worlds]``), with the checks a search's own draws need: the shapes, a position
    waiting for a lead, and the candidates legal leads for the hand to act in each world.  That each world
    places every unplayed card once is the sampler's to keep (``tests/test_worlds.py``), not checked again
    here: ``greedy_gains_at`` checks it, for worlds from elsewhere."""
    players = position.players
    if not isinstance(hands, np.ndarray) or not isinstance(dead, np.ndarray) or hands.dtype != np.uint64 \
            or dead.dtype != np.uint64 or dead.ndim != 1 or not len(dead) or hands.shape != (len(dead), players):
        raise InvalidDealError(f"drawn worlds are uint64 arrays [worlds, {players}] and [worlds], got "
                               f"{brief(hands)} and {brief(dead)}")
    if not candidates:
        raise InvalidDealError("drawn_gains needs at least one candidate lead")
    if position.done or position.forced >= 0:
        raise InvalidDealError("drawn worlds are evaluated at a lead: the position must wait for one (no card due, "
                               "not over)")
    to_act = hands[:, position.to_act]
    # A search's seat to act is its observer, with one hand in every world: one check then, else world by world.
    _check_leads(position, [int(to_act[0])] if (to_act == to_act[0]).all() else to_act.tolist(), candidates)
    # The position's state alone, without a BatchDeals around it (no card due, no lone lead to play at loading).
    state = state_of_deals([position])
    return _gains(state, tables_of(position.rules, players), position, hands, dead, candidates, 0)


def _placements(position: Deal, hands: object, dead: object) -> tuple[np.ndarray, np.ndarray]:
    """``greedy_gains_at``'s worlds as uint64 card masks [k, players] and [k], checked."""
    players = position.players
    wrong = InvalidDealError(f"a world is {players} hands and a dead hand as integer card masks: hands must be "
                             f"[worlds, {players}] and dead [worlds], got {brief(hands)} and {brief(dead)}")
    try:
        h, d = np.asarray(hands), np.asarray(dead)
    except (TypeError, ValueError):  # ragged lists
        raise wrong from None
    if d.ndim == 1 and not len(d) and not h.size:
        raise InvalidDealError("greedy_gains_at needs at least one world and one candidate lead")
    if h.dtype.kind not in "iu" or d.dtype.kind not in "iu" or d.ndim != 1 or h.shape != (len(d), players):
        raise wrong
    h, d = h.astype(np.uint64), d.astype(np.uint64)
    cards = np.concatenate([h, d[:, None]], axis=1)
    counts = np.unpackbits(cards.astype("<u8")[..., None].view(np.uint8), axis=-1).sum(axis=-1)
    sizes = [*position.hand_sizes, len(position.dead)]
    ok = (counts == sizes).all(axis=1) & ((d >> np.uint64(position.turnup)) & np.uint64(1) == 1)
    ok &= np.bitwise_or.reduce(cards, axis=1) == np.uint64(PACK_MASK & ~position.played_mask)
    if not ok.all():
        raise InvalidDealError(
            f"world {int(np.argmin(ok))} does not place the position's unplayed cards: each exactly once, the "
            f"hands of sizes {list(position.hand_sizes)} and the dead hand of {len(position.dead)} with the turn-up")
    return h, d


def _gains(state: BatchState, tables: Tables, position: Deal, hands: np.ndarray, dead: np.ndarray,
           candidates: Sequence[int], seat: int) -> np.ndarray:
    """Every world (card masks) x candidate played out in deal 0 of ``state`` (``position`` as a one-deal batch),
    compiled; the callers have checked the candidates (``_check_leads``)."""
    from popejoan_env.search import playout_kernels  # imports numba: only where rollouts are played

    # R9: the dead cards shown are the turn-up and each played card's successor that lies in the dead hand.
    shown = np.uint64(successors_of(position.played_mask, position.rules.ace_high))
    revealed = np.uint64(1 << position.turnup) | (shown & dead)
    gains = np.empty((len(hands), len(candidates)), dtype=np.int64)
    playout_kernels.world_gains(
        state, tables, tables.pos_of_card[np.asarray(candidates, dtype=np.int64)], seat,
        position_masks(tables, hands), position_masks(tables, dead), position_masks(tables, revealed), gains)
    return gains


def _check_leads(position: Deal, hands: Sequence[CardMask], candidates: Sequence[int]) -> None:
    """Every candidate is a legal lead for each of ``hands`` (the seat to act's, world by world), else
    ``IllegalActionError`` naming the first that is not."""
    lead_any, ace_high = position.rules.lead == "any", position.rules.ace_high
    legal_of: dict[int, list[int]] = {}
    for k, hand in enumerate(hands):
        legal = legal_of.get(hand)
        if legal is None:
            legal = legal_of[hand] = legal_leads(hand, lead_any, ace_high)
        for card in candidates:
            if not (is_int(card) and card in legal):
                name = CARD_NAMES[card] if is_int(card) and card in PACK else f"card id {brief(card)}"
                raise IllegalActionError(f"world {k}: seat {position.to_act} cannot lead {name}; "
                                         f"legal: {[CARD_NAMES[x] for x in legal]}")
