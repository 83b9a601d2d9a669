"""Compiled greedy rollouts (numba): whole deals played out by ``pimc.greedy_lead``, one deal after another.

``playouts`` imports this module (and so numba) when it plays rollouts.  Each lead is ``greedy_lead``'s
choice, read from the batch's position bitmasks (``BatchState.hands``, ``held``) with the key and tie order of
``playouts``'s docstring, and is played by the batch engine's own loop (``batch.kernels.play_rows``: the
sequence, the awards, every lone lead after it, going out), so the cards played are those of ``BatchDeals.step``.
Every function takes the batch's ``state`` and ``tables``.

numba's cache checks a compiled function against its own file only, and ``play_rows`` is compiled
into the functions here: so this module keeps the stamp of ``batch/kernels.py`` next to its cache
and drops its cache when that file changed (``_drop_stale_cache``; they compile again, once).
"""

from __future__ import annotations


import numpy as np

import numba
from popejoan_env.batch import kernels
from popejoan_env.search import kernel_cache
from popejoan_env.batch.kernels import fields, play_rows

_SUIT = np.uint64(0x1FFF)
_DEAD = -1


def _njit(f):  # type: ignore[no-untyped-def]
    return numba.njit(cache=True, nogil=True)(f)


@_njit
def greedy_position(hand, held, lead_any, pope_pos):  # type: ignore[no-untyped-def]
    """Position of ``greedy_lead``'s lead for a seat holding ``hand`` (position bits; ``held``: every seat's
    cards; ``pope_pos``: the Pope's position), -1 for an empty hand."""
    one = np.uint64(1)
    best, best_key = -1, -1
    for s in range(4):
        x = (hand >> np.uint64(13 * s)) & _SUIT
        if not x:
            continue
        others = (held >> np.uint64(13 * s)) & _SUIT
        for j in range(13):
            if not (x >> np.uint64(j)) & one:
                continue
            q = j + 1
            while q < 13 and (x >> np.uint64(q)) & one:
                q += 1
            length = q - j
            c = 13 * s + j
            if q == 13 or not (others >> np.uint64(q)) & one:  # the run ends in a stop: no successor held
                key = 3000 + 16 * length - j
            elif c == pope_pos:
                key = 2000
            else:
                orphan = j == 0 or not (others >> np.uint64(j - 1)) & one
                key = (1000 if orphan else 0) + 16 * (13 - j) + length
            if key > best_key:  # strictly: the first of equal keys (suit order) stays, as in the scalar loop
                best, best_key = c, key
            if not lead_any:
                break  # only the lowest card of a suit may be led
    return best


@_njit
def _play_out(row, lead, record, pope_pos, lead_any, pope_excused, halves, card_of_pos, comp_of_pos, hands, held,
              played, dead, revealed, owner, order, led, num_plays, board, balances, pair_by, to_act, leader, winner,
              done, trumps, events, num_events):  # type: ignore[no-untyped-def]
    """Deal ``row[0]`` to its end by greedy leads, the first one ``lead[0]`` when it is a position (>= 0), over
    the fields of a state (``batch.kernels.fields``: read once per kernel call, ``play_rows`` says why).
    Returns the number of cards played."""
    i = row[0]
    total = 0
    while not done[i]:
        if lead[0] < 0:
            lead[0] = greedy_position(hands[i, to_act[i]], held[i], lead_any, pope_pos)
        total += play_rows(row, lead, True, True, record, lead_any, pope_excused, halves, card_of_pos, comp_of_pos,
                           hands, held, played, dead, revealed, owner, order, led, num_plays, board, balances,
                           pair_by, to_act, leader, winner, done, trumps, events, num_events)
        lead[0] = -1
    return total


@_njit
def greedy_rollouts(state, tables, rows, record):  # type: ignore[no-untyped-def]
    """Play each deal of ``rows`` to its end, every lead ``greedy_position``'s (lone leads included), over
    the state of a ``BatchDeals``.  Returns the number of cards played."""
    return _greedy_rollouts(rows, record, tables.pope_pos, *fields(state, tables))


@_njit
def _greedy_rollouts(rows, record, pope_pos, lead_any, pope_excused, halves, card_of_pos, comp_of_pos, hands, held,
                     played, dead, revealed, owner, order, led, num_plays, board, balances, pair_by, to_act, leader,
                     winner, done, trumps, events, num_events):  # type: ignore[no-untyped-def]
    """``greedy_rollouts`` over the fields of the state, passed as arguments: a loop over locals read from the
    state (or returned by a call) counted a reference to each array at every call inside it, 2.5x slower."""
    row = np.empty(1, dtype=np.int64)
    lead = np.full(1, -1, dtype=np.int64)
    total = 0
    for j in range(len(rows)):
        row[0] = rows[j]
        total += _play_out(row, lead, record, pope_pos, lead_any, pope_excused, halves, card_of_pos,
                           comp_of_pos, hands, held, played, dead, revealed, owner, order, led, num_plays, board,
                           balances, pair_by, to_act, leader, winner, done, trumps, events, num_events)
    return total


@_njit
def world_gains(state, tables, leads, seat, world_hands, world_dead, world_revealed,
                gains):  # type: ignore[no-untyped-def]
    """``gains[k, i]``: counters ``seat`` wins when world ``k`` is dealt into deal 0 of a batch (its hands, dead
    hand and dead cards shown, as position bitmasks; the rest of deal 0's state as it stands), position
    ``leads[i]`` is led and the deal is played out by greedy leads.  Deal 0 is left as the last rollout ended
    it; every other deal of the state is untouched.  Returns the number of cards played."""
    return _world_gains(leads, seat, world_hands, world_dead, world_revealed, gains, tables.pope_pos,
                        *fields(state, tables))


@_njit
def _world_gains(leads, seat, world_hands, world_dead, world_revealed, gains, pope_pos, lead_any, pope_excused,
                 halves, card_of_pos, comp_of_pos, hands, held, played, dead, revealed, owner, order, led, num_plays,
                 board, balances, pair_by, to_act, leader, winner, done, trumps, events,
                 num_events):  # type: ignore[no-untyped-def]
    """``world_gains`` over the fields of the state, passed as arguments (``_greedy_rollouts`` says why)."""
    # Deal 0's state as it stands, restored before each rollout (the world's cards are written over it).
    played0, num_plays0, to_act0, leader0 = played[0], num_plays[0], to_act[0], leader[0]
    winner0, done0 = winner[0], done[0]
    order0, led0, board0 = order[0].copy(), led[0].copy(), board[0].copy()
    balances0, pair_by0, owner0 = balances[0].copy(), pair_by[0].copy(), owner[0].copy()
    world_owner = owner0.copy()
    players = hands.shape[1]
    one = np.uint64(1)
    row = np.zeros(1, dtype=np.int64)
    lead = np.empty(1, dtype=np.int64)
    total = 0
    for k in range(world_hands.shape[0]):
        # The owner table: the cards played (and the 8♦) as they stand, every other card where the world has it.
        world_owner[:] = owner0
        h = np.uint64(0)
        for s in range(players):
            h |= world_hands[k, s]
        for p in range(52):
            bit = one << np.uint64(p)
            if world_dead[k] & bit:
                world_owner[card_of_pos[p]] = _DEAD
            elif h & bit:
                for s in range(players):
                    if world_hands[k, s] & bit:
                        world_owner[card_of_pos[p]] = s
        for i in range(len(leads)):
            for s in range(players):
                hands[0, s] = world_hands[k, s]
            held[0] = h
            dead[0] = world_dead[k]
            revealed[0] = world_revealed[k]
            owner[0, :] = world_owner
            played[0], num_plays[0], to_act[0], leader[0] = played0, num_plays0, to_act0, leader0
            winner[0], done[0] = winner0, done0
            order[0, :] = order0
            led[0, :] = led0
            board[0, :] = board0
            balances[0, :] = balances0
            pair_by[0, :] = pair_by0
            lead[0] = leads[i]
            total += _play_out(row, lead, False, pope_pos, lead_any, pope_excused, halves, card_of_pos, comp_of_pos,
                               hands, held, played, dead, revealed, owner, order, led, num_plays, board, balances,
                               pair_by, to_act, leader, winner, done, trumps, events, num_events)
            gains[k, i] = balances[0, seat] - balances0[seat]
    return total


def _drop_stale_cache() -> None:
    """Flush the cache of the functions that compile ``play_rows`` in when ``batch/kernels.py`` is not the file
    they were cached with (its modification time and size, kept in a stamp file beside the cache)."""
    kernel_cache.drop_stale((_play_out, greedy_rollouts, _greedy_rollouts, world_gains, _world_gains), (kernels,),
                            "playout_kernels.batch_kernels.stamp")


_drop_stale_cache()
