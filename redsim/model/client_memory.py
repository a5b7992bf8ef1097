"""What a connection costs in ``used_memory``, and ``clientsCron``'s trimming.

Reference §1.3, §1.5, §1.7, §3.6. Per connection, from its accept (first read)
to its close, the model keeps:

- the client struct: 6.2 16 992 B with the 16 KB reply buffer inside (class
  20 480 B); 7.x 776 B (class 896 B) plus ``c->buf``, allocated separately;
- the query buffer: after a read into an empty buffer, 6.2 allocates
  greedily (16 KB doubled to 32 KB: 40 960 B), 7.x exactly 16 KB (20 480 B); a
  big argument (≥ 32 KB) gets a buffer of its own size; the allocation stays
  after its bytes are consumed;
- the reply list: replies beyond ``c->buf`` go to 16 KB nodes (20 480 B each,
  20 464 usable), freed as they are written;
- 7.x ``c->buf``: 16 KB at connect, resized by ``clientsCron`` (down to 1 KB
  when its peak fill over ~5 s stays under half, up by doubling when full).

``clientsCron`` visits ``numclients / hz`` clients per call (at least 5),
round-robin, so each about once per second:

- 6.2 trims a query buffer over 32 KB to its content when ``alloc / (peak+1) > 2``
  or the client has been idle > 2 s (and > 4 KB would be freed); the peak is
  the buffer's length *before* each read, so a client sending small commands
  is trimmed at every visit and re-grows 40 KB at its next read;
- 7.x trims it only when idle > 2 s, or when over 32 KB and twice its peak;
- INFO's ``mem_clients_normal`` takes each client's memory at its visit (it
  lags); ``used_memory`` always has the true value.

Deviations: the reply list of many small replies is exact; a single reply
larger than a node gets a node of its own rounded to 20 480-B steps instead of
its jemalloc class (≤ 12 % low). argv arrays (freed after each command) are
not counted.
"""

from __future__ import annotations

from redsim.model.jemalloc import size_class
from redsim.model.jit import leaf, step
from redsim.model.protocol import PROTO_IOBUF_LEN, PROTO_MBULK_BIG_ARG
from redsim.model.state import (
    CC_CURSOR,
    CLIENT_STRUCT,
    MEM_CLIENTS,
    MEM_CLIENTS_INFO,
    N_CONNS,
    Q16,
    REDIS_62,
    T,
)

PROTO_REPLY_CHUNK_BYTES = 16384  # the initial c->buf, and the least a reply node holds
PROTO_REPLY_MIN_BYTES = 1024  # the smallest 7.x c->buf
REPLY_NODE_ALLOC = 20480  # a 16 KB node + 16 B header, as jemalloc sizes it
REPLY_NODE_USABLE = 20464  # what a 16 KB node holds: the class minus its 16-B header
QUERYBUF_SLACK = 4096  # clientsCron trims only when it frees more than 4 KB
IDLE_TRIM_S = 2.0  # a client idle this long has its query buffer trimmed
BUF_PEAK_RESET_S = 5.0  # REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME


@leaf
def sds_alloc(w, length, greedy):
    """Allocation of a query-buffer sds holding ``length`` bytes (sdsMakeRoomFor)."""
    if length <= 0:
        return 8  # an empty sds: header + NUL
    if greedy and length < 1024 * 1024:
        length *= 2
    hdr = 3 if length < 256 else (5 if length < 65536 else 9)
    return size_class(hdr + length + 1, w.I[Q16])


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


@leaf
def create_client(w, c):
    """``createClient`` at accept: the struct and (7.x) a 16 KB ``c->buf``."""
    w.cn_qb_alloc[c] = 0
    w.cn_qb_peak[c] = 0
    w.cn_buf_usable[c] = PROTO_REPLY_CHUNK_BYTES
    w.cn_buf_peak[c] = 0
    w.cn_t_buf_reset[c] = w.F[T]
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


@leaf
def query_buffer_read(w, c, buffered, readlen, big_len):
    """The query buffer for one read that asks for ``readlen`` bytes, with
    ``buffered`` bytes of an unfinished command already in it; ``big_len`` > 0 when
    the read is inside a big argument of that many bytes (its own exact buffer)."""
    I = w.I
    if big_len > 0:
        need = sds_alloc(w, big_len, False)
        if buffered + readlen > w.cn_qb_peak[c]:
            w.cn_qb_peak[c] = buffered + readlen
    elif I[REDIS_62]:
        if buffered > w.cn_qb_peak[c]:
            w.cn_qb_peak[c] = buffered  # 6.2: the length before the read
        need = sds_alloc(w, buffered + readlen, True)
    else:
        if buffered + readlen > w.cn_qb_peak[c]:
            w.cn_qb_peak[c] = buffered + readlen
        need = sds_alloc(w, buffered + readlen, buffered + readlen > PROTO_IOBUF_LEN
                         and readlen < PROTO_MBULK_BIG_ARG)
    if need > w.cn_qb_alloc[c]:
        w.cn_qb_alloc[c] = need
        update(w, c)
    w.cn_t_read[c] = w.F[T]


@leaf
def reply_added(w, c):
    """After commands queued replies: track the 7.x ``c->buf`` peak fill."""
    if not w.I[REDIS_62]:
        fill = min(w.cn_reply_bytes[c], w.cn_buf_usable[c])
        if fill > w.cn_buf_peak[c]:
            w.cn_buf_peak[c] = fill


@leaf
def resize_query_buffer(w, c, buffered):
    """``clientsCronResizeQueryBuffer`` for one client."""
    I = w.I
    alloc = w.cn_qb_alloc[c]
    if alloc == 0:
        return
    idle = w.F[T] - w.cn_t_read[c]
    avail = alloc - buffered
    if I[REDIS_62]:
        if (alloc > PROTO_MBULK_BIG_ARG and (alloc // (w.cn_qb_peak[c] + 1) > 2
                                            or idle > IDLE_TRIM_S) and avail > QUERYBUF_SLACK):
            w.cn_qb_alloc[c] = sds_alloc(w, buffered, False)
        w.cn_qb_peak[c] = 0
        return
    if avail > QUERYBUF_SLACK:
        if idle > IDLE_TRIM_S:
            w.cn_qb_alloc[c] = sds_alloc(w, buffered, False)
        elif alloc > PROTO_MBULK_BIG_ARG and alloc // 2 > w.cn_qb_peak[c]:
            w.cn_qb_alloc[c] = sds_alloc(w, max(buffered, w.cn_qb_peak[c]), False)
    w.cn_qb_peak[c] = buffered


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


@step
def clients_cron(w, visits):
    """Visit ``visits`` connected clients round-robin: trim buffers, report memory."""
    I = w.I
    n = I[N_CONNS]
    c = I[CC_CURSOR]
    done = 0
    for _ in range(n):
        if done == visits:
            break
        c += 1
        if c >= n:
            c = 0
        if w.cn_mem[c] == 0:  # not connected (or not yet accepted)
            continue
        done += 1
        resize_query_buffer(w, c, w.cn_partial[c])
        if not I[REDIS_62]:
            resize_output_buffer(w, c)
        update(w, c)
        I[MEM_CLIENTS_INFO] += w.cn_mem[c] - w.cn_mem_info[c]
        w.cn_mem_info[c] = w.cn_mem[c]
    I[CC_CURSOR] = c
