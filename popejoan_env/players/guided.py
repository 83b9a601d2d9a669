"""``pimc_net``: ``pimc`` whose rollouts are played by a policy network at every seat (the shipped one by default).

``pimc`` plays each candidate lead out in every sampled world with a fast rule
of thumb (``greedy_lead``: ``stops_first`` with the world's cards in view).
Here the rollouts follow the network instead: every seat of every world ×
candidate leads the network's best legal card for its own observation of that
world, all rows at once (one ``BatchDeals``, one forward per step).  The worlds,
their importance weights and the choice are ``pimc``'s.  The network sees only
what its seat would see in that world, so the rollouts are played the way the
network plays, not by players who see every card.
"""

from __future__ import annotations

import numpy as np

from popejoan_env.batch_observation import encode_batch
from popejoan_env.checks import as_int
from popejoan_env.players.base import UnknownPlayerError
from popejoan_env.players.pimc import PimcPlayer
from popejoan_env.players.worlds import WorldSampler
from popejoan_env.seat_view import SeatView

DEFAULT_SAMPLES = 16
"""Worlds per decision by default: half of ``pimc``'s, as each rollout step is a network forward."""


class GuidedPimcPlayer(PimcPlayer):
    """``pimc_net``: ``pimc``'s search with rollouts played by the network of ``model`` (a model file's path, or
    ``shipped``, the default) at every seat.  Parameters: ``samples`` (default 16), ``model``, ``sampler``
    (as ``pimc``'s)."""

    name = "pimc_net"

    def __init__(self, seed: int | None = None, samples: int = DEFAULT_SAMPLES, model: str = "shipped",
                 sampler: str = "consistent") -> None:
        from popejoan_env.players import SHIPPED, shipped_model
        from popejoan_env.players.learned import load_policy

        if as_int(samples) is None or samples < 1:
            raise UnknownPlayerError(f"pimc_net: samples must be a positive integer, got {samples!r}")
        if not isinstance(model, str) or not model:
            raise UnknownPlayerError(f"pimc_net: model must be a model file's path or {SHIPPED!r}, got {model!r}")
        super().__init__(seed, samples=samples, sampler=sampler, engine="scalar")
        self.policy = load_policy(shipped_model() if model == SHIPPED else model)
        self.model = model
        params = [f"samples={samples}"] if samples != DEFAULT_SAMPLES else []
        params += [f"model={model}"] if model != SHIPPED else []
        params += [f"sampler={sampler}"] if sampler != "consistent" else []
        self.name = "pimc_net" + (":" + ",".join(params) if params else "")
        self._checked: object = None

    def evaluate(self, view: SeatView, candidates: list[int]) -> list[float]:
        """Counters the observer gains per candidate, summed over the sampled worlds with their importance weights
        (``pimc``'s), each world × candidate played out by the network at every seat."""
        from popejoan_env.players.batch_rollout import worlds_batch  # the batch engine builds tables at import

        if view.rules is not self._checked:
            self.policy.check(view.rules)
            self._checked = view.rules
        sampler = WorldSampler(view, self.sampler)
        worlds, logs = [], []
        for _ in range(self.samples):
            worlds.append(sampler.sample(self.rng))
            logs.append(sampler.log_weight)
        batch = worlds_batch(worlds, repeat=len(candidates))
        seat = worlds[0].to_act
        start = batch.balances[:, seat].copy()
        batch.step(np.tile(np.asarray(candidates), len(worlds)))
        actions = np.zeros(len(start), dtype=np.int64)
        while not batch.done.all():
            live = np.flatnonzero(~batch.done)
            logits = self.policy.logits(encode_batch(batch, rows=live))
            actions[live] = np.argmax(np.where(batch.legal_mask()[live], logits, -np.inf), axis=1)
            batch.step(actions, which=live)
        gains = (batch.balances[:, seat] - start).reshape(len(worlds), len(candidates))
        return self.weigh(gains.tolist(), logs, candidates)
