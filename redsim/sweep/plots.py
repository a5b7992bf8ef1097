"""Figures of a sweep: burst-probability heatmap, a metric with its CI band, each
client group's metrics, the frontier.

Like ``redsim.plots``, figures are drawn on a ``matplotlib.figure.Figure`` with
the Agg canvas (no pyplot state). Inputs are the sweep's aggregate table
(``<metric>_mean``, ``_low``, ``_high``; ``burst_probability`` with its Wilson
interval; a client group's ``<group>.<metric>_mean`` ...) and the frontier's tables.

Values are in the table's units (s, bytes, 1/s) and are shown in the units a
scenario file writes: a sweep axis's ticks as the file wrote each value (``8h``),
or, where it wrote plain numbers in a field with a unit, in that unit
(``20m``, ``1h``, ``2w``; ``64MB``; ``25k/s``), a metric's axis in one unit
named in its label (``p99 latency (ms)``, ``used_memory_peak (GB)``). What an
axis's values measure is given per column (``units``: ``grid.axis_quantity``
of each axis), else read from how the file wrote them.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axis import Axis as MplAxis
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, Locator, MaxNLocator, NullFormatter

from redsim.config.units import (
    QUANTITY_UNITS,
    common_unit,
    format_number,
    format_quantity,
    parse_bandwidth,
    parse_duration,
    parse_rate,
    parse_size,
)
from redsim.plots import _save

__all__ = ["GROUP_ERRORS", "GROUP_FIGURES", "Quantity", "client_groups", "metric_label",
           "metric_quantity", "plot_burst_heatmap", "plot_frontier", "plot_groups",
           "plot_metric", "tick_labels"]

Quantity = tuple[str, float]
"""What a column's numbers measure: a kind of ``redsim.config.units.QUANTITY_UNITS``
(duration, size, rate, bandwidth) and the size of its 1 in the kind's model unit
(s, bytes, 1/s, bytes/s): ``("duration", 1.0)`` for seconds, ``("duration", 1e-6)``
for ``latest_fork_usec``."""

GROUP_FIGURES: dict[str, tuple[str, ...]] = {
    "latency_p99_s": ("latency_p99_s",),
    "throughput_rps": ("throughput_rps",),
    "errors": ("requests_rejected", "requests_failed", "requests_timed_out",
               "connections_refused", "oom_rejected"),
}
"""The per-client-group figures of a sweep with several groups: figure name
(``groups_<name>.png``) -> the group metrics it draws, one panel each (those
the table has: ``tables.GROUP_METRICS``)."""

GROUP_ERRORS = GROUP_FIGURES["errors"]

_METRIC_NAMES = {
    "burst_probability": "burst probability", "throughput_rps": "throughput",
    "requests_rejected": "rejected by the pool", "requests_failed": "failed: conn. closed",
    "requests_timed_out": "timed out", "connections_refused": "refused (maxclients)",
    "oom_rejected": "answered -OOM",
}
_LATENCY = re.compile(r"latency_(p\d+|mean|max)_s")
_MAX_POINT_TICKS = 12
"""Most sweep-axis values a log axis labels each at its place; beyond, round values."""


# --- units -----------------------------------------------------------------------

def metric_quantity(metric: str) -> Quantity | None:
    """What a summary metric measures, by its name (a client group's
    ``<group>.<metric>`` as its metric): ``*_s`` seconds, ``*_usec``
    microseconds, ``*_bytes`` and ``*memory*`` bytes, ``*_rps`` and
    ``*_per_sec`` per second; None for counts, shares and ratios."""
    name = metric.rsplit(".", 1)[-1]
    if name.endswith("_usec"):
        return "duration", 1e-6
    if name.endswith("_s"):
        return "duration", 1.0
    if name.endswith(("_ratio", "_share")):
        return None
    if name.endswith("_bytes") or "memory" in name:
        return "size", 1.0
    if name.endswith(("_rps", "_per_sec")):
        return "rate", 1.0
    return None


def metric_label(metric: str, unit: str | None = None) -> str:
    """A metric's axis label, its unit last: ``p99 latency (ms)``,
    ``throughput (k/s)``, ``used_memory_peak (GB)``."""
    name = metric.rsplit(".", 1)[-1]
    m = _LATENCY.fullmatch(name)
    if m:
        which = m.group(1)
        if re.fullmatch(r"p\d{3,}", which):  # p999 is p99.9
            which = f"{which[:3]}.{which[3:]}"
        words = f"{which} latency"
    else:
        words = _METRIC_NAMES.get(name, re.sub(r"_(s|usec|bytes|rps)$", "", name))
    if unit is None:
        return words
    return f"{words} ({_UNIT_WORDS.get(unit, unit)})"


_UNIT_WORDS = {"/s": "1/s", "m": "min"}
"""A unit in an axis label where its tick spelling would read ambiguously."""


# Rate before bandwidth: parse_bandwidth reads `10k/s` too (bytes), parse_rate
# not `200mb/s`.
_PARSERS = {"duration": parse_duration, "size": parse_size, "rate": parse_rate,
            "bandwidth": parse_bandwidth}


def _written(v: Any) -> bool:
    """Whether a label holds a unit (``8h``), not a plain number (``1200``)."""
    if isinstance(v, (int, float, np.integer, np.floating)):
        return False
    try:
        float(str(v))
    except ValueError:
        return True
    return False


def _close(a: float, b: float) -> bool:
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


def _quantity(agg: pd.DataFrame, axis: str,
              units: Mapping[str, Quantity | None] | None) -> Quantity | None:
    """What an axis's values measure: as given in ``units``, else the kind whose
    parser reads every label the file wrote with a unit (``8h``) as the value
    beside it (28800.0 s)."""
    if units and units.get(axis) is not None:
        return units[axis]
    col = f"{axis}_label"
    if col not in agg.columns or not _numeric(agg[axis]):
        return None
    pairs = [(w, v) for w, v in zip(agg[col], agg[axis], strict=True) if _written(w)]
    for kind, parse in _PARSERS.items():
        try:
            if pairs and all(_close(parse(w), v) for w, v in pairs):
                return kind, 1.0
        except ValueError:
            continue
    return None


def _numeric(col: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)


def _number(v: Any) -> str:
    """A tick label: 1,209,600 rather than 1.2096e+06; 0.55 as is."""
    if isinstance(v, (float, np.floating)) and not isinstance(v, bool):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)


def _one_label(written: Any, value: Any, quantity: Quantity | None) -> str:
    if written is not None and _written(written):
        return str(written)  # the file's own spelling
    if quantity is not None and isinstance(value, (int, float, np.integer, np.floating)) \
            and not isinstance(value, (bool, np.bool_)):
        kind, factor = quantity
        return format_quantity(float(value) * factor, kind)
    return str(written) if written is not None else _number(value)


def tick_labels(agg: pd.DataFrame, axis: str, quantity: Quantity | None = None) -> list[str]:
    """A sweep axis's value at each row as the sweep file wrote it (``8h``); a
    plain number written for a field with a unit in that unit (1200 s:
    ``20m``); else the value (``1,209,600``, ``0.55``)."""
    col = f"{axis}_label"
    written = list(agg[col]) if col in agg.columns else [None] * len(agg)
    return [_one_label(w, v, quantity) for w, v in zip(written, agg[axis], strict=True)]


def _ladder(kind: str) -> list[float]:
    """Round values of a kind for a log axis, in its model unit: 1, 10 and 100
    of each unit below the next (``1s 10s 1m 10m 1h 10h 1d 1w 10w ...``)."""
    units = sorted(QUANTITY_UNITS[kind], key=lambda u: u[1])
    out = []
    for i, (_, f) in enumerate(units):
        nxt = units[i + 1][1] if i + 1 < len(units) else f * 1e4
        out += [f * k for k in (1, 10, 100, 1000) if f * k < nxt * (1 - 1e-12)]
    return out


class _UnitLocator(Locator):
    """Ticks at round numbers of one unit: ``unit`` if given, else the largest of
    the kind's units in which the ticks are at least 1 apart (``0 2d 4d``, not
    ``0 0.25w 0.5w``); on a log axis at the kind's round values (``1h 10h 1d
    1w``) when two or more are in view. ``unit`` holds the one last used."""

    def __init__(self, quantity: Quantity, unit: tuple[str, float] | None, log: bool) -> None:
        self.kind, self.factor = quantity
        self.fixed = unit
        self.unit = unit
        self.log = log
        self.linear = MaxNLocator(nbins="auto", steps=[1, 2, 2.5, 5, 10])

    def set_axis(self, axis: MplAxis) -> None:
        super().set_axis(axis)
        self.linear.set_axis(axis)

    def __call__(self) -> Any:
        vmin, vmax = self.axis.get_view_interval()
        return self.tick_values(vmin, vmax)

    def tick_values(self, vmin: float, vmax: float) -> Any:
        lo, hi = sorted((vmin, vmax))
        if self.log:
            ticks = [v / self.factor for v in _ladder(self.kind)]
            ticks = [t for t in ticks if lo <= t <= hi]
            if len(ticks) >= 2:
                self.unit = None
                return np.array(ticks)
        for unit in [self.fixed] if self.fixed else QUANTITY_UNITS[self.kind]:
            scale = unit[1] / self.factor  # table units per display unit
            ticks = self.linear.tick_values(lo / scale, hi / scale)
            if self.fixed or len(ticks) < 2 or ticks[1] - ticks[0] >= 1 - 1e-9:
                break
        self.unit = unit
        ticks = ticks * scale
        return ticks[ticks > 0] if self.log else ticks


def _unit_ticks(axis: MplAxis, values: Any, quantity: Quantity, *, log: bool,
                in_ticks: bool) -> str:
    """Tick ``axis`` (holding ``values`` in the table's unit) in one unit of its
    quantity. With ``in_ticks`` every tick carries the unit (``5k/s``; per value
    on a log axis: ``10m 1h 1d``), the unit chosen by ``_UnitLocator``; else
    only the number, in ``common_unit`` of ``values`` (for a label ``(ms)``).
    Returns that unit's name (or the kind's when the ticks choose)."""
    kind, factor = quantity
    if in_ticks:
        locator = _UnitLocator(quantity, None, log)
        axis.set_major_locator(locator)
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: format_quantity(
            v * factor, kind, locator.unit[0] if locator.unit else None)))
        if log:
            axis.set_minor_formatter(NullFormatter())
        return kind
    vals = np.asarray(pd.to_numeric(pd.Series(values, dtype=object), errors="coerce"),
                      dtype=float) * factor
    name, size = common_unit(kind, vals[np.isfinite(vals)])
    axis.set_major_locator(_UnitLocator(quantity, (name, size), log))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: format_number(v * factor / size)))
    return name


def _metric_axis(axis: MplAxis, metric: str, values: Any) -> str:
    """Tick a metric's axis in one unit and return its label (``p99 latency (ms)``)."""
    q = metric_quantity(metric)
    if q is None:
        return metric_label(metric)
    return metric_label(metric, _unit_ticks(axis, values, q, log=False, in_ticks=False))


def _wide(col: pd.Series) -> bool:
    """Whether positive values span two decades or more (20m ... 2w): drawn on a
    log axis, they would otherwise crowd at one end."""
    v = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
    v = v[np.isfinite(v)]
    return bool(v.size) and bool((v > 0).all()) and v.max() / v.min() >= 100


def _sweep_axis(axis: MplAxis, agg: pd.DataFrame, name: str, quantity: Quantity | None,
                log: bool) -> None:
    """Tick a numeric sweep axis: on a log axis with few values, at each value as
    the file wrote it; otherwise, with a unit, at round values of one unit; a
    count at whole numbers."""
    values = pd.to_numeric(agg[name], errors="coerce")
    if log and agg[name].nunique() <= _MAX_POINT_TICKS:
        first = agg.drop_duplicates(subset=[name])
        ticks = dict(zip(first[name], tick_labels(first, name, quantity), strict=True))
        keep = [(float(v), t) for v, t in ticks.items() if np.isfinite(float(v)) and v > 0]
        axis.set_ticks([v for v, _ in keep], [t for _, t in keep])
        axis.set_minor_formatter(NullFormatter())
    elif quantity is not None:
        _unit_ticks(axis, values, quantity, log=log, in_ticks=True)
    elif not log and np.all(np.mod(values.dropna().to_numpy(dtype=float), 1) == 0):
        axis.set_major_locator(MaxNLocator(integer=True))  # a count: no 1.5 connections


# --- figures ---------------------------------------------------------------------

def plot_burst_heatmap(agg: pd.DataFrame, x: str, y: str, path: str | os.PathLike[str],
                       value: str = "burst_probability", title: str = "",
                       units: Mapping[str, Quantity | None] | None = None) -> None:
    """Heatmap of ``value`` (default burst probability) over two axes, one cell per
    point, each cell annotated with its value; each axis's ticks as ``tick_labels``."""
    xs = list(dict.fromkeys(agg[x]))
    ys = list(dict.fromkeys(agg[y]))
    grid = np.full((len(ys), len(xs)), np.nan)
    for _, row in agg.iterrows():
        grid[ys.index(row[y]), xs.index(row[x])] = row[value]
    xl = dict(zip(agg[x], tick_labels(agg, x, _quantity(agg, x, units)), strict=True))
    yl = dict(zip(agg[y], tick_labels(agg, y, _quantity(agg, y, units)), strict=True))
    fig = Figure(figsize=(1.2 + 0.9 * len(xs), 1.2 + 0.6 * len(ys)), layout="constrained")
    ax = fig.add_subplot()
    prob = value == "burst_probability"
    im = ax.imshow(grid, origin="lower", aspect="auto", cmap="RdYlGn_r",
                   norm=Normalize(0, 1) if prob else None)
    metric = value.removesuffix("_mean")  # a metric's column, or the metric
    q = metric_quantity(metric)
    for (i, j), v in np.ndenumerate(grid):
        if np.isfinite(v):
            text = (f"{v:.2f}" if prob else format_quantity(v * q[1], q[0]) if q
                    else f"{v:.3g}")
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(xs)), [xl[v] for v in xs], rotation=45, ha="right")
    ax.set_yticks(range(len(ys)), [yl[v] for v in ys])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    bar = fig.colorbar(im, ax=ax)
    bar.set_label(_metric_axis(bar.ax.yaxis, metric, grid[np.isfinite(grid)]) if not prob
                  else "burst probability")
    ax.set_title(title or (f"{value} over {x} x {y}"))
    _save(fig, path)


def _series(metric: str) -> tuple[str, str, str]:
    """The mean, low and high columns of a metric."""
    if metric == "burst_probability":
        return metric, f"{metric}_low", f"{metric}_high"
    return f"{metric}_mean", f"{metric}_low", f"{metric}_high"


def _draw(ax: Any, data: pd.DataFrame, axis: str, metric: str, label: str,
          categories: list[Any] | None) -> None:
    """One line of ``metric`` (mean) against ``axis`` with its interval as a band;
    a categorical axis at the categories' positions."""
    mean, lo, hi = _series(metric)
    xs = (np.array([categories.index(v) for v in data[axis]]) if categories is not None
          else data[axis].to_numpy())
    ax.plot(xs, data[mean].to_numpy(dtype=float), marker="o", label=label)
    band = data[[lo, hi]].to_numpy(dtype=float)
    if np.isfinite(band).any():
        ax.fill_between(xs, band[:, 0], band[:, 1], alpha=0.2)


def _x_axis(ax: Any, agg: pd.DataFrame, axis: str, categories: list[Any] | None,
            quantity: Quantity | None, log_x: bool | None) -> None:
    """The sweep axis of a line figure: categories as written, or numbers on a
    linear or (``log_x``, or None and ``_wide``) log scale in the field's units."""
    if categories is not None:
        first = agg.drop_duplicates(subset=[axis])
        text = dict(zip(first[axis], tick_labels(first, axis, quantity), strict=True))
        ax.set_xticks(range(len(categories)), [text[c] for c in categories])
        return
    log = _wide(agg[axis]) if log_x is None else log_x
    if log:
        ax.set_xscale("log")
    _sweep_axis(ax.xaxis, agg, axis, quantity, log)


def plot_metric(agg: pd.DataFrame, axis: str, metric: str, path: str | os.PathLike[str],
                hue: str | None = None, log_x: bool | None = None, title: str = "",
                units: Mapping[str, Quantity | None] | None = None) -> None:
    """``metric`` against ``axis``: replication mean with its 95 % interval as a
    band (Wilson for ``burst_probability``); one line per value of ``hue``.

    ``log_x``: a log x axis; None (default) chooses one when the axis's positive
    values span two decades or more. ``units``: what each axis column measures
    (``Quantity``), for its ticks; the metric's unit is read from its name.
    """
    mean = _series(metric)[0]
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    groups: list[tuple[Any, pd.DataFrame]] = (list(agg.groupby(hue, sort=False)) if hue
                                               else [(None, agg)])
    categories = None if _numeric(agg[axis]) else list(dict.fromkeys(agg[axis]))
    hue_q = _quantity(agg, hue, units) if hue else None
    for _, g in groups:
        label = f"{hue} = {tick_labels(g, hue, hue_q)[0]}" if hue else metric
        _draw(ax, g, axis, metric, label, categories)
    _x_axis(ax, agg, axis, categories, _quantity(agg, axis, units), log_x)
    ax.set_xlabel(axis)
    if metric == "burst_probability":
        ax.set_ylabel("burst probability")
        ax.set_ylim(-0.02, 1.02)
    else:
        ax.set_ylabel(_metric_axis(ax.yaxis, metric, agg[mean]))
    if hue:
        ax.legend()
    ax.grid(alpha=0.3)
    interval = ("Wilson 95 % interval" if metric == "burst_probability"
                else "replication mean, 95 % t interval")
    ax.set_title(title or f"{metric} vs {axis} ({interval})")
    _save(fig, path)


def client_groups(agg: pd.DataFrame, metrics: Sequence[str] | None = None) -> list[str]:
    """The client groups whose ``<group>.<metric>_mean`` the table holds for any
    of ``metrics`` (default: every metric of ``GROUP_FIGURES``), in column order."""
    metrics = metrics or [m for ms in GROUP_FIGURES.values() for m in ms]
    suffixes = tuple(f".{m}_mean" for m in metrics)
    out: dict[str, None] = {}
    for c in agg.columns:
        for s in suffixes:
            if isinstance(c, str) and c.endswith(s) and len(c) > len(s):
                out[c[:-len(s)]] = None
    return list(out)


def plot_groups(agg: pd.DataFrame, axis: str, metrics: Sequence[str], groups: Sequence[str],
                path: str | os.PathLike[str], hue: str | None = None,
                log_x: bool | None = None, title: str = "",
                units: Mapping[str, Quantity | None] | None = None) -> None:
    """Each client group's ``metrics`` (``<group>.<metric>``) against ``axis``, one
    row of panels per metric: one line per group, each with its 95 % interval as
    a band; with ``hue``, one panel per group and one line per value of ``hue``."""
    cols = len(groups) if hue else 1
    fig = Figure(figsize=(1.5 + 4.0 * cols if hue else 7,
                          0.8 + (2.8 if len(metrics) < 3 else 2.2) * len(metrics)),
                 layout="constrained")
    axes = fig.subplots(len(metrics), cols, squeeze=False, sharex=True, sharey="row")
    categories = None if _numeric(agg[axis]) else list(dict.fromkeys(agg[axis]))
    x_q = _quantity(agg, axis, units)
    hue_q = _quantity(agg, hue, units) if hue else None
    for r, metric in enumerate(metrics):
        keys = [f"{g}.{metric}" for g in groups]
        for c in range(cols):
            ax = axes[r][c]
            if hue:
                for _, sub in agg.groupby(hue, sort=False):
                    if f"{keys[c]}_mean" in agg.columns:
                        _draw(ax, sub, axis, keys[c],
                              f"{hue} = {tick_labels(sub, hue, hue_q)[0]}", categories)
                ax.set_title(groups[c], fontsize="medium")
            else:
                for group, key in zip(groups, keys, strict=True):
                    if f"{key}_mean" in agg.columns:
                        _draw(ax, agg, axis, key, group, categories)
            ax.grid(alpha=0.3)
            if r == len(metrics) - 1:
                _x_axis(ax, agg, axis, categories, x_q, log_x)
                ax.set_xlabel(axis)
        values = [v for k in keys if f"{k}_mean" in agg.columns for v in agg[f"{k}_mean"]]
        axes[r][0].set_ylabel(_metric_axis(axes[r][0].yaxis, metric, values))
        if metric_quantity(metric) is None:  # a count: whole numbers, from 0
            axes[r][0].yaxis.set_major_locator(MaxNLocator(integer=True))
            if not np.nanmax(np.asarray(values, dtype=float), initial=0.0) > 0:
                axes[r][0].set_ylim(0, 1)
    axes[0][0].legend(fontsize="small")
    what = metric_label(metrics[0]) if len(metrics) == 1 else "errors"
    fig.suptitle(title or f"{what} per client group vs {axis} "
                 "(replication mean, 95 % t interval)")
    _save(fig, path)


def plot_frontier(table: pd.DataFrame, evaluations: pd.DataFrame, x: str, y: str,
                  threshold: float, path: str | os.PathLike[str], log_y: bool = False,
                  title: str = "", what: str = "burst probability",
                  units: Mapping[str, Quantity | None] | None = None) -> None:
    """Every evaluated (x, y) coloured by its probability, and the frontier: the
    bracket [y_ok, y_over] found for each x, with its midpoint joined. ``units``:
    what the x and y columns measure, for their ticks."""
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    sc = ax.scatter(evaluations[x], evaluations[y], c=evaluations["probability"],
                    cmap="RdYlGn_r", norm=Normalize(0, 1), s=28, edgecolors="k",
                    linewidths=0.3, zorder=3)
    fig.colorbar(sc, ax=ax, label=what)
    ok = table.dropna(subset=["y_frontier"])
    if len(ok):
        lo = np.minimum(ok["y_ok"], ok["y_over"])
        hi = np.maximum(ok["y_ok"], ok["y_over"])
        ax.errorbar(ok[x], ok["y_frontier"], yerr=[ok["y_frontier"] - lo,
                                                    hi - ok["y_frontier"]],
                    color="k", capsize=4, marker="_", label="frontier (bracket)", zorder=4)
        # Below the axes: inside, it would hide evaluated points.
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    if log_y:
        ax.set_yscale("log")
    if _numeric(evaluations[x]):
        _sweep_axis(ax.xaxis, evaluations, x, _quantity(evaluations, x, units), False)
    y_q = _quantity(evaluations, y, units)
    if y_q is not None:
        _unit_ticks(ax.yaxis, evaluations[y], y_q, log=log_y, in_ticks=True)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(alpha=0.3)
    ax.set_title(title or f"where P(burst) crosses {threshold:g} along {y}")
    _save(fig, path)
