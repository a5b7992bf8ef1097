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

Presets (``disk.preset``) and their sources are in ``PRESETS``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from redsim.model.jit import leaf
from redsim.model.rng import empirical
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

_M1, _A1 = 2147483563, 40014  # L'Ecuyer's generator, as rng.server_uniform
_M2, _A2 = 2147483399, 40692


@dataclass(frozen=True)
class DiskPreset:
    """A device: fdatasync latency (lognormal: median, sigma of the log) and bandwidth.

    The latency of one ``fdatasync`` after a small append is lognormal: the
    published figures are medians or averages of a run of fsyncs and a
    spread between drives and runs, which a median and a p10-p90 width
    describe (sigma = ln(p90 / p10) / 2.563).

    Attributes:
        fsync_median_s: median fdatasync latency of a small append, s.
        fsync_sigma: lognormal shape (standard deviation of the log).
        write_bandwidth: sequential write bandwidth, bytes/s.
        source: where the figures come from.
    """

    fsync_median_s: float
    fsync_sigma: float
    write_bandwidth: float
    source: str

    @property
    def fsync_mean_s(self) -> float:
        """Mean fdatasync latency, s (lognormal: median x exp(sigma^2 / 2))."""
        return self.fsync_median_s * math.exp(0.5 * self.fsync_sigma ** 2)


MB = 1000 * 1000
MIB = 1024 * 1024
PRESETS: dict[str, DiskPreset] = {
    "nvme": DiskPreset(
        0.1e-3, 0.9, 2000 * MB,
        "datacenter NVMe with power-loss protection (the drive acknowledges a "
        "flush from its protected cache). Measured fsync averages span 25 µs "
        "(Samsung PM983 / Kingston DC1500M RAID1) to 0.49 ms (Intel P3520) in "
        "centminmod's sysbench fsync runs (github.com/centminmod/centminmod-sysbench, "
        "scripts/fsync.py.md); Percona measured ~7,300 fsync/s (0.14 ms) on an "
        "Intel P3700 (percona.com/blog/2019/09/19/update-on-fsync-performance). "
        "Median 0.1 ms is an estimate across these; sigma 0.9 covers the 25 µs-"
        "0.5 ms spread. ~2 GB/s sequential writes (PCIe 3 x4 datacenter drives)"),
    "nvme-consumer": DiskPreset(
        1.5e-3, 0.7, 2000 * MB,
        "consumer NVMe without power-loss protection: every flush goes to NAND. "
        "Samsung 990 Pro fdatasync 1.64 ms in pg_test_fsync "
        "(tanelpoder.com/posts/using-pg-test-fsync-for-testing-low-latency-writes); "
        "Samsung 960 Pro ~3.5 ms (Percona, 'Why Consumer SSD Reviews are Useless "
        "for Database Performance Use Case', 2018); sigma 0.7 spans ~0.6-3.7 ms"),
    "ssd": DiskPreset(
        1.5e-3, 0.47, 500 * MB,
        "SATA SSD without power-loss protection: fsync averages 2.26 ms "
        "(Samsung 850 Pro) and 1.53 ms (Micron 1100) in centminmod's sysbench "
        "fsync runs; sigma 0.47 spans ~0.8-2.7 ms; SATA III caps sequential "
        "writes near 530 MB/s (Samsung 870 EVO, Tom's Hardware review)"),
    "cloud-disk": DiskPreset(
        0.8e-3, 0.5, 125 * MIB,
        "network block storage (AWS EBS gp3, GCP pd-ssd): fio fdatasync p50 "
        "0.78 ms, p90 2.18 ms (IBM Cloud block storage, etcd's fio test); gp3 "
        "fio fdatasync average 0.70 ms, gp2 1.42 ms with p99 2.67 ms; AWS "
        "documents 'single-digit millisecond' latency and etcd asks for p99 "
        "< 10 ms. gp3's baseline throughput is 125 MiB/s"),
    "hdd": DiskPreset(
        12.0e-3, 0.44, 180 * MB,
        "7200 rpm disk: one revolution is 8.33 ms, the average rotational wait "
        "4.16 ms and a write seek 8.2 ms (WD Ultrastar HC310 datasheet); an "
        "fdatasync of a growing file also commits the ext4 journal (1-3 "
        "revolutions), and Greg Smith (PostgreSQL 9.0 High Performance) gives "
        "<= 120 commits/s for 7200 rpm. Median 12 ms is an estimate from these; "
        "sigma 0.44 spans ~7-21 ms; ~180 MB/s sequential (outer tracks)"),
}
"""Disk presets by name (``disk.preset``)."""


def disk_seeds(seed: int) -> tuple[int, int]:
    """Initial states of the disk's generator for a run's root seed."""
    a, b = np.random.SeedSequence(seed, spawn_key=(0x4449534B,)).generate_state(2)
    return 1 + int(a) % (_M1 - 1), 1 + int(b) % (_M2 - 1)


@leaf
def disk_uniform(w):
    """Next uniform in (0, 1) from the disk's generator."""
    I = w.I
    x1 = (_A1 * I[DISK_RNG1]) % _M1
    x2 = (_A2 * I[DISK_RNG2]) % _M2
    I[DISK_RNG1] = x1
    I[DISK_RNG2] = x2
    z = (x1 - x2) % (_M1 - 1)
    if z == 0:
        z = _M1 - 1
    return z / _M1


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
