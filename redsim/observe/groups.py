"""Per-client-group accumulators: each group's completions, latencies and errors.

No Redis source: the recorder, as ``observe/bins.py``, split by the client
group a request came from, so that a scenario with a web tier and a batch
job answers for each ("the web tier's p99 stays under 5 ms").

Per group, after the warm-up: requests completed, their latencies summed, the
largest, and a latency histogram on ``model.histogram``'s buckets; and per
sample window: completions, latencies summed, the largest, and the p50 and
p99 from the group's window histogram, as ``observe/bins.py`` keeps them for
the run. Errors by kind, per group: requests the pool gave up on (rejected),
requests whose connection Redis closed (failed) and ``-OOM`` replies.

With one group the group's figures are the run's: nothing is recorded
(``GRP_REC`` 0) and ``Result`` copies the run's.
"""

from __future__ import annotations

from redsim.model.histogram import _EDGES, N_BUCKETS, bucket, quantile_from
from redsim.model.jit import leaf, step
from redsim.model.state import CONNECTED, CONNECTED_PEAK, GRP_REC, N_GROUPS, N_WIN, WARMUP
from redsim.observe import metrics as M
from redsim.observe.bins import window

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "GRP_REC", "i8", "-", "config",
     "1: each client group's completions are recorded apart (more than one group)"),
    ("gp", "lat_n", "i8", "-", "counter", "the group's requests completed after the warm-up"),
    ("gp", "lat_sum", "f8", "s", "counter",
     "latencies of the group's requests completed after the warm-up, summed, s"),
    ("gp", "lat_max", "f8", "s", "counter",
     "the largest latency of the group's requests completed after the warm-up, s"),
    ("gp", "rejected", "i8", "-", "counter",
     "the group's requests given up on: the pool's wait queue or request slots were full"),
    ("gp", "failed", "i8", "-", "counter",
     "the group's requests whose connection Redis closed before answering"),
    ("gp", "oom", "i8", "-", "counter", "the group's commands answered -OOM"),
    ("I", "CONNECTED_PEAK", "i8", "-", "counter",
     "the most connections Redis held at once (connected_clients' peak)"),
    ("gp", "timeouts", "i8", "-", "counter",
     "the group's requests that failed at its client timeout"),
    ("gp", "refused", "i8", "-", "counter",
     "the group's requests whose new connection Redis refused at maxclients"),
    ("gp", "conns", "i8", "-", "state",
     "the group's connections Redis holds now (connected_clients' share)"),
    ("gp", "conns_peak", "i8", "-", "counter", "the most the group's conns reached"),
    ("gp", "cur_win", "i8", "-", "state",
     "window whose latencies the group's row of rc gwhist is collecting"),
    ("rc", "ghist", "i8", "-", "record",
     "each group's latency histogram after the warm-up: groups by model.histogram buckets"),
    ("rc", "gwhist", "i8", "-", "record",
     "each group's histogram of its current window (gp cur_win), emptied when it closes"),
    ("rc", "gw_done", "i8", "-", "record",
     "each group's completions per window: groups by windows"),
    ("rc", "gw_sum", "f8", "s", "record", "each group's latencies per window, summed, s"),
    ("rc", "gw_max", "f8", "s", "record", "each group's largest latency per window, s"),
    ("rc", "gw_err", "i8", "-", "record",
     "each group's failed requests per window: timeouts, refusals at maxclients, closes by "
     "Redis, the pool's rejections and -OOM replies"),
    ("rc", "gw_p50", "f8", "s", "record", "each group's median latency per window, s (NaN: none)"),
    ("rc", "gw_p99", "f8", "s", "record", "each group's 99th percentile per window, s (NaN: none)"),
)


RESULTS = (
    M.Metric("connections_peak", "-", M.MAX, "the most connections open at once",
             value=M.counter("CONNECTED_PEAK")),
)
"""The summary keys this module's figures make (``observe/metrics.py``); each
client group's ``<group>.<metric>`` keys (``result.GROUP_METRICS``) are
declared by the run's key of the same name."""


@leaf
def connected(w, g, delta):
    """Group g's connections held by Redis change by ``delta`` (±1)."""
    n = w.gp_conns[g] + delta
    w.gp_conns[g] = n
    if n > w.gp_conns_peak[g]:
        w.gp_conns_peak[g] = n
    if w.I[CONNECTED] > w.I[CONNECTED_PEAK]:
        w.I[CONNECTED_PEAK] = w.I[CONNECTED]


@step
def close_window(w, g, k):
    """Group g's window k: its percentiles from its histogram, which starts afresh."""
    base = g * N_BUCKETS
    i = g * w.I[N_WIN] + k
    w.rc_gw_p50[i] = quantile_from(w.rc_gwhist, base, _EDGES, N_BUCKETS, 0.5)
    w.rc_gw_p99[i] = quantile_from(w.rc_gwhist, base, _EDGES, N_BUCKETS, 0.99)
    for j in range(N_BUCKETS):
        w.rc_gwhist[base + j] = 0


@leaf
def record(w, g, te, lat):
    """A request of group g completed at client time ``te`` after ``lat`` seconds."""
    if not w.I[GRP_REC]:
        return
    k = window(w.F, w.I, te)
    b = bucket(lat)
    if k != w.gp_cur_win[g]:
        close_window(w, g, w.gp_cur_win[g])
        w.gp_cur_win[g] = k
    w.rc_gwhist[g * N_BUCKETS + b] += 1
    i = g * w.I[N_WIN] + k
    w.rc_gw_done[i] += 1
    w.rc_gw_sum[i] += lat
    if lat > w.rc_gw_max[i]:
        w.rc_gw_max[i] = lat
    if te >= w.F[WARMUP]:
        w.rc_ghist[g * N_BUCKETS + b] += 1
        w.gp_lat_n[g] += 1
        w.gp_lat_sum[g] += lat
        if lat > w.gp_lat_max[g]:
            w.gp_lat_max[g] = lat


@leaf
def failed(w, g, t):
    """A request of group g failed at time t (any kind: its window's error count)."""
    if w.I[GRP_REC]:
        w.rc_gw_err[g * w.I[N_WIN] + window(w.F, w.I, t)] += 1


@step
def finish(w):
    """Close every group's last window (the run's end)."""
    if not w.I[GRP_REC]:
        return
    for g in range(w.I[N_GROUPS]):
        close_window(w, g, w.gp_cur_win[g])


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """Per-group accumulators, when there is more than one group."""
    import numpy as np

    from redsim.model import state as S

    groups = len(b.scenario.clients)
    rec = groups > 1
    b.I[GRP_REC] = 1 if rec else 0
    n = groups if rec else 1  # one idle row keeps the arrays non-empty
    n_win = b.I[S.N_WIN]
    b.fill("gp", lat_sum=np.zeros(groups), lat_max=np.zeros(groups),
           **{f: np.zeros(groups, np.int64) for f in (
               "lat_n", "rejected", "failed", "oom", "timeouts", "refused", "conns",
               "conns_peak", "cur_win")})
    cells = n * n_win if rec else 1  # per group and window
    b.fill("rc", ghist=np.zeros(n * N_BUCKETS, np.int64),
           gwhist=np.zeros(n * N_BUCKETS, np.int64),
           gw_done=np.zeros(cells, np.int64), gw_err=np.zeros(cells, np.int64),
           gw_sum=np.zeros(cells), gw_max=np.zeros(cells),
           gw_p50=np.full(cells, np.nan), gw_p99=np.full(cells, np.nan))
