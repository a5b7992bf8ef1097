"""A request's path on the client: issued, given a connection, sent, and
completed when its reply is back.

No Redis source: the client library's side of a request. ``issue`` records
when the request starts (its latency starts there) and takes a connection
from the process's pool (``pools.pool_checkout``), opens one (``connect``:
the handshake's round trip first), waits in the pool's waiter list, or is
given up when the list is full (``pool.max-waiters``). ``send`` puts it on
the connection, arms its client timeout (``arm``) and hands it to the
network (``network.to_server``); ``send_on`` dials again first if Redis
closed the pooled connection while it sat idle. ``complete`` records the
latency when the last reply byte is back, hands the connection to the
oldest waiter or back to the pool, and lets the source go on
(``sources.finish_source``). A request that fails leaves through
``request_failed`` (``client_failures.py`` says when).
"""

from __future__ import annotations

from redsim.model import events, linked_fifo, network
from redsim.model.jit import leaf, step
from redsim.model.pools import (
    can_open,
    close_connection,
    dial,
    handshake,
    open_connection,
    pool_checkout,
    pool_return,
    pop_waiter,
    refuse,
    refused_now,
    release_slot,
)
from redsim.model.sources import finish_source
from redsim.model.state import (
    EV_TIMEOUT,
    IN_FLIGHT,
    KIND_TRACE,
    REQ_DONE,
    REQ_ISSUED,
    REQ_REJECTED,
    W_BUSY_CONNS,
    W_IN_SYSTEM,
    W_WAITERS,
    WI_ISSUED,
    WI_REJECTED,
)
from redsim.observe import groups
from redsim.observe.bins import add_interval, count, record_latency

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "REQ_ISSUED", "i8", "-", "counter",
     "requests issued since start (a pool's rejections included; slotless arrivals not)"),
    ("I", "REQ_DONE", "i8", "-", "counter",
     "requests whose last reply byte reached the client, since start"),
    ("I", "REQ_REJECTED", "i8", "-", "counter",
     "requests given up since start: pool's wait queue full, or no free request slot for an "
     "arrival"),
    ("I", "IN_FLIGHT", "i8", "-", "state",
     "requests issued and not yet completed or rejected (waiting or on a connection) now"),
    ("wf", "W_IN_SYSTEM", "f8", "s", "time",
     "requests in the system (issued, not yet completed) integrated over the window, s"),
    ("wf", "W_BUSY_CONNS", "f8", "s", "time",
     "connections checked out (busy) integrated over the window, s"),
    ("wf", "W_WAITERS", "f8", "s", "time",
     "requests waiting in the pools for a connection integrated over the window, s"),
    ("wi", "WI_ISSUED", "i8", "-", "count",
     "requests issued by the clients in the window (offered load)"),
    ("wi", "WI_IN_FLIGHT", "i8", "-", "gauge",
     "requests in flight at the window's end (IN_FLIGHT)"),
    ("wi", "WI_REJECTED", "i8", "-", "count",
     "requests given up by the clients in the window (REQ_REJECTED)"),
    ("cn", "req", "i8", "-", "state", "request slot in flight on this connection, -1 if none"),
    ("cn", "cmds_left", "i8", "-", "state", "commands of the request not yet read by Redis"),
    ("cn", "t_checkout", "f8", "s", "state",
     "when the client took it from the pool for the current request"),
    ("cn", "deadline", "f8", "s", "state",
     "when the request on it times out (group timeout > 0), s"),
    ("cn", "timer", "i8", "-", "state", "1 while an EV_TIMEOUT for it is pending"),
    ("rq", "t_issue", "f8", "s", "state", "when the request was issued (think end / arrival)"),
    ("rq", "next", "i8", "-", "state", "next request in its pool's waiter list, -1 at the tail"),
    ("gp", "pipeline", "i8", "-", "config", "commands sent per request (pipeline depth)"),
    ("gp", "timeout", "f8", "s", "config", "the client timeout (timeout), s; 0 = none"),
    ("gp", "connect_timeout", "f8", "s", "config",
     "connect-timeout: a new connection's allowance for its handshake, s"),
)


@step
def connect(w, p, r, te):
    """Request r opens a new connection of pool p (a row is free and the pool is
    below its maximum) and is sent once connected, or is refused."""
    if refused_now(w):
        refuse(w, r, te)
    else:
        send(w, open_connection(w, p, te), r, te, te + handshake(w, w.rq_group[r]))


@step
def serve_waiter(w, p, te):
    """A connection of pool p closed: its oldest waiter, if any, gets a new one."""
    if w.pl_wait_n[p] > 0 and can_open(w, p):
        connect(w, p, pop_waiter(w, p), te)


@step
def send(w, c, r, t_got, t_send):
    """Request r leaves on connection c at t_send (it got the connection at t_got)."""
    g = w.rq_group[r]
    w.cn_req[c] = r
    w.cn_cmds_left[c] = w.gp_pipeline[g]
    w.cn_t_checkout[c] = t_got
    add_interval(w, W_WAITERS, w.rq_t_issue[r], t_got)
    if w.gp_timeout[g] > 0.0:
        # After a handshake, the connect timeout's allowance comes first: Redis's
        # accept and TLS work for it runs at its first read (event_loop.py).
        extra = w.gp_connect_timeout[g] if t_send > t_got else 0.0
        arm(w, c, t_send + w.gp_timeout[g] + extra)
    network.to_server(w, c, t_send, t_send == t_got)  # after a handshake: out of step


@step
def send_on(w, c, r, te):
    """Request r takes pooled connection c at te. If the server closed c while it
    sat in the pool (``timeout``, client eviction), the library sees the EOF
    and dials again in its place, one round trip before sending."""
    if w.cn_srv_closed[c]:
        w.cn_srv_closed[c] = 0
        if refused_now(w):
            release_slot(w, w.cn_pool[c], c)
            refuse(w, r, te)
        else:
            dial(w, c, te)
            send(w, c, r, te, te + handshake(w, w.rq_group[r]))
    else:
        send(w, c, r, te, te)


@leaf
def arm(w, c, deadline):
    """The request just sent on c times out at ``deadline``. One timer per
    connection at most: a pending one that fires early re-arms itself for the
    newer deadline (``timer``), so finished requests leave no events behind."""
    w.cn_deadline[c] = deadline
    if not w.cn_timer[c]:
        w.cn_timer[c] = 1
        events.push(w, deadline, EV_TIMEOUT, c)


@step
def request_failed(w, r, c, te, stat, per_group, window):
    """Request r (on connection c, or -1 if it had none) failed at te: it leaves
    the system and counts once as its kind of error — the run's counter ``I[stat]``,
    its group's ``per_group`` and the window series ``window``."""
    g = w.rq_group[r]
    add_interval(w, W_IN_SYSTEM, w.rq_t_issue[r], te)
    if c >= 0:
        add_interval(w, W_BUSY_CONNS, w.cn_t_checkout[c], te)
    w.I[IN_FLIGHT] -= 1
    w.I[stat] += 1
    per_group[g] += 1
    groups.failed(w, g, te)
    count(w, window, te, 1)


@step
def issue(w, r, te):
    """Request slot r is issued at te: get a connection, open one, or wait."""
    I = w.I
    w.rq_t_issue[r] = te
    if w.rq_trace_pos[r] == 0 and w.gp_kind[w.rq_group[r]] == KIND_TRACE:
        w.rq_pass_t0[r] = te  # a pass over the trace (one endpoint call) begins
    I[REQ_ISSUED] += 1
    I[IN_FLIGHT] += 1
    count(w, WI_ISSUED, te, 1)
    p = w.rq_pool[r]
    c = pool_checkout(w, p)
    if c >= 0:
        send_on(w, c, r, te)
    elif can_open(w, p):
        connect(w, p, r, te)  # the handshake's round trip(s) before it is sent
    elif w.pl_wait_n[p] < w.gp_max_waiters[w.rq_group[r]]:
        linked_fifo.append(w.rq_next, w.pl_wait_head, w.pl_wait_tail, w.pl_wait_n, p, r)
    else:
        # The pool's wait queue is full: the client gives up on this request.
        request_failed(w, r, -1, te, REQ_REJECTED, w.gp_rejected, WI_REJECTED)
        finish_source(w, r, te, w.gp_retry_backoff[w.rq_group[r]])


@step
def complete(w, c, te):
    """The last reply byte of connection c's request reached the client at te."""
    I = w.I
    r = w.cn_req[c]
    ti = w.rq_t_issue[r]
    record_latency(w, te, te - ti)
    groups.record(w, w.rq_group[r], te, te - ti)
    add_interval(w, W_IN_SYSTEM, ti, te)
    add_interval(w, W_BUSY_CONNS, w.cn_t_checkout[c], te)
    I[REQ_DONE] += 1
    I[IN_FLIGHT] -= 1
    w.cn_req[c] = -1
    w.rq_fails[r] = 0
    p = w.cn_pool[c]
    if w.pl_wait_n[p] > 0:
        send_on(w, c, pop_waiter(w, p), te)  # straight to the oldest waiter
    elif w.gp_on[w.cn_group[c]]:
        w.cn_t_idle[c] = te
        pool_return(w, p, c)
    else:  # the group stopped: its connections close as they come back
        close_connection(w, c, te)
    finish_source(w, r, te, 0.0)


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """Each group's pipeline depth and client timeout (with the connect
    timeout's allowance, the timeout unless set), each connection's request
    and timer, each request slot's issue time and waiter link.

    Size for later steps: ``max_pipeline`` (most requests one connection sends
    before it reads a reply).
    """
    import numpy as np

    from redsim.model.blueprint import f64, i64

    groups = b.scenario.clients
    C, R = b.size.conns, b.size.slots
    b.fill("gp", pipeline=i64([g.pipeline for g in groups]),
           timeout=f64([g.timeout for g in groups]),
           connect_timeout=f64([g.timeout if g.connect_timeout is None else g.connect_timeout
                                for g in groups]))
    b.fill("cn", req=np.full(C, -1, np.int64), cmds_left=np.zeros(C, np.int64),
           t_checkout=np.zeros(C), deadline=np.zeros(C), timer=np.zeros(C, np.int64))
    b.fill("rq", t_issue=np.zeros(R), next=np.full(R, -1, np.int64))
    b.size.max_pipeline = max([1] + [g.pipeline for g in groups])
