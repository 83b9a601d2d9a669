"""The shipped network: its spec name and where its file lives (``make_player("shipped")``, ``pimc_net``)."""

from __future__ import annotations

import os

from popejoan_env.players.base import UnknownPlayerError

SHIPPED = "shipped"
"""The spec of the shipped network."""
SHIPPED_MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "shipped.zip")
"""Where ``make_player("shipped")`` reads it: package data, ``popejoan_env/players/data/shipped.zip`` (its card,
run and benchmark files are ``models/shipped/`` of the repository)."""


def shipped_model() -> str:
    """The path of the shipped network's file, or an ``UnknownPlayerError`` saying it is not installed."""
    if not os.path.isfile(SHIPPED_MODEL):
        raise UnknownPlayerError(f"the shipped network is not installed: {SHIPPED_MODEL} is missing (it is package "
                                 "data of popejoan: reinstall the package)")
    return SHIPPED_MODEL
