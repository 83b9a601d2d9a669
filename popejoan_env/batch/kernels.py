"""Every rule of the batch engine, compiled (numba): one deal at a time, card by card, over the batch's state.

This is the batch engine's only implementation of the rules; the scalar engine (``engine.Deal``) is the readable
reference, and the differential tests bind the two card for card.  The loop is the scalar ``Deal._apply`` on a
``BatchState``: positions instead of card ids (under ``ace_high`` the Ace sits above the King, so a successor is
always the next position), 64-bit hand masks, the award table per trumps (``Tables``), and the awards written as
events for the game records.  Import it through ``state.compiled()``, which says ``pip install numba`` when numba
is missing.
"""

from __future__ import annotations

import numpy as np

import numba

# Compartments and keys (the same numbers as rules.py and records.py; tests check they agree).
_MATRIMONY, _INTRIGUE, _KING, _QUEEN, _JACK, _GAME = 1, 2, 4, 5, 6, 7
_K_CARD, _K_MAT_OTHER, _K_MAT, _K_INT_OTHER, _K_INT, _K_GAME = range(6)
_TURNUP_CAUSE, _PLAY, _GAME_CAUSE = 0, 1, 2
_PLAYED = -2
_POPE = 21


def _njit(f):  # type: ignore[no-untyped-def]
    return numba.njit(cache=True, nogil=True)(f)


def _inline(f):  # type: ignore[no-untyped-def]
    # Inlined into the loop of every lead: as calls (each counting a reference to every array passed) they made
    # the rollouts 2x slower.
    return numba.njit(cache=True, nogil=True, inline="always")(f)


@_njit
def _popcount(x):  # type: ignore[no-untyped-def]
    n = 0
    while x:
        x &= x - np.uint64(1)
        n += 1
    return n


@_njit
def _lowest(x):  # type: ignore[no-untyped-def]
    p = 0
    while not (x >> np.uint64(p)) & np.uint64(1):
        p += 1
    return p


# The helpers below take arrays, not the state: the kernels read its fields once (``play_rows`` says why).
@_njit
def _take(i, seat, comp, amount, key, cause, record, board, balances, events,
          num_events):  # type: ignore[no-untyped-def]
    board[i, comp] -= amount
    balances[i, seat] += amount
    if record:
        e = num_events[i]
        events[i, e, 0] = key
        events[i, e, 1] = cause
        events[i, e, 2] = seat
        events[i, e, 3] = comp
        events[i, e, 4] = amount
        num_events[i] = e + 1


@_njit
def _pair(i, seat, other, comp, key_other, key_seat, halves, record, board, balances, events,
          num_events):  # type: ignore[no-untyped-def]
    """Matrimony or intrigue when the second card of the pair was just played by ``seat`` (R10)."""
    if other == seat:
        _take(i, seat, comp, board[i, comp], key_seat, _PLAY, record, board, balances, events, num_events)
    elif other >= 0 and halves:
        half = board[i, comp] // 2
        _take(i, other, comp, half, key_other, _PLAY, record, board, balances, events, num_events)
        _take(i, seat, comp, half, key_seat, _PLAY, record, board, balances, events, num_events)


@_inline
def _settle(i, winner, excused, hands, balances, done, to_act):  # type: ignore[no-untyped-def]
    """R11 (or R5 ``ends_deal``): every other seat pays ``winner`` a counter per card held, ``excused`` nothing."""
    players = hands.shape[1]
    for o in range(1, players):
        other = (winner + o) % players
        pay = 0 if other == excused else _popcount(hands[i, other])
        balances[i, other] -= pay
        balances[i, winner] += pay
    done[i] = True
    to_act[i] = -1


@_inline
def _single(h, lead_any):  # type: ignore[no-untyped-def]
    """The hand ``h`` has one legal lead (R7)."""
    if lead_any:
        return _popcount(h) == 1
    suits = 0
    for s in range(4):
        if (h >> np.uint64(13 * s)) & np.uint64(0x1FFF):
            suits += 1
    return suits == 1


@_njit
def play_leads(state, tables, rows, leads, first_is_lead, lone_leads, record):  # type: ignore[no-untyped-def]
    """Deal ``rows[j]``: the holder of position ``leads[j]`` plays it (a lead, or a card due when not
    ``first_is_lead``), then every card due (R8) and, with ``lone_leads``, every lead with one legal card, until
    a seat has a choice or a seat went out (R11), for every j.  Returns the number of cards played."""
    return play_rows(rows, leads, first_is_lead, lone_leads, record, *fields(state, tables))


@_njit
def fields(state, tables):  # type: ignore[no-untyped-def]
    """The fields ``play_rows`` takes after its first five arguments, in its order."""
    return (tables.lead_any, tables.pope_excused, tables.halves, tables.card_of_pos, tables.comp_of_pos,
            state.hands, state.held, state.played, state.dead, state.revealed, state.owner, state.play_order,
            state.led, state.num_plays, state.board, state.balances, state.pair_by, state.to_act, state.leader,
            state.winner, state.done, state.trumps, state.events, state.num_events)


@_njit
def play_rows(rows, leads, first_is_lead, lone_leads, record, lead_any, pope_excused, halves, card_of_pos,
              comp_of_pos, hands, held, played, dead, revealed, owner, order, led, num_plays, board, balances,
              pair_by, to_act, leader, winner, done, trumps, events, num_events):  # type: ignore[no-untyped-def]
    """``play_leads`` over the state's and tables' fields (``fields``).

    Why the arrays one by one: a caller that plays lead after lead (the rollouts) reads the state's fields once
    and calls this per lead.  Reading a field of the state takes a new, atomically counted, reference to its
    array: read per lead, or per deal in this loop, they made it 2-10x slower (measured against the same loop
    over arrays).
    """
    one = np.uint64(1)
    total = 0
    for j in range(len(rows)):
        i = rows[j]
        c = leads[j]
        is_lead = first_is_lead
        seat = owner[i, card_of_pos[c]]
        t = trumps[i]
        while True:
            bit = one << np.uint64(c)
            card = card_of_pos[c]
            hands[i, seat] ^= bit
            held[i] ^= bit
            played[i] |= bit
            owner[i, card] = _PLAYED
            k = num_plays[i]
            num_plays[i] = k + 1
            order[i, card] = k + 1
            if is_lead:
                led[i, card] = True
            total += 1
            comp = comp_of_pos[t * 64 + c]
            if comp >= 0:  # R10
                key = k * 8
                _take(i, seat, comp, board[i, comp], key + _K_CARD, _PLAY, record, board, balances, events,
                      num_events)
                if comp == _KING or comp == _QUEEN or comp == _JACK:
                    pair_by[i, comp - _KING] = seat  # columns 0 K, 1 Q, 2 J
                    if comp != _JACK:
                        _pair(i, seat, pair_by[i, 1 if comp == _KING else 0], _MATRIMONY, key + _K_MAT_OTHER,
                              key + _K_MAT, halves, record, board, balances, events, num_events)
                    if comp != _KING:
                        _pair(i, seat, pair_by[i, 2 if comp == _QUEEN else 1], _INTRIGUE, key + _K_INT_OTHER,
                              key + _K_INT, halves, record, board, balances, events, num_events)
            if hands[i, seat] == 0:  # R11: the game, then a counter per card from each other seat
                _take(i, seat, _GAME, board[i, _GAME], k * 8 + _K_GAME, _GAME_CAUSE, record, board, balances,
                      events, num_events)
                _settle(i, seat, owner[i, _POPE] if pope_excused else -1, hands, balances, done, to_act)
                winner[i] = seat
                break
            is_lead = False
            if c % 13 != 12:  # R8: the successor is the next position of the suit
                nbit = bit << one
                if held[i] & nbit:
                    c += 1
                    seat = owner[i, card_of_pos[c]]
                    continue
                revealed[i] |= nbit & dead[i]
            to_act[i] = seat  # R9: the player of the last card leads
            leader[i] = seat
            if not lone_leads or not _single(hands[i, seat], lead_any):
                break
            c = _lowest(hands[i, seat])
            is_lead = True
    return total


@_njit
def play_lone_leads(state, tables, rows, record):  # type: ignore[no-untyped-def]
    """In each deal of ``rows`` that is not over, the seat to act's lead while it has only one (R7), with what
    follows it (``play_leads``).  Returns the cards played."""
    lone = np.empty(len(rows), dtype=np.int64)
    leads = np.empty(len(rows), dtype=np.int64)
    k = 0
    for j in range(len(rows)):
        i = rows[j]
        if state.done[i]:
            continue
        h = state.hands[i, state.to_act[i]]
        if _single(h, tables.lead_any):
            lone[k] = i
            leads[k] = _lowest(h)
            k += 1
    return play_leads(state, tables, lone[:k], leads[:k], True, True, record)


@_njit
def shuffle(orders, uniforms):  # type: ignore[no-untyped-def]
    """Fisher–Yates on each row of ``orders`` in place: for j = 50 … 1, swap j with floor(u[j]·(j+1))."""
    for i in range(orders.shape[0]):
        for j in range(orders.shape[1] - 1, 0, -1):
            r = int(uniforms[i, j] * (j + 1))
            x = orders[i, j]
            orders[i, j] = orders[i, r]
            orders[i, r] = x


@_njit
def deal(state, tables, slots, orders, dealers, record):  # type: ignore[no-untyped-def]
    """Deal ``orders[j]`` into slot ``slots[j]`` with dealer ``dealers[j]``: R3 deal, R1 dressing, R5 turn-up, R6."""
    hands, owner, board, balances, pos_bit = state.hands, state.owner, state.board, state.balances, tables.pos_bit
    events, num_events = state.events, state.num_events
    dressing, dead_columns = tables.dressing, tables.dead_columns
    players = hands.shape[1]
    dress = 0
    for comp in range(8):
        dress += dressing[comp]
    for j in range(len(slots)):
        i = slots[j]
        d = dealers[j]
        for c in range(52):
            owner[i, c] = tables.empty_owner[c]
            state.play_order[i, c] = 0
            state.led[i, c] = False
        for s in range(players):
            hands[i, s] = 0
        dmask = np.uint64(0)
        for k in range(orders.shape[1]):
            card = orders[j, k]
            seat = tables.seat_table[d, k]
            owner[i, card] = seat
            if seat >= 0:
                hands[i, seat] |= pos_bit[card]
            else:
                dmask |= pos_bit[card]
        h = np.uint64(0)
        for s in range(players):
            h |= hands[i, s]
        state.held[i] = h
        state.dead[i] = dmask
        for c in range(52):
            state.initial_owner[i, c] = owner[i, c]
        for k in range(len(dead_columns)):
            state.dead_cards[i, k] = orders[j, dead_columns[k]]
        up = orders[j, dead_columns[len(dead_columns) - 1]]
        t = up // 13
        state.turnup[i] = up
        state.trumps[i] = t
        state.revealed[i] = pos_bit[up]
        state.played[i] = 0
        state.pair_by[i, 0] = state.pair_by[i, 1] = state.pair_by[i, 2] = -1
        state.num_plays[i] = 0
        state.num_events[i] = 0
        state.winner[i] = -1
        state.done[i] = False
        for comp in range(8):
            state.board_before[i, comp] = board[i, comp]
            board[i, comp] += dressing[comp]
        for s in range(players):
            state.balances_before[i, s] = balances[i, s]
        balances[i, d] -= dress
        comp = tables.turnup_comp[t * 52 + up]
        if comp >= 0:
            _take(i, d, comp, board[i, comp], -16 + _K_CARD, _TURNUP_CAUSE, record, board, balances, events,
                  num_events)
            if up == _POPE and tables.ends_deal:
                _take(i, d, _GAME, board[i, _GAME], -16 + _K_MAT_OTHER, _TURNUP_CAUSE, record, board, balances,
                      events, num_events)
                _settle(i, d, -1, hands, balances, state.done, state.to_act)
                state.leader[i] = -1
                continue
        state.to_act[i] = state.leader[i] = (d + 1) % players


@_njit
def legal_bits(state, lead_any, bits, count):  # type: ignore[no-untyped-def]
    """The legal leads (position bits) of the seat to act in every deal, and how many (0 in a finished deal)."""
    for i in range(state.hands.shape[0]):
        if state.done[i]:
            bits[i] = 0
            count[i] = 0
            continue
        h = state.hands[i, state.to_act[i]]
        if lead_any:
            bits[i] = h
            count[i] = _popcount(h)
            continue
        b = np.uint64(0)
        n = 0
        for s in range(4):
            x = (h >> np.uint64(13 * s)) & np.uint64(0x1FFF)
            if x:
                b |= (x & (~x + np.uint64(1))) << np.uint64(13 * s)
                n += 1
        bits[i] = b
        count[i] = n


@_njit
def pick(bits, count, uniforms, card_of_pos, out):  # type: ignore[no-untyped-def]
    """The floor(u·count)-th legal lead (lowest position first) of each deal, as a card id (-1: none)."""
    for i in range(len(bits)):
        if count[i] == 0:
            out[i] = -1
            continue
        k = int(uniforms[i] * count[i])
        b = bits[i]
        for _ in range(k):
            b &= b - np.uint64(1)
        out[i] = card_of_pos[_lowest(b)]


@_njit
def cards_of_bits(bits, pos_of_card, out):  # type: ignore[no-untyped-def]
    """[k, 52] booleans by card id of position bitmasks."""
    for i in range(len(bits)):
        b = bits[i]
        for c in range(52):
            out[i, c] = (b >> np.uint64(pos_of_card[c])) & np.uint64(1) != 0
