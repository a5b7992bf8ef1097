"""Service-time variability of any shape (``engine.cpu.distribution`` as a
distribution of the cost multiplier), against the Pollaczek–Khinchine formula
for M/G/1: mean sojourn = E[S] + λ·E[S²] / (2(1 − ρ)).

As in ``test_engine_theory.py``, each check asserts that the theory lies inside
the replications' confidence interval, at the Bonferroni level for the file's
N_CHECKS checks (fixed seeds 1..R).
"""

from __future__ import annotations

import math

import pytest

from redsim import load_scenario, simulate
from redsim.analysis.theory import mean_ci
from redsim.config.errors import ScenarioError
from tests.engine_helpers import open_mm1

SERVICE_US = 1000.0  # the table's cost: the multiplier's mean maps to 1 ms
LAM = 500.0  # /s: rho = 0.5
REPLICATIONS = 10
N_CHECKS = 2
LEVEL = 1.0 - 0.05 / N_CHECKS
DURATION = 600.0


def _pk_sojourn(second_moment: float) -> float:
    """M/G/1 mean sojourn for E[S] = 1 ms and E[M²] = second_moment (E[M] = 1)."""
    s = SERVICE_US * 1e-6
    rho = LAM * s
    return s + LAM * second_moment * s * s / (2 * (1 - rho))


def _runs(dist: dict) -> list[float]:
    out = []
    for seed in range(1, REPLICATIONS + 1):
        sc = open_mm1(LAM, SERVICE_US, "fixed", DURATION, seed)
        sc["engine"]["cpu"]["distribution"] = dist
        out.append(simulate(load_scenario(sc), seed=seed).summary["latency_mean_s"])
    return out


@pytest.mark.parametrize(("dist", "second_moment"), [
    # 90 % of commands at half the cost, 10 % at 5.5 times: E[M] = 0.45 + 0.55 = 1,
    # E[M²] = 0.9 · 0.25 + 0.1 · 30.25 = 3.25.
    ({"distribution": "mixture", "components": [{"weight": 9, "value": 0.5},
                                                {"weight": 1, "value": 5.5}]}, 3.25),
    # Lognormal of mean 1 and sigma 1: E[M²] = exp(sigma²) = e.
    ({"distribution": "lognormal", "mean": 1, "sigma": 1}, math.e),
], ids=["mixture", "lognormal"])
def test_mg1_mean_sojourn_pollaczek_khinchine(dist, second_moment):
    samples = _runs(dist)
    theory = _pk_sojourn(second_moment)
    mean, half = mean_ci(samples, LEVEL)
    assert abs(mean - theory) <= half, (
        f"theory {theory:.6g} outside the {LEVEL:.2%} CI {mean:.6g} ± {half:.3g}")


def test_the_multiplier_is_taken_relative_to_its_mean():
    # A distribution of mean 2 (say, samples of service times in some unit)
    # is divided by its mean: a fixed 2 costs what the table says, as fixed does.
    base = open_mm1(LAM, SERVICE_US, "fixed", 20.0, 1)
    a = simulate(load_scenario(base), seed=1).summary
    base["engine"]["cpu"]["distribution"] = {"distribution": "fixed", "value": 2}
    b = simulate(load_scenario(base), seed=1).summary
    assert b["latency_mean_s"] == pytest.approx(a["latency_mean_s"], rel=1e-9)


def test_a_bad_distribution_names_the_field():
    with pytest.raises(ScenarioError) as err:
        load_scenario({"engine": {"cpu": {"distribution": "normal"}}})
    assert "engine.cpu.distribution" in str(err.value)
    with pytest.raises(ScenarioError) as err:
        load_scenario({"engine": {"cpu": {"distribution": {"distribution": "lognormal",
                                                           "mean": 1}}}})
    assert "engine.cpu.distribution" in str(err.value) and "sigma" in str(err.value)
