"""Third-party wrappers on popejoan's games, used as a researcher would use them: Shimmy's
``OpenSpielCompatibilityV0`` (PettingZoo's ``api_test`` and 2,000 seeded resets) and TorchRL's ``OpenSpielEnv`` on
both OpenSpiel games, and TorchRL's ``PettingZooWrapper`` (with the action masks) on the PettingZoo env.

They need the ``interop`` extra (Shimmy and TorchRL) and ``openspiel``; without them they skip, naming what to
install.  Every deal of the small game must reach a player's turn after the reset, including the 2,800 of its
16,800 deals in which nobody has a choice (``docs/small_game.md``): Shimmy's ``reset`` raised a ``KeyError`` on them
before those deals stopped once at a node with a single legal action.
"""

from __future__ import annotations

import numpy as np
import pytest

INTEROP = "pip install 'popejoan[interop,openspiel]'"
pyspiel = pytest.importorskip("pyspiel", reason=f"needs OpenSpiel: {INTEROP}")

import popejoan_env.envs.openspiel_game as og  # noqa: E402  (registers the games)
from popejoan_env.envs.pettingzoo_aec import raw_env  # noqa: E402
from popejoan_env.rules import Rules  # noqa: E402

GAMES = [og.SMALL_GAME_NAME, og.GAME_NAME]


def need(module: str) -> object:
    """The module, or a skip naming the extra that installs it."""
    return pytest.importorskip(module, reason=f"needs {module}: {INTEROP}")


def shimmy_env(name: str, config: dict | None = None) -> object:
    shimmy = need("shimmy")
    return shimmy.OpenSpielCompatibilityV0(game_name=name, config=config)


@pytest.mark.parametrize("name", GAMES)
def test_shimmy_passes_pettingzoos_api_test(name: str) -> None:
    from pettingzoo.test import api_test

    api_test(shimmy_env(name), num_cycles=200)


def test_shimmy_passes_the_api_test_where_every_deal_ends_at_its_turnup() -> None:
    # victorian: a turned-up 9D ends the deal (R5), so no card is ever played; the dealer's one action remains
    from pettingzoo.test import api_test

    config = {"preset": "victorian", "deal": "equal", "turnup": "9D"}
    api_test(shimmy_env(og.SMALL_GAME_NAME, config), num_cycles=50)
    env = shimmy_env(og.SMALL_GAME_NAME, config)
    env.reset(seed=3)
    assert env.agent_selection == "player_0" and np.flatnonzero(env.infos["player_0"]["action_mask"]).tolist() == [21]
    env.step(21)
    assert all(env.terminations.values())
    assert [env.rewards[a] for a in env.possible_agents] == env.game_state.returns()


@pytest.mark.slow
@pytest.mark.parametrize("name", GAMES)
def test_shimmy_two_thousand_seeded_resets_each_reach_a_players_turn(name: str) -> None:
    env = shimmy_env(name)
    rng = np.random.default_rng(7)
    stops = 0
    for seed in range(2000):
        env.reset(seed=seed)
        agent = env.agent_selection
        state = env.game_state
        assert env.agent_name_id_mapping[agent] == state.current_player()
        assert np.flatnonzero(env.infos[agent]["action_mask"]).tolist() == state.legal_actions()
        stops += state.stop
        if seed % 50 == 0:  # the same seed deals the same deal; the deal plays to its end through the wrapper
            history = state.history()
            env.reset(seed=seed)
            assert env.game_state.history() == history
            while not all(env.terminations.values()):
                mask = env.infos[env.agent_selection]["action_mask"]
                env.step(int(rng.choice(np.flatnonzero(mask))))
            assert [env.rewards[a] for a in env.possible_agents] == env.game_state.returns()
    if name == og.SMALL_GAME_NAME:
        assert 250 <= stops <= 420  # a sixth of the deals give no choice: each stops once all the same


@pytest.mark.parametrize("name", GAMES)
def test_torchrl_openspiel_env_resets_to_a_decision_and_plays_to_the_engines_returns(name: str) -> None:
    need("torchrl")
    from torchrl.envs import OpenSpielEnv
    from torchrl.envs.utils import check_env_specs

    env = OpenSpielEnv(name, categorical_actions=True)
    env.set_seed(1)
    check_env_specs(env)
    for _ in range(60):
        td = env.reset()
        player = int(td["current_player"])
        assert not bool(td["done"]) and 0 <= player < env._env.num_players()
        mask = env.full_action_spec["agents", "action"].mask
        assert np.flatnonzero(mask[player].numpy()).tolist() == env._env.legal_actions()
    rollout = env.rollout(200, break_when_any_done=True)
    assert bool(rollout["next", "done"][-1])
    rewards = rollout["next", "agents", "reward"][-1].flatten().tolist()
    assert rewards == env._env.returns() == [float(x) for x in env._env.deal.delta]


@pytest.mark.parametrize("rules, players", [(Rules(), 4), (Rules(pack="small"), 3)], ids=["full", "small"])
def test_torchrl_pettingzoo_wrapper_with_masks_plays_only_legal_cards(rules: Rules, players: int) -> None:
    need("torchrl")
    from torchrl.envs import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    env = PettingZooWrapper(raw_env(players=players, rules=rules), use_mask=True, categorical_actions=True, seed=0)
    check_env_specs(env)
    # raw_env refuses an illegal card with an error: 300 random masked steps over many deals all played legally
    rollout = env.rollout(300, break_when_any_done=False)
    assert rollout.batch_size[0] == 300
    assert int(rollout["next", "done"].sum()) >= 5


def test_the_wrappers_example_on_the_openspiel_page_runs() -> None:
    need("shimmy")
    need("torchrl")
    from test_docs import DOCS, run_block

    lines = run_block("openspiel-wrappers", DOCS / "openspiel.md").strip().splitlines()
    assert lines[0].startswith("player_") and len(lines) == 3
    small = eval(lines[1])  # noqa: S307 - our own printed list: the small deal's counters, seat by seat
    assert len(small) == 3 and -15 <= sum(small) < 0  # the dealer's 15 staked, some of it left on the board
    assert len(eval(lines[2])) == 4  # noqa: S307 - our own printed list: the four seats' counters


def test_the_openspiel_page_says_where_shimmy_gives_a_deals_counters() -> None:
    shimmy = need("shimmy")
    from test_docs import DOCS

    env = shimmy.OpenSpielCompatibilityV0(game_name=og.GAME_NAME, config={"players": 4})
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    read = {}
    for agent in env.agent_iter():
        _, reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            read[agent] = reward
            returns = list(env.game_state.returns())  # what the page says to read, the engine's delta
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
    assert returns == [float(x) for x in env.game_state.deal.delta]
    text = (DOCS / "openspiel.md").read_text()
    if [read[a] for a in env.possible_agents] != returns:  # Shimmy's last() after the deal: the page must say so
        assert "not from `last()`" in text and "game_state.returns()" in text
