"""Imitation warm start for ``train_ppo.py``: games of a search player, and a policy trained to choose as it does.

``expert_games`` plays deals with the expert (``pimc`` by default) at every seat
— deal ``d`` at the table ``tables[d % len(tables)]`` (rules and table size, so
one set of games can mix sizes and presets) — and keeps, for every real
decision (two or more legal cards), the observation of the seat to act, its
legal cards, the expert's card and what the seat won from there to the end of
the deal (times ``reward_scale``: what the PPO critic predicts).  Deal ``d`` is
dealt from ``default_rng([seed, d])`` and its players seeded from
``[seed, d, 1]``, so the data do not depend on how many worker processes play
them.

``imitate`` trains an SB3 policy on them, with Adam, a twentieth of the
decisions held out to report how often the actor picks the expert's card and
what its card gives up by the expert's values.  The critic learns the value
(squared error); the actor, by ``loss``:

* ``choice``: the cross-entropy of the masked logits against the expert's card;
* ``regret``: the expected regret of the actor's masked softmax under the
  expert's values of the cards (``regrets``), plus ``choice_weight`` × that
  cross-entropy.  The regret is linear in the values, so the noise of a search
  over a few worlds averages out over the positions instead of being copied
  into its choices: the actor learns towards the search's best card by its
  mean values over many worlds, and weighs each mistake by what it costs.

PPO then starts from a policy that already plays like the search, and a critic
that already knows what a position is worth.

(This module was ``training/imitation.py``, the name of a PyPI package that a script beside it would have
shadowed.)
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.engine import Deal
from popejoan_env.observation import OBS_SIZE, Encoder
from popejoan_env.players import make_player
from popejoan_env.players.base import ask
from popejoan_env.rules import Rules
from popejoan_env.seat_view import SeatView
from popejoan_env.table import play_until
from popejoan_env.training.workers import play_tasks


@dataclasses.dataclass
class Games:
    """The expert's decisions: observation, legal cards, the card it chose, the seat's counters to come."""

    obs: np.ndarray
    """float32 [n, OBS_SIZE]"""
    legal: np.ndarray
    """bool [n, 52]"""
    action: np.ndarray
    """int64 [n]"""
    value: np.ndarray
    """float32 [n]: counters the seat won from this decision to the end of the deal, times reward_scale"""
    deal: np.ndarray
    """int64 [n]: the deal of each decision"""
    seat: np.ndarray
    """int64 [n]: the seat that decided"""
    q: np.ndarray
    """float32 [n, 52]: the expert's mean counters of each card it searched (``PimcPlayer.last_values``), NaN
    for the cards it did not (a player without values: NaN everywhere)"""
    seconds: float = 0.0
    """wall time of the games"""


_Part = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""The decisions of some deals, as ``Games``' arrays: the deal of each, then the observations, legal cards,
cards chosen, values, seats and the expert's values of the cards."""


Table = tuple[Rules, int]
"""The rules and the table size of a deal."""


def tables_of(presets: Sequence[Rules], table_sizes: Sequence[int]) -> list[Table]:
    """Every (rules, table size) pair, the sizes cycling fastest: deal ``d`` is played at ``tables[d % len]``."""
    return [(rules, n) for rules in presets for n in table_sizes]


def deal_of(table: Table, balance_range: Sequence[int] | None, seed: int, d: int) -> Deal:
    """Deal ``d`` at ``table`` as the games deal it: from ``default_rng([seed, d])``, which first draws each seat's
    starting balance within ``balance_range`` (if given); the dealer is seat ``d % players``."""
    rules, players = table
    rng = np.random.default_rng([seed, d])
    balances = None
    if balance_range is not None:
        balances = [int(b) for b in rng.integers(balance_range[0], balance_range[1] + 1, size=players)]
    return Deal.new(rules, players, d % players, rng, board=None, balances=balances)


class Decisions:
    """Real decisions (two or more legal cards) as they are made, and each deal's final balances: ``as_part``'s
    arrays once every deal has ended."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.finals: dict[int, list[int]] = {}
        self.encoders: dict[int, Encoder] = {}
        """Each deal's ``Encoder``, brought up to date at each decision (the plays since the last one), not made
        again from the deal's start: the same observations (``observation.encode``) for less work."""

    def note(self, d: int, deal: Deal, legal: Sequence[int], card: int, values: Mapping[int, float]) -> None:
        """The seat to act in deal ``d`` chose ``card`` among ``legal`` (kept if that was a real choice), the
        expert's ``values`` of the cards it searched."""
        if len(legal) < 2:
            return
        seat = deal.to_act
        row = np.zeros(NUM_CARD_IDS, dtype=bool)
        row[list(legal)] = True
        q = np.full(NUM_CARD_IDS, np.nan, dtype=np.float32)
        for c, v in values.items():
            q[c] = v
        self.rows.append((d, self.observe(d, deal, seat), row, card, seat, deal.balances[seat], q))

    def observe(self, d: int, deal: Deal, seat: int) -> np.ndarray:
        """The observation of ``deal`` (deal ``d``) from ``seat`` now, ``observation.encode``'s, from the deal's own
        ``Encoder`` synced to the plays since its last decision."""
        encoder = self.encoders.get(d)
        if encoder is None or encoder.deal is not deal:
            encoder = self.encoders[d] = Encoder(deal)
        else:
            encoder.sync()
        return encoder.observe(seat)

    def end(self, d: int, deal: Deal) -> None:
        """Deal ``d`` is over: its final balances are kept, its ``Encoder`` let go."""
        self.finals[d] = list(deal.balances)
        self.encoders.pop(d, None)

    def part(self, reward_scale: float) -> _Part:
        """The decisions as arrays, each valued at what its seat won from it to the end of its deal."""
        ids, obs, legal, actions, seats, then, qs = (list(c) for c in zip(*self.rows)) if self.rows else [[]] * 7
        values = [(self.finals[d][s] - b) * reward_scale for d, s, b in zip(ids, seats, then)]
        return as_part(ids, obs, legal, actions, values, seats, qs)


def _play(expert: str, tables: Sequence[Table], balance_range: Sequence[int] | None,
          reward_scale: float, seed: int, deals: Sequence[int]) -> _Part:
    """The decisions of the deals ``deals`` (indices), played by the expert at every seat (``table.play_until``)."""
    player = make_player(expert)
    decisions = Decisions()
    deal: Deal
    d = 0

    class Recorder:
        """The expert at a seat of ``deal``, noting each of its decisions as it answers."""

        name = player.name

        def reset(self, seed: int | None = None) -> None:
            player.reset(seed)

        def act(self, view: SeatView) -> int:
            card = ask(player, view)
            decisions.note(d, deal, view.legal, card, getattr(player, "last_values", {}))
            return card

    recorder = Recorder()
    for d in deals:
        table = tables[d % len(tables)]
        deal = deal_of(table, balance_range, seed, d)
        player.reset(int(np.random.default_rng([seed, d, 1]).integers(2**63)))
        play_until(deal, [recorder] * table[1])  # every seat has a player: the deal is played out
        decisions.end(d, deal)
    return decisions.part(reward_scale)


def as_part(ids: list[Any], obs: list[Any], legal: list[Any], actions: list[Any], values: list[Any],
            seats: list[Any], qs: list[Any]) -> _Part:
    """The arrays of ``_Part`` (their dtypes and widths) from lists of decisions."""
    return (np.array(ids, dtype=np.int64), np.array(obs, dtype=np.float32).reshape(-1, OBS_SIZE),
            np.array(legal, dtype=bool).reshape(-1, NUM_CARD_IDS), np.array(actions, dtype=np.int64),
            np.array(values, dtype=np.float32), np.array(seats, dtype=np.int64),
            np.array(qs, dtype=np.float32).reshape(-1, NUM_CARD_IDS))


def _task(common: tuple[Any, ...], deals: Sequence[int]) -> _Part:
    """``_play`` of one job of ``expert_games`` (``workers.play_tasks`` runs it where the games are played)."""
    return _play(*common, deals)


CHUNK = 500
"""Deals in one task; the parent copies the games task by task into one array and lets each go."""


def expert_games(expert: str, tables: Sequence[Table], deals: int, seed: int,
                 *,
                 balance_range: Sequence[int] | None, reward_scale: float, workers: int = 1, backend: str = "local",
                 address: str | None = None, on_done: Callable[[int], None] | None = None) -> Games:
    """Deals ``0 .. deals-1`` played by ``expert`` at every seat, deal ``d`` at ``tables[d % len(tables)]``, in this
    process, ``workers`` forked processes or Ray tasks (``workers.play_tasks``: the same data either way);
    ``on_done(n)`` is told each time ``n`` more deals are played."""
    start = time.perf_counter()
    jobs = [list(range(a, min(a + CHUNK, deals))) for a in range(0, deals, CHUNK)]
    common = (expert, list(tables), balance_range, reward_scale, seed)
    parts = play_tasks(_task, common, jobs, workers=workers, backend=backend, address=address,
                       on_done=None if on_done is None else lambda job: on_done(len(job)))
    return gather(parts, time.perf_counter() - start)


def gather(parts: list[_Part], seconds: float) -> Games:
    """The decisions of the parts as one ``Games``, copied part by part (each let go once copied)."""
    n = sum(len(part[0]) for part in parts)
    fields = [np.empty((n,) + column.shape[1:], column.dtype) for column in as_part(*[[]] * 7)]
    row = 0
    for k, part in enumerate(parts):  # copy part by part and let each go: the observations are held once, not twice
        for field, column in zip(fields, part):
            field[row:row + len(column)] = column
        row += len(part[0])
        parts[k] = None  # type: ignore[call-overload]
        del part
    deal, obs, legal, action, value, seat, q = fields
    return Games(obs, legal, action, value, deal, seat, q, seconds=seconds)


def targets(games: Games) -> np.ndarray:
    """float32 [n, 52]: the expert's card at each decision, one-hot (the cross-entropy's target)."""
    out = np.zeros(games.q.shape, dtype=np.float32)
    out[np.arange(len(games.action)), games.action] = 1.0
    return out


LOSSES = ("choice", "regret")
"""What the actor learns in ``imitate``: the expert's card, or to lose the fewest counters by its values."""


def regrets(games: Games) -> np.ndarray:
    """float32 [n, 52]: at each decision, the counters each legal card falls short of the expert's best card by its
    values (``Games.q``).  A legal card it did not search (the middle of a run in hand: leading the run's bottom
    plays it and more) counts as its worst searched card; illegal cards, and decisions with fewer than two values,
    get 0."""
    searched = ~np.isnan(games.q)
    count = searched.sum(axis=1)
    best = np.where(searched, games.q, -np.inf).max(axis=1, initial=-np.inf)
    worst = np.where(searched, games.q, np.inf).min(axis=1, initial=np.inf)
    q = np.where(searched, games.q, worst[:, None])
    out = np.where(games.legal & (count >= 2)[:, None], best[:, None] - q, 0.0)
    return np.maximum(out, 0.0).astype(np.float32)


def imitate(policy: Any, games: Games, *, epochs: int, lr: float, batch_size: int, seed: int,
            vf_coef: float = 0.5, loss: str = "choice", choice_weight: float = 0.1, critic: bool = True,
            after_epoch: Callable[[int], None] | None = None) -> list[dict[str, float | None]]:
    """Train an SB3 ``MaskableActorCriticPolicy`` on the expert's decisions (actor: ``loss``, see the module's
    text; critic: squared error of the value, unless ``critic`` is False: only PPO reads the critic, and leaving it
    out trains the very same actor a fifth faster); per epoch, the held-out losses, how often the actor picks the
    expert's card and the counters its card falls short of the expert's best by the expert's values
    (``held_out_regret``).  ``after_epoch(epoch)`` is called after each epoch (an evaluation for the learning
    curve)."""
    if loss not in LOSSES:
        raise ValueError(f"imitate: loss must be one of {', '.join(LOSSES)}, got {loss!r}")
    gen = torch.Generator().manual_seed(seed)
    n = len(games.action)
    perm = torch.randperm(n, generator=gen)
    held, train = perm[: max(1, n // 20)], perm[max(1, n // 20):]
    obs, legal = torch.as_tensor(games.obs), torch.as_tensor(games.legal)
    action, value = torch.as_tensor(games.action), torch.as_tensor(games.value)
    target = torch.as_tensor(targets(games))
    regret = torch.as_tensor(regrets(games))
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)

    def losses(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor]:
        o, lg, tg, rg, card = obs[rows], legal[rows], target[rows], regret[rows], action[rows]
        features = policy.extract_features(o)
        latent_pi = policy.mlp_extractor.forward_actor(features)
        logits = policy.action_net(latent_pi).masked_fill(~lg, torch.finfo(torch.float32).min)
        actor = torch.nn.functional.cross_entropy(logits, tg)
        if loss == "regret":
            actor = (torch.softmax(logits, dim=1) * rg).sum(dim=1).mean() + choice_weight * actor
        value_loss = None
        if critic:
            latent_vf = policy.mlp_extractor.forward_critic(features)
            value_loss = torch.nn.functional.mse_loss(policy.value_net(latent_vf).squeeze(-1), value[rows])
        chosen = logits.argmax(dim=1, keepdim=True)
        return actor, value_loss, (chosen[:, 0] == card).float().mean(), rg.gather(1, chosen).mean()

    history: list[dict[str, float | None]] = []
    policy.set_training_mode(True)
    for epoch in range(epochs):
        order = train[torch.randperm(len(train), generator=gen)]
        for i in range(0, len(order), batch_size):
            actor, value_loss, _, _ = losses(order[i:i + batch_size])
            optimizer.zero_grad()
            (actor if value_loss is None else actor + vf_coef * value_loss).backward()
            optimizer.step()
        with torch.no_grad():
            actor, value_loss, agree, given_up = losses(held)
        history.append({"epoch": epoch + 1, "held_out_actor_loss": round(float(actor), 4),
                        "held_out_value_loss": None if value_loss is None else round(float(value_loss), 4),
                        "held_out_agreement": round(float(agree), 4), "held_out_regret": round(float(given_up), 4)})
        if after_epoch is not None:
            policy.set_training_mode(False)
            after_epoch(epoch + 1)
            policy.set_training_mode(True)
    policy.set_training_mode(False)
    return history
