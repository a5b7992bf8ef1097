"""Ring-buffer index arithmetic for the kernel's FIFO rings.

No Redis source: a helper of the kernel's own queues.

``i % n`` with a run-time ``n`` compiles to an integer division (~25–40
cycles), and rings are indexed several times per request (pool idle rings,
the ready list, the delay lines). Ring indices never exceed two laps, so a
compare and subtract does the same job.
"""

from __future__ import annotations

from redsim.model.jit import leaf


@leaf
def wrap(i, n):
    """``i % n`` for 0 ≤ i < 2n: the slot of position i in a ring of n slots."""
    return i - n if i >= n else i
