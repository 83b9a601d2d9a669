"""The imitation warm start (popejoan_env/training/expert_games.py): the expert's games are the same for any number of workers,
their values are what each seat won from each decision on, the imitation learns the expert's choices, and
train_ppo.py runs it before PPO (and refuses what does not combine with it)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from popejoan_env.training import expert_games  # noqa: E402
from popejoan_env.errors import PopeJoanError  # noqa: E402
from popejoan_env.observation import BALANCES  # noqa: E402
from popejoan_env.observation import BALANCE_SCALE  # noqa: E402
from popejoan_env.rules import Rules  # noqa: E402


@pytest.fixture(scope="module")
def games() -> expert_games.Games:
    tables = expert_games.tables_of([Rules.preset("modern")], [3, 5])
    return expert_games.expert_games("stops_first", tables, 40, 7, balance_range=(-24, 72), reward_scale=0.1, workers=1)


def test_the_games_do_not_depend_on_the_workers(games: expert_games.Games) -> None:
    tables = expert_games.tables_of([Rules.preset("modern")], [3, 5])
    forked = expert_games.expert_games("stops_first", tables, 40, 7, balance_range=(-24, 72), reward_scale=0.1,
                                       workers=2)
    for field in ("obs", "legal", "action", "value", "deal", "seat"):
        assert np.array_equal(getattr(games, field), getattr(forked, field)), field
    assert sorted(set(games.deal.tolist())) == list(range(40))


def test_deal_d_is_played_at_table_d_mod_the_tables_presets_included() -> None:
    from popejoan_env.observation import SEATS, decode_rules

    tables = expert_games.tables_of([Rules.preset("modern"), Rules.preset("victorian")], [3, 6])
    assert [(rules.name, n) for rules, n in tables] == [("modern", 3), ("modern", 6), ("victorian", 3),
                                                        ("victorian", 6)]
    mixed = expert_games.expert_games("stops_first", tables, 24, 5, balance_range=None, reward_scale=0.1, workers=2)
    for row in range(0, len(mixed.action), 7):
        rules, n = tables[int(mixed.deal[row]) % 4]
        assert decode_rules(mixed.obs[row]).lead == rules.lead
        assert int(np.count_nonzero(mixed.obs[row, SEATS:SEATS + 8])) == n


def test_every_decision_is_real_legal_and_valued_to_the_end_of_its_deal(games: expert_games.Games) -> None:
    assert (games.legal.sum(axis=1) >= 2).all(), "a lone legal card is not a decision"
    assert games.legal[np.arange(len(games.action)), games.action].all()
    # a seat's balance at a decision plus what it won from there is its final balance: one number per seat
    own = np.rint(games.obs[:, BALANCES] / BALANCE_SCALE).astype(np.int64)
    final = own + np.rint(games.value / 0.1).astype(np.int64)
    for d in range(40):
        for s in set(games.seat[games.deal == d].tolist()):
            rows = (games.deal == d) & (games.seat == s)
            assert len(set(final[rows].tolist())) == 1, (d, s)
    assert np.abs(games.value).max() > 0


def test_imitation_learns_the_experts_choices(games: expert_games.Games) -> None:
    import torch
    from sb3_contrib import MaskablePPO

    from popejoan_env.envs.sb3_vec_env import make_batch_vec_env

    torch.manual_seed(0)
    model = MaskablePPO("MlpPolicy", make_batch_vec_env(2, 0, players="3,5", opponents="random"), device="cpu",
                        policy_kwargs=dict(net_arch=dict(pi=[64], vf=[64])), seed=0)
    tables = expert_games.tables_of([Rules.preset("modern")], [3, 5])
    more = expert_games.expert_games("stops_first", tables, 600, 8, balance_range=None, reward_scale=0.1, workers=2)
    history = expert_games.imitate(model.policy, more, epochs=6, lr=1e-3, batch_size=128, seed=0)
    chance = float(np.mean(1.0 / more.legal.sum(axis=1)))
    assert history[-1]["held_out_agreement"] > max(0.6, chance + 0.25), (history[-1], chance)
    assert history[-1]["held_out_value_loss"] < history[0]["held_out_value_loss"]


def test_train_ppo_imitates_first_and_refuses_what_does_not_combine(tmp_path) -> None:
    from popejoan_env.training import ppo as train_ppo

    summary = train_ppo.main([
        "--run-name", "i", "--output-dir", str(tmp_path), "--seed", "2", "--imitate-deals", "30",
        "--imitate-player", "stops_first", "--imitate-loss", "choice", "--imitate-epochs", "2",
        "--imitate-workers", "1", "--rounds", "0",
        "--total-timesteps", "512", "--n-envs", "32", "--n-steps", "16", "--batch-size", "256", "--n-epochs", "1",
        "--net-arch", "16", "--opponents", "random:0.5,self:0.5", "--eval-interval", "512", "--eval-deals", "2",
        "--eval-opponents", "random", "--final-eval-deals", "2", "--final-eval-opponents", "random",
        "--checkpoint-interval", "0", "--no-progress", "--no-tensorboard", "--torch-threads", "1",
    ])
    im = summary["imitation"]
    assert im["deals"] == 30 and im["decisions"] > 100 and len(im["epochs"]) == 2
    assert summary["evaluations"][0]["timesteps"] == 0, "the learning curve starts after the imitation"
    for flags, message in ((["--imitate-player", "nobody"], "unknown player"),
                           (["--imitate-loss", "mean"], "--imitate-loss must be one of choice, regret"),
                           (["--imitate-player", "stops_first"], "stops_first gives none: add --imitate-loss choice")):
        with pytest.raises(PopeJoanError, match=message):
            train_ppo.check_args(train_ppo.parse_flags(train_ppo.Args, flags, ""))
    with pytest.raises(SystemExit):  # a negative count is refused as the command line is read (tests/test_flags.py)
        train_ppo.parse_flags(train_ppo.Args, ["--imitate-deals", "-1"], "")


def test_a_table_size_listed_twice_gets_twice_the_deals_and_is_recorded_once() -> None:
    from popejoan_env.training import ppo as train_ppo

    args = train_ppo.parse_flags(train_ppo.Args, ["--players", "4,4,3", "--preset", "modern,victorian",
                                                   "--total-timesteps", "0"], "")
    setup = train_ppo.check_args(args)
    tables = expert_games.tables_of(setup.presets, setup.table_sizes)
    seats = [tables[d % len(tables)][1] for d in range(600)]
    assert seats.count(4) == 400 and seats.count(3) == 200
    assert train_ppo.metadata(args, setup, 0)["players"] == [4, 3]


def test_pimc_gives_its_values_and_the_targets_follow_them() -> None:
    four = expert_games.tables_of([Rules.preset("modern")], [4])
    games = expert_games.expert_games("pimc:samples=8", four, 6, 3, balance_range=None, reward_scale=0.1, workers=1)
    searched = ~np.isnan(games.q)
    assert searched.any(axis=1).mean() > 0.8, "pimc searched most decisions"
    assert (games.legal | ~searched).all(), "only legal cards have values"
    rows = searched.sum(axis=1) >= 2
    best = np.nanargmax(np.where(searched[rows], games.q[rows], -np.inf), axis=1)
    assert np.mean(best == games.action[rows]) > 0.9, "pimc plays its best value (ties aside)"
    hard = expert_games.targets(games)
    assert np.array_equal(hard.argmax(axis=1), games.action) and (hard.sum(axis=1) == 1).all()
    no_values = expert_games.expert_games("stops_first", four, 3, 3, balance_range=None, reward_scale=0.1)
    assert np.isnan(no_values.q).all()


def test_regrets_are_what_each_legal_card_gives_up_by_the_experts_values() -> None:
    nan = np.nan
    legal = np.zeros((4, 52), dtype=bool)
    legal[:, [3, 4, 9]] = True
    q = np.full((4, 52), nan, dtype=np.float32)
    q[0, [3, 4, 9]] = [1.0, -2.0, 0.5]  # every legal card searched
    q[1, [3, 9]] = [2.0, 3.5]  # card 4 not searched (a run's middle): it counts as the worst searched card
    q[2, 3] = 7.0  # one value: no comparison, no regret
    z = np.zeros(4)
    games = expert_games.Games(np.zeros((4, 1)), legal, np.array([3, 9, 3, 4]), z, z, z, q)
    r = expert_games.regrets(games)
    assert r.dtype == np.float32 and (r[:, ~legal[0]] == 0).all(), "illegal cards give up nothing"
    assert r[0, [3, 4, 9]].tolist() == [0.0, 3.0, 0.5]
    assert r[1, [3, 4, 9]].tolist() == [1.5, 1.5, 0.0]
    assert (r[2:] == 0).all(), "a decision with fewer than two values teaches the choice only"


def test_the_regret_loss_learns_the_best_mean_value_where_the_choice_loss_copies_a_noisy_search(
        games: expert_games.Games) -> None:
    # A search over few worlds that usually misses a rare disaster: card B looks 0.5 better than card A in 80% of
    # its searches and 5 worse in the rest, so it picks B 80% of the time though A is worth more on average
    # (B: 0.8 x 0.5 - 0.2 x 5 = -0.6).  The cross-entropy copies the choice; the expected regret learns A.
    import torch
    from sb3_contrib import MaskablePPO

    from popejoan_env.envs.sb3_vec_env import make_batch_vec_env

    a, b = 11, 30
    rng = np.random.default_rng(4)
    n = len(games.action)
    legal = np.zeros((n, 52), dtype=bool)
    legal[:, [a, b]] = True
    q = np.full((n, 52), np.nan, dtype=np.float32)
    q[:, a] = 0.0
    q[:, b] = np.where(rng.random(n) < 0.8, 0.5, -5.0)
    noisy = expert_games.Games(games.obs, legal, np.where(q[:, b] > 0, b, a), games.value, games.deal, games.seat, q)
    picks = {}
    for loss in expert_games.LOSSES:
        torch.manual_seed(0)
        model = MaskablePPO("MlpPolicy", make_batch_vec_env(2, 0, players="3,5", opponents="random"), device="cpu",
                            policy_kwargs=dict(net_arch=dict(pi=[32], vf=[32])), seed=0)
        history = expert_games.imitate(model.policy, noisy, epochs=4, lr=3e-3, batch_size=64, seed=0, loss=loss)
        with torch.no_grad():
            logits = model.policy.action_net(model.policy.mlp_extractor(
                model.policy.extract_features(torch.as_tensor(games.obs)))[0])
        picks[loss] = float((logits[:, a] > logits[:, b]).float().mean())
        assert "held_out_regret" in history[-1]
    assert picks["choice"] < 0.1 and picks["regret"] > 0.9, picks
    with pytest.raises(ValueError, match="loss must be one of"):
        expert_games.imitate(model.policy, noisy, epochs=1, lr=1e-3, batch_size=64, seed=0, loss="mean")


def test_an_evaluation_in_worker_processes_gives_the_same_results() -> None:
    from popejoan_env.players import shipped_model
    from popejoan_env.nets.policy import load_policy
    from popejoan_env.training.common import evaluate

    policy = load_policy(shipped_model())
    args, where = (policy, ["random", "stops_first"], 6, 11), {"rules": Rules.preset("modern"), "seats": 4}
    assert evaluate(*args, **where, workers=2) == evaluate(*args, **where)


@pytest.mark.parametrize("policy_kwargs", [dict(net_arch=dict(pi=[32], vf=[32])),
                                           dict(net_arch=dict(pi=[16], vf=[16]), actor_arch=[8, 16, 16],
                                                activation="tanh")], ids=["mlp", "suits"])
def test_leaving_the_critic_out_trains_the_very_same_actor(games: expert_games.Games, policy_kwargs: dict) -> None:
    # Only PPO reads the critic: a recipe with no PPO after it leaves the critic out, and its actor must not move
    # by a bit (the actor's gradient never passed through the critic; Adam is per weight).
    import torch
    from sb3_contrib import MaskablePPO

    from popejoan_env.envs.sb3_vec_env import make_batch_vec_env
    from popejoan_env.sb3_policies import SuitsPolicy

    trained = {}
    for critic in (True, False):
        torch.manual_seed(0)
        policy = SuitsPolicy if "actor_arch" in policy_kwargs else "MlpPolicy"
        model = MaskablePPO(policy, make_batch_vec_env(2, 0, players="4", opponents="random"), device="cpu",
                            policy_kwargs=policy_kwargs, seed=0)
        before = {k: v.clone() for k, v in model.policy.state_dict().items()}
        history = expert_games.imitate(model.policy, games, epochs=2, lr=3e-3, batch_size=64, seed=0,
                                       loss="choice", critic=critic)
        trained[critic] = model.policy.state_dict()
        value = [k for k in before if k.startswith(("value_net", "mlp_extractor.value_net"))]
        assert value and all(torch.equal(before[k], trained[critic][k]) != critic for k in value)
        assert (history[-1]["held_out_value_loss"] is None) == (not critic)
    actor = [k for k in trained[True] if not k.startswith(("value_net", "mlp_extractor.value_net"))]
    assert all(torch.equal(trained[True][k], trained[False][k]) for k in actor)


def test_each_decision_keeps_the_observation_encode_gives_there() -> None:
    from popejoan_env.observation import encode
    from popejoan_env.players import make_player
    from popejoan_env.players.base import ask
    from popejoan_env.seat_view import seat_view

    decisions = expert_games.Decisions()
    player = make_player("random", seed=4)
    checked = 0
    for d, (preset, n) in enumerate([("modern", 3), ("victorian", 5), ("modern", 8), ("victorian", 4)] * 3):
        deal = expert_games.deal_of((Rules.preset(preset), n), (-24, 72), 5, d)
        while deal.advance():
            seat = deal.to_act
            assert decisions.observe(d, deal, seat).tobytes() == encode(deal, seat).tobytes()
            checked += 1
            deal.play(ask(player, seat_view(deal, seat)))
        decisions.end(d, deal)
        assert d not in decisions.encoders and decisions.finals[d] == deal.balances
    assert checked > 100
    # another Deal under a deal's number gets an encoder of its own
    first, second = (expert_games.deal_of((Rules.preset("modern"), 4), None, seed, 0) for seed in (6, 7))
    for deal in (first, second):
        deal.advance()
        assert decisions.observe(0, deal, deal.to_act).tobytes() == encode(deal, deal.to_act).tobytes()
