"""An upper end of what one seat can gain against AGENT: a seat that sees every hand and every later choice.

``popejoan exploit`` finds a lower bound of one seat's gain by deviating from AGENT (a search that sees only its own
view). This is the other end, on the same frozen deals and seats and with the same seeds (``exploit_search``): the
other seats play AGENT, each seeded as in AGENT's own game, and the deviating seat tries every line of its own leads,
every legal card at each of its decisions, the others answering as AGENT does (each copied with its generator at
every branch, so a line plays the game it would play), and keeps the best (``best_line``). No strategy, however it
reads the hidden cards, ends a game better than the best of its lines there, so the mean gain (``measure``) is an
upper bound of one seat's gain against AGENT, up to sampling error. It is a loose one: seeing every hand is worth a
great deal in a stops game.

The lines are counted (``MAX_LINES`` a game, past which the game is refused): ``modern`` leads the lowest card of a
suit (at most four choices), while with ``lead="any"`` a seat may lead any card and the lines multiply.
"""

from __future__ import annotations

import copy
import os
import time
from typing import Any

import numpy as np

from popejoan_env.engine import Deal
from popejoan_env.errors import PopeJoanError
from popejoan_env.evaluate import dealset
from popejoan_env.evaluate.exploit_search import cpu_seconds, frozen_deal, game_seed, interval, play_deals
from popejoan_env.players.base import Player, ask, call_reset
from popejoan_env.rules import Rules
from popejoan_env.seat_view import seat_view

MAX_LINES = 200_000
"""Most lines (games played to the end) one game's search may try: a modern game has tens to thousands."""


class TooManyLinesError(PopeJoanError):
    """A game whose lines for the seat exceed ``MAX_LINES`` (the rules let it lead too freely)."""


def best_line(deal: Deal, seat: int, players: list[Player], max_lines: int = MAX_LINES) -> tuple[int, list[int]]:
    """The most counters ``seat`` can end ``deal`` with (its ``delta``) when every other seat answers as
    ``players`` does, and the leads of ``seat`` that do it (its decisions with more than one legal card, in order).
    ``deal`` and ``players`` are played on: pass copies."""
    tried = [0]

    def walk(game: Deal, others: list[Player]) -> tuple[int, list[int]]:
        legal = game.advance()
        while legal and game.to_act != seat:
            game.play(ask(others[game.to_act], seat_view(game, game.to_act)))
            legal = game.advance()
        if not legal:
            tried[0] += 1
            if tried[0] > max_lines:
                raise TooManyLinesError(f"seat {seat} has more than {max_lines:,} lines in this game")
            return game.delta[seat], []
        best: tuple[int, list[int]] | None = None
        for k, card in enumerate(legal):
            # The last card goes on with the originals: every other branch gets copies (generators included).
            branch, answers = (game, others) if k == len(legal) - 1 else (game.copy(), copy.deepcopy(others))
            branch.play(card)
            value, line = walk(branch, answers)
            if best is None or value > best[0]:
                best = (value, [card, *line])
        assert best is not None
        return best

    return walk(deal, players)


class _Table:
    """AGENT at every seat, reset as ``popejoan exploit`` resets it, and the clairvoyant seat's best lines."""

    def __init__(self, agent: str, preset: str, seats: int, seed: int) -> None:
        from popejoan_env.players import make_player

        self.rules = Rules.preset(preset)
        self.seats = seats
        self.seed = seed
        self.agents = [make_player(agent, seed=0) for _ in range(seats)]

    def _reset(self, d: int) -> None:
        for s, agent in enumerate(self.agents):
            call_reset(agent, game_seed(self.seed, d, s))

    def deal(self, d: int) -> dict[str, Any]:
        """Deal ``d``: AGENT's counters per seat in its own game, and the clairvoyant seat's best, seat by seat."""
        start = time.process_time()
        base = frozen_deal(d, self.rules, self.seats)
        self._reset(d)
        game = base.copy()
        game.play_out(lambda dl, legal: ask(self.agents[dl.to_act], seat_view(dl, dl.to_act)))
        best = []
        for seat in range(self.seats):
            self._reset(d)
            best.append(best_line(base.copy(), seat, list(self.agents))[0])
        return {"deal": d, "own": game.delta, "best": best, "cpu_seconds": time.process_time() - start}


def measure(agent: str, *, preset: str = "modern", seats: int = 4, deals: int = 200, seed: int = 1,
            workers: int = 1) -> dict[str, Any]:
    """The clairvoyant seat's gain over AGENT on the first ``deals`` frozen deals (mean over the seats of each
    deal, its 95% interval), AGENT's own counters and the clairvoyant seat's, and the time."""
    if not 1 <= deals <= dealset.DEALS:
        raise PopeJoanError(f"the frozen set holds {dealset.DEALS} deals, got {deals}")
    dealset.check_dealing(dealset.load(), deals)
    wall, cpu = time.perf_counter(), os.times()
    rows = play_deals(_Table, (agent, preset, seats, seed), range(deals), workers)
    after = os.times()
    own = np.array([r["own"] for r in rows], dtype=np.float64)
    best = np.array([r["best"] for r in rows], dtype=np.float64)
    return {"agent": agent, "preset": preset, "seats": seats, "deals": deals, "seed": seed,
            "gain": interval((best - own).mean(axis=1)), "clairvoyant": interval(best.mean(axis=1)),
            "agent_in_own_field": interval(own.mean(axis=1)), "wall_seconds": round(time.perf_counter() - wall, 1),
            "cpu_seconds": cpu_seconds(cpu, after)}
