"""The frozen evaluation deal set ``popejoan-evalset/1``: 2,000 shuffled packs that ship with the package.

A deal is identified by its **card order**: the 51 card ids of the shuffled pack, in the order R3 deals
them (one at a time clockwise from eldest, the dead hand last in each round, or equal hands in one pass
as ``Deal.new`` deals them).  The order does not depend on the table size or the preset, so the one set
serves every table from 3 to 8 seats and both presets.  The file ``data/evalset-1.bin.gz`` holds the
orders as bytes (deal after deal, 51 card ids each); its SHA-256 over those bytes (``SHA256``) is printed
in every report, and a set whose bytes differ is refused.

The deals are cut into blocks of ``BLOCK`` deals: deal ``d`` of block ``b`` is the pack
``numpy.random.default_rng([SEED + b, d]).permutation(51)`` (indices into ``cards.PACK``) dealt by seat
``d mod seats``, which is the deal a duplicate tournament with seed ``SEED + b`` plays as its deal ``d``
(``popejoan_env.tournament``).  ``check_dealing`` proves, before any play, that the tournament deals
exactly the stored packs, so a change in numpy's generator cannot change the deals unnoticed.

>>> deals = load()
>>> len(deals), deals.shape[1], SHA256 == checksum(deals)
(2000, 51, True)
"""

from __future__ import annotations

import gzip
import hashlib
import os

import numpy as np

from popejoan_env.cards import PACK
from popejoan_env.errors import PopeJoanError

VERSION = "popejoan-evalset/1"
"""The name and version of the deal set (a new set of deals is a new version, never an edit)."""
DEALS = 2_000
"""Deals in the set: the size of an evaluation for a paper (``popejoan evaluate``'s default)."""
QUICK_DEALS = 200
"""Deals of ``--quick``: the set's first 200."""
BLOCK = 50
"""Deals in a block: the unit of play, of the progress bar and of resuming."""
SEED = 7_000_000
"""Block ``b`` is dealt by the tournament seed ``SEED + b`` (far from the seeds training and benchmarks use)."""
PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "evalset-1.bin.gz")
"""The package data file holding the card orders."""
SHA256 = "dbe62a5f3ed52026ec2b5377c3b1d0d1063f9f1e89f82f8728e0fc4aee747c21"
"""SHA-256 of the card orders' bytes: the deal set's identity, printed in every report."""


class DealSetError(PopeJoanError):
    """The deal set is missing, damaged, or not what the tournament deals."""


def block_seed(block: int) -> int:
    """The tournament seed that deals block ``block`` of the set."""
    return SEED + block


def generate(deals: int = DEALS) -> np.ndarray:
    """The card orders of the set's first ``deals`` deals, from their seeds: ``[deal, 51]`` card ids (uint8)."""
    pack = np.array(PACK, dtype=np.uint8)
    out = np.empty((deals, len(PACK)), dtype=np.uint8)
    for i in range(deals):
        b, d = divmod(i, BLOCK)
        out[i] = pack[np.random.default_rng([block_seed(b), d]).permutation(len(PACK))]
    return out


def checksum(orders: np.ndarray) -> str:
    """The SHA-256 (hex) of card orders in their canonical form: uint8 card ids, deal after deal."""
    return hashlib.sha256(np.ascontiguousarray(orders, dtype=np.uint8).tobytes()).hexdigest()


def write(path: str = PATH) -> str:
    """Write the set's file (gzip with no time stamp, so the file's bytes are reproducible); returns its checksum."""
    orders = generate()
    with open(path, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
        gz.write(orders.tobytes())
    return checksum(orders)


def load(path: str = PATH) -> np.ndarray:
    """The stored card orders, ``[DEALS, 51]``; a DealSetError if the file is missing, damaged or not the set."""
    try:
        with gzip.open(path, "rb") as fh:
            data = fh.read()
    except (OSError, EOFError) as err:
        raise DealSetError(f"cannot read the evaluation deal set {path}: {err}; reinstall popejoan") from None
    if len(data) != DEALS * len(PACK):
        raise DealSetError(f"the evaluation deal set {path} holds {len(data):,} bytes, not {DEALS * len(PACK):,}")
    orders = np.frombuffer(data, dtype=np.uint8).reshape(DEALS, len(PACK))
    found = checksum(orders)
    if found != SHA256:
        raise DealSetError(f"the evaluation deal set {path} is not {VERSION}: its SHA-256 is {found}, not {SHA256}")
    return orders


def check_dealing(orders: np.ndarray, deals: int) -> None:
    """Refuse (DealSetError) unless the tournament's seeds deal exactly the stored first ``deals`` packs."""
    dealt = generate(deals)
    if not np.array_equal(dealt, orders[:deals]):
        first = int(np.flatnonzero((dealt != orders[:deals]).any(axis=1))[0])
        raise DealSetError(f"this numpy deals deal {first} of {VERSION} differently from the stored pack, so the "
                           f"tournament would not play the frozen deals (numpy {np.__version__})")
