"""``pimc``: Perfect-Information Monte Carlo search over sampled worlds."""

from __future__ import annotations

import numpy as np

from popejoan_env.cards import NUM_CARD_IDS, POPE
from popejoan_env.checks import as_int
from popejoan_env.engine import SUCCESSOR, Deal
from popejoan_env.players.base import ScriptedPlayer, UnknownPlayerError
from popejoan_env.players.stops import PREDECESSOR, lead_candidates, order_in_suit
from popejoan_env.players.stops_first import stops_first_key
from popejoan_env.search.worlds import SAMPLERS, WorldSampler
from popejoan_env.seat_view import SeatView

DEFAULT_SAMPLES = 32
MAX_SAMPLES = 65_536
"""Most worlds a decision may search (each is a rollout's state in memory; 32 is the default)."""
"""Worlds sampled per decision by default (see the players notes for the speed/strength trade-off)."""
DRAWS = ("compiled", "python")
"""How the worlds are drawn: all of a decision's at once in compiled code (``WorldSampler.draw_many``), or one at a
time in Python (``WorldSampler.draw``, the sampler before the compiled one); the same distribution either way."""
ENGINES = ("scalar", "batch")
"""How greedy rollouts are played: one ``Deal`` at a time, or every world × candidate at once (``playouts``)."""


def default_engine(rollout: str = "greedy") -> str:
    """The engine of ``rollout`` when none is named: ``batch`` for greedy rollouts (its compiled rollouts are the
    fastest, ``benchmarks/bench_pimc.py``), else ``scalar``."""
    return "batch" if rollout == "greedy" else "scalar"


_ORDER: dict[bool, tuple[int, ...]] = {
    ace_high: tuple(order_in_suit(c, ace_high) for c in range(NUM_CARD_IDS)) for ace_high in (False, True)
}


def greedy_lead(deal: Deal, legal: list[int] | None = None) -> int:
    """The rollout policy's lead: ``stops_first`` played with the world's cards in view.

    Runs that end in a stop first (longest first), then the Pope, then cards nobody can lead
    up to, then the lowest card.  In a sampled world every card's place is known, so this
    needs no bookkeeping: it reads ``deal.owner``.
    """
    if legal is None:
        legal = deal.legal_actions()
    if len(legal) == 1:
        return legal[0]
    seat = deal.to_act
    owner = deal.owner
    ace_high = deal.rules.ace_high
    succ = SUCCESSOR[ace_high]
    pred = PREDECESSOR[ace_high]
    order = _ORDER[ace_high]
    best, best_key = legal[0], -1
    for card in legal:
        last, length = card, 1
        while True:
            nxt = succ[last]
            if nxt < 0:
                stops = True
                break
            holder = owner[nxt]
            if holder == seat:
                last, length = nxt, length + 1
                continue
            stops = holder < 0  # dead or played
            break
        if stops:
            key = 3000 + 16 * length - order[card]
        elif card == POPE:
            key = 2000
        else:
            p = pred[card]
            key = (1000 if p < 0 or owner[p] < 0 else 0) + 16 * (13 - order[card]) + length
        if key > best_key:
            best, best_key = card, key
    return best


def rollout(deal: Deal, rng: np.random.Generator | None = None) -> None:
    """Play a world to its end: leads by ``greedy_lead``, or uniformly at random with ``rng``."""
    if rng is None:
        deal.play_out(greedy_lead)
    else:
        # Every lead draws, lone ones too, as this rollout always has (its results stay the same).
        deal.play_out(lambda d, legal: legal[int(rng.integers(len(legal)))], lone_leads=False)


def best_lead(view: SeatView, candidates: list[int], scores: list[float]) -> int:
    """The candidate with the best score (``scores`` in the order of ``candidates``); where several tie, the first
    of them by ``stops_first``'s order."""
    top = max(scores)
    best = [card for card, score in zip(candidates, scores) if score == top]
    # The stops_first order only where the search ties (most decisions have one best card: no key to build).
    return best[0] if len(best) == 1 else max(best, key=stops_first_key(view))


class PimcPlayer(ScriptedPlayer):
    """``pimc``: samples ``samples`` worlds consistent with everything the seat knows (the unseen cards
    placed into the other hands, with their known sizes, and the unseen part of the dead hand, never
    where ``inference.cannot_hold`` rules a card out: see ``worlds.WorldSampler``), plays each
    candidate lead out in every world with a fast rollout policy for all seats (``greedy_lead``:
    ``stops_first`` with the world's cards in view), and leads the card with the best average
    counters for itself.  The same worlds serve every candidate (common random numbers), ties go to
    the ``stops_first`` order.  Parameters: ``samples`` (default 32), ``rollout`` (``greedy`` or
    ``random``), ``sampler`` (``consistent``, the default, or ``uniform``: the old sampler that
    ignores what leads and the settlement reveal), ``engine`` (``scalar``: one ``Deal`` per rollout, or
    ``batch``: the greedy rollouts of every world × candidate at once, ``playouts.greedy_gains``,
    compiled; the same decisions either way; the default is ``batch`` for greedy rollouts:
    ``default_engine``), ``draws`` (``compiled``, the default: a decision's worlds drawn at once by
    ``WorldSampler.draw_many``, from one seed the player's generator draws, with the batch engine in one compiled
    call per decision, ``search.search_gains``; or ``python``: one at a time
    by ``WorldSampler.draw``, as before the compiled sampler: the same distribution, other worlds, so
    other decisions).  Random rollouts always run scalar.
    """

    name = "pimc"

    def __init__(self, seed: int | None = None, *, samples: int = DEFAULT_SAMPLES, rollout: str = "greedy",
                 sampler: str = "consistent", engine: str | None = None, draws: str = "compiled") -> None:
        if as_int(samples) is None or not 1 <= samples <= MAX_SAMPLES:
            raise UnknownPlayerError(f"pimc: samples must be an integer from 1 to {MAX_SAMPLES:,}, got {samples!r}")
        if rollout not in ("greedy", "random"):
            raise UnknownPlayerError(f"pimc: rollout must be 'greedy' or 'random', got {rollout!r}")
        if sampler not in SAMPLERS:
            raise UnknownPlayerError(f"pimc: sampler must be one of {list(SAMPLERS)}, got {sampler!r}")
        if engine is not None and engine not in ENGINES:
            raise UnknownPlayerError(f"pimc: engine must be one of {list(ENGINES)}, got {engine!r}")
        if draws not in DRAWS:
            raise UnknownPlayerError(f"pimc: draws must be one of {list(DRAWS)}, got {draws!r}")
        if engine == "batch" and rollout != "greedy":
            raise UnknownPlayerError("pimc: engine=batch plays greedy rollouts only; rollout=random runs scalar")
        default = default_engine(rollout)
        self.samples = samples
        self.rollout = rollout
        self.sampler = sampler
        self.engine = engine or default
        self.draws = draws
        params = []
        if samples != DEFAULT_SAMPLES:
            params.append(f"samples={samples}")
        if rollout != "greedy":
            params.append(f"rollout={rollout}")
        if sampler != "consistent":
            params.append(f"sampler={sampler}")
        if self.engine != default:
            params.append(f"engine={self.engine}")
        if draws != "compiled":
            params.append(f"draws={draws}")
        self.name = "pimc" + (":" + ",".join(params) if params else "")
        self.last_values: dict[int, float] = {}
        """The mean counters each candidate of the last decision ``evaluate`` searched won over the worlds
        (empty after a decision with one candidate): what a network imitating the search can learn from
        (popejoan_env/training/expert_games.py)."""
        super().__init__(seed)

    def choose(self, view: SeatView) -> int:
        """The candidate lead with the best mean counters over the sampled worlds."""
        candidates = lead_candidates(view)
        self.last_values = {}
        if len(candidates) == 1:
            return candidates[0]
        return best_lead(view, candidates, self.evaluate(view, candidates))

    def evaluate(self, view: SeatView, candidates: list[int]) -> list[float]:
        """Counters the observer gains over the sampled worlds, per candidate lead: the sum over the worlds,
        each weighted by its importance weight (``worlds.place``) so the sum estimates the mean over the
        consistent worlds drawn uniformly (the weights are all equal when nothing constrains the cards); the
        means (the sums over the weights) are kept in ``last_values``."""
        if self.draws == "python":
            return self._evaluate_drawn_one_by_one(WorldSampler(view, self.sampler), candidates)
        batch = self.engine == "batch" and view.rules.pack == "full"  # the batch rollouts play the full pack only
        if batch and view.to_act == 0 and view.forced < 0:
            # The observer's lead (every decision of choose): one compiled call draws the worlds and plays them out
            # (search.search_gains: the worlds and counters of the stages below, without the stages).
            from popejoan_env.search.decision import search_gains

            gains, logs = search_gains(view, candidates, self.rng, self.samples, sampler=self.sampler)
            return self.weigh(gains, logs, candidates)
        sampler = WorldSampler(view, self.sampler)
        hands, dead, logs = sampler.draw_many(self.rng, self.samples)
        if batch:
            # Imported here: the compiled rollouts load numba, which a scalar pimc need not pay for at import.
            from popejoan_env.search.playouts import drawn_gains

            gains = drawn_gains(sampler.deals(hands[:1], dead[:1])[0], hands, dead, candidates)
        else:
            gains = self._scalar_gains(sampler.deals(hands, dead), candidates)
        return self.weigh(gains, logs, candidates)

    def _evaluate_drawn_one_by_one(self, sampler: WorldSampler, candidates: list[int]) -> list[float]:
        """``evaluate`` with the worlds drawn one at a time in Python (``draws=python``: the sampler before the
        compiled one, kept for comparison and for the decisions pinned before it)."""
        rng = self.rng
        logs = []
        if self.engine == "batch" and sampler.view.rules.pack == "full":  # the batch rollouts play the full pack only
            from popejoan_env.search.playouts import greedy_gains_at

            # The first world as a Deal (the position every world shares), the others only as card placements:
            # the same draws as the scalar path's ``sample`` calls, without building a Deal per world.
            first = sampler.sample(rng)
            logs.append(sampler.log_weight)
            hands, dead = [first.hands], [first.dead_mask]
            for _ in range(self.samples - 1):
                h, d = sampler.draw(rng)
                hands.append(h)
                dead.append(d)
                logs.append(sampler.log_weight)
            return self.weigh(greedy_gains_at(first, hands, dead, candidates), logs, candidates)
        # Each world drawn just before its rollouts: random rollouts draw from the same generator in between.
        worlds = []
        for _ in range(self.samples):
            worlds.append(sampler.sample(rng))
            logs.append(sampler.log_weight)
            if self.rollout == "random":
                worlds[-1] = self._scalar_gains(worlds[-1:], candidates)[0]
        gains = worlds if self.rollout == "random" else self._scalar_gains(worlds, candidates)
        return self.weigh(gains, logs, candidates)

    def _scalar_gains(self, worlds: list[Deal], candidates: list[int]) -> list[list[int]]:
        """Counters the observer gains in each world (rows) when each candidate (columns) is led and the deal
        played out by ``rollout``, one ``Deal`` at a time."""
        rollout_rng = self.rng if self.rollout == "random" else None
        gains = []
        for world in worlds:
            start = world.balances[0]
            row = []
            for card in candidates:
                deal = world.copy()
                deal.play(card)
                rollout(deal, rollout_rng)
                row.append(deal.balances[0] - start)
            gains.append(row)
        return gains

    def weigh(self, gains: list[list[int]] | list[list[float]] | np.ndarray, logs: list[float] | np.ndarray,
              candidates: list[int]) -> list[float]:
        """The totals of ``evaluate`` from the gains of each world (rows) and candidate (columns) and the worlds'
        log importance weights; the means go to ``last_values``."""
        logs = np.asarray(logs, dtype=np.float64)
        weights = np.exp(logs - logs.max())
        # Summed world by world (a reduction over rows), in the order a Python loop over the worlds would add.
        totals = (weights[:, None] * np.asarray(gains, dtype=np.float64)).sum(axis=0).tolist()
        total_weight = sum(weights.tolist())
        self.last_values = {c: t / total_weight for c, t in zip(candidates, totals)}
        return totals
