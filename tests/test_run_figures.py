"""A run folder's figures: drawn for runs of any length, and never at the cost of
the run's data or its summary (issue #17).

The runs are short simulations of a tiny scenario (a few simulated seconds);
longer and degenerate time series are swapped into one of them, since a
figure depends only on the time series, its phase table and the scenario's
maxmemory.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
import yaml
from PIL import Image

import redsim.plots
import redsim.simulation
from redsim.cli import main
from redsim.config import load_scenario
from redsim.driver import simulate
from redsim.result import FigureWarning, Result

RESULTS = Path(__file__).resolve().parents[1] / "results" / "gitlab-2022"

# The reproduction: maxmemory set, more than 60 samples, less than 60 s
# simulated (20 s at 100 ms windows: 200 samples). 2 x 2 sources thinking 1 ms
# (~4K req/s) over 20,000 keys of 64-256 B (a few MB): far below the 64 MB
# limit, so the run is also eviction-free.
LIMITED = {
    "name": "figures", "duration": "20s", "sample-interval": "100ms", "warmup": "1s",
    "server": {"maxmemory": "64mb", "maxmemory-policy": "allkeys-lru"},
    "clients": [{"processes": 2, "threads": 2, "think": "1ms", "mix": {"GET": 0.8, "SET": 0.2},
                 "keyspace": {"keys": 20_000},
                 "value-size": {"distribution": "uniform", "min": 64, "max": 256}}],
}
# A few samples and no memory limit: 3 s at 1 s windows, no cycles figure.
UNLIMITED = {**LIMITED, "duration": "3s", "sample-interval": "1s", "warmup": "0s",
             "server": {}}

DATA_FILES = ("scenario.yaml", "summary.json", "timeseries.parquet", "latency_histogram.csv",
              "cycles.csv", "eviction_calls.csv", "provenance.json")


@pytest.fixture(scope="module")
def limited() -> Result:
    return simulate(load_scenario(LIMITED), seed=1, progress=False)


@pytest.fixture(scope="module")
def unlimited() -> Result:
    return simulate(load_scenario(UNLIMITED), seed=1, progress=False)


def _valid_png(path: Path) -> tuple[int, int]:
    """Open ``path`` as an image (PIL checks the PNG's chunks and CRCs); its size, px."""
    with Image.open(path) as im:
        assert im.format == "PNG"
        im.verify()
    with Image.open(path) as im:
        im.load()  # decodes every pixel: a truncated file fails here
        return im.size


def _save_quietly(result: Result, out: Path) -> None:
    """Save, asserting that no figure was left out."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result.save(out)
    assert not [w for w in caught if issubclass(w.category, FigureWarning)], \
        [str(w.message) for w in caught]


def _cases(limited: Result, unlimited: Result) -> dict[str, tuple[Result, tuple[str, ...]]]:
    """Run name -> (result, the figures its folder must hold)."""
    ts = limited.timeseries
    both = ("overview.png", "cycles.png")
    s0 = pd.read_parquet(RESULTS / "timeseries.parquet")  # 1,800 windows, three bursts
    return {
        "short, no maxmemory (3 samples)": (unlimited, ("overview.png",)),
        "20 s at 100 ms, maxmemory, eviction-free": (limited, both),
        "long (the shipped S0 series)": (dataclasses.replace(limited, timeseries=s0), both),
        "empty": (dataclasses.replace(limited, timeseries=ts.iloc[:0]), both),
        "one sample": (dataclasses.replace(limited, timeseries=ts.iloc[:1]), both),
    }


def test_every_figure_is_drawn_for_runs_of_any_length(tmp_path: Path, limited: Result,
                                                      unlimited: Result) -> None:
    assert len(limited.timeseries) == 200 and len(unlimited.timeseries) == 3
    assert limited.summary["evicted_keys"] == 0  # the eviction-free case is one
    for i, (case, (result, figures)) in enumerate(_cases(limited, unlimited).items()):
        out = tmp_path / f"run{i}"
        _save_quietly(result, out)
        for name in DATA_FILES:
            assert (out / name).is_file(), (case, name)
        pngs = sorted(p.name for p in out.glob("*.png"))
        assert pngs == sorted(figures), case  # no cycles figure without maxmemory
        for name in figures:
            width, height = _valid_png(out / name)
            # 12 in at 110 dpi; 4-5 panels of 2.2 in: anything smaller is a broken figure.
            assert width == 1320 and height > 1000, (case, name, width, height)


def test_a_failing_figure_costs_only_itself(tmp_path: Path, limited: Result,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("no renderer\nfor this figure")

    monkeypatch.setattr(redsim.plots, "plot_overview", broken)
    out = tmp_path / "run"
    with pytest.warns(FigureWarning) as caught:
        limited.save(out)
    ours = [w for w in caught if issubclass(w.category, FigureWarning)]
    assert len(ours) == 1
    message = str(ours[0].message)
    # Names the figure and the error, on one line, and says the data are there.
    assert message.startswith("overview.png not written (RuntimeError: no renderer for this")
    assert "\n" not in message and str(out) in message
    for name in DATA_FILES:
        assert (out / name).is_file(), name
    assert not (out / "overview.png").exists()
    _valid_png(out / "cycles.png")  # the other figure is still drawn


def test_redsim_run_prints_its_table_when_a_figure_fails(
        tmp_path: Path, limited: Result, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "figures.yaml"
    scenario.write_text(yaml.safe_dump(LIMITED))
    out = tmp_path / "run"
    out.mkdir()
    (out / "cycles.png").write_bytes(b"an earlier run's figure")

    class Replay:
        """Simulation, replaced by the run the fixture made (same scenario, seed 1)."""

        def __init__(self, scenario, seed=None, progress=None, **kw) -> None:
            pass

        def run(self) -> Result:
            return limited

    def broken(*args, **kwargs):
        # What plot_cycles raised for this very scenario before the fix.
        raise ValueError("zero-size array to reduction operation fmin which has no identity")

    monkeypatch.setattr(redsim.simulation, "Simulation", Replay)
    monkeypatch.setattr(redsim.plots, "plot_cycles", broken)
    assert main(["run", str(scenario), "--out", str(out), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "requests completed" in captured.out and "run folder" in captured.out
    assert f"{limited.summary['requests_completed']:,}" in captured.out
    # One line, naming the figure and the error; no traceback. (The line saying
    # where the run's CPU costs come from is another matter: test_cost_sources.py.)
    lines = [ln for ln in captured.err.strip().splitlines()
             if not ln.startswith("redsim: CPU costs:")]
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("redsim: warning: cycles.png not written (ValueError: zero-size")
    assert "Traceback" not in captured.err
    for name in DATA_FILES:
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["requests_completed"] == limited.summary["requests_completed"]
    _valid_png(out / "overview.png")
    # The earlier run's cycles.png is gone: it would pass for this run's figure.
    assert not (out / "cycles.png").exists()
