"""jemalloc's thread cache (tcache) of Redis's main thread: freed regions kept
per size class and handed out again first, last freed first.

Follows jemalloc 5.3 (reference §3.3): ``tcache_inlines.h:tcache_alloc_small``,
``tcache_alloc_large``, ``tcache_dalloc_small`` and ``tcache_dalloc_large``;
``cache_bin.h:cache_bin_alloc_impl`` (the low-water mark);
``src/tcache.c:tcache_alloc_small_hard`` with
``src/arena.c:arena_cache_bin_fill_small`` (a fill),
``src/tcache.c:tcache_bin_flush_bottom`` (a flush), ``src/tcache.c:tcache_event``
with ``tcache_gc_small`` / ``tcache_gc_large`` (the incremental GC) and
``src/tcache.c:tcache_ncached_max_compute`` (the bins' sizes); the GC's pace is
``thread_event.h``'s ``tcache_gc`` and ``tcache_gc_dalloc`` events.

Per tcache bin — the small classes, then the large ones up to ``tcache_max``
(32 KB: 16, 20, 24, 28 and 32 KB) — a stack of up to ``ncached_max`` handles:

- ``ncached_max``: twice a slab's regions, even, within 20 .. 200 for a small
  class (``opt_lg_tcache_nslots_mul`` 1, ``opt_tcache_nslots_small_min/max``);
  20 for a large one (``opt_tcache_nslots_large``);
- malloc pops the top. An empty small bin is filled first with
  ``ncached_max >> lg_fill_div`` regions from the arena (slabcur, then the lowest
  non-full slab, then a fresh one: ``arena.arena_malloc`` each), the lowest
  handed out first; an empty large bin is not filled, the extent comes from
  the arena (``large_malloc``);
- free pushes. A full bin first flushes its oldest half back to the arena
  (``opt_lg_tcache_flush_small_div`` / ``_large_div`` 1), youngest of them
  first, as ``tcache_bin_flush_impl`` walks them;
- GC: every 64 KiB allocated, and every 64 KiB freed
  (``opt_tcache_gc_incr_bytes``; 5.1 and 5.2.1, Redis 6.2's and 7.0's bundled
  builds: every ``8192 / SC_NBINS + 1`` allocations and frees the cache
  serves, counted together, ``TCACHE_GC_INCR``: 211 with the 8-B quantum's
  39 small classes), one bin, round robin: if it stayed above
  ``low_water`` regions since its last visit, 3/4 of those are flushed (oldest
  first) and a small bin's fills halve (``lg_fill_div`` + 1); if it ran empty
  and was refilled, its fills double (down to ``lg_fill_div`` 1).

So a SET that replaces a value with one of the same class takes back the
region the previous one freed, and a slab's count changes only when a bin
fills or flushes. The cached regions count as allocated (``curregs``,
``allocator_allocated``) and pin their slabs: after FLUSHALL up to
``ncached_max`` regions per class stay in use. After seed S3's steps and a
FLUSHALL, 7.0.15 kept 107-112 slabs of the 16-B class, 172-189 of the 32-B
and 18-28 of the 1,280-B (four runs; 47, 40 and 1 when empty); the model
keeps 124, 195 and 22 (``tests/test_s3_fragmentation.py``). FLUSHALL frees
in the keys' hash order (``admin.flushall``), so the last regions cached
come from slabs all over the arena.
Redis 7.0's ``MEMORY PURGE`` purges the arena's dirty pages only
(``jemalloc_purge``: ``arena.<i>.purge``), not the thread cache. Active defrag
bypasses the cache (``zmalloc_no_tcache``), which ``arena.defrag_move`` does.

Deviations:

- only the keyspace's allocations (``objects.py``, the dicts' tables) pass
  through the cache and count towards the GC's 64 KiB; the main thread's other
  allocations (query buffers, argv, replies) also do in Redis and pace the GC
  faster (each bin is visited every 41 x 64 KiB of them with 16-B quantum's 36
  small classes);
- the scenario's ``engine.allocator-tcache: false`` is ``MALLOC_CONF=tcache:false``:
  every allocation goes to the arena.
"""

from __future__ import annotations

import numpy as np

from redsim.model.arena import (
    LARGE,
    PAGE,
    SMALL_MAX,
    arena_free,
    arena_malloc_batch,
    handle_slab,
    large_free,
    large_malloc,
    slab_pages,
    small_classes,
    small_handle,
)
from redsim.model.jit import hot_leaf, leaf, step
from redsim.model.state import (
    TC_ALLOC_WAIT,
    TC_DALLOC_WAIT,
    TC_GC_EVENTS,
    TC_NBINS,
    TC_NEXT_GC,
    TC_NSMALL,
)
from redsim.model.world import prefetch

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "TC_ON", "i8", "-", "config",
     "1: the main thread allocates through its tcache (jemalloc opt.tcache, on by default)"),
    ("I", "TC_NSMALL", "i8", "-", "config",
     "tcache bins of small classes (SC_NBINS); the large classes' bins follow"),
    ("I", "TC_NBINS", "i8", "-", "config", "tcache bins, small and large (nhbins)"),
    ("I", "TC_NEXT_GC", "i8", "-", "state",
     "the tcache bin the next GC event visits (tcache_slow next_gc_bin)"),
    ("I", "TC_ALLOC_WAIT", "i8", "B", "state",
     "bytes left to allocate before the next GC event (the tcache_gc event's wait)"),
    ("I", "TC_DALLOC_WAIT", "i8", "B", "state",
     "bytes left to free before the next GC event (the tcache_gc_dalloc event's wait)"),
    ("I", "TC_GC_EVENTS", "i8", "-", "config",
     "5.1/5.2.1: cached allocations and frees between GC visits (TCACHE_GC_INCR), "
     "their gc_ticker in TC_ALLOC_WAIT; 0: 5.3's thread events, by bytes"),
    ("al", "tc_max", "i8", "-", "config",
     "per tcache bin (small classes, then large ones to 32 KB): its slots (ncached_max)"),
    ("al", "tc_n", "i8", "-", "state", "per tcache bin: the handles it holds (ncached)"),
    ("al", "tc_low", "i8", "-", "state",
     "per tcache bin: the fewest it held since the GC's last visit (low_water)"),
    ("al", "tc_fill_div", "i8", "-", "state",
     "per small tcache bin: lg_fill_div, a fill takes tc_max >> lg_fill_div"),
    ("al", "tc_refilled", "i8", "-", "state",
     "per small tcache bin: 1 if filled since the GC's last visit (bin_refilled)"),
    ("al", "tc_stack", "i8", "-", "state",
     "the bins' handles, TC_SLOTS per bin, oldest first (the cache_bin stacks)"),
)

TC_SLOTS = 200
"""Slots per bin in ``tc_stack``: the largest ``ncached_max``."""
NSLOTS_SMALL_MIN = 20
NSLOTS_SMALL_MAX = 200
NSLOTS_LARGE = 20
LARGE_MIN_PAGES = (SMALL_MAX // PAGE) + 1
"""Pages of the smallest large class (16 KB with 4-KB pages)."""
LARGE_MAX_PAGES = 8
"""Pages of ``tcache_max`` (32 KB, ``opt_tcache_max``): larger extents skip the cache."""
GC_INCR_BYTES = 65536
"""``opt_tcache_gc_incr_bytes``: bytes allocated (or freed) between GC events."""
GC_SWEEP = 8192
"""5.1 and 5.2.1's ``TCACHE_GC_SWEEP``: cached allocations and frees per sweep of
the bins (tcache_types.h)."""


# ---- the stacks --------------------------------------------------------------------------


@leaf
def _flush(w, b, remain):
    """``tcache_bin_flush_bottom``: give all but the newest ``remain`` handles of
    bin b back to the arena, youngest of them first, and slide the rest down."""
    n = w.al_tc_n[b]
    nflush = n - remain
    if nflush <= 0:
        return
    base = b * TC_SLOTS
    small = b < w.I[TC_NSMALL]
    if small:  # the slabs' rows are about to be read: start the misses together
        for i in range(nflush):
            prefetch(w.sb_bin, handle_slab(w.al_tc_stack[base + i]))
    for j in range(nflush):
        h = w.al_tc_stack[base + nflush - 1 - j]
        if small:
            arena_free(w, handle_slab(h))
        else:
            large_free(w, h - LARGE)
    for i in range(remain):
        w.al_tc_stack[base + i] = w.al_tc_stack[base + nflush + i]
    w.al_tc_n[b] = remain
    if w.al_tc_low[b] > remain:
        w.al_tc_low[b] = remain


@step
def _fill(w, b):
    """``tcache_alloc_small_hard``: an empty small bin takes ``ncached_max >>
    lg_fill_div`` regions from the arena, slab by slab
    (``arena_cache_bin_fill_small``); the first taken goes on top. Returns how
    many it got (fewer only when slab ids ran out)."""
    nfill = w.al_tc_max[b] >> w.al_tc_fill_div[b]
    base = b * TC_SLOTS
    got = 0
    while got < nfill:
        n = arena_malloc_batch(w, b, nfill - got)
        if n == 0:
            break
        h = small_handle(b, w.al_cur[b])
        for j in range(got, got + n):
            w.al_tc_stack[base + nfill - 1 - j] = h
        got += n
    if got < nfill:  # slide the ones it got to the bottom
        for i in range(got):
            w.al_tc_stack[base + i] = w.al_tc_stack[base + nfill - got + i]
    w.al_tc_n[b] = got
    w.al_tc_refilled[b] = 1
    return got


@leaf
def _pop(w, b):
    """``cache_bin_alloc``: the top handle of bin b (it must hold one), lowering
    the low-water mark when the stack goes below it."""
    n = w.al_tc_n[b] - 1
    if n < w.al_tc_low[b]:
        w.al_tc_low[b] = n
    w.al_tc_n[b] = n
    return w.al_tc_stack[b * TC_SLOTS + n]


@hot_leaf
def _push(w, b, h, remain):
    """``cache_bin_dalloc_easy``, after a flush down to ``remain`` if bin b is full."""
    if w.al_tc_n[b] == w.al_tc_max[b]:
        _flush(w, b, remain)
    n = w.al_tc_n[b]
    w.al_tc_stack[b * TC_SLOTS + n] = h
    w.al_tc_n[b] = n + 1


@leaf
def alloc_small(w, b):
    """``tcache_alloc_small``: a region of bin b (its handle; 0 if out of slab ids)."""
    if w.al_tc_n[b] == 0:
        if _fill(w, b) == 0:
            return 0
        # cache_bin_alloc after the fill: low_water is still 0, below the stack.
    return _pop(w, b)


@leaf
def _large_bin(w, pages):
    """The tcache bin of extents of ``pages`` pages (after the small classes')."""
    return w.I[TC_NSMALL] + pages - LARGE_MIN_PAGES


@leaf
def alloc_large(w, pages):
    """``tcache_alloc_large``: a cached extent of ``pages`` pages, else a new one."""
    b = _large_bin(w, pages)
    if w.al_tc_n[b] == 0:
        return large_malloc(w, pages)
    return _pop(w, b)


@leaf
def free_small(w, b, h):
    """``tcache_dalloc_small``: region ``h`` of bin b onto its stack."""
    _push(w, b, h, w.al_tc_max[b] >> 1)


@leaf
def free_large(w, h):
    """``tcache_dalloc_large``: extent ``h`` onto its stack."""
    b = _large_bin(w, h - LARGE)
    _push(w, b, h, w.al_tc_max[b] >> 1)


@leaf
def cached_large(pages):
    """Whether an extent of ``pages`` pages goes through the cache (≤ 32 KB)."""
    return pages <= LARGE_MAX_PAGES


# ---- the incremental GC -------------------------------------------------------------------


@step
def gc(w):
    """``tcache_event``: visit the next bin. Above its low-water mark since the
    last visit: flush 3/4 of that (``tcache_gc_small`` / ``_large``) and halve a
    small bin's fills; refilled since: double them."""
    I = w.I
    b = I[TC_NEXT_GC]
    small = b < w.I[TC_NSMALL]
    low = w.al_tc_low[b]
    if low > 0:
        _flush(w, b, w.al_tc_n[b] - (low - (low >> 2)))
        if small and (w.al_tc_max[b] >> (w.al_tc_fill_div[b] + 1)) >= 1:
            w.al_tc_fill_div[b] += 1
    elif small and w.al_tc_refilled[b]:
        if w.al_tc_fill_div[b] > 1:
            w.al_tc_fill_div[b] -= 1
        w.al_tc_refilled[b] = 0
    w.al_tc_low[b] = w.al_tc_n[b]
    b += 1
    I[TC_NEXT_GC] = 0 if b == I[TC_NBINS] else b


@leaf
def _tick(w, wait, usize):
    """A thread event's clock ``I[wait]``: ``usize`` bytes went by; once the wait
    is used up the GC runs and the wait starts again (the excess is not carried,
    as ``te_event_trigger`` resets it). 5.1 and 5.2.1 instead tick one
    ``gc_ticker`` per allocation or free the cache serves (``tcache_event``; up
    to ``tcache_max``) and run the GC when it goes below 0 (``ticker_tick``):
    every ``TC_GC_EVENTS`` + 1 of them."""
    I = w.I
    reset = GC_INCR_BYTES
    if I[TC_GC_EVENTS] > 0:
        if usize > LARGE_MAX_PAGES * PAGE:  # past the cache: no tcache_event
            return
        wait = TC_ALLOC_WAIT  # the one gc_ticker, one tick a call
        reset = I[TC_GC_EVENTS]
        usize = 1
        fire = I[wait] < 1  # ticker_ticks: the tick would go below 0
    else:
        fire = usize >= I[wait]
    # One call of gc here: _tick is inlined wherever zmalloc is, and a second
    # call site cost ~4 s of cold compile.
    if fire:
        I[wait] = reset
        gc(w)
    else:
        I[wait] -= usize


@leaf
def alloc_event(w, usize):
    """The ``tcache_gc`` event's clock: ``usize`` bytes were allocated."""
    _tick(w, TC_ALLOC_WAIT, usize)


@leaf
def dalloc_event(w, usize):
    """The ``tcache_gc_dalloc`` event's clock: ``usize`` bytes were freed."""
    _tick(w, TC_DALLOC_WAIT, usize)


# ---- tables and configuration (Python) ---------------------------------------------------


def ncached_max(nregs: int) -> int:
    """``tcache_ncached_max_compute`` for a small class of ``nregs`` regions per
    slab: twice that, made even, within 20 .. 200."""
    candidate = nregs << 1
    candidate += candidate % 2
    return min(max(candidate, NSLOTS_SMALL_MIN), NSLOTS_SMALL_MAX)


def bins(quantum16: bool) -> dict[str, np.ndarray]:
    """Every ``al`` field of an empty thread cache: the small classes' bins,
    then the large classes' up to 32 KB."""
    classes = small_classes(quantum16)
    nregs = [slab_pages(c) * PAGE // c for c in classes]
    large = LARGE_MAX_PAGES - LARGE_MIN_PAGES + 1
    tc_max = np.array([ncached_max(n) for n in nregs] + [NSLOTS_LARGE] * large, np.int64)
    nb = len(tc_max)
    return {"tc_max": tc_max, "tc_n": np.zeros(nb, np.int64), "tc_low": np.zeros(nb, np.int64),
            "tc_fill_div": np.ones(nb, np.int64), "tc_refilled": np.zeros(nb, np.int64),
            "tc_stack": np.zeros(nb * TC_SLOTS, np.int64)}


def gc_incr(quantum16: bool) -> int:
    """5.1 and 5.2.1's ``TCACHE_GC_INCR``: ``TCACHE_GC_SWEEP`` (8,192) events per
    sweep of the small bins, one bin per ``8192 / SC_NBINS + 1`` of them."""
    nbins = len(small_classes(quantum16))
    return GC_SWEEP // nbins + (1 if GC_SWEEP // nbins else 0)


def start(I: np.ndarray, on: bool, quantum16: bool, gc_events: bool = False) -> None:
    """A new thread's cache: on or off, its bins, the GC's clocks at their first
    wait (by events for a 5.1 or 5.2.1 build, ``gc_events``; by bytes for 5.3)."""
    from redsim.model import state as S

    I[S.TC_ON] = int(on)
    I[S.TC_NSMALL] = len(small_classes(quantum16))
    I[S.TC_NBINS] = I[S.TC_NSMALL] + LARGE_MAX_PAGES - LARGE_MIN_PAGES + 1
    I[S.TC_NEXT_GC] = 0
    I[S.TC_GC_EVENTS] = gc_incr(quantum16) if gc_events else 0
    I[S.TC_ALLOC_WAIT] = I[S.TC_GC_EVENTS] if gc_events else GC_INCR_BYTES
    I[S.TC_DALLOC_WAIT] = GC_INCR_BYTES


def configure(b) -> None:
    """The scenario's thread cache (``engine.allocator-tcache``), empty, and its
    GC's pace (``engine.allocator``'s build)."""
    build = b.scenario.jemalloc
    q16 = build.quantum == 16
    b.fill("al", **bins(q16))
    start(b.I, b.scenario.engine.allocator_tcache, q16, build.gc_events)
