"""What a connection costs in ``used_memory``, and ``clientsCron``'s trimming.

Follows ``src/networking.c:createClient`` and ``src/networking.c:freeClient``;
the query buffer as ``src/networking.c:readQueryFromClient`` grows it with
``src/sds.c:sdsMakeRoomFor`` (7.x also ``src/sds.c:sdsMakeRoomForNonGreedy``,
both through ``src/sds.c:_sdsMakeRoomFor``) and ``src/server.c:clientsCron``
trims it (``src/server.c:clientsCronResizeQueryBuffer``, with
``src/sds.c:sdsRemoveFreeSpace`` and, 7.x, ``src/sds.c:sdsResize``); reply
nodes as ``src/networking.c:_addReplyProtoToList`` makes them; 7.x's
``c->buf`` as ``src/server.c:clientsCronResizeOutputBuffer`` resizes it; and
INFO's per-client figure as clientsCron updates it
(``src/server.c:clientsCronTrackClientsMemUsage`` in 6.2,
``src/server.c:updateClientMemoryUsage`` in 7.x).

Reference §1.3, §1.5, §1.7, §3.6. Per connection, from its accept (first read)
to its close, the model keeps:

- the client struct: 6.2 16 992 B with the 16 KB reply buffer inside (class
  20 480 B); 7.x 776 B (class 896 B) plus ``c->buf``, allocated separately;
- the query buffer, an sds (``query_buffer_read`` follows sdsMakeRoomFor and
  readQueryFromClient per version): ``sdsempty()`` at connect (8 B); a read
  into it allocates greedily in 6.2 (16 KB doubled to 32 KB: 40 960 B), exactly
  16 KB in 7.x (20 480 B), and 7.x then reads as much as the buffer has room
  for, growing greedily only when less than 16 KB is free; a big argument
  (≥ 32 KB) gets room for all of it; the allocation stays after its bytes are
  consumed;
- the reply list: replies beyond ``c->buf`` go to 16 KB nodes (20 480 B each,
  20 464 usable), freed as they are written;
- 7.x ``c->buf``: 16 KB at connect, resized by ``clientsCron`` (down to 1 KB
  when its peak fill over ~5 s stays under half, up by doubling when full);
  the peak starts full, so the first visit never shrinks it.

``clientsCron`` visits ``numclients / hz`` clients per call (at least 5),
round-robin, so each about once per second:

- 6.2 trims a query buffer over 32 KB to its content when ``alloc / (peak+1) > 2``
  or the client has been idle > 2 s (and > 4 KB would be freed); the peak is
  the buffer's length *before* each read, so a client sending small commands
  is trimmed at every visit and re-grows 40 KB at its next read;
- 7.x trims it only when idle > 2 s, or when its room is over 32 KB and twice
  its peak (then to the peak or the current bulk, whichever is larger);
- idle time is whole seconds of ``server.unixtime`` (``idletime > 2``);
- INFO's ``mem_clients_normal`` takes each client's memory at its visit (it
  lags); ``used_memory`` always has the true value.

Deviations: the reply list of many small replies is exact; a single reply
larger than a node gets a node of its own rounded to 20 480-B steps instead of
its jemalloc class (≤ 12 % low). argv arrays (freed after each command) are
not counted.
"""

from __future__ import annotations

from redsim.model.jemalloc import size_class
from redsim.model.jit import hot_leaf, leaf
from redsim.model.protocol import PROTO_IOBUF_LEN, PROTO_MBULK_BIG_ARG
from redsim.model.state import (
    CE_ENTERED,
    CE_LIMIT,
    CLIENT_STRUCT,
    MEM_CLIENTS,
    MEM_CLIENTS_INFO,
    Q16,
    REDIS_62,
    REDIS_72,
    T,
)
from redsim.observe import metrics as M

CLIENT_MEM_USAGE_BUCKET_MIN_LOG = 15  # src/server.h: the first bucket holds up to 32 KB
CLIENT_MEM_USAGE_BUCKET_MAX_LOG = 33  # the last, over 4 GB: 19 buckets

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "CLIENT_STRUCT", "i8", "B", "config",
     "one client struct's allocation (sizeof(client) at its jemalloc class; 6.2's holds c->buf), "
     "B"),
    ("I", "MEM_CLIENTS", "i8", "B", "state",
     "memory held by all normal clients now (sum of cn mem), in used_memory, B"),
    ("I", "MEM_CLIENTS_INFO", "i8", "B", "state",
     "INFO mem_clients_normal: the clients' memory as of their last clientsCron visit, B"),
    ("I", "CE_ENTERED", "i8", "-", "state",
     "client eviction: clients that have moved to another memory bucket since start"),
    ("cn", "ce_bucket", "i8[]", "-", "state",
     "client eviction: its memory bucket (0: <= 32 KB, ..., 18: > 4 GB; c->mem_usage_bucket)"),
    ("cn", "ce_entered", "i8[]", "-", "state",
     "client eviction: CE_ENTERED when it entered that bucket (its place in the bucket's list)"),
    ("wi", "WI_MEM_CLIENTS", "i8", "B", "gauge",
     "memory held by normal clients (MEM_CLIENTS) at the window's end, B"),
    ("wi", "WI_MEM_CLIENTS_INFO", "i8", "B", "gauge",
     "INFO mem_clients_normal (MEM_CLIENTS_INFO) at the window's end, B"),
    ("cn", "qb_alloc", "i8", "B", "state",
     "the query buffer's allocation (sdsAllocSize, its jemalloc class); 0 = no client"),
    ("cn", "qb_peak", "i8", "B", "state",
     "c->querybuf_peak: the query buffer's peak length since the last clientsCron visit"),
    ("cn", "qb_room", "i8", "B", "state", "the query buffer's sdsalloc: bytes it has room for"),
    ("cn", "qb_hdr", "i8", "B", "state",
     "the query buffer's sds header bytes (3, 5 or 9: its sds type)"),
    ("cn", "t_read", "f8", "s", "state", "last read (lastinteraction), s"),
    ("cn", "buf_usable", "i8", "B", "state",
     "7.x c->buf_usable_size: the reply buffer's usable bytes"),
    ("cn", "buf_peak", "i8", "B", "state",
     "7.x c->buf_peak: the reply buffer's peak fill since its last reset"),
    ("cn", "t_buf_reset", "f8", "s", "state",
     "7.x c->buf_peak_last_reset_time: when buf_peak was last reset, s"),
    ("cn", "mem", "i8", "B", "state",
     "everything the client holds now; 0 = no client (not accepted)"),
    ("cn", "mem_info", "i8", "B", "state",
     "what INFO last counted for it (at its clientsCron visit)"),
)


RESULTS = (
    M.Column(330, "mem_clients_normal", "B", "INFO mem_clients_normal (as INFO reports it: "
             "it lags)", M.gauge("WI_MEM_CLIENTS_INFO")),
    M.Column(340, "mem_clients_true", "B", "what used_memory holds for clients now",
             M.gauge("WI_MEM_CLIENTS")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

PROTO_REPLY_CHUNK_BYTES = 16384  # the initial c->buf, and the least a reply node holds
PROTO_REPLY_MIN_BYTES = 1024  # the smallest 7.x c->buf
REPLY_NODE_ALLOC = 20480  # a 16 KB node + 16 B header, as jemalloc sizes it
REPLY_NODE_USABLE = 20464  # what a 16 KB node holds: the class minus its 16-B header
QUERYBUF_SLACK = 4096  # clientsCron trims only when it frees more than 4 KB
IDLE_TRIM_S = 2.0  # a client idle this long has its query buffer trimmed
BUF_PEAK_RESET_S = 5.0  # REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME


SDS_MAX_PREALLOC = 1024 * 1024  # greedy growth doubles below this, then adds it (sds.h)


@leaf
def sds_alloc(w, length, greedy):
    """Allocation of an sds made for ``length`` bytes (header by its type, the
    room doubled when ``greedy``); used where a buffer is made from nothing."""
    if length <= 0:
        return 8  # an empty sds: header + NUL
    if greedy and length < SDS_MAX_PREALLOC:
        length *= 2
    hdr = 3 if length < 256 else (5 if length < 65536 else 9)
    return size_class(hdr + length + 1, w.I[Q16])


@leaf
def sds_type_hdr(newlen):
    """Header bytes of the sds type ``sdsReqType`` picks for ``newlen`` bytes, with
    type 5 raised to type 8 as ``sdsMakeRoomFor`` and a re-growing resize do."""
    if newlen < 256:
        return 3
    if newlen < 65536:
        return 5
    return 9


@leaf
def sds_type_max(hdr):
    """Largest alloc an sds type records (``sdsTypeMaxSize``)."""
    if hdr == 3:
        return 255
    if hdr == 5:
        return 65535
    return 1 << 62


@leaf
def qb_set(w, c, hdr, room, alloc):
    """The query buffer becomes a ``hdr``-byte-header sds with room for ``room``
    bytes in a jemalloc allocation of ``alloc`` bytes."""
    w.cn_qb_hdr[c] = hdr
    w.cn_qb_room[c] = room
    if alloc != w.cn_qb_alloc[c]:
        w.cn_qb_alloc[c] = alloc
        update(w, c)


@hot_leaf
def make_room_for(w, c, length, addlen, greedy):
    """``_sdsMakeRoomFor(querybuf, addlen, greedy)`` with ``length`` bytes in it.

    Nothing happens when the buffer already has room for ``addlen`` more
    (sdsavail ≥ addlen). Otherwise the new length is doubled below 1 MB when
    greedy, the type follows it, and the sds gets all the allocation jemalloc
    gives (``s_malloc_usable``): its room is the class less header and NUL,
    capped at what the type can record.
    """
    if w.cn_qb_room[c] - length >= addlen:
        return
    newlen = length + addlen
    if greedy:
        newlen = newlen * 2 if newlen < SDS_MAX_PREALLOC else newlen + SDS_MAX_PREALLOC
    hdr = sds_type_hdr(newlen)
    alloc = size_class(hdr + newlen + 1, w.I[Q16])
    qb_set(w, c, hdr, min(alloc - hdr - 1, sds_type_max(hdr)), alloc)


@leaf
def sds_resize(w, c, size):
    """``sdsResize(querybuf, size, would_regrow=1)`` (``sdsRemoveFreeSpace`` is a
    resize to the length): a realloc that keeps the old header when the type is
    the same, or smaller but above type 8; its room is exactly ``size``."""
    if w.cn_qb_room[c] == size:
        return
    old = w.cn_qb_hdr[c]
    hdr = sds_type_hdr(size)
    if old == hdr or (hdr < old and hdr > 3):
        hdr = old
    qb_set(w, c, hdr, size, size_class(hdr + size + 1, w.I[Q16]))


@leaf
def list_alloc(w, c, pending):
    """Bytes of reply nodes holding what ``c->buf`` cannot of ``pending`` reply bytes."""
    excess = pending - reply_buf(w, c)
    if excess <= 0:
        return 0
    return ((excess + REPLY_NODE_USABLE - 1) // REPLY_NODE_USABLE) * REPLY_NODE_ALLOC


@leaf
def reply_buf(w, c):
    """Usable bytes of the connection's ``c->buf``."""
    if w.I[REDIS_62]:
        return PROTO_REPLY_CHUNK_BYTES
    return w.cn_buf_usable[c]


@leaf
def update(w, c):
    """Recompute connection c's memory and fold the change into the ledger."""
    I = w.I
    total = I[CLIENT_STRUCT] + w.cn_qb_alloc[c] + list_alloc(w, c, w.cn_reply_bytes[c])
    if not I[REDIS_62]:
        total += w.cn_buf_usable[c]
    I[MEM_CLIENTS] += total - w.cn_mem[c]
    w.cn_mem[c] = total
    if I[CE_LIMIT] > 0:  # updateClientMemUsageAndBucket: client eviction is on
        bucket = mem_bucket(total)
        if bucket != w.cn_ce_bucket[c]:
            w.cn_ce_bucket[c] = bucket
            I[CE_ENTERED] += 1
            w.cn_ce_entered[c] = I[CE_ENTERED]


@leaf
def mem_bucket(mem):
    """``getMemUsageBucket``: a client's bucket by the bit length of its memory,
    0 (≤ 32 KB) to 18 (> 4 GB)."""
    bits = 0
    while bits < 63 and (mem >> bits) > 0:
        bits += 1
    return min(max(bits, CLIENT_MEM_USAGE_BUCKET_MIN_LOG), CLIENT_MEM_USAGE_BUCKET_MAX_LOG) \
        - CLIENT_MEM_USAGE_BUCKET_MIN_LOG


@leaf
def create_client(w, c):
    """``createClient`` at accept: the struct and (7.x) a 16 KB ``c->buf``."""
    w.cn_qb_alloc[c] = size_class(4, w.I[Q16])  # sdsempty(): an 8-type header, no room
    w.cn_qb_room[c] = 0
    w.cn_qb_hdr[c] = 3
    w.cn_qb_peak[c] = 0
    w.cn_buf_usable[c] = PROTO_REPLY_CHUNK_BYTES
    # createClient sets buf_peak to the whole buffer, and its last reset to
    # server.unixtime — seconds, where clientsCronResizeOutputBuffer compares
    # milliseconds — so the first clientsCron visit keeps the 16 KB and resets
    # the peak, and the buffer shrinks at the second visit (seen on 7.0.15:
    # 768 + 16 384 + 20 480 B per client after one visit, 22 272 B after two).
    w.cn_buf_peak[c] = PROTO_REPLY_CHUNK_BYTES
    w.cn_t_buf_reset[c] = -1e300
    w.cn_mem[c] = 0
    w.cn_mem_info[c] = 0
    update(w, c)


@leaf
def free_client(w, c):
    """``freeClient``: everything the connection held goes back."""
    I = w.I
    I[MEM_CLIENTS] -= w.cn_mem[c]
    I[MEM_CLIENTS_INFO] -= w.cn_mem_info[c]
    w.cn_mem[c] = 0
    w.cn_mem_info[c] = 0
    w.cn_qb_alloc[c] = 0
    w.cn_qb_room[c] = 0
    w.cn_qb_hdr[c] = 0


@hot_leaf
def query_buffer_read(w, c, buffered, big_remaining, big_len):
    """``readQueryFromClient`` up to the ``read()``: the query buffer made ready
    and the number of bytes asked for, with ``buffered`` bytes of an unfinished
    command already in it. ``big_len`` > 0 inside a big bulk argument of that
    many bytes (with its CRLF), of which ``big_remaining`` are still to come.

    6.2: ask for 16 KB (inside a big argument, what is left of it if less);
    greedy ``sdsMakeRoomFor`` for that; the peak is the length before the read.
    7.x (PR #9003): inside a big argument, ask for exactly what is left
    (non-greedy); with less than 16 KB of room, ask for 16 KB (non-greedy:
    the first read of a connection allocates 20 480 B); otherwise greedy
    ``sdsMakeRoomFor(16 KB)`` — nothing at all when the buffer has 16 KB free —
    and ask for all the room there is (``sdsavail``), so a request a little over
    16 KB arrives in one read into a buffer already allocated. 7.2 also lifts
    the peak to what a non-greedy read asked for; 7.0 does not.
    Inside a big argument the parser has already made room for all of it
    (``processMultibulkBuffer``'s hint: greedy in 6.2, exact in 7.x).
    """
    I = w.I
    if I[REDIS_62]:
        if buffered > w.cn_qb_peak[c]:
            w.cn_qb_peak[c] = buffered  # 6.2: the length before the read
        readlen = PROTO_IOBUF_LEN
        if big_len > 0:
            make_room_for(w, c, 0, big_len, True)
            if big_remaining < readlen:
                readlen = big_remaining
        make_room_for(w, c, buffered, readlen, True)
    elif big_len > 0:
        make_room_for(w, c, 0, big_len, False)
        readlen = big_remaining
        if I[REDIS_72] and buffered + readlen > w.cn_qb_peak[c]:
            w.cn_qb_peak[c] = buffered + readlen
    elif w.cn_qb_room[c] < PROTO_IOBUF_LEN:
        readlen = PROTO_IOBUF_LEN
        make_room_for(w, c, buffered, readlen, False)
        if I[REDIS_72] and buffered + readlen > w.cn_qb_peak[c]:
            w.cn_qb_peak[c] = buffered + readlen
    else:
        make_room_for(w, c, buffered, PROTO_IOBUF_LEN, True)
        readlen = w.cn_qb_room[c] - buffered
    w.cn_t_read[c] = w.F[T]
    return readlen


@leaf
def query_buffer_filled(w, c, length):
    """After the read: 7.x sets the peak from the buffer's new length."""
    if not w.I[REDIS_62] and length > w.cn_qb_peak[c]:
        w.cn_qb_peak[c] = length


@leaf
def reply_added(w, c):
    """After commands queued replies: track the 7.x ``c->buf`` peak fill."""
    if not w.I[REDIS_62]:
        fill = min(w.cn_reply_bytes[c], w.cn_buf_usable[c])
        if fill > w.cn_buf_peak[c]:
            w.cn_buf_peak[c] = fill


@hot_leaf
def resize_query_buffer(w, c, buffered, bulklen):
    """``clientsCronResizeQueryBuffer`` for one client with ``buffered`` bytes of an
    unfinished command, inside a bulk argument of ``bulklen`` bytes (-1: none).

    Idle time is whole seconds of ``server.unixtime`` since the last read
    (``idletime > 2``: at least 3 ticks of the seconds clock). 6.2 compares the
    allocation (``sdsAllocSize``), 7.x the room (``sdsalloc``); 7.2 counts the
    bulk's CRLF where 7.0 does not.
    """
    I = w.I
    if w.cn_qb_alloc[c] == 0:
        return
    idle = int(w.F[T]) - int(w.cn_t_read[c])
    avail = w.cn_qb_room[c] - buffered
    if I[REDIS_62]:
        alloc = w.cn_qb_alloc[c]
        if (alloc > PROTO_MBULK_BIG_ARG and (alloc // (w.cn_qb_peak[c] + 1) > 2 or idle > 2)
                and avail > QUERYBUF_SLACK):
            sds_resize(w, c, buffered)
        w.cn_qb_peak[c] = 0
        return
    crlf = 2 if I[REDIS_72] else 0
    if avail > QUERYBUF_SLACK:
        room = w.cn_qb_room[c]
        if idle > 2:
            sds_resize(w, c, buffered)
        elif room > PROTO_MBULK_BIG_ARG and room // 2 > w.cn_qb_peak[c]:
            size = max(buffered, w.cn_qb_peak[c])
            if bulklen >= 0 and size < bulklen + crlf:
                size = bulklen + crlf
            sds_resize(w, c, size)
    w.cn_qb_peak[c] = buffered
    if bulklen >= 0 and bulklen + crlf > buffered:
        w.cn_qb_peak[c] = bulklen + crlf


@leaf
def current_bulk(w, c):
    """Length of the bulk argument Redis's parser is inside (``c->bulklen``), or
    -1: with part of a command read, the value it carries, when it has one (the
    value is the command's long argument; its ``$<len>`` line comes first)."""
    if w.cn_partial[c] > 0 and w.cn_next_cmd[c] >= 0 and w.cn_next_value[c] > 0:
        return w.cn_next_value[c]
    return -1


@leaf
def resize_output_buffer(w, c):
    """``clientsCronResizeOutputBuffer`` (7.x) for one client."""
    usable = w.cn_buf_usable[c]
    peak = w.cn_buf_peak[c]
    new = 0
    if usable // 2 >= PROTO_REPLY_MIN_BYTES and peak < usable // 2:
        new = max(PROTO_REPLY_MIN_BYTES, peak + 1)
    elif usable < PROTO_REPLY_CHUNK_BYTES and peak == usable:
        new = min(PROTO_REPLY_CHUNK_BYTES, usable * 2)
    if new > 0:
        w.cn_buf_usable[c] = size_class(new, w.I[Q16])
    if w.F[T] - w.cn_t_buf_reset[c] >= BUF_PEAK_RESET_S:
        w.cn_buf_peak[c] = min(w.cn_reply_bytes[c], w.cn_buf_usable[c])
        w.cn_t_buf_reset[c] = w.F[T]


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """The ``client`` struct's allocation for the version (``memory.CLIENT_STRUCT_BYTES``),
    and each connection's buffers and memory, zeroed (out of any client-eviction
    bucket)."""
    import numpy as np

    from redsim.model.memory import CLIENT_STRUCT_BYTES

    b.I[CLIENT_STRUCT] = CLIENT_STRUCT_BYTES[b.scenario.redis_version]
    C = b.size.conns
    b.fill("cn",
           ce_bucket=np.full(C, -1, np.int64), ce_entered=np.zeros(C, np.int64),
           qb_alloc=np.zeros(C, np.int64), qb_peak=np.zeros(C, np.int64), t_read=np.zeros(C),
           qb_room=np.zeros(C, np.int64), qb_hdr=np.zeros(C, np.int64),
           buf_usable=np.zeros(C, np.int64), buf_peak=np.zeros(C, np.int64),
           t_buf_reset=np.zeros(C), mem=np.zeros(C, np.int64), mem_info=np.zeros(C, np.int64))
