"""Fixed-interval accumulators the kernel writes into while it runs.

No Redis source: the recorder. Its series are named after the INFO fields
they stand for, but where Redis samples (``instantaneous_ops_per_sec`` over
100-ms samples) these are exact integrals over each window.

Window ``w`` covers simulated time [w·dt, (w+1)·dt). Rates and CPU shares are
exact integrals over each window, not samples; gauges such as
``connected_clients`` are snapshots at the window's end, as a poll of ``INFO``
would see them. The last row is an overflow window for work that runs past the
end of the run (the main thread can finish an iteration after the horizon);
it is dropped from the results.
"""

from __future__ import annotations

from redsim.model.histogram import _EDGES, N_BUCKETS, bucket, quantile
from redsim.model.jit import entry, leaf, step
from redsim.model.memory import clients_memory, used_memory
from redsim.model.state import (
    AOF_BUF,
    AOF_SIZE,
    CHILD,
    CONNECTED,
    COW_PAGES,
    CUR_WIN,
    DIRTY,
    DT,
    HZ,
    IN_FLIGHT,
    KS_BUCKETS,
    KS_EXP_BUCKETS,
    KS_EXPIRES,
    KS_KEYS,
    LAT_N,
    LAT_SUM,
    MEM_CLIENTS_INFO,
    N_WIN,
    PAGE_SHIFT,
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
    WI_AOF_BUF,
    WI_AOF_SIZE,
    WI_BUCKETS,
    WI_CHILD,
    WI_CONNECTED,
    WI_COW_BYTES,
    WI_DIRTY,
    WI_DONE,
    WI_EXPIRES,
    WI_IN_FLIGHT,
    WI_KEYS,
    WI_MEM_CLIENTS,
    WI_MEM_CLIENTS_INFO,
    WI_USED_MEMORY,
    WIN_HI,
    WIN_K,
    WIN_LO,
)
from redsim.model.world import as_world

EDGES = _EDGES


@leaf
def window(F, I, t):
    """Index of the window holding time t (the overflow window past the end).

    Nearly every call falls in the window of the call before, so that one's
    bounds are kept and the division is skipped."""
    if F[WIN_LO] <= t < F[WIN_HI]:
        return I[WIN_K]
    dt = F[DT]
    k = int(t / dt)
    n = I[N_WIN]
    if k >= n:
        return n - 1
    if k < 0:
        return 0
    if k < n - 1:
        F[WIN_LO] = k * dt
        F[WIN_HI] = (k + 1) * dt
        I[WIN_K] = k
    return k


@leaf
def cell(I, row, k):
    """Flat index of (series ``row``, window ``k``) in ``rc_wf`` / ``rc_wi``."""
    return row * I[N_WIN] + k


@leaf
def add_interval(w, row, t0, t1):
    """Add the overlap of [t0, t1) with each window to series ``row`` (seconds)."""
    F = w.F
    I = w.I
    if t1 <= t0:
        return
    dt = F[DT]
    k = window(F, I, t0)
    last = I[N_WIN] - 1
    while True:
        k_end = (k + 1) * dt
        if t1 <= k_end or k == last:
            w.rc_wf[cell(I, row, k)] += t1 - t0
            return
        w.rc_wf[cell(I, row, k)] += k_end - t0
        t0 = k_end
        k += 1


@leaf
def count(w, row, t, n):
    """Add n events at time t to integer series ``row``."""
    F = w.F
    I = w.I
    w.rc_wi[cell(I, row, window(F, I, t))] += n


@step
def _close_window(w, k):
    """Window k's latency percentiles from its histogram, which then starts afresh."""
    I = w.I
    wh = w.rc_whist
    w.rc_wf[cell(I, W_P50, k)] = quantile(wh, EDGES, N_BUCKETS, 0.5)
    w.rc_wf[cell(I, W_P90, k)] = quantile(wh, EDGES, N_BUCKETS, 0.9)
    w.rc_wf[cell(I, W_P99, k)] = quantile(wh, EDGES, N_BUCKETS, 0.99)
    w.rc_wf[cell(I, W_P999, k)] = quantile(wh, EDGES, N_BUCKETS, 0.999)
    for b in range(N_BUCKETS):
        wh[b] = 0


@leaf
def record_latency(w, te, lat):
    """A request completed at client time ``te`` after ``lat`` seconds."""
    F = w.F
    I = w.I
    k = window(F, I, te)
    if k != I[CUR_WIN]:
        _close_window(w, I[CUR_WIN])
        I[CUR_WIN] = k
    b = bucket(lat)
    w.rc_whist[b] += 1
    w.rc_wi[cell(I, WI_DONE, k)] += 1
    w.rc_wf[cell(I, W_LAT_SUM, k)] += lat
    if lat > w.rc_wf[cell(I, W_LAT_MAX, k)]:
        w.rc_wf[cell(I, W_LAT_MAX, k)] = lat
    if te >= F[WARMUP]:
        w.rc_hist[b] += 1
        F[LAT_SUM] += lat
        I[LAT_N] += 1


@leaf
def snapshot_gauges(w, te):
    """Record end-of-window gauges for every window that ends at or before ``te``."""
    F = w.F
    I = w.I
    while te >= F[T_NEXT_SNAP] and I[SNAP_WIN] < I[N_WIN] - 1:
        k = I[SNAP_WIN]
        w.rc_wi[cell(I, WI_CONNECTED, k)] = I[CONNECTED]
        w.rc_wi[cell(I, WI_IN_FLIGHT, k)] = I[IN_FLIGHT]
        w.rc_wf[cell(I, W_HZ, k)] = I[HZ]
        w.rc_wi[cell(I, WI_USED_MEMORY, k)] = used_memory(w)
        w.rc_wi[cell(I, WI_KEYS, k)] = I[KS_KEYS]
        w.rc_wi[cell(I, WI_EXPIRES, k)] = I[KS_EXPIRES]
        w.rc_wi[cell(I, WI_BUCKETS, k)] = I[KS_BUCKETS] + I[KS_EXP_BUCKETS]
        w.rc_wi[cell(I, WI_MEM_CLIENTS, k)] = clients_memory(w)
        w.rc_wi[cell(I, WI_MEM_CLIENTS_INFO, k)] = I[MEM_CLIENTS_INFO]
        w.rc_wi[cell(I, WI_AOF_BUF, k)] = I[AOF_BUF]
        w.rc_wi[cell(I, WI_AOF_SIZE, k)] = I[AOF_SIZE]
        w.rc_wi[cell(I, WI_COW_BYTES, k)] = I[COW_PAGES] << I[PAGE_SHIFT]
        w.rc_wi[cell(I, WI_CHILD, k)] = I[CHILD]
        w.rc_wi[cell(I, WI_DIRTY, k)] = I[DIRTY]
        I[SNAP_WIN] = k + 1
        F[T_NEXT_SNAP] += F[DT]


@entry
def finish_windows(world, t_end):
    """Close the open latency window and snapshot the remaining gauges."""
    w = as_world(world)
    F = w.F
    I = w.I
    _close_window(w, I[CUR_WIN])
    snapshot_gauges(w, t_end + 0.5 * F[DT])


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """The windows of ``sample-interval`` (plus one overflow window) and the
    latency histograms."""
    import math

    import numpy as np

    from redsim.model import state as S
    from redsim.model.histogram import N_BUCKETS

    dt = b.scenario.sample_interval
    n_win = int(math.ceil(b.scenario.duration / dt - 1e-9)) + 1  # + overflow window
    wf = np.zeros((S.N_WF, n_win))
    for row in (S.W_P50, S.W_P90, S.W_P99, S.W_P999):
        wf[row] = np.nan
    b.fill("rc", wf=wf, wi=np.zeros((S.N_WI, n_win), np.int64),
           hist=np.zeros(N_BUCKETS, np.int64), whist=np.zeros(N_BUCKETS, np.int64))
    b.F[DT] = dt
    b.F[S.T_NEXT_SNAP] = dt
    b.I[N_WIN] = n_win
    b.info["n_windows"] = n_win - 1
