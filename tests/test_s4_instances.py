"""Seed S4 (../shared/seeds/004_*): Redis instances per 6-core host.

scenarios/multi-instance.yaml states where each cost comes from (none is fitted
to the instance curve); these runs are shortened to 3 simulated seconds (the
load is steady: one sample window of 0.5 s moves the totals by < 1 %).
Tolerance ±20 %, as issue #19 sets for the seed's figures.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from redsim import load_scenario, simulate

TOL = 0.20
SCENARIO = str(Path(__file__).resolve().parents[1] / "scenarios" / "multi-instance.yaml")


@functools.cache
def _run(instances: int):
    sc = load_scenario(SCENARIO,
                       overrides=["duration=3s", "warmup=1s", f"instances={instances}"])
    return simulate(sc, progress=False).summary


def test_one_instance_peaks_at_the_seeds_119_to_123k_and_misses_the_qos():
    s = _run(1)
    assert s["throughput_rps"] == pytest.approx(121e3, rel=TOL)
    assert s["latency_p99_s"] > 1e-3  # "achieved in all but the 1 instance scenario"


def test_throughput_grows_about_linearly_up_to_the_cores():
    one = _run(1)["throughput_rps"]
    for n in (2, 3, 4):
        assert _run(n)["throughput_rps"] == pytest.approx(n * one, rel=0.10)


@pytest.mark.parametrize("n", [6, 7, 8])
def test_six_to_eight_instances_reach_about_500k(n):
    assert _run(n)["throughput_rps"] == pytest.approx(500e3, rel=TOL)


def test_throughput_falls_beyond_eight_instances():
    assert _run(12)["throughput_rps"] < _run(8)["throughput_rps"]


@pytest.mark.parametrize("n", [2, 5, 8, 12])
def test_the_qos_holds_from_two_instances_on(n):
    assert _run(n)["latency_p99_s"] < 1e-3


def test_p99_is_lowest_around_five_instances_at_0_345_ms():
    # The spread comes from the round trip's (the scenario's network.rtt, built
    # from a measured loopback ping-pong, interrupt moderation and the wire):
    # with a fixed 100 us round trip the clients moved in step and p99 stayed
    # at ~0.23 ms, within a few % of the mean.
    p99 = {n: _run(n)["latency_p99_s"] for n in (3, 4, 5, 6, 7, 8)}
    best = min(p99, key=p99.get)
    assert 4 <= best <= 6
    assert p99[best] == pytest.approx(0.345e-3, rel=TOL)


def test_interrupts_take_a_smaller_share_as_instances_batch_the_packets():
    # The seed: "the time spent processing hardware interrupts from the network
    # decrease ... due to batching at the network layer as the number of instances
    # increases". Per request, interrupt moderation serves more packets per
    # interrupt as the packet rate grows.
    irq = {n: _run(n)["host_cpu_irq_cores"] / _run(n)["throughput_rps"] for n in (1, 6)}
    assert irq[6] < 0.7 * irq[1]


def test_the_qos_as_a_planners_regression_test():
    # The testing API reads a host's result as it reads one server's: seed S4's
    # QoS (p99 < 1 ms) holds with 6 instances and fails with 1.
    from redsim.testing import assert_no_burst

    short = ["duration=2s", "warmup=0.5s"]
    assert_no_burst(SCENARIO, seeds=[1], set=short, max_p99="1ms")
    with pytest.raises(AssertionError, match="p99 latency .* exceeds max_p99 1.000 ms"):
        assert_no_burst(SCENARIO, seeds=[1],
                        set=[*short, "instances=1"], max_p99="1ms")
