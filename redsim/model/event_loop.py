"""The Redis main thread: ``aeProcessEvents`` iterations, compiled.

Follows ``src/ae.c:aeProcessEvents`` (with ``src/ae.c:processTimeEvents``),
``src/server.c:beforeSleep``, ``src/networking.c:readQueryFromClient``,
``src/networking.c:processInputBuffer``, ``src/server.c:processCommand`` (the
eviction and OOM checks before ``call``),
``src/networking.c:handleClientsWithPendingWrites`` and
``src/networking.c:writeToClient`` (``src/networking.c:_writevToClient`` in
7.x, one ``write()`` per buffer in 6.2), and ``src/server.c:serverCron``'s
dynamic hz and cron calls; the version differences are listed below.

One iteration, as in ``src/ae.c`` and ``src/server.c`` (reference §1.1–1.2):

1. ``beforeSleep``: the fast expire cycle; the AOF flush (``aof.py``: one
   write of the iteration's writes, and with ``appendfsync always`` the
   fdatasync the replies wait for); then write the replies queued by the
   previous iteration's commands (``handleClientsWithPendingWrites``, at most
   ``NET_MAX_WRITES_PER_EVENT`` = 64 KB per client per pass), plus a fixed
   per-iteration cost for the poll syscall and beforeSleep's own bookkeeping.
2. Poll: every connection whose request bytes arrived by now is ready. If
   none is and no timer is due, the thread sleeps until the next arrival or
   the next timer, whichever is first.
3. File events, in the order the connections became ready (epoll's ready
   list is FIFO): one ``read()`` per connection, then every complete command
   in it is executed back-to-back (``processInputBuffer``); replies are
   queued, not written. How much a read asks for follows the version
   (``client_memory.query_buffer_read``, §1.3): 6.2 at most
   ``PROTO_IOBUF_LEN`` = 16 KB; 7.x 16 KB into a buffer with less room than
   that, else all the room the buffer has (greedy); inside a big bulk
   argument (≥ ``PROTO_MBULK_BIG_ARG`` = 32 KB) the read stops at the
   argument's end, and 7.x reads all of the rest at once.
4. Time events: ``serverCron`` if due (it also runs the persistence cron:
   a finished fork child, save points, AOF rewrite, a postponed AOF flush).
   Its next run is ``1000/hz`` ms after it *returns* (ae reschedules from
   the callback's end), with ``dynamic-hz`` doubling hz while clients/hz > 200.

A script (EVAL, FCALL) running past ``busy-reply-threshold`` suspends the
iteration after its read (``PH_SCRIPT``): ``blocked_iteration`` alternates a
slice of the script with ``processEventsWhileBlocked``'s passes, whose commands
are answered ``-BUSY`` (``scripts.py``); when it ends the iteration resumes with
its time events (``PH_AFTER_READS``).

So a command executed in iteration k has its reply written at the start of
iteration k+1, after every other ready client of iteration k and after any
due timer — Redis's own batching, which this model keeps rather than
approximates. With ``reply-batching: false`` each read's replies are written
at once instead (the plain single-server queue used for theory checks).

``redis-version: "6.2"`` changes three things (reference §0, §1.1, §1.3, §1.5):
reads inside a big argument stay ≤ 16 KB; each reply buffer (``c->buf``, then
16 KB list nodes) costs one ``write()`` instead of one ``writev`` per pass; and
the poll timeout is computed before ``beforeSleep``, so a sleeping thread
wakes for its timer late by that beforeSleep's length.

Deviations, each small and documented:
- ``serverCron`` is an ae time event here, inside the kernel, as in ae.c.
  The ``everysec`` fsync thread, the disk and the fork child run concurrently
  with the main thread, but touch it only where Redis looks at them (a
  pending fsync job in ``flushAppendOnlyFile``, a finished child in
  ``serverCron``), and their timelines are known when they start; so they
  are kept as times in the kernel (``disk.py``, ``fork.py``), exact, rather
  than as SimPy processes the kernel would stop for.
- Accepting a connection (``acceptTcpHandler``, 7.2's
  ``connSocketAcceptHandler``, + ``createClient``) is charged at its first
  read rather than as a separate listening-socket event (with a group's
  ``tls: yes``, the handshake's ``engine.cpu.tls-handshake`` with it); freeing
  a client closed by its pool, and a connection refused at ``maxclients``
  (charged one accept), at the next iteration's file events.
  ``acceptTcpHandler`` accepts at most ``MAX_ACCEPTS_PER_CALL`` (1000 in 6.2
  and 7.x) connections per call, one call per iteration: a connection past
  the 1000th new one of an iteration waits for the next.
- A reply pass writes exactly 64 KB and leaves the rest to the next
  beforeSleep. Redis writes whole buffers until it has passed 64 KB (up to
  ~78 KB with 16 KB nodes, or all of a big reply's node), then continues from
  the writable handler in the same iteration if the socket takes more.
- The query buffer's length is taken as the bytes of the unfinished command
  read so far; Redis has already parsed and dropped its complete arguments
  (tens of bytes for a SET), so a read near a buffer's edge can be split where
  Redis's is not.

The tie-break rule at equal instants: client events (arrivals, replies,
pool operations) at time t are processed before the poll at t, in the order
they were scheduled; a request arriving exactly at a poll is seen by it; a
timer due exactly at a poll runs after that poll's file events.
"""

from __future__ import annotations

import numpy as np

from redsim.model import (
    client_close,
    client_memory,
    clients_cron,
    events,
    io_threads,
    netstack,
    network,
    replication,
    scripts,
)
from redsim.model.admin import admin_command
from redsim.model.aof import aof_cron, flush_append_only_file
from redsim.model.arena import decay_cron
from redsim.model.call import call, pick_key, pick_read_key, pick_write_key, value_size
from redsim.model.client_eviction import evict_clients
from redsim.model.client_memory import PROTO_REPLY_CHUNK_BYTES, REPLY_NODE_USABLE
from redsim.model.clients import handle_event
from redsim.model.commands import EFFECT_READ, EFFECT_WRITE
from redsim.model.cow import charge_cow
from redsim.model.db import LRU_CLOCK_MAX, LRU_CLOCK_START, resize_dicts
from redsim.model.defrag import active_defrag_cycle
from redsim.model.eviction import EVICT_FAIL, EVICT_RUNNING, perform_evictions
from redsim.model.expire import active_expire_cycle
from redsim.model.fork import fork_command, persistence_cron
from redsim.model.gauges import snapshot_gauges
from redsim.model.jit import entry, hot_leaf, leaf, step
from redsim.model.main_thread import busy, busy_to
from redsim.model.memory import used_memory
from redsim.model.protocol import (
    big_args,
    bulk_too_long,
    query_buffer_over,
    reply_bytes,
    request_bytes,
)
from redsim.model.replication_buffer import place_in_arena
from redsim.model.ring import wrap
from redsim.model.rng import draw, uniform
from redsim.model.state import (
    ADMIN_REQ,
    AOF_ON,
    BATCHING,
    C_ACCEPT,
    C_CLOSE,
    C_CRON,
    C_CRON_CLIENT,
    C_HANDOFF,
    C_ITER,
    C_READ,
    C_READ_B,
    C_TLS,
    C_WAKE,
    C_WRITE,
    C_WRITE_B,
    CE_LIMIT,
    CONFIG_MAX_HZ,
    CONNECTED,
    CRON_WHEN,
    CRONLOOPS,
    DIST_FIXED,
    DYN_HZ,
    EV_ARRIVE,
    EV_PARSED,
    EV_TIMER,
    FORK_REQ,
    HZ,
    HZ_CONF,
    IN_FLIGHT,
    IO_ASYNC,
    IO_PHASE,
    IO_READ_N,
    IO_SLOW,
    KIND_TRACE,
    LRU_CLOCK,
    LUA_HOOK,
    MAXMEMORY,
    N_CONNS,
    N_POOLS,
    PENDING_CLOSE,
    PENDING_REFUSED,
    PH_AFTER_READS,
    PH_BEFORE_SLEEP,
    PH_POLL,
    PH_SCRIPT,
    PHASE,
    POLL_WAKE,
    PW_N,
    READY_HEAD,
    READY_N,
    READY_PASS,
    REDIS_62,
    REPL_N,
    REPL_NEXT,
    RET_REFILL,
    RET_STOP,
    RNG_LOW,
    SCRIPT_CONN,
    SCRIPT_LEFT,
    SCRIPT_REPLY,
    SCRIPT_STEP,
    SERVICE_STREAM,
    SLEEP_RESUME,
    STAT_COMMANDS,
    STAT_OOM,
    SVC_HIGH,
    SVC_KIND,
    SVC_LOW,
    SVC_MEAN,
    SVC_SIGMA,
    W_BUSY_CONNS,
    W_CPU_COMMANDS,
    W_CPU_CONNECTIONS,
    W_CPU_CRON,
    W_CPU_DEFRAG,
    W_CPU_EVICTION,
    W_CPU_EXPIRE,
    W_CPU_ITERATION,
    W_CPU_READ,
    W_CPU_WRITE,
    W_IN_SERVER,
    W_IN_SYSTEM,
    W_WAITERS,
    WAKE_OWED,
    WI_COMMANDS,
    WI_CYCLES,
    WI_OOM,
    T,
)
from redsim.model.world import as_world, prefetch
from redsim.observe import groups
from redsim.observe import metrics as M
from redsim.observe.bins import add_interval, count

MAX_ACCEPTS_PER_CALL = 1000
"""New connections ``acceptTcpHandler`` accepts per call (``src/networking.c``,
6.2 and 7.x): the model's per-iteration cap on first reads of new connections."""

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "CRON_WHEN", "f8", "s", "state",
     "when serverCron is next due: 1/hz after its last run returned (the ae time event's when)"),
    ("I", "CRONLOOPS", "i8", "-", "counter",
     "server.cronloops: serverCron runs so far (run_with_period's clock)"),
    ("F", "C_ITER", "f8", "s", "config",
     "CPU of one event-loop iteration's fixed work (epoll_wait + beforeSleep), s"),
    ("F", "C_READ", "f8", "s", "config",
     "CPU of one read() of a query (readQueryFromClient), per call, s"),
    ("F", "C_READ_B", "f8", "s/B", "config",
     "CPU of readQueryFromClient and query parsing per byte read, s/B"),
    ("F", "C_WRITE", "f8", "s", "config",
     "CPU of one reply write()/writev (writeToClient), per call, s"),
    ("F", "C_WRITE_B", "f8", "s/B", "config", "CPU of writing replies per byte written, s/B"),
    ("F", "C_ACCEPT", "f8", "s", "config",
     "CPU of accepting a connection (acceptTcpHandler + createClient), s"),
    ("F", "C_CLOSE", "f8", "s", "config", "CPU of freeing one closed client (freeClient), s"),
    ("F", "C_TLS", "f8", "s", "config",
     "CPU of the server's side of a TLS handshake, per connection of a tls group, s"),
    ("F", "C_CRON", "f8", "s", "config", "CPU of one serverCron run's fixed work, s"),
    ("F", "C_CRON_CLIENT", "f8", "s", "config", "CPU of clientsCron per client visited, s"),
    ("F", "POLL_WAKE", "f8", "s", "state",
     "when this iteration's epoll_wait times out: the next timer, 6.2 late by beforeSleep, now "
     "if evictionTimeProc is due, s"),
    ("F", "C_WAKE", "f8", "s", "config",
     "an epoll_wait that slept: the block, the wake-up and the cold caches after, s"),
    ("I", "SLEEP_RESUME", "i8", "-", "state",
     "1: a refill exit came while the thread slept and nothing woke it; on re-entry "
     "it sleeps on to the same wake-up"),
    ("I", "WAKE_OWED", "i8", "-", "state",
     "1: the poll woke the thread but a refill exit came before its wake-up cost was "
     "charged; it is charged after the same-instant events, on re-entry"),
    ("I", "PHASE", "i8", "-", "state",
     "where the kernel resumes: PH_BEFORE_SLEEP, PH_POLL, PH_SCRIPT or PH_AFTER_READS"),
    ("I", "HZ_CONF", "i8", "1/s", "config",
     "the configured hz (server.config_hz), serverCron runs per second"),
    ("I", "HZ", "i8", "1/s", "state",
     "server.hz: serverCron's frequency now (config hz, doubled by dynamic-hz)"),
    ("I", "DYN_HZ", "i8", "-", "config", "1: dynamic-hz on (server.dynamic_hz)"),
    ("I", "BATCHING", "i8", "-", "config",
     "1: replies queued for beforeSleep (clients_pending_write); 0: written at once after each "
     "read (engine.reply-batching)"),
    ("I", "SVC_KIND", "i8", "-", "config",
     "engine.cpu.distribution's kind (DIST_FIXED: every cost as the table has it; else each "
     "command's cost × a draw / SVC_MEAN)"),
    ("F", "SVC_MEAN", "f8", "-", "config", "engine.cpu.distribution's mean (the draws' divisor)"),
    ("F", "SVC_LOW", "f8", "-", "config",
     "engine.cpu.distribution's low bound (empirical, mixture: its first table row)"),
    ("F", "SVC_HIGH", "f8", "-", "config",
     "engine.cpu.distribution's high bound (empirical, mixture: its last table row)"),
    ("F", "SVC_SIGMA", "f8", "-", "config", "engine.cpu.distribution's lognormal sigma"),
    ("I", "STAT_COMMANDS", "i8", "-", "counter",
     "server.stat_numcommands: commands processed since start (here -OOM refusals included)"),
    ("I", "READY_HEAD", "i8", "-", "state",
     "index in the ready ring (w.ready) of the first ready connection"),
    ("I", "READY_N", "i8", "-", "state",
     "connections on the ready ring (epoll's ready list): readable now"),
    ("I", "READY_PASS", "i8", "-", "state",
     "entries at the ready ring's head the current read pass has still to read"),
    ("I", "PW_N", "i8", "-", "state",
     "clients on w.pw (server.clients_pending_write), replies to write"),
    ("I", "REDIS_62", "i8", "-", "config",
     "1 for redis-version 6.2 (reads, writes and poll timeout differ)"),
    ("I", "STAT_OOM", "i8", "-", "counter",
     "commands refused with -OOM since start (processCommand, performEvictions failed on a "
     "denyoom command)"),
    ("I", "REDIS_72", "i8", "-", "config",
     "1 for redis-version 7.2 (where its read path and clientsCron differ from 7.0)"),
    ("wf", "W_CPU_COMMANDS", "f8", "s", "cpu", "main-thread time in command procedures (call())"),
    ("wf", "W_CPU_READ", "f8", "s", "cpu",
     "main-thread time in read() of queries and their parsing"),
    ("wf", "W_CPU_WRITE", "f8", "s", "cpu", "main-thread time in reply write()s"),
    ("wf", "W_CPU_ITERATION", "f8", "s", "cpu",
     "main-thread time in epoll_wait and beforeSleep's fixed work"),
    ("wf", "W_CPU_CRON", "f8", "s", "cpu", "main-thread time in serverCron, clientsCron included"),
    ("wf", "W_CPU_CONNECTIONS", "f8", "s", "cpu",
     "main-thread time accepting (createClient) and freeing clients"),
    ("wf", "W_IN_SERVER", "f8", "s", "time",
     "requests inside the server (from their bytes' arrival to the last reply byte written) "
     "integrated over the window, s"),
    ("wf", "W_HZ", "f8", "1/s", "gauge", "server.hz at the window's end, 1/s"),
    ("wi", "WI_COMMANDS", "i8", "-", "count",
     "commands processed in the window (STAT_COMMANDS' increase)"),
    ("wi", "WI_CYCLES", "i8", "-", "count", "event-loop iterations completed in the window"),
    ("wi", "WI_OOM", "i8", "-", "count", "commands refused with -OOM in the window"),
)


RESULTS = (
    M.Metric("ops_per_sec", "1/s", M.SUM, "commands processed per second after the warm-up "
             "(INFO instantaneous_ops_per_sec's mean)", value=M.per_sec("WI_COMMANDS"),
             line=M.Line(70, "commands/s", lambda s: f"{s['ops_per_sec']:,.0f}")),
    M.Metric("mean_queue_length", "-", M.SUM, "requests at Redis (read, queued or being "
             "served), time mean after the warm-up", value=M.time_mean("W_IN_SERVER"),
             line=M.Line(240, "queue at Redis (mean)",
                         lambda s: f"{s['mean_queue_length']:,.2f}")),
    M.Metric("eventloop_cycles_per_sec", "1/s", M.SUM, "event-loop iterations per second "
             "after the warm-up", value=M.per_sec("WI_CYCLES"),
             line=M.Line(250, "event-loop cycles/s",
                         lambda s: f"{s['eventloop_cycles_per_sec']:,.0f}")),
    M.Metric("commands_per_cycle", "-", M.ratio("ops_per_sec", "eventloop_cycles_per_sec"),
             "commands per event-loop iteration (0 without iterations)",
             value=lambda r: (r.summary["ops_per_sec"] / r.summary["eventloop_cycles_per_sec"]
                              if r.summary["eventloop_cycles_per_sec"] else 0.0),
             line=M.Line(260, "commands per cycle",
                         lambda s: f"{s['commands_per_cycle']:.2f}")),
    M.Metric("total_commands_processed", "-", M.SUM, "INFO total_commands_processed at the end",
             value=M.counter("STAT_COMMANDS")),
    M.Metric("oom_rejected", "-", M.SUM, "commands refused with -OOM",
             value=M.counter("STAT_OOM"),
             line=M.Line(190, "commands refused with -OOM / -BUSY",
                         lambda s: f"{s['oom_rejected']:,} / {s.get('busy_rejected', 0):,}")),
    M.Column(10, "instantaneous_ops_per_sec", "1/s", "commands processed per second",
             M.rate("WI_COMMANDS")),
    M.Column(20, "total_commands_processed", "-", "INFO total_commands_processed",
             M.total("WI_COMMANDS")),
    M.Column(150, "queue_length", "-", "requests at Redis, time mean", M.level("W_IN_SERVER")),
    M.Column(200, "eventloop_cycles", "-", "event-loop iterations in the window",
             M.gauge("WI_CYCLES")),
    M.Column(270, "hz", "1/s", "serverCron's rate (dynamic-hz)",
             lambda r: M.row(r, "W_HZ").astype(np.int64)),
    M.Column(460, "oom_rejected_per_sec", "1/s", "commands refused with -OOM per second",
             M.rate("WI_OOM")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

NET_MAX_WRITES_PER_EVENT = 65536  # bytes per client per write pass (src/networking.c)
OOM_REPLY_BYTES = len("-OOM command not allowed when used memory > 'maxmemory'.\r\n")
MAX_CLIENTS_PER_CLOCK_TICK = 200  # dynamic-hz threshold (src/server.h)
CLIENTS_CRON_MIN_ITERATIONS = 5


# ---- reading and executing ----------------------------------------------------


@step
def generate_command(w, c):
    """Decide the next command the client on connection c sent, and its sizes.

    Commands are drawn when their request reaches the server (the first) or
    when Redis reads them (the rest of a pipeline) rather than when they were
    sent: nothing on the client side depends on their content, and drawing
    late keeps one stream per group in a fixed order. The reply size set here is
    the one a read would have on a hit; ``call`` corrects it from the keyspace.
    """
    I = w.I
    g = w.cn_group[c]
    s = w.gp_stream[g]
    ttl = 0
    if w.gp_kind[g] == KIND_TRACE:
        sent = w.gp_pipeline[g] - w.cn_cmds_left[c]  # commands of the request already read
        line = w.gp_trace_start[g] + w.rq_trace_pos[w.cn_req[c]] + sent
        cmd = w.tb_tr_cmd[line]
        shape = w.tb_cmd_shape[cmd]
        k = w.tb_tr_elems[line]
        n = k
        req = w.tb_tr_req_bytes[line]
        rep = w.tb_tr_reply_bytes[line]
        value = w.tb_tr_value[line]
        key = w.tb_tr_key[line]  # -1: a command file's line, no key the keyspace tracks
        big_first = w.tb_tr_big_first[line]
        big_period = w.tb_tr_big_period[line]
        big_n = w.tb_tr_big_n[line]
        big_len = w.tb_tr_big_len[line]
        w.cn_next_script[c] = 0.0  # a trace's script: its command's fixed cost only
        if key >= 0:  # a keyed read's value comes from the keyspace when it runs (call.py)
            if rep < 0:
                rep = reply_bytes(shape, w.gp_key_size[g], 0, k, n)
        elif rep < 0:  # a read: the reply carries a stored value of unknown size
            value = value_size(w, g)
            rep = reply_bytes(shape, w.gp_key_size[g], value, k, n)
    else:
        u = uniform(w, s + 1)
        j = w.gp_mix_start[g]
        while j < w.gp_mix_end[g] - 1 and u >= w.tb_mix_cum[j]:
            j += 1
        cmd = w.tb_mix_cmd[j]
        shape = w.tb_cmd_shape[cmd]
        k = w.tb_mix_keys[j]
        n = w.tb_mix_count[j]
        effect = w.tb_cmd_effect[cmd]
        if effect == EFFECT_WRITE:
            key = pick_write_key(w, g)
        elif effect == EFFECT_READ:
            key = pick_read_key(w, g)
        else:
            key = pick_key(w, g)
        # A read's value comes from the keyspace when it runs (call.py); only a
        # command that carries a value needs one drawn.
        value = 0 if effect == EFFECT_READ else value_size(w, g)
        key_size = w.gp_key_size[g]
        namelen = w.tb_cmd_namelen[cmd]
        ttl = w.tb_mix_ttl[j]
        req = request_bytes(shape, namelen, key_size, value, k, n, ttl)
        rep = reply_bytes(shape, key_size, value, k, n)
        big_first, big_period, big_n, big_len = big_args(shape, namelen, key_size, value, k, ttl)
        if w.tb_cmd_script[cmd]:
            w.cn_next_script[c] = draw(w, s + 1, w.tb_mix_script_kind[j], w.tb_mix_script_mean[j],
                                       w.tb_mix_script_low[j], w.tb_mix_script_high[j],
                                       w.tb_mix_script_sigma[j])
    scale = 1.0
    if I[SVC_KIND] != DIST_FIXED:  # mean 1: the command table's costs are the means
        F = w.F
        scale = draw(w, SERVICE_STREAM, I[SVC_KIND], F[SVC_MEAN], F[SVC_LOW], F[SVC_HIGH],
                     F[SVC_SIGMA]) / F[SVC_MEAN]
    w.cn_next_cmd[c] = cmd
    w.cn_next_bytes[c] = req
    w.cn_next_reply[c] = rep
    w.cn_next_scale[c] = scale
    w.cn_next_key[c] = key
    w.cn_next_k[c] = k
    w.cn_next_n[c] = n
    w.cn_next_value[c] = value
    w.cn_next_ttl[c] = ttl
    w.cn_big_first[c] = big_first
    w.cn_big_period[c] = big_period
    w.cn_big_n[c] = big_n
    w.cn_big_len[c] = big_len


@leaf
def big_argument(w, c):
    """``(remaining, length)`` of the big bulk argument (≥ ``PROTO_MBULK_BIG_ARG``)
    the parser is inside on connection c — its ``$<len>`` line was read — or
    ``(0, 0)``: the bytes still to come of it and its length with the CRLF."""
    pos = w.cn_partial[c]
    n = w.cn_big_n[c]
    if pos > 0 and n > 0 and pos >= w.cn_big_first[c]:
        first = w.cn_big_first[c]
        period = w.cn_big_period[c]
        k = 0
        if period > 0:
            k = min((pos - first) // period, n - 1)
        end = first + k * period + w.cn_big_len[c]
        if pos < end:
            return end - pos, w.cn_big_len[c]
    return 0, 0


@leaf
def add_reply_62(w, c, nbytes):
    """Lay ``nbytes`` of reply into ``c->buf`` and 16 KB reply nodes (6.2 counts
    one ``write()`` per buffer). Bytes fill the last buffer and spill into a new
    node of at least ``PROTO_REPLY_CHUNK_BYTES``; 6.2 moves a reply that does not
    fit ``c->buf`` whole to a node instead, which changes the count by at most one."""
    room = w.cn_tail_room[c]
    if w.cn_reply_nodes[c] == 0:
        w.cn_reply_nodes[c] = 1
        room = PROTO_REPLY_CHUNK_BYTES
    if nbytes > room:
        rest = nbytes - room
        w.cn_reply_nodes[c] += 1
        room = REPLY_NODE_USABLE - rest if rest < REPLY_NODE_USABLE else 0
    else:
        room -= nbytes
    w.cn_tail_room[c] = room


@step
def read_query_from_client(w, c):
    """``readQueryFromClient`` + ``processInputBuffer`` for one ready connection."""
    F = w.F
    I = w.I
    if w.cn_new[c]:
        busy(w, W_CPU_CONNECTIONS, F[C_ACCEPT] + F[C_TLS] * w.gp_tls[w.cn_group[c]])
        w.cn_new[c] = 0
        client_memory.create_client(w, c)
    buffered = w.cn_partial[c]  # bytes of an unfinished command in the query buffer
    remaining, big_len = big_argument(w, c)
    budget = client_memory.query_buffer_read(w, c, buffered, remaining, big_len)
    if query_buffer_over(w, buffered, budget):  # client-query-buffer-limit
        busy(w, W_CPU_READ, F[C_READ] + F[C_READ_B] * budget)
        client_close.free_client(w, c)
        return
    nread = 0
    executed = 0
    cpu = 0.0
    evict_cpu = 0.0
    gone = False
    while w.cn_cmds_left[c] > 0 and budget > 0:
        if w.cn_next_cmd[c] < 0:
            generate_command(w, c)
        if w.cn_partial[c] == 0 and bulk_too_long(w, c):  # proto-max-bulk-len
            client_close.free_client(w, c)
            gone = True
            break
        need = w.cn_next_bytes[c] - w.cn_partial[c]
        if need > budget:  # the command continues in the next read
            w.cn_partial[c] += budget
            nread += budget
            break
        budget -= need
        nread += need
        w.cn_partial[c] = 0
        if I[CE_LIMIT] > 0 and evict_clients(w) > 0 and w.cn_mem[c] == 0:
            gone = True  # processCommand: evictClients freed this very client
            break
        if I[SCRIPT_CONN] >= 0:  # processCommand: a script is timed out, -BUSY
            scripts.refuse(w, c)
        elif I[MAXMEMORY] > 0:  # processCommand: performEvictions before every command
            result, spent = perform_evictions(w)
            evict_cpu += spent
            if result == EVICT_FAIL and w.tb_cmd_denyoom[w.cn_next_cmd[c]]:
                w.cn_next_reply[c] = OOM_REPLY_BYTES
                I[STAT_OOM] += 1
                w.gp_oom[w.rq_group[w.cn_req[c]]] += 1
                groups.failed(w, w.rq_group[w.cn_req[c]], F[T])
                count(w, WI_OOM, F[T], 1)
            elif replication.refuses_write(w, c):  # -NOREPLICAS
                pass
            else:
                cpu += call(w, c)
        elif replication.refuses_write(w, c):
            pass
        else:
            cpu += call(w, c)
        if I[SCRIPT_CONN] < 0 and w.tb_cmd_script[w.cn_next_cmd[c]] and scripts.times_out(w, c):
            cpu -= scripts.time_out(w, c)  # the rest runs in PH_SCRIPT, its reply held
        if w.cn_next_reply[c] > 0:
            w.cn_reply_bytes[c] += w.cn_next_reply[c]
            if I[REDIS_62]:
                add_reply_62(w, c, w.cn_next_reply[c])
        w.cn_next_cmd[c] = -1
        w.cn_cmds_left[c] -= 1
        executed += 1
        if I[SCRIPT_CONN] == c:  # protectClient: nothing more is read from it meanwhile
            break
    if not gone:
        client_memory.query_buffer_filled(w, c, buffered + nread)
    if I[IO_ASYNC]:  # read and parsed by its I/O thread: the main thread takes it over
        busy(w, W_CPU_READ, F[C_HANDOFF])
    elif io_threads.reads_threaded(w):
        busy(w, W_CPU_READ, io_threads.postpone_read(w, F[C_READ] + F[C_READ_B] * nread))
    else:
        busy(w, W_CPU_READ, F[C_READ] + F[C_READ_B] * nread)
    netstack.received(w, nread)
    busy(w, W_CPU_COMMANDS, cpu)
    if evict_cpu > 0.0:
        busy(w, W_CPU_EVICTION, evict_cpu)
    charge_cow(w)
    if executed > 0:
        I[STAT_COMMANDS] += executed
        count(w, WI_COMMANDS, F[T], executed)
    if gone:
        return
    client_memory.reply_added(w, c)
    client_memory.update(w, c)
    if executed > 0 and w.cn_reply_bytes[c] > 0:  # (a timed-out script's reply is held)
        queue_replies(w, c)
    if w.cn_cmds_left[c] > 0:  # level-triggered: still readable at the next poll
        ready_push(w, c)


@hot_leaf
def queue_replies(w, c):
    """Connection c has new replies: to its I/O thread (Redis 8), onto
    ``clients_pending_write`` for beforeSleep, or written at once without
    reply batching."""
    I = w.I
    if I[IO_ASYNC]:
        async_write(w, c)
    elif I[BATCHING]:
        if not w.cn_in_pw[c]:
            w.cn_in_pw[c] = 1
            w.pw[I[PW_N]] = c
            I[PW_N] += 1
    else:
        while w.cn_reply_bytes[c] > 0:
            write_to_client(w, c)


@leaf
def writes_62(w, c, nbytes):
    """``write()`` calls 6.2 makes to send ``nbytes`` of connection c's pending
    reply, one per buffer; a pass that stops part-way is charged the buffers it
    spans in proportion to their bytes."""
    pending = w.cn_reply_bytes[c]
    nodes = w.cn_reply_nodes[c]
    if nbytes == pending:
        w.cn_reply_nodes[c] = 0
        return nodes
    calls = (nbytes * nodes + pending - 1) // pending
    w.cn_reply_nodes[c] = max(nodes - calls, 1)
    return calls


@step
def write_to_client(w, c):
    """One ``writeToClient`` pass (≤ 64 KB); returns True when nothing is left to write.

    7.x gathers the buffers into one ``writev``; 6.2 makes one ``write`` per buffer.
    """
    F = w.F
    I = w.I
    nbytes = w.cn_reply_bytes[c]
    # The 64 KB cap does not apply while used memory is at or over maxmemory.
    if nbytes > NET_MAX_WRITES_PER_EVENT and not (
            I[MAXMEMORY] > 0 and used_memory(w) >= I[MAXMEMORY]):
        nbytes = NET_MAX_WRITES_PER_EVENT
    calls = writes_62(w, c, nbytes) if I[REDIS_62] else 1
    cost = F[C_WRITE] * calls + F[C_WRITE_B] * nbytes
    if I[IO_PHASE]:  # on an I/O thread's clock; the main thread's time is the pass's
        F[T] += cost * F[IO_SLOW]
    else:
        busy(w, W_CPU_WRITE, cost)
    netstack.sent(w, nbytes, calls)
    w.cn_reply_bytes[c] -= nbytes
    client_memory.update(w, c)
    if w.cn_reply_bytes[c] > 0:
        return False
    if w.cn_cmds_left[c] == 0 and w.cn_req[c] >= 0:
        # The request's last reply byte left: it reaches the client half an RTT later.
        add_interval(w, W_IN_SERVER, w.cn_t_arrive[c], F[T])
        w.cn_t_arrive[c] = -1.0  # left the server; `finish` must not count it again
        # The threads' replies leave out of order (IO_PHASE): the wheel sorts them.
        network.to_client(w, c, F[T], not I[IO_PHASE])
    return True


@step
def handle_clients_with_pending_writes(w):
    """beforeSleep's reply writes, in the order clients were queued. With enough
    of them Redis 6/7's I/O threads take part (``io_threads.py``,
    ``handleClientsWithPendingWritesUsingThreads``): client k of the pending list
    is written by thread k mod N from the pass's start, each thread in order on
    its own clock, and the main thread writes its own share, spins until the
    last thread is done, then walks the clients the threads wrote."""
    F = w.F
    I = w.I
    threaded = io_threads.stop_if_needed(w)
    if threaded:
        io_threads.start_pass(w)
    t0 = F[T]
    n = I[PW_N]
    keep = 0
    for k in range(n):
        c = w.pw[k]
        th = 0
        if threaded:
            th, F[T] = io_threads.pass_thread(w, k)
        done = write_to_client(w, c)
        if threaded:
            w.io_clock[th] = F[T]
        if done:
            w.cn_in_pw[c] = 0
        else:
            w.pw[keep] = c
            keep += 1
    I[PW_N] = keep
    if threaded:
        F[T] = t0
        busy_to(w, W_CPU_WRITE, io_threads.end_pass(w))
        busy(w, W_CPU_WRITE, io_threads.after_pass(w, n))


@step
def async_write(w, c):
    """Redis 8: the main thread hands connection c back to its I/O thread, which
    writes the replies from when it is free (``processClientsFromMainThread``
    + ``writeToClient``, ``io_threads.py``); the main thread goes on at once."""
    F = w.F
    I = w.I
    t0 = F[T]
    th, start = io_threads.write_start(w, c)
    F[T] = start
    I[IO_PHASE] = 1
    while not write_to_client(w, c):
        pass
    I[IO_PHASE] = 0
    io_threads.write_done(w, th, start, F[T])
    F[T] = t0


# ---- the ready list and the poll ------------------------------------------------


@leaf
def ready_push(w, c):
    I = w.I
    size = I[N_CONNS]
    w.ready[wrap(I[READY_HEAD] + I[READY_N], size)] = c
    I[READY_N] += 1


@leaf
def ready_pop(w):
    I = w.I
    c = w.ready[I[READY_HEAD]]
    I[READY_HEAD] = wrap(I[READY_HEAD] + 1, I[N_CONNS])
    I[READY_N] -= 1
    return c


@step
def client_event(w, te, kind, ident):
    """Apply one client event, due at client time te."""
    snapshot_gauges(w, te)
    if kind == EV_ARRIVE or kind == EV_PARSED:
        if w.cn_srv_closed[ident]:
            return  # Redis closed the connection while these bytes were on their way
        if kind == EV_ARRIVE:
            w.cn_t_arrive[ident] = te
            # Decide the request's first command now (its size is the read's).
            if w.cn_next_cmd[ident] < 0:
                generate_command(w, ident)
            if w.I[IO_ASYNC]:  # its I/O thread reads it first
                events.push(w, io_threads.read_request(w, ident, te), EV_PARSED, ident)
                return
        ready_push(w, ident)
        # Start loading the key's row: the main thread reads this connection
        # only after every one ahead of it in the ready list, by when the row
        # is in cache.
        key = w.cn_next_key[ident]
        if key >= 0:
            prefetch(w.ks_cost, key)
            prefetch(w.ks_expire, key)  # a row can straddle two cache lines
    else:
        handle_event(w, kind, ident, te)


@step
def advance_clients(w, t):
    """Process every client event up to and including time t (stops early to refill)."""
    I = w.I
    while True:
        where, te = events.peek(w)
        if te > t or I[RNG_LOW]:
            return
        te, kind, ident = events.take(w, where)
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
    clients_cron.clients_cron(w, visited)
    spent = active_expire_cycle(w, np.bool_(False))  # databasesCron: the slow cycle
    if spent > 0.0:
        busy(w, W_CPU_EXPIRE, spent)
        charge_cow(w)
    spent = active_defrag_cycle(w)  # databasesCron: never with a child, so no copy-on-write
    if spent > 0.0:
        busy(w, W_CPU_DEFRAG, spent)
    I[LRU_CLOCK] = (int(F[T]) + LRU_CLOCK_START) & LRU_CLOCK_MAX  # server.lruclock, 1 s
    resize_dicts(w)  # databasesCron
    place_in_arena(w)  # the replication buffer's blocks made and freed since
    decay_cron(w)  # jemalloc's background thread purges dirty pages as epochs pass
    persistence_cron(w)  # a finished child, save points, AOF rewrite
    if I[REPL_N] > 0:
        replication.replication_cron(w)  # a sync's child done; once a second: pings, forks
    aof_cron(w)  # a postponed AOF flush
    I[CRONLOOPS] += 1
    F[CRON_WHEN] = F[T] + 1.0 / hz


@step
def time_events(w):
    """The rest of an iteration after its file events: a scenario event's fork or
    admin command read with them, then ``processTimeEvents`` (the eviction
    timer, ``serverCron`` if due)."""
    F = w.F
    I = w.I
    # Time events, newest timer first (ae inserts at the list head).
    if I[FORK_REQ]:  # a scenario event's BGSAVE / BGREWRITEAOF, read with the rest
        fork_command(w)
    if I[ADMIN_REQ]:  # a scenario event's DEBUG POPULATE, DEL, FLUSHALL, MEMORY PURGE
        admin_command(w)
    if I[EV_TIMER]:
        result, spent = perform_evictions(w)
        busy(w, W_CPU_EVICTION, spent)
        charge_cow(w)
        if result != EVICT_RUNNING:
            I[EV_TIMER] = 0
    if F[T] >= F[CRON_WHEN]:
        server_cron(w)
    count(w, WI_CYCLES, F[T], 1)


# ---- one iteration's parts -----------------------------------------------------------

POLL_READY = 0  # the poll returned: file events follow
POLL_REFILL = 1  # left asleep for a refill; re-entering resumes the sleep
POLL_STOP = 2  # asleep until t_stop, which came first


@step
def before_sleep(w, t_iter, while_blocked):
    """``beforeSleep`` (src/server.c), at the iteration that started at
    ``t_iter`` s: the gauges' snapshot, the iteration's fixed cost
    (``engine.cpu.iteration``), the fast expire cycle, the AOF flush (group
    commit: before any reply of this iteration leaves), the reply writes
    (``handleClientsWithPendingWrites``), the replicas' part and client
    eviction. ``while_blocked``: the reduced beforeSleep that
    ``processEventsWhileBlocked`` runs under a timed-out script (the AOF flush
    and the writes only, as ``beforeSleep``'s ``ProcessingEventsWhileBlocked``
    branch)."""
    F = w.F
    I = w.I
    snapshot_gauges(w, t_iter)  # main-thread state (memory) changes too
    busy(w, W_CPU_ITERATION, F[C_ITER])
    if not while_blocked:
        spent = active_expire_cycle(w, np.bool_(True))  # the fast cycle
        if spent > 0.0:
            busy(w, W_CPU_EXPIRE, spent)
            charge_cow(w)
    if I[AOF_ON]:  # group commit: before any reply of this iteration leaves
        flush_append_only_file(w, np.bool_(False))
    handle_clients_with_pending_writes(w)
    if I[REPL_N] > 0:  # the replicas are in clients_pending_write too
        replication.before_sleep(w)
    if not while_blocked and I[CE_LIMIT] > 0:
        evict_clients(w)


@leaf
def poll_timeout(w, t_iter):
    """The time ``epoll_wait`` may sleep to (``F[POLL_WAKE]``, s): the next
    timer, as ``aeProcessEvents`` computes it (``usUntilEarliestTimer``), or
    now when something is due at once."""
    F = w.F
    I = w.I
    # The poll's timeout runs to the next timer. 7.x computes it after
    # beforeSleep; 6.2 before it, so 6.2 sleeps beforeSleep's length too long.
    F[POLL_WAKE] = F[CRON_WHEN]
    if I[REDIS_62]:
        F[POLL_WAKE] = F[T] + max(F[CRON_WHEN] - t_iter, 0.0)
    if I[EV_TIMER]:  # evictionTimeProc is due every iteration: no sleep
        F[POLL_WAKE] = F[T]
    if I[PW_N] > 0:
        # A reply past 64 KB is left: handleClientsWithPendingWrites
        # installed its write handler, and the socket is writable (no
        # send-buffer limit is modelled), so epoll_wait returns at once.
        # The model writes the rest at the next beforeSleep rather than
        # in that poll's file events (sendReplyToClient).
        F[POLL_WAKE] = F[T]
    if I[REPL_N] > 0 and F[REPL_NEXT] < F[POLL_WAKE]:
        # A replica's PSYNC, a load's end or room in its socket wakes the poll.
        F[POLL_WAKE] = max(F[REPL_NEXT], F[T])


@step
def poll(w, t_stop):
    """``aeApiPoll`` (``epoll_wait``): with nothing ready, nothing to free and
    the timeout not over, the thread sleeps until a client's event makes a
    connection ready or the timeout ends (``F[POLL_WAKE]``), and pays
    ``engine.cpu.wakeup`` when it wakes. Returns ``POLL_READY``,
    ``POLL_REFILL`` (a random buffer ran low mid-sleep: ``SLEEP_RESUME`` and
    ``WAKE_OWED`` make the re-entry take the same-instant events first, then
    charge the wake-up, as without the exit) or ``POLL_STOP`` (asleep at
    ``t_stop``)."""
    F = w.F
    I = w.I
    resume = I[SLEEP_RESUME]
    I[SLEEP_RESUME] = 0
    if resume and I[READY_N] > 0:  # an event at the refill's instant woke it
        resume = 0
        I[WAKE_OWED] = 1
    if resume or (I[READY_N] == 0 and I[PENDING_CLOSE] == 0
                  and I[PENDING_REFUSED] == 0 and F[POLL_WAKE] > F[T]):
        # Nothing to read and the poll's timeout not over: epoll_wait sleeps.
        cron_first = F[POLL_WAKE] < t_stop
        wake = F[POLL_WAKE] if cron_first else t_stop
        woke = False
        while True:
            where, te = events.peek(w)
            if not (te < wake or (cron_first and te == wake)):
                break
            te, kind, ident = events.take(w, where)
            client_event(w, te, kind, ident)
            if I[READY_N] > 0:
                F[T] = te
                woke = True
                break
            if I[RNG_LOW]:
                F[T] = te
                break
        if woke and not I[RNG_LOW]:
            advance_clients(w, F[T])  # others ready at the same instant
        if I[RNG_LOW]:
            I[WAKE_OWED] = 1 if woke else 0
            I[SLEEP_RESUME] = 0 if woke else 1
            return POLL_REFILL
        if not woke:
            F[T] = wake
            if not cron_first:
                return POLL_STOP
        # epoll_wait blocked and returned: the sleep, the wake-up and the
        # caches gone cold cost the thread this much (engine.cpu.wakeup).
        busy(w, W_CPU_ITERATION, F[C_WAKE])
    elif I[WAKE_OWED]:
        busy(w, W_CPU_ITERATION, F[C_WAKE])
    I[WAKE_OWED] = 0
    return POLL_READY


@step
def process_file_events(w):
    """``aeProcessEvents``' file events: the clients freed or refused since the
    last poll, then the connections ready at this poll in readiness order
    (epoll's ready list is FIFO), each read with ``read_query_from_client``;
    at most ``MAX_ACCEPTS_PER_CALL`` new connections (the listener's cap), and
    the pass stops at a script past ``busy-reply-threshold``. Then the main
    thread waits for the I/O threads' reads."""
    F = w.F
    I = w.I
    snapshot_gauges(w, F[T])
    if I[PENDING_CLOSE] > 0:
        busy(w, W_CPU_CONNECTIONS, F[C_CLOSE] * I[PENDING_CLOSE])
        I[PENDING_CLOSE] = 0
    if I[PENDING_REFUSED] > 0:  # accepted, told -ERR max number of clients, closed
        busy(w, W_CPU_CONNECTIONS, F[C_ACCEPT] * I[PENDING_REFUSED])
        I[PENDING_REFUSED] = 0
    # A client freed during the pass leaves the ring (client_close.unlist),
    # and with it the pass's count if it was still to be read.
    I[READY_PASS] = I[READY_N]
    accepted = 0
    while I[READY_PASS] > 0:
        I[READY_PASS] -= 1
        c = ready_pop(w)
        if w.cn_new[c]:
            if accepted == MAX_ACCEPTS_PER_CALL:  # the listener's cap: next iteration
                ready_push(w, c)
                continue
            accepted += 1
        read_query_from_client(w, c)
        if I[SCRIPT_CONN] >= 0:  # a script passed the threshold: the rest of the
            I[READY_PASS] = 0  # ready list is read by its blocked passes, or after
    if I[IO_READ_N] > 0:  # the main thread waits for the I/O threads' reads
        io_threads.finish_reads(w, W_CPU_READ)


# ---- a script past busy-reply-threshold ---------------------------------------------

EVENTS_WHILE_BLOCKED = 4  # aeProcessEvents iterations per processEventsWhileBlocked


@step
def blocked_iteration(w):
    """One hook of a timed-out script (``scriptInterrupt``): ``lua-hook`` seconds
    of the script, then ``processEventsWhileBlocked``: up to 4 iterations of
    beforeSleep's AOF flush and reply writes, a poll that does not wait, and the
    ready connections' reads, whose commands are answered -BUSY
    (``scripts.refuse``); stops after an iteration that read nothing. No time
    event runs. The script's own connection is not read (``protectClient``).

    ``SCRIPT_STEP`` says where to resume after a refill: 0 the next slice,
    2i + 1 iteration i's beforeSleep, 2i + 2 its poll. Returns 1 when the
    script has ended (its reply queued), else 0."""
    F = w.F
    I = w.I
    if I[SCRIPT_STEP] == 0:
        piece = min(F[LUA_HOOK], F[SCRIPT_LEFT])
        busy(w, W_CPU_COMMANDS, piece)
        F[SCRIPT_LEFT] -= piece
        if F[SCRIPT_LEFT] <= 0.0:
            end_script(w)
            return 1
        I[SCRIPT_STEP] = 1
    while True:
        if I[SCRIPT_STEP] % 2 == 1:
            before_sleep(w, F[T], np.bool_(True))
            I[SCRIPT_STEP] += 1
        advance_clients(w, F[T])
        if I[RNG_LOW]:
            return 0
        processed = 0
        for _ in range(I[READY_N]):
            c = ready_pop(w)
            if c == I[SCRIPT_CONN]:
                ready_push(w, c)
                continue
            read_query_from_client(w, c)
            processed += 1
        if processed == 0 or I[SCRIPT_STEP] == 2 * EVENTS_WHILE_BLOCKED:
            I[SCRIPT_STEP] = 0
            return 0
        I[SCRIPT_STEP] += 1


@step
def end_script(w):
    """The timed-out script returns: its reply is queued (unless its client was
    freed meanwhile) and commands are executed again."""
    I = w.I
    c = I[SCRIPT_CONN]
    I[SCRIPT_CONN] = -1
    if w.cn_srv_closed[c]:
        return
    w.cn_reply_bytes[c] += I[SCRIPT_REPLY]
    if I[REDIS_62]:
        add_reply_62(w, c, I[SCRIPT_REPLY])
    client_memory.reply_added(w, c)
    client_memory.update(w, c)
    queue_replies(w, c)


# ---- the loop ------------------------------------------------------------------


@entry
def run(world, t_stop):
    """Advance the main thread until it reaches ``t_stop`` at an iteration boundary
    (or sleeps until it). Returns RET_STOP, or RET_REFILL when random buffers need
    refilling; re-entering continues exactly where it stopped (``PHASE``).

    One iteration, as ``aeMain`` runs ``aeProcessEvents``: ``before_sleep``,
    ``poll_timeout``, the client events due (``advance_clients``), ``poll``,
    ``process_file_events``, then ``time_events``; a script past
    ``busy-reply-threshold`` suspends it after its read (``blocked_iteration``)."""
    w = as_world(world)
    F = w.F
    I = w.I
    while True:
        if I[RNG_LOW]:
            I[RNG_LOW] = 0
            return RET_REFILL
        if I[PHASE] >= PH_SCRIPT:  # a script past busy-reply-threshold, or just ended
            if I[PHASE] == PH_SCRIPT:
                if F[T] >= t_stop:
                    return RET_STOP
                if not blocked_iteration(w):
                    continue
                I[PHASE] = PH_AFTER_READS
            time_events(w)
            I[PHASE] = PH_BEFORE_SLEEP
            continue
        if I[PHASE] == PH_BEFORE_SLEEP:
            if F[T] >= t_stop:
                return RET_STOP
            t_iter = F[T]
            before_sleep(w, t_iter, np.bool_(False))
            poll_timeout(w, t_iter)
            I[PHASE] = PH_POLL
        if F[T] >= t_stop:
            return RET_STOP
        advance_clients(w, F[T])
        if I[RNG_LOW]:
            continue
        polled = poll(w, t_stop)
        if polled == POLL_REFILL:
            continue
        if polled == POLL_STOP:
            return RET_STOP
        process_file_events(w)
        if I[SCRIPT_CONN] >= 0:
            I[SCRIPT_STEP] = 0
            I[PHASE] = PH_SCRIPT
            continue
        time_events(w)
        I[PHASE] = PH_BEFORE_SLEEP


@entry
def finish(world, t_end):
    """Close the books at the horizon: requests still in flight count up to t_end."""
    w = as_world(world)
    I = w.I
    for c in range(I[N_CONNS]):
        r = w.cn_req[c]
        if r >= 0:
            if not w.cn_abandoned[c]:  # a timed-out request was counted when it failed
                add_interval(w, W_IN_SYSTEM, w.rq_t_issue[r], t_end)
                add_interval(w, W_BUSY_CONNS, w.cn_t_checkout[c], t_end)
            if w.cn_t_arrive[c] >= w.cn_t_checkout[c] and w.cn_t_arrive[c] < t_end:
                add_interval(w, W_IN_SERVER, w.cn_t_arrive[c], t_end)
    for p in range(I[N_POOLS]):
        r = w.pl_wait_head[p]
        for _ in range(w.pl_wait_n[p]):
            add_interval(w, W_IN_SYSTEM, w.rq_t_issue[r], t_end)
            add_interval(w, W_WAITERS, w.rq_t_issue[r], t_end)
            r = w.rq_next[r]
    return I[IN_FLIGHT]


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """The run's horizon and warm-up, the network's round trip, the event
    loop's CPU costs (per iteration, sleeping poll, read and write, accept and
    close, serverCron and clientsCron), ``hz`` and ``dynamic-hz``, the
    version's read/write path, and epoll's ready list and
    ``clients_pending_write``."""
    import numpy as np

    from redsim.model import state as S
    from redsim.model.blueprint import US

    sc = b.scenario
    server, cpu = sc.server, sc.engine.cpu
    for idx, v in ((S.C_ITER, cpu.iteration), (S.C_WAKE, cpu.wakeup), (S.C_READ, cpu.read),
                   (S.C_READ_B, cpu.read_per_byte), (S.C_WRITE, cpu.write),
                   (S.C_WRITE_B, cpu.write_per_byte), (S.C_ACCEPT, cpu.accept),
                   (S.C_CLOSE, cpu.close), (S.C_CRON, cpu.cron), (S.C_TLS, cpu.tls_handshake),
                   (S.C_CRON_CLIENT, cpu.clients_cron_per_client)):
        b.F[idx] = v * US * cpu.scale
    hz = int(server.hz)  # clamped to CONFIG_MIN_HZ..CONFIG_MAX_HZ by the schema
    b.I[S.HZ_CONF] = hz
    b.I[S.HZ] = hz
    b.I[S.DYN_HZ] = 1 if server.dynamic_hz else 0
    b.F[S.CRON_WHEN] = 1.0 / hz
    b.I[S.BATCHING] = 1 if sc.engine.reply_batching else 0
    b.I[S.REDIS_62] = 1 if sc.redis_version == "6.2" else 0
    b.I[S.REDIS_72] = 1 if sc.redis_version == "7.2" else 0
    svc = cpu.service_dist()
    if svc is None:  # a fixed factor of 1; low, high and sigma unused (0)
        b.I[S.SVC_KIND], b.F[S.SVC_MEAN] = S.DIST_FIXED, 1.0
        b.F[S.SVC_LOW], b.F[S.SVC_HIGH], b.F[S.SVC_SIGMA] = 0.0, 0.0, 0.0
    else:
        b.I[S.SVC_KIND], b.F[S.SVC_MEAN], b.F[S.SVC_LOW], b.F[S.SVC_HIGH], b.F[S.SVC_SIGMA] = \
            b.dist(svc)
    b.I[S.PHASE] = S.PH_BEFORE_SLEEP
    C = b.size.conns
    b.extra["lists"] = {"ready": np.zeros(max(C, 1), np.int64),
                        "pw": np.zeros(max(C, 1), np.int64)}
