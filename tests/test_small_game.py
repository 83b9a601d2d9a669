"""The small game (``pack="small"``): its pack and deal, the engine, records, the env and the players on it, the
batch engine's refusal, and exact NashConv on the engine alone (``popejoan_env.evaluate.exploitability``)."""

from __future__ import annotations

import numpy as np
import pytest

from popejoan_env import Deal
from popejoan_env.batch import BatchDeals
from popejoan_env.cards import PACK_MASKS, SMALL_PACK, names_of, parse_card
from popejoan_env.engine import NOT_IN_PACK
from popejoan_env.errors import InvalidDealError, PopeJoanError, RulesError
from popejoan_env.evaluate.exploitability import nash_conv, player_policy, uniform_policy
from popejoan_env.small_game import small_deals
from popejoan_env.observation import action_mask, decode, encode
from popejoan_env.players import make_player
from popejoan_env.record import deal_record, replay_record, verify_record
from popejoan_env.rules import Rules
from popejoan_env.seat_view import seat_view

SMALL = Rules(pack="small")


def test_small_pack_is_nine_to_king_of_diamonds_and_spades() -> None:
    assert names_of(list(SMALL_PACK)) == ["9D", "TD", "JD", "QD", "KD", "9S", "TS", "JS", "QS", "KS"]
    assert SMALL.pack_size == 10 and Rules().pack_size == 51


def test_small_pack_deals_three_each_and_the_turnup_alone_or_all_round() -> None:
    assert SMALL.hand_sizes(3) == ([3, 3, 3], 1)
    assert SMALL.replace(deal="all_round").hand_sizes(3) == ([3, 3, 2], 2)


def test_small_pack_refuses_other_tables_and_the_fixed_stock() -> None:
    with pytest.raises(InvalidDealError, match="pack=small is dealt to 3 players"):
        Deal.new(SMALL, players=4, rng=np.random.default_rng(0))
    with pytest.raises(RulesError, match="fixed_stock"):
        Rules(pack="small", deal="fixed_stock")
    with pytest.raises(RulesError, match="pack"):
        Rules(pack="tiny")


def test_refused_small_deal_leaves_the_generator_untouched() -> None:
    rng = np.random.default_rng(3)
    with pytest.raises(InvalidDealError):
        Deal.new(SMALL, players=5, rng=rng)
    assert rng.integers(1 << 30) == np.random.default_rng(3).integers(1 << 30)


def test_small_deal_is_a_partition_of_the_small_pack() -> None:
    deal = Deal.new(SMALL, players=3, dealer=1, rng=np.random.default_rng(7))
    cards = 0
    for hand in deal.hands:
        cards |= hand
    assert cards | deal.dead_mask == PACK_MASKS["small"] and len(deal.dead) == 1
    assert deal.owner[parse_card("AS")] == NOT_IN_PACK  # a card outside the pack is in no hand and not dead


def test_explicit_small_deal_refuses_cards_outside_the_pack_and_missing_ones() -> None:
    hands = [["9D", "TD", "JD"], ["QD", "KD", "9S"], ["TS", "JS", "QS"]]
    Deal.from_cards(hands, ["KS"], rules=SMALL)
    with pytest.raises(InvalidDealError, match=r"\['AS'\] not in the small pack"):
        Deal.from_cards(hands, ["AS"], rules=SMALL)
    with pytest.raises(InvalidDealError, match="not a partition of the 10 cards of the small pack: missing"):
        Deal.from_cards([["9D", "TD"], ["QD", "KD", "9S"], ["TS", "JS", "QS"]], ["KS"], rules=SMALL)


def test_small_runs_stop_at_the_king_and_the_turnup() -> None:
    # Eldest (seat 1) leads 9D: TD, JD follow from seat 1 and seat 2, QD is the turn-up: a stop (E4), seat 2 leads.
    deal = Deal.from_cards([["KD", "9S", "TS"], ["9D", "TD", "JS"], ["JD", "QS", "KS"]], ["QD"], dealer=0,
                           rules=SMALL)
    deal.play("9D")
    deal.advance(lone_leads=False)
    assert [names_of([c])[0] for _, c in deal.plays] == ["9D", "TD", "JD"]
    assert deal.to_act == 2 and deal.forced < 0
    assert deal.board[3] == 1  # the ace compartment: there is no Ace in the small pack, so it carries over


@pytest.mark.parametrize("deal_kind", ["equal", "all_round"])
@pytest.mark.parametrize("preset", ["modern", "victorian"])
def test_small_playouts_conserve_counters_and_replay_from_records(preset: str, deal_kind: str) -> None:
    rules = Rules.preset(preset).replace(pack="small", deal=deal_kind)
    players = [make_player(n, seed=1) for n in ("random", "lowest", "stops_first", "pool_hunter", "pimc:samples=8")]
    for i in range(40):
        deal = Deal.new(rules, 3, i % 3, np.random.default_rng(i))
        while not deal.done:
            seat = deal.to_act
            view = seat_view(deal, seat)
            assert decode(encode(deal, seat), action_mask(deal, seat)) == view
            deal.play(players[i % len(players)].act(view))
        assert sum(deal.delta) + sum(deal.board) - sum(deal.board_before) == 0
        record = deal_record(deal)
        assert record["rules"]["pack"] == "small"
        verify_record(record)
        assert replay_record(record).delta == deal.delta


def test_full_pack_records_do_not_name_the_pack() -> None:
    assert "pack" not in Rules().to_dict() and Rules.from_dict(SMALL.to_dict()) == SMALL


def test_pettingzoo_env_plays_the_small_pack() -> None:
    from popejoan_env.envs.pettingzoo_aec import raw_env

    env = raw_env(players=3, rules=SMALL)
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    for agent in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert sum(env.unwrapped.deal.delta) + sum(env.unwrapped.deal.board) == sum(env.unwrapped.deal.board_before)


def test_batch_engine_refuses_the_small_pack() -> None:
    with pytest.raises(RulesError, match="the batch engine plays the full pack only, not pack=small"):
        BatchDeals(SMALL, players=3, num_deals=2, deal_seed=1)


def test_small_deals_enumerate_every_deal_once() -> None:
    deals = small_deals(SMALL, dealer=0, turnup=parse_card("KD"))
    assert len(deals) == 1680 and len(set(deals)) == 1680
    assert len(small_deals(SMALL)) == 16_800 and len(small_deals(SMALL.replace(deal="all_round"))) == 50_400
    with pytest.raises(PopeJoanError, match="pack=small"):
        small_deals(Rules())


def test_uniform_nash_conv_with_the_kd_turned_up_is_3643_over_1680() -> None:
    # The same value as OpenSpiel's exploitability.nash_conv on python_pope_joan_small(turnup=KD)
    # (tests/test_openspiel.py); only eldest and the third hand (seat 2) can gain, symmetric by the deal.
    result = nash_conv(SMALL, uniform_policy, turnup="KD")
    assert result.nash_conv == pytest.approx(3643 / 1680, abs=1e-9)
    assert all(x >= 0 for x in result.improvements)
    assert result.improvements[0] == pytest.approx(result.improvements[2], abs=1e-9)


def _share(deal: Deal, mass: float) -> dict[int, float]:
    legal = deal.legal_actions()
    return {card: mass / len(legal) for card in legal}


@pytest.mark.parametrize(("policy", "says"), [
    # an unmasked softmax over every card id (was: NashConv 4.109 with the K♦ turned up, not 2.168)
    (lambda deal, seat: {card: 1 / 52 for card in range(52)}, "not a legal card id"),
    (lambda deal, seat: _share(deal, 0.5), "summing to 0.5"),  # was: 3.099
    (lambda deal, seat: {}, "summing to 0"),  # was: 4.198
    (lambda deal, seat: {str(c): p for c, p in _share(deal, 1.0).items()}, "not a legal card id"),  # was: 4.198
    (lambda deal, seat: {c: (2.0 if i == 0 else -1.0) for i, c in enumerate(deal.legal_actions())},
     "not a number >= 0"),  # was: a negative NashConv, -0.012
    (lambda deal, seat: {c: float("nan") for c in deal.legal_actions()}, "not a number >= 0"),  # was: nan
    (lambda deal, seat: [0.5, 0.5], "must return a mapping"),
])
def test_nash_conv_refuses_a_policy_that_is_not_a_distribution_over_the_legal_cards(policy, says: str) -> None:
    with pytest.raises(PopeJoanError, match=says):
        nash_conv(SMALL, policy, turnup="KD")


def test_nash_conv_takes_zero_mass_on_other_cards_and_numpy_numbers() -> None:
    def masked_softmax(deal: Deal, seat: int) -> dict[int, float]:
        row = np.zeros(52, dtype=np.float32)
        row[deal.legal_actions()] = np.float32(1.0) / len(deal.legal_actions())
        return {np.int64(card): row[card] for card in range(52)}

    assert nash_conv(SMALL, masked_softmax, turnup="KD").nash_conv == pytest.approx(3643 / 1680, abs=1e-6)


def test_nash_conv_of_a_deterministic_player_is_no_less_than_zero_and_its_values_sum_to_the_board() -> None:
    result = nash_conv(SMALL, player_policy(make_player("stops_first", seed=0)), turnup="9S")
    assert all(x >= -1e-9 for x in result.improvements)
    # Every deal's counters: the dealer's 15, less what stays on the board (at least the ace compartment's 1).
    assert -15 < sum(result.on_policy) <= -1


def test_the_deal_example_on_the_small_game_page_runs() -> None:
    from test_docs import DOCS, run_block

    assert run_block("small-game-deal", DOCS / "small_game.md").startswith("[3, 3, 3] ")
