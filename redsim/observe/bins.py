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
from redsim.model.jit import hot_leaf, leaf, step
from redsim.model.state import (
    CUR_WIN,
    DT,
    LAT_N,
    LAT_SUM,
    N_WIN,
    W_LAT_MAX,
    W_LAT_SUM,
    W_P50,
    W_P90,
    W_P99,
    W_P999,
    WARMUP,
    WI_DONE,
    WIN_HI,
    WIN_K,
    WIN_LO,
)
from redsim.observe import metrics as M

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "DT", "f8", "s", "config", "the sample window's length (sample-interval), s"),
    ("F", "WARMUP", "f8", "s", "config",
     "the warm-up: completions before it stay out of the run's latency histogram and mean, s"),
    ("F", "T_NEXT_SNAP", "f8", "s", "state",
     "end of the next window whose gauges are still to snapshot, s"),
    ("F", "LAT_SUM", "f8", "s", "counter",
     "latencies of requests completed after the warm-up, summed, s"),
    ("F", "WIN_LO", "f8", "s", "state", "start of the window observe.bins.window found last, s"),
    ("F", "WIN_HI", "f8", "s", "state", "end of the window observe.bins.window found last, s"),
    ("I", "CUR_WIN", "i8", "-", "state",
     "window whose latencies rc whist is collecting (the last completion's)"),
    ("I", "N_WIN", "i8", "-", "size",
     "sample windows (rc_wf / rc_wi columns): the run's, plus one overflow window"),
    ("I", "SNAP_WIN", "i8", "-", "state",
     "next window whose end-of-window gauges are to be recorded"),
    ("I", "LAT_N", "i8", "-", "counter",
     "requests completed after the warm-up (the run's latency count)"),
    ("I", "WIN_K", "i8", "-", "state", "the window `observe.bins.window` found last"),
    ("wf", "W_LAT_SUM", "f8", "s", "count",
     "latencies of the requests completed in the window, summed, s"),
    ("wf", "W_LAT_MAX", "f8", "s", "stat",
     "the largest latency of a request completed in the window, s"),
    ("wf", "W_P50", "f8", "s", "stat",
     "median latency of the requests completed in the window, s (NaN: none)"),
    ("wf", "W_P90", "f8", "s", "stat", "90th percentile latency of the window's completions, s"),
    ("wf", "W_P99", "f8", "s", "stat", "99th percentile latency of the window's completions, s"),
    ("wf", "W_P999", "f8", "s", "stat", "99.9th percentile latency of the window's completions, s"),
    ("wi", "WI_DONE", "i8", "-", "count",
     "requests completed in the window (last reply byte at the client)"),
    ("rc", "wf", "f8", "-", "record",
     "the float series: N_WF rows (W_*) by N_WIN windows, row-major"),
    ("rc", "wi", "i8", "-", "record",
     "the integer series: N_WI rows (WI_*) by N_WIN windows, row-major"),
    ("rc", "hist", "i8", "-", "record",
     "the run's latency histogram after the warm-up: requests per bucket (model.histogram edges)"),
    ("rc", "whist", "i8", "-", "record",
     "the current window's latency histogram (CUR_WIN), emptied when the window closes"),
)


RESULTS = (
    M.Metric("requests_completed", "-", M.SUM, "requests completed after the warm-up",
             value=M.counter("LAT_N"),
             line=M.Line(50, "requests completed", lambda s: f"{s['requests_completed']:,}")),
    M.Metric("throughput_rps", "1/s", M.SUM, "requests completed per second after the warm-up",
             value=lambda r: r.summary["requests_completed"] / (
                 float(r.scenario.duration) - float(r.scenario.warmup)),
             line=M.Line(60, "throughput", lambda s: f"{s['throughput_rps']:,.0f} req/s")),
    M.Metric("latency_mean_s", "s", M.weighted("requests_completed"),
             "the client-observed latency's mean after the warm-up",
             made_by="Result.from_world",
             line=M.Line(80, "latency mean", lambda s: M.fmt_s(s["latency_mean_s"]))),
    *(M.Metric(f"latency_{p}_s", "s", M.HISTOGRAM,
               f"the client-observed latency's {p} after the warm-up (histogram buckets)",
               made_by="Result.from_world") for p in ("p50", "p90", "p99", "p999")),
    M.Line(90, "latency p50 / p99 / p99.9", lambda s: " / ".join(
        M.fmt_s(s[f"latency_{p}_s"]) for p in ("p50", "p99", "p999"))),
    M.Metric("latency_max_s", "s", M.MAX, "the largest client-observed latency after the "
             "warm-up", made_by="Result.from_world",
             line=M.Line(100, "latency max", lambda s: M.fmt_s(s["latency_max_s"]))),
    M.Column(30, "requests_per_sec", "1/s", "requests completed per second",
             M.rate("WI_DONE")),
    M.Column(210, "latency_mean", "s", "the window's mean latency (NaN without requests)",
             M.per_request("W_LAT_SUM")),
    *(M.Column(at, f"latency_{p}", "s", f"the window's latency {p}", M.gauge(series))
      for at, p, series in ((220, "p50", "W_P50"), (230, "p90", "W_P90"),
                            (240, "p99", "W_P99"), (250, "p999", "W_P999"))),
    M.Column(260, "latency_max", "s", "the window's largest latency (NaN without requests)",
             M.when_done("W_LAT_MAX")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

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


@hot_leaf
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


@hot_leaf
def count(w, row, t, n):
    """Add n events at time t to integer series ``row``."""
    F = w.F
    I = w.I
    w.rc_wi[cell(I, row, window(F, I, t))] += n


@step
def close_window(w, k):
    """Window k's latency percentiles from its histogram, which then starts afresh."""
    I = w.I
    wh = w.rc_whist
    w.rc_wf[cell(I, W_P50, k)] = quantile(wh, EDGES, N_BUCKETS, 0.5)
    w.rc_wf[cell(I, W_P90, k)] = quantile(wh, EDGES, N_BUCKETS, 0.9)
    w.rc_wf[cell(I, W_P99, k)] = quantile(wh, EDGES, N_BUCKETS, 0.99)
    w.rc_wf[cell(I, W_P999, k)] = quantile(wh, EDGES, N_BUCKETS, 0.999)
    for b in range(N_BUCKETS):
        wh[b] = 0


@hot_leaf
def record_latency(w, te, lat):
    """A request completed at client time ``te`` after ``lat`` seconds."""
    F = w.F
    I = w.I
    k = window(F, I, te)
    if k != I[CUR_WIN]:
        close_window(w, I[CUR_WIN])
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
    b.F[S.WARMUP] = b.scenario.warmup
    b.I[N_WIN] = n_win
    b.info["n_windows"] = n_win - 1
