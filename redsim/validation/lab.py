"""The two sides of a validation experiment: a real server and the model.

``Lab`` owns a throw-away ``redis-server`` (``live.RedisServer``) and the
calibration the model runs with (a file from ``redsim calibrate`` on that
server, or none: the model's defaults). Experiments (``experiments.py``) ask
it for the same workload on both sides: ``bench`` / ``cpu_per_request`` on
the server, ``model_run`` / ``model_cpu_per_request`` in the simulator.

The model's clients stand in for redis-benchmark's: ``clients`` connections of
one request batch (``pipeline`` commands) each, a fixed think time between a
reply and the next request. redis-benchmark's one thread drives all its
connections, so its rate is the client's, not the server's, unless the server
saturates; ``model_matched`` sets the think time so that the model's rate is
the rate measured on the real server (two corrections of Z ← Z + c/X_real −
c/X_model), and the figures compared are per request, at the same rate.
"""

from __future__ import annotations

import copy
import statistics
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from redsim.live import load
from redsim.live.probe import Delta, snapshot
from redsim.live.server import RedisServer

KEY_SIZE = len(load.PREFIX) + 12
"""Bytes of the keys redis-benchmark and ``load.fill`` write (prefix + 12 digits)."""
LOOPBACK_RTT_S = 30e-6
"""Loopback round trip of a small request between two processes on one host, s
(the model's network.rtt on this side; redis-benchmark's own time per request
is folded into the matched think time)."""


@dataclass
class Lab:
    """A real server and the model configuration it is compared with.

    Attributes:
        server: the running throw-away server.
        calibration: calibration file the model uses, or None for the defaults.
        version: the server's "major.minor" (the model's redis-version).
        quick: fewer repetitions and shorter loads.
    """

    server: RedisServer
    calibration: Path | None
    version: str
    quick: bool = False

    @cached_property
    def client(self):
        """One redis-py client for the whole lab (a new one per call would add a
        connection to every figure taken after it)."""
        return self.server.client()

    @property
    def reps(self) -> int:
        return 3

    # -- the real side ----------------------------------------------------------

    def bench(self, command: list[str], clients: int, pipeline: int, requests: int,
              keyspace: int = 100_000) -> tuple[load.BenchResult, Delta]:
        """One redis-benchmark load, with the INFO snapshots around it."""
        r = self.client
        a = snapshot(r, self.server.pid)
        res = load.redis_benchmark(self.server.host, self.server.port, command,
                                   clients=clients, pipeline=pipeline, requests=requests,
                                   keyspace=keyspace)
        return res, Delta(a, snapshot(r, self.server.pid))

    def cpu_per_request(self, command: str, clients: int, pipeline: int, requests: int,
                        value_size: int = 3) -> tuple[float, float, float]:
        """(µs of main-thread CPU per command, commands/s, epoll sleeps per command)."""
        args = [command, load.key_pattern()] + (["x" * value_size] if command == "SET" else [])
        res, d = self.bench(args, clients, pipeline, requests)
        calls = d.calls(command)
        sleeps = (d.sleeps or 0) / calls
        return d.cpu_s / calls * 1e6, res.rps, sleeps

    # -- the model side ---------------------------------------------------------

    def scenario(self, **fields: Any) -> dict[str, Any]:
        """A scenario dict on this lab's version and calibration, with ``fields`` on top."""
        base: dict[str, Any] = {
            "name": "validation", "redis-version": self.version, "duration": 2.0,
            "warmup": 0.5, "sample-interval": 0.25, "server": {"save": ""},
            "network": {"rtt": LOOPBACK_RTT_S},
        }
        if self.calibration is not None:
            base["calibration"] = str(self.calibration)
        return _merge(base, fields)

    def model_run(self, scenario: dict[str, Any], seed: int = 1):
        """Simulate a scenario dict; returns the Result."""
        from redsim.config import load_scenario
        from redsim.simulation import Simulation

        sc = load_scenario(scenario)
        return Simulation(sc, seed=seed, progress=False).run()

    def bench_group(self, clients: int, pipeline: int, think_s: float, command: str = "SET",
                    value_size: int = 3, keys: int = 100_000) -> dict[str, Any]:
        """A client group like redis-benchmark's: ``clients`` connections, one batch each."""
        return {"name": "bench", "kind": "closed", "processes": clients, "threads": 1,
                "pool": {"max-size": 1}, "pipeline": pipeline,
                "think": {"distribution": "fixed", "value": max(think_s, 0.0)},
                "mix": {command: 1}, "key-size": KEY_SIZE, "value-size": value_size,
                "keyspace": {"keys": keys, "distribution": "uniform", "preload": 1.0}}

    def model_matched(self, clients: int, pipeline: int, rate: float, command: str = "SET",
                      value_size: int = 3, extra: dict[str, Any] | None = None,
                      saturate: bool = False):
        """Run the model with redis-benchmark's load at the real ``rate`` (commands/s);
        ``saturate``: think 0 (the server sets the rate). Returns the last Result."""
        think = 0.0 if saturate else max(clients * pipeline / rate - LOOPBACK_RTT_S, 0.0)
        result = None
        for _ in range(1 if saturate else 3):
            sc = self.scenario(clients=[self.bench_group(clients, pipeline, think, command,
                                                         value_size)], **(extra or {}))
            result = self.model_run(sc)
            x = result.summary["ops_per_sec"]
            if saturate or x <= 0:
                break
            think = max(think + clients * pipeline / rate - clients * pipeline / x, 0.0)
        return result

    @staticmethod
    def model_cpu_per_request(result) -> float:
        """µs of main-thread CPU per command in a model run (after warm-up)."""
        s = result.summary
        return s["utilisation"] / s["ops_per_sec"] * 1e6


def _merge(low: dict[str, Any], high: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(low)
    for k, v in high.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def mean_cv(values: list[float]) -> tuple[float, float]:
    """Mean and coefficient of variation (sample sd / mean; 0 for one value)."""
    m = statistics.fmean(values)
    cv = statistics.stdev(values) / abs(m) if len(values) > 1 and m else 0.0
    return m, cv
