"""A bin's non-full slabs, lowest first: jemalloc's ``bin->slabs_nonfull``.

jemalloc keeps a bin's non-full slabs, slabcur excepted, in a pairing heap
ordered by serial number, then address (``src/bin.c``, ``ph.h``,
``edata_snad_comp``), and when slabcur fills it takes the first
(``src/arena.c:arena_bin_nonfull_slab_get``, ``edata_heap_remove_first``); a
slab that gets a free region joins it (``arena_bin_slabs_nonfull_insert``) and
one that empties or becomes slabcur leaves it. All that placement depends on is
which slab comes first: the lowest (``arena.py``: a slab's id stands for its
serial number and address).

Here the set is a bit set over slab ids, per bin, in ``LEVELS`` levels of
64-bit words: bit ``i`` of level 0 says slab ``i`` is in the set, bit ``j`` of
level ``k + 1`` that word ``j`` of level ``k`` is not zero. Insert and remove
touch one word per level at most and usually one; the lowest member is found
by going down from the single top word. A pairing heap's remove-first visits
O(log n) slabs at random addresses: after S0's first eviction burst every bin
holds ~10⁴ non-full slabs with one free region each, slabcur fills at almost
every allocation, and those cache misses were most of what the allocator added
to the S0 run.

Deviation: none in which slab is chosen; a heap's cost to Redis itself is in
the commands' CPU costs, as every other allocator cost is.
"""

from __future__ import annotations

import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import overload

from redsim.model.jit import leaf
from redsim.model.state import AL_MAX_SLABS

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("al", "nonfull", "i8", "-", "state",
     "slabs in the bin's set of non-full slabs, slabcur not among them (bin stats nonfull_slabs)"),
    ("sb", "nonfull_bits", "i8[]", "-", "state",
     "the bins' sets of non-full slabs: per bin, LEVELS levels of 64-bit words over slab ids"),
)

LEVELS = 5
"""Levels of the bit set: 64^5 = 2^30 slab ids (4 TB of 4-KB slabs) at most."""
MAX_IDS = 64 ** LEVELS
ONE = np.int64(1)


def ctz(x) -> int:
    """The index of the lowest set bit of a non-zero 64-bit word (count trailing
    zeros); compiled, the CPU's instruction."""
    v = int(x) & 0xFFFF_FFFF_FFFF_FFFF
    return (v & -v).bit_length() - 1


@overload(ctz)
def _ctz_compiled(x):
    def impl(x):
        return trailing_zeros(x)
    return impl


@leaf
def offsets(n):
    """Where each level starts in one bin's words, and the words per bin, for
    ``n`` slab ids: (level 1, 2, 3, 4, stride); level 0 starts at 0."""
    w0 = (n + 63) >> 6
    w1 = (w0 + 63) >> 6
    w2 = (w1 + 63) >> 6
    w3 = (w2 + 63) >> 6
    return w0, w0 + w1, w0 + w1 + w2, w0 + w1 + w2 + w3, w0 + w1 + w2 + w3 + 1


def words(n: int, bins: int) -> int:
    """Words of the bit sets of ``bins`` bins for ``n`` slab ids."""
    if n > MAX_IDS:
        raise ValueError(f"the arena's bit sets hold {MAX_IDS} slab ids, {n} asked")
    return bins * int(offsets(n)[4])


@leaf
def insert(w, b, s):
    """Slab s joins bin b's non-full slabs (``arena_bin_slabs_nonfull_insert``)."""
    bits = w.sb_nonfull_bits
    o = offsets(w.I[AL_MAX_SLABS])
    at = b * o[4]  # level 0 of bin b
    i = s
    for lvl in range(LEVELS):
        old = bits[at + (i >> 6)]
        bits[at + (i >> 6)] = old | (ONE << (i & 63))
        if old != 0 or lvl == LEVELS - 1:  # the word was not empty: the levels above know
            break
        at = b * o[4] + o[lvl]
        i >>= 6
    w.al_nonfull[b] += 1


@leaf
def remove(w, b, s):
    """Slab s leaves bin b's non-full slabs (``arena_bin_slabs_nonfull_remove``)."""
    bits = w.sb_nonfull_bits
    o = offsets(w.I[AL_MAX_SLABS])
    at = b * o[4]  # level 0 of bin b
    i = s
    for lvl in range(LEVELS):
        new = bits[at + (i >> 6)] & ~(ONE << (i & 63))
        bits[at + (i >> 6)] = new
        if new != 0 or lvl == LEVELS - 1:  # the word keeps members: the levels above stay
            break
        at = b * o[4] + o[lvl]
        i >>= 6
    w.al_nonfull[b] -= 1


@leaf
def lowest(w, b):
    """Bin b's lowest non-full slab (jemalloc's ``edata_heap_first``), -1 if none."""
    bits = w.sb_nonfull_bits
    o = offsets(w.I[AL_MAX_SLABS])
    base = b * o[4]
    top = bits[base + o[3]]
    if top == 0:
        return -1
    i = ctz(top)
    i = (i << 6) | ctz(bits[base + o[2] + i])
    i = (i << 6) | ctz(bits[base + o[1] + i])
    i = (i << 6) | ctz(bits[base + o[0] + i])
    return (i << 6) | ctz(bits[base + i])


def build(sb_bin: np.ndarray, sb_nfree: np.ndarray, al_cur: np.ndarray,
          n: int) -> np.ndarray:
    """The bit sets for ``n`` slab ids of slabs as they stand: every slab in use
    with a free region that is not its bin's slabcur (Python; for ``arena.grow``)."""
    bins = len(al_cur)
    o = [0, *(int(x) for x in offsets(n))]
    stride = o[5]
    bits = np.zeros(words(n, bins), np.int64)
    m = len(sb_bin)
    ids = np.arange(m, dtype=np.int64)
    sb_bin = np.asarray(sb_bin)
    member = (sb_bin >= 0) & (np.asarray(sb_nfree) > 0)
    member &= ids != np.asarray(al_cur)[np.maximum(sb_bin, 0)]
    b, i = sb_bin[member], ids[member]
    for lvl in range(LEVELS):
        at = b * stride + o[lvl] + (i >> 6)
        np.bitwise_or.at(bits, at, np.left_shift(ONE, i & 63))
        key = np.unique(b * (MAX_IDS + 1) + (i >> 6))  # the non-zero words, once each
        b, i = key // (MAX_IDS + 1), key % (MAX_IDS + 1)
    return bits


# ---- configuration (Python, once per run) ---------------------------------------------


def bins(n_bins: int) -> dict[str, np.ndarray]:
    """The ``al`` field this module keeps for ``n_bins`` bins, every set empty."""
    return {"nonfull": np.zeros(n_bins, np.int64)}


def slab_arrays(n: int, n_bins: int, bits: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The ``sb`` field this module keeps for ``n`` slab ids of ``n_bins`` bins:
    ``bits`` if already built (``build``, for ``arena.grow``), else empty sets."""
    return {"nonfull_bits": np.zeros(words(n, n_bins), np.int64) if bits is None else bits}


def configure(b) -> None:
    """The bins' empty non-full sets, over the slab ids ``arena.configure``
    laid out (needs ``slab_ids`` and ``small_bins``)."""
    b.fill("al", **bins(b.size.small_bins))
    b.fill("sb", **slab_arrays(b.size.slab_ids, b.size.small_bins))
