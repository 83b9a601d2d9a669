"""The game of one deal: deal, legal actions, playing a card, payouts, settlement (stdlib only).

The engine thinks in seats ``0 … n-1`` (clockwise) and card ids (``cards.py``).
Chance lives outside the decision logic: a deal comes from a
``numpy.random.Generator`` passed in (only its ``permutation`` method is used)
or from explicit hands.  Hot paths are bit operations on ints and table look-ups.

>>> import numpy as np
>>> deal = Deal.new(MODERN, players=4, dealer=0, rng=np.random.default_rng(1))
>>> while not deal.done:
...     deal.play(deal.legal_actions()[0])
>>> sum(deal.delta) + sum(deal.board) - sum(deal.board_before)
0
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from popejoan_env.cards import (
    ACE, CARD_NAMES, EIGHT_DIAMONDS, JACK, KING, NUM_CARD_IDS, PACK, PACK_MASK, POPE, QUEEN,
    SEVEN_DIAMONDS, SUIT_MASKS, CardMask, card_id, mask_of, names_of, parse_card,
)
from popejoan_env.errors import (
    GameOverError, IllegalActionError, InvalidDealError, UnknownCardActionError, UnknownCardError,
)
from popejoan_env.rules import (
    ACE_C, COMPARTMENTS, GAME_C, INTRIGUE_C, JACK_C, KING_C, MATRIMONY_C, MODERN, POPE_C,
    QUEEN_C, Rules, check_players, resolve_rules,
)

DEAD = -1
"""``owner`` value of a card in the dead hand."""
PLAYED = -2
"""``owner`` value of a card already played."""
NOT_IN_PACK = -3
"""``owner`` value of the 8♦."""

ACES_MASK: CardMask = mask_of(card_id(s, ACE) for s in range(4))


class Generator(Protocol):
    """The part of ``numpy.random.Generator`` the engine uses."""

    def permutation(self, x: int) -> Any:
        """A random permutation of ``range(x)``."""


def _successors(ace_high: bool) -> tuple[int, ...]:
    """Table: card id -> id of its successor in the pack, or -1 (R8/R9)."""
    order = list(range(1, 13)) + [ACE] if ace_high else list(range(13))
    table = [-1] * NUM_CARD_IDS
    for suit in range(4):
        ids = [card_id(suit, r) for r in order]
        for low, high in zip(ids, ids[1:]):
            table[low] = high
    table[SEVEN_DIAMONDS] = -1  # the 8♦ is out: the 7♦ is a stop
    table[EIGHT_DIAMONDS] = -1
    return tuple(table)


SUCCESSOR: dict[bool, tuple[int, ...]] = {False: _successors(False), True: _successors(True)}


def _award_table(trumps: int) -> tuple[int, ...]:
    """Table: card id -> compartment its player takes (R10), or -1."""
    table = [-1] * NUM_CARD_IDS
    table[card_id(trumps, ACE)] = ACE_C
    table[card_id(trumps, KING)] = KING_C
    table[card_id(trumps, QUEEN)] = QUEEN_C
    table[card_id(trumps, JACK)] = JACK_C
    table[POPE] = POPE_C
    return tuple(table)


AWARD_OF: tuple[tuple[int, ...], ...] = tuple(_award_table(s) for s in range(4))

_CLUBS, _DIAMONDS, _HEARTS, _SPADES = SUIT_MASKS


def lowest_of_suit_leads(hand: CardMask, ace_high: bool = False) -> list[int]:
    """Legal leads under ``lead="lowest_of_suit"``: the lowest card held of each suit (R7)."""
    if ace_high:
        out = []
        for suit_mask in SUIT_MASKS:
            x = hand & suit_mask
            if x:
                if x & ~ACES_MASK:
                    x &= ~ACES_MASK
                out.append((x & -x).bit_length() - 1)
        return out
    # Unrolled over the four suits: this runs at every lead.
    out = []
    x = hand & _CLUBS
    if x:
        out.append((x & -x).bit_length() - 1)
    x = hand & _DIAMONDS
    if x:
        out.append((x & -x).bit_length() - 1)
    x = hand & _HEARTS
    if x:
        out.append((x & -x).bit_length() - 1)
    x = hand & _SPADES
    if x:
        out.append((x & -x).bit_length() - 1)
    return out


class Deal:
    """One deal of Pope Joan: the cards, the board, the balances and whose turn it is."""

    __slots__ = (
        "rules", "players", "dealer", "hands", "counts", "owner", "dead", "dead_mask", "turnup",
        "trumps", "board", "board_before", "balances", "balances_before", "to_act", "forced",
        "leader", "plays", "awards", "payments", "winner", "done", "revealed_dead", "played_mask",
        "initial_hands", "_succ", "_award", "_lead_any", "_ace_high", "_pair_by",
    )

    rules: Rules
    players: int
    dealer: int
    hands: list[CardMask]
    counts: list[int]
    owner: list[int]
    dead: tuple[int, ...]
    dead_mask: CardMask
    turnup: int
    trumps: int
    board: list[int]
    board_before: tuple[int, ...]
    balances: list[int]
    balances_before: tuple[int, ...]
    to_act: int
    forced: int
    leader: int
    plays: list[tuple[int, int]]
    awards: list[tuple[str, int, int, int]]
    payments: list[tuple[int, int, int]]
    winner: int | None
    done: bool
    revealed_dead: CardMask
    played_mask: CardMask
    initial_hands: tuple[CardMask, ...]

    # ----------------------------------------------------------------- creation
    @classmethod
    def new(
        cls,
        rules: Rules | str | Mapping[str, Any] = MODERN,
        players: int = 4,
        dealer: int = 0,
        rng: Generator | None = None,
        board: Sequence[int] | Mapping[str, int] | None = None,
        balances: Sequence[int] | None = None,
    ) -> Deal:
        """Shuffle (R2) with ``rng``, deal (R3) and dress the board (R1)."""
        rules = resolve_rules(rules)
        try:
            check_players(players)
        except ValueError:
            raise InvalidDealError(f"a deal needs 3 to 8 players, got {players!r}") from None
        _check_dealer(dealer, players)
        if rng is None:
            raise InvalidDealError("a random deal needs an explicit numpy.random.Generator (rng=...)")
        # Check everything before drawing, so a refused deal leaves the generator untouched.
        board_list = parse_board(board)
        balance_list = parse_balances(balances, players)
        order = [PACK[i] for i in rng.permutation(len(PACK)).tolist()]
        if rules.deal == "all_round":
            hands, dead = deal_cards(rules, players, dealer, order)
            return cls._start(rules, players, dealer, *_holdings(hands), dead, board_list, balance_list)
        # Equal hands dealt round from eldest (as deal_cards does), in one pass: this runs every deal.
        seats = _dealing_seats(rules, players, dealer)
        owner = list(EMPTY_OWNER)
        masks = [0] * players
        for c, seat in zip(order, seats):
            owner[c] = seat
            masks[seat] |= 1 << c
        counts = [len(seats) // players] * players
        return cls._start(rules, players, dealer, owner, masks, counts, order[len(seats):], board_list, balance_list)

    @classmethod
    def from_cards(
        cls,
        hands: Sequence[Sequence[str | int]],
        dead: Sequence[str | int],
        dealer: int = 0,
        rules: Rules | str | Mapping[str, Any] = MODERN,
        board: Sequence[int] | Mapping[str, int] | None = None,
        balances: Sequence[int] | None = None,
    ) -> Deal:
        """An explicit deal: one card list per seat (seat 0 first) and the dead hand, turn-up last."""
        rules = resolve_rules(rules)
        if isinstance(hands, (str, bytes)) or not isinstance(hands, Sequence):
            raise InvalidDealError(f"hands must be a list of card lists, one per seat, got {hands!r}")
        players = len(hands)
        try:
            check_players(players)
        except ValueError:
            raise InvalidDealError(f"a deal needs 3 to 8 hands, got {players}") from None
        _check_dealer(dealer, players)
        parsed: list[list[int]] = []
        for seat, hand in enumerate(hands):
            if isinstance(hand, (str, bytes)) or not isinstance(hand, Sequence):
                raise InvalidDealError(f"hand of seat {seat} must be a list of cards, got {hand!r}")
            if not hand:
                raise InvalidDealError(f"hand of seat {seat} is empty: every seat needs at least one card")
            parsed.append([_parse_in_deal(c, f"hand of seat {seat}") for c in hand])
        if isinstance(dead, (str, bytes)) or not isinstance(dead, Sequence) or not dead:
            raise InvalidDealError("the dead hand must be a non-empty list of cards; its last card is the turn-up")
        dead_ids = [_parse_in_deal(c, "dead hand") for c in dead]
        seen: dict[int, str] = {}
        for where, cards in [(f"seat {s}", h) for s, h in enumerate(parsed)] + [("the dead hand", dead_ids)]:
            for c in cards:
                if c in seen:
                    raise InvalidDealError(
                        f"not a partition of the 51 cards: {CARD_NAMES[c]} is dealt twice ({seen[c]} and {where})"
                    )
                seen[c] = where
        missing = PACK_MASK & ~mask_of(seen)
        if missing:
            raise InvalidDealError(f"not a partition of the 51 cards: missing {names_of(missing)}")
        board_list = parse_board(board)
        balance_list = parse_balances(balances, players)
        return cls._start(rules, players, dealer, *_holdings(parsed), dead_ids, board_list, balance_list)

    @classmethod
    def _start(
        cls,
        rules: Rules,
        players: int,
        dealer: int,
        owner: list[int],
        masks: list[CardMask],
        counts: list[int],
        dead: list[int],
        board_list: list[int],
        balance_list: list[int],
    ) -> Deal:
        """The deal after R1 dressing and R5 turn-up payout; inputs already checked and owned."""
        self = cls.__new__(cls)
        self.rules = rules
        self.players = players
        self.dealer = dealer
        self.hands = masks
        self.initial_hands = tuple(masks)
        self.counts = counts
        self.owner = owner
        self.dead = tuple(dead)
        self.dead_mask = mask_of(dead)
        self.turnup = dead[-1]
        self.trumps = dead[-1] // 13
        self.board_before = tuple(board_list)
        self.balances_before = tuple(balance_list)
        self.board = board_list
        self.balances = balance_list
        self.plays = []
        self.awards = []
        self.payments = []
        self.winner = None
        self.done = False
        self.revealed_dead = 1 << self.turnup
        self.played_mask = 0
        self.forced = -1
        self._succ = SUCCESSOR[rules.ace_high]
        self._award = AWARD_OF[self.trumps]
        self._lead_any = rules.lead == "any"
        self._ace_high = rules.ace_high
        self._pair_by = {KING: -1, QUEEN: -1, JACK: -1}
        # R1: dressing
        dressing = rules.dressing
        board_list[:] = map(int.__add__, board_list, dressing)
        balance_list[dealer] -= sum(dressing)
        # R5: turn-up payout
        comp = self._award[self.turnup]
        if comp >= 0:
            self._take("turnup", dealer, comp)
            if self.turnup == POPE and rules.pope_turnup == "ends_deal":
                self._take("turnup", dealer, GAME_C)
                for k in range(1, players):
                    seat = (dealer + k) % players
                    self._pay(seat, dealer, self.counts[seat])
                self.done = True
                self.to_act = -1
                self.leader = -1
                return self
        # R6: eldest leads
        self.to_act = self.leader = (dealer + 1) % players
        return self

    # ----------------------------------------------------------------- queries
    @property
    def eldest(self) -> int:
        """The seat left of the dealer, who leads first."""
        return (self.dealer + 1) % self.players

    @property
    def delta(self) -> list[int]:
        """Each seat's net change in counters in this deal so far, dressing included."""
        return [b - a for a, b in zip(self.balances_before, self.balances)]

    @property
    def is_lead(self) -> bool:
        """True when the player to act leads (R7) rather than continues a sequence (R8)."""
        return self.forced < 0

    def legal_actions(self) -> list[int]:
        """Card ids the player to act may play now (empty once the deal is over)."""
        if self.forced >= 0:
            return [self.forced]
        if self.done:
            return []
        hand = self.hands[self.to_act]
        if self._lead_any:
            out = []
            while hand:
                low = hand & -hand
                out.append(low.bit_length() - 1)
                hand ^= low
            return out
        return lowest_of_suit_leads(hand, self._ace_high)

    def legal_mask(self) -> CardMask:
        """Bitmask of ``legal_actions()``."""
        if self.forced >= 0:
            return 1 << self.forced
        if self.done:
            return 0
        if self._lead_any:
            return self.hands[self.to_act]
        return mask_of(lowest_of_suit_leads(self.hands[self.to_act], self._ace_high))

    def holder_of(self, card: int) -> int:
        """Seat holding a card, or ``DEAD``/``PLAYED``/``NOT_IN_PACK``."""
        return self.owner[card]

    # ----------------------------------------------------------------- playing
    def play(self, card: int | str) -> None:
        """Play a card for the seat to act; an illegal card raises and changes nothing."""
        if type(card) is not int:
            card = self._parse_action(card)
        seat = self.to_act
        forced = self.forced
        if forced >= 0:
            if card != forced:
                self._refuse(card)
        elif self.done:
            raise GameOverError(self._over_message())
        elif not 0 <= card < NUM_CARD_IDS or not (self.hands[seat] >> card) & 1:
            self._refuse(card)
        elif not self._lead_any:
            suit = self.hands[seat] & SUIT_MASKS[card // 13]
            if self._ace_high and suit & ~ACES_MASK:
                suit &= ~ACES_MASK
            if suit & -suit != 1 << card:
                self._refuse(card)
        # The legal card is played (R8-R11); this is _apply inlined, the engine's hot path.
        bit = 1 << card
        self.hands[seat] ^= bit
        counts = self.counts
        left = counts[seat] - 1
        counts[seat] = left
        owner = self.owner
        owner[card] = PLAYED
        self.played_mask |= bit
        self.plays.append((seat, card))
        if self._award[card] >= 0:
            self._pay_for_card(seat, card)
        if not left:
            self._go_out(seat)
            return
        nxt = self._succ[card]
        if nxt >= 0:
            holder = owner[nxt]
            if holder >= 0:
                self.to_act = holder
                self.forced = nxt
                return
            if holder == DEAD:
                self.revealed_dead |= 1 << nxt
        self.to_act = self.leader = seat
        self.forced = -1

    def _over_message(self) -> str:
        how = f"seat {self.winner} went out" if self.winner is not None else "it ended at the turn-up (R5)"
        return f"the deal is over ({how}); no card can be played"

    def _parse_action(self, card: object) -> int:
        """A card id from notation or an integer-like id; unknown cards name the seat and what is legal."""
        if self.done:
            raise GameOverError(self._over_message())
        try:
            return parse_card(card)  # type: ignore[arg-type]
        except UnknownCardError as err:
            raise UnknownCardActionError(
                f"seat {self.to_act} cannot play {card!r}: {err}; legal: {names_of(self.legal_actions())}"
            ) from None

    def _refuse(self, card: int) -> None:
        seat = self.to_act
        legal = names_of(self.legal_actions())
        if not 0 <= card < NUM_CARD_IDS or card == EIGHT_DIAMONDS:
            raise UnknownCardActionError(
                f"seat {seat} cannot play card id {card!r}: not a card of the pack "
                f"(ids 0..51, 20 = 8D excluded); legal: {legal}"
            )
        name = CARD_NAMES[card]
        if not (self.hands[seat] >> card) & 1:
            # Say only what the seat may know: naming another holder (or the dead hand)
            # would let an agent probe hidden cards with illegal moves.
            played = " (it has been played)" if self.owner[card] == PLAYED else ""
            why = f"seat {seat} does not hold it{played}"
        elif self.forced >= 0:
            why = f"seat {seat} must continue the sequence with {CARD_NAMES[self.forced]} (R8)"
        else:
            why = f"a lead must be the lowest card held of its suit (R7, lead={self.rules.lead})"
        raise IllegalActionError(f"seat {seat} cannot play {name}: {why}; legal: {legal}")

    def _pay_for_card(self, seat: int, card: int) -> None:
        """R10: the compartment of a trump honour or the Pope, and matrimony/intrigue."""
        comp = self._award[card]
        self._take("play", seat, comp)
        if comp == POPE_C or comp == ACE_C:
            return
        rank = card % 13
        by = self._pair_by
        by[rank] = seat
        if rank != JACK:
            self._pair(seat, by[QUEEN if rank == KING else KING], MATRIMONY_C)
        if rank != KING:
            self._pair(seat, by[JACK if rank == QUEEN else QUEEN], INTRIGUE_C)

    def _pair(self, seat: int, other: int, comp: int) -> None:
        if other == seat:
            self._take("play", seat, comp)
        elif other >= 0 and self.rules.pair_split == "halves":
            half = self.board[comp] // 2
            self._take("play", other, comp, half)
            self._take("play", seat, comp, half)

    def _go_out(self, seat: int) -> None:
        """R11: the game compartment, then a counter per card from each other player."""
        self._take("game", seat, GAME_C)
        pope_holder = self.owner[POPE] if self.rules.pope_excused else -1
        for k in range(1, self.players):
            other = (seat + k) % self.players
            self._pay(other, seat, 0 if other == pope_holder else self.counts[other])
        self.winner = seat
        self.done = True
        self.to_act = -1
        self.forced = -1

    def _take(self, cause: str, seat: int, comp: int, amount: int | None = None) -> None:
        if amount is None:
            amount = self.board[comp]
        self.board[comp] -= amount
        self.balances[seat] += amount
        self.awards.append((cause, seat, comp, amount))

    def _pay(self, payer: int, payee: int, amount: int) -> None:
        self.balances[payer] -= amount
        self.balances[payee] += amount
        self.payments.append((payer, payee, amount))

    # ----------------------------------------------------------------- copies
    def copy(self) -> Deal:
        """An independent copy (for search players)."""
        new = Deal.__new__(Deal)
        for name in Deal.__slots__:
            setattr(new, name, getattr(self, name))
        new.hands = list(self.hands)
        new.counts = list(self.counts)
        new.owner = list(self.owner)
        new.board = list(self.board)
        new.balances = list(self.balances)
        new.plays = list(self.plays)
        new.awards = list(self.awards)
        new.payments = list(self.payments)
        new._pair_by = dict(self._pair_by)
        return new

    def __repr__(self) -> str:
        state = f"winner={self.winner}" if self.done else f"to_act={self.to_act}"
        return (
            f"<Deal players={self.players} dealer={self.dealer} turnup={CARD_NAMES[self.turnup]} "
            f"plays={len(self.plays)} {state}>"
        )


def _check_dealer(dealer: object, players: int) -> None:
    if isinstance(dealer, bool) or not isinstance(dealer, int) or not 0 <= dealer < players:
        raise InvalidDealError(f"dealer must be a seat 0..{players - 1}, got {dealer!r}")


def _count(value: object) -> int | None:
    """An int from an int or integer-like value (numpy integers), else None; bools are refused."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def parse_balances(balances: Sequence[int] | None, players: int) -> list[int]:
    """Each seat's counters as a new list of ints (None: all 0)."""
    if balances is None:
        return [0] * players
    if isinstance(balances, (str, bytes)) or not isinstance(balances, Sequence) or len(balances) != players:
        raise InvalidDealError(f"balances must be {players} integers, one per seat, got {balances!r}")
    out = [_count(b) for b in balances]
    if any(b is None for b in out):
        raise InvalidDealError(f"balances must be {players} integers, one per seat, got {balances!r}")
    return out  # type: ignore[return-value]


def _parse_in_deal(card: str | int, where: str) -> int:
    try:
        return parse_card(card)
    except ValueError as err:
        raise InvalidDealError(f"{where}: {err}") from None


def parse_board(board: Sequence[int] | Mapping[str, int] | None) -> list[int]:
    """A board as 8 counts (order of ``COMPARTMENTS``) from a mapping, a list or None (empty)."""
    if board is None:
        return [0] * len(COMPARTMENTS)
    if isinstance(board, Mapping):
        unknown = sorted(str(k) for k in set(board) - set(COMPARTMENTS))
        if unknown:
            raise InvalidDealError(f"unknown board compartment(s) {unknown}; compartments are {list(COMPARTMENTS)}")
        values = [board.get(c, 0) for c in COMPARTMENTS]
    elif isinstance(board, Sequence) and not isinstance(board, (str, bytes)) and len(board) == len(COMPARTMENTS):
        values = list(board)
    else:
        raise InvalidDealError(f"board must map compartment names to counters (or give 8 counts), got {board!r}")
    out = []
    for name, v in zip(COMPARTMENTS, values):
        count = _count(v)
        if count is None or count < 0:
            raise InvalidDealError(f"board compartment {name} must hold a non-negative integer, got {v!r}")
        out.append(count)
    return out


EMPTY_OWNER: tuple[int, ...] = tuple(NOT_IN_PACK if c == EIGHT_DIAMONDS else DEAD for c in range(NUM_CARD_IDS))
"""The ``owner`` table before any card is placed: every card DEAD, the 8♦ NOT_IN_PACK."""


def _holdings(hands: list[list[int]]) -> tuple[list[int], list[CardMask], list[int]]:
    """The owner table, hand bitmasks and hand sizes of hands given as card lists (seat 0 first)."""
    owner = list(EMPTY_OWNER)
    for seat, hand in enumerate(hands):
        for c in hand:
            owner[c] = seat
    return owner, [mask_of(hand) for hand in hands], [len(hand) for hand in hands]


@functools.lru_cache(maxsize=1024)
def _dealing_seats(rules: Rules, players: int, dealer: int) -> tuple[int, ...]:
    """Seat receiving each card dealt to the players under equal hands (``deal_cards`` order)."""
    q = _hand_sizes(rules, players)[0][0]
    eldest = (dealer + 1) % players
    return tuple((eldest + k % players) % players for k in range(q * players))


@functools.lru_cache(maxsize=256)
def _hand_sizes(rules: Rules, players: int) -> tuple[list[int], int]:
    return rules.hand_sizes(players)


def deal_cards(rules: Rules, players: int, dealer: int, order: Sequence[int]) -> tuple[list[list[int]], list[int]]:
    """Deal a shuffled pack (R3): one card at a time clockwise from eldest; returns hands by seat and the dead hand."""
    sizes, dead_size = _hand_sizes(rules, players)
    hands: list[list[int]] = [[] for _ in range(players)]
    eldest = (dealer + 1) % players
    if rules.deal == "all_round":
        # n+1 hands in dealing order (eldest first, dead hand last), round and round.
        piles: list[list[int]] = [[] for _ in range(players + 1)]
        for i, c in enumerate(order):
            piles[i % (players + 1)].append(c)
        for k in range(players):
            hands[(eldest + k) % players] = piles[k]
        return hands, piles[players]
    q = sizes[0]
    for k in range(players):
        hands[(eldest + k) % players] = list(order[k: q * players: players])
    return hands, list(order[q * players:])
