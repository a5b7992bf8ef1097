"""The client ↔ server network: each request's round trip.

No Redis source: the path between a client and Redis (both hosts' kernel
stacks, NICs, the wire and switches). A request reaches Redis half a round
trip after the client sent it; its reply reaches the client half a round trip
after the main thread wrote its last byte.

``network.rtt`` is a duration or a distribution of them. A fixed round trip
keeps both directions in the delay lines (``events.py``): events born in time
order, O(1). A distribution draws one round trip per request when it is sent
(from the network's own random stream, after the groups' streams, so the
groups' numbers do not move) and keeps it on the connection: the request goes
out in half of it and the reply comes back in the other half. Such arrivals
and replies overtake each other, so they go to the timing wheel.

Why the spread matters: with fixed round trips and fixed costs, closed-loop
clients fall into step — a batch read in one iteration is answered together
in ``beforeSleep`` and comes back together — and the latency distribution
collapses onto its mean. Real round trips jitter (wake-ups, softirq
scheduling, interrupt moderation), which breaks the cohorts.

Simplifications:
- The two halves of a round trip are equal; the out and back directions are
  not drawn apart.
- Connection set-up (the TCP and TLS handshakes, a refusal, the EOF of a
  closed connection) takes the mean round trip.
"""

from __future__ import annotations

from redsim.model import events
from redsim.model.jit import hot_leaf, leaf
from redsim.model.rng import draw
from redsim.model.state import (
    EV_ARRIVE,
    EV_REPLY,
    LINE_ARRIVE,
    LINE_REPLY,
    NET_STREAM,
    RTT_HALF,
    RTT_HIGH,
    RTT_JITTER,
    RTT_KIND,
    RTT_LOW,
    RTT_SIGMA,
)

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "RTT_HALF", "f8", "s", "config",
     "half the mean network round trip (network.rtt's mean / 2): one-way delay, s"),
    ("I", "RTT_JITTER", "i8", "-", "config",
     "1: network.rtt is a distribution, drawn per request; 0: fixed"),
    ("I", "RTT_KIND", "i8", "-", "config", "network.rtt's distribution kind (DIST_*)"),
    ("F", "RTT_LOW", "f8", "s", "config",
     "network.rtt's low bound (empirical: first table point; mixture: first component)"),
    ("F", "RTT_HIGH", "f8", "s", "config",
     "network.rtt's high bound (empirical: last table point; mixture: last component)"),
    ("F", "RTT_SIGMA", "f8", "-", "config", "network.rtt's lognormal sigma"),
    ("I", "NET_STREAM", "i8", "-", "config",
     "the network's random stream (after every group's), when network.rtt is drawn"),
    ("cn", "half", "f8", "s", "state",
     "half the round trip of the connection's current request (drawn network.rtt only), s"),
)


@leaf
def half(w, c):
    """The one-way delay of connection c's current request, s."""
    if w.I[RTT_JITTER]:
        return w.cn_half[c]
    return w.F[RTT_HALF]


@hot_leaf
def to_server(w, c, t_send, in_step):
    """Connection c's request leaves the client at ``t_send``: schedule its
    arrival at Redis. ``in_step``: sent at the clock's present (not after a
    handshake), so a fixed delay keeps the arrival line in order."""
    F = w.F
    if w.I[RTT_JITTER]:
        h = 0.5 * draw(w, w.I[NET_STREAM], w.I[RTT_KIND], 2.0 * F[RTT_HALF], F[RTT_LOW],
                       F[RTT_HIGH], F[RTT_SIGMA])
        w.cn_half[c] = h
        events.push(w, t_send + h, EV_ARRIVE, c)
    elif in_step:
        events.line_push(w, LINE_ARRIVE, t_send + F[RTT_HALF], c)
    else:
        events.push(w, t_send + F[RTT_HALF], EV_ARRIVE, c)


@hot_leaf
def to_client(w, c, t_write, in_order):
    """The last byte of connection c's reply left Redis at ``t_write``: schedule
    its arrival at the client. ``in_order``: written on the main thread's clock,
    so a fixed delay keeps the reply line in order."""
    if w.I[RTT_JITTER]:
        events.push(w, t_write + w.cn_half[c], EV_REPLY, c)
    elif in_order:
        events.line_push(w, LINE_REPLY, t_write + w.F[RTT_HALF], c)
    else:
        events.push(w, t_write + w.F[RTT_HALF], EV_REPLY, c)


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """``network.rtt``: its mean, and its distribution when it is not fixed.
    Runs after clients.configure (the groups decide the network's stream)."""
    import numpy as np

    from redsim.model import state as S

    rtt = b.scenario.network.rtt
    b.F[S.RTT_HALF] = float(rtt.mean) / 2.0
    jitter = rtt.kind != "fixed"
    b.I[S.RTT_JITTER] = 1 if jitter else 0
    b.I[S.NET_STREAM] = 1 + S.STREAMS_PER_GROUP * b.size.groups
    kind, low, high, sigma = S.DIST_FIXED, 0.0, 0.0, 0.0  # read only with jitter
    if jitter:
        kind, mean, low, high, sigma = b.dist(rtt)
        # draw's mean is the round trip's; RTT_HALF * 2 gives it back exactly
        assert mean == 2.0 * b.F[S.RTT_HALF]
    b.I[S.RTT_KIND] = kind
    b.F[S.RTT_LOW], b.F[S.RTT_HIGH], b.F[S.RTT_SIGMA] = low, high, sigma
    b.fill("cn", half=np.zeros(b.size.conns))

