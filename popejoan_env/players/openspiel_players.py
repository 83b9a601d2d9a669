"""OpenSpiel's algorithms at a popejoan table: ``openspiel_ismcts`` and ``openspiel_nfsp``, and a popejoan
policy as an OpenSpiel policy.

| spec | plays |
|---|---|
| ``openspiel_ismcts:simulations=100,uct_c=10`` | OpenSpiel's information-set MCTS (``ismcts.ISMCTSBot``) searching the game ``python_pope_joan`` from the seat's view: worlds from ``resample_from_infostate`` (our ``WorldSampler``), one random rollout per simulation |
| ``openspiel_nfsp:path=nfsp.pt`` | the average policy of OpenSpiel's NFSP (``open_spiel.python.pytorch.nfsp``) trained on the full game (``benchmarks/bench_openspiel.py train-nfsp``), a card drawn from it |

Both search or read the OpenSpiel game ``python_pope_joan``, which the adapter
``popejoan_env.envs.openspiel_game`` registers when it is imported (this module sits a layer below the adapters
and cannot import it: import the adapter first, as ``benchmarks/bench_openspiel.py`` does; the players say so
when they are made without it).  A search starts from a world in which the observer is seat 0 and the view's
dealer is the dealer, so it needs no absolute seats; its board starts from the dressing alone, as a tournament
deal does.

**Bounds.**  ``simulations`` is an integer 1..``MAX_SIMULATIONS``, ``uct_c`` a finite number in
(0, ``MAX_UCT_C``], both checked when the player is made.  An NFSP checkpoint is read as carefully as a model file
(``model_file``): a regular file of at most ``MAX_NFSP_BYTES``, in ``torch.save``'s zip format and read with
``weights_only=True`` (no pickle that runs code), exactly the four fields ``save_nfsp`` writes, the networks' shape
(the v2 observation in, the 52 card ids out, at most ``MAX_NFSP_LAYERS`` hidden layers of at most
``MAX_NFSP_WIDTH`` units, 3–8 seats) checked and their size counted before any array is made, and every tensor a
finite float tensor of its layer's shape stored in its own place; anything else is a one-line ``ModelFileError``.
The networks then play in numpy (``relu`` layers and a linear output, as ``open_spiel.python.pytorch.dqn.MLP``).
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.checks import as_int, brief
from popejoan_env.errors import MissingDependencyError, PopeJoanError
from popejoan_env.engine import Deal
from popejoan_env.files import replacing
from popejoan_env.nets.model_file import MAX_WEIGHT_ELEMENTS, ModelFileError, linear, load_weights, mlp_values
from popejoan_env.observation import OBS_SIZE, encode_view
from popejoan_env.players.base import ScriptedPlayer, UnknownPlayerError
from popejoan_env.rules import MAX_PLAYERS, MIN_PLAYERS
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.seat_view import SeatView

try:
    import pyspiel
    from open_spiel.python import policy as openspiel_policy
except ImportError:
    raise MissingDependencyError("the OpenSpiel players need OpenSpiel: pip install 'popejoan[openspiel]'") from None

GAME_NAME = "python_pope_joan"
"""The OpenSpiel game the players search (registered by ``popejoan_env.envs.openspiel_game``)."""
MAX_SIMULATIONS = 65_536
"""Most ISMCTS simulations a decision (``openspiel_ismcts:simulations=N``); about 5 ms each on one core."""
MAX_UCT_C = 1_000_000
"""Largest UCT exploration constant (``openspiel_ismcts:uct_c=C``; returns are counters, tens a deal)."""
MAX_NFSP_BYTES = 64 * 2**20
"""Largest ``openspiel_nfsp`` checkpoint read (the 4-seat 256,256 networks of ``train-nfsp`` take 6.5 MB)."""
MAX_NFSP_LAYERS = 16
"""Most hidden layers of an ``openspiel_nfsp`` network."""
MAX_NFSP_WIDTH = 4096
"""Widest hidden layer of an ``openspiel_nfsp`` network."""
_NFSP_FIELDS = ("actions", "hidden", "inputs", "models")
"""The fields ``save_nfsp`` writes, and the only ones a checkpoint may have."""


def _registered() -> None:
    """Refuse a player of ``GAME_NAME`` while the adapter that registers it is not imported."""
    if GAME_NAME not in pyspiel.registered_names():
        raise UnknownPlayerError(f"the OpenSpiel game {GAME_NAME} is not registered: import "
                                 "popejoan_env.envs.openspiel_game before making an OpenSpiel player")


def load_game(view: SeatView) -> Any:
    """The OpenSpiel game of a view's table and rules (the preset and every option as game parameters)."""
    if view.rules.pack != "full":
        raise PopeJoanError(f"the OpenSpiel players play the full pack (game {GAME_NAME}), not pack={view.rules.pack}")
    params: dict[str, Any] = {"players": view.players, "dealer": view.dealer}
    for key, value in view.rules.to_dict().items():
        if key == "dressing":
            params[key] = "/".join(str(v) for v in value.values())
        elif key not in ("preset", "pack"):
            params[key] = value  # a bool and an int are game parameters of those types, the rest text
    try:
        return pyspiel.load_game(GAME_NAME, params)
    except pyspiel.SpielError as err:
        if "Unknown game" in str(err):
            raise PopeJoanError(f"the OpenSpiel game {GAME_NAME} is not registered: import "
                                f"popejoan_env.envs.openspiel_game before playing an OpenSpiel player") from None
        raise


def state_of_view(game: Any, view: SeatView, rng: np.random.Generator) -> Any:
    """A state of ``game`` the observer (seat 0) cannot tell from its view: a world of ``WorldSampler``, dealt
    card by card as the game's chance nodes deal, and the decisions of the view's history replayed."""
    world = WorldSampler(view).sample(rng)
    played = view.played_by
    hands = [world.hands[k] | played[k] for k in range(view.players)]
    state = game.new_initial_state()
    piles = [[c for c in range(52) if (h >> c) & 1] for h in hands]
    dead = list(world.dead)
    for slot in game.slots:
        state.apply_action(dead.pop(0) if slot < 0 else piles[slot].pop(0))
    history = view.history
    while len(state.deal.plays) < len(history):
        state.apply_action(history[len(state.deal.plays)].card)
    if state.current_player() != 0:
        raise PopeJoanError("the view's history does not lead to a decision of the observer")
    return state


class IsmctsPlayer(ScriptedPlayer):
    """OpenSpiel's information-set MCTS from the seat's view: ``simulations`` per decision, UCT constant ``uct_c``
    (returns are counters, tens per deal), the most visited card."""

    def __init__(self, seed: int | None = None, *, simulations: int = 100, uct_c: float = 10.0) -> None:
        count = as_int(simulations)
        if count is None or not 1 <= count <= MAX_SIMULATIONS:
            raise UnknownPlayerError(f"openspiel_ismcts: simulations must be an integer 1..{MAX_SIMULATIONS:,}, "
                                     f"got {brief(simulations)}")
        if isinstance(uct_c, bool) or not isinstance(uct_c, (int, float, np.integer, np.floating)) \
                or not math.isfinite(uct_c) or not 0 < uct_c <= MAX_UCT_C:
            raise UnknownPlayerError(f"openspiel_ismcts: uct_c must be a finite number above 0 and at most "
                                     f"{MAX_UCT_C:,}, got {brief(uct_c)}")
        _registered()
        from open_spiel.python.algorithms import ismcts, mcts

        self._ismcts, self._mcts = ismcts, mcts
        self.simulations = count
        self.uct_c = float(uct_c)
        params = [f"simulations={count}"] if count != 100 else []
        params += [f"uct_c={self.uct_c:g}"] if self.uct_c != 10.0 else []
        self.name = "openspiel_ismcts" + (":" + ",".join(params) if params else "")
        self._games: dict[tuple[Any, int, int], Any] = {}
        super().__init__(seed)

    def choose(self, view: SeatView) -> int:
        """The card the search visits most."""
        key = (view.rules, view.players, view.dealer)
        game = self._games.get(key)
        if game is None:
            game = self._games[key] = load_game(view)
        state = state_of_view(game, view, self.rng)
        random_state = np.random.RandomState(int(self.rng.integers(2**31)))
        bot = self._ismcts.ISMCTSBot(
            game, self._mcts.RandomRolloutEvaluator(1, random_state), self.uct_c, self.simulations,
            random_state=random_state)
        bot.set_resampler(lambda st, player: st.resample_from_infostate(player, self.rng.random))
        card = int(bot.step(state))
        if card not in view.legal:
            raise PopeJoanError(f"openspiel_ismcts chose {card}, not a legal card {list(view.legal)}")
        return card


Layers = list[tuple[np.ndarray, np.ndarray]]
"""A network as (weight [in, out], bias [out]) per layer, float32: ``relu`` after every layer but the last."""


def read_nfsp(path: str) -> list[Layers]:
    """The average-policy networks of an NFSP checkpoint (``save_nfsp``), one per seat of the training game,
    every field, shape and tensor checked (the module's **Bounds**); a ``ModelFileError`` names what is wrong."""
    try:
        info = os.stat(path)
    except OSError as err:
        raise ModelFileError(f"openspiel_nfsp cannot read {path!r}: {err.strerror or err}") from None
    except ValueError as err:  # a NUL in the path
        raise ModelFileError(f"openspiel_nfsp cannot read {brief(path)}: {err}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ModelFileError(f"openspiel_nfsp cannot read {path!r}: not a regular file")
    if info.st_size > MAX_NFSP_BYTES:
        raise ModelFileError(f"{path}: an NFSP checkpoint of {info.st_size:,} bytes; at most {MAX_NFSP_BYTES:,} are "
                             "read (MAX_NFSP_BYTES)")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_NFSP_BYTES + 1)
    except OSError as err:
        raise ModelFileError(f"openspiel_nfsp cannot read {path!r}: {err.strerror or err}") from None
    if len(data) > MAX_NFSP_BYTES:
        raise ModelFileError(f"{path}: the NFSP checkpoint grew past {MAX_NFSP_BYTES:,} bytes while read")
    saved = load_weights(data, path, "the NFSP checkpoint's contents")
    if not isinstance(saved, Mapping) or sorted(map(str, saved)) != list(_NFSP_FIELDS):
        found = sorted(map(str, saved))[:8] if isinstance(saved, Mapping) else type(saved).__name__
        raise ModelFileError(f"{path}: an NFSP checkpoint holds exactly {list(_NFSP_FIELDS)} (save_nfsp), "
                             f"got {brief(found)}")
    inputs, actions, hidden, models = (saved[k] for k in ("inputs", "actions", "hidden", "models"))
    if as_int(inputs) != OBS_SIZE:
        raise ModelFileError(f"{path}: inputs must be {OBS_SIZE} (the v2 observation), got {brief(inputs)}")
    if as_int(actions) != NUM_CARD_IDS:
        raise ModelFileError(f"{path}: actions must be {NUM_CARD_IDS} (the card ids), got {brief(actions)}")
    if not isinstance(hidden, (list, tuple)) or len(hidden) > MAX_NFSP_LAYERS or not all(
            as_int(w) is not None and 1 <= w <= MAX_NFSP_WIDTH for w in hidden):
        raise ModelFileError(f"{path}: hidden must be a list of at most {MAX_NFSP_LAYERS} layer widths "
                             f"1..{MAX_NFSP_WIDTH:,}, got {brief(hidden)}")
    if not isinstance(models, (list, tuple)) or not MIN_PLAYERS <= len(models) <= MAX_PLAYERS:
        found = f"{len(models)} networks" if isinstance(models, (list, tuple)) else f"a {type(models).__name__}"
        raise ModelFileError(f"{path}: models must be a list of one network per seat, {MIN_PLAYERS} to "
                             f"{MAX_PLAYERS}, got {found}")
    sizes = [OBS_SIZE, *(int(w) for w in hidden), NUM_CARD_IDS]
    total = len(models) * mlp_values(sizes)
    if total > MAX_WEIGHT_ELEMENTS:
        raise ModelFileError(f"{path}: {len(models)} networks of widths {sizes} hold {total:,} values; at most "
                             f"{MAX_WEIGHT_ELEMENTS:,} are read (MAX_WEIGHT_ELEMENTS)")
    names = [f"model.{k}.0" for k in range(len(hidden))] + [f"model.{len(hidden)}"]
    keys = sorted(f"{n}.{part}" for n in names for part in ("weight", "bias"))
    networks = []
    for seat, state in enumerate(models):
        if not isinstance(state, Mapping) or sorted(map(str, state)) != keys:
            found = sorted(map(str, state))[:8] if isinstance(state, Mapping) else type(state).__name__
            raise ModelFileError(f"{path}: the network of seat {seat} must hold {keys} "
                                 f"(an MLP of hidden widths {list(sizes[1:-1])}), got {brief(found)}")
        layers = []
        for name, (fan_in, fan_out) in zip(names, zip(sizes, sizes[1:])):
            weight, bias = linear(state, name, f"{path} (seat {seat})")
            if weight.shape != (fan_in, fan_out):
                raise ModelFileError(f"{path}: {name}.weight of seat {seat} has shape "
                                     f"{(weight.shape[1], weight.shape[0])}, not {(fan_out, fan_in)}")
            layers.append((weight, bias))
        networks.append(layers)
    return networks


def forward(layers: Layers, x: np.ndarray) -> np.ndarray:
    """The network's output (logits) for one input, as ``open_spiel.python.pytorch.dqn.MLP`` computes it."""
    for weight, bias in layers[:-1]:
        x = np.maximum(x @ weight + bias, 0.0)
    weight, bias = layers[-1]
    return x @ weight + bias


class NfspPlayer(ScriptedPlayer):
    """The average policies of NFSP agents (OpenSpiel's PyTorch NFSP), one per seat of the training game (whose
    dealer is seat 0), saved by ``save_nfsp``: the agent of the seat at the view's distance from the dealer, a
    card drawn from its probabilities over the legal cards, the v2 observation as input."""

    def __init__(self, seed: int | None = None, *, path: str = "") -> None:
        if not isinstance(path, str) or not path:
            raise UnknownPlayerError("openspiel_nfsp needs path=<the .pt file benchmarks/bench_openspiel.py "
                                     "train-nfsp writes>")
        try:
            import torch  # noqa: F401  (torch.load reads the checkpoint)
        except ImportError:
            raise MissingDependencyError("openspiel_nfsp needs torch: pip install 'popejoan[train]'") from None
        self.networks = read_nfsp(path)
        self.players = len(self.networks)
        self.name = f"openspiel_nfsp:path={path}"
        super().__init__(seed)

    def probabilities(self, view: SeatView) -> dict[int, float]:
        """The average policy's probability of each legal card."""
        if view.players != self.players:
            raise PopeJoanError(f"{self.name} was trained at {self.players} seats, not {view.players}")
        network = self.networks[(-view.dealer) % view.players]  # the training game's seat with this dealer
        logits = forward(network, encode_view(view))
        legal = np.array(view.legal)
        z = logits[legal].astype(np.float64) - float(logits[legal].max())
        p = np.exp(z) / np.exp(z).sum()
        return {int(c): float(x) for c, x in zip(legal, p)}

    def choose(self, view: SeatView) -> int:
        """A card drawn from the average policy."""
        probs = self.probabilities(view)
        cards = list(probs)
        return int(cards[int(self.rng.choice(len(cards), p=list(probs.values())))])


NFSP_SPARE_BYTES = 2**20
"""What a checkpoint holds beside its networks' float32 values, at the most (``check_nfsp_networks``)."""


def check_nfsp_networks(players: int, hidden: Sequence[int]) -> None:
    """Refuse ``players`` networks of hidden widths ``hidden`` that would make a checkpoint ``read_nfsp`` does not
    read back (its layers, widths, values and bytes); a PopeJoanError naming the limit, before any is trained."""
    if len(hidden) > MAX_NFSP_LAYERS or not all(1 <= w <= MAX_NFSP_WIDTH for w in hidden):
        raise PopeJoanError(f"NFSP networks have at most {MAX_NFSP_LAYERS} hidden layers of widths "
                            f"1..{MAX_NFSP_WIDTH:,} (MAX_NFSP_LAYERS, MAX_NFSP_WIDTH), got {list(hidden)}")
    values = players * mlp_values([OBS_SIZE, *hidden, NUM_CARD_IDS])
    if values > MAX_WEIGHT_ELEMENTS or 4 * values + NFSP_SPARE_BYTES > MAX_NFSP_BYTES:
        raise PopeJoanError(f"{players} NFSP networks of hidden widths {list(hidden)} hold {values:,} values, more "
                            f"than a checkpoint read back holds (MAX_WEIGHT_ELEMENTS {MAX_WEIGHT_ELEMENTS:,}, "
                            f"MAX_NFSP_BYTES {MAX_NFSP_BYTES:,})")


def save_nfsp(path: str, networks: list[Any], *, inputs: int, hidden: list[int], actions: int) -> None:
    """Write the average-policy networks of NFSP agents (seat 0 first) as ``NfspPlayer`` reads them (atomically)."""
    import torch

    check_nfsp_networks(len(networks), hidden)

    with replacing(path) as tmp:
        torch.save({"models": [n.state_dict() for n in networks], "inputs": inputs, "hidden": list(hidden),
                    "actions": actions}, tmp)


class PopejoanPolicy(openspiel_policy.Policy):
    """A popejoan policy (``evaluate.exploitability.Policy``: the deal and the seat to act -> card probabilities) as
    an OpenSpiel policy of ``python_pope_joan`` or ``python_pope_joan_small``."""

    def __init__(self, game: Any, policy: Callable[[Deal, int], Mapping[int, float]]) -> None:
        super().__init__(game, list(range(game.num_players())))
        self.policy = policy

    def action_probabilities(self, state: Any, player_id: int | None = None) -> Mapping[int, float]:
        """The probability of each legal card of the seat to act; a node with one legal action (the stop of a deal
        without a decision) plays it without asking the policy."""
        legal = state.legal_actions()
        if len(legal) == 1:
            return {legal[0]: 1.0}
        return dict(self.policy(state.deal, state.current_player()))
