"""The suits that play alike (popejoan_env/symmetry.py): a deal and its relabellings are played card for card the
same way and pay the same, and the relabelled observation is the observation of the relabelled deal."""

from __future__ import annotations

import numpy as np
import pytest

from popejoan_env import symmetry
from popejoan_env.cards import POPE, cards_of
from popejoan_env.engine import Deal
from popejoan_env.observation import LAYOUT, encode
from popejoan_env.rules import Rules

RULES = [Rules.preset("modern"), Rules.preset("victorian"), Rules(ace_high=True, lead="any"),
         Rules(pair_split="halves", pope_turnup="ends_deal", dealer_sees_dead_hand=True)]


def test_every_field_of_the_observation_is_a_card_plane_a_suit_plane_or_free_of_suits() -> None:
    names = [name for name, _, _, _ in LAYOUT]
    sets = (symmetry.CARD_PLANES, symmetry.SUIT_PLANES, symmetry.SUIT_FREE)
    assert sorted(names) == sorted(name for s in sets for name in s), "a new field must say how suits relabel it"
    for name, _, length, _ in LAYOUT:
        assert name not in symmetry.CARD_PLANES or length % 52 == 0, name
        assert name not in symmetry.SUIT_PLANES or length == 4, name


def test_the_relabellings_are_the_six_orders_of_clubs_hearts_spades_and_diamonds_stay() -> None:
    views = symmetry.relabellings()
    assert len(views) == 6 and len({v.suits for v in views}) == 6
    assert views[0].suits == (0, 1, 2, 3) and (views[0].obs == np.arange(len(views[0].obs))).all()
    for view in views:
        assert view.suits[1] == 1 and view.card(POPE) == POPE
        assert sorted(view.obs.tolist()) == list(range(len(view.obs))), "a gather that is a permutation"
        assert [view.card(c) for c in range(52)] == np.argsort(view.cards).tolist(), "card() and the gather agree"
    assert symmetry.plays_alike(Rules.preset("modern")) and not symmetry.plays_alike(Rules(pack="small"))


@pytest.mark.parametrize("rules", RULES, ids=lambda r: r.name or "custom")
@pytest.mark.parametrize("players", [3, 4, 7])
def test_a_relabelled_deal_is_played_the_same_way_and_pays_the_same(rules: Rules, players: int) -> None:
    for seed in range(4):
        rng = np.random.default_rng([seed, players])
        deal = Deal.new(rules, players, seed % players, rng, board=None, balances=[int(b) for b in rng.integers(-9,
                        60, players)])
        for view in symmetry.relabellings()[1:]:
            original = deal.copy()
            twin = Deal.from_cards([[view.card(c) for c in cards_of(h)] for h in original.hands],
                                   [view.card(c) for c in original.dead], original.dealer, rules,
                                   board=list(original.board_before), balances=list(original.balances_before))
            choose = np.random.default_rng([seed, 9])
            while True:
                legal, twin_legal = original.advance(), twin.advance()
                assert sorted(view.card(c) for c in legal) == sorted(twin_legal)
                assert original.to_act == twin.to_act
                for seat in range(players):
                    assert np.array_equal(encode(original, seat)[view.obs], encode(twin, seat)), seat
                if not legal:
                    break
                card = sorted(legal)[int(choose.integers(len(legal)))]
                original.play(card)
                twin.play(view.card(card))
            assert original.balances == twin.balances and original.board == twin.board
            assert original.winner == twin.winner
