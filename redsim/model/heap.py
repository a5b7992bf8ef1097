"""The client-side future event list: a binary heap plus two delay lines.

Every event carries a sequence number taken when it is scheduled, and events
leave in (time, sequence) order, so ties at one instant go first-scheduled
first and every run is deterministic.

Most client events happen a fixed delay after a clock that never goes back:
a request reaches Redis half an RTT after the client sent it (client time),
and its reply reaches the client half an RTT after the main thread wrote it
(main-thread time). Such events are born in time order, so each kind queues
in a FIFO ring (a *delay line*, O(1)) rather than the heap (O(log n)); only
think times, pool timers, open-loop arrivals and connection handshakes use
the heap. ``peek`` finds the earliest head of the three, so the order is
exactly that of a single heap.
"""

from __future__ import annotations

import math

from redsim.model.jit import leaf
from redsim.model.ring import wrap
from redsim.model.state import HEAP_CAP, HEAP_N, LINE_KIND, N_CONNS, N_LINES, SEQ


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
    """Schedule event ``kind`` for entity ``ident`` at time ``t`` (on the heap)."""
    ht, hs, hk, hi = w.hp_t, w.hp_seq, w.hp_kind, w.hp_id
    I = w.I
    n = I[HEAP_N]
    if n >= I[HEAP_CAP]:
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
def _pop_heap(w):
    ht, hs, hk, hi = w.hp_t, w.hp_seq, w.hp_kind, w.hp_id
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


# Line l's ring is entries [l·C, (l+1)·C) of ln_t / ln_seq / ln_id, C = connections.


@leaf
def line_push(w, line, t, ident):
    """Schedule ``LINE_KIND[line]`` for ``ident`` at ``t``, no earlier than the line's tail."""
    I = w.I
    size = I[N_CONNS]
    k = w.ln_n[line]
    if k >= size:
        raise RuntimeError("delay line full: more pending events than connections")
    base = line * size
    tail = wrap(w.ln_head[line] + k, size)
    if k > 0 and t < w.ln_t[base + wrap(tail - 1 + size, size)]:
        raise RuntimeError("delay line out of order: an event scheduled before the last one")
    w.ln_t[base + tail] = t
    w.ln_seq[base + tail] = I[SEQ]
    w.ln_id[base + tail] = ident
    I[SEQ] += 1
    w.ln_n[line] = k + 1


@leaf
def _first(w):
    """Where the earliest event is: a line number, N_LINES for the heap, -1 if none."""
    best = -1
    bt = math.inf
    bs = 0
    if w.I[HEAP_N] > 0:
        best = N_LINES
        bt = w.hp_t[0]
        bs = w.hp_seq[0]
    size = w.I[N_CONNS]
    for line in range(N_LINES):
        if w.ln_n[line] > 0:
            i = line * size + w.ln_head[line]
            t = w.ln_t[i]
            s = w.ln_seq[i]
            if best < 0 or t < bt or (t == bt and s < bs):
                best = line
                bt = t
                bs = s
    return best


@leaf
def peek(w):
    """(where, t) of the earliest pending client event: where is a line number,
    N_LINES for the heap, or -1 (with t = inf) when nothing is pending."""
    where = _first(w)
    if where < 0:
        return where, math.inf
    if where == N_LINES:
        return where, w.hp_t[0]
    return where, w.ln_t[where * w.I[N_CONNS] + w.ln_head[where]]


@leaf
def take(w, where):
    """Remove the earliest pending event, found at ``where`` by ``peek``; returns
    (t, kind, id)."""
    if where == N_LINES:
        return _pop_heap(w)
    size = w.I[N_CONNS]
    h = w.ln_head[where]
    w.ln_head[where] = wrap(h + 1, size)
    w.ln_n[where] -= 1
    i = where * size + h
    return w.ln_t[i], LINE_KIND[where], w.ln_id[i]
