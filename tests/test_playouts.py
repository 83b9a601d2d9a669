"""Randomised playouts: invariants after every play, over thousands of deals and whole sessions.

Each play is checked against a small reference written here from RULES.md
(successors, legal leads, payouts, settlement), independent of the engine's
tables: the cards stay a partition of the pack, counters are conserved (E16),
the seat to act always has a legal card until the deal ends, and every deal ends.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import check_partition, random_choice
from popejoan_env import Deal, MODERN, Rules, Session, VICTORIAN
from popejoan_env.cards import PACK_MASK, POPE
from popejoan_env.rules import (
    ACE_C, GAME_C, INTRIGUE_C, JACK_C, KING_C, MATRIMONY_C, POPE_C, QUEEN_C,
)

EIGHT_D = 20
MIXED = {
    "ace_high": Rules(ace_high=True),
    "all_round": Rules(deal="all_round"),
    "halves": Rules(pair_split="halves"),
    "victorian_mixed": VICTORIAN.replace(ace_high=True, pair_split="halves", pope_excused=False),
    "all_round_any": Rules(deal="all_round", lead="any", pope_turnup="ends_deal"),
}


# ----------------------------------------------------------------------------- the reference
def ref_successor(card: int, ace_high: bool) -> int | None:
    """The next higher card of the same suit in the 51-card pack, or None (R8/R9, E18)."""
    suit, rank = divmod(card, 13)
    order = list(range(1, 13)) + [0] if ace_high else list(range(13))
    i = order.index(rank)
    if i == 12:
        return None
    nxt = suit * 13 + order[i + 1]
    return None if nxt == EIGHT_D else nxt


def ref_leads(hand: int, rules: Rules) -> list[int]:
    """Legal leads from a hand (R7)."""
    cards = [c for c in range(52) if (hand >> c) & 1]
    if rules.lead == "any":
        return cards
    out = []
    for suit in range(4):
        in_suit = [c for c in cards if c // 13 == suit]
        if in_suit:
            out.append(min(in_suit, key=lambda c: 13 if rules.ace_high and c % 13 == 0 else c % 13))
    return out


def ref_outcome(deal: Deal) -> tuple[list, list]:
    """Awards and payments of a finished deal recomputed from its hands, turn-up and plays."""
    rules = deal.rules
    board = [b + d for b, d in zip(deal.board_before, rules.dressing)]
    trumps = deal.turnup // 13
    honour = {trumps * 13: ACE_C, trumps * 13 + 12: KING_C, trumps * 13 + 11: QUEEN_C, trumps * 13 + 10: JACK_C}
    honour[POPE] = POPE_C
    awards: list = []
    payments: list = []
    n = deal.players

    def take(cause: str, seat: int, comp: int, amount: int | None = None) -> None:
        amount = board[comp] if amount is None else amount
        board[comp] -= amount
        awards.append((cause, seat, comp, amount))

    hands = list(deal.initial_hands)
    if deal.turnup in honour:
        take("turnup", deal.dealer, honour[deal.turnup])
        if deal.turnup == POPE and rules.pope_turnup == "ends_deal":
            take("turnup", deal.dealer, GAME_C)
            for k in range(1, n):
                seat = (deal.dealer + k) % n
                payments.append((seat, deal.dealer, hands[seat].bit_count()))
            return awards, payments
    by: dict[int, int] = {}
    pairs = {KING_C: [(QUEEN_C, MATRIMONY_C)], QUEEN_C: [(KING_C, MATRIMONY_C), (JACK_C, INTRIGUE_C)],
             JACK_C: [(QUEEN_C, INTRIGUE_C)]}
    for seat, card in deal.plays:
        hands[seat] &= ~(1 << card)
        comp = honour.get(card)
        if comp is not None:
            take("play", seat, comp)
            by[comp] = seat
            for other_comp, pair in pairs.get(comp, []):
                other = by.get(other_comp)
                if other == seat:
                    take("play", seat, pair)
                elif other is not None and rules.pair_split == "halves":
                    half = board[pair] // 2
                    take("play", other, pair, half)
                    take("play", seat, pair, half)
    winner = deal.plays[-1][0]
    take("game", winner, GAME_C)
    pope_holder = next((s for s in range(n) if (hands[s] >> POPE) & 1), None)
    for k in range(1, n):
        seat = (winner + k) % n
        excused = rules.pope_excused and seat == pope_holder
        payments.append((seat, winner, 0 if excused else hands[seat].bit_count()))
    return awards, payments


# ----------------------------------------------------------------------------- the checks
def play_out(deal: Deal, rng: np.random.Generator, full: bool = True) -> None:
    """Play random legal cards to the end, checking the invariants after every play."""
    rules = deal.rules
    start = sum(deal.balances_before) + sum(deal.board_before)
    n = deal.players
    steps = 0
    while True:
        assert sum(deal.balances) + sum(deal.board) == start  # E16
        if full:
            check_partition(deal)
        if deal.done:
            break
        seat = deal.to_act
        legal = deal.legal_actions()
        assert legal, f"seat {seat} has no legal card"
        assert deal.legal_mask() == sum(1 << c for c in legal)
        if deal.forced >= 0:  # R8: exactly the successor of the last card, from its holder
            last = deal.plays[-1][1]
            assert legal == [deal.forced] == [ref_successor(last, rules.ace_high)]
            assert deal.owner[deal.forced] == seat
        else:  # R7 (R6 for the first lead, R9 after a stop)
            assert legal == ref_leads(deal.hands[seat], rules)
            assert seat == (deal.plays[-1][0] if deal.plays else (deal.dealer + 1) % n)
            assert deal.leader == seat
        card = random_choice(deal, rng)
        before_awards = len(deal.awards)
        deal.play(card)
        steps += 1
        assert steps <= 51
        assert deal.plays[-1] == (seat, card)
        if not deal.done:
            nxt = ref_successor(card, rules.ace_high)
            holder = deal.owner[nxt] if nxt is not None else None
            if holder is not None and holder >= 0:
                assert (deal.to_act, deal.forced) == (holder, nxt)
            else:  # R9: a stop; the player of the last card leads
                assert (deal.to_act, deal.forced) == (seat, -1)
            assert all(a[0] == "play" for a in deal.awards[before_awards:])
    # R11 / R5: how the deal ended
    if deal.winner is None:
        assert deal.turnup == POPE and rules.pope_turnup == "ends_deal" and not deal.plays
    else:
        assert deal.hand_sizes[deal.winner] == 0 and deal.plays[-1][0] == deal.winner
        assert all(c > 0 for s, c in enumerate(deal.hand_sizes) if s != deal.winner)
    assert deal.to_act == -1 and deal.legal_actions() == [] and deal.legal_mask() == 0
    awards, payments = ref_outcome(deal)
    assert deal.awards == awards
    assert deal.payments == payments
    assert sum(deal.delta) + sum(deal.board) - sum(deal.board_before) == 0
    assert deal.board == [b + d - sum(a[3] for a in awards if a[2] == i)
                          for i, (b, d) in enumerate(zip(deal.board_before, rules.dressing))]
    assert PACK_MASK == deal.played_mask | deal.dead_mask | _union(deal.hands)


def _union(masks: list[int]) -> int:
    out = 0
    for m in masks:
        out |= m
    return out


# ----------------------------------------------------------------------------- tests
@pytest.mark.parametrize("players", range(3, 9))
@pytest.mark.parametrize("preset", ["modern", "victorian"])
def test_e16_random_deals_keep_every_invariant(players: int, preset: str) -> None:
    rules = Rules.preset(preset)
    rng = np.random.default_rng([players, len(preset)])
    for i in range(2500):
        board = rng.integers(0, 5, size=8).tolist() if i % 3 == 0 else None
        balances = rng.integers(-20, 60, size=players).tolist() if i % 2 else None
        deal = Deal.new(rules, players, i % players, rng, board=board, balances=balances)
        play_out(deal, rng)


@pytest.mark.parametrize("players", [3, 4, 5, 8])
@pytest.mark.parametrize("variant", sorted(MIXED))
def test_e16_random_deals_mixed_variants(players: int, variant: str) -> None:
    rules = MIXED[variant]
    rng = np.random.default_rng([players, len(variant), 99])
    for i in range(300):
        deal = Deal.new(rules, players, i % players, rng)
        play_out(deal, rng)


@pytest.mark.parametrize("players", range(3, 9))
@pytest.mark.parametrize("rules", [MODERN, VICTORIAN, MIXED["victorian_mixed"]], ids=["modern", "victorian", "mixed"])
def test_e16_sessions_carry_board_and_balances(players: int, rules: Rules) -> None:
    rng = np.random.default_rng([players, 7])
    for s in range(15):
        session = Session(rules, players, rng, first_dealer=s % players)
        start = players * rules.start_counters
        assert session.start_total == start
        prev = None
        while not session.over:
            deal = session.next_deal()
            assert deal.dealer == (s % players + len(session.deals) - 1) % players
            if prev is None:
                assert deal.board_before == (0,) * 8
                assert deal.balances_before == (rules.start_counters,) * players
            else:
                assert deal.board_before == tuple(prev.board)
                assert deal.balances_before == tuple(prev.balances)
            play_out(deal, rng, full=False)
            assert sum(session.balances) + sum(session.board) == start
            prev = deal
        assert len(session.deals) == 2 * players and not session.ended_broke
        assert session.leftover == dict(zip(session.leftover, session.board))


def test_e16_sessions_without_credit_end_when_the_dealer_cannot_pay() -> None:
    rules = Rules(allow_credit=False, start_counters=20)
    rng = np.random.default_rng(2024)
    ended = 0
    for s in range(200):
        players = 3 + s % 6
        session = Session(rules, players, rng, deals=40)
        while not session.over:
            assert session.balances[session.dealer] >= 15
            play_out(session.next_deal(), rng, full=False)
        assert sum(session.balances) + sum(session.board) == players * 20
        if session.ended_broke:
            ended += 1
            assert session.balances[session.dealer] < 15 and len(session.deals) < 40
        else:
            assert len(session.deals) == 40
    assert ended > 100  # 40 deals at 20 counters each: most sessions run out


def test_copy_is_independent_and_replays_identically() -> None:
    from conftest import snapshot

    rng = np.random.default_rng(11)
    for i in range(300):
        deal = Deal.new(MIXED["victorian_mixed"] if i % 2 else MODERN, 3 + i % 6, i % 3, rng)
        cut = int(rng.integers(0, 8))
        for _ in range(cut):
            if deal.done:
                break
            deal.play(random_choice(deal, rng))
        twin = deal.copy()
        before = snapshot(deal)
        choices = np.random.default_rng(i)
        play_out(twin, choices, full=False)
        assert snapshot(deal) == before  # playing the copy left the original alone
        play_out(deal, np.random.default_rng(i), full=False)
        assert snapshot(deal) == snapshot(twin)
