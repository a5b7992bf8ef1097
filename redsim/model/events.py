"""The client-side future event list: a timing wheel, a heap and two delay lines.

No Redis source: the simulator's own event list for what happens outside the
main thread (clients, the network).

Every event carries a sequence number taken when it is scheduled, and events
leave in (time, sequence) order, so ties at one instant go first-scheduled
first and every run is deterministic.

Most client events happen a fixed delay after a clock that never goes back:
a request reaches Redis half an RTT after the client sent it (client time),
and its reply reaches the client half an RTT after the main thread wrote it
(main-thread time). Such events are born in time order, so each kind queues
in a FIFO ring (a *delay line*, O(1)). The rest — think times, pool timers,
open-loop arrivals, arrivals after a connection handshake — go to the timing
wheel (``wheel.py``, O(1)), which spills far-future events into a binary heap
(``heap.py``). ``peek`` finds the earliest of the lines' heads and the
wheel's, so the order is exactly that of one priority queue.
"""

from __future__ import annotations

import math

from redsim.model import heap, wheel
from redsim.model.jit import leaf
from redsim.model.ring import wrap
from redsim.model.state import LINE_KIND, N_CONNS, N_LINES, SEQ


@leaf
def push(w, t, kind, ident):
    """Schedule event ``kind`` for entity ``ident`` at time ``t`` (wheel or heap)."""
    seq = w.I[SEQ]
    w.I[SEQ] = seq + 1
    wheel.insert(w, t, seq, kind, ident)


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
def peek(w):
    """(where, t) of the earliest pending client event: where is a line number,
    N_LINES for the wheel (and heap), or -1 (with t = inf) when nothing is pending."""
    best = -1
    bt = math.inf
    bs = 0
    x = wheel.first(w)
    if x >= 0:
        best = N_LINES
        bt = w.wh_t[x]
        bs = w.wh_seq[x]
    size = w.I[N_CONNS]
    for line in range(N_LINES):
        if w.ln_n[line] > 0:
            i = line * size + w.ln_head[line]
            if best < 0 or heap.before(w.ln_t[i], w.ln_seq[i], bt, bs):
                best = line
                bt = w.ln_t[i]
                bs = w.ln_seq[i]
    return best, bt


@leaf
def take(w, where):
    """Remove the earliest pending event, found at ``where`` by ``peek``; returns
    (t, kind, id)."""
    if where == N_LINES:
        return wheel.remove_first(w)
    size = w.I[N_CONNS]
    h = w.ln_head[where]
    w.ln_head[where] = wrap(h + 1, size)
    w.ln_n[where] -= 1
    i = where * size + h
    return w.ln_t[i], LINE_KIND[where], w.ln_id[i]
