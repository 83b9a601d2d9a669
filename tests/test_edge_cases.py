"""Edge cases E1–E19 of RULES.md, one named test (or more) each.

E16 (counter conservation over many random deals) lives in ``test_playouts.py``
and E20 (bad input) in ``test_bad_input.py``.  Seat 0 deals unless said
otherwise, so seat 1 is eldest.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import make_deal, names, play_all, random_choice
from popejoan_env import Deal, GameOverError, IllegalActionError, MODERN, Rules, Session, VICTORIAN
from popejoan_env.cards import CARD_NAMES, PACK, parse_card
from popejoan_env.engine import NOT_IN_PACK, PLAYED
from popejoan_env.rules import (
    ACE_C, GAME_C, INTRIGUE_C, JACK_C, KING_C, MATRIMONY_C, POPE_C, QUEEN_C,
)

ALL_ROUND = Rules(deal="all_round")


# ----------------------------------------------------------------------------- E1
MODERN_SIZES = {3: (12, 15), 4: (10, 11), 5: (8, 11), 6: (7, 9), 7: (6, 9), 8: (5, 11)}
VICTORIAN_SIZES = {3: (14, 9), 4: (11, 7), 5: (8, 11), 6: (7, 9), 7: (6, 9), 8: (5, 11)}
ALL_ROUND_SIZES = {  # hands from eldest on, then the dead hand
    3: ([13, 13, 13], 12), 4: ([11, 10, 10, 10], 10), 5: ([9, 9, 9, 8, 8], 8),
    6: ([8, 8, 7, 7, 7, 7], 7), 7: ([7, 7, 7, 6, 6, 6, 6], 6), 8: ([6, 6, 6, 6, 6, 6, 5, 5], 5),
}


@pytest.mark.parametrize("players", range(3, 9))
def test_e01_deal_sizes(players: int) -> None:
    rng = np.random.default_rng(players)
    for rules, table in ((MODERN, MODERN_SIZES), (VICTORIAN, VICTORIAN_SIZES)):
        q, dead = table[players]
        assert rules.hand_sizes(players) == ([q] * players, dead)
        assert players * q + dead == 51
        for dealer in range(players):
            deal = Deal.new(rules, players, dealer, rng)
            assert deal.hand_sizes == [q] * players and len(deal.dead) == dead
    sizes, dead = ALL_ROUND_SIZES[players]
    assert sum(sizes) + dead == 51
    assert ALL_ROUND.hand_sizes(players) == (sizes, dead)
    for dealer in range(players):
        deal = Deal.new(ALL_ROUND, players, dealer, rng)
        assert [deal.hand_sizes[(dealer + 1 + k) % players] for k in range(players)] == sizes
        assert len(deal.dead) == dead


def test_e01_fixed_stock_keeps_six_stops_besides_the_turnup() -> None:
    for players in range(3, 9):
        assert VICTORIAN.hand_sizes(players)[1] >= 7


# ----------------------------------------------------------------------------- E2
@pytest.mark.parametrize("rules", [MODERN, VICTORIAN.replace(pope_turnup="pays_pope")])
def test_e02_seven_of_diamonds_stops(rules: Rules) -> None:
    deal = make_deal(["4S", "6D 7D 2S", "9D 3S"], "2H", rules=rules)
    play_all(deal, "6D 7D")
    assert deal.to_act == deal.leader == 1 and deal.is_lead
    assert deal.owner[parse_card("9D")] == 2  # never reached from the 7D
    assert deal.owner[20] == NOT_IN_PACK


# ----------------------------------------------------------------------------- E3
def test_e03_king_stops_ace_low() -> None:
    deal = make_deal(["5C", "QS KS 3C", "AS 4C"], "2H")
    assert names(deal.legal_actions()) == ["3C", "QS"]
    play_all(deal, "QS KS")
    assert deal.to_act == deal.leader == 1 and deal.is_lead
    assert deal.owner[parse_card("AS")] == 2


# ----------------------------------------------------------------------------- E4
def test_e04_successor_in_dead_hand_stops() -> None:
    deal = make_deal(["7S", "3C 5C 2S", "6S"], "2H")
    deal.play("3C")  # 4C is in the dead hand
    assert deal.to_act == 1 and deal.is_lead
    assert names(deal.legal_actions()) == ["5C", "2S"]
    assert (deal.revealed_dead >> parse_card("4C")) & 1


def test_e04_turnup_stops() -> None:
    deal = make_deal(["7S", "3C 5C 2S", "6S"], "4C")
    deal.play("3C")
    assert deal.to_act == 1 and deal.is_lead
    assert deal.revealed_dead == 1 << parse_card("4C")


# ----------------------------------------------------------------------------- E5
def test_e05_successor_already_played_stops() -> None:
    deal = make_deal(["TH", "8C 2S 9H", "3S 5C 6C 7C JS"], "2H")
    deal.play("8C")  # 9C dead: seat 1 leads again
    play_all(deal, "2S 3S")  # 4S dead: seat 2 leads
    assert deal.to_act == 2 and deal.is_lead
    play_all(deal, "5C 6C 7C")  # 8C was played earlier
    assert deal.owner[parse_card("8C")] == PLAYED
    assert deal.to_act == deal.leader == 2 and deal.is_lead
    assert names(deal.legal_actions()) == ["JS"]
    assert not (deal.revealed_dead >> parse_card("8C")) & 1


# ----------------------------------------------------------------------------- E6
def test_e06_lowest_of_suit_forbids_the_higher_card() -> None:
    deal = make_deal(["4S", "5D 9D 2S", "3S"], "2H")
    assert names(deal.legal_actions()) == ["5D", "2S"]
    with pytest.raises(IllegalActionError, match=r"cannot play 9D: a lead must be the lowest card held of its suit"):
        deal.play("9D")


def test_e06_ace_must_be_led_first_in_its_suit() -> None:
    deal = make_deal(["4H", "AS 5S KS 3C", "3H"], "2H")
    assert names(deal.legal_actions()) == ["3C", "AS"]
    with pytest.raises(IllegalActionError, match="legal: \\['3C', 'AS'\\]"):
        deal.play("5S")


# ----------------------------------------------------------------------------- E7
def test_e07_turnup_queen_blocks_both_pairs() -> None:
    deal = make_deal(["5S", "JH KH 3S", "4S"], "QH")
    assert deal.awards == [("turnup", 0, QUEEN_C, 1)]
    play_all(deal, "JH KH 3S")  # JH stops at the dead QH; KH stops
    assert deal.winner == 1
    assert deal.awards[1:] == [("play", 1, JACK_C, 1), ("play", 1, KING_C, 1), ("game", 1, GAME_C, 1)]
    assert deal.board == [6, 2, 2, 1, 0, 0, 0, 0]  # matrimony and intrigue carry over


def test_e07_turnup_king_blocks_matrimony() -> None:
    deal = make_deal(["5S", "JH QH 3S", "4S"], "KH")
    play_all(deal, "JH QH 3S")
    assert deal.awards[:4] == [
        ("turnup", 0, KING_C, 1), ("play", 1, JACK_C, 1), ("play", 1, QUEEN_C, 1), ("play", 1, INTRIGUE_C, 2),
    ]
    assert deal.board == [6, 2, 0, 1, 0, 0, 0, 0]


def test_e07_turnup_jack_blocks_intrigue() -> None:
    deal = make_deal(["5S", "QH KH 3S", "4S"], "JH")
    play_all(deal, "QH KH 3S")
    assert deal.awards[:4] == [
        ("turnup", 0, JACK_C, 1), ("play", 1, QUEEN_C, 1), ("play", 1, KING_C, 1), ("play", 1, MATRIMONY_C, 2),
    ]
    assert deal.board == [6, 0, 2, 1, 0, 0, 0, 0]


# ----------------------------------------------------------------------------- E8
@pytest.mark.parametrize("rules", [MODERN, VICTORIAN.replace(pope_turnup="pays_pope")])
def test_e08_turnup_pope_pays_pope(rules: Rules) -> None:
    deal = make_deal(["5S 6S", "2C 3S", "4S"], "9D", dealer=2, rules=rules)
    assert deal.awards == [("turnup", 2, POPE_C, 6)]
    assert not deal.done and deal.to_act == 0 and deal.legal_actions()
    deal.play(deal.legal_actions()[0])
    assert deal.plays


@pytest.mark.parametrize("rules", [VICTORIAN, MODERN.replace(pope_turnup="ends_deal")])
def test_e08_turnup_pope_ends_deal(rules: Rules) -> None:
    deal = make_deal(["5S 6S", "2C 3S 4C 5C", "4S"], "9D", dealer=2, rules=rules, board={"pope": 4, "game": 3})
    assert deal.awards == [("turnup", 2, POPE_C, 10), ("turnup", 2, GAME_C, 4)]
    assert deal.payments == [(0, 2, 2), (1, 2, 4)]
    assert deal.delta == [-2, -4, -15 + 10 + 4 + 6]
    assert deal.board == [0, 2, 2, 1, 1, 1, 1, 0]
    assert deal.done and deal.winner is None and deal.plays == [] and deal.legal_actions() == []
    with pytest.raises(GameOverError, match="ended at the turn-up"):
        deal.play("5S")


# ----------------------------------------------------------------------------- E9
def test_e09_diamonds_trumps_pope_pays_pope_only() -> None:
    deal = make_deal(["KD AD 5S 6S", "9D TD JD 2S", "QD 3S"], "4D")
    play_all(deal, "9D TD JD QD KD")
    assert deal.awards == [
        ("play", 1, POPE_C, 6), ("play", 1, JACK_C, 1), ("play", 2, QUEEN_C, 1), ("play", 0, KING_C, 1),
    ]
    assert deal.to_act == 0 and deal.is_lead  # KD stops
    deal.play("AD")
    assert deal.awards[-1] == ("play", 0, ACE_C, 1)


def test_e09_diamond_honours_only_reached_from_nine_or_above() -> None:
    deal = make_deal(["KD 5S", "5D 6D 7D 2S", "JD QD 3S"], "4D")
    play_all(deal, "5D 6D 7D")
    assert deal.to_act == 1 and deal.is_lead  # the 7D stops
    assert deal.awards == [] and deal.owner[parse_card("JD")] == 2


# ----------------------------------------------------------------------------- E10
def test_e10_intrigue_jack_then_queen() -> None:
    deal = make_deal(["5S", "JH QH 3S", "4S"], "2H")
    play_all(deal, "JH QH")
    assert deal.awards == [("play", 1, JACK_C, 1), ("play", 1, QUEEN_C, 1), ("play", 1, INTRIGUE_C, 2)]


def test_e10_intrigue_queen_then_jack_in_a_later_sequence() -> None:
    deal = make_deal(["6C", "QH JH 3S 8C", "TH 4S 9C"], "2H", rules=Rules(lead="any"))
    deal.play("QH")  # KH dead: stop
    play_all(deal, "3S 4S")  # 5S dead: seat 2 leads
    play_all(deal, "TH JH")  # QH already played: stop
    assert deal.awards == [("play", 1, QUEEN_C, 1), ("play", 1, JACK_C, 1), ("play", 1, INTRIGUE_C, 2)]
    assert deal.to_act == 1 and deal.is_lead


def test_e10_matrimony_king_then_queen_in_a_later_sequence() -> None:
    deal = make_deal(["6C", "KH QH 3S 8C", "JH 4S 9C"], "2H", rules=Rules(lead="any"))
    deal.play("KH")
    play_all(deal, "3S 4S JH QH")
    assert deal.awards == [
        ("play", 1, KING_C, 1), ("play", 2, JACK_C, 1), ("play", 1, QUEEN_C, 1), ("play", 1, MATRIMONY_C, 2),
    ]  # no intrigue: the JH was seat 2's
    assert deal.board[INTRIGUE_C] == 2


def test_e10_jack_queen_king_by_one_player_pays_both() -> None:
    deal = make_deal(["6C", "KH JH QH 3S 8C", "4S 9C"], "2H", rules=Rules(lead="any"))
    deal.play("KH")  # king first, then J and Q in a later sequence
    play_all(deal, "JH QH")
    assert deal.awards == [
        ("play", 1, KING_C, 1), ("play", 1, JACK_C, 1), ("play", 1, QUEEN_C, 1),
        ("play", 1, MATRIMONY_C, 2), ("play", 1, INTRIGUE_C, 2),
    ]
    assert deal.board == [6, 0, 0, 1, 0, 0, 0, 1]


# ----------------------------------------------------------------------------- E11
def test_e11_pair_split_none_carries_over() -> None:
    deal = make_deal(["6S", "QH 3S", "JH KH 4S"], "2H", dealer=1, board={"matrimony": 3, "intrigue": 2})
    play_all(deal, "JH QH KH")
    assert deal.awards == [("play", 2, JACK_C, 1), ("play", 1, QUEEN_C, 1), ("play", 2, KING_C, 1)]
    assert deal.board[MATRIMONY_C] == 5 and deal.board[INTRIGUE_C] == 4


def test_e11_pair_split_halves() -> None:
    rules = Rules(pair_split="halves")
    deal = make_deal(["6S", "QH 3S", "JH KH 4S"], "2H", dealer=1, rules=rules, board={"matrimony": 3, "intrigue": 2})
    play_all(deal, "JH QH KH")
    assert deal.awards == [
        ("play", 2, JACK_C, 1),
        ("play", 1, QUEEN_C, 1), ("play", 2, INTRIGUE_C, 2), ("play", 1, INTRIGUE_C, 2),
        ("play", 2, KING_C, 1), ("play", 1, MATRIMONY_C, 2), ("play", 2, MATRIMONY_C, 2),
    ]  # the player of the earlier card is paid first
    assert deal.board[MATRIMONY_C] == 1 and deal.board[INTRIGUE_C] == 0  # 5 -> 2 + 2, the odd one stays


def test_e11_halves_of_one_counter_pays_nothing() -> None:
    rules = Rules(pair_split="halves", dressing={"matrimony": 1})
    deal = make_deal(["6S", "QH 3S", "KH 4S"], "2H", rules=rules)
    play_all(deal, "QH KH")
    assert deal.awards == [  # empty compartments are still recorded, with 0 counters
        ("play", 1, QUEEN_C, 0), ("play", 2, KING_C, 0), ("play", 1, MATRIMONY_C, 0), ("play", 2, MATRIMONY_C, 0),
    ]
    assert deal.board[MATRIMONY_C] == 1


def test_e11_halves_same_player_takes_all() -> None:
    deal = make_deal(["5S", "QH KH 3S", "4S"], "2H", rules=Rules(pair_split="halves"))
    play_all(deal, "QH KH")
    assert deal.awards[-1] == ("play", 1, MATRIMONY_C, 2)


# ----------------------------------------------------------------------------- E12
def test_e12_going_out_pope_holder_pays_nothing() -> None:
    deal = make_deal(["9S", "2C 3C", "9D 7S 8S"], "2S")
    play_all(deal, "2C 3C")
    assert deal.awards == [("game", 1, GAME_C, 1)]
    assert deal.payments == [(2, 1, 0), (0, 1, 1)]
    assert deal.delta == [-16, 2, 0]


def test_e12_player_who_played_the_pope_pays_normally() -> None:
    deal = make_deal(["9S", "2C 3C 6H", "4C 9D 5H 7S 8S"], "2S")
    play_all(deal, "2C 3C 4C")  # 5C dead: seat 2 leads
    play_all(deal, "9D")  # TD dead: seat 2 leads again
    play_all(deal, "5H 6H")  # seat 1 goes out on the 6H
    assert deal.winner == 1
    assert deal.awards == [("play", 2, POPE_C, 6), ("game", 1, GAME_C, 1)]
    assert deal.payments == [(2, 1, 2), (0, 1, 1)]
    assert deal.delta == [-16, 4, 4]
    assert sum(deal.delta) + sum(deal.board) - sum(deal.board_before) == 0


def test_e12_pope_in_dead_hand_excuses_nobody() -> None:
    deal = make_deal(["9S TS", "2C 3C", "7S 8S"], "2S")
    play_all(deal, "2C 3C")
    assert deal.payments == [(2, 1, 2), (0, 1, 2)]


# ----------------------------------------------------------------------------- E13
def test_e13_deal_ends_mid_sequence() -> None:
    deal = make_deal(["TH", "QH JH 3S", "KH 9H 5S"], "2H", rules=Rules(lead="any"))
    play_all(deal, "QH KH")  # K stops: seat 2 leads
    play_all(deal, "9H TH")  # seat 0 plays his last card; JH would come next
    assert deal.done and deal.winner == 0
    assert deal.owner[parse_card("JH")] == 1 and deal.forced == -1 and deal.legal_actions() == []
    assert deal.awards == [("play", 1, QUEEN_C, 1), ("play", 2, KING_C, 1), ("game", 0, GAME_C, 1)]
    assert deal.board[INTRIGUE_C] == 2  # seat 1's Q never met his J
    assert deal.payments == [(1, 0, 2), (2, 0, 1)]


def test_e13_next_card_of_sequence_not_played() -> None:
    deal = make_deal(["6S", "2C 4C", "3C 5C 7S"], "2H")
    play_all(deal, "2C 3C 4C")
    assert deal.done and deal.winner == 1
    assert deal.owner[parse_card("5C")] == 2
    assert len(deal.plays) == 3
    with pytest.raises(GameOverError, match="seat 1 went out"):
        deal.play("5C")


# ----------------------------------------------------------------------------- E14
def test_e14_last_card_honour_paid_before_settlement() -> None:
    deal = make_deal(["5S", "KH", "4S"], "2H")
    deal.play("KH")
    assert deal.awards == [("play", 1, KING_C, 1), ("game", 1, GAME_C, 1)]
    assert deal.payments == [(2, 1, 1), (0, 1, 1)]


def test_e14_last_card_completes_matrimony() -> None:
    deal = make_deal(["5S", "QH KH", "4S"], "2H")
    play_all(deal, "QH KH")
    assert deal.awards == [
        ("play", 1, QUEEN_C, 1), ("play", 1, KING_C, 1), ("play", 1, MATRIMONY_C, 2), ("game", 1, GAME_C, 1),
    ]


def test_e14_last_card_pope() -> None:
    deal = make_deal(["5S", "9D", "4S"], "2H", board={"pope": 1})
    deal.play("9D")
    assert deal.awards == [("play", 1, POPE_C, 7), ("game", 1, GAME_C, 1)]
    assert deal.payments == [(2, 1, 1), (0, 1, 1)]
    assert deal.delta == [-16, 10, -1]


# ----------------------------------------------------------------------------- E15
def _dead(hands: list[str], turnup: str) -> list[str]:
    named = {parse_card(c) for h in hands for c in h.split()} | {parse_card(turnup)}
    return [CARD_NAMES[c] for c in PACK if c not in named] + [turnup]


def test_e15_carry_over_grows_over_deals() -> None:
    hands = ["2C 3C", "4C 5C", "6C 7C"]  # the 9D stays in the dead hand: pope is never won
    session = Session(MODERN, players=3, deals=4)
    for k in range(4):
        deal = session.next_deal([h.split() for h in hands], _dead(hands, "2H"))
        assert deal.dealer == k % 3
        assert deal.board_before[POPE_C] == 6 * k
        assert deal.board[POPE_C] == 6 * (k + 1)  # an unwon 6 is 12 after the next dressing
        while not deal.done:
            deal.play(deal.legal_actions()[0])
        assert session.board[POPE_C] == 6 * (k + 1)
    assert session.over and session.leftover["pope"] == 24
    assert sum(session.balances) + sum(session.board) == 3 * 48


# ----------------------------------------------------------------------------- E17
def test_e17_dealer_rotates_left_and_eldest_leads() -> None:
    for rules in (MODERN, VICTORIAN):
        session = Session(rules, players=5, rng=np.random.default_rng(17), first_dealer=3)
        dealers = []
        rng = np.random.default_rng(1)
        while not session.over:
            assert session.dealer == (3 + len(session.deals)) % 5
            deal = session.next_deal()
            dealers.append(deal.dealer)
            if not deal.done:
                assert deal.to_act == (deal.dealer + 1) % 5
            while not deal.done:
                deal.play(random_choice(deal, rng))
        assert dealers == [3, 4, 0, 1, 2, 3, 4, 0, 1, 2]


def test_e17_after_a_stop_the_player_of_the_last_card_leads() -> None:
    deal = make_deal(["7S 8S", "2C 3S", "3C KD 4S"], "2H")
    play_all(deal, "2C 3C")  # 4C dead: seat 2 played the last card, so seat 2 leads
    assert deal.to_act == 2 and deal.is_lead
    deal.play("KD")  # K stops: seat 2 again, though seat 0 sits next
    assert deal.to_act == 2 and deal.is_lead
    play_all(deal, "4S")  # seat 2's last card
    assert deal.done and deal.winner == 2


# ----------------------------------------------------------------------------- E18
ACE_HIGH = Rules(ace_high=True)


def test_e18_ace_high_king_continues_to_ace_and_ace_stops() -> None:
    deal = make_deal(["5C", "QS KS 3C", "AS 2S 4C"], "2H", rules=ACE_HIGH)
    play_all(deal, "QS KS")
    assert (deal.to_act, CARD_NAMES[deal.forced]) == (2, "AS")
    deal.play("AS")
    assert deal.to_act == deal.leader == 2 and deal.is_lead  # the A stops; 2S is not its successor
    assert deal.owner[parse_card("2S")] == 2


def test_e18_ace_high_two_can_only_be_led_and_ace_is_not_lowest() -> None:
    deal = make_deal(["5C", "AS 2S 3S 9C", "4C"], "2H", rules=ACE_HIGH)
    assert names(deal.legal_actions()) == ["9C", "2S"]  # the 2S is the lowest spade, not the AS
    with pytest.raises(IllegalActionError):
        deal.play("AS")
    play_all(deal, "2S 3S")  # 4S dead
    assert deal.to_act == 1 and names(deal.legal_actions()) == ["9C", "AS"]  # an Ace alone may be led
    deal = make_deal(["5C", "KS 3C", "AS 2S 4C"], "2H", rules=ACE_HIGH)
    deal.play("KS")
    assert CARD_NAMES[deal.forced] == "AS"  # nothing ever leads on to the 2S
    deal.play("AS")
    assert deal.is_lead and deal.to_act == 2


def test_e18_ace_high_trump_ace_still_pays_ace() -> None:
    deal = make_deal(["5C", "KH 3C", "AH 4C"], "2H", rules=ACE_HIGH)
    play_all(deal, "KH AH")
    assert deal.awards == [("play", 1, KING_C, 1), ("play", 2, ACE_C, 1)]


# ----------------------------------------------------------------------------- E19
def _outcome(seed: int, players: int, rules: Rules) -> tuple:
    deal = Deal.new(rules, players, 0, np.random.default_rng(seed))
    chooser = np.random.default_rng(seed + 1)
    legal = []
    while not deal.done:
        legal.append(tuple(deal.legal_actions()))
        deal.play(random_choice(deal, chooser))
    return (deal.initial_hands, deal.dead, tuple(legal), tuple(deal.plays), tuple(deal.awards),
            tuple(deal.payments), tuple(deal.delta), deal.winner)


def test_e19_same_seed_same_deal_and_outcome() -> None:
    for players in range(3, 9):
        for rules in (MODERN, VICTORIAN):
            assert _outcome(42, players, rules) == _outcome(42, players, rules)
            assert _outcome(42, players, rules)[:2] != _outcome(43, players, rules)[:2]


def test_e19_same_seed_same_session() -> None:
    def run(seed: int) -> tuple:
        session = Session(MODERN, players=4, rng=np.random.default_rng(seed))
        chooser = np.random.default_rng(seed)
        out = []
        while not session.over:
            deal = session.next_deal()
            while not deal.done:
                deal.play(random_choice(deal, chooser))
            out.append((deal.initial_hands, tuple(deal.plays), tuple(deal.delta)))
        return tuple(out), tuple(session.balances), tuple(session.board)

    assert run(7) == run(7)
    assert run(7) != run(8)
