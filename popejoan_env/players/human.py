"""A human at a seat: the same protocol as every other player, answered at a terminal."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from popejoan_env.cards import CARD_NAMES, SUIT_SYMBOLS, iter_cards, parse_card
from popejoan_env.errors import PopeJoanError, UnknownCardError
from popejoan_env.observation import decode
from popejoan_env.rules import COMPARTMENTS
from popejoan_env.seat_view import SeatView


class HumanPlayer:
    """Shows the seat's view and reads a card in notation (``9D``, ``ts``); re-asks until it is legal."""

    name = "human"

    def __init__(
        self,
        seed: int | None = None,
        ask: Callable[[str], str] = input,
        show: Callable[[str], None] = print,
        show_view: bool = True,
    ) -> None:
        self.ask = ask
        self.show = show
        self.show_view = show_view
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Nothing to seed: a human brings his own randomness."""
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        """Print what the seat sees and read a legal card."""
        view = decode(observation["observation"], observation["action_mask"])
        if not view.legal:
            raise PopeJoanError("human: asked for a card when it is not this seat's turn")
        if len(view.legal) == 1:
            return view.legal[0]
        if self.show_view:
            self.show(describe(view))
        legal_names = " ".join(CARD_NAMES[c] for c in view.legal)
        while True:
            try:
                text = self.ask(f"your lead ({legal_names}): ")
            except EOFError:
                raise PopeJoanError("human: no more input (end of file) while a card was wanted") from None
            try:
                card = parse_card(text)
            except UnknownCardError as err:
                self.show(f"  {err}")
                continue
            if card in view.legal:
                return card
            self.show(f"  {CARD_NAMES[card]} is not a legal lead now; legal: {legal_names}")


def describe(view: SeatView) -> str:
    """A few lines: trumps, the board, the other seats, and the hand by suit."""
    board = "  ".join(f"{name} {count}" for name, count in zip(COMPARTMENTS, view.board))
    seats = "  ".join(
        f"{'you' if s == 0 else f'+{s}'}:{view.hand_sizes[s]} cards/{view.balances[s]}"
        for s in range(view.players)
    )
    by_suit: list[str] = []
    for suit, symbol in enumerate(SUIT_SYMBOLS):
        cards = [CARD_NAMES[c][0] for c in iter_cards(view.hand) if c // 13 == suit]
        if cards:
            by_suit.append(f"{symbol} {' '.join(cards)}")
    return "\n".join([
        f"trumps {SUIT_SYMBOLS[view.trumps]} (turn-up {CARD_NAMES[view.turnup]})   board: {board}",
        f"seats (you, then clockwise): {seats}",
        f"your hand: {'   '.join(by_suit)}",
    ])
