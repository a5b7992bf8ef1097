"""What connections cost in used_memory, against the reference's sizes and measurements.

Reference §3.6: 200 connections that each send one PING and then stay idle.
Measured on Redis 7.0.15 (``mem_clients_normal`` / 200): 22.3 KB per client
1.5 s after the PING, 1.8 KB after 7.5 s idle. The sizes behind them (7.x):
struct (7.0: the 768-B class, 7.2: 896 B) + c->buf (16 KB, shrunk to 1 KB by
clientsCron) + query buffer (20 480 B, trimmed after 2 s idle). 6.2: struct
with the reply buffer inside, 20 480 B, plus a 40 960 B greedy query buffer
until the next clientsCron visit.
"""

from __future__ import annotations

import pytest

from redsim import load_scenario, simulate

N = 200


def _idle_after_one_ping(tmp_path, version: str) -> dict:
    trace = tmp_path / "ping.trace"
    trace.write_text("PING\n")
    return {"name": "ping", "redis-version": version, "duration": 9, "sample-interval": 0.5,
            "clients": [{"kind": "trace", "trace": str(trace), "replay": "once",
                         "threads": N, "think": "0.5s", "pool": {"max-size": N}}]}


def _connected_then_pinging() -> dict:
    # The measurement's order: connect, wait 1.5 s, PING, measure 1.5 s later. The
    # model takes a connection in at its first request, so a first PING (at
    # 1.5 s) stands for the connect, and the measured one comes 1.5 s after it.
    return {"name": "ping", "redis-version": "7.0", "duration": 4.45, "sample-interval": 0.05,
            "clients": [{"mix": {"PING": 1}, "processes": N, "think": "1.5s",
                         "pool": {"max-size": 1}}]}


def _per_client(ts, t: float, column: str) -> float:
    return float(ts.loc[t, column]) / N


def test_7x_client_memory_matches_the_measured_server(tmp_path):
    ts = simulate(load_scenario(_connected_then_pinging())).timeseries
    # ~1.45 s after the second PING (t = 4.45): every client visited at least twice
    # since it connected (200 clients / hz 10 = 20 per call, 10 calls a second),
    # so its c->buf is down to 1 KB: 768 + 1 024 + 20 480 = 22 272 B.
    assert _per_client(ts, 4.45, "mem_clients_normal") == 768 + 1024 + 20480
    assert _per_client(ts, 4.45, "mem_clients_normal") / 1024 == pytest.approx(22.3, rel=0.03)
    # After > 2 s idle the query buffer is trimmed to an empty sds (8 B).
    ts = simulate(load_scenario(_idle_after_one_ping(tmp_path, "7.0"))).timeseries
    assert _per_client(ts, 8.0, "mem_clients_normal") == 768 + 1024 + 8
    assert _per_client(ts, 8.0, "mem_clients_normal") / 1024 == pytest.approx(1.8, rel=0.06)


def test_6_2_client_memory_follows_its_rules(tmp_path):
    ts = simulate(load_scenario(_idle_after_one_ping(tmp_path, "6.2"))).timeseries
    # Each visit trims the query buffer (peak 0 < alloc/2): 20 488 B from t = 1.5 s.
    assert _per_client(ts, 2.0, "mem_clients_true") == 20480 + 8
    assert _per_client(ts, 2.0, "mem_clients_normal") == 20480 + 8


def test_info_lags_the_true_client_memory(tmp_path):
    ts = simulate(load_scenario(_idle_after_one_ping(tmp_path, "6.2"))).timeseries
    # The PINGs are read at 0.5003 s. At 1.0 s clientsCron (20 clients per call,
    # every 0.1 s) has visited fewer than half of them: INFO counts only those
    # (20 488 B each, trimmed), used_memory also holds the others' 61 440 B.
    true, info = ts.loc[1.0, "mem_clients_true"], ts.loc[1.0, "mem_clients_normal"]
    visited = info // (20480 + 8)
    assert 0 < visited < N / 2
    assert true == visited * (20480 + 8) + (N - visited) * (20480 + 40960)
    # By 2.0 s every client has been visited: the two agree.
    assert ts.loc[2.0, "mem_clients_normal"] == ts.loc[2.0, "mem_clients_true"]
