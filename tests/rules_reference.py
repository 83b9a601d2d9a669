"""A second reading of the rules (R1–R11 of the rules contract), written from the text alone: no engine code.

It is slow and plain on purpose: lists and sets, one rule a few lines, so that a reader can check it against the
contract line by line.  ``tests/test_rules_reference.py`` plays the engine and this reading side by side and
requires the same legal cards at every step and the same awards, payments and balances at the end.  Only the card
numbering (``suit * 13 + rank``, rank 0 the Ace) is shared with the package.
"""

from __future__ import annotations

from typing import Any

COMPARTMENTS = ("pope", "matrimony", "intrigue", "ace", "king", "queen", "jack", "game")
NINE_OF_DIAMONDS = 1 * 13 + 8
EIGHT_OF_DIAMONDS = 1 * 13 + 7
HONOURS = {0: "ace", 12: "king", 11: "queen", 10: "jack"}
"""The trump honours by rank (R10)."""


def strength(rank: int, ace_high: bool) -> int:
    """A rank's place in its suit: the Ace lowest, or above the King with ``ace_high``."""
    return 13 if ace_high and rank == 0 else rank


def successor(card: int, ace_high: bool, pack: list[int]) -> int | None:
    """The card of the same suit exactly one place higher, if the pack has it (the 7♦ has none: no 8♦)."""
    suit, rank = divmod(card, 13)
    above = [c for c in pack if c // 13 == suit and strength(c % 13, ace_high) == strength(rank, ace_high) + 1]
    return above[0] if above else None


def hand_sizes(rules: dict[str, Any], players: int) -> tuple[list[int], int]:
    """Cards a hand and cards in the dead hand (R3), for the ``equal`` and ``fixed_stock`` deals."""
    cards = 51 if rules["pack"] == "full" else 10
    if rules["deal"] == "equal":
        each = (cards - 1) // players if rules["pack"] == "small" else cards // (players + 1)
    else:  # fixed_stock: at least six stops and the turn-up set aside, equal hands
        each = (cards - 1 - 6) // players
    return [each] * players, cards - players * each


def deal_order(rules: dict[str, Any], players: int, dealer: int, order: list[int]) -> tuple[list[list[int]], list[int]]:
    """Hands by seat and the dead hand (turn-up last) from the shuffled ``order``, dealt from eldest (R3)."""
    eldest = (dealer + 1) % players
    hands: list[list[int]] = [[] for _ in range(players)]
    if rules["deal"] == "all_round":  # one card at a time to every seat and the dead hand in turn
        piles: list[list[int]] = [[] for _ in range(players + 1)]
        for i, card in enumerate(order):
            piles[i % (players + 1)].append(card)
        for k in range(players):
            hands[(eldest + k) % players] = piles[k]
        return hands, piles[players]
    sizes, _ = hand_sizes(rules, players)
    for i in range(sizes[0] * players):
        hands[(eldest + i % players) % players].append(order[i])
    return hands, list(order[sizes[0] * players:])


class ReferenceDeal:
    """One deal played by the rules' text: ``legal()``, ``play(card)``, then ``awards``, ``payments``, ``balances``."""

    def __init__(self, rules: dict[str, Any], hands: list[list[int]], dead: list[int], dealer: int,
                 board: list[int], balances: list[int]) -> None:
        self.rules = rules
        self.players = len(hands)
        if rules["pack"] == "full":
            self.pack = [c for c in range(52) if c != EIGHT_OF_DIAMONDS]
        else:
            self.pack = sorted([c for hand in hands for c in hand] + list(dead))
        self.hands = [set(hand) for hand in hands]
        self.dead = list(dead)
        self.trumps = dead[-1] // 13
        self.board = dict(zip(COMPARTMENTS, board))
        self.balances = list(balances)
        self.played: list[tuple[int, int]] = []
        self.played_by: dict[int, int] = {}
        self.awards: list[tuple[str, int, str, int]] = []
        self.payments: list[tuple[int, int, int]] = []
        self.winner: int | None = None
        self.done = False
        self.forced: int | None = None
        self.to_act: int | None = (dealer + 1) % self.players
        for compartment, count in zip(COMPARTMENTS, rules["dressing"]):  # R1: the dealer dresses the board
            self.board[compartment] += count
        self.balances[dealer] -= sum(rules["dressing"])
        turnup = dead[-1]
        honour = self.honour(turnup)
        if honour is not None:  # R5: a turned-up honour is the dealer's
            self.take("turnup", dealer, honour)
            if turnup == NINE_OF_DIAMONDS and rules["pope_turnup"] == "ends_deal":
                self.take("turnup", dealer, "game")
                for k in range(1, self.players):
                    seat = (dealer + k) % self.players
                    self.pay(seat, dealer, len(self.hands[seat]))
                self.done, self.to_act = True, None

    def honour(self, card: int) -> str | None:
        """The compartment a card wins: the Pope (9♦) always, the Ace, King, Queen and Jack of trumps."""
        if card == NINE_OF_DIAMONDS:
            return "pope"
        return HONOURS.get(card % 13) if card // 13 == self.trumps else None

    def take(self, cause: str, seat: int, compartment: str, amount: int | None = None) -> None:
        """``seat`` takes ``amount`` (all of it when None) from ``compartment``."""
        amount = self.board[compartment] if amount is None else amount
        self.board[compartment] -= amount
        self.balances[seat] += amount
        self.awards.append((cause, seat, compartment, amount))

    def pay(self, payer: int, payee: int, amount: int) -> None:
        """``payer`` gives ``amount`` counters to ``payee``."""
        self.balances[payer] -= amount
        self.balances[payee] += amount
        self.payments.append((payer, payee, amount))

    def holder(self, card: int) -> int | None:
        """The seat holding ``card``, if any."""
        return next((seat for seat in range(self.players) if card in self.hands[seat]), None)

    def legal(self) -> list[int]:
        """The cards the seat to act may play: the forced successor (R8), else its leads (R7), sorted."""
        if self.done or self.to_act is None:
            return []
        if self.forced is not None:
            return [self.forced]
        hand = self.hands[self.to_act]
        if self.rules["lead"] == "any":
            return sorted(hand)
        lowest = []
        for suit in range(4):
            cards = [c for c in hand if c // 13 == suit]
            if cards:
                lowest.append(min(cards, key=lambda c: strength(c % 13, self.rules["ace_high"])))
        return sorted(lowest)

    def play(self, card: int) -> None:
        """The seat to act plays ``card``: honours and pairs (R10), going out (R11), then who plays next (R8, R9)."""
        if card not in self.legal():
            raise ValueError(f"card {card} is not legal here: {self.legal()}")
        seat = self.to_act
        assert seat is not None
        self.hands[seat].discard(card)
        self.played.append((seat, card))
        self.played_by[card] = seat
        honour = self.honour(card)
        if honour is not None:
            self.take("play", seat, honour)
            if card // 13 == self.trumps and card != NINE_OF_DIAMONDS:
                self.pairs(seat, card)
        if not self.hands[seat]:  # R11: out of cards, the seat wins the game and a counter a card held
            self.take("game", seat, "game")
            excused = self.holder(NINE_OF_DIAMONDS) if self.rules["pope_excused"] else None
            for k in range(1, self.players):
                other = (seat + k) % self.players
                self.pay(other, seat, 0 if other == excused else len(self.hands[other]))
            self.winner, self.done, self.to_act, self.forced = seat, True, None, None
            return
        after = successor(card, self.rules["ace_high"], self.pack)
        if after is not None and after not in self.played_by and after not in self.dead:
            holder = self.holder(after)
            if holder is not None:  # R8: whoever holds the next card plays it
                self.to_act, self.forced = holder, after
                return
        self.to_act, self.forced = seat, None  # R9: a stop; the last to play leads again

    def pairs(self, seat: int, card: int) -> None:
        """Matrimony (King and Queen of trumps) and Intrigue (Queen and Jack) when the pair is complete (R10)."""
        king, queen, jack = self.trumps * 13 + 12, self.trumps * 13 + 11, self.trumps * 13 + 10
        partners = {king: [("matrimony", queen)], queen: [("matrimony", king), ("intrigue", jack)],
                    jack: [("intrigue", queen)]}.get(card, [])
        for compartment, other_card in partners:
            other = self.played_by.get(other_card)
            if other is None:
                continue
            if other == seat:
                self.take("play", seat, compartment)
            elif self.rules["pair_split"] == "halves":
                half = self.board[compartment] // 2
                self.take("play", other, compartment, half)
                self.take("play", seat, compartment, half)


def reference_rules(rules: Any) -> dict[str, Any]:
    """The options of a package ``Rules`` this reading uses, as a plain dict."""
    return {"lead": rules.lead, "deal": rules.deal, "pope_turnup": rules.pope_turnup, "pair_split": rules.pair_split,
            "ace_high": rules.ace_high, "pope_excused": rules.pope_excused, "dressing": tuple(rules.dressing),
            "pack": rules.pack}
