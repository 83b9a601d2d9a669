"""The recipe's stages kept on disk as they finish, so a run cut short resumes from its last finished one.

``popejoan train`` imitates the search (round 0), then plays ``--rounds`` rounds of policy improvement: round
``k``'s rollout games are played by round ``k - 1``'s network, which then learns their values.  After each
stage the network is written to ``<run>/rounds/round_<k>.zip`` and the stage's record to
``<run>/rounds/state.json`` (format ``popejoan-rounds/1``), both atomically: the state names every finished
round, its file's SHA-256, its record and its learning-curve points, and the flags that shape the network.

``--resume`` reads that state back and continues after its last round, with the same data and the same
arithmetic as a run that was never stopped (each round's games and training are seeded by the round alone).
It is refused, in one line that names the file and the reason, when the state is not a state of this kind, when
its rounds were trained with another popejoan, numpy or torch, when a flag that shapes the network differs from
the run's, when a round's file is missing or is not the file the state names, or when the run has more finished
rounds than ``--rounds`` asks for.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import stat
import sys
from typing import Any

from popejoan_env.checks import brief, split_list
from popejoan_env.errors import PopeJoanError
from popejoan_env.files import OutputPathError, file_sha256, held_versions, versions_changed, write_atomic
from popejoan_env.nets.model_file import read_model
from popejoan_env.training.common import flag_of

FORMAT = "popejoan-rounds/1"
"""The state file's format and version."""
DIRECTORY = "rounds"
"""Where a run keeps its finished rounds, inside the run directory."""
STATE = "state.json"
"""The state file's name, in ``DIRECTORY``."""
MAX_STATE_BYTES = 64 * 2**20
"""The largest state file read back (a state of 100 rounds with their curves is well under a megabyte)."""
MAX_ROUND_SECONDS = 10**8
"""Most seconds of training one round may have taken, by a state file (about three years)."""
MAX_DEPTH = 6
"""Deepest nesting of a round's record or learning-curve points in a state file (what a run writes needs 4)."""
HOW = frozenset({"resume", "rounds", "progress", "tensorboard", "imitate_workers", "backend", "address", "quick",
                 "run_name", "output_dir"})
"""The flags that say how or where a run is played, not what it learns: they may change on --resume (more rounds,
other workers or backend: the same data)."""


NOT_NETWORK = frozenset({"run_name", "package_version", "timesteps"})
"""The metadata of a round's file that may differ from the resuming run's (its name, the package's version)."""


class ResumeError(PopeJoanError):
    """A run's saved rounds cannot be resumed with these flags (the message names the file and why)."""


def stage(k: int, start_model: str) -> str:
    """Round ``k``'s name in the learning curve: round 0 is the imitation, or the start model when a file gives it."""
    if k:
        return f"round {k}"
    return "start model" if start_model else "imitation"


def seeds(seed: int, k: int) -> tuple[int, int]:
    """Round ``k``'s seeds (``k >= 1``): of its rollout games, and of its training's shuffles."""
    return seed + 40_000 + 1_000 * (k - 1), seed + 2 + 1_000 * (k - 1)


GONE = {"rollout_belief": "uniform", "rollout_play": "search", "rollout_field": ""}
"""Flags of recipes measured and not kept, gone in 0.3.0 (commit ``GONE_AT`` has them), with the value that trains as
every run now does: a saved run with that value resumes, one with another is refused."""
GONE_AT = "21b19f4"
"""The commit that last had the flags of ``GONE``."""


def identity(args: Any) -> dict[str, Any]:
    """The flags of ``args`` (a dataclass) that shape the network: every one but ``HOW``."""
    return {k: v for k, v in dataclasses.asdict(args).items() if k not in HOW}



@dataclasses.dataclass
class Rounds:
    """A run's finished stages: round 0 (the imitation) and the rounds of policy improvement after it."""

    run_dir: str
    identity: dict[str, Any]
    done: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """Each finished round: ``round``, ``model`` (its file, relative to the run), ``sha256``, ``record`` (what
    run.json says of it) and ``evals`` (its learning-curve points)."""
    versions: dict[str, str | None] = dataclasses.field(default_factory=held_versions)
    """The versions the rounds were trained with (``files.held_versions``): a resume is held to them."""

    @property
    def directory(self) -> str:
        """``<run>/rounds``."""
        return os.path.join(self.run_dir, DIRECTORY)

    @property
    def path(self) -> str:
        """The state file."""
        return os.path.join(self.directory, STATE)

    def model(self, k: int) -> str:
        """Round ``k``'s network file."""
        return os.path.join(self.directory, f"round_{k}.zip")

    @classmethod
    def start(cls, run_dir: str, args: Any) -> Rounds:
        """A new run: no round finished (an earlier run's rounds in this directory are removed)."""
        rounds = cls(run_dir, identity(args))
        if os.path.isdir(rounds.directory):
            for name in os.listdir(rounds.directory):
                if name == STATE or (name.startswith("round_") and name.endswith(".zip")):
                    os.remove(os.path.join(rounds.directory, name))
        return rounds

    @classmethod
    def resume(cls, run_dir: str, args: Any, network: dict[str, Any] | None = None) -> Rounds:
        """The run's finished rounds, checked against ``args`` (a ``ResumeError`` says what does not fit) and, with
        ``network`` (the metadata this run saves with a round), the last round's file against it."""
        rounds = cls(run_dir, identity(args))
        path = rounds.path
        if not os.path.isfile(path):
            why = "is not a regular file" if os.path.lexists(path) else "does not exist"
            raise ResumeError(f"--resume: {path} {why}: this run has no finished round to resume from")
        state = _load(path)
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            raise ResumeError(f"--resume: {path} is not a {FORMAT} state")
        theirs, done = state.get("identity"), state.get("done")
        if not isinstance(theirs, dict) or not isinstance(done, list) or not done:
            raise ResumeError(f"--resume: {path} holds no identity or no finished round")
        versions = state.get("versions", {})  # a state written before they were kept names none
        if not isinstance(versions, dict):
            raise ResumeError(f"--resume: {path} holds versions {brief(versions)}, not an object of versions")
        changed = versions_changed(versions)
        if changed:
            last = rounds.model(len(done) - 1)
            raise ResumeError(f"--resume: this run's rounds were trained with other versions ({changed}), and a "
                              "resumed run trains what an unstopped one would only with the same: resume with "
                              f"those, or start a new run from its last round (--start-model {last})")
        for key in sorted(set(theirs) - set(rounds.identity)):
            if key not in GONE:
                raise ResumeError(f"--resume: {path} names {brief(key)}, which is no flag of this command")
            if not _same(theirs[key], GONE[key]):
                raise ResumeError(f"--resume: this run was trained with {flag_of(key)} {brief(theirs[key])}, a flag "
                                  f"that went in 0.3.0: commit {GONE_AT} resumes it")
        for key in sorted(rounds.identity):
            mine, run = rounds.identity[key], theirs.get(key, "(absent)")
            if not _same(run, mine):
                raise ResumeError(f"--resume: {flag_of(key)} is {brief(run)} in this run ({path}) and {brief(mine)} "
                                  "now: give the run's own flags")
        if len(done) - 1 > getattr(args, "rounds"):
            raise ResumeError(f"--resume: this run has {len(done) - 1} finished rounds and --rounds "
                              f"{getattr(args, 'rounds')} asks for fewer")
        for k, entry in enumerate(done):
            why = _entry_fault(entry, k, rounds.identity)
            if why:
                raise ResumeError(f"--resume: {path}: round {k}'s entry is not what the state's rounds hold ({why})")
            model = rounds.model(k)
            if not os.path.isfile(model) or file_sha256(model) != entry["sha256"]:
                raise ResumeError(f"--resume: {model} is missing or is not the file {path} names (SHA-256)")
        if network is not None:
            last = rounds.model(len(done) - 1)
            theirs_meta, _ = read_model(last, weights=False)
            for key in sorted(set(network) | set(theirs_meta)):
                if key not in NOT_NETWORK and theirs_meta.get(key) != network.get(key):
                    raise ResumeError(f"--resume: {last} is not a network of this run's flags: its {key} is "
                                      f"{brief(theirs_meta.get(key))}, this run's {brief(network.get(key))}")
        rounds.done = done
        return rounds

    def finish(self, k: int, save: Any, record: dict[str, Any], evals: list[dict[str, Any]]) -> str:
        """Round ``k`` is done: ``save(path)`` writes its network (atomically), then the state names it."""
        if k != len(self.done):
            raise ValueError(f"round {k} finished after {len(self.done)} rounds")
        os.makedirs(self.directory, exist_ok=True)
        model = self.model(k)
        save(model)
        self.done.append({"round": k, "model": os.path.relpath(model, self.run_dir), "sha256": file_sha256(model),
                          "record": record, "evals": evals})
        write_atomic(self.path, json.dumps({"format": FORMAT, "identity": self.identity, "versions": self.versions,
                                            "done": self.done}, indent=1) + "\n")
        return model


def check_place(run_dir: str) -> None:
    """Refuse, before anything is removed or played, a run directory whose rounds could not be kept: ``rounds``
    that is not a directory, or a state or round file that is one (an ``OutputPathError``)."""
    directory = os.path.join(run_dir, DIRECTORY)
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise OutputPathError(f"cannot keep the rounds in {directory}: it is not a directory")
    if os.path.isdir(directory):
        for name in sorted(os.listdir(directory)):
            if (name == STATE or (name.startswith("round_") and name.endswith(".zip"))) \
                    and os.path.isdir(os.path.join(directory, name)):
                raise OutputPathError(f"cannot write {os.path.join(directory, name)}: it is a directory")


def _same(run: Any, mine: Any) -> bool:
    """A flag's value in the state equals the one given now, of the same JSON type (``true`` is not ``1``)."""
    if isinstance(mine, (list, tuple)):
        return isinstance(run, list) and len(run) == len(mine) and all(_same(a, b) for a, b in zip(run, mine))
    if isinstance(mine, (int, float)) and not isinstance(mine, bool):  # 1 and 1.0 are one number
        return isinstance(run, (int, float)) and not isinstance(run, bool) and run == mine
    return type(run) is type(mine) and run == mine


def _number(x: Any, low: float, high: float, whole: bool = False) -> bool:
    """A JSON number (never a bool) from ``low`` to ``high``, a whole one with ``whole``."""
    if isinstance(x, bool) or not isinstance(x, int if whole else (int, float)):
        return False
    if isinstance(x, float) and not math.isfinite(x):
        return False
    return low <= x <= high  # an int is compared exactly: no conversion to a float that could overflow


def _plain_fault(value: Any, depth: int = 0) -> str:
    """Why ``value`` is not plain JSON of the state (finite numbers, at most ``MAX_DEPTH`` deep), or ''."""
    if depth > MAX_DEPTH:
        return f"nested more than {MAX_DEPTH} levels deep (MAX_DEPTH)"
    if isinstance(value, dict):
        return next((why for v in value.values() if (why := _plain_fault(v, depth + 1))), "")
    if isinstance(value, list):
        return next((why for v in value if (why := _plain_fault(v, depth + 1))), "")
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and not _number(value, -sys.float_info.max, sys.float_info.max):
        return f"{brief(value)} is not a finite number"
    return ""


def _entry_fault(entry: Any, k: int, flags: dict[str, Any]) -> str:
    """Why round ``k``'s entry is not one this run (``flags``: its identity) writes, or ''."""
    keys = ("round", "model", "sha256", "record", "evals")
    if not isinstance(entry, dict) or sorted(entry) != sorted(keys):
        return f"an object of {', '.join(keys)}"
    if type(entry["round"]) is not int or entry["round"] != k:
        return f"round {brief(entry['round'])}"
    if entry["model"] != os.path.join(DIRECTORY, f"round_{k}.zip"):
        return f"model {brief(entry['model'])}"
    if not isinstance(entry["sha256"], str) or not re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]):
        return f"sha256 {brief(entry['sha256'])}"
    record, evals = entry["record"], entry["evals"]
    if not isinstance(record, dict) or not isinstance(evals, list):
        return "a record that is not an object, or learning-curve points that are not a list"
    plain = _plain_fault(record) or _plain_fault(evals)
    if plain:
        return plain
    if not _number(record.get("seconds"), 0, MAX_ROUND_SECONDS):
        return f"seconds {brief(record.get('seconds'))}, not from 0 to {MAX_ROUND_SECONDS:,} (MAX_ROUND_SECONDS)"
    deals = (0 if flags.get("start_model") else flags.get("imitate_deals")) if k == 0 else flags.get("rollout_deals")
    if record.get("deals") != deals or type(record.get("deals")) is not int:
        return f"deals {brief(record.get('deals'))}, where this run plays {deals} a round"
    if not _number(record.get("decisions"), 0, sys.maxsize, whole=True):
        return f"decisions {brief(record.get('decisions'))}"
    name = stage(k, str(flags.get("start_model") or ""))
    opponents = split_list(str(flags.get("eval_opponents", "")))
    for row in evals:
        if not isinstance(row, dict) or row.get("stage") != name or not _number(row.get("epoch"), 0, 10**6, True) \
                or not _number(row.get("train_seconds"), 0, MAX_ROUND_SECONDS * 1001) \
                or not isinstance(row.get("results"), dict) or sorted(row["results"]) != sorted(opponents) \
                or not all(isinstance(r, dict) and _number(r.get("diff_mean"), -1e9, 1e9)
                           and _number(r.get("diff_ci95"), 0, 1e9) for r in row["results"].values()):
            return f"a learning-curve point {brief(row)}, not one of {name} against {', '.join(opponents)}"
    return ""


def _no_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once (two could be read differently by two readers)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("a key is given twice")
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number of a state file")


def _load(path: str) -> Any:
    """The JSON of a state file that is a regular file of at most ``MAX_STATE_BYTES`` (a ``ResumeError`` if not)."""
    try:
        found = os.stat(path)
        if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_STATE_BYTES:
            raise ResumeError(f"--resume: {path} is not a regular file of at most {MAX_STATE_BYTES:,} bytes "
                              "(MAX_STATE_BYTES): not a state of rounds")
        with open(path, "rb") as fh:
            text = fh.read(MAX_STATE_BYTES + 1)  # bounded: the file may have grown since it was measured
        if len(text) > MAX_STATE_BYTES:
            raise ResumeError(f"--resume: {path} is larger than {MAX_STATE_BYTES:,} bytes: not a state of rounds")
        return json.loads(text.decode("utf-8"), object_pairs_hook=_no_twice, parse_constant=_no_constant)
    except RecursionError:
        raise ResumeError(f"--resume: {path} cannot be read as JSON (nested too deep)") from None
    except ResumeError:
        raise  # a refusal of its own above (a ValueError too), not a file that "cannot be read as JSON"
    except (OSError, ValueError) as err:  # unreadable, not UTF-8, not JSON, a huge integer, a key twice, NaN
        why = " ".join(str(err).split())[:200] or type(err).__name__
        raise ResumeError(f"--resume: {path} cannot be read as JSON ({why})") from None
