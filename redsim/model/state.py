"""Flat-array state shared by the compiled main-thread kernel.

No Redis source: the kernel's memory layout; the comments beside the fields
name the Redis variables some of them stand for.

Everything the kernel touches is a numpy array, so numba can compile it and the
same code runs uncompiled with ``NUMBA_DISABLE_JIT=1``. Scalars live in two
vectors, ``F`` (float64) and ``I`` (int64), addressed by the named indices
below; per-entity fields are structure-of-arrays (connections, request
slots, pools, groups, ...), built as one namedtuple per entity and flattened
into the ``World`` namedtuple, whose fields the kernel reads as ``w.cn_req``
through ``model.world``. Two-dimensional arrays are indexed flat by the
kernel (``row * n_columns + column``).

Times are seconds of simulated time; CPU costs are stored in seconds too
(converted from the scenario's µs once, here).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

# ---- F: float scalars -------------------------------------------------------
(T, T_END, DT, WARMUP, RTT_HALF, CRON_WHEN,
 C_ITER, C_READ, C_READ_B, C_WRITE, C_WRITE_B, C_ACCEPT, C_CLOSE, C_CRON, C_CRON_CLIENT,
 T_NEXT_SNAP, LAT_SUM, T_LAST_CRON, WH_INV, POLL_WAKE,
 # eviction costs, s (model/eviction.py); the time limit per call, s
 C_EV_CALL, C_EV_CHECK, C_EV_SAMPLE, C_EV_DELETE, EV_TIME_LIMIT,
 C_EXP_SAMPLE, C_EXP_DELETE, EXP_LAST_FAST,
 WIN_LO, WIN_HI,  # bounds of the window `observe.bins.window` found last, s
 # persistence (model/aof.py, model/disk.py, model/fork.py), s unless noted
 AOF_POSTPONE_START,  # when a flush was first postponed behind a busy fsync; -1 = not
 AOF_LAST_FSYNC,  # server.aof_last_fsync: the unixtime (whole s) of the last fsync
 AOF_BG_END,  # when the background fsync job running (or last run) ends
 AOF_LAST_WRITEBACK,  # appendfsync no: the kernel flusher's last writeback of the AOF
 DISK_FREE,  # when the disk's queue of jobs empties (FIFO)
 DISK_BW,  # sequential write bandwidth, bytes/s
 DISK_MEAN, DISK_LOW, DISK_HIGH, DISK_SIGMA,  # fdatasync latency distribution, s
 C_AOF_WRITE, C_AOF_WRITE_B,  # main-thread write() of the AOF: per call, per byte
 FORK_FIXED, FORK_PER_BYTE,  # fork(): fixed, and per byte of RSS mapped with 4 KB pages
 COW_FAULT, COW_COPY_B,  # a copy-on-write fault: fixed, and per byte copied
 CHILD_KEY_RATE,  # keys the fork child serialises per second
 CHILD_NEXT, CHILD_DT,  # the child's next chunk submission, and the time between chunks
 CHILD_END,  # when the child exits (known once its last chunk is queued); inf before
 T_LASTSAVE, T_LAST_BGSAVE_TRY, T_FORK, LATEST_FORK,
 COW_CPU,  # copy-on-write fault time accumulated by the command being run, s
 C_WAKE,  # an epoll_wait that slept: the block, the wake-up and the cold caches after, s
 N_F) = range(57)

# ---- I: integer scalars -----------------------------------------------------
(PHASE, HEAP_N, SEQ, CONNECTED, HZ_CONF, HZ, DYN_HZ, BATCHING, DIST_EXP,
 STAT_COMMANDS, STAT_CONNECTIONS, REQ_ISSUED, REQ_DONE, REQ_REJECTED, EL_CYCLES,
 RNG_LOW, RNG_OVERRUN, READY_HEAD, READY_N, PW_N, FREE_N, IN_FLIGHT, PENDING_CLOSE,
 CUR_WIN, N_WIN, SNAP_WIN, LAT_N, MAXCLIENTS, BUSY_CONNS, WAITERS,
 REDIS_62,  # 1 for redis-version 6.2 (reads, writes and poll timeout differ)
 # the keyspace and the memory ledger (model/db.py, model/memory.py); bytes
 KS_KEYS, KS_EXPIRES, KS_BUCKETS, KS_EXP_BUCKETS, MEM_DATASET, MEM_STARTUP,
 CLIENT_STRUCT, MEM_CLIENTS, MEM_CLIENTS_INFO, CC_CURSOR, MAXMEMORY, Q16, SHARED_INTS,
 LRU_CLOCK, STAT_HITS, STAT_MISSES, STAT_EXPIRED,
 # eviction (model/eviction.py)
 EV_POLICY, EV_SAMPLES, EV_TIMER, STAT_EVICTED, STAT_OOM, LFU_LOG_FACTOR,
 LFU_DECAY_TIME, KS_RNG1, KS_RNG2,  # the keyspace's own generator (rng.server_uniform)
 # active expiry (model/expire.py)
 EXP_EFFORT, EXP_CURSOR, EXP_TIMELIMIT_EXIT, STAT_EXPIRE_CAPPED,
 # sizes (the kernel indexes raw pointers, which do not know their length)
 N_CONNS, N_POOLS, N_GROUPS, HEAP_CAP, RNG_SIZE,
 # the timing wheel (model/wheel.py)
 WH_EPOCH, WH_N, WH_FREE, WH_MASK,
 WIN_K,  # the window `observe.bins.window` found last
 LAZY_EVICTION,  # lazyfree-lazy-eviction
 # write-once keys (db.new_key_row): their first row, free rows, the low-water
 # mark of free rows, and the flag asking Python to add rows
 KS_ONCE_LO, KS_FREE_N, KS_FREE_LOW, KS_LOW,
 KS_APPEND_EXPIRES,  # 1 while preloading: expires entries appended, shuffled after
 # persistence (model/aof.py, model/disk.py, model/fork.py); sizes in bytes
 AOF_ON, AOF_POLICY, AOF_BUF, AOF_UNSYNCED, AOF_SIZE, AOF_BASE, AOF_DELAYED,
 AOF_RW_PERC, AOF_RW_MIN, NO_FSYNC_RW, AOF_RW_SCHEDULED, STAT_FSYNCS,
 DIRTY, DIRTY_AT_FORK,  # server.dirty, and its value when the child forked
 CHILD,  # the fork child: CHILD_NONE, CHILD_RDB or CHILD_AOF
 FORK_REQ,  # a scenario event asked for BGSAVE / BGREWRITEAOF (CHILD_RDB / CHILD_AOF)
 N_SAVE,  # save points in tb_save_secs / tb_save_changes
 PAGE_SHIFT,  # log2 of the page a copy-on-write fault copies: 12 (4 KB) or 21 (2 MB)
 N_PAGES, PG_WORDS, COW_PAGES,  # pages at the fork, bitmap capacity (words), pages copied
 CHILD_CHUNKS, CHILD_CHUNK_B, CHILD_LAST_B,  # chunks still to queue, their size, the last's
 STAT_FORKS, STAT_RDB_SAVES, STAT_AOF_REWRITES, STAT_FORK_REFUSED,
 DISK_KIND, DISK_RNG1, DISK_RNG2,  # fdatasync distribution kind; the disk's generator
 LM_THRESHOLD,  # latency-monitor-threshold, ms (0 = off)
 KEY_LEN,  # key length assumed for the DELs evictions and expiries propagate, bytes
 N_FORK_REC, N_PASS,  # records kept in rc_forks / rc_passes
 AOF_SIZE_AT_FORK,  # aof_current_size when the rewrite child forked
 CHILD_FILE_B,  # bytes of the file the child writes (RDB, or the AOF's new base)
 HEAP_HUGE,  # 1: the heap is mapped with 2 MB pages (fork copies 512x fewer entries)
 REDIS_72,  # 1 for redis-version 7.2 (where its read path and clientsCron differ from 7.0)
 N_I) = range(117)

# serverCron's frequency bounds (src/server.h): `hz` is clamped to them when it
# is applied (config/schema.py), and dynamic-hz doubles it up to the maximum.
CONFIG_MIN_HZ = 1
CONFIG_MAX_HZ = 500

# Event-loop phases: where the kernel resumes.
PH_BEFORE_SLEEP = 0
PH_POLL = 1

# Kernel return codes.
RET_STOP = 0  # reached t_stop at an iteration boundary
RET_REFILL = 1  # a random stream's buffer is half used, or the write-once keys are
# short of free rows (KS_LOW): refill / grow, then re-enter

# Client-side event kinds (the event heap).
EV_ISSUE = 0  # a closed-loop/trace source finished thinking: issue a request
EV_OPEN_ARRIVAL = 1  # next Poisson arrival of an open-loop group
EV_ARRIVE = 2  # a request's bytes reach the server's socket
EV_REPLY = 3  # the last reply byte reaches the client
EV_REAP = 4  # a group's pool reaper runs (closes idle connections)
EV_TRACE = 5  # next recorded-time line of a trace group
EV_THINK_CLOCK = 6  # a memoryless closed-loop group's uniformized think clock ticks
EV_RESUME = 7  # a thread of a memoryless group's process starts thinking (after backoff)

# Delay lines: events that happen a fixed delay after a clock that never goes
# back are born in time order, so they queue in a FIFO ring instead of the heap.
LINE_ARRIVE = 0  # EV_ARRIVE half an RTT after a send on an open connection
LINE_REPLY = 1  # EV_REPLY half an RTT after the main thread wrote the last byte
N_LINES = 2
LINE_KIND = (EV_ARRIVE, EV_REPLY)

# The fork child (I[CHILD]).
CHILD_NONE = 0
CHILD_RDB = 1  # BGSAVE
CHILD_AOF = 2  # BGREWRITEAOF

# Columns of the per-fork records (Rec.forks) and per-pass records (Rec.passes).
FORK_FIELDS = ("time", "fork_s", "child", "rss", "pages", "cow_bytes", "end")
N_FORK_FIELDS = len(FORK_FIELDS)
MAX_FORK_REC = 4096
PASS_FIELDS = ("group", "start", "end")
N_PASS_FIELDS = len(PASS_FIELDS)
MAX_PASS_REC = 65536

# appendfsync (I[AOF_POLICY]).
FSYNC_ALWAYS = 0
FSYNC_EVERYSEC = 1
FSYNC_NO = 2

# maxmemory-policy (I[EV_POLICY]).
(POLICY_NOEVICTION, POLICY_ALLKEYS_LRU, POLICY_ALLKEYS_LFU, POLICY_ALLKEYS_RANDOM,
 POLICY_VOLATILE_LRU, POLICY_VOLATILE_LFU, POLICY_VOLATILE_RANDOM, POLICY_VOLATILE_TTL) = range(8)
POLICIES = ("noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru",
            "volatile-lfu", "volatile-random", "volatile-ttl")

# Group kinds.
KIND_CLOSED = 0
KIND_OPEN = 1
KIND_TRACE = 2

# Distribution kinds.
DIST_FIXED = 0
DIST_EXPONENTIAL = 1
DIST_UNIFORM = 2
DIST_LOGNORMAL = 3
# An inverse-CDF table: points first..last (inclusive) of tb_emp_p (probabilities,
# 0 to 1) and tb_emp_x (values), which the kernel holds as the distribution's
# low and high (model/rng.py empirical; build.py).
DIST_EMPIRICAL = 4
EMP_MAX_POINTS = 1001  # most points in one empirical table (config/schema.py)

# Windowed float series (rows of Rec.wf) and int series (rows of Rec.wi).
(W_CPU_COMMANDS, W_CPU_READ, W_CPU_WRITE, W_CPU_ITERATION, W_CPU_CRON, W_CPU_CONNECTIONS,
 W_CPU_EVICTION, W_CPU_EXPIRE,
 W_CPU_AOF,  # write() of the AOF buffer, incl. a write blocked behind a running fsync
 W_CPU_FSYNC,  # fdatasync on the main thread (appendfsync always)
 W_CPU_FORK,  # fork()
 W_CPU_COW,  # copy-on-write faults of the parent while a child lives
 W_IN_SYSTEM, W_IN_SERVER, W_BUSY_CONNS, W_WAITERS, W_LAT_SUM,
 W_LAT_MAX,
 W_P50, W_P90, W_P99, W_P999, W_HZ, N_WF) = range(24)
N_CPU = 12  # the first N_CPU rows of wf are main-thread activities
(WI_COMMANDS, WI_DONE, WI_ISSUED, WI_CYCLES, WI_CONNECTED, WI_IN_FLIGHT, WI_REJECTED,
 WI_OPENED, WI_CLOSED, WI_HITS, WI_MISSES, WI_EXPIRED, WI_EVICTED, WI_OOM,
 # gauges at each window's end (model/memory.py)
 WI_USED_MEMORY, WI_KEYS, WI_EXPIRES, WI_BUCKETS, WI_MEM_CLIENTS, WI_MEM_CLIENTS_INFO,
 # persistence: counts per window, then gauges at each window's end
 WI_FSYNCS, WI_AOF_DELAYED, WI_FORKS,
 WI_AOF_BUF, WI_AOF_SIZE, WI_COW_BYTES, WI_CHILD, WI_DIRTY,
 N_WI) = range(29)

Conns = namedtuple("Conns", [
    "pool",  # owning pool
    "group",  # owning client group
    "is_open",  # 1 once connected, 0 when closed / never opened
    "req",  # request slot in flight on this connection, -1 if none
    "cmds_left",  # commands of the request not yet read by Redis
    "partial",  # bytes of the next command already read (a command split across reads)
    "next_cmd",  # generated-but-unread command id, -1 if none
    "next_bytes",  # its request bytes
    "next_reply",  # its reply bytes
    "next_scale",  # its service-time multiplier (1, or an exponential draw)
    "next_key",  # its (first) key id in the keyspace; -1 for trace commands
    "next_k", "next_n",  # its keys/members and its count argument
    "next_value",  # bytes of the value it carries (or, for trace reads, returns)
    "next_ttl",  # the TTL it sets, s; 0 = none
    "big_first", "big_period", "big_n", "big_len",  # its big arguments (protocol.big_args)
    "reply_bytes",  # reply bytes queued, not yet written
    "reply_nodes",  # 6.2: reply buffers holding them (c->buf + list nodes), one write() each
    "tail_room",  # 6.2: free bytes in the last of those buffers
    "in_pw",  # 1 while on the clients-pending-write list
    # what the connection holds in used_memory (model/client_memory.py), bytes
    "qb_alloc", "qb_peak",  # query buffer allocation (its jemalloc class) and querybuf_peak
    "qb_room", "qb_hdr",  # its sds: sdsalloc (bytes it has room for) and header bytes
    "t_read",  # last read (lastinteraction), s
    "buf_usable", "buf_peak", "t_buf_reset",  # 7.x c->buf size, peak fill, peak reset time
    "mem",  # everything the client holds now; 0 = no client (not accepted)
    "mem_info",  # what INFO last counted for it (at its clientsCron visit)
    "new",  # 1 until Redis has done the accept work for it
    "t_arrive",  # when the current request reached the server socket
    "t_checkout",  # when the client took it from the pool for the current request
    "t_idle",  # when it was last returned to the pool
])

Reqs = namedtuple("Reqs", [
    "group", "pool",
    "t_issue",  # when the request was issued (think end / arrival)
    "next",  # next request in its pool's waiter list, -1 at the tail
    "trace_pos",  # trace sources: next line to send
    "active",  # closed/trace sources: 0 once a `replay: once` trace is done
    "free_stack",  # open-loop/recorded-trace/memoryless groups: free slots, by group
    "pass_t0",  # trace sources: when the current pass over the trace began, s
])

Pools = namedtuple("Pools", [
    "group", "max_size", "n_open", "lifo",
    "base",  # first connection slot of this pool; slots [base, base+max_size)
    "idle_head", "idle_n",  # idle ring over idle_ring[base:base+max_size]
    "free_n",  # stack of never-opened/closed slots in free_slots[base:...]
    "wait_head", "wait_tail", "wait_n",
    "thinking",  # memoryless groups: the process's threads now thinking
    "idle_ring", "free_slots",  # per-connection-slot arrays, segmented by pool
])

Groups = namedtuple("Groups", [
    "kind", "pipeline", "processes", "pool_base", "slot_base", "n_slots",
    "think_kind", "think_mean", "think_low", "think_high", "think_sigma",
    "vs_kind", "vs_mean", "vs_low", "vs_high", "vs_sigma",
    "key_size", "keys", "zipf_base",  # zipf_base: offset into Tables.zipf_cdf, -1 = uniform
    "mix_start", "mix_end", "prof_start", "prof_end", "trace_start", "trace_end",
    "replay_loop", "recorded", "idle_timeout", "reap_interval", "max_waiters",
    "retry_backoff", "start",
    "stream",  # first of this group's random streams
    "prof_pos",  # open loop: current profile segment
    "trace_t0",  # recorded trace: simulated time of line 0
    "trace_next",  # recorded trace: next line to send
    "free_n",  # free request slots (open loop / recorded trace / memoryless)
    "memoryless",  # 1: closed loop with exponential think, run as one clock (clients.py)
    "threads",  # sources per process
    "write_once",  # fraction of writes that store a never-used key (keyspace.write-once)
])

Tables = namedtuple("Tables", [
    "cmd_shape", "cmd_fixed", "cmd_per_byte", "cmd_per_elem", "cmd_namelen",
    "mix_cmd", "mix_cum", "mix_keys", "mix_count", "mix_ttl",
    "prof_t", "prof_rate",
    "tr_cmd", "tr_req_bytes", "tr_reply_bytes", "tr_elems", "tr_value", "tr_time",
    "tr_big_first", "tr_big_period", "tr_big_n", "tr_big_len",
    "cmd_effect",  # what the command does to the keyspace (db.EFFECT_*)
    "cmd_write",  # 1: a write command (propagated to the AOF, counted in server.dirty)
    "save_secs", "save_changes",  # the `save` points
    "cmd_denyoom",  # 1: refused with -OOM when eviction fails
    "zipf_cdf",
    "emp_p", "emp_x",  # every empirical distribution's table: probabilities, values
])

Keys = namedtuple("Keys", [
    "cost",  # bytes the key allocates (objects.string_key_bytes); 0 = absent
    "vlen",  # value length, bytes (-1: an integer value)
    "lru",  # LRU clock (s, 24 bits) at the last access; LFU policies: ldt << 8 | counter
    "expire",  # absolute expire time, s; inf = no TTL
    "pos",  # its place in `dense` (the main dict's entries)
    "xpos",  # its place in `xdense` (the expires dict's entries), -1 if no TTL
    "dense",  # positions 0..keys-1: the present keys (what the main dict holds)
    "xdense",  # positions 0..expires-1: the keys with a TTL
    "free",  # a stack of the free rows of write-once keys (KS_FREE_N of them)
])
"""The keyspace (db 0): one row per key id (every group's key k is the same key),
plus the two dicts' entry lists, which sampling draws from. Rows from
``I[KS_ONCE_LO]`` on hold write-once keys (``db.new_key_row``), reused once freed."""
KEY_ROW_ABSENT = {"cost": 0, "vlen": 0, "lru": 0, "expire": np.inf, "pos": 0, "xpos": -1}
"""The row fields of a key id with no key (``cost`` 0: absent)."""


EvPool = namedtuple("EvPool", ["key", "idle"])
"""The eviction pool (``EvictionPoolLRU``): up to 16 candidates, best (highest
idle score) last."""

Heap = namedtuple("Heap", ["t", "seq", "kind", "id"])
Lines = namedtuple("Lines", [
    "t", "seq", "id",  # (N_LINES, capacity) rings: when, scheduling order, connection
    "head", "n",  # per line: first entry, entries queued
])
Wheel = namedtuple("Wheel", [
    "head",  # per bucket: first entry, -1 if empty
    "t", "seq", "kind", "id", "next",  # per entry; `next` also links the free list
])
Rng = namedtuple("Rng", ["buf", "pos"])
Pages = namedtuple("Pages", [
    "cow",  # copy-on-write bitmap: bit p of word p >> 5 set once page p was copied
])
Rec = namedtuple("Rec", [
    "wf", "wi", "hist", "whist",
    "evhist",  # performEvictions calls by duration: bucket b holds [2^b, 2^(b+1)) µs
    "tofree",  # calls over the limit by mem_tofree: bucket b holds [2^b, 2^(b+1)) bytes
    "fsync",  # fdatasync calls by duration (queueing + the call): [2^b, 2^(b+1)) µs
    "forks",  # one row of FORK_FIELDS per fork (model/fork.py)
    "passes",  # one row of PASS_FIELDS per completed pass of a trace source
    "lm_t", "lm_ms", "lm_n", "lm_max",  # latency monitor (model/latency.py)
])

# The kernel sees one flat record: every field of the groups above, prefixed
# with the group's short name (``cn_req``, ``gp_think_mean``, ``rc_wf``, ...).
_PARTS = (("cn", Conns), ("rq", Reqs), ("pl", Pools), ("gp", Groups), ("tb", Tables),
          ("ks", Keys), ("ep", EvPool), ("hp", Heap), ("wh", Wheel), ("ln", Lines), ("rg", Rng),
          ("pg", Pages), ("rc", Rec))
World = namedtuple("World", ["F", "I"] + [f"{pre}_{f}" for pre, nt in _PARTS for f in nt._fields]
                   + ["ready", "pw"])
"""Every array the kernel reads or writes, by name.

``ready`` is the ring of connections with unread request bytes (epoll's ready
list); ``pw`` is ``clients_pending_write``. Python code holds this namedtuple;
the kernel reaches the same arrays through a table of pointers (``model.world``).
"""

FLOAT_FIELDS = frozenset(
    ["F", "cn_next_scale", "cn_t_read", "cn_t_buf_reset", "cn_t_arrive", "cn_t_checkout",
     "cn_t_idle", "rq_t_issue",
     "gp_think_mean", "gp_think_low", "gp_think_high", "gp_think_sigma", "gp_vs_mean",
     "gp_vs_low", "gp_vs_high", "gp_vs_sigma", "gp_idle_timeout", "gp_reap_interval",
     "gp_retry_backoff",
     "gp_start", "gp_write_once", "gp_trace_t0", "tb_cmd_fixed", "tb_cmd_per_byte",
     "tb_cmd_per_elem",
     "tb_mix_cum", "tb_prof_t", "tb_prof_rate", "tb_tr_time", "tb_zipf_cdf", "tb_emp_p",
     "tb_emp_x",
     "ks_expire", "ep_idle",
     "hp_t", "wh_t", "ln_t",
     "rg_buf", "rc_wf", "rc_forks", "rc_passes", "rc_lm_t", "rq_pass_t0"])
"""World fields holding float64; every other field holds int64."""


ROWS = {
    "cn": Conns._fields,
    "rq": ("group", "pool", "t_issue", "next", "trace_pos", "active"),
    "pl": ("group", "max_size", "n_open", "lifo", "base", "idle_head", "idle_n", "free_n",
           "wait_head", "wait_tail", "wait_n", "thinking"),
    "ks": ("cost", "vlen", "lru", "expire", "pos", "xpos"),
    "hp": Heap._fields,
    "wh": ("t", "seq", "kind", "id", "next"),
}
"""Per-entity fields stored row by row (one row of 8-byte slots per entity), so
that the fields the kernel touches for one connection, request slot, pool or
event share cache lines. Every other field is a contiguous array."""

_STRIDE = {f"{pre}_{f}": len(fields) for pre, fields in ROWS.items() for f in fields}


def row_stride(name: str) -> int:
    """Elements between consecutive entities' values of World field ``name``."""
    return _STRIDE.get(name, 1)


def row_table(pre: str, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Part ``pre``'s ``ROWS`` fields copied into one row-major table: the columns,
    strided views of it, by field name. ``values`` holds one equal-length array
    per field; where every one is a broadcast of one value, whole rows are
    filled in one pass."""
    row = ROWS[pre]
    n = len(values[row[0]])
    table = np.empty((n, len(row)), np.int64)
    filled = n > 0 and all(values[f].strides[0] == 0 for f in row)
    if filled:
        template = np.zeros(len(row), np.int64)
        for j, f in enumerate(row):
            view = template.view(np.float64) if f"{pre}_{f}" in FLOAT_FIELDS else template
            view[j] = values[f][0]
        table[:] = template
    columns = {}
    for j, f in enumerate(row):
        col = (table.view(np.float64) if f"{pre}_{f}" in FLOAT_FIELDS else table)[:, j]
        if not filled:
            col[:] = values[f]
        columns[f] = col
    return columns


def flatten(F: np.ndarray, I: np.ndarray, ready: np.ndarray, pw: np.ndarray,
            **parts) -> World:
    """A ``World`` from the scalars, the two lists and one namedtuple per part.

    Fields listed in ``ROWS`` are copied into one row-major table per part
    (``row_table``) and replaced by strided views of it (columns), int64 or
    float64 as before.
    """
    fields = {"F": F, "I": I, "ready": ready, "pw": pw}
    for pre, _nt in _PARTS:
        values = parts[pre]._asdict()
        if pre in ROWS:
            values.update(row_table(pre, values))
        for f, v in values.items():
            fields[f"{pre}_{f}"] = v
    return World(**fields)


# Streams per group, in order: arrivals/think, command mix + keys, value sizes.
STREAMS_PER_GROUP = 3
SERVICE_STREAM = 0  # the server's own stream (service-time variability); groups follow


def new_scalars() -> tuple[np.ndarray, np.ndarray]:
    """Fresh F and I vectors."""
    return np.zeros(N_F, np.float64), np.zeros(N_I, np.int64)
