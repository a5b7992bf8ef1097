"""The client event list (timing wheel + overflow heap + delay lines) against a
plain priority queue on (time, sequence).

The kernel relies on the event list popping events in exactly (time,
sequence) order, whatever mix of wheel buckets, overflow heap and delay lines
holds them; results are byte-identical across these data structures only if
that holds. hypothesis drives random schedules — ties, events beyond the
wheel's span, events earlier than the wheel's epoch — on a deliberately tiny
wheel (8 buckets) so every path is taken.
"""

from __future__ import annotations

import heapq

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from redsim import load_scenario
from redsim.model import events
from redsim.model import state as S
from redsim.model.build import build_world
from redsim.model.world import as_world, pack

OP_PUSH, OP_LINE, OP_POP = 0, 1, 2
N_SOURCES = 64


def _world(width: float, n_buckets: int):
    sc = load_scenario({
        "name": "event-list", "duration": 1,
        "clients": [{"processes": N_SOURCES, "threads": 1, "pool": {"max-size": 1},
                     "think": "1ms", "mix": {"GET": 1}}],
    })
    world, _, _ = build_world(sc, 1)
    world.I[S.WH_MASK] = n_buckets - 1
    world.F[S.WH_INV] = 1.0 / width
    return world


@njit(cache=True)  # compiled once per kernel version (the cache directory is keyed by it)
def _drive(ref, ops, a, b):
    """Apply ops; returns the popped (t, kind, id) rows and the peeked times."""
    w = as_world(ref)
    n = ops.shape[0]
    out_t = np.full(n, np.nan)
    out_k = np.full(n, -1, np.int64)
    out_i = np.full(n, -1, np.int64)
    peeked = np.full(n, np.nan)
    now = 0.0
    for j in range(n):
        if ops[j] == OP_PUSH:
            events.push(w, now + a[j], 0, b[j])
        elif ops[j] == OP_LINE:
            events.line_push(w, b[j], now + a[j], j)
        else:
            where, t = events.peek(w)
            peeked[j] = t
            if where >= 0:
                t, kind, ident = events.take(w, where)
                out_t[j] = t
                out_k[j] = kind
                out_i[j] = ident
                now = t
    return out_t, out_k, out_i, peeked


def _reference(ops, a, b):
    """The same schedule on heapq: entries (t, seq, kind, id)."""
    pq, seq, now, line_tail = [], 0, 0.0, [0.0] * S.N_LINES
    rows = []
    for j, op in enumerate(ops):
        if op == OP_PUSH:
            heapq.heappush(pq, (now + a[j], seq, 0, int(b[j])))
            seq += 1
        elif op == OP_LINE:
            t = now + a[j]
            line_tail[b[j]] = t
            heapq.heappush(pq, (t, seq, S.LINE_KIND[b[j]], j))
            seq += 1
        elif pq:
            t, _, kind, ident = heapq.heappop(pq)
            rows.append((j, t, kind, ident))
            now = t
    return rows


@st.composite
def schedules(draw):
    n = draw(st.integers(1, 120))
    ops, a, b = [], [], []
    for _ in range(n):
        op = draw(st.sampled_from([OP_PUSH, OP_PUSH, OP_LINE, OP_POP, OP_POP]))
        if op == OP_PUSH:
            # Quarter-unit delays give ties; up to 40 units reach far past the wheel.
            ops.append(op)
            a.append(draw(st.integers(0, 160)) / 4.0)
            b.append(draw(st.integers(0, 1000)))
        elif op == OP_LINE:
            line = draw(st.integers(0, S.N_LINES - 1))
            ops.append(op)
            a.append(None)  # a delay that keeps the line in time order: _fill_line_delays
            b.append(line)
        else:
            ops.append(op)
            a.append(0.0)
            b.append(0)
    return ops, a, b


def _fill_line_delays(ops, a, b):
    """Give line pushes delays that keep each line in time order, as the kernel's
    fixed-delay events are (replaying the schedule to know `now`)."""
    pq, seq, now = [], 0, 0.0
    tail = [0.0] * S.N_LINES
    for j, op in enumerate(ops):
        if op == OP_PUSH:
            heapq.heappush(pq, (now + a[j], seq))
            seq += 1
        elif op == OP_LINE:
            t = max(tail[b[j]], now) + 0.5 * (j % 3)
            a[j] = t - now
            tail[b[j]] = t
            heapq.heappush(pq, (t, seq))
            seq += 1
        elif pq:
            now = heapq.heappop(pq)[0]
    return a


@settings(max_examples=150, deadline=None)
@given(sched=schedules(), n_buckets=st.sampled_from([8, 64]), width=st.sampled_from([0.25, 1.0]))
def test_pops_follow_time_then_sequence(sched, n_buckets, width):
    ops, a, b = sched
    a = _fill_line_delays(ops, list(a), b)
    world = _world(width, n_buckets)
    ops_a = np.array(ops, np.int64)
    got_t, got_k, got_i, peeked = _drive(pack(world), ops_a, np.array(a, np.float64),
                                        np.array(b, np.int64))
    want = _reference(ops, a, b)
    got = [(j, got_t[j], got_k[j], got_i[j]) for j in range(len(ops)) if got_k[j] >= 0]
    assert got == want
    for j, t, _, _ in want:  # peek saw the event it then took
        assert peeked[j] == t
    empty = [j for j in range(len(ops)) if ops[j] == OP_POP and got_k[j] < 0]
    assert all(np.isinf(peeked[j]) for j in empty)


def test_far_future_events_wait_in_the_heap_and_come_back():
    # 8 buckets of 1 s: an event 100 s ahead must overflow, then pop in order.
    world = _world(1.0, 8)
    ops = np.array([OP_PUSH, OP_PUSH, OP_PUSH, OP_POP, OP_POP, OP_POP], np.int64)
    a = np.array([100.0, 0.5, 50.0, 0, 0, 0])
    b = np.array([1, 2, 3, 0, 0, 0], np.int64)
    ref = pack(world)
    got_t, _, got_i, _ = _drive(ref, ops[:3], a[:3], b[:3])
    assert world.I[S.HEAP_N] == 2  # both far events overflowed; 0.5 s is in the wheel
    got_t, _, got_i, _ = _drive(ref, ops[3:], a[3:], b[3:])
    assert list(got_i) == [2, 3, 1]
    assert list(got_t) == [0.5, 50.0, 100.0]
