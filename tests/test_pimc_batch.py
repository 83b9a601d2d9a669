"""pimc's batched greedy rollouts (``players.playouts``, compiled in ``players.playout_kernels``) decide
exactly as its scalar ones."""

from __future__ import annotations

import numpy as np
import pytest

from popejoan_env import MODERN, VICTORIAN, Deal
from popejoan_env.batch import BatchDeals, BatchState
from popejoan_env.cards import POPE, cards_of
from popejoan_env.errors import IllegalActionError, InvalidDealError
from popejoan_env.players import make_player
from popejoan_env.players.base import UnknownPlayerError
from popejoan_env.search.playouts import drawn_gains, greedy_gains, greedy_gains_at, rollout_batch, worlds_batch
from popejoan_env.players.pimc import PimcPlayer, default_engine, greedy_lead, rollout
from popejoan_env.search.playout_kernels import greedy_position
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.rules import Rules
from popejoan_env.seat_view import SeatView, seat_view
from popejoan_env.tournament import run_duplicate

ACE_HIGH = MODERN.replace(ace_high=True, pair_split="halves", deal="all_round")
ANY_ACE_HIGH = VICTORIAN.replace(ace_high=True, pope_excused=False)
CONFIGS = [(MODERN, 4), (MODERN, 3), (MODERN, 6), (VICTORIAN, 4), (VICTORIAN, 6), (ACE_HIGH, 4), (ANY_ACE_HIGH, 5)]
IDS = ["modern-4", "modern-3", "modern-6", "victorian-4", "victorian-6", "ace_high-4", "any_ace_high-5"]
def batch_pimc(**params: object) -> PimcPlayer:
    """``pimc:engine=batch``."""
    return PimcPlayer(engine="batch", **params)  # type: ignore[arg-type]


def decision_points(rules: Rules, players: int, deals: int, seed: int, lone: bool = False) -> list[Deal]:
    """Copies of deals at every lead with two or more legal cards (and the lone leads too, with ``lone``), the
    deals played on by random leads."""
    rng = np.random.default_rng(seed)
    out = []
    for d in range(deals):
        deal = Deal.new(rules, players, d % players, np.random.default_rng([seed, d]))
        legal = deal.advance(lone_leads=not lone)
        while legal:
            out.append(deal.copy())
            deal.play(legal[int(rng.integers(len(legal)))])
            legal = deal.advance(lone_leads=not lone)
    return out


def views_at(rules: Rules, players: int, deals: int, seed: int) -> list[SeatView]:
    """The views of the seat to act at one decision point of each deal (a different depth each time)."""
    out = []
    for d in range(deals):
        points = decision_points(rules, players, 1, seed + d)
        if points:
            deal = points[(3 * d) % len(points)]
            out.append(seat_view(deal, deal.to_act))
    return out


@pytest.mark.parametrize(("rules", "players"), CONFIGS, ids=IDS)
def test_greedy_leads_are_the_scalar_greedy_lead(rules: Rules, players: int) -> None:
    points = decision_points(rules, players, 40, seed=players)
    batch = BatchDeals.from_deals(points)
    assert not batch.done.any()
    want = [greedy_lead(deal) for deal in points]
    assert len(set(want)) > 10  # many different leads, so the key (not a constant) is checked
    # The compiled key, from the hand of the seat to act and every seat's cards (the batch's public state).
    pope = int(batch.pos_of_card[POPE])
    lead_any = rules.lead == "any"
    state = batch.state
    compiled = [greedy_position(state.hands[i, state.to_act[i]], state.held[i], lead_any, pope)
                for i in range(len(points))]
    assert batch.card_of_pos[compiled].tolist() == want
    assert pope == batch.tables.pope_pos and lead_any == batch.tables.lead_any
    rows = np.arange(len(points))[::3]  # a subset of the rows: their own leads
    assert [batch.card_of_pos[greedy_position(state.hands[i, state.to_act[i]], state.held[i], lead_any, pope)]
            for i in rows] == want[::3]


@pytest.mark.parametrize(("rules", "players"), CONFIGS, ids=IDS)
def test_greedy_gains_are_the_scalar_rollouts(rules: Rules, players: int) -> None:
    for view in views_at(rules, players, 6, seed=10 * players):
        sampler = WorldSampler(view)
        rng = np.random.default_rng(1)
        worlds = [sampler.sample(rng) for _ in range(5)]
        candidates = list(view.legal)
        before = [(w.hands, w.balances, w.board, w.plays) for w in worlds]
        got = greedy_gains(worlds, candidates)
        assert [(w.hands, w.balances, w.board, w.plays) for w in worlds] == before  # worlds are not touched
        want = []  # [world][candidate][seat]
        for world in worlds:
            row = []
            for card in candidates:
                deal = world.copy()
                deal.play(card)
                rollout(deal)
                row.append([b - a for a, b in zip(world.balances, deal.balances)])
            want.append(row)
        assert got.shape == (len(worlds), len(candidates))
        assert got.tolist() == [[gains[0] for gains in row] for row in want]
        last = players - 1  # another seat's counters, from the same rollouts
        assert greedy_gains(worlds, candidates, seat=last).tolist() == \
            [[gains[last] for gains in row] for row in want]


@pytest.mark.parametrize(("rules", "players"), [CONFIGS[0], CONFIGS[3], CONFIGS[5], CONFIGS[6]],
                         ids=[IDS[0], IDS[3], IDS[5], IDS[6]])
def test_greedy_gains_at_cards_are_those_of_the_worlds(rules: Rules, players: int) -> None:
    for view in views_at(rules, players, 4, seed=6 * players):
        sampler = WorldSampler(view)
        rng = np.random.default_rng(3)
        worlds = [sampler.sample(rng) for _ in range(4)]
        candidates = list(view.legal)
        want = greedy_gains(worlds, candidates)
        position = worlds[1]  # any world of the view is the position; the cards of each world are given
        hands, dead = [w.hands for w in worlds], [w.dead_mask for w in worlds]
        got = greedy_gains_at(position, hands, dead, candidates)
        assert got.tolist() == want.tolist()
        assert greedy_gains_at(position, np.array(hands), np.array(dead), candidates).tolist() == \
            want.tolist()
        # nothing was played on the position: its plays are still the view's history
        assert position.hands == worlds[1].hands and position.plays == [(s, c) for s, c, _ in view.history]


@pytest.mark.parametrize(("rules", "players"), [CONFIGS[0], CONFIGS[4], CONFIGS[5]], ids=[IDS[0], IDS[4], IDS[5]])
def test_drawn_gains_are_those_of_the_drawn_worlds(rules: Rules, players: int) -> None:
    for view in views_at(rules, players, 4, seed=5 * players):
        sampler = WorldSampler(view)
        hands, dead, _ = sampler.draw_many(np.random.default_rng(1), 6)
        worlds = sampler.deals(hands, dead)
        candidates = list(view.legal)
        assert drawn_gains(worlds[2], hands, dead, candidates).tolist() == \
            greedy_gains(worlds, candidates).tolist()


def test_drawn_gains_checks_each_worlds_hand_to_act_when_the_observer_is_not_to_act() -> None:
    deal = decision_points(VICTORIAN, 4, 1, seed=9)[0]
    view = seat_view(deal, (deal.to_act + 1) % 4)  # the seat to act is relative seat 3, its hand hidden
    sampler = WorldSampler(view)
    hands, dead, _ = sampler.draw_many(np.random.default_rng(2), 1)
    to_act = 3
    # world 1: world 0 with one card of the hand to act swapped for one of seat 1 (lead "any": all legal)
    mine, theirs = cards_of(int(hands[0, to_act])), cards_of(int(hands[0, 1]))
    swapped = hands[0].copy()
    swapped[to_act] ^= np.uint64((1 << mine[0]) | (1 << theirs[0]))
    swapped[1] ^= np.uint64((1 << mine[0]) | (1 << theirs[0]))
    hands, dead = np.stack([hands[0], swapped]), np.concatenate([dead, dead])
    worlds = sampler.deals(hands, dead)
    assert worlds[0].to_act == worlds[1].to_act == to_act and worlds[0].hands[to_act] != worlds[1].hands[to_act]
    both = mine[1:3]
    assert drawn_gains(worlds[0], hands, dead, both).tolist() == greedy_gains(worlds, both).tolist()
    with pytest.raises(IllegalActionError, match="world 1: seat 3 cannot lead"):
        drawn_gains(worlds[0], hands, dead, [mine[0]])


def test_drawn_gains_refuses_what_is_no_draw_of_the_position() -> None:
    deal = decision_points(MODERN, 4, 1, seed=3)[0]
    view = seat_view(deal, deal.to_act)
    sampler = WorldSampler(view)
    hands, dead, _ = sampler.draw_many(np.random.default_rng(0), 3)
    position = sampler.deals(hands[:1], dead[:1])[0]
    legal = list(view.legal)
    for bad_hands, bad_dead in ((hands.astype(np.int64), dead), (hands[:, :3], dead), (hands, dead[:2]),
                                (hands.tolist(), dead), (hands[:0], dead[:0])):
        with pytest.raises(InvalidDealError, match="uint64 arrays"):
            drawn_gains(position, bad_hands, bad_dead, legal)
    with pytest.raises(InvalidDealError, match="at least one candidate"):
        drawn_gains(position, hands, dead, [])
    illegal = next(c for c in range(52) if c not in view.legal and (view.hand >> c) & 1)
    with pytest.raises(IllegalActionError, match="cannot lead"):
        drawn_gains(position, hands, dead, [legal[0], illegal])
    due = None
    for point in decision_points(MODERN, 4, 5, seed=2):
        for card in point.legal_actions():
            after = point.copy()
            after.play(card)  # no advance: a card due (R8) waits to be played
            if after.forced >= 0 and due is None:
                due = after
    assert due is not None
    due_view = seat_view(due, due.to_act)
    sampler = WorldSampler(due_view)
    hands, dead, _ = sampler.draw_many(np.random.default_rng(0), 2)
    with pytest.raises(InvalidDealError, match="must wait for one"):
        drawn_gains(sampler.deals(hands[:1], dead[:1])[0], hands, dead, [due.forced])


def test_greedy_gains_at_refuses_cards_that_are_no_world() -> None:
    deal = decision_points(MODERN, 4, 1, seed=3)[0]
    view = seat_view(deal, deal.to_act)
    world = WorldSampler(view).sample(np.random.default_rng(0))
    hands, dead = list(world.hands), world.dead_mask
    card = next(c for c in range(52) if (hands[1] >> c) & 1)
    moved = [hands[0], hands[1] ^ (1 << card), hands[2] | (1 << card), hands[3]]  # one seat a card short
    doubled = [hands[0], hands[1], hands[2] | (1 << card), hands[3]]  # a card twice (and a card short)
    low_dead = min(c for c in range(52) if (dead >> c) & 1 and c != world.turnup)
    hand_card = next(c for c in range(52) if (hands[3] >> c) & 1)
    swapped = [hands[0], hands[1], hands[2], hands[3] ^ (1 << hand_card) | (1 << world.turnup)]
    no_turnup = dead ^ (1 << world.turnup) | (1 << hand_card)  # the turn-up must stay dead
    legal = list(view.legal)
    for bad_hands, bad_dead in ((moved, dead), (doubled, dead), (swapped, no_turnup),
                                (hands, dead ^ (1 << low_dead))):
        with pytest.raises(InvalidDealError, match="does not place the position's unplayed cards"):
            greedy_gains_at(world, [hands, bad_hands], [dead, bad_dead], legal)
    for bad_hands, bad_dead in (([hands[:3]], [dead]), ([hands], dead), ([[float(h) for h in hands]], [dead]),
                                ([hands, hands], [dead]), ([hands, hands[:3]], [dead, dead]), (hands[0], dead)):
        with pytest.raises(InvalidDealError, match="integer card masks"):
            greedy_gains_at(world, bad_hands, bad_dead, legal)
    with pytest.raises(InvalidDealError, match="at least one world and one candidate"):
        greedy_gains_at(world, [], [], legal)
    illegal = next(c for c in range(52) if c not in view.legal and (view.hand >> c) & 1)
    with pytest.raises(IllegalActionError, match="cannot lead"):
        greedy_gains_at(world, [hands], [dead], [legal[0], illegal])
    assert world.hands == hands and world.dead_mask == dead and not world.plays


@pytest.mark.parametrize(("rules", "players"), CONFIGS, ids=IDS)
@pytest.mark.parametrize("sampler", ["consistent", "uniform"])
def test_batch_engine_gives_the_same_totals_and_choices(rules: Rules, players: int, sampler: str) -> None:
    scalar = PimcPlayer(seed=7, samples=8, sampler=sampler, engine="scalar")
    batch = batch_pimc(seed=7, samples=8, sampler=sampler)
    weighted = 0
    for view in views_at(rules, players, 20, seed=players):
        candidates = list(view.legal)
        totals = scalar.evaluate(view, candidates)
        assert batch.evaluate(view, candidates) == totals
        assert batch.choose(view) == scalar.choose(view)
        weighted += sampler == "consistent" and any(t != int(t) for t in totals)
    # Both players drew the same worlds all along, so they are still in step.
    assert batch.rng.random() == scalar.rng.random()
    if sampler == "consistent" and rules.lead != "any":
        assert weighted  # some positions weigh their worlds unequally (the float sums are compared too)


def test_a_lone_legal_lead_is_evaluated_like_the_scalar_rollout() -> None:
    lone = [d for d in decision_points(MODERN, 4, 20, seed=5, lone=True) if len(d.legal_actions()) == 1]
    assert lone
    for deal in lone[:5]:
        view = seat_view(deal, deal.to_act)
        a = PimcPlayer(seed=2, samples=4, engine="scalar").evaluate(view, list(view.legal))
        b = batch_pimc(seed=2, samples=4).evaluate(view, list(view.legal))
        assert a == b


@pytest.mark.parametrize(("rules", "players"), [CONFIGS[0], CONFIGS[5], CONFIGS[6]], ids=[IDS[0], IDS[5], IDS[6]])
def test_a_batch_of_worlds_is_the_batch_from_deals_makes(rules: Rules, players: int) -> None:
    lone = [d for d in decision_points(rules, players, 3, seed=8, lone=True) if len(d.legal_actions()) == 1]
    views = views_at(rules, players, 4, seed=8) + [seat_view(d, d.to_act) for d in lone[:2]]
    for view in views:
        worlds = [WorldSampler(view).sample(np.random.default_rng(k)) for k in range(3)]
        got = worlds_batch(worlds, repeat=2)
        want = BatchDeals.from_deals([w for w in worlds for _ in range(2)], lone_leads=False)
        assert got.num_deals == 6 and got.lone_leads
        assert len(BatchState._fields) > 20
        for name in BatchState._fields:
            np.testing.assert_array_equal(getattr(got.state, name), getattr(want.state, name), err_msg=name)


@pytest.mark.parametrize(("rules", "players"), [CONFIGS[0], CONFIGS[4], CONFIGS[5]], ids=[IDS[0], IDS[4], IDS[5]])
def test_rollout_batch_plays_the_scalar_rollouts(rules: Rules, players: int) -> None:
    points = decision_points(rules, players, 6, seed=4)
    batch = BatchDeals.from_deals(points)
    start = batch.balances.copy()
    rollout_batch(batch)
    assert batch.done.all() and not batch.advance()  # every deal over, and reported
    for i, deal in enumerate(points):
        want = deal.copy()
        rollout(want)
        assert (batch.balances[i] - start[i]).tolist() == [b - a for a, b in zip(deal.balances, want.balances)]
        assert batch.plays_of(i) == [card for _, card in want.plays]
        assert batch.winner[i] == want.winner
    dealt = BatchDeals(rules, players, num_deals=2, rng=np.random.default_rng(0))
    with pytest.raises(InvalidDealError, match="auto_reset off"):
        rollout_batch(dealt)


@pytest.mark.parametrize(("rules", "players", "entrants"), [
    ("modern", 4, ["{pimc}", "stops_first", "pool_hunter", "random"]),
    ("victorian", 3, ["{pimc}", "pool_hunter", "lowest"]),
])
def test_a_tournament_is_the_same_with_either_engine(rules: str, players: int, entrants: list[str]) -> None:
    results = []
    for pimc in ("pimc:samples=3,engine=scalar", "pimc:samples=3,engine=batch"):
        field = [e.format(pimc=pimc) for e in entrants]
        results.append(run_duplicate(field, deals=3, seed=11, rules=rules, seats=players))
    a, b = results
    assert {a.players[0], b.players[0]} == {"pimc:samples=3", "pimc:samples=3,engine=scalar"}
    np.testing.assert_array_equal(a.per_deal, b.per_deal)
    assert a.decisions == b.decisions


def test_engine_parameter_names_and_refusals() -> None:
    default = "batch"  # the compiled rollouts
    assert default_engine() == default and default_engine("random") == "scalar"
    assert make_player("pimc").engine == default
    assert make_player(f"pimc:engine={default}").name == "pimc"
    other = "scalar"
    p = make_player(f"pimc:engine={other},samples=8", seed=1)
    assert isinstance(p, PimcPlayer) and p.engine == other and p.name == f"pimc:samples=8,engine={other}"
    assert make_player("pimc:rollout=random").engine == "scalar"
    assert make_player("pimc:rollout=random").name == "pimc:rollout=random"
    with pytest.raises(UnknownPlayerError, match="engine must be one of.*scalar.*batch"):
        make_player("pimc:engine=fast")
    with pytest.raises(UnknownPlayerError, match="engine=batch plays greedy rollouts only"):
        make_player("pimc:engine=batch,rollout=random")


def test_greedy_gains_refuses_bad_input_and_changes_nothing() -> None:
    points = decision_points(MODERN, 4, 2, seed=3)
    deal = points[0]
    view = seat_view(deal, deal.to_act)
    world = WorldSampler(view).sample(np.random.default_rng(0))
    with pytest.raises(InvalidDealError, match="at least one world and one candidate"):
        greedy_gains([], list(view.legal))
    with pytest.raises(InvalidDealError, match="at least one world and one candidate"):
        greedy_gains([world], [])
    illegal = next(c for c in range(52) if c not in view.legal and (view.hand >> c) & 1)
    hands = list(world.hands)
    for bad in (illegal, 20, 99, -1):  # a card held but not the lowest of its suit, the 8♦, no card at all
        with pytest.raises(IllegalActionError, match="cannot lead"):
            greedy_gains([world], [view.legal[0], bad])
    assert world.hands == hands and not world.plays
    due = next(d for d in (p.copy() for p in decision_points(MODERN, 4, 3, seed=3)) if _lead_leaves_a_card_due(d))
    with pytest.raises(InvalidDealError, match="must wait for a lead"):
        greedy_gains([due], [due.forced])
    finished = deal.copy()
    finished.play_out(greedy_lead)
    with pytest.raises(InvalidDealError, match="must wait for a lead"):
        greedy_gains([finished], [0])
    later = next(p for p in points[1:] if p.to_act == deal.to_act)  # another position of the same seat
    other = WorldSampler(seat_view(later, later.to_act)).sample(np.random.default_rng(0))
    with pytest.raises(InvalidDealError, match="must be one position"):
        greedy_gains([world, other], [view.legal[0]])
    with pytest.raises(InvalidDealError, match="must be one position"):
        worlds_batch([world, other])
    for seat in (4, -1, 1.5):
        with pytest.raises(InvalidDealError, match="seat must be a seat 0..3"):
            greedy_gains([world], [view.legal[0]], seat=seat)  # type: ignore[arg-type]
        with pytest.raises(InvalidDealError, match="seat must be a seat 0..3"):
            greedy_gains_at(world, [world.hands], [world.dead_mask], [view.legal[0]],
                            seat=seat)  # type: ignore[arg-type]
    with pytest.raises(InvalidDealError, match="repeat must be a positive integer"):
        worlds_batch([world], repeat=0)
    assert greedy_gains([world], [view.legal[0]], seat=2).shape == (1, 1)


def _lead_leaves_a_card_due(deal: Deal) -> bool:
    """Lead the first legal card; True when another seat's card is due next (R8)."""
    deal.play(deal.legal_actions()[0])
    return deal.forced >= 0 and not deal.done


def test_a_change_to_batch_kernels_drops_the_cache_of_the_compiled_rollouts(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from popejoan_env.search import playout_kernels

    flushed: list[str] = []
    functions = (playout_kernels._play_out, playout_kernels.greedy_rollouts, playout_kernels._greedy_rollouts,
                 playout_kernels.world_gains, playout_kernels._world_gains)
    for function in functions:
        monkeypatch.setattr(function._cache, "flush", lambda name=function.__name__: flushed.append(name))
        monkeypatch.setattr(function._cache, "_cache_path", str(tmp_path))
    stamp = tmp_path / "playout_kernels.batch_kernels.stamp"  # type: ignore[operator]
    playout_kernels._drop_stale_cache()  # no stamp yet: whatever is cached may predate batch/kernels.py
    assert sorted(flushed) == sorted(f.__name__ for f in functions) and stamp.exists()
    playout_kernels._drop_stale_cache()  # the same batch/kernels.py: the cache stays
    assert len(flushed) == 5
    stamp.write_text("0 0\n")  # batch/kernels.py changed since the functions were cached
    playout_kernels._drop_stale_cache()
    assert len(flushed) == 10 and stamp.read_text() != "0 0\n"
