"""jemalloc's small-object arena: bins, slabs, regions, and the pages they pin.

Follows jemalloc 5.3 (7.x's bundled version; 6.2's 5.1 places small objects
the same way): ``src/arena.c:arena_bin_malloc_no_fresh_slab`` and
``src/arena.c:arena_slab_alloc`` for an allocation,
``src/arena.c:arena_dalloc_bin_locked_step``, ``src/arena.c:arena_bin_lower_slab``
and ``src/arena.c:arena_dissociate_bin_slab`` for a free; slab geometry from
``src/sc.c:slab_size``; reference §3.3.

What it keeps, per small size class (a *bin*): the slab it allocates from
(``slabcur``) and a heap of its other non-full slabs; per slab, which regions
are in use (a bitmap, lowest free region first, as jemalloc's ``bitmap_sfu``).

- malloc: from ``slabcur`` while it has a free region; when it is full, the
  lowest non-full slab becomes ``slabcur``; when there is none, a fresh slab.
- free: the region goes back to its slab. A full slab that gets a free region
  becomes ``slabcur`` if it is lower than the current one (jemalloc keeps
  ``slabcur`` the lowest non-full slab), else joins the heap. A slab whose
  last region is freed goes back to the arena: its pages stay resident as
  *dirty* pages until purged. So a slab with one live region pins all its
  pages: deleting every other key empties no slab.
- Slab order: jemalloc orders slabs by serial number, then address
  (``edata_snad_comp``); here a slab's id stands for both: ids are given
  lowest free first, so an older (lower) slab is always preferred, as in
  jemalloc. The non-full heap is a pairing heap, as jemalloc's ``ph.h``.
- Pages: a fresh slab takes dirty pages first (jemalloc reuses its dirty
  extents before mapping new ones), then new ones. ``active`` pages are those
  of slabs in use, ``dirty`` those of emptied slabs not yet purged;
  ``resident`` = active + dirty. ``purge`` returns every dirty page
  (``MEMORY PURGE``); ``arena_decay`` returns them gradually, as jemalloc's
  decay does (``dirty_decay_ms``, 10 s by default; Redis runs jemalloc's
  background thread, ``jemalloc-bg-thread yes``): the pages dirtied in one
  epoch (a 200th of the decay time) may stay ``S(1 - k/200)`` of themselves
  ``k`` epochs later, ``S`` the smootherstep, and the excess is purged when
  an epoch passes (``src/decay.c``, ``src/arena.c:arena_decay_try_purge``).
  Purged pages leave RSS at once: 7.x's jemalloc 5.3 has ``muzzy_decay_ms``
  0, so nothing lingers as lazily freed (``MADV_FREE``) pages. Deviation:
  6.2's jemalloc 5.1 decays muzzy pages over 10 s too, which keep counting
  in RSS until the kernel reclaims them; not modelled.

This is the first part of issue #18: the arena is not wired into the
keyspace yet. Deviations (stated for when it is): no thread cache (Redis's
main thread does every allocation and its tcache only delays which region a
free returns to, by at most the cache's few entries per class); extents are
not split or coalesced by address: a freed slab's pages are a count of dirty
pages any later slab can take, whatever its size; no large (> 14 KB)
allocations yet; no arena metadata pages.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from redsim.model.jit import leaf, step

PAGE = 4096
SMALL_MAX = 14336
"""The largest small size class with 4 KB pages (``SC_SMALL_MAXCLASS``)."""
MAX_REGS = 512
"""Most regions in one slab (the 8-byte class: one page of 8-byte regions)."""
SLAB_WORDS = MAX_REGS // 64

SMOOTHSTEP_NSTEPS = 200
SMOOTHSTEP_BFP = 24


def _smootherstep_steps() -> np.ndarray:
    """``h_steps``: the share of a decay interval's dirty pages still allowed
    ``NSTEPS - 1 - i`` epochs later, in 24-bit fixed point (jemalloc's default
    ``smoother`` step, 6x^5 - 15x^4 + 10x^3 at x = (i + 1) / NSTEPS)."""
    x = np.arange(1, SMOOTHSTEP_NSTEPS + 1) / SMOOTHSTEP_NSTEPS
    s = x * x * x * (x * (x * 6.0 - 15.0) + 10.0)
    return np.round(s * (1 << SMOOTHSTEP_BFP)).astype(np.int64)


H_STEPS = _smootherstep_steps()

Arena = namedtuple("Arena", [
    # per bin (small size class)
    "reg_size", "nregs", "slab_pages",  # geometry
    "cur",  # slabcur, -1 if none
    "root",  # root of the pairing heap of its other non-full slabs, -1 if empty
    # per slab
    "bin",  # its bin, -1 if the slab is free
    "nfree",  # free regions
    "child", "next", "prev",  # pairing-heap links (prev: parent or left sibling)
    "map",  # SLAB_WORDS words per slab: bit r set = region r in use
    "free_ids",  # min-heap of free slab ids (the lowest is reused first)
    # dirty-page decay: pages dirtied per epoch (oldest first), and h_steps
    "backlog", "h_steps",
    # scalars: slabs made so far (ids 0..n-1), free ids, pages, allocated bytes,
    # the decay's last epoch, its nunpurged, pages purged so far
    "n",
])
(N_SLABS, N_FREE_IDS, PAGES_ACTIVE, PAGES_DIRTY, ALLOCATED, DECAY_EPOCH, DECAY_UNPURGED,
 PAGES_PURGED, N_SCALARS) = range(9)


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


def new_arena(quantum16: bool, max_slabs: int) -> Arena:
    """An empty arena with room for ``max_slabs`` slabs."""
    classes = small_classes(quantum16)
    pages = [slab_pages(c) for c in classes]
    nb = len(classes)
    return Arena(
        reg_size=np.array(classes, np.int64), slab_pages=np.array(pages, np.int64),
        nregs=np.array([p * PAGE // c for p, c in zip(pages, classes, strict=True)], np.int64),
        cur=np.full(nb, -1, np.int64), root=np.full(nb, -1, np.int64),
        bin=np.full(max_slabs, -1, np.int64), nfree=np.zeros(max_slabs, np.int64),
        child=np.full(max_slabs, -1, np.int64), next=np.full(max_slabs, -1, np.int64),
        prev=np.full(max_slabs, -1, np.int64), map=np.zeros(max_slabs * SLAB_WORDS, np.int64),
        free_ids=np.zeros(max_slabs, np.int64),
        backlog=np.zeros(SMOOTHSTEP_NSTEPS, np.int64), h_steps=H_STEPS.copy(),
        n=np.zeros(N_SCALARS, np.int64))


def bin_of(a: Arena, size: int) -> int:
    """The bin (small size class index) of an allocation of ``size`` bytes."""
    return int(np.searchsorted(a.reg_size, size))


# ---- the pairing heap of a bin's non-full slabs (jemalloc's ph.h) ---------------


@leaf
def _meld(a, x, y):
    """One heap from roots x and y (either may be -1): the lower id on top."""
    if x < 0:
        return y
    if y < 0:
        return x
    if y < x:
        x, y = y, x
    c = a.child[x]
    a.next[y] = c
    if c >= 0:
        a.prev[c] = y
    a.prev[y] = x
    a.child[x] = y
    return x


@step
def _merge_pairs(a, first):
    """The heap made of sibling list ``first`` (a removed root's children):
    meld pairs left to right, then the results right to left."""
    acc = -1
    x = first
    while x >= 0:
        y = a.next[x]
        nxt = a.next[y] if y >= 0 else -1
        a.next[x] = -1
        a.prev[x] = -1
        if y >= 0:
            a.next[y] = -1
            a.prev[y] = -1
        m = _meld(a, x, y)
        a.next[m] = acc  # a reversed list of the melded pairs
        acc = m
        x = nxt
    root = -1
    while acc >= 0:
        nxt = a.next[acc]
        a.next[acc] = -1
        root = _meld(a, root, acc)
        acc = nxt
    if root >= 0:
        a.prev[root] = -1
    return root


@leaf
def _unlink(a, s):
    a.child[s] = -1
    a.next[s] = -1
    a.prev[s] = -1


@step
def heap_remove(a, b, s):
    """Take slab s out of bin b's heap of non-full slabs."""
    if a.root[b] == s:
        a.root[b] = _merge_pairs(a, a.child[s])
    else:
        p = a.prev[s]
        nxt = a.next[s]
        if a.child[p] == s:
            a.child[p] = nxt
        else:
            a.next[p] = nxt
        if nxt >= 0:
            a.prev[nxt] = p
        a.root[b] = _meld(a, a.root[b], _merge_pairs(a, a.child[s]))
    _unlink(a, s)


@leaf
def heap_insert(a, b, s):
    _unlink(a, s)
    a.root[b] = _meld(a, a.root[b], s)


# ---- slabs -------------------------------------------------------------------------


@step
def _new_slab(a, b):
    """A fresh slab for bin b (the lowest free id, or a new one); -1 if the arena
    is out of slab ids. Its pages come from the dirty ones first."""
    n = a.n
    if n[N_FREE_IDS] > 0:  # pop the min-heap of free ids
        s = a.free_ids[0]
        n[N_FREE_IDS] -= 1
        last = a.free_ids[n[N_FREE_IDS]]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n[N_FREE_IDS]:
                break
            if c + 1 < n[N_FREE_IDS] and a.free_ids[c + 1] < a.free_ids[c]:
                c += 1
            if a.free_ids[c] >= last:
                break
            a.free_ids[i] = a.free_ids[c]
            i = c
        if n[N_FREE_IDS] > 0:
            a.free_ids[i] = last
    elif n[N_SLABS] < len(a.bin):
        s = n[N_SLABS]
        n[N_SLABS] += 1
    else:
        return -1
    pages = a.slab_pages[b]
    n[PAGES_DIRTY] -= min(pages, n[PAGES_DIRTY])
    n[PAGES_ACTIVE] += pages
    a.bin[s] = b
    a.nfree[s] = a.nregs[b]
    for k in range(SLAB_WORDS):
        a.map[s * SLAB_WORDS + k] = 0
    _unlink(a, s)
    return s


@step
def _release_slab(a, s):
    """Slab s is empty: its pages turn dirty, its id is free for the next slab."""
    n = a.n
    pages = a.slab_pages[a.bin[s]]
    n[PAGES_ACTIVE] -= pages
    n[PAGES_DIRTY] += pages
    a.bin[s] = -1
    i = n[N_FREE_IDS]  # push onto the min-heap of free ids
    n[N_FREE_IDS] += 1
    while i > 0:
        p = (i - 1) // 2
        if a.free_ids[p] <= s:
            break
        a.free_ids[i] = a.free_ids[p]
        i = p
    a.free_ids[i] = s


# ---- malloc and free -------------------------------------------------------------------


@step
def arena_malloc(a, b):
    """A region of bin b: ``slab * MAX_REGS + region``, or -1 if out of slabs."""
    s = a.cur[b]
    if s < 0 or a.nfree[s] == 0:  # slabcur full (it leaves for the full list)
        s = a.root[b]
        if s >= 0:
            heap_remove(a, b, s)
        else:
            s = _new_slab(a, b)
            if s < 0:
                return -1
        a.cur[b] = s
    base = s * SLAB_WORDS
    for k in range(SLAB_WORDS):  # lowest free region first
        word = a.map[base + k]
        if word != -1:
            r = 0
            while (word >> r) & 1:
                r += 1
            a.map[base + k] = word | (np.int64(1) << r)
            a.nfree[s] -= 1
            a.n[ALLOCATED] += a.reg_size[b]
            return s * MAX_REGS + k * 64 + r
    return -1  # unreachable: a slab with nfree > 0 has a free region


@step
def arena_free(a, handle):
    """Give back the region ``handle`` that ``arena_malloc`` returned."""
    s = handle // MAX_REGS
    r = handle % MAX_REGS
    b = a.bin[s]
    k = s * SLAB_WORDS + r // 64
    a.map[k] = a.map[k] & ~(np.int64(1) << (r % 64))
    a.nfree[s] += 1
    a.n[ALLOCATED] -= a.reg_size[b]
    if a.nfree[s] == a.nregs[b]:  # newly empty: dissociate it and give it back
        if a.cur[b] == s:
            a.cur[b] = -1
        elif a.nregs[b] > 1:
            heap_remove(a, b, s)
        _release_slab(a, s)
    elif a.nfree[s] == 1 and a.cur[b] != s:
        # Newly non-full (a full slabcur just has room again): slabcur must stay
        # the lowest non-full slab.
        cur = a.cur[b]
        if cur > s:
            if a.nfree[cur] > 0:
                heap_insert(a, b, cur)
            a.cur[b] = s
        else:
            heap_insert(a, b, s)


def purge(a: Arena) -> int:
    """``MEMORY PURGE``: every dirty page goes back to the OS; returns how many."""
    pages = int(a.n[PAGES_DIRTY])
    a.n[PAGES_DIRTY] = 0
    return pages


def stats(a: Arena) -> dict[str, int]:
    """jemalloc's ``stats.allocated``, ``stats.active`` and ``stats.resident``
    (bytes) for the small classes, and the slabs in use, full and empty."""
    used = a.bin[: int(a.n[N_SLABS])] >= 0
    nfree = a.nfree[: int(a.n[N_SLABS])][used]
    return {
        "allocated": int(a.n[ALLOCATED]),
        "active": int(a.n[PAGES_ACTIVE]) * PAGE,
        "resident": int(a.n[PAGES_ACTIVE] + a.n[PAGES_DIRTY]) * PAGE,
        "slabs": int(used.sum()),
        "slabs_full": int((nfree == 0).sum()),
    }


# ---- dirty-page decay (jemalloc's decay.c) ---------------------------------------------


def decay_epoch(t_s: float, dirty_decay_ms: int) -> int:
    """The decay epoch of time ``t_s``: jemalloc splits ``dirty_decay_ms`` into
    ``SMOOTHSTEP_NSTEPS`` epochs."""
    return int(t_s * 1000.0 * SMOOTHSTEP_NSTEPS // dirty_decay_ms)


@step
def arena_decay(a, epoch):
    """jemalloc's decay at epoch ``epoch`` (time / (dirty_decay_ms / NSTEPS)):
    advance the backlog of pages dirtied per epoch, and purge the dirty pages
    above what the smoothstep still allows (``decay_maybe_advance_epoch``,
    ``decay_backlog_npages_limit``, ``arena_decay_try_purge``). Returns the
    pages purged."""
    n = a.n
    advance = epoch - n[DECAY_EPOCH]
    if advance <= 0:
        return 0
    n[DECAY_EPOCH] = epoch
    current = n[PAGES_DIRTY]
    last = SMOOTHSTEP_NSTEPS - 1
    if advance >= SMOOTHSTEP_NSTEPS:
        for i in range(last):
            a.backlog[i] = 0
    else:
        for i in range(SMOOTHSTEP_NSTEPS - advance):
            a.backlog[i] = a.backlog[i + advance]
        for i in range(SMOOTHSTEP_NSTEPS - advance, last):
            a.backlog[i] = 0
    a.backlog[last] = current - n[DECAY_UNPURGED] if current > n[DECAY_UNPURGED] else 0
    total = 0
    for i in range(SMOOTHSTEP_NSTEPS):
        total += a.backlog[i] * a.h_steps[i]
    limit = total >> SMOOTHSTEP_BFP
    n[DECAY_UNPURGED] = max(limit, current)
    if current > limit:
        n[PAGES_DIRTY] = limit
        n[PAGES_PURGED] += current - limit
        return current - limit
    return 0
