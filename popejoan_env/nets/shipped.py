"""The shipped network: the name it goes by and where its file lives (package data, ``nets/data/shipped.zip``)."""

from __future__ import annotations

import os

from popejoan_env.nets.model_file import ModelFileError

SHIPPED = "shipped"
"""The name of the shipped network, as a player spec (``make_player("shipped")``) and ``pimc_net``'s ``model=``."""
SHIPPED_MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "shipped.zip")
"""Where it is read: package data, ``popejoan_env/nets/data/shipped.zip`` (its card, run and benchmark files are
``models/shipped/`` of the repository)."""


def shipped_model() -> str:
    """The path of the shipped network's file, or a ``ModelFileError`` saying it is not installed."""
    if not os.path.isfile(SHIPPED_MODEL):
        raise ModelFileError(f"the shipped network is not installed: {SHIPPED_MODEL} is missing (it is package "
                             "data of popejoan: reinstall the package)")
    return SHIPPED_MODEL
