"""The decorators every compiled kernel function uses.

The World namedtuple holds ~100 arrays, and a real call from a function that
has read a field of it makes numba incref/decref every one of them (measured
here: ~0.8 µs per call, ~20 ns when inlined). Small leaf helpers called on
every request (`busy`, the recorder bins, the heap, random draws, the ready
ring) therefore use ``leaf``, which inlines at numba's IR level; larger
functions use ``step`` (a real call), which keeps compile time to about a
minute; entry points called from Python use ``entry``. All cache their
machine code on disk and run as plain Python under ``NUMBA_DISABLE_JIT=1``.
"""

from numba import njit

leaf = njit(cache=True, inline="always")
step = njit(cache=True)
entry = njit(cache=True)
kernel = step
