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
``action_space``       ``Discrete(52)`` starting at 0 (the card ids)
``policy_kwargs``      ``net_arch`` (default ``[64, 64]``, SB3's), the
                       activation (``Tanh``, SB3's default, or ``ReLU``), no
                       features extractor but SB3's ``FlattenExtractor``
=====================  =====================================================

Every number among them (and ``num_timesteps``) is read by ``model_file.read_count``:
a JSON integer or, as SB3 writes numpy integers, a text of ASCII digits, within
its range, so a file cannot hand Python a conversion it refuses.

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

import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.checks import brief
from popejoan_env.observation import OBS_SIZE, OBS_VERSION
from popejoan_env.nets.model_file import (
    CHECKED_FIELDS, MAX_WEIGHT_ELEMENTS, MODEL_FORMAT, ModelFileError, ModelMismatchError, check_metadata, mlp_actor,
    RUN_MODEL, read_count, read_sb3_zip, rules_field, save_model,
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

_CLASS_NAME = re.compile(r"<function ([A-Za-z_][A-Za-z0-9_]*)\.__init__ ")
_TORCH_CLASS = re.compile(r"<class 'torch\.nn\.modules\.activation\.([A-Za-z_][A-Za-z0-9_]*)'>")
_SPACE = re.compile(r"<class '(?:gymnasium|gym)\.spaces\.(?P<kind>[a-z_]+\.[A-Za-z]+)'>")
"""How SB3 names a space's class (``:type:``): Gymnasium's (or the older Gym's) ``Box`` and ``Discrete``."""


def _show(value: Any) -> str:
    """A value read from the zip as an error shows it: a text as it is, cut to one short line; else ``brief``."""
    if isinstance(value, str):
        line = " ".join(value.split())
        return line if len(line) <= 80 else line[:77] + "..."
    return brief(value)


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
    found = _CLASS_NAME.match(str(policy.get("__init__", ""))[:200])
    name = found.group(1) if found else "an unnamed class"
    algorithm = POLICIES.get((module, name)) if isinstance(module, str) else None
    if algorithm is None:
        known = ", ".join(f"{n} ({a})" for (_, n), a in POLICIES.items())
        raise ModelFileError(f"{path}: its policy class is {_show(name)} from {_show(module)}; a plain "
                             f"Stable-Baselines3 zip is played only with {known}: an MLP actor over the Gym view's "
                             "observation (save another policy with popejoan_env.nets.model_file.save_model and its "
                             "metadata)")
    return algorithm


def _shape(space: Mapping[str, Any], path: str) -> list[int] | None:
    """The shape SB3 wrote (a list, ``[1285]``, or as text, ``"[1285]"`` or ``"(1285,)"``), each size read by
    ``read_count``; None when it is neither."""
    shape = space.get("_shape")
    if isinstance(shape, str):
        found = re.fullmatch(r"\[([0-9]+(?:, *[0-9]+)*)?\]|\(([0-9]+(?:, *[0-9]+)*)?,?\)", shape.strip())
        if not found:
            return None
        shape = re.findall(r"[0-9]+", found.group(1) or found.group(2) or "")
    if not isinstance(shape, list):
        return None
    return [read_count(n, "its observation space's shape", path, text=True) for n in shape]


def check_spaces(data: Mapping[str, Any], path: str) -> None:
    """Refuse a zip whose observation is not the Gym view's (``Box`` of ``OBS_SIZE``) or whose actions are
    not the 52 card ids."""
    obs = _field(data, "observation_space", path)
    shape = _shape(obs, path)
    kind = _SPACE.fullmatch(obs[":type:"])
    if kind is None or kind["kind"] != "box.Box" or shape is None:
        raise ModelFileError(f"{path}: its observation space is {_show(obs[':type:'])} (shape "
                             f"{_show(obs.get('_shape'))}), not the Gym view's Box of {OBS_SIZE} values (a Dict space "
                             "needs MultiInputPolicy, which is not played)")
    if shape != [OBS_SIZE]:
        raise ModelMismatchError(f"{path}: it was trained on observations of shape {shape}; this package's "
                                 f"observation (version {OBS_VERSION}) has {OBS_SIZE} values: another env or "
                                 "another observation version, retrain it with this version")
    act = _field(data, "action_space", path)
    kind = _SPACE.fullmatch(act[":type:"])
    if kind is None or kind["kind"] != "discrete.Discrete" \
            or read_count(act.get("n"), "its action space's n", path, text=True) != NUM_CARD_IDS:
        raise ModelFileError(f"{path}: its action space is {_show(act[':type:'])} (n={_show(act.get('n'))}), not "
                             f"Discrete({NUM_CARD_IDS}), the card ids")
    if "start" in act and read_count(act["start"], "its action space's start", path, text=True) != 0:
        raise ModelFileError(f"{path}: its action space is Discrete({NUM_CARD_IDS}, start={act['start']}): its "
                             "actions are not the card ids 0..51, so every card would be one off")


def actor_shape(data: Mapping[str, Any], path: str) -> tuple[list[int], str]:
    """(the actor's hidden widths, its activation's name) from ``policy_kwargs``."""
    kwargs = data.get("policy_kwargs", {})
    if not isinstance(kwargs, Mapping):
        raise ModelFileError(f"{path}: Stable-Baselines3's policy_kwargs are not readable: {_show(kwargs)}")
    extractor = kwargs.get("features_extractor_class")
    if extractor is not None and "FlattenExtractor" not in str(extractor)[:200]:
        raise ModelFileError(f"{path}: its policy has features extractor {_show(extractor)}; only SB3's "
                             "FlattenExtractor (the MlpPolicy default) is played")
    arch = kwargs.get("net_arch", DEFAULT_NET_ARCH)
    if isinstance(arch, Mapping):
        arch = arch.get("pi", DEFAULT_NET_ARCH)
    if not isinstance(arch, list):
        raise ModelFileError(f"{path}: policy_kwargs net_arch {_show(arch)} is not a list of layer widths")
    widths = [read_count(w, "policy_kwargs net_arch: a layer width", path, 1, MAX_WEIGHT_ELEMENTS) for w in arch]
    activation = kwargs.get("activation_fn")
    if activation is None:
        return widths, "tanh"
    found = _TORCH_CLASS.fullmatch(str(activation)[:200])
    if found is None or found.group(1) not in SB3_ACTIVATIONS:
        raise ModelFileError(f"{path}: its activation is {_show(activation)}; a played network uses "
                             f"{' or '.join('torch.nn.' + n for n in SB3_ACTIVATIONS)}")
    return widths, SB3_ACTIVATIONS[found.group(1)]


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
        "players": list(range(MIN_PLAYERS, MAX_PLAYERS + 1)) if players is None else list(players),
        "algorithm": algorithm,
        "activation": activation,
        "net_arch": net_arch,
    }
    if data.get("num_timesteps") is not None:
        meta["timesteps"] = read_count(data["num_timesteps"], "Stable-Baselines3's num_timesteps", path, text=True)
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
    place); returns the path written.  ``MaskablePPO.load`` still resumes it.

    Refused before anything is written: a ``path`` that is not such a zip, weights that cannot play, a
    ``players`` that is not a list of table sizes, rules that cannot be dealt at one of them (``pack=small``
    is for 3 players), an ``out`` that is a directory, and ``extra`` fields that are not JSON or would
    replace a checked one (``model_file.CHECKED_FIELDS``).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ModelFileError(f"{path}: " + ("a directory, not a model file" if os.path.isdir(path)
                                            else "no such file"))
    found = read_sb3_zip(path, weights=True)
    if found is None:
        raise ModelFileError(f"{path} is not a zip Stable-Baselines3 saved without popejoan metadata "
                             "(a model file already, or not a model)")
    if isinstance(players, (str, bytes)) or not isinstance(players, Sequence):
        raise ModelFileError(f"{path}: players must be a list of table sizes such as [4], got {brief(players)}")
    sizes = [read_count(n, "players: a table size", path, MIN_PLAYERS, MAX_PLAYERS) for n in players]
    meta = plain_metadata(found[0], path, rules, sizes)
    mlp_actor(found[1], meta, path)  # weights that cannot play are refused, not written
    replaced = sorted(set(extra) & (set(meta) | CHECKED_FIELDS))
    if replaced:
        raise ModelFileError(f"{path}: adopt's extra fields {replaced} would replace what the zip and the rules "
                             "give (the network's shape, its rules and table sizes); give other names")
    try:
        json.dumps(extra, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as err:
        raise ModelFileError(f"{path}: adopt's extra fields must be JSON values: {_show(str(err))}") from None
    meta.update(extra)
    target = os.fspath(out) if out is not None else path
    written = target if target.endswith(".zip") else target + ".zip"
    if os.path.isdir(target) or os.path.isdir(written) or target.endswith(("/", os.sep)):
        folder = target if os.path.isdir(target) or target.endswith(("/", os.sep)) else written
        raise ModelFileError(f"cannot write the adopted model to {target}: {folder} is a directory; give a file "
                             f"name such as {os.path.join(folder, RUN_MODEL)}")

    class _Copy:
        def save(self, tmp: str) -> None:
            shutil.copyfile(path, tmp)

    return save_model(_Copy(), target, meta)


__all__ = ["POLICIES", "adopt", "plain_metadata", "read_plain_model"]
