"""The CPU's caches and TLB: what a key access costs the main thread in
misses, from the dataset's footprint, the key distribution and the host's
cache sizes.

No Redis source: what the hardware does to ``src/db.c:lookupKey``. A key
access is a chain of dependent loads — the hash table's bucket
(``dict.c:dictFind``), the ``dictEntry``, the key's sds (compared), the value's
``robj`` (with an embedded string's bytes), a raw string's bytes, and, when the
db has keys with a TTL, the ``expires`` dict's bucket and entry
(``db.c:expireIfNeeded``) — and each that is not in the caches costs a trip
further down the hierarchy, ~80-130 ns to memory, against ~1 µs for the whole
request on a warm cache. A dataset that fits the caches pays none; GitLab's
60 GB pays nearly all.

This module computes, once per run, the probability that a key access of each
client group misses each level, with Che's approximation of an LRU cache under
independent references (Che, Tung and Wang, IEEE JSAC 20(7), 2002; Fricker,
Robert and Roberts, ITC 24, 2012, for its accuracy): the cache holds each
key's lines for a characteristic time ``t`` (in key accesses), the solution of
``Σ_i s_i (1 − exp(−p_i t)) = C`` over every key i with access probability
``p_i`` and ``s_i`` cached bytes; key i is then in the cache with probability
``1 − exp(−p_i t)``. For uniform access over F bytes this is ``p_miss = 1 −
C/F`` (C < F), the first-order model of design §7; a Zipf distribution or a
hot set that fits misses far less. Keys of equal popularity are grouped in
bins (every id up to 256, then ids in geometric bins 2 % wide), so a run of
27 M keys solves ~1,000 bins.

The levels (``Hierarchy.levels``), each with its miss cost per dependent load
(``engine.cpu.miss``):

- ``l2`` and ``llc``: the data caches, over the lines a key's access brings in
  (``footprint``), of ``host.l2`` and ``host.llc`` bytes;
- ``tlb``: the TLB, over the memory the keys' allocations span (``key_span``:
  with 4 KB pages, a page holds other keys' bytes too, so what counts is the
  span, not the lines), of ``host.tlb-reach`` bytes;
- ``page-walk``: the page tables a walk reads, 8 bytes per 4 KB page, which
  miss the L2 once the span passes 512 × ``host.l2``.

A run is charged the difference between its groups' expected miss cost and
that of the dataset the per-command costs were calibrated on
(``engine.cpu.calibrated-on``): the calibrated costs already hold that
dataset's misses. The collection commands' costs (HSET, LPUSH, SADD, ...) are
measured on one key (``calibrate/measure.py``'s loads), whose lookup the
caches hold, so theirs are referred to one key instead (``C_ONE_KEY_MISS``
gives back what the calibrated dataset's misses took off); a collection
command looks one key up whatever its element count. Eviction's and expiry's
samples are referred to the dataset eviction's costs were measured on
(900,000 keys of 100 B). On the
reference VM the levels fit the measured CPU per request of GET and SET at
pipeline 1 and 16, 10 K to 30 M keys of 64 B, within 12 % (rms 5 %;
``calibrate/misses.py``, ``results/validation/cpu_vs_dataset.png``).

What it leaves out, each said with its expected size:

- the rest of the cache's traffic: the clients' structs and buffers, the
  kernel's socket path, the allocator's metadata and other processes on the
  host share the caches (a noisy neighbour's share of the LLC is invisible to
  a VM; ``host.llc`` is the part Redis gets). The socket path's lines matter
  at pipeline 1, where each request streams ~tens of KB through the L2: the
  reference VM's rise from 10 K to 10 M keys was 0.7 µs per request at
  pipeline 1 against 1.5-1.7 µs at 16, and the model charges both the same
  rise, so pipeline-1 CPU is up to ~10 % high at 10 M keys;
- the TLB of a skewed access: the TLB level takes each key's span as its
  pages' share, which is exact for uniform access; a hot set's keys are
  scattered over pages that hold cold keys, so a Zipf workload's TLB misses
  are underestimated (by up to the ratio of a page to a key's span, ~25× in
  the TLB's footprint: a hot set of 1 % of 100 M keys misses the TLB almost
  always);
- prefetching: a value's lines past its first are read in sequence and
  prefetched, so only the first line of each structure is a dependent load.
  Redis 6/7 has no software prefetch of keys. Redis 8 with I/O threads
  (``io-threads-model: async``, ``io-threads`` > 1) prefetches the keys of a
  batch of commands together (``src/memory_prefetch.c``, from Valkey 8:
  ``dictPrefetch`` walks every key's bucket, entry, object and raw value one
  step at a time across the batch, up to ``prefetch-batch-max-size``, 16), so
  their misses overlap: those loads are charged ``1 / PREFETCH_OVERLAP`` of
  their cost (the ``expires`` dict is not prefetched). The batch is taken as
  full, which holds where it matters, a saturated main thread; a lightly
  loaded one sees batches of one or two and is charged too little (its
  misses then cost latency, not throughput);
- eviction's and expiry's samples: they touch random keys (charged at the
  uniform miss rate: ``EVICTION_SAMPLE_LOADS`` and ``EXPIRY_SAMPLE_LOADS``
  loads each) but their own lines' pollution of the cache is not added to
  the access stream (they are ~5 per eviction, a few % of key accesses but
  for bursts); the key an eviction deletes was just sampled and is charged no
  further misses;
- collection values: a hash's or list's own structure (listpack, hashtable
  entries) is counted as one raw value's first line, and the misses inside a
  large collection (a 100,000-field hash's entries) are not charged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from redsim.model.jemalloc import size_class
from redsim.model.objects import DICT_ENTRY, EMBSTR_LIMIT, ROBJ, sds_header

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("gp", "miss_cpu", "f8", "s", "config",
     "CPU per key access of the group's commands for cache and TLB misses, over what "
     "the calibrated costs hold (engine.cpu.calibrated-on); may be < 0, s"),
    ("F", "C_EV_SAMPLE_MISS", "f8", "s", "config",
     "CPU per key an eviction samples for its misses, over the calibrated dataset's, s"),
    ("F", "C_EXP_SAMPLE_MISS", "f8", "s", "config",
     "CPU per key active expiry samples for its misses, over the calibrated dataset's, s"),
    ("F", "C_ONE_KEY_MISS", "f8", "s", "config",
     "CPU per key access the calibrated dataset's misses hold and one key's do not: "
     "given back to a collection command, whose cost was measured on one key, s"),
)

LINE = 64
"""Bytes per cache line (x86-64 and Graviton)."""

PAGE_TABLE_RATIO = 512
"""Bytes of memory one byte of page table maps (an 8-byte entry per 4 KB page)."""

LINES, SPAN = 0, 1
"""What a level holds of a key: the lines its access reads, or the memory its
allocations span (pages)."""

EVICTION_SAMPLE_LOADS = 2
"""Dependent loads of a key ``evictionPoolPopulate`` samples: the dictEntry
(``dictGetSomeKeys`` walks buckets, which share lines) and the robj (its LRU
or LFU field); the key's sds only for the few that enter the pool."""

PREFETCH_BATCH = 16
"""Redis 8's ``prefetch-batch-max-size`` default: keys prefetched together."""

MEMORY_PARALLELISM = 10
"""Misses a core keeps in flight at once: its L1 miss buffers (10-16 on Intel
since Skylake, 22-24 on AMD Zen 3/4, the smallest taken)."""

PREFETCH_OVERLAP = min(PREFETCH_BATCH, MEMORY_PARALLELISM)
"""How many of a prefetched batch's misses overlap (``prefetched_share``)."""

EXPIRY_SAMPLE_LOADS = 1
"""Dependent loads of a key ``activeExpireCycle`` samples: the ``expires``
dictEntry, which holds the key pointer and the expire time."""

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


# ---- the hierarchy's cost (Python, once per run) -------------------------------------


@dataclass(frozen=True)
class Hierarchy:
    """The host's caches, bytes, and what a load that misses each costs, s."""

    l2: float
    llc: float
    tlb_reach: float
    penalty: dict[str, float]

    def levels(self) -> list[tuple[str, float, int]]:
        """(name, bytes, what it holds) of each level, nearest the core first."""
        return [("l2", self.l2, LINES), ("tlb", self.tlb_reach, SPAN),
                ("llc", self.llc, LINES), ("page-walk", PAGE_TABLE_RATIO * self.l2, SPAN)]


@dataclass(frozen=True)
class Touch:
    """One group's key accesses and what each reads."""

    access: KeyAccess
    loads: int  # dependent loads per key access (``dependent_loads``)
    lines: float  # bytes of lines per key (``footprint``)
    span: float  # bytes a key's allocations take (``key_span``)
    expires: bool = False  # the db has keys with a TTL: two of the loads are the expires dict's


def _python(f: Any) -> Any:
    """A kernel helper's Python function (calling the compiled one from Python
    would compile it for Python), or ``f`` itself when numba is off."""
    return getattr(f, "py_func", f)


def key_span(value_bytes: float, key_len: int, expires: bool, integer: bool = False,
             quantum16: bool = False) -> float:
    """Bytes one string key allocates (dictEntry, key sds, robj and value, the
    ``expires`` entry), plus its share of the bucket arrays (8 bytes a bucket,
    one per key at a load factor of 1): ``objects.string_key_bytes`` in Python.

    It restates that function on purpose: ``string_key_bytes`` calls compiled
    helpers (``sds_bytes``, ``value_bytes``), which called from Python would
    be compiled for Python, whole, in every process that configures a run;
    here only the two leaf helpers' Python functions run.
    ``tests/test_cpu_caches.py`` holds the two equal."""
    q = quantum16
    cls = _python(size_class)
    header = _python(sds_header)
    n = cls(DICT_ENTRY, q) + cls(header(key_len, True) + key_len + 1, q)
    if integer:
        n += cls(ROBJ, q)
    elif value_bytes <= EMBSTR_LIMIT:
        n += cls(ROBJ + 3 + int(value_bytes) + 1, q)
    else:
        v = int(value_bytes)
        n += cls(ROBJ, q) + cls(header(v, False) + v + 1, q)
    if expires:
        n += cls(DICT_ENTRY, q) + 8
    return float(n + 8)


def touch(access: KeyAccess, value_bytes: float, key_len: int, expires: bool,
          integer: bool = False, quantum16: bool = False) -> Touch:
    """A group's ``Touch`` for string values of ``value_bytes`` (their mean)."""
    embedded = integer or value_bytes <= EMBSTR_LIMIT
    return Touch(access, dependent_loads(int(value_bytes), embedded, expires),
                 footprint(int(value_bytes), embedded, expires, key_len),
                 key_span(value_bytes, key_len, expires, integer, quantum16), expires)


def level_misses(touches: list[Touch], h: Hierarchy
                 ) -> dict[str, tuple[list[float], float]]:
    """Per level of ``h`` that costs something: (each group's probability that
    a dependent load of a key access misses it, the same for a uniformly random
    key). A level whose miss costs nothing (``engine.cpu.miss: none``, or a
    level fitted to 0) is not solved."""
    out = {}
    for name, size, holds in h.levels():
        if h.penalty.get(name, 0.0) == 0.0:
            continue
        groups = [replace(t.access, key_bytes=t.lines if holds == LINES else t.span)
                  for t in touches]
        out[name] = miss_probabilities(groups, size)
    return out


def miss_cost(touches: list[Touch], h: Hierarchy) -> tuple[list[float], float]:
    """(each group's expected miss cost per key access, the expected miss cost
    of one dependent load of a uniformly random key), s."""
    per = [0.0] * len(touches)
    uniform = 0.0
    if not touches:
        return per, uniform
    for name, (pg, pu) in level_misses(touches, h).items():
        pen = h.penalty[name]
        per = [c + t.loads * pen * p for c, t, p in zip(per, touches, pg, strict=True)]
        uniform += pen * pu
    return per, uniform


def hierarchy(scenario: Any) -> Hierarchy:
    """The scenario's ``host`` caches and ``engine.cpu.miss`` costs, s."""
    from redsim.model.blueprint import US

    m = scenario.engine.cpu.miss
    host = scenario.host
    return Hierarchy(float(host.l2), float(host.llc), float(host.tlb_reach),
                     {"l2": m.l2 * US, "tlb": m.tlb * US, "llc": m.llc * US,
                      "page-walk": m.page_walk * US})


def group_touches(scenario: Any, key_lo: np.ndarray) -> list[Touch]:
    """Each client group's ``Touch``: its rows, its key distribution, its
    commands' share of the key accesses (its nominal rate, or its sources'
    count for a closed loop), its keys' and values' sizes."""
    from redsim.model.sizing import nominal_rate, write_ttl

    q16 = scenario.jemalloc.quantum == 16
    expires = any(write_ttl(g) != float("inf") for g in scenario.clients)
    out = []
    for g, lo in zip(scenario.clients, key_lo, strict=True):
        ks = g.keyspace
        rate = nominal_rate(g) or float(g.processes * g.threads * g.pipeline)
        hot = ks.hot
        access = KeyAccess(int(lo), int(ks.keys), rate,
                           zipf=ks.zipf_exponent if ks.distribution == "zipf" else None,
                           hot_share=hot.share if hot else 0.0, hot_keys=hot.keys if hot else 0)
        out.append(touch(access, float(g.value_size.mean), g.key_size, expires,
                         integer=ks.integers, quantum16=q16))
    return out


def prefetched(scenario: Any) -> bool:
    """Whether the main thread prefetches a batch's keys: Redis 8's I/O threads
    (``memory_prefetch.c``, run when the main thread takes a batch of clients
    from them)."""
    return scenario.engine.io_threads_model == "async" and scenario.server.io_threads > 1


def prefetched_share(t: Touch) -> float:
    """What a key access's misses cost when its batch is prefetched, as a share
    of their cost: the ``expires`` loads in full, the rest overlapped."""
    expires = 2 if t.expires else 0  # dependent_loads: the TTL dict's bucket and entry
    rest = t.loads - expires
    return (expires + rest / PREFETCH_OVERLAP) / t.loads


def miss_deltas(scenario: Any, key_lo: Any = None, h: Hierarchy | None = None,
                ref: float | None = None, traces: Any = None) -> tuple[list[float], float]:
    """(each group's miss cost per key access over the calibrated dataset's,
    the same per dependent load of a sampled key), s, before ``engine.cpu.scale``.
    ``key_lo``: the groups' first key rows (``collection.first_key_rows``, from
    ``traces``, each group's parsed trace or None: ``redsim.traces.group_traces``;
    None: no group replays one). With
    Redis 8's prefetching (``prefetched``) a key access costs its share
    (``prefetched_share``) of its misses, those the calibrated costs hold
    included; eviction's and expiry's samples are not prefetched. ``h`` and
    ``ref`` (``hierarchy``, ``calibrated_miss`` at the calibrated keys) when the
    caller has them already."""
    if key_lo is None:
        from redsim.model.collection import first_key_rows

        key_lo = first_key_rows(scenario, (None,) * len(scenario.clients) if traces is None
                                else traces)
    h = hierarchy(scenario) if h is None else h
    touches = group_touches(scenario, np.asarray(key_lo))
    per, uniform = miss_cost(touches, h)
    q16 = scenario.jemalloc.quantum == 16
    on = scenario.engine.cpu.calibrated_on
    ref = calibrated_miss(scenario, h, on.keys) if ref is None else ref
    _, ref_uniform = miss_cost([touch(KeyAccess(0, on.eviction_keys, 1.0),
                                      on.eviction_value_size, on.key_size, False,
                                      quantum16=q16)], h)
    if prefetched(scenario):
        per = [c * prefetched_share(t) for c, t in zip(per, touches, strict=True)]
    return [c - ref for c in per], uniform - ref_uniform


def calibrated_miss(scenario: Any, h: Hierarchy, keys: int) -> float:
    """The miss cost per key access of the dataset the CPU costs were measured
    on (``engine.cpu.calibrated-on``'s value and key sizes) had it ``keys``
    keys, s."""
    on = scenario.engine.cpu.calibrated_on
    (ref,), _ = miss_cost([touch(KeyAccess(0, keys, 1.0), on.value_size, on.key_size, False,
                                 quantum16=scenario.jemalloc.quantum == 16)], h)
    return ref


def one_key_miss(scenario: Any, h: Hierarchy | None = None, ref: float | None = None
                 ) -> float:
    """What the calibrated dataset's misses take off a command's cost and one
    key's do not (``C_ONE_KEY_MISS``, before ``engine.cpu.scale``), s; ``h`` and
    ``ref`` as ``miss_deltas`` takes them."""
    h = hierarchy(scenario) if h is None else h
    if ref is None:
        ref = calibrated_miss(scenario, h, scenario.engine.cpu.calibrated_on.keys)
    return ref - calibrated_miss(scenario, h, 1)


def configure(b) -> None:
    """Each group's miss cost per key access and the samples' per key, over
    the calibrated dataset's, scaled by ``engine.cpu.scale``. Needs
    ``collection.configure`` (the groups' first rows)."""
    from redsim.model import state as S
    from redsim.model.blueprint import US, f64

    cpu = b.scenario.engine.cpu
    # The hierarchy and the calibrated dataset's misses, solved once for both.
    h = hierarchy(b.scenario)
    ref = calibrated_miss(b.scenario, h, cpu.calibrated_on.keys)
    per, uniform = miss_deltas(b.scenario, b.part("gp")["key_lo"], h, ref)
    k = cpu.scale
    b.fill("gp", miss_cpu=f64([c * k for c in per]))
    # A dataset smaller than the calibrated one costs less, but a sample never
    # less than nothing.
    b.F[S.C_EV_SAMPLE_MISS] = max(EVICTION_SAMPLE_LOADS * uniform, -cpu.eviction_sample * US) * k
    b.F[S.C_EXP_SAMPLE_MISS] = max(EXPIRY_SAMPLE_LOADS * uniform, -cpu.expire_sample * US) * k
    b.F[S.C_ONE_KEY_MISS] = one_key_miss(b.scenario, h, ref) * k
