"""The statistics of a tournament: the mean and its 95% Student-t interval, with no scipy."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

_T975 = (
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157,
    2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.13145, 2.119905, 2.109816, 2.100922,
    2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831,
    2.048407, 2.04523, 2.042272,
)


def t_quantile_975(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom (two-sided 95% intervals)."""
    if df < 1:
        return math.nan
    if df <= len(_T975):
        return _T975[df - 1]
    # Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5); error < 1e-7 beyond 30 df.
    z = 1.959963984540054
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def mean_ci(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and the half-width of its 95% Student-t confidence interval (NaN when undefined)."""
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return math.nan, math.nan
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan
    return mean, t_quantile_975(len(x) - 1) * float(x.std(ddof=1)) / math.sqrt(len(x))


def ratio_ci(values: Sequence[float] | np.ndarray, weights: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """The weighted mean ``sum(w x) / sum(w)`` over deals and its 95% interval with the deal as the unit (the delta
    method for a ratio of two sums over deals: ``mean_ci`` of ``w (x - mean) / mean(w)``); a deal of weight 0 (NaN
    value) counts as a deal with nothing in it.  With equal weights it is ``mean_ci``."""
    w = np.asarray(weights, dtype=np.float64)
    x = np.where(w > 0, np.asarray(values, dtype=np.float64), 0.0)
    if len(w) == 0 or not w.sum():
        return math.nan, math.nan
    mean = float((w * x).sum() / w.sum())
    return mean, mean_ci(w * (x - mean) / w.mean())[1]
