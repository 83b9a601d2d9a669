"""The batch VecEnv (``popejoan_env.envs.sb3_vec_env``): masks, observations, rewards and episodes as the Gymnasium view
defines them, the vectorised opponents equal to the scalar players, snapshots answered in one forward per round,
MaskablePPO on it, seeding, and bad input."""

from __future__ import annotations

import copy
import pickle
import os
import sys

import numpy as np
import pytest
import torch

import popejoan_env.envs.sb3_vec_env as vec_env
import popejoan_env.search.scripted_kernels as scripted_kernels
from popejoan_env.batch import BatchDeals
from popejoan_env.envs.sb3_vec_env import BatchVecEnv, make_batch_vec_env
from popejoan_env.errors import IllegalActionError, MissingDependencyError, PopeJoanError
from popejoan_env.observation import encode
from popejoan_env.players import PoolHunterPlayer, StopsFirstPlayer, make_player
from popejoan_env.nets.model_file import model_metadata, save_model
from popejoan_env.nets.policy import Policy, policy_from_state
from popejoan_env.players.learned import LearnedPlayer
from popejoan_env.players.pool_hunter import lead_values, lead_values_batch
from popejoan_env.search.scripted_kernels import compiled_leads
from popejoan_env.rules import Rules
from popejoan_env.seat_view import seat_view

torch.set_num_threads(1)

RULES = {
    "modern": Rules.preset("modern"),
    "victorian": Rules.preset("victorian"),
    "ace_high,sees_dead": Rules().replace(ace_high=True, dealer_sees_dead_hand=True),
    "victorian,ace_high,halves": Rules.preset("victorian").replace(ace_high=True, pair_split="halves"),
    "all_round,sees_dead": Rules().replace(deal="all_round", dealer_sees_dead_hand=True),
}


def positions(rules: Rules, players: int, deals: int = 32, rounds: int = 6, seed: int = 0):
    """Batches of random positions (each waiting for a lead), with their legal masks."""
    batch = BatchDeals(rules, players=players, num_deals=deals, rng=np.random.default_rng(seed))
    rng = np.random.default_rng(seed + 1)
    for _ in range(rounds):
        yield batch, batch.legal_mask()
        batch.step(batch.random_actions(rng))


def views(batch: BatchDeals) -> list:
    """The SeatView of the seat to act in every deal of the batch (through the scalar engine)."""
    return [seat_view(batch.to_deal(i), int(batch.to_act[i])) for i in range(batch.num_deals)]


def random_policy(seed: int = 0):
    """A random actor network of the right shape (and its metadata), as a numpy Policy."""
    gen = torch.Generator().manual_seed(seed)
    state = {
        "mlp_extractor.policy_net.0.weight": torch.randn(32, 1285, generator=gen) * 0.1,
        "mlp_extractor.policy_net.0.bias": torch.randn(32, generator=gen),
        "action_net.weight": torch.randn(52, 32, generator=gen),
        "action_net.bias": torch.randn(52, generator=gen),
    }
    return policy_from_state(state, model_metadata("modern", [4], [32]))


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> str:
    """An untrained MaskablePPO saved as a model file (a self-play snapshot)."""
    from sb3_contrib import MaskablePPO

    path = str(tmp_path_factory.mktemp("snap") / "snap.zip")
    vec = BatchVecEnv(2, opponents="random")
    model = MaskablePPO("MlpPolicy", vec, n_steps=8, batch_size=8, device="cpu", seed=0,
                        policy_kwargs=dict(net_arch=dict(pi=[16], vf=[16])))
    return save_model(model, path, model_metadata("modern", [4], [16]))


def rollout(vec: BatchVecEnv, steps: int, seed: int = 0):
    """Random legal play: yields (masks before, actions, obs, rewards, dones, infos) per step."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        masks = vec.action_masks()
        actions = (rng.random(masks.shape) * masks).argmax(axis=1)
        yield (masks, actions, *vec.step(actions))


# ---------------------------------------------------------------------- the vectorised opponents
@pytest.mark.parametrize("rules", RULES.values(), ids=RULES.keys())
def test_scripted_leads_equal_the_scalar_players(rules: Rules) -> None:
    players = {name: make_player(name) for name in ("lowest", "stops_first", "pool_hunter")}
    checked = 0
    for n in (3, 4, 5, 6, 8):
        for batch, legal in positions(rules, n, seed=n):
            rows = np.arange(batch.num_deals)
            got = {"lowest": make_player("lowest").act_batch(batch, rows, legal),
                   "stops_first (compiled)": make_player("stops_first").act_batch(batch, rows, legal),
                   "pool_hunter (compiled)": make_player("pool_hunter").act_batch(batch, rows, legal)}
            values = lead_values_batch(batch, rows, legal)
            for i, view in enumerate(views(batch)):
                for name, cards in got.items():
                    assert cards[i] == players[name.split()[0]].act(view), (name, n, i)
                want = lead_values(view)
                assert {c: values[i, c] for c in np.flatnonzero(np.isfinite(values[i]))} == want  # to the bit
                checked += 1
    assert checked > 900


def test_random_act_batch_draws_as_random_player_act_sharing_the_generator() -> None:
    player, batched = make_player("random"), make_player("random")
    for batch, legal in positions(Rules.preset("modern"), 5, deals=64):
        rng = np.random.default_rng(11)
        player.rng = copy.deepcopy(rng)
        batched.rng = rng
        got = batched.act_batch(batch, np.arange(batch.num_deals), legal)
        assert [player.act(v) for v in views(batch)] == got.tolist()
    lone = np.zeros((3, 52), dtype=bool)
    lone[:, [5, 9, 30]] = True
    lone[1, [9, 30]] = False
    batched.rng = rng = np.random.default_rng(0)
    state = copy.deepcopy(rng.bit_generator.state)
    batched.act_batch(None, np.arange(1), lone[1:2])
    assert rng.bit_generator.state == state  # a lone legal card takes no draw, as ScriptedPlayer.act


def test_the_learned_act_batch_picks_what_the_learned_player_picks() -> None:
    policy = random_policy()
    best = LearnedPlayer(policy, deterministic=True)
    for batch, legal in positions(Rules.preset("modern"), 4, deals=48, rounds=4):
        rows = np.arange(batch.num_deals)
        got = best.act_batch(batch, rows, legal)
        assert got.tolist() == [best.act(v) for v in views(batch)]
        sampler = LearnedPlayer(policy, deterministic=False, rng=np.random.default_rng(1))
        sampled = sampler.act_batch(batch, rows, legal)
        assert legal[rows, sampled].all()
        again = LearnedPlayer(policy, deterministic=False, rng=np.random.default_rng(1)).act_batch(batch, rows, legal)
        assert (sampled == again).all()
        # the same draws as act deal by deal: one uniform per deal with a choice, in order
        one_by_one = LearnedPlayer(policy, deterministic=False, rng=np.random.default_rng(1))
        assert [one_by_one.act(v) for v in views(batch)] == sampled.tolist()


# ---------------------------------------------------------------------- the env
def test_masks_and_observations_are_the_learners() -> None:
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    vec = make_batch_vec_env(12, 5, players="3,4,6", opponents="stops_first:0.6,random:0.2,pool_hunter:0.2",
                             balance_range=(-24, 72))
    obs = vec.reset()
    assert is_masking_supported(vec)
    for step in range(25):
        masks = get_action_masks(vec)
        assert (masks == vec.action_masks()).all()
        for i in range(vec.num_envs):
            batch, slot, learner = vec.learner_slot(i)
            deal = batch.to_deal(slot)
            assert deal.to_act == learner
            assert np.flatnonzero(masks[i]).tolist() == list(seat_view(deal, learner).legal)
            assert (obs[i] == encode(deal, learner)).all()
        actions = (np.random.default_rng(step).random(masks.shape) * masks).argmax(axis=1)
        obs, *_ = vec.step(actions)


def test_rewards_sum_to_the_learners_deal_delta_and_infos_are_complete() -> None:
    scale = 0.1
    vec = make_batch_vec_env(16, 2, players=[4, 5], opponents="stops_first:0.5,random:0.5", reward_scale=scale,
                             balance_range=(-24, 72))
    vec.reset()
    reports: list = []
    for tab in vec._tables:  # every deal the batches finish, with the slot and the env that played it
        step = tab.batch.step

        def spy(actions, which=None, _step=step, _tab=tab):
            fin = _step(actions, which=which)
            reports.append((_tab, fin, _tab.env.copy(), _tab.learner.copy()))
            return fin

        tab.batch.step = spy
    total = np.zeros(vec.num_envs)
    episodes = 0
    for _, _, _, rewards, dones, infos in rollout(vec, 60):
        total += rewards
        for i in np.flatnonzero(dones):
            info = infos[i]
            deltas = [fin.delta[j, learner[slot]] for tab, fin, env, learner in reports
                      for j, slot in enumerate(fin.slots) if env[slot] == i]
            assert deltas[0] == info["counters"]  # the first deal to end in the env's slot: its episode
            assert total[i] == pytest.approx(info["counters"] * scale, abs=1e-4)
            assert info["episode"]["r"] == pytest.approx(total[i], abs=1e-4)
            assert info["episode"]["counters"] == info["counters"] and info["episode"]["l"] >= 1
            assert info["players"] in (4, 5) and info["opponents"][info["learner"]] == "learner"
            assert set(info["opponents"]) <= {"learner", "stops_first", "random"}
            assert info["terminal_observation"].shape == (1285,)
            total[i] = 0
            episodes += 1
        reports.clear()
    assert episodes > 100


def test_oracle_observations_append_the_hidden_hands_of_the_learners_deal() -> None:
    from popejoan_env.batch_observation import HIDDEN_SIZE
    from popejoan_env.observation import OBS_SIZE
    from test_batch_observation import scalar_hidden

    vec = make_batch_vec_env(10, 6, players="3,5,8", opponents="stops_first:0.5,random:0.5", oracle=True)
    plain = make_batch_vec_env(10, 6, players="3,5,8", opponents="stops_first:0.5,random:0.5")
    assert vec.observation_space.shape == (OBS_SIZE + HIDDEN_SIZE,)
    obs, same = vec.reset(), plain.reset()
    finals = {}
    for tab in vec._tables:  # the finished deals, to check the terminal observations against
        def spy(actions, which=None, _step=tab.batch.step, _tab=tab):
            from popejoan_env.record import replay_record

            fin = _step(actions, which=which)
            for j, slot in enumerate(fin.slots.tolist()):
                if int(_tab.env[slot]) >= 0:
                    finals[int(_tab.env[slot])] = (replay_record(fin.records[j]), int(_tab.learner[slot]))
            return fin

        tab.batch.step = spy
    ended = 0
    for step in range(30):
        assert np.array_equal(obs[:, :OBS_SIZE], same), "the oracle changes nothing but the extra columns"
        for i in range(vec.num_envs):
            batch, slot, learner = vec.learner_slot(i)
            assert np.array_equal(obs[i, OBS_SIZE:], scalar_hidden(batch.to_deal(slot), learner))
        actions = (np.random.default_rng(step).random((10, 52)) * vec.action_masks()).argmax(axis=1)
        obs, rewards, dones, infos = vec.step(actions)
        same, plain_rewards, plain_dones, _ = plain.step(actions)
        assert np.array_equal(rewards, plain_rewards) and np.array_equal(dones, plain_dones)
        for i in np.flatnonzero(dones):
            deal, learner = finals[i]
            assert np.array_equal(infos[i]["terminal_observation"],
                                  np.concatenate([encode(deal, learner), scalar_hidden(deal, learner)]))
            ended += 1
        finals.clear()
    assert ended > 5


def test_terminal_observation_is_the_finished_deal_seen_by_the_learner() -> None:
    vec = make_batch_vec_env(6, 4, opponents="random")
    vec.reset()
    for tab in vec._tables:
        step = tab.batch.step

        def spy(actions, which=None, _step=step, _tab=tab):
            fin = _step(actions, which=which)
            spy.last = fin  # type: ignore[attr-defined]
            for j, slot in enumerate(fin.slots.tolist()):
                i = int(_tab.env[slot])
                if i >= 0 and vec._decided[i]:
                    from popejoan_env.record import replay_record

                    deal = replay_record(fin.records[j])
                    assert deal.done
                    spy.final[i] = encode(deal, int(_tab.learner[slot]))  # type: ignore[attr-defined]
            return fin

        spy.final = {}  # type: ignore[attr-defined]
        tab.batch.step = spy
    ended = 0
    for _, _, obs, _, dones, infos in rollout(vec, 30):
        for i in np.flatnonzero(dones):
            assert (infos[i]["terminal_observation"] == vec._tables[0].batch.step.final[i]).all()
            ended += 1
        vec._tables[0].batch.step.final.clear()
    assert ended > 10
    fast = make_batch_vec_env(6, 4, opponents="random", terminal_observation=False)
    fast.reset()
    for *_, dones, infos in rollout(fast, 10):
        assert not any("terminal_observation" in info for info in infos)


def test_episode_that_gives_the_learner_no_decision_is_dealt_again() -> None:
    # victorian: a turned-up Pope ends the deal at once (R5); those deals belong to no episode
    vec = make_batch_vec_env(32, 7, players=3, rules="victorian", opponents="random", lone_leads=True)
    vec.reset()
    for masks, *_ in rollout(vec, 40):
        assert (masks.sum(axis=1) >= 2).all()  # every step is a real decision


def test_a_model_file_in_the_mix_plays_its_scalar_moves_in_one_forward_per_round(snapshot: str,
                                                                                monkeypatch) -> None:
    forwards = []
    real = Policy.logits
    monkeypatch.setattr(Policy, "logits", lambda self, obs: forwards.append(len(obs)) or real(self, obs))
    vec = make_batch_vec_env(16, 2, players="3,6", opponents=f"{snapshot}:0.7,random:0.3")
    vec.reset()
    checked = 0
    for step in range(16):
        for tab in vec._tables:
            waiting = (tab.batch.to_act != tab.learner) & ~tab.batch.done
            rows = np.flatnonzero(waiting & (tab.env != vec_env._FREE))  # the spare episodes' opponents
            if not len(rows):
                continue
            seats = tab.batch.to_act[rows]
            forwards.clear()
            got = vec._opponent_leads(tab, rows, seats)
            picks = tab.pick[rows, seats]
            model_rows = [j for j in range(len(rows)) if vec.pool.names[picks[j]] == snapshot]
            assert forwards == ([len(model_rows)] if model_rows else [])
            for j in model_rows:
                player = vec.pool.scripted[snapshot][int(seats[j])]
                assert got[j] == player.act(seat_view(tab.batch.to_deal(int(rows[j])), int(seats[j])))
                checked += 1
        vec.step(vec.action_masks().argmax(axis=1))
    assert checked > 20


def test_sessions_end_episodes_where_the_batch_ends_them() -> None:
    rules = Rules().replace(allow_credit=False)
    # balances just above the dressing: dealers soon go broke and end their sessions early
    vec = make_batch_vec_env(8, 3, rules=rules, opponents="random", deals=3, balance_range=(15, 20))
    vec.reset()
    total = np.zeros(vec.num_envs)
    ends = 0
    for _ in range(80):
        before = {i: vec.learner_slot(i)[:2] for i in range(vec.num_envs)}
        before = {i: (batch, slot, batch.session_ids[slot]) for i, (batch, slot) in before.items()}
        masks = vec.action_masks()
        _, rewards, dones, infos = vec.step(masks.argmax(axis=1))
        total += rewards
        for i in range(vec.num_envs):
            batch, slot, session = before[i]
            over = batch.session_ids[slot] != session
            assert dones[i] == over
            if dones[i]:
                assert total[i] == pytest.approx(infos[i]["counters"])
                total[i] = 0
                ends += 1
    assert ends > 10


def test_snapshots_answer_every_deal_of_a_round_in_one_forward(snapshot: str, monkeypatch) -> None:
    vec = make_batch_vec_env(24, 1, opponents="self", snapshots=[snapshot], terminal_observation=False)
    calls: list[int] = []
    rounds: list[int] = []
    logits = Policy.logits
    monkeypatch.setattr(Policy, "logits", lambda policy, obs: calls.append(len(obs)) or logits(policy, obs))
    leads = BatchVecEnv._opponent_leads

    def count(self, tab, rows, seats):
        rounds.append(len(rows))
        return leads(self, tab, rows, seats)

    monkeypatch.setattr(BatchVecEnv, "_opponent_leads", count)
    vec.reset()
    for _ in rollout(vec, 10):
        pass
    assert calls == rounds  # one snapshot: exactly one forward per round, for every deal where it is to act
    assert sum(calls) > 3 * len(calls)


def test_add_snapshot_through_env_method_and_the_self_share(snapshot: str) -> None:
    vec = make_batch_vec_env(8, 1, opponents="random:0.5,self:0.5")
    with pytest.raises(PopeJoanError, match="no learner snapshot"):
        vec.reset()
    assert vec.env_method("add_snapshot", snapshot) == [None] * 8
    assert vec.get_attr("snapshot_paths") == [[snapshot]] * 8
    vec.reset()
    names = set()
    for *_, dones, infos in rollout(vec, 20):
        for i in np.flatnonzero(dones):
            names |= set(infos[i]["opponents"])
    assert names == {"learner", "random", "self:snap.zip"}


def test_same_seed_same_run_other_seed_other_run() -> None:
    def run(seed: int) -> list:
        vec = make_batch_vec_env(10, seed, players="3,4", opponents="stops_first:0.4,random:0.3,pool_hunter:0.3",
                                 balance_range=(-24, 72))
        first = vec.reset()
        out = [first]
        for masks, actions, obs, rewards, dones, infos in rollout(vec, 30, seed=2):
            out += [obs, rewards, dones, [(i.get("counters"), i.get("opponents")) for i in infos]]
        return out

    a, b, c = run(4), run(4), run(5)
    for x, y in zip(a, b):
        assert np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
    assert not all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y for x, y in zip(a, c))


def test_the_views_page_names_the_gymnasium_keywords_the_batch_env_does_not_take() -> None:
    # the page said BatchVecEnv(n, **PopeJoanGymEnv keywords); three of them are a TypeError there
    import inspect
    import pathlib

    from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv

    missing = sorted(set(inspect.signature(PopeJoanGymEnv).parameters) - set(inspect.signature(BatchVecEnv).parameters))
    assert missing == ["illegal_action", "illegal_reward", "render_mode"]
    page = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "views.md").read_text()
    section = page.split("## The SB3 batch VecEnv")[1].split("\n## ")[0]
    assert all(f"`{name}`" in section for name in missing), missing
    with pytest.raises(TypeError, match="illegal_action"):
        BatchVecEnv(2, illegal_action="terminate")


def test_bad_input_is_refused_and_changes_nothing() -> None:
    vec = make_batch_vec_env(4, 0, opponents="random")
    with pytest.raises(PopeJoanError, match="before reset"):
        vec.step(np.zeros(4, dtype=np.int64))
    with pytest.raises(PopeJoanError, match="num_envs"):
        BatchVecEnv(0)
    with pytest.raises(PopeJoanError, match="balance_range"):
        BatchVecEnv(2, balance_range=(5, 1))
    with pytest.raises(PopeJoanError, match="seed"):
        vec.seed(-1)
    vec.reset()
    twin = make_batch_vec_env(4, 0, opponents="random")
    twin.reset()
    masks = vec.action_masks()
    bad = masks.argmax(axis=1)
    bad[2] = int(np.flatnonzero(~masks[2])[0])
    for actions in (bad, bad[:3], bad.astype(float), np.full(4, 99)):
        with pytest.raises(IllegalActionError):
            vec.step(actions)
    good = masks.argmax(axis=1)
    a, b = vec.step(good), twin.step(good)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])
    with pytest.raises(AttributeError):
        vec.env_method("render")


def test_a_balance_range_no_dealer_could_deal_from_is_refused_as_the_gymnasium_view_refuses_it() -> None:
    # was: accepted, and dealers drawn at 0..5 counters paid the 15 of the dressing without credit (R1 forbids it)
    no_credit = {"allow_credit": False}
    with pytest.raises(PopeJoanError, match="below the dressing"):
        BatchVecEnv(2, rules=no_credit, balance_range=(0, 5))
    with pytest.raises(PopeJoanError, match="below the dressing"):
        make_batch_vec_env(2, 0, rules=no_credit, balance_range=(14, 30))
    vec = make_batch_vec_env(4, 0, opponents="random", rules=no_credit, balance_range=(15, 30))
    vec.reset()
    vec.step(vec.action_masks().argmax(axis=1))


@pytest.mark.slow
def test_maskable_ppo_learns_2k_steps_on_it(snapshot: str) -> None:
    from sb3_contrib import MaskablePPO

    vec = make_batch_vec_env(16, 0, players="3,4", opponents="stops_first:0.5,pool_hunter:0.2,self:0.3",
                             snapshots=[snapshot], reward_scale=0.1, terminal_observation=False)
    model = MaskablePPO("MlpPolicy", vec, n_steps=64, batch_size=256, n_epochs=2, seed=0, device="cpu",
                        policy_kwargs=dict(net_arch=dict(pi=[32], vf=[32])))
    model.learn(2048)
    assert model.num_timesteps >= 2048
    assert len(model.ep_info_buffer) == model.ep_info_buffer.maxlen  # full: hundreds of episodes ended
    assert all("counters" in e and e["l"] >= 1 for e in model.ep_info_buffer)


@pytest.mark.slow
def test_train_ppo_runs_on_the_batch_env(tmp_path) -> None:
    from popejoan_env.training import ppo as train_ppo

    summary = train_ppo.main([
        "--run-name", "b", "--output-dir", str(tmp_path), "--seed", "2", "--vec-env", "batch",
        "--total-timesteps", "1024", "--n-envs", "32", "--n-steps", "16", "--batch-size", "256", "--n-epochs", "1",
        "--net-arch", "16", "--opponents", "random:0.5,self:0.5", "--players", "3,4", "--snapshot-interval", "512",
        "--imitate-deals", "0", "--actor", "mlp",
        "--eval-interval", "0", "--final-eval-deals", "2", "--final-eval-opponents", "random",
        "--checkpoint-interval", "0", "--no-progress", "--no-tensorboard", "--torch-threads", "1",
    ])
    assert summary["timesteps"] >= 1024 and summary["args"]["vec_env"] == "batch"
    assert os.path.exists(tmp_path / "b" / "model.zip")
    assert len(os.listdir(tmp_path / "b" / "checkpoints")) >= 2  # the first snapshot and one at 512 steps


def test_the_scalar_players_give_the_run_the_compiled_ones_give(monkeypatch) -> None:
    def run() -> list:
        vec = make_batch_vec_env(12, 9, players=4, opponents="stops_first:0.5,pool_hunter:0.5",
                                 terminal_observation=False)
        out = [vec.reset()]
        for _, _, obs, rewards, dones, _ in rollout(vec, 15, seed=3):
            out += [obs, rewards, dones]
        return out

    compiled = run()
    # Without their batched form the players answer through act on each seat's view, as a scalar Deal.
    monkeypatch.delattr(StopsFirstPlayer, "act_batch")
    monkeypatch.delattr(PoolHunterPlayer, "act_batch")
    assert all(np.array_equal(a, b) for a, b in zip(compiled, run()))


def test_without_numba_the_compiled_players_say_what_to_install(monkeypatch) -> None:
    batch = BatchDeals(Rules.preset("modern"), 4, 2, rng=np.random.default_rng(0))
    rows = np.arange(2)
    monkeypatch.setattr(scripted_kernels, "_COMPILED", [])  # not compiled yet
    monkeypatch.setitem(sys.modules, "numba", None)  # and numba missing
    for player in ("stops_first", "pool_hunter"):
        with pytest.raises(MissingDependencyError, match="pip install numba"):
            compiled_leads(player, batch, rows, batch.legal_mask())


def test_oracle_critic_reads_the_hands_and_the_saved_policy_does_not(tmp_path) -> None:
    from sb3_contrib import MaskablePPO

    from popejoan_env.nets.model_file import model_metadata, save_model
    from popejoan_env.observation import OBS_SIZE
    from popejoan_env.players.learned import load_player
    from popejoan_env.sb3_policies import OraclePolicy

    torch.manual_seed(2)
    train = make_batch_vec_env(32, 2, opponents="random", oracle=True)
    model = MaskablePPO(OraclePolicy, train, n_steps=16, batch_size=256, n_epochs=1, seed=2, device="cpu",
                        policy_kwargs=dict(net_arch=dict(pi=[16], vf=[16])))
    model.learn(total_timesteps=1024)
    path = save_model(model, str(tmp_path / "oracle.zip"), model_metadata("modern", [4], [16], activation="tanh"))
    vec = make_batch_vec_env(8, 3, opponents="random", oracle=True)
    obs = torch.as_tensor(vec.reset())
    other = obs.clone()
    other[:, OBS_SIZE:] = torch.as_tensor(np.random.default_rng(0).random(other[:, OBS_SIZE:].shape) < 0.2)
    policy = MaskablePPO.load(path, device="cpu").policy
    with torch.no_grad():
        logits = policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(obs)))
        moved = policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(other)))
        values, moved_values = policy.predict_values(obs), policy.predict_values(other)
    assert torch.equal(logits, moved), "the policy never reads the hidden hands"
    assert not torch.equal(values, moved_values), "the critic does"
    player = load_player(path)  # an ordinary actor: the numpy player reads it
    assert np.allclose(player.policy.logits(obs[:, :OBS_SIZE].numpy()), logits.numpy(), atol=1e-5)


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copy_mid_game_goes_on_as_the_original_and_leaves_it_alone(how: str) -> None:
    # The batch holds its compiled kernels (a module) and is copied as its data: the copy plays the same deals,
    # opponents and draws from here, and stepping it moves nothing of the original.
    vec = BatchVecEnv(6, opponents="stops_first:0.5,random:0.5", deals=2)
    vec.seed(3)
    vec.reset()
    for _ in range(3):
        vec.step(vec.action_masks().argmax(axis=1))
    twin = copy.deepcopy(vec) if how == "deepcopy" else pickle.loads(pickle.dumps(vec))
    before = vec.action_masks().copy()
    twin.step(twin.action_masks().argmax(axis=1))  # the twin runs ahead one step, then both go on alike
    assert (vec.action_masks() == before).all()
    vec.step(vec.action_masks().argmax(axis=1))
    for step in range(40):
        actions = (np.random.default_rng(step).random((6, 52)) * vec.action_masks()).argmax(axis=1)
        ours, theirs = vec.step(actions), twin.step(actions)
        for a, b in zip(ours[:3], theirs[:3]):
            np.testing.assert_array_equal(a, b)
        assert [i.get("deal_delta") for i in ours[3]] == [i.get("deal_delta") for i in theirs[3]]
