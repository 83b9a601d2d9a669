"""Sessions: deals in a row with the board and balances carried and the deal passing left."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import play_all, random_choice
from popejoan_env import GameOverError, MODERN, Rules, Session, VICTORIAN
from popejoan_env.cards import CARD_NAMES, PACK, parse_card
from popejoan_env.rules import POPE_C


def dead_for(hands: list[str], turnup: str) -> list[str]:
    named = {parse_card(c) for h in hands for c in h.split()} | {parse_card(turnup)}
    return [CARD_NAMES[c] for c in PACK if c not in named] + [turnup]


def explicit(session: Session, hands: list[str], turnup: str):
    return session.next_deal([h.split() for h in hands], dead_for(hands, turnup))


@pytest.mark.parametrize("players", range(3, 9))
def test_session_defaults(players: int) -> None:
    session = Session(MODERN, players, np.random.default_rng(players))
    assert session.length == 2 * players and session.balances == [48] * players
    assert session.board == [0] * 8 and session.dealer == 0 and session.current is None
    rng = np.random.default_rng(0)
    while not session.over:
        deal = session.next_deal()
        assert session.current is deal and session.dealer == deal.dealer
        while not deal.done:
            deal.play(random_choice(deal, rng))
    assert len(session.deals) == 2 * players
    assert [d.dealer for d in session.deals] == [k % players for k in range(2 * players)]  # each deals twice
    assert sum(session.balances) + sum(session.board) == 48 * players
    assert session.leftover == dict(zip(("pope", "matrimony", "intrigue", "ace", "king", "queen", "jack", "game"),
                                        session.board))


def test_session_start_counters_board_and_length() -> None:
    session = Session(Rules(start_counters=100), 4, np.random.default_rng(1), deals=3, first_dealer=2,
                      board={"pope": 5})
    assert session.balances == [100] * 4 and session.start_total == 405
    deal = session.next_deal()
    assert deal.dealer == 2 and deal.board_before[POPE_C] == 5 and deal.balances_before == (100,) * 4
    rng = np.random.default_rng(0)
    for _ in range(3):
        while not deal.done:
            deal.play(random_choice(deal, rng))
        if session.over:
            break
        deal = session.next_deal()
    assert len(session.deals) == 3 and [d.dealer for d in session.deals] == [2, 3, 0]
    assert sum(session.balances) + sum(session.board) == 405


def test_session_accepts_preset_names() -> None:
    assert Session("victorian", 3).rules == VICTORIAN


def test_session_dealer_moves_on_only_when_the_deal_is_done() -> None:
    session = Session(MODERN, 3, first_dealer=1)
    deal = explicit(session, ["5S", "2C 3C", "4S 6S"], "2H")
    assert deal.dealer == 1 and session.dealer == 1 and deal.to_act == 2
    play_all(deal, "4S")  # 5S held by seat 0
    play_all(deal, "5S")  # seat 0 goes out
    assert deal.done and session.dealer == 2


def test_session_turnup_pope_ending_the_deal_passes_the_deal_on() -> None:
    session = Session(VICTORIAN, 3)
    deal = explicit(session, ["5S", "2C 3C", "4S"], "9D")
    assert deal.done and deal.winner is None
    assert session.dealer == 1 and not session.over
    assert session.balances == [48 - 15 + 6 + 1 + 3, 46, 47]
    second = explicit(session, ["5S", "2C 3C", "4S"], "2H")
    assert second.dealer == 1 and second.board_before == tuple(deal.board)


def test_session_without_credit_ends_when_the_next_dealer_cannot_pay() -> None:
    rules = Rules(allow_credit=False)
    session = Session(rules, 3, balances=[20, 10, 20])
    deal = explicit(session, ["5S 6S", "2C 7S", "3C"], "2H")
    play_all(deal, "2C 3C")  # seat 2 goes out; seat 1 pays 1 and has 9 < 15
    assert deal.winner == 2 and session.balances[1] == 9
    assert session.over and session.ended_broke and len(session.deals) == 1
    with pytest.raises(GameOverError, match="session is over"):
        session.next_deal()
    # with credit the same position plays on and the dealer goes below zero
    session = Session(MODERN, 3, balances=[20, 10, 20])
    play_all(explicit(session, ["5S 6S", "2C 7S", "3C"], "2H"), "2C 3C")
    assert not session.over
    explicit(session, ["5S 6S", "2C 7S", "3C"], "2H")
    assert session.balances[1] == 9 - 15


def test_session_without_credit_checks_the_first_dealer_too() -> None:
    session = Session(Rules(allow_credit=False), 3, balances=[14, 50, 50])
    assert session.over and session.ended_broke and session.deals == []
    assert not Session(Rules(allow_credit=False), 3, balances=[15, 0, 0]).over


def test_session_without_credit_lets_card_payments_go_below_zero() -> None:
    session = Session(Rules(allow_credit=False), 3, balances=[15, 1, 50])
    deal = explicit(session, ["5S 6S", "2C 7S 8S 9S", "3C"], "2H")
    play_all(deal, "2C 3C")
    assert session.balances[1] == -2  # the rule gates only the dressing, not the settlement
    assert session.over and session.ended_broke  # seat 1 deals next and cannot pay
