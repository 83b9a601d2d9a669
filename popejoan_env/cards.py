"""Card ids, notation and bitmask helpers (stdlib only).

A card id is ``suit * 13 + rank`` with suits ``C=0 D=1 H=2 S=3`` and ranks
``A=0 2=1 … T=9 J=10 Q=11 K=12``; so ``AC=0``, ``9D=21``, ``8D=20`` (never in
play) and ``KS=51``.  A set of cards is a ``CardMask``: a Python int whose bit
``i`` is set when card ``i`` is in the set.

>>> parse_card("9D"), card_name(21), parse_card("10s")
(21, '9D', 48)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from popejoan_env.checks import as_int, brief
from popejoan_env.errors import UnknownCardError

CardMask = int

RANKS = "A23456789TJQK"
SUITS = "CDHS"
SUIT_NAMES = ("clubs", "diamonds", "hearts", "spades")
SUIT_SYMBOLS = "♣♦♥♠"
NUM_CARD_IDS = 52

ACE, JACK, QUEEN, KING = 0, 10, 11, 12
CLUBS, DIAMONDS, HEARTS, SPADES = 0, 1, 2, 3


def card_id(suit: int, rank: int) -> int:
    """Card id of ``rank`` (0 = Ace … 12 = King) in ``suit`` (0 = clubs … 3 = spades)."""
    return suit * 13 + rank


EIGHT_DIAMONDS = card_id(DIAMONDS, 7)
SEVEN_DIAMONDS = card_id(DIAMONDS, 6)
POPE = card_id(DIAMONDS, 8)

PACK: tuple[int, ...] = tuple(c for c in range(NUM_CARD_IDS) if c != EIGHT_DIAMONDS)
PACK_MASK: CardMask = sum(1 << c for c in PACK)
SUIT_MASKS: tuple[CardMask, ...] = tuple(
    sum(1 << card_id(s, r) for r in range(13)) & PACK_MASK for s in range(4)
)
SMALL_PACK: tuple[int, ...] = tuple(card_id(suit, r) for suit in (DIAMONDS, SPADES) for r in range(8, 13))
"""The small pack (rules option ``pack="small"``): 9♦ T♦ J♦ Q♦ K♦ and 9♠ T♠ J♠ Q♠ K♠.  Each suit is a run ending at
its King, so a card's successor in the small pack is its successor in the full pack (or none)."""
PACKS: dict[str, tuple[int, ...]] = {"full": PACK, "small": SMALL_PACK}
"""The cards of each pack, by the rules option ``pack``."""
PACK_MASKS: dict[str, CardMask] = {name: sum(1 << c for c in cards) for name, cards in PACKS.items()}
"""The bitmask of each pack in ``PACKS``."""
CARD_NAMES: tuple[str, ...] = tuple(RANKS[c % 13] + SUITS[c // 13] for c in range(NUM_CARD_IDS))

_PARSE: dict[str, int] = {}
for _c in PACK:
    _name = CARD_NAMES[_c]
    _PARSE[_name] = _c
    if _name[0] == "T":
        _PARSE["10" + _name[1]] = _c


def suit_of(card: int) -> int:
    """Suit index of a card id."""
    return card // 13


def rank_of(card: int) -> int:
    """Rank index of a card id (0 = Ace … 12 = King)."""
    return card % 13


def card_name(card: int) -> str:
    """Notation of a card id, e.g. ``21 -> '9D'``."""
    value = as_int(card)
    if value is None or not 0 <= value < NUM_CARD_IDS:
        raise UnknownCardError(f"unknown card id {brief(card)}: card ids are 0..51")
    return CARD_NAMES[value]


def parse_card(text: str | int) -> int:
    """Card id of a notation string (``'9D'``, ``'10s'``, ``'th'``); ints in the pack pass through."""
    if not isinstance(text, str):
        value = as_int(text)  # card ids: ints and numpy integers (e.g. an action sampled by a policy), never bools
        if value is None:
            raise UnknownCardError(f"unknown card {brief(text)}: a card is notation such as '9D' or an id 0..51")
        if 0 <= value < NUM_CARD_IDS and value != EIGHT_DIAMONDS:
            return value
        if value == EIGHT_DIAMONDS:
            raise UnknownCardError("unknown card 8D (id 20): the 8 of diamonds is not in the pack")
        raise UnknownCardError(f"unknown card id {brief(text)}: card ids are 0..51, 20 (8D) excluded")
    if not isinstance(text, str):
        raise UnknownCardError(f"unknown card {brief(text)}: expected notation such as '9D' or 'TS'")
    # ASCII only: str.upper() maps some other letters onto ASCII ones ('\u017f', the long s, becomes 'S').
    card = _PARSE.get(text.strip().upper()) if text.isascii() else None
    if card is None:
        if text.strip().upper() == "8D":
            raise UnknownCardError("unknown card '8D': the 8 of diamonds is not in the Pope Joan pack")
        raise UnknownCardError(
            f"unknown card {brief(text)}: expected a rank of {RANKS} (or 10) followed by a suit of {SUITS}"
        )
    return card


def parse_cards(texts: Iterable[str | int]) -> list[int]:
    """Card ids of several notation strings."""
    return [parse_card(t) for t in texts]


def mask_of(cards: Iterable[int]) -> CardMask:
    """Bitmask holding the given card ids."""
    mask = 0
    for c in cards:
        mask |= 1 << c
    return mask


def iter_cards(mask: CardMask) -> Iterator[int]:
    """Card ids in a bitmask, lowest id first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def cards_of(mask: CardMask) -> list[int]:
    """Card ids in a bitmask as a sorted list."""
    return list(iter_cards(mask))


def names_of(mask_or_cards: CardMask | Iterable[int]) -> list[str]:
    """Notation of the cards in a bitmask (or an iterable of ids), in id order."""
    cards = cards_of(mask_or_cards) if isinstance(mask_or_cards, int) else list(mask_or_cards)
    return [CARD_NAMES[c] for c in cards]
