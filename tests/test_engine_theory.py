"""The engine, configured as a plain single-server queue, against queueing theory.

Each check runs independent replications (fixed seeds 1..R) and asserts that
the theoretical value lies inside the replications' confidence interval
(Student t on the replication means), as design.md §5 asks. The file makes
N_CHECKS such comparisons, so each interval is at the Bonferroni level
1 − 0.05/N_CHECKS: the whole file then wrongly fails a correct model at most
5 % of the time (at 95 % per check it would be ~54 %).
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
REPLICATIONS = 10
N_CHECKS = 21  # M/M/1: 3 loads × (mean, p99); M/D/1: 3; MVA: 3 populations × 2 layouts × (X, R)
LEVEL = 1.0 - 0.05 / N_CHECKS
# Long enough for each replication mean to be roughly normal at every load;
# heavier load relaxes more slowly, so it runs longer.
DURATION = {0.5: 600.0, 0.8: 1200.0, 0.95: 3000.0}


def _replicate(make) -> list:
    return [simulate(load_scenario(make(seed)), seed=seed) for seed in range(1, REPLICATIONS + 1)]


def _assert_in_ci(samples: list[float], theory: float, what: str) -> None:
    mean, half = mean_ci(samples, LEVEL)
    assert abs(mean - theory) <= half, (
        f"{what}: theory {theory:.6g} outside the {LEVEL:.2%} CI {mean:.6g} ± {half:.3g} "
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
@pytest.mark.parametrize("one_process", [False, True], ids=["n-processes", "n-threads"])
@pytest.mark.parametrize("n, think", [(5, 0.010), (20, 0.010), (60, 0.020)])
def test_closed_loop_matches_exact_mva(n, think, one_process):
    # One FCFS exponential server (1 ms) plus an infinite-server think station.
    # Both layouts run as one uniformized think clock (model/clients.py); with
    # n threads in one process the clock's ticks land on busy threads and must
    # be skipped, so the thinking count per process is what is checked there.
    exact = mva(n, [SERVICE_US * 1e-6], think)
    runs = _replicate(lambda s: closed_mva(n, think, SERVICE_US, 600.0, s, one_process))
    _assert_in_ci([r.summary["throughput_rps"] for r in runs], exact.throughput,
                  f"MVA throughput n={n}")
    _assert_in_ci([r.summary["latency_mean_s"] for r in runs], exact.response_time,
                  f"MVA response time n={n}")
