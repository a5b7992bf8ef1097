"""Seed S1: the latency spike after BGSAVE comes from copy-on-write of 2 MB
pages, not from fork() itself.

Published (../shared/seeds/001_*): (a) EC2, 1 GB over 5 M keys, 150K writes/s
pipelining 4: fork() ~6 ms, spikes ~300 ms after it; (b) bare metal, 15 M keys,
675K writes/s: worst latency 339 ms with huge pages, 21 ms without. The last
paragraph: with 50 clients each sending N queued writes, one event-loop
iteration can touch every page, copying the whole address space — so the
spike grows with the share of pages one iteration writes.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import redsim
from redsim.config import load_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def _run(name: str, *overrides: str):
    return redsim.simulate(load_scenario(SCENARIOS / f"{name}.yaml", overrides=list(overrides)))


def _spike_window(r):
    """The sample window with the worst latency, and that latency."""
    ts = r.timeseries
    t = ts["latency_max"].idxmax()
    return t, ts.loc[t]


def test_ec2_fork_is_short_but_the_spike_is_long() -> None:
    r = _run("fork-thp-ec2")
    assert r.summary["ops_per_sec"] == pytest.approx(150e3, rel=0.1)
    assert r.summary["latest_fork_usec"] == pytest.approx(6000, rel=0.1)
    assert r.summary["latency_max_s"] == pytest.approx(0.300, rel=0.3)
    assert r.summary["latency_max_s"] > 20 * r.summary["latest_fork_usec"] * 1e-6
    # The spike is the parent's copy-on-write, in the window right after the fork.
    t, row = _spike_window(r)
    assert 5.0 < t <= 5.5
    assert row["cpu_cow"] > 0.5


@pytest.mark.slow  # two 8 s runs of 15 M keys: ~15 s
def test_bare_metal_huge_pages_vs_4k_pages() -> None:
    thp = _run("fork-thp-bare-metal")
    small = _run("fork-thp-off-bare-metal")
    for r in (thp, small):
        assert r.summary["ops_per_sec"] == pytest.approx(675e3, rel=0.1)
    assert thp.summary["latency_max_s"] == pytest.approx(0.339, rel=0.3)
    assert small.summary["latency_max_s"] <= 0.040
    # Without huge pages the worst stall is fork() copying the page tables
    # (~14 ms/GB); with them fork() is under a millisecond.
    assert small.summary["latest_fork_usec"] == pytest.approx(21_000, rel=0.3)
    assert thp.summary["latest_fork_usec"] < 1000
    # Both copy about the whole heap while the child lives; 2 MB pages do it at once.
    heap = thp.forks.iloc[0]["rss"]
    assert thp.summary["cow_peak_bytes"] >= 0.95 * heap
    assert small.summary["cow_peak_bytes"] >= 0.9 * heap


def test_spike_grows_with_the_pages_one_iteration_writes() -> None:
    # 50 clients pipelining d SETs: the first iteration after the fork holds
    # W = 50 d writes (all clients wait out the fork), 2 random pages each, over
    # the P huge pages of a 3 M-key heap. It copies P (1 − e^(−2W/P)) of them at
    # (1 µs + 2 MB / 4.5 GB/s) each, and its requests wait for all of it.
    copy = 1e-6 + 2**21 / 4.5e9
    spikes = []
    for depth in (1, 4, 16):
        r = _run("fork-thp-bare-metal", f"clients.0.pipeline={depth}",
                 "clients.0.keyspace.keys=3000000", "duration=5s")
        pages = r.forks.iloc[0]["pages"]
        first = pages * (1 - math.exp(-2 * 50 * depth / pages)) * copy
        assert r.summary["latency_max_s"] == pytest.approx(first, rel=0.2)
        spikes.append(r.summary["latency_max_s"])
    assert spikes[0] < spikes[1] < spikes[2]
