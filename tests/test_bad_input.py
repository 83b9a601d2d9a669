"""E20: bad input is refused with the right error, a message naming the problem, and no change of state."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import make_deal, play_all, snapshot
from popejoan_env import (
    Deal, GameOverError, IllegalActionError, InvalidDealError, MODERN, PopeJoanError, Rules, RulesError,
    Session, UnknownCardError, VICTORIAN,
)
from popejoan_env.cards import CARD_NAMES, PACK
from popejoan_env.errors import UnknownCardActionError
from popejoan_env.rules import resolve_rules

HANDS = ["4C KD 9S", "2C 3C QD 5D 9D", "5C JD 7S"]  # seat 1 (eldest) leads; 6C and most cards are dead


def fresh() -> Deal:
    return make_deal(HANDS, "2H")


def full_hands() -> tuple[list[list[str]], list[str]]:
    """A valid 3-player deal of all 51 cards: 12 each, 15 in the dead hand."""
    cards = [CARD_NAMES[c] for c in PACK]
    return [cards[0:12], cards[12:24], cards[24:36]], cards[36:]


def refused(deal: Deal, card: object, error: type[PopeJoanError], *fragments: str) -> None:
    """Playing ``card`` raises ``error`` whose message holds every fragment, and the deal is unchanged."""
    before = snapshot(deal)
    with pytest.raises(error) as info:
        deal.play(card)  # type: ignore[arg-type]
    for fragment in fragments:
        assert fragment in str(info.value), f"{fragment!r} not in {str(info.value)!r}"
    assert snapshot(deal) == before


# ----------------------------------------------------------------------------- plays
def test_e20_card_not_held() -> None:
    deal = fresh()
    refused(deal, "4C", IllegalActionError, "seat 1 cannot play 4C", "seat 1 does not hold it", "legal: ['2C', '5D']")
    # Where a card not held lies is hidden information: the message must not tell.
    refused(deal, "6C", IllegalActionError, "seat 1 cannot play 6C", "seat 1 does not hold it")
    refused(deal, "2H", IllegalActionError, "cannot play 2H", "does not hold it")  # the turn-up
    for card in ("4C", "6C"):
        with pytest.raises(IllegalActionError) as info:
            deal.play(card)
        assert "dead hand" not in str(info.value) and "seat 0" not in str(info.value)
    play_all(deal, "2C 3C 4C 5C")  # 6C dead: seat 2 leads
    refused(deal, "2C", IllegalActionError, "seat 2 cannot play 2C", "has been played", "legal: ['JD', '7S']")


def test_e20_illegal_lead_not_lowest_of_suit() -> None:
    deal = fresh()
    refused(deal, "9D", IllegalActionError, "seat 1 cannot play 9D", "lowest card held of its suit", "legal: ['2C', '5D']")
    refused(deal, "QD", IllegalActionError, "seat 1 cannot play QD", "R7")


def test_e20_wrong_card_during_forced_continuation() -> None:
    deal = fresh()
    deal.play("2C")
    refused(deal, "5D", IllegalActionError, "seat 1 cannot play 5D", "must continue the sequence with 3C", "legal: ['3C']")
    deal.play("3C")
    refused(deal, "9S", IllegalActionError, "seat 0 cannot play 9S", "must continue the sequence with 4C")
    refused(deal, "5C", IllegalActionError, "seat 0 cannot play 5C", "seat 0 does not hold it", "legal: ['4C']")


@pytest.mark.parametrize("card", ["8D", "1X", "", "ZZ", "10", "9DD", 99, -1, 20, 52, True, False, 1.5, None, np.int64(20)])
@pytest.mark.parametrize("forced", [False, True])
def test_e20_unknown_card(card: object, forced: bool) -> None:
    deal = fresh()
    if forced:
        deal.play("2C")
    legal = "legal: ['3C']" if forced else "legal: ['2C', '5D']"
    refused(deal, card, UnknownCardError, "seat 1 cannot play", legal)
    # an unknown card offered as a play is also an illegal action, for callers that catch only that
    refused(deal, card, IllegalActionError, "seat 1 cannot play", legal)
    with pytest.raises(UnknownCardActionError):
        deal.play(card)  # type: ignore[arg-type]


def test_e20_unknown_card_messages_name_the_card() -> None:
    deal = fresh()
    refused(deal, "8D", UnknownCardError, "8D", "not in the Pope Joan pack")
    refused(deal, 20, UnknownCardError, "20", "8D excluded")
    refused(deal, "1X", UnknownCardError, "'1X'", "A23456789TJQK")
    refused(deal, True, UnknownCardError, "True")


def test_e20_numpy_card_ids_are_accepted() -> None:
    deal = fresh()
    deal.play(np.int64(1))  # 2C
    assert deal.plays == [(1, 1)]


def test_e20_playing_after_the_deal_is_over() -> None:
    deal = make_deal(["5S", "2C 3C", "4S"], "2H")
    play_all(deal, "2C 3C")
    for card in ("4S", "5S", "ZZ", 99):
        refused(deal, card, GameOverError, "the deal is over", "seat 1 went out")
    deal = make_deal(["5S", "2C 3C", "4S"], "9D", rules=VICTORIAN)
    refused(deal, "2C", GameOverError, "ended at the turn-up")


# ----------------------------------------------------------------------------- deals
def test_e20_valid_full_deal_accepted() -> None:
    hands, dead = full_hands()
    deal = Deal.from_cards(hands, dead)
    assert deal.hand_sizes == [12, 12, 12] and len(deal.dead) == 15


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        (lambda h, d: (h, d + ["AC"]), ["not a partition", "AC is dealt twice", "seat 0", "dead hand"]),
        (lambda h, d: ([h[0] + ["2C"], h[1], h[2]], d), ["2C is dealt twice", "seat 0 and seat 0"]),
        (lambda h, d: (h, d[:-1]), ["not a partition", "missing ['KS']"]),
        (lambda h, d: (h, d[:-1] + ["8D"]), ["dead hand", "8D"]),
        (lambda h, d: ([h[0] + ["1X"], h[1], h[2]], d), ["hand of seat 0", "'1X'"]),
        (lambda h, d: (h[:2], d), ["3 to 8 hands", "got 2"]),
        (lambda h, d: (h + [[]] * 6, d), ["3 to 8 hands", "got 9"]),
        (lambda h, d: ([h[0], [], h[2]], d + h[1]), ["hand of seat 1 is empty"]),
        (lambda h, d: (h, []), ["dead hand must be a non-empty list"]),
        (lambda h, d: ("AC 2C", d), ["hands must be a list"]),
        (lambda h, d: ([h[0], "AS KS", h[2]], d), ["hand of seat 1 must be a list"]),
    ],
)
def test_e20_deal_not_a_partition(change, fragments: list[str]) -> None:
    hands, dead = change(*full_hands())
    with pytest.raises(InvalidDealError) as info:
        Deal.from_cards(hands, dead)
    for fragment in fragments:
        assert fragment in str(info.value), f"{fragment!r} not in {str(info.value)!r}"


@pytest.mark.parametrize("dealer", [-1, 3, True, "0", 1.0, None])
def test_e20_bad_dealer(dealer: object) -> None:
    hands, dead = full_hands()
    with pytest.raises(InvalidDealError, match="dealer must be a seat 0..2"):
        Deal.from_cards(hands, dead, dealer=dealer)  # type: ignore[arg-type]
    with pytest.raises(InvalidDealError, match="dealer must be a seat 0..2"):
        Deal.new(MODERN, 3, dealer, np.random.default_rng(0))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("board", "fragment"),
    [
        ({"popes": 3}, "unknown board compartment(s) ['popes']"),
        ({"pope": -1}, "pope must hold a non-negative integer"),
        ({"game": 1.5}, "game must hold a non-negative integer"),
        ({"ace": True}, "ace must hold"),
        ([1, 2, 3], "board must map compartment names"),
        ("pope", "board must map compartment names"),
        ({3: 1}, "unknown board compartment(s) ['3']"),
    ],
)
def test_e20_bad_board(board: object, fragment: str) -> None:
    hands, dead = full_hands()
    with pytest.raises(InvalidDealError) as info:
        Deal.from_cards(hands, dead, board=board)  # type: ignore[arg-type]
    assert fragment in str(info.value)
    with pytest.raises(InvalidDealError):
        Session(MODERN, 3, board=board)  # type: ignore[arg-type]


@pytest.mark.parametrize("balances", [[1, 2], [1, 2, 3, 4], [1, 2, "3"], [1, 2, 3.0], [True, 0, 0], "123", 5])
def test_e20_bad_balances(balances: object) -> None:
    hands, dead = full_hands()
    with pytest.raises(InvalidDealError, match="balances must be 3 integers"):
        Deal.from_cards(hands, dead, balances=balances)  # type: ignore[arg-type]
    with pytest.raises(InvalidDealError, match="balances must be 3 integers"):
        Session(MODERN, 3, balances=balances)  # type: ignore[arg-type]


def test_e20_refused_random_deal_leaves_the_generator_untouched() -> None:
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    for kwargs in ({"dealer": 7}, {"board": {"x": 1}}, {"balances": [1]}, {"players": 9}, {"players": 2}):
        args = {"rules": MODERN, "players": 4, "dealer": 0, "rng": rng} | kwargs
        with pytest.raises(InvalidDealError):
            Deal.new(**args)
        assert rng.bit_generator.state == state
    with pytest.raises(InvalidDealError, match="explicit numpy.random.Generator"):
        Deal.new(MODERN, 4, 0, None)


# ----------------------------------------------------------------------------- rules
@pytest.mark.parametrize(
    ("make", "fragments"),
    [
        (lambda: Rules(foo=1), ["unknown rules option(s) ['foo']", "ace_high"]),
        (lambda: Rules(lead="highest"), ["lead='highest'", "lowest_of_suit", "any"]),
        (lambda: Rules(deal="two_by_two"), ["deal='two_by_two'", "all_round"]),
        (lambda: Rules(pope_turnup="nothing"), ["pope_turnup"]),
        (lambda: Rules(pair_split="thirds"), ["pair_split='thirds'", "halves"]),
        (lambda: Rules(ace_high="yes"), ["ace_high must be true or false"]),
        (lambda: Rules(allow_credit=1), ["allow_credit must be true or false"]),
        (lambda: Rules(dressing=(1, 2)), ["dressing must give 8 counts"]),
        (lambda: Rules(dressing={"popes": 1}), ["unknown compartment(s) ['popes']"]),
        (lambda: Rules(dressing=(6, 2, 2, 1, 1, 1, 1, -1)), ["non-negative integers"]),
        (lambda: Rules(start_counters=1.5), ["start_counters must be an integer"]),
        (lambda: Rules(start_counters=-3), ["start_counters must be 0 or more"]),
        (lambda: Rules.preset("edwardian"), ["unknown rules preset 'edwardian'", "victorian"]),
        (lambda: Rules.from_dict({"preset": "modern", "trumps": "spades"}), ["unknown rules option(s) ['trumps']"]),
        (lambda: Rules.from_dict("modern"), ["rules must be a mapping"]),
        (lambda: MODERN.replace(lead_any=True), ["unknown rules option(s) ['lead_any']"]),
        (lambda: resolve_rules(5), ["rules must be a Rules object"]),
        (lambda: Deal.new("edwardian", 4, 0, np.random.default_rng(0)), ["unknown rules preset"]),
        (lambda: Session({"lead": "most"}, 4), ["lead='most'"]),
    ],
)
def test_e20_unknown_rules_option_or_value(make, fragments: list[str]) -> None:
    with pytest.raises(RulesError) as info:
        make()
    for fragment in fragments:
        assert fragment in str(info.value), f"{fragment!r} not in {str(info.value)!r}"


def test_e20_errors_are_value_errors() -> None:
    for error in (UnknownCardError, RulesError, InvalidDealError, IllegalActionError, GameOverError):
        assert issubclass(error, PopeJoanError) and issubclass(error, ValueError)


# ----------------------------------------------------------------------------- sessions
def test_e20_bad_session_arguments() -> None:
    with pytest.raises(InvalidDealError, match="3 to 8 players"):
        Session(MODERN, 9)
    with pytest.raises(InvalidDealError, match="positive number of deals"):
        Session(MODERN, 4, deals=0)
    with pytest.raises(InvalidDealError, match="first_dealer must be a seat 0..3"):
        Session(MODERN, 4, first_dealer=4)
    session = Session(MODERN, 3, np.random.default_rng(0), deals=1)
    hands, dead = full_hands()
    with pytest.raises(InvalidDealError, match="both hands and dead"):
        session.next_deal(hands)
    with pytest.raises(InvalidDealError, match="3 players, the deal gives 2 hands"):
        session.next_deal(hands[:2], dead + hands[2])
    assert session.deals == []
    deal = session.next_deal()
    with pytest.raises(GameOverError, match="not finished"):
        session.next_deal()
    while not deal.done:
        deal.play(deal.legal_actions()[0])
    assert session.over
    with pytest.raises(GameOverError, match="session is over after 1 deals"):
        session.next_deal()
