"""jemalloc's thread cache (redsim/model/tcache.py, through model/zmalloc.py), by hand.

Each expectation is worked out in the comments from jemalloc 5.3's rules
(src/tcache.c, cache_bin.h, src/arena.c:arena_cache_bin_fill_small), with the
16-B quantum of Debian's 7.0.15. The 1,280-B class is the one used throughout:
16 regions in a 5-page slab, so ncached_max = 2 x 16 = 32 and a fill takes
32 >> 1 = 16 regions.
"""

from __future__ import annotations

import pytest

from redsim.model import arena as A
from redsim.model import state as S
from redsim.model import tcache as T
from redsim.model.zmalloc import new_arena, zfree, zmalloc

SIZE = 1100  # bytes: the 1,280-B class


def _arena(slabs=64, tcache=True):
    a = new_arena(True, slabs, tcache_on=tcache)
    return a, A.bin_of(a, 1280)


def _used(a, s):
    b = a.sb_bin[s]
    return int(a.al_nregs[b] - a.sb_nfree[s])


def test_ncached_max_is_twice_a_slab_within_20_and_200():
    # tcache_ncached_max_compute: 2 x nregs, even, clamped to [20, 200].
    a, _ = _arena()
    want = {8: 200,  # 512 regions a slab -> 1024 -> 200
            64: 128,  # 64 regions -> 128
            128: 64,  # 32 -> 64
            1280: 32,  # 16 -> 32
            2560: 20,  # 8 -> 16 -> at least 20
            14336: 20}  # 2 -> 4 -> 20
    for size, n in want.items():
        assert a.al_tc_max[A.bin_of(a, size)] == n
    # The large classes up to 32 KB (16, 20, 24, 28, 32 KB): 20 each, after the
    # 36 small ones.
    assert int(a.I[S.TC_NSMALL]) == 36 and int(a.I[S.TC_NBINS]) == 41
    assert list(a.al_tc_max[36:41]) == [20] * 5


def test_a_fill_takes_half_the_bin_from_slabcur_and_hands_the_lowest_out_first():
    a, b = _arena()
    h = zmalloc(a, SIZE)
    # The first malloc fills 16 regions, all of fresh slab 0, and takes one:
    # 15 cached, 16 regions in use from the bin's view (curregs counts the cache).
    assert A.handle_bin(h) == b and A.handle_slab(h) == 0
    assert int(a.al_tc_n[b]) == 15 and int(a.al_curregs[b]) == 16 and _used(a, 0) == 16
    assert int(a.I[S.AL_ALLOCATED]) == 16 * 1280
    # 16 more: the 15 cached, then a new fill of 16 from slab 1 (slab 0 is full).
    hs = [zmalloc(a, SIZE) for _ in range(16)]
    assert [A.handle_slab(x) for x in hs] == [0] * 15 + [1]
    assert int(a.al_tc_n[b]) == 15 and _used(a, 1) == 16


def test_a_free_is_reused_first_and_moves_no_slab_count():
    a, b = _arena()
    hs = [zmalloc(a, SIZE) for _ in range(48)]  # slabs 0, 1, 2 handed out whole
    assert int(a.al_tc_n[b]) == 0
    zfree(a, hs[20])  # a region of slab 1 goes onto the stack, not to its slab
    assert int(a.al_tc_n[b]) == 1 and _used(a, 1) == 16
    h = zmalloc(a, SIZE)
    assert A.handle_slab(h) == 1 and int(a.al_tc_n[b]) == 0
    # Last freed, first reused: slab 0's, then slab 2's region is freed; the next
    # two mallocs take slab 2's, then slab 0's.
    zfree(a, hs[3])
    zfree(a, hs[40])
    assert [A.handle_slab(zmalloc(a, SIZE)) for _ in range(2)] == [2, 0]


def test_a_full_bin_flushes_its_oldest_half_to_their_slabs():
    a, b = _arena()
    hs = [zmalloc(a, SIZE) for _ in range(64)]  # slabs 0..3 whole, cache empty
    # Free slab 0's 16 regions, then slab 1's 16: the stack is full (32).
    for h in hs[:32]:
        zfree(a, h)
    assert int(a.al_tc_n[b]) == 32 and _used(a, 0) == 16 and _used(a, 1) == 16
    # One more free (slab 2's): the oldest 16 (all of slab 0's) go back first,
    # slab 0 empties and its 5 pages turn dirty; 16 + 1 stay cached.
    zfree(a, hs[32])
    assert int(a.al_tc_n[b]) == 17
    assert a.sb_bin[0] == -1 and int(a.I[S.AL_PAGES_DIRTY]) == 5
    assert _used(a, 1) == 16 and _used(a, 2) == 16
    assert int(a.al_curregs[b]) == 64 - 16
    # What is left on the stack: slab 1's 16 under slab 2's one.
    top = b * T.TC_SLOTS
    assert [A.handle_slab(x) for x in a.al_tc_stack[top:top + 17]] == [1] * 16 + [2]


def test_the_gc_flushes_three_quarters_of_what_stayed_unused_and_halves_the_fills():
    a, b = _arena()
    hs = [zmalloc(a, SIZE) for _ in range(32)]  # slabs 0 and 1 whole
    for h in hs[:20]:
        zfree(a, h)  # 20 cached (slab 0's 16, then 4 of slab 1's)
    a.al_tc_low[b] = 8  # as if it had held at least 8 since the last visit
    a.I[S.TC_NEXT_GC] = b
    T.gc(a)
    # tcache_gc_small: nflush = 8 - 8 // 4 = 6, the 6 oldest (slab 0's), so
    # 14 stay; lg_fill_div 1 -> 2 (32 >> 3 = 4 >= 1); low_water = 14; next bin.
    assert int(a.al_tc_n[b]) == 14 and _used(a, 0) == 10
    assert int(a.al_tc_fill_div[b]) == 2 and int(a.al_tc_low[b]) == 14
    assert int(a.I[S.TC_NEXT_GC]) == b + 1
    # The next visit with nothing taken meanwhile: low 14 -> 14 - 3 = 11 flushed.
    a.I[S.TC_NEXT_GC] = b
    T.gc(a)
    assert int(a.al_tc_n[b]) == 3 and int(a.al_tc_fill_div[b]) == 3
    # Emptied and refilled since the last visit (low_water 0): fills double
    # again (lg_fill_div 3 -> 2), and the refilled flag is cleared.
    for _ in range(4):
        zmalloc(a, SIZE)  # 3 cached, then a fill of 32 >> 3 = 4
    assert int(a.al_tc_n[b]) == 3 and int(a.al_tc_low[b]) == 0 and a.al_tc_refilled[b] == 1
    a.I[S.TC_NEXT_GC] = b
    T.gc(a)
    assert int(a.al_tc_fill_div[b]) == 2 and a.al_tc_refilled[b] == 0
    assert int(a.al_tc_low[b]) == 3


def test_a_gc_event_every_64_kib_allocated_and_every_64_kib_freed():
    a, b = _arena()
    # 51 x 1,280 = 65,280 B < 65,536: no event; the 52nd passes the wait and
    # fires one (the GC visits bin 0, then the next is bin 1).
    hs = [zmalloc(a, SIZE) for _ in range(51)]
    assert int(a.I[S.TC_NEXT_GC]) == 0
    hs.append(zmalloc(a, SIZE))
    assert int(a.I[S.TC_NEXT_GC]) == 1
    assert int(a.I[S.TC_ALLOC_WAIT]) == T.GC_INCR_BYTES  # the excess is not carried
    # Frees have their own clock: 52 frees fire one more.
    for h in hs:
        zfree(a, h)
    assert int(a.I[S.TC_NEXT_GC]) == 2


def test_extents_up_to_32_kib_are_cached_and_larger_ones_are_not():
    a, _ = _arena()
    h = zmalloc(a, 20_000)  # the 20,480-B class: 5 pages, a new extent
    assert h == A.LARGE + 5 and int(a.I[S.AL_PAGES_ACTIVE]) == 5
    zfree(a, h)  # cached: its pages stay active, nothing dirty
    assert int(a.I[S.AL_PAGES_ACTIVE]) == 5 and int(a.I[S.AL_PAGES_DIRTY]) == 0
    assert zmalloc(a, 19_000) == h and int(a.I[S.AL_PAGES_ACTIVE]) == 5  # reused
    big = zmalloc(a, 40_000)  # 40,960 B: 10 pages, past tcache_max
    zfree(a, big)
    assert int(a.I[S.AL_PAGES_DIRTY]) == 10


def test_with_the_tcache_off_every_call_goes_to_the_slabs():
    a, b = _arena(tcache=False)
    hs = [zmalloc(a, SIZE) for _ in range(20)]
    assert [A.handle_slab(h) for h in hs] == [0] * 16 + [1] * 4
    assert int(a.al_tc_n[b]) == 0 and int(a.al_curregs[b]) == 20
    zfree(a, hs[0])
    assert _used(a, 0) == 15 and int(a.al_tc_n[b]) == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_books_balance_after_random_traffic(seed):
    # Whatever the sequence, the bin's curregs is the regions the program holds
    # plus the ones cached, and every slab's count is what the regions handed
    # out of it (held or cached) leave.
    import random

    rnd = random.Random(seed)
    a, b = _arena(slabs=512)
    held = []
    for _ in range(3000):
        if held and rnd.random() < 0.48:
            zfree(a, held.pop(rnd.randrange(len(held))))
        else:
            held.append(zmalloc(a, SIZE))
    n = int(a.al_tc_n[b])
    cached = list(a.al_tc_stack[b * T.TC_SLOTS: b * T.TC_SLOTS + n])
    assert int(a.al_curregs[b]) == len(held) + n
    per_slab = {}
    for h in held + cached:
        per_slab[A.handle_slab(h)] = per_slab.get(A.handle_slab(h), 0) + 1
    live = {s: _used(a, s) for s in range(int(a.I[S.AL_SLABS_MADE])) if a.sb_bin[s] >= 0}
    assert live == per_slab


def test_a_52_build_visits_a_bin_every_212_cached_calls():
    # jemalloc 5.2.1 (Redis 7.0's bundled build) and 5.1 (6.2's): one gc_ticker
    # for allocations and frees the cache serves, TCACHE_GC_INCR = 8192 / SC_NBINS
    # + 1; with the 8-B quantum SC_NBINS = 39 (8 classes 8-64, four per doubling
    # from 80 to 8,192, then 10,240, 12,288, 14,336), so 8192 // 39 + 1 = 211.
    # ticker_tick fires when the tick goes below 0: the 212th call.
    a = new_arena(False, 64, gc_events=True)
    assert int(a.I[S.TC_GC_EVENTS]) == 211
    hs = [zmalloc(a, 100) for _ in range(211)]
    assert int(a.I[S.TC_NEXT_GC]) == 0
    hs.append(zmalloc(a, 100))
    assert int(a.I[S.TC_NEXT_GC]) == 1
    # Past tcache_max (32 KB) an allocation is the arena's: no tick.
    big = zmalloc(a, 40_000)
    zfree(a, big)
    assert int(a.I[S.TC_ALLOC_WAIT]) == 211
    # Frees tick the same ticker: 212 of them fire the next visit; bytes do
    # not matter (212 frees of 100 B, where 5.3 waits for 64 KiB).
    for h in hs:
        zfree(a, h)
    assert int(a.I[S.TC_NEXT_GC]) == 2


def test_a_cache_oblivious_extent_takes_a_page_more_than_its_class():
    # sz_large_pad: a large extent of a cache-oblivious build (jemalloc's
    # default; Redis 6.2's and 7.0's bundled builds, Debian's) is its size
    # class plus one page, active but not allocated. Live 7.0.15 (Debian's):
    # 10,000 values of 16 KB, 20,000 B and 32 KB each added 4,115 B of
    # allocator_active − allocator_allocated (4,096 + the keys' slab rounding).
    a = new_arena(True, 64, pad=True)
    h = zmalloc(a, 20_000)  # the 20,480-B class: 5 pages + the pad
    assert h == A.LARGE + 5
    assert int(a.I[S.AL_PAGES_ACTIVE]) == 6 and int(a.I[S.AL_ALLOCATED]) == 20_480
    assert int(a.I[S.AL_LARGE_LIVE]) == 1
    zfree(a, h)  # cached: still active, pad and all
    assert int(a.I[S.AL_PAGES_ACTIVE]) == 6 and int(a.I[S.AL_PAGES_DIRTY]) == 0
    big = zmalloc(a, 40_000)  # 40,960 B: 10 pages + 1, past tcache_max
    assert int(a.I[S.AL_PAGES_ACTIVE]) == 6 + 11
    zfree(a, big)
    assert int(a.I[S.AL_PAGES_DIRTY]) == 11 and int(a.I[S.AL_LARGE_LIVE]) == 1
