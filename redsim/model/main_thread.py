"""The main thread's clock: the time it spends, and on what.

No Redis source: the simulator's account of the main thread, the one thread
that runs every command, read, write, cron and fork. Work advances its clock
(``F[T]``) and is recorded under the activity it went to (``W_CPU_*``, the
main-thread figures of the results) in one place, so the clock and the
record cannot disagree.
"""

from __future__ import annotations

from redsim.model.jit import leaf
from redsim.model.state import T
from redsim.observe.bins import add_interval

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "T", "f8", "s", "state",
     "the main thread's clock: simulated time now, s since the run's start"),
)


@leaf
def busy(w, row, cost):
    """The main thread spends ``cost`` seconds on activity ``row`` from now."""
    F = w.F
    t0 = F[T]
    F[T] = t0 + cost
    add_interval(w, row, t0, t0 + cost)


@leaf
def busy_until(w, row, t_end):
    """The main thread is held on activity ``row`` from now until ``t_end`` (a
    blocking call that returns then: a write behind an fsync, an fdatasync)."""
    F = w.F
    t0 = F[T]
    F[T] = t_end
    add_interval(w, row, t0, t_end)
