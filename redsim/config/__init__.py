"""The configuration layer: scenario files, units, redis.conf, validation.

`load_scenario(path_or_dict, overrides=[...])` returns a validated `Scenario` or
raises one `ScenarioError` naming the file, line, field, what was expected and what
was found. `resolved_dict` and `scenario_hash` give the fully resolved scenario and
its provenance hash.
"""

from redsim.config.errors import ScenarioError
from redsim.config.loader import load_scenario, resolved_dict, scenario_hash
from redsim.config.schema import Scenario

__all__ = ["Scenario", "ScenarioError", "load_scenario", "resolved_dict", "scenario_hash"]
