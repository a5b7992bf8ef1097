"""A client group's life: its start ramp, its ``stop`` and surges, its
``phases``, and the sources it parks and wakes.

No Redis source: a deployment's clients coming and going (a rollout, a
batch job's surges, a load test's phases). A group's ``stop`` and surges are
``EV_GROUP_OFF``/``EV_GROUP_ON`` events (``group_off``, ``group_on``): off,
sources park when they next would issue (``rq_dormant``), the arrival or
think clock stops at its next tick (``gp_chain``), idle connections close and
busy ones close when their reply returns (``client_requests.complete``); on,
the parked sources think and go again. A group's ``phases`` are ``EV_PHASE``
events (``phase_step``): a phase sets the think time and the threads per
process that may send (``set_active``, ``gp_active``; a memoryless group's
thinking counts, with ``pl_park`` for threads cut while out). A memoryless
group's ``ramp`` starts its threads one by one (``ramp_step``).
"""

from __future__ import annotations

import math

from redsim.model import events
from redsim.model.jit import leaf, step
from redsim.model.pools import close_connection, pool_checkout
from redsim.model.sources import next_arrival, think_clock_gap, think_time
from redsim.model.state import (
    EV_GROUP_OFF,
    EV_GROUP_ON,
    EV_ISSUE,
    EV_OPEN_ARRIVAL,
    EV_PHASE,
    EV_RAMP,
    EV_THINK_CLOCK,
    KIND_OPEN,
)

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("rq", "dormant", "i8", "-", "state",
     "closed/trace sources: 1 while parked because their group is off (stop, surge)"),
    ("gp", "stop", "f8", "s", "config", "when the group stops sending (stop), s; inf = never"),
    ("gp", "surge_every", "f8", "s", "config", "surge.every, s; 0 = no surges"),
    ("gp", "surge_for", "f8", "s", "config", "surge.for: each surge's length, s"),
    ("gp", "lifecycle", "i8", "-", "config", "1: the group has a stop or surges"),
    ("gp", "on", "i8", "-", "state", "1 while the group sends (0 after a stop, between surges)"),
    ("gp", "t_on", "f8", "s", "state", "when the group's current (or last) surge began, s"),
    ("gp", "chain", "i8", "-", "state",
     "open-loop and memoryless groups: 1 while their arrival or think clock is scheduled"),
    ("gp", "ramp_gap", "f8", "s", "config",
     "ramp / threads: time between two threads' starts in the group's ramp, s; 0 = none"),
    ("gp", "ramp_left", "i8", "-", "state", "memoryless groups: threads still to start"),
    ("gp", "active", "i8", "-", "state",
     "threads per process that may send now (the current phase's; threads otherwise)"),
    ("gp", "ph_pos", "i8", "-", "state", "the group's next phase row in the tb ph_* tables"),
    ("gp", "ph_end", "i8", "-", "config", "one past the group's last phase row"),
    ("tb", "ph_t", "f8", "s", "config", "each phase's start, s from the run's start"),
    ("tb", "ph_threads", "i8", "-", "config", "each phase's threads per process; -1 = unchanged"),
    ("tb", "ph_think_kind", "i8", "-", "config",
     "each phase's think distribution (DIST_*); -1 = unchanged"),
    ("tb", "ph_think_mean", "f8", "s", "config", "each phase's think mean, s"),
    ("tb", "ph_think_low", "f8", "s", "config", "each phase's think low bound, s"),
    ("tb", "ph_think_high", "f8", "s", "config", "each phase's think high bound, s"),
    ("tb", "ph_think_sigma", "f8", "-", "config", "each phase's think lognormal sigma"),
)


@step
def group_off(w, g, te):
    """Group g stops sending at te (its stop, or a surge's end): sources park
    when they next would issue, the arrival or think clock stops at its next
    tick, idle connections close now and busy ones when their reply is back."""
    w.gp_on[g] = 0
    first = w.gp_pool_base[g]
    for p in range(first, first + w.gp_processes[g]):
        while w.pl_idle_n[p] > 0:
            c = pool_checkout(w, p)
            close_connection(w, c, te)
    if w.gp_surge_every[g] > 0.0:
        t_next = w.gp_t_on[g] + w.gp_surge_every[g]
        if t_next < w.gp_stop[g]:
            events.push(w, t_next, EV_GROUP_ON, g)


@step
def group_on(w, g, te):
    """Group g's next surge starts at te: parked sources think and issue again
    (their connections open as they do), the clock or arrivals restart."""
    w.gp_on[g] = 1
    w.gp_t_on[g] = te
    kind = w.gp_kind[g]
    if kind == KIND_OPEN:
        if not w.gp_chain[g]:
            t = next_arrival(w, g, te)
            if t < math.inf:
                w.gp_chain[g] = 1
                events.push(w, t, EV_OPEN_ARRIVAL, g)
    elif w.gp_memoryless[g]:
        if not w.gp_chain[g]:
            w.gp_chain[g] = 1
            events.push(w, te + think_clock_gap(w, g), EV_THINK_CLOCK, g)
    else:
        wake_sources(w, g, te)
    schedule_off(w, g, te)


@leaf
def may_send(w, r):
    """Closed or trace source r may issue now: its group is on and the source is
    among the current phase's threads of its process."""
    g = w.rq_group[r]
    return w.gp_on[g] and (r - w.gp_slot_base[g]) % w.gp_threads[g] < w.gp_active[g]


@step
def wake_sources(w, g, te):
    """Group g's parked sources that may send now think and go again."""
    b = w.gp_slot_base[g]
    for r in range(b, b + w.gp_n_slots[g]):
        if w.rq_dormant[r] and may_send(w, r):
            w.rq_dormant[r] = 0
            events.push(w, te + think_time(w, g), EV_ISSUE, r)


@step
def set_active(w, g, n, te):
    """Group g's processes now run n threads each (a phase's ``threads``): a
    memoryless group's thinking counts change (threads out on a request park
    when it ends); other sources beyond n park at their next issue, and those
    below n that were parked go again."""
    old = w.gp_active[g]
    w.gp_active[g] = n
    if w.gp_memoryless[g]:
        first = w.gp_pool_base[g]
        for p in range(first, first + w.gp_processes[g]):
            if n > old:
                add = n - old
                cancel = min(w.pl_park[p], add)
                w.pl_park[p] -= cancel
                w.pl_thinking[p] += add - cancel
            elif n < old:
                cut = old - n
                take = min(w.pl_thinking[p], cut)
                w.pl_thinking[p] -= take
                w.pl_park[p] += cut - take
    elif n > old:
        wake_sources(w, g, te)


@step
def apply_phase(w, g, j, te):
    """Phase row j of group g takes effect at te: its think time, its threads."""
    if w.tb_ph_think_kind[j] >= 0:
        w.gp_think_kind[g] = w.tb_ph_think_kind[j]
        w.gp_think_mean[g] = w.tb_ph_think_mean[j]
        w.gp_think_low[g] = w.tb_ph_think_low[j]
        w.gp_think_high[g] = w.tb_ph_think_high[j]
        w.gp_think_sigma[g] = w.tb_ph_think_sigma[j]
    if w.tb_ph_threads[j] >= 0:
        set_active(w, g, w.tb_ph_threads[j], te)


@step
def phase_step(w, g, te):
    """Group g's next phase starts at te; the one after it is scheduled."""
    j = w.gp_ph_pos[g]
    w.gp_ph_pos[g] = j + 1
    apply_phase(w, g, j, te)
    if j + 1 < w.gp_ph_end[g]:
        events.push(w, w.tb_ph_t[j + 1], EV_PHASE, g)


@step
def schedule_off(w, g, t_on):
    """The group, on since t_on, goes off at its surge's end or its stop."""
    t_off = w.gp_stop[g]
    if w.gp_surge_every[g] > 0.0 and t_on + w.gp_surge_for[g] < t_off:
        t_off = t_on + w.gp_surge_for[g]
    if t_off < math.inf:
        events.push(w, t_off, EV_GROUP_OFF, g)


@step
def ramp_step(w, g, te):
    """Memoryless group g's ramp: one more thread starts thinking at te (thread
    j of the N joins process j mod processes), the next ``ramp_gap`` later."""
    n = w.gp_processes[g] * w.gp_threads[g]
    j = n - w.gp_ramp_left[g]
    w.pl_thinking[w.gp_pool_base[g] + j % w.gp_processes[g]] += 1
    w.gp_ramp_left[g] -= 1
    if w.gp_ramp_left[g] > 0:
        events.push(w, te + w.gp_ramp_gap[g], EV_RAMP, g)


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """Each group's stop, surges, ramp and phases (the ``tb_ph_*`` rows; an
    open group's phases set its rate instead, ``sources.configure``), and its
    sources' parked flags. Runs after ``clients.configure``: the phases' think
    distributions follow the groups' value sizes in the empirical tables."""
    import numpy as np

    from redsim.model.blueprint import f64, i64

    groups = b.scenario.clients
    gp: dict[str, list] = {k: [] for k in (
        "stop", "surge_every", "surge_for", "lifecycle", "on", "t_on", "chain", "ramp_gap",
        "ramp_left", "active", "ph_pos", "ph_end")}
    ph: dict[str, list] = {k: [] for k in ("t", "threads", "think_kind", "think_mean",
                                          "think_low", "think_high", "think_sigma")}
    for grp in groups:
        gp["stop"].append(math.inf if grp.stop is None else grp.stop)
        gp["surge_every"].append(grp.surge.every if grp.surge else 0.0)
        gp["surge_for"].append(grp.surge.length if grp.surge else 0.0)
        gp["lifecycle"].append(1 if (grp.surge or grp.stop is not None) else 0)
        gp["on"].append(1)
        gp["t_on"].append(grp.start)
        gp["chain"].append(1)
        gp["ramp_gap"].append(grp.ramp / (grp.processes * grp.threads))
        gp["ramp_left"].append(0)
        gp["active"].append(grp.threads)
        gp["ph_pos"].append(len(ph["t"]))
        for phase in (grp.phases or ()) if grp.kind != "open" else ():
            ph["t"].append(grp.start + phase.at)
            ph["threads"].append(-1 if phase.threads is None else phase.threads)
            if phase.think is None:
                ph["think_kind"].append(-1)
                for k in ("mean", "low", "high", "sigma"):
                    ph[f"think_{k}"].append(0.0)
            else:
                k_, mean, lo, hi, sig = b.dist(phase.think)
                for k, v in (("kind", k_), ("mean", mean), ("low", lo), ("high", hi),
                             ("sigma", sig)):
                    ph[f"think_{k}"].append(v)
        gp["ph_end"].append(len(ph["t"]))
    floats = ("stop", "surge_every", "surge_for", "t_on", "ramp_gap")
    b.fill("gp", **{f: (f64(v) if f in floats else i64(v)) for f, v in gp.items()})
    b.fill("tb", **{f"ph_{k}": (i64(v or [0]) if k in ("threads", "think_kind")
                                else f64(v or [0.0])) for k, v in ph.items()})
    b.fill("rq", dormant=np.zeros(b.size.slots, np.int64))
