"""The `redsim` command as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

TINY = {"name": "tiny", "duration": "200ms", "sample-interval": "50ms",
        "clients": [{"processes": 2, "threads": 2, "think": "1ms", "mix": {"GET": 1}}]}


def _redsim(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "redsim", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def test_bad_file_gives_one_line_and_exit_2(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nserver:\n  maxmemory-polcy: allkeys-lru\n")
    p = _redsim("validate", str(bad))
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert "bad.yaml" in p.stderr and "maxmemory-policy" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # two CLI runs in fresh interpreters: ~12 s
def test_run_writes_an_identical_run_folder_twice(tmp_path: Path):
    sc = tmp_path / "tiny.yaml"
    sc.write_text(yaml.safe_dump(TINY))
    for out in ("a", "b"):
        p = _redsim("run", str(sc), "--out", str(tmp_path / out), "--no-progress",
                    "--set", "seed=5")
        assert p.returncode == 0, p.stderr
        assert "real-time factor" in p.stdout
    names = ["scenario.yaml", "summary.json", "timeseries.parquet",
             "latency_histogram.csv", "overview.png", "provenance.json"]
    for name in names:
        a, b = (tmp_path / d / name for d in ("a", "b"))
        assert a.read_bytes() == b.read_bytes(), name
    resolved = yaml.safe_load((tmp_path / "a" / "scenario.yaml").read_text())
    assert resolved["seed"] == 5 and resolved["server"]["hz"] == 10  # defaults filled in


def test_a_closed_pipe_ends_quietly():
    # `redsim sweep FILE --dry-run | head -1`: the reader is gone before the
    # listing is written. The read end is closed before the command starts, so
    # the first write fails every time (not only when the pipe buffer fills).
    read_end, write_end = os.pipe()
    os.close(read_end)
    sweep = Path(__file__).resolve().parents[1] / "scenarios" / "sweeps" / "s0-ttl.yaml"
    try:
        p = subprocess.run([sys.executable, "-m", "redsim", "sweep", str(sweep), "--dry-run"],
                           stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=600)
    finally:
        os.close(write_end)
    assert p.returncode == 1
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr, p.stderr
