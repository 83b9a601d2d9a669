"""The player protocol: anything that can take a seat, scripted, search, learned, human or your own.

Every player answers one call, ``act(view) -> card id``, where ``view`` is the
``SeatView`` of the seat to act (``seat_view.py``: exactly what that seat may
know, seats relative to it).  Callers never ask what kind of player they
have: the tournament, the Gymnasium view, ``popejoan play`` and the AEC
recipes all hand over the view (``raw_env.seat_view(agent)``, or
``observation.decode`` of an AEC observation).  A learned player encodes the
view itself.  Randomness comes only from the player's own
``numpy.random.Generator``, re-seeded by ``reset(seed)``, so a player is
deterministic given its seed.

A player that can answer many seats at once also has ``act_batch(batch, rows,
legal)``: the card of the seat to act in each deal ``rows`` of a ``BatchDeals``
(``legal``: their legal cards), the very cards ``act`` would give deal by deal
with the same draws of its generator.  Whoever runs N tables (the SB3 batch
vec env) calls ``act_batch(player, batch, rows, legal)`` below for every
player alike; a player without the method is asked ``act`` on each seat's
view (``act_on_views``): correct, slower.

``ScriptedPlayer`` is a convenient base: its ``act`` answers a forced card or a
lone legal lead at once (no thought, no random draw) and hands every real
decision to ``choose(view)``, which subclasses implement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from popejoan_env.cards import names_of
from popejoan_env.checks import as_int, as_seed, brief, one_line
from popejoan_env.errors import IllegalActionError, PopeJoanError
from popejoan_env.seat_view import SeatView, seat_view

if TYPE_CHECKING:
    from popejoan_env.batch import BatchDeals


class UnknownPlayerError(PopeJoanError):
    """A player spec names no known player, or gives it a parameter it does not take."""


@runtime_checkable
class Player(Protocol):
    """What sits at a seat: a name, a seedable generator, and ``act`` on what the seat may know."""

    name: str

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the player's own generator (players are deterministic given the seed)."""

    def act(self, view: SeatView) -> int:
        """The card id to play, given the ``SeatView`` of the seat to act."""


class PlayerFailedError(PopeJoanError):
    """A player's own ``act`` (or ``reset``) raised: a researcher's agent's bug, named in one line."""


def call_act(player: Player, view: SeatView) -> object:
    """``player.act(view)``; whatever the player's own code raises (a ``PopeJoanError`` and Ctrl-C aside) becomes a
    ``PlayerFailedError`` naming the player, its cause chained (a ``sys.exit`` in it too: it would end the command
    with its status and no word)."""
    return _guarded(player, "act", view)


def call_reset(player: Player, seed: int | None) -> None:
    """``player.reset(seed)``, what it raises named as ``call_act`` names it."""
    _guarded(player, "reset", seed)


def _guarded(player: Player, method: str, argument: object) -> object:
    """``player.<method>(argument)``, the player's own failures named (``call_act``)."""
    try:
        return getattr(player, method)(argument)
    except (PopeJoanError, KeyboardInterrupt):
        raise
    except BaseException as err:  # noqa: BLE001 - the player's code: whatever it raises, named
        said = one_line(str(err))
        raise PlayerFailedError(f"player {brief(getattr(player, 'name', None), 100)}: {method}() raised "
                                f"{type(err).__name__}" + (f": {said}" if said else "")) from err


def ask(player: Player, view: SeatView) -> int:
    """The card ``player`` plays at ``view``: its answer as a legal card id of the view, else an
    ``IllegalActionError`` naming the player (never another card: ``int(3.7)`` would play 3)."""
    answer = call_act(player, view)
    card = as_int(answer)
    if card is None or card not in view.legal:
        raise IllegalActionError(f"player {brief(getattr(player, 'name', None), 100)} chose badly: {brief(answer)} "
                                 f"is not a legal card id; legal: {names_of(view.legal)}")
    return card


def act_batch(player: Player, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """The card ``player`` plays for the seat to act in each deal ``rows`` of ``batch`` (``legal``: [k, 52] bool,
    their legal cards): its own ``act_batch`` when it has one, else ``act`` on each seat's view."""
    own = getattr(player, "act_batch", None)
    if own is None:
        return act_on_views(player, batch, rows)
    return np.asarray(own(batch, rows, legal), dtype=np.int64)


def act_on_views(player: Player, batch: BatchDeals, rows: np.ndarray) -> np.ndarray:
    """``player.act`` on the view of the seat to act in each deal ``rows`` (each rebuilt as a scalar deal)."""
    return np.array([ask(player, seat_view(batch.to_deal(row), seat))
                     for row, seat in zip(rows.tolist(), batch.to_act[rows].tolist())], dtype=np.int64)


def legal_of(view: object, who: str) -> tuple[int, ...]:
    """The legal cards of a view handed to ``act``; a PopeJoanError when it is not a SeatView or has none."""
    if not isinstance(view, SeatView):
        raise PopeJoanError(
            f"{who}: act() takes the SeatView of the seat to act (raw_env.seat_view(agent), or "
            f"observation.decode(obs['observation'], obs['action_mask']) of an observation), got {type(view).__name__}"
        )
    if not view.legal:
        raise PopeJoanError(f"{who}: asked for a card when it is not this seat's turn (no legal card)")
    return view.legal


class ScriptedPlayer:
    """Base of the scripted players: ``act`` answers forced cards and lone leads, ``choose`` the rest."""

    name: str = "scripted"
    rng: np.random.Generator

    def __init__(self, seed: int | None = None) -> None:
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed this player's generator (None, or a non-negative integer: never a Generator to share)."""
        self.rng = np.random.default_rng(as_seed(seed))

    def act(self, view: SeatView) -> int:
        """The card to play: the only legal card at once, else ``choose(view)``."""
        legal = legal_of(view, self.name)
        if len(legal) == 1:
            return legal[0]
        return int(self.choose(view))

    def choose(self, view: SeatView) -> int:
        """The card to play from ``view`` when there are two or more legal cards; subclasses implement it."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
