"""The clairvoyant seat (``evaluate.clairvoyant``): its best line is a game the seat can play, no line does better
(counted again by replaying every line from the start, without copies), it never ends below AGENT's own game, and
a game with too many lines is refused."""

from __future__ import annotations

import pytest

from popejoan_env.engine import Deal
from popejoan_env.evaluate import clairvoyant
from popejoan_env.evaluate.exploit_search import frozen_deal, game_seed
from popejoan_env.players import make_player
from popejoan_env.players.base import ask, call_reset
from popejoan_env.rules import Rules
from popejoan_env.seat_view import seat_view


def fresh(agent: str, d: int, seats: int = 4) -> list:
    """AGENT at every seat, reset as the clairvoyant table resets it for deal ``d``."""
    players = [make_player(agent, seed=0) for _ in range(seats)]
    for s, player in enumerate(players):
        call_reset(player, game_seed(1, d, s))
    return players


def replay(base: Deal, seat: int, players: list, line: list[int]) -> tuple[int, list[list[int]]]:
    """``seat`` plays ``line`` at its decisions, the others answer: the seat's counters, and the legal cards of each
    of its decisions after the line ran out (where a longer line would branch)."""
    game, leads, open_ = base.copy(), iter(line), []
    legal = game.advance()
    while legal:
        if game.to_act == seat:
            card = next(leads, None)
            if card is None:
                open_.append(legal)
                card = legal[0]
            game.play(card)
        else:
            game.play(ask(players[game.to_act], seat_view(game, game.to_act)))
        legal = game.advance()
    return game.delta[seat], open_


def every_line(agent: str, d: int, base: Deal, seat: int) -> dict[tuple[int, ...], int]:
    """Every line of ``seat`` and its counters, each replayed from the deal's start with freshly reset players."""
    found: dict[tuple[int, ...], int] = {}
    todo: list[list[int]] = [[]]
    while todo:
        line = todo.pop()
        value, open_ = replay(base, seat, fresh(agent, d), line)
        if not open_:
            found[tuple(line)] = value
        else:
            todo += [[*line, card] for card in open_[0]]
    return found


@pytest.mark.parametrize("agent", ["random", "stops_first", "pimc:samples=4"])
@pytest.mark.parametrize("d", [0, 7])
def test_the_best_line_is_playable_and_no_line_does_better(agent: str, d: int) -> None:
    base = frozen_deal(d, Rules.preset("modern"), 4)
    for seat in range(4):
        value, line = clairvoyant.best_line(base.copy(), seat, fresh(agent, d))
        assert replay(base, seat, fresh(agent, d), line) == (value, [])
        lines = every_line(agent, d, base, seat)
        assert tuple(line) in lines and value == max(lines.values())


def test_it_never_ends_below_the_agents_own_game_and_finds_more_in_some() -> None:
    table = clairvoyant._Table("stops_first", "modern", 4, 1)
    rows = [table.deal(d) for d in range(12)]
    assert all(b >= o for row in rows for b, o in zip(row["best"], row["own"]))
    assert any(b > o for row in rows for b, o in zip(row["best"], row["own"]))


def test_a_game_of_too_many_lines_is_refused() -> None:
    rules = Rules.preset("victorian")  # any card may lead: the lines multiply
    base = frozen_deal(0, rules, 4)
    with pytest.raises(clairvoyant.TooManyLinesError, match="more than 50 lines"):
        clairvoyant.best_line(base.copy(), 0, fresh("random", 0), max_lines=50)
