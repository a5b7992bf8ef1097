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
from redsim.model.jit import hot_leaf, leaf
from redsim.model.ring import wrap
from redsim.model.state import LINE_KIND, N_CONNS, N_LINES, SEQ

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "SEQ", "i8", "-", "state",
     "next sequence number for a scheduled client event (ties leave in scheduling order)"),
    ("ln", "t", "f8", "s", "state",
     "the delay lines' rings (line l at [l*C, (l+1)*C), C = N_CONNS): each event's time, s"),
    ("ln", "seq", "i8", "-", "state",
     "the delay lines' rings: each event's sequence number (SEQ when scheduled)"),
    ("ln", "id", "i8", "-", "state", "the delay lines' rings: each event's connection slot"),
    ("ln", "head", "i8", "-", "state", "per delay line: ring index of its first (earliest) event"),
    ("ln", "n", "i8", "-", "state", "per delay line: events queued"),
)


@hot_leaf
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


@hot_leaf
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


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """The client-side event list's capacity, from the connections, request
    slots and groups (the size ``event_entries``, which the heap and the timing
    wheel hold: ``heap.configure``, ``wheel.configure``), and the delay lines."""
    import numpy as np

    from redsim.model import state as S

    C, R, G = b.size.conns, b.size.slots, b.size.groups
    # Per connection at most one handshake arrival, reply or close and one timeout
    # timer; per request slot one think, backoff or refusal; per group its clocks.
    cap = R + 2 * C + 6 * G + 16
    if b.I[S.RTT_JITTER]:  # network.configure: network.rtt is a distribution
        cap += C  # arrivals and replies leave the delay lines for the wheel
    cap += b.I[S.CLI_THREADS]  # a same-host client thread's next poll
    b.size.event_entries = cap
    lcap = max(C, 1)  # a connection has at most one arrival and one reply pending
    b.fill("ln", t=np.zeros((N_LINES, lcap)), seq=np.zeros((N_LINES, lcap), np.int64),
           id=np.zeros((N_LINES, lcap), np.int64), head=np.zeros(N_LINES, np.int64),
           n=np.zeros(N_LINES, np.int64))
