"""`redsim run` says where its CPU costs come from (issue #43): the reference
host's defaults, a calibration that did not measure a command the scenario
sends, or the scenario's own costs."""

from __future__ import annotations

from pathlib import Path

from redsim.config import load_scenario
from redsim.config.cost_sources import REFERENCE_HOST, cost_notes

ROOT = Path(__file__).resolve().parents[1]
CALIBRATION = ROOT / "results" / "calibration" / "reference-host" / "calibration.yaml"


def _scenario(commands, **extra):
    return {"name": "t", "duration": 1, "clients": [
        {"kind": "open", "rate": 100, "mix": [{"command": c, "weight": 1} for c in commands],
         "keyspace": {"keys": 100}}], **extra}


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
