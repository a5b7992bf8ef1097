"""Main-thread CPU per request against the dataset's size: the measurement the
cache-miss costs are fitted to (issue #43).

No Redis source: a measurement of ``redis-server``. The calibration's CPU
loads read and write 100,000 keys of 3 bytes (~10 MB), a dataset that stays
in the CPU's caches; a planner's 1 M or 27 M keys do not, and each key access
then waits on memory. This module fills a server with ``keys`` keys named as
``redis-benchmark`` names them (``load.key_pattern``: the prefix and 12
digits), so every GET of the loads hits, and measures GET and SET at
pipeline 1 and 16 over each dataset, from the smallest up (each size adds
keys to the last).

On the 2-vCPU Intel Xeon VM (260 MB of L3 reported, 2 MB of L2 per core;
Debian's 7.0.15, 64-byte values, 50 connections, medians of 3), GET at
pipeline 16 took 0.72, 1.18, 1.56, 1.82 and 2.47 µs of main-thread CPU per
request over 10 K, 100 K, 1 M, 3 M and 10 M keys (3 MB to 1.7 GB of
``used_memory``): 3.4× from the smallest to the largest, and still rising
past the L3's size, where misses alone would level off (the page walks of a
VM's TLB misses grow with it). At pipeline 1 the same GETs took 6.2 to
6.9 µs: the per-request I/O dominates.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from redsim.calibrate import replay
from redsim.calibrate.measure import CpuLoad, Target, cpu_point
from redsim.live import load

SIZES = (10_000, 100_000, 1_000_000, 3_000_000, 10_000_000)
"""Datasets measured by default, keys."""

LOADS = (CpuLoad(50, 16, 600_000), CpuLoad(50, 1, 150_000))
"""Each dataset's loads: saturated and pipelined, where a key access is the
largest share of a request, and one command per request."""

_POPULATE = """
local n0, n1, v, prefix = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4]
local ttl = tonumber(ARGV[5])
for i = n0, n1 - 1 do
  local k = string.format('%s%012d', prefix, i)
  if ttl > 0 then redis.call('SET', k, v, 'EX', ttl) else redis.call('SET', k, v) end
end
return n1 - n0
"""
POPULATE_CHUNK = 500_000
"""Keys written per EVAL: ~0.5 s of the server's time each, so it answers
other clients (and ``SCRIPT KILL``) between chunks."""


@dataclass(frozen=True)
class DatasetPoint:
    """Main-thread CPU per request of one load over one dataset."""

    keys: int
    value_size: int
    command: str
    clients: int
    pipeline: int
    rep: int
    us_per_request: float
    requests_per_s: float
    used_memory_mb: float


def populate(client: Any, start: int, stop: int, value_size: int,
             prefix: str = load.PREFIX, ttl_s: int | None = None) -> None:
    """Write keys ``start`` .. ``stop``-1, named as ``redis-benchmark`` names
    them, with ``value_size``-byte values and a TTL of ``ttl_s`` seconds (None:
    none); in chunks of ``POPULATE_CHUNK``."""
    value = "x" * value_size
    for lo in range(start, stop, POPULATE_CHUNK):
        client.eval(_POPULATE, 0, lo, min(stop, lo + POPULATE_CHUNK), value, prefix,
                    ttl_s or 0)


def measure(t: Target, sizes: tuple[int, ...] = SIZES, value_size: int = 64,
            loads: tuple[CpuLoad, ...] = LOADS, reps: int = 3,
            commands: tuple[str, ...] = ("GET", "SET")) -> list[DatasetPoint]:
    """GET and SET per load, ``reps`` times, over each dataset size in turn
    (ascending; the server must start empty of the benchmark's keys and may
    be written: a server ``redsim`` started)."""
    if not t.can_write:
        raise RuntimeError("the dataset sweep writes keys: run it on a server redsim "
                           "started, or pass --allow-writes")
    points: list[DatasetPoint] = []
    have = 0
    for n in sorted(sizes):
        t.say(f"  {n:,} keys of {value_size} B: writing {n - have:,} keys")
        populate(t.client, have, n, value_size, ttl_s=t.key_ttl_s)
        have = n
        mem = t.client.info("memory")["used_memory"] / 2**20
        for rep in range(reps):
            for ld in loads:
                for cmd in commands:
                    p, bench = cpu_point(t, cmd, ld, value_size=value_size, keyspace=n)
                    points.append(DatasetPoint(n, value_size, cmd, ld.clients, ld.pipeline,
                                               rep, round(p.us_per_request, 3), round(bench.rps),
                                               round(mem, 1)))
    return points


VALUE_SIZES = (3, 256, 4096)
"""Value sizes ``redsim calibrate``'s sweep measures: an embedded string, a raw
one, and one of several lines (bytes)."""

MAX_DATASET = 2 << 30
"""Bytes of ``used_memory`` the sweep may reach by default (``--max-dataset``)."""


def bytes_per_key(value_size: int) -> float:
    """Memory one calibration key of ``value_size``-byte values takes
    (``cpu_caches.key_span``, with the calibration's key names), +10 % for the
    dict's growth: what a dataset of them is sized by."""
    from redsim.model.cpu_caches import key_span

    return 1.1 * key_span(value_size, replay.KEY_SIZE, False)


def sweep_sizes(value_size: int, max_bytes: float, sizes: tuple[int, ...] = SIZES
                ) -> tuple[int, ...]:
    """The sizes of ``sizes`` whose dataset of ``value_size``-byte values stays
    within ``max_bytes`` of memory (``bytes_per_key``), at least the smallest,
    and the most keys that fit when that is twice the largest of them or more."""
    most = int(max_bytes // bytes_per_key(value_size))
    fit = tuple(n for n in sizes if n <= most)
    if not fit:
        return sizes[:1]
    # Large values reach the limit with few keys: end the sweep at it.
    return fit + ((most,) if 2 * fit[-1] <= most < max(sizes) else ())


@dataclass(frozen=True)
class Sweep:
    """What the dataset sweep measures: value sizes, bytes, and the key counts
    it may reach (each cut to the memory it may fill, ``sweep_sizes``)."""

    value_sizes: tuple[int, ...] = VALUE_SIZES
    sizes: tuple[int, ...] = SIZES
    max_bytes: float = MAX_DATASET

    def shapes(self) -> list[tuple[int, tuple[int, ...]]]:
        """(value size, key counts) in the order they are measured."""
        return [(v, sweep_sizes(v, self.max_bytes, self.sizes)) for v in self.value_sizes]


DEFAULT_SWEEP = Sweep()
"""``redsim calibrate``'s sweep without ``--for`` or ``--max-dataset``."""


def for_scenario(scenario: Any, max_bytes: float = MAX_DATASET) -> Sweep:
    """The sweep a scenario needs (``redsim calibrate --for``): its string
    groups' mean value sizes (rounded to the byte, at most three: the
    smallest, the largest and the one nearest their geometric middle), and key
    counts from the default sweep's up to its largest keyspace, which ends it."""
    means = sorted({max(0, round(g.value_size.mean)) for g in scenario.clients})
    if len(means) > 3:
        mid = min(means[1:-1], key=lambda v: abs(v - (max(means[0], 1) * means[-1]) ** 0.5))
        means = [means[0], mid, means[-1]]
    keys = max(g.keyspace.keys for g in scenario.clients)
    sizes = tuple(n for n in SIZES if n < keys) + (keys,)
    return Sweep(tuple(means), sizes, max_bytes)


def sweep(t: Target, spec: Sweep | None = None, reps: int = 3, bar: Any = None
          ) -> list[DatasetPoint]:
    """``measure`` at each value size of ``spec`` over its key counts, the
    calibration's keys deleted before each value size and after the last."""
    points: list[DatasetPoint] = []
    try:
        for v, sizes in (spec or DEFAULT_SWEEP).shapes():
            load.delete_prefix(t.client)
            points += measure(t, sizes, value_size=v, reps=reps)
            if bar is not None:
                bar.update()
    finally:
        load.delete_prefix(t.client)
    return points


def medians(points: list[DatasetPoint]) -> dict[tuple[int, int, str, int], float]:
    """Median µs per request by (keys, value size, command, pipeline)."""
    by: dict[tuple[int, int, str, int], list[float]] = {}
    for p in points:
        by.setdefault((p.keys, p.value_size, p.command, p.pipeline), []).append(
            p.us_per_request)
    return {k: statistics.median(v) for k, v in sorted(by.items())}


def write_csv(points: list[DatasetPoint], path: Path) -> None:
    """The points as CSV, one row each."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, [fl.name for fl in fields(DatasetPoint)])
        w.writeheader()
        for p in points:
            w.writerow(asdict(p))


__all__ = ["DEFAULT_SWEEP", "DatasetPoint", "LOADS", "MAX_DATASET", "SIZES", "Sweep",
           "VALUE_SIZES", "bytes_per_key", "for_scenario", "measure", "medians", "populate",
           "sweep", "sweep_sizes", "write_csv"]
