"""The opponents of a learner: a weighted mix of scripted players and frozen snapshots of the learner itself.

``parse_mix("stops_first:0.5,pool_hunter:0.2,random:0.05,self:0.25")`` reads a
mix; ``OpponentPool`` holds one player per seat and name, the self-play
snapshots (model files added with ``add_snapshot``; the oldest beyond
``max_snapshots`` leave) and draws the players of a table.  Every opponent is
a ``Player`` (``act(view)``), so whoever runs the table never asks what kind
it has.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from popejoan_env.checks import as_flag, as_int, brief
from popejoan_env.errors import PopeJoanError
from popejoan_env.players.lists import split_specs
from popejoan_env.rules import MAX_PLAYERS, Rules

SELF = "self"
"""Name of the self-play share in an opponents mix: a frozen snapshot of the learner."""


class OpponentMixError(PopeJoanError):
    """An opponents mix that cannot be parsed, or names an unknown player."""


def parse_mix(mix: str | Mapping[str, float] | Sequence[str]) -> list[tuple[str, float]]:
    """Opponent names with normalised weights from ``"stops_first:0.4,random:0.1,self:0.5"``, a mapping or a list.

    >>> parse_mix("stops_first:3,random:1")
    [('stops_first', 0.75), ('random', 0.25)]
    >>> parse_mix("pool_hunter")
    [('pool_hunter', 1.0)]
    """
    if isinstance(mix, str):
        items: list[tuple[str, float]] = []
        try:
            parts = split_specs(mix, "the opponents mix")  # a spec's parameters stay with it
        except PopeJoanError as err:
            raise OpponentMixError(str(err)) from None
        for part in parts:
            # A weight follows the last ':'; a tail with '=' is the spec's last parameter (pimc:samples=8), no weight.
            tail = part.rpartition(":")[2]
            name, sep, weight = part.rpartition(":") if ":" in part and "=" not in tail else (part, "", "1")
            try:
                items.append((name.strip(), float(weight)))
            except ValueError:
                raise OpponentMixError(
                    f"opponents mix {brief(mix)}: weight {brief(weight)} of {brief(name)} is not a number "
                    "(write e.g. 'stops_first:0.4,random:0.1,self:0.5')"
                ) from None
    elif isinstance(mix, Mapping):
        for k, v in mix.items():
            if not isinstance(k, str):
                raise OpponentMixError(f"opponents mix {brief(mix)}: {brief(k)} is not a player spec (a string)")
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not -1e300 < v < 1e300:
                raise OpponentMixError(f"opponents mix {brief(mix)}: weight {brief(v)} of {brief(k)} is not a number")
        items = [(str(k), float(v)) for k, v in mix.items()]
    elif isinstance(mix, (list, tuple)):
        for k in mix:
            if not isinstance(k, str):  # str() of it would be no spec (and of a huge int, a ValueError)
                raise OpponentMixError(f"opponents mix {brief(mix)}: {brief(k)} is not a player spec (a string)")
        items = [(k, 1.0) for k in mix]
    else:
        raise OpponentMixError(f"opponents must be a mix like 'stops_first:0.4,random:0.1', a mapping of names to "
                               f"weights or a list of names, got {brief(mix)}")
    if not items:
        raise OpponentMixError(f"opponents mix {brief(mix)} names no player")
    names = [n for n, _ in items]
    if len(set(names)) != len(names):
        raise OpponentMixError(f"opponents mix {brief(mix)} names a player twice")
    bad = [(n, w) for n, w in items if not np.isfinite(w) or w < 0]
    total = sum(w for _, w in items)
    if bad or not 0 < total < np.inf:  # finite weights can add up to inf (1e308 twice): every share would be 0 or NaN
        raise OpponentMixError(f"opponents mix {brief(mix)}: weights must be non-negative numbers with a positive, "
                               "finite sum")
    return [(n, w / total) for n, w in items if w > 0]


class OpponentPool:
    """Scripted players (one per seat and name) and learner snapshots, drawn by the weights of a mix."""

    def __init__(self, mix: str | Mapping[str, float] | Sequence[str], rules: Rules,
                 *,
                 snapshots: Sequence[str | os.PathLike[str]] = (), max_snapshots: int = 5,
                 snapshot_deterministic: bool = False) -> None:
        from popejoan_env.players import is_model_path, make_player

        self.mix = parse_mix(mix)
        self.rules = rules
        if as_int(max_snapshots) is None or max_snapshots < 1:  # type: ignore[operator]
            raise PopeJoanError(f"max_snapshots must be a positive integer, got {brief(max_snapshots)}")
        self.max_snapshots = int(max_snapshots)
        self.snapshot_deterministic = as_flag(snapshot_deterministic, "snapshot_deterministic")
        self.names = [n for n, _ in self.mix]
        self.weights = np.array([w for _, w in self.mix])
        # Built now: an unknown name fails here, not mid-training.  A scripted name gets a player per seat (each
        # its own generator); a model file is loaded once and sits at every seat, as a snapshot does.
        self.scripted: dict[str, list[Any]] = {
            name: [make_player(name)] * MAX_PLAYERS if is_model_path(name) else
            [make_player(name) for _ in range(MAX_PLAYERS)] for name in self.names if name != SELF
        }
        self.snapshots: list[Any] = []
        self.snapshot_paths: list[str] = []
        # Snapshots sample their moves from the generator of whoever runs the table (see ``use_rng``).
        self._rng = np.random.default_rng()
        if isinstance(snapshots, (str, bytes, os.PathLike)):  # else read letter by letter: "model file 'm'"
            raise PopeJoanError(f"snapshots must be a list of model files, got one path {brief(snapshots)}: "
                                "write snapshots=[path]")
        for path in snapshots:
            self.add_snapshot(path)

    def add_snapshot(self, path: str | os.PathLike[str]) -> None:
        """Add a frozen learner snapshot (a saved model file); the oldest beyond ``max_snapshots`` leave."""
        from popejoan_env.nets.policy import load_policy
        from popejoan_env.players.learned import LearnedPlayer

        policy = load_policy(path, rules=self.rules)
        name = f"self:{os.path.basename(os.fspath(path))}"
        self.snapshots.append(LearnedPlayer(policy, deterministic=self.snapshot_deterministic, name=name,
                                            rng=self._rng))
        self.snapshot_paths.append(os.fspath(path))
        del self.snapshots[: -self.max_snapshots]
        del self.snapshot_paths[: -self.max_snapshots]

    def use_rng(self, rng: np.random.Generator) -> None:
        """The generator snapshots sample with; scripted players are re-seeded from it (``seed_players``)."""
        self._rng = rng
        for snap in self.snapshots:
            snap.rng = rng

    def seed_players(self) -> None:
        """Re-seed every scripted player from the pool's generator (so a seeded episode replays exactly)."""
        for row in self.scripted.values():
            for player in row:
                player.reset(int(self._rng.integers(2**63)))

    def check_snapshots(self) -> None:
        """Refuse a mix that names ``self`` while no learner snapshot is given (callers check before they draw)."""
        if SELF in self.names and not self.snapshots:
            raise PopeJoanError("the opponents mix names 'self' but no learner snapshot was given; "
                                "pass snapshots=[model.zip] or call add_snapshot(path) before reset()")

    def draw(self, players: int, learner: int, rng: np.random.Generator) -> tuple[list[Any], list[str]]:
        """The player at each seat (``None`` at the learner's) and their names, drawn from the mix with ``rng``."""
        picks = rng.choice(len(self.names), size=players, p=self.weights)
        seats: list[Any] = []
        names: list[str] = []
        for seat in range(players):
            if seat == learner:
                seats.append(None)
                names.append("learner")
                continue
            name = self.names[int(picks[seat])]
            if name == SELF:
                self.check_snapshots()
                snap = self.snapshots[int(rng.integers(len(self.snapshots)))]
                seats.append(snap)
                names.append(snap.name)
            else:
                seats.append(self.scripted[name][seat])
                names.append(name)
        return seats, names
