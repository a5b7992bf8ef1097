"""The append-only file: ``feedAppendOnlyFile`` and ``flushAppendOnlyFile``
(``src/aof.c``; reference §5.1).

Follows ``src/aof.c:feedAppendOnlyFile``, ``src/aof.c:flushAppendOnlyFile``
(the background fsync through ``src/aof.c:aof_background_fsync``) and the
postponed flush that ``src/server.c:serverCron`` retries, in 6.2, 7.0 and 7.2
alike but for 6.2's rewrite buffer (see the deviations below).

- **feed**: every write command that changed the dataset, and the DEL that an
  eviction or an expiry propagates, appends its RESP encoding to
  ``aof_buf`` (``AOF_BUF``). The buffer is counted in ``used_memory`` and
  excluded from eviction's ``mem_tofree`` (``memory.not_counted_for_evict``).
- **flush**: once per event-loop iteration, in ``beforeSleep`` before any
  reply is written (group commit), one ``write()`` of the whole buffer on the
  main thread; then, by ``appendfsync``:

  - ``always``: ``fdatasync`` on the main thread, which waits for the disk
    (``disk.submit``); the replies of the iteration's writes go out after it.
    With an empty buffer it fsyncs only if written data is still unsynced,
    so an iteration of reads never fsyncs.
  - ``everysec``: if the second (``unixtime``) moved on since the last fsync
    and no background fsync is running, a background fsync job is queued on
    the disk (the bio thread). If one is still running when a flush is due,
    the write is postponed — the buffer grows — for up to 2 s (whole
    seconds of ``unixtime``, as Redis counts them; retried from every
    ``serverCron``); then it is written anyway, ``aof_delayed_fsync`` is
    counted, and on Linux that ``write()`` blocks until the fsync ends.
  - ``no``: the kernel's flusher writes dirty AOF pages back about every 30 s
    (a disk job that takes no main-thread time).

  ``no-appendfsync-on-rewrite yes`` skips the fsync while a fork child exists.

Deviations: the feed size is the command's request encoding (7.x rewrites
relative expiries to absolute ones, a few bytes longer; the first ``SELECT``
is left out); the DELs of evictions and expiries assume the first group's key
length; 6.2's AOF-rewrite buffer (and its end-of-rewrite diff write) is not
modelled — both versions behave as 7.x's incremental AOF files.
"""

from __future__ import annotations

import math

import numpy as np

from redsim.model import disk, latency
from redsim.model.histogram import log2_bucket
from redsim.model.jit import leaf, step
from redsim.model.main_thread import busy, busy_until
from redsim.model.rdb import dataset_rdb_bytes
from redsim.model.state import (
    AOF_BASE,
    AOF_BG_END,
    AOF_BUF,
    AOF_DELAYED,
    AOF_LAST_FSYNC,
    AOF_LAST_WRITEBACK,
    AOF_ON,
    AOF_POLICY,
    AOF_POSTPONE_START,
    AOF_SIZE,
    AOF_UNSYNCED,
    C_AOF_WRITE,
    C_AOF_WRITE_B,
    CHILD,
    CHILD_NONE,
    FSYNC_ALWAYS,
    FSYNC_EVERYSEC,
    FSYNC_NO,
    NO_FSYNC_RW,
    STAT_FSYNCS,
    W_CPU_AOF,
    W_CPU_FSYNC,
    WI_AOF_DELAYED,
    WI_FSYNCS,
    T,
)
from redsim.model.world import pack
from redsim.observe import metrics as M
from redsim.observe.bins import count

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "AOF_POSTPONE_START", "f8", "s", "state",
     "when a flush was first postponed behind a busy fsync; -1 = not"),
    ("F", "AOF_LAST_FSYNC", "f8", "s", "state",
     "server.aof_last_fsync: the unixtime (whole s) of the last fsync"),
    ("F", "AOF_BG_END", "f8", "s", "state",
     "when the background fsync job running (or last run) ends"),
    ("F", "AOF_LAST_WRITEBACK", "f8", "s", "state",
     "appendfsync no: the kernel flusher's last writeback of the AOF"),
    ("F", "C_AOF_WRITE", "f8", "s", "config",
     "CPU of the main thread's write() of aof_buf, per call, s"),
    ("F", "C_AOF_WRITE_B", "f8", "s/B", "config", "CPU of that write() per byte written, s/B"),
    ("I", "AOF_ON", "i8", "-", "config", "1: appendonly yes (server.aof_state on)"),
    ("I", "AOF_POLICY", "i8", "-", "config",
     "server.aof_fsync (appendfsync): FSYNC_ALWAYS, FSYNC_EVERYSEC or FSYNC_NO"),
    ("I", "AOF_BUF", "i8", "B", "state",
     "sdslen(server.aof_buf): fed bytes not yet written, in used_memory, B"),
    ("I", "AOF_UNSYNCED", "i8", "B", "state",
     "bytes written to the AOF since its last fsync (or writeback), B"),
    ("I", "AOF_SIZE", "i8", "B", "state",
     "server.aof_current_size: the AOF's size, base and increments, B"),
    ("I", "AOF_BASE", "i8", "B", "state",
     "server.aof_rewrite_base_size: the AOF's size after the last rewrite (or at start), B"),
    ("I", "AOF_DELAYED", "i8", "-", "counter",
     "server.aof_delayed_fsync: writes forced after a flush was postponed 2 s behind an fsync"),
    ("I", "AOF_RW_PERC", "i8", "%", "config",
     "auto-aof-rewrite-percentage: growth over the base that triggers a rewrite; 0 = off"),
    ("I", "AOF_RW_MIN", "i8", "B", "config",
     "auto-aof-rewrite-min-size: no automatic rewrite below this AOF size, B"),
    ("I", "NO_FSYNC_RW", "i8", "-", "config",
     "1: no-appendfsync-on-rewrite yes (no fsync while a child exists)"),
    ("I", "STAT_FSYNCS", "i8", "-", "counter",
     "AOF fdatasyncs issued since start (main thread or bio job)"),
    ("wf", "W_CPU_AOF", "f8", "s", "cpu",
     "write() of the AOF buffer, incl. a write blocked behind a running fsync"),
    ("wf", "W_CPU_FSYNC", "f8", "s", "cpu", "main-thread time in fdatasync (appendfsync always)"),
    ("wi", "WI_FSYNCS", "i8", "-", "count", "AOF fdatasyncs issued in the window"),
    ("wi", "WI_AOF_DELAYED", "i8", "-", "count",
     "AOF writes forced behind a slow fsync in the window (aof_delayed_fsync's increase)"),
    ("wi", "WI_AOF_BUF", "i8", "B", "gauge", "aof_buf's length at the window's end, B"),
    ("wi", "WI_AOF_SIZE", "i8", "B", "gauge", "aof_current_size at the window's end, B"),
    ("rc", "fsync", "i8", "-", "record",
     "fdatasync calls by duration (queueing + the call): [2^b, 2^(b+1)) µs"),
)


def _persisting(s: dict) -> bool:
    """The summary's persistence lines are printed: the AOF is on or a child forked."""
    return bool(s.get("aof_enabled") or s.get("total_forks"))


RESULTS = (
    M.Metric("aof_enabled", "-", M.SUM, "appendonly (1 on)", value=M.counter("AOF_ON"),
             line=M.Line(300, "  aof / fsync / fork / cow",
                         lambda s: M.shares(s, "aof", "fsync", "fork", "cow"), when=_persisting)),
    M.Metric("aof_delayed_fsync", "-", M.SUM, "INFO aof_delayed_fsync",
             value=M.counter("AOF_DELAYED")),
    M.Metric("aof_fsyncs", "-", M.SUM, "fdatasync calls on the AOF",
             value=M.counter("STAT_FSYNCS"),
             line=M.Line(310, "AOF fsyncs / delayed",
                         lambda s: f"{s['aof_fsyncs']:,} / {s['aof_delayed_fsync']:,}",
                         when=_persisting)),
    M.Metric("aof_current_size_end", "B", M.SUM, "INFO aof_current_size at the end",
             value=M.counter("AOF_SIZE")),
    # A host's is its largest instance's (before the declarations the key's
    # name made the host add the instances' peaks, which need not coincide).
    M.Metric("aof_buffer_length_max", "B", M.MAX, "aof_buf's largest sample",
             value=M.peak("aof_buffer_length")),
    M.Metric("fsync_median_usecs_bucket", "us", M.FIRST, "the median fsync's log2 bucket "
             "[lo, hi] (only with fsyncs)", made_by="_persistence_summary"),
    M.Column(480, "aof_buffer_length", "B", "INFO aof_buffer_length", M.gauge("WI_AOF_BUF")),
    M.Column(490, "aof_current_size", "B", "INFO aof_current_size", M.gauge("WI_AOF_SIZE")),
    M.Column(500, "aof_delayed_fsync", "-", "INFO aof_delayed_fsync",
             M.total("WI_AOF_DELAYED")),
    M.Column(510, "fsyncs_per_sec", "1/s", "fdatasync calls on the AOF per second",
             M.rate("WI_FSYNCS")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

AOF_POSTPONE_MAX = 2  # s of unixtime a write waits for a running fsync (flushAppendOnlyFile)
WRITEBACK_INTERVAL = 30.0  # s: the kernel writes dirty pages back once they are this old


@leaf
def feed(w, nbytes):
    """``feedAppendOnlyFile``: append a command's ``nbytes`` of RESP to aof_buf."""
    if w.I[AOF_ON]:
        w.I[AOF_BUF] += nbytes


@leaf
def fsync_in_progress(w):
    """``aofFsyncInProgress``: the bio thread's fsync job has not finished."""
    return w.F[T] < w.F[AOF_BG_END]


@leaf
def record_fsync(w, t0, end):
    """One fdatasync issued at t0 that completed at ``end``."""
    w.I[STAT_FSYNCS] += 1
    count(w, WI_FSYNCS, t0, 1)
    w.rc_fsync[log2_bucket((end - t0) * 1e6)] += 1


@leaf
def unixtime(w):
    """``server.unixtime``: the clock in whole seconds."""
    return math.floor(w.F[T])


@step
def flush_append_only_file(w, force):
    """``flushAppendOnlyFile(force)``; the main thread's time goes to
    ``cpu_aof`` (write) and ``cpu_fsync`` (fdatasync)."""
    F = w.F
    I = w.I
    policy = I[AOF_POLICY]
    now_s = unixtime(w)
    sync_in_progress = False
    if I[AOF_BUF] == 0:
        # An fsync may still be owed for data written earlier (7.x).
        if policy == FSYNC_EVERYSEC:
            if I[AOF_UNSYNCED] == 0 or now_s <= F[AOF_LAST_FSYNC] or fsync_in_progress(w):
                return
        elif policy == FSYNC_ALWAYS:
            if I[AOF_UNSYNCED] == 0:
                return
        else:
            return
    else:
        if policy == FSYNC_EVERYSEC:
            sync_in_progress = fsync_in_progress(w)
        if policy == FSYNC_EVERYSEC and not force and sync_in_progress:
            if F[AOF_POSTPONE_START] < 0.0:
                F[AOF_POSTPONE_START] = now_s
                return
            if now_s - F[AOF_POSTPONE_START] < AOF_POSTPONE_MAX:
                return
            I[AOF_DELAYED] += 1  # "Asynchronous AOF fsync is taking too long"
            count(w, WI_AOF_DELAYED, F[T], 1)
        t0 = F[T]
        nbytes = I[AOF_BUF]
        if sync_in_progress:
            # On Linux a write() to a file being fsynced waits for the fsync.
            busy_until(w, W_CPU_AOF, F[AOF_BG_END])
        busy(w, W_CPU_AOF, F[C_AOF_WRITE] + F[C_AOF_WRITE_B] * nbytes)
        took = F[T] - t0
        if sync_in_progress:
            latency.add_sample(w, latency.LM_AOF_WRITE_PENDING_FSYNC, took)
        elif I[CHILD] != CHILD_NONE:
            latency.add_sample(w, latency.LM_AOF_WRITE_ACTIVE_CHILD, took)
        else:
            latency.add_sample(w, latency.LM_AOF_WRITE_ALONE, took)
        latency.add_sample(w, latency.LM_AOF_WRITE, took)
        F[AOF_POSTPONE_START] = -1.0
        I[AOF_SIZE] += nbytes
        I[AOF_UNSYNCED] += nbytes
        I[AOF_BUF] = 0
    # try_fsync:
    if I[NO_FSYNC_RW] and I[CHILD] != CHILD_NONE:
        return
    if policy == FSYNC_ALWAYS:
        t0 = F[T]
        end = disk.submit(w, t0, I[AOF_UNSYNCED], True)
        busy_until(w, W_CPU_FSYNC, end)
        record_fsync(w, t0, end)
        latency.add_sample(w, latency.LM_AOF_FSYNC_ALWAYS, end - t0)
        I[AOF_UNSYNCED] = 0
        F[AOF_LAST_FSYNC] = now_s
    elif policy == FSYNC_EVERYSEC and now_s > F[AOF_LAST_FSYNC]:
        if not sync_in_progress:
            end = disk.submit(w, F[T], I[AOF_UNSYNCED], True)
            F[AOF_BG_END] = end
            record_fsync(w, F[T], end)
            I[AOF_UNSYNCED] = 0
        F[AOF_LAST_FSYNC] = now_s


@step
def aof_cron(w):
    """serverCron's AOF work: retry a postponed flush; with ``appendfsync no``,
    the kernel's periodic writeback of dirty AOF pages."""
    F = w.F
    I = w.I
    if not I[AOF_ON]:
        return
    if F[AOF_POSTPONE_START] >= 0.0:
        flush_append_only_file(w, np.bool_(False))
    if (I[AOF_POLICY] == FSYNC_NO and I[AOF_UNSYNCED] > 0
            and F[T] - F[AOF_LAST_WRITEBACK] >= WRITEBACK_INTERVAL):
        disk.submit(w, F[T], I[AOF_UNSYNCED], False)
        I[AOF_UNSYNCED] = 0
        F[AOF_LAST_WRITEBACK] = F[T]


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """``appendonly``, ``appendfsync``, the rewrite thresholds,
    ``no-appendfsync-on-rewrite``, the AOF write's CPU cost, and the fsync records."""
    import numpy as np

    from redsim.model import state as S
    from redsim.model.blueprint import US
    from redsim.model.histogram import LOG2_BUCKETS

    server, cpu = b.scenario.server, b.scenario.engine.cpu
    b.I[S.AOF_ON] = 1 if server.appendonly else 0
    b.I[S.AOF_POLICY] = {"always": S.FSYNC_ALWAYS, "everysec": S.FSYNC_EVERYSEC,
                         "no": S.FSYNC_NO}[server.appendfsync]
    b.I[S.AOF_RW_PERC] = server.auto_aof_rewrite_percentage
    b.I[S.AOF_RW_MIN] = server.auto_aof_rewrite_min_size
    b.I[S.NO_FSYNC_RW] = 1 if server.no_appendfsync_on_rewrite else 0
    b.F[S.AOF_POSTPONE_START] = -1.0
    b.F[S.AOF_LAST_FSYNC] = 0.0
    b.F[S.AOF_BG_END] = 0.0
    b.F[S.C_AOF_WRITE] = cpu.aof_write * US * cpu.scale
    b.F[S.C_AOF_WRITE_B] = cpu.aof_write_per_byte * US * cpu.scale
    b.fill("rc", fsync=np.zeros(LOG2_BUCKETS, np.int64))


def start(w, b) -> None:
    """The AOF the server started from holds the preloaded dataset (its base:
    the RDB of the keys present, ``rdb.dataset_rdb_bytes``)."""
    if b.scenario.server.appendonly:
        w.I[AOF_SIZE] = w.I[AOF_BASE] = dataset_rdb_bytes(pack(w))
