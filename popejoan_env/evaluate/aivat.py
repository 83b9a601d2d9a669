"""AIVAT-class corrections for ``popejoan evaluate --aivat``: what the known random choices inside a deal added to it.

Duplicate play cancels the luck of the deal: each side plays every hand, and a value function of the deal alone
(AIVAT's correction at the deal's chance node) would be the same in both games of a seat and cancel in the margin.
What duplicate does not cancel is the luck *inside* a deal: the random numbers of the players that draw them.  AIVAT
(Burch et al. 2018) corrects each decision of a player whose policy is known by

    c = v(h·a) - E[v(h·a')],   a' drawn from the player's policy at h,

the value ``v`` of the position after the card played less its expectation under the policy; ``c`` has mean 0 given
``h`` whatever ``v`` is, so the outcome less the sum of its ``c`` has the outcome's mean.  Here:

* ``random``: ``E`` is the mean over the legal cards (exact);
* ``pimc`` and ``pimc_net``: their policy has no closed form, but it can be sampled: ``a'`` is the card of a copy of
  the player at the same view with its own seed (``SALT``, the deal, the game and the decision), an unbiased
  estimate of the expectation, so ``c`` still has mean 0;
* a network that samples its cards: its softmax (exact);
* every other player is deterministic (``lowest``, ``stops_first``, ``pool_hunter``, networks playing their best
  card): ``a'`` is ``a`` and ``c`` is 0.  There is nothing random in its choices to correct.

``v`` (``VALUE``) is fixed before any evaluation and has no parameters: the evaluated seat's counters when the deal
is played out from the position by ``pimc``'s rollout policy (``greedy_lead`` at every seat with every card in view,
``search.playouts.greedy_gains``).  A margin's correction is the mean over its games of each lone seat's corrections
(the agent's games less the opponent's), and it enters the report's control variate (``variance.section``) as one
more covariate whose mean is exactly 0: its coefficient is fitted on the deals (a coefficient of 1 is AIVAT as
published, which this value function makes wider, not narrower: ``docs/evaluation.md``).

``play_block`` plays the very games of ``runner.play_block`` (the field lineups, every rotation, the same seeds for
the players: the same per-deal figures, ``tests/test_aivat.py`` checks it) and records the decisions it corrects.
``variance.check_aivat_unbiased`` measures the corrected estimate against the plain one on fresh seeds.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from popejoan_env.engine import Deal
from popejoan_env.evaluate import dealset
from popejoan_env.checks import as_int, brief
from popejoan_env.players import Player, make_player
from popejoan_env.players.base import ask, call_act, call_reset
from popejoan_env.rules import Rules
from popejoan_env.seat_view import SeatView, seat_view
from popejoan_env.tournament.runner import player_seed
from popejoan_env.tournament.scores import NET, WENT_OUT, deal_scores

VALUE = "greedy-rollout/1"
"""The value function's name and version: the seat's counters when the deal is played out from the position by
``pimc``'s rollout policy, every seat leading ``greedy_lead`` with every card in view."""
METHOD = "AIVAT decision corrections (the players' own random choices) with the value function " + VALUE
"""How the report names the correction."""
SALT = 0xA17A7
"""Seeds the copies of a sampled player that draw the card it might have played (``a'``)."""
KINDS = ("uniform", "sampled", "softmax")
"""The policies corrected: ``random``'s, a search's (sampled), a sampling network's."""


def policy_kind(player: Player) -> str | None:
    """How the choices of ``player`` are corrected (one of ``KINDS``), from its known policy
    (``players.best_response.known_policy``), or None for a deterministic player or one whose policy is not known."""
    from popejoan_env.players.best_response import NoKnownPolicyError, known_policy
    from popejoan_env.search.posterior import NetworkPolicy, SampledPolicy, UniformPolicy

    try:
        policy = known_policy(player, np.random.default_rng(0))
    except NoKnownPolicyError:
        return None
    kinds = {UniformPolicy: "uniform", SampledPolicy: "sampled", NetworkPolicy: "softmax"}
    return kinds.get(type(policy))


def _values(h: Deal, cards: list[int], seat: int) -> np.ndarray:
    """``VALUE`` of each card led at ``h`` for ``seat`` (counters from now on: the same differences)."""
    from popejoan_env.search.playouts import greedy_gains

    return greedy_gains([h], cards, seat)[0].astype(np.float64)


def _softmax(player: Any, view: SeatView) -> np.ndarray:
    """A sampling network's probabilities of the view's legal cards, in their order."""
    from popejoan_env.search.posterior import NetworkPolicy

    return NetworkPolicy(player.policy).probabilities([view])[0][list(view.legal)]


class _Game:
    """One game's decisions by players of a known random policy, and their corrections for the lone seat."""

    def __init__(self, players: dict[int, Player], twins: dict[int, Player], at: list[int],
                 kinds: dict[int, str | None], seeds: tuple[int, ...]) -> None:
        self.players, self.twins, self.at, self.kinds, self.seeds = players, twins, at, kinds, seeds
        self.log: list[tuple[Deal, int, int, list[int]]] = []
        self.decisions = {ent: 0 for ent in players}
        self.think = {ent: 0.0 for ent in players}

    def choose(self, deal: Deal, legal: list[int]) -> int:
        """The player at the seat to act answers, as the tournament asks it (timed, counted); kept if corrected."""
        seat = deal.to_act
        ent = self.at[seat]
        view = seat_view(deal, seat)
        start = time.perf_counter()
        card = as_int(call_act(self.players[ent], view))
        self.think[ent] += time.perf_counter() - start
        self.decisions[ent] += 1
        if card is None or card not in legal:
            from popejoan_env.errors import IllegalActionError

            raise IllegalActionError(f"player {brief(self.players[ent].name, 100)} at seat {seat} chose badly: not "
                                     f"one of {legal}")
        if self.kinds[ent] is not None:
            self.log.append((deal.copy(), seat, card, list(legal)))
        return card

    def correction(self, lone: int) -> float:
        """The sum over the decisions kept of ``v(h·a) - E[v(h·a')]`` for the lone seat."""
        total = 0.0
        for t, (h, seat, card, legal) in enumerate(self.log):
            ent = self.at[seat]
            kind = self.kinds[ent]
            if kind == "sampled":
                twin = self.twins[ent]
                call_reset(twin, int(np.random.SeedSequence([SALT, *self.seeds, t]).generate_state(1)[0]))
                other = ask(twin, seat_view(h, seat))
                if other == card:
                    continue
                v = _values(h, [card, other], lone)
                total += v[0] - v[1]
                continue
            v = _values(h, legal, lone)
            p = np.full(len(legal), 1.0 / len(legal)) if kind == "uniform" else \
                _softmax(self.players[ent], seat_view(h, seat))
            total += v[legal.index(card)] - float(p @ v)
        return total


def play_block(agent: Player, opponent: Player, agent_spec: str, opponent_spec: str, block: int, rules: Rules,
               seats: int) -> dict[str, Any]:
    """``runner.play_block``'s figures of one block (the same games), and per deal the margin's correction
    (``aivat``: the agent's games' corrections less the opponent's, each the mean over the rotations) and the
    decisions corrected."""
    return play_deals(agent, opponent, agent_spec, opponent_spec, dealset.block_seed(block), dealset.BLOCK, rules,
                      seats)


def play_deals(agent: Player, opponent: Player, agent_spec: str, opponent_spec: str, seed: int, deals: int,
               rules: Rules, seats: int) -> dict[str, Any]:
    """``play_block`` on the deals of the duplicate tournament of ``seed`` (deal ``d`` dealt by seat ``d mod
    seats`` from ``default_rng([seed, d])``)."""
    players = {0: agent, 1: opponent}
    kinds = {0: policy_kind(agent), 1: policy_kind(opponent)}
    twins = {ent: make_player(spec) for ent, spec in ((0, agent_spec), (1, opponent_spec))
             if kinds[ent] == "sampled"}
    out: dict[str, Any] = {k: [] for k in ("margin", "agent_net", "opponent_net", "agent_out", "opponent_out",
                                           "aivat")}
    decisions, think, corrected = np.zeros(2, dtype=np.int64), np.zeros(2), 0
    start = time.perf_counter()
    for d in range(deals):
        base = Deal.new(rules, seats, d % seats, np.random.default_rng([seed, d]))
        net, went, fix = np.zeros(2), np.zeros(2), np.zeros(2)
        for li, (lone, field) in enumerate(((0, 1), (1, 0))):
            for r in range(seats):
                at = [lone if s == r else field for s in range(seats)]
                for ent in sorted(set(at)):
                    call_reset(players[ent], player_seed(seed, d, 0, li, r, ent))
                game = _Game(players, twins, at, kinds, (seed, d, li, r))
                deal = base.copy()
                deal.play_out(game.choose)
                scores = deal_scores(deal)
                net[lone] += scores[r, NET]
                went[lone] += scores[r, WENT_OUT]
                fix[lone] += game.correction(r)
                corrected += len(game.log)
                for ent in (0, 1):
                    decisions[ent] += game.decisions[ent]
                    think[ent] += game.think[ent]
        net, went, fix = net / seats, went / seats, fix / seats
        out["margin"].append(float(net[0] - net[1]))
        out["agent_net"].append(float(net[0]))
        out["opponent_net"].append(float(net[1]))
        out["agent_out"].append(float(went[0]))
        out["opponent_out"].append(float(went[1]))
        out["aivat"].append(float(fix[0] - fix[1]))
    out.update({"agent_decisions": int(decisions[0]), "agent_seconds": float(think[0]),
                "opponent_decisions": int(decisions[1]), "opponent_seconds": float(think[1]),
                "wall_seconds": time.perf_counter() - start, "aivat_decisions": corrected})
    return out

