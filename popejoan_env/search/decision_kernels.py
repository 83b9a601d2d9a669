"""Compiled pimc search (numba): one decision's placing order, world draws and greedy rollouts in one call.

``search.search_gains`` (``pimc``'s default path) calls ``search`` once per decision.  Each stage is the code
the other paths run, not a copy of it: the placing order is ``WorldSampler``'s (the constrained cards by their
number of places, then card id; then the free cards), the draws are ``world_kernels``' (``draw_into``, the same
random numbers from the same seed), every lead is ``playout_kernels.greedy_position``'s and every card is played
by the batch engine's own loop (``batch.kernels.play_rows``).  What is new is only how they are strung together:

* one call per decision instead of four (sampler set-up, draws, position, rollouts), with what the view
  says of the worlds and of the position (``search.Sampling``, ``search.Position``: the cards played, the
  board, the balances, who played the trump honours) passed as two small named tuples, not a ``Deal`` turned
  into a ``BatchState``;
* ``play_rows`` compiled *inline* into the rollout loop (``_play_rows``: the same Python function, compiled
  again with ``inline="always"``).  Called per lead, each call counted a reference to each of its twenty-odd
  arrays (atomic increments and decrements): inlined, the rollouts run about 1.7x faster.

numba's cache checks a compiled function against its own file only, and ``play_rows``, ``greedy_position`` and
``draw_into`` are compiled into the functions here: so this module keeps the stamp of those three files next to its
cache and drops its cache when one of them changed (``_drop_stale_cache``; they compile again, once).
"""

from __future__ import annotations


import numpy as np

import numba
from popejoan_env.batch import kernels
from popejoan_env.search import kernel_cache
from popejoan_env.search import playout_kernels, world_kernels
from popejoan_env.search.playout_kernels import greedy_position
from popejoan_env.search.world_kernels import draw_into

OK, NOWHERE, UNPLACED = 0, 1, 2
"""``search``'s outcomes: every world drawn and played out; a card can be nowhere (the view is inconsistent:
nothing drawn); a world ran out of restarts (drawn, not played out: ``worlds.place_by_paths`` places it, then
``play_worlds``)."""

_PLAYED = -2


def _njit(f):  # type: ignore[no-untyped-def]
    return numba.njit(cache=True, nogil=True)(f)


# The batch engine's loop itself (its Python function), compiled into the rollouts rather than called.  No cache of
# its own: it is only ever compiled inside ``play_worlds`` (a cache here would share batch/kernels.py's files).
_play_rows = numba.njit(nogil=True, inline="always")(kernels.play_rows.py_func)


@_njit
def placing_order(unseen, excluded, hidden_dead, forced, forced_seat, uniform, cards,
                  allowed):  # type: ignore[no-untyped-def]
    """``WorldSampler``'s placing order: fill ``cards`` with the constrained cards (fewest places first, then by
    card id) followed by the free ones (by card id), and ``allowed[j]`` with constrained card ``j``'s slots as
    bits (slot ``k - 1`` is relative seat ``k``, the last slot the unseen dead cards); ``excluded[k]`` is what
    ``inference.cannot_hold`` rules out for seat ``k``.  Returns the number of constrained cards, -1 when a card
    can be nowhere.  ``uniform``: every card is free."""
    one = np.uint64(1)
    players = len(excluded)
    anywhere = unseen if (hidden_dead or uniform) else np.uint64(0)
    if not uniform:
        for k in range(1, players):
            anywhere &= ~excluded[k]
        if forced_seat > 0:
            anywhere &= ~(one << np.uint64(forced))
    dead_slot = np.int64(1) << (players - 1)
    bits = np.zeros(64, dtype=np.int64)
    count = np.zeros(64, dtype=np.int64)
    for c in range(64):
        if not (unseen >> np.uint64(c)) & one or (anywhere >> np.uint64(c)) & one:
            continue
        where = dead_slot if hidden_dead else np.int64(0)
        for k in range(1, players):
            if not (excluded[k] >> np.uint64(c)) & one:
                where |= np.int64(1) << (k - 1)
        if c == forced and forced_seat > 0:
            where = np.int64(1) << (forced_seat - 1)  # the card due is in the hand of the seat to act (R8)
        if not where:
            return -1
        bits[c] = where
        n = 0
        for s in range(players):
            n += (where >> s) & 1
        count[c] = n
    m = 0
    for n in range(1, players + 1):  # a sort by (places, card id), as the Python sampler's
        for c in range(64):
            if count[c] == n:
                cards[m] = c
                allowed[m] = bits[c]
                m += 1
    constrained = m
    for c in range(64):
        if (anywhere >> np.uint64(c)) & one:
            cards[m] = c
            m += 1
    return constrained


@_njit
def search(seed, sampling, position, tables, masks, log_weights, placed, gains):  # type: ignore[no-untyped-def]
    """One decision (``search.Sampling``, ``search.Position``, the batch's ``Tables``): the placing order
    (``placing_order``), ``masks.shape[0]`` worlds drawn from ``seed`` into ``masks``, ``log_weights`` and
    ``placed`` (``world_kernels.draw_worlds``), then, when every world is placed, ``gains`` filled as
    ``play_worlds`` fills it.  Returns ``OK``, ``NOWHERE`` or ``UNPLACED``."""
    unseen = sampling.unseen
    cards = np.empty(64, dtype=np.int64)
    allowed = np.empty(64, dtype=np.int64)
    constrained = placing_order(unseen, sampling.excluded, sampling.hidden_dead, sampling.forced,
                                sampling.forced_seat, sampling.uniform, cards, allowed)
    if constrained < 0:
        return NOWHERE
    total = 0
    for c in range(64):
        if (unseen >> np.uint64(c)) & np.uint64(1):
            total += 1
    state = np.empty(1, dtype=np.uint64)
    state[0] = np.uint64(seed)
    draw_into(state, cards[:total], allowed[:constrained], sampling.room, sampling.max_restarts, sampling.log_of,
          sampling.log_factorial, masks, log_weights, placed)
    for w in range(len(placed)):
        if not placed[w]:
            return UNPLACED
    play_worlds(masks, position, tables, gains)
    return OK


@numba.njit(cache=True, nogil=True, inline="always")
def _positions(mask, pos_of_card, ace_high):  # type: ignore[no-untyped-def]
    """A card-id bitmask as a position bitmask."""
    if not ace_high:
        return mask
    out = np.uint64(0)
    for c in range(52):
        if (mask >> np.uint64(c)) & np.uint64(1):
            out |= np.uint64(1) << np.uint64(pos_of_card[c])
    return out


@_njit
def play_worlds(masks, position, tables, gains):  # type: ignore[no-untyped-def]
    """``gains[k, i]``: counters relative seat 0 wins when position ``position.leads[i]`` is led in world ``k`` and
    the deal is played out by greedy leads (``playout_kernels.world_gains``, the same rollouts).  World ``k`` is
    the ``position`` (``search.Position``) with seat 0 holding ``own_hand``, relative seat ``s > 0`` the cards of
    ``masks[k, s - 1]`` and the dead hand ``masks[k, -1] | known_dead``.  Returns the number of cards played."""
    # The fields read once, into locals: the loop below calls play_rows with them (``play_rows`` says why).
    own_hand, known_dead, played, shown = position.own_hand, position.known_dead, position.played, position.shown
    board, balances, pair_by, trumps, leads = (position.board, position.balances, position.pair_by, position.trumps,
                                               position.leads)
    pos_of_card, card_of_pos, comp_of_pos, empty_owner = (tables.pos_of_card, tables.card_of_pos, tables.comp_of_pos,
                                                          tables.empty_owner)
    ace_high, lead_any, pope_excused, halves, pope_pos = (tables.ace_high, tables.lead_any, tables.pope_excused,
                                                          tables.halves, tables.pope_pos)
    worlds, slots = masks.shape
    players = slots
    one = np.uint64(1)
    # Deal 0 of a one-deal state, written over for each rollout; only the fields the loop reads need a start.
    hands = np.zeros((1, players), dtype=np.uint64)
    held = np.zeros(1, dtype=np.uint64)
    played_now = np.zeros(1, dtype=np.uint64)
    dead = np.zeros(1, dtype=np.uint64)
    revealed = np.zeros(1, dtype=np.uint64)
    owner = np.zeros((1, 52), dtype=np.int8)
    order = np.zeros((1, 52), dtype=np.int8)
    led = np.zeros((1, 52), dtype=np.bool_)
    num_plays = np.zeros(1, dtype=np.int64)
    board_now = np.zeros((1, 8), dtype=np.int64)
    balances_now = np.zeros((1, players), dtype=np.int64)
    pair_now = np.zeros((1, 3), dtype=np.int64)
    to_act = np.zeros(1, dtype=np.int64)
    leader = np.zeros(1, dtype=np.int64)
    winner = np.full(1, -1, dtype=np.int64)
    done = np.zeros(1, dtype=np.bool_)
    trumps_now = np.full(1, trumps, dtype=np.int64)
    events = np.zeros((1, 16, 5), dtype=np.int64)  # the dtype of BatchState.events: one compiled play_rows
    num_events = np.zeros(1, dtype=np.int64)
    row = np.zeros(1, dtype=np.int64)
    lead = np.empty(1, dtype=np.int64)
    # The owner table of the position: every card dead (the 8♦ not in the pack) but the cards played.
    base_owner = empty_owner.copy()
    for c in range(52):
        if (played >> np.uint64(c)) & one:
            base_owner[c] = _PLAYED
    played_pos = _positions(played, pos_of_card, ace_high)
    world_owner = np.empty(52, dtype=np.int8)
    world_hands = np.empty(players, dtype=np.uint64)
    total = 0
    for k in range(worlds):
        world_owner[:] = base_owner
        h = np.uint64(0)
        for s in range(players):
            cards = own_hand if s == 0 else masks[k, s - 1]
            for c in range(52):
                if (cards >> np.uint64(c)) & one:
                    world_owner[c] = s
            world_hands[s] = _positions(cards, pos_of_card, ace_high)
            h |= world_hands[s]
        dead_cards = masks[k, slots - 1] | known_dead
        world_dead = _positions(dead_cards, pos_of_card, ace_high)
        # R9: the dead cards shown are the turn-up and the successors of the cards played that lie in the dead
        # hand (``shown`` holds both); the loop only adds to them.
        world_revealed = _positions(shown & dead_cards, pos_of_card, ace_high)
        for i in range(len(leads)):
            for s in range(players):
                hands[0, s] = world_hands[s]
                balances_now[0, s] = balances[s]
            held[0] = h
            played_now[0] = played_pos
            dead[0] = world_dead
            revealed[0] = world_revealed
            owner[0, :] = world_owner
            num_plays[0] = 0
            winner[0] = -1
            done[0] = False
            for comp in range(8):
                board_now[0, comp] = board[comp]
            for r in range(3):
                pair_now[0, r] = pair_by[r]
            lead[0] = leads[i]
            while not done[0]:
                if lead[0] < 0:
                    lead[0] = greedy_position(hands[0, to_act[0]], held[0], lead_any, pope_pos)
                total += _play_rows(row, lead, True, True, False, lead_any, pope_excused, halves, card_of_pos,
                                    comp_of_pos, hands, held, played_now, dead, revealed, owner, order, led,
                                    num_plays, board_now, balances_now, pair_now, to_act, leader, winner, done,
                                    trumps_now, events, num_events)
                lead[0] = -1
            gains[k, i] = balances_now[0, 0] - balances[0]
    return total


def _drop_stale_cache() -> None:
    """Flush this module's cache when ``batch/kernels.py``, ``playout_kernels.py`` or ``world_kernels.py`` (compiled
    into its functions) is not the file they were cached with (modification times and sizes, in a stamp file)."""
    kernel_cache.drop_stale((placing_order, search, _positions, play_worlds), (kernels, playout_kernels, world_kernels),
                            "decision_kernels.sources.stamp")


_drop_stale_cache()
