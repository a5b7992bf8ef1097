"""Closed-form queueing results the simulator is checked against.

Units throughout: times in seconds (s), rates in 1/s, queue lengths and numbers
in customers (dimensionless). Everything here is pure Python (``math`` only) so
the checks do not depend on scipy and are bit-for-bit deterministic.

Contents:
- open single-server FCFS queues: M/M/1, M/D/1 and the general M/G/1
  (Pollaczek–Khinchine mean value formula);
- exact Mean Value Analysis (MVA) of a closed product-form network of
  single-server FCFS exponential stations plus one delay (think) station —
  the textbook model of N closed-loop clients hammering one Redis main thread;
- Student t quantiles (via a regularized incomplete beta) and a t-based
  confidence interval for the mean of independent replications.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MvaResult",
    "md1_mean_sojourn",
    "md1_mean_wait",
    "mean_ci",
    "mg1_mean_sojourn",
    "mg1_mean_wait",
    "mm1_mean_number",
    "mm1_mean_sojourn",
    "mm1_sojourn_quantile",
    "mva",
    "t_cdf",
    "t_quantile",
]


# --------------------------------------------------------------------------- validation


def _check_finite(name: str, value: float) -> float:
    """Return ``value`` as float, raising ValueError if it is NaN or infinite."""
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


def _check_stable(lam: float, mean_service: float) -> tuple[float, float]:
    """Validate an open single-server queue and return (lam, rho).

    Args:
        lam: arrival rate, 1/s; must be >= 0.
        mean_service: mean service time, s; must be > 0.

    Raises:
        ValueError: on negative/non-finite inputs or utilisation rho = lam * E[S] >= 1,
            where no steady state exists (the queue grows without bound).
    """
    lam = _check_finite("lam", lam)
    mean_service = _check_finite("mean service time", mean_service)
    if lam < 0.0:
        raise ValueError(f"arrival rate lam must be >= 0, got {lam}")
    if mean_service <= 0.0:
        raise ValueError(f"mean service time must be > 0, got {mean_service}")
    rho = lam * mean_service
    if rho >= 1.0:
        raise ValueError(
            f"unstable queue: utilisation rho = lam * E[S] = {rho:.6g} >= 1 "
            f"(lam = {lam:.6g}/s, E[S] = {mean_service:.6g} s); no steady state exists"
        )
    return lam, rho


def _check_mu(mu: float) -> float:
    """Validate a service rate mu (1/s, > 0) and return it as float."""
    mu = _check_finite("mu", mu)
    if mu <= 0.0:
        raise ValueError(f"service rate mu must be > 0, got {mu}")
    return mu


# --------------------------------------------------------------------------- M/M/1


def mm1_mean_sojourn(lam: float, mu: float) -> float:
    """Mean sojourn (response) time of an M/M/1 queue, in seconds.

    T = 1 / (mu - lam).

    Args:
        lam: Poisson arrival rate, 1/s (0 <= lam < mu).
        mu: exponential service rate, 1/s (> 0).

    Raises:
        ValueError: if lam >= mu (unstable) or an input is invalid.
    """
    mu = _check_mu(mu)
    lam, _ = _check_stable(lam, 1.0 / mu)
    return 1.0 / (mu - lam)


def mm1_sojourn_quantile(lam: float, mu: float, q: float) -> float:
    """The q-quantile of the M/M/1 FCFS sojourn time, in seconds.

    Under FCFS the sojourn time is exponential with rate (mu - lam), so the
    quantile is -ln(1 - q) / (mu - lam).

    Args:
        lam: Poisson arrival rate, 1/s (0 <= lam < mu).
        mu: exponential service rate, 1/s (> 0).
        q: probability level, 0 <= q < 1 (e.g. 0.99 for the p99).

    Raises:
        ValueError: if lam >= mu or q is outside [0, 1).
    """
    mu = _check_mu(mu)
    lam, _ = _check_stable(lam, 1.0 / mu)
    q = _check_finite("q", q)
    if not 0.0 <= q < 1.0:
        raise ValueError(f"quantile level q must be in [0, 1), got {q}")
    # log1p keeps precision for small q, where 1 - q rounds.
    return -math.log1p(-q) / (mu - lam)


def mm1_mean_number(lam: float, mu: float) -> float:
    """Mean number in system (queue + in service) of an M/M/1 queue, customers.

    L = rho / (1 - rho) with rho = lam / mu.

    Raises:
        ValueError: if lam >= mu or an input is invalid.
    """
    mu = _check_mu(mu)
    _, rho = _check_stable(lam, 1.0 / mu)
    return rho / (1.0 - rho)


# --------------------------------------------------------------------------- M/G/1, M/D/1


def mg1_mean_wait(lam: float, mean_service: float, second_moment: float) -> float:
    """Mean waiting time in queue (excluding service) of an M/G/1 FCFS queue, s.

    Pollaczek–Khinchine: Wq = lam * E[S^2] / (2 * (1 - rho)), rho = lam * E[S].

    Args:
        lam: Poisson arrival rate, 1/s.
        mean_service: E[S], s (> 0).
        second_moment: E[S^2], s^2; must be >= E[S]^2 (variance cannot be negative).

    Raises:
        ValueError: if rho >= 1 or the moments are inconsistent.
    """
    lam, rho = _check_stable(lam, mean_service)
    second_moment = _check_finite("second_moment", second_moment)
    # Relative slack so a deterministic E[S^2] = E[S]^2 computed in floating point passes.
    if second_moment < mean_service * mean_service * (1.0 - 1e-12):
        raise ValueError(
            f"second moment E[S^2] = {second_moment:.6g} s^2 is below E[S]^2 = "
            f"{mean_service * mean_service:.6g} s^2 (negative variance)"
        )
    return lam * second_moment / (2.0 * (1.0 - rho))


def mg1_mean_sojourn(lam: float, mean_service: float, second_moment: float) -> float:
    """Mean sojourn time (wait + service) of an M/G/1 FCFS queue, s (Pollaczek–Khinchine).

    T = E[S] + lam * E[S^2] / (2 * (1 - rho)).

    Args:
        lam: Poisson arrival rate, 1/s.
        mean_service: E[S], s (> 0).
        second_moment: E[S^2], s^2 (>= E[S]^2).

    Raises:
        ValueError: if rho >= 1 or the moments are inconsistent.
    """
    return float(mean_service) + mg1_mean_wait(lam, mean_service, second_moment)


def md1_mean_wait(lam: float, service: float) -> float:
    """Mean waiting time in queue of an M/D/1 queue (deterministic service), s.

    Wq = lam * s^2 / (2 * (1 - rho)) = rho * s / (2 * (1 - rho)), rho = lam * s:
    half the M/M/1 wait at the same load, since deterministic service has E[S^2] = s^2.

    Args:
        lam: Poisson arrival rate, 1/s.
        service: the fixed service time s, seconds (> 0).

    Raises:
        ValueError: if lam * service >= 1.
    """
    return mg1_mean_wait(lam, service, float(service) * float(service))


def md1_mean_sojourn(lam: float, service: float) -> float:
    """Mean sojourn time (wait + service) of an M/D/1 queue, s.

    Args:
        lam: Poisson arrival rate, 1/s.
        service: the fixed service time, seconds (> 0).

    Raises:
        ValueError: if lam * service >= 1.
    """
    return float(service) + md1_mean_wait(lam, service)


# --------------------------------------------------------------------------- MVA


@dataclass(frozen=True)
class MvaResult:
    """Exact MVA solution of a closed network at population n.

    Attributes:
        throughput: system throughput X(n), completed cycles (requests) per second.
        response_time: R(n), seconds, summed over the queueing stations; the think
            (delay) time is excluded, so R(n) = n / X(n) - think.
        queue_lengths: mean number of customers at each queueing station (waiting
            plus in service), in the order of ``demands``.
        residence_times: mean time per cycle at each queueing station, seconds.
        utilisations: busy fraction of each station, X(n) * D_k, dimensionless.
    """

    throughput: float
    response_time: float
    queue_lengths: tuple[float, ...]
    residence_times: tuple[float, ...]
    utilisations: tuple[float, ...]


def mva(n: int, demands: Sequence[float], think: float = 0.0) -> MvaResult:
    """Exact Mean Value Analysis of a single-class closed product-form network.

    Stations are single-server FCFS with exponential service (demand D_k seconds
    per cycle) plus one infinite-server delay station of mean ``think`` seconds.
    The recursion over populations m = 1..n uses the arrival theorem:

        R_k(m) = D_k * (1 + Q_k(m - 1))
        X(m)   = m / (think + sum_k R_k(m))
        Q_k(m) = X(m) * R_k(m)

    Args:
        n: number of customers (closed-loop clients), >= 0.
        demands: service demand of each queueing station per cycle, seconds (>= 0).
        think: mean think time at the delay station, seconds (>= 0).

    Returns:
        The MvaResult at population n. n = 0 gives zero throughput and queues and
        R = sum(demands) (the response time a lone customer would see).

    Raises:
        ValueError: on a negative/non-integer n, negative or non-finite demands or
            think, or a network with no delay at all (every demand and think zero).
    """
    if isinstance(n, bool) or int(n) != n or n < 0:
        raise ValueError(f"population n must be a non-negative integer, got {n!r}")
    n = int(n)
    d = [_check_finite("demand", x) for x in demands]
    if any(x < 0.0 for x in d):
        raise ValueError(f"service demands must be >= 0 s, got {list(demands)!r}")
    z = _check_finite("think", think)
    if z < 0.0:
        raise ValueError(f"think time must be >= 0 s, got {think}")
    if z == 0.0 and not any(x > 0.0 for x in d):
        raise ValueError("network has zero total delay (all demands and think are 0)")

    q = [0.0] * len(d)
    r = list(d)
    x_m = 0.0
    for m in range(1, n + 1):
        r = [dk * (1.0 + qk) for dk, qk in zip(d, q, strict=True)]
        x_m = m / (z + sum(r))
        q = [x_m * rk for rk in r]
    return MvaResult(
        throughput=x_m,
        response_time=sum(r),
        queue_lengths=tuple(q),
        residence_times=tuple(r),
        utilisations=tuple(x_m * dk for dk in d),
    )


# --------------------------------------------------------------------------- Student t

# Continued-fraction controls for the incomplete beta: relative tolerance and an
# iteration cap generous enough for df up to ~1e7 (iterations grow like sqrt(df)).
_CF_EPS = 1e-15
_CF_TINY = 1e-300
_CF_MAX_ITER = 20_000
# Above this many degrees of freedom the t and normal quantiles agree to < 1e-7
# (the gap is ~ (z^3 + z) / (4 df)), so we use the normal and skip the slow CF.
_DF_NORMAL = 1e7


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the regularized incomplete beta (modified Lentz).

    Converges quickly for x < (a + 1) / (a + b + 2); callers use the symmetry
    I_x(a, b) = 1 - I_{1-x}(b, a) otherwise.
    """
    qab = a + b
    qap = a + 1.0
    qam = a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < _CF_TINY:
        d = _CF_TINY
    d = 1.0 / d
    h = d
    for m in range(1, _CF_MAX_ITER + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        if abs(d) < _CF_TINY:
            d = _CF_TINY
        c = 1.0 + aa / c
        if abs(c) < _CF_TINY:
            c = _CF_TINY
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        if abs(d) < _CF_TINY:
            d = _CF_TINY
        c = 1.0 + aa / c
        if abs(c) < _CF_TINY:
            c = _CF_TINY
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _CF_EPS:
            return h
    raise ArithmeticError(f"incomplete beta did not converge (a={a}, b={b}, x={x})")


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b) for a, b > 0, 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    # log of x^a (1-x)^b / B(a, b), via lgamma to avoid overflow for large a, b.
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def _check_df(df: float) -> float:
    """Validate degrees of freedom (> 0; +inf allowed, meaning the normal)."""
    v = float(df)
    if math.isnan(v) or v <= 0.0:
        raise ValueError(f"degrees of freedom must be > 0, got {df!r}")
    return v


def _t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for t >= 0 and Student t with df degrees of freedom."""
    if df > _DF_NORMAL:
        return 0.5 * math.erfc(t / math.sqrt(2.0))
    # P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2).
    return 0.5 * _betainc(0.5 * df, 0.5, df / (df + t * t))


def t_cdf(t: float, df: float) -> float:
    """Cumulative distribution function P(T <= t) of Student's t with df degrees of freedom.

    Args:
        t: the abscissa (dimensionless).
        df: degrees of freedom (> 0, need not be an integer; math.inf gives the normal).
    """
    df = _check_df(df)
    t = float(t)
    if math.isnan(t):
        raise ValueError("t must not be NaN")
    upper = _t_upper_tail(abs(t), df)
    return 1.0 - upper if t >= 0.0 else upper


def t_quantile(p: float, df: float) -> float:
    """Quantile (inverse CDF) of Student's t distribution.

    For a two-sided 95 % interval use ``t_quantile(0.975, df)``.

    The tail probability 1 - p is matched by bisection on the upper tail
    P(T > t), computed through the regularized incomplete beta, bracketing t by
    doubling. Bisection is run to floating-point resolution, so the result is
    accurate to ~1e-12 relative (far beyond the 1e-4 needed for CIs) and, being
    pure arithmetic, deterministic.

    Args:
        p: probability, 0 < p < 1.
        df: degrees of freedom (> 0, need not be an integer; math.inf gives the normal).

    Raises:
        ValueError: if p is outside (0, 1) or df <= 0.
    """
    df = _check_df(df)
    p = _check_finite("p", p)
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability p must be in (0, 1), got {p}")
    if p == 0.5:
        return 0.0
    # Symmetry: solve for the upper tail of the positive quantile. min(p, 1-p)
    # is exact for p > 0.5 only up to rounding of 1 - p, which is the input's own resolution.
    tail = 1.0 - p if p > 0.5 else p
    sign = 1.0 if p > 0.5 else -1.0

    lo, hi = 0.0, 1.0
    while _t_upper_tail(hi, df) > tail:
        lo, hi = hi, hi * 2.0
        if hi > 1e300:  # pragma: no cover - only for absurdly small tails with tiny df
            raise ArithmeticError(f"t quantile out of range (p={p}, df={df})")
    # Upper tail decreases in t: keep tail(lo) > target >= tail(hi).
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):  # interval no longer representable: converged
            break
        if _t_upper_tail(mid, df) > tail:
            lo = mid
        else:
            hi = mid
    return sign * 0.5 * (lo + hi)


def mean_ci(samples: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Mean and t-based confidence half-width for independent replication results.

    half_width = t_quantile((1 + level) / 2, n - 1) * s / sqrt(n), with s the
    sample standard deviation (n - 1 denominator). The samples should be one
    summary per independent replication (e.g. each run's mean latency), not raw
    per-request values, which are autocorrelated.

    Args:
        samples: at least two finite values, in whatever unit (the CI is in the same unit).
        level: confidence level, 0 < level < 1.

    Returns:
        (mean, half_width); the interval is mean ± half_width.

    Raises:
        ValueError: with fewer than two samples, non-finite samples or a bad level.
    """
    xs = [_check_finite("sample", x) for x in samples]
    n = len(xs)
    if n < 2:
        raise ValueError(f"need at least 2 samples for a confidence interval, got {n}")
    level = _check_finite("level", level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level}")
    mean = math.fsum(xs) / n
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    half = t_quantile(0.5 * (1.0 + level), n - 1) * math.sqrt(var / n)
    return mean, half
