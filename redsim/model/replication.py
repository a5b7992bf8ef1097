"""Replication, the primary's side: its replicas' links, partial and full
resyncs, and the output-buffer limit that drops a replica.

Follows ``src/replication.c`` of 7.0/7.2 (6.2 where noted): ``syncCommand``
and ``masterTryPartialResynchronization`` (PSYNC), ``startBgsaveForReplication``
and ``replicationStartPendingFork`` (the fork for a full sync, diskless after
``repl-diskless-sync-delay``, or sooner once ``repl-diskless-sync-max-replicas``
wait), ``updateSlavesWaitingBgsave`` and
``sendBulkToSlave`` (disk-based: the file is sent from the main thread),
``rdbPipeReadHandler``, ``rdbPipeWriteHandler`` and
``rdbPipeWriteHandlerConnRemoved`` (7.0, diskless: the child's pipe relayed to
the sockets; rdb.c ``rdbSaveToSlavesSockets`` for the pipe and the child),
``replicaStartCommandStream`` (the stream starts once the replica has
loaded), ``writeToClient`` for a replica (written until the socket is full),
``checkClientOutputBufferLimits`` for the ``replica`` class, and
``replicationCron`` (pings, the backlog's TTL, pending forks). The buffer
itself is ``replication_buffer.py``.

**A replica** is a link (``link-bandwidth``, ``rtt``), a send buffer in the
primary's kernel (``socket-buffer``), and two speeds: how fast it loads an
RDB (``load-rate``) and applies the stream (``apply-rate``). Its states
(``state.RS_*``) are the primary's: connecting, waiting for a fork, the
child at work, the file being sent, loading, online.

**Writing to a replica** happens once per event-loop iteration, in
``beforeSleep``: Redis writes a replica until the socket refuses
(``_writeToClient`` has no 64-KB cap for replicas), so what leaves the
primary's buffer in one iteration is what the socket can take — its free
space: ``socket-buffer`` less what the link has not yet carried. The link
carries bytes at ``min(link-bandwidth, apply-rate)``. So the stream drains at
the link's rate as long as iterations are short, and at ``socket-buffer``
per iteration when they are long: the reason a busy primary's replica falls
behind on a link that could carry the stream (redis/redis PR #15447, which
feeds replicas mid-iteration).

**Full sync.** A PSYNC whose offset is outside the backlog's window
(``replication_buffer.backlog_window``), or a replica with no data (``PSYNC ?``),
gets a full sync: ``sync_full``, and ``sync_partial_err`` when it had asked
for an offset. Disk-based (``repl-diskless-sync no``, 6.2's default): the
fork happens at once if no child runs (a replica arriving while another
replica's BGSAVE runs shares it; otherwise it waits for the next), the child
writes the RDB to disk (``fork.py``, which counts it as a save), then the
primary sends the file, 16 KB (``PROTO_IOBUF_LEN``) per event-loop iteration
(one ``read`` and one ``write`` in ``sendBulkToSlave``), as the socket takes
it. Diskless (7.x's default): ``replicationCron``, once a second, forks when
the longest-waiting replica has waited ``repl-diskless-sync-delay`` whole
seconds, and the child writes the RDB into a pipe (``relay``). The child
serialises at the fork model's keys per second and writes 16-KB pieces (rio
flushes its buffer past ``PROTO_IOBUF_LEN``) into a pipe of Linux's default
64 KB, which Redis never resizes; with the pipe full its write blocks, so it
is at most 80 KB ahead of the reads and the time it is blocked is lost. Each
iteration in which the pipe is readable, the main thread reads it 16 KB at a
time until it is empty (EAGAIN: the child, running meanwhile, may have added
more) or a socket takes less than a chunk, writing each chunk to every
replica; a partial write takes the pipe out of the poll until every replica
has its whole chunk (one write of the rest per writable socket), and the pipe
is read again at the next iteration. So a busy primary moves about 80 KB per
iteration where the disk-based path moves 16 KB, and the replicas go in
lockstep at the slowest one's pace: the child (and its copy-on-write) lives
until the last chunk is in the slowest replica's socket. The read of the end
lets the child exit (it is killed if every replica of it drops); its reap at
the next serverCron counts the replicas online (here ``RS_SEND_BULK`` until
their link has carried the rest: Redis starts their stream at their first
ACK). The replica then loads the RDB (``rdb bytes / load-rate``) and the
stream buffered since the fork (from ``psync_initial_offset``) starts to
drain. Throughout, the replica's place in the buffer stays at the fork's
offset, so its output-buffer usage is every write since the fork.

**Dual channel** (``dual-channel: yes``; Valkey 8.0's
``dual-channel-replication-enabled``, PR valkey#60, followed here from its
``replication.c``; Redis 8's RDB channel, redis#13732, has the same shape). The
PSYNC that cannot continue gets ``+DUALCHANNELSYNC`` (``sync_partial_err``
when it asked for an offset); the replica's second connection asks ``SYNC``
(``sync_full``) and, at the fork, its main connection's PSYNC from the fork's
offset gets ``+CONTINUE`` (``sync_partial_ok``: Valkey counts both). The child
is always a socket child and writes the RDB to its connection itself: the main
thread relays nothing. The stream flows down the main connection from the fork
on, and the replica keeps it in a buffer of its own (``bufferReplData``) until
the buffer passes ``full-sync-buffer-limit`` (by default the hard limit of
``client-output-buffer-limit replica``), when it stops reading and the stream
piles up on the primary again, against the primary's limits. While the RDB
crosses, the link is shared max-min fairly between the two connections (each
gets half, and what one does not need goes to the other). While the replica
loads the RDB it reads the main connection only when the load serves events
(``processEventsWhileBlocked``, at most 4 iterations of at most 16 KB each,
every ``loading-process-events-interval-bytes`` = 2 MB loaded): 1/32 of its
load rate. After the load it applies its buffer (``streamReplDataBufToDb``) at
``apply-rate`` (the link's bandwidth if none is given), reading nothing, and
then streams as any online replica. Deviations: the main connection's PSYNC
and the second handshake (a few RTTs) are taken to be at the fork; the
replica's buffer stops at its limit to the byte, where Valkey stops at the
first 16-KB block past it; the primary counts the replica loading and applying,
where Valkey counts it online once its main connection's PSYNC succeeded, and
Redis 8 (redis#13895) once the child is done; Redis 8 (redis#13904) also reads
up to half as much as it applies while it applies, which drains the primary's
buffer faster than modelled here.

**Dropping and reconnecting.** Before each iteration's writes (Redis checks
as it feeds), a replica whose usage has reached the hard limit, or stayed at
the soft limit for more than its seconds (whole seconds of ``unixtime``), is
closed. A replica also drops the link itself when nothing has arrived for
``repl-timeout`` (the primary's PINGs every ``repl-ping-replica-period`` keep
an idle link alive). The replica retries at its next ``replicationCron``
(the next whole second) and its PSYNC reaches the primary 4.5 round trips
later (connect, PING, two REPLCONFs, PSYNC). It asks for the byte after the
last one it received if it was online; after the RDB it was loading
(``psync_initial_offset`` + 1) if it was loading — it finishes the load
first; with nothing (a full sync) if the transfer was cut.

**Costs** on the main thread (``cpu_repl``): per iteration per replica with
stream to send, a ``write`` per buffer block it reaches (``_writeToClient``:
7.x's 20 440-B blocks, 6.2's 20 464-B nodes) and one more that finds the
socket full (``engine.cpu.write`` each + per byte; ``stream_writes``),
a ``read`` + ``write`` of 16 KB per chunk of a disk-based sync's RDB, and for
a diskless one a ``read`` per 16-KB chunk (and the EAGAIN read that ends a
pass) plus a ``write`` per chunk per replica.

Deviations, each small: the writable handler's second write in the same
iteration is folded into the next ``beforeSleep``'s; an idle primary wakes to
write when its socket buffer is half empty; the primary's own
``repl-timeout`` check never fires (a loading replica sends newlines, an
online one acks every second, and the link never stalls here); the
replication cron runs on whole seconds of simulated time (Redis's
``run_with_period(1000)``), and the replicas' crons on the same seconds; a
replica's receive buffer, its REPLCONF ACKs and ``repl-diskless-load`` are
not modelled (it saves the RDB and loads it: the default).

Deviations of the diskless relay: the child's next piece lands in the pipe
the moment a read frees room (its wake-up and copy, a few µs per 16 KB, are
not modelled): by hand a saturated primary moves 80 KB a pass plus the
child's output during it, where live 7.0.15 moved ~94 KB an iteration
(issue #45), so such a transfer is up to ~15 % long. Small ones: the child's
pace inside one pass uses the pass's CPU time times the host's slowdown, not
its round-robin turns; with ``host.cores`` the diskless child takes a core's
share in each scheduler window it starts unblocked, and loses the whole
window's shortfall even if it blocks on the pipe in it (at most one 1-ms
window each time); the 16-KB ``rdb_pipe_buff`` is not in ``used_memory``;
a partial write stuck for ``repl-timeout`` does not drop the replica
(``replicationCron``; the links here never stall); the last replica's drop
kills the child at once, not at the next read.

**min-replicas-to-write** (``processCommand``): with it and
``min-replicas-max-lag`` both set, a write command is refused with
``-NOREPLICAS`` while fewer replicas are good. A replica is good when the
primary counts it online and it acked within the lag: here, while it loads
(its newlines count as acks) or streams, since it acks every second.
``repl_good_slaves_count`` is refreshed at each beforeSleep and
replicationCron. A replica far behind in bytes is still good, as in Redis.
"""

from __future__ import annotations

import math

import numpy as np

from redsim.model.fork import redis_fork
from redsim.model.jit import leaf, step
from redsim.model.main_thread import busy
from redsim.model.replication_buffer import (
    REPL_BLOCK_7,
    backlog_window,
    block_of,
    feed,
    pending_usage,
    replication_memory,
    stream_writes,
    tail_block,
)
from redsim.model.state import (
    C_READ,
    C_READ_B,
    C_WRITE,
    C_WRITE_B,
    CHILD,
    CHILD_CHUNKS,
    CHILD_END,
    CHILD_FILE_B,
    CHILD_KEY_RATE,
    CHILD_NONE,
    CHILD_RDB,
    CHILD_SOCKET,
    CPU_SLOW,
    GOOD_REPLICAS,
    KS_KEYS,
    MAX_REPL_REC,
    MIN_REPLICAS,
    N_REPL_FIELDS,
    N_REPL_REC,
    REDIS_62,
    REPL_BACKLOG,
    REPL_BASE,
    REPL_BL_BLOCK,
    REPL_BL_SIZE,
    REPL_BUF_PEAK,
    REPL_CHILD,
    REPL_CHILD_AT,
    REPL_CHILD_BPS,
    REPL_CHILD_MADE,
    REPL_CHILD_T0,
    REPL_CRON_LOOPS,
    REPL_CRON_WHEN,
    REPL_DELAY,
    REPL_DISKLESS,
    REPL_DUAL,
    REPL_HARD,
    REPL_IDLE_SINCE,
    REPL_LOCAL_PEAK,
    REPL_MAX_WAITING,
    REPL_N,
    REPL_NEXT,
    REPL_OFFSET,
    REPL_PING_PERIOD,
    REPL_PIPE_READ,
    REPL_RDB_B,
    REPL_SOFT,
    REPL_SOFT_SECS,
    REPL_TIMEOUT,
    REPL_TTL,
    RS_APPLYING,
    RS_BGSAVE,
    RS_CONNECTING,
    RS_LOADING,
    RS_ONLINE,
    RS_SEND_BULK,
    RS_WAIT_BGSAVE,
    STAT_NOREPLICAS,
    STAT_REPL_OBUF_DROPS,
    STAT_REPL_TIMEOUTS,
    STAT_SYNC_FULL,
    STAT_SYNC_PARTIAL_ERR,
    STAT_SYNC_PARTIAL_OK,
    W_CPU_REPL,
    WI_REPL_BUF,
    WI_REPL_CONNECTED,
    WI_REPL_DROPS,
    WI_REPL_LAG,
    WI_REPL_LOCAL,
    WI_REPL_OFFSET,
    WI_REPL_ONLINE,
    WI_SYNC_FULL,
    T,
)
from redsim.observe import groups
from redsim.observe import metrics as M
from redsim.observe.bins import cell, count

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "REPL_N", "i8", "-", "config", "replicas (rows of the rp part)"),
    ("I", "REPL_HARD", "i8", "B", "config",
     "client-output-buffer-limit replica's hard limit, B (0 = none; raised to "
     "repl-backlog-size in 7.x)"),
    ("I", "REPL_SOFT", "i8", "B", "config", "... its soft limit, B (0 = none)"),
    ("I", "REPL_SOFT_SECS", "i8", "s", "config", "... its soft seconds"),
    ("I", "REPL_DISKLESS", "i8", "-", "config", "1: repl-diskless-sync yes"),
    ("I", "REPL_DELAY", "i8", "s", "config", "repl-diskless-sync-delay, whole seconds"),
    ("I", "REPL_MAX_WAITING", "i8", "-", "config",
     "repl-diskless-sync-max-replicas: fork before the delay once this many wait (0 = off)"),
    ("I", "REPL_PING_PERIOD", "i8", "-", "config",
     "repl-ping-replica-period: replicationCron runs between PINGs"),
    ("I", "REPL_CRON_LOOPS", "i8", "-", "state", "replication_cron_loops"),
    ("I", "REPL_CHILD", "i8", "-", "state",
     "the fork child is a full sync's BGSAVE: 1 to disk (or dual-channel), 2 to the "
     "replicas' sockets through the pipe (diskless)"),
    ("I", "REPL_PIPE_READ", "i8", "B", "state",
     "diskless: RDB bytes the main thread has read from the child's pipe (each chunk "
     "went to every replica)"),
    ("I", "REPL_CHILD_MADE", "i8", "B", "state",
     "diskless: RDB bytes the child has serialised (in the pipe, in its rio buffer, read)"),
    ("I", "REPL_RDB_B", "i8", "B", "state", "the RDB of the last full sync's child, B"),
    ("I", "STAT_SYNC_FULL", "i8", "-", "counter", "server.stat_sync_full"),
    ("I", "STAT_SYNC_PARTIAL_OK", "i8", "-", "counter", "server.stat_sync_partial_ok"),
    ("I", "STAT_SYNC_PARTIAL_ERR", "i8", "-", "counter",
     "server.stat_sync_partial_err: PSYNCs with an offset answered with a full sync"),
    ("I", "STAT_REPL_OBUF_DROPS", "i8", "-", "counter",
     "replicas closed for client-output-buffer-limit"),
    ("I", "STAT_REPL_TIMEOUTS", "i8", "-", "counter",
     "links a replica dropped after repl-timeout without data"),
    ("I", "N_REPL_REC", "i8", "-", "counter", "rows of rc_repl written (at most MAX_REPL_REC)"),
    ("I", "MIN_REPLICAS", "i8", "-", "config",
     "min-replicas-to-write (0 when it or min-replicas-max-lag is 0: off)"),
    ("I", "GOOD_REPLICAS", "i8", "-", "state",
     "server.repl_good_slaves_count: replicas loading or online"),
    ("I", "STAT_NOREPLICAS", "i8", "-", "counter", "write commands refused with -NOREPLICAS"),
    ("I", "REPL_BUF_PEAK", "i8", "B", "counter",
     "the largest mem_total_replication_buffers seen at a beforeSleep (before its writes), B"),
    ("I", "REPL_DUAL", "i8", "-", "config",
     "1: full syncs over two channels (dual-channel: the RDB on its own connection)"),
    ("I", "REPL_LOCAL_PEAK", "i8", "B", "counter",
     "the most stream a replica held in its own buffer during a dual-channel full sync "
     "(the replica's replicas_replication_buffers), B"),
    ("F", "REPL_TIMEOUT", "f8", "s", "config", "repl-timeout, s"),
    ("F", "REPL_TTL", "f8", "s", "config", "repl-backlog-ttl, s (0 = never)"),
    ("F", "REPL_CRON_WHEN", "f8", "s", "state", "the next replicationCron, s"),
    ("F", "REPL_IDLE_SINCE", "f8", "s", "state",
     "server.repl_no_slaves_since: since when no replica is connected; -1 = one is"),
    ("F", "REPL_NEXT", "f8", "s", "state",
     "the earliest time a replica needs the main thread (a PSYNC, a load's end, "
     "room in a socket); the poll wakes for it, s"),
    ("F", "REPL_CHILD_T0", "f8", "s", "state", "diskless: when the child began its RDB, s"),
    ("F", "REPL_CHILD_BPS", "f8", "B/s", "state",
     "diskless: the child's RDB serialisation rate, B/s"),
    ("F", "REPL_CHILD_AT", "f8", "s", "state",
     "diskless: when REPL_CHILD_MADE was last brought up to date, s"),
    ("rp", "state", "i8", "-", "state", "the replica's state (state.RS_*)"),
    ("rp", "t_next", "f8", "s", "state",
     "connecting: when its PSYNC arrives; loading: when the load ends; else inf"),
    ("rp", "bw", "f8", "B/s", "config", "link-bandwidth, B/s"),
    ("rp", "rate", "f8", "B/s", "config", "the stream's drain: min(link, apply-rate), B/s"),
    ("rp", "rtt", "f8", "s", "config", "round trip to the replica, s"),
    ("rp", "load", "f8", "B/s", "config", "load-rate: RDB bytes the replica loads per s"),
    ("rp", "sndbuf", "i8", "B", "config", "the primary's socket send buffer to it, B"),
    ("rp", "sent", "i8", "B", "state",
     "the stream offset handed to its socket (its place in the buffer is the byte after)"),
    ("rp", "wire", "i8", "B", "state", "the stream offset the link has delivered"),
    ("rp", "t_wire", "f8", "s", "state", "when wire (or bulk_wire) was last brought up to date"),
    ("rp", "t_rx", "f8", "s", "state", "when the replica last received a byte, s"),
    ("rp", "psync", "i8", "B", "state",
     "the offset its next PSYNC asks for (its last byte + 1); 0 = none (PSYNC ? -1)"),
    ("rp", "init_off", "i8", "B", "state",
     "psync_initial_offset: master_repl_offset at its full sync's fork"),
    ("rp", "bulk_sent", "i8", "B", "state", "RDB bytes handed to its socket"),
    ("rp", "bulk_wire", "i8", "B", "state", "RDB bytes the link has delivered"),
    ("rp", "soft_since", "f8", "s", "state",
     "obuf_soft_limit_reached_time (whole s); -1 = under the soft limit"),
    ("rp", "t_psync", "f8", "s", "state", "when its PSYNC arrived (lastinteraction), s"),
    ("rp", "apply", "f8", "B/s", "config",
     "apply-rate (the link's bandwidth when not given): how fast it applies a stream it "
     "buffered, B/s"),
    ("rp", "fsb", "i8", "B", "config",
     "dual-channel: the stream it buffers in a full sync before it stops reading "
     "(replica-full-sync-buffer-limit), B; 0 = no limit"),
    ("wf", "W_CPU_REPL", "f8", "s", "cpu",
     "writing the stream and full syncs' RDB to replicas"),
    ("wi", "WI_SYNC_FULL", "i8", "-", "count", "full resyncs (sync_full's increase)"),
    ("wi", "WI_REPL_DROPS", "i8", "-", "count",
     "replicas closed for client-output-buffer-limit in the window"),
    ("wi", "WI_REPL_BUF", "i8", "B", "gauge",
     "mem_total_replication_buffers at the window's end, B"),
    ("wi", "WI_REPL_OFFSET", "i8", "B", "gauge", "master_repl_offset at the window's end, B"),
    ("wi", "WI_REPL_CONNECTED", "i8", "-", "gauge",
     "connected_slaves (replicas not reconnecting) at the window's end"),
    ("wi", "WI_REPL_ONLINE", "i8", "-", "gauge", "replicas online and streaming"),
    ("wi", "WI_REPL_LAG", "i8", "B", "gauge",
     "the largest stream backlog of a replica with a place in the buffer "
     "(master_repl_offset − what it received), B"),
    ("wi", "WI_REPL_LOCAL", "i8", "B", "gauge",
     "dual-channel: the most stream a replica holds in its own buffer at the window's "
     "end, B"),
    ("rc", "repl", "f8", "-", "record",
     "one row of REPL_FIELDS per replica event (model/replication.py)"),
    ("rc", "repl_lag", "i8", "B", "record",
     "at window k's end, replica r's (index k × replicas + r) master_repl_offset − "
     "what it received; −1 without a place in the buffer"),
    ("rc", "repl_state", "i8", "-", "record",
     "at window k's end, replica r's state (state.RS_*; index k × replicas + r)"),
)


def _replicated(s: dict) -> bool:
    """The summary's replication lines are printed: the run has replicas."""
    return bool(s.get("replica_states_end"))


RESULTS = (
    M.Line(340, "  replication", lambda s: f"{s['cpu_repl_share']:.1%}", when=_replicated),
    M.Metric("connected_slaves_end", "-", M.SUM, "INFO connected_slaves at the end",
             made_by="_replication_summary"),
    M.Metric("replica_states_end", "-", M.FIRST, "each replica's state at the end",
             made_by="_replication_summary",
             line=M.Line(350, "replicas at the end", lambda s: ", ".join(
                 f"{st} ({lag / 2**20:,.1f} MB behind)" if st not in ("connecting", "wait_bgsave")
                 else st for st, lag in zip(s["replica_states_end"], s["replica_lag_bytes_end"],
                                            strict=True)), when=_replicated)),
    M.Metric("replica_lag_bytes_end", "B", M.FIRST, "what each replica lacks at the end",
             made_by="_replication_summary"),
    M.Metric("sync_full", "-", M.SUM, "INFO sync_full", value=M.counter("STAT_SYNC_FULL"),
             line=M.Line(360, "full / partial resyncs (refused partial)", lambda s: (
                 f"{s['sync_full']:,} / {s['sync_partial_ok']:,} ({s['sync_partial_err']:,})"),
                 when=_replicated)),
    M.Metric("sync_partial_ok", "-", M.SUM, "INFO sync_partial_ok",
             value=M.counter("STAT_SYNC_PARTIAL_OK")),
    M.Metric("sync_partial_err", "-", M.SUM, "INFO sync_partial_err",
             value=M.counter("STAT_SYNC_PARTIAL_ERR")),
    M.Metric("replica_obuf_disconnections", "-", M.SUM, "replicas dropped at the output-buffer "
             "limits", value=M.counter("STAT_REPL_OBUF_DROPS"),
             line=M.Line(370, "replicas dropped: output buffer / timeout", lambda s: (
                 f"{s['replica_obuf_disconnections']:,} / {s['replica_timeouts']:,}"),
                 when=_replicated)),
    M.Metric("replica_timeouts", "-", M.SUM, "replicas dropped at repl-timeout",
             value=M.counter("STAT_REPL_TIMEOUTS")),
    M.Metric("noreplicas_rejected", "-", M.SUM, "writes refused with -NOREPLICAS",
             value=M.counter("STAT_NOREPLICAS"),
             line=M.Line(410, "writes refused with -NOREPLICAS",
                         lambda s: f"{s['noreplicas_rejected']:,}",
                         when=lambda s: _replicated(s) and bool(s.get("noreplicas_rejected")))),
    # At its largest, before a beforeSleep's writes: between the samples.
    M.Metric("mem_total_replication_buffers_peak", "B", M.MAX, "the replication buffer's "
             "largest size", value=M.larger(M.counter("REPL_BUF_PEAK"),
                                           M.peak("mem_total_replication_buffers")),
             line=M.Line(380, "replication buffer peak", lambda s: (
                 f"{M.mb(s['mem_total_replication_buffers_peak'])} MB"), when=_replicated)),
    # Dual-channel: the most stream a replica buffered itself in a full sync
    # (its replicas_replication_buffers; not the primary's memory).
    M.Metric("replica_fullsync_buffer_peak", "B", M.MAX, "the most stream a replica buffered "
             "in a dual-channel sync", value=M.counter("REPL_LOCAL_PEAK"),
             line=M.Line(390, "stream buffered on a replica (dual-channel), peak", lambda s: (
                 f"{M.mb(s['replica_fullsync_buffer_peak'])} MB"),
                 when=lambda s: _replicated(s) and bool(s.get("replica_fullsync_buffer_peak")))),
    M.Metric("full_resync_interval_mean_s", "s", M.MEAN, "mean gap between full resyncs "
             "(None for fewer than two)", made_by="_replication_summary",
             line=M.Line(400, "full resyncs every (mean)",
                         lambda s: M.fmt_s(s["full_resync_interval_mean_s"]),
                         when=lambda s: _replicated(s)
                         and bool(s.get("full_resync_interval_mean_s")))),
    M.Column(700, "master_repl_offset", "B", "INFO master_repl_offset",
             M.gauge("WI_REPL_OFFSET")),
    M.Column(710, "connected_slaves", "-", "INFO connected_slaves",
             M.gauge("WI_REPL_CONNECTED")),
    M.Column(720, "replicas_online", "-", "replicas online", M.gauge("WI_REPL_ONLINE")),
    M.Column(730, "mem_total_replication_buffers", "B", "INFO mem_total_replication_buffers",
             M.gauge("WI_REPL_BUF")),
    M.Column(740, "repl_max_lag_bytes", "B", "the most a replica lacks",
             M.gauge("WI_REPL_LAG")),
    M.Column(750, "replica_fullsync_buffer", "B", "dual-channel: the stream a replica "
             "buffers itself", M.gauge("WI_REPL_LOCAL")),
    M.Column(760, "sync_full", "-", "INFO sync_full", M.total("WI_SYNC_FULL")),
    M.Column(770, "replica_obuf_disconnections", "-", "replicas dropped at the output-buffer "
             "limits", M.total("WI_REPL_DROPS")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

PROTO_IOBUF_LEN = 16_384  # a full sync's RDB goes 16 KB per read + write
# Diskless: the child's pipe holds Linux's default 64 KB (rdbSaveToSlavesSockets never
# sets F_SETPIPE_SZ); the child blocks in its next 16-KB write (rioFdWrite flushes past
# PROTO_IOBUF_LEN) once the pipe is full, so it is at most 80 KB ahead of the reads.
TRIM_BLOCKS_PER_SLEEP = 640
"""Blocks beforeSleep may free per call: ``10 * REPL_BACKLOG_TRIM_BLOCKS_PER_CALL``
(7.0 server.c, "10 times the normal speed"): 13 MB, so a dropped replica's
large buffer leaves over several iterations (~1.8 s for 231 MB on an idle
primary, whose loop wakes every 100 ms)."""
PIPE_BUF = 65_536
CHILD_LEAD = PIPE_BUF + PROTO_IOBUF_LEN
PING_BYTES = 14  # *1\r\n$4\r\nPING\r\n
HANDSHAKE_RTTS = 4.5  # connect, PING, REPLCONF listening-port, REPLCONF capa, PSYNC

# rc_repl's event column.
RE_FULL = 0  # PSYNC answered +FULLRESYNC (or waits for a fork to send it)
RE_PARTIAL = 1  # PSYNC answered +CONTINUE
RE_FORK = 2  # the BGSAVE for the sync forked; detail: the RDB's bytes
RE_RDB_DONE = 3  # the whole RDB is on the replica; detail: when its load ends
RE_ONLINE = 4  # loaded: the buffered stream starts to flow
RE_DROP_HARD = 5  # closed: output buffer at the hard limit; detail: usage
RE_DROP_SOFT = 6  # closed: at the soft limit for longer than its seconds
RE_TIMEOUT = 7  # the replica dropped the link after repl-timeout without data
RE_LOADED = 8  # dual-channel: loaded; it applies its buffer; detail: the buffer's bytes
RE_NAMES = ("full_resync", "partial_resync", "fork", "rdb_transferred", "online",
            "dropped_hard_limit", "dropped_soft_limit", "timeout", "loaded")

# A replica loading an RDB serves its event loop (processEventsWhileBlocked: at most
# 4 iterations) once per loading-process-events-interval-bytes (2 MB) of RDB, and a
# dual-channel replica reads at most PROTO_IOBUF_LEN from the main channel per
# iteration (bufferReplData): so it reads the stream at 4 × 16 KB / 2 MB = 1/32
# of its load rate while it loads.
LOADING_EVENTS_BYTES = 2 * 1024 * 1024
LOADING_READ_SHARE = 4 * PROTO_IOBUF_LEN / LOADING_EVENTS_BYTES


@step
def record(w, r, event, detail):
    """One row of the replication event log: time, replica, event, offset, detail."""
    n = w.I[N_REPL_REC]
    if n < MAX_REPL_REC:
        row = n * N_REPL_FIELDS
        w.rc_repl[row + 0] = w.F[T]
        w.rc_repl[row + 1] = r
        w.rc_repl[row + 2] = event
        w.rc_repl[row + 3] = w.I[REPL_OFFSET]
        w.rc_repl[row + 4] = detail
    w.I[N_REPL_REC] = n + 1


NOREPLICAS_REPLY_BYTES = len("-NOREPLICAS Not enough good replicas to write.\r\n")


@leaf
def refuses_write(w, c):
    """``processCommand``'s min-replicas check for connection c's next command:
    True (and its -NOREPLICAS reply set) if it is a write and too few replicas
    are good."""
    I = w.I
    if I[MIN_REPLICAS] == 0 or not w.tb_cmd_write[w.cn_next_cmd[c]] or \
            I[GOOD_REPLICAS] >= I[MIN_REPLICAS]:
        return False
    w.cn_next_reply[c] = NOREPLICAS_REPLY_BYTES
    I[STAT_NOREPLICAS] += 1
    groups.failed(w, w.rq_group[w.cn_req[c]], w.F[T])
    return True


@leaf
def refresh_good_replicas(w):
    """``refreshGoodSlavesCount``."""
    good = 0
    for r in range(w.I[REPL_N]):
        if w.rp_state[r] >= RS_LOADING:
            good += 1
    w.I[GOOD_REPLICAS] = good


# ---- the links -------------------------------------------------------------------


@leaf
def advance_link(w, r, sent, wire, rate, t):
    """Bring the link's delivered offset up to time t: it carries ``rate`` B/s
    of what the socket holds (``sent − wire``). Returns the new wire; updates
    ``t_wire`` (whole bytes only, so no fraction is lost) and ``t_rx``."""
    if wire >= sent:
        w.rp_t_wire[r] = t
        return wire
    moved = int((t - w.rp_t_wire[r]) * rate)
    if wire + moved >= sent:
        w.rp_t_rx[r] = w.rp_t_wire[r] + (sent - wire) / rate
        w.rp_t_wire[r] = t
        return sent
    w.rp_t_wire[r] += moved / rate
    w.rp_t_rx[r] = w.rp_t_wire[r]
    return wire + moved


@leaf
def hand_over(w, r, wire, rate):
    """``writeToClient`` for a replica: hand its socket the stream it has room for
    (``socket-buffer`` less what the link has not carried), a write per buffer
    block and one more that finds the socket full (``stream_writes``). ``rate``: how fast the
    socket empties now (0: not at all). Returns the main thread's cost and when
    the next write could go."""
    F = w.F
    sent = w.rp_sent[r]
    off = w.I[REPL_OFFSET]
    n = min(off - sent, w.rp_sndbuf[r] - (sent - wire))
    cost = 0.0
    if n > 0:
        cost = F[C_WRITE] * stream_writes(w, sent, n) + F[C_WRITE_B] * n
        sent += n
        w.rp_sent[r] = sent
    wake = math.inf
    if off > sent and rate > 0.0:  # more to write: when the socket is half empty again
        wake = w.rp_t_wire[r] + max(sent - wire - w.rp_sndbuf[r] // 2, 0) / rate
    return cost, wake


@step
def write_stream(w, r, t):
    """``writeToClient`` for an online replica: the link brought up to t, then
    the socket filled. Returns the main thread's cost and when to write next."""
    rate = w.rp_rate[r]
    wire = advance_link(w, r, w.rp_sent[r], w.rp_wire[r], rate, t)
    w.rp_wire[r] = wire
    return hand_over(w, r, wire, rate)


@step
def write_bulk(w, r, t):
    """``sendBulkToSlave`` (disk-based): one 16 KB chunk of the RDB, if the
    socket has room. Diskless (``RS_BGSAVE``): only the link, brought up to t
    (``relay`` writes); either way, the whole RDB on the replica starts its
    load. Returns the main thread's cost and when to look again."""
    F = w.F
    I = w.I
    bw = w.rp_bw[r]
    total = I[REPL_RDB_B]
    sent = w.rp_bulk_sent[r]
    wire = advance_link(w, r, sent, w.rp_bulk_wire[r], bw, t)
    w.rp_bulk_wire[r] = wire
    if wire >= total:  # the whole file is on the replica: it loads it
        done = w.rp_t_rx[r] if total > 0 else t
        w.rp_state[r] = RS_LOADING
        w.rp_t_next[r] = done + total / w.rp_load[r]
        record(w, r, RE_RDB_DONE, w.rp_t_next[r])
        return 0.0, w.rp_t_next[r]
    if w.rp_state[r] == RS_BGSAVE:  # diskless: relay() writes; the link's end, if all sent
        if sent >= total:
            return 0.0, w.rp_t_wire[r] + (total - wire) / bw
        return 0.0, math.inf
    n = min(PROTO_IOBUF_LEN, total - sent, w.rp_sndbuf[r] - (sent - wire))
    cost = 0.0
    if n > 0:
        sent += n
        w.rp_bulk_sent[r] = sent
        cost = F[C_READ] + F[C_READ_B] * n + F[C_WRITE] + F[C_WRITE_B] * n
    if sent >= total:  # all handed over: look again when the link has carried it
        return cost, w.rp_t_wire[r] + (total - wire) / bw
    need = min(PROTO_IOBUF_LEN, total - sent)
    wake = w.rp_t_wire[r] + max(sent + need - wire - w.rp_sndbuf[r], 0) / bw
    return cost, wake


# ---- the diskless relay (rdbPipeReadHandler, rdbPipeWriteHandler) -----------------


@leaf
def child_advance(w, t):
    """The diskless child's progress up to time t: it serialises at
    ``REPL_CHILD_BPS`` until it is ``CHILD_LEAD`` ahead of the main thread's
    reads (the pipe full, its next 16-KB write blocked), and the time it is
    blocked is lost. Exact piecewise as long as it is called before every
    change of ``REPL_PIPE_READ``. Returns the bytes made."""
    F = w.F
    I = w.I
    made = I[REPL_CHILD_MADE]
    cap = min(I[REPL_RDB_B], I[REPL_PIPE_READ] + CHILD_LEAD)
    if made >= cap:  # blocked on the full pipe (or done): the time is lost
        F[REPL_CHILD_AT] = max(F[REPL_CHILD_AT], t)
        return made
    if t <= F[REPL_CHILD_AT]:
        return made
    rate = F[REPL_CHILD_BPS]
    moved = int((t - F[REPL_CHILD_AT]) * rate)
    if made + moved >= cap:
        made = cap
        F[REPL_CHILD_AT] = t
    else:  # whole bytes only, so no fraction is lost
        made += moved
        F[REPL_CHILD_AT] += moved / rate
    I[REPL_CHILD_MADE] = made
    return made


@leaf
def in_pipe(w):
    """Bytes in the child's pipe: what it has written (whole 16-KB flushes of its
    rio buffer; all of it once the RDB is done), at most 64 KB past the reads."""
    I = w.I
    made = I[REPL_CHILD_MADE]
    total = I[REPL_RDB_B]
    written = made if made >= total else (made // PROTO_IOBUF_LEN) * PROTO_IOBUF_LEN
    return min(written, I[REPL_PIPE_READ] + PIPE_BUF) - I[REPL_PIPE_READ]


@leaf
def writable_at(w, r, wire):
    """When replica r's socket, holding ``bulk_sent − wire``, is half empty
    (EPOLLOUT, as ``hand_over`` takes it)."""
    return w.rp_t_wire[r] + max(
        w.rp_bulk_sent[r] - wire - w.rp_sndbuf[r] // 2, 0) / w.rp_bw[r]


@leaf
def pipe_wake(w, t):
    """When the armed pipe is next readable: now if it holds a byte (or the
    child has closed it), else at the child's next 16-KB flush."""
    F = w.F
    I = w.I
    made = I[REPL_CHILD_MADE]
    total = I[REPL_RDB_B]
    if in_pipe(w) > 0 or made >= total:
        return t
    nxt = min(total, (made // PROTO_IOBUF_LEN + 1) * PROTO_IOBUF_LEN)
    return F[REPL_CHILD_AT] + (nxt - made) / F[REPL_CHILD_BPS]


@step
def relay(w, t):
    """7.0 ``rdbPipeReadHandler`` and ``rdbPipeWriteHandler`` (replication.c), once
    per event-loop iteration: first the rest of each partial write (one write per
    writable socket, i.e. half empty, as ``hand_over`` takes EPOLLOUT); if there
    was one, the pipe, re-armed once all are done, is read at the next iteration.
    Otherwise 16-KB reads until the pipe is empty (EAGAIN: the child runs on
    meanwhile) or a socket takes less than the chunk, each chunk written to every
    replica (lockstep); the read of the end (EOF) lets the child exit. Returns the
    main thread's cost and when to look again."""
    F = w.F
    I = w.I
    total = I[REPL_RDB_B]
    n_rep = I[REPL_N]
    cost = 0.0
    wake = math.inf
    pending = False
    partial = False
    for r in range(n_rep):  # rdbPipeWriteHandler
        if w.rp_state[r] != RS_BGSAVE:
            continue
        left = I[REPL_PIPE_READ] - w.rp_bulk_sent[r]
        if left <= 0:
            continue
        pending = True
        wire = advance_link(w, r, w.rp_bulk_sent[r], w.rp_bulk_wire[r], w.rp_bw[r], t)
        w.rp_bulk_wire[r] = wire
        queued = w.rp_bulk_sent[r] - wire
        k = 0
        if queued <= w.rp_sndbuf[r] // 2:  # the handler runs on a writable socket only
            k = min(left, w.rp_sndbuf[r] - queued)
            w.rp_bulk_sent[r] += k
            cost += F[C_WRITE] + F[C_WRITE_B] * k
        if k < left:
            partial = True
            wake = min(wake, writable_at(w, r, wire))
    if pending:
        if not partial:  # rdbPipeWriteHandlerConnRemoved re-arms the pipe: next poll
            child_advance(w, t)
            wake = min(wake, pipe_wake(w, t))
        return cost, wake
    tc = t
    while True:  # rdbPipeReadHandler
        child_advance(w, tc)
        n = min(PROTO_IOBUF_LEN, in_pipe(w))
        if n <= 0:  # EAGAIN, or the end of the file
            cost += F[C_READ]
            if I[REPL_CHILD_MADE] >= total and I[REPL_PIPE_READ] >= total:
                F[CHILD_END] = tc  # close(rdb_child_exit_pipe): the child exits
                for r in range(n_rep):  # each link's end starts that replica's load
                    if w.rp_state[r] == RS_BGSAVE:
                        wake = min(wake, w.rp_t_wire[r] + (
                            total - w.rp_bulk_wire[r]) / w.rp_bw[r])
            else:
                wake = min(wake, pipe_wake(w, tc))
            break
        c = F[C_READ] + F[C_READ_B] * n
        I[REPL_PIPE_READ] += n
        for r in range(n_rep):
            if w.rp_state[r] != RS_BGSAVE:
                continue
            wire = advance_link(w, r, w.rp_bulk_sent[r], w.rp_bulk_wire[r], w.rp_bw[r], tc)
            w.rp_bulk_wire[r] = wire
            k = max(min(n, w.rp_sndbuf[r] - (w.rp_bulk_sent[r] - wire)), 0)
            w.rp_bulk_sent[r] += k
            c += F[C_WRITE] + F[C_WRITE_B] * k
            if k < n:  # a partial write: the pipe's read event is removed
                partial = True
                wake = min(wake, writable_at(w, r, wire))
        cost += c
        tc += c * F[CPU_SLOW]
        if partial:
            break
    return cost, wake


# ---- dual-channel full sync ------------------------------------------------------------


@leaf
def read_limit(w, r):
    """The stream offset up to which a dual-channel replica in a full sync reads
    the main channel: its buffer's limit past the fork's offset (bufferReplData
    stops once the buffer passes ``replica-full-sync-buffer-limit``)."""
    fsb = w.rp_fsb[r]
    if fsb > 0:
        return w.rp_init_off[r] + fsb
    return w.rp_sent[r]


@leaf
def child_written(w, t, total):
    """RDB bytes the diskless child has serialised by time t."""
    F = w.F
    return min(total, int((t - F[REPL_CHILD_T0]) * F[REPL_CHILD_BPS]))


@leaf
def share_link(w, r, t):
    """Dual channel, while the RDB crosses: the link's bytes since ``t_wire``
    shared max-min fairly between the RDB connection (what the child has written)
    and the main one (what its socket holds, up to the replica's buffer limit):
    each gets half, and what one does not need goes to the other. Two TCP flows
    on one bottleneck, and a replica that reads each 16 KB per iteration."""
    bw = w.rp_bw[r]
    t0 = w.rp_t_wire[r]
    room = int((t - t0) * bw)
    wire = w.rp_wire[r]
    bulk = w.rp_bulk_wire[r]
    q_stream = max(min(w.rp_sent[r], read_limit(w, r)) - wire, 0)
    q_rdb = child_written(w, t, w.I[REPL_RDB_B]) - bulk
    half = room // 2
    if q_stream <= half:
        s = q_stream
        d = min(q_rdb, room - s)
    elif q_rdb <= half:
        d = q_rdb
        s = min(q_stream, room - d)
    else:
        s = half
        d = room - half
    w.rp_wire[r] = wire + s
    w.rp_bulk_wire[r] = bulk + d
    if s + d > 0:
        w.rp_t_rx[r] = t
    if s + d == room:  # busy throughout: keep the fraction of a byte for the next call
        w.rp_t_wire[r] = t0 + room / bw
    else:
        w.rp_t_wire[r] = t


@leaf
def loading_read(w, r, t):
    """A dual-channel replica loading the RDB reads the main channel between
    its load's chunks (``LOADING_READ_SHARE`` of its load rate, at most the
    link's) into its buffer, up to its limit: what has reached it by t.
    Returns that read rate, B/s."""
    rate = min(w.rp_bw[r], w.rp_load[r] * LOADING_READ_SHARE)
    w.rp_wire[r] = advance_link(w, r, min(w.rp_sent[r], read_limit(w, r)), w.rp_wire[r],
                                rate, t)
    return rate


@step
def write_dual(w, r, t):
    """A dual-channel full sync from the primary's side: the RDB goes from the
    child straight to its connection (no relay by the main thread); the stream
    goes down the main channel from the fork's offset, read by the replica into
    its buffer up to its limit: at the link's shared rate while the RDB crosses,
    at 1/32 of its load rate while it loads, not at all while it applies what it
    buffered. Returns the main thread's cost and when to look again."""
    F = w.F
    I = w.I
    st = w.rp_state[r]
    bw = w.rp_bw[r]
    total = I[REPL_RDB_B]
    wake = math.inf
    if st == RS_BGSAVE:
        share_link(w, r, t)
        if w.rp_bulk_wire[r] >= total:  # the whole RDB is on the replica: it loads it
            w.rp_state[r] = RS_LOADING
            w.rp_t_next[r] = t + total / w.rp_load[r]
            w.rp_t_wire[r] = t
            record(w, r, RE_RDB_DONE, w.rp_t_next[r])
        else:
            wake = max(w.rp_t_wire[r] + (total - w.rp_bulk_wire[r]) / bw,
                       F[REPL_CHILD_T0] + total / F[REPL_CHILD_BPS])
    st = w.rp_state[r]
    limit = read_limit(w, r)
    rate = 0.0
    if st == RS_BGSAVE:
        rate = bw
    elif st == RS_LOADING:
        rate = loading_read(w, r, t)
        wake = w.rp_t_next[r]
    elif st == RS_APPLYING:
        wake = w.rp_t_next[r]
    wire = w.rp_wire[r]
    I[REPL_LOCAL_PEAK] = max(I[REPL_LOCAL_PEAK], wire - w.rp_init_off[r])
    if wire >= limit:
        rate = 0.0  # its buffer is full: it reads no more until it is online
    cost, nxt = hand_over(w, r, wire, rate)
    return cost, min(wake, nxt)


@step
def loaded(w, r, t):
    """The replica has loaded the RDB. Dual channel: it now applies the stream
    it buffered (``streamReplDataBufToDb``), at its apply rate, reading nothing
    from the primary meanwhile; then it is online. Otherwise it is online now:
    its first REPLCONF ACK."""
    if not w.I[REPL_DUAL]:
        go_online(w, r, t)
        return
    if w.rp_state[r] == RS_LOADING:  # what reached it until the load's end
        loading_read(w, r, t)
    local = w.rp_wire[r] - w.rp_init_off[r]
    w.rp_state[r] = RS_APPLYING
    w.rp_t_next[r] = t + local / w.rp_apply[r]
    record(w, r, RE_LOADED, local)


@step
def go_online(w, r, t):
    """The replica streams: ``replicaStartCommandStream`` (its place in the buffer
    stays where it was; what its socket held is still to cross the link)."""
    if not w.I[REPL_DUAL]:
        w.rp_wire[r] = w.rp_sent[r]
    w.rp_state[r] = RS_ONLINE
    w.rp_t_next[r] = math.inf
    w.rp_t_wire[r] = t
    w.rp_t_rx[r] = t
    record(w, r, RE_ONLINE, w.rp_sent[r])


# ---- dropping, PSYNC and full syncs ---------------------------------------------------


@leaf
def next_cron_tick(t):
    """The replica's next replicationCron after time t: the next whole second."""
    return math.floor(t) + 1.0


@step
def drop(w, r, event, detail):
    """``freeClient`` of replica r (the primary closed it, or it dropped the
    link): it will reconnect and ask for what it has."""
    F = w.F
    I = w.I
    t = F[T]
    st = w.rp_state[r]
    base = t
    if st == RS_ONLINE:
        w.rp_psync[r] = w.rp_wire[r] + 1
    elif st == RS_LOADING:  # it finishes the load, then finds the link closed
        w.rp_psync[r] = w.rp_init_off[r] + 1
        base = w.rp_t_next[r]
    elif st == RS_APPLYING:  # it applies what it buffered, then finds the link closed
        w.rp_psync[r] = w.rp_wire[r] + 1
        base = w.rp_t_next[r]
    else:  # the transfer was cut: its old data was discarded at +FULLRESYNC
        w.rp_psync[r] = 0
    w.rp_state[r] = RS_CONNECTING
    w.rp_t_next[r] = next_cron_tick(base) + HANDSHAKE_RTTS * w.rp_rtt[r]
    w.rp_soft_since[r] = -1.0
    record(w, r, event, detail)
    if event == RE_DROP_HARD or event == RE_DROP_SOFT:
        I[STAT_REPL_OBUF_DROPS] += 1
        count(w, WI_REPL_DROPS, t, 1)
    if st == RS_BGSAVE and I[CHILD_SOCKET] and F[CHILD_END] == math.inf and \
            bgsave_replica(w, -1) < 0:
        # rdbPipeReadHandler: "Diskless rdb transfer, last replica dropped,
        # killing fork child." The child exits now; serverCron reaps it.
        F[CHILD_END] = t


@leaf
def bgsave_replica(w, skip):
    """The first replica but ``skip`` whose full sync waits on the running
    BGSAVE (``RS_BGSAVE``), or -1."""
    for q in range(w.I[REPL_N]):
        if q != skip and w.rp_state[q] == RS_BGSAVE:
            return q
    return -1


@step
def start_bgsave(w, socket):
    """``startBgsaveForReplication``: fork for every replica waiting for one;
    they get ``+FULLRESYNC`` with the offset of the fork."""
    F = w.F
    I = w.I
    if not redis_fork(w, CHILD_RDB):
        return
    I[REPL_CHILD] = 1
    I[REPL_RDB_B] = I[CHILD_FILE_B]
    if socket:  # rdbSaveToSlavesSockets: no file, the child's end is its transfer's
        I[CHILD_SOCKET] = 1
        I[CHILD_CHUNKS] = 0
        F[CHILD_END] = math.inf
        F[REPL_CHILD_T0] = F[T]
        F[REPL_CHILD_BPS] = I[REPL_RDB_B] * F[CHILD_KEY_RATE] / max(I[KS_KEYS], 1)
        if not I[REPL_DUAL]:  # the pipe the main thread relays
            I[REPL_CHILD] = 2
            I[REPL_PIPE_READ] = 0
            I[REPL_CHILD_MADE] = 0
            F[REPL_CHILD_AT] = F[T]
    off = I[REPL_OFFSET]
    for r in range(I[REPL_N]):
        if w.rp_state[r] == RS_WAIT_BGSAVE:
            w.rp_state[r] = RS_BGSAVE
            w.rp_init_off[r] = off
            w.rp_sent[r] = off
            w.rp_wire[r] = off
            w.rp_bulk_sent[r] = 0
            w.rp_bulk_wire[r] = 0
            w.rp_t_wire[r] = F[T]
            record(w, r, RE_FORK, I[REPL_RDB_B])
            if I[REPL_DUAL]:  # its main channel's PSYNC from the fork's offset: +CONTINUE
                I[STAT_SYNC_PARTIAL_OK] += 1


@step
def psync(w, r):
    """``syncCommand``: replica r's PSYNC has arrived. A partial resync if its
    offset is in the backlog's window, else a full sync."""
    F = w.F
    I = w.I
    t = F[T]
    p = w.rp_psync[r]
    w.rp_t_psync[r] = t
    w.rp_t_next[r] = math.inf
    if I[REPL_BACKLOG] and p > 0:
        first, hist = backlog_window(w)
        if first <= p <= first + hist:  # masterTryPartialResynchronization
            I[STAT_SYNC_PARTIAL_OK] += 1
            w.rp_state[r] = RS_ONLINE
            w.rp_sent[r] = p - 1
            w.rp_wire[r] = p - 1
            w.rp_t_wire[r] = t
            w.rp_t_rx[r] = t
            record(w, r, RE_PARTIAL, p)
            return
    if p > 0:
        I[STAT_SYNC_PARTIAL_ERR] += 1
    I[STAT_SYNC_FULL] += 1
    count(w, WI_SYNC_FULL, t, 1)
    record(w, r, RE_FULL, p)
    if not I[REPL_BACKLOG]:  # createReplicationBacklog: the first replica
        create_backlog(w)
    w.rp_state[r] = RS_WAIT_BGSAVE
    if I[REPL_DISKLESS]:
        return  # replicationCron forks after the delay
    if I[CHILD] == CHILD_NONE:
        start_bgsave(w, np.bool_(I[REPL_DUAL] == 1))  # an RDB channel is always a socket
    elif I[CHILD] == CHILD_RDB and I[REPL_CHILD] and not I[CHILD_SOCKET]:
        # Another replica's BGSAVE to disk is running: share it, with that
        # replica's place in the buffer ("Waiting for end of BGSAVE for SYNC").
        q = bgsave_replica(w, r)
        if q >= 0:
            w.rp_state[r] = RS_BGSAVE
            w.rp_init_off[r] = w.rp_init_off[q]
            w.rp_sent[r] = w.rp_sent[q]
            w.rp_wire[r] = w.rp_sent[q]
            w.rp_bulk_sent[r] = 0
            w.rp_bulk_wire[r] = 0
            w.rp_t_wire[r] = t
            return


@leaf
def create_backlog(w):
    """``createReplicationBacklog``: the stream is kept from the next byte on."""
    I = w.I
    I[REPL_BACKLOG] = 1
    I[REPL_BASE] = I[REPL_OFFSET]
    I[REPL_BL_BLOCK] = 0


@step
def check_limits(w, r, t):
    """``checkClientOutputBufferLimits`` for replica r (``replica`` class)."""
    I = w.I
    usage = pending_usage(w, w.rp_sent[r])
    if I[REPL_HARD] > 0 and usage >= I[REPL_HARD]:
        drop(w, r, RE_DROP_HARD, usage)
        return
    if I[REPL_SOFT] > 0 and usage >= I[REPL_SOFT]:
        now_s = math.floor(t)
        if w.rp_soft_since[r] < 0.0:
            w.rp_soft_since[r] = now_s
        elif now_s - w.rp_soft_since[r] > I[REPL_SOFT_SECS]:
            drop(w, r, RE_DROP_SOFT, usage)
    else:
        w.rp_soft_since[r] = -1.0


@step
def trim_backlog(w, max_blocks):
    """7.x ``incrementalTrimReplicationBacklog(max_blocks)``: let go of the
    backlog's first blocks while no replica points at them and it keeps more
    than ``repl-backlog-size`` without them, at most ``max_blocks`` of them
    (beforeSleep: ``TRIM_BLOCKS_PER_SLEEP``)."""
    I = w.I
    tail = tail_block(w)
    if tail < 0:
        return
    ref_min = tail
    for r in range(I[REPL_N]):
        if w.rp_state[r] >= RS_BGSAVE and w.rp_sent[r] < I[REPL_OFFSET]:
            ref_min = min(ref_min, block_of(w, w.rp_sent[r] + 1))
    bl = I[REPL_BL_BLOCK]
    start = I[REPL_BASE] + bl * REPL_BLOCK_7  # the offset before the backlog's first byte
    last = I[REPL_BL_BLOCK] + max_blocks
    while bl < ref_min and bl < last and \
            I[REPL_OFFSET] - start - REPL_BLOCK_7 > I[REPL_BL_SIZE]:
        bl += 1
        start += REPL_BLOCK_7
    I[REPL_BL_BLOCK] = bl


@step
def before_sleep(w):
    """beforeSleep's replication work: replicas whose PSYNC or load end is due,
    the output-buffer limits, one write to each replica, the backlog's trim."""
    F = w.F
    I = w.I
    t = F[T]
    cost = 0.0
    wake = math.inf
    I[REPL_BUF_PEAK] = max(I[REPL_BUF_PEAK], replication_memory(w))
    for r in range(I[REPL_N]):
        st = w.rp_state[r]
        if st == RS_CONNECTING and w.rp_t_next[r] <= t:
            psync(w, r)
        elif st == RS_LOADING and w.rp_t_next[r] <= t:
            loaded(w, r, t)
        elif st == RS_APPLYING and w.rp_t_next[r] <= t:  # its first REPLCONF ACK
            go_online(w, r, t)
        if w.rp_state[r] >= RS_BGSAVE:
            check_limits(w, r, t)
        st = w.rp_state[r]
        if st == RS_ONLINE:
            c, nxt = write_stream(w, r, t)
        elif I[REPL_DUAL] and st >= RS_BGSAVE:
            c, nxt = write_dual(w, r, t)
        elif st == RS_SEND_BULK or (st == RS_BGSAVE and I[CHILD_SOCKET]):
            c, nxt = write_bulk(w, r, t)
        else:
            c, nxt = 0.0, w.rp_t_next[r]
        cost += c
        wake = min(wake, nxt)
    if I[CHILD_SOCKET] and I[REPL_CHILD] == 2 and F[CHILD_END] == math.inf:
        c, nxt = relay(w, t)  # diskless: the child's pipe to the sockets
        cost += c
        wake = min(wake, nxt)
    if I[CHILD_SOCKET] and I[REPL_CHILD] == 1 and F[CHILD_END] == math.inf:
        # Dual channel: the child exits once every RDB connection has its file.
        done = True
        for r in range(I[REPL_N]):
            if w.rp_state[r] == RS_BGSAVE:
                done = False
        if done:
            F[CHILD_END] = t
    if I[REPL_BACKLOG] and not I[REDIS_62]:
        trim_backlog(w, TRIM_BLOCKS_PER_SLEEP)
    if I[MIN_REPLICAS]:
        refresh_good_replicas(w)
    F[REPL_NEXT] = wake
    if cost > 0.0:
        busy(w, W_CPU_REPL, cost)


@step
def replication_cron(w):
    """``replicationCron``, once a second from serverCron, and what
    ``checkChildrenDone`` does for replicas when a full sync's child has exited."""
    F = w.F
    I = w.I
    t = F[T]
    if I[REPL_CHILD] and I[CHILD] == CHILD_NONE:  # updateSlavesWaitingBgsave
        piped = I[REPL_CHILD] == 2
        I[REPL_CHILD] = 0
        for r in range(I[REPL_N]):
            if w.rp_state[r] == RS_BGSAVE:
                # Disk-based: now send the file. Diskless: the whole RDB is in its
                # socket or on the link (Redis counts it online, its stream to
                # start at its first ACK); the link keeps its progress.
                w.rp_state[r] = RS_SEND_BULK
                if not piped:
                    w.rp_t_wire[r] = t
        if not I[REPL_DISKLESS]:
            for r in range(I[REPL_N]):
                if w.rp_state[r] == RS_WAIT_BGSAVE:
                    start_bgsave(w, np.bool_(I[REPL_DUAL] == 1))
                    break
    if t < F[REPL_CRON_WHEN]:
        return
    F[REPL_CRON_WHEN] = math.floor(t) + 1.0
    connected = 0
    waiting = 0
    max_idle = -1.0
    for r in range(I[REPL_N]):
        st = w.rp_state[r]
        if st != RS_CONNECTING:
            connected += 1
        if st == RS_WAIT_BGSAVE:
            waiting += 1
            max_idle = max(max_idle, math.floor(t) - math.floor(w.rp_t_psync[r]))
        elif st == RS_ONLINE:  # the replica's own cron: repl-timeout without data
            w.rp_wire[r] = advance_link(w, r, w.rp_sent[r], w.rp_wire[r], w.rp_rate[r], t)
            if t - w.rp_t_rx[r] > F[REPL_TIMEOUT]:
                I[STAT_REPL_TIMEOUTS] += 1
                drop(w, r, RE_TIMEOUT, t - w.rp_t_rx[r])
                connected -= 1
    if connected > 0 and I[REPL_CRON_LOOPS] % I[REPL_PING_PERIOD] == 0:
        feed(w, PING_BYTES)
    if waiting > 0 and I[CHILD] == CHILD_NONE and (  # shouldStartChildForReplication
            not I[REPL_DISKLESS] or max_idle >= I[REPL_DELAY]
            or 0 < I[REPL_MAX_WAITING] <= waiting):
        start_bgsave(w, np.bool_(I[REPL_DISKLESS] == 1 or I[REPL_DUAL] == 1))
    if connected == 0 and I[REPL_BACKLOG]:
        if F[REPL_IDLE_SINCE] < 0.0:
            F[REPL_IDLE_SINCE] = t
        elif F[REPL_TTL] > 0.0 and t - F[REPL_IDLE_SINCE] > F[REPL_TTL]:
            I[REPL_BACKLOG] = 0  # freeReplicationBacklog (and a new replication id)
    elif connected > 0:
        F[REPL_IDLE_SINCE] = -1.0
    if I[MIN_REPLICAS]:
        refresh_good_replicas(w)
    I[REPL_CRON_LOOPS] += 1


@step
def snapshot(w, k):
    """The replication gauges of window k (``gauges.snapshot_gauges``)."""
    I = w.I
    connected = 0
    online = 0
    lag = 0
    local = 0
    t = w.F[T]
    n = I[REPL_N]
    for r in range(n):
        st = w.rp_state[r]
        w.rc_repl_state[k * n + r] = st
        if st != RS_CONNECTING:
            connected += 1
        if st == RS_ONLINE:
            online += 1
        if st >= RS_BGSAVE:
            behind = I[REPL_OFFSET] - w.rp_wire[r]
            w.rc_repl_lag[k * n + r] = behind
            lag = max(lag, behind)
        else:
            w.rc_repl_lag[k * n + r] = -1
        if I[REPL_DUAL] and RS_BGSAVE <= st <= RS_APPLYING:
            held = w.rp_wire[r] - w.rp_init_off[r]
            if st == RS_APPLYING:  # applied at its rate since the load's end
                held = min(held, int((w.rp_t_next[r] - t) * w.rp_apply[r]))
            local = max(local, held)
    w.rc_wi[cell(I, WI_REPL_BUF, k)] = replication_memory(w)
    w.rc_wi[cell(I, WI_REPL_OFFSET, k)] = I[REPL_OFFSET]
    w.rc_wi[cell(I, WI_REPL_CONNECTED, k)] = connected
    w.rc_wi[cell(I, WI_REPL_ONLINE, k)] = online
    w.rc_wi[cell(I, WI_REPL_LAG, k)] = lag
    w.rc_wi[cell(I, WI_REPL_LOCAL, k)] = local


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """The replicas (one row per replica of each ``replicas`` entry), the
    backlog, ``client-output-buffer-limit replica``, the sync mode and delays,
    ``repl-timeout``, ``repl-ping-replica-period``, ``repl-backlog-ttl``."""
    from redsim.model import state as S
    from redsim.model.blueprint import f64, i64

    sc = b.scenario
    server = sc.server
    rows = [rep for rep in sc.replicas for _ in range(rep.count)]
    n = len(rows)
    b.I[S.REPL_N] = n
    hard, soft, secs = server.client_output_buffer_limit["replica"]
    configured_hard = hard  # what a dual-channel replica's buffer limit inherits
    if hard and hard < server.repl_backlog_size and sc.redis_version != "6.2":
        hard = server.repl_backlog_size  # 7.x: a replica's hard limit is at least the backlog
    b.I[S.REPL_HARD], b.I[S.REPL_SOFT], b.I[S.REPL_SOFT_SECS] = hard, soft, secs
    b.I[S.REPL_DISKLESS] = 1 if server.repl_diskless_sync else 0
    b.I[S.REPL_DUAL] = 1 if any(rep.dual_channel for rep in rows) else 0
    b.I[S.REPL_DELAY] = server.repl_diskless_sync_delay
    b.I[S.REPL_MAX_WAITING] = server.repl_diskless_sync_max_replicas
    b.I[S.REPL_PING_PERIOD] = server.repl_ping_replica_period
    b.F[S.REPL_TIMEOUT] = float(server.repl_timeout)
    b.F[S.REPL_TTL] = float(server.repl_backlog_ttl)
    b.F[S.REPL_CRON_WHEN] = 1.0
    b.F[S.REPL_IDLE_SINCE] = -1.0
    b.F[S.REPL_NEXT] = math.inf
    b.I[S.MIN_REPLICAS] = server.min_replicas_to_write if server.min_replicas_max_lag > 0 else 0
    online = [rep.start == "online" for rep in rows]
    b.I[S.GOOD_REPLICAS] = sum(online)
    inf = math.inf
    m = max(n, 1)

    def col(values, fill, make):
        return make(list(values) + [fill] * (m - n))

    b.fill("rp",
           state=col((S.RS_ONLINE if on else S.RS_CONNECTING for on in online), 0, i64),
           t_next=col((inf if on else rep.connect_at + HANDSHAKE_RTTS * rep.rtt
                       for on, rep in zip(online, rows, strict=True)), inf, f64),
           bw=col((rep.link_bandwidth for rep in rows), 1.0, f64),
           rate=col((min(rep.link_bandwidth, rep.apply_rate or inf) for rep in rows), 1.0, f64),
           rtt=col((rep.rtt for rep in rows), 0.0, f64),
           load=col((rep.load_rate for rep in rows), 1.0, f64),
           sndbuf=col((rep.socket_buffer for rep in rows), 0, i64),
           sent=np.zeros(m, np.int64), wire=np.zeros(m, np.int64), t_wire=np.zeros(m),
           t_rx=np.zeros(m), psync=np.zeros(m, np.int64), init_off=np.zeros(m, np.int64),
           bulk_sent=np.zeros(m, np.int64), bulk_wire=np.zeros(m, np.int64),
           soft_since=np.full(m, -1.0), t_psync=np.zeros(m),
           apply=col((rep.apply_rate or rep.link_bandwidth for rep in rows), 1.0, f64),
           fsb=col((rep.full_sync_buffer_limit or configured_hard for rep in rows), 0, i64))
    # The event log and the per-replica series: nothing without replicas.
    b.fill("rc", repl=np.zeros(S.MAX_REPL_REC * S.N_REPL_FIELDS if n else 0),
           repl_lag=np.full(b.I[S.N_WIN] * n, -1, np.int64),
           repl_state=np.zeros(b.I[S.N_WIN] * n, np.int64))
    if n and not any(online):
        b.F[S.REPL_NEXT] = min(rep.connect_at for rep in rows)
