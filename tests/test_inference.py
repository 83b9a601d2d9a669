"""What each seat cannot hold (``inference.cannot_hold``): sound over many random positions, tight on
hand-built deals, one named test per inference rule."""

from __future__ import annotations

import numpy as np
import pytest

from popejoan_env import MODERN, VICTORIAN, Deal, Rules
from popejoan_env.cards import PACK_MASK, POPE, mask_of, names_of, parse_cards
from popejoan_env.inference import below_lead, cannot_hold, lead_exclusions, must_be_dead
from popejoan_env.seat_view import NO_SUCCESSOR, SUCCESSOR_DEAD, SUCCESSOR_PLAYED, seat_view

from conftest import make_deal

VARIANTS = [
    MODERN, VICTORIAN,
    Rules(ace_high=True),
    Rules(deal="all_round", pair_split="halves", dealer_sees_dead_hand=True),
    Rules(ace_high=True, lead="any", pope_excused=False),
]


def cards(text: str) -> int:
    return mask_of(parse_cards(text.split()))


def lead(deal: Deal, card: str) -> None:
    """Lead ``card`` and play the forced cards after it, up to the next lead."""
    deal.play(card)
    deal.advance(lone_leads=False)


@pytest.mark.slow
def test_inference_is_sound_over_100000_random_positions() -> None:
    """Never excludes the true place of a card: the real hand of every seat avoids what it 'cannot hold'."""
    rng = np.random.default_rng(2026)
    positions = 0
    deal_no = 0
    while positions < 100_000:
        rules = VARIANTS[deal_no % len(VARIANTS)]
        players = 3 + deal_no % 6
        deal = Deal.new(rules, players, deal_no % players, rng)
        deal_no += 1
        while True:
            observer = int(rng.integers(players))
            view = seat_view(deal, observer)
            excluded = cannot_hold(view)
            for k in range(players):
                assert not deal.hands[(observer + k) % players] & excluded[k], (rules, deal.plays, observer, k)
            dead = must_be_dead(view)
            assert dead & deal.dead_mask == dead
            positions += 1
            if deal.done:
                break
            legal = deal.legal_actions()
            deal.play(legal[int(rng.integers(len(legal)))])
    assert deal_no > 3000


def test_lead_lowest_of_suit_excludes_the_lower_cards_of_the_suit() -> None:
    # dealer 2, so seat 0 is eldest and leads 6♠: it holds no A..5 of spades for the rest of the deal
    deal = make_deal(["6S 9S KH", "2S 3C", "7S 4C"], turnup="QD", dealer=2)
    lead(deal, "6S")                      # 6♠ led; 7♠ (seat 2) forced; 8♠ is dead → stop, seat 2 leads
    view = seat_view(deal, 1)
    excluded = cannot_hold(view)
    leader = 2                           # seat 0 is relative seat 2 of observer 1
    assert names_of(excluded[leader] & cards("AS 2S 3S 4S 5S")) == ["AS", "2S", "3S", "4S", "5S"]
    assert not excluded[leader] & cards("9S KH")    # nothing said of higher spades or other suits
    assert names_of(lead_exclusions(view)[leader]) == ["AS", "2S", "3S", "4S", "5S"]


def test_lead_under_ace_high_says_nothing_of_the_ace() -> None:
    assert names_of(below_lead(parse_cards(["6S"])[0], ace_high=True)) == ["2S", "3S", "4S", "5S"]
    assert names_of(below_lead(parse_cards(["AS"])[0], ace_high=True)) == [
        "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "TS", "JS", "QS", "KS"]
    assert names_of(below_lead(parse_cards(["AS"])[0], ace_high=False)) == []


def test_lead_any_says_nothing() -> None:
    deal = make_deal(["6S 9S KH", "2S 3C", "7S 4C"], turnup="QD", dealer=2, rules=VICTORIAN.replace(deal="equal"))
    lead(deal, "9S")                      # under lead="any" the 9♠ may be led with the 6♠ in hand
    view = seat_view(deal, 1)
    assert lead_exclusions(view) == [0, 0, 0]
    assert not cannot_hold(view)[2] & cards("6S AS 5S")


def test_known_cards_are_excluded_from_every_other_seat() -> None:
    deal = make_deal(["6S 9S KH", "2S 3C", "7S 4C"], turnup="QD", dealer=2)
    lead(deal, "6S")
    view = seat_view(deal, 1)
    excluded = cannot_hold(view)
    for k in (1, 2):
        assert excluded[k] & cards("6S 7S") == cards("6S 7S")          # played
        assert excluded[k] & view.hand == view.hand                    # the observer's own cards
        assert excluded[k] & view.known_dead == view.known_dead        # the turn-up and the revealed 8♠
    assert excluded[0] == PACK_MASK & ~view.hand


def test_settlement_shows_who_holds_the_pope() -> None:
    deal = make_deal(["AC", "9D 2H", "3H 4H"], turnup="QS", dealer=2)
    lead(deal, "AC")                      # seat 0 goes out; seat 1 still holds the 9♦ and is excused
    assert deal.done and deal.payments[0][2] == 0
    view = seat_view(deal, 2)
    excluded = cannot_hold(view)
    assert view.pope_holder == 2         # seat 1 is relative seat 2 of observer 2
    assert not (excluded[2] >> POPE) & 1 and (excluded[1] >> POPE) & 1
    assert excluded[1] == PACK_MASK      # the winner holds nothing


def test_stops_carry_their_cause() -> None:
    deal = make_deal(["KC 5D 6D 7D 2S", "2H", "3H 9H"], turnup="QS", dealer=2)
    lead(deal, "KC")                      # a King: no successor
    lead(deal, "5D")                      # 5♦ 6♦ 7♦: the 7♦ stops (the 8♦ is out)
    view = seat_view(deal, 0)
    assert [(s.card, s.cause) for s in view.stops] == [(parse_cards(["KC"])[0], NO_SUCCESSOR),
                                                      (parse_cards(["7D"])[0], NO_SUCCESSOR)]
    deal2 = make_deal(["2C 3H", "4H", "5C 9S"], turnup="3C", dealer=2)
    lead(deal2, "2C")                     # the 3♣ is the turn-up: successor in the dead hand
    assert [s.cause for s in seat_view(deal2, 1).stops] == [SUCCESSOR_DEAD]
    deal3 = make_deal(["2C 4C 8H", "3C 9H", "5S 6S"], turnup="QD", dealer=2)
    lead(deal3, "2C")             # 2♣ by seat 0, 3♣ by seat 1 (forced), 4♣ seat 0 (forced), 5♣ dead
    assert seat_view(deal3, 2).stops[-1].cause == SUCCESSOR_DEAD
    deal4 = make_deal(["QH 6C 9S", "KH 8C 3S JD", "7C 4S 2D"], turnup="QD", dealer=2)
    lead(deal4, "QH")                # Q♥ K♥ (seat 1, forced): a King stops
    lead(deal4, "8C")                # seat 1 leads 8♣; 9♣ is dead: a stop
    lead(deal4, "3S")                # seat 1 leads 3♠, 4♠ (seat 2, forced); 5♠ dead: a stop
    lead(deal4, "7C")                # seat 2 leads 7♣: the 8♣ was played earlier
    assert [s.cause for s in seat_view(deal4, 0).stops] == [NO_SUCCESSOR, SUCCESSOR_DEAD, SUCCESSOR_DEAD,
                                                           SUCCESSOR_PLAYED]
