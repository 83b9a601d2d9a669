"""The player protocol: anything that can take a seat, scripted, learned or human.

A player sees exactly what one seat of the PettingZoo AEC environment sees:
the observation dict ``{"observation": float32[OBS_SIZE], "action_mask":
int8[52]}``; it returns the id of a legal card.  Randomness comes only from
the player's own ``numpy.random.Generator``, re-seeded by ``reset(seed)``, so
a player is deterministic given its seed.

Scripted players subclass ``ScriptedPlayer`` and implement ``choose(view)``
on the decoded ``SeatView`` (``seat_view.py``).  Code that runs games itself
(the tournament, the training wrapper) calls ``choose(seat_view(deal, seat))``
directly when a player has it: the same information, without the round trip
through numpy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from popejoan_env.errors import PopeJoanError
from popejoan_env.seat_view import SeatView


class UnknownPlayerError(PopeJoanError):
    """A player spec names no known player, or gives it a parameter it does not take."""


@runtime_checkable
class Player(Protocol):
    """What sits at a seat: a name, a seedable generator, and ``act`` on one observation."""

    name: str

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the player's own generator (players are deterministic given the seed)."""

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        """The card id to play, given the AEC observation dict of the seat to act."""


def _answer_forced(choose: Callable[[Any, SeatView], int]) -> Callable[[Any, SeatView], int]:
    """Wrap a subclass's ``choose`` so a view with a single legal card returns it without thought."""

    @functools.wraps(choose)
    def wrapper(self: Any, view: SeatView) -> int:
        if view.forced >= 0:
            return view.forced
        if len(view.legal) == 1:
            return view.legal[0]
        if not view.legal:
            raise PopeJoanError(f"{self.name}: asked to choose a card when it is not its turn (no legal card)")
        return choose(self, view)

    wrapper.__wrapped_by_base__ = True  # type: ignore[attr-defined]
    return wrapper


class ScriptedPlayer:
    """Base of the scripted players: decodes observations and lets subclasses ``choose`` on a ``SeatView``.

    Every subclass's ``choose`` is wrapped (in ``__init_subclass__``) so that a
    forced card (R8) or a lone legal lead is returned at once: such a move needs
    no thought, and callers may hand any decision point to ``choose``.
    """

    name: str = "scripted"
    rng: np.random.Generator

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("choose")
        if own is not None and not getattr(own, "__wrapped_by_base__", False):
            cls.choose = _answer_forced(own)  # type: ignore[method-assign]

    def __init__(self, seed: int | None = None) -> None:
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed this player's generator."""
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        """The card to play for an AEC observation dict (decoded to a ``SeatView``)."""
        mask = np.asarray(observation["action_mask"])
        legal = np.flatnonzero(mask)
        if len(legal) == 1:
            return int(legal[0])
        if len(legal) == 0:
            raise PopeJoanError(f"{self.name}: the action mask allows no card (it is not this seat's turn)")
        from popejoan_env.observation import decode

        return int(self.choose(decode(observation["observation"], mask)))

    def choose(self, view: SeatView) -> int:
        """The card to play from ``view`` (one of ``view.legal``); subclasses implement it."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
