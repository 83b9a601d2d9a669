"""The state file an interrupted evaluation resumes from (``PREFIX.state.json``): read, and checked against the plan.

A state file is trusted with nothing: before one block of it is used, the whole file must be the one this
evaluation writes (``STATE_FORMAT``, the same ``Settings``, the same popejoan, numpy and torch when it names them)
and every block must fit the evaluation's plan:

* a match the evaluation plays (an opponent, or a reference pair of the panel's players);
* a block index ``0 .. deals / BLOCK - 1``, written as the evaluation writes it (ASCII digits, no sign, no
  leading zero), each once;
* per deal, the ``SERIES`` of exactly ``BLOCK`` deals, each a finite number within what one deal can move
  (``deal_bounds``): each side's counters alone are a mean over the ``seats`` rotations of whole counters, its
  go-out rate a share of those rotations, and the margin is the difference of the two sides' counters;
* the ``TIMING`` of the block: whole decisions, at most what its games can ask (``max_decisions``), and
  seconds that are finite, non-negative and at most ``MAX_BLOCK_SECONDS``.

Anything else is a ``StateFileError``, one line naming the file and what is wrong, so a report never mixes in
blocks of another evaluation nor shows more or fewer deals than its plan.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from collections.abc import Iterable
from typing import Any

from popejoan_env.checks import as_int, brief
from popejoan_env.errors import PopeJoanError
from popejoan_env.evaluate import dealset, panel
from popejoan_env.files import HELD_VERSIONS, versions_changed
from popejoan_env.rules import Rules

STATE_FORMAT = "popejoan-evaluation-state/1"
"""The format of the state file an evaluation resumes from."""
MAX_STATE_BYTES = 64 * 2**20
"""Largest state file a resumed evaluation reads (a 2,000-deal run of the whole panel writes about 2 MB)."""
MAX_BLOCK_SECONDS = 10**7
"""Most seconds one block may have taken, by a state file (about 116 days for 50 deals)."""
SERIES = ("margin", "agent_net", "opponent_net", "agent_out", "opponent_out")
"""What is kept of each deal against one opponent: the duplicate margin (agent alone against the opponent's field
minus the opponent alone against the agent's), each side's counters alone, and each side's go-out rate."""
TIMING = ("agent_decisions", "agent_seconds", "opponent_decisions", "opponent_seconds", "wall_seconds")
"""What is kept of each block's time: each side's decisions and thinking seconds, and the block's wall seconds."""
AIVAT_SERIES = "aivat"
"""The series an evaluation with ``--aivat`` adds to the blocks of the agent's own matches: each deal's
correction of the margin (and ``aivat_decisions``, the block's corrected decisions)."""

_BLOCK_INDEX = re.compile(r"0|[1-9][0-9]{0,8}")
"""A block index as the evaluation writes it: ASCII digits, no sign, no leading zero."""
_WHOLE = 1e-6
"""How far a mean over rotations times the number of rotations may be from a whole number (float rounding)."""


class StateFileError(PopeJoanError):
    """A state file that is not this evaluation's to resume: unreadable, of another shape, or off its plan."""


def deal_bounds(rules: Rules, seats: int) -> tuple[int, int]:
    """The fewest and most counters one seat can end a deal with, from an empty board as an evaluation deals.

    The most it can lose is the dressing (as dealer) and a counter for each card of its hand when another goes
    out; the most it can win is every compartment (the dressing is all the board holds) and a counter for every
    card of the other hands (R5, R10, R11: ``engine.Deal``).
    """
    hands, _ = rules.hand_sizes(seats)
    dressing = sum(rules.dressing)
    return -(dressing + max(hands)), dressing + sum(hands) - min(hands)


def max_decisions(rules: Rules, seats: int) -> int:
    """The most decisions one side can be asked in a block: every card of every game of its deals (two lineups,
    each in every rotation)."""
    hands, _ = rules.hand_sizes(seats)
    return dealset.BLOCK * 2 * seats * sum(hands)


def pair_key(a: str, b: str) -> str:
    """How the state names a reference pair's blocks (``a`` alone against ``b``'s field and the reverse)."""
    return f"{a}-{b}"


def match_names(known: Iterable[str]) -> set[str]:
    """The matches a state file may hold: this evaluation's, and any pair of the panel's players (the reference
    pairs an evaluation with other ``--ratings`` plays beside them; kept out of the report)."""
    return set(known) | {pair_key(a, b) for a in panel.PANEL for b in panel.PANEL if a != b}


def _no_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose every name is given once (``json`` would silently keep the last of two)."""
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name in out:
            raise ValueError(f"the name {brief(name)} is given twice in one object")
        out[name] = value
    return out


def _no_constant(name: str) -> Any:
    """Refuse NaN and the infinities, which ``json`` reads by default and an evaluation never writes."""
    raise ValueError(f"{name} is not a finite number")


def settings_differ(saved: object, wanted: dict[str, Any]) -> str:
    """What differs between a state file's settings and this evaluation's, each field as the file has it and as
    this evaluation has it (the file's whole settings, shortened, when they are not an object)."""
    if not isinstance(saved, dict):
        return brief(saved, 300)
    fields = [name for name in dict.fromkeys([*wanted, *saved]) if saved.get(name) != wanted.get(name)]
    return "; ".join(f"{brief(name, 40)}: {brief(saved.get(name), 120)} there, {brief(wanted.get(name), 120)} here"
                     for name in fields[:4]) + ("; ..." if len(fields) > 4 else "")


def read_state(path: str, settings: Any,
               matches: Iterable[str]) -> tuple[dict[str, dict[int, dict[str, Any]]], dict[str, Any]]:
    """The blocks of the state file at ``path``, per match of ``matches``, every one checked against ``settings``
    (a ``runner.Settings``), and the versions it names (``files.HELD_VERSIONS``, each the one installed here); a
    ``StateFileError`` naming the file and the problem otherwise."""
    saved = _load(path)
    if not isinstance(saved, dict) or saved.get("format") != STATE_FORMAT:
        raise StateFileError(f"{path} is not an evaluation state file ({STATE_FORMAT}); remove it or choose "
                             "another --out")
    if saved.get("settings") != settings.to_dict():
        raise StateFileError(f"{path} holds an unfinished evaluation with other settings "
                             f"({settings_differ(saved.get('settings'), settings.to_dict())}); remove it to start "
                             "this one, or choose another --out")
    extra = sorted(set(saved) - {"format", "settings", "blocks", *HELD_VERSIONS})
    if extra:
        return _refuse(path, f"it holds {brief(extra)} beside format, settings, blocks and {', '.join(HELD_VERSIONS)}")
    changed = versions_changed(saved)  # a state written before a version was kept does not name it
    if changed:
        raise StateFileError(f"{path} holds an unfinished evaluation played with other versions ({changed}): a "
                             "report names one version of each; remove it to start afresh, or finish it with those")
    blocks = saved.get("blocks")
    if not isinstance(blocks, dict):
        return _refuse(path, f"its blocks are {brief(blocks)}, not an object of matches")
    wanted = list(matches)
    allowed = match_names(wanted)
    plan = Plan(settings)
    out: dict[str, dict[int, dict[str, Any]]] = {name: {} for name in wanted}
    for name, played in blocks.items():
        if name not in allowed:
            return _refuse(path, f"it holds blocks of {brief(name)}, a match this evaluation does not play "
                                 f"(it plays {', '.join(wanted)})")
        if not isinstance(played, dict):
            return _refuse(path, f"the blocks of {name} are {brief(played)}, not an object of blocks")
        aivat = bool(getattr(settings, "aivat", False)) and name in settings.opponents  # the agent's own matches
        checked = {plan.index(path, name, key): plan.block(path, f"{name} block {key}", data, aivat=aivat)
                   for key, data in played.items()}
        if name in out:
            out[name] = checked
    return out, {name: saved[name] for name in HELD_VERSIONS if name in saved}


class Plan:
    """What each block of an evaluation may hold: its indices, deals, and the bounds of the game at its table."""

    def __init__(self, settings: Any) -> None:
        rules = Rules.preset(settings.preset)
        self.seats = int(settings.seats)
        self.blocks = int(settings.deals) // dealset.BLOCK
        self.low, self.high = deal_bounds(rules, self.seats)
        self.decisions = max_decisions(rules, self.seats)

    def index(self, path: str, name: str, key: str) -> int:
        """The block index ``key`` names, in ``0 .. blocks - 1`` and written as the evaluation writes it."""
        if not _BLOCK_INDEX.fullmatch(key) or int(key) >= self.blocks:
            _refuse(path, f"it holds {name} block {brief(key)}; this evaluation plays blocks 0 to {self.blocks - 1} "
                          f"({self.blocks * dealset.BLOCK} deals in blocks of {dealset.BLOCK})")
        return int(key)

    def block(self, path: str, where: str, data: Any, *, aivat: bool = False) -> dict[str, Any]:
        """One block's data, checked: every series of ``BLOCK`` deals within the game's bounds, and its timing
        (with ``aivat``, also the margin's AIVAT correction of each deal, ``AIVAT_SERIES``)."""
        fields = (*SERIES, *TIMING, *((AIVAT_SERIES, "aivat_decisions") if aivat else ()))
        if not isinstance(data, dict) or set(data) != set(fields):
            found = sorted(data) if isinstance(data, dict) else data
            _refuse(path, f"{where} holds {brief(found, 200)}, not the block of an evaluation "
                          f"({', '.join(fields)})")
        series = {key: self._series(path, f"{where} {key}", data[key]) for key in SERIES}
        if aivat:
            # a correction sums, over the decisions of a deal's games, differences of two values within the deal's
            # bounds: no deal's can be larger than that many spans
            span = (self.high - self.low) * self.decisions / dealset.BLOCK
            series[AIVAT_SERIES] = self._series(path, f"{where} {AIVAT_SERIES}", data[AIVAT_SERIES])
            for d, x in enumerate(series[AIVAT_SERIES]):
                if abs(x) > span:
                    _refuse(path, f"{where} {AIVAT_SERIES} of deal {d} is {x!r}, beyond what a deal's corrections "
                                  f"can sum to (±{span:,.0f})")
            corrected = as_int(data["aivat_decisions"])
            if corrected is None or not 0 <= corrected <= self.decisions:
                _refuse(path, f"{where} aivat_decisions is {brief(data['aivat_decisions'])}, not a whole number of "
                              f"decisions from 0 to {self.decisions:,}")
            series["aivat_decisions"] = corrected
        seats = self.seats
        for key in ("agent_net", "opponent_net"):
            for d, x in enumerate(series[key]):
                if not self.low <= x <= self.high or abs(x * seats - round(x * seats)) > _WHOLE:
                    _refuse(path, f"{where} {key} of deal {d} is {x!r}: not a mean of whole counters over {seats} "
                                  f"rotations from {self.low} to {self.high}, what one deal can move at this table")
        for key in ("agent_out", "opponent_out"):
            for d, x in enumerate(series[key]):
                if not 0 <= x <= 1 or abs(x * seats - round(x * seats)) > _WHOLE:
                    _refuse(path, f"{where} {key} of deal {d} is {x!r}: not a share of {seats} rotations")
        for d, (m, a, o) in enumerate(zip(series["margin"], series["agent_net"], series["opponent_net"])):
            if abs(m - (a - o)) > _WHOLE:
                _refuse(path, f"{where} margin of deal {d} is {m!r}, not agent_net - opponent_net = {a - o!r}")
        for key in ("agent_decisions", "opponent_decisions"):
            n = as_int(data[key])
            if n is None or not 0 <= n <= self.decisions:
                _refuse(path, f"{where} {key} is {brief(data[key])}, not a whole number of decisions from 0 to "
                              f"{self.decisions:,}")
        for key in ("agent_seconds", "opponent_seconds", "wall_seconds"):
            x = data[key]
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= MAX_BLOCK_SECONDS:
                _refuse(path, f"{where} {key} is {brief(x)}, not seconds from 0 to {MAX_BLOCK_SECONDS:,} "
                              "(MAX_BLOCK_SECONDS)")
        return {**series, **{key: data[key] for key in TIMING}}

    @staticmethod
    def _series(path: str, where: str, values: Any) -> list[float]:
        """A list of ``BLOCK`` finite numbers (ints or floats, never bools)."""
        if not isinstance(values, list) or len(values) != dealset.BLOCK:
            shown = f"{len(values)} values" if isinstance(values, list) else brief(values)
            _refuse(path, f"{where} holds {shown}, not the {dealset.BLOCK} deals of a block")
        for d, x in enumerate(values):
            if not _finite(x):
                _refuse(path, f"{where} of deal {d} is {brief(x)}, not a finite number")
        return [float(x) for x in values]


def _finite(x: Any) -> bool:
    """A JSON number (never a bool) that a float holds finite: an integer beyond a float's range is not one."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    return math.isfinite(x) if isinstance(x, float) else abs(x) <= sys.float_info.max  # exact: no conversion


def _refuse(path: str, what: str) -> Any:
    raise StateFileError(f"cannot resume from {path}: {what}; remove it to start afresh")


def _load(path: str) -> Any:
    """The JSON of a state file that is a regular file of at most ``MAX_STATE_BYTES``."""
    try:
        found = os.stat(path)
        if not stat.S_ISREG(found.st_mode):  # a pipe or device would block the open, a directory fail in it
            return _refuse(path, "not a regular file")
        if found.st_size > MAX_STATE_BYTES:
            return _refuse(path, f"{found.st_size:,} bytes, more than a state file holds (MAX_STATE_BYTES = "
                                 f"{MAX_STATE_BYTES:,})")
        with open(path, "rb") as fh:
            # A bounded read: the file may have grown since it was measured.
            text = fh.read(MAX_STATE_BYTES + 1)
        if len(text) > MAX_STATE_BYTES:
            return _refuse(path, f"more than {MAX_STATE_BYTES:,} bytes (MAX_STATE_BYTES)")
        return json.loads(text.decode("utf-8"), object_pairs_hook=_no_twice, parse_constant=_no_constant)
    except RecursionError:
        return _refuse(path, "its JSON is nested too deep for a state file")
    except StateFileError:
        raise  # a refusal of its own above (a ValueError too): already one whole sentence, not to be wrapped again
    except (OSError, ValueError) as err:  # unreadable, not UTF-8, not JSON, a huge integer, a name twice
        return _refuse(path, " ".join(str(err).split())[:200] or type(err).__name__)
