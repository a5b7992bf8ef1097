"""The validation experiments, one record each.

A record names the figure, its unit, the tolerance floor and why, whether it is
in the quick (CI) subset, and two functions: ``real(lab)`` measures the figure
on the server ``reps`` times, ``model(lab, real)`` computes it in the
simulator for the same workload (``real`` is what the server did, for
experiments whose model load must match it, e.g. the rate redis-benchmark
reached). The runner (``runner.py``) sets each row's tolerance before it runs
the model: ``max(floor, 3 × the coefficient of variation of the real
repetitions)``, so a noisy figure is judged by its own repeatability and no
tolerance is chosen after seeing the model's answer. Every record also has a
``cap``, fixed here (CPU per request and times ±25 %, throughput ±25 %,
memory ±10 %, ratios ±25 %): a row whose real repetitions need a wider
tolerance than its cap is *inconclusive* (host noise), never a pass.

Adding an experiment is adding a record to ``EXPERIMENTS``.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redsim.calibrate import replay
from redsim.calibrate.replay import KEY_SIZE, LOOPBACK_RTT_S
from redsim.live import load
from redsim.validation.lab import Lab

CAP_CPU = 0.25
"""The widest tolerance of a CPU-per-request or time row (issue #43)."""
CAP_THROUGHPUT = 0.25
"""... of a throughput row."""
CAP_MEMORY = 0.10
"""... of a memory row (bytes, or a ratio of memory figures)."""
CAP_RATIO = 0.25
"""... of a ratio of two throughputs or counts."""


@dataclass(frozen=True)
class Real:
    """What the server did: the figure per repetition, and details for the model."""

    values: list[float]
    detail: dict[str, Any]

    @classmethod
    def combine(cls, parts: list[Real]) -> Real:
        """One Real of several measured at different times: the values in turn;
        a detail that is a list (one entry per repetition) joined in turn, a
        number the mean over all repetitions."""
        values = [v for p in parts for v in p.values]
        detail = {k: [x for p in parts for x in p.detail[k]]
                  if isinstance(parts[0].detail[k], list)
                  else sum(p.detail[k] * len(p.values) for p in parts) / len(values)
                  for k in parts[0].detail}
        return cls(values, detail)


@dataclass(frozen=True)
class Experiment:
    """One model-vs-real comparison.

    Attributes:
        name: short identifier (file names, ``--only``).
        title: what is compared, for the table.
        unit: the figure's unit.
        floor: the smallest relative tolerance, and ``why`` it is that.
        quick: part of the CI subset (< 3 min with the others).
        real: measures the figure on the lab's server.
        model: the same figure from the simulator.
    """

    name: str
    title: str
    unit: str
    floor: float
    why: str
    quick: bool
    real: Callable[[Lab], Real]
    model: Callable[[Lab, Real], float]
    known_gap: str = ""
    """What the model lacks that this row depends on, when that is known: printed
    beside the row if it fails (a failing row stays in the table)."""
    reps: int = 3
    """Repetitions of the real measurement."""
    bracket: bool = False
    """The repetitions bracket the calibration: ``reps // 2`` are taken before
    it, the others after. Main-thread CPU on a VM drifts by up to ~20 % within a minute
    (neighbours), and the model carries the calibration's moment into the
    comparison; back-to-back repetitions (CV 1-3 %) hid that, and a CI run
    failed on it. Spread over the calibration, the repetitions' CV, and so the
    tolerance, covers the drift the comparison is exposed to."""
    calibrated_as: str = ""
    """The calibration's own measurement of this very load (e.g.
    ``cpu.set_c50_p1``), whose repetitions are pooled with this row's for the
    tolerance: the model carries the moment of the calibration into the
    comparison, so the real figure's repeatability is over both. The real
    figure compared is still this row's own median."""
    cap: float = math.nan
    """The widest tolerance the row may have (``CAP_*``), fixed with the
    record: where the real repetitions' own spread needs more, the row is
    inconclusive. Required."""

    def __post_init__(self) -> None:
        if not self.floor <= self.cap:  # also catches a missing cap (nan)
            raise ValueError(f"experiment {self.name}: its cap ({self.cap}) must be set and "
                             f"at least its floor ({self.floor})")


# ---- main-thread CPU per request ------------------------------------------------------


def _cpu_real(clients: int, pipeline: int, requests: int) -> Callable[[Lab], Real]:
    def real(lab: Lab) -> Real:
        vals: list[float] = []
        rates: list[float] = []
        sleeps: list[float] = []
        client: list[float] = []
        # Full-length loads in the quick subset too: a 10K-request lone-client
        # load lasts under a second, and the CPU rows are what drift most.
        for _ in range(lab.reps):
            us, rps, s, c = lab.cpu_per_request("SET", clients, pipeline, requests)
            vals.append(us)
            rates.append(rps)
            sleeps.append(s)
            client.append(c)
        return Real(vals, {"rates": rates, "sleeps": sleeps, "client": client})
    return real


def client_batch_us(real: Real, pipeline: int) -> float | None:
    """redis-benchmark's median CPU per request batch over a row's repetitions,
    µs (None where getrusage gave none)."""
    c = [x for x in real.detail.get("client", []) if math.isfinite(x)]
    return statistics.median(c) * pipeline if c else None


def _cpu_model(clients: int, pipeline: int, saturate: bool = False
               ) -> Callable[[Lab, Real], float]:
    def model(lab: Lab, real: Real) -> float:
        # At the median rate, as the calibration fits its loads (and as the
        # row's figure is the median CPU per SET).
        rate = statistics.median(real.detail["rates"])
        res = lab.model_matched(clients, pipeline, rate, saturate=saturate,
                                client_us=client_batch_us(real, pipeline))
        return lab.model_cpu_per_request(res)
    return model


def _throughput_real(lab: Lab) -> Real:
    vals = []
    for _ in range(lab.reps):
        res, _ = lab.bench(["SET", load.key_pattern(), "xxx"], 50, 16,
                           200_000 if lab.quick else 600_000)
        vals.append(res.rps)
    return Real(vals, {})


def _throughput_model(lab: Lab, real: Real) -> float:
    return float(lab.model_matched(50, 16, 1.0, saturate=True).summary["ops_per_sec"])


# ---- memory ------------------------------------------------------------------------------

CLIENT_VALUE_SIZES = (64, 4096, 16384)
"""Value sizes of the connections' SETs (one size per connection, in turn): a
16 KB value makes a request just over PROTO_IOBUF_LEN, the read-path case."""


def _clients_real(n: int) -> Callable[[Lab], Real]:
    def real(lab: Lab) -> Real:
        vals = []
        reqs = [load.resp("SET", f"{load.PREFIX}c{i}", "x" * size)
                for i, size in enumerate(CLIENT_VALUE_SIZES)]
        for _ in range(lab.reps):
            r = lab.client
            base = r.info("memory")["mem_clients_normal"]
            with load.Connections(lab.server.host, lab.server.port, n) as conns:
                conns.request_all(reqs)
                time.sleep(1.5)  # clientsCron visits every client once a second
                vals.append((r.info("memory")["mem_clients_normal"] - base) / n)
            time.sleep(0.3)  # the server frees the closed clients
        load.delete_prefix(lab.client)
        return Real(vals, {})
    return real


def _clients_model(n: int) -> Callable[[Lab, Real], float]:
    def model(lab: Lab, real: Real) -> float:
        per = n // len(CLIENT_VALUE_SIZES)
        groups = []
        for i, size in enumerate(CLIENT_VALUE_SIZES):
            count = per + (1 if i < n - per * len(CLIENT_VALUE_SIZES) else 0)
            # A closed-loop source sends its first request after one think
            # time: 10 s, then the reading is taken 1.5 s later, as on the
            # real side, before any second request.
            g = lab.bench_group(count, 1, 10.0, "SET", size, keys=3, fixed_think=True)
            g["name"] = f"v{size}"
            groups.append(g)
        sc = lab.scenario(duration=11.5, warmup=0.0, **{"sample-interval": 0.25},
                          clients=groups, server={"maxclients": max(10000, n + 32)})
        res = lab.model_run(sc)
        ts = res.timeseries
        return float(ts["mem_clients_normal"].iloc[-1]) / n
    return model


KEY_COUNT = 100_000


def _keys_real(size: int) -> Callable[[Lab], Real]:
    def real(lab: Lab) -> Real:
        vals = []
        r = lab.client
        for _ in range(lab.reps):
            load.delete_prefix(r)
            load.settle(r)
            before = r.info("memory")["used_memory"]
            load.fill(r, KEY_COUNT, size)
            vals.append((r.info("memory")["used_memory"] - before) / KEY_COUNT)
        load.delete_prefix(r)
        return Real(vals, {})
    return real


def _keys_model(size: int) -> Callable[[Lab, Real], float]:
    def model(lab: Lab, real: Real) -> float:
        def used(keys: int) -> float:
            g = lab.bench_group(1, 1, 100.0, "GET", size, keys=max(keys, 1), fixed_think=True)
            g["keyspace"]["preload"] = 1.0 if keys else 0.0
            res = lab.model_run(lab.scenario(duration=0.5, warmup=0.0,
                                             **{"sample-interval": 0.25}, clients=[g]))
            return float(res.timeseries["used_memory"].iloc[0])
        return (used(KEY_COUNT) - used(0)) / KEY_COUNT
    return model


CLUMPED_ARRIVALS = (
    "redis-benchmark's one thread sends its requests in clumps (a batch of replies "
    "read, a batch of requests written); the model runs that thread "
    "(replay.bench_thread) at the cost per batch that matches the row's rate, but "
    "its sleeps per SET follow that cost steeply (0.02-0.11 at 6-10 us a batch, "
    "where the real server slept 0.05-0.07), and each sleep costs a wake-up")
"""Why a 50-connection P = 1 or P = 4 row can miss (Intel 2-vCPU VM, 2026-11-28;
until issue #43 the stand-in was 50 independent clients, which slept 0.18
times per SET against the real 0.05 and made the full calibration refuse)."""

CPU_REPS = 5
"""Repetitions of a CPU row: two before the calibration, three after. With
three (one before, two after) a CI run failed P1 at +32.7 % against ±31 %
(2026-11-27): the row's mean of three moved with one repetition on a drifting
VM. Five, and the median (the calibration's own estimator), move less; the
tolerance rule is unchanged."""

EXPERIMENTS: list[Experiment] = [
    Experiment("cpu_p1", "main-thread CPU per SET, 50 connections, pipeline 1", "us", 0.20,
               "the issue's bound for the calibrated defaults", True,
               _cpu_real(50, 1, 100_000), _cpu_model(50, 1), bracket=True, reps=CPU_REPS,
               calibrated_as="cpu.set_c50_p1",
               known_gap=CLUMPED_ARRIVALS, cap=CAP_CPU),
    Experiment("cpu_p16", "main-thread CPU per SET, 50 connections, pipeline 16", "us", 0.20,
               "the issue's bound for the calibrated defaults", True,
               _cpu_real(50, 16, 600_000), _cpu_model(50, 16, saturate=True), bracket=True,
               reps=CPU_REPS,
               calibrated_as="cpu.set_c50_p16", cap=CAP_CPU),
    Experiment("cpu_p4", "main-thread CPU per SET, 50 connections, pipeline 4 (not fitted)",
               "us", 0.20, "as P1/P16: a point between the fitted ones", True,
               _cpu_real(50, 4, 300_000), _cpu_model(50, 4), bracket=True, reps=CPU_REPS,
               known_gap=CLUMPED_ARRIVALS, cap=CAP_CPU),
    Experiment("cpu_c1", "main-thread CPU per SET, 1 connection, pipeline 1 (sleeping poll)",
               "us", 0.20, "as P1/P16", True,
               _cpu_real(1, 1, 20_000), _cpu_model(1, 1), bracket=True, reps=CPU_REPS,
               calibrated_as="cpu.set_c1_p1", cap=CAP_CPU),
    Experiment("throughput_p16", "saturation throughput, SET, 50 connections, pipeline 16",
               "SET/s", 0.20, "follows from CPU per request at saturation", False,
               _throughput_real, _throughput_model, cap=CAP_THROUGHPUT),
    *[Experiment(f"clients_{n}", f"mem_clients_normal per connection, {n} connections, "
                 "one SET each of 64 B / 4 KB / 16 KB", "bytes", 0.10,
                 "allocations are exact (jemalloc classes); 10 % for what the model leaves "
                 "out (argv, epoll)", True, _clients_real(n), _clients_model(n),
                 cap=CAP_MEMORY)
      for n in (30, 300, 900)],
    *[Experiment(f"key_bytes_{size}", f"used_memory per key, {KEY_COUNT:,} keys of "
                 f"{KEY_SIZE} B, {size}-B values", "bytes", 0.05,
                 "allocations are exact; 5 % for the dict's growth while filling", True,
                 _keys_real(size), _keys_model(size), cap=CAP_MEMORY)
      for size in (3, 100, 1000)],
]
"""Every experiment, in the order the table lists them."""


# ---- eviction -------------------------------------------------------------------------

EVICT_BASE = 300_000
EVICT_VALUE = 100


def _sample_used_memory(client, stop, samples: list[int]) -> None:
    """Append used_memory every 20 ms until ``stop`` is set (its own connection)."""
    while not stop.is_set():
        samples.append(int(client.info("memory")["used_memory"]))
        time.sleep(0.02)


def _eviction_real(lab: Lab) -> Real:
    """SETs of new keys at maxmemory (allkeys-lru): evictions per SET, and
    used_memory / maxmemory sampled every 20 ms during the load."""
    import threading

    r = lab.client
    per_set, ratio, rates = [], [], []
    for _ in range(lab.reps):
        load.delete_prefix(r)
        load.settle(r)
        r.config_set("maxmemory", 0)
        load.fill(r, EVICT_BASE, EVICT_VALUE)
        r.config_set("maxmemory-policy", "allkeys-lru")
        limit = int(r.info("memory")["used_memory"])
        r.config_set("maxmemory", limit)
        samples: list[int] = []
        stop = threading.Event()
        th = threading.Thread(target=_sample_used_memory,
                              args=(lab.server.client(), stop, samples))
        before = int(r.info("stats")["evicted_keys"])
        th.start()
        try:
            res, d = lab.bench(["SET", load.key_pattern(), "x" * EVICT_VALUE], 50, 1,
                               100_000, keyspace=100_000_000)
        finally:
            stop.set()
            th.join()
        per_set.append((int(r.info("stats")["evicted_keys"]) - before) / d.calls("SET"))
        ratio.append(sum(samples) / len(samples) / limit)
        rates.append(res.rps)
        r.config_set("maxmemory", 0)
    load.delete_prefix(r)
    return Real(per_set, {"ratio": ratio, "rate": sum(rates) / len(rates)})


def _eviction_scenario(lab: Lab, rate: float, maxmemory: int, think: float) -> dict:
    base = lab.bench_group(1, 1, 1000.0, "GET", EVICT_VALUE, keys=EVICT_BASE, fixed_think=True)
    base["name"] = "dataset"  # holds the 300K keys; one GET at t = 1000 s (never)
    writer = lab.bench_group(50, 1, think, "SET", EVICT_VALUE, keys=EVICT_BASE)
    writer["name"] = "writer"
    writer["keyspace"] = {"keys": 1, "preload": 0.0, "write-once": 1.0,
                          "history": 0.0}  # every SET names a new key
    return lab.scenario(duration=1.5, warmup=0.5, **{"sample-interval": 0.02},
                        server={"maxmemory": maxmemory, "maxmemory-policy": "allkeys-lru"},
                        clients=[base, writer])


def _eviction_model(figure: str) -> Callable[[Lab, Real], float]:
    def model(lab: Lab, real: Real) -> float:
        rate = real.detail["rate"]
        # maxmemory at the model's own used memory with the dataset loaded, as
        # the real side sets it at the server's.
        probe = lab.model_run(_eviction_scenario(lab, rate, 0, 1000.0))
        limit = int(probe.timeseries["used_memory"].iloc[0])
        think = max(50 / rate - LOOPBACK_RTT_S, 0.0)
        res = lab.model_run(_eviction_scenario(lab, rate, limit, think))
        ts = res.timeseries[res.timeseries.index > 0.5]
        if figure == "per_set":
            cmds = ts["total_commands_processed"].iloc[-1] - ts["total_commands_processed"].iloc[0]
            return float(ts["evicted_keys"].iloc[-1] - ts["evicted_keys"].iloc[0]) / cmds
        return float((ts["used_memory"] / limit).mean())
    return model


def _ratio_real(lab: Lab) -> Real:
    per_set = _eviction_real(lab)
    return Real(per_set.detail["ratio"], {"rate": per_set.detail["rate"]})


# ---- the AOF ---------------------------------------------------------------------------


def _aof_real(clients: int, requests: int) -> Callable[[Lab], Real]:
    def real(lab: Lab) -> Real:
        """redis-benchmark SET throughput with appendfsync always over everysec."""
        r = lab.client
        ratios: list[float] = []
        rates: list[float] = []
        client: list[float] = []
        r.config_set("appendonly", "yes")
        try:
            while int(r.info("persistence")["aof_rewrite_in_progress"]):
                time.sleep(0.05)  # turning the AOF on writes its base file first
            for _ in range(lab.reps):
                r.config_set("appendfsync", "everysec")
                every, _ = lab.bench(["SET", load.key_pattern(), "xxx"], clients, 1,
                                     requests)
                r.config_set("appendfsync", "always")
                always, _ = lab.bench(["SET", load.key_pattern(), "xxx"], clients, 1,
                                      requests // 5)
                ratios.append(always.rps / every.rps)
                rates.append(every.rps)
                client.append(every.client_us_per_request)
        finally:
            r.config_set("appendfsync", "everysec")
            r.config_set("appendonly", "no")
            load.delete_prefix(r)
        return Real(ratios, {"rate": sum(rates) / len(rates), "client": client})
    return real


def _aof_model(clients: int) -> Callable[[Lab, Real], float]:
    def model(lab: Lab, real: Real) -> float:
        rate = real.detail["rate"]
        every = lab.model_matched(clients, 1, rate, extra={
            "server": {"appendonly": "yes", "appendfsync": "everysec"}},
            client_us=client_batch_us(real, 1))
        g = every.scenario.clients[0]  # redis-benchmark's thread, as matched
        sc = lab.scenario(server={"appendonly": "yes", "appendfsync": "always"},
                          network={"rtt": replay.BENCH_RTT_S},
                          clients=[replay.bench_thread(clients, 1, float(g.client_cpu),
                                                       float(g.think.mean))])
        always = lab.model_run(sc)
        return float(always.summary["ops_per_sec"] / every.summary["ops_per_sec"])
    return model


# ---- fork ------------------------------------------------------------------------------

FORK_KEYS = 700_000
FORK_VALUE = 1000


def _fork_real(lab: Lab) -> Real:
    """fork() time of a BGSAVE with ~800 MB of data (the calibration used 100 and 400 MB)."""
    from redsim.calibrate.measure import Target, _bgsave

    r = lab.client
    t = Target(r, lab.server.host, lab.server.port, lab.server.pid, True, None, lambda m: None)
    load.delete_prefix(r)
    load.fill(r, FORK_KEYS, FORK_VALUE)
    forks = []
    try:
        for _ in range(lab.reps):
            f, _, _ = _bgsave(t)
            forks.append(f * 1e3)
    finally:
        load.delete_prefix(r)
    return Real(forks, {})


def _fork_model(lab: Lab, real: Real) -> float:
    g = lab.bench_group(1, 1, 1000.0, "GET", FORK_VALUE, keys=FORK_KEYS, fixed_think=True)
    res = lab.model_run(lab.scenario(duration=0.5, warmup=0.0, clients=[g],
                                     events=[{"at": 0.1, "do": "bgsave"}]))
    return float(res.forks["fork_s"].iloc[0]) * 1e3


EXPERIMENTS += [
    Experiment("evictions_per_set", "evicted keys per SET of a new 100-B key at maxmemory "
               "(allkeys-lru, 300K keys, 50 connections)", "keys/SET", 0.10,
               "the keys' sizes are exact; 10 % for eviction's overshoot past the limit",
               False, _eviction_real, _eviction_model("per_set"), cap=CAP_RATIO),
    Experiment("used_memory_band", "used_memory / maxmemory during that steady eviction",
               "ratio", 0.01, "eviction holds used_memory at the limit; 1 % is ~0.7 MB here",
               False, _ratio_real, _eviction_model("ratio"), cap=CAP_MEMORY),
    Experiment("aof_always_over_everysec", "SET throughput, appendfsync always / everysec "
               "(50 connections, pipeline 1)", "ratio", 0.25,
               "the fsync distribution is the calibration's samples; 25 % for the disk's "
               "drift between the calibration and this load", False,
               _aof_real(50, 100_000), _aof_model(50),
               known_gap="redis-benchmark's one client thread sets the everysec rate by "
               "its own CPU per reply; the model runs that thread (replay.bench_thread) at "
               "the cost that matches the everysec rate, and the always load with the same "
               "thread: a gap here is the fsync distribution's or the write path's",
               cap=CAP_RATIO),
    Experiment("aof_always_over_everysec_c1", "SET throughput, appendfsync always / everysec "
               "(1 connection, pipeline 1)", "ratio", 0.25,
               "as above; one connection, so a think time is what the client does",
               False, _aof_real(1, 20_000), _aof_model(1), cap=CAP_RATIO),
    Experiment("fork_ms", f"fork() of a BGSAVE with {FORK_KEYS:,} keys of {FORK_VALUE} B "
               "(~800 MB; calibrated at 100 and 400 MB)", "ms", 0.25,
               "fork time varies by ~20 % between BGSAVEs of one dataset (calibration runs)",
               False, _fork_real, _fork_model, cap=CAP_CPU),
]
