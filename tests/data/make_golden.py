"""Write the golden game records in ``tests/data/golden_records.jsonl``.

Run from the repository root::

    python tests/data/make_golden.py

Each case searches seeds 0, 1, 2, … of ``numpy.random.default_rng(seed)``
for the first randomly played deal that shows the situation named by the
case (a Pope turn-up, matrimony won, …), and stores its record with the extra
keys ``case`` and ``seed``.  The tests never run this script: they replay the
stored file, so a change of engine behaviour shows up as a failing golden
test instead of silently regenerated data.  Regenerate only on purpose (a
rules change that bumps the record format or the env version) and say so in
the changelog.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable

import numpy as np

from popejoan_env.cards import POPE
from popejoan_env.engine import Deal
from popejoan_env.record import deal_record, verify_record, write_records
from popejoan_env.rules import COMPARTMENTS, MATRIMONY_C, MODERN, VICTORIAN, Rules

OUT = pathlib.Path(__file__).with_name("golden_records.jsonl")
MAX_SEEDS = 100_000


def play_random(deal: Deal, rng: np.random.Generator) -> None:
    """Random legal play: every choice uniform among the legal cards."""
    while not deal.done:
        legal = deal.legal_actions()
        deal.play(legal[int(rng.integers(len(legal)))])


def session_deals(rules: Rules, players: int, seed: int, deals: int) -> list[Deal]:
    """Deals of one session (board and balances carried, the deal passing left), played at random."""
    rng = np.random.default_rng(seed)
    board, balances, out = None, [rules.start_counters] * players, []
    for k in range(deals):
        deal = Deal.new(rules, players, k % players, rng, board=board, balances=balances)
        play_random(deal, rng)
        board, balances = deal.board, deal.balances
        out.append(deal)
    return out


def first_deal(rules: Rules, players: int, wanted: Callable[[Deal], bool]) -> tuple[int, Deal]:
    """The first seed whose random deal (dealer 0, empty board) shows the wanted situation."""
    for seed in range(MAX_SEEDS):
        rng = np.random.default_rng(seed)
        deal = Deal.new(rules, players, 0, rng)
        play_random(deal, rng)
        if wanted(deal):
            return seed, deal
    raise RuntimeError("no seed found; widen MAX_SEEDS")


def won(deal: Deal, comp: str, cause: str = "play") -> bool:
    """True if the compartment was taken (with a positive amount) for that cause."""
    index = COMPARTMENTS.index(comp)
    return any(c == cause and k == index and n > 0 for c, _, k, n in deal.awards)


def main() -> None:
    """Search every case and write the golden file."""
    records = []

    def add(case: str, seed: int, deal: Deal) -> None:
        record = deal_record(deal)
        record.update(case=case, seed=seed)
        verify_record(record)
        records.append(record)

    for preset, rules in (("modern", MODERN), ("victorian", VICTORIAN)):
        # A whole 4-player session: board and balances carried from deal to deal.
        for k, deal in enumerate(session_deals(rules, 4, seed=2024, deals=8)):
            add(f"{preset}_4p_session_deal_{k}", 2024, deal)
    add("modern_3p", *first_deal(MODERN, 3, lambda d: d.winner is not None))
    add("victorian_3p", *first_deal(VICTORIAN, 3, lambda d: d.winner is not None))
    add("modern_8p", *first_deal(MODERN, 8, lambda d: d.winner is not None))
    add("victorian_8p", *first_deal(VICTORIAN, 8, lambda d: d.winner is not None))
    add("pope_turnup_pays_pope", *first_deal(MODERN, 4, lambda d: d.turnup == POPE))
    add("pope_turnup_ends_deal", *first_deal(VICTORIAN, 4, lambda d: d.turnup == POPE))
    add("matrimony_won", *first_deal(MODERN, 4, lambda d: won(d, "matrimony")))
    add("intrigue_won", *first_deal(MODERN, 4, lambda d: won(d, "intrigue")))
    add("matrimony_and_intrigue_won", *first_deal(
        MODERN, 4, lambda d: won(d, "matrimony") and won(d, "intrigue"),
    ))
    add("victorian_intrigue_won", *first_deal(VICTORIAN, 5, lambda d: won(d, "intrigue")))
    halves = MODERN.replace(pair_split="halves")
    add("custom_halves_matrimony_split", *first_deal(
        halves, 4,
        lambda d: sum(1 for a in d.awards if a[2] == MATRIMONY_C) == 2 and won(d, "matrimony"),
    ))
    add("custom_ace_high_all_round_6p", *first_deal(
        MODERN.replace(ace_high=True, deal="all_round"), 6, lambda d: won(d, "ace"),
    ))
    write_records(OUT, records)
    print(f"wrote {len(records)} golden records to {OUT}")


if __name__ == "__main__":
    main()
