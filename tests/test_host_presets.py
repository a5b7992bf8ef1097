"""``host.preset``: a cloud instance family's published cache and TLB sizes
(``redsim/config/host_presets.py``) fill the miss model's three host fields."""

from __future__ import annotations

import pytest

from redsim.config import ScenarioError, load_scenario
from redsim.config.host_presets import HOST_PRESETS
from redsim.model import cpu_caches as cc

MB = 1 << 20


def _host(**host):
    return load_scenario({"name": "t", "duration": 1, "host": host,
                          "clients": [{"kind": "open", "rate": 10, "mix": {"GET": 1},
                                       "keyspace": {"keys": 2_000_000, "preload": 0}}]})


@pytest.mark.parametrize("preset, l2, llc, stlb", [
    # Datasheet figures: Sapphire Rapids 8488C, 2 MB L2 a core, 105 MB L3, a
    # 2,048-entry STLB; Graviton3 (Neoverse V1), 1 MB L2, 32 MB system cache,
    # 2,048-entry L2 TLB; EPYC 9R14 (Zen 4), 1 MB L2, 32 MB L3 per CCD, 3,072.
    ("aws-r7i", 2 * MB, 105 * MB, 2048), ("aws-c7g", 1 * MB, 32 * MB, 2048),
    ("aws-m7a", 1 * MB, 32 * MB, 3072)])
def test_a_preset_fills_the_sizes_its_processor_publishes(preset, l2, llc, stlb):
    h = _host(preset=preset).host
    assert (h.l2, h.llc, h.tlb_reach) == (l2, llc, stlb * 4096)


def test_a_size_the_scenario_gives_wins_over_its_preset():
    # A 2-vCPU r7i shares its socket's L3 with neighbours: the planner says how much.
    h = _host(preset="aws-r7i", llc="40mb").host
    assert (h.l2, h.llc) == (2 * MB, 40 * MB)


def test_an_unknown_preset_is_an_error_that_names_the_field_and_a_near_one():
    with pytest.raises(ScenarioError) as err:
        _host(preset="aws-r7x")
    said = str(err.value)
    assert "host.preset" in said and "aws-r7g" in said


def test_a_smaller_llc_costs_a_large_dataset_more_misses():
    # 2 M keys of 64 B (~270 MB of lines) against the default 260 MB LLC and
    # against a Graviton3's 32 MB: with far less of it held, each GET misses
    # the LLC more often, so the miss cost per key access must rise.
    (big,), _ = cc.miss_deltas(_host())
    (small,), _ = cc.miss_deltas(_host(preset="aws-r7g"))
    assert small > big > 0


def test_every_preset_is_a_valid_host():
    for name in HOST_PRESETS:
        h = _host(preset=name).host
        assert h.l2 < h.llc and h.tlb_reach >= 1280 * 4096


def test_the_run_line_names_the_preset_its_cache_sizes_come_from():
    from redsim.config.cost_sources import miss_note

    # 2 M keys of 64 B miss ~0.8 µs a GET over the calibrated dataset: the run
    # prints that line, which must say whose LLC size it assumed.
    (line,) = miss_note(_host(preset="aws-r7g"))
    assert "host.llc 32 MiB, aws-r7g's" in line
    (plain,) = miss_note(_host())
    assert "host.llc 260 MiB;" in plain
