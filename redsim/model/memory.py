"""The memory ledger: what ``used_memory`` is made of, and the maxmemory test.

Follows ``src/zmalloc.c:zmalloc_used_memory`` (the counter, as a sum of the
parts below), ``src/evict.c:freeMemoryGetNotCountedMemory``,
``src/evict.c:getMaxmemoryState`` and ``src/evict.c:overMaxmemoryAfterAlloc``.

``used_memory`` (reference §3.1) is zmalloc's counter of every allocation at
its size class. Modelled parts, all in bytes:

- ``used_memory_startup``: an empty server (``MEM_STARTUP``);
- the dataset's keys: Σ ``objects.string_key_bytes`` (``MEM_DATASET``);
- the dicts' bucket arrays: 8 bytes per bucket of the main and expires dicts;
- clients: structs, query buffers, reply buffers and lists
  (``client_memory``);
- the AOF buffer (``aof_buf``, ``model/aof.py``), which is also
  ``mem_not_counted_for_evict``: eviction does not try to make room for it;
- values handed to the lazyfree thread that it has not freed yet
  (``lazyfree.in_flight``): counted, as Redis counts them, until freed.

- the replication buffer: the backlog and what replicas have yet to receive
  (``replication_buffer.replication_memory``); what exceeds the backlog is
  ``mem_not_counted_for_evict`` too.

Pages copied on write after a fork are outside ``used_memory`` (``model/cow.py``).
"""

from __future__ import annotations

from redsim.model import lazyfree, replication_buffer
from redsim.model.jit import hot_leaf, leaf
from redsim.model.state import (
    AOF_BUF,
    KS_BUCKETS,
    KS_EXP_BUCKETS,
    LF_N,
    MAXMEMORY,
    MEM_CLIENTS,
    MEM_DATASET,
    MEM_STARTUP,
    REPL_BACKLOG,
)
from redsim.observe import metrics as M

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "MEM_STARTUP", "i8", "B", "config",
     "used_memory_startup: what an empty server allocates, B (by version)"),
    ("I", "MAXMEMORY", "i8", "B", "config", "server.maxmemory: the eviction limit, B; 0 = none"),
    ("I", "Q16", "i8", "-", "config",
     "1: the allocator's size classes step by 16 B (engine.allocator-quantum 16); 0: jemalloc's "
     "8-B quantum"),
    ("I", "SHARED_INTS", "i8", "-", "config",
     "1: small integer values use shared objects (off under an LRU/LFU maxmemory-policy, as in "
     "Redis)"),
    ("wi", "WI_USED_MEMORY", "i8", "B", "gauge",
     "used_memory (zmalloc_used_memory) at the window's end, B"),
)


# sizeof() terms of Redis's per-db overhead (object.c getMemoryOverheadData):
# dictEntry and robj per key, dictEntry per TTL, a pointer per bucket.
_DICT_ENTRY, _ROBJ, _BUCKET = 24, 16, 8


def _overhead(r: M.Run) -> M.Array:
    """INFO used_memory_overhead at each window's end: the startup bytes, the
    clients' buffers and the dicts' entries, robjs and buckets (B)."""
    return (STARTUP_BYTES[r.scenario.redis_version] + M.row(r, "WI_MEM_CLIENTS")
            + M.row(r, "WI_KEYS") * (_DICT_ENTRY + _ROBJ) + M.row(r, "WI_EXPIRES") * _DICT_ENTRY
            + M.row(r, "WI_BUCKETS") * _BUCKET)


RESULTS = (
    M.Metric("used_memory_end", "B", M.SUM, "INFO used_memory at the end",
             value=M.end("used_memory"),
             line=M.Line(140, "used_memory end / peak", lambda s: " / ".join(
                 M.mb(s[k]) for k in ("used_memory_end", "used_memory_peak")) + " MB")),
    M.Metric("used_memory_peak", "B", M.series_peak("used_memory"),
             "used_memory's largest sample", value=M.peak("used_memory")),
    M.Metric("maxmemory", "B", M.SUM, "the maxmemory directive (0: no limit)",
             value=lambda r: int(r.scenario.server.maxmemory)),
    M.Column(300, "used_memory", "B", "INFO used_memory at the window's end",
             M.gauge("WI_USED_MEMORY")),
    M.Column(310, "used_memory_dataset", "B", "INFO used_memory_dataset",
             lambda r: M.row(r, "WI_USED_MEMORY") - _overhead(r)),
    M.Column(320, "used_memory_overhead", "B", "INFO used_memory_overhead", _overhead),
    M.Column(350, "maxmemory", "B", "the maxmemory directive",
             lambda r: int(r.scenario.server.maxmemory)),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

POINTER = 8  # bytes per dict bucket (a dictEntry pointer)

# Typical INFO `used_memory_startup` of an empty x86-64 server, bytes.
STARTUP_BYTES = {"6.2": 803_952, "7.0": 862_128, "7.2": 865_776}
CLIENT_STRUCT_BYTES = {"6.2": 20_480, "7.0": 768, "7.2": 896}
"""The client struct's size class: 6.2's holds the 16 KB reply buffer; 7.2's is
776 B (reference §3.6). 7.0's is measured, not compiled: Debian's 7.0.15 shows
22 270 B of ``mem_clients_normal`` per connection after one PING, which is the
20 480-B query buffer, the 1 024-B ``c->buf`` and 766 B: the 768-B class."""


@leaf
def clients_memory(w):
    """Bytes held by normal clients: structs and buffers (``client_memory``)."""
    return w.I[MEM_CLIENTS]


@hot_leaf
def used_memory(w):
    """``zmalloc_used_memory()``, bytes."""
    I = w.I
    used = (I[MEM_STARTUP] + I[MEM_DATASET] + POINTER * (I[KS_BUCKETS] + I[KS_EXP_BUCKETS])
            + clients_memory(w) + I[AOF_BUF])
    if I[LF_N] > 0:  # values the lazyfree thread has not freed yet
        used += lazyfree.in_flight(w)
    if I[REPL_BACKLOG]:
        used += replication_buffer.replication_memory(w)
    return used


@leaf
def not_counted_for_evict(w):
    """``freeMemoryGetNotCountedMemory()``: the AOF buffer and the replication
    buffer beyond the backlog, bytes."""
    if w.I[REPL_BACKLOG]:
        return w.I[AOF_BUF] + replication_buffer.not_counted(w)
    return w.I[AOF_BUF]


@hot_leaf
def mem_tofree(w):
    """``getMaxmemoryState``'s ``mem_tofree``: bytes over maxmemory, counting
    what eviction counts (≤ 0 when under the limit)."""
    return used_memory(w) - not_counted_for_evict(w) - w.I[MAXMEMORY]


@leaf
def over_maxmemory_after_alloc(w, more):
    """``overMaxmemoryAfterAlloc``: would allocating ``more`` bytes pass maxmemory?"""
    if w.I[MAXMEMORY] == 0:
        return False
    return mem_tofree(w) + more > 0


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """The memory ledger's constants for the version, ``maxmemory``, the
    allocator's quantum, and whether integers are shared (off when keys need
    their own LRU/LFU field, reference §2.7)."""
    from redsim.model import state as S

    sc = b.scenario
    server = sc.server
    b.I[S.MEM_STARTUP] = STARTUP_BYTES[sc.redis_version]
    b.I[S.MAXMEMORY] = server.maxmemory
    b.I[S.Q16] = 1 if sc.jemalloc.quantum == 16 else 0
    b.I[S.SHARED_INTS] = 0 if (server.maxmemory > 0 and (
        "lru" in server.maxmemory_policy or "lfu" in server.maxmemory_policy)) else 1
