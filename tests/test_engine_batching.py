"""Redis's reply batching, checked against latencies worked out by hand.

Two closed-loop sources, A (think exactly 1.000 ms) and B (think 1.005 ms),
each on its own connection, no network delay. Costs: 1 µs per event-loop
iteration (epoll + beforeSleep), 10 µs per GET, 2 µs per reply write, nothing
else. serverCron is first due at 100 ms, after the run ends.
"""

from __future__ import annotations

import pytest

from redsim import load_scenario, simulate
from tests.engine_helpers import ZERO_OVERHEAD


def _scenario(batching: bool) -> dict:
    cpu = dict(ZERO_OVERHEAD, iteration="1us", write="2us",
               commands={"GET": {"fixed": "10us", "per-byte": 0}})

    def source(name, think):
        return {"name": name, "processes": 1, "threads": 1, "think": think,
                "pool": {"max-size": 1}, "mix": {"GET": 1}}

    return {"name": "hand", "duration": "2.5ms", "sample-interval": "2.5ms",
            "network": {"rtt": 0}, "engine": {"reply-batching": batching, "cpu": cpu},
            "clients": [source("A", "1ms"), source("B", "1.005ms")]}


def test_reply_batching_matches_hand_worked_latencies():
    # Batching on (Redis): replies go out in the *next* iteration's beforeSleep.
    #  t=1.000 A arrives, thread wakes; GET A runs 1.000-1.010. (B arrives 1.005.)
    #  next iteration: +1 µs -> 1.011, write A +2 -> 1.013.   A: 13 µs
    #  poll at 1.013 sees B; GET B 1.013-1.023; +1 -> 1.024, write +2 -> 1.026.
    #                                                         B: 1.026-1.005 = 21 µs
    #  A again at 1.013+1.000 = 2.013: GET -> 2.023, +1, +2 -> 2.026.   A: 13 µs
    #  B again at 1.026+1.005 = 2.031 (thread asleep): -> 2.044.       B: 13 µs
    #  A's third request would start at 3.026 ms, after the 2.5 ms horizon.
    r = simulate(load_scenario(_scenario(batching=True)))
    s = r.summary
    assert s["requests_completed"] == 4
    assert s["latency_mean_s"] == pytest.approx((13 + 21 + 13 + 13) / 4 * 1e-6, abs=1e-12)
    assert s["latency_max_s"] == pytest.approx(21e-6, abs=1e-12)
    # Completed iterations: the one that wakes for A at 1.000, the one that writes A
    # and reads B, the one that writes B then sleeps until A at 2.013, and the one
    # that writes A then sleeps until B at 2.031. The last (writing B at 2.044) is
    # still asleep at the horizon.
    assert s["eventloop_cycles_per_sec"] * 2.5e-3 == pytest.approx(4)


def test_without_batching_each_reply_is_written_at_once():
    #  A: GET 1.000-1.010, write +2 -> 1.012.                 A: 12 µs
    #  next iteration +1 -> 1.013; B: GET 1.013-1.023, write -> 1.025.  B: 20 µs
    #  A at 2.012: GET, write -> 2.024 (12 µs); B at 1.025+1.005 = 2.030 -> 2.042 (12 µs).
    r = simulate(load_scenario(_scenario(batching=False)))
    s = r.summary
    assert s["requests_completed"] == 4
    assert s["latency_mean_s"] == pytest.approx((12 + 20 + 12 + 12) / 4 * 1e-6, abs=1e-12)
    assert s["latency_max_s"] == pytest.approx(20e-6, abs=1e-12)
