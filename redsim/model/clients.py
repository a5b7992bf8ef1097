"""The client side: client groups, the events that drive them, and what each
group asks for.

No Redis source: the client population — app processes, their threads or
arrival streams, and their connection pools — lives outside Redis; what it
follows is named in each module.

A client group is a set of app processes, each owning one connection pool
(``pools.py``). Its sources (``sources.py``) are the app threads (closed loop,
or trace replay) or a Poisson stream of arrivals (open loop); a request is
issued, sent on a pooled connection and completed when its reply is back
(``client_requests.py``), or fails at the client (``client_failures.py``:
timeouts, refusals, connections Redis closed, backoff); a group may start
over a ramp, stop, surge and change phase (``client_lifecycle.py``).

This module is the top of the client side: ``handle_event`` dispatches every
client-side event to them, the arrival events issue requests (open-loop
arrivals, recorded-time trace lines, the uniformized think clock's ticks),
and ``start_sources`` puts every source's first event in the event list. It
also declares what a group asks for: its command mix, keys and value sizes,
which the server loop draws each command from (``event_loop.generate_command``),
and each connection's command being read (``cn_next_*``, ``cn_big_*``) and
reply being written (``cn_reply_*``), which the server side keeps.

All functions here run on client time: the kernel processes these events in
(time, sequence) order from the event list (``events.py``), independently of
where the main thread's clock is.
"""

from __future__ import annotations

import math

from redsim.model import client_threads, events
from redsim.model.client_failures import abandoned_freed, refused, server_closed, timer
from redsim.model.client_lifecycle import (
    apply_phase,
    group_off,
    group_on,
    may_send,
    phase_step,
    ramp_step,
    schedule_off,
)
from redsim.model.client_requests import complete, issue
from redsim.model.jit import entry, step
from redsim.model.pools import reap
from redsim.model.rng import uniform
from redsim.model.sources import next_arrival, resume, take_slot, think_clock_gap, think_time
from redsim.model.state import (
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
    KIND_OPEN,
    KIND_TRACE,
    N_GROUPS,
    REQ_REJECTED,
    WI_REJECTED,
)
from redsim.model.world import as_world
from redsim.observe import groups
from redsim.observe import metrics as M
from redsim.observe.bins import count

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "N_GROUPS", "i8", "-", "size", "client groups of the scenario (gp rows)"),
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
    ("cn", "t_arrive", "f8", "s", "state", "when the current request reached the server socket"),
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
    ("tb", "zipf_cdf", "f8", "-", "config",
     "every zipf group's key CDF (key i's cumulative probability), from zipf_base"),
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
"""The client side's summary keys and time-series columns (``observe/metrics.py``),
made from the counters and series that ``pools``, ``client_requests`` and
``client_failures`` declare; kept in one block, in the order the summary has
always listed them."""


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


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """What each group asks for: its command mix (``tb_mix_*``), keys (uniform,
    or a Zipf CDF in ``tb_zipf_cdf``), key and value sizes, write-once share;
    and each connection's command and reply state, zeroed. Runs
    after ``sources.configure``: each group's value size follows the groups'
    think times in the empirical tables.

    Size for later steps: ``groups``.
    """
    import numpy as np

    from redsim.model.blueprint import f64, i64
    from redsim.model.call import zipf_cdf
    from redsim.model.commands import _TABLE, COMMAND_IDS, DEFAULT_COUNT

    groups = b.scenario.clients
    G = len(groups)
    gp: dict[str, list] = {k: [] for k in (
        "vs_kind", "vs_mean", "vs_low", "vs_high", "vs_sigma", "key_size", "keys",
        "zipf_base", "mix_start", "mix_end", "write_once")}
    mix_cmd, mix_cum, mix_keys, mix_count, mix_ttl = [], [], [], [], []
    zipf_parts: list[np.ndarray] = []
    zipf_len = 0
    for grp in groups:
        k, mean, lo, hi, sig = b.dist(grp.value_size)
        gp["vs_kind"].append(k)
        gp["vs_mean"].append(mean)
        gp["vs_low"].append(lo)
        gp["vs_high"].append(hi)
        gp["vs_sigma"].append(sig)
        gp["key_size"].append(grp.key_size)
        gp["keys"].append(grp.keyspace.keys)
        if grp.keyspace.distribution == "zipf":
            gp["zipf_base"].append(zipf_len)
            part = zipf_cdf(grp.keyspace.keys, grp.keyspace.zipf_exponent)
            zipf_parts.append(part)
            zipf_len += len(part)
        else:
            gp["zipf_base"].append(-1)
        gp["mix_start"].append(len(mix_cmd))
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
        gp["mix_end"].append(len(mix_cmd))
        gp["write_once"].append(grp.keyspace.write_once)

    floats = ("vs_mean", "vs_low", "vs_high", "vs_sigma", "write_once")
    b.fill("gp", **{f: (f64(v) if f in floats else i64(v)) for f, v in gp.items()})
    C = b.size.conns
    b.fill("cn",
           partial=np.zeros(C, np.int64), next_cmd=np.full(C, -1, np.int64),
           next_bytes=np.zeros(C, np.int64), next_reply=np.zeros(C, np.int64),
           next_scale=np.ones(C), next_key=np.full(C, -1, np.int64),
           next_k=np.zeros(C, np.int64), next_n=np.zeros(C, np.int64),
           next_value=np.zeros(C, np.int64), next_ttl=np.zeros(C, np.int64),
           big_first=np.zeros(C, np.int64), big_period=np.zeros(C, np.int64),
           big_n=np.zeros(C, np.int64), big_len=np.zeros(C, np.int64),
           reply_bytes=np.zeros(C, np.int64), reply_nodes=np.zeros(C, np.int64),
           tail_room=np.zeros(C, np.int64), in_pw=np.zeros(C, np.int64),
           t_arrive=np.full(C, -1.0))
    b.fill("tb",
           mix_cmd=i64(mix_cmd), mix_cum=f64(mix_cum),
           mix_keys=i64(mix_keys), mix_count=i64(mix_count), mix_ttl=i64(mix_ttl),
           zipf_cdf=np.concatenate(zipf_parts) if zipf_parts else np.ones(1))
    b.I[N_GROUPS] = G
    b.size.groups = G
    b.info["groups"] = [g.name for g in groups]
