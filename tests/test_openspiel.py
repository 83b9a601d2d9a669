"""The OpenSpiel adapter (``popejoan_env.envs.openspiel_game``): OpenSpiel's own checks, equality with the
engine, the playthrough regression files, NashConv two ways, and the OpenSpiel players."""

from __future__ import annotations

import functools
import os
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
from popejoan_env.nets.model_file import ModelFileError  # noqa: E402
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
                                            "ace_high": True, "dressing": "6/2/2/1/1/1/1/2"})
    assert game.rules == Rules.preset("victorian").replace(lead="lowest_of_suit", ace_high=True,
                                                           dressing=(6, 2, 2, 1, 1, 1, 1, 2))
    assert game.num_players() == 5
    with pytest.raises(RulesError, match=r"game parameter ace_high must be true or false \(a bool\), got 'maybe'"):
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


def test_the_nfsp_benchmark_deals_follow_its_seed(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # was: Environment(game, seed=...) took the seed as a game setting and dropped it: every run dealt other deals
    import importlib.util

    pytest.importorskip("torch")
    from open_spiel.python import rl_environment

    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "bench_openspiel.py"
    spec = importlib.util.spec_from_file_location("bench_openspiel_seed", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    deals: list[tuple[int, ...]] = []
    reset = rl_environment.Environment.reset

    def recording_reset(self: rl_environment.Environment) -> object:
        step = reset(self)
        deals.append(tuple(self.get_state.history()))  # the cards dealt, then any forced cards
        return step

    monkeypatch.setattr(rl_environment.Environment, "reset", recording_reset)
    for run in range(2):
        out = str(tmp_path / f"{run}.pt")
        bench.main(["train-nfsp", "--episodes", "4", "--hidden", "8", "--seed", "3", "--out", out])
    assert len(deals) == 8 and deals[:4] == deals[4:]


@pytest.mark.parametrize(("flags", "says"), [
    # a checkpoint openspiel_nfsp refuses (was: trained for --minutes, then saved: "87,715,881 bytes; at most ...")
    (["--hidden", "4097"], "MAX_NFSP_WIDTH"),
    (["--hidden", "3000,3000"], "MAX_NFSP_BYTES"),
    # no training at all (was: "NFSP: 0 episodes ... saved", an untrained checkpoint, exit 0)
    (["--minutes", "nan"], "--minutes"),
    (["--minutes", "-1"], "--minutes"),
    # refused only after the training (was: a traceback then), or before it as a traceback
    (["--out", "{tmp}"], "it is a directory"),
    (["--hidden", ""], "--hidden"),
    (["--players", "9"], "--players"),
])
def test_the_nfsp_benchmark_refuses_flags_before_training(tmp_path: pathlib.Path, flags: list[str],
                                                          says: str) -> None:
    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "bench_openspiel.py"
    argv = [sys.executable, str(path), "train-nfsp", "--episodes", "1", "--out", str(tmp_path / "n.pt"),
            *(f.replace("{tmp}", str(tmp_path)) for f in flags)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and says in done.stderr, done.stderr
    assert "saved" not in done.stdout and os.listdir(tmp_path) == []


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
    with pytest.raises(UnknownPlayerError, match=r"simulations must be an integer 1\.\.65,536, got 0"):
        make_player("openspiel_ismcts:simulations=0")
    with pytest.raises(UnknownPlayerError, match="needs path="):
        make_player("openspiel_nfsp")
    with pytest.raises(ModelFileError, match="cannot read"):
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


# ----------------------------------------------------------------- game parameters and copies
def test_the_load_example_on_the_openspiel_page_runs() -> None:
    from test_docs import DOCS, run_block

    assert run_block("openspiel-load", DOCS / "openspiel.md").startswith("python_pope_joan(ace_high=True,")


def test_typed_parameters_default_to_the_value_both_presets_share() -> None:
    # a bool or int game parameter has one default, so it must be every preset's: a preset given alone keeps it
    for option in og._TYPED:
        values = {getattr(Rules.preset(p), option) for p in ("modern", "victorian")}
        assert values == {og._FULL_TYPE.parameter_specification[option]}, option
    assert set(og._TYPED) == {"ace_high", "dealer_sees_dead_hand", "pope_excused", "allow_credit", "start_counters"}


FULL_PARAMETERS = {"players": 5, "dealer": 2, "preset": "victorian", "lead": "any", "deal": "all_round",
                   "pope_turnup": "ends_deal", "pair_split": "halves", "ace_high": True, "dealer_sees_dead_hand": True,
                   "pope_excused": False, "dressing": "6/2/2/1/1/1/1/2", "start_counters": 40, "allow_credit": False}
"""A value other than the default for every parameter of the full game, given as docs/openspiel.md shows."""
SMALL_PARAMETERS = {**{k: v for k, v in FULL_PARAMETERS.items() if k != "players"}, "dealer": 1, "turnup": "QS"}
ROUND_TRIPS = ([(og.GAME_NAME, {k: v}) for k, v in FULL_PARAMETERS.items()]
               + [(og.SMALL_GAME_NAME, {k: v, **({"deal": "equal"} if k == "preset" else {})})  # no fixed stock
                  for k, v in SMALL_PARAMETERS.items()]
               + [(og.GAME_NAME, FULL_PARAMETERS), (og.SMALL_GAME_NAME, SMALL_PARAMETERS)])


def _part_played(game: object, seed: int) -> object:
    """A state of ``game`` dealt and a few decisions in (or its end, if the deal is shorter)."""
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    while state.is_chance_node() or (not state.is_terminal() and len(state.decisions) < 2):
        actions = [c for c, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions()
        state.apply_action(actions[int(rng.integers(len(actions)))])
    return state


def _same_state(a: object, b: object) -> None:
    assert a.history() == b.history() and str(a) == str(b) and a.is_terminal() == b.is_terminal()
    assert a.returns() == b.returns() and a.legal_actions() == b.legal_actions()
    if not a.is_terminal():
        for seat in range(a.num_players()):
            assert a.information_state_string(seat) == b.information_state_string(seat)
            assert a.observation_tensor(seat) == b.observation_tensor(seat)


@pytest.mark.parametrize("name, params", ROUND_TRIPS, ids=lambda x: str(x)[:60])
def test_every_game_parameter_round_trips(name: str, params: dict[str, object]) -> None:
    import pickle

    game = pyspiel.load_game(name, params)
    again = pyspiel.load_game(str(game))
    assert type(again) is type(game) and again.rules == game.rules and str(again) == str(game)
    assert (again.num_players(), again.dealer) == (game.num_players(), game.dealer)
    copied = pickle.loads(pickle.dumps(game))
    assert type(copied) is type(game) and copied.rules == game.rules and str(copied) == str(game)
    state = _part_played(game, 4)
    game2, state2 = pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(game, state))
    assert game2.rules == game.rules and str(game2) == str(game)
    state3 = pickle.loads(pickle.dumps(state))
    for other in (state2, state3):
        _same_state(state, other)
        assert other.game.rules == game.rules
        if not state.is_terminal():  # both play on alike
            action = state.legal_actions()[-1]
            a, b = state.child(action), other.child(action)
            _same_state(a, b)
    pyspiel.random_sim_test(game, num_sims=2, serialize=True, verbose=False)


MISUSED_PARAMETERS = [
    (og.GAME_NAME, {"ace_high": "true"}, "Wrong type for parameter ace_high"),  # OpenSpiel's own type check
    (og.GAME_NAME, {"start_counters": "٤٨"}, "Wrong type for parameter start_counters"),
    (og.GAME_NAME, {"dressing": "６/2/2/1/1/1/1/1"}, "in the digits 0-9 alone"),  # int() would read these three
    (og.GAME_NAME, {"dressing": "6/2/2/1/1/1/1/1_0"}, "in the digits 0-9 alone"),
    (og.GAME_NAME, {"dressing": "6/2/2/+1/1/1/1/1"}, "in the digits 0-9 alone"),
    (og.GAME_NAME, {"dressing": "6/2/2/1/1/1/1/" + "9" * 5000}, "at most 100,000, got 5,000 digits"),
    (og.GAME_NAME, {"dressing": "6/2"}, "dressing must be 8 counts"),
    (og.GAME_NAME, {"dealer": 4}, "dealer must be a seat 0..3"),
    (og.GAME_NAME, {"players": 9}, "players must be an integer from 3 to 8"),
    (og.GAME_NAME, {"preset": "georgian"}, "georgian"),
    (og.GAME_NAME, {"lead": "sideways"}, "sideways"),
    (og.SMALL_GAME_NAME, {"turnup": "9ſ"}, "unknown card"),  # str.upper() made it 9S
    (og.SMALL_GAME_NAME, {"turnup": "AS"}, "not a card of the small pack"),
    (og.SMALL_GAME_NAME, {"players": 4}, "pack=small is dealt to 3 players"),
]


@pytest.mark.parametrize("name, params, message", MISUSED_PARAMETERS, ids=lambda x: str(x)[:40])
def test_a_misused_parameter_is_a_spiel_error_naming_it(name: str, params: dict[str, object], message: str) -> None:
    with pytest.raises(pyspiel.SpielError, match=message) as caught:
        pyspiel.load_game(name, params)
    if "Wrong type" not in message:  # ours: a GameParameterError, so a RulesError and a PopeJoanError too
        assert isinstance(caught.value, og.GameParameterError) and isinstance(caught.value, RulesError)
    with pytest.raises(pyspiel.SpielError):
        pyspiel.load_game(f"{name}(start_counters=٤٨)")  # a game string's non-ASCII digits are text, not an int


def _decision(name: str, seed: int = 0) -> object:
    """A state of the game at a seat's decision (of at least two cards)."""
    game = pyspiel.load_game(name)
    rng = np.random.default_rng(seed)
    while True:
        state = game.new_initial_state()
        while state.is_chance_node():
            state.apply_action(int(rng.choice([c for c, _ in state.chance_outcomes()])))
        if not state.stop:
            return state


def _over(name: str) -> object:
    return play_random(_decision(name), np.random.default_rng(1))


MISUSE = {
    "a deal index past the last": (lambda: pyspiel.load_game(og.SMALL_GAME_NAME).new_initial_state(),
                                   lambda s: s.apply_action(16_800), "not a deal index 0..16799"),
    "a negative deal index": (lambda: pyspiel.load_game(og.SMALL_GAME_NAME).new_initial_state(),
                              lambda s: s.apply_action(-2), "not a deal index"),
    "a huge chance outcome": (lambda: pyspiel.load_game(og.GAME_NAME).new_initial_state(),
                              lambda s: s.apply_action(2**40), "not a card left to deal"),
    "the 8D dealt (not in the pack)": (lambda: pyspiel.load_game(og.GAME_NAME).new_initial_state(),
                                       lambda s: s.apply_action(20), "not a card left to deal"),
    "a card the seat does not hold": (lambda: _decision(og.GAME_NAME),
                                      lambda s: s.apply_action(next(c for c in PACK if not (s.deal.hands[
                                          s.current_player()] >> c) & 1)), "cannot play"),
    "a card id past 51": (lambda: _decision(og.SMALL_GAME_NAME), lambda s: s.apply_action(99), "cannot play"),
    "a card after the deal is over": (lambda: _over(og.GAME_NAME), lambda s: s.apply_action(0), "over"),
    "resampling for a seat out of range": (lambda: _decision(og.GAME_NAME),
                                           lambda s: s.resample_from_infostate(9, lambda: 0.5), "not a seat 0..3"),
    "resampling for the chance player": (lambda: _decision(og.SMALL_GAME_NAME),
                                         lambda s: s.resample_from_infostate(-1, lambda: 0.5), "not a seat 0..2"),
    "a sampler giving 1.0": (lambda: _decision(og.GAME_NAME), lambda s: s.resample_from_infostate(
        s.current_player(), lambda: 1.0), r"not a number in \[0, 1\)"),
    "a sampler giving NaN": (lambda: _decision(og.GAME_NAME), lambda s: s.resample_from_infostate(
        s.current_player(), lambda: float("nan")), r"not a number in \[0, 1\)"),
    "a sampler giving text": (lambda: _decision(og.SMALL_GAME_NAME), lambda s: s.resample_from_infostate(
        s.current_player(), lambda: "0.5"), r"not a number in \[0, 1\)"),
    "resampling while dealing": (lambda: pyspiel.load_game(og.GAME_NAME).new_initial_state(),
                                 lambda s: s.resample_from_infostate(0, lambda: 0.5), "needs a dealt state"),
    "a chance outcome's name past the last deal": (
        lambda: pyspiel.load_game(og.SMALL_GAME_NAME).new_initial_state(),
        lambda s: s.action_to_string(pyspiel.PlayerId.CHANCE, 16_800), "not a deal index"),
    "a card's name for a seat out of range": (lambda: _decision(og.GAME_NAME),
                                              lambda s: s.action_to_string(9, 3), "not a seat 0..3"),
    "a card's name past 51": (lambda: _decision(og.GAME_NAME), lambda s: s.action_to_string(0, 99), "not a card id"),
    "chance outcomes at a decision": (lambda: _decision(og.GAME_NAME), lambda s: s.chance_outcomes(),
                                      "not a chance node"),
    "a tensor for a seat out of range": (lambda: _decision(og.GAME_NAME), lambda s: s.observation_tensor(9),
                                         "player < num_players"),  # OpenSpiel's own check
    "the observer for a seat out of range": (lambda: _decision(og.SMALL_GAME_NAME), lambda s: s.get_game(
        ).make_py_observer().set_from(s, 3), "not a seat 0..2"),
    "observer parameters": (lambda: _decision(og.SMALL_GAME_NAME),
                            lambda s: s.get_game().make_py_observer(None, {"x": 1}), "takes no parameters"),
}


@pytest.mark.parametrize("what", sorted(MISUSE))
def test_misuse_is_a_spiel_error_and_changes_nothing(what: str) -> None:
    make, call, message = MISUSE[what]
    state = make()
    before = pyspiel.serialize_game_and_state(state.get_game(), state)
    with pytest.raises(pyspiel.SpielError, match=message) as caught:
        call(state)
    assert not isinstance(caught.value, (IndexError, KeyError, TypeError))
    if "num_players" not in message:
        assert isinstance(caught.value, PopeJoanError)
    assert pyspiel.serialize_game_and_state(state.get_game(), state) == before


# ----------------------------------------------------------------- a deal that gives nobody a choice
def test_every_small_deal_without_a_decision_stops_once_at_eldests_lone_lead() -> None:
    game = pyspiel.load_game(og.SMALL_GAME_NAME, {"dealer": 2})
    stops = 0
    for index in range(len(game.deals)):
        state = game.new_initial_state()
        state.apply_action(index)
        *hands, dead = game.deals[index]
        engine = Deal.from_cards(hands, dead, 2, game.rules)
        assert state.stop == (not engine.copy().advance())
        if not state.stop:
            continue
        stops += 1
        assert state.current_player() == engine.to_act == 0 and not state.is_terminal()  # eldest of dealer 2
        assert state.legal_actions() == engine.legal_actions() and len(state.legal_actions()) == 1
        assert state.returns() == [0.0, 0.0, 0.0]
        state.apply_action(state.legal_actions()[0])
        engine.advance()
        assert state.is_terminal() and state.returns() == [float(x) for x in engine.delta]
        assert state.decisions == [engine.plays[0][1]]
    assert stops == 2800


def test_a_deal_ended_by_its_turnup_stops_once_at_the_dealer_with_the_turnup() -> None:
    game = pyspiel.load_game(og.SMALL_GAME_NAME, {"preset": "victorian", "deal": "equal", "turnup": "9D",
                                                  "dealer": 1})
    for index in (0, 777, len(game.deals) - 1):
        state = game.new_initial_state()
        state.apply_action(index)
        assert state.stop and state.deal.done and state.current_player() == 1
        assert state.legal_actions() == [21] and state.action_to_string(1, 21) == "9D turned up: the deal ends"
        seen = state.information_state_string(1)
        world = state.resample_from_infostate(1, lambda: 0.25)
        assert world.stop and world.information_state_string(1) == seen
        state.apply_action(21)
        assert state.is_terminal() and state.returns() == [float(x) for x in state.deal.delta]
        assert state.deal.plays == []
    # Nobody ever chooses: NashConv is 0 both ways (OpenSpiel's walk passes the dealer's one action)
    from open_spiel.python import policy
    from open_spiel.python.algorithms import exploitability

    assert exploitability.nash_conv(game, policy.UniformRandomPolicy(game)) == pytest.approx(0.0, abs=1e-12)
    assert nash_conv(game.rules, uniform_policy, dealer=1, turnup="9D").nash_conv == pytest.approx(0.0, abs=1e-12)


def test_a_full_deal_without_a_decision_stops_once_and_resamples_to_one() -> None:
    rng = np.random.default_rng(11)
    while True:  # about 1 deal in 600 at 8 seats gives nobody a choice
        engine = Deal.new("modern", 8, 3, rng)
        if not engine.copy().advance():
            break
    game = pyspiel.load_game(og.GAME_NAME, {"players": 8, "dealer": 3})
    state = game.new_initial_state()
    for outcome in state._chance_sequence(list(engine.hands), list(engine.dead)):
        state.apply_action(outcome)
    assert state.stop and state.current_player() == 4 and state.legal_actions() == engine.legal_actions()
    draws = iter(np.random.default_rng(2).random(50).tolist())
    for _ in range(5):
        world = state.resample_from_infostate(4, lambda: next(draws))
        assert world.stop and world.information_state_string(4) == state.information_state_string(4)
    assert PopejoanPolicy(game, uniform_policy).action_probabilities(state) == {state.legal_actions()[0]: 1.0}
    state.apply_action(state.legal_actions()[0])
    engine.advance()
    assert state.is_terminal() and state.returns() == [float(x) for x in engine.delta]


@pytest.mark.parametrize("sees", [False, True])
def test_a_full_deal_ended_by_its_turnup_resamples_only_what_the_seat_did_not_see(sees: bool) -> None:
    game = pyspiel.load_game(og.GAME_NAME, {"preset": "victorian", "dealer_sees_dead_hand": sees, "dealer": 2})
    state = game.new_initial_state()
    for card in [c for c in PACK if c != 21] + [21]:  # the 9D dealt last: the turn-up, which ends the deal (R5)
        state.apply_action(card)
    assert state.stop and state.current_player() == 2 and state.legal_actions() == [21]
    draws = iter(np.random.default_rng(5).random(20).tolist())
    worlds = [state.resample_from_infostate(2, lambda: next(draws)) for _ in range(20)]
    for world in worlds:
        assert world.stop and world.information_state_string(2) == state.information_state_string(2)
        assert world.deal.hands[2] == state.deal.hands[2] and world.deal.turnup == 21
        assert (world.deal.dead == state.deal.dead) == sees or not sees
    assert len({tuple(w.deal.hands) for w in worlds}) > 1


# ----------------------------------------------------------------- the OpenSpiel players' bounds
@pytest.mark.parametrize("spec, message", [
    ("openspiel_ismcts:simulations=0", "simulations must be an integer 1..65,536, got 0"),
    ("openspiel_ismcts:simulations=65537", "got 65537"),
    ("openspiel_ismcts:simulations=1.5", "got 1.5"),
    ("openspiel_ismcts:uct_c=0", "uct_c must be a finite number above 0 and at most 1,000,000, got 0"),
    ("openspiel_ismcts:uct_c=-3", "got -3"),
    ("openspiel_ismcts:uct_c=nan", "got nan"),
    ("openspiel_ismcts:uct_c=inf", "got inf"),
    ("openspiel_ismcts:uct_c=1e7", "got 10000000.0"),
])
def test_ismcts_parameters_are_bounded_when_the_player_is_made(spec: str, message: str) -> None:
    with pytest.raises(UnknownPlayerError, match=message.replace(".", r"\.").replace("(", r"\(")):
        make_player(spec)


def test_ismcts_refuses_a_bool_and_names_the_missing_adapter_when_made() -> None:
    from popejoan_env.players.openspiel_players import IsmctsPlayer

    with pytest.raises(UnknownPlayerError, match="simulations must be an integer"):
        IsmctsPlayer(simulations=True)
    with pytest.raises(UnknownPlayerError, match="uct_c must be a finite number"):
        IsmctsPlayer(uct_c=True)
    code = ("import pyspiel\nfrom popejoan_env.players import make_player\n"
            "try:\n    make_player('openspiel_ismcts')\nexcept Exception as err:\n    print(type(err).__name__, err)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.startswith("UnknownPlayerError the OpenSpiel game python_pope_joan is not registered: import "
                          "popejoan_env.envs.openspiel_game")


def _nfsp_networks(hidden: list[int], seats: int = 4) -> list[object]:
    torch = pytest.importorskip("torch", reason="openspiel_nfsp needs torch: pip install 'popejoan[train]'")
    from open_spiel.python.pytorch import dqn

    state = torch.random.get_rng_state()
    try:
        return [dqn.MLP(1285, hidden, 52, seed=s) for s in range(seats)]
    finally:
        torch.random.set_rng_state(state)  # dqn.MLP seeds torch's global generator


@pytest.fixture(scope="module")
def nfsp_file(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    from popejoan_env.players.openspiel_players import save_nfsp

    path = tmp_path_factory.mktemp("nfsp") / "nfsp.pt"
    save_nfsp(str(path), _nfsp_networks([16, 8]), inputs=1285, hidden=[16, 8], actions=52)
    return path


def test_nfsp_checkpoint_plays_as_its_torch_networks_compute(nfsp_file: pathlib.Path) -> None:
    import torch

    from open_spiel.python.pytorch import dqn
    from popejoan_env.observation import encode_view

    player = make_player(f"openspiel_nfsp:path={nfsp_file}", seed=1)
    saved = torch.load(nfsp_file, weights_only=True)
    deal = Deal.new("modern", 4, 3, np.random.default_rng(8))
    deal.advance()
    view = seat_view(deal, deal.to_act)
    net = dqn.MLP(1285, [16, 8], 52)
    net.load_state_dict(saved["models"][(-view.dealer) % 4])
    with torch.no_grad():
        logits = net(torch.from_numpy(encode_view(view)).unsqueeze(0))[0].numpy()
    legal = list(view.legal)
    z = np.exp(logits[legal] - logits[legal].max())
    assert list(player.probabilities(view).values()) == pytest.approx(list(z / z.sum()), abs=1e-6)
    while not deal.done:
        deal.play(player.act(seat_view(deal, deal.to_act)))


def _bad_checkpoint(kind: str) -> object:
    """What ``torch.save`` writes for one class of bad NFSP checkpoint."""
    import torch

    good = {"models": [n.state_dict() for n in _nfsp_networks([4], 3)], "inputs": 1285, "hidden": [4],
            "actions": 52}
    first = good["models"][0]
    if kind == "extra field":
        return {**good, "optimizer": 1}
    if kind == "inputs":
        return {**good, "inputs": 99}
    if kind == "actions":
        return {**good, "actions": 53}
    if kind == "hidden too wide":
        return {**good, "hidden": [10**9]}  # dqn.MLP would allocate 1285 x 10^9 floats before loading
    if kind == "hidden too deep":
        return {**good, "hidden": [4] * 17}
    if kind == "hidden text":
        return {**good, "hidden": "4"}
    if kind == "two seats":
        return {**good, "models": good["models"][:2]}
    if kind == "missing layer":
        return {**good, "models": [{k: v for k, v in first.items() if k != "model.1.bias"}] * 3}
    if kind == "wrong shape":
        return {**good, "models": [{**first, "model.0.0.weight": torch.zeros(4, 1284)}] * 3}
    if kind == "NaN weight":
        weight = first["model.0.0.weight"].clone()
        weight[0, 0] = float("nan")
        return {**good, "models": [{**first, "model.0.0.weight": weight}] * 3}
    if kind == "integer weights":
        return {**good, "models": [{**first, "model.1.weight": first["model.1.weight"].to(torch.int64)}] * 3}
    if kind == "stride-0 view":  # a (4, 1285) matrix over 4 stored floats
        return {**good, "models": [{**first, "model.0.0.weight": torch.zeros(4, 1).expand(4, 1285)}] * 3}
    if kind == "a list":
        return [1, 2, 3]
    raise AssertionError(kind)


class _Hostile:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (print, ("this code ran",))


BAD_CHECKPOINTS = ["extra field", "inputs", "actions", "hidden too wide", "hidden too deep", "hidden text",
                   "two seats", "missing layer", "wrong shape", "NaN weight", "integer weights", "stride-0 view",
                   "a list", "pickled code", "not a zip", "too large", "a directory", "empty"]


@pytest.mark.parametrize("kind", BAD_CHECKPOINTS)
def test_a_bad_nfsp_checkpoint_is_one_line_model_file_error(kind: str, tmp_path: pathlib.Path,
                                                            capfd: pytest.CaptureFixture[str]) -> None:
    import torch

    from popejoan_env.players.openspiel_players import MAX_NFSP_BYTES

    path = tmp_path / "nfsp.pt"
    if kind == "pickled code":
        torch.save({"models": _Hostile(), "inputs": 1285, "hidden": [4], "actions": 52}, path)
    elif kind == "not a zip":
        path.write_bytes(b"\x80\x04not a torch file")
    elif kind == "too large":
        with open(path, "wb") as f:
            f.truncate(MAX_NFSP_BYTES + 1)  # sparse: no disk used
    elif kind == "a directory":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    else:
        torch.save(_bad_checkpoint(kind), path)
    with pytest.raises(ModelFileError) as caught:
        make_player(f"openspiel_nfsp:path={path}")
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400, message
    assert "this code ran" not in capfd.readouterr().out


# ----------------------------------------------------------------- properties (the fuzz suite's settings)
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_fuzz import fuzz, mutated_bytes  # noqa: E402

INT32 = st.integers(-(2**31), 2**31 - 1)
PARAMETER_VALUES = (st.booleans() | st.integers(-3, 10) | INT32 | st.floats(allow_nan=True)
                    | st.sampled_from(["", "true", "48", "٤٨", "６/2/2/1/1/1/1/1", "6/2/2/1/1/1/1/1", "6/2/2/1/1/1/1/1_0",
                                       "modern", "victorian", "any", "equal", "all_round", "fixed_stock", "ends_deal",
                                       "halves", "KD", "9ſ", "QS", "1" * 5000, " any", "x" * 300])
                    | st.text(max_size=12))
PARAMETER_NAMES = st.sampled_from(sorted(og._SMALL_TYPE.parameter_specification)) | st.text(max_size=6)


@fuzz(80)
@given(name=st.sampled_from([og.GAME_NAME, og.SMALL_GAME_NAME]),
       params=st.dictionaries(PARAMETER_NAMES, PARAMETER_VALUES, max_size=4))
def test_any_game_parameters_give_a_game_that_round_trips_or_a_spiel_error(name: str, params: dict) -> None:
    try:
        game = pyspiel.load_game(name, params)
    except pyspiel.SpielError:
        return
    again = pyspiel.load_game(str(game))
    assert again.rules == game.rules and str(again) == str(game) and again.num_players() == game.num_players()


@fuzz(120)
@given(name=st.sampled_from([og.GAME_NAME, og.SMALL_GAME_NAME]), players=st.integers(3, 8), seed=st.integers(0, 999),
       steps=st.integers(0, 80), action=st.integers(-(2**63), 2**63 - 1) | st.integers(-3, 60), data=st.data())
def test_any_action_at_any_state_is_applied_or_refused_without_a_trace(
        name: str, players: int, seed: int, steps: int, action: int, data: st.DataObject) -> None:
    game = pyspiel.load_game(name, {"players": players} if name == og.GAME_NAME else {})
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    for _ in range(steps):
        if state.is_terminal():
            break
        actions = [c for c, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions()
        state.apply_action(actions[int(rng.integers(len(actions)))])
    legal = [] if state.is_terminal() else (
        [c for c, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions())
    if data.draw(st.booleans()) and legal:
        action = data.draw(st.sampled_from(legal))
    before = pyspiel.serialize_game_and_state(game, state)
    if action in legal:
        state.apply_action(action)
        return
    with pytest.raises(pyspiel.SpielError):
        state.apply_action(action)
    assert pyspiel.serialize_game_and_state(game, state) == before


@functools.cache
def _nfsp_bytes() -> bytes:
    import io

    import torch

    buffer = io.BytesIO()
    torch.save({"models": [n.state_dict() for n in _nfsp_networks([4], 3)], "inputs": 1285, "hidden": [4],
                "actions": 52}, buffer)
    return buffer.getvalue()


@fuzz(100)
@given(data=st.data())
def test_mutated_nfsp_checkpoints_play_or_raise_model_file_error(tmp_path_factory: pytest.TempPathFactory,
                                                                 data: st.DataObject) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz_nfsp.pt"
    path.write_bytes(data.draw(mutated_bytes(_nfsp_bytes())))
    try:
        player = make_player(f"openspiel_nfsp:path={path}", seed=0)
    except ModelFileError:
        return
    deal = Deal.new("modern", 3, 0, np.random.default_rng(0))
    deal.advance()
    view = seat_view(deal, deal.to_act)
    assert player.act(view) in view.legal
