"""The games of the web app: a human at seat 0 against scripted players or saved models (no web framework here).

A ``GameManager`` keeps at most ``max_games`` games, each a ``Session`` of one
or more deals, under a lock of its own, and at most ``max_games_per_client`` of
one client (``clients.ClientTable``: a client floods only its own games out);
games idle for ``idle_seconds`` expire.  Every rule of
play is the engine's: a request plays seat 0's card with ``Deal.play`` (an
illegal one is refused with the engine's message), then ``Deal.advance`` plays
forced cards and lone leads and each opponent answers ``act(seat_view(deal,
seat))``, until seat 0 has a real choice or the deal is over.  The work is done
on a copy of the deal that replaces it only when the request succeeds, so a
refused (or failed) request changes nothing.

``ModelShelf`` is the one gate to the models directory: only the ``model.zip``
files inside it (symbolic links out of it are not followed) are offered,
accepted or read, and their networks are loaded once and shared.

>>> manager = GameManager(models_dir="no-such-dir", seed=1)
>>> game_id, state = manager.create({"players": 3, "opponents": ["lowest", "lowest"]})
>>> state["to_act"] == 0 or state["over"], len(state["seats"])
(True, 3)
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from popejoan_env.cards import CARD_NAMES, SUITS, names_of
from popejoan_env.checks import as_int, brief
from popejoan_env.engine import Deal
from popejoan_env.errors import PopeJoanError
from popejoan_env.nets.model_file import RUN_MODEL
from popejoan_env.observation import encode_view
from popejoan_env.players import SCRIPTED, SHIPPED, Player, make_player
from popejoan_env.rules import COMPARTMENTS, MAX_PLAYERS, MIN_PLAYERS, PRESETS, Rules
from popejoan_env.seat_view import SeatView, history_of, seat_view
from popejoan_env.session import Session
from popejoan_env.table import play_until
from popejoan_env.web.clients import IDLE_SECONDS, ClientTable

log = logging.getLogger("popejoan.web")

HUMAN = 0
"""The human's seat."""
PLAY_FIELDS = frozenset({"card", "deal_number", "plays"})
"""The fields of a play's body: the card, and optionally the position the page shows."""
DEFAULT_OPPONENT = "stops_first"
"""Opponent of every seat a new game does not name."""
HINT_SEARCH = "pimc"
"""The search whose choice the hint shows beside the network's probabilities."""
MAX_DEALS = 100
"""Most deals a session may have."""
SHIPPED_SHOWN = SHIPPED
"""How the shipped network (package data, ``players.SHIPPED_MODEL``) is named among the models: it is always
offered, and it gives the hint."""
MODEL_DEPTH = 3
"""Deepest folder level under the models directory searched for model files."""
GAME_FIELDS = ("players", "preset", "opponents", "deals")
"""Fields of a new game's request."""
MAX_GAMES = 200
"""Most games the server keeps (``--max-games`` of ``create_app``)."""
MAX_GAMES_PER_CLIENT = 50
"""Most games one client (one address) keeps: its own oldest game makes room for its next one."""


# --------------------------------------------------------------------- errors
class WebError(PopeJoanError):
    """A request the web app refuses: bad input (HTTP 400), with one clear sentence."""

    status = 400


class NotFoundError(WebError):
    """An unknown game, replay or deal number (HTTP 404)."""

    status = 404


class StaleError(WebError):
    """A play sent from a page that shows an older position than the game's (another tab played on)."""

    status = 409


class TooLargeError(WebError):
    """A request body or upload over its size limit (HTTP 413)."""

    status = 413


class UnsupportedTypeError(WebError):
    """A request body sent with a content type its endpoint does not take (HTTP 415)."""

    status = 415


# --------------------------------------------------------------------- models
def policy_probs(policy: Any, view: SeatView) -> dict[str, float]:
    """The network's move probabilities over the legal cards of ``view`` (the masked softmax of its logits)."""
    legal = np.asarray(view.legal, dtype=np.intp)
    z = np.asarray(policy.logits(encode_view(view)), dtype=np.float64)[legal]
    p = np.exp(z - z.max())
    p /= p.sum()
    return {CARD_NAMES[int(c)]: float(x) for c, x in zip(legal, p)}


class ModelShelf:
    """The model files of one directory: listed, checked against a game, and loaded once (thread-safe)."""

    def __init__(self, models_dir: str | os.PathLike[str] = "models") -> None:
        # Model paths are shown from the directory's own name down ("models/run/model.zip"), never as the
        # server's absolute path.
        self.root = os.path.realpath(os.fspath(models_dir))
        self.shown = os.path.basename(os.path.normpath(os.fspath(models_dir))) or "models"
        self._lock = threading.Lock()
        self._meta: dict[str, tuple[tuple[int, ...], dict[str, Any] | None]] = {}
        self._policies: dict[str, tuple[tuple[int, ...], Any]] = {}

    def _inside(self, path: str) -> str | None:
        """The real path of ``path`` when it is a regular file inside the models directory, else None."""
        real = os.path.realpath(path)
        if os.path.commonpath([real, self.root]) != self.root or not os.path.isfile(real):
            return None
        return real

    def _candidates(self) -> list[tuple[str, str]]:
        """(shown path, real path) of the shipped network, then of every ``model.zip`` at most ``MODEL_DEPTH``
        folders down the models directory, sorted."""
        from popejoan_env.nets.shipped import SHIPPED_MODEL

        shipped = [(SHIPPED_SHOWN, SHIPPED_MODEL)] if os.path.isfile(SHIPPED_MODEL) else []
        out: list[tuple[str, str]] = []
        if not os.path.isdir(self.root):
            return shipped
        for folder, dirs, files in os.walk(self.root):
            rel = os.path.relpath(folder, self.root)
            depth = 0 if rel == "." else rel.count(os.sep) + 1
            if depth >= MODEL_DEPTH:
                dirs[:] = []
            dirs.sort()
            if RUN_MODEL in files:
                real = self._inside(os.path.join(folder, RUN_MODEL))
                if real is not None:
                    parts = [] if rel == "." else rel.split(os.sep)
                    out.append(("/".join([self.shown.rstrip("/\\") or ".", *parts, RUN_MODEL]), real))
        return shipped + sorted(out)

    @staticmethod
    def _name(shown: str, real: str) -> str:
        """A model's name: its run's folder, or ``shipped``."""
        return SHIPPED_SHOWN if shown == SHIPPED_SHOWN else os.path.basename(os.path.dirname(real))

    def metadata(self, real: str) -> dict[str, Any] | None:
        """A model file's metadata (cached while the file is unchanged), or None when it is not a model file."""
        from popejoan_env.nets.policy import read_metadata

        stamp = _stamp(real)
        with self._lock:
            cached = self._meta.get(real)
            if cached is not None and cached[0] == stamp:
                return cached[1]
        try:
            meta: dict[str, Any] | None = read_metadata(real)
        except Exception as err:  # noqa: BLE001  one bad file is left out; it never breaks the list for the others
            meta = None
            why = str(err) if isinstance(err, PopeJoanError) else f"{type(err).__name__}: {err}"
            log.warning("model file %s left out of the models offered: %s", real, " ".join(why.split())[:500])
        with self._lock:
            self._meta[real] = (stamp, meta)
        return meta

    def models(self) -> list[dict[str, Any]]:
        """Every readable model: its shown ``path``, run ``name``, table sizes ``players`` and rules ``presets``."""
        from popejoan_env.nets.model_file import trained_rules

        out = []
        for shown, real in self._candidates():
            meta = self.metadata(real)
            if meta is None:
                continue
            out.append({"path": shown, "name": self._name(shown, real),
                        "players": sorted(set(meta["players"])),
                        "presets": [rules.name for rules in trained_rules(meta)]})
        return out

    def resolve(self, spec: object, what: str = "model") -> str:
        """The real path of a model named by its shown path (one of ``models()``), else a ``WebError``."""
        if isinstance(spec, str):
            for shown, real in self._candidates():
                if spec == shown and self.metadata(real) is not None:
                    return real
        offered = [m["path"] for m in self.models()]
        if isinstance(spec, str) and os.path.isabs(spec):
            # Not echoed: the server's paths in a message are shown from the models directory's name down, so an
            # absolute path to an offered model would read as that very model, "unknown".
            raise WebError(f"unknown {what}: a model is named as the models offered name it, not by a file system "
                           f"path; the models offered are {offered or 'none'}")
        raise WebError(f"unknown {what} {brief(spec)}: the models offered are {offered or 'none'} "
                       f"(only model files inside the models directory)")

    @property
    def hint_model(self) -> str | None:
        """The shown path of the shipped network when it is installed and readable, else None."""
        for shown, real in self._candidates():
            if shown == SHIPPED_SHOWN and self.metadata(real) is not None:
                return shown
        return None

    def mismatch(self, real: str, rules: Rules, players: int) -> str | None:
        """Why the model cannot play these rules at this table size, or None when it can."""
        from popejoan_env.nets.model_file import trained_rules

        meta = self.metadata(real)
        if meta is None:
            return f"{os.path.basename(os.path.dirname(real))}/{RUN_MODEL} is not a readable model file"
        from popejoan_env.nets.shipped import SHIPPED_MODEL

        name = SHIPPED_SHOWN if real == SHIPPED_MODEL else os.path.basename(os.path.dirname(real))
        trained = trained_rules(meta)
        if rules not in trained:
            names = " and ".join(known.name for known in trained)
            return f"model {name} was trained for the {names} rules, not the {rules.name} rules played here"
        if players not in meta["players"]:
            sizes = ", ".join(str(n) for n in meta["players"])
            return f"model {name} was trained for {sizes} players, not for a table of {players}"
        return None

    def policy(self, real: str) -> Any:
        """The network of a model file (``learned.Policy``), loaded once while the file is unchanged."""
        from popejoan_env.nets.policy import load_policy

        stamp = _stamp(real)
        with self._lock:  # one load at a time: a second request waits for the first instead of loading again
            cached = self._policies.get(real)
            if cached is None or cached[0] != stamp:
                cached = (stamp, load_policy(real))
                self._policies[real] = cached
            return cached[1]

    def player(self, real: str, seed: int) -> Player:
        """A player for a model file (its network shared with every other game)."""
        from popejoan_env.players.learned import LearnedPlayer

        return LearnedPlayer(self.policy(real), seed=seed)


def _stamp(path: str) -> tuple[int, ...]:
    """(modification time, size, inode, change time) of a file: a cache entry is good while all are unchanged. The
    modification time and size alone missed a model replaced by another of the same size (every model of one
    architecture has it) whose time was kept (``cp -p``, ``rsync -t``, an archive's normalised times); a replaced
    file has another inode, a rewritten one another change time, which no tool can set back."""
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1, -1, -1)
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)


# --------------------------------------------------------------------- games
class Game:
    """One game: a session of deals, the opponents of seats 1..n-1, and which cards were played automatically."""

    def __init__(self, game_id: str, session: Session, opponents: list[Player], seeds: np.random.SeedSequence) -> None:
        self.game_id = game_id
        self.session = session
        self.opponents = opponents
        self.seeds = seeds
        self.lock = threading.Lock()
        self.auto: list[bool] = []
        """For each play of the current deal: True when the server played it without a choice."""

    @property
    def deal(self) -> Deal:
        """The deal in progress or last finished."""
        deal = self.session.current
        assert deal is not None, "a game always has a deal"
        return deal

    def play_on(self, deal: Deal, auto: list[bool]) -> None:
        """Play forced cards, lone leads and the opponents' choices on ``deal`` until seat 0 chooses or it ends."""
        start, chosen = len(deal.plays), []
        play_until(deal, [None, *self.opponents], lone_leads=True, chosen=chosen)  # seat 0 (HUMAN) holds None
        chose = set(chosen)
        auto.extend(i not in chose for i in range(start, len(deal.plays)))

    def commit(self, deal: Deal, auto: list[bool]) -> None:
        """Make ``deal`` (a played-on copy of the current deal) the current deal."""
        self.session.deals[-1] = deal
        self.auto = auto


class GameManager:
    """Games by id: created, played, expired and evicted; every game under its own lock."""

    def __init__(self, models_dir: str | os.PathLike[str] = "models", *, max_games: int = MAX_GAMES,
                 idle_seconds: float = IDLE_SECONDS, seed: int | None = None,
                 clock: Callable[[], float] = time.monotonic, shelf: ModelShelf | None = None,
                 max_games_per_client: int = MAX_GAMES_PER_CLIENT) -> None:
        self._games: ClientTable[Game] = ClientTable(max_games, max_games_per_client, idle_seconds, clock=clock,
                                 what="games")
        self.shelf = shelf if shelf is not None else ModelShelf(models_dir)
        self.max_games = self._games.capacity
        self.idle_seconds = self._games.idle_seconds
        self.clock = clock
        self._seeds = np.random.SeedSequence(seed)
        self._lock = threading.Lock()

    # ----------------------------------------------------------------- table
    def __len__(self) -> int:
        return len(self._games)

    def _get(self, game_id: str) -> Game:
        """The game of an id, marked as just used; a NotFoundError when there is none (or it expired)."""
        game = self._games.get(game_id)
        if game is None:
            raise NotFoundError(f"no game {brief(game_id)}: it never existed, expired after "
                                f"{self.idle_seconds:g} s idle, or was evicted; start a new game")
        return game

    # ----------------------------------------------------------------- requests
    def options(self) -> dict[str, Any]:
        """What a new game may be: presets, table sizes, opponents (scripted and model files), the hint model."""
        models = self.shelf.models()
        return {
            "presets": list(PRESETS),
            "players": list(range(MIN_PLAYERS, MAX_PLAYERS + 1)),
            "opponents": list(SCRIPTED) + [m["path"] for m in models],
            "default_opponent": DEFAULT_OPPONENT,
            "hint_model": self.shelf.hint_model,
            "models": models,
        }

    def create(self, body: Any, client: str = "") -> tuple[str, dict[str, Any]]:
        """Start a game of ``client`` from a body ``{"players", "preset", "opponents", "deals"}``; (id, state)."""
        players, rules, specs, deals = self._parse_new_game(body)
        models = {spec: self.shelf.resolve(spec, f"opponent (seat {k})")
                  for k, spec in enumerate(specs, start=1) if spec not in SCRIPTED}
        for spec, real in models.items():
            why = self.shelf.mismatch(real, rules, players)
            if why is not None:
                raise WebError(f"opponent {spec} cannot play this game: {why}")
        with self._lock:
            seeds = self._seeds.spawn(1)[0]
        table, *seat_seeds = seeds.spawn(players)
        rng = np.random.default_rng(table)
        opponents = [
            self.shelf.player(models[spec], _int_seed(s)) if spec in models else make_player(spec, seed=_int_seed(s))
            for spec, s in zip(specs, seat_seeds)
        ]
        session = Session(rules, players, rng, deals=deals, first_dealer=int(rng.integers(players)))
        game = Game(secrets.token_urlsafe(12), session, opponents, seeds)
        deal = session.next_deal()
        auto: list[bool] = []
        game.play_on(deal, auto)
        game.auto = auto
        self._games.add(game.game_id, game, client)
        return game.game_id, self.state(game, new_plays=len(deal.plays))

    def _parse_new_game(self, body: Any) -> tuple[int, Rules, list[str], int]:
        """The checked fields of a new game's request body."""
        if not isinstance(body, Mapping):
            raise WebError(f"a new game's body must be a JSON object with {list(GAME_FIELDS)}, got {_kind(body)}")
        unknown = sorted(str(k) for k in body if k not in GAME_FIELDS)
        if unknown:
            raise WebError(f"unknown field(s) {unknown}; a new game takes {list(GAME_FIELDS)}")
        players = as_int(body.get("players", 4))
        if players is None or not MIN_PLAYERS <= players <= MAX_PLAYERS:
            raise WebError(f"players must be an integer {MIN_PLAYERS}..{MAX_PLAYERS}, got {brief(body['players'])}")
        preset = body.get("preset", "modern")
        if not isinstance(preset, str) or preset not in PRESETS:
            raise WebError(f"preset must be one of {list(PRESETS)}, got {brief(preset)}")
        deals = as_int(body.get("deals", 1))
        if deals is None or not 1 <= deals <= MAX_DEALS:
            raise WebError(f"deals must be an integer 1..{MAX_DEALS}, got {brief(body['deals'])}")
        specs = body.get("opponents", [DEFAULT_OPPONENT] * (players - 1))
        if not isinstance(specs, list) or len(specs) != players - 1:
            raise WebError(f"opponents must be a list of {players - 1} names, one per seat 1..{players - 1}, "
                           f"got {brief(specs)}")
        for k, spec in enumerate(specs, start=1):
            if not isinstance(spec, str):
                raise WebError(f"opponents[{k - 1}] (seat {k}) must be a name, got {brief(spec)}")
        return players, PRESETS[preset], list(specs), deals

    def get(self, game_id: str) -> dict[str, Any]:
        """The state of a game."""
        game = self._get(game_id)
        with game.lock:
            return self.state(game, new_plays=0)

    def play(self, game_id: str, body: Any) -> dict[str, Any]:
        """Play seat 0's card ``{"card": "5S"}``, then everything up to seat 0's next choice; the new state.  With
        ``"deal_number"`` and ``"plays"`` (the position the page shows: the state's deal number and the length of
        its history) a play from a page that shows another position is refused (409), not played there."""
        game = self._get(game_id)
        if not isinstance(body, Mapping) or not {"card"} <= set(body) <= PLAY_FIELDS:
            raise WebError(f'a play\'s body must be a JSON object {{"card": "5S"}} (with "deal_number" and "plays" '
                           f"if the page says where it is), got {brief(body)}")
        card = body["card"]
        if not isinstance(card, str):
            raise WebError(f'"card" must be a card in notation such as "5S", got {brief(card)}')
        shown = [as_int(body.get(name)) for name in ("deal_number", "plays")]
        if ("deal_number" in body) != ("plays" in body) or ("plays" in body and (None in shown or min(shown) < 0)):
            raise WebError(f'"deal_number" and "plays" go together, each a whole number, got {brief(body)}')
        with game.lock:
            deal = game.deal
            now = [len(game.session.deals), len(deal.plays)]
            if "plays" in body and shown != now:
                raise StaleError(f"this page shows deal {shown[0]} after {shown[1]} card(s), the game is at deal "
                                 f"{now[0]} after {now[1]}: it was played on elsewhere; reload the game")
            if deal.done:
                more = "ask for the next deal" if not game.session.over else "the session is over"
                raise WebError(f"the deal is over; no card can be played ({more})")
            if deal.to_act != HUMAN:
                raise WebError(f"seat {deal.to_act} is to act, not you")
            work, auto = deal.copy(), list(game.auto)
            before = len(work.plays)
            work.play(card)  # the engine refuses an illegal or unknown card, naming what is legal
            auto.append(False)
            game.play_on(work, auto)
            game.commit(work, auto)
            return self.state(game, new_plays=len(work.plays) - before)

    def next_deal(self, game_id: str) -> dict[str, Any]:
        """Start the session's next deal (balances and board carried) and play up to seat 0's first choice."""
        game = self._get(game_id)
        with game.lock:
            session = game.session
            if not game.deal.done:
                raise WebError("the deal is not over; play it out before the next deal")
            if session.over:
                raise WebError(f"the session is over after {len(session.deals)} deal(s); start a new game")
            dealt = session.next_deal()
            work, auto = dealt.copy(), []
            try:
                game.play_on(work, auto)
            except BaseException:
                session.deals.pop()  # a failed request leaves the session as it was
                raise
            game.commit(work, auto)
            return self.state(game, new_plays=len(work.plays))

    def hint(self, game_id: str) -> dict[str, Any]:
        """The shipped network's probabilities (when it fits the game) and ``pimc``'s choice for seat 0 now."""
        game = self._get(game_id)
        with game.lock:
            deal = game.deal
            if deal.done or deal.to_act != HUMAN:
                raise WebError("a hint is given only when you are to choose a card")
            view = seat_view(deal, HUMAN)
            network, reason = None, None
            shown = self.shelf.hint_model
            if shown is None:
                reason = "no network hint: the shipped network is not installed (it is package data of popejoan)"
            else:
                real = self.shelf.resolve(shown)
                reason = self.shelf.mismatch(real, deal.rules, deal.players)
                if reason is None:
                    probs = policy_probs(self.shelf.policy(real), view)
                    network = {"model": shown, "probs": probs, "best": max(probs, key=probs.__getitem__)}
            seed = np.random.SeedSequence(game.seeds.entropy, spawn_key=(*game.seeds.spawn_key, 1 << 20,
                                                                         len(game.session.deals), len(deal.plays)))
            pimc = make_player(HINT_SEARCH, seed=_int_seed(seed))
            return {"network": network, "network_reason": reason, "pimc": {"best": CARD_NAMES[pimc.act(view)]}}

    # ----------------------------------------------------------------- the state
    def state(self, game: Game, new_plays: int) -> dict[str, Any]:
        """The STATE of the contract (web_spec.md) for seat 0."""
        deal, session = game.deal, game.session
        view = seat_view(deal, HUMAN)
        n = deal.players
        names = ["you"] + [p.name for p in game.opponents]
        choosing = not deal.done and deal.to_act == HUMAN
        history = [
            {"seat": seat, "card": CARD_NAMES[card], "lead": lead, "auto": auto}
            for (seat, card, lead), auto in zip(history_of(deal, HUMAN), game.auto)
        ]
        played: dict[str, list[str]] = {s: [] for s in SUITS}
        for card in sorted(c for _, c in deal.plays):
            played[SUITS[card // 13]].append(CARD_NAMES[card])
        known = view.dead_hand if view.dead_hand is not None else view.known_dead
        why = "over" if deal.done else ("due" if deal.forced >= 0 else "lead") if choosing else "waiting"
        return {
            "game_id": game.game_id,
            "players": n,
            "rules": deal.rules.to_dict(),
            "deal_number": len(session.deals),
            "deals": session.length,
            "session_over": session.over,
            "dealer": deal.dealer,
            "eldest": deal.eldest,
            "leader": deal.leader if deal.leader >= 0 else None,
            "to_act": deal.to_act if not deal.done else None,
            "turnup": CARD_NAMES[deal.turnup],
            "trumps": SUITS[deal.trumps],
            "board": dict(zip(COMPARTMENTS, deal.board)),
            "seats": [
                {"seat": s, "name": names[s], "cards_left": deal.hand_sizes[s], "balance": deal.balances[s],
                 "is_dealer": s == deal.dealer, "is_leader": s == deal.leader}
                for s in range(n)
            ],
            "hand": names_of(deal.hands[HUMAN]),
            "legal": names_of(deal.legal_actions()) if choosing else [],
            "why": why,
            "due": CARD_NAMES[deal.forced] if choosing and deal.forced >= 0 else None,
            "history": history,
            "new_plays": new_plays,
            "played_by_suit": played,
            "known_dead": names_of(known),
            "over": deal.done,
            "winner": deal.winner,
            "awards": [[cause, seat, COMPARTMENTS[comp], x] for cause, seat, comp, x in deal.awards],
            "payments": [list(p) for p in deal.payments],
            "delta": deal.delta if deal.done else None,
        }


def _int_seed(seeds: np.random.SeedSequence) -> int:
    """A player's integer seed drawn from a SeedSequence."""
    return int(seeds.generate_state(1, np.uint64)[0] >> np.uint64(1))


def _kind(value: object) -> str:
    """What a JSON value is, for messages."""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)

