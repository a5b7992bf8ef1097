"""Temporal locality of keys (``model/locality.py``): a hot set, reads of recent
writes and a drifting working set, each checked by what it does to hits and
to the keys written, against hand-worked probabilities."""

from __future__ import annotations

import numpy as np
import pytest

from redsim import load_scenario, simulate

# An empty keyspace of 10 M keys, half GETs and half SETs from 4 threads: a GET
# hits only a key some SET wrote. Without locality almost none do (~10^4 SETs
# over 10^7 keys: P(hit) < 0.002).
BASE = {"name": "locality", "duration": 2.0, "seed": 5, "sample-interval": 0.5,
        "server": {"save": ""},
        "clients": [{"name": "app", "threads": 4, "pool": {"max-size": 4}, "think": "1ms",
                     "mix": {"GET": 1, "SET": 1}}]}


def _hit_ratio(keyspace: dict) -> tuple[float, int]:
    sc = {**BASE, "clients": [{**BASE["clients"][0],
                               "keyspace": {"keys": 10_000_000, "preload": 0, **keyspace}}]}
    s = simulate(load_scenario(sc)).summary
    gets = s["keyspace_hits"] + s["keyspace_misses"]
    return s["keyspace_hits"] / gets, gets


def _binomial_tolerance(p: float, n: int) -> float:
    # 4 standard deviations of a hit ratio over n GETs, plus the cold draws.
    return 4 * np.sqrt(p * (1 - p) / n) + 0.003


def test_no_locality_hits_almost_nothing():
    ratio, _ = _hit_ratio({})
    assert ratio < 0.003


def test_a_hot_set_hits_with_its_share():
    # Ten hot keys take 40 % of draws; SETs write all ten within milliseconds,
    # so from then on a GET hits when (and only when) it draws a hot key.
    ratio, n = _hit_ratio({"hot": {"share": 0.4, "keys": 10}})
    assert ratio == pytest.approx(0.4, abs=_binomial_tolerance(0.4, n))


def test_reads_of_recent_writes_hit_with_their_probability():
    # 30 % of GETs name one of the last 100 keys written (which exist: nothing
    # evicts or expires them); the other 70 % draw from 10 M mostly absent keys.
    ratio, n = _hit_ratio({"recent": {"probability": 0.3, "window": 100}})
    assert ratio == pytest.approx(0.3, abs=_binomial_tolerance(0.3, n))


def test_a_drifting_working_set_writes_new_keys_at_the_drift_rate():
    # SETs only, 99.9999 % on a hot set of 10 keys that slides 500 ids a
    # second: each id is hot for 10 / 500 = 20 ms, in which ~3,400 SETs/s × 20 ms /
    # 10 ≈ 7 land on it, so every id the window passes is written. Over 2 s the
    # window covers 10 + 500 × 2 ids: the keys written, within a few cold draws.
    sc = {**BASE, "clients": [{**BASE["clients"][0], "mix": {"SET": 1},
                               "keyspace": {"keys": 1_000_000, "preload": 0, "drift": "500/s",
                                            "hot": {"share": 0.999999, "keys": 10}}}]}
    s = simulate(load_scenario(sc)).summary
    assert s["keys_end"] == pytest.approx(10 + 500 * 2.0, abs=5)
