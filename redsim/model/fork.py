"""``fork()`` for BGSAVE and AOF rewrite, the child's life, and copy-on-write
(``src/server.c:redisFork``, ``src/rdb.c``, ``src/aof.c``; reference §5.2–5.4).

Follows ``src/server.c:redisFork``, ``src/rdb.c:rdbSaveBackground``,
``src/aof.c:rewriteAppendOnlyFileBackground``, the save-point and
auto-rewrite checks of ``src/server.c:serverCron``,
``src/server.c:checkChildrenDone`` with ``src/rdb.c:backgroundSaveDoneHandler``
and ``src/aof.c:backgroundRewriteDoneHandler``, the child's incremental fsync
(``src/rio.c:rioSetAutoSync``: 32 MB in 6.2, 4 MB in 7.x) and
``src/server.c:updateDictResizePolicy``.

**Triggers** (``serverCron``, no child running): a ``save`` point
(``dirty ≥ changes`` and more than ``seconds`` since the last save, and the
last BGSAVE succeeded or 5 s passed since it was tried); an AOF rewrite when
``aof_current_size`` passed ``auto-aof-rewrite-min-size`` and grew by
``auto-aof-rewrite-percentage`` over its size after the last rewrite; a
rewrite scheduled while a BGSAVE ran. Scenario ``events`` ask for BGSAVE /
BGREWRITEAOF at a given time, executed as the command would be.

**fork()** blocks the main thread while the kernel copies the page tables:
``fork-fixed + RSS × fork-per-gb`` with 4 KB pages; with 2 MB transparent
huge pages a page-table entry maps 512× more memory, so that part shrinks
512× (why the seed S1 fork took ~6 ms). Redis records it as
``latest_fork_usec`` and the ``fork`` latency event.

**The child** writes the dataset: it serialises ``keys / child-keys-per-sec``
seconds' worth of work and, as it goes, queues its file on the disk in
chunks of ``rdb/aof-rewrite-incremental-fsync``'s 32 MB (6.2) / 4 MB (7.x),
each a write plus an fsync (``disk.queue_child_chunks``). It exits when its
last chunk is on disk; ``serverCron``'s ``checkChildrenDone`` then runs the
done handler (``lastsave``, ``dirty``; or the new AOF base size).

**Copy-on-write**: after the fork, parent and child share every page. The
parent's first write to a page faults: the kernel copies the page (4 KB, or
2 MB with huge pages on kernels before 5.8 — ``host.thp-cow: copy-huge``;
since Linux 5.8, commit 3917c80280c9 "thp: change CoW semantics for
anon-THP", a write to a shared huge page splits its mapping and copies only
the 4 KB written — ``thp-cow: split``, the default) — ``cow-fault`` plus the page size over
``cow-copy-bandwidth`` of main-thread time (``cpu_cow``) — and the copy adds
to the host's memory (``current_cow_size``), not to ``used_memory``. A
write to a key touches two pages: its dict entry's (the value pointer
changes) and the page its new value is allocated in (jemalloc hands out the
region freed most recently, which is anywhere). Which page a key's entry
or value lies in is a fixed hash of its row over the pages that existed at
the fork, as jemalloc scatters a long-running server's allocations.
Deletes (DEL, evictions, expiries) touch the entry's page. While a child
exists, lookups do not update the LRU/LFU field (``lookupKey``) — so reads
copy nothing — dicts do not grow unless 5× overfull, and ``serverCron``
does not shrink them (``updateDictResizePolicy``).

Deviations: pages of client buffers, the AOF buffer and allocator metadata
are not counted (a few per iteration); keys added after the fork are
placed on pre-fork pages; a child never fails; with ``thp-cow: split`` the
split of the huge mapping costs no more than an ordinary fault, and the
heap stays mapped with 2 MB entries for the next fork's page-table copy
(khugepaged would collapse the split ranges back only slowly).
"""

from __future__ import annotations

import math

import numpy as np

from redsim.model import aof, disk, latency
from redsim.model.cow import cow_bytes
from redsim.model.jit import step
from redsim.model.main_thread import busy
from redsim.model.rdb import rdb_bytes
from redsim.model.rss import used_memory_rss
from redsim.model.state import (
    AOF_BASE,
    AOF_ON,
    AOF_RW_MIN,
    AOF_RW_PERC,
    AOF_RW_SCHEDULED,
    AOF_SIZE,
    AOF_SIZE_AT_FORK,
    CHILD,
    CHILD_AOF,
    CHILD_CHUNK_B,
    CHILD_CHUNKS,
    CHILD_DT,
    CHILD_END,
    CHILD_FILE_B,
    CHILD_KEY_RATE,
    CHILD_LAST_B,
    CHILD_NEXT,
    CHILD_NONE,
    CHILD_RDB,
    CHILD_SOCKET,
    COW_PAGES,
    DIRTY,
    DIRTY_AT_FORK,
    FORK_FIXED,
    FORK_PER_BYTE,
    FORK_REQ,
    HEAP_HUGE,
    KS_KEYS,
    LATEST_FORK,
    MAX_FORK_REC,
    N_FORK_FIELDS,
    N_FORK_REC,
    N_PAGES,
    N_SAVE,
    PAGE_SHIFT,
    PG_WORDS,
    REDIS_62,
    STAT_AOF_REWRITES,
    STAT_FORKS,
    STAT_RDB_SAVES,
    T_LASTSAVE,
    W_CPU_FORK,
    WI_FORKS,
    T,
)
from redsim.observe import metrics as M
from redsim.observe.bins import count

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "FORK_FIXED", "f8", "s", "config",
     "fork()'s time besides the page tables (host.fork-fixed), s"),
    ("F", "FORK_PER_BYTE", "f8", "s/B", "config",
     "fork()'s page-table copy per byte of RSS mapped with 4 KB pages, s/B"),
    ("F", "CHILD_KEY_RATE", "f8", "keys/s", "config", "keys the fork child serialises per second"),
    ("F", "CHILD_NEXT", "f8", "s", "state",
     "when the child issues its next file chunk to the disk, s"),
    ("F", "CHILD_DT", "f8", "s", "state",
     "time between the child's chunks: its serialisation time over the chunks, s"),
    ("F", "CHILD_END", "f8", "s", "state",
     "when the child exits (known once its last chunk is queued); inf before"),
    ("F", "T_LASTSAVE", "f8", "s", "state", "server.lastsave: when the last BGSAVE completed, s"),
    ("F", "LATEST_FORK", "f8", "s", "state",
     "server.stat_fork_time: how long the last fork() took, s (latest_fork_usec)"),
    ("I", "AOF_RW_SCHEDULED", "i8", "-", "state",
     "server.aof_rewrite_scheduled: 1 while a BGREWRITEAOF waits for a BGSAVE child"),
    ("I", "DIRTY_AT_FORK", "i8", "-", "state",
     "server.dirty_before_bgsave: server.dirty when the child forked"),
    ("I", "CHILD", "i8", "-", "state", "the fork child: CHILD_NONE, CHILD_RDB or CHILD_AOF"),
    ("I", "CHILD_SOCKET", "i8", "-", "state",
     "1: the RDB child writes to replicas' sockets (diskless sync, model/replication.py), "
     "not to disk; its end is the transfers'"),
    ("I", "FORK_REQ", "i8", "-", "state",
     "a scenario event asked for BGSAVE / BGREWRITEAOF (CHILD_RDB / CHILD_AOF)"),
    ("I", "N_SAVE", "i8", "-", "config", "save points in tb_save_secs / tb_save_changes"),
    ("I", "PAGE_SHIFT", "i8", "log2 B", "config",
     "log2 of the page a copy-on-write fault copies: 12 (4 KB) or 21 (2 MB)"),
    ("I", "PG_WORDS", "i8", "-", "size",
     "words of the copy-on-write bitmap pg cow (32 pages a word): its capacity"),
    ("I", "CHILD_CHUNKS", "i8", "-", "state",
     "chunks of the child's file still to queue on the disk"),
    ("I", "CHILD_CHUNK_B", "i8", "B", "state",
     "size of one chunk of the child's file (rio autosync: 32 MB in 6.2, 4 MB in 7.x), B"),
    ("I", "CHILD_LAST_B", "i8", "B", "state", "size of the child's last chunk, B"),
    ("I", "STAT_FORKS", "i8", "-", "counter", "server.stat_total_forks: forks since start"),
    ("I", "STAT_RDB_SAVES", "i8", "-", "counter", "BGSAVEs completed since start (rdb_saves)"),
    ("I", "STAT_AOF_REWRITES", "i8", "-", "counter",
     "AOF rewrites completed since start (aof_rewrites)"),
    ("I", "N_FORK_REC", "i8", "-", "counter",
     "forks recorded in rc_forks so far (at most MAX_FORK_REC)"),
    ("I", "AOF_SIZE_AT_FORK", "i8", "B", "state", "aof_current_size when the rewrite child forked"),
    ("I", "CHILD_FILE_B", "i8", "B", "state",
     "bytes of the file the child writes (RDB, or the AOF's new base)"),
    ("I", "HEAP_HUGE", "i8", "-", "config",
     "1: the heap is mapped with 2 MB pages (fork copies 512x fewer entries)"),
    ("wf", "W_CPU_FORK", "f8", "s", "cpu", "main-thread time in fork()"),
    ("wi", "WI_FORKS", "i8", "-", "count", "forks in the window"),
    ("wi", "WI_CHILD", "i8", "-", "gauge",
     "the fork child at the window's end: CHILD_NONE, CHILD_RDB or CHILD_AOF"),
    ("tb", "save_secs", "i8", "s", "config",
     "each save point's seconds (save <seconds> <changes>)"),
    ("tb", "save_changes", "i8", "-", "config",
     "each save point's changes: dirty keys that trigger a BGSAVE"),
    ("rc", "forks", "f8", "-", "record", "one row of FORK_FIELDS per fork (model/fork.py)"),
)


RESULTS = (
    M.Metric("total_forks", "-", M.SUM, "INFO total_forks", value=M.counter("STAT_FORKS"),
             line=M.Line(320, "forks / latest fork", lambda s: (
                 f"{s['total_forks']:,} / " + M.fmt_s(s["latest_fork_usec"] * 1e-6)),
                 when=lambda s: bool(s.get("aof_enabled") or s.get("total_forks")))),
    M.Metric("latest_fork_usec", "us", M.MAX, "INFO latest_fork_usec",
             value=lambda r: int(round(M.scalar("LATEST_FORK")(r) * 1e6))),
    M.Metric("fork_max_s", "s", M.MAX, "the longest fork() stall", made_by="_persistence_summary"),
    M.Metric("rdb_saves", "-", M.SUM, "RDB children that finished",
             value=M.counter("STAT_RDB_SAVES")),
    M.Metric("aof_rewrites", "-", M.SUM, "AOF rewrite children that finished",
             value=M.counter("STAT_AOF_REWRITES")),
    M.Column(530, "rdb_bgsave_in_progress", "-", "INFO rdb_bgsave_in_progress",
             lambda r: (M.row(r, "WI_CHILD") == CHILD_RDB).astype(np.int64)),
    M.Column(540, "aof_rewrite_in_progress", "-", "INFO aof_rewrite_in_progress",
             lambda r: (M.row(r, "WI_CHILD") == CHILD_AOF).astype(np.int64)),
    M.Column(550, "total_forks", "-", "INFO total_forks", M.total("WI_FORKS")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

HUGE_PAGE_SHIFT = 21  # 2 MB transparent huge pages
SMALL_PAGE_SHIFT = 12  # 4 KB pages
PTES_PER_PMD = 512  # 4 KB page-table entries one 2 MB entry replaces
CONFIG_BGSAVE_RETRY_DELAY = 5.0  # s (server.h)
AUTOSYNC_62 = 32 * 1024 * 1024  # REDIS_AUTOSYNC_BYTES: the child's fsync cadence, 6.2
AUTOSYNC_7 = 4 * 1024 * 1024  # ... 7.x


# ---- fork and the child ---------------------------------------------------------------


@step
def redis_fork(w, child_type):
    """``redisFork``: start a BGSAVE (``CHILD_RDB``) or AOF rewrite
    (``CHILD_AOF``) child. Returns False if a child already runs."""
    F = w.F
    I = w.I
    if I[CHILD] != CHILD_NONE:
        return False
    if child_type == CHILD_AOF:
        aof.flush_append_only_file(w, np.bool_(True))  # 7.x: the INCR file starts from here
    rss = used_memory_rss(w)  # fork() copies the page tables of the resident pages
    mapped = rss / PTES_PER_PMD if I[HEAP_HUGE] else rss
    spent = F[FORK_FIXED] + mapped * F[FORK_PER_BYTE]
    t0 = F[T]
    busy(w, W_CPU_FORK, spent)
    F[LATEST_FORK] = spent
    latency.add_sample(w, latency.LM_FORK, spent)
    I[STAT_FORKS] += 1
    count(w, WI_FORKS, t0, 1)
    pages = (rss + (1 << I[PAGE_SHIFT]) - 1) >> I[PAGE_SHIFT]
    I[N_PAGES] = max(1, min(pages, 32 * I[PG_WORDS]))
    for i in range((I[N_PAGES] + 31) >> 5):
        w.pg_cow[i] = 0
    I[COW_PAGES] = 0
    I[CHILD] = child_type
    I[CHILD_SOCKET] = 0  # replication.start_bgsave sets it for a diskless sync
    I[DIRTY_AT_FORK] = I[DIRTY]
    I[AOF_SIZE_AT_FORK] = I[AOF_SIZE]
    # The child's file, in chunks of the incremental-fsync size, spread over
    # its serialisation time.
    nbytes = rdb_bytes(w)
    chunk = AUTOSYNC_62 if I[REDIS_62] else AUTOSYNC_7
    n = max(1, (nbytes + chunk - 1) // chunk)
    I[CHILD_CHUNK_B] = chunk
    I[CHILD_LAST_B] = nbytes - (n - 1) * chunk
    I[CHILD_CHUNKS] = n
    F[CHILD_DT] = I[KS_KEYS] / F[CHILD_KEY_RATE] / n
    F[CHILD_NEXT] = F[T] + F[CHILD_DT]
    F[CHILD_END] = math.inf
    r = I[N_FORK_REC]
    if r < MAX_FORK_REC:
        row = r * N_FORK_FIELDS
        w.rc_forks[row + 0] = t0
        w.rc_forks[row + 1] = spent
        w.rc_forks[row + 2] = child_type
        w.rc_forks[row + 3] = rss
        w.rc_forks[row + 4] = I[N_PAGES]
        w.rc_forks[row + 5] = 0.0
        w.rc_forks[row + 6] = math.inf
        I[N_FORK_REC] = r + 1
    I[CHILD_FILE_B] = nbytes
    return True


@step
def child_done(w):
    """``checkChildrenDone`` + the done handlers, once the child has exited."""
    F = w.F
    I = w.I
    if I[CHILD] == CHILD_RDB:
        if not I[CHILD_SOCKET]:  # backgroundSaveDoneHandlerDisk (Socket: no save)
            F[T_LASTSAVE] = F[T]
            I[DIRTY] -= I[DIRTY_AT_FORK]
            I[STAT_RDB_SAVES] += 1
    else:  # backgroundRewriteDoneHandler
        I[AOF_SIZE] = I[CHILD_FILE_B] + I[AOF_SIZE] - I[AOF_SIZE_AT_FORK]
        I[AOF_BASE] = I[AOF_SIZE]
        I[STAT_AOF_REWRITES] += 1
        latency.add_sample(w, latency.LM_AOF_RENAME, 0.0)
    r = I[N_FORK_REC] - 1
    if 0 <= r < MAX_FORK_REC:
        w.rc_forks[r * N_FORK_FIELDS + 5] = cow_bytes(w)
        w.rc_forks[r * N_FORK_FIELDS + 6] = F[CHILD_END]
    I[CHILD] = CHILD_NONE
    I[CHILD_SOCKET] = 0
    I[COW_PAGES] = 0  # the child's pages go with it


@step
def persistence_cron(w):
    """serverCron's persistence work, in Redis's order: a finished child, a
    scheduled rewrite, save points, the automatic AOF rewrite."""
    F = w.F
    I = w.I
    if I[CHILD] != CHILD_NONE:
        disk.queue_child_chunks(w, F[T])
        if I[CHILD_CHUNKS] == 0 and F[CHILD_END] <= F[T]:
            child_done(w)
    if I[CHILD] == CHILD_NONE and I[AOF_RW_SCHEDULED]:
        I[AOF_RW_SCHEDULED] = 0
        redis_fork(w, CHILD_AOF)
    if I[CHILD] == CHILD_NONE:
        for j in range(I[N_SAVE]):
            # (A BGSAVE never fails here, so the 5 s retry delay never applies.)
            if I[DIRTY] >= w.tb_save_changes[j] and F[T] - F[T_LASTSAVE] > w.tb_save_secs[j]:
                redis_fork(w, CHILD_RDB)
                break
    if (I[CHILD] == CHILD_NONE and I[AOF_ON] and I[AOF_RW_PERC] > 0
            and I[AOF_SIZE] > I[AOF_RW_MIN]):
        base = I[AOF_BASE] if I[AOF_BASE] > 0 else 1
        growth = I[AOF_SIZE] * 100 // base - 100
        if growth >= I[AOF_RW_PERC]:
            redis_fork(w, CHILD_AOF)


@step
def fork_command(w):
    """A scenario event's BGSAVE or BGREWRITEAOF, run as the command would be:
    BGSAVE is refused while a child runs; BGREWRITEAOF is scheduled behind
    a BGSAVE child (and refused behind a rewrite)."""
    I = w.I
    req = I[FORK_REQ]
    I[FORK_REQ] = 0
    if req == CHILD_AOF and I[CHILD] == CHILD_RDB:
        I[AOF_RW_SCHEDULED] = 1
        return
    redis_fork(w, req)


# ---- configuration (Python, once per run) ---------------------------------------------


def forks_possible(scenario) -> bool:
    """Whether the run can fork: save points, an AOF that may be rewritten,
    events, or replicas (a full sync forks)."""
    server = scenario.server
    return bool(server.save or (server.appendonly and server.auto_aof_rewrite_percentage)
                or scenario.events or scenario.replicas)


def heap_huge(scenario) -> bool:
    """Whether Redis's heap is mapped with 2 MB transparent huge pages: THP
    ``always`` on the host and ``disable-thp no`` (Redis otherwise calls
    ``prctl(PR_SET_THP_DISABLE)``; with ``madvise`` its allocator asks for none)."""
    return (scenario.host.transparent_huge_pages == "always"
            and not scenario.server.disable_thp)


def _pages(scenario, n_keys: int) -> tuple[int, int]:
    """Page size (log2) a copy-on-write fault copies and the bitmap's words.

    The bitmap covers the largest memory a fork could see: maxmemory (or,
    without one, 4 KB per key row and at least 1 GB), twice over for what
    maxmemory does not count, in pages of 32 bits a word.
    """
    shift = (HUGE_PAGE_SHIFT if heap_huge(scenario) and scenario.host.thp_cow == "copy-huge"
             else SMALL_PAGE_SHIFT)
    if not forks_possible(scenario):
        return shift, 1
    span = scenario.server.maxmemory or max(n_keys * 4096, 1 << 30)
    pages = (2 * span + (1 << shift) - 1) >> shift
    return shift, (pages + 31) // 32


def configure(b) -> None:
    """The ``save`` points, the host's fork costs (``host.fork`` preset or
    ``fork-per-gb``), transparent huge pages, the size of the copy-on-write page
    bitmap (``PG_WORDS``; the bitmap and the copy-on-write costs:
    ``cow.configure``), and the per-fork records.
    Needs ``key_rows_created``."""
    import numpy as np

    from redsim.model import state as S
    from redsim.model.blueprint import i64
    from redsim.model.presets import FORK_PRESETS

    sc = b.scenario
    server, host = sc.server, sc.host
    b.fill("tb", save_secs=i64([sec for sec, _ in server.save] or [0]),
           save_changes=i64([ch for _, ch in server.save] or [0]))
    b.I[S.N_SAVE] = len(server.save)
    per_gb = host.fork_per_gb if host.fork_per_gb is not None else (
        FORK_PRESETS[host.fork].ms_per_gb * 1e-3)
    b.I[S.HEAP_HUGE] = 1 if heap_huge(sc) else 0
    b.F[S.FORK_FIXED] = host.fork_fixed
    b.F[S.FORK_PER_BYTE] = per_gb / 2**30
    b.F[S.CHILD_KEY_RATE] = host.child_keys_per_sec
    b.F[S.CHILD_END] = math.inf
    page_shift, pg_words = _pages(sc, b.size.key_rows_created)
    b.I[S.PAGE_SHIFT] = page_shift
    b.I[S.PG_WORDS] = pg_words
    b.fill("rc", forks=np.zeros(S.MAX_FORK_REC * S.N_FORK_FIELDS))
