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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from popejoan_env.cards import (
    ACE, CARD_NAMES, EIGHT_DIAMONDS, JACK, KING, NUM_CARD_IDS, PACK_MASK, PACK_MASKS, PACKS, POPE, QUEEN,
    SEVEN_DIAMONDS, SUIT_MASKS, CardMask, card_id, mask_of, names_of, parse_card,
)
from popejoan_env.checks import as_int, brief
from popejoan_env.errors import (
    GameOverError, RulesError, IllegalActionError, InvalidDealError, UnknownCardActionError, UnknownCardError,
)
from popejoan_env.rules import (
    ACE_C, COMPARTMENTS, GAME_C, INTRIGUE_C, JACK_C, KING_C, MATRIMONY_C, MAX_PLAYERS, MIN_PLAYERS, MODERN, POPE_C,
    QUEEN_C, Rules, RulesLike, check_players, resolve_rules,
)
from popejoan_env.seats import eldest, others_from

DEAD = -1
"""``owner`` value of a card in the dead hand."""
PLAYED = -2
"""``owner`` value of a card already played."""
NOT_IN_PACK = -3
"""``owner`` value of the 8♦."""
MAX_COUNTERS = 2**53 - 1
"""Largest count of counters (in size) a balance or a board compartment may start a deal with: exact as a float64
and a JavaScript number (the web page, JSON readers), and so far inside the 63 bits a record holds
(``record.MAX_COUNT``) and the batch engine's int64 that no deal's payments can pass them."""

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
"""Table per ``ace_high``: card id -> its successor in the pack (R8), or -1 (a stop, R9)."""


def _predecessors(successor: tuple[int, ...]) -> tuple[int, ...]:
    table = [-1] * NUM_CARD_IDS
    for card, nxt in enumerate(successor):
        if nxt >= 0:
            table[nxt] = card
    return tuple(table)


PREDECESSOR: dict[bool, tuple[int, ...]] = {k: _predecessors(v) for k, v in SUCCESSOR.items()}
"""Table per ``ace_high``: card id -> the card whose successor it is, or -1 (nobody can lead up to it)."""

KINGS_MASK: CardMask = mask_of(card_id(s, KING) for s in range(4))


def successors_of(cards: CardMask, ace_high: bool) -> CardMask:
    """The successors (R8) of a set of cards, as a bitmask: ``SUCCESSOR`` applied to every card at once.

    Ace low, a card's successor is the next id of its suit (a King has none, and the 7♦'s would be the
    8♦, which is not in the pack); under ``ace_high`` the King's is its suit's Ace and the Ace has none.
    """
    if ace_high:
        return (((cards & ~KINGS_MASK & ~ACES_MASK) << 1) | ((cards & KINGS_MASK) >> 12)) & PACK_MASK
    return ((cards & ~KINGS_MASK) << 1) & PACK_MASK


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


def legal_leads(hand: CardMask, lead_any: bool, ace_high: bool) -> list[int]:
    """The cards a seat holding ``hand`` may lead (R7): any card (``lead="any"``), else the lowest of each suit.

    This is the one statement of the leading rule: ``Deal.legal_actions``,
    ``Deal.play``'s check and ``observation.decode`` all call it.
    """
    out = []
    if lead_any:
        while hand:
            low = hand & -hand
            out.append(low.bit_length() - 1)
            hand ^= low
        return out
    if ace_high:
        for suit_mask in SUIT_MASKS:
            x = hand & suit_mask
            if x:
                if x & ~ACES_MASK:
                    x &= ~ACES_MASK
                out.append((x & -x).bit_length() - 1)
        return out
    # Unrolled over the four suits: this runs at every lead.
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


Choose = Callable[["Deal", list[int]], int]
"""A decision function for ``Deal.play_out``: given the deal and the legal cards (two or more), the card to play."""


class Deal:
    """One deal of Pope Joan: the cards, the board, the balances and whose turn it is.

    Fields are either **primary state** (what a deal *is*; everything else
    follows from it and the rules) or **derived caches** kept in step with it
    for speed.  ``from_cards`` and ``from_position`` build a deal from primary
    state only; the caches are always computed, never taken from a caller.

    Primary: ``rules``, ``players``, ``dealer``, ``hands`` (bitmask per seat),
    ``dead`` (turn-up last), ``board``, ``balances``, ``board_before``,
    ``balances_before``, ``initial_hands``, ``plays``, ``to_act``, ``forced``
    (the card due, -1 when a lead is due), ``leader``, ``awards``,
    ``payments``, ``winner``, ``done``.

    Derived: ``hand_sizes`` (popcounts of ``hands``), ``owner`` (card → seat,
    ``DEAD``, ``PLAYED`` or ``NOT_IN_PACK``), ``dead_mask``, ``turnup`` and
    ``trumps`` (from ``dead``), ``played_mask`` and ``revealed_dead`` (from the
    cards played), and the private tables ``_succ``, ``_award``, ``_lead_any``,
    ``_ace_high`` (from the rules and trumps) and ``_pair_by`` (who played the
    trump K, Q and J).
    """

    __slots__ = (
        "rules", "players", "dealer", "hands", "hand_sizes", "owner", "dead", "dead_mask", "turnup",
        "trumps", "board", "board_before", "balances", "balances_before", "to_act", "forced",
        "leader", "plays", "awards", "payments", "winner", "done", "revealed_dead", "played_mask",
        "initial_hands", "_succ", "_award", "_lead_any", "_ace_high", "_pair_by",
    )

    rules: Rules
    players: int
    dealer: int
    hands: list[CardMask]
    hand_sizes: list[int]
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
        rules: RulesLike = MODERN,
        players: int = 4,
        dealer: int = 0,
        rng: Generator | None = None,
        *,
        board: Sequence[int] | Mapping[str, int] | None = None,
        balances: Sequence[int] | None = None,
    ) -> Deal:
        """Shuffle (R2) with ``rng``, deal (R3) and dress the board (R1)."""
        rules = resolve_rules(rules)
        try:
            players = check_players(players)
        except ValueError:
            raise InvalidDealError(f"a deal needs {MIN_PLAYERS} to {MAX_PLAYERS} players, got "
                                   f"{brief(players)}") from None
        dealer = check_seat(dealer, players)
        if rng is None or not callable(getattr(rng, "permutation", None)):
            raise InvalidDealError(f"a random deal needs an explicit numpy.random.Generator (rng=...), got "
                                   f"{type(rng).__name__}")
        # Check everything before drawing, so a refused deal leaves the generator untouched.
        board_list = parse_board(board)
        balance_list = parse_balances(balances, players)
        _check_table(rules, players)
        pack = PACKS[rules.pack]
        order = [pack[i] for i in rng.permutation(len(pack)).tolist()]
        if rules.deal == "all_round":
            hands, dead = deal_cards(rules, players, dealer, order)
            return cls._start(rules, players, dealer, *_holdings(hands, rules), dead, board_list, balance_list)
        # Equal hands dealt round from eldest (as deal_cards does), in one pass: this runs every deal.
        seats = _dealing_seats(rules, players, dealer)
        owner = list(empty_owner(rules))
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
        rules: RulesLike = MODERN,
        *,
        board: Sequence[int] | Mapping[str, int] | None = None,
        balances: Sequence[int] | None = None,
    ) -> Deal:
        """An explicit deal: one card list per seat (seat 0 first) and the dead hand, turn-up last."""
        rules = resolve_rules(rules)
        players = _table_of(hands, "card lists", "deal")
        _check_table(rules, players)
        dealer = check_seat(dealer, players)
        parsed: list[list[int]] = []
        for seat, hand in enumerate(hands):
            if isinstance(hand, (str, bytes)) or not isinstance(hand, Sequence):
                raise InvalidDealError(f"hand of seat {seat} must be a list of cards, got {brief(hand)}")
            if not hand:
                raise InvalidDealError(f"hand of seat {seat} is empty: every seat needs at least one card")
            parsed.append([_parse_in_deal(c, f"hand of seat {seat}") for c in hand])
        if isinstance(dead, (str, bytes)) or not isinstance(dead, Sequence) or not dead:
            raise InvalidDealError("the dead hand must be a non-empty list of cards; its last card is the turn-up")
        dead_ids = [_parse_in_deal(c, "dead hand") for c in dead]
        seen: dict[int, str] = {}
        whole = _pack_words(rules)
        for where, cards in [(f"seat {s}", h) for s, h in enumerate(parsed)] + [("the dead hand", dead_ids)]:
            for c in cards:
                if c in seen:
                    raise InvalidDealError(
                        f"not a partition of {whole}: {CARD_NAMES[c]} is dealt twice ({seen[c]} and {where})"
                    )
                seen[c] = where
        _check_in_pack(rules, mask_of(seen))
        missing = PACK_MASKS[rules.pack] & ~mask_of(seen)
        if missing:
            raise InvalidDealError(f"not a partition of {whole}: missing {names_of(missing)}")
        board_list = parse_board(board)
        balance_list = parse_balances(balances, players)
        return cls._start(rules, players, dealer, *_holdings(parsed, rules), dead_ids, board_list, balance_list)

    @classmethod
    def from_position(
        cls,
        hands: Sequence[CardMask | Iterable[str | int]],
        dead: Sequence[str | int],
        played: Sequence[CardMask | Iterable[str | int]],
        to_act: int,
        *,
        forced: int | str = -1,
        leader: int | None = None,
        dealer: int = 0,
        rules: RulesLike = MODERN,
        board: Sequence[int] | Mapping[str, int] | None = None,
        balances: Sequence[int] | None = None,
        history: Sequence[tuple[int, int]] | None = None,
    ) -> Deal:
        """A position in the middle of a deal, ready to play on.

        ``hands[s]`` are the cards seat ``s`` holds now and ``played[s]`` the
        cards it has played (each a card list or a bitmask); ``dead`` is the
        dead hand, turn-up last; ``to_act`` is the seat to play, ``forced`` the
        card due (R8) or -1 when ``to_act`` must lead; ``leader`` is who led
        the current sequence (default ``to_act``, required when a card is due).
        ``board`` and ``balances`` are the counters now: no dressing or turn-up
        payout is applied.  The position starts the deal's bookkeeping afresh:
        ``plays``, ``awards`` and ``payments`` are empty, ``board_before`` and
        ``balances_before`` are the given counters (so ``delta`` counts from
        here) and ``initial_hands`` are the hands now — unless ``history`` gives
        the plays so far, ``(seat, card)`` in order (each seat's cards exactly
        its ``played``): they become ``plays``, so an observation of the position
        shows the public history (a search's worlds), and ``initial_hands`` the
        hands with them.  What the cards played imply is derived: who may still
        take matrimony and intrigue, and the dead cards the stops have revealed.  Checked like ``from_cards``: a
        partition of the 51 cards, a card due that ``to_act`` holds and whose
        predecessor has been played.
        """
        rules = resolve_rules(rules)
        players = _table_of(hands, "card lists or bitmasks", "position")
        _check_table(rules, players)
        if isinstance(played, (str, bytes)) or not isinstance(played, Sequence) or len(played) != players:
            raise InvalidDealError(f"played must give the cards played by each of the {players} seats")
        dealer = check_seat(dealer, players)
        to_act = check_seat(to_act, players, "to_act")
        masks = [_mask_in_deal(h, "hand of seat", s) for s, h in enumerate(hands)]
        played_by = [_mask_in_deal(p, "cards played by seat", s) for s, p in enumerate(played)]
        if isinstance(dead, (str, bytes)) or not isinstance(dead, Sequence) or not dead:
            raise InvalidDealError("the dead hand must be a non-empty list of cards; its last card is the turn-up")
        dead_ids = [c if type(c) is int and (PACK_MASK >> c) & 1 and c >= 0 else _parse_in_deal(c, "dead hand")
                    for c in dead]
        seen = overlap = 0
        for mask in (*masks, *played_by, mask_of(dead_ids)):
            overlap |= seen & mask
            seen |= mask
        whole = _pack_words(rules)
        if overlap or len(set(dead_ids)) != len(dead_ids):
            twice = names_of(overlap) if overlap else "a card of the dead hand"
            raise InvalidDealError(f"not a partition of {whole}: {twice} twice")
        _check_in_pack(rules, seen)
        if seen != PACK_MASKS[rules.pack]:
            raise InvalidDealError(f"not a partition of {whole}: missing {names_of(PACK_MASKS[rules.pack] & ~seen)}")
        empty = [s for s, m in enumerate(masks) if not m]
        if empty:
            raise InvalidDealError(f"seat {empty[0]} holds no card: the deal would be over (a position is mid-deal)")
        forced_id = -1
        if as_int(forced) != -1:
            forced_id = _parse_in_deal(forced, "forced")
            if not (masks[to_act] >> forced_id) & 1:
                raise InvalidDealError(f"the card due {CARD_NAMES[forced_id]} is not in the hand of seat {to_act}")
            before = PREDECESSOR[rules.ace_high][forced_id]
            if before < 0 or not any((m >> before) & 1 for m in played_by):
                raise InvalidDealError(
                    f"{CARD_NAMES[forced_id]} cannot be due: the card it follows has not been played (R8)")
        if leader is None:
            if forced_id >= 0:
                raise InvalidDealError("a position with a card due needs the leader of the current sequence")
            leader = to_act
        leader = check_seat(leader, players, "leader")
        board_list = parse_board(board)
        balance_list = parse_balances(balances, players)
        plays = _history_of(history, played_by) if history is not None else []
        deal = cls._resume(rules, players, dealer, masks, played_by, dead_ids, to_act, forced_id, leader,
                           board_list, balance_list)
        if plays:
            deal.plays = plays
            deal.initial_hands = tuple(h | p for h, p in zip(masks, played_by))
        return deal

    def rearranged(self, hands: Sequence[CardMask], dead: Sequence[int]) -> Deal:
        """This position with the cards not yet played placed otherwise (a possible world of a search).

        ``hands[s]`` is a bitmask of the same size as seat ``s``'s hand now and ``dead`` the dead hand with
        the same turn-up last; the cards played, the counters and whose turn it is stay (the plays so far
        are not replayed: a search keeps its worlds consistent with them).  Checked: sizes,
        a partition of the 51 cards, and the card due (if any) in the hand of the seat to act.
        """
        players = self.players
        if len(hands) != players:
            raise InvalidDealError(f"a rearrangement needs {players} hands, got {len(hands)}")
        dead_mask = mask_of(dead)
        seen, overlap = self.played_mask | dead_mask, self.played_mask & dead_mask
        for seat in range(players):
            h = hands[seat]
            if type(h) is not int or h.bit_count() != self.hand_sizes[seat]:
                raise InvalidDealError(f"seat {seat} must hold {self.hand_sizes[seat]} cards in a rearrangement")
            overlap |= seen & h
            seen |= h
        if overlap or seen != PACK_MASKS[self.rules.pack] or len(dead) != len(self.dead) or dead[-1] != self.turnup:
            raise InvalidDealError("a rearrangement must place the unplayed cards exactly once, the same turn-up "
                                   "last in a dead hand of the same size")
        if self.forced >= 0 and not (hands[self.to_act] >> self.forced) & 1:
            raise InvalidDealError(f"the card due {CARD_NAMES[self.forced]} must stay with seat {self.to_act}")
        new = self.copy()
        new.hands = list(hands)
        initial = list(hands)
        for seat, card in self.plays:
            initial[seat] |= 1 << card
        new.initial_hands = tuple(initial)
        new.dead = tuple(dead)
        new.dead_mask = dead_mask
        owner = new.owner
        _place(owner, hands)
        for card in dead:
            owner[card] = DEAD
        new.revealed_dead = (1 << self.turnup) | (successors_of(self.played_mask, self._ace_high) & dead_mask)
        return new

    @classmethod
    def _resume(
        cls,
        rules: Rules,
        players: int,
        dealer: int,
        hands: list[CardMask],
        played_by: list[CardMask],
        dead: list[int],
        to_act: int,
        forced: int,
        leader: int,
        board_list: list[int],
        balance_list: list[int],
    ) -> Deal:
        """A mid-deal position from checked primary state; every cache derived here."""
        self = cls._fresh(rules, players, dealer, hands, [h.bit_count() for h in hands], dead, board_list,
                          balance_list)
        owner = self.owner
        _place(owner, hands)
        played = 0
        for mask in played_by:
            played |= mask
        p = played
        while p:
            low = p & -p
            owner[low.bit_length() - 1] = PLAYED
            p ^= low
        # A stop on a card whose successor lies in the dead hand showed that card to everyone (R9).
        self.revealed_dead |= successors_of(played, rules.ace_high) & self.dead_mask
        self.played_mask = played
        self.to_act = to_act
        self.forced = forced
        self.leader = leader
        trumps = self.trumps
        pair_by = self._pair_by
        for rank in pair_by:
            bit = 1 << card_id(trumps, rank)
            for s in range(players):
                if played_by[s] & bit:
                    pair_by[rank] = s
        return self

    @classmethod
    def _fresh(cls, rules: Rules, players: int, dealer: int, hands: list[CardMask], sizes: list[int],
               dead: list[int], board_list: list[int], balance_list: list[int],
               owner: list[int] | None = None) -> Deal:
        """A deal with its cards placed and nothing played yet: every slot set (callers add what differs)."""
        self = cls.__new__(cls)
        self.rules = rules
        self.players = players
        self.dealer = dealer
        self.hands = hands
        self.initial_hands = tuple(hands)
        self.hand_sizes = sizes
        self.owner = owner if owner is not None else list(empty_owner(rules))
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
        self.to_act = self.leader = self.forced = -1
        self._succ = SUCCESSOR[rules.ace_high]
        self._award = AWARD_OF[self.trumps]
        self._lead_any = rules.lead == "any"
        self._ace_high = rules.ace_high
        self._pair_by = {KING: -1, QUEEN: -1, JACK: -1}
        return self

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
        self = cls._fresh(rules, players, dealer, masks, counts, dead, board_list, balance_list, owner)
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
                for seat in others_from(dealer, players):
                    self._pay(seat, dealer, self.hand_sizes[seat])
                self.done = True
                self.to_act = -1
                self.leader = -1
                return self
        # R6: eldest leads
        self.to_act = self.leader = eldest(dealer, players)
        return self

    # ----------------------------------------------------------------- queries
    @property
    def eldest(self) -> int:
        """The seat left of the dealer, who leads first."""
        return eldest(self.dealer, self.players)

    @property
    def delta(self) -> list[int]:
        """Each seat's net change in counters in this deal so far, dressing included."""
        return [b - a for a, b in zip(self.balances_before, self.balances)]

    @property
    def trump_pair_by(self) -> tuple[int, int, int]:
        """Who played the trump K, Q and J (-1: not yet), as the batch engine's ``pair_by`` row holds them."""
        by = self._pair_by
        return by[KING], by[QUEEN], by[JACK]

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
        return legal_leads(self.hands[self.to_act], self._lead_any, self._ace_high)

    def legal_mask(self) -> CardMask:
        """Bitmask of ``legal_actions()``."""
        return mask_of(self.legal_actions())

    # ----------------------------------------------------------------- the decision loop
    def advance(self, lone_leads: bool = True) -> list[int]:
        """Play forced cards (R8) — and, with ``lone_leads``, leads with one legal card — until a seat has a
        real choice; returns its legal cards, or ``[]`` once the deal is over.

        This is the one loop that carries a deal from choice to choice: the
        environments, the tournament, the search's rollouts and ``simulate``
        all go through it (or through ``play_out``).
        """
        lead_any, ace_high, hands, apply = self._lead_any, self._ace_high, self.hands, self._apply
        while not self.done:
            forced = self.forced
            if forced >= 0:
                apply(forced)
                continue
            legal = legal_leads(hands[self.to_act], lead_any, ace_high)
            if lone_leads and len(legal) == 1:
                apply(legal[0])
                continue
            return legal
        return []

    def play_out(self, choose: Choose, lone_leads: bool = True) -> None:
        """Play the deal to its end: forced cards (and lone leads) as ``advance`` does, ``choose(deal, legal)``
        at every other decision (a card outside ``legal`` is refused by ``play``, naming what is legal)."""
        advance, apply = self.advance, self._apply
        legal = advance(lone_leads)
        while legal:
            card = choose(self, legal)
            if type(card) is int and card in legal:
                apply(card)
            else:
                self.play(card)
            legal = advance(lone_leads)

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
        elif not self._lead_any and card not in legal_leads(self.hands[seat], False, self._ace_high):
            self._refuse(card)
        self._apply(card)

    def _apply(self, card: int) -> None:
        """Play a card known to be legal for the seat to act (R8-R11): the engine's hot path."""
        seat = self.to_act
        bit = 1 << card
        self.hands[seat] ^= bit
        sizes = self.hand_sizes
        left = sizes[seat] - 1
        sizes[seat] = left
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
                f"seat {self.to_act} cannot play {brief(card)}: {err}; legal: {names_of(self.legal_actions())}"
            ) from None

    def _refuse(self, card: int) -> None:
        seat = self.to_act
        legal = names_of(self.legal_actions())
        if not 0 <= card < NUM_CARD_IDS or card == EIGHT_DIAMONDS:
            raise UnknownCardActionError(
                f"seat {seat} cannot play card id {brief(card)}: not a card of the pack "
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
        for other in others_from(seat, self.players):
            self._pay(other, seat, 0 if other == pope_holder else self.hand_sizes[other])
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
        # Every slot, spelled out (a search copies deals by the thousand; a test checks none is missed).
        new = Deal.__new__(Deal)
        new.rules, new.players, new.dealer = self.rules, self.players, self.dealer
        new.hands, new.hand_sizes, new.owner = list(self.hands), list(self.hand_sizes), list(self.owner)
        new.dead, new.dead_mask, new.turnup, new.trumps = self.dead, self.dead_mask, self.turnup, self.trumps
        new.board, new.board_before = list(self.board), self.board_before
        new.balances, new.balances_before = list(self.balances), self.balances_before
        new.to_act, new.forced, new.leader = self.to_act, self.forced, self.leader
        new.plays, new.awards, new.payments = list(self.plays), list(self.awards), list(self.payments)
        new.winner, new.done, new.revealed_dead = self.winner, self.done, self.revealed_dead
        new.played_mask, new.initial_hands = self.played_mask, self.initial_hands
        new._succ, new._award, new._lead_any, new._ace_high = self._succ, self._award, self._lead_any, self._ace_high
        new._pair_by = dict(self._pair_by)
        return new

    def __repr__(self) -> str:
        state = f"winner={self.winner}" if self.done else f"to_act={self.to_act}"
        return (
            f"<Deal players={self.players} dealer={self.dealer} turnup={CARD_NAMES[self.turnup]} "
            f"plays={len(self.plays)} {state}>"
        )


def _history_of(history: object, played_by: list[CardMask]) -> list[tuple[int, int]]:
    """``from_position``'s ``history`` checked against the cards each seat has played: a list of (seat, card)."""
    if isinstance(history, (str, bytes)) or not isinstance(history, Sequence):
        raise InvalidDealError("history must be a list of (seat, card) plays")
    plays, by_seat = [], [0] * len(played_by)
    for item in history:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise InvalidDealError(f"a play of the history is (seat, card), got {brief(item)}")
        seat, card = check_seat(item[0], len(played_by)), _parse_in_deal(item[1], "history")
        if (by_seat[seat] >> card) & 1:
            raise InvalidDealError(f"the history plays {CARD_NAMES[card]} twice")
        by_seat[seat] |= 1 << card
        plays.append((seat, card))
    if by_seat != played_by:
        raise InvalidDealError("the history must play exactly the cards each seat has played")
    return plays


def _place(owner: list[int], hands: Sequence[CardMask]) -> None:
    """Write each seat into the owner table for the cards of its hand bitmask."""
    for seat, h in enumerate(hands):
        while h:
            low = h & -h
            owner[low.bit_length() - 1] = seat
            h ^= low


def _table_of(hands: object, kind: str, what: str) -> int:
    """The number of seats of ``hands`` (one entry per seat), or an InvalidDealError."""
    if isinstance(hands, (str, bytes)) or not isinstance(hands, Sequence):
        raise InvalidDealError(f"hands must be a list of {kind}, one per seat, got {brief(hands)}")
    players = len(hands)
    try:
        check_players(players)
    except ValueError:
        raise InvalidDealError(f"a {what} needs {MIN_PLAYERS} to {MAX_PLAYERS} hands, got {players}") from None
    return players


def check_seat(seat: object, players: int, what: str = "dealer") -> int:
    """A seat number 0..players-1 (numpy integers too) as an int, or an InvalidDealError naming ``what``."""
    value = as_int(seat)
    if value is None or not 0 <= value < players:
        raise InvalidDealError(f"{what} must be a seat 0..{players - 1}, got {brief(seat)}")
    return value


def parse_balances(balances: Sequence[int] | None, players: int) -> list[int]:
    """Each seat's counters as a new list of ints (None: all 0)."""
    if balances is None:
        return [0] * players
    if (type(balances) in (list, tuple) and len(balances) == players and all(type(b) is int for b in balances)
            and -MAX_COUNTERS <= min(balances) and max(balances) <= MAX_COUNTERS):
        return list(balances)
    if isinstance(balances, (str, bytes)) or not isinstance(balances, Sequence) or len(balances) != players:
        raise InvalidDealError(f"balances must be {players} integers, one per seat, got {brief(balances)}")
    out = [as_int(b) for b in balances]
    if any(b is None for b in out):
        raise InvalidDealError(f"balances must be {players} integers, one per seat, got {brief(balances)}")
    for seat, b in enumerate(out):
        if not -MAX_COUNTERS <= b <= MAX_COUNTERS:  # type: ignore[operator]
            raise InvalidDealError(f"balance of seat {seat} must be within ±{MAX_COUNTERS:,} (MAX_COUNTERS), "
                                   f"got {brief(balances[seat])}")
    return out  # type: ignore[return-value]


def _parse_in_deal(card: str | int, where: str) -> int:
    try:
        return parse_card(card)
    except ValueError as err:
        raise InvalidDealError(f"{where}: {err}") from None


def _mask_in_deal(cards: CardMask | Iterable[str | int], what: str, seat: int) -> CardMask:
    """A card bitmask from a bitmask or a list of cards; cards outside the pack are refused."""
    if type(cards) is int and cards >= 0 and not cards & ~PACK_MASK:
        return cards
    where = f"{what} {seat}"
    value = as_int(cards)  # a numpy integer too: the batch engine's hands are uint64 bitmasks
    if value is not None:
        if value >= 0 and not value & ~PACK_MASK:
            return value
        raise InvalidDealError(f"{where}: bitmask {brief(cards)} holds bits that are not cards of the pack")
    if isinstance(cards, (str, bytes)) or not isinstance(cards, Iterable):
        raise InvalidDealError(f"{where} must be a list of cards or a bitmask, got {brief(cards)}")
    ids = [_parse_in_deal(c, where) for c in cards]
    mask = mask_of(ids)
    if mask.bit_count() != len(ids):
        raise InvalidDealError(f"not a partition of the 51 cards: {where} names a card twice")
    return mask


def parse_board(board: Sequence[int] | Mapping[str, int] | None) -> list[int]:
    """A board as 8 counts (order of ``COMPARTMENTS``) from a mapping, a list or None (empty)."""
    if board is None:
        return [0] * len(COMPARTMENTS)
    if (type(board) in (list, tuple) and len(board) == len(COMPARTMENTS)
            and all(type(v) is int and 0 <= v <= MAX_COUNTERS for v in board)):
        return list(board)
    if isinstance(board, Mapping):
        unknown = sorted(str(k) for k in set(board) - set(COMPARTMENTS))
        if unknown:
            raise InvalidDealError(f"unknown board compartment(s) {unknown}; compartments are {list(COMPARTMENTS)}")
        values = [board.get(c, 0) for c in COMPARTMENTS]
    elif isinstance(board, Sequence) and not isinstance(board, (str, bytes)) and len(board) == len(COMPARTMENTS):
        values = list(board)
    else:
        raise InvalidDealError(f"board must map compartment names to counters (or give 8 counts), got {brief(board)}")
    out = []
    for name, v in zip(COMPARTMENTS, values):
        count = as_int(v)
        if count is None or count < 0:
            raise InvalidDealError(f"board compartment {name} must hold a non-negative integer, got {brief(v)}")
        if count > MAX_COUNTERS:
            raise InvalidDealError(f"board compartment {name} must hold at most {MAX_COUNTERS:,} counters "
                                   f"(MAX_COUNTERS), got {brief(v)}")
        out.append(count)
    return out


EMPTY_OWNER: tuple[int, ...] = tuple(NOT_IN_PACK if c == EIGHT_DIAMONDS else DEAD for c in range(NUM_CARD_IDS))
"""The ``owner`` table before any card is placed: every card DEAD, the 8♦ NOT_IN_PACK."""

_EMPTY_OWNERS: dict[str, tuple[int, ...]] = {
    name: tuple(DEAD if (mask >> c) & 1 else NOT_IN_PACK for c in range(NUM_CARD_IDS))
    for name, mask in PACK_MASKS.items()
}


def empty_owner(rules: Rules) -> tuple[int, ...]:
    """The ``owner`` table of the rules' pack before any card is placed: its cards DEAD, the others NOT_IN_PACK."""
    return _EMPTY_OWNERS[rules.pack]


def _pack_words(rules: Rules) -> str:
    """The pack in an error message: ``the 51 cards`` or ``the 10 cards of the small pack``."""
    return "the 51 cards" if rules.pack == "full" else f"the {rules.pack_size} cards of the {rules.pack} pack"


def _check_in_pack(rules: Rules, cards: CardMask) -> None:
    """Refuse cards of the full pack that are not in the rules' pack (an InvalidDealError naming them)."""
    outside = cards & ~PACK_MASKS[rules.pack]
    if outside:
        raise InvalidDealError(f"{names_of(outside)} not in the {rules.pack} pack (pack={rules.pack}: "
                               f"{' '.join(names_of(PACK_MASKS[rules.pack]))})")


def _check_table(rules: Rules, players: int) -> None:
    """Refuse a table size the rules' pack cannot be dealt to (an InvalidDealError saying why)."""
    try:
        _hand_sizes(rules, players)
    except RulesError as err:
        raise InvalidDealError(str(err)) from None


def _holdings(hands: list[list[int]], rules: Rules) -> tuple[list[int], list[CardMask], list[int]]:
    """The owner table, hand bitmasks and hand sizes of hands given as card lists (seat 0 first)."""
    owner = list(empty_owner(rules))
    for seat, hand in enumerate(hands):
        for c in hand:
            owner[c] = seat
    return owner, [mask_of(hand) for hand in hands], [len(hand) for hand in hands]


@functools.lru_cache(maxsize=1024)
def _dealing_seats(rules: Rules, players: int, dealer: int) -> tuple[int, ...]:
    """Seat receiving each card dealt to the players under equal hands (``deal_cards`` order)."""
    q = _hand_sizes(rules, players)[0][0]
    first = eldest(dealer, players)
    return tuple((first + k % players) % players for k in range(q * players))


@functools.lru_cache(maxsize=256)
def _hand_sizes(rules: Rules, players: int) -> tuple[list[int], int]:
    return rules.hand_sizes(players)


def deal_cards(rules: Rules, players: int, dealer: int, order: Sequence[int]) -> tuple[list[list[int]], list[int]]:
    """Deal a shuffled pack (R3): one card at a time clockwise from eldest; returns hands by seat and the dead hand."""
    sizes, dead_size = _hand_sizes(rules, players)
    hands: list[list[int]] = [[] for _ in range(players)]
    first = eldest(dealer, players)
    if rules.deal == "all_round":
        # n+1 hands in dealing order (eldest first, dead hand last), round and round.
        piles: list[list[int]] = [[] for _ in range(players + 1)]
        for i, c in enumerate(order):
            piles[i % (players + 1)].append(c)
        for k in range(players):
            hands[(first + k) % players] = piles[k]
        return hands, piles[players]
    q = sizes[0]
    for k in range(players):
        hands[(first + k) % players] = list(order[k: q * players: players])
    return hands, list(order[q * players:])
