"""Game records (INTERFACE.md "Game records"): golden replays, round trips, tampering, files."""

from __future__ import annotations

import copy
import gzip
import json
import pathlib
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from popejoan_env.cards import CARD_NAMES, POPE, parse_card
from popejoan_env.engine import Deal
from popejoan_env.errors import PopeJoanError, RecordError
from popejoan_env.record import (
    FORMAT, REQUIRED_KEYS, RecordWriter, deal_record, read_records, replay_record, verify_record,
    write_records,
)
from popejoan_env.rules import COMPARTMENTS, MODERN, VICTORIAN, Rules

GOLDEN = pathlib.Path(__file__).parent / "data" / "golden_records.jsonl"
GOLDEN_RECORDS = [record for _, record in read_records(GOLDEN)]


def play_random(deal: Deal, rng: np.random.Generator) -> None:
    """Random legal play."""
    while not deal.done:
        legal = deal.legal_actions()
        deal.play(legal[int(rng.integers(len(legal)))])


def random_record(rules: Rules = MODERN, players: int = 4, seed: int = 0) -> dict[str, Any]:
    """The record of one randomly played deal with a non-empty board and balances."""
    rng = np.random.default_rng(seed)
    board = [int(x) for x in rng.integers(0, 5, size=8)]
    deal = Deal.new(rules, players, seed % players, rng, board=board, balances=[48] * players)
    play_random(deal, rng)
    return deal_record(deal)


def record_with(**changes: Any) -> dict[str, Any]:
    """A deep copy of a fixed 4-player record with some keys replaced."""
    record = copy.deepcopy(BASE)
    record.update(changes)
    return record


BASE = random_record(MODERN, 4, seed=11)


# --------------------------------------------------------------------- golden files
def test_golden_file_covers_the_required_cases() -> None:
    cases = {r["case"]: r for r in GOLDEN_RECORDS}
    presets = {r["rules"]["preset"] for r in GOLDEN_RECORDS}
    assert {"modern", "victorian", "custom"} <= presets
    assert {r["players"] for r in GOLDEN_RECORDS} >= {3, 4, 5, 6, 8}
    pays = cases["pope_turnup_pays_pope"]
    assert pays["turnup"] == "9D" and pays["rules"]["pope_turnup"] == "pays_pope" and pays["plays"]
    ends = cases["pope_turnup_ends_deal"]
    assert ends["turnup"] == "9D" and ends["rules"]["pope_turnup"] == "ends_deal"
    assert ends["plays"] == [] and ends["winner"] is None
    assert any(a[2] == "matrimony" and a[3] > 0 for a in cases["matrimony_won"]["awards"])
    assert any(a[2] == "intrigue" and a[3] > 0 for a in cases["intrigue_won"]["awards"])


@pytest.mark.parametrize("record", GOLDEN_RECORDS, ids=[r["case"] for r in GOLDEN_RECORDS])
def test_golden_record_replays_exactly(record: dict[str, Any]) -> None:
    verify_record(record)
    again = deal_record(replay_record(record))
    assert again == {k: v for k, v in record.items() if k not in ("case", "seed")}


def test_golden_session_carries_board_and_balances() -> None:
    for preset in ("modern", "victorian"):
        deals = [r for r in GOLDEN_RECORDS if r["case"].startswith(f"{preset}_4p_session")]
        assert len(deals) == 8
        for before, after in zip(deals, deals[1:]):
            assert after["board_before"] == before["board_after"]
            assert after["dealer"] == (before["dealer"] + 1) % 4
            assert after["balances_before"] == [
                b + d for b, d in zip(before["balances_before"], before["delta"])
            ]


def test_pope_turnup_ends_deal_record() -> None:
    """E8 in record form: the dealer takes pope and game and a counter per card from each other player."""
    record = next(r for r in GOLDEN_RECORDS if r["case"] == "pope_turnup_ends_deal")
    dealer = record["dealer"]
    assert [a[:3] for a in record["awards"]] == [["turnup", dealer, "pope"], ["turnup", dealer, "game"]]
    assert sorted(p[0] for p in record["payments"]) == sorted(set(range(4)) - {dealer})
    assert all(p[1] == dealer and p[2] == len(record["hands"][p[0]]) for p in record["payments"])
    eldest = (dealer + 1) % 4
    tampered = dict(record, plays=[[eldest, record["hands"][eldest][0]]])
    _fails(tampered, "plays[0]", "ended at the turn-up")


# --------------------------------------------------------------------- round trips
@pytest.mark.parametrize("preset", ["modern", "victorian"])
@pytest.mark.parametrize("players", [3, 4, 5, 6, 7, 8])
def test_round_trip_random_deals(preset: str, players: int) -> None:
    rules = Rules.preset(preset)
    for seed in range(60):
        record = random_record(rules, players, seed)
        record = json.loads(json.dumps(record))  # exactly what a file holds
        verify_record(record)
        assert deal_record(replay_record(record)) == record


def test_round_trip_custom_rules() -> None:
    """``Rules.to_dict()`` writes preset "custom" for mixed options; such records replay too."""
    rules = VICTORIAN.replace(pair_split="halves", ace_high=True, dressing={"pope": 9, "game": 3})
    assert rules.to_dict()["preset"] == "custom"
    for seed in range(10):
        record = random_record(rules, 5, seed)
        verify_record(record)
        assert replay_record(record).rules == rules


@pytest.mark.parametrize("players", [3, 4, 5, 6, 7, 8])
def test_record_delta_and_board_identity(players: int) -> None:
    """sum(delta) + Σboard_after − Σboard_before == 0, and the record's fields agree with the deal."""
    for preset in ("modern", "victorian"):
        for seed in range(20):
            r = random_record(Rules.preset(preset), players, seed)
            assert sum(r["delta"]) + sum(r["board_after"].values()) - sum(r["board_before"].values()) == 0
            assert set(REQUIRED_KEYS) <= set(r) and r["format"] == FORMAT
            assert list(r["board_before"]) == list(COMPARTMENTS) == list(r["board_after"])
            assert r["turnup"] == r["dead"][-1]
            assert len(r["hands"]) == players
            for hand in r["hands"]:
                ids = [parse_card(c) for c in hand]
                assert ids == sorted(ids)
            cards = [c for hand in r["hands"] for c in hand] + r["dead"]
            assert len(cards) == len(set(cards)) == 51
            if r["winner"] is not None:
                assert r["awards"][-1][:3] == ["game", r["winner"], "game"]
                assert len(r["payments"]) == players - 1


def test_record_rules_lists_every_option() -> None:
    names = {f for f in Rules.__dataclass_fields__ if f not in ("name", "pack")}  # pack: written when not full
    assert set(BASE["rules"]) == names | {"preset"}
    assert BASE["rules"]["preset"] == "modern"


def test_deal_record_refuses_unfinished_deal() -> None:
    deal = Deal.new(MODERN, 4, 0, np.random.default_rng(0))
    with pytest.raises(RecordError, match="finished"):
        deal_record(deal)


def test_balances_before_only_when_not_zero() -> None:
    rng = np.random.default_rng(5)
    deal = Deal.new(MODERN, 4, 0, rng)
    play_random(deal, rng)
    record = deal_record(deal)
    assert "balances_before" not in record
    verify_record(record)
    assert BASE["balances_before"] == [48] * 4


def test_pope_excused_payment_is_recorded_with_zero() -> None:
    """A Pope-holder's excused payment appears with 0 counters (INTERFACE.md)."""
    for seed in range(300):
        r = random_record(MODERN, 4, seed)
        if r["winner"] is None:
            continue
        holder = next((s for s, h in enumerate(r["hands"]) if "9D" in h), None)
        if holder is None or holder == r["winner"] or [holder, "9D"] in r["plays"]:
            continue
        assert [holder, r["winner"], 0] in r["payments"]
        return
    pytest.fail("no deal where the Pope was still held at the end")


# --------------------------------------------------------------------- tampering
def _fails(record: dict[str, Any], *fragments: str) -> str:
    with pytest.raises(RecordError) as info:
        verify_record(record)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_tampered_award_names_awards() -> None:
    awards = copy.deepcopy(BASE["awards"])
    awards[-1][3] += 1
    _fails(record_with(awards=awards), f"awards[{len(awards) - 1}]", "expected", "got")


def test_missing_award_names_awards() -> None:
    _fails(record_with(awards=BASE["awards"][:-1]), "awards", "entries")


def test_tampered_payment_names_payments() -> None:
    payments = copy.deepcopy(BASE["payments"])
    payments[0][2] += 2
    message = _fails(record_with(payments=payments), "payments[0]")
    assert str(payments[0]) in message


def test_tampered_winner_delta_board() -> None:
    _fails(record_with(winner=(BASE["winner"] + 1) % 4), "winner")
    delta = list(BASE["delta"])
    delta[2] -= 1
    _fails(record_with(delta=delta), "delta[2]")
    board = dict(BASE["board_after"], pope=BASE["board_after"]["pope"] + 1)
    _fails(record_with(board_after=board), "board_after.pope")
    _fails(record_with(board_after=dict(BASE["board_after"], spare=0)), "board_after", "spare")


def test_first_differing_field_is_named() -> None:
    """Both payments and delta are wrong: the first in the documented order (payments) is named."""
    payments = copy.deepcopy(BASE["payments"])
    payments[0][2] += 1
    delta = [d + 1 for d in BASE["delta"]]
    message = _fails(record_with(payments=payments, delta=delta), "payments[0]")
    assert "delta" not in message


def test_tampered_turnup_names_turnup() -> None:
    _fails(record_with(turnup="KS" if BASE["turnup"] != "KS" else "KH"), "turnup")


def test_illegal_play_names_index_seat_and_card() -> None:
    plays = copy.deepcopy(BASE["plays"])
    i = next(k for k in range(1, len(plays)) if plays[k][0] == plays[k - 1][0])
    seat = plays[i][0]
    # A card of the same seat's hand that is not the forced card or a legal lead.
    deal = replay_record(record_with(plays=plays[:i]))
    legal = set(deal.legal_actions())
    wrong = next(c for c in range(52) if (deal.hands[seat] >> c) & 1 and c not in legal)
    plays[i] = [seat, CARD_NAMES[wrong]]
    message = _fails(record_with(plays=plays), f"plays[{i}]", f"seat {seat}", CARD_NAMES[wrong], "illegal")
    assert "legal:" in message


def test_play_by_wrong_seat_names_the_seat_to_act() -> None:
    plays = copy.deepcopy(BASE["plays"])
    seat, card = plays[0]
    plays[0] = [(seat + 1) % 4, card]
    _fails(record_with(plays=plays), "plays[0]", f"seat {seat} is to act")


def test_play_after_the_end_and_unfinished_deal() -> None:
    plays = copy.deepcopy(BASE["plays"])
    _fails(record_with(plays=plays + [plays[-1]]), f"plays[{len(plays)}]", "already over")
    _fails(record_with(plays=plays[:-1]), "plays", "not finished")


def test_unknown_card_names_the_field() -> None:
    hands = copy.deepcopy(BASE["hands"])
    hands[2][3] = "8D"
    _fails(record_with(hands=hands), "hands[2][3]", "8D")
    dead = list(BASE["dead"])
    dead[0] = "1X"
    _fails(record_with(dead=dead), "dead[0]", "1X")
    plays = copy.deepcopy(BASE["plays"])
    plays[4][1] = "ZZ"
    _fails(record_with(plays=plays), "plays[4]", "ZZ")


def test_not_a_partition_names_hands_and_dead() -> None:
    hands = copy.deepcopy(BASE["hands"])
    hands[1][0] = BASE["dead"][0]  # dealt twice, and hands[1][0] is missing
    _fails(record_with(hands=hands), "hands/dead", "not a partition", BASE["dead"][0])
    _fails(record_with(dead=BASE["dead"][1:]), "hands/dead", "missing", BASE["dead"][0])


def test_unknown_rules_option_names_rules() -> None:
    _fails(record_with(rules=dict(BASE["rules"], trumps_always="hearts")), "rules", "trumps_always")
    _fails(record_with(rules=dict(BASE["rules"], lead="highest")), "rules", "lead")
    _fails(record_with(rules=dict(BASE["rules"], preset="edwardian")), "rules", "edwardian")
    _fails(record_with(rules="modern"), "rules")


def test_bad_shapes_name_the_field() -> None:
    for key in REQUIRED_KEYS:
        record = record_with()
        del record[key]
        _fails(record, f"missing field {key!r}")
    _fails(record_with(format="popejoan-record/0"), "format")
    _fails(record_with(players=9), "players")
    _fails(record_with(players=3), "hands", "players=3")
    _fails(record_with(dealer=4), "dealer")
    _fails(record_with(dealer=True), "dealer")
    _fails(record_with(board_before={"pope": -1}), "board_before")
    _fails(record_with(board_before={"pot": 1}), "board_before", "pot")
    _fails(record_with(balances_before=[1, 2]), "balances_before")
    _fails(record_with(plays="AS"), "plays")
    _fails(record_with(plays=[[0]]), "plays[0]")
    _fails(record_with(dead=[]), "dead")
    _fails(record_with(awards={}), "awards")
    with pytest.raises(RecordError, match="JSON object"):
        replay_record([1, 2])  # type: ignore[arg-type]


def test_record_errors_are_popejoan_errors() -> None:
    assert issubclass(RecordError, PopeJoanError) and issubclass(RecordError, ValueError)


# --------------------------------------------------------------------- files
def test_write_and_read_round_trip(tmp_path: pathlib.Path) -> None:
    records = [random_record(MODERN, 4, s) for s in range(5)]
    for name in ("deals.jsonl", "deals.jsonl.gz"):
        path = tmp_path / name
        assert write_records(path, records) == 5
        got = list(read_records(path))
        assert [n for n, _ in got] == [1, 2, 3, 4, 5]
        assert [r for _, r in got] == records
    with gzip.open(tmp_path / "deals.jsonl.gz", "rt") as f:
        assert json.loads(f.readline()) == records[0]


def test_streaming_writer_counts(tmp_path: pathlib.Path) -> None:
    with RecordWriter(tmp_path / "s.jsonl") as writer:
        for s in range(3):
            writer.write(random_record(VICTORIAN, 3, s))
        assert writer.count == 3
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 3


def test_blank_lines_are_skipped(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "blank.jsonl"
    line = json.dumps(BASE)
    path.write_text(f"\n{line}\n   \n{line}\n\n")
    assert [n for n, _ in read_records(path)] == [2, 4]


def test_corrupt_line_names_file_and_line(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "corrupt.jsonl"
    line = json.dumps(BASE)
    path.write_text(f"{line}\n{line}\n{line[:40]}}}\n{line}\n")
    with pytest.raises(RecordError, match=r"corrupt\.jsonl, line 3: not a valid JSON record"):
        list(read_records(path))


def test_truncated_last_line_names_the_line(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "truncated.jsonl"
    line = json.dumps(BASE)
    path.write_text(f"{line}\n{line}\n{line[: len(line) // 2]}")
    with pytest.raises(RecordError, match=r"truncated\.jsonl, line 3: .*truncated"):
        list(read_records(path))


def test_non_object_line_and_bad_bytes(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "array.jsonl"
    path.write_text(f"{json.dumps(BASE)}\n[1, 2]\n")
    with pytest.raises(RecordError, match="line 2: a record must be a JSON object"):
        list(read_records(path))
    path = tmp_path / "bytes.jsonl"
    path.write_bytes(json.dumps(BASE).encode() + b"\n\xff\xfe\n")
    with pytest.raises(RecordError, match="line 2: not UTF-8"):
        list(read_records(path))


def test_truncated_gzip_is_a_record_error(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "cut.jsonl.gz"
    write_records(path, [random_record(MODERN, 4, s) for s in range(20)])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(RecordError, match="cut.jsonl.gz"):
        list(read_records(path))


def test_pope_turnup_ends_deal_round_trip_from_engine() -> None:
    """A deal that ends at the turn-up has no plays and a null winner, and replays."""
    for seed in range(2000):
        rng = np.random.default_rng(seed)
        deal = Deal.new(VICTORIAN, 6, 2, rng)
        if deal.turnup == POPE:
            assert deal.done
            record = json.loads(json.dumps(deal_record(deal)))
            assert record["winner"] is None and record["plays"] == []
            verify_record(record)
            return
    pytest.fail("no Pope turn-up in 2000 seeds")


def test_record_module_needs_no_numpy() -> None:
    """record.py is stdlib only: reading and verifying records never imports numpy."""
    code = "import sys, popejoan_env.record; print('numpy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False", result.stderr
