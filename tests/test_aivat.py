"""``popejoan evaluate --aivat``: the corrections at the decisions of players that draw random numbers, in the very
games of the plain evaluation, of mean zero, and in the report as one more control variate."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from popejoan_env.__main__ import main
from popejoan_env.evaluate import aivat, runner
from popejoan_env.evaluate.command import evaluate_agent
from popejoan_env.players import make_player
from popejoan_env.rules import Rules
from popejoan_env.tournament import mean_ci

MODERN = Rules.preset("modern")


@pytest.mark.parametrize(("agent", "opponent"), [("stops_first", "random"), ("random", "pimc:samples=4")])
def test_the_corrected_games_are_the_plain_evaluations_games(agent: str, opponent: str) -> None:
    plain = runner.play_block(make_player(agent), make_player(opponent), 3, MODERN, 4, 1, "local", None)
    found = aivat.play_block(make_player(agent), make_player(opponent), agent, opponent, 3, MODERN, 4)
    for key in ("margin", "agent_net", "opponent_net", "agent_out", "opponent_out"):
        assert found[key] == pytest.approx(plain[key])
    assert (found["agent_decisions"], found["opponent_decisions"]) == (plain["agent_decisions"],
                                                                       plain["opponent_decisions"])
    assert found["aivat_decisions"] > 0 and np.ptp(found["aivat"]) > 0


def test_deterministic_players_have_nothing_to_correct() -> None:
    found = aivat.play_block(make_player("stops_first"), make_player("shipped"), "stops_first", "shipped", 0, MODERN,
                             4)
    assert found["aivat"] == [0.0] * 50 and found["aivat_decisions"] == 0
    assert aivat.policy_kind(make_player("pool_hunter")) is None
    assert [aivat.policy_kind(make_player(p)) for p in ("random", "pimc", "pimc_net")] == ["uniform", "sampled",
                                                                                            "sampled"]
    from popejoan_env.nets.shipped import shipped_model
    from popejoan_env.players.learned import load_player

    assert aivat.policy_kind(load_player(shipped_model(), deterministic=False)) == "softmax"
    assert aivat.policy_kind(load_player(shipped_model())) is None  # its best card: deterministic


def test_the_corrections_have_mean_zero() -> None:
    # random against random: every decision of every game corrected; 200 deals, the correction's mean within noise
    data = aivat.play_deals(make_player("random"), make_player("random"), "random", "random", 9_200_000, 200, MODERN,
                            3)
    mean, half = mean_ci(np.array(data["aivat"]))
    assert abs(mean) < half and np.std(data["aivat"]) > 0.5


def test_an_evaluation_with_aivat_names_the_estimator_and_keeps_the_plain_interval(tmp_path: os.PathLike[str]) -> None:
    out = os.path.join(tmp_path, "rep")
    rep = evaluate_agent("stops_first", deals=50, opponents="random,pool_hunter", out=out, aivat=True)
    assert rep["command"].endswith("--aivat")
    vr = rep["variance_reduction"]
    assert vr["aivat"]["value_function"] == aivat.VALUE and aivat.METHOD in vr["method"]
    rows = {row["opponent"]: row for row in vr["opponents"]}
    assert "aivat" in rows["random"]["covariates"] and "aivat" not in rows["pool_hunter"]["covariates"]
    plain = {row["opponent"]: row["margin"]["ci95"] for row in rep["opponents"]}
    assert rows["random"]["plain_ci95"] == pytest.approx(plain["random"])
    assert "AIVAT" in open(out + ".txt").read()
    assert not os.path.exists(out + ".state.json")


def test_a_state_file_without_aivat_still_resumes_and_aivat_is_refused_with_workers(
        tmp_path: os.PathLike[str], capsys: pytest.CaptureFixture[str]) -> None:
    settings = runner.settings("random", "modern", 4, 50, ["random"])
    assert "aivat" not in settings.to_dict()  # the settings of a state file written before --aivat existed
    assert runner.settings("random", "modern", 4, 50, ["random"], aivat=True).to_dict()["aivat"] == aivat.VALUE
    assert main(["evaluate", "random", "--deals", "50", "--aivat", "--workers", "2",
                 "--out", os.path.join(tmp_path, "r")]) == 2
    err = capsys.readouterr().err
    assert "--aivat" in err and len(err.strip().splitlines()) == 1
    rep = evaluate_agent("random", deals=50, opponents="stops_first")
    assert rep["variance_reduction"]["aivat"] is None and "AIVAT" not in rep["variance_reduction"]["method"]


class _Stop(Exception):
    """Raised by ``on_block``: an evaluation stopped after its first block, its state file left behind."""


def _stopped_after_one_block(where: os.PathLike[str]) -> str:
    """The ``--out`` prefix of a 100-deal ``--aivat`` evaluation of ``random`` stopped after its first block."""
    def stop(match: str, block: int) -> None:
        raise _Stop

    out = os.path.join(where, "rep")
    with pytest.raises(_Stop):
        evaluate_agent("random", deals=100, opponents="stops_first", out=out, aivat=True, on_block=stop)
    assert os.path.exists(out + ".state.json")
    return out


def test_an_interrupted_aivat_evaluation_resumes_to_the_same_figures(tmp_path: os.PathLike[str]) -> None:
    """Before: the resume check knew no ``aivat`` series and refused the state file an --aivat run wrote."""
    whole = evaluate_agent("random", deals=100, opponents="stops_first", aivat=True)
    out = _stopped_after_one_block(tmp_path)
    resumed = evaluate_agent("random", deals=100, opponents="stops_first", out=out, aivat=True)
    figures = ("margin", "deal_win_rate", "agent_counters", "opponent_counters", "agent_go_out_rate")
    assert [[row[k] for k in figures] for row in resumed["opponents"]] == \
        [[row[k] for k in figures] for row in whole["opponents"]]  # the timings alone differ
    assert resumed["variance_reduction"]["opponents"] == whole["variance_reduction"]["opponents"]


def test_corrections_made_with_another_value_function_are_not_resumed(tmp_path: os.PathLike[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # the state names the value function the corrections were made with: a later version of it (or another one)
    # starts afresh instead of mixing its corrections with the old ones
    from popejoan_env.errors import PopeJoanError

    out = _stopped_after_one_block(tmp_path)
    monkeypatch.setattr(aivat, "VALUE", "greedy-rollout/2")
    with pytest.raises(PopeJoanError, match="other settings"):
        evaluate_agent("random", deals=100, opponents="stops_first", out=out, aivat=True)


@pytest.mark.parametrize(("change", "says"), [
    (lambda b: b["aivat"].__setitem__(0, 1e12), "beyond what a deal's corrections can sum to"),
    (lambda b: b["aivat"].__setitem__(0, float("nan")), "not a finite number"),
    (lambda b: b.__setitem__("aivat_decisions", -3), "aivat_decisions is -3"),
    (lambda b: b.pop("aivat"), "not the block of an evaluation"),
])
def test_a_forged_aivat_series_is_refused(tmp_path: os.PathLike[str], change: Callable[[dict[str, Any]], Any],
                                         says: str) -> None:
    import json

    from popejoan_env.errors import PopeJoanError

    out = _stopped_after_one_block(tmp_path)
    path = out + ".state.json"
    saved = json.load(open(path))
    change(saved["blocks"]["stops_first"]["0"])
    with open(path, "w") as f:
        f.write(json.dumps(saved).replace("NaN", "1e999"))  # json writes NaN, which the reader refuses first
    with pytest.raises(PopeJoanError, match=says):
        evaluate_agent("random", deals=100, opponents="stops_first", out=out, aivat=True)
