"""Figures of a sweep: burst-probability heatmap, a metric with its CI band, the frontier.

Like ``redsim.plots``, figures are drawn on a ``matplotlib.figure.Figure`` with
the Agg canvas (no pyplot state). Inputs are the sweep's aggregate table
(``<metric>_mean``, ``_low``, ``_high``; ``burst_probability`` with its Wilson
interval) and the frontier's tables.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from redsim.plots import _save

__all__ = ["plot_burst_heatmap", "plot_frontier", "plot_metric"]


def _label(agg: pd.DataFrame, axis: str) -> pd.Series:
    """Tick labels as the sweep file wrote the values (``8h``), else the values."""
    col = f"{axis}_label"
    return agg[col] if col in agg.columns else agg[axis].map(_number)


def _number(v: Any) -> str:
    """A tick label: 1,209,600 rather than 1.2096e+06; 0.55 as is."""
    if isinstance(v, (float, np.floating)) and not isinstance(v, bool):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)


def plot_burst_heatmap(agg: pd.DataFrame, x: str, y: str, path: str | os.PathLike[str],
                       value: str = "burst_probability", title: str = "") -> None:
    """Heatmap of ``value`` (default burst probability) over two axes, one cell per
    point, each cell annotated with its value."""
    xs = list(dict.fromkeys(agg[x]))
    ys = list(dict.fromkeys(agg[y]))
    grid = np.full((len(ys), len(xs)), np.nan)
    for _, row in agg.iterrows():
        grid[ys.index(row[y]), xs.index(row[x])] = row[value]
    xl = dict(zip(agg[x], _label(agg, x), strict=True))
    yl = dict(zip(agg[y], _label(agg, y), strict=True))
    fig = Figure(figsize=(1.2 + 0.9 * len(xs), 1.2 + 0.6 * len(ys)), layout="constrained")
    ax = fig.add_subplot()
    prob = value == "burst_probability"
    im = ax.imshow(grid, origin="lower", aspect="auto", cmap="RdYlGn_r",
                   norm=Normalize(0, 1) if prob else None)
    for (i, j), v in np.ndenumerate(grid):
        if np.isfinite(v):
            ax.text(j, i, f"{v:.2f}" if prob else f"{v:.3g}", ha="center", va="center",
                    fontsize=8)
    ax.set_xticks(range(len(xs)), [xl[v] for v in xs], rotation=45, ha="right")
    ax.set_yticks(range(len(ys)), [yl[v] for v in ys])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    fig.colorbar(im, ax=ax, label="burst probability" if prob else value)
    ax.set_title(title or (f"{value} over {x} x {y}"))
    _save(fig, path)


def plot_metric(agg: pd.DataFrame, axis: str, metric: str, path: str | os.PathLike[str],
                hue: str | None = None, log_x: bool = False, title: str = "") -> None:
    """``metric`` against ``axis``: replication mean with its 95 % interval as a
    band (Wilson for ``burst_probability``); one line per value of ``hue``."""
    mean, lo, hi = ((metric, f"{metric}_low", f"{metric}_high") if metric == "burst_probability"
                    else (f"{metric}_mean", f"{metric}_low", f"{metric}_high"))
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    groups: list[tuple[Any, pd.DataFrame]] = (list(agg.groupby(hue, sort=False)) if hue
                                               else [(None, agg)])
    numeric = (pd.api.types.is_numeric_dtype(agg[axis])
               and not pd.api.types.is_bool_dtype(agg[axis]))
    for _, g in groups:
        xs = g[axis].to_numpy() if numeric else np.arange(len(g))
        label = f"{hue} = {_label(g, hue).iloc[0]}" if hue else metric
        ax.plot(xs, g[mean], marker="o", label=label)
        band = g[[lo, hi]].to_numpy(dtype=float)
        if np.isfinite(band).any():
            ax.fill_between(xs, band[:, 0], band[:, 1], alpha=0.2)
    if not numeric:
        ax.set_xticks(range(len(groups[0][1])), list(_label(groups[0][1], axis)))
    if log_x and numeric:
        ax.set_xscale("log")
    ax.set_xlabel(axis)
    ax.set_ylabel(metric)
    if metric == "burst_probability":
        ax.set_ylim(-0.02, 1.02)
    if hue:
        ax.legend()
    ax.grid(alpha=0.3)
    interval = ("Wilson 95 % interval" if metric == "burst_probability"
                else "replication mean, 95 % t interval")
    ax.set_title(title or f"{metric} vs {axis} ({interval})")
    _save(fig, path)


def plot_frontier(table: pd.DataFrame, evaluations: pd.DataFrame, x: str, y: str,
                  threshold: float, path: str | os.PathLike[str], log_y: bool = False,
                  title: str = "", what: str = "burst probability") -> None:
    """Every evaluated (x, y) coloured by its probability, and the frontier: the
    bracket [y_ok, y_over] found for each x, with its midpoint joined."""
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
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(alpha=0.3)
    ax.set_title(title or f"where P(burst) crosses {threshold:g} along {y}")
    _save(fig, path)
