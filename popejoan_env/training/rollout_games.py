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

With ``belief="leads"`` (``--rollout-belief leads``) the worlds are not all
alike: four times as many are drawn and the kept ones resampled by how likely
the network makes every lead the other seats made so far, with that world's
hand of the time (``search.belief``); each deal's leads are recorded as they
are made, with the observation of the seat that made them.

With ``play="network"`` (``--rollout-play network``) the games are played by
the network's own cards, so the positions are those the network reaches; each
decision still learns the search's values and its best card.

With ``belief="deal"`` (``--rollout-belief deal``, which needs ``play="network"``)
no worlds are drawn: each candidate is led in the deal itself and the network
plays every seat to the end (``deal_values``), the branches of TRPO's "vine"
rollouts.  The network plays every seat from its own observation and the deal
was dealt at random, so the deal's hidden cards are a draw from the exact
posterior of what the seat to act has seen: each value is an unbiased sample of
the card's value to that seat, no belief to get wrong, one world's noise.  The
search's best card would be played with every hand in view, so the network
plays instead; the label card is the deal's best (the choice term learns it;
the regret term, linear in the values, learns their means).

With ``field`` (``--rollout-field``, another network), the field plays some seats
of every deal (``field_seats``: the learner alone against it, or it alone
against the learner, at every seat in turn, as ``training/benchmark.py``'s field
lineups seat two players), in the games and in every rollout, and only the
other seats' decisions are kept: the rounds learn a best response to that field
rather than to the network itself.

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

from popejoan_env.checks import brief
from popejoan_env.engine import Deal
from popejoan_env.errors import PopeJoanError
from popejoan_env.observation import action_mask, encode
from popejoan_env.players.guided import network_gains
from popejoan_env.players.pimc import best_lead
from popejoan_env.players.stops import lead_candidates
from popejoan_env.search.belief import DRAWS, Lead, lead_log_likelihood, resample
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.seat_view import SeatView, seat_view
from popejoan_env.seats import relative
from popejoan_env.training.expert_games import Decisions, Games, Table, deal_of, gather
from popejoan_env.training.workers import play_tasks

WORLD_BELIEFS = ("uniform", "leads")
"""The beliefs that draw worlds: every consistent world alike, or what the leads say."""
BELIEFS = (*WORLD_BELIEFS, "deal")
"""Where a round's values come from: worlds of a belief (``WORLD_BELIEFS``), or the deal itself (``deal``)."""
PLAYS = ("search", "network")
"""Who plays a round's games: the search (its best card) or the network (its own card: the positions it reaches)."""
DEAL_NEEDS_NETWORK = ("belief 'deal' values the cards in the deal itself, so its best card is played with every hand "
                      "in view: the games must be played by the network (play 'network')")
"""Why ``belief="deal"`` needs ``play="network"``."""
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


def deal_values(policy: Any, positions: Sequence[tuple[Deal, Sequence[int]]], field: Any = None,
                field_seats: Sequence[Sequence[int]] = ()) -> list[dict[int, float]]:
    """For each (deal, candidates) of one rules object and table size: the counters the seat to act gains leading
    each candidate in the deal itself, ``policy`` then playing every seat (``guided.network_gains``, one batch),
    or with ``field`` the seats of each position's ``field_seats`` playing ``field``."""
    gains = network_gains(policy, [([deal.copy()], candidates) for deal, candidates in positions], field, field_seats)
    return [dict(zip(candidates, g[0].tolist())) for (_, candidates), g in zip(positions, gains)]


def card_values(policy: Any, positions: Sequence[tuple[SeatView, list[int]]], rng: np.random.Generator,
                worlds: int, reading: Sequence[tuple[Deal, int, Sequence[Lead]]] | None = None,
                field: Any = None, field_seats: Sequence[Sequence[int]] = ()) -> list[dict[int, float]]:
    """For each (view, candidates) of one rules object and table size: each candidate's importance-weighted mean
    counters for the seat to act over ``worlds`` sampled worlds, every seat of every world × candidate then played
    by ``policy`` (a numpy ``Policy``) from its own observation (``guided.network_gains``), all positions in one
    batch.  With ``reading`` (each position's deal, seat to act and the deal's leads so far), ``belief.DRAWS``
    times as many worlds are drawn and ``worlds`` of them kept by how likely ``policy`` makes the other seats'
    leads in each (``search.belief``).  With ``field`` (another ``Policy``), the seats of each position's
    ``field_seats`` play ``field``'s cards in the worlds, and are the ones whose leads it reads: seats relative to
    the seat to act, as its view's are (the worlds are dealt in the view's seats, the seat to act at 0)."""
    drawn, logs = [], []
    for i, (view, candidates) in enumerate(positions):
        sampler = WorldSampler(view)
        if reading is None:
            hands, dead, log_weights = sampler.draw_many(rng, worlds)
        else:
            deal, seat, leads = reading[i]
            hands, dead, log_weights = sampler.draw_many(rng, worlds * DRAWS)
            theirs = tuple((seat + s) % deal.players for s in field_seats[i]) if field is not None else ()
            likely = lead_log_likelihood(policy, deal, seat, leads, hands, dead, field, theirs)  # the deal's seats
            kept = resample(log_weights + likely, worlds, rng)
            hands, dead, log_weights = hands[kept], dead[kept], np.zeros(worlds)
        drawn.append((sampler.deals(hands, dead), candidates))
        logs.append(log_weights)
    out = []
    for gains, log_weights, (_, candidates) in zip(network_gains(policy, drawn, field, field_seats), logs, drawn):
        w = np.exp(log_weights - log_weights.max())
        out.append(dict(zip(candidates, ((w[:, None] * gains).sum(axis=0) / w.sum()).tolist())))
    return out


def field_seats(d: int, players: int) -> tuple[int, ...]:
    """The seats the field plays in deal ``d`` of a round against a field: ``players``² deals of the learner alone
    against it, then as many of the field alone against the learner, the lone seat at every distance from the
    dealer (seat ``d % players``) in each."""
    k = d // players
    lone = k % players
    return (lone,) if (k // players) % 2 else tuple(s for s in range(players) if s != lone)


def play_group(policy: Any, table: Table, balance_range: Sequence[int] | None, reward_scale: float, seed: int,
               worlds: int, belief: str, deals: Sequence[int], play: str = "search", field: Any = None) -> Any:
    """The decisions of the deals ``deals`` (one table), played in lockstep, each labelled with the best lead by
    ``card_values`` (with ``belief="leads"``, over worlds that read the other seats' leads) and playing it, or with
    ``play="network"`` playing the card ``policy`` chooses.  With ``field`` (another ``Policy``), it plays the
    seats of ``field_seats`` in the games and in the values, and only the other seats' decisions are kept."""
    rng = np.random.default_rng([seed, deals[0], 2])
    live = [(d, deal_of(table, balance_range, seed, d)) for d in deals]
    leads: dict[int, list[Lead]] = {d: [] for d in deals}
    fielded = {d: field_seats(d, table[1]) if field is not None else () for d in deals}
    decisions = Decisions()
    while live:
        waiting, theirs = [], []
        for d, deal in live:
            if not deal.advance():
                decisions.end(d, deal)
            elif deal.to_act in fielded[d]:
                theirs.append((d, deal))
            else:
                view = seat_view(deal, deal.to_act)
                waiting.append((d, deal, view, lead_candidates(view)))
        for (d, deal), card in zip(theirs, network_cards(field, [deal for _, deal in theirs]) if theirs else []):
            if belief == "leads" and deal.forced < 0:
                leads[d].append(Lead(deal.to_act, encode(deal, deal.to_act), card, len(deal.plays)))
            deal.play(card)
        asked = [(d, deal, view, cands) for d, deal, view, cands in waiting if len(cands) > 1]
        searched = [(view, cands) for _, _, view, cands in asked]
        theirs_seats = [fielded[d] for d, _, _, _ in asked]  # the deal's seats: deal_values plays in the deal
        theirs_relative = [tuple(relative(s, deal.to_act, deal.players) for s in fielded[d])
                           for d, deal, _, _ in asked]  # card_values plays in worlds dealt in the view's seats
        reading = [(deal, deal.to_act, leads[d]) for d, deal, _, _ in asked] if belief == "leads" else None
        if belief == "deal":
            found = iter(deal_values(policy, [(deal, cands) for _, deal, _, cands in asked], field, theirs_seats)
                         if searched else [])
        else:
            found = iter(card_values(policy, searched, rng, worlds, reading, field, theirs_relative)
                         if searched else [])
        mine = iter(network_cards(policy, [deal for _, deal, _, _ in waiting]) if play == "network" and waiting
                    else [])
        for d, deal, view, cands in waiting:
            values = next(found) if len(cands) > 1 else {}
            card = best_lead(view, cands, [values[c] for c in cands]) if values else cands[0]
            decisions.note(d, deal, view.legal, card, values)
            played = next(mine) if play == "network" else card
            if belief == "leads" and view.forced < 0:
                leads[d].append(Lead(deal.to_act, encode(deal, deal.to_act), played, len(deal.plays)))
            deal.play(played)
        live = [(d, deal) for d, deal in live if d not in decisions.finals]
    return decisions.part(reward_scale)


def _task(common: tuple[Any, ...], job: tuple[Table, Sequence[int]]) -> Any:
    """``play_group`` of one job of ``rollout_games`` (``workers.play_tasks`` runs it where the games are played)."""
    policy, balance_range, reward_scale, seed, worlds, belief, play, field = common
    table, deals = job
    return play_group(policy, table, balance_range, reward_scale, seed, worlds, belief, deals, play, field)


def rollout_games(policy: Any, tables: Sequence[Table], deals: int, seed: int, *, worlds: int,
                  belief: str = "uniform", play: str = "search", balance_range: Sequence[int] | None,
                  reward_scale: float, workers: int = 1, backend: str = "local", address: str | None = None,
                  on_done: Callable[[int], None] | None = None, field: Any = None) -> Games:
    """Deals ``0 .. deals-1`` (deal ``d`` at ``tables[d % len(tables)]``) played by the search whose rollouts
    ``policy`` plays, at every seat, in this process, ``workers`` forked processes or Ray tasks
    (``workers.play_tasks``: the same data either way); ``on_done(n)`` is told each time ``n`` more deals are
    played.  ``belief``: the search's worlds are alike (``uniform``, the sampler's) or read the other seats'
    leads by ``policy`` (``leads``, ``search.belief``).  ``play``: each lead played is the search's best card
    (``search``) or ``policy``'s own (``network``); either way the decision learns the search's values and card.
    ``field``: another ``Policy`` playing the seats of ``field_seats`` (a best response to it is learned)."""
    if belief not in BELIEFS:
        raise PopeJoanError(f"belief must be one of {list(BELIEFS)}, got {brief(belief)}")
    if play not in PLAYS:
        raise PopeJoanError(f"play must be one of {list(PLAYS)}, got {brief(play)}")
    if belief == "deal" and play != "network":
        raise PopeJoanError(DEAL_NEEDS_NETWORK)
    start = time.perf_counter()
    jobs = lockstep_jobs(tables, deals)
    common = (policy, balance_range, reward_scale, seed, worlds, belief, play, field)
    parts = play_tasks(_task, common, jobs, workers=workers, backend=backend, address=address,
                       on_done=None if on_done is None else lambda job: on_done(len(job[1])))
    return gather(parts, time.perf_counter() - start)
