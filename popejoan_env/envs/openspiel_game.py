"""Pope Joan as an OpenSpiel game: ``python_pope_joan`` and ``python_pope_joan_small``, one deal each.

Importing this module registers both games with ``pyspiel.register_game``, so
``pyspiel.load_game("python_pope_joan", {"players": 4})`` and every OpenSpiel
algorithm work on them (CFR and its Monte-Carlo variants, information-set MCTS,
``evaluate.exploitability.nash_conv`` …).  The engine plays; this module only translates:

| OpenSpiel | here |
|---|---|
| players | the seats ``0 … n-1``; the game parameter ``players`` (3–8; the small game: 3) |
| actions | card ids 0–51 (``cards.py``); a state stops only at real decisions: forced cards (R8) and a lone legal lead are played by the engine's one decision loop (``Deal.advance``) |
| a deal without a decision | stops once all the same, at one player node with a single legal action (see below), so every deal reaches a player's turn |
| chance | ``python_pope_joan``: one chance node per card dealt, in dealing order (eldest first, the dead hand as the rules deal it, the turn-up last), each remaining card equally likely; ``python_pope_joan_small``: one chance node whose outcomes are every deal of the 10 cards (index into ``small_deals``) |
| returns | ``Deal.delta`` at the end of the deal (dressing included), 0 before |
| tensors | the v2 observation (``observation.encode``, 1285 floats, ``LAYOUT`` names its parts); the information state and the observation are the same tensor, because the v2 observation already holds the whole public history |
| strings | the observation string is ``render.describe`` of the seat's view; the information-state string adds the history, card by card with the relative seat that played it |
| resampling | ``resample_from_infostate`` deals the hidden cards with ``search.worlds.WorldSampler`` (consistent with the seat's view) and replays the cards played so far |

**A deal without a decision.** Some deals leave nobody a choice: every lead is a lone legal card and every other
card is forced (2,800 of the small game's 16,800 deals; rare in the full game, 28 of 20,000 modern deals at 8
seats: ``benchmarks/bench_openspiel.py no-decision``), or the turn-up ends the deal before any card is played
(``pope_turnup="ends_deal"`` with the 9♦ turned up, R5). Left alone, such a state is terminal right after the
chance nodes, which none of OpenSpiel's own stochastic games was in 300 random deals of each, and a wrapper that
resets to a player's turn (Shimmy's ``OpenSpielCompatibilityV0``) fails on it. So the deal stops once all the same,
at a node with a single legal action: eldest's first lead, its one legal card, after which the engine plays the
rest; or, when the turn-up ended the deal, the dealer, whose one action is the turned-up card. A node with one
action changes no value: the chance distribution is the engine's, every return is the deal's, and NashConv, best
responses and CFR's policies are those of the game without these nodes (``docs/small_game.md``).

Game parameters: ``players``, ``dealer`` (seat 0 by default), ``preset`` (``modern`` or ``victorian``: the base) and
every ``Rules`` option.  The true/false options (``ace_high``, ``dealer_sees_dead_hand``, ``pope_excused``,
``allow_credit``) are booleans and ``start_counters`` an integer, because a game string (``str(game)``, the text
``pyspiel.load_game`` and the serialised games read) spells them ``true`` and ``48`` and OpenSpiel reads those as
a bool and an int; their defaults are the values both presets share.  The others are text (``lead``, ``deal``,
``pope_turnup``, ``pair_split``, ``dressing`` as eight counts separated by ``/``): an option given overrides the
preset, an empty one (the default) leaves the preset's.  The small game also takes ``turnup`` (a card of the
small pack, or empty for a random one): fixing it leaves a tenth of the deals (1,680 under ``deal=equal``).  The board
starts empty and every balance at 0, so the returns are the counters each seat wins or loses in the deal.

**Refusals** are ``OpenSpielUsageError``: a ``PopeJoanError`` like every refusal of this package, and OpenSpiel's own
``pyspiel.SpielError``, which its checks raise (a parameter of the wrong type, a seat out of range for a tensor or a
string), so ``except pyspiel.SpielError`` catches both: a game parameter (``GameParameterError``), a chance
outcome or a card that is not legal, a seat out of range, a sampler's value outside [0, 1).  A refused call
changes nothing.

**Copies.**  ``pickle``, ``str(game)`` with ``pyspiel.load_game`` and ``serialize_game_and_state`` /
``deserialize_game_and_state`` give back the same game and state.  A Python game's state is serialised by
OpenSpiel as its history and its Python attributes **pickled**, so deserialising a string can run code from it:
deserialise only strings you trust, as with any pickle.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from popejoan_env.errors import MissingDependencyError, PopeJoanError, RulesError

try:
    import pyspiel
except ImportError:
    raise MissingDependencyError(
        "the OpenSpiel adapter needs OpenSpiel: pip install 'popejoan[openspiel]'") from None

from popejoan_env.cards import CARD_NAMES, NUM_CARD_IDS, PACK_MASKS, PACKS, card_name, cards_of, names_of, parse_card
from popejoan_env.checks import as_int, ascii_count, brief
from popejoan_env.engine import Deal, deal_cards
from popejoan_env.small_game import small_deals
from popejoan_env.observation import HAND, LAYOUT, OBS_SIZE, encode
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.render import describe, seat_labels
from popejoan_env.rules import (COMPARTMENTS, MAX_OPTION_COUNTERS, MAX_PLAYERS, MIN_PLAYERS, SMALL_PACK_PLAYERS,
                                Rules)
from popejoan_env.seat_view import seat_view

GAME_NAME = "python_pope_joan"
"""The full game's OpenSpiel name."""
SMALL_GAME_NAME = "python_pope_joan_small"
"""The small game's OpenSpiel name (``pack="small"``, 3 players)."""

_OPTIONS = ("lead", "deal", "pope_turnup", "pair_split", "ace_high", "dealer_sees_dead_hand", "pope_excused",
            "dressing", "start_counters", "allow_credit")
"""The ``Rules`` options a game parameter may set (``pack`` is the game's: full or small)."""
_TYPED = tuple(o for o in _OPTIONS if type(getattr(Rules(), o)) in (bool, int))
"""The options given as a bool or an int (OpenSpiel reads ``true`` and ``48`` in a game string as such)."""
MAX_RESAMPLE_DRAWS = 10_000
"""Most worlds ``resample_from_infostate`` draws at the stop of a deal without a decision, looking for one that has
none either; past them it returns a copy of the state itself (a world the seat cannot tell from its own)."""


class OpenSpielUsageError(PopeJoanError, pyspiel.SpielError):
    """A call the OpenSpiel game or its state refuses: a ``PopeJoanError`` (a ``ValueError``), and the
    ``pyspiel.SpielError`` OpenSpiel's own checks raise."""


class GameParameterError(RulesError, OpenSpielUsageError):
    """A game parameter of ``python_pope_joan`` or ``python_pope_joan_small`` that is refused."""


def _defaults(players: int) -> dict[str, Any]:
    """The parameter specification: every parameter with its default; a text option's ``""`` is the preset's, a
    typed option's default the value both presets share."""
    base = Rules()
    return {"players": players, "dealer": 0, "preset": "modern",
            **{option: getattr(base, option) if option in _TYPED else "" for option in _OPTIONS}}


def rules_of_params(params: Mapping[str, Any], pack: str = "full") -> Rules:
    """The ``Rules`` of a game's parameters: the preset, then each option given (a bool, an int, or text such as
    ``any`` and ``6/2/2/1/1/1/1/1``), on the pack of the game."""
    preset = params.get("preset", "modern")
    if not isinstance(preset, str):
        raise GameParameterError(f"game parameter preset must be text (modern or victorian), got {brief(preset)}")
    try:
        rules = Rules.preset(preset)
    except PopeJoanError as err:
        raise GameParameterError(str(err)) from None
    changes: dict[str, Any] = {}
    for option in _OPTIONS:
        if option not in params:
            continue
        value = params[option]
        if option in _TYPED:
            if isinstance(getattr(rules, option), bool) and not isinstance(value, bool):
                raise GameParameterError(f"game parameter {option} must be true or false (a bool), got {brief(value)}")
            if not isinstance(getattr(rules, option), bool) and as_int(value) is None:
                raise GameParameterError(f"game parameter {option} must be an integer, got {brief(value)}")
            changes[option] = value
            continue
        if not isinstance(value, str):
            raise GameParameterError(f"game parameter {option} must be text, got {brief(value)}")
        text = value.strip()
        if text and option == "dressing":
            parts = text.split("/")
            if len(parts) != len(COMPARTMENTS):
                raise GameParameterError(
                    f"game parameter dressing must be {len(COMPARTMENTS)} counts separated by '/' "
                    f"({', '.join(COMPARTMENTS)}), got {brief(text)}")
            try:
                changes[option] = tuple(ascii_count(x, f"each count of game parameter dressing ({brief(text)})",
                                                    MAX_OPTION_COUNTERS) for x in parts)
            except PopeJoanError as err:
                raise GameParameterError(str(err)) from None
        elif text:
            changes[option] = text
    if pack != "full":
        changes["pack"] = pack
    try:
        return rules.replace(**changes) if changes else rules
    except PopeJoanError as err:
        raise GameParameterError(f"game parameters: {err}") from None


def _dealing_slots(rules: Rules, players: int, dealer: int) -> list[int]:
    """For each card dealt, in order, the seat that receives it, or -1 for the dead hand (the turn-up last)."""
    size = rules.pack_size
    hands, dead = deal_cards(rules, players, dealer, list(range(size)))
    slots = [0] * size
    for seat, positions in enumerate(hands):
        for p in positions:
            slots[p] = seat
    for p in dead:
        slots[p] = -1
    # The turn-up is the last card of the dead hand; dealing it last keeps every earlier chance node blind to it.
    order = sorted(range(size), key=lambda p: (p == dead[-1], p))
    return [slots[p] for p in order]


def _game_type(name: str, long_name: str, low: int, high: int, spec: dict[str, Any]) -> Any:
    return pyspiel.GameType(
        short_name=name, long_name=long_name,
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.GENERAL_SUM,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=high, min_num_players=low,
        provides_information_state_string=True, provides_information_state_tensor=True,
        provides_observation_string=True, provides_observation_tensor=True,
        parameter_specification=spec)


_FULL_TYPE = _game_type(GAME_NAME, "Pope Joan (popejoan)", MIN_PLAYERS, MAX_PLAYERS, _defaults(4))
_SMALL_TYPE = _game_type(SMALL_GAME_NAME, "Pope Joan, small pack (popejoan)", SMALL_PACK_PLAYERS, SMALL_PACK_PLAYERS,
                         {**_defaults(SMALL_PACK_PLAYERS), "turnup": ""})


def _load(text: str) -> PopeJoanGame:
    """The game of a game string (what ``pickle`` calls to rebuild a game)."""
    return pyspiel.load_game(text)


class PopeJoanGame(pyspiel.Game):
    """One deal of Pope Joan with the rules of the game parameters."""

    pack = "full"
    game_type = _FULL_TYPE

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        params = dict(params or {})
        spec = self.game_type.parameter_specification
        unknown = sorted(set(params) - set(spec))
        if unknown:
            raise GameParameterError(f"unknown game parameter(s) {unknown} of {self.game_type.short_name}; "
                                     f"parameters are {sorted(spec)}")
        self.rules = rules_of_params(params, self.pack)
        for name in ("players", "dealer"):
            if as_int(params.get(name, spec[name])) is None:
                raise GameParameterError(f"game parameter {name} must be an integer, got {brief(params[name])}")
        self.players = as_int(params.get("players", spec["players"]))
        try:
            self.rules.hand_sizes(self.players)  # refuses a table the pack cannot be dealt to
        except PopeJoanError as err:
            raise GameParameterError(str(err)) from None
        self.dealer = as_int(params.get("dealer", 0))
        if not 0 <= self.dealer < self.players:
            raise GameParameterError(f"game parameter dealer must be a seat 0..{self.players - 1}, got {self.dealer}")
        self._setup(params)
        total = sum(self.rules.dressing) + self.rules.pack_size
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_CARD_IDS, max_chance_outcomes=self.max_chance(), num_players=self.players,
            min_utility=-float(total), max_utility=float(total), utility_sum=None,
            max_game_length=self.chance_steps() + self.rules.pack_size)
        super().__init__(self.game_type, info, params)

    def __reduce__(self) -> tuple[Callable[[str], PopeJoanGame], tuple[str]]:
        """Pickled as its game string: the Python attributes are rebuilt by loading it (pyspiel's own pickle of a
        Python game keeps none of them)."""
        return _load, (str(self),)

    def _setup(self, params: Mapping[str, Any]) -> None:
        """What the chance nodes need: the seat (or dead hand) receiving each card dealt."""
        self.slots = _dealing_slots(self.rules, self.players, self.dealer)

    def max_chance(self) -> int:
        """Outcomes of the widest chance node: a card id."""
        return NUM_CARD_IDS

    def chance_steps(self) -> int:
        """Chance nodes before the first decision: one per card dealt."""
        return self.rules.pack_size

    def new_initial_state(self) -> PopeJoanState:
        """The state before the deal."""
        return PopeJoanState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> PopeJoanObserver:
        """The observer of a seat: the v2 observation tensor, strings from the renderer."""
        return PopeJoanObserver(iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False), params)

    def check_seat(self, player: Any, what: str) -> int:
        """``player`` if it is a seat of this game, else an ``OpenSpielUsageError`` naming ``what``."""
        seat = as_int(player)
        if seat is None or not 0 <= seat < self.players:
            raise OpenSpielUsageError(f"{what}: player {brief(player)} is not a seat 0..{self.players - 1}")
        return seat


class SmallPopeJoanGame(PopeJoanGame):
    """One deal of the small game (``pack="small"``, 3 players): one chance node deals all 10 cards."""

    pack = "small"
    game_type = _SMALL_TYPE

    def _setup(self, params: Mapping[str, Any]) -> None:
        text = params.get("turnup", "")
        if not isinstance(text, str):
            raise GameParameterError(f"game parameter turnup must be a card's name such as KD, got {brief(text)}")
        turnup = None
        if text:
            try:
                turnup = parse_card(text)
            except PopeJoanError as err:
                raise GameParameterError(f"game parameter turnup: {err}") from None
            if not (PACK_MASKS["small"] >> turnup) & 1:
                raise GameParameterError(f"game parameter turnup {text!r} is not a card of the small pack "
                                         f"({' '.join(names_of(PACK_MASKS['small']))})")
        # outcomes: the one chance node's, every deal equally likely
        self.deals, self.deal_index, self.outcomes = _deals_of(self.rules, self.dealer, turnup)

    def max_chance(self) -> int:
        """Outcomes of the one chance node: every deal."""
        return len(self.deals)

    def chance_steps(self) -> int:
        """One chance node deals everything."""
        return 1


@functools.lru_cache(maxsize=8)
def _deals_of(rules: Rules, dealer: int, turnup: int | None
              ) -> tuple[tuple[Any, ...], dict[Any, int], tuple[tuple[int, float], ...]]:
    """Every deal of the small game, each one's index and the chance outcomes, made once per rules, dealer and
    turn-up: a game is loaded again for every deserialised state and by wrappers at every reset (Shimmy's), and
    listing the deals is 0.1 s, their outcomes 7 ms."""
    deals = tuple(small_deals(rules, dealer, turnup))
    return deals, {d: i for i, d in enumerate(deals)}, tuple((i, 1.0 / len(deals)) for i in range(len(deals)))


class _Shared:
    """A reference that ``copy.deepcopy`` (OpenSpiel's clone of a Python state) keeps instead of copying, and that
    ``pickle`` leaves out (a deserialised state finds its game with ``get_game``)."""

    __slots__ = ("game",)

    def __init__(self, game: PopeJoanGame | None = None) -> None:
        self.game = game

    def __deepcopy__(self, memo: dict[int, Any]) -> _Shared:
        return self

    def __reduce__(self) -> tuple[type[_Shared], tuple[()]]:
        return _Shared, ()


class _Progress:
    """A state's own data; ``copy.deepcopy`` copies it with ``Deal.copy`` (a clone is the search's hot path)."""

    __slots__ = ("dealt", "deal", "decisions", "stop")

    def __init__(self) -> None:
        self.dealt: list[int] = []
        self.deal: Deal | None = None
        self.decisions: list[int] = []
        self.stop = False
        """True at the one node of a deal without a decision (its single action not yet taken)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> _Progress:
        new = _Progress()
        new.dealt = list(self.dealt)
        new.deal = self.deal.copy() if self.deal is not None else None
        new.decisions = list(self.decisions)
        new.stop = self.stop
        return new


class PopeJoanState(pyspiel.State):
    """A deal in progress: the cards dealt so far, then the engine's ``Deal`` (``deal``)."""

    def __init__(self, game: PopeJoanGame) -> None:
        super().__init__(game)
        self._game = _Shared(game)
        self._now = _Progress()

    @property
    def deal(self) -> Deal | None:
        """The engine's deal once every card is dealt, else None."""
        return self._now.deal

    @property
    def dealt(self) -> list[int]:
        """Full game: the cards dealt so far, in dealing order."""
        return self._now.dealt

    @property
    def decisions(self) -> list[int]:
        """The player actions, in order: the cards chosen at decisions (not forced cards or lone leads), or the
        single action of a deal without a decision."""
        return self._now.decisions

    @property
    def stop(self) -> bool:
        """True at the one node of a deal that gives no seat a choice (a single legal action; see the module)."""
        return self._now.stop

    @property
    def game(self) -> PopeJoanGame:
        """The game this state belongs to (shared by every clone, never copied)."""
        game = self._game.game
        if game is None:  # a deserialised state: its Python attributes came without the game
            game = self._game.game = self.get_game()
        return game

    # ----------------------------------------------------------------- whose turn
    def current_player(self) -> int:
        """The seat to choose, CHANCE while dealing, TERMINAL once the deal is over."""
        deal = self.deal
        if deal is None:
            return pyspiel.PlayerId.CHANCE
        if self._now.stop:
            return deal.dealer if deal.done else deal.to_act
        if deal.done:
            return pyspiel.PlayerId.TERMINAL
        return deal.to_act

    def _legal_actions(self, player: int) -> list[int]:
        """The seat's legal cards, ascending (the turned-up card alone, when the turn-up ended the deal)."""
        deal = self.deal
        if deal is None or player != self.current_player():
            return []
        if self._now.stop and deal.done:
            return [deal.turnup]
        return sorted(deal.legal_actions())

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """Full game: each card not yet dealt, equally likely; small game: each deal, equally likely."""
        if self.deal is not None:
            raise OpenSpielUsageError("chance_outcomes: this state is not a chance node (every card is dealt)")
        if isinstance(self.game, SmallPopeJoanGame):
            return list(self.game.outcomes)
        gone = 0
        for c in self.dealt:
            gone |= 1 << c
        left = [c for c in PACKS[self.game.rules.pack] if not (gone >> c) & 1]
        p = 1.0 / len(left)
        return [(c, p) for c in left]

    # ----------------------------------------------------------------- moves
    def _apply_action(self, action: int) -> None:
        """A chance outcome (a card dealt, or the small game's deal) or a seat's card; then the forced cards."""
        action = int(action)
        deal = self.deal
        if deal is None:
            self._deal_out(action)
            return
        if self._now.stop:
            only = self._legal_actions(self.current_player())
            if action not in only:
                raise OpenSpielUsageError(f"{self._action_text(action)} is not legal here: this deal gives no seat "
                                          f"a choice, and its one action is {CARD_NAMES[only[0]]}")
            self._now.stop = False
            if not deal.done:
                deal.play(action)
                deal.advance()
            self.decisions.append(action)
            return
        try:
            deal.play(action)
        except PopeJoanError as err:  # refused before anything changed: the engine says what is legal
            raise OpenSpielUsageError(str(err)) from None
        self.decisions.append(action)
        deal.advance()

    def _action_text(self, action: int) -> str:
        """An action id in words, for a refusal."""
        return f"card {CARD_NAMES[action]}" if 0 <= action < NUM_CARD_IDS else f"action {action}"

    def _deal_out(self, action: int) -> None:
        """Apply one chance outcome; the last one builds the ``Deal`` (dressing and turn-up payout included)."""
        game = self.game
        if isinstance(game, SmallPopeJoanGame):
            if not 0 <= action < len(game.deals):
                raise OpenSpielUsageError(f"chance outcome {action} is not a deal index 0..{len(game.deals) - 1}")
            *hands, dead = game.deals[action]
            self._begin(Deal.from_cards(hands, dead, game.dealer, game.rules))
            return
        pack = PACK_MASKS[game.rules.pack]
        if not 0 <= action < NUM_CARD_IDS or not (pack >> action) & 1 or action in self.dealt:
            raise OpenSpielUsageError(f"chance outcome {action} is not a card left to deal")
        self.dealt.append(action)
        if len(self.dealt) == len(game.slots):
            hands: list[list[int]] = [[] for _ in range(game.players)]
            dead: list[int] = []
            for card, slot in zip(self.dealt, game.slots):
                (dead if slot < 0 else hands[slot]).append(card)
            self._begin(Deal.from_cards(hands, dead, game.dealer, game.rules))

    def _begin(self, deal: Deal) -> None:
        """Play the dealt deal up to its first decision; a deal that has none keeps its one stop (the module)."""
        ahead = deal.copy()
        if ahead.advance():
            self._now.deal = ahead
        else:
            self._now.deal = deal
            self._now.stop = True

    def _action_to_string(self, player: int, action: int) -> str:
        """A card in notation; a chance outcome names the card and who receives it (or the deal)."""
        action = int(action)
        game = self.game
        if player == pyspiel.PlayerId.CHANCE:
            if isinstance(game, SmallPopeJoanGame):
                if not 0 <= action < len(game.deals):
                    raise OpenSpielUsageError(f"action_to_string: chance outcome {action} is not a deal index "
                                              f"0..{len(game.deals) - 1}")
                *hands, dead = game.deals[action]
                return "Deal " + " | ".join(" ".join(CARD_NAMES[c] for c in h) for h in hands) + \
                    " | dead " + " ".join(CARD_NAMES[c] for c in dead)
            if not 0 <= action < NUM_CARD_IDS or not (PACK_MASKS[game.rules.pack] >> action) & 1:
                raise OpenSpielUsageError(f"action_to_string: chance outcome {action} is not a card of the pack")
            slot = game.slots[len(self.dealt)] if len(self.dealt) < len(game.slots) else -1
            return f"Deal {card_name(action)} to " + (f"seat {slot}" if slot >= 0 else "the dead hand")
        game.check_seat(player, "action_to_string")
        if not 0 <= action < NUM_CARD_IDS:
            raise OpenSpielUsageError(f"action_to_string: action {action} is not a card id 0..{NUM_CARD_IDS - 1}")
        deal = self.deal
        if self._now.stop and deal is not None and deal.done and action == deal.turnup:
            return f"{CARD_NAMES[action]} turned up: the deal ends"
        return CARD_NAMES[action]

    # ----------------------------------------------------------------- the end
    def is_terminal(self) -> bool:
        """True once the deal is over (a seat went out, or the turn-up ended it) and its stop, if any, is taken."""
        return self.deal is not None and self.deal.done and not self._now.stop

    def returns(self) -> list[float]:
        """``Deal.delta`` once the deal is over, zeros before."""
        if not self.is_terminal():
            return [0.0] * self.game.players
        return [float(x) for x in self.deal.delta]

    def resample_from_infostate(self, player_id: int, probability_sampler: Callable[[], float]) -> PopeJoanState:
        """A state the seat cannot tell from this one: the hidden cards dealt by ``WorldSampler`` (consistent with
        its view), the same cards played."""
        game = self.game
        seat = game.check_seat(player_id, "resample_from_infostate")
        deal = self.deal
        if deal is None:
            raise OpenSpielUsageError("resample_from_infostate needs a dealt state (the deal is still being dealt)")
        value = probability_sampler()
        if isinstance(value, bool) or not isinstance(value, (float, int, np.floating, np.integer)) \
                or not math.isfinite(value) or not 0.0 <= value < 1.0:
            raise OpenSpielUsageError(f"resample_from_infostate: the probability sampler gave {brief(value)}, "
                                      "not a number in [0, 1)")
        rng = np.random.default_rng(int(float(value) * 2.0**53))
        if deal.done:  # the turn-up ended the deal: nothing was played, so nothing constrains the hidden cards
            return self._turnup_world(seat, rng)
        sampler = WorldSampler(seat_view(deal, seat))
        for _ in range(MAX_RESAMPLE_DRAWS if self._now.stop else 1):
            state = self._world(sampler.sample(rng), seat)
            if state.stop == self._now.stop:
                return state
        # At the stop, no world without a decision was drawn: this one is a world the seat cannot tell apart.
        return self.clone()

    def _turnup_world(self, seat: int, rng: np.random.Generator) -> PopeJoanState:
        """A deal ended by its turn-up, dealt afresh but for what ``seat`` saw: its hand, the turn-up (and the dead
        hand, when the dealer sees it); the unseen cards shuffled into the other hands and the dead hand."""
        deal = self.deal
        seen_dead = seat_view(deal, seat).dead_hand is not None
        known = deal.hands[seat] | (1 << deal.turnup)
        if seen_dead:
            known |= deal.dead_mask
        unseen = [c for c in PACKS[deal.rules.pack] if not (known >> c) & 1]
        rng.shuffle(unseen)
        hands, at = [], 0
        for s in range(deal.players):
            size = 0 if s == seat else deal.hand_sizes[s]
            hands.append(deal.hands[seat] if s == seat else sum(1 << c for c in unseen[at:at + size]))
            at += size
        dead = list(deal.dead) if seen_dead else sorted(unseen[at:]) + [deal.turnup]  # the small game's order
        state = self.game.new_initial_state()
        for outcome in self._chance_sequence(hands, dead):
            state.apply_action(outcome)
        return state

    def _world(self, world: Any, seat: int) -> PopeJoanState:
        """The state of a world of ``WorldSampler`` (from ``seat``), dealt and with this state's cards replayed."""
        deal = self.deal
        n = deal.players
        played = [0] * n
        for s, card in deal.plays:
            played[s] |= 1 << card
        hands = [world.hands[(s - seat) % n] | played[s] for s in range(n)]
        state = self.game.new_initial_state()
        for outcome in self._chance_sequence(hands, list(world.dead)):
            state.apply_action(outcome)
        # Replay the cards played, not this state's decisions: another seat's lead that was a choice here may be
        # its only legal card in the new world (then the engine plays it, and it is no decision there).
        while len(state.deal.plays) < len(deal.plays):
            state.apply_action(deal.plays[len(state.deal.plays)][1])
        return state

    def _chance_sequence(self, hands: list[int], dead: list[int]) -> list[int]:
        """The chance outcomes that deal ``hands`` (bitmasks by seat) and ``dead`` (turn-up last)."""
        game = self.game
        if isinstance(game, SmallPopeJoanGame):
            return [game.deal_index[(*(tuple(cards_of(h)) for h in hands), tuple(dead))]]
        piles = [cards_of(h) for h in hands]
        rest = list(dead)
        out = []
        for slot in game.slots:
            out.append(rest.pop(0) if slot < 0 else piles[slot].pop(0))
        return out

    def __str__(self) -> str:
        """The plays so far (debugging; OpenSpiel's history string is the action ids)."""
        if self.deal is None:
            return "dealt: " + " ".join(CARD_NAMES[c] for c in self.dealt)
        return " ".join(f"{seat}:{CARD_NAMES[card]}" for seat, card in self.deal.plays) or "(no card played)"


_PRIVATE_FIELDS = ("hand", "dead_hand", "sees_dead_hand")
"""The parts of the v2 observation only the seat itself sees: its cards, and the dead hand when it may."""


class PopeJoanObserver:
    """A seat's observation for OpenSpiel: the v2 tensor (with ``dict`` views named by ``LAYOUT``) and strings.

    The default (the seat's own and the public information) is the whole v2 observation; OpenSpiel's factored
    observations are its parts: ``public_info`` alone zeroes the private fields (``_PRIVATE_FIELDS``),
    ``private_info`` alone keeps only them.
    """

    def __init__(self, iig_obs_type: Any, params: Any) -> None:
        if params:
            raise OpenSpielUsageError(f"the Pope Joan observer takes no parameters, got {brief(params)}")
        private = iig_obs_type.private_info == pyspiel.PrivateInfoType.SINGLE_PLAYER
        if iig_obs_type.private_info == pyspiel.PrivateInfoType.ALL_PLAYERS:
            raise OpenSpielUsageError("the Pope Joan observer gives one seat's view; every seat's private cards at "
                                      "once (PrivateInfoType.ALL_PLAYERS) is not an observation of the game")
        self.public = iig_obs_type.public_info
        self.private = private
        self.perfect_recall = iig_obs_type.perfect_recall
        self.tensor = np.zeros(OBS_SIZE, np.float32)
        self.dict = {name: self.tensor[start:start + length] for name, start, length, _ in LAYOUT}

    def set_from(self, state: PopeJoanState, player: int) -> None:
        """Fill ``tensor`` with the seat's observation (while dealing: only the cards it has been dealt)."""
        player = state.game.check_seat(player, "the observer")
        if state.deal is None:
            self.tensor.fill(0.0)
            if self.private:
                for card in _dealt_to(state, player):
                    self.tensor[HAND + card] = 1.0
            return
        encode(state.deal, player, out=self.tensor)
        if not (self.public and self.private):
            keep = {name: self.dict[name].copy() for name in _PRIVATE_FIELDS}
            if self.private:
                self.tensor.fill(0.0)
            for name in _PRIVATE_FIELDS:
                self.dict[name][:] = keep[name] if self.private else 0.0

    def string_from(self, state: PopeJoanState, player: int) -> str:
        """``render.describe`` of the seat's view; the information state adds the history card by card; the
        factored observations are the history (public) and the hand (private)."""
        player = state.game.check_seat(player, "the observer")
        dealt = " ".join(CARD_NAMES[c] for c in sorted(_dealt_to(state, player))) or "nothing yet"
        if state.deal is None:
            if not self.private:
                return f"Dealing: {len(state.dealt)} cards dealt"
            return f"Dealing: {len(state.dealt)} cards dealt; seat {player} holds {dealt}" if self.public else \
                f"Dealt: {dealt}"
        view = seat_view(state.deal, player)
        labels = seat_labels(view.players)
        history = " ".join(f"{labels[p.seat]}:{CARD_NAMES[p.card]}" for p in view.history) or "(none)"
        if not self.private:
            return f"Turn-up {CARD_NAMES[view.turnup]}; history: {history}"
        if not self.public:
            hidden = f"; dead hand {' '.join(names_of(view.dead_hand))}" if view.dead_hand is not None else ""
            return f"Hand: {' '.join(names_of(view.hand)) or '(empty)'}{hidden}"
        text = describe(view)
        if self.perfect_recall:
            text += "\nHistory: " + history
        return text


def _dealt_to(state: PopeJoanState, player: int) -> list[int]:
    """The cards dealt so far to ``player`` (full game, while dealing)."""
    if isinstance(state.game, SmallPopeJoanGame):
        return []
    return [c for c, slot in zip(state.dealt, state.game.slots) if slot == player]


pyspiel.register_game(_FULL_TYPE, PopeJoanGame)
pyspiel.register_game(_SMALL_TYPE, SmallPopeJoanGame)
