"""Policy improvement by the network's own rollouts: the main job's second stage, after the imitation.

At each real decision of a deal, the seat to act draws ``worlds`` worlds
consistent with what it has seen (``pimc``'s sampler: constrained cards first,
importance weights), leads each candidate card in each world, and lets **the
network play every seat to the end of the deal**, each seat reading its own
observation of that world (no seat sees another's cards).  A card's value is
its importance-weighted mean counters over the worlds: what that lead wins if
everyone then plays as the network does.  The card with the best value is
played, and the network learns those values with the imitation's regret loss
(``expert_games.imitate``), so it moves towards its own one-step improvement.

``pimc``'s rollouts are played by a rule of thumb that sees the world's cards;
a network that learned ``pimc``'s values inherits that rule's blind spots, and
here learns values that no seat's clairvoyance shaped.  The regret loss is
linear in the values, so a few worlds a decision suffice: their noise averages
out over the positions.

``card_values`` can also keep worlds by how likely the network makes the other
seats' leads so far, and ``deal_values`` values each card in the deal itself;
``training.advantage`` measures the search with them.  As recipes of the rounds
(``--rollout-belief leads`` and ``deal``, ``--rollout-play network``,
``--rollout-field``) they were measured and not kept (``docs/training.md``,
"Rounds"; commit ``21b19f4`` has them).

Every position is evaluated at once with the others waiting in its lockstep
group: the deals of a group (``GROUP``, one table) advance to their next real
decision, the worlds × candidates of all of them become one ``BatchDeals``
(``BatchDeals.stack``), and each step of the playouts is one forward of the
network over every live row.  Deal ``d`` is dealt as ``expert_games`` deals it
(``default_rng([seed, d])``, its starting balances from the same generator) and
each group draws its worlds from ``default_rng([seed, first deal, 2])``, so the
data do not depend on how many worker processes play them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from popejoan_env.engine import Deal
from popejoan_env.observation import action_mask, encode
from popejoan_env.players.guided import network_gains
from popejoan_env.players.pimc import best_lead
from popejoan_env.players.stops import lead_candidates
from popejoan_env.search.belief import DRAWS, Lead, lead_log_likelihood, resample
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.seat_view import SeatView, seat_view
from popejoan_env.training.expert_games import Decisions, Games, Table, deal_of, gather
from popejoan_env.training.workers import play_tasks

GROUP = 128
"""Deals played in lockstep: their positions are evaluated in one batch (and one worker task)."""


def lockstep_jobs(tables: Sequence[Table], deals: int) -> list[tuple[Table, list[int]]]:
    """Deals ``0 .. deals-1`` (deal ``d`` at ``tables[d % len(tables)]``) as jobs of up to ``GROUP`` deals of one
    table, each played in lockstep."""
    jobs = []
    for t, table in enumerate(tables):
        mine = list(range(t, deals, len(tables)))
        jobs += [(table, mine[a:a + GROUP]) for a in range(0, len(mine), GROUP)]
    return jobs


def network_cards(policy: Any, deals: Sequence[Deal]) -> list[int]:
    """The card ``policy`` (a numpy ``Policy``) plays for the seat to act in each of ``deals``, in one forward."""
    return policy.choose(np.stack([encode(deal, deal.to_act) for deal in deals]),
                         np.stack([action_mask(deal, deal.to_act) for deal in deals]).astype(bool)).tolist()


def deal_values(policy: Any, positions: Sequence[tuple[Deal, Sequence[int]]]) -> list[dict[int, float]]:
    """For each (deal, candidates) of one rules object and table size: the counters the seat to act gains leading
    each candidate in the deal itself, ``policy`` then playing every seat (``guided.network_gains``, one batch)."""
    gains = network_gains(policy, [([deal.copy()], candidates) for deal, candidates in positions])
    return [dict(zip(candidates, g[0].tolist())) for (_, candidates), g in zip(positions, gains)]


def card_values(policy: Any, positions: Sequence[tuple[SeatView, list[int]]], rng: np.random.Generator,
                worlds: int, reading: Sequence[tuple[Deal, int, Sequence[Lead]]] | None = None
                ) -> list[dict[int, float]]:
    """For each (view, candidates) of one rules object and table size: each candidate's importance-weighted mean
    counters for the seat to act over ``worlds`` sampled worlds, every seat of every world × candidate then played
    by ``policy`` (a numpy ``Policy``) from its own observation (``guided.network_gains``), all positions in one
    batch.  With ``reading`` (each position's deal, seat to act and the deal's leads so far), ``belief.DRAWS``
    times as many worlds are drawn and ``worlds`` of them kept by how likely ``policy`` makes the other seats'
    leads in each (``search.belief``)."""
    drawn, logs = [], []
    for i, (view, candidates) in enumerate(positions):
        sampler = WorldSampler(view)
        if reading is None:
            hands, dead, log_weights = sampler.draw_many(rng, worlds)
        else:
            deal, seat, leads = reading[i]
            hands, dead, log_weights = sampler.draw_many(rng, worlds * DRAWS)
            likely = lead_log_likelihood(policy, deal, seat, leads, hands, dead)
            kept = resample(log_weights + likely, worlds, rng)
            hands, dead, log_weights = hands[kept], dead[kept], np.zeros(worlds)
        drawn.append((sampler.deals(hands, dead), candidates))
        logs.append(log_weights)
    out = []
    for gains, log_weights, (_, candidates) in zip(network_gains(policy, drawn), logs, drawn):
        w = np.exp(log_weights - log_weights.max())
        out.append(dict(zip(candidates, ((w[:, None] * gains).sum(axis=0) / w.sum()).tolist())))
    return out


def play_group(policy: Any, table: Table, balance_range: Sequence[int] | None, reward_scale: float, seed: int,
               worlds: int, deals: Sequence[int]) -> Any:
    """The decisions of the deals ``deals`` (one table), played in lockstep, each labelled with the best lead by
    ``card_values`` and playing it."""
    rng = np.random.default_rng([seed, deals[0], 2])
    live = [(d, deal_of(table, balance_range, seed, d)) for d in deals]
    decisions = Decisions()
    while live:
        waiting = []
        for d, deal in live:
            if not deal.advance():
                decisions.end(d, deal)
            else:
                view = seat_view(deal, deal.to_act)
                waiting.append((d, deal, view, lead_candidates(view)))
        searched = [(view, cands) for _, _, view, cands in waiting if len(cands) > 1]
        found = iter(card_values(policy, searched, rng, worlds) if searched else [])
        for d, deal, view, cands in waiting:
            values = next(found) if len(cands) > 1 else {}
            card = best_lead(view, cands, [values[c] for c in cands]) if values else cands[0]
            decisions.note(d, deal, view.legal, card, values)
            deal.play(card)
        live = [(d, deal) for d, deal in live if d not in decisions.finals]
    return decisions.part(reward_scale)


def _task(common: tuple[Any, ...], job: tuple[Table, Sequence[int]]) -> Any:
    """``play_group`` of one job of ``rollout_games`` (``workers.play_tasks`` runs it where the games are played)."""
    policy, balance_range, reward_scale, seed, worlds = common
    table, deals = job
    return play_group(policy, table, balance_range, reward_scale, seed, worlds, deals)


def rollout_games(policy: Any, tables: Sequence[Table], deals: int, seed: int, *, worlds: int,
                  balance_range: Sequence[int] | None, reward_scale: float, workers: int = 1, backend: str = "local",
                  address: str | None = None, on_done: Callable[[int], None] | None = None) -> Games:
    """Deals ``0 .. deals-1`` (deal ``d`` at ``tables[d % len(tables)]``) played by the search whose rollouts
    ``policy`` plays, at every seat, in this process, ``workers`` forked processes or Ray tasks
    (``workers.play_tasks``: the same data either way); ``on_done(n)`` is told each time ``n`` more deals are
    played."""
    start = time.perf_counter()
    jobs = lockstep_jobs(tables, deals)
    common = (policy, balance_range, reward_scale, seed, worlds)
    parts = play_tasks(_task, common, jobs, workers=workers, backend=backend, address=address,
                       on_done=None if on_done is None else lambda job: on_done(len(job[1])))
    return gather(parts, time.perf_counter() - start)
