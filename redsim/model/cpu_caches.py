"""The CPU's last-level cache: how often a key access misses it, from the
dataset's footprint, the key distribution and the cache's size.

No Redis source: what the hardware does to ``src/db.c:lookupKey``. A key
access is a chain of dependent loads — the hash table's bucket
(``dict.c:dictFind``), the ``dictEntry``, the key's sds (compared), the value's
``robj`` (with an embedded string's bytes), a raw string's bytes, and, when the
db has keys with a TTL, the ``expires`` dict's bucket and entry
(``db.c:expireIfNeeded``) — and each that is not in the caches costs a trip to
memory, ~80-130 ns, against ~1 µs for the whole request on a warm cache. A
dataset that fits the last-level cache pays none; GitLab's 60 GB pays nearly
all.

This module computes, once per run, the probability that a key access of each
client group misses the last-level cache, with Che's approximation of an LRU
cache under independent references (Che, Tung and Wang, IEEE JSAC 20(7),
2002; Fricker, Robert and Roberts, ITC 24, 2012, for its accuracy): the
cache holds each key's lines for a characteristic time ``t`` (in key
accesses), the solution of ``Σ_i s_i (1 − exp(−p_i t)) = C`` over every key i
with access probability ``p_i`` and ``s_i`` cached bytes; key i is then in
the cache with probability ``1 − exp(−p_i t)``. For uniform access over F
bytes this is ``p_miss = 1 − C/F`` (C < F), the first-order model of design
§7; a Zipf distribution or a hot set that fits misses far less. Keys of
equal popularity are grouped in bins (every id up to 256, then ids in
geometric bins 2 % wide), so a run of 27 M keys solves ~1,000 bins.

What it leaves out, each said with its expected size:

- the rest of the cache's traffic: the clients' structs and buffers, the
  allocator's metadata and other processes on the host share the cache (a
  noisy neighbour's share of the LLC is invisible to a VM; ``host.llc`` is the
  part Redis gets);
- the TLB: at 60 GB with 4 KB pages every miss is also a TLB miss and a page
  walk, itself mostly cached; it is in the fitted ``miss-penalty`` rather
  than modelled (a miss costs more than a DRAM latency on a VM: two-level
  page walks);
- the L2 and the order of loads: the calibrated base costs already include
  the L2 misses of a dataset that fits the LLC (the calibration's ~10 MB);
  the penalty is the LLC miss's cost over an LLC hit;
- prefetching: a value's lines past its first are read in sequence and
  prefetched, so only the first line of each structure is a dependent load;
  Redis 7.0 has no software prefetch of keys (Valkey 8's batch prefetching
  overlaps the misses of a pipeline's keys, which this does not model);
- eviction's and expiry's samples: they touch random keys (counted at the
  uniform miss rate, ``uniform_miss``) but their own lines' pollution of the
  cache is not added to the access stream (they are ~5 per eviction, a few %
  of key accesses but for bursts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LINE = 64
"""Bytes per cache line (x86-64 and Graviton)."""

HEAD_IDS = 256
"""Key ids with a bin each (a Zipf's head, where popularity changes fastest)."""

BIN_RATIO = 1.02
"""Past the head, each bin is this much wider than ids before it."""


@dataclass(frozen=True)
class KeyAccess:
    """One client group's key accesses, as the cache sees them.

    Attributes:
        lo: its first key row; n: its number of keys (rows lo .. lo+n-1).
        rate: key accesses per second (only the groups' ratios count).
        zipf: the Zipf exponent of its key ids (id 0 hottest), or None for uniform.
        hot_share, hot_keys: ``keyspace.hot``: a share of accesses spread over ids
            0 .. hot_keys-1 (``locality.py``).
        key_bytes: bytes a key's access brings into the cache (``footprint``).
    """

    lo: int
    n: int
    rate: float
    zipf: float | None = None
    hot_share: float = 0.0
    hot_keys: int = 0
    key_bytes: float = 4 * LINE


def dependent_loads(value_bytes: int, embedded: bool, expires: bool) -> int:
    """Dependent loads of one key lookup: bucket, dictEntry, key sds, robj (an
    embedded string's bytes share the robj's allocation), a raw string's
    first line, and the ``expires`` dict's bucket and entry when the db has
    keys with a TTL (``expireIfNeeded`` looks there first)."""
    return 4 + (0 if embedded or value_bytes == 0 else 1) + (2 if expires else 0)


def footprint(value_bytes: int, embedded: bool, expires: bool, key_len: int) -> float:
    """Bytes of cache one key's access occupies: a line for each structure it
    touches (the dictEntry, the key, the robj, a raw string's value, the
    ``expires`` entry: a line's other bytes belong to other keys), 8 bytes per
    bucket (8 buckets share a line, ~one bucket per key), and the key's and
    value's bytes past their first line (read whole: compared, or copied to
    the reply)."""
    structures = 3 + (0 if embedded or value_bytes == 0 else 1) + (1 if expires else 0)
    buckets = 2 if expires else 1
    past = max(0, key_len - LINE) + (0 if embedded else max(0, value_bytes - LINE))
    return structures * LINE + 8 * buckets + past


def _edges(a: KeyAccess) -> np.ndarray:
    """Bin edges over ``a``'s own ids: one id each up to ``HEAD_IDS``, then
    geometric, plus its hot set's end."""
    head = np.arange(min(a.n, HEAD_IDS) + 1, dtype=np.float64)
    if a.n > HEAD_IDS:
        k = int(np.ceil(np.log(a.n / HEAD_IDS) / np.log(BIN_RATIO)))
        tail = np.unique(np.floor(HEAD_IDS * BIN_RATIO ** np.arange(1, k + 1)))
        head = np.concatenate([head, tail[tail < a.n], [a.n]])
    if 0 < a.hot_keys < a.n:
        head = np.concatenate([head, [a.hot_keys]])
    return np.unique(head)


def _harmonic(k: np.ndarray, s: float) -> np.ndarray:
    """Σ_{j=1..k} j^-s for each k (0 → 0): exact to 10,000, then
    Euler-Maclaurin from there (relative error < 1e-12 for s in [0, 3])."""
    k = np.asarray(k, dtype=np.float64)
    cut = 10_000
    exact = np.concatenate([[0.0], np.cumsum(np.arange(1, cut + 1, dtype=np.float64) ** -s)])
    small = exact[np.minimum(k, cut).astype(np.int64)]
    big = k > cut
    if not big.any():
        return small
    kk = k[big]
    if abs(s - 1.0) < 1e-12:
        integral = np.log(kk / cut)
    else:
        integral = (kk ** (1 - s) - cut ** (1 - s)) / (1 - s)
    em = (kk ** -s - cut ** -s) / 2 - s * (kk ** (-s - 1) - cut ** (-s - 1)) / 12
    out = small.copy()
    out[big] = exact[cut] + integral + em
    return out


def _mass(a: KeyAccess, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Share of ``a``'s accesses that name ids in [lo, hi) of its own ids."""
    if a.zipf is None:
        base = (hi - lo) / a.n
    else:
        h = _harmonic(np.array([a.n], dtype=np.float64), a.zipf)[0]
        base = (_harmonic(hi, a.zipf) - _harmonic(lo, a.zipf)) / h
    if a.hot_share <= 0.0 or a.hot_keys <= 0:
        return base
    hot = np.clip(np.minimum(hi, a.hot_keys) - lo, 0, None) / a.hot_keys
    return (1.0 - a.hot_share) * base + a.hot_share * hot


@dataclass(frozen=True)
class Bins:
    """The key rows in bins of equal popularity."""

    count: np.ndarray  # keys in each bin
    p: np.ndarray  # each key's share of all key accesses
    size: np.ndarray  # bytes each key occupies in the cache
    mass: list[np.ndarray]  # per group: share of its accesses in each bin


def bins(groups: list[KeyAccess]) -> Bins:
    """Every group's ids on one row axis, cut where any group's bins are cut."""
    edges = np.unique(np.concatenate([g.lo + _edges(g) for g in groups]))
    lo, hi = edges[:-1], edges[1:]
    count = hi - lo
    total = sum(g.rate for g in groups)
    p = np.zeros(len(count))
    weighted = np.zeros(len(count))
    mass = []
    for g in groups:
        inside = (lo >= g.lo) & (hi <= g.lo + g.n)
        m = np.zeros(len(count))
        m[inside] = _mass(g, lo[inside] - g.lo, hi[inside] - g.lo)
        mass.append(m)
        share = g.rate / total if total > 0 else 1.0 / len(groups)
        p += share * m / count
        weighted += share * m * g.key_bytes
    acc = p * count
    size = np.where(acc > 0, weighted / np.where(acc > 0, acc, 1.0),
                    np.mean([g.key_bytes for g in groups]))
    keep = count > 0
    return Bins(count[keep], p[keep], size[keep], [m[keep] for m in mass])


def characteristic_time(b: Bins, cache: float) -> float:
    """Che's characteristic time t, in key accesses: Σ count·size·(1 − e^{−p t})
    = cache; inf when the whole footprint fits."""
    if float(np.sum(b.count * b.size)) <= cache:
        return float("inf")

    def held(t: float) -> float:
        return float(np.sum(b.count * b.size * -np.expm1(-b.p * t)))

    lo, hi = 0.0, 1.0
    while held(hi) < cache:
        hi *= 2.0
    for _ in range(200):  # bisection to a relative 1e-12
        mid = 0.5 * (lo + hi)
        if held(mid) < cache:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


def miss_probabilities(groups: list[KeyAccess], cache: float) -> tuple[list[float], float]:
    """(each group's probability that a key access misses the cache, the
    probability that a uniformly random key row is not cached: what eviction's
    and expiry's samples find) for a cache of ``cache`` bytes."""
    if not groups or cache <= 0:
        return [1.0] * len(groups), 1.0
    b = bins(groups)
    t = characteristic_time(b, cache)
    if t == float("inf"):
        return [0.0] * len(groups), 0.0
    out = np.exp(-b.p * t)
    per_group = [float(np.sum(m * out)) for m in b.mass]
    uniform = float(np.sum(b.count * out) / np.sum(b.count))
    return per_group, uniform
