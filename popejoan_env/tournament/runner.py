"""Playing a tournament: every game of every deal, through the engine's one decision loop.

A deal is played with ``Deal.play_out``: the engine plays forced cards (R8)
and lone legal leads itself, and at every real decision the entrant at the
seat to act is asked ``act(seat_view(deal, seat))``, timed and counted.
Deals are played here, in forked processes (``workers``) or as Ray tasks
(``backend="ray"``), in chunks of consecutive deals (``play_deals``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

import popejoan_env.cluster as cluster
from popejoan_env.cards import names_of
from popejoan_env.checks import as_int, brief
from popejoan_env.cli import fork_pool
from popejoan_env.engine import Deal
from popejoan_env.errors import IllegalActionError, PopeJoanError
from popejoan_env.players import Player, make_player
from popejoan_env.players.base import UnknownPlayerError, call_act, call_reset
from popejoan_env.rules import Rules, RulesLike, check_players, resolve_rules
from popejoan_env.seat_view import seat_view
from popejoan_env.tournament.result import TournamentResult
from popejoan_env.tournament.schedule import MAX_GROUPS, Lineup, groups_of_deal, make_schedule
from popejoan_env.tournament.scores import FIELDS, NET, deal_scores

MAX_DEALS = 10_000_000
"""Most deals one tournament plays (its per-deal scores are kept in memory; 2,000 already give tight intervals)."""

MAX_WORKERS = 256
"""Most forked worker processes of the local backend (a cluster is the ray backend's)."""

BACKENDS = ("local", "ray")
"""Where deals are played: ``local`` (this process, or ``workers`` forked ones) or ``ray`` (Ray tasks)."""
RAY_CHUNKS_PER_CPU = 4
"""With the ray backend, deals are cut into about this many chunks (tasks) per CPU of the cluster ..."""
RAY_CHUNK_MAX = 100
"""... of at most this many deals each (a task's start costs milliseconds and a copy of the players)."""

_K = len(FIELDS)
DealOutcome = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""Of one deal: per-entrant sums of group means, the number of groups each entrant was in, pair differences (their
mean over the groups where both were scored) and the number of those groups."""
Chunk = tuple[list[int], list[DealOutcome], np.ndarray, np.ndarray, int]
"""Of some deals: their numbers, their outcomes, and the decisions, thinking seconds and games they took."""


def check_settings(
    deals: int, seed: int, seats: int, max_groups: int, workers: int, backend: str = "local",
    address: str | None = None,
) -> None:
    """Refuse tournament settings that cannot run (a PopeJoanError naming the setting), before any work.

    With ``backend="ray"``, ``workers`` must stay 1 (Ray spreads the deals over
    every CPU of its cluster), Ray must be importable and ``address`` well
    formed; an ``address`` needs the ray backend.
    """
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
    if g > MAX_GROUPS:
        raise PopeJoanError(f"max groups per deal is at most {MAX_GROUPS:,} (a schedule's size), got {g:,}")
    w = as_int(workers)
    if w is None or not 1 <= w <= MAX_WORKERS:
        raise PopeJoanError(f"workers must be an integer from 1 to {MAX_WORKERS}, got {workers!r}")
    if backend not in BACKENDS:
        raise PopeJoanError(f"the backend must be local or ray, got {backend!r}")
    if backend == "ray":
        if w > 1:
            raise PopeJoanError(
                f"workers={w} applies to the local backend: the ray backend spreads deals over every CPU "
                "of its Ray cluster (leave workers at 1)"
            )
        cluster.check_address(address)
        cluster.import_ray()
    elif address is not None:
        raise PopeJoanError(f"an address ({address!r}) applies only to the ray backend")


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
        self._start_counting()

    def _start_counting(self) -> None:
        """Zero the decisions, thinking seconds and games counted."""
        self.decisions = np.zeros(len(self.players), dtype=np.int64)
        self.think = np.zeros(len(self.players), dtype=np.float64)
        self.games = 0
        self._at: list[int] = []  # entrant at each seat in the game being played

    def __getstate__(self) -> dict[str, Any]:
        """A copy for another process (a Ray task) takes the players and the schedule, not the counters."""
        return {k: v for k, v in self.__dict__.items() if k not in ("decisions", "think", "games", "_at")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """The copy counts from zero, in arrays of its own (Ray's are read-only views of its object store)."""
        self.__dict__.update(state)
        self._start_counting()

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
                        call_reset(self.players[ent], player_seed(self.seed, d, g, li, r, ent))
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
        return value, groups_in, np.where(pair_n > 0, pair_sum / np.maximum(pair_n, 1), np.nan), pair_n

    def _choose(self, deal: Deal, legal: list[int]) -> int:
        """The entrant at the seat to act answers ``act(seat_view)``; timed, counted and checked."""
        seat = deal.to_act
        ent = self._at[seat]
        start = time.perf_counter()
        answer = call_act(self.players[ent], seat_view(deal, seat))
        self.think[ent] += time.perf_counter() - start
        self.decisions[ent] += 1
        card = as_int(answer)
        if card is None or card not in legal:
            raise IllegalActionError(
                f"player {brief(self.players[ent].name, 100)} at seat {seat} chose badly: "
                f"{_refusal(deal, answer, legal)}"
            )
        return card


def _refusal(deal: Deal, answer: object, legal: list[int]) -> str:
    """Why ``answer`` may not be played, in the engine's words (tried on a copy, so the deal is untouched)."""
    if as_int(answer) is None:
        return f"{brief(answer)} is not a card id; legal: {names_of(legal)}"
    try:
        deal.copy().play(as_int(answer))  # type: ignore[arg-type]
    except PopeJoanError as err:
        return str(err)
    return f"{answer!r} is not among the legal cards {names_of(legal)}"


def play_deals(runner: _Runner, deals: list[int]) -> Chunk:
    """Play ``deals`` with ``runner``: their outcomes, and the decisions, seconds and games they took (a task)."""
    before = (runner.decisions.copy(), runner.think.copy(), runner.games)
    out = [runner.deal(d) for d in deals]
    return (deals, out, runner.decisions - before[0], runner.think - before[1], runner.games - before[2])


_WORKER: _Runner | None = None


def _worker_deals(deals: list[int]) -> Chunk:
    """``play_deals`` with the runner a forked worker inherited."""
    assert _WORKER is not None
    return play_deals(_WORKER, deals)


def _chunks(deals: int, size: int) -> list[list[int]]:
    """Deals ``0 … deals-1`` cut into consecutive lists of ``size``."""
    return [list(range(i, min(i + size, deals))) for i in range(0, deals, size)]


def run_duplicate(
    entrants: Sequence[Player | str],
    deals: int,
    seed: int,
    *,
    rules: RulesLike = "modern",
    seats: int = 4,
    progress: bool = False,
    lineups: str = "auto",
    max_groups: int = 12,
    workers: int = 1,
    backend: str = "local",
    address: str | None = None,
) -> TournamentResult:
    """Play a duplicate tournament (see ``popejoan_env.tournament``) and return its result.

    ``entrants`` are players or player specs (``make_player``); ``lineups`` is
    ``auto``, ``subsets`` or ``field``; ``workers > 1`` plays deals in forked
    processes; ``backend="ray"`` plays chunks of deals as Ray tasks, each with
    its own copy of the players, on a local Ray or the cluster at ``address``
    (``cluster.connected``; ``workers`` must then be 1).  Only the time
    changes: every number of the result is the same whichever way it is run.
    """
    rules = resolve_rules(rules)
    check_settings(deals, seed, seats, max_groups, workers, backend, address)
    players = _entrants(entrants)
    names = _unique_names(_entrant_names(players))
    mode, groups = make_schedule(len(players), seats, lineups)
    Deal.new(rules, seats, 0, np.random.default_rng(0))  # refuse a table the rules do not allow before any work
    runner = _Runner(players, rules, seats, seed, groups, max_groups)
    e = len(players)
    per_deal = np.full((e, deals, _K), np.nan)
    pair = np.full((e, e, deals), np.nan)
    weight = np.zeros((e, deals))
    pair_weight = np.zeros((e, e, deals))
    bar = _progress_bar(deals, progress)
    start = time.perf_counter()

    def store(d: int, out: DealOutcome) -> None:
        value, groups_in, diff, met = out
        here = groups_in > 0
        per_deal[here, d] = value[here] / groups_in[here, None]
        pair[:, :, d] = diff
        weight[:, d] = groups_in
        pair_weight[:, :, d] = met

    decisions, think, games = np.zeros(e, dtype=np.int64), np.zeros(e), 0

    def take(chunks: Iterable[Chunk]) -> None:
        nonlocal decisions, think, games
        for idx, outs, dec, th, gm in chunks:
            for d, out in zip(idx, outs):
                store(d, out)
            decisions += dec
            think += th
            games += gm
            if bar is not None:
                bar.update(len(idx))

    if backend == "ray":
        with cluster.connected(address) as cpus:
            start = time.perf_counter()  # the time to start Ray is not the tournament's
            size = max(1, min(RAY_CHUNK_MAX, -(-deals // (RAY_CHUNKS_PER_CPU * cpus))))
            take(cluster.map_tasks(play_deals, runner, _chunks(deals, size), ordered=False))
    elif workers <= 1:
        take(play_deals(runner, [d]) for d in range(deals))
    else:
        global _WORKER
        _WORKER = runner
        try:
            with fork_pool(workers) as pool:
                take(pool.imap_unordered(_worker_deals, _chunks(deals, 10)))
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
        weight=weight,
        pair_weight=pair_weight,
    )


def _entrants(entrants: object) -> list[Any]:
    """The players of ``entrants``, specs made by ``make_player``; a string (one spec, or a comma list) is not a list
    of entrants, and an object without a name, ``reset`` and ``act`` is not a player: each is refused by name."""
    if isinstance(entrants, (str, bytes)) or not isinstance(entrants, Iterable):
        raise UnknownPlayerError(f"entrants must be a list of players or player specs, such as ['pimc', "
                                 f"'stops_first'], got {brief(entrants)}")
    players = [make_player(p) if isinstance(p, str) else p for p in entrants]
    for p in players:
        if not isinstance(p, Player) or not isinstance(p.name, str) or not p.name \
                or not (callable(p.reset) and callable(p.act)):
            raise UnknownPlayerError(f"entrant {brief(p)} is not a player (it needs a name, reset(seed) and "
                                     "act(view)) nor a player spec (a string)")
    return players


def _entrant_names(players: list[Any]) -> list[str]:
    """Players' names; model files that share one are told apart by their path's shortest distinct tail."""
    names = [p.name for p in players]
    paths = [getattr(getattr(p, "policy", None), "path", None) for p in players]
    out = list(names)
    for name in set(names):
        own = [i for i, n in enumerate(names) if n == name and paths[i] is not None]
        parts = {i: os.path.splitext(os.path.abspath(paths[i]))[0].split(os.sep) for i in own}
        files = len({tuple(p) for p in parts.values()})
        if files < 2:
            continue  # one file (or none) under this name: '#2' tells its copies apart
        for k in range(2, max(len(p) for p in parts.values()) + 1):
            tails = ["/".join(parts[i][-k:]) for i in own]
            if len(set(tails)) == files:
                break
        for i, tail in zip(own, tails):
            out[i] = tail
    return out


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
