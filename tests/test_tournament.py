"""The duplicate tournament: schedules, per-game accounting, honest intervals, outputs, reproducibility."""

from __future__ import annotations

import json
import math
import os
from collections import Counter

import numpy as np
import pytest

from popejoan_env import MODERN, Deal
from popejoan_env.errors import IllegalActionError, PopeJoanError
from popejoan_env.players import ScriptedPlayer, make_player
from popejoan_env.rules import COMPARTMENTS
from popejoan_env.seat_view import SeatView
from popejoan_env.tournament import (
    DRESSING, FIELDS, MAX_DEALS, NET, SETTLEMENT, WENT_OUT, TournamentResult, check_output, deal_scores,
    groups_of_deal, make_schedule, mean_ci, run_duplicate, t_quantile_975,
)


def test_t_quantiles_match_student_t() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 5, 10, 29, 30, 31, 45, 100, 1999, 10**6):
        assert t_quantile_975(df) == pytest.approx(scipy_stats.t.ppf(0.975, df), abs=2e-6)
    assert math.isnan(t_quantile_975(0))


def test_mean_ci_is_the_student_t_interval_of_the_mean() -> None:
    mean, half = mean_ci([1.0, 2.0, 3.0, 4.0, float("nan")])
    assert mean == 2.5
    assert half == pytest.approx(3.182446 * np.std([1, 2, 3, 4], ddof=1) / 2)
    assert math.isnan(mean_ci([3.0])[1])


def test_schedules_for_equal_more_and_fewer_entrants_than_seats() -> None:
    mode, groups = make_schedule(4, 4)
    assert mode == "subsets" and len(groups) == 1 and groups[0][0].entrants == (0, 1, 2, 3)
    mode, groups = make_schedule(5, 4)
    assert mode == "subsets" and len(groups) == 5
    assert Counter(e for g in groups for e in g[0].entrants) == {e: 4 for e in range(5)}
    mode, groups = make_schedule(2, 4)
    assert mode == "field" and len(groups) == 1
    assert [lu.entrants for lu in groups[0]] == [(0, 1, 1, 1), (1, 0, 0, 0)]
    assert [lu.scored for lu in groups[0]] == [(True, False, False, False)] * 2
    mode, groups = make_schedule(3, 4)
    assert mode == "field" and len(groups) == 3
    with pytest.raises(PopeJoanError, match="at least 2 entrants"):
        make_schedule(1, 4)
    with pytest.raises(PopeJoanError, match="use 'field'"):
        make_schedule(3, 4, "subsets")
    with pytest.raises(PopeJoanError, match="unknown lineups mode"):
        make_schedule(4, 4, "league")


def test_windowed_subsets_are_played_equally_often() -> None:
    _, groups = make_schedule(8, 4)  # 70 subsets
    used = Counter(g for d in range(35) for g in groups_of_deal(d, len(groups), 12))
    assert len(used) == 70 and set(used.values()) == {6}
    assert groups_of_deal(0, 5, 12) == [0, 1, 2, 3, 4]


def test_deal_scores_account_for_every_counter() -> None:
    for seed in range(200):
        players = 3 + seed % 6
        rules = MODERN if seed % 2 else MODERN.replace(pope_turnup="ends_deal", pair_split="halves")
        deal = Deal.new(rules, players, seed % players, np.random.default_rng(seed))
        while not deal.done:
            deal.play(deal.legal_actions()[-1])
        rec = deal_scores(deal)
        comps = rec[:, 1:1 + len(COMPARTMENTS)].sum(axis=1)
        np.testing.assert_allclose(rec[:, NET], rec[:, DRESSING] + comps + rec[:, SETTLEMENT])
        assert rec[:, SETTLEMENT].sum() == 0
        assert rec[:, WENT_OUT].sum() == (deal.winner is not None)
        assert rec[deal.dealer, DRESSING] == -15
    assert FIELDS[0] == "net"


class Recorder(ScriptedPlayer):
    """Plays its lowest legal card and notes the hand it holds at the first decision of a game."""

    def __init__(self, name: str, log: list) -> None:
        self.name = name
        self.log = log
        super().__init__()

    def choose(self, view):  # type: ignore[no-untyped-def]
        if view.played == 0:
            self.log.append((self.name, view.hand))
        return min(view.legal)


def test_every_entrant_plays_every_hand_of_a_deal() -> None:
    log: list = []
    entrants = [Recorder(f"p{i}", log) for i in range(4)]
    # Victorian: any lead, so eldest always has a real first decision, holding its whole hand.
    run_duplicate(entrants, deals=2, seed=3, rules="victorian")
    deals = [Deal.new("victorian", 4, d, np.random.default_rng([3, d])) for d in range(2)]
    assert len(log) == 2 * 4  # one first lead per game: 2 deals × 4 rotations
    for d, deal in enumerate(deals):
        looks = log[4 * d: 4 * d + 4]
        # The same cards (eldest's) in every rotation, in the hands of a different entrant each time.
        assert {hand for _, hand in looks} == {deal.initial_hands[deal.eldest]}
        assert sorted(name for name, _ in looks) == ["p0", "p1", "p2", "p3"]


def test_results_are_reproducible_and_do_not_depend_on_workers() -> None:
    entrants = ["random", "lowest", "stops_first", "pool_hunter", "pimc:samples=2"]
    a = run_duplicate(entrants, deals=6, seed=9)
    b = run_duplicate(entrants, deals=6, seed=9)
    c = run_duplicate(entrants, deals=6, seed=9, workers=2)
    np.testing.assert_array_equal(a.per_deal, b.per_deal)
    np.testing.assert_array_equal(a.per_deal, c.per_deal)
    np.testing.assert_array_equal(np.isnan(a.pair), np.isnan(c.pair))
    np.testing.assert_array_equal(np.nan_to_num(a.pair), np.nan_to_num(c.pair))
    assert a.games == c.games == 6 * 5 * 4
    assert a.decisions == c.decisions
    d = run_duplicate(entrants, deals=6, seed=10)
    assert not np.array_equal(a.per_deal, d.per_deal)


def test_scores_are_consistent_between_per_deal_means_and_head_to_head() -> None:
    r = run_duplicate(["random", "lowest", "stops_first", "pool_hunter"], deals=30, seed=4)
    assert r.lineups == "subsets" and r.games == 30 * 4
    net = r.per_deal[:, :, NET]
    # With one lineup of everybody, the pair difference is the difference of the per-deal scores.
    np.testing.assert_allclose(r.pair[0, 2], net[0] - net[2])
    rows = {row["player"]: row for row in r.stats()}
    assert rows["stops_first"]["dressing"] == pytest.approx(-15 / 4)
    for row in rows.values():
        total = sum(row["compartments"].values()) + row["settlement"] + row["dressing"]
        assert total == pytest.approx(row["mean"])
        assert row["low"] < row["mean"] < row["high"]
        assert 0 <= row["go_out_rate"] <= 1
    assert [row["rank"] for row in r.stats()] == [1, 2, 3, 4]
    h = r.head_to_head()
    assert h["random"]["lowest"]["mean"] == pytest.approx(-h["lowest"]["random"]["mean"])


def test_field_lineups_score_the_lone_seat_against_copies() -> None:
    r = run_duplicate(["stops_first", "random"], deals=40, seed=5, seats=5)
    assert r.lineups == "field" and r.games == 40 * 2 * 5
    assert r.schedule == [[["stops_first"] + ["random"] * 4, ["random"] + ["stops_first"] * 4]]
    assert r.stats()[0]["player"] == "stops_first"
    assert r.beats("stops_first", "random")


def test_any_player_with_act_takes_a_seat() -> None:
    class ActOnly:
        """Holds a scripted player but offers only the protocol: ``name``, ``reset`` and ``act(view)``."""

        def __init__(self) -> None:
            self.inner = make_player("stops_first")
            self.name = "act_only"
            self.calls = 0

        def reset(self, seed: int | None = None) -> None:
            self.inner.reset(seed)

        def act(self, view) -> int:  # type: ignore[no-untyped-def]
            self.calls += 1
            assert isinstance(view, SeatView) and len(view.legal) > 1
            return self.inner.act(view)

    wrapped = ActOnly()
    a = run_duplicate([wrapped, "random", "lowest", "pool_hunter"], deals=5, seed=6)
    b = run_duplicate(["stops_first", "random", "lowest", "pool_hunter"], deals=5, seed=6)
    assert wrapped.calls > 0
    np.testing.assert_array_equal(a.per_deal, b.per_deal)


def test_model_files_of_one_name_are_told_apart_by_their_folders(tmp_path) -> None:
    from test_edges import tiny_model

    for run in ("run_a", "run_b"):
        (tmp_path / run / "rounds").mkdir(parents=True)
    a = tiny_model(tmp_path / "run_a" / "rounds" / "round_1.zip")
    b = tiny_model(tmp_path / "run_b" / "rounds" / "round_1.zip")
    result = run_duplicate([str(a), str(b), str(a)], deals=2, seed=1, seats=3)
    assert result.players == ["run_a/rounds/round_1", "run_b/rounds/round_1", "run_a/rounds/round_1#2"]
    assert run_duplicate([str(a), str(a), "random"], deals=2, seed=1, seats=3).players == \
        ["round_1", "round_1#2", "random"]


def _blas_threads(_: int) -> list[int]:
    from threadpoolctl import threadpool_info

    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_forked_workers_run_blas_on_one_thread() -> None:
    from threadpoolctl import threadpool_limits

    from popejoan_env.cli import fork_pool

    with threadpool_limits(limits=2, user_api="blas"):  # a parent with two BLAS threads, as on a 2-core machine
        assert max(_blas_threads(0)) == 2
        with fork_pool(2) as pool:
            seen = pool.map(_blas_threads, range(4))
        assert max(_blas_threads(0)) == 2  # the parent keeps its own
    assert seen and all(threads and set(threads) == {1} for threads in seen)


def test_an_illegal_choice_is_reported_with_the_players_name() -> None:
    class Cheat(ScriptedPlayer):
        name = "cheat"

        def choose(self, view):  # type: ignore[no-untyped-def]
            return 20  # the 8♦, never in play

    with pytest.raises(IllegalActionError, match="player 'cheat' at seat"):
        run_duplicate([Cheat(), "random", "lowest", "stops_first"], deals=2, seed=1)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(PopeJoanError, match="at least 2 deals"):
        run_duplicate(["random", "lowest"], deals=1, seed=1)
    with pytest.raises(PopeJoanError, match="3 to 8"):
        run_duplicate(["random", "lowest"], deals=2, seed=1, seats=9)
    with pytest.raises(PopeJoanError, match="unknown player"):
        run_duplicate(["random", "nobody"], deals=2, seed=1)


def test_outputs_json_markdown_table_and_chart(tmp_path) -> None:
    r = run_duplicate(["random", "lowest", "stops_first"], deals=4, seed=2, seats=3, rules="victorian")
    data = json.loads(r.to_json())
    assert data["format"] == "popejoan-tournament/1"
    assert data["players"] == ["random", "lowest", "stops_first"]
    assert data["rules"]["preset"] == "victorian" and data["seats"] == 3
    assert {row["player"] for row in data["stats"]} == set(data["players"])
    assert set(data["stats"][0]["compartments"]) == set(COMPARTMENTS)
    assert len(data["per_deal_net"]["random"]) == 4
    assert data["head_to_head"]["random"]["lowest"]["deals"] == 4
    md = r.to_markdown()
    assert "| rank | player |" in md and "Head to head" in md and "stops_first" in md
    text = r.table()
    assert "head to head" in text and "counters/deal" in text
    paths = r.save(str(tmp_path / "sub" / "ladder"))
    assert [p.rsplit(".", 1)[1] for p in paths] == ["json", "md", "png"]
    with open(paths[2], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert isinstance(r, TournamentResult)


def test_an_illegal_answer_is_refused_in_the_engines_words() -> None:
    class PastThePack(ScriptedPlayer):
        name = "past"

        def choose(self, view):  # type: ignore[no-untyped-def]
            return 52

    class Notation:
        """Answers in card notation, which ``act`` may not (it returns a card id)."""

        name = "notation"

        def reset(self, seed: int | None = None) -> None:
            pass

        def act(self, view) -> str:  # type: ignore[no-untyped-def]
            return "9D"

    with pytest.raises(IllegalActionError, match=r"player 'past' at seat \d chose badly: .*not a card of the pack"):
        run_duplicate([PastThePack(), "random", "lowest", "stops_first"], deals=2, seed=1)
    with pytest.raises(IllegalActionError, match=r"player 'notation' at seat \d chose badly: '9D' is not a card id"):
        run_duplicate([Notation(), "random", "lowest", "stops_first"], deals=2, seed=1)


def test_settings_that_cannot_run_are_refused_before_any_work() -> None:
    entrants = ["random", "lowest"]
    with pytest.raises(PopeJoanError, match="non-negative"):
        run_duplicate(entrants, deals=2, seed=-1)
    with pytest.raises(PopeJoanError, match="at most 10,000,000 deals"):
        run_duplicate(entrants, deals=MAX_DEALS + 1, seed=1)
    with pytest.raises(PopeJoanError, match="max groups"):
        run_duplicate(entrants, deals=2, seed=1, max_groups=0)
    with pytest.raises(PopeJoanError, match="workers"):
        run_duplicate(entrants, deals=2, seed=1, workers=0)
    with pytest.raises(PopeJoanError, match="at least 2 deals"):
        run_duplicate(entrants, deals=True, seed=1)
    assert run_duplicate(entrants, deals=np.int64(2), seed=np.int64(1)).games == 2 * 8


def test_save_writes_atomically_and_refuses_a_bad_prefix_first(tmp_path) -> None:
    r = run_duplicate(["random", "lowest"], deals=2, seed=1)
    prefix = str(tmp_path / "ladder")
    for ext in ("json", "md"):
        (tmp_path / f"ladder.{ext}").write_text("an older result")
    assert r.save(prefix, chart=False) == [prefix + ".json", prefix + ".md"]
    assert json.loads((tmp_path / "ladder.json").read_text())["deals"] == 2
    assert sorted(os.listdir(tmp_path)) == ["ladder.json", "ladder.md"]
    (tmp_path / "f").write_text("")
    with pytest.raises(PopeJoanError, match="cannot write"):
        check_output(str(tmp_path / "f" / "ladder"))


def test_a_window_of_groups_weighs_every_deal_and_group_score_alike() -> None:
    # A mean of per-deal means weighed a subset 0.67 to 2.0 times its share (7 players at 4 seats, 12 groups a deal).
    from scipy import stats as sps

    from popejoan_env.rules import Rules
    from popejoan_env.tournament import groups_of_deal, make_schedule
    from popejoan_env.tournament.runner import _Runner
    from popejoan_env.tournament.scores import NET

    names = ["lowest", "stops_first", "pool_hunter", "lowest", "stops_first"]  # deterministic: seeds do not matter
    deals, window, e = 5, 2, len(names)  # 5 groups, 2 a deal: entrant 0 is in 2, 2, 1, 2, 1 of them
    result = run_duplicate([make_player(n) for n in names], deals=deals, seed=3, max_groups=window)
    _, groups = make_schedule(e, 4, "subsets")
    players = [make_player(n) for n in names]
    sums, counts = np.zeros((e, deals)), np.zeros((e, deals))
    pair_sums, pair_counts = np.zeros((e, e, deals)), np.zeros((e, e, deals))
    for d in range(deals):
        for g in groups_of_deal(d, len(groups), window):  # each group of the window played alone
            value, scored, diff, met = _Runner(players, Rules.preset("modern"), 4, 3, [groups[g]], 1).deal(d)
            sums[:, d] += value[:, NET]
            counts[:, d] += scored
            pair_sums[:, :, d] += np.nan_to_num(diff) * met
            pair_counts[:, :, d] += met
    assert len({tuple(c) for c in counts.T}) > 1, "the entrants' groups a deal differ: the weights matter"
    rows = {r["player"]: r for r in result.stats()}
    t = sps.t.ppf(0.975, deals - 1)
    for i, name in enumerate(result.players):
        mean = sums[i].sum() / counts[i].sum()
        z = (sums[i] - mean * counts[i]) / counts[i].mean()
        assert np.isclose(rows[name]["mean"], mean), (name, rows[name]["mean"], mean)
        assert np.isclose(rows[name]["ci95"], t * z.std(ddof=1) / np.sqrt(deals), rtol=1e-5), name
    pairs = result.head_to_head()
    for i, a in enumerate(result.players):
        for j, b in enumerate(result.players):
            if i != j and pair_counts[i, j].sum():
                assert np.isclose(pairs[a][b]["mean"], pair_sums[i, j].sum() / pair_counts[i, j].sum()), (a, b)


def test_a_windowed_tournaments_json_gives_its_means_again() -> None:
    # with a window of groups the mean weighs each deal by the entrant's groups in it: the JSON must carry them
    import json

    from popejoan_env.tournament.stats import ratio_ci

    r = run_duplicate(["random", "lowest", "stops_first", "pool_hunter", "random"], deals=12, seed=3, seats=3,
                      max_groups=4)
    data = json.loads(r.to_json())
    for row in data["stats"]:
        x = np.array([np.nan if v is None else v for v in data["per_deal_net"][row["player"]]])
        mean, half = ratio_ci(x, np.array(data["per_deal_groups"][row["player"]], dtype=float))
        assert mean == pytest.approx(row["mean"]) and half == pytest.approx(row["ci95"])


class _Nameless:
    """Has act and reset but no name: not a player."""

    def reset(self, seed: int | None = None) -> None:
        """Nothing to re-seed."""

    def act(self, view: SeatView) -> int:
        """The first legal card."""
        return view.legal[0]


@pytest.mark.parametrize("entrants, said", [
    ("random,lowest", "entrants must be a list of players or player specs, such as ['pimc', 'stops_first'], "
                      "got 'random,lowest'"),
    (None, "entrants must be a list of players or player specs, such as ['pimc', 'stops_first'], got None"),
    ([object(), "lowest"], "is not a player (it needs a name, reset(seed) and act(view)) nor a player spec"),
    ([_Nameless(), "lowest"], "is not a player (it needs a name, reset(seed) and act(view)) nor a player spec"),
])
def test_run_duplicate_refuses_what_is_not_a_list_of_players(entrants: object, said: str) -> None:
    """A comma string is not split into letters, and an object that is not a player is named, not an AttributeError."""
    with pytest.raises(PopeJoanError) as err:
        run_duplicate(entrants, deals=2, seed=1)  # type: ignore[arg-type]
    assert said in str(err.value)
