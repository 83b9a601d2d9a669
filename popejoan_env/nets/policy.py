"""A network of a model file, run in numpy: ``Policy``, the one forward of each network kind and the one way its
cards are picked.

The actor network is read from the model file's ``policy.pth`` (``model_file.read_model``, which runs no pickle
and checks every field and tensor) and run in numpy, a few µs per decision: playing needs no Stable-Baselines3.
``Policy`` is the forward of an MLP or of the ``suits`` actor, and ``Policy.choose`` the one way its cards are
picked: the learned player's ``act`` and ``act_batch`` (``players.learned``), the SB3 batch vec env's opponents and
``pimc_net``'s search all go through them.  The default is the **deterministic** policy: the legal card with the
highest logit.

A zip Stable-Baselines3 saved the ordinary way (``model.save(path)``, no ``popejoan.json``) loads too:
``nets.sb3_zip`` reads what it holds (the policy class, the spaces, the actor's shape) and refuses what cannot be
played.  A model for another observation version or other rules than the caller says it will play is refused with
a ``ModelMismatchError``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.nets import suits
from popejoan_env.nets.model_file import (
    ACTIVATIONS, WEIGHTS_NAME, ModelFileError, ModelMismatchError, check_metadata, mlp_actor, model_path, read_model,
    tensor, trained_rules,
)
from popejoan_env.nets.sb3_zip import read_plain_model
from popejoan_env.observation import OBS_SIZE, play_rules
from popejoan_env.rules import Rules, RulesLike, resolve_rules

__all__ = ["Policy", "load_policy", "policy_from_state", "read_any_model", "read_metadata"]


class Policy:
    """The actor of a saved MaskablePPO model, evaluated in numpy."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]], head: tuple[np.ndarray, np.ndarray] | None,
                 activation: str, metadata: dict[str, Any], path: str,
                 actor: suits.NumpyActor | None = None) -> None:
        self.layers = layers
        self.head = head
        self.actor = actor
        """The suits actor (``layers`` and ``head`` are then empty), or None for an MLP."""
        self.activation = ACTIVATIONS[activation]
        self.metadata = metadata
        self.path = path
        self.known_rules = trained_rules(metadata)
        """Every rules the model was trained for (one, or several presets)."""
        self.rules = self.known_rules[0]
        """The first of them (the only one of most models)."""
        self.play_rules = tuple(play_rules(rules) for rules in self.known_rules)
        """The options of each a seat sees (``observation.play_rules``): what a game must match to be played."""

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Action logits (52, or [batch, 52]) for observations ``[OBS_SIZE]`` or ``[batch, OBS_SIZE]``."""
        if self.actor is not None:
            return self.actor.logits(obs)
        x = np.asarray(obs, dtype=np.float32)
        for w, b in self.layers:
            x = self.activation(x @ w + b)
        w, b = self.head
        return x @ w + b

    def pick(self, obs: np.ndarray, legal: Any, rng: np.random.Generator | None = None,
             *,
             deterministic: bool = True) -> int:
        """A legal card id (``legal``: the card ids): the best logit, or a sample of the masked softmax when not
        deterministic; ``choose`` for one observation."""
        row = np.zeros((1, NUM_CARD_IDS), dtype=bool)
        row[0, np.asarray(legal, dtype=np.intp)] = True
        return int(self.choose(np.asarray(obs, dtype=np.float32).reshape(1, -1), row, rng,
                   deterministic=deterministic)[0])

    def choose(self, obs: np.ndarray, legal: np.ndarray, rng: np.random.Generator | None = None,
               *,
               deterministic: bool = True) -> np.ndarray:
        """A legal card id per row of ``obs`` [k, OBS_SIZE] (``legal``: [k, 52] bool), in one forward: the best
        legal logit (the lowest card id of a tie), or with ``rng`` and not ``deterministic`` a sample of the
        masked softmax, one uniform per row in order, none for a row with one legal card."""
        z = np.where(legal, self.logits(obs), -np.inf)
        if not np.isfinite(z[legal]).all():
            # Finite weights can still overflow float32 (a diverged run): an infinite or NaN logit picks no card
            # (the softmax is NaN: card 0, legal or not), so it is refused, as weights that are not finite are.
            raise ModelFileError(f"{self.path}: the network's logits are not finite for this observation (weights "
                                 "too large for float32): it cannot pick a card")
        out = np.argmax(z, axis=1)
        if deterministic or rng is None:
            return out
        multi = np.flatnonzero(legal.sum(axis=1) > 1)
        if len(multi):
            zm = z[multi]
            p = np.exp(zm - zm.max(axis=1, keepdims=True)).astype(np.float64)
            cdf = p.cumsum(axis=1)
            out[multi] = np.argmax(cdf > rng.random(len(multi))[:, None] * cdf[:, -1:], axis=1)
        return out

    def check(self, wanted: Rules) -> None:
        """Refuse to play rules other than those the model was trained for."""
        if wanted not in self.known_rules:
            if self.metadata.get("plain_sb3"):
                raise ModelMismatchError(
                    f"model {self.path} is a plain Stable-Baselines3 zip: it does not record its rules, so it "
                    f"plays the presets, not the rules to be played ({_diff(self.rules, wanted)}); record the "
                    "rules it was trained for with popejoan_env.nets.sb3_zip.adopt(path, rules=..., players=...)"
                )
            nearest = min(self.known_rules, key=lambda known: len(_diff(known, wanted).split(", ")))
            names = " and ".join(repr(known.name) for known in self.known_rules)
            raise ModelMismatchError(
                f"model {self.path} was trained for rules {names} "
                f"({_diff(nearest, wanted)}), not for the rules to be played ({wanted.name!r}); "
                "train a model for these rules or play the rules it knows"
            )


def _diff(have: Rules, want: Rules) -> str:
    a, b = have.to_dict(), want.to_dict()
    parts = [f"{k}={a[k]!r} vs {b[k]!r}" for k in a if k != "preset" and a[k] != b[k]]
    return ", ".join(parts) or "same options"


def read_any_model(path: str | os.PathLike[str], weights: bool = True) -> tuple[dict[str, Any], Any]:
    """(metadata, state_dict or None) of a model file, or of a plain SB3 zip (``sb3_zip``), with clear errors."""
    path = model_path(path)
    try:
        return read_model(path, weights)
    except ModelFileError:
        plain = read_plain_model(path, weights)
        if plain is None:
            raise
        return plain


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The metadata of a model file (its ``popejoan.json``), or what a plain SB3 zip implies (``sb3_zip``)."""
    meta, _ = read_any_model(path, weights=False)
    return meta


def load_policy(path: str | os.PathLike[str], rules: RulesLike = None) -> Policy:
    """The actor network of a model file or a plain SB3 zip; ``rules`` (if given) must be the rules it was
    trained for."""
    path = model_path(path)
    meta, state = read_any_model(path)
    policy = policy_from_state(state, meta, path)
    if rules is not None:
        policy.check(resolve_rules(rules))
    return policy


def policy_from_state(state: Mapping[str, Any], metadata: dict[str, Any], path: str = "<memory>") -> Policy:
    """A ``Policy`` from an SB3 policy ``state_dict`` (tensors or arrays) and its metadata; every tensor checked."""
    check_metadata(metadata, path)
    if not isinstance(state, Mapping):
        raise ModelFileError(f"{path}: {WEIGHTS_NAME} holds a {type(state).__name__}, not a state_dict of tensors")
    if metadata.get("architecture") == suits.ARCHITECTURE:
        weights = {}
        for name, shape in suits.shapes(metadata["net_arch"]).items():
            weights[name] = tensor(state, suits.PREFIX + name, len(shape), path)
            if weights[name].shape != shape:
                raise ModelFileError(f"{path}: {suits.PREFIX + name} has shape {weights[name].shape}; "
                                     f"net_arch {metadata['net_arch']} needs {shape}")
        return Policy([], None, metadata["activation"], metadata, path,
                      actor=suits.NumpyActor(weights, metadata["activation"]))
    layers, head = mlp_actor(state, metadata, path)
    return Policy(layers, head, metadata["activation"], metadata, path)
