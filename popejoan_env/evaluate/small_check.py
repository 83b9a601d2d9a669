"""The search best response checked against the exact best response, on the small game.

The small game (``docs/small_game.md``) is small enough for an exact best response: ``exploitability.deal_values``
gives, deal by deal, a seat's expected counters when every seat follows a policy and when that seat plays its best
response.  ``check(policy, seat)`` plays the search best response (``players.best_response``) at that seat against
the policy at the other two, on deals drawn from the small game's 16,800, and compares on those very deals:

* the **search gain**: its counters less the policy's expected counters in that seat (exact, per deal);
* the **exact gain**: the best response's expected counters less the same.

The search is a lower bound: on average over the deals it cannot beat the exact best response, so a search gain
significantly above the exact gain is a bug.  The policies (``agent_policy``): ``random`` (uniform), ``lowest``,
``stops_first``, ``pool_hunter``, ``pimc`` re-seeded by the view it sees (one deterministic policy, as
``exploitability.player_policy`` makes it), a network of a model file trained on the small game, and CFR+
(``cfr_policy``, OpenSpiel's solver on the subgame of each turn-up asked for).  The table in
``docs/evaluation.md`` is ``benchmarks/bench_exploit.py small``'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from popejoan_env.cards import parse_card
from popejoan_env.engine import Deal
from popejoan_env.errors import PopeJoanError
from popejoan_env.players.base import ask, call_reset
from popejoan_env.search.posterior import ViewPolicy, view_seed
from popejoan_env.rules import SMALL_PACK_PLAYERS, Rules
from popejoan_env.seat_view import SeatView, seat_view

SMALL = Rules(pack="small")
"""The small game's rules (3 seats, the dealer at seat 0 in every deal the check plays)."""
SEATS = ("dealer", "eldest", "third seat")
"""Seats 0, 1 and 2 of the small game's deals (dealer 0)."""
DEALS = 400
"""Deals a check plays by default (drawn without replacement from the small game's)."""
GOAL = 0.7
"""Share of the exact gain the search should reach where the exact gain is at least ``MATERIAL``."""
MATERIAL = 0.1
"""Exact gains (counters a deal) from which the search is asked to reach ``GOAL`` of them."""
WORLDS = 16
"""Worlds per card and decision on the small game by default (two hidden hands of three cards: 20 worlds at most)."""
DRAWS = 64
"""Worlds drawn and weighed per decision on the small game by default."""


class PolicyPlayer:
    """A seat playing a ``ViewPolicy``: a card drawn from its probabilities (its one card when deterministic)."""

    def __init__(self, policy: ViewPolicy, seed: int | None = None) -> None:
        self.policy = policy
        self.known_policy = policy
        self.name = policy.name
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the generator."""
        self.rng = np.random.default_rng(seed)

    def act(self, view: SeatView) -> int:
        """A card drawn from the policy (no draw when one card has all the probability)."""
        legal = view.legal
        if len(legal) == 1:
            return legal[0]
        p = self.policy.row(view)[list(legal)]
        if p.max() >= 1.0:
            return legal[int(np.argmax(p))]
        return legal[int(np.searchsorted(np.cumsum(p / p.sum()), self.rng.random(), side="right"))]


def _one_hot(player: Any) -> ViewPolicy:
    def function(view: SeatView) -> dict[int, float]:
        return {ask(player, view): 1.0}

    return ViewPolicy(function, player.name)


def agent_policy(spec: str, *, salt: int = 0) -> ViewPolicy:
    """The small game's policy named by ``spec``: ``random`` (uniform), a deterministic scripted player, ``pimc``
    (with its parameters) re-seeded by each view (``posterior.view_seed``), or a model file's network (its best
    card)."""
    from popejoan_env.players import make_player

    if spec == "random":
        return ViewPolicy(lambda view: {c: 1.0 / len(view.legal) for c in view.legal}, "random")
    player = make_player(spec, seed=0)
    if player.name.startswith("pimc"):
        def seeded(view: SeatView) -> dict[int, float]:
            call_reset(player, view_seed(view, salt))
            return {ask(player, view): 1.0}

        return ViewPolicy(seeded, f"{player.name}, re-seeded by the view")
    return _one_hot(player)


def cfr_policy(iterations: int, turnups: Sequence[str]) -> ViewPolicy:
    """CFR+ (OpenSpiel's ``CFRPlusSolver``, ``iterations`` iterations) on the subgame of each turn-up, as a policy
    of the views of those subgames (every view reachable there, from any play, is in its table)."""
    import pyspiel
    from open_spiel.python.algorithms import cfr

    import popejoan_env.envs.openspiel_game as openspiel_game
    from popejoan_env.search.posterior import view_key

    table: dict[tuple[Any, ...], dict[int, float]] = {}
    for turnup in turnups:
        game = pyspiel.load_game(openspiel_game.SMALL_GAME_NAME, {"turnup": turnup})
        solver = cfr.CFRPlusSolver(game)
        for _ in range(iterations):
            solver.evaluate_and_update_policy()
        average = solver.average_policy()
        stack = [game.new_initial_state().child(i) for i in range(game.max_chance_outcomes())]
        while stack:
            state = stack.pop()
            if state.is_terminal():
                continue
            player = state.current_player()
            table[view_key(seat_view(state.deal, player))] = {
                int(a): float(p) for a, p in average.action_probabilities(state, player).items()}
            stack.extend(state.child(a) for a in state.legal_actions())

    def function(view: SeatView) -> Mapping[int, float]:
        found = table.get(view_key(view))
        if found is None:
            raise PopeJoanError("the CFR+ policy has no entry for this view: a turn-up it was not solved for")
        return found

    return ViewPolicy(function, f"CFR+ ({iterations} iterations)")


def _ci(x: np.ndarray) -> dict[str, float]:
    from popejoan_env.tournament import mean_ci

    mean, half = mean_ci(np.asarray(x, dtype=np.float64))
    return {"mean": mean, "ci95": half}


def check(policy: ViewPolicy, seat: int, *, deals: int = DEALS, seed: int = 1, worlds: int = WORLDS,
          draws: int = DRAWS, rounds: int = 1, confidence: float = 2.0, turnup: str | None = None,
          posterior: str = "agent", continuation: str = "agent") -> dict[str, Any]:
    """The search best response at ``seat`` (0 dealer, 1 eldest, 2 third) against ``policy`` at the other seats, on
    ``deals`` deals drawn with ``seed`` from the small game (those turning up ``turnup`` when given), against the
    exact best response on the same deals: both gains, their difference deal by deal (95% CIs), and the share."""
    from popejoan_env.evaluate import exploitability
    from popejoan_env.players import make_player
    from popejoan_env.players.best_response import BestResponsePlayer

    if seat not in range(SMALL_PACK_PLAYERS):
        raise PopeJoanError(f"the small game has seats 0..{SMALL_PACK_PLAYERS - 1}, got {seat!r}")

    def exact_policy(deal: Deal, s: int) -> Mapping[int, float]:
        row = policy.row(seat_view(deal, s))
        return {c: float(row[c]) for c in deal.legal_actions()}

    up = None if turnup is None else parse_card(turnup)
    values = exploitability.deal_values(SMALL, exact_policy, seat, turnup=up)
    rng = np.random.default_rng(seed)
    if not 2 <= deals <= len(values.deals):
        raise PopeJoanError(f"a check plays from 2 to {len(values.deals):,} deals, got {deals}")
    chosen = np.sort(rng.choice(len(values.deals), size=deals, replace=False))
    search = BestResponsePlayer(lambda s: PolicyPlayer(policy, s), worlds=worlds, draws=draws, rounds=rounds,
                                confidence=confidence, posterior=posterior, continuation=continuation,
                                policy=policy, agent_name=policy.name,
                                make=lambda text, s: make_player(text, seed=s))
    found, exact = [], []
    for d in chosen.tolist():
        *hands, dead = values.deals[d]
        deal = Deal.from_cards(hands, dead, 0, SMALL)
        seeds = np.random.SeedSequence([seed, d]).generate_state(SMALL_PACK_PLAYERS + 1).tolist()
        search.reset(seeds[-1])
        players: list[Any] = [PolicyPlayer(policy, seeds[s]) for s in range(SMALL_PACK_PLAYERS)]
        players[seat] = search
        deal.play_out(lambda dl, legal: ask(players[dl.to_act], seat_view(dl, dl.to_act)))
        found.append(deal.delta[seat] - values.on_policy[d])
        exact.append(values.best_response[d] - values.on_policy[d])
    g, e = np.array(found), np.array(exact)
    return {"policy": policy.name, "seat": SEATS[seat], "deals": deals, "seed": seed, "turnup": turnup,
            "worlds": search.worlds, "draws": search.draws, "rounds": rounds, "confidence": confidence,
            "posterior": posterior,
            "continuation": continuation,
            "search_gain": _ci(g), "exact_gain": _ci(e), "difference": _ci(g - e),
            "exact_gain_all_deals": float(np.mean(values.best_response) - np.mean(values.on_policy)),
            "share": float(g.mean() / e.mean()) if e.mean() > 0 else math.nan, "counts": dict(search.counts)}
