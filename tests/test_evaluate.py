"""``popejoan evaluate``: the frozen deal set is what the tournament deals, the report holds what it says, an
interrupted evaluation resumes to the same figures, bad input is one line, and the control variate keeps its
mean while narrowing its interval."""

from __future__ import annotations

import gzip
import json
import os
import sys
import textwrap

import numpy as np
import pytest

from popejoan_env.__main__ import main
from popejoan_env.cards import mask_of
from popejoan_env.engine import Deal, deal_cards
from popejoan_env.errors import PopeJoanError
from popejoan_env.evaluate import dealset, panel, ratings, report, runner, variance
from popejoan_env.evaluate.command import canonical_command, default_prefix, evaluate_agent
from popejoan_env.players import PimcPlayer, UnknownPlayerError, make_player
from popejoan_env.rules import Rules


def test_the_stored_deal_set_is_its_seeds_packs_and_has_its_checksum() -> None:
    orders = dealset.load()
    assert orders.shape == (dealset.DEALS, 51)
    assert dealset.checksum(orders) == dealset.SHA256
    assert np.array_equal(orders, dealset.generate())
    assert all(sorted(row) == sorted(set(row)) and 20 not in row for row in orders[:50].tolist())  # no 8D


@pytest.mark.parametrize(("preset", "seats"), [("modern", 3), ("modern", 4), ("modern", 8), ("victorian", 5)])
def test_the_tournament_deals_the_stored_packs_at_every_table(preset: str, seats: int) -> None:
    orders = dealset.load()
    rules = Rules.preset(preset)
    for i in (0, 1, dealset.BLOCK + 7, dealset.DEALS - 1):
        b, d = divmod(i, dealset.BLOCK)
        dealt = Deal.new(rules, seats, d % seats, np.random.default_rng([dealset.block_seed(b), d]))
        hands, dead = deal_cards(rules, seats, d % seats, orders[i].tolist())
        assert list(dealt.initial_hands) == [mask_of(h) for h in hands]
        assert dealt.turnup == dead[-1]


def test_a_damaged_or_foreign_deal_set_is_refused(tmp_path: os.PathLike[str]) -> None:
    orders = dealset.load().copy()
    orders[3, [0, 1]] = orders[3, [1, 0]]
    path = os.path.join(tmp_path, "set.bin.gz")
    with gzip.open(path, "wb") as fh:
        fh.write(orders.tobytes())
    with pytest.raises(dealset.DealSetError, match="SHA-256"):
        dealset.load(path)
    with gzip.open(path, "wb") as fh:
        fh.write(orders.tobytes()[:-1])
    with pytest.raises(dealset.DealSetError, match="bytes"):
        dealset.load(path)
    with pytest.raises(dealset.DealSetError, match="deal 3"):
        dealset.check_dealing(orders, 100)


def test_the_panel_is_narrowed_in_its_own_order_and_unknown_names_are_refused() -> None:
    assert panel.choose(None) == list(panel.PANEL)
    assert panel.choose("pimc, random") == ["random", "pimc"]
    with pytest.raises(PopeJoanError, match="not in panel/2"):
        panel.choose("random,stops_frist")
    with pytest.raises(PopeJoanError, match="twice"):
        panel.choose("random,random")


@pytest.fixture()
def own_player(tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """A researcher's module with a factory (its own act(view) player) and a factory that returns junk."""
    (tmp_path / "my_agent.py").write_text(textwrap.dedent('''
        import numpy as np

        class Highest:
            name = "highest"
            def reset(self, seed=None):
                self.rng = np.random.default_rng(seed)
            def act(self, view):
                return max(view.legal)

        def make(seed=None):
            player = Highest()
            player.reset(seed)
            return player

        def junk():
            return 42

        def broken(seed=None):
            raise RuntimeError("no weights here")
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_agent", raising=False)
    return "my_agent:make"


def test_module_factory_specs_build_your_own_player_and_refuse_clearly(own_player: str) -> None:
    assert make_player(own_player, seed=3).name == "highest"
    with pytest.raises(UnknownPlayerError, match="returned int, not a player"):
        make_player("my_agent:junk")
    with pytest.raises(UnknownPlayerError, match="has no 'nothing'"):
        make_player("my_agent:nothing")
    with pytest.raises(UnknownPlayerError, match="cannot import module 'no_such_module_here'"):
        make_player("no_such_module_here:make")
    with pytest.raises(UnknownPlayerError, match=r"my_agent.broken\(\) raised RuntimeError: no weights here"):
        make_player("my_agent:broken")  # whatever the researcher's factory raises is one refusal, not a traceback
    assert isinstance(make_player("pimc:samples=8"), PimcPlayer)  # a scripted name's parameters are no factory
    with pytest.raises(UnknownPlayerError, match="is not key=value"):
        make_player("pimc:greedy")


def test_an_evaluation_reports_margins_the_command_the_versions_and_the_deal_set(
        own_player: str, tmp_path: os.PathLike[str]) -> None:
    out = os.path.join(tmp_path, "eval", "mine")
    rep = evaluate_agent(own_player, deals=50, opponents="stops_first,random", out=out)
    assert rep["format"] == report.FORMAT and rep["deal_set"]["sha256"] == dealset.SHA256
    assert rep["command"] == canonical_command(own_player, "modern", 4, 50, ["random", "stops_first"])
    assert rep["versions"]["numpy"] == np.__version__ and rep["panel"]["version"] == panel.VERSION
    assert rep["panel"]["shipped_sha256"] == panel.SHIPPED_SHA256  # what the panel's network names play
    rows = {r["opponent"]: r for r in rep["opponents"]}
    assert list(rows) == ["random", "stops_first"] and all(r["deals"] == 50 for r in rows.values())
    margins = np.array(rep["per_deal_margin"]["stops_first"])
    assert rows["stops_first"]["margin"]["mean"] == pytest.approx(margins.mean())
    wins = np.mean([1.0 if m > 0 else 0.5 if m == 0 else 0.0 for m in margins])
    assert rows["stops_first"]["deal_win_rate"]["mean"] == pytest.approx(wins)
    panel_margin = np.mean([rep["per_deal_margin"][n] for n in rows], axis=0).mean()
    assert rep["panel_margin"]["mean"] == pytest.approx(panel_margin)
    for suffix in (".json", ".md", ".txt"):
        assert os.path.isfile(out + suffix)
    assert not os.path.exists(out + ".state.json")  # a finished evaluation leaves no state behind
    assert json.load(open(out + ".json"))["command"] == rep["command"]
    assert dealset.SHA256 in open(out + ".txt").read() and dealset.SHA256 in open(out + ".md").read()


def test_an_agent_against_itself_has_margin_zero_when_it_plays_deterministically() -> None:
    rep = evaluate_agent("stops_first", deals=50, opponents="stops_first")
    row = rep["opponents"][0]
    assert row["margin"]["mean"] == 0 and row["deal_win_rate"]["mean"] == 0.5


def test_an_interrupted_evaluation_resumes_to_the_figures_of_an_uninterrupted_one(
        tmp_path: os.PathLike[str]) -> None:
    whole = evaluate_agent("lowest", deals=100, opponents="random,stops_first")
    out = os.path.join(tmp_path, "lowest")
    played: list[tuple[str, int]] = []

    def stop_after_two(name: str, block: int) -> None:
        played.append((name, block))
        if len(played) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate_agent("lowest", deals=100, opponents="random,stops_first", out=out, on_block=stop_after_two)
    saved = json.load(open(out + ".state.json"))
    assert saved["format"] == runner.STATE_FORMAT and list(saved["blocks"]["random"]) == ["0", "1"]
    again: list[tuple[str, int]] = []
    already: list[int] = []
    resumed = evaluate_agent("lowest", deals=100, opponents="random,stops_first", out=out,
                             on_block=lambda n, b: again.append((n, b)), on_start=already.append)
    assert ("random", 0) not in again and ("stops_first", 0) in again and already == [100]
    assert resumed["per_deal_margin"] == whole["per_deal_margin"]


def test_a_state_file_of_another_evaluation_is_refused(tmp_path: os.PathLike[str]) -> None:
    out = os.path.join(tmp_path, "x")
    with pytest.raises(KeyboardInterrupt):
        evaluate_agent("lowest", deals=100, opponents="random", out=out,
                       on_block=lambda n, b: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(PopeJoanError, match="other settings"):
        evaluate_agent("random", deals=100, opponents="random", out=out)


def test_a_state_file_of_another_evaluation_is_refused_naming_what_differs(tmp_path: os.PathLike[str]) -> None:
    """Before: the refusal printed the file's whole settings, cut at 300 characters, and not this evaluation's."""
    out = os.path.join(tmp_path, "x")
    with pytest.raises(KeyboardInterrupt):
        evaluate_agent("lowest", deals=100, opponents="random", out=out,
                       on_block=lambda n, b: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(PopeJoanError, match=r"other settings \('agent': 'lowest' there, 'random' here\); remove"):
        evaluate_agent("random", deals=100, opponents="random", out=out)
    with pytest.raises(PopeJoanError, match=r"'deals': 100 there, 50 here; 'opponents': \['random'\] there, "
                                            r"\['random', 'lowest'\] here\)"):
        evaluate_agent("lowest", deals=50, opponents="random,lowest", out=out)


def test_two_runs_model_files_get_reports_of_their_own_by_default() -> None:
    # Every training run saves model.zip: named by its stem alone, the second evaluation replaced the first's report
    # (and, run side by side, the two shared one state file).
    quick = default_prefix(os.path.join("models", "quick", "model.zip"), "modern", 4, 200)
    other = default_prefix(os.path.join("runs", "seed2", "model.zip"), "modern", 4, 200)
    assert quick == os.path.join("evaluations", "quick-model_modern_4p_200")
    assert other == os.path.join("evaluations", "seed2-model_modern_4p_200")
    assert default_prefix("model.zip", "modern", 4, 200) == os.path.join("evaluations", "model_modern_4p_200")
    assert default_prefix("pimc:samples=64", "victorian", 6, 2000) == os.path.join(
        "evaluations", "pimc-samples-64_victorian_6p_2000")


@pytest.mark.parametrize(("argv", "says"), [
    (["evaluate", "stops_first", "--deals", "75"], "multiple of 50"),
    (["evaluate", "stops_first", "--quick", "--deals", "200"], "--quick"),
    (["evaluate", "stops_first", "--opponents", "stockfish"], "not in panel/2"),
    (["evaluate", "no_such_player", "--quick"], "unknown player"),
    (["evaluate", "stops_first", "--quick", "--address", "auto"], "--backend ray"),
    (["evaluate", "stops_first", "--quick", "--preset", "napoleonic"], "napoleonic"),
    (["evaluate", "stops_first", "--quick", "--ratings", "9"], "--ratings: players must be an integer from 3 to 8"),
    (["exploit", "stops_first", "--deals", "75"], "multiple of 50"),
    (["exploit", "no_such_player"], "unknown player"),
])
def test_bad_evaluations_are_refused_in_one_line_with_status_2(
        argv: list[str], says: str, capsys: pytest.CaptureFixture[str], tmp_path: os.PathLike[str]) -> None:
    assert main([*argv, "--out", os.path.join(tmp_path, "r")]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1


def test_the_control_variate_keeps_the_mean_and_narrows_the_interval_when_it_correlates() -> None:
    rng = np.random.default_rng(5)
    plain, controlled, halves = [], [], []
    for _ in range(400):
        c = rng.normal(1.0, 2.0, size=(200, 1))
        m = 0.7 + 0.9 * (c[:, 0] - 1.0) + rng.normal(0, 1.0, 200)
        cv = variance.controlled(m, c, np.array([1.0]), np.array([0.0]))
        plain.append(m.mean())
        controlled.append(cv["mean"])
        halves.append((np.std(m, ddof=1), cv["ci95"]))
    assert np.mean(controlled) == pytest.approx(0.7, abs=0.01)  # unbiased: 400 repeats, se 0.0035
    assert np.mean(plain) == pytest.approx(0.7, abs=0.03)
    assert np.std(controlled) < 0.6 * np.std(plain)
    covered = np.mean([abs(e - 0.7) <= h for e, (_, h) in zip(controlled, halves)])
    assert 0.92 <= covered <= 0.98  # a 95% interval covers the true mean about 95% of the time
    with pytest.raises(PopeJoanError, match="more than"):
        variance.controlled(np.zeros(3), np.zeros((3, 1)), np.zeros(1), np.zeros(1))


@pytest.mark.slow
def test_exploit_trains_a_learner_within_its_budget_and_reports_its_gain(tmp_path: os.PathLike[str],
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = os.path.join(tmp_path, "br")
    assert main(["exploit", "stops_first", "--method", "learn", "--steps", "256", "--seats", "3", "--deals", "50",
                 "--out", out]) == 0
    rep = json.load(open(os.path.join(out, "exploit.json")))
    assert rep["format"] == "popejoan-exploit/2" and rep["deal_set"]["sha256"] == dealset.SHA256
    assert rep["steps"] == 256 <= rep["timesteps"] and os.path.isfile(rep["learner"])  # the budget in steps
    gain, alone, own = (rep["results"][k]["mean"] for k in ("gain", "learner_alone", "agent_in_own_field"))
    assert gain == pytest.approx(alone - own)
    assert "gain of one seat swapping stops_first for the learner" in capsys.readouterr().out


def test_ratings_recover_an_additive_table_and_measure_how_far_a_table_is_from_it() -> None:
    players = ["a", "b", "c"]
    strength = {"a": 1.0, "b": 0.0, "c": -1.0}
    rng = np.random.default_rng(2)
    noise = rng.normal(0, 0.01, 400)
    per_deal = {(x, y): strength[x] - strength[y] + noise for x, y in ratings.pairs_of(players)}
    fitted = ratings.rate(players, per_deal, boot=200)
    assert [row["player"] for row in fitted["rows"]] == ["a", "b", "c"]
    for row in fitted["rows"]:
        assert row["rating"] == pytest.approx(strength[row["player"]], abs=0.01)  # the strengths sum to zero
        assert row["low"] <= row["rating"] <= row["high"]
    assert fitted["residual"] < 0.01
    cycle = {("a", "b"): np.ones(400), ("b", "c"): np.ones(400), ("c", "a"): np.ones(400)}  # rock-paper-scissors
    fitted = ratings.rate(players, cycle, boot=50)
    assert all(row["rating"] == pytest.approx(0) for row in fitted["rows"]) and fitted["residual"] == pytest.approx(1)
    with pytest.raises(PopeJoanError, match="missing"):
        ratings.rate(players, {("a", "b"): np.ones(5), ("b", "c"): np.ones(5)})
    with pytest.raises(PopeJoanError, match="same deals"):
        ratings.rate(players, {("a", "b"): np.ones(5), ("b", "c"): np.ones(5), ("a", "c"): np.ones(6)})
    assert ratings.pairs_of(["random", "lowest", "x"], [("lowest", "random")]) == [
        ("lowest", "random"), ("random", "x"), ("lowest", "x")]


def test_ratings_of_an_evaluation_rate_the_agent_with_every_opponent_and_draw_a_chart(
        tmp_path: os.PathLike[str]) -> None:
    out = os.path.join(tmp_path, "rated")
    rep = evaluate_agent("stops_first", deals=50, opponents="random,lowest", out=out, ratings=[3])
    table = rep["ratings"]["tables"]["3"]
    assert sorted(row["player"] for row in table["rows"]) == ["lowest", "random", "stops_first"]
    assert sorted(rep["ratings"]["per_deal_margin"]["3"]) == ["lowest-random", "stops_first-lowest",
                                                             "stops_first-random"]
    inside = evaluate_agent("lowest", deals=50, opponents="random,lowest,stops_first", ratings=[3])
    assert sorted(row["player"] for row in inside["ratings"]["tables"]["3"]["rows"]) == [
        "lowest", "random", "stops_first"]  # an agent of the panel is rated once
    assert sum(row["rating"] for row in table["rows"]) == pytest.approx(0, abs=1e-9)
    assert os.path.getsize(out + ".ratings.png") > 1000 and not os.path.exists(out + ".ratings-3p.state.json")
    assert "--ratings 3" in rep["command"]
    evaluate_agent("stops_first", deals=50, opponents="random,lowest", out=out)  # the same report, without ratings
    assert not os.path.exists(out + ".ratings.png")  # before: the earlier evaluation's chart stayed beside it


def test_every_text_of_the_ratings_chart_lies_inside_the_figure(monkeypatch, tmp_path) -> None:
    """A long title and the axis label once ran past the right edge: they wrap instead."""
    from popejoan_env import files

    drawn = []
    monkeypatch.setattr(files, "save_png", lambda fig, path: drawn.append(fig))
    rows = [{"player": name, "rating": r, "low": r - 0.1, "high": r + 0.1}
            for name, r in (("models/ppo_modern_4p/model.zip", 1.3), ("pool_hunter", -0.1), ("lowest", -1.2))]
    title = f"Ratings: models/ppo_modern_4p/model.zip, rules modern, 2000 deals of {dealset.VERSION}"
    ratings.write_chart({4: {"deals": 2000, "rows": rows}}, title, os.path.join(tmp_path, "r.png"))
    fig = drawn[0]
    renderer = fig.canvas.get_renderer()
    edge = fig.bbox
    texts = [fig.axes[0].title, fig.axes[0].xaxis.label, *fig.axes[0].get_yticklabels()]
    assert fig.axes[0].title.get_text().startswith("Ratings:") and len(texts) == 5
    for text in texts:
        box = text.get_window_extent(renderer)
        assert edge.x0 <= box.x0 and box.x1 <= edge.x1, (text.get_text(), box, edge)
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_a_state_file_that_is_a_pipe_is_refused_without_blocking(tmp_path) -> None:
    import subprocess
    import sys

    os.mkfifo(tmp_path / "r.state.json")
    done = subprocess.run([sys.executable, "-m", "popejoan_env", "evaluate", "random", "--quick", "--opponents",
                           "lowest", "--out", str(tmp_path / "r"), "--quiet"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "not a regular file" in done.stderr
