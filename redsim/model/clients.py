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

from redsim.model import client_memory, client_threads, events, linked_fifo, network
from redsim.model.jit import entry, leaf, step
from redsim.model.ring import wrap
from redsim.model.rng import draw, exponential, uniform
from redsim.model.sizing import connection_rows, memoryless_group, request_slots
from redsim.model.state import (
    CONNECTED,
    EV_CLI_POLL,
    EV_CLOSED,
    EV_GROUP_OFF,
    EV_GROUP_ON,
    EV_ISSUE,
    EV_OPEN_ARRIVAL,
    EV_PHASE,
    EV_RAMP,
    EV_REAP,
    EV_REFUSED,
    EV_REPLY,
    EV_REPLY_READ,
    EV_RESUME,
    EV_THINK_CLOCK,
    EV_TIMEOUT,
    EV_TRACE,
    IN_FLIGHT,
    KIND_CLOSED,
    KIND_OPEN,
    KIND_TRACE,
    MAX_PASS_REC,
    MAXCLIENTS,
    N_CONNS,
    N_GROUPS,
    N_PASS,
    N_PASS_FIELDS,
    N_POOLS,
    PENDING_CLOSE,
    PENDING_REFUSED,
    REQ_DONE,
    REQ_FAILED,
    REQ_ISSUED,
    REQ_REFUSED,
    REQ_REJECTED,
    REQ_TIMEOUT,
    RTT_HALF,
    STAT_CONNECTIONS,
    STREAMS_PER_GROUP,
    W_BUSY_CONNS,
    W_IN_SYSTEM,
    W_WAITERS,
    WI_CLOSED,
    WI_FAILED,
    WI_ISSUED,
    WI_OPENED,
    WI_REFUSED,
    WI_REJECTED,
    WI_TIMEOUT,
)
from redsim.model.world import as_world
from redsim.observe import groups
from redsim.observe import metrics as M
from redsim.observe.bins import add_interval, count, record_latency

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "CONNECTED", "i8", "-", "state", "open connections now (INFO connected_clients)"),
    ("I", "STAT_CONNECTIONS", "i8", "-", "counter",
     "server.stat_numconnections: connections opened since start"),
    ("I", "REQ_ISSUED", "i8", "-", "counter",
     "requests issued since start (a pool's rejections included; slotless arrivals not)"),
    ("I", "REQ_DONE", "i8", "-", "counter",
     "requests whose last reply byte reached the client, since start"),
    ("I", "REQ_FAILED", "i8", "-", "counter",
     "requests that failed because Redis closed their connection before answering"),
    ("I", "REQ_REJECTED", "i8", "-", "counter",
     "requests given up since start: pool's wait queue full, or no free request slot for an "
     "arrival"),
    ("I", "IN_FLIGHT", "i8", "-", "state",
     "requests issued and not yet completed or rejected (waiting or on a connection) now"),
    ("I", "PENDING_CLOSE", "i8", "-", "state",
     "connections the clients closed whose freeClient the main thread has not yet run"),
    ("I", "REQ_TIMEOUT", "i8", "-", "counter",
     "requests that failed at their group's client timeout, since start"),
    ("I", "REQ_REFUSED", "i8", "-", "counter",
     "requests whose new connection Redis refused at maxclients (INFO rejected_connections)"),
    ("I", "PENDING_REFUSED", "i8", "-", "state",
     "connections refused at maxclients whose accept the main thread has not yet paid"),
    ("I", "MAXCLIENTS", "i8", "-", "config",
     "maxclients: connections Redis holds at most; the next one is refused"),
    ("I", "N_CONNS", "i8", "-", "size", "connection slots (cn rows): the pools' max sizes summed"),
    ("I", "N_POOLS", "i8", "-", "size",
     "connection pools (pl rows): one per process of every group"),
    ("I", "N_GROUPS", "i8", "-", "size", "client groups of the scenario (gp rows)"),
    ("I", "N_PASS", "i8", "-", "counter",
     "trace passes recorded in rc_passes so far (at most MAX_PASS_REC)"),
    ("wf", "W_IN_SYSTEM", "f8", "s", "time",
     "requests in the system (issued, not yet completed) integrated over the window, s"),
    ("wf", "W_BUSY_CONNS", "f8", "s", "time",
     "connections checked out (busy) integrated over the window, s"),
    ("wf", "W_WAITERS", "f8", "s", "time",
     "requests waiting in the pools for a connection integrated over the window, s"),
    ("wi", "WI_ISSUED", "i8", "-", "count",
     "requests issued by the clients in the window (offered load)"),
    ("wi", "WI_CONNECTED", "i8", "-", "gauge",
     "open connections at the window's end (connected_clients)"),
    ("wi", "WI_IN_FLIGHT", "i8", "-", "gauge",
     "requests in flight at the window's end (IN_FLIGHT)"),
    ("wi", "WI_FAILED", "i8", "-", "count",
     "requests failed because Redis closed their connection before answering"),
    ("wi", "WI_REJECTED", "i8", "-", "count",
     "requests given up by the clients in the window (REQ_REJECTED)"),
    ("wi", "WI_OPENED", "i8", "-", "count", "connections opened in the window"),
    ("wi", "WI_CLOSED", "i8", "-", "count",
     "connections closed by their pools' reapers in the window"),
    ("wi", "WI_TIMEOUT", "i8", "-", "count", "requests failed at the client timeout in the window"),
    ("wi", "WI_REFUSED", "i8", "-", "count",
     "new connections refused at maxclients in the window (their requests failed)"),
    ("cn", "pool", "i8", "-", "config", "owning pool"),
    ("cn", "group", "i8", "-", "config", "owning client group"),
    ("cn", "is_open", "i8", "-", "state", "1 once connected, 0 when closed / never opened"),
    ("cn", "srv_closed", "i8", "-", "state",
     "1: the server closed it while it sat idle in its pool (timeout); the client "
     "finds out at its next checkout"),
    ("cn", "req", "i8", "-", "state", "request slot in flight on this connection, -1 if none"),
    ("cn", "cmds_left", "i8", "-", "state", "commands of the request not yet read by Redis"),
    ("cn", "partial", "i8", "B", "state",
     "bytes of the next command already read (a command split across reads)"),
    ("cn", "next_cmd", "i8", "-", "state", "generated-but-unread command id, -1 if none"),
    ("cn", "next_bytes", "i8", "B", "state",
     "the generated command's request bytes (RESP, as sent)"),
    ("cn", "next_reply", "i8", "B", "state",
     "the generated command's reply bytes (corrected by call from the keyspace)"),
    ("cn", "next_scale", "f8", "-", "state",
     "the generated command's service-time multiplier (1, or an exponential draw)"),
    ("cn", "next_key", "i8", "-", "state",
     "the generated command's (first) key id in the keyspace; -1 for trace commands"),
    ("cn", "next_k", "i8", "-", "state", "the generated command's keys, members or fields (its k)"),
    ("cn", "next_n", "i8", "-", "state",
     "the generated command's count argument (its n; k for trace lines)"),
    ("cn", "next_value", "i8", "B", "state",
     "bytes of the value the generated command carries (or, for trace reads, returns)"),
    ("cn", "next_ttl", "i8", "s", "state", "the TTL the generated command sets, whole s; 0 = none"),
    ("cn", "big_first", "i8", "B", "state",
     "offset in the request of its first big argument's payload (>= PROTO_MBULK_BIG_ARG; "
     "protocol.big_args)"),
    ("cn", "big_period", "i8", "B", "state",
     "bytes from one big argument's payload to the next's (protocol.big_args)"),
    ("cn", "big_n", "i8", "-", "state",
     "big bulk arguments in the request; 0 = none (protocol.big_args)"),
    ("cn", "big_len", "i8", "B", "state",
     "one big argument's payload length with its CRLF (protocol.big_args)"),
    ("cn", "reply_bytes", "i8", "B", "state", "reply bytes queued on the client, not yet written"),
    ("cn", "reply_nodes", "i8", "-", "state",
     "6.2: reply buffers holding the queued reply (c->buf + list nodes), one write() each"),
    ("cn", "tail_room", "i8", "B", "state", "6.2: free bytes in the last of those reply buffers"),
    ("cn", "in_pw", "i8", "-", "state", "1 while on the clients-pending-write list"),
    ("cn", "new", "i8", "-", "state", "1 until Redis has done the accept work for it"),
    ("cn", "t_arrive", "f8", "s", "state", "when the current request reached the server socket"),
    ("cn", "t_checkout", "f8", "s", "state",
     "when the client took it from the pool for the current request"),
    ("cn", "t_idle", "f8", "s", "state", "when it was last returned to the pool"),
    ("cn", "deadline", "f8", "s", "state",
     "when the request on it times out (group timeout > 0), s"),
    ("cn", "timer", "i8", "-", "state", "1 while an EV_TIMEOUT for it is pending"),
    ("cn", "abandoned", "i8", "-", "state",
     "1: its client timed out and closed it; Redis still holds it until it frees the client"),
    ("rq", "group", "i8", "-", "config", "the client group this request slot belongs to"),
    ("rq", "pool", "i8", "-", "state",
     "the pool (process) its request uses: fixed for closed-loop sources, drawn per arrival "
     "otherwise"),
    ("rq", "t_issue", "f8", "s", "state", "when the request was issued (think end / arrival)"),
    ("rq", "next", "i8", "-", "state", "next request in its pool's waiter list, -1 at the tail"),
    ("rq", "trace_pos", "i8", "-", "state", "trace sources: next line to send"),
    ("rq", "active", "i8", "-", "state",
     "closed/trace sources: 0 once a `replay: once` trace is done"),
    ("rq", "fails", "i8", "-", "state",
     "closed/trace sources: requests failed in a row (timeout, refused); sets the backoff"),
    ("rq", "dormant", "i8", "-", "state",
     "closed/trace sources: 1 while parked because their group is off (stop, surge)"),
    ("rq", "free_stack", "i8[]", "-", "state",
     "open-loop/recorded-trace/memoryless groups: free slots, by group"),
    ("rq", "pass_t0", "f8[]", "s", "state",
     "trace sources: when the current pass over the trace began, s"),
    ("pl", "group", "i8", "-", "config",
     "the client group this pool (one process's pool) belongs to; not read by the kernel"),
    ("pl", "max_size", "i8", "-", "config", "pool.max-size: most connections the pool opens"),
    ("pl", "slots", "i8", "-", "config",
     "connection rows of the pool: max_size, times ABANDON_ROWS + 1 with a client timeout "
     "(rows of connections the client closed and Redis has not freed yet)"),
    ("pl", "n_open", "i8", "-", "state", "connections the pool has open now (idle or busy)"),
    ("pl", "lifo", "i8", "-", "config",
     "1: pool.checkout lifo (newest idle connection first); 0: fifo"),
    ("pl", "base", "i8", "-", "config",
     "first connection slot of this pool; slots [base, base+max_size)"),
    ("pl", "idle_head", "i8", "-", "state",
     "ring index (in idle_ring[base:base+max_size]) of the oldest idle connection"),
    ("pl", "idle_n", "i8", "-", "state", "idle connections in the pool's idle ring"),
    ("pl", "free_n", "i8", "-", "state",
     "stack of never-opened/closed slots in free_slots[base:...]"),
    ("pl", "wait_head", "i8", "-", "state",
     "first (oldest) request slot waiting for a connection, -1 if none"),
    ("pl", "wait_tail", "i8", "-", "state",
     "last request slot waiting for a connection (the list links through rq next)"),
    ("pl", "wait_n", "i8", "-", "state",
     "requests waiting for a connection (bounded by pool.max-waiters)"),
    ("pl", "thinking", "i8", "-", "state", "memoryless groups: the process's threads now thinking"),
    ("pl", "park", "i8", "-", "state",
     "memoryless groups: the process's threads to park as their requests end (a phase cut "
     "threads while they were out)"),
    ("pl", "idle_ring", "i8[]", "-", "state",
     "the pools' idle rings of connection slots, pool p's at [base, base+max_size)"),
    ("pl", "free_slots", "i8[]", "-", "state",
     "the pools' stacks of unopened connection slots, pool p's at [base, base+free_n)"),
    ("gp", "kind", "i8", "-", "config", "KIND_CLOSED, KIND_OPEN or KIND_TRACE"),
    ("gp", "pipeline", "i8", "-", "config", "commands sent per request (pipeline depth)"),
    ("gp", "processes", "i8", "-", "config", "client processes, each with its own pool"),
    ("gp", "pool_base", "i8", "-", "config",
     "first pool (pl row) of the group; pools [pool_base, pool_base+processes)"),
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
    ("gp", "vs_kind", "i8", "-", "config",
     "value size distribution: DIST_FIXED, DIST_EXPONENTIAL, ..."),
    ("gp", "vs_mean", "f8", "B", "config", "value size's mean, B"),
    ("gp", "vs_low", "f8", "B", "config",
     "value size's uniform low bound, B (empirical: first table point)"),
    ("gp", "vs_high", "f8", "B", "config",
     "value size's uniform high bound, B (empirical: last table point)"),
    ("gp", "vs_sigma", "f8", "-", "config", "value size's lognormal sigma (of the log)"),
    ("gp", "key_size", "i8", "B", "config", "key length, B"),
    ("gp", "keys", "i8", "-", "config",
     "keys the group draws from: key ids 0..keys-1 (keyspace.keys)"),
    ("gp", "zipf_base", "i8", "-", "config",
     "offset of the group's CDF in tb zipf_cdf; -1 = uniform keys"),
    ("gp", "mix_start", "i8", "-", "config",
     "first row of the group's command mix in the tb mix_* tables"),
    ("gp", "mix_end", "i8", "-", "config", "one past the last row of the group's command mix"),
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
    ("gp", "idle_timeout", "f8", "s", "config",
     "pool.idle-timeout: an idle connection is closed after this; 0 = never"),
    ("gp", "reap_interval", "f8", "s", "config",
     "pool.reap-interval: time between the pool reaper's runs"),
    ("gp", "max_waiters", "i8", "-", "config",
     "pool.max-waiters: requests that may wait for a connection, per pool"),
    ("gp", "retry_backoff", "f8", "s", "config",
     "pool.retry-backoff: a source's wait after a rejected request"),
    ("gp", "start", "f8", "s", "config",
     "when the group starts sending (start), s from the run's start"),
    ("gp", "stop", "f8", "s", "config", "when the group stops sending (stop), s; inf = never"),
    ("gp", "surge_every", "f8", "s", "config", "surge.every, s; 0 = no surges"),
    ("gp", "surge_for", "f8", "s", "config", "surge.for: each surge's length, s"),
    ("gp", "lifecycle", "i8", "-", "config", "1: the group has a stop or surges"),
    ("gp", "on", "i8", "-", "state", "1 while the group sends (0 after a stop, between surges)"),
    ("gp", "t_on", "f8", "s", "state", "when the group's current (or last) surge began, s"),
    ("gp", "chain", "i8", "-", "state",
     "open-loop and memoryless groups: 1 while their arrival or think clock is scheduled"),
    ("gp", "timeout", "f8", "s", "config", "the client timeout (timeout), s; 0 = none"),
    ("gp", "connect_timeout", "f8", "s", "config",
     "connect-timeout: a new connection's allowance for its handshake, s"),
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
    ("gp", "bo_base", "f8", "s", "config", "reconnect.backoff: first wait after a failure, s"),
    ("gp", "bo_max", "f8", "s", "config", "reconnect.max-backoff: longest wait, s"),
    ("gp", "bo_jitter", "f8", "-", "config", "reconnect.jitter: random fraction of a wait"),
    ("gp", "tls", "i8", "-", "config", "1: the group connects over TLS (tls)"),
    ("gp", "stream", "i8", "-", "config", "first of this group's random streams"),
    ("gp", "prof_pos", "i8", "-", "state", "open loop: current profile segment"),
    ("gp", "trace_t0", "f8", "s", "state", "recorded trace: simulated time of line 0"),
    ("gp", "trace_next", "i8", "-", "state", "recorded trace: next line to send"),
    ("gp", "free_n", "i8", "-", "state",
     "free request slots (open loop / recorded trace / memoryless)"),
    ("gp", "memoryless", "i8", "-", "config",
     "1: closed loop with exponential think, run as one clock (clients.py)"),
    ("gp", "threads", "i8", "-", "config", "sources per process"),
    ("gp", "write_once", "f8", "-", "config",
     "fraction of writes that store a never-used key (keyspace.write-once)"),
    ("tb", "mix_cmd", "i8", "-", "config", "each mix row's command id"),
    ("tb", "mix_cum", "f8", "-", "config",
     "each mix row's cumulative weight within its group, 0 to 1"),
    ("tb", "mix_keys", "i8", "-", "config",
     "each mix row's keys, members or fields per command (its k)"),
    ("tb", "mix_count", "i8", "-", "config",
     "each mix row's count argument (its n; the shape's default if unset)"),
    ("tb", "mix_ttl", "i8", "s", "config", "each mix row's TTL, whole s; 0 = none"),
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
    ("tb", "zipf_cdf", "f8", "-", "config",
     "every zipf group's key CDF (key i's cumulative probability), from zipf_base"),
    ("rc", "passes", "f8", "-", "record",
     "one row of PASS_FIELDS per completed pass of a trace source"),
)


RESULTS = (
    M.Metric("mean_connected_clients", "-", M.SUM, "connected clients, mean of the "
             "post-warm-up windows' ends",
             value=lambda r: float(r.ts["connected_clients"][r.post].mean()),
             line=M.Line(220, "connected clients (mean)",
                         lambda s: f"{s['mean_connected_clients']:,.1f}")),
    M.Metric("mean_busy_connections", "-", M.SUM, "connections with a request out, time mean "
             "after the warm-up", value=M.time_mean("W_BUSY_CONNS"),
             line=M.Line(230, "busy connections (mean)",
                         lambda s: f"{s['mean_busy_connections']:,.1f}")),
    M.Metric("mean_in_system", "-", M.SUM, "requests issued and not answered, time mean after "
             "the warm-up", value=M.time_mean("W_IN_SYSTEM")),
    M.Metric("mean_pool_waiters", "-", M.SUM, "requests waiting for a pool's connection, time "
             "mean after the warm-up", value=M.time_mean("W_WAITERS")),
    M.Metric("total_connections_received", "-", M.SUM, "INFO total_connections_received",
             value=M.counter("STAT_CONNECTIONS")),
    M.Metric("requests_rejected", "-", M.SUM, "requests rejected by the clients' pools",
             value=M.counter("REQ_REJECTED"),
             line=M.Line(270, "requests rejected by pools",
                         lambda s: f"{s['requests_rejected']:,}")),
    M.Metric("requests_failed", "-", M.SUM, "requests lost with a connection Redis closed",
             value=M.counter("REQ_FAILED"),
             line=M.Line(290, "requests failed (connection closed)",
                         lambda s: f"{s['requests_failed']:,}",
                         when=lambda s: bool(s.get("connections_closed_by_server")))),
    M.Metric("requests_timed_out", "-", M.SUM, "requests whose client timeout passed",
             value=M.counter("REQ_TIMEOUT")),
    M.Metric("connections_refused", "-", M.SUM, "connections refused at maxclients",
             value=M.counter("REQ_REFUSED")),
    M.Metric("requests_issued_total", "-", M.SUM, "requests issued, warm-up included",
             value=M.counter("REQ_ISSUED")),
    M.Metric("requests_completed_total", "-", M.SUM, "requests completed, warm-up included",
             value=M.counter("REQ_DONE")),
    M.Metric("requests_pending_at_end", "-", M.SUM, "requests still out when the run ended",
             made_by="Result.from_world"),
    M.Metric("trace_passes", "-", M.SUM, "completed passes over a trace (all sources)",
             made_by="_persistence_summary",
             line=M.Line(510, "trace passes / mean time", lambda s: (
                 f"{s['trace_passes']:,} / " + M.fmt_s(s["trace_pass_mean_s"])),
                 when=lambda s: bool(s.get("trace_passes")))),
    M.Metric("trace_pass_mean_s", "s", M.MEAN, "a trace pass's mean duration (None without "
             "one)", made_by="_persistence_summary"),
    M.Column(40, "offered_per_sec", "1/s", "requests issued per second", M.rate("WI_ISSUED")),
    M.Column(50, "rejected_per_sec", "1/s", "requests rejected by the pools per second",
             M.rate("WI_REJECTED")),
    M.Column(60, "failed_per_sec", "1/s", "requests lost with a connection Redis closed, "
             "per second", M.rate("WI_FAILED")),
    M.Column(70, "timeouts_per_sec", "1/s", "requests whose client timeout passed, per second",
             M.rate("WI_TIMEOUT")),
    M.Column(80, "refused_per_sec", "1/s", "connections refused at maxclients per second",
             M.rate("WI_REFUSED")),
    M.Column(90, "connected_clients", "-", "INFO connected_clients at the window's end",
             M.gauge("WI_CONNECTED")),
    M.Column(100, "connections_opened", "-", "connections opened in the window",
             M.gauge("WI_OPENED")),
    M.Column(110, "connections_closed", "-", "connections closed in the window",
             M.gauge("WI_CLOSED")),
    M.Column(130, "busy_connections", "-", "connections with a request out, time mean",
             M.level("W_BUSY_CONNS")),
    M.Column(140, "pool_waiters", "-", "requests waiting for a pool's connection, time mean",
             M.level("W_WAITERS")),
    M.Column(160, "in_system", "-", "requests issued and not answered, time mean",
             M.level("W_IN_SYSTEM")),
    M.Column(170, "requests_in_flight", "-", "requests out at the window's end",
             M.gauge("WI_IN_FLIGHT")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

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
def pop_waiter(w, p):
    """The oldest request waiting for a connection of pool p, off its list."""
    r = w.pl_wait_head[p]
    w.pl_wait_head[p] = w.rq_next[r]
    w.pl_wait_n[p] -= 1
    return r


@leaf
def pool_return(w, p, c):
    """Put connection c back as the newest idle connection of pool p."""
    i = wrap(w.pl_idle_head[p] + w.pl_idle_n[p], w.pl_max_size[p])
    w.pl_idle_ring[w.pl_base[p] + i] = c
    w.pl_idle_n[p] += 1


@leaf
def free_row(w, p, c):
    """Connection row c of pool p may hold a new connection again."""
    w.pl_free_slots[w.pl_base[p] + w.pl_free_n[p]] = c
    w.pl_free_n[p] += 1


@leaf
def release_slot(w, p, c):
    """Connection slot c of pool p is closed on the client's side: free for a new one."""
    w.pl_n_open[p] -= 1
    free_row(w, p, c)


@leaf
def can_open(w, p):
    """1 if pool p may open another connection: below its max-size, with a free row."""
    return w.pl_n_open[p] < w.pl_max_size[p] and w.pl_free_n[p] > 0


@leaf
def dial(w, c, te):
    """Connection slot c connects at te; Redis pays accept/createClient when it
    first reads it."""
    I = w.I
    w.cn_is_open[c] = 1
    w.cn_new[c] = 1
    I[CONNECTED] += 1
    I[STAT_CONNECTIONS] += 1
    groups.connected(w, w.cn_group[c], 1)
    count(w, WI_OPENED, te, 1)


@leaf
def handshake(w, g):
    """Time from dialling to sending the first request, s: the TCP handshake's
    round trip, and TLS 1.3's one more."""
    return 2.0 * w.F[RTT_HALF] * (1 + w.gp_tls[g])


@leaf
def refused_now(w):
    """1 if Redis would refuse a new connection now: it holds ``maxclients``
    (``acceptCommonHandler``: ``listLength(server.clients) >= maxclients``;
    clients whose socket the other end closed count until freed)."""
    return w.I[CONNECTED] >= w.I[MAXCLIENTS]


@step
def refuse(w, r, te):
    """Request r's new connection is refused at maxclients: Redis accepts it,
    writes ``-ERR max number of clients reached`` and closes it (the main thread
    pays an accept, ``PENDING_REFUSED``); the error reaches the client after the
    handshake and one more round trip, and the request fails then."""
    w.I[PENDING_REFUSED] += 1
    events.push(w, te + handshake(w, w.rq_group[r]) + 2.0 * w.F[RTT_HALF], EV_REFUSED, r)


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
def open_connection(w, p, te):
    """Open a new connection in pool p (the caller checked a slot is free)."""
    w.pl_free_n[p] -= 1
    c = w.pl_free_slots[w.pl_base[p] + w.pl_free_n[p]]
    w.pl_n_open[p] += 1
    dial(w, c, te)
    return c


@step
def close_connection(w, c, te):
    """The client closes an idle connection; Redis frees the client later (or
    freed it already, if it closed it first: ``clients_cron.handle_timeout``)."""
    p = w.cn_pool[c]
    if w.cn_srv_closed[c]:
        w.cn_srv_closed[c] = 0  # only the client's end of the socket was left
    else:
        server_frees(w, c, te)
    release_slot(w, p, c)


@step
def server_frees(w, c, te):
    """Redis frees connection c, whose client closed it: the EOF is read (and
    ``freeClient`` runs, ``PENDING_CLOSE``) on the main thread; its memory is
    freed here."""
    I = w.I
    w.cn_is_open[c] = 0
    client_memory.free_client(w, c)
    I[CONNECTED] -= 1
    groups.connected(w, w.cn_group[c], -1)
    I[PENDING_CLOSE] += 1
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


# ---- client timeouts -----------------------------------------------------------


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
def timer(w, c, te):
    """Connection c's timeout timer fires at te."""
    w.cn_timer[c] = 0
    if w.cn_req[c] < 0 or w.cn_abandoned[c]:
        return
    if w.cn_deadline[c] > te:  # a later request's deadline
        w.cn_timer[c] = 1
        events.push(w, w.cn_deadline[c], EV_TIMEOUT, c)
        return
    time_out(w, c, te)


@step
def time_out(w, c, te):
    """The request on c passed its group's timeout: it fails, and the client
    closes the connection (redis-py, Jedis and go-redis all drop a connection
    whose read timed out: its reply may still come). Redis keeps the client,
    runs what it has read and frees it when it finds the socket closed
    (``abandoned_freed``); the pool may open another connection at once."""
    r = w.cn_req[c]
    p = w.cn_pool[c]
    request_failed(w, r, c, te, REQ_TIMEOUT, w.gp_timeouts, WI_TIMEOUT)
    w.cn_abandoned[c] = 1
    w.pl_n_open[p] -= 1  # the client's end is closed; the row waits for Redis
    serve_waiter(w, p, te)
    fail_source(w, r, te)


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
def abandoned_freed(w, c, te, server_closed_it):
    """Abandoned connection c is done with on Redis's side at te: its reply was
    written to a socket the client had closed, and Redis reads the EOF and frees
    the client (deviation: at most half an RTT late — the reply's arrival time,
    not the close's), or Redis had closed it itself. Its row is free again."""
    w.cn_abandoned[c] = 0
    w.cn_req[c] = -1
    if server_closed_it:
        w.cn_srv_closed[c] = 0
    else:
        server_frees(w, c, te)
    p = w.cn_pool[c]
    free_row(w, p, c)
    serve_waiter(w, p, te)


@leaf
def backoff(w, r):
    """The wait before source r's next request after its ``rq_fails``-th failure
    in a row, s (``Reconnect``: capped doubling, then jitter)."""
    g = w.rq_group[r]
    k = w.rq_fails[r]
    b = w.gp_bo_base[g] * 2.0 ** min(k - 1, 60)
    if b > w.gp_bo_max[g]:
        b = w.gp_bo_max[g]
    j = w.gp_bo_jitter[g]
    if j > 0.0:
        b *= 1.0 - j * uniform(w, w.gp_stream[g])
    return b


@step
def fail_source(w, r, te):
    """Source r's request failed at te (timeout, refused): back off, then go on.
    (An arrival's slot is simply freed: arrivals keep their own pace.)"""
    g = w.rq_group[r]
    if w.gp_kind[g] == KIND_OPEN or (w.gp_kind[g] == KIND_TRACE and w.gp_recorded[g]):
        finish_source(w, r, te, 0.0)
        return
    w.rq_fails[r] += 1
    finish_source(w, r, te, backoff(w, r))


@step
def refused(w, r, te):
    """The maxclients error for request r's connection reached the client at te."""
    request_failed(w, r, -1, te, REQ_REFUSED, w.gp_refused, WI_REFUSED)
    fail_source(w, r, te)


# ---- lifecycles: stop and surges ---------------------------------------------------


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


@leaf
def resume(w, p):
    """A thread of memoryless pool p is free to think again, unless a phase
    cut the process's threads while it was out (``pl_park``)."""
    if w.pl_park[p] > 0:
        w.pl_park[p] -= 1
    else:
        w.pl_thinking[p] += 1


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


@step
def server_closed(w, c, te):
    """Redis closed connection c before answering its request (client eviction):
    the EOF reaches the client at te. The request fails; the client closes its
    end, which frees the pool's slot for a waiter, and the source tries again
    after its group's ``retry-backoff``."""
    if w.cn_abandoned[c]:  # its client had given up on it already
        abandoned_freed(w, c, te, True)
        return
    r = w.cn_req[c]
    request_failed(w, r, c, te, REQ_FAILED, w.gp_failed, WI_FAILED)
    w.cn_req[c] = -1
    w.cn_srv_closed[c] = 0
    p = w.cn_pool[c]
    release_slot(w, p, c)
    serve_waiter(w, p, te)  # the freed slot goes to the oldest waiter, on a new connection
    finish_source(w, r, te, w.gp_retry_backoff[w.rq_group[r]])


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
        w.gp_rejected[g] += 1
        groups.failed(w, g, te)
        count(w, WI_REJECTED, te, 1)
        return -1
    w.rq_pool[r] = first + int(u * nproc)
    return r


@step
def open_arrival(w, g, te):
    """An open-loop arrival at te: pick a process, issue, schedule the next."""
    if not w.gp_on[g]:  # the group is off: its arrivals stop until it is on again
        w.gp_chain[g] = 0
        return
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
    if not w.gp_on[g]:  # the group is off: the clock stops until it is on again
        w.gp_chain[g] = 0
        return
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
        g = w.cn_group[ident]
        if w.cn_abandoned[ident]:  # the reply of a request that timed out
            abandoned_freed(w, ident, te, False)
        elif w.gp_cli_cpu[g] > 0.0:  # a client thread on the host reads it first
            client_threads.reply_in(w, g, ident, te)
        else:
            complete(w, ident, te)
    elif kind == EV_REPLY_READ:
        client_threads.written(w, w.cn_group[ident])
        complete(w, ident, te)
    elif kind == EV_CLI_POLL:
        client_threads.poll(w, ident, te)
    elif kind == EV_ISSUE:
        if w.rq_active[ident]:
            if may_send(w, ident):
                issue(w, ident, te)
            else:
                w.rq_dormant[ident] = 1
    elif kind == EV_OPEN_ARRIVAL:
        open_arrival(w, ident, te)
    elif kind == EV_TRACE:
        trace_arrival(w, ident, te)
    elif kind == EV_THINK_CLOCK:
        think_clock(w, ident, te)
    elif kind == EV_RESUME:
        resume(w, ident)
    elif kind == EV_PHASE:
        phase_step(w, ident, te)
    elif kind == EV_REAP:
        reap(w, ident, te)
    elif kind == EV_CLOSED:
        server_closed(w, ident, te)
    elif kind == EV_TIMEOUT:
        timer(w, ident, te)
    elif kind == EV_REFUSED:
        refused(w, ident, te)
    elif kind == EV_GROUP_OFF:
        group_off(w, ident, te)
    elif kind == EV_GROUP_ON:
        group_on(w, ident, te)
    elif kind == EV_RAMP:
        ramp_step(w, ident, te)


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
        while w.gp_ph_pos[g] < w.gp_ph_end[g] and w.tb_ph_t[w.gp_ph_pos[g]] <= start:
            w.gp_ph_pos[g] += 1
            apply_phase(w, g, w.gp_ph_pos[g] - 1, start)
        if w.gp_ph_pos[g] < w.gp_ph_end[g]:
            events.push(w, w.tb_ph_t[w.gp_ph_pos[g]], EV_PHASE, g)
        if kind == KIND_OPEN:
            t = next_arrival(w, g, start)
            if t < math.inf:
                events.push(w, t, EV_OPEN_ARRIVAL, g)
        elif kind == KIND_TRACE and w.gp_recorded[g]:
            events.push(w, start, EV_TRACE, g)
        elif w.gp_memoryless[g]:  # every thread starts thinking at the group's start
            if w.gp_ramp_gap[g] > 0.0:  # or one by one over the ramp
                first = w.gp_pool_base[g]
                for p in range(first, first + w.gp_processes[g]):
                    w.pl_thinking[p] = 0
                w.gp_ramp_left[g] = w.gp_processes[g] * w.gp_threads[g]
                ramp_step(w, g, start)
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
                events.push(w, start + i * w.gp_ramp_gap[g] + think_time(w, g), EV_ISSUE, r)
        if w.gp_idle_timeout[g] > 0:
            events.push(w, start + w.gp_reap_interval[g], EV_REAP, g)
        if w.gp_lifecycle[g]:
            schedule_off(w, g, start)


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

_KIND = {"closed": KIND_CLOSED, "open": KIND_OPEN, "trace": KIND_TRACE}


def configure(b) -> None:
    """The client groups, their pools, connection slots and request slots, and
    the tables they draw from (mix, open-loop profile, traces, zipf CDFs). A
    trace group's parsed trace is ``b.traces``' (the driver parsed it).

    Sizes for later steps: ``conns``, ``slots``, ``groups``, ``max_pipeline``
    and ``timed`` (sources that draw a think time each).
    """
    import numpy as np

    from redsim.model import collection
    from redsim.model import state as S
    from redsim.model.blueprint import f64, i64
    from redsim.model.call import zipf_cdf
    from redsim.model.commands import _TABLE, COMMAND_IDS, DEFAULT_COUNT

    groups = b.scenario.clients
    G = len(groups)
    pool_group, pool_max, pool_base, pool_rows = [], [], [], []
    conn_pool, conn_group = [], []
    slot_group, slot_pool = [], []
    # The group fields this module declares (other mechanisms fill their own).
    g_fields: dict[str, list] = {f.name: [] for f in S.LAYOUT.parts["gp"]
                                 if f.owner == "model.clients"}
    mix_cmd, mix_cum, mix_keys, mix_count, mix_ttl = [], [], [], [], []
    prof_t, prof_rate = [], []
    ph: dict[str, list] = {k: [] for k in ("t", "threads", "think_kind", "think_mean",
                                          "think_low", "think_high", "think_sigma")}
    zipf_parts: list[np.ndarray] = []
    zipf_len = 0
    tr_parts = []
    tr_parts_keys = []
    tr_len = 0
    coll_lo = collection.first_key_rows(b.scenario, b.traces)  # a command file's collections
    max_pipeline = 1
    for gi, grp in enumerate(groups):
        kind = _KIND[grp.kind]
        g_fields["kind"].append(kind)
        g_fields["pipeline"].append(grp.pipeline)
        max_pipeline = max(max_pipeline, grp.pipeline)
        g_fields["processes"].append(grp.processes)
        g_fields["pool_base"].append(len(pool_group))
        rows = connection_rows(grp)
        for _ in range(grp.processes):
            p = len(pool_group)
            pool_group.append(gi)
            pool_max.append(grp.pool.max_size)
            pool_rows.append(rows)
            pool_base.append(len(conn_pool))
            conn_pool.extend([p] * rows)
            conn_group.extend([gi] * rows)
        # Request slots: one per source for closed loops; a bounded free list for
        # arrivals (each process can hold max-size in flight + max-waiters waiting).
        g_fields["slot_base"].append(len(slot_group))
        recorded = kind == KIND_TRACE and grp.trace_timing == "recorded"
        memoryless = memoryless_group(grp)
        n_slots = request_slots(grp)
        if kind == KIND_OPEN or recorded or memoryless:
            slot_pool.extend([-1] * n_slots)
        else:
            for p in range(grp.processes):
                slot_pool.extend([g_fields["pool_base"][-1] + p] * grp.threads)
        slot_group.extend([gi] * n_slots)
        g_fields["n_slots"].append(n_slots)
        for prefix, d in (("think", grp.think), ("vs", grp.value_size)):
            k, mean, lo, hi, sig = b.dist(d)
            g_fields[f"{prefix}_kind"].append(k)
            g_fields[f"{prefix}_mean"].append(mean)
            g_fields[f"{prefix}_low"].append(lo)
            g_fields[f"{prefix}_high"].append(hi)
            g_fields[f"{prefix}_sigma"].append(sig)
        g_fields["key_size"].append(grp.key_size)
        g_fields["keys"].append(grp.keyspace.keys)
        if grp.keyspace.distribution == "zipf":
            g_fields["zipf_base"].append(zipf_len)
            part = zipf_cdf(grp.keyspace.keys, grp.keyspace.zipf_exponent)
            zipf_parts.append(part)
            zipf_len += len(part)
        else:
            g_fields["zipf_base"].append(-1)
        g_fields["mix_start"].append(len(mix_cmd))
        total = sum(m.weight for m in grp.mix)
        acc = 0.0
        for m in grp.mix:
            cid = COMMAND_IDS[m.command.upper()]
            acc += m.weight / total
            mix_cmd.append(cid)
            mix_cum.append(acc)
            mix_keys.append(m.keys)
            shape = _TABLE[cid].shape
            mix_count.append(m.count if m.count is not None else DEFAULT_COUNT.get(shape, 0))
            mix_ttl.append(int(math.ceil(m.ttl)) if m.ttl else 0)
        mix_cum[-1] = 1.0
        g_fields["mix_end"].append(len(mix_cmd))
        g_fields["prof_start"].append(len(prof_t))
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
        g_fields["prof_end"].append(len(prof_t))
        g_fields["trace_start"].append(tr_len)
        if kind == KIND_TRACE:
            tr = b.trace(gi)
            tr_parts.append(tr)
            tr_parts_keys.append((tr, grp.keyspace.keys, coll_lo[gi]))
            tr_len += len(tr.cmd)
        g_fields["trace_end"].append(tr_len)
        g_fields["replay_loop"].append(1 if grp.replay == "loop" else 0)
        g_fields["recorded"].append(1 if recorded else 0)
        g_fields["idle_timeout"].append(grp.pool.idle_timeout)
        g_fields["reap_interval"].append(grp.pool.reap_interval)
        g_fields["max_waiters"].append(grp.pool.max_waiters)
        g_fields["retry_backoff"].append(grp.pool.retry_backoff)
        g_fields["start"].append(grp.start)
        stop = math.inf if grp.stop is None else grp.stop
        g_fields["stop"].append(stop)
        g_fields["surge_every"].append(grp.surge.every if grp.surge else 0.0)
        g_fields["surge_for"].append(grp.surge.length if grp.surge else 0.0)
        g_fields["lifecycle"].append(1 if (grp.surge or grp.stop is not None) else 0)
        g_fields["on"].append(1)
        g_fields["t_on"].append(grp.start)
        g_fields["chain"].append(1)
        g_fields["timeout"].append(grp.timeout)
        g_fields["connect_timeout"].append(grp.timeout if grp.connect_timeout is None
                                           else grp.connect_timeout)
        g_fields["ramp_gap"].append(grp.ramp / (grp.processes * grp.threads))
        g_fields["ramp_left"].append(0)
        g_fields["active"].append(grp.threads)
        g_fields["ph_pos"].append(len(ph["t"]))
        for phase in (grp.phases or ()) if kind != KIND_OPEN else ():
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
        g_fields["ph_end"].append(len(ph["t"]))
        g_fields["bo_base"].append(grp.reconnect.backoff)
        g_fields["bo_max"].append(grp.reconnect.max_backoff)
        g_fields["bo_jitter"].append(grp.reconnect.jitter)
        g_fields["tls"].append(1 if grp.tls else 0)
        g_fields["stream"].append(1 + STREAMS_PER_GROUP * gi)
        g_fields["prof_pos"].append(g_fields["prof_start"][-1])
        g_fields["trace_t0"].append(grp.start)
        g_fields["trace_next"].append(0)
        g_fields["free_n"].append(n_slots if (kind == KIND_OPEN or recorded or memoryless)
                                  else 0)
        g_fields["memoryless"].append(1 if memoryless else 0)
        g_fields["threads"].append(grp.threads)
        g_fields["write_once"].append(grp.keyspace.write_once)

    C, R, P = len(conn_pool), len(slot_group), len(pool_group)
    float_fields = {f.name for f in S.LAYOUT.parts["gp"] if f.is_float}
    gp = {f: (f64(v) if f in float_fields else i64(v)) for f, v in g_fields.items()}
    b.fill("gp", **gp)
    b.fill("cn",
           pool=i64(conn_pool), group=i64(conn_group), is_open=np.zeros(C, np.int64),
           srv_closed=np.zeros(C, np.int64), ce_bucket=np.full(C, -1, np.int64),
           ce_entered=np.zeros(C, np.int64),
           req=np.full(C, -1, np.int64), cmds_left=np.zeros(C, np.int64),
           partial=np.zeros(C, np.int64), next_cmd=np.full(C, -1, np.int64),
           next_bytes=np.zeros(C, np.int64), next_reply=np.zeros(C, np.int64),
           next_scale=np.ones(C), next_key=np.full(C, -1, np.int64),
           next_k=np.zeros(C, np.int64), next_n=np.zeros(C, np.int64),
           next_value=np.zeros(C, np.int64), next_ttl=np.zeros(C, np.int64),
           big_first=np.zeros(C, np.int64), big_period=np.zeros(C, np.int64),
           big_n=np.zeros(C, np.int64), big_len=np.zeros(C, np.int64),
           reply_bytes=np.zeros(C, np.int64), reply_nodes=np.zeros(C, np.int64),
           qb_alloc=np.zeros(C, np.int64), qb_peak=np.zeros(C, np.int64), t_read=np.zeros(C),
           qb_room=np.zeros(C, np.int64), qb_hdr=np.zeros(C, np.int64),
           buf_usable=np.zeros(C, np.int64), buf_peak=np.zeros(C, np.int64),
           t_buf_reset=np.zeros(C), mem=np.zeros(C, np.int64), mem_info=np.zeros(C, np.int64),
           tail_room=np.zeros(C, np.int64), in_pw=np.zeros(C, np.int64),
           new=np.zeros(C, np.int64), t_arrive=np.full(C, -1.0), t_checkout=np.zeros(C),
           t_idle=np.zeros(C), deadline=np.zeros(C), timer=np.zeros(C, np.int64),
           abandoned=np.zeros(C, np.int64))
    free_slots = np.empty(C, np.int64)
    for p in range(P):
        base, m = pool_base[p], pool_rows[p]
        free_slots[base:base + m] = np.arange(base + m - 1, base - 1, -1)  # lowest slot first
    b.fill("pl",
           group=i64(pool_group), max_size=i64(pool_max), slots=i64(pool_rows),
           n_open=np.zeros(P, np.int64),
           lifo=i64([1 if groups[g].pool.checkout == "lifo" else 0 for g in pool_group]),
           base=i64(pool_base), idle_head=np.zeros(P, np.int64), idle_n=np.zeros(P, np.int64),
           free_n=i64(pool_rows), wait_head=np.full(P, -1, np.int64),
           wait_tail=np.full(P, -1, np.int64), wait_n=np.zeros(P, np.int64),
           thinking=i64([groups[g].threads for g in pool_group]),
           park=np.zeros(P, np.int64),
           idle_ring=np.zeros(C, np.int64), free_slots=free_slots)
    free_stack = np.arange(R, dtype=np.int64)[::-1].copy()
    for g in range(G):  # each group's free list pops its lowest slot first
        base, n = gp["slot_base"][g], gp["n_slots"][g]
        free_stack[base:base + n] = np.arange(base + n - 1, base - 1, -1)
    b.fill("rq",
           group=i64(slot_group), pool=i64(slot_pool), t_issue=np.zeros(R),
           next=np.full(R, -1, np.int64), trace_pos=np.zeros(R, np.int64),
           active=np.ones(R, np.int64), free_stack=free_stack, pass_t0=np.full(R, -1.0),
           fails=np.zeros(R, np.int64), dormant=np.zeros(R, np.int64))
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
    b.fill("tb",
           mix_cmd=i64(mix_cmd), mix_cum=f64(mix_cum),
           mix_keys=i64(mix_keys), mix_count=i64(mix_count), mix_ttl=i64(mix_ttl),
           prof_t=f64(prof_t or [0.0]), prof_rate=f64(prof_rate or [0.0]),
           tr_cmd=tr["cmd"], tr_req_bytes=tr["req_bytes"], tr_reply_bytes=tr["reply_bytes"],
           tr_elems=tr["elems"], tr_value=tr["value"], tr_time=tr["time"], tr_key=tr["key"],
           **{f"tr_big_{f}": tr["big"][:, j].copy()
              for j, f in enumerate(("first", "period", "n", "len"))},
           zipf_cdf=np.concatenate(zipf_parts) if zipf_parts else np.ones(1),
           **{f"ph_{k}": (i64(v or [0]) if k in ("threads", "think_kind") else f64(v or [0.0]))
              for k, v in ph.items()})
    b.fill("rc", passes=np.zeros((MAX_PASS_REC if any(g.kind == "trace" for g in groups) else 1)
                                 * N_PASS_FIELDS))
    b.I[N_CONNS] = C
    b.I[MAXCLIENTS] = b.scenario.server.maxclients
    b.I[N_POOLS] = P
    b.I[N_GROUPS] = G
    b.size.conns, b.size.slots, b.size.groups = C, R, G
    b.size.max_pipeline = max_pipeline
    b.size.timed = sum(int(gp["n_slots"][g]) for g in range(G)
                       if gp["kind"][g] != KIND_OPEN and not gp["recorded"][g]
                       and not gp["memoryless"][g])
    b.info["groups"] = [g.name for g in groups]
