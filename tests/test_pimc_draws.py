"""pimc's compiled world draws (``draws=compiled``, the default): the same seed gives the same decisions in any
process, the old Python draws stay selectable, and a decision's worlds are one batch."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from popejoan_env.engine import Deal
from popejoan_env.players import make_player
from popejoan_env.players.base import UnknownPlayerError
from popejoan_env.players.pimc import PimcPlayer
from popejoan_env.players.stops import lead_candidates
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.seat_view import seat_view

PLAY = """
import numpy as np
from popejoan_env.engine import Deal
from popejoan_env.players import make_player
from popejoan_env.seat_view import seat_view

def plays(spec, preset, players, deals):
    out = []
    for d in range(deals):
        seats = [make_player(spec, seed=100 * d + s) for s in range(players)]
        deal = Deal.new(preset, players, dealer=d % players, rng=np.random.default_rng(d))
        deal.play_out(lambda dl, legal: seats[dl.to_act].act(seat_view(dl, dl.to_act)))
        out.append((tuple(c for _, c in deal.plays), tuple(deal.balances)))
    return out
"""
namespace: dict[str, object] = {}
exec(PLAY, namespace)
plays = namespace["plays"]


@pytest.mark.parametrize(("spec", "preset", "players"), [("pimc:samples=8", "modern", 4),
                                                          ("pimc:samples=8,engine=scalar", "victorian", 5)])
def test_the_same_seed_gives_the_same_decisions_in_two_processes(spec: str, preset: str, players: int) -> None:
    here = plays(spec, preset, players, 3)
    code = PLAY + f"\nprint(repr(plays({spec!r}, {preset!r}, {players}, 3)))"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for hash_seed in ("1", "2"):  # another process, with other hash seeds: set orders may differ, worlds may not
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": root}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        assert eval(out.stdout) == here
    assert len({p for p, _ in here}) == 3


def test_a_decision_draws_its_worlds_in_one_batch_from_the_players_generator() -> None:
    deal = Deal.new("modern", 4, 0, np.random.default_rng(3))
    while len(lead_candidates(seat_view(deal, deal.to_act))) < 2:
        deal.play(deal.legal_actions()[0])
        deal.advance()
    view = seat_view(deal, deal.to_act)
    candidates = lead_candidates(view)
    player = PimcPlayer(seed=5, samples=16)
    totals = player.evaluate(view, candidates)
    # the same worlds from the same generator, played out one Deal at a time by the scalar rollouts
    rng = np.random.default_rng(5)
    sampler = WorldSampler(view)
    hands, dead, log_weights = sampler.draw_many(rng, 16)
    scalar = PimcPlayer(seed=0, samples=16, engine="scalar")
    gains = scalar._scalar_gains(sampler.deals(hands, dead), candidates)
    assert totals == scalar.weigh(gains, log_weights, candidates)
    assert player.rng.random() == rng.random()  # one draw (the seed) per decision, nothing else


def test_the_python_draws_stay_selectable_and_decide_otherwise() -> None:
    assert make_player("pimc").draws == "compiled"
    old = make_player("pimc:draws=python")
    assert isinstance(old, PimcPlayer) and old.draws == "python" and old.name == "pimc:draws=python"
    assert make_player("pimc:samples=8,draws=python,engine=scalar").name == "pimc:samples=8,engine=scalar,draws=python"
    with pytest.raises(UnknownPlayerError, match="draws must be one of.*compiled.*python"):
        make_player("pimc:draws=fast")
    new = plays("pimc:samples=8", "modern", 4, 4)
    python = plays("pimc:samples=8,draws=python", "modern", 4, 4)
    assert new != python  # other random draws (the same distribution): other decisions somewhere
