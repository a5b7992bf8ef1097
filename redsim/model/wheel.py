"""A timing wheel (calendar queue) for the client events of the near future.

No Redis source: part of the simulator's client-side event list.

Think-time expiries are the bulk of the client event list: one pending per
thinking source, 10,000 in the reference benchmark, where a binary heap costs
~120 ns per push and pop (measured). The wheel (Brown's calendar queue, 1988,
with a fixed year) divides time into buckets of ``width`` seconds; bucket
``epoch & mask`` holds the events of that epoch as a list sorted by (time,
sequence), so with about one event per bucket a push and a pop are O(1).

The wheel covers epochs [E, E + n_buckets) from its current epoch E; later
events wait in the binary heap (``heap.py``) and move into the wheel as E
advances. An event scheduled earlier than epoch E (a client scheduling at
its own time while the wheel has already looked ahead to the next event)
joins bucket E, in (time, sequence) order. Every event in the wheel precedes
every event left in the heap, so the earliest event overall is always the
head of the first non-empty bucket from E — and the order is exactly the
(time, sequence) order of a single heap.

Sizing (``build.py``): ``width`` is the mean gap between think-time events
expected from the scenario, and the wheel spans about two mean think times,
so few events overflow into the heap.
"""

from __future__ import annotations

from redsim.model import heap
from redsim.model.jit import hot_leaf, leaf
from redsim.model.state import HEAP_N, WH_EPOCH, WH_FREE, WH_INV, WH_MASK, WH_N

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "WH_INV", "f8", "1/s", "config",
     "1 / the wheel's bucket width: buckets per second of event time"),
    ("I", "WH_EPOCH", "i8", "-", "state",
     "the wheel's current epoch (bucket number from time 0); it covers [epoch, epoch+mask]"),
    ("I", "WH_N", "i8", "-", "state", "events in the wheel's buckets now"),
    ("I", "WH_FREE", "i8", "-", "state",
     "first free wheel entry (the free list links through wh next), -1 if full"),
    ("I", "WH_MASK", "i8", "-", "size",
     "wheel buckets - 1 (a power of two less one): an epoch's bucket is epoch & mask"),
    ("wh", "head", "i8[]", "-", "state", "per bucket: first entry, -1 if empty"),
    ("wh", "t", "f8", "s", "state", "wheel entry's event time, s"),
    ("wh", "seq", "i8", "-", "state", "wheel entry's sequence number (SEQ when scheduled)"),
    ("wh", "kind", "i8", "-", "state", "wheel entry's event kind: EV_ISSUE, EV_OPEN_ARRIVAL, ..."),
    ("wh", "id", "i8", "-", "state",
     "wheel entry's subject: request slot, connection, group or pool, by kind"),
    ("wh", "next", "i8", "-", "state",
     "next entry in its bucket's (time, seq)-sorted list, or in the free list; -1 at the end"),
)


@leaf
def epoch(w, t):
    """The wheel epoch of time t (seconds)."""
    return int(t * w.F[WH_INV])


@hot_leaf
def insert(w, t, seq, kind, ident):
    """Put an event in its bucket, or in the heap if it lies beyond the wheel."""
    I = w.I
    e = I[WH_EPOCH]
    ep = epoch(w, t)
    if ep < e:
        ep = e
    if ep - e > I[WH_MASK]:
        heap.push(w, t, seq, kind, ident)
        return
    x = I[WH_FREE]
    if x < 0:
        raise RuntimeError("timing wheel full: more pending client events than sized for")
    nxt = w.wh_next
    I[WH_FREE] = nxt[x]
    w.wh_t[x] = t
    w.wh_seq[x] = seq
    w.wh_kind[x] = kind
    w.wh_id[x] = ident
    b = ep & I[WH_MASK]
    prev = -1
    cur = w.wh_head[b]
    while cur >= 0 and heap.before(w.wh_t[cur], w.wh_seq[cur], t, seq):
        prev = cur
        cur = nxt[cur]
    nxt[x] = cur
    if prev < 0:
        w.wh_head[b] = x
    else:
        nxt[prev] = x
    I[WH_N] += 1


@leaf
def _admit(w):
    """Move heap events that now fall inside the wheel's span into the wheel."""
    I = w.I
    end = I[WH_EPOCH] + I[WH_MASK]  # last epoch the wheel covers
    while I[HEAP_N] > 0 and epoch(w, w.hp_t[0]) <= end:
        t, seq, kind, ident = heap.pop(w)
        insert(w, t, seq, kind, ident)


@hot_leaf
def first(w):
    """Entry index of the earliest event in wheel or heap, -1 if both are empty.

    Advances the wheel's epoch to that event's bucket (admitting heap events
    as its span moves), so repeated calls cost nothing more.
    """
    I = w.I
    if I[WH_N] == 0:
        if I[HEAP_N] == 0:
            return -1
        I[WH_EPOCH] = epoch(w, w.hp_t[0])
        _admit(w)
    mask = I[WH_MASK]
    e = I[WH_EPOCH]
    while w.wh_head[e & mask] < 0:
        e += 1
        I[WH_EPOCH] = e
        if I[HEAP_N] > 0:
            _admit(w)
    return w.wh_head[e & mask]


@leaf
def remove_first(w):
    """Take the entry ``first`` returned out of the wheel; returns (t, kind, id)."""
    I = w.I
    b = I[WH_EPOCH] & I[WH_MASK]
    x = w.wh_head[b]
    w.wh_head[b] = w.wh_next[x]
    w.wh_next[x] = I[WH_FREE]
    I[WH_FREE] = x
    I[WH_N] -= 1
    return w.wh_t[x], w.wh_kind[x], w.wh_id[x]


# ---- configuration (Python, once per run) ---------------------------------------------


def wheel_size(groups, n_slots: list[int]) -> tuple[float, int]:
    """Bucket width (s) and bucket count of the timing wheel.

    The width is the mean gap between wheel events the scenario implies — each
    thinking source fires once per mean think time, an open loop at its peak
    rate — so a bucket holds about one event; the wheel spans about two mean
    think times (2^6 to 2^22 buckets; four measured no faster at 10,000
    sources), so few events wait in the heap.
    """
    import math

    from redsim.model.sizing import memoryless_group

    rate = 0.0
    sources = 0
    for grp, n in zip(groups, n_slots, strict=True):
        if grp.kind == "open":
            rate += max([grp.rate or 0.0] + [step.rate for step in grp.profile or []])
        elif memoryless_group(grp):
            rate += 1.0 / float(grp.think.mean)  # one clock, not one per source
        elif not (grp.kind == "trace" and grp.trace_timing == "recorded"):
            rate += n / max(float(grp.think.mean), 1e-6)
            sources += n
    width = min(max(1.0 / rate, 1e-7), 1.0) if rate > 0 else 1.0
    n_buckets = 1 << int(math.ceil(math.log2(min(max(2 * sources, 64), 1 << 22))))
    return width, n_buckets


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """An empty wheel of ``event_entries`` entries (``events.configure``), all
    on the free list, its buckets sized by ``wheel_size`` from the groups."""
    import numpy as np

    cap = b.size.event_entries
    width, n_buckets = wheel_size(b.scenario.clients,
                                  [int(n) for n in b.part("gp")["n_slots"]])
    nxt = np.arange(1, cap + 1, dtype=np.int64)
    nxt[-1] = -1  # the free list: every entry, in order
    b.fill("wh", head=np.full(n_buckets, -1, np.int64), t=np.zeros(cap),
           seq=np.zeros(cap, np.int64), kind=np.zeros(cap, np.int64),
           id=np.zeros(cap, np.int64), next=nxt)
    b.I[WH_MASK] = n_buckets - 1
    b.I[WH_FREE] = 0
    b.F[WH_INV] = 1.0 / width
