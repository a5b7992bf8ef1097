"""`redsim run` says where its CPU costs come from (issue #43): the reference
host's defaults, a calibration that did not measure a command the scenario
sends, or the scenario's own costs."""

from __future__ import annotations

from pathlib import Path

from redsim.config import load_scenario
from redsim.config.cost_sources import REFERENCE_HOST, cost_notes

ROOT = Path(__file__).resolve().parents[1]
CALIBRATION = ROOT / "results" / "calibration" / "reference-host" / "calibration.yaml"


def _scenario(commands, keys=100_000, value_size=3, key_size=25, **extra):
    # 100,000 keys of 3 B: the calibrated dataset, so no line about cache misses.
    return {"name": "t", "duration": 1, "clients": [
        {"kind": "open", "rate": 100, "mix": [{"command": c, "weight": 1} for c in commands],
         "value-size": value_size, "key-size": key_size,
         "keyspace": {"keys": keys, "preload": 0}}], **extra}


def test_defaults_are_named_with_the_host_they_describe():
    (line,) = cost_notes(load_scenario(_scenario(["GET", "SET"])))
    assert REFERENCE_HOST in line and "`redsim calibrate`" in line


def test_a_calibration_names_the_commands_it_did_not_measure():
    # The reference calibration measured GET and SET but not INFO.
    sc = load_scenario(_scenario(["GET", "SET", "INFO"]), calibration=CALIBRATION)
    (line,) = cost_notes(sc)
    assert line.startswith("CPU costs: INFO not measured by calibration.yaml")
    assert "--commands INFO" in line
    assert cost_notes(load_scenario(_scenario(["GET", "SET"]), calibration=CALIBRATION)) == []


def test_a_scenario_with_its_own_costs_says_nothing_unless_a_command_is_left_out():
    # S0 sets read, write and GET / SET / MGET for the seed: nothing to say.
    assert cost_notes(load_scenario(ROOT / "scenarios" / "gitlab-2022.yaml")) == []
    own = _scenario(["GET", "INFO"], engine={"cpu": {"commands": {"GET": {"fixed": "2us"}}}})
    (line,) = cost_notes(load_scenario(own))
    assert line.startswith("CPU costs: the scenario's own, but INFO keep")


def test_a_dataset_past_the_caches_names_its_miss_cost_per_key_access():
    # 2 M keys of 64 B and 16-byte names, the default miss costs (l2 0.055, tlb
    # 0.116, llc 0.111, page-walk 0.170 µs): lines 264 B a key, 528 MB, miss the
    # 2 MiB L2 with p = 0.9960 and the 260 MiB LLC with 0.4837; the span, 152 B
    # a key (304 MB), misses the 6 MiB TLB reach with 0.9793 and fits the page
    # walk's 1 GiB. Five loads: 5 x (0.055 x 0.9960 + 0.116 x 0.9793 + 0.111 x
    # 0.4837) = 1.1104 us. The calibrated dataset (100,000 keys of 3 B, 25-byte
    # names: 200 B of lines, 88 B of span a key) misses the L2 with 0.8951 and
    # the TLB with 0.2851 on 4 loads: 0.3292 us. The difference: +0.78 us.
    lines = cost_notes(load_scenario(_scenario(["GET"], keys=2_000_000, value_size=64,
                                               key_size=16)))
    assert len(lines) == 2
    assert "misses per key access" in lines[1] and "group0 +0.78 µs" in lines[1]
    assert "the reference VM's defaults; `redsim calibrate --only caches`" in lines[1]
    # Miss costs the scenario (or its calibration) sets are said to be this host's.
    own = _scenario(["GET"], keys=2_000_000, value_size=64, key_size=16,
                    engine={"cpu": {"miss": {"l2": 0.05, "tlb": 0.1, "llc": 0.1,
                                             "page-walk": 0.15}}})
    assert "miss costs: this host's" in cost_notes(load_scenario(own))[1]
    # S0's costs are its seed's, misses included: nothing to add.
    assert cost_notes(load_scenario(ROOT / "scenarios" / "gitlab-2022.yaml")) == []
