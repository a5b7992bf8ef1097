"""redsim.testing: assertions, their failure messages, the run cache, headroom."""

from __future__ import annotations

from pathlib import Path

import pytest

from redsim.testing import RunCache, headroom, run
from tests.engine_helpers import ZERO_OVERHEAD

S0 = Path(__file__).resolve().parents[1] / "scenarios" / "gitlab-2022.yaml"
SHORT = ["duration=300s"]  # the same runs as tests/examples: the fixture's cache shares them


@pytest.mark.slow  # S0 for 5 simulated minutes (read from the run cache after once)
def test_a_burst_fails_assert_no_burst_with_the_phase_table(redsim) -> None:
    with pytest.raises(AssertionError) as info:
        redsim.assert_no_burst(S0, set=SHORT, seeds=[1])
    msg = str(info.value)
    assert "gitlab-2022 (seed 1, 300 s simulated) has 1 eviction burst" in msg
    assert "performEvictions" in msg and "phase table" in msg and "Phase 2 from" in msg
    assert "cycle  phase 1  phase 2" in msg  # the table itself


@pytest.mark.slow  # S0 for 5 simulated minutes (read from the run cache after once)
def test_assert_burst_checks_when(redsim) -> None:
    [r] = redsim.assert_burst(S0, set=SHORT, seeds=[1])
    start = float(r.phases[r.phases["burst"]].iloc[0].phase2_start)
    with pytest.raises(AssertionError, match="later than within=10 s"):
        redsim.assert_burst(S0, set=SHORT, seeds=[1], within=10)
    assert 60 < start < 300


@pytest.mark.slow  # S0 for 5 simulated minutes (read from the run cache after once)
def test_no_burst_fails_assert_burst_naming_what_fell_short(redsim) -> None:
    over = [*SHORT, "engine.cpu.scale=0.5"]
    with pytest.raises(AssertionError) as info:
        redsim.assert_burst(S0, set=over, seeds=[1])
    msg = str(info.value)
    assert "has no eviction burst" in msg and "busiest window" in msg
    assert "used_memory peaked at" in msg and "of maxmemory 61,440 MB" in msg
    with pytest.raises(AssertionError, match="exceeds max_p99 0.001 ms"):
        redsim.assert_no_burst(S0, set=over, seeds=[1], max_p99=1e-6)


def _mdl(rate: float = 2000) -> dict:
    return {"duration": 4, "warmup": 0, "sample-interval": 1, "seed": 3,
            "network": {"rtt": 0},
            "engine": {"reply-batching": False,
                       "cpu": {**ZERO_OVERHEAD, "commands": {"GET": {"fixed": "50us"}}}},
            "clients": [{"kind": "open", "rate": rate, "processes": 1,
                         "pool": {"max-size": 1000}, "mix": {"GET": 1},
                         "keyspace": {"keys": 100}}]}


def test_the_plugin_binds_the_fixture_to_the_session_cache(request, redsim) -> None:
    # The `redsim` fixture comes from the installed plugin (setup.cfg's pytest11
    # entry point) and keeps its runs under pytest's cache directory.
    from redsim import pytest_plugin

    assert request.config.pluginmanager.get_plugin("redsim") is pytest_plugin
    if request.config.getoption("--redsim-no-cache"):
        assert redsim.cache is None
        return
    assert redsim.cache.store.out == request.config.cache.mkdir("redsim")
    from redsim.config import scenario_hash

    first = redsim.run(_mdl(rate=1000))
    assert redsim.run(_mdl(rate=1000)).cached  # the second read from that folder
    assert redsim.cache.get(scenario_hash(first.scenario), first.seed) is not None


def test_runs_are_cached_by_scenario_and_seed(tmp_path) -> None:
    first = run(_mdl(), cache=tmp_path)
    again = run(_mdl(), cache=tmp_path)
    other = run(_mdl(), seed=4, cache=tmp_path)
    assert not first.cached and again.cached and not other.cached
    assert again.summary == first.summary
    assert len(list(RunCache(tmp_path).store.runs.glob("*.json"))) == 2


def test_headroom_finds_the_load_where_utilisation_crosses_one_half(tmp_path) -> None:
    # Single-server queue, 50 µs per request, no overheads: utilisation = rate x
    # 50 µs crosses 0.5 at 10,000/s. From 2,000/s towards 20,000/s in 8 halvings
    # (bracket 70/s) with one 4 s replication (Poisson sd ~50/s near the
    # boundary): within bracket + 4 sd = 270/s.
    h = headroom(_mdl(), "clients[0].rate", to=20_000, criterion="utilisation > 0.5",
                 iterations=8, cache=tmp_path)
    assert h.current == 2000 and h.failing is not None
    assert abs((h.boundary + h.failing) / 2 - 10_000) < 270
    assert h.margin == pytest.approx(5.0, rel=0.03)
    assert "safe up to" in str(h)
    none = headroom(_mdl(), "clients[0].rate", to=4000, criterion="utilisation > 0.5",
                    iterations=2, cache=tmp_path)
    assert none.failing is None and none.boundary == 4000 and "no failure" in str(none)


@pytest.mark.slow  # a pytest session in a subprocess: ~10 s
def test_a_failing_headroom_assert_prints_the_sentence(tmp_path):
    # The README writes `assert h.boundary >= X, h`; pytest shows the message by
    # repr(), so that must be the "safe up to ..., failing at ..." line.
    from redsim.testing import Headroom

    h = Headroom(path="engine.cpu.scale", current=1.0, to=2.0, boundary=1.41, failing=1.47,
                 criterion="burst_detected", threshold=0.5,
                 probabilities={1.0: 0.0, 1.41: 0.0, 1.47: 1.0})
    assert "safe up to 1.41, failing at 1.47" in repr(h)
    f = tmp_path / "test_h.py"
    f.write_text("from redsim.testing import Headroom\n"
                 f"h = {h.__class__.__name__}(**{h.__dict__!r})\n"
                 "def test_h():\n    assert h.boundary >= 1.5, h\n")
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                          str(f)], capture_output=True, text=True, cwd=tmp_path).stdout
    assert "1 failed" in out
    assert "safe up to 1.41, failing at 1.47" in out
    assert "probabilities=" not in out
