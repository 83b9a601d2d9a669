"""Which requests the web server answers, and the headers every answer carries (ASGI, no web framework).

The server runs on the user's machine, so any web page the user visits could
send it requests.  ``Guard`` wraps the app and refuses, before the app sees
them:

* a ``Host`` that is not the server's own (``allowed_host``): the names it was
  started with and the loopback names, with its port.  A page whose name an
  attacker re-points at 127.0.0.1 (DNS rebinding) sends its own name and is
  refused.  A server listening on every address (``0.0.0.0``, ``::``) also
  answers an IP address with its port: such a Host is not a name, so it cannot
  be re-pointed;
* an ``Origin`` that is not the server's own (``scheme://host:port``), which
  every browser sends on a cross-site POST, and, under ``/api/``, a
  ``Sec-Fetch-Site`` other than ``same-origin`` or ``none``;

and it adds ``SECURITY_HEADERS`` to every answer: no framing by another page,
no content-type sniffing, a content security policy that allows only the
server's own scripts, styles and connections.  Which content types each POST
takes is the endpoint's business (``app.json_body``, ``app.upload_type``).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
"""Host names always accepted (with the server's port): this machine."""
WILDCARD_ADDRESSES = ("0.0.0.0", "::", "")
"""Listening addresses that mean "every interface": then any IP address (not a name) is accepted as Host."""
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""Only the server's own files run or style the pages; no page may frame them (the favicon is ``data:,``)."""
SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("referrer-policy", "no-referrer"),
    ("cross-origin-resource-policy", "same-origin"),
    ("cross-origin-opener-policy", "same-origin"),
)
"""Headers on every answer (an existing header of the same name is replaced)."""
API_FETCH_SITES = ("same-origin", "none")
"""``Sec-Fetch-Site`` values an ``/api/`` request may carry: the server's own pages, or typed by the user."""


def _ip_literal(name: str) -> bool:
    """Whether a Host name is an IP address (``1.2.3.4`` or ``[::1]``), not a DNS name."""
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _split_host(value: str) -> tuple[str, int | None] | None:
    """(name, port or None) of a Host header value, lowercased; None when it is not one."""
    value = value.strip().lower()
    if not value or any(c.isspace() or c in "/\\@?#" for c in value):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[:end + 1], value[end + 1:]
    else:
        name, _, port_text = value.partition(":")
        rest = ":" + port_text if ":" in value else ""
    if not rest:
        return name, None
    if not rest.startswith(":") or not rest[1:].isascii() or not rest[1:].isdigit() or len(rest) > 6:
        return None
    return name, int(rest[1:])


def _shown_host(host: str) -> str:
    """A listening address as a Host name: an IPv6 address in brackets."""
    host = host.strip().lower()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_host(value: str, names: tuple[str, ...], port: int, wildcard: bool) -> bool:
    """Whether ``value`` (a Host header) names this server: one of ``names`` or a loopback name, on ``port``.

    >>> allowed_host("localhost:8000", ("127.0.0.1",), 8000, False), allowed_host("evil.example:8000", (), 8000, False)
    (True, False)
    >>> allowed_host("192.168.1.5:8000", ("0.0.0.0",), 8000, True), allowed_host("box.lan:8000", (), 8000, True)
    (True, False)
    """
    split = _split_host(value)
    if split is None:
        return False
    name, given = split
    if (given if given is not None else 80) != port:
        return False
    if name in LOOPBACK_NAMES or name in names:
        return True
    return wildcard and _ip_literal(name)


class Guard:
    """ASGI middleware: refuse foreign Hosts and Origins (403, JSON), and add ``SECURITY_HEADERS`` to every answer."""

    def __init__(self, app: ASGIApp, hosts: tuple[str, ...] = ()) -> None:
        self.app = app
        self.hosts = tuple(_shown_host(h) for h in hosts if h)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        why = self.refusal(scope)
        if why is not None:
            await refuse(send, 403, why)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = with_security_headers(message.get("headers", []))
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def refusal(self, scope: Scope) -> str | None:
        """Why a request is refused (one sentence), or None when it comes from this server's own pages."""
        headers, repeated = _headers(scope)
        if repeated:
            return f"the {repeated} header is given more than once; a request names one"
        server = scope.get("server") or ("", None)
        listening, port = str(server[0] or ""), server[1]
        host = headers.get("host")
        if host is None:
            return "a request must name this server in its Host header"
        names = (*self.hosts, _shown_host(listening))
        wildcard = listening in WILDCARD_ADDRESSES or any(h.strip("[]") in WILDCARD_ADDRESSES for h in self.hosts)
        if port is None or not allowed_host(host, names, int(port), wildcard):
            return (f"Host {_brief(host)} is not this server's: use http://localhost:{port}/ "
                    "(a page under another name could be a DNS-rebinding attack)")
        origin = headers.get("origin")
        own = f"{scope.get('scheme', 'http')}://{host.strip().lower()}"
        if origin is not None and origin.strip().lower() != own:
            return (f"cross-origin request from {_brief(origin)} refused: only this server's own pages ({own}) "
                    "may call it")
        site = headers.get("sec-fetch-site")
        if str(scope.get("path", "")).startswith("/api/") and site is not None and site.lower() not in API_FETCH_SITES:
            return f"a {_brief(site)} request to the API is refused: only this server's own pages may call it"
        return None


CHECKED_HEADERS = ("host", "origin", "sec-fetch-site")
"""Headers the guard decides by: each may be given once (two Hosts could be read differently by two readers)."""


def _headers(scope: Scope) -> tuple[dict[str, str], str | None]:
    """The request headers by lowercase name (latin-1, as HTTP headers are), and a checked header given twice."""
    out: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        name = key.decode("latin-1").lower()
        if name in CHECKED_HEADERS and name in out:
            return out, name
        out[name] = value.decode("latin-1")
    return out, None


def _brief(text: str, limit: int = 60) -> str:
    """A header value quoted for a message, cut short."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def with_security_headers(headers: Any) -> list[tuple[bytes, bytes]]:
    """Response headers (ASGI pairs) with ``SECURITY_HEADERS`` set, replacing any of the same names."""
    names = {name.encode("latin-1") for name, _ in SECURITY_HEADERS}
    kept = [(k, v) for k, v in headers if bytes(k).lower() not in names]
    return kept + [(name.encode("latin-1"), value.encode("latin-1")) for name, value in SECURITY_HEADERS]


async def refuse(send: Send, status: int, message: str) -> None:
    """Answer ``{"error": message}`` with ``status`` and the security headers, without the app."""
    body = json.dumps({"error": message}).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii"))]
    await send({"type": "http.response.start", "status": status, "headers": with_security_headers(headers)})
    await send({"type": "http.response.body", "body": body})
