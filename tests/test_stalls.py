"""Stalls by cause (observe/stalls.py, Result.stalls, the verdict line and the
testing API's messages): a fork's stall against the fork's own record, the
threshold, the requests it holds up."""

from __future__ import annotations

import pytest

from redsim import load_scenario, simulate
from redsim.cli import verdict
from redsim.testing import assert_no_burst
from tests.engine_helpers import changed

# A main thread kept busy by 64 closed-loop connections with no think time
# (every connection always has one request in flight), and a BGSAVE at 0.5 s
# over 1.2M preloaded keys: the fork() call holds the main thread for the
# page-table copy of the resident set (model/fork.py). Every other span of
# the main thread here is a few us (one client's read, GET and write; a
# cron), so with a 100 us threshold the fork is the one stall.
FORKING = {
    "name": "forking", "duration": 1.0, "warmup": 0.2, "sample-interval": 0.1,
    "stall-threshold": "100us",
    "server": {"save": ""},
    "network": {"rtt": "50us"},
    "events": [{"at": 0.5, "do": "bgsave"}],
    "clients": [{"name": "app", "processes": 64, "pool": {"max-size": 1},
                 "mix": {"GET": 1}, "keyspace": {"keys": 1_200_000}}],
}


@pytest.fixture(scope="module")
def forked():
    return simulate(load_scenario(FORKING), seed=2)


def test_a_fork_is_a_stall_with_the_forks_own_length_and_time(forked):
    fork = forked.forks.iloc[0]
    st = forked.stalls
    assert list(st["cause"]) == ["fork"]
    assert st["duration_s"].iloc[0] == fork["fork_s"]  # the same span, recorded twice
    assert st["time"].iloc[0] == pytest.approx(fork["time"], abs=1e-12)
    s = forked.summary
    assert s["stalls"] == 1 and s["stall_causes"] == "fork=1"
    assert s["stall_max_s"] == fork["fork_s"]


def test_a_stall_holds_up_every_request_in_flight(forked):
    st = forked.stalls.iloc[0]
    assert st["requests_delayed"] == 64  # one per connection, none thinking
    # Some request waited out the whole fork on top of its own service.
    assert st["worst_latency_s"] >= st["duration_s"]


def test_a_span_below_the_threshold_is_no_stall(forked):
    above = forked.forks["fork_s"].iloc[0] * 1.01
    r = simulate(load_scenario(changed(FORKING, **{"stall-threshold": above})), seed=2)
    assert r.summary["stalls"] == 0 and r.stalls.empty and r.summary["stall_causes"] == ""


def test_the_verdict_says_bursts_stalls_and_headroom():
    s = {"bursts": 3, "cycle_period_s": 600.0, "stalls": 2, "stall_causes": "aof-write=2",
         "stall_max_s": 1.2, "utilisation_peak": 0.9, "maxmemory": 2**30,
         "used_memory_peak": 2**30 - 100 * 2**20}
    assert verdict(s) == ("3 eviction bursts (every 10.0 min); 2 stalls (aof-write x2; "
                          "longest 1.200 s); CPU headroom 10% in the busiest window; "
                          "memory headroom 100 MB of maxmemory")
    assert verdict({"bursts": 0, "stalls": 0}) == "no eviction burst; no stall"


def test_a_p99_failure_names_the_stall(tmp_path):
    with pytest.raises(AssertionError) as e:
        assert_no_burst(FORKING, max_p99="0.1ms", cache=tmp_path)
    assert "1 stall (fork=1), the longest" in str(e.value)
