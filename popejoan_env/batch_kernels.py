"""Compiled loops of the batch engine (numba): one deal at a time, card by card, over the batch's arrays.

``batch.BatchDeals`` imports this module (and so numba) only when it runs the compiled path
(``engine="numba"``, or ``"auto"`` with numba installed) and uses its numpy path otherwise; both follow the scalar engine card for card (the differential test runs both).  The
loop is the scalar ``Deal._apply`` on the batch's state: positions instead of card ids (under
``ace_high`` the Ace sits above the King, so a successor is always the next position), 64-bit hand
masks, the award table per trumps, and the events the numpy path writes (``BatchDeals.events``).
"""

from __future__ import annotations

import numpy as np

import numba

# Compartments and keys (the same numbers as rules.py and batch.py; tests check they agree).
_MATRIMONY, _INTRIGUE, _KING, _QUEEN, _JACK, _GAME = 1, 2, 4, 5, 6, 7
_K_CARD, _K_MAT_OTHER, _K_MAT, _K_INT_OTHER, _K_INT, _K_GAME = range(6)
_PLAY, _GAME_CAUSE = 1, 2
_PLAYED = -2
_POPE = 21


def _njit(f):  # type: ignore[no-untyped-def]
    return numba.njit(cache=True, nogil=True)(f)


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


@_njit
def _take(i, seat, comp, amount, key, cause, board, balances, events, num_events, record):  # type: ignore[no-untyped-def]
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
def _pair(i, seat, other, comp, key_other, key_seat, halves, board, balances, events, num_events, record):  # type: ignore[no-untyped-def]
    if other == seat:
        _take(i, seat, comp, board[i, comp], key_seat, _PLAY, board, balances, events, num_events, record)
    elif other >= 0 and halves:
        half = board[i, comp] // 2
        _take(i, other, comp, half, key_other, _PLAY, board, balances, events, num_events, record)
        _take(i, seat, comp, half, key_seat, _PLAY, board, balances, events, num_events, record)


@_njit
def play_leads(rows, leads, first_is_lead, lone_leads, lead_any, pope_excused, halves, record,
               hands, held, played, dead, revealed, owner, order, led, num_plays, board, balances,
               pair_by, to_act, leader, winner, done, trumps, card_of_pos, comp_of_pos, events, num_events):  # type: ignore[no-untyped-def]
    """Deal ``rows[j]``: the seat to act plays position ``leads[j]`` (a lead, or a card due when not
    ``first_is_lead``), then every card due (R8) and, with ``lone_leads``, every lead with one legal card,
    until a seat has a choice or a seat went out (R11).  Returns the number of cards played."""
    one = np.uint64(1)
    players = hands.shape[1]
    total = 0
    for j in range(len(rows)):
        i = rows[j]
        c = leads[j]
        seat = owner[i, card_of_pos[c]]
        is_lead = first_is_lead
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
                _take(i, seat, comp, board[i, comp], key + _K_CARD, _PLAY, board, balances, events, num_events, record)
                if comp == _KING or comp == _QUEEN or comp == _JACK:
                    rank = comp - _KING  # 0 K, 1 Q, 2 J
                    pair_by[i, rank] = seat
                    if comp != _JACK:
                        _pair(i, seat, pair_by[i, 1 if comp == _KING else 0], _MATRIMONY, key + _K_MAT_OTHER,
                              key + _K_MAT, halves, board, balances, events, num_events, record)
                    if comp != _KING:
                        _pair(i, seat, pair_by[i, 2 if comp == _QUEEN else 1], _INTRIGUE, key + _K_INT_OTHER,
                              key + _K_INT, halves, board, balances, events, num_events, record)
            if hands[i, seat] == 0:  # R11: the game, then a counter per card from each other seat
                _take(i, seat, _GAME, board[i, _GAME], k * 8 + _K_GAME, _GAME_CAUSE, board, balances, events,
                      num_events, record)
                holder = owner[i, _POPE] if pope_excused else -1
                for o in range(1, players):
                    other = (seat + o) % players
                    pay = 0 if other == holder else _popcount(hands[i, other])
                    balances[i, other] -= pay
                    balances[i, seat] += pay
                done[i] = True
                winner[i] = seat
                to_act[i] = -1
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
            if not lone_leads:
                break
            h = hands[i, seat]
            if lead_any:
                single = _popcount(h) == 1
            else:
                suits = 0
                for s in range(4):
                    if (h >> np.uint64(13 * s)) & np.uint64(0x1FFF):
                        suits += 1
                single = suits == 1
            if not single:
                break
            c = _lowest(h)
            is_lead = True
    return total


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
def deal(slots, orders, dealers, seat_table, dead_columns, pos_bit, empty_owner, turnup_comp, dressing,
         ends_deal, record, hands, held, played, dead, revealed, owner, initial, order, led, num_plays,
         dead_cards, board, balances, board_before, balances_before, pair_by, to_act, leader, winner, done,
         turnup, trumps, events, num_events):  # type: ignore[no-untyped-def]
    """Deal ``orders[j]`` into slot ``slots[j]`` with dealer ``dealers[j]``: R3 deal, R1 dressing, R5 turn-up."""
    players = hands.shape[1]
    dress = 0
    for comp in range(8):
        dress += dressing[comp]
    for j in range(len(slots)):
        i = slots[j]
        d = dealers[j]
        for c in range(52):
            owner[i, c] = empty_owner[c]
            order[i, c] = 0
            led[i, c] = False
        for s in range(players):
            hands[i, s] = 0
        dmask = np.uint64(0)
        for k in range(orders.shape[1]):
            card = orders[j, k]
            seat = seat_table[d, k]
            owner[i, card] = seat
            if seat >= 0:
                hands[i, seat] |= pos_bit[card]
            else:
                dmask |= pos_bit[card]
        h = np.uint64(0)
        for s in range(players):
            h |= hands[i, s]
        held[i] = h
        dead[i] = dmask
        for c in range(52):
            initial[i, c] = owner[i, c]
        for k in range(len(dead_columns)):
            dead_cards[i, k] = orders[j, dead_columns[k]]
        up = orders[j, dead_columns[len(dead_columns) - 1]]
        t = up // 13
        turnup[i] = up
        trumps[i] = t
        revealed[i] = pos_bit[up]
        played[i] = 0
        pair_by[i, 0] = pair_by[i, 1] = pair_by[i, 2] = -1
        num_plays[i] = 0
        num_events[i] = 0
        winner[i] = -1
        done[i] = False
        for comp in range(8):
            board_before[i, comp] = board[i, comp]
            board[i, comp] += dressing[comp]
        for s in range(players):
            balances_before[i, s] = balances[i, s]
        balances[i, d] -= dress
        comp = turnup_comp[t * 52 + up]
        if comp >= 0:
            _take(i, d, comp, board[i, comp], -16 + _K_CARD, 0, board, balances, events, num_events, record)
            if up == _POPE and ends_deal:
                _take(i, d, _GAME, board[i, _GAME], -16 + _K_MAT_OTHER, 0, board, balances, events, num_events,
                      record)
                for o in range(1, players):
                    other = (d + o) % players
                    pay = _popcount(hands[i, other])
                    balances[i, other] -= pay
                    balances[i, d] += pay
                done[i] = True
                to_act[i] = -1
                leader[i] = -1
                continue
        to_act[i] = leader[i] = (d + 1) % players


@_njit
def legal_bits(hands, to_act, done, lead_any, bits, count):  # type: ignore[no-untyped-def]
    """The legal leads (position bits) of the seat to act in every deal, and how many (0 in a finished deal)."""
    for i in range(hands.shape[0]):
        if done[i]:
            bits[i] = 0
            count[i] = 0
            continue
        h = hands[i, to_act[i]]
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
