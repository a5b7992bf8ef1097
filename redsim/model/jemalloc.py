"""jemalloc size classes: what every zmalloc allocation is rounded up to.

Follows ``src/zmalloc.c:ztrymalloc_usable``, which counts each allocation in
``used_memory`` at ``zmalloc_size`` (``je_malloc_usable_size``), and
jemalloc's size classes (``deps/jemalloc/src/sc.c:size_classes`` in 7.x's
jemalloc 5.3; 6.2's bundled 5.1 has the same classes, reference §3.3).

Redis counts each allocation in ``used_memory`` at its usable size
(``je_malloc_usable_size``, reference §3.1), so a 20-byte request costs 24 or
32 bytes depending on the build. Classes (reference §3.3):

- bundled jemalloc, ``--with-lg-quantum=3`` (8-byte quantum): 8, 16, 24, …, 64,
  then 80, 96, 112, 128;
- distribution builds linked against the system jemalloc (16-byte quantum):
  8, 16, 32, 48, …, 128;
- above 128 bytes, both: four classes per power of two (160, 192, 224, 256,
  320, …, 14336 small; 16384, 20480, 24576, 28672, 32768, 40960, … large).
"""

from __future__ import annotations

from redsim.model.jit import leaf


@leaf
def size_class(n, quantum16):
    """Usable bytes of an allocation of ``n`` bytes; ``quantum16`` selects the
    16-byte-quantum build (else the bundled 8-byte one). ``n`` ≤ 0 costs 0."""
    if n <= 0:
        return 0
    if n <= 8:
        return 8
    if n <= 128:
        if quantum16 or n > 64:
            return (n + 15) & ~15
        return (n + 7) & ~7
    # Four classes per doubling: (b, 2b] in steps of b/4, b the power of two below n.
    b = 128
    while b * 2 < n:
        b *= 2
    step = b >> 2
    return b + ((n - b + step - 1) // step) * step
