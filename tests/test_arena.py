"""jemalloc's small-object arena (redsim/model/arena.py), by hand.

Slab geometry against the reference's table (§3.3, from jemalloc's
sc.c:slab_size); then sequences of allocations and frees on one size class
whose slab occupancies, pages and slab choices are worked out in the comments,
following jemalloc 5.3's bin code: allocate from slabcur; a full slabcur is
replaced by the lowest non-full slab; a slab that becomes non-full replaces a
higher slabcur; an empty slab's pages turn dirty. The model keeps how many
regions of a slab are free, not which (jemalloc's lowest-free-region rule moves
no slab's count), so allocations are checked slab by slab.
"""

from __future__ import annotations

import pytest

from redsim.model import arena as A
from redsim.model import nonfull
from redsim.model import state as S
from redsim.model.zmalloc import new_arena


def test_size_classes_and_slab_geometry_follow_the_reference_table():
    q8 = A.small_classes(False)
    assert q8[:12] == [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128]
    assert q8[12:20] == [160, 192, 224, 256, 320, 384, 448, 512]
    assert q8[-3:] == [10240, 12288, 14336] and len(q8) == 39
    assert A.small_classes(True)[:9] == [8, 16, 32, 48, 64, 80, 96, 112, 128]
    # pages / regions per slab, reference §3.3
    table = {8: (1, 512), 24: (3, 512), 40: (5, 512), 1280: (5, 16), 1536: (3, 8),
             4096: (1, 1), 5120: (5, 4), 14336: (7, 2), 448: (7, 64)}
    a = new_arena(False, 4)
    for size, (pages, regs) in table.items():
        b = A.bin_of(a, size)
        assert (a.al_reg_size[b], a.al_slab_pages[b], a.al_nregs[b]) == (size, pages, regs)
    assert A.bin_of(a, 1030) == A.bin_of(a, 1280)  # a 1 KB value's sds: the 1280 class
    # The kernel's bin_index of every class is its place in the list, both quanta.
    for q16 in (False, True):
        for i, c in enumerate(A.small_classes(q16)):
            assert A.bin_index(c, q16) == i
        # ... and zmalloc's lookup table gives every small request its class's bin.
        by8 = new_arena(q16, 1).al_bin_of8
        classes = A.small_classes(q16)
        for n in range(1, A.SMALL_MAX + 1):
            assert classes[by8[(n + 7) >> 3]] == A.size_class(n, q16)


def _dirty_pages(a):
    return int(a.I[S.AL_PAGES_DIRTY])


def test_every_other_free_empties_no_slab_and_returns_no_page():
    # The 1280-B class: 16 regions in 5 pages. 40 allocations fill slabs 0 and 1
    # and half of slab 2: 15 pages active, 40 x 1280 B allocated.
    a = new_arena(False, 16)
    b = A.bin_of(a, 1280)
    hs = [A.arena_malloc(a, b) for _ in range(40)]
    assert hs == [0] * 16 + [1] * 16 + [2] * 8
    st = A.stats(a)
    assert (st["allocated"], st["active"], st["dirty"]) == (40 * 1280, 15 * 4096, 0)
    # Free every other one (the odd keys): each slab keeps half its regions.
    for h in hs[1::2]:
        A.arena_free(a, h)
    st = A.stats(a)
    assert st["allocated"] == 20 * 1280  # halved
    assert (st["active"], st["dirty"], st["slabs"]) == (15 * 4096, 0, 3)
    assert A.purge_all(a) == 0  # nothing to give back


def test_freeing_whole_slabs_returns_their_pages_and_they_are_reused():
    a = new_arena(False, 16)
    b = A.bin_of(a, 1280)
    hs = [A.arena_malloc(a, b) for _ in range(40)]
    # Free slab 1's 16 regions (allocations 16..31, in insertion order): it
    # empties, its 5 pages turn dirty; active 10 pages, resident still 15.
    for h in hs[16:32]:
        A.arena_free(a, h)
    st = A.stats(a)
    assert (st["active"], st["dirty"], st["slabs"]) == (10 * 4096, 5 * 4096, 2)
    # slabcur is slab 2 (8 free regions): the next 8 go there; then slab 2 is
    # full, no slab is non-full, and a fresh slab takes the lowest free id, 1,
    # and the 5 dirty pages: active + dirty stays 15 pages.
    more = [A.arena_malloc(a, b) for _ in range(9)]
    assert more == [2] * 8 + [1]
    st = A.stats(a)
    assert (st["active"], st["dirty"]) == (15 * 4096, 0)
    # Emptied again and purged: the 5 pages leave.
    A.arena_free(a, more[8])
    assert A.purge_all(a) == 5
    st = A.stats(a)
    assert (st["active"], st["dirty"]) == (10 * 4096, 0)


def test_the_lowest_non_full_slab_takes_the_next_allocation():
    a = new_arena(False, 16)
    b = A.bin_of(a, 1280)
    hs = [A.arena_malloc(a, b) for _ in range(48)]  # slabs 0, 1, 2 full; slabcur 2
    # Free region 5 of slab 1, then region 3 of slab 0. Slab 1 was full and is
    # lower than slabcur 2 (full): it becomes slabcur. Then slab 0, lower still,
    # becomes slabcur and slab 1 (non-full) joins the non-full set.
    A.arena_free(a, hs[16 + 5])
    assert a.al_cur[b] == 1
    A.arena_free(a, hs[3])
    assert a.al_cur[b] == 0 and nonfull.lowest(a, b) == 1
    # Allocations: slab 0's free region, then (slab 0 full) the lowest non-full slab,
    # slab 1, then (all full) a fresh slab 3.
    assert [A.arena_malloc(a, b) for _ in range(3)] == [0, 1, 3]


@pytest.mark.parametrize("order", ["ascending", "descending", "interleaved"])
def test_non_full_slabs_come_back_lowest_first_whatever_order_they_came_in(order):
    # 10 full slabs of the 4096-B class (one region each would empty at once, so
    # use 2048 B: 2 regions per 1-page slab). Free one region of each slab in
    # the given order, then allocate: slabs come back 0, 1, 2, ... (the lowest
    # non-full first), which the set must give whatever order they joined it in.
    a = new_arena(False, 32)
    b = A.bin_of(a, 2048)
    hs = [A.arena_malloc(a, b) for _ in range(20)]  # slabs 0..9, full; slabcur 9
    slabs = list(range(10))
    if order == "descending":
        slabs.reverse()
    elif order == "interleaved":
        slabs = slabs[::2] + slabs[1::2]
    for s in slabs:
        A.arena_free(a, hs[2 * s + 1])
    got = [A.arena_malloc(a, b) for _ in range(10)]
    assert got == list(range(10))
    # All full again. Free region 1 of each slab (in the same order), then slab
    # 4's region 0: slab 4 empties and leaves the non-full set from its middle. The next
    # allocations take slabs 0, 1, 2, 3, 5, ..., 9 (one region each), and with
    # none non-full left, a fresh slab on the lowest free id: 4.
    for s in slabs:
        A.arena_free(a, hs[2 * s + 1])
    A.arena_free(a, hs[8])
    got = [A.arena_malloc(a, b) for _ in range(10)]
    assert got == [0, 1, 2, 3, 5, 6, 7, 8, 9, 4]


class _Plain:
    """The same bin rules written the slow, obvious way (scan for the lowest
    non-full slab, a count of used regions per slab), to check the arena against."""

    def __init__(self, nregs: int) -> None:
        self.nregs = nregs
        self.used: dict[int, int] = {}  # slab -> regions in use
        self.cur = -1
        self.dirty = 0

    def malloc(self) -> int:
        if self.cur < 0 or self.used[self.cur] == self.nregs:
            nonfull = [s for s, u in self.used.items() if s != self.cur and u < self.nregs]
            if nonfull:
                self.cur = min(nonfull)
            else:
                self.cur = min(set(range(len(self.used) + 1)) - set(self.used))
                self.used[self.cur] = 0
                self.dirty = max(self.dirty - 1, 0)
        self.used[self.cur] += 1
        return self.cur

    def free(self, s: int) -> None:
        self.used[s] -= 1
        if not self.used[s]:
            del self.used[s]
            self.dirty += 1
            if self.cur == s:
                self.cur = -1
        elif self.used[s] == self.nregs - 1 and s != self.cur and s < self.cur:
            self.cur = s  # a full slab freed below slabcur becomes slabcur


@pytest.mark.parametrize("seed", range(6))
def test_random_mallocs_and_frees_match_the_plain_rules(seed):
    # 2,000 random operations on the 512-B class (8 regions in one page),
    # frees of random live regions: the same regions, slab for slab, and the
    # same dirty page count as the obvious implementation.
    import random

    rng = random.Random(seed)
    a = new_arena(False, 4096)
    b = A.bin_of(a, 512)
    plain = _Plain(8)
    live: list[int] = []
    for _ in range(2000):
        if live and rng.random() < 0.45:
            h = live.pop(rng.randrange(len(live)))
            A.arena_free(a, h)
            plain.free(h)
        else:
            h = A.arena_malloc(a, b)
            assert h == plain.malloc()
            live.append(h)
        assert _dirty_pages(a) == plain.dirty
    assert A.stats(a)["allocated"] == 512 * len(live)
    # The non-full set kept step by step is the one its definition gives.
    assert (a.sb_nonfull_bits == nonfull.build(a.sb_bin, a.sb_nfree, a.al_cur, 4096)).all()


def _dirty(a, b, slabs: int) -> list[int]:
    """Fill ``slabs`` slabs of bin b and free them all: their pages turn dirty."""
    hs = [A.arena_malloc(a, b) for _ in range(slabs * int(a.al_nregs[b]))]
    for h in hs:
        A.arena_free(a, h)
    return hs


def test_dirty_pages_decay_along_jemallocs_smootherstep():
    # 100 one-page slabs (the 4096-B class) emptied before epoch 1: 100 dirty
    # pages. Pages dirtied in one epoch are allowed S(1 - k/200) of themselves
    # k epochs later, S(x) = 6x^5 - 15x^4 + 10x^3 (jemalloc's default step).
    a = new_arena(False, 128)
    _dirty(a, A.bin_of(a, 4096), 100)
    assert _dirty_pages(a) == 100
    assert A.arena_decay(a, 1) == 0  # just dirtied: S(1) = 1, all kept
    # 100 epochs on (half the decay time): S(0.5) = 0.5 -> 50 kept, 50 purged.
    assert A.arena_decay(a, 101) == 50
    # 150 epochs on: S(0.25) = 6/1024 - 15/256 + 10/64 = 0.1035 -> 10 kept.
    assert A.arena_decay(a, 151) == 40
    # Past the whole decay time: nothing kept.
    assert A.arena_decay(a, 401) == 10
    assert _dirty_pages(a) == 0 and int(a.I[S.AL_PAGES_PURGED]) == 100
    assert A.stats(a)["active"] == 0


def test_a_fresh_slab_takes_dirty_pages_before_they_decay():
    # 20 dirty pages; 5 one-page slabs made again take 5 of them: 15 dirty.
    # The backlog still holds the 20 dirtied in the first epoch, so the limit
    # 100 epochs on is 20 x S(0.5) = 10 of the 15: 5 purged.
    a = new_arena(False, 64)
    b = A.bin_of(a, 4096)
    _dirty(a, b, 20)
    assert A.arena_decay(a, 1) == 0
    for _ in range(5):
        A.arena_malloc(a, b)
    assert _dirty_pages(a) == 15
    assert A.arena_decay(a, 101) == 5
    # decay_cron at 5 s with dirty_decay_ms 10 s: epoch 100 (200 epochs of 50 ms).
    # The background thread runs (it was due: the arena is new) and takes no
    # step back.
    a.F[S.T] = 5.0
    before = int(a.I[S.AL_DECAY_EPOCH])
    A.decay_cron(a)
    assert (before, int(a.I[S.AL_DECAY_EPOCH])) == (101, 101)
    # With 10 dirty pages (≤ 1,024) it sleeps the whole decay time, 200 epochs
    # (decay_ns_until_purge): the epoch does not move at 5.2 s, and moves at
    # 15 s (epoch 300), where the 10 pages, 199 epochs old, may keep
    # 10 × S(1/200) ≈ 0 of themselves: all purged.
    assert a.F[S.AL_BG_WAKE] == pytest.approx(15.0)
    a.F[S.T] = 5.2
    A.decay_cron(a)
    assert int(a.I[S.AL_DECAY_EPOCH]) == 101
    a.F[S.T] = 15.0
    A.decay_cron(a)
    assert int(a.I[S.AL_DECAY_EPOCH]) == 300 and _dirty_pages(a) == 0
