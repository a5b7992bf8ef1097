"""The keyspace at time 0: what the workload would have left after running a while.

No Redis source: the history a running server has behind it, which Redis does
not compute; the keys placed are costed and stored as ``db.py`` and
``objects.py`` store any key.

``keyspace.preload`` makes a fraction of a group's key ids present. How long
ago each was written and last read matters as soon as keys expire or are
evicted, so when the group's nominal rate is known (open groups; closed groups
with think time: processes × threads / mean think, the rate while latency is
small beside the think time) the ages are the steady state of the group's own
access stream. Key k receives writes at rate ``r_w(k)`` and reads at
``r_r(k)``, each a Poisson stream (uniform or Zipf key choice):

- time since its last write: exponential with rate ``r_w(k)``, conditioned on
  being under the TTL if the writes carry one (a present key was written less
  than ``ttl`` ago); its remaining TTL is ``ttl`` minus that age;
- time since its last access (the LRU clock): the smaller of that age and an
  exponential read age with rate ``r_r(k)``.

Write-once keys (``keyspace.write-once``) are written at rate
``r_once = rate × write share × write-once`` and never read, so those present
at time 0 are the ones written over the last ``min(history, ttl)`` seconds:
``r_once`` × that span of them, ages uniform, added youngest first while
``used_memory`` stays under ``preload-limit × maxmemory``: what does not fit is
taken to have been evicted, oldest (least recently used) first. The keys of
``keyspace.preload`` are added first, and also only while they fit under that
limit, most recently used first: a cache preloaded past maxmemory would open
the run with an eviction storm no steady workload has (a warning says how
many were left out; a ``preload-limit`` above 1 lets a run start past it).

Without a known rate (closed groups without think, traces) the older rule
holds: a TTL'd key has a remaining TTL uniform in (0, ttl] and was last touched
when written; a key without TTL was last touched uniformly in the past hour.

Random numbers come from their own SeedSequence child
(``rng.preload_generator``), so preloading never shifts the kernel's streams.

``configure`` plans the keys before the key table is laid out (``db.configure``
sizes it from the write-once rows the plan leaves), ``start`` places them in
the laid-out world, or copies a shared start's image (``keyspace_image.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from redsim.model import keyspace_image
from redsim.model import state as S
from redsim.model.call import zipf_cdf
from redsim.model.collection import CollectionRows
from redsim.model.db import preload
from redsim.model.encoding import next_power
from redsim.model.jit import entry
from redsim.model.memory import POINTER, STARTUP_BYTES
from redsim.model.objects import COLLECTION, key_requests, string_key_bytes, string_keys_bytes
from redsim.model.rng import preload_generator, variates
from redsim.model.sizing import (
    SPARE_ONCE,
    nominal_rate,
    once_fit,
    once_span,
    stream_rates,
    write_once_spare,
    write_ttl,
)
from redsim.model.world import as_world, pack, prefetch

PRELOAD_AGE = 3600  # s: without a known rate, keys without a TTL were last touched
# uniformly over the past hour
MAX_AGE_S = float(1 << 40)
"""The oldest a preloaded key's last access can be, s (~35,000 years): a group
whose rate is tiny (1e-300/s is a valid rate) draws ages past what int64
seconds hold. Past Redis's own LRU clock (24 bits of seconds, ~194 days:
``LRU_CLOCK_MAX``) every age is the same to eviction anyway."""


@dataclass
class GroupPreload:
    """The keys one group finds present at time 0 (arrays aligned by key)."""

    key_len: int
    keys: np.ndarray  # hot key ids
    vlens: np.ndarray
    expires: np.ndarray  # absolute expire time, s (inf: no TTL)
    lrus: np.ndarray  # last access, s relative to time 0 (≤ 0)
    once_vlens: np.ndarray  # write-once keys, youngest first
    once_expires: np.ndarray
    once_lrus: np.ndarray
    once_rate: float  # write-once keys created per s (nominal)
    once_cap: float = math.inf  # the most write-once keys present at once (inf: no bound)
    once_count: int = 0  # len(once_vlens), kept by release

    def release(self) -> None:
        """Drop the per-key arrays, once ``apply`` has placed them."""
        empty = np.zeros(0, np.int64)
        self.keys = self.vlens = self.lrus = self.once_vlens = self.once_lrus = empty
        self.expires = self.once_expires = np.zeros(0)


def _key_probabilities(grp, keys: np.ndarray) -> np.ndarray | float:
    """P(a draw from the group's key distribution is k), for each k in ``keys``
    (one number for a uniform choice)."""
    ks = grp.keyspace
    if ks.distribution != "zipf":
        return 1.0 / ks.keys
    return np.diff(zipf_cdf(ks.keys, ks.zipf_exponent), prepend=0.0)[keys]


def _truncated_exponential(rng, n: int, rate: np.ndarray | float, cap: float) -> np.ndarray:
    """n exponential ages with rate ``rate`` (/s, per element or one for all),
    conditioned on < cap."""
    u = rng.random(n)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if math.isinf(cap):
            age = -np.log1p(-u) / rate
        else:
            age = -np.log1p(-u * -np.expm1(-rate * cap)) / rate
            age = np.where(rate * cap > 1e-9, age, u * cap)  # no writes: uniform under cap
    return age


def _vlens(rng, grp, n: int) -> np.ndarray:
    return np.maximum(np.rint(variates(rng, grp.value_size, n)), 0).astype(np.int64)


def _fit(costs: np.ndarray, room: float, keys_before: int, ttl: bool) -> int:
    """How many of ``costs`` (youngest first) fit in ``room`` bytes, counting
    the dict buckets all the keys will need (as ``preload`` will)."""
    total = np.cumsum(costs)
    n = int(np.searchsorted(total, room, side="right"))
    buckets = POINTER * next_power(keys_before + n) * (2 if ttl else 1)
    return int(np.searchsorted(total, room - buckets, side="right"))


class PreloadTrimmedWarning(UserWarning):
    """A group's ``keyspace.preload`` would have put more in memory than maxmemory
    (× ``preload-limit``) allows, so only the keys that fit were preloaded."""


def _keep_recent(costs: np.ndarray, lrus: np.ndarray, room: float, keys_before: int,
                 ttl: bool) -> np.ndarray | None:
    """None if all the keys (``costs`` bytes each) fit in ``room``; otherwise the
    indices, in their original order, of the most recently used ones that fit:
    the keys an LRU cache at its limit would still hold."""
    if _fit(costs, room, keys_before, ttl) >= len(costs):
        return None
    order = np.argsort(-lrus, kind="stable")  # lrus ≤ 0: the latest access first
    return np.sort(order[:_fit(costs[order], room, keys_before, ttl)])


def _warn_trimmed(grp, scenario, m: int, costs: np.ndarray, keep: np.ndarray) -> None:
    import warnings

    gb = 1 << 30
    limit = grp.keyspace.preload_limit * scenario.server.maxmemory
    warnings.warn(PreloadTrimmedWarning(
        f"group {grp.name!r}: keyspace.preload would put {costs.sum() / gb:.2f} GiB of keys "
        f"in memory, over maxmemory{'' if grp.keyspace.preload_limit == 1 else ' x preload-limit'}"
        f" ({limit / gb:.2f} GiB); preloaded the {len(keep):,} most recently used of {m:,} "
        f"({costs[keep].sum() / gb:.2f} GiB), the rest taken as evicted "
        "(keyspace.preload-limit above 1 lets a run start past maxmemory)"), stacklevel=2)


def _sorted_uniforms(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` uniforms on [0, 1) in ascending order, without sorting: the partial
    sums of ``n + 1`` standard exponentials over their total have the joint law
    of uniform order statistics (Rényi's representation)."""
    c = np.cumsum(rng.standard_exponential(n + 1))
    return c[:n] / c[n]


def plan(scenario, seed: int,
         collections: list[CollectionRows | None] | None = None) -> list[GroupPreload | None]:
    """Every group's preloaded keys (None for a group with nothing to preload);
    ``collections``: per group, where a collection keyspace's keys are (their
    rows and values replace the key ids and string values)."""
    rng = preload_generator(seed, 0)
    plans: list[GroupPreload | None] = []
    planned = planned_bytes = 0  # keys and bytes planned for earlier groups
    for gi, grp in enumerate(scenario.clients):
        coll = collections[gi] if collections else None
        ks = grp.keyspace
        if grp.kind == "trace":
            plans.append(None)
            continue
        n = ks.keys
        m = int(round(ks.preload * n))
        keys = np.arange(n, dtype=np.int64) if m == n else np.sort(
            rng.choice(n, m, replace=False)).astype(np.int64) if m else np.zeros(0, np.int64)
        vlens = _vlens(rng, grp, m)
        ttl = write_ttl(grp)
        rate = nominal_rate(grp)
        writes, reads, once_rate = (0.0, 0.0, 0.0) if rate is None else stream_rates(grp, rate)
        if m == 0:
            expires = np.zeros(0)
            lrus = np.zeros(0)
        elif rate is None:
            if math.isfinite(ttl):
                expires = rng.uniform(0.0, 1.0, m) * ttl
                expires = np.where(expires > 0, expires, ttl)
                lrus = np.floor(expires - ttl)  # last touched when written
            else:
                expires = np.full(m, np.inf)
                lrus = -rng.integers(0, PRELOAD_AGE, m).astype(np.float64)
        else:
            p = _key_probabilities(grp, keys)
            written = _truncated_exponential(rng, m, writes * p, ttl)
            with np.errstate(divide="ignore"):
                read = -np.log1p(-rng.random(m)) / (reads * p)
            idle = np.minimum(written, read)
            never = ~np.isfinite(idle)  # neither read nor written: as without a rate
            if never.any():
                idle[never] = rng.integers(0, PRELOAD_AGE, int(never.sum()))
            idle = np.minimum(idle, MAX_AGE_S)
            expires = ttl - written if math.isfinite(ttl) else np.full(m, np.inf)
            expires = np.where(expires > 0, expires, ttl)
            lrus = -np.ceil(idle)
        q16 = scenario.jemalloc.quantum == 16
        has_ttl = math.isfinite(ttl)
        maxmemory = scenario.server.maxmemory
        limit = ks.preload_limit * maxmemory - STARTUP_BYTES[scenario.redis_version]
        if coll is not None:  # the key's objects, then its collection's value
            vlens = COLLECTION - (coll.cid_lo + keys)
        if maxmemory > 0:
            if coll is None:
                hot = string_keys_bytes(grp.key_size, vlens, has_ttl, q16)
            else:
                hot = int(string_key_bytes(grp.key_size, 0, True, True, has_ttl, q16)) + \
                    coll.value_bytes[keys]
            if m:
                keep = _keep_recent(hot, lrus, limit - planned_bytes, planned, has_ttl)
                if keep is not None:
                    _warn_trimmed(grp, scenario, m, hot, keep)
                    keys, vlens, expires, lrus, hot = (
                        keys[keep], vlens[keep], expires[keep], lrus[keep], hot[keep])
                    m = len(keys)
            planned_bytes += int(hot.sum())
        once_vlens = np.zeros(0, np.int64)
        # The most write-once keys the group can hold at once: those written
        # within a TTL, and no more than fit beside its keys (write_once_rows).
        once_cap = once_rate * ttl if has_ttl else math.inf
        if maxmemory > 0:
            room = limit - planned_bytes
            per_key = hot.mean() if m else float(grp.value_size.mean) + grp.key_size
            once_cap = min(once_cap, once_fit(room, per_key))
        if once_rate > 0 and ks.history != 0:
            span = once_span(grp)
            if maxmemory > 0:  # no more than fits under the limit beside the group's keys
                n_max = min(once_rate * span, once_fit(room, per_key))
                once_vlens = _vlens(rng, grp, int(round(n_max)))
                costs = string_keys_bytes(grp.key_size, once_vlens, has_ttl, q16)
                once_vlens = once_vlens[:_fit(costs, room, planned + m, has_ttl)]
                planned_bytes += int(costs[:len(once_vlens)].sum())
                if once_rate * span >= once_fit(room, per_key):
                    once_cap = min(once_cap, len(once_vlens))  # memory full: what fitted
            else:
                once_vlens = _vlens(rng, grp, int(round(once_rate * span)))
        n_once = len(once_vlens)
        planned += m + n_once
        ages = np.minimum(_sorted_uniforms(rng, n_once) * (n_once / once_rate if n_once else 0.0),
                          MAX_AGE_S)
        plans.append(GroupPreload(
            key_len=grp.key_size, keys=keys if coll is None else keys + coll.row_lo,
            vlens=vlens, expires=expires,
            lrus=lrus.astype(np.int64),
            once_vlens=once_vlens,
            once_expires=ttl - ages if math.isfinite(ttl) else np.full(n_once, np.inf),
            once_lrus=-np.ceil(ages).astype(np.int64), once_rate=once_rate,
            once_cap=once_cap, once_count=n_once))
    return plans


def write_once_rows(plans: list[GroupPreload | None], scenario, conns: int,
                    max_pipeline: int) -> tuple[int, int, int]:
    """Rows for write-once keys: (preloaded, spare, low-water mark).

    One event-loop iteration runs at most ``conns × max_pipeline`` commands,
    each creating at most one write-once key, so the kernel asks for more rows
    while that many are still free. The spare rows cover the run's expected
    new keys up to the most its groups can hold at once (``write_once_spare``:
    the rows of evicted and expired keys are reused), so growing is rare and a
    long run at maxmemory takes no more rows than a short one.
    """
    groups = [p for p in plans if p is not None]
    preloaded = sum(p.once_count for p in groups)
    rate = sum(p.once_rate for p in groups)
    if rate <= 0 and not any(g.keyspace.write_once > 0 for g in scenario.clients):
        return 0, 0, 0
    low = conns * max_pipeline + 64
    new = sum(write_once_spare(p.once_rate, float(scenario.duration), p.once_count,
                               p.once_cap) for p in groups)
    spare = max(4 * low, int(new) + 1024)
    return preloaded, spare, low


AHEAD = 16
"""How far ahead ``shuffle_expires`` starts loading what its random accesses need."""


@entry
def shuffle_expires(world, u):
    """Put the expires dict's ``len(u)`` entries in a random order (Fisher-Yates
    in place, ``u`` the uniforms in [0, 1) it draws by), and tell each key its
    place. Every random access is a cache miss in arrays of the keyspace's
    size, so each is prefetched ``AHEAD`` steps before it is made."""
    w = as_world(world)
    n = len(u)
    for i in range(n - 1, 0, -1):
        if i > AHEAD:
            prefetch(w.ks_xdense, np.int64(u[i - AHEAD] * (i - AHEAD + 1)))
        j = np.int64(u[i] * (i + 1))
        t = w.ks_xdense[i]
        w.ks_xdense[i] = w.ks_xdense[j]
        w.ks_xdense[j] = t
    for j in range(n):
        if j + AHEAD < n:
            prefetch(w.ks_xpos, w.ks_xdense[j + AHEAD])
        w.ks_xpos[w.ks_xdense[j]] = j


def apply(w: S.World, plans: list[GroupPreload | None], scenario, seed: int,
          once_lo: int) -> None:
    """Add the planned keys to the world's keyspace, group by group (its key ids,
    then its write-once keys youngest first up to the preload limit); rows of
    write-once keys not preloaded go on the free stack. The expires dict's
    entries are then put in a random order (hash order is unrelated to expiry),
    as ``expires_add`` does one by one at run time."""
    rng = preload_generator(seed, 1)
    ref = pack(w)
    maxmemory = scenario.server.maxmemory
    w.I[S.KS_APPEND_EXPIRES] = 1  # shuffled once at the end: no cache miss per key
    row = once_lo
    for grp, p in zip(scenario.clients, plans, strict=True):
        if p is None:
            continue
        limit = grp.keyspace.preload_limit * maxmemory if maxmemory > 0 else 0.0
        if len(p.keys):
            preload(ref, p.keys, p.vlens, p.expires, p.lrus, p.key_len, 0.0)
        n = len(p.once_vlens)
        if n:
            rows = np.arange(row, row + n, dtype=np.int64)
            row += preload(ref, rows, p.once_vlens, p.once_expires, p.once_lrus, p.key_len,
                           limit)
            del rows
        p.release()  # S0's plan is ~0.8 GB: give it back before the shuffle draws
    w.I[S.KS_APPEND_EXPIRES] = 0
    shuffle_expires(ref, rng.random(int(w.I[S.KS_EXPIRES])))
    free = np.arange(len(w.ks_cost) - 1, row - 1, -1, dtype=np.int64)  # lowest popped first
    w.ks_free[:len(free)] = free
    w.I[S.KS_FREE_N] = len(free)


def slab_demand(plans: list[GroupPreload | None],
                collections: list[CollectionRows | None]) -> tuple[np.ndarray, np.ndarray]:
    """The preloaded string keys' allocations (``objects.key_requests``), for
    sizing the arena's slab arrays; a collection keyspace's (``collections``
    names them) are in ``collection.slab_demand``."""
    sizes, counts = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for p, coll in zip(plans, collections, strict=True):
        if p is None or coll is not None:
            continue
        for vlens, expires in ((p.vlens, p.expires), (p.once_vlens, p.once_expires)):
            s, c = key_requests(p.key_len, vlens, int(np.isfinite(expires).sum()))
            sizes.append(s)
            counts.append(c)
    return np.concatenate(sizes), np.concatenate(counts)


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """The preload plan (``plan``, from ``collection.configure``'s
    ``collection_rows``; a shared start's image's plans instead), the
    write-once rows it leaves (``write_once_rows``) and the preloaded string
    keys' allocations (``b.slab_demand``); ``start`` places the keys. Needs the
    sizes ``conns`` and ``max_pipeline``; gives ``once_rows``, ``once_low`` and
    ``once_created``."""
    sc = b.scenario
    collections = b.extra["collection_rows"]
    image = b.extra.get("keyspace_image")  # a shared start (keyspace_image.py)
    plans = image.sizes["plans"] if image is not None else plan(sc, b.seed, collections)
    once_pre, once_spare, once_low = write_once_rows(plans, sc, b.size.conns,
                                                     b.size.max_pipeline)
    b.extra["preload"] = plans
    sizes, counts = image.sizes["slab_demand"] if image is not None else slab_demand(
        plans, collections)
    b.extra["preload_sizes"] = {"plans": plans, "slab_demand": (sizes, counts)}
    b.slab_demand.append((sizes, counts))
    # Fork's page bitmap spans 4 KB a row without maxmemory: the rows of every
    # key the run creates, as if none were evicted or expired.
    rate = sum(p.once_rate for p in plans if p is not None)
    once_all = max(once_spare, int(SPARE_ONCE * rate * float(sc.duration)) + 1024)
    b.size.once_rows = once_pre + once_spare
    b.size.once_low = once_low
    b.size.once_created = once_pre + (once_all if once_spare else 0)


def start(w: S.World, b) -> None:
    """Place the preloaded keys (``apply``) in the laid-out world, from the
    write-once rows' first (``db.configure``'s ``KS_ONCE_LO``), or copy them
    from a shared start's image (``keyspace_image``); with an image store
    (``b.extra["keyspace_images"]``), keep an image of them."""
    plans = b.extra.pop("preload")
    once_lo = int(w.I[S.KS_ONCE_LO])
    image = b.extra.get("keyspace_image")
    images = b.extra.get("keyspace_images")
    if image is not None:
        if keyspace_image.fits(image, w):
            keyspace_image.restore(image, w)
            images.hits += 1
            return
        # Not the state the image was taken from: build afresh (the same plan,
        # drawn again), and keep the image for the runs it fits.
        plans = plan(b.scenario, b.seed, b.extra["collection_rows"])
        images.misses += 1
        apply(w, plans, b.scenario, b.seed, once_lo)
        return
    if images is not None:
        images.misses += 1
    snap = keyspace_image.Snapshot(w) if images is not None else None
    apply(w, plans, b.scenario, b.seed, once_lo)
    if snap is not None:
        images.put(snap.image(w, b.extra["keyspace_key"], b.extra.pop("preload_sizes")))
