"""Duplicate tournaments: the same deals replayed with every seating rotation, so neither seat nor
cards favour anyone, and confidence intervals that take the deal as the unit of independence.

>>> result = run_duplicate(["random", "stops_first", "lowest", "pool_hunter"], deals=20, seed=1)
>>> [row["player"] for row in result.stats()][0] != "random"
True

| module | holds |
|---|---|
| ``schedule`` | ``Lineup``, ``make_schedule``, ``groups_of_deal``: who sits where, and which groups a deal plays |
| ``runner`` | ``run_duplicate``, ``player_seed``, ``check_settings``, ``BACKENDS``: playing every game of every deal |
| ``scores`` | ``FIELDS``, ``deal_scores``: what is scored of one finished deal |
| ``stats`` | ``mean_ci``, ``t_quantile_975``: the mean and its 95% Student-t interval |
| ``result`` | ``TournamentResult``: the per-deal scores, rankings, head to head, JSON |
| ``reports`` | the terminal table, Markdown, the PNG chart, and saving them atomically |

**Deals.** Deal ``d`` is shuffled by ``numpy.random.default_rng([seed, d])``
and dealt by seat ``d mod seats`` (the deal passes left from deal to deal).
Every deal starts from an empty board plus the dealer's dressing (R1) and
zero balances: carry-over (R12) would make the board differ between the
rotations of a deal, and duplicate play needs them identical.  A deal is
played straight through the engine (``Deal.play_out``), not the PettingZoo
environment, for speed.  A player is asked only when it has a choice: the
engine plays forced cards (R8) and lone legal leads itself, and every other
decision is ``player.act(seat_view(deal, seat))``.

**Lineups.** A *lineup* puts entrants at the seats of the table; a *rotation*
shifts it one seat left, and each lineup is played in all ``seats``
rotations of every deal, so each entrant in it plays every hand.  Only the
cyclic rotations are played, not every permutation: in Pope Joan a seat's
neighbours matter only through who deals and who leads first, and the
rotations already give every entrant every hand and every distance from the
dealer.  Lineups come in *groups*, and an entrant's score in a group is its
mean per seat it fills there:

* ``subsets`` (the default when there are at least as many entrants as
  seats): every group is one lineup of ``seats`` different entrants, one
  group for each subset of that size (5 entrants at 4 seats: 5 groups of 4
  rotations, 20 games per deal).  When there are more subsets than
  ``max_groups``, deal ``d`` plays ``max_groups`` consecutive subsets
  starting at ``d·max_groups`` (cyclically), so over the deals every subset
  is played equally often (±1).
* ``field`` (the default with fewer entrants than seats): one group per pair
  of entrants A, B: A alone against ``seats-1`` copies of B, and B alone
  against copies of A.  Only the lone seat is scored, so A's score is "A
  against a field of B" and the pair's difference is (A against B's) minus
  (B against A's): both have played every hand of the deal alone.  Two
  entrants at a 4-seat table play 8 games per deal.

**Statistics.** For each entrant, deal and group, the scores of its scored
seats are averaged; the mean is over those (deal, group) scores, each group
alike, and its 95% Student-t interval is over the deals (``stats.ratio_ci``:
with a window of groups an entrant is in more groups on some deals than on
others, and a mean of per-deal means would weigh a group more on a deal
where it has fewer).  Where every deal plays every group it is the mean of
the per-deal means.  A deal's rotations and groups are not independent (they
share the cards), so taking them as separate samples would overstate the
confidence.  Counters are the net
change per deal (``Deal.delta``): the dressing paid as dealer, the
compartments taken (by the turn-up, by playing, and the game), and the
settlement when someone goes out; the breakdown is reported too, and
``net = dressing + compartments + settlement``.  Head-to-head: for each pair
of entrants the mean difference of their scores in the groups where both
were scored, each such group alike, with a 95% interval over the deals.

**Processes.** Every game is seeded from its deal, group, lineup and
rotation (``player_seed``), so the order of play does not matter: with
``workers=N`` forked processes play chunks of deals, and with
``backend="ray"`` chunks of deals run as Ray tasks (``popejoan_env.cluster``:
a local Ray, or the cluster at ``address``), each task with its own copy of
the players; the ray backend spreads over every CPU of its cluster and
refuses ``workers > 1``.  Every number of the result (per-deal scores, head to
head, decisions, games, the JSON but for its timings) is the same either way.
"""

from __future__ import annotations

from popejoan_env.tournament.reports import check_output
from popejoan_env.tournament.result import TournamentResult
from popejoan_env.tournament.runner import BACKENDS, MAX_DEALS, MAX_WORKERS, check_settings, player_seed, run_duplicate
from popejoan_env.tournament.schedule import MAX_GROUPS, Lineup, groups_of_deal, make_schedule
from popejoan_env.tournament.scores import DRESSING, FIELDS, NET, SETTLEMENT, WENT_OUT, deal_scores
from popejoan_env.tournament.stats import mean_ci, t_quantile_975

__all__ = [
    "BACKENDS", "DRESSING", "FIELDS", "MAX_DEALS", "MAX_GROUPS", "MAX_WORKERS", "NET", "SETTLEMENT", "WENT_OUT",
    "Lineup", "TournamentResult",
    "check_output", "check_settings", "deal_scores", "groups_of_deal", "make_schedule", "mean_ci",
    "player_seed", "run_duplicate", "t_quantile_975",
]
