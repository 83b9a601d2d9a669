"""Compiled world draws (numba): ``worlds.place`` for many worlds in one call, with its own random numbers.

``WorldSampler.draw_many`` calls ``draw_worlds`` once per batch of worlds; ``decision_kernels.search`` (``pimc``'s
one-call search) runs ``draw_into`` itself, from the seed ``draw_many`` would use.  The kernel places the cards as
``worlds.place`` does, card for card: the constrained cards in their order, each into one of its slots with
probability proportional to the room left there (a dead end starts the world again, at most ``max_restarts``
times), then the free cards shuffled into the room left; the log importance weight is ``place``'s formula.
A world that runs out of restarts is marked unplaced and left to ``worlds.place_by_paths`` (Python, rare).

**Where the random numbers come from.**  The caller's ``numpy.random.Generator`` draws one 64-bit seed per
batch; the kernel expands it with SplitMix64 (a 64-bit counter passed through a fixed mixing function, one
output per uniform).  Why not uniforms drawn by the Generator: how many a batch needs is not known before the
draws (each restart takes new ones), and drawing a worst case for every batch would cost more than the
placements.  Why not numba's own ``np.random``: its state is global to a thread, not the caller's generator,
so two players in one process would share (and reorder) it.  A seed from the caller's generator keeps the
project's rule: the same seed gives the same worlds in any process, whatever else runs.
"""

from __future__ import annotations

import numpy as np

import numba

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53: the top 53 bits of an output as a float in [0, 1)


def _njit(f):  # type: ignore[no-untyped-def]
    return numba.njit(cache=True, nogil=True)(f)


@_njit
def _uniform(state):  # type: ignore[no-untyped-def]
    """SplitMix64's next output as a float in [0, 1) from ``state[0]`` (advanced)."""
    state[0] += _GOLDEN
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * _TO_UNIT


@_njit
def draw_worlds(seed, cards, allowed, room, max_restarts, log_of, log_factorial, masks, log_weights,
                placed):  # type: ignore[no-untyped-def]
    """Fill world ``w`` of ``masks[w, slot]`` (card-id bits, uint64), ``log_weights[w]`` and ``placed[w]`` for
    every ``w``: ``cards[:len(allowed)]`` are the constrained cards in placing order, ``allowed[j]`` the bits
    of the slots card ``j`` may go to, the rest of ``cards`` may go anywhere; ``room[s]`` is slot ``s``'s
    size.  ``placed[w]`` is False when ``max_restarts`` dead ends in a row left world ``w`` unplaced."""
    state = np.empty(1, dtype=np.uint64)
    state[0] = np.uint64(seed)
    draw_into(state, cards, allowed, room, max_restarts, log_of, log_factorial, masks, log_weights, placed)


@_njit
def draw_into(state, cards, allowed, room, max_restarts, log_of, log_factorial, masks, log_weights,
          placed):  # type: ignore[no-untyped-def]
    """``draw_worlds`` from a SplitMix64 state."""
    one = np.uint64(1)
    slots = len(room)
    constrained = len(allowed)
    free = len(cards) - constrained
    left = np.empty(slots, dtype=np.int64)
    shuffled = np.empty(free, dtype=np.int64)
    for w in range(masks.shape[0]):
        placed[w] = False
        log_weights[w] = 0.0
        for _ in range(max_restarts):
            for s in range(slots):
                left[s] = room[s]
                masks[w, s] = np.uint64(0)
            log_weight = 0.0
            dead_end = False
            for j in range(constrained):
                where = allowed[j]
                total = 0
                for s in range(slots):
                    if (where >> s) & 1:
                        total += left[s]
                if total == 0:
                    dead_end = True
                    break
                target = _uniform(state) * total
                chosen = -1
                for s in range(slots):
                    if (where >> s) & 1 and left[s]:
                        chosen = s
                        target -= left[s]
                        if target < 0:
                            break
                log_weight += log_of[total] - log_of[left[chosen]]
                left[chosen] -= 1
                masks[w, chosen] |= one << np.uint64(cards[j])
            if dead_end:
                continue
            for s in range(slots):
                log_weight -= log_factorial[left[s]]
            # The free cards: a uniformly random order (Fisher-Yates) cut into the room left, slot by slot.
            for i in range(free):
                shuffled[i] = cards[constrained + i]
            for i in range(free - 1, 0, -1):
                k = int(_uniform(state) * (i + 1))
                shuffled[i], shuffled[k] = shuffled[k], shuffled[i]
            at = 0
            for s in range(slots):
                for i in range(at, at + left[s]):
                    masks[w, s] |= one << np.uint64(shuffled[i])
                at += left[s]
            log_weights[w] = log_weight
            placed[w] = True
            break
