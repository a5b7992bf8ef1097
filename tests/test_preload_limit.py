"""The preload stays under maxmemory: a cache whose keyspace is larger than its
memory starts as an LRU cache at its limit would be, not over it (issue #17: a
4 GB cache preloaded to 4.68 GB opened its run with an eviction storm)."""

from __future__ import annotations

import warnings

import pytest

from redsim import load_scenario
from redsim.model import state as S
from redsim.model.build import build_world
from redsim.model.memory import POINTER, STARTUP_BYTES
from redsim.model.preload import PreloadTrimmedWarning
from tests.engine_helpers import ZERO_OVERHEAD

KEYS = 1000
KEY_BYTES = 176  # 16-B key, 100-B value, no TTL: entry + key sds + value (test_write_once)
# 600 keys fit exactly: startup + 600 keys + their 1,024 buckets of 8 B; a 601st
# would need 176 B more.
FIT = 600
MAXMEMORY = STARTUP_BYTES["7.2"] + FIT * KEY_BYTES + POINTER * 1024


def _scenario(**keyspace) -> dict:
    group = {"kind": "open", "rate": 2000, "processes": 1, "pool": {"max-size": 8},
             "mix": {"SET": 0.5, "GET": 0.5}, "key-size": 16, "value-size": 100,
             "keyspace": {"keys": KEYS, "preload": 1.0, **keyspace}}
    return {"name": "preload-limit", "duration": 1.0, "redis-version": "7.2",
            "network": {"rtt": 0}, "engine": {"cpu": dict(ZERO_OVERHEAD)},
            "server": {"maxmemory": MAXMEMORY}, "clients": [group]}


def _used(w) -> int:
    I = w.I
    return int(STARTUP_BYTES["7.2"] + I[S.MEM_DATASET]
               + POINTER * (I[S.KS_BUCKETS] + I[S.KS_EXP_BUCKETS]))


def test_a_preload_past_maxmemory_keeps_the_most_recently_used_keys_that_fit():
    with pytest.warns(PreloadTrimmedWarning, match=r"the 600 most recently used of 1,000"):
        w, _, _ = build_world(load_scenario(_scenario()), 1)
    present = w.ks_cost[:KEYS] > 0
    assert present.sum() == FIT
    assert _used(w) <= MAXMEMORY < _used(w) + KEY_BYTES
    # Recency decides: no key left out was used later than a key kept.
    lru = w.ks_lru[:KEYS]
    assert lru[present].min() >= lru[~present].max()


def test_a_limit_above_one_loads_them_all_and_a_fitting_preload_is_untouched():
    # 1,000 keys need ~1.6x the 600 that fit: a limit of 2 x maxmemory holds them.
    w, _, _ = build_world(load_scenario(_scenario(**{"preload-limit": 2})), 1)
    assert (w.ks_cost[:KEYS] > 0).sum() == KEYS
    assert _used(w) > MAXMEMORY
    # 500 keys fit whole: no warning, every key present.
    small = _scenario(keys=500)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PreloadTrimmedWarning)
        w, _, _ = build_world(load_scenario(small), 1)
    assert (w.ks_cost[:500] > 0).sum() == 500
