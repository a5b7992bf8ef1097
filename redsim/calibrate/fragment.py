"""A calibration file: what ``redsim calibrate`` measured, as a scenario fragment.

The file is YAML with three parts::

    redsim-calibration: 1
    made: {date: ..., command: ..., server: {redis_version: 7.0.15, ...}, steps: [...]}
    not-measured:                 # parts it lacks: their fields keep the model's defaults
      fork: {what: ..., why: a quick calibration (--quick), defaults: [host.fork-fixed, ...]}
    values:                       # a scenario fragment: engine / disk / host keys
      engine: {allocator-quantum: 16, cpu: {read: 2.6us, ...}}
      disk: {fsync: {distribution: empirical, samples: fsync.csv}, write-bandwidth: ...}
      host: {fork-fixed: ..., fork-per-gb: ...}
    measurements:                 # every figure, its spread and how it was measured
      - {name: cpu.read, value: 2.6, unit: us, spread: 0.1, n: 3, method: ..., field: ...}

A scenario takes it with ``calibration: FILE`` (or ``redsim run --calibration
FILE``): ``values`` fill the scenario's ``engine``, ``disk`` and ``host``
sections, below the scenario's own keys (those win). Relative paths inside it
(``samples: fsync.csv``) are relative to the calibration file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

FORMAT = 1
SECTIONS = ("engine", "disk", "host")
"""The scenario sections a calibration may fill."""

_UNIT_SUFFIX = {"us": "us", "bytes": "", "bytes/s": "", "1/s": "", "-": ""}


def _yaml_value(value: float, unit: str) -> Any:
    if unit == "s":
        return f"{value * 1e3:.4g}ms"
    if unit == "us":
        return f"{value:.4g}us"
    if unit in ("bytes", "bytes/s", "1/s"):
        return float(f"{value:.4g}")
    return value


def set_dotted(tree: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``tree[a][b][c] = value`` for ``dotted = "a.b.c"``, making the levels."""
    *parents, leaf = dotted.split(".")
    node = tree
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value


def build(measurements: list[Any], made: dict[str, Any],
          extra_values: dict[str, Any] | None = None,
          not_measured: dict[str, Any] | None = None) -> dict[str, Any]:
    """The calibration document from ``Measurement`` records (those with a field
    fill ``values``) and ``extra_values`` (dotted path → YAML value);
    ``not_measured``: the parts it lacks (``calibrate.parts.not_measured``)."""
    values: dict[str, Any] = {}
    for m in measurements:
        if m.field:
            set_dotted(values, m.field, _yaml_value(m.value, m.unit))
    for path, v in (extra_values or {}).items():
        set_dotted(values, path, v)
    doc: dict[str, Any] = {"redsim-calibration": FORMAT, "made": made}
    if not_measured:
        doc["not-measured"] = not_measured
    doc["values"] = values
    doc["measurements"] = [m.as_dict() for m in measurements]
    return doc


def combine(docs: list[dict[str, Any]], made: dict[str, Any]) -> dict[str, Any]:
    """One calibration from several of the same server, made at different times:
    each measurement's value is the median of theirs and its spread their sample
    standard deviation (the between-run variation, which on a shared host is
    larger than the within-run one); non-numeric values come from the first. A
    part is not measured in the result if none of them measured it."""
    import statistics

    by_name: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        for m in doc.get("measurements", []):
            by_name.setdefault(m["name"], []).append(m)
    measurements = []
    for ms in by_name.values():
        vals = [float(m["value"]) for m in ms]
        first = dict(ms[0])
        # A field a later calibration fills (a newer redsim writes more of them).
        field = next((m["field"] for m in ms if m.get("field")), None)
        if field:
            first["field"] = field
        first["value"] = float(f"{statistics.median(vals):.4g}")
        first["spread"] = float(f"{statistics.stdev(vals):.4g}") if len(vals) > 1 else 0.0
        first["n"] = len(vals)
        if "values" in first:
            first["values"] = vals  # one per calibration, as value and spread
        first["method"] = f"median of {len(vals)} calibrations ({', '.join(map(str, vals))}); " \
            + str(ms[0]["method"])
        measurements.append(first)
    values: dict[str, Any] = {}
    # Fields measured (with units) come from the medians; the rest (the fsync
    # samples file, the allocator quantum) from the first calibration.
    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{path}.{k}" if path else k)
        else:
            set_dotted(values, path, node)
    walk(docs[0].get("values", {}), "")
    for m in measurements:
        if m.get("field"):
            set_dotted(values, m["field"], _yaml_value(m["value"], m["unit"]))
    doc: dict[str, Any] = {"redsim-calibration": FORMAT, "made": made}
    lacking = [d.get("not-measured") or {} for d in docs]
    common = {k: v for k, v in lacking[0].items() if all(k in other for other in lacking[1:])}
    if common:
        doc["not-measured"] = common
    doc["values"] = values
    doc["measurements"] = measurements
    return doc


def write(doc: dict[str, Any], path: Path) -> None:
    """Write the calibration document with a header comment saying how to use it."""
    head = ("# A redsim calibration, made by `redsim calibrate`.\n"
            "# Use it from a scenario with `calibration: " + path.name + "`, or\n"
            "# `redsim run SCENARIO --calibration " + path.name + "`. `values` fill the\n"
            "# scenario's engine/disk/host (the scenario's own keys win);\n"
            "# `measurements` say how each figure was measured.\n"
            + ("# `not-measured`: what it lacks; a scenario using it keeps the model's\n"
               "# defaults for those fields.\n" if doc.get("not-measured") else ""))
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(head + text)
    tmp.replace(path)
