"""Flat-array state shared by the compiled main-thread kernel.

No Redis source: the kernel's memory layout; the declarations name the Redis
variables the fields stand for.

Everything the kernel touches is a numpy array, so numba can compile it and the
same code runs uncompiled with ``NUMBA_DISABLE_JIT=1``. Scalars live in two
vectors, ``F`` (float64) and ``I`` (int64), addressed by named indices
(``w.F[T]``); per-entity fields are structure-of-arrays (connections, request
slots, pools, groups, ...), built as one namedtuple per part and flattened
into the ``World`` namedtuple, whose fields the kernel reads as ``w.cn_req``
through ``model.world``. Two-dimensional arrays are indexed flat by the
kernel (``row * n_columns + column``).

Nothing here is counted by hand: each mechanism declares the state it owns in
a ``FIELDS`` block next to its code (``model/layout.py`` says what an entry
holds), and this module reads the blocks in ``OWNERS`` order (the order the
mechanisms are registered in, ``model/mechanisms.py``) and assigns the
indices (``T``, ``C_EV_CALL``, ``W_CPU_COMMANDS``, ...), the parts'
namedtuples, ``FLOAT_FIELDS``, ``ROWS`` and the ``World``'s field order (which
is also the kernel's pointer table, ``model.world.pack``).

Several server instances on one host (issue #19) turn a server-wide scalar
into a per-instance one by moving its declaration from ``"F"``/``"I"`` to a
part with one row per instance; its kernel reads change from ``w.F[NAME]`` to
``w.sv_name[s]`` and nothing else needs counting.

Times are seconds of simulated time; CPU costs are stored in seconds too
(converted from the scenario's µs once, in each mechanism's ``configure``).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from redsim.model import layout as _layout
from redsim.model import mechanisms as _mechanisms

# ---- The declared state --------------------------------------------------------
# Every scalar (F, I), per-entity field (the parts below) and recorded series
# (rc_wf, rc_wi) is declared by the mechanism that owns it, in a FIELDS block
# next to its code (model/layout.py says what an entry holds). The owners are
# read in the order they are registered in (model/mechanisms.py), which is the
# layout's; nothing is counted by hand.
OWNERS = tuple(m.module for m in _mechanisms.MECHANISMS if m.state)

PARTS = (
    # (prefix, namedtuple, stored row by row, what one entity is)
    ("cn", "Conns", True, "a connection slot (a client, once accepted)"),
    ("rq", "Reqs", True, "a request slot: a closed-loop source, or a request in flight"),
    ("pl", "Pools", True, "a client group's connection pool"),
    ("gp", "Groups", False, "a client group of the scenario"),
    ("tb", "Tables", False, "read-only tables (commands, mixes, profiles, traces, CDFs)"),
    ("ks", "Keys", True,
     "a key row of db 0 (string groups' key k is row k; collection keyspaces have their own)"),
    ("cl", "Collections", False,
     "a collection value (a big key's, or a collection keyspace key's hash, set, zset or list)"),
    ("lf", "LazyfreeQueue", False, "a slot of the bio lazy-free thread's job queue"),
    ("al", "Arena", False,
     "a jemalloc bin (a small size class), a thread-cache bin, and the decay's backlog"),
    ("sb", "Slabs", True, "a slab id of jemalloc's arena (its bin and free regions)"),
    ("ep", "EvPool", False, "an entry of the eviction pool (EvictionPoolLRU, 16 entries)"),
    ("rp", "Replicas", False, "a replica attached to the server (model/replication.py)"),
    ("io", "IoThreads", False, "a thread of io-threads (row 0: the main thread)"),
    ("ct", "ClientThreads", False, "a thread of a same-host client group"),
    ("hp", "Heap", True, "an entry of the client-side event heap"),
    ("wh", "Wheel", True, "an entry of the timing wheel"),
    ("ln", "Lines", False, "the delay lines (FIFO rings of events a fixed delay away)"),
    ("rg", "Rng", False, "the random streams' buffers"),
    ("pg", "Pages", False, "the copy-on-write bitmap"),
    ("rc", "Rec", False, "the recorder's arrays"),
)

LAYOUT = _layout.assemble(
    (f for owner in OWNERS for f in _layout.read_fields(owner)),
    {pre: rows for pre, _name, rows, _doc in PARTS})
"""Every declaration, checked, with its index (``layout.Layout``)."""

globals().update(LAYOUT.index)  # T, C_EV_CALL, ..., W_CPU_COMMANDS, WI_EVICTED, ...
N_F = LAYOUT.sizes["F"]
N_I = LAYOUT.sizes["I"]
N_WF = LAYOUT.sizes["wf"]
N_WI = LAYOUT.sizes["wi"]
N_CPU = LAYOUT.sizes["cpu"]  # the first N_CPU rows of rc_wf are main-thread activities

# serverCron's frequency bounds (src/server.h): `hz` is clamped to them when it
# is applied (config/schema/server.py), and dynamic-hz doubles it up to the maximum.
CONFIG_MIN_HZ = 1
CONFIG_MAX_HZ = 500

# Event-loop phases: where the kernel resumes.
PH_BEFORE_SLEEP = 0
PH_POLL = 1
PH_SCRIPT = 2  # a script past busy-reply-threshold: its slices and blocked event passes
PH_AFTER_READS = 3  # the script ended: the iteration it interrupted goes on (time events)

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
EV_CLOSED = 8  # the server's close of a connection with a request in flight reaches the client
EV_PARSED = 9  # an async I/O thread parsed a request: the main thread can run it
EV_REPLY_READ = 10  # a same-host client thread has read the reply: the request is complete
EV_TIMEOUT = 11  # a connection's client timeout timer fires (client_failures.timer)
EV_REFUSED = 12  # a connection refused at maxclients: the error reaches the client
EV_GROUP_OFF = 13  # a group with stop or surge stops sending (client_lifecycle.group_off)
EV_GROUP_ON = 14  # a surging group starts its next surge (client_lifecycle.group_on)
EV_RAMP = 15  # the next thread of a memoryless group's ramp starts (client_lifecycle.ramp_step)
EV_PHASE = 16  # a group's next phase starts (client_lifecycle.phase_step)
EV_CLI_POLL = 17  # a same-host client thread's epoll_wait returns (client_threads.poll)

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

# A replica's state as the primary sees it (Replicas.state, model/replication.py);
# from RS_BGSAVE on, the replica holds a place in the replication buffer.
RS_CONNECTING = 0  # disconnected: its PSYNC reaches the primary at Replicas.t_next
RS_WAIT_BGSAVE = 1  # SLAVE_STATE_WAIT_BGSAVE_START: a full sync waits for a fork
RS_BGSAVE = 2  # SLAVE_STATE_WAIT_BGSAVE_END: the child writes the RDB (diskless: to it)
RS_SEND_BULK = 3  # SLAVE_STATE_SEND_BULK: the primary sends the RDB file (disk-based)
RS_LOADING = 4  # the RDB is on the replica, which loads it (the primary buffers the stream)
RS_APPLYING = 5  # dual-channel: it applies the stream it buffered, reading nothing more
RS_ONLINE = 6  # SLAVE_STATE_ONLINE and streaming
RS_NAMES = ("connecting", "wait_bgsave", "bgsave", "send_bulk", "loading", "applying",
            "online")

# Columns of the per-fork records (Rec.forks) and per-pass records (Rec.passes).
FORK_FIELDS = ("time", "fork_s", "child", "rss", "pages", "cow_bytes", "end")
N_FORK_FIELDS = len(FORK_FIELDS)
MAX_FORK_REC = 4096
REPL_FIELDS = ("time", "replica", "event", "offset", "detail")  # Rec.repl, replication.py
N_REPL_FIELDS = len(REPL_FIELDS)
MAX_REPL_REC = 65536
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
EMP_MAX_POINTS = 1001  # most points in one empirical table (config/schema/distributions.py)
# A mixture: components first..last (inclusive) of the tb dmix_* tables, held as
# the distribution's low and high (model/rng.py draw; blueprint.py dist).
DIST_MIXTURE = 5

(Conns, Reqs, Pools, Groups, Tables, Keys, Collections, LazyfreeQueue, Arena, Slabs, EvPool,
 Replicas, IoThreads, ClientThreads, Heap, Wheel, Lines, Rng, Pages, Rec) = (
    namedtuple(name, [f.name for f in LAYOUT.parts[pre]]) for pre, name, _rows, _doc in PARTS)
KEY_ROW_ABSENT = {"cost": 0, "vlen": 0, "lru": 0, "expire": np.inf, "pos": 0, "xpos": -1,
                  "aval": 0, "akey": 0}
"""The row fields of a key id with no key (``cost`` 0: absent)."""

# The kernel sees one flat record: every field of the parts above, prefixed
# with the part's short name (``cn_req``, ``gp_think_mean``, ``rc_wf``, ...).
_PARTS = tuple((pre, globals()[name]) for pre, name, _rows, _doc in PARTS)
World = namedtuple("World", ["F", "I"] + [f"{pre}_{f}" for pre, nt in _PARTS for f in nt._fields]
                   + ["ready", "pw"])
"""Every array the kernel reads or writes, by name.

``ready`` is the ring of connections with unread request bytes (epoll's ready
list); ``pw`` is ``clients_pending_write``. Python code holds this namedtuple;
the kernel reaches the same arrays through a table of pointers (``model.world``).
"""

FLOAT_FIELDS = frozenset(["F"] + [f"{f.where}_{f.name}" for pre, _nt in _PARTS
                                  for f in LAYOUT.parts[pre] if f.is_float])
"""World fields holding float64; every other field holds int64."""

ROWS = {pre: tuple(f.name for f in LAYOUT.parts[pre] if not f.own_array)
        for pre, _name, rows, _doc in PARTS if rows}
"""Per-entity fields stored row by row (one row of 8-byte slots per entity), so
that the fields the kernel touches for one connection, request slot, pool or
event share cache lines. Every other field is a contiguous array."""

_STRIDE = {f"{pre}_{f}": len(fields) for pre, fields in ROWS.items() for f in fields}


def row_stride(name: str) -> int:
    """Elements between consecutive entities' values of World field ``name``."""
    return _STRIDE.get(name, 1)


CACHE_LINE = 64  # bytes


def _aligned_table(n: int, width: int) -> np.ndarray:
    """An empty ``(n, width)`` int64 table whose first row starts on a cache
    line: a 64-byte row (the key table's) then never straddles two lines, and
    a 16-byte one never does either (numpy's own large buffers start 16 bytes
    into a page)."""
    words = CACHE_LINE // 8
    buf = np.empty(n * width + words - 1, np.int64)
    skip = (-buf.ctypes.data % CACHE_LINE) // 8
    return buf[skip:skip + n * width].reshape(n, width)


def row_table(pre: str, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Part ``pre``'s ``ROWS`` fields copied into one row-major table: the columns,
    strided views of it, by field name. ``values`` holds one equal-length array
    per field; where every one is a broadcast of one value, whole rows are
    filled in one pass."""
    row = ROWS[pre]
    n = len(values[row[0]])
    table = _aligned_table(n, len(row))
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
