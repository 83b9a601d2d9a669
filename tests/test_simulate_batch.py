"""``popejoan simulate --engine batch``: the batch engine's records, run in-process through ``main``.

The file must verify (``popejoan verify``), hold exactly ``--deals`` records in whole sessions as the scalar
engine writes them, and be the same bytes for the same arguments; bad flags exit 2 with one line.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import pathlib
import sys
from typing import Any

import pytest

from popejoan_env.__main__ import main
from popejoan_env.record import FORMAT, read_records
from popejoan_env.rules import COMPARTMENTS, Rules
from test_edges import run_main  # the in-process command line runner the other CLI tests use




def simulate(path: pathlib.Path, capsys: pytest.CaptureFixture[str], *options: str) -> str:
    """Run ``simulate --engine batch --out path`` with the options; its summary line."""
    status, out, err = run_main(["simulate", "--engine", "batch", "--out", str(path), *options], capsys)
    assert status == 0, err
    assert err == ""
    return out


# (name, options, players, session length, rules)
RUNS: list[tuple[str, list[str], int, int, Rules]] = [
    ("modern-4p", ["--deals", "300", "--seed", "1"], 4, 8, Rules.preset("modern")),
    ("modern-3p", ["--players", "3", "--deals", "200", "--seed", "2", "--batch-size", "7"], 3, 6,
     Rules.preset("modern")),
    ("modern-8p", ["--players", "8", "--deals", "250", "--seed", "3", "--session-length", "5"], 8, 5,
     Rules.preset("modern")),
    ("victorian-5p", ["--players", "5", "--preset", "victorian", "--deals", "240", "--seed", "4",
                      "--session-length", "3", "--batch-size", "16"], 5, 3, Rules.preset("victorian")),
    ("victorian-8p-halves-ace_high", ["--players", "8", "--preset", "victorian", "--deals", "150", "--seed", "5",
                                      "--rules-option", "pair_split=halves", "--rules-option", "ace_high=true"],
     8, 16, Rules.preset("victorian").replace(pair_split="halves", ace_high=True)),
    ("no_credit-6p", ["--players", "6", "--deals", "200", "--seed", "6", "--rules-option", "allow_credit=false",
                      "--rules-option", "start_counters=18", "--batch-size", "5"], 6, 12,
     Rules(allow_credit=False, start_counters=18)),
]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[pathlib.Path, str]]:
    """Each run of ``RUNS``, once for the module: its file and summary line."""
    folder = tmp_path_factory.mktemp("batch")
    out: dict[str, tuple[pathlib.Path, str]] = {}
    for name, options, *_ in RUNS:
        path = folder / f"{name}.jsonl"
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            status = main(["simulate", "--engine", "batch", "--out", str(path), *options])
        assert status == 0 and stderr.getvalue() == "", stderr.getvalue()
        out[name] = (path, stdout.getvalue())
    return out


@pytest.mark.parametrize("run", RUNS, ids=[r[0] for r in RUNS])
def test_verify_accepts_the_batch_records(run: tuple[str, list[str], int, int, Rules],
                                         written: dict[str, tuple[pathlib.Path, str]],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = written[run[0]]
    deals = int(run[1][run[1].index("--deals") + 1])
    status, out, err = run_main(["verify", str(path)], capsys)
    assert status == 0, err
    assert out.strip() == f"{deals} records verified"


@pytest.mark.parametrize("run", RUNS, ids=[r[0] for r in RUNS])
def test_the_file_holds_whole_sessions_as_the_scalar_engine_writes_them(
    run: tuple[str, list[str], int, int, Rules], written: dict[str, tuple[pathlib.Path, str]],
) -> None:
    """Exactly --deals records, ``deal_index`` 0, 1, …; sessions numbered 0, 1, … in the file, each of
    --session-length deals (fewer only when a dealer cannot pay, or the last); within a session the deal
    passes left and the board and balances carry over; a new session starts fresh."""
    name, options, players, length, rules = run
    path, summary = written[name]
    deals = int(options[options.index("--deals") + 1])
    seed = int(options[options.index("--seed") + 1])
    records = [r for _, r in read_records(path)]
    assert len(records) == deals
    assert [r["deal_index"] for r in records] == list(range(deals))
    assert all(r["format"] == FORMAT and r["players"] == players and r["seed"] == seed for r in records)
    assert all(Rules.from_dict(r["rules"]) == rules for r in records)
    assert list(records[0])[-3:] == ["seed", "deal_index", "session"]
    sessions: dict[int, list[dict[str, Any]]] = {}
    for r in records:
        sessions.setdefault(r["session"], []).append(r)
    assert list(sessions) == list(range(len(sessions)))
    assert [r["session"] for r in records] == sorted(r["session"] for r in records)  # consecutive in the file
    fresh = [rules.start_counters] * players
    for number, deals_of in sessions.items():
        first = deals_of[0]
        assert first["balances_before"] == fresh and first["board_before"] == dict.fromkeys(COMPARTMENTS, 0)
        for before, after in zip(deals_of, deals_of[1:]):
            assert after["dealer"] == (before["dealer"] + 1) % players
            assert after["board_before"] == before["board_after"]
            balances = [b + d for b, d in zip(before.get("balances_before", [0] * players), before["delta"])]
            assert after.get("balances_before", [0] * players) == balances
        last = number == len(sessions) - 1
        if rules.allow_credit:
            assert len(deals_of) == length or last
        else:
            assert len(deals_of) <= length
            final = deals_of[-1]
            balances = [b + d for b, d in zip(final.get("balances_before", [0] * players), final["delta"])]
            broke = balances[(final["dealer"] + 1) % players] < sum(rules.dressing)
            assert len(deals_of) == length or broke or last
    if not rules.allow_credit:
        assert any(len(d) < length for d in list(sessions.values())[:-1]), "no session ended for a broke dealer"
    plays = sum(len(r["plays"]) for r in records)
    assert summary.startswith(f"{deals:,} deals ({players} players, rules {rules.name}, seed {seed}, batch engine (")
    assert f"{plays:,} card plays in" in summary and "plays/s" in summary and "deals/s" in summary
    assert summary.rstrip().endswith(f"-> {path}")


def test_the_same_arguments_give_the_same_bytes(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    options = ["--quiet", "--players", "5", "--deals", "120", "--batch-size", "6"]
    for name in ("a.jsonl", "b.jsonl", "c.jsonl.gz", "d.jsonl.gz"):
        simulate(tmp_path / name, capsys, "--seed", "9", *options)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (tmp_path / "c.jsonl.gz").read_bytes() == (tmp_path / "d.jsonl.gz").read_bytes()
    simulate(tmp_path / "other_seed.jsonl", capsys, "--seed", "10", *options)
    other = [r for _, r in read_records(tmp_path / "other_seed.jsonl")]
    same = [r for _, r in read_records(tmp_path / "a.jsonl")]
    assert [r["hands"] for r in other] != [r["hands"] for r in same]
    assert [r["hands"] for r in same] == [r["hands"] for _, r in read_records(tmp_path / "c.jsonl.gz")]


def test_stdout_holds_the_records_and_stderr_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(["simulate", "--engine", "batch", "--deals", "30", "--seed", "2", "--out", "-"], capsys)
    assert status == 0
    lines = out.splitlines()
    assert len(lines) == 30 and all(json.loads(line)["format"] == FORMAT for line in lines)
    assert err.startswith("30 deals (4 players, rules modern, seed 2, batch engine (") and "deals/s" in err
    status, quiet, err = run_main(["simulate", "--engine", "batch", "--deals", "30", "--seed", "2", "--out", "-",
                                   "--quiet"], capsys)
    assert status == 0 and quiet == out and err == ""


def test_one_deal_in_flight_and_more_slots_than_deals(tmp_path: pathlib.Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    for size, deals in (("1", "25"), ("4096", "3")):
        path = tmp_path / f"{size}.jsonl"
        simulate(path, capsys, "--quiet", "--deals", deals, "--batch-size", size, "--seed", "3")
        records = [r for _, r in read_records(path)]
        assert [r["deal_index"] for r in records] == list(range(int(deals)))
        assert run_main(["verify", "--quiet", str(path)], capsys)[0] == 0


def test_the_records_replay_on_the_scalar_engine_and_need_numba(tmp_path: pathlib.Path,
                                                                capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    options = ["--quiet", "--players", "6", "--deals", "150", "--seed", "11", "--batch-size", "9"]
    simulate(tmp_path / "batch.jsonl", capsys, *options)
    assert run_main(["verify", "--quiet", str(tmp_path / "batch.jsonl")], capsys)[0] == 0
    monkeypatch.setitem(sys.modules, "numba", None)  # numba missing: a clear refusal, never a slow path
    status, _, err = run_main(["simulate", "--engine", "batch", "--out", str(tmp_path / "none.jsonl"), *options],
                              capsys)
    assert status == 2 and "pip install numba" in err and len(err.strip().splitlines()) == 1


def test_the_scalar_engine_is_the_default_and_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--players", "4", "--preset", "modern", "--deals", "2000", "--seed", "1", "--out", "-",
            "--quiet"]
    status, default, _ = run_main(argv, capsys)
    assert status == 0
    assert hashlib.sha256(default.encode()).hexdigest() == \
        "8c938412ff870503f2a55f83679c634254e6f5d3a93d63b08cce3ae2e4cb66c3"
    status, scalar, _ = run_main(argv + ["--engine", "scalar"], capsys)
    assert status == 0 and scalar == default


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--engine", "turbo"], "argument --engine: invalid choice: 'turbo'"),
        (["--engine", "batch", "--batch-size", "0"], "argument --batch-size: invalid value: '0' (an integer 1..1,000,000 is needed)"),
        (["--engine", "batch", "--batch-size", "-5"], "argument --batch-size: invalid value: '-5' (an integer 1..1,000,000 is needed)"),
        (["--engine", "batch", "--batch-size", "1000001"], "argument --batch-size: invalid value: '1000001' (an integer 1..1,000,000 is needed)"),
        (["--engine", "batch", "--batch-size", "many"], "invalid int value: 'many'"),
        (["--engine", "batch", "--batch-size", "2.5"], "invalid int value: '2.5'"),
        (["--engine", "batch", "--batch-size", "9" * 5000], "too long"),
        (["--batch-size", "64"], "--batch-size applies only to --engine batch"),
        (["--engine", "scalar", "--batch-size", "64"], "--batch-size applies only to --engine batch"),
        (["--engine", "batch", "--deals", "0"], "argument --deals: invalid value: '0'"),
        (["--engine", "batch", "--players", "9"], "argument --players: invalid value: '9' (an integer 3..8 is needed)"),
        (["--engine", "batch", "--session-length", "0"], "argument --session-length: invalid value: '0'"),
        (["--engine", "batch", "--rules-option", "allow_credit=false", "--rules-option", "start_counters=3"],
         "no deal can start"),
        (["--engine", "batch", "--out", "no/such/dir/x.jsonl"], "No such file or directory"),
    ],
)
def test_bad_flags_exit_2_with_one_line(flags: list[str], message: str, tmp_path: pathlib.Path,
                                        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["simulate", "--deals", "5", "--out", "x.jsonl", *flags]
    status, out, err = run_main(argv, capsys)
    assert status == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert message in err and len(err) < 400, err
    assert out == "" and not list(tmp_path.iterdir())
