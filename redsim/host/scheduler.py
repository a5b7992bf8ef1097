"""The host's CPU scheduler: how many cores each runnable thread gets.

No Redis source: Linux's CFS, as processor sharing. When more threads are
runnable than there are cores, CFS gives each runnable thread of equal weight
an equal share of the cores it can use, rotating them every few ms; a thread
alone on an idle core runs at full speed. In the fluid limit (processor
sharing, PS) k runnable threads on c cores each progress at ``min(1, c/k)``
CPU seconds per wall second. Interrupt and softirq work (the kernel's network
processing, ``host/network.py``) preempts threads, so the threads share only
the cores it leaves.

Threads here are the instances' main threads, their fork children (CPU-bound
while they live) and any other runnable load. Each instance's main thread is
in its own kernel, so the threads are coupled once per scheduler window
(``host.scheduler-window``, 1 ms by default), not at every instant: a
mean-field PS. Over a window, thread j is runnable (running or waiting for a
core) with probability ``b_j``; given thread i runnable, the number of other
runnable threads K_i is Poisson-binomial over the ``b_j`` (j ≠ i), and its
rate is

    r_i = E[ min(1, c / (1 + K_i)) ]

(``share``). A thread's runnable share depends on its rate (a slower thread
stays runnable longer for the same work): with ``u_i`` its CPU demand (CPU s
per wall s, measured over the last window), ``b_i = min(1, u_i / r_i)``, a
fixed point ``shares`` finds by iterating from ``b = u`` (it increases
monotonically to the smallest fixed point).

Checked against theory (``tests/test_host_scheduler.py``): k CPU-bound threads
(u = 1) on c cores each get exactly ``min(1, c/k)``; threads whose demands fit
(Σ u ≤ c with each alone) lose little.

Simplifications, each stated:
- Mean-field: the threads' runnable periods are treated as independent within
  a window. Two instances' main threads woken by the same burst of packets are
  positively correlated, which PS would penalise more; the size of that error
  grows with how bursty the load is inside a window (small for steady loads).
- One window's lag: the rates for window n come from the demand measured in
  window n-1 (the kernels cannot be rolled back). A demand step (a fork child
  starting) is felt by the others one window late.
- Equal weights (all threads nice 0), no cache or NUMA effects of migrating
  between cores, no SMT (a core is a core).
- Redis's bio threads are not threads here: the AOF fsync job and the closing
  of old files spend their time blocked on the device in ``fdatasync`` and
  ``close``, not on a core (the CPU of a call is microseconds). The one that
  burns CPU, lazyfree, is not modelled yet.
"""

from __future__ import annotations

import numpy as np
from numba import njit

FIXED_POINT_STEPS = 30
"""Iterations of ``b = min(1, u / r(b))``; converged to < 1e-9 for the hosts tried."""


@njit(cache=True)
def share(b: np.ndarray, cores: float) -> np.ndarray:
    """Each thread's rate, CPU s per wall s, when thread j is runnable with
    probability ``b[j]`` and the threads share ``cores`` cores: the expectation
    of ``min(1, cores / (1 + K_i))`` over the other threads' runnable count K_i
    (Poisson-binomial, by dynamic programming: O(n²) per thread)."""
    n = b.shape[0]
    out = np.empty(n)
    dist = np.empty(n + 1)
    for i in range(n):
        dist[:] = 0.0
        dist[0] = 1.0
        m = 0
        for j in range(n):
            if j == i:
                continue
            p = b[j]
            m += 1
            for k in range(m, 0, -1):
                dist[k] = dist[k] * (1.0 - p) + dist[k - 1] * p
            dist[0] *= 1.0 - p
        r = 0.0
        for k in range(m + 1):
            r += dist[k] * min(1.0, cores / (1.0 + k))
        out[i] = r
    return out


@njit(cache=True)
def shares(demand: np.ndarray, cores: float) -> tuple[np.ndarray, np.ndarray]:
    """The rates and runnable shares of threads with CPU ``demand`` (CPU s per wall
    s, each in [0, 1]) on ``cores`` cores: the fixed point of
    ``b = min(1, demand / share(b))``. Returns ``(rates, runnable)``."""
    n = demand.shape[0]
    b = np.minimum(demand, 1.0)
    r = np.ones(n)
    for _ in range(FIXED_POINT_STEPS):
        r = share(b, cores)
        nb = np.minimum(demand / r, 1.0)
        if np.max(np.abs(nb - b)) < 1e-12:
            b = nb
            break
        b = nb
    return r, b
