"""The table loop (``table.play_until``): the other seats play until a seat without a player must choose."""

from __future__ import annotations

import numpy as np
import pytest

from popejoan_env.engine import Deal
from popejoan_env.players import make_player
from popejoan_env.seat_view import seat_view
from popejoan_env.table import play_until


@pytest.mark.parametrize("players", [3, 5, 8])
@pytest.mark.parametrize("preset", ["modern", "victorian"])
def test_it_stops_exactly_where_the_seat_without_a_player_must_choose(players: int, preset: str) -> None:
    for d in range(20):
        deal = Deal.new(preset, players, dealer=d % players, rng=np.random.default_rng(d))
        me = d % players
        seats = [None if s == me else make_player("stops_first", seed=s) for s in range(players)]
        chosen: list[int] = []
        while True:
            before, known = len(deal.plays), len(chosen)
            legal = play_until(deal, seats, chosen=chosen)
            assert all(before <= i < len(deal.plays) for i in chosen[known:])
            if not legal:
                assert deal.done
                break
            assert deal.to_act == me and legal == deal.legal_actions() and len(legal) >= 2
            deal.play(legal[0])
        assert all(deal.plays[i][0] != me for i in chosen), "the seat without a player chose nothing through the loop"


def test_a_lone_lead_is_a_decision_when_lone_leads_is_off() -> None:
    sizes = set()
    for d in range(40):
        deal = Deal.new("modern", 3, rng=np.random.default_rng(100 + d))
        seats = [None, make_player("lowest"), make_player("lowest")]
        while legal := play_until(deal, seats, lone_leads=False):
            sizes.add(len(legal))
            deal.play(legal[0])
    assert 1 in sizes


def test_every_seat_with_a_player_plays_the_deal_out_as_play_out_does() -> None:
    for d in range(10):
        a = Deal.new("victorian", 4, rng=np.random.default_rng(d))
        b = a.copy()
        pa = [make_player("pool_hunter", seed=s) for s in range(4)]
        pb = [make_player("pool_hunter", seed=s) for s in range(4)]
        chosen: list[int] = []
        assert play_until(a, pa, chosen=chosen) == []
        b.play_out(lambda deal, legal: pb[deal.to_act].act(seat_view(deal, deal.to_act)))
        assert a.plays == b.plays and a.balances == b.balances and a.done
        assert len(chosen) == len(set(chosen)) and chosen == sorted(chosen)
