"""Rules R1–R12 of RULES.md, one named test (or more) per rule, plus every rules variant.

Deals are built by hand (``make_deal``: every card not named goes to the dead
hand, the turn-up last) so each test sets up exactly the situation it checks.
Seat 0 deals unless said otherwise, so seat 1 is eldest and leads.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re

import numpy as np
import pytest

from conftest import make_deal, names, play_all
from popejoan_env import Deal, IllegalActionError, MODERN, Rules, Session, VICTORIAN
from popejoan_env.cards import CARD_NAMES, HEARTS, PACK, SPADES, DIAMONDS, mask_of, parse_card
from popejoan_env.engine import DEAD, PLAYED
from popejoan_env.errors import RulesError
from popejoan_env.rules import (
    _BOOLS, _CHOICES, ACE_C, DEFAULT_DRESSING, GAME_C, INTRIGUE_C, JACK_C, KING_C, MATRIMONY_C, POPE_C, QUEEN_C,
)
from popejoan_env.seat_view import seat_view


class FixedShuffle:
    """A stand-in generator whose 'shuffle' is a given order of pack positions."""

    def __init__(self, positions: list[int]) -> None:
        self.positions = positions

    def permutation(self, x: int) -> np.ndarray:
        assert x == 51
        return np.array(self.positions)


IDENTITY = FixedShuffle(list(range(51)))


# ----------------------------------------------------------------------------- R1
@pytest.mark.parametrize("dealer", [0, 1, 2])
def test_r01_dressing_adds_15(dealer: int) -> None:
    deal = make_deal(["AC", "2C", "3C"], "5H", dealer=dealer, board={"pope": 3, "game": 2}, balances=[10, 20, 30])
    assert sum(DEFAULT_DRESSING) == 15
    assert deal.board_before == (3, 0, 0, 0, 0, 0, 0, 2)
    assert deal.board == [9, 2, 2, 1, 1, 1, 1, 3]
    expected = [10, 20, 30]
    expected[dealer] -= 15
    assert deal.balances == expected
    assert deal.delta == [-15 if s == dealer else 0 for s in range(3)]
    assert deal.awards == [] and deal.payments == []


def test_r01_custom_dressing_from_mapping_and_tuple() -> None:
    rules = Rules(dressing={"pope": 10, "game": 5})
    assert rules.dressing == (10, 0, 0, 0, 0, 0, 0, 5)
    deal = make_deal(["AC", "2C", "3C"], "5H", dealer=1, rules=rules, board=[1] * 8)
    assert deal.board == [11, 1, 1, 1, 1, 1, 1, 6]
    assert deal.delta == [0, -15, 0]
    rules = Rules(dressing=(1, 1, 1, 1, 1, 1, 1, 1))
    deal = make_deal(["AC", "2C", "3C"], "5H", rules=rules)
    assert deal.board == [1] * 8 and deal.delta == [-8, 0, 0]


# ----------------------------------------------------------------------------- R2
def test_r02_shuffle_uses_the_generator_permutation() -> None:
    order = [PACK[i] for i in np.random.default_rng(5).permutation(51)]
    deal = Deal.new(MODERN, players=4, dealer=1, rng=np.random.default_rng(5))
    for k, seat in enumerate([2, 3, 0, 1]):  # eldest (seat 2) first, clockwise
        assert deal.hands[seat] == mask_of(order[k:40:4])
    assert list(deal.dead) == order[40:]
    assert deal.turnup == order[50]
    rng = np.random.default_rng(5)
    first = Deal.new(MODERN, 4, 1, rng)
    second = Deal.new(MODERN, 4, 1, rng)  # the generator moved on: a fresh shuffle
    assert first.initial_hands != second.initial_hands


# ----------------------------------------------------------------------------- R3
def test_r03_equal_deal_one_card_at_a_time_from_eldest() -> None:
    deal = Deal.new(MODERN, players=4, dealer=2, rng=IDENTITY)
    assert names(sorted(_cards(deal.hands[3]))) == "AC 5C 9C KC 4D 9D KD 4H 8H QH".split()
    assert names(sorted(_cards(deal.hands[0]))) == "2C 6C TC AD 5D TD AH 5H 9H KH".split()
    assert names(deal.dead) == "3S 4S 5S 6S 7S 8S 9S TS JS QS KS".split()
    assert deal.hand_sizes == [10, 10, 10, 10]
    assert CARD_NAMES[deal.turnup] == "KS"


def test_r03_fixed_stock_deal() -> None:
    deal = Deal.new(VICTORIAN, players=3, dealer=0, rng=IDENTITY)
    assert deal.hand_sizes == [14, 14, 14]
    assert names(sorted(_cards(deal.hands[1]))) == "AC 4C 7C TC KC 3D 6D TD KD 3H 6H 9H QH 2S".split()
    assert names(deal.dead) == "5S 6S 7S 8S 9S TS JS QS KS".split()
    assert len(deal.dead) - 1 >= 6  # at least six stops besides the turn-up


def test_r03_all_round_deal() -> None:
    deal = Deal.new(Rules(deal="all_round"), players=4, dealer=3, rng=IDENTITY)
    assert deal.hand_sizes == [11, 10, 10, 10]  # 51 mod 5 = 1: eldest (seat 0) gets one more
    assert names(sorted(_cards(deal.hands[0]))) == "AC 6C JC 3D 9D AH 6H JH 3S 8S KS".split()
    assert names(sorted(_cards(deal.hands[1]))) == "2C 7C QC 4D TD 2H 7H QH 4S 9S".split()
    assert names(deal.dead) == "5C TC 2D 7D KD 5H TH 2S 7S QS".split()
    assert CARD_NAMES[deal.turnup] == "QS"  # the last card dealt to the dead hand


# ----------------------------------------------------------------------------- R4
def test_r04_turnup_is_last_dead_card_and_sets_trumps() -> None:
    deal = make_deal(["AC 2H", "2C QH", "3C"], "7H")
    assert CARD_NAMES[deal.turnup] == "7H" and deal.dead[-1] == deal.turnup
    assert deal.trumps == HEARTS
    assert deal.owner[deal.turnup] == DEAD
    for seat in range(3):
        view = seat_view(deal, seat)
        assert view.turnup == deal.turnup and view.trumps == HEARTS
        assert view.dead_hand is None and view.known_dead == 1 << deal.turnup
    rng = np.random.default_rng(0)
    for _ in range(50):
        deal = Deal.new(MODERN, 5, 0, rng)
        while not deal.done:
            assert deal.turnup not in deal.legal_actions()
            deal.play(deal.legal_actions()[0])
        assert deal.owner[deal.turnup] == DEAD


# ----------------------------------------------------------------------------- R5
@pytest.mark.parametrize(("rank", "comp"), [("A", ACE_C), ("K", KING_C), ("Q", QUEEN_C), ("J", JACK_C)])
def test_r05_turnup_honour_pays_dealer(rank: str, comp: int) -> None:
    board = [0] * 8
    board[comp] = 4
    deal = make_deal(["AC", "2C", "3C"], rank + "S", dealer=2, board=board)
    assert deal.trumps == SPADES
    assert deal.awards == [("turnup", 2, comp, 5)]
    assert deal.board[comp] == 0
    assert deal.delta == [0, 0, -10]
    assert not deal.done and deal.to_act == 0


def test_r05_plain_turnup_pays_nothing() -> None:
    deal = make_deal(["AC", "2C", "3C"], "5S")
    assert deal.awards == [] and deal.delta == [-15, 0, 0]


def test_r05_turnup_pope_pays_pope_and_play_goes_on() -> None:
    deal = make_deal(["AC", "2C", "3C"], "9D", dealer=1, board={"pope": 3})
    assert deal.trumps == DIAMONDS
    assert deal.awards == [("turnup", 1, POPE_C, 9)]
    assert deal.board[POPE_C] == 0 and deal.delta == [0, -6, 0]
    assert not deal.done and deal.to_act == 2 and deal.legal_actions() == [parse_card("3C")]


def test_r05_turnup_pope_ends_deal_victorian() -> None:
    deal = make_deal(["AC 2C 3C", "4C 5C", "6C"], "9D", dealer=1, rules=VICTORIAN)
    assert deal.awards == [("turnup", 1, POPE_C, 6), ("turnup", 1, GAME_C, 1)]
    assert deal.payments == [(2, 1, 1), (0, 1, 3)]  # clockwise from the dealer's left
    assert deal.delta == [-3, -15 + 6 + 1 + 4, -1]
    assert deal.done and deal.winner is None and deal.plays == []
    assert deal.legal_actions() == [] and deal.legal_mask() == 0 and deal.to_act == -1


# ----------------------------------------------------------------------------- R6
def test_r06_eldest_leads() -> None:
    rng = np.random.default_rng(6)
    for players in range(3, 9):
        for dealer in range(players):
            deal = Deal.new(MODERN, players, dealer, rng)
            assert deal.eldest == (dealer + 1) % players
            assert deal.to_act == deal.leader == deal.eldest
            assert deal.is_lead and deal.forced == -1


# ----------------------------------------------------------------------------- R7
def test_r07_lowest_of_suit_leads() -> None:
    deal = make_deal(["AC", "3C 5C AS KS 5D 9D 2H 7H", "2C"], "4S")
    assert names(deal.legal_actions()) == ["3C", "5D", "2H", "AS"]
    assert deal.legal_mask() == mask_of(deal.legal_actions())
    for card in ("5C", "KS", "9D", "7H"):
        with pytest.raises(IllegalActionError, match=f"seat 1 cannot play {card}"):
            deal.play(card)


def test_r07_lead_any() -> None:
    deal = make_deal(["AC", "3C 5C AS KS 5D 9D 2H 7H", "2C"], "4S", rules=Rules(lead="any"))
    assert names(deal.legal_actions()) == ["3C", "5C", "5D", "9D", "2H", "7H", "AS", "KS"]
    assert deal.legal_mask() == deal.hands[1]
    deal.play("KS")  # any card, even the highest
    assert deal.to_act == 1 and deal.is_lead  # a King stops: he leads again


# ----------------------------------------------------------------------------- R8
def test_r08_continuation_is_forced() -> None:
    deal = make_deal(["4C KD", "2C 3C QD", "5C JD"], "2H")
    assert names(deal.legal_actions()) == ["2C", "QD"]
    deal.play("2C")
    assert (deal.to_act, CARD_NAMES[deal.forced]) == (1, "3C")  # he holds the successor himself
    assert names(deal.legal_actions()) == ["3C"] and not deal.is_lead
    with pytest.raises(IllegalActionError, match="must continue the sequence with 3C"):
        deal.play("QD")
    deal.play("3C")
    assert (deal.to_act, CARD_NAMES[deal.forced]) == (0, "4C")  # whoever holds it
    deal.play("4C")
    assert (deal.to_act, CARD_NAMES[deal.forced]) == (2, "5C")
    assert deal.leader == 1


# ----------------------------------------------------------------------------- R9
def test_r09_stop_player_of_last_card_leads() -> None:
    deal = make_deal(["4C KD", "2C 3C QD 9S", "5C JD 7S"], "2H")
    play_all(deal, "2C 3C 4C 5C")  # 6C is in the dead hand
    assert deal.to_act == deal.leader == 2 and deal.is_lead
    assert (deal.revealed_dead >> parse_card("6C")) & 1
    assert names(deal.legal_actions()) == ["JD", "7S"]  # his own lead, not "the next seat"
    deal.play("JD")
    assert (deal.to_act, CARD_NAMES[deal.forced]) == (1, "QD")
    deal.play("QD")
    assert (deal.to_act, CARD_NAMES[deal.forced]) == (0, "KD")
    assert deal.plays == [(1, parse_card(c)) for c in ("2C", "3C")] + [
        (0, parse_card("4C")), (2, parse_card("5C")), (2, parse_card("JD")), (1, parse_card("QD"))
    ]


# ----------------------------------------------------------------------------- R10
def test_r10_trump_ace_pays_its_player() -> None:
    deal = make_deal(["5S", "AH 3S", "4S"], "2H", board={"ace": 2})
    deal.play("AH")
    assert deal.awards == [("play", 1, ACE_C, 3)] and deal.board[ACE_C] == 0
    assert deal.to_act == 1 and deal.is_lead  # 2H is the turn-up: a stop


def test_r10_trump_jack_queen_king_pay_and_pairs() -> None:
    deal = make_deal(["5S", "JH QH KH 3S", "4S"], "2H")
    play_all(deal, "JH QH KH")
    assert deal.awards == [
        ("play", 1, JACK_C, 1), ("play", 1, QUEEN_C, 1), ("play", 1, INTRIGUE_C, 2),
        ("play", 1, KING_C, 1), ("play", 1, MATRIMONY_C, 2),
    ]
    assert deal.board == [6, 0, 0, 1, 0, 0, 0, 1]


def test_r10_pope_pays_pope() -> None:
    deal = make_deal(["5S", "9D TD 2S", "4S"], "2H", board={"pope": 6})
    deal.play("9D")
    assert deal.awards == [("play", 1, POPE_C, 12)] and deal.board[POPE_C] == 0
    assert (deal.to_act, CARD_NAMES[deal.forced]) == (1, "TD")


def test_r10_honours_of_other_suits_pay_nothing() -> None:
    deal = make_deal(["5H", "JS QS KS AD 3C", "4H"], "2H")
    play_all(deal, "AD JS QS KS")
    assert deal.awards == [] and deal.board == list(DEFAULT_DRESSING)


def test_r10_holding_honours_earns_nothing() -> None:
    deal = make_deal(["AH JH QH KH 9D 5S", "2C 3C", "4S"], "2H")
    play_all(deal, "2C 3C")  # seat 1 goes out at once
    assert deal.done and deal.winner == 1
    assert [a for a in deal.awards if a[0] == "play"] == []
    assert deal.board == [6, 2, 2, 1, 1, 1, 1, 0]
    assert deal.payments == [(2, 1, 1), (0, 1, 0)]  # seat 0 holds the 9D: excused


# ----------------------------------------------------------------------------- R11
def test_r11_going_out_pays_game_and_cards_left() -> None:
    deal = make_deal(["5S 9D 4H", "2C 3C", "6S 7S 8S"], "2H")
    play_all(deal, "2C 3C")
    assert deal.done and deal.winner == 1 and deal.to_act == -1
    assert deal.awards == [("game", 1, GAME_C, 1)]
    assert deal.payments == [(2, 1, 3), (0, 1, 0)]  # clockwise from the winner's left
    assert deal.delta == [-15, 4, -3]
    assert deal.board == [6, 2, 2, 1, 1, 1, 1, 0]
    assert deal.legal_actions() == [] and deal.legal_mask() == 0


def test_r11_pope_not_excused_variant() -> None:
    deal = make_deal(["5S 9D 4H", "2C 3C", "6S 7S 8S"], "2H", rules=Rules(pope_excused=False))
    play_all(deal, "2C 3C")
    assert deal.payments == [(2, 1, 3), (0, 1, 3)]
    assert deal.delta == [-18, 7, -3]


# ----------------------------------------------------------------------------- R12
def test_r12_unwon_compartments_carry_over() -> None:
    hands = ["5S 9D 4H", "2C 3C", "6S 7S 8S"]
    session = Session(MODERN, players=3, first_dealer=0)
    first = session.next_deal([h.split() for h in hands], _dead_for(hands, "2H"))
    play_all(first, "2C 3C")
    assert session.board == [6, 2, 2, 1, 1, 1, 1, 0]
    second = session.next_deal([h.split() for h in hands], _dead_for(hands, "2H"))
    assert second.dealer == 1
    assert second.board_before == (6, 2, 2, 1, 1, 1, 1, 0)
    assert second.board == [12, 4, 4, 2, 2, 2, 2, 1]  # the new dressing goes on top


# ----------------------------------------------------------------------------- variants
def test_variant_dealer_sees_dead_hand() -> None:
    deal = make_deal(["AC", "2C", "3C"], "5H", dealer=2, rules=Rules(dealer_sees_dead_hand=True))
    assert seat_view(deal, 2).dead_hand == deal.dead_mask
    assert seat_view(deal, 0).dead_hand is None and seat_view(deal, 1).dead_hand is None
    plain = make_deal(["AC", "2C", "3C"], "5H", dealer=2)
    assert seat_view(plain, 2).dead_hand is None


def test_variant_presets_differ_only_in_named_fields() -> None:
    assert MODERN == Rules() and MODERN.name == "modern"
    assert VICTORIAN == Rules(lead="any", deal="fixed_stock", pope_turnup="ends_deal")
    assert VICTORIAN.name == "victorian" and Rules(ace_high=True).name == "custom"
    differing = {k for k, v in MODERN.to_dict().items() if VICTORIAN.to_dict()[k] != v}
    assert differing == {"preset", "lead", "deal", "pope_turnup"}


def test_variant_rules_round_trip_through_dict() -> None:
    for rules in (MODERN, VICTORIAN, Rules(ace_high=True, pair_split="halves", dressing={"pope": 9})):
        again = Rules.from_dict(rules.to_dict())
        assert again == rules and again.name == rules.name
    assert Rules.from_dict({"preset": "victorian", "ace_high": True}).lead == "any"
    assert Rules(name="victorian").name == "modern"  # the name follows the options


def _cards(mask: int) -> list[int]:
    return [c for c in range(52) if (mask >> c) & 1]


def _dead_for(hands: list[str], turnup: str) -> list[str]:
    named = {parse_card(c) for h in hands for c in h.split()} | {parse_card(turnup)}
    return [CARD_NAMES[c] for c in PACK if c not in named] + [turnup]


def test_r10_played_card_owner_is_played() -> None:
    deal = make_deal(["5S", "9D TD 2S", "4S"], "2H")
    deal.play("9D")
    assert deal.owner[parse_card("9D")] == PLAYED


def test_can_deal_is_the_one_rule_of_a_broke_dealer() -> None:
    strict = Rules(allow_credit=False)
    need = sum(strict.dressing)
    assert not strict.can_deal(need - 1) and strict.can_deal(need)
    assert Rules().can_deal(-1000)
    assert strict.can_deal(np.array([need - 1, need, need + 5])).tolist() == [False, True, True]
    assert Rules().can_deal(np.array([-5, 0])).tolist() == [True, True]
    with pytest.raises(RulesError, match="no deal can start: with allow_credit=false a dealer needs 15"):
        Rules(allow_credit=False, start_counters=10).check_startable()
    Rules(allow_credit=False, start_counters=need).check_startable()


def test_the_batch_refuses_rules_under_which_no_deal_can_start() -> None:
    from popejoan_env.batch import BatchDeals

    with pytest.raises(RulesError, match="no deal can start"):
        BatchDeals(Rules(allow_credit=False, start_counters=10), 4, 2, rng=np.random.default_rng(0))


# ----------------------------------------------------------------------------- the options table of docs/rules.md
def _shown(value: object) -> str:
    """An option's value as docs/rules.md's table writes it (``true``, ``6/2/2/1/1/1/1/1``, ``lowest_of_suit``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return "/".join(map(str, value))
    return str(value)


def _leading(cell: str) -> str:
    """The value a cell of the table begins with, before its explanation (``equal`` of "`equal`: ⌊51/(n+1)⌋ each")."""
    return re.split(r"[:(]", cell, maxsplit=1)[0].strip().strip("`")


def test_the_options_table_of_the_rules_page_is_every_option_with_each_presets_value_and_choices() -> None:
    page = pathlib.Path(__file__).resolve().parents[1] / "docs" / "rules.md"
    section = page.read_text(encoding="utf-8").split("## Variants and presets", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| `")]
    options = [f.name for f in dataclasses.fields(Rules) if f.name != "name"]
    assert [row[0].strip("`") for row in rows] == options, "docs/rules.md's table is not every option of Rules"
    for option, modern, victorian, other in ((row[0].strip("`"), *row[1:4]) for row in rows):
        assert _leading(modern) == _shown(getattr(MODERN, option)), f"docs/rules.md: modern's {option} is {modern!r}"
        same = "the same" if getattr(VICTORIAN, option) == getattr(MODERN, option) else None
        assert _leading(victorian) in (_shown(getattr(VICTORIAN, option)), same), (
            f"docs/rules.md: victorian's {option} is {victorian!r}")
        choices = _CHOICES.get(option, ("true", "false") if option in _BOOLS else ())
        assert set(choices) <= {_leading(modern), _leading(victorian), _leading(other)}, (
            f"docs/rules.md: the row of {option} does not name each of its values {list(choices)}")
