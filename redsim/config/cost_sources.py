"""Where a run's CPU costs come from, in one or two lines a run prints.

No Redis source: the provenance of the model's parameters. A planner whose
run silently used the reference host's costs, or whose calibration never
measured a command the scenario sends, got an answer up to 2.5× optimistic
with no warning (issue #43). ``cost_notes`` says which of three it is:

- no calibration and no costs of the scenario's own: the reference host's
  defaults, and how to measure this host;
- a calibration: the commands the scenario sends that it did not measure
  (they keep the defaults);
- costs the scenario sets itself (S0's are chosen for the seed): the commands
  it sends and does not cost, if any.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

REFERENCE_HOST = "a 2-vCPU AMD EPYC VM, Debian's Redis 7.0.15, calibrated 2026-11-24"
"""What ``engine.cpu``'s defaults were measured on (``results/calibration/reference-host/``)."""

_PER_REQUEST = ("read", "write", "wakeup")
"""The per-request costs a calibration fits (``engine.cpu``)."""


def _sent(scenario: Any) -> list[str]:
    """The commands the scenario's groups send (their mixes; traces say theirs
    only when read, so they are left out)."""
    return sorted({m.command.upper() for g in scenario.clients for m in (g.mix or ())})


def cost_notes(scenario: Any) -> list[str]:
    """Lines saying where the run's main-thread CPU costs come from (empty when
    every command it sends is costed by a calibration or the scenario)."""
    cpu = scenario.engine.cpu
    costed = {name.upper() for name in cpu.commands}
    missing = [c for c in _sent(scenario) if c not in costed]
    if scenario.calibration:
        name = Path(scenario.calibration).name
        if "scale" in cpu.model_fields_set and not costed and not (
                set(cpu.model_fields_set) & set(_PER_REQUEST)):
            return [f"CPU costs: the reference host's defaults ({REFERENCE_HOST}) scaled by "
                    f"{cpu.scale:.3g} ({name}, redsim calibrate --scale-only)"]
        if not missing:
            return []
        return [f"CPU costs: {', '.join(missing)} not measured by {name}: the model's "
                f"defaults ({REFERENCE_HOST}); `redsim calibrate --commands "
                f"{','.join(missing)}` measures them"]
    own = set(cpu.model_fields_set) & set(_PER_REQUEST)
    if not own and not costed:
        return [f"CPU costs: the defaults of the reference host ({REFERENCE_HOST}); "
                "`redsim calibrate` measures yours (`--calibration FILE` uses it)"]
    if missing:
        return [f"CPU costs: the scenario's own, but {', '.join(missing)} keep the defaults "
                f"of the reference host ({REFERENCE_HOST})"]
    return []


__all__ = ["REFERENCE_HOST", "cost_notes"]
