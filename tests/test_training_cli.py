"""Every training command as a user runs it, both as ``popejoan <command>`` and as the repository's
``python training/<script>.py``: ``--help`` lists every flag of its ``Args`` with help and default, and a mistyped
flag or value is one line on stderr and exit status 2, with nothing written."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAINING = os.path.join(ROOT, "training")

from popejoan_env.training import COMMANDS  # noqa: E402

SCRIPTS = sorted(name[:-3] for name in os.listdir(TRAINING)
                 if name.endswith(".py") and 'if __name__ == "__main__":' in open(os.path.join(TRAINING, name)).read())
SCRIPT_COMMAND = {command.script[:-3]: name for name, command in COMMANDS.items()}
"""Each wrapper in ``training/`` and the ``popejoan`` command it runs."""
NEEDS = {"train_mappo": ("torchrl", "pip install -e '.[marl]'")}
"""Scripts whose module imports an optional package beyond the train extra: (package, how to install it)."""


def _needs(script: str) -> None:
    """Skip a test of a script whose extra is not installed, saying which."""
    if script in NEEDS:
        pytest.importorskip(NEEDS[script][0], reason=NEEDS[script][1])


def _run(script: str, *flags: str, cwd: str, how: str = "script") -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "100000"}  # --help on one line a flag: argparse wraps help at hyphens too
    if how == "script":
        cmd = [sys.executable, os.path.join(TRAINING, f"{script}.py")]
    else:
        cmd = [sys.executable, "-m", "popejoan_env", SCRIPT_COMMAND[script]]
    return subprocess.run([*cmd, *flags], capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


@functools.lru_cache(maxsize=None)
def _help(script: str, how: str) -> subprocess.CompletedProcess:
    """``--help`` of a script or its command, run once for the tests that read it (run from the tests' folder)."""
    return _run(script, "--help", cwd=os.path.dirname(os.path.abspath(__file__)), how=how)


def _args(script: str) -> list[dataclasses.Field]:
    module = importlib.import_module(f"popejoan_env.training.{COMMANDS[SCRIPT_COMMAND[script]].module}")
    return list(dataclasses.fields(module.Args))


def test_the_scripts_are_the_six_the_readme_runs_each_a_popejoan_command() -> None:
    assert SCRIPTS == ["benchmark", "cleanrl_ppo", "learner_throughput", "train_mappo", "train_ppo", "train_rllib"]
    assert sorted(SCRIPT_COMMAND) == SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_script_in_training_is_a_thin_wrapper_of_its_command(script: str) -> None:
    text = open(os.path.join(TRAINING, f"{script}.py")).read()
    assert len(text.splitlines()) <= 10 and f'run_command("{SCRIPT_COMMAND[script]}")' in text


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_lists_every_flag_with_its_help_and_default(script: str, tmp_path) -> None:
    _needs(script)
    done = _help(script, "script")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for f in _args(script):
        assert "--" + f.name.rstrip("_").replace("_", "-") in text, f.name
        assert " ".join(f.metadata["help"].split()) in text, f.name
    own = sum(_empty_default(f) and "default" in f.metadata["help"] for f in _args(script))  # it says it itself
    assert text.count("(default: ") >= len(_args(script)) - own


def _empty_default(f: dataclasses.Field) -> bool:
    """Whether a flag's default is None, '' or [], which its --help must not show bare."""
    default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
    return default is None or default == "" or default == []


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_never_shows_a_bare_empty_default(script: str) -> None:
    """No '(default: None)' after 'default: random,...', no '(default: )' nor '(default: [])'."""
    _needs(script)
    done = _help(script, "script")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for bare in ("(default: None)", "(default: )", "(default: [])"):
        assert bare not in text, (script, bare)


@pytest.mark.parametrize("script", SCRIPTS)
def test_popejoan_command_help_is_the_scripts_help_under_its_name(script: str, tmp_path) -> None:
    _needs(script)
    done = _help(script, "command")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: popejoan {SCRIPT_COMMAND[script]} ")
    wrapped = _help(script, "script")
    assert done.stdout[done.stdout.index("\noptions:"):] == wrapped.stdout[wrapped.stdout.index("\noptions:"):]


def _words(text: str) -> str:
    """A text with its line breaks and runs of spaces as single spaces, in lower case."""
    return " ".join(text.split()).lower()


def test_the_sizes_the_main_jobs_help_and_the_pages_give_are_its_defaults_and_quicks() -> None:
    from popejoan_env.training import ppo

    default = {f.name: f.default for f in dataclasses.fields(ppo.Args)}
    samples = default["imitate_player"].partition(":samples=")[2]
    description = _words(ppo.__doc__.split("\n\n")[0])  # the --help text above the flags
    for phrase in (f"{default['imitate_deals']:,} deals of the pimc search with {samples} worlds",
                   f"{default['imitate_epochs']} epochs of imitation",
                   f"{default['rollout_deals']:,} deals of the search",
                   f"{default['rollout_epochs']} epochs learning its values"):
        assert phrase in description, f"popejoan train --help does not say {phrase!r}: its defaults changed"
    quick = (f"imitation of {ppo.QUICK['imitate_deals']:,} `pimc` deals, one round of the rollout stage on "
             f"{ppo.QUICK['rollout_deals']:,} deals")
    for page in ("README.md", "docs/getting_started.md", "docs/training.md"):
        text = _words(open(os.path.join(ROOT, page), encoding="utf-8").read())
        assert quick in text, f"{page} does not say what --quick runs: {quick!r}"


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_bad_flag_or_value_is_one_line_and_exit_2(script: str, tmp_path, capsys) -> None:
    _needs(script)
    fields = _args(script)
    first_int = next(f for f in fields if f.type == "int")
    cases = [(["--no-such-flag", "1"], "unrecognized arguments"),
             (["--" + first_int.name.replace("_", "-"), "x"], "invalid int value: 'x'")]
    floats = [f for f in fields if f.type == "float"]
    if floats:
        flag = "--" + floats[0].name.rstrip("_").replace("_", "-")
        cases += [([flag, "nan"], "invalid float value: 'nan'"), ([flag, "inf"], "invalid float value: 'inf'")]
    # The first two cases as a user meets them, in a process of their own, through the script (and the second
    # through ``popejoan <command>``); every case through the command's own parser in this process (a process costs a torch
    # import, ~2 s: tests/test_flags.py feeds every numeric flag the same way).
    for (flags, says), how in [(cases[0], "script"), (cases[1], "script"), (cases[1], "command")]:
        done = _run(script, *flags, cwd=str(tmp_path), how=how)
        assert done.returncode == 2, (flags, done.stderr)
        assert len(done.stderr.splitlines()) == 1 and says in done.stderr, (flags, done.stderr)
        prog = f"{script}.py" if how == "script" else f"popejoan {SCRIPT_COMMAND[script]}"
        assert done.stderr.startswith(f"{prog}: error: "), done.stderr
        assert "Traceback" not in done.stderr and "usage:" not in done.stderr
    module = importlib.import_module(f"popejoan_env.training.{COMMANDS[SCRIPT_COMMAND[script]].module}")
    for flags, says in cases:
        with pytest.raises(SystemExit) as stop:
            module.parse_flags(module.Args, flags, "")
        err = capsys.readouterr().err
        assert stop.value.code == 2 and len(err.splitlines()) == 1 and says in err, (flags, err)
    assert not os.listdir(tmp_path), "nothing is written before the flags are checked"


def _processes_of(group: int) -> list[str]:
    return subprocess.run(["pgrep", "-g", str(group)], capture_output=True, text=True).stdout.split()


@pytest.mark.parametrize(("argv", "says"), [
    (["-m", "popejoan_env", "train", "--quick", "--imitate-deals", "40000", "--imitate-workers", "2", "--no-progress"],
     "popejoan train"),  # games long enough to be interrupted in them on a loaded machine
    ([os.path.join(TRAINING, "benchmark.py"), "--players", "random,lowest,stops_first", "--deals", "100000",
      "--workers", "2", "--no-progress"], "benchmark.py"),
    (["-m", "popejoan_env", "evaluate", "random", "--quick", "--opponents", "lowest,stops_first,pool_hunter",
      "--workers", "2", "--quiet"], "popejoan evaluate"),
])
def test_ctrl_c_is_one_line_and_exit_130_and_leaves_no_worker(argv: list[str], says: str, tmp_path) -> None:
    """Ctrl-C reaches every process of the command (the terminal signals its process group): before, train and
    benchmark ended in a traceback (and evaluate's forked workers printed one each), status -2."""
    import signal
    import time

    out = ["--output-dir", str(tmp_path)] if "train" in argv else ["--out", str(tmp_path / "r")]
    # the command starts with Ctrl-C's default action, as from a terminal: a test runner started in the background
    # (CI, xdist's workers) ignores SIGINT, and a child Python keeps an ignored SIGINT ignored
    proc = subprocess.Popen([sys.executable, *argv, *out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while len(_processes_of(proc.pid)) < 3 and time.monotonic() < deadline:  # its two workers are at work
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()
        time.sleep(1)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        # on a cold numba cache (a fresh install) the first compile is announced first: it is not the interruption
        from popejoan_env.search.kernel_cache import FIRST_COMPILE

        lines = [line for line in err.strip().splitlines() if line != FIRST_COMPILE.strip()]
        assert proc.returncode == 130 and lines == [f"{says}: interrupted"], (proc.returncode, err[-2000:])
        deadline = time.monotonic() + 20
        while _processes_of(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _processes_of(proc.pid)
    finally:
        if _processes_of(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)


CTRL_C_IN_A_FORK = """
import os, signal
from popejoan_env import cli
fired = []
def after_in_parent():
    if not fired:  # Ctrl-C lands while the first worker is forked: its handler runs in this at-fork handler
        fired.append(1)
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000):
            pass
os.register_at_fork(after_in_parent=after_in_parent)
try:
    with cli.fork_pool(2) as pool:
        pool.map(abs, [-1, -2])
    print("finished")
except KeyboardInterrupt:
    print("interrupted")
"""


def test_ctrl_c_while_a_worker_is_forked_interrupts_the_command() -> None:
    """Raised inside an at-fork handler, a KeyboardInterrupt is reported as ignored and the command ran on to its
    end, status 0 (a flaky failure of the Ctrl-C test above on a loaded machine): fork_pool notes it and raises it."""
    import signal

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", CTRL_C_IN_A_FORK], capture_output=True, text=True, timeout=120,
                          env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert done.stdout.strip() == "interrupted", (done.stdout, done.stderr[-2000:])


FLAG_LISTS = [("train", "docs/training.md", "Training knobs:"), ("train-rllib", "docs/ray.md", "Flags (`--help`")]
"""The paragraphs that list every flag of a training command: its name, the page and how the paragraph begins."""


def _flag_list(page: str, start: str) -> str:
    """The paragraph of ``page`` that begins with ``start``."""
    text = open(os.path.join(ROOT, page), encoding="utf-8").read()
    begin = text.index(start)
    return text[begin:text.index("\n\n", begin)]


def _option(field: dataclasses.Field) -> str:
    """The flag a field of ``Args`` is read as (``lambda_`` is ``--lambda``)."""
    return "--" + field.name.rstrip("_").replace("_", "-")


@pytest.mark.parametrize(("name", "page", "start"), FLAG_LISTS, ids=[name for name, _, _ in FLAG_LISTS])
def test_the_docs_list_of_a_commands_flags_names_each_flag_under_its_heading_and_default(
        name: str, page: str, start: str) -> None:
    module = importlib.import_module(f"popejoan_env.training.{COMMANDS[name].module}")
    fields = dataclasses.fields(module.Args)
    paragraph = _flag_list(page, start)
    named = set(re.findall(r"`(--[a-z][a-z-]*)", paragraph))
    missing = [_option(f) for f in fields if _option(f) not in named]
    assert not missing, f"{page}: the list of {name}'s flags leaves out {missing}"
    unknown = sorted(named - {_option(f) for f in fields} - {"--help"})
    assert not unknown, f"{page}: the list of {name}'s flags names {unknown}, which {name} does not take"
    headings = re.split(r"\*\*([^*]+)\*\*:", paragraph)
    for heading, part in zip(headings[1::2], headings[2::2]):
        for flag in re.findall(r"`(--[a-z][a-z-]*)", re.sub(r"\([^()]*\)", "", part)):
            field = next(f for f in fields if _option(f) == flag)
            group = field.metadata["group"] or ""
            assert group.lower().startswith(heading.lower()), (
                f"{page}: {flag} is listed under {heading!r}, --help lists it under {group!r}")
    for flag, stated in re.findall(r"`(--[a-z][a-z-]*)[^`]*`\s\(`?([\w.,:=-]+)`?[;:)]", paragraph):
        default = next(f.default for f in fields if _option(f) == flag)
        assert _states(stated, default), f"{page}: {flag} ({stated}), where its default is {default!r}"


def _states(stated: str, default: object) -> bool:
    """Whether a default as a page writes it (``60,000``, ``3e-4``, ``none`` for empty) is ``default``."""
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        try:
            return float(stated.replace(",", "")) == default
        except ValueError:
            return False
    return stated == (str(default) or "none")


def test_a_file_that_fails_during_a_run_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    # After the checks before the work, a write can still fail (a full disk, a folder removed): it was a traceback.
    import errno

    from popejoan_env.training.common import run_script

    def fails(argv: list[str] | None) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "models/run/model.zip")

    with pytest.raises(SystemExit) as done:
        run_script(fails, [], prog="popejoan train")
    err = capsys.readouterr().err
    assert done.value.code == 1 and err == "popejoan train: error: No space left on device: models/run/model.zip\n"


def test_a_rename_that_fails_during_a_run_names_its_destination(capsys: pytest.CaptureFixture[str]) -> None:
    # os.replace(tmp, path) failing names both; the temporary file is already gone, so the line names the destination
    import errno

    from popejoan_env.training.common import run_script

    def fails(argv: list[str] | None) -> None:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), "models/.model.zip.1a2b.tmp", None, "models/model.zip")

    with pytest.raises(SystemExit) as done:
        run_script(fails, [], prog="popejoan train")
    assert done.value.code == 1 and capsys.readouterr().err.endswith(": models/model.zip\n")
