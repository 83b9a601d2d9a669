"""Learned players: MaskablePPO models saved by ``training/train_ppo.py``, played through the player protocol.

A model file is Stable-Baselines3's ``.zip`` (so ``MaskablePPO.load`` resumes
training from it) with one more member, ``popejoan.json``, that says what the
network expects::

    {"format": "popejoan-model/1", "obs_version": 2, "obs_size": 1285,
     "rules": {"preset": "modern", ...}, "players": [4], "package_version": "0.1.0",
     "activation": "tanh", "net_arch": [64, 64], "timesteps": 800000, ...}

``rules`` is one rules object, or a list of them for a network trained on
several presets (the observation's rule flags tell them apart); the model
plays any of them (``trained_rules``).

Every checkpoint the training script writes carries it, so a checkpoint of
another run loads the same way.  Playing needs no Stable-Baselines3: the actor
network is read from ``policy.pth`` and run in numpy (a few µs per decision).
The default is the **deterministic** policy: the legal card with the highest
logit.

**Trust.** ``load_player``, ``load_policy``, ``read_metadata`` and
``make_player`` read no pickle that can run code: ``popejoan.json`` is JSON,
and ``policy.pth`` is read with ``torch.load(..., weights_only=True)``, which
refuses anything but tensors and plain containers, so a hostile file is
refused with a ``ModelFileError`` and its code never runs.
``MaskablePPO.load`` (Stable-Baselines3, to resume training) is different: it
**unpickles** members of the file and can execute code from it, so only load
files you trust that way.

Everything is checked when the file is loaded, never at the first ``act``:
the zip (at most ``MAX_MEMBERS`` members; ``popejoan.json`` at most
``MAX_METADATA_BYTES``, ``policy.pth`` at most ``MAX_WEIGHTS_BYTES``,
unpacked, read with bounded reads so a zip bomb or a lying header cannot fill
memory; ``policy.pth`` in ``torch.save``'s own format, whose records are
stored and no larger than the member), every metadata field the player uses
(type and value), and every
tensor of the actor (present, a float tensor, a 2-d weight and a 1-d bias of
matching shapes, the widths of ``net_arch``, all values finite: a model with
NaN or infinite weights is refused, since its logits would pick a card
arbitrarily).  A file that is not a model, a corrupt one, a model for another
observation version or — when the caller says which rules it will play —
other rules is refused with a ``ModelFileError`` / ``ModelMismatchError``
naming the file, the field and the problem.  A caller that does not say is
still protected: the ``SeatView`` carries the rules, and ``act`` refuses a
game under rules the model was not trained for.

>>> player = load_player("models/ppo_modern_4p/model.zip", seed=0)   # doctest: +SKIP
>>> card = player.act(aec_env.seat_view(agent))                       # doctest: +SKIP
"""

from __future__ import annotations

import io
import json
import os
import reprlib
import zipfile
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.checks import as_int
from popejoan_env.errors import PopeJoanError
from popejoan_env.files import replacing
from popejoan_env.observation import OBS_SIZE, OBS_VERSION, encode_view, play_rules
from popejoan_env.players import suits
from popejoan_env.players.base import legal_of
from popejoan_env.rules import MAX_PLAYERS, MIN_PLAYERS, Rules, RulesLike, resolve_rules
from popejoan_env.seat_view import SeatView

if TYPE_CHECKING:
    from popejoan_env.batch import BatchDeals

MODEL_FORMAT = "popejoan-model/1"
"""Value of ``format`` in a model's metadata."""
META_NAME = "popejoan.json"
"""Zip member holding the metadata."""
WEIGHTS_NAME = "policy.pth"
"""Zip member holding the policy's ``state_dict`` (written by Stable-Baselines3)."""
MAX_MEMBERS = 64
"""Most members a model zip may have (Stable-Baselines3 writes 7)."""
MAX_METADATA_BYTES = 2**20
"""Largest ``popejoan.json`` read, unpacked (a real one is under 1 kB)."""
MAX_WEIGHTS_BYTES = 64 * 2**20
"""Largest ``policy.pth`` read, unpacked (the shipped 128x128 model's is 0.9 MB)."""
_ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}
_POLICY_NET = "mlp_extractor.policy_net."


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
    activation: str = "tanh",
    **extra: Any,
) -> dict[str, Any]:
    """The metadata a saved model carries (observation version, rules — one, or a list —, package version,
    network shape)."""
    from popejoan_env import __version__

    if activation not in _ACTIVATIONS:
        raise PopeJoanError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
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


def save_model(model: Any, path: str | os.PathLike[str], metadata: Mapping[str, Any]) -> str:
    """Save an SB3 model to ``path`` (``.zip``) with ``popejoan.json`` inside; returns the path written."""
    path = os.fspath(path)
    if not path.endswith(".zip"):
        path += ".zip"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    # Never leave a half-written model where a reader may look: the zip replaces ``path`` when complete.
    with replacing(path) as tmp:
        model.save(tmp)
        with zipfile.ZipFile(tmp, "a", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(META_NAME, json.dumps(dict(metadata), indent=1, sort_keys=True))
    return path


def save_state_dict(state: Mapping[str, Any], path: str | os.PathLike[str], metadata: Mapping[str, Any]) -> str:
    """Save an actor's ``state_dict`` (SB3's layer names) as a model file without SB3; returns the path written."""
    import torch

    class _Weights:
        def save(self, target: str) -> None:
            buf = io.BytesIO()
            torch.save(state if isinstance(state, dict) else dict(state), buf)
            with zipfile.ZipFile(target, "w") as archive:
                archive.writestr(WEIGHTS_NAME, buf.getvalue())

    return save_model(_Weights(), path, metadata)


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``popejoan.json`` metadata of a model file."""
    meta, _ = _read(path, weights=False)
    return meta


# ---------------------------------------------------------------- the network
class Policy:
    """The actor of a saved MaskablePPO model, evaluated in numpy."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]], head: tuple[np.ndarray, np.ndarray] | None,
                 activation: str, metadata: dict[str, Any], path: str,
                 actor: suits.NumpyActor | None = None) -> None:
        self.layers = layers
        self.head = head
        self.actor = actor
        """The suits actor (``layers`` and ``head`` are then empty), or None for an MLP."""
        self.activation = _ACTIVATIONS[activation]
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
             deterministic: bool = True) -> int:
        """A legal card id (``legal``: the card ids): the best logit, or a sample of the masked softmax when not
        deterministic; ``choose`` for one observation."""
        row = np.zeros((1, NUM_CARD_IDS), dtype=bool)
        row[0, np.asarray(legal, dtype=np.intp)] = True
        return int(self.choose(np.asarray(obs, dtype=np.float32).reshape(1, -1), row, rng, deterministic)[0])

    def choose(self, obs: np.ndarray, legal: np.ndarray, rng: np.random.Generator | None = None,
               deterministic: bool = True) -> np.ndarray:
        """A legal card id per row of ``obs`` [k, OBS_SIZE] (``legal``: [k, 52] bool), in one forward: the best
        legal logit (the lowest card id of a tie), or with ``rng`` and not ``deterministic`` a sample of the
        masked softmax, one uniform per row in order, none for a row with one legal card."""
        z = np.where(legal, self.logits(obs), -np.inf)
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


def _read(path: str | os.PathLike[str], weights: bool = True) -> tuple[dict[str, Any], Any]:
    """(metadata, the ``policy.pth`` state_dict as loaded, or None) from a model file, with clear errors."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ModelFileError(f"model file {path!r} does not exist")
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
                        "popejoan_env.players.learned.save_model (training/train_ppo.py does)"
                    )
                raise ModelFileError(f"{path} is not a model file: a zip archive without {META_NAME} or "
                                     f"{WEIGHTS_NAME} inside (another kind of file, or truncated)")
            text = _member(archive, path, META_NAME, MAX_METADATA_BYTES)
            try:
                meta = json.loads(text.decode("utf-8"))
            except (RecursionError, ValueError) as err:  # not UTF-8, not JSON, too deep, a huge integer
                raise ModelFileError(f"{path}: {META_NAME} is not valid JSON: {_clip(str(err))}") from None
            _check_metadata(meta, path)
            state = None
            if weights:
                if WEIGHTS_NAME not in names:
                    raise ModelFileError(f"{path} has no {WEIGHTS_NAME}: not a complete model file")
                state = _load_weights(_member(archive, path, WEIGHTS_NAME, MAX_WEIGHTS_BYTES), path)
    except ModelFileError:
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


def _load_weights(data: bytes, path: str) -> Any:
    """The ``state_dict`` in ``policy.pth``: torch's zip format read with ``weights_only=True`` (no code runs)."""
    # torch.save writes a zip of stored members; check it is one, and that no member claims more
    # bytes than it has, before torch allocates anything from its headers.
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as inner:
            infos = inner.infolist()
    except zipfile.BadZipFile:
        raise ModelFileError(f"{path}: the network weights ({WEIGHTS_NAME}) are not in torch.save's format "
                             "(a zip archive)") from None
    if len(infos) > 4 * MAX_MEMBERS or any(
        i.compress_type != zipfile.ZIP_STORED or i.file_size != i.compress_size
        or i.header_offset + i.compress_size > len(data) for i in infos
    ):
        raise ModelFileError(f"{path}: the network weights ({WEIGHTS_NAME}) are damaged: their members "
                             "are not the stored records torch.save writes")
    import torch

    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # torch's unpickler raises many kinds on a damaged or hostile policy.pth
        raise ModelFileError(f"{path}: the network weights ({WEIGHTS_NAME}) cannot be read: "
                             f"{type(err).__name__}: {_clip(str(err))}") from None


def _check_metadata(meta: Any, path: str) -> None:
    """Refuse metadata whose format, or any field the player uses, has the wrong type or value."""
    if not isinstance(meta, dict) or meta.get("format") != MODEL_FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else meta
        raise ModelFileError(f"{path}: metadata format {_show(found)} is not {MODEL_FORMAT!r}")
    for key in ("obs_version", "obs_size", "rules", "players", "activation", "net_arch"):
        if key not in meta:
            raise ModelFileError(f"{path}: metadata lacks {key!r}")
    for key in ("obs_version", "obs_size"):
        if as_int(meta[key]) is None:
            raise ModelFileError(f"{path}: metadata {key} must be an integer, got {_show(meta[key])}")
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
        trained_rules(meta)
    except (PopeJoanError, TypeError, RecursionError) as err:  # RecursionError: a value nested too deep to print
        raise ModelFileError(f"{path}: metadata rules are not valid: {_clip(str(err))}") from None
    players = meta["players"]
    if (not isinstance(players, list) or not players
            or not all(as_int(n) is not None and MIN_PLAYERS <= n <= MAX_PLAYERS for n in players)):
        raise ModelFileError(f"{path}: metadata players must be a list of table sizes "
                             f"{MIN_PLAYERS}..{MAX_PLAYERS}, got {_show(players)}")
    activation = meta["activation"]
    if not isinstance(activation, str) or activation not in _ACTIVATIONS:
        raise ModelFileError(f"{path}: metadata activation must be one of {sorted(_ACTIVATIONS)}, "
                             f"got {_show(activation)}")
    net_arch = meta["net_arch"]
    if not isinstance(net_arch, list) or not all(as_int(w) is not None and w > 0 for w in net_arch):
        raise ModelFileError(f"{path}: metadata net_arch must be a list of layer widths (positive integers), "
                             f"got {_show(net_arch)}")
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


def load_policy(path: str | os.PathLike[str], rules: RulesLike = None) -> Policy:
    """The actor network of a model file; ``rules`` (if given) must be the rules it was trained for."""
    path = os.fspath(path)
    meta, state = _read(path)
    policy = policy_from_state(state, meta, path)
    if rules is not None:
        policy.check(resolve_rules(rules))
    return policy


def policy_from_state(state: Mapping[str, Any], metadata: dict[str, Any], path: str = "<memory>") -> Policy:
    """A ``Policy`` from an SB3 policy ``state_dict`` (tensors or arrays) and its metadata; every tensor checked."""
    _check_metadata(metadata, path)
    if not isinstance(state, Mapping):
        raise ModelFileError(f"{path}: {WEIGHTS_NAME} holds a {type(state).__name__}, not a state_dict of tensors")
    if metadata.get("architecture") == suits.ARCHITECTURE:
        weights = {}
        for name, shape in suits.shapes(metadata["net_arch"]).items():
            weights[name] = _tensor(state, suits.PREFIX + name, len(shape), path)
            if weights[name].shape != shape:
                raise ModelFileError(f"{path}: {suits.PREFIX + name} has shape {weights[name].shape}; "
                                     f"net_arch {metadata['net_arch']} needs {shape}")
        return Policy([], None, metadata["activation"], metadata, path,
                      actor=suits.NumpyActor(weights, metadata["activation"]))
    layers = []
    k = 0
    while f"{_POLICY_NET}{k}.weight" in state or f"{_POLICY_NET}{k}.bias" in state:
        layers.append(_linear(state, f"{_POLICY_NET}{k}", path))
        k += 2  # Linear, activation, Linear, ... in SB3's MlpExtractor
    stray = sorted(str(key) for key in state if str(key).startswith(_POLICY_NET)
                   and str(key)[len(_POLICY_NET):].partition(".")[0] not in {str(i) for i in range(0, k, 2)})
    if stray:
        raise ModelFileError(f"{path}: {WEIGHTS_NAME} has policy layers {stray[:4]} out of sequence "
                             f"(layers 0, 2, 4 ... of SB3's MlpExtractor expected): damaged weights")
    if "action_net.weight" not in state:
        raise ModelFileError(f"{path}: {WEIGHTS_NAME} has no action_net: not a MaskablePPO MlpPolicy")
    head = _linear(state, "action_net", path)
    width = OBS_SIZE
    for (w, _), name in zip(layers + [head], [f"{_POLICY_NET}{i}" for i in range(0, k, 2)] + ["action_net"]):
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
    return Policy(layers, head, metadata["activation"], metadata, path)


def _linear(state: Mapping[str, Any], name: str, path: str) -> tuple[np.ndarray, np.ndarray]:
    """(weight transposed to [in, out], bias [out]) of a Linear layer, as float32, with every check."""
    weight = _tensor(state, f"{name}.weight", 2, path)
    bias = _tensor(state, f"{name}.bias", 1, path)
    if bias.shape[0] != weight.shape[0]:
        raise ModelFileError(f"{path}: {name}.bias has shape {tuple(bias.shape)}, but {name}.weight "
                             f"{tuple(weight.shape)} has {weight.shape[0]} outputs")
    return weight.T.copy(), bias


def _tensor(state: Mapping[str, Any], key: str, ndim: int, path: str) -> np.ndarray:
    """One float tensor of the state_dict as a float32 array of ``ndim`` dimensions, all values finite."""
    if key not in state:
        raise ModelFileError(f"{path}: {WEIGHTS_NAME} lacks {key}: damaged weights or not an MlpPolicy")
    value = state[key]
    if hasattr(value, "detach") and hasattr(value, "is_floating_point"):  # a torch tensor
        if not value.is_floating_point():
            raise ModelFileError(f"{path}: {key} is a {value.dtype} tensor, not a float tensor")
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


# ---------------------------------------------------------------- the player
class LearnedPlayer:
    """A saved model at a seat: it encodes the ``SeatView`` it is handed and plays the policy's card."""

    def __init__(self, policy: Policy, seed: int | None = None, deterministic: bool = True,
                 name: str | None = None, rng: np.random.Generator | None = None) -> None:
        self.policy = policy
        self.deterministic = deterministic
        if name is None:
            name = os.path.splitext(os.path.basename(policy.path))[0]
            if name == "model":  # models/<run>/model.zip: the run name says more
                name = os.path.basename(os.path.dirname(os.path.abspath(policy.path))) or "model"
        self.name = name
        self.rng = rng if rng is not None else np.random.default_rng(seed)
        self._checked: Rules | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        """The model's metadata (observation version, rules, training run ...)."""
        return self.policy.metadata

    def reset(self, seed: int | None = None) -> None:
        """Restart the player's generator (used only when not deterministic)."""
        self.rng = np.random.default_rng(seed)

    def act(self, view: SeatView) -> int:
        """The card to play: the only legal one at once, else the policy's (best logit, or a masked-softmax sample)."""
        legal = legal_of(view, self.name)
        if len(legal) == 1:
            return legal[0]
        self._check(view.rules)
        return self.policy.pick(encode_view(view), legal, self.rng, self.deterministic)

    def act_batch(self, batch: BatchDeals, rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The card of the seat to act in each deal ``rows`` of ``batch`` (``legal``: their legal cards), in one
        encoding and one forward: what ``act`` gives row by row, with the same draws of the generator."""
        from popejoan_env.batch_observation import encode_batch  # the batch engine: only where a batch is played

        self._check(batch.rules)
        return self.policy.choose(encode_batch(batch, rows, batch.to_act[rows]), legal, self.rng, self.deterministic)

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
                rules: RulesLike = None, deterministic: bool = True) -> LearnedPlayer:
    """A player from a model file; pass ``rules`` to refuse a model trained for other rules.

    Reads no pickle that can run code (JSON metadata, weights through
    ``torch.load(weights_only=True)``), so any file may be given; everything is
    checked here, and a bad file raises ``ModelFileError``.  ``MaskablePPO.load``
    unpickles the same file and can execute code from it: use it on trusted files only.
    """
    return LearnedPlayer(load_policy(path, rules=rules), seed=seed, deterministic=deterministic)


__all__ = [
    "LearnedPlayer", "ModelFileError", "ModelMismatchError", "Policy", "load_player",
    "load_policy", "model_metadata", "policy_from_state", "read_metadata", "rules_field", "save_model",
    "save_state_dict", "trained_rules",
]
