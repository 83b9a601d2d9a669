"""The docs' "Recipes for other clients" (``docs/views.md``), each run here: PettingZoo's turn-based parallel converter on the env, why
PettingZoo's SB3 action-mask tutorial wrapper must not drive it, and the learner view that gives SB3 the right reward.

The page's two code blocks (``<!-- recipe-parallel -->``, ``<!-- recipe-learner -->``) are run as they stand
there, in this process; the other tests pin the behaviour the page states, with numbers.
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from pettingzoo.utils.conversions import aec_to_parallel, turn_based_aec_to_parallel
from test_docs import DOCS, block_after

from popejoan_env import env
from popejoan_env.envs.pettingzoo_aec import raw_env
from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv


def maskable_ppo() -> Any:
    """sb3-contrib's MaskablePPO, torch on one thread; the test skips without the train extra."""
    torch = pytest.importorskip("torch", reason="pip install torch==2.13.0 && pip install -e '.[train]'")
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="pip install -e '.[train]'")
    torch.set_num_threads(1)
    return sb3_contrib.MaskablePPO


VIEWS = DOCS / "views.md"
"""The page that holds the recipes."""


def run_recipe_block(marker: str) -> dict[str, Any]:
    """Run the code block after ``<!-- marker -->`` on the recipes page in this process; its variables."""
    namespace: dict[str, Any] = {"__name__": f"recipe_{marker.replace('-', '_')}"}
    exec(compile(block_after(marker, VIEWS), f"docs/views.md <!-- {marker} -->", "exec"), namespace)  # noqa: S102
    return namespace


def session_deltas(e: Any) -> dict[str, int]:
    """Each agent's counters over the episode's deals, as the engine recorded them (``records()[k]["delta"]``)."""
    records = e.unwrapped.records()
    return {agent: sum(r["delta"][seat] for r in records) for seat, agent in enumerate(e.possible_agents)}


# ------------------------------------------------------------------ the parallel API
def test_the_parallel_recipe_runs_and_its_rewards_are_the_deltas(capsys) -> None:
    ns = run_recipe_block("recipe-parallel")
    par, totals = ns["par"], ns["totals"]
    assert par.agents == [] and len(par.unwrapped.records()) == 1
    assert totals == {a: float(d) for a, d in session_deltas(par).items()}
    assert any(totals.values())  # a deal moves counters: the comparison is not of zeros
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == str([r["delta"] for r in par.unwrapped.records()])


@pytest.mark.parametrize(("players", "rules"), [(3, "modern"), (5, "victorian"), (8, "modern")])
def test_turn_based_parallel_plays_whole_sessions(players: int, rules: str) -> None:
    """Every live agent gets an entry (the others a value no env would take); masks, rewards and spaces are ours."""
    par = turn_based_aec_to_parallel(env(players=players, rules=rules, deals=2))
    raw = par.unwrapped
    fresh = raw_env(players=players, rules=rules)
    for agent in par.possible_agents:
        assert par.observation_space(agent) is raw.observation_space(agent)
        assert par.observation_space(agent) == fresh.observation_space(agent)
        assert par.action_space(agent) == fresh.action_space(agent) == gym.spaces.Discrete(52)
    assert par.state_space == fresh.state_space

    rng = np.random.default_rng(players)
    obs, infos = par.reset(seed=players)
    assert all("active_agent" not in info for info in infos.values())  # why the recipe reads the masks
    totals = dict.fromkeys(par.possible_agents, 0.0)
    paid_per_deal, steps = [], 0
    while par.agents:
        assert sorted(obs) == sorted(par.agents)
        for agent in par.agents:  # the mask is the engine's legal cards for the agent to act, empty for the others
            legal = set(raw.seat_view(agent).legal)
            assert set(np.flatnonzero(obs[agent]["action_mask"]).tolist()) == legal
            assert bool(legal) == (agent == raw.agent_selection)
        actor = raw.agent_selection
        legal = np.flatnonzero(obs[actor]["action_mask"])
        actions: dict[str, Any] = dict.fromkeys(par.agents, "not an action")
        actions[actor] = int(legal[rng.integers(len(legal))])
        obs, rewards, terminations, truncations, infos = par.step(actions)
        steps += 1
        for agent, reward in rewards.items():
            totals[agent] += reward
        if any(rewards.values()):
            paid_per_deal.append([rewards[a] for a in par.possible_agents])
        if par.agents:
            assert all(infos[a]["active_agent"] == raw.agent_selection for a in par.agents)
    records = raw.records()
    assert sum(r["winner"] is not None for r in records) == 2 and steps == sum(len(r["plays"]) for r in records)
    assert all(truncations.values()) and not any(terminations.values())  # a session of K deals ends truncated
    assert totals == {a: float(d) for a, d in session_deltas(par).items()}
    if all(r["winner"] is not None for r in records):  # no deal ended at a turned-up Pope: one payment a deal
        assert paid_per_deal == [[float(x) for x in r["delta"]] for r in records]
    # After the end, PettingZoo 1.27's converter answers with four empty dicts, not the five of the API.
    assert par.step({}) == ({}, {}, {}, {})


def test_the_converter_reads_only_the_actors_action() -> None:
    """The others' entries are ignored (absent or anything: the same deal); the actor's is required."""
    plays = []
    for others in ("absent", None, -7):
        par = turn_based_aec_to_parallel(env(players=4))
        obs, _ = par.reset(seed=11)
        rng = np.random.default_rng(11)
        while par.agents:
            actor = next(a for a in par.agents if obs[a]["action_mask"].any())
            legal = np.flatnonzero(obs[actor]["action_mask"])
            actions = {} if others == "absent" else dict.fromkeys(par.agents, others)
            actions[actor] = int(legal[rng.integers(len(legal))])
            obs, *_ = par.step(actions)
        plays.append(par.unwrapped.records()[0]["plays"])
    assert plays[0] == plays[1] == plays[2] and len(plays[0]) > 10
    par = turn_based_aec_to_parallel(env(players=4))
    obs, _ = par.reset(seed=11)
    actor = par.unwrapped.agent_selection
    with pytest.raises(KeyError, match=actor):
        par.step({a: 0 for a in par.agents if a != actor})
    assert not par.unwrapped.deal.plays  # refused before a card was played


def test_aec_to_parallel_refuses_and_turn_based_accepts_silently() -> None:
    e = env(players=4)
    assert e.metadata["is_parallelizable"] is False
    with pytest.raises(AssertionError, match="is_parallelizable"):
        aec_to_parallel(e)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        par = turn_based_aec_to_parallel(e)
        par.reset(seed=0)
    assert par.unwrapped is e.unwrapped and par.metadata["is_parallelizable"] is False


# ------------------------------------------------------------------ PettingZoo's SB3 action-mask tutorial
class LastMoverStream(gym.Env):
    """One SB3 stream over an AEC env, as PettingZoo's SB3 action-mask tutorial builds it (``SB3ActionMaskWrapper``).

    Its ``step`` (the Connect Four tutorial since PettingZoo PR #1203) plays the action for the agent to act, then
    returns the observation of the agent to act next with the reward (``_cumulative_rewards``), termination,
    truncation and info of the agent that just played; ``reset`` returns the first agent's observation, and the
    mask is the agent to act's.  Written here as a plain Gymnasium env (the tutorial subclasses PettingZoo's
    ``BaseWrapper`` and stops on gymnasium > 0.29.1), with ``action_masks()`` in place of its ``ActionMasker``.
    ``log`` keeps, per step, who played and what was returned, ``older`` what the tutorial's step before that PR
    returned (``last()``: the reward of the agent to act next), ``deals`` each finished deal's record.
    """

    def __init__(self, players: int) -> None:
        self.aec = env(players=players)
        self.observation_space = self.aec.observation_space("player_0")["observation"]
        self.action_space = self.aec.action_space("player_0")
        self.log: list[tuple[str, float, bool]] = []
        self.older: list[float] = []
        self.deals: list[dict[str, Any]] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Deal; the observation of the agent to act."""
        self.aec.reset(seed=seed)
        return self.aec.observe(self.aec.agent_selection)["observation"], {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """The tutorial's step: the next agent's observation, the mover's reward, termination, truncation, info."""
        mover = self.aec.agent_selection
        self.aec.step(int(action))
        reward = float(self.aec._cumulative_rewards[mover])
        terminated, truncated = self.aec.terminations[mover], self.aec.truncations[mover]
        self.log.append((mover, reward, terminated or truncated))
        self.older.append(float(self.aec.last()[1]))
        if terminated or truncated:
            self.deals.append(self.aec.unwrapped.records()[-1])
        return (self.aec.observe(self.aec.agent_selection)["observation"], reward, terminated, truncated,
                dict(self.aec.infos[mover]))

    def action_masks(self) -> np.ndarray:
        """The legal cards of the agent to act (what the tutorial's ``action_mask`` gives ``ActionMasker``)."""
        return self.aec.observe(self.aec.agent_selection)["action_mask"].astype(bool)


def random_deals(players: int, deals: int) -> list[tuple[list[str], list[float], dict[str, Any]]]:
    """Random legal play through ``LastMoverStream``: per deal, the movers, the rewards it returned, the record.

    The tutorial's older ``step`` would have returned the very same rewards (checked at every step).
    """
    stream = LastMoverStream(players)
    rng = np.random.default_rng(players)
    out = []
    for k in range(deals):
        stream.reset(seed=1000 * players + k)
        start, done = len(stream.log), False
        while not done:
            legal = np.flatnonzero(stream.action_masks())
            *_, terminated, truncated, _ = stream.step(int(legal[rng.integers(len(legal))]))
            done = terminated or truncated
        movers, rewards, _ = zip(*stream.log[start:])
        assert stream.older[start:] == list(rewards)  # after the last card the env selects the winner
        out.append((list(movers), list(rewards), stream.deals[-1]))
    return out


# The recipes page's figures: over these 100 random deals, what the tutorial's stream summed to, and what the seats'
# own counters summed to.
TUTORIAL_STREAM_TOTALS = {3: (559, -942), 4: (1007, -918), 6: (1559, -1062)}


@pytest.mark.parametrize("players", [3, 4, 6])
def test_tutorial_wrapper_hands_back_the_last_movers_reward(players: int) -> None:
    """With 3+ seats the tutorial's stream carries the reward of whoever played last, not each mover's own.

    The tutorial is written for two-player zero-sum games (Connect Four): there the reward of whoever played last
    is minus the other player's, so the one number it returns holds the whole outcome.  With three or more seats it
    holds neither: in Pope Joan the last card is the winner's, so the stream is 0 on every card and then the
    winner's delta; each loser's payment (by the cards it still holds) never appears, and cannot be told from that
    number — a deal is not even zero-sum, counters go to and from the board.  (The game has no two-seat table, so
    the two-seat case is the reasoning above, not a run.)
    """
    returned_total = own_total = 0
    seen: dict[float, set[tuple[int, ...]]] = {}
    for movers, rewards, record in random_deals(players, 100):
        delta, winner = record["delta"], record["winner"]
        assert movers[-1] == f"player_{winner}" and rewards[-1] == delta[winner]  # the last card: the winner's delta
        assert not any(rewards[:-1])  # every other card: 0, whoever played it and whatever it lost
        for seat in range(players):
            if seat != winner and delta[seat] and f"player_{seat}" in movers:
                got = sum(r for m, r in zip(movers, rewards) if m == f"player_{seat}")
                assert got == 0 != delta[seat]  # a loser that played and lost counters: none reached the stream
        returned_total += sum(rewards)
        own_total += sum(delta)
        seen.setdefault(rewards[-1], set()).add(tuple(sorted(d for s, d in enumerate(delta) if s != winner)))
    assert (returned_total, own_total) == TUTORIAL_STREAM_TOTALS[players]
    assert returned_total > 0 > own_total
    # The same returned number came with different payments of the losers: it does not determine them.
    assert any(len(losers) > 1 for losers in seen.values())


def test_maskable_ppo_on_the_tutorial_stream_credits_every_move_with_the_winners_delta() -> None:
    """One MaskablePPO rollout at 4 seats, γ = λ = 1: the return of every move of a deal is the winner's delta."""
    MaskablePPO = maskable_ppo()  # noqa: N806 - the class
    stream = LastMoverStream(4)
    model = MaskablePPO("MlpPolicy", stream, n_steps=256, batch_size=256, n_epochs=1, gamma=1.0, gae_lambda=1.0,
                        seed=0, device="cpu", policy_kwargs=dict(net_arch=[16]))
    model.learn(256)
    buffer = model.rollout_buffer
    ends = [t for t, (_, _, done) in enumerate(stream.log[:256]) if done]
    assert len(stream.deals) >= len(ends)
    misled = begin = 0
    for end, record in zip(ends, stream.deals):
        winner_delta = record["delta"][record["winner"]]
        assert np.allclose(buffer.returns[begin:end + 1, 0], winner_delta)  # every move, whoever made it
        for t in range(begin, end + 1):
            mover = int(stream.log[t][0].removeprefix("player_"))
            misled += record["delta"][mover] < 0 < winner_delta  # a loser's move pushed towards the winner's gain
        begin = end + 1
    # The recipes page's figures (torch-seeded sampling, seed 0): 9 finished deals, 249 moves, 89 of them by a seat
    # that lost counters in its deal; in the first, every move of the seat that lost 21 had the return +17.
    assert (len(ends), begin, misled) == (9, 249, 89)
    assert stream.deals[0]["delta"] == [0, 17, 1, -21] and stream.deals[0]["winner"] == 1


# ------------------------------------------------------------------ the learner view
class EngineDelta(gym.Wrapper):
    """Adds to the last step's info the learner's counters over the episode's deals, read from the engine."""

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Step; at the episode's end, ``info["engine_delta"]``."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            session = self.env.unwrapped._session
            info = {**info, "engine_delta": sum(d.delta[info["learner"]] for d in session.deals)}
        return obs, reward, terminated, truncated, info


def test_maskable_ppo_on_the_learner_view_trains_on_the_learners_own_counters() -> None:
    """γ = λ = 1: the return of every first decision of an episode is the learner's own delta × reward_scale."""
    MaskablePPO = maskable_ppo()  # noqa: N806 - the class
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    class RolloutLog(BaseCallback):
        """Each step's info of env 0, in rollout order (the buffer's order)."""

        def __init__(self) -> None:
            super().__init__()
            self.infos: list[dict[str, Any]] = []

        def _on_step(self) -> bool:
            self.infos.append(self.locals["infos"][0])
            return True

    vec = DummyVecEnv([lambda: EngineDelta(PopeJoanGymEnv(players=[3, 4, 6], deals=2, reward_scale=0.1))])
    log = RolloutLog()
    model = MaskablePPO("MlpPolicy", vec, n_steps=256, batch_size=256, n_epochs=1, gamma=1.0, gae_lambda=1.0,
                        seed=0, device="cpu", policy_kwargs=dict(net_arch=[16]))
    model.learn(256, callback=log)
    buffer = model.rollout_buffer
    ends = [t for t, info in enumerate(log.infos[:256]) if "engine_delta" in info]
    assert len(ends) >= 5
    begin, losses, sizes = 0, 0, set()
    for end in ends:
        info = log.infos[end]
        own = 0.1 * info["engine_delta"]
        assert info["counters"] == info["engine_delta"]
        assert buffer.returns[begin, 0] == pytest.approx(own, abs=1e-4)  # the whole episode, from its first step
        assert buffer.rewards[begin:end + 1, 0].sum() == pytest.approx(own, abs=1e-4)
        losses += info["engine_delta"] < 0
        sizes.add(info["players"])
        begin = end + 1
    assert losses >= 1  # losses reach the learner, unlike on the tutorial's stream
    assert len(sizes) >= 2


def test_the_learner_recipe_runs_and_rewards_are_the_learners_counters(capsys) -> None:
    maskable_ppo()
    ns = run_recipe_block("recipe-learner")
    episodes = list(ns["model"].ep_info_buffer)
    assert len(episodes) >= 10
    for e in episodes:
        assert e["r"] == pytest.approx(0.1 * e["counters"], abs=1e-5)
    assert any(e["counters"] < 0 for e in episodes) and any(e["counters"] > 0 for e in episodes)
    assert capsys.readouterr().out.strip().startswith("[(")
