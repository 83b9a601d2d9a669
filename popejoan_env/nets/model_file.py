"""The model file: its format (``popejoan-model/1``), writing it, and reading it back with every field checked.

A model file is Stable-Baselines3's ``.zip`` (so ``MaskablePPO.load`` resumes
training from it) with one more member, ``popejoan.json``, that says what the
network expects::

    {"format": "popejoan-model/1", "obs_version": 2, "obs_size": 1285,
     "rules": {"preset": "modern", ...}, "players": [4], "package_version": "0.1.0",
     "activation": "tanh", "net_arch": [64, 64], "timesteps": 800000, ...}

``rules`` is one rules object, or a list of them for a network trained on
several presets (the observation's rule flags tell them apart); the model
plays any of them (``trained_rules``).  Every checkpoint the training script
writes carries it, so a checkpoint of another run loads the same way.

**Trust.** ``read_model`` and ``read_metadata`` (and so ``learned.load_player``,
``learned.load_policy`` and ``make_player``) read no pickle that can run code:
``popejoan.json`` is JSON, and ``policy.pth`` is read with
``torch.load(..., weights_only=True)``, which refuses anything but tensors and
plain containers, so a hostile file is refused with a ``ModelFileError`` and its
code never runs.  ``MaskablePPO.load`` (Stable-Baselines3, to resume training)
is different: it **unpickles** members of the file and can execute code from
it, so only load files you trust that way.

Everything is checked when the file is read: the zip (at most ``MAX_MEMBERS``
members; ``popejoan.json`` at most ``MAX_METADATA_BYTES``, ``policy.pth`` at
most ``MAX_WEIGHTS_BYTES``, unpacked, read with bounded reads so a zip bomb or a
lying header cannot fill memory; ``policy.pth`` in ``torch.save``'s own format,
whose records are stored and no larger than the member), every metadata field
the player uses (type and value), and every tensor of the actor (``tensor``,
``linear``: present, a float tensor of the expected dimensions, all values
finite: a model with NaN or infinite weights is refused, since its logits would
pick a card arbitrarily).  Before any tensor is copied, each must be a view
that takes each of its values from its own place inside its storage (no
stride-0 or overlapping view that makes a few stored bytes look like a large
matrix), and all of them together hold at most ``MAX_WEIGHT_ELEMENTS`` values.
A file that is not a model, a corrupt one, or a model for another observation
version is refused with a ``ModelFileError`` /
``ModelMismatchError`` naming the file, the field and the problem.
"""

from __future__ import annotations

import inspect
import io
import json
import os
import pickle
import re
import reprlib
import zipfile
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.checks import as_int, brief, import_extra
from popejoan_env.errors import MissingDependencyError, PopeJoanError
from popejoan_env.files import replacing
from popejoan_env.observation import OBS_SIZE, OBS_VERSION
from popejoan_env.nets import suits
from popejoan_env.rules import MAX_PLAYERS, MIN_PLAYERS, Rules, RulesLike, resolve_rules

RUN_MODEL = "model.zip"
"""The model file of a run, in its directory: what the training commands write, the web app offers and a run's
directory given as a model names."""
MODEL_FORMAT = "popejoan-model/1"
"""Value of ``format`` in a model's metadata."""
META_NAME = "popejoan.json"
"""Zip member holding the metadata."""
WEIGHTS_NAME = "policy.pth"
"""Zip member holding the policy's ``state_dict`` (written by Stable-Baselines3)."""
MEMBER_TIME = (1980, 1, 1, 0, 0, 0)
"""The time of every zip member this module writes (zip's earliest, as torch's own members have): a file's bytes
depend on what it holds, never on when it was written, so the same training run writes the same file."""
CLOCK_FIELDS = ("start_time", "ep_info_buffer")
"""What Stable-Baselines3 saves of an algorithm that tells when it ran (the clock at the start of ``learn``, each
recent episode's seconds since then): never saved, so a model file does not depend on it (nothing read back uses
them: ``learn`` sets both afresh)."""
_ADDRESS = re.compile(rb" at 0x[0-9a-fA-F]+>")
"""A memory address in the repr of an object that Stable-Baselines3 writes beside its pickle in ``data`` (the repr
keeps its form, ``<function X.__init__ at 0x0>``: ``sb3_zip`` reads the class name from it)."""
MAX_MEMBERS = 64
"""Most members a model zip may have (Stable-Baselines3 writes 7)."""
MAX_METADATA_BYTES = 2**20
"""Largest ``popejoan.json`` read, unpacked (a real one is under 1 kB)."""
MAX_WEIGHTS_BYTES = 64 * 2**20
"""Largest ``policy.pth`` read, unpacked (the shipped 128x128 model's is 0.9 MB)."""
MAX_WEIGHT_ELEMENTS = MAX_WEIGHTS_BYTES // 4
"""Most values all the tensors of ``policy.pth`` may hold together (as many float32 as ``MAX_WEIGHTS_BYTES``)."""
MAX_NETWORK_VALUES = (MAX_WEIGHTS_BYTES - 2**20) // 4
"""Most values a network may hold to be saved as a model file that reads back: float32 values within
``MAX_WEIGHTS_BYTES``, less 1 MiB for ``torch.save``'s own bytes (about 400 a tensor)."""


def mlp_values(widths: Sequence[int]) -> int:
    """The weights and biases of an MLP of these layer widths, counted from its shapes (checked before building)."""
    return sum(a * b + b for a, b in zip(widths, widths[1:]))


ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}
"""The hidden activations a model may name, as numpy functions (the player's forward applies them)."""
MAX_COUNT = 2**63 - 1
"""Largest number a model's metadata (or Stable-Baselines3's ``data``) may give: an int64, as numpy and torch
hold it; a text of more digits than it has is refused before Python converts it."""
CHECKED_FIELDS = frozenset({"format", "obs_version", "obs_size", "rules", "players", "activation", "net_arch",
                            "architecture", "critic_arch", "algorithm", "timesteps", "plain_sb3"})
"""Metadata fields that ``check_metadata`` checks or a reader of the network relies on: never overwritten by a
caller's extra fields (``sb3_zip.adopt``)."""


class ModelFileError(PopeJoanError):
    """A model file that cannot be read: missing, not a zip, corrupt, or without popejoan metadata."""


class ModelMismatchError(ModelFileError):
    """A model made for another observation version or other rules than the caller plays."""


# ---------------------------------------------------------------- metadata
def rules_field(rules: RulesLike | Sequence[RulesLike]) -> Any:
    """The ``rules`` metadata of a model trained on ``rules`` (one rules, or a list of several)."""
    if isinstance(rules, (list, tuple)):
        known = [resolve_rules(r).to_dict() for r in rules]
        return known[0] if len(known) == 1 else known
    return resolve_rules(rules).to_dict()


def trained_rules(metadata: Mapping[str, Any]) -> tuple[Rules, ...]:
    """The rules a model's metadata says it plays (``rules``: one object or a list of them)."""
    field = metadata["rules"]
    return tuple(Rules.from_dict(r) for r in (field if isinstance(field, list) else [field]))


def model_metadata(
    rules: RulesLike | Sequence[RulesLike],
    players: list[int] | tuple[int, ...],
    net_arch: list[int] | tuple[int, ...],
    *,
    activation: str = "tanh",
    **extra: Any,
) -> dict[str, Any]:
    """The metadata a saved model carries (observation version, rules — one, or a list —, package version,
    network shape)."""
    from popejoan_env import __version__

    if activation not in ACTIVATIONS:
        raise PopeJoanError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    meta = {
        "format": MODEL_FORMAT,
        "obs_version": OBS_VERSION,
        "obs_size": OBS_SIZE,
        "rules": rules_field(rules),
        "players": list(players),
        "package_version": __version__,
        "algorithm": "MaskablePPO",
        "activation": activation,
        "net_arch": list(net_arch),
    }
    meta.update(extra)
    return meta


def zip_path(path: str | os.PathLike[str]) -> str:
    """The file a model saved to ``path`` is written to: ``path``, ``.zip`` added unless it ends so."""
    path = os.fspath(path)
    return path if path.endswith(".zip") else path + ".zip"


def save_model(model: Any, path: str | os.PathLike[str], metadata: Mapping[str, Any]) -> str:
    """Save an SB3 model to ``zip_path(path)`` with ``popejoan.json`` inside; returns the path written."""
    path = zip_path(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    # Never leave a half-written model where a reader may look: the zip replaces ``path`` when complete.
    with replacing(path) as tmp:
        if "exclude" in inspect.signature(model.save).parameters:  # an SB3 algorithm: leave out what the clock says
            model.save(tmp, exclude=list(CLOCK_FIELDS))
            _without_time(tmp)  # SB3's members, at the clock's time
        else:  # members written at MEMBER_TIME (save_state_dict), or a zip adopt copies as it is, never unpacked
            model.save(tmp)
        with zipfile.ZipFile(tmp, "a", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(_timeless(META_NAME, zipfile.ZIP_DEFLATED),
                             json.dumps(dict(metadata), indent=1, sort_keys=True))
    return path


def _without_time(path: str) -> None:
    """Rewrite the zip at ``path`` with every member at ``MEMBER_TIME`` and each memory address in ``SB3_DATA_NAME``
    (the process's, in the repr SB3 keeps beside each pickled object) written 0x0, its contents otherwise the same."""
    with zipfile.ZipFile(path) as archive:
        members = [(info.filename, info.compress_type, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w") as archive:
        for name, compression, data in members:
            if name == SB3_DATA_NAME:
                data = _ADDRESS.sub(b" at 0x0>", data)
            archive.writestr(_timeless(name, compression), data)


def _timeless(name: str, compression: int) -> zipfile.ZipInfo:
    """A zip member written at ``MEMBER_TIME``, readable and writable by its owner (as ``writestr`` of a name)."""
    info = zipfile.ZipInfo(name, date_time=MEMBER_TIME)
    info.compress_type = compression
    info.external_attr = 0o600 << 16
    return info


def save_state_dict(state: Mapping[str, Any], path: str | os.PathLike[str], metadata: Mapping[str, Any]) -> str:
    """Save an actor's ``state_dict`` (SB3's layer names) as a model file without SB3; returns the path written."""
    import torch

    class _Weights:
        def save(self, target: str) -> None:
            buf = io.BytesIO()
            torch.save(state if isinstance(state, dict) else dict(state), buf)
            with zipfile.ZipFile(target, "w") as archive:
                archive.writestr(_timeless(WEIGHTS_NAME, zipfile.ZIP_STORED), buf.getvalue())

    return save_model(_Weights(), path, metadata)


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``popejoan.json`` metadata of a model file."""
    meta, _ = read_model(path, weights=False)
    return meta


# ---------------------------------------------------------------- reading, every field and tensor checked
def model_path(path: object) -> str:
    """``path`` as a string (a ``str`` or an ``os.PathLike``); else a ModelFileError naming what was given."""
    if not isinstance(path, (str, os.PathLike)):
        raise ModelFileError(f"a model path must be a str or os.PathLike, got {brief(path)}")
    return os.fspath(path)  # type: ignore[return-value]


def read_model(path: str | os.PathLike[str], weights: bool = True) -> tuple[dict[str, Any], Any]:
    """(metadata, the ``policy.pth`` state_dict as loaded, or None) from a model file, with clear errors."""
    path = model_path(path)
    if not os.path.isfile(path):
        why = ("is a directory, not a model file" if os.path.isdir(path) else
               "is not a regular file" if os.path.exists(path) else "does not exist")
        inside = os.path.join(path, RUN_MODEL)
        if os.path.isdir(path) and os.path.isfile(inside):  # a run's directory: its model is RUN_MODEL
            why += f" (the run's model is {inside!r})"
        raise ModelFileError(f"model file {path!r} {why}")
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if len(names) > MAX_MEMBERS:
                raise ModelFileError(f"{path}: a zip of {len(names):,} members; a model file has at most "
                                     f"{MAX_MEMBERS} (not a model file)")
            if META_NAME not in names:
                if WEIGHTS_NAME in names:
                    raise ModelFileError(
                        f"{path} is a Stable-Baselines3 model without popejoan metadata ({META_NAME}): "
                        "nothing says which observation and rules it was trained for; save models with "
                        "popejoan_env.nets.model_file.save_model (training/train_ppo.py does)"
                    )
                raise ModelFileError(f"{path} is not a model file: a zip archive without {META_NAME} or "
                                     f"{WEIGHTS_NAME} inside (another kind of file, or truncated)")
            text = _member(archive, path, META_NAME, MAX_METADATA_BYTES)
            try:
                meta = json.loads(text.decode("utf-8"))
            except (RecursionError, ValueError) as err:  # not UTF-8, not JSON, too deep, a huge integer
                raise ModelFileError(f"{path}: {META_NAME} is not valid JSON: {_clip(str(err))}") from None
            check_metadata(meta, path)
            state = None
            if weights:
                if WEIGHTS_NAME not in names:
                    raise ModelFileError(f"{path} has no {WEIGHTS_NAME}: not a complete model file")
                state = load_weights(_member(archive, path, WEIGHTS_NAME, MAX_WEIGHTS_BYTES), path)
    except (ModelFileError, MissingDependencyError):
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, RuntimeError, NotImplementedError,
            ValueError) as err:  # not a zip, truncated, a bad CRC, encrypted, an unknown compression
        raise ModelFileError(f"{path} is not a readable model file (not a zip archive or truncated): "
                             f"{_clip(str(err))}") from None
    return meta, state


def _member(archive: zipfile.ZipFile, path: str, name: str, limit: int) -> bytes:
    """The bytes of one zip member, refused beyond ``limit`` unpacked (a bounded read: headers can lie)."""
    info = archive.getinfo(name)
    if info.file_size > limit:
        raise ModelFileError(f"{path}: {name} unpacks to {info.file_size:,} bytes; at most {limit:,} are read "
                             "(not a model file, or a zip bomb)")
    with archive.open(info) as member:
        # At most the size the header gives: a header that lies low ends in a CRC error, not a big buffer.
        data = member.read(info.file_size + 1)
    if len(data) != info.file_size:
        raise ModelFileError(f"{path}: {name} does not unpack to the {info.file_size:,} bytes its header gives "
                             "(a damaged file or a zip bomb)")
    return data


def load_weights(data: bytes, path: str, name: str = f"the network weights ({WEIGHTS_NAME})") -> Any:
    """What ``torch.save`` wrote in ``data`` (``policy.pth``, or the file ``name`` says): torch's zip format checked,
    then read with ``weights_only=True`` (no code runs)."""
    # torch.save writes a zip of stored members; check it is one, and that no member claims more
    # bytes than it has, before torch allocates anything from its headers.
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as inner:
            infos = inner.infolist()
    except zipfile.BadZipFile:
        raise ModelFileError(f"{path}: {name} are not in torch.save's format (a zip archive)") from None
    if len(infos) > 4 * MAX_MEMBERS or any(
        i.compress_type != zipfile.ZIP_STORED or i.file_size != i.compress_size
        or i.header_offset + i.compress_size > len(data) for i in infos
    ):
        raise ModelFileError(f"{path}: {name} are damaged: their members are not the stored records torch.save "
                             "writes")
    torch = import_extra("torch", "train", f"reading the network of {path}")

    try:
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:  # weights_only's refusal: a class or a call that is not plain tensors
        raise ModelFileError(f"{path}: {name} cannot be read: they hold objects other than tensors and plain "
                             "containers, which torch.load(weights_only=True) refuses to build") from None
    except Exception as err:  # torch's unpickler raises many kinds on a damaged or hostile policy.pth
        raise ModelFileError(f"{path}: {name} cannot be read: {type(err).__name__}: {_line(str(err))}") from None
    if isinstance(state, Mapping):
        total = 0
        for key, value in state.items():
            if hasattr(value, "untyped_storage"):
                check_layout(value, str(key), path)
                total += int(value.numel())
        if total > MAX_WEIGHT_ELEMENTS:
            raise ModelFileError(f"{path}: the tensors of {WEIGHTS_NAME} hold {total:,} values together; at most "
                                 f"{MAX_WEIGHT_ELEMENTS:,} are read (MAX_WEIGHT_ELEMENTS)")
    return state


def _separate(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether a view of ``shape`` and ``strides`` (in elements) gives each value a place of its own (no overlap)."""
    span = 1
    for stride, size in sorted((abs(st), n) for n, st in zip(shape, strides) if n > 1):
        if stride < span:
            return False
        span = stride * size
    return True


def check_layout(value: Any, key: str, path: str) -> None:
    """Refuse a tensor or array that is not a view of its own stored values: overlapping, stride-0, or outside.

    A stride-0 or overlapping view shows a large matrix over a few stored
    bytes; refused here, before anything copies it to its full size.  (A slice
    of a larger saved tensor is a fine view: it only reads values stored.)
    """
    if hasattr(value, "untyped_storage"):  # a torch tensor
        layout = str(getattr(value, "layout", "torch.strided"))
        if layout != "torch.strided" or getattr(value, "is_nested", False):
            # A sparse (or nested) tensor has no strides nor one storage to check: torch would say only that.
            kind = "nested" if getattr(value, "is_nested", False) else layout.removeprefix("torch.")
            raise ModelFileError(f"{path}: {key} is a {kind} tensor; a model file holds dense weights "
                                 "(torch.strided), as torch.save writes a network's state_dict")
        shape, numel, strides = tuple(value.shape), int(value.numel()), tuple(value.stride())
        last = value.storage_offset() + sum((n - 1) * st for n, st in zip(shape, strides))
        within = value.storage_offset() >= 0 and (last + 1) * value.element_size() <= value.untyped_storage().nbytes()
    elif isinstance(value, np.ndarray):
        shape, numel = value.shape, int(value.size)
        strides = tuple(st // max(value.itemsize, 1) if st % max(value.itemsize, 1) == 0 else 0 for st in value.strides)
        within = True  # numpy makes no view outside its buffer
    else:
        return
    if numel > MAX_WEIGHT_ELEMENTS:
        raise ModelFileError(f"{path}: {key} has shape {shape}, {numel:,} values; at most {MAX_WEIGHT_ELEMENTS:,} "
                             "are read (MAX_WEIGHT_ELEMENTS)")
    if numel and not (within and _separate(shape, strides)):
        raise ModelFileError(f"{path}: {key} of shape {shape} is a view with strides {strides}, not stored weights "
                             "(a stride-0 or overlapping view over fewer stored values): damaged or hostile weights")


def read_count(value: Any, what: str, path: str, low: int = 0, high: int = MAX_COUNT, text: bool = False) -> int:
    """The one reader of a number in a model file's metadata: a JSON integer (never a bool or a float) or, with
    ``text``, a string of ASCII digits as Stable-Baselines3 writes numpy integers (``"52"``), from ``low`` to
    ``high``; the digits are counted before Python converts them.  Anything else is a ``ModelFileError``."""
    if text and isinstance(value, str):
        if not (value.isascii() and value.isdigit() and len(value) <= len(str(high))):
            raise ModelFileError(f"{path}: {what} is {_show(value)}, not a whole number {low:,}..{high:,} "
                                 "written in ASCII digits")
        number: int | None = int(value)
    else:
        number = as_int(value)
    if number is None or not low <= number <= high:
        raise ModelFileError(f"{path}: {what} must be an integer {low:,}..{high:,}, got {_show(value)}")
    return number


def check_metadata(meta: Any, path: str) -> None:
    """Refuse metadata whose format, or any field the player uses, has the wrong type or value."""
    if not isinstance(meta, dict) or meta.get("format") != MODEL_FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else meta
        raise ModelFileError(f"{path}: metadata format {_show(found)} is not {MODEL_FORMAT!r}")
    for key in ("obs_version", "obs_size", "rules", "players", "activation", "net_arch"):
        if key not in meta:
            raise ModelFileError(f"{path}: metadata lacks {key!r}")
    for key in ("obs_version", "obs_size"):
        read_count(meta[key], f"metadata {key}", path)
    if meta["obs_version"] != OBS_VERSION or meta["obs_size"] != OBS_SIZE:
        raise ModelMismatchError(
            f"model {path} was trained on observation version {meta['obs_version']} (size {meta['obs_size']}); "
            f"this package encodes version {OBS_VERSION} (size {OBS_SIZE}): retrain it with this version"
        )
    field = meta["rules"]
    if not (isinstance(field, Mapping) or (isinstance(field, list) and field
                                           and all(isinstance(r, Mapping) for r in field))):
        raise ModelFileError(f"{path}: metadata rules must be an object of rules options or a non-empty list of "
                             f"them, got {_show(field)}")
    try:
        known = trained_rules(meta)
    except (PopeJoanError, TypeError, RecursionError) as err:  # RecursionError: a value nested too deep to print
        raise ModelFileError(f"{path}: metadata rules are not valid: {_clip(str(err))}") from None
    players = meta["players"]
    if not isinstance(players, list) or not players:
        raise ModelFileError(f"{path}: metadata players must be a list of table sizes "
                             f"{MIN_PLAYERS}..{MAX_PLAYERS}, got {_show(players)}")
    for n in players:
        read_count(n, "metadata players: a table size", path, MIN_PLAYERS, MAX_PLAYERS)
    for rules in known:
        for n in players:
            try:
                rules.hand_sizes(n)
            except PopeJoanError as err:  # pack=small is dealt to 3 players only
                raise ModelFileError(f"{path}: metadata rules and players name a table no deal can be played at: "
                                     f"{_clip(str(err))}") from None
    activation = meta["activation"]
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ModelFileError(f"{path}: metadata activation must be one of {sorted(ACTIVATIONS)}, "
                             f"got {_show(activation)}")
    net_arch = meta["net_arch"]
    if not isinstance(net_arch, list):
        raise ModelFileError(f"{path}: metadata net_arch must be a list of layer widths (positive integers), "
                             f"got {_show(net_arch)}")
    for width in net_arch:
        read_count(width, "metadata net_arch: a layer width", path, 1, MAX_WEIGHT_ELEMENTS)
    if "timesteps" in meta:
        read_count(meta["timesteps"], "metadata timesteps", path)
    architecture = meta.get("architecture", "mlp")
    if architecture not in ("mlp", suits.ARCHITECTURE):
        raise ModelFileError(f"{path}: metadata architecture must be 'mlp' or {suits.ARCHITECTURE!r}, "
                             f"got {_show(architecture)}")
    if architecture == suits.ARCHITECTURE and len(net_arch) < 2:
        raise ModelFileError(f"{path}: a suits actor's net_arch is its context width and at least one hidden "
                             f"width, got {_show(net_arch)}")


def _show(value: Any) -> str:
    """A short repr of a value read from a file (lists and texts cut, nesting bounded)."""
    return reprlib.repr(value)


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _line(text: str) -> str:
    """A library's error message as one clipped line: its first line, without terminal escape codes."""
    return _clip(re.sub(r"\x1b\[[0-9;]*m", "", text).strip().split("\n")[0])


def linear(state: Mapping[str, Any], name: str, path: str) -> tuple[np.ndarray, np.ndarray]:
    """(weight transposed to [in, out], bias [out]) of a Linear layer, as float32, with every check."""
    weight = tensor(state, f"{name}.weight", 2, path)
    bias = tensor(state, f"{name}.bias", 1, path)
    if bias.shape[0] != weight.shape[0]:
        raise ModelFileError(f"{path}: {name}.bias has shape {tuple(bias.shape)}, but {name}.weight "
                             f"{tuple(weight.shape)} has {weight.shape[0]} outputs")
    return weight.T.copy(), bias


MLP_ACTOR = "mlp_extractor.policy_net."
"""The prefix of an MLP actor's hidden layers in SB3's ``state_dict`` (``MlpExtractor``: Linear, activation, ...)."""


def mlp_actor(state: Any, metadata: Mapping[str, Any],
              path: str) -> tuple[list[tuple[np.ndarray, np.ndarray]], tuple[np.ndarray, np.ndarray]]:
    """(hidden layers, head) of an MLP actor, each ``linear``: SB3's ``policy_net`` layers in sequence and its
    ``action_net``, chained from the observation's ``OBS_SIZE`` values to the 52 card ids, their widths those of
    the metadata's ``net_arch``."""
    if not isinstance(state, Mapping):
        raise ModelFileError(f"{path}: {WEIGHTS_NAME} holds a {type(state).__name__}, not a state_dict of tensors")
    layers = []
    k = 0
    while f"{MLP_ACTOR}{k}.weight" in state or f"{MLP_ACTOR}{k}.bias" in state:
        layers.append(linear(state, f"{MLP_ACTOR}{k}", path))
        k += 2  # Linear, activation, Linear, ... in SB3's MlpExtractor
    stray = sorted(str(key) for key in state if str(key).startswith(MLP_ACTOR)
                   and str(key)[len(MLP_ACTOR):].partition(".")[0] not in {str(i) for i in range(0, k, 2)})
    if stray:
        raise ModelFileError(f"{path}: {WEIGHTS_NAME} has policy layers {stray[:4]} out of sequence "
                             f"(layers 0, 2, 4 ... of SB3's MlpExtractor expected): damaged weights")
    if "action_net.weight" not in state:
        raise ModelFileError(f"{path}: {WEIGHTS_NAME} has no action_net: not a MaskablePPO MlpPolicy")
    head = linear(state, "action_net", path)
    width = OBS_SIZE
    for (w, _), name in zip(layers + [head], [f"{MLP_ACTOR}{i}" for i in range(0, k, 2)] + ["action_net"]):
        if w.shape[0] != width:
            raise ModelFileError(f"{path}: network layer {name} expects {w.shape[0]} inputs, got {width} "
                                 "(unsupported architecture or damaged weights)")
        width = w.shape[1]
    if width != NUM_CARD_IDS:
        raise ModelFileError(f"{path}: network has {width} outputs, expected {NUM_CARD_IDS} actions")
    widths = [w.shape[1] for w, _ in layers]
    if [int(n) for n in metadata["net_arch"]] != widths:
        raise ModelFileError(f"{path}: metadata net_arch {metadata['net_arch']} does not match the weights, "
                             f"whose hidden layers are {widths}")
    return layers, head


def tensor(state: Mapping[str, Any], key: str, ndim: int, path: str) -> np.ndarray:
    """One float tensor of the state_dict as a float32 array of ``ndim`` dimensions, all values finite."""
    if key not in state:
        raise ModelFileError(f"{path}: {WEIGHTS_NAME} lacks {key}: damaged weights or not an MlpPolicy")
    value = state[key]
    if hasattr(value, "detach") and hasattr(value, "is_floating_point"):  # a torch tensor
        if not value.is_floating_point():
            raise ModelFileError(f"{path}: {key} is a {value.dtype} tensor, not a float tensor")
        check_layout(value, key, path)  # before .float() copies it
        try:
            array = value.detach().cpu().float().numpy()
        except (RuntimeError, TypeError, ValueError) as err:
            raise ModelFileError(f"{path}: {key} cannot be read as an array: {_clip(str(err))}") from None
    elif isinstance(value, np.ndarray):
        if not np.issubdtype(value.dtype, np.floating):
            raise ModelFileError(f"{path}: {key} is a {value.dtype} array, not a float array")
        array = value
    else:
        raise ModelFileError(f"{path}: {key} is a {type(value).__name__}, not a tensor")
    check_layout(value, key, path)
    if array.ndim != ndim:
        raise ModelFileError(f"{path}: {key} has shape {tuple(array.shape)}; a {'bias' if ndim == 1 else 'weight'} "
                             f"has {ndim} dimension{'s' if ndim > 1 else ''}")
    if 0 in array.shape:
        raise ModelFileError(f"{path}: {key} has shape {tuple(array.shape)}: an empty layer")
    array = array.astype(np.float32)
    if not np.isfinite(array).all():
        raise ModelFileError(f"{path}: {key} holds NaN or infinite values (a diverged training run?); "
                             "such a network picks cards arbitrarily")
    return array


# ---------------------------------------------------------------- a zip Stable-Baselines3 saved on its own
SB3_DATA_NAME = "data"
"""Zip member in which Stable-Baselines3 keeps a model's attributes, as JSON."""
MAX_SB3_DATA_BYTES = 16 * 2**20
"""Largest ``data`` read, unpacked (it carries the last observations of every env: ~7 kB per env)."""


def read_sb3_zip(path: str | os.PathLike[str], weights: bool = True) -> tuple[dict[str, Any], Any] | None:
    """(SB3's ``data`` JSON, the ``policy.pth`` state_dict or None) of a zip Stable-Baselines3 saved without
    ``popejoan.json``, read as ``read_model`` reads (bounded, no pickle); None for any other file."""
    path = os.fspath(path)
    if not os.path.isfile(path):  # a device or a pipe: zipfile would read it to its end (/dev/zero: forever)
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if (len(names) > MAX_MEMBERS or META_NAME in names
                    or SB3_DATA_NAME not in names or WEIGHTS_NAME not in names):
                return None
            text = _member(archive, path, SB3_DATA_NAME, MAX_SB3_DATA_BYTES)
            try:
                data = json.loads(text.decode("utf-8"))
            except (RecursionError, ValueError) as err:
                raise ModelFileError(f"{path}: Stable-Baselines3's {SB3_DATA_NAME} is not valid JSON: "
                                     f"{_clip(str(err))}") from None
            if not isinstance(data, dict):
                raise ModelFileError(f"{path}: Stable-Baselines3's {SB3_DATA_NAME} holds a "
                                     f"{type(data).__name__}, not an object of the model's attributes")
            state = load_weights(_member(archive, path, WEIGHTS_NAME, MAX_WEIGHTS_BYTES), path) if weights else None
    except (ModelFileError, MissingDependencyError):
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, RuntimeError, NotImplementedError,
            ValueError):  # not a readable zip: read_model names the problem
        return None
    return data, state


__all__ = [
    "ACTIVATIONS", "CHECKED_FIELDS", "MAX_COUNT", "MAX_MEMBERS", "MAX_METADATA_BYTES", "MAX_NETWORK_VALUES",
    "MAX_WEIGHTS_BYTES",
    "MAX_WEIGHT_ELEMENTS", "META_NAME", "MODEL_FORMAT", "ModelFileError", "ModelMismatchError", "WEIGHTS_NAME",
    "check_layout", "check_metadata", "linear", "load_weights", "mlp_actor", "model_metadata", "read_count",
    "read_metadata", "read_model", "rules_field", "save_model", "save_state_dict", "tensor", "trained_rules",
]
