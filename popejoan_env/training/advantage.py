"""The improvement a round has left to learn: what one step of look-ahead gains over the network after it.

A round of ``popejoan train`` plays the search whose rollouts the network plays
(``rollout_games``) and teaches the network that search's values.  The round can
only gain what the search gains over the network, so this measures it directly,
at the positions the network itself reaches: the network plays every seat of
``deals`` deals, and at each decision with two or more candidate leads

* the round's search chooses its card from ``worlds`` worlds (as a round does),
* a judge values that card and the network's own card with the network playing
  every seat afterwards,

and the decision's gain is the judge's value of the search's card minus its
value of the network's: its mean is what playing the search's card at one
decision (and the network after it) gains over the network, the advantage a
policy-iteration step has to give.  Near zero, the network is its own one-step
improvement and a further round has nothing to learn; well above zero, the
round has something left that its student did not take.

The judge (``judge_belief``) is one of

* ``uniform``: ``judge_worlds`` worlds drawn independently of the search's, all
  consistent worlds alike, so the gain is not inflated by the maximum over the
  search's noisy values; but the judge believes what the search believes, so a
  belief both get wrong favours the search;
* ``leads``: as many worlds resampled by how likely the network makes the other
  seats' leads (``search.belief``), a model of the posterior;
* ``deal``: the deal itself (``rollout_games.deal_values``).  Every seat is
  the same greedy network and the deal was dealt at random, so the deal's
  hidden cards are a draw from the exact posterior of what the seat to act has
  seen, and the card's value in it is an unbiased estimate of its value to that
  seat: no belief to get wrong, one world's noise a decision (more deals for
  the same interval), and cheap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from popejoan_env.checks import brief
from popejoan_env.errors import PopeJoanError
from popejoan_env.observation import encode
from popejoan_env.players.pimc import best_lead
from popejoan_env.players.stops import lead_candidates
from popejoan_env.search.belief import Lead
from popejoan_env.seat_view import seat_view
from popejoan_env.training.expert_games import Table, deal_of
from popejoan_env.training.rollout_games import card_values, deal_values, lockstep_jobs, network_cards
from popejoan_env.training.workers import play_tasks

WORLD_BELIEFS = ("uniform", "leads")
"""The beliefs that draw worlds: every consistent world alike, or what the other seats' leads say."""
BELIEFS = (*WORLD_BELIEFS, "deal")
"""What the judge values a card over: worlds of a belief (``WORLD_BELIEFS``), or the deal itself (``deal``)."""


@dataclasses.dataclass(frozen=True)
class Advantage:
    """Each searched decision's gain (counters) and whether the search chose another card, by deal."""

    deal: np.ndarray
    """int64 [n]: the deal of each decision"""
    gain: np.ndarray
    """float64 [n]: the judge's value of the search's card minus that of the network's card"""
    differ: np.ndarray
    """bool [n]: the search's card is not the network's"""
    deals: int

    def per_deal(self) -> tuple[float, float]:
        """The mean over deals of the gains summed over each deal's decisions (every seat's), and its 95% Student-t
        CI (NaN with one deal)."""
        from popejoan_env.tournament.stats import mean_ci

        return mean_ci(np.bincount(self.deal, weights=self.gain, minlength=self.deals))

    def per_decision(self) -> tuple[float, float]:
        """The mean gain a decision (every decision's gain over their number) and its 95% CI, clustered by deal:
        a ratio of two sums over the deals (gains, decisions), by the delta method (``stats.ratio_ci``)."""
        from popejoan_env.tournament.stats import ratio_ci

        sums = np.bincount(self.deal, weights=self.gain, minlength=self.deals)
        counts = np.bincount(self.deal, minlength=self.deals).astype(np.float64)
        return ratio_ci(np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0), counts)


def _group(policy: Any, table: Table, balance_range: Sequence[int] | None, seed: int, worlds: int,
           judge_worlds: int, deals: Sequence[int], belief: str = "uniform", judge_belief: str = "uniform"
           ) -> tuple[list[int], list[float], list[bool]]:
    """The searched decisions of the deals ``deals`` (one table), the network playing every seat, in lockstep;
    the search's and the judge's worlds read the other seats' leads where their belief is ``leads``."""
    rng, judge_rng = np.random.default_rng([seed, deals[0], 2]), np.random.default_rng([seed, deals[0], 3])
    live = [(d, deal_of(table, balance_range, seed, d)) for d in deals]
    leads: dict[int, list[Lead]] = {d: [] for d in deals}
    out: tuple[list[int], list[float], list[bool]] = ([], [], [])
    while live:
        live = [(d, deal) for d, deal in live if deal.advance()]
        if not live:
            break
        mine = network_cards(policy, [deal for _, deal in live])
        searched = []
        for (d, deal), net in zip(live, mine):
            view = seat_view(deal, deal.to_act)
            cands = lead_candidates(view)
            if len(cands) > 1:
                searched.append((d, deal, view, cands, net))
        if searched:
            reading = [(deal, deal.to_act, leads[d]) for d, deal, _, _, _ in searched]
            chosen = card_values(policy, [(view, cands) for _, _, view, cands, _ in searched], rng, worlds,
                                 reading if belief == "leads" else None)
            judging = [(view, cands if net in cands else [*cands, net]) for _, _, view, cands, net in searched]
            if judge_belief == "deal":
                judged = deal_values(policy, [(deal, cands)
                                              for (_, deal, _, _, _), (_, cands) in zip(searched, judging)])
            else:
                judged = card_values(policy, judging, judge_rng, judge_worlds,
                                     reading if judge_belief == "leads" else None)
            for (d, _, view, cands, net), values, judge in zip(searched, chosen, judged):
                card = best_lead(view, cands, [values[c] for c in cands])
                out[0].append(d)
                out[1].append(judge[card] - judge[net])
                out[2].append(card != net)
        for (d, deal), net in zip(live, mine):
            if "leads" in (belief, judge_belief) and deal.forced < 0:
                leads[d].append(Lead(deal.to_act, encode(deal, deal.to_act), net, len(deal.plays)))
            deal.play(net)
    return out


def _task(common: tuple[Any, ...], job: tuple[Table, Sequence[int]]) -> Any:
    """``_group`` of one job of ``one_step_advantage`` (``workers.play_tasks`` runs it where it is played)."""
    policy, balance_range, seed, worlds, judge_worlds, belief, judge_belief = common
    table, deals = job
    return _group(policy, table, balance_range, seed, worlds, judge_worlds, deals, belief, judge_belief)


def one_step_advantage(policy: Any, table: Table, deals: int, seed: int, *, worlds: int = 8,
                       judge_worlds: int = 64, belief: str = "uniform", judge_belief: str = "uniform",
                       balance_range: Sequence[int] | None = None, workers: int = 1) -> Advantage:
    """The gain of a round's search (``worlds`` worlds a decision) over ``policy`` (a numpy ``Policy``) at every
    searched decision of deals ``0 .. deals-1`` at ``table``, judged on ``judge_worlds`` independent worlds or
    the deal itself; the same figures in this process or ``workers`` forked ones.  ``belief``: the search's worlds are alike
    (``uniform``) or read the other seats' leads by ``policy`` (``leads``, ``search.belief``);
    ``judge_belief``: the judge's worlds likewise, or no worlds but the deal itself (``deal``: unbiased, see the
    module's text)."""
    for name, value, top in (("deals", deals, 10**6), ("worlds", worlds, 1024), ("judge_worlds", judge_worlds, 1024),
                             ("workers", workers, 256)):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= top:
            raise PopeJoanError(f"{name} must be an integer 1..{top:,}, got {brief(value)}")
    for name, value, known in (("belief", belief, WORLD_BELIEFS), ("judge_belief", judge_belief, BELIEFS)):
        if value not in known:
            raise PopeJoanError(f"{name} must be one of {list(known)}, got {brief(value)}")
    parts = play_tasks(_task, (policy, balance_range, seed, worlds, judge_worlds, belief, judge_belief),
                       lockstep_jobs([table], deals), workers=workers)
    return Advantage(deal=np.asarray([d for part in parts for d in part[0]], dtype=np.int64),
                     gain=np.asarray([g for part in parts for g in part[1]], dtype=np.float64),
                     differ=np.asarray([x for part in parts for x in part[2]], dtype=bool), deals=deals)
