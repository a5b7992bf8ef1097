"""The client side: request sources and their connection pools.

A client group is a set of app processes, each owning one connection pool of
at most ``max_size`` connections. Sources are the app threads (closed loop:
send, wait for the reply, think; trace: the same, replaying a command file) or
a Poisson stream of arrivals (open loop). A request takes a connection from its
process's pool — the most recently returned one (LIFO) or the least (FIFO) —
or opens a new one if the pool is below its maximum (connections are opened
lazily, one round trip before the request can leave), or waits in the pool's
FIFO waiter list. A reaper closes connections idle longer than
``idle_timeout``. This is how real pools behave (redis-py's
BlockingConnectionPool, Jedis/commons-pool, go-redis), and it is what makes the
number of busy connections follow λ·R.

All functions here run on client time: the kernel processes these events in
(time, sequence) order from the event heap, independently of where the main
thread's clock is.
"""

from __future__ import annotations

import math

from redsim.model import heap
from redsim.model.jit import entry, leaf, step
from redsim.model.rng import draw, exponential, uniform
from redsim.model.state import (
    BUSY_CONNS,
    CONNECTED,
    EV_ARRIVE,
    EV_ISSUE,
    EV_OPEN_ARRIVAL,
    EV_REAP,
    EV_REPLY,
    EV_TRACE,
    IN_FLIGHT,
    KIND_OPEN,
    KIND_TRACE,
    PENDING_CLOSE,
    REQ_DONE,
    REQ_ISSUED,
    REQ_REJECTED,
    RTT_HALF,
    STAT_CONNECTIONS,
    W_BUSY_CONNS,
    W_IN_SYSTEM,
    W_WAITERS,
    WAITERS,
    WI_CLOSED,
    WI_ISSUED,
    WI_OPENED,
    WI_REJECTED,
)
from redsim.observe.bins import add_interval, count, record_latency

# ---- pools -------------------------------------------------------------------
# Kernel style: bind arrays at the top of each function, before any call (see
# redsim/observe/bins.py for why).


@leaf
def pool_checkout(w, p):
    """Take an idle connection from pool p (LIFO or FIFO); -1 if none is idle."""
    idle_n = w.pl.idle_n
    idle_head = w.pl.idle_head
    max_size = w.pl.max_size
    lifo = w.pl.lifo
    ring = w.pl.idle_ring
    base = w.pl.base
    n = idle_n[p]
    if n == 0:
        return -1
    size = max_size[p]
    if lifo[p]:
        i = (idle_head[p] + n - 1) % size
    else:
        i = idle_head[p]
        idle_head[p] = (i + 1) % size
    idle_n[p] = n - 1
    return ring[base[p] + i]


@leaf
def pool_return(w, p, c):
    """Put connection c back as the newest idle connection of pool p."""
    idle_n = w.pl.idle_n
    ring = w.pl.idle_ring
    i = (w.pl.idle_head[p] + idle_n[p]) % w.pl.max_size[p]
    ring[w.pl.base[p] + i] = c
    idle_n[p] += 1


@step
def open_connection(w, p, te):
    """Open a new connection in pool p (the caller checked a slot is free)."""
    free_n = w.pl.free_n
    free_slots = w.pl.free_slots
    base = w.pl.base
    n_open = w.pl.n_open
    is_open = w.cn.is_open
    new = w.cn.new
    I = w.I
    free_n[p] -= 1
    c = free_slots[base[p] + free_n[p]]
    n_open[p] += 1
    is_open[c] = 1
    new[c] = 1  # Redis pays accept/createClient when it first reads it
    I[CONNECTED] += 1
    I[STAT_CONNECTIONS] += 1
    count(w, WI_OPENED, te, 1)
    return c


@step
def close_connection(w, c, te):
    """The client closes an idle connection; Redis frees the client later."""
    free_n = w.pl.free_n
    free_slots = w.pl.free_slots
    base = w.pl.base
    n_open = w.pl.n_open
    is_open = w.cn.is_open
    pool = w.cn.pool
    I = w.I
    p = pool[c]
    is_open[c] = 0
    n_open[p] -= 1
    free_slots[base[p] + free_n[p]] = c
    free_n[p] += 1
    I[CONNECTED] -= 1
    I[PENDING_CLOSE] += 1  # the EOF is read (and freeClient runs) on the main thread
    count(w, WI_CLOSED, te, 1)


@step
def reap(w, g, te):
    """A group's pool reaper: close connections idle for ``idle_timeout`` or more.

    The oldest idle connection is always at the head of the idle ring (returns
    push at the tail), for LIFO and FIFO checkout alike.
    """
    idle_n = w.pl.idle_n
    idle_head = w.pl.idle_head
    ring = w.pl.idle_ring
    base = w.pl.base
    max_size = w.pl.max_size
    t_idle = w.cn.t_idle
    timeout = w.gp.idle_timeout[g]
    first = w.gp.pool_base[g]
    nproc = w.gp.processes[g]
    interval = w.gp.reap_interval[g]
    for p in range(first, first + nproc):
        while idle_n[p] > 0:
            c = ring[base[p] + idle_head[p]]
            if te - t_idle[c] < timeout:
                break
            idle_head[p] = (idle_head[p] + 1) % max_size[p]
            idle_n[p] -= 1
            close_connection(w, c, te)
    heap.push(w, te + interval, EV_REAP, g)


# ---- requests ----------------------------------------------------------------


@step
def send(w, c, r, t_got, t_send):
    """Request r leaves on connection c at t_send (it got the connection at t_got)."""
    req = w.cn.req
    cmds_left = w.cn.cmds_left
    t_checkout = w.cn.t_checkout
    pipeline = w.gp.pipeline
    group = w.rq.group
    t_issue = w.rq.t_issue
    I = w.I
    F = w.F
    req[c] = r
    cmds_left[c] = pipeline[group[r]]
    t_checkout[c] = t_got
    I[BUSY_CONNS] += 1
    add_interval(w, W_WAITERS, t_issue[r], t_got)
    heap.push(w, t_send + F[RTT_HALF], EV_ARRIVE, c)


@step
def issue(w, r, te):
    """Request slot r is issued at te: get a connection, open one, or wait."""
    t_issue = w.rq.t_issue
    pool = w.rq.pool
    group = w.rq.group
    nxt = w.rq.next
    n_open = w.pl.n_open
    max_size = w.pl.max_size
    wait_n = w.pl.wait_n
    wait_head = w.pl.wait_head
    wait_tail = w.pl.wait_tail
    max_waiters = w.gp.max_waiters
    I = w.I
    F = w.F
    t_issue[r] = te
    I[REQ_ISSUED] += 1
    I[IN_FLIGHT] += 1
    count(w, WI_ISSUED, te, 1)
    p = pool[r]
    c = pool_checkout(w, p)
    if c >= 0:
        send(w, c, r, te, te)
    elif n_open[p] < max_size[p]:
        c = open_connection(w, p, te)
        # TCP handshake: one round trip before the request can be sent.
        send(w, c, r, te, te + 2.0 * F[RTT_HALF])
    elif wait_n[p] < max_waiters[group[r]]:
        nxt[r] = -1
        if wait_n[p] == 0:
            wait_head[p] = r
        else:
            nxt[wait_tail[p]] = r
        wait_tail[p] = r
        wait_n[p] += 1
        I[WAITERS] += 1
    else:
        # The pool's wait queue is full: the client gives up on this request.
        I[IN_FLIGHT] -= 1
        I[REQ_REJECTED] += 1
        count(w, WI_REJECTED, te, 1)
        finish_source(w, r, te)


@step
def finish_source(w, r, te):
    """What a source does after its request ends: think and go again, or free the slot."""
    group = w.rq.group
    trace_pos = w.rq.trace_pos
    active = w.rq.active
    free_stack = w.rq.free_stack
    kind_ = w.gp.kind
    recorded = w.gp.recorded
    slot_base = w.gp.slot_base
    free_n = w.gp.free_n
    pipeline = w.gp.pipeline
    trace_start = w.gp.trace_start
    trace_end = w.gp.trace_end
    replay_loop = w.gp.replay_loop
    stream = w.gp.stream
    tk = w.gp.think_kind
    tm = w.gp.think_mean
    tl = w.gp.think_low
    th = w.gp.think_high
    ts = w.gp.think_sigma
    buf = w.rg.buf
    pos = w.rg.pos
    I = w.I
    g = group[r]
    kind = kind_[g]
    if kind == KIND_OPEN or (kind == KIND_TRACE and recorded[g]):
        free_stack[slot_base[g] + free_n[g]] = r
        free_n[g] += 1
        return
    if kind == KIND_TRACE:
        n_lines = trace_end[g] - trace_start[g]
        nxt = trace_pos[r] + pipeline[g]
        if nxt + pipeline[g] > n_lines:
            if not replay_loop[g]:
                active[r] = 0
                return
            nxt = 0
        trace_pos[r] = nxt
    think = draw(tk[g], tm[g], tl[g], th[g], ts[g], buf, pos, I, stream[g])
    heap.push(w, te + think, EV_ISSUE, r)


@step
def complete(w, c, te):
    """The last reply byte of connection c's request reached the client at te."""
    req = w.cn.req
    t_checkout = w.cn.t_checkout
    t_idle = w.cn.t_idle
    pool = w.cn.pool
    t_issue = w.rq.t_issue
    nxt = w.rq.next
    wait_n = w.pl.wait_n
    wait_head = w.pl.wait_head
    I = w.I
    r = req[c]
    ti = t_issue[r]
    record_latency(w, te, te - ti)
    add_interval(w, W_IN_SYSTEM, ti, te)
    add_interval(w, W_BUSY_CONNS, t_checkout[c], te)
    I[REQ_DONE] += 1
    I[IN_FLIGHT] -= 1
    I[BUSY_CONNS] -= 1
    req[c] = -1
    p = pool[c]
    if wait_n[p] > 0:
        # Hand the connection straight to the oldest waiter.
        r2 = wait_head[p]
        wait_head[p] = nxt[r2]
        wait_n[p] -= 1
        I[WAITERS] -= 1
        send(w, c, r2, te, te)
    else:
        t_idle[c] = te
        pool_return(w, p, c)
    finish_source(w, r, te)


@leaf
def take_slot(w, g):
    """A free request slot of open-loop/recorded-trace group g, or -1."""
    free_n = w.gp.free_n
    slot_base = w.gp.slot_base
    free_stack = w.rq.free_stack
    if free_n[g] == 0:
        return -1
    free_n[g] -= 1
    return free_stack[slot_base[g] + free_n[g]]


@step
def next_arrival(w, g, te):
    """Time of the next Poisson arrival after te, for a piecewise-constant rate.

    Time-rescaling: draw E ~ Exp(1) and walk the profile until the integrated
    rate reaches E, so a rate change between arrivals is honoured exactly.
    Profile times are relative to the group's start.
    """
    prof_pos = w.gp.prof_pos
    prof_end = w.gp.prof_end[g]
    start = w.gp.start[g]
    s = w.gp.stream[g]
    prof_t = w.tb.prof_t
    prof_rate = w.tb.prof_rate
    buf = w.rg.buf
    pos = w.rg.pos
    I = w.I
    e = exponential(buf, pos, I, s, 1.0)
    k = prof_pos[g]
    t = te - start
    while True:
        rate = prof_rate[k]
        seg_end = prof_t[k + 1] if k + 1 < prof_end else math.inf
        if rate > 0.0 and t + e / rate < seg_end:
            prof_pos[g] = k
            return start + t + e / rate
        if seg_end == math.inf:
            return math.inf
        e -= rate * (seg_end - t)
        t = seg_end
        k += 1


@step
def _arrival_slot(w, g, te):
    """Slot for an arrival of group g on a uniformly chosen process, or -1 (rejected)."""
    buf = w.rg.buf
    pos = w.rg.pos
    pool = w.rq.pool
    I = w.I
    s = w.gp.stream[g]
    first = w.gp.pool_base[g]
    nproc = w.gp.processes[g]
    u = uniform(buf, pos, I, s)
    r = take_slot(w, g)
    if r < 0:
        I[REQ_REJECTED] += 1
        count(w, WI_REJECTED, te, 1)
        return -1
    pool[r] = first + int(u * nproc)
    return r


@step
def open_arrival(w, g, te):
    """An open-loop arrival at te: pick a process, issue, schedule the next."""
    r = _arrival_slot(w, g, te)
    if r >= 0:
        issue(w, r, te)
    t_next = next_arrival(w, g, te)
    if t_next < math.inf:
        heap.push(w, t_next, EV_OPEN_ARRIVAL, g)


@step
def trace_arrival(w, g, te):
    """A recorded-time trace line is due: send it, schedule the next line."""
    trace_next = w.gp.trace_next
    trace_t0 = w.gp.trace_t0
    trace_pos = w.rq.trace_pos
    tr_time = w.tb.tr_time
    first = w.gp.trace_start[g]
    n = w.gp.trace_end[g] - first
    loop = w.gp.replay_loop[g]
    line = trace_next[g]
    r = _arrival_slot(w, g, te)
    if r >= 0:
        trace_pos[r] = line
        issue(w, r, te)
    line += 1
    if line >= n:
        if not loop:
            return
        # Loop: the next pass starts one mean inter-line gap after the last line.
        span = tr_time[first + n - 1] - tr_time[first]
        gap = span / (n - 1) if n > 1 else 1.0
        trace_t0[g] += span + gap
        line = 0
    trace_next[g] = line
    heap.push(w, trace_t0[g] + tr_time[first + line] - tr_time[first], EV_TRACE, g)


@step
def handle_event(w, kind, ident, te):
    """Dispatch one client-side event (EV_ARRIVE belongs to the server loop)."""
    active = w.rq.active
    if kind == EV_REPLY:
        complete(w, ident, te)
    elif kind == EV_ISSUE:
        if active[ident]:
            issue(w, ident, te)
    elif kind == EV_OPEN_ARRIVAL:
        open_arrival(w, ident, te)
    elif kind == EV_TRACE:
        trace_arrival(w, ident, te)
    elif kind == EV_REAP:
        reap(w, ident, te)


@entry
def start_sources(w):
    """Put every source's first event on the heap.

    Closed-loop and trace sources start after one think time drawn from their
    own distribution (a population with exponential think then starts in its
    stationary arrival pattern rather than all at once); trace sources are
    spread over the trace (source i of n starts at line i·L/n). Open loops get
    their first arrival; pools with an idle timeout get their reaper.
    """
    kinds = w.gp.kind
    starts = w.gp.start
    recorded = w.gp.recorded
    slot_base = w.gp.slot_base
    n_slots = w.gp.n_slots
    trace_start = w.gp.trace_start
    trace_end = w.gp.trace_end
    pipeline = w.gp.pipeline
    idle_timeout = w.gp.idle_timeout
    reap_interval = w.gp.reap_interval
    stream = w.gp.stream
    tk = w.gp.think_kind
    tm = w.gp.think_mean
    tl = w.gp.think_low
    th = w.gp.think_high
    ts = w.gp.think_sigma
    trace_pos = w.rq.trace_pos
    buf = w.rg.buf
    pos = w.rg.pos
    I = w.I
    for g in range(kinds.shape[0]):
        kind = kinds[g]
        start = starts[g]
        if kind == KIND_OPEN:
            t = next_arrival(w, g, start)
            if t < math.inf:
                heap.push(w, t, EV_OPEN_ARRIVAL, g)
        elif kind == KIND_TRACE and recorded[g]:
            heap.push(w, start, EV_TRACE, g)
        else:
            b = slot_base[g]
            n = n_slots[g]
            lines = trace_end[g] - trace_start[g]
            for i in range(n):
                r = b + i
                if kind == KIND_TRACE:
                    line = (i * lines) // n
                    trace_pos[r] = line if line + pipeline[g] <= lines else 0
                think = draw(tk[g], tm[g], tl[g], th[g], ts[g], buf, pos, I, stream[g])
                heap.push(w, start + think, EV_ISSUE, r)
        if idle_timeout[g] > 0:
            heap.push(w, start + reap_interval[g], EV_REAP, g)
