"""Whole sessions: several deals with the board and balances carried and the deal passing left.

>>> import numpy as np
>>> s = Session(players=4, rng=np.random.default_rng(7))
>>> while not s.over:
...     deal = s.next_deal()
...     while not deal.done:
...         deal.play(deal.legal_actions()[0])
>>> sum(s.balances) + sum(s.board) == 4 * 48
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from popejoan_env.checks import as_int, brief
from popejoan_env.engine import Deal, Generator, check_seat, parse_balances, parse_board
from popejoan_env.errors import GameOverError, InvalidDealError
from popejoan_env.rules import COMPARTMENTS, MAX_PLAYERS, MIN_PLAYERS, MODERN, RulesLike, check_players, resolve_rules
from popejoan_env.seats import next_dealer


class Session:
    """A sequence of deals (default ``2·n``) sharing a board and the players' balances."""

    def __init__(
        self,
        rules: RulesLike = MODERN,
        players: int = 4,
        rng: Generator | None = None,
        *,
        deals: int | None = None,
        first_dealer: int = 0,
        board: Sequence[int] | Mapping[str, int] | None = None,
        balances: Sequence[int] | None = None,
    ) -> None:
        rules = resolve_rules(rules)
        try:
            players = check_players(players)
        except ValueError:
            raise InvalidDealError(f"a session needs {MIN_PLAYERS} to {MAX_PLAYERS} players, got "
                                   f"{brief(players)}") from None
        if deals is None:
            deals = 2 * players
        if as_int(deals) is None or deals < 1:
            raise InvalidDealError(f"a session needs a positive number of deals, got {brief(deals)}")
        first_dealer = check_seat(first_dealer, players, "first_dealer")
        if rng is not None and not callable(getattr(rng, "permutation", None)):
            raise InvalidDealError(f"rng must be a numpy.random.Generator (or None for explicit deals), got "
                                   f"{type(rng).__name__}")
        self.rules = rules
        self.players = players
        self.rng = rng
        self.length = int(deals)
        self._first_dealer = first_dealer
        self._board = parse_board(board)
        self._balances = parse_balances(balances, players) if balances is not None else [rules.start_counters] * players
        self.start_total = sum(self._balances) + sum(self._board)
        self.deals: list[Deal] = []
        self.ended_broke = False

    @property
    def current(self) -> Deal | None:
        """The deal in progress or last finished, or None before the first."""
        return self.deals[-1] if self.deals else None

    @property
    def over(self) -> bool:
        """True when the session has had all its deals (or, without credit, the next dealer is broke)."""
        if self.deals and not self.deals[-1].done:
            return False
        if len(self.deals) >= self.length:
            return True
        if not self.rules.can_deal(self.balances[self.dealer]):
            self.ended_broke = True
            return True
        return False

    def next_deal(
        self,
        hands: Sequence[Sequence[str | int]] | None = None,
        dead: Sequence[str | int] | None = None,
    ) -> Deal:
        """Start the next deal: shuffled with the session's rng, or the explicit ``hands``/``dead``."""
        if self.deals and not self.deals[-1].done:
            raise GameOverError("the current deal is not finished; play it out before the next deal")
        if self.over:
            why = ""
            if self.ended_broke:  # say why: the dealer's counters, the dressing, no credit
                why = (f": the dealer, seat {self.dealer}, holds {self.balances[self.dealer]} counters and cannot pay "
                       f"the dressing ({sum(self.rules.dressing)}) under allow_credit=false")
            raise GameOverError(f"the session is over after {len(self.deals)} deals{why}")
        if hands is not None or dead is not None:
            if hands is None or dead is None:
                raise InvalidDealError("an explicit deal needs both hands and dead")
            if isinstance(hands, (str, bytes)) or not isinstance(hands, Sequence):
                raise InvalidDealError(f"hands must be a list of card lists, one per seat, got {brief(hands)}")
            if len(hands) != self.players:
                raise InvalidDealError(
                    f"this session has {self.players} players, the deal gives {len(hands)} hands: "
                    f"it must give {self.players} hands (one per seat)")
            deal = Deal.from_cards(hands, dead, self.dealer, self.rules, board=self.board, balances=self.balances)
        else:
            deal = Deal.new(self.rules, self.players, self.dealer, self.rng, board=self.board, balances=self.balances)
        self.deals.append(deal)
        return deal

    @property
    def board(self) -> list[int]:
        """Counters on each compartment now (order of ``COMPARTMENTS``)."""
        return list(self.deals[-1].board) if self.deals else list(self._board)

    @property
    def balances(self) -> list[int]:
        """Each seat's counters now."""
        return list(self.deals[-1].balances) if self.deals else list(self._balances)

    @property
    def dealer(self) -> int:
        """The dealer of the current deal, or of the next one once the current deal is done."""
        if not self.deals:
            return self._first_dealer
        last = self.deals[-1]
        return next_dealer(last.dealer, self.players) if last.done else last.dealer

    @property
    def leftover(self) -> dict[str, int]:
        """Counters on the board by compartment (at the end of a session they belong to nobody)."""
        return dict(zip(COMPARTMENTS, self.board))
