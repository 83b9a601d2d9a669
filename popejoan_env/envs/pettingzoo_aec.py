# noqa: D212, D415
"""
# Pope Joan (PettingZoo AEC environment)

| | |
|---|---|
| Import | `from popejoan_env import env` (or `pettingzoo.make("aec", "popejoan/pope_joan-v2")`) |
| Actions | Discrete |
| Parallel API | No (turn order comes from the cards; `turn_based_aec_to_parallel` converts it) |
| Manual Control | `popejoan play` (a terminal, or `popejoan serve` for the browser) |
| Agents | `agents = ['player_0', …, 'player_{n-1}']`, 3 ≤ n ≤ 8 (default 4) |
| Action Shape | `Discrete(52)` |
| Action Values | [0, 51]: the card id (20, the 8♦, is never legal) |
| Observation Shape | `{"observation": (1285,), "action_mask": (52,)}` |
| Observation Values | `observation`: float32 in [−16384, 65536] (see below); `action_mask`: int8 in {0, 1} |
| State Shape | `(1224,)` float32, `state()`: the full hidden state, for centralised critics |
| Metadata name | `pope_joan_v2`; render modes `human`, `ansi` |

Pope Joan is a stops game for 3 to 8 players with a 51-card pack (the 8♦ is
out) and a staking board of eight compartments.  The dealer stakes the board,
a dead hand is dealt with its last card turned up for trumps, and the players
then play ascending runs of one suit: whoever holds the next card must play it,
and when nobody can the run stops and its last player leads again.  Playing the
9♦ (the Pope) or an honour of trumps takes a compartment; the first player out
takes the game compartment and a counter for every card left in the other
hands.  The rules, both presets (`modern`, `victorian`) and every variant are
in [the rules](rules.md); every option is one field of a `Rules` object.

```python
from popejoan_env import env
e = env(players=4, rules="modern")
e.reset(seed=7)
for agent in e.agent_iter():
    obs, reward, terminated, truncated, info = e.last()
    if terminated or truncated:
        action = None
    else:
        action = e.action_space(agent).sample(obs["action_mask"])
    e.step(action)
```

Importing this module (as `from popejoan_env import env` does) registers
`popejoan/pope_joan-v2` with PettingZoo's registry where the installed
PettingZoo has one (≥ 1.26), so `pettingzoo.make("aec",
"popejoan/pope_joan-v2", players=5)` builds `env(players=5)`.

## Arguments

`env(players=4, rules="modern", render_mode=None, auto_forced=False, deals=1,
dealer=None, illegal_reward=-100.0)`; `raw_env` takes the same except
`illegal_reward`.

| argument | default | meaning |
|---|---|---|
| `players` | 4 | 3 … 8 seats; agent `player_i` is seat `i` |
| `rules` | `"modern"` | `"modern"`, `"victorian"`, a `Rules` object or a mapping of options (`Rules.from_dict`) |
| `render_mode` | `None` | `"ansi"` (`render()` returns the picture as a string) or `"human"` (printed after every step) |
| `auto_forced` | `False` | `False`: every card of the deal is a step (a forced continuation, R8, has a one-card mask). `True`: the env plays forced cards itself, so an agent is only asked to lead |
| `deals` | 1 | K: an episode is a session of K deals with play, the board and balances carried and the deal passing left |
| `dealer` | `None` | first dealer of each episode; `None` draws it from the env's generator at every reset |
| `illegal_reward` | -100.0 | `env()` only: the reward of an agent whose illegal card ends the episode (see Action Space) |

## Observation Space

`observe(agent)` returns `{"observation": float32[1285], "action_mask": int8[52]}`
from that agent's seat.  Seats are relative to the observer (0 = itself, 1 =
the seat on its left, and so on clockwise) and padded to 8, so one network
plays every table size; rows of seats beyond the table are 0.  The vector holds
exactly what the seat may know (`seat_view.SeatView`), the public history
included, and `observation.decode(vector, mask)` gives that `SeatView` back;
two positions that differ only in cards the seat cannot see get the same
observation (the leak tests).  Layout version `OBS_VERSION = 2`; the table is
`observation.LAYOUT`:

{LAYOUT_TABLE}

**Values and scales.**  Card planes, one-hots and flags are 0 or 1; a card plane
has 52 entries indexed by card id (entry 20, the 8♦, is always 0).  Counts are
stored times a power of two, so `decode` gets them back exactly:

| field | stored as | for example |
|---|---|---|
| `board` | counters ÷ 16 | 6 counters on `pope` after one dressing: 0.375 (a compartment grows while it carries over) |
| `balances` | counters ÷ 64 | the 48 counters a seat starts with: 0.75 (below 0 under credit) |
| `hand_sizes`, `dead_size` | cards ÷ 16 | 10 cards (4 players, `modern`): 0.625 |
| `play_order` | place in the deal's history ÷ 64 | the first card played: 1/64; at most 51/64 |

**The Box bounds.**  The `observation` Box is `[−16384, 65536]` at its widest,
and those two numbers are bounds, not values to expect.  Counters have no
upper limit in the rules (an unwon compartment carries over deal after deal,
and a balance on credit can fall without end), yet a Box must be finite and
must hold every observation the env can produce.  So `observation.bounds()`
assumes at most `MAX_COUNTERS = 2**20` counters on a compartment or in a
balance, far beyond any session, while float32 still holds every count
exactly (integers up to `2**24`).  Scaled, that is `2**20 / 16 = 65536` for
the board and `±2**20 / 64 = ±16384` for the balances; every other entry lies in
[0, 1], or [0, 51/16] for the sizes.  Normalise by the scales above, not by the
bounds.  An episode whose counters could pass `MAX_COUNTERS` is refused when the
env is built and at `reset` (`observation.check_counters_fit`: the starting
board and balances, then at most the dressing and a counter a card moved each
deal); the default rules fit with room over 1,000 deals.

### Legal Actions Mask

`action_mask` is 1 for each card the agent may play now and 0 elsewhere.  It
is all 0 for every agent but the one to act, and all 0 once the episode is
over.  A lead under `lead="lowest_of_suit"` has at most 4 legal cards (the
lowest card of each suit held), a continuation exactly 1 (the forced card,
R8).  The mask sits in the observation dict, as in PettingZoo's classic card
games, so `sample(obs["action_mask"])` draws a legal card.

## Action Space

`Discrete(52)`: action `i` plays the card with id `i = suit*13 + rank` (suits
C D H S, ranks A 2 … K; `AC=0`, `9D=21`, `KS=51`).  The agent to act is the
seat of the game's `to_act`: the holder of the next card of a run (possibly the
same agent several times in a row), or the seat that must lead after a stop
(R9).  It is not a rotation of seats.

Illegal actions: `raw_env.step` raises `IllegalActionError` (a `ValueError`)
naming the agent, its seat, the card and the legal cards; nothing changes.
`env()` applies PettingZoo's `TerminateIllegalWrapper`: an illegal card ends
the episode for every agent, the offender gets `illegal_reward` (default
**-100**, worse than any deal's outcome, see Rewards) and the others 0.

## Rewards

Counters won or lost.  When a deal with play ends, every agent gets its net
change in counters over that deal (`Deal.delta`: the dressing it paid as
dealer, the compartments it took, what it paid or received when a player went
out).  A deal's rewards sum to minus the change of the counters on the board,
so a deal is not zero-sum.  `_cumulative_rewards` follows PettingZoo: `last()`
gives the agent's rewards since it last acted.

**Magnitude.**  Measured on 10,000 random deals per table size and preset
(random legal play, each deal from an empty board, seed 1), a deal's reward
for one agent ranged over:

| players | 3 | 4 | 5 | 6 | 7 | 8 |
|---|---|---|---|---|---|---|
| `modern`: min … max | −27 … 33 | −25 … 38 | −23 … 39 | −22 … 44 | −21 … 49 | −20 … 43 |
| `modern`: mean abs(reward) | 8.51 | 7.87 | 7.61 | 7.24 | 7.03 | 6.89 |
| `victorian`: min … max | −28 … 34 | −26 … 42 | −23 … 39 | −22 … 43 | −21 … 46 | −20 … 43 |
| `victorian`: mean abs(reward) | 7.91 | 7.33 | 7.40 | 7.12 | 6.93 | 6.76 |

The highest rewards go to a player who goes out while the others hold many
cards; the lowest to a dealer who pays the dressing (15) and then a card for
each card still held.  In sessions (`deals=K`) compartments carry over, so a
deal can pay more than from an empty board.  Each range was measured with the
game records of `popejoan simulate` (sessions of one deal, so each starts from
an empty board):

```bash
popejoan simulate --players 4 --preset modern --deals 10000 --seed 1 --session-length 1 --quiet --out - \
  | python -c "import json,sys; d=[x for l in sys.stdin for x in json.loads(l)['delta']]; print(min(d), max(d))"
```

## Termination and truncation

* `deals=1` (default): the episode is one deal; it ends with `terminations`
  all True.
* `deals=K`: the episode is a session of K deals with play; each deal's
  rewards are paid when it ends, the next deal (next dealer, board and balances
  carried) follows within the same episode, and after the K-th deal
  `truncations` are all True (the board still holds counters that later deals
  would pay out, so the last state is not terminal).  With
  `allow_credit=False` a session can also end early, when the next dealer
  cannot pay the dressing: then `terminations` are True.
* A deal that ends at its turn-up (`pope_turnup="ends_deal"`, the 9♦ turned,
  R5) has no decision; it does not count towards K.  Its counters are settled
  and the next deal (next dealer, board and balances carried) is dealt at once
  in the same episode, so no agent is ever done right after `reset()`.  Its
  rewards are paid with those of the next deal that ends, in the same step.
  When such a first deal leaves the next dealer unable to pay the dressing
  (`allow_credit=False`), the episode is a fresh session dealt from the
  generator instead.
* A deal injected through `reset(options={"deal": ...})` that ends at its
  turn-up is treated the same way: it is settled (its record is in
  `records()`), and play goes on into a random deal from the env's generator
  with the next dealer; its counters are paid with that deal's.

Balances start at `rules.start_counters` (48) every episode.

## Reset and options

`reset(seed=None, options=None)`: `seed` creates a fresh
`numpy.random.Generator`; without it the env's generator continues its stream
(the first reset without any seed draws entropy from the OS).  Options:

```python
options = {
    "deal": {"hands": [["AS", "3H", ...], ...],   # one list per seat, seat 0 first
             "dead": [..., "QH"],                  # the dead hand, LAST card = turn-up
             "dealer": 0},                         # optional, default 0
    "board": {"pope": 6, "matrimony": 2},          # board before the dressing (default empty)
    "balances": [48, 48, 48, 48],                  # balances before the deal (default start_counters)
}
```

A bad deal, board or balances raises a `ValueError` (`InvalidDealError`)
naming the problem, and the env is left exactly as it was.  Keys that are not
ours are ignored, as Gymnasium envs ignore options they do not take (PettingZoo's
`api_test` passes `{"options": 1}` only to check that `reset` takes the argument);
a near miss of ours (`balance`, `boards`, `deals`) or a deal key outside `deal`
is refused with `InvalidDealError`.

## Game records

`records()` returns the `popejoan-record/1` dicts (`record.deal_record`) of
every finished deal of the current episode, in order, including deals that
ended at the turn-up; replaying them with `record.replay_record` (or through
`reset(options=...)` and `step`) reproduces them exactly.  The format is
[the game-record format](records.md).

## State (for centralised critics)

`state()` returns the full hidden state as `float32[1224]` (`state_space` is its Box): every
hand, the dead hand, the turn-up, the board, the balances, the seat to act, the card due and the public
history, in **absolute** seats (`observation.STATE_LAYOUT`).  It is an oracle for training critics
(MAPPO, oracle critics as in PerfectDou and Suphx), **never for acting**: no player of this package
reads it, and an agent that acts on it cheats.

{STATE_LAYOUT_TABLE}

## Version History

* v2: the observation holds everything the seat knows (layout version 2): the public history (the order
  of the cards played and which were leads, `play_order` and `led`), who went out and who the settlement
  showed holding the 9♦, and the inference planes `inferred` (what the table can infer each relative seat
  does not hold: leads under `lowest_of_suit`, the settlement). `state()` and `state_space` added.
* v1: first release (observation layout version 1).
"""

from __future__ import annotations

import copy
import difflib
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from popejoan_env.cards import NUM_CARD_IDS, names_of
from popejoan_env.checks import (
    as_flag, as_int, as_seed, brief, check_illegal_reward, check_render_mode, episode_deals,
)
from popejoan_env.engine import Deal, check_seat, parse_balances, parse_board
from popejoan_env.envs.registration import ENV_VERSION
from popejoan_env.errors import GameOverError, IllegalActionError, InvalidDealError, PopeJoanError
from popejoan_env.observation import (
    LAYOUT, MAX_COUNTERS, OBS_SIZE, STATE_LAYOUT, STATE_SIZE, Encoder, bounds, check_counters_fit, layout_table,
)
from popejoan_env.render import describe
from popejoan_env.rules import Rules, RulesLike, check_players, resolve_rules
from popejoan_env.seat_view import SeatView, seat_view
from popejoan_env.seats import absolute
from popejoan_env.session import Session

ENV_NAME = f"pope_joan_v{ENV_VERSION}"
"""PettingZoo name of this environment (``metadata["name"]``)."""
ENV_ID = f"popejoan/pope_joan-v{ENV_VERSION}"
"""Id under which ``env`` is registered with PettingZoo's registry."""
ILLEGAL_REWARD = -100.0
"""Default reward of an agent whose illegal card ends the episode under ``env()``."""

OPTION_KEYS = ("deal", "board", "balances")
_DEAL_KEYS = ("hands", "dead", "dealer")
_ZERO_MASK = np.zeros(NUM_CARD_IDS, dtype=np.int8)
_ONE_HOT = np.eye(NUM_CARD_IDS, dtype=np.int8)
# Far more deals than any episode plays; the env counts deals with play itself.
_UNBOUNDED = 1 << 62


def env(**kwargs: Any) -> AECEnv:
    """The Pope Joan AEC env with PettingZoo's standard wrappers (illegal card → episode ends, ``illegal_reward``)."""
    illegal_reward = check_illegal_reward(kwargs.pop("illegal_reward", ILLEGAL_REWARD))
    e: AECEnv = raw_env(**kwargs)
    e = wrappers.TerminateIllegalWrapper(e, illegal_reward=illegal_reward)
    e = wrappers.AssertOutOfBoundsWrapper(e)
    return ClearErrorsWrapper(e)


def meant_option(key: str) -> str | None:
    """What a reset option key that is not ours most likely meant (a typo, a deal key not inside ``deal``),
    or None for a key that is simply someone else's.

    Gymnasium's and PettingZoo's envs ignore options they do not take, and tools pass their own: PettingZoo's
    ``api_test`` calls ``reset(seed=0, options={"options": 1})`` only to check that ``reset`` takes an
    argument of that name.  So such keys are ignored, silently; but a near miss of one of our keys would
    silently deal a random deal instead of the one meant, so it is refused.
    """
    folded = key.lower()
    if folded in _DEAL_KEYS:
        return "it belongs inside options['deal']"
    near = difflib.get_close_matches(folded, OPTION_KEYS + _DEAL_KEYS, n=1, cutoff=0.75)
    if not near:
        return None
    where = f"options['deal'][{near[0]!r}]" if near[0] in _DEAL_KEYS else repr(near[0])
    return f"did you mean {where}?"


class ClearErrorsWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` (the outermost wrapper of ``env()``), refusing with a
    ``PopeJoanError`` naming the problem what PettingZoo's wrappers would answer with a bare
    ``AssertionError`` (a step, ``last()``, ``observe()``, ``state()``, ``render()`` or ``agent_iter()`` before
    ``reset()``, an action outside ``Discrete(52)``), before anything changes.  A legal id that is not a legal
    card still ends the episode (``TerminateIllegalWrapper``)."""

    def __init__(self, env: AECEnv) -> None:
        super().__init__(env)
        self._raw: raw_env = env.unwrapped

    def step(self, action: Any) -> None:
        """Check the action, then step the wrapped env."""
        raw = self._raw
        if type(action) is int and 0 <= action < NUM_CARD_IDS and raw._deal is not None and raw.agents:
            agent = raw.agent_selection
            if not (raw.terminations[agent] or raw.truncations[agent]):
                super().step(action)  # the common case: a live agent steps with a card id
                return
        if raw._deal is None:
            raise GameOverError("step() before reset(): call reset() to deal an episode")
        if not raw.agents:
            raise GameOverError("the episode is over and every agent has stepped out; call reset()")
        agent = raw.agent_selection
        done = raw.terminations[agent] or raw.truncations[agent]
        if done or action is None:
            if not (done and action is None):
                want = "None (it is done)" if done else "a card id 0..51 (an int)"
                raise IllegalActionError(f"{agent} must step with {want}, got {brief(action)}")
            super().step(None)
            return
        card = as_int(action)
        if card is None or not 0 <= card < NUM_CARD_IDS:
            raise IllegalActionError(f"{agent}: an action is a card id 0..51 (an int), got {brief(action)}")
        super().step(card)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Check the seed, then reset the wrapped env."""
        super().reset(seed=as_seed(seed), options=options)

    def _dealt(self, call: str) -> None:
        """Refuse ``call`` before the first ``reset()`` as ``raw_env`` does (PettingZoo's wrapper: AssertionError)."""
        if not self._has_reset:
            raise GameOverError(f"{call} before reset(): call reset() to deal an episode")

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """The agent to act's observation, reward, flags and info; refused before ``reset()``."""
        self._dealt("last()")
        return super().last(observe)

    def observe(self, agent: str) -> Any:
        """``agent``'s observation; refused before ``reset()``."""
        self._dealt("observe()")
        return super().observe(agent)

    def state(self) -> np.ndarray:
        """The full hidden state; refused before ``reset()``."""
        self._dealt("state()")
        return super().state()

    def render(self) -> Any:
        """The table as the render mode draws it; refused before ``reset()``."""
        self._dealt("render()")
        return super().render()

    def agent_iter(self, max_iter: int = 2**63) -> Any:
        """The agents in turn; refused before ``reset()``."""
        self._dealt("agent_iter()")
        return super().agent_iter(max_iter)


class raw_env(AECEnv, EzPickle):  # noqa: N801 - PettingZoo's naming convention
    """Pope Joan as a PettingZoo AEC env without wrappers (illegal cards raise ``IllegalActionError``)."""

    metadata = {
        "render_modes": ["human", "ansi"],
        "name": ENV_NAME,
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        players: int = 4,
        rules: RulesLike = "modern",
        *,
        render_mode: str | None = None,
        auto_forced: bool = False,
        deals: int = 1,
        dealer: int | None = None,
    ) -> None:
        super().__init__()
        EzPickle.__init__(self, players, rules, render_mode=render_mode, auto_forced=auto_forced, deals=deals,
                          dealer=dealer)
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        players = check_players(players)
        self.rules: Rules = resolve_rules(rules)
        self.rules.check_startable()  # else every reset would be refused
        self.deals_per_episode = episode_deals(deals)
        start = self.rules.start_counters
        check_counters_fit(self.rules, self.deals_per_episode, start, start, 0, "rules and deals")
        if dealer is not None:
            if as_int(dealer) is None or not 0 <= dealer < players:
                raise PopeJoanError(f"dealer must be None (random) or a seat 0..{players - 1}, got {brief(dealer)}")
            dealer = int(dealer)
        self.players = players
        self.auto_forced = as_flag(auto_forced, "auto_forced")
        self.first_dealer = dealer

        self.possible_agents = [f"player_{i}" for i in range(players)]
        self.agents = self.possible_agents[:]
        self._seat_of = {a: i for i, a in enumerate(self.possible_agents)}
        low, high = bounds()
        self.observation_spaces = {
            a: spaces.Dict({
                "observation": spaces.Box(low=low, high=high, shape=(OBS_SIZE,), dtype=np.float32),
                "action_mask": spaces.Box(low=0, high=1, shape=(NUM_CARD_IDS,), dtype=np.int8),
            })
            for a in self.possible_agents
        }
        self.action_spaces = {a: spaces.Discrete(NUM_CARD_IDS) for a in self.possible_agents}
        s_low, s_high = bounds(STATE_SIZE, STATE_LAYOUT)
        self.state_space = spaces.Box(low=s_low, high=s_high, shape=(STATE_SIZE,), dtype=np.float32)

        self._rng: np.random.Generator | None = None
        self._session: Session | None = None
        self._deal: Deal | None = None
        self._encoder: Encoder | None = None
        self._synced = False
        self._rewards_dirty = False
        self._played_deals = 0
        self._pending = [0] * players
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[0]

    def __deepcopy__(self, memo: dict[int, Any]) -> raw_env:
        """A copy of the env as it stands, mid-episode too (a search's clone).  ``pickle`` keeps EzPickle's way (the
        constructor's arguments: a fresh env, to send to another process); ``copy.deepcopy`` took it too, and so
        gave an env without its deal."""
        new = self.__class__.__new__(self.__class__)
        memo[id(self)] = new
        for name, value in self.__dict__.items():
            setattr(new, name, copy.deepcopy(value, memo))
        return new

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        """The (cached) observation space of an agent."""
        return self.observation_spaces[self.possible_agents[self.seat_of(agent)]]

    def action_space(self, agent: str) -> spaces.Space:
        """The (cached) action space of an agent: Discrete(52)."""
        return self.action_spaces[self.possible_agents[self.seat_of(agent)]]

    # ------------------------------------------------------------------ queries
    @property
    def deal(self) -> Deal:
        """The deal in progress (or the last one, once the episode is over)."""
        if self._deal is None:
            raise GameOverError("call reset() first: there is no deal yet")
        return self._deal

    @property
    def session(self) -> Session:
        """The session of this episode (board, balances, every deal so far)."""
        if self._session is None:
            raise GameOverError("call reset() first: there is no session yet")
        return self._session

    def seat_of(self, agent: str) -> int:
        """The seat of an agent (``player_i`` is seat ``i``); an unknown agent is a PopeJoanError naming the agents."""
        seat = self._seat_of.get(agent) if isinstance(agent, str) else None
        if seat is None:
            raise PopeJoanError(f"unknown agent {brief(agent)}; the agents are {self.possible_agents}")
        return seat

    def seat_view(self, agent: str) -> SeatView:
        """What ``agent``'s seat may know now (the ``SeatView`` its observation encodes): what players ``act`` on."""
        return seat_view(self.deal, self.seat_of(agent))

    def records(self) -> list[dict[str, Any]]:
        """Game records (``popejoan-record/1``) of every finished deal of this episode, in order."""
        from popejoan_env.record import deal_record

        if self._session is None:
            return []
        return [deal_record(d) for d in self._session.deals if d.done]

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start an episode: a fresh generator from ``seed`` (else the stream goes on), options per the docs; a
        ``seed`` also seeds every agent's action space, so play sampled from them repeats with the seed.

        A refused reset (bad options, or a session that cannot start) changes nothing: not the env, not its
        generator.
        """
        seed = as_seed(seed)
        explicit, board, balances = self._parse_options(options)
        rng = np.random.default_rng(seed) if seed is not None else self._rng
        if rng is None:
            rng = np.random.default_rng()
        saved = rng.bit_generator.state
        try:
            if explicit is not None:
                first_dealer = explicit[2]
            elif self.first_dealer is not None:
                first_dealer = self.first_dealer
            else:
                first_dealer = int(rng.integers(self.players))
            while True:
                session = Session(self.rules, self.players, rng, deals=_UNBOUNDED, first_dealer=first_dealer,
                                  board=board, balances=balances)
                first = session.next_deal(explicit[0], explicit[1]) if explicit is not None else session.next_deal()
                pending = [0] * self.players
                deal = first
                if deal.done:
                    self._add(pending, deal.delta)
                    deal = self._next_playable(session, pending)
                if deal is not None:
                    break
                if explicit is not None:
                    raise GameOverError("the session ended at its first turn-up: the next dealer cannot pay the dressing")
                # A random first deal ended at its turn-up (R5) and left the next dealer unable to pay the dressing
                # (allow_credit=false): that is no refusal of the caller's input, so the episode is a fresh session
                # dealt from the stream, as the Gymnasium env deals again (re-raising here rolled the generator
                # back, so every later reset() without a seed replayed the same deal and was refused).
        except BaseException:
            rng.bit_generator.state = saved  # a refused reset leaves the generator's stream where it was
            raise
        self._rng = rng
        self._session = session
        self._pending = pending
        self._played_deals = 0
        self._set_deal(deal)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self._rewards_dirty = False
        self._skip_agent_selection = None
        self.agent_selection = self.possible_agents[deal.to_act]
        if seed is not None:  # the same seed, the same random play through action_space(agent).sample(mask) too
            for k, agent in enumerate(self.possible_agents):
                self.action_spaces[agent].seed(int(np.random.SeedSequence([seed, k]).generate_state(1)[0]))

    def _parse_options(
        self, options: Mapping[str, Any] | None
    ) -> tuple[tuple[Any, Any, int] | None, list[int] | None, list[int] | None]:
        """Check reset options: (hands, dead, dealer) or None, board or None, balances or None.

        The deal itself is checked by the engine (``Deal.from_cards`` through ``Session``); here only what the
        env adds: the keys, and counters the observation can hold.
        """
        if options is None:
            return None, None, None
        if not isinstance(options, Mapping):
            raise InvalidDealError(f"reset options must be a mapping with keys {list(OPTION_KEYS)}, "
                                   f"got {brief(options)}")
        for key in options:
            if key not in OPTION_KEYS:
                meant = meant_option(str(key))
                if meant is not None:
                    raise InvalidDealError(f"reset options: {brief(key)} is not an option ({meant}); "
                                           f"options are {list(OPTION_KEYS)}")
        explicit = None
        spec = options.get("deal")
        if spec is not None:
            if not isinstance(spec, Mapping):
                raise InvalidDealError(f"options['deal'] must be a mapping with keys {list(_DEAL_KEYS)}, got {brief(spec)}")
            bad = sorted(str(k) for k in spec if k not in _DEAL_KEYS)
            if bad:
                raise InvalidDealError(f"options['deal'] has unknown key(s) {bad}; keys are {list(_DEAL_KEYS)}")
            for key in ("hands", "dead"):
                if key not in spec:
                    raise InvalidDealError(f"options['deal'] needs {brief(key)} (hands: one card list per seat; dead: turn-up last)")
            dealer = check_seat(spec.get("dealer", 0), self.players, "options['deal']['dealer']")
            explicit = (spec["hands"], spec["dead"], dealer)
        board = options.get("board")
        board_list = parse_board(board) if board is not None else None
        balances = options.get("balances")
        balance_list = parse_balances(balances, self.players) if balances is not None else None
        # The observation scales counters into a bounded Box: refuse what it could not hold.
        limit = MAX_COUNTERS // 2
        if board_list is not None and max(board_list) > limit:
            raise InvalidDealError(f"options['board']: a compartment may hold at most {limit:,} counters here "
                                   f"(the observation's bound), got {max(board_list):,}")
        if balance_list is not None and max(abs(b) for b in balance_list) > limit:
            raise InvalidDealError(f"options['balances'] must lie within ±{limit:,} (the observation's bound), "
                                   f"got {balance_list}")
        low = min(balance_list) if balance_list is not None else self.rules.start_counters
        high = max(balance_list) if balance_list is not None else self.rules.start_counters
        check_counters_fit(self.rules, self.deals_per_episode, low, high,
                           sum(board_list) if board_list is not None else 0, "reset options")
        return explicit, board_list, balance_list

    # ------------------------------------------------------------------ play
    def _set_deal(self, deal: Deal) -> None:
        self._deal = deal
        self._encoder = Encoder(deal)
        self._synced = True

    @staticmethod
    def _add(total: list[int], delta: Sequence[int]) -> None:
        for i, x in enumerate(delta):
            total[i] += x

    def _next_playable(self, session: Session, pending: list[int]) -> Deal | None:
        """Deal on until a deal needs a decision; deals ended at the turn-up add to ``pending``. None: session over."""
        while not session.over:
            deal = session.next_deal()
            if not deal.done:
                return deal
            self._add(pending, deal.delta)
        return None

    def step(self, action: Any) -> None:
        """Play ``action`` (a card id) for the agent to act; see the module docs for rewards and episode ends."""
        if self._deal is None:
            raise GameOverError("step() before reset(): call reset() to deal an episode")
        agent = self.agent_selection
        if not self.agents:
            raise GameOverError("the episode is over and every agent has stepped out; call reset()")
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise IllegalActionError(f"{agent} is done: its step takes None, got {brief(action)}")
            self._was_dead_step(action)
            return
        deal = self._deal
        card = as_int(action)
        if card is None:
            raise IllegalActionError(
                f"{agent} (seat {deal.to_act}) cannot play {brief(action)}: an action is a card id 0..51 (an int); "
                f"legal: {names_of(deal.legal_actions())}"
            )
        try:
            deal.play(card)
        except IllegalActionError as err:
            raise IllegalActionError(f"{agent}: {err}") from None
        if self._rewards_dirty:
            self._clear_rewards()
            self._rewards_dirty = False
        self._cumulative_rewards[agent] = 0.0
        if self.auto_forced:
            deal.advance(lone_leads=False)
        self._synced = False
        if deal.done:
            self._end_of_deal(deal)
        else:
            self.agent_selection = self.possible_agents[deal.to_act]
        if self.render_mode == "human":
            self.render()

    def _end_of_deal(self, deal: Deal) -> None:
        """Pay the deal's counters to every agent; deal on, or end the episode."""
        total = self._pending
        self._add(total, deal.delta)
        self._played_deals += 1
        nxt = None
        if self._played_deals < self.deals_per_episode:
            nxt = self._next_playable(self.session, total)
        self._pending = [0] * self.players
        rewards = self.rewards
        for agent, x in zip(self.possible_agents, total):
            rewards[agent] = float(x)
        self._rewards_dirty = True
        self._accumulate_rewards()
        if nxt is not None:
            self._set_deal(nxt)
            self.agent_selection = self.possible_agents[nxt.to_act]
            return
        if self._played_deals >= self.deals_per_episode and self.deals_per_episode > 1:
            self.truncations = dict.fromkeys(self.agents, True)
        else:
            self.terminations = dict.fromkeys(self.agents, True)
        winner = deal.winner
        self.agent_selection = self.possible_agents[winner if winner is not None else 0]

    # ------------------------------------------------------------------ observe
    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """``{"observation": float32[1285], "action_mask": int8[52]}`` from ``agent``'s seat."""
        seat = self.seat_of(agent)
        encoder = self._synced_encoder("observe()")
        deal = self._deal
        assert deal is not None
        if seat != deal.to_act:
            mask = _ZERO_MASK.copy()
        elif deal.forced >= 0:
            mask = _ONE_HOT[deal.forced].copy()
        else:
            mask = _ZERO_MASK.copy()
            mask[deal.legal_actions()] = 1
        return {"observation": encoder.observe(seat), "action_mask": mask}

    def state(self) -> np.ndarray:
        """The full hidden state (``state_space``, absolute seats): an oracle for training critics, never for acting."""
        return self._synced_encoder("state()").state_vector()

    def _synced_encoder(self, what: str) -> Encoder:
        """The deal's encoder, brought up to date with the cards played since the last call."""
        encoder = self._encoder
        if encoder is None:
            raise GameOverError(f"call reset() before {what}")
        if not self._synced:
            encoder.sync()
            self._synced = True
        return encoder

    def action_mask(self, agent: str) -> np.ndarray:
        """The int8[52] legal-action mask of ``agent`` (all 0 unless it is to act)."""
        return self.observe(agent)["action_mask"]

    # ------------------------------------------------------------------ render
    def render(self) -> str | None:
        """``ansi``: the table as text; ``human``: print it."""
        if self.render_mode is None:
            warnings.warn("You are calling render method without specifying any render mode.", stacklevel=2)
            return None
        text = self._picture()
        if self.render_mode == "ansi":
            return text
        print(text)
        return None

    def _picture(self) -> str:
        """The table as the acting seat sees it (after the deal, as seat 0 sees it), with the episode around it."""
        if self._deal is None:
            return "Pope Joan: no deal yet (call reset())"
        deal = self._deal
        seat = max(deal.to_act, 0)
        n = deal.players
        names = [self.possible_agents[absolute(k, seat, n)] for k in range(n)]
        lines = [f"Deal {len(self.session.deals)} of the episode ({self._played_deals} of "
                 f"{self.deals_per_episode} deals with play finished)", describe(seat_view(deal, seat), names)]
        if deal.plays:
            who, card = deal.plays[-1]
            lines.append(f"Last card: {self.possible_agents[who]} played {names_of([card])[0]}")
        if deal.done:
            result = f"{self.possible_agents[deal.winner]} went out" if deal.winner is not None else "ended at the turn-up"
            lines.append(f"Deal over: {result}; counters won/lost {deal.delta}")
        return "\n".join(lines)

    def close(self) -> None:
        """Nothing to release (text rendering only)."""


def _register() -> None:
    """Register ``env`` with PettingZoo's registry when this PettingZoo has one (≥ 1.26)."""
    try:
        from pettingzoo import aec_registry, register  # type: ignore[attr-defined]
    except ImportError:  # older PettingZoo: no registry, direct import only
        return
    if ENV_ID not in aec_registry:
        register("aec", ENV_ID, entry_point="popejoan_env.envs.pettingzoo_aec:env")


_register()


# The two tables of the docstring come from their one source, ``observation.LAYOUT`` and ``STATE_LAYOUT``.
__doc__ = (__doc__ or "").replace("{LAYOUT_TABLE}", layout_table(LAYOUT)).replace(
    "{STATE_LAYOUT_TABLE}", layout_table(STATE_LAYOUT))
