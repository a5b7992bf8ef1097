"""Client groups that start, stop and surge (``model/client_lifecycle.py``:
group_off, group_on): their connections open and close with them, with the client memory
they bring and free, and a surge at a full cache evicts that memory's worth of
keys (``scenarios/client-surge.yaml``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from redsim import load_scenario, simulate

ROOT = Path(__file__).resolve().parents[1]

# A 7.x client after its first small request, at jemalloc sizes (reference
# §1.3, client_memory.py): the struct (776 B, class 896), c->buf (16 KB) and
# a query buffer grown to 16 KB by its first read (16 KB + header, class
# 20,480). clientsCron's first visit keeps c->buf; only a second one, about a
# second later, may shrink it.
CLIENT_7X = 896 + 16_384 + 20_480

TWO = {
    "name": "stop", "duration": 3.0, "seed": 4, "sample-interval": 0.1,
    "server": {"save": ""},
    "clients": [
        {"name": "web", "processes": 2, "pool": {"max-size": 1}, "think": "2ms",
         "mix": {"GET": 1}, "keyspace": {"keys": 1000}},
        {"name": "batch", "processes": 10, "pool": {"max-size": 1}, "think": "2ms",
         "start": "1s", "stop": "1.8s", "mix": {"GET": 1}, "keyspace": {"keys": 1000}},
    ],
}


def test_a_group_runs_between_start_and_stop_and_frees_its_clients():
    r = simulate(load_scenario(TWO))
    ts = r.timeseries
    per_client = 1 / (0.002 + r.summary["batch.latency_mean_s"])  # think + response
    # Ten clients for 0.8 s, each one request per think + response.
    assert r.summary["batch.requests_completed"] == pytest.approx(10 * 0.8 * per_client,
                                                                   rel=0.02)
    done = ts["batch.requests_per_sec"]
    assert done[ts.index <= 1.0].sum() == 0
    # (The window (1.8, 1.9] is labelled 19 x 0.1 = 1.9000000000000001: past it.)
    assert done[ts.index > 1.9 + 1e-9].sum() == 0
    # Connections: web's two, plus batch's ten while it runs.
    conns = ts["connected_clients"]
    assert (conns[(ts.index > 1.05) & (ts.index <= 1.8)] == 12).all()
    assert (conns[ts.index > 1.9] == 2).all()
    # GETs store nothing: used_memory moves only with the clients.
    t = np.round(ts.index.to_numpy(), 6)
    mem = ts["used_memory"].to_numpy()
    during = mem[t == 1.2][0]
    after = mem[t == 2.0][0]
    assert during - after == pytest.approx(10 * CLIENT_7X, rel=0.01)
    assert r.summary["batch.connections_peak"] == 10
    assert r.summary["web.connections_peak"] == 2


def test_surges_come_and_go_on_their_schedule():
    sc = {"name": "surges", "duration": 3.0, "seed": 2, "sample-interval": 0.1,
          "server": {"save": ""},
          "clients": [{"name": "base", "processes": 1, "threads": 2, "pool": {"max-size": 2},
                       "think": "1ms", "mix": {"GET": 1}, "keyspace": {"keys": 1000},
                       "surge": {"every": "1s", "for": "300ms", "connections": 20}}]}
    s = load_scenario(sc)
    assert [g.name for g in s.clients] == ["base", "base-surge"]
    r = simulate(s)
    conns = r.timeseries["connected_clients"]
    t = np.round(conns.index.to_numpy(), 6)
    in_surge = np.isin(t, [0.1, 0.2, 1.1, 1.2, 1.3, 2.1, 2.2, 2.3])
    # Windows ending inside a surge (0.1, 0.2, 1.1 ...; the one ending at 0.3
    # closes it, and 1.0 / 2.0 open the next at their very end).
    assert (conns[in_surge & (t % 1 < 0.25)] == 22).all()
    assert (conns[(t % 1 > 0.35) & (t % 1 < 0.95)] == 2).all()
    # 20 clients, 0.9 s on in all, one request per think + response each.
    per_client = 1 / (0.001 + r.summary["base-surge.latency_mean_s"])
    assert r.summary["base-surge.requests_completed"] == pytest.approx(20 * 0.9 * per_client,
                                                                        rel=0.03)


def test_a_surge_at_a_full_cache_evicts_its_client_memory():
    r = simulate(load_scenario(ROOT / "scenarios" / "client-surge.yaml"))
    ts = r.timeseries
    t = np.round(ts.index.to_numpy(), 6)
    maxmemory = 300 * 2**20
    surge_bytes = 800 * CLIENT_7X  # ~30.2 MB
    # Before the surge the cache sits at maxmemory, evicting.
    evicted = ts["evicted_keys"].diff().fillna(0).to_numpy()
    assert evicted[(t > 15) & (t <= 20)].min() > 0
    # The surge's clients hold about their 37 KB each...
    assert ts["mem_clients_true"].max() == pytest.approx(surge_bytes, rel=0.03)
    # ...which eviction makes room for while they are connected...
    during = (t > 20) & (t <= 21.1)
    assert evicted[during].sum() > 0
    # ...and which leaves a hole below maxmemory when they close.
    after = (t > 21.1) & (t <= 21.3)
    dip = maxmemory - ts["used_memory"].to_numpy()[after].min()
    assert dip == pytest.approx(surge_bytes, rel=0.05)
    # Nothing is evicted until the writer refills the hole: its length is the
    # dip over the write rate in bytes/s, measured as used_memory's slope
    # while it refills (by hand: 10,000 new keys/s of ~290 B — dictEntry 24,
    # robj 16, key sds 24, 200-byte value sds 224 at jemalloc sizes — ~2.9
    # MB/s, so ~10 s).
    refill = (t > 22) & (t <= 28)
    slope = np.polyfit(t[refill], ts["used_memory"].to_numpy()[refill], 1)[0]
    assert 2.6e6 < slope < 3.3e6
    first = t[(t > 21.1) & (evicted > 0)][0]
    assert first - 21.0 == pytest.approx(dip / slope, rel=0.1)
