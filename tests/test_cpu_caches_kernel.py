"""The kernel charges each key access the miss cost ``cpu_caches`` computes."""

from __future__ import annotations

import pytest

from redsim import load_scenario, simulate

MISS = {"l2": 0, "tlb": 0.146, "llc": 0.085, "page-walk": 0.149}


def _run(miss) -> dict:
    sc = {"name": "misses", "duration": 1.0, "sample-interval": 0.5, "server": {"save": ""},
          "host": {"l2": "2mb", "llc": "260mb", "tlb-reach": "6mb"},
          "engine": {"cpu": {"miss": miss, "calibrated-on": {"keys": 100000, "value-size": 3,
                                                              "key-size": 16}}},
          "clients": [{"kind": "open", "rate": 5000, "mix": {"GET": 1},
                       "value-size": 64, "key-size": 16,
                       "keyspace": {"keys": 2_000_000, "preload": 0}}]}
    return simulate(load_scenario(sc), seed=3).summary


def test_a_get_over_two_million_keys_pays_its_misses_over_the_calibrated_dataset():
    # 2 M keys of 64 B, uniform: lines 4 x 64 + 8 = 264 B a key, 528 MB against
    # 260 MiB (272.6 MB) of LLC: p = 0.4837; span 152 B a key, 304 MB against
    # a 6 MiB TLB reach: p = 0.9793, and under 1 GiB of page-walk reach: 0.
    # Five loads: 5 x (0.146 x 0.9793 + 0.085 x 0.4837) = 0.9205 us; less the
    # calibrated dataset's 0.1247 (test_cpu_caches.py): 0.7957 us per GET.
    with_misses = _run(MISS)
    without = _run("none")
    n = with_misses["requests_completed"]
    assert n == without["requests_completed"] > 4000
    extra = (with_misses["cpu_commands_share"] - without["cpu_commands_share"]) * 1.0 / n
    assert extra == pytest.approx(0.7957e-6, rel=0.005)
