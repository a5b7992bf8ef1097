"""Client timeouts, reconnects with backoff and maxclients refusals
(``model/client_failures.py``): each against a hand-worked timeline, and the storm a
brief stall turns into (``scenarios/reconnect-storm*.yaml``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from redsim import load_scenario, simulate
from tests.engine_helpers import ZERO_OVERHEAD

ROOT = Path(__file__).resolve().parents[1]
RTT = 200e-6  # network.rtt
NO_JITTER = {"backoff": "8ms", "max-backoff": "64ms", "jitter": 0}


def backoffs():
    """The k-th failure in a row waits min(64 ms, 8 ms · 2^(k-1)) with no jitter."""
    k = 1
    while True:
        yield min(0.064, 0.008 * 2 ** (k - 1))
        k += 1


def test_refused_at_maxclients_on_the_backoff_timeline():
    # 15 one-connection clients, maxclients 10, think 0: all 15 dial at t = 0;
    # the first ten get in and keep their connections; each of the other five
    # is refused. Its error comes back after the handshake (one RTT) and one
    # more round trip: 2 RTT after it dialled. It then waits its backoff and
    # dials again, refused again while the ten hold their connections.
    duration = 1.0
    sc = {"name": "refused", "duration": duration, "seed": 1, "sample-interval": 0.5,
          "server": {"maxclients": 10, "save": ""}, "network": {"rtt": RTT},
          "clients": [{"name": "app", "processes": 15, "pool": {"max-size": 1},
                       "think": 0, "mix": {"GET": 1}, "keyspace": {"keys": 1000},
                       "reconnect": NO_JITTER}]}
    r = simulate(load_scenario(sc))
    per_client, t = 0, 0.0
    for wait in backoffs():
        t += 2 * RTT
        if t > duration:
            break
        per_client += 1
        t += wait
    s = r.summary
    assert s["connections_refused"] == 5 * per_client
    assert s["connections_peak"] == 10
    assert s["total_connections_received"] == 10
    assert s["requests_completed"] > 0


def test_every_request_times_out_and_redials():
    # One client, a 5 ms timeout, and GETs that take Redis 20 ms each: every
    # request fails. Its clock: dial, send after the handshake's RTT, fail
    # 5 + 5 ms later (a new connection's request has the connect timeout,
    # by default the same 5 ms, on top), wait the backoff (8, 16, 32, 64, 64
    # ... ms), dial again on a new connection (the old one stays with Redis
    # until its GET is done).
    duration = 1.0
    cpu = {**ZERO_OVERHEAD, "commands": {"GET": {"fixed": "20ms", "per-byte": 0}}}
    sc = {"name": "slow", "duration": duration, "seed": 1, "sample-interval": 0.5,
          "server": {"save": ""}, "network": {"rtt": RTT}, "engine": {"cpu": cpu},
          "clients": [{"name": "app", "processes": 1, "pool": {"max-size": 1}, "think": 0,
                       "mix": {"GET": 1}, "keyspace": {"keys": 100}, "timeout": "5ms",
                       "reconnect": NO_JITTER}]}
    r = simulate(load_scenario(sc))
    fails, t = 0, 0.0
    for wait in backoffs():
        t += RTT + 0.005 + 0.005  # handshake, then connect timeout + timeout
        if t > duration:
            break
        fails += 1
        t += wait
    s = r.summary
    assert s["requests_completed"] == 0
    assert s["requests_timed_out"] == fails
    # Each request opened a connection of its own: the ones that failed, and
    # the one in flight at the end if the last backoff ended before it.
    assert s["total_connections_received"] in (fails, fails + 1)
    # Redis still runs each abandoned GET (20 ms) and frees its client after:
    # with a failure every >= 18 ms at first, at most two are held at once.
    assert s["connections_peak"] == 2


def _storm(path: str):
    return simulate(load_scenario(ROOT / "scenarios" / path))


def test_a_brief_stall_grows_into_a_connection_storm():
    storm = _storm("reconnect-storm.yaml")
    calm = _storm("reconnect-storm-long-timeout.yaml")
    clients = 1500
    ts = storm.timeseries
    dt = 0.1
    before = ts.loc[(ts.index > 6) & (ts.index <= 10), "requests_per_sec"].mean()
    stall = storm.summary["stall_max_s"]
    # The stall itself is a tenth of a second (the DELs)...
    assert 0.05 < stall < 0.3
    # ...but throughput stays under a tenth of normal for at least ten times
    # as long: the reconnects' handshakes keep the main thread behind.
    low = ts.loc[ts.index > 10, "requests_per_sec"] < 0.1 * before
    assert low.sum() * dt >= 10 * stall
    # Thousands of timeouts, and Redis holding connections the clients dropped.
    assert storm.summary["requests_timed_out"] > 2 * clients
    assert storm.summary["connections_peak"] > 1.5 * clients
    assert storm.summary["total_connections_received"] > 3 * clients
    # The same load with a 1 s timeout rides out the same stall.
    c = calm.summary
    assert c["requests_timed_out"] == 0
    assert c["connections_peak"] == clients
    assert c["total_connections_received"] == clients
    tsc = calm.timeseries
    after = tsc.loc[(tsc.index > 11) & (tsc.index <= 15), "requests_per_sec"].mean()
    assert abs(after / before - 1) < 0.1


def test_storm_files_differ_only_in_the_timeout():
    a = yaml.safe_load((ROOT / "scenarios" / "reconnect-storm.yaml").read_text())
    b = yaml.safe_load((ROOT / "scenarios" / "reconnect-storm-long-timeout.yaml").read_text())
    assert a["clients"][0].pop("timeout") == "100ms"
    assert b["clients"][0].pop("timeout") == "1s"
    for d in (a, b):
        d.pop("name")
        d.pop("description")
    assert a == b


def test_tls_handshake_is_paid_once_per_connection():
    # 20 clients over TLS that connect once: the main thread's connection work
    # is 20 × (accept + handshake); without TLS, 20 × accept.
    base = {"name": "tls", "duration": 1.0, "seed": 1, "sample-interval": 0.5,
            "server": {"save": ""},
            "clients": [{"name": "app", "processes": 20, "pool": {"max-size": 1},
                         "think": "10ms", "mix": {"GET": 1}, "keyspace": {"keys": 100}}]}
    with_tls = {**base, "clients": [{**base["clients"][0], "tls": True}]}
    a = simulate(load_scenario(base))
    b = simulate(load_scenario(with_tls))
    # cpu_connections_share is the main thread's time on it over the 1 s run.
    extra = b.summary["cpu_connections_share"] - a.summary["cpu_connections_share"]
    assert np.isclose(extra * 1.0, 20 * 350e-6, rtol=1e-6)


def test_at_most_1000_new_connections_are_accepted_per_iteration():
    # 3,000 clients think 1 s, then all dial at once (fixed think: the same
    # instant), and their first requests reach Redis together; the run ends
    # before any sends a second.
    # Only accepts cost time (10 us each): acceptTcpHandler takes 1,000 per
    # call, one call per event-loop iteration, so the first 1,000 are read in
    # 10 ms and answered at the next beforeSleep, the next 1,000 10 ms later,
    # the last 10 ms after that. Each also spends 2 RTT on the wire (handshake,
    # then half an RTT each way): latencies 10, 20 and 30 ms + 0.4 ms, mean
    # 20.4 ms. Without the cap all 3,000 would be answered at 30.4 ms.
    cpu = {**ZERO_OVERHEAD, "accept": "10us", "commands": {"GET": {"fixed": 0, "per-byte": 0}}}
    sc = {"name": "accepts", "duration": 1.5, "seed": 1, "sample-interval": 0.5,
          "server": {"save": ""}, "network": {"rtt": RTT}, "engine": {"cpu": cpu},
          "clients": [{"name": "app", "processes": 3000, "pool": {"max-size": 1},
                       "think": "1s", "mix": {"GET": 1},
                       "keyspace": {"keys": 100}}]}
    s = simulate(load_scenario(sc)).summary
    assert s["requests_completed"] == 3000
    assert s["latency_mean_s"] == pytest.approx(0.020 + 2 * RTT, rel=0.01)
    assert s["latency_max_s"] == pytest.approx(0.030 + 2 * RTT, rel=0.01)


def test_each_groups_errors_are_in_its_own_series():
    # Ten clients of "app" hold all ten connections maxclients allows; the five
    # of "late", starting 0.1 s later, are refused every time they dial. Each
    # group's errors_per_sec series adds up to its own refusals.
    sc = {"name": "errors", "duration": 1.0, "seed": 1, "sample-interval": 0.1,
          "server": {"maxclients": 10, "save": ""}, "network": {"rtt": RTT},
          "clients": [
              {"name": "app", "processes": 10, "pool": {"max-size": 1}, "think": "1ms",
               "mix": {"GET": 1}, "keyspace": {"keys": 100}},
              {"name": "late", "processes": 5, "pool": {"max-size": 1}, "think": "1ms",
               "start": "0.1s", "mix": {"GET": 1}, "keyspace": {"keys": 100},
               "reconnect": NO_JITTER}]}
    r = simulate(load_scenario(sc))
    ts = r.timeseries
    s = r.summary
    assert s["app.connections_refused"] == 0 and s["app.requests_completed"] > 0
    assert s["late.requests_completed"] == 0 and s["late.connections_refused"] > 0
    assert (ts["app.errors_per_sec"] * 0.1).sum() == pytest.approx(0)
    assert (ts["late.errors_per_sec"] * 0.1).sum() == pytest.approx(s["late.connections_refused"])
