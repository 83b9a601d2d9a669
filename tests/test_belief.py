"""Reading the other seats' leads (``search.belief``): the observations rebuilt in a world, the lead model, the
resampling, and the cost benchmark of a round's games."""

from __future__ import annotations

import numpy as np
import pytest

from popejoan_env.cards import NUM_CARD_IDS, PACK_MASK
from popejoan_env.engine import Deal, legal_leads
from popejoan_env.observation import card_planes, encode
from popejoan_env.rules import Rules
from popejoan_env.search import belief
from popejoan_env.search.belief import Lead, lead_log_likelihood, legal_leads_of, observations_then, resample
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.seat_view import seat_view

MODERN = Rules.preset("modern")


def _played_out(rules: Rules, players: int, seed: int, stop_at: int, highest: bool = False
                ) -> tuple[Deal, list[Lead], list[int]]:
    """A deal played by random legal cards until ``stop_at`` leads were made, its leads recorded as the rollout
    stage records them, and each seat's true hand now: the first of the seeds from ``seed`` on whose deal goes on
    after them.  With ``highest``, every seat plays its highest legal card id instead."""
    while True:
        deal, leads, hands = _play(rules, players, seed, stop_at, highest)
        if deal.advance() and len(leads) == stop_at:
            return deal, leads, hands
        seed += 1000


def _play(rules: Rules, players: int, seed: int, stop_at: int, highest: bool) -> tuple[Deal, list[Lead], list[int]]:
    """``_played_out``'s deal of one seed (it may end before ``stop_at`` leads)."""
    rng = np.random.default_rng(seed)
    deal = Deal.new(rules, players, seed % players, np.random.default_rng([seed, 1]))
    leads: list[Lead] = []
    while deal.advance() and len(leads) < stop_at:
        view = seat_view(deal, deal.to_act)
        card = max(view.legal) if highest else int(rng.choice(view.legal))
        if view.forced < 0:
            leads.append(Lead(deal.to_act, encode(deal, deal.to_act), card, len(deal.plays)))
        deal.play(card)
    return deal, leads, [deal.hands[s] for s in range(players)]


class _Uniform:
    """A policy whose logits are all equal: every legal lead alike."""

    def logits(self, obs: np.ndarray) -> np.ndarray:
        return np.zeros((len(obs), NUM_CARD_IDS), dtype=np.float32)


@pytest.mark.parametrize("preset,ace_high,lead", [("modern", False, "lowest_of_suit"),
                                                  ("modern", True, "lowest_of_suit"), ("victorian", False, "any")])
def test_the_leads_a_hand_may_make_are_the_engines(preset: str, ace_high: bool, lead: str) -> None:
    rules = Rules.preset(preset).replace(ace_high=ace_high, lead=lead)
    rng = np.random.default_rng(4)
    pack = [c for c in range(NUM_CARD_IDS) if (PACK_MASK >> c) & 1]  # the 8 of diamonds is never dealt
    masks = [int(sum(1 << int(c) for c in rng.choice(pack, size=rng.integers(1, 14), replace=False)))
             for _ in range(300)]
    got = legal_leads_of(card_planes(np.array(masks, dtype=np.uint64)).astype(bool), rules)
    for mask, row in zip(masks, got):
        assert sorted(np.flatnonzero(row).tolist()) == sorted(legal_leads(mask, rules.lead == "any", ace_high))


@pytest.mark.parametrize("players,seed", [(3, 1), (4, 2), (5, 3), (6, 4), (8, 5)])
def test_in_the_true_world_each_past_lead_is_seen_as_its_seat_saw_it(players: int, seed: int) -> None:
    deal, leads, hands = _played_out(MODERN, players, seed, stop_at=6)
    observer = deal.to_act
    true = np.array([[hands[(observer + r) % players] for r in range(players)]], dtype=np.uint64)
    dead = np.array([deal.dead_mask], dtype=np.uint64)
    for lead in leads:
        obs, _ = observations_then(deal, observer, lead, true, dead)
        assert np.array_equal(obs[0], lead.observation), f"lead by seat {lead.seat} after {lead.played} cards"


def test_a_dealer_who_sees_the_dead_hand_sees_each_worlds_dead_hand() -> None:
    rules = MODERN.replace(dealer_sees_dead_hand=True)
    for seed in range(40):
        deal, leads, hands = _played_out(rules, 4, seed, stop_at=5)
        dealer_leads = [x for x in leads if x.seat == deal.dealer]
        if dealer_leads and deal.to_act != deal.dealer:
            break
    else:
        pytest.fail("no deal in which the dealer led before another seat's decision")
    observer = deal.to_act
    true = np.array([[hands[(observer + r) % 4] for r in range(4)]], dtype=np.uint64)
    obs, _ = observations_then(deal, observer, dealer_leads[0], true, np.array([deal.dead_mask], np.uint64))
    assert np.array_equal(obs[0], dealer_leads[0].observation)


def test_worlds_weigh_the_leads_by_the_policy_and_a_flat_policy_by_the_legal_leads() -> None:
    deal, leads, _ = _played_out(MODERN, 4, 7, stop_at=6)
    observer = deal.to_act
    view = seat_view(deal, observer)
    hands, dead, _ = WorldSampler(view).draw_many(np.random.default_rng(0), 16)
    got = lead_log_likelihood(_Uniform(), deal, observer, leads, hands, dead)
    want = np.zeros(16)
    for lead in leads:
        if lead.seat != observer:
            _, hand = observations_then(deal, observer, lead, hands, dead)
            legal = legal_leads_of(hand, deal.rules)
            assert legal[:, lead.card].all(), "each world is consistent with the lead"
            want += -np.log(legal.sum(axis=1))
    assert np.allclose(got, want)
    assert lead_log_likelihood(_Uniform(), deal, observer, [x for x in leads if x.seat == observer], hands,
                               dead).tolist() == [0.0] * 16, "a seat's own leads say nothing to it"


def test_a_policy_that_always_leads_its_highest_card_rules_out_worlds_where_it_would_not_have(monkeypatch) -> None:
    class Highest:
        """Logits that prefer high card ids strongly: a model of a seat leading its highest card id."""

        def logits(self, obs: np.ndarray) -> np.ndarray:
            return np.tile(10.0 * np.arange(NUM_CARD_IDS, dtype=np.float32), (len(obs), 1))

    monkeypatch.setattr(belief, "FLOOR", 0.0)
    deal, leads, _ = _played_out(MODERN, 4, 11, stop_at=5, highest=True)
    observer = deal.to_act
    hands, dead, _ = WorldSampler(seat_view(deal, observer)).draw_many(np.random.default_rng(2), 64)
    got = lead_log_likelihood(Highest(), deal, observer, leads, hands, dead)
    fitting = 0
    for w in range(64):
        fits = all(np.flatnonzero(legal_leads_of(observations_then(deal, observer, x, hands[w:w + 1],
                                                                   dead[w:w + 1])[1], deal.rules)[0])[-1] == x.card
                   for x in leads if x.seat != observer)
        assert (got[w] > -1.0) == fits, w
        fitting += fits
    assert 0 < fitting < 64, "some worlds fit the leads and some do not"


def test_resampling_keeps_worlds_in_proportion_to_their_weight() -> None:
    rng = np.random.default_rng(3)
    assert resample(np.zeros(8), 8, rng).tolist() == list(range(8))
    assert set(resample(np.array([0.0, -np.inf, 5.0, -50.0]), 6, rng).tolist()) == {2}
    counts = np.bincount(np.concatenate([resample(np.log([0.1, 0.3, 0.6]), 10, rng) for _ in range(500)]),
                         minlength=3)
    assert np.allclose(counts / counts.sum(), [0.1, 0.3, 0.6], atol=0.01)


def test_the_cost_benchmark_times_each_number_of_worlds_against_the_first(capsys) -> None:
    import runpy
    import sys

    argv = sys.argv
    try:
        sys.argv = ["bench_rounds.py", "--deals", "3", "--worlds", "2,4"]
        runpy.run_path(str(__import__("pathlib").Path(__file__).resolve().parents[1] / "benchmarks" /
                           "bench_rounds.py"), run_name="__main__")
    finally:
        sys.argv = argv
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:4] for line in lines] == [[worlds, "worlds", "a", "decision"] for worlds in ("2", "4")]
    assert lines[0].endswith("1.00x the first")
