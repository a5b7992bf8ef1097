"""The keyspace, as ``src/db.c`` and ``src/dict.c`` keep it: one flat row per key id.

Follows ``src/db.c:dbAdd``, ``src/db.c:setKey`` (overwriting through
``src/db.c:dbOverwrite`` in 6.2/7.0, ``dbSetValue`` in 7.2),
``src/db.c:setExpire``, ``src/db.c:lookupKey`` with ``src/db.c:expireIfNeeded``
and ``src/db.c:updateLFU``, ``src/db.c:dbSyncDelete`` (6.2) /
``src/db.c:dbGenericDelete`` (7.x), and the dicts' sizes:
``src/dict.c:_dictExpandIfNeeded``, ``src/server.c:dictExpandAllowed``,
``src/server.c:updateDictResizePolicy`` and ``src/server.c:tryResizeHashTables``.

A key's row holds the bytes it allocates, its value length, its LRU clock and
its expire time (``state.Keys``); ``cost == 0`` means absent. The two dicts
(main and expires) are represented by their entry counts and bucket counts,
which is all that memory and (later) sampling need:

- a dict's first table has 4 buckets and doubles when an add finds it full
  (``_dictExpandIfNeeded``), unless ``dictExpandAllowed`` refuses because the
  new table would take memory past maxmemory (6.2+, reference §2.12) and the
  load factor is still ≤ 1.618;
- ``serverCron`` shrinks a dict under 10 % full to the next power of two ≥ its
  size (``tryResizeHashTables``).

Deviation: a resize is instantaneous. Redis rehashes incrementally and keeps
both tables (1.5× the buckets) until done.

Passive expiry (``expireIfNeeded``, reference §4.1): a lookup of a key whose
expire time has passed deletes it and counts it expired and missing.

Write-once keys (``keyspace.write-once``): a cache's long tail, keys written once
under a name never used before and not read again. Each takes a free row from
``I[KS_ONCE_LO]`` on (``new_key_row``); when it expires or is evicted its row
goes back on the free stack for the next new name. Nothing refers to a freed
row but the eviction pool, whose entry for it is dropped when the row is
reused (Redis's pool would find the old name gone). When free rows run low the
kernel asks Python (``KS_LOW``) to add rows (``grow_write_once``) at the next
safe point.
"""

from __future__ import annotations

import numpy as np

from redsim.model import lazyfree, lfu
from redsim.model import state as S
from redsim.model.cow import cow_touch
from redsim.model.encoding import DICT_HT_INITIAL_SIZE, next_power
from redsim.model.jit import entry, hot_leaf, leaf, step
from redsim.model.main_thread import busy
from redsim.model.memory import POINTER, over_maxmemory_after_alloc, used_memory
from redsim.model.objects import (
    HANDLE_FIELDS,
    ROW_HANDLES,
    alloc_key,
    alloc_ttl,
    alloc_value,
    collection_of,
    free_key_entry,
    free_key_sds,
    free_ttl,
    free_value,
    is_collection,
    string_key_bytes,
)
from redsim.model.propagate import propagate_del
from redsim.model.rng import server_seeds
from redsim.model.state import (
    C_LF_JOB,
    CHILD,
    CHILD_NONE,
    EV_POLICY,
    KEY_ROW_ABSENT,
    KS_APPEND_EXPIRES,
    KS_BUCKETS,
    KS_BUCKETS_H,
    KS_EXP_BUCKETS,
    KS_EXP_BUCKETS_H,
    KS_EXPIRES,
    KS_FREE_LOW,
    KS_FREE_N,
    KS_KEYS,
    KS_LOW,
    KS_ONCE_LO,
    LAZY_EXPIRE,
    LRU_CLOCK,
    MEM_DATASET,
    POLICY_ALLKEYS_LFU,
    POLICY_VOLATILE_LFU,
    Q16,
    RNG_LOW,
    SHARED_INTS,
    STAT_EXPIRED,
    STAT_HITS,
    STAT_MISSES,
    W_CPU_COMMANDS,
    WI_EXPIRED,
    WI_HITS,
    WI_MISSES,
    T,
    World,
    row_table,
)
from redsim.model.world import as_world
from redsim.model.zmalloc import zfree, zmalloc
from redsim.observe import metrics as M
from redsim.observe.bins import count

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "KS_KEYS", "i8", "-", "state", "keys in db 0 (dictSize of the main dict)"),
    ("I", "KS_EXPIRES", "i8", "-", "state", "keys with a TTL (dictSize of the expires dict)"),
    ("I", "KS_BUCKETS", "i8", "-", "state",
     "the main dict's buckets (its table size; 8 B each in used_memory)"),
    ("I", "KS_EXP_BUCKETS", "i8", "-", "state", "the expires dict's buckets (its table size)"),
    ("I", "KS_BUCKETS_H", "i8", "-", "state",
     "the main dict's bucket array in the arena (a handle)"),
    ("I", "KS_EXP_BUCKETS_H", "i8", "-", "state",
     "the expires dict's bucket array in the arena (a handle)"),
    ("I", "MEM_DATASET", "i8", "B", "state",
     "bytes the keys allocate (sum of ks cost: entries, keys, objects, values), B"),
    ("I", "LRU_CLOCK", "i8", "s", "state",
     "server.lruclock: the 24-bit LRU clock in whole s, updated by serverCron"),
    ("I", "STAT_HITS", "i8", "-", "counter",
     "server.stat_keyspace_hits: lookups that found their key, since start"),
    ("I", "STAT_MISSES", "i8", "-", "counter",
     "server.stat_keyspace_misses: lookups that did not, since start"),
    ("I", "KS_RNG1", "i8", "-", "state",
     "the keyspace's own generator (rng.server_uniform): its first LCG's state"),
    ("I", "KS_RNG2", "i8", "-", "state", "the keyspace's own generator: its second LCG's state"),
    ("I", "KS_ONCE_LO", "i8", "-", "config",
     "first key row of the write-once keys (rows below: the groups' key ids)"),
    ("I", "KS_FREE_N", "i8", "-", "state", "free write-once key rows on the ks free stack"),
    ("I", "POP_LO", "i8", "-", "config",
     "the key row of key:0, DEBUG POPULATE's first key (model/admin.py)"),
    ("I", "POP_ROWS", "i8", "-", "config", "key rows for populated keys (the largest count)"),
    ("I", "BIG_LO", "i8", "-", "config",
     "the key row of big-keys[0] (model/bigkeys.py; the others follow)"),
    ("I", "KS_FREE_LOW", "i8", "-", "config",
     "low-water mark of free write-once rows: below it the kernel asks for more (KS_LOW)"),
    ("I", "KS_LOW", "i8", "-", "state",
     "1: free write-once rows ran low, Python adds rows (grow_write_once) at the next safe point"),
    ("I", "KS_APPEND_EXPIRES", "i8", "-", "state",
     "1 while preloading: expires entries appended, shuffled after"),
    ("I", "KEY_LEN", "i8", "B", "config",
     "key length assumed for the DELs evictions and expiries propagate, bytes"),
    ("wi", "WI_HITS", "i8", "-", "count", "keyspace hits in the window (STAT_HITS' increase)"),
    ("wi", "WI_MISSES", "i8", "-", "count",
     "keyspace misses in the window (STAT_MISSES' increase)"),
    ("wi", "WI_KEYS", "i8", "-", "gauge", "keys in db 0 at the window's end"),
    ("wi", "WI_EXPIRES", "i8", "-", "gauge", "keys with a TTL at the window's end"),
    ("wi", "WI_BUCKETS", "i8", "-", "gauge",
     "buckets of the main and expires dicts at the window's end"),
    ("ks", "cost", "i8", "B", "state",
     "bytes the key allocates (objects.string_key_bytes); 0 = absent"),
    ("ks", "vlen", "i8", "B", "state", "value length, bytes (-1: an integer value)"),
    ("ks", "lru", "i8", "s", "state",
     "LRU clock (s, 24 bits) at the last access; LFU policies: ldt << 8 | counter"),
    ("ks", "expire", "f8", "s", "state", "absolute expire time, s; inf = no TTL"),
    ("ks", "pos", "i8", "-", "state", "its place in `dense` (the main dict's entries)"),
    ("ks", "xpos", "i8", "-", "state",
     "its place in `xdense` (the expires dict's entries), -1 if no TTL"),
    ("ks", "dense", "i8[]", "-", "state",
     "positions 0..keys-1: the present keys (what the main dict holds)"),
    ("ks", "xdense", "i8[]", "-", "state", "positions 0..expires-1: the keys with a TTL"),
    ("ks", "free", "i8[]", "-", "state",
     "a stack of the free rows of write-once keys (KS_FREE_N of them)"),
)


RESULTS = (
    M.Metric("keys_end", "-", M.SUM, "keys in the dataset at the end", value=M.end("keys"),
             line=M.Line(160, "keys at end", lambda s: f"{s['keys_end']:,}")),
    M.Metric("keyspace_hits", "-", M.SUM, "INFO keyspace_hits", value=M.counter("STAT_HITS"),
             line=M.Line(170, "keyspace hits / misses",
                         lambda s: f"{s['keyspace_hits']:,} / {s['keyspace_misses']:,}")),
    M.Metric("keyspace_misses", "-", M.SUM, "INFO keyspace_misses",
             value=M.counter("STAT_MISSES")),
    M.Column(360, "keys", "-", "keys at the window's end", M.gauge("WI_KEYS")),
    M.Column(370, "expires", "-", "keys with a TTL at the window's end", M.gauge("WI_EXPIRES")),
    M.Column(380, "keyspace_hits", "-", "INFO keyspace_hits", M.total("WI_HITS")),
    M.Column(390, "keyspace_misses", "-", "INFO keyspace_misses", M.total("WI_MISSES")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

HASHTABLE_MAX_LOAD_FACTOR = 1.618  # expand even past maxmemory above this (src/server.h)
HASHTABLE_MIN_FILL = 10  # % below which serverCron shrinks a dict (src/server.h)
DICT_FORCE_RESIZE_RATIO = 5  # a dict grows while a fork child exists only this full (dict.c)
NO_TTL = float("inf")
LRU_CLOCK_MAX = (1 << 24) - 1  # 24-bit LRU field, seconds (src/server.h)
LRU_CLOCK_START = 1 << 23  # the clock at time 0, so preloaded keys can be older
NO_KEY = -1  # a command with no key id (trace commands)
NEW_KEY = -2  # a write to a write-once key: its row is taken when the command runs
EVPOOL_SIZE = 16  # eviction pool entries (src/evict.c)


@leaf
def buckets_after_add(w, used, size):
    """Bucket count of a dict of ``used`` entries in ``size`` buckets once one
    more entry is added."""
    if size == 0:
        return DICT_HT_INITIAL_SIZE
    if used < size:
        return size
    if w.I[CHILD] != CHILD_NONE and used / size <= DICT_FORCE_RESIZE_RATIO:
        return size  # updateDictResizePolicy: no resizing while a child shares the pages
    new = next_power(used + 1)
    # dictExpandAllowed: refuse if the new table would pass maxmemory, unless
    # the table is already overfull.
    if used / size <= HASHTABLE_MAX_LOAD_FACTOR and over_maxmemory_after_alloc(w, POINTER * new):
        return size
    return new


@leaf
def buckets_after_cron(used, size):
    """``tryResizeHashTables``: shrink a dict under 10 % full."""
    if size > DICT_HT_INITIAL_SIZE and used * 100 < HASHTABLE_MIN_FILL * size:
        return next_power(used)
    return size


@leaf
def resize_table(w, size_at, handle_at, new):
    """Give dict ``I[size_at]`` a table of ``new`` buckets: the new array is
    allocated, then the old one freed (``dictExpand``/``dictResize``; 0 buckets:
    no table, as after ``dictEmpty``)."""
    I = w.I
    if new != I[size_at]:
        h = zmalloc(w, POINTER * new)
        zfree(w, I[handle_at])
        I[handle_at] = h
        I[size_at] = new


@hot_leaf
def key_cost(w, key_len, vlen, has_ttl):
    """Bytes a key allocates; ``vlen`` -1 is an integer value, below it a
    collection (``bigkeys``)."""
    I = w.I
    if is_collection(vlen):  # the key's entry, sds and TTL entry, and the value
        return string_key_bytes(key_len, 0, True, True, has_ttl, I[Q16]) + \
            w.cl_bytes[collection_of(vlen)]
    return string_key_bytes(key_len, vlen if vlen > 0 else 0, vlen < 0, I[SHARED_INTS],
                            has_ttl, I[Q16])


@hot_leaf
def key_exists(w, k):
    return w.ks_cost[k] > 0


@hot_leaf
def is_lfu(w):
    p = w.I[EV_POLICY]
    return p == POLICY_ALLKEYS_LFU or p == POLICY_VOLATILE_LFU


@leaf
def access_field(w, old):
    """The object's ``lru`` field after an access (LRU clock, or ``updateLFU``)."""
    if is_lfu(w):
        return lfu.touched(w, old)
    return w.I[LRU_CLOCK]


@hot_leaf
def expires_add(w, k):
    """Put key k in the expires dict, at a hashed position among its entries (the
    entry there moves to the end), so that their order is unrelated to expiry."""
    I = w.I
    n = I[KS_EXPIRES]
    resize_table(w, KS_EXP_BUCKETS, KS_EXP_BUCKETS_H, buckets_after_add(w, n, I[KS_EXP_BUCKETS]))
    alloc_ttl(w, k)
    j = n if I[KS_APPEND_EXPIRES] else ((k * 2654435761 + n * 40503) & 0x7FFFFFFF) % (n + 1)
    if j < n:
        other = w.ks_xdense[j]
        w.ks_xdense[n] = other
        w.ks_xpos[other] = n
    w.ks_xdense[j] = k
    w.ks_xpos[k] = j
    I[KS_EXPIRES] = n + 1


@leaf
def expires_remove(w, k):
    """Take key k out of the expires dict (its last entry fills the hole)."""
    I = w.I
    I[KS_EXPIRES] -= 1
    last = w.ks_xdense[I[KS_EXPIRES]]
    p = w.ks_xpos[k]
    w.ks_xdense[p] = last
    w.ks_xpos[last] = p
    w.ks_xpos[k] = -1
    free_ttl(w, k)


@step
def db_add(w, k, key_len, vlen, expire):
    """Add absent key k (``dbAdd``, plus ``setExpire`` when it has a TTL)."""
    I = w.I
    has_ttl = expire != NO_TTL
    resize_table(w, KS_BUCKETS, KS_BUCKETS_H, buckets_after_add(w, I[KS_KEYS], I[KS_BUCKETS]))
    alloc_value(w, k, vlen, I[SHARED_INTS])  # the command's argument, made when parsed
    alloc_key(w, k, key_len)
    w.ks_pos[k] = I[KS_KEYS]
    w.ks_dense[I[KS_KEYS]] = k
    I[KS_KEYS] += 1
    w.ks_xpos[k] = -1
    if has_ttl:
        expires_add(w, k)
    cost = key_cost(w, key_len, vlen, has_ttl)
    w.ks_cost[k] = cost
    w.ks_vlen[k] = vlen
    w.ks_expire[k] = expire
    w.ks_lru[k] = lfu.new_field(w) if is_lfu(w) else I[LRU_CLOCK]
    I[MEM_DATASET] += cost
    cow_touch(w, k, 0)
    cow_touch(w, k, 1)


@step
def db_delete(w, k, lazy):
    """Delete present key k (``dbGenericDelete``; ``lazy``: ``dbAsyncDelete``).
    Returns the bytes freed now and the CPU its value's free costs beyond a
    string's, s: a collection's allocations freed at once, or the queueing of
    a lazy free (``lazyfree.queue``), whose bytes stay in ``used_memory``."""
    I = w.I
    cost = w.ks_cost[k]
    freed = cost
    vlen = w.ks_vlen[k]
    cpu = 0.0
    I[KS_KEYS] -= 1
    last = w.ks_dense[I[KS_KEYS]]
    p = w.ks_pos[k]
    w.ks_dense[p] = last
    w.ks_pos[last] = p
    if w.ks_xpos[k] >= 0:
        expires_remove(w, k)
    # dbGenericDelete: the expires entry, then dictFreeUnlinkedEntry: key, value, entry.
    free_key_sds(w, k)
    if is_collection(vlen):
        cid = collection_of(vlen)
        if lazy and lazyfree.queue(w, w.ks_aval[k], w.cl_bytes[cid], w.cl_allocs[cid],
                                   w.cl_effort[cid]):
            w.ks_aval[k] = 0  # the bio thread frees it (lazyfree.catch_up)
            freed -= w.cl_bytes[cid]  # now in the lazyfree thread's bytes
            cpu = w.F[C_LF_JOB]  # the main thread only queues the job
        else:
            free_value(w, k)
            cpu = lazyfree.free_cpu(w, w.cl_allocs[cid])
    else:
        free_value(w, k)
    free_key_entry(w, k)
    I[MEM_DATASET] -= cost
    w.ks_cost[k] = 0
    cow_touch(w, k, 0)  # the entry is unlinked from its bucket chain and freed
    if k >= I[KS_ONCE_LO]:  # a write-once key's row is free for the next new name
        w.ks_free[I[KS_FREE_N]] = k
        I[KS_FREE_N] += 1
    return freed, cpu


@leaf
def new_key_row(w):
    """A free row for a key never used before (a write-once key)."""
    I = w.I
    I[KS_FREE_N] -= 1
    k = w.ks_free[I[KS_FREE_N]]
    if I[KS_FREE_N] < I[KS_FREE_LOW]:
        I[KS_LOW] = 1  # Python adds rows at the next safe point
        I[RNG_LOW] = 1  # ... which the kernel reaches by the check for refills
    for i in range(EVPOOL_SIZE):  # a pool entry for the row's old name is stale
        if w.ep_key[i] == k:
            w.ep_key[i] = -1
    return k


@step
def set_key(w, k, key_len, vlen, ttl):
    """``setKey`` + ``setExpire``: store a value in key k, with a TTL of ``ttl``
    seconds, or none when ``ttl`` ≤ 0 (a plain SET drops an old TTL)."""
    I = w.I
    expire = w.F[T] + ttl if ttl > 0 else NO_TTL
    if not key_exists(w, k):
        db_add(w, k, key_len, vlen, expire)
        return
    # dbOverwrite keeps the key and its dictEntry, and replaces the value.
    had_ttl = w.ks_expire[k] != NO_TTL
    has_ttl = expire != NO_TTL
    if has_ttl and not had_ttl:
        expires_add(w, k)
    elif had_ttl and not has_ttl:
        expires_remove(w, k)
    alloc_value(w, k, vlen, I[SHARED_INTS])
    cost = key_cost(w, key_len, vlen, has_ttl)
    I[MEM_DATASET] += cost - w.ks_cost[k]
    w.ks_cost[k] = cost
    w.ks_vlen[k] = vlen
    w.ks_expire[k] = expire
    w.ks_lru[k] = access_field(w, w.ks_lru[k])
    cow_touch(w, k, 0)  # the entry's value pointer
    cow_touch(w, k, 1)  # the new value's allocation


@hot_leaf
def expire_if_needed(w, k):
    """``expireIfNeeded``: delete key k if its time has passed; True if it did."""
    F = w.F
    I = w.I
    if w.ks_expire[k] < F[T]:
        _, cpu = db_delete(w, k, I[LAZY_EXPIRE] == 1)
        if cpu > 0.0:  # a collection's free, inside the command that found it expired
            busy(w, W_CPU_COMMANDS, cpu)
        propagate_del(w)
        I[STAT_EXPIRED] += 1
        count(w, WI_EXPIRED, F[T], 1)
        return True
    return False


@leaf
def key_live(w, k):
    """Whether key k exists once ``expireIfNeeded`` has run (what every lookup,
    read or write, sees); no statistics."""
    return key_exists(w, k) and not expire_if_needed(w, k)


@hot_leaf
def lookup_key(w, k, touch):
    """``lookupKey``: the value length of key k, or None-like -2 on a miss
    (counted as a keyspace hit or miss). ``touch`` updates the LRU clock."""
    F = w.F
    I = w.I
    if key_live(w, k):
        I[STAT_HITS] += 1
        count(w, WI_HITS, F[T], 1)
        # No LRU/LFU update while a fork child exists: it would copy the page.
        if touch and I[CHILD] == CHILD_NONE:
            w.ks_lru[k] = access_field(w, w.ks_lru[k])
        return w.ks_vlen[k]
    I[STAT_MISSES] += 1
    count(w, WI_MISSES, F[T], 1)
    return -2


@step
def resize_dicts(w):
    """serverCron's ``tryResizeHashTables`` for db 0 (skipped while a fork child exists)."""
    I = w.I
    if I[CHILD] != CHILD_NONE:
        return
    resize_table(w, KS_BUCKETS, KS_BUCKETS_H, buckets_after_cron(I[KS_KEYS], I[KS_BUCKETS]))
    resize_table(w, KS_EXP_BUCKETS, KS_EXP_BUCKETS_H,
                 buckets_after_cron(I[KS_EXPIRES], I[KS_EXP_BUCKETS]))


@entry
def preload(world, keys, vlens, expires, lrus, key_len, limit):
    """Add ``keys`` (absent ones only) with their value lengths, expire times and
    last-access clocks (s), as a client writing them one by one would: dicts grow
    and the ledger counts. Stops before ``used_memory`` would pass ``limit``
    bytes (0: no limit); returns how many of ``keys`` it went through."""
    w = as_world(world)
    I = w.I
    for i in range(len(keys)):
        k = keys[i]
        if not key_exists(w, k):
            if limit > 0 and used_memory(w) + key_cost(w, key_len, vlens[i],
                                                       expires[i] != NO_TTL) > limit:
                return i
            db_add(w, k, key_len, vlens[i], expires[i])
            if not is_lfu(w):
                w.ks_lru[k] = (I[LRU_CLOCK] + lrus[i]) & LRU_CLOCK_MAX
    return len(keys)


def grow_write_once(world: World, extra: int) -> World:
    """The same world with ``extra`` more free write-once rows (the kernel ran
    low, ``KS_LOW``); the key table is copied into a larger one. The caller
    must ``pack`` the new world before the kernel runs again."""
    I = world.I
    n = len(world.ks_cost)
    fields = {f"ks_{f}": col for f, col in row_table("ks", {
        f: np.broadcast_to(np.asarray(v), (n + extra,))
        for f, v in KEY_ROW_ABSENT.items()}).items()}
    for name, col in fields.items():
        col[:n] = getattr(world, name)
    for name in ("ks_dense", "ks_xdense", *(f"ks_{f}" for f in HANDLE_FIELDS)):
        fields[name] = np.concatenate([getattr(world, name), np.zeros(extra, np.int64)])
    free = np.zeros(len(world.ks_free) + extra, np.int64)
    I[KS_FREE_N] = grown_free_stack(free, world.ks_free, int(I[KS_FREE_N]), n, extra)
    fields["ks_free"] = free
    I[KS_LOW] = 0
    return world._replace(**fields)


def grown_free_stack(free: np.ndarray, old: np.ndarray, free_n: int, n: int,
                     extra: int) -> int:
    """Fill ``free`` with the write-once rows' free stack once rows ``n`` to
    ``n + extra - 1`` are added to a table of ``n``: the new rows under the
    ``free_n`` free ones of ``old``, so rows are popped in the order a table
    that had them from the start pops them (lowest first). Returns the count."""
    free[:extra] = np.arange(n + extra - 1, n - 1, -1)
    free[extra:extra + free_n] = old[:free_n]
    free[extra + free_n:] = 0
    return free_n + extra


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """The keyspace's rows (every string group's key ids, DEBUG POPULATE's keys,
    the big keys, the collection keys, then rows for write-once keys), its
    dicts' entry lists, its generator and LRU clock. Needs the sizes
    ``collection_keys`` (``collection.configure``), ``once_rows``, ``once_low``
    and ``once_created`` (``preload.configure``, which plans the keys
    ``preload.start`` places); gives ``once_lo`` and ``key_rows_created``."""
    sc = b.scenario
    n_hot, n_pop = first_rows(sc)  # the string groups' key ids, then DEBUG POPULATE's keys
    n_big = len(sc.big_keys)  # then the big keys (model/bigkeys.py)
    n_coll = b.size.collection_keys  # then the collection keyspaces' (collection.py)
    big_lo = n_hot + n_pop
    once_lo = big_lo + n_big + n_coll
    n_keys = once_lo + b.size.once_rows
    # Every row starts absent; flatten fills the key table from these broadcasts.
    # The rows' arena handles are objects.configure's (ROW_HANDLES, HANDLE_FIELDS).
    b.fill("ks", **{f: np.broadcast_to(np.asarray(v), (n_keys,))
                    for f, v in S.KEY_ROW_ABSENT.items() if f not in ROW_HANDLES},
           dense=np.zeros(n_keys, np.int64), xdense=np.zeros(n_keys, np.int64),
           free=np.zeros(max(n_keys - once_lo, 1), np.int64))
    b.size.key_rows = n_keys
    b.I[S.POP_LO] = n_hot
    b.I[S.POP_ROWS] = n_pop
    b.I[S.BIG_LO] = big_lo
    b.I[S.KS_ONCE_LO] = once_lo
    b.I[S.KS_FREE_LOW] = b.size.once_low
    b.I[S.KS_RNG1], b.I[S.KS_RNG2] = server_seeds(b.seed)
    b.I[S.LRU_CLOCK] = LRU_CLOCK_START
    b.I[S.KEY_LEN] = sc.clients[0].key_size
    # Fork's page bitmap spans 4 KB a row without maxmemory: the rows of every
    # key the run creates, as if none were evicted or expired.
    b.size.once_lo = once_lo
    b.size.key_rows_created = once_lo + b.size.once_created


def first_rows(scenario) -> tuple[int, int]:
    """Rows of the string groups' key ids (shared: key id i is row i in every
    string group), and of DEBUG POPULATE's keys, which follow them: as many as
    the largest count of the scenario's populate events (``admin.py``)."""
    n_hot = max((g.keyspace.keys for g in scenario.clients if g.keyspace.type == "string"),
                default=0)
    n_pop = max((int(ev.keys) for ev in scenario.events if ev.do == "populate"), default=0)
    return n_hot, n_pop
