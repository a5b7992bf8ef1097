"""The calibration's parts: what each measures and which scenario fields it fills.

A leaf of ``redsim.calibrate``: the package's driver (``calibrate``) and
``--scale-only`` (``scale.py``) both write a file's ``not-measured`` from it,
so it sits below both (``scale`` imported it from the package, which imports
``scale``).
"""

from __future__ import annotations

from typing import Any

from redsim.calibrate import measure

ALL_PARTS = ("cpu", "caches", "memory", "clients", "eviction", "disk", "fork")
WRITE_PARTS = {"eviction", "fork"}
"""Parts that change the server's configuration or write files on its side."""
QUICK_PARTS = ("cpu",)
"""What ``quick`` measures: the per-request and per-command CPU costs."""

PART_FIELDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "cpu": ("main-thread CPU per request and per command",
            ("engine.cpu.read", "engine.cpu.write", "engine.cpu.wakeup",
             "engine.cpu.commands", "host.client-cpu", "host.client-cpu-per-command")),
    "caches": ("main-thread CPU against the dataset's size: the cache and TLB miss costs",
               ("host.l2", "host.llc", "engine.cpu.miss")),
    "memory": ("bytes per key, and the allocator's build and quantum",
               ("engine.allocator", "engine.allocator-quantum")),
    "clients": ("bytes per connection (evidence only: no field)", ()),
    "eviction": ("CPU per evicted key", ("engine.cpu.eviction-check",
                                         "engine.cpu.eviction-sample",
                                         "engine.cpu.eviction-delete")),
    "disk": ("fsync latency and write bandwidth", ("disk.fsync", "disk.write-bandwidth")),
    "fork": ("fork time against RSS, the RDB child's speed",
             ("host.fork-fixed", "host.fork-per-gb", "host.child-keys-per-sec")),
}
"""Per part: what it measures, and the scenario fields it fills (which stay at
the model's defaults in a scenario using a calibration without it)."""



def not_measured(lacks: dict[str, str], commands: tuple[str, ...] | None = None
                 ) -> dict[str, dict[str, Any]]:
    """The calibration file's ``not-measured``: for each part it lacks (part ->
    why), what the part measures and the fields that stay at the model's
    defaults; with ``commands`` (those measured), the other commands too."""
    out: dict[str, dict[str, Any]] = {
        p: {"what": PART_FIELDS[p][0], "why": why, "defaults": list(PART_FIELDS[p][1])}
        for p, why in lacks.items()}
    if commands is not None:
        rest = [c for c in measure.BENCH_COMMANDS if c not in commands]
        if rest:
            out["commands"] = {
                "what": "main-thread CPU of commands other than " + ", ".join(commands),
                "why": "not in --commands (all: every command redis-benchmark can drive)",
                "defaults": [f"engine.cpu.commands.{c}" for c in rest]
                + ["engine.cpu.commands of any other command"]}
    return out


__all__ = ["ALL_PARTS", "PART_FIELDS", "QUICK_PARTS", "WRITE_PARTS", "not_measured"]
