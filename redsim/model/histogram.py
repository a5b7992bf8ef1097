"""Streaming latency histograms: log-linear buckets, HdrHistogram-style.

No Redis source: the recorder's histograms of the latency clients see, which
Redis does not measure.

Each power of two between 2^E_MIN and 2^E_MAX seconds (≈ 60 ns … 4096 s) is
split into ``SUB`` equal buckets, so a bucket is at most 1/SUB = 1.6 % of its
value wide; percentiles interpolate linearly inside a bucket. Values below the
range fall in bucket 0, above it in the last bucket (the exact maximum is kept
separately).
"""

from __future__ import annotations

import math

import numpy as np

from redsim.model.jit import entry, leaf, step

SUB = 64
E_MIN = -23  # frexp exponent of the smallest resolved value: 2^-24 s ≈ 60 ns
E_MAX = 13  # 2^12 s = 4096 s
N_BUCKETS = (E_MAX - E_MIN) * SUB


@step
def bucket(x):
    """Bucket index of a latency ``x`` in seconds."""
    if x <= 0.0:
        return 0
    m, e = math.frexp(x)  # x = m * 2**e, m in [0.5, 1)
    if e < E_MIN:
        return 0
    if e >= E_MAX:
        return N_BUCKETS - 1
    return (e - E_MIN) * SUB + int((m - 0.5) * 2.0 * SUB)


def edges() -> np.ndarray:
    """Lower edges of all buckets plus the upper edge of the last, seconds."""
    out = np.empty(N_BUCKETS + 1)
    for e in range(E_MIN, E_MAX):
        base = math.ldexp(0.5, e)
        i0 = (e - E_MIN) * SUB
        out[i0:i0 + SUB] = base * (1.0 + np.arange(SUB) / SUB)
    out[-1] = math.ldexp(0.5, E_MAX)
    return out


_EDGES = edges()


@entry
def quantile(counts, edges_, n, q):
    """The q-quantile (0 < q ≤ 1) of the n-bucket histogram ``counts``, interpolated
    in its bucket. Returns NaN for an empty histogram."""
    return quantile_from(counts, 0, edges_, n, q)


@entry
def quantile_from(counts, off, edges_, n, q):
    """``quantile`` of the n-bucket histogram that starts at ``counts[off]`` (one
    row of a flat array of histograms)."""
    total = 0
    for i in range(n):
        total += counts[off + i]
    if total == 0:
        return np.nan
    rank = q * total
    cum = 0.0
    for i in range(n):
        c = counts[off + i]
        if c > 0 and cum + c >= rank:
            frac = (rank - cum) / c
            return edges_[i] + frac * (edges_[i + 1] - edges_[i])
        cum += c
    return edges_[n]


def quantiles(counts: np.ndarray, qs: list[float]) -> list[float]:
    """Several quantiles of a histogram (seconds)."""
    return [float(quantile(counts, _EDGES, len(counts), q)) for q in qs]


LOG2_BUCKETS = 64


@leaf
def log2_bucket(x):
    """Bucket b with 2^b ≤ x < 2^(b+1) (0 for x < 2), like BCC's log2 histograms."""
    b = 0
    v = int(x)
    while v > 1 and b < LOG2_BUCKETS - 1:
        v >>= 1
        b += 1
    return b
