"""Single-agent Gymnasium view of Pope Joan, for Stable-Baselines3 / sb3-contrib (MaskablePPO).

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
* with ``auto_single=True`` (default) a lead with exactly one legal card is
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

from popejoan_env.engine import Deal
from popejoan_env.errors import PopeJoanError
from popejoan_env.observation import OBS_SIZE, Encoder
from popejoan_env.rules import Rules, check_players, resolve_rules
from popejoan_env.seat_view import seat_view

SELF = "self"
"""Name of the self-play share in an opponents mix: a frozen snapshot of the learner."""

NUM_ACTIONS = 52


class OpponentMixError(PopeJoanError):
    """An opponents mix that cannot be parsed, or names an unknown player."""


def parse_mix(mix: str | Mapping[str, float] | Sequence[str]) -> list[tuple[str, float]]:
    """Opponent names with normalised weights from ``"stops_first:0.4,random:0.1,self:0.5"``, a mapping or a list.

    >>> parse_mix("stops_first:3,random:1")
    [('stops_first', 0.75), ('random', 0.25)]
    >>> parse_mix("pool_hunter")
    [('pool_hunter', 1.0)]
    """
    if isinstance(mix, str):
        items: list[tuple[str, float]] = []
        for part in mix.split(","):
            part = part.strip()
            if not part:
                continue
            name, sep, weight = part.rpartition(":") if ":" in part else (part, "", "1")
            try:
                items.append((name.strip(), float(weight)))
            except ValueError:
                raise OpponentMixError(
                    f"opponents mix {mix!r}: weight {weight!r} of {name!r} is not a number "
                    "(write e.g. 'stops_first:0.4,random:0.1,self:0.5')"
                ) from None
    elif isinstance(mix, Mapping):
        items = [(str(k), float(v)) for k, v in mix.items()]
    else:
        items = [(str(k), 1.0) for k in mix]
    if not items:
        raise OpponentMixError(f"opponents mix {mix!r} names no player")
    names = [n for n, _ in items]
    if len(set(names)) != len(names):
        raise OpponentMixError(f"opponents mix {mix!r} names a player twice")
    bad = [(n, w) for n, w in items if not np.isfinite(w) or w < 0]
    total = sum(w for _, w in items)
    if bad or total <= 0:
        raise OpponentMixError(f"opponents mix {mix!r}: weights must be non-negative numbers with a positive sum")
    return [(n, w / total) for n, w in items if w > 0]


def _table_sizes(players: int | Sequence[int] | str) -> tuple[int, ...]:
    """Table sizes from ``4``, ``[3, 4, 5]`` or ``"3,4,5"``."""
    if isinstance(players, str):
        try:
            sizes = tuple(int(p) for p in players.split(",") if p.strip())
        except ValueError:
            raise PopeJoanError(f"players must be a number or a list like '3,4,5', got {players!r}") from None
    elif isinstance(players, int):
        sizes = (players,)
    else:
        sizes = tuple(players)
    if not sizes:
        raise PopeJoanError("players must name at least one table size (3..8)")
    for n in sizes:
        check_players(n)
    return sizes


class PopeJoanGymEnv(gym.Env):
    """One learner seat against a pool of opponents; only the learner's real decisions are steps."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        players: int | Sequence[int] | str = 4,
        rules: Rules | str | Mapping[str, Any] | None = "modern",
        opponents: str | Mapping[str, float] | Sequence[str] = "stops_first",
        snapshots: Sequence[str | os.PathLike[str]] = (),
        max_snapshots: int = 5,
        snapshot_deterministic: bool = False,
        deals: int = 1,
        auto_single: bool = True,
        reward_scale: float = 1.0,
        balance_range: tuple[int, int] | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.rules = resolve_rules(rules)
        self.table_sizes = _table_sizes(players)
        self.mix = parse_mix(opponents)
        self.max_snapshots = max(1, int(max_snapshots))
        self.snapshot_deterministic = snapshot_deterministic
        if isinstance(deals, bool) or not isinstance(deals, int) or deals < 1:
            raise PopeJoanError(f"deals per episode must be a positive integer, got {deals!r}")
        self.deals = deals
        self.auto_single = auto_single
        self.reward_scale = float(reward_scale)
        if balance_range is not None:
            try:
                lo, hi = (int(x) for x in balance_range)
            except (TypeError, ValueError):
                lo, hi = 1, 0
            if lo > hi:
                raise PopeJoanError(f"balance_range must be two integers (low, high), low <= high; got {balance_range!r}")
            balance_range = (lo, hi)
        self.balance_range = balance_range
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise PopeJoanError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(OBS_SIZE,), dtype=np.float32)
        self.action_space = spaces.Discrete(NUM_ACTIONS)

        from popejoan_env.players import make_player

        self._names = [n for n, _ in self.mix]
        self._weights = np.array([w for _, w in self.mix])
        # One player object per seat and name, built now: an unknown name fails here, not mid-training.
        self._scripted: dict[str, list[Any]] = {
            name: [make_player(name) for _ in range(8)] for name in self._names if name != SELF
        }
        self._snapshots: list[Any] = []
        self._snapshot_paths: list[str] = []
        for path in snapshots:
            self.add_snapshot(path)
        self._rng = np.random.default_rng()
        self._deal: Deal | None = None
        self._encoder: Encoder | None = None
        self._seats: list[Any] = []
        self._learner = 0
        self._players = self.table_sizes[0]
        self._mask = np.zeros(NUM_ACTIONS, dtype=bool)
        self._balance_mark = 0
        self._start_balance = 0
        self._deals_left = 0
        self._dealer = 0
        self._board: list[int] = [0] * 8
        self._balances: list[int] = []
        self._opponent_names: list[str] = []

    # ------------------------------------------------------------- self-play
    def add_snapshot(self, path: str | os.PathLike[str]) -> None:
        """Add a frozen learner snapshot (a saved model file) to the ``self`` pool; the oldest beyond ``max_snapshots`` leave."""
        from popejoan_env.players.learned import load_policy

        policy = load_policy(path, rules=self.rules)
        self._snapshots.append(policy)
        self._snapshot_paths.append(os.fspath(path))
        del self._snapshots[: -self.max_snapshots]
        del self._snapshot_paths[: -self.max_snapshots]

    @property
    def snapshot_paths(self) -> list[str]:
        """Files of the snapshots now in the ``self`` pool, oldest first."""
        return list(self._snapshot_paths)

    # ------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Deal a new episode: table size, dealer, learner seat and opponents drawn at random."""
        super().reset(seed=seed)
        if seed is not None:
            # Players' own generators follow the env seed, so a seeded episode replays exactly.
            self._rng = np.random.default_rng(self.np_random.integers(2**63))
            for row in self._scripted.values():
                for player in row:
                    player.reset(int(self._rng.integers(2**63)))
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
        # An illegal card raises IllegalActionError naming the seat, the card and the legal cards.
        deal.play(int(action))
        more = self._advance()
        balance = self._balance()
        reward = (balance - self._balance_mark) * self.reward_scale
        self._balance_mark = balance
        if more:
            return self._observe(), reward, False, False, {}
        info = {
            "counters": balance - self._start_balance,
            "players": self._players,
            "learner": self._learner,
            "winner": self._deal.winner if self._deal is not None else None,
            "opponents": list(self._opponent_names),
        }
        self._mask[:] = False
        return self._last_obs, reward, True, False, info

    def action_masks(self) -> np.ndarray:
        """Legal cards of the learner now, as bool[52] (what MaskablePPO reads)."""
        return self._mask.copy()

    def render(self) -> str | None:
        """Text picture of the learner's view (``render_mode="ansi"``)."""
        if self.render_mode != "ansi" or self._deal is None:
            return None
        from popejoan_env.cards import names_of
        from popejoan_env.rules import COMPARTMENTS

        deal = self._deal
        board = " ".join(f"{c}:{n}" for c, n in zip(COMPARTMENTS, deal.board))
        played = " ".join(f"{s}:{names_of([c])[0]}" for s, c in deal.plays)
        return (
            f"{self._players} players, learner seat {self._learner}, dealer {deal.dealer}, "
            f"turn-up {names_of([deal.turnup])[0]}\nboard {board}\nbalances {deal.balances}\n"
            f"hand {' '.join(names_of(deal.hands[self._learner]))}\nplayed {played}\n"
            f"legal {' '.join(names_of(self._mask.nonzero()[0].tolist()))}"
        )

    # ------------------------------------------------------------- internals
    def _new_episode(self) -> None:
        rng = self.np_random
        n = self.table_sizes[int(rng.integers(len(self.table_sizes)))] if len(self.table_sizes) > 1 else self.table_sizes[0]
        self._players = n
        self._learner = int(rng.integers(n))
        self._dealer = int(rng.integers(n))
        picks = rng.choice(len(self._names), size=n, p=self._weights)
        seats: list[Any] = []
        names: list[str] = []
        for seat in range(n):
            if seat == self._learner:
                seats.append(None)
                names.append("learner")
                continue
            name = self._names[int(picks[seat])]
            if name == SELF:
                if not self._snapshots:
                    raise PopeJoanError(
                        "the opponents mix names 'self' but no learner snapshot was given; "
                        "pass snapshots=[model.zip] or call add_snapshot(path) before reset()"
                    )
                k = int(rng.integers(len(self._snapshots)))
                seats.append(self._snapshots[k])
                names.append(f"self:{os.path.basename(self._snapshot_paths[k])}")
            else:
                seats.append(self._scripted[name][seat])
                names.append(name)
        self._seats = seats
        self._opponent_names = names
        self._board = [0] * 8
        # Balances start as in a session (the AEC env's): start_counters each; or, with
        # balance_range, anywhere in it (the duplicate tournament starts every deal at 0, a long
        # session wanders far from 48), so a network learns that balances do not change play.
        if self.balance_range is None:
            self._balances = [self.rules.start_counters] * n
        else:
            lo, hi = self.balance_range
            self._balances = rng.integers(lo, hi + 1, size=n).tolist()
        self._deals_left = self.deals
        self._start_balance = self._balance_mark = self._balances[self._learner]
        self._deal = None
        self._last_obs = np.zeros(OBS_SIZE, dtype=np.float32)
        self._next_deal()

    def _next_deal(self) -> None:
        """Deal the next deal of the episode (the dealer passes left, board and balances carried)."""
        if self._deal is not None:
            self._board = list(self._deal.board)
            self._balances = list(self._deal.balances)
            self._dealer = (self._dealer + 1) % self._players
        self._deals_left -= 1
        self._deal = Deal.new(self.rules, self._players, self._dealer, self.np_random, self._board, self._balances)
        self._encoder = Encoder(self._deal)  # incremental observations: ~4 µs each instead of ~22

    def _balance(self) -> int:
        return self._deal.balances[self._learner]

    def _advance(self) -> bool:
        """Play forced cards and opponents until the learner has a real decision (True) or the episode ends (False)."""
        learner = self._learner
        while True:
            deal = self._deal
            if deal.done:
                self._last_obs = self._observe()
                if self._deals_left <= 0:
                    return False
                self._next_deal()
                continue
            seat = deal.to_act
            if deal.forced >= 0:
                deal.play(deal.forced)
                continue
            legal = deal.legal_actions()
            if seat == learner:
                if self.auto_single and len(legal) == 1:
                    deal.play(legal[0])
                    continue
                mask = self._mask
                mask[:] = False
                mask[legal] = True
                return True
            if len(legal) == 1:
                deal.play(legal[0])
                continue
            deal.play(self._opponent_card(seat, deal))

    def _opponent_card(self, seat: int, deal: Deal) -> int:
        player = self._seats[seat]
        choose = getattr(player, "choose", None)
        if choose is not None:
            return int(choose(seat_view(deal, seat)))
        # A learner snapshot: a network over the same observation the learner gets.
        encoder = self._encoder
        encoder.sync()
        return player.pick(encoder.observe(seat), deal.legal_actions(), self._rng, self.snapshot_deterministic)

    def _observe(self) -> np.ndarray:
        encoder = self._encoder
        encoder.sync()
        return encoder.observe(self._learner)


def make_vec_env(
    n_envs: int,
    seed: int,
    vec_env: str = "dummy",
    **env_kwargs: Any,
) -> Any:
    """``n_envs`` copies of ``PopeJoanGymEnv`` in one process (``dummy``) or in worker processes (``subproc``)."""
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    def factory(rank: int):
        def make() -> gym.Env:
            return Monitor(PopeJoanGymEnv(**env_kwargs), info_keywords=("counters",))

        return make

    fns = [factory(i) for i in range(n_envs)]
    if vec_env == "dummy":
        vec = DummyVecEnv(fns)
    elif vec_env == "subproc":
        vec = SubprocVecEnv(fns, start_method="forkserver" if os.name != "nt" else "spawn")
    else:
        raise PopeJoanError(f"vec_env must be 'dummy' or 'subproc', got {vec_env!r}")
    vec.seed(seed)  # env i is reset with seed + i
    return vec
