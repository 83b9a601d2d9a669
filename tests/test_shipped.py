"""Models for several presets (metadata ``rules`` a list) and the shipped network: ``make_player("shipped")``
plays every table size 3-8 under both presets and refuses what it was not trained for."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from popejoan_env.engine import Deal
from popejoan_env.players import SHIPPED_MODEL, UnknownPlayerError, make_player
from popejoan_env.nets.model_file import ModelFileError, ModelMismatchError, trained_rules
from popejoan_env.nets.policy import load_policy, read_metadata
from popejoan_env.players.learned import load_player
from popejoan_env.rules import Rules
from popejoan_env.seat_view import seat_view
from popejoan_env.tournament import run_duplicate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from conftest import network_file

ODD = dataclasses.replace(Rules.preset("modern"), ace_high=True)
"""Rules neither preset is: what a two-preset model must refuse."""


def test_a_model_for_two_presets_plays_both_and_refuses_other_rules(tmp_path) -> None:
    path = network_file(str(tmp_path / "two.zip"))
    meta = read_metadata(path)
    assert [r["preset"] for r in meta["rules"]] == ["modern", "victorian"]
    assert [r.name for r in trained_rules(meta)] == ["modern", "victorian"]
    for preset in ("modern", "victorian"):
        player = load_player(path, seed=0, rules=preset)
        deal = Deal.new(Rules.preset(preset), 8, 0, np.random.default_rng(1))
        deal.play_out(lambda d, legal: player.act(seat_view(d, d.to_act)))
        assert deal.done
    with pytest.raises(ModelMismatchError, match="trained for rules 'modern' and 'victorian'.*ace_high"):
        load_policy(path, rules=ODD)
    player = load_player(path, seed=0)
    deal = Deal.new(ODD, 3, 0, np.random.default_rng(2))
    with pytest.raises(ModelMismatchError, match="'modern' and 'victorian'"):
        deal.play_out(lambda d, legal: player.act(seat_view(d, d.to_act)))


def test_a_one_preset_model_still_writes_one_rules_object(tmp_path) -> None:
    meta = read_metadata(network_file(str(tmp_path / "one.zip"), ("victorian",)))
    assert meta["rules"]["preset"] == "victorian"
    with pytest.raises(ModelMismatchError, match="trained for rules 'victorian'"):
        load_policy(str(tmp_path / "one.zip"), rules="modern")


@pytest.mark.parametrize("rules, match", [
    ([], "non-empty list"), ([1], "non-empty list"), ("modern", "object of rules options"),
    ([{"preset": "modern"}, {"preset": "edwardian"}], "rules are not valid"),
])
def test_bad_rules_lists_in_metadata_are_refused(tmp_path, rules, match) -> None:
    import json
    import zipfile

    good = network_file(str(tmp_path / "good.zip"))
    bad = str(tmp_path / "bad.zip")
    with zipfile.ZipFile(good) as a, zipfile.ZipFile(bad, "w") as b:
        for name in a.namelist():
            data = a.read(name)
            if name == "popejoan.json":
                meta = json.loads(data)
                meta["rules"] = rules
                data = json.dumps(meta).encode()
            b.writestr(name, data)
    with pytest.raises(ModelFileError, match=match):
        load_player(bad)


def test_the_shipped_spec_takes_no_parameters_and_says_when_the_file_is_missing(monkeypatch, tmp_path) -> None:
    with pytest.raises(UnknownPlayerError, match="takes no parameters"):
        make_player("shipped:samples=3")
    import popejoan_env.nets.shipped as players

    monkeypatch.setattr(players, "SHIPPED_MODEL", str(tmp_path / "absent" / "model.zip"))
    with pytest.raises(UnknownPlayerError, match="shipped network is not installed: .*absent"):
        make_player("shipped")


def test_the_shipped_network_plays_every_table_size_and_both_presets() -> None:
    assert os.path.isfile(SHIPPED_MODEL), "the shipped network is package data: popejoan_env/nets/data/shipped.zip"
    assert os.path.getsize(SHIPPED_MODEL) < 5 * 2**20
    meta = read_metadata(SHIPPED_MODEL)
    assert sorted(meta["players"]) == [3, 4, 5, 6, 7, 8]
    assert sorted(r.name for r in trained_rules(meta)) == ["modern", "victorian"]
    player = make_player("shipped", seed=0)
    assert player.name == "shipped"
    for preset in ("modern", "victorian"):
        for n in range(3, 9):
            deal = Deal.new(Rules.preset(preset), n, 0, np.random.default_rng(n))
            deal.play_out(lambda d, legal: player.act(seat_view(d, d.to_act)))
            assert deal.done


@pytest.mark.parametrize("preset, seats", [("modern", 4), ("victorian", 4), ("modern", 7)])
def test_the_shipped_network_beats_random(preset: str, seats: int) -> None:
    model = make_player("shipped", seed=0)
    result = run_duplicate([model, make_player("random", seed=0)], deals=200, seed=2024, rules=preset, seats=seats)
    assert result.beats("shipped", "random"), result.table()


def test_round_one_is_kept_as_the_prior_of_round_twos_teacher() -> None:
    import json

    round2 = os.path.join(ROOT, "models", "round2")
    round1 = os.path.join(ROOT, "models", "round1", "model.zip")
    run = json.load(open(os.path.join(round2, "run.json")))
    assert run["imitation"]["player"] == "pimc_net:model=models/round1/model.zip"
    assert run["args"]["players"] == "4,4,3,5,6,7,8" and read_metadata(SHIPPED_MODEL)["players"] == [4, 3, 5, 6, 7, 8]
    meta = read_metadata(round1)
    assert sorted(meta["players"]) == [3, 4, 5, 6, 7, 8]
    assert sorted(r.name for r in trained_rules(meta)) == ["modern", "victorian"]
    teacher = make_player(f"pimc_net:samples=4:model={round1}", seed=0)
    deal = Deal.new(Rules.preset("modern"), 4, 0, np.random.default_rng(5))
    deal.play_out(lambda d, legal: teacher.act(seat_view(d, d.to_act)))
    assert deal.done


def test_round_three_grew_from_round_two_by_its_own_rollouts() -> None:
    import json

    from popejoan_env.files import file_sha256

    run = json.load(open(os.path.join(ROOT, "models", "shipped", "run.json")))
    start = run["start_model"]
    assert start["start_model"] == "models/round2/model.zip" and "imitation" not in run
    assert start["start_sha256"] == file_sha256(os.path.join(ROOT, "models", "round2", "model.zip"))
    assert [r["round"] for r in run["rounds"]] == [1] and run["args"]["players"] == "4,4,3,5,6,7,8"
    assert sorted(r.name for r in trained_rules(read_metadata(SHIPPED_MODEL))) == ["modern", "victorian"]


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The checkout's root."""


def _card_paths(card: str) -> list[str]:
    """Glob patterns, from the checkout's root, of every result file a model card names or writes."""
    import re

    text = open(card, encoding="utf-8").read()
    folder = os.path.relpath(os.path.dirname(card), ROOT)
    named = [f"{folder}/{m}" for m in re.findall(r"`(benchmark/[^`]*)`", text)]
    written = [m + ".json" for m in re.findall(r"--out (models/\S+)", text)]
    out = []
    for path in named + written:
        path = re.sub(r"\$\{[^}]*\}|\$\w+|<[^>]*>", "*", path)
        braces = re.search(r"\{([^}]*)\}", path)
        choices = braces.group(1).split(",") if braces else [""]
        out += [path.replace(braces.group(0), c) if braces else path for c in choices]
    return out


@pytest.mark.parametrize("card", ["models/shipped/MODEL_CARD.md", "models/round2/MODEL_CARD.md",
                                  "models/round1/MODEL_CARD.md"])
def test_every_result_file_a_model_card_names_is_in_the_checkout(card: str) -> None:
    import glob

    patterns = _card_paths(os.path.join(ROOT, card))
    assert len(patterns) >= 6
    missing = [p for p in patterns if not glob.glob(os.path.join(ROOT, p))]
    assert not missing, f"{card} names result files that are not in the checkout: {missing}"


def test_the_model_card_names_the_package_datas_file_by_its_sha256() -> None:
    import hashlib

    card = open(os.path.join(ROOT, "models", "shipped", "MODEL_CARD.md")).read()
    sha = hashlib.sha256(open(SHIPPED_MODEL, "rb").read()).hexdigest()
    assert f"sha256 `{sha}`" in card


def test_the_panel_names_the_package_datas_network_by_its_sha256() -> None:
    from popejoan_env.evaluate import panel
    from popejoan_env.files import file_sha256

    assert file_sha256(SHIPPED_MODEL) == panel.SHIPPED_SHA256, \
        f"the shipped network changed: a new panel version (not {panel.VERSION})"
