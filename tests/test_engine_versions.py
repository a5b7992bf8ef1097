"""What ``redis-version: "6.2"`` changes in the main thread, worked out by hand.

Reference §0, §1.1, §1.3 and §1.5: 6.2 reads at most 16 KB per ``read()`` even
inside a big bulk argument, where 7.x reads the rest of the argument at once;
6.2 makes one ``write()`` per reply buffer where 7.x makes one ``writev``; and
6.2 computes the poll timeout before ``beforeSleep``, so it oversleeps by
beforeSleep's length.

Every case: one closed-loop source on one connection, no network delay, and
only the costs named in the test (the rest zero).
"""

from __future__ import annotations

import pytest

from redsim import load_scenario, simulate
from redsim.model.commands import COMMANDS, SHAPE_KEY_VALUE, SHAPE_MULTI_SET
from redsim.model.protocol import big_args, bulk, header, request_bytes
from tests.engine_helpers import ZERO_OVERHEAD

US = 1e-6


def _scenario(version: str, *, command: str, value: int, pipeline: int = 1,
              think: str = "1ms", duration: str = "2.5ms", **cpu) -> dict:
    costs = dict(ZERO_OVERHEAD, **cpu.pop("base", {}))
    costs["commands"] = {command: {"fixed": cpu.pop("command", "10us"), "per-byte": 0}}
    return {
        "name": f"v{version}", "redis-version": version, "duration": duration,
        "sample-interval": duration, "network": {"rtt": 0},
        "engine": {"cpu": costs},
        "clients": [{"name": "A", "think": think, "pool": {"max-size": 1},
                     "pipeline": pipeline, "mix": {command: 1}, "key-size": 10,
                     "value-size": value}],
    }


def _latency(sc: dict) -> float:
    s = simulate(load_scenario(sc)).summary
    assert s["requests_completed"] >= 1
    assert s["latency_max_s"] == pytest.approx(s["latency_mean_s"], abs=1e-12)  # all alike
    return s["latency_mean_s"]


# ---- reads --------------------------------------------------------------------


def test_big_argument_layout_matches_the_resp_encoding():
    # SET <10-byte key> <100 000-byte value>:
    #   *3\r\n (4) + $3\r\nSET\r\n (9) + $10\r\n<key>\r\n (17) + $100000\r\n (9)
    # -> the payload starts at byte 39; payload + CRLF = 100 002 bytes, ending the request.
    first, period, n, length = big_args(SHAPE_KEY_VALUE, 3, 10, 100_000, 1, 0)
    assert (first, n, length) == (39, 1, 100_002)
    assert first + length == request_bytes(SHAPE_KEY_VALUE, 3, 10, 100_000, 1, 1, 0)
    # MSET k1 v1 k2 v2 with 40 000-byte values: the second value starts one
    # key+value later; values under 32 KB are not big.
    first, period, n, length = big_args(SHAPE_MULTI_SET, 4, 10, 40_000, 2, 0)
    assert first == header(5) + bulk(4) + bulk(10) + len("$40000\r\n")
    assert period == bulk(10) + bulk(40_000) and n == 2 and length == 40_002
    assert big_args(SHAPE_KEY_VALUE, 3, 10, 32_767, 1, 0)[2] == 0
    assert COMMANDS["SET"].shape == SHAPE_KEY_VALUE


@pytest.mark.parametrize("version, latency_us", [
    # Two pipelined SETs of 100 000 bytes (100 041 request bytes each, value
    # payload at 39..100 041). Costs: 1 µs per iteration, 1 µs per read(), 10 µs per SET.
    # 7.x, the connection's first request: read 16 384 B into the first, non-greedy
    #   buffer (t0+1); then, inside the big value, one read of the remaining
    #   83 657 B that ends exactly at the command's end (+1 iter +1 read +10 SET).
    #   The argument took the query buffer over and Redis made a new one of
    #   bulklen + 2 (src/networking.c processMultibulkBuffer), room >= 16 KB: the
    #   next read asks for all its room and gets the whole second SET (+1+1+10);
    #   next iteration +1 writes the replies: 1 + 12 + 12 + 1 = 26 µs. (Before
    #   PR #9003's greedy read was modelled, the second SET also took two reads.)
    ("7.2", 26),
    # 6.2: 16 KB reads, the last one cut at the value's end: 6 × 16 384 + 1 737 B
    #   = 7 reads per SET, 14 in all, each after the first costing an iteration
    #   too: 1 + 13 × 2 + 2 × 10 + 1 = 48 µs. (Without the cut, 16 KB reads
    #   straight through 200 082 bytes would take 13.)
    ("6.2", 48),
])
def test_reads_of_a_big_argument(version, latency_us):
    # One request only (it is sent at 1 ms): a later one finds the buffer
    # the first left, and reads differently in 7.x.
    sc = _scenario(version, command="SET", value=100_000, pipeline=2, duration="1.2ms",
                   base={"iteration": "1us", "read": "1us"})
    assert _latency(sc) == pytest.approx(latency_us * US, abs=1e-12)


# ---- writes -------------------------------------------------------------------


@pytest.mark.parametrize("version, latency_us", [
    # 20 pipelined GETs of 1 000-byte values: 20 replies of 1 007 bytes (20 140 B)
    # read in one read; costs 1 µs per iteration, 10 µs per GET, 1 µs per write call.
    # read + 20 GETs = 200 µs, next iteration +1, then the write:
    # 7.x: one writev of c->buf and the list -> +1 = 202 µs.
    ("7.2", 202),
    # 6.2: c->buf takes 16 replies (16 112 of 16 384 B), the 17th does not fit and
    #   goes to a reply node with the other three: a write() each -> +2 = 203 µs.
    ("6.2", 203),
])
def test_writes_per_reply_buffer(version, latency_us):
    sc = _scenario(version, command="GET", value=1000, pipeline=20,
                   base={"iteration": "1us", "write": "1us"})
    assert _latency(sc) == pytest.approx(latency_us * US, abs=1e-12)


# ---- the poll timeout ----------------------------------------------------------


@pytest.mark.parametrize("version, latency_us", [
    # hz 10: serverCron first due at 100 ms and costs 1 000 µs; each iteration's
    # beforeSleep costs 50 µs; GET 10 µs. The source's one request arrives at
    # 100.020 ms. At t=0 the first beforeSleep ends at 50 µs, then the poll sleeps.
    # 7.x: timeout computed after beforeSleep, so it wakes at 100 ms; cron runs to
    #   101.000; next iteration +50 -> 101.050 reads the GET -> 101.060; +50 writes
    #   at 101.110: 101.110 - 100.020 = 1 090 µs.
    ("7.2", 1090),
    # 6.2: the 100 ms timeout was computed at t=0, before beforeSleep, so the
    #   poll sleeps until 100.050; the GET wakes it at 100.020 -> 100.030, then the
    #   cron (due) -> 101.030; +50 writes at 101.080: 1 060 µs.
    ("6.2", 1060),
])
def test_poll_timeout_is_computed_before_before_sleep_in_6_2(version, latency_us):
    sc = _scenario(version, command="GET", value=64, think="100.02ms", duration="110ms",
                   base={"iteration": "50us", "cron": "1000us"})
    sc["server"] = {"hz": 10, "dynamic-hz": False}
    s = simulate(load_scenario(sc)).summary
    assert s["requests_completed"] == 1
    assert s["latency_mean_s"] == pytest.approx(latency_us * US, abs=1e-12)


def test_7_0_and_7_2_behave_alike():
    sc = _scenario("7.0", command="SET", value=100_000, pipeline=2, duration="1.2ms",
                   base={"iteration": "1us", "read": "1us"})
    assert _latency(sc) == pytest.approx(26 * US, abs=1e-12)
