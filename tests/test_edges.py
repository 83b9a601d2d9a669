"""Reliability at the edges: hostile or broken files and arguments give one clear error, never a traceback.

One regression test per problem found: records nested 5,000 deep, integers of
5,000 digits, bit-flipped ``.gz`` files, floats and bools where a record holds
counts, interrupted or repeated ``simulate`` runs, negative seeds and absurd
``--rules-option`` values, model files that are zip bombs, hostile pickles,
wrong-typed metadata or wrong-shaped tensors, and a file named like a scripted
player.  ``tests/test_fuzz.py`` searches the same boundaries at random.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import io
import json
import os
import pathlib
import pickle
import re
import signal
import subprocess
import sys
import time
import tracemalloc
import zipfile
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

from popejoan_env.__main__ import main
from popejoan_env.errors import PopeJoanError, RecordError
from popejoan_env.observation import OBS_SIZE
from popejoan_env.players import make_player
from popejoan_env.nets.model_file import model_metadata, ModelFileError
from popejoan_env.nets.policy import read_metadata
from popejoan_env.players.learned import load_player
from popejoan_env.nets.model_file import MAX_MEMBERS, MAX_WEIGHTS_BYTES, META_NAME
from popejoan_env.record import MAX_LINE_BYTES, RecordWriter, read_records, verify_record, write_records

GOLDEN = pathlib.Path(__file__).parent / "data" / "golden_records.jsonl"
GOLDEN_LINES = GOLDEN.read_text().splitlines()
GOLDEN_RECORDS = [json.loads(line) for line in GOLDEN_LINES]
WINNER_RECORD = next(r for r in GOLDEN_RECORDS if r["winner"] is not None and r["awards"] and r["payments"])


def run_cli(*args: str, cwd: pathlib.Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m popejoan_env ARGS`` in a subprocess."""
    return subprocess.run([sys.executable, "-m", "popejoan_env", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``main(argv)`` in-process: (exit status, stdout, stderr); argparse's SystemExit counts as a status."""
    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 2
    out, err = capsys.readouterr()
    return status, out, err


def assert_one_line(err: str) -> None:
    """Exactly one line on stderr, and no traceback."""
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


def nested(depth: int, leaf: Any = 0) -> Any:
    """A list nested ``depth`` deep (built without recursion)."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


# ===================================================================== 1. verify: deep, huge, corrupt files
def test_verify_record_nested_5000_deep_is_a_record_error() -> None:
    for key in ("plays", "delta", "rules", "board_before", "awards", "hands"):
        record = copy.deepcopy(WINNER_RECORD)
        record[key] = nested(5000)
        with pytest.raises(RecordError, match=f"{key}.*nested more than"):
            verify_record(record)
    record = copy.deepcopy(WINNER_RECORD)
    record["board_after"]["pope"] = nested(5000)
    with pytest.raises(RecordError, match=r"board_after\.pope.*nested"):
        verify_record(record)


def test_verify_record_integer_of_5000_digits_is_a_record_error() -> None:
    huge = 10**5000  # Python cannot even print it (the 4,300-digit limit)
    for change in (
        lambda r: r.__setitem__("players", huge),
        lambda r: r["delta"].__setitem__(0, -huge),
        lambda r: r["board_before"].__setitem__("pope", huge),
        lambda r: r.__setitem__("balances_before", [huge] * r["players"]),
        lambda r: r["plays"][0].__setitem__(0, huge),
        lambda r: r["rules"].__setitem__("start_counters", huge),
    ):
        record = copy.deepcopy(WINNER_RECORD)
        change(record)
        with pytest.raises(RecordError, match="bits"):
            verify_record(record)


def _verify_file(path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_main(["verify", "--quiet", str(path)], capsys)


def test_verify_cli_nested_and_huge_json_lines(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = GOLDEN_LINES[0]
    cases = {
        "deep.jsonl": good[:-1] + ',"junk":' + "[" * 5000 + "]" * 5000 + "}",
        "deep_field.jsonl": good.replace('"plays":', '"plays":' + "[" * 500 + "0" + "]" * 500 + ',"x":', 1),
        "digits.jsonl": good.replace('"delta":[', '"delta":[' + "1" * 5000 + ",", 1),
        "deep_value.jsonl": "[" * 100_000 + "]" * 100_000,
    }
    for name, line in cases.items():
        path = tmp_path / name
        path.write_text(good + "\n" + line + "\n")
        with pytest.raises(RecordError, match=f"{name}, line 2|nested more than"):
            for _, record in read_records(path):
                verify_record(record)
        status, out, err = _verify_file(path, capsys)
        assert status == 1, (name, err)
        assert_one_line(err)
        assert "line 2" in err, err


def _bit_flips(data: bytes, count: int, seed: int) -> list[tuple[int, bytes]]:
    rng = np.random.default_rng(seed)
    flips = []
    for _ in range(count):
        pos = int(rng.integers(len(data)))
        flipped = bytearray(data)
        flipped[pos] ^= 1 << int(rng.integers(8))
        flips.append((pos, bytes(flipped)))
    return flips


def test_verify_cli_bit_flipped_gz_no_traceback(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "deals.jsonl.gz"
    write_records(source, GOLDEN_RECORDS)
    data = source.read_bytes()
    # Every byte of the 10-byte header and the 8-byte trailer, and bytes of the deflate stream.
    positions = [(p, bytes(b ^ 0x10 if i == p else b for i, b in enumerate(data))) for p in range(10)]
    positions += [(p, bytes(b ^ 0x01 if i == p else b for i, b in enumerate(data))) for p in range(len(data) - 8, len(data))]
    positions += _bit_flips(data, 40, seed=1)
    failures = 0
    for pos, flipped in positions:
        path = tmp_path / "flipped.jsonl.gz"
        path.write_bytes(flipped)
        status, out, err = _verify_file(path, capsys)
        assert status in (0, 1), (pos, err)
        assert "Traceback" not in err
        if status == 1:
            failures += 1
            assert_one_line(err)
            assert "flipped.jsonl.gz" in err
    assert failures > len(positions) // 2  # most flips break the stream's CRC, length or codes
    # A corrupt deflate stream (zlib.error), a truncated one (EOFError), not gzip at all (BadGzipFile).
    for name, content in [
        ("codes.jsonl.gz", data[:10] + b"\xff" * 40 + data[50:]),
        ("cut.jsonl.gz", data[: len(data) // 3]),
        ("text.jsonl.gz", b'{"format": "popejoan-record/1"}\n'),
        ("empty_gzip_header.jsonl.gz", data[:10]),
    ]:
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(RecordError, match=name):
            list(read_records(path))
        status, out, err = _verify_file(path, capsys)
        assert status == 1
        assert_one_line(err)
    # The same in a subprocess: the real stderr holds one line and no traceback.
    path = tmp_path / "flipped.jsonl.gz"
    path.write_bytes(data[:30] + bytes([data[30] ^ 0xFF]) + data[31:])
    result = run_cli("verify", str(path), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert_one_line(result.stderr)


def test_read_records_refuses_an_absurdly_long_line(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "long.jsonl"
    with open(path, "w") as f:
        f.write(GOLDEN_LINES[0] + "\n")
        f.write('{"junk": "' + "x" * (MAX_LINE_BYTES + 10) + '"}\n')
    lines = []
    with pytest.raises(RecordError, match=r"line 2: longer than 10,485,760 bytes"):
        for lineno, _ in read_records(path):
            lines.append(lineno)
    assert lines == [1]
    # A file of one endless line (no newline at all) is refused the same way, gzipped too.
    gz = tmp_path / "endless.jsonl.gz"
    with gzip.open(gz, "wb") as f:
        for _ in range(11):
            f.write(b" " * 2**20)
    with pytest.raises(RecordError, match="line 1: longer than"):
        list(read_records(gz))


def test_read_records_decoding_errors_are_record_errors(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "latin.jsonl"
    path.write_bytes(GOLDEN_LINES[0].encode() + b"\n" + '{"x": "é"}'.encode("latin-1") + b"\n")
    with pytest.raises(RecordError, match="line 2: not UTF-8"):
        list(read_records(path))
    with pytest.raises(FileNotFoundError):
        list(read_records(tmp_path / "missing.jsonl"))


# ===================================================================== 2. floats and bools in records
def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A change of a record: the value at a dotted path (``awards.0.3``) replaced."""
    def change(record: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = record
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            target[int(last)] = value(target[int(last)]) if callable(value) else value
        else:
            target[last] = value(target[last]) if callable(value) else value
    return change


def _first_nonzero_compartment(record: Mapping[str, Any]) -> str:
    return next(c for c, n in record["board_after"].items() if n == 1)


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("delta", lambda d: [float(x) for x in d], "delta[0]"),
        ("delta.1", lambda x: float(x), "delta[1]"),
        ("winner", lambda w: float(w), "winner"),
        ("winner", lambda w: bool(w), "winner"),
        ("awards.0.3", lambda n: float(n), "awards[0][3]"),
        ("awards.0.1", lambda s: float(s), "awards[0][1]"),
        ("payments.0.2", lambda n: float(n), "payments[0][2]"),
        ("payments.0.0", lambda s: float(s), "payments[0][0]"),
        ("payments.1.2", lambda n: bool(n) if n in (0, 1) else float(n), "payments[1][2]"),
    ],
)
def test_outcome_floats_and_bools_do_not_verify(path: str, value: Any, field: str) -> None:
    record = copy.deepcopy(WINNER_RECORD)
    verify_record(record)
    _set(path, value)(record)
    with pytest.raises(RecordError, match="^" + re.escape(field)):
        verify_record(record)


def test_board_after_floats_and_bools_do_not_verify() -> None:
    record = copy.deepcopy(WINNER_RECORD)
    one = _first_nonzero_compartment(record)
    zero = next(c for c, n in record["board_after"].items() if n == 0)
    for comp, value in [(one, True), (one, 1.0), (zero, False), (zero, 0.0)]:
        changed = copy.deepcopy(record)
        changed["board_after"][comp] = value
        with pytest.raises(RecordError, match=rf"board_after\.{comp}: expected an integer"):
            verify_record(changed)


def test_outcome_award_counters_written_as_floats(tmp_path: pathlib.Path) -> None:
    """``["play", 1, "pope", 6.0]`` in a file: the line no longer verifies, naming the entry."""
    record = next(r for r in GOLDEN_RECORDS if any(a[0] == "play" and a[3] > 0 for a in r["awards"]))
    i = next(k for k, a in enumerate(record["awards"]) if a[0] == "play" and a[3] > 0)
    record = copy.deepcopy(record)
    record["awards"][i][3] = float(record["awards"][i][3])
    path = tmp_path / "floats.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(RecordError, match=rf"awards\[{i}\]\[3\]: expected an integer"):
        for _, r in read_records(path):
            verify_record(r)


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("players", 4.0, "players"), ("players", True, "players"),
        ("dealer", 0.0, "dealer"), ("dealer", False, "dealer"),
        ("board_before.pope", 0.0, "board_before"), ("board_before.pope", False, "board_before"),
        ("balances_before", lambda b: [float(x) for x in b], "balances_before"),
        ("balances_before", lambda b: [True] * len(b), "balances_before"),
        ("plays.0.0", lambda s: float(s), r"plays\[0\]"), ("plays.0.0", lambda s: bool(s), r"plays\[0\]"),
        ("rules.start_counters", 48.0, "rules"), ("rules.ace_high", 0, "rules"),
        ("rules.dressing.pope", 6.0, "rules"), ("rules.dressing.pope", True, "rules"),
    ],
)
def test_input_floats_and_bools_do_not_replay(path: str, value: Any, field: str) -> None:
    record = copy.deepcopy(next(r for r in GOLDEN_RECORDS if r["players"] == 4 and "balances_before" in r))
    _set(path, value)(record)
    with pytest.raises(RecordError, match=f"^{field}"):
        verify_record(record)


# ===================================================================== 3. simulate: atomic and reproducible output
def test_sigint_during_simulate_leaves_no_corrupt_file(tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(20261201)
    old = tmp_path / "old.jsonl.gz"
    write_records(old, GOLDEN_RECORDS[:3])
    deals = 20000  # ~3 s of work after start-up: most runs are interrupted, a late signal may find one finished
    outcomes = set()
    for attempt in range(6):
        target = tmp_path / f"x{attempt}.jsonl.gz"
        if attempt % 2:  # a previous result in place must survive an interrupted run whole
            target.write_bytes(old.read_bytes())
        proc = subprocess.Popen(
            [sys.executable, "-m", "popejoan_env", "simulate", "--players", "4", "--deals", str(deals),
             "--seed", str(attempt), "--out", target.name, "--quiet"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            # a job started in the background (``cmd &``) inherits SIGINT ignored, and Python then leaves it
            # ignored: restore the default so the signal interrupts the run wherever the tests are started
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        time.sleep(float(rng.uniform(0.15, 1.0)))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert "Traceback" not in err or proc.returncode not in (0, 130), err
        leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(f".{target.name}")]
        if proc.returncode in (0, 130):
            assert not leftovers, leftovers
        if not target.exists():
            outcomes.add("absent")
            continue
        records = list(read_records(target))  # a RecordError here is a corrupt file
        if attempt % 2 and target.read_bytes() == old.read_bytes():
            outcomes.add("untouched")
            continue
        assert len(records) == deals, (proc.returncode, err)
        for _, record in records[:5] + records[-5:]:
            verify_record(record)
        outcomes.add("complete")
    assert outcomes & {"absent", "untouched"}, outcomes  # at least one run was really interrupted


def test_an_error_inside_the_writer_leaves_the_target_untouched(tmp_path: pathlib.Path) -> None:
    for name in ("deals.jsonl", "deals.jsonl.gz"):
        target = tmp_path / name
        write_records(target, GOLDEN_RECORDS[:2])
        before = target.read_bytes()
        for exc in (KeyboardInterrupt, RuntimeError):
            with pytest.raises(exc):
                with RecordWriter(target) as writer:
                    for record in GOLDEN_RECORDS:
                        writer.write(record)
                    raise exc()
            assert target.read_bytes() == before
            assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"deals.jsonl", "deals.jsonl.gz"} &
                                                                         {p.name for p in tmp_path.iterdir()})
        writer = RecordWriter(target)
        writer.write(GOLDEN_RECORDS[0])
        writer.abort()
        assert target.read_bytes() == before
    fresh = tmp_path / "fresh.jsonl"
    with pytest.raises(ValueError):
        with RecordWriter(fresh) as writer:
            writer.write(GOLDEN_RECORDS[0])
            writer.write({"bad": float("nan"), "huge": 10**5000})  # json.dumps refuses the integer
    assert not fresh.exists()


def test_gz_output_is_byte_identical_for_the_same_arguments(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    outputs = []
    for name, clock in (("a.jsonl.gz", 1.0e9), ("other_name.jsonl.gz", 1.7e9)):
        monkeypatch.setattr(time, "time", lambda clock=clock: clock)  # gzip would stamp this time
        path = tmp_path / name
        status, _, err = run_main(["simulate", "--players", "5", "--deals", "30", "--seed", "4", "--quiet",
                                   "--out", str(path)], capsys)
        assert status == 0, err
        outputs.append(path.read_bytes())
    assert outputs[0] == outputs[1]
    header = outputs[0][:10]
    assert header[3] == 0 and header[4:8] == b"\0\0\0\0"  # no FNAME flag, MTIME 0
    with gzip.open(tmp_path / "a.jsonl.gz", "rt") as f:
        assert len(f.read().splitlines()) == 30


def test_simulate_stdout_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_main(["simulate", "--players", "4", "--preset", "modern", "--deals", "2000", "--seed", "1",
                               "--out", "-", "--quiet"], capsys)
    assert status == 0
    assert hashlib.sha256(out.encode()).hexdigest() == "8c938412ff870503f2a55f83679c634254e6f5d3a93d63b08cce3ae2e4cb66c3"


def test_simulate_checks_the_output_path_before_the_work(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    start = time.perf_counter()
    for out, message in [
        ("no/such/dir/x.jsonl", "No such file or directory"),
        ("folder", "is a directory"),
        (str(tmp_path / "folder"), "is a directory"),
        ("", "not a file name"),
        ("bad\0name.jsonl", "not a file name"),
    ]:
        # A billion deals: had the work started first, this would not return.
        status, _, err = run_main(["simulate", "--deals", "1000000000", "--out", out], capsys)
        assert status == 2, (out, err)
        assert_one_line(err)
        assert message in err, err
    assert time.perf_counter() - start < 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]
    status, _, err = run_main(["simulate", "--deals", "2", "--quiet", "--out", os.devnull], capsys)
    assert status == 0, err


# ===================================================================== 4. command-line integers and rules options
def test_play_negative_seed_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_main(["play", "--seed", "-1"], capsys)
    assert status == 2
    assert_one_line(err)
    assert "argument --seed: invalid value: '-1' (an integer 0..2,147,483,647 is needed)" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["play", "--players", "2"], "argument --players: invalid value: '2' (an integer 3..8 is needed)"),
        (["play", "--players", "x"], "invalid int value: 'x'"),
        (["play", "--deals", "0"], "argument --deals: invalid value: '0'"),
        (["play", "--seat", "-1"], "argument --seat: invalid value: '-1' (an integer 0..7 is needed)"),
        (["play", "--seat", "4"], "--seat must be a seat 0..3"),
        (["play", "--seed", "1.5"], "invalid int value: '1.5'"),
        (["play", "--seed", "9" * 5000], "too long"),
        (["simulate", "--seed", "-5", "--out", "x.jsonl"], "argument --seed: invalid value: '-5'"),
        (["simulate", "--seed", "9" * 5000, "--out", "x.jsonl"], "too long"),
        (["simulate", "--deals", "-3", "--out", "x.jsonl"], "argument --deals: invalid value: '-3'"),
        (["simulate", "--deals", "1" * 5000, "--out", "x.jsonl"], "too long"),
        (["simulate", "--players", "-4", "--out", "x.jsonl"], "argument --players: invalid value: '-4'"),
        (["simulate", "--players", "4.0", "--out", "x.jsonl"], "invalid int value: '4.0'"),
        (["simulate", "--session-length", "-1", "--out", "x.jsonl"], "argument --session-length: invalid value: '-1'"),
        (["simulate", "--session-length", "ten", "--out", "x.jsonl"], "invalid int value"),
    ],
)
def test_cli_integers_are_checked(
    argv: list[str], message: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    status, _, err = run_main(argv, capsys)
    assert status == 2
    assert_one_line(err)
    assert message in err and len(err) < 300, err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["simulate", "play"])
@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("dressing=" + "[" * 5000 + "]" * 5000, "cannot be read"),
        ("lead=" + "[" * 20 + "]" * 20, "nested more than"),
        ("start_counters=1" + "0" * 4999, "cannot be read"),
        ("start_counters=1" + "0" * 4000, "start_counters must be at most 100,000"),
        ('dressing={"pope": 1' + "0" * 4000 + "}", "dressing counts must be non-negative integers (at most"),
        ('dressing={"pope": 1' + "0" * 30 + "}", "dressing counts must be non-negative integers (at most"),
        ("start_counters=" + "9" * 30_000, "characters long"),
        ("dressing=[1, 2]", "dressing must give 8 counts"),
        ("ace_high=1", "must be true or false"),
        ("self=1", "self"),  # a TypeError inside Rules.replace, still one line
    ],
)
def test_rules_option_deep_or_huge_json_exit_2(
    command: str, option: str, message: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = [command, "--rules-option", option] + (["--out", "x.jsonl"] if command == "simulate" else ["--seed", "1"])
    status, _, err = run_main(argv, capsys)
    assert status == 2, err
    assert_one_line(err)
    assert message in err, err[:300]
    assert not list(tmp_path.iterdir())


# ===================================================================== 5. model files
def tiny_state(hidden: tuple[int, ...] = (8,), seed: int = 0) -> dict[str, Any]:
    """An SB3 MlpPolicy ``state_dict`` (actor and critic) for ``hidden`` widths, small random weights."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    state: dict[str, Any] = {}
    width = OBS_SIZE
    for i, h in enumerate(hidden):
        state[f"mlp_extractor.policy_net.{2 * i}.weight"] = torch.randn(h, width, generator=gen) * 0.1
        state[f"mlp_extractor.policy_net.{2 * i}.bias"] = torch.randn(h, generator=gen) * 0.1
        state[f"mlp_extractor.value_net.{2 * i}.weight"] = torch.randn(h, width, generator=gen) * 0.1
        state[f"mlp_extractor.value_net.{2 * i}.bias"] = torch.zeros(h)
        width = h
    state["action_net.weight"] = torch.randn(52, width, generator=gen) * 0.1
    state["action_net.bias"] = torch.zeros(52)
    state["value_net.weight"] = torch.randn(1, width, generator=gen) * 0.1
    state["value_net.bias"] = torch.zeros(1)
    return state


def tiny_metadata(hidden: tuple[int, ...] = (8,)) -> dict[str, Any]:
    """The metadata of a model with ``tiny_state(hidden)``."""
    return model_metadata("modern", [4], list(hidden), timesteps=0)


def weights_bytes(state: Any) -> bytes:
    """``policy.pth`` as Stable-Baselines3 writes it: ``torch.save`` of the state_dict."""
    import torch

    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


def write_model(path: pathlib.Path, weights: bytes | None, metadata: bytes | Any | None) -> pathlib.Path:
    """A model zip laid out as ``save_model`` writes one (SB3 members plus ``popejoan.json``)."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps({"policy_class": "MaskableActorCriticPolicy"}))
        if weights is not None:
            archive.writestr("policy.pth", weights)
        archive.writestr("_stable_baselines3_version", "2.9.2")
        if metadata is not None:
            text = metadata if isinstance(metadata, bytes) else json.dumps(metadata).encode()
            archive.writestr(META_NAME, text, compress_type=zipfile.ZIP_DEFLATED)
    return path


def tiny_model(path: pathlib.Path, hidden: tuple[int, ...] = (8,)) -> pathlib.Path:
    """A complete small model file that ``load_player`` plays."""
    return write_model(path, weights_bytes(tiny_state(hidden)), tiny_metadata(hidden))


def a_view() -> Any:
    """The SeatView of the seat to act with a real choice, at the start of a seeded 4-player deal."""
    from popejoan_env.envs.pettingzoo_aec import raw_env

    env = raw_env(players=4, auto_forced=True)
    env.reset(seed=3)
    return env.seat_view(env.agent_selection)


def test_tiny_model_loads_and_plays(tmp_path: pathlib.Path) -> None:
    path = tiny_model(tmp_path / "tiny.zip", hidden=(8, 6))
    player = load_player(path, rules="modern")
    view = a_view()
    assert player.act(view) in view.legal
    assert make_player(str(path)).act(view) in view.legal


def _zip_bomb(path: pathlib.Path, unpacked: int, lie: int | None = None) -> pathlib.Path:
    """A model zip whose policy.pth is ``unpacked`` zero bytes deflated; ``lie``: the size its headers claim."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(META_NAME, json.dumps(tiny_metadata()))
        info = zipfile.ZipInfo("policy.pth")
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w") as member:
            chunk = b"\0" * 2**20
            for _ in range(unpacked // len(chunk)):
                member.write(chunk)
    if lie is not None:
        data = bytearray(path.read_bytes())
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo("policy.pth")
        # Local header: uncompressed size at +22; central directory entry: at +24.
        data[info.header_offset + 22: info.header_offset + 26] = lie.to_bytes(4, "little")
        central = data.rindex(b"PK\x01\x02\x14", 0)  # the last central entry is policy.pth
        while data[central + 46: central + 46 + len(b"policy.pth")] != b"policy.pth":
            central = data.rindex(b"PK\x01\x02", 0, central)
        data[central + 24: central + 28] = lie.to_bytes(4, "little")
        path.write_bytes(bytes(data))
    return path


def test_stride_0_and_overlapping_tensor_views_are_refused_before_any_copy(tmp_path: pathlib.Path) -> None:
    import torch

    hidden = 10_000  # as a real matrix: 10,000 x 1285 float32 = 51 MB; stored as a view of one value: a few kB
    state = {
        "mlp_extractor.policy_net.0.weight": torch.zeros(1).expand(hidden, OBS_SIZE),
        "mlp_extractor.policy_net.0.bias": torch.zeros(1).expand(hidden),
        "action_net.weight": torch.zeros(1).expand(52, hidden),
        "action_net.bias": torch.zeros(52),
    }
    path = write_model(tmp_path / "views.zip", weights_bytes(state), tiny_metadata((hidden,)))
    assert path.stat().st_size < 10_000
    tracemalloc.start()
    try:
        with pytest.raises(ModelFileError, match=r"policy_net\.0\.weight of shape \(10000, 1285\) is a view with "
                                                 r"strides \(0, 0\)"):
            load_player(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"{peak:,} bytes allocated reading a {path.stat().st_size:,}-byte file"
    overlapping = dict(tiny_state((8,)))
    overlapping["mlp_extractor.policy_net.0.weight"] = torch.zeros(OBS_SIZE + 8).as_strided((8, OBS_SIZE), (1, 1))
    path = write_model(tmp_path / "overlap.zip", weights_bytes(overlapping), tiny_metadata((8,)))
    with pytest.raises(ModelFileError, match=r"strides \(1, 1\).*overlapping view"):
        load_player(path)


def test_the_tensors_of_a_model_file_are_bounded_together(tmp_path: pathlib.Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from popejoan_env.nets import model_file

    path = tiny_model(tmp_path / "tiny.zip", hidden=(4, 4))  # two tensors of 4 x 1285 (actor and critic), and more
    monkeypatch.setattr(model_file, "MAX_WEIGHT_ELEMENTS", 8_000)
    with pytest.raises(ModelFileError, match=r"hold 1\d,\d{3} values together; at most 8,000 are read "
                                             r"\(MAX_WEIGHT_ELEMENTS\)"):
        load_player(path)
    monkeypatch.setattr(model_file, "MAX_WEIGHT_ELEMENTS", 5_000)
    with pytest.raises(ModelFileError, match=r"5,140 values; at most 5,000 are read"):
        load_player(path)


def test_zip_bomb_is_refused_without_reading_it(tmp_path: pathlib.Path) -> None:
    unpacked = 200 * 2**20  # 200 MB of zeros: a zip of ~200 kB
    bomb = _zip_bomb(tmp_path / "bomb.zip", unpacked)
    assert bomb.stat().st_size < 2**20
    tracemalloc.start()
    try:
        with pytest.raises(ModelFileError, match=r"bomb\.zip: policy\.pth unpacks to 209,715,200 bytes"):
            load_player(bomb)
        liar = _zip_bomb(tmp_path / "liar.zip", unpacked, lie=1000)  # headers claim 1,000 bytes
        with pytest.raises(ModelFileError, match="liar.zip"):
            load_player(liar)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, f"{peak:,} bytes allocated reading a bomb"
    assert MAX_WEIGHTS_BYTES < unpacked


def test_too_many_members_and_huge_metadata_are_refused(tmp_path: pathlib.Path) -> None:
    crowded = tiny_model(tmp_path / "crowded.zip")
    with zipfile.ZipFile(crowded, "a") as archive:
        for i in range(MAX_MEMBERS):
            archive.writestr(f"extra/{i}", b"")
    with pytest.raises(ModelFileError, match="members"):
        read_metadata(crowded)
    big = write_model(tmp_path / "big_meta.zip", weights_bytes(tiny_state()),
                      {**tiny_metadata(), "notes": "x" * (2 * 2**20)})
    with pytest.raises(ModelFileError, match=r"popejoan\.json unpacks to"):
        load_player(big)


class _RunsCode:
    """A pickle that, unpickled, calls ``os.mkdir(marker)``: any unpickling of the file runs code."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (self.marker,))


def test_hostile_pickle_is_never_run(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    marker = tmp_path / "the_code_ran"
    state = tiny_state()
    state["action_net.bias"] = _RunsCode(str(marker))
    hostile = weights_bytes(state)  # torch's own format, its data.pkl calling os.mkdir
    legacy = pickle.dumps({"action_net.weight": _RunsCode(str(marker))})  # a plain pickle as policy.pth
    for name, weights in (("hostile.zip", hostile), ("legacy.zip", legacy)):
        path = write_model(tmp_path / name, weights, tiny_metadata())
        with pytest.raises(ModelFileError, match=f"{name}: the network weights"):
            load_player(path)
        with pytest.raises(PopeJoanError):
            make_player(str(path))
        monkeypatch.chdir(tmp_path)
        with pytest.raises(PopeJoanError):
            make_player(name)
        assert not marker.exists(), "load_player ran code from the file"
    # The file is really hostile: an unpickling load (as MaskablePPO.load does) runs its code.
    torch.load(io.BytesIO(hostile), weights_only=False)
    assert marker.exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("activation", []), ("activation", "gelu"), ("obs_version", "1"), ("obs_version", 1.0),
        ("obs_size", True), ("net_arch", "x"), ("net_arch", [8.0]), ("net_arch", [0]), ("rules", 3),
        ("rules", {"lead": "sideways"}), ("players", None), ("players", []), ("players", [4, 9]),
        ("players", [True]), ("format", None),
    ],
)
def test_wrong_typed_metadata_field(tmp_path: pathlib.Path, field: str, value: Any) -> None:
    path = write_model(tmp_path / "meta.zip", weights_bytes(tiny_state()), {**tiny_metadata(), field: value})
    for load in (read_metadata, load_player):
        with pytest.raises(ModelFileError, match=rf"meta\.zip: metadata {field}") as info:
            load(path)
        assert "meta.zip" in str(info.value)


@pytest.mark.parametrize("field", ["obs_version", "rules", "players", "activation", "net_arch"])
def test_missing_metadata_field(tmp_path: pathlib.Path, field: str) -> None:
    meta = tiny_metadata()
    del meta[field]
    path = write_model(tmp_path / "lacks.zip", weights_bytes(tiny_state()), meta)
    with pytest.raises(ModelFileError, match=f"lacks '{field}'"):
        load_player(path)


def test_metadata_that_is_not_json_or_too_deep(tmp_path: pathlib.Path) -> None:
    for name, text in [("deep.zip", b"[" * 100_000 + b"]" * 100_000), ("digits.zip", b'{"x": ' + b"1" * 5000 + b"}"),
                       ("latin.zip", '{"é": 1}'.encode("latin-1")), ("list.zip", b"[1, 2]")]:
        path = write_model(tmp_path / name, weights_bytes(tiny_state()), text)
        with pytest.raises(ModelFileError, match=name):
            read_metadata(path)


def _with(state: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = dict(state)
    for key, value in changes.items():
        key = key.replace("__", ".")
        if value is None:
            del out[key]
        else:
            out[key] = value
    return out


def test_wrong_shape_bias_refused_at_load(tmp_path: pathlib.Path) -> None:
    import torch

    state = tiny_state()
    path = write_model(tmp_path / "bias.zip", weights_bytes(
        {**state, "mlp_extractor.policy_net.0.bias": torch.zeros(7)}), tiny_metadata())
    with pytest.raises(ModelFileError, match=r"bias\.zip: mlp_extractor\.policy_net\.0\.bias has shape \(7,\)"):
        load_player(path)
    path = write_model(tmp_path / "head.zip", weights_bytes({**state, "action_net.bias": torch.zeros(52, 1)}),
                       tiny_metadata())
    with pytest.raises(ModelFileError, match=r"action_net\.bias has shape \(52, 1\)"):
        load_player(path)


@pytest.mark.parametrize(
    ("key", "make", "message"),
    [
        ("action_net.weight", lambda t: None, "lacks action_net.weight|no action_net"),
        ("action_net.bias", lambda t: None, "lacks action_net.bias"),
        ("mlp_extractor.policy_net.0.weight", lambda t: None, "lacks mlp_extractor.policy_net.0.weight"),
        ("mlp_extractor.policy_net.0.bias", lambda t: None, "lacks mlp_extractor.policy_net.0.bias"),
        ("action_net.weight", lambda t: t.new_tensor(1.0), r"shape \(\)"),
        ("mlp_extractor.policy_net.0.bias", lambda t: t.new_tensor(1.0), r"shape \(\)"),
        ("action_net.weight", lambda t: t.to(dtype=__import__("torch").int64), "int64 tensor, not a float"),
        ("action_net.bias", lambda t: t.to(dtype=__import__("torch").bool), "bool tensor, not a float"),
        ("action_net.weight", lambda t: t.to(dtype=__import__("torch").complex64), "complex64"),
        ("action_net.weight", lambda t: [1.0, 2.0], "list, not a tensor"),
        ("action_net.bias", lambda t: 3, "int, not a tensor"),
        ("mlp_extractor.policy_net.0.weight", lambda t: t[:, :10], "expects 10 inputs"),
        ("mlp_extractor.policy_net.0.weight", lambda t: t[:0], "empty layer"),
        ("mlp_extractor.policy_net.4.weight", lambda t: __import__("torch").zeros(8, 8), "out of sequence"),
        ("mlp_extractor.policy_net.1.bias", lambda t: __import__("torch").zeros(8), "out of sequence"),
    ],
)
def test_bad_tensors_are_refused_at_load(tmp_path: pathlib.Path, key: str, make: Any, message: str) -> None:
    state = tiny_state()
    value = make(state.get(key, state["action_net.weight"]))
    changed = {k: v for k, v in state.items() if k != key}
    if value is not None:
        changed[key] = value
    path = write_model(tmp_path / "tensor.zip", weights_bytes(changed), tiny_metadata())
    with pytest.raises(ModelFileError, match=message):
        load_player(path)


def test_nan_or_infinite_weights_are_refused(tmp_path: pathlib.Path) -> None:
    for bad in (float("nan"), float("inf"), -float("inf")):
        state = tiny_state()
        weight = state["mlp_extractor.policy_net.0.weight"].clone()
        weight[3, 5] = bad
        state["mlp_extractor.policy_net.0.weight"] = weight
        path = write_model(tmp_path / "nan.zip", weights_bytes(state), tiny_metadata())
        with pytest.raises(ModelFileError, match="NaN or infinite"):
            load_player(path)


def test_half_precision_weights_load(tmp_path: pathlib.Path) -> None:
    import torch

    state = {k: v.to(torch.float16) for k, v in tiny_state().items()}
    path = write_model(tmp_path / "half.zip", weights_bytes(state), tiny_metadata())
    view = a_view()
    assert load_player(path).act(view) in view.legal


def test_net_arch_must_match_the_weights(tmp_path: pathlib.Path) -> None:
    path = write_model(tmp_path / "arch.zip", weights_bytes(tiny_state((8,))), tiny_metadata((8, 8)))
    with pytest.raises(ModelFileError, match=r"net_arch \[8, 8\] does not match the weights"):
        load_player(path)


def test_weights_that_are_not_a_state_dict(tmp_path: pathlib.Path) -> None:
    import torch

    for name, weights in [("tensor.zip", weights_bytes(torch.zeros(3))), ("list.zip", weights_bytes([1, 2])),
                          ("garbage.zip", b"\0garbage" * 100)]:
        path = write_model(tmp_path / name, weights, tiny_metadata())
        with pytest.raises(ModelFileError, match=name):
            load_player(path)


class _FakeSB3Model:
    """Stands in for an SB3 model: ``save`` writes a zip as SB3 does, or fails half-way."""

    def __init__(self, fail: bool) -> None:
        self.fail = fail

    def save(self, path: str) -> None:
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("policy.pth", weights_bytes(tiny_state()))
            if self.fail:
                raise KeyboardInterrupt


def test_save_model_replaces_the_target_only_when_complete(tmp_path: pathlib.Path) -> None:
    from popejoan_env.nets.model_file import save_model

    target = tmp_path / "model.zip"
    assert save_model(_FakeSB3Model(fail=False), tmp_path / "model", tiny_metadata()) == str(target)
    before = target.read_bytes()
    assert load_player(target).act(a_view()) in a_view().legal
    with pytest.raises(KeyboardInterrupt):
        save_model(_FakeSB3Model(fail=True), target, tiny_metadata())
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.zip"]


# ===================================================================== 6. scripted names and model paths
def test_scripted_name_beats_a_file_of_that_name(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "random").write_text("not a model")
    (tmp_path / "lowest").mkdir()
    tiny_model(tmp_path / "pimc")  # even a real model file named like a scripted player
    assert make_player("random", seed=0).name == "random"
    assert make_player("lowest", seed=0).name == "lowest"
    assert make_player("pimc:samples=2", seed=0).name.startswith("pimc")
    # Written as a path, the file is a model path (and this one is not a model).
    with pytest.raises(ModelFileError, match="not a readable model file"):
        make_player("./random")
    assert make_player(os.path.join(".", "pimc")).name == "pimc"  # the model's file name
    # An existing file that is not a scripted name is a model path; a directory is not.
    tiny_model(tmp_path / "mymodel")
    assert type(make_player("mymodel")).__name__ == "LearnedPlayer"
    (tmp_path / "folder").mkdir()
    with pytest.raises(PopeJoanError, match="unknown player 'folder'"):
        make_player("folder")
    with pytest.raises(PopeJoanError, match="no saved model"):
        make_player("missing.zip")


# ----------------------------------------------------------------- the environments (issue items, one test each)
def _snapshot_env(e) -> bytes:
    """Everything a refused call could change, as bytes (env state and generator included)."""
    import pickle

    raw = e.unwrapped
    return pickle.dumps((raw.__dict__.get("_session"), raw.__dict__.get("_deal"), raw.agent_selection,
                         dict(raw.terminations), dict(raw._cumulative_rewards),
                         raw._rng.bit_generator.state if raw._rng is not None else None))


def test_raw_env_step_true_is_refused_not_card_1() -> None:
    from popejoan_env.envs.pettingzoo_aec import raw_env

    e = raw_env(players=4)
    e.reset(seed=1)
    before = _snapshot_env(e)
    for action in (True, False, 3.7, "5", "9D", None, np.float64(1.0)):
        with pytest.raises(PopeJoanError):
            e.step(action)
        assert _snapshot_env(e) == before


def test_gym_step_refuses_bools_floats_and_strings_with_a_clear_error() -> None:
    from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv

    g = PopeJoanGymEnv(players=4, opponents="random")
    g.reset(seed=2)
    mask = g.action_masks().copy()
    for action in (True, 3.7, "5", None, float("inf"), "9D", np.True_):
        with pytest.raises(PopeJoanError):
            g.step(action)
        assert np.array_equal(g.action_masks(), mask)
    g.step(int(np.flatnonzero(mask)[0]))          # an int (or numpy int) still plays


def test_step_before_reset_and_after_the_end_are_clear_errors() -> None:
    from popejoan_env.envs.pettingzoo_aec import env, raw_env

    for e in (raw_env(players=3), env(players=3)):
        with pytest.raises(PopeJoanError, match="reset"):
            e.step(0)
        e.reset(seed=4)
        for agent in e.agent_iter():
            obs, _, terminated, truncated, _ = e.last()
            e.step(None if terminated or truncated else int(np.flatnonzero(obs["action_mask"])[0]))
        with pytest.raises(PopeJoanError, match="episode is over"):
            e.step(None)


def test_refused_credit_reset_leaves_the_generator_where_it_was() -> None:
    from popejoan_env.envs.pettingzoo_aec import raw_env

    rules = {"preset": "modern", "allow_credit": False}
    e, twin = raw_env(players=4, rules=rules), raw_env(players=4, rules=rules)
    e.reset(seed=5)
    twin.reset(seed=5)
    state = e._rng.bit_generator.state
    with pytest.raises(PopeJoanError):
        e.reset(options={"balances": [0, 0, 0, 0]})   # the dealer cannot pay the dressing
    assert e._rng.bit_generator.state == state
    e.reset()
    twin.reset()
    assert e.deal.initial_hands == twin.deal.initial_hands and e.deal.dealer == twin.deal.dealer


def test_refused_pope_turnup_reset_keeps_the_session() -> None:
    from popejoan_env.envs.pettingzoo_aec import raw_env
    from popejoan_env.cards import CARD_NAMES, PACK

    rules = {"preset": "victorian", "allow_credit": False}
    e = raw_env(players=4, rules=rules)
    e.reset(seed=6)
    before = _snapshot_env(e)
    cards = [CARD_NAMES[c] for c in PACK if c != 21]
    hands = [cards[k * 11:(k + 1) * 11] for k in range(4)]
    dead = cards[44:] + ["9D"]                       # the Pope turned up: the deal ends at once
    with pytest.raises(PopeJoanError):
        e.reset(options={"deal": {"hands": hands, "dead": dead, "dealer": 0}, "balances": [60, 0, 60, 60]})
    assert _snapshot_env(e) == before


def test_reset_refuses_counters_the_observation_cannot_hold() -> None:
    from popejoan_env.envs.pettingzoo_aec import raw_env

    e = raw_env(players=4)
    e.reset(seed=7)
    before = _snapshot_env(e)
    for options in ({"balances": [-10**9, 0, 0, 0]}, {"board": {"pope": 10**9}}):
        with pytest.raises(PopeJoanError, match="observation"):
            e.reset(options=options)
        assert _snapshot_env(e) == before
    e.reset(options={"balances": [np.int64(5)] * 4, "board": {"pope": np.int32(3)}})   # numpy ints are ints
    assert e.deal.balances_before == (5, 5, 5, 5)
    for agent in e.agents:
        assert e.observation_space(agent).contains(e.observe(agent))


# ------------------------------------------------------------------ integers the records must hold
def test_balances_and_board_are_bounded_where_the_records_hold_them() -> None:
    from popejoan_env.engine import MAX_COUNTERS, Deal
    from popejoan_env.errors import InvalidDealError
    from popejoan_env.record import MAX_COUNT, deal_record
    from popejoan_env.session import Session

    assert MAX_COUNTERS < MAX_COUNT
    rng = np.random.default_rng(4)
    top = Deal.new(players=3, rng=rng, balances=[MAX_COUNTERS, -MAX_COUNTERS, 0], board={"pope": MAX_COUNTERS})
    top.play_out(lambda d, legal: legal[0])
    verify_record(json.loads(json.dumps(deal_record(top))))  # the largest accepted start records and replays
    for balances in ([MAX_COUNTERS + 1, 0, 0], [0, -MAX_COUNTERS - 1, 0], [np.int64(2**62), 0, 0], [2**63, 0, 0],
                     [10**4000, 0, 0]):
        with pytest.raises(InvalidDealError, match=r"balance of seat \d must be within ±9,007,199,254,740,991 "
                                                   r"\(MAX_COUNTERS\)"):
            Deal.new(players=3, rng=rng, balances=balances)
        with pytest.raises(InvalidDealError, match="MAX_COUNTERS"):
            Session(players=3, rng=rng, balances=balances)
    for board in ([MAX_COUNTERS + 1] + [0] * 7, {"game": 2**63}, {"pope": 10**4000}):
        with pytest.raises(InvalidDealError, match=r"must hold at most 9,007,199,254,740,991 counters"):
            Deal.new(players=3, rng=rng, board=board)
        with pytest.raises(InvalidDealError, match="MAX_COUNTERS"):
            Session(players=3, rng=rng, board=board)
    record = deal_record(top)
    record["balances_before"] = [2**62, 0, 0]  # within what a record line may hold, beyond what a deal starts with
    with pytest.raises(RecordError, match=r"balances_before: balance of seat 0 must be within"):
        verify_record(record)


def test_batch_deals_refuse_sizes_and_counters_beyond_their_limits() -> None:
    pytest.importorskip("numba")
    from popejoan_env.batch import BatchDeals
    from popejoan_env.batch.state import MAX_BATCH_DEALS
    from popejoan_env.errors import InvalidDealError

    rng = np.random.default_rng(0)
    for n in (MAX_BATCH_DEALS + 1, 10**12, 2**64, 0, -1):
        with pytest.raises(InvalidDealError, match=r"num_deals must be an integer 1\.\.4,194,304 \(MAX_BATCH_DEALS"):
            BatchDeals(rng=rng, num_deals=n)
    for board in ([2**63] + [0] * 7, {"pope": 2**53}):  # OverflowError before: the board did not fit an int64
        with pytest.raises(InvalidDealError, match="MAX_COUNTERS"):
            BatchDeals(rng=rng, board=board)
    batch = BatchDeals(rng=rng, num_deals=2)
    with pytest.raises(InvalidDealError, match="MAX_BATCH_DEALS"):
        batch.take(np.zeros(MAX_BATCH_DEALS + 1, dtype=np.int64))
    with pytest.raises(InvalidDealError, match="MAX_BATCH_DEALS"):
        batch.take([0]).with_worlds([batch.to_deal(0)], repeat=10**12)
    for seats in (np.array([2**62, 0]), [2**70, 0], [0], np.array([0.5, 1.0]), np.array([4, 0])):
        with pytest.raises(InvalidDealError, match="seats must be one seat -1..3 per deal"):
            batch.hands_of(seats)
    assert batch.hands_of(np.array([-1, 2]))[0].sum() == 0


# ===================================================================== 7. evaluate's state file (PREFIX.state.json)
STATE_PLAN = {"agent": "lowest", "deals": 150, "opponents": "random"}
"""The evaluation whose state file the forgeries start from: 3 blocks, one opponent, the modern 4-seat table."""


@pytest.fixture(scope="module")
def state_file(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A genuine state file: ``STATE_PLAN`` interrupted after its first block against random."""
    from popejoan_env.evaluate.command import evaluate_agent

    prefix = str(tmp_path_factory.mktemp("state") / "run")

    def stop(name: str, block: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate_agent(STATE_PLAN["agent"], deals=STATE_PLAN["deals"], opponents=STATE_PLAN["opponents"],
                       out=prefix, on_block=stop)
    return json.loads(pathlib.Path(prefix + ".state.json").read_text())


def resume_from(path: pathlib.Path) -> Any:
    """The ``runner.State`` of ``STATE_PLAN`` resumed from ``path``."""
    from popejoan_env.evaluate import runner, variance

    settings = runner.settings(STATE_PLAN["agent"], "modern", 4, STATE_PLAN["deals"], [STATE_PLAN["opponents"]])
    return runner.State(str(path), settings, variance.references("modern", 4))


def _block(saved: dict[str, Any]) -> dict[str, Any]:
    return saved["blocks"]["random"]["0"]


def _deal_change(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(saved: dict[str, Any]) -> None:
        _block(saved)[key][0] = value
    return change


def _set_block(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(saved: dict[str, Any]) -> None:
        _block(saved)[key] = value
    return change


def _rename_block(new: str) -> Callable[[dict[str, Any]], None]:
    def change(saved: dict[str, Any]) -> None:
        saved["blocks"]["random"][new] = saved["blocks"]["random"].pop("0")
    return change


def _off_grid(saved: dict[str, Any]) -> None:
    """A deal's counters that are no mean of whole counters over 4 rotations (the margin kept consistent)."""
    block = _block(saved)
    block["agent_net"][0] = 0.3
    block["margin"][0] = 0.3 - block["opponent_net"][0]


def _consistent(saved: dict[str, Any], agent: float) -> None:
    block = _block(saved)
    block["agent_net"][0] = agent
    block["margin"][0] = agent - block["opponent_net"][0]


FORGED_STATES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("a block past the plan", lambda s: s["blocks"]["random"].update({"3": _block(s)}), "blocks 0 to 2"),
    ("a negative block", _rename_block("-1"), "block '-1'"),
    ("a signed block", _rename_block("+1"), "block '+1'"),
    ("a leading zero", _rename_block("01"), "block '01'"),
    ("a space", _rename_block(" 1"), "block ' 1'"),
    ("a digit that is not ASCII", _rename_block("\uff11"), "blocks 0 to 2"),
    ("an underscore", _rename_block("1_0"), "block '1_0'"),
    ("49 deals", lambda s: [_block(s)[k].pop() for k in ("margin", "agent_net", "opponent_net", "agent_out",
                                                          "opponent_out")], "49 values"),
    ("51 deals", lambda s: [_block(s)[k].append(_block(s)[k][0]) for k in ("margin", "agent_net", "opponent_net",
                                                                           "agent_out", "opponent_out")],
     "51 values"),
    ("counters a deal cannot move", lambda s: _consistent(s, 1e300), "from -25 to 45"),
    ("a deal's counters below the bound", lambda s: _consistent(s, -25.25), "from -25 to 45"),
    ("counters that are no mean over the rotations", _off_grid, "not a mean of whole counters"),
    ("a margin that is not the difference", _deal_change("margin", 99.0), "not agent_net - opponent_net"),
    ("a go-out rate above 1", _deal_change("agent_out", 2.0), "not a share of 4 rotations"),
    ("a go-out rate off the rotations", _deal_change("opponent_out", 0.3), "not a share of 4 rotations"),
    ("a bool for counters", _deal_change("agent_out", True), "True, not a finite number"),
    ("text for counters", _deal_change("margin", "3"), "'3', not a finite number"),
    ("null for counters", _deal_change("margin", None), "None, not a finite number"),
    ("an integer beyond a float's range (was: OverflowError)", _deal_change("margin", 10**400),
     "not a finite number"),
    ("a series that is no list", _set_block("margin", {"0": 1}), "not the 50 deals"),
    ("negative decisions", _set_block("agent_decisions", -1), "agent_decisions is -1"),
    ("fractional decisions", _set_block("agent_decisions", 1.5), "agent_decisions is 1.5"),
    ("more decisions than the games ask", _set_block("opponent_decisions", 10**12), "from 0 to 16,000"),
    ("negative seconds", _set_block("wall_seconds", -1.0), "wall_seconds is -1.0"),
    ("seconds past the limit", _set_block("agent_seconds", 1e308), "MAX_BLOCK_SECONDS"),
    ("a missing field", lambda s: _block(s).pop("wall_seconds"), "not the block of an evaluation"),
    ("a field too many", _set_block("bonus", 1), "not the block of an evaluation"),
    ("a block that is a list", lambda s: s["blocks"]["random"].update({"0": [1, 2]}), "not the block"),
    ("blocks that are a list", lambda s: s.update(blocks=[]), "not an object of matches"),
    ("no blocks", lambda s: s.pop("blocks"), "not an object of matches"),
    ("a match's blocks that are a number", lambda s: s["blocks"].update(random=5), "not an object of blocks"),
    ("a match the evaluation does not play", lambda s: s["blocks"].update(stockfish={}), "'stockfish'"),
    ("a field beside the blocks", lambda s: s.update(note="hi"), "beside format, settings, blocks and popejoan"),
]


@pytest.mark.parametrize(("change", "says"), [pytest.param(c, m, id=i) for i, c, m in FORGED_STATES])
def test_a_forged_state_file_is_refused_naming_the_file_and_the_problem(
        state_file: dict[str, Any], tmp_path: pathlib.Path, change: Callable[[dict[str, Any]], None],
        says: str) -> None:
    saved = copy.deepcopy(state_file)
    change(saved)
    path = tmp_path / "run.state.json"
    path.write_text(json.dumps(saved))
    with pytest.raises(PopeJoanError) as refused:
        resume_from(path)
    message = str(refused.value)
    assert message.startswith(f"cannot resume from {path}: ") and says in message, message
    assert len(message.splitlines()) == 1 and len(message) < 600, message


@pytest.mark.parametrize(("text", "says"), [
    ("NaN", "NaN is not a finite number"),
    ("Infinity", "Infinity is not a finite number"),
    ("-Infinity", "-Infinity is not a finite number"),
    ("1" * 5000, "digits"),
])
def test_numbers_json_reads_but_an_evaluation_never_writes_are_refused(
        state_file: dict[str, Any], tmp_path: pathlib.Path, text: str, says: str) -> None:
    saved = copy.deepcopy(state_file)
    _block(saved)["agent_net"][0] = "@@"
    path = tmp_path / "run.state.json"
    path.write_text(json.dumps(saved).replace('"@@"', text))
    with pytest.raises(PopeJoanError, match=f"cannot resume from {re.escape(str(path))}: .*{says}"):
        resume_from(path)


def test_a_state_file_that_names_a_match_twice_or_nests_deep_is_refused(
        state_file: dict[str, Any], tmp_path: pathlib.Path) -> None:
    path = tmp_path / "run.state.json"
    text = json.dumps(state_file)
    path.write_text(text.replace('"blocks": {', '"blocks": {"random": {}, ', 1))  # json keeps the last of two
    with pytest.raises(PopeJoanError, match="'random' is given twice"):
        resume_from(path)
    path.write_text(text.replace('"blocks": {', '"blocks": {"x": ' + "[" * 100_000 + "]" * 100_000 + ", ", 1))
    with pytest.raises(PopeJoanError, match="nested too deep"):
        resume_from(path)
    for other in ("[]", '"text"', "3", "null", json.dumps({"format": "popejoan-evaluation-state/1"})):
        path.write_text(other)
        with pytest.raises(PopeJoanError, match=re.escape(str(path))):
            resume_from(path)


def test_a_genuine_state_file_and_a_reference_pair_of_other_ratings_resume(
        state_file: dict[str, Any], tmp_path: pathlib.Path) -> None:
    saved = copy.deepcopy(state_file)
    saved["blocks"]["pimc-random"] = {"0": _block(saved)}  # played with other --ratings: kept out of the report
    path = tmp_path / "run.state.json"
    path.write_text(json.dumps(saved))
    state = resume_from(path)
    assert list(state.blocks["random"]) == [0] and "pimc-random" not in state.blocks
    assert state.blocks["random"][0]["margin"] == _block(state_file)["margin"]


def test_a_report_never_shows_more_deals_than_its_plan(state_file: dict[str, Any], tmp_path: pathlib.Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a fourth block in a 150-deal state file made a report of 200 deals, silently."""
    saved = copy.deepcopy(state_file)
    saved["blocks"]["random"]["3"] = _block(saved)
    prefix = tmp_path / "run"
    pathlib.Path(f"{prefix}.state.json").write_text(json.dumps(saved))
    status, _, err = run_main(["evaluate", "lowest", "--deals", "150", "--opponents", "random", "--quiet",
                               "--out", str(prefix)], capsys)
    assert status == 2 and f"cannot resume from {prefix}.state.json: it holds random block '3'" in err, err
    assert_one_line(err)
    assert not pathlib.Path(f"{prefix}.json").exists() and not pathlib.Path(f"{prefix}.txt").exists()


def test_a_state_that_lacks_or_adds_blocks_gives_no_series() -> None:
    from popejoan_env.evaluate import runner

    settings = runner.settings("lowest", "modern", 4, 100, ["random"])
    state = runner.State(None, settings)
    with pytest.raises(PopeJoanError, match=r"holds blocks \[\], not the 2 blocks 0 to 1 of its plan"):
        state.series("random")
    state.blocks["random"] = {0: {}, 1: {}, 2: {}}
    with pytest.raises(PopeJoanError, match=r"holds blocks \[0, 1, 2\], not the 2 blocks"):
        state.timing("random")


@pytest.mark.parametrize("preset", ["modern", "victorian"])
@pytest.mark.parametrize("seats", [3, 4, 5, 8])
def test_no_deal_moves_more_counters_than_its_bounds(preset: str, seats: int) -> None:
    """``resume.deal_bounds`` holds on random deals of every table, and comes near (the bounds are real ones)."""
    from popejoan_env.engine import Deal
    from popejoan_env.evaluate.resume import deal_bounds, max_decisions
    from popejoan_env.evaluate import dealset
    from popejoan_env.rules import Rules

    rules = Rules.preset(preset)
    low, high = deal_bounds(rules, seats)
    rng = np.random.default_rng(seats)
    seen = []
    plays = 0
    for d in range(400):
        deal = Deal.new(rules, seats, d % seats, rng)
        deal.play_out(lambda deal, legal: legal[int(rng.integers(len(legal)))])
        seen += deal.delta
        plays = max(plays, len(deal.plays))
    assert low <= min(seen) and max(seen) <= high
    assert max(seen) > high / 3 and min(seen) < low / 3
    assert plays * dealset.BLOCK * 2 * seats <= max_decisions(rules, seats)


# ===================================================================== 8. plain SB3 zips and adopt()
def plain_data(hidden: tuple[int, ...] = (8,), timesteps: int = 256) -> dict[str, Any]:
    """SB3's ``data`` JSON of a MaskablePPO MlpPolicy on the Gym view, as ``model.save`` writes it (the pickled
    ``:serialized:`` entries left out: they are never read)."""
    return {
        "policy_class": {":type:": "<class 'abc.ABCMeta'>", "__module__": "sb3_contrib.common.maskable.policies",
                         "__init__": "<function MaskableActorCriticPolicy.__init__ at 0x7f0>"},
        "observation_space": {":type:": "<class 'gymnasium.spaces.box.Box'>", "dtype": "float32",
                              "_shape": [OBS_SIZE], "low_repr": "0.0", "high_repr": "1.0", "_np_random": None},
        "action_space": {":type:": "<class 'gymnasium.spaces.discrete.Discrete'>", "dtype": "int64", "n": "52",
                         "start": "0", "_shape": [], "_np_random": "Generator(PCG64)"},
        "policy_kwargs": {"net_arch": list(hidden)},
        "num_timesteps": timesteps,
    }


def write_plain(path: pathlib.Path, data: bytes | Any, weights: bytes | None = None) -> pathlib.Path:
    """A zip laid out as SB3's ``model.save`` writes one: ``data``, ``policy.pth``, no ``popejoan.json``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", data if isinstance(data, bytes) else json.dumps(data))
        archive.writestr("policy.pth", weights if weights is not None else weights_bytes(tiny_state((8,))))
        archive.writestr("_stable_baselines3_version", "2.9.2")
    return path


def _plain_with(key: str, field: str | None, value: Any) -> dict[str, Any]:
    data = plain_data()
    if field is None:
        data[key] = value
    else:
        data[key][field] = value
    return data


def test_a_hand_made_plain_zip_plays(tmp_path: pathlib.Path) -> None:
    path = write_plain(tmp_path / "plain.zip", plain_data())
    meta = read_metadata(path)
    assert meta["plain_sb3"] and meta["timesteps"] == 256 and meta["net_arch"] == [8]
    view = a_view()
    assert make_player(str(path)).act(view) in view.legal


@pytest.mark.parametrize(("key", "field", "value", "says"), [
    ("num_timesteps", None, "1" * 5000, "num_timesteps is '1111"),  # ValueError: Python's 4,300-digit limit
    ("num_timesteps", None, -5, "num_timesteps must be an integer 0..9,223,372,036,854,775,807, got -5"),
    ("num_timesteps", None, 12.5, "got 12.5"),
    ("num_timesteps", None, 2**63, "got 9223372036854775808"),
    ("num_timesteps", None, True, "got True"),
    ("action_space", "n", "\u00b2", "n is '\u00b2', not a whole number"),  # ValueError before: int('²')
    ("action_space", "n", "\u0665\u0662", "written in ASCII digits"),  # Arabic-Indic 52: read as 52 before
    ("action_space", "n", "5" * 5000, "written in ASCII digits"),
    ("action_space", "n", " 52", "written in ASCII digits"),
    ("action_space", "start", "1", "start=1): its actions are not the card ids"),  # every card one off before
    ("action_space", ":type:", "<class 'my.spaces.discrete.DiscreteLookalike'>", "not Discrete(52)"),
    ("action_space", ":type:", "x" * 100_000, "xxx..."),
    ("observation_space", "_shape", "[\u0661\u0662\u0668\u0665]", "not the Gym view's Box"),  # read as 1285 before
    ("observation_space", "_shape", "[" + "1" * 5000 + "]", "shape is '111"),
    ("observation_space", "_shape", [1285.0], "shape must be an integer"),
    ("observation_space", ":type:", "<class 'mine.BoxOfTricks'>", "not the Gym view's Box"),
    ("policy_kwargs", "net_arch", [10**4000], "a layer width must be an integer 1..16,777,216"),
    ("policy_kwargs", "net_arch", [8.0], "a layer width must be an integer"),
    ("policy_kwargs", "net_arch", "8", "is not a list of layer widths"),
])
def test_every_number_of_a_plain_zip_is_read_by_the_checked_reader(
        tmp_path: pathlib.Path, key: str, field: str | None, value: Any, says: str) -> None:
    path = write_plain(tmp_path / "bad" / "model.zip", _plain_with(key, field, value))
    for read in (read_metadata, lambda p: make_player(str(p))):
        with pytest.raises(ModelFileError) as refused:
            read(path)
        assert says in str(refused.value) and len(str(refused.value)) < 400, str(refused.value)[:500]


def test_a_bad_model_file_is_left_out_of_the_web_list_with_one_log_line(
        tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    """Before: one plain zip with a 5,000-digit num_timesteps broke the options list for everybody."""
    import logging

    from popejoan_env.web.games import GameManager

    models = tmp_path / "models"
    (models / "good").mkdir(parents=True)
    tiny_model(models / "good" / "model.zip")
    write_plain(models / "huge" / "model.zip", _plain_with("num_timesteps", None, "9" * 5000))
    write_plain(models / "arabic" / "model.zip", _plain_with("action_space", "n", "\u0665\u0662"))
    (models / "junk").mkdir()
    (models / "junk" / "model.zip").write_bytes(b"PK\x03\x04 not a zip")
    manager = GameManager(models_dir=models, seed=0)
    with caplog.at_level(logging.WARNING, logger="popejoan.web"):
        options = manager.options()
        assert manager.options() == options  # read once: one log line per file, not per request
    assert [m["path"] for m in options["models"] if m["name"] != "shipped"] == ["models/good/model.zip"]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3 and all("left out of the models offered" in line for line in lines), lines
    assert all(len(line.splitlines()) == 1 for line in lines)


def _adopt_case(tmp_path: pathlib.Path, **kwargs: Any) -> tuple[pathlib.Path, dict[str, Any]]:
    source = write_plain(tmp_path / "run" / "model.zip", plain_data())
    return source, {"out": tmp_path / "adopted.zip", **kwargs}


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"players": [4.7]}, "players: a table size must be an integer 3..8, got 4.7"),  # played as 4 before
    ({"players": "34"}, "players must be a list of table sizes"),  # read as [3, 4] before
    ({"players": [True]}, "got True"),
    ({"rules": {"preset": "modern", "pack": "small"}, "players": [4]}, "pack=small is dealt to 3 players"),
    ({"architecture": "suits"}, "extra fields ['architecture'] would replace"),
    ({"net_arch": [1]}, "extra fields ['net_arch'] would replace"),
    ({"obs_size": 3, "note": "x"}, "extra fields ['obs_size'] would replace"),
    ({"plain_sb3": True}, "extra fields ['plain_sb3'] would replace"),
    ({"note": object()}, "extra fields must be JSON values"),  # a TypeError from json.dumps before
    ({"note": float("nan")}, "extra fields must be JSON values"),
])
def test_adopt_refuses_what_cannot_be_written_and_writes_nothing(
        tmp_path: pathlib.Path, kwargs: dict[str, Any], says: str) -> None:
    from popejoan_env.nets.sb3_zip import adopt

    source, given = _adopt_case(tmp_path, **kwargs)
    before = source.read_bytes()
    with pytest.raises(ModelFileError, match=re.escape(says)):
        adopt(source, **given)
    assert not given["out"].exists() and source.read_bytes() == before


def test_adopt_refuses_weights_that_cannot_play_and_an_output_that_is_a_directory(tmp_path: pathlib.Path) -> None:
    from popejoan_env.nets.sb3_zip import adopt

    state = tiny_state((8,))
    state["action_net.bias"] = torch_nan_like(state["action_net.bias"])
    nan = write_plain(tmp_path / "nan" / "model.zip", plain_data(), weights_bytes(state))
    with pytest.raises(ModelFileError, match="NaN or infinite"):
        adopt(nan, out=tmp_path / "nan.zip")  # written before: the weights were never read
    wrong = write_plain(tmp_path / "wrong" / "model.zip", plain_data((16,)))
    with pytest.raises(ModelFileError, match=r"net_arch \[16\] does not match the weights"):
        adopt(wrong, out=tmp_path / "wrong.zip")
    assert not (tmp_path / "nan.zip").exists() and not (tmp_path / "wrong.zip").exists()
    good = write_plain(tmp_path / "good" / "model.zip", plain_data())
    (tmp_path / "folder.zip").mkdir()
    (tmp_path / "folder").mkdir()
    for out in (tmp_path / "folder.zip", tmp_path / "folder", f"{tmp_path / 'folder'}{os.sep}"):
        with pytest.raises(ModelFileError, match="is a directory; give a file name"):
            adopt(good, out=out)
    assert sorted(p.name for p in (tmp_path / "folder").iterdir()) == []
    with pytest.raises(ModelFileError, match="no such file"):  # "not a zip Stable-Baselines3 saved" before
        adopt(tmp_path / "missing.zip")
    with pytest.raises(ModelFileError, match="a directory, not a model file"):
        adopt(tmp_path / "folder")
    written = adopt(good, rules="victorian", players=[5], out=tmp_path / "adopted.zip", note="mine")
    meta = read_metadata(written)
    assert meta["players"] == [5] and meta["note"] == "mine" and "plain_sb3" not in meta


def torch_nan_like(tensor: Any) -> Any:
    """``tensor`` with a NaN in its first value."""
    out = tensor.clone()
    out.view(-1)[0] = float("nan")
    return out


def test_a_model_file_for_a_table_its_rules_cannot_deal_is_refused(tmp_path: pathlib.Path) -> None:
    meta = dict(tiny_metadata(), rules={"preset": "modern", "pack": "small"}, players=[3, 4])
    path = write_model(tmp_path / "small4.zip", weights_bytes(tiny_state((8,))), meta)
    with pytest.raises(ModelFileError, match="a table no deal can be played at: pack=small is dealt to 3 players"):
        read_metadata(path)


# ===================================================================== 9. train: --quick and flags that cannot run
def _train_args(flags: list[str]) -> Any:
    """``popejoan train``'s Args from ``flags`` as the command reads them (``--quick`` applied)."""
    pytest.importorskip("sb3_contrib", reason="pip install -e '.[train]'")
    from popejoan_env.training import ppo

    return ppo.apply_quick(*ppo.parse_given(ppo.Args, flags, ""))


@pytest.mark.parametrize("field", ["run_name", "imitate_deals", "rollout_deals", "eval_deals", "final_eval_deals",
                                   "final_eval_opponents"])
def test_quick_never_overrides_a_flag_given_even_at_its_default(field: str) -> None:
    """Before: ``--quick --imitate-deals 60000`` trained on 3,000 deals, since 60,000 is the default."""
    from popejoan_env.training import ppo

    default = getattr(ppo.Args(), field)
    flag = "--" + field.replace("_", "-")
    args = _train_args(["--quick", flag, str(default)])
    assert getattr(args, field) == default
    others = {k: v for k, v in ppo.QUICK.items() if k != field}
    assert all(getattr(args, k) == v for k, v in others.items())  # the flags not given take --quick's values


def test_quick_knows_a_given_flag_however_it_is_written() -> None:
    assert _train_args(["--quick", "--imitate-dea", "60000"]).imitate_deals == 60_000  # argparse's abbreviation
    assert _train_args(["--imitate-deals=60000", "--quick"]).imitate_deals == 60_000
    assert _train_args(["--quick", "--run-name", "quick"]).run_name == "quick"
    assert _train_args(["--quick"]).imitate_deals == 2_000 and _train_args([]).imitate_deals == 60_000


TRAIN_COMBINATIONS = [
    (["--rules-option", "pack=small", "--players", "3", "--rounds", "0"],
     "--vec-env batch steps the envs in the batch engine, which plays the full pack only"),
    (["--net-arch", "0"], "--net-arch takes positive layer widths, got '0'"),
    (["--balance-range", "0,100000000"], "--balance-range 0,100000000: balance_range must lie within ±524,288"),
    (["--total-timesteps", "512", "--n-envs", "1", "--n-steps", "1"], "a rollout of 1 (--n-envs 1 x --n-steps 1)"),
    (["--total-timesteps", "512", "--batch-size", "1"], "minibatches of --batch-size 1 leaves one of 1"),
    (["--total-timesteps", "512", "--n-envs", "8", "--n-steps", "64", "--batch-size", "511"],
     "a rollout of 512 (--n-envs 8 x --n-steps 64) in minibatches of --batch-size 511"),
    (["--actor", "mlp", "--net-arch", "14000"], "holds 36,750,053 values; a model file holds at most 16,515,072"),
    (["--actor-arch", "128,4096,4096"], "and --actor-arch 128,4096,4096 holds"),
    (["--imitate-deals", "0"], "nothing to train: --imitate-deals 0 with no --start-model and --total-timesteps 0"),
]


@pytest.mark.parametrize(("flags", "says"), TRAIN_COMBINATIONS, ids=lambda x: " ".join(x)[:40] if isinstance(x, list)
                         else None)
def test_train_refuses_flags_that_cannot_run_together_before_any_work(flags: list[str], says: str) -> None:
    """Before: each was refused after the run's directory was cleared (the batch engine, a zero width, the balance
    bound), crashed in PPO's first update (a rollout of one decision), trained to NaN weights that no loader reads
    (a minibatch of one decision), or wrote a model.zip too large to read back."""
    from popejoan_env.training import ppo

    with pytest.raises(PopeJoanError, match=re.escape(says)):
        ppo.check_args(_train_args(flags))


STAGE_UNUSED = [
    (["--imitate-deals", "0", "--total-timesteps", "512", "--rounds", "2"],
     "--rounds would go unused: the rounds of policy improvement follow the imitation, and --imitate-deals 0 has "
     "none (give --start-model, or leave --rounds out)"),
    (["--imitate-deals", "0", "--total-timesteps", "512", "--rollout-worlds", "32"],
     "--rollout-worlds would go unused: the rounds"),
    (["--rounds", "0", "--rollout-epochs", "4"], "--rollout-epochs would go unused: --rounds 0 trains no round"),
    (["--quick", "--rounds", "0", "--rollout-deals", "500"], "--rollout-deals would go unused: --rounds 0"),
    (["--start-model", "m.zip", "--imitate-player", "pimc_net"],
     "--imitate-player would go unused: --start-model m.zip takes the imitation's place"),
    (["--start-model", "m.zip", "--imitate-deals", "1000"], "--imitate-deals would go unused"),
    (["--imitate-deals", "0", "--total-timesteps", "512", "--imitate-player", "pimc_net"],
     "--imitate-player would go unused: --imitate-deals 0 trains no imitation and no round"),
    (["--imitate-deals", "0", "--total-timesteps", "512", "--imitate-workers", "1"], "--imitate-workers would go"),
    (["--n-epochs", "4"], "--n-epochs would go unused: --total-timesteps 0 (the default) trains no PPO (give "
     "--total-timesteps N, or leave --n-epochs out)"),
    (["--total-timesteps", "0", "--clip-range", "0.1"], "--clip-range would go unused: --total-timesteps 0"),
    (["--quick", "--opponents", "self:1"], "--opponents would go unused: --total-timesteps 0"),
    (["--rounds", "3", "--no-anneal-lr"], "--no-anneal-lr would go unused: --total-timesteps 0 (the default) trains "
     "no PPO (give --total-timesteps N, or leave --no-anneal-lr out)"),
    (["--max-minutes", "5"], "--max-minutes would go unused"),
]


@pytest.mark.parametrize(("flags", "says"), STAGE_UNUSED, ids=lambda x: " ".join(x)[:40] if isinstance(x, list)
                         else None)
def test_train_refuses_a_flag_of_a_stage_the_run_does_not_have(flags: list[str], says: str) -> None:
    """Before: the flag was read and silently unused (``--imitate-deals 0 --rounds 2`` trained no round; with
    ``--total-timesteps 0`` as well it saved an untrained network and exited 0)."""
    pytest.importorskip("sb3_contrib", reason="pip install -e '.[train]'")
    from popejoan_env.training import ppo

    args, given = ppo.parse_given(ppo.Args, flags, "")
    with pytest.raises(PopeJoanError, match=re.escape(says)):
        ppo.check_given_stages(ppo.apply_quick(args, given), given)


def test_the_stage_flags_a_run_uses_are_accepted() -> None:
    pytest.importorskip("sb3_contrib", reason="pip install -e '.[train]'")
    from popejoan_env.training import ppo

    for flags in (["--rounds", "0"], ["--quick", "--rounds", "0"], ["--imitate-deals", "0", "--rounds", "0"],
                  ["--rounds", "2", "--rollout-worlds", "32"], ["--imitate-deals", "0", "--start-model", "m.zip",
                                                               "--rollout-lr", "1e-4"],
                  ["--start-model", "m.zip", "--imitate-workers", "1", "--imitate-choice-weight", "0.2"],
                  ["--quick", "--start-model", "m.zip"], ["--imitate-deals", "0", "--total-timesteps", "512"],
                  ["--total-timesteps", "0"], ["--vec-env", "dummy", "--n-envs", "4"],
                  ["--total-timesteps", "512", "--n-epochs", "4", "--opponents", "self:1", "--no-anneal-lr"],
                  ["--rollout-worlds", "8", "--rollout-epochs", "2"]):
        args, given = ppo.parse_given(ppo.Args, flags, "")
        ppo.check_given_stages(ppo.apply_quick(args, given), given)


def test_a_refused_combination_writes_nothing(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sb3_contrib", reason="pip install -e '.[train]'")
    run = tmp_path / "models" / "mine"
    run.mkdir(parents=True)
    (run / "model.zip").write_bytes(b"an earlier run's model")
    status, _, err = run_main(["train", "--rules-option", "pack=small", "--players", "3", "--rounds", "0",
                               "--output-dir", str(tmp_path / "models"), "--run-name", "mine"], capsys)
    assert status == 2 and "full pack only" in err
    assert_one_line(err)
    assert sorted(p.name for p in run.iterdir()) == ["model.zip"]  # the earlier run is not cleared


def test_a_run_without_evaluations_leaves_no_earlier_learning_curve(tmp_path: pathlib.Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a run with no evaluation that replaced an earlier one of the same name kept its learning_curve.png,
    a chart of another run beside the new model."""
    pytest.importorskip("sb3_contrib", reason="pip install -e '.[train]'")
    run = tmp_path / "models" / "mine"
    run.mkdir(parents=True)
    for name in ("model.zip", "run.json", "learning_curve.png"):
        (run / name).write_bytes(b"an earlier run's " + name.encode())
    status, _, err = run_main(["train", "--run-name", "mine", "--output-dir", str(tmp_path / "models"),
                               "--imitate-deals", "20", "--rounds", "0", "--actor", "mlp", "--net-arch", "16",
                               "--eval-interval", "0", "--final-eval-deals", "0", "--imitate-workers", "1",
                               "--no-progress", "--no-tensorboard"], capsys)
    assert status == 0, err
    assert not (run / "learning_curve.png").exists()
    assert "learning_curve" not in json.loads((run / "run.json").read_text())
    assert (run / "model.zip").read_bytes()[:2] == b"PK"


def test_policy_values_counts_what_the_policies_hold() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("sb3_contrib")
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from popejoan_env.batch_observation import HIDDEN_SIZE
    from popejoan_env.sb3_policies import OraclePolicy, SuitsPolicy, policy_values

    def box(n: int) -> Any:
        return spaces.Box(-np.inf, np.inf, shape=(n,), dtype=np.float32)

    def held(policy: Any) -> int:
        return sum(v.numel() for v in policy.state_dict().values())

    torch.set_num_threads(1)
    arch = dict(pi=[16, 8], vf=[16, 8])
    for oracle in (False, True):
        features = OBS_SIZE + (HIDDEN_SIZE if oracle else 0)
        mlp = (OraclePolicy if oracle else MaskableActorCriticPolicy)(box(features), spaces.Discrete(52),
                                                                       lambda _: 0.0, net_arch=arch)
        assert held(mlp) == policy_values("mlp", [16, 8], [], features)
        suits = SuitsPolicy(box(features), spaces.Discrete(52), lambda _: 0.0, net_arch=arch, actor_arch=[8, 12, 6],
                            activation="tanh")
        assert held(suits) == policy_values("suits", [16, 8], [8, 12, 6], features)


# ===================================================================== 10. refusals that name their real cause
@pytest.mark.parametrize(("key", "layout"), [("action_net.weight", "sparse_coo"),
                                             ("mlp_extractor.value_net.0.weight", "sparse_coo"),
                                             ("mlp_extractor.policy_net.0.weight", "sparse_csr")])
def test_a_sparse_tensor_in_a_model_file_is_named(tmp_path: pathlib.Path, key: str, layout: str) -> None:
    """Before: "not a readable model file (not a zip archive or truncated): Cannot access storage of ..."."""
    import warnings

    state = tiny_state((8,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch: "Sparse CSR tensor support is in beta state"
        state[key] = state[key].to_sparse() if layout == "sparse_coo" else state[key].to_sparse_csr()
    path = write_model(tmp_path / "sparse.zip", weights_bytes(state), tiny_metadata((8,)))
    with pytest.raises(ModelFileError, match=rf"{re.escape(key)} is a {layout} tensor; a model file holds dense"):
        load_player(path)


def test_a_records_file_whose_name_and_bytes_disagree_on_gzip_is_named(tmp_path: pathlib.Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "line 1: not UTF-8 text" for a gzip file without .gz, "Not a gzipped file (b'{\\"')" the other way."""
    packed = tmp_path / "deals.jsonl"
    packed.write_bytes(gzip.compress(GOLDEN.read_bytes()))
    with pytest.raises(RecordError, match=r"deals\.jsonl is gzip-compressed \(it starts with gzip's bytes 1f 8b\) "
                                          r"but its name does not end in \.gz"):
        list(read_records(packed))
    plain = tmp_path / "deals.jsonl.gz"
    plain.write_bytes(GOLDEN.read_bytes())
    with pytest.raises(RecordError, match=r"deals\.jsonl\.gz ends in \.gz but is not gzip-compressed"):
        list(read_records(plain))
    status, _, err = run_main(["verify", str(packed)], capsys)
    assert status == 1 and "is gzip-compressed" in err
    assert_one_line(err)
    packed.rename(tmp_path / "deals.jsonl.gz")
    assert len(list(read_records(tmp_path / "deals.jsonl.gz"))) == len(GOLDEN_RECORDS)


@pytest.fixture
def comma_model(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A readable model file whose path holds a comma (``a,b/model.zip``, relative to the test's directory)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a,b").mkdir()
    tiny_model(tmp_path / "a,b" / "model.zip")
    return "a,b/model.zip"


@pytest.mark.parametrize("argv", [
    ["benchmark", "--players", "a,b/model.zip,random", "--deals", "2", "--out", "bench"],
    ["benchmark", "--players", "random,a,b/model.zip", "--deals", "2", "--out", "bench"],
    ["exploit", "a,b/model.zip", "--method", "learn", "--steps", "64", "--out", "ex"],
])
def test_a_model_path_with_a_comma_is_named_where_a_comma_list_would_split_it(
        comma_model: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "no saved model at 'a'" (the path's first half)."""
    status, _, err = run_main(argv, capsys)
    assert status == 2 and "'a,b/model.zip'" in err and "comma" in err, err
    assert_one_line(err)
    assert not os.path.exists("bench.json") and not os.path.exists("ex")


def test_train_mixes_and_spec_parameters_name_a_comma_in_a_model_path(comma_model: str) -> None:
    pytest.importorskip("sb3_contrib", reason="pip install -e '.[train]'")
    from popejoan_env.opponents import OpponentMixError, parse_mix
    from popejoan_env.training import ppo

    with pytest.raises(OpponentMixError, match=r"the model path 'a,b/model\.zip' holds a comma"):
        parse_mix("a,b/model.zip:0.5,random:0.5")
    with pytest.raises(PopeJoanError, match=r"--eval-opponents: the model path 'a,b/model\.zip' holds a comma"):
        ppo.check_args(_train_args(["--eval-opponents", "random,a,b/model.zip"]))
    with pytest.raises(PopeJoanError, match="a model path with a comma cannot be a spec's parameter"):
        make_player("pimc_net:model=a,b/model.zip")
    assert make_player(comma_model).name  # alone, as evaluate's AGENT, it is one player


def test_a_spec_keeps_its_parameters_in_comma_lists_and_mixes() -> None:
    from popejoan_env.opponents import parse_mix
    from popejoan_env.players.lists import split_specs

    assert split_specs("pimc:samples=8,rollout=greedy, random,,lowest", "--players") == [
        "pimc:samples=8,rollout=greedy", "random", "lowest"]
    assert parse_mix("pimc:samples=8,rollout=greedy:0.5,random:0.5") == [
        ("pimc:samples=8,rollout=greedy", 0.5), ("random", 0.5)]  # before: 'rollout=greedy' was a player


@pytest.mark.parametrize("opponents", ["", ",", " , "])
def test_evaluate_refuses_an_opponents_list_that_names_no_player(
        opponents: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: an empty list played the whole panel (pimc_net included), without a word."""
    status, _, err = run_main(["evaluate", "random", "--quick", "--opponents", opponents, "--out",
                               str(tmp_path / "r"), "--quiet"], capsys)
    assert status == 2 and "names no player" in err and "leave it out to play them all" in err, err
    assert_one_line(err)
    assert list(tmp_path.iterdir()) == []


def test_a_model_path_that_is_a_directory_is_named(tmp_path: pathlib.Path) -> None:
    """Before: "model file '...' does not exist"."""
    (tmp_path / "run.zip").mkdir()
    with pytest.raises(ModelFileError, match=r"run\.zip' is a directory, not a model file"):
        load_player(tmp_path / "run.zip")
    with pytest.raises(PopeJoanError, match="is a directory, not a model file"):
        make_player(str(tmp_path / "run.zip"))


def test_a_run_directory_given_as_a_model_names_its_model_file(tmp_path: pathlib.Path) -> None:
    """``popejoan evaluate models/quick`` (the run's directory, not its model.zip): the refusal said only that it is a
    directory."""
    run = tmp_path / "quick"
    run.mkdir()
    (run / "model.zip").write_bytes(b"")  # only its name is read here
    with pytest.raises(PopeJoanError, match=r"is a directory, not a model file \(the run's model is "
                                            r"'.*quick/model\.zip'\)"):
        make_player(str(run))


# ===================================================================== Gymnasium ids and env arguments
@pytest.mark.parametrize("kwargs, says", [
    # a table size that is no number nor list (was: TypeError "'bool' object is not iterable")
    ({"players": True}, "players must be an integer 3..8, a list of them"),
    ({"players": 4.0}, "players must be an integer 3..8, a list of them"),
    ({"players": None}, "players must be an integer 3..8, a list of them"),
    # a reward scale the training commands refuse (was: accepted, NaN or negative rewards)
    ({"reward_scale": float("nan")}, "reward_scale must be a number greater than 0"),
    ({"reward_scale": float("inf")}, "reward_scale must be a number greater than 0"),
    ({"reward_scale": -1}, "reward_scale must be a number greater than 0"),
    ({"reward_scale": 0}, "reward_scale must be a number greater than 0"),
    ({"reward_scale": True}, "reward_scale must be a number greater than 0"),
    ({"reward_scale": "0.1"}, "reward_scale must be a number greater than 0"),
    # a pool of snapshots of no size (was: -1 read silently as 1)
    ({"max_snapshots": -1}, "max_snapshots must be a positive integer"),
    ({"max_snapshots": 2.5}, "max_snapshots must be a positive integer"),
    # an opponents mix of another type (was: TypeError "'NoneType' object is not iterable", OverflowError)
    ({"opponents": None}, "opponents must be a mix like"),
    ({"opponents": 5}, "opponents must be a mix like"),
    ({"opponents": {"random": None}}, "weight None of 'random' is not a number"),
    ({"opponents": {"random": 10**400}}, "is not a number"),
])
def test_gymnasium_make_refuses_bad_arguments_in_one_line(kwargs: dict[str, Any], says: str) -> None:
    gym = pytest.importorskip("gymnasium")
    import popejoan_env

    gym.register_envs(popejoan_env)
    with pytest.raises(PopeJoanError, match=re.escape(says)) as refused:
        gym.make("popejoan/PopeJoan-v2", **kwargs)
    assert len(str(refused.value).splitlines()) == 1


@pytest.mark.parametrize("scale", [float("nan"), -1.0, 0.0, 1e4])
def test_every_env_refuses_a_reward_scale_the_same_way(scale: float) -> None:
    from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv
    from popejoan_env.envs.sb3_vec_env import BatchVecEnv

    said = set()
    for make in (lambda: PopeJoanGymEnv(reward_scale=scale), lambda: BatchVecEnv(2, reward_scale=scale)):
        with pytest.raises(PopeJoanError) as refused:
            make()
        said.add(str(refused.value))
    assert len(said) == 1, said


@pytest.mark.parametrize("value", ["False", "no", 0, 1, None, 0.0, [False], np.array([True])])
@pytest.mark.parametrize("env, flag", [
    ("aec", "auto_forced"), ("gym", "lone_leads"), ("gym", "snapshot_deterministic"), ("vector", "lone_leads"),
    ("batch", "lone_leads"), ("batch", "terminal_observation"), ("batch", "oracle"),
    ("batch", "snapshot_deterministic"),
])
def test_every_env_refuses_a_flag_that_is_not_true_or_false(env: str, flag: str, value: Any) -> None:
    # was: read with bool(), so auto_forced="False", lone_leads="no" or oracle="no" silently meant True (the vector
    # env alone refused them)
    from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv
    from popejoan_env.envs.gymnasium_vector_env import PopeJoanVectorEnv
    from popejoan_env.envs.pettingzoo_aec import raw_env
    from popejoan_env.envs.sb3_vec_env import BatchVecEnv

    make = {"aec": raw_env, "gym": PopeJoanGymEnv, "vector": lambda **kw: PopeJoanVectorEnv(2, **kw),
            "batch": lambda **kw: BatchVecEnv(2, **kw)}[env]
    with pytest.raises(PopeJoanError, match=rf"^{flag} must be True or False, got ") as refused:
        make(**{flag: value})
    assert len(str(refused.value).splitlines()) == 1
    assert make(**{flag: np.bool_(True)}) is not None and make(**{flag: False}) is not None


@pytest.mark.parametrize("value", ["False", "no", 0, 1, None, [False], np.array([True])])
@pytest.mark.parametrize("flag", ["lone_leads", "auto_reset", "record"])
def test_the_batch_engine_refuses_a_flag_that_is_not_true_or_false(flag: str, value: Any) -> None:
    # was: BatchDeals read its three flags with bool(), so lone_leads="no" or record="False" silently meant True
    from popejoan_env.batch import BatchDeals
    from popejoan_env.engine import Deal

    with pytest.raises(PopeJoanError, match=rf"^{flag} must be True or False, got "):
        BatchDeals("modern", 4, 2, deal_seed=1, **{flag: value})
    assert BatchDeals("modern", 4, 2, deal_seed=1, **{flag: np.bool_(False)}) is not None
    if flag == "lone_leads":
        deal = Deal.new("modern", 4, rng=np.random.default_rng(1))
        with pytest.raises(PopeJoanError, match=r"^lone_leads must be True or False, got "):
            BatchDeals.from_deals([deal], lone_leads=value)
        one = BatchDeals.from_deals([deal])
        with pytest.raises(PopeJoanError, match=r"^lone_leads must be True or False, got "):
            one.with_worlds([deal], lone_leads=value)


def test_rllib_table_sizes_are_refused_not_truncated() -> None:
    pytest.importorskip("ray.rllib")
    from popejoan_env.envs.rllib_env import MixedTablesEnv

    with pytest.raises(PopeJoanError, match="got 4.9"):  # was: read as 4
        MixedTablesEnv({"table_sizes": [4.9]})
    with pytest.raises(PopeJoanError, match="reward_scale must be a number greater than 0"):
        MixedTablesEnv({"reward_scale": float("nan")})


@pytest.mark.parametrize("mode", [["ansi"], 5, b"ansi", {"ansi": 1}, np.array(["ansi"]), "ansi_list", "human"])
def test_gymnasium_make_names_a_render_mode_that_is_not_ours(mode: Any) -> None:
    # Gymnasium judged render_mode against the class's metadata before building the env: anything but a string was
    # its AttributeError ("'list' object has no attribute 'endswith'") or TypeError, never a PopeJoanError.
    gym = pytest.importorskip("gymnasium")
    import popejoan_env

    gym.register_envs(popejoan_env)
    with pytest.raises(PopeJoanError, match=r"^render_mode must be None or one of \['ansi'\], got ") as refused:
        gym.make("popejoan/PopeJoan-v2", render_mode=mode)
    assert len(str(refused.value).splitlines()) == 1
    assert gym.make("popejoan/PopeJoan-v2", render_mode="ansi").unwrapped.render_mode == "ansi"


@pytest.mark.parametrize("mode", [np.array(["ansi"]), ["ansi"], b"ansi"])
def test_the_aec_env_names_a_render_mode_that_is_not_a_string(mode: Any) -> None:
    # an array was numpy's "truth value of an array is ambiguous" (a ValueError, not ours)
    from popejoan_env.envs.pettingzoo_aec import raw_env

    with pytest.raises(PopeJoanError, match=r"^render_mode must be None or one of \['human', 'ansi'\]"):
        raw_env(render_mode=mode)


def test_deals_per_episode_have_one_bound_in_the_envs_and_the_commands() -> None:
    # The envs took any number of deals per episode (10**30 too) where train's --deals-per-episode stopped at 1,000.
    from popejoan_env.__main__ import build_parser
    from popejoan_env.checks import MAX_EPISODE_DEALS
    from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv
    from popejoan_env.envs.pettingzoo_aec import raw_env
    from popejoan_env.envs.sb3_vec_env import BatchVecEnv
    from popejoan_env.training.ppo import Args as PPOArgs
    import dataclasses

    said = set()
    for too_many in (MAX_EPISODE_DEALS + 1, 10**30):
        for make in (lambda: PopeJoanGymEnv(deals=too_many), lambda: BatchVecEnv(2, deals=too_many),
                     lambda: raw_env(deals=too_many)):
            with pytest.raises(PopeJoanError, match=r"^deals \(per episode\) must be an integer 1..1,000") as refused:
                make()
            said.add(str(refused.value))
    assert len(said) == 2, said  # the same words everywhere (the value shown aside)
    assert raw_env(deals=MAX_EPISODE_DEALS).deals_per_episode == PopeJoanGymEnv(deals=MAX_EPISODE_DEALS).deals
    kinds = {f.name: f.metadata["kind"] for f in dataclasses.fields(PPOArgs)}
    assert kinds["deals_per_episode"].high == MAX_EPISODE_DEALS
    play = next(a for a in build_parser()._subparsers._group_actions[0].choices["play"]._actions
                if a.dest == "deals")
    assert play.type.high == MAX_EPISODE_DEALS


def test_a_random_first_deal_that_ends_the_session_at_its_turnup_is_dealt_again() -> None:
    """Credit off, few counters: a random first deal ending at a turned-up Pope can leave the next dealer broke.
    reset() deals a fresh session then (it used to raise, and roll the generator back so that every later
    unseeded reset() replayed the same deal and was refused for ever)."""
    from popejoan_env.envs.pettingzoo_aec import raw_env

    e = raw_env(players=3, rules={"preset": "victorian", "allow_credit": False, "start_counters": 20})
    e.reset(seed=0)
    for _ in range(300):
        e.reset()
        assert not e.deal.done and not any(e.terminations.values())
