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

and, when the scenario's keys miss the CPU's caches more or less than the
dataset the costs were calibrated on, by how much per key access
(``model/cpu_caches.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

REFERENCE_HOST = ("a 2-vCPU Intel Xeon VM, Debian's Redis 7.0.15, medians of 8 calibrations "
                  "on 2026-11-28/29")
"""What ``engine.cpu``'s defaults were measured on (``results/calibration/reference-host/``)."""

_PER_REQUEST = ("read", "write", "wakeup")
"""The per-request costs a calibration fits (``engine.cpu``)."""


def sent_commands(scenario: Any) -> list[str]:
    """The commands the scenario's groups send (their mixes; traces say theirs
    only when read, so they are left out)."""
    return sorted({m.command.upper() for g in scenario.clients for m in (g.mix or ())})


MISS_NOTE_US = 0.05
"""A group's miss cost per key access, µs, from which ``cost_notes`` names it."""


def miss_note(scenario: Any) -> list[str]:
    """A line giving each group's cache-miss cost per key access over the
    calibrated dataset's, when one is at least ``MISS_NOTE_US``."""
    from redsim.model.cpu_caches import miss_deltas
    from redsim.traces import group_traces

    per, _ = miss_deltas(scenario, traces=group_traces(scenario))
    scale = scenario.engine.cpu.scale
    shown = [(g.name, d * scale * 1e6) for g, d in zip(scenario.clients, per, strict=True)
             if abs(d * scale * 1e6) >= MISS_NOTE_US]
    if not shown:
        return []
    on = scenario.engine.cpu.calibrated_on
    parts = ", ".join(f"{name} {us:+.2f} µs" for name, us in shown)
    whose = ("this host's (its calibration's caches part)"
             if "miss" in scenario.engine.cpu.model_fields_set
             else "the reference VM's defaults; `redsim calibrate --only caches` measures "
                  "yours")
    preset = f", {scenario.host.preset}'s" if scenario.host.preset else ""
    return [f"CPU costs: cache and TLB misses per key access over the calibrated dataset's "
            f"({on.keys:,} keys of {on.value_size} B): {parts} (host.llc "
            f"{scenario.host.llc / 2**20:.0f} MiB{preset}; miss costs: {whose}; "
            "`engine.cpu.miss: none` if the costs were measured on this dataset)"]


def client_note(scenario: Any) -> list[str]:
    """A line naming the same-host client groups whose CPU per request batch is
    the default (redis-benchmark's on the reference host), neither their own
    ``client-cpu`` nor the host's (``host.client-cpu``, which a calibration
    writes): their throughput follows that host's client, not this one's."""
    groups = [g for g in scenario.clients if g.placement == "same-host"
              and "client_cpu" not in g.model_fields_set]
    if not groups:
        return []
    names = ", ".join(g.name for g in groups)
    return [f"client CPU: {names} on Redis's host at the default {groups[0].client_cpu:g} µs "
            "a request batch (redis-benchmark on the reference host; 11 µs on a 2-vCPU "
            "AMD EPYC VM); `redsim calibrate` measures yours (host.client-cpu)"]


def cost_notes(scenario: Any) -> list[str]:
    """Lines saying where the run's main-thread CPU costs come from (empty when
    every command it sends is costed by a calibration or the scenario), and
    its same-host clients' CPU when it is the default."""
    return _source_notes(scenario) + miss_note(scenario) + client_note(scenario)


def _source_notes(scenario: Any) -> list[str]:
    """Whose costs the run uses."""
    cpu = scenario.engine.cpu
    costed = {name.upper() for name in cpu.commands}
    missing = [c for c in sent_commands(scenario) if c not in costed]
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


__all__ = ["REFERENCE_HOST", "client_note", "cost_notes", "miss_note", "sent_commands"]
