"""What the training commands share: flags from a dataclass, one-line refusals, the run directory, torch
threads, evaluation against scripted players, the learning curve and ``run.json``.

Every command keeps its knobs in one ``Args`` dataclass whose fields carry their ``--help`` text (``arg``) and
reads them with ``parse_flags`` (``parse_given`` also says which flags were given, so a quick mode, ``with_quick``,
never overrides one); a bad flag or value is one line on stderr and exit status 2 (``refuse``), never argparse's
usage dump nor a traceback, and Ctrl-C is one line and exit status 130.  A command runs as ``popejoan <command>``
or as the repository's ``python training/<script>.py`` (a thin wrapper); ``run_script`` names it either way in
errors and ``run.json``.
"""

from __future__ import annotations

import argparse
import contextvars
import dataclasses
import json
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from popejoan_env.cli import Integer, Number, OneLineParser, file_failed, fork_pool, interrupted, reader_gone
from popejoan_env.errors import PopeJoanError
from popejoan_env.files import check_writable, save_png, write_atomic
from popejoan_env.nets.model_file import MAX_NETWORK_VALUES, RUN_MODEL, mlp_values, zip_path  # noqa: F401 - shared
from popejoan_env.players import make_player
from popejoan_env.players.learned import LearnedPlayer
from popejoan_env.tournament import TournamentResult, run_duplicate

A = TypeVar("A")

RUN_JSON = "run.json"
"""The record of a run, beside its model: arguments, rules, versions, seed, evaluations."""

MAX_ROLLOUT_VALUES = 2**28
"""Most observation (and state) values, float32, a rollout of train-cleanrl, train-mappo or train-rllib may hold:
1 GiB, as many again for the copy its update takes, so a run stays within a few GiB of memory; 50 times the
defaults' rollouts (train-cleanrl's 4,096 decisions, train-mappo's 4,000 frames), far past what trains well on one
machine."""


def check_network(flag: str, values: int, network: str = "a network") -> None:
    """Refuse ``flag`` (as typed, with its value) when its layers make a network of more than ``MAX_NETWORK_VALUES``
    values, which no model file holds: counted before any tensor is allocated."""
    if values > MAX_NETWORK_VALUES:
        raise PopeJoanError(f"{flag} makes {network} of {values:,} values; a model file holds at most "
                            f"{MAX_NETWORK_VALUES:,} (MAX_NETWORK_VALUES): choose narrower layers")

PROG: contextvars.ContextVar[str | None] = contextvars.ContextVar("PROG", default=None)
"""The name a running command goes by (``popejoan train``); None: the script's own file name (argparse's default)."""


# ---------------------------------------------------------------------- the flags
def arg(default: Any, help: str, kind: Integer | Number | None = None, group: str | None = None,
        **argparse_kwargs: Any) -> Any:
    """A dataclass field that is a flag: its default, its --help text, the kind of number it takes (every int and
    float flag has one: ``cli.Integer``/``cli.Number``, checked when the command line is read, before any work), the
    heading it is listed under in --help (``group``) and any further ``add_argument`` keywords."""
    if kind is not None:
        argparse_kwargs = {"type": kind, **argparse_kwargs}
    metadata = {"help": help, "argparse": argparse_kwargs, "kind": kind, "group": group}
    if isinstance(default, list):  # a dataclass needs a factory for a mutable default
        return dataclasses.field(default_factory=lambda: list(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


FLAG_TYPES: dict[str, Any] = {"str": str}
"""How a text field's annotation (a string: the commands use ``from __future__ import annotations``) reads its value;
an int or float field reads through its ``kind``."""


class DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's ``(default: ...)`` after each flag's help, but never a bare ``None``, ``''`` or ``[]``."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        """The help text and its default: none added where an empty default's help already says what it means."""
        text = action.help or ""
        if action.default is None or action.default == "" or action.default == []:
            return text if "default" in text else text + " (default: none)"
        return super()._get_help_string(action)


def flag_of(field: str) -> str:
    """The command-line flag of a dataclass field: ``--field-name`` (a trailing ``_`` dropped: ``lambda_`` is
    ``--lambda``)."""
    return "--" + field.rstrip("_").replace("_", "-")


def flag_parser(cls: type, description: str, given_only: bool = False) -> OneLineParser:
    """The command line of a dataclass: ``--field-name`` per field (a trailing ``_`` dropped: ``lambda_`` is
    ``--lambda``), bools as ``--x/--no-x``, each with its help text and default, under its field's heading
    (``given_only``: no defaults, so the parsed namespace holds only the flags the command line gave)."""
    parser = OneLineParser(prog=PROG.get(), description=description,
                           formatter_class=DefaultsFormatter)
    groups: dict[str, Any] = {}  # the --help headings, in the order of their first field
    for f in dataclasses.fields(cls):
        heading = f.metadata.get("group")
        if heading is not None and heading not in groups:
            groups[heading] = parser.add_argument_group(heading)
        where = parser if heading is None else groups[heading]
        flag = flag_of(f.name)
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        kwargs = {"dest": f.name, "default": argparse.SUPPRESS if given_only else default,
                  "help": f.metadata["help"].replace("%", "%%"), **f.metadata["argparse"]}  # argparse formats with %
        if "action" not in kwargs and f.type == "bool":
            kwargs["action"] = argparse.BooleanOptionalAction
        elif "action" not in kwargs and "type" not in kwargs:
            if str(f.type) not in FLAG_TYPES:
                raise TypeError(f"{cls.__name__}.{f.name} is a number flag without a kind (arg(..., kind=...))")
            kwargs["type"] = FLAG_TYPES[str(f.type)]
        where.add_argument(flag, **kwargs)
    return parser


def parse_flags(cls: type[A], argv: list[str] | None, description: str) -> A:
    """The dataclass ``cls`` filled from the command line (``argv``, or ``sys.argv[1:]`` when None)."""
    return cls(**vars(flag_parser(cls, description).parse_args(argv)))


def parse_given(cls: type[A], argv: list[str] | None, description: str) -> tuple[A, frozenset[str]]:
    """``parse_flags``, and the fields whose flags the command line gave (whatever their value: a flag given
    equal to its default is given all the same)."""
    args = parse_flags(cls, argv, description)  # a bad flag is refused here, once
    given = flag_parser(cls, description, given_only=True).parse_args(argv)
    return args, frozenset(vars(given))


def check_given_address(address: str, given: frozenset[str]) -> None:
    """Refuse an ``--address`` given empty: it names no cluster (left out, the command starts a local Ray), and
    ``simulate``, ``tournament`` and ``evaluate`` refuse it the same way (``cluster.check_address``)."""
    if "address" in given and not address:
        from popejoan_env.cluster import check_address

        check_address(address)


def with_quick(args: A, given: frozenset[str], quick: dict[str, Any]) -> A:
    """``args`` with a quick mode's ``quick`` values in every field whose flag the command line did not give."""
    return dataclasses.replace(args, **{k: v for k, v in quick.items() if k not in given})  # type: ignore[type-var]


def refuse(message: str, status: int = 2) -> NoReturn:
    """Exit with ``status`` (2: a refused input) and ``<script>: error: <message>`` as one line on stderr."""
    parser = OneLineParser(prog=PROG.get())
    if status == 2:
        parser.error(message)
    parser.exit(status, f"{parser.prog}: error: {' '.join(message.splitlines())}\n")


def run_script(main: Callable[[list[str] | None], Any], argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run a command's ``main`` on ``argv`` (default ``sys.argv[1:]``) as ``prog``: a PopeJoanError (a refused
    flag, Ray out of reach ...) is ``refuse``d, not a traceback, Ctrl-C is one line and ``cli.INTERRUPTED``, a
    closed stdout (``| head``) stops quietly with status 1, and a file that fails during the run (a full disk, a
    folder removed) is one line with status 1; returns the exit status ``main`` gives (0 if none)."""
    token = PROG.set(prog)
    try:
        status = main(argv)
    except PopeJoanError as err:
        refuse(str(err))
    except BrokenPipeError:
        return reader_gone()
    except OSError as err:  # after the checks before the work: the run failed, it was not refused
        refuse(file_failed(err), status=1)
    except KeyboardInterrupt:
        return interrupted(OneLineParser(prog=prog).prog)
    finally:
        PROG.reset(token)
    return status if isinstance(status, int) else 0


# ---------------------------------------------------------------------- the run's directory and record
def check_run_name(name: str) -> None:
    """Refuse a ``--run-name`` that is not a plain name (a directory made in ``--output-dir``)."""
    if not name.strip() or name in (".", "..") or any(sep and sep in name for sep in (os.sep, os.altsep)):
        raise PopeJoanError(f"--run-name must be a plain name (a directory made in --output-dir), got {name!r}")


def make_run_dir(output_dir: str, run_name: str) -> str:
    """``<output-dir>/<run-name>``, created, with ``model.zip`` and ``run.json`` writable there (an
    OutputPathError, a PopeJoanError, if not)."""
    run_dir = os.path.join(output_dir, run_name)
    check_writable([os.path.join(run_dir, RUN_MODEL), os.path.join(run_dir, RUN_JSON)])
    return run_dir


def command(script: str, argv: list[str] | None) -> str:
    """The command that ran: ``popejoan <command> ...`` or ``python training/<script> ...``, as ``run.json``
    records it."""
    prog = PROG.get() or f"python training/{script}"
    return f"{prog} " + " ".join(sys.argv[1:] if argv is None else argv)


def check_model_path(model_path: str, example: str) -> None:
    """Refuse a ``--model-path`` that names no file (``dir/`` would be saved as the hidden ``dir/.zip``)."""
    if not os.path.basename(zip_path(model_path))[:-len(".zip")].strip():
        raise PopeJoanError(f"--model-path must name a file (e.g. {example}), got {model_path!r}")


def model_destination(model_path: str) -> str:
    """The file a ``--model-path`` is saved as (``zip_path``), checked writable with ``run.json`` beside it, and an
    earlier run's record there removed (``clear_beside``), before the run."""
    path = zip_path(model_path)
    check_writable([path, os.path.join(os.path.dirname(os.path.abspath(path)), RUN_JSON)])
    clear_beside(path)
    return path


def clear_beside(model_path: str) -> None:
    """Remove the ``run.json`` and TensorBoard events (``tb/``) an earlier run left beside ``model_path``: a run stopped
    after it saved its model (in its final evaluation) must not leave another run's record beside it, nor add its
    curves to another run's."""
    import glob

    from popejoan_env.files import remove_stale

    folder = os.path.dirname(os.path.abspath(model_path))
    remove_stale(os.path.join(folder, RUN_JSON))
    for path in glob.glob(os.path.join(folder, "tb", "events.out.tfevents.*")):
        remove_stale(path)


def write_run_json(run_dir: str, run: dict[str, Any]) -> str:
    """Write ``<run_dir>/run.json`` atomically; returns its path."""
    return write_atomic(os.path.join(run_dir, RUN_JSON), json.dumps(run, indent=1))


def set_torch_threads(threads: int) -> None:
    """Torch's CPU threads (0: torch's own default)."""
    import torch

    if threads > 0:
        torch.set_num_threads(threads)


# ---------------------------------------------------------------------- evaluation against scripted players
def evaluate(policy: Any, opponents: list[str], deals: int, seed: int, *, rules: Any, seats: int, name: str = "model",
             deal_seed: int | None = None, progress: bool = False, workers: int = 1) -> dict[str, dict[str, Any]]:
    """A duplicate tournament of ``policy`` (a ``learned.Policy``) against each scripted player, the players
    seeded with ``seed`` and the deals with ``deal_seed`` (default ``seed``): counters per deal, 95% CI.
    ``workers`` > 1: the opponents in that many forked processes (the same results)."""
    jobs = [(policy, other, deals, seed, rules, seats, name, seed if deal_seed is None else deal_seed,
             progress and workers == 1) for other in opponents]
    if workers > 1 and len(jobs) > 1:
        with fork_pool(min(workers, len(jobs))) as pool:
            rows = pool.starmap(_against, jobs)
    else:
        rows = [_against(*job) for job in jobs]
    return dict(zip(opponents, rows))


def _against(policy: Any, other: str, deals: int, seed: int, rules: Any, seats: int, name: str, deal_seed: int,
             progress: bool) -> dict[str, Any]:
    """``evaluate`` against one opponent."""
    learner = LearnedPlayer(policy, seed=seed, name=name)
    result = run_duplicate([learner, make_player(other, seed=seed)], deals=deals, seed=deal_seed, rules=rules,
                           seats=seats, progress=progress)
    return summarise(result, name, other)


def summarise(result: TournamentResult, me: str, other: str) -> dict[str, Any]:
    """The model's and the opponent's mean counters per deal (95% CI) and their difference, from a TournamentResult."""
    stats = {row["player"]: row for row in result.stats()}
    a, b = stats[me], stats[other]
    pair = result.head_to_head()[me][other]
    return {
        "deals": result.deals,
        "model_mean": a["mean"], "model_ci95": a["ci95"],
        "opponent_mean": b["mean"], "opponent_ci95": b["ci95"],
        "diff_mean": pair["mean"], "diff_ci95": pair["ci95"],
        "significant": bool(abs(pair["mean"]) > pair["ci95"]),
    }


def format_eval(rows: dict[str, dict[str, Any]]) -> str:
    """A small text table of an evaluation."""
    lines = [f"{'opponent':<14}{'model c/deal':>18}{'opponent c/deal':>18}{'model - opp':>18}"]
    for name, r in rows.items():
        diff = f"{r['diff_mean']:+.3f} ± {r['diff_ci95']:.3f}"
        lines.append(f"{name:<14}{r['model_mean']:>+11.3f} ± {r['model_ci95']:.3f}"
                     f"{r['opponent_mean']:>+11.3f} ± {r['opponent_ci95']:.3f}{diff:>18}")
    return "\n".join(lines)


def write_learning_curve(path: str, title: str, evals: list[dict[str, Any]], *, final: dict[str, Any],
                         train_seconds: float) -> str:
    """Model minus each scripted player (95% CI) against minutes of training, as a PNG written atomically:
    ``evals`` are ``{"train_seconds", "results"}`` rows (with ``stage``: a dotted line and its name where each stage
    starts), ``final`` the last results (at ``train_seconds``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8), dpi=110)
    names = list(dict.fromkeys([k for e in evals for k in e["results"]] + list(final)))
    colours = {name: f"C{i}" for i, name in enumerate(names)}
    for name in names:
        points = [(e["train_seconds"] / 60, e["results"][name]) for e in evals if name in e["results"]]
        if name in final:
            points.append((train_seconds / 60, final[name]))
        x = [t for t, _ in points]
        y = [r["diff_mean"] for _, r in points]
        err = [r["diff_ci95"] for _, r in points]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3, color=colours[name], label=f"model − {name}",
                    linestyle="-" if len(points) > 1 else "none")
    ax.axhline(0.0, color="grey", linewidth=0.8)
    starts = [(e["train_seconds"] / 60, e["stage"]) for k, e in enumerate(evals)
              if e.get("stage") and (k == 0 or evals[k - 1].get("stage") != e["stage"])]
    for k, (minute, stage) in enumerate(starts):  # where each stage of the recipe starts, and its name
        ax.axvline(minute, color="grey", linewidth=0.6, linestyle=":")
        ax.annotate(stage, (minute, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -2 - 9 * (k % 2)),
                    textcoords="offset points", fontsize=7, color="dimgrey", va="top")
    ax.set_xlabel("wall-clock minutes of training (the recipe's evaluations run beside it; waits left out)")
    ax.set_ylabel("counters per deal, model − opponent (95% CI)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_png(fig, path)
