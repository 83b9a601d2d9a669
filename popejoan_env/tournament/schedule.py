"""Who sits where: the lineups of a tournament, their groups, and which groups each deal plays."""

from __future__ import annotations

import dataclasses
import itertools
import math

from popejoan_env.errors import PopeJoanError


@dataclasses.dataclass(frozen=True)
class Lineup:
    """Entrant index at each seat offset (rotation 0 puts offset k at seat k) and which offsets are scored."""

    entrants: tuple[int, ...]
    scored: tuple[bool, ...]


MAX_GROUPS = 100_000
"""Most groups of lineups a schedule may have (counted before any is built: 30 players at 8 seats would be 5.8M)."""


def make_schedule(entrants: int, seats: int, mode: str = "auto") -> tuple[str, list[list[Lineup]]]:
    """The groups of lineups for ``entrants`` players at ``seats`` seats; returns the mode used too."""
    if entrants < 2:
        raise PopeJoanError(f"a tournament needs at least 2 entrants, got {entrants}")
    if mode == "auto":
        mode = "subsets" if entrants >= seats else "field"
    count = math.comb(entrants, seats if mode == "subsets" else 2)
    if mode in ("subsets", "field") and count > MAX_GROUPS:
        raise PopeJoanError(f"{entrants} entrants at {seats} seats make {count:,} groups of lineups ({mode}); a "
                            f"schedule holds at most {MAX_GROUPS:,}: fewer entrants, or lineups 'field'")
    if mode == "subsets":
        if entrants < seats:
            raise PopeJoanError(
                f"lineups='subsets' needs at least as many entrants as seats ({entrants} < {seats}); use 'field'"
            )
        groups = [[Lineup(tuple(c), (True,) * seats)] for c in itertools.combinations(range(entrants), seats)]
    elif mode == "field":
        alone = (True,) + (False,) * (seats - 1)
        groups = [
            [Lineup((a,) + (b,) * (seats - 1), alone), Lineup((b,) + (a,) * (seats - 1), alone)]
            for a, b in itertools.combinations(range(entrants), 2)
        ]
    else:
        raise PopeJoanError(f"unknown lineups mode {mode!r}; choose 'auto', 'subsets' or 'field'")
    return mode, groups


def groups_of_deal(deal_index: int, n_groups: int, max_groups: int) -> list[int]:
    """Indices of the groups played on deal ``deal_index``: all, or a cyclic window of ``max_groups``."""
    if n_groups <= max_groups:
        return list(range(n_groups))
    start = deal_index * max_groups
    return [(start + j) % n_groups for j in range(max_groups)]
