"""Scripted players: legal and deterministic everywhere, sensible in set positions, and stronger than random."""

from __future__ import annotations

import numpy as np
import pytest

from popejoan_env import MODERN, VICTORIAN, Deal
from popejoan_env.cards import PACK_MASK, POPE, cards_of, mask_of, parse_card, parse_cards
from popejoan_env.engine import DEAD, PLAYED, SUCCESSOR
from popejoan_env.errors import PopeJoanError
from popejoan_env.observation import action_mask, decode, encode
from popejoan_env.players import (
    SCRIPTED, Player, ScriptedPlayer, StopsFirstPlayer, UnknownPlayerError, make_player, parse_spec,
)
from popejoan_env.players.pimc import PimcPlayer, greedy_lead, rollout
from popejoan_env.players.pool_hunter import lead_values
from popejoan_env.players.stops import lead_candidates, orphans, run_from
from popejoan_env.search.worlds import WorldSampler, world_deal
from popejoan_env.seat_view import seat_view
from popejoan_env.tournament import run_duplicate

CUSTOM = MODERN.replace(ace_high=True, pair_split="halves", dealer_sees_dead_hand=True, deal="all_round")
FAST_SPECS = {name: name for name in SCRIPTED} | {"pimc": "pimc:samples=2"}


def _fixed_deal(hand0: list[str], rules=MODERN, turnup: str = "KD", extra_dead: tuple[str, ...] = (),
                board: dict[str, int] | None = None) -> Deal:
    """A 4-player deal where seat 1 (eldest, dealer 0) holds ``hand0``; the rest dealt in order."""
    mine = set(parse_cards(hand0))
    dead = parse_cards(list(extra_dead)) + [parse_card(turnup)]
    rest = [c for c in cards_of(PACK_MASK) if c not in mine and c not in dead]
    sizes, dead_size = rules.hand_sizes(4)
    need_dead = dead_size - len(dead)
    dead = rest[:need_dead] + dead
    rest = rest[need_dead:]
    hands = []
    for seat in range(4):
        if seat == 1:
            hands.append(sorted(mine))
        else:
            hands.append(rest[: len(hand0)])
            rest = rest[len(hand0):]
    # Whatever is left over (the hand sizes of hand0 may not match the rules) goes to the dead hand.
    return Deal.from_cards(hands, rest + dead, dealer=0, rules=rules, board=board)


# ----------------------------------------------------------------- legality
@pytest.mark.parametrize("rules", [MODERN, VICTORIAN, CUSTOM], ids=["modern", "victorian", "custom"])
def test_every_player_plays_only_legal_cards_for_3_to_8_players(rules) -> None:
    names = list(SCRIPTED)
    decisions = {name: 0 for name in names}
    for players in range(3, 9):
        for k in range(4):
            seed = 100 * players + k
            deal = Deal.new(rules, players, k % players, np.random.default_rng(seed))
            table = [make_player(FAST_SPECS[names[(s + k) % len(names)]], seed=seed + s) for s in range(players)]
            while not deal.done:
                seat = deal.to_act
                view = seat_view(deal, seat)
                card = table[seat].act(view)
                assert card in deal.legal_actions(), (table[seat].name, card, deal.legal_actions())
                if deal.forced < 0 and len(view.legal) > 1:
                    decisions[table[seat].name.split(":")[0]] += 1
                deal.play(card)
            assert sum(deal.delta) + sum(deal.board) - sum(deal.board_before) == 0
    assert all(n > 0 for n in decisions.values()), decisions


@pytest.mark.parametrize("rules", [MODERN, VICTORIAN], ids=["modern", "victorian"])
def test_act_on_the_decoded_aec_observation_equals_act_on_the_seat_view(rules) -> None:
    for name, spec in FAST_SPECS.items():
        player = make_player(spec)
        for seed in range(3):
            deal = Deal.new(rules, 4 + seed, 0, np.random.default_rng(seed))
            while not deal.done:
                seat = deal.to_act
                player.reset(seed)
                by_view = player.act(seat_view(deal, seat))
                player.reset(seed)
                by_obs = player.act(decode(encode(deal, seat), action_mask(deal, seat)))
                assert by_obs == by_view, name
                assert isinstance(by_obs, int)
                deal.play(by_obs)


def test_players_satisfy_the_protocol_and_are_deterministic_given_their_seed() -> None:
    for spec in FAST_SPECS.values():
        runs = []
        for _ in range(2):
            player = make_player(spec, seed=11)
            assert isinstance(player, Player)
            chosen = []
            for seed in range(6):
                deal = Deal.new(VICTORIAN if seed % 2 else MODERN, 4, seed % 4, np.random.default_rng(seed))
                while not deal.done:
                    card = player.act(seat_view(deal, deal.to_act))
                    chosen.append(card)
                    deal.play(card)
            runs.append(chosen)
        assert runs[0] == runs[1], spec
        player.reset(11)  # reset re-seeds: the same game again gives the same cards
        again = []
        for seed in range(6):
            deal = Deal.new(VICTORIAN if seed % 2 else MODERN, 4, seed % 4, np.random.default_rng(seed))
            while not deal.done:
                card = player.act(seat_view(deal, deal.to_act))
                again.append(card)
                deal.play(card)
        assert again == runs[0], spec


def test_random_player_depends_on_its_seed() -> None:
    deal = Deal.new(VICTORIAN, 4, 0, np.random.default_rng(5))
    view = seat_view(deal, deal.to_act)
    picks = {make_player("random", seed=s).act(view) for s in range(30)}
    assert len(picks) > 3


def test_forced_card_and_lone_lead_need_no_thought() -> None:
    class Refuses(ScriptedPlayer):
        name = "refuses"

        def choose(self, view):  # type: ignore[no-untyped-def]
            raise AssertionError("asked to think about a forced card")

    deal = _fixed_deal(["AS", "2S", "3S", "AH", "5C", "6C", "7C", "8C", "9C", "TC"])
    deal.play("AS")  # seat 1 leads A♠ and must go on with 2♠ itself
    assert deal.forced == parse_card("2S")
    view = seat_view(deal, deal.to_act)
    assert Refuses().act(view) == parse_card("2S")
    mask = action_mask(deal, deal.to_act)
    assert Refuses().act(decode(encode(deal, deal.to_act), mask)) == parse_card("2S")


# ----------------------------------------------------------------- sensible choices
def test_lowest_leads_its_ace_first() -> None:
    deal = _fixed_deal(["2C", "AH", "5S", "QD", "3C", "4C", "9S", "TS", "JS", "KH"])
    assert make_player("lowest").act(seat_view(deal, 1)) == parse_card("AH")


def test_stops_first_leads_a_run_it_knows_ends_in_a_stop_then_the_pope_then_lowest() -> None:
    # Q♠ K♠ is a run ending in a King: leading it keeps the lead.
    hand = ["QS", "KS", "AH", "9D", "3C", "4C", "6H", "7H", "TD", "JD"]
    deal = _fixed_deal(hand)
    view = seat_view(deal, 1)
    assert run_from(parse_card("QS"), view.hand, 0, SUCCESSOR[False]).stops
    player = StopsFirstPlayer()
    assert player.act(view) == parse_card("QS")
    # Without the stop run, the Pope (here the lowest diamond) comes next, before the Ace.
    deal = _fixed_deal(["5S", "6S", "AH", "9D", "3C", "4C", "6H", "7H", "TD", "JD"])
    assert player.act(seat_view(deal, 1)) == parse_card("9D")
    # Then a card nobody can lead up to: the Ace, before the lower-looking 3♣ whose 2 is out.
    deal = _fixed_deal(["5S", "6S", "AH", "3C", "4C", "6H", "7H", "TD", "JD", "2D"])
    assert player.act(seat_view(deal, 1)) == parse_card("AH")


def test_stops_first_counts_a_successor_known_dead_as_a_stop() -> None:
    # 5♥ is the turn-up: leading 3♥ 4♥ ends in a known stop; 2♣'s run does not.
    deal = _fixed_deal(["3H", "4H", "2C", "7S", "8S", "JC", "TD", "2D", "QH", "6C"], turnup="5H")
    view = seat_view(deal, 1)
    assert (view.known_dead >> parse_card("5H")) & 1
    assert StopsFirstPlayer().act(view) == parse_card("3H")


def test_victorian_leads_consider_run_bottoms_and_prefer_the_longest_known_stop_run() -> None:
    hand = ["5C", "9S", "TS", "JS", "QS", "KS", "AH", "7D", "6D", "4H", "8H"]
    deal = _fixed_deal(hand, rules=VICTORIAN, turnup="2C")
    view = seat_view(deal, 1)
    cands = lead_candidates(view)
    assert parse_card("TS") not in cands and parse_card("7D") not in cands  # inside a run of its own
    assert set(parse_cards(["9S", "6D", "5C", "AH", "4H", "8H"])) == set(cands)
    # 9♠…K♠ (5 cards) and 6♦ 7♦ (2 cards) both end in a stop: the longer goes first.
    assert StopsFirstPlayer().act(view) == parse_card("9S")
    # The others weigh more than stops (pimc may keep a stop run as a way back to the lead),
    # but they too lead from the bottom of a run.
    for spec in ("pool_hunter", "pimc:samples=8"):
        assert make_player(spec, seed=0).act(view) in cands


def test_orphans_are_cards_nobody_can_lead_up_to() -> None:
    hand = mask_of(parse_cards(["AC", "9D", "3H", "5S"]))
    gone = mask_of(parse_cards(["2H"]))
    assert set(cards_of(orphans(hand, gone, False))) == set(parse_cards(["AC", "9D", "3H"]))


def test_pool_hunter_leads_the_pope_and_runs_into_its_own_honours() -> None:
    # Hearts are trumps (turn-up 2♥); it holds the Pope as its lowest diamond, and J♥ Q♥ K♥.
    hand = ["9D", "TD", "JH", "QH", "KH", "3C", "5C", "7S", "9S", "JS"]
    deal = _fixed_deal(hand, turnup="2H")
    view = seat_view(deal, 1)
    values = lead_values(view)
    assert max(values, key=values.get) in (parse_card("9D"), parse_card("JH"))
    assert values[parse_card("JH")] > values[parse_card("3C")] + 3  # J, Q, K of trumps, matrimony, intrigue
    assert values[parse_card("9D")] > values[parse_card("3C")] + 5  # the pope's six counters
    # With a big intrigue and matrimony pool the honours run wins over the Pope.
    rich = _fixed_deal(hand, turnup="2H", board={"matrimony": 20, "intrigue": 20})
    assert make_player("pool_hunter").act(seat_view(rich, 1)) == parse_card("JH")


def test_pool_hunter_avoids_running_a_sequence_into_an_opponents_honour_when_it_can() -> None:
    deal = _fixed_deal(["TH", "4C", "5S", "7S", "9S", "JS", "2D", "3D", "6H", "KC"], turnup="2H")
    view = seat_view(deal, 1)
    values = lead_values(view)
    # 6♥ leads up hearts (trumps) towards honours others hold; 4♣ risks nothing on the board.
    assert values[parse_card("4C")] > values[parse_card("6H")]


# ----------------------------------------------------------------- worlds for search
def _midgame(seed: int, rules, players: int) -> tuple[Deal, int]:
    rng = np.random.default_rng(seed)
    deal = Deal.new(rules, players, seed % players, rng, board=[seed % 4] * 8,
                    balances=[5 * k for k in range(players)])
    for _ in range(int(rng.integers(0, 20))):
        if deal.done:
            break
        legal = deal.legal_actions()
        deal.play(legal[int(rng.integers(len(legal)))])
    return deal, int(rng.integers(1 << 30))


def test_world_deal_fills_every_slot_of_the_engine_deal() -> None:
    deal, _ = _midgame(1, MODERN, 4)
    seat = max(deal.to_act, 0)
    view = seat_view(deal, seat)
    world = world_deal(view, [deal.hands[(seat + k) % 4] for k in range(4)], deal.dead_mask)
    missing = [name for name in Deal.__slots__ if not hasattr(world, name)]
    assert not missing, f"worlds.py does not set Deal slot(s) {missing}: update _build"


@pytest.mark.parametrize("rules", [MODERN, VICTORIAN, CUSTOM], ids=["modern", "victorian", "custom"])
def test_a_world_built_from_the_true_hidden_cards_plays_on_exactly_like_the_real_deal(rules) -> None:
    checked = 0
    for seed in range(60):
        players = 3 + seed % 6
        deal, play_seed = _midgame(seed, rules, players)
        if deal.done:
            continue
        seat = deal.to_act
        view = seat_view(deal, seat)
        world = world_deal(view, [deal.hands[(seat + k) % players] for k in range(players)], deal.dead_mask)
        real = deal.copy()
        before = list(real.balances)
        rng = np.random.default_rng(play_seed)
        while not real.done:
            assert world.to_act == (real.to_act - seat) % players
            assert world.legal_actions() == real.legal_actions()
            assert world.forced == real.forced
            legal = real.legal_actions()
            card = legal[int(rng.integers(len(legal)))]
            real.play(card)
            world.play(card)
        assert world.done
        assert world.winner == (real.winner - seat) % players
        assert world.board == real.board
        assert world.delta == [real.balances[(seat + k) % players] - before[(seat + k) % players]
                               for k in range(players)]
        assert [a[2:] for a in world.awards] == [a[2:] for a in real.awards[len(deal.awards):]]
        checked += 1
    assert checked > 40


def test_sampled_worlds_agree_with_everything_the_seat_has_seen() -> None:
    for seed in range(40):
        rules = (MODERN, VICTORIAN, CUSTOM)[seed % 3]
        players = 3 + seed % 6
        deal, _ = _midgame(seed, rules, players)
        if deal.done:
            continue
        seat = deal.to_act
        view = seat_view(deal, seat)
        sampler = WorldSampler(view)
        rng = np.random.default_rng(seed)
        placements = set()
        for _ in range(5):
            world = sampler.sample(rng)
            assert world.hands[0] == view.hand
            assert world.hand_sizes == list(view.hand_sizes)
            assert [h.bit_count() for h in world.hands] == list(view.hand_sizes)
            assert world.dead_mask & view.known_dead == view.known_dead
            if view.dead_hand is not None:
                assert world.dead_mask == view.dead_hand
            assert world.turnup == deal.turnup and world.dead[-1] == deal.turnup
            assert len(world.dead) == len(deal.dead)
            everything = world.dead_mask | world.played_mask
            for h in world.hands:
                assert not everything & h
                everything |= h
            assert everything == PACK_MASK
            for card in cards_of(view.played):
                assert world.owner[card] == PLAYED
            for card in cards_of(world.dead_mask):
                assert world.owner[card] == DEAD
            assert world.legal_actions() == list(view.legal)
            placements.add(tuple(world.hands))
            rollout(world)
            assert world.done and sum(world.delta) + sum(world.board) - sum(world.board_before) == 0
        if view.unseen and view.dead_hand is None:
            assert len(placements) > 1


def test_greedy_rollout_lead_keeps_the_lead_with_a_stop_run() -> None:
    # The dead hand here is clubs only, so Q♠ K♠ is the one run that ends in a stop.
    deal = _fixed_deal(["QS", "KS", "AH", "9D", "3H", "4H", "6H", "8H", "TD", "JD"])
    assert greedy_lead(deal) == parse_card("QS")
    deal.play("QS")
    deal.play("KS")
    assert greedy_lead(deal) == POPE  # then the Pope


def test_pimc_evaluates_every_candidate_over_the_same_worlds() -> None:
    deal = _fixed_deal(["QS", "KS", "AH", "9D", "3C", "4C", "6H", "7H", "TD", "JD"])
    view = seat_view(deal, 1)
    player = PimcPlayer(seed=3, samples=12)
    totals = player.evaluate(view, list(view.legal))
    assert len(totals) == len(view.legal)
    player.reset(3)
    assert player.evaluate(view, list(view.legal)) == totals
    # Leading the Pope wins its 6 counters at once, so it can never look worse than a lead that loses it.
    assert totals[view.legal.index(POPE)] > min(totals)


# ----------------------------------------------------------------- the factory
def test_make_player_names_parameters_and_errors(tmp_path) -> None:
    assert parse_spec("pimc:samples=32,rollout=random") == ("pimc", {"samples": 32, "rollout": "random"})
    p = make_player("pimc:samples=64", seed=1)
    assert isinstance(p, PimcPlayer) and p.samples == 64 and p.name == "pimc:samples=64"
    assert make_player("pimc").name == "pimc" and make_player("pimc:samples=32").name == "pimc"
    for name in SCRIPTED:
        assert make_player(name).name == name
    with pytest.raises(UnknownPlayerError, match="unknown player 'foo'.*random"):
        make_player("foo")
    with pytest.raises(UnknownPlayerError, match="no parameter.*sample"):
        make_player("pimc:sample=3")
    with pytest.raises(UnknownPlayerError, match="takes no parameters"):
        make_player("lowest:x=1")
    with pytest.raises(UnknownPlayerError, match="not key=value"):
        make_player("pimc:32")
    for samples in ("0", "65537", "99999999999"):  # a huge count would allocate its worlds at the first decision
        with pytest.raises(UnknownPlayerError, match="samples must be an integer from 1 to 65,536"):
            make_player(f"pimc:samples={samples}")
    with pytest.raises(UnknownPlayerError, match="no saved model"):
        make_player(str(tmp_path / "missing.zip"))
    assert issubclass(UnknownPlayerError, PopeJoanError)


# ----------------------------------------------------------------- strength
@pytest.mark.slow
@pytest.mark.parametrize("spec,preset,deals", [
    ("stops_first", "modern", 200),
    ("stops_first", "victorian", 200),
    ("pool_hunter", "modern", 200),
    ("pimc:samples=8", "modern", 150),
    ("pimc:samples=8", "victorian", 60),
])
def test_good_players_beat_random_with_significance(spec: str, preset: str, deals: int) -> None:
    result = run_duplicate([spec, "random"], deals=deals, seed=2024, rules=preset)
    h2h = result.head_to_head()[spec]["random"]
    assert result.beats(spec, "random"), h2h
    assert h2h["mean"] - h2h["ci95"] > 0.5


def test_stops_first_knows_a_run_ends_where_nobody_can_hold_the_next_card() -> None:
    """v2 inference changes a choice: the 5♠ is unseen, but both other seats led a higher spade under
    lowest_of_suit, so nobody holds it and the 3♠ 4♠ run is known to end in a stop."""
    from conftest import make_deal
    from popejoan_env.inference import must_be_dead
    from popejoan_env.players.stops import gone

    deal = make_deal(["3S 4S 4C AD", "7S QH 2C 9C", "KH 6S 3C 5D"], turnup="QD", dealer=0)
    for card in ("7S", "QH", "6S", "3C"):    # 7♠ stops (8♠ dead); Q♥ K♥; 6♠ stops (7♠ played); 3♣ 4♣
        deal.play(card)
        deal.advance(lone_leads=False)
    assert deal.to_act == 0
    view = seat_view(deal, 0)
    five = parse_card("5S")
    assert (must_be_dead(view) >> five) & 1 and (gone(view) >> five) & 1
    assert StopsFirstPlayer().act(view) == parse_card("3S")     # without the inference: the Ace (an orphan)
