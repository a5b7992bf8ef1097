"""Stalls: the main thread held on one thing for longer than ``stall-threshold``.

No Redis source: the recorder's view of what Redis's latency monitor
(``src/latency.c``) samples per event (fork, aof-write, expire-cycle, ...),
taken from the main thread's own clock. Every span the main thread spends on
one activity in one go (``main_thread.busy``, ``busy_to``, ``busy_until``: a
fork, a write() behind an fsync, an fdatasync, an eviction or expiry cycle,
one client's commands) that lasts at least ``stall-threshold`` is a stall of
that activity. Everything waiting for the main thread waits for it.

Recorded per stall: when it began, how long the thread was held (wall s),
the activity (a ``W_CPU_*`` row) and the requests in flight when it began
(issued, not answered: each of them waits for it, as does every request
issued before it ends). The first ``STALL_CAP`` stalls are kept; ``N_STALLS``
counts them all.

Simplification: a stall is one span of one activity; back-to-back spans of
work (an eviction burst: many short cycles between commands) are not joined
into one, which is what the burst detection (``analysis/phases.py``) is for.
"""

from __future__ import annotations

from redsim.model.jit import leaf, step
from redsim.model.state import IN_FLIGHT, N_STALLS, STALL_MIN
from redsim.observe import metrics as M

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "STALL_MIN", "f8", "s", "config",
     "stall-threshold: a span of one activity at least this long is a stall, s"),
    ("I", "N_STALLS", "i8", "-", "counter", "stalls since the start (the first STALL_CAP kept)"),
    ("rc", "st_t", "f8", "s", "record", "each kept stall's start, s"),
    ("rc", "st_wall", "f8", "s", "record", "each kept stall's length: the thread held, wall s"),
    ("rc", "st_row", "i8", "-", "record", "each kept stall's activity (its W_CPU_* row)"),
    ("rc", "st_inflight", "i8", "-", "record", "requests in flight when each kept stall began"),
)


RESULTS = (
    M.Metric("stalls", "-", M.SUM, "stalls at least stall-threshold long (kept or not)",
             value=M.counter("N_STALLS"),
             line=M.Line(200, "stalls (main thread held >= stall-threshold)", lambda s: (
                 f"{s.get('stalls', 0):,}" + (
                     f": {s['stall_causes'].replace(';', ', ')}; longest "
                     f"{M.fmt_s(s['stall_max_s'])}" if s.get("stalls") else "")))),
    M.Metric("stall_causes", "-", M.CAUSES, "the kept stalls by cause, cause=count;...",
             made_by="_stall_summary"),
    M.Metric("stall_max_s", "s", M.MAX, "the longest kept stall", made_by="_stall_summary"),
    M.Metric("stall_time_s", "s", M.SUM, "the kept stalls' total", made_by="_stall_summary"),
)
"""The summary keys this module's figures make (``observe/metrics.py``)."""

STALL_CAP = 4096
"""Stalls whose details are kept (the count goes on past it)."""


@leaf
def check(w, row, t0, wall):
    """The main thread was held ``wall`` s on activity ``row`` from ``t0``."""
    if wall >= w.F[STALL_MIN]:
        record(w, row, t0, wall)


@step
def record(w, row, t0, wall):
    """Keep a stall (the first ``STALL_CAP``) and count it."""
    I = w.I
    n = I[N_STALLS]
    if n < STALL_CAP:
        w.rc_st_t[n] = t0
        w.rc_st_wall[n] = wall
        w.rc_st_row[n] = row
        w.rc_st_inflight[n] = I[IN_FLIGHT]
    I[N_STALLS] = n + 1


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """``stall-threshold`` and the stall record."""
    import numpy as np

    b.F[STALL_MIN] = b.scenario.stall_threshold
    b.fill("rc", st_t=np.zeros(STALL_CAP), st_wall=np.zeros(STALL_CAP),
           st_row=np.zeros(STALL_CAP, np.int64), st_inflight=np.zeros(STALL_CAP, np.int64))
