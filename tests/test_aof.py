"""The AOF write path (``model/aof.py``) against hand calculations.

Each scenario strips the server to the mechanism under test: no per-syscall
CPU, a fixed fdatasync latency, one or a few closed-loop clients, so that
the expected figures follow from Redis's rules in a line of arithmetic.
"""

from __future__ import annotations

import pytest

import redsim
from tests.engine_helpers import ZERO_OVERHEAD

FSYNC = 5e-3  # s, fixed fdatasync latency
RTT = 200e-6  # s
SET_US = 10.0  # µs per SET


def _scenario(policy: str, *, threads: int = 1, mix: dict | None = None, fsync: float = FSYNC,
              duration: float = 10.0, think: float = 0.0, **server) -> dict:
    cpu = dict(ZERO_OVERHEAD)
    cpu.update({"aof-write": 0, "aof-write-per-byte": 0,
                "commands": {"SET": {"fixed": SET_US, "per-byte": 0},
                             "GET": {"fixed": SET_US, "per-byte": 0}}})
    return {
        "name": f"aof-{policy}", "duration": duration, "sample-interval": 0.5, "seed": 3,
        "server": {"appendonly": True, "appendfsync": policy, "save": "", **server},
        "disk": {"fsync": fsync, "write-bandwidth": "1000gb/s"},
        "engine": {"cpu": cpu}, "network": {"rtt": RTT},
        "clients": [{"kind": "closed", "processes": 1, "threads": threads,
                     "pool": {"max-size": threads}, "think": think,
                     "mix": mix or {"SET": 1}, "key-size": 16, "value-size": 64,
                     "keyspace": {"keys": 1000}}],
    }


def test_always_one_client_waits_one_fsync_per_write() -> None:
    # Each SET: RTT + its execution + one fdatasync before the reply leaves.
    r = redsim.simulate(_scenario("always"))
    per_request = RTT + SET_US * 1e-6 + FSYNC
    assert r.summary["throughput_rps"] == pytest.approx(1 / per_request, rel=0.01)
    # One fsync per write, and the main thread spends nearly all its time in them.
    assert r.summary["aof_fsyncs"] == pytest.approx(r.summary["total_commands_processed"], abs=1)
    assert r.summary["cpu_fsync_share"] == pytest.approx(FSYNC / per_request, rel=0.01)
    assert "aof-fsync-always" not in r.latency_events  # the monitor is off by default


def test_always_reads_never_fsync() -> None:
    r = redsim.simulate(_scenario("always", mix={"GET": 1}))
    assert r.summary["aof_fsyncs"] == 0
    assert r.summary["throughput_rps"] == pytest.approx(1 / (RTT + SET_US * 1e-6), rel=0.01)


def test_always_group_commit() -> None:
    # Ten clients whose SETs arrive together share one write and one fsync per
    # iteration: ten times the single client's throughput, the same fsync rate.
    one = redsim.simulate(_scenario("always", duration=5.0))
    ten = redsim.simulate(_scenario("always", threads=10, duration=5.0))
    assert ten.summary["throughput_rps"] == pytest.approx(10 * one.summary["throughput_rps"],
                                                          rel=0.02)
    assert ten.summary["aof_fsyncs"] == pytest.approx(one.summary["aof_fsyncs"], rel=0.02)


def test_aof_grows_by_the_writes_encoding() -> None:
    # SET key(16) value(64) in RESP: *3\r\n $3\r\nSET\r\n $16\r\n<key>\r\n $64\r\n<value>\r\n
    # = 4 + (4+5) + (5+16+2) + (5+64+2) = 107 bytes per write.
    sc = _scenario("no", duration=3.0)
    r = redsim.simulate(sc)
    r0 = redsim.simulate({**sc, "duration": 0.5, "clients": [{**sc["clients"][0], "start": 1.0}]})
    base = r0.summary["aof_current_size_end"]  # the preloaded dataset's AOF, no writes
    assert r.summary["aof_current_size_end"] - base == 107 * r.summary["total_commands_processed"]


def test_everysec_fsyncs_once_a_second_in_the_background() -> None:
    r = redsim.simulate(_scenario("everysec", duration=10.0))
    # Seconds 1..9 each start one background fsync (the clock starts at second 0).
    assert r.summary["aof_fsyncs"] == 9
    assert r.summary["cpu_fsync_share"] == 0.0
    assert r.summary["aof_delayed_fsync"] == 0
    assert r.summary["latency_max_s"] < 2 * RTT + 1e-4


def test_everysec_postpones_then_blocks_behind_a_slow_fsync() -> None:
    # A 3 s fsync: started at second 1, it runs to 4.0. Writes are postponed
    # from second 1 (the buffer grows); at second 3, 2 s later, Redis writes
    # anyway (aof_delayed_fsync) and write() blocks until the fsync ends at 4.0:
    # a ~1 s stall. The next fsync starts at 4.0 and the cycle repeats every 3 s.
    r = redsim.simulate(_scenario("everysec", fsync=3.0, duration=10.0, think=1e-3,
                                  **{"latency-monitor-threshold": 100}))
    assert r.summary["aof_delayed_fsync"] == 3  # at ~3, ~6 and ~9 s
    assert r.summary["latency_max_s"] == pytest.approx(1.0, abs=0.01)
    assert r.summary["aof_buffer_length_max"] > 0
    # The monitor stamps a sample when the write returns: at 4, 7 and 10 s.
    pending = r.latency_events["aof-write-pending-fsync"]
    assert list(pending["time"]) == [4.0, 7.0, 10.0]
    assert pending["latency_ms"].between(990, 1000).all()


def test_no_policy_never_fsyncs() -> None:
    r = redsim.simulate(_scenario("no", duration=5.0))
    assert r.summary["aof_fsyncs"] == 0 and r.summary["cpu_fsync_share"] == 0.0


def test_no_appendfsync_on_rewrite_skips_fsync_while_a_child_runs() -> None:
    sc = _scenario("always", duration=4.0, **{"no-appendfsync-on-rewrite": True})
    sc["events"] = [{"at": 1.0, "do": "bgrewriteaof"}]
    sc["host"] = {"child-keys-per-sec": 100}  # 1000 keys: the child lives 10 s
    r = redsim.simulate(sc)
    ts = r.timeseries
    during = ts.loc[2.0:4.0]  # windows from [1.5, 2.0) on: the fork came just after 1.0
    assert (during["aof_rewrite_in_progress"] == 1).all()
    assert (during["fsyncs_per_sec"] == 0).all()
    assert (ts.loc[:1.0, "fsyncs_per_sec"] > 100).all()


def test_always_fsync_queues_behind_the_fork_childs_writes() -> None:
    # A BGSAVE child writes a ~200 MB RDB in 4 MB chunks (each a write at
    # 50 MB/s plus an fsync: ~81 ms), issued every ~7 ms while it serialises
    # 200 000 keys at 600K keys/s. The disk queue fills with ~4 s of its
    # chunks, and the main thread's fdatasync waits behind them (reference §7,
    # #1154: one BGSAVE saturating the disk stalls the AOF).
    sc = _scenario("always", duration=8.0, fsync=1e-3)
    sc["disk"]["write-bandwidth"] = "50mb/s"
    sc["clients"][0]["keyspace"]["keys"] = 200_000
    sc["clients"][0]["value-size"] = 1000
    sc["events"] = [{"at": 2.0, "do": "bgsave"}]
    r = redsim.simulate(sc)
    ts = r.timeseries
    assert ts.loc[:2.0, "latency_max"].max() < 5e-3
    assert ts.loc[2.5:, "latency_max"].max() > 2.0
    child = r.forks.iloc[0]
    chunks = -(-child["rss"] // (4 * 2**20))  # at most this many chunks of 4 MB
    assert child["end"] - child["time"] <= chunks * (4 * 2**20 / (50 * 2**20) + 1e-3) + 0.5
