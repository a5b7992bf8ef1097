"""The client side: request sources and their connection pools.

No Redis source: the client population — app processes, their threads or
arrival streams, and their connection pools — lives outside Redis; what it
follows is named below (real pool libraries' behaviour).

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

Closed loops with exponential think times run as one clock per group
(*uniformization*, Jensen 1953): a Poisson clock at rate N/Z — N threads, mean
think Z — ticks on a thread drawn uniformly, and the tick issues a request if
that thread is thinking and does nothing otherwise. Each thread then sees a
rate-1/Z Poisson clock while it thinks, which is exactly an exponential think
time, because the exponential is memoryless. Only each process's count of
thinking threads is kept, and request slots come from a free list sized for
what can be out at once, so three million sources cost what a few thousand do.
Other think distributions keep one timer per source.

All functions here run on client time: the kernel processes these events in
(time, sequence) order from the event list (``events.py``), independently of where the main
thread's clock is.
"""

from __future__ import annotations

import math

from redsim.model import client_memory, events
from redsim.model.jit import entry, leaf, step
from redsim.model.ring import wrap
from redsim.model.rng import draw, exponential, uniform
from redsim.model.state import (
    BUSY_CONNS,
    CONNECTED,
    EV_ARRIVE,
    EV_ISSUE,
    EV_OPEN_ARRIVAL,
    EV_REAP,
    EV_REPLY,
    EV_RESUME,
    EV_THINK_CLOCK,
    EV_TRACE,
    IN_FLIGHT,
    KIND_OPEN,
    KIND_TRACE,
    LINE_ARRIVE,
    MAX_PASS_REC,
    N_GROUPS,
    N_PASS,
    N_PASS_FIELDS,
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
from redsim.model.world import as_world
from redsim.observe.bins import add_interval, count, record_latency

# ---- pools -------------------------------------------------------------------


@leaf
def pool_checkout(w, p):
    """Take an idle connection from pool p (LIFO or FIFO); -1 if none is idle."""
    n = w.pl_idle_n[p]
    if n == 0:
        return -1
    size = w.pl_max_size[p]
    if w.pl_lifo[p]:
        i = wrap(w.pl_idle_head[p] + n - 1, size)
    else:
        i = w.pl_idle_head[p]
        w.pl_idle_head[p] = wrap(i + 1, size)
    w.pl_idle_n[p] = n - 1
    return w.pl_idle_ring[w.pl_base[p] + i]


@leaf
def pool_return(w, p, c):
    """Put connection c back as the newest idle connection of pool p."""
    i = wrap(w.pl_idle_head[p] + w.pl_idle_n[p], w.pl_max_size[p])
    w.pl_idle_ring[w.pl_base[p] + i] = c
    w.pl_idle_n[p] += 1


@step
def open_connection(w, p, te):
    """Open a new connection in pool p (the caller checked a slot is free)."""
    I = w.I
    w.pl_free_n[p] -= 1
    c = w.pl_free_slots[w.pl_base[p] + w.pl_free_n[p]]
    w.pl_n_open[p] += 1
    w.cn_is_open[c] = 1
    w.cn_new[c] = 1  # Redis pays accept/createClient when it first reads it
    I[CONNECTED] += 1
    I[STAT_CONNECTIONS] += 1
    count(w, WI_OPENED, te, 1)
    return c


@step
def close_connection(w, c, te):
    """The client closes an idle connection; Redis frees the client later."""
    I = w.I
    p = w.cn_pool[c]
    w.cn_is_open[c] = 0
    client_memory.free_client(w, c)  # freed here, not at freeClient on the main thread
    w.pl_n_open[p] -= 1
    w.pl_free_slots[w.pl_base[p] + w.pl_free_n[p]] = c
    w.pl_free_n[p] += 1
    I[CONNECTED] -= 1
    I[PENDING_CLOSE] += 1  # the EOF is read (and freeClient runs) on the main thread
    count(w, WI_CLOSED, te, 1)


@step
def reap(w, g, te):
    """A group's pool reaper: close connections idle for ``idle_timeout`` or more.

    The oldest idle connection is always at the head of the idle ring (returns
    push at the tail), for LIFO and FIFO checkout alike.
    """
    timeout = w.gp_idle_timeout[g]
    first = w.gp_pool_base[g]
    nproc = w.gp_processes[g]
    interval = w.gp_reap_interval[g]
    for p in range(first, first + nproc):
        while w.pl_idle_n[p] > 0:
            c = w.pl_idle_ring[w.pl_base[p] + w.pl_idle_head[p]]
            if te - w.cn_t_idle[c] < timeout:
                break
            w.pl_idle_head[p] = wrap(w.pl_idle_head[p] + 1, w.pl_max_size[p])
            w.pl_idle_n[p] -= 1
            close_connection(w, c, te)
    events.push(w, te + interval, EV_REAP, g)


# ---- requests ----------------------------------------------------------------


@step
def send(w, c, r, t_got, t_send):
    """Request r leaves on connection c at t_send (it got the connection at t_got)."""
    I = w.I
    F = w.F
    w.cn_req[c] = r
    w.cn_cmds_left[c] = w.gp_pipeline[w.rq_group[r]]
    w.cn_t_checkout[c] = t_got
    I[BUSY_CONNS] += 1
    add_interval(w, W_WAITERS, w.rq_t_issue[r], t_got)
    if t_send == t_got:
        events.line_push(w, LINE_ARRIVE, t_send + F[RTT_HALF], c)
    else:  # after a handshake: out of step with the line
        events.push(w, t_send + F[RTT_HALF], EV_ARRIVE, c)


@step
def issue(w, r, te):
    """Request slot r is issued at te: get a connection, open one, or wait."""
    I = w.I
    F = w.F
    w.rq_t_issue[r] = te
    if w.rq_trace_pos[r] == 0 and w.gp_kind[w.rq_group[r]] == KIND_TRACE:
        w.rq_pass_t0[r] = te  # a pass over the trace (one endpoint call) begins
    I[REQ_ISSUED] += 1
    I[IN_FLIGHT] += 1
    count(w, WI_ISSUED, te, 1)
    p = w.rq_pool[r]
    c = pool_checkout(w, p)
    if c >= 0:
        send(w, c, r, te, te)
    elif w.pl_n_open[p] < w.pl_max_size[p]:
        c = open_connection(w, p, te)
        # TCP handshake: one round trip before the request can be sent.
        send(w, c, r, te, te + 2.0 * F[RTT_HALF])
    elif w.pl_wait_n[p] < w.gp_max_waiters[w.rq_group[r]]:
        w.rq_next[r] = -1
        if w.pl_wait_n[p] == 0:
            w.pl_wait_head[p] = r
        else:
            w.rq_next[w.pl_wait_tail[p]] = r
        w.pl_wait_tail[p] = r
        w.pl_wait_n[p] += 1
        I[WAITERS] += 1
    else:
        # The pool's wait queue is full: the client gives up on this request.
        I[IN_FLIGHT] -= 1
        I[REQ_REJECTED] += 1
        count(w, WI_REJECTED, te, 1)
        finish_source(w, r, te, w.gp_retry_backoff[w.rq_group[r]])


@leaf
def think_time(w, g):
    """One think time of group g's sources, seconds."""
    return draw(w, w.gp_stream[g], w.gp_think_kind[g], w.gp_think_mean[g], w.gp_think_low[g],
                w.gp_think_high[g], w.gp_think_sigma[g])


@leaf
def free_slot(w, g, r):
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
            w.pl_thinking[p] += 1
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


@step
def complete(w, c, te):
    """The last reply byte of connection c's request reached the client at te."""
    I = w.I
    r = w.cn_req[c]
    ti = w.rq_t_issue[r]
    record_latency(w, te, te - ti)
    add_interval(w, W_IN_SYSTEM, ti, te)
    add_interval(w, W_BUSY_CONNS, w.cn_t_checkout[c], te)
    I[REQ_DONE] += 1
    I[IN_FLIGHT] -= 1
    I[BUSY_CONNS] -= 1
    w.cn_req[c] = -1
    p = w.cn_pool[c]
    if w.pl_wait_n[p] > 0:
        # Hand the connection straight to the oldest waiter.
        r2 = w.pl_wait_head[p]
        w.pl_wait_head[p] = w.rq_next[r2]
        w.pl_wait_n[p] -= 1
        I[WAITERS] -= 1
        send(w, c, r2, te, te)
    else:
        w.cn_t_idle[c] = te
        pool_return(w, p, c)
    finish_source(w, r, te, 0.0)


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


@step
def _arrival_slot(w, g, te):
    """Slot for an arrival of group g on a uniformly chosen process, or -1 (rejected)."""
    I = w.I
    s = w.gp_stream[g]
    first = w.gp_pool_base[g]
    nproc = w.gp_processes[g]
    u = uniform(w, s)
    r = take_slot(w, g)
    if r < 0:
        I[REQ_REJECTED] += 1
        count(w, WI_REJECTED, te, 1)
        return -1
    w.rq_pool[r] = first + int(u * nproc)
    return r


@step
def open_arrival(w, g, te):
    """An open-loop arrival at te: pick a process, issue, schedule the next."""
    r = _arrival_slot(w, g, te)
    if r >= 0:
        issue(w, r, te)
    t_next = next_arrival(w, g, te)
    if t_next < math.inf:
        events.push(w, t_next, EV_OPEN_ARRIVAL, g)


@leaf
def think_clock_gap(w, g):
    """Time to the next tick of memoryless group g's think clock: Exp(N/Z), s."""
    n = w.gp_processes[g] * w.gp_threads[g]
    return exponential(w, w.gp_stream[g], w.gp_think_mean[g] / n)


@step
def think_clock(w, g, te):
    """A tick of memoryless group g's clock: it lands on a uniformly drawn thread
    (one uniform picks the process and, by its fraction, the thread within it)
    and issues a request if that thread is thinking."""
    nproc = w.gp_processes[g]
    x = uniform(w, w.gp_stream[g]) * nproc
    i = int(x)
    p = w.gp_pool_base[g] + i
    if (x - i) * w.gp_threads[g] < w.pl_thinking[p]:
        r = take_slot(w, g)
        if r < 0:
            raise RuntimeError("no free request slot for a memoryless closed loop (a redsim bug)")
        w.pl_thinking[p] -= 1
        w.rq_pool[r] = p
        issue(w, r, te)
    events.push(w, te + think_clock_gap(w, g), EV_THINK_CLOCK, g)


@step
def trace_arrival(w, g, te):
    """A recorded-time trace line is due: send it, schedule the next line."""
    first = w.gp_trace_start[g]
    n = w.gp_trace_end[g] - first
    loop = w.gp_replay_loop[g]
    line = w.gp_trace_next[g]
    r = _arrival_slot(w, g, te)
    if r >= 0:
        w.rq_trace_pos[r] = line
        issue(w, r, te)
    line += 1
    if line >= n:
        if not loop:
            return
        # Loop: the next pass starts one mean inter-line gap after the last line.
        span = w.tb_tr_time[first + n - 1] - w.tb_tr_time[first]
        gap = span / (n - 1) if n > 1 else 1.0
        w.gp_trace_t0[g] += span + gap
        line = 0
    w.gp_trace_next[g] = line
    t_line = w.gp_trace_t0[g] + w.tb_tr_time[first + line] - w.tb_tr_time[first]
    events.push(w, t_line, EV_TRACE, g)


@step
def handle_event(w, kind, ident, te):
    """Dispatch one client-side event (EV_ARRIVE belongs to the server loop)."""
    if kind == EV_REPLY:
        complete(w, ident, te)
    elif kind == EV_ISSUE:
        if w.rq_active[ident]:
            issue(w, ident, te)
    elif kind == EV_OPEN_ARRIVAL:
        open_arrival(w, ident, te)
    elif kind == EV_TRACE:
        trace_arrival(w, ident, te)
    elif kind == EV_THINK_CLOCK:
        think_clock(w, ident, te)
    elif kind == EV_RESUME:
        w.pl_thinking[ident] += 1
    elif kind == EV_REAP:
        reap(w, ident, te)


@entry
def start_sources(world):
    """Put every source's first event in the event list.

    Closed-loop and trace sources start after one think time drawn from their
    own distribution (a population with exponential think then starts in its
    stationary arrival pattern rather than all at once); trace sources are
    spread over the trace (source i of n starts at line i·L/n). Open loops get
    their first arrival; pools with an idle timeout get their reaper.
    """
    w = as_world(world)
    I = w.I
    for g in range(I[N_GROUPS]):
        kind = w.gp_kind[g]
        start = w.gp_start[g]
        if kind == KIND_OPEN:
            t = next_arrival(w, g, start)
            if t < math.inf:
                events.push(w, t, EV_OPEN_ARRIVAL, g)
        elif kind == KIND_TRACE and w.gp_recorded[g]:
            events.push(w, start, EV_TRACE, g)
        elif w.gp_memoryless[g]:  # every thread starts thinking at the group's start
            events.push(w, start + think_clock_gap(w, g), EV_THINK_CLOCK, g)
        else:
            b = w.gp_slot_base[g]
            n = w.gp_n_slots[g]
            lines = w.gp_trace_end[g] - w.gp_trace_start[g]
            for i in range(n):
                r = b + i
                if kind == KIND_TRACE:
                    line = (i * lines) // n
                    w.rq_trace_pos[r] = line if line + w.gp_pipeline[g] <= lines else 0
                events.push(w, start + think_time(w, g), EV_ISSUE, r)
        if w.gp_idle_timeout[g] > 0:
            events.push(w, start + w.gp_reap_interval[g], EV_REAP, g)
