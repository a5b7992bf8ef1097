"""writeToClient's 64 KB cap and the write handler (``model/event_loop.py``).

A reply over ``NET_MAX_WRITES_PER_EVENT`` (64 KB) is written 64 KB per pass:
``handleClientsWithPendingWrites`` writes the first 64 KB in ``beforeSleep``
and, as bytes are left, installs the client's write handler
(``src/networking.c``). The socket is writable, so the next ``epoll_wait``
returns at once and the handler writes on: the reply leaves within one event
loop's few iterations, not at the next timer.

One connection GETs a preloaded 300 KB value every 50 ms over a 100 µs RTT, on
an otherwise idle server: the reply takes 5 passes (4 × 64 KB + 44 KB). Each
pass is one write of at most 64 KB (a few µs of CPU at the default costs) and
one loop iteration; the request's latency is the RTT plus those, well under
1 ms. Had a leftover waited for the next timer, serverCron at hz 10, a GET
would wait up to 100 ms four times over (nothing else wakes the loop).
"""

from __future__ import annotations

from redsim import load_scenario, simulate


def test_a_reply_past_64kb_leaves_without_waiting_for_a_timer():
    sc = load_scenario({
        "name": "big-reply", "duration": 3, "warmup": 0.5, "server": {"save": ""},
        "network": {"rtt": "100us"},
        "clients": [{"name": "app", "processes": 1, "think": "50ms", "mix": {"GET": 1},
                     "keyspace": {"keys": 10}, "value-size": "300kb"}]})
    r = simulate(sc, seed=1)
    assert r.summary["requests_completed"] > 40  # ~1 every 50 ms over 2.5 s
    assert r.summary["latency_max_s"] < 1e-3
