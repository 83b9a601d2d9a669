"""Scripted players for a whole batch at once: ``random``, ``lowest``, ``stops_first`` and ``pool_hunter``.

Each function takes a ``BatchDeals``, the deals to answer and their legal cards, and gives the card the scalar
player would lead in each (the very same choices, tested against ``players.make_player``); ``compiled_leads``
runs ``stops_first`` and ``pool_hunter`` as a compiled loop when numba is installed.  ``envs.sb3_vec_env.BatchVecEnv``
plays its opponents with them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from popejoan_env.batch import BatchDeals
from popejoan_env.cards import EIGHT_DIAMONDS, JACK, KING, NUM_CARD_IDS, POPE, QUEEN
from popejoan_env.checks import brief
from popejoan_env.engine import AWARD_OF, DEAD, PLAYED
from popejoan_env.errors import PopeJoanError
from popejoan_env.players.pool_hunter import (
    CARD_VALUE, CLEAR_WEIGHT, DENY_WEIGHT, LEAD_VALUE, ORPHAN_VALUE,
)
from popejoan_env.rules import INTRIGUE_C, MATRIMONY_C

__all__ = ["compiled_available", "compiled_leads", "lowest_leads", "pool_hunter_leads", "pool_hunter_values", "random_leads",
           "stops_first_leads"]


# ---------------------------------------------------------------------- vectorised opponents
def random_leads(legal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``random``'s card in each row of ``legal`` ([k, 52] bool): a lone legal card at once, else
    ``legal[rng.integers(count)]`` in card order — the draws ``RandomPlayer`` sharing ``rng`` makes row by row."""
    count = legal.sum(axis=1)
    pick = np.zeros(len(legal), dtype=np.int64)
    multi = count > 1
    if multi.any():
        pick[multi] = rng.integers(count[multi])
    return np.argmax(legal.cumsum(axis=1) > pick[:, None], axis=1)


_ORDER = np.arange(13)
"""Position in suit, 0 = lowest (``stops.order_in_suit``)."""
_IN_PACK = np.arange(NUM_CARD_IDS) != EIGHT_DIAMONDS
_AWARD_OF = np.array(AWARD_OF, dtype=np.int64)
"""[trumps, card] the compartment a card takes when played, or -1."""


def _by_position(batch: BatchDeals, cards: np.ndarray) -> np.ndarray:
    """[k, 52] by card id -> [k, 4, 13] by suit and position in suit (the Ace on top under ``ace_high``)."""
    return cards[:, batch.card_of_pos].reshape(len(cards), 4, 13)


def lowest_leads(batch: BatchDeals, legal: np.ndarray) -> np.ndarray:
    """``lowest``'s card in each row of ``legal``: the lowest legal card by rank in suit (Aces first), then card id."""
    order = batch.pos_of_card % 13
    key = np.where(legal, order * NUM_CARD_IDS + np.arange(NUM_CARD_IDS), np.iinfo(np.int64).max)
    return np.argmin(key, axis=1)


class _Reading(NamedTuple):
    """What the scripted players read from a seat's view (``players.stops``), by suit and position in suit."""

    hand: np.ndarray       # [k, 4, 13] the observer's cards
    gone: np.ndarray       # [k, 4, 13] cards nobody can play any more (``stops.gone``); the 8♦ among them
    run: np.ndarray        # [k, 4, 13] the run a lead of each card plays from the hand (``stops.run_from``)
    stops: np.ndarray      # [k, 4, 13] whether that run ends in a known stop
    orphan: np.ndarray     # [k, 4, 13] nobody can lead up to the card (``stops.orphans``)
    candidate: np.ndarray  # [k, 4, 13] the leads worth considering (``stops.lead_candidates``)
    n_unseen: np.ndarray   # [k] how many cards the observer cannot place (``SeatView.unseen``)
    sees_dead: np.ndarray  # [k] the observer sees the whole dead hand
    n_known_dead: np.ndarray  # [k] how many dead cards are shown to all (``SeatView.known_dead``)
    mine: np.ndarray       # [k, 52] by card id: cards the observer played


def _read(batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> _Reading:
    """The scripted players' reading of the seat to act in the deals ``rows`` (``legal``: its legal cards)."""
    k = len(rows)
    rules = batch.rules
    seat = batch.to_act[rows]
    owner = batch.owner[rows].astype(np.int64)
    hand = owner == seat[:, None]
    played = owner == PLAYED
    known_dead = batch.revealed_dead[rows]
    seen_dead = known_dead
    sees = np.zeros(k, dtype=bool)
    if rules.dealer_sees_dead_hand:
        sees = seat == batch.dealer[rows]
        seen_dead = np.where(sees[:, None], owner == DEAD, known_dead)
    unseen = ~(hand | played | seen_dead) & _IN_PACK
    # inference.inferred of every other seat: below its leads (lowest_of_suit), everything when it has no cards.
    players = batch.players
    initial = batch.initial_owner[rows]
    inferred = np.broadcast_to((batch.hand_sizes[rows] == 0)[:, :, None], (k, players, NUM_CARD_IDS)).copy()
    if rules.lead != "any":
        led_by = batch.led[rows][:, None, :] & (initial[:, None, :] == np.arange(players)[None, :, None])
        pos = led_by[:, :, batch.card_of_pos].reshape(k, players, 4, 13)
        above = np.zeros_like(pos)
        above[..., :12] = np.logical_or.accumulate(pos[..., :0:-1], axis=-1)[..., ::-1]
        inferred |= above.reshape(k, players, NUM_CARD_IDS)[:, :, batch.pos_of_card]
    inferred[np.arange(k), seat] = True  # the observer is not among the others
    gone = played | seen_dead | (unseen & inferred.all(axis=1))
    gone[:, EIGHT_DIAMONDS] = True  # not in the pack: the 7♦ has no successor, the 9♦ no predecessor
    h, g = _by_position(batch, hand), _by_position(batch, gone)
    run = np.zeros((k, 4, 14), dtype=np.int64)  # run[..., p]: cards of the hand from position p up, unbroken
    for p in range(12, -1, -1):
        run[..., p] = np.where(h[..., p], run[..., p + 1] + 1, 0)
    run = run[..., :13]
    after = np.minimum(_ORDER + run, 13)
    stops = np.take_along_axis(np.concatenate([g, np.ones((k, 4, 1), bool)], axis=-1), after, axis=-1)
    orphan = np.concatenate([np.ones((k, 4, 1), bool), g[..., :12]], axis=-1)
    candidate = _by_position(batch, legal)
    if rules.lead == "any":  # the bottom of each run in hand
        below_held = np.concatenate([np.zeros((k, 4, 1), bool), h[..., :12]], axis=-1)
        bottoms = candidate & ~below_held
        none = ~bottoms.any(axis=(1, 2))
        bottoms[none] = candidate[none]
        candidate = bottoms
    return _Reading(h, g, run, stops, orphan, candidate, unseen.sum(axis=1), sees, known_dead.sum(axis=1),
                    played & (initial == seat[:, None]))


def stops_first_leads(batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``stops_first``'s card in the deals ``rows`` of ``batch`` for the seat to act (``legal``: their legal cards):
    ``stops_first_key`` of every candidate as one integer, the highest played."""
    r = _read(batch, rows, legal)
    card = batch.card_of_pos.reshape(4, 13)
    tier = np.where(r.stops, 3, np.where(card == POPE, 2, np.where(r.orphan, 1, 0)))
    score = (((tier * 14 + np.where(r.stops, r.run, 0)) * 13 + (12 - _ORDER)) * 14 + np.where(r.stops, 0, r.run)) \
        * NUM_CARD_IDS + (NUM_CARD_IDS - 1 - card)
    best = np.argmax(np.where(r.candidate, score, -1).reshape(len(rows), NUM_CARD_IDS), axis=1)
    return batch.card_of_pos[best]


def pool_hunter_leads(batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``pool_hunter``'s card in the deals ``rows`` for the seat to act: the best value, ties to the lowest card id."""
    values = pool_hunter_values(batch, rows, legal)
    return np.argmax(values == values.max(axis=1, keepdims=True), axis=1)


def pool_hunter_values(batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """[k, 52] by card id: ``pool_hunter.lead_values`` of each candidate lead (-inf elsewhere), computed with the
    same floating-point operations in the same order, so the very same numbers."""
    r = _read(batch, rows, legal)
    k = len(rows)
    # Every candidate lead as one element: f = (row * 4 + suit) * 13 + position.
    f = np.flatnonzero(r.candidate.reshape(-1))
    rs, p = f // 13, f % 13
    row = rs // 4
    board = batch.board[rows]
    trumps = batch.trumps[rows]
    comp = _by_position(batch, _AWARD_OF[trumps]).reshape(k, 52)       # compartment or -1, by position
    prize = np.where(comp >= 0, np.take_along_axis(board, np.maximum(comp, 0), axis=1), 0).reshape(-1)
    hand, gone = r.hand.reshape(-1), r.gone.reshape(-1)
    run = r.run.reshape(-1)[f]
    end = p + run                                                        # the position after the run
    # The run's own prizes and the pairs it completes (whole counters: exact in any order).
    total = np.zeros((k * 4, 14), dtype=np.int64)
    total[:, 1:] = prize.reshape(k * 4, 13).cumsum(axis=1)
    value = (total[rs, end] - total[rs, p]).astype(np.float64)
    in_trumps = rs % 4 == trumps[row]
    held: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for rank in (KING, QUEEN, JACK):
        c = trumps[row] * 13 + rank
        at = batch.pos_of_card[c] % 13
        new = in_trumps & (p <= at) & (at < end)
        held[rank] = new, new | r.mine[row, c]
    (new_k, k_), (new_q, q_), (new_j, j_) = held[KING], held[QUEEN], held[JACK]
    value += np.where(k_ & q_ & (new_k | new_q), board[row, MATRIMONY_C], 0)
    value += np.where(q_ & j_ & (new_q | new_j), board[row, INTRIGUE_C], 0)
    # Walk on up the suit past the run.
    hidden = np.where(r.sees_dead, 0, batch.dead_cards.shape[1] - r.n_known_dead)
    in_hand = np.where(r.n_unseen > 0, 1.0 - hidden / np.maximum(r.n_unseen, 1), 0.0)[row]
    reach = np.ones(len(f))
    alive = np.ones(len(f), dtype=bool)
    nxt = end
    base = rs * 13
    for _ in range(13):
        at = base + np.minimum(nxt, 12)
        alive &= (nxt < 13) & ~gone[at] & (reach > 0.05)
        if not alive.any():
            break
        mine = alive & hand[at]
        theirs = alive & ~hand[at]
        worth = prize[at]
        value = np.where(mine, value + reach * worth, value)
        reach = np.where(theirs, reach * in_hand, reach)
        value = np.where(theirs, value - DENY_WEIGHT * reach * worth, value)
        nxt = nxt + 1
    if batch.rules.lead != "any":  # clearing the cards below one's own prizes
        below = np.zeros(len(f), dtype=np.int64)
        for q in range(13):
            left = hand[base + q] & ~((p <= q) & (q < end))
            value = np.where(left, value + CLEAR_WEIGHT * prize[base + q] / (1 + below), value)
            below += left
    value = np.where(r.stops.reshape(-1)[f], value + LEAD_VALUE, value)
    value += CARD_VALUE * run
    value = np.where(r.orphan.reshape(-1)[f], value + ORPHAN_VALUE, value)
    value -= 0.01 * p
    out = np.full((k, NUM_CARD_IDS), -np.inf)
    out[row, batch.card_of_pos[(rs % 4) * 13 + p]] = value
    return out


# ---------------------------------------------------------------------- compiled (numba)
def _scripted_kernel(  # type: ignore[no-untyped-def]
        player, rows, owner, initial, led, revealed, dealer, to_act, sizes, board, trumps, legal, pos_of_card,
        card_of_pos, award_of, lead_any, dealer_sees, dead_size, consts, weights, out):
    """``stops_first`` (player 0) or ``pool_hunter`` (player 1) for each deal of ``rows``, one deal at a time,
    card by card: the numpy functions' reading and arithmetic (the scalar players', operation for operation).
    ``consts``: the 8♦, the Pope, the King, Queen and Jack ranks, matrimony and intrigue; ``weights``:
    pool_hunter's DENY, LEAD, CARD, ORPHAN and CLEAR weights."""
    eight, pope, king, queen, jack, matrimony, intrigue = consts
    deny, lead_value, card_value, orphan_value, clear = weights
    players = sizes.shape[1]
    h = np.zeros(52, dtype=np.bool_)        # by position: held, gone
    g = np.zeros(52, dtype=np.bool_)
    run = np.zeros(52, dtype=np.int64)
    cand = np.zeros(52, dtype=np.bool_)
    unseen = np.zeros(52, dtype=np.bool_)   # by card id
    mine = np.zeros(52, dtype=np.bool_)     # by card id
    top_led = np.zeros((players, 4), dtype=np.int64)
    prize = np.zeros(52, dtype=np.int64)
    ranks = np.array([king, queen, jack])
    for i in range(len(rows)):
        r = rows[i]
        seat = to_act[r]
        sees = dealer_sees and seat == dealer[r]
        top_led[:, :] = -1
        n_unseen = 0
        n_known = 0
        for c in range(52):
            p = pos_of_card[c]
            o = owner[r, c]
            seen = (o == -1) if sees else revealed[r, c]  # owner -1: dead, -2: played (engine.DEAD, PLAYED)
            n_known += revealed[r, c]
            h[p] = o == seat
            g[p] = o == -2 or seen
            unseen[c] = not (h[p] or g[p]) and c != eight
            n_unseen += unseen[c]
            mine[c] = o == -2 and initial[r, c] == seat
            if led[r, c] and not lead_any:
                j = initial[r, c]
                top_led[j, p // 13] = max(top_led[j, p // 13], p % 13)
            cand[p] = legal[i, c]
        for c in range(52):  # inference.must_be_dead: unseen, and every other seat is inferred not to hold it
            if unseen[c]:
                p = pos_of_card[c]
                nowhere = True
                for j in range(players):
                    if j != seat and sizes[r, j] > 0 and p % 13 >= top_led[j, p // 13]:
                        nowhere = False
                        break
                g[p] = nowhere
        g[pos_of_card[eight]] = True
        for suit in range(4):
            length = 0
            for q in range(12, -1, -1):
                length = length + 1 if h[suit * 13 + q] else 0
                run[suit * 13 + q] = length
        if lead_any:  # players.stops.lead_candidates: the bottom of each run in hand
            left = False
            for p in range(52):
                if cand[p] and p % 13 > 0 and h[p - 1]:
                    cand[p] = False
                left = left or cand[p]
            if not left:
                for c in range(52):
                    cand[pos_of_card[c]] = legal[i, c]
        t = trumps[r]
        in_hand = 0.0
        if player == 1:
            for p in range(52):
                comp = award_of[t, card_of_pos[p]]
                prize[p] = board[r, comp] if comp >= 0 else 0
            hidden = 0 if sees else dead_size - n_known
            in_hand = 1.0 - hidden / n_unseen if n_unseen else 0.0
        best_p, best_score, best_value = -1, -1, -np.inf
        for p in range(52):
            if not cand[p]:
                continue
            q, length = p % 13, run[p]
            stops = g[p + length] if q + length < 13 else True
            orphan = q == 0 or g[p - 1]
            card = card_of_pos[p]
            if player == 0:  # stops_first_key as one integer
                if stops:
                    score = ((3 * 14 + length) * 13 + (12 - q)) * 14 * 52 + 51 - card
                else:
                    tier = 2 if card == pope else 1 if orphan else 0
                    score = (((tier * 14) * 13 + (12 - q)) * 14 + length) * 52 + 51 - card
                if score > best_score:
                    best_score, best_p = score, p
                continue
            whole = 0  # pool_hunter.lead_values: the run's prizes and the pairs it completes, whole counters
            for x in range(p, p + length):
                whole += prize[x]
            if p // 13 == t:
                new = np.zeros(3, dtype=np.bool_)
                has = np.zeros(3, dtype=np.bool_)
                for n in range(3):
                    c = t * 13 + ranks[n]
                    new[n] = q <= pos_of_card[c] % 13 < q + length
                    has[n] = new[n] or mine[c]
                if has[0] and has[1] and (new[0] or new[1]):
                    whole += board[r, matrimony]
                if has[1] and has[2] and (new[1] or new[2]):
                    whole += board[r, intrigue]
            value = float(whole)
            reach = 1.0
            x, qx = p + length, q + length
            while qx < 13 and not g[x] and reach > 0.05:
                if h[x]:
                    value = value + reach * prize[x]
                else:
                    reach = reach * in_hand
                    value = value - deny * reach * prize[x]
                x += 1
                qx += 1
            if not lead_any:
                below = 0
                for y in range(p - q, p - q + 13):
                    if h[y] and not p <= y < p + length:
                        value = value + clear * prize[y] / (1 + below)
                        below += 1
            if stops:
                value = value + lead_value
            value = value + card_value * length
            if orphan:
                value = value + orphan_value
            value = value - 0.01 * q
            if value > best_value or value == best_value and card < card_of_pos[best_p]:
                best_value, best_p = value, p
        out[i] = card_of_pos[best_p]


_COMPILED: list[Any] = []
"""The compiled ``_scripted_kernel``, made on first use (importing numba costs ~0.5 s)."""


def _compiled() -> Any:
    """``_scripted_kernel`` compiled by numba, or None when numba is not installed."""
    if not _COMPILED:
        try:
            import numba
        except ImportError:  # the numpy functions above play instead
            _COMPILED.append(None)
        else:
            _COMPILED.append(numba.njit(cache=True, nogil=True)(_scripted_kernel))
    return _COMPILED[0]

_KERNEL_CONSTS = np.array([EIGHT_DIAMONDS, POPE, KING, QUEEN, JACK, MATRIMONY_C, INTRIGUE_C], dtype=np.int64)
_KERNEL_WEIGHTS = np.array([DENY_WEIGHT, LEAD_VALUE, CARD_VALUE, ORPHAN_VALUE, CLEAR_WEIGHT], dtype=np.float64)


def compiled_available() -> bool:
    """True when numba is installed (``compiled_leads`` can run)."""
    return _compiled() is not None


def compiled_leads(player: str, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``stops_first_leads`` or ``pool_hunter_leads`` (``player``) through the compiled loop; needs numba."""
    if player not in ("stops_first", "pool_hunter"):
        raise PopeJoanError(f"compiled_leads plays stops_first or pool_hunter, not {brief(player)}")
    kernel = _compiled()
    if kernel is None:
        raise PopeJoanError("compiled_leads needs numba: pip install numba (or use stops_first_leads / "
                            "pool_hunter_leads)")
    out = np.empty(len(rows), dtype=np.int64)
    rules = batch.rules
    kernel(("stops_first", "pool_hunter").index(player), np.asarray(rows, dtype=np.int64), batch.owner,
              batch.initial_owner, batch.led, batch.revealed_dead, batch.dealer, batch.to_act, batch.hand_sizes,
              batch.board, batch.trumps, np.ascontiguousarray(legal), batch.pos_of_card, batch.card_of_pos,
              _AWARD_OF, rules.lead == "any", rules.dealer_sees_dead_hand, batch.dead_cards.shape[1],
              _KERNEL_CONSTS, _KERNEL_WEIGHTS, out)
    return out
