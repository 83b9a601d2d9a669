"""The command line (``python -m popejoan_env simulate|verify``), run as subprocesses."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from popejoan_env.__main__ import COMMANDS, main
from popejoan_env.record import FORMAT, read_records, verify_record


def run(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """``python -m popejoan_env ARGS`` in a subprocess (stderr is not a tty: no progress bar)."""
    return subprocess.run(
        [sys.executable, "-m", "popejoan_env", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
    )


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A small file written by ``simulate`` (5-player victorian, sessions of 3 deals)."""
    cwd = tmp_path_factory.mktemp("sim")
    result = run(
        "simulate", "--players", "5", "--preset", "victorian", "--deals", "40", "--seed", "7",
        "--session-length", "3", "--out", "deals.jsonl", cwd=cwd,
    )
    assert result.returncode == 0, result.stderr
    assert "40 deals" in result.stdout and "plays/s" in result.stdout and "deals.jsonl" in result.stdout
    assert result.stderr == ""
    return cwd / "deals.jsonl"


def test_simulate_writes_one_record_per_deal(simulated: pathlib.Path) -> None:
    records = [r for _, r in read_records(simulated)]
    assert len(records) == 40
    assert all(r["format"] == FORMAT and r["players"] == 5 for r in records)
    assert all(r["rules"]["preset"] == "victorian" and r["seed"] == 7 for r in records)
    assert [r["deal_index"] for r in records] == list(range(40))
    # The dealer passes left across session boundaries too.
    assert [r["dealer"] for r in records] == [k % 5 for k in range(40)]
    assert [r["session"] for r in records] == [k // 3 for k in range(40)]
    for before, after in zip(records, records[1:]):
        if after["session"] == before["session"]:
            assert after["board_before"] == before["board_after"]
        else:  # a new session: fresh balances and an empty board
            assert after["balances_before"] == [48] * 5
            assert not any(after["board_before"].values())
    for record in records:
        verify_record(record)


def test_simulate_is_deterministic(simulated: pathlib.Path, tmp_path: pathlib.Path) -> None:
    result = run(
        "simulate", "--players", "5", "--preset", "victorian", "--deals", "40", "--seed", "7",
        "--session-length", "3", "--out", "again.jsonl", "--quiet", cwd=tmp_path,
    )
    assert result.returncode == 0 and result.stdout == ""
    assert (tmp_path / "again.jsonl").read_bytes() == simulated.read_bytes()


def test_verify_accepts_simulated_file(simulated: pathlib.Path) -> None:
    result = run("verify", str(simulated), cwd=simulated.parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "40 records verified"


def test_verify_names_tampered_record(simulated: pathlib.Path, tmp_path: pathlib.Path) -> None:
    lines = simulated.read_text().splitlines()
    record = json.loads(lines[12])
    record["delta"][0] += 1
    lines[12] = json.dumps(record)
    lines.insert(3, "")  # a blank line: record 13 is now on line 14
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    result = run("verify", str(bad), cwd=tmp_path)
    assert result.returncode == 1
    assert "record 13 (line 14)" in result.stderr and "delta[0]" in result.stderr
    assert "Traceback" not in result.stderr
    result = run("verify", "--keep-going", str(bad), str(simulated), cwd=tmp_path)
    assert result.returncode == 1
    assert "79 records verified, 1 failed in 2 files" in result.stderr


def test_verify_names_corrupt_line(simulated: pathlib.Path, tmp_path: pathlib.Path) -> None:
    cut = tmp_path / "cut.jsonl"
    data = simulated.read_text()
    cut.write_text(data[: len(data) // 2])  # an interrupted writer
    result = run("verify", str(cut), cwd=tmp_path)
    assert result.returncode == 1
    assert "cut.jsonl, line " in result.stderr and "truncated" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["simulate", "--preset", "edwardian", "--out", "x.jsonl"], "unknown rules preset 'edwardian'"),
        (["simulate", "--rules-option", "colour=red", "--out", "x.jsonl"], "unknown rules option(s) ['colour']"),
        (["simulate", "--rules-option", "lead=highest", "--out", "x.jsonl"], "lead='highest' is not allowed"),
        (["simulate", "--rules-option", "lead", "--out", "x.jsonl"], "KEY=VALUE"),
        (["simulate", "--players", "9", "--out", "x.jsonl"], "argument --players: invalid value: '9' (an integer 3..8 is needed)"),
        (["simulate", "--deals", "0", "--out", "x.jsonl"], "argument --deals: invalid value: '0' (an integer 1..1,000,000,000"),
        (["simulate", "--seed", "-1", "--out", "x.jsonl"], "argument --seed: invalid value: '-1' (an integer 0..2,147,483,647"),
        (["simulate", "--session-length", "0", "--out", "x.jsonl"], "argument --session-length: invalid value: '0'"),
        (
            ["simulate", "--rules-option", "allow_credit=false", "--rules-option", "start_counters=3",
             "--out", "x.jsonl"],
            "no deal can start",
        ),
        (["simulate", "--out", "no/such/dir/x.jsonl"], "No such file or directory"),
        (["simulate", "--deals", "ten", "--out", "x.jsonl"], "invalid int value: 'ten'"),
        (["simulate"], "--out"),
        (["verify", "missing.jsonl"], "No such file or directory: missing.jsonl"),
        (["verify"], "FILE"),
        (["shuffle"], "invalid choice: 'shuffle'"),
        ([], "COMMAND"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    args: list[str], message: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        raise SystemExit(main(args))
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "x.jsonl").exists()


def test_bad_arguments_in_a_subprocess(tmp_path: pathlib.Path) -> None:
    result = run("simulate", "--preset", "edwardian", "--out", "x.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "popejoan simulate: error: unknown rules preset 'edwardian'; presets are ['modern', 'victorian']"
    ]
    result = run("verify", "nowhere.jsonl", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_rules_options_reach_the_records(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "custom.jsonl.gz"
    status = main([
        "simulate", "--players", "3", "--deals", "12", "--seed", "3", "--quiet", "--out", str(out),
        "--rules-option", "pair_split=halves", "--rules-option", "ace_high=true",
        "--rules-option", 'dressing={"pope": 8, "game": 2}',
    ])
    assert status == 0 and capsys.readouterr().out == ""
    records = [r for _, r in read_records(out)]
    assert len(records) == 12
    rules = records[0]["rules"]
    assert rules["preset"] == "custom" and rules["pair_split"] == "halves" and rules["ace_high"] is True
    assert rules["dressing"]["pope"] == 8 and rules["dressing"]["matrimony"] == 0
    assert main(["verify", str(out)]) == 0
    assert capsys.readouterr().out.strip() == "12 records verified"


def test_version_names_the_installed_package() -> None:
    """``popejoan --version`` prints the package's version and exits 0, as ``popejoan_env.__version__`` gives it."""
    from popejoan_env import __version__

    result = subprocess.run([sys.executable, "-m", "popejoan_env", "--version"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and result.stdout == f"popejoan {__version__}\n"
    assert __version__ != "0+unknown"  # the test install is the package's own metadata


def test_help_lists_every_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "popejoan_env", "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    for command in COMMANDS:
        assert command.name in result.stdout
    result = subprocess.run(
        [sys.executable, "-m", "popejoan_env", "simulate", "--help"], capture_output=True, text=True, timeout=60
    )
    assert "--rules-option" in result.stdout and "--session-length" in result.stdout


# A Ctrl-C while the console command's modules load: the console script (``popejoan``) imports
# ``popejoan_env.__main__`` and calls its ``main``; this child does the same with a KeyboardInterrupt raised by the
# import of one module, as the signal would raise it there.
_INTERRUPT_AT_IMPORT = """
import importlib.abc, sys
class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == sys.argv[1]:
            raise KeyboardInterrupt
        return None
sys.meta_path.insert(0, Interrupt())
from popejoan_env.__main__ import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize(("module", "argv"), [
    ("popejoan_env.simulate", ["verify", "--help"]),  # the command line's own imports
    ("popejoan_env.evaluate.command", ["verify", "--help"]),  # the parser's (evaluate's flags)
    ("popejoan_env.evaluate.exploit", ["simulate", "--help"]),  # the parser's (exploit's flags)
])
def test_ctrl_c_while_the_command_loads_is_one_line_and_130(module: str, argv: list[str]) -> None:
    result = subprocess.run([sys.executable, "-c", _INTERRUPT_AT_IMPORT, module, *argv],
                            capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stderr, result.stdout) == (130, "popejoan: interrupted\n", "")
