"""The ``suits`` actor: one network shared by the four suits, that scores the 13 ranks of each.

A card's worth in Pope Joan hangs on its neighbours in its suit: a lead runs up
the ranks until a stop, so whether the next cards are in the hand, played, dead
or inferred elsewhere decides what a lead brings.  A flat MLP must learn that
for each suit apart; this actor learns it once, from four times the examples:

* **A suit's planes.** The observation's 23 planes of 52 cards (``CARD_PLANES``:
  the hand, who played each card, the play order, leads, the turn-up, the card
  due, known and seen dead cards, the inferred holdings), plus "this suit is
  trumps", cut into the four suits: 24 × 13 inputs per suit, with the suit's
  one-hot (the diamonds hold the Pope and lack the 8).
* **The whole table.** One linear layer of the whole observation (``glob``)
  gives every suit the same context: the other suits, the board, the balances.
* **The suit network.** Hidden layers (``suit0``, ``suit1``, …) read a suit's
  inputs and the context, with the same weights for every suit, and ``out``
  scores the suit's 13 ranks: the 52 logits.

Every layer is one matrix product, so a batch trains about as fast as the flat
MLP.  The weights are a ``state_dict`` under ``PREFIX`` (torch's ``[out, in]``
layout); ``NumpyActor`` plays them in numpy (the model files' player; its first
layers add up the rows of an observation's few non-zero columns) and
``logits_torch`` trains and batches them; the two agree to float rounding
(tested).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from popejoan_env.cards import NUM_CARD_IDS
from popejoan_env.observation import LAYOUT, OBS_SIZE

ARCHITECTURE = "suits"
"""The metadata ``architecture`` of a model with this actor (an MLP actor has ``mlp`` or none)."""
PREFIX = "mlp_extractor.actor."
"""Where the actor's weights sit in the policy's ``state_dict``."""
_FIELDS = {name: (start, length) for name, start, length, _ in LAYOUT}
CARD_PLANES: tuple[str, ...] = tuple(name for name, (_, length) in _FIELDS.items()
                                     if length % NUM_CARD_IDS == 0 and length >= NUM_CARD_IDS)
"""The observation's fields of one or more 52-card planes (``played_by`` and ``inferred`` hold 8 each)."""
_PLANES: np.ndarray = np.concatenate([np.arange(_FIELDS[n][0], _FIELDS[n][0] + _FIELDS[n][1]) for n in CARD_PLANES]
                                     + [_FIELDS["trumps"][0] + np.arange(NUM_CARD_IDS) // 13]).reshape(-1, 4, 13)
SUIT_INDEX: np.ndarray = _PLANES.transpose(1, 0, 2).reshape(4, -1)
"""[4, 24 * 13] the observation's column of each input of each suit: its 23 planes, then its trumps flag."""
SUIT_INPUTS = SUIT_INDEX.shape[1] + 4
"""Inputs of a suit besides the context: its planes and its one-hot."""
DEFAULT_WIDTHS: tuple[int, ...] = (64, 128, 128)
"""``net_arch`` of a suits actor: the context width, then the suit network's hidden widths."""


def shapes(net_arch: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """The shape of every weight of a suits actor of ``net_arch`` = (context, hidden, ...)."""
    context, *hidden = (int(w) for w in net_arch)
    out = {"glob.weight": (context, OBS_SIZE), "glob.bias": (context,)}
    width = SUIT_INPUTS + context
    for i, h in enumerate(hidden):
        out[f"suit{i}.weight"], out[f"suit{i}.bias"] = (h, width), (h,)
        width = h
    out["out.weight"], out["out.bias"] = (13, width), (13,)
    return out


class NumpyActor:
    """A suits actor's weights laid out for numpy once, and its forward.

    An observation is mostly zeros (about 60 of its 1,285 numbers are not), so the two layers that read it
    (the context and the suit planes' share of the first suit layer) add up the weight rows of its non-zero
    columns in one compiled loop (``_first_layers``) instead of multiplying whole matrices: about twice as
    fast a forward over a batch, the same logits to float rounding.  The layers after them are matrix
    products."""

    def __init__(self, weights: Mapping[str, np.ndarray], activation: str) -> None:
        w = {k: np.asarray(v, dtype=np.float32) for k, v in weights.items()}
        self.weights = w
        """The weights as given (``shapes``), for a torch forward of the same actor."""
        self.tanh = activation == "tanh"
        self.glob = (w["glob.weight"].T.copy(), w["glob.bias"])
        first = w["suit0.weight"]
        n = SUIT_INDEX.shape[1]
        planes = first[:, :n].T
        # each observation column's row of the first layer, in the one suit it feeds (a card column feeds one
        # suit once; a trumps column feeds its suit's 13 inputs, so its row is their sum); -1: no suit
        self.column_suit = np.full(OBS_SIZE, -1, dtype=np.int64)
        self.column_first = np.zeros((OBS_SIZE, first.shape[0]), dtype=np.float32)
        for suit in range(4):
            for k, column in enumerate(SUIT_INDEX[suit]):
                self.column_suit[column] = suit
                self.column_first[column] += planes[k]
        # the suit one-hot's share of the first layer is a bias per suit, with the layer's own bias
        self.first_suit = (first[:, n:n + 4].T + w["suit0.bias"]).copy()
        self.first_context = first[:, n + 4:].T.copy()
        depth = sum(1 for k in w if k.startswith("suit") and k.endswith(".weight"))
        self.hidden = [(w[f"suit{i}.weight"].T.copy(), w[f"suit{i}.bias"]) for i in range(1, depth)]
        self.out = (w["out.weight"].T.copy(), w["out.bias"])
        # The compiled loop is loaded (or compiled) at its first call: make it here, so that processes forked
        # after the actor is made (a tournament's workers, one pool a block of deals) inherit it loaded instead
        # of each importing numba and loading it again (~0.5 s each, which evaluate counted as thinking time).
        self.logits(np.zeros(OBS_SIZE, dtype=np.float32))

    def _act(self, x: np.ndarray) -> np.ndarray:
        return np.tanh(x, out=x) if self.tanh else np.maximum(x, 0, out=x)

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """The actor's logits ([B, 52], or [52] for one observation)."""
        x = np.asarray(obs, dtype=np.float32)
        one = x.ndim == 1
        x = np.ascontiguousarray(x.reshape(-1, OBS_SIZE))
        b = len(x)
        context = np.empty((b, self.glob[0].shape[1]), dtype=np.float32)  # [B, G]
        h = np.empty((b, 4, self.column_first.shape[1]), dtype=np.float32)  # [B, 4, H]
        _compiled()(x, self.glob[0], self.glob[1], self.column_suit, self.column_first, context, h)
        self._act(context)
        h += self.first_suit
        h += (context @ self.first_context)[:, None, :]
        h = self._act(h).reshape(b * 4, -1)
        for w, bias in self.hidden:
            h = self._act(h @ w + bias)
        out = (h @ self.out[0] + self.out[1]).reshape(b, NUM_CARD_IDS)
        return out[0] if one else out


def _first_layers(x, glob, glob_bias, column_suit, column_first, context, first):  # type: ignore[no-untyped-def]
    """``context = x @ glob + glob_bias`` and ``first[:, s] = (x's columns of suit s) @ column_first``, adding up the
    weight rows of each row's non-zero columns only (numba; ``_compiled``)."""
    rows, columns = x.shape
    width, height = glob.shape[1], column_first.shape[1]
    for r in range(rows):
        for g in range(width):
            context[r, g] = glob_bias[g]
        for s in range(4):
            for h in range(height):
                first[r, s, h] = 0.0
        for c in range(columns):
            v = x[r, c]
            if v != 0.0:
                for g in range(width):
                    context[r, g] += v * glob[c, g]
                s = column_suit[c]
                if s >= 0:
                    for h in range(height):
                        first[r, s, h] += v * column_first[c, h]


_COMPILED: list[Any] = []
"""``_first_layers`` compiled, made on first use (importing numba costs ~0.5 s)."""


def _compiled() -> Any:
    """``_first_layers`` compiled by numba (cached on disk)."""
    if not _COMPILED:
        import numba

        _COMPILED.append(numba.njit(cache=True, nogil=True)(_first_layers))
    return _COMPILED[0]


def logits_torch(weights: Mapping[str, Any], obs: Any, activation: str) -> Any:
    """The actor's logits [B, 52] in torch (training, batches), from tensors of ``shapes``."""
    import torch
    import torch.nn.functional as F

    act = torch.tanh if activation == "tanh" else torch.relu
    b = obs.shape[0]
    context = act(F.linear(obs, weights["glob.weight"], weights["glob.bias"]))
    suits = obs[:, torch.as_tensor(SUIT_INDEX, device=obs.device)]  # [B, 4, 312]
    one_hot = torch.eye(4, dtype=obs.dtype, device=obs.device).expand(b, 4, 4)
    h = torch.cat([suits, one_hot, context.unsqueeze(1).expand(b, 4, context.shape[1])], dim=2)
    i = 0
    while f"suit{i}.weight" in weights:
        h = act(F.linear(h, weights[f"suit{i}.weight"], weights[f"suit{i}.bias"]))
        i += 1
    return F.linear(h, weights["out.weight"], weights["out.bias"]).reshape(b, NUM_CARD_IDS)
