"""Presentation only: PNG figures of a run's time series and latency histogram.

Figures are built with ``matplotlib.figure.Figure`` and rendered by the Agg canvas
directly, never through ``pyplot``: no global figure registry is touched, nothing
needs closing, and the caller's backend (e.g. an interactive notebook backend) is
left alone — that is the "Agg without global state" guarantee, without calling
``matplotlib.use``, which would switch the backend process-wide.

Input conventions (from the engine's time-series sampler):
- time series: a pandas DataFrame indexed by window end time in seconds (index
  named ``time``); latencies in seconds; rates in 1/s; CPU shares as fractions of
  the main thread's time (0..1); memory in bytes.
- histograms: bin edges in seconds, counts per bin.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["CPU_ORDER", "plot_cycles", "plot_endpoint_times", "plot_fork_spike",
           "plot_latency_histogram", "plot_overview"]

CPU_ORDER: tuple[str, ...] = (
    "cpu_commands",
    "cpu_read",
    "cpu_write",
    "cpu_iteration",
    "cpu_cron",
    "cpu_connections",
    "cpu_eviction",
    "cpu_expire",
    "cpu_aof",
    "cpu_fsync",
    "cpu_fork",
    "cpu_cow",
    "cpu_idle",
)
"""Stacking order of the main-thread CPU-share columns; other ``cpu_*`` columns follow."""

_PANEL_HEIGHT_IN = 2.2  # inches per stacked panel
_FIG_WIDTH_IN = 11.0
_DPI = 110
_MIB = float(2**20)  # Redis' "mb" (maxmemory 100mb) is 2^20 bytes


def _time_axis(ts: pd.DataFrame) -> np.ndarray:
    """The x values in seconds: the index, or a ``time`` column if the index is not time."""
    if ts.index.name != "time" and "time" in ts.columns:
        return ts["time"].to_numpy(dtype=float)
    return np.asarray(ts.index, dtype=float)


def _col(ts: pd.DataFrame, name: str) -> np.ndarray:
    """Column ``name`` as a float array (non-numeric values become NaN)."""
    return pd.to_numeric(ts[name], errors="coerce").to_numpy(dtype=float)


def _no_data(ax: Axes, what: str) -> None:
    """Mark a panel whose columns are all absent, keeping the panel layout stable."""
    ax.text(
        0.5,
        0.5,
        f"no {what} columns",
        transform=ax.transAxes,
        ha="center",
        va="center",
        color="0.5",
    )


def _lines(
    ax: Axes, ts: pd.DataFrame, x: np.ndarray, cols: Sequence[tuple[str, str]], scale: float = 1.0
) -> int:
    """Plot each present column (name, label) times ``scale``; return how many were drawn."""
    drawn = 0
    for name, label in cols:
        if name in ts.columns:
            ax.plot(x, _col(ts, name) * scale, label=label, linewidth=1.0)
            drawn += 1
    return drawn


def _panel_throughput(ax: Axes, ts: pd.DataFrame, x: np.ndarray) -> None:
    cols = [("instantaneous_ops_per_sec", "served (ops/s)"), ("offered_per_sec", "offered (req/s)")]
    if _lines(ax, ts, x, cols):
        ax.legend(loc="upper right", fontsize="small")
        ax.set_ylim(bottom=0)
    else:
        _no_data(ax, "throughput")
    ax.set_ylabel("requests/s")


def _panel_latency(ax: Axes, ts: pd.DataFrame, x: np.ndarray) -> None:
    drawn = 0
    for name, label in (("latency_p50", "p50"), ("latency_p99", "p99"), ("latency_max", "max")):
        if name in ts.columns:
            y = _col(ts, name) * 1e3  # s -> ms
            # Log axis: empty windows (0 or NaN) are gaps, not -inf.
            y[~(y > 0)] = np.nan
            ax.plot(x, y, label=label, linewidth=1.0)
            drawn += 1
    if drawn:
        ax.set_yscale("log")
        ax.legend(loc="upper right", fontsize="small")
    else:
        _no_data(ax, "latency")
    ax.set_ylabel("latency (ms)")


def _panel_cpu(ax: Axes, ts: pd.DataFrame, x: np.ndarray) -> None:
    known = [c for c in CPU_ORDER if c in ts.columns]
    extra = sorted(
        c for c in ts.columns if isinstance(c, str) and c.startswith("cpu_") and c not in CPU_ORDER
    )
    cols = known + extra
    if cols:
        # Stackplot cannot carry NaN through the cumulative sum; an empty window adds nothing.
        ys = [np.nan_to_num(_col(ts, c), nan=0.0) for c in cols]
        labels = [c.removeprefix("cpu_") for c in cols]
        ax.stackplot(x, ys, labels=labels, linewidth=0)
        ax.legend(loc="upper right", fontsize="x-small", ncol=min(len(cols), 4))
    else:
        _no_data(ax, "cpu_*")
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("main-thread share")


def _panel_connections(ax: Axes, ts: pd.DataFrame, x: np.ndarray) -> None:
    left = [("connected_clients", "connected"), ("busy_connections", "busy")]
    ax.set_ylabel("connections")
    drawn = _lines(ax, ts, x, left)
    handles, labels = ax.get_legend_handles_labels()
    legend_ax = ax
    if "queue_length" in ts.columns:
        # The queue is usually orders of magnitude below the connection count; a
        # second y axis keeps it readable.
        qax = legend_ax = ax.twinx() if drawn else ax
        (h,) = qax.plot(
            x, _col(ts, "queue_length"), color="tab:red", linewidth=1.0, label="queue length"
        )
        qax.set_ylabel("queue length")
        qax.set_ylim(bottom=0)
        handles.append(h)
        labels.append("queue length")
        drawn += 1
    if drawn:
        # On the twin axis when there is one: it is drawn on top and would cover the legend.
        legend_ax.legend(handles, labels, loc="upper left", fontsize="small")
        ax.set_ylim(bottom=0)
    else:
        _no_data(ax, "connection/queue")


def _panel_memory(ax: Axes, ts: pd.DataFrame, x: np.ndarray) -> None:
    ax.plot(x, _col(ts, "used_memory") / _MIB, label="used_memory", linewidth=1.0)
    ax.plot(x, _col(ts, "maxmemory") / _MIB, "k--", label="maxmemory", linewidth=1.0)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("memory (MB, 2^20 B)")
    ax.legend(loc="upper left", fontsize="small")


def _save(fig: Figure, path: str | os.PathLike[str]) -> None:
    """Render with the Agg canvas (no pyplot) and write a PNG."""
    FigureCanvasAgg(fig)
    fig.savefig(os.fspath(path), format="png", dpi=_DPI)


def plot_overview(ts: pd.DataFrame, path: str | os.PathLike[str], title: str = "") -> None:
    """Write a PNG overview of a run: stacked panels sharing the time axis (seconds).

    Panels: (a) served vs offered throughput, (b) per-window latency p50/p99/max in
    ms on a log axis, (c) stacked main-thread CPU shares (0..1), (d) connections
    and queue length, and (e) memory (MB) with a dashed maxmemory line when both
    ``used_memory`` and ``maxmemory`` columns are present. Absent columns are
    skipped; a panel with none of its columns says so rather than disappearing.

    Args:
        ts: time series, index = window time in seconds (named ``time``).
        path: output PNG file.
        title: figure title.
    """
    x = _time_axis(ts)
    has_memory = "used_memory" in ts.columns and "maxmemory" in ts.columns
    n_panels = 5 if has_memory else 4
    fig = Figure(figsize=(_FIG_WIDTH_IN, _PANEL_HEIGHT_IN * n_panels + 0.6), layout="constrained")
    axes = fig.subplots(n_panels, 1, sharex=True, squeeze=False)[:, 0]
    _panel_throughput(axes[0], ts, x)
    _panel_latency(axes[1], ts, x)
    _panel_cpu(axes[2], ts, x)
    _panel_connections(axes[3], ts, x)
    if has_memory:
        _panel_memory(axes[4], ts, x)
    _finish(fig, axes, x, title, path)


def _finish(fig: Figure, axes: Sequence[Axes], x: np.ndarray, title: str,
            path: str | os.PathLike[str], cycles: pd.DataFrame | None = None) -> None:
    """Letter and grid the stacked panels, share the time axis, title and save."""
    for ax, letter in zip(axes, "abcdefgh", strict=False):
        _shade_phases(ax, cycles)
        ax.grid(True, alpha=0.3)
        ax.set_title(f"({letter})", loc="left", fontsize="small")
    if len(x):
        axes[-1].set_xlim(float(np.nanmin(x)), float(np.nanmax(x)))
    axes[-1].set_xlabel("time (s)")
    if title:
        fig.suptitle(title)
    _save(fig, path)


def _shade_phases(ax: Axes, cycles: pd.DataFrame | None) -> None:
    """Phase 2 in red, Phase 3 in amber, from a ``redsim.analysis.phases`` table."""
    if cycles is None or cycles.empty:
        return
    for row in cycles.itertuples():
        ax.axvspan(row.phase2_start, row.phase2_end, color="tab:red", alpha=0.15, lw=0)
        if np.isfinite(row.phase3_end):
            ax.axvspan(row.phase2_end, row.phase3_end, color="tab:orange", alpha=0.12, lw=0)


def plot_cycles(
    ts: pd.DataFrame,
    path: str | os.PathLike[str],
    cycles: pd.DataFrame | None = None,
    title: str = "",
) -> None:
    """Write a PNG of the eviction cycle as the GitLab seed (S0) graphs it.

    Panels, sharing the time axis (s): (a) ``used_memory`` near the limit with the
    dashed ``maxmemory`` line (MB); (b) evicted keys/s; (c) requests/s served and
    offered; (d) client-buffer memory: INFO's ``mem_clients_normal`` and the true
    value (MB); (e) the main thread's time split: commands (with their reads and
    writes), ``performEvictions``, everything else, idle. Phase 2 windows of
    ``cycles`` (a ``redsim.analysis.phases`` table) are shaded red, Phase 3 amber.
    """
    x = _time_axis(ts)
    fig = Figure(figsize=(_FIG_WIDTH_IN, _PANEL_HEIGHT_IN * 5 + 0.6), layout="constrained")
    axes = fig.subplots(5, 1, sharex=True, squeeze=False)[:, 0]

    ax = axes[0]
    used = _col(ts, "used_memory") / _MIB
    limit = _col(ts, "maxmemory") / _MIB
    ax.plot(x, used, label="used_memory", linewidth=1.0)
    ax.plot(x, limit, "k--", label="maxmemory", linewidth=1.0)
    # The story is in the last few hundred MB below the limit, not in the dataset.
    top = float(np.nanmax(limit)) if len(limit) else 1.0
    low = float(np.nanmin(used[x >= x[0] + 60])) if len(used) > 60 else float(np.nanmin(used))
    low = min(low, top)
    ax.set_ylim(max(0.0, low - 0.15 * (top - low) - 1), top * 1.01)
    ax.set_ylabel("memory (MB)")
    ax.legend(loc="lower left", fontsize="small")

    ax = axes[1]
    ax.plot(x, _col(ts, "evicted_per_sec"), color="tab:red", linewidth=1.0)
    ax.set_ylabel("evicted keys/s")
    ax.set_ylim(bottom=0)

    _panel_throughput(axes[2], ts, x)

    ax = axes[3]
    _lines(ax, ts, x, [("mem_clients_normal", "mem_clients_normal (INFO)"),
                       ("mem_clients_true", "true client memory")], scale=1 / _MIB)
    ax.set_ylabel("client buffers (MB)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize="small")

    ax = axes[4]
    def share(cols: Sequence[str]) -> np.ndarray:
        return np.sum([np.nan_to_num(_col(ts, c)) for c in cols if c in ts.columns], axis=0)
    requests = share(("cpu_commands", "cpu_read", "cpu_write"))
    eviction = share(("cpu_eviction",))
    idle = share(("cpu_idle",))
    other = np.clip(1.0 - requests - eviction - idle, 0.0, 1.0)
    ax.stackplot(x, [requests, eviction, other, idle],
                 labels=["commands + I/O", "performEvictions", "other", "idle"],
                 colors=["tab:blue", "tab:red", "tab:gray", "0.9"], linewidth=0)
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("main-thread share")
    ax.legend(loc="upper right", fontsize="x-small", ncol=4)
    _finish(fig, axes, x, title, path, cycles)


def plot_latency_histogram(
    edges: np.ndarray,
    counts: np.ndarray,
    path: str | os.PathLike[str],
    title: str = "",
) -> None:
    """Write a PNG of a latency histogram on a log x axis, with p50/p99 markers.

    The x unit is µs when every non-empty bin ends below 1 ms, else ms.

    Args:
        edges: bin edges in seconds, increasing, length len(counts) + 1. A first
            edge <= 0 (a bin starting at zero) is drawn from half the second edge,
            since a log axis cannot show 0.
        counts: requests per bin (non-negative).
        path: output PNG file.
        title: figure title.

    Raises:
        ValueError: on mismatched lengths, non-increasing edges or negative counts.
    """
    e = np.asarray(edges, dtype=float).ravel()
    c = np.asarray(counts, dtype=float).ravel()
    if e.size != c.size + 1 or c.size == 0:
        raise ValueError(f"need len(edges) == len(counts) + 1 >= 2, got {e.size} and {c.size}")
    if not np.all(np.diff(e) > 0):
        raise ValueError("histogram edges must be strictly increasing")
    if np.any(c < 0) or not np.all(np.isfinite(c)):
        raise ValueError("histogram counts must be finite and non-negative")
    if e[0] <= 0.0:
        e = e.copy()
        e[0] = e[1] / 2.0
    total = float(c.sum())
    nonzero = np.nonzero(c)[0]
    top = e[nonzero[-1] + 1] if nonzero.size else e[-1]
    scale, unit = (1e6, "µs") if top < 1e-3 else (1e3, "ms")

    fig = Figure(figsize=(8.0, 4.5), layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    ax.stairs(c, e * scale, fill=True, alpha=0.6)
    ax.set_xscale("log")
    if total > 0:
        # Percentiles read off the histogram: upper edge of the bin where the CDF crosses q,
        # the conservative (Redis LATENCY HISTOGRAM-style) reading.
        cdf = np.cumsum(c) / total
        for q, style in ((0.5, ":"), (0.99, "--")):
            i = int(np.searchsorted(cdf, q))
            v = e[min(i + 1, e.size - 1)] * scale
            ax.axvline(
                v, color="k", linestyle=style, linewidth=1.0, label=f"p{q * 100:g} ≤ {v:.3g} {unit}"
            )
        ax.legend(loc="upper right", fontsize="small")
    ax.set_xlabel(f"latency ({unit})")
    ax.set_ylabel("requests per bin")
    ax.grid(True, which="both", alpha=0.3)
    if title:
        ax.set_title(title)
    _save(fig, path)


def plot_endpoint_times(times: dict[str, Sequence[float]], path: str | os.PathLike[str],
                        published: dict[str, float] | None = None, title: str = "") -> None:
    """Bars of an endpoint's time per configuration (seed S2's figure).

    Args:
        times: label → the durations (s) of the endpoint calls the run made; the
            bar is their mean, the whisker their range.
        path: output PNG file.
        published: label → the published time (s), drawn as a marker.
        title: figure title.
    """
    fig = Figure(figsize=(7.5, 4.2), layout="constrained")
    ax = fig.subplots()
    labels = list(times)
    means = [float(np.mean(times[k])) for k in labels]
    lo = [m - float(np.min(times[k])) for k, m in zip(labels, means, strict=True)]
    hi = [float(np.max(times[k])) - m for k, m in zip(labels, means, strict=True)]
    x = np.arange(len(labels))
    ax.bar(x, means, yerr=[lo, hi], color="tab:blue", alpha=0.75, label="model (mean, range)")
    for xi, m in zip(x, means, strict=True):
        ax.annotate(f"{m:.2f} s", (xi, m), textcoords="offset points", xytext=(0, 4),
                    ha="center", fontsize="small")
    if published:
        px = [i for i, k in enumerate(labels) if k in published]
        ax.scatter(px, [published[labels[i]] for i in px], marker="D", color="tab:red",
                   zorder=3, label="published (seed)")
    ax.set_xticks(x, labels)
    ax.set_yscale("log")
    ax.set_ylabel("time per endpoint call (s)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    if title:
        ax.set_title(title)
    _save(fig, path)


def plot_fork_spike(runs: dict[str, pd.DataFrame], path: str | os.PathLike[str],
                    t_fork: float, window: tuple[float, float] = (-1.0, 2.0),
                    title: str = "") -> None:
    """Latency and the main thread's copy-on-write share around a fork (seed S1).

    Args:
        runs: label → time series of a run (sampled finely, e.g. 100 ms).
        path: output PNG file.
        t_fork: when the BGSAVE was issued, s; the x axis is time since it.
        window: the span shown, s relative to ``t_fork``.
        title: figure title.
    """
    fig = Figure(figsize=(_FIG_WIDTH_IN, 2 * _PANEL_HEIGHT_IN + 0.8), layout="constrained")
    ax_lat, ax_cpu = fig.subplots(2, 1, sharex=True)
    for (label, ts), color in zip(runs.items(), ("tab:red", "tab:blue", "tab:green"),
                                  strict=False):
        x = _time_axis(ts) - t_fork
        keep = (x >= window[0]) & (x <= window[1])
        ax_lat.step(x[keep], _col(ts, "latency_max")[keep] * 1e3, where="pre", color=color,
                    label=f"{label}: max")
        ax_lat.step(x[keep], _col(ts, "latency_p50")[keep] * 1e3, where="pre", color=color,
                    alpha=0.5, linestyle="--", label=f"{label}: p50")
        ax_cpu.step(x[keep], _col(ts, "cpu_cow")[keep], where="pre", color=color,
                    label=f"{label}: copy-on-write")
        ax_cpu.step(x[keep], _col(ts, "cpu_fork")[keep], where="pre", color=color,
                    alpha=0.5, linestyle=":", label=f"{label}: fork()")
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("request latency (ms)")
    ax_cpu.set_ylabel("main-thread share")
    ax_cpu.set_xlabel("time since BGSAVE (s)")
    for ax, letter in ((ax_lat, "a"), (ax_cpu, "b")):
        ax.axvline(0.0, color="grey", linewidth=0.8)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize="small")
        ax.set_title(f"({letter})", loc="left", fontsize="small")
    if title:
        fig.suptitle(title)
    _save(fig, path)
