"""The SimPy driver around the kernel: progress reporting and the code cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from redsim import load_scenario
from redsim.model import jit
from redsim.simulation import Simulation

_SMALL = {
    "name": "driver-check", "duration": 3, "sample-interval": 0.5, "seed": 7,
    "clients": [{"processes": 20, "threads": 2, "pool": {"max-size": 2},
                 "think": {"distribution": "exponential", "mean": "5ms"},
                 "mix": {"GET": 3, "SET": 1}}],
}


def test_progress_bar_shows_simulated_time_and_changes_nothing(capsys, monkeypatch):
    monkeypatch.delenv("REDSIM_NO_PROGRESS", raising=False)
    sc = load_scenario(_SMALL)
    quiet = Simulation(sc, progress=False).run()
    capsys.readouterr()
    shown = Simulation(sc, progress=True).run()
    err = capsys.readouterr().err
    assert "driver-check" in err and "sim-s" in err
    # The bar's control events split the kernel's runs; the simulation must not notice.
    pd.testing.assert_frame_equal(quiet.timeseries, shown.timeseries)
    assert quiet.summary == shown.summary


def test_progress_bar_can_be_switched_off_by_environment(capsys, monkeypatch):
    monkeypatch.setenv("REDSIM_NO_PROGRESS", "1")
    Simulation(load_scenario(_SMALL), progress=True).run()
    assert "sim-s" not in capsys.readouterr().err


def test_code_cache_is_keyed_by_kernel_source(tmp_path: Path, monkeypatch):
    pkg = tmp_path / "redsim"
    for sub in jit.KERNEL_SOURCES:
        shutil.copytree(Path(jit.__file__).parent.parent / sub, pkg / sub)
    monkeypatch.setattr(jit, "_PACKAGE", pkg)
    monkeypatch.setenv("REDSIM_CACHE_DIR", str(tmp_path / "cache"))
    jit.code_hash.cache_clear()
    before = jit.kernel_cache_dir()
    assert before.parent == tmp_path / "cache"
    assert jit.kernel_cache_dir() == before  # stable
    with open(pkg / "observe" / "bins.py", "a") as f:  # a callee's code changes
        f.write("\n_CHANGED = 1\n")
    jit.code_hash.cache_clear()  # once per process; a new process sees the change
    try:
        assert jit.kernel_cache_dir() != before
    finally:
        jit.code_hash.cache_clear()
