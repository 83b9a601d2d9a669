"""Pope Joan as an OpenSpiel game: ``python_pope_joan`` and ``python_pope_joan_small``, one deal each.

Importing this module registers both games with ``pyspiel.register_game``, so
``pyspiel.load_game("python_pope_joan", {"players": 4})`` and every OpenSpiel
algorithm work on them (CFR and its Monte-Carlo variants, information-set MCTS,
``evaluate.exploitability.nash_conv`` …).  The engine plays; this module only translates:

| OpenSpiel | here |
|---|---|
| players | the seats ``0 … n-1``; the game parameter ``players`` (3–8; the small game: 3) |
| actions | card ids 0–51 (``cards.py``); a state stops only at real decisions: forced cards (R8) and a lone legal lead are played by the engine's one decision loop (``Deal.advance``) |
| chance | ``python_pope_joan``: one chance node per card dealt, in dealing order (eldest first, the dead hand as the rules deal it, the turn-up last), each remaining card equally likely; ``python_pope_joan_small``: one chance node whose outcomes are every deal of the 10 cards (index into ``small_deals``) |
| returns | ``Deal.delta`` at the end of the deal (dressing included), 0 before |
| tensors | the v2 observation (``observation.encode``, 1285 floats, ``LAYOUT`` names its parts); the information state and the observation are the same tensor, because the v2 observation already holds the whole public history |
| strings | the observation string is ``render.describe`` of the seat's view; the information-state string adds the history, card by card with the relative seat that played it |
| resampling | ``resample_from_infostate`` deals the hidden cards with ``search.worlds.WorldSampler`` (consistent with the seat's view) and replays the cards played so far |

Game parameters: ``players``, ``dealer`` (seat 0 by default), ``preset`` (``modern`` or ``victorian``: the base) and
every ``Rules`` option (``lead``, ``deal``, ``pope_turnup``, ``pair_split``, ``ace_high``,
``dealer_sees_dead_hand``, ``pope_excused``, ``dressing`` as eight counts separated by ``/``, ``start_counters``,
``allow_credit``), each given as text (``true``, ``any``, ``6/2/2/1/1/1/1/1``, ``48``): an option given overrides the
preset, an empty one (the default) leaves the preset's.  The small game also takes ``turnup`` (a card of the
small pack, or empty for a random one): fixing it leaves a tenth of the deals (1,680 under ``deal=equal``).  The board
starts empty and every balance at 0, so the returns are the counters each seat wins or loses in the deal.
"""

from __future__ import annotations

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
from popejoan_env.engine import Deal, deal_cards
from popejoan_env.small_game import small_deals
from popejoan_env.observation import HAND, LAYOUT, OBS_SIZE, encode
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.render import describe, seat_labels
from popejoan_env.rules import COMPARTMENTS, MAX_PLAYERS, MIN_PLAYERS, SMALL_PACK_PLAYERS, Rules
from popejoan_env.seat_view import seat_view

GAME_NAME = "python_pope_joan"
"""The full game's OpenSpiel name."""
SMALL_GAME_NAME = "python_pope_joan_small"
"""The small game's OpenSpiel name (``pack="small"``, 3 players)."""

_OPTIONS = ("lead", "deal", "pope_turnup", "pair_split", "ace_high", "dealer_sees_dead_hand", "pope_excused",
            "dressing", "start_counters", "allow_credit")
"""The ``Rules`` options a game parameter may set (``pack`` is the game's: full or small)."""


def _defaults(players: int) -> dict[str, Any]:
    """The parameter specification: every parameter with its default; a rules option's ``""`` is the preset's."""
    return {"players": players, "dealer": 0, "preset": "modern", **{option: "" for option in _OPTIONS}}


def rules_of_params(params: Mapping[str, Any], pack: str = "full") -> Rules:
    """The ``Rules`` of a game's parameters: the preset, then each option given as text (``true``, ``any``,
    ``6/2/2/1/1/1/1/1``, ``48``), on the pack of the game."""
    rules = Rules.preset(params.get("preset", "modern"))
    changes: dict[str, Any] = {}
    for option in _OPTIONS:
        text = str(params.get(option, "")).strip()
        if not text:
            continue
        default = getattr(rules, option)
        try:
            if isinstance(default, bool):
                if text.lower() not in ("true", "false", "1", "0"):
                    raise ValueError
                changes[option] = text.lower() in ("true", "1")
            elif option == "dressing":
                changes[option] = tuple(int(x) for x in text.split("/"))
            elif isinstance(default, int):
                changes[option] = int(text)
            else:
                changes[option] = text
        except ValueError:
            want = ("true or false" if isinstance(default, bool) else
                    f"{len(COMPARTMENTS)} counts separated by '/' ({', '.join(COMPARTMENTS)})"
                    if option == "dressing" else "an integer")
            raise RulesError(f"game parameter {option} must be {want}, got {text!r}") from None
    if pack != "full":
        changes["pack"] = pack
    return rules.replace(**changes) if changes else rules


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


class PopeJoanGame(pyspiel.Game):
    """One deal of Pope Joan with the rules of the game parameters."""

    pack = "full"
    game_type = _FULL_TYPE

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        params = dict(params or {})
        known = set(self.game_type.parameter_specification)
        unknown = sorted(set(params) - known)
        if unknown:
            raise RulesError(f"unknown game parameter(s) {unknown} of {self.game_type.short_name}; "
                             f"parameters are {sorted(known)}")
        self.rules = rules_of_params(params, self.pack)
        self.players = int(params.get("players", self.game_type.parameter_specification["players"]))
        self.rules.hand_sizes(self.players)  # refuses a table the pack cannot be dealt to
        self.dealer = int(params.get("dealer", 0))
        if not 0 <= self.dealer < self.players:
            raise RulesError(f"game parameter dealer must be a seat 0..{self.players - 1}, got {self.dealer}")
        self._setup(params)
        total = sum(self.rules.dressing) + self.rules.pack_size
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_CARD_IDS, max_chance_outcomes=self.max_chance(), num_players=self.players,
            min_utility=-float(total), max_utility=float(total), utility_sum=None,
            max_game_length=self.chance_steps() + self.rules.pack_size)
        super().__init__(self.game_type, info, params)

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


class SmallPopeJoanGame(PopeJoanGame):
    """One deal of the small game (``pack="small"``, 3 players): one chance node deals all 10 cards."""

    pack = "small"
    game_type = _SMALL_TYPE

    def _setup(self, params: Mapping[str, Any]) -> None:
        text = params.get("turnup", "")
        turnup = None
        if text:
            turnup = parse_card(text)
            if not (PACK_MASKS["small"] >> turnup) & 1:
                raise RulesError(f"game parameter turnup {text!r} is not a card of the small pack "
                                 f"({' '.join(names_of(PACK_MASKS['small']))})")
        self.deals = small_deals(self.rules, self.dealer, turnup)
        self.deal_index = {d: i for i, d in enumerate(self.deals)}

    def max_chance(self) -> int:
        """Outcomes of the one chance node: every deal."""
        return len(self.deals)

    def chance_steps(self) -> int:
        """One chance node deals everything."""
        return 1


class _Shared:
    """A reference that ``copy.deepcopy`` (OpenSpiel's clone of a Python state) keeps instead of copying."""

    __slots__ = ("game",)

    def __init__(self, game: PopeJoanGame) -> None:
        self.game = game

    def __deepcopy__(self, memo: dict[int, Any]) -> _Shared:
        return self


class _Progress:
    """A state's own data; ``copy.deepcopy`` copies it with ``Deal.copy`` (a clone is the search's hot path)."""

    __slots__ = ("dealt", "deal", "decisions")

    def __init__(self) -> None:
        self.dealt: list[int] = []
        self.deal: Deal | None = None
        self.decisions: list[int] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> _Progress:
        new = _Progress()
        new.dealt = list(self.dealt)
        new.deal = self.deal.copy() if self.deal is not None else None
        new.decisions = list(self.decisions)
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
        """The cards chosen at decisions (not forced cards or lone leads), in order: the player actions."""
        return self._now.decisions

    @property
    def game(self) -> PopeJoanGame:
        """The game this state belongs to (shared by every clone, never copied)."""
        return self._game.game

    # ----------------------------------------------------------------- whose turn
    def current_player(self) -> int:
        """The seat to choose, CHANCE while dealing, TERMINAL once the deal is over."""
        if self.deal is None:
            return pyspiel.PlayerId.CHANCE
        if self.deal.done:
            return pyspiel.PlayerId.TERMINAL
        return self.deal.to_act

    def _legal_actions(self, player: int) -> list[int]:
        """The seat's legal cards, ascending."""
        return sorted(self.deal.legal_actions()) if self.deal is not None and player == self.deal.to_act else []

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """Full game: each card not yet dealt, equally likely; small game: each deal, equally likely."""
        if isinstance(self.game, SmallPopeJoanGame):
            p = 1.0 / len(self.game.deals)
            return [(i, p) for i in range(len(self.game.deals))]
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
        if self.deal is None:
            self._deal_out(action)
        else:
            self.deal.play(action)
            self.decisions.append(action)
        if self.deal is not None:
            self.deal.advance()

    def _deal_out(self, action: int) -> None:
        """Apply one chance outcome; the last one builds the ``Deal`` (dressing and turn-up payout included)."""
        game = self.game
        if isinstance(game, SmallPopeJoanGame):
            if not 0 <= action < len(game.deals):
                raise PopeJoanError(f"chance outcome {action} is not a deal index 0..{len(game.deals) - 1}")
            *hands, dead = game.deals[action]
            self._now.deal = Deal.from_cards(hands, dead, game.dealer, game.rules)
            return
        pack = PACK_MASKS[game.rules.pack]
        if not 0 <= action < NUM_CARD_IDS or not (pack >> action) & 1 or action in self.dealt:
            raise PopeJoanError(f"chance outcome {action} is not a card left to deal")
        self.dealt.append(action)
        if len(self.dealt) == len(game.slots):
            hands: list[list[int]] = [[] for _ in range(game.players)]
            dead: list[int] = []
            for card, slot in zip(self.dealt, game.slots):
                (dead if slot < 0 else hands[slot]).append(card)
            self._now.deal = Deal.from_cards(hands, dead, game.dealer, game.rules)

    def _action_to_string(self, player: int, action: int) -> str:
        """A card in notation; a chance outcome names the card and who receives it (or the deal)."""
        if player == pyspiel.PlayerId.CHANCE:
            if isinstance(self.game, SmallPopeJoanGame):
                *hands, dead = self.game.deals[action]
                return "Deal " + " | ".join(" ".join(CARD_NAMES[c] for c in h) for h in hands) + \
                    " | dead " + " ".join(CARD_NAMES[c] for c in dead)
            slot = self.game.slots[len(self.dealt)] if len(self.dealt) < len(self.game.slots) else -1
            return f"Deal {card_name(action)} to " + (f"seat {slot}" if slot >= 0 else "the dead hand")
        return card_name(action)

    # ----------------------------------------------------------------- the end
    def is_terminal(self) -> bool:
        """True once the deal is over (a seat went out, or the turn-up ended it)."""
        return self.deal is not None and self.deal.done

    def returns(self) -> list[float]:
        """``Deal.delta`` once the deal is over, zeros before."""
        if self.deal is None or not self.deal.done:
            return [0.0] * self.game.players
        return [float(x) for x in self.deal.delta]

    def resample_from_infostate(self, player_id: int, probability_sampler: Callable[[], float]) -> PopeJoanState:
        """A state the seat cannot tell from this one: the hidden cards dealt by ``WorldSampler`` (consistent with
        its view), the same cards played."""
        deal = self.deal
        if deal is None:
            raise PopeJoanError("resample_from_infostate needs a dealt state (the deal is still being dealt)")
        n = deal.players
        rng = np.random.default_rng(int(probability_sampler() * 2.0**53))
        world = WorldSampler(seat_view(deal, player_id)).sample(rng)
        played = [0] * n
        for seat, card in deal.plays:
            played[seat] |= 1 << card
        hands = [world.hands[(s - player_id) % n] | played[s] for s in range(n)]
        dead = list(world.dead)
        state = self.game.new_initial_state()
        for outcome in self._chance_sequence(hands, dead):
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
            raise PopeJoanError(f"the Pope Joan observer takes no parameters, got {params}")
        private = iig_obs_type.private_info == pyspiel.PrivateInfoType.SINGLE_PLAYER
        if iig_obs_type.private_info == pyspiel.PrivateInfoType.ALL_PLAYERS:
            raise PopeJoanError("the Pope Joan observer gives one seat's view; every seat's private cards at once "
                                "(PrivateInfoType.ALL_PLAYERS) is not an observation of the game")
        self.public = iig_obs_type.public_info
        self.private = private
        self.perfect_recall = iig_obs_type.perfect_recall
        self.tensor = np.zeros(OBS_SIZE, np.float32)
        self.dict = {name: self.tensor[start:start + length] for name, start, length, _ in LAYOUT}

    def set_from(self, state: PopeJoanState, player: int) -> None:
        """Fill ``tensor`` with the seat's observation (while dealing: only the cards it has been dealt)."""
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
