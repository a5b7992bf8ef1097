"""Fitting the CPU costs in the model (``calibrate/replay.py``) on loads the
model itself produced with known costs: the fit must give those costs back.

The "measured" loads are model runs with a = 4.4 µs of read + write per batch,
b = 0.45 µs per SET and W = 15 µs per sleeping poll (values near the reference
host's); the fit starts 35-65 % away from them and knows only each load's CPU
per SET and rate, as it would from redis-benchmark and INFO.
"""

from __future__ import annotations

import pytest

from redsim.calibrate import replay
from redsim.calibrate.solver import CpuPoint

A_US, B_US, W_US = 4.4, 0.45, 15.0
# (clients, pipeline, think s): the calibration's three loads, at rates below saturation
LOADS = ((50, 1, 700e-6), (50, 16, 1.5e-3), (1, 1, 40e-6))


@pytest.fixture(scope="module")
def measured():
    base = replay.scenario("7.0", engine={"cpu": replay.engine_cpu(A_US, B_US, W_US)})
    out = []
    for c, p, think in LOADS:
        res = replay.run(replay.merge(base, {"clients": [replay.bench_group(c, p, think)]}))
        out.append((CpuPoint(c, p, replay.cpu_per_command(res)), res.summary["ops_per_sec"]))
    return out


@pytest.mark.slow  # fits by running the model dozens of times: ~8 s
def test_the_fit_gives_the_planted_costs_back(measured):
    fit = replay.fit_in_model("7.0", measured[:3], [], io_us=6.0, command_us=0.7,
                              wakeup_us=25.0)
    # Broyden's method stops at 0.5 % on every load; the costs then carry
    # what is left of the rate matching's error (< 1 %): 3 % is above both.
    assert fit.io_us == pytest.approx(A_US, rel=0.03)
    assert fit.command_us == pytest.approx(B_US, rel=0.03)
    assert fit.wakeup_us == pytest.approx(W_US, rel=0.03)
    assert max(abs(r) for r in fit.residuals) < 0.02


@pytest.mark.slow  # fits by running the model dozens of times: ~8 s
def test_without_sleep_counts_the_default_wakeup_stays(measured):
    # A remote server: only the 50-connection loads, W is the model's default
    # (16.7 µs, close to the planted 15 µs): a and b absorb the difference of
    # 1.7 µs x the sleeps of the P=1 load, so they are near, not exact.
    fit = replay.fit_in_model("7.0", measured[:2], [], io_us=6.0, command_us=0.7,
                              wakeup_us=None)
    assert fit.wakeup_us == pytest.approx(16.7)
    assert fit.io_us == pytest.approx(A_US, rel=0.15)
    assert fit.command_us == pytest.approx(B_US, rel=0.15)
    assert max(abs(r) for r in fit.residuals) < 0.02


@pytest.mark.parametrize("server, model", [("7.0.15", "7.0"), ("6.0.9", "6.2"), ("7.2.4", "7.2"),
                                           ("7.4.1", "7.2"), ("8.0.0", "7.2"), ("", "7.2")])
def test_the_nearest_model_version(server, model):
    assert replay.model_version_of(server) == model


@pytest.mark.slow  # fits by running the model a dozen times: ~5 s
def test_a_fit_that_needs_a_free_read_and_write_is_an_error_not_a_calibration(measured):
    # The P = 1 load "measured" at the P = 16 load's CPU per SET: y = a/P + b
    # at P = 1 and 16 alike only with a = 0, so the fit runs into its floor for
    # read + write (0.05 µs) and must say so with the loads' figures instead of
    # returning a calibration (issue #43: a real fit did, at 0.05 against 3.03).
    (p1, r1), (p16, r16) = measured[:2]
    same = [(CpuPoint(p1.clients, p1.pipeline, p16.us_per_request), r1), (p16, r16)]
    with pytest.raises(replay.FitAtBound) as err:
        replay.fit_in_model("7.0", same, [], io_us=6.0, command_us=0.7, wakeup_us=None)
    said = str(err.value)
    assert "read + write per request" in said and "floor (0.05 µs" in said
    assert "c=50 P=1:" in said and "c=50 P=16:" in said
