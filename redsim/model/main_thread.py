"""The main thread's clock: the time it spends, and on what.

No Redis source: the simulator's account of the main thread, the one thread
that runs every command, read, write, cron and fork. Work advances its clock
(``F[T]``) and is recorded under the activity it went to (``W_CPU_*``, the
main-thread figures of the results) in one place, so the clock and the
record cannot disagree.

A cost is CPU time. On a host whose cores are shared (``host.cores``,
``redsim/host/scheduler.py``), the thread gets only part of a core, and the
wall time a cost takes is stretched by ``CPU_SLOW`` (wall s per CPU s, 1 with a
core to itself); the host sets it between event-loop iterations from how
many threads were runnable. With a scheduling quantum (``host.quantum`` > 0)
the stretch comes in round-robin turns instead of evenly: after each quantum
of CPU the thread waits while the others run theirs, and pays a context
switch. The recorded ``W_CPU_*`` spans are the wall time the thread was held
(running or runnable), which is what delays its next iteration; ``CPU_USED``
keeps the CPU seconds. With ``CPU_SLOW`` 1 a cost's wall time is the cost
itself, bit for bit (x * 1.0 == x), so a dedicated core changes nothing.
Every span is also offered to the stall record (``observe/stalls.py``).
"""

from __future__ import annotations

import math

from redsim.model.jit import hot_leaf, leaf, step
from redsim.model.state import CPU_HELD, CPU_SLOW, CPU_USED, CSW_COST, QUANTUM, SLICE, T
from redsim.observe import metrics as M
from redsim.observe import stalls
from redsim.observe.bins import add_interval

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "T", "f8", "s", "state",
     "the main thread's clock: simulated time now, s since the run's start"),
    ("F", "CPU_SLOW", "f8", "-", "state",
     "wall s per CPU s the main thread gets now (1: a core to itself; the host's "
     "scheduler sets it between iterations)"),
    ("F", "CPU_USED", "f8", "s", "counter", "CPU s the main thread has spent since the start"),
    ("F", "CPU_HELD", "f8", "s", "counter",
     "wall s the main thread has been running or runnable since the start"),
    ("F", "QUANTUM", "f8", "s", "config",
     "the scheduler's quantum, s; 0 = processor sharing (the stretch spread evenly)"),
    ("F", "CSW_COST", "f8", "s", "config",
     "CPU of an involuntary context switch (a preempted turn), s"),
    ("F", "SLICE", "f8", "s", "state", "CPU s run since the thread's last preemption"),
)


RESULTS = (
    M.Metric("utilisation", "-", M.MEAN, "the main thread's busy share after the warm-up "
             "(every cpu_* share added up)", made_by="Result.from_world",
             line=M.Line(110, "main thread busy", lambda s: f"{s['utilisation']:.1%}")),
    M.Metric("utilisation_peak", "-", M.MAX, "the busy share of the busiest post-warm-up "
             "window", made_by="Result.from_world"),
    M.Line(120, "  commands / read / write",
           lambda s: M.shares(s, "commands", "read", "write")),
    M.Line(130, "  iteration / cron / conns / eviction",
           lambda s: M.shares(s, "iteration", "cron", "connections", "eviction")),
)
"""The summary keys this module's figures make (``observe/metrics.py``)."""


@hot_leaf
def busy(w, row, cost):
    """The main thread spends ``cost`` CPU seconds on activity ``row`` from now."""
    F = w.F
    t0 = F[T]
    wall = cost * F[CPU_SLOW] if F[QUANTUM] == 0.0 else round_robin(w, cost)
    F[T] = t0 + wall
    F[CPU_USED] += cost
    F[CPU_HELD] += wall
    add_interval(w, row, t0, t0 + wall)
    stalls.check(w, row, t0, wall)


@step
def round_robin(w, cost):
    """The wall time ``cost`` CPU seconds take in round-robin turns of
    ``QUANTUM``: each full quantum of CPU ends a turn, the others' turns take
    (slow - 1) quanta of wall time, and the switch back costs ``CSW_COST`` of CPU.
    A thread that keeps up with its share (slow <= 1) runs uninterrupted."""
    F = w.F
    if F[CPU_SLOW] <= 1.0:
        return cost * F[CPU_SLOW]
    run = F[SLICE] + cost
    turns = math.floor(run / F[QUANTUM])
    F[SLICE] = run - turns * F[QUANTUM]
    return cost + turns * ((F[CPU_SLOW] - 1.0) * F[QUANTUM] + F[CSW_COST])


@leaf
def busy_to(w, row, t_end):
    """The main thread runs (works or spins) on activity ``row`` from now until
    ``t_end``, at its current share of a core: an I/O-thread pass it waits for
    by spinning. Returns nothing; the clock never goes back."""
    F = w.F
    t0 = F[T]
    if t_end <= t0:
        return
    F[T] = t_end
    F[CPU_USED] += (t_end - t0) / F[CPU_SLOW]
    F[CPU_HELD] += t_end - t0
    add_interval(w, row, t0, t_end)
    stalls.check(w, row, t0, t_end - t0)


@leaf
def busy_until(w, row, t_end):
    """The main thread is held on activity ``row`` from now until ``t_end`` (a
    blocking call that returns then: a write behind an fsync, an fdatasync).
    It is blocked, not runnable: the host's cores do not count it."""
    F = w.F
    t0 = F[T]
    F[T] = t_end
    add_interval(w, row, t0, t_end)
    stalls.check(w, row, t0, t_end - t0)


def configure(b) -> None:
    """A core to itself until the host says otherwise (``CPU_SLOW`` 1); the host's
    scheduling quantum and context-switch cost (``host.quantum``,
    ``host.context-switch``)."""
    from redsim.model import state as S

    host = b.scenario.host
    b.F[S.CPU_SLOW] = 1.0
    b.F[S.QUANTUM] = host.quantum
    b.F[S.CSW_COST] = host.context_switch
