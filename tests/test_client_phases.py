"""A client group's schedule of phases (``phases:``; ``client_lifecycle.phase_step``):
threads, think time and rate per phase, each phase's throughput against the
response time law X = N / (Z + R), N the phase's threads."""

from __future__ import annotations

import numpy as np
import pytest

from redsim import load_scenario, simulate
from redsim.config.errors import ScenarioError


def _group(think, **extra) -> dict:
    return {"name": "app", "processes": 4, "threads": 5, "pool": {"max-size": 5},
            "think": think, "mix": {"GET": 1}, "keyspace": {"keys": 1000}, **extra}


def _run(group: dict, duration: float = 3.0):
    sc = {"name": "phases", "duration": duration, "seed": 6, "sample-interval": 0.1,
          "server": {"save": ""}, "clients": [group]}
    r = simulate(load_scenario(sc))
    ts = r.timeseries
    return np.round(ts.index.to_numpy(), 6), ts


def _rate(t, ts, lo, hi) -> float:
    # Completions per second over windows ending in (lo, hi], the first skipped
    # (requests of the previous phase still in flight).
    sel = (t > lo + 0.1) & (t <= hi)
    return float(ts["requests_per_sec"][sel].mean())


@pytest.mark.parametrize("think", ["2ms", {"distribution": "exponential", "mean": "2ms"}],
                         ids=["timed", "memoryless"])
def test_threads_per_phase(think):
    phases = [{"at": 0, "threads": 1}, {"at": "1s", "threads": 5}, {"at": "2s", "threads": 0}]
    t, ts = _run(_group(think, phases=phases))
    r = float(ts["latency_mean"][(t > 0.2) & (t <= 2.0)].mean())
    per_thread = 1 / (0.002 + r)
    # Exponential think: ~1,500 completions per window, sd ~2.5 % of a 0.8 s mean.
    tol = 0.02 if isinstance(think, str) else 0.06
    assert _rate(t, ts, 0, 1) == pytest.approx(4 * 1 * per_thread, rel=tol)
    assert _rate(t, ts, 1, 2) == pytest.approx(4 * 5 * per_thread, rel=tol)
    assert _rate(t, ts, 2, 3) == 0
    if isinstance(think, str):
        # Fixed think: the four threads a process starts at 1 s send in step,
        # each on its own connection; the first thread's requests fall
        # between theirs unless its phase is within a response time of
        # theirs, so the pool holds 4 or 5 (max-size) connections a process.
        conns = ts["connected_clients"]
        assert (conns[(t > 0.1) & (t <= 1.0)] == 4).all()
        phase2 = conns[(t > 1.1) & (t <= 2.0)]
        assert ((phase2 >= 16) & (phase2 <= 20)).all()


def test_think_per_phase():
    phases = [{"at": "1s", "think": "8ms"}]
    t, ts = _run(_group("2ms", phases=phases), duration=2.0)
    r = float(ts["latency_mean"][(t > 0.2)].mean())
    assert _rate(t, ts, 0, 1) == pytest.approx(20 / (0.002 + r), rel=0.02)
    assert _rate(t, ts, 1, 2) == pytest.approx(20 / (0.008 + r), rel=0.02)


def test_an_open_groups_phases_are_its_rates():
    group = {"name": "arrivals", "kind": "open", "rate": 2000, "processes": 1,
             "pool": {"max-size": 50}, "mix": {"GET": 1}, "keyspace": {"keys": 1000},
             "phases": [{"at": "1s", "rate": "6k/s"}, {"at": "2s", "rate": 0}]}
    t, ts = _run(group)
    # Poisson counts: sd of a phase's mean rate ~ sqrt(rate / 0.9 s).
    assert _rate(t, ts, 0, 1) == pytest.approx(2000, abs=4 * np.sqrt(2000 / 0.9))
    assert _rate(t, ts, 1, 2) == pytest.approx(6000, abs=4 * np.sqrt(6000 / 0.9))
    assert _rate(t, ts, 2, 3) == 0


@pytest.mark.parametrize(("phases", "where", "words"), [
    ([{"at": "2s", "threads": 1}, {"at": "1s", "threads": 2}], "phases[1].at",
     "strictly increasing"),
    ([{"at": 0, "threads": 9}], "phases[0].threads", "at most the group's threads (5)"),
    ([{"at": 0, "rate": 100}], "phases[0].rate", "no rate in a closed group's phase"),
])
def test_bad_phases_name_the_field(phases, where, words):
    with pytest.raises(ScenarioError) as err:
        load_scenario({"clients": [_group("1ms", phases=phases)]})
    assert f"clients[0].{where}" in str(err.value)
    assert words in str(err.value)
