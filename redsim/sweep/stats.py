"""Confidence intervals over a sweep point's replications.

Replications of one point are independent runs (different seeds), so a metric's
replication values are i.i.d.: their mean gets a Student-t interval, and the
fraction of replications that burst — a binomial proportion — a Wilson score
interval, which stays inside [0, 1] and is not degenerate at 0 or n successes
(Wilson 1927; Agresti & Coull 1998 recommend it over the Wald interval for the
small n of a sweep).
"""

from __future__ import annotations

import math

import numpy as np

# Two-sided 95 % Student-t quantiles t(0.975, df) for df = 1..30; beyond 30 the
# normal quantile is within 4 % and the table's last entry is used down to it.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
Z975 = 1.959964


def t_quantile_975(df: int) -> float:
    """t(0.975, df): the 95 % two-sided Student-t quantile (df >= 1)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    # Cornish-Fisher expansion around the normal quantile: < 1e-4 off for df > 30.
    z = Z975
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def mean_ci(values) -> tuple[float, float, float]:
    """Mean of the finite values and its 95 % Student-t interval (low, high).

    One value gives (x, nan, nan): no spread to estimate; none gives nans.
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return math.nan, math.nan, math.nan
    m = float(x.mean())
    if n == 1:
        return m, math.nan, math.nan
    half = t_quantile_975(n - 1) * float(x.std(ddof=1)) / math.sqrt(n)
    return m, m - half, m + half


def wilson(successes: int, n: int, z: float = Z975) -> tuple[float, float, float]:
    """Proportion successes / n and its Wilson score interval (low, high).

    n = 0 gives nans.
    """
    if n == 0:
        return math.nan, math.nan, math.nan
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return p, max(0.0, centre - half), min(1.0, centre + half)
