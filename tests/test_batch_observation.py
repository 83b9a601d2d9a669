"""The batch observation: every row of ``encode_batch`` (and ``state_batch``, ``action_masks``) is exactly the
scalar encoder's vector of the same position, for every table size, preset and rule variant."""

from __future__ import annotations

import dataclasses
import doctest

import numpy as np
import pytest

import popejoan_env.batch_observation as batch_observation
import popejoan_env.observation as observation
from popejoan_env import MODERN, VICTORIAN, Deal, Rules
from popejoan_env.batch import BatchDeals
from popejoan_env.batch_observation import HIDDEN_SIZE, action_masks, encode_batch, hidden_batch, state_batch
from popejoan_env.cards import CARD_NAMES, PACK
from popejoan_env.errors import GameOverError, PopeJoanError
from popejoan_env.observation import LAYOUT, OBS_SIZE, STATE_LAYOUT, STATE_SIZE, Encoder, action_mask, encode

PRESETS = {"modern": MODERN, "victorian": VICTORIAN}
VARIANTS = {
    "plain": {},
    "ace_high": {"ace_high": True},
    "dealer_sees_dead_hand": {"dealer_sees_dead_hand": True},
    "all_round": {"deal": "all_round"},
    "halves": {"pair_split": "halves"},
}


def rules_of(preset: str, variant: str) -> Rules:
    return dataclasses.replace(PRESETS[preset], **VARIANTS[variant])


def differing_fields(got: np.ndarray, want: np.ndarray, layout: tuple = LAYOUT) -> list[str]:
    """The layout fields in which two vectors differ (for the failure message)."""
    return [name for name, start, length, _ in layout
            if not np.array_equal(got[start:start + length], want[start:start + length])]


def assert_rows_match(batch: BatchDeals, what: str, deals: list[Deal] | None = None) -> None:
    """Every deal seen from every seat, the seat to act by default, the states and the masks, against the
    scalar encoder of the same positions (``batch.to_deal`` unless ``deals`` are given)."""
    n, p = batch.num_deals, batch.players
    if deals is None:
        deals = [batch.to_deal(i) for i in range(n)]
    rows = np.repeat(np.arange(n), p)
    seats = np.tile(np.arange(p), n)
    got = encode_batch(batch, rows=rows, seats=seats)
    for k, (i, s) in enumerate(zip(rows.tolist(), seats.tolist())):
        want = encode(deals[i], s)
        if not np.array_equal(got[k], want):
            pytest.fail(f"{what}: deal {i} seat {s}: {differing_fields(got[k], want)}")
    live = ~batch.done
    if live.any():
        acting = encode_batch(batch, rows=live)
        for row, i in zip(acting, np.flatnonzero(live).tolist()):
            assert np.array_equal(row, encode(deals[i], deals[i].to_act)), f"{what}: deal {i}, the seat to act"
        masks = action_masks(batch, rows=live)
        for mask, i in zip(masks, np.flatnonzero(live).tolist()):
            assert np.array_equal(mask, action_mask(deals[i], deals[i].to_act).astype(bool)), f"{what}: mask {i}"
    states = state_batch(batch)
    for i, deal in enumerate(deals):
        want = Encoder(deal).state_vector()
        if not np.array_equal(states[i], want):
            pytest.fail(f"{what}: state of deal {i}: {differing_fields(states[i], want, STATE_LAYOUT)}")


def play_and_compare(rules: Rules, players: int, seed: int) -> None:
    """Random legal play in a few deals, every position compared; some deals finish and are dealt again."""
    batch = BatchDeals(rules, players=players, num_deals=6, deal_seed=seed, session_length=3)
    rng = np.random.default_rng(players)
    assert_rows_match(batch, "as dealt")
    redealt = 0
    for step in range(18):
        finished = batch.step(batch.random_actions(rng))
        redealt += len(finished)
        assert_rows_match(batch, f"after step {step}")
    assert redealt > 0, "no deal finished and was dealt again"


@pytest.mark.parametrize("players", range(3, 9))
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("preset", PRESETS)
def test_every_row_is_the_scalar_observation(preset: str, variant: str, players: int) -> None:
    play_and_compare(rules_of(preset, variant), players, 1000 * players + len(variant))


@pytest.mark.parametrize(("preset", "variant", "players"), [
    (preset, variant, 3 + k % 6) for k, (preset, variant) in enumerate(
        (p, v) for p in PRESETS for v in VARIANTS)])
def test_every_row_is_the_scalar_observation_from_other_seeds(preset: str, variant: str, players: int) -> None:
    play_and_compare(rules_of(preset, variant), players, 77 * players)


def test_finished_deals_without_auto_reset_and_deals_ended_at_the_turnup() -> None:
    rules = dataclasses.replace(VICTORIAN, dealer_sees_dead_hand=True)
    batch = BatchDeals(rules, players=4, num_deals=120, deal_seed=3, auto_reset=False)
    rng = np.random.default_rng(0)
    while not batch.done.all():
        live = ~batch.done
        batch.step(batch.random_actions(rng)[live], which=live)
    assert (batch.winner < 0).any() and (batch.winner >= 0).any()  # some ended at the turn-up, some went out
    assert_rows_match(batch, "all finished")
    with pytest.raises(GameOverError, match="no seat to act"):
        encode_batch(batch)


def test_positions_loaded_from_scalar_deals() -> None:
    rng = np.random.default_rng(5)
    rules = Rules(ace_high=True, pair_split="halves", dealer_sees_dead_hand=True)
    deals = []
    for i in range(12):
        deal = Deal.new(rules, 5, i % 5, rng, board=[int(x) for x in rng.integers(0, 40, 8)],
                        balances=[int(x) for x in rng.integers(-300, 300, 5)])
        for _ in range(int(rng.integers(0, 30))):
            if deal.done:
                break
            legal = deal.legal_actions()
            deal.play(legal[int(rng.integers(len(legal)))])
        deals.append(deal)
    assert_rows_match(BatchDeals.from_deals(deals), "from_deals")


def test_a_dead_hand_of_another_size() -> None:
    # An explicit deal may deal fewer cards than the rules would: the dead hand's size is read from the cards.
    cards = [CARD_NAMES[c] for c in PACK]
    deals = [Deal.from_cards([cards[0:6], cards[6:14], cards[14:20]], cards[20:], 1, MODERN),
             Deal.new(MODERN, 3, 0, np.random.default_rng(1))]
    batch = BatchDeals.from_deals(deals)
    for deal in deals:
        deal.advance()  # as from_deals: the lone leads played
    assert_rows_match(batch, "dead hands of 31 and 15 cards", deals)


def test_rows_seats_and_out() -> None:
    batch = BatchDeals(MODERN, players=4, num_deals=10, deal_seed=7)
    rng = np.random.default_rng(1)
    for _ in range(3):
        batch.step(batch.random_actions(rng))
    every = encode_batch(batch)
    assert every.shape == (10, OBS_SIZE) and every.dtype == np.float32
    mask = np.zeros(10, dtype=bool)
    mask[[2, 5, 9]] = True
    assert np.array_equal(encode_batch(batch, rows=mask), every[[2, 5, 9]])
    assert np.array_equal(encode_batch(batch, rows=[9, 2, 2]), every[[9, 2, 2]])
    assert np.array_equal(encode_batch(batch, rows=np.arange(10), seats=batch.to_act), every)
    seat1 = encode_batch(batch, seats=1)
    assert np.array_equal(seat1[4], encode(batch.to_deal(4), 1))
    out = np.full((10, OBS_SIZE), np.nan, dtype=np.float32)  # every cell must be written
    assert encode_batch(batch, out=out) is out and np.array_equal(out, every)
    state_out = np.full((3, STATE_SIZE), np.nan, dtype=np.float32)
    assert state_batch(batch, rows=[1, 2, 3], out=state_out) is state_out
    assert np.array_equal(state_out, state_batch(batch)[1:4])
    assert encode_batch(batch, rows=[]).shape == (0, OBS_SIZE)
    assert np.array_equal(action_masks(batch), batch.legal_mask())


def scalar_hidden(deal: Deal, seat: int) -> np.ndarray:
    """``hidden_batch``'s row written from a scalar deal: each hand from ``seat`` on, then the dead hand."""
    want = np.zeros(HIDDEN_SIZE, dtype=np.float32)
    for r in range(deal.players):
        hand = deal.hands[(seat + r) % deal.players]
        for card in range(52):
            want[r * 52 + card] = (hand >> card) & 1
    for card in deal.dead:
        want[8 * 52 + card] = 1
    return want


@pytest.mark.parametrize("players", [3, 5, 8])
def test_hidden_rows_are_every_hand_counted_from_the_observer_and_the_dead_hand(players: int) -> None:
    batch = BatchDeals(VICTORIAN, players=players, num_deals=5, deal_seed=players)
    rng = np.random.default_rng(0)
    for step in range(6):
        live = np.flatnonzero(~batch.done)
        for seat in range(players):
            got = hidden_batch(batch, rows=live, seats=seat)
            for row, i in zip(got, live.tolist()):
                assert np.array_equal(row, scalar_hidden(batch.to_deal(i), seat)), (step, i, seat)
        acting = hidden_batch(batch, rows=live)
        assert np.array_equal(acting, np.stack([scalar_hidden(batch.to_deal(i), int(batch.to_act[i]))
                                                for i in live.tolist()]))
        # every card of the pack but those played is in exactly one plane
        assert (acting.reshape(len(live), 9, 52).sum(axis=1) <= 1).all()
        batch.step(batch.random_actions(rng))
    out = np.full((2, HIDDEN_SIZE), np.nan, dtype=np.float32)
    assert hidden_batch(batch, rows=[0, 1], seats=[1, 0], out=out) is out and not np.isnan(out).any()
    with pytest.raises(PopeJoanError, match="out must be a writable float32 array"):
        hidden_batch(batch, out=np.zeros((5, OBS_SIZE), dtype=np.float32))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"rows": [10]}, "rows must name deals 0..9"),
    ({"rows": [-1]}, "rows must name deals"),
    ({"rows": [0.5]}, "rows must be a bool mask or a 1-d array"),
    ({"rows": [[0, 1]]}, "rows must be a bool mask or a 1-d array"),
    ({"rows": np.ones(9, dtype=bool)}, "rows as a mask must be 10 booleans"),
    ({"seats": [0, 1]}, "seats must be a seat or 10 seats"),
    ({"seats": 4}, "seats must be seats 0..3"),
    ({"seats": -1}, "seats must be seats 0..3"),
    ({"seats": 1.0}, "seats must be a seat or 10 seats"),
    ({"seats": True}, "seats must be a seat or 10 seats"),
    ({"out": np.zeros((10, OBS_SIZE), dtype=np.float64)}, "out must be a writable float32 array"),
    ({"out": np.zeros((9, OBS_SIZE), dtype=np.float32)}, "out must be a writable float32 array"),
    ({"out": np.zeros((10, STATE_SIZE), dtype=np.float32)}, "out must be a writable float32 array"),
])
def test_bad_arguments_are_refused(kwargs: dict, match: str) -> None:
    batch = BatchDeals(MODERN, players=4, num_deals=10, deal_seed=7)
    with pytest.raises(PopeJoanError, match=match):
        encode_batch(batch, **kwargs)


def test_a_refused_call_writes_nothing() -> None:
    batch = BatchDeals(MODERN, players=4, num_deals=4, deal_seed=7)
    out = np.full((4, OBS_SIZE), 7.0, dtype=np.float32)
    with pytest.raises(PopeJoanError):
        encode_batch(batch, seats=[0, 1, 2, 9], out=out)
    frozen = np.zeros((4, OBS_SIZE), dtype=np.float32)
    frozen.setflags(write=False)
    with pytest.raises(PopeJoanError, match="writable"):
        encode_batch(batch, out=frozen)
    assert (out == 7.0).all()
    with pytest.raises(PopeJoanError, match="needs a BatchDeals"):
        encode_batch(batch.to_deal(0))  # type: ignore[arg-type]
    with pytest.raises(PopeJoanError, match="rows must name"):
        state_batch(batch, rows=[4])
    with pytest.raises(PopeJoanError, match="rows as a mask"):
        action_masks(batch, rows=[True])


def test_the_fast_path_never_uses_the_scalar_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    batch = BatchDeals(Rules(ace_high=True), players=6, num_deals=64, deal_seed=2)
    rng = np.random.default_rng(2)
    for _ in range(4):
        batch.step(batch.random_actions(rng))
    want = encode_batch(batch), state_batch(batch)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the scalar path was used")

    monkeypatch.setattr(BatchDeals, "to_deal", refuse)
    monkeypatch.setattr(observation, "Encoder", refuse)
    monkeypatch.setattr(observation, "encode", refuse)
    assert np.array_equal(encode_batch(batch), want[0]) and np.array_equal(state_batch(batch), want[1])


def test_the_module_example_runs() -> None:
    assert doctest.testmod(batch_observation).failed == 0
