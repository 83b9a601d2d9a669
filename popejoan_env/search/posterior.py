"""The posterior over worlds: how likely a known policy of the other seats makes the play seen so far, world by world.

A search draws worlds consistent with what its seat has seen (``worlds.WorldSampler``: no seat holds a card it
cannot hold).  Consistency is all it knows of the other hands unless it knows how they play.  When the other
seats play a *known* policy, each world also has a likelihood: the probability that policy gives the cards they
chose, decision by decision, had the cards lain as in that world.  Weighing each drawn world by its importance
weight times that likelihood gives worlds distributed as the posterior (Bayes: the prior is uniform over the
consistent worlds).

``log_likelihoods(view, hands, dead, policy)`` replays the deal from its start in every world (the cards each
seat held before it played any, the board and balances the deal began with: ``deal_start``) and adds, at every
real decision of another seat (a lead with two or more legal cards, in that world), the log of the probability
``policy`` gives the card that seat led.  Forced cards and lone leads have probability 1 in every world.

The policies (``KnownPolicy``), each the probability of every card at a seat's view:

* ``UniformPolicy``: ``random``, every legal card alike (exact);
* ``DeterministicPolicy``: a chooser whose card is a function of its view (``lowest``, ``stops_first``,
  ``pool_hunter``, a network playing its best card): 1 for its card, 0 for the others (exact);
* ``NetworkPolicy``: a network that samples its card (``LearnedPlayer(deterministic=False)``): the masked softmax
  of its logits (exact);
* ``SampledPolicy``: a player that draws its own random numbers (``pimc``, ``pimc_net``): its frequencies over
  ``decisions`` decisions of its own, each from a seed of ours, smoothed (an estimate: it does not know the
  player's seed, which is its own secret, so it cannot replay the very decision);
* ``ViewPolicy``: any function of the view to card probabilities (the small game's CFR+ policy, a player
  re-seeded by its view: exact).

A likelihood of 0 would let one unlucky world veto everything, and a policy estimated by sampling can be wrong
about a card: each probability is mixed with the uniform one, ``(1 - tremble) p + tremble / legal`` (``TREMBLE``
for the exact policies), so that when no drawn world explains every card the worlds that explain the most win.

Seats are the view's relative seats (the observer is seat 0), as in ``worlds``; a policy reads only a seat's view,
so the numbering does not change what it does.  Which policy a player of the package has is the players' to say
(``players.best_response.known_policy``): this module takes anything that chooses a card (``Chooser``).  The batch
engine replays the full pack's worlds all at once (``BatchDeals``: one step per lead, one call of the policy per
decision for every world); the small pack's are replayed by the scalar engine.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from popejoan_env.cards import NUM_CARD_IDS, CardMask
from popejoan_env.engine import Deal
from popejoan_env.seat_view import SeatView, seat_view

if TYPE_CHECKING:
    from popejoan_env.batch import BatchDeals

__all__ = ["Chooser", "DeterministicPolicy", "KnownPolicy", "NetworkPolicy", "SampledPolicy", "TREMBLE",
           "UniformPolicy", "ViewPolicy", "deal_start", "log_likelihoods", "start_deals", "view_key", "view_seed"]

TREMBLE = 1e-3
"""Share of the uniform policy mixed into an exact policy's probabilities (see the module's docstring)."""
SAMPLED_DECISIONS = 4
"""Decisions of its own a ``SampledPolicy`` plays at each view, by default."""
SMOOTHING = 0.5
"""Pseudo-count of each legal card in a ``SampledPolicy``'s frequencies."""


class Chooser(Protocol):
    """What chooses a card for a seat: at one view, and for the seat to act in some deals of a batch (the very cards
    ``act`` would give deal by deal).  A player of the package, with ``players.base.act_batch`` for the batch."""

    name: str

    def reset(self, seed: int | None = None) -> None:
        """Re-seed its generator."""

    def act(self, view: SeatView) -> int:
        """The card for the seat to act."""

    def act_batch(self, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The card of the seat to act in each deal ``rows`` of ``batch`` (``legal``: their legal cards)."""


def view_key(view: SeatView) -> tuple[Any, ...]:
    """Everything a seat's view holds, as a tuple of ints (a cache key; the same in every process)."""
    return (view.players, view.hand, tuple(tuple(p) for p in view.history), view.turnup, view.board, view.balances,
            view.hand_sizes, view.dealer, view.leader, view.to_act, view.forced, view.known_dead, view.dead_hand,
            view.dead_size, view.winner, view.pope_holder)


def view_seed(view: SeatView, salt: int = 0) -> int:
    """A seed fixed by the view (``view_key``) and ``salt``: the same on every machine and in every process."""
    return zlib.crc32(repr((salt, view_key(view))).encode())


def _legal_rows(views: Sequence[SeatView]) -> np.ndarray:
    out = np.zeros((len(views), NUM_CARD_IDS), dtype=bool)
    for i, view in enumerate(views):
        out[i, list(view.legal)] = True
    return out


class KnownPolicy:
    """The probability of each card at a seat's view under a known policy (a row of 52 per view, 0 off the legal
    cards).  ``exact``: the policy's own probabilities (else an estimate); ``tremble``: the share of the uniform
    policy mixed in (``log_likelihoods``)."""

    name = "known"
    exact = True
    tremble = TREMBLE

    def probabilities(self, views: Sequence[SeatView]) -> np.ndarray:
        """[k, 52]: each view's card probabilities."""
        raise NotImplementedError

    def probabilities_batch(self, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """[k, 52]: the card probabilities of the seat to act in the deals ``rows`` of a batch (``legal``: its legal
        cards); by default through each seat's view."""
        return self.probabilities([seat_view(batch.to_deal(r), s)
                                   for r, s in zip(rows.tolist(), batch.to_act[rows].tolist())])


class UniformPolicy(KnownPolicy):
    """``random``: every legal card alike."""

    name = "uniform"

    def probabilities(self, views: Sequence[SeatView]) -> np.ndarray:
        """1 / (legal cards) for each legal card."""
        legal = _legal_rows(views)
        return legal / legal.sum(axis=1, keepdims=True)

    def probabilities_batch(self, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """1 / (legal cards) for each legal card."""
        return legal / legal.sum(axis=1, keepdims=True)


class DeterministicPolicy(KnownPolicy):
    """A chooser whose card is a function of its view: probability 1 for the card it plays."""

    def __init__(self, player: Chooser) -> None:
        self.player = player
        self.name = f"the choice of {player.name}"

    def probabilities(self, views: Sequence[SeatView]) -> np.ndarray:
        """One-hot rows of the player's cards."""
        out = np.zeros((len(views), NUM_CARD_IDS))
        for i, view in enumerate(views):
            out[i, int(self.player.act(view))] = 1.0
        return out

    def probabilities_batch(self, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """One-hot rows of the chooser's cards for every row at once."""
        out = np.zeros((len(rows), NUM_CARD_IDS))
        out[np.arange(len(rows)), np.asarray(self.player.act_batch(batch, rows, legal), dtype=np.int64)] = 1.0
        return out


class NetworkPolicy(KnownPolicy):
    """A network that samples its card (anything with ``logits(observations)``, as ``nets.policy.Policy``): the
    masked softmax of its logits."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.name = "the network's probabilities"

    def _softmax(self, logits: np.ndarray, legal: np.ndarray) -> np.ndarray:
        z = np.where(legal, logits.astype(np.float64), -np.inf)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True)

    def probabilities(self, views: Sequence[SeatView]) -> np.ndarray:
        """The softmax of the logits over each view's legal cards."""
        from popejoan_env.observation import encode_view

        obs = np.stack([encode_view(v) for v in views])
        return self._softmax(np.atleast_2d(self.policy.logits(obs)), _legal_rows(views))

    def probabilities_batch(self, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The softmax of the logits over the legal cards, one encoding and one forward for every row."""
        from popejoan_env.batch_observation import encode_batch

        return self._softmax(np.atleast_2d(self.policy.logits(encode_batch(batch, rows, batch.to_act[rows]))),
                             legal)


class SampledPolicy(KnownPolicy):
    """A player that draws its own random numbers, estimated: the frequency of each card over ``decisions``
    decisions of its own at the view, each after ``reset`` with a seed drawn from ``rng``, plus ``SMOOTHING`` per
    legal card."""

    exact = False
    tremble = 0.0  # the smoothing already keeps every legal card possible

    def __init__(self, player: Chooser, rng: np.random.Generator, *, decisions: int = SAMPLED_DECISIONS) -> None:
        self.player = player
        self.rng = rng
        self.decisions = decisions
        self.name = f"{player.name}'s frequencies over {decisions} decisions of its own"

    def probabilities(self, views: Sequence[SeatView]) -> np.ndarray:
        """Smoothed frequencies of the player's cards."""
        legal = _legal_rows(views)
        out = legal * SMOOTHING
        seeds = self.rng.integers(2**63, size=(len(views), self.decisions)).tolist()
        for i, view in enumerate(views):
            for seed in seeds[i]:
                self.player.reset(seed)
                out[i, int(self.player.act(view))] += 1.0
        return out / out.sum(axis=1, keepdims=True)


class ViewPolicy(KnownPolicy):
    """Any function of a seat's view to its card probabilities (a mapping of card ids), cached per view."""

    def __init__(self, function: Callable[[SeatView], Mapping[int, float]], name: str = "a policy of the view") -> None:
        self.function = function
        self.name = name
        self._cache: dict[tuple[Any, ...], np.ndarray] = {}

    def row(self, view: SeatView) -> np.ndarray:
        """The view's 52 probabilities."""
        key = view_key(view)
        found = self._cache.get(key)
        if found is None:
            found = np.zeros(NUM_CARD_IDS)
            for card, p in self.function(view).items():
                found[card] = p
            self._cache[key] = found
        return found

    def probabilities(self, views: Sequence[SeatView]) -> np.ndarray:
        """The function's probabilities at each view."""
        return np.stack([self.row(v) for v in views]) if views else np.zeros((0, NUM_CARD_IDS))


# ---------------------------------------------------------------- the deal's start, world by world
def _history_deal(view: SeatView, hands: Sequence[CardMask], dead: CardMask, board: Sequence[int],
                  balances: Sequence[int]) -> Deal:
    """The world's deal before any card was played (relative seats), with this board and these balances."""
    from popejoan_env.search.worlds import dead_list

    n = view.players
    initial = list(hands)
    for seat, card, _ in view.history:
        initial[seat] |= 1 << card
    eldest = (view.dealer + 1) % n
    return Deal.from_position(initial, dead_list(dead, view.turnup), [0] * n, to_act=eldest, leader=eldest,
                              dealer=view.dealer, rules=view.rules, board=list(board), balances=list(balances))


def deal_start(view: SeatView, hands: Sequence[CardMask], dead: CardMask) -> tuple[list[int], list[int]]:
    """The board and each relative seat's balance when the first card of the deal was led, as ``view`` implies
    with the world ``hands``/``dead`` (any world: what is won in play depends on the public history alone).

    A compartment nobody has taken in play holds now what it held then.  A compartment taken in play held its
    dressing (R1) then: exact for a deal begun on an empty board (every deal of the tournament, ``popejoan
    evaluate`` and ``popejoan exploit``); after a carried-over board (a session), an estimate of what only the
    seats that watched the board could tell.  The balances then are those now less what each seat won since."""
    zeros = [0] * view.players
    probe = _history_deal(view, hands, dead, view.board, zeros)
    for _, card, _ in view.history:
        probe.play(card)
    taken = {comp for _, _, comp, _ in probe.awards}
    board = [view.rules.dressing[c] if c in taken else view.board[c] for c in range(len(view.board))]
    replay = _history_deal(view, hands, dead, board, zeros)
    for _, card, _ in view.history:
        replay.play(card)
    return board, [b - won for b, won in zip(view.balances, replay.balances)]


def start_deals(view: SeatView, hands: np.ndarray, dead: np.ndarray) -> list[Deal]:
    """Each world (relative seats' hands ``[k, players]`` and dead hands ``[k]``, card masks) as the deal it was
    before any card was played: the cards each seat held then, the board and balances of ``deal_start``."""
    from popejoan_env.search.worlds import dead_list

    hand_rows, dead_rows = np.asarray(hands).tolist(), np.asarray(dead).tolist()
    board, balances = deal_start(view, hand_rows[0], dead_rows[0])
    first = _history_deal(view, hand_rows[0], dead_rows[0], board, balances)
    out = [first]
    for h, d in zip(hand_rows[1:], dead_rows[1:]):
        initial = list(h)
        for seat, card, _ in view.history:
            initial[seat] |= 1 << card
        out.append(first.rearranged(initial, dead_list(d, view.turnup)))
    return out


# ---------------------------------------------------------------- the likelihood
def _mixed(p: np.ndarray, legal: np.ndarray, tremble: float) -> np.ndarray:
    """``(1 - tremble) p + tremble / legal`` on each row's legal cards."""
    return (1.0 - tremble) * p + tremble * legal / legal.sum(axis=1, keepdims=True)


def log_likelihoods(view: SeatView, hands: np.ndarray, dead: np.ndarray, policy: KnownPolicy, *,
                    engine: str | None = None) -> tuple[np.ndarray, int]:
    """[k]: the log of the probability ``policy`` gives, in each world, the leads the other seats chose with two
    or more legal cards (see the module's docstring), and how many of those decisions (world × decision) were
    asked of the policy.  ``engine``: ``batch`` (the full pack only) or ``scalar``; default ``batch`` for the full
    pack."""
    leads = [(i, play) for i, play in enumerate(view.history) if play.lead and play.seat != 0]
    k = len(np.asarray(dead))
    if not leads:
        return np.zeros(k), 0
    if engine is None:
        engine = "batch" if view.rules.pack == "full" else "scalar"
    worlds = start_deals(view, hands, dead)
    if engine == "batch":
        return _batch_likelihoods(view, worlds, policy)
    return _scalar_likelihoods(view, worlds, policy)


def _scalar_likelihoods(view: SeatView, worlds: list[Deal], policy: KnownPolicy) -> tuple[np.ndarray, int]:
    """``log_likelihoods`` by the scalar engine: the worlds replayed card by card, the policy asked at every
    decision of every world at once."""
    out = np.zeros(len(worlds))
    asked = 0
    for play in view.history:
        if play.lead and play.seat != 0:
            deciding = [w for w, deal in enumerate(worlds) if len(deal.legal_actions()) > 1]
            if deciding:
                views = [seat_view(worlds[w], play.seat) for w in deciding]
                legal = _legal_rows(views)
                p = _mixed(policy.probabilities(views), legal, policy.tremble)
                out[deciding] += np.log(p[:, play.card])
                asked += len(deciding)
        for deal in worlds:
            deal.play(play.card)
    return out, asked


def _batch_likelihoods(view: SeatView, worlds: list[Deal], policy: KnownPolicy) -> tuple[np.ndarray, int]:
    """``log_likelihoods`` by the batch engine: every world one row, one step per lead of the history."""
    from popejoan_env.batch import BatchDeals

    batch = BatchDeals.from_deals(worlds, lone_leads=False)
    out = np.zeros(len(worlds))
    asked = 0
    for play in view.history:
        if not play.lead:
            continue  # a card due: the step of the lead before it played it
        if play.seat != 0:
            legal = batch.legal_mask()
            rows = np.flatnonzero(legal.sum(axis=1) > 1)
            if len(rows):
                p = _mixed(policy.probabilities_batch(batch, rows, legal[rows]), legal[rows], policy.tremble)
                out[rows] += np.log(p[:, play.card])
                asked += len(rows)
        batch.step(np.full(len(worlds), play.card, dtype=np.int64))
    return out, asked
