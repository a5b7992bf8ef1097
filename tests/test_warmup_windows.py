"""A warm-up must leave a sample window after it.

The run's statistics (summary, latency percentiles, phases) come from the
sample windows that start at or after the warm-up (``result.py``). A warm-up
past the last window's start left none, and `redsim run` died with numpy's
"zero-size array to reduction operation maximum" after simulating; validation
now says so, and a warm-up exactly at the last window's start runs.
"""

from __future__ import annotations

import pytest

from redsim.config import ScenarioError, load_scenario
from redsim.simulation import Simulation


def _doc(**kw):
    return {"name": "w", "duration": 1, "clients": [{"name": "a", "processes": 2}], **kw}


@pytest.mark.parametrize("warmup, interval", [(0.2, 1.0), (0.9, 0.5), (0.76, 0.25)])
def test_a_warmup_past_the_last_window_is_refused(warmup, interval):
    # Windows start at 0, interval, 2 x interval, ... < 1 s: the last starts at
    # 0 (interval 1), 0.5 (interval 0.5) or 0.75 (interval 0.25) s.
    last = {1.0: 0.0, 0.5: 0.5, 0.25: 0.75}[interval]
    with pytest.raises(ScenarioError) as exc:
        load_scenario(_doc(warmup=warmup, **{"sample-interval": interval}))
    text = str(exc.value)
    assert "warmup" in text and f"at most {last:g} s" in text


def test_a_warmup_at_the_last_window_start_runs():
    sc = load_scenario(_doc(warmup=0.75, **{"sample-interval": 0.25}))
    res = Simulation(sc, seed=1, progress=False).run()
    # One window, [0.75, 1.0): its requests are the ones counted.
    assert res.summary["duration_s"] == pytest.approx(1.0)
    assert res.summary["throughput_rps"] > 0
