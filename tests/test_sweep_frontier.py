"""The burst frontier: bisection logic, and a simulated case whose boundary is
known by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from redsim.config.sweep import load_sweep
from redsim.sweep.frontier import bisect, criterion, find_frontier, midpoint
from tests.engine_helpers import ZERO_OVERHEAD


def _step(boundaries):
    """Probability 1 above each x's boundary, 0 at or below (a sharp frontier)."""
    calls = []

    def evaluate(pairs):
        calls.append(list(pairs))
        return [1.0 if y > boundaries[i] else 0.0 for i, y in pairs]
    return evaluate, calls


def test_bisection_brackets_each_boundary_to_the_requested_resolution() -> None:
    evaluate, calls = _step([3.3, 7.9, 100.0, -1.0])
    out = bisect(["a", "b", "c", "d"], 0.0, 10.0, evaluate, threshold=0.5, iterations=6)
    for br, b in zip(out[:2], (3.3, 7.9), strict=True):
        assert br.a <= b < br.b and br.b - br.a == pytest.approx(10 / 2**6)
        assert (br.pa, br.pb) == (0.0, 1.0)
    # No crossing in [0, 10]: left alone after the first round.
    assert out[2].done and (out[2].pa, out[2].pb) == (0.0, 0.0)
    assert out[3].done and (out[3].pa, out[3].pb) == (1.0, 1.0)
    assert len(calls) == 1 + 6  # every x advances in the same batch
    assert len(calls[1]) == 2  # only the two open brackets


def test_integer_and_geometric_midpoints() -> None:
    assert midpoint(10, 13, log=False, integer=True) == 11
    assert midpoint(10, 11, log=False, integer=True) is None
    assert midpoint(1.0, 100.0, log=True, integer=False) == pytest.approx(10.0)
    evaluate, _ = _step([37])
    br = bisect([0], 1, 100, evaluate, threshold=0.5, iterations=20, integer=True)[0]
    assert (br.a, br.b) == (37, 38)  # the largest value that never bursts, and the next


def test_criteria() -> None:
    key, pred = criterion("latency_p99_s > 0.01")
    assert key == "latency_p99_s" and pred(0.02) and not pred(0.01) and not pred(None)
    key, pred = criterion("burst_detected")
    assert key == "burst_detected" and pred(True) and not pred(False)
    with pytest.raises(ValueError):
        criterion("p99 > fast")


def test_frontier_finds_the_utilisation_boundary_computed_by_hand(tmp_path, saved_figures) -> None:
    # An open-loop single-server queue with no overheads: the main thread is busy
    # rate x cost of the time, so utilisation crosses 0.5 at rate = 0.5 / cost:
    # 10,000/s for 50 µs and 5,000/s for 100 µs. Over 4 s a Poisson count has sd
    # sqrt(rate x 4) / 4 ~ 50/s at the boundary, so each replication classifies
    # a rate within a few sd of it at random; the bracket after 8 halvings of
    # [1000, 20000] is 74/s wide. Tolerance: bracket + 4 sd = 274/s.
    base = {"duration": 4, "warmup": 0, "sample-interval": 1, "seed": 3,
            "network": {"rtt": 0},
            "engine": {"reply-batching": False,
                       "cpu": {**ZERO_OVERHEAD, "commands": {"GET": {"fixed": "50us"}}}},
            "clients": [{"kind": "open", "rate": 1000, "processes": 1,
                         "pool": {"max-size": 1000}, "mix": {"GET": 1},
                         "keyspace": {"keys": 100}}]}
    spec = load_sweep({"name": "mdl", "base": base, "replications": 1, "axes": [
        {"name": "cost", "path": "engine.cpu.commands.GET.fixed", "values": ["50us", "100us"]},
        {"name": "rate", "path": "clients[0].rate", "range": {"start": 1000, "stop": 20000,
                                                              "num": 2}}],
        "frontier": {"x": "cost", "y": "rate", "criterion": "utilisation > 0.5",
                     "threshold": 0.5, "iterations": 8}})
    res = find_frontier(spec, tmp_path, jobs=1, progress=False)
    t = res.table.set_index("cost")
    for cost, expected in (("50us", 10_000), ("100us", 5_000)):
        row = t.loc[cost]
        assert row["y_ok"] < row["y_over"]  # more load, more busy
        assert abs(row["y_frontier"] - expected) < 274, (cost, row.to_dict())
    assert (tmp_path / "frontier.png").exists()
    # The figure: every evaluation a point, coloured by its probability on a
    # 0-1 bar, and one bracket per cost centred on the frontier found.
    fig = saved_figures["frontier.png"]
    ax, bar = fig.axes
    assert ax.get_xlabel() == "cost" and ax.get_ylabel() == "rate"
    [points] = [c for c in ax.collections if c.get_array() is not None]
    assert len(points.get_offsets()) == 2 * (2 + 8)  # as frontier_evaluations.csv below
    assert bar.get_ylim() == (0.0, 1.0)
    [bracket] = ax.containers
    assert sorted(bracket.lines[0].get_ydata()) == sorted(t["y_frontier"])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["frontier (bracket)"]
    evals = pd.read_csv(tmp_path / "frontier_evaluations.csv")
    assert len(evals) == 2 * (2 + 8)
    # Resuming retraces the same path from disk: same table, nothing run.
    again = find_frontier(spec, tmp_path, jobs=1, progress=False, resume=True)
    pd.testing.assert_frame_equal(again.table, res.table)
    assert math.isfinite(t.loc["50us", "p_over"])
