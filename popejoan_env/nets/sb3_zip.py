"""A zip Stable-Baselines3 saved the ordinary way (``model.save(path)``), read as a model file.

A MaskablePPO (or PPO) ``MlpPolicy`` trained on the Gym view and saved with
``model.save`` has no ``popejoan.json``; ``plain_metadata`` reads what the zip
itself holds instead, from SB3's ``data`` JSON, **never unpickling** any of it
(its ``:serialized:`` entries are cloudpickle and can run code; only the plain
text SB3 writes beside them is read) and the weights with
``torch.load(weights_only=True)`` as for every model file:

=====================  =====================================================
read from the zip      checked
=====================  =====================================================
``policy_class``       ``MaskableActorCriticPolicy`` (MaskablePPO's
                       ``MlpPolicy``) or ``ActorCriticPolicy`` (PPO's): an
                       actor of SB3's ``mlp_extractor.policy_net`` and
                       ``action_net``; any other class is refused
``observation_space``  a ``Box`` of shape ``(OBS_SIZE,)``: another size is
                       another observation version (or another env), refused
``action_space``       ``Discrete(52)``
``policy_kwargs``      ``net_arch`` (default ``[64, 64]``, SB3's), the
                       activation (``Tanh``, SB3's default, or ``ReLU``), no
                       features extractor but SB3's ``FlattenExtractor``
=====================  =====================================================

What the zip cannot say is taken as follows, and the metadata says so
(``"plain_sb3": true``): the observation version is this package's (the size
matched); the rules are **both presets** (the observation's rule flags tell the
network which it plays) and the table sizes **3 to 8** (one observation shape
serves them all).  So the tournament and the web app offer it at every preset
table; for other rules, or to record the rules and table sizes it was trained
for, ``adopt`` writes the ``popejoan.json`` in one line.  The network plays
through the same numpy ``Policy`` as every model file (no torch at play time).

>>> model.save("runs/mine/model.zip")                       # doctest: +SKIP
>>> make_player("runs/mine/model.zip").act(view)             # doctest: +SKIP
>>> adopt("runs/mine/model.zip", rules="victorian", players=[5])   # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.checks import as_int
from popejoan_env.observation import OBS_SIZE, OBS_VERSION
from popejoan_env.nets.model_file import (
    MODEL_FORMAT, ModelFileError, ModelMismatchError, check_metadata, read_sb3_zip, rules_field, save_model,
)
from popejoan_env.rules import MAX_PLAYERS, MIN_PLAYERS, PRESETS, RulesLike

POLICIES = {
    ("sb3_contrib.common.maskable.policies", "MaskableActorCriticPolicy"): "MaskablePPO",
    ("stable_baselines3.common.policies", "ActorCriticPolicy"): "PPO",
}
"""SB3 policy classes (module, name) whose actor ``nets.policy.Policy`` plays, and their algorithm."""
SB3_ACTIVATIONS = {"Tanh": "tanh", "ReLU": "relu"}
"""torch activation classes a plain zip may name, and their name in a model file."""
DEFAULT_NET_ARCH = [64, 64]
"""SB3's actor layers when ``policy_kwargs`` names none."""

_CLASS_NAME = re.compile(r"<function (\w+)\.__init__ ")
_TORCH_CLASS = re.compile(r"<class 'torch\.nn\.modules\.activation\.(\w+)'>")


def _field(data: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    """One of SB3's described (pickled) attributes: its plain-text description, checked to be one."""
    value = data.get(key)
    if not isinstance(value, Mapping) or not isinstance(value.get(":type:"), str):
        raise ModelFileError(f"{path}: Stable-Baselines3's data has no readable {key!r}: not a model SB3 saved")
    return value


def policy_algorithm(data: Mapping[str, Any], path: str) -> str:
    """The algorithm of a plain zip's policy class (``POLICIES``); any other class is refused."""
    policy = _field(data, "policy_class", path)
    module = policy.get("__module__")
    found = _CLASS_NAME.match(str(policy.get("__init__", "")))
    name = found.group(1) if found else "an unnamed class"
    algorithm = POLICIES.get((module, name))  # type: ignore[arg-type]
    if algorithm is None:
        known = ", ".join(f"{n} ({a})" for (_, n), a in POLICIES.items())
        raise ModelFileError(f"{path}: its policy class is {name} from {module}; a plain Stable-Baselines3 zip is "
                             f"played only with {known}: an MLP actor over the Gym view's observation (save "
                             "another policy with popejoan_env.nets.model_file.save_model and its metadata)")
    return algorithm


def _shape(space: Mapping[str, Any]) -> list[int] | None:
    """The shape SB3 wrote as text (``"[1285]"``), or None."""
    found = re.fullmatch(r"\[(\d+(?:,\s*\d+)*)?\]|\((\d+(?:,\s*\d+)*)?,?\)", str(space.get("_shape", "")).strip())
    if not found:
        return None
    digits = found.group(1) or found.group(2) or ""
    return [int(x) for x in re.findall(r"\d+", digits)]


def check_spaces(data: Mapping[str, Any], path: str) -> None:
    """Refuse a zip whose observation is not the Gym view's (``Box`` of ``OBS_SIZE``) or whose actions are
    not the 52 card ids."""
    obs = _field(data, "observation_space", path)
    shape = _shape(obs)
    if "Box" not in obs[":type:"] or shape is None:
        raise ModelFileError(f"{path}: its observation space is {obs[':type:']} (shape {obs.get('_shape')}), not "
                             f"the Gym view's Box of {OBS_SIZE} values (a Dict space needs MultiInputPolicy, "
                             "which is not played)")
    if shape != [OBS_SIZE]:
        raise ModelMismatchError(f"{path}: it was trained on observations of shape {shape}; this package's "
                                 f"observation (version {OBS_VERSION}) has {OBS_SIZE} values: another env or "
                                 "another observation version, retrain it with this version")
    act = _field(data, "action_space", path)
    if "Discrete" not in act[":type:"] or as_int(_int_text(act.get("n"))) != NUM_CARD_IDS:
        raise ModelFileError(f"{path}: its action space is {act[':type:']} (n={act.get('n')}), not "
                             f"Discrete({NUM_CARD_IDS}), the card ids")


def _int_text(value: Any) -> int | None:
    """An integer SB3 wrote as a number or as text."""
    if as_int(value) is not None:
        return as_int(value)
    return int(value) if isinstance(value, str) and value.strip().isdigit() else None


def actor_shape(data: Mapping[str, Any], path: str) -> tuple[list[int], str]:
    """(the actor's hidden widths, its activation's name) from ``policy_kwargs``."""
    kwargs = data.get("policy_kwargs", {})
    if not isinstance(kwargs, Mapping):
        raise ModelFileError(f"{path}: Stable-Baselines3's policy_kwargs are not readable: {kwargs!r:.80}")
    extractor = kwargs.get("features_extractor_class")
    if extractor is not None and "FlattenExtractor" not in str(extractor):
        raise ModelFileError(f"{path}: its policy has features extractor {str(extractor):.80}; only SB3's "
                             "FlattenExtractor (the MlpPolicy default) is played")
    arch = kwargs.get("net_arch", DEFAULT_NET_ARCH)
    if isinstance(arch, Mapping):
        arch = arch.get("pi", DEFAULT_NET_ARCH)
    if not isinstance(arch, list) or not all(as_int(w) is not None and w > 0 for w in arch):
        raise ModelFileError(f"{path}: policy_kwargs net_arch {arch!r:.80} is not a list of layer widths")
    activation = kwargs.get("activation_fn")
    if activation is None:
        return [int(w) for w in arch], "tanh"
    found = _TORCH_CLASS.fullmatch(str(activation))
    if found is None or found.group(1) not in SB3_ACTIVATIONS:
        raise ModelFileError(f"{path}: its activation is {str(activation):.80}; a played network uses "
                             f"{' or '.join('torch.nn.' + n for n in SB3_ACTIVATIONS)}")
    return [int(w) for w in arch], SB3_ACTIVATIONS[found.group(1)]


def plain_metadata(data: Mapping[str, Any], path: str, rules: RulesLike | Sequence[RulesLike] = None,
                   players: Sequence[int] | None = None) -> dict[str, Any]:
    """The model-file metadata a plain SB3 zip implies (``rules``/``players``: what it was trained for, when
    known; else both presets and 3..8 seats, marked ``plain_sb3``), every field checked."""
    algorithm = policy_algorithm(data, path)
    check_spaces(data, path)
    net_arch, activation = actor_shape(data, path)
    meta: dict[str, Any] = {
        "format": MODEL_FORMAT,
        "obs_version": OBS_VERSION,
        "obs_size": OBS_SIZE,
        "rules": rules_field(list(PRESETS) if rules is None else rules),
        "players": list(range(MIN_PLAYERS, MAX_PLAYERS + 1)) if players is None else [int(n) for n in players],
        "algorithm": algorithm,
        "activation": activation,
        "net_arch": net_arch,
    }
    timesteps = _int_text(data.get("num_timesteps"))
    if timesteps is not None:
        meta["timesteps"] = timesteps
    if rules is None or players is None:
        meta["plain_sb3"] = True  # rules or table sizes assumed, not recorded
    check_metadata(meta, path)
    return meta


def read_plain_model(path: str | os.PathLike[str], weights: bool = True) -> tuple[dict[str, Any], Any] | None:
    """(metadata as ``plain_metadata`` makes it, the state_dict or None) of a plain SB3 zip; None for any
    other file."""
    path = os.fspath(path)
    found = read_sb3_zip(path, weights)
    if found is None:
        return None
    data, state = found
    return plain_metadata(data, path), state


def adopt(path: str | os.PathLike[str], *, rules: RulesLike | Sequence[RulesLike] = "modern",
          players: Sequence[int] = (4,), out: str | os.PathLike[str] | None = None, **extra: Any) -> str:
    """Write a plain SB3 zip as a model file that records ``rules`` and ``players`` (to ``out``, default in
    place); returns the path written.  ``MaskablePPO.load`` still resumes it."""
    path = os.fspath(path)
    found = read_sb3_zip(path, weights=False)
    if found is None:
        raise ModelFileError(f"{path} is not a zip Stable-Baselines3 saved without popejoan metadata "
                             "(a model file already, or not a model)")
    meta = plain_metadata(found[0], path, rules, list(players))
    meta.update(extra)
    target = os.fspath(out) if out is not None else path

    class _Copy:
        def save(self, tmp: str) -> None:
            shutil.copyfile(path, tmp)

    return save_model(_Copy(), target, meta)


__all__ = ["POLICIES", "adopt", "plain_metadata", "read_plain_model"]
