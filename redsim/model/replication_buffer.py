"""The replication stream and the buffer that holds it: ``master_repl_offset``,
the backlog, and the memory both take.

Follows ``src/replication.c:feedReplicationBuffer`` (7.x: one shared list of
blocks, PR #9166), ``src/replication.c:incrementalTrimReplicationBacklog``,
``src/replication.c:addReplyReplicationBacklog``'s window
(``masterTryPartialResynchronization``), ``src/networking.c:
getClientOutputBufferMemoryUsage`` for a replica, and
``src/evict.c:freeMemoryGetNotCountedMemory`` (reference §2.2, §3.7); 6.2's
circular backlog (``feedReplicationBacklog``) and per-replica copies.

**The stream.** Every write a command propagates, and the ``DEL`` of an
eviction or an expiry, adds its RESP bytes to ``master_repl_offset``
(``REPL_OFFSET``) while a backlog exists (``propagate.py``). Offsets count
bytes from the server's start; byte ``o`` (1-based) is the o-th byte fed.

**7.x: one shared buffer.** The stream is stored in blocks of 16 KB asked
for (``PROTO_REPLY_CHUNK_BYTES``) plus a 40-byte header, which jemalloc
rounds to 20 480 B: 20 440 B of payload each (``REPL_BLOCK_7``), filled to
the last byte, a command split across two blocks when it does not fit. The
backlog and every replica point into the list; a block is freed when the
oldest of them has moved past it. The backlog lets go of its first block
only when no replica still points at it and it would keep more than
``repl-backlog-size`` without it (``incrementalTrimReplicationBacklog``), so
its history is ``repl-backlog-size`` plus up to one block, and more while a
slow replica holds older blocks. ``mem_total_replication_buffers`` counts
each block's 20 480 B and its 24-B list node (``REPL_BLOCK_MEM`` = 20 504 B).
A replica's output-buffer usage, which ``client-output-buffer-limit``
compares, is every block from the one it is sending to the tail, each at its
payload plus 64 B of header and node: 20 504 B per block again.

**6.2: copies.** The backlog is one allocation of ``repl-backlog-size``, a
ring holding the last ``repl-backlog-size`` bytes exactly; each replica's
pending stream is its own reply list of 16 KB nodes (20 464 B of payload,
usage 20 504 B each).

**Eviction** does not count what replicas hold beyond the backlog:
7.x excludes ``repl_buffer_mem`` above ``repl-backlog-size`` + 64 B per
16 KB of it (the block headers); 6.2 excludes each replica's output buffer.
A backlog is counted in full, as Redis counts it.

Deviations: the blocks of 7.0.8+ (PR #11666) for a single command larger
than 16 KB (a block of its size, up to ``repl-backlog-size``/16) are not
modelled: every block is 20 440 B, which changes a buffer holding big values
by less than one block per value. 6.2's per-replica copies are counted from
the replicas' positions at each call; zmalloc counts a list node at its
32-B class where ``repl_buffer_mem`` says 24 B (8 B a block, 0.04 %).
"""

from __future__ import annotations

from redsim.model.arena import PAGE, hold_extents
from redsim.model.jit import leaf
from redsim.model.state import (
    AL_LARGE_PAD,
    REDIS_62,
    REPL_BACKLOG,
    REPL_BASE,
    REPL_BL_BLOCK,
    REPL_BL_SIZE,
    REPL_BUF_EXTENTS,
    REPL_BUF_PAGES,
    REPL_N,
    REPL_OFFSET,
    RS_BGSAVE,
)
from redsim.observe import metrics as M

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "REPL_BACKLOG", "i8", "-", "state",
     "1 while server.repl_backlog exists (created by the first replica's sync; "
     "freed after repl-backlog-ttl without replicas): writes are fed to the stream"),
    ("I", "REPL_OFFSET", "i8", "B", "state",
     "server.master_repl_offset: bytes of stream fed since the server started, B"),
    ("I", "REPL_BASE", "i8", "B", "state",
     "master_repl_offset when the backlog was created: block 0 starts after it, B"),
    ("I", "REPL_BL_BLOCK", "i8", "-", "state",
     "7.x: the backlog's first block (the buffer's oldest; blocks count from REPL_BASE)"),
    ("I", "REPL_BL_SIZE", "i8", "B", "config", "repl-backlog-size, B"),
    ("I", "REPL_BUF_EXTENTS", "i8", "-", "state",
     "large extents the buffer's blocks (6.2: the backlog and the replicas' nodes) "
     "held in the arena at its last placement (place_in_arena)"),
    ("I", "REPL_BUF_PAGES", "i8", "-", "state", "4-KB pages those extents held"),
)


RESULTS = (
    M.Metric("master_repl_offset_end", "B", M.SUM, "INFO master_repl_offset at the end",
             value=M.counter("REPL_OFFSET")),
)
"""The summary keys this module's figures make (``observe/metrics.py``)."""

REPL_BLOCK_7 = 20_440
"""7.x: a replication buffer block's payload, B: ``zmalloc_usable`` of 16 KB +
the 40-B ``replBufBlock`` header is 20 480, less the header."""
REPL_BLOCK_62 = 20_464
"""6.2: a replica's reply-list node's payload, B (20 480 less a 16-B header)."""
REPL_BLOCK_MEM = 20_504
"""Memory per block or node, B: 7.x 20 480 + a 24-B list node
(``repl_buffer_mem``); usage per block, payload + 64 B (7.x) or + 40 B (6.2)."""
BLOCK_OVERHEAD = 64
"""``sizeof(replBufBlock) + sizeof(listNode)``: freeMemoryGetNotCountedMemory's
allowance per 16 KB of backlog, B."""
PROTO_REPLY_CHUNK_BYTES = 16_384
BLOCK_PAGES = 5
"""4-KB pages of a block's or node's 20 480-B large size class."""


@leaf
def feed(w, nbytes):
    """``feedReplicationBuffer``: ``nbytes`` of RESP join the stream, if a
    backlog exists (``replicationFeedSlaves`` returns early otherwise)."""
    if w.I[REPL_BACKLOG]:
        w.I[REPL_OFFSET] += nbytes


@leaf
def block_of(w, o):
    """7.x: the block holding stream byte ``o`` (1-based; o > REPL_BASE)."""
    return (o - w.I[REPL_BASE] - 1) // REPL_BLOCK_7


@leaf
def stream_writes(w, sent, n):
    """The ``connWrite`` calls ``writeToClient`` makes to hand a replica the
    stream's bytes ``sent + 1 .. sent + n`` (n > 0): ``_writeToClient`` writes
    one buffer block per call (7.x, networking.c: ``o->used − ref_block_pos``,
    then the next block) or one reply-list node (6.2), and loops with no
    ``NET_MAX_WRITES_PER_EVENT`` cap for a replica; if the socket filled before
    the stream's end, the loop's last write got EAGAIN, one call more.
    6.2 approximated: the replica's node boundaries are not kept, so its calls
    are ``ceil(n / 20 464)`` (and its 16-KB ``c->buf``, used before the list,
    is taken as a node)."""
    I = w.I
    if I[REDIS_62]:
        calls = (n + REPL_BLOCK_62 - 1) // REPL_BLOCK_62
    else:
        calls = block_of(w, sent + n) - block_of(w, sent + 1) + 1
    if sent + n < I[REPL_OFFSET]:
        calls += 1
    return calls


@leaf
def tail_block(w):
    """7.x: the last block of the buffer; -1 while nothing has been fed."""
    I = w.I
    if I[REPL_OFFSET] <= I[REPL_BASE]:
        return -1
    return block_of(w, I[REPL_OFFSET])


@leaf
def backlog_window(w):
    """(first offset, histlen): the bytes a partial resync can be served from
    (``repl_backlog->offset``, ``->histlen``); a PSYNC for offset p succeeds when
    first ≤ p ≤ first + histlen (= master_repl_offset + 1)."""
    I = w.I
    off = I[REPL_OFFSET]
    if I[REDIS_62]:
        hist = min(off - I[REPL_BASE], I[REPL_BL_SIZE])
    elif off <= I[REPL_BASE]:
        hist = 0
    else:
        hist = off - I[REPL_BASE] - I[REPL_BL_BLOCK] * REPL_BLOCK_7
    return off - hist + 1, hist


@leaf
def pending_usage(w, sent):
    """A replica's output-buffer usage (``getClientOutputBufferMemoryUsage``)
    when it has handed the socket the stream up to offset ``sent``, B."""
    I = w.I
    off = I[REPL_OFFSET]
    if I[REDIS_62]:
        return (off - sent + REPL_BLOCK_62 - 1) // REPL_BLOCK_62 * REPL_BLOCK_MEM
    tail = tail_block(w)
    if tail < 0:
        return 0
    ref = block_of(w, sent + 1) if sent < off else tail
    return (tail - ref + 1) * REPL_BLOCK_MEM


@leaf
def replication_memory(w):
    """``mem_total_replication_buffers`` (7.x: the shared buffer's blocks; 6.2:
    the backlog's allocation and each replica's copy), B. 0 without a backlog."""
    I = w.I
    if not I[REPL_BACKLOG]:
        return 0
    if I[REDIS_62]:
        total = I[REPL_BL_SIZE]
        for r in range(I[REPL_N]):
            if w.rp_state[r] >= RS_BGSAVE:
                total += pending_usage(w, w.rp_sent[r])
        return total
    tail = tail_block(w)
    if tail < 0:
        return 0
    return (tail - I[REPL_BL_BLOCK] + 1) * REPL_BLOCK_MEM


@leaf
def arena_extents(w):
    """(extents, pages) the buffer's allocations take in jemalloc: 7.x's blocks,
    6.2's backlog (one allocation of ``repl-backlog-size``) and every replica's
    reply nodes, each a large extent of its 20 480 B (5 pages; the backlog its
    size in pages) plus the build's cache-oblivious pad. The pad is resident:
    a block is written to its last byte from a random cache line of its first
    page, so it reaches into the pad page (live 7.0.15: a stalled replica's
    231 MB buffer added 45.7 MB of RSS, +20 %). The 24-B list nodes are left out."""
    I = w.I
    if not I[REPL_BACKLOG]:
        return 0, 0
    pad = I[AL_LARGE_PAD]
    if I[REDIS_62]:
        extents = 1
        pages = (I[REPL_BL_SIZE] + PAGE - 1) // PAGE + pad
        for r in range(I[REPL_N]):
            if w.rp_state[r] >= RS_BGSAVE:
                n = pending_usage(w, w.rp_sent[r]) // REPL_BLOCK_MEM
                extents += n
                pages += n * (BLOCK_PAGES + pad)
        return extents, pages
    tail = tail_block(w)
    if tail < 0:
        return 0, 0
    n = tail - I[REPL_BL_BLOCK] + 1
    return n, n * (BLOCK_PAGES + pad)


@leaf
def place_in_arena(w):
    """Bring the arena's pages up to the buffer's blocks (serverCron, each tick,
    before jemalloc's decay): blocks made since take dirty pages first, blocks
    freed since (``incrementalTrimReplicationBacklog``) turn dirty and leave
    RSS as the decay purges them, over ``dirty_decay_ms``. Redis places and
    frees each block as it goes; here they are counted once per cron tick."""
    I = w.I
    extents, pages = arena_extents(w)
    hold_extents(w, extents, pages, I[REPL_BUF_EXTENTS], I[REPL_BUF_PAGES])
    I[REPL_BUF_EXTENTS] = extents
    I[REPL_BUF_PAGES] = pages


@leaf
def not_counted(w):
    """The replication part of ``freeMemoryGetNotCountedMemory``, B."""
    I = w.I
    if not I[REPL_BACKLOG]:
        return 0
    if I[REDIS_62]:
        return replication_memory(w) - I[REPL_BL_SIZE]
    mem = replication_memory(w)
    counted = I[REPL_BL_SIZE] + (I[REPL_BL_SIZE] // PROTO_REPLY_CHUNK_BYTES + 1) * BLOCK_OVERHEAD
    return mem - counted if mem > counted else 0


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """``repl-backlog-size``, and the backlog itself when replicas synced
    before the run (a ``replicas`` entry with ``start: online``)."""
    sc = b.scenario
    b.I[REPL_BL_SIZE] = sc.server.repl_backlog_size
    if any(rep.start == "online" for rep in sc.replicas if rep.count):
        b.I[REPL_BACKLOG] = 1  # createReplicationBacklog ran with the first replica
