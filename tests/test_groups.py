"""Answers per client group (observe/groups.py, Result.groups, the testing API's
``group=``): each group's figures against hand-worked costs, and the groups
adding up to the run."""

from __future__ import annotations

import numpy as np
import pytest

from redsim import load_scenario, simulate
from redsim.sweep.frontier import criterion
from redsim.testing import assert_no_burst
from tests.engine_helpers import changed

# Two light groups that seldom meet: per-byte, per-iteration and wake-up
# costs zeroed, commands priced by hand. A web request (GET) costs read 1.5 +
# GET 0.5 + write 2.25 = 4.25 us at Redis; a batch request (20 pipelined
# SETs, one read, one write of the 20 replies) 1.5 + 20 x 0.8 + 2.25 = 19.75
# us. Each adds the 100 us round trip. One connection each, thinking 1.3 and
# 2 ms: Redis is busy ~1 % of the time, so the medians are the lone costs.
# (With equal think times the two would stay in step: both read in the same
# iteration and answered together in beforeSleep, every time.)
TWO = {
    "name": "two-groups", "duration": 2.0, "warmup": 0.2, "sample-interval": 0.2,
    "server": {"save": ""},
    "network": {"rtt": "100us"},
    "engine": {"cpu": {"iteration": 0, "wakeup": 0, "read-per-byte": 0, "write-per-byte": 0,
                       "miss": "none",  # the costs worked by hand below are the whole cost
                       "commands": {"GET": {"fixed": 0.5, "per-byte": 0},
                                    "SET": {"fixed": 0.8, "per-byte": 0}}}},
    "clients": [
        {"name": "web", "processes": 1, "pool": {"max-size": 1}, "think": "1.3ms",
         "mix": {"GET": 1}, "keyspace": {"keys": 10000}},
        {"name": "batch", "processes": 1, "pool": {"max-size": 1}, "think": "2ms",
         "pipeline": 20, "mix": {"SET": 1}, "keyspace": {"keys": 10000}},
    ],
}
WEB_US = 100 + 1.5 + 0.5 + 2.25
BATCH_US = 100 + 1.5 + 20 * 0.8 + 2.25
BUCKET = 1 / 64  # a histogram bucket's width, relative (model.histogram.SUB)


def test_each_group_has_its_own_latency():
    r = simulate(load_scenario(TWO), seed=3)
    g = r.groups.set_index("group")
    assert g.loc["web", "latency_p50_s"] == pytest.approx(WEB_US * 1e-6, rel=2 * BUCKET)
    assert g.loc["batch", "latency_p50_s"] == pytest.approx(BATCH_US * 1e-6, rel=2 * BUCKET)
    # The same figures under the group's name in the summary.
    assert r.summary["web.latency_p50_s"] == g.loc["web", "latency_p50_s"]
    assert r.summary["batch.requests_completed"] == g.loc["batch", "requests_completed"]


def test_the_groups_add_up_to_the_run():
    r = simulate(load_scenario(TWO), seed=3)
    g = r.groups
    assert g["requests_completed"].sum() == r.summary["requests_completed"]
    assert g["throughput_rps"].sum() == pytest.approx(r.summary["throughput_rps"], rel=1e-12)
    mean = (g["latency_mean_s"] * g["requests_completed"]).sum() / g["requests_completed"].sum()
    assert mean == pytest.approx(r.summary["latency_mean_s"], rel=1e-9)
    assert g["latency_max_s"].max() <= r.summary["latency_max_s"] + 1e-12
    ts = r.timeseries
    total = ts["web.requests_per_sec"] + ts["batch.requests_per_sec"]
    np.testing.assert_allclose(total, ts["requests_per_sec"], rtol=1e-12)


def test_one_group_is_the_run():
    one = changed(TWO, clients=[TWO["clients"][0]])
    r = simulate(load_scenario(one), seed=3)
    assert len(r.groups) == 1
    for k in ("throughput_rps", "latency_p99_s", "latency_mean_s", "requests_rejected"):
        assert r.summary[f"web.{k}"] == r.summary[k]
    assert "web.requests_per_sec" not in r.timeseries  # the run's own columns are the group's


def test_a_saturating_batch_breaks_the_web_groups_p99_and_the_failure_names_it(tmp_path):
    # Eight batch connections with 50 pipelined SETs and no think time keep
    # the main thread busy: a web GET now waits behind up to a pass of batch
    # work (8 x 50 x 0.8 us = 320 us of SETs), so its p99 is far above its
    # lone 104 us, and the run's whole p99 (mostly batch requests) is not
    # what is asked about.
    busy = changed(TWO, duration=1.0, clients=[
        TWO["clients"][0],
        {**TWO["clients"][1], "processes": 8, "pipeline": 50, "think": "0ms"}])
    with pytest.raises(AssertionError) as e:
        assert_no_burst(busy, group="web", max_p99="0.2ms", cache=tmp_path)
    assert "group 'web'" in str(e.value) and "max_p99 0.200 ms" in str(e.value)
    with pytest.raises(ValueError) as e:
        assert_no_burst(busy, group="api", max_p99="1ms", cache=tmp_path)
    assert "'web', 'batch'" in str(e.value)


def test_a_sweep_criterion_can_name_a_groups_metric():
    key, ok = criterion("web.latency_p99_s > 0.005")
    assert key == "web.latency_p99_s" and ok(0.006) and not ok(0.004)
    key, _ = criterion("web-tier.requests_rejected >= 1")
    assert key == "web-tier.requests_rejected"


def test_the_overview_draws_each_groups_p99():
    from redsim.plots import overview_figure

    r = simulate(load_scenario(TWO), seed=3)
    ax = next(a for a in overview_figure(r.timeseries).axes if a.get_label() == "latency")
    labels = [line.get_label() for line in ax.get_lines()]
    assert "web p99" in labels and "batch p99" in labels
    web = next(line for line in ax.get_lines() if line.get_label() == "web p99")
    np.testing.assert_allclose(web.get_ydata(), r.timeseries["web.latency_p99"] * 1e3)


def test_a_hosts_group_figures_merge_its_instances():
    # Two instances on a host, the one group split over them: the host's group
    # figures are the instances' together, as the host's own are (its p99
    # from the merged histograms, its throughput the sum).
    sc = changed(TWO, clients=[TWO["clients"][0]], instances=2, host={"cores": 4})
    sc["clients"][0]["processes"] = 2
    s = simulate(load_scenario(sc), seed=3).summary
    assert s["instances"] == 2
    for k in ("latency_p99_s", "latency_p50_s", "throughput_rps", "requests_completed"):
        assert s[f"web.{k}"] == pytest.approx(s[k], rel=1e-12)
    assert s["web.latency_mean_s"] == pytest.approx(s["latency_mean_s"], rel=1e-12)
