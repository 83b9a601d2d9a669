"""Single-agent Gymnasium view of Pope Joan, for Stable-Baselines3 / sb3-contrib (MaskablePPO).

Registered as ``popejoan/PopeJoan-v2`` when ``popejoan_env`` is imported (``envs.registration``):
``gymnasium.make("popejoan/PopeJoan-v2", players=4)`` builds ``PopeJoanGymEnv(players=4)``.

One **learner seat** per episode, chosen at random; every other seat is played
inside ``step()`` by an opponent drawn from a configurable pool: scripted
players (``make_player`` names such as ``stops_first``) and frozen snapshots of
the learner itself (``self``, saved model files given with ``snapshots=`` or
``add_snapshot(path)`` — callable through ``VecEnv.env_method`` from a
training callback).

=====================  =====================================================
observation            ``observation.encode(deal, learner)`` (float32, padded
                       to 8 seats, so several table sizes share one network)
action                 ``Discrete(52)``: the card id to play
``action_masks()``     bool[52], the learner's legal cards (sb3-contrib reads it,
                       also through ``SubprocVecEnv``)
reward                 counters: the change of the learner's balance since its
                       previous decision (times ``reward_scale``), so an
                       episode's rewards sum to its ``delta`` — dressing,
                       turn-up, compartments and the going-out settlement
                       included
episode                one deal (``deals=K``: a session of K deals, board and
                       balances carried, dealer passing left); the board starts
                       empty, balances at ``rules.start_counters`` as in a
                       session (``balance_range=(lo, hi)``: each seat's drawn
                       uniformly from it, so a network meets many balances)
=====================  =====================================================

The learner is only asked about **real decisions**:

* forced continuations (R8) are played automatically, for every seat;
* with ``lone_leads=True`` (default) a lead with exactly one legal card is
  played automatically too — it is not a choice, and skipping it saves PPO
  steps that carry no policy gradient;
* a deal in which the learner never has a real decision (another seat goes
  out first, or the ``victorian`` turned-up Pope ends it) teaches nothing:
  with ``deals=1``, ``reset()`` skips it and deals again (its counters belong
  to no episode); inside a session its counters go into the reward of the
  learner's next decision (or its last one), so the rewards of an episode
  still sum to the session's delta.

``info`` of the last step holds ``counters`` (the raw delta of the episode),
``players``, ``learner``, ``winner`` and ``opponents`` (names by seat).

**Illegal actions.**  ``Discrete(52)`` holds every card id, but only the
masked ones are legal.  With ``illegal_action="terminate"`` (default) a card id
that is not legal ends the episode at once, as PettingZoo's classic games do
(``TerminateIllegalWrapper``, the default of our AEC ``env()``): nothing is
played, the step's reward is ``illegal_reward`` counters (default -100, the
AEC env's, worse than a deal's outcome) plus the change of the learner's
balance since its previous decision (times ``reward_scale``, like every
reward), ``terminated`` is True, and ``info`` holds ``illegal_action`` (the
card id), ``legal`` (the legal ids) and the end-of-episode keys, ``counters``
being the learner's change before the illegal card (so the rewards of such an
episode sum to ``counters`` plus the penalty).  Why terminate rather than
raise: an unmasked agent (plain PPO, DQN) and generic tools (the ``check_env``
of gymnasium and of Stable-Baselines3, which step with unmasked random
actions) then run, and the penalty teaches an unmasked agent to play legal
cards; a masked agent (MaskablePPO) never plays an illegal card, so its
episodes, and the model it trains, are exactly those of ``"raise"``.  With
``illegal_action="raise"`` an illegal card raises ``IllegalActionError``
(naming the seat and the legal cards) and changes nothing: for a researcher
who wants a bug in their masking to stop the run.  An action outside the
action space (not an integer, or not 0..51) is always refused with
``IllegalActionError``, and a step after the episode's end with a
``PopeJoanError``.

>>> env = PopeJoanGymEnv(players=4, opponents="random")
>>> obs, info = env.reset(seed=3)
>>> done, total = False, 0.0
>>> while not done:
...     legal = env.action_masks().nonzero()[0]
...     obs, r, done, truncated, info = env.step(int(legal[0]))
...     total += r
>>> total == info["counters"]
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.checks import (
    MAX_ENVS, as_flag, as_int, as_seed, brief, check_illegal_reward, check_render_mode, check_reward_scale,
    episode_deals, split_list,
)
from popejoan_env.engine import Deal
from popejoan_env.envs.pettingzoo_aec import OPTION_KEYS, ILLEGAL_REWARD, meant_option
from popejoan_env.errors import IllegalActionError, PopeJoanError
from popejoan_env.observation import MAX_COUNTERS, OBS_SIZE, Encoder, bounds, check_counters_fit
from popejoan_env.opponents import SELF, OpponentMixError, OpponentPool, parse_mix
from popejoan_env.render import describe
from popejoan_env.rules import MAX_PLAYERS, MIN_PLAYERS, Rules, RulesLike, check_players, resolve_rules
from popejoan_env.seat_view import seat_view
from popejoan_env.session import Session
from popejoan_env.table import play_until

__all__ = ["ILLEGAL_ACTIONS", "SELF", "OpponentMixError", "PopeJoanGymEnv", "check_balance_range", "make_gym_env",
           "make_vec_env", "parse_mix", "table_sizes"]

ILLEGAL_ACTIONS = ("terminate", "raise")
"""What ``step`` does with a card id that is not legal: end the episode with ``illegal_reward``, or raise."""


def episode_options(deals: object, balance_range: object) -> tuple[int, tuple[int, int] | None]:
    """Deals per episode and the range starting balances are drawn from, checked (a PopeJoanError names a bad one)."""
    count = episode_deals(deals)
    if balance_range is None:
        return count, None
    pair = list(balance_range) if isinstance(balance_range, (list, tuple, np.ndarray)) else []
    # Two integers, never read otherwise: not a string's digits ("12" is not (1, 2)), not 1.7 as 1, not inf.
    lo, hi = (as_int(x) for x in pair) if len(pair) == 2 else (None, None)
    if lo is None or hi is None or lo > hi:
        raise PopeJoanError(f"balance_range must be two integers (low, high), low <= high; got {brief(balance_range)}")
    # The observation scales balances into a bounded Box (observation.bounds): refuse what it could not hold.
    limit = MAX_COUNTERS // 2
    if max(-lo, hi) > limit:
        raise PopeJoanError(f"balance_range must lie within ±{limit:,} (the observation's bound), "
                            f"got {brief(balance_range)}")
    return count, (lo, hi)


def check_balance_range(rules: Rules, balance_range: tuple[int, int] | None) -> None:
    """Refuse a ``balance_range`` whose low end leaves a dealer unable to pay the dressing (``allow_credit=false``)."""
    if balance_range is not None and not rules.can_deal(balance_range[0]):
        raise PopeJoanError(f"balance_range {balance_range} lets a dealer start below the dressing "
                            f"({sum(rules.dressing)} counters) under allow_credit=false: no deal could be "
                            "dealt then; start the range at the dressing or allow credit")


def illegal_options(illegal_action: object, illegal_reward: object) -> tuple[str, float]:
    """What an illegal card does (``ILLEGAL_ACTIONS``) and its reward in counters, checked."""
    if illegal_action not in ILLEGAL_ACTIONS:
        raise PopeJoanError(f"illegal_action must be one of {list(ILLEGAL_ACTIONS)}, got {brief(illegal_action)}")
    return str(illegal_action), check_illegal_reward(illegal_reward)


def table_sizes(players: int | Sequence[int] | str) -> tuple[int, ...]:
    """Table sizes from ``4``, ``[3, 4, 5]`` or ``"3,4,5"``."""
    if isinstance(players, str):
        try:
            sizes = tuple(int(p) for p in split_list(players))
        except ValueError:
            raise PopeJoanError(f"players must be a number or a list like '3,4,5', got {brief(players)}") from None
    elif as_int(players) is not None:
        sizes = (as_int(players),)  # type: ignore[assignment]
    elif isinstance(players, (list, tuple)):
        sizes = tuple(players)
    else:
        raise PopeJoanError(f"players must be an integer {MIN_PLAYERS}..{MAX_PLAYERS}, a list of them or a string "
                            f"like '3,4,5', got {brief(players)}")
    if not sizes:
        raise PopeJoanError(f"players must name at least one table size ({MIN_PLAYERS}..{MAX_PLAYERS})")
    return tuple(check_players(n) for n in sizes)


class PopeJoanGymEnv(gym.Env):
    """One learner seat against a pool of opponents; only the learner's real decisions are steps."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        players: int | Sequence[int] | str = 4,
        rules: RulesLike = "modern",
        opponents: str | Mapping[str, float] | Sequence[str] = "stops_first",
        *,
        snapshots: Sequence[str | os.PathLike[str]] = (),
        max_snapshots: int = 5,
        snapshot_deterministic: bool = False,
        deals: int = 1,
        lone_leads: bool = True,
        reward_scale: float = 1.0,
        balance_range: tuple[int, int] | None = None,
        render_mode: str | None = None,
        illegal_action: str = "terminate",
        illegal_reward: float = ILLEGAL_REWARD,
    ) -> None:
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        self.rules = resolve_rules(rules)
        self.rules.check_startable()
        self.table_sizes = table_sizes(players)
        self.deals, self.balance_range = episode_options(deals, balance_range)
        check_balance_range(self.rules, self.balance_range)
        self.illegal_action, self.illegal_reward = illegal_options(illegal_action, illegal_reward)
        low, high = self.balance_range or (self.rules.start_counters, self.rules.start_counters)
        check_counters_fit(self.rules, self.deals, low, high, 0, "rules, deals and balance_range")
        self.lone_leads = as_flag(lone_leads, "lone_leads")
        self.reward_scale = check_reward_scale(reward_scale)
        self.observation_space = spaces.Box(*bounds(), shape=(OBS_SIZE,), dtype=np.float32)
        self.action_space = spaces.Discrete(NUM_CARD_IDS)
        self.pool = OpponentPool(opponents, self.rules, snapshots=snapshots, max_snapshots=max_snapshots,
                                 snapshot_deterministic=snapshot_deterministic)
        self.mix = self.pool.mix
        self._rng = np.random.default_rng()
        self.pool.use_rng(self._rng)
        self._session: Session | None = None
        self._encoder: Encoder | None = None
        self._seats: list[Any] = []
        self._learner = 0
        self._players = self.table_sizes[0]
        self._mask = np.zeros(NUM_CARD_IDS, dtype=bool)
        self._balance_mark = 0
        self._start_balance = 0
        self._opponent_names: list[str] = []

    # ------------------------------------------------------------- self-play
    def add_snapshot(self, path: str | os.PathLike[str]) -> None:
        """Add a frozen learner snapshot (a saved model file) to the ``self`` pool; the oldest beyond ``max_snapshots`` leave."""
        self.pool.add_snapshot(path)

    @property
    def snapshot_paths(self) -> list[str]:
        """Files of the snapshots now in the ``self`` pool, oldest first."""
        return list(self.pool.snapshot_paths)

    @property
    def _deal(self) -> Deal | None:
        return self._session.current if self._session is not None else None

    # ------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Deal a new episode: table size, dealer, learner seat and opponents drawn at random.  A refused reset
        changes nothing (it is refused before anything is drawn)."""
        seed = as_seed(seed)
        if isinstance(options, Mapping):
            # Others' options are ignored, as Gymnasium's envs do; the AEC env's would silently deal a random deal.
            ours = [key for key in options if key in OPTION_KEYS or meant_option(str(key)) is not None]
            if ours:
                raise PopeJoanError(f"PopeJoanGymEnv.reset takes no {brief(ours)} option: the learner's deals are "
                                    "drawn at random (an exact deal, board or balances: the AEC env's raw_env.reset)")
        # Refused here, whatever the draw: refused mid-draw it left the old deal with a new learner seat.
        self.pool.check_snapshots()
        super().reset(seed=seed)
        if seed is not None:
            # Players' own generators follow the env seed, so a seeded episode replays exactly.
            self._rng = np.random.default_rng(self.np_random.integers(2**63))
            self.pool.use_rng(self._rng)
            self.pool.seed_players()
        while True:
            self._new_episode()
            if self._advance():
                break
        return self._observe(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Play the learner's card, then everybody else's until its next real decision or the episode's end."""
        deal = self._deal
        if deal is None:
            raise PopeJoanError("step() before reset(): call reset() to deal an episode")
        if not self._mask.any():
            raise PopeJoanError(f"the episode is over (learner seat {self._learner}); call reset()")
        card = as_int(action)
        if card is None or not 0 <= card < NUM_CARD_IDS:
            raise IllegalActionError(
                f"learner (seat {self._learner}) cannot play {brief(action)}: an action is a card id 0..51 (an int); "
                f"legal: {np.flatnonzero(self._mask).tolist()}"
            )
        if not self._mask[card] and self.illegal_action == "terminate":
            return self._end_illegal(card)
        deal.play(card)  # an illegal card raises IllegalActionError naming the seat and the legal cards
        more = self._advance()
        balance = self._balance()
        reward = (balance - self._balance_mark) * self.reward_scale
        self._balance_mark = balance
        if more:
            return self._observe(), reward, False, False, {}
        info = self._final_info(self._deal.winner)
        self._mask[:] = False
        return self._last_obs, reward, True, False, info

    def _end_illegal(self, card: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """End the episode on an illegal card: nothing played, ``illegal_reward`` (scaled), ``info`` says why."""
        info = self._final_info(None)
        info["illegal_action"] = card
        info["legal"] = np.flatnonzero(self._mask).tolist()
        self._mask[:] = False
        reward = (self._balance() - self._balance_mark + self.illegal_reward) * self.reward_scale
        return self._observe(), reward, True, False, info

    def _final_info(self, winner: int | None) -> dict[str, Any]:
        """``info`` of an episode's last step."""
        return {
            "counters": self._balance() - self._start_balance,
            "players": self._players,
            "learner": self._learner,
            "winner": winner,
            "opponents": list(self._opponent_names),
        }

    def action_masks(self) -> np.ndarray:
        """Legal cards of the learner now, as bool[52] (what MaskablePPO reads)."""
        return self._mask.copy()

    def render(self) -> str | None:
        """Text picture of the learner's view (``render_mode="ansi"``)."""
        if self.render_mode != "ansi" or self._deal is None:
            return None
        return describe(seat_view(self._deal, self._learner))

    # ------------------------------------------------------------- internals
    def _new_episode(self) -> None:
        rng = self.np_random
        n = self.table_sizes[int(rng.integers(len(self.table_sizes)))] if len(self.table_sizes) > 1 else self.table_sizes[0]
        self._players = n
        self._learner = int(rng.integers(n))
        dealer = int(rng.integers(n))
        self._seats, self._opponent_names = self.pool.draw(n, self._learner, rng)
        # Balances start as in a session (the AEC env's): start_counters each; or, with
        # balance_range, anywhere in it (the duplicate tournament starts every deal at 0, a long
        # session wanders far from 48), so a network learns that balances do not change play.
        if self.balance_range is None:
            balances = [self.rules.start_counters] * n
        else:
            lo, hi = self.balance_range
            balances = rng.integers(lo, hi + 1, size=n).tolist()
        self._session = Session(self.rules, n, rng, deals=self.deals, first_dealer=dealer, board=None,
                                balances=balances)
        self._start_balance = self._balance_mark = balances[self._learner]
        self._last_obs = np.zeros(OBS_SIZE, dtype=np.float32)
        self._next_deal()

    def _next_deal(self) -> None:
        """Deal the next deal of the session (the dealer passes left, board and balances carried)."""
        self._encoder = Encoder(self._session.next_deal())  # incremental observations: ~4 µs each

    def _balance(self) -> int:
        return self._deal.balances[self._learner]

    def _advance(self) -> bool:
        """Play forced cards and opponents until the learner has a real decision (True) or the episode ends (False)."""
        session = self._session
        while True:
            legal = play_until(session.current, self._seats,
                               lone_leads=self.lone_leads)  # the learner's seat holds None
            if legal:
                mask = self._mask
                mask[:] = False
                mask[legal] = True
                return True
            self._last_obs = self._observe()
            if session.over:
                return False
            self._next_deal()

    def _observe(self) -> np.ndarray:
        encoder = self._encoder
        encoder.sync()
        return encoder.observe(self._learner)


def make_gym_env(**kwargs: Any) -> PopeJoanGymEnv:
    """``PopeJoanGymEnv(**kwargs)``: what ``gymnasium.make`` builds (``GYMNASIUM_ENTRY_POINT``)."""
    # A function, not the class: gymnasium.make reads its creator's ``metadata`` to judge render_mode before calling
    # it (a render_mode that is not a string failed in there, an AttributeError); so the env's own check names it.
    return PopeJoanGymEnv(**kwargs)


def make_vec_env(
    n_envs: int,
    seed: int,
    vec_env: str = "dummy",
    **env_kwargs: Any,
) -> Any:
    """``n_envs`` copies of ``PopeJoanGymEnv`` in one process (``dummy``) or in worker processes (``subproc``)."""
    n = as_int(n_envs)
    if n is None or not 1 <= n <= MAX_ENVS:
        raise PopeJoanError(f"n_envs must be an integer from 1 to {MAX_ENVS:,}, got {brief(n_envs)}")
    seed = as_seed(seed)  # refused here, before any env or worker process is made, not at the first reset
    if vec_env not in ("dummy", "subproc"):
        raise PopeJoanError(f"vec_env must be 'dummy' or 'subproc', got {brief(vec_env)}")
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    def factory(rank: int, worker: bool):
        def make() -> gym.Env:
            if worker:  # in SubprocVecEnv's own process: Ctrl-C is the command's to handle
                from popejoan_env.cli import leave_interrupts_to_parent

                leave_interrupts_to_parent()
            return Monitor(PopeJoanGymEnv(**env_kwargs), info_keywords=("counters",))

        return make

    fns = [factory(i, vec_env == "subproc") for i in range(n)]
    if vec_env == "dummy":
        vec = DummyVecEnv(fns)
    else:
        vec = SubprocVecEnv(fns, start_method="forkserver" if os.name != "nt" else "spawn")
    vec.seed(seed)  # env i is reset with seed + i
    return vec
