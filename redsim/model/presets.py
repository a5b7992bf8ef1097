"""The named devices and hosts a scenario picks: ``disk.preset`` and ``host.fork``.

No Redis source: published measurements of disks and of fork() on hosts, each
preset with its sources.

Data with their sources, nothing compiled: the scenario schema validates the
names against these tables without loading the kernel (numba), and
``build.py`` turns a preset into the kernel's numbers (``disk.py`` models the
device, ``fork.py`` the fork).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


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
DISK_PRESETS: dict[str, DiskPreset] = {
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


@dataclass(frozen=True)
class ForkPreset:
    """A host's ``fork()`` cost: ms per GB of RSS mapped with 4 KB pages."""

    ms_per_gb: float
    source: str


FORK_PRESETS: dict[str, ForkPreset] = {
    "bare-metal": ForkPreset(14.0, "antirez's bare-metal measurement (gist 372356): 1 GB 16 ms, "
                                   "5 GB 72 ms, 10 GB 128 ms (11-16 ms/GB)"),
    "xeon": ForkPreset(9.0, "redis latency docs: Linux physical machine, Xeon @ 2.27 GHz, "
                            "6.9 GB in 62 ms"),
    "vmware": ForkPreset(12.8, "redis latency docs: Linux beefy VM on VMware, 6.0 GB in 77 ms"),
    "kvm": ForkPreset(23.3, "redis latency docs: Linux VM on 6sync (KVM), 360 MB in 8.2 ms"),
    "ec2-hvm": ForkPreset(10.0, "redis latency docs: EC2 new instance types (Xen HVM), "
                                "1 GB in 10 ms"),
    "ec2-xen": ForkPreset(239.3, "redis latency docs: EC2 old instance types (Xen PV), "
                                 "6.1 GB in 1460 ms"),
    "linode-xen": ForkPreset(424.0, "redis latency docs: Linode (Xen), 0.9 GB in 382 ms"),
    "cloud-vm": ForkPreset(22.0, "reference §5.4: Redis 7.0.15 on a 2-vCPU AMD EPYC cloud VM, "
                                 "1.06 GB RSS forked in 20.3-25.6 ms"),
}
"""fork() cost presets by name (``host.fork``)."""


@dataclass(frozen=True)
class AllocatorBuild:
    """A jemalloc build Redis runs on (``engine.allocator``)."""

    quantum: int
    """The smallest size classes' spacing, bytes (``--with-lg-quantum``)."""
    cache_oblivious: bool
    """Each large extent gets one page more (``sz_large_pad``): its allocation
    starts at a random cache line of its first page (``opt.cache_oblivious``)."""
    gc_events: bool
    """The thread cache's incremental GC visits one bin every ``8192 / bins + 1``
    cached allocations and frees (5.1 and 5.2.1's ``gc_ticker``); False: every
    64 KiB allocated and every 64 KiB freed (5.3's thread events)."""
    source: str


ALLOCATOR_BUILDS: dict[str, AllocatorBuild] = {
    "bundled-5.1": AllocatorBuild(8, True, True, "Redis 6.2's deps/jemalloc 5.1.0 "
                                  "(deps/Makefile: --with-lg-quantum=3; muzzy_decay_ms 10 s)"),
    "bundled-5.2.1": AllocatorBuild(8, True, True, "Redis 7.0's deps/jemalloc 5.2.1 "
                                    "(deps/Makefile: --with-lg-quantum=3)"),
    "bundled-5.3": AllocatorBuild(8, False, False, "Redis 7.2's and later deps/jemalloc 5.3.0 "
                                  "(deps/Makefile: --with-lg-quantum=3 --disable-cache-oblivious, "
                                  "redis/redis#12315)"),
    "debian-5.3": AllocatorBuild(16, True, False, "Debian's and Ubuntu's redis-server, linked to "
                                 "the system's libjemalloc2 5.3.0 (MEMORY MALLOC-STATS: quantum "
                                 "16, config.cache_oblivious true)"),
}
"""jemalloc builds by name (``engine.allocator``): Redis's bundled ones by
release, and a distribution's."""

BUNDLED_ALLOCATOR: dict[str, str] = {"6.2": "bundled-5.1", "7.0": "bundled-5.2.1",
                                     "7.2": "bundled-5.3"}
"""The build Redis compiles in by default (``make`` with ``MALLOC=jemalloc``), by
``redis-version``: what ``engine.allocator`` is when a scenario gives none."""
