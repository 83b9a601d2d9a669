"""``exploit:AGENT``: a search best response to AGENT, for one seat among copies of AGENT.

It assumes every other seat plays AGENT (a local best response, after Lisý and Bowling 2017).  At each of its real
decisions it

1. draws ``draws`` worlds consistent with its view (``search.worlds.WorldSampler``, each with its importance
   weight);
2. weighs each by the likelihood AGENT's policy gives the leads the other seats chose in that world
   (``search.posterior``: the posterior over the hidden cards, not only consistency; ``known_policy`` says which
   policy each player of the package has), and keeps ``worlds`` of them drawn in proportion to those weights
   (systematic resampling; all of them, weighted, when ``draws == worlds``);
3. plays every legal card out in every kept world (the same worlds for every card), the other seats playing AGENT
   itself and its own seat the continuation policy (AGENT too by default: the value of each card is then what it
   wins if it deviates here alone), each seat from its own view of the world (``search.deviation``: the batch
   engine for the full pack, every row at once; the scalar engine for the small pack);
4. plays the card with the best mean counters for itself if it beats AGENT's own card at this view by more than
   ``confidence`` standard errors of their difference over the worlds (counting one more world where it gains
   nothing), and AGENT's card otherwise: a search that sees no clear gain plays as AGENT, so its noise does not
   cost it (the best of several noisy means is biased upwards: without the test, a search of 64 worlds lost to the
   shipped network it deviated from), and a deal where it sees none is AGENT's own game, a gain of exactly 0 (with
   another continuation too: falling back on the continuation's card instead would add the continuation's
   difference from AGENT, noise of its own, to every deal).  With ``rounds`` above
   1, a card ahead by 1 to ``confidence`` standard errors gets another round of worlds (steps 1-3 again), up to
   ``rounds`` rounds.  Ties among the best go to AGENT's card, else to the first by ``stops_first``'s
   order.

Its budget is work, not time: ``worlds`` playouts per card and ``draws`` worlds weighed, per round; the same seed
gives the same cards on any machine.  Parameters (``exploit:KEY=VALUE:...:AGENT``): ``worlds`` (default 64),
``draws`` (default 1024; ``worlds`` when the posterior is sampled), ``rounds`` (default 1), ``confidence``
(default 2; 0: the best mean always), ``posterior`` (``agent``: AGENT's known policy, the default; ``sampled``:
AGENT's frequencies over ``decisions`` decisions of its own (default 4), for any player; ``none``: consistency
alone) and ``continuation`` (``agent`` or a player spec without ``:``; ``popejoan exploit --continuation`` takes
any).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from popejoan_env.checks import as_int, as_seed, brief
from popejoan_env.errors import PopeJoanError
from popejoan_env.players.base import Player, UnknownPlayerError, act_batch, ask, call_reset, legal_of
from popejoan_env.players.stops_first import stops_first_key
from popejoan_env.search.deviation import playout_gains
from popejoan_env.search.posterior import (
    SAMPLED_DECISIONS, DeterministicPolicy, KnownPolicy, NetworkPolicy, SampledPolicy, UniformPolicy, log_likelihoods,
)
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.seat_view import SeatView

if TYPE_CHECKING:
    from popejoan_env.batch import BatchDeals

__all__ = ["BestResponsePlayer", "EXPLOIT", "NoKnownPolicyError", "OPTIONS", "POSTERIORS", "known_policy"]

DEFAULT_WORLDS = 64
"""Worlds every legal card is played out in, per decision, by default."""
DEFAULT_DRAWS = 1024
"""Worlds drawn and weighed by the posterior per decision, by default (``worlds`` for a sampled policy, whose every
world costs searches of the agent's own: see ``BestResponsePlayer``)."""
DEFAULT_CONFIDENCE = 2.0
"""Standard errors by which a card must beat AGENT's card before the search plays it, by default."""
CONTINUE = 1.0
"""With rounds left, the search draws another round of worlds while the best card beats AGENT's by more
than this many standard errors (and not yet by ``confidence``); below it, it plays AGENT's card."""
MAX_WORLDS = 4096
"""Most worlds (drawn or played out) a decision may take."""
MAX_ROUNDS = 64
"""Most rounds of worlds a decision may take (``rounds``, ``popejoan exploit --rounds``)."""
MAX_DECISIONS = 64
"""Most decisions of its own a sampled policy plays at each view (``decisions``, ``popejoan exploit --decisions``)."""
MAX_CONFIDENCE = 100.0
"""Most standard errors a card may be asked to win by (``confidence``, ``popejoan exploit --confidence``)."""
POSTERIORS = ("agent", "sampled", "none")
"""How the drawn worlds are weighed: AGENT's known policy, its sampled frequencies, or consistency alone."""
OPTIONS = ("worlds", "draws", "rounds", "confidence", "posterior", "decisions", "continuation")
"""The parameters of ``exploit:KEY=VALUE:...:AGENT``."""

EXPLOIT = "exploit"
"""The spec name of the search best response: ``exploit:AGENT`` (``make_player``)."""
AgentFactory = Callable[[int | None], Player]
"""Builds one copy of the agent from a seed."""


class NoKnownPolicyError(PopeJoanError):
    """A posterior was asked of an agent whose policy is not known (a player of unknown make)."""


class Batched:
    """A player as a ``posterior.Chooser``: its ``act``, and ``base.act_batch`` for a batch (its own when it has one,
    else ``act`` on each seat's view)."""

    def __init__(self, player: Player) -> None:
        self.player = player
        self.name = player.name

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the player."""
        call_reset(self.player, seed)

    def act(self, view: SeatView) -> int:
        """The player's card."""
        return ask(self.player, view)

    def act_batch(self, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The player's cards in the deals ``rows`` of ``batch``."""
        return act_batch(self.player, batch, rows, legal)


def known_policy(player: Player, rng: np.random.Generator, *, decisions: int = SAMPLED_DECISIONS) -> KnownPolicy:
    """The known policy of a player of this package: ``random`` uniform; ``lowest``, ``stops_first``,
    ``pool_hunter`` and a network playing its best card deterministic; a sampling network its softmax; ``pimc`` and
    ``pimc_net`` sampled (``posterior.SampledPolicy``); a player holding a ``KnownPolicy`` (``known_policy``
    attribute) that policy.  Any other player (``module:factory``, OpenSpiel's, a human) has none:
    ``NoKnownPolicyError``."""
    from popejoan_env.players.guided import GuidedPimcPlayer
    from popejoan_env.players.learned import LearnedPlayer
    from popejoan_env.players.pimc import PimcPlayer
    from popejoan_env.players.pool_hunter import PoolHunterPlayer
    from popejoan_env.players.simple import LowestPlayer, RandomPlayer
    from popejoan_env.players.stops_first import StopsFirstPlayer

    own = getattr(player, "known_policy", None)
    if isinstance(own, KnownPolicy):
        return own
    kind = type(player)
    if kind is RandomPlayer:
        return UniformPolicy()
    if kind in (LowestPlayer, StopsFirstPlayer, PoolHunterPlayer):
        return DeterministicPolicy(Batched(player))
    if kind in (PimcPlayer, GuidedPimcPlayer):
        return SampledPolicy(Batched(player), rng, decisions=decisions)
    if kind is LearnedPlayer:
        return DeterministicPolicy(Batched(player)) if player.deterministic else NetworkPolicy(player.policy)
    raise NoKnownPolicyError(
        f"the policy of {player.name!r} is not known (a posterior over the worlds needs the agent's probabilities: "
        "random, lowest, stops_first, pool_hunter, pimc, pimc_net, shipped or a model file); use posterior=none "
        "(worlds weighed by consistency alone) or posterior=sampled (its frequencies over decisions of its own): "
        "--posterior none or --posterior sampled of popejoan exploit")


def _count(name: str, value: object, low: int, high: int = MAX_WORLDS) -> int:
    n = as_int(value)
    if n is None or not low <= n <= high:
        raise UnknownPlayerError(f"{EXPLOIT}: {name} must be an integer from {low} to {high:,}, got {brief(value)}")
    return n


class BestResponsePlayer:
    """The search best response to an agent (see the module's docstring).

    ``agent``: a factory of copies of the agent from a seed (``make_player`` gives one for ``exploit:AGENT``);
    ``policy``: the agent's known policy for the posterior, when not the one ``known_policy`` finds; ``make``:
    ``make_player``, for a continuation given as a spec."""

    def __init__(self, agent: AgentFactory, seed: int | None = None, *, worlds: int = DEFAULT_WORLDS,
                 draws: int | None = None, rounds: int = 1, confidence: float = DEFAULT_CONFIDENCE,
                 posterior: str = "agent", decisions: int = SAMPLED_DECISIONS, continuation: str = "agent",
                 policy: KnownPolicy | None = None, agent_name: str | None = None,
                 make: Callable[[str, int | None], Player] | None = None) -> None:
        self.worlds = _count("worlds", worlds, 1)
        self.draws = _count("draws", DEFAULT_DRAWS if draws is None else draws, 1)
        if self.draws < self.worlds and draws is not None:
            raise UnknownPlayerError(f"{EXPLOIT}: draws ({self.draws}) must be at least worlds ({self.worlds}): the "
                                     "worlds played out are drawn from those weighed")
        self.rounds = _count("rounds", rounds, 1, MAX_ROUNDS)
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or \
                not 0 <= confidence <= MAX_CONFIDENCE:
            raise UnknownPlayerError(f"{EXPLOIT}: confidence must be a number from 0 to {MAX_CONFIDENCE:g} (standard "
                                     f"errors), got {brief(confidence)}")
        self.confidence = float(confidence)
        if posterior not in POSTERIORS:
            raise UnknownPlayerError(f"{EXPLOIT}: posterior must be one of {list(POSTERIORS)}, got {brief(posterior)}")
        self.decisions = _count("decisions", decisions, 1, MAX_DECISIONS)
        if not isinstance(continuation, str) or not continuation.strip():
            raise UnknownPlayerError(f"{EXPLOIT}: continuation must be 'agent' or a player spec, got "
                                     f"{brief(continuation)}")
        if continuation != "agent" and make is None:
            raise UnknownPlayerError(f"{EXPLOIT}: a continuation other than the agent needs make (make_player)")
        self.posterior = posterior
        self.continuation = continuation
        self._make = agent
        self.rng = np.random.default_rng(seed)
        self.others = self._make(None)
        """The copy of the agent that plays the other seats of the playouts."""
        if isinstance(self.others, BestResponsePlayer):  # every other seat's every decision a search: no budget holds
            raise UnknownPlayerError(f"{EXPLOIT}: the agent of a best response cannot be a best response "
                                     f"({brief(self.others.name, 200)})")
        self.agent_name = agent_name or self.others.name
        if continuation == "agent":
            make_own: AgentFactory = self._make
        else:
            if continuation.partition(":")[0].strip() == EXPLOIT:
                raise UnknownPlayerError(f"{EXPLOIT}: the continuation cannot be a best response")
            assert make is not None
            make_own = lambda s: make(continuation, s)  # noqa: E731 - a factory like the agent's
        self.own = make_own(None)
        """The continuation: seat 0 of the playouts."""
        if isinstance(self.own, BestResponsePlayer):
            raise UnknownPlayerError(f"{EXPLOIT}: the continuation cannot be a best response")
        self.reference = self._make(None)
        """A copy of the agent: the card it would play here is the search's fallback."""
        self.policy: KnownPolicy | None = None
        if posterior == "agent":
            self.policy = policy if policy is not None else known_policy(self._make(None), self.rng,
                                                                         decisions=self.decisions)
        elif posterior == "sampled":
            self.policy = SampledPolicy(Batched(self._make(None)), self.rng, decisions=self.decisions)
        if draws is None:  # the default: many worlds weighed, unless each costs the agent's own searches
            self.draws = self.worlds if isinstance(self.policy, SampledPolicy) else max(self.draws, self.worlds)
        params = []
        if self.worlds != DEFAULT_WORLDS:
            params.append(f"worlds={self.worlds}")
        if draws is not None:
            params.append(f"draws={self.draws}")
        if self.rounds != 1:
            params.append(f"rounds={self.rounds}")
        if self.confidence != DEFAULT_CONFIDENCE:
            params.append(f"confidence={self.confidence:g}")
        if posterior != "agent":
            params.append(f"posterior={posterior}")
        if self.decisions != SAMPLED_DECISIONS:
            params.append(f"decisions={self.decisions}")
        if continuation != "agent":
            params.append(f"continuation={continuation}")
        self.name = ":".join([EXPLOIT, *params, self.agent_name])
        self.counts = {"decisions": 0, "worlds_drawn": 0, "worlds_played": 0, "playouts": 0, "posterior_queries": 0}
        """Work done since the player was made: real decisions searched, worlds drawn and weighed, worlds played out,
        playouts (worlds x cards) and the agent's decisions the posterior asked for."""
        self.seen_gain = 0.0
        """Sum over the decisions searched of the search's own estimate of what it gains there: the mean counters of
        the card it plays less those of AGENT's card, in the same worlds."""
        self.last_values: dict[int, float] = {}
        self.last_effective = 0.0
        """The effective number of independent worlds behind the last decision's values (Kish's, of the weights)."""
        self.reset(seed)

    def reset(self, seed: int | None = None, *, agent_seed: int | None = None) -> None:
        """Re-seed the player's generator and, from it, every copy of a player it holds; ``agent_seed`` re-seeds
        the copy of the agent whose card is the fallback: given the seed AGENT has at this seat in the game compared
        with, the search plays that very game, a stochastic AGENT's draws included, until it deviates."""
        self.rng = np.random.default_rng(as_seed(seed))
        for copy in (self.others, self.reference, self.own):
            call_reset(copy, int(self.rng.integers(2**63)))
        if agent_seed is not None:
            call_reset(self.reference, agent_seed)
        if isinstance(self.policy, SampledPolicy):
            self.policy.rng = self.rng

    def act(self, view: SeatView) -> int:
        """The card to play: the only legal one at once, else the searched best."""
        legal = legal_of(view, self.name)
        if len(legal) == 1:
            return legal[0]
        return self.choose(view)

    def choose(self, view: SeatView) -> int:
        """The legal card with the best mean counters over the kept worlds (see the module's docstring)."""
        candidates = list(view.legal)
        sampler = WorldSampler(view)
        fallback = ask(self.reference, view)
        parts, weight_parts, effective = [], [], 0.0
        for done in range(1, self.rounds + 1):
            gains, weights, worth = self._round(view, sampler, candidates)
            parts.append(gains)
            weight_parts.append(weights)
            effective += worth
            gains, weights = np.concatenate(parts), np.concatenate(weight_parts)
            values = (weights @ gains) / weights.sum()
            top = values.max()
            best = [c for c, v in zip(candidates, values.tolist()) if v == top]
            card = fallback if fallback in best else (best[0] if len(best) == 1 else
                                                      max(best, key=stops_first_key(view)))
            if card == fallback or self.confidence == 0:
                break
            # The paired difference over the worlds (weighted), with what the worlds are worth as independent ones,
            # and one more world where the card gains nothing: n worlds that all agree are not certainty (with 4 of
            # them the test needs more than they can give; with 64, t = 7.9 at most).
            diff = gains[:, candidates.index(card)] - gains[:, candidates.index(fallback)]
            advantage = top - values[candidates.index(fallback)]
            t = _t_with_a_null_world(advantage, float(weights @ (diff - advantage) ** 2) / weights.sum(),
                                     max(effective, 1.0))
            if t > self.confidence:
                break
            if done == self.rounds or t < CONTINUE:
                card = fallback
                break
        self.counts["decisions"] += 1
        self.last_values = dict(zip(candidates, values.tolist()))
        self.last_effective = effective
        self.seen_gain += float(self.last_values[card] - self.last_values[fallback])
        return card

    def _round(self, view: SeatView, sampler: WorldSampler, candidates: list[int]) -> tuple[np.ndarray, np.ndarray,
                                                                                             float]:
        """One round of the search: worlds drawn (and weighed by the posterior, and resampled), every candidate
        played out in them; the gains [worlds, candidates], the worlds' weights and their effective number."""
        weighed = self.policy is not None and any(p.lead and p.seat != 0 for p in view.history)
        drawn = self.draws if weighed else self.worlds
        hands, dead, logs = sampler.draw_many(self.rng, drawn)
        self.counts["worlds_drawn"] += drawn
        if weighed:
            assert self.policy is not None
            likelihood, asked = log_likelihoods(view, hands, dead, self.policy)
            self.counts["posterior_queries"] += asked
            logs = logs + likelihood
        weights = np.exp(logs - logs.max())
        # What the weighed worlds are worth as a sample (Kish's effective size): resampled copies add nothing to it.
        effective = min(float(weights.sum() ** 2 / (weights @ weights)), float(self.worlds))
        if drawn > self.worlds:
            keep = _systematic(weights / weights.sum(), self.worlds, self.rng)
            hands, dead, weights = hands[keep], dead[keep], np.ones(self.worlds)
        gains = playout_gains(sampler.deals(hands, dead), candidates, Batched(self.others), Batched(self.own))
        self.counts["worlds_played"] += len(dead)
        self.counts["playouts"] += gains.size
        return gains, weights, effective

    def __repr__(self) -> str:
        return f"<BestResponsePlayer {self.name!r}>"


def _t_with_a_null_world(mean: float, spread: float, n: float) -> float:
    """The t statistic of ``n`` observations of this mean and (population) spread joined by one observation of 0."""
    joined = n * mean / (n + 1)
    spread = (n * (spread + mean ** 2)) / (n + 1) - joined ** 2
    return joined / np.sqrt(spread / n) if spread > 0 else 0.0


def _systematic(p: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` indices drawn in proportion to ``p`` by systematic resampling (one uniform: each index ``floor(k p)``
    or ``ceil(k p)`` times)."""
    edges = np.cumsum(p)
    edges[-1] = 1.0
    return np.searchsorted(edges, (rng.random() + np.arange(k)) / k, side="right")
