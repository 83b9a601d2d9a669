"""What a round has left to learn: the round's search against the network it searches with."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from popejoan_env.errors import PopeJoanError
from popejoan_env.observation import action_mask, encode
from popejoan_env.players.stops import lead_candidates
from popejoan_env.rules import Rules
from popejoan_env.seat_view import seat_view
from popejoan_env.training.advantage import Advantage, one_step_advantage
from popejoan_env.training.expert_games import deal_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = (Rules.preset("modern"), 4)
BALANCES = (-24, 72)


def _policy():
    from popejoan_env.nets.policy import load_policy
    from popejoan_env.players import shipped_model

    return load_policy(shipped_model())


def test_the_network_plays_every_seat_and_each_searched_decision_is_counted_once() -> None:
    policy = _policy()
    found = one_step_advantage(policy, TABLE, 6, 5, worlds=2, judge_worlds=2, balance_range=BALANCES)
    expected = []
    for d in range(6):  # the same deals, the network alone playing every seat, one decision at a time
        deal = deal_of(TABLE, BALANCES, 5, d)
        while deal.advance():
            if len(lead_candidates(seat_view(deal, deal.to_act))) > 1:
                expected.append(d)
            card = policy.choose(encode(deal, deal.to_act)[None], action_mask(deal, deal.to_act)[None].astype(bool))
            deal.play(int(card[0]))
    assert sorted(found.deal.tolist()) == expected  # the deals advance in lockstep: their decisions interleave
    assert (found.gain[~found.differ] == 0).all()  # the same card, the same judged value


def test_the_judge_draws_other_worlds_than_the_search() -> None:
    # Judged on the worlds it chose by, the search's card could never be worth less than the network's.
    found = one_step_advantage(_policy(), TABLE, 8, 2, worlds=1, judge_worlds=4, balance_range=BALANCES)
    assert found.differ.any() and (found.gain < 0).any() and (found.gain > 0).any()


def test_the_figures_do_not_depend_on_the_workers() -> None:
    policy = _policy()
    one = one_step_advantage(policy, TABLE, 140, 9, worlds=2, judge_worlds=2, balance_range=BALANCES)
    two = one_step_advantage(policy, TABLE, 140, 9, worlds=2, judge_worlds=2, balance_range=BALANCES, workers=2)
    assert one.deals == two.deals == 140 and set(one.deal.tolist()) > {0, 139}
    for a, b in ((one.deal, two.deal), (one.gain, two.gain), (one.differ, two.differ)):
        assert np.array_equal(a, b)


def test_the_means_are_clustered_by_deal() -> None:
    found = Advantage(deal=np.array([0, 0, 1, 3]), gain=np.array([1.0, 2.0, 3.0, -2.0]),
                      differ=np.ones(4, bool), deals=4)
    assert found.per_deal()[0] == pytest.approx(1.0)  # deal sums 3, 3, 0, -2 (deal 2 had no decision)
    assert found.per_decision()[0] == pytest.approx(1.0)  # 4 / 4 decisions
    ci = 1.96 * np.std([3.0, 3.0, 0.0, -2.0], ddof=1) / 2
    assert found.per_deal()[1] == pytest.approx(ci) and found.per_decision()[1] == pytest.approx(ci)


@pytest.mark.parametrize(("field", "value"), [("deals", 0), ("worlds", 0), ("judge_worlds", 2000), ("workers", True),
                                               ("deals", 2.0)])
def test_a_bad_count_is_refused_by_name(field: str, value: object) -> None:
    kwargs = {"deals": 4, "worlds": 2, "judge_worlds": 2, "workers": 1, field: value}
    deals = kwargs.pop("deals")
    with pytest.raises(PopeJoanError, match=rf"^{field} must be an integer 1\.\."):
        one_step_advantage(None, TABLE, deals, 1, **kwargs)


@pytest.mark.parametrize(("argv", "says"), [(["no/such.zip"], "no/such.zip"), (["shipped", "--deals", "1"], "--deals"),
                                            (["shipped", "--judge-worlds", "0"], "--judge-worlds")])
def test_the_script_refuses_bad_input_in_one_line(argv: list[str], says: str) -> None:
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "round_advantage.py"), *argv],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_script_prints_a_row_a_network() -> None:
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "round_advantage.py"), "shipped",
                           "--deals", "4", "--worlds", "2", "--judge-worlds", "2", "--workers", "1"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    row = done.stdout.strip().splitlines()[-1].split("|")
    assert row[1].strip() == "shipped" and "±" in row[2] and row[4].strip().endswith("%")
