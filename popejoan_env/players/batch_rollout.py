"""Batched greedy rollouts for ``pimc``: every sampled world × candidate lead played out at once.

``greedy_gains(worlds, candidates)`` is the counters each candidate wins in
each world when every seat then leads by ``greedy_lead``; ``greedy_gains_at``
is the same with the worlds given as card masks of one position (no ``Deal``
per world).  Under the batch engine's numba path the first world becomes a
one-deal ``BatchDeals`` and one compiled call (``rollout_kernels.world_gains``)
deals each world into it, leads each candidate and plays the deal to its end,
every card by the engine's own loop.  Without numba the worlds × candidates
become one batch (``worlds_batch``: row ``k * C + i`` is world ``k``, then led
candidate ``i``, built from the first world and each world's cards, not deal
by deal), every row's lead is computed at once (``greedy_leads``) and played
with ``BatchDeals.step`` until every deal is over (``rollout_batch``).  The
lead is the scalar one exactly, ties included, so the counters are those of
``pimc.rollout`` (the tests compare them position by position on both paths).

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

from popejoan_env.batch import BatchDeals
from popejoan_env.cards import CARD_NAMES, NUM_CARD_IDS, PACK, PACK_MASK, POPE, CardMask, cards_of
from popejoan_env.checks import as_int, brief, is_int
from popejoan_env.engine import PLAYED, Deal, check_seat, legal_leads, successors_of
from popejoan_env.errors import IllegalActionError, InvalidDealError

__all__ = ["greedy_gains", "greedy_gains_at", "greedy_leads", "rollout_batch", "worlds_batch"]

_J = np.arange(13, dtype=np.int16)
_BEYOND = np.full((1, 4, 1), 2 * 13 + 1, dtype=np.int16)  # past a suit's top: no successor, a stop
_BIG = np.int16(1 << 14)
_POSITIONS = np.arange(NUM_CARD_IDS).reshape(4, 13)


def greedy_leads(batch: BatchDeals, rows: np.ndarray) -> np.ndarray:
    """The card id ``pimc.greedy_lead`` leads for the seat to act in each deal of ``rows`` (none may be over)."""
    k = len(rows)
    owner = batch.owner[rows]
    if batch.rules.ace_high:
        owner = owner[:, batch.card_of_pos]
    owner = owner.reshape(k, 4, 13)                                    # by position, suit by suit
    mine = owner == batch.to_act[rows].astype(np.int8)[:, None, None]
    held = owner >= 0
    # code[j] = 2 q + s for the first position q >= j outside the seat's hand (q = 13 past the top of the suit),
    # s = 1 when nobody holds q: the run from j has q - j cards and ends in a stop when s = 1.
    code = np.concatenate([np.where(mine, _BIG, 2 * _J + ~held), np.broadcast_to(_BEYOND, (k, 4, 1))], axis=2)
    code = np.minimum.accumulate(code[:, :, ::-1], axis=2)[:, :, :0:-1]
    length = (code >> 1) - _J
    stops = (code & 1).astype(bool)
    orphan = np.ones((k, 4, 13), dtype=np.int16)
    orphan[:, :, 1:] = ~held[:, :, :-1]
    key = np.where(stops, 3000 + 16 * length - _J,
                   np.where(_POSITIONS == batch.pos_of_card[POPE], 2000, 1000 * orphan + 16 * (13 - _J) + length))
    if batch.rules.lead == "any":
        legal = mine
    else:
        legal = mine & (np.cumsum(mine, axis=2, dtype=np.int8) == 1)  # the lowest card held of each suit
    key = np.where(legal, key, -1).reshape(k, NUM_CARD_IDS)
    return batch.card_of_pos[np.argmax(key, axis=1)]


def rollout_batch(batch: BatchDeals) -> None:
    """Play every deal of a batch (made with ``auto_reset`` off) to its end, each lead by ``greedy_lead``: in
    compiled loops (``rollout_kernels``) when the batch runs the numba engine, else by ``greedy_leads`` and
    ``BatchDeals.step``."""
    if batch.auto_reset:
        raise InvalidDealError("rollout_batch plays deals to their end: it needs a batch made with auto_reset off")
    live = np.nonzero(~batch.done)[0]
    if batch.engine == "numba":
        from popejoan_env.players import rollout_kernels  # imports numba: only where the compiled path runs

        batch.cards_played += rollout_kernels.greedy_rollouts(
            live, *_rules_flags(batch), batch.record, batch._hands, batch._held, batch._played, batch._dead,
            batch._revealed, batch.owner, batch.play_order, batch.led, batch.num_plays, batch.board,
            batch.balances, batch.pair_by, batch.to_act, batch.leader, batch.winner, batch.done, batch.trumps,
            batch.card_of_pos, batch._comp_of_pos, batch.events, batch.num_events)
        batch.advance()  # reports the finished deals, as step does
        return
    while len(live):
        batch.step(greedy_leads(batch, live), live)
        live = np.nonzero(~batch.done)[0]


def _rules_flags(batch: BatchDeals) -> tuple[bool, bool, bool, int]:
    """The rules the compiled rollouts read: lead any card, 9♦ holder excused, pairs split, the Pope's position."""
    rules = batch.rules
    return rules.lead == "any", rules.pope_excused, rules.pair_split == "halves", int(batch.pos_of_card[POPE])


def worlds_batch(worlds: Sequence[Deal], repeat: int = 1, lone_leads: bool = True,
                 engine: str = "auto") -> BatchDeals:
    """The worlds of one position where a lead is due (as one ``WorldSampler`` gives them) as a batch, each
    ``repeat`` times in a row (row ``k * repeat + i`` is world ``k``), as they stand: the arrays of
    ``BatchDeals.from_deals(..., lone_leads=False)`` of that list; ``lone_leads`` applies to later steps.

    The worlds must share everything but where the unplayed cards lie (checked: rules, seats, dealer, seat
    to act, leader, turn-up, cards played and plays, board and balances), so the batch is the first world's
    position with each world's hands, dead hand and owner table written in: a few array operations instead
    of a deal by deal load.  ``engine`` is that of ``from_deals``.
    """
    if as_int(repeat) is None or repeat < 1:
        raise InvalidDealError(f"repeat must be a positive integer, got {brief(repeat)}")
    return _repeat(_base(worlds, engine), worlds, repeat, lone_leads)


def _repeat(base: BatchDeals, worlds: Sequence[Deal], repeat: int, lone_leads: bool = True) -> BatchDeals:
    """``worlds_batch`` from the first world's one-deal batch (``_base``)."""
    rows = np.repeat(np.arange(len(worlds)), repeat)
    batch = base.take(np.zeros(len(rows), dtype=np.int64))
    hands = _positions(base, np.array([w.hands for w in worlds], dtype=np.uint64))
    owner = np.array([w.owner for w in worlds], dtype=np.int8)
    batch._hands[:] = hands[rows]
    batch._held[:] = np.bitwise_or.reduce(hands, axis=1)[rows]
    batch._dead[:] = _positions(base, np.array([w.dead_mask for w in worlds], dtype=np.uint64))[rows]
    batch._revealed[:] = _positions(base, np.array([w.revealed_dead for w in worlds], dtype=np.uint64))[rows]
    batch.owner[:] = owner[rows]
    # A card in a hand or dead now was there as dealt; a card played, where the first world's history says.
    batch.initial_owner[:] = np.where(owner == PLAYED, base.initial_owner, owner)[rows]
    batch.dead_cards[:] = np.array([w.dead for w in worlds], dtype=np.int8)[rows]
    batch.lone_leads = bool(lone_leads)
    return batch


def _base(worlds: Sequence[Deal], engine: str) -> BatchDeals:
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
    return BatchDeals.from_deals([first], lone_leads=False, engine=engine)


def _shared(world: Deal) -> tuple[object, ...]:
    """What the worlds of one position have in common (a batch of worlds takes it from the first)."""
    return (world.rules, world.players, world.dealer, world.to_act, world.forced, world.leader, world.done,
            world.turnup, world.played_mask, world.plays, world.board, world.balances, world.board_before,
            world.balances_before, len(world.dead))


def _positions(batch: BatchDeals, masks: np.ndarray) -> np.ndarray:
    """Card-id bitmasks (uint64, any shape) as the batch's position bitmasks."""
    if not batch.rules.ace_high:
        return masks  # positions are card ids
    planes = np.unpackbits(masks.astype("<u8").reshape(-1, 1).view(np.uint8), axis=1, bitorder="little")
    packed = np.zeros((len(planes), 8), dtype=np.uint8)
    packed[:, :7] = np.packbits(planes[:, batch.card_of_pos], axis=1, bitorder="little")
    return packed.view("<u8")[:, 0].astype(np.uint64).reshape(masks.shape)


def greedy_gains(worlds: Sequence[Deal], candidates: Sequence[int], seat: int = 0, engine: str = "auto") -> np.ndarray:
    """[worlds, candidates] counters ``seat`` gains when candidate ``i`` is led in world ``k`` and the deal is
    played out by ``greedy_lead`` for every seat: ``pimc.rollout`` of each pair, all at once.

    The worlds are positions of one deal where a lead is due (as ``WorldSampler`` gives them, see
    ``worlds_batch``); they are copied, not changed.  A candidate that is not a legal lead raises
    ``IllegalActionError``.  ``engine`` is the ``BatchDeals`` engine (``auto``, ``numpy`` or ``numba``): under
    numba every rollout is one compiled loop over a one-deal batch (``rollout_kernels.world_gains``).
    """
    if not worlds or not candidates:
        raise InvalidDealError("greedy_gains needs at least one world and one candidate lead")
    base = _base(worlds, engine)
    seat = check_seat(seat, base.players, "seat")
    if base.engine == "numba":
        hands = np.array([w.hands for w in worlds], dtype=np.uint64)
        dead = np.array([w.dead_mask for w in worlds], dtype=np.uint64)
        return _compiled_gains(base, worlds[0], hands, dead, candidates, seat)
    c = len(candidates)
    batch = _repeat(base, worlds, c)
    start = batch.balances[:, seat].copy()
    batch.step(np.tile(np.asarray(candidates, dtype=np.int64), len(worlds)))
    rollout_batch(batch)
    return (batch.balances[:, seat] - start).reshape(len(worlds), c)


def greedy_gains_at(position: Deal, hands: Sequence[Sequence[CardMask]] | np.ndarray,
                    dead: Sequence[CardMask] | np.ndarray, candidates: Sequence[int], seat: int = 0,
                    engine: str = "auto") -> np.ndarray:
    """``greedy_gains`` of the worlds that are ``position`` (a lead due) with its unplayed cards placed otherwise:
    world ``k`` gives seat ``s`` the cards of mask ``hands[k][s]`` and the dead hand those of ``dead[k]``.

    Under numba no ``Deal`` is made per world (a search that draws only where the hidden cards lie skips
    building one); every world is checked to place each unplayed card once, in hands of the position's sizes
    and a dead hand of its size holding the turn-up (else ``InvalidDealError``).
    """
    if not candidates:
        raise InvalidDealError("greedy_gains_at needs at least one world and one candidate lead")
    base = _base([position], engine)
    seat = check_seat(seat, base.players, "seat")
    hand_masks, dead_masks = _placements(position, hands, dead)
    if base.engine == "numba":
        return _compiled_gains(base, position, hand_masks, dead_masks, candidates, seat)
    turnup = position.turnup
    worlds = [position.rearranged(h, [c for c in cards_of(d) if c != turnup] + [turnup])
              for h, d in zip(hand_masks.tolist(), dead_masks.tolist())]
    return greedy_gains(worlds, candidates, seat, engine)


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


def _compiled_gains(base: BatchDeals, position: Deal, hands: np.ndarray, dead: np.ndarray,
                    candidates: Sequence[int], seat: int) -> np.ndarray:
    """The gains under numba: every world (card masks) x candidate played out in deal 0 of ``base`` (``position``
    as a one-deal batch), compiled."""
    from popejoan_env.players import rollout_kernels  # imports numba: only where the compiled path runs

    _check_leads(position, hands[:, position.to_act].tolist(), candidates)
    # R9: the dead cards shown are the turn-up and each played card's successor that lies in the dead hand.
    shown = np.uint64(successors_of(position.played_mask, position.rules.ace_high))
    revealed = np.uint64(1 << position.turnup) | (shown & dead)
    gains = np.empty((len(hands), len(candidates)), dtype=np.int64)
    rollout_kernels.world_gains(
        base.pos_of_card[np.asarray(candidates, dtype=np.int64)], seat, _positions(base, hands),
        _positions(base, dead), _positions(base, revealed), *_rules_flags(base), base._hands, base._held,
        base._played, base._dead, base._revealed, base.owner, base.play_order, base.led, base.num_plays, base.board,
        base.balances, base.pair_by, base.to_act, base.leader, base.winner, base.done, base.trumps,
        base.card_of_pos, base._comp_of_pos, base.events, base.num_events, gains)
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
