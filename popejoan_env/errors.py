"""The error hierarchy: every refusal is a ``PopeJoanError`` (a ``ValueError``)."""

from __future__ import annotations


class PopeJoanError(ValueError):
    """Base of every error this package raises for bad input."""


class UnknownCardError(PopeJoanError):
    """A card string or id that is not a card of the 51-card pack."""


class RulesError(PopeJoanError):
    """An unknown rules option or an impossible value."""


class InvalidDealError(PopeJoanError):
    """An explicit deal that is not a partition of the 51 cards, or a bad seat count or board."""


class IllegalActionError(PopeJoanError):
    """A card that may not be played now (not held, not the forced card, not a legal lead)."""


class GameOverError(PopeJoanError):
    """An action on a deal or session that has already ended."""


class RecordError(PopeJoanError):
    """A game record that is malformed or does not replay."""


class UnknownCardActionError(UnknownCardError, IllegalActionError):
    """An unknown card offered as a play: caught both as an unknown card and as an illegal action."""


class MissingDependencyError(PopeJoanError):
    """A package the call needs is not importable; the message names what to ``pip install``."""
