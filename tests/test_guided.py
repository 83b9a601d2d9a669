"""``pimc_net``: its network rollouts are the network playing every seat deal by deal, its scores are pimc's means
plus the prior, it is reproducible, and it refuses rules its network was not trained for."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from popejoan_env.engine import Deal
from popejoan_env.players import make_player
from popejoan_env.players.guided import GuidedPimcPlayer
from popejoan_env.nets.model_file import ModelMismatchError
from popejoan_env.nets.policy import load_policy
from popejoan_env.players.learned import LearnedPlayer
from popejoan_env.players.stops import lead_candidates
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.rules import Rules
from popejoan_env.seat_view import seat_view

from conftest import network_file


@pytest.fixture(scope="module")
def network(tmp_path_factory) -> str:
    return network_file(str(tmp_path_factory.mktemp("guided") / "net.zip"), players=(3, 4, 8))


def a_choice(preset: str, players: int, seed: int) -> Deal:
    """A deal of ``preset`` advanced by random plays to a lead with three or more candidates."""
    rng = np.random.default_rng(seed)
    while True:
        deal = Deal.new(Rules.preset(preset), players, 0, rng)
        while not deal.done:
            if len(lead_candidates(seat_view(deal, deal.to_act))) >= 3 and rng.random() < 0.5:
                return deal
            legal = deal.legal_actions()
            deal.play(legal[int(rng.integers(len(legal)))])


@pytest.mark.parametrize("preset, players, draws", [("modern", 4, "compiled"), ("victorian", 3, "compiled"),
                                                    ("modern", 8, "compiled"), ("modern", 4, "python")])
def test_the_rollouts_are_the_network_playing_every_seat_deal_by_deal(network: str, preset: str, players: int,
                                                                        draws: str) -> None:
    deal = a_choice(preset, players, seed=players)
    view = seat_view(deal, deal.to_act)
    candidates = lead_candidates(view)
    player = GuidedPimcPlayer(seed=3, samples=6, rollout="network", model=network, draws=draws)
    totals = player.network_rollouts(view, candidates)
    # the same worlds (the same generator), each world x candidate played out one Deal at a time by the network
    seat_player = LearnedPlayer(load_policy(network))
    sampler, rng = WorldSampler(view), np.random.default_rng(3)
    if draws == "python":
        worlds, logs = [], []
        for _ in range(6):
            worlds.append(sampler.sample(rng))
            logs.append(sampler.log_weight)
    else:
        hands, dead, logs = sampler.draw_many(rng, 6)
        worlds = sampler.deals(hands, dead)
    gains = []
    for world in worlds:
        row = []
        for card in candidates:
            d = world.copy()
            d.play(card)
            d.play_out(lambda d, legal: seat_player.act(seat_view(d, d.to_act)))
            row.append(d.balances[0] - world.balances[0])
        gains.append(row)
    w = np.exp(np.array(logs) - max(logs))
    assert totals == pytest.approx((w[:, None] * np.array(gains)).sum(axis=0).tolist())
    assert player.last_values == pytest.approx({c: t / w.sum() for c, t in zip(candidates, totals)})


@pytest.mark.parametrize("preset, players", [("modern", 4), ("victorian", 5)])
def test_the_score_is_pimcs_mean_plus_the_prior_times_the_networks_log_probability(network: str, preset: str,
                                                                                   players: int) -> None:
    from popejoan_env.observation import encode_view
    from popejoan_env.players.pimc import PimcPlayer

    deal = a_choice(preset, players, seed=11)
    view = seat_view(deal, deal.to_act)
    candidates = lead_candidates(view)
    pimc = PimcPlayer(seed=4, samples=12)
    pimc.evaluate(view, candidates)
    guided = GuidedPimcPlayer(seed=4, samples=12, prior=2.5, model=network)
    scores = guided.evaluate(view, candidates)
    assert guided.last_values == pimc.last_values  # the same worlds, the same rollouts
    z = load_policy(network).logits(encode_view(view))[candidates].astype(float)
    log_p = z - z.max() - np.log(np.exp(z - z.max()).sum())
    assert scores == pytest.approx([pimc.last_values[c] + 2.5 * lp for c, lp in zip(candidates, log_p)])
    # without the prior it is pimc with as many samples: the same card at every decision
    plain = make_player(f"pimc_net:samples=12:prior=0:model={network}", seed=7)
    again = PimcPlayer(seed=7, samples=12)
    for k in range(3):
        d = a_choice(preset, players, seed=20 + k)
        v = seat_view(d, d.to_act)
        assert plain.act(v) == again.act(v)


def test_the_same_seed_plays_the_same_deal_and_every_card_is_legal(network: str) -> None:
    def play(seed: int) -> list[int]:
        player = make_player(f"pimc_net:samples=4,model={network}", seed=seed)
        deal = Deal.new(Rules.preset("victorian"), 4, 1, np.random.default_rng(9))
        deal.play_out(lambda d, legal: player.act(seat_view(d, d.to_act)))
        return list(deal.plays)

    assert play(1) == play(1)
    assert make_player(f"pimc_net:samples=4,model={network}").name == f"pimc_net:samples=4,model={network}"
    assert make_player(f"pimc_net:draws=python,model={network}").name == f"pimc_net:model={network},draws=python"


def test_rules_the_network_does_not_know_are_refused(network: str) -> None:
    odd = dataclasses.replace(Rules.preset("modern"), ace_high=True)
    deal = Deal.new(odd, 4, 0, np.random.default_rng(2))
    player = GuidedPimcPlayer(seed=0, samples=2, model=network)
    with pytest.raises(ModelMismatchError, match="'modern' and 'victorian'"):
        deal.play_out(lambda d, legal: player.act(seat_view(d, d.to_act)))


@pytest.mark.parametrize("spec, match", [("pimc_net:samples=0", "samples must be an integer from 1 to"),
                                         ("pimc_net:samples=99999999999", "samples must be an integer from 1 to"),
                                         ("pimc_net:model=", "model must be"),
                                         ("pimc_net:prior=-1", "prior must be"),
                                         ("pimc_net:prior=x", "prior must be"),
                                         ("pimc_net:rollout=random", "rollout must be"),
                                         ("pimc_net:draws=fast", "draws must be one of"),
                                         ("pimc_net:depth=2", "no parameter")])
def test_bad_parameters_are_refused(spec: str, match: str) -> None:
    from popejoan_env.players import UnknownPlayerError

    with pytest.raises(UnknownPlayerError, match=match):
        make_player(spec)
