"""The engine's one decision loop (``Deal.advance``, ``Deal.play_out``) and its public mid-game constructor
(``Deal.from_position``)."""

from __future__ import annotations

import numpy as np
import pytest

from popejoan_env import MODERN, VICTORIAN, Deal, Rules
from popejoan_env.cards import CARD_NAMES, PACK_MASK, parse_card
from popejoan_env.engine import SUCCESSOR, successors_of
from popejoan_env.errors import IllegalActionError, InvalidDealError
from popejoan_env.seat_view import seat_view

from conftest import make_deal, snapshot

RULES = [MODERN, VICTORIAN, Rules(ace_high=True, deal="all_round", pair_split="halves")]


def manual(deal: Deal, rng: np.random.Generator, lone_leads: bool) -> list[int]:
    """The loop written out by hand: what every adapter used to repeat; returns the legal sizes it chose from."""
    asked = []
    while not deal.done:
        legal = deal.legal_actions()
        if deal.forced >= 0 or (lone_leads and len(legal) == 1):
            deal.play(legal[0])
            continue
        asked.append(len(legal))
        deal.play(legal[int(rng.integers(len(legal)))])
    return asked


@pytest.mark.parametrize("lone_leads", [True, False])
@pytest.mark.parametrize("rules", RULES, ids=["modern", "victorian", "mixed"])
def test_play_out_is_the_hand_written_loop(rules: Rules, lone_leads: bool) -> None:
    for seed in range(40):
        players = 3 + seed % 6
        a = Deal.new(rules, players, seed % players, np.random.default_rng(seed))
        b = a.copy()
        asked_a = manual(a, np.random.default_rng(seed + 1), lone_leads)
        rng = np.random.default_rng(seed + 1)
        asked_b: list[int] = []

        def choose(deal: Deal, legal: list[int]) -> int:
            assert deal is b and deal.forced < 0 and legal == deal.legal_actions()
            assert len(legal) > 1 or not lone_leads
            asked_b.append(len(legal))
            return legal[int(rng.integers(len(legal)))]

        b.play_out(choose, lone_leads=lone_leads)
        assert b.plays == a.plays and b.delta == a.delta and b.awards == a.awards and asked_b == asked_a


def test_advance_stops_at_a_real_choice_and_returns_its_cards() -> None:
    deal = make_deal(["AS 2S 3S AH", "4S 5C", "6C 7C"], turnup="KD")
    assert deal.to_act == 1
    assert deal.advance() == deal.legal_actions() == [parse_card("5C"), parse_card("4S")]
    deal.play("4S")                        # 4♠ → nobody holds 5♠... seat 1 leads again: one card left
    assert [CARD_NAMES[c] for _, c in deal.plays] == ["4S"]
    assert deal.advance() == []            # 5♣ is a lone lead: played, 6♣ 7♣ forced, ... to the end
    assert deal.done


def test_play_out_refuses_an_illegal_choice_like_play_does() -> None:
    deal = Deal.new(MODERN, 4, 0, np.random.default_rng(3))
    deal.advance()
    before = snapshot(deal)
    with pytest.raises(IllegalActionError, match="legal:"):
        deal.play_out(lambda d, legal: next(c for c in range(52) if c not in legal and c != 20))
    assert snapshot(deal) == before


def test_successors_of_is_the_successor_table_applied_to_every_card() -> None:
    for ace_high in (False, True):
        for card in (c for c in range(52) if (PACK_MASK >> c) & 1):
            nxt = SUCCESSOR[ace_high][card]
            assert successors_of(1 << card, ace_high) == ((1 << nxt) if nxt >= 0 else 0), (ace_high, card)


# --------------------------------------------------------------------- from_position
def midgame(seed: int, rules: Rules, players: int) -> Deal:
    rng = np.random.default_rng(seed)
    deal = Deal.new(rules, players, seed % players, rng, board=[3, 1, 0, 2, 0, 0, 1, 5],
                    balances=[int(x) for x in rng.integers(-20, 60, players)])
    for _ in range(int(rng.integers(1, 25))):
        if deal.done:
            break
        legal = deal.legal_actions()
        deal.play(legal[int(rng.integers(len(legal)))])
    return deal


def position_of(deal: Deal) -> Deal:
    played = [0] * deal.players
    for seat, card in deal.plays:
        played[seat] |= 1 << card
    return Deal.from_position([list(_cards(h)) for h in deal.hands], [CARD_NAMES[c] for c in deal.dead], played,
                              to_act=deal.to_act, forced=deal.forced, leader=deal.leader, dealer=deal.dealer,
                              rules=deal.rules, board=deal.board, balances=deal.balances)


def _cards(mask: int) -> list[str]:
    return [CARD_NAMES[c] for c in range(52) if (mask >> c) & 1]


@pytest.mark.parametrize("rules", RULES, ids=["modern", "victorian", "mixed"])
def test_from_position_derives_the_caches_and_plays_on_like_the_real_deal(rules: Rules) -> None:
    checked = 0
    for seed in range(80):
        deal = midgame(seed, rules, 3 + seed % 6)
        if deal.done:
            continue
        pos = position_of(deal)
        for name in ("hands", "hand_sizes", "owner", "dead", "dead_mask", "turnup", "trumps", "board",
                     "balances", "to_act", "forced", "leader", "revealed_dead", "played_mask", "_pair_by"):
            assert getattr(pos, name) == getattr(deal, name), name
        assert pos.plays == [] and pos.board_before == tuple(deal.board) and pos.initial_hands == tuple(deal.hands)
        assert seat_view(pos, pos.to_act).legal == seat_view(deal, deal.to_act).legal
        rng = np.random.default_rng(seed)
        while not deal.done:
            legal = deal.legal_actions()
            card = legal[int(rng.integers(len(legal)))]
            deal.play(card)
            pos.play(card)
        assert pos.balances == deal.balances and pos.board == deal.board and pos.winner == deal.winner
        checked += 1
    assert checked > 50


def test_from_position_refuses_what_cannot_be() -> None:
    deal = make_deal(["AS 2S 3S AH", "4S 5C", "6C 7C"], turnup="KD", dealer=2)
    deal.play("AS")
    hands = [_cards(h) for h in deal.hands]
    dead = [CARD_NAMES[c] for c in deal.dead]
    played = [["AS"], [], []]
    good = Deal.from_position(hands, dead, played, to_act=0, forced="2S", leader=0, dealer=2)
    assert good.forced == parse_card("2S") and good.legal_actions() == [parse_card("2S")]
    cases = [
        (dict(hands=hands, dead=dead, played=[["AS"], ["AS"], []], to_act=0, forced="2S", leader=0), "twice"),
        (dict(hands=hands, dead=dead[:-3] + dead[-1:], played=played, to_act=0, forced="2S", leader=0), "missing"),
        (dict(hands=hands, dead=dead, played=played, to_act=1, forced="2S", leader=0), "not in the hand of seat 1"),
        (dict(hands=hands, dead=dead, played=[[], [], []], to_act=0, forced="2S", leader=0), "missing"),
        (dict(hands=[hands[0] + ["AS"], hands[1], hands[2]], dead=dead, played=[[], [], []], to_act=0,
              forced="3S", leader=0), "has not been played"),
        (dict(hands=hands, dead=dead, played=played, to_act=0, forced="2S"), "leader"),
        (dict(hands=hands, dead=dead, played=played, to_act=3), "to_act must be a seat 0..2"),
        (dict(hands=hands, dead=dead, played=played[:2], to_act=0), "played must give"),
        (dict(hands=hands, dead=dead, played=played, to_act=0, forced="8D", leader=0), "8D"),
        (dict(hands=[[], hands[1], hands[0] + hands[2]], dead=dead, played=played, to_act=1), "holds no card"),
        (dict(hands=[PACK_MASK << 1, 0, 0], dead=dead, played=played, to_act=0), "not cards of the pack"),
    ]
    for kwargs, message in cases:
        with pytest.raises(InvalidDealError, match=message):
            Deal.from_position(**kwargs)


@pytest.mark.parametrize("rules", RULES, ids=["modern", "victorian", "mixed"])
def test_from_position_with_its_history_is_observed_as_the_real_deal(rules: Rules) -> None:
    from popejoan_env.batch import BatchDeals
    from popejoan_env.batch_observation import encode_batch
    from popejoan_env.observation import encode

    checked = 0
    for seed in range(40):
        deal = midgame(seed, rules, 3 + seed % 6)
        if deal.done or not deal.plays:
            continue
        played = [0] * deal.players
        for seat, card in deal.plays:
            played[seat] |= 1 << card
        pos = Deal.from_position(list(deal.hands), list(deal.dead), played, to_act=deal.to_act, forced=deal.forced,
                                 leader=deal.leader, dealer=deal.dealer, rules=deal.rules, board=deal.board,
                                 balances=deal.balances, history=deal.plays)
        assert pos.plays == deal.plays and pos.initial_hands == deal.initial_hands
        # the batch plays on to a real choice (a card due is played at once): compare it only at a lead
        batch = BatchDeals.from_deals([pos], lone_leads=False) if deal.forced < 0 else None
        for seat in range(deal.players):
            assert np.array_equal(encode(pos, seat), encode(deal, seat)), seat
            if batch is not None:
                assert np.array_equal(encode_batch(batch, seats=seat)[0], encode(deal, seat)), seat
        checked += 1
    assert checked > 25


def test_from_position_refuses_a_history_that_is_not_the_cards_played() -> None:
    deal = make_deal(["AS 2S 3S AH", "4S 5C", "6C 7C"], turnup="KD", dealer=2)
    deal.play("AS")
    kwargs = dict(hands=[_cards(h) for h in deal.hands], dead=[CARD_NAMES[c] for c in deal.dead],
                  played=[["AS"], [], []], to_act=0, forced="2S", leader=0, dealer=2)
    assert Deal.from_position(**kwargs, history=[(0, "AS")]).plays == [(0, parse_card("AS"))]
    for history, message in (([(1, "AS")], "exactly the cards"), ([], "exactly the cards"),
                             ([(0, "AS"), (0, "AS")], "twice"), ([(0, "AS", 1)], r"\(seat, card\)"),
                             ([(5, "AS")], "must be a seat"), ("AS", "list of"), ([(0, "ZZ")], "ZZ")):
        with pytest.raises(InvalidDealError, match=message):
            Deal.from_position(**kwargs, history=history)


def test_copy_sets_every_slot_and_shares_no_mutable_state() -> None:
    deal = midgame(3, MODERN, 5)
    twin = deal.copy()
    missing = [name for name in Deal.__slots__ if not hasattr(twin, name)]
    assert not missing, f"Deal.copy does not set {missing}"
    for name in Deal.__slots__:
        assert getattr(twin, name) == getattr(deal, name), name
        if isinstance(getattr(deal, name), (list, dict)):
            assert getattr(twin, name) is not getattr(deal, name), name
