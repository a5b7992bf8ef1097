"""Lazy freeing: which deletes free a value on the main thread and which hand it
to the bio lazy-free thread, and that thread's timeline.

Follows ``src/lazyfree.c:freeObjAsync`` (7.0/7.2: a value whose
``lazyfreeGetFreeEffort`` is above ``LAZYFREE_THRESHOLD``, 64, goes to the bio
thread, anything smaller is freed at once even when the delete is lazy),
``src/lazyfree.c:lazyfreeFreeObject`` (the bio side: ``lazyfree_objects``
down, ``lazyfreed_objects`` up, once per value), ``src/bio.c`` (one
``BIO_LAZY_FREE`` thread, jobs in FIFO order) and ``src/db.c:dbGenericDelete``
(the key's sds, its dictEntry and its expires entry are always freed at once;
only the value can wait). Which deletes are lazy: UNLINK always; DEL with
``lazyfree-lazy-user-del``; eviction with ``lazyfree-lazy-eviction``; expiry
with ``lazyfree-lazy-expire`` (reference §2.9, research notes §3.2).

``used_memory`` is one atomic counter that whichever thread frees decrements
(``src/zmalloc.c:update_zmalloc_stat_free``), so a value handed to the bio
thread stays in ``used_memory`` until the thread frees it, allocation by
allocation. The thread's jobs run back to back: a job starts when it is
queued or when the one before it ends, and takes ``allocations × free-alloc``
seconds (``engine.cpu.free-alloc``, the same per-allocation cost a
synchronous free pays on the main thread). While it runs, the value's bytes
leave ``used_memory`` at a steady rate (``in_flight``); when it ends the
value's arena extent is freed and the job is counted. The main thread pays
``engine.cpu.lazyfree-job`` to queue one (``bioCreateLazyFreeJob``: a
16-byte job, a list node, a mutex and a condition-variable signal).

On a host with shared cores (``host.cores``) the thread is a CPU-bound thread
while it has work, like a fork child: the host's scheduler gives it a share
and pushes its timeline back by the CPU it did not get
(``Kernel.lazyfree_running``, ``Kernel.delay_lazyfree``).

Deviation: its frees go straight to the arena, not through a thread cache of
its own, and its jobs' frees leave ``used_memory`` at a steady rate (the
EPYC VM's drains (the first reference host) are straight lines but for a last 6–15 % step when a
hashtable's bucket array goes).

``FLUSHALL ASYNC`` (or a plain FLUSHALL with ``lazyfree-lazy-user-flush``)
follows ``src/lazyfree.c:emptyDbAsync``: the main thread swaps in empty dicts
and queues the old ones as one job, whatever their size (no effort threshold),
adding every key to ``lazyfree_pending_objects``; ``lazyfreeFreeDatabase``
frees them all and counts them in ``lazyfreed_objects`` when it ends
(``admin.flushall``). Deviation: the flushed keys' allocations go back to the
model's arena when the job is queued; only ``used_memory`` waits for the
thread (the allocator's pages, and so RSS, follow ``used_memory`` in Redis:
for the 89 MB of a million small keys, ~0.3 s early).

``lazyfree-lazy-server-del`` makes Redis's implicit deletes lazy
(``src/db.c:dbDelete``). redsim's commands never overwrite a collection (a
string command on one is refused at load), so their only implicit delete is of
a collection emptied by HDEL, SREM, ZREM or a pop, whose effort of 0 keeps it
on the main thread either way; the setting is read and passed on all the same.

Deviation: the queue has a fixed number of slots (``LF_SPARE``); were it
full, a lazy delete would free on the main thread.
"""

from __future__ import annotations

from redsim.model.arena import arena_zfree, hi_handle, lo_handle
from redsim.model.encoding import LAZYFREE_THRESHOLD
from redsim.model.jit import leaf
from redsim.model.ring import wrap
from redsim.model.state import (
    C_FREE_ALLOC,
    LF_BYTES,
    LF_CAP,
    LF_FIRST,
    LF_FREE_AT,
    LF_N,
    LF_OBJECTS,
    STAT_LAZYFREED,
    WI_LAZYFREED,
    T,
)
from redsim.observe import metrics as M
from redsim.observe.bins import count

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "LAZY_USER_DEL", "i8", "-", "config", "lazyfree-lazy-user-del: DEL frees as UNLINK"),
    ("I", "LAZY_EXPIRE", "i8", "-", "config", "lazyfree-lazy-expire"),
    ("I", "LAZY_USER_FLUSH", "i8", "-", "config",
     "lazyfree-lazy-user-flush: a FLUSHALL without ASYNC or SYNC is ASYNC"),
    ("I", "LAZY_SERVER_DEL", "i8", "-", "config",
     "lazyfree-lazy-server-del: implicit deletes (an emptied collection's) free as UNLINK"),
    ("I", "LF_CAP", "i8", "-", "config",
     "slots of the bio lazy-free queue (one per big key, and room for collection keyspaces')"),
    ("I", "LF_FIRST", "i8", "-", "state", "the slot of the bio thread's current (oldest) job"),
    ("I", "LF_N", "i8", "-", "state", "jobs queued for the bio thread or being run by it"),
    ("I", "LF_OBJECTS", "i8", "-", "state",
     "lazyfree_pending_objects: values (a flushed database: its keys) in those jobs"),
    ("I", "LF_BYTES", "i8", "B", "state",
     "bytes of the pending values (the current job's whole value until it ends)"),
    ("I", "STAT_LAZYFREED", "i8", "-", "counter",
     "lazyfreed_objects: values (and flushed keys) the bio thread freed"),
    ("F", "LF_FREE_AT", "f8", "s", "state", "when the bio thread ends its last queued job, s"),
    ("F", "C_FREE_ALLOC", "f8", "s", "config",
     "CPU to free one allocation (a collection's element walk), s (engine.cpu.free-alloc)"),
    ("F", "C_LF_JOB", "f8", "s", "config",
     "main-thread CPU to queue one lazy free, s (engine.cpu.lazyfree-job)"),
    ("wi", "WI_LF_PENDING", "i8", "-", "gauge", "lazyfree_pending_objects at the window's end"),
    ("wi", "WI_LAZYFREED", "i8", "-", "count",
     "values (and flushed keys) the bio thread freed in the window"),
    ("lf", "aval", "i8", "-", "state",
     "each queued value's arena handles (extent, robj), oldest first from LF_FIRST; "
     "0 for a flushed database"),
    ("lf", "bytes", "i8", "B", "state", "each job's allocated bytes"),
    ("lf", "objects", "i8", "-", "state", "each job's objects: 1, or a flushed database's keys"),
    ("lf", "t0", "f8", "s", "state", "when the bio thread starts freeing it, s"),
    ("lf", "t1", "f8", "s", "state", "when the bio thread has freed it, s"),
)


RESULTS = (
    M.Metric("lazyfreed_objects", "-", M.SUM, "INFO lazyfreed_objects",
             value=M.counter("STAT_LAZYFREED")),
    M.Metric("lazyfree_pending_objects_end", "-", M.SUM, "INFO lazyfree_pending_objects at "
             "the end", value=M.counter("LF_OBJECTS")),
    M.Column(430, "lazyfree_pending_objects", "-", "INFO lazyfree_pending_objects",
             M.gauge("WI_LF_PENDING")),
    M.Column(440, "lazyfreed_objects", "-", "INFO lazyfreed_objects", M.total("WI_LAZYFREED")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""


@leaf
def free_cpu(w, allocs):
    """CPU seconds to free ``allocs`` allocations (``decrRefCount`` of a value)."""
    return allocs * w.F[C_FREE_ALLOC]


@leaf
def queue_job(w, aval, nbytes, seconds, objects):
    """``bioCreateLazyFreeJob``: a job freeing ``nbytes`` (arena handles
    ``aval``, 0 for none) of ``objects`` objects in ``seconds`` of the bio
    thread's CPU, after the jobs before it. False, and nothing queued, when
    the queue is full (the caller frees on the main thread: see configure)."""
    I = w.I
    F = w.F
    if I[LF_N] == I[LF_CAP]:
        return False
    start = max(F[T], F[LF_FREE_AT]) if I[LF_N] > 0 else F[T]
    slot = wrap(I[LF_FIRST] + I[LF_N], I[LF_CAP])
    w.lf_aval[slot] = aval
    w.lf_bytes[slot] = nbytes
    w.lf_objects[slot] = objects
    w.lf_t0[slot] = start
    w.lf_t1[slot] = start + seconds
    F[LF_FREE_AT] = w.lf_t1[slot]
    I[LF_N] += 1
    I[LF_OBJECTS] += objects
    I[LF_BYTES] += nbytes
    return True


@leaf
def queue(w, aval, nbytes, allocs, effort):
    """``freeObjAsync`` of a value (arena handles ``aval``, ``nbytes`` allocated
    in ``allocs`` allocations) with free effort ``effort``: True if it went to
    the bio thread (its bytes stay in ``used_memory`` until freed), False if
    the caller must free it now (a small one, or a full queue: see configure)."""
    if effort <= LAZYFREE_THRESHOLD:
        return False
    return queue_job(w, aval, nbytes, free_cpu(w, allocs), 1)


@leaf
def catch_up(w):
    """Let the bio thread finish every job that has ended by now: the value's
    extent and robj go back to the arena and the job is counted."""
    I = w.I
    F = w.F
    while I[LF_N] > 0:
        slot = I[LF_FIRST]
        if w.lf_t1[slot] > F[T]:
            break
        v = w.lf_aval[slot]
        # (A flushed database's keys went back when queued: v is 0, a handle
        # arena_zfree ignores.)
        arena_zfree(w, lo_handle(v))
        arena_zfree(w, hi_handle(v))
        w.lf_aval[slot] = 0
        objects = w.lf_objects[slot]
        I[LF_BYTES] -= w.lf_bytes[slot]
        I[LF_FIRST] = wrap(I[LF_FIRST] + 1, I[LF_CAP])
        I[LF_N] -= 1
        I[LF_OBJECTS] -= objects
        I[STAT_LAZYFREED] += objects
        count(w, WI_LAZYFREED, F[T], objects)


@leaf
def in_flight(w):
    """Bytes of ``used_memory`` the bio thread still holds: the pending values,
    less what the current job has freed so far (it frees at a steady rate)."""
    catch_up(w)
    I = w.I
    if I[LF_N] == 0:
        return 0
    slot = I[LF_FIRST]
    t0, t1 = w.lf_t0[slot], w.lf_t1[slot]
    done = 0
    now = w.F[T]
    if now > t0 and t1 > t0:
        done = int(w.lf_bytes[slot] * (now - t0) / (t1 - t0))
    return I[LF_BYTES] - done


# ---- configuration (Python, once per run) ---------------------------------------------


LF_SPARE = 4096
"""Queue slots beyond the big keys: a collection keyspace's values are freed
again and again, but one needs more than 64 elements to be queued at all and
the main thread adds them more slowly than the bio thread frees them, so the
queue stays short; were it ever full, a value would be freed on the main
thread instead (Redis's bio list has no limit)."""


def configure(b) -> None:
    """``lazyfree-lazy-*``, the free costs, and the queue's slots (needs
    ``collection.configure``'s ``collections``)."""
    import numpy as np

    from redsim.model import state as S
    from redsim.model.blueprint import US

    server, cpu = b.scenario.server, b.scenario.engine.cpu
    b.I[S.LAZY_USER_DEL] = 1 if server.lazyfree_lazy_user_del else 0
    b.I[S.LAZY_EXPIRE] = 1 if server.lazyfree_lazy_expire else 0
    b.I[S.LAZY_SERVER_DEL] = 1 if server.lazyfree_lazy_server_del else 0
    b.I[S.LAZY_USER_FLUSH] = 1 if server.lazyfree_lazy_user_flush else 0
    b.F[S.C_FREE_ALLOC] = cpu.free_alloc * US * cpu.scale
    b.F[S.C_LF_JOB] = cpu.lazyfree_job * US * cpu.scale
    n_big = len(b.scenario.big_keys)
    cap = n_big + min(b.size.collections - n_big, LF_SPARE) + 1
    b.I[S.LF_CAP] = cap
    b.fill("lf", aval=np.zeros(cap, np.int64), bytes=np.zeros(cap, np.int64),
           objects=np.zeros(cap, np.int64), t0=np.zeros(cap), t1=np.zeros(cap))
