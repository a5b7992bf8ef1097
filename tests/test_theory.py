"""Closed-form queueing results, checked against hand-computed and tabled values."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from redsim.analysis import (
    md1_mean_sojourn,
    md1_mean_wait,
    mean_ci,
    mg1_mean_sojourn,
    mg1_mean_wait,
    mm1_mean_number,
    mm1_mean_sojourn,
    mm1_sojourn_quantile,
    mva,
    t_cdf,
    t_quantile,
)

# --------------------------------------------------------------------------- M/M/1, M/G/1


def test_mm1_mean_sojourn() -> None:
    # lam = 8/s, mu = 10/s: T = 1 / (10 - 8) = 0.5 s.
    assert mm1_mean_sojourn(8.0, 10.0) == pytest.approx(0.5, rel=1e-12)
    # Empty system: T = 1/mu.
    assert mm1_mean_sojourn(0.0, 10.0) == pytest.approx(0.1, rel=1e-12)


def test_mm1_sojourn_quantile() -> None:
    # Sojourn ~ Exp(mu - lam = 2/s): p99 = ln(100) / 2 = 2.302585093 s, median = ln 2 / 2.
    assert mm1_sojourn_quantile(8.0, 10.0, 0.99) == pytest.approx(2.302585093, rel=1e-9)
    assert mm1_sojourn_quantile(8.0, 10.0, 0.5) == pytest.approx(0.34657359, rel=1e-7)
    assert mm1_sojourn_quantile(8.0, 10.0, 0.0) == 0.0


def test_mm1_mean_number_and_little() -> None:
    # rho = 0.8: L = 0.8 / 0.2 = 4 customers; Little: L = lam * T = 8 * 0.5 = 4.
    assert mm1_mean_number(8.0, 10.0) == pytest.approx(4.0, rel=1e-12)
    assert mm1_mean_number(8.0, 10.0) == pytest.approx(8.0 * mm1_mean_sojourn(8.0, 10.0))


def test_md1() -> None:
    # lam = 8/s, s = 0.1 s (rho = 0.8): Wq = 8 * 0.01 / (2 * 0.2) = 0.2 s, T = 0.3 s.
    assert md1_mean_wait(8.0, 0.1) == pytest.approx(0.2, rel=1e-12)
    assert md1_mean_sojourn(8.0, 0.1) == pytest.approx(0.3, rel=1e-12)
    # Redis-like: lam = 25,000/s, s = 32 µs (rho = 0.8): Wq = 0.8 * 32 / (2 * 0.2) = 64 µs.
    assert md1_mean_wait(25_000.0, 32e-6) == pytest.approx(64e-6, rel=1e-9)


def test_mg1_reduces_to_mm1_and_md1() -> None:
    # Exponential service, mean 0.1 s: E[S^2] = 2 * 0.1^2 = 0.02 s^2.
    # Wq = 8 * 0.02 / (2 * 0.2) = 0.4 s; T = 0.5 s = M/M/1 result.
    assert mg1_mean_wait(8.0, 0.1, 0.02) == pytest.approx(0.4, rel=1e-12)
    assert mg1_mean_sojourn(8.0, 0.1, 0.02) == pytest.approx(mm1_mean_sojourn(8.0, 10.0))
    assert mg1_mean_sojourn(8.0, 0.1, 0.01) == pytest.approx(md1_mean_sojourn(8.0, 0.1))


@pytest.mark.parametrize(
    "call",
    [
        lambda: mm1_mean_sojourn(10.0, 10.0),  # lam == mu
        lambda: mm1_mean_sojourn(12.0, 10.0),  # lam > mu
        lambda: mm1_mean_sojourn(-1.0, 10.0),
        lambda: mm1_mean_sojourn(1.0, 0.0),
        lambda: mm1_mean_number(10.0, 10.0),
        lambda: mm1_sojourn_quantile(8.0, 10.0, 1.0),
        lambda: mm1_sojourn_quantile(8.0, 10.0, -0.1),
        lambda: mm1_sojourn_quantile(12.0, 10.0, 0.5),
        lambda: md1_mean_sojourn(10.0, 0.1),  # rho = 1
        lambda: md1_mean_wait(8.0, 0.0),
        lambda: mg1_mean_sojourn(8.0, 0.1, 0.005),  # E[S^2] < E[S]^2
        lambda: mg1_mean_sojourn(float("nan"), 0.1, 0.02),
        lambda: mg1_mean_sojourn(20.0, 0.1, 0.02),
    ],
)
def test_invalid_open_queue_inputs(call: Callable[[], float]) -> None:
    with pytest.raises(ValueError):
        call()


def test_unstable_message_is_clear() -> None:
    with pytest.raises(ValueError, match="unstable"):
        mm1_mean_sojourn(10.0, 10.0)


# --------------------------------------------------------------------------- MVA


def test_mva_single_customer() -> None:
    # n = 1: no queueing, R = sum(D) = 0.3 s, X = 1 / (R + Z) = 1 / 1.3 /s.
    r = mva(1, [0.1, 0.2], think=1.0)
    assert r.response_time == pytest.approx(0.3, rel=1e-12)
    assert r.throughput == pytest.approx(1.0 / 1.3, rel=1e-12)
    assert r.queue_lengths == pytest.approx((0.1 / 1.3, 0.2 / 1.3), rel=1e-12)


def test_mva_two_customers_by_hand() -> None:
    # D = (0.1, 0.2) s, Z = 1 s.
    # m=1: R = (0.1, 0.2), X = 1/1.3 = 0.769231, Q = (0.076923, 0.153846).
    # m=2: R1 = 0.1 * 1.076923 = 0.1076923, R2 = 0.2 * 1.153846 = 0.2307692,
    #      R = 0.3384615, X = 2 / 1.3384615 = 1.4942529,
    #      Q = (0.1609195, 0.3448276), U = X * D = (0.1494253, 0.2988506).
    r = mva(2, [0.1, 0.2], think=1.0)
    assert r.response_time == pytest.approx(0.3384615, rel=1e-6)
    assert r.throughput == pytest.approx(1.4942529, rel=1e-6)
    assert r.queue_lengths == pytest.approx((0.1609195, 0.3448276), rel=1e-6)
    assert r.residence_times == pytest.approx((0.1076923, 0.2307692), rel=1e-6)
    assert r.utilisations == pytest.approx((0.1494253, 0.2988506), rel=1e-6)


def test_mva_saturation_and_littles_law() -> None:
    # Large n: throughput -> 1 / max(D) = 1 / 0.2 = 5/s (the bottleneck), and the
    # response time approaches n * D_max - Z (asymptotic bound).
    d = [0.1, 0.2, 0.05]
    r = mva(200, d, think=1.0)
    assert r.throughput == pytest.approx(5.0, rel=1e-9)
    assert r.response_time == pytest.approx(200 * 0.2 - 1.0, rel=1e-2)
    # Little's law on the whole loop: n = X * (R + Z) = sum(Q) + X * Z.
    for n in (1, 5, 37):
        r = mva(n, d, think=1.0)
        assert sum(r.queue_lengths) + r.throughput * 1.0 == pytest.approx(n, rel=1e-12)
        assert n / r.throughput - 1.0 == pytest.approx(r.response_time, rel=1e-12)


def test_mva_single_station_no_think() -> None:
    # One station, no think: always saturated; X = 1/D, R = n * D (everyone queues).
    r = mva(7, [0.01])
    assert r.throughput == pytest.approx(100.0, rel=1e-12)
    assert r.response_time == pytest.approx(0.07, rel=1e-12)
    assert r.queue_lengths == pytest.approx((7.0,), rel=1e-12)


def test_mva_matches_machine_repairman_closed_form() -> None:
    # One exponential server plus think: the finite-source M/M/1//N queue. Its
    # utilisation is U = 1 - p0 with p0 = 1 / sum_k N!/(N-k)! (D/Z)^k.
    n, d, z = 20, 0.0004, 0.01
    terms = [math.perm(n, k) * (d / z) ** k for k in range(n + 1)]
    u = 1.0 - 1.0 / math.fsum(terms)
    r = mva(n, [d], think=z)
    assert r.utilisations[0] == pytest.approx(u, rel=1e-10)
    assert r.throughput == pytest.approx(u / d, rel=1e-10)


def test_mva_zero_population() -> None:
    r = mva(0, [0.1, 0.2], think=1.0)
    assert r.throughput == 0.0
    assert r.queue_lengths == (0.0, 0.0)


@pytest.mark.parametrize(
    ("n", "demands", "think"),
    [(-1, [0.1], 1.0), (2.5, [0.1], 1.0), (2, [-0.1], 1.0), (2, [0.1], -1.0), (2, [0.0], 0.0)],
)
def test_mva_invalid(n: float, demands: list[float], think: float) -> None:
    with pytest.raises(ValueError):
        mva(n, demands, think)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- Student t

# Standard two-decimal-place t tables (e.g. NIST/SEMATECH e-Handbook §1.3.6.7.2),
# rounded to 3 decimals, so agreement is to within 5e-4 plus rounding.
T_TABLE = [
    (0.975, 1, 12.706),
    (0.975, 2, 4.303),
    (0.975, 3, 3.182),
    (0.975, 4, 2.776),
    (0.975, 5, 2.571),
    (0.975, 10, 2.228),
    (0.975, 20, 2.086),
    (0.975, 30, 2.042),
    (0.975, 60, 2.000),
    (0.975, 120, 1.980),
    (0.95, 1, 6.314),
    (0.95, 5, 2.015),
    (0.95, 10, 1.812),
    (0.95, 30, 1.697),
    (0.995, 1, 63.657),
    (0.995, 5, 4.032),
    (0.995, 10, 3.169),
    (0.995, 30, 2.750),
    (0.90, 10, 1.372),
    (0.90, 100, 1.290),
]


@pytest.mark.parametrize(("p", "df", "expected"), T_TABLE)
def test_t_quantile_table(p: float, df: int, expected: float) -> None:
    assert t_quantile(p, df) == pytest.approx(expected, abs=1e-3)


def test_t_quantile_975_10() -> None:
    # From tables: t_{0.975, 10} = 2.228 (more digits: 2.2281388519649).
    assert t_quantile(0.975, 10) == pytest.approx(2.2281388519649, abs=1e-9)


@pytest.mark.parametrize("p", [0.6, 0.75, 0.9, 0.975, 0.999, 0.1, 0.0005])
def test_t_quantile_exact_forms(p: float) -> None:
    # df = 1 is Cauchy: t = tan(pi (p - 1/2)); df = 2 has t = (2p - 1) / sqrt(2 p (1 - p)).
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)


def test_t_quantile_symmetry_and_normal_limit() -> None:
    assert t_quantile(0.5, 7) == 0.0
    assert t_quantile(0.025, 10) == pytest.approx(-t_quantile(0.975, 10), rel=1e-12)
    # Normal limit: z_{0.975} = 1.959963985.
    assert t_quantile(0.975, math.inf) == pytest.approx(1.959963985, abs=1e-9)
    assert t_quantile(0.975, 1e6) == pytest.approx(1.959963985, abs=1e-5)


def test_t_cdf_inverts_quantile() -> None:
    for df in (1, 2.5, 4, 17, 300):
        for p in (0.01, 0.3, 0.8, 0.995):
            assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-12)


@pytest.mark.parametrize(("p", "df"), [(0.0, 5), (1.0, 5), (0.975, 0), (0.975, -1)])
def test_t_quantile_invalid(p: float, df: float) -> None:
    with pytest.raises(ValueError):
        t_quantile(p, df)


def test_mean_ci() -> None:
    # samples 1..5: mean 3, s = sqrt(2.5) = 1.581139, t_{0.975,4} = 2.776445,
    # half width = 2.776445 * 1.581139 / sqrt(5) = 1.963243.
    mean, half = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert mean == pytest.approx(3.0)
    assert half == pytest.approx(1.963243, rel=1e-6)
    # 90 %: t_{0.95,4} = 2.131847 -> 2.131847 * 0.707107 = 1.507443.
    assert mean_ci([1.0, 2.0, 3.0, 4.0, 5.0], level=0.9)[1] == pytest.approx(1.507443, rel=1e-6)
    assert mean_ci([2.0, 2.0, 2.0]) == (2.0, 0.0)


def test_mean_ci_invalid() -> None:
    with pytest.raises(ValueError):
        mean_ci([1.0])
    with pytest.raises(ValueError):
        mean_ci([1.0, 2.0], level=1.0)
