"""The rules object: every variant of RULES.md as one frozen dataclass, plus presets.

>>> Rules.preset("victorian").lead
'any'
>>> Rules(lead="any").replace(ace_high=True).ace_high
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from popejoan_env.cards import PACKS
from popejoan_env.checks import as_int, brief, parse_json_value
from popejoan_env.errors import RulesError

COMPARTMENTS: tuple[str, ...] = (
    "pope", "matrimony", "intrigue", "ace", "king", "queen", "jack", "game",
)
POPE_C, MATRIMONY_C, INTRIGUE_C, ACE_C, KING_C, QUEEN_C, JACK_C, GAME_C = range(8)
DEFAULT_DRESSING: tuple[int, ...] = (6, 2, 2, 1, 1, 1, 1, 1)
MIN_PLAYERS, MAX_PLAYERS = 3, 8
SMALL_PACK_PLAYERS = 3
"""The one table size of ``pack="small"``: its 10 cards make three for each of 3 players and the turn-up."""
MAX_OPTION_COUNTERS = 100_000
"""Largest ``start_counters`` or dressing count accepted (far beyond any table; keeps observations finite)."""

_CHOICES: dict[str, tuple[str, ...]] = {
    "lead": ("lowest_of_suit", "any"),
    "deal": ("equal", "all_round", "fixed_stock"),
    "pope_turnup": ("pays_pope", "ends_deal"),
    "pair_split": ("none", "halves"),
    "pack": ("full", "small"),
}
_BOOLS = ("ace_high", "dealer_sees_dead_hand", "pope_excused", "allow_credit")


@dataclasses.dataclass(frozen=True)
class Rules:
    """Every rules option of RULES.md "Variants"; the defaults are the ``modern`` preset."""

    lead: str = "lowest_of_suit"
    """``lowest_of_suit``: lead the lowest card of a suit held (R7); ``any``: any card held."""
    deal: str = "equal"
    """``equal``, ``all_round`` or ``fixed_stock`` (R3)."""
    pope_turnup: str = "pays_pope"
    """``pays_pope``: a turned-up 9♦ pays the dealer the pope compartment; ``ends_deal``: also game and a counter per card (R5)."""
    pair_split: str = "none"
    """``none`` or ``halves``: matrimony/intrigue split when the two cards are played by different players."""
    ace_high: bool = False
    """If true the Ace ranks above the King: K → A continues, the A stops, a 2 can only be led."""
    dealer_sees_dead_hand: bool = False
    """If true the dealer's observation includes the whole dead hand."""
    pope_excused: bool = True
    """R11: a player still holding the 9♦ pays nothing when another goes out."""
    dressing: tuple[int, ...] = DEFAULT_DRESSING
    """Counters the dealer puts on each compartment (order of ``COMPARTMENTS``)."""
    start_counters: int = 48
    """Each player's balance at the start of a session."""
    allow_credit: bool = True
    """If false a session ends when the next dealer cannot pay the dressing."""
    pack: str = "full"
    """``full``: the 51 cards; ``small``: the 10 cards of ``cards.SMALL_PACK``, for 3 players (docs/small_game.md)."""
    name: str = dataclasses.field(default="", compare=False)
    """The preset these options equal (``modern``, ``victorian``), else ``custom``; always derived from the options."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Rules:
        """Refuse unknown option names with a RulesError (the dataclass would raise a bare TypeError)."""
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(kwargs) - set(known))
        if unknown:  # each name shown briefly: a mapping from a file may hold a name of any length
            raise RulesError(f"unknown rules option(s) {brief(unknown, 200)}; options are "
                             f"{sorted(set(known) - {'name'})}")
        if len(args) > len(known):
            raise RulesError(f"Rules takes at most {len(known)} options, got {len(args)} positional values")
        return super().__new__(cls)

    def __post_init__(self) -> None:
        for field, choices in _CHOICES.items():
            value = getattr(self, field)
            if value not in choices:
                raise RulesError(f"rules option {field}={brief(value)} is not allowed; choose one of {list(choices)}")
        for field in _BOOLS:
            if not isinstance(getattr(self, field), bool):
                raise RulesError(f"rules option {field} must be true or false, not {brief(getattr(self, field))}")
        dressing = self.dressing
        if isinstance(dressing, Mapping):
            unknown = sorted(str(k) for k in set(dressing) - set(COMPARTMENTS))
            if unknown:
                raise RulesError(f"unknown compartment(s) {unknown} in dressing; compartments are {list(COMPARTMENTS)}")
            dressing = tuple(dressing.get(c, 0) for c in COMPARTMENTS)
        if not isinstance(dressing, (tuple, list)) or len(dressing) != len(COMPARTMENTS):
            raise RulesError(f"dressing must give 8 counts (one per compartment {list(COMPARTMENTS)}), got {brief(self.dressing)}")
        counts = [as_int(x) for x in dressing]
        if not all(x is not None and 0 <= x <= MAX_OPTION_COUNTERS for x in counts):
            raise RulesError(f"dressing counts must be non-negative integers (at most {MAX_OPTION_COUNTERS:,}), "
                            f"got {brief(list(dressing))}")
        object.__setattr__(self, "dressing", tuple(counts))
        start = as_int(self.start_counters)
        if start is None:
            raise RulesError(f"start_counters must be an integer, got {brief(self.start_counters)}")
        if start < 0:
            raise RulesError(f"start_counters must be 0 or more, got {self.start_counters}")
        if start > MAX_OPTION_COUNTERS:
            raise RulesError(f"start_counters must be at most {MAX_OPTION_COUNTERS:,}, got a number of "
                             f"{len(str(start)):,} digits" if start > 10**30 else
                             f"start_counters must be at most {MAX_OPTION_COUNTERS:,}, got {start:,}")
        object.__setattr__(self, "start_counters", start)
        if self.pack == "small" and self.deal == "fixed_stock":
            raise RulesError("rules option deal=fixed_stock needs a stock of six stops and the turn-up aside, which "
                             "the 10 cards of pack=small cannot give; use deal=equal or all_round with it")
        # The name is a fact about the options, never a label a caller can set
        # (a wrong label would break to_dict/from_dict); only the module's own
        # preset definitions, made before PRESETS exists, pass one in.
        if "PRESETS" in globals() or not self.name:
            object.__setattr__(self, "name", _preset_name_of(self))

    @classmethod
    def preset(cls, name: str) -> Rules:
        """The named preset: ``modern`` or ``victorian``."""
        try:
            return PRESETS[name]
        except (KeyError, TypeError):
            raise RulesError(f"unknown rules preset {brief(name)}; presets are {sorted(PRESETS)}") from None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rules:
        """Rules from a mapping such as a record's ``rules``; ``preset`` names the base."""
        if not isinstance(data, Mapping):
            raise RulesError(f"rules must be a mapping of options, got {type(data).__name__}")
        data = dict(data)
        preset = data.pop("preset", "modern")
        # to_dict() writes "custom" for mixed options and then lists every
        # option, so the base does not matter.
        base = MODERN if preset == "custom" else cls.preset(preset)
        data.pop("name", None)
        return base.replace(**data)

    def replace(self, /, **changes: Any) -> Rules:
        """A copy with some options changed; unknown option names are an error."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise RulesError(f"unknown rules option(s) {brief(unknown, 200)}; options are {sorted(known - {'name'})}")
        if "dressing" in changes and isinstance(changes["dressing"], Mapping):
            changes["dressing"] = Rules(dressing=changes["dressing"]).dressing
        changes.pop("name", None)
        return dataclasses.replace(self, name="", **changes)

    def to_dict(self) -> dict[str, Any]:
        """Every option as JSON-friendly values, with ``preset`` naming the preset (or ``custom``); ``pack`` only
        when it is not ``full``."""
        out: dict[str, Any] = {"preset": self.name}
        for f in dataclasses.fields(self):
            if f.name != "name" and not (f.name == "pack" and self.pack == "full"):
                # pack is written only when it is not the full pack, so every record and model file written
                # before the option existed reads and compares the same (the golden records)
                value = getattr(self, f.name)
                out[f.name] = dict(zip(COMPARTMENTS, value)) if f.name == "dressing" else value
        return out

    @property
    def pack_size(self) -> int:
        """Cards in the pack: 51, or 10 for ``pack="small"``."""
        return len(PACKS[self.pack])

    def can_deal(self, balance: Any) -> Any:
        """Whether a dealer holding ``balance`` counters may deal (elementwise on a numpy array): always with
        credit, else only when it can pay the dressing (R1); a session ends at a dealer who cannot."""
        return self.allow_credit | (balance >= sum(self.dressing))

    def check_startable(self) -> None:
        """Refuse rules under which no session can deal its first deal (a ``RulesError`` saying why)."""
        if not self.can_deal(self.start_counters):
            raise RulesError(
                f"no deal can start: with allow_credit=false a dealer needs {sum(self.dressing)} counters for "
                f"the dressing and start_counters is {self.start_counters}")

    def hand_sizes(self, players: int) -> tuple[list[int], int]:
        """Cards dealt to each seat position from eldest on, and the dead hand's size (R3)."""
        check_players(players)
        cards = self.pack_size
        if self.pack == "small" and players != SMALL_PACK_PLAYERS:
            raise RulesError(f"pack=small is dealt to {SMALL_PACK_PLAYERS} players (3 cards each, the turn-up "
                             f"alone in the dead hand), got {players} players")
        if self.deal == "equal" and self.pack == "small":
            # Not floor(10/4) = 2 each: with two cards only eldest ever has a choice (docs/small_game.md).
            q = (cards - 1) // players
            return [q] * players, cards - players * q
        if self.deal == "equal":
            q = cards // (players + 1)
            return [q] * players, cards - players * q
        if self.deal == "fixed_stock":
            q = (cards - 1 - 6) // players
            return [q] * players, cards - players * q
        base, extra = divmod(cards, players + 1)
        sizes = [base + (1 if i < extra else 0) for i in range(players + 1)]
        return sizes[:players], sizes[players]


def _preset_name_of(rules: Rules) -> str:
    for name, preset in globals().get("PRESETS", {}).items():
        if rules == preset:
            return name
    return "custom"


def check_players(players: int) -> int:
    """The player count as an int (a numpy integer's too: records are JSON); a RulesError outside 3..8."""
    count = as_int(players)
    if count is None or not MIN_PLAYERS <= count <= MAX_PLAYERS:
        raise RulesError(f"players must be an integer from {MIN_PLAYERS} to {MAX_PLAYERS}, got {brief(players)}")
    return count


MODERN = Rules(name="modern")
VICTORIAN = Rules(lead="any", deal="fixed_stock", pope_turnup="ends_deal", name="victorian")
# Rules() equal to a preset takes its name from here on.
PRESETS: dict[str, Rules] = {"modern": MODERN, "victorian": VICTORIAN}


RulesLike = Rules | str | Mapping[str, Any] | None
"""What a public entry point takes for the rules (a constructor of the engine or an env, a tournament, a model
file's loader): a ``Rules``, a preset name, a mapping of options, or None (``modern``).  ``resolve_rules`` turns
it into the ``Rules`` once, there; everything inside takes a ``Rules``."""


def resolve_rules(rules: RulesLike) -> Rules:
    """A ``Rules`` from a Rules object, a preset name, a mapping of options, or None (modern)."""
    if rules is None:
        return MODERN
    if isinstance(rules, Rules):
        return rules
    if isinstance(rules, str):
        return Rules.preset(rules)
    if isinstance(rules, Mapping):
        return Rules.from_dict(rules)
    raise RulesError(f"rules must be a Rules object, a preset name or a mapping, got {type(rules).__name__}")


def parse_rules_options(preset: str, options: Sequence[str]) -> Rules:
    """The ``Rules`` of a preset with ``KEY=VALUE`` overrides (JSON values, else text): both command lines' parser."""
    rules = Rules.preset(preset)
    changes: dict[str, Any] = {}
    for option in options:
        key, sep, text = option.partition("=")
        if not sep or not key.strip():
            raise RulesError(f"--rules-option expects KEY=VALUE, got {option!r}")
        changes[key.strip()] = parse_json_value(text, f"--rules-option {key.strip()}")
    return rules.replace(**changes) if changes else rules
