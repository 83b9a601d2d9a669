"""The suits that play alike (popejoan_env/symmetry.py): a deal and its relabellings are played card for card the
same way and pay the same, the relabelled observation is the observation of the relabelled deal, and the imitation
shows its batches relabelled consistently (a preference for trumps survives it; relabelling the observations and not
the cards' values loses it)."""

from __future__ import annotations

import numpy as np
import pytest

from popejoan_env import symmetry
from popejoan_env.cards import POPE, cards_of
from popejoan_env.engine import Deal
from popejoan_env.observation import LAYOUT, encode
from popejoan_env.rules import Rules
from popejoan_env.training import expert_games

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
        deal = Deal.new(rules, players, seed % players, rng, None, [int(b) for b in rng.integers(-9, 60, players)])
        for view in symmetry.relabellings()[1:]:
            original = deal.copy()
            twin = Deal.from_cards([[view.card(c) for c in cards_of(h)] for h in original.hands],
                                   [view.card(c) for c in original.dead], original.dealer, rules,
                                   list(original.board_before), list(original.balances_before))
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


def _trump_games() -> expert_games.Games:
    """Real positions (stops_first's games) whose values say: lead a trump, if you hold one and another card."""
    from popejoan_env.observation import TRUMPS

    tables = expert_games.tables_of([Rules.preset("modern")], [4])
    games = expert_games.expert_games("stops_first", tables, 1500, 3, None, 0.1, workers=2)
    trumps = games.obs[:, TRUMPS:TRUMPS + 4].argmax(axis=1)
    is_trump = (np.arange(52)[None, :] // 13) == trumps[:, None]
    keep = (games.legal & is_trump).any(axis=1) & (games.legal & ~is_trump).any(axis=1)
    q = np.where(games.legal, np.where(is_trump, 1.0, 0.0), np.nan).astype(np.float32)[keep]
    action = np.where(is_trump[keep] & games.legal[keep], 1, 0).argmax(axis=1)
    return expert_games.Games(games.obs[keep], games.legal[keep], action, games.value[keep], games.deal[keep],
                              games.seat[keep], q)


def test_the_imitation_relabels_each_batch_consistently(monkeypatch) -> None:
    import torch
    from sb3_contrib import MaskablePPO

    from popejoan_env.envs.sb3_vec_env import make_batch_vec_env

    games = _trump_games()
    rows = {row.tobytes() for row in games.obs}

    def train() -> tuple[float, list[int]]:
        """The held-out regret after the imitation, and the relabelling each of the first batches came under."""
        torch.manual_seed(0)
        model = MaskablePPO("MlpPolicy", make_batch_vec_env(2, 0, players="4", opponents="random"), device="cpu",
                            policy_kwargs=dict(net_arch=dict(pi=[64], vf=[16])), seed=0)
        batches: list[np.ndarray] = []
        inner = model.policy.extract_features

        def extract(obs: torch.Tensor) -> torch.Tensor:
            if len(batches) < 30:
                batches.append(obs.numpy().copy())
            return inner(obs)

        model.policy.extract_features = extract
        history = expert_games.imitate(model.policy, games, epochs=6, lr=3e-3, batch_size=64, seed=0,
                                       loss="regret", augment=True)
        under = [next((k for k, v in enumerate(symmetry.relabellings())
                       if all(row[np.argsort(v.obs)].tobytes() in rows for row in batch)), -1) for batch in batches]
        return history[-1]["held_out_regret"], under

    regret, under = train()
    assert regret < 0.05, regret
    assert -1 not in under and len(set(under)) >= 4, under  # whole batches, each under one of the six
    # the observations relabelled but not the legal cards and the values: the batches contradict each other
    import dataclasses

    halfway = tuple(dataclasses.replace(v, cards=np.arange(52)) for v in symmetry.relabellings())
    monkeypatch.setattr(expert_games, "relabellings", lambda: halfway)
    broken, _ = train()
    assert broken > 0.15, (broken, regret)
