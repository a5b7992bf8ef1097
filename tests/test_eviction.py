"""performEvictions: how much it frees, when it stops, whom it picks, when it refuses.

Reference §2.3–2.8. Every case preloads equal-size keys (16-byte keys, 100-byte
values: 24 + 24 + 16 + 112 = 176 bytes each, §3.5) and sets ``maxmemory`` a
known number of bytes below what the server then uses.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from redsim import load_scenario, simulate
from redsim.model import state as S
from redsim.model.eviction import time_limit
from redsim.model.memory import STARTUP_BYTES
from redsim.simulation import Simulation
from tests.engine_helpers import ZERO_OVERHEAD

KEY_BYTES = 176
N_KEYS = 1000
# Used memory after the preload, before any client connects: 1 000 keys in 1 024 buckets.
USED0 = STARTUP_BYTES["7.2"] + N_KEYS * KEY_BYTES + 8 * 1024
# A 7.2 client when its first command runs (§3.6): struct 896 B, c->buf 16 KB, and
# the query buffer of its first read, 16 KB non-greedy -> 20 480 B.
CLIENT0 = 896 + 16384 + 20480


@pytest.mark.parametrize("tenacity, limit_s", [
    # Reference §2.4 table.
    (0, 0.0), (1, 50e-6), (5, 250e-6), (10, 500e-6), (11, 575e-6), (15, 1.0e-3), (20, 2.0e-3),
    (30, 8.2e-3), (40, 33e-3), (50, 134e-3), (60, 0.54), (70, 2.2), (80, 8.9), (90, 36.0),
    (99, 126.0), (100, math.inf),
])
def test_time_limit_follows_tenacity(tenacity, limit_s):
    assert time_limit(tenacity) == pytest.approx(limit_s, rel=0.02)


def _scenario(policy: str, over: int, *, mix=None, tenacity: int = 10, ttl=None,
              duration: float = 0.01, think: float = 0.005) -> dict:
    """One client; maxmemory ``over`` bytes below the memory in use once it connects
    (the whole keyspace preloaded: ``preload-limit`` 2 lets it start past the
    limit, which these tests are about)."""
    writes = {"SET": {"weight": 1, "ttl": ttl}} if ttl else {}
    return {"name": "evict", "duration": duration, "sample-interval": duration,
            "network": {"rtt": 0}, "engine": {"cpu": dict(ZERO_OVERHEAD)},
            "server": {"maxmemory": USED0 + CLIENT0 - over,
                       "maxmemory-policy": policy,
                       "maxmemory-eviction-tenacity": tenacity},
            "clients": [{"think": think, "mix": mix or writes or {"GET": 1},
                         "key-size": 16, "value-size": 100,
                         "keyspace": {"keys": N_KEYS, "preload": 1.0, "preload-limit": 2}}]}


@pytest.mark.parametrize("policy", ["allkeys-random", "allkeys-lru", "allkeys-lfu"])
def test_evicts_exactly_enough_keys(policy):
    # One GET (allocates nothing): mem_tofree = 1 000 bytes -> ceil(1000/176) = 6 keys;
    # then used <= maxmemory and no later call evicts.
    s = simulate(load_scenario(_scenario(policy, 1000))).summary
    assert s["requests_completed"] == 1
    assert s["evicted_keys"] == math.ceil(1000 / KEY_BYTES)
    assert s["keys_end"] == N_KEYS - s["evicted_keys"]


def test_tenacity_zero_spreads_eviction_over_timer_calls():
    # 10 000 bytes -> 57 keys. With a zero time limit each call stops after 16 keys
    # (the limit is only checked every 16th key) and evictionTimeProc continues on
    # the next iterations: calls over the limit evict 16, 16, 16, then the last 9.
    sim = Simulation(load_scenario(_scenario("allkeys-random", 10_000, tenacity=0)))
    r = sim.run()
    assert r.summary["evicted_keys"] == math.ceil(10_000 / KEY_BYTES)
    assert sim.world.rc_tofree.sum() == 4  # four calls found memory over the limit


def test_lru_evicts_the_keys_idle_longest():
    # Preloaded keys were last touched uniformly over the past hour. Each victim is
    # the best of the pool fed 5 samples per eviction, so it sits at least around
    # the expected maximum of 5 uniforms, 5/6 of the range, on average.
    sim = Simulation(load_scenario(_scenario("allkeys-lru", 20_000)))
    sim.run()
    w = sim.world
    evicted = w.ks_cost == 0
    assert evicted.sum() == math.ceil(20_000 / KEY_BYTES)  # 114 keys
    clock = int(w.I[S.LRU_CLOCK])
    idle = clock - w.ks_lru
    rank = idle.argsort().argsort() / (N_KEYS - 1)  # 0 = most recent, 1 = idlest
    assert rank[evicted].mean() > 5 / 6 - 0.05
    assert rank[evicted].min() > 0.5


def test_noeviction_refuses_writes_with_oom_and_serves_reads():
    # 100 KB over: still over after clientsCron shrinks c->buf (−15 KB) at 0.1 s.
    mix = {"SET": 1, "GET": 1}
    s = simulate(load_scenario(_scenario("noeviction", 100_000, mix=mix, duration=0.2,
                                         think=0.001))).summary
    assert s["evicted_keys"] == 0
    assert s["oom_rejected"] > 0
    # Every SET is refused (GETs are not deny-oom) and the keyspace is unchanged.
    assert s["keys_end"] == N_KEYS
    assert s["keyspace_hits"] + s["keyspace_misses"] + s["oom_rejected"] == \
        s["total_commands_processed"]


def test_volatile_policy_without_ttl_keys_behaves_like_noeviction():
    s = simulate(load_scenario(_scenario("volatile-lru", 100_000, mix={"SET": 1},
                                         duration=0.05, think=0.001))).summary
    assert s["evicted_keys"] == 0
    assert s["oom_rejected"] == s["total_commands_processed"] > 0


def test_lfu_counter_grows_logarithmically():
    # lfu-log-factor 10, no decay: the docs' table gives counter 10 after 100 hits and
    # 18 after 1 000. In expectation, going from c to c+1 (c >= 5) takes 10(c-5)+1
    # hits, so after N hits 5m^2 - 4m ~= N with m = counter - 5: 10 and 19.5.
    # One GET per 1.001 ms (1 ms think + 1 µs GET): 1 000 by 1.0015 s. The hits
    # needed to reach m have sd ~ sqrt(sum (10j)^2) ~ 335 near N = 1 000, about
    # +-2.3 in the counter: 15..23 is a 3-sd band around 18-19.5.
    sc = {"name": "lfu", "duration": 1.0015, "sample-interval": 1.0015,
          "network": {"rtt": 0}, "engine": {"cpu": dict(ZERO_OVERHEAD)},
          "server": {"maxmemory": "1gb", "maxmemory-policy": "allkeys-lfu",
                     "lfu-decay-time": 0},
          "clients": [{"think": "1ms", "mix": {"GET": 1}, "keyspace": {"keys": 1}}]}
    sim = Simulation(load_scenario(sc))
    r = sim.run()
    assert r.summary["keyspace_hits"] == 1000
    counter = int(sim.world.ks_lru[0]) & 255
    assert 15 <= counter <= 23


def test_allkeys_lru_evicts_only_what_the_writes_add():
    # Steady writes of new 100-byte values over a full keyspace: every byte a SET adds
    # beyond maxmemory is evicted, so memory stays within one key of the limit.
    sc = _scenario("allkeys-lru", 0, mix={"SET": 1}, duration=0.5, think=0.001)
    sc["clients"][0]["keyspace"] = {"keys": 2 * N_KEYS, "preload": 0.5}
    sim = Simulation(load_scenario(sc))
    r = sim.run()
    ts = r.timeseries
    assert r.summary["evicted_keys"] > 0
    assert (ts["used_memory"] <= ts["maxmemory"] + KEY_BYTES).all()
    assert np.all(np.diff(ts["evicted_keys"]) >= 0)


def test_one_call_can_evict_half_the_keyspace():
    # maxmemory set to half the dataset and no time limit (tenacity 100): the first
    # command's performEvictions evicts ~half of 100 000 keys, drawing ~250 000
    # samples in one iteration (more than any pre-filled random buffer holds).
    # The dict stays at 65 536 buckets: the preload is already over maxmemory when
    # it fills them, so dictExpandAllowed refuses to double (load factor < 1.618).
    n = 100_000
    used = STARTUP_BYTES["7.2"] + n * KEY_BYTES + 8 * 65536 + CLIENT0
    sc = _scenario("allkeys-lru", 0, tenacity=100)
    sc["server"]["maxmemory"] = used - n * KEY_BYTES // 2
    sc["clients"][0]["keyspace"] = {"keys": n, "preload": 1.0, "preload-limit": 2}
    s = simulate(load_scenario(sc)).summary
    assert s["evicted_keys"] == n // 2
