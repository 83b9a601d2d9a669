"""A human fits any seat through the same protocol: the terminal player and the ``play`` command."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from popejoan_env.envs.pettingzoo_aec import raw_env
from popejoan_env.cards import CARD_NAMES, PACK
from popejoan_env.errors import PopeJoanError
from popejoan_env.players import Player
from popejoan_env.observation import decode
from popejoan_env.players.human import HumanPlayer


def first_choice(seed: int) -> tuple[raw_env, dict[str, np.ndarray]]:
    """An env at the first decision with more than one legal card."""
    game = raw_env(players=4, rules="modern", auto_forced=True)
    game.reset(seed=seed)
    while True:
        obs = game.last()[0]
        if obs["action_mask"].sum() > 1:
            return game, obs
        game.step(int(np.flatnonzero(obs["action_mask"])[0]))


def test_human_reasks_until_the_card_is_legal() -> None:
    game, obs = first_choice(3)
    legal = [int(c) for c in np.flatnonzero(obs["action_mask"])]
    illegal = next(c for c in PACK if c not in legal)
    answers = iter(["zz", "8D", CARD_NAMES[illegal], CARD_NAMES[legal[-1]].lower()])
    shown: list[str] = []
    player = HumanPlayer(ask=lambda prompt: next(answers), show=shown.append)
    assert isinstance(player, Player)
    assert player.act(decode(obs["observation"], obs["action_mask"])) == legal[-1]
    text = "\n".join(shown)
    assert "your hand:" in text and "unknown card 'zz'" in text and "not in the Pope Joan pack" in text
    assert f"{CARD_NAMES[illegal]} is not a legal lead now" in text


def test_human_end_of_input_is_a_clear_error() -> None:
    _, obs = first_choice(4)

    def eof(prompt: str) -> str:
        raise EOFError

    with pytest.raises(PopeJoanError, match="no more input"):
        HumanPlayer(ask=eof, show=lambda s: None).act(decode(obs["observation"], obs["action_mask"]))


@pytest.mark.parametrize("stop", [EOFError, KeyboardInterrupt])
def test_human_stopped_at_the_prompt_ends_its_line(stop: type[BaseException]) -> None:
    """Before: Ctrl-C or the end of input at the prompt left the command's one line glued to it on the terminal
    ('your lead (AC TD AH 6S): ^Cpopejoan play: interrupted')."""
    _, obs = first_choice(4)
    shown: list[str] = []

    def stopped(prompt: str) -> str:
        raise stop

    with pytest.raises((PopeJoanError, KeyboardInterrupt)):
        HumanPlayer(ask=stopped, show=shown.append).act(decode(obs["observation"], obs["action_mask"]))
    assert shown[-1] == ""


def test_play_command_takes_a_human_through_a_deal() -> None:
    names = [CARD_NAMES[c] for c in PACK]
    typed = "\n".join(["zz"] + names * 12) + "\n"  # try cards in order until one is legal
    out = subprocess.run(
        [sys.executable, "-m", "popejoan_env", "play", "--seed", "3", "--opponents", "stops_first"],
        input=typed, capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "unknown card 'zz'" in out.stdout and "winner seat" in out.stdout and "you (seat 0) won" in out.stdout


def test_play_command_refuses_a_bad_seat() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "popejoan_env", "play", "--seat", "7"], capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 2 and "--seat must be a seat 0..3" in out.stderr


def test_play_command_prints_each_deals_result_as_it_ends() -> None:
    names = [CARD_NAMES[c] for c in PACK]
    typed = "\n".join(names * 40) + "\n"
    out = subprocess.run(
        [sys.executable, "-m", "popejoan_env", "play", "--seed", "3", "--opponents", "stops_first", "--deals", "3"],
        input=typed, capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    results = [text.index(f"deal {k}: ") for k in (1, 2, 3)]
    boards = [text.index(f"Deal {k} of the episode") for k in (2, 3)]
    # Each result is printed when its deal ends: before the next deal's first board is shown to you.
    assert results[0] < boards[0] < results[1] < boards[1] < results[2] < text.index("you (seat 0) won")
    assert "winner seat" in text and "(you " in text
