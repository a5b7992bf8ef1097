"""The latency monitor (``src/latency.c``): per-event samples above a threshold.

Follows ``src/latency.c:latencyAddSample`` behind the ``latencyAddSampleIfNeeded``
macro of ``src/latency.h``, the same in 6.2, 7.0 and 7.2.

``latencyAddSampleIfNeeded(event, ms)`` records a sample only when
``latency-monitor-threshold`` is set (ms > 0) and the sample is at least the
threshold. Each event keeps the last ``LATENCY_TS_LEN`` = 160 samples, one per
second: a second sample in the same second keeps the larger (``LATENCY
HISTORY`` shows exactly this), plus the all-time maximum (``LATENCY LATEST``'s
max). Durations are whole milliseconds, as Redis's ``mstime`` differences.
"""

from __future__ import annotations

from redsim.model.jit import leaf
from redsim.model.state import LM_THRESHOLD, T

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "LM_THRESHOLD", "i8", "ms", "config", "latency-monitor-threshold, ms (0 = off)"),
    ("rc", "lm_t", "f8", "s", "record",
     "each event's ring of LATENCY_TS_LEN samples: the sample's second (time(NULL)), s"),
    ("rc", "lm_ms", "i8", "ms", "record",
     "each event's ring of samples: the latency, whole ms (the second's largest)"),
    ("rc", "lm_n", "i8", "-", "record",
     "samples each event has recorded (ring position: n % LATENCY_TS_LEN)"),
    ("rc", "lm_max", "i8", "ms", "record",
     "each event's all-time maximum latency (LATENCY LATEST max), ms"),
)

LATENCY_TS_LEN = 160
EVENTS = ("fork", "aof-write", "aof-write-pending-fsync", "aof-write-active-child",
          "aof-write-alone", "aof-fsync-always", "aof-rename", "eviction-cycle", "expire-cycle",
          "active-defrag-cycle", "eviction-lazyfree")
"""Events the model can record, in the order of their rows."""
(LM_FORK, LM_AOF_WRITE, LM_AOF_WRITE_PENDING_FSYNC, LM_AOF_WRITE_ACTIVE_CHILD,
 LM_AOF_WRITE_ALONE, LM_AOF_FSYNC_ALWAYS, LM_AOF_RENAME, LM_EVICTION_CYCLE,
 LM_EXPIRE_CYCLE, LM_ACTIVE_DEFRAG_CYCLE, LM_EVICTION_LAZYFREE) = range(len(EVENTS))
N_EVENTS = len(EVENTS)


@leaf
def add_sample(w, event, seconds):
    """``latencyAddSampleIfNeeded``: record ``seconds`` of ``event`` now."""
    threshold = w.I[LM_THRESHOLD]
    if threshold <= 0:
        return
    ms = int(seconds * 1000.0)
    if ms < threshold:
        return
    now = float(int(w.F[T]))  # time(NULL): whole seconds
    n = w.rc_lm_n[event]
    if n > 0:
        last = event * LATENCY_TS_LEN + (n - 1) % LATENCY_TS_LEN
        if w.rc_lm_t[last] == now:
            if ms > w.rc_lm_ms[last]:
                w.rc_lm_ms[last] = ms
            if ms > w.rc_lm_max[event]:
                w.rc_lm_max[event] = ms
            return
    i = event * LATENCY_TS_LEN + n % LATENCY_TS_LEN
    w.rc_lm_t[i] = now
    w.rc_lm_ms[i] = ms
    w.rc_lm_n[event] = n + 1
    if ms > w.rc_lm_max[event]:
        w.rc_lm_max[event] = ms


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """``latency-monitor-threshold`` and the monitor's per-event series."""
    import numpy as np

    from redsim.model import state as S

    b.I[S.LM_THRESHOLD] = b.scenario.server.latency_monitor_threshold
    b.fill("rc", lm_t=np.zeros(N_EVENTS * LATENCY_TS_LEN),
           lm_ms=np.zeros(N_EVENTS * LATENCY_TS_LEN, np.int64),
           lm_n=np.zeros(N_EVENTS, np.int64), lm_max=np.zeros(N_EVENTS, np.int64))
