"""Entries (games, replays) kept per client: idle ones expire, and no client can push out another's (no framework).

A ``ClientTable`` holds at most ``capacity`` entries, each owned by the client
that made it (``client_of``: its address), and at most ``per_client`` of one
client.  A new entry makes room by evicting, in this order:

1. the oldest entry of its own client, when that client is at ``per_client``;
2. when the table is full, the least recently used entry of the client holding
   the most entries, the newcomer's own first on a tie.

So an entry is evicted by another client's request only when the table is full
and its owner holds strictly more entries than that client; one client can
never fill the table alone (``per_client`` < ``capacity``), and pushing out a
client that holds ``k`` entries needs the table full of clients holding at
least ``k`` each.  Requests flooding from one address only cycle their own
entries.

>>> table = ClientTable(capacity=4, per_client=2, idle_seconds=60, clock=lambda: 0.0)
>>> for name in ("a1", "a2", "a3"):
...     table.add(name, name, "attacker")
>>> table.add("u1", "u1", "user"); sorted(table.ids())
['a2', 'a3', 'u1']
"""

from __future__ import annotations

import collections
import ipaddress
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from popejoan_env.checks import as_int, brief
from popejoan_env.errors import PopeJoanError

T = TypeVar("T")

IDLE_SECONDS = 1800.0
"""How long a game or a replay is kept unused before it expires (half an hour)."""
IPV6_CLIENT_PREFIX = 64
"""An IPv6 client is its /64 network (one host commonly holds a whole /64, so single addresses are free to mint)."""


def client_of(address: str | None) -> str:
    """The client a request comes from: its IPv4 address, or its IPv6 /64 network ("" when unknown)."""
    if not address:
        return ""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address  # not an IP (a test client's name): itself
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/{IPV6_CLIENT_PREFIX}", strict=False))
    return str(ip)


@dataclass
class _Slot(Generic[T]):
    owner: str
    entry: T
    last_used: float


class ClientTable(Generic[T]):
    """Entries by id, least recently used first, with per-client caps and fair eviction (thread-safe)."""

    def __init__(self, capacity: int, per_client: int, idle_seconds: float,
                 *,
                 clock: Callable[[], float] = time.monotonic, what: str = "entries") -> None:
        if as_int(capacity) is None or capacity < 1:
            raise PopeJoanError(f"the most {what} kept must be a positive integer, got {brief(capacity)}")
        if as_int(per_client) is None or per_client < 1:
            raise PopeJoanError(f"the most {what} of one client must be a positive integer, got {brief(per_client)}")
        if not isinstance(idle_seconds, (int, float)) or not idle_seconds > 0:
            raise PopeJoanError(f"idle_seconds must be positive, got {brief(idle_seconds)}")
        self.capacity = int(capacity)
        self.per_client = min(int(per_client), self.capacity)
        self.idle_seconds = float(idle_seconds)
        self.clock = clock
        self._slots: collections.OrderedDict[str, _Slot[T]] = collections.OrderedDict()
        self._counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._expire(self.clock())
            return len(self._slots)

    def ids(self) -> list[str]:
        """The ids kept, least recently used first."""
        with self._lock:
            self._expire(self.clock())
            return list(self._slots)

    def held_by(self, owner: str) -> int:
        """How many entries a client holds."""
        with self._lock:
            self._expire(self.clock())
            return self._counts[owner]

    def get(self, entry_id: object) -> T | None:
        """The entry of an id, marked as just used; None when there is none (never made, expired or evicted)."""
        with self._lock:
            now = self.clock()
            self._expire(now)
            slot = self._slots.get(entry_id) if isinstance(entry_id, str) else None
            if slot is None:
                return None
            slot.last_used = now
            self._slots.move_to_end(entry_id)  # type: ignore[arg-type]
            return slot.entry

    def add(self, entry_id: str, entry: T, owner: str) -> None:
        """Keep a new entry of ``owner``, evicting as the module docstring says."""
        with self._lock:
            now = self.clock()
            self._expire(now)
            if self._counts[owner] >= self.per_client:
                self._evict_oldest_of(owner)
            elif len(self._slots) >= self.capacity:
                most = max(self._counts.values())
                victim = owner if self._counts[owner] == most else next(
                    slot.owner for slot in self._slots.values() if self._counts[slot.owner] == most)
                self._evict_oldest_of(victim)
            self._slots[entry_id] = _Slot(owner, entry, now)
            self._counts[owner] += 1

    def _evict_oldest_of(self, owner: str) -> None:
        for key, slot in self._slots.items():
            if slot.owner == owner:
                self._drop(key)
                return

    def _drop(self, key: str) -> None:
        slot = self._slots.pop(key)
        self._counts[slot.owner] -= 1
        if not self._counts[slot.owner]:
            del self._counts[slot.owner]

    def _expire(self, now: float) -> None:
        """Drop the entries idle for longer than ``idle_seconds`` (the least recently used come first)."""
        while self._slots:
            key, oldest = next(iter(self._slots.items()))
            if now - oldest.last_used <= self.idle_seconds:
                return
            self._drop(key)
