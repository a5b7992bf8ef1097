"""The latency monitor's eviction-cycle and expire-cycle events: Redis records
the time of performEvictions' loop (evict.c, latencyAddSampleIfNeeded
"eviction-cycle") and of each activeExpireCycle (expire.c, "expire-cycle"); the
model named both events but recorded neither, so LATENCY DOCTOR missed the
stalls an eviction burst is made of."""

from __future__ import annotations

import pytest

from redsim.model import eviction, expire, latency
from redsim.model import state as S
from tests.engine_helpers import tiny_world

# Steps called on a World of arrays: as Python, not compiled for that type.
pytestmark = pytest.mark.usefixtures("python_kernel")

KEYS = 1000


def _world(ttl: str | None = None, **server):
    sc = {"name": "lm", "duration": 1.0, "redis-version": "7.0",
          "server": {"latency-monitor-threshold": 1, **server},
          "engine": {"cpu": {"eviction-call": 0, "eviction-check": 0, "eviction-sample": 0,
                             "eviction-delete": "2ms", "expire-sample": "0.5ms",
                             "expire-delete": 0, "miss": "none"}},
          "clients": [{"kind": "open", "rate": 10,
                       "mix": [{"command": "SET", "weight": 1, **({"ttl": ttl} if ttl else {})}],
                       "key-size": 16, "value-size": 1000,
                       "keyspace": {"keys": KEYS, "preload": 1.0}}]}
    return tiny_world(sc)[0]


def _samples(w, event: int) -> list[int]:
    n = int(w.rc_lm_n[event])
    base = event * latency.LATENCY_TS_LEN
    return [int(w.rc_lm_ms[base + i]) for i in range(min(n, latency.LATENCY_TS_LEN))]


def test_an_eviction_loop_over_the_threshold_is_an_eviction_cycle_sample():
    w = _world(**{"maxmemory": "100mb", "maxmemory-policy": "allkeys-random",
                  "maxmemory-eviction-tenacity": 100})
    # Lower the limit by 10 keys' worth (~1.1 KB each): the call must evict
    # about 10 keys at 2 ms each, with no time limit (tenacity 100).
    w.I[S.MAXMEMORY] = _used(w) - 10_000
    before = int(w.I[S.STAT_EVICTED])
    result, cpu = eviction.perform_evictions(w)
    evicted = int(w.I[S.STAT_EVICTED]) - before
    assert evicted >= 8
    # Every evicted key costs 2 ms and nothing else does: the loop took
    # evicted x 2 ms, recorded in whole milliseconds.
    assert cpu == pytest.approx(evicted * 2e-3, rel=1e-12)
    assert _samples(w, latency.LM_EVICTION_CYCLE) == [evicted * 2]


def test_a_call_under_the_limit_records_nothing():
    w = _world(**{"maxmemory": "100mb", "maxmemory-policy": "allkeys-random"})
    eviction.perform_evictions(w)
    assert _samples(w, latency.LM_EVICTION_CYCLE) == []


def test_an_expire_cycle_over_the_threshold_is_an_expire_cycle_sample():
    w = _world(ttl="1h")
    assert int(w.I[S.KS_EXPIRES]) == KEYS
    for k in range(KEYS):  # every TTL has passed
        w.ks_expire[k] = -1.0
    # The slow cycle (hz 10): 20 keys a loop at 0.5 ms each, 10 ms a loop, all
    # expired so it goes on; the time limit, 25 % of the 100 ms cron period =
    # 25 ms, is checked every 16 loops: it stops after 16 loops, 320 keys, 160 ms.
    cpu = expire.active_expire_cycle(w, False)
    assert int(w.I[S.KS_EXPIRES]) == KEYS - 320
    assert cpu == pytest.approx(0.160, rel=1e-12)
    assert _samples(w, latency.LM_EXPIRE_CYCLE) == [160]


def _used(w) -> int:
    from redsim.model.memory import used_memory

    return int(used_memory(w))
