"""The web API's JSON described for OpenAPI: what each endpoint takes and answers (pydantic models, docs only).

``games.py`` and ``replays.py`` check every request field by field and build every answer; these models only
describe them, for ``/api/openapi.json`` (``app.create_app``) and the API section of docs/web.md.  Strict and
closed (``extra="forbid"``), they are checked against real answers by tests/test_web_openapi.py, so the
description cannot drift from the server.  Imported only by ``create_app`` (pydantic comes with FastAPI).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from popejoan_env.rules import COMPARTMENTS, MAX_PLAYERS, MIN_PLAYERS, PRESETS
from popejoan_env.web.games import DEFAULT_OPPONENT, GAME_FIELDS, MAX_DEALS


class Closed(BaseModel):
    """A JSON object with exactly these fields, of exactly these types."""

    model_config = ConfigDict(extra="forbid", strict=True)


Card = str
"""A card in notation: rank then suit, ``5S``, ``TD``, ``9D`` (the Pope); ``docs/rules.md``."""
Board = create_model("Board", __base__=Closed,  # type: ignore[call-overload]
                     **{name: (int, ...) for name in COMPARTMENTS})
"""Counters in each compartment of the staking board, by name."""
Award = tuple[Literal["turnup", "play", "game"], int, str, int]
"""A compartment taken: ``[cause, seat, compartment, counters]``."""
Payment = tuple[int, int, int]
"""A settlement payment: ``[from seat, to seat, counters]`` (an excused Pope-holder's shows 0)."""
RULES = "every option of the rules (``Rules.to_dict``: ``preset``, ``lead``, ``deal``, ... ``dressing``)"


class Error(Closed):
    """Every refusal: a 4xx (or 5xx) status and one sentence saying what was wrong; the request changed nothing."""

    error: str = Field(examples=[f"players must be an integer {MIN_PLAYERS}..{MAX_PLAYERS}, got {MAX_PLAYERS + 1}"])


# ----------------------------------------------------------------------- play
class NewGame(Closed):
    """A new game's request (every field optional: an empty body is 4 players, modern, one deal)."""

    players: int = Field(4, ge=MIN_PLAYERS, le=MAX_PLAYERS, description="seats at the table; you are seat 0")
    preset: Literal[tuple(PRESETS)] = Field("modern", description="the rules preset")  # type: ignore[valid-type]
    opponents: list[str] | None = Field(
        None, description=f"one player per seat 1..players-1: a name from /api/options' ``opponents`` (scripted, "
                          f"or a model's path); default {DEFAULT_OPPONENT} at every seat",
        examples=[["stops_first", "pimc", "shipped"]])
    deals: int = Field(1, ge=1, le=MAX_DEALS, description="deals in the session (board and balances carried)")


assert tuple(NewGame.model_fields) == GAME_FIELDS, "the description names the fields games.py takes"


class PlayCard(Closed):
    """Seat 0's card, and optionally the position the page shows (a play from an older one is refused: 409)."""

    card: Card = Field(examples=["5S"], description="one of the state's ``legal`` cards")
    deal_number: int | None = Field(None, description="the state's ``deal_number`` the page shows (with ``plays``)")
    plays: int | None = Field(None, description="the length of the state's ``history`` the page shows")


class SeatState(Closed):
    """One seat as everybody sees it."""

    seat: int
    name: str = Field(description="``you`` for seat 0, else the opponent's player name")
    cards_left: int
    balance: int
    is_dealer: bool
    is_leader: bool


class Played(Closed):
    """One card of the deal, in order."""

    seat: int
    card: Card
    lead: bool = Field(description="whether the card began a run (a lead) rather than continued one")
    auto: bool = Field(description="whether the server played it without a choice (forced, a lone lead)")


class State(Closed):
    """The game as seat 0 sees it: after every request, the position where seat 0 must choose or the deal ended."""

    game_id: str
    players: int
    rules: dict[str, Any] = Field(description=RULES)
    deal_number: int = Field(description="this deal's number in the session, from 1")
    deals: int = Field(description="deals in the session")
    session_over: bool
    dealer: int
    eldest: int
    leader: int | None = Field(description="the seat that leads the current run (None before any lead)")
    to_act: int | None = Field(description="the seat to play, None when the deal is over")
    turnup: Card
    trumps: Literal["C", "D", "H", "S"]
    board: Board  # type: ignore[valid-type]
    seats: list[SeatState]
    hand: list[Card]
    legal: list[Card] = Field(description="the cards seat 0 may play now (empty unless it must choose)")
    why: Literal["lead", "due", "waiting", "over"] = Field(
        description="``lead``: seat 0 chooses a lead; ``due``: it must play the card due; ``waiting``: another "
                    "seat is to act; ``over``: the deal ended")
    due: Card | None = Field(description="the card seat 0 must play when ``why`` is ``due``")
    history: list[Played]
    new_plays: int = Field(description="how many of ``history``'s cards this request played (to animate them)")
    played_by_suit: dict[str, list[Card]] = Field(description="the cards played this deal by suit (C, D, H, S)")
    known_dead: list[Card] = Field(description="cards of the dead hand seat 0 knows")
    over: bool = Field(description="whether the deal is over")
    winner: int | None = Field(description="the seat that went out (None while playing, or when no one did)")
    awards: list[Award]
    payments: list[Payment]
    delta: list[int] | None = Field(description="each seat's change in counters over the deal, once it is over")


class NewGameAnswer(Closed):
    """A game just started: its id (for the other endpoints) and its state."""

    game_id: str
    state: State


class ModelOffered(Closed):
    """A model file the server offers as an opponent."""

    path: str = Field(description="what to name in ``opponents``")
    name: str
    players: list[int] = Field(description="table sizes it was trained for")
    presets: list[str] = Field(description="rules it was trained for")


class Options(Closed):
    """What a new game may be."""

    presets: list[str]
    players: list[int]
    opponents: list[str]
    default_opponent: str
    hint_model: str | None = Field(description="the network that gives hints (None when not installed)")
    models: list[ModelOffered]


class NetworkHint(Closed):
    """A network's move probabilities over seat 0's legal cards."""

    model: str
    probs: dict[Card, float]
    best: Card


class SearchHint(Closed):
    """What the search would play."""

    best: Card


class Hint(Closed):
    """Advice for seat 0's choice now."""

    network: NetworkHint | None
    network_reason: str | None = Field(description="why there is no network hint (None when there is one)")
    pimc: SearchHint


# ----------------------------------------------------------------------- replay
class RecordFiles(Closed):
    """The records file the server was started with (``--records``), by name, if any."""

    files: list[str]


class ReplayCreated(Closed):
    """A replay just made from a records file: its id and number of deals."""

    replay_id: str
    deals: int


class FramePlay(Closed):
    """The card that led to a frame."""

    seat: int
    card: Card
    lead: bool


class Frame(Closed):
    """One position of a replayed deal: after the dressing and turn-up (step 0), then after each card."""

    step: int
    play: FramePlay | None
    hands: list[list[Card] | int] = Field(description="each seat's cards, or only how many for a hidden seat")
    board: Board  # type: ignore[valid-type]
    balances: list[int]
    to_act: int | None
    legal: list[Card]
    awards: list[Award] = Field(description="the compartments this step took")
    payments: list[Payment] = Field(description="the payments this step made")
    policy: dict[Card, float] | None = Field(description="the model's probabilities at a real choice, if asked for")


class FinalOutcome(Closed):
    """How the replayed deal ended."""

    winner: int | None
    delta: list[int]
    board_after: Board  # type: ignore[valid-type]


class ReplayDeal(Closed):
    """A deal of a replay, frame by frame, from the engine (the record is verified first)."""

    deal: int
    deals: int
    players: int
    rules: dict[str, Any] = Field(description=RULES)
    dealer: int
    turnup: Card
    trumps: Literal["C", "D", "H", "S"]
    frames: list[Frame]
    final: FinalOutcome


def request_body(model: type[BaseModel], required: bool = True, example: Any = None) -> dict[str, Any]:
    """An OpenAPI ``requestBody`` of ``application/json`` described by ``model`` (a flat model: no ``$defs``)."""
    schema = model.model_json_schema()
    assert "$defs" not in schema, f"{model.__name__} must be flat to be inlined"
    content: dict[str, Any] = {"schema": schema}
    if example is not None:
        content["example"] = example
    return {"requestBody": {"required": required, "content": {"application/json": content}}}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses`` entries for refusals: ``{"error": sentence}`` with each status."""
    why = {400: "bad input (a field, an illegal card, a deal not over)", 403: "a foreign Host or Origin (the guard)",
           404: "no such game, replay or deal", 408: "the body came too slowly", 413: "a body over its size limit",
           415: "a body sent with another content type", 422: "a path or query parameter of the wrong form"}
    return {status: {"model": Error, "description": why[status]} for status in statuses}
