"""Output files: atomic writes leave the old file whole on failure, and a bad destination is refused early."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from popejoan_env import files

from popejoan_env.errors import PopeJoanError
from popejoan_env.files import OutputPathError, check_writable, replacing, write_atomic

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_write_atomic_replaces_the_file_and_leaves_nothing_else(tmp_path) -> None:
    path = tmp_path / "result.json"
    path.write_text("old")
    assert write_atomic(str(path), "new text") == str(path)
    assert path.read_text() == "new text"
    write_atomic(str(path), b"\x00bytes")
    assert path.read_bytes() == b"\x00bytes"
    assert os.listdir(tmp_path) == ["result.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path) -> None:
    path = tmp_path / "chart.png"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with replacing(str(path)) as tmp:
            with open(tmp, "w") as fh:
                fh.write("half a fi")
            raise RuntimeError("the disk filled")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["chart.png"]


def test_check_writable_creates_directories_and_refuses_impossible_ones(tmp_path) -> None:
    check_writable([str(tmp_path / "a" / "b" / "x.json")])
    assert (tmp_path / "a" / "b").is_dir() and not os.listdir(tmp_path / "a" / "b")
    (tmp_path / "f").write_text("")
    with pytest.raises(OutputPathError, match="cannot write"):
        check_writable([str(tmp_path / "f" / "x.json")])
    (tmp_path / "d.json").mkdir()
    with pytest.raises(OutputPathError, match="is a directory"):
        check_writable([str(tmp_path / "d.json")])
    with pytest.raises(PopeJoanError):
        check_writable(["/proc/version.json"])


@pytest.mark.parametrize("out", ["", "   ", ".", "..", "adir/", "/"])
def test_a_path_or_prefix_that_ends_in_no_name_is_refused_and_nothing_is_written(tmp_path, monkeypatch, out) -> None:
    # `popejoan benchmark --out /` wrote /.json, /.md and /.png; `--out .` ..json; a model path '' ./.zip.
    from popejoan_env.__main__ import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputPathError, match="ends in no file name"):
        check_writable([out])
    with pytest.raises(OutputPathError, match="ends in no name"):
        files.check_prefix(out)
    for argv in (["benchmark", "--no-progress", "--deals", "2", "--players", "random,lowest", "--out", out],
                 ["evaluate", "random", "--deals", "50", "--opponents", "lowest", "--quiet", "--out", out]):
        try:
            status = main(argv)
        except SystemExit as exit_:  # benchmark's flags are refused by its parser
            status = exit_.code
        assert status == 2, argv
    assert not os.listdir(tmp_path)
    files.check_prefix("results/ladder")  # a name: accepted


# ------------------------------------------------------------------ temporary files: unpredictable, exclusive
def test_temporary_names_are_unpredictable_and_the_file_exists_before_it_is_handed_out(tmp_path) -> None:
    names = set()
    for _ in range(3):
        with replacing(str(tmp_path / "out.json")) as tmp:
            assert os.path.isfile(tmp) and os.path.dirname(tmp) == str(tmp_path)
            names.add(os.path.basename(tmp))
    assert len(names) == 3
    assert os.listdir(tmp_path) == ["out.json"]


def test_a_symlink_planted_at_the_temporary_name_is_never_followed(tmp_path, monkeypatch) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    tokens = iter(["0" * 16, "1" * 16])
    monkeypatch.setattr(files.secrets, "token_hex", lambda n: next(tokens))
    trap = tmp_path / f".out.json.{'0' * 16}.tmp"
    trap.symlink_to(victim)
    write_atomic(str(tmp_path / "out.json"), "result")  # the planted name is skipped, a fresh one is used
    assert victim.read_text() == "precious" and trap.is_symlink()
    assert (tmp_path / "out.json").read_text() == "result"
    monkeypatch.setattr(files.secrets, "token_hex", lambda n: "0" * 16)
    with pytest.raises(OutputPathError, match="fresh temporary names"):
        write_atomic(str(tmp_path / "out.json"), "again")
    assert victim.read_text() == "precious" and (tmp_path / "out.json").read_text() == "result"


def test_the_written_file_gets_the_mode_the_umask_allows(tmp_path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(str(tmp_path / "a.txt"), "x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o640


# ------------------------------------------------------------------ a process killed mid-write
WRITER = """
import sys, time
from popejoan_env.files import replacing
from popejoan_env.record import RecordWriter
target, how = sys.argv[1], sys.argv[2]
if how == "records":
    with RecordWriter(target) as writer:
        writer.write({"half": "a record"})
        writer._file.flush()
        print("writing", flush=True)
        time.sleep(60)
else:
    with replacing(target) as tmp:
        with open(tmp, "w") as fh:
            fh.write("half a fi")
            fh.flush()
            print("writing", flush=True)
            time.sleep(60)
"""


@pytest.mark.parametrize("how", ["replacing", "records"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGINT])
def test_a_signal_mid_write_leaves_the_old_file_and_no_temporary(tmp_path, how, signum) -> None:
    target = tmp_path / ("out.jsonl" if how == "records" else "out.json")
    target.write_text("old")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    # The child gets the signal at its default, as from a shell in the foreground: under nohup or in a background
    # job, SIGHUP, SIGINT and SIGQUIT are inherited ignored, and a process that ignores them rightly writes on.
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(target), how], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env,
                             preexec_fn=lambda: signal.signal(signum, signal.SIG_DFL))
    try:
        assert child.stdout.readline() == "writing\n"
        assert len(os.listdir(tmp_path)) == 2  # the temporary file is there, beside the old one
        child.send_signal(signum)
        child.wait(timeout=30)
    finally:
        child.kill()
        child.communicate()
    # The process ends as the signal asks (Python ends an uncaught KeyboardInterrupt by SIGINT too).
    assert child.returncode == -signum
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == [target.name]


CREATED_THEN_SIGNALLED = """
import os, signal, sys
from popejoan_env import files
made = files._create_temporary
def create_then_signalled(path):
    tmp = made(path)
    os.kill(os.getpid(), signal.SIGTERM)  # held back while the temporary file is created, delivered as that ends
    return tmp
files._create_temporary = create_then_signalled
files.write_atomic(sys.argv[1], "result")
"""


def test_a_signal_held_back_while_the_temporary_file_is_made_leaves_no_temporary(tmp_path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    child = subprocess.run([sys.executable, "-c", CREATED_THEN_SIGNALLED, str(target)], env=env, timeout=60,
                           preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    assert child.returncode == -signal.SIGTERM
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == [target.name]


def test_a_name_longer_than_the_file_system_holds_is_refused_before_the_work(tmp_path) -> None:
    # The temporary file's name is cut to 100 characters, so only the final os.replace met the long name: after the
    # work (simulate's every deal, a whole training run), naming a temporary file that no longer existed.
    long_name = str(tmp_path / ("d" * 300 + ".jsonl"))
    with pytest.raises(OutputPathError, match="300|306"):
        check_writable([long_name])
    assert os.listdir(tmp_path) == []
    check_writable([str(tmp_path / ("d" * 200 + ".jsonl"))])  # a long name that fits is still accepted
    assert os.listdir(tmp_path) == []


def test_simulate_refuses_a_name_too_long_before_playing(tmp_path) -> None:
    out = tmp_path / ("d" * 250 + ".jsonl")
    done = subprocess.run([sys.executable, "-m", "popejoan_env", "simulate", "--deals", "5", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "256 bytes" in done.stderr and ".tmp" not in done.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("char", ["é", "日", "\U0001f0a1"])
def test_a_name_of_many_bytes_a_character_that_passes_the_check_is_written(tmp_path, char) -> None:
    # check_writable passes a name of up to 255 bytes; the temporary file's name began with the name's first 100
    # characters, up to 400 bytes: ENAMETOOLONG at the write, after the work, for a name the check had passed
    size = len(char.encode())
    target = tmp_path / (char * ((250 - 6) // size) + ".jsonl")
    check_writable([str(target)])
    write_atomic(str(target), "ok")
    assert target.read_text() == "ok" and os.listdir(tmp_path) == [target.name]
