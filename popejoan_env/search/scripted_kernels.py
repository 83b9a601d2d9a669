"""The scripted players' reading of a seat's view, compiled: ``stops_first`` and ``pool_hunter`` for a whole batch.

``compiled_leads`` runs one compiled loop (numba) over the deals of a ``BatchDeals`` that gives, for the seat to
act in each, the card the scalar player would lead (the very same choices, tested against
``players.make_player``), reading the batch's arrays as ``players.stops`` and ``inference`` read a ``SeatView``;
``pool_hunter_values`` gives that loop's values of each lead.  The two players' ``act_batch`` call it (their own
modules own their batched form and pass their weights); nothing here imports a player.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from popejoan_env.batch import BatchDeals
from popejoan_env.cards import EIGHT_DIAMONDS, JACK, KING, NUM_CARD_IDS, POPE, QUEEN
from popejoan_env.checks import brief
from popejoan_env.engine import AWARD_OF
from popejoan_env.errors import MissingDependencyError, PopeJoanError
from popejoan_env.rules import INTRIGUE_C, MATRIMONY_C

__all__ = ["PLAYERS", "compiled_leads", "pool_hunter_values"]

PLAYERS = ("stops_first", "pool_hunter")
"""The players the compiled loop reads for, by its player number."""
_AWARD_OF = np.array(AWARD_OF, dtype=np.int64)
"""[trumps, card] the compartment a card takes when played, or -1."""


# ---------------------------------------------------------------------- compiled (numba)
def _scripted_kernel(  # type: ignore[no-untyped-def]
        player, rows, owner, initial, led, revealed, dealer, to_act, sizes, board, trumps, legal, pos_of_card,
        card_of_pos, award_of, lead_any, dealer_sees, dead_size, consts, weights, out, values):
    """``stops_first`` (player 0) or ``pool_hunter`` (player 1) for each deal of ``rows``, one deal at a time,
    card by card: the scalar players' reading (``players.stops``, ``inference``) and arithmetic, operation for
    operation.  ``consts``: the 8♦, the Pope, the King, Queen and Jack ranks, matrimony and intrigue; ``weights``:
    pool_hunter's DENY, LEAD, CARD, ORPHAN and CLEAR weights; ``values`` (pool_hunter, when it has a row per deal):
    each candidate's ``lead_values`` by card id."""
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
            if len(values):
                values[i, card] = value
            if value > best_value or value == best_value and card < card_of_pos[best_p]:
                best_value, best_p = value, p
        out[i] = card_of_pos[best_p]


_COMPILED: list[Any] = []
"""The compiled ``_scripted_kernel``, made on first use (importing numba costs ~0.5 s)."""


def _compiled() -> Any:
    """``_scripted_kernel`` compiled by numba (``MissingDependencyError`` without numba)."""
    if not _COMPILED:
        try:
            import numba
        except ImportError:
            raise MissingDependencyError("the scripted players' batched leads are a compiled loop and need numba: "
                                         "pip install numba") from None
        _COMPILED.append(numba.njit(cache=True, nogil=True)(_scripted_kernel))
    return _COMPILED[0]


_KERNEL_CONSTS = np.array([EIGHT_DIAMONDS, POPE, KING, QUEEN, JACK, MATRIMONY_C, INTRIGUE_C], dtype=np.int64)
_NO_WEIGHTS = np.zeros(5)


def _run(player: str, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray, weights: np.ndarray,
         values: np.ndarray) -> np.ndarray:
    """The compiled loop's card for ``player`` in the deals ``rows`` (``values`` filled when it has rows)."""
    if player not in PLAYERS:
        raise PopeJoanError(f"compiled_leads plays {' or '.join(PLAYERS)}, not {brief(player)}")
    out = np.empty(len(rows), dtype=np.int64)
    rules = batch.rules
    _compiled()(PLAYERS.index(player), np.asarray(rows, dtype=np.int64), batch.owner,
                batch.initial_owner, batch.led, batch.revealed_dead, batch.dealer, batch.to_act, batch.hand_sizes,
                batch.board, batch.trumps, np.ascontiguousarray(legal), batch.pos_of_card, batch.card_of_pos,
                _AWARD_OF, rules.lead == "any", rules.dealer_sees_dead_hand, batch.dead_cards.shape[1],
                _KERNEL_CONSTS, np.asarray(weights, dtype=np.float64), out, values)
    return out


def compiled_leads(player: str, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray,
                   *,
                   weights: np.ndarray = _NO_WEIGHTS) -> np.ndarray:
    """``stops_first``'s or ``pool_hunter``'s (``player``) card in the deals ``rows`` of ``batch`` for the seat to
    act (``legal``: their legal cards [k, 52]), through the compiled loop: the scalar player's very choice.
    ``weights``: pool_hunter's DENY, LEAD, CARD, ORPHAN and CLEAR weights (``pool_hunter.WEIGHTS``)."""
    return _run(player, batch, rows, legal, weights, np.empty((0, NUM_CARD_IDS)))


def pool_hunter_values(batch: BatchDeals, rows: np.ndarray, legal: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """[k, 52] by card id: ``pool_hunter.lead_values`` of each candidate lead (-inf elsewhere), computed by the
    compiled loop with the same floating-point operations in the same order, so the very same numbers."""
    values = np.full((len(rows), NUM_CARD_IDS), -np.inf)
    _run("pool_hunter", batch, rows, legal, weights, values)
    return values
