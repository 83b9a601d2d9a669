"""The batch's one state (``BatchState``, pgx's ``State``) and its look-up tables (``Tables``), per (rules, table size).

Cards are kept in *positions*: under ``ace_high`` the Ace moves above the King
of its suit, so a successor is always the next position (ace low, a position
is the card id).  Hands are 64-bit masks of positions.

>>> state = allocate(2, players=4, dead_size=3)
>>> state.hands.shape, state.owner.shape, state.board.shape
((2, 4), (2, 52), (2, 8))
"""

from __future__ import annotations

from types import ModuleType
from typing import NamedTuple

import numpy as np

from popejoan_env.cards import ACE, EIGHT_DIAMONDS, JACK, KING, NUM_CARD_IDS, PACK, POPE, QUEEN, card_id
from popejoan_env.engine import EMPTY_OWNER
from popejoan_env.checks import as_int, brief
from popejoan_env.errors import InvalidDealError, MissingDependencyError, RulesError
from popejoan_env.rules import ACE_C, JACK_C, KING_C, POPE_C, QUEEN_C, Rules

__all__ = ["MAX_BATCH_DEALS", "MAX_EVENTS", "BatchState", "Tables", "allocate", "check_batch_size", "compiled",
           "popcount", "position_masks", "tables_of"]

MAX_BATCH_DEALS = 1 << 22
"""Most deals one batch holds (4,194,304): about 1 kB of state each, so at most about 4 GB of arrays."""
MAX_EVENTS = 16
"""Most awards one deal can make (12): turn-up and game (R5), four trump honours and the Pope, two pairs split,
the game."""


class BatchState(NamedTuple):
    """Every deal of a batch, one row per deal (``n`` deals, ``p`` seats); what the kernels read and write."""

    hands: np.ndarray            # [n, p] uint64: each seat's hand, position bits
    held: np.ndarray             # [n] uint64: the union of the hands
    played: np.ndarray           # [n] uint64: the positions played so far
    dead: np.ndarray             # [n] uint64: the dead hand, position bits
    revealed: np.ndarray         # [n] uint64: dead positions shown to all (turn-up, successors a sequence stopped at)
    owner: np.ndarray            # [n, 52] int8 by card id: seat holding it, or DEAD (-1), PLAYED (-2), NOT_IN_PACK (-3)
    initial_owner: np.ndarray    # [n, 52] int8 by card id: the owner table as dealt
    dead_cards: np.ndarray       # [n, dead size] int8: the dead hand by card id, turn-up last (-1 pads a shorter one)
    board: np.ndarray            # [n, 8] int64: counters in each compartment (rules.COMPARTMENTS order)
    balances: np.ndarray         # [n, p] int64: each seat's counters
    board_before: np.ndarray     # [n, 8] int64: the board before this deal's dressing
    balances_before: np.ndarray  # [n, p] int64: the balances before this deal's dressing
    dealer: np.ndarray           # [n] int64: the dealer's seat
    to_act: np.ndarray           # [n] int64: the seat to lead, -1 in a deal that is over
    leader: np.ndarray           # [n] int64: the seat that leads (the player of the last card, R9)
    winner: np.ndarray           # [n] int64: the seat that went out, -1 (none yet, or the deal ended at its turn-up)
    done: np.ndarray             # [n] bool: the deal is over
    turnup: np.ndarray           # [n] int64: the turn-up's card id
    trumps: np.ndarray           # [n] int64: the trumps suit (the turn-up's)
    pair_by: np.ndarray          # [n, 3] int64: who played the King, Queen and Jack of trumps (-1: not played)
    play_order: np.ndarray       # [n, 52] int8 by card id: its place in the history (1 = played first), 0 if unplayed
    led: np.ndarray              # [n, 52] bool by card id: the card was played as a lead (R7), not due (R8)
    num_plays: np.ndarray        # [n] int64: cards played in the deal
    deal_ids: np.ndarray         # [n] int64: global number of the deal in the order dealt
    deal_in_session: np.ndarray  # [n] int64: the deal's number in its session, from 1
    session_ids: np.ndarray      # [n] int64: the session's number, in the order sessions started
    events: np.ndarray           # [n, MAX_EVENTS, 5] int64: awards if recording: key, cause, seat, compartment, amount
                                 # (int64: an amount is a compartment's count, which a board may hold up to 2**53-1)
    num_events: np.ndarray       # [n] int64: awards written in ``events``


class Tables(NamedTuple):
    """The look-up tables and flags of one (rules, table size), shared read-only by every batch of the pair."""

    pos_of_card: np.ndarray   # [52] int64: card id -> position
    card_of_pos: np.ndarray   # [52] int64: position -> card id
    pos_bit: np.ndarray       # [52] uint64: card id -> its position's bit (0 for the 8♦, not in the pack)
    seat_table: np.ndarray    # [p, 51] int64: [dealer, j] the seat receiving the j-th card dealt, -1 for the dead hand
    dead_columns: np.ndarray  # [dead size] int64: where the dead hand's cards lie in the order dealt, the turn-up last
    comp_of_pos: np.ndarray   # [4 * 64] int64: [trumps * 64 + position] the compartment a play takes, or -1 (R10)
    turnup_comp: np.ndarray   # [4 * 52] int64: [trumps * 52 + card id] the compartment a turn-up takes, or -1 (R5)
    dressing: np.ndarray      # [8] int64: counters the dealer puts in each compartment (R1)
    empty_owner: np.ndarray   # [52] int8: the owner table before a deal (every card DEAD, the 8♦ NOT_IN_PACK)
    ace_high: bool            # the Ace ranks above the King (positions are not card ids)
    lead_any: bool            # rules.lead == "any": any card may be led, not only the lowest of a suit
    pope_excused: bool        # the 9♦'s holder pays nothing when a seat goes out
    halves: bool              # rules.pair_split == "halves": a pair split between two seats pays each half
    ends_deal: bool           # rules.pope_turnup == "ends_deal": a turned-up Pope ends the deal (R5)
    pope_pos: int             # the Pope's position


def check_batch_size(n: object, what: str = "num_deals") -> int:
    """``n`` as a batch's size, 1..``MAX_BATCH_DEALS``; an InvalidDealError naming ``what`` and the limit if not."""
    size = as_int(n)
    if size is None or not 1 <= size <= MAX_BATCH_DEALS:
        raise InvalidDealError(f"{what} must be an integer 1..{MAX_BATCH_DEALS:,} (MAX_BATCH_DEALS: about 1 kB of "
                               f"state a deal), got {brief(n)}")
    return size


def allocate(n: int, players: int, dead_size: int) -> BatchState:
    """A zeroed state of ``n`` deals (``to_act`` 0, ``winner`` and ``pair_by`` -1)."""
    zeros = np.zeros
    return BatchState(
        hands=zeros((n, players), np.uint64), held=zeros(n, np.uint64), played=zeros(n, np.uint64),
        dead=zeros(n, np.uint64), revealed=zeros(n, np.uint64), owner=zeros((n, NUM_CARD_IDS), np.int8),
        initial_owner=zeros((n, NUM_CARD_IDS), np.int8), dead_cards=zeros((n, dead_size), np.int8),
        board=zeros((n, 8), np.int64), balances=zeros((n, players), np.int64), board_before=zeros((n, 8), np.int64),
        balances_before=zeros((n, players), np.int64), dealer=zeros(n, np.int64), to_act=zeros(n, np.int64),
        leader=zeros(n, np.int64), winner=np.full(n, -1, np.int64), done=zeros(n, bool), turnup=zeros(n, np.int64),
        trumps=zeros(n, np.int64), pair_by=np.full((n, 3), -1, np.int64), play_order=zeros((n, NUM_CARD_IDS), np.int8),
        led=zeros((n, NUM_CARD_IDS), bool), num_plays=zeros(n, np.int64), deal_ids=zeros(n, np.int64),
        deal_in_session=zeros(n, np.int64), session_ids=zeros(n, np.int64),
        events=zeros((n, MAX_EVENTS, 5), np.int64), num_events=zeros(n, np.int64),
    )


# Positions: ace low, position = card id; ace high, the Ace sits above the King of its suit.
_POS_OF_CARD = {
    False: np.arange(NUM_CARD_IDS, dtype=np.int64),
    True: np.array([(c // 13) * 13 + (c % 13 + 12) % 13 for c in range(NUM_CARD_IDS)], dtype=np.int64),
}
_CARD_OF_POS = {k: np.argsort(v).astype(np.int64) for k, v in _POS_OF_CARD.items()}
_TABLES: dict[tuple[Rules, int], Tables] = {}


def tables_of(rules: Rules, players: int) -> Tables:
    """The tables of ``rules`` at ``players`` seats (built once per pair, read-only)."""
    key = (rules, players)
    if rules.pack != "full":
        raise RulesError(f"the batch engine plays the full pack only, not pack={rules.pack}: play it with the "
                         f"scalar engine (Deal, the PettingZoo env, the tournament's scalar path)")
    if key not in _TABLES:
        _TABLES[key] = _build(rules, players)
    return _TABLES[key]


def _build(rules: Rules, players: int) -> Tables:
    pos_of_card = _POS_OF_CARD[rules.ace_high]
    pos_bit = np.uint64(1) << pos_of_card.astype(np.uint64)
    pos_bit[EIGHT_DIAMONDS] = 0
    sizes, _ = rules.hand_sizes(players)
    seat_table = np.full((players, len(PACK)), -1, dtype=np.int64)
    for dealer in range(players):
        first = (dealer + 1) % players
        if rules.deal == "all_round":
            for j in range(len(PACK)):
                pile = j % (players + 1)
                if pile < players:
                    seat_table[dealer, j] = (first + pile) % players
        else:
            q = sizes[0]
            for j in range(q * players):
                seat_table[dealer, j] = (first + j % players) % players
    comp_of_pos = np.full(4 * 64, -1, dtype=np.int64)
    turnup_comp = np.full(4 * NUM_CARD_IDS, -1, dtype=np.int64)
    for t in range(4):
        comp_of_pos[t * 64 + pos_of_card[POPE]] = POPE_C
        turnup_comp[t * NUM_CARD_IDS + POPE] = POPE_C
        for comp, rank in ((ACE_C, ACE), (KING_C, KING), (QUEEN_C, QUEEN), (JACK_C, JACK)):
            comp_of_pos[t * 64 + pos_of_card[card_id(t, rank)]] = comp
            turnup_comp[t * NUM_CARD_IDS + card_id(t, rank)] = comp
    tables = Tables(
        pos_of_card=pos_of_card, card_of_pos=_CARD_OF_POS[rules.ace_high], pos_bit=pos_bit, seat_table=seat_table,
        dead_columns=np.nonzero(seat_table[0] < 0)[0], comp_of_pos=comp_of_pos, turnup_comp=turnup_comp,
        dressing=np.array(rules.dressing, dtype=np.int64), empty_owner=np.array(EMPTY_OWNER, dtype=np.int8),
        ace_high=rules.ace_high, lead_any=rules.lead == "any", pope_excused=rules.pope_excused,
        halves=rules.pair_split == "halves", ends_deal=rules.pope_turnup == "ends_deal",
        pope_pos=int(pos_of_card[POPE]),
    )
    for table in tables:
        if isinstance(table, np.ndarray):
            table.flags.writeable = False
    return tables


def compiled() -> ModuleType:
    """The batch engine's compiled kernels (``kernels``, numba); ``MissingDependencyError`` without numba."""
    try:
        import numba  # noqa: F401  (checked on every call: a test may hide it after the kernels were loaded)
    except ImportError:
        raise MissingDependencyError("the batch engine runs compiled loops and needs numba: pip install numba") \
            from None
    from popejoan_env.batch import kernels

    return kernels


_POPCOUNT16 = np.array([bin(x).count("1") for x in range(1 << 16)], dtype=np.int64)


def popcount(x: np.ndarray) -> np.ndarray:
    """Bits set in each uint64 (as int64): the size of each hand mask."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    return sum(_POPCOUNT16[(x >> np.uint64(16 * i)) & np.uint64(0xFFFF)] for i in range(4))


def position_masks(tables: Tables, masks: np.ndarray) -> np.ndarray:
    """Card-id bitmasks (uint64, any shape) as position bitmasks."""
    if not tables.ace_high:
        return masks  # ace low: positions are card ids
    planes = np.unpackbits(masks.astype("<u8").reshape(-1, 1).view(np.uint8), axis=1, bitorder="little")
    packed = np.zeros((len(planes), 8), dtype=np.uint8)
    packed[:, :7] = np.packbits(planes[:, tables.card_of_pos], axis=1, bitorder="little")
    return packed.view("<u8")[:, 0].astype(np.uint64).reshape(masks.shape)
