"""Learned players: MaskablePPO models saved by ``training/train_ppo.py``, played through the player protocol.

A model file is Stable-Baselines3's ``.zip`` (so ``MaskablePPO.load`` resumes
training from it) with one more member, ``popejoan.json``, that says what the
network expects::

    {"format": "popejoan-model/1", "obs_version": 1, "obs_size": 749,
     "rules": {"preset": "modern", ...}, "players": [4], "package_version": "0.1.0",
     "activation": "tanh", "net_arch": [64, 64], "timesteps": 800000, ...}

Every checkpoint the training script writes carries it, so a checkpoint of
another run loads the same way.  Playing needs no Stable-Baselines3: the actor
network is read from ``policy.pth`` and run in numpy (a few µs per decision).
The default is the **deterministic** policy: the legal card with the highest
logit.

A file that is not a model, a corrupt one, a model for another observation
version or — when the caller says which rules it will play — other rules is
refused with a ``ModelFileError`` / ``ModelMismatchError`` naming the file and
the problem.  A caller that does not say is still protected: the observation
carries the rules' flags, and ``act`` refuses an observation of a game under
rules the model was not trained for.

>>> player = load_player("models/ppo_modern_4p/model.zip", seed=0)   # doctest: +SKIP
>>> card = player.act(aec_env.observe(agent))                         # doctest: +SKIP
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from popejoan_env.errors import PopeJoanError
from popejoan_env.observation import OBS_SIZE, OBS_VERSION, RULE_FLAGS, RULES, decode_rules
from popejoan_env.rules import Rules, resolve_rules

MODEL_FORMAT = "popejoan-model/1"
"""Value of ``format`` in a model's metadata."""
META_NAME = "popejoan.json"
"""Zip member holding the metadata."""
NUM_ACTIONS = 52
_ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}


class ModelFileError(PopeJoanError):
    """A model file that cannot be read: missing, not a zip, corrupt, or without popejoan metadata."""


class ModelMismatchError(ModelFileError):
    """A model made for another observation version or other rules than the caller plays."""


# ---------------------------------------------------------------- metadata
def model_metadata(
    rules: Rules | str | Mapping[str, Any] | None,
    players: list[int] | tuple[int, ...],
    net_arch: list[int] | tuple[int, ...],
    activation: str = "tanh",
    **extra: Any,
) -> dict[str, Any]:
    """The metadata a saved model carries (observation version, rules, package version, network shape)."""
    from popejoan_env import __version__

    if activation not in _ACTIVATIONS:
        raise PopeJoanError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
    meta = {
        "format": MODEL_FORMAT,
        "obs_version": OBS_VERSION,
        "obs_size": OBS_SIZE,
        "rules": resolve_rules(rules).to_dict(),
        "players": list(players),
        "package_version": __version__,
        "algorithm": "MaskablePPO",
        "activation": activation,
        "net_arch": list(net_arch),
    }
    meta.update(extra)
    return meta


def save_model(model: Any, path: str | os.PathLike[str], metadata: Mapping[str, Any]) -> str:
    """Save an SB3 model to ``path`` (``.zip``) with ``popejoan.json`` inside; returns the path written."""
    path = os.fspath(path)
    if not path.endswith(".zip"):
        path += ".zip"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp.zip"
    model.save(tmp)
    with zipfile.ZipFile(tmp, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(META_NAME, json.dumps(dict(metadata), indent=1, sort_keys=True))
    os.replace(tmp, path)  # never leave a half-written model where a reader may look
    return path


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``popejoan.json`` metadata of a model file."""
    meta, _ = _read(path, weights=False)
    return meta


# ---------------------------------------------------------------- the network
class Policy:
    """The actor of a saved MaskablePPO model, evaluated in numpy."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]], head: tuple[np.ndarray, np.ndarray],
                 activation: str, metadata: dict[str, Any], path: str) -> None:
        self.layers = layers
        self.head = head
        self.activation = _ACTIVATIONS[activation]
        self.metadata = metadata
        self.path = path
        self.rules = Rules.from_dict(metadata["rules"])
        # The observation carries the rules' flags: a game under other rules is caught at the first act().
        self.rule_flags = np.array([1.0 if getattr(self.rules, k) == v else 0.0 for k, v in RULE_FLAGS],
                                   dtype=np.float32)

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Action logits (52, or [batch, 52]) for observations ``[OBS_SIZE]`` or ``[batch, OBS_SIZE]``."""
        x = np.asarray(obs, dtype=np.float32)
        for w, b in self.layers:
            x = self.activation(x @ w + b)
        w, b = self.head
        return x @ w + b

    def pick(self, obs: np.ndarray, legal: Any, rng: np.random.Generator | None = None,
             deterministic: bool = True) -> int:
        """A legal card id: the best logit, or a sample of the masked softmax when not deterministic."""
        legal = np.asarray(legal, dtype=np.intp)
        if len(legal) == 1:
            return int(legal[0])
        z = self.logits(obs)[legal]
        if deterministic or rng is None:
            return int(legal[int(np.argmax(z))])
        p = np.exp(z - z.max())
        return int(legal[int(rng.choice(len(legal), p=p / p.sum()))])

    def check(self, rules: Rules | str | Mapping[str, Any] | None = None) -> None:
        """Refuse to play rules other than those the model was trained for."""
        if rules is None:
            return
        wanted = resolve_rules(rules)
        if wanted != self.rules:
            raise ModelMismatchError(
                f"model {self.path} was trained for rules {self.rules.name!r} "
                f"({_diff(self.rules, wanted)}), not for the rules to be played ({wanted.name!r}); "
                "train a model for these rules or play the rules it knows"
            )


def _diff(have: Rules, want: Rules) -> str:
    a, b = have.to_dict(), want.to_dict()
    parts = [f"{k}={a[k]!r} vs {b[k]!r}" for k in a if k != "preset" and a[k] != b[k]]
    return ", ".join(parts) or "same options"


def _read(path: str | os.PathLike[str], weights: bool = True) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(metadata, actor state_dict as numpy) from a model file, with clear errors."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ModelFileError(f"model file {path!r} does not exist")
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if META_NAME not in names:
                if "policy.pth" in names:
                    raise ModelFileError(
                        f"{path} is a Stable-Baselines3 model without popejoan metadata ({META_NAME}): "
                        "nothing says which observation and rules it was trained for; save models with "
                        "popejoan_env.players.learned.save_model (training/train_ppo.py does)"
                    )
                raise ModelFileError(f"{path} is not a model file: a zip archive without {META_NAME} or "
                                     "policy.pth inside (another kind of file, or truncated)")
            meta = json.loads(archive.read(META_NAME).decode("utf-8"))
            if not isinstance(meta, dict) or meta.get("format") != MODEL_FORMAT:
                raise ModelFileError(f"{path}: metadata format {meta.get('format') if isinstance(meta, dict) else meta!r} "
                                     f"is not {MODEL_FORMAT!r}")
            state = None
            if weights:
                if "policy.pth" not in names:
                    raise ModelFileError(f"{path} has no policy.pth: not a complete model file")
                import torch

                raw = torch.load(io.BytesIO(archive.read("policy.pth")), map_location="cpu", weights_only=True)
                state = {k: v.detach().cpu().numpy().astype(np.float32) for k, v in raw.items()}
    except ModelFileError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as err:
        raise ModelFileError(f"{path} is not a readable model file (not a zip archive or truncated): {err}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ModelFileError(f"{path}: {META_NAME} is not valid JSON: {err}") from None
    except Exception as err:  # torch's unpickler raises many kinds on a damaged policy.pth
        raise ModelFileError(f"{path}: the network weights (policy.pth) cannot be read: "
                             f"{type(err).__name__}: {err}") from None
    for key in ("obs_version", "obs_size", "rules", "activation"):
        if key not in meta:
            raise ModelFileError(f"{path}: metadata lacks {key!r}")
    if meta["obs_version"] != OBS_VERSION or meta["obs_size"] != OBS_SIZE:
        raise ModelMismatchError(
            f"model {path} was trained on observation version {meta['obs_version']} (size {meta['obs_size']}); "
            f"this package encodes version {OBS_VERSION} (size {OBS_SIZE}): retrain it with this version"
        )
    try:
        Rules.from_dict(meta["rules"])
    except PopeJoanError as err:
        raise ModelFileError(f"{path}: metadata rules are not valid: {err}") from None
    if meta["activation"] not in _ACTIVATIONS:
        raise ModelFileError(f"{path}: unknown activation {meta['activation']!r}")
    return meta, state


def load_policy(path: str | os.PathLike[str], rules: Rules | str | Mapping[str, Any] | None = None) -> Policy:
    """The actor network of a model file; ``rules`` (if given) must be the rules it was trained for."""
    path = os.fspath(path)
    meta, state = _read(path)
    assert state is not None
    policy = policy_from_state(state, meta, path)
    policy.check(rules)
    return policy


def policy_from_state(state: Mapping[str, Any], metadata: dict[str, Any], path: str = "<memory>") -> Policy:
    """A ``Policy`` from an SB3 policy ``state_dict`` (tensors or arrays) and its metadata."""
    state = {k: np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v, dtype=np.float32)
             for k, v in state.items()}
    meta = metadata
    layers = []
    k = 0
    while f"mlp_extractor.policy_net.{k}.weight" in state:
        layers.append((state[f"mlp_extractor.policy_net.{k}.weight"].T.copy(),
                       state[f"mlp_extractor.policy_net.{k}.bias"]))
        k += 2  # Linear, activation, Linear, ... in SB3's MlpExtractor
    if "action_net.weight" not in state:
        raise ModelFileError(f"{path}: policy.pth has no action_net: not a MaskablePPO MlpPolicy")
    head = (state["action_net.weight"].T.copy(), state["action_net.bias"])
    width = OBS_SIZE
    for w, _ in layers + [head]:
        if w.shape[0] != width:
            raise ModelFileError(f"{path}: network layer expects {w.shape[0]} inputs, got {width} "
                                 "(unsupported architecture or damaged weights)")
        width = w.shape[1]
    if width != NUM_ACTIONS:
        raise ModelFileError(f"{path}: network has {width} outputs, expected {NUM_ACTIONS} actions")
    return Policy(layers, head, meta["activation"], meta, path)


# ---------------------------------------------------------------- the player
class LearnedPlayer:
    """A saved model playing from the AEC observation dict (``observation`` + ``action_mask``)."""

    def __init__(self, policy: Policy, seed: int | None = None, deterministic: bool = True,
                 name: str | None = None) -> None:
        self.policy = policy
        self.deterministic = deterministic
        if name is None:
            name = os.path.splitext(os.path.basename(policy.path))[0]
            if name == "model":  # models/<run>/model.zip: the run name says more
                name = os.path.basename(os.path.dirname(os.path.abspath(policy.path))) or "model"
        self.name = name
        self.rng = np.random.default_rng(seed)

    @property
    def metadata(self) -> dict[str, Any]:
        """The model's metadata (observation version, rules, training run ...)."""
        return self.policy.metadata

    def reset(self, seed: int | None = None) -> None:
        """Restart the player's generator (used only when not deterministic)."""
        self.rng = np.random.default_rng(seed)

    def act(self, obs: Mapping[str, Any]) -> int:
        """The card to play from ``{"observation": float32[OBS_SIZE], "action_mask": int8[52]}``."""
        try:
            vector = np.asarray(obs["observation"], dtype=np.float32)
            mask = np.asarray(obs["action_mask"])
        except (KeyError, TypeError):
            raise PopeJoanError("a learned player needs the AEC observation dict with 'observation' "
                                "and 'action_mask'") from None
        if vector.shape != (OBS_SIZE,):
            raise ModelMismatchError(f"model {self.policy.path} expects an observation of shape ({OBS_SIZE},) "
                                     f"(version {OBS_VERSION}), got {vector.shape}")
        legal = np.flatnonzero(mask)
        if len(legal) == 0:
            raise PopeJoanError(f"{self.name}: the action mask has no legal card (this seat is not to act)")
        if not np.array_equal(vector[RULES:RULES + len(RULE_FLAGS)], self.policy.rule_flags):
            try:
                played = decode_rules(vector)
                self.policy.check(played)
            except ValueError as err:
                if isinstance(err, ModelMismatchError):
                    raise
                raise ModelMismatchError(f"model {self.policy.path}: the observation's rule flags are not valid "
                                         f"({err})") from None
        return self.policy.pick(vector, legal, self.rng, self.deterministic)

    def __repr__(self) -> str:
        return f"<LearnedPlayer {self.name} ({self.policy.path})>"


def load_player(path: str | os.PathLike[str], seed: int | None = None,
                rules: Rules | str | Mapping[str, Any] | None = None, deterministic: bool = True) -> LearnedPlayer:
    """A player from a model file; pass ``rules`` to refuse a model trained for other rules."""
    return LearnedPlayer(load_policy(path, rules=rules), seed=seed, deterministic=deterministic)


__all__ = [
    "LearnedPlayer", "ModelFileError", "ModelMismatchError", "Policy", "load_player",
    "load_policy", "model_metadata", "policy_from_state", "read_metadata", "save_model",
]
