"""Every code block of the docs runs in a test, or says why not (``tests/doc_blocks.py`` finds the blocks and their
markers): Python blocks run in a fresh directory; shell blocks have every command of ours read by its real
argument parser (each flag exists, each value is accepted) and, unless marked ``flags-only`` (a run of minutes),
run there too; JSON blocks parse; a block that is none of these carries ``<!-- not-run: REASON -->``.  A whole
command of ours quoted inline in the prose (a figure's command) is read by its parser as well.

A block named by a marker (``<!-- tour -->``) is run by the test that names it, which also checks what it prints.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import pathlib
import re
import runpy
import shlex
import shutil
import subprocess
import sys
from typing import Any

import pytest

from doc_blocks import DOCS, ROOT, Block, Inline, all_blocks, all_inline_spans

sys.path.insert(0, str(DOCS / "_ext"))
from popejoan_docs import extras  # noqa: E402  (docs/_ext is not a package)
from popejoan_env.training import rounds  # noqa: E402
from popejoan_env.training.common import flag_of  # noqa: E402

BLOCKS = all_blocks()
TESTS = ROOT / "tests"
RUNNABLE = {"python", "bash", "json"}
"""Languages whose blocks a test checks; any other block needs a ``not-run`` marker."""
WAITS = {"play": "waits for a person at the terminal", "serve": "serves until it is stopped"}
"""``popejoan`` commands that never run in a test: their flags are read, nothing more."""
OTHERS = {"pip", "git", "cd", "mv", "ray", "apt-get"}
"""Commands that are not ours: recorded, not run (``pip install`` is checked for the extras it names)."""
OTHER_MODULES = {"pytest": "the test suite runs itself", "sphinx": "tests/test_docs.py builds the site",
                 "pip": "not ours"}
"""``python -m`` modules that are not ours, and why no block test runs them."""
RUN_TIMEOUT = 120
"""Seconds a command of a runnable shell block may take (the runnable ones take a few)."""


def block_id(block: Block) -> str:
    """A block's test id: its page and line."""
    return block.where


def of_lang(*langs: str) -> list[Block]:
    """The blocks of these languages."""
    return [b for b in BLOCKS if b.lang in langs]


# ------------------------------------------------------------------ every block is checked or says why not
def test_the_pages_have_the_blocks_this_file_checks() -> None:
    assert len(BLOCKS) >= 50 and len(of_lang("python")) >= 15 and len(of_lang("bash")) >= 25


@pytest.mark.parametrize("block", BLOCKS, ids=block_id)
def test_every_block_is_checked_or_says_why_not(block: Block) -> None:
    assert block.lang != "indented", f"{block.where}: an indented code block: fence it (```LANG) so it has a language"
    for kind in ("not-run", "flags-only", "file"):
        text = block.marked(kind)
        assert text != "", f"{block.where}: <!-- {kind}: ... --> needs its reason (or path) after the colon"
    if block.marked("not-run") is not None:
        return
    assert block.lang in RUNNABLE, (f"{block.where}: a {block.lang or 'language-less'} block runs in no test; "
                                    "give it a language this file runs or <!-- not-run: REASON -->")
    assert block.marked("flags-only") is None or block.lang == "bash", f"{block.where}: flags-only is for shell blocks"


def files_naming(name: str) -> list[str]:
    """The test files that name a block marker (``"tour"``), other than this file."""
    return [p.name for p in TESTS.glob("test_*.py") if p.name != pathlib.Path(__file__).name
            and f'"{name}"' in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.names], ids=block_id)
def test_a_named_block_is_named_by_a_test(block: Block) -> None:
    for name in block.names:
        assert files_naming(name), f"{block.where}: <!-- {name} --> is named by no test in tests/"


# ------------------------------------------------------------------ Python blocks
def page_files(block: Block, where: pathlib.Path) -> None:
    """Write every ``<!-- file: PATH -->`` block of the block's page into ``where``."""
    for other in BLOCKS:
        path = other.marked("file")
        if other.page == block.page and path:
            target = where / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(other.code, encoding="utf-8")


@contextlib.contextmanager
def in_directory(where: pathlib.Path):  # type: ignore[no-untyped-def]
    """Run with ``where`` as the working directory and first on ``sys.path`` (as ``python`` started there has it);
    modules imported from it are forgotten afterwards."""
    before, path = os.getcwd(), list(sys.path)
    os.chdir(where)
    sys.path.insert(0, str(where))
    try:
        yield
    finally:
        os.chdir(before)
        sys.path[:] = path
        for name, module in list(sys.modules.items()):
            if str(getattr(module, "__file__", None) or "").startswith(str(where)):
                del sys.modules[name]
        importlib.invalidate_caches()


def run_python(block: Block, where: pathlib.Path) -> dict[str, Any]:
    """Run a Python block in this process, in ``where`` (the page's files written there); its variables."""
    page_files(block, where)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    with in_directory(where):
        code = compile(block.code, block.where, "exec")
        try:
            exec(code, namespace)  # noqa: S102 - the docs' own code
        except ModuleNotFoundError as err:
            optional = {"pyspiel": "openspiel", "open_spiel": "openspiel", "ray": "ray", "torch": "train",
                        "stable_baselines3": "train", "sb3_contrib": "train", "fastapi": "web"}
            if (err.name or "").split(".")[0] in optional:
                pytest.skip(f"{block.where} needs the {optional[err.name.split('.')[0]]} extra")
            raise
    return namespace


PYTHON = [b for b in of_lang("python") if b.marked("not-run") is None and not b.names and b.marked("file") is None]


@pytest.mark.parametrize("block", PYTHON, ids=block_id)
def test_python_block_runs(block: Block, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_python(block, tmp_path)


@pytest.mark.parametrize("block", [b for b in of_lang("python") if b.marked("file")], ids=block_id)
def test_a_python_file_block_imports(block: Block, tmp_path: pathlib.Path) -> None:
    page_files(block, tmp_path)
    path = pathlib.Path(block.marked("file") or "")
    assert path.suffix == ".py", f"{block.where}: a Python file block is saved as a .py file, not {path}"
    with in_directory(tmp_path):
        importlib.import_module(".".join(path.with_suffix("").parts))


# ------------------------------------------------------------------ shell blocks
RECORDER = r"""
record() { printf '%s\0' "$@" >> "$RECORD"; printf '\036\0' >> "$RECORD"; }
command_not_found_handle() { record "$@"; return 0; }
cd() { record cd "$@"; }
"""
"""Shell functions that record every command a block would run instead of running it: with a ``PATH`` of one
directory that does not exist, every command that is not a shell builtin reaches ``command_not_found_handle``."""


def recorded(block: Block, where: pathlib.Path) -> list[list[str]]:
    """The commands a shell block runs, each as its words after the shell expanded them (loops unrolled, variables
    substituted), as bash itself reads the block; nothing is run."""
    log = where / ".commands"
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    out = subprocess.run([bash, "-c", RECORDER + block.code], capture_output=True, text=True, timeout=30, cwd=where,
                         env={"PATH": str(where / "no-commands"), "RECORD": str(log), "HOME": str(where)})
    assert out.returncode == 0 and not out.stderr, f"{block.where}: bash cannot read the block:\n{out.stderr}"
    words = log.read_text(encoding="utf-8").split("\0") if log.exists() else []
    commands, current = [], []
    for word in words[:-1]:
        if word == "\036":
            commands.append(current)
            current = []
        else:
            current.append(word)
    return commands


def ours(command: list[str]) -> tuple[str, list[str]] | None:
    """What a command of ours is (``popejoan``, a script's path under the checkout, or ``-c``) and its arguments;
    None for a command that is not ours.  An unknown command fails the test."""
    name, args = command[0], command[1:]
    if name == "popejoan":
        return "popejoan", args
    if name in ("python", "python3"):
        if args[:1] == ["-m"] and args[1:2] == ["popejoan_env"]:
            return "popejoan", args[2:]
        if args[:1] == ["-m"]:
            assert args[1] in OTHER_MODULES, f"python -m {args[1]}: a module this file does not know"
            return None
        if args[:1] == ["-c"]:
            return "-c", args[1:]
        assert args and args[0].split("/")[0] in ("training", "benchmarks"), f"{command}: not a script of ours"
        return args[0], args[1:]
    assert name in OTHERS, f"{command}: a command this file does not know (ours, or one of {sorted(OTHERS)})"
    return None


def extras_named(command: list[str]) -> list[str]:
    """The extras a ``pip install`` of this project names (``-e ".[a,b]"``, ``'popejoan[a]'``)."""
    names = []
    for word in command[command.index("install") + 1:]:
        if word.startswith((".[", "popejoan[")) and word.endswith("]"):
            names += word[word.index("[") + 1:-1].split(",")
    return names


class Parsed(BaseException):
    """Raised by the argument parser once it accepted the command line: the command goes no further."""


def parse_only(kind: str, args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Read a command of ours with its real argument parser, and stop there; a refusal fails the test with the
    parser's own one-line message."""
    if kind == "-c":
        compile(args[0], "python -c", "exec")
        return
    read = argparse.ArgumentParser.parse_args

    def stop(self: argparse.ArgumentParser, *a: Any, **k: Any) -> Any:
        raise Parsed(read(self, *a, **k))

    stderr = io.StringIO()
    with monkeypatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", stop)
        try:
            with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
                if kind == "popejoan":
                    from popejoan_env.__main__ import main

                    main(args)
                else:
                    patch.setattr(sys, "argv", [str(ROOT / kind), *args])
                    runpy.run_path(str(ROOT / kind), run_name="__main__")
        except Parsed:
            return
        except SystemExit as exit:
            message = stderr.getvalue().strip()
            if "is not installed" in message:
                pytest.skip(message)
            raise AssertionError(f"{kind} {' '.join(args)}: refused ({exit.code}): {message}") from None
        except ModuleNotFoundError as err:
            pytest.skip(f"{kind} needs {err.name}")
    raise AssertionError(f"{kind} {' '.join(args)} ran without reading its flags with an argument parser")


def argv(kind: str, args: list[str]) -> list[str]:
    """The command line that runs a command of ours from any directory, in this interpreter."""
    if kind == "popejoan":
        return [sys.executable, "-m", "popejoan_env", *args]
    if kind == "-c":
        return [sys.executable, "-c", *args]
    return [sys.executable, str(ROOT / kind), *args]


SHELL = [b for b in of_lang("bash") if b.marked("not-run") is None]
RAN: dict[str, str] = {}
"""The code of each shell block run so far in this process, and where: a block repeated on another page runs once."""


@pytest.mark.parametrize("block", SHELL, ids=block_id)
def test_shell_block_commands_of_ours_are_accepted_and_the_cheap_ones_run(
        block: Block, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    known = {name for name, _, _ in extras((ROOT / "pyproject.toml").read_text(encoding="utf-8"))}
    runs = []
    for command in recorded(block, tmp_path):
        if command[:2] == ["pip", "install"] or command[:4] == ["python", "-m", "pip", "install"]:
            unknown = [e for e in extras_named(command) if e not in known]
            assert not unknown, f"{block.where}: pip installs extras pyproject.toml does not have: {unknown}"
        what = ours(command)
        if what is None:
            continue
        kind, args = what
        parse_only(kind, args, monkeypatch)
        if kind == "popejoan" and args[:1] and args[0] in WAITS:
            continue
        runs.append(argv(kind, args))
    if block.marked("flags-only") is not None or not runs:
        return
    if block.code in RAN:
        return  # the same commands ran for RAN[block.code]
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    for command in runs:
        out = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=tmp_path,
                             env=environment)
        assert out.returncode == 0, f"{block.where}: {' '.join(command[1:])} failed:\n{out.stderr[-2000:]}"
    RAN[block.code] = block.where


# ------------------------------------------------------------------ commands in the prose
GONE = {**dict.fromkeys(("--oracle-critic", "--imitate-temperature", "--imitate-augment", "--improve-deals",
                         "--improve-player", "--improve-epochs", "--init-model", "--anchor-kl"), "4c192b1"),
        **{flag_of(name): rounds.GONE_AT for name in rounds.GONE}}
"""The flags of recipes measured and not kept, which went in 0.3.0, each with the commit that last had it: a page
may quote a command with one, naming that commit (0.2.0's recipes, then the rounds' of 0.3.0's work)."""
PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9]*(,[A-Z][A-Z0-9]*)*|[0-9]+[A-Z]|.*[<>\[\]…].*|.*\.\.\..*")
"""A word that stands for a value the reader chooses (``--seed S``, ``--players A,B``, ``<run>``, ``16W``): a
command with one is a template, read with each such value taken as given (``CHOSEN``) and its flags checked."""
ELISION = ("...", "…")
"""A word that stands for words left out (``popejoan train ... --start-model M``): dropped, and what the parser
then requires is supplied."""
CHOSEN = "<chosen>"
"""What a placeholder is read as: any value of its flag (the parser converts and checks nothing of it)."""


def prose_command(span: Inline) -> tuple[str, list[str]] | None:
    """What an inline span of prose is as a whole command of ours (``popejoan NAME ...``, ``python -m popejoan_env
    NAME ...``, ``python training/X.py ...``, ``python benchmarks/X.py ...``) and its arguments; None for anything
    else (a module's name, a message, a template)."""
    from popejoan_env.__main__ import COMMANDS
    from popejoan_env.training import COMMANDS as TRAINING

    try:
        words = shlex.split(span.code)
    except ValueError:
        return None
    if words[:3] == ["python", "-m", "popejoan_env"]:
        words = ["popejoan", *words[3:]]
    words = [word.removeprefix("[").removesuffix("]") for word in words]  # ``[--address A]``: an optional flag
    elided = [word for word in words if word not in ELISION]
    words = [*elided, *ELISION[:1]] if len(elided) < len(words) else words  # an elision is noted once, at the end
    words = [CHOSEN if PLACEHOLDER.fullmatch(word) and word not in ELISION else word for word in words]
    # ``popejoan NAME``: a command of ours, whatever NAME is (one that is not there, or is no more, is refused)
    if words[:1] == ["popejoan"] and len(words) > 1 and (words[1] in {c.name for c in COMMANDS} | set(TRAINING)
                                                          or re.fullmatch(r"[a-z][a-z0-9_-]*", words[1])):
        return "popejoan", words[1:]
    if words[:1] in (["python"], ["python3"]) and len(words) > 1 and words[1].split("/")[0] in ("training",
                                                                                                 "benchmarks"):
        assert (ROOT / words[1]).is_file(), f"{span.where}: `{span.code}` names a script that is not there"
        return words[1], words[2:]
    return None


PROSE = [(span, found) for span in all_inline_spans() if (found := prose_command(span)) is not None]


def test_the_pages_quote_the_commands_this_file_reads() -> None:
    assert len(PROSE) >= 150, len(PROSE)
    assert sum(kind != "popejoan" for _, (kind, _) in PROSE) >= 50


@pytest.mark.parametrize("span, found", PROSE, ids=[f"{span.where}:{k}" for k, (span, _) in enumerate(PROSE)])
def test_a_command_quoted_in_the_prose_is_accepted_by_its_parser(
        span: Inline, found: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A figure's command, or any whole command a page quotes inline, still parses: each flag exists and each value
    is accepted.  A command that only names the command or a flag (``popejoan evaluate``, ``popejoan exploit
    --worlds``) is read with what it leaves out supplied; one with a flag that went in 0.3.0 is on a page that says
    which commit runs it."""
    kind, args = found
    if "--help" in args:
        return
    elided = args[-1:] == list(ELISION[:1])
    args = args[:-1] if elided else args
    get_value, check_value = argparse.ArgumentParser._get_value, argparse.ArgumentParser._check_value
    monkeypatch.setattr(argparse.ArgumentParser, "_get_value",  # a placeholder is any value its flag takes
                        lambda self, action, text: text if text == CHOSEN else get_value(self, action, text))
    monkeypatch.setattr(argparse.ArgumentParser, "_check_value",
                        lambda self, action, value: None if value == CHOSEN else check_value(self, action, value))
    gone = [word for word in args if word.split("=")[0] in GONE]
    if gone:
        for commit in {GONE[word.split("=")[0]] for word in gone}:
            assert commit in span.page.read_text(encoding="utf-8"), (
                f"{span.where}: `{span.code}` uses {gone}, which went in 0.3.0: say that commit {commit} runs it")
        return
    def refusal(words: list[str]) -> str:
        try:
            parse_only(kind, words, monkeypatch)
        except AssertionError as refused:
            return str(refused)
        return ""

    said = refusal(args)
    if "expected one argument" in said and args[-1].startswith("--"):
        args = args[:-1]  # a flag named in the prose, without its value
        said = refusal(args)
    required = re.search(r"the following arguments are required: (.*?)(?: \(see --help\))?$", said)
    rest = args[1:] if kind == "popejoan" else args
    mention = elided or not rest or (rest[0].startswith("-") and len(rest) <= 2)  # ``popejoan exploit --worlds``
    if required is not None and mention:  # a whole command that leaves out what its parser requires is broken
        supplied = [word for name in required.group(1).split(", ")
                    for word in ([name, "x"] if name.startswith("-") else ["x"])]
        said = refusal([*args[:1], *supplied, *args[1:]] if kind == "popejoan" else [*supplied, *args])
    assert not said, f"{span.where}: `{span.code}`: {said}"


def test_a_quoted_command_with_a_flag_that_is_not_there_fails_its_test(monkeypatch: pytest.MonkeyPatch) -> None:
    page = ROOT / "docs" / "evaluation.md"
    for code, says in [("popejoan evaluate shipped --quik", "unrecognized arguments: --quik"),
                       ("popejoan exploit --worldz", "unrecognized arguments"),
                       ("python training/benchmark.py --players a,b --deals many", "invalid int value"),
                       ("python training/train_ppo.py --imitate-augment", "went in 0.3.0")]:
        span = Inline(page if "augment" not in code else ROOT / "docs" / "views.md", 1, code)
        found = prose_command(span)
        assert found is not None
        with pytest.raises(AssertionError, match=says):
            test_a_command_quoted_in_the_prose_is_accepted_by_its_parser(span, found, monkeypatch)
    for code, says in [  # a template's flags, a command's name, and what a whole command must give are read too
            ("python training/benchmark.py --players A,B --deals 10000 --seed S --worker-count 2",
             "unrecognized arguments: --worker-count"),
            ("popejoan evaluate models/mappo/model.zip --seats N --quik", "unrecognized arguments: --quik"),
            ("popejoan evaluat shipped --quick", "invalid choice: 'evaluat'"),
            ("popejoan evaluate --quick --seats 3 --opponents random", "required: AGENT"),
            ("python training/train_ppo.py --run-name shipped ... --start-modle M", "unrecognized arguments")]:
        span = Inline(page, 1, code)
        found = prose_command(span)
        assert found is not None, code
        with pytest.raises(AssertionError, match=says):
            test_a_command_quoted_in_the_prose_is_accepted_by_its_parser(span, found, monkeypatch)
    for template in ("python training/benchmark.py --players A,B --seed S", "popejoan exploit MODEL --worlds W",
                     "popejoan train --backend ray [--address A]", "python -m popejoan_env evaluate ...",
                     "popejoan exploit MODEL --deals 50 --worlds W --draws 16W --workers 2"):
        span = Inline(page, 1, template)
        found = prose_command(span)
        assert found is not None, template
        test_a_command_quoted_in_the_prose_is_accepted_by_its_parser(span, found, monkeypatch)
    for other in ("popejoan: interrupted", "popejoan_env.moved", "popejoan …", "python -m popejoan_env …"):
        assert prose_command(Inline(page, 1, other)) is None


# ------------------------------------------------------------------ JSON blocks
@pytest.mark.parametrize("block", [b for b in of_lang("json") if b.marked("not-run") is None], ids=block_id)
def test_json_block_parses(block: Block) -> None:
    json.loads(block.code)


# ------------------------------------------------------------------ the checks above can fail
def test_the_parsers_refuse_an_unknown_flag_or_a_bad_value_of_each_kind_of_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    parse_only("popejoan", ["simulate", "--deals", "10000", "--out", "deals.jsonl"], monkeypatch)
    for kind, args, says in [("popejoan", ["simulate", "--deals", "many", "--out", "-"], "invalid int value"),
                             ("popejoan", ["evaluate", "shipped", "--quik"], "unrecognized arguments"),
                             ("popejoan", ["train", "--imitate-dealz", "5"], "unrecognized arguments"),
                             ("training/benchmark.py", ["--deals", "0"], "is needed"),
                             ("benchmarks/bench_engine.py", ["--players", "two"], "invalid"),
                             ("-c", ["print('unclosed)"], "unterminated")]:
        with pytest.raises((AssertionError, SyntaxError), match=says):
            parse_only(kind, args, monkeypatch)


def test_a_shell_block_is_read_by_bash_and_nothing_in_it_runs(tmp_path: pathlib.Path) -> None:
    code = ('for seats in 3 5; do popejoan simulate --players $seats --out "d $seats.jsonl"; done\n'
            'rm -rf ~ && python training/train_ppo.py \\\n    --quick   # a comment\n'
            'cd elsewhere; pip install -e ".[bench]"\n')
    block = Block(ROOT / "README.md", 1, "bash", code, ())
    assert recorded(block, tmp_path) == [
        ["popejoan", "simulate", "--players", "3", "--out", "d 3.jsonl"],
        ["popejoan", "simulate", "--players", "5", "--out", "d 5.jsonl"],
        ["rm", "-rf", str(tmp_path)], ["python", "training/train_ppo.py", "--quick"],
        ["cd", "elsewhere"], ["pip", "install", "-e", ".[bench]"]]
    assert extras_named(["pip", "install", "-e", ".[bench]"]) == ["bench"]
    with pytest.raises(AssertionError, match="does not know"):
        ours(["rm", "-rf", str(tmp_path)])
    assert sorted(p.name for p in tmp_path.iterdir()) == [".commands"]  # nothing was written but the record


def test_markers_are_read_from_the_comments_right_before_a_block(tmp_path: pathlib.Path) -> None:
    from doc_blocks import blocks

    page = tmp_path / "page.md"
    page.write_text("<!-- not-run: a reason -->\n\ntext\n\n```python\nx = 1\n```\n\n"
                    "<!-- flags-only: long -->\n<!-- main-command -->\n```bash\npopejoan verify x\n```\n\n"
                    "    indented\n\n```{toctree}\nindex\n```\n\n<!-- not-run -->\n```text\nx\n```\n",
                    encoding="utf-8")
    first, second, third, fourth = blocks(page)
    assert first.markers == () and first.lang == "python"
    assert second.marked("flags-only") == "long" and second.names == ["main-command"]
    assert third.lang == "indented"
    assert fourth.marked("not-run") == "" and fourth.names == []  # a reason is required: the test refuses it
    with pytest.raises(AssertionError, match="needs its reason"):
        test_every_block_is_checked_or_says_why_not(fourth)
    with pytest.raises(AssertionError, match="an indented code block"):
        test_every_block_is_checked_or_says_why_not(third)
