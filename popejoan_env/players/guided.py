"""``pimc_net``: ``pimc``'s search guided by a policy network (the shipped one by default).

Two ways in, each a parameter:

* **the prior** (``prior``, counters per unit of log-probability): a card's score is
  its mean counters over the sampled worlds plus ``prior`` × the log of the
  probability the network gives it at the real position.  The search corrects
  the network where its worlds disagree; the network breaks the search's noise.
* **the rollouts** (``rollout=network``): every seat of every world × candidate
  leads the network's best legal card for its own observation of that world (the
  worlds carry the public history), all rows at once (one ``BatchDeals``, one
  forward a step), instead of ``pimc``'s rule of thumb (``greedy_lead``:
  ``stops_first`` with the world's cards in view).

The worlds, their importance weights and the tie-break are ``pimc``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from popejoan_env.batch_observation import encode_batch
from popejoan_env.checks import as_int
from popejoan_env.engine import Deal
from popejoan_env.observation import encode_view
from popejoan_env.players.base import UnknownPlayerError
from popejoan_env.players.pimc import MAX_SAMPLES, PimcPlayer
from popejoan_env.nets.shipped import SHIPPED, shipped_model
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.seat_view import SeatView

DEFAULT_SAMPLES = 128
"""Worlds per decision by default (four times ``pimc``'s: its greedy rollouts are compiled and cheap)."""
DEFAULT_PRIOR = 1.0
"""Counters a card's score gains per unit of the network's log-probability, by default."""
ROLLOUTS = ("greedy", "network")
"""Who plays the rollouts: ``pimc``'s rule of thumb, or the network at every seat."""


class GuidedPimcPlayer(PimcPlayer):
    """``pimc_net``: ``pimc``'s search guided by the network of ``model`` (a model file's path, or ``shipped``,
    the default).  Parameters: ``samples`` (default 128), ``prior`` (default 1; 0 = none), ``rollout``
    (``greedy``, the default, or ``network``), ``model``, ``sampler`` and ``draws`` (as ``pimc``'s)."""

    name = "pimc_net"

    def __init__(self, seed: int | None = None, *, samples: int = DEFAULT_SAMPLES, prior: float = DEFAULT_PRIOR,
                 rollout: str = "greedy", model: str = "shipped", sampler: str = "consistent",
                 draws: str = "compiled") -> None:
        from popejoan_env.nets.policy import load_policy

        if as_int(samples) is None or not 1 <= samples <= MAX_SAMPLES:
            raise UnknownPlayerError(f"pimc_net: samples must be an integer from 1 to {MAX_SAMPLES:,}, got "
                                     f"{samples!r}")
        if not isinstance(model, str) or not model:
            raise UnknownPlayerError(f"pimc_net: model must be a model file's path or {SHIPPED!r}, got {model!r}")
        if isinstance(prior, bool) or not isinstance(prior, (int, float)) or not 0 <= prior < float("inf"):
            raise UnknownPlayerError(f"pimc_net: prior must be a number >= 0, got {prior!r}")
        if rollout not in ROLLOUTS:
            raise UnknownPlayerError(f"pimc_net: rollout must be one of {list(ROLLOUTS)}, got {rollout!r}")
        super().__init__(seed, samples=samples, sampler=sampler, draws=draws)
        self.policy = load_policy(shipped_model() if model == SHIPPED else model)
        self.model, self.prior, self.guided_rollout = model, float(prior), rollout
        params = [f"samples={samples}"] if samples != DEFAULT_SAMPLES else []
        params += [f"prior={prior:g}"] if prior != DEFAULT_PRIOR else []
        params += [f"rollout={rollout}"] if rollout != "greedy" else []
        params += [f"model={model}"] if model != SHIPPED else []
        params += [f"sampler={sampler}"] if sampler != "consistent" else []
        params += [f"draws={draws}"] if draws != "compiled" else []
        self.name = "pimc_net" + (":" + ",".join(params) if params else "")
        self._checked: object = None

    def evaluate(self, view: SeatView, candidates: list[int]) -> list[float]:
        """Each candidate's score: its mean counters over the sampled worlds (``last_values``), plus ``prior`` ×
        the network's log-probability of it."""
        if view.rules is not self._checked:
            self.policy.check(view.rules)
            self._checked = view.rules
        if self.guided_rollout == "network":
            self.network_rollouts(view, candidates)
        else:
            super().evaluate(view, candidates)
        means = [self.last_values[c] for c in candidates]
        if not self.prior:
            return means
        z = self.policy.logits(encode_view(view))[candidates].astype(np.float64)
        z -= z.max()
        log_p = z - np.log(np.exp(z).sum())
        return [m + self.prior * lp for m, lp in zip(means, log_p.tolist())]

    def network_rollouts(self, view: SeatView, candidates: list[int]) -> list[float]:
        """``pimc``'s totals (sums over the weighted worlds) with every world × candidate played out by the
        network at every seat."""
        sampler = WorldSampler(view, self.sampler)
        if self.draws == "python":
            worlds, logs = [], []
            for _ in range(self.samples):
                worlds.append(sampler.sample(self.rng))
                logs.append(sampler.log_weight)
        else:
            hands, dead, logs = sampler.draw_many(self.rng, self.samples)
            worlds = sampler.deals(hands, dead)
        return self.weigh(network_gains(self.policy, [(worlds, candidates)])[0].tolist(), logs, candidates)


def network_gains(policy: Any, positions: Sequence[tuple[Sequence[Deal], Sequence[int]]]) -> list[np.ndarray]:
    """For each position's worlds (one ``WorldSampler``'s, of one rules object and table size across positions) and
    candidate leads: the counters the seat to act gains in each world (rows) × candidate (columns) when it leads
    the candidate and ``policy`` (a numpy ``Policy``) then plays every seat from its own observation, every
    position's rows in one batch (``BatchDeals.stack``), one forward a step."""
    from popejoan_env.batch import BatchDeals
    from popejoan_env.search.playouts import worlds_batch  # the batch engine builds tables at import

    batch = BatchDeals.stack([worlds_batch(worlds, repeat=len(candidates)) for worlds, candidates in positions])
    sizes = [len(worlds) * len(candidates) for worlds, candidates in positions]
    seats = np.repeat([worlds[0].to_act for worlds, _ in positions], sizes)
    rows = np.arange(batch.num_deals)
    start = batch.balances[rows, seats].copy()
    actions = np.concatenate([np.tile(np.asarray(candidates), len(worlds)) for worlds, candidates in positions])
    batch.step(actions)
    while not batch.done.all():
        live = np.flatnonzero(~batch.done)
        actions[live] = policy.choose(encode_batch(batch, rows=live), batch.legal_mask()[live])
        batch.step(actions, which=live)
    gains = batch.balances[rows, seats] - start
    ends = np.cumsum(sizes)
    return [gains[end - size:end].reshape(len(worlds), len(candidates))
            for end, size, (worlds, candidates) in zip(ends, sizes, positions)]
