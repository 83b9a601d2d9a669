"""Comma lists of player specs, as command lines give them (``benchmark --players``, ``train --opponents``).

A spec's further parameters stay with it: in ``pimc:samples=8,rollout=greedy,random`` the piece
``rollout=greedy`` (a key and ``=`` before any ``:`` or path separator) continues the spec before it.  A
model path that holds a comma cannot be given in such a list, which would read it as two players: it is
refused naming the path and its comma, rather than as a first half that is no model.

>>> split_specs("pimc:samples=8,rollout=greedy, random", "--players")
['pimc:samples=8,rollout=greedy', 'random']
"""

from __future__ import annotations

import os
import re

from popejoan_env.players.base import UnknownPlayerError

MAX_PATH_COMMAS = 8
"""Most commas of a model path that the refusal of a comma in a path looks for (the list's cost stays linear)."""
_WEIGHT = re.compile(r":\s*[0-9][0-9.eE+-]*\s*$")
"""An opponents mix's weight after a spec (``models/run/model.zip:0.5``)."""


def split_specs(text: str, what: str) -> list[str]:
    """The player specs of the comma list ``text`` (``what`` names it in a refusal), parameters kept with their
    spec; a model path with a comma is an ``UnknownPlayerError`` saying so."""
    raw = text.split(",")
    _refuse_comma_path(raw, what)
    out: list[str] = []
    for piece in (p.strip() for p in raw):
        if not piece:
            continue
        if out and _continues(piece):
            out[-1] += "," + piece
        else:
            out.append(piece)
    return out


def _continues(piece: str) -> bool:
    """Whether a piece of the list is a further ``key=value`` of the spec before it."""
    key, eq, _ = piece.partition("=")
    return bool(eq) and bool(key.strip()) and not any(c in key for c in (":", "/", "\\"))


def _refuse_comma_path(raw: list[str], what: str) -> None:
    """Refuse pieces that join, at their commas, into a model file that exists while the first alone does not."""
    for b, last in enumerate(raw):
        if not _WEIGHT.sub("", last.strip()).endswith(".zip"):
            continue
        for a in range(b - 1, max(-1, b - 1 - MAX_PATH_COMMAS), -1):
            path = _WEIGHT.sub("", ",".join(raw[a:b + 1]).strip())
            if os.path.isfile(path) and not os.path.exists(_WEIGHT.sub("", raw[a].strip())):
                raise UnknownPlayerError(f"{what}: the model path {path!r} holds a comma, and a comma list of "
                                         f"players reads it as {b - a + 1} players: rename it (or link it) without "
                                         "the comma")
