"""OpenSpiel's algorithms at a popejoan table: ``openspiel_ismcts`` and ``openspiel_nfsp``, and a popejoan
policy as an OpenSpiel policy.

| spec | plays |
|---|---|
| ``openspiel_ismcts:simulations=100,uct_c=10`` | OpenSpiel's information-set MCTS (``ismcts.ISMCTSBot``) searching the game ``python_pope_joan`` from the seat's view: worlds from ``resample_from_infostate`` (our ``WorldSampler``), one random rollout per simulation |
| ``openspiel_nfsp:path=nfsp.pt`` | the average policy of OpenSpiel's NFSP (``open_spiel.python.pytorch.nfsp``) trained on the full game (``benchmarks/bench_openspiel.py train-nfsp``), a card drawn from it |

Both search or read the OpenSpiel game ``python_pope_joan``, which the adapter
``popejoan_env.envs.openspiel_game`` registers when it is imported (this module sits a layer below the adapters
and cannot import it: import the adapter first, as ``benchmarks/bench_openspiel.py`` does; the players say so
when it has not been).  A search starts from a world in which the observer is seat 0 and the view's dealer is
the dealer, so it needs no absolute seats; its board starts from the dressing alone, as a tournament deal does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from popejoan_env.errors import MissingDependencyError, PopeJoanError
from popejoan_env.engine import Deal
from popejoan_env.observation import encode_view
from popejoan_env.players.base import ScriptedPlayer, UnknownPlayerError
from popejoan_env.search.worlds import WorldSampler
from popejoan_env.seat_view import SeatView

try:
    import pyspiel
    from open_spiel.python import policy as openspiel_policy
except ImportError:
    raise MissingDependencyError("the OpenSpiel players need OpenSpiel: pip install 'popejoan[openspiel]'") from None

GAME_NAME = "python_pope_joan"
"""The OpenSpiel game the players search (registered by ``popejoan_env.envs.openspiel_game``)."""


def load_game(view: SeatView) -> Any:
    """The OpenSpiel game of a view's table and rules (the preset and every option as game parameters)."""
    if view.rules.pack != "full":
        raise PopeJoanError(f"the OpenSpiel players play the full pack (game {GAME_NAME}), not pack={view.rules.pack}")
    options = view.rules.to_dict()
    params: dict[str, Any] = {"players": view.players, "dealer": view.dealer}
    for key, value in options.items():
        if key == "dressing":
            params[key] = "/".join(str(v) for v in value.values())
        elif key not in ("preset", "pack"):
            params[key] = str(value).lower() if isinstance(value, bool) else str(value)
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

    def __init__(self, seed: int | None = None, simulations: int = 100, uct_c: float = 10.0) -> None:
        if not isinstance(simulations, int) or simulations < 1 or not isinstance(uct_c, (int, float)) or uct_c <= 0:
            raise UnknownPlayerError(f"openspiel_ismcts needs simulations >= 1 and uct_c > 0, got {simulations!r} "
                                     f"and {uct_c!r}")
        from open_spiel.python.algorithms import ismcts, mcts

        self._ismcts, self._mcts = ismcts, mcts
        self.simulations = simulations
        self.uct_c = float(uct_c)
        params = [f"simulations={simulations}"] if simulations != 100 else []
        params += [f"uct_c={uct_c:g}"] if uct_c != 10.0 else []
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


class NfspPlayer(ScriptedPlayer):
    """The average policies of NFSP agents (OpenSpiel's PyTorch NFSP), one per seat of the training game (whose
    dealer is seat 0), saved by ``save_nfsp``: the agent of the seat at the view's distance from the dealer, a
    card drawn from its probabilities over the legal cards, the v2 observation as input."""

    def __init__(self, seed: int | None = None, path: str = "") -> None:
        if not path:
            raise UnknownPlayerError("openspiel_nfsp needs path=<the .pt file benchmarks/bench_openspiel.py "
                                     "train-nfsp writes>")
        try:
            import torch
            from open_spiel.python.pytorch import dqn
        except ImportError:
            raise MissingDependencyError("openspiel_nfsp needs torch: pip install 'popejoan[train]'") from None
        try:
            saved = torch.load(path, weights_only=True, map_location="cpu")
        except (OSError, RuntimeError) as err:
            raise UnknownPlayerError(f"openspiel_nfsp cannot read {path!r}: {err}") from None
        self._torch = torch
        self.networks = []
        for state_dict in saved["models"]:
            network = dqn.MLP(int(saved["inputs"]), [int(x) for x in saved["hidden"]], int(saved["actions"]))
            network.load_state_dict(state_dict)
            network.eval()
            self.networks.append(network)
        self.players = len(self.networks)
        self.name = f"openspiel_nfsp:path={path}"
        super().__init__(seed)

    def probabilities(self, view: SeatView) -> dict[int, float]:
        """The average policy's probability of each legal card."""
        if view.players != self.players:
            raise PopeJoanError(f"{self.name} was trained at {self.players} seats, not {view.players}")
        network = self.networks[(-view.dealer) % view.players]  # the training game's seat with this dealer
        with self._torch.no_grad():
            logits = network(self._torch.from_numpy(encode_view(view)).unsqueeze(0))[0].numpy()
        legal = np.array(view.legal)
        z = logits[legal].astype(np.float64) - float(logits[legal].max())
        p = np.exp(z) / np.exp(z).sum()
        return {int(c): float(x) for c, x in zip(legal, p)}

    def choose(self, view: SeatView) -> int:
        """A card drawn from the average policy."""
        probs = self.probabilities(view)
        cards = list(probs)
        return int(cards[int(self.rng.choice(len(cards), p=list(probs.values())))])


def save_nfsp(path: str, networks: list[Any], *, inputs: int, hidden: list[int], actions: int) -> None:
    """Write the average-policy networks of NFSP agents (seat 0 first) as ``NfspPlayer`` reads them."""
    import torch

    torch.save({"models": [n.state_dict() for n in networks], "inputs": inputs, "hidden": list(hidden),
                "actions": actions}, path)


class PopejoanPolicy(openspiel_policy.Policy):
    """A popejoan policy (``evaluate.exploitability.Policy``: the deal and the seat to act -> card probabilities) as
    an OpenSpiel policy of ``python_pope_joan`` or ``python_pope_joan_small``."""

    def __init__(self, game: Any, policy: Callable[[Deal, int], Mapping[int, float]]) -> None:
        super().__init__(game, list(range(game.num_players())))
        self.policy = policy

    def action_probabilities(self, state: Any, player_id: int | None = None) -> Mapping[int, float]:
        """The probability of each legal card of the seat to act."""
        return dict(self.policy(state.deal, state.current_player()))
