"""``performEvictions`` (``src/evict.c``): freeing memory before a command runs.

Follows ``src/evict.c:performEvictions``, ``src/evict.c:getMaxmemoryState``,
``src/evict.c:evictionPoolPopulate``, ``src/evict.c:estimateObjectIdleTime``,
``src/evict.c:evictionTimeLimitUs`` and ``src/evict.c:evictionTimeProc`` (the
timer started by ``src/evict.c:startEvictionTimeProc`` in 7.x, inline in
``performEvictions`` in 6.2); the same logic in 6.2, 7.0 and 7.2. Its samples
stand for ``src/dict.c:dictGetSomeKeys`` and ``src/dict.c:dictGetRandomKey``
(see the sampling deviation).

Called before every command while ``maxmemory`` is set (reference §2.1–2.5):

1. ``getMaxmemoryState``: ``mem_tofree = used − not_counted − maxmemory``; under
   the limit the call returns at once (cost ``eviction-call``).
2. Over it: ``noeviction`` fails; otherwise, until ``mem_freed ≥ mem_tofree``,
   pick a victim and delete it. LRU/LFU/volatile-ttl fill the 16-entry pool
   with ``maxmemory-samples`` keys drawn from the main dict (``allkeys-*``) or
   the expires dict (``volatile-*``) and take the best entry still present;
   the random policies take a random key. Every 16th key, the time limit from
   ``maxmemory-eviction-tenacity`` is checked: past it, the ``evictionTimeProc``
   timer takes over on later iterations (``EVICT_RUNNING``, nothing rejected).
3. No candidate left: ``EVICT_FAIL``; a deny-oom command then gets ``-OOM``.

Costs (seconds of main-thread time, from ``engine.cpu.eviction-*``): a call,
a call over the limit, each key sampled, each key deleted. The time limit is
measured in that modelled time.

``lazyfree-lazy-eviction`` (reference §2.9): only a value whose free effort
exceeds ``LAZYFREE_THRESHOLD`` (64: a list's nodes, a big set's, hash's or
zset's elements) goes to the bio lazy-free thread (``model/lazyfree.py``); a
string's effort is 1, so Redis frees it on the main thread even with lazy
eviction on. ``mem_freed`` counts what left ``used_memory`` during the
delete, so a big value handed to the thread adds only its key's bytes and
the loop goes on picking keys; every 16 keys it re-reads ``getMaxmemoryState``
(which sees what the thread has freed by then) and stops if under the limit.
A call that runs out of keys (``EVICT_FAIL``) waits for pending lazy frees, a
millisecond at a time within its time limit, and succeeds if memory is back
under the limit (latency event ``eviction-lazyfree``). Without lazy eviction
a call whose 16th key meets the target goes on to check the time limit and may
start ``evictionTimeProc`` for nothing, as Redis's loop does; with it, the
re-check stops the call first.

Sampling deviation: ``dictGetSomeKeys`` walks consecutive buckets from a
random one; here each sample is an independent uniform draw from the dict's
entries, which hash order makes nearly equivalent.
"""

from __future__ import annotations

import math

from redsim.model import latency, lfu
from redsim.model.db import EVPOOL_SIZE, LRU_CLOCK_MAX, db_delete, key_exists
from redsim.model.histogram import log2_bucket
from redsim.model.jit import leaf, step
from redsim.model.main_thread import busy_until
from redsim.model.memory import mem_tofree
from redsim.model.propagate import propagate_del
from redsim.model.rng import server_uniform
from redsim.model.state import (
    C_EV_CALL,
    C_EV_CHECK,
    C_EV_DELETE,
    C_EV_SAMPLE,
    C_EV_SAMPLE_MISS,
    EV_POLICY,
    EV_SAMPLES,
    EV_TIME_LIMIT,
    EV_TIMER,
    KS_EXPIRES,
    KS_KEYS,
    LAZY_EVICTION,
    LF_N,
    LRU_CLOCK,
    POLICY_ALLKEYS_LFU,
    POLICY_ALLKEYS_RANDOM,
    POLICY_NOEVICTION,
    POLICY_VOLATILE_LFU,
    POLICY_VOLATILE_LRU,
    POLICY_VOLATILE_RANDOM,
    POLICY_VOLATILE_TTL,
    STAT_EVICTED,
    W_CPU_EVICTION,
    WI_EVICTED,
    T,
)
from redsim.observe import metrics as M
from redsim.observe.bins import count

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "C_EV_CALL", "f8", "s", "config",
     "CPU of a performEvictions call that finds memory under the limit, s"),
    ("F", "C_EV_CHECK", "f8", "s", "config",
     "extra CPU of a call over the limit (not-counted memory, timers, latency monitor), s"),
    ("F", "C_EV_SAMPLE", "f8", "s", "config",
     "CPU per key sampled (evictionPoolPopulate, or one random pick), s"),
    ("F", "C_EV_DELETE", "f8", "s", "config",
     "CPU per key evicted (dbDelete, free, keyspace event, DEL propagation), s"),
    ("F", "EV_TIME_LIMIT", "f8", "s", "config",
     "evictionTimeLimitUs of maxmemory-eviction-tenacity: one call's limit, s; inf at 100"),
    ("I", "EV_POLICY", "i8", "-", "config",
     "server.maxmemory_policy: POLICY_NOEVICTION, POLICY_ALLKEYS_LRU, ..."),
    ("I", "EV_SAMPLES", "i8", "-", "config",
     "server.maxmemory_samples: keys sampled per pool fill"),
    ("I", "EV_TIMER", "i8", "-", "state",
     "1 while evictionTimeProc is scheduled (a call hit its time limit; isEvictionProcRunning)"),
    ("I", "STAT_EVICTED", "i8", "-", "counter",
     "server.stat_evictedkeys: keys evicted since start"),
    ("I", "LAZY_EVICTION", "i8", "-", "config", "lazyfree-lazy-eviction"),
    ("wf", "W_CPU_EVICTION", "f8", "s", "cpu", "main-thread time in performEvictions"),
    ("wi", "WI_EVICTED", "i8", "-", "count",
     "keys evicted in the window (STAT_EVICTED's increase)"),
    ("ep", "key", "i8", "-", "state", "EvictionPoolLRU entry's key id (row), -1 if empty"),
    ("ep", "idle", "f8", "-", "state",
     "the entry's score, higher evicts first: idle ms (LRU), 255 - counter (LFU), -expire s (TTL)"),
    ("rc", "evhist", "i8", "-", "record",
     "performEvictions calls by duration: bucket b holds [2^b, 2^(b+1)) µs"),
    ("rc", "tofree", "i8", "-", "record",
     "calls over the limit by mem_tofree: bucket b holds [2^b, 2^(b+1)) bytes"),
)


RESULTS = (
    M.Metric("evicted_keys", "-", M.SUM, "INFO evicted_keys", value=M.counter("STAT_EVICTED"),
             line=M.Line(180, "expired / evicted keys",
                         lambda s: f"{s['expired_keys']:,} / {s['evicted_keys']:,}")),
    M.Metric("eviction_calls", "-", M.SUM, "performEvictions calls",
             value=lambda r: int(r.w.rc_evhist.sum())),
    M.Metric("eviction_calls_over_limit", "-", M.SUM, "performEvictions calls over the limit",
             value=lambda r: int(r.w.rc_tofree.sum())),
    # The eviction cycle (redsim.analysis.phases) from the time series.
    M.Metric("burst_detected", "-", M.ANY, "an eviction burst happened",
             made_by="analysis.phases.burst_summary"),
    M.Metric("bursts", "-", M.SUM, "eviction bursts", made_by="analysis.phases.burst_summary",
             line=M.Line(210, "eviction bursts", lambda s: f"{s['bursts']}" + (
                 f", every {s['cycle_period_s'] / 60:.1f} min" if s["bursts"] > 1 else ""))),
    M.Metric("cycle_period_s", "s", M.MAX, "mean gap between burst starts (None for fewer "
             "than two)", made_by="analysis.phases.burst_summary"),
    *(M.Metric(f"phase{k}_median_s", "s", M.MEAN, f"the bursts' median phase {k} length",
               made_by="analysis.phases.burst_summary") for k in (1, 2, 3)),
    M.Metric("memory_drop_median_bytes", "B", M.MEAN, "the bursts' median memory given back",
             made_by="analysis.phases.burst_summary"),
    M.Metric("rate_dip_median", "-", M.MEAN, "the bursts' median lowest rate, a share of the "
             "normal rate", made_by="analysis.phases.burst_summary"),
    M.Metric("p99_phase2_median_s", "s", M.MEAN, "the bursts' median worst p99 in phase 2",
             made_by="analysis.phases.burst_summary"),
    M.Column(420, "evicted_keys", "-", "INFO evicted_keys", M.total("WI_EVICTED")),
    M.Column(450, "evicted_per_sec", "1/s", "keys evicted per second", M.rate("WI_EVICTED")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

EVICT_OK = 0
EVICT_RUNNING = 1
EVICT_FAIL = 2
KEYS_PER_CHECK = 16  # the time limit is checked every 16 evicted keys
LAZYFREE_NAP = 1e-3  # performEvictions' usleep while waiting for lazy frees, at most, s


def time_limit(tenacity: int) -> float:
    """``evictionTimeLimitUs`` in seconds (inf at 100): 50 µs per step up to 10,
    then 15 % more per step (reference §2.4)."""
    if tenacity <= 10:
        return 50e-6 * tenacity
    if tenacity < 100:
        return 500e-6 * 1.15 ** (tenacity - 10)
    return math.inf


@leaf
def volatile(w):
    """Whether the policy evicts only keys with a TTL (``volatile-*``)."""
    return w.I[EV_POLICY] >= POLICY_VOLATILE_LRU


@leaf
def idle_score(w, k):
    """The pool's score of key k: higher is a better victim."""
    p = w.I[EV_POLICY]
    if p == POLICY_ALLKEYS_LFU or p == POLICY_VOLATILE_LFU:
        return 255.0 - lfu.decr_and_return(w, w.ks_lru[k])
    if p == POLICY_VOLATILE_TTL:
        return -w.ks_expire[k]  # sooner expiry is better
    clock = w.I[LRU_CLOCK]
    lru = w.ks_lru[k]
    idle = clock - lru if clock >= lru else clock + (LRU_CLOCK_MAX - lru)
    return 1000.0 * idle  # estimateObjectIdleTime, ms


@leaf
def sample(w, use_expires):
    """One key drawn uniformly from the main or the expires dict."""
    I = w.I
    u = server_uniform(w)
    if use_expires:
        return w.ks_xdense[int(u * I[KS_EXPIRES])]
    return w.ks_dense[int(u * I[KS_KEYS])]


@step
def pool_populate(w, use_expires):
    """``evictionPoolPopulate``: insert better-than-worst samples into the pool;
    returns the CPU spent, s."""
    keys = w.ep_key
    idles = w.ep_idle
    n = w.I[EV_SAMPLES]
    for _ in range(n):
        k = sample(w, use_expires)
        idle = idle_score(w, k)
        i = 0
        while i < EVPOOL_SIZE and keys[i] >= 0 and idles[i] < idle:
            i += 1
        if i == 0 and keys[EVPOOL_SIZE - 1] >= 0:
            continue  # worse than the worst of a full pool
        if i < EVPOOL_SIZE and keys[i] < 0:
            pass  # an empty slot
        elif keys[EVPOOL_SIZE - 1] < 0:  # room on the right: shift right from i
            for j in range(EVPOOL_SIZE - 1, i, -1):
                keys[j] = keys[j - 1]
                idles[j] = idles[j - 1]
        else:  # full: drop the worst (leftmost), shift left up to i−1
            i -= 1
            for j in range(i):
                keys[j] = keys[j + 1]
                idles[j] = idles[j + 1]
        keys[i] = k
        idles[i] = idle
    return n * (w.F[C_EV_SAMPLE] + w.F[C_EV_SAMPLE_MISS])


@leaf
def in_candidates(w, k, use_expires):
    """Whether key k still exists (in the dict the policy evicts from)."""
    if not key_exists(w, k):
        return False
    return w.ks_xpos[k] >= 0 if use_expires else True


@step
def select_victim(w):
    """A key to evict, or -1 if there is none; also returns the CPU spent, s."""
    I = w.I
    p = I[EV_POLICY]
    use_expires = volatile(w)
    n = I[KS_EXPIRES] if use_expires else I[KS_KEYS]
    if n == 0:
        return -1, 0.0
    if p == POLICY_ALLKEYS_RANDOM or p == POLICY_VOLATILE_RANDOM:
        return sample(w, use_expires), w.F[C_EV_SAMPLE] + w.F[C_EV_SAMPLE_MISS]
    cpu = 0.0
    keys = w.ep_key
    while True:
        cpu += pool_populate(w, use_expires)
        for i in range(EVPOOL_SIZE - 1, -1, -1):
            k = keys[i]
            if k < 0:
                continue
            keys[i] = -1
            if in_candidates(w, k, use_expires):
                return k, cpu
        # every entry was a ghost: sample again


@step
def perform_evictions(w):
    """One ``performEvictions`` call; returns (EVICT_*, CPU spent in s)."""
    F = w.F
    I = w.I
    cpu = F[C_EV_CALL]
    tofree = mem_tofree(w)
    if tofree <= 0:
        record_call(w, cpu, 0)
        return EVICT_OK, cpu
    cpu += F[C_EV_CHECK]
    if I[EV_POLICY] == POLICY_NOEVICTION:
        record_call(w, cpu, tofree)
        return EVICT_FAIL, cpu
    result = EVICT_OK
    freed = 0
    keys_freed = 0
    before = cpu  # latencyStartMonitor: the loop is what "eviction-cycle" times
    while freed < tofree:
        k, spent = select_victim(w)
        cpu += spent
        if k < 0:
            result = EVICT_FAIL
            break
        # dbAsyncDelete or dbSyncDelete: with lazy eviction a big value's bytes
        # leave used_memory only as the lazyfree thread frees them.
        gone, free_cpu = db_delete(w, k, I[LAZY_EVICTION] == 1)
        freed += gone
        propagate_del(w)  # propagateDeletion: the DEL goes to the AOF (not counted)
        cpu += F[C_EV_DELETE] + free_cpu
        keys_freed += 1
        I[STAT_EVICTED] += 1
        count(w, WI_EVICTED, F[T], 1)
        if keys_freed % KEYS_PER_CHECK == 0:
            if I[LAZY_EVICTION] and mem_tofree(w) <= 0:
                break  # lazy eviction re-reads the real memory state
            if cpu > F[EV_TIME_LIMIT]:
                I[EV_TIMER] = 1  # startEvictionTimeProc
                break
    latency.add_sample(w, latency.LM_EVICTION_CYCLE, cpu - before)
    if result == EVICT_FAIL and I[LF_N] > 0:
        # Nothing left to evict, but the lazyfree thread is freeing: wait for
        # it, a millisecond at a time, within the call's time limit.
        waited = 0.0
        while I[LF_N] > 0 and cpu + waited < F[EV_TIME_LIMIT]:
            if mem_tofree(w) <= 0:
                result = EVICT_OK
                break
            nap = min(F[EV_TIME_LIMIT], LAZYFREE_NAP)
            busy_until(w, W_CPU_EVICTION, F[T] + nap)  # usleep: blocked, not on a core
            waited += nap
        latency.add_sample(w, latency.LM_EVICTION_LAZYFREE, waited)
    if result != EVICT_FAIL and I[EV_TIMER]:
        result = EVICT_RUNNING
    record_call(w, cpu, tofree)
    return result, cpu


@leaf
def record_call(w, cpu, tofree):
    """funclatency-style histograms: call time (µs) and, over the limit, mem_tofree."""
    w.rc_evhist[log2_bucket(cpu * 1e6)] += 1
    if tofree > 0:
        w.rc_tofree[log2_bucket(tofree)] += 1


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """``maxmemory-policy``, ``-samples``, ``-eviction-tenacity``,
    ``lazyfree-lazy-eviction``, eviction's CPU costs, the eviction pool, and
    the per-call records (the LFU parameters: ``lfu.configure``)."""
    import numpy as np

    from redsim.model import state as S
    from redsim.model.blueprint import US
    from redsim.model.histogram import LOG2_BUCKETS

    server, cpu = b.scenario.server, b.scenario.engine.cpu
    for idx, v in ((S.C_EV_CALL, cpu.eviction_call), (S.C_EV_CHECK, cpu.eviction_check),
                   (S.C_EV_SAMPLE, cpu.eviction_sample), (S.C_EV_DELETE, cpu.eviction_delete)):
        b.F[idx] = v * US * cpu.scale
    b.I[S.EV_POLICY] = S.POLICIES.index(server.maxmemory_policy)
    b.I[S.EV_SAMPLES] = server.maxmemory_samples
    b.F[S.EV_TIME_LIMIT] = time_limit(server.maxmemory_eviction_tenacity)
    b.I[S.LAZY_EVICTION] = 1 if server.lazyfree_lazy_eviction else 0
    b.fill("ep", key=np.full(EVPOOL_SIZE, -1, np.int64), idle=np.zeros(EVPOOL_SIZE))
    b.fill("rc", evhist=np.zeros(LOG2_BUCKETS, np.int64),
           tofree=np.zeros(LOG2_BUCKETS, np.int64))
