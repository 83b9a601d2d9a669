"""Load test of the web app on loopback: many concurrent clients each playing random legal games.

Run from the repository root (needs the ``web`` extra and httpx)::

    python benchmarks/bench_web.py                         # 80 clients, 20 s
    python benchmarks/bench_web.py --clients 20 --seconds 3 --json

The server is ``popejoan serve`` in a subprocess on a free port of 127.0.0.1
(its own process, so the clients do not share its interpreter).  Each client
is a thread with its own ``httpx.Client`` (keep-alive) from its own loopback
address (``127.1.x.y``: the server keeps games per client address, and 100
users are 100 addresses, not one ``127.0.0.1`` capped at its own share) that, until the time
is up, starts a game (``POST /api/games``, ``--players`` seats, every opponent
``--opponent``) and plays a uniformly random card of ``legal`` (its own numpy
Generator, seeded from ``--seed`` and the client's number) until the deal is
over; the game in progress when time is up is finished.  Reported: requests/s
over the whole run, p50/p99 latency of every request, errors (a non-2xx status
or a failed request; must be 0), and games completed against games started
(a game that stopped answering, e.g. evicted, is lost).  Speed is never
asserted by a test; read the figures ±30% on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import numpy as np

from popejoan_env.cli import OneLineParser

ROOT = pathlib.Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port of 127.0.0.1 free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int, models: str) -> subprocess.Popen[str]:
    """``popejoan serve`` on ``port``, once it answers ``/api/options`` (its first line is the URL)."""
    import httpx

    log = tempfile.TemporaryFile("w+")  # the server's messages (a pipe nobody reads could fill and block it)
    server = subprocess.Popen(
        [sys.executable, "-m", "popejoan_env", "serve", "--port", str(port), "--models", models],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"the server exited ({server.returncode}): {log.read()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/options", timeout=1).status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError("the server did not answer within 60 s")


class Client(threading.Thread):
    """One player: random legal games, back to back, until ``stop_at``; every request timed."""

    def __init__(self, base: str, number: int, args: argparse.Namespace, stop_at: float) -> None:
        super().__init__(daemon=True)
        self.base = base
        self.args = args
        self.stop_at = stop_at
        self.number = number
        self.rng = np.random.default_rng([args.seed, number])
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.started = self.completed = 0

    def request(self, http: Any, method: str, path: str, body: Any = None) -> dict[str, Any] | None:
        """A timed request; its JSON, or None after recording an error."""
        t = time.perf_counter()
        try:
            r = http.request(method, self.base + path, json=body)
        except Exception as err:  # a refused connection, a timeout: counted, never fatal
            self.errors.append(f"{method} {path}: {type(err).__name__}: {err}")
            return None
        self.latencies.append(time.perf_counter() - t)
        if r.status_code >= 300:
            self.errors.append(f"{method} {path}: {r.status_code} {r.text[:200]}")
            return None
        data: dict[str, Any] = r.json()
        return data

    def run(self) -> None:
        import httpx

        new = {"players": self.args.players, "opponents": [self.args.opponent] * (self.args.players - 1)}
        # Its own address of 127.0.0.0/8 (all loopback on Linux): the server tells clients apart by address.
        local = f"127.1.{self.number // 250}.{self.number % 250 + 1}"
        with httpx.Client(timeout=60, transport=httpx.HTTPTransport(local_address=local)) as http:
            while time.monotonic() < self.stop_at:
                made = self.request(http, "POST", "/api/games", new)
                if made is None:
                    continue
                self.started += 1
                game, state = made["game_id"], made["state"]
                while state is not None and not state["over"]:
                    card = state["legal"][int(self.rng.integers(len(state["legal"])))]
                    state = self.request(http, "POST", f"/api/games/{game}/play", {"card": card})
                if state is not None:
                    self.completed += 1


def run(clients: int, seconds: float, players: int = 4, opponent: str = "stops_first", seed: int = 0,
        models: str = "models") -> dict[str, Any]:
    """Start the server, run the clients for ``seconds``, stop the server; the figures."""
    port = free_port()
    server = start_server(port, models)
    try:
        args = argparse.Namespace(players=players, opponent=opponent, seed=seed)
        start = time.monotonic()
        threads = [Client(f"http://127.0.0.1:{port}", i, args, start + seconds) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - start
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    latencies = np.array([x for t in threads for x in t.latencies]) * 1000
    errors = [e for t in threads for e in t.errors]
    started = sum(t.started for t in threads)
    completed = sum(t.completed for t in threads)
    return {
        "clients": clients, "seconds": seconds, "wall_seconds": round(wall, 2), "players": players,
        "opponent": opponent, "requests": int(latencies.size),
        "requests_per_second": round(latencies.size / wall, 1),
        "p50_ms": round(float(np.percentile(latencies, 50)), 2) if latencies.size else None,
        "p99_ms": round(float(np.percentile(latencies, 99)), 2) if latencies.size else None,
        "errors": len(errors), "first_errors": errors[:5],
        "games_started": started, "games_completed": completed, "games_lost": started - completed,
    }


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, run the load test and print its figures; exit 1 on any error or lost game."""
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=80,
                        help="concurrent clients (default 80: each holds a keep-alive connection, and the server "
                             "answers 503 past web.app.MAX_CONNECTIONS, 100, at once)")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long clients start games (default 20)")
    parser.add_argument("--players", type=int, default=4, help="seats per game (default 4)")
    parser.add_argument("--opponent", default="stops_first", help="every opponent (default stops_first)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the clients' card choices (default 0)")
    parser.add_argument("--models", default="models", help="the server's --models (default models)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    if args.clients < 1 or args.seconds <= 0:
        parser.error("--clients must be at least 1 and --seconds positive")
    out = run(args.clients, args.seconds, args.players, args.opponent, args.seed, args.models)
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{out['clients']} clients x {out['seconds']:g} s ({out['players']} players, opponents "
              f"{out['opponent']}), {out['wall_seconds']} s wall: {out['requests']:,} requests, "
              f"{out['requests_per_second']:,} requests/s, p50 {out['p50_ms']} ms, p99 {out['p99_ms']} ms, "
              f"{out['errors']} errors, games {out['games_completed']:,} completed of {out['games_started']:,} "
              f"started ({out['games_lost']} lost)")
        for e in out["first_errors"]:
            print("  error:", e)
    return 1 if out["errors"] or out["games_lost"] else 0


if __name__ == "__main__":
    sys.exit(main())
