"""Client eviction (``maxmemory-clients``, redsim/model/client_eviction.py) and
Redis closing a busy client (redsim/model/client_close.py): who is evicted, in
what order, and what the clients see.

The selection follows src/networking.c:evictClients (7.0): while the clients'
memory is at or over the limit, free the clients of the largest non-empty
bucket (by the bit length of their memory: <= 32 KB, 64 KB, ...) in the order
they entered it. The order is checked by hand on a tiny world; a run checks
that requests on evicted connections fail, are retried and are all accounted
for.
"""

from __future__ import annotations

import pytest

from redsim import load_scenario
from redsim.config import ScenarioError
from redsim.driver import simulate
from redsim.model import client_eviction, client_memory
from redsim.model import state as S
from tests.engine_helpers import tiny_world

KB = 1024


@pytest.mark.parametrize("mem, bucket", [
    (1, 0), (32 * KB - 1, 0), (32 * KB, 1), (64 * KB - 1, 1), (64 * KB, 2),
    (2**32 - 1, 17), (2**32, 18), (2**40, 18),
])
def test_memory_buckets_are_the_bit_length_of_the_memory(mem, bucket):
    # getMemUsageBucket: bit length clamped to 15..33, minus 15. 32 KB = 2^15 has
    # 16 bits: the second bucket; 4 GB = 2^32 has 33 bits: the last.
    assert client_memory.mem_bucket(mem) == bucket


def _world_with_clients(limit_kb: int, mems_kb: list[float], entered: list[int]):
    w, _ = tiny_world({"name": "ce", "server": {"maxmemory-clients": f"{limit_kb}kb"},
                       "clients": [{"name": "a", "processes": len(mems_kb),
                                    "pool": {"max-size": 1}}]})
    total = 0
    for c, (m, e) in enumerate(zip(mems_kb, entered, strict=True)):
        mem = int(m * KB)
        w.cn_mem[c] = mem
        w.cn_ce_bucket[c] = client_memory.mem_bucket(mem) if mem else -1
        w.cn_ce_entered[c] = e
        total += mem
    w.I[S.MEM_CLIENTS] = total
    w.I[S.CONNECTED] = sum(1 for m in mems_kb if m)
    return w


@pytest.mark.usefixtures("python_kernel")  # a step on a World of arrays, as Python
def test_the_largest_bucket_goes_first_then_the_earliest_into_the_next():
    # 40 + 80 + 80 + 200 + 0 + 40 = 440 KB of clients, in buckets (bit length
    # - 15) 1, 2, 2, 3, -, 1.
    mems = [40, 80, 80, 200, 0, 40]
    entered = [5, 3, 1, 9, 0, 2]
    w = _world_with_clients(400, mems, entered)
    # 440 >= 400: free client 3 (the only one in bucket 3): 240 KB < 400. Stop.
    assert client_eviction.evict_clients(w) == 1
    assert [int(m) // KB for m in w.cn_mem] == [40, 80, 80, 0, 0, 40]
    w = _world_with_clients(250, mems, entered)
    # 440 -> 240 after client 3: under 250, one again.
    assert client_eviction.evict_clients(w) == 1
    w = _world_with_clients(200, mems, entered)
    # 240 >= 200: bucket 2 next, client 2 entered it first (1 < 3): 160 KB. Stop.
    assert client_eviction.evict_clients(w) == 2
    assert [int(m) // KB for m in w.cn_mem] == [40, 80, 0, 0, 0, 40]
    assert int(w.I[S.STAT_EVICTED_CLIENTS]) == 2
    assert int(w.I[S.MEM_CLIENTS]) == 160 * KB
    assert int(w.I[S.CONNECTED]) == 3
    assert [int(x) for x in w.cn_srv_closed] == [0, 0, 1, 1, 0, 0]


@pytest.mark.usefixtures("python_kernel")
def test_the_limit_is_at_least_128_kb():
    # getClientEvictionLimit raises a smaller setting to 128 KB: 120 KB of
    # clients is over 100 KB but under 128 KB, so nobody is evicted.
    w = _world_with_clients(100, [40, 40, 40], [1, 2, 3])
    assert int(w.I[S.CE_LIMIT]) == 128 * KB
    assert client_eviction.evict_clients(w) == 0
    w = _world_with_clients(100, [40, 40, 40, 40], [4, 2, 3, 1])
    # 160 KB: free the one that entered bucket 1 first (client 3): 120 KB, under 128.
    assert client_eviction.evict_clients(w) == 1
    assert [int(m) // KB for m in w.cn_mem] == [40, 40, 40, 0]


def _big_replies(limit: str | None) -> dict:
    server = {"maxmemory-clients": limit} if limit else {}
    return {
        "name": "big-replies", "duration": 20, "seed": 3, "sample-interval": 1,
        "server": server, "network": {"rtt": "200us"},
        "clients": [{"name": "bulk", "processes": 12, "pipeline": 8,
                     "think": {"distribution": "exponential", "mean": "5ms"},
                     "pool": {"max-size": 1, "retry-backoff": "10ms"},
                     "mix": {"GET": 1}, "keyspace": {"keys": 200},
                     "value-size": {"distribution": "fixed", "mean": "100kb"}}],
    }


def test_requests_on_evicted_connections_fail_and_are_all_accounted_for():
    # 12 clients each waiting for 8 x 100 KB of replies, written 64 KB per pass:
    # several hold ~800 KB at once, over a 4 MB limit when more than five do,
    # so clients are evicted; without a limit none is.
    free = simulate(load_scenario(_big_replies(None)), progress=False).summary
    assert (free["evicted_clients"], free["requests_failed"]) == (0, 0)
    r = simulate(load_scenario(_big_replies("4mb")), progress=False)
    s = r.summary
    assert s["evicted_clients"] > 10
    assert s["connections_closed_by_server"] == s["evicted_clients"]
    assert 0 < s["requests_failed"] <= s["evicted_clients"]
    # Every request issued completed, failed, was rejected or is still out.
    assert s["requests_issued_total"] == (s["requests_completed_total"] + s["requests_failed"]
                                          + s["requests_rejected"]
                                          + s["requests_pending_at_end"])
    # A failed request's source dials a new connection for its retry.
    assert s["total_connections_received"] >= s["requests_failed"]
    assert r.timeseries["evicted_clients"].iloc[-1] == s["evicted_clients"]
    assert s["requests_completed_total"] > 0


def test_maxmemory_clients_needs_redis_7():
    with pytest.raises(ScenarioError, match=r"maxmemory-clients.*6\.2"):
        load_scenario({"name": "x", "redis-version": "6.2",
                       "server": {"maxmemory-clients": "1mb"}, "clients": [{"name": "a"}]})


def _big_sets(value: str, server: dict) -> dict:
    return {
        "name": "big-sets", "duration": 5, "seed": 1, "sample-interval": 1,
        "server": server, "network": {"rtt": "200us"},
        "clients": [{"name": "loader", "processes": 1,
                     "think": {"distribution": "fixed", "mean": "100ms"},
                     "pool": {"max-size": 1, "retry-backoff": "10ms"},
                     "mix": {"SET": 1}, "keyspace": {"keys": 10, "preload": 0},
                     "value-size": {"distribution": "fixed", "mean": value}}],
    }


@pytest.mark.parametrize("value, server, refused", [
    # A 2 MB argument: over proto-max-bulk-len 1mb (a protocol error at its
    # header), over client-query-buffer-limit 1mb (the read of the argument
    # fills the buffer past it), under both defaults (512 MB, 1 GB).
    ("2mb", {"proto-max-bulk-len": "1mb"}, True),
    ("2mb", {"client-query-buffer-limit": "1mb"}, True),
    ("2mb", {}, False),
    # 1 MB of value with its CRLF is 1 MB + 2 bytes of argument: at the limit, not past it.
    ("1mb", {"proto-max-bulk-len": "1mb"}, False),
])
def test_an_argument_or_query_over_its_limit_closes_the_client(value, server, refused):
    s = simulate(load_scenario(_big_sets(value, server)), progress=False).summary
    if refused:
        # Every SET fails, on a connection Redis closed; none stores its key.
        assert s["requests_completed_total"] == 0
        assert s["requests_failed"] == s["connections_closed_by_server"] > 10
        assert s["keys_end"] == 0
    else:
        assert (s["requests_failed"], s["connections_closed_by_server"]) == (0, 0)
        assert s["requests_completed_total"] > 10


def _send_big_set(srv, size: int) -> tuple[bytes, bool]:
    """SET k to ``size`` bytes on a raw socket: (what came back, closed by the server)."""
    import socket

    s = socket.create_connection((srv.host, srv.port), timeout=5)
    got = b""
    try:
        s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % size + b"x" * size + b"\r\n")
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return got, True
            got += chunk
            if got.endswith(b"\r\n") and got.startswith(b"+OK"):
                return got, False
    except (ConnectionResetError, BrokenPipeError):
        return got, True
    finally:
        s.close()


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.parametrize("config", [{"proto-max-bulk-len": "1mb"},
                                    {"client-query-buffer-limit": "1mb"}, {}])
def test_a_real_redis_closes_a_client_over_either_limit(config):
    # What the model does with the same 2 MB SET: the connection is closed and
    # the key not stored, or, under the defaults, +OK.
    from redsim.live.server import RedisServer

    with RedisServer(config=config) as srv:
        got, closed = _send_big_set(srv, 2 * 1024 * 1024)
        stored = srv.client().exists("k")
    assert (closed, stored) == ((True, 0) if config else (False, 1)), got[:80]
