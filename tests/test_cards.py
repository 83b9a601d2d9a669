"""Card ids, notation and bitmask helpers (RULES.md "Cards")."""

from __future__ import annotations

import numpy as np
import pytest

from popejoan_env.cards import (
    CARD_NAMES, DIAMONDS, EIGHT_DIAMONDS, NUM_CARD_IDS, PACK, PACK_MASK, POPE, RANKS, SEVEN_DIAMONDS, SUIT_MASKS,
    SUITS, card_id, card_name, cards_of, iter_cards, mask_of, names_of, parse_card, parse_cards, rank_of, suit_of,
)
from popejoan_env.errors import UnknownCardError


def test_card_ids_follow_the_contract() -> None:
    assert (parse_card("AC"), parse_card("9D"), parse_card("KS")) == (0, 21, 51)
    assert EIGHT_DIAMONDS == 20 and CARD_NAMES[20] == "8D" and 20 not in PACK
    assert POPE == 21 and SEVEN_DIAMONDS == 19
    assert len(PACK) == 51 and PACK == tuple(sorted(PACK)) and PACK_MASK.bit_count() == 51
    assert NUM_CARD_IDS == 52 and len(CARD_NAMES) == 52
    for suit in range(4):
        for rank in range(13):
            c = card_id(suit, rank)
            assert c == suit * 13 + rank and suit_of(c) == suit and rank_of(c) == rank
            assert CARD_NAMES[c] == RANKS[rank] + SUITS[suit]


def test_suit_masks_leave_out_the_eight_of_diamonds() -> None:
    assert [m.bit_count() for m in SUIT_MASKS] == [13, 12, 13, 13]
    assert not (SUIT_MASKS[DIAMONDS] >> EIGHT_DIAMONDS) & 1
    assert SUIT_MASKS[0] | SUIT_MASKS[1] | SUIT_MASKS[2] | SUIT_MASKS[3] == PACK_MASK


def test_every_card_name_round_trips() -> None:
    for c in PACK:
        name = card_name(c)
        assert parse_card(name) == c and parse_card(name.lower()) == c and parse_card(c) == c


@pytest.mark.parametrize(("text", "card"), [("10S", 48), ("10s", 48), ("th", 35), (" TS ", 48), ("9d", 21), ("aC", 0)])
def test_parser_accepts_ten_and_lower_case(text: str, card: int) -> None:
    assert parse_card(text) == card


def test_parser_accepts_numpy_integers() -> None:
    assert parse_card(np.int64(21)) == 21 and type(parse_card(np.int32(0))) is int
    assert card_name(np.int64(51)) == "KS"


@pytest.mark.parametrize("bad", ["8D", "8d", "1X", "", "ZZ", "11S", "T", "9DD", 20, 52, -1, True, 1.5, None, np.int64(20)])
def test_parser_rejects_unknown_cards(bad: object) -> None:
    with pytest.raises(UnknownCardError):
        parse_card(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [52, -1, True, "9D", 1.5])
def test_card_name_rejects_bad_ids(bad: object) -> None:
    with pytest.raises(UnknownCardError, match="card ids are 0..51"):
        card_name(bad)  # type: ignore[arg-type]


def test_bitmask_helpers() -> None:
    cards = parse_cards(["KS", "AC", "9D"])
    assert cards == [51, 0, 21]
    mask = mask_of(cards)
    assert mask == (1 << 51) | 1 | (1 << 21)
    assert list(iter_cards(mask)) == cards_of(mask) == [0, 21, 51]
    assert names_of(mask) == ["AC", "9D", "KS"] and names_of([51, 0]) == ["KS", "AC"]
    assert mask_of([]) == 0 and cards_of(0) == [] and names_of(0) == []
    assert cards_of(PACK_MASK) == list(PACK)
