"""The main job's second stage: the search whose rollouts the network plays, its data, and the flags."""

from __future__ import annotations

import numpy as np
import pytest

from popejoan_env.batch import BatchDeals
from popejoan_env.engine import Deal
from popejoan_env.errors import InvalidDealError, PopeJoanError
from popejoan_env.players.stops import lead_candidates
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.rules import Rules
from popejoan_env.seat_view import seat_view
from popejoan_env.training import expert_games
from popejoan_env.training.rollout_games import card_values, deal_values, rollout_games

MODERN = Rules.preset("modern")


def _positions(count: int, seed: int = 3) -> list[tuple]:
    """Positions of fresh deals where the seat to act has two or more candidate leads, with those candidates."""
    out = []
    d = 0
    while len(out) < count:
        deal = Deal.new(MODERN, 4, d % 4, np.random.default_rng([seed, d]))
        d += 1
        while deal.advance():
            view = seat_view(deal, deal.to_act)
            if len(lead_candidates(view)) > 1:
                out.append((view, lead_candidates(view)))
                break
            deal.play(view.legal[0])
    return out


def _policy():
    from popejoan_env.players import shipped_model
    from popejoan_env.nets.policy import load_policy

    return load_policy(shipped_model())


def test_stacked_batches_hold_each_deal_and_play_as_they_would_apart() -> None:
    deals = [Deal.new(MODERN, 4, d % 4, np.random.default_rng([5, d])) for d in range(5)]
    parts = [BatchDeals.from_deals(deals[:2]), BatchDeals.from_deals(deals[2:])]
    both = BatchDeals.stack(parts)
    for field, got in zip(both.state._fields, both.state):
        assert np.array_equal(got, np.concatenate([getattr(p.state, field) for p in parts])), field
    rng = np.random.default_rng(1)
    while not both.done.all():
        live = np.flatnonzero(~both.done)
        actions = both.random_actions(rng)
        both.step(actions, which=live)
        at = 0
        for part in parts:
            mine = live[(live >= at) & (live < at + part.num_deals)] - at
            if len(mine):
                part.step(actions[at:at + part.num_deals], which=mine)
            at += part.num_deals
        assert np.array_equal(both.balances, np.concatenate([p.balances for p in parts]))
    with pytest.raises(InvalidDealError, match="at least one batch"):
        BatchDeals.stack([])
    three = BatchDeals.from_deals([Deal.new(MODERN, 3, 0, np.random.default_rng(1))])
    with pytest.raises(InvalidDealError, match="one rules object and table size"):
        BatchDeals.stack([parts[0], three])


def test_the_values_are_the_guided_search_with_the_network_at_every_seat_of_its_rollouts() -> None:
    from popejoan_env.players.guided import GuidedPimcPlayer

    policy = _policy()
    (v1, c1), (v2, c2) = _positions(2)
    player = GuidedPimcPlayer(samples=6, prior=0, rollout="network")
    player.rng = np.random.default_rng(9)
    player.evaluate(v1, c1)
    together = card_values(policy, [(v1, c1), (v2, c2)], np.random.default_rng(9), 6)
    assert together[0] == pytest.approx(player.last_values, rel=1e-12, abs=1e-12)
    rng = np.random.default_rng(9)
    WorldSampler(v1).draw_many(rng, 6)  # the first position's worlds come first from the one generator
    assert together[1] == pytest.approx(card_values(policy, [(v2, c2)], rng, 6)[0], rel=1e-12, abs=1e-12)
    assert set(together[1]) == set(c2)


def test_the_games_are_the_same_for_any_number_of_workers_and_choose_by_their_values() -> None:
    tables = expert_games.tables_of([MODERN], [4, 3])
    policy = _policy()
    one = rollout_games(policy, tables, 12, 7, worlds=3, balance_range=[-24, 72], reward_scale=0.1, workers=1)
    two = rollout_games(policy, tables, 12, 7, worlds=3, balance_range=[-24, 72], reward_scale=0.1, workers=2)
    for field in ("obs", "legal", "action", "value", "deal", "seat", "q"):
        assert np.array_equal(getattr(one, field), getattr(two, field), equal_nan=True), field
    assert set(one.deal.tolist()) == set(range(12)) and len(one.action) > 60
    searched = (~np.isnan(one.q)).sum(axis=1) >= 2
    assert searched.mean() > 0.8
    rows = np.flatnonzero(searched)
    best = np.nanmax(one.q[rows], axis=1)
    assert np.array_equal(one.q[rows, one.action[rows]], best), "each card played is a best one by its values"
    assert one.legal[np.arange(len(one.action)), one.action].all()
    # deal d is dealt as the imitation deals it: the first decision of each deal is the same position
    theirs = expert_games.expert_games("stops_first", tables, 12, 7, balance_range=[-24, 72], reward_scale=0.1)
    for d in range(12):
        assert np.array_equal(one.obs[one.deal == d][0], theirs.obs[theirs.deal == d][0])


def test_the_run_improves_the_imitated_network_by_its_rollouts(tmp_path, capsys) -> None:
    from popejoan_env.nets.model_file import read_model
    from popejoan_env.training import ppo as train_ppo

    common = ["--output-dir", str(tmp_path), "--seed", "4", "--imitate-deals", "20", "--imitate-player",
              "stops_first", "--imitate-loss", "choice", "--imitate-epochs", "1", "--imitate-workers", "1",
              "--eval-interval", "512", "--eval-deals", "2", "--eval-opponents", "random", "--final-eval-deals", "0",
              "--no-progress", "--no-tensorboard"]
    summary = train_ppo.main(["--run-name", "r", "--rollout-deals", "16", "--rollout-worlds", "2",
                              "--rollout-epochs", "2", *common])
    [stage] = summary["rounds"]
    assert stage["deals"] == 16 and stage["worlds"] == 2 and stage["decisions"] > 60 and len(stage["epochs"]) == 2
    assert [(e["stage"], e["epoch"]) for e in summary["evaluations"]] == \
        [("imitation", 0), ("imitation", 1), ("round 1", 1), ("round 1", 2)]
    out = capsys.readouterr().out
    line = (f"the imitation of {summary['imitation']['decisions']:,} stops_first decisions, 1 round of policy "
            f"improvement on {stage['decisions']:,} decisions of the search with the network's rollouts and 0 PPO "
            f"learner steps")
    assert line in out and "round 1, epoch 2 (" in out and "imitation, epoch 1 (" in out
    without = train_ppo.main(["--run-name", "n", "--rounds", "0", *common])
    assert without["rounds"] == []
    mine, theirs = read_model(tmp_path / "r" / "model.zip")[1], read_model(tmp_path / "n" / "model.zip")[1]
    assert any(not np.array_equal(np.asarray(mine[k]), np.asarray(theirs[k])) for k in mine)


def test_the_stage_is_the_default_and_is_refused_where_the_batch_engine_cannot_play(capsys) -> None:
    from popejoan_env.training import ppo as train_ppo

    args = train_ppo.parse_flags(train_ppo.Args, [], "")
    assert (args.rollout_deals, args.rollout_worlds, args.rollout_epochs, args.rollout_lr) == (25_000, 8, 2, 3e-4)
    quick = train_ppo.apply_quick(*train_ppo.parse_given(train_ppo.Args, ["--quick"], ""))
    assert quick.rollout_deals == 500  # --quick keeps its minute: the stage at a small size
    assert train_ppo.apply_quick(*train_ppo.parse_given(train_ppo.Args, ["--quick", "--rounds", "0"],
                                                        "")).rounds == 0
    small = ["--rules-option", "pack=small", "--players", "3", "--vec-env", "dummy"]
    with pytest.raises(PopeJoanError, match="full pack only: add --rounds 0"):
        train_ppo.check_args(train_ppo.parse_flags(train_ppo.Args, small, ""))
    train_ppo.check_args(train_ppo.parse_flags(train_ppo.Args, [*small, "--rounds", "0"], ""))
    train_ppo.check_args(train_ppo.parse_flags(train_ppo.Args, [*small, "--imitate-deals", "0", "--total-timesteps",
                                                                 "512"], ""))
    for bad in (["--rollout-worlds", "0"], ["--rollout-deals", "0"], ["--rounds", "-1"], ["--rollout-lr", "0"]):
        with pytest.raises(SystemExit) as out:
            train_ppo.parse_flags(train_ppo.Args, bad, "")
        assert out.value.code == 2 and f"argument {bad[0]}: invalid value" in capsys.readouterr().err
    for gone in ("--rollout-belief", "--rollout-play", "--rollout-field"):  # recipes measured and not kept
        with pytest.raises(SystemExit) as out:
            train_ppo.parse_flags(train_ppo.Args, [gone, "x"], "")
        assert out.value.code == 2 and f"unrecognized arguments: {gone}" in capsys.readouterr().err


def test_valued_in_the_deal_itself_each_card_is_what_it_wins_there_with_the_network_after_it() -> None:
    # deal_values: the judge training.advantage's --judge-belief deal reads
    from conftest import network_card, network_play_out

    tables = expert_games.tables_of([MODERN], [4])
    policy = _policy()
    positions, expected = [], []
    for d in range(5):
        deal = expert_games.deal_of(tables[0], [-24, 72], 8, d)
        while deal.advance():
            cands = lead_candidates(seat_view(deal, deal.to_act))
            if len(cands) > 1:
                positions.append((deal.copy(), cands))
                expected.append({c: network_play_out(policy, deal.copy(), c) for c in cands})
            deal.play(network_card(policy, deal))
    assert len(positions) > 5
    before = [deal.copy() for deal, _ in positions]
    got = deal_values(policy, positions)
    assert [{c: pytest.approx(v) for c, v in values.items()} for values in expected] == got
    assert all(a.plays == b.plays for a, b in zip(before, (deal for deal, _ in positions))), "the deals are not played"
