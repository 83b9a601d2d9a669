"""The batch engine (``batch.BatchDeals``) against the scalar engine (``engine.Deal``), card for card.

1. A differential test: every deal the batch plays (``deal_seed=S``, so deal ``d`` is
   ``Deal.new(..., rng=default_rng(S + d))``) is replayed by the scalar engine with the same choices, and the
   game records (every card, award in order, payment, delta and board), the ``Finished`` report and the session
   chaining (the board and balances a deal starts from) must be identical: 120 configurations (every table
   size, both presets, mixed variants, sessions, with and without lone leads), and 102,000 deals in all (the
   bigger runs are marked ``slow``).
   A second check plays 2,400 deals side by side with the scalar engine and compares every position.
2. The rule edge cases of RULES.md (E2 … E18) on explicit deals (``orders=``), position by position.
3. Refused calls change nothing; the same seed gives the same batch; ``from_deals`` continues scalar
   positions; counters are conserved.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from popejoan_env import Deal, MODERN, PopeJoanError, Rules, VICTORIAN
from popejoan_env.batch import BatchDeals, Finished, order_of_deal
from popejoan_env.cards import CARD_NAMES, EIGHT_DIAMONDS, NUM_CARD_IDS, PACK, parse_card
from popejoan_env.engine import NOT_IN_PACK
from popejoan_env.errors import GameOverError, IllegalActionError, InvalidDealError, MissingDependencyError
from popejoan_env.record import deal_record, verify_record
from popejoan_env.rules import COMPARTMENTS, INTRIGUE_C, MATRIMONY_C

SEED = 1_000
# ============================================================================ the deterministic choices
def mix(deal_ids: Any, plays: Any) -> Any:
    """A hash of (deal id, plays so far), the same for Python ints and int64 arrays (no overflow below 10^9)."""
    return (deal_ids * 1_000_003 + plays * 7_919 + 12_345) % 65_521


def batch_choices(batch: BatchDeals, keys: np.ndarray | None = None) -> np.ndarray:
    """The lead of every deal: legal card number ``mix(key, plays) % count`` in card-id order (-1 when over)."""
    mask = batch.legal_mask()
    count = mask.sum(axis=1)
    keys = batch.deal_ids if keys is None else keys
    k = mix(keys, batch.num_plays) % np.maximum(count, 1)
    hit = mask & (np.cumsum(mask, axis=1) - 1 == k[:, None])
    return np.where(count > 0, np.argmax(hit, axis=1), -1)


def scalar_choice(key: int) -> Callable[[Deal, list[int]], int]:
    """The same choice for ``Deal.play_out`` (its legal cards come in card-id order, as ``legal_mask``)."""
    def choose(deal: Deal, legal: list[int]) -> int:
        assert legal == sorted(legal)
        return legal[mix(key, len(deal.plays)) % len(legal)]
    return choose


# ============================================================================ 1. the differential test
@dataclasses.dataclass(frozen=True)
class Config:
    """One run of the differential test."""

    name: str
    rules: Rules
    players: int
    deals: int
    slots: int
    session_length: int
    lone_leads: bool
    board: tuple[int, ...] | None = None
    seed: int = SEED


DRESSING = {"pope": 3, "matrimony": 5, "intrigue": 1, "ace": 0, "king": 2, "queen": 0, "jack": 4, "game": 7}
VARIANTS: dict[str, dict[str, Any]] = {
    "plain": {},
    "ace_high": {"ace_high": True},
    "halves": {"pair_split": "halves"},
    "all_round": {"deal": "all_round"},
    "pope_turnup": {},  # ends_deal under modern, pays_pope under victorian (the preset's other value)
    "no_pope_excuse": {"pope_excused": False},
    "lead_any_equal": {"lead": "any", "deal": "equal"},
    "dressing": {"dressing": DRESSING},
    "no_credit": {"allow_credit": False, "start_counters": 20},
    "mixed": {"ace_high": True, "pair_split": "halves", "pope_excused": False, "deal": "all_round"},
}
FAST_DEALS, BIG_DEALS = 150, 700
"""Deals per configuration: the fast runs, the slow ones: 120 configurations, 102,000 deals in all."""


def _configs() -> list[Config]:
    out = []
    for p_i, preset in enumerate((MODERN, VICTORIAN)):
        for v_i, (variant, options) in enumerate(VARIANTS.items()):
            if variant == "pope_turnup":
                options = {"pope_turnup": "pays_pope" if preset.pope_turnup == "ends_deal" else "ends_deal"}
            rules = preset.replace(**options)
            for players in range(3, 9):
                i = p_i + v_i + players
                out.append(Config(
                    name=f"{preset.name}-{variant}-{players}p", rules=rules, players=players,
                    deals=BIG_DEALS, slots=(64, 192, 320)[i % 3],
                    # Without credit, sessions long enough for a dealer to run short of the dressing.
                    session_length=(1, 3, 2 * players, 7)[(v_i + players) % 4] if rules.allow_credit else 4 * players,
                    lone_leads=i % 2 == 0,
                    board=(0, 4, 0, 1, 0, 0, 2, 9) if variant == "dressing" else None,
                ))
    return out


CONFIGS = _configs()
FAST = [dataclasses.replace(c, deals=FAST_DEALS, slots=c.slots // 16 + 8, seed=SEED + 10**6) for c in CONFIGS]
"""Every configuration, few slots so each plays several deals (unmarked)."""
BIG = CONFIGS
"""Every configuration, more slots and deals (``slow``)."""


def test_the_differential_configurations_cover_the_brief() -> None:
    """At least 100,000 deals; every table size, both presets, every variant, both lone_leads, sessions."""
    assert sum(c.deals for c in FAST + BIG) >= 100_000
    assert len(FAST) == len(CONFIGS)
    assert len({(c.name, c.seed) for c in FAST + BIG}) == len(FAST + BIG)  # distinct runs
    assert {c.players for c in CONFIGS} == set(range(3, 9))
    assert {c.rules.name for c in CONFIGS} >= {"modern", "victorian", "custom"}
    assert {c.lone_leads for c in CONFIGS} == {True, False}
    assert min(c.session_length for c in CONFIGS) == 1 and max(c.session_length for c in CONFIGS) > 1
    rules = [c.rules for c in CONFIGS]
    assert any(r.ace_high for r in rules) and any(r.pair_split == "halves" for r in rules)
    assert any(r.deal == "all_round" for r in rules) and any(not r.pope_excused for r in rules)
    assert any(r.pope_turnup == "ends_deal" and r.lead == "lowest_of_suit" for r in rules)
    assert any(r.lead == "any" and r.deal == "equal" for r in rules)
    assert any(r.dressing != MODERN.dressing for r in rules) and any(not r.allow_credit for r in rules)


@dataclasses.dataclass
class Reported:
    """One finished deal as the batch reported it."""

    slot: int
    deal_id: int
    record: dict[str, Any]
    delta: list[int]
    winner: int
    plays: int
    balances: list[int]
    board: list[int]


def run_batch(config: Config) -> tuple[BatchDeals, list[Reported]]:
    """Play ``config.deals`` (or a few more) deals through the batch with ``batch_choices``; every report, in order."""
    batch = BatchDeals(
        config.rules, config.players, config.slots, deal_seed=config.seed, session_length=config.session_length,
        lone_leads=config.lone_leads, record=True, board=config.board,
    )
    reported: list[Reported] = []

    def collect(fin: Finished) -> None:
        assert fin.records is not None and len(fin.records) == len(fin)
        for i in range(len(fin)):
            reported.append(Reported(
                int(fin.slots[i]), int(fin.deal_ids[i]), fin.records[i], fin.delta[i].tolist(), int(fin.winner[i]),
                int(fin.plays[i]), fin.balances[i].tolist(), fin.board[i].tolist(),
            ))

    collect(batch.advance())  # deals that ended at their turn-up when dealt
    while len(reported) < config.deals:
        collect(batch.step(batch_choices(batch)))
    return batch, reported


def replay(config: Config, batch: BatchDeals, reported: list[Reported]) -> tuple[list[str], int, int]:
    """Replay every reported deal with the scalar engine: a description of each difference (at most 5), the
    number of deals that continued a session and the number of sessions a broke dealer ended early."""
    rules, players = config.rules, config.players
    fresh_board = list(config.board or [0] * 8)
    fresh_balances = [rules.start_counters] * players
    # Per slot: dealer, board and balances of its next deal, and deals so far in its session (simulate's sessions).
    chain = {s: (0, fresh_board, fresh_balances, 0) for s in range(config.slots)}
    problems: list[str] = []
    continued = broke_ends = 0
    ids = [r.deal_id for r in reported]
    if len(set(ids)) != len(ids) or set(ids) | set(batch.deal_ids.tolist()) != set(range(batch.deals_dealt)):
        problems.append(f"the deal ids reported and in flight are not 0..{batch.deals_dealt - 1}, each once")
    for r in reported:
        dealer, board, balances, in_session = chain[r.slot]
        continued += in_session > 0
        deal = Deal.new(rules, players, dealer, rng=np.random.default_rng(config.seed + r.deal_id), board=board,
                        balances=balances)
        deal.play_out(scalar_choice(r.deal_id), lone_leads=config.lone_leads)
        expected = deal_record(deal)
        where = (f"{config.name}: deal {r.deal_id} of deal_seed {config.seed} (slot {r.slot}, "
                 f"deal {in_session + 1} of its session)")
        for key in list(expected) + [k for k in r.record if k not in expected]:
            if expected.get(key) != r.record.get(key):
                problems.append(f"{where}: record[{key!r}]: batch {r.record.get(key)!r}, scalar {expected.get(key)!r}")
        if list(expected) != list(r.record):
            problems.append(f"{where}: record keys in order: batch {list(r.record)}, scalar {list(expected)}")
        got = (r.delta, r.winner, r.plays, r.balances, r.board)
        want = (deal.delta, -1 if deal.winner is None else deal.winner, len(deal.plays), deal.balances, deal.board)
        for field, g, w in zip(("delta", "winner", "plays", "balances", "board"), got, want):
            if g != w:
                problems.append(f"{where}: Finished.{field}: batch {g}, scalar {w}")
        if sum(deal.delta) + sum(deal.board) - sum(deal.board_before) != 0:
            problems.append(f"{where}: counters not conserved")
        if len(problems) >= 5:
            break
        nxt = (dealer + 1) % players
        in_session += 1
        broke = not rules.allow_credit and deal.balances[nxt] < sum(rules.dressing)
        broke_ends += broke and in_session < config.session_length
        if in_session >= config.session_length or broke:
            chain[r.slot] = (nxt, fresh_board, fresh_balances, 0)
        else:
            chain[r.slot] = (nxt, deal.board, deal.balances, in_session)
    return problems, continued, broke_ends


def check_against_scalar(config: Config) -> None:
    """Play a configuration through the batch, replay it with the scalar engine, fail naming every difference."""
    batch, reported = run_batch(config)
    assert len(reported) >= config.deals
    problems, continued, broke_ends = replay(config, batch, reported)
    assert not problems, "the batch engine differs from the scalar engine:\n" + "\n".join(problems)
    if config.session_length > 1:
        assert continued > len(reported) // 4, "too few deals continue a session to test the chaining"
    if not config.rules.allow_credit:
        assert broke_ends > 0, "no session ended early for a broke dealer"


@pytest.mark.parametrize("config", FAST, ids=[c.name for c in FAST])
def test_batch_plays_every_deal_as_the_scalar_engine(config: Config) -> None:
    check_against_scalar(config)


@pytest.mark.slow
@pytest.mark.parametrize("config", BIG, ids=[c.name for c in BIG])
def test_batch_plays_100k_deals_as_the_scalar_engine(config: Config) -> None:
    check_against_scalar(config)


def _bool_planes(masks: Sequence[int]) -> np.ndarray:
    """[k, 52] bool of card bitmasks."""
    return (np.array(masks, dtype=np.uint64)[:, None] >> np.arange(NUM_CARD_IDS, dtype=np.uint64)) & np.uint64(1) == 1


LOCKSTEP = [
    (MODERN, 4, True), (VICTORIAN, 3, False), (MODERN.replace(ace_high=True, deal="all_round"), 7, True),
    (VICTORIAN.replace(pair_split="halves", pope_turnup="pays_pope"), 5, False), (MODERN.replace(lead="any"), 8, True),
    (MODERN.replace(pope_turnup="ends_deal", ace_high=True), 6, False),
]


@pytest.mark.parametrize(("rules", "players", "lone_leads"), LOCKSTEP,
                         ids=[f"{r.name}-{p}p-lone_leads_{lone}" for r, p, lone in LOCKSTEP])
def test_every_position_matches_the_scalar_engine(rules: Rules, players: int, lone_leads: bool) -> None:
    """400 deals played side by side (one scalar deal per slot, each dealer in turn): after every step the owner
    table, hands, legal leads, revealed dead cards, seat to act, leader, hand sizes, board and balances agree."""
    n = 400
    dealers = np.arange(n) % players
    batch = BatchDeals(rules, players, n, deal_seed=SEED, first_dealer=dealers, lone_leads=lone_leads,
                       auto_reset=False)
    deals = [Deal.new(rules, players, int(dealers[i]), np.random.default_rng(SEED + i),
                      balances=[rules.start_counters] * players) for i in range(n)]
    for deal in deals:
        deal.advance(lone_leads)
    ended = 0
    while True:
        live = [d for d in deals if not d.done]
        assert batch.owner.tolist() == [d.owner for d in deals]
        assert batch.to_act.tolist() == [d.to_act for d in deals]
        assert batch.hand_sizes.tolist() == [d.hand_sizes for d in deals]
        assert batch.board.tolist() == [d.board for d in deals]
        assert batch.balances.tolist() == [d.balances for d in deals]
        assert batch.done.tolist() == [d.done for d in deals]
        assert batch.num_plays.tolist() == [len(d.plays) for d in deals]
        assert np.array_equal(batch.revealed_dead, _bool_planes([d.revealed_dead for d in deals]))
        assert np.array_equal(batch.hands_of(), _bool_planes([0 if d.done else d.hands[d.to_act] for d in deals]))
        assert np.array_equal(batch.legal_mask(), _bool_planes([d.legal_mask() for d in deals]))
        assert [int(batch.leader[i]) for i, d in enumerate(deals) if not d.done] == [d.leader for d in live]
        assert all(d.forced < 0 for d in live)
        if not live:
            break
        actions = batch_choices(batch)
        ended += len(batch.step(actions, which=~batch.done))
        for i, deal in enumerate(deals):
            if not deal.done:
                deal.play(int(actions[i]))
                deal.advance(lone_leads)
    assert ended == n  # each deal reported once (those ended at the turn-up by the first step)
    for i, deal in enumerate(deals):
        assert plays_of(batch, i) == [(s, CARD_NAMES[c]) for s, c in deal.plays]
        assert int(batch.winner[i]) == (-1 if deal.winner is None else deal.winner)


# ============================================================================ 2. rule edge cases on explicit deals
def full_deal(
    hands: Sequence[str], turnup: str, *, dead: str = "", rules: Rules = MODERN, dealer: int = 0,
    board: Sequence[int] | Mapping[str, int] | None = None, balances: Sequence[int] | None = None,
) -> Deal:
    """A scalar deal of the rules' hand sizes (balances ``start_counters`` unless given): the named cards of each
    seat (seat 0 first) and of the dead hand, every other card filling the hands in card-id order (seat 0
    first), then the dead hand, the ``turnup`` last."""
    players = len(hands)
    sizes, dead_size = rules.hand_sizes(players)
    size_of = {(dealer + 1 + k) % players: sizes[k] for k in range(players)}
    seats = [[parse_card(c) for c in h.split()] for h in hands]
    dead_cards = [parse_card(c) for c in dead.split()]
    named = {c for h in seats for c in h} | set(dead_cards) | {parse_card(turnup)}
    rest = [c for c in PACK if c not in named]
    for s, hand in enumerate(seats):
        take = size_of[s] - len(hand)
        assert take >= 0, f"seat {s} is named {len(hand)} cards; it holds {size_of[s]}"
        hand += rest[:take]
        del rest[:take]
    dead_cards += rest + [parse_card(turnup)]
    assert len(dead_cards) == dead_size
    return Deal.from_cards(seats, dead_cards, dealer, rules, board=board,
                           balances=balances or [rules.start_counters] * players)


def batch_of(deals: Sequence[Deal], **options: Any) -> BatchDeals:
    """One slot dealt the explicit deals in turn (``orders=``), no lone leads, records on; no new deal at the end
    unless ``auto_reset=True`` is passed."""
    first = deals[0]
    options = {"lone_leads": False, "auto_reset": False, "record": True, **options}
    return BatchDeals(first.rules, first.players, 1, orders=np.stack([order_of_deal(d) for d in deals]),
                      first_dealer=first.dealer, board=first.board_before, **options)


def plays_of(batch: BatchDeals, slot: int = 0) -> list[tuple[int, str]]:
    """The slot's plays so far as (seat, card name)."""
    n = int(batch.num_plays[slot])
    seats, cards = batch.play_seats[slot, :n].tolist(), batch.play_cards[slot, :n].tolist()
    return [(s, CARD_NAMES[c]) for s, c in zip(seats, cards)]


def bits_of(row: np.ndarray) -> int:
    """A [52] bool row as a card bitmask."""
    return sum(1 << c for c in np.nonzero(row)[0].tolist())


def assert_same_position(batch: BatchDeals, deal: Deal, slot: int = 0) -> None:
    """The slot of the batch and the scalar deal stand in the same position (every state array)."""
    p = deal.players
    assert plays_of(batch, slot) == [(s, CARD_NAMES[c]) for s, c in deal.plays]
    assert batch.owner[slot].tolist() == deal.owner
    assert batch.hand_sizes[slot].tolist() == deal.hand_sizes
    assert [bits_of(batch.hands_of(np.full(batch.num_deals, s))[slot]) for s in range(p)] == deal.hands
    assert batch.board[slot].tolist() == deal.board and batch.balances[slot].tolist() == deal.balances
    assert batch.board_before[slot].tolist() == list(deal.board_before)
    assert batch.balances_before[slot].tolist() == list(deal.balances_before)
    assert batch.dead_cards[slot].tolist() == list(deal.dead)
    assert (int(batch.turnup[slot]), int(batch.trumps[slot]), int(batch.dealer[slot])) == \
        (deal.turnup, deal.trumps, deal.dealer)
    assert bool(batch.done[slot]) == deal.done and int(batch.to_act[slot]) == deal.to_act
    assert int(batch.winner[slot]) == (-1 if deal.winner is None else deal.winner)
    assert bits_of(batch.revealed_dead[slot]) == deal.revealed_dead
    if not deal.done:
        assert deal.forced < 0 and int(batch.leader[slot]) == deal.leader
        assert np.nonzero(batch.legal_mask()[slot])[0].tolist() == deal.legal_actions()


def lead(batch: BatchDeals, deal: Deal, card: str) -> Finished:
    """Lead ``card`` in the batch's only slot and in the scalar deal (its forced cards after); same position."""
    assert batch.num_deals == 1
    finished = batch.step(np.array([parse_card(card)]))
    deal.play(card)
    deal.advance(lone_leads=False)
    assert_same_position(batch, deal)
    return finished


def finish(batch: BatchDeals, deal: Deal) -> dict[str, Any]:
    """Play both to the end with the same choices; the (equal) game records."""
    while not batch.done[0]:
        batch.step(batch_choices(batch, keys=np.zeros(1, dtype=np.int64)))
    deal.play_out(scalar_choice(0), lone_leads=False)
    assert_same_position(batch, deal)
    record = batch.deal_record(0)
    assert record == deal_record(deal)
    return record


def test_e02_seven_of_diamonds_stops_and_the_same_player_leads() -> None:
    for rules in (MODERN, VICTORIAN.replace(pope_turnup="pays_pope")):
        deal = full_deal(["", "6D 7D", "9D", "AD 2D 3D 4D 5D"], "2H", rules=rules)
        batch = batch_of([deal])
        lead(batch, deal, "6D")
        assert plays_of(batch) == [(1, "6D"), (1, "7D")]
        assert batch.play_leads[0, :2].tolist() == [True, False]
        assert batch.to_act[0] == batch.leader[0] == 1
        assert batch.owner[0, parse_card("9D")] == 2 and batch.owner[0, EIGHT_DIAMONDS] == NOT_IN_PACK
        finish(batch, deal)


def test_e03_king_stops_ace_low() -> None:
    deal = full_deal(["", "QS KS 3C", "AS", "2S 3S 4S 5S 6S 7S 8S 9S TS JS"], "2H")
    batch = batch_of([deal])
    assert {"3C", "QS"} <= {CARD_NAMES[c] for c in np.nonzero(batch.legal_mask()[0])[0]}
    lead(batch, deal, "QS")
    assert plays_of(batch) == [(1, "QS"), (1, "KS")]
    assert batch.to_act[0] == 1 and batch.owner[0, parse_card("AS")] == 2
    finish(batch, deal)


@pytest.mark.parametrize(("turnup", "dead"), [("2H", "4C"), ("4C", "")], ids=["dead_hand", "turnup"])
def test_e04_successor_in_the_dead_hand_or_the_turnup_stops(turnup: str, dead: str) -> None:
    deal = full_deal(["", "3C 5C 2S", "", ""], turnup, dead=dead)
    batch = batch_of([deal])
    lead(batch, deal, "3C")
    assert plays_of(batch) == [(1, "3C")] and batch.to_act[0] == 1
    revealed = {CARD_NAMES[c] for c in np.nonzero(batch.revealed_dead[0])[0]}
    assert revealed == {"4C", turnup}
    finish(batch, deal)


@pytest.mark.parametrize(
    ("turnup", "pair", "paid", "blocked"),
    [("QH", "JH KH", None, (MATRIMONY_C, INTRIGUE_C)), ("KH", "JH QH", "intrigue", (MATRIMONY_C,)),
     ("JH", "QH KH", "matrimony", (INTRIGUE_C,))],
)
def test_e07_turnup_honour_blocks_its_pairs(turnup: str, pair: str, paid: str | None, blocked: tuple[int, ...]) -> None:
    deal = full_deal(["", pair, "", "AH 2H 3H 4H 5H 6H 7H 8H 9H TH"], turnup)
    batch = batch_of([deal])
    comp = {"Q": "queen", "K": "king", "J": "jack"}[turnup[0]]
    assert batch.board[0, COMPARTMENTS.index(comp)] == 0 and batch.balances[0, 0] == 48 - 15 + 1
    first, second = pair.split()
    lead(batch, deal, first)
    if batch.to_act[0] == 1 and batch.owner[0, parse_card(second)] == 1:
        lead(batch, deal, second)  # the first card stopped at the dead honour
    record = finish(batch, deal)
    awards = [(cause, seat, where) for cause, seat, where, _ in record["awards"]]
    assert awards[0] == ("turnup", 0, comp)
    assert (paid is not None) == (("play", 1, paid) in awards)
    for c in blocked:
        assert all(where != COMPARTMENTS[c] for _, _, where in awards)
        assert record["board_after"][COMPARTMENTS[c]] == MODERN.dressing[c]  # carried over


@pytest.mark.parametrize("rules", [MODERN, VICTORIAN.replace(pope_turnup="pays_pope")], ids=["modern", "victorian"])
def test_e08_turnup_pope_pays_pope_and_play_goes_on(rules: Rules) -> None:
    deal = full_deal(["", "", "", ""], "9D", rules=rules, dealer=2)
    batch = batch_of([deal])
    assert_same_position(batch, deal)
    assert batch.board[0, 0] == 0 and batch.balances[0, 2] == 48 - 15 + 6
    assert not batch.done[0] and batch.to_act[0] == 3
    assert finish(batch, deal)["awards"][0] == ["turnup", 2, "pope", 6]


@pytest.mark.parametrize("rules", [VICTORIAN, MODERN.replace(pope_turnup="ends_deal")], ids=["victorian", "modern"])
def test_e08_turnup_pope_ends_the_first_deal(rules: Rules) -> None:
    """A deal that ends at its turn-up is reported (0 plays, no winner) and the slot dealt again, passing left."""
    pope = full_deal(["", "", "", ""], "9D", rules=rules, board={"pope": 4, "game": 3})
    assert pope.done and pope.plays == []
    # The session goes on: the next deal starts from the board and balances the pope left.
    nxt = full_deal(["", "", "", ""], "2H", rules=rules, dealer=1, board=pope.board, balances=pope.balances)
    spare = full_deal(["", "", "", ""], "3S", rules=rules, dealer=2)  # dealt when nxt ends
    batch = batch_of([pope, nxt, spare], auto_reset=True, session_length=2)
    finished = batch.advance()
    assert finished.slots.tolist() == [0] and finished.deal_ids.tolist() == [0]
    assert finished.plays.tolist() == [0] and finished.winner.tolist() == [-1]
    assert finished.delta.tolist() == [pope.delta] and finished.board.tolist() == [pope.board]
    assert finished.balances.tolist() == [pope.balances]
    assert finished.records == [deal_record(pope)]
    assert finished.records[0]["awards"][:2] == [["turnup", 0, "pope", 10], ["turnup", 0, "game", 4]]
    assert finished.records[0]["payments"] == [[s, 0, pope.hand_sizes[s]] for s in (1, 2, 3)]
    assert batch.deal_ids[0] == 1 and batch.deal_in_session[0] == 2
    assert_same_position(batch, nxt)
    while batch.deal_ids[0] == 1:
        finished = batch.step(batch_choices(batch, keys=np.zeros(1, dtype=np.int64)))
    nxt.play_out(scalar_choice(0), lone_leads=False)
    assert finished.records == [deal_record(nxt)]


@pytest.mark.parametrize("rules", [VICTORIAN, MODERN.replace(pope_turnup="ends_deal")], ids=["victorian", "modern"])
def test_e08_turnup_pope_ends_a_deal_dealt_inside_a_step(rules: Rules) -> None:
    """The step that ends a deal deals the next; a pope turned then ends that one too: both are reported by the
    same step (the slot twice), and the deal after them starts from the board and balances the pope left."""
    first = full_deal(["", "", "", ""], "2H", rules=rules)
    batch_first = first.copy()
    first.play_out(scalar_choice(0), lone_leads=False)
    pope = full_deal(["", "", "", ""], "9D", rules=rules, dealer=1, board=first.board, balances=first.balances)
    third = full_deal(["", "", "", ""], "3S", rules=rules, dealer=2, board=pope.board, balances=pope.balances)
    batch = batch_of([batch_first, pope, third], auto_reset=True, session_length=3)
    reports = [batch.advance()]
    while batch.deal_ids[0] == 0:
        reports.append(batch.step(batch_choices(batch, keys=np.zeros(1, dtype=np.int64))))
    last = reports[-1]
    assert all(len(f) == 0 for f in reports[:-1])
    assert last.slots.tolist() == [0, 0] and last.deal_ids.tolist() == [0, 1]
    assert last.plays.tolist() == [len(first.plays), 0] and last.winner.tolist() == [first.winner, -1]
    assert last.records == [deal_record(first), deal_record(pope)]
    assert batch.deal_ids[0] == 2 and batch.dealer[0] == 2
    assert_same_position(batch, third)


LEAD_ANY = MODERN.replace(lead="any")


@pytest.mark.parametrize(
    ("rules", "hands", "dead", "leads", "awards"),
    [
        pytest.param(MODERN, ["", "JH QH", "", "AH 3H 4H 5H 6H 7H 8H 9H TH"], "KH", ["JH"],
                     [("play", 1, "jack"), ("play", 1, "queen"), ("play", 1, "intrigue")], id="jack_then_queen"),
        pytest.param(LEAD_ANY, ["", "QH JH 3S", "TH 4S", ""], "KH 5S", ["QH", "3S", "TH"],
                     [("play", 1, "queen"), ("play", 1, "jack"), ("play", 1, "intrigue")],
                     id="queen_then_jack_in_a_later_sequence"),
        pytest.param(LEAD_ANY, ["", "KH QH 3S", "JH 4S", ""], "5S", ["KH", "3S", "JH"],
                     [("play", 1, "king"), ("play", 2, "jack"), ("play", 1, "queen"), ("play", 1, "matrimony")],
                     id="king_then_queen_in_a_later_sequence"),
        pytest.param(LEAD_ANY, ["", "KH JH QH", "", ""], "", ["KH", "JH"],
                     [("play", 1, "king"), ("play", 1, "jack"), ("play", 1, "queen"), ("play", 1, "matrimony"),
                      ("play", 1, "intrigue")], id="jack_queen_king_by_one_player_pays_both"),
    ],
)
def test_e10_pairs_in_either_order(rules: Rules, hands: list[str], dead: str, leads: list[str],
                                   awards: list[tuple[str, int, str]]) -> None:
    deal = full_deal(hands, "2H", dead=dead, rules=rules)
    batch = batch_of([deal])
    for card in leads:
        lead(batch, deal, card)
    assert batch.to_act[0] == 1  # each sequence stopped on seat 1's card
    record = finish(batch, deal)
    assert [tuple(a[:3]) for a in record["awards"][:len(awards)]] == awards


@pytest.mark.parametrize(
    ("split", "awards", "left"),
    [("none", [(2, "jack", 1), (1, "queen", 1), (2, "king", 1)], (5, 4)),
     ("halves", [(2, "jack", 1), (1, "queen", 1), (2, "intrigue", 2), (1, "intrigue", 2), (2, "king", 1),
                 (1, "matrimony", 2), (2, "matrimony", 2)], (1, 0))],
)
def test_e11_king_and_queen_by_two_players(split: str, awards: list[tuple[int, str, int]], left: tuple[int, int]) -> None:
    """``none``: nothing paid, the pairs carry over; ``halves``: half each, the player of the earlier card first,
    the odd counter stays (5 on matrimony gives 2 and 2)."""
    rules = MODERN.replace(pair_split=split)
    deal = full_deal(["", "QH", "JH KH", "AH 3H 4H 5H 6H 7H 8H 9H TH"], "2H", rules=rules, dealer=1,
                     board={"matrimony": 3, "intrigue": 2})
    batch = batch_of([deal])
    lead(batch, deal, "JH")
    assert plays_of(batch) == [(2, "JH"), (1, "QH"), (2, "KH")]
    assert (batch.board[0, MATRIMONY_C], batch.board[0, INTRIGUE_C]) == left
    record = finish(batch, deal)
    assert [(s, c, n) for _, s, c, n in record["awards"][:len(awards)]] == awards


@pytest.mark.parametrize(
    ("hands", "dead", "leads", "rules", "payments"),
    [
        pytest.param(["", "2C 3C 4C 5C 6C 7C 8C 9C TC JC", "9D", ""], "", ["2C"], MODERN,
                     [[2, 1, 0], [3, 1, 10], [0, 1, 10]], id="the_pope_holder_pays_nothing"),
        pytest.param(["", "2C 3C 4C 5C 6C 7C 8C 9C TC JC", "9D", ""], "", ["2C"],
                     MODERN.replace(pope_excused=False), [[2, 1, 10], [3, 1, 10], [0, 1, 10]],
                     id="pope_excused_false_the_holder_pays"),
        pytest.param(["", "2C 3C 4C 5C 6C 7C 8C 9C TC 3H", "4H 9D AC", ""], "5H TD", ["3H", "9D", "AC"], MODERN,
                     [[2, 1, 7], [3, 1, 10], [0, 1, 10]], id="a_player_who_played_the_pope_pays_normally"),
        pytest.param(["", "2C 3C 4C 5C 6C 7C 8C 9C TC JC", "", ""], "9D", ["2C"], MODERN,
                     [[2, 1, 10], [3, 1, 10], [0, 1, 10]], id="the_pope_in_the_dead_hand_excuses_nobody"),
    ],
)
def test_e12_going_out(hands: list[str], dead: str, leads: list[str], rules: Rules, payments: list[list[int]]) -> None:
    """The winner takes the game and a counter per card left from every other seat, the 9D's holder excused."""
    deal = full_deal(hands, "2S", dead=dead, rules=rules)
    batch = batch_of([deal])
    for card in leads:
        finished = lead(batch, deal, card)
    assert batch.done[0] and batch.winner[0] == 1 and finished.winner.tolist() == [1]
    record = batch.deal_record(0)
    assert record == deal_record(deal)
    assert record["awards"][-1] == ["game", 1, "game", 1] and record["payments"] == payments
    assert record["delta"][1] == 1 + sum(n for _, _, n in payments) + (6 if "9D" in hands[1] else 0)
    assert finished.delta.tolist() == [record["delta"]]
    with pytest.raises(GameOverError):
        batch.step(np.array([0]))


def test_e13_the_deal_ends_mid_sequence() -> None:
    """Seat 0 plays his last card (TH) inside seat 3's sequence: the JH that follows is not played, and seat 1's
    queen of trumps never meets his jack (no intrigue)."""
    deal = full_deal(["3C 4C 5C 6C 7C 8C 9C TC JC TH", "QH JH 2C", "", "QC KC 9H"], "2H", dead="KH", rules=LEAD_ANY)
    batch = batch_of([deal])
    lead(batch, deal, "QH")
    lead(batch, deal, "2C")
    assert batch.to_act[0] == 3 and batch.hand_sizes[0, 0] == 1
    finished = lead(batch, deal, "9H")
    assert plays_of(batch)[-2:] == [(3, "9H"), (0, "TH")]
    assert batch.done[0] and batch.winner[0] == 0 and finished.plays.tolist() == [15]
    assert batch.owner[0, parse_card("JH")] == 1 and batch.board[0, INTRIGUE_C] == 2
    record = batch.deal_record(0)
    assert record == deal_record(deal)
    assert [a[2] for a in record["awards"]] == ["queen", "game"]


@pytest.mark.parametrize(
    ("hands", "dead", "leads", "last_awards"),
    [
        pytest.param("2C 3C 4C 5C 6C 7C 8C 9C TC KH", "JC 9D", ["2C", "KH"], [["play", 1, "king", 1]], id="honour"),
        pytest.param("2C 3C 4C 5C 6C 7C 8C 9C QH KH", "TC 9D", ["2C", "QH"],
                     [["play", 1, "queen", 1], ["play", 1, "king", 1], ["play", 1, "matrimony", 2]], id="matrimony"),
        pytest.param("2C 3C 4C 5C 6C 7C 8C 9C TC 9D", "JC", ["2C", "9D"], [["play", 1, "pope", 6]], id="pope"),
    ],
)
def test_e14_the_last_card_pays_then_the_game_is_settled(hands: str, dead: str, leads: list[str],
                                                         last_awards: list[list[Any]]) -> None:
    deal = full_deal(["", hands, "", ""], "2H", dead=dead)
    batch = batch_of([deal])
    for card in leads:
        lead(batch, deal, card)
    assert batch.done[0] and batch.winner[0] == 1
    record = batch.deal_record(0)
    assert record == deal_record(deal)
    assert record["awards"] == last_awards + [["game", 1, "game", 1]]
    assert record["payments"] == [[2, 1, 10], [3, 1, 10], [0, 1, 10]]


ACE_HIGH = MODERN.replace(ace_high=True)


def test_e18_ace_high_king_continues_to_the_ace_and_the_ace_stops() -> None:
    deal = full_deal(["", "QS KS 3C", "AS 2S", "3S 4S 5S 6S 7S 8S 9S JS"], "TS", rules=ACE_HIGH)
    batch = batch_of([deal])
    lead(batch, deal, "QS")
    assert plays_of(batch) == [(1, "QS"), (1, "KS"), (2, "AS")]
    assert batch.to_act[0] == 2 and batch.owner[0, parse_card("2S")] == 2  # the 2S follows nothing
    assert batch.legal_mask()[0, parse_card("2S")]
    record = finish(batch, deal)
    assert [a[:3] for a in record["awards"][:4]] == [
        ["play", 1, "queen"], ["play", 1, "king"], ["play", 1, "matrimony"], ["play", 2, "ace"]]


def test_e18_ace_high_a_two_can_only_be_led_and_the_ace_is_not_lowest() -> None:
    deal = full_deal(["", "AS 2S 3S 9C", "", ""], "2H", dead="4S", rules=ACE_HIGH)
    batch = batch_of([deal])
    legal = batch.legal_mask()[0]
    assert legal[parse_card("2S")] and not legal[parse_card("AS")]
    with pytest.raises(IllegalActionError):
        batch.step(np.array([parse_card("AS")]))
    lead(batch, deal, "2S")
    assert plays_of(batch) == [(1, "2S"), (1, "3S")] and batch.to_act[0] == 1
    assert batch.legal_mask()[0, parse_card("AS")]  # the Ace alone may now be led
    finish(batch, deal)


# ============================================================================ 3. refusals, determinism, from_deals
def state_of(batch: BatchDeals) -> dict[str, np.ndarray]:
    """A copy of every array the batch holds (public and private) and of its derived views."""
    out = {k: v.copy() for k, v in vars(batch).items() if isinstance(v, np.ndarray)}
    out.update(legal_mask=batch.legal_mask(), revealed_dead=batch.revealed_dead, hands_of=batch.hands_of(),
               deals_dealt=np.array(batch.deals_dealt))
    return out


def assert_same_state(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    changed = [k for k in a if a[k].shape != b[k].shape or not np.array_equal(a[k], b[k])]
    assert not changed, f"arrays changed: {changed}"


def assert_same_report(a: Finished, b: Finished) -> None:
    for field in ("slots", "deal_ids", "delta", "winner", "plays", "balances", "board"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.records == b.records


def _bad_steps(batch: BatchDeals) -> list[tuple[str, Any, Any, type[PopeJoanError]]]:
    """(what, actions, which, error) for refused calls on a fresh 3-deal batch."""
    legal = batch.legal_mask()
    good = batch_choices(batch)
    held = batch.hands_of()
    not_lowest = [int(np.nonzero(held[i] & ~legal[i])[0][0]) for i in range(3)]
    not_held = [int(np.nonzero(~held[i] & (np.arange(NUM_CARD_IDS) != EIGHT_DIAMONDS))[0][0]) for i in range(3)]
    with_bad = lambda i, card: np.array([card if j == i else good[j] for j in range(3)])  # noqa: E731
    return [
        ("a held card that is not the lowest of its suit", with_bad(1, not_lowest[1]), None, IllegalActionError),
        ("a card the seat does not hold", with_bad(2, not_held[2]), None, IllegalActionError),
        ("the 8D", with_bad(0, EIGHT_DIAMONDS), None, IllegalActionError),
        ("card id 52", with_bad(1, 52), None, IllegalActionError),
        ("card id -1", with_bad(1, -1), None, IllegalActionError),
        ("card id 10**12", with_bad(2, 10**12), None, IllegalActionError),
        ("two cards for three deals", good[:2], None, IllegalActionError),
        ("four cards for three deals", np.append(good, good[0]), None, IllegalActionError),
        ("a 2-d array", good[None, :], None, IllegalActionError),
        ("floats", good.astype(float), None, IllegalActionError),
        ("card names", np.array([CARD_NAMES[c] for c in good]), None, IllegalActionError),
        ("which of the wrong length", good, np.array([True, False]), IllegalActionError),
        ("which out of range", good[:1], np.array([3]), IllegalActionError),
        ("which negative", good[:1], np.array([-1]), IllegalActionError),
        ("which twice the same deal", good[:2], np.array([1, 1]), IllegalActionError),
        ("which as floats", good[:1], np.array([0.0]), IllegalActionError),
        ("which 2-d", good[:1], np.array([[0]]), IllegalActionError),
        ("a selected illegal card", np.array([not_lowest[2]]), np.array([2]), IllegalActionError),
    ]


@pytest.mark.parametrize("case", range(18))
def test_a_refused_step_raises_and_changes_nothing(case: int) -> None:
    def fresh() -> BatchDeals:
        return BatchDeals(MODERN, 4, 3, rng=np.random.default_rng(21), record=True)

    batch, twin = fresh(), fresh()
    what, actions, which, error = _bad_steps(batch)[case]
    before = state_of(batch)
    with pytest.raises(error):
        batch.step(actions, which)
    assert isinstance(error(), PopeJoanError)
    assert_same_state(before, state_of(batch))
    # Nothing outside the arrays moved either: the batch plays on exactly as its twin.
    assert_same_report(batch.step(batch_choices(batch)), twin.step(batch_choices(twin)))
    assert_same_state(state_of(batch), state_of(twin))


def test_the_refusals_cover_every_kind() -> None:
    assert len(_bad_steps(BatchDeals(MODERN, 4, 3, rng=np.random.default_rng(21)))) == 18


def test_a_finished_deal_without_auto_reset_refuses_a_card() -> None:
    batch = BatchDeals(MODERN, 4, 5, rng=np.random.default_rng(3), auto_reset=False, record=True)
    rng = np.random.default_rng(4)
    while not batch.done.any():
        batch.step(batch.random_actions(rng), which=~batch.done)
    over = int(np.argmax(batch.done))
    assert batch.to_act[over] == -1 and not batch.legal_mask()[over].any()
    assert batch.random_actions(rng)[over] == -1
    before = state_of(batch)
    for actions, which in [(batch_choices(batch), None), (np.array([0]), np.array([over])),
                           (np.array([parse_card("2C")]), np.arange(5) == over)]:
        with pytest.raises(GameOverError, match=f"deal {over} of the batch is over"):
            batch.step(actions, which)
        assert_same_state(before, state_of(batch))
    assert len(batch.advance()) == 0  # reported once, when it ended


def test_the_same_seed_gives_the_same_batch() -> None:
    def run(seed: int, **dealing: Any) -> tuple[list[Finished], dict[str, np.ndarray]]:
        batch = BatchDeals(VICTORIAN.replace(ace_high=True), 5, 40, session_length=3, record=True,
                           **dealing)
        rng = np.random.default_rng(seed + 1)
        reports = [batch.step(batch.random_actions(rng)) for _ in range(60)]
        return reports, state_of(batch)

    for dealing in ({"rng": np.random.default_rng(9)}, {"deal_seed": 9}):
        (a, state_a), (b, state_b) = run(9, **dealing), run(9, **{k: (np.random.default_rng(9) if k == "rng" else v)
                                                                   for k, v in dealing.items()})
        assert sum(map(len, a)) > 40
        for x, y in zip(a, b):
            assert_same_report(x, y)
        assert_same_state(state_a, state_b)
    first = BatchDeals(MODERN, 4, 8, deal_seed=9).initial_owner
    assert not np.array_equal(first, BatchDeals(MODERN, 4, 8, deal_seed=10).initial_owner)
    assert not np.array_equal(BatchDeals(MODERN, 4, 8, rng=np.random.default_rng(9)).initial_owner,
                              BatchDeals(MODERN, 4, 8, rng=np.random.default_rng(10)).initial_owner)


def _positions(rules: Rules, players: int) -> list[Deal]:
    """Scalar deals stopped at every kind of point: before the first lead, with a lead due, with a card due
    (a sequence in progress), over."""
    deals = []
    for i in range(24):
        deal = Deal.new(rules, players, i % players, np.random.default_rng(500 + i))
        rng = np.random.default_rng(i)
        for _ in range(i % 12):  # one card at a time: a forced card may be left due
            if deal.done:
                break
            legal = deal.legal_actions()
            deal.play(legal[int(rng.integers(len(legal)))])
        deals.append(deal)
    kinds = {("over" if d.done else "due" if d.forced >= 0 else "lead") for d in deals}
    assert kinds == {"over", "due", "lead"} or kinds == {"due", "lead"}
    return deals


@pytest.mark.parametrize(("rules", "players", "lone_leads"),
                         [(MODERN, 4, True), (VICTORIAN, 5, False),
                          (MODERN.replace(ace_high=True, deal="all_round"), 3, True),
                          (VICTORIAN.replace(pair_split="halves"), 8, True)],
                         ids=["modern-4p", "victorian-5p-no-lone-leads", "ace_high-all_round-3p", "halves-8p"])
def test_from_deals_continues_scalar_positions_to_the_same_outcome(rules: Rules, players: int, lone_leads: bool) -> None:
    deals = _positions(rules, players)
    assert any(d.forced >= 0 for d in deals)
    batch = BatchDeals.from_deals([d.copy() for d in deals], lone_leads=lone_leads)
    keys = np.arange(len(deals))
    while not batch.done.all():
        batch.step(batch_choices(batch, keys=keys), which=~batch.done)
    for i, deal in enumerate(deals):
        deal.play_out(scalar_choice(i), lone_leads=lone_leads)
        assert_same_position(batch, deal, slot=i)
        assert deal_record(batch.to_deal(i)) == deal_record(deal)


def test_from_deals_of_a_mid_deal_position_with_a_card_due() -> None:
    """A ``Deal.from_position`` with the 6C due after seat 0's 5C (its own board, balances and dead-hand size)."""
    deal = _mid_deal_position()
    batch = BatchDeals.from_deals([deal.copy()], lone_leads=False)
    assert plays_of(batch) == [(1, "6C"), (1, "7C"), (2, "8C")]  # the card due and its sequence, at once
    assert batch.play_leads[0, :3].tolist() == [False, False, False]
    while not batch.done[0]:
        batch.step(batch_choices(batch, keys=np.zeros(1, dtype=np.int64)))
    deal.play_out(scalar_choice(0), lone_leads=False)
    assert_same_position(batch, deal)


def test_from_deals_of_deals_with_dead_hands_of_different_sizes() -> None:
    """``to_deal`` gives each deal back, whatever the size of its dead hand."""
    small = Deal.from_cards([["2C", "3C"], ["4C", "5C"], ["6C", "7C"]],
                            [CARD_NAMES[c] for c in PACK if c not in {1, 2, 3, 4, 5, 6, 27}] + ["2H"], 0, MODERN)
    full = Deal.new(MODERN, 3, 0, np.random.default_rng(1))
    batch = BatchDeals.from_deals([small.copy(), full.copy()])
    for slot, deal in enumerate((small, full)):
        assert batch.turnup[slot] == deal.turnup
        assert batch.dead_cards[slot, :len(deal.dead)].tolist() == list(deal.dead) == batch.dead_of(slot)
        again = batch.to_deal(slot)
        assert (again.dead, again.initial_hands) == (deal.dead, deal.initial_hands)


def _mid_deal_position() -> Deal:
    """A ``Deal.from_position`` in which seat 0's 5C was played before the position and the 6C is due."""
    hands = [["KH", "2S"], ["6C", "7C", "3S"], ["8C", "4S", "AS"]]
    played = [["5C"], [], []]
    named = {parse_card(c) for h in hands + played for c in h} | {parse_card("2H")}
    dead = [c for c in PACK if c not in named] + [parse_card("2H")]
    return Deal.from_position(hands, dead, played, to_act=1, forced="6C", leader=0, rules=MODERN,
                              board=[1, 2, 3, 4, 5, 6, 7, 8], balances=[1, 2, 3])


def test_to_deal_of_a_from_position_slot_is_refused_clearly() -> None:
    """A position from ``Deal.from_position`` has no history (who played which card), so it cannot be rebuilt."""
    batch = BatchDeals.from_deals([_mid_deal_position()], lone_leads=False)
    before = {k: v.copy() for k, v in vars(batch).items() if isinstance(v, np.ndarray)}
    with pytest.raises(InvalidDealError, match="without its history"):
        batch.to_deal(0)
    assert all(np.array_equal(v, getattr(batch, k)) for k, v in before.items())


def test_the_last_explicit_deal_is_reported_when_it_ends() -> None:
    deal = full_deal(["", "", "", ""], "2H")
    batch = batch_of([deal.copy()], auto_reset=True)
    reports = []
    while not batch.done[0]:
        reports.append(batch.step(batch_choices(batch, keys=np.zeros(1, dtype=np.int64))))
    deal.play_out(scalar_choice(0), lone_leads=False)
    assert reports[-1].records == [deal_record(deal)]
    with pytest.raises(GameOverError):
        batch.step(np.array([0]))


@pytest.mark.parametrize(("rules", "players"), [(MODERN.replace(ace_high=True, deal="all_round"), 4), (VICTORIAN, 8),
                                               (MODERN.replace(pope_turnup="ends_deal", lead="any"), 3)])
def test_rng_dealt_batches_write_records_that_verify(rules: Rules, players: int) -> None:
    """The fast dealing path (``rng=``): every record replays on the scalar engine (``verify_record``)."""
    batch = BatchDeals(rules, players, 256, rng=np.random.default_rng(2), session_length=5, record=True)
    rng = np.random.default_rng(3)
    records = list(batch.advance().records or [])
    while len(records) < 1500:
        records += batch.step(batch.random_actions(rng)).records or []
    for record in records:
        verify_record(record)
        assert sorted(len(h) for h in record["hands"]) == sorted(rules.hand_sizes(players)[0])


def test_memory_bytes_is_positive_and_per_deal() -> None:
    small, large = (BatchDeals(MODERN, 6, n, rng=np.random.default_rng(0)) for n in (10, 1000))
    assert 0 < small.memory_bytes == large.memory_bytes < 10_000


@pytest.mark.parametrize("rules", [MODERN, VICTORIAN, MODERN.replace(dressing=DRESSING, allow_credit=False,
                                                                     start_counters=25, pair_split="halves")],
                         ids=["modern", "victorian", "custom"])
def test_counters_are_conserved(rules: Rules) -> None:
    """E16 in batch: every slot's balances and board add up to the session's counters, after every step."""
    players = 5
    board = (3, 0, 0, 0, 2, 0, 0, 1)
    total = players * rules.start_counters + sum(board)
    batch = BatchDeals(rules, players, 300, rng=np.random.default_rng(5), session_length=2 * players, board=board)
    rng = np.random.default_rng(6)
    finished = 0
    while finished < 3000:
        report = batch.step(batch.random_actions(rng))
        finished += len(report)
        assert (batch.balances.sum(axis=1) + batch.board.sum(axis=1) == total).all()
        moved = (batch.balances - batch.balances_before).sum(axis=1) + (batch.board - batch.board_before).sum(axis=1)
        assert (moved == 0).all()
        assert (report.balances.sum(axis=1) + report.board.sum(axis=1) == total).all()


def test_without_numba_a_batch_refuses_to_start_and_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """numba is a core dependency: the batch engine has no other implementation of the rules, so no slow path."""
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` now raises ImportError
    for make in (lambda: BatchDeals(MODERN, 4, 2, rng=np.random.default_rng(0)),
                 lambda: BatchDeals.from_deals([Deal.new(MODERN, 4, 0, np.random.default_rng(1))])):
        with pytest.raises(MissingDependencyError, match="pip install numba") as refused:
            make()
        assert isinstance(refused.value, PopeJoanError)


def test_the_kernels_numbers_are_those_of_the_rules_cards_and_records() -> None:
    """The compiled kernels name compartments, cards and award causes by number: the same numbers as their owners."""
    from popejoan_env.batch import kernels, records
    from popejoan_env.cards import POPE
    from popejoan_env.engine import PLAYED
    from popejoan_env.rules import GAME_C, JACK_C, KING_C, QUEEN_C

    assert (kernels._MATRIMONY, kernels._INTRIGUE, kernels._KING, kernels._QUEEN, kernels._JACK, kernels._GAME) == \
        (MATRIMONY_C, INTRIGUE_C, KING_C, QUEEN_C, JACK_C, GAME_C)
    assert (kernels._POPE, kernels._PLAYED) == (POPE, PLAYED)
    causes = records._CAUSES
    assert (causes[kernels._TURNUP_CAUSE], causes[kernels._PLAY], causes[kernels._GAME_CAUSE]) == \
        ("turnup", "play", "game")


def test_records_hold_compartments_beyond_32_bits() -> None:
    """A board may hold up to 2**53-1 counters a compartment: the batch's records carry the amounts taken exactly."""
    board = [0, 0, 0, 0, 0, 0, 0, 3_000_000_000]
    batch = BatchDeals(MODERN, 4, 1, deal_seed=1, board=board, record=True, lone_leads=False)
    finished = batch.advance()
    while not len(finished):
        finished = batch.step(batch_choices(batch))
    record = finished.records[0]
    assert record["awards"][-1][2:] == ["game", 3_000_000_001]
    verify_record(record)
