"""The client-side event heap: a binary min-heap on (time, insertion sequence).

Ties at the same instant pop in insertion order (the sequence number), which
makes every run deterministic and gives FIFO order to simultaneous events.
"""

from __future__ import annotations

from redsim.model.jit import leaf
from redsim.model.state import HEAP_N, SEQ


@leaf
def _less(ht, hs, a, b):
    return ht[a] < ht[b] or (ht[a] == ht[b] and hs[a] < hs[b])


@leaf
def _swap(ht, hs, hk, hi, a, b):
    ht[a], ht[b] = ht[b], ht[a]
    hs[a], hs[b] = hs[b], hs[a]
    hk[a], hk[b] = hk[b], hk[a]
    hi[a], hi[b] = hi[b], hi[a]


@leaf
def push(w, t, kind, ident):
    """Schedule event ``kind`` for entity ``ident`` at time ``t``."""
    ht = w.hp.t
    hs = w.hp.seq
    hk = w.hp.kind
    hi = w.hp.id
    I = w.I
    n = I[HEAP_N]
    if n >= ht.shape[0]:
        raise RuntimeError("event heap full: more pending client events than sized for")
    ht[n] = t
    hs[n] = I[SEQ]
    hk[n] = kind
    hi[n] = ident
    I[SEQ] += 1
    I[HEAP_N] = n + 1
    while n > 0:
        parent = (n - 1) >> 1
        if _less(ht, hs, n, parent):
            _swap(ht, hs, hk, hi, n, parent)
            n = parent
        else:
            break


@leaf
def pop(w):
    """Remove the earliest event; returns (t, kind, id)."""
    ht = w.hp.t
    hs = w.hp.seq
    hk = w.hp.kind
    hi = w.hp.id
    I = w.I
    t = ht[0]
    kind = hk[0]
    ident = hi[0]
    n = I[HEAP_N] - 1
    I[HEAP_N] = n
    if n > 0:
        ht[0] = ht[n]
        hs[0] = hs[n]
        hk[0] = hk[n]
        hi[0] = hi[n]
        i = 0
        while True:
            left = 2 * i + 1
            if left >= n:
                break
            child = left
            right = left + 1
            if right < n and _less(ht, hs, right, left):
                child = right
            if _less(ht, hs, child, i):
                _swap(ht, hs, hk, hi, child, i)
                i = child
            else:
                break
    return t, kind, ident
