"""The batch engine as a Gymnasium ``VectorEnv`` for self-play: N deals stepped together, one seat to act in each.

``PopeJoanVectorEnv`` follows ``gymnasium.vector.VectorEnv`` (``reset(seed=,
options=)``, ``step(actions) -> obs, rewards, terminations, truncations,
infos``, ``single_observation_space`` / ``observation_space``,
``single_action_space`` / ``action_space``, ``metadata["autoreset_mode"]``).
It is meant for researchers' own multi-agent algorithms: every seat of every
deal is played by the caller, typically one shared policy for all seats.
Forced cards (R8) and, with ``lone_leads``, leads with one legal card are
played by the engine (``BatchDeals``); a step is one real decision in each deal.

| name | contents |
|---|---|
| observation | float32 ``[n, OBS_SIZE]``: row i is the v2 observation (``observation.encode``) of the seat to act in deal i |
| action | ``[n]`` card ids (``MultiDiscrete([52] * n)``), each a legal lead of that seat |
| rewards | float64 ``[n]``: ``seat_rewards`` of the seat that acted (see *Rewards*) |
| terminations | bool ``[n]``: the deal ended in this step (an episode is one deal); truncations are always False |
| ``infos["seat"]`` | int64 ``[n]``: the seat to act, whose observation row i is |
| ``infos["action_mask"]`` | bool ``[n, 52]``: its legal cards (also ``action_masks()``) |
| ``infos["deal_id"]`` | int64 ``[n]``: the number of the deal now in each slot |
| ``infos["seat_rewards"]`` | float64 ``[n, players]``, step only: each seat's counters won or lost in this step, to credit as *Rewards* says |
| ``infos["final_delta"]`` | int64 ``[n, players]``, step only: the ended deal's ``delta`` per seat (dressing, compartments, settlement); 0 where no deal ended |
| ``infos["winner"]`` | int64 ``[n]``, step only: who went out of the ended deal (-1: nobody, or no deal ended) |
| ``infos["skipped_deals"]`` | int64 ``[n]``, step only: deals that ended before any seat had a decision (a ``victorian`` turned-up Pope); they credit nobody |

**Rewards (self-play credit).** A seat acts several times per deal, and
counters reach it while other seats act (a trump honour of its hand forced
out in another seat's sequence, paying out when someone goes out).  Each
change of a seat's balance is reported exactly once, in ``seat_rewards`` of
the step in which it happens, **credited to that seat's latest decision in the
deal**: the rule is "add ``seat_rewards[i, s]`` to the reward of seat ``s``'s most
recent decision in deal ``i``" (the one it took in this step, if it acted).  A
seat's changes before its first decision (the dressing as dealer, the turn-up,
cards forced out of its hand before it ever chooses) are held back and come
with the step of its first decision.  So, summed over a deal, a seat's credited
rewards are exactly its ``delta`` (``infos["final_delta"]``); a seat that never
had a decision in the deal gets no ``seat_rewards`` (nothing to credit) and its
delta is only in ``final_delta``.  With ``gamma = 1`` the return from a decision
is then what the seat wins from that decision to the deal's end.
``rewards[i]`` is ``seat_rewards[i, seat that acted]``: the acting seat's own
card, the cards that followed it and, if the deal ended, the settlement — what
a single-agent algorithm that ignores ``infos`` would see.

**Autoreset: same-step** (``AutoresetMode.SAME_STEP``).  When a deal ends in
``step()``, ``terminations[i]`` is True and the observation returned in row i
is already the first decision of the next deal in that slot; there is no extra
reset step.  No ``final_obs`` is given: a deal's end is terminal (nothing to
bootstrap from), and its outcome is in ``final_delta`` and ``seat_rewards``.
With ``session_length = K`` a slot plays sessions of K deals, board and
balances carried from deal to deal; an episode is still one deal.

**Seeding.** All randomness is one ``numpy.random.Generator``:
``reset(seed=s)`` starts it from ``s`` (the constructor's ``seed`` is used by
the first ``reset()`` without one); a later ``reset()`` without a seed goes on
drawing from it.  Slot i's first dealer is seat ``i mod players``, and the
deal passes left from deal to deal.

>>> env = PopeJoanVectorEnv(num_envs=3, players=4, seed=0)
>>> obs, infos = env.reset()
>>> obs.shape, infos["action_mask"].shape
((3, 1285), (3, 52))
>>> rng = np.random.default_rng(1)
>>> obs, rewards, terminations, truncations, infos = env.step(env.random_actions(rng))
>>> bool(infos["action_mask"].any(axis=1).all())   # every deal waits for a decision (ended ones restarted)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from popejoan_env.batch import BatchDeals
from popejoan_env.batch_observation import encode_batch
from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.checks import MAX_ENVS, MAX_EPISODE_DEALS, as_flag, as_int, as_seed, brief
from popejoan_env.errors import IllegalActionError, PopeJoanError
from popejoan_env.observation import OBS_SIZE, bounds
from popejoan_env.rules import RulesLike, check_players, resolve_rules

__all__ = ["MAX_ENVS", "PopeJoanVectorEnv"]


class PopeJoanVectorEnv(VectorEnv):
    """N deals stepped together for self-play: each step, one decision of the seat to act in every deal."""

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int = 64,
        players: int = 4,
        rules: RulesLike = "modern",
        *,
        seed: int | None = None,
        session_length: int = 1,
        lone_leads: bool = True,
    ) -> None:
        n = as_int(num_envs)
        if n is None or not 1 <= n <= MAX_ENVS:
            raise PopeJoanError(f"num_envs must be an integer from 1 to {MAX_ENVS:,}, got {brief(num_envs)}")
        players = check_players(players)
        length = as_int(session_length)
        if length is None or not 1 <= length <= MAX_EPISODE_DEALS:  # the observation's Box holds such sessions
            raise PopeJoanError(f"session_length must be an integer 1..{MAX_EPISODE_DEALS:,}, got "
                                f"{brief(session_length)}")
        self.rules = resolve_rules(rules)
        self.num_envs = n
        self.players = int(players)
        self.session_length = length
        self.lone_leads = as_flag(lone_leads, "lone_leads")
        self._first_seed = as_seed(seed)
        self._started = False
        self._make_batch(np.random.default_rng(0), 1)  # refuse a table these rules cannot deal, before any reset
        self.single_observation_space = spaces.Box(*bounds(), shape=(OBS_SIZE,), dtype=np.float32)
        self.single_action_space = spaces.Discrete(NUM_CARD_IDS)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self.batch: BatchDeals | None = None
        """The ``BatchDeals`` being played (None before the first ``reset``): its state arrays are public."""
        self._decided = np.zeros((n, self.players), dtype=bool)
        self._credited = np.zeros((n, self.players), dtype=np.int64)

    def _make_batch(self, rng: np.random.Generator, n: int) -> BatchDeals:
        return BatchDeals(self.rules, self.players, n, rng=rng, session_length=self.session_length,
                          first_dealer=np.arange(n) % self.players, lone_leads=self.lone_leads)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Deal ``num_envs`` new deals (sessions start afresh); returns the observations and infos."""
        if options:
            raise PopeJoanError(f"PopeJoanVectorEnv.reset takes no options, got {brief(options)}")
        if seed is not None or not self._started:
            first = self._first_seed if seed is None else as_seed(seed)
            self._np_random, self._np_random_seed = np.random.default_rng(first), -1 if first is None else first
        self._started = True
        self.batch = self._make_batch(self._np_random, self.num_envs)
        self._decided[:] = False
        self._credited[:] = self.batch.balances_before
        return self.observe(), self._infos()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Play each deal's card, then on to the next decisions; see the module docstring for what comes back."""
        batch = self._live()
        acts = np.asarray(actions)
        if acts.shape != (self.num_envs,) or not np.issubdtype(acts.dtype, np.integer):
            raise IllegalActionError(f"actions must be {self.num_envs} integer card ids, got {brief(actions)}")
        rows = np.arange(self.num_envs)
        actor = batch.to_act.copy()
        deal_before = batch.deal_ids.copy()
        finished = batch.step(acts)  # an illegal card raises here, before anything changed
        own = finished.deal_ids == deal_before[finished.slots]  # the deal in which this step's card was played
        ended = finished.slots[own]
        balances = batch.balances.copy()
        balances[ended] = finished.balances[own]
        self._decided[rows, actor] = True
        seat_rewards = np.where(self._decided, balances - self._credited, 0)
        self._credited = np.where(self._decided, balances, self._credited)
        # The next deal in an ended slot: nobody has decided yet; its changes count from its start.
        self._decided[ended] = False
        self._credited[ended] = batch.balances_before[ended]
        terminations = np.zeros(self.num_envs, dtype=bool)
        terminations[ended] = True
        final_delta = np.zeros((self.num_envs, self.players), dtype=np.int64)
        final_delta[ended] = finished.delta[own]
        winner = np.full(self.num_envs, -1, dtype=np.int64)
        winner[ended] = finished.winner[own]
        infos = self._infos()
        infos.update(
            seat_rewards=seat_rewards.astype(np.float64), final_delta=final_delta, winner=winner,
            skipped_deals=np.bincount(finished.slots[~own], minlength=self.num_envs).astype(np.int64),
        )
        rewards = infos["seat_rewards"][rows, actor]
        return self.observe(), rewards, terminations, np.zeros(self.num_envs, dtype=bool), infos

    def observe(self, seats: np.ndarray | None = None) -> np.ndarray:
        """float32 ``[n, OBS_SIZE]``: the observation of ``seats[i]`` in deal i (default the seat to act)."""
        batch = self._live()
        if seats is None:
            seats = batch.to_act
        else:
            seats = np.asarray(seats)
            if (seats.shape != (self.num_envs,) or not np.issubdtype(seats.dtype, np.integer)
                    or seats.min() < 0 or seats.max() >= self.players):
                raise PopeJoanError(f"seats must be {self.num_envs} seats 0..{self.players - 1}, got {brief(seats)}")
        return encode_batch(batch, seats=seats.astype(np.int64))

    def action_masks(self) -> np.ndarray:
        """bool ``[n, 52]``: the legal cards of the seat to act in each deal."""
        return self._live().legal_mask()

    def random_actions(self, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random legal card per deal, drawn with ``rng``."""
        return self._live().random_actions(rng)

    def _infos(self) -> dict[str, Any]:
        batch = self._live()
        return {"seat": batch.to_act.copy(), "action_mask": batch.legal_mask(), "deal_id": batch.deal_ids.copy()}

    def _live(self) -> BatchDeals:
        if self.batch is None:
            raise PopeJoanError("call reset() before step() or observe() (and not after close())")
        return self.batch

    def close_extras(self, **kwargs: Any) -> None:
        """Drop the deals."""
        self.batch = None

    def __repr__(self) -> str:
        return (f"PopeJoanVectorEnv(num_envs={self.num_envs}, players={self.players}, rules={self.rules.name!r}, "
                f"session_length={self.session_length})")
