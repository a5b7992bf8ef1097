"""A bin's set of non-full slabs (redsim/model/nonfull.py) against a plain set.

The bit set must answer as jemalloc's pairing heap does: the lowest member
(``edata_heap_first``), whatever order slabs joined and left it in, for ids
anywhere in its five levels (64^k boundaries are where a word above changes).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from redsim.model import arena as A
from redsim.model import nonfull
from redsim.model.zmalloc import new_arena

N = 300_000  # slab ids: levels of 4,688, 74, 2, 1 and 1 words
BINS = 3
# Ids near the levels' word boundaries (63/64, 4095/4096, 262143/262144) and a few others.
EDGES = [0, 1, 62, 63, 64, 65, 4095, 4096, 4097, 262143, 262144, N - 1]
ids = st.one_of(st.sampled_from(EDGES), st.integers(0, N - 1))


def _arena():
    a = new_arena(False, N)
    return a, [set() for _ in range(len(a.al_cur))]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, BINS - 1), ids, st.booleans()), max_size=80))
def test_lowest_is_the_least_member_after_any_inserts_and_removes(ops):
    a, sets = _arena()
    for b, s, add in ops:
        if add and s not in sets[b]:
            nonfull.insert(a, b, s)
            sets[b].add(s)
        elif not add and s in sets[b]:
            nonfull.remove(a, b, s)
            sets[b].discard(s)
        for k in range(BINS):
            assert nonfull.lowest(a, k) == (min(sets[k]) if sets[k] else -1)
            assert a.al_nonfull[k] == len(sets[k])


def test_emptying_a_word_clears_it_at_every_level():
    # One member at the top of the id range, then removed: every word of the bin
    # is zero again (a level left set would point lowest() at an empty word).
    a, _ = _arena()
    nonfull.insert(a, 1, N - 1)
    nonfull.insert(a, 1, 5)
    assert nonfull.lowest(a, 1) == 5 and nonfull.lowest(a, 0) == -1
    nonfull.remove(a, 1, 5)
    assert nonfull.lowest(a, 1) == N - 1
    nonfull.remove(a, 1, N - 1)
    assert not a.sb_nonfull_bits.any()
    assert nonfull.lowest(a, 1) == -1


def test_ctz_in_python_matches_the_compiled_one():
    # The plain-Python fallback (NUMBA_DISABLE_JIT) against the CPU's instruction,
    # through a compiled caller, on every single-bit word and a few mixed ones.
    import numba
    import numpy as np

    compiled = numba.njit(lambda x: nonfull.ctz(x))
    words = [np.int64(1) << np.int64(k) for k in range(64)] + [np.int64(x) for x in (6, -4, 96)]
    for x in words:
        assert nonfull.ctz(x) == compiled(x)
    assert [nonfull.ctz(np.int64(x)) for x in (6, -4, 96)] == [1, 2, 5]


def test_growing_the_arena_keeps_the_non_full_set():
    # arena.grow re-lays the bit sets out for more ids (their levels depend on
    # the count). The same mallocs and frees on an arena grown from 64 ids to
    # 5,064 half-way and on one made with 5,064 ids from the start must choose
    # the same slabs: growth is bookkeeping, never placement.
    import random

    def run(grow_at: int | None):
        a = new_arena(False, 64 if grow_at is not None else 5064)
        b = A.bin_of(a, 2048)  # 2 regions per 1-page slab
        rng = random.Random(7)
        live, chosen = [], []
        for step in range(400):
            if step == grow_at:
                a = A.grow(a, 5000)
            if live and rng.random() < 0.4:
                A.arena_free(a, live.pop(rng.randrange(len(live))))
            elif len(live) < 100:  # 50+ slabs: under the 64 ids before growing
                h = A.arena_malloc(a, b)
                chosen.append(h)
                live.append(h)
        return a, chosen

    grown, got = run(200)
    plain, want = run(None)
    assert -1 not in want and got == want
    assert int(grown.al_nonfull[A.bin_of(grown, 2048)]) > 0  # the set was not empty
    assert (grown.sb_nonfull_bits == plain.sb_nonfull_bits).all()
