"""Plot smoke tests: valid, non-trivial PNGs, and graceful handling of missing columns."""

from __future__ import annotations

import struct
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from redsim.plots import plot_latency_histogram, plot_overview

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


def test_overview_full(tmp_path: Path) -> None:
    out = tmp_path / "overview.png"
    backend = matplotlib.get_backend()
    plot_overview(_series(), out, title="synthetic")
    width, height = _png_size(out)
    assert out.stat().st_size > 20_000
    assert width > 500 and height > 500
    # Presentation must not change the caller's backend.
    assert matplotlib.get_backend() == backend


def test_overview_memory_panel_adds_height(tmp_path: Path) -> None:
    four, five = tmp_path / "four.png", tmp_path / "five.png"
    plot_overview(_series(memory=False), four)
    plot_overview(_series(memory=True), five)
    assert _png_size(five)[1] > _png_size(four)[1]  # a fifth stacked panel


def test_overview_missing_optional_columns(tmp_path: Path) -> None:
    df = _series()[["instantaneous_ops_per_sec", "latency_p99"]]
    out = tmp_path / "sparse.png"
    plot_overview(df, out)
    _png_size(out)
    assert out.stat().st_size > 5_000
    # Only one of the memory pair: no memory panel, no error.
    plot_overview(_series().assign(used_memory=1.0), tmp_path / "half_memory.png")
    # Nothing plottable at all still writes a (labelled, empty) figure.
    empty = pd.DataFrame(index=pd.Index([0.0, 1.0], name="time"))
    plot_overview(empty, tmp_path / "empty.png")
    _png_size(tmp_path / "empty.png")


def test_no_pyplot_figures_leak(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plot_overview(_series(memory=True), tmp_path / "a.png")
    edges = np.geomspace(1e-6, 1e-1, 51)
    plot_latency_histogram(edges, np.ones(50), tmp_path / "b.png")
    assert plt.get_fignums() == before


def test_latency_histogram(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    # First bin starts at 0 s: must still draw on the log axis.
    edges = np.concatenate([[0.0], np.geomspace(1e-6, 1e-1, 51)])
    counts, _ = np.histogram(rng.lognormal(np.log(1e-4), 1.0, 10_000), edges)
    out = tmp_path / "hist.png"
    plot_latency_histogram(edges, counts, out, title="latency")
    _png_size(out)
    assert out.stat().st_size > 10_000
    # Sub-millisecond data (µs axis) and an all-zero histogram.
    small = np.geomspace(1e-6, 5e-4, 21)
    plot_latency_histogram(small, np.arange(20), tmp_path / "us.png")
    plot_latency_histogram(small, np.zeros(20), tmp_path / "zero.png")
    _png_size(tmp_path / "us.png")
    _png_size(tmp_path / "zero.png")


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
