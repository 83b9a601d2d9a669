"""A human at a seat: the same protocol as every other player, answered at a terminal."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from popejoan_env.cards import CARD_NAMES, parse_card
from popejoan_env.errors import PopeJoanError, UnknownCardError
from popejoan_env.players.base import legal_of
from popejoan_env.render import describe
from popejoan_env.seat_view import SeatView


class HumanPlayer:
    """Shows the seat's view and reads a card in notation (``9D``, ``ts``); re-asks until it is legal."""

    name = "human"

    def __init__(
        self,
        seed: int | None = None,
        *,
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

    def act(self, view: SeatView) -> int:
        """Print what the seat sees and read a legal card (a forced card or a lone lead is played at once)."""
        legal = legal_of(view, self.name)
        if len(legal) == 1:
            return legal[0]
        if self.show_view:
            self.show(describe(view))
        legal_names = " ".join(CARD_NAMES[c] for c in legal)
        while True:
            try:
                text = self.ask(f"your lead ({legal_names}): ")
            except EOFError:
                self.show("")  # end the prompt's line: the refusal is a line of its own
                raise PopeJoanError("human: no more input (end of file) while a card was wanted") from None
            except KeyboardInterrupt:
                self.show("")  # likewise the command's "interrupted"
                raise
            try:
                card = parse_card(text)
            except UnknownCardError as err:
                self.show(f"  {err}")
                continue
            if card in legal:
                return card
            self.show(f"  {CARD_NAMES[card]} is not a legal lead now; legal: {legal_names}")
