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

``new_arena`` builds the arena and thread cache of one thread on their own,
outside a run (tests, sizing): here, above both modules.
"""

from __future__ import annotations

import functools
from collections import namedtuple

from redsim.model import arena, nonfull, tcache
from redsim.model import state as S
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


# ---- a stand-alone arena (Python) ------------------------------------------------------


@functools.cache
def _standalone_type(fields: tuple[str, ...]) -> type:
    """One namedtuple class per field list: numba compiles a function once per
    argument type, and a new class per arena would compile it for each."""
    return namedtuple("StandaloneArena", fields)


def new_arena(quantum16: bool, max_slabs: int, tcache_on: bool = True,
              gc_events: bool = False, pad: bool = False):
    """A stand-alone arena (for tests and sizing): a namedtuple with ``I`` and
    ``F`` and every ``al`` field, empty, with room for ``max_slabs`` slabs, and
    the thread cache on or off (``zmalloc`` goes through it); ``gc_events`` and
    ``pad`` as a 5.1/5.2.1 or cache-oblivious build (``AllocatorBuild``)."""
    n_bins = len(arena.small_classes(quantum16))
    fields = {f"al_{f}": v for f, v in {**arena.bins(quantum16), **nonfull.bins(n_bins),
                                         **tcache.bins(quantum16)}.items()}
    fields.update({f"sb_{f}": v for f, v in {
        **arena.slab_arrays(max_slabs), **nonfull.slab_arrays(max_slabs, n_bins)}.items()})
    F, I = S.new_scalars()
    I[S.Q16] = int(quantum16)
    I[S.AL_MAX_SLABS] = max_slabs
    I[S.AL_DECAY_MS] = 10_000
    I[S.AL_LARGE_PAD] = int(pad)
    tcache.start(I, tcache_on, quantum16, gc_events)
    return _standalone_type(("F", "I", *fields))(F, I, **fields)
