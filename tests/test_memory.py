"""The memory ledger and the keyspace, against the reference's tables and measurements.

Reference §3.3 (jemalloc classes), §3.5 (bytes per string key, and a measured
Redis 7.0.15 on Debian, 16-byte quantum), §2.12 (dict growth), §4.1 (passive
expiry).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redsim import load_scenario, simulate
from redsim.model import state as S
from redsim.model.jemalloc import size_class
from redsim.model.memory import STARTUP_BYTES
from redsim.model.objects import string_key_bytes
from redsim.simulation import Simulation
from tests.engine_helpers import ZERO_OVERHEAD

# Reference §3.3, bundled jemalloc (8-byte quantum), up to the first large classes.
CLASSES_8 = [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384,
             448, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096,
             5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384, 20480, 24576, 28672,
             32768, 40960, 49152]
CLASSES_16 = [8, 16, 32, 48, 64, 80, 96, 112, 128, 160]


@pytest.mark.parametrize("quantum16, classes", [(False, CLASSES_8), (True, CLASSES_16)])
def test_size_classes_round_up_to_the_reference_list(quantum16, classes):
    prev = 0
    for c in classes:
        assert size_class(c, quantum16) == c
        assert size_class(prev + 1, quantum16) == c  # everything in (prev, c] rounds to c
        prev = c


@pytest.mark.parametrize("value, integer, low, high", [
    # Reference §3.5 table, 16-byte keys, bundled allocator: total without TTL
    # (the 8–16 B range is the bucket array, counted per dict, not here).
    (3, False, 80, 88), (10, False, 88, 96), (64, False, 152, 160), (100, False, 184, 192),
    (1024, False, 1352, 1360), (2048, False, 2632, 2640), (0, True, 72, 80),
])
def test_string_key_bytes_match_the_reference_table(value, integer, low, high):
    per_key = string_key_bytes(16, value, integer, False, False, False)
    assert per_key + 8 == low and per_key + 16 == high
    # A TTL adds a 24-byte expires dictEntry (+ that dict's buckets).
    assert string_key_bytes(16, value, integer, False, True, False) == per_key + 24


def _idle_server(keys: int, key_size: int, value: int, quantum: int) -> dict:
    """A keyspace preloaded with ``keys`` keys and a client group that never starts."""
    return {"name": "idle", "duration": 1, "sample-interval": 1,
            "engine": {"allocator-quantum": quantum},
            "clients": [{"start": 10, "key-size": key_size, "value-size": value,
                         "keyspace": {"keys": keys, "preload": 1.0}}]}


@pytest.mark.parametrize("key_size, value, measured", [
    # Redis 7.0.15 (Debian, 16-B quantum), DEBUG POPULATE of 1 M keys into a
    # 2^20-bucket table (reference §3.5): 88.4 and 200.4 bytes per key.
    (10, 3, 88.4), (22, 100, 200.4),
])
def test_bytes_per_key_match_the_measured_server(key_size, value, measured):
    n = 1_000_000
    s = simulate(load_scenario(_idle_server(n, key_size, value, 16))).summary
    assert s["keys_end"] == n
    per_key = (s["used_memory_end"] - STARTUP_BYTES["7.2"]) / n
    assert per_key == pytest.approx(measured, abs=0.05)


def test_dict_doubles_when_full_and_the_ledger_adds_up():
    # 5 000 keys: the table doubled 4 → 8192 buckets (the least power of two ≥ 5 000).
    r = simulate(load_scenario(_idle_server(5000, 16, 64, 8)))
    ts = r.timeseries.iloc[-1]
    per_key = string_key_bytes(16, 64, False, True, False, False)  # 144 B
    assert ts["used_memory"] == STARTUP_BYTES["7.2"] + 5000 * per_key + 8 * 8192
    # INFO's dataset = used − overhead, overhead counting sizeof(dictEntry)+sizeof(robj)
    # per key and 8 B per bucket: 5 000 × (144 − 40) bytes of key and value strings.
    assert ts["used_memory_dataset"] == 5000 * (144 - 40)


def test_passive_expiry_hits_and_misses_worked_by_hand():
    # One key, absent at start. Writer: SET EX 1 every ~2 s (t ≈ 2, 4, 6, 8).
    # Reader: GET every ~0.5 s from t ≈ 0.75 (0.75, 1.25, …, 9.75: 19 GETs).
    # The key lives in (2, 3), (4, 5), (6, 7), (8, 9): GETs at x.25 and x.75 inside
    # them hit (8); the GET at 3.25, 5.25, 7.25, 9.25 finds it expired, deletes it
    # and misses (4 expired keys); the other GETs miss too (19 − 8 = 11 misses).
    cpu = dict(ZERO_OVERHEAD, commands={"GET": {"fixed": "10us"}, "SET": {"fixed": "10us"}})
    sc = {"name": "expiry", "duration": 10, "sample-interval": 1, "network": {"rtt": 0},
          "engine": {"cpu": cpu},
          "clients": [
              {"name": "writer", "think": "2s", "mix": {"SET": {"ttl": "1s"}},
               "keyspace": {"keys": 1, "preload": 0}},
              {"name": "reader", "think": "0.5s", "start": "0.25s", "mix": {"GET": 1},
               "keyspace": {"keys": 1, "preload": 0}}]}
    s = simulate(load_scenario(sc)).summary
    assert s["keyspace_hits"] == 8
    assert s["keyspace_misses"] == 11
    assert s["expired_keys"] == 4
    assert s["keys_end"] == 0


@st.composite
def workloads(draw):
    mix = {"GET": draw(st.integers(0, 3)) or 0.01,
           "SET": {"weight": draw(st.integers(1, 3)),
                   "ttl": draw(st.sampled_from([None, 0.01, 0.2]))},
           "DEL": draw(st.integers(0, 2)) or 0.01,
           "MSET": {"weight": 0.3, "keys": 3},
           "MGET": {"weight": 0.3, "keys": 4},
           "INCR": draw(st.integers(0, 1)) or 0.01,
           "EXPIRE": {"weight": 0.2, "ttl": 0.05}}
    return {"name": "ledger", "duration": 0.3, "sample-interval": 0.1,
            "seed": draw(st.integers(0, 1000)),
            "redis-version": draw(st.sampled_from(["6.2", "7.2"])),
            "engine": {"allocator-quantum": draw(st.sampled_from([8, 16]))},
            "clients": [{"threads": 4, "processes": 2, "mix": mix,
                         "think": {"distribution": "exponential", "mean": 0.001},
                         "keyspace": {"keys": draw(st.sampled_from([5, 200, 5000])),
                                      "preload": draw(st.sampled_from([0.0, 0.5, 1.0]))},
                         "value-size": {"distribution": "uniform", "min": 1,
                                        "max": draw(st.sampled_from([40, 2000]))}}]}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_ledger_equals_the_sum_of_its_parts(sc):
    sim = Simulation(load_scenario(sc))
    sim.run()
    w = sim.world
    I = w.I
    present = w.ks_cost > 0
    assert (w.ks_cost >= 0).all()
    assert I[S.MEM_DATASET] == w.ks_cost.sum()
    assert I[S.KS_KEYS] == present.sum()
    assert I[S.KS_EXPIRES] == (present & np.isfinite(w.ks_expire)).sum()
    # Client memory: the ledger's sums equal the per-connection values, which are
    # zero exactly for connections Redis does not hold.
    assert I[S.MEM_CLIENTS] == w.cn_mem.sum() and I[S.MEM_CLIENTS_INFO] == w.cn_mem_info.sum()
    assert (w.cn_mem >= 0).all()
    assert ((w.cn_mem > 0) <= (w.cn_is_open > 0)).all()
    # Each dict has room for its entries (a power of two, ≥ 4 once used).
    for used, size in ((I[S.KS_KEYS], I[S.KS_BUCKETS]), (I[S.KS_EXPIRES], I[S.KS_EXP_BUCKETS])):
        assert size == 0 or (size >= 4 and size & (size - 1) == 0)
        assert used <= size or size == 0 and used == 0


def _expiring(n_keys: int, ttl: float, effort: int = 1) -> dict:
    """``n_keys`` keys preloaded with TTLs uniform in (0, ttl], and nobody reads them."""
    return {"name": "expire", "duration": 2 * ttl, "sample-interval": ttl / 4,
            "server": {"active-expire-effort": effort},
            "clients": [{"start": 100 * ttl, "mix": {"SET": {"ttl": ttl}},
                         "keyspace": {"keys": n_keys, "preload": 1.0}}]}


def test_active_expiry_removes_keys_nobody_reads():
    # 20 000 keys expire uniformly over 10 s, 2 000/s: each slow cycle (10 per s)
    # must delete ~200. It samples 20 keys per loop and loops again only while
    # more than 2 of them had expired, so expired keys linger: with a stale share
    # f, a cycle deletes ~20 f / P(Bin(20, f) <= 2) keys, which is 200 at f ~ 0.31.
    # The cursor sweeps rather than samples at random (less variance, so fewer
    # early stops): at 5 s the keys present lie between the 10 000 unexpired and
    # 10 000 / (1 - 0.31) ~ 14 500.
    r = simulate(load_scenario(_expiring(20_000, 10.0)))
    ts = r.timeseries
    assert 10_000 <= ts.loc[5.0, "keys"] <= 14_500
    # Once nothing is left unexpired every loop finds > 10 % stale: all go.
    assert r.summary["expired_keys"] == 20_000
    assert ts["keys"].iloc[-1] == 0


def test_expiry_cpu_stays_within_the_slow_cycle_budget():
    # 200 000 keys expiring within 1 s need ~430 ms of deletes (2.15 µs each): the
    # slow cycle stops at its 25 ms per 100 ms tick (checked every 16 loops: up to
    # 16 × 20 keys late), and after a capped cycle the fast one adds at most 1 ms
    # per 2 ms. So the share is bounded by 25 % + 50 % (+ the overshoot). With no
    # clients the loop only wakes for serverCron, whose next run is 100 ms after
    # the 25 ms cycle *ends*, and one fast cycle (1 ms) runs per wake: ~26/126.
    r = simulate(load_scenario(_expiring(200_000, 1.0)))
    assert r.summary["expired_time_cap_reached_count"] > 0
    share = r.timeseries["cpu_expire"]
    assert share.max() == pytest.approx(26 / 126, abs=0.02)
    assert share.max() <= 0.25 + 0.5 + 0.05
