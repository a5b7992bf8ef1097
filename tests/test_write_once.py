"""Write-once keys (``keyspace.write-once``): a cache's long tail of new names.

What must hold: each write is a new key with probability ``write-once`` and
nothing else changes (the hot ids keep their count); the keys present at time 0
are the stream's last min(history, ttl) seconds, within the preload limit; rows
freed by expiry are reused, and running short of rows (the kernel asks Python
for more) changes no result.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from redsim import load_scenario
from redsim.config.errors import ScenarioError
from redsim.model import preload, sizing
from redsim.model import state as S
from redsim.model.build import build_world
from redsim.model.memory import POINTER, STARTUP_BYTES
from redsim.simulation import Simulation
from tests.engine_helpers import ZERO_OVERHEAD

HOT = 1000


def _scenario(*, rate=2000.0, once=0.3, ttl=None, history=0, duration=5.0, profile=None,
              maxmemory=0, limit=1.0) -> dict:
    group = {"kind": "open", "processes": 1, "pool": {"max-size": 8},
             "mix": [{"command": "SET", "weight": 1, **({"ttl": ttl} if ttl else {})}],
             "key-size": 16, "value-size": 100,
             "keyspace": {"keys": HOT, "preload": 1.0, "write-once": once,
                          "history": history, "preload-limit": limit}}
    if profile:
        group["profile"] = profile
    else:
        group["rate"] = rate
    return {"name": "write-once", "duration": duration, "sample-interval": 0.5,
            "network": {"rtt": 0}, "engine": {"cpu": dict(ZERO_OVERHEAD)},
            "server": {"maxmemory": maxmemory}, "clients": [group]}


def _present(w) -> tuple[int, int]:
    """Present keys among the hot ids and among the write-once rows."""
    lo = int(w.I[S.KS_ONCE_LO])
    return int((w.ks_cost[:lo] > 0).sum()), int((w.ks_cost[lo:] > 0).sum())


def test_a_write_is_a_new_key_with_probability_write_once():
    # No TTL, no eviction: every write-once SET adds a key and every other SET
    # overwrites a hot id (all present). The number of new keys among n SETs is
    # Binomial(n, 0.3): within 4 standard deviations of 0.3 n.
    sim = Simulation(load_scenario(_scenario()), progress=False)
    r = sim.run()
    n = r.summary["total_commands_processed"]
    hot, once = _present(sim.world)
    assert hot == HOT
    assert abs(once - 0.3 * n) < 4 * math.sqrt(n * 0.3 * 0.7)
    assert r.summary["keys_end"] == HOT + once


def test_running_short_of_rows_changes_nothing(monkeypatch):
    # The profile jumps from 100/s (what the rows are sized for) to 20 000/s, with
    # TTL 1 s: the kernel runs short of free rows several times and Python adds
    # rows. New rows go under the free stack, so rows are handed out in the same
    # order as when every row existed from the start: identical results.
    doc = _scenario(profile=[{"at": 0, "rate": 100}, {"at": 0.5, "rate": 20_000}],
                    once=1.0, ttl=1, duration=2.0)
    sim = Simulation(load_scenario(doc), progress=False)
    rows0 = len(sim.world.ks_cost)
    grown = sim.run()
    assert len(sim.world.ks_cost) > rows0 + 20_000  # ~30 000 new keys in 1.5 s
    assert grown.summary["expired_keys"] > 100  # and expired ones' rows were reused

    real = preload.write_once_rows
    monkeypatch.setattr(preload, "write_once_rows",
                        lambda *a: (lambda p, s, low: (p, 200_000, low))(*real(*a)))
    big = Simulation(load_scenario(doc), progress=False)
    assert len(big.world.ks_cost) > len(sim.world.ks_cost)
    ref = big.run()
    assert ref.summary == grown.summary
    assert ref.timeseries.equals(grown.timeseries)


@pytest.mark.parametrize("ttl, history, expect", [
    (100, None, 100 * 0.5 * 100),  # the last TTL's worth: rate × ttl
    (100, 30, 100 * 0.5 * 30),  # a younger cache: rate × history
    (None, 30, 100 * 0.5 * 30),  # no TTL: all of its history
    (100, 0, 0),
])
def test_preloaded_write_once_keys_are_the_streams_last_span(ttl, history, expect):
    # 100 SET/s, half of them write-once: 50 new keys/s.
    w, _, _ = build_world(load_scenario(_scenario(rate=100, once=0.5, ttl=ttl,
                                                  history=history)), 1)
    hot, once = _present(w)
    assert hot == HOT
    assert once == round(expect)
    lo = int(w.I[S.KS_ONCE_LO])
    rows = np.flatnonzero(w.ks_cost[lo:] > 0) + lo
    if ttl and len(rows):
        remaining = w.ks_expire[rows]
        assert remaining.min() > 0 and remaining.max() <= ttl
        # Ages uniform over the span: the remaining TTLs' mean is ttl − span/2.
        span = min(ttl, history if history is not None else ttl)
        assert abs(remaining.mean() - (ttl - span / 2)) < 4 * span / math.sqrt(12 * len(rows))


def test_preload_counts_every_pipelined_command():
    # An open group's rate is requests/s; each request carries `pipeline` SETs,
    # so 100 requests/s of 3 commands, half write-once, make 150 new keys/s.
    doc = _scenario(rate=100, once=0.5, ttl=100, history=None)
    doc["clients"][0]["pipeline"] = 3
    w, _, _ = build_world(load_scenario(doc), 1)
    assert _present(w)[1] == 100 * 3 * 0.5 * 100


def test_preload_stops_at_the_limit_youngest_first():
    # No TTL and no history: as far back as memory allows. 1 000 hot keys of
    # 176 bytes, then write-once keys while used_memory stays ≤ 90 % of 2 MB.
    maxmemory = 2_000_000
    w, _, _ = build_world(load_scenario(_scenario(once=0.5, history=None, maxmemory=maxmemory,
                                                  limit=0.9)), 1)
    I = w.I
    used = (STARTUP_BYTES["7.2"] + I[S.MEM_DATASET]
            + POINTER * (I[S.KS_BUCKETS] + I[S.KS_EXP_BUCKETS]))
    assert used <= 0.9 * maxmemory
    assert used > 0.9 * maxmemory - 176  # the next key would not have fit
    lo = int(I[S.KS_ONCE_LO])
    present = w.ks_cost[lo:] > 0
    # Youngest first: the kept keys are the stream's most recent, a prefix of rows.
    assert present[:present.sum()].all()
    assert (np.diff(w.ks_lru[lo:][present]) <= 0).all()  # LRU clock: older further on


def test_write_once_without_writes_names_the_field():
    doc = _scenario()
    doc["clients"][0]["mix"] = [{"command": "GET", "weight": 1}]
    with pytest.raises(ScenarioError, match=r"keyspace\.write-once"):
        load_scenario(doc)


def test_history_of_a_closed_group_without_think_names_the_field():
    # Its rate depends on Redis's speed, so the keys written before time 0 are unknown.
    doc = _scenario()
    group = doc["clients"][0]
    del group["rate"], group["keyspace"]["history"]
    group.update({"kind": "closed", "think": 0})
    with pytest.raises(ScenarioError, match=r"keyspace\.history"):
        load_scenario(doc)


def test_write_once_keys_without_any_bound_name_the_field():
    # A TTL on EXPIRE does not bound the keys SET writes: with no history and no
    # maxmemory the keys present at time 0 would be unbounded.
    doc = _scenario(history=None)
    doc["clients"][0]["mix"].append({"command": "EXPIRE", "weight": 1, "ttl": 60})
    with pytest.raises(ScenarioError, match=r"keyspace\.history"):
        load_scenario(doc)


def test_growing_rows_at_a_wake_up_changes_nothing(monkeypatch):
    # A light load (3 000 req/s, the thread mostly asleep), TTL 20 s and an 8 MB
    # maxmemory: the kernel's exits for more rows (and for random numbers) fall
    # while it sleeps, some on the very event that wakes it. Re-entering, it
    # must take the same-instant events and charge the wake-up as if it had not
    # stopped (event_loop.run: WAKE_OWED, SLEEP_RESUME); before that fix the
    # grown run's cpu_iteration and latencies differed by 16.7 µs in a few windows.
    doc = {"name": "grow-asleep", "duration": 120, "seed": 5, "sample-interval": 1,
           "server": {"maxmemory": "8mb", "save": "", "maxmemory-policy": "allkeys-lru"},
           "clients": [{"kind": "open", "rate": 3000,
                        "mix": [{"command": "SET", "weight": 1, "ttl": "20s"},
                                {"command": "GET", "weight": 1}],
                        "keyspace": {"keys": 5000, "write-once": 0.6}}]}
    ref = Simulation(load_scenario(doc), progress=False).run()
    monkeypatch.setattr(sizing, "SPARE_ONCE", 0.0)  # rows for the preload only: grow
    sim = Simulation(load_scenario(doc), progress=False)
    rows0 = len(sim.world.ks_cost)
    grown = sim.run()
    assert len(sim.world.ks_cost) > rows0  # it did grow
    assert grown.summary == ref.summary
    assert grown.timeseries.equals(ref.timeseries)


def _once_rows(doc: dict) -> tuple[int, int]:
    """(preloaded write-once keys, write-once rows) of the built world."""
    w = build_world(load_scenario(doc), 1)[0]
    lo = int(w.I[S.KS_ONCE_LO])
    return int((w.ks_cost[lo:] > 0).sum()), len(w.ks_cost) - lo


def test_a_cache_at_maxmemory_gets_as_many_rows_for_a_day_as_for_an_hour():
    # 2000 SET/s, 30 % write-once: 600 new keys/s, none ever deleted but by
    # eviction; a long history fills maxmemory at time 0. Keys evicted free their
    # rows, so the table needs the keys that fit (cap, at most 5 % + 16 over what
    # was preloaded: sizing.once_fit) plus SPARE_WINDOW (1800 s) of creation,
    # × SPARE_ONCE (1.25), + 1024: for the day as for the hour. Sized by rate ×
    # duration instead, the day would take 1.25 × 600 × 86 400 = 64.8 M rows.
    hour = _scenario(history=86_400, maxmemory="4mb", duration=3600)
    day = {**hour, "duration": 86_400}
    pre, rows = _once_rows(hour)
    assert pre > 5000  # memory is full of write-once keys
    assert _once_rows(day) == (pre, rows)
    spare = rows - pre
    assert 1.25 * 600 * 1800 + 1024 <= spare <= 1.25 * (600 * 1800 + 0.05 * pre + 16) + 1025


def test_rows_without_maxmemory_cover_the_keys_a_ttl_keeps():
    # No maxmemory, TTL 10 s: at most 600 × 10 = 6 000 write-once keys live at
    # once; those of the last 10 s are preloaded (history unset: the TTL bounds
    # it). Spare: 1.25 × (6 000 − 6 000 + 600 × 1 800) + 1 024 = 1 351 024 for
    # an hour or a day. Without TTL nothing bounds them: 1.25 × 600 × 3 600 + 1 024.
    hour = _scenario(ttl=10, history=None, duration=3600)
    pre, rows = _once_rows(hour)
    assert abs(pre - 6000) <= 1
    assert rows - pre == 1_351_024
    assert _once_rows({**hour, "duration": 86_400}) == (pre, rows)
    pre, rows = _once_rows(_scenario(history=10, duration=3600))
    assert rows - pre == int(1.25 * 600 * 3600) + 1024


def test_the_key_limit_counts_rows_as_the_run_is_given_them():
    # S0 over a year (25 000 SET+GET/s, 8 % of SETs write-once, 60 GB):
    # 1.25 × 300/s × 1 year = 11.8 G rows if every new key had its own, far
    # past the 100 M limit; at maxmemory the rows of evicted keys are reused,
    # so the run needs what fits (~31 M) + 30 min of new keys: accepted.
    load_scenario("scenarios/gitlab-2022.yaml", overrides=["duration=365d",
                                                          "sample-interval=1h"])
    # Without maxmemory or TTL nothing is reused: 600 new keys/s for 3 days is
    # 1.25 × 600 × 259 200 = 194 M rows, refused, naming the field.
    with pytest.raises(ScenarioError, match="write-once"):
        load_scenario(_scenario(history=10, duration=3 * 86_400))
