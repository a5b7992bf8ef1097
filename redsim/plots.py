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
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

__all__ = ["CPU_COLOURS", "CPU_ORDER", "cycles_figure", "overview_figure", "plot_cycles",
           "plot_endpoint_times", "plot_fork_spike", "plot_latency_histogram", "plot_overview"]

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
"""Stacking order of the main-thread CPU-share columns, bottom up; other ``cpu_*``
columns go between the known activities and ``cpu_idle``, which stays on top."""

CPU_COLOURS: dict[str, str] = {
    # One colour per activity, fixed by name so that an activity has the same
    # colour in every run whichever others are present. Request work in blues,
    # event-loop overhead in purple/olive/brown, eviction in the red the cycle
    # figure uses, persistence in greens and pinks, idle a near-white grey (the
    # background the work stands on).
    "cpu_commands": "#1f77b4",
    "cpu_read": "#9ecae1",
    "cpu_write": "#17becf",
    "cpu_iteration": "#9467bd",
    "cpu_cron": "#bcbd22",
    "cpu_connections": "#8c564b",
    "cpu_eviction": "#d62728",
    "cpu_expire": "#ff7f0e",
    "cpu_aof": "#2ca02c",
    "cpu_fsync": "#98df8a",
    "cpu_fork": "#e377c2",
    "cpu_cow": "#7b4173",
    "cpu_idle": "#e6e6e6",
}
"""Colour of each known CPU-share column in the overview's main-thread panel."""

_CPU_EXTRA_COLOURS: tuple[str, ...] = ("#7f7f7f", "#393b79", "#637939", "#e7ba52")
"""Colours for ``cpu_*`` columns not in ``CPU_ORDER``, in sorted-name order (they
repeat past four such columns, which no recorder writes today)."""

_PANEL_HEIGHT_IN = 2.2  # inches per stacked panel
_FIG_WIDTH_IN = 12.0  # the time axis keeps ~10 in; the legends take the right margin
_DPI = 110
_MIB = float(2**20)  # Redis' "mb" (maxmemory 100mb) is 2^20 bytes
_GIB = float(2**30)
_PHASE2_COLOUR, _PHASE2_ALPHA = "tab:red", 0.25
_PHASE3_COLOUR, _PHASE3_ALPHA = "tab:orange", 0.15
_SERVED, _OFFERED = "tab:blue", "0.3"  # offered: dark grey, dashed, over served


def _time_axis(ts: pd.DataFrame) -> np.ndarray:
    """The x values in seconds: the index, or a ``time`` column if the index is not time."""
    if ts.index.name != "time" and "time" in ts.columns:
        return ts["time"].to_numpy(dtype=float)
    return np.asarray(ts.index, dtype=float)


def _col(ts: pd.DataFrame, name: str) -> np.ndarray:
    """Column ``name`` as a float array (non-numeric values become NaN; all NaN if absent)."""
    if name not in ts.columns:
        return np.full(len(ts), np.nan)
    return pd.to_numeric(ts[name], errors="coerce").to_numpy(dtype=float)


def _finite(*arrays: np.ndarray) -> np.ndarray:
    """The finite values of all ``arrays``, flattened (possibly empty)."""
    if not arrays:
        return np.empty(0)
    v = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays])
    return v[np.isfinite(v)]


def _marker(x: np.ndarray) -> dict:
    """Line keywords that keep a run of one or two samples visible (a line needs two
    points to show; a single window would otherwise draw nothing)."""
    # Unclipped: a point at the axis' end (the last window) shows whole.
    # (An empty line is left alone: unclipped, it would upset the layout's bounds.)
    return {"marker": "o", "markersize": 3, "clip_on": False} if 1 <= len(x) <= 2 else {}


def _legend(ax: Axes, *args, **kwargs) -> None:
    """A legend outside the panel, to the right of its top: it never covers data.

    Constrained layout keeps the same right margin for every stacked panel, so the
    shared time axis stays aligned."""
    kwargs.setdefault("fontsize", "small")
    ax.legend(*args, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
              frameon=False, **kwargs)


def _no_data(ax: Axes, what: str) -> None:
    """Mark a panel with nothing to draw, keeping the panel layout stable."""
    ax.text(
        0.5,
        0.5,
        f"no {what}",
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
            ax.plot(x, _col(ts, name) * scale, label=label, linewidth=1.0, **_marker(x))
            drawn += 1
    return drawn


def _panel_throughput(ax: Axes, ts: pd.DataFrame, x: np.ndarray) -> None:
    ax.set_label("throughput")
    drawn = 0
    if "instantaneous_ops_per_sec" in ts.columns:
        ax.plot(x, _col(ts, "instantaneous_ops_per_sec"), color=_SERVED, linewidth=1.0,
                label="served (ops/s)", zorder=2, **_marker(x))
        drawn += 1
    # Offered dashed grey over served: where Redis keeps up the two coincide and
    # both stay visible; where it falls behind, the gap is the backlog growing.
    if "offered_per_sec" in ts.columns:
        ax.plot(x, _col(ts, "offered_per_sec"), color=_OFFERED, linewidth=1.0,
                linestyle=(0, (3, 2)), label="offered (req/s)", zorder=3, **_marker(x))
        drawn += 1
    if drawn:
        _legend(ax)
        ax.set_ylim(bottom=0)
    else:
        _no_data(ax, "throughput columns")
    ax.set_ylabel("requests/s")


def _plain(v: float, _pos: object = None) -> str:
    """A tick label as a plain number: 0.2, 1, 10, 10000."""
    return f"{v:g}" if v < 1e5 else f"{v:.0e}"


def _plain_2_5(v: float, _pos: object = None) -> str:
    """A minor log tick label: the 2s and 5s of each decade, plainly; the rest blank."""
    if v <= 0:
        return ""
    coeff = round(v / 10 ** np.floor(np.log10(v)))
    return _plain(v) if coeff in (2, 5) else ""


def _blank(_v: float, _pos: object = None) -> str:
    return ""


_MAX_GROUP_LINES = 8
"""Client groups whose own p99 the overview's latency panel draws, at most."""
_GROUP_COLOURS = ("tab:blue", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan",
                  "tab:gray", "black")


def _panel_latency(ax: Axes, ts: pd.DataFrame, x: np.ndarray) -> None:
    ax.set_label("latency")
    drawn, positive = 0, False
    for name, label, colour in (("latency_p50", "p50", "tab:green"),
                                ("latency_p99", "p99", "tab:orange"),
                                ("latency_max", "max", "tab:red")):
        if name in ts.columns:
            y = _col(ts, name) * 1e3  # s -> ms
            # Log axis: empty windows (0 or NaN) are gaps, not -inf.
            y[~(y > 0)] = np.nan
            positive |= bool(np.isfinite(y).any())
            ax.plot(x, y, label=label, color=colour, linewidth=1.0, **_marker(x))
            drawn += 1
    # Each client group's own p99 (a run with more than one group), dashed.
    groups = [c.removesuffix(".latency_p99") for c in ts.columns if c.endswith(".latency_p99")]
    for i, group in enumerate(groups[:_MAX_GROUP_LINES]):
        y = _col(ts, f"{group}.latency_p99") * 1e3
        y[~(y > 0)] = np.nan
        positive |= bool(np.isfinite(y).any())
        ax.plot(x, y, label=f"{group} p99", color=_GROUP_COLOURS[i % len(_GROUP_COLOURS)],
                linewidth=1.0, linestyle=(0, (4, 2)), **_marker(x))
        drawn += 1
    if positive:
        ax.set_yscale("log")
        # Plain numbers (0.2, 1, 10), not 10^-1 notation; over two decades or less
        # the 2s and 5s are labelled too, so a sub-millisecond run shows its values.
        ax.yaxis.set_major_formatter(FuncFormatter(_plain))
        lo, hi = ax.get_ylim()  # as autoscaled to the data
        few_decades = np.log10(hi / lo) <= 2.0
        ax.yaxis.set_minor_formatter(FuncFormatter(_plain_2_5 if few_decades else _blank))
    if drawn:
        _legend(ax)
    if not positive:
        _no_data(ax, "latency samples" if drawn else "latency columns")
    ax.set_ylabel("latency (ms)")


def _cpu_columns(ts: pd.DataFrame) -> list[str]:
    """The ``cpu_*`` columns to stack: known ones in ``CPU_ORDER``, then the rest
    sorted, then idle: idle stays the top band, the room the work left."""
    known = [c for c in CPU_ORDER if c in ts.columns and c != "cpu_idle"]
    extra = sorted(
        c for c in ts.columns if isinstance(c, str) and c.startswith("cpu_") and c not in CPU_ORDER
    )
    return known + extra + (["cpu_idle"] if "cpu_idle" in ts.columns else [])


def _cpu_colour(name: str, extra_index: int) -> str:
    return CPU_COLOURS.get(name) or _CPU_EXTRA_COLOURS[extra_index % len(_CPU_EXTRA_COLOURS)]


def _stack_span(x: np.ndarray, ys: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """x and bands for a stackplot. A single window, ending at x[0] > 0, is drawn
    over (0, x[0]], the span it measured (a run's first window starts at 0):
    an area needs two points, and one would draw nothing."""
    if len(x) == 1 and x[0] > 0:
        return np.array([0.0, x[0]]), [np.repeat(y, 2) for y in ys]
    return x, ys


def _panel_cpu(ax: Axes, ts: pd.DataFrame, x: np.ndarray) -> None:
    ax.set_label("cpu")
    cols = _cpu_columns(ts)
    extras = [c for c in cols if c not in CPU_COLOURS]
    # Stackplot cannot carry NaN through the cumulative sum; an empty window adds nothing.
    ys = {c: np.nan_to_num(_col(ts, c), nan=0.0) for c in cols}
    # An activity that took no time in any window adds nothing to the stack; left
    # out, the legend lists only what the thread did (a colour stays its activity's).
    drawn = [c for c in cols if np.any(ys[c] != 0.0)]
    if drawn and len(x):
        colours = [_cpu_colour(c, extras.index(c) if c in extras else 0) for c in drawn]
        xs, bands = _stack_span(x, [ys[c] for c in drawn])
        ax.stackplot(xs, bands, labels=[c.removeprefix("cpu_") for c in drawn],
                     colors=colours, linewidth=0)
        handles, labels = ax.get_legend_handles_labels()
        # Top of the stack first, as the bands appear from top to bottom.
        _legend(ax, handles[::-1], labels[::-1], fontsize="x-small",
                ncol=1 if len(drawn) <= 7 else 2)
    else:
        _no_data(ax, "cpu_* samples" if cols else "cpu_* columns")
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("main-thread share")


def _spread_log(ax: Axes, arrays: Sequence[np.ndarray]) -> None:
    """A symmetric-log y axis when the lines live in different decades.

    Connected clients (thousands), busy connections and the queue at Redis (a
    handful, then thousands in a burst) share one count axis; on a linear axis
    the small ones lie flat on zero. Symlog (linear below 1) keeps 0 and shows
    every decade; a panel whose lines are all of one size stays linear.
    """
    values = _finite(*arrays)
    if not values.size:
        return
    top = float(values.max())
    medians = [float(np.nanmedian(a)) for a in arrays if np.isfinite(a).any()]
    if top >= 100.0 and min(medians) < top / 30.0:
        ax.set_yscale("symlog", linthresh=1.0, linscale=0.5)
        ax.yaxis.set_major_formatter(FuncFormatter(_plain))  # 0, 1, 10, ..., 10000


def _panel_connections(ax: Axes, ts: pd.DataFrame, x: np.ndarray) -> None:
    ax.set_label("connections")
    ax.set_ylabel("connections / requests")
    arrays = []
    # Same unit (a count) on one axis. The busy-connection line is drawn last,
    # dashed black and thicker: in a burst it coincides with the queue at Redis
    # (every busy connection waits there), and under the queue line it vanished.
    for name, label, style in (
        ("connected_clients", "connected", dict(color="tab:blue", linewidth=1.0, zorder=2)),
        ("queue_length", "queue at Redis", dict(color="tab:red", linewidth=1.2, zorder=3)),
        ("busy_connections", "busy (request outstanding)",
         dict(color="black", linewidth=1.8, linestyle=(0, (4, 2)), zorder=4)),
    ):
        if name in ts.columns:
            y = _col(ts, name)
            ax.plot(x, y, label=label, **style, **_marker(x))
            arrays.append(y)
    if arrays:
        _spread_log(ax, arrays)
        ax.set_ylim(bottom=0)
        _legend(ax)
    else:
        _no_data(ax, "connection/queue columns")


def _memory_unit(values: np.ndarray) -> tuple[float, str]:
    """Bytes per unit and the axis label: GB (2^30 B) from 10 GB up, else MB (2^20 B)."""
    if values.size and float(np.max(np.abs(values))) >= 10 * _GIB:
        return _GIB, "memory (GB, 2^30 B)"
    return _MIB, "memory (MB, 2^20 B)"


def _memory_ylim(x: np.ndarray, used: np.ndarray, limit: np.ndarray,
                 skip_s: float = 0.0) -> tuple[float, float] | None:
    """y limits (in the units of ``used``) for a memory panel: the range the data
    moves in, plus the ``maxmemory`` line when one is set (``limit`` > 0), with an
    8 % margin each side; at 0 only when the data comes within a margin of it.

    ``skip_s``: the first seconds left out of the range (the climb from the
    preload to the limit would otherwise set the scale), unless nothing is left
    after them. None when there is no finite value at all.
    """
    keep = x >= (x[0] + skip_s) if len(x) else np.zeros(0, dtype=bool)
    data = _finite(used[keep]) if skip_s > 0 else np.empty(0)
    if not data.size:  # a run shorter than skip_s, or all NaN after it
        data = _finite(used)
    lim = _finite(limit)
    values = np.concatenate([data, lim[lim > 0]])
    if not values.size:
        return None
    lo, hi = float(values.min()), float(values.max())
    span = hi - lo
    if span <= 0.0:  # a flat line: a band of ±1 % around it
        span = max(abs(hi) * 0.02, 1.0)
    margin = 0.08 * span
    bottom = lo - margin
    if lo >= 0.0 and bottom < 0.0:
        bottom = 0.0
    return bottom, hi + margin


def _memory_lines(ax: Axes, ts: pd.DataFrame, x: np.ndarray, skip_s: float = 0.0) -> None:
    """``used_memory`` and, when set, the dashed ``maxmemory`` line, zoomed to the data."""
    used_b, limit_b = _col(ts, "used_memory"), _col(ts, "maxmemory")
    scale, label = _memory_unit(_finite(used_b, limit_b))
    used, limit = used_b / scale, limit_b / scale
    ax.plot(x, used, color="tab:blue", label="used_memory", linewidth=1.0, **_marker(x))
    if np.any(limit > 0):  # maxmemory 0 means no limit: no line at 0
        ax.plot(x, np.where(limit > 0, limit, np.nan), "k--", label="maxmemory", linewidth=1.2,
                **_marker(x))
    ylim = _memory_ylim(x, used, limit, skip_s)
    if ylim is not None:
        ax.set_ylim(*ylim)
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")
    else:
        _no_data(ax, "memory samples")
    ax.set_ylabel(label)
    _legend(ax)


def _panel_memory(ax: Axes, ts: pd.DataFrame, x: np.ndarray) -> None:
    ax.set_label("memory")
    _memory_lines(ax, ts, x)


def _save(fig: Figure, path: str | os.PathLike[str]) -> None:
    """Render with the Agg canvas (no pyplot) and write a PNG."""
    FigureCanvasAgg(fig)
    fig.savefig(os.fspath(path), format="png", dpi=_DPI)


def overview_figure(ts: pd.DataFrame, title: str = "") -> Figure:
    """The overview of a run as a Figure: stacked panels sharing the time axis (s).

    Panels, each ``Axes`` labelled (``ax.get_label()``) for tests and notebooks:
    (a) ``throughput``: served vs offered requests/s; (b) ``latency``: per-window
    p50/p99/max in ms on a log axis; (c) ``cpu``: stacked main-thread shares
    (0..1), one fixed colour per activity (``CPU_COLOURS``), activities that took
    no time left out; (d) ``connections``: connected clients, busy connections
    and the queue at Redis on one count axis (symmetric-log when they are decades
    apart); (e) ``memory`` (MB, or GB from 10 GB up), present when both
    ``used_memory`` and ``maxmemory`` columns are: zoomed to the range the data
    and the dashed maxmemory line span (not from 0). Every legend sits outside
    its panel, to the right. Absent columns are skipped; a panel with nothing to
    draw says so rather than disappearing.

    Args:
        ts: time series, index = window end time in seconds (named ``time``);
            any number of windows, none included.
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
    _finish(fig, axes, x, title)
    return fig


def plot_overview(ts: pd.DataFrame, path: str | os.PathLike[str], title: str = "") -> None:
    """Write ``overview_figure(ts, title)`` as a PNG at ``path``."""
    _save(overview_figure(ts, title), path)


def _finish(fig: Figure, axes: Sequence[Axes], x: np.ndarray, title: str,
            cycles: pd.DataFrame | None = None) -> None:
    """Letter and grid the stacked panels, shade the phases, share the time axis, title."""
    for ax, letter in zip(axes, "abcdefgh", strict=False):
        _shade_phases(ax, cycles)
        ax.grid(True, alpha=0.3)
        ax.set_title(f"({letter})", loc="left", fontsize="small")
    t = _finite(x)
    if t.size:
        lo, hi = float(t.min()), float(t.max())
        if lo == hi:
            # One window, ending at hi: show it from 0 (where it started, for a
            # run's first window) rather than an axis of zero width.
            lo = 0.0 if hi > 0 else hi - 1.0
        axes[-1].set_xlim(lo, hi)
    else:  # no window at all: a time axis from 0, not one centred on it
        axes[-1].set_xlim(0.0, 1.0)
    axes[-1].set_xlabel("time (s)")
    if title:
        fig.suptitle(title)


def _shade_phases(ax: Axes, cycles: pd.DataFrame | None) -> None:
    """Phase 2 in red, Phase 3 in amber, from a ``redsim.analysis.phases`` table."""
    if cycles is None or cycles.empty:
        return
    for row in cycles.itertuples():
        ax.axvspan(row.phase2_start, row.phase2_end, color=_PHASE2_COLOUR, alpha=_PHASE2_ALPHA,
                   lw=0)
        if np.isfinite(row.phase3_end):
            ax.axvspan(row.phase2_end, row.phase3_end, color=_PHASE3_COLOUR,
                       alpha=_PHASE3_ALPHA, lw=0)


def _phase_legend(ax: Axes, cycles: pd.DataFrame | None) -> None:
    """Say what the shading means: Phase 2 and Phase 3 entries join the legend of
    ``ax`` (the top panel, where a reader looks first; the shading is the same in
    every panel)."""
    if cycles is None or cycles.empty:
        return
    handles, labels = ax.get_legend_handles_labels()
    handles += [Patch(color=_PHASE2_COLOUR, alpha=_PHASE2_ALPHA, lw=0),
                Patch(color=_PHASE3_COLOUR, alpha=_PHASE3_ALPHA, lw=0)]
    labels += ["Phase 2: evicting,\nmain thread saturated", "Phase 3: reclaim,\nbacklog draining"]
    _legend(ax, handles, labels)


def cycles_figure(ts: pd.DataFrame, cycles: pd.DataFrame | None = None,
                  title: str = "") -> Figure:
    """The eviction cycle as the GitLab seed (S0) graphs it, as a Figure.

    Panels, sharing the time axis (s): (a) ``used_memory`` near the limit with the
    dashed ``maxmemory`` line (MB, or GB from 10 GB up), zoomed to the range used
    memory moves in after the first 60 s (the climb from the preload would set
    the scale otherwise; a shorter run uses all of it); (b) evicted keys/s; (c)
    requests/s served and offered; (d) client-buffer memory: INFO's
    ``mem_clients_normal`` and the true value (MB); (e) the main thread's time
    split: commands (with their reads and writes), ``performEvictions``,
    everything else, idle. Phase 2 windows of ``cycles`` (a
    ``redsim.analysis.phases`` table) are shaded red, Phase 3 amber, and the
    top panel's legend says so; each panel's legend is outside it, to the
    right. Any number of windows, none included.
    """
    x = _time_axis(ts)
    fig = Figure(figsize=(_FIG_WIDTH_IN, _PANEL_HEIGHT_IN * 5 + 0.6), layout="constrained")
    axes = fig.subplots(5, 1, sharex=True, squeeze=False)[:, 0]

    ax = axes[0]
    ax.set_label("memory")
    # The story is in the last few hundred MB below the limit, not in the fill-up.
    _memory_lines(ax, ts, x, skip_s=60.0)

    ax = axes[1]
    ax.set_label("evictions")
    ax.plot(x, _col(ts, "evicted_per_sec"), color="tab:red", linewidth=1.0, **_marker(x))
    ax.set_ylabel("evicted keys/s")
    ax.set_ylim(bottom=0)

    _panel_throughput(axes[2], ts, x)

    ax = axes[3]
    ax.set_label("client buffers")
    if _lines(ax, ts, x, [("mem_clients_normal", "mem_clients_normal (INFO)"),
                          ("mem_clients_true", "true client memory")], scale=1 / _MIB):
        _legend(ax)
    else:
        _no_data(ax, "client-memory columns")
    ax.set_ylabel("client buffers (MB)")
    ax.set_ylim(bottom=0)

    ax = axes[4]
    ax.set_label("cpu")

    def share(cols: Sequence[str]) -> np.ndarray:
        return np.sum([np.nan_to_num(_col(ts, c)) for c in cols], axis=0)

    if len(x):
        requests = share(("cpu_commands", "cpu_read", "cpu_write"))
        eviction = share(("cpu_eviction",))
        idle = share(("cpu_idle",))
        other = np.clip(1.0 - requests - eviction - idle, 0.0, 1.0)
        xs, bands = _stack_span(x, [requests, eviction, other, idle])
        ax.stackplot(xs, bands,
                     labels=["commands + I/O", "performEvictions", "other", "idle"],
                     colors=["tab:blue", "tab:red", "0.45", CPU_COLOURS["cpu_idle"]],
                     linewidth=0)
        handles, labels = ax.get_legend_handles_labels()
        _legend(ax, handles[::-1], labels[::-1], fontsize="x-small")
    else:
        _no_data(ax, "cpu_* samples")
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("main-thread share")
    _finish(fig, axes, x, title, cycles)
    _phase_legend(axes[0], cycles)
    return fig


def plot_cycles(
    ts: pd.DataFrame,
    path: str | os.PathLike[str],
    cycles: pd.DataFrame | None = None,
    title: str = "",
) -> None:
    """Write ``cycles_figure(ts, cycles, title)`` as a PNG at ``path``."""
    _save(cycles_figure(ts, cycles, title), path)


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


def fragmentation_figure(ts: pd.DataFrame, utilisation: pd.DataFrame,
                         events: Sequence[tuple[float, str]] = (), title: str = "") -> Figure:
    """Memory against RSS over a run, and how full the allocator's slabs are (seed S3).

    Panels (``ax.get_label()``): (a) ``memory``: ``used_memory``,
    ``allocator_active`` and ``used_memory_rss`` in MB over time, with the
    scenario's events marked; (b) ``slabs``: slabs in use by the share of their
    regions in use (tenths), one bar group per snapshot in ``utilisation``
    (``Result.slab_utilisation``: before each event and at the end); and, when
    active defrag ran, (c) ``defrag``: the main thread's share spent in
    ``activeDefragCycle`` against the requests' p99 and worst latency, what the
    RSS of panel (a) was won back with.

    Args:
        ts: time series, index = window end time in seconds.
        utilisation: ``Result.slab_utilisation``.
        events: (time s, label) of the scenario's events, drawn as vertical lines.
        title: figure title.
    """
    defrag = "cpu_defrag" in ts.columns and bool((ts["cpu_defrag"] > 0).any())
    n = 3 if defrag else 2
    fig = Figure(figsize=(_FIG_WIDTH_IN, n * _PANEL_HEIGHT_IN + 1.2), layout="constrained")
    axes = fig.subplots(n, 1)
    ax_mem, ax_slab = axes[0], axes[1]
    ax_mem.set_label("memory")
    ax_slab.set_label("slabs")
    x = _time_axis(ts)
    for col, colour, label in (("used_memory", "tab:blue", "used_memory"),
                               ("allocator_active", "tab:orange", "allocator_active"),
                               ("used_memory_rss", "tab:red", "used_memory_rss")):
        if col in ts.columns:
            ax_mem.step(x, _col(ts, col) / 1e6, where="pre", color=colour, label=label)
    for t, label in events:
        ax_mem.axvline(t, color="grey", linewidth=0.8, linestyle=":")
        ax_mem.annotate(label, (t, 1.0), xycoords=("data", "axes fraction"), rotation=90,
                        fontsize="x-small", va="top", ha="right")
    ax_mem.set_ylabel("MB")
    ax_mem.set_xlabel("time (s)")
    ax_mem.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")
    snaps = list(dict.fromkeys(zip(utilisation.get("time", []), utilisation.get("at", []),
                                   strict=True)))
    width = 0.8 / max(len(snaps), 1)
    for i, (t, at) in enumerate(snaps):
        rows = utilisation[(utilisation["time"] == t) & (utilisation["at"] == at)]
        pos = np.arange(len(rows)) + (i - (len(snaps) - 1) / 2) * width
        ax_slab.bar(pos, rows["slabs"], width=width, label=f"{at} ({t:g} s)")
    if snaps:
        first = utilisation[utilisation["time"] == snaps[0][0]]
        ax_slab.set_xticks(np.arange(len(first)))
        ax_slab.set_xticklabels([f"{lo:.0%}-{hi:.0%}" for lo, hi in
                                 zip(first["lo"], first["hi"], strict=True)],
                                fontsize="x-small")
        ax_slab.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")
    else:
        ax_slab.text(0.5, 0.5, "no allocator snapshots", transform=ax_slab.transAxes,
                     ha="center")
    ax_slab.set_yscale("symlog", linthresh=10)
    ax_slab.set_ylabel("slabs in use")
    ax_slab.set_xlabel("share of the slab's regions in use")
    if defrag:
        ax_df = axes[2]
        ax_df.set_label("defrag")
        ax_df.step(x, _col(ts, "cpu_defrag"), where="pre", color="tab:green",
                   label="main thread in activeDefragCycle")
        ax_df.set_ylabel("main-thread share")
        ax_df.set_xlabel("time (s)")
        ax_lat = ax_df.twinx()
        for col, style, label in (("latency_p99", "-", "p99 latency"),
                                  ("latency_max", ":", "worst latency")):
            if col in ts.columns:
                ax_lat.step(x, _col(ts, col) * 1e3, where="pre", color="tab:purple",
                            linestyle=style, label=label)
        ax_lat.set_yscale("log")
        ax_lat.set_ylabel("request latency (ms)")
        lines = ax_df.get_legend_handles_labels()
        more = ax_lat.get_legend_handles_labels()
        ax_df.legend(lines[0] + more[0], lines[1] + more[1], loc="upper right",
                     fontsize="small")
        ax_df.grid(True, alpha=0.3)
        ax_df.set_title("(c)", loc="left", fontsize="small")
    for ax, letter in ((ax_mem, "a"), (ax_slab, "b")):
        ax.grid(True, alpha=0.3)
        ax.set_title(f"({letter})", loc="left", fontsize="small")
    if title:
        fig.suptitle(title)
    return fig


def plot_fragmentation(ts: pd.DataFrame, utilisation: pd.DataFrame,
                       path: str | os.PathLike[str],
                       events: Sequence[tuple[float, str]] = (), title: str = "") -> None:
    """Write ``fragmentation_figure`` as a PNG at ``path``."""
    _save(fragmentation_figure(ts, utilisation, events, title), path)


REPLICATION_MARKS = {"full_resync": ("tab:red", "full resync"),
                     "fork": ("tab:olive", "fork for the sync"),
                     "online": ("tab:cyan", "loaded: streaming"),
                     "loaded": ("tab:blue", "loaded: applying its buffer"),
                     "partial_resync": ("tab:green", "partial resync"),
                     "dropped_hard_limit": ("black", "dropped: hard limit"),
                     "dropped_soft_limit": ("0.4", "dropped: soft limit"),
                     "timeout": ("tab:purple", "replica timed out")}
"""The replication events ``replication_figure`` marks, with their colour and label."""


MAX_REPLICA_LINES = 8
"""``replication_figure`` draws each replica's lag up to this many replicas."""


def replication_figure(ts: pd.DataFrame, events: pd.DataFrame,
                       limits: tuple[int, int] = (0, 0), title: str = "",
                       replicas: pd.DataFrame | None = None) -> Figure:
    """The primary's side of replication as a Figure, two panels sharing the time axis.

    (a) ``buffer``: ``mem_total_replication_buffers`` in MB with the replica
    class's output-buffer limits (``limits`` = hard, soft in bytes; 0 = none)
    as dashed lines, the stream a dual-channel replica buffers itself
    (``replica_fullsync_buffer``) when there is any, and each full resync,
    partial resync and drop of
    ``events`` (``Result.replication``), with the forks and the ends of
    loads, as a vertical line; (b) ``replicas``:
    replicas connected and online, and the largest stream backlog of a replica
    (MB, right axis), or each replica's (``Result.replicas``'s ``lag_bytes``)
    when ``replicas`` has 2 to ``MAX_REPLICA_LINES`` of them. Absent columns are
    skipped.
    """
    x = _time_axis(ts)
    fig = Figure(figsize=(_FIG_WIDTH_IN, _PANEL_HEIGHT_IN * 2 + 0.6), layout="constrained")
    ax_buf, ax_rep = fig.subplots(2, 1, sharex=True, squeeze=False)[:, 0]
    ax_buf.set_label("buffer")
    ax_rep.set_label("replicas")
    mb = 1.0 / 1024**2
    _lines(ax_buf, ts, x, [("mem_total_replication_buffers", "replication buffer")], mb)
    if np.nansum(_col(ts, "replica_fullsync_buffer")) > 0:
        _lines(ax_buf, ts, x, [("replica_fullsync_buffer", "buffered on the replica")], mb)
    for value, name in zip(limits, ("hard limit", "soft limit"), strict=True):
        if value:
            ax_buf.axhline(value * mb, linestyle="--", linewidth=1.0, color="0.3"
                           if name == "hard limit" else "0.6", label=name)
    seen: set[str] = set()
    if len(events):
        for t, kind in zip(events["time"], events["event"], strict=True):
            if kind in REPLICATION_MARKS:
                colour, label = REPLICATION_MARKS[kind]
                ax_buf.axvline(float(t), color=colour, linewidth=0.8, alpha=0.7,
                               label=None if kind in seen else label)
                seen.add(kind)
    ax_buf.set_ylabel("MB")
    _legend(ax_buf)
    if _lines(ax_rep, ts, x, [("connected_slaves", "connected"),
                              ("replicas_online", "online")]) == 0:
        _no_data(ax_rep, "replicas")
    ax_rep.set_ylabel("replicas")
    lag = ax_rep.twinx()
    n = 0 if replicas is None or replicas.empty else int(replicas["replica"].max()) + 1
    if 2 <= n <= MAX_REPLICA_LINES and len(replicas) == n * len(x):
        for r, rows in replicas.groupby("replica", sort=True):
            behind = pd.to_numeric(rows["lag_bytes"], errors="coerce").to_numpy(dtype=float)
            lag.plot(x, behind * mb, linewidth=1.0, linestyle=":",
                     label=f"replica {r} lag (MB, right)", **_marker(x))
    elif "repl_max_lag_bytes" in ts.columns:
        lag.plot(x, _col(ts, "repl_max_lag_bytes") * mb, color="tab:brown", linewidth=1.0,
                 label="largest lag (MB, right)", **_marker(x))
    lag.set_ylabel("lag (MB)")
    handles = ax_rep.get_legend_handles_labels()
    more = lag.get_legend_handles_labels()
    _legend(ax_rep, handles[0] + more[0], handles[1] + more[1])
    _finish(fig, [ax_buf, ax_rep], x, title)
    return fig


def plot_replication(ts: pd.DataFrame, events: pd.DataFrame, path: str | os.PathLike[str],
                     limits: tuple[int, int] = (0, 0), title: str = "",
                     replicas: pd.DataFrame | None = None) -> None:
    """Write ``replication_figure`` as a PNG at ``path``."""
    _save(replication_figure(ts, events, limits, title, replicas), path)
