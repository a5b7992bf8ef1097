"""The two sides of a validation experiment: a real server and the model.

``Lab`` owns a throw-away ``redis-server`` (``live.RedisServer``) and the
calibration the model runs with (a file from ``redsim calibrate`` on that
server, or none: the model's defaults). Experiments (``experiments.py``) ask
it for the same workload on both sides: ``bench`` / ``cpu_per_request`` on
the server, ``model_run`` / ``model_cpu_per_request`` in the simulator.

The model's side is ``calibrate/replay.py``: redis-benchmark's load in the
model, at the rate measured on the server.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from redsim.calibrate import replay
from redsim.live import load
from redsim.live.probe import Delta, snapshot
from redsim.live.server import RedisServer


@dataclass
class Lab:
    """A real server and the model configuration it is compared with.

    Attributes:
        server: the running throw-away server.
        calibration: calibration file the model uses, or None for the defaults.
        version: the server's "major.minor" (the model's redis-version).
        quick: shorter loads.
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

    reps: int = 3
    """Repetitions of a real measurement (the runner lowers it for the part of
    a bracketing experiment taken before the calibration)."""

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
                        value_size: int = 3) -> tuple[float, float, float, float]:
        """(µs of main-thread CPU per command, commands/s, epoll sleeps per command,
        µs of redis-benchmark's own CPU per command)."""
        args = [command, load.key_pattern()] + (["x" * value_size] if command == "SET" else [])
        res, d = self.bench(args, clients, pipeline, requests)
        calls = d.calls(command)
        sleeps = (d.sleeps or 0) / calls
        return d.cpu_s / calls * 1e6, res.rps, sleeps, res.client_us_per_request

    # -- the model side (redsim/calibrate/replay.py) -----------------------------

    def scenario(self, **fields: Any) -> dict[str, Any]:
        """A scenario dict on this lab's version and calibration, with ``fields`` on top."""
        return replay.scenario(self.version, self.calibration, **fields)

    model_run = staticmethod(replay.run)
    bench_group = staticmethod(replay.bench_group)
    model_cpu_per_request = staticmethod(replay.cpu_per_command)

    def model_matched(self, clients: int, pipeline: int, rate: float, command: str = "SET",
                      value_size: int = 3, extra: dict[str, Any] | None = None,
                      saturate: bool = False, keys: int = 100_000,
                      client_us: float | None = None,
                      keyspace: dict[str, Any] | None = None):
        """Run the model with redis-benchmark's load (``-r keys``) at the real
        ``rate`` (commands/s), its thread at ``client_us`` µs per request batch
        (its measured CPU; None: ``replay.BENCH_CLIENT_US``); ``saturate``:
        independent clients, no think time (the server sets the rate). Returns
        the last Result; ``keyspace``: fields over the group's (``replay.bench_group``)."""
        return replay.run_matched(self.scenario(**(extra or {})), clients, pipeline, rate,
                                  command, value_size, saturate, keys=keys,
                                  client_us=client_us, keyspace=keyspace)


def mean_cv(values: list[float]) -> tuple[float, float]:
    """Mean and coefficient of variation (sample sd / mean; 0 for one value)."""
    m = statistics.fmean(values)
    cv = statistics.stdev(values) / abs(m) if len(values) > 1 and m else 0.0
    return m, cv
