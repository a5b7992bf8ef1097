"""bench/run_all.py's history file and the README table it writes (no benchmark is run)."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest


@pytest.fixture
def run_all(tmp_path, monkeypatch):
    # bench/ is a scripts folder, not a package: load the module from its path,
    # and point its history and README at a temporary folder.
    path = Path(__file__).resolve().parents[1] / "bench" / "run_all.py"
    spec = importlib.util.spec_from_file_location("run_all", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HISTORY", tmp_path / "history.csv")
    monkeypatch.setattr(module, "README", tmp_path / "README.md")
    return module


def _row(run_all, n):
    return {"date": f"2026-11-{n:02d}T10:00Z", "commit": f"c{n}", "machine": "EPYC",
            "cores": 2, "s0_rtf": 50 + n, "s0_rtf_run": 70 + n, "s0_build_s": 8.0,
            "s0_peak_rss_mb": 4400, "engine_rtf": 120, "engine_ratio": 30.0 + n,
            "sweep_points": 10, "sweep_jobs": 2,
            "sweep_min_per_100": 29.0}


def test_rows_append_under_one_header_and_an_old_header_is_rewritten(run_all):
    run_all.append_row(_row(run_all, 1))
    run_all.append_row(_row(run_all, 2))
    with run_all.HISTORY.open(newline="") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == run_all.COLUMNS and len(rows) == 3
    # A file written before a column was added: rewritten under the new header,
    # the old rows' new cells empty, nothing lost.
    old = [c for c in run_all.COLUMNS if c != "s0_build_s"]
    with run_all.HISTORY.open("w", newline="") as f:
        w = csv.DictWriter(f, old, extrasaction="ignore")
        w.writeheader()
        w.writerow(_row(run_all, 1))
    run_all.append_row(_row(run_all, 3))
    got = run_all.read_history()
    assert [r["commit"] for r in got] == ["c1", "c3"]
    assert got[0]["s0_build_s"] == "" and got[1]["s0_build_s"] == "8.0"


def test_the_readme_table_shows_the_latest_rows_between_its_markers(run_all):
    for n in range(1, run_all.TABLE_ROWS + 3):
        run_all.append_row(_row(run_all, n))
    run_all.README.write_text("intro\n" + run_all.TABLE_START + "\nstale\n"
                              + run_all.TABLE_END + "\noutro\n")
    run_all.write_table()
    text = run_all.README.read_text()
    assert text.startswith("intro\n") and text.endswith("\noutro\n") and "stale" not in text
    body = text.split(run_all.TABLE_START)[1].split(run_all.TABLE_END)[0]
    lines = [ln for ln in body.splitlines() if ln.startswith("| 2026")]
    # The last TABLE_ROWS of TABLE_ROWS + 2 rows, oldest first.
    assert [ln.split(" | ")[1] for ln in lines] == [
        f"c{n}" for n in range(3, run_all.TABLE_ROWS + 3)]
    assert "| 29.0 min (10 points run, 2 workers) |" in lines[-1]
    # The engine's multiple of the naive model beside its RTF; S0's row has no
    # naive figure here, so its RTF stands alone.
    n = run_all.TABLE_ROWS + 2
    assert f"| 120 ({30.0 + n}× naive) | {50 + n} |" in lines[-1]


def test_a_readme_without_the_markers_is_an_error(run_all):
    run_all.README.write_text("no table here\n")
    with pytest.raises(SystemExit, match="bench-table"):
        run_all.write_table()
