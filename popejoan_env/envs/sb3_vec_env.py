"""Stable-Baselines3 ``VecEnv`` on the batch engine: N learner seats stepped together, for MaskablePPO.

``BatchVecEnv(n, ...)`` is ``n`` copies of the Gymnasium view (``gymnasium_env.PopeJoanGymEnv``)
with the same episodes, rewards and infos, but every deal lives in a ``BatchDeals``
(one per table size) and the opponents play in lockstep: each round of the
opponents is one ``BatchDeals.step`` for every deal where an opponent is to act.

=====================  =====================================================
observation            ``batch_observation.encode_batch`` of the learner's seat
                       (equal to ``observation.encode(deal, learner)``), float32
                       ``[n, OBS_SIZE]``; with ``oracle=True`` followed by
                       ``batch_observation.hidden_batch`` (every hand, counted
                       from the learner, and the dead hand): ``[n, OBS_SIZE +
                       HIDDEN_SIZE]``, for a critic that knows the deal while
                       the policy reads only the first ``OBS_SIZE`` columns
action                 one card id per env (``Discrete(52)``)
``action_masks()``     bool ``[n, 52]``; ``env_method("action_masks")`` gives the
                       rows (sb3-contrib's ``get_action_masks``)
reward                 the change of the learner's balance since its previous
                       decision (times ``reward_scale``): an episode's rewards
                       sum to its ``counters``, dressing, turn-up and settlement
                       included
episode                one deal (``deals=K``: a session of K deals), a table size,
                       learner seat and opponents drawn for each; balances start
                       at ``start_counters`` or are drawn from ``balance_range``;
                       an episode in which the learner never has a real decision
                       is dealt again, as in the Gymnasium view
info (episode end)     ``counters``, ``players``, ``learner``, ``winner``,
                       ``opponents`` (names by seat), ``episode`` (Monitor's
                       ``r``, ``l``, ``t`` and ``counters``) and, with
                       ``terminal_observation=True``, ``terminal_observation``
=====================  =====================================================

Opponents: each round, every player answers all the deals where it is to act at once, through
the one batched form of the player protocol (``players.base.act_batch``): the scripted players in
a compiled loop, a network (a self-play snapshot, or a model file in the mix) in one encoding and
one forward, and a player without a batched form (``pimc``) through ``act`` on each seat's view:
correct, slow.  The env never asks what kind of player it has.

A round is as slow as its slowest deal, and the slowest are new episodes (the opponents
before the learner's first decision): so each table also holds spare episodes, drawn
ahead and played in the rounds the others need anyway; an env whose episode ends takes
the oldest spare of the table size it draws.

The terminal observation needs the finished deal, which the batch deals again in
place: it is rebuilt from the deal's record (``record.replay_record``), exact but
slow, so ``terminal_observation=False`` leaves it out (PPO reads it only for
truncated episodes, and these episodes never are).

>>> vec = BatchVecEnv(4, players=4, opponents="stops_first")
>>> _ = vec.seed(3)
>>> obs = vec.reset()
>>> masks = vec.action_masks()
>>> obs, rewards, dones, infos = vec.step(masks.argmax(axis=1))
>>> obs.shape, masks.shape
((4, 1285), (4, 52))
"""

from __future__ import annotations

import collections
import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv
from threadpoolctl import threadpool_limits

from popejoan_env.batch import BatchDeals, Finished
from popejoan_env.batch.state import MAX_BATCH_DEALS
from popejoan_env.batch_observation import HIDDEN_SIZE, encode_batch, hidden_batch
from popejoan_env.cards import CARD_NAMES, EIGHT_DIAMONDS, NUM_CARD_IDS
from popejoan_env.checks import as_flag, as_int, brief, check_reward_scale
from popejoan_env.errors import IllegalActionError, PopeJoanError
from popejoan_env.envs.gymnasium_env import check_balance_range, episode_options, table_sizes
from popejoan_env.observation import OBS_SIZE, encode
from popejoan_env.opponents import SELF, OpponentPool
from popejoan_env.players.base import act_batch
from popejoan_env.record import replay_record
from popejoan_env.rules import MAX_PLAYERS, RulesLike, resolve_rules

__all__ = ["BatchVecEnv", "make_batch_vec_env"]


_FREE, _SPARE = -1, -2
"""``_Table.env`` of a slot that holds no episode, and of one that holds a spare episode (drawn, bound to no env)."""


@dataclasses.dataclass
class _Table:
    """The deals of one table size, and the episode each slot holds: its learner, its opponents, its counters."""

    batch: BatchDeals
    env: np.ndarray       # [slots] the env the episode is bound to, or _FREE, or _SPARE
    learner: np.ndarray   # [slots] the learner's seat
    pick: np.ndarray      # [slots, players] index into the mix's names of each seat's player, -1 at the learner's
    snap: np.ndarray      # [slots, players] key of the snapshot at a 'self' seat, -1 elsewhere
    start: np.ndarray     # [slots] the learner's balance when the episode (its session) began
    mark: np.ndarray      # [slots] the learner's balance at its last decision
    deals: np.ndarray     # [slots] deals of the episode finished
    dealer: np.ndarray    # [slots] dealer of the episode's deal now
    spares: collections.deque[int]  # slots of spare episodes, oldest first
    voids: int = 0        # spare episodes that ended before the learner's first decision, not yet redrawn

    @classmethod
    def new(cls, batch: BatchDeals) -> _Table:
        """A table with every slot free."""
        n, p = batch.num_deals, batch.players

        def full(*shape: int) -> np.ndarray:
            return np.full(shape, -1, dtype=np.int64)

        return cls(batch, full(n), full(n), full(n, p), full(n, p), full(n), full(n), full(n), full(n),
                   collections.deque())

    @property
    def players(self) -> int:
        """Seats at this table."""
        return self.batch.players


class BatchVecEnv(VecEnv):
    """``num_envs`` learner seats on the batch engine, one per env; the keywords are ``PopeJoanGymEnv``'s, plus
    ``terminal_observation`` and ``oracle`` (the module's table).

    Each table has ``2 * num_envs`` slots: besides the episodes being played, spare episodes drawn ahead
    whose opponents play in the rounds the others need anyway, so an env whose episode ends takes the
    oldest spare of the table size it draws, usually already waiting for the learner's first decision
    (in order: no episode is chosen by how it went)."""

    def __init__(
        self,
        num_envs: int,
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
        balance_range: tuple[int, int] | Sequence[int] | None = None,
        terminal_observation: bool = True,
        oracle: bool = False,
    ) -> None:
        n = as_int(num_envs)
        if n is None or not 1 <= n <= MAX_BATCH_DEALS // 2:  # each table holds 2 * num_envs deals
            raise PopeJoanError(f"num_envs must be an integer 1..{MAX_BATCH_DEALS // 2:,} (each table holds twice as "
                                f"many deals, at most MAX_BATCH_DEALS), got {brief(num_envs)}")
        deals, balance_range = episode_options(deals, balance_range)
        self.rules = resolve_rules(rules)
        # as the Gymnasium view refuses it: drawn after the deal, such a balance played on below 0 without credit
        check_balance_range(self.rules, balance_range)
        self.table_sizes = table_sizes(players)
        self.deals = deals
        self.lone_leads = as_flag(lone_leads, "lone_leads")
        self.reward_scale = check_reward_scale(reward_scale)
        self.balance_range = balance_range
        self.terminal_observation = as_flag(terminal_observation, "terminal_observation")
        self.oracle = as_flag(oracle, "oracle")
        self.render_mode = None
        self.pool = OpponentPool(opponents, self.rules, snapshots=snapshots, max_snapshots=max_snapshots,
                                 snapshot_deterministic=snapshot_deterministic)
        # The networks among the opponents run in numpy (the players' one forward): keep its BLAS to one thread,
        # or its threads fight the learner's torch for the cores (a 512-row forward 3-4x slower on 2 busy cores).
        threadpool_limits(1, user_api="blas")
        names = self.pool.names
        self._self_pick = names.index(SELF) if SELF in names else -1
        self._mix_cdf = np.cumsum(self.pool.weights)
        self._mix_cdf /= self._mix_cdf[-1]
        self._snapshots: dict[int, Any] = {}  # key -> LearnedPlayer of every snapshot a seat may still hold
        self._snap_keys: dict[int, int] = {}  # id(player) -> key
        self._next_key = 0
        self._seeds_from = np.random.SeedSequence()  # each reset draws its streams from here (seed() sets it)
        width = OBS_SIZE + (HIDDEN_SIZE if self.oracle else 0)
        super().__init__(n, spaces.Box(-np.inf, np.inf, shape=(width,), dtype=np.float32),
                         spaces.Discrete(NUM_CARD_IDS))
        self._tables: list[_Table] = []
        self._actions: np.ndarray | None = None
        self._masks = np.zeros((n, NUM_CARD_IDS), dtype=bool)
        self._t_start = time.time()

    # ------------------------------------------------------------- self-play
    def add_snapshot(self, path: str | os.PathLike[str]) -> None:
        """Add a frozen learner snapshot (a saved model file) to the 'self' pool (one pool for every env); the
        oldest beyond ``max_snapshots`` leave."""
        self.pool.add_snapshot(path)
        held = {int(k) for tab in self._tables for k in np.unique(tab.snap[tab.env != _FREE])}
        pooled = {id(p) for p in self.pool.snapshots}
        for key, player in list(self._snapshots.items()):
            if key not in held and id(player) not in pooled:  # nobody sits with it, and it can no longer be drawn
                del self._snapshots[key], self._snap_keys[id(player)]

    @property
    def snapshot_paths(self) -> list[str]:
        """Files of the snapshots now in the 'self' pool, oldest first."""
        return list(self.pool.snapshot_paths)

    def _snapshot_key(self, player: Any) -> int:
        key = self._snap_keys.get(id(player))
        if key is None:
            key = self._snap_keys[id(player)] = self._next_key
            self._next_key += 1
            self._snapshots[key] = player
        return key

    # ------------------------------------------------------------- VecEnv API
    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Seed the resets to come: the deals, learner seats, opponents and their draws all follow ``seed``."""
        if seed is not None and (as_int(seed) is None or seed < 0):
            raise PopeJoanError(f"seed must be None or a non-negative integer, got {brief(seed)}")
        self._seeds_from = np.random.SeedSequence(None if seed is None else int(seed))
        return [None if seed is None else int(seed) + i for i in range(self.num_envs)]

    def reset(self) -> np.ndarray:
        """Deal a new episode in every env and return the observations (the n-th reset after ``seed(s)`` is
        always the same)."""
        self.pool.check_snapshots()
        streams = self._seeds_from.spawn(2 + len(self.table_sizes))
        self._draw_rng, players_rng = (np.random.default_rng(s) for s in streams[:2])
        self.pool.use_rng(players_rng)
        self.pool.seed_players()
        n = self.num_envs
        self._tables = []
        for size, stream in zip(self.table_sizes, streams[2:]):
            batch = BatchDeals(self.rules, size, 2 * n, rng=np.random.default_rng(stream), session_length=self.deals,
                               lone_leads=self.lone_leads, record=self.terminal_observation)
            batch.advance()  # the deals that ended at their turn-up while dealing belong to nobody
            self._tables.append(_Table.new(batch))
        self._table = np.zeros(n, dtype=np.int64)
        self._row = np.zeros(n, dtype=np.int64)
        self._decided = np.zeros(n, dtype=bool)
        self._ep_len = np.zeros(n, dtype=np.int64)
        self._ep_reward = np.zeros(n, dtype=np.float64)
        self._restart: list[int] = []
        self._out = self._new_out()
        for tab in self._tables:
            self._draw_spares(tab, n)
        self._bind(np.arange(n))
        self._play_opponents()
        self.reset_infos = [{} for _ in range(n)]
        return self._observe()

    def step_async(self, actions: np.ndarray) -> None:
        """Check the learners' cards (one per env; an illegal one is refused and nothing changes)."""
        if not self._tables:
            raise PopeJoanError("step() before reset(): call reset() to deal the episodes")
        acts = np.asarray(actions)
        if acts.shape != (self.num_envs,) or not np.issubdtype(acts.dtype, np.integer):
            raise IllegalActionError(f"actions must be {self.num_envs} card ids (integers), got {brief(actions)}")
        acts = acts.astype(np.int64)
        ok = (acts >= 0) & (acts < NUM_CARD_IDS)
        ok[ok] = self._masks[np.flatnonzero(ok), acts[ok]]
        if not ok.all():
            i = int(np.argmin(ok))
            card = CARD_NAMES[acts[i]] if 0 <= acts[i] < NUM_CARD_IDS and acts[i] != EIGHT_DIAMONDS \
                else f"card id {acts[i]}"
            legal = [CARD_NAMES[c] for c in np.flatnonzero(self._masks[i])]
            learner = self._tables[self._table[i]].learner[self._row[i]]
            raise IllegalActionError(f"env {i}: the learner (seat {learner}) cannot play {card}; legal: {legal}")
        self._actions = acts

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Play the learners' cards, then the opponents until every learner has a real decision again."""
        if self._actions is None:
            raise PopeJoanError("step_wait() without step_async(): call step(actions)")
        acts, self._actions = self._actions, None
        self._out = self._new_out()
        for t, tab in enumerate(self._tables):
            envs = np.flatnonzero(self._table == t)
            if not len(envs):
                continue
            self._decided[envs] = True
            self._ep_len[envs] += 1
            self._finish(tab, tab.batch.step(acts[envs], which=self._row[envs]))
        self._bind(np.array(self._restart, dtype=np.int64))
        self._play_opponents()
        rewards, dones, infos = self._out
        going = np.flatnonzero(~dones)
        for t, tab in enumerate(self._tables):
            envs = going[self._table[going] == t]
            rows = self._row[envs]
            balance = tab.batch.balances[rows, tab.learner[rows]]
            rewards[envs] = (balance - tab.mark[rows]) * self.reward_scale
            tab.mark[rows] = balance
        self._ep_reward[going] += rewards[going]
        return self._observe(), rewards.astype(np.float32), dones, infos

    def learner_slot(self, env: int) -> tuple[BatchDeals, int, int]:
        """Where env ``env`` plays now: its ``BatchDeals``, the slot of its deal and the learner's seat
        (``batch.to_deal(slot)`` is the deal as the scalar engine has it)."""
        tab = self._tables[self._table[env]]
        slot = int(self._row[env])
        return tab.batch, slot, int(tab.learner[slot])

    def action_masks(self) -> np.ndarray:
        """[num_envs, 52] bool: each learner's legal cards now (what MaskablePPO reads)."""
        return self._masks.copy()

    def close(self) -> None:
        """Nothing to release (no worker processes)."""

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """An attribute of the env (shared by all envs), once per index."""
        return [getattr(self, attr_name)] * len(list(self._get_indices(indices)))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        """Set an attribute of the env (shared by all envs)."""
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        """``action_masks`` (one row per env) or ``add_snapshot`` (one pool for all envs, added once)."""
        idx = list(self._get_indices(indices))
        if method_name == "action_masks":
            return list(self._masks[idx])
        if method_name == "add_snapshot":
            self.add_snapshot(*method_args, **method_kwargs)
            return [None] * len(idx)
        raise AttributeError(f"BatchVecEnv.env_method supports 'action_masks' and 'add_snapshot', "
                             f"not {method_name!r}")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        """No env is wrapped (the episode infos Monitor would add are given by this env itself)."""
        return [False] * len(list(self._get_indices(indices)))

    # ------------------------------------------------------------- episodes
    def _new_out(self) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
        n = self.num_envs
        return np.zeros(n, dtype=np.float64), np.zeros(n, dtype=bool), [{} for _ in range(n)]

    def _draw_spares(self, tab: _Table, count: int) -> None:
        """Draw ``count`` spare episodes into free slots: the learner's seat, the opponents and the balances."""
        if count <= 0:
            return
        rng, pool, batch, p = self._draw_rng, self.pool, tab.batch, tab.players
        rows = np.flatnonzero(tab.env == _FREE)[:count]
        m = len(rows)
        learner = rng.integers(p, size=m)
        pick = self._mix_cdf.searchsorted(rng.random((m, p)), side="right")  # rng.choice(p=weights)'s draw
        pick[np.arange(m), learner] = -1
        snap = np.full((m, p), -1)
        is_self = (pick == self._self_pick) & (pick >= 0)
        if is_self.any():
            drawn = rng.integers(len(pool.snapshots), size=int(is_self.sum()))
            snap[is_self] = [self._snapshot_key(pool.snapshots[d]) for d in drawn.tolist()]
        # A free slot holds a session begun at start_counters; with deals > 1 its first deals may have
        # ended at the turn-up already: they belong to this episode, as they would in the Gymnasium view.
        start = np.full((m, p), self.rules.start_counters, dtype=np.int64)
        if self.balance_range is not None:
            lo, hi = self.balance_range
            drawn_balances = rng.integers(lo, hi + 1, size=(m, p))
            batch.balances[rows] += drawn_balances - start
            batch.balances_before[rows] += drawn_balances - start
            start = drawn_balances
        tab.env[rows], tab.learner[rows], tab.pick[rows], tab.snap[rows] = _SPARE, learner, pick, snap
        tab.start[rows] = tab.mark[rows] = start[np.arange(m), learner]
        tab.dealer[rows] = batch.dealer[rows]
        tab.deals[rows] = batch.deal_in_session[rows] - 1
        tab.spares.extend(rows.tolist())

    def _bind(self, envs: np.ndarray) -> None:
        """A new episode for each env: a table size drawn, its oldest spare episode taken (and one drawn anew)."""
        self._restart = []
        if not len(envs):
            return
        sizes = len(self.table_sizes)
        table = self._draw_rng.integers(sizes, size=len(envs)) if sizes > 1 else np.zeros(len(envs), dtype=np.int64)
        if sizes > 1:
            # The Gymnasium view draws the table size again after a void episode: a bind that meets a void
            # spare of its table does the same.
            retry = np.zeros(len(envs), dtype=bool)
            for k, t in enumerate(table.tolist()):
                if self._tables[t].voids:
                    self._tables[t].voids -= 1
                    retry[k] = True
            if retry.any():
                self._restart = envs[retry].tolist()
                envs, table = envs[~retry], table[~retry]
        for t in np.unique(table).tolist():
            group = envs[table == t]
            tab = self._tables[t]
            self._draw_spares(tab, len(group) - len(tab.spares))
            rows = np.array([tab.spares.popleft() for _ in group], dtype=np.int64)
            tab.env[rows] = group
            self._table[group], self._row[group] = t, rows
            self._draw_spares(tab, len(group))
        self._decided[envs] = False
        self._ep_len[envs] = 0
        self._ep_reward[envs] = 0.0
        if self._restart:
            self._bind(np.array(self._restart, dtype=np.int64))

    def _finish(self, tab: _Table, fin: Finished) -> None:
        """Book the deals that ended: an episode over (its last reward and infos) or void; their slots freed."""
        if not len(fin):
            return
        rules, p = self.rules, tab.players
        rewards, dones, infos = self._out
        void_spares = 0
        for j, slot in enumerate(fin.slots.tolist()):
            i = int(tab.env[slot])
            if i == _FREE:
                continue  # a deal after the episode's last one, dealt in the same step: nobody's
            tab.deals[slot] += 1
            tab.dealer[slot] = nxt = (tab.dealer[slot] + 1) % p
            over = tab.deals[slot] >= self.deals or not rules.can_deal(fin.balances[j, nxt])
            if not over:
                continue  # the session goes on in the slot: the next deal is already dealt
            tab.env[slot] = _FREE
            if i == _SPARE:  # the learner never had a decision: the episode is drawn again (Gymnasium view)
                tab.spares.remove(slot)
                tab.voids += len(self._tables) > 1
                void_spares += 1
                continue
            self._restart.append(i)
            if not self._decided[i]:
                continue
            learner = int(tab.learner[slot])
            final = int(fin.balances[j, learner])
            rewards[i] = (final - tab.mark[slot]) * self.reward_scale
            counters = final - int(tab.start[slot])
            names = [self._seat_name(tab, slot, s) for s in range(p)]
            ep = {"r": round(float(self._ep_reward[i] + rewards[i]), 6), "l": int(self._ep_len[i]),
                  "t": round(time.time() - self._t_start, 6), "counters": counters}
            info: dict[str, Any] = {"counters": counters, "players": p, "learner": learner,
                                    "winner": None if fin.winner[j] < 0 else int(fin.winner[j]),
                                    "opponents": names, "episode": ep}
            if self.terminal_observation:
                info["terminal_observation"] = _terminal_observation(replay_record(fin.records[j]), learner,
                                                                     self.oracle)
            dones[i] = True
            infos[i] = info
        self._draw_spares(tab, void_spares)

    def _seat_name(self, tab: _Table, slot: int, seat: int) -> str:
        pick = int(tab.pick[slot, seat])
        if pick < 0:
            return "learner"
        if pick == self._self_pick:
            return str(self._snapshots[int(tab.snap[slot, seat])].name)
        return self.pool.names[pick]

    # ------------------------------------------------------------- the opponents
    def _play_opponents(self) -> None:
        """Rounds of opponents' leads, every table at once, until each learner is to act; the spare
        episodes' opponents play in the same rounds."""
        while True:
            waiting = [(tab, tab.batch.to_act != tab.learner) for tab in self._tables]
            if not any((w & (tab.env >= 0)).any() for tab, w in waiting):
                return
            for tab, w in waiting:
                rows = np.flatnonzero(w & (tab.env != _FREE))
                if len(rows):
                    seats = tab.batch.to_act[rows]
                    self._finish(tab, tab.batch.step(self._opponent_leads(tab, rows, seats), which=rows))
            self._bind(np.array(self._restart, dtype=np.int64))

    def _opponent_leads(self, tab: _Table, rows: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """The card of the opponent to act in each deal ``rows``: each player answers all its deals at once."""
        batch = tab.batch
        legal = batch.legal_mask()[rows]
        picks = tab.pick[rows, seats]
        # The player at each deal's seat to act: a snapshot by its key, another by its name and seat.
        keys = np.where(picks == self._self_pick, -2 - tab.snap[rows, seats], picks * MAX_PLAYERS + seats)
        groups: dict[int, tuple[Any, list[np.ndarray]]] = {}
        for key in np.unique(keys).tolist():
            if key < 0:
                player = self._snapshots[-2 - key]
            else:
                player = self.pool.scripted[self.pool.names[key // MAX_PLAYERS]][key % MAX_PLAYERS]
            groups.setdefault(id(player), (player, []))[1].append(np.flatnonzero(keys == key))
        out = np.empty(len(rows), dtype=np.int64)
        for player, parts in groups.values():  # a player at several seats answers them all at once
            sel = np.concatenate(parts)
            out[sel] = act_batch(player, batch, rows[sel], legal[sel])
        return out

    def _observe(self) -> np.ndarray:
        """Each learner's observation now; the legal cards are kept for ``action_masks``."""
        obs = np.empty((self.num_envs, *self.observation_space.shape), dtype=np.float32)
        for t, tab in enumerate(self._tables):
            envs = np.flatnonzero(self._table == t)
            if not len(envs):
                continue
            rows = self._row[envs]
            seats = tab.learner[rows]
            if len(envs) == self.num_envs:  # one table holds every env: encode straight into the result
                encode_batch(tab.batch, rows, seats, out=obs[:, :OBS_SIZE])
                if self.oracle:
                    hidden_batch(tab.batch, rows, seats, out=obs[:, OBS_SIZE:])
            else:
                obs[envs, :OBS_SIZE] = encode_batch(tab.batch, rows, seats)
                if self.oracle:
                    obs[envs, OBS_SIZE:] = hidden_batch(tab.batch, rows, seats)
            self._masks[envs] = tab.batch.legal_mask()[rows]
        return obs


def _terminal_observation(deal: Any, seat: int, oracle: bool) -> np.ndarray:
    """The observation of a finished deal from ``seat``, with ``hidden_batch``'s columns when ``oracle``."""
    obs = encode(deal, seat)
    if not oracle:
        return obs
    return np.concatenate([obs, hidden_batch(BatchDeals.from_deals([deal]), seats=[seat])[0]])


def make_batch_vec_env(n_envs: int, seed: int | None, **env_kwargs: Any) -> BatchVecEnv:
    """A ``BatchVecEnv`` of ``n_envs`` learners seeded with ``seed`` (the keywords are ``BatchVecEnv``'s)."""
    vec = BatchVecEnv(n_envs, **env_kwargs)
    vec.seed(seed)
    return vec
