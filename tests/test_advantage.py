"""What a round has left to learn: the round's search against the network it searches with."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from popejoan_env.errors import PopeJoanError
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
    from conftest import network_card

    policy = _policy()
    found = one_step_advantage(policy, TABLE, 6, 5, worlds=2, judge_worlds=2, balance_range=BALANCES)
    expected = []
    for d in range(6):  # the same deals, the network alone playing every seat, one decision at a time
        deal = deal_of(TABLE, BALANCES, 5, d)
        while deal.advance():
            if len(lead_candidates(seat_view(deal, deal.to_act))) > 1:
                expected.append(d)
            deal.play(network_card(policy, deal))
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
    from popejoan_env.tournament import t_quantile_975

    ci = t_quantile_975(3) * np.std([3.0, 3.0, 0.0, -2.0], ddof=1) / 2
    assert found.per_deal()[1] == pytest.approx(ci)
    residuals = np.array([3.0 - 2, 3.0 - 1, 0.0, -2.0 - 1])  # each deal's sum less the mean a decision x decisions
    assert found.per_decision()[1] == pytest.approx(t_quantile_975(3) * residuals.std(ddof=1) / 2)


def test_a_decision_s_interval_is_a_ratio_s_and_a_deal_s_is_student_s() -> None:
    # Every decision gains exactly 0.5: the mean a decision is 0.5 with no doubt, whatever the deals' sizes.
    same = Advantage(deal=np.array([0, 1, 1, 1, 2, 2]), gain=np.full(6, 0.5), differ=np.ones(6, bool), deals=3)
    assert same.per_decision() == (pytest.approx(0.5), pytest.approx(0.0))
    two = Advantage(deal=np.array([0, 1]), gain=np.array([1.0, -1.0]), differ=np.ones(2, bool), deals=2)
    assert two.per_deal()[1] == pytest.approx(12.706, rel=1e-3)  # t with 1 df (12.7), not 1.96
    one = Advantage(deal=np.array([0]), gain=np.array([0.7]), differ=np.ones(1, bool), deals=1)
    assert np.isnan(one.per_deal()[1])  # one deal says nothing of the spread


def test_reading_the_leads_passes_each_deal_s_leads_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    from popejoan_env.training import advantage

    seen = []

    def spy(policy, positions, rng, worlds, reading=None):
        seen.append((worlds, None if reading is None else [(deal, seat, list(leads)) for deal, seat, leads in reading]))
        return real(policy, positions, rng, worlds, reading)

    real = advantage.card_values
    monkeypatch.setattr(advantage, "card_values", spy)
    uniform = one_step_advantage(_policy(), TABLE, 3, 4, worlds=2, judge_worlds=3, balance_range=BALANCES)
    assert seen and all(reading is None for _, reading in seen)
    seen.clear()
    read = one_step_advantage(_policy(), TABLE, 3, 4, worlds=2, judge_worlds=3, judge_belief="leads",
                              balance_range=BALANCES)
    assert [w for w, _ in seen] == [2, 3] * (len(seen) // 2)
    assert all(reading is None for w, reading in seen if w == 2)  # the search alike, the judge reading
    assert np.array_equal(uniform.deal, read.deal)  # the same decisions: the network plays the same cards
    assert not np.array_equal(uniform.gain, read.gain)
    grew = 0
    for _, reading in seen[1::2]:
        for deal, seat, leads in reading:
            assert [deal.plays[lead.played] for lead in leads] == [(lead.seat, lead.card) for lead in leads]
            assert [lead.played for lead in leads] == sorted({lead.played for lead in leads})
            grew += any(lead.seat != seat for lead in leads)
    assert grew  # other seats' leads were there to read


def test_a_search_reading_the_leads_gives_the_same_figures_with_any_workers() -> None:
    policy = _policy()
    kw = {"worlds": 2, "judge_worlds": 2, "belief": "leads", "judge_belief": "leads", "balance_range": BALANCES}
    one, two = one_step_advantage(policy, TABLE, 130, 6, **kw), one_step_advantage(policy, TABLE, 130, 6, workers=2,
                                                                                   **kw)
    for a, b in ((one.deal, two.deal), (one.gain, two.gain), (one.differ, two.differ)):
        assert np.array_equal(a, b)


def test_the_deal_judges_each_card_by_its_own_hidden_cards(monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import network_card, network_play_out
    from popejoan_env.training import advantage

    policy, chosen = _policy(), []

    def spy(view, cands, values):
        chosen.append(real(view, cands, values))
        return chosen[-1]

    real = advantage.best_lead
    monkeypatch.setattr(advantage, "best_lead", spy)
    found = one_step_advantage(policy, TABLE, 4, 3, worlds=2, judge_worlds=5, judge_belief="deal",
                               balance_range=BALANCES)
    assert len(chosen) == len(found.gain) and found.differ.any()

    expected = {}
    for d in range(4):
        deal, k = deal_of(TABLE, BALANCES, 3, d), 0
        while deal.advance():
            net = network_card(policy, deal)
            if len(lead_candidates(seat_view(deal, deal.to_act))) > 1:
                expected[d, k] = (deal.copy(), net)
                k += 1
            deal.play(net)
    seen: dict[int, int] = {}
    for d, card, gain, differ in zip(found.deal.tolist(), chosen, found.gain, found.differ):
        k = seen[d] = seen.get(d, -1) + 1
        deal, net = expected[d, k]
        assert differ == (card != net)
        assert gain == pytest.approx(network_play_out(policy, deal.copy(), card) -
                                     network_play_out(policy, deal.copy(), net))
    assert sum(v + 1 for v in seen.values()) == len(expected)


@pytest.mark.parametrize("field", ["belief", "judge_belief"])
def test_an_unknown_belief_is_refused_by_name(field: str) -> None:
    with pytest.raises(PopeJoanError, match=rf"^{field} must be one of \['uniform', 'leads'.*\], got 'posterior'"):
        one_step_advantage(None, TABLE, 4, 1, **{field: "posterior"})


@pytest.mark.parametrize(("field", "value"), [("deals", 0), ("worlds", 0), ("judge_worlds", 2000), ("workers", True),
                                               ("deals", 2.0)])
def test_a_bad_count_is_refused_by_name(field: str, value: object) -> None:
    kwargs = {"deals": 4, "worlds": 2, "judge_worlds": 2, "workers": 1, field: value}
    deals = kwargs.pop("deals")
    with pytest.raises(PopeJoanError, match=rf"^{field} must be an integer 1\.\."):
        one_step_advantage(None, TABLE, deals, 1, **kwargs)


@pytest.mark.parametrize(("argv", "says"), [(["no/such.zip"], "no/such.zip"), (["shipped", "--deals", "1"], "--deals"),
                                            (["shipped", "--judge-worlds", "0"], "--judge-worlds"),
                                            (["shipped", "--judge-belief", "posterior"], "--judge-belief"),
                                            (["shipped", "--preset", "nosuch"], "'nosuch'"),
                                            (["shipped", "--judge-belief", "deal", "--judge-worlds", "8"],
                                             "--judge-worlds would go unused"),
                                            (["shipped", "--seats", "9"], "--seats")])
def test_the_script_refuses_bad_input_in_one_line(argv: list[str], says: str) -> None:
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "round_advantage.py"), *argv],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_script_refuses_a_network_at_a_table_size_it_was_not_trained_for(tmp_path) -> None:
    from conftest import network_file

    network_file(str(tmp_path / "four.zip"), players=(4,))
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "round_advantage.py"),
                           str(tmp_path / "four.zip"), "--seats", "6"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 2 and done.stderr.strip().endswith("four.zip was trained for 4 seats, not --seats 6")


def test_the_script_prints_a_row_a_network() -> None:
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "round_advantage.py"), "shipped",
                           "--deals", "4", "--worlds", "2", "--judge-worlds", "2", "--workers", "1"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    row = done.stdout.strip().splitlines()[-1].split("|")
    assert row[1].strip() == "shipped" and "±" in row[2] and row[4].strip().endswith("%")
