"""The PettingZoo AEC env: PettingZoo's own tests, turn order, rewards, sessions, options, records, rendering."""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import pickle
import re
import warnings
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test, render_test, seed_test

import popejoan_env
import popejoan_env.envs.pettingzoo_aec as aec_module
from popejoan_env import Deal, IllegalActionError, PopeJoanError
from popejoan_env.errors import InvalidDealError
from popejoan_env.envs.pettingzoo_aec import ENV_ID, ENV_NAME, ILLEGAL_REWARD, env, raw_env
from popejoan_env.cards import CARD_NAMES, PACK, POPE, cards_of, parse_card
from popejoan_env.observation import OBS_SIZE, action_mask, encode, layout_table
from popejoan_env.record import replay_record
from popejoan_env.rules import COMPARTMENTS, MODERN, VICTORIAN

GOLDEN = pathlib.Path(__file__).parent / "data" / "golden_records.jsonl"
PRESETS = ("modern", "victorian")
PLAYERS = tuple(range(3, 9))


@pytest.fixture(autouse=True)
def _quiet_pettingzoo_notices():
    """PettingZoo's api_test warns about dict observations: not failures (``test_pettingzoos_own_tests_hear_no_
    warning_from_us`` turns this off to listen for ours)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def random_action(e: Any, rng: np.random.Generator) -> int | None:
    """A uniformly random legal card for the agent to act (None when it is done)."""
    obs, _, terminated, truncated, _ = e.last()
    if terminated or truncated:
        return None
    legal = np.flatnonzero(obs["action_mask"])
    return int(legal[int(rng.integers(len(legal)))])


def play_out(e: Any, rng: np.random.Generator) -> dict[str, float]:
    """Play random legal cards to the end of the episode; returns the sum of rewards per agent.

    ``e.final_flags`` is set to (all terminated, all truncated) as they were
    when the episode ended, before the agents' final ``None`` steps removed them.
    """
    total = dict.fromkeys(e.possible_agents, 0.0)
    e.final_flags = None
    for _ in e.agent_iter():
        e.step(random_action(e, rng))
        for a, r in e.rewards.items():
            total[a] += r
        if e.final_flags is None and e.agents and (any(e.terminations.values()) or any(e.truncations.values())):
            e.final_flags = (all(e.terminations.values()), all(e.truncations.values()))
    assert e.agents == [] and e.final_flags is not None
    return total


def golden() -> list[dict[str, Any]]:
    """The golden records shipped with the tests."""
    return [json.loads(line) for line in GOLDEN.read_text().splitlines() if line.strip()]


def options_of(record: dict[str, Any]) -> dict[str, Any]:
    """reset() options that rebuild a record's deal."""
    return {
        "deal": {"hands": record["hands"], "dead": record["dead"], "dealer": record["dealer"]},
        "board": record["board_before"],
        "balances": record.get("balances_before", [0] * record["players"]),
    }


# ------------------------------------------------------------------ PettingZoo's own tests
@pytest.mark.parametrize("rules", PRESETS)
@pytest.mark.parametrize("players", PLAYERS)
def test_api_every_table(rules: str, players: int) -> None:
    api_test(env(players=players, rules=rules), num_cycles=40)
    api_test(raw_env(players=players, rules=rules), num_cycles=40)
    api_test(raw_env(players=players, rules=rules, auto_forced=True, deals=2), num_cycles=40)


@pytest.mark.parametrize("rules", PRESETS)
@pytest.mark.parametrize("players", PLAYERS)
def test_seed_and_pickle(rules: str, players: int) -> None:
    seed_test(lambda: env(players=players, rules=rules), num_cycles=30)
    e = raw_env(players=players, rules=rules, deals=2, auto_forced=True)
    clone = pickle.loads(pickle.dumps(e))
    assert (clone.players, clone.rules, clone.deals_per_episode, clone.auto_forced) == (players, e.rules, 2, True)
    e.reset(seed=3)
    clone.reset(seed=3)
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    assert play_out(e, rng_a) == play_out(clone, rng_b)
    assert e.records() == clone.records()
    wrapped = pickle.loads(pickle.dumps(env(players=players, rules=rules)))
    wrapped.reset(seed=0)
    assert wrapped.last()[0]["observation"].shape == (OBS_SIZE,)


@pytest.mark.parametrize("rules", PRESETS)
def test_render_test(rules: str) -> None:
    def has_table(text: str) -> bool:
        return isinstance(text, str) and "Board:" in text and "Turn-up" in text and "balance" in text

    for players in (3, 8):
        render_test(lambda render_mode=None: env(players=players, rules=rules, render_mode=render_mode),
                    custom_tests={"ansi": has_table})


PACKAGE_DIR = pathlib.Path(popejoan_env.__file__).parent


@pytest.mark.parametrize(("players", "rules"), [(3, "modern"), (6, "victorian")])
def test_pettingzoos_own_tests_hear_no_warning_from_us(players: int, rules: str) -> None:
    """api_test (it resets with options={"options": 1} to check the argument exists), seed_test, render_test,
    the state tests and parallel_api_test over the turn-based parallel view: PettingZoo may warn about our
    design (dict observations), but no warning comes from us, and nothing of ours reaches stderr."""
    from pettingzoo.test import parallel_api_test
    from pettingzoo.test.state_test import test_state, test_state_space
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    err = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("always")
        api_test(env(players=players, rules=rules), num_cycles=20)
        api_test(raw_env(players=players, rules=rules), num_cycles=20)
        api_test(raw_env(players=players, rules=rules, auto_forced=True, deals=2), num_cycles=20)
        seed_test(lambda: env(players=players, rules=rules), num_cycles=10)
        render_test(lambda render_mode=None: env(players=players, rules=rules, render_mode=render_mode))
        test_state_space(env(players=players, rules=rules))
        test_state(env(players=players, rules=rules), num_cycles=10)
        parallel_api_test(turn_based_aec_to_parallel(env(players=players, rules=rules)), num_cycles=20)
    assert caught, "PettingZoo's own notices were heard: the listening works"
    ours = [f"{w.filename}:{w.lineno}: {w.message}" for w in caught
            if pathlib.Path(w.filename).is_relative_to(PACKAGE_DIR) or "pope" in str(w.message).lower()]
    assert ours == []
    assert "pope" not in err.getvalue().lower()


def test_import_and_registry() -> None:
    import pettingzoo

    assert popejoan_env.env is env and popejoan_env.raw_env is raw_env
    made = pettingzoo.make("aec", ENV_ID, players=5, rules="victorian")
    made.reset(seed=1)
    assert made.unwrapped.players == 5 and made.unwrapped.rules == VICTORIAN
    assert str(made.unwrapped) == ENV_NAME == raw_env.metadata["name"] == "pope_joan_v2"
    assert pettingzoo.make("aec", "popejoan/pope_joan_v2").unwrapped.players == 4
    assert set(raw_env.metadata["render_modes"]) == {"human", "ansi"}


def test_docs_carry_the_observation_table() -> None:
    assert layout_table() in aec_module.__doc__
    for heading in ("## Rewards", "## Reset and options", "## Version History", "## Action Space"):
        assert heading in aec_module.__doc__


# ------------------------------------------------------------------ spaces, turn order, observations
def test_spaces_agents_and_masks() -> None:
    e = raw_env(players=5)
    assert e.possible_agents == [f"player_{i}" for i in range(5)]
    e.reset(seed=4)
    for a in e.agents:
        assert e.action_space(a) is e.action_space(a) and e.action_space(a).n == 52
        assert e.observation_space(a) is e.observation_space(a)
    rng = np.random.default_rng(0)
    repeats = 0
    previous = None
    while not any(e.terminations.values()):
        deal = e.deal
        acting = e.agent_selection
        assert acting == f"player_{deal.to_act}"          # turn order comes from the cards
        for a in e.agents:
            obs = e.observe(a)
            assert obs["observation"].dtype == np.float32 and obs["action_mask"].dtype == np.int8
            assert e.observation_space(a).contains(obs)
            seat = e.seat_of(a)
            assert np.array_equal(obs["observation"], encode(deal, seat))
            assert np.array_equal(obs["action_mask"], action_mask(deal, seat))
            if a != acting:
                assert not obs["action_mask"].any()
        mask = e.observe(acting)["action_mask"]
        assert mask.any() and not mask[20]
        if deal.forced >= 0:
            assert mask.sum() == 1 and mask[deal.forced] == 1
        repeats += acting == previous
        previous = acting
        e.step(random_action(e, rng))
    assert repeats > 0                                     # the same agent can act several times in a row
    for a in e.agents:
        assert not e.observe(a)["action_mask"].any()


def test_every_card_is_a_step_by_default() -> None:
    e = raw_env(players=4)
    e.reset(seed=9)
    rng = np.random.default_rng(9)
    steps = 0
    while not any(e.terminations.values()):
        e.step(random_action(e, rng))
        steps += 1
    assert steps == len(e.deal.plays)


def test_auto_forced_only_asks_for_leads() -> None:
    for rules in PRESETS:
        e = raw_env(players=4, rules=rules, auto_forced=True)
        e.reset(seed=12)
        rng = np.random.default_rng(12)
        decisions = 0
        total = dict.fromkeys(e.agents, 0.0)
        while not any(e.terminations.values()):
            assert e.deal.forced < 0 and e.deal.to_act == e.seat_of(e.agent_selection)
            e.step(random_action(e, rng))
            decisions += 1
            for a, r in e.rewards.items():
                total[a] += r
        deal = e.deal
        replay = Deal.from_cards([cards_of(h) for h in deal.initial_hands], list(deal.dead), deal.dealer,
                                 deal.rules, board=deal.board_before, balances=deal.balances_before)
        leads = 0
        for _, card in deal.plays:
            leads += replay.forced < 0
            replay.play(card)
        assert decisions == leads < len(deal.plays)
        assert [total[a] for a in e.possible_agents] == deal.delta


# ------------------------------------------------------------------ rewards and records
def test_golden_records_replay_through_step() -> None:
    records = golden()
    assert len(records) >= 20
    for record in records:
        e = raw_env(players=record["players"], rules=record["rules"])
        e.reset(options=options_of(record))
        for seat, card in record["plays"]:
            assert e.agent_selection == f"player_{seat}", record["case"]
            assert e.observe(e.agent_selection)["action_mask"][parse_card(card)] == 1
            e.step(parse_card(card))
        got = e.records()
        expected = {k: v for k, v in record.items() if k not in ("case", "seed")}
        assert got[0] == expected, record["case"]
        if record["winner"] is not None:
            assert len(got) == 1 and all(e.terminations.values())
            assert [e._cumulative_rewards[a] for a in e.possible_agents] == record["delta"]


def test_random_episode_records_replay_and_rewards_are_deltas() -> None:
    rng = np.random.default_rng(77)
    for rules in PRESETS:
        for players in PLAYERS:
            e = raw_env(players=players, rules=rules, deals=3)
            e.reset(seed=players)
            total = play_out(e, rng)
            records = e.records()
            played = [r for r in records if r["winner"] is not None]
            assert len(played) == 3 and e.final_flags == (False, True)
            assert [total[a] for a in e.possible_agents] == [
                sum(r["delta"][s] for r in records) for s in range(players)]
            for r in records:
                deal = replay_record(r)
                assert deal.delta == r["delta"] and deal.winner == r["winner"]
            for before, after in zip(records, records[1:]):     # board and balances carried, deal passes left
                assert after["board_before"] == before["board_after"]
                assert after["dealer"] == (before["dealer"] + 1) % players
            assert sum(total.values()) == -(sum(records[-1]["board_after"].values())
                                            - sum(records[0]["board_before"].values()))


def test_session_of_k_deals_truncates_and_pays_each_deal() -> None:
    e = raw_env(players=4, deals=3, dealer=2)
    e.reset(seed=5)
    rng = np.random.default_rng(5)
    deal_ends = []
    for agent in e.agent_iter():
        if e.agents and not e.truncations[agent]:
            assert np.array_equal(e.observe(agent)["observation"], encode(e.deal, e.seat_of(agent)))
        e.step(random_action(e, rng))
        if any(e.rewards.values()) and e.agents:
            deal_ends.append([e.rewards[a] for a in e.possible_agents])
        if not any(e.truncations.values()):
            assert not any(e.terminations.values())
    records = e.records()
    assert [r["dealer"] for r in records] == [2, 3, 0]
    assert deal_ends == [[float(x) for x in r["delta"]] for r in records]
    assert records[0]["balances_before"] == [48] * 4
    assert records[1]["balances_before"] == [48 + x for x in records[0]["delta"]]


def test_session_without_credit_ends_when_the_dealer_is_broke() -> None:
    rules = MODERN.replace(allow_credit=False, start_counters=16)
    for seed in range(50):
        e = raw_env(players=4, rules=rules, deals=8)
        e.reset(seed=seed)
        play_out(e, np.random.default_rng(seed))
        played = sum(r["winner"] is not None for r in e.records())
        if played < 8:
            assert e.session.ended_broke
            assert e.final_flags == (True, False)
            return
        assert e.final_flags == (False, True)
    pytest.fail("no session ended early in 50 seeds")


def test_single_deal_episode_terminates() -> None:
    e = raw_env(players=3)
    e.reset(seed=1)
    rng = np.random.default_rng(1)
    while not any(e.terminations.values()):
        assert not any(e.truncations.values())
        e.step(random_action(e, rng))
    assert all(e.terminations.values()) and not any(e.truncations.values())
    assert [e._cumulative_rewards[a] for a in e.possible_agents] == e.deal.delta


# ------------------------------------------------------------------ the Pope turned up (victorian)
def pope_turnup_deal(players: int = 4) -> dict[str, Any]:
    """An explicit deal whose turn-up is the 9♦ (victorian: the deal ends at once, R5/E8)."""
    cards = [CARD_NAMES[c] for c in PACK if c != POPE]
    sizes, dead_size = VICTORIAN.hand_sizes(players)
    hands, i = [], 0
    for size in sizes:
        hands.append(cards[i:i + size])
        i += size
    return {"hands": hands, "dead": cards[i:] + ["9D"], "dealer": 1}


def test_victorian_pope_turnup_plays_on_into_the_next_deal() -> None:
    e = raw_env(players=4, rules="victorian")
    e.reset(seed=8, options={"deal": pope_turnup_deal()})
    assert not any(e.terminations.values()) and not any(e.truncations.values())
    assert e.session.deals[0].done and e.session.deals[0].winner is None
    assert e.deal.dealer == 2 and e.agent_selection == "player_3"   # next dealer, eldest leads
    first = e.session.deals[0]
    assert e.deal.board_before == tuple(first.board) and e.deal.balances_before == tuple(first.balances)
    total = play_out(e, np.random.default_rng(8))
    records = e.records()
    assert len(records) == 2 and records[0]["winner"] is None and records[0]["plays"] == []
    assert [total[a] for a in e.possible_agents] == [a + b for a, b in zip(records[0]["delta"], records[1]["delta"])]
    assert e.final_flags == (True, False)


def test_victorian_pope_turnup_mid_session_is_paid_in_the_same_step() -> None:
    found = 0
    for seed in range(200):
        e = raw_env(players=3, rules="victorian", deals=4)
        e.reset(seed=seed)
        rng = np.random.default_rng(seed)
        for _ in e.agent_iter():
            before = len(e.session.deals)
            e.step(random_action(e, rng))
            after = e.session.deals
            ended_at_turnup = [d for d in after[before - 1:] if d.done and d.winner is None]
            if ended_at_turnup and e.agents and len(after) > before:
                found += 1
                paid = [e.rewards[a] for a in e.possible_agents]
                finished = [d for d in after[before - 1:] if d.done]
                assert paid == [float(sum(d.delta[s] for d in finished)) for s in range(3)]
        records = e.records()
        assert sum(r["winner"] is not None for r in records) == 4   # turn-up deals do not count towards K
        if found >= 2:
            break
    assert found >= 1


# ------------------------------------------------------------------ illegal moves
def test_raw_env_refuses_an_illegal_card_and_changes_nothing() -> None:
    e = raw_env(players=4)
    e.reset(seed=21)
    agent = e.agent_selection
    seat = e.seat_of(agent)
    before = (e.observe(agent)["observation"].copy(), list(e.deal.plays), dict(e._cumulative_rewards))
    legal = [CARD_NAMES[c] for c in e.deal.legal_actions()]
    held = [c for c in range(52) if (e.deal.hands[seat] >> c) & 1 and CARD_NAMES[c] not in legal]
    not_held = next(c for c in PACK if not (e.deal.hands[seat] >> c) & 1)
    for bad in (held[0], not_held, 20, 60, -1, np.int64(not_held), "5C", None):
        with pytest.raises(IllegalActionError) as err:
            e.step(bad)
        text = str(err.value)
        assert agent in text and f"seat {seat}" in text and all(c in text for c in legal)
        assert e.agent_selection == agent
        assert np.array_equal(e.observe(agent)["observation"], before[0])
        assert e.deal.plays == before[1] and e._cumulative_rewards == before[2]
    with pytest.raises(IllegalActionError, match=CARD_NAMES[held[0]]):
        e.step(held[0])
    e.step(e.deal.legal_actions()[0])        # and the env plays on
    assert len(e.deal.plays) == 1


def test_wrapped_env_ends_the_episode_with_the_penalty() -> None:
    e = env(players=4)
    e.reset(seed=21)
    agent = e.agent_selection
    mask = e.last()[0]["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    e.step(illegal)
    assert all(e.terminations.values())
    assert e.rewards[agent] == ILLEGAL_REWARD == -100.0
    assert all(r == 0 for a, r in e.rewards.items() if a != agent)
    for a in e.agent_iter():
        e.step(None)
    assert e.agents == []
    custom = env(players=4, illegal_reward=-7)
    custom.reset(seed=21)
    custom.step(illegal)
    assert custom.rewards[agent] == -7


# ------------------------------------------------------------------ reset options and seeding
def test_reset_options_set_the_deal_the_board_and_the_balances() -> None:
    record = next(r for r in golden() if r["case"] == "matrimony_won")
    e = raw_env(players=4)
    board = {"pope": 4, "game": 3}
    e.reset(options={**options_of(record), "board": board, "balances": [10, 20, 30, 40]})
    deal = e.deal
    assert [CARD_NAMES[c] for c in deal.dead] == record["dead"]
    assert deal.dealer == record["dealer"]
    dressing = MODERN.dressing
    expected_board = [board.get(c, 0) + d for c, d in zip(COMPARTMENTS, dressing)]
    for cause, seat, comp, amount in deal.awards:      # a turn-up honour pays the dealer at once
        expected_board[comp] -= amount
    assert deal.board == expected_board
    assert deal.balances_before == (10, 20, 30, 40)


BAD_OPTIONS = [
    ({"deal": {"hands": [["AC"]] * 4, "dead": ["KS"]}}, "partition"),
    ({"deal": {"hands": [["AC"], ["2C"], ["3C"]], "dead": ["KS"]}}, "4 hands"),
    ({"deal": {"hands": [["AC", "XX"]] * 4, "dead": ["KS"]}}, "XX"),
    ({"deal": {"hands": [["AC", "8D"]] * 4, "dead": ["KS"]}}, "8D"),
    ({"deal": {"dead": ["KS"]}}, "hands"),
    ({"deal": {"hands": [], "dead": [], "turnup": "KS"}}, "turnup"),
    ({"deal": "AC 2C"}, "mapping"),
    ({"board": {"popes": 3}}, "popes"),
    ({"board": {"pope": -1}}, "pope"),
    ({"balances": [1, 2]}, "balances"),
    ("deal", "mapping"),
]


@pytest.mark.parametrize(("options", "named"), BAD_OPTIONS)
def test_bad_options_are_refused_and_change_nothing(options: Any, named: str) -> None:
    e, twin = raw_env(players=4), raw_env(players=4)
    e.reset(seed=6)
    twin.reset(seed=6)
    e.step(e.deal.legal_actions()[0])
    twin.step(twin.deal.legal_actions()[0])
    agent = e.agent_selection
    before = e.observe(agent)["observation"].copy()
    with pytest.raises(ValueError, match=named):
        e.reset(seed=99, options=options)
    assert e.agent_selection == agent and np.array_equal(e.observe(agent)["observation"], before)
    e.step(e.deal.legal_actions()[0])
    twin.step(twin.deal.legal_actions()[0])
    e.reset()                               # the generator's stream was not disturbed either
    twin.reset()
    assert np.array_equal(e.observe(e.agent_selection)["observation"],
                          twin.observe(twin.agent_selection)["observation"])


def test_option_keys_not_ours_are_ignored_silently() -> None:
    e, twin = raw_env(players=4), raw_env(players=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e.reset(seed=1, options={"options": 1, "colour": "red", "seed": 3})  # api_test's probe, someone else's keys
    twin.reset(seed=1)
    assert e.deal.initial_hands == twin.deal.initial_hands and e.agents


@pytest.mark.parametrize(("key", "says"), [
    ("balance", "did you mean 'balances'"), ("boards", "did you mean 'board'"), ("Deal", "did you mean 'deal'"),
    ("deals", "did you mean 'deal'"), ("hands", "belongs inside options['deal']"),
    ("dead", "belongs inside options['deal']"), ("dealr", "did you mean options['deal']['dealer']"),
])
def test_a_near_miss_of_an_option_key_is_refused_and_changes_nothing(key: str, says: str) -> None:
    e = raw_env(players=4)
    e.reset(seed=1)
    hands = e.deal.initial_hands
    with pytest.raises(InvalidDealError, match=re.escape(says)):
        e.reset(seed=2, options={key: [48, 48, 48, 48]})
    assert e.deal.initial_hands == hands


def test_seeding_and_stream() -> None:
    a, b = raw_env(players=4), raw_env(players=4)
    a.reset(seed=42)
    first = a.deal.initial_hands
    b.reset(seed=42)
    assert a.deal.initial_hands == b.deal.initial_hands and a.deal.dealer == b.deal.dealer
    a.reset()
    b.reset()
    assert a.deal.initial_hands == b.deal.initial_hands
    assert a.deal.initial_hands != first
    a.reset(seed=43)
    assert a.deal.initial_hands != b.deal.initial_hands
    dealers = set()
    for seed in range(30):
        a.reset(seed=seed)
        dealers.add(a.deal.dealer)
    assert dealers == {0, 1, 2, 3}                       # dealer=None draws the first dealer
    fixed = raw_env(players=4, dealer=3)
    fixed.reset(seed=0)
    assert fixed.deal.dealer == 3


def test_bad_constructor_arguments() -> None:
    for kwargs, named in (({"players": 2}, "players"), ({"rules": "edwardian"}, "edwardian"),
                          ({"deals": 0}, "deals"), ({"dealer": 4}, "dealer"),
                          ({"render_mode": "rgb_array"}, "render_mode")):
        with pytest.raises(PopeJoanError, match=named):
            raw_env(**kwargs)


# ------------------------------------------------------------------ rendering
def test_ansi_picture_shows_the_table() -> None:
    record = next(r for r in golden() if r["case"] == "matrimony_won")
    e = raw_env(players=4, render_mode="ansi")
    e.reset(options=options_of(record))
    for seat, card in record["plays"][:5]:
        e.step(parse_card(card))
    text = e.render()
    deal = e.deal
    for name, count in zip(COMPARTMENTS, deal.board):
        assert f"{name} {count}" in text
    assert f"Turn-up {CARD_NAMES[deal.turnup]}" in text
    acting = e.agent_selection
    hand = " ".join(CARD_NAMES[c] for c in range(52) if (deal.hands[deal.to_act] >> c) & 1)
    assert f"Hand of {acting}: {hand}" in text
    for seat in range(4):
        assert f"balance {deal.balances[seat]:>4}" in text
    played_rows = [line for line in text.splitlines() if line.startswith("  ") and line[2] in "♣♦♥♠"]
    assert len(played_rows) == 4
    for seat, card in deal.plays:
        suit_row = played_rows[card // 13]
        assert CARD_NAMES[card][0] in suit_row.split()
    while e.agents and not any(e.terminations.values()):
        e.step(e.deal.legal_actions()[0])
    assert "Deal over" in e.render()


def test_human_mode_prints(capsys: pytest.CaptureFixture[str]) -> None:
    e = raw_env(players=3, render_mode="human")
    e.reset(seed=2)
    assert e.render() is None
    e.step(e.deal.legal_actions()[0])
    out = capsys.readouterr().out
    assert "Board:" in out and out.count("Turn-up") == 2


# ------------------------------------------------------------------ v2: state() for centralised critics
@pytest.mark.parametrize("players", [3, 4, 8])
@pytest.mark.parametrize("rules", ["modern", "victorian"])
def test_state_passes_pettingzoo_state_checks(rules: str, players: int) -> None:
    from pettingzoo.test.state_test import test_state, test_state_space

    e = env(players=players, rules=rules)
    test_state_space(e)
    test_state(e, num_cycles=10)
    e = raw_env(players=players, rules=rules)
    e.reset(seed=3)
    for agent in e.agent_iter():
        obs, _, terminated, truncated, _ = e.last()
        assert e.state_space.contains(e.state()) and e.state().dtype == np.float32
        e.step(None if terminated or truncated else int(np.flatnonzero(obs["action_mask"])[0]))


def test_state_is_the_full_hidden_state() -> None:
    from popejoan_env.observation import STATE_LAYOUT

    start = {name: (s, n) for name, s, n, _ in STATE_LAYOUT}
    record = next(r for r in golden() if r["case"] == "matrimony_won")
    a, b = raw_env(players=4), raw_env(players=4)
    a.reset(options=options_of(record))
    hands = [list(h) for h in record["hands"]]
    hands[1][0], hands[2][0] = hands[2][0], hands[1][0]      # two hidden cards change places
    b.reset(options={**options_of(record), "deal": {**options_of(record)["deal"], "hands": hands}})
    sa, sb = a.state(), b.state()
    s, n = start["hands"]
    for seat in range(4):
        plane = sa[s + seat * 52:s + (seat + 1) * 52]
        assert sorted(np.flatnonzero(plane).tolist()) == sorted(parse_card(c) for c in record["hands"][seat])
    assert not np.array_equal(sa, sb)            # the state sees hidden cards ...
    observer = next(k for k in range(4) if k not in (1, 2))
    assert np.array_equal(a.observe(f"player_{observer}")["observation"],
                          b.observe(f"player_{observer}")["observation"])   # ... an observation does not


def test_no_player_reads_the_state() -> None:
    """Every player plays a whole deal in an env whose state() refuses to be read."""
    from popejoan_env.players import SCRIPTED, make_player

    class NoState(raw_env):
        def state(self):  # type: ignore[override]
            raise AssertionError("a player read the oracle state")

    e = NoState(players=4, auto_forced=True)
    players = {a: make_player(name if name != "pimc" else "pimc:samples=4", seed=i)
               for i, (a, name) in enumerate(zip(e.possible_agents, SCRIPTED))}
    e.reset(seed=5)
    for agent in e.agent_iter():
        obs, _, terminated, truncated, _ = e.last()
        e.step(None if terminated or truncated else players[agent].act(e.seat_view(agent)))
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1] / "popejoan_env" / "players"
    for path in root.glob("*.py"):
        assert ".state(" not in path.read_text() and "state_vector" not in path.read_text(), path


def test_reset_with_a_seed_seeds_the_action_spaces_so_sampled_play_repeats() -> None:
    def play(seed: int | None) -> list[int]:
        e = env(players=4)
        e.reset(seed=seed)
        out = []
        for agent in e.agent_iter():
            obs, _, terminated, truncated, _ = e.last()
            action = None if terminated or truncated else int(e.action_space(agent).sample(obs["action_mask"]))
            out.append(-1 if action is None else action)
            e.step(action)
        return out

    assert play(11) == play(11)
    assert play(11) != play(12)


@pytest.mark.parametrize("call", ["last", "observe", "state", "render", "agent_iter"])
def test_env_refuses_a_call_before_reset_with_a_popejoan_error(call: str) -> None:
    """Forgetting ``reset()`` gave PettingZoo's bare AssertionError (or AttributeError for ``last()``) through
    ``env()``, where ``raw_env`` and ``env().step`` already refuse with a ``GameOverError`` naming the fix."""
    from popejoan_env.errors import GameOverError

    e = env(players=4, render_mode="ansi")
    calls = {"last": e.last, "observe": lambda: e.observe("player_0"), "state": e.state, "render": e.render,
             "agent_iter": lambda: next(iter(e.agent_iter()))}
    with pytest.raises(GameOverError, match=rf"{call}\(\) before reset\(\): call reset\(\)"):
        calls[call]()
    e.reset(seed=1)
    calls[call]()  # after reset() each works
