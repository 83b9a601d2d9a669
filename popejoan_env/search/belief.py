"""Reading the other seats' leads: worlds weighted by how likely a policy makes the leads they chose.

``WorldSampler`` deals the unseen cards out consistently with what a seat
knows for certain (``inference.cannot_hold``), all such worlds alike.  But a
lead says more than which cards it rules out: a seat that led hearts from a
hand of four suits chose hearts, and a policy says how likely that choice was
with each hand the seat may hold.  ``lead_log_likelihood`` gives, for each
world, the log-probability that ``policy`` — played as each other seat, from
that seat's own observation at the time with the world's cards in its hand —
chooses every lead those seats made so far in the deal; ``resample`` then
keeps worlds in proportion to that likelihood (times the sampler's importance
weight), so a search over the kept worlds believes what the leads suggest
about the hands (the belief update of SPARTA, Lerer et al. 2020, with the
rollout policy as every seat's model).

An observation at a past lead differs between worlds only in the hand (and,
for a dealer who sees it, the dead hand): everything else in it is public or
the public inference, the same in every world.  So each past lead's
observation is recorded once, as the seat saw it (``Lead``), and a world's
version of it is that vector with the world's hand of the time written in: the
seat's cards now in that world plus the cards it played since.  A policy's
logits are softened into a model of the seat (``TEMPERATURE``, and
``FLOOR`` of the probability spread over the legal leads), so a world in
which the leads were merely unlikely keeps some weight.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.engine import Deal
from popejoan_env.observation import DEAD_HAND, HAND, SEES_DEAD_HAND, card_planes
from popejoan_env.rules import Rules

DRAWS = 4
"""Worlds drawn for each world kept: the kept ones are resampled from these by their weight."""
TEMPERATURE = 1.0
"""The seat model's logits are divided by this before the softmax."""
FLOOR = 0.1
"""Share of the seat model's probability spread evenly over the legal leads (no lead is ever impossible)."""

_RANKS = np.arange(NUM_CARD_IDS).reshape(4, 13)
"""Card ids by suit, lowest rank first (the ace low); ``_RANKS_ACE_HIGH`` puts the ace last."""
_RANKS_ACE_HIGH = _RANKS[:, list(range(1, 13)) + [0]]


class Lead(NamedTuple):
    """A lead of the deal so far: the (absolute) seat, its observation then, the card, and how many cards had
    been played before it."""

    seat: int
    observation: np.ndarray
    card: int
    played: int


def legal_leads_of(hands: np.ndarray, rules: Rules) -> np.ndarray:
    """For hands ``[n, 52]`` (booleans): the cards each may lead (R7), as ``engine.legal_leads`` says."""
    if rules.lead == "any":
        return hands.copy()
    order = _RANKS_ACE_HIGH if rules.ace_high else _RANKS
    by_rank = hands[:, order]
    held = by_rank.any(axis=2)
    lowest = np.argmax(by_rank, axis=2)
    legal = np.zeros_like(hands)
    rows, suits = np.nonzero(held)
    legal[rows, order[suits, lowest[rows, suits]]] = True
    return legal


def observations_then(deal: Deal, observer: int, lead: Lead, hands: np.ndarray, dead: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """``lead``'s observation in each world (``hands [n, players]`` relative to ``observer``, ``dead [n]``), and
    the hand its seat held then in each: the world's cards now plus those the seat played since."""
    since = np.zeros(NUM_CARD_IDS, dtype=bool)
    for seat, card in deal.plays[lead.played:]:
        if seat == lead.seat:
            since[card] = True
    hand = card_planes(hands[:, (lead.seat - observer) % deal.players]).astype(bool) | since
    obs = np.repeat(lead.observation[None, :], len(hands), axis=0)
    obs[:, HAND:HAND + NUM_CARD_IDS] = hand
    if lead.observation[SEES_DEAD_HAND]:
        obs[:, DEAD_HAND:DEAD_HAND + NUM_CARD_IDS] = card_planes(dead)
    return obs, hand


def lead_log_likelihood(policy: Any, deal: Deal, observer: int, leads: Sequence[Lead], hands: np.ndarray,
                        dead: np.ndarray) -> np.ndarray:
    """``[n]``: for each world (``hands [n, players]`` relative to ``observer``, ``dead [n]``, as
    ``WorldSampler.draw_many`` gives them) the log-probability that ``policy`` made every lead of ``leads`` by a
    seat other than ``observer``, each from that seat's observation with the world's cards of the time."""
    n = len(hands)
    theirs = [lead for lead in leads if lead.seat != observer]
    if not theirs:
        return np.zeros(n)
    rows, legal = [], []
    for lead in theirs:
        obs, hand = observations_then(deal, observer, lead, hands, dead)
        rows.append(obs)
        legal.append(legal_leads_of(hand, deal.rules))
    legal_all = np.concatenate(legal)
    logits = policy.logits(np.concatenate(rows))
    z = np.where(legal_all, logits.astype(np.float64) / TEMPERATURE, -np.inf)
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    chosen = np.repeat([lead.card for lead in theirs], n)
    # the worlds are consistent with the leads (inference.cannot_hold), so each card was legal in every one
    model = (1.0 - FLOOR) * p[np.arange(len(chosen)), chosen] + FLOOR / legal_all.sum(axis=1)
    return np.log(model).reshape(len(theirs), n).sum(axis=0)


def resample(log_weights: np.ndarray, keep: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``keep`` worlds drawn in proportion to ``exp(log_weights)`` (systematic resampling: one uniform
    from ``rng``), so the kept worlds count alike."""
    w = np.exp(log_weights - log_weights.max())
    cdf = np.cumsum(w / w.sum())
    marks = (rng.random() + np.arange(keep)) / keep
    return np.minimum(np.searchsorted(cdf, marks), len(w) - 1)
