"""pimc's one-call search (``players.search``, compiled in ``players.decision_kernels``) gives the worlds, weights and
counters of the staged path it replaced (``WorldSampler.draw_many``, the position as a ``Deal`` and a one-deal
batch, ``playouts.drawn_gains``), so the same seed makes the same decisions."""

from __future__ import annotations

import numpy as np
import pytest

from popejoan_env import MODERN, VICTORIAN, Deal
from popejoan_env.errors import IllegalActionError, InvalidDealError
from popejoan_env.observation import encode_view
from popejoan_env.search import decision, worlds
from popejoan_env.search.playouts import drawn_gains, greedy_gains_at
from popejoan_env.players.guided import GuidedPimcPlayer
from popejoan_env.players.pimc import PimcPlayer
from popejoan_env.search.decision import search_gains
from popejoan_env.players.stops import lead_candidates
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.rules import Rules
from popejoan_env.seat_view import SeatView, seat_view

ACE_HIGH = MODERN.replace(ace_high=True, pair_split="halves", deal="all_round")
ANY_ACE_HIGH = VICTORIAN.replace(ace_high=True, pope_excused=False, dealer_sees_dead_hand=True)
CONFIGS = [(MODERN, 4), (VICTORIAN, 6), (ACE_HIGH, 4), (ANY_ACE_HIGH, 5), (MODERN, 3)]
IDS = ["modern-4", "victorian-6", "ace_high-4", "any_ace_high-5", "modern-3"]


def search_views(rules: Rules, players: int, deals: int, seed: int) -> list[SeatView]:
    """A view of the seat to lead where it has two or more candidates, one per deal (a different depth each
    time), the deals played on by random leads."""
    rng = np.random.default_rng(seed)
    out = []
    for d in range(deals):
        deal = Deal.new(rules, players, d % players, np.random.default_rng([seed, d]))
        found = []
        legal = deal.advance()
        while legal:
            view = seat_view(deal, deal.to_act)
            if len(lead_candidates(view)) > 1:
                found.append(view)
            deal.play(legal[int(rng.integers(len(legal)))])
            legal = deal.advance()
        if found:
            out.append(found[(3 * d) % len(found)])
    return out


def staged(view: SeatView, candidates: list[int], rng: np.random.Generator, samples: int,
           sampler: str = "consistent") -> tuple[np.ndarray, np.ndarray]:
    """The path before the one-call search: the sampler, its compiled draws, the position, the batched rollouts."""
    s = WorldSampler(view, sampler)
    hands, dead, logs = s.draw_many(rng, samples)
    return drawn_gains(s.deals(hands[:1], dead[:1])[0], hands, dead, candidates), logs


@pytest.mark.parametrize(("rules", "players"), CONFIGS, ids=IDS)
def test_search_gives_the_worlds_weights_and_gains_of_the_staged_path(rules: Rules, players: int) -> None:
    views = search_views(rules, players, 25, seed=players)
    assert len(views) >= 20
    for i, view in enumerate(views):
        candidates = lead_candidates(view)
        for sampler in ("consistent", "uniform"):
            a, b = np.random.default_rng(i), np.random.default_rng(i)
            gains, logs = search_gains(view, candidates, a, 24, sampler=sampler)
            want_gains, want_logs = staged(view, candidates, b, 24, sampler)
            assert gains.tolist() == want_gains.tolist()
            assert logs.tolist() == want_logs.tolist()
            assert a.random() == b.random()  # the same draws from the caller's generator


@pytest.mark.parametrize(("rules", "players"), CONFIGS[:4], ids=IDS[:4])
def test_search_plays_given_worlds_as_the_old_rollouts_do(rules: Rules, players: int) -> None:
    from popejoan_env.search import decision_kernels

    for i, view in enumerate(search_views(rules, players, 10, seed=10 + players)):
        candidates = lead_candidates(view)
        sampler = WorldSampler(view)
        hands, dead, _ = sampler.draw_many(np.random.default_rng(i), 16)
        position = sampler.deals(hands[:1], dead[:1])[0]
        masks = np.concatenate([hands[:, 1:], dead[:, None] & ~np.uint64(sampler.known_dead)], axis=1)
        gains = np.empty((16, len(candidates)), dtype=np.int64)
        inputs = decision.view_inputs(view, candidates, "consistent")
        decision_kernels.play_worlds(masks, inputs.position, inputs.tables, gains)
        assert gains.tolist() == greedy_gains_at(position, hands, dead, candidates).tolist()


class StagedPimc(PimcPlayer):
    """``pimc`` evaluating by the staged path."""

    def evaluate(self, view: SeatView, candidates: list[int]) -> list[float]:
        """``PimcPlayer.evaluate`` as it was before the one-call search."""
        gains, logs = staged(view, candidates, self.rng, self.samples, self.sampler)
        return self.weigh(gains, logs, candidates)


@pytest.mark.parametrize(("rules", "players"), CONFIGS[:4], ids=IDS[:4])
def test_pimc_decides_as_with_the_staged_path(rules: Rules, players: int) -> None:
    views = search_views(rules, players, 40, seed=20 + players)
    fast, reference = PimcPlayer(seed=3, samples=16), StagedPimc(seed=3, samples=16)
    for view in views:
        assert fast.choose(view) == reference.choose(view)
        assert fast.last_values == reference.last_values


def test_pimc_net_decides_as_with_the_staged_path() -> None:
    views = search_views(MODERN, 4, 12, seed=7)
    fast = GuidedPimcPlayer(seed=5, samples=16)
    reference = GuidedPimcPlayer(seed=5, samples=16)
    for view in views:
        candidates = lead_candidates(view)
        scores = fast.evaluate(view, candidates)
        gains, logs = staged(view, candidates, reference.rng, 16)
        reference.weigh(gains, logs, candidates)
        z = reference.policy.logits(encode_view(view))[candidates].astype(np.float64)
        z -= z.max()
        log_p = z - np.log(np.exp(z).sum())
        assert scores == [reference.last_values[c] + lp for c, lp in zip(candidates, log_p.tolist())]


def test_a_world_out_of_restarts_is_placed_by_the_reference_search(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decision, "MAX_RESTARTS", 0)  # no world is placed by the compiled draws
    monkeypatch.setattr(worlds, "MAX_RESTARTS", 0)
    for i, view in enumerate(search_views(MODERN, 4, 6, seed=30)):
        candidates = lead_candidates(view)
        a, b = np.random.default_rng(i), np.random.default_rng(i)
        gains, logs = search_gains(view, candidates, a, 5)
        want_gains, want_logs = staged(view, candidates, b, 5)
        assert gains.tolist() == want_gains.tolist() and logs.tolist() == want_logs.tolist() == [0.0] * 5
        assert a.random() == b.random()


def test_search_refuses_what_is_not_the_observers_lead() -> None:
    view = search_views(MODERN, 4, 1, seed=1)[0]
    legal, rng = lead_candidates(view), np.random.default_rng(0)
    illegal = next(c for c in range(52) if c not in legal)
    with pytest.raises(IllegalActionError, match="seat 0 cannot lead"):
        search_gains(view, [legal[0], illegal], rng, 4)
    with pytest.raises(InvalidDealError, match="at least one candidate"):
        search_gains(view, [], rng, 4)
    with pytest.raises(InvalidDealError, match="positive number of worlds"):
        search_gains(view, legal, rng, 0)
    with pytest.raises(InvalidDealError, match="unknown world sampler"):
        search_gains(view, legal, rng, 4, sampler="exact")
    other = view.__class__(**{**view.__dict__, "to_act": 1})
    with pytest.raises(InvalidDealError, match="the observer's leads"):
        search_gains(other, legal, rng, 4)


def test_search_refuses_an_inconsistent_view_as_the_sampler_does() -> None:
    view = search_views(MODERN, 4, 1, seed=2)[0]
    wrong = view.__class__(**{**view.__dict__, "hand_sizes": (view.hand_sizes[0], view.hand_sizes[1] + 1,
                                                              *view.hand_sizes[2:])})
    with pytest.raises(InvalidDealError) as reference:
        WorldSampler(wrong)
    with pytest.raises(InvalidDealError) as fast:
        search_gains(wrong, lead_candidates(view), np.random.default_rng(0), 4)
    assert str(fast.value) == str(reference.value)


def test_a_change_to_a_compiled_source_drops_the_cache_of_the_search(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from popejoan_env.search import decision_kernels

    flushed: list[str] = []
    functions = (decision_kernels.placing_order, decision_kernels.search, decision_kernels._positions,
                 decision_kernels.play_worlds)
    for function in functions:
        monkeypatch.setattr(function._cache, "flush", lambda name=function.__name__: flushed.append(name))
        monkeypatch.setattr(function._cache, "_cache_path", str(tmp_path))
    stamp = tmp_path / "decision_kernels.sources.stamp"  # type: ignore[operator]
    decision_kernels._drop_stale_cache()  # no stamp yet: whatever is cached may predate the sources
    assert sorted(flushed) == sorted(f.__name__ for f in functions) and stamp.exists()
    decision_kernels._drop_stale_cache()  # the same sources: the cache stays
    assert len(flushed) == 4
    stamp.write_text("0 0\n")  # a source changed since the functions were cached
    decision_kernels._drop_stale_cache()
    assert len(flushed) == 8 and stamp.read_text() != "0 0\n"


@pytest.mark.parametrize(("rules", "players"), CONFIGS, ids=IDS)
def test_the_compiled_placing_order_is_the_samplers(rules: Rules, players: int) -> None:
    from popejoan_env.search import decision_kernels

    for view in search_views(rules, players, 25, seed=40 + players):
        for sampler in ("consistent", "uniform"):
            reference = WorldSampler(view, sampler)
            s = decision.view_inputs(view, lead_candidates(view), sampler).sampling
            cards, allowed = np.empty(64, dtype=np.int64), np.empty(64, dtype=np.int64)
            constrained = decision_kernels.placing_order(s.unseen, s.excluded, s.hidden_dead, s.forced, s.forced_seat,
                                                       s.uniform, cards, allowed)
            assert constrained == len(reference._allowed)
            assert cards[:len(reference._cards)].tolist() == reference._cards.tolist()
            assert allowed[:constrained].tolist() == reference._allowed.tolist()
            assert s.room.tolist() == reference.room


def test_a_card_that_can_be_nowhere_is_refused_as_the_sampler_refuses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from popejoan_env.cards import PACK_MASK
    from popejoan_env.search import decision_kernels

    view = next(v for v in search_views(ANY_ACE_HIGH, 5, 40, seed=3) if v.dead_hand is not None)  # no dead room
    everything = lambda v: (PACK_MASK,) * v.players  # noqa: E731  (no seat may hold anything)
    monkeypatch.setattr(decision, "cannot_hold", everything)
    monkeypatch.setattr(worlds, "cannot_hold", everything)
    with pytest.raises(InvalidDealError) as reference:
        WorldSampler(view)
    with pytest.raises(InvalidDealError) as fast:
        search_gains(view, lead_candidates(view), np.random.default_rng(0), 4)
    assert str(fast.value) == str(reference.value) and "can be nowhere" in str(fast.value)
    excluded = np.full(5, PACK_MASK, dtype=np.uint64)
    cards, allowed = np.empty(64, dtype=np.int64), np.empty(64, dtype=np.int64)
    assert decision_kernels.placing_order(np.uint64(view.unseen), excluded, 0, -1, -1, False, cards, allowed) == -1
