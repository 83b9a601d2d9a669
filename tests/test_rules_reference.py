"""The engine against a second reading of the rules (``rules_reference.py``): every combination of the options that
change play, every table size, sessions of deals with the board and balances carried, three ways to choose a lead.

The same shuffle deals both (the engine's ``Deal.new`` draws one permutation of the pack from its generator); at every
step the seat to act and its legal cards must agree, and at the end of every deal the plays, awards (in order),
payments, board, balances and winner.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from popejoan_env.cards import PACKS
from popejoan_env.engine import Deal
from popejoan_env.rules import COMPARTMENTS, Rules

from rules_reference import ReferenceDeal, deal_order, reference_rules

PLAY_OPTIONS = {
    "lead": ("lowest_of_suit", "any"),
    "deal": ("equal", "all_round", "fixed_stock"),
    "pope_turnup": ("pays_pope", "ends_deal"),
    "pair_split": ("none", "halves"),
    "ace_high": (False, True),
    "pope_excused": (True, False),
}
COMBINATIONS = [dict(zip(PLAY_OPTIONS, values)) for values in itertools.product(*PLAY_OPTIONS.values())]
DRESSINGS = ((6, 2, 2, 1, 1, 1, 1, 1), (3, 5, 1, 0, 2, 0, 4, 7), (0,) * 8, (1, 9, 9, 2, 2, 2, 2, 0))
CHOOSERS = ("random", "lowest", "highest")


def _choose(how: str, legal: list[int], rng: np.random.Generator) -> int:
    """A lead: at random, the lowest card id or the highest."""
    if how == "lowest":
        return min(legal)
    if how == "highest":
        return max(legal)
    return legal[int(rng.integers(len(legal)))]


def _session(rules: Rules, players: int, seed: int, deals: int, how: str) -> int:
    """Play ``deals`` deals of one session with the engine and the reference side by side; the deals played."""
    reading = reference_rules(rules)
    pack = PACKS[rules.pack]
    rng = np.random.default_rng([seed, 1])
    dealer = int(rng.integers(players))
    board = [int(x) for x in rng.integers(0, 30, 8)] if seed % 3 == 0 else [0] * 8
    balances = [rules.start_counters] * players
    total = sum(board) + sum(balances)
    played = 0
    for d in range(deals):
        deal_seed = seed * 1_000_003 + d
        order = [pack[i] for i in np.random.default_rng(deal_seed).permutation(len(pack))]
        deal = Deal.new(rules, players, dealer, np.random.default_rng(deal_seed), board=board, balances=balances)
        hands, dead = deal_order(reading, players, dealer, order)
        where = f"{rules.to_dict()} players={players} dealer={dealer} deal seed {deal_seed} leads {how}"
        assert [sorted(c for c in range(52) if deal.initial_hands[s] >> c & 1) for s in range(players)] == \
            [sorted(h) for h in hands] and list(deal.dead) == dead, f"{where}: dealt otherwise"
        ref = ReferenceDeal(reading, hands, dead, dealer, board, balances)
        while not deal.done:
            legal = deal.legal_actions()
            assert (deal.to_act, legal) == (ref.to_act, ref.legal()), f"{where}, card {len(deal.plays) + 1}"
            card = legal[0] if len(legal) == 1 else _choose(how, legal, rng)
            deal.play(card)
            ref.play(card)
        assert ref.done, f"{where}: the reference plays on"
        assert deal.plays == ref.played, where
        assert deal.awards == [(cause, seat, COMPARTMENTS.index(c), n) for cause, seat, c, n in ref.awards], where
        assert deal.payments == ref.payments, where
        assert (deal.balances, deal.board) == (ref.balances, [ref.board[c] for c in COMPARTMENTS]), where
        assert deal.winner == ref.winner, where
        board, balances = list(deal.board), list(deal.balances)
        assert sum(board) + sum(balances) == total, f"{where}: counters not conserved"
        played += 1
        dealer = (dealer + 1) % players
        if not rules.can_deal(balances[dealer]):
            break
    return played


def _rules(i: int, options: dict[str, Any]) -> Rules:
    """The play options with the others varied by ``i``: who sees the dead hand, credit, the dressing."""
    credit = (i // 2) % 3 != 0
    rules = Rules(**options, dealer_sees_dead_hand=bool(i % 2), allow_credit=credit,
                  dressing=DRESSINGS[(i // 6) % len(DRESSINGS)])
    if not credit:
        rules = rules.replace(start_counters=max(20 + (i % 7) * 3, sum(rules.dressing)))
    return rules


@pytest.mark.parametrize("i", range(len(COMBINATIONS)),
                         ids=["/".join(str(v) for v in c.values()) for c in COMBINATIONS])
def test_every_combination_plays_as_the_rules_read(i: int) -> None:
    rules = _rules(i, COMBINATIONS[i])
    played = sum(_session(rules, players, 1000 * i + 10 * players + k, 6, how)
                 for players in range(3, 9) for k, how in enumerate(CHOOSERS))
    assert played >= 6 * len(CHOOSERS)  # every session dealt at least its first deal


@pytest.mark.parametrize("i", [i for i, c in enumerate(COMBINATIONS) if c["deal"] != "fixed_stock"][::4])
def test_the_small_pack_plays_as_the_rules_read(i: int) -> None:
    rules = _rules(i, COMBINATIONS[i]).replace(pack="small")
    assert sum(_session(rules, 3, 7000 + 10 * i + k, 4, how) for k, how in enumerate(CHOOSERS)) >= len(CHOOSERS)


def test_the_reference_is_not_the_engine_in_disguise() -> None:
    """A reading that broke one rule would be caught: a pair split without halves pays no one."""
    rules = _rules(0, {**COMBINATIONS[0], "pair_split": "halves"})
    reading = reference_rules(rules) | {"pair_split": "none"}
    caught = 0
    for seed in range(400):
        pack = PACKS[rules.pack]
        order = [pack[i] for i in np.random.default_rng(seed).permutation(len(pack))]
        deal = Deal.new(rules, 4, 0, np.random.default_rng(seed))
        hands, dead = deal_order(reading, 4, 0, order)
        ref = ReferenceDeal(reading, hands, dead, 0, [0] * 8, [rules.start_counters] * 4)
        while not deal.done:
            card = deal.legal_actions()[0]
            deal.play(card)
            ref.play(card)
        caught += deal.awards != [(cause, s, COMPARTMENTS.index(c), n) for cause, s, c, n in ref.awards]
    assert caught > 0
