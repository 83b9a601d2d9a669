"""The OpenSpiel adapter (``popejoan_env.envs.openspiel_game``): OpenSpiel's own checks, equality with the
engine, the playthrough regression files, NashConv two ways, and the OpenSpiel players."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

import popejoan_env.envs.openspiel_game as og  # noqa: E402  (registers the games)
from popejoan_env import Deal  # noqa: E402
from popejoan_env.cards import PACK  # noqa: E402
from popejoan_env.errors import PopeJoanError, RulesError  # noqa: E402
from popejoan_env.evaluate.exploitability import nash_conv, uniform_policy  # noqa: E402
from popejoan_env.observation import encode  # noqa: E402
from popejoan_env.players import UnknownPlayerError, make_player  # noqa: E402
from popejoan_env.players.openspiel_players import PopejoanPolicy  # noqa: E402
from popejoan_env.record import deal_record, write_records  # noqa: E402
from popejoan_env.render import describe  # noqa: E402
from popejoan_env.rules import Rules  # noqa: E402
from popejoan_env.seat_view import seat_view  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
PLAYTHROUGHS = ["openspiel_pope_joan_3p.playthrough.txt", "openspiel_pope_joan_small_kd.playthrough.txt"]


def play_random(state: object, rng: np.random.Generator) -> object:
    """Play a state to its end, every chance outcome (they are equally likely) and every legal card uniformly."""
    while not state.is_terminal():
        actions = [c for c, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions()
        state.apply_action(actions[int(rng.integers(len(actions)))])
    return state


def test_importing_the_adapter_without_openspiel_names_the_extra() -> None:
    code = ("import sys; sys.modules['pyspiel'] = None\n"
            "try:\n    import popejoan_env.envs.openspiel_game\n"
            "except Exception as err:\n    print(type(err).__name__, err)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == ("MissingDependencyError the OpenSpiel adapter needs OpenSpiel: "
                           "pip install 'popejoan[openspiel]'")


@pytest.mark.parametrize("preset", ["modern", "victorian"])
@pytest.mark.parametrize("players", range(3, 9))
def test_openspiel_random_sim_test_passes(players: int, preset: str) -> None:
    game = pyspiel.load_game(og.GAME_NAME, {"players": players, "preset": preset})
    pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)


@pytest.mark.parametrize("params", [{}, {"preset": "victorian", "deal": "equal"}, {"deal": "all_round"}])
def test_openspiel_random_sim_test_passes_on_the_small_game(params: dict[str, str]) -> None:
    pyspiel.random_sim_test(pyspiel.load_game(og.SMALL_GAME_NAME, {**params, "turnup": "QS"}), num_sims=5,
                            serialize=False, verbose=False)


def test_game_parameters_are_the_preset_then_each_option_given() -> None:
    game = pyspiel.load_game(og.GAME_NAME, {"players": 5, "preset": "victorian", "lead": "lowest_of_suit",
                                            "ace_high": "true", "dressing": "6/2/2/1/1/1/1/2"})
    assert game.rules == Rules.preset("victorian").replace(lead="lowest_of_suit", ace_high=True,
                                                           dressing=(6, 2, 2, 1, 1, 1, 1, 2))
    assert game.num_players() == 5
    with pytest.raises(RulesError, match="game parameter ace_high must be true or false, got 'maybe'"):
        og.PopeJoanGame({"ace_high": "maybe"})
    with pytest.raises(RulesError, match="dressing must be 8 counts separated by '/'"):
        og.PopeJoanGame({"dressing": "6,2"})
    with pytest.raises(RulesError, match="unknown game parameter"):
        og.PopeJoanGame({"seats": 4})
    with pytest.raises(RulesError, match="turnup 'AS' is not a card of the small pack"):
        og.SmallPopeJoanGame({"turnup": "AS"})
    with pytest.raises(RulesError, match="pack=small is dealt to 3 players"):
        og.SmallPopeJoanGame({"players": 4})


def test_the_deal_is_one_chance_node_per_card_each_remaining_card_equally_likely() -> None:
    game = pyspiel.load_game(og.GAME_NAME, {"players": 4, "dealer": 2})
    state = game.new_initial_state()
    rng = np.random.default_rng(0)
    for k in range(len(PACK)):
        assert state.is_chance_node()
        outcomes = state.chance_outcomes()
        assert len(outcomes) == len(PACK) - k and all(p == pytest.approx(1 / (len(PACK) - k)) for _, p in outcomes)
        state.apply_action(int(rng.choice([c for c, _ in outcomes])))
    assert state.deal is not None and state.deal.turnup == state.dealt[-1]  # the turn-up is dealt last
    assert state.deal.dealer == 2 and state.deal.hand_sizes == [10, 10, 10, 10]


def test_returns_tensors_and_strings_come_from_the_engine_encoder_and_renderer() -> None:
    game = pyspiel.load_game(og.GAME_NAME, {"players": 4})
    rng = np.random.default_rng(1)
    state = game.new_initial_state()
    while state.is_chance_node():
        state.apply_action(int(rng.choice([c for c, _ in state.chance_outcomes()])))
    while not state.is_terminal():
        seat = state.current_player()
        assert np.array_equal(np.asarray(state.observation_tensor(seat), np.float32), encode(state.deal, seat))
        assert np.array_equal(state.information_state_tensor(seat), state.observation_tensor(seat))
        assert state.observation_string(seat) == describe(seat_view(state.deal, seat))
        assert state.information_state_string(seat).startswith(state.observation_string(seat) + "\nHistory: ")
        state.apply_action(int(rng.choice(state.legal_actions())))
    assert state.returns() == [float(x) for x in state.deal.delta]


def test_resampled_state_looks_the_same_to_the_seat_and_deals_the_rest_afresh() -> None:
    game = pyspiel.load_game(og.GAME_NAME, {"players": 5})
    rng = np.random.default_rng(6)
    state = game.new_initial_state()
    while state.is_chance_node() or len(state.deal.plays) < 10:
        if state.is_chance_node():
            state.apply_action(int(rng.choice([c for c, _ in state.chance_outcomes()])))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    seat = state.current_player()
    draws = iter(np.random.default_rng(9).random(100).tolist())
    # Here a lead that was another seat's choice is its only legal card in most worlds (no decision there).
    worlds = [state.resample_from_infostate(seat, lambda: next(draws)) for _ in range(40)]
    assert any(len(w.history()) != len(state.history()) for w in worlds)
    for world in worlds:
        assert world.information_state_string(seat) == state.information_state_string(seat)
        assert world.legal_actions() == state.legal_actions()
    assert len({tuple(w.deal.hands) for w in worlds}) > 1


def test_uniform_nash_conv_two_ways_openspiel_and_the_engine() -> None:
    from open_spiel.python import policy
    from open_spiel.python.algorithms import exploitability

    game = pyspiel.load_game(og.SMALL_GAME_NAME, {"turnup": "KD"})
    theirs = exploitability.nash_conv(game, policy.UniformRandomPolicy(game), return_only_nash_conv=False)
    ours = nash_conv(Rules(pack="small"), uniform_policy, turnup="KD")
    assert theirs.nash_conv == pytest.approx(3643 / 1680, abs=1e-9)
    assert ours.nash_conv == pytest.approx(3643 / 1680, abs=1e-9)
    assert list(theirs.player_improvements) == pytest.approx(list(ours.improvements), abs=1e-9)


def test_a_popejoan_policy_is_an_openspiel_policy() -> None:
    game = pyspiel.load_game(og.SMALL_GAME_NAME, {"turnup": "KD"})
    for index in range(len(game.deals)):  # the first deal with a decision
        state = game.new_initial_state()
        state.apply_action(index)
        if not state.is_terminal():
            break
    probs = PopejoanPolicy(game, uniform_policy).action_probabilities(state)
    assert sorted(probs) == state.legal_actions() and sum(probs.values()) == pytest.approx(1.0)


@pytest.mark.parametrize("name", PLAYTHROUGHS)
def test_playthrough_replays_exactly(name: str) -> None:
    from absl import flags
    from open_spiel.python.algorithms import generate_playthrough

    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()  # the replay reads one of its absl flags, at its default
    original, regenerated = generate_playthrough.replay(str(ROOT / "tests" / "data" / name))
    assert original == regenerated


def test_openspiel_players_play_a_deal_and_refuse_bad_specs() -> None:
    player = make_player("openspiel_ismcts:simulations=10", seed=1)
    deal = Deal.new("modern", 4, 1, np.random.default_rng(3))
    while not deal.done:
        deal.play(player.act(seat_view(deal, deal.to_act)))
    assert sum(deal.delta) + sum(deal.board) == sum(deal.board_before)
    with pytest.raises(UnknownPlayerError, match="simulations >= 1"):
        make_player("openspiel_ismcts:simulations=0")
    with pytest.raises(UnknownPlayerError, match="needs path="):
        make_player("openspiel_nfsp")
    with pytest.raises(UnknownPlayerError, match="cannot read"):
        make_player("openspiel_nfsp:path=/nonexistent/nfsp.pt")
    small = Deal.new(Rules(pack="small"), 3, 0, np.random.default_rng(0))
    small.advance()
    if not small.done:
        with pytest.raises(PopeJoanError, match="full pack"):
            player.act(seat_view(small, small.to_act))


@pytest.mark.slow
def test_ten_thousand_deals_played_through_openspiel_verify(tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(2026)
    records = []
    games = [pyspiel.load_game(og.GAME_NAME, {"players": n, "preset": p, "dealer": d})
             for n in range(3, 9) for p in ("modern", "victorian") for d in (0, n - 1)]
    games.append(pyspiel.load_game(og.SMALL_GAME_NAME))
    for i in range(10_000):
        state = play_random(games[i % len(games)].new_initial_state(), rng)
        assert state.returns() == [float(x) for x in state.deal.delta]
        records.append(deal_record(state.deal))
    path = tmp_path / "openspiel_deals.jsonl"
    write_records(path, records)
    done = subprocess.run([sys.executable, "-m", "popejoan_env", "verify", str(path)], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "10,000" in done.stdout or "10000" in done.stdout
