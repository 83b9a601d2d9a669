"""The reference panel ``panel/2``: the opponents every evaluation plays, weakest first.

The panel is versioned like the deal set: a report names ``panel/2`` and the SHA-256 of the network ``shipped``
plays, and a change of its players (or of what a name plays) is a new version.  ``panel/1`` (0.2.0) had the same
names with the shipped network's round 2 (``models/round2/model.zip``) as ``shipped`` and as ``pimc_net``'s prior;
``panel/2`` has round 3, so a report is compared only with reports of its own panel.  ``pimc_net`` and ``pimc``
take most of an evaluation's time (the figures are in ``docs/evaluation.md``); ``--opponents`` narrows the panel
to the names given, and
``--quick`` plays the whole panel on the set's first 200 deals.
"""

from __future__ import annotations

from collections.abc import Sequence

from popejoan_env.checks import brief, split_list
from popejoan_env.errors import PopeJoanError

VERSION = "panel/2"
"""The name and version of the panel."""
SHIPPED_SHA256 = "6b66e3822a390bd90012946ac58dbb7f22e9b9c18257706100e5eee3c812e74b"
"""The SHA-256 of the network ``shipped`` (and ``pimc_net``'s prior) plays in this version of the panel: a test
holds the package's file to it, so the network cannot change without a new version."""
PANEL: tuple[str, ...] = ("random", "lowest", "stops_first", "pool_hunter", "pimc", "shipped", "pimc_net")
"""The panel's players (``make_player`` specs), weakest first."""


def choose(opponents: str | Sequence[str] | None) -> list[str]:
    """The panel's players named by ``opponents`` (a comma list or a list; None: all), in panel order; a list
    that names no player is refused (before, it played the whole panel)."""
    if opponents is None:
        return list(PANEL)
    names = split_list(opponents) if isinstance(opponents, str) else [str(n).strip() for n in opponents]
    if not names:
        raise PopeJoanError(f"--opponents {brief(opponents)} names no player: give a comma list of {VERSION}'s "
                            f"players ({', '.join(PANEL)}), or leave it out to play them all")
    unknown = [n for n in names if n not in PANEL]
    if unknown:
        raise PopeJoanError(f"--opponents names {unknown}, not in {VERSION}: choose from {', '.join(PANEL)}")
    if len(set(names)) != len(names):
        raise PopeJoanError(f"--opponents names a player twice: {', '.join(names)}")
    return [n for n in PANEL if n in names]
