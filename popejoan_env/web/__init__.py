"""Play Pope Joan in the browser against the agents, and replay any game record (``popejoan serve``).

* ``app.create_app(...)`` – the FastAPI app (needs the ``web`` extra: ``pip install -e '.[web]'``);
* ``games`` – the games of the human at seat 0 (``GameManager``) and the models directory (``ModelShelf``);
* ``replays`` – records files kept by id and turned into frames (``ReplayStore``, ``deal_frames``);
* ``static/`` – the front end (HTML, JavaScript, CSS), served as is: no build step.

The contract between the server and the front end is the JSON of the endpoints
(docs/web.md).  Nothing here imports FastAPI at import time.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    """``create_app`` on first use, so importing the package needs no web framework."""
    if name == "create_app":
        from popejoan_env.web.app import create_app

        return create_app
    raise AttributeError(f"module 'popejoan_env.web' has no attribute {name!r}")
