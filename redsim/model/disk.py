"""The disk under the AOF and the RDB file: one FIFO queue of jobs.

No Redis source: the host's disk. What Redis puts on it is modelled where Redis
issues it: the AOF's write and fsync in ``aof.py``
(``src/aof.c:flushAppendOnlyFile``, ``src/aof.c:aof_background_fsync``), the
fork child's file and its incremental fsync (``src/rio.c:rioSetAutoSync``) in
``fork.py``.

Everything that reaches the device queues on it in the order it is issued:
the main thread's ``fdatasync`` (``appendfsync always``), the background
fsync job of ``everysec`` (``bio`` thread), the kernel flusher's writeback
with ``appendfsync no``, and the fork child's chunks of the RDB / AOF-rewrite
file (each a sequential write plus the child's incremental fsync). A job
issued at time t starts when the device is free, ``max(t, DISK_FREE)``, and
holds it for its duration (a Lindley recursion — exact for a FIFO
single-server device). A job's duration is its bytes over the write
bandwidth plus, for an fsync, one draw of the device's ``fdatasync`` latency
(the flush and journal commit on the device).

Deviation: the device serves one job at a time. Real NVMe/SSD queues overlap
requests; with one writer (Redis's AOF) and one fork child that overlap is
small next to an fsync's latency.

The ``fdatasync`` latency draws come from a generator of the disk's own
(two integer scalars, as the keyspace's), so a disk's randomness never shifts
the clients' streams.

Presets (``disk.preset``) and their sources are in ``presets.DISK_PRESETS``.
"""

from __future__ import annotations

import math

from redsim.model.jit import leaf
from redsim.model.rng import empirical, lecuyer_seeds, lecuyer_uniform
from redsim.model.state import (
    CHILD_CHUNK_B,
    CHILD_CHUNKS,
    CHILD_DT,
    CHILD_END,
    CHILD_LAST_B,
    CHILD_NEXT,
    DISK_BW,
    DISK_FREE,
    DISK_HIGH,
    DISK_KIND,
    DISK_LOW,
    DISK_MEAN,
    DISK_RNG1,
    DISK_RNG2,
    DISK_SIGMA,
    DIST_EMPIRICAL,
    DIST_EXPONENTIAL,
    DIST_FIXED,
    DIST_LOGNORMAL,
    DIST_UNIFORM,
)

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "DISK_FREE", "f8", "s", "state", "when the disk's queue of jobs empties (FIFO)"),
    ("F", "DISK_BW", "f8", "B/s", "config", "sequential write bandwidth, bytes/s"),
    ("F", "DISK_MEAN", "f8", "s", "config", "the device's fdatasync latency: mean, s"),
    ("F", "DISK_LOW", "f8", "s", "config",
     "fdatasync latency's uniform low bound, s (empirical: the table's first point)"),
    ("F", "DISK_HIGH", "f8", "s", "config",
     "fdatasync latency's uniform high bound, s (empirical: the table's last point)"),
    ("F", "DISK_SIGMA", "f8", "-", "config", "fdatasync latency's lognormal sigma (of the log)"),
    ("I", "DISK_KIND", "i8", "-", "config",
     "fdatasync latency distribution: DIST_FIXED, ..., DIST_EMPIRICAL"),
    ("I", "DISK_RNG1", "i8", "-", "state",
     "the disk's own generator (disk_uniform): its first LCG's state"),
    ("I", "DISK_RNG2", "i8", "-", "state", "the disk's own generator: its second LCG's state"),
)


def disk_seeds(seed: int) -> tuple[int, int]:
    """Initial states of the disk's generator for a run's root seed."""
    return lecuyer_seeds(seed, 0x4449534B)


@leaf
def disk_uniform(w):
    """Next uniform in (0, 1) from the disk's generator."""
    return lecuyer_uniform(w.I, DISK_RNG1, DISK_RNG2)


@leaf
def fsync_latency(w):
    """One draw of the device's fdatasync latency, s."""
    F = w.F
    kind = w.I[DISK_KIND]
    if kind == DIST_FIXED:
        return F[DISK_MEAN]
    if kind == DIST_EXPONENTIAL:
        return -F[DISK_MEAN] * math.log(disk_uniform(w))
    if kind == DIST_UNIFORM:
        return F[DISK_LOW] + (F[DISK_HIGH] - F[DISK_LOW]) * disk_uniform(w)
    if kind == DIST_LOGNORMAL:
        sigma = F[DISK_SIGMA]
        z = math.sqrt(-2.0 * math.log(disk_uniform(w))) * math.cos(2.0 * math.pi
                                                                  * disk_uniform(w))
        return math.exp(math.log(F[DISK_MEAN]) - 0.5 * sigma * sigma + sigma * z)
    if kind == DIST_EMPIRICAL:  # DISK_LOW, DISK_HIGH: the table's first, last point
        return empirical(w, int(F[DISK_LOW]), int(F[DISK_HIGH]), disk_uniform(w))
    return F[DISK_MEAN]


@leaf
def job(w, t, nbytes, fsync):
    """Queue one job issued at time t (``nbytes`` written back, then an
    fdatasync if ``fsync``); returns when it completes, s."""
    F = w.F
    start = max(t, F[DISK_FREE])
    end = start + nbytes / F[DISK_BW]
    if fsync:
        end += fsync_latency(w)
    F[DISK_FREE] = end
    return end


@leaf
def queue_child_chunks(w, t):
    """Queue the fork child's chunks issued up to time t (each its bytes plus
    the child's incremental fsync), so that they are ahead of a job issued
    at t. The child's writes are known in advance (``fork.redis_fork``), so
    they are queued when the next job or ``serverCron`` looks, in issue order."""
    F = w.F
    I = w.I
    while I[CHILD_CHUNKS] > 0 and F[CHILD_NEXT] <= t:
        nbytes = I[CHILD_LAST_B] if I[CHILD_CHUNKS] == 1 else I[CHILD_CHUNK_B]
        end = job(w, F[CHILD_NEXT], nbytes, True)
        I[CHILD_CHUNKS] -= 1
        if I[CHILD_CHUNKS] == 0:
            F[CHILD_END] = end
        else:
            F[CHILD_NEXT] += F[CHILD_DT]


@leaf
def submit(w, t, nbytes, fsync):
    """Queue a job issued at time t behind everything issued before it;
    returns the time it completes, s."""
    queue_child_chunks(w, t)
    return job(w, t, nbytes, fsync)


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """The device: ``disk.preset`` (``presets.DISK_PRESETS``), or the scenario's
    own fsync distribution and bandwidth, and the disk's generator."""
    from redsim.model import state as S
    from redsim.model.presets import DISK_PRESETS

    d = b.scenario.disk
    preset = DISK_PRESETS[d.preset]
    if d.fsync is None:
        kind, mean, lo, hi, sig = (S.DIST_LOGNORMAL, preset.fsync_mean_s, 0.0, math.inf,
                                   preset.fsync_sigma)
    else:
        kind, mean, lo, hi, sig = b.dist(d.fsync)
    b.I[S.DISK_KIND] = kind
    b.F[S.DISK_MEAN], b.F[S.DISK_LOW], b.F[S.DISK_HIGH], b.F[S.DISK_SIGMA] = mean, lo, hi, sig
    b.F[S.DISK_BW] = d.write_bandwidth or preset.write_bandwidth
    b.I[S.DISK_RNG1], b.I[S.DISK_RNG2] = disk_seeds(b.seed)
