"""The request sources: think times, open-loop arrival times, trace replay's
position, and what a source does when its request ends.

No Redis source: the sources are the app's threads or its arrival streams,
outside Redis. A client group's sources are its app threads (closed loop:
send, wait for the reply, think; trace: the same, replaying a command file)
or a Poisson stream of arrivals (open loop, with a piecewise-constant rate
profile, ``next_arrival``). Closed and trace sources own a request slot
each; arrivals, recorded-time traces and memoryless closed loops take slots
from a free list sized for what can be out at once (``sizing.request_slots``).

Closed loops with exponential think times run as one clock per group
(*uniformization*, Jensen 1953): a Poisson clock at rate N/Z — N threads, mean
think Z — ticks on a thread drawn uniformly (``think_clock_gap``; the tick is
``clients.think_clock``), and the tick issues a request if that thread is
thinking and does nothing otherwise. Each thread then sees a rate-1/Z Poisson
clock while it thinks, which is exactly an exponential think time, because
the exponential is memoryless. Only each process's count of thinking threads
is kept (``pl_thinking``), so three million sources cost what a few thousand
do. Other think distributions keep one timer per source (``EV_ISSUE``).

The arrival events themselves (``clients.open_arrival``, ``trace_arrival``,
``think_clock``) issue requests, so they sit above the request path, in
``clients.py``; this module is below it.
"""

from __future__ import annotations

import math

from redsim.model import events
from redsim.model.jit import leaf, step
from redsim.model.rng import draw, exponential
from redsim.model.sizing import memoryless_group, request_slots
from redsim.model.state import (
    EV_ISSUE,
    EV_RESUME,
    KIND_CLOSED,
    KIND_OPEN,
    KIND_TRACE,
    MAX_PASS_REC,
    N_PASS,
    N_PASS_FIELDS,
    STREAMS_PER_GROUP,
)

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "N_PASS", "i8", "-", "counter",
     "trace passes recorded in rc_passes so far (at most MAX_PASS_REC)"),
    ("rq", "group", "i8", "-", "config", "the client group this request slot belongs to"),
    ("rq", "pool", "i8", "-", "state",
     "the pool (process) its request uses: fixed for closed-loop sources, drawn per arrival "
     "otherwise"),
    ("rq", "trace_pos", "i8", "-", "state", "trace sources: next line to send"),
    ("rq", "active", "i8", "-", "state",
     "closed/trace sources: 0 once a `replay: once` trace is done"),
    ("rq", "free_stack", "i8[]", "-", "state",
     "open-loop/recorded-trace/memoryless groups: free slots, by group"),
    ("rq", "pass_t0", "f8[]", "s", "state",
     "trace sources: when the current pass over the trace began, s"),
    ("pl", "thinking", "i8", "-", "state", "memoryless groups: the process's threads now thinking"),
    ("pl", "park", "i8", "-", "state",
     "memoryless groups: the process's threads to park as their requests end (a phase cut "
     "threads while they were out)"),
    ("gp", "kind", "i8", "-", "config", "KIND_CLOSED, KIND_OPEN or KIND_TRACE"),
    ("gp", "slot_base", "i8", "-", "config", "first request slot (rq row) of the group"),
    ("gp", "n_slots", "i8", "-", "config",
     "request slots of the group (sources, or a bound on requests out)"),
    ("gp", "think_kind", "i8", "-", "config",
     "think time distribution: DIST_FIXED, DIST_EXPONENTIAL, ..."),
    ("gp", "think_mean", "f8", "s", "config",
     "think time's mean (closed loop and trace sources), s"),
    ("gp", "think_low", "f8", "s", "config",
     "think time's uniform low bound, s (empirical: first table point)"),
    ("gp", "think_high", "f8", "s", "config",
     "think time's uniform high bound, s (empirical: last table point)"),
    ("gp", "think_sigma", "f8", "-", "config", "think time's lognormal sigma (of the log)"),
    ("gp", "prof_start", "i8", "-", "config",
     "first segment of the group's open-loop rate profile in tb prof_*; not read by the kernel "
     "(prof_pos starts there)"),
    ("gp", "prof_end", "i8", "-", "config",
     "one past the last segment of the group's rate profile"),
    ("gp", "trace_start", "i8", "-", "config",
     "first line of the group's trace in the tb tr_* tables"),
    ("gp", "trace_end", "i8", "-", "config", "one past the last line of the group's trace"),
    ("gp", "replay_loop", "i8", "-", "config",
     "1: replay loop (the trace starts over); 0: replay once"),
    ("gp", "recorded", "i8", "-", "config",
     "1: a trace replayed at its recorded times (trace-timing recorded)"),
    ("gp", "start", "f8", "s", "config",
     "when the group starts sending (start), s from the run's start"),
    ("gp", "stream", "i8", "-", "config", "first of this group's random streams"),
    ("gp", "prof_pos", "i8", "-", "state", "open loop: current profile segment"),
    ("gp", "trace_t0", "f8", "s", "state", "recorded trace: simulated time of line 0"),
    ("gp", "trace_next", "i8", "-", "state", "recorded trace: next line to send"),
    ("gp", "free_n", "i8", "-", "state",
     "free request slots (open loop / recorded trace / memoryless)"),
    ("gp", "memoryless", "i8", "-", "config",
     "1: closed loop with exponential think, run as one clock (clients.think_clock)"),
    ("gp", "threads", "i8", "-", "config", "sources per process"),
    ("tb", "prof_t", "f8", "s", "config",
     "each rate-profile segment's start, s from the group's start"),
    ("tb", "prof_rate", "f8", "1/s", "config",
     "each rate-profile segment's open-loop arrival rate, requests/s"),
    ("tb", "tr_cmd", "i8", "-", "config", "each trace line's command id"),
    ("tb", "tr_req_bytes", "i8", "B", "config", "each trace line's request bytes"),
    ("tb", "tr_reply_bytes", "i8", "B", "config",
     "each trace line's reply bytes; -1 = a read of a stored value"),
    ("tb", "tr_elems", "i8", "-", "config", "each trace line's keys, members or fields (k)"),
    ("tb", "tr_value", "i8", "B", "config", "each trace line's value bytes"),
    ("tb", "tr_time", "f8", "s", "config", "each trace line's recorded time, s"),
    ("tb", "tr_key", "i8", "-", "config",
     "each trace line's key id in its group's keyspace; -1 = none tracked (command files)"),
    ("tb", "tr_big_first", "i8", "B", "config",
     "each trace line's first big argument offset (protocol.big_args)"),
    ("tb", "tr_big_period", "i8", "B", "config", "each trace line's bytes between big arguments"),
    ("tb", "tr_big_n", "i8", "-", "config", "each trace line's big bulk arguments; 0 = none"),
    ("tb", "tr_big_len", "i8", "B", "config",
     "each trace line's big argument length with its CRLF"),
    ("rc", "passes", "f8", "-", "record",
     "one row of PASS_FIELDS per completed pass of a trace source"),
)


@leaf
def resume(w, p):
    """A thread of memoryless pool p is free to think again, unless a phase
    cut the process's threads while it was out (``pl_park``)."""
    if w.pl_park[p] > 0:
        w.pl_park[p] -= 1
    else:
        w.pl_thinking[p] += 1


@leaf
def think_time(w, g):
    """One think time of group g's sources, seconds."""
    return draw(w, w.gp_stream[g], w.gp_think_kind[g], w.gp_think_mean[g], w.gp_think_low[g],
                w.gp_think_high[g], w.gp_think_sigma[g])


@leaf
def free_slot(w, g, r):
    """Request slot r of group g (open loop, recorded trace, memoryless) is free again."""
    w.rq_free_stack[w.gp_slot_base[g] + w.gp_free_n[g]] = r
    w.gp_free_n[g] += 1


@leaf
def record_pass(w, g, r, te):
    """Source r of trace group g got the reply to the trace's last line at te:
    one pass (one endpoint call) done, if it began at line 0."""
    t0 = w.rq_pass_t0[r]
    n = w.I[N_PASS]
    if t0 >= 0.0 and n < MAX_PASS_REC:
        w.rc_passes[n * N_PASS_FIELDS] = g
        w.rc_passes[n * N_PASS_FIELDS + 1] = t0
        w.rc_passes[n * N_PASS_FIELDS + 2] = te
        w.I[N_PASS] = n + 1
    w.rq_pass_t0[r] = -1.0


@step
def finish_source(w, r, te, backoff):
    """What a source does after its request ends at te (or is rejected, then
    waiting ``backoff`` s first): think and go again, or free the slot."""
    g = w.rq_group[r]
    kind = w.gp_kind[g]
    if kind == KIND_OPEN or (kind == KIND_TRACE and w.gp_recorded[g]):
        free_slot(w, g, r)
        return
    if w.gp_memoryless[g]:
        free_slot(w, g, r)
        p = w.rq_pool[r]
        if backoff > 0.0:
            events.push(w, te + backoff, EV_RESUME, p)
        else:
            resume(w, p)
        return
    te += backoff
    if kind == KIND_TRACE:
        n_lines = w.gp_trace_end[g] - w.gp_trace_start[g]
        nxt = w.rq_trace_pos[r] + w.gp_pipeline[g]
        if nxt + w.gp_pipeline[g] > n_lines:
            record_pass(w, g, r, te - backoff)
            if not w.gp_replay_loop[g]:
                w.rq_active[r] = 0
                return
            nxt = 0
        w.rq_trace_pos[r] = nxt
    events.push(w, te + think_time(w, g), EV_ISSUE, r)


@leaf
def take_slot(w, g):
    """A free request slot of open-loop/recorded-trace group g, or -1."""
    if w.gp_free_n[g] == 0:
        return -1
    w.gp_free_n[g] -= 1
    return w.rq_free_stack[w.gp_slot_base[g] + w.gp_free_n[g]]


@step
def next_arrival(w, g, te):
    """Time of the next Poisson arrival after te, for a piecewise-constant rate.

    Time-rescaling: draw E ~ Exp(1) and walk the profile until the integrated
    rate reaches E, so a rate change between arrivals is honoured exactly.
    Profile times are relative to the group's start.
    """
    prof_end = w.gp_prof_end[g]
    start = w.gp_start[g]
    e = exponential(w, w.gp_stream[g], 1.0)
    k = w.gp_prof_pos[g]
    t = te - start
    while True:
        rate = w.tb_prof_rate[k]
        seg_end = w.tb_prof_t[k + 1] if k + 1 < prof_end else math.inf
        if rate > 0.0 and t + e / rate < seg_end:
            w.gp_prof_pos[g] = k
            return start + t + e / rate
        if seg_end == math.inf:
            return math.inf
        e -= rate * (seg_end - t)
        t = seg_end
        k += 1


@leaf
def think_clock_gap(w, g):
    """Time to the next tick of memoryless group g's think clock: Exp(N/Z), s."""
    n = w.gp_processes[g] * w.gp_threads[g]
    return exponential(w, w.gp_stream[g], w.gp_think_mean[g] / n)


# ---- configuration (Python, once per run) ---------------------------------------------

_KIND = {"closed": KIND_CLOSED, "open": KIND_OPEN, "trace": KIND_TRACE}


def configure(b) -> None:
    """The sources: each group's kind, request slots (one per closed or trace
    source, fixed to its process's pool; a free list otherwise), think time,
    open-loop rate profile and replayed trace (``b.traces``: the driver parsed
    it), its first random stream, and each pool's thinking threads (memoryless
    groups). Runs after ``pools.configure`` (a closed source's pool is its
    process's, ``gp_pool_base``).

    Sizes for later steps: ``slots`` (request slots) and ``timed`` (sources
    that draw a think time each: closed, not recorded, not memoryless).
    """
    import numpy as np

    from redsim.model import collection
    from redsim.model.blueprint import f64, i64

    groups = b.scenario.clients
    G = len(groups)
    pool_base = b.part("gp")["pool_base"]
    slot_group, slot_pool = [], []
    gp: dict[str, list] = {k: [] for k in (
        "kind", "slot_base", "n_slots", "think_kind", "think_mean", "think_low", "think_high",
        "think_sigma", "prof_start", "prof_end", "trace_start", "trace_end", "replay_loop",
        "recorded", "start", "stream", "prof_pos", "trace_t0", "trace_next", "free_n",
        "memoryless", "threads")}
    prof_t, prof_rate = [], []
    tr_parts = []
    tr_parts_keys = []
    tr_len = 0
    coll_lo = collection.first_key_rows(b.scenario, b.traces)  # a command file's collections
    for gi, grp in enumerate(groups):
        kind = _KIND[grp.kind]
        gp["kind"].append(kind)
        # Request slots: one per source for closed loops; a bounded free list for
        # arrivals (each process can hold max-size in flight + max-waiters waiting).
        gp["slot_base"].append(len(slot_group))
        recorded = kind == KIND_TRACE and grp.trace_timing == "recorded"
        memoryless = memoryless_group(grp)
        n_slots = request_slots(grp)
        if kind == KIND_OPEN or recorded or memoryless:
            slot_pool.extend([-1] * n_slots)
        else:
            for p in range(grp.processes):
                slot_pool.extend([int(pool_base[gi]) + p] * grp.threads)
        slot_group.extend([gi] * n_slots)
        gp["n_slots"].append(n_slots)
        k, mean, lo, hi, sig = b.dist(grp.think)
        gp["think_kind"].append(k)
        gp["think_mean"].append(mean)
        gp["think_low"].append(lo)
        gp["think_high"].append(hi)
        gp["think_sigma"].append(sig)
        gp["prof_start"].append(len(prof_t))
        if kind == KIND_OPEN:
            if grp.profile:
                for step_ in grp.profile:
                    prof_t.append(step_.at)
                    prof_rate.append(step_.rate)
            else:  # a rate, and the rates of its phases from their times on
                steps = {0.0: grp.rate}
                steps.update({p.at: p.rate for p in grp.phases or () if p.rate is not None})
                for at in sorted(steps):
                    prof_t.append(at)
                    prof_rate.append(steps[at])
        gp["prof_end"].append(len(prof_t))
        gp["trace_start"].append(tr_len)
        if kind == KIND_TRACE:
            tr = b.trace(gi)
            tr_parts.append(tr)
            tr_parts_keys.append((tr, grp.keyspace.keys, coll_lo[gi]))
            tr_len += len(tr.cmd)
        gp["trace_end"].append(tr_len)
        gp["replay_loop"].append(1 if grp.replay == "loop" else 0)
        gp["recorded"].append(1 if recorded else 0)
        gp["start"].append(grp.start)
        gp["stream"].append(1 + STREAMS_PER_GROUP * gi)
        gp["prof_pos"].append(gp["prof_start"][-1])
        gp["trace_t0"].append(grp.start)
        gp["trace_next"].append(0)
        gp["free_n"].append(n_slots if (kind == KIND_OPEN or recorded or memoryless) else 0)
        gp["memoryless"].append(1 if memoryless else 0)
        gp["threads"].append(grp.threads)

    R = len(slot_group)
    floats = ("think_mean", "think_low", "think_high", "think_sigma", "start", "trace_t0")
    b.fill("gp", **{f: (f64(v) if f in floats else i64(v)) for f, v in gp.items()})
    b.fill("pl", thinking=i64([grp.threads for grp in groups for _ in range(grp.processes)]),
           park=np.zeros(len(b.part("pl")["group"]), np.int64))
    free_stack = np.arange(R, dtype=np.int64)[::-1].copy()
    for g in range(G):  # each group's free list pops its lowest slot first
        base, n = gp["slot_base"][g], gp["n_slots"][g]
        free_stack[base:base + n] = np.arange(base + n - 1, base - 1, -1)
    b.fill("rq",
           group=i64(slot_group), pool=i64(slot_pool), trace_pos=np.zeros(R, np.int64),
           active=np.ones(R, np.int64), free_stack=free_stack, pass_t0=np.full(R, -1.0))
    b.fill("tb", prof_t=f64(prof_t or [0.0]), prof_rate=f64(prof_rate or [0.0]),
           **_trace_tables(tr_parts, tr_parts_keys))
    b.fill("rc", passes=np.zeros((MAX_PASS_REC if any(g.kind == "trace" for g in groups) else 1)
                                 * N_PASS_FIELDS))
    b.size.slots = R
    b.size.timed = sum(gp["n_slots"][g] for g in range(G)
                       if gp["kind"][g] != KIND_OPEN and not gp["recorded"][g]
                       and not gp["memoryless"][g])


def _trace_tables(tr_parts: list, tr_parts_keys: list) -> dict:
    """The trace groups' lines, group after group, as ``tb_tr_*`` fields (one
    placeholder line without a trace group)."""
    import numpy as np

    if tr_parts:
        tr = {f: np.concatenate([getattr(t, f) for t in tr_parts])
              for f in ("cmd", "req_bytes", "reply_bytes", "elems", "value", "time", "big")}
        # A keyed trace names keys 0..n-1 by first appearance; they wrap onto the
        # group's keyspace (traces/ checks they fit when the scenario loads). A
        # command file's collection keys have their own rows (collection.layout).
        tr["key"] = np.concatenate([
            np.where(t.coll_key >= 0, lo + t.coll_key, -1) if t.coll_key is not None
            else np.where(t.key_ids() >= 0, t.key_ids() % keys, -1)
            for t, keys, lo in tr_parts_keys])
    else:
        tr = {f: np.zeros(1, np.float64 if f == "time" else np.int64)
              for f in ("cmd", "req_bytes", "reply_bytes", "elems", "value", "time")}
        tr["big"] = np.zeros((1, 4), np.int64)
        tr["key"] = np.full(1, -1, np.int64)
    return dict(tr_cmd=tr["cmd"], tr_req_bytes=tr["req_bytes"], tr_reply_bytes=tr["reply_bytes"],
                tr_elems=tr["elems"], tr_value=tr["value"], tr_time=tr["time"], tr_key=tr["key"],
                **{f"tr_big_{f}": tr["big"][:, j].copy()
                   for j, f in enumerate(("first", "period", "n", "len"))})
