"""Edges of the public Python API a researcher meets first: each bad argument refused by name, a refused call
changing nothing, every accepted configuration inside its spaces, copies and records that work."""

from __future__ import annotations

import copy
import json
import os
import pickle

import numpy as np
import pytest

from popejoan_env import Deal, env, raw_env
from popejoan_env.batch import BatchDeals
from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv, table_sizes
from popejoan_env.envs.sb3_vec_env import BatchVecEnv
from popejoan_env.errors import InvalidDealError, PopeJoanError
from popejoan_env.nets.model_file import ModelFileError
from popejoan_env.nets.shipped import shipped_model
from popejoan_env.observation import Encoder, encode
from popejoan_env.opponents import OpponentMixError, parse_mix
from popejoan_env.players import RandomPlayer, make_player
from popejoan_env.players.learned import load_player
from popejoan_env.record import deal_record, record_line
from popejoan_env.rules import COMPARTMENTS
from popejoan_env.session import Session

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# A table that cannot deal is refused naming why: rules when the env is built, balances at reset.

NO_CREDIT = {"preset": "modern", "allow_credit": False}


def test_rules_that_can_never_deal_refused_when_built():
    with pytest.raises(PopeJoanError, match="no deal can start"):
        raw_env(rules={**NO_CREDIT, "start_counters": 0})


def test_reset_balances_below_the_dressing_named():
    env = raw_env(rules=NO_CREDIT, dealer=0)
    with pytest.raises(PopeJoanError, match=r"seat 0, holds 3 counters and cannot pay the dressing \(15\)"):
        env.reset(seed=1, options={"balances": [3, 48, 48, 48]})


def test_session_says_why_it_is_over():
    session = Session(NO_CREDIT, 4, np.random.default_rng(0), balances=[0, 0, 0, 0])
    with pytest.raises(PopeJoanError, match="cannot pay the dressing"):
        session.next_deal()


# The Gymnasium view copies mid-episode (copy.deepcopy, pickle): the copy plays on exactly as the original.

def _rest(env: PopeJoanGymEnv) -> list:
    done, out = False, []
    while not done:
        obs, r, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
        out.append((obs.tobytes(), r))
    return out


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_copy_mid_episode_plays_on_the_same(how):
    env = PopeJoanGymEnv(players=4, opponents="random", deals=2)
    env.reset(seed=4)
    env.step(int(np.flatnonzero(env.action_masks())[0]))
    twin = copy.deepcopy(env) if how == "deepcopy" else pickle.loads(pickle.dumps(env))
    assert _rest(twin) == _rest(env)


def test_encoder_copy_is_independent_and_in_sync():
    deal = Deal.new(players=4, rng=np.random.default_rng(1))
    enc = Encoder(deal)
    twin = copy.deepcopy(enc)
    twin.deal.play(twin.deal.legal_actions()[0])
    twin.sync()
    assert np.array_equal(twin.observe(0), encode(twin.deal, 0))
    assert np.array_equal(enc.observe(0), encode(deal, 0))  # the original did not move


@pytest.mark.parametrize("wrapped", [True, False])
def test_aec_deepcopy_mid_game_keeps_the_deal(wrapped):
    from popejoan_env import env, raw_env

    def play(e, steps=None):
        k = 0
        for agent in e.agent_iter():
            obs, _, term, trunc, _ = e.last()
            e.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[-1]))
            k += 1
            if steps is not None and k >= steps:
                break

    e = env(deals=2) if wrapped else raw_env(deals=2)
    e.reset(seed=5)
    play(e, 7)
    twin = copy.deepcopy(e)
    assert twin.unwrapped.deal.plays == e.unwrapped.deal.plays
    play(e)
    play(twin)
    assert twin.unwrapped.records() == e.unwrapped.records()


# The Gymnasium view refuses the AEC env's reset options rather than dealing a random deal in their place.

@pytest.mark.parametrize("options", [{"deal": {"hands": [], "dead": []}}, {"board": {"pope": 6}},
                                     {"balances": [1, 2, 3, 4]}, {"hands": []}, {"balance": [1]}], ids=repr)
def test_aec_options_refused(options):
    env = PopeJoanGymEnv(opponents="random")
    with pytest.raises(PopeJoanError, match="takes no"):
        env.reset(seed=1, options=options)


def test_other_options_ignored():
    PopeJoanGymEnv(opponents="random").reset(seed=1, options={"someone_elses": 1})


# A refused reset of the Gymnasium view changes nothing; a configuration that cannot deal is refused when built.

def test_self_without_snapshot_refused_before_anything_changes():
    env = PopeJoanGymEnv(players=4, opponents={"random": 1, "self": 1})
    with pytest.raises(PopeJoanError, match="no learner snapshot"):
        env.reset(seed=5)  # whatever the seats draw
    # a refusal leaves the episode as it was: same learner seat, deal, generator and mask
    env2 = PopeJoanGymEnv(players=4, opponents={"random": 1, "self": 1}, snapshots=[shipped_model()])
    env2.reset(seed=5)
    state = (env2._learner, env2._session, env2.np_random.bit_generator.state, env2.action_masks().tolist())
    env2.pool.snapshots.clear()  # as if no snapshot had been given yet
    for seed in range(1000, 1020):
        with pytest.raises(PopeJoanError, match="no learner snapshot"):
            env2.reset(seed=seed)
    assert state == (env2._learner, env2._session, env2.np_random.bit_generator.state, env2.action_masks().tolist())


def test_rules_that_cannot_deal_refused_when_built():
    with pytest.raises(PopeJoanError, match="no deal can start"):
        PopeJoanGymEnv(rules={"preset": "modern", "allow_credit": False, "start_counters": 0})


def test_balance_range_below_the_dressing_without_credit_refused_when_built():
    with pytest.raises(PopeJoanError, match="balance_range"):
        PopeJoanGymEnv(rules={"preset": "modern", "allow_credit": False}, balance_range=(0, 30))
    env = PopeJoanGymEnv(rules={"preset": "modern", "allow_credit": False}, balance_range=(15, 30), opponents="random")
    for seed in range(20):
        env.reset(seed=seed)  # never refused at random


# A model path that is not a regular file is refused at once: never read to its end, never waited on.

NOT_A_FILE = """
import sys
from popejoan_env.nets.model_file import ModelFileError
from popejoan_env.nets.policy import load_policy, read_metadata
from popejoan_env.players import make_player
call = {"make_player": make_player, "load_policy": load_policy, "read_metadata": read_metadata}[sys.argv[1]]
try:
    call(sys.argv[2])
except ModelFileError as err:
    print(err)
"""


def _refused_quickly(call: str, path: str) -> str:
    """What ``call(path)`` refuses with, asked in a child held to 8 GB and 120 s (a regression reads forever)."""
    import resource
    import subprocess
    import sys

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    child = subprocess.run([sys.executable, "-c", NOT_A_FILE, call, path], env=env, capture_output=True, text=True,
                           timeout=120, preexec_fn=limit)
    assert child.returncode == 0, child.stderr[-2000:]
    return child.stdout


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("call", ["make_player", "load_policy", "read_metadata"])
def test_device_is_refused_not_read(call):
    assert "not a regular file" in _refused_quickly(call, "/dev/zero")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
@pytest.mark.parametrize("call", ["make_player", "load_policy"])
def test_pipe_is_refused_not_waited_on(call, tmp_path):
    fifo = tmp_path / "model.zip"
    os.mkfifo(fifo)
    assert "not a regular file" in _refused_quickly(call, str(fifo))


# A numpy integer for players is taken as its int: every record it makes is JSON.

FOUR = np.int64(4)


def _json(record: dict) -> None:
    assert json.loads(record_line(record))["players"] == 4


def test_aec_records_are_json():
    env = raw_env(players=FOUR)
    env.reset(seed=1)
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))
    _json(env.records()[0])


def test_engine_session_and_batch_records_are_json():
    deal = Deal.new(players=FOUR, rng=np.random.default_rng(0))
    deal.play_out(lambda d, legal: legal[0])
    _json(deal_record(deal))
    deal = Session(players=FOUR, rng=np.random.default_rng(0)).next_deal()
    deal.play_out(lambda d, legal: legal[0])
    _json(deal_record(deal))
    batch = BatchDeals(players=FOUR, num_deals=2, rng=np.random.default_rng(0), record=True)
    finished = batch.step(batch.random_actions(np.random.default_rng(1)))
    while not len(finished):
        finished = batch.step(batch.random_actions(np.random.default_rng(1)))
    _json(finished.records[0])


def test_table_sizes_are_ints():
    assert all(type(n) is int for n in table_sizes([np.int64(3), np.int8(5)]))


# Every observation an accepted configuration can produce lies in the observation space.

BIG_DRESSING = {"preset": "modern", "dressing": [100_000] * 8}
HALF = 2**19  # the largest board compartment and balance reset options take


def _inside_all_episode(env, **reset) -> None:
    env.reset(**reset)
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        assert env.observation_space(agent).contains(obs), env.deal.balances
        env.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))


def test_options_at_their_bounds_cannot_leave_the_space():
    env = raw_env(players=3)
    options = {"board": dict.fromkeys(COMPARTMENTS, HALF), "balances": [HALF] * 3}
    with pytest.raises(PopeJoanError, match="observation space"):
        _inside_all_episode(env, seed=0, options=options)


def test_large_dressing_over_a_session_cannot_leave_the_space():
    with pytest.raises(PopeJoanError, match="observation space"):
        _inside_all_episode(raw_env(players=3, rules=BIG_DRESSING, deals=10), seed=0)
    _inside_all_episode(raw_env(players=3, rules=BIG_DRESSING, deals=1), seed=0)  # one deal fits


def test_gym_view_large_dressing_cannot_leave_the_space():
    with pytest.raises(PopeJoanError, match="observation space"):
        env = PopeJoanGymEnv(players=3, rules=BIG_DRESSING, deals=10, opponents="random")
        obs, _ = env.reset(seed=0)
        done = False
        while not done:
            assert env.observation_space.contains(obs)
            obs, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))


# Opponent mixes: a spec's parameters without a weight, and snapshots given as one path, read as meant.

def test_spec_parameters_without_a_weight():
    # the form docs/reliability.md gives for train --opponents
    assert parse_mix("pimc:samples=8,rollout=greedy") == [("pimc:samples=8,rollout=greedy", 1.0)]
    assert parse_mix("pimc:samples=8,random:3") == [("pimc:samples=8", 0.25), ("random", 0.75)]
    assert parse_mix("pimc:samples=8,rollout=greedy:0.5,random:0.5")[0] == ("pimc:samples=8,rollout=greedy", 0.5)
    with pytest.raises(OpponentMixError, match="not a number"):
        parse_mix("random:lots")
    PopeJoanGymEnv(opponents="pimc:samples=2").reset(seed=0)


def test_snapshots_as_one_path_named():
    with pytest.raises(PopeJoanError, match=r"snapshots=\[path\]"):
        PopeJoanGymEnv(opponents="self", snapshots=str(shipped_model()))
    PopeJoanGymEnv(opponents="self", snapshots=[shipped_model()]).reset(seed=0)


# A player's seed is None or a non-negative integer: anything else is refused by name, and a Generator is never
# taken over (the player drawing from the caller's own stream).

SPECS = ["random", "stops_first", "pimc:samples=2", "shipped", "exploit:worlds=2:draws=2:random"]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("bad", [-1, 2.5, "x", True], ids=repr)
def test_bad_seed_refused(spec, bad):
    with pytest.raises(PopeJoanError, match="seed"):
        make_player(spec, seed=bad)


@pytest.mark.parametrize("spec", SPECS)
def test_generator_refused_and_not_advanced(spec):
    mine = np.random.default_rng(0)
    state = mine.bit_generator.state
    with pytest.raises(PopeJoanError, match="seed"):
        make_player(spec, seed=mine)
    assert mine.bit_generator.state == state


def test_reset_and_load_player_refuse_too():
    with pytest.raises(PopeJoanError, match="seed"):
        RandomPlayer(seed=0).reset(-1)
    with pytest.raises(PopeJoanError, match="seed"):
        load_player(shipped_model(), seed=np.random.default_rng(0))
    assert make_player("random", seed=np.uint64(2**64 - 1)).name == "random"  # numpy integers are integers


# Deal.from_position takes the batch engine's uint64 hand bitmasks as the bitmasks they are.

def test_numpy_bitmasks_are_bitmasks():
    batch = BatchDeals(num_deals=1, rng=np.random.default_rng(0), lone_leads=False)
    hands = list(batch.state.hands[0])  # np.uint64 each
    deal = batch.to_deal(0)
    again = Deal.from_position(hands, list(deal.dead), [0] * 4, to_act=deal.to_act, dealer=deal.dealer)
    assert again.hands == deal.hands
    with pytest.raises(InvalidDealError, match="not cards of the pack"):
        Deal.from_position([np.uint64(1 << 20)] + hands[1:], list(deal.dead), [0] * 4, to_act=deal.to_act)


# illegal_reward and balance_range: a PopeJoanError naming them for anything but what they mean, never a NaN reward.

BAD_REWARDS = [float("nan"), float("inf"), "x", None, True, 10**400, [1]]


@pytest.mark.parametrize("bad", BAD_REWARDS, ids=repr)
def test_aec_illegal_reward_refused(bad):
    with pytest.raises(PopeJoanError, match="illegal_reward"):
        env(illegal_reward=bad)


@pytest.mark.parametrize("bad", BAD_REWARDS, ids=repr)
def test_gym_illegal_reward_refused(bad):
    with pytest.raises(PopeJoanError, match="illegal_reward"):
        PopeJoanGymEnv(illegal_reward=bad)


def test_aec_illegal_reward_numpy_and_int_accepted():
    e = env(illegal_reward=np.float32(-7))
    e.reset(seed=1)
    obs = e.last()[0]
    e.step(int(np.flatnonzero(obs["action_mask"] == 0)[0]))
    assert -7.0 in e.rewards.values()


@pytest.mark.parametrize("bad", [(0, float("inf")), (float("nan"), 3), "12", (1.7, 3.9), (True, 5), (1, 2, 3), 5])
def test_balance_range_refused(bad):
    with pytest.raises(PopeJoanError, match="balance_range"):
        PopeJoanGymEnv(balance_range=bad)


def test_balance_range_of_integers_accepted():
    assert PopeJoanGymEnv(balance_range=(np.int64(-24), 72)).balance_range == (-24, 72)
    assert PopeJoanGymEnv(balance_range=[0, 0]).balance_range == (0, 0)


# Small public entry points: each bad argument a PopeJoanError naming it, never a KeyError, IndexError,
# AttributeError or a numpy index read another way.

@pytest.mark.parametrize("make", [raw_env, env])
@pytest.mark.parametrize("method", ["observe", "observation_space", "action_space", "seat_view", "seat_of"])
@pytest.mark.parametrize("agent", ["player_9", 0, None])
def test_unknown_agent_named(make, method, agent):
    e = make()
    e.reset(seed=1)
    with pytest.raises(PopeJoanError, match="unknown agent"):
        getattr(e.unwrapped if method in ("seat_view", "seat_of") else e, method)(agent)


def test_batch_slots_checked():
    batch = BatchDeals(num_deals=3, rng=np.random.default_rng(0), record=True)
    for method in ("to_deal", "dead_of", "plays_of", "deal_record"):
        for bad in (-1, 3, "0", 0.5, True):
            with pytest.raises(PopeJoanError, match="slot"):
                getattr(batch, method)(bad)
    assert batch.dead_of(np.int64(2)) == batch.dead_of(2)
    for bad in (5, None, np.random.RandomState(0)):
        with pytest.raises(PopeJoanError, match="Generator"):
            batch.random_actions(bad)


@pytest.mark.parametrize("bad", [5, [1], "rng"])
def test_deal_and_session_rng_checked(bad):
    with pytest.raises(PopeJoanError, match="Generator"):
        Deal.new(rng=bad)
    with pytest.raises(PopeJoanError, match="Generator"):
        Session(rng=bad)


def test_batch_vec_env_size_refused_when_built():
    with pytest.raises(PopeJoanError, match="num_envs"):
        BatchVecEnv(3_000_000)


# Sessions of the vector envs are bounded as every env's episodes are (MAX_EPISODE_DEALS): the Box holds them.

@pytest.mark.parametrize("length", [1001, 10**9, 0, 2.5])
def test_session_length_bounded(length):
    from popejoan_env.envs.gymnasium_vector_env import PopeJoanVectorEnv

    with pytest.raises(PopeJoanError, match=r"session_length must be an integer 1\.\.1,000"):
        PopeJoanVectorEnv(2, session_length=length)
    with pytest.raises(PopeJoanError, match=r"session_length must be an integer 1\.\.1,000"):
        BatchDeals(players=4, num_deals=2, rng=np.random.default_rng(0), session_length=length)
    assert PopeJoanVectorEnv(2, session_length=1000).session_length == 1000


# A path that is no path (None, a number) is refused by name where a model or a records file is read or written.

@pytest.mark.parametrize("bad", [None, 3, 2.5])
def test_a_model_path_that_is_no_path_is_refused(bad):
    with pytest.raises(ModelFileError, match="a model path must be a str or os.PathLike"):
        load_player(bad)


@pytest.mark.parametrize("bad", [None, 3])
def test_a_records_path_that_is_no_path_is_refused(bad):
    from popejoan_env.errors import RecordError
    from popejoan_env.record import RecordWriter, read_records

    with pytest.raises(RecordError, match="a records path must be a str or os.PathLike"):
        RecordWriter(bad)
    with pytest.raises(RecordError, match="a records path must be a str or os.PathLike"):
        list(read_records(bad))
