"""Playing a tournament: every game of every deal, through the engine's one decision loop.

A deal is played with ``Deal.play_out``: the engine plays forced cards (R8)
and lone legal leads itself, and at every real decision the entrant at the
seat to act is asked ``act(seat_view(deal, seat))``, timed and counted.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from popejoan_env.cards import names_of
from popejoan_env.checks import as_int
from popejoan_env.engine import Deal
from popejoan_env.errors import IllegalActionError, PopeJoanError
from popejoan_env.players import Player, make_player
from popejoan_env.rules import Rules, check_players, resolve_rules
from popejoan_env.seat_view import seat_view
from popejoan_env.tournament.result import TournamentResult
from popejoan_env.tournament.schedule import Lineup, groups_of_deal, make_schedule
from popejoan_env.tournament.scores import FIELDS, NET, deal_scores

MAX_DEALS = 10_000_000
"""Most deals one tournament plays (its per-deal scores are kept in memory; 2,000 already give tight intervals)."""

_K = len(FIELDS)
DealOutcome = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Of one deal: per-entrant sums of group means, the number of groups each entrant was in, pair differences."""


def check_settings(deals: int, seed: int, seats: int, max_groups: int, workers: int) -> None:
    """Refuse tournament settings that cannot run (a PopeJoanError naming the setting), before any work."""
    n = as_int(deals)
    if n is None or n < 2:
        raise PopeJoanError(f"a tournament needs at least 2 deals (for a confidence interval), got {deals!r}")
    if n > MAX_DEALS:
        raise PopeJoanError(f"a tournament plays at most {MAX_DEALS:,} deals, got {n:,}")
    s = as_int(seed)
    if s is None or s < 0:
        raise PopeJoanError(f"the seed must be a non-negative integer, got {seed!r}")
    check_players(seats)
    g = as_int(max_groups)
    if g is None or g < 1:
        raise PopeJoanError(f"max groups per deal must be an integer of at least 1, got {max_groups!r}")
    w = as_int(workers)
    if w is None or w < 1:
        raise PopeJoanError(f"workers must be an integer of at least 1, got {workers!r}")


def player_seed(seed: int, deal: int, group: int, lineup: int, rotation: int, entrant: int) -> int:
    """The seed a player is reset with for one game (so results do not depend on the order of play)."""
    return int(np.random.SeedSequence([seed, deal, group, lineup, rotation, entrant]).generate_state(1)[0])


class _Runner:
    """Plays the games of a tournament deal by deal; one per process."""

    def __init__(self, players: list[Player], rules: Rules, seats: int, seed: int,
                 groups: list[list[Lineup]], max_groups: int) -> None:
        self.players = players
        self.rules = rules
        self.seats = seats
        self.seed = seed
        self.groups = groups
        self.max_groups = max_groups
        self.decisions = np.zeros(len(players), dtype=np.int64)
        self.think = np.zeros(len(players), dtype=np.float64)
        self.games = 0
        self._at: list[int] = []  # entrant at each seat in the game being played

    def deal(self, d: int) -> DealOutcome:
        """Play every game of deal ``d``: per-entrant sums and counts, and pair differences."""
        e = len(self.players)
        base = Deal.new(self.rules, self.seats, d % self.seats, np.random.default_rng([self.seed, d]))
        value = np.zeros((e, _K))
        groups_in = np.zeros(e)
        pair_sum = np.zeros((e, e))
        pair_n = np.zeros((e, e))
        for g in groups_of_deal(d, len(self.groups), self.max_groups):
            sums = np.zeros((e, _K))
            seats_filled = np.zeros(e)
            for li, lineup in enumerate(self.groups[g]):
                for r in range(self.seats):
                    at = [lineup.entrants[(s - r) % self.seats] for s in range(self.seats)]
                    for ent in sorted(set(at)):
                        self.players[ent].reset(player_seed(self.seed, d, g, li, r, ent))
                    deal = base.copy()
                    self._at = at
                    deal.play_out(self._choose)
                    self.games += 1
                    scores = deal_scores(deal)
                    for s in range(self.seats):
                        if lineup.scored[(s - r) % self.seats]:
                            sums[at[s]] += scores[s]
                            seats_filled[at[s]] += 1
            here = np.flatnonzero(seats_filled)
            means = sums[here] / seats_filled[here, None]
            value[here] += means
            groups_in[here] += 1
            for i, a in enumerate(here):
                for j, b in enumerate(here):
                    if a != b:
                        pair_sum[a, b] += means[i, NET] - means[j, NET]
                        pair_n[a, b] += 1
        return value, groups_in, np.where(pair_n > 0, pair_sum / np.maximum(pair_n, 1), np.nan)

    def _choose(self, deal: Deal, legal: list[int]) -> int:
        """The entrant at the seat to act answers ``act(seat_view)``; timed, counted and checked."""
        seat = deal.to_act
        ent = self._at[seat]
        start = time.perf_counter()
        answer = self.players[ent].act(seat_view(deal, seat))
        self.think[ent] += time.perf_counter() - start
        self.decisions[ent] += 1
        card = as_int(answer)
        if card is None or card not in legal:
            raise IllegalActionError(
                f"player {self.players[ent].name!r} at seat {seat} chose badly: {_refusal(deal, answer, legal)}"
            )
        return card


def _refusal(deal: Deal, answer: object, legal: list[int]) -> str:
    """Why ``answer`` may not be played, in the engine's words (tried on a copy, so the deal is untouched)."""
    if as_int(answer) is None:
        return f"{answer!r} is not a card id; legal: {names_of(legal)}"
    try:
        deal.copy().play(as_int(answer))  # type: ignore[arg-type]
    except PopeJoanError as err:
        return str(err)
    return f"{answer!r} is not among the legal cards {names_of(legal)}"


_WORKER: _Runner | None = None


def _worker_deals(deals: list[int]) -> tuple[list[int], list[DealOutcome], np.ndarray, np.ndarray, int]:
    runner = _WORKER
    assert runner is not None
    before = (runner.decisions.copy(), runner.think.copy(), runner.games)
    out = [runner.deal(d) for d in deals]
    return (deals, out, runner.decisions - before[0], runner.think - before[1], runner.games - before[2])


def run_duplicate(
    entrants: Sequence[Player | str],
    deals: int,
    seed: int,
    rules: Rules | str | Mapping[str, Any] = "modern",
    seats: int = 4,
    progress: bool = False,
    lineups: str = "auto",
    max_groups: int = 12,
    workers: int = 1,
) -> TournamentResult:
    """Play a duplicate tournament (see ``popejoan_env.tournament``) and return its result.

    ``entrants`` are players or player specs (``make_player``); ``lineups`` is
    ``auto``, ``subsets`` or ``field``; ``workers > 1`` plays deals in forked
    processes (the numbers do not change, only the time).
    """
    rules = resolve_rules(rules)
    check_settings(deals, seed, seats, max_groups, workers)
    players = [make_player(p) if isinstance(p, str) else p for p in entrants]
    names = _unique_names([p.name for p in players])
    mode, groups = make_schedule(len(players), seats, lineups)
    Deal.new(rules, seats, 0, np.random.default_rng(0))  # refuse a table the rules do not allow before any work
    runner = _Runner(players, rules, seats, seed, groups, max_groups)
    e = len(players)
    per_deal = np.full((e, deals, _K), np.nan)
    pair = np.full((e, e, deals), np.nan)
    bar = _progress_bar(deals, progress)
    start = time.perf_counter()

    def store(d: int, out: DealOutcome) -> None:
        value, groups_in, diff = out
        here = groups_in > 0
        per_deal[here, d] = value[here] / groups_in[here, None]
        pair[:, :, d] = diff

    if workers <= 1:
        for d in range(deals):
            store(d, runner.deal(d))
            if bar is not None:
                bar.update(1)
        decisions, think, games = runner.decisions, runner.think, runner.games
    else:
        global _WORKER
        _WORKER = runner
        chunks = [list(range(i, min(i + 10, deals))) for i in range(0, deals, 10)]
        decisions, think, games = np.zeros(e, dtype=np.int64), np.zeros(e), 0
        try:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                for idx, outs, dec, th, gm in pool.imap_unordered(_worker_deals, chunks):
                    for d, out in zip(idx, outs):
                        store(d, out)
                    decisions += dec
                    think += th
                    games += gm
                    if bar is not None:
                        bar.update(len(idx))
        finally:
            _WORKER = None
    if bar is not None:
        bar.close()
    wall = time.perf_counter() - start
    return TournamentResult(
        players=names,
        rules=rules.to_dict(),
        seats=seats,
        deals=deals,
        seed=seed,
        lineups=mode,
        schedule=[[[names[i] for i in lu.entrants] for lu in grp] for grp in groups],
        max_groups=max_groups,
        per_deal=per_deal,
        pair=pair,
        games=int(games),
        decisions=[int(x) for x in decisions],
        think_seconds=[float(x) for x in think],
        wall_seconds=wall,
    )


def _unique_names(names: Iterable[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def _progress_bar(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="deal", desc="duplicate deals")
