"""The observation: layout, exact decode, incremental encoder, and that nothing hidden leaks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import popejoan_env.observation as obs_module
from popejoan_env import MODERN, VICTORIAN, Deal, Rules
from popejoan_env.cards import EIGHT_DIAMONDS, PACK_MASK, POPE, cards_of, iter_cards
from popejoan_env.engine import DEAD
from popejoan_env.errors import IllegalActionError
from popejoan_env.observation import (
    LAYOUT, OBS_SIZE, OBS_VERSION, Encoder, action_mask, decode, encode, encode_view, layout_table,
)
from popejoan_env.seat_view import seat_view

def field(vector: np.ndarray, name: str) -> np.ndarray:
    """The slice of an observation holding one field of ``LAYOUT``."""
    start, length = next((s, n) for row, s, n, _ in LAYOUT if row == name)
    return vector[..., start:start + length]


VARIANTS = {
    "modern": MODERN,
    "victorian": VICTORIAN,
    "mixed": Rules(deal="all_round", ace_high=True, pair_split="halves", dealer_sees_dead_hand=True),
}


def random_positions(rules: Rules, players: int, rng: np.random.Generator, deals: int):
    """Yield every position (deal, after each card) of ``deals`` random deals with random play."""
    for _ in range(deals):
        deal = Deal.new(rules, players, int(rng.integers(players)), rng,
                        board=[int(x) for x in rng.integers(0, 40, 8)],
                        balances=[int(x) for x in rng.integers(-100, 100, players)])
        yield deal
        while not deal.done:
            legal = deal.legal_actions()
            deal.play(legal[int(rng.integers(len(legal)))])
            yield deal


def test_layout_is_contiguous_and_documented() -> None:
    assert OBS_VERSION == 2
    start = 0
    for name, row_start, length, text in LAYOUT:
        assert row_start == start and length > 0 and text, name
        start += length
    assert start == OBS_SIZE == 1285
    assert layout_table() in obs_module.__doc__
    assert f"OBS_SIZE = {OBS_SIZE}" in obs_module.__doc__


def test_encode_fields_of_a_fresh_deal() -> None:
    deal = Deal.from_cards(
        hands=[["AC", "2C", "3C", "4C", "5C", "6C", "7C", "8C", "9C", "TC"],
               ["JC", "QC", "KC", "AD", "2D", "3D", "4D", "5D", "6D", "7D"],
               ["9D", "TD", "JD", "QD", "KD", "AH", "2H", "3H", "4H", "5H"],
               ["6H", "7H", "8H", "9H", "TH", "JH", "QH", "KH", "AS", "2S"]],
        dead=["3S", "4S", "5S", "6S", "7S", "8S", "9S", "TS", "JS", "KS", "QS"],
        dealer=3, board={"pope": 4}, balances=[48, 48, -8, 48])
    o = encode(deal, 1)
    assert o.dtype == np.float32 and o.shape == (OBS_SIZE,)
    assert cards_of(int(sum(1 << int(c) for c in np.flatnonzero(field(o, "hand"))))) == cards_of(deal.hands[1])
    assert np.flatnonzero(field(o, "turnup")).tolist() == [50]          # QS
    assert np.flatnonzero(field(o, "trumps")).tolist() == [3]           # spades
    # dressing (R1) on top of 4: pope 10; the dealer took the queen with the turn-up (R5)
    assert (field(o, "board") * 16).tolist() == [10, 2, 2, 1, 1, 0, 1, 1]
    # balances relative to seat 1: seats 1, 2, 3, 0; the dealer paid 15 and took 1
    assert (field(o, "balances") * 64).tolist() == [48, -8, 34, 48, 0, 0, 0, 0]
    assert np.flatnonzero(field(o, "dealer")).tolist() == [2]
    assert np.flatnonzero(field(o, "to_act")).tolist() == [3]           # eldest = seat 0 = relative 3
    assert field(o, "lead_due").tolist() == [1.0]
    assert field(o, "seats").tolist() == [1, 1, 1, 1, 0, 0, 0, 0]
    assert not field(o, "forced").any() and not field(o, "dead_hand").any()
    assert field(o, "pope_out").tolist() == [1.0]
    assert (field(o, "dead_size") * 16).tolist() == [11]
    assert not action_mask(deal, 1).any()
    assert np.flatnonzero(action_mask(deal, 0)).tolist() == [0]          # lowest club: AC


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_decode_is_the_exact_inverse_and_encoder_matches(name: str) -> None:
    rules = VARIANTS[name]
    rng = np.random.default_rng(11)
    for players in range(3, 9):
        for deal in random_positions(rules, players, rng, deals=3):
            for seat in range(players):
                vector, mask = encode(deal, seat), action_mask(deal, seat)
                view = seat_view(deal, seat)
                decoded = decode(vector, mask)
                if rules in (MODERN, VICTORIAN):
                    assert decoded == view
                assert decoded == dataclasses.replace(view, rules=decoded.rules)
                assert decode(vector) == decoded          # legal also follows from the observation
                assert np.array_equal(np.flatnonzero(mask), sorted(view.legal))
                assert mask.dtype == np.int8 and mask.shape == (52,)
                if deal.to_act != seat:
                    assert not mask.any()


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_one_encoder_incremental_fresh_and_from_a_view_agree(name: str) -> None:
    rng = np.random.default_rng(5)
    for players in (3, 5, 8):
        for _ in range(4):
            deal = Deal.new(VARIANTS[name], players, int(rng.integers(players)), rng,
                            board=[3] * 8, balances=[48] * players)
            encoder = Encoder(deal)
            while True:
                for seat in range(players):
                    assert np.array_equal(encoder.observe(seat), encode(deal, seat))
                    assert np.array_equal(encoder.observe(seat), encode_view(seat_view(deal, seat)))
                if deal.done:
                    break
                legal = deal.legal_actions()
                deal.play(legal[int(rng.integers(len(legal)))])
                encoder.sync()
            late = Encoder(deal)     # built after the plays: catches up in its constructor
            assert all(np.array_equal(late.observe(s), encode(deal, s)) for s in range(players))


def test_encode_fills_out_and_observe_returns_fresh_arrays() -> None:
    deal = Deal.new(MODERN, 4, 0, np.random.default_rng(3))
    out = np.full(OBS_SIZE, 7.0, dtype=np.float32)
    assert encode(deal, 2, out) is out and np.array_equal(out, encode(deal, 2))
    encoder = Encoder(deal)
    a = encoder.observe(1)
    a[:] = 9
    assert np.array_equal(encoder.observe(1), encode(deal, 1))


def test_dead_hand_shown_only_to_the_dealer_when_the_rule_says_so() -> None:
    rules = MODERN.replace(dealer_sees_dead_hand=True)
    deal = Deal.new(rules, 5, 2, np.random.default_rng(4))
    for seat in range(5):
        o = encode(deal, seat)
        if seat == 2:
            assert field(o, "sees_dead_hand")[0] == 1
            assert set(np.flatnonzero(field(o, "dead_hand"))) == set(deal.dead)
        else:
            assert field(o, "sees_dead_hand")[0] == 0 and not field(o, "dead_hand").any()
    assert not field(encode(Deal.new(MODERN, 5, 2, np.random.default_rng(4)), 2), "dead_hand").any()


def test_decode_refuses_a_wrong_shape() -> None:
    with pytest.raises(ValueError, match="shape"):
        decode(np.zeros(10, dtype=np.float32))


# ----------------------------------------------------------------- information leak
def _resample(deal: Deal, seat: int, rng: np.random.Generator) -> Deal | None:
    """A deal differing in every card ``seat`` cannot see, replayed to the same point, or None if inconsistent.

    Fixed: the seat's hand, every card played and by whom, the turn-up, the
    dead cards revealed by stops (or the whole dead hand when the seat sees it),
    every hand size, the forced card in the hand of the seat to act (that seat
    is seen to act), and once the deal is over the 9♦'s place (the settlement
    is public, and its holder is seen to pay nothing, R11).  Everything else is shuffled among the other hands and
    the unseen part of the dead hand.  Replaying the same plays must be legal
    and must ask the same seats (e.g. a lowest-of-suit lead rules out lower
    cards of that suit in the leader's hand at the time), else the sample is
    rejected.
    """
    view = seat_view(deal, seat)
    n = deal.players
    known_dead = deal.dead_mask if view.dead_hand is not None else deal.revealed_dead
    fixed_forced = deal.forced if deal.forced >= 0 and deal.to_act != seat else -1
    pool = PACK_MASK & ~deal.hands[seat] & ~deal.played_mask & ~known_dead
    if fixed_forced >= 0:
        pool &= ~(1 << fixed_forced)
    pope_at = deal.owner[POPE] if deal.done and (pool >> POPE) & 1 else None
    if pope_at == DEAD:
        known_dead |= 1 << POPE
    if pope_at is not None:
        pool &= ~(1 << POPE)
    cards = [int(c) for c in rng.permutation(cards_of(pool))]
    hands: list[list[int]] = []
    for s in range(n):
        played = [c for p, c in deal.plays if p == s]
        if s == seat:
            hands.append(cards_of(deal.hands[s]) + played)
            continue
        held = [fixed_forced] if s == deal.to_act and fixed_forced >= 0 else []
        held += [POPE] if pope_at == s else []
        need = deal.hand_sizes[s] - len(held)
        held += cards[:need]
        del cards[:need]
        hands.append(held + played)
    dead = cards + [c for c in iter_cards(known_dead) if c != deal.turnup] + [deal.turnup]
    assert len(dead) == len(deal.dead) and EIGHT_DIAMONDS not in dead
    other = Deal.from_cards(hands, dead, deal.dealer, deal.rules, board=deal.board_before,
                            balances=deal.balances_before)
    for player, card in deal.plays:
        if other.done or other.to_act != player:
            return None
        try:
            other.play(card)
        except IllegalActionError:
            return None
    return other


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_nothing_hidden_leaks(name: str) -> None:
    """Resample everything a seat cannot see: its observation and mask must not change."""
    rules = VARIANTS[name]
    rng = np.random.default_rng(2024)
    positions = checked = changed = 0
    for players in range(3, 9):
        for _ in range(4):
            deal = Deal.new(rules, players, int(rng.integers(players)), rng, balances=[48] * players)
            stop = int(rng.integers(0, 30))
            while not deal.done and len(deal.plays) < stop:
                legal = deal.legal_actions()
                deal.play(legal[int(rng.integers(len(legal)))])
            for seat in range(players):
                positions += 1
                vector, mask = encode(deal, seat), action_mask(deal, seat)
                for _ in range(200):
                    other = _resample(deal, seat, rng)
                    if other is None:
                        continue
                    checked += 1
                    changed += other.hands != deal.hands or other.dead_mask != deal.dead_mask
                    assert np.array_equal(encode(other, seat), vector)
                    assert np.array_equal(action_mask(other, seat), mask)
                    assert np.array_equal(Encoder(other).observe(seat), vector)
                    break
    assert checked >= 0.9 * positions and changed >= 0.8 * checked


# ----------------------------------------------------------------- v2: the public history
def test_the_history_reads_back_exactly_from_the_vector() -> None:
    """Ordered plays, their seats and which were leads, decoded from the vector = the deal's record."""
    from popejoan_env.observation import LED, PLAY_ORDER, PLAYED_BY
    from popejoan_env.seats import absolute

    rng = np.random.default_rng(99)
    positions = 0
    for name in sorted(VARIANTS):
        for players in range(3, 9):
            for deal in random_positions(VARIANTS[name], players, rng, deals=12):
                seat = int(rng.integers(players))
                v = encode(deal, seat)
                order = np.rint(v[PLAY_ORDER:PLAY_ORDER + 52] * 64).astype(int)
                cards = sorted(np.flatnonzero(order), key=lambda c: order[c])
                seats = [absolute(int(np.flatnonzero(v[PLAYED_BY + c::52][:players])[0]), seat, players)
                         for c in cards]
                assert list(zip(seats, cards)) == deal.plays
                succ = deal._succ
                leads = [i == 0 or succ[cards[i - 1]] != c for i, c in enumerate(cards)]
                assert [bool(v[LED + c]) for c in cards] == leads
                assert decode(v).history == seat_view(deal, seat).history
                positions += 1
    assert positions > 2000


def test_a_different_order_of_leads_is_a_different_observation() -> None:
    """v1 could not tell these apart: the same cards played by the same seats, in another order."""
    from conftest import make_deal

    first = make_deal(["2C 5H 9S", "4D JD", "KS QS"], turnup="QD", dealer=2)
    second = make_deal(["2C 5H 9S", "4D JD", "KS QS"], turnup="QD", dealer=2)
    first.play("2C")
    first.play("5H")
    second.play("5H")
    second.play("2C")
    assert first.plays != second.plays and first.played_mask == second.played_mask
    assert first.revealed_dead == second.revealed_dead and first.to_act == second.to_act == 0
    for seat in range(3):
        assert not np.array_equal(encode(first, seat), encode(second, seat))
        assert decode(encode(first, seat)).history != decode(encode(second, seat)).history


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_consistent_resampling_leaves_the_observation_unchanged(name: str) -> None:
    """Worlds drawn by the search's sampler (lead constraints included) replay the same plays legally and
    look the same to the seat: its observation and mask do not change."""
    from popejoan_env.search.worlds import WorldSampler
    from popejoan_env.seats import absolute

    rules = VARIANTS[name]
    rng = np.random.default_rng(7)
    checked = 0
    for players in range(3, 9):
        for _ in range(6):
            deal = Deal.new(rules, players, int(rng.integers(players)), rng, balances=[48] * players)
            for _ in range(int(rng.integers(0, 30))):
                if deal.done:
                    break
                legal = deal.legal_actions()
                deal.play(legal[int(rng.integers(len(legal)))])
            if deal.done:
                continue
            for seat in range(players):
                view = seat_view(deal, seat)
                sampler = WorldSampler(view)
                vector, mask = encode(deal, seat), action_mask(deal, seat)
                for _ in range(5):
                    world = sampler.sample(rng)
                    hands = [0] * players
                    for k in range(players):
                        hands[absolute(k, seat, players)] = world.hands[k]
                    for s, card in deal.plays:
                        hands[s] |= 1 << card
                    dead = [c for c in world.dead]
                    other = Deal.from_cards([cards_of(h) for h in hands], dead, deal.dealer, rules,
                                            board=deal.board_before, balances=deal.balances_before)
                    for s, card in deal.plays:
                        assert other.to_act == s
                        other.play(card)       # legal in every sampled world
                    assert np.array_equal(encode(other, seat), vector)
                    assert np.array_equal(action_mask(other, seat), mask)
                    checked += 1
    assert checked > 500


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_inferred_planes_are_the_inference(name: str) -> None:
    """The observation's inferred rows are inference.inferred of the seat's view, row by row."""
    from popejoan_env.inference import inferred
    from popejoan_env.observation import INFERRED

    rng = np.random.default_rng(4)
    for players in range(3, 9):
        for deal in random_positions(VARIANTS[name], players, rng, deals=3):
            for seat in range(players):
                v = encode(deal, seat)
                rows = inferred(seat_view(deal, seat))
                for k in range(8):
                    plane = v[INFERRED + 52 * k:INFERRED + 52 * (k + 1)]
                    assert sum(1 << int(c) for c in np.flatnonzero(plane)) == (rows[k] if k < players else 0)
