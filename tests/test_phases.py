"""The phase analysis on hand-built time series whose phases are known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from redsim.analysis.phases import burst_summary, log2_histogram_text, phases

MB = 2**20


def _series(n: int = 300) -> pd.DataFrame:
    """A quiet run: 25K req/s, 70 % busy, 10 requests in the system, 1 ms p99."""
    t = np.arange(1, n + 1, dtype=float)
    return pd.DataFrame({
        "requests_per_sec": np.full(n, 25_000.0), "cpu_idle": np.full(n, 0.3),
        "cpu_eviction": np.zeros(n), "evicted_per_sec": np.zeros(n),
        "in_system": np.full(n, 10.0), "used_memory": np.full(n, 990.0 * MB),
        "maxmemory": np.full(n, 1000.0 * MB), "latency_p99": np.full(n, 1e-3),
    }, index=pd.Index(t, name="time"))


def _burst(ts: pd.DataFrame, start: int, p2: int, p3: int, drop_mb: float) -> None:
    """Windows (start, start+p2]: eviction saturates, the rate collapses, a backlog
    builds; the next p3 windows drain it while memory falls by drop_mb."""
    s2 = slice(start + 1, start + p2)
    ts.loc[s2, ["cpu_idle", "cpu_eviction", "evicted_per_sec"]] = [0.0, 0.8, 30_000.0]
    ts.loc[s2, "requests_per_sec"] = 4_000.0
    ts.loc[s2, "in_system"] = 100_000.0
    ts.loc[s2, "used_memory"] = 1000.0 * MB
    ts.loc[s2, "latency_p99"] = 5.0
    s3 = slice(start + p2 + 1, start + p2 + p3)
    ts.loc[s3, ["cpu_idle", "cpu_eviction", "evicted_per_sec"]] = [0.0, 0.0, 0.0]
    ts.loc[s3, "requests_per_sec"] = 31_000.0
    ts.loc[s3, "in_system"] = np.linspace(90_000, 25, p3)
    ts.loc[s3, "used_memory"] = np.linspace(1000.0, 1000.0 - drop_mb, p3) * MB
    ts.loc[s3, "latency_p99"] = 2.0


def test_finds_each_phase_of_two_cycles():
    ts = _series()
    _burst(ts, 60, 7, 40, 400)   # Phase 2 in windows 61..67, Phase 3 68..107
    _burst(ts, 200, 6, 30, 300)  # Phase 2 201..206, Phase 3 207..236
    table = phases(ts)
    assert list(table["phase2_start"]) == [60.0, 200.0]
    assert list(table["phase2_s"]) == [7.0, 6.0]
    # Phase 3 ends at the first window with <= 2x the normal 10 in the system:
    # the drain's last window (25 requests) is above 20, so the one after it.
    assert list(table["phase3_s"]) == [41.0, 31.0]
    assert list(table["phase1_s"]) == [60.0, 200.0 - 108.0]
    assert table["memory_drop_bytes"].tolist() == pytest.approx([400 * MB, 300 * MB])
    assert table["rate_dip"].tolist() == pytest.approx([4_000 / 25_000] * 2)
    assert table["burst"].all() and table["complete"].all()
    s = burst_summary(table)
    assert s["burst_detected"] and s["bursts"] == 2 and s["cycle_period_s"] == 140.0


def test_eviction_without_saturation_or_rate_loss_is_no_burst():
    ts = _series()
    # Evicting with 30 % idle: not Phase 2 at all.
    ts.loc[50:60, ["evicted_per_sec", "cpu_eviction"]] = [5_000.0, 0.2]
    # Saturated and evicting, but the answered rate holds: a Phase 2, not a burst.
    ts.loc[150:155, ["evicted_per_sec", "cpu_eviction", "cpu_idle"]] = [5_000.0, 0.2, 0.0]
    table = phases(ts)
    assert len(table) == 1 and not table["burst"].iloc[0]
    assert not burst_summary(table)["burst_detected"]


def test_log2_histogram_prints_like_bcc():
    text = log2_histogram_text("usecs", [0, 2, 4], [1, 3, 7], [10, 0, 5])
    lines = text.splitlines()
    assert lines[0].strip() == "usecs : count     distribution"
    assert "|" + "*" * 40 + "|" in lines[1] and "*" * 20 + " " in lines[3]


def test_a_storm_that_starts_the_run_is_judged_against_the_rate_after_it():
    # A cache preloaded past maxmemory: eviction saturates the thread from the
    # first window (no Phase 1), the rate is 4K req/s for 7 windows, then the
    # run settles at 25K. Compared with its own first window it "held" (4K vs
    # 4K); against the 25K the run served after it, it fell to 4/25 = 16 %.
    ts = _series()
    _burst(ts, 0, 7, 40, 400)  # Phase 2 in windows 1..7, Phase 3 8..47
    table = phases(ts)
    assert table["phase2_start"].tolist() == [0.0]
    assert table["rate_normal"].tolist() == [25_000.0]
    assert table["rate_dip"].tolist() == pytest.approx([4_000 / 25_000])
    assert table["burst"].tolist() == [True]


def test_a_storm_that_fills_the_run_is_judged_against_the_offered_rate():
    # Saturated and evicting from the first window to the last: no window
    # outside the burst. The clients kept issuing 20K req/s, so the 4K served
    # is 20 % of what was asked: a burst.
    ts = _series(20)
    ts[["cpu_idle", "cpu_eviction"]] = [0.0, 0.8]
    ts["requests_per_sec"] = 4_000.0
    ts["offered_per_sec"] = 20_000.0
    table = phases(ts)
    assert table["rate_normal"].tolist() == [20_000.0]
    assert table["burst"].tolist() == [True]
