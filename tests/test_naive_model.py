"""The naive per-request SimPy model (bench/naive_simpy.py) against exact MVA."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

from redsim.analysis import mean_ci, mva


def _load_bench() -> ModuleType:
    # bench/ is a scripts folder, not a package: load the module from its path.
    path = Path(__file__).resolve().parents[1] / "bench" / "naive_simpy.py"
    spec = importlib.util.spec_from_file_location("naive_simpy", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


naive = _load_bench()

N, THINK, SERVICE = 20, 0.01, 0.0004  # customers, s, s
DURATION, WARMUP = 20.0, 0.5  # s


@pytest.fixture(scope="module")
def replications() -> list[dict[str, float]]:
    return [
        naive.run_naive(
            N, THINK, SERVICE, DURATION, seed=s, service_dist="exponential", warmup=WARMUP
        )
        for s in range(1, 6)
    ]


def test_mean_latency_matches_mva(replications: list[dict[str, float]]) -> None:
    # With exponential service the model is the product-form network MVA solves:
    # N = 20, D = 0.4 ms, Z = 10 ms -> R(20) = 1.10942 ms, X = 1800.27/s, U = 0.72011.
    exact = mva(N, [SERVICE], think=THINK)
    assert exact.response_time == pytest.approx(1.10942e-3, rel=1e-5)
    mean, half = mean_ci([r["mean_latency"] for r in replications])
    # 5 replications of ~35k requests each: half width ~2 % of the mean.
    assert half < 0.05 * exact.response_time
    assert abs(mean - exact.response_time) <= half


def test_throughput_and_utilisation_match_mva(replications: list[dict[str, float]]) -> None:
    exact = mva(N, [SERVICE], think=THINK)
    x_mean, x_half = mean_ci([r["requests"] / (DURATION - WARMUP) for r in replications])
    u_mean, u_half = mean_ci([r["utilisation"] for r in replications])
    assert abs(x_mean - exact.throughput) <= x_half
    assert abs(u_mean - exact.utilisations[0]) <= u_half
    # Utilisation law inside each run: U = X * D, up to one service straddling the window.
    for r in replications:
        x = r["requests"] / (DURATION - WARMUP)
        assert r["utilisation"] == pytest.approx(x * SERVICE, rel=0.01)


def test_single_source_fixed_service_never_queues() -> None:
    r = naive.run_naive(1, 0.01, 0.0004, 50.0, seed=3)
    # Alone, every request is served at once: latency = service = 0.4 ms exactly,
    # and throughput = 1 / (Z + s) = 1 / 10.4 ms = 96.15/s; ~4800 cycles in 50 s,
    # so the count's relative sd is ~1.4 % (exponential think) and 5 % is > 3 sd.
    assert r["mean_latency"] == pytest.approx(0.0004, rel=1e-9)
    assert r["requests"] / 50.0 == pytest.approx(1 / 0.0104, rel=0.05)
    assert r["sim_s"] == 50.0
    assert r["rtf"] == pytest.approx(r["sim_s"] / r["wall_s"])


def test_deterministic_given_seed() -> None:
    keys = ("requests", "mean_latency", "utilisation")
    a = naive.run_naive(50, 0.01, 0.0001, 1.0, seed=7)
    b = naive.run_naive(50, 0.01, 0.0001, 1.0, seed=7)
    c = naive.run_naive(50, 0.01, 0.0001, 1.0, seed=8)
    assert [a[k] for k in keys] == [b[k] for k in keys]
    assert [a[k] for k in keys] != [c[k] for k in keys]
    assert set(a) == {
        "requests",
        "mean_latency",
        "utilisation",
        "wall_s",
        "sim_s",
        "rtf",
        "req_per_wall_s",
    }
    assert all(math.isfinite(a[k]) for k in a)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_sources": 0},
        {"service": 0.0},
        {"think_mean": -1.0},
        {"service_dist": "lognormal"},
        {"warmup": 1.0},
    ],
)
def test_invalid_arguments(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {
        "n_sources": 2,
        "think_mean": 0.01,
        "service": 0.001,
        "duration": 1.0,
        **kwargs,
    }
    with pytest.raises(ValueError):
        naive.run_naive(**args)
