"""Held-out validation rows: workloads the calibration never fits (issue #43).

A calibration measures SET and GET over 100,000 keys of 3 bytes at pipeline 1
and 16 with 50 connections. These rows differ from it in every dimension a
planner's workload does — the dataset's size (10 K to 3 M keys, past the
CPU's caches), the value size (64 B to 4 KB), the command (counters, hashes,
lists), the pipeline depth and the connections — and compare the main
thread's CPU per command of a real redis-server with the model's, saturated
where the load saturates the server (so redis-benchmark's clumped arrivals,
``experiments.CLUMPED_ARRIVALS``, matter least), at the real rate otherwise,
with redis-benchmark's thread at its measured CPU (``replay.run_matched``).
The throughput rows put redis-benchmark on the model's host too
(``placement: same-host`` on 2 cores), whose own CPU is then modelled.

Each row's dataset is written first (``calibrate.dataset.populate``: keys
named as redis-benchmark names them, so every GET hits) and deleted after.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redsim.calibrate import dataset
from redsim.calibrate.measure import BENCH_COMMANDS
from redsim.live import load
from redsim.validation.experiments import CAP_CPU, CAP_THROUGHPUT, Experiment, Real, client_batch_us
from redsim.validation.lab import Lab


@dataclass(frozen=True)
class Workload:
    """One held-out load: ``command`` over ``keys`` keys of ``value_size`` bytes
    (written first when ``populate``), redis-benchmark ``-c clients -P pipeline
    -n requests``; ``saturate``: the server is the bottleneck (the model runs
    with no think time), else the model runs at the real rate."""

    command: str
    keys: int
    value_size: int
    clients: int
    pipeline: int
    requests: int
    saturate: bool = True
    populate: bool = True
    keyspace: tuple[tuple[str, Any], ...] = ()
    """The model's keyspace fields over ``keys`` strings (one list or hash for
    LPUSH or HSET: on a string key Redis answers WRONGTYPE; ``keys`` is then
    redis-benchmark's ``-r``, the hash's fields)."""

    def args(self) -> list[str]:
        """The redis-benchmark command line (``V``: a value of ``value_size`` bytes)."""
        return ["x" * self.value_size if a == "V" else a for a in BENCH_COMMANDS[self.command]]


def _real(w: Workload, figure: str) -> Callable[[Lab], Real]:
    def real(lab: Lab) -> Real:
        r = lab.client
        load.delete_prefix(r)
        if w.populate:
            dataset.populate(r, 0, w.keys, w.value_size)
        load.settle(r)
        vals: list[float] = []
        rates: list[float] = []
        client: list[float] = []
        try:
            for _ in range(lab.reps):
                res, d = lab.bench(w.args(), w.clients, w.pipeline, w.requests,
                                   keyspace=w.keys)
                calls = d.calls(w.command)
                rates.append(res.rps)
                client.append(res.client_us_per_request)
                vals.append(d.cpu_s / calls * 1e6 if figure == "cpu" else res.rps)
        finally:
            load.delete_prefix(r)
        return Real(vals, {"rates": rates, "client": client})
    return real


def _model(w: Workload, figure: str) -> Callable[[Lab, Real], float]:
    def model(lab: Lab, real: Real) -> float:
        if figure == "throughput":
            g = lab.bench_group(w.clients, w.pipeline, 0.0, w.command, w.value_size, keys=w.keys)
            g["placement"] = "same-host"
            res = lab.model_run(lab.scenario(clients=[g], host={"cores": 2}))
            return float(res.summary["ops_per_sec"])
        rate = statistics.median(real.detail["rates"])
        res = lab.model_matched(w.clients, w.pipeline, rate, w.command, w.value_size,
                                saturate=w.saturate, keys=w.keys,
                                client_us=client_batch_us(real, w.pipeline),
                                keyspace=dict(w.keyspace))
        return lab.model_cpu_per_request(res)
    return model


def _row(name: str, title: str, w: Workload, figure: str = "cpu") -> Experiment:
    if figure == "cpu":
        return Experiment(name, title, "us", 0.20,
                          "as the calibrated CPU rows: 20 %, capped at 25 %", False,
                          _real(w, figure), _model(w, figure), cap=CAP_CPU)
    return Experiment(name, title, "cmd/s", 0.20,
                      "follows from the server's and the client's CPU per command", False,
                      _real(w, figure), _model(w, figure), cap=CAP_THROUGHPUT)


GET_1M = Workload("GET", 1_000_000, 64, 50, 16, 1_000_000)

ROWS: list[tuple[str, str, Workload, str]] = [
    ("held_get_10k", "held out: CPU per GET, 10 K keys of 64 B (a dataset the caches hold), "
     "50 connections, P16", Workload("GET", 10_000, 64, 50, 16, 600_000), "cpu"),
    ("held_get_1m", "held out: CPU per GET, 1 M keys of 64 B, 50 connections, P16", GET_1M,
     "cpu"),
    ("held_get_3m_p4", "held out: CPU per GET, 3 M keys of 64 B, 10 connections, P4",
     Workload("GET", 3_000_000, 64, 10, 4, 400_000, saturate=False), "cpu"),
    ("held_set_1m_256", "held out: CPU per SET of 256 B over 1 M keys, 50 connections, P16",
     Workload("SET", 1_000_000, 256, 50, 16, 1_000_000), "cpu"),
    ("held_get_4k", "held out: CPU per GET of 4 KB values, 100 K keys, 20 connections, P8",
     Workload("GET", 100_000, 4096, 20, 8, 300_000), "cpu"),
    ("held_incr", "held out: CPU per INCR, 100 K counters, 50 connections, P16",
     Workload("INCR", 100_000, 0, 50, 16, 600_000, populate=False), "cpu"),
    ("held_hset", "held out: CPU per HSET of one hash (100 K fields of 64 B), 50 connections, "
     "P16", Workload("HSET", 100_000, 64, 50, 16, 600_000, populate=False,
                     keyspace=(("keys", 1), ("type", "hash"), ("elements", 100_000),
                               ("member-size", len("f") + 12), ("preload", 0.0))), "cpu"),
    ("held_lpush", "held out: CPU per LPUSH of 64 B onto one list, 50 connections, P16",
     Workload("LPUSH", 1, 64, 50, 16, 600_000, populate=False,
              keyspace=(("type", "list"), ("member-size", 64), ("preload", 0.0))), "cpu"),
    ("held_tput_get_1m", "held out: GET throughput, 1 M keys of 64 B, P16, redis-benchmark on "
     "the same 2-vCPU host (same-host client CPU modelled)", GET_1M, "throughput"),
    ("held_tput_get_p1", "held out: GET throughput, 100 K keys of 64 B, 50 connections, P1, "
     "same host", Workload("GET", 100_000, 64, 50, 1, 200_000), "throughput"),
]
"""(name, title, workload, figure) of each held-out row, in the table's order."""

WORKLOADS: dict[str, Workload] = {name: w for name, _, w, _ in ROWS}

HELD_OUT: list[Experiment] = [_row(name, title, w, figure) for name, title, w, figure in ROWS]
"""The held-out rows (``redsim validate-model --only``)."""

__all__ = ["HELD_OUT", "ROWS", "WORKLOADS", "Workload"]
