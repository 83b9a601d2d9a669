"""Loopback strangers for the tests of ``--address``: a port that answers anything but Ray (shared by
``test_cluster_probe.py`` and ``test_fuzz.py``).  Every server listens on 127.0.0.1 only and ends with its ``with``."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def responder(reply: bytes | None = None, close: bool = False) -> Iterator[int]:
    """A loopback port, yielded, whose every connection gets ``reply`` after the client's first bytes, then is closed
    (``close``) or left open, read and silent; with no ``reply`` it accepts and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []

    def serve(conn: socket.socket) -> None:
        try:
            conn.recv(24)  # an HTTP/2 client's preface is 24 bytes
            conn.sendall(reply or b"")
            if close:
                conn.close()
                return
            while conn.recv(65536):
                pass
        except OSError:
            pass

    def accept() -> None:
        while True:
            try:
                conn = server.accept()[0]
            except OSError:
                return
            held.append(conn)
            if reply is not None:
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield int(server.getsockname()[1])
    finally:
        server.close()
        for conn in held:
            conn.close()
