"""`redsim calibrate --scale-only` (``redsim/calibrate/scale.py``): one multiplier
on the reference host's costs from a saturated SET load."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import yaml

from redsim.calibrate import scale
from redsim.calibrate.solver import CpuPoint
from redsim.config import load_scenario
from redsim.config.cost_sources import cost_notes


def test_the_scale_is_the_median_over_the_models_figure_and_a_scenario_takes_it(
        tmp_path, monkeypatch):
    real = iter((1.30, 1.10, 1.25))
    monkeypatch.setattr(scale, "cpu_point",
                        lambda t, cmd, ld: (CpuPoint(ld.clients, ld.pipeline, next(real)), None))
    monkeypatch.setattr(scale, "model_us_per_set", lambda version: 0.8)
    m = scale.measure_scale(SimpleNamespace(), "7.0")
    # median(1.30, 1.10, 1.25) = 1.25; 1.25 / 0.8 = 1.5625.
    assert m.value == pytest.approx(1.5625) and m.field == "engine.cpu.scale"
    assert m.values == (1.30, 1.10, 1.25)
    out = tmp_path / "scale.yaml"
    doc = scale.write(out, m, {"date": "today"})
    assert set(doc["not-measured"]) >= {"cpu", "memory", "eviction", "disk", "fork"}
    # 100,000 keys of 3 B: the calibrated dataset, so no line on cache misses.
    sc = load_scenario({"name": "s", "duration": 1, "calibration": str(out), "clients": [
        {"kind": "open", "rate": 10, "mix": [{"command": "GET", "weight": 1}],
         "value-size": 3, "key-size": 25, "keyspace": {"keys": 100_000, "preload": 0}}]})
    assert sc.engine.cpu.scale == pytest.approx(1.5625)
    (line,) = cost_notes(sc)
    assert "scaled by 1.56 (scale.yaml, redsim calibrate --scale-only)" in line


@pytest.mark.live
@pytest.mark.slow
def test_scale_only_against_a_real_server_and_the_model_reproduces_its_load(tmp_path):
    from redsim.calibrate import replay
    from redsim.kernel_compile import ensure_compiled

    ensure_compiled(progress=False)
    out = tmp_path / "scale.yaml"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "redsim", "calibrate", "--start",
                           "--scale-only", "--out", str(out)], capture_output=True, text=True,
                          env=dict(os.environ), timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - t0 < 60  # the "30-second benchmark", with slack
    doc = yaml.safe_load(out.read_text())
    s = doc["values"]["engine"]["cpu"]["scale"]
    m = doc["measurements"][0]
    measured = sorted(m["values"])[1]  # the median of three
    # The model with that scale, under the same saturated load, spends the
    # measured CPU per SET: every cost scales alike, so within the model's own
    # run-to-run spread at saturation (< 2 %); 5 % fixed before the run.
    res = replay.run_matched(replay.scenario("7.0", out), 50, 16, 1.0, saturate=True)
    assert replay.cpu_per_command(res) == pytest.approx(measured, rel=0.05), (s, measured)
    pid = int(proc.stdout.split("(pid ")[1].split(",")[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
