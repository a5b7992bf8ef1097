"""``network.rtt`` as a distribution (model/network.py): each request's round
trip drawn when it is sent, half out and half back."""

from __future__ import annotations

import math

import pytest

from redsim import load_scenario, simulate
from tests.engine_helpers import changed

# Closed loop, no think time, GETs of a small keyspace: a request's latency is
# its round trip plus Redis's few microseconds.
BASE = {
    "name": "rtt", "duration": 2.0, "warmup": 0.2, "sample-interval": 0.1,
    "server": {"save": ""},
    "clients": [{"name": "a", "processes": 4, "pool": {"max-size": 1}, "mix": {"GET": 1},
                 "keyspace": {"keys": 1000}}],
}


def _run(rtt, **changes):
    return simulate(load_scenario(changed(BASE, network={"rtt": rtt}, **changes)),
                    seed=1).summary


def test_an_exponential_round_trip_gives_its_quantiles_to_the_latency():
    # 4 lightly loaded connections: latency = RTT + s, s ~ 6 us (Redis's
    # wake-up and the GET). Exponential, mean 1 ms: p50 = ln 2 ms, p99 = ln 100
    # ms = 4.61 ms. ~7,000 requests after the warm-up: the p99's standard
    # error is ~2.5 %, the histogram's buckets ~1 %; tolerance 8 %.
    s = _run({"distribution": "exponential", "mean": "1ms"})
    serve = 6e-6
    assert s["latency_mean_s"] == pytest.approx(1e-3 + serve, rel=0.05)
    assert s["latency_p50_s"] == pytest.approx(math.log(2) * 1e-3 + serve, rel=0.08)
    assert s["latency_p99_s"] == pytest.approx(math.log(100) * 1e-3 + serve, rel=0.08)


def test_a_uniform_round_trip_bounds_the_latency():
    # Uniform 0.5-1.5 ms: at light load no request is much slower than 1.5 ms
    # (Redis adds microseconds); the median is the middle, 1 ms.
    s = _run({"distribution": "uniform", "min": "0.5ms", "max": "1.5ms"})
    assert s["latency_p50_s"] == pytest.approx(1.0e-3, rel=0.05)
    assert s["latency_max_s"] < 1.5e-3 + 50e-6


def test_jitter_breaks_closed_loop_cohorts_and_opens_the_tail():
    # 64 connections at 100 us round trips: Redis is the bottleneck, and most
    # of a request's time is its wait in Redis. With a fixed round trip, a
    # batch read in one iteration is answered together and comes back
    # together: the clients move in step and p99 sits within ~10 % of the mean.
    # A lognormal round trip with the same mean (sigma 0.5: median
    # 100 e^-0.125 = 88 us, p99 88 e^(2.326 x 0.5) = 282 us) is independent of
    # the wait, so the latency's p99 lies about the round trip's own p99 excess,
    # 282 - 100 = 182 us, above its mean; at least 80 % of it. The mean, by
    # Little's law (64 / throughput), barely moves.
    many = {"clients": [{**BASE["clients"][0], "processes": 64}], "duration": 1.0}
    fixed = _run("100us", **many)
    drawn = _run({"distribution": "lognormal", "mean": "100us", "sigma": 0.5}, **many)
    assert fixed["latency_p99_s"] < 1.10 * fixed["latency_mean_s"]
    assert drawn["latency_p99_s"] - drawn["latency_mean_s"] > 0.8 * 182e-6
    assert drawn["latency_mean_s"] == pytest.approx(fixed["latency_mean_s"], rel=0.15)


def test_a_fixed_distribution_is_the_plain_duration():
    # {distribution: fixed} and a bare duration are the same round trip: the
    # same delay lines, the same random numbers, the same run.
    a = _run("300us")
    b = _run({"distribution": "fixed", "value": "300us"})
    assert a == b


def test_a_resolved_scenario_loads_back_with_its_round_trip():
    # A fixed round trip is written as the plain duration it was before round
    # trips could be drawn (so the scenario hashes of earlier runs still hold);
    # a drawn one as its distribution. Both load back equal.
    for rtt in ("300us", {"distribution": "lognormal", "mean": "100us", "sigma": 0.5}):
        sc = load_scenario(changed(BASE, network={"rtt": rtt}))
        out = sc.model_dump(by_alias=True)
        assert load_scenario(out).network.rtt == sc.network.rtt
    assert load_scenario(changed(BASE, network={"rtt": "300us"})).model_dump(
        by_alias=True)["network"]["rtt"] == 300e-6
