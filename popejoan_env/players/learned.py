"""Learned players: a network saved in a model file, played through the player protocol.

``LearnedPlayer`` encodes the ``SeatView`` it is handed and plays the card of its ``nets.policy.Policy`` (the
numpy forward of the network, read from the file with every field and tensor checked: ``nets.model_file``,
``nets.sb3_zip``).  The default is the **deterministic** policy: the legal card with the highest logit.

A model for another observation version or — when the caller says which rules it will play — other rules is
refused with a ``ModelMismatchError``.  A caller that does not say is still protected: the ``SeatView`` carries
the rules, and ``act`` refuses a game under rules the model was not trained for.

>>> player = load_player("models/ppo_modern_4p/model.zip", seed=0)   # doctest: +SKIP
>>> card = player.act(aec_env.seat_view(agent))                       # doctest: +SKIP
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

from popejoan_env.checks import as_seed
from popejoan_env.moved import moved_name
from popejoan_env.nets.policy import Policy, load_policy
from popejoan_env.observation import encode_view, play_rules
from popejoan_env.players.base import legal_of
from popejoan_env.rules import Rules, RulesLike
from popejoan_env.seat_view import SeatView

if TYPE_CHECKING:
    from popejoan_env.batch import BatchDeals

__all__ = ["LearnedPlayer", "load_player"]


class LearnedPlayer:
    """A saved model at a seat: it encodes the ``SeatView`` it is handed and plays the policy's card."""

    def __init__(self, policy: Policy, seed: int | None = None, *, deterministic: bool = True,
                 name: str | None = None, rng: np.random.Generator | None = None) -> None:
        self.policy = policy
        self.deterministic = deterministic
        if name is None:
            name = os.path.splitext(os.path.basename(policy.path))[0]
            if name == "model":  # models/<run>/model.zip: the run name says more
                name = os.path.basename(os.path.dirname(os.path.abspath(policy.path))) or "model"
        self.name = name
        self.rng = rng if rng is not None else np.random.default_rng(as_seed(seed))
        self._checked: Rules | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        """The model's metadata (observation version, rules, training run ...)."""
        return self.policy.metadata

    def reset(self, seed: int | None = None) -> None:
        """Restart the player's generator (used only when not deterministic)."""
        self.rng = np.random.default_rng(as_seed(seed))

    def act(self, view: SeatView) -> int:
        """The card to play: the only legal one at once, else the policy's (best logit, or a masked-softmax sample)."""
        legal = legal_of(view, self.name)
        if len(legal) == 1:
            return legal[0]
        self._check(view.rules)
        return self.policy.pick(encode_view(view), legal, self.rng, deterministic=self.deterministic)

    def act_batch(self, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The card of the seat to act in each deal ``rows`` of ``batch`` (``legal``: their legal cards), in one
        encoding and one forward: what ``act`` gives row by row, with the same draws of the generator."""
        from popejoan_env.batch_observation import encode_batch  # the batch engine: only where a batch is played

        self._check(batch.rules)
        return self.policy.choose(encode_batch(batch, rows, batch.to_act[rows]), legal, self.rng,
                                  deterministic=self.deterministic)

    def _check(self, rules: Rules) -> None:
        """Refuse a game under rules the model was not trained for (checked once per rules object)."""
        if rules is not self._checked:
            # Rules shown to a seat (decoded observations carry only those) must be the model's.
            if play_rules(rules) not in self.policy.play_rules:
                self.policy.check(rules)
            self._checked = rules

    def __repr__(self) -> str:
        return f"<LearnedPlayer {self.name} ({self.policy.path})>"


def load_player(path: str | os.PathLike[str], seed: int | None = None,
                *,
                rules: RulesLike = None, deterministic: bool = True) -> LearnedPlayer:
    """A player from a model file; pass ``rules`` to refuse a model trained for other rules.

    Reads no pickle that can run code (JSON metadata, weights through
    ``torch.load(weights_only=True)``), so any file may be given; everything is
    checked here, and a bad file raises ``ModelFileError``.  ``MaskablePPO.load``
    unpickles the same file and can execute code from it: use it on trusted files only.
    """
    return LearnedPlayer(load_policy(path, rules=rules), seed=seed, deterministic=deterministic)


def __getattr__(name: str) -> Any:
    raise moved_name(__name__, name)  # the network and file helpers moved to nets/ in 0.3.0
