"""What a tournament scores of one finished deal: per seat, the net counters and where they came from."""

from __future__ import annotations

import numpy as np

from popejoan_env.engine import Deal
from popejoan_env.rules import COMPARTMENTS

FIELDS: tuple[str, ...] = ("net", *COMPARTMENTS, "settlement", "dressing", "went_out")
"""Per-seat quantities recorded for every game, in this order."""
NET, SETTLEMENT, DRESSING, WENT_OUT = 0, 1 + len(COMPARTMENTS), 2 + len(COMPARTMENTS), 3 + len(COMPARTMENTS)
"""Indices of the net change, the settlement, the dressing paid and going out in ``FIELDS``."""


def deal_scores(deal: Deal) -> np.ndarray:
    """Per seat, the ``FIELDS`` of a finished deal: net, counters by compartment, settlement, dressing, went out."""
    n = deal.players
    out = np.zeros((n, len(FIELDS)), dtype=np.float64)
    out[:, NET] = deal.delta
    out[deal.dealer, DRESSING] = -sum(deal.rules.dressing)
    for _cause, seat, comp, amount in deal.awards:
        out[seat, 1 + comp] += amount
    for payer, payee, amount in deal.payments:
        out[payer, SETTLEMENT] -= amount
        out[payee, SETTLEMENT] += amount
    if deal.winner is not None:
        out[deal.winner, WENT_OUT] = 1.0
    return out
