"""The process's RSS and jemalloc's statistics, as ``INFO memory`` reports them.

Follows ``src/server.c:cronUpdateMemoryStats`` (``zmalloc_get_rss``,
``zmalloc_get_allocator_info``: jemalloc's ``stats.allocated``,
``stats.active`` and ``stats.resident``) and the ratios
``src/server.c:genRedisInfoString`` prints (reference §3.2):

- ``allocator_allocated``: bytes in allocations; ``allocator_active``: bytes of
  the pages of slabs and extents in use; ``allocator_resident``: active pages,
  dirty pages not yet purged and jemalloc's metadata;
- ``used_memory_rss``: the process's resident pages: the allocator's resident
  plus what lives outside jemalloc (the binary, libraries, stacks, Lua's heap);
- ``allocator_frag_ratio`` = active / allocated, ``rss_overhead_ratio`` =
  RSS / allocator resident, ``mem_fragmentation_ratio`` = RSS / used_memory
  (computed from the recorded gauges in ``redsim/result.py``).

Every allocation of the keyspace (keys, values, TTL entries, bucket arrays) and
Redis's own startup allocations are placed in the arena (``arena.py``). Client
structs and buffers, the AOF buffer and the replication buffer are not: they
count as allocated and active at their ``used_memory`` bytes, with no slab
waste of their own (the replication buffer's blocks fill their 20 480-B size
class exactly), and what they free leaves the RSS at once.

Deviations: RSS outside jemalloc is a constant, measured on Debian's 7.0.15
(7.7 MB: RSS − ``allocator_resident`` of an empty server; it grew 0.5 MB with
100K keys); Redis samples these figures every 100 ms in serverCron, the model
at each window's end; copy-on-write copies after a fork are the child's pages,
not the parent's, and are not in ``used_memory_rss`` (``current_cow_size``
reports them).
"""

from __future__ import annotations

from redsim.model.arena import EXTENT_META, PAGE, STARTUP_RESIDENT
from redsim.model.jit import leaf
from redsim.model.memory import clients_memory
from redsim.model.replication_buffer import replication_memory
from redsim.model.state import (
    AL_ALLOCATED,
    AL_EXTENTS,
    AL_META_BASE,
    AL_PAGES_ACTIVE,
    AL_PAGES_DIRTY,
    AOF_BUF,
    REPL_BACKLOG,
    RSS_BASE,
)

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "RSS_BASE", "i8", "B", "config",
     "resident bytes outside jemalloc: binary, libraries, stacks, Lua (measured), B"),
    ("I", "AL_META_BASE", "i8", "B", "config",
     "jemalloc's resident metadata of an empty server, B (EXTENT_META per extent on top)"),
    ("wi", "WI_RSS", "i8", "B", "gauge", "used_memory_rss at the window's end, B"),
    ("wi", "WI_AL_ALLOCATED", "i8", "B", "gauge", "allocator_allocated at the window's end, B"),
    ("wi", "WI_AL_ACTIVE", "i8", "B", "gauge", "allocator_active at the window's end, B"),
    ("wi", "WI_AL_RESIDENT", "i8", "B", "gauge", "allocator_resident at the window's end, B"),
)

OUTSIDE_JEMALLOC = 7_700_000
"""RSS of an empty 7.0.15 outside jemalloc, bytes: ``used_memory_rss`` 12.17-12.27 MB
minus ``allocator_resident`` 4.50 MB, two starts on this project's VM."""


@leaf
def untracked(w):
    """Bytes of ``used_memory`` not placed in the arena: client structs and
    buffers, the AOF buffer, the replication buffer."""
    if w.I[REPL_BACKLOG]:
        return clients_memory(w) + w.I[AOF_BUF] + replication_memory(w)
    return clients_memory(w) + w.I[AOF_BUF]


@leaf
def allocator_allocated(w):
    """jemalloc ``stats.allocated``, bytes."""
    return w.I[AL_ALLOCATED] + untracked(w)


@leaf
def allocator_active(w):
    """jemalloc ``stats.active``, bytes."""
    return w.I[AL_PAGES_ACTIVE] * PAGE + untracked(w)


@leaf
def allocator_resident(w):
    """jemalloc ``stats.resident``, bytes: active, dirty and metadata."""
    I = w.I
    return (allocator_active(w) + I[AL_PAGES_DIRTY] * PAGE + I[AL_META_BASE]
            + EXTENT_META * I[AL_EXTENTS])


@leaf
def used_memory_rss(w):
    """``used_memory_rss`` (``zmalloc_get_rss``), bytes."""
    return w.I[RSS_BASE] + allocator_resident(w)


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """RSS outside jemalloc."""
    from redsim.model import state as S

    b.I[S.RSS_BASE] = OUTSIDE_JEMALLOC


def start(w, b) -> None:
    """jemalloc's metadata base: what makes the empty server's resident the
    measured ``STARTUP_RESIDENT`` once Redis's own allocations are placed
    (``arena.start`` runs first)."""
    from redsim.model import state as S

    I = w.I
    I[S.AL_META_BASE] = max(0, STARTUP_RESIDENT - int(I[S.AL_PAGES_ACTIVE]) * PAGE
                            - EXTENT_META * int(I[S.AL_EXTENTS]))
