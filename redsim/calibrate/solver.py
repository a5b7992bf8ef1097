"""The arithmetic of a calibration: measured figures in, model parameters out.

Pure functions with no server in sight, so each can be checked on synthetic
snapshots whose answer is known.

Main-thread CPU per request. With a load of ``c`` connections each sending
pipelines of ``P`` commands, the main thread spends per request (reference
§6.2, extended with the wake-ups of a thread that sleeps in ``epoll_wait``)::

    y = a / P + b + W · s

- ``a``: one ``read()`` + one reply ``write()`` (+ parsing the read), µs —
  what a pipeline shares;
- ``b``: one command: lookup, ``processCommand``, the procedure, the reply, µs;
- ``W``: one iteration whose ``epoll_wait`` slept (the block, the wake-up, the
  caches gone cold), µs;
- ``s``: such sleeps per request, measured from the main thread's voluntary
  context switches (0 for a saturated server, 1 for a lone client at P = 1).

Measured at three or more (P, s) points, (a, b, W) follow by least squares.
Without switch counts (a remote server) only (a, b) are fitted, from points
where the server is saturated enough that ``s`` ≈ 0 is stated as an assumption.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

READ_SHARE = 0.4
"""Share of the per-request I/O cost given to ``read`` (the rest to ``write``).

CPU time alone cannot tell the read from the reply write (both happen once per
request batch); on loopback a reply ``write()`` also runs the receiver's TCP
input path, so it is the larger. The split matters only for loads whose reads
and writes are not one-to-one (big replies, partial reads)."""


@dataclass(frozen=True)
class CpuPoint:
    """One measured load: main-thread CPU per request at (clients, pipeline).

    Attributes:
        clients: connections of the load.
        pipeline: commands per request batch (redis-benchmark ``-P``).
        us_per_request: main-thread CPU per command, µs.
        sleeps_per_request: ``epoll_wait`` sleeps per command (None: unknown).
        client_us_per_request: the load generator's own CPU per command, µs
            (redis-benchmark's, from getrusage; None: unknown).
    """

    clients: int
    pipeline: int
    us_per_request: float
    sleeps_per_request: float | None = None
    client_us_per_request: float | None = None

    @property
    def client_us_per_batch(self) -> float | None:
        """The load generator's CPU per request batch (``pipeline`` commands), µs."""
        c = self.client_us_per_request
        return None if c is None else c * self.pipeline


@dataclass(frozen=True)
class RequestCosts:
    """The fitted per-request model ``y = a/P + b + W·s`` (µs).

    Attributes:
        io_us: a, the read + write of one request batch.
        command_us: b, one command.
        wake_us: W, one sleeping ``epoll_wait`` (NaN when not fitted).
        max_rel_residual: the largest |model − measured| / measured over the points.
    """

    io_us: float
    command_us: float
    wake_us: float
    max_rel_residual: float

    def predict(self, pipeline: int, sleeps_per_request: float = 0.0) -> float:
        wake = 0.0 if math.isnan(self.wake_us) else self.wake_us * sleeps_per_request
        return self.io_us / pipeline + self.command_us + wake


def fit_request_costs(points: Sequence[CpuPoint]) -> RequestCosts:
    """Least-squares fit of (a, b, W) to the points; (a, b) only when any point
    lacks a sleep count. Needs two pipeline depths (and, for W, two sleep rates).

    Raises:
        ValueError: when the points cannot determine the parameters.
    """
    if len({p.pipeline for p in points}) < 2:
        raise ValueError("the fit needs loads at two pipeline depths at least")
    with_wake = all(p.sleeps_per_request is not None for p in points) and \
        np.ptp([p.sleeps_per_request for p in points]) > 0.05
    rows = [[1.0 / p.pipeline, 1.0] + ([p.sleeps_per_request] if with_wake else [])
            for p in points]
    A = np.array(rows, dtype=float)
    y = np.array([p.us_per_request for p in points], dtype=float)
    # Relative errors matter (a P=16 point is 10x smaller than a P=1 one).
    wts = 1.0 / y
    coef, *_ = np.linalg.lstsq(A * wts[:, None], y * wts, rcond=None)
    if np.linalg.matrix_rank(A) < A.shape[1]:
        raise ValueError("the loads do not separate the per-request parts")
    pred = A @ coef
    resid = float(np.max(np.abs(pred - y) / y))
    return RequestCosts(io_us=float(coef[0]), command_us=float(coef[1]),
                        wake_us=float(coef[2]) if with_wake else math.nan,
                        max_rel_residual=resid)


def relative_residual(fit: RequestCosts, point: CpuPoint) -> float:
    """(measured − fitted) / fitted at ``point``: how far a load the fit did not
    see lies from it (an unknown sleep count counts as none)."""
    pred = fit.predict(point.pipeline, point.sleeps_per_request or 0.0)
    return point.us_per_request / pred - 1 if pred else math.inf


def command_cost(us_per_request: float, pipeline: int, io_us: float,
                 sleeps_per_request: float = 0.0, wake_us: float = 0.0) -> float:
    """b for one command from a pipelined load of it alone: y − a/P − W·s, µs."""
    wake = 0.0 if math.isnan(wake_us) else wake_us * sleeps_per_request
    return us_per_request - io_us / pipeline - wake


def relative_command_cost(point: CpuPoint, set_point: CpuPoint, pipeline: int,
                          fit: RequestCosts) -> float:
    """b for a command from its load and a SET load of the same shape just before:
    the fit's b(SET) scaled by the ratio of their per-command parts, µs."""
    own = command_cost(point.us_per_request, pipeline, fit.io_us,
                       point.sleeps_per_request or 0.0, fit.wake_us)
    ref = command_cost(set_point.us_per_request, pipeline, fit.io_us,
                       set_point.sleeps_per_request or 0.0, fit.wake_us)
    if ref <= 0:
        raise ValueError("the SET load's per-command part is not positive: the host's "
                         "speed moved too much between the loads; calibrate again")
    return fit.command_us * own / ref


def per_element(b_one: float, b_many: float, many: int) -> tuple[float, float]:
    """(fixed, per-element) µs from a command's cost with 1 and ``many`` elements.
    A negative slope (noise on a command whose elements cost nothing measurable)
    is 0: all of it fixed."""
    per = max((b_many - b_one) / (many - 1), 0.0)
    return b_one - per, per


def eviction_cost(us_with: float, us_without: float, evicted_per_request: float) -> float:
    """Main-thread µs per evicted key: the extra CPU per request with eviction over
    the keys each request evicts."""
    if evicted_per_request <= 0:
        raise ValueError("no key was evicted: the eviction load did not reach maxmemory")
    return (us_with - us_without) / evicted_per_request


def eviction_defaults() -> dict[str, float]:
    """The model's default eviction costs, µs (``engine.cpu``): per call over the
    limit, per sampled key, per evicted key."""
    from redsim.config.schema import Cpu

    return {k: float(Cpu.model_fields[k].default)
            for k in ("eviction_check", "eviction_sample", "eviction_delete")}


def split_eviction(per_key_us: float, samples: int = 5) -> dict[str, float]:
    """Split a measured µs per evicted key (one key per call, ``samples`` sampled)
    into the model's three eviction costs in the defaults' proportions."""
    d = eviction_defaults()
    total = d["eviction_check"] + samples * d["eviction_sample"] + d["eviction_delete"]
    return {k: v * per_key_us / total for k, v in d.items()}


def line_fit(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Intercept and slope of the least-squares line through (x, y)."""
    if len(x) < 2 or float(np.ptp(np.asarray(x, float))) == 0.0:
        raise ValueError("a line needs two different x values")
    slope, intercept = np.polyfit(np.asarray(x, float), np.asarray(y, float), 1)
    return float(intercept), float(slope)


def fork_cost(rss_bytes: Sequence[float], fork_s: Sequence[float]) -> tuple[float, float]:
    """``fork()`` = fixed + per_gb × RSS: returns (fixed s, s per GB of RSS).

    The least-squares line, constrained to parts ≥ 0 (fork copies the page
    tables, so it cannot get faster with more memory): a fixed part below zero
    (noise at small sizes) is clipped to 0 and the slope refitted through the
    origin; a slope below zero (the size effect lost in the noise between
    BGSAVEs, as on a VM whose fork costs ~10 ms whatever its size) is clipped
    to 0 and the fixed part is the mean fork time.
    """
    gb = [r / 1e9 for r in rss_bytes]
    fixed, per_gb = line_fit(gb, fork_s)
    if per_gb < 0:
        return float(np.mean(fork_s)), 0.0
    if fixed < 0:
        per_gb = float(np.dot(gb, fork_s) / np.dot(gb, gb))
        fixed = 0.0
    return fixed, per_gb


def client_costs(points: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """A load generator's CPU per request batch of one command and per further
    command, µs, from (pipeline, its CPU per request) at two or more depths:
    least squares of ``y = a/P + b``; returns (a + b, b), ``client-cpu`` and
    ``client-cpu-per-command``."""
    if len({p for p, _ in points}) < 2:
        raise ValueError("the client's costs need loads at two pipeline depths or more")
    a_mat = np.array([[1.0 / p, 1.0] for p, _ in points])
    (a, b), *_ = np.linalg.lstsq(a_mat, np.array([y for _, y in points]), rcond=None)
    return float(a + b), float(b)


def nnls(a: np.ndarray, b: np.ndarray, max_iter: int = 0) -> np.ndarray:
    """x ≥ 0 minimising ‖a·x − b‖₂: Lawson and Hanson's active-set method
    (Solving Least Squares Problems, 1974, ch. 23), for the few columns of a
    calibration's fits."""
    m, n = a.shape
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 10 * np.finfo(float).eps * np.linalg.norm(a, 1) * max(m, n)
    for _ in range(max_iter or 3 * n):
        grad = a.T @ (b - a @ x)
        free = ~passive & (grad > tol)
        if not free.any():
            break
        passive[np.argmax(np.where(free, grad, -np.inf))] = True
        while True:  # the passive set's unconstrained solution, stepped back into x ≥ 0
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > tol).all():
                x = z
                break
            neg = passive & (z <= tol)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            passive &= x > tol
            x[~passive] = 0.0
    return x


def spread(values: Sequence[float]) -> float:
    """Sample standard deviation (0 for one value)."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def quantiles(samples: Sequence[float], probs: Sequence[float] = (0.5, 0.9, 0.99, 1.0)
              ) -> dict[float, float]:
    """Empirical quantiles of ``samples`` (numpy's default linear interpolation)."""
    arr = np.asarray(samples, float)
    return {float(p): float(np.quantile(arr, p)) for p in probs}
