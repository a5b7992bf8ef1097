"""Figures: valid PNGs, graceful handling of missing columns, and what a planner reads
off them (axis ranges, colours, legends), checked on the matplotlib Figure objects."""

from __future__ import annotations

import itertools
import struct
import warnings
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from redsim.plots import (
    CPU_COLOURS,
    CPU_ORDER,
    cycles_figure,
    overview_figure,
    plot_cycles,
    plot_latency_histogram,
    plot_overview,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_size(path: Path) -> tuple[int, int]:
    """Check the PNG signature and return (width, height) from the IHDR chunk, pixels."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _series(memory: bool = False) -> pd.DataFrame:
    """Ten seconds of 100 ms windows with every column the overview knows about."""
    rng = np.random.default_rng(0)
    t = np.round(np.arange(1, 101) * 0.1, 10)
    n = t.size
    cols: dict[str, np.ndarray] = {
        "instantaneous_ops_per_sec": 20_000 + 1_000 * np.sin(t),
        "offered_per_sec": np.full(n, 21_000.0),
        "latency_p50": 50e-6 * (1 + 0.2 * rng.random(n)),  # s
        "latency_p99": 300e-6 * (1 + rng.random(n)),
        "latency_max": 2e-3 * (1 + rng.random(n)),
        "cpu_commands": np.full(n, 0.30),
        "cpu_read": np.full(n, 0.15),
        "cpu_write": np.full(n, 0.15),
        "cpu_iteration": np.full(n, 0.05),
        "cpu_cron": np.full(n, 0.02),
        "cpu_connections": np.full(n, 0.01),
        "cpu_idle": np.full(n, 0.30),
        "cpu_other": np.full(n, 0.02),  # unknown cpu_* column: stacked after the known ones
        "connected_clients": np.full(n, 10_000.0),
        "busy_connections": 300 + 10 * t,
        "queue_length": 20 * rng.random(n),
    }
    if memory:
        cols["used_memory"] = (50 + 5 * t) * 2**20  # bytes
        cols["maxmemory"] = np.full(n, 100.0 * 2**20)
    df = pd.DataFrame(cols, index=pd.Index(t, name="time"))
    df.iloc[5, df.columns.get_loc("latency_max")] = np.nan  # an empty window
    df.iloc[6, df.columns.get_loc("latency_p50")] = 0.0
    return df


def _labels(fig: Figure) -> list[str]:
    return [ax.get_label() for ax in fig.axes]


def _line_labels(ax: Axes) -> list[str]:
    return [line.get_label() for line in ax.get_lines()]


def _legend_texts(ax: Axes) -> list[str]:
    legend = ax.get_legend()
    return [t.get_text() for t in legend.get_texts()] if legend is not None else []


def _texts(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_overview_full(tmp_path: Path, saved_figures) -> None:
    out = tmp_path / "overview.png"
    backend = matplotlib.get_backend()
    df = _series()
    plot_overview(df, out, title="synthetic")
    width, height = _png_size(out)
    assert out.stat().st_size > 20_000
    assert width > 500 and height > 500
    # Presentation must not change the caller's backend.
    assert matplotlib.get_backend() == backend
    # What the PNG holds, read off the Figure that was saved. _series has no memory
    # columns: the four panels the docstring lists, in its order.
    fig = saved_figures["overview.png"]
    assert _labels(fig) == ["throughput", "latency", "cpu", "connections"]
    assert fig.get_suptitle() == "synthetic"
    ax = _panel(fig, "throughput")
    assert _line_labels(ax) == ["served (ops/s)", "offered (req/s)"]
    lo, hi = ax.get_ylim()
    assert lo == 0.0 and hi >= 21_000  # offered is 21,000/s, served 19,000-21,000/s
    ax = _panel(fig, "latency")
    assert _line_labels(ax) == ["p50", "p99", "max"] and ax.get_yscale() == "log"
    lo, hi = ax.get_ylim()  # ms: p50 from 0.05 ms, max up to 4 ms
    assert lo <= 0.05 and hi >= np.nanmax(df["latency_max"]) * 1e3
    # Eight non-zero cpu_* columns, eight bands, listed top band first: idle, the
    # unknown cpu_other, then the known ones in CPU_ORDER from the top down.
    ax = _panel(fig, "cpu")
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 8
    assert _legend_texts(ax) == ["idle", "other", "connections", "cron", "iteration", "write",
                                 "read", "commands"]
    assert ax.get_ylim() == (0.0, 1.0)
    # 10,000 connected against a queue of 0-20: decades apart, a symmetric-log axis.
    assert _panel(fig, "connections").get_yscale() == "symlog"


def test_overview_memory_panel_adds_height(tmp_path: Path, saved_figures) -> None:
    four, five = tmp_path / "four.png", tmp_path / "five.png"
    plot_overview(_series(memory=False), four)
    plot_overview(_series(memory=True), five)
    assert _png_size(five)[1] > _png_size(four)[1]  # a fifth stacked panel
    assert _labels(saved_figures["five.png"])[-1] == "memory"
    assert "memory" not in _labels(saved_figures["four.png"])
    # used_memory 50.5..100 MiB under a 100 MiB limit: both inside the panel.
    lo, hi = _panel(saved_figures["five.png"], "memory").get_ylim()
    assert lo <= 50.5 and hi >= 100.0


def test_overview_missing_optional_columns(tmp_path: Path, saved_figures) -> None:
    df = _series()[["instantaneous_ops_per_sec", "latency_p99"]]
    out = tmp_path / "sparse.png"
    plot_overview(df, out)
    _png_size(out)
    assert out.stat().st_size > 5_000
    fig = saved_figures["sparse.png"]
    # Each panel keeps its place; one without its columns says so instead of drawing.
    assert _labels(fig) == ["throughput", "latency", "cpu", "connections"]
    assert _line_labels(_panel(fig, "throughput")) == ["served (ops/s)"]
    assert _line_labels(_panel(fig, "latency")) == ["p99"]
    assert _texts(_panel(fig, "cpu")) == ["no cpu_* columns"]
    assert _texts(_panel(fig, "connections")) == ["no connection/queue columns"]
    # Only one of the memory pair: no memory panel, no error.
    plot_overview(_series().assign(used_memory=1.0), tmp_path / "half_memory.png")
    assert "memory" not in _labels(saved_figures["half_memory.png"])
    # Nothing plottable at all still writes a (labelled, empty) figure.
    empty = pd.DataFrame(index=pd.Index([0.0, 1.0], name="time"))
    plot_overview(empty, tmp_path / "empty.png")
    _png_size(tmp_path / "empty.png")
    fig = saved_figures["empty.png"]
    assert [_texts(ax) for ax in fig.axes] == [
        ["no throughput columns"], ["no latency columns"], ["no cpu_* columns"],
        ["no connection/queue columns"]]
    assert not any(ax.get_lines() for ax in fig.axes)


def test_no_pyplot_figures_leak(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plot_overview(_series(memory=True), tmp_path / "a.png")
    edges = np.geomspace(1e-6, 1e-1, 51)
    plot_latency_histogram(edges, np.ones(50), tmp_path / "b.png")
    assert plt.get_fignums() == before


def _percentile_lines(fig: Figure) -> dict[str, float]:
    """The histogram's p50/p99 markers: legend label's quantile -> x position."""
    [ax] = fig.axes
    return {line.get_label().split()[0]: float(line.get_xdata()[0]) for line in ax.get_lines()}


def test_latency_histogram(tmp_path: Path, saved_figures) -> None:
    rng = np.random.default_rng(1)
    # First bin starts at 0 s: must still draw on the log axis.
    edges = np.concatenate([[0.0], np.geomspace(1e-6, 1e-1, 51)])
    counts, _ = np.histogram(rng.lognormal(np.log(1e-4), 1.0, 10_000), edges)
    out = tmp_path / "hist.png"
    plot_latency_histogram(edges, counts, out, title="latency")
    _png_size(out)
    assert out.stat().st_size > 10_000
    [ax] = saved_figures["hist.png"].axes
    assert ax.get_title() == "latency" and ax.get_xscale() == "log"
    # Samples reach past 1 ms (e^3.7 x 0.1 ms is beyond the 10,000th): a ms axis.
    assert ax.get_xlabel() == "latency (ms)"
    # The markers are the upper edge of the bin holding the quantile (bins 1.259x
    # wide). Lognormal(median 0.1 ms, sigma 1): p50 = 0.1 ms, p99 = 0.1 x e^2.326 =
    # 1.024 ms. Sampling error over 10,000 draws, 3 sd in log space: 4 % at the
    # median, 12 % at p99.
    marks = _percentile_lines(saved_figures["hist.png"])
    assert 0.1 / 1.04 <= marks["p50"] <= 0.1 * 1.259 * 1.04
    assert 1.024 / 1.12 <= marks["p99"] <= 1.024 * 1.259 * 1.12
    # Sub-millisecond data (µs axis) and an all-zero histogram.
    small = np.geomspace(1e-6, 5e-4, 21)
    plot_latency_histogram(small, np.arange(20), tmp_path / "us.png")
    plot_latency_histogram(small, np.zeros(20), tmp_path / "zero.png")
    _png_size(tmp_path / "us.png")
    _png_size(tmp_path / "zero.png")
    [ax] = saved_figures["us.png"].axes
    assert ax.get_xlabel() == "latency (µs)"
    assert ax.get_xlim()[1] >= 500.0  # the last edge, 5e-4 s, in µs
    # Nothing counted: no percentile to mark, no legend.
    [ax] = saved_figures["zero.png"].axes
    assert not ax.get_lines() and ax.get_legend() is None


@pytest.mark.parametrize(
    ("edges", "counts"),
    [
        (np.array([1e-6, 1e-5]), np.array([1.0, 2.0])),  # length mismatch
        (np.array([1e-5, 1e-6, 1e-4]), np.array([1.0, 2.0])),  # not increasing
        (np.array([1e-6, 1e-5, 1e-4]), np.array([1.0, -2.0])),  # negative count
    ],
)
def test_latency_histogram_invalid(tmp_path: Path, edges: np.ndarray, counts: np.ndarray) -> None:
    with pytest.raises(ValueError):
        plot_latency_histogram(edges, counts, tmp_path / "bad.png")


# -- what a planner reads off the figures (issue #17) --------------------------------

GIB = float(2**30)
RESULTS = Path(__file__).resolve().parents[1] / "results" / "gitlab-2022"
# Two colours closer than this (Euclidean distance in RGB, channels 0..1) are hard
# to tell apart in a thin stacked band; tab10's closest pair is ~0.3 apart.
MIN_COLOUR_DISTANCE = 0.15


def _panel(fig: Figure, label: str) -> Axes:
    """The panel the plot functions labelled ``label`` (``ax.set_label``)."""
    found = [ax for ax in fig.axes if ax.get_label() == label]
    assert len(found) == 1, [ax.get_label() for ax in fig.axes]
    return found[0]


def _sawtooth() -> pd.DataFrame:
    """The S0 picture the issue describes: used memory a 61.0-61.4 GiB sawtooth
    under a 61.44 GiB limit, 1 s windows for 30 min, with a burst at 600-640 s."""
    t = np.arange(1.0, 1801.0)
    used = (61.0 + 0.4 * ((t % 600.0) / 600.0)) * GIB
    df = _series().iloc[:0].reindex(pd.Index(t, name="time"))
    df = df.fillna(0.0).assign(
        instantaneous_ops_per_sec=np.where((t >= 600) & (t < 640), 2_000.0, 25_000.0),
        offered_per_sec=25_000.0, latency_p50=5e-4, latency_p99=2e-3, latency_max=5e-3,
        cpu_commands=0.7, cpu_read=0.1, cpu_write=0.08, cpu_idle=0.12,
        connected_clients=12_000.0, busy_connections=np.where((t >= 600) & (t < 640),
                                                              12_000.0, 13.0),
        queue_length=np.where((t >= 600) & (t < 640), 11_990.0, 5.0),
        used_memory=used, maxmemory=61.44 * GIB)
    return df


def test_memory_panel_zooms_to_the_sawtooth_and_keeps_the_limit() -> None:
    fig = overview_figure(_sawtooth())
    ax = _panel(fig, "memory")
    lo, hi = ax.get_ylim()
    assert "GB" in ax.get_ylabel()  # 61 GiB reads as 61.x, not 62,000-odd MB
    # The data moves in 61.0..61.4 GiB and the limit is at 61.44: both inside.
    assert lo < 61.0 and hi > 61.44
    # Not anchored at 0: the panel spans at most twice the 0.44 GiB the data and
    # the limit cover (a 0-based axis would span 61.4 GiB and flatten them).
    assert lo > 0 and hi - lo < 2 * 0.44
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["used_memory", "maxmemory"]


def test_memory_panel_of_the_shipped_s0_run() -> None:
    ts = pd.read_parquet(RESULTS / "timeseries.parquet")
    used = ts["used_memory"] / GIB
    limit = float(ts["maxmemory"].iloc[0]) / GIB
    for fig in (overview_figure(ts), cycles_figure(ts, pd.read_csv(RESULTS / "cycles.csv"))):
        lo, hi = _panel(fig, "memory").get_ylim()
        assert lo <= used.min() and hi >= max(used.max(), limit)
        # The cycle's ~0.44 GiB swing fills most of the panel: its height is
        # under twice the span of the data and the limit.
        assert hi - lo < 2 * (max(used.max(), limit) - used.min())


def test_memory_panel_from_zero_and_without_a_limit() -> None:
    # A fill-up from 5 MiB: the data comes within a margin of 0, so the axis starts at 0.
    df = _series(memory=True)
    df["used_memory"] = np.linspace(5, 100, len(df)) * 2**20
    lo, hi = _panel(overview_figure(df), "memory").get_ylim()
    assert lo == 0.0 and hi > 100.0
    # maxmemory 0 is "no limit": no line at 0 drags the axis down to it.
    df = _series(memory=True).assign(maxmemory=0)  # used memory 50.5..100 MiB
    ax = _panel(overview_figure(df), "memory")
    assert [line.get_label() for line in ax.get_lines()] == ["used_memory"]
    lo, hi = ax.get_ylim()
    assert 40.0 < lo < 50.5 and 100.0 < hi < 110.0


def test_cpu_palette_has_a_distinct_colour_per_activity() -> None:
    assert set(CPU_COLOURS) == set(CPU_ORDER)
    rgb = {k: np.array(to_rgb(c)) for k, c in CPU_COLOURS.items()}
    for (a, ca), (b, cb) in itertools.combinations(rgb.items(), 2):
        assert np.linalg.norm(ca - cb) >= MIN_COLOUR_DISTANCE, (a, b)


def _cpu_faces(fig: Figure) -> list[np.ndarray]:
    ax = _panel(fig, "cpu")
    return [np.array(c.get_facecolor()[0][:3]) for c in ax.collections
            if isinstance(c, PolyCollection)]


def test_cpu_panel_draws_each_activity_in_its_own_colour() -> None:
    # Every known activity busy plus two unknown cpu_* columns: 15 bands, where
    # the default colour cycle (10 colours) repeated five of them.
    df = _series().assign(**{c: 0.05 for c in CPU_ORDER}, cpu_zz_new=0.01)
    faces = _cpu_faces(overview_figure(df))
    assert len(faces) == len(CPU_ORDER) + 2  # + cpu_other (in _series) and cpu_zz_new
    for a, b in itertools.combinations(faces, 2):
        assert np.linalg.norm(a - b) >= MIN_COLOUR_DISTANCE
    # A colour belongs to its activity: eviction is the same red whether or not
    # other activities are present (bands are stacked in CPU_ORDER).
    only = overview_figure(_series()[["cpu_commands"]].assign(cpu_eviction=0.2))
    np.testing.assert_allclose(_cpu_faces(only)[1], to_rgb(CPU_COLOURS["cpu_eviction"]))


def test_cpu_panel_lists_only_what_the_thread_did() -> None:
    # _series has no eviction column; an all-zero fork column adds no band.
    fig = overview_figure(_series().assign(cpu_fork=0.0))
    texts = [t.get_text() for t in _panel(fig, "cpu").get_legend().get_texts()]
    assert "fork" not in texts and "commands" in texts and "other" in texts
    # Top band first, as the bands read from top to bottom: idle stays on top,
    # above unknown columns (cpu_other), and commands is the bottom band.
    assert texts[0] == "idle" and texts[1] == "other" and texts[-1] == "commands"


def _assert_legends_outside(fig: Figure) -> int:
    """Every panel legend lies right of its panel; returns how many were checked."""
    FigureCanvasAgg(fig)
    fig.canvas.draw()  # legend positions are known after a layout pass
    renderer = fig.canvas.get_renderer()
    checked = 0
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box, area = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert box.x0 >= area.x1, ax.get_label()  # outside: no data point can be covered
        assert box.x1 <= fig.bbox.x1 + 1, ax.get_label()  # and still on the figure
        checked += 1
    return checked


def test_legends_sit_outside_the_panels() -> None:
    assert _assert_legends_outside(overview_figure(_sawtooth())) == 5
    ts = pd.read_parquet(RESULTS / "timeseries.parquet")
    cycles = pd.read_csv(RESULTS / "cycles.csv")
    # memory, throughput, client buffers and cpu carry a legend; evictions is one line.
    assert _assert_legends_outside(cycles_figure(ts, cycles)) == 4


def test_busy_connections_are_visible() -> None:
    ax = _panel(overview_figure(_sawtooth()), "connections")
    lines = {line.get_label(): line for line in ax.get_lines()}
    busy = lines.pop("busy (request outstanding)")
    # In a burst busy connections and the queue coincide (12,000 vs 11,990): the
    # busy line is drawn over the others, thicker, in a colour none of them uses.
    assert all(busy.get_zorder() > other.get_zorder() for other in lines.values())
    assert all(busy.get_linewidth() > other.get_linewidth() for other in lines.values())
    assert all(to_rgb(busy.get_color()) != to_rgb(o.get_color()) for o in lines.values())
    # Outside bursts busy is 13 and the queue 5 under 12,000 connections: on a
    # linear axis they would sit within 0.1 % of the panel's height from 0.
    assert ax.get_yscale() == "symlog"
    # All of one size (10-20 connections): a plain linear axis.
    small = _series().assign(connected_clients=20.0, busy_connections=10.0, queue_length=12.0)
    assert _panel(overview_figure(small), "connections").get_yscale() == "linear"


def test_cycles_figure_explains_its_shading() -> None:
    ts = pd.read_parquet(RESULTS / "timeseries.parquet")
    cycles = pd.read_csv(RESULTS / "cycles.csv")
    fig = cycles_figure(ts, cycles)
    top = _panel(fig, "memory")  # the first panel: its legend explains the shading
    legend = top.get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts[:2] == ["used_memory", "maxmemory"]
    assert texts[2].startswith("Phase 2") and texts[3].startswith("Phase 3")
    # The legend patches look like the shading (same colour and transparency).
    spans = list(top.patches)
    assert len(spans) == 2 * len(cycles) == 6  # a Phase 2 and a Phase 3 span per cycle
    for patch, span in zip(legend.get_patches(), spans[:2], strict=True):
        assert patch.get_facecolor() == span.get_facecolor()
    # No cycle found: nothing shaded, nothing to explain.
    none = cycles_figure(ts, cycles.iloc[:0])
    assert not _panel(none, "memory").patches
    assert len(_panel(none, "memory").get_legend().get_texts()) == 2


def _series_20s(memory_mib: float = 60.0) -> pd.DataFrame:
    """The issue's reproduction: maxmemory set, 20 s at 100 ms windows (200 > 60 samples)."""
    t = np.round(np.arange(1, 201) * 0.1, 10)
    df = _series(memory=True).iloc[:0].reindex(pd.Index(t, name="time")).fillna(0.0)
    return df.assign(used_memory=np.linspace(40, memory_mib, t.size) * 2**20,
                     maxmemory=64.0 * 2**20, evicted_per_sec=0.0, mem_clients_normal=2**20,
                     mem_clients_true=2**20, cpu_commands=0.5, cpu_idle=0.5)


def test_cycles_figure_of_a_run_shorter_than_its_zoom_window(tmp_path: Path) -> None:
    # Before: the zoom took the minimum over windows after the first 60 s when
    # there were more than 60 *samples*; a 20 s run has none -> ValueError
    # ("zero-size array to reduction operation fmin"). Now the whole run is used.
    out = tmp_path / "cycles.png"
    plot_cycles(_series_20s(), out)
    assert _png_size(out)[1] > 1000
    lo, hi = _panel(cycles_figure(_series_20s()), "memory").get_ylim()
    assert lo < 40.0 and hi > 64.0  # data 40..60 MiB, limit 64 MiB


@pytest.mark.parametrize("n", [0, 1, 2])
def test_figures_of_tiny_series_draw_without_warnings(tmp_path: Path, n: int) -> None:
    ts = _series_20s().iloc[:n]
    with warnings.catch_warnings():
        # Degenerate limits (zero-width axes, log axes with no positive value)
        # are what matplotlib warns about; none may be left.
        warnings.simplefilter("error")
        for name, fig in (("overview", overview_figure(ts, "tiny")),
                          ("cycles", cycles_figure(ts, title="tiny"))):
            out = tmp_path / f"{name}{n}.png"
            FigureCanvasAgg(fig)
            fig.savefig(out)
            width, height = _png_size(out)
            assert width > 500 and height > 500
    if n == 1:  # one window ending at 0.1 s: the axis shows it from 0, not a zero-width span
        fig = overview_figure(ts)
        assert _panel(fig, "memory").get_xlim() == (0.0, 0.1)
        # ... and its CPU shares fill the window (0, 0.1] they measured: an area
        # drawn at a single x would have no width and show nothing.
        bands = [c for c in _panel(fig, "cpu").collections if isinstance(c, PolyCollection)]
        assert len(bands) == 2  # commands and idle, 0.5 each
        for band in bands:
            extent = band.get_paths()[0].get_extents()
            assert (extent.x0, extent.x1) == pytest.approx((0.0, 0.1))
    if n == 0:  # no window: a time axis from 0 (not one centred on 0)
        assert _panel(overview_figure(ts), "memory").get_xlim() == (0.0, 1.0)
