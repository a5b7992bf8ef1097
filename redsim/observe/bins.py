"""Fixed-interval accumulators the kernel writes into while it runs.

Window ``w`` covers simulated time [w·dt, (w+1)·dt). Rates and CPU shares are
exact integrals over each window, not samples; gauges such as
``connected_clients`` are snapshots at the window's end, as a poll of ``INFO``
would see them. The last row is an overflow window for work that runs past the
end of the run (the main thread can finish an iteration after the horizon);
it is dropped from the results.

Kernel style (applies to every compiled function): take the ``World`` ``w``
and bind the arrays needed to locals at the top, before any call. numba
increfs every array of a tuple that stays live across a call, so holding the
~100-array World or one of its sub-tuples costs ~0.6 µs per call, measured.
"""

from __future__ import annotations

from redsim.model.histogram import _EDGES, bucket, quantile
from redsim.model.jit import leaf, step
from redsim.model.state import (
    CONNECTED,
    CUR_WIN,
    DT,
    HZ,
    IN_FLIGHT,
    LAT_N,
    LAT_SUM,
    N_WIN,
    SNAP_WIN,
    T_NEXT_SNAP,
    W_HZ,
    W_LAT_MAX,
    W_LAT_SUM,
    W_P50,
    W_P90,
    W_P99,
    W_P999,
    WARMUP,
    WI_CONNECTED,
    WI_DONE,
    WI_IN_FLIGHT,
)

EDGES = _EDGES


@leaf
def window(F, I, t):
    """Index of the window holding time t (the overflow window past the end)."""
    k = int(t / F[DT])
    n = I[N_WIN]
    if k >= n:
        return n - 1
    if k < 0:
        return 0
    return k


@leaf
def add_interval(w, row, t0, t1):
    """Add the overlap of [t0, t1) with each window to series ``row`` (seconds)."""
    F = w.F
    I = w.I
    wf = w.rc.wf
    if t1 <= t0:
        return
    dt = F[DT]
    k = window(F, I, t0)
    last = I[N_WIN] - 1
    while True:
        k_end = (k + 1) * dt
        if t1 <= k_end or k == last:
            wf[row, k] += t1 - t0
            return
        wf[row, k] += k_end - t0
        t0 = k_end
        k += 1


@leaf
def count(w, row, t, n):
    """Add n events at time t to integer series ``row``."""
    F = w.F
    I = w.I
    wi = w.rc.wi
    wi[row, window(F, I, t)] += n


@step
def _close_window(wf, wh, k):
    wf[W_P50, k] = quantile(wh, EDGES, 0.5)
    wf[W_P90, k] = quantile(wh, EDGES, 0.9)
    wf[W_P99, k] = quantile(wh, EDGES, 0.99)
    wf[W_P999, k] = quantile(wh, EDGES, 0.999)
    wh[:] = 0


@leaf
def record_latency(w, te, lat):
    """A request completed at client time ``te`` after ``lat`` seconds."""
    F = w.F
    I = w.I
    wf = w.rc.wf
    wi = w.rc.wi
    wh = w.rc.whist
    hist = w.rc.hist
    k = window(F, I, te)
    if k != I[CUR_WIN]:
        _close_window(wf, wh, I[CUR_WIN])
        I[CUR_WIN] = k
    b = bucket(lat)
    wh[b] += 1
    wi[WI_DONE, k] += 1
    wf[W_LAT_SUM, k] += lat
    if lat > wf[W_LAT_MAX, k]:
        wf[W_LAT_MAX, k] = lat
    if te >= F[WARMUP]:
        hist[b] += 1
        F[LAT_SUM] += lat
        I[LAT_N] += 1


@leaf
def snapshot_gauges(w, te):
    """Record end-of-window gauges for every window that ends at or before ``te``."""
    F = w.F
    I = w.I
    wf = w.rc.wf
    wi = w.rc.wi
    while te >= F[T_NEXT_SNAP] and I[SNAP_WIN] < I[N_WIN] - 1:
        k = I[SNAP_WIN]
        wi[WI_CONNECTED, k] = I[CONNECTED]
        wi[WI_IN_FLIGHT, k] = I[IN_FLIGHT]
        wf[W_HZ, k] = I[HZ]
        I[SNAP_WIN] = k + 1
        F[T_NEXT_SNAP] += F[DT]


@step
def finish_windows(w, t_end):
    """Close the open latency window and snapshot the remaining gauges."""
    F = w.F
    I = w.I
    _close_window(w.rc.wf, w.rc.whist, I[CUR_WIN])
    snapshot_gauges(w, t_end + 0.5 * F[DT])
