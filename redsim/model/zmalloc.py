"""zmalloc and zfree of the keyspace's allocations: jemalloc's ``malloc`` and
``free`` on Redis's main thread, through its thread cache to the arena.

Follows ``src/zmalloc.c:ztrymalloc_usable`` / ``zfree`` (``je_malloc`` /
``je_free``) and jemalloc 5.3's ``src/jemalloc.c:imalloc_body`` and ``ifree``:
a small request takes its size class's bin (``sz_size2index_lookup``), a
large one whole pages; with the thread cache on (jemalloc's default), both go
through it (``tcache.py``) up to 32 KB, then the allocation or free ticks the
thread's GC clock (``thread_alloc_event`` / ``thread_dalloc_event``, after the
operation, as jemalloc does). Larger extents, and every allocation when
``engine.allocator-tcache`` is off, go to the arena (``arena.py``).

``used_memory`` is zmalloc's own counter, kept by the callers
(``objects.py``, ``db.py``, ``memory.py``): these functions place the
allocations, they do not count them.
"""

from __future__ import annotations

from redsim.model import tcache
from redsim.model.arena import (
    LARGE,
    PAGE,
    SMALL_MAX,
    arena_zfree,
    arena_zmalloc,
    handle_bin,
    hi_handle,
    large_pages,
    lo_handle,
    small_bin,
)
from redsim.model.jit import hot_leaf, leaf
from redsim.model.state import TC_ON


@hot_leaf
def zmalloc(w, n):
    """Allocate ``n`` bytes; returns the handle (0 for ``n`` ≤ 0, or when the
    arena is out of slab ids)."""
    if n <= 0:
        return 0
    if not w.I[TC_ON]:
        return arena_zmalloc(w, n)
    if n <= SMALL_MAX:
        b = small_bin(w, n)
        h = tcache.alloc_small(w, b)
        usize = w.al_reg_size[b]
    else:
        pages = large_pages(w, n)
        h = tcache.alloc_large(w, pages) if tcache.cached_large(pages) else \
            arena_zmalloc(w, n)
        usize = pages * PAGE
    tcache.alloc_event(w, usize)
    return h


@hot_leaf
def zfree(w, h):
    """Free the allocation of handle ``h`` (0: nothing)."""
    if h <= 0:
        return
    if not w.I[TC_ON]:
        arena_zfree(w, h)
        return
    if h >= LARGE:
        pages = h - LARGE
        if tcache.cached_large(pages):
            tcache.free_large(w, h)
        else:
            arena_zfree(w, h)
        usize = pages * PAGE
    else:
        b = handle_bin(h)
        tcache.free_small(w, b, h)
        usize = w.al_reg_size[b]
    tcache.dalloc_event(w, usize)


@leaf
def zfree_pair(w, v):
    """Free both allocations of an ``arena.pair`` (either may be 0)."""
    zfree(w, lo_handle(v))
    zfree(w, hi_handle(v))
