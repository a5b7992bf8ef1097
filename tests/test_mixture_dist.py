"""Mixture distributions (``config.schema`` _Dist, ``model/rng.draw``): a
component picked by its weight, then drawn from."""

from __future__ import annotations

import numpy as np
import pytest

from redsim import load_scenario, simulate
from redsim.config.errors import ScenarioError
from redsim.config.schema import DurationDist, SizeDist
from redsim.model.rng import variates

TAIL = {"distribution": "mixture",
        "components": [{"weight": 99, "distribution": "lognormal", "mean": "1ms", "sigma": 0.5},
                       {"weight": 1, "distribution": "fixed", "value": "50ms"}]}


def test_weights_are_normalised_and_the_mean_is_theirs():
    d = DurationDist.model_validate(TAIL)
    assert d.weights == pytest.approx((0.99, 0.01))
    assert d.mean == pytest.approx(0.99 * 0.001 + 0.01 * 0.050)
    assert d.low == 0.0 and d.high == float("inf")
    # A resolved scenario writes it back in a form that loads equal.
    assert DurationDist.model_validate(d.model_dump()) == d


@pytest.mark.parametrize(("mix", "field", "words"), [
    ({"components": [{"weight": 1, "value": "1ms"}]}, "think.components",
     "a list of 2 to 16 components"),
    ({"components": [{"weight": 1, "value": "1ms"}, {"value": "2ms"}]},
     "think.components[1]", "a distribution with a weight"),
    ({"components": [{"weight": 1, "value": "1ms"},
                     {"weight": 1, "distribution": "mixture", "components": []}]},
     "think.components[1].distribution", "not itself a mixture"),
    ({"components": [{"weight": 0, "value": "1ms"}, {"weight": 1, "value": "1ms"}]},
     "think.components[0].weight", "> 0"),
])
def test_bad_mixtures_name_the_component(mix, field, words):
    with pytest.raises(ScenarioError) as err:
        load_scenario({"clients": [{"think": {"distribution": "mixture", **mix}}]})
    assert f"clients[0].{field}" in str(err.value)
    assert words in str(err.value)


def test_preload_draws_each_component_with_its_weight():
    d = SizeDist.model_validate({"distribution": "mixture", "components": [
        {"weight": 3, "value": 100}, {"weight": 1, "distribution": "uniform",
                                      "min": 1000, "max": 2000}]})
    x = variates(np.random.default_rng(1), d, 100_000)
    big = x >= 1000
    # 1 in 4 from the uniform: binomial sd 0.0014 over 10^5 draws.
    assert big.mean() == pytest.approx(0.25, abs=0.006)
    assert set(np.unique(x[~big])) == {100.0}
    assert x[big].mean() == pytest.approx(1500, abs=5)


def test_a_closed_loop_thinks_the_mixture_mean():
    # Four threads, think 90 % 1 ms and 10 % 10 ms (E[Z] = 1.9 ms): each
    # completes one request per E[Z] + its response time (the response time
    # law, X = N / (Z + R)).
    think = {"distribution": "mixture", "components": [
        {"weight": 9, "value": "1ms"}, {"weight": 1, "value": "10ms"}]}
    sc = {"name": "mix-think", "duration": 5.0, "seed": 3, "sample-interval": 1.0,
          "server": {"save": ""},
          "clients": [{"name": "app", "threads": 4, "pool": {"max-size": 4}, "think": think,
                       "mix": {"GET": 1}, "keyspace": {"keys": 1000}}]}
    s = simulate(load_scenario(sc)).summary
    expected = 4 / (0.0019 + s["latency_mean_s"])
    # ~10,000 think draws: the mean's sd is ~0.3 % of 1.9 ms.
    assert s["throughput_rps"] == pytest.approx(expected, rel=0.015)
