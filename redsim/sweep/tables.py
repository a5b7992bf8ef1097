"""The sweep's tables: one row per run, and one row per point with intervals."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from redsim.sweep.grid import Point
from redsim.sweep.stats import mean_ci, wilson

# Summary keys that identify a run rather than measure it.
_NOT_METRICS = {"scenario", "scenario_hash", "seed", "redis_version"}

GROUP_METRICS = ("latency_p99_s", "throughput_rps", "requests_rejected", "requests_failed",
                 "requests_timed_out", "connections_refused", "oom_rejected")
"""A client group's summary keys (``<group>.<metric>``) the aggregate table
carries besides the sweep's ``metrics`` when its points have more than one
group: what the per-group figures draw (``plots.GROUP_FIGURES``)."""


def _kind(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, float, np.integer, np.floating)):
        return "number"
    return "str" if isinstance(v, str) else "other"


def written(v: Any) -> str:
    """A value as a table cell shows it when it is not a plain scalar: strings as
    they are (the empty string as ``""``), lists and mappings (``server.save``)
    as compact JSON, ``None`` as ``null``."""
    if isinstance(v, str):
        return v or '""'  # an empty string (`save ""`) still needs a visible label
    if isinstance(v, (list, tuple, dict)) or v is None:
        return json.dumps(v, separators=(", ", ": "), default=str)
    return str(v)


def table_value(v: Any) -> Any:
    """What a table holds for an axis value: a number, bool or string as is;
    anything else (a list, a mapping, ``None``) as ``written(v)``, so every column
    is hashable, groups, sorts and writes to Parquet."""
    return v if _kind(v) != "other" else written(v)


def categorical_axes(points: list[Point]) -> set[str]:
    """Axes tabled by their written values: those whose used values are not all
    numbers, all bools or all strings (``server.save`` becomes a list of pairs;
    ``ttl: [null, 1h]`` mixes None and numbers)."""
    names = points[0].values if points else {}
    out = set()
    for name in names:
        kinds = {_kind(p.values[name]) for p in points}
        if len(kinds) != 1 or kinds == {"other"}:
            out.add(name)
    return out


def _axis_columns(points: list[Point]) -> dict[int, dict[str, Any]]:
    """Per point: the axis values the simulator used, and the written label where
    it differs (``ttl_label: 8h`` beside ``ttl: 28800.0``). A categorical axis
    (``categorical_axes``) has one column, its values as written."""
    categorical = categorical_axes(points)
    differs = {name for p in points for name in p.values
               if name not in categorical and not _same(p.labels[name], p.values[name])}
    out = {}
    for p in points:
        row: dict[str, Any] = {name: (written(p.labels[name]) if name in categorical
                                      else v) for name, v in p.values.items()}
        for name in sorted(differs):
            row[f"{name}_label"] = str(p.labels[name])
        out[p.index] = row
    return out


def _same(a: Any, b: Any) -> bool:
    """Whether the written value is what the simulator used (1000 and 1000.0 are;
    "8h" and 28800.0 are not)."""
    def number(v: Any) -> bool:
        return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
    if number(a) and number(b):
        return float(a) == float(b)
    return type(a) is type(b) and bool(a == b)


def tidy_table(points: list[Point], seeds: list[int],
               records: dict[tuple[str, int], dict[str, Any]]) -> pd.DataFrame:
    """One row per (point, replication) that has a record, in grid order.

    Columns: ``point``, ``replication``, ``seed``, the axis values (``<axis>_label``
    where the file wrote them with units), ``status`` (ok / error), ``error``, then
    every ``summary`` metric in name order (missing for a run that raised).
    """
    axes = _axis_columns(points)
    rows = []
    for p in points:
        for r, seed in enumerate(seeds):
            rec = records.get((p.key, seed))
            if rec is None:
                continue
            row: dict[str, Any] = {"point": p.index, "replication": r, "seed": seed,
                                   **axes[p.index]}
            err = rec.get("error")
            row["status"] = "error" if err else "ok"
            row["error"] = err or ""
            summary = rec.get("summary") or {}
            for k in sorted(summary):
                if k not in _NOT_METRICS:
                    row[k] = summary[k]
            rows.append(row)
    df = pd.DataFrame.from_records(rows)
    if df.empty:
        return df
    fixed = ["point", "replication", "seed", *axes[points[0].index], "status", "error"]
    metrics = sorted(c for c in df.columns if c not in fixed)
    df = df[fixed + metrics]
    return _typed(df)


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """Nullable dtypes, so a metric missing for a failed run stays a number or bool."""
    out = df.copy()
    for c in out.columns:
        col = out[c]
        vals = [v for v in col if v is not None and not (isinstance(v, float) and np.isnan(v))]
        if vals and all(isinstance(v, (bool, np.bool_)) for v in vals):
            out[c] = col.astype("boolean")
        elif vals and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                          for v in vals):
            out[c] = col.astype("Int64")
        elif vals and all(isinstance(v, (int, float, np.integer, np.floating))
                          and not isinstance(v, bool) for v in vals):
            out[c] = pd.to_numeric(col.replace({"inf": np.inf, "-inf": -np.inf}),
                                   errors="coerce").astype("float64")
        elif c in ("status", "error") or (vals and all(isinstance(v, str) for v in vals)):
            out[c] = col.astype("string")
        elif not vals:  # measured nowhere (e.g. cycle_period_s without bursts)
            out[c] = pd.Series(np.nan, index=col.index, dtype="float64")
    return out


def group_metrics(points: list[Point]) -> tuple[str, ...]:
    """``<group>.<metric>`` for every client group of the points and every
    metric of ``GROUP_METRICS``, when there is more than one group; else none
    (with one group the run's own metrics are the group's)."""
    names = list(dict.fromkeys(g.name for p in points for g in p.scenario.clients))
    if len(names) < 2:
        return ()
    return tuple(f"{g}.{m}" for g in names for m in GROUP_METRICS)


def aggregate_table(tidy: pd.DataFrame, points: list[Point],
                    metrics: tuple[str, ...]) -> pd.DataFrame:
    """One row per point: the axis values, ``runs``, ``errors``, the burst probability
    with its 95 % Wilson interval (``burst_probability``, ``_low``, ``_high``) and,
    per metric, the replication mean and its 95 % t interval (``<m>_mean``,
    ``<m>_low``, ``<m>_high``); a boolean metric's mean is its frequency. With
    more than one client group, the same for each group's ``group_metrics``
    (``web.latency_p99_s_mean``, ...) after ``metrics``."""
    metrics = (*metrics, *(k for k in group_metrics(points) if k not in metrics))
    axes = _axis_columns(points)
    rows = []
    for p in points:
        sub = tidy[tidy["point"] == p.index] if len(tidy) else tidy
        ok = sub[sub["status"] == "ok"] if len(sub) else sub
        row: dict[str, Any] = {"point": p.index, **axes[p.index],
                               "runs": int(len(sub)), "errors": int(len(sub) - len(ok))}
        if "burst_detected" in tidy.columns:
            hits = int(ok["burst_detected"].astype("boolean").fillna(False).sum())
            prob, lo, hi = wilson(hits, len(ok))
            row.update(burst_probability=prob, burst_probability_low=lo,
                       burst_probability_high=hi)
        for m in metrics:
            if m == "burst_detected" or m not in tidy.columns:
                continue
            vals = pd.to_numeric(ok[m].astype("Float64"), errors="coerce").to_numpy(
                dtype=float, na_value=np.nan)
            mean, lo, hi = mean_ci(vals)
            row.update({f"{m}_mean": mean, f"{m}_low": lo, f"{m}_high": hi})
        rows.append(row)
    return pd.DataFrame.from_records(rows)
