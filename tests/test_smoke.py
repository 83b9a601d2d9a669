"""The package imports and a deal plays out."""

import numpy as np

from popejoan_env import Deal, MODERN


def test_deal_plays_out() -> None:
    deal = Deal.new(MODERN, 4, 0, np.random.default_rng(0))
    while not deal.done:
        deal.play(deal.legal_actions()[0])
    assert deal.winner is not None
