"""The recipe's stages kept on disk as they finish, so a run cut short resumes from its last finished one.

``popejoan train`` imitates the search (round 0), then plays ``--rounds`` rounds of policy improvement: round
``k``'s rollout games are played by round ``k - 1``'s network, which then learns their values.  After each
stage the network is written to ``<run>/rounds/round_<k>.zip`` and the stage's record to
``<run>/rounds/state.json`` (format ``popejoan-rounds/1``), both atomically: the state names every finished
round, its file's SHA-256, its record and its learning-curve points, and the flags that shape the network.

``--resume`` reads that state back and continues after its last round, with the same data and the same
arithmetic as a run that was never stopped (each round's games and training are seeded by the round alone).
It is refused, in one line that names the file and the reason, when the state is not a state of this kind, when
a flag that shapes the network differs from the run's, when a round's file is missing or is not the file the
state names, or when the run has more finished rounds than ``--rounds`` asks for.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from typing import Any

from popejoan_env.errors import PopeJoanError
from popejoan_env.files import write_atomic

FORMAT = "popejoan-rounds/1"
"""The state file's format and version."""
DIRECTORY = "rounds"
"""Where a run keeps its finished rounds, inside the run directory."""
STATE = "state.json"
"""The state file's name, in ``DIRECTORY``."""
MAX_STATE_BYTES = 64 * 2**20
"""The largest state file read back (a state of 100 rounds with their curves is well under a megabyte)."""
HOW = frozenset({"resume", "rounds", "progress", "tensorboard", "imitate_workers", "backend", "address", "quick",
                 "run_name", "output_dir"})
"""The flags that say how or where a run is played, not what it learns: they may change on --resume (more rounds,
other workers or backend: the same data)."""


class ResumeError(PopeJoanError):
    """A run's saved rounds cannot be resumed with these flags (the message names the file and why)."""


def seeds(seed: int, k: int) -> tuple[int, int]:
    """Round ``k``'s seeds (``k >= 1``): of its rollout games, and of its training's shuffles."""
    return seed + 40_000 + 1_000 * (k - 1), seed + 2 + 1_000 * (k - 1)


def identity(args: Any) -> dict[str, Any]:
    """The flags of ``args`` (a dataclass) that shape the network: every one but ``HOW``."""
    return {k: v for k, v in dataclasses.asdict(args).items() if k not in HOW}


def sha256(path: str) -> str:
    """The SHA-256 of a file, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclasses.dataclass
class Rounds:
    """A run's finished stages: round 0 (the imitation) and the rounds of policy improvement after it."""

    run_dir: str
    identity: dict[str, Any]
    done: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """Each finished round: ``round``, ``model`` (its file, relative to the run), ``sha256``, ``record`` (what
    run.json says of it) and ``evals`` (its learning-curve points)."""

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
    def resume(cls, run_dir: str, args: Any) -> Rounds:
        """The run's finished rounds, checked against ``args`` (a ``ResumeError`` says what does not fit)."""
        rounds = cls(run_dir, identity(args))
        path = rounds.path
        if not os.path.isfile(path):
            raise ResumeError(f"--resume: {path} does not exist: this run has no finished round to resume from")
        if os.path.getsize(path) > MAX_STATE_BYTES:
            raise ResumeError(f"--resume: {path} is larger than {MAX_STATE_BYTES:,} bytes: not a state of rounds")
        try:
            with open(path, encoding="utf-8") as f:
                state = json.load(f)
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
            raise ResumeError(f"--resume: {path} cannot be read as JSON ({type(err).__name__})") from None
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            raise ResumeError(f"--resume: {path} is not a {FORMAT} state")
        theirs, done = state.get("identity"), state.get("done")
        if not isinstance(theirs, dict) or not isinstance(done, list) or not done:
            raise ResumeError(f"--resume: {path} holds no identity or no finished round")
        for key in sorted(set(theirs) | set(rounds.identity)):
            if theirs.get(key, "(absent)") != rounds.identity.get(key, "(absent)"):
                flag = "--" + key.replace("_", "-")
                raise ResumeError(f"--resume: {flag} is {theirs.get(key, '(absent)')!r} in this run ({path}) and "
                                  f"{rounds.identity.get(key, '(absent)')!r} now: give the run's own flags")
        for k, entry in enumerate(done):
            if not isinstance(entry, dict) or entry.get("round") != k or not isinstance(entry.get("sha256"), str) \
                    or not isinstance(entry.get("evals"), list) or not isinstance(entry.get("record"), dict):
                raise ResumeError(f"--resume: {path}: round {k}'s entry is not what the state's rounds hold")
            model = rounds.model(k)
            if not os.path.isfile(model) or sha256(model) != entry["sha256"]:
                raise ResumeError(f"--resume: {model} is missing or is not the file {path} names (SHA-256)")
        if len(done) - 1 > getattr(args, "rounds"):
            raise ResumeError(f"--resume: this run has {len(done) - 1} finished rounds and --rounds "
                              f"{getattr(args, 'rounds')} asks for fewer")
        rounds.done = done
        return rounds

    def finish(self, k: int, save: Any, record: dict[str, Any], evals: list[dict[str, Any]]) -> str:
        """Round ``k`` is done: ``save(path)`` writes its network (atomically), then the state names it."""
        if k != len(self.done):
            raise ValueError(f"round {k} finished after {len(self.done)} rounds")
        os.makedirs(self.directory, exist_ok=True)
        model = self.model(k)
        save(model)
        self.done.append({"round": k, "model": os.path.relpath(model, self.run_dir), "sha256": sha256(model),
                          "record": record, "evals": evals})
        write_atomic(self.path, json.dumps({"format": FORMAT, "identity": self.identity, "done": self.done},
                                           indent=1) + "\n")
        return model
