"""The engine, configured as a plain single-server queue, against queueing theory.

Each check runs independent replications (fixed seeds 1..R) and asserts that
the theoretical value lies inside the replications' 95 % confidence interval
(Student t on the replication means), as design.md §5 asks.
"""

from __future__ import annotations

import pytest

from redsim import load_scenario, simulate
from redsim.analysis.theory import (
    md1_mean_sojourn,
    mean_ci,
    mm1_mean_sojourn,
    mm1_sojourn_quantile,
    mva,
)
from tests.engine_helpers import closed_mva, open_mm1

SERVICE_US = 1000.0  # 1 ms mean service: mu = 1000/s
MU = 1e6 / SERVICE_US
REPLICATIONS = 5
# Long enough for each replication mean to be roughly normal at every load;
# heavier load relaxes more slowly, so it runs longer.
DURATION = {0.5: 120.0, 0.8: 240.0, 0.95: 600.0}


def _replicate(make) -> list:
    return [simulate(load_scenario(make(seed)), seed=seed) for seed in range(1, REPLICATIONS + 1)]


def _assert_in_ci(samples: list[float], theory: float, what: str) -> None:
    mean, half = mean_ci(samples, 0.95)
    assert abs(mean - theory) <= half, (
        f"{what}: theory {theory:.6g} outside 95% CI {mean:.6g} ± {half:.3g} "
        f"(replications {[round(s, 7) for s in samples]})")


@pytest.mark.slow
@pytest.mark.parametrize("rho", [0.5, 0.8, 0.95])
def test_mm1_mean_and_p99_sojourn(rho):
    lam = rho * MU
    runs = _replicate(lambda s: open_mm1(lam, SERVICE_US, "exponential", DURATION[rho], s))
    _assert_in_ci([r.summary["latency_mean_s"] for r in runs],
                  mm1_mean_sojourn(lam, MU), f"M/M/1 mean sojourn at rho={rho}")
    # FCFS M/M/1 sojourn is exponential with rate mu - lambda: p99 = ln(100)/(mu - lambda).
    _assert_in_ci([r.summary["latency_p99_s"] for r in runs],
                  mm1_sojourn_quantile(lam, MU, 0.99), f"M/M/1 p99 sojourn at rho={rho}")


@pytest.mark.slow
@pytest.mark.parametrize("rho", [0.5, 0.8, 0.95])
def test_md1_mean_sojourn_pollaczek_khinchine(rho):
    lam = rho * MU
    runs = _replicate(lambda s: open_mm1(lam, SERVICE_US, "fixed", DURATION[rho], s))
    _assert_in_ci([r.summary["latency_mean_s"] for r in runs],
                  md1_mean_sojourn(lam, SERVICE_US * 1e-6), f"M/D/1 mean sojourn at rho={rho}")


@pytest.mark.slow
@pytest.mark.parametrize("n, think", [(5, 0.010), (20, 0.010), (60, 0.020)])
def test_closed_loop_matches_exact_mva(n, think):
    # One FCFS exponential server (1 ms) plus an infinite-server think station.
    exact = mva(n, [SERVICE_US * 1e-6], think)
    runs = _replicate(lambda s: closed_mva(n, think, SERVICE_US, 150.0, s))
    _assert_in_ci([r.summary["throughput_rps"] for r in runs], exact.throughput,
                  f"MVA throughput n={n}")
    _assert_in_ci([r.summary["latency_mean_s"] for r in runs], exact.response_time,
                  f"MVA response time n={n}")
