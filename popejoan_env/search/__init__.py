"""What search players share: the worlds a seat cannot tell apart, and every candidate played out in each.

A search player (``pimc``, ``pimc_net``, the rollout stage of ``popejoan train``) does not see the other hands.
It draws **worlds**, deals of the hidden cards consistent with everything its seat knows, each with an importance
weight, and plays every candidate lead out in every world.  The agents live in ``players/``; this room holds what
they call, and nothing here imports a player.

| module | holds |
|---|---|
| ``worlds`` | ``WorldSampler``: the hidden cards dealt consistently with a ``SeatView``, with importance weights (the reference, in Python) |
| ``belief`` | worlds weighed by how likely a policy makes the other seats' leads so far, and resampled (``training.advantage``'s search and judge) |
| ``world_kernels`` | the same draws for many worlds in one compiled call (numba), from the caller's generator |
| ``playouts`` | every world × candidate lead played out greedily at once on the batch engine (``greedy_gains``), and the worlds as one batch (``worlds_batch``) |
| ``playout_kernels`` | the compiled greedy playouts: ``greedy_lead``'s choice read from the batch's bitmasks, every card by the batch engine's own loop |
| ``decision`` | ``search_gains``: one decision's worlds drawn and played out in one compiled call (``pimc``'s default path) |
| ``decision_kernels`` | that one compiled call: the placing order, the draws and the playouts strung together |
| ``scripted_kernels`` | ``stops_first``'s and ``pool_hunter``'s reading of a seat, compiled for a whole batch (their ``act_batch``) |
| ``kernel_cache`` | numba's on-disk caches of functions that compile another module's kernels inline, dropped when those change |
"""
