"""Intrusive FIFO lists: queues threaded through an entity's ``next`` column.

No Redis source: a helper of the kernel's own queues (Redis's ``adlist.c``
lists play this part for it). A queue q is its head, tail and length in three
arrays; each member x holds the next member in ``nxt[x]`` (-1 at the tail), so
a member can be in one such queue at a time and the queue costs no storage of
its own. Used by a pool's waiting requests (``pools.py``, ``client_requests.py``) and a same-host
client thread's replies waiting for its next poll (``client_threads.py``).
"""

from __future__ import annotations

from redsim.model.jit import leaf


@leaf
def append(nxt, head, tail, n, q, x):
    """Put member x at the tail of queue q."""
    nxt[x] = -1
    if n[q] == 0:
        head[q] = x
    else:
        nxt[tail[q]] = x
    tail[q] = x
    n[q] += 1
