"""The naive per-request SimPy model the benchmark compares the real engine against.

One SimPy process per client connection runs a closed loop: think for an
exponential time (mean ``think_mean`` s), queue for a ``simpy.Resource`` of
capacity 1 that stands for the Redis main thread, hold it for one service time
(``service`` s, fixed or exponential), release, record the request latency
(queueing + service, s). This is the "obvious" way to model Redis in SimPy; its
cost grows with the number of requests and connections (several SimPy events and
a generator resumption per request), which is what the benchmark measures.

With ``service_dist="exponential"`` the model is exactly the closed network that
``redsim.analysis.theory.mva`` solves (one FCFS exponential station plus a delay
station), which is how ``tests/test_naive_model.py`` validates it.

Run directly for the reference figures: 10,000 sources, think 0.4 s, service
32 µs, 5 simulated seconds.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any, Literal

import numpy as np
import simpy

ServiceDist = Literal["fixed", "exponential"]

# Random draws are taken from numpy in blocks: one numpy call per draw costs about
# as much as a SimPy event, and the benchmark should time the modelling approach,
# not Python-to-numpy call overhead.
_BLOCK = 4096


class _ExpStream:
    """Deterministic stream of exponential variates with a fixed mean, drawn in blocks."""

    def __init__(self, rng: np.random.Generator, mean: float) -> None:
        self._rng = rng
        self._mean = mean
        self._buf: list[float] = []
        self._i = 0

    def next(self) -> float:
        """Return the next variate, seconds."""
        if self._i >= len(self._buf):
            self._buf = self._rng.exponential(self._mean, _BLOCK).tolist()
            self._i = 0
        v = self._buf[self._i]
        self._i += 1
        return v


class _Stats:
    """Running totals, updated by the source processes."""

    __slots__ = ("busy", "busy_since", "count", "latency_sum")

    def __init__(self) -> None:
        self.count = 0  # requests completed after the warm-up
        self.latency_sum = 0.0  # s, over those requests
        self.busy = 0.0  # s of main-thread busy time inside the measurement window
        self.busy_since: float | None = None  # start of the service in progress, s


def run_naive(
    n_sources: int,
    think_mean: float,
    service: float,
    duration: float,
    seed: int = 1,
    service_dist: ServiceDist = "fixed",
    warmup: float = 0.0,
) -> dict[str, Any]:
    """Simulate n closed-loop clients sharing one Redis main thread, one SimPy process each.

    Args:
        n_sources: number of client connections (SimPy processes), >= 1.
        think_mean: mean exponential think time between a reply and the next request, s (> 0).
        service: main-thread service time per request, s (> 0); the mean when
            ``service_dist == "exponential"``.
        duration: simulated time to run, s (> warmup).
        seed: seed for ``numpy.random.default_rng``; the run is deterministic given it.
        service_dist: "fixed" (every request takes exactly ``service``) or
            "exponential" (mean ``service``; the product-form case MVA solves exactly).
        warmup: initial simulated time excluded from latency and utilisation, s.
            Requests are counted by completion time. 0 measures from the start.

    Returns:
        dict with
        - requests: requests completed in (warmup, duration];
        - mean_latency: their mean latency (queueing + service), s (NaN if none);
        - utilisation: main-thread busy fraction over (warmup, duration];
        - wall_s: wall-clock time of the simulation run, s (not deterministic);
        - sim_s: simulated time, s (= duration);
        - rtf: real-time factor sim_s / wall_s (simulated seconds per wall second);
        - req_per_wall_s: completed requests per wall-clock second (all requests,
          including the warm-up ones, since the simulator did that work too).
    """
    if n_sources < 1:
        raise ValueError(f"n_sources must be >= 1, got {n_sources}")
    if think_mean <= 0.0 or service <= 0.0:
        raise ValueError(f"think_mean and service must be > 0 s, got {think_mean}, {service}")
    if not 0.0 <= warmup < duration:
        raise ValueError(f"need 0 <= warmup < duration, got warmup={warmup}, duration={duration}")
    if service_dist not in ("fixed", "exponential"):
        raise ValueError(f"service_dist must be 'fixed' or 'exponential', got {service_dist!r}")

    rng = np.random.default_rng(seed)
    think = _ExpStream(rng, think_mean)
    # A separate child generator for service keeps the think stream identical whether
    # service is fixed or exponential (same seed -> same arrivals pattern).
    svc_stream = _ExpStream(np.random.default_rng(rng.integers(2**63)), service)
    next_service = svc_stream.next if service_dist == "exponential" else (lambda: service)

    env = simpy.Environment()
    main_thread = simpy.Resource(env, capacity=1)
    stats = _Stats()
    total = [0]  # all completions, warm-up included (for req_per_wall_s)

    def source() -> Generator[simpy.Event, Any, None]:
        while True:
            yield env.timeout(think.next())
            start = env.now
            with main_thread.request() as req:
                yield req
                stats.busy_since = env.now
                yield env.timeout(next_service())
                now = env.now
                # Count only the part of this service inside the measurement window.
                stats.busy += max(0.0, now - max(stats.busy_since, warmup))
                stats.busy_since = None
            total[0] += 1
            if now > warmup:
                stats.count += 1
                stats.latency_sum += now - start

    for _ in range(n_sources):
        env.process(source())

    t0 = time.perf_counter()
    env.run(until=duration)
    wall = time.perf_counter() - t0

    if stats.busy_since is not None:  # a service still in progress at the end
        stats.busy += duration - max(stats.busy_since, warmup)
    window = duration - warmup
    return {
        "requests": stats.count,
        "mean_latency": stats.latency_sum / stats.count if stats.count else float("nan"),
        "utilisation": stats.busy / window,
        "wall_s": wall,
        "sim_s": float(duration),
        "rtf": duration / wall if wall > 0 else float("inf"),
        "req_per_wall_s": total[0] / wall if wall > 0 else float("inf"),
    }


if __name__ == "__main__":
    print(run_naive(n_sources=10_000, think_mean=0.4, service=32e-6, duration=5.0))
