"""jemalloc's arena: bins, slabs and extents, and the pages they keep resident.

Follows jemalloc 5.3 (7.x's bundled version; 6.2's 5.1 places small objects
the same way): ``src/arena.c:arena_bin_malloc_no_fresh_slab`` and
``src/arena.c:arena_slab_alloc`` for an allocation,
``src/arena.c:arena_dalloc_bin_locked_step``, ``src/arena.c:arena_bin_lower_slab``
and ``src/arena.c:arena_dissociate_bin_slab`` for a free, ``src/large.c`` for
allocations above the small classes; slab geometry from ``src/sc.c:slab_size``;
reference §3.3. Every allocation the keyspace makes goes through it
(``objects.py``: dictEntry, key sds, value object, expires entry; ``db.py``:
the dicts' bucket arrays).

What it keeps, per small size class (a *bin*, ``al`` rows): the slab it
allocates from (``slabcur``), the set of its other non-full slabs, and its
live regions and slabs; per slab (arrays indexed by slab id): its bin and free
regions.

- malloc: from ``slabcur`` while it has a free region; when it is full, the
  lowest non-full slab becomes ``slabcur``; when there is none, a fresh slab.
- free: the region goes back to its slab. A full slab that gets a free region
  becomes ``slabcur`` if it is lower than the current one (jemalloc keeps
  ``slabcur`` the lowest non-full slab), else joins the non-full set. A slab whose
  last region is freed goes back to the arena: its pages stay resident as
  *dirty* pages until purged. So a slab with one live region pins all its
  pages: deleting every other key empties no slab.
- Slab order: jemalloc orders slabs by serial number, then address
  (``edata_snad_comp``); here a slab's id stands for both: ids are given
  lowest free first, so an older (lower) slab is always preferred, as in
  jemalloc. jemalloc keeps the non-full slabs in a pairing heap (``ph.h``);
  here they are a bit set per bin that gives the same lowest slab faster
  (``nonfull.py``).
- Large allocations (above 14 KB, ``SC_SMALL_MAXCLASS``): an extent of whole
  pages (the size class, a multiple of 4 KB), freed to dirty pages at once.
  With a cache-oblivious build (``engine.allocator``: jemalloc's default,
  Redis 6.2's and 7.0's bundled builds and Debian's; not 7.2's bundled one,
  ``--disable-cache-oblivious``) each extent has one page more
  (``sz_large_pad``): the allocation starts at a random cache line of its
  first page. The pad is active (``allocator_active``, not allocated): on
  Debian's 7.0.15, 10,000 values of 16 KB, 20,000 B or 32 KB each added
  4,115 B of ``allocator_active − allocator_allocated``.
- Pages: a fresh slab or extent takes dirty pages first (jemalloc reuses its
  dirty extents before mapping new ones), then new ones. ``active`` pages are
  those of slabs and extents in use, ``dirty`` those freed and not yet purged;
  ``resident`` = active + dirty + metadata. ``purge`` returns every dirty page
  (``MEMORY PURGE``); ``arena_decay`` returns them gradually, as jemalloc's
  decay does (``dirty_decay_ms``, 10 s by default; Redis runs jemalloc's
  background thread, ``jemalloc-bg-thread yes``): the pages dirtied in one
  epoch (a 200th of the decay time) may stay ``S(1 - k/200)`` of themselves
  ``k`` epochs later, ``S`` the smootherstep, and the excess is purged
  (``src/decay.c``, ``src/arena.c:arena_decay_try_purge``). Pages join the
  backlog when the epoch advances: when the main thread's decay ticker fires
  (after 1,000 arena operations; it never purges while the background thread
  runs) or when the background thread runs. The thread purges, then sleeps
  until about 1,024 pages would be purgeable (``decay_ns_until_purge``: the
  whole decay time while 1,024 or fewer are dirty, for good with none), and is
  woken early when new pages would give it more than that to purge before it
  wakes, or when it slept for good (``arena_maybe_do_deferred_work``,
  ``decay_cron``). serverCron looks at both at each tick (100 ms at the
  default hz: the thread's shortest sleep).
  Purged pages leave RSS at once: 7.x's jemalloc 5.3 has ``muzzy_decay_ms``
  0, so nothing lingers as lazily freed (``MADV_FREE``) pages.

Handles: an allocation is remembered in 32 bits (two per key-row field): 0 is
none, ``LARGE + pages`` a large extent, and below ``LARGE`` a small region:
its bin in the top 6 bits and ``slab + 1`` in the low 25 (``small_handle``).
The bin in the handle is what jemalloc's free reads from its radix tree (the
size class of a pointer's extent), so a free finds its thread-cache bin
without reading the slab's row. 25 bits hold 33,554,431 slab ids (at least
128 GiB of slabs); a scenario that needs more is refused (``configure``).

Every allocation reaches the arena through the main thread's thread cache
(``tcache.py``); ``zmalloc.py`` is the entry point. The functions here are
what the thread cache calls when it fills or flushes a bin, and what Redis's
active defrag calls directly (``zmalloc_no_tcache``).

Deviations:

- which region of a slab an allocation takes is not kept, only how many are
  free: jemalloc's lowest-free-region rule changes no slab's count;
- extents are not split or coalesced by address: freed pages are a count of
  dirty pages any later slab or extent can take, whatever its size;
- metadata is ``engine``'s base plus 128 B per slab or extent in use (jemalloc's
  ``edata_t`` and radix-tree leaves; 7.0.15 grew by 0.99 MB for 7,900 slabs);
- 6.2's jemalloc 5.1 also decays *muzzy* pages over 10 s, which keep counting
  in RSS until the kernel reclaims them; not modelled;
- the decay ticker fires after exactly 1,000 arena operations (a slab or
  extent made or freed, a region handed out or taken back by the arena), where
  5.3 draws it (probability 1/1,000 per tick, ``ticker_geom``) and counts
  other calls too; the background thread is woken and runs on cron ticks.
  Live 7.0.15 purged a dropped replica's 64 MB later than this: RSS 2, 5 and
  10 s after the drop 71, 71, 68 MB and 63, 63, 61 MB in two runs (the first
  purge ~7 s after), the model 73, 47, 15 MB (its first at ~3 s); a third
  pair had 47 and 38 MB at 5 s. Not found why the pages wait longer live
  (``tests/test_allocator_live.py``).
"""

from __future__ import annotations

import numpy as np

from redsim.model import nonfull
from redsim.model.jemalloc import size_class
from redsim.model.jit import entry, hot_leaf, leaf, step
from redsim.model.state import (
    AL_ALLOCATED,
    AL_BG_WAKE,
    AL_DECAY_EPOCH,
    AL_DECAY_LIMIT,
    AL_DECAY_MS,
    AL_DECAY_TICKS,
    AL_DECAY_UNPURGED,
    AL_EXTENTS,
    AL_FREE_IDS,
    AL_LARGE_LIVE,
    AL_LARGE_PAD,
    AL_LOW,
    AL_MAX_SLABS,
    AL_OVERRUN,
    AL_PAGES_ACTIVE,
    AL_PAGES_DIRTY,
    AL_PAGES_PURGED,
    AL_SLABS_MADE,
    AL_SPARE_LOW,
    Q16,
    RNG_LOW,
    T,
    row_table,
)
from redsim.model.world import as_world, pack
from redsim.observe import metrics as M

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "AL_SLABS_MADE", "i8", "-", "state", "slab ids handed out so far (0 .. n-1)"),
    ("I", "AL_FREE_IDS", "i8", "-", "state",
     "ids of released slabs on the sb free_ids min-heap (reused lowest first)"),
    ("I", "AL_MAX_SLABS", "i8", "-", "size", "slab ids the al per-slab arrays hold"),
    ("I", "AL_SPARE_LOW", "i8", "-", "config",
     "below this many unused slab ids the kernel asks Python to grow the arrays (AL_LOW)"),
    ("I", "AL_LOW", "i8", "-", "state",
     "1: slab ids ran low, Python grows the arrays (arena.grow) at the next safe point"),
    ("I", "AL_OVERRUN", "i8", "-", "state",
     "1: an allocation found no slab id (a redsim bug: the spare was too small)"),
    ("I", "AL_PAGES_ACTIVE", "i8", "-", "state",
     "4-KB pages of slabs and large extents in use (jemalloc stats.active / 4096)"),
    ("I", "AL_PAGES_DIRTY", "i8", "-", "state",
     "4-KB pages freed and not yet purged (the arena's dirty pages)"),
    ("I", "AL_ALLOCATED", "i8", "B", "state",
     "bytes of the regions and extents in use (jemalloc stats.allocated, tracked part)"),
    ("I", "AL_EXTENTS", "i8", "-", "state", "slabs and large extents in use (for metadata)"),
    ("I", "AL_DECAY_MS", "i8", "ms", "config",
     "jemalloc's dirty_decay_ms: 10000 by default; 0 purges at once, -1 never"),
    ("I", "AL_DECAY_EPOCH", "i8", "-", "state", "the decay's current epoch (decay_t epoch)"),
    ("I", "AL_DECAY_UNPURGED", "i8", "-", "state",
     "dirty pages left after the last purge (decay_t nunpurged)"),
    ("I", "AL_PAGES_PURGED", "i8", "-", "counter", "pages purged so far (decay and MEMORY PURGE)"),
    ("I", "AL_LARGE_PAD", "i8", "-", "config",
     "pages of cache-oblivious pad per large extent (sz_large_pad): 1, or 0 without it"),
    ("I", "AL_LARGE_LIVE", "i8", "-", "state",
     "large extents of large_malloc in use (the thread cache's included)"),
    ("I", "AL_DECAY_TICKS", "i8", "-", "state",
     "regions and extents the arena handed out or took back since the main thread's "
     "decay ticker last fired (arena_decay_ticks)"),
    ("I", "AL_DECAY_LIMIT", "i8", "-", "state",
     "dirty pages the decay allows at its current epoch (decay npages_limit)"),
    ("F", "AL_BG_WAKE", "f8", "s", "state",
     "when jemalloc's background thread wakes next (inf: asleep until signalled)"),
    ("al", "reg_size", "i8", "B", "config", "the bin's region (size class) size, B"),
    ("al", "nregs", "i8", "-", "config", "regions per slab (bin_info nregs)"),
    ("al", "slab_pages", "i8", "-", "config", "4-KB pages per slab (sc.c:slab_size)"),
    ("al", "cur", "i8", "-", "state", "the bin's slabcur, -1 if none"),
    ("al", "curregs", "i8", "-", "state", "regions in use in the bin (bin stats curregs)"),
    ("al", "curslabs", "i8", "-", "state", "slabs of the bin in use (bin stats curslabs)"),
    ("al", "bin_of8", "i8", "-", "config",
     "the bin of a small request of n bytes, at index (n + 7) / 8 (sz_size2index's table)"),
    ("sb", "bin", "i8", "-", "state", "the slab's bin, -1 if the id is free"),
    ("sb", "nfree", "i8", "-", "state", "its free regions"),
    ("sb", "free_ids", "i8[]", "-", "state", "min-heap of released slab ids"),
    ("al", "backlog", "i8", "-", "state",
     "decay backlog: pages dirtied per epoch, oldest first (SMOOTHSTEP_NSTEPS)"),
    ("al", "h_steps", "i8", "-", "config",
     "the smootherstep, 24-bit fixed point (decay h_steps)"),
)


RESULTS = (
    M.Metric("pages_purged", "-", M.SUM, "pages jemalloc gave back to the system",
             value=M.counter("AL_PAGES_PURGED")),
)
"""The summary keys this module's figures make (``observe/metrics.py``)."""

PAGE = 4096
SMALL_MAX = 14336
"""The largest small size class with 4 KB pages (``SC_SMALL_MAXCLASS``)."""
LARGE = 1 << 31
"""A handle at or above this is a large extent of ``handle - LARGE`` pages."""
HANDLE_MASK = (1 << 32) - 1
SLAB_BITS = 25
"""Bits of a small handle that hold ``slab + 1``; the bin sits above them."""
SLAB_MASK = (1 << SLAB_BITS) - 1
MAX_SLAB_IDS = SLAB_MASK
"""Slab ids a handle can name (0 .. ``SLAB_MASK`` - 1)."""
EXTENT_META = 128
"""Metadata bytes per slab or extent in use (``edata_t`` and radix-tree leaves),
measured: 7.0.15's ``resident - active`` grew 0.99 MB for ~7,900 slabs."""

SMOOTHSTEP_NSTEPS = 200
SMOOTHSTEP_BFP = 24
DECAY_NTICKS_PER_UPDATE = 1000
"""Arena operations between the main thread's decay epoch updates (decay.h)."""
BG_NPAGES_THRESHOLD = 1024
"""``ARENA_DEFERRED_PURGE_NPAGES_THRESHOLD`` (5.3; 5.1 and 5.2.1's
``BACKGROUND_THREAD_NPAGES_THRESHOLD``): pages worth waking the background
thread for."""
BG_MIN_INTERVAL = 0.1
"""``BACKGROUND_THREAD_MIN_INTERVAL_NS``: the background thread's shortest sleep, s."""


def _smootherstep_steps() -> np.ndarray:
    """``h_steps``: the share of a decay interval's dirty pages still allowed
    ``NSTEPS - 1 - i`` epochs later, in 24-bit fixed point (jemalloc's default
    ``smoother`` step, 6x^5 - 15x^4 + 10x^3 at x = (i + 1) / NSTEPS)."""
    x = np.arange(1, SMOOTHSTEP_NSTEPS + 1) / SMOOTHSTEP_NSTEPS
    s = x * x * x * (x * (x * 6.0 - 15.0) + 10.0)
    return np.round(s * (1 << SMOOTHSTEP_BFP)).astype(np.int64)


H_STEPS = _smootherstep_steps()


def small_classes(quantum16: bool) -> list[int]:
    """jemalloc's small size classes with 4 KB pages, bytes (reference §3.3):
    8-byte quantum (Redis's bundled build) or 16-byte (distribution builds)."""
    if quantum16:
        classes = [8] + list(range(16, 129, 16))
    else:  # 8-byte steps to 64, then 16-byte steps to 128
        classes = list(range(8, 65, 8)) + list(range(80, 129, 16))
    b = 128
    while classes[-1] < SMALL_MAX:
        step_ = b // 4
        classes += [b + k * step_ for k in range(1, 5)]
        b *= 2
    return [c for c in classes if c <= SMALL_MAX]


def slab_pages(reg_size: int) -> int:
    """Pages per slab: the least common multiple of the page and the region size
    (``sc.c:slab_size``)."""
    pages = 1
    while (pages * PAGE) % reg_size:
        pages += 1
    return pages


@leaf
def bin_index(c, quantum16):
    """The bin of size class ``c`` (a ``jemalloc.size_class`` ≤ ``SMALL_MAX``)."""
    if c <= 128:
        if quantum16:
            return 0 if c == 8 else c // 16
        return c // 8 - 1 if c <= 64 else 7 + (c - 64) // 16
    low = 9 if quantum16 else 12
    b = 128
    g = 0
    while b * 2 < c:
        b *= 2
        g += 1
    return low + 4 * g + (c - b) // (b >> 2) - 1


# ---- slabs -------------------------------------------------------------------------


@step
def _new_slab(w, b):
    """A fresh slab for bin b (the lowest free id, or a new one); -1 if the arena
    is out of slab ids. Its pages come from the dirty ones first."""
    I = w.I
    if I[AL_FREE_IDS] > 0:  # pop the min-heap of free ids
        s = w.sb_free_ids[0]
        I[AL_FREE_IDS] -= 1
        n = I[AL_FREE_IDS]
        last = w.sb_free_ids[n]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and w.sb_free_ids[c + 1] < w.sb_free_ids[c]:
                c += 1
            if w.sb_free_ids[c] >= last:
                break
            w.sb_free_ids[i] = w.sb_free_ids[c]
            i = c
        if n > 0:
            w.sb_free_ids[i] = last
    elif I[AL_SLABS_MADE] < I[AL_MAX_SLABS]:
        s = I[AL_SLABS_MADE]
        I[AL_SLABS_MADE] += 1
    else:
        I[AL_OVERRUN] = 1
        return -1
    if I[AL_MAX_SLABS] - I[AL_SLABS_MADE] + I[AL_FREE_IDS] < I[AL_SPARE_LOW]:
        I[AL_LOW] = 1  # Python grows the arrays at the next safe point
        I[RNG_LOW] = 1  # ... which the kernel reaches by the check for refills
    _take_pages(w, w.al_slab_pages[b])
    w.sb_bin[s] = b
    w.sb_nfree[s] = w.al_nregs[b]
    w.al_curslabs[b] += 1
    return s


@leaf
def _take_pages(w, pages):
    """A new slab or extent of ``pages`` pages: dirty ones are reused first."""
    I = w.I
    I[AL_PAGES_DIRTY] -= min(pages, I[AL_PAGES_DIRTY])
    I[AL_PAGES_ACTIVE] += pages
    I[AL_EXTENTS] += 1


@leaf
def _give_pages(w, pages):
    """A slab or extent of ``pages`` pages is freed: they turn dirty."""
    I = w.I
    I[AL_PAGES_ACTIVE] -= pages
    I[AL_PAGES_DIRTY] += pages
    I[AL_EXTENTS] -= 1
    if I[AL_DECAY_MS] == 0:  # dirty_decay_ms 0: purged at once
        I[AL_PAGES_PURGED] += I[AL_PAGES_DIRTY]
        I[AL_PAGES_DIRTY] = 0


@step
def _release_slab(w, s):
    """Slab s is empty: its pages turn dirty, its id is free for the next slab."""
    I = w.I
    b = w.sb_bin[s]
    _give_pages(w, w.al_slab_pages[b])
    w.al_curslabs[b] -= 1
    w.sb_bin[s] = -1
    i = I[AL_FREE_IDS]  # push onto the min-heap of free ids
    I[AL_FREE_IDS] += 1
    while i > 0:
        p = (i - 1) // 2
        if w.sb_free_ids[p] <= s:
            break
        w.sb_free_ids[i] = w.sb_free_ids[p]
        i = p
    w.sb_free_ids[i] = s


# ---- malloc and free -------------------------------------------------------------------


@hot_leaf
def _slabcur(w, b):
    """Bin b's slabcur with a free region: a full one leaves for the full list
    and the lowest non-full slab, or else a fresh one, takes its place
    (``arena_bin_refill_slabcur_no_fresh_slab``, ``arena_slab_alloc``). -1 if
    out of slab ids."""
    s = w.al_cur[b]
    if s < 0 or w.sb_nfree[s] == 0:
        s = nonfull.lowest(w, b)
        if s >= 0:
            nonfull.remove(w, b, s)
        else:
            s = _new_slab(w, b)
            if s < 0:
                return -1
        w.al_cur[b] = s
    return s


@leaf
def _take_regions(w, b, s, n):
    """``n`` regions of slab s of bin b are handed out."""
    w.sb_nfree[s] -= n
    w.al_curregs[b] += n
    w.I[AL_ALLOCATED] += n * w.al_reg_size[b]
    w.I[AL_DECAY_TICKS] += n


@step
def arena_malloc(w, b):
    """A region of bin b: returns its slab, or -1 if out of slab ids."""
    s = _slabcur(w, b)
    if s >= 0:
        _take_regions(w, b, s, 1)
    return s


@step
def arena_malloc_batch(w, b, most):
    """Up to ``most`` regions of bin b, all from one slab, which is then the
    bin's slabcur (a thread-cache fill: ``arena_slab_reg_alloc_batch``).
    Returns how many (0 only if out of slab ids)."""
    s = _slabcur(w, b)
    if s < 0:
        return 0
    n = min(most, w.sb_nfree[s])
    _take_regions(w, b, s, n)
    return n


@step
def arena_free(w, s):
    """Give back a region of slab s."""
    b = w.sb_bin[s]
    w.sb_nfree[s] += 1
    w.al_curregs[b] -= 1
    w.I[AL_ALLOCATED] -= w.al_reg_size[b]
    w.I[AL_DECAY_TICKS] += 1
    if w.sb_nfree[s] == w.al_nregs[b]:  # newly empty: dissociate it and give it back
        if w.al_cur[b] == s:
            w.al_cur[b] = -1
        elif w.al_nregs[b] > 1:
            nonfull.remove(w, b, s)
        _release_slab(w, s)
    elif w.sb_nfree[s] == 1 and w.al_cur[b] != s:
        # Newly non-full (a full slabcur just has room again): slabcur must stay
        # the lowest non-full slab.
        cur = w.al_cur[b]
        if cur > s:
            if w.sb_nfree[cur] > 0:
                nonfull.insert(w, b, cur)
            w.al_cur[b] = s
        else:
            nonfull.insert(w, b, s)


@leaf
def large_malloc(w, pages):
    """A large extent of ``pages`` pages of usable size (``src/large.c:large_malloc``),
    plus the build's cache-oblivious pad page (``usize + sz_large_pad``), which
    counts as active but not as allocated."""
    I = w.I
    _take_pages(w, pages + I[AL_LARGE_PAD])
    I[AL_ALLOCATED] += pages * PAGE
    I[AL_LARGE_LIVE] += 1
    I[AL_DECAY_TICKS] += 1
    return LARGE + pages


@leaf
def large_free(w, pages):
    """Free a large extent of ``pages`` pages and its pad: they turn dirty
    (``large_dalloc``)."""
    I = w.I
    _give_pages(w, pages + I[AL_LARGE_PAD])
    I[AL_ALLOCATED] -= pages * PAGE
    I[AL_LARGE_LIVE] -= 1
    I[AL_DECAY_TICKS] += 1


@leaf
def hold_extents(w, extents, pages, held_extents, held_pages):
    """Allocations placed outside the arena's own bookkeeping (the replication
    buffer's blocks) now take ``extents`` large extents of ``pages`` pages in
    all, where they took ``held_extents`` and ``held_pages``: the new ones take
    dirty pages first, the freed ones turn dirty and decay as any other."""
    I = w.I
    d = pages - held_pages
    if d > 0:
        I[AL_PAGES_DIRTY] -= min(d, I[AL_PAGES_DIRTY])
        I[AL_PAGES_ACTIVE] += d
    elif d < 0:
        I[AL_PAGES_ACTIVE] += d
        I[AL_PAGES_DIRTY] -= d
        if I[AL_DECAY_MS] == 0:  # dirty_decay_ms 0: purged at once
            I[AL_PAGES_PURGED] += I[AL_PAGES_DIRTY]
            I[AL_PAGES_DIRTY] = 0
    I[AL_EXTENTS] += extents - held_extents
    I[AL_DECAY_TICKS] += abs(extents - held_extents)  # a malloc or free each


@leaf
def small_bin(w, n):
    """The bin of a small request of ``n`` bytes (1 .. ``SMALL_MAX``): a table
    lookup, as jemalloc's ``sz_size2index_lookup``."""
    return w.al_bin_of8[(n + 7) >> 3]


@leaf
def large_pages(w, n):
    """Pages of the large size class of a request of ``n`` > ``SMALL_MAX`` bytes."""
    return size_class(n, w.I[Q16]) // PAGE


@leaf
def arena_zmalloc(w, n):
    """Allocate ``n`` bytes from the arena itself, past any thread cache
    (``mallocx(n, MALLOCX_TCACHE_NONE)``): a region of its size class, or a
    large extent of whole pages. Returns the handle (0 for ``n`` ≤ 0, or when
    out of slab ids)."""
    if n <= 0:
        return 0
    if n <= SMALL_MAX:
        b = small_bin(w, n)
        s = arena_malloc(w, b)
        return small_handle(b, s) if s >= 0 else 0
    return large_malloc(w, large_pages(w, n))


@leaf
def arena_zfree(w, h):
    """Free the allocation of handle ``h`` to the arena itself (0: nothing)."""
    if h >= LARGE:
        large_free(w, h - LARGE)
    elif h > 0:
        arena_free(w, handle_slab(h))


@leaf
def small_handle(b, s):
    """The handle of a region of slab ``s`` of bin ``b``."""
    return (b << SLAB_BITS) + s + 1


@leaf
def handle_slab(h):
    """The slab of a small region's handle."""
    return (h - 1) & SLAB_MASK


@leaf
def handle_bin(h):
    """The bin of a small region's handle."""
    return (h - 1) >> SLAB_BITS


@leaf
def pair(lo, hi):
    """Two handles in one int64 (``lo`` in the low 32 bits; ``hi`` must be a
    small region's, < 2^31, so the int64 stays positive)."""
    return lo | (hi << 32)


@leaf
def lo_handle(v):
    return v & HANDLE_MASK


@leaf
def hi_handle(v):
    return (v >> 32) & HANDLE_MASK


# ---- active defrag's side of jemalloc (Redis's patch) ----------------------------------


@leaf
def defrag_hint(w, s):
    """Whether a region of slab ``s`` is worth moving: ``je_get_defrag_hint``
    (Redis's patch to jemalloc, ``iget_defrag_hint``). Never from slabcur or a
    full slab; otherwise when the slab's regions in use, times the bin's
    non-full slabs, are at most 9/8 of the regions in use in them, that is when
    the slab is used at most 12.5 % above the non-full slabs' average.

    The averages are jemalloc's arithmetic as written: ``nonfull_slabs`` does
    not count slabcur, yet slabcur is taken out of both sums again, so the
    comparison is against (regions in the non-full set's slabs − one slab's
    worth) / (its slabs − 1). A negative sum is an unsigned wrap-around in C, a huge
    number: the hint is then 1."""
    b = w.sb_bin[s]
    cur = w.al_cur[b]
    nfree = w.sb_nfree[s]
    if s == cur or nfree == 0:
        return False
    nregs = w.al_nregs[b]
    slabs = w.al_nonfull[b]
    full = w.al_curslabs[b] - slabs  # slabcur among them
    regs = w.al_curregs[b] - full * nregs
    if cur >= 0:
        regs -= nregs - w.sb_nfree[cur]
        slabs -= 1
    if regs < 0:
        return True
    return (nregs - nfree) * slabs <= regs + regs // 8


@leaf
def defrag_move(w, h):
    """``activeDefragAlloc`` for the allocation of handle ``h``: when the hint
    says so, a new region of the same class (``zmalloc_no_tcache``: slabcur or
    the lowest non-full slab) and the old one freed (``zfree_no_tcache``), both
    past the thread cache. Returns the new handle, or 0 when it stays (a large
    extent never moves: the hint is for slabs only)."""
    if h <= 0 or h >= LARGE:
        return 0
    s = handle_slab(h)
    if not defrag_hint(w, s):
        return 0
    b = handle_bin(h)
    s2 = arena_malloc(w, b)
    if s2 < 0:
        return 0
    arena_free(w, s)
    return small_handle(b, s2)


# ---- purging ---------------------------------------------------------------------------


@leaf
def purge_all(w):
    """``MEMORY PURGE`` (``arena.<i>.purge``): every dirty page goes back to the
    OS; returns how many."""
    I = w.I
    pages = I[AL_PAGES_DIRTY]
    I[AL_PAGES_DIRTY] = 0
    I[AL_PAGES_PURGED] += pages
    return pages


@step
def decay_advance(w, epoch):
    """Advance the decay to epoch ``epoch`` (time / (dirty_decay_ms / NSTEPS)):
    shift the backlog of pages dirtied per epoch, the pages dirtied since the
    last advance joining it as the newest, and set the limit the smootherstep
    allows (``decay_maybe_advance_epoch``, ``decay_backlog_npages_limit``).
    Returns whether the epoch moved."""
    I = w.I
    advance = epoch - I[AL_DECAY_EPOCH]
    if advance <= 0:
        return False
    I[AL_DECAY_EPOCH] = epoch
    current = I[AL_PAGES_DIRTY]
    last = SMOOTHSTEP_NSTEPS - 1
    if advance >= SMOOTHSTEP_NSTEPS:
        for i in range(last):
            w.al_backlog[i] = 0
    else:
        for i in range(SMOOTHSTEP_NSTEPS - advance):
            w.al_backlog[i] = w.al_backlog[i + advance]
        for i in range(SMOOTHSTEP_NSTEPS - advance, last):
            w.al_backlog[i] = 0
    unpurged = I[AL_DECAY_UNPURGED]
    w.al_backlog[last] = current - unpurged if current > unpurged else 0
    total = 0
    for i in range(SMOOTHSTEP_NSTEPS):
        total += w.al_backlog[i] * w.al_h_steps[i]
    limit = total >> SMOOTHSTEP_BFP
    I[AL_DECAY_LIMIT] = limit
    I[AL_DECAY_UNPURGED] = max(limit, current)
    return True


@leaf
def decay_purge(w):
    """Purge the dirty pages above the decay's limit (``pac_decay_try_purge``):
    they leave RSS. Returns how many."""
    I = w.I
    current = I[AL_PAGES_DIRTY]
    limit = I[AL_DECAY_LIMIT]
    if current <= limit:
        return 0
    I[AL_PAGES_DIRTY] = limit
    I[AL_PAGES_PURGED] += current - limit
    return current - limit


@step
def arena_decay(w, epoch):
    """jemalloc's decay at epoch ``epoch`` as its background thread runs it
    (``arena_decay`` with purging always): advance, then purge to the limit
    (``src/decay.c``, ``src/arena.c:arena_decay_try_purge``). Returns the pages
    purged."""
    decay_advance(w, epoch)
    return decay_purge(w)


@leaf
def npurge_after(w, epochs):
    """Pages the decay would purge ``epochs`` epochs from now, with nothing more
    dirtied (``decay_npurge_after_interval``)."""
    total = 0
    for i in range(SMOOTHSTEP_NSTEPS):
        h = w.al_h_steps[i]
        if i >= epochs:
            h -= w.al_h_steps[i - epochs]
        total += w.al_backlog[i] * h
    return total >> SMOOTHSTEP_BFP


@leaf
def bg_sleep(w, epoch_s):
    """How long the background thread sleeps after a run, s
    (``decay_ns_until_purge`` with ``ARENA_DEFERRED_PURGE_NPAGES_THRESHOLD``
    pages, at least ``BACKGROUND_THREAD_MIN_INTERVAL_NS``): until about that many
    would be purgeable, found by bisection over whole epochs; the whole decay
    time while the dirty pages are that few; forever with none."""
    I = w.I
    current = I[AL_PAGES_DIRTY]
    if current == 0:
        empty = True
        for i in range(SMOOTHSTEP_NSTEPS):
            if w.al_backlog[i] > 0:
                empty = False
        if empty:
            return np.inf
    if current <= BG_NPAGES_THRESHOLD:
        return max(epoch_s * SMOOTHSTEP_NSTEPS, BG_MIN_INTERVAL)
    lb = 2
    ub = SMOOTHSTEP_NSTEPS
    n_lb = npurge_after(w, lb)
    if n_lb > BG_NPAGES_THRESHOLD:
        return max(epoch_s * lb, BG_MIN_INTERVAL)
    n_ub = npurge_after(w, ub)
    if n_ub < BG_NPAGES_THRESHOLD:
        return max(epoch_s * ub, BG_MIN_INTERVAL)
    while n_lb + BG_NPAGES_THRESHOLD < n_ub and lb + 2 < ub:
        target = (lb + ub) // 2
        n = npurge_after(w, target)
        if n > BG_NPAGES_THRESHOLD:
            ub = target
            n_ub = n
        else:
            lb = target
            n_lb = n
    return max(epoch_s * ((ub + lb) // 2), BG_MIN_INTERVAL)


@leaf
def decay_cron(w):
    """jemalloc's decay between two serverCron ticks. The main thread's decay
    ticker fires after ``DECAY_NTICKS_PER_UPDATE`` arena operations and advances
    the epoch (the pages dirtied since join the backlog) without purging, as
    an application thread does while the background thread runs; if the
    thread sleeps for good, or the new pages would give it more than
    ``BG_NPAGES_THRESHOLD`` to purge before it wakes (and it is not due within
    ``BG_MIN_INTERVAL``), it is woken (``arena_maybe_do_deferred_work``). When
    the thread runs it advances the epoch, purges to the limit and sleeps for
    ``bg_sleep`` (``background_work_sleep_once``). Both are looked at on the
    cron's ticks (100 ms at hz 10, the thread's shortest sleep)."""
    I = w.I
    F = w.F
    ms = I[AL_DECAY_MS]
    if ms <= 0:
        return
    t = F[T]
    epoch_s = ms / 1000.0 / SMOOTHSTEP_NSTEPS
    epoch = np.int64(t / epoch_s)
    if F[AL_BG_WAKE] == np.inf and I[AL_PAGES_DIRTY] > I[AL_DECAY_UNPURGED]:
        # A free made deferred work while the thread slept for good: it is
        # signalled (arena_background_thread_inactivity_check, 5.3).
        F[AL_BG_WAKE] = t
    if I[AL_DECAY_TICKS] >= DECAY_NTICKS_PER_UPDATE:
        I[AL_DECAY_TICKS] = 0
        if decay_advance(w, epoch):
            wake = F[AL_BG_WAKE]
            remaining = wake - epoch * epoch_s
            if wake == np.inf:
                F[AL_BG_WAKE] = t
            elif remaining >= BG_MIN_INTERVAL:
                n_epoch = np.int64(remaining / epoch_s)
                new = w.al_backlog[SMOOTHSTEP_NSTEPS - 1]
                if n_epoch >= SMOOTHSTEP_NSTEPS:
                    due = new
                else:
                    due = (new * (w.al_h_steps[SMOOTHSTEP_NSTEPS - 1]
                                  - w.al_h_steps[SMOOTHSTEP_NSTEPS - 1 - n_epoch])) \
                        >> SMOOTHSTEP_BFP
                if due > BG_NPAGES_THRESHOLD:
                    F[AL_BG_WAKE] = t
    if t >= F[AL_BG_WAKE]:
        arena_decay(w, epoch)
        F[AL_BG_WAKE] = t + bg_sleep(w, epoch_s)


# ---- tables and configuration (Python) ---------------------------------------------------

INTERNAL_REGIONS = {
    8: 700, 16: 11900, 32: 5000, 48: 700, 64: 384, 80: 200, 96: 100, 112: 100, 128: 640,
    160: 100, 192: 64, 224: 100, 256: 128, 320: 65, 384: 32, 448: 64, 512: 10, 640: 32,
    768: 16, 1024: 10, 1280: 16, 1536: 10, 1792: 16, 2048: 10, 2560: 10, 3072: 10,
    4096: 10, 8192: 10,
}
"""Regions in use per small class in an empty server, measured: Debian's 7.0.15
(jemalloc 5.3, 16-B quantum) at startup, ``MEMORY MALLOC-STATS`` ``curregs``
(Redis's own objects and the thread cache's stock; 990,432 B). Used for every
version and quantum (a class missing from the 8-B quantum's list takes the next)."""
INTERNAL_LARGE = (16384, 16384, 16384, 20480, 28672, 65536, 81920, 81920, 131072, 327680)
"""Large extents of an empty server, bytes (same measurement; 786,432 B)."""
STARTUP_RESIDENT = 4_591_616
"""jemalloc ``stats.resident`` of that empty server, bytes: its active pages
(1,921,024 B) plus metadata; the model's metadata base is what is left once its
own startup pages and ``EXTENT_META`` per extent are counted."""


def bins_table(quantum16: bool) -> dict[str, np.ndarray]:
    """The ``al`` rows: each small class's region size, regions and pages per slab."""
    classes = small_classes(quantum16)
    pages = [slab_pages(c) for c in classes]
    return {"reg_size": np.array(classes, np.int64), "slab_pages": np.array(pages, np.int64),
            "nregs": np.array([p * PAGE // c for p, c in zip(pages, classes, strict=True)],
                              np.int64)}


def slabs_for(sizes: np.ndarray, counts: np.ndarray | None, quantum16: bool) -> int:
    """Enough slabs for ``counts`` allocations of each of ``sizes`` bytes
    (requests, rounded here) if they all lived at once: per bin, full slabs plus
    one partly used."""
    tab = bins_table(quantum16)
    classes = tab["reg_size"]
    sizes = np.asarray(sizes, np.int64)
    counts = np.ones(len(sizes), np.int64) if counts is None else np.asarray(counts, np.int64)
    per_bin = np.zeros(len(classes), np.int64)
    for s, n in zip(sizes.tolist(), counts.tolist(), strict=True):
        c = size_class(s, quantum16)
        if 0 < c <= SMALL_MAX:
            per_bin[int(np.searchsorted(classes, c))] += n
    return int(np.sum(-(-per_bin // tab["nregs"]) + (per_bin > 0)))


def bins(quantum16: bool) -> dict[str, np.ndarray]:
    """Every ``al`` field of an empty arena that this module keeps
    (``tcache.bins`` adds the thread cache's, ``nonfull.bins`` the non-full
    sets' counts)."""
    tab = bins_table(quantum16)
    nb = len(tab["reg_size"])
    by8 = np.array([bin_index(size_class(max(8 * i, 1), quantum16), quantum16)
                    for i in range(SMALL_MAX // 8 + 1)], np.int64)
    return dict(tab, bin_of8=by8, cur=np.full(nb, -1, np.int64),
                curregs=np.zeros(nb, np.int64), curslabs=np.zeros(nb, np.int64),
                backlog=np.zeros(SMOOTHSTEP_NSTEPS, np.int64), h_steps=H_STEPS.copy())


def slab_arrays(n: int) -> dict[str, np.ndarray]:
    """Every ``sb`` field this module keeps for ``n`` free slab ids, the row
    fields stored by rows (``state.row_table``: a slab's bin and free count
    share 16 bytes, so a flush's region costs one miss); ``nonfull.slab_arrays``
    adds the non-full bit sets."""
    rows = row_table("sb", {"bin": np.broadcast_to(np.int64(-1), (n,)),
                            "nfree": np.broadcast_to(np.int64(0), (n,))})
    return dict(rows, free_ids=np.zeros(n, np.int64))


def bin_of(a, size: int) -> int:
    """The bin of an allocation of ``size`` bytes (Python)."""
    return int(np.searchsorted(np.asarray(a.al_reg_size), size_class(size, bool(a.I[Q16]))))


def stats(a) -> dict[str, int]:
    """jemalloc's ``stats.allocated`` and ``stats.active`` (bytes) of the tracked
    allocations, the dirty pages, and the slabs in use and full (Python)."""
    n = int(a.I[AL_SLABS_MADE])
    used = np.asarray(a.sb_bin[:n]) >= 0
    nfree = np.asarray(a.sb_nfree[:n])[used]
    return {
        "allocated": int(a.I[AL_ALLOCATED]),
        "active": int(a.I[AL_PAGES_ACTIVE]) * PAGE,
        "dirty": int(a.I[AL_PAGES_DIRTY]) * PAGE,
        "slabs": int(used.sum()),
        "slabs_full": int((nfree == 0).sum()),
    }


def slab_table(a) -> dict[str, np.ndarray]:
    """Per small class with slabs in use: region size, regions per slab, regions
    in use, slabs in use, full and partly used slabs (``MEMORY MALLOC-STATS``'
    bins table: ``curregs``, ``curslabs``, ``curslabs - nonfull_slabs``,
    ``nonfull_slabs``), and of the regions in use those the thread cache holds
    (jemalloc's ``curregs`` counts them: the bin handed them out)."""
    n = int(a.I[AL_SLABS_MADE])
    sb = np.asarray(a.sb_bin[:n])
    used = sb >= 0
    nb = len(a.al_reg_size)
    full = np.bincount(sb[used], weights=(np.asarray(a.sb_nfree[:n])[used] == 0),
                       minlength=nb).astype(np.int64)
    slabs = np.bincount(sb[used], minlength=nb).astype(np.int64)
    keep = slabs > 0
    return {"size": np.asarray(a.al_reg_size)[keep], "regs": np.asarray(a.al_nregs)[keep],
            "curregs": np.asarray(a.al_curregs)[keep], "curslabs": slabs[keep],
            "full": full[keep], "nonfull": (slabs - full)[keep],
            "tcached": np.asarray(a.al_tc_n)[:nb][keep]}


def slab_utilisation(a) -> np.ndarray:
    """Per slab in use: the share of its regions in use, 0 < u ≤ 1."""
    n = int(a.I[AL_SLABS_MADE])
    sb = np.asarray(a.sb_bin[:n])
    used = sb >= 0
    nregs = np.asarray(a.al_nregs)[sb[used]]
    return (nregs - np.asarray(a.sb_nfree[:n])[used]) / nregs


def grow(world, extra: int):
    """The same world with room for ``extra`` more slab ids (the kernel ran low,
    ``AL_LOW``); the per-slab arrays are copied into larger ones. The caller must
    ``pack`` the new world before the kernel runs again."""
    n = len(world.sb_bin)
    extra = min(extra, MAX_SLAB_IDS - n)
    if extra <= 0:
        raise RuntimeError(f"the arena used all {MAX_SLAB_IDS:,} slab ids a handle can name "
                           "(model/arena.py, SLAB_BITS): the run needs fewer keys")
    # The bit sets' levels move with the number of ids: built anew, not copied.
    fresh = {**slab_arrays(n + extra), **nonfull.slab_arrays(
        n + extra, len(world.al_cur),
        nonfull.build(world.sb_bin, world.sb_nfree, world.al_cur, n + extra))}
    for f, arr in fresh.items():
        if f != "nonfull_bits":
            arr[:n] = getattr(world, f"sb_{f}")
    world.I[AL_MAX_SLABS] = n + extra
    world.I[AL_LOW] = 0
    return world._replace(**{f"sb_{f}": v for f, v in fresh.items()})


def configure(b) -> None:
    """The bins of the scenario's quantum, ``dirty_decay_ms``, and room for the slabs
    the collections, the scenario's populate events, the preload and the run's
    spare will need (``slabs_for``, from the earlier steps' ``b.slab_demand``:
    ``bigkeys``, ``admin``, ``preload``; the order does not matter). Needs
    ``conns`` and ``max_pipeline``."""
    from redsim.model import state as S

    q16 = b.scenario.jemalloc.quantum == 16
    demand = b.slab_demand or [(np.zeros(0, np.int64), np.zeros(0, np.int64))]
    sizes = np.concatenate([s for s, _ in demand])
    counts = np.concatenate([c for _, c in demand])
    internal = slabs_for(np.array(list(INTERNAL_REGIONS)), np.array(
        list(INTERNAL_REGIONS.values())), q16)
    spare = 5 * b.size.conns * b.size.max_pipeline + 4096
    n = internal + slabs_for(sizes, counts, q16) + 2 * spare
    if n > MAX_SLAB_IDS:
        raise ValueError(
            f"the keyspace and clients of this scenario need ~{n:,} jemalloc slabs, more "
            f"than the model's {MAX_SLAB_IDS:,} (model/arena.py, SLAB_BITS): fewer keys, "
            "or larger values per key, would fit")
    b.fill("al", **bins(q16))
    b.fill("sb", **slab_arrays(n))
    b.size.slab_ids = n  # nonfull.configure lays its bit sets over them
    b.size.small_bins = len(small_classes(q16))
    b.I[S.AL_MAX_SLABS] = n
    b.I[S.AL_SPARE_LOW] = spare
    b.I[S.AL_DECAY_MS] = b.scenario.engine.allocator_dirty_decay_ms
    b.I[S.AL_LARGE_PAD] = 1 if b.scenario.jemalloc.cache_oblivious else 0


def start(w, b) -> None:
    """Redis's own allocations at startup (``INTERNAL_REGIONS``, ``INTERNAL_LARGE``),
    made before any key, so that they pin their slabs as in Redis."""
    sizes = np.repeat(np.array(list(INTERNAL_REGIONS), np.int64),
                      list(INTERNAL_REGIONS.values()))
    startup_allocs(pack(w), np.concatenate([sizes, np.array(INTERNAL_LARGE, np.int64)]))


@entry
def startup_allocs(world, sizes):
    """Allocate ``sizes`` (bytes each), keeping no handle: allocations that live
    as long as the server. Past the thread cache: ``INTERNAL_REGIONS`` was
    measured with the thread cache's stock in it, and the cache starts empty."""
    w = as_world(world)
    for i in range(len(sizes)):
        arena_zmalloc(w, sizes[i])
