"""``exploit:AGENT``: a search best response to AGENT, for one seat among copies of AGENT.

It assumes every other seat plays AGENT (a local best response, after Lisý and Bowling 2017).  At each of its real
decisions it

1. draws ``draws`` worlds consistent with its view (``worlds.WorldSampler``, each with its importance weight);
2. weighs each by the likelihood AGENT's policy gives the leads the other seats chose in that world
   (``posterior.log_likelihoods``: the posterior over the hidden cards, not only consistency), and keeps
   ``worlds`` of them drawn in proportion to those weights (systematic resampling; all of them, weighted, when
   ``draws == worlds``);
3. plays every legal card out in every kept world (the same worlds for every card), the other seats playing AGENT
   itself and its own seat the continuation policy (AGENT too by default: the value of each card is then what it
   wins if it deviates here alone), every row of worlds × cards at once in the batch engine (the full pack) or one
   deal after another in the scalar engine (the small pack);
4. plays the card with the best mean counters for itself if it beats the continuation's own card at this view
   (AGENT's, by default) by more than ``confidence`` standard errors of their difference over the worlds, and the
   continuation's card otherwise: a search that sees no clear gain plays as the continuation, so its noise does
   not cost it (the best of several noisy means is biased upwards: without the test, a search of 64 worlds lost
   to the shipped network it deviated from).  Ties among the best go to the continuation's card, else to the
   first by ``stops_first``'s order.

Its budget is work, not time: ``worlds`` playouts per card, ``draws`` worlds weighed; the same seed gives the same
cards on any machine.  Parameters (``exploit:KEY=VALUE:...:AGENT``): ``worlds`` (default 16), ``draws`` (default
64, at least ``worlds``), ``confidence`` (default 2; 0: the best mean always), ``posterior`` (``agent``: AGENT's known policy, the default; ``sampled``: AGENT's
frequencies over decisions of its own, for any player; ``none``: consistency alone), ``decisions`` (of a sampled
policy, default 4) and ``continuation`` (``agent`` or a player spec).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from popejoan_env.checks import as_int
from popejoan_env.engine import Deal
from popejoan_env.players import EXPLOIT
from popejoan_env.players.base import Player, UnknownPlayerError, act_batch, legal_of
from popejoan_env.players.posterior import (
    SAMPLED_DECISIONS, KnownPolicy, NoKnownPolicyError, SampledPolicy, known_policy, log_likelihoods,
)
from popejoan_env.players.stops_first import stops_first_key
from popejoan_env.players.worlds import WorldSampler
from popejoan_env.seat_view import SeatView, seat_view

__all__ = ["BestResponsePlayer", "EXPLOIT", "OPTIONS", "POSTERIORS", "parse_exploit_spec", "playout_gains"]

DEFAULT_WORLDS = 16
"""Worlds every legal card is played out in, per decision, by default."""
DEFAULT_DRAWS = 64
"""Worlds drawn and weighed by the posterior per decision, by default."""
DEFAULT_CONFIDENCE = 2.0
"""Standard errors by which a card must beat the continuation's card before the search plays it, by default."""
CONTINUE = 1.0
"""With rounds left, the search draws another round of worlds while the best card beats the continuation's by more
than this many standard errors (and not yet by ``confidence``); below it, it plays the continuation's card."""
MAX_WORLDS = 4096
"""Most worlds (drawn or played out) a decision may take."""
POSTERIORS = ("agent", "sampled", "none")
"""How the drawn worlds are weighed: AGENT's known policy, its sampled frequencies, or consistency alone."""
OPTIONS = ("worlds", "draws", "rounds", "confidence", "posterior", "decisions", "continuation")
"""The parameters of ``exploit:KEY=VALUE:...:AGENT``."""

AgentFactory = Callable[[int | None], Player]
"""Builds one copy of the agent from a seed."""


def parse_exploit_spec(spec: str) -> tuple[dict[str, Any], str]:
    """``exploit:worlds=8:draws=32:pimc:samples=32`` -> ``({"worlds": 8, "draws": 32}, "pimc:samples=32")``: the
    options (``key=value`` items before the agent's spec, each of ``OPTIONS``) and the agent's spec."""
    from popejoan_env.players import _number

    head, sep, rest = spec.strip().partition(":")
    if head.strip() != EXPLOIT or not sep:
        raise UnknownPlayerError(f"a best response spec is {EXPLOIT}:AGENT (options first: "
                                 f"{EXPLOIT}:worlds=8:AGENT), got {spec!r}")
    options: dict[str, Any] = {}
    while True:
        item, sep, after = rest.partition(":")
        key, eq, value = item.partition("=")
        if not eq or "/" in key or "\\" in key:
            break
        key = key.strip()
        if key not in OPTIONS:
            raise UnknownPlayerError(f"{EXPLOIT}: unknown option {key!r} in {spec!r}; options are {list(OPTIONS)} "
                                     "(an agent whose spec starts with name=value: write ./ before a file's name)")
        if key in options:
            raise UnknownPlayerError(f"{EXPLOIT}: option {key!r} given twice in {spec!r}")
        options[key] = _number(value.strip())
        if not sep:
            rest = ""
            break
        rest = after
    agent = rest.strip()
    if not agent:
        raise UnknownPlayerError(f"{EXPLOIT}: no agent after the options in {spec!r} ({EXPLOIT}:AGENT)")
    if agent.partition(":")[0].strip() == EXPLOIT:
        raise UnknownPlayerError(f"{EXPLOIT}: the agent of a best response cannot be a best response ({spec!r})")
    return options, agent


def _count(name: str, value: object, low: int) -> int:
    n = as_int(value)
    if n is None or not low <= n <= MAX_WORLDS:
        raise UnknownPlayerError(f"{EXPLOIT}: {name} must be an integer from {low} to {MAX_WORLDS:,}, got {value!r}")
    return n


class BestResponsePlayer:
    """The search best response to an agent (see the module's docstring).

    ``agent``: a player spec (``make_player``), or a factory of copies from a seed (the small game's checks);
    ``policy``: the agent's known policy for the posterior, when not the one ``posterior.known_policy`` finds."""

    def __init__(self, agent: str | AgentFactory, seed: int | None = None, worlds: int = DEFAULT_WORLDS,
                 draws: int | None = None, rounds: int = 1, confidence: float = DEFAULT_CONFIDENCE,
                 posterior: str = "agent", decisions: int = SAMPLED_DECISIONS,
                 continuation: str = "agent", policy: KnownPolicy | None = None, name: str | None = None) -> None:
        from popejoan_env.players import make_player

        self.worlds = _count("worlds", worlds, 1)
        self.draws = _count("draws", DEFAULT_DRAWS if draws is None else draws, 1)
        if draws is None:
            self.draws = max(self.draws, self.worlds)
        if self.draws < self.worlds:
            raise UnknownPlayerError(f"{EXPLOIT}: draws ({self.draws}) must be at least worlds ({self.worlds}): the "
                                     "worlds played out are drawn from those weighed")
        self.rounds = _count("rounds", rounds, 1)
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence < 100:
            raise UnknownPlayerError(f"{EXPLOIT}: confidence must be a number from 0 to 100 (standard errors), got "
                                     f"{confidence!r}")
        self.confidence = float(confidence)
        if posterior not in POSTERIORS:
            raise UnknownPlayerError(f"{EXPLOIT}: posterior must be one of {list(POSTERIORS)}, got {posterior!r}")
        self.decisions = _count("decisions", decisions, 1)
        if not isinstance(continuation, str) or not continuation.strip():
            raise UnknownPlayerError(f"{EXPLOIT}: continuation must be 'agent' or a player spec, got {continuation!r}")
        self.posterior = posterior
        self.continuation = continuation
        if isinstance(agent, str):
            spec = agent
            if spec.partition(":")[0].strip() == EXPLOIT:
                raise UnknownPlayerError(f"{EXPLOIT}: the agent of a best response cannot be a best response")
            self._make: AgentFactory = lambda s: make_player(spec, seed=s)
            agent_name = spec
        else:
            self._make = agent
            agent_name = None
        self.rng = np.random.default_rng(seed)
        self.others = self._make(None)
        """The copy of the agent that plays the other seats of the playouts."""
        self.agent_name = agent_name or self.others.name
        if continuation == "agent":
            make_own: AgentFactory = self._make
        else:
            if continuation.partition(":")[0].strip() == EXPLOIT:
                raise UnknownPlayerError(f"{EXPLOIT}: the continuation cannot be a best response")
            make_own = lambda s: make_player(continuation, seed=s)  # noqa: E731 - one line, like _make
        self.own = make_own(None)
        """The continuation: seat 0 of the playouts."""
        self.reference = make_own(None)
        """A copy of the continuation: the card it would play here is the search's fallback."""
        self._given_policy = policy
        self.policy: KnownPolicy | None = None
        if posterior == "agent":
            self.policy = policy if policy is not None else known_policy(self._make(None), self.rng, self.decisions)
        elif posterior == "sampled":
            self.policy = SampledPolicy(self._make(None), self.rng, self.decisions)
        params = []
        if self.worlds != DEFAULT_WORLDS:
            params.append(f"worlds={self.worlds}")
        if self.draws != max(DEFAULT_DRAWS, self.worlds):
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
        self.name = name or ":".join([EXPLOIT, *params, self.agent_name])
        self.counts = {"decisions": 0, "worlds_drawn": 0, "worlds_played": 0, "playouts": 0, "posterior_queries": 0}
        """Work done since the player was made: real decisions searched, worlds drawn and weighed, worlds played out,
        playouts (worlds x cards) and the agent's decisions the posterior asked for."""
        self.seen_gain = 0.0
        """Sum over the decisions searched of the search's own estimate of what it gains there: the mean counters of
        the card it plays less those of the continuation's card, in the same worlds."""
        self.last_values: dict[int, float] = {}
        self.last_effective = 0.0
        """The effective number of independent worlds behind the last decision's values (Kish's, of the weights)."""
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the player's generator and, from it, every copy of a player it holds."""
        self.rng = np.random.default_rng(seed)
        for copy in (self.others, self.reference, self.own):
            copy.reset(int(self.rng.integers(2**63)))
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
        fallback = int(self.reference.act(view))
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
            # The paired difference over the worlds (weighted), and what the worlds are worth as independent ones.
            diff = gains[:, candidates.index(card)] - gains[:, candidates.index(fallback)]
            advantage = top - values[candidates.index(fallback)]
            spread = float(weights @ (diff - advantage) ** 2) / weights.sum()
            t = advantage / np.sqrt(spread / max(effective - 1.0, 1.0)) if spread > 0 else np.inf
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
        gains = playout_gains(sampler.deals(hands, dead), candidates, self.others, self.own)
        self.counts["worlds_played"] += len(dead)
        self.counts["playouts"] += gains.size
        return gains, weights, effective

    def __repr__(self) -> str:
        return f"<BestResponsePlayer {self.name!r}>"


def _systematic(p: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` indices drawn in proportion to ``p`` by systematic resampling (one uniform: each index ``floor(k p)``
    or ``ceil(k p)`` times)."""
    edges = np.cumsum(p)
    edges[-1] = 1.0
    return np.searchsorted(edges, (rng.random() + np.arange(k)) / k, side="right")


def playout_gains(worlds: Sequence[Deal], candidates: Sequence[int], others: Player, own: Player) -> np.ndarray:
    """[worlds, candidates] counters relative seat 0 gains when it leads each candidate in each world (positions of
    one deal where it is to lead, as ``WorldSampler.deals`` gives them) and the deal is played out, seat 0 by
    ``own`` and every other seat by ``others``, each from its own view of the world.  The full pack in the batch
    engine (every row at once, each player asked once a step for all its rows), the small pack one deal after
    another."""
    if worlds[0].rules.pack == "full":
        return _batch_gains(worlds, candidates, others, own)
    return _scalar_gains(worlds, candidates, others, own)


def _scalar_gains(worlds: Sequence[Deal], candidates: Sequence[int], others: Player, own: Player) -> np.ndarray:
    def choose(deal: Deal, legal: list[int]) -> int:
        seat = deal.to_act
        return int((own if seat == 0 else others).act(seat_view(deal, seat)))

    gains = np.empty((len(worlds), len(candidates)), dtype=np.int64)
    for k, world in enumerate(worlds):
        start = world.balances[0]
        for i, card in enumerate(candidates):
            deal = world.copy()
            deal.play(card)
            deal.play_out(choose)
            gains[k, i] = deal.balances[0] - start
    return gains


def _batch_gains(worlds: Sequence[Deal], candidates: Sequence[int], others: Player, own: Player) -> np.ndarray:
    from popejoan_env.players.batch_rollout import worlds_batch

    batch = worlds_batch(worlds, repeat=len(candidates))
    rows = np.arange(batch.num_deals)
    start = batch.balances[:, 0].copy()
    actions = np.tile(np.asarray(candidates, dtype=np.int64), len(worlds))
    batch.step(actions)
    while not batch.done.all():
        live = np.flatnonzero(~batch.done)
        legal = batch.legal_mask()[live]
        mine = batch.to_act[live] == 0
        for who, player in ((mine, own), (~mine, others)):
            if who.any():
                actions[live[who]] = act_batch(player, batch, live[who], legal[who])
        batch.step(actions[live], which=live)
    return (batch.balances[rows, 0] - start).reshape(len(worlds), len(candidates))


def make_best_response(spec: str, seed: int | None = None) -> BestResponsePlayer:
    """The best response a spec ``exploit:[KEY=VALUE:...]AGENT`` names (``make_player`` calls this)."""
    options, agent = parse_exploit_spec(spec)
    try:
        return BestResponsePlayer(agent, seed=seed, **options)
    except NoKnownPolicyError as err:
        raise UnknownPlayerError(f"{EXPLOIT}: {err}") from None
