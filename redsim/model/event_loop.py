"""The Redis main thread: ``aeProcessEvents`` iterations, compiled.

One iteration, as in ``src/ae.c`` and ``src/server.c`` (reference §1.1–1.2):

1. ``beforeSleep``: write the replies queued by the previous iteration's
   commands (``handleClientsWithPendingWrites``, at most
   ``NET_MAX_WRITES_PER_EVENT`` = 64 KB per client per pass), plus a fixed
   per-iteration cost for the poll syscall and beforeSleep's own bookkeeping.
2. Poll: every connection whose request bytes arrived by now is ready. If
   none is and no timer is due, the thread sleeps until the next arrival or
   the next timer, whichever is first.
3. File events, in the order the connections became ready (epoll's ready
   list is FIFO): one ``read()`` of at most ``PROTO_IOBUF_LEN`` = 16 KB per
   connection, then every complete command in it is executed back-to-back
   (``processInputBuffer``); replies are queued, not written.
4. Time events: ``serverCron`` if due. Its next run is ``1000/hz`` ms after
   it *returns* (ae reschedules from the callback's end), with ``dynamic-hz``
   doubling hz while clients/hz > 200.

So a command executed in iteration k has its reply written at the start of
iteration k+1, after every other ready client of iteration k and after any
due timer — Redis's own batching, which this model keeps rather than
approximates. With ``reply-batching: false`` each read's replies are written
at once instead (the plain single-server queue used for theory checks).

Deviations, each small and documented:
- ``serverCron`` is an ae time event here, inside the kernel, as in ae.c;
  concurrent actors (client pools, and in later issues the bio/fsync threads
  and fork child) are outside it.
- Accepting a connection (``acceptTcpHandler`` + ``createClient``) is charged
  at its first read rather than as a separate listening-socket event; freeing
  a client closed by its pool is charged at the next iteration's file events.
- A reply longer than 64 KB is written 64 KB per beforeSleep rather than
  continued from the writable handler in the same iteration.
- A request larger than 16 KB takes one read per 16 KB (7.x can read a big
  bulk argument in one go; issue 3 refines query buffers).

The tie-break rule at equal instants: client events (arrivals, replies,
pool operations) at time t are processed before the poll at t, in the order
they were scheduled; a request arriving exactly at a poll is seen by it; a
timer due exactly at a poll runs after that poll's file events.
"""

from __future__ import annotations

from redsim.model import heap
from redsim.model.clients import handle_event
from redsim.model.jit import entry, leaf, step
from redsim.model.protocol import elements, reply_bytes, request_bytes, value_bytes_moved
from redsim.model.rng import draw, exponential, uniform
from redsim.model.state import (
    BATCHING,
    C_ACCEPT,
    C_CLOSE,
    C_CRON,
    C_CRON_CLIENT,
    C_ITER,
    C_READ,
    C_READ_B,
    C_WRITE,
    C_WRITE_B,
    CONNECTED,
    CRON_WHEN,
    DIST_EXP,
    DYN_HZ,
    EL_CYCLES,
    EV_ARRIVE,
    EV_REPLY,
    HEAP_N,
    HZ,
    HZ_CONF,
    IN_FLIGHT,
    KIND_TRACE,
    PENDING_CLOSE,
    PH_BEFORE_SLEEP,
    PH_POLL,
    PHASE,
    PW_N,
    READY_HEAD,
    READY_N,
    RET_REFILL,
    RET_STOP,
    RNG_LOW,
    RTT_HALF,
    SERVICE_STREAM,
    STAT_COMMANDS,
    T_LAST_CRON,
    W_BUSY_CONNS,
    W_CPU_COMMANDS,
    W_CPU_CONNECTIONS,
    W_CPU_CRON,
    W_CPU_ITERATION,
    W_CPU_READ,
    W_CPU_WRITE,
    W_IN_SERVER,
    W_IN_SYSTEM,
    W_WAITERS,
    WI_COMMANDS,
    WI_CYCLES,
    T,
)
from redsim.observe.bins import add_interval, count, snapshot_gauges

PROTO_IOBUF_LEN = 16384  # bytes per read() (src/server.h)
NET_MAX_WRITES_PER_EVENT = 65536  # bytes per client per write pass (src/networking.c)
MAX_CLIENTS_PER_CLOCK_TICK = 200  # dynamic-hz threshold (src/server.h)
CONFIG_MAX_HZ = 500
CLIENTS_CRON_MIN_ITERATIONS = 5


@leaf
def busy(w, row, cost):
    """The main thread spends ``cost`` seconds on activity ``row`` from now."""
    F = w.F
    t0 = F[T]
    F[T] = t0 + cost
    add_interval(w, row, t0, t0 + cost)


# ---- reading and executing ----------------------------------------------------
# Kernel style: bind arrays at the top of each function, before any call (see
# redsim/observe/bins.py for why).


@step
def generate_command(w, c):
    """Decide the next command the client on connection c sent, and its sizes and cost.

    Commands are drawn when Redis reads them rather than when they were sent:
    nothing on the client side depends on their content, and drawing late
    keeps one stream per group in a fixed order.
    """
    group = w.cn.group
    req_ = w.cn.req
    cmds_left = w.cn.cmds_left
    next_cmd = w.cn.next_cmd
    next_bytes = w.cn.next_bytes
    next_reply = w.cn.next_reply
    next_cost = w.cn.next_cost
    next_key = w.cn.next_key
    kinds = w.gp.kind
    stream = w.gp.stream
    pipeline = w.gp.pipeline
    trace_start = w.gp.trace_start
    key_size = w.gp.key_size
    keys = w.gp.keys
    zipf_base = w.gp.zipf_base
    mix_start = w.gp.mix_start
    mix_end = w.gp.mix_end
    vk = w.gp.vs_kind
    vm = w.gp.vs_mean
    vl = w.gp.vs_low
    vh = w.gp.vs_high
    vsg = w.gp.vs_sigma
    trace_pos = w.rq.trace_pos
    cmd_shape = w.tb.cmd_shape
    cmd_fixed = w.tb.cmd_fixed
    cmd_per_byte = w.tb.cmd_per_byte
    cmd_per_elem = w.tb.cmd_per_elem
    cmd_namelen = w.tb.cmd_namelen
    mix_cmd = w.tb.mix_cmd
    mix_cum = w.tb.mix_cum
    mix_keys = w.tb.mix_keys
    mix_count = w.tb.mix_count
    mix_ttl = w.tb.mix_ttl
    tr_cmd = w.tb.tr_cmd
    tr_req_bytes = w.tb.tr_req_bytes
    tr_reply_bytes = w.tb.tr_reply_bytes
    tr_elems = w.tb.tr_elems
    tr_value = w.tb.tr_value
    zipf_cdf = w.tb.zipf_cdf
    buf = w.rg.buf
    pos = w.rg.pos
    I = w.I
    g = group[c]
    s = stream[g]
    if kinds[g] == KIND_TRACE:
        line = trace_start[g] + trace_pos[req_[c]] + pipeline[g] - cmds_left[c]
        cmd = tr_cmd[line]
        shape = cmd_shape[cmd]
        k = tr_elems[line]
        n = k
        req = tr_req_bytes[line]
        rep = tr_reply_bytes[line]
        value = tr_value[line]
        key = -1
        if rep < 0:  # a read: the reply carries a stored value of unknown size
            value = int(draw(vk[g], vm[g], vl[g], vh[g], vsg[g], buf, pos, I, s + 2) + 0.5)
            rep = reply_bytes(shape, key_size[g], value, k, n)
    else:
        u = uniform(buf, pos, I, s + 1)
        j = mix_start[g]
        while j < mix_end[g] - 1 and u >= mix_cum[j]:
            j += 1
        cmd = mix_cmd[j]
        shape = cmd_shape[cmd]
        k = mix_keys[j]
        n = mix_count[j]
        u = uniform(buf, pos, I, s + 1)
        if zipf_base[g] < 0:
            key = int(u * keys[g])
        else:
            base = zipf_base[g]
            key = _search(zipf_cdf, base, base + keys[g], u) - base
        value = int(draw(vk[g], vm[g], vl[g], vh[g], vsg[g], buf, pos, I, s + 2) + 0.5)
        req = request_bytes(shape, cmd_namelen[cmd], key_size[g], value, k, n, mix_ttl[j])
        rep = reply_bytes(shape, key_size[g], value, k, n)
    cost = (cmd_fixed[cmd] + cmd_per_byte[cmd] * value_bytes_moved(shape, value, k, n)
            + cmd_per_elem[cmd] * elements(shape, k, n))
    if I[DIST_EXP]:
        cost *= exponential(buf, pos, I, SERVICE_STREAM, 1.0)
    next_cmd[c] = cmd
    next_bytes[c] = req
    next_reply[c] = rep
    next_cost[c] = cost
    next_key[c] = key


@step
def _search(cdf, lo, hi, u):
    """First index i in [lo, hi) with cdf[i] > u (binary search)."""
    while lo < hi - 1:
        mid = (lo + hi) >> 1
        if cdf[mid - 1] > u:
            hi = mid
        else:
            lo = mid
    return lo


@step
def read_query_from_client(w, c):
    """``readQueryFromClient`` + ``processInputBuffer`` for one ready connection."""
    new = w.cn.new
    cmds_left = w.cn.cmds_left
    next_cmd = w.cn.next_cmd
    next_bytes = w.cn.next_bytes
    next_reply = w.cn.next_reply
    next_cost = w.cn.next_cost
    partial = w.cn.partial
    reply = w.cn.reply_bytes
    in_pw = w.cn.in_pw
    pw = w.pw
    F = w.F
    I = w.I
    if new[c]:
        busy(w, W_CPU_CONNECTIONS, F[C_ACCEPT])
        new[c] = 0
    budget = PROTO_IOBUF_LEN
    nread = 0
    executed = 0
    cpu = 0.0
    while cmds_left[c] > 0 and budget > 0:
        if next_cmd[c] < 0:
            generate_command(w, c)
        need = next_bytes[c] - partial[c]
        if need > budget:  # the command continues in the next read
            partial[c] += budget
            nread += budget
            break
        budget -= need
        nread += need
        partial[c] = 0
        cpu += next_cost[c]
        reply[c] += next_reply[c]
        next_cmd[c] = -1
        cmds_left[c] -= 1
        executed += 1
    busy(w, W_CPU_READ, F[C_READ] + F[C_READ_B] * nread)
    busy(w, W_CPU_COMMANDS, cpu)
    if executed > 0:
        I[STAT_COMMANDS] += executed
        count(w, WI_COMMANDS, F[T], executed)
        if I[BATCHING]:
            if not in_pw[c]:
                in_pw[c] = 1
                pw[I[PW_N]] = c
                I[PW_N] += 1
        else:
            while reply[c] > 0:
                write_to_client(w, c)
    if cmds_left[c] > 0:  # level-triggered: still readable at the next poll
        ready_push(w, c)


@step
def write_to_client(w, c):
    """One ``writeToClient`` pass (≤ 64 KB); returns True when nothing is left to write."""
    reply = w.cn.reply_bytes
    cmds_left = w.cn.cmds_left
    req = w.cn.req
    t_arrive = w.cn.t_arrive
    F = w.F
    nbytes = reply[c]
    if nbytes > NET_MAX_WRITES_PER_EVENT:
        nbytes = NET_MAX_WRITES_PER_EVENT
    busy(w, W_CPU_WRITE, F[C_WRITE] + F[C_WRITE_B] * nbytes)
    reply[c] -= nbytes
    if reply[c] > 0:
        return False
    if cmds_left[c] == 0 and req[c] >= 0:
        # The request's last reply byte left: it reaches the client half an RTT later.
        add_interval(w, W_IN_SERVER, t_arrive[c], F[T])
        t_arrive[c] = -1.0  # left the server; `finish` must not count it again
        heap.push(w, F[T] + F[RTT_HALF], EV_REPLY, c)
    return True


@step
def handle_clients_with_pending_writes(w):
    """beforeSleep's reply writes, in the order clients were queued."""
    I = w.I
    pw = w.pw
    in_pw = w.cn.in_pw
    n = I[PW_N]
    keep = 0
    for k in range(n):
        c = pw[k]
        if write_to_client(w, c):
            in_pw[c] = 0
        else:
            pw[keep] = c
            keep += 1
    I[PW_N] = keep


# ---- the ready list and the poll ------------------------------------------------


@leaf
def ready_push(w, c):
    I = w.I
    ready = w.ready
    size = ready.shape[0]
    ready[(I[READY_HEAD] + I[READY_N]) % size] = c
    I[READY_N] += 1


@leaf
def ready_pop(w):
    I = w.I
    ready = w.ready
    c = ready[I[READY_HEAD]]
    I[READY_HEAD] = (I[READY_HEAD] + 1) % ready.shape[0]
    I[READY_N] -= 1
    return c


@step
def client_event(w, te, kind, ident):
    """Apply one popped heap event at client time te."""
    t_arrive = w.cn.t_arrive
    snapshot_gauges(w, te)
    if kind == EV_ARRIVE:
        t_arrive[ident] = te
        ready_push(w, ident)
    else:
        handle_event(w, kind, ident, te)


@step
def advance_clients(w, t):
    """Process every client event up to and including time t (stops early to refill)."""
    ht = w.hp.t
    I = w.I
    while I[HEAP_N] > 0 and ht[0] <= t:
        if I[RNG_LOW]:
            return
        te, kind, ident = heap.pop(w)
        client_event(w, te, kind, ident)


# ---- time events ---------------------------------------------------------------


@step
def server_cron(w):
    """``serverCron``: dynamic hz, ``clientsCron``'s visit count, and its CPU cost."""
    F = w.F
    I = w.I
    numclients = I[CONNECTED]
    hz = I[HZ_CONF]
    if I[DYN_HZ]:
        while numclients // hz > MAX_CLIENTS_PER_CLOCK_TICK:
            hz *= 2
            if hz > CONFIG_MAX_HZ:
                hz = CONFIG_MAX_HZ
                break
    I[HZ] = hz
    visited = numclients // hz
    if visited < CLIENTS_CRON_MIN_ITERATIONS:
        visited = min(numclients, CLIENTS_CRON_MIN_ITERATIONS)
    busy(w, W_CPU_CRON, F[C_CRON] + F[C_CRON_CLIENT] * visited)
    F[T_LAST_CRON] = F[T]
    F[CRON_WHEN] = F[T] + 1.0 / hz


# ---- the loop ------------------------------------------------------------------


@entry
def run(w, t_stop):
    """Advance the main thread until it reaches ``t_stop`` at an iteration boundary
    (or sleeps until it). Returns RET_STOP, or RET_REFILL when random buffers need
    refilling; re-entering continues exactly where it stopped."""
    F = w.F
    I = w.I
    ht = w.hp.t
    while True:
        if I[RNG_LOW]:
            I[RNG_LOW] = 0
            return RET_REFILL
        if I[PHASE] == PH_BEFORE_SLEEP:
            if F[T] >= t_stop:
                return RET_STOP
            busy(w, W_CPU_ITERATION, F[C_ITER])
            handle_clients_with_pending_writes(w)
            I[PHASE] = PH_POLL
        if F[T] >= t_stop:
            return RET_STOP
        advance_clients(w, F[T])
        if I[RNG_LOW]:
            continue
        if I[READY_N] == 0 and I[PENDING_CLOSE] == 0 and F[CRON_WHEN] > F[T]:
            # Nothing to read and no timer due: epoll_wait sleeps.
            cron_first = F[CRON_WHEN] < t_stop
            wake = F[CRON_WHEN] if cron_first else t_stop
            woke = False
            while I[HEAP_N] > 0 and (ht[0] < wake or (cron_first and ht[0] == wake)):
                te, kind, ident = heap.pop(w)
                client_event(w, te, kind, ident)
                if I[READY_N] > 0:
                    F[T] = te
                    woke = True
                    break
                if I[RNG_LOW]:
                    F[T] = te
                    break
            if I[RNG_LOW]:
                continue
            if woke:
                advance_clients(w, F[T])  # others ready at the same instant
            else:
                F[T] = wake
                if not cron_first:
                    return RET_STOP
        # File events: the connections ready at this poll, in readiness order.
        if I[PENDING_CLOSE] > 0:
            busy(w, W_CPU_CONNECTIONS, F[C_CLOSE] * I[PENDING_CLOSE])
            I[PENDING_CLOSE] = 0
        n = I[READY_N]
        for _ in range(n):
            read_query_from_client(w, ready_pop(w))
        # Time events.
        if F[T] >= F[CRON_WHEN]:
            server_cron(w)
        I[EL_CYCLES] += 1
        count(w, WI_CYCLES, F[T], 1)
        I[PHASE] = PH_BEFORE_SLEEP


@entry
def finish(w, t_end):
    """Close the books at the horizon: requests still in flight count up to t_end."""
    req = w.cn.req
    t_checkout = w.cn.t_checkout
    t_arrive = w.cn.t_arrive
    t_issue = w.rq.t_issue
    nxt = w.rq.next
    wait_n = w.pl.wait_n
    wait_head = w.pl.wait_head
    I = w.I
    for c in range(req.shape[0]):
        r = req[c]
        if r >= 0:
            add_interval(w, W_IN_SYSTEM, t_issue[r], t_end)
            add_interval(w, W_BUSY_CONNS, t_checkout[c], t_end)
            if t_arrive[c] >= t_checkout[c] and t_arrive[c] < t_end:
                add_interval(w, W_IN_SERVER, t_arrive[c], t_end)
    for p in range(wait_n.shape[0]):
        r = wait_head[p]
        for _ in range(wait_n[p]):
            add_interval(w, W_IN_SYSTEM, t_issue[r], t_end)
            add_interval(w, W_WAITERS, t_issue[r], t_end)
            r = nxt[r]
    return I[IN_FLIGHT]
