"""A binary min-heap on (time, sequence): the far-future overflow of the wheel.

No Redis source: part of the simulator's client-side event list.

Holds the client events that lie beyond the timing wheel's span (long think
times, pool reaper timers, the next open-loop arrival far ahead); ``wheel``
moves them in as its span reaches them.
"""

from __future__ import annotations

from redsim.model.jit import leaf
from redsim.model.state import HEAP_CAP, HEAP_N

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "HEAP_N", "i8", "-", "state",
     "events in the client-side heap (the wheel's far-future overflow)"),
    ("I", "HEAP_CAP", "i8", "-", "size",
     "heap capacity (hp rows; as many wheel entries): slots + conns + 4 per group + 16"),
    ("hp", "t", "f8", "s", "state", "heap entry's event time, s"),
    ("hp", "seq", "i8", "-", "state",
     "heap entry's sequence number (SEQ when scheduled): ties' order"),
    ("hp", "kind", "i8", "-", "state", "heap entry's event kind: EV_ISSUE, EV_OPEN_ARRIVAL, ..."),
    ("hp", "id", "i8", "-", "state",
     "heap entry's subject: request slot, connection, group or pool, by kind"),
)


@leaf
def before(ta, sa, tb, sb):
    """Event (ta, sa) comes before (tb, sb): earlier, or as early and scheduled first.

    The one ordering of every client event queue (heap, wheel, delay lines)."""
    return ta < tb or (ta == tb and sa < sb)


@leaf
def push(w, t, seq, kind, ident):
    """Add event (t, seq, kind, ident)."""
    ht, hs, hk, hi = w.hp_t, w.hp_seq, w.hp_kind, w.hp_id
    I = w.I
    n = I[HEAP_N]
    if n >= I[HEAP_CAP]:
        raise RuntimeError("event heap full: more pending client events than sized for")
    I[HEAP_N] = n + 1
    # Sift the hole up from the new leaf, then fill it.
    while n > 0:
        parent = (n - 1) >> 1
        if before(t, seq, ht[parent], hs[parent]):
            ht[n] = ht[parent]
            hs[n] = hs[parent]
            hk[n] = hk[parent]
            hi[n] = hi[parent]
            n = parent
        else:
            break
    ht[n] = t
    hs[n] = seq
    hk[n] = kind
    hi[n] = ident


@leaf
def pop(w):
    """Remove the earliest event; returns (t, seq, kind, ident). The heap must not be empty."""
    ht, hs, hk, hi = w.hp_t, w.hp_seq, w.hp_kind, w.hp_id
    I = w.I
    t0, s0, k0, i0 = ht[0], hs[0], hk[0], hi[0]
    n = I[HEAP_N] - 1
    I[HEAP_N] = n
    if n > 0:
        # Sift the last element down from the root's hole.
        t, s, kind, ident = ht[n], hs[n], hk[n], hi[n]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and before(ht[c + 1], hs[c + 1], ht[c], hs[c]):
                c += 1
            if before(ht[c], hs[c], t, s):
                ht[i] = ht[c]
                hs[i] = hs[c]
                hk[i] = hk[c]
                hi[i] = hi[c]
                i = c
            else:
                break
        ht[i] = t
        hs[i] = s
        hk[i] = kind
        hi[i] = ident
    return t0, s0, k0, i0


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """An empty heap of ``event_entries`` entries (``events.configure``)."""
    import numpy as np

    cap = b.size.event_entries
    b.fill("hp", t=np.zeros(cap), seq=np.zeros(cap, np.int64), kind=np.zeros(cap, np.int64),
           id=np.zeros(cap, np.int64))
    b.I[HEAP_CAP] = cap
