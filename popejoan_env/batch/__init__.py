"""The batch engine: N deals of one rules object and table size stepped at once, card for card the scalar engine.

``play.BatchDeals`` is the batch; its whole state is one ``state.BatchState`` (pgx's ``State``: fixed, documented
fields) beside the look-up tables of its rules (``state.Tables``); ``dealing`` deals its slots, ``records`` turns
it into reports, game records and scalar deals and back, and ``kernels`` holds every rule as a compiled loop
(numba, a core dependency: the batch engine has no other implementation of the rules).  Imports point one way:
``play`` over ``dealing`` and ``records``, those over ``state`` (which loads ``kernels``); nothing below ``play``
sees a ``BatchDeals``, each takes the state, tables, rules and table size it needs.
"""

from __future__ import annotations

from popejoan_env.batch.dealing import order_of_deal
from popejoan_env.batch.play import BatchDeals
from popejoan_env.batch.records import Finished
from popejoan_env.batch.state import MAX_EVENTS, BatchState, Tables, position_masks

__all__ = ["MAX_EVENTS", "BatchDeals", "BatchState", "Finished", "Tables", "order_of_deal", "position_masks"]
