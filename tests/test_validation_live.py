"""The model next to a real redis-server: the quick validation subset in CI.

`python -m redsim.validation --quick` as a test: a throw-away Debian
redis-server, the model calibrated on it (`redsim calibrate`), then main-thread
CPU per SET at pipeline 1, 4 and 16 and for a lone client, `mem_clients_normal`
per connection at three connection counts with values up to 16 KB, and bytes
per key at three value sizes. Each row's tolerance is set by the runner from
the real repetitions before the model runs (`redsim/validation/runner.py`),
capped per experiment; a row outside it fails this test and stays in the
table printed with it, and a row noisier than its cap is inconclusive.
"""

from __future__ import annotations

import pytest

# Minutes against a real server, alone on the machine: in the slow lane too.
pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_quick_subset_is_within_tolerance(tmp_path):
    from redsim.calibrate.replay import FitAtBound
    from redsim.validation import validate
    from redsim.validation.runner import markdown

    try:
        rows = validate(tmp_path, quick=True, say=lambda m: None)
    except FitAtBound as exc:
        # The calibration refused a fit that zeroes a cost (issue #43): there
        # is no calibrated model to compare on this host; the model's gap,
        # shown as XFAIL with the figures.
        pytest.xfail(str(exc))
    assert {r.name for r in rows} == {"cpu_p1", "cpu_p16", "cpu_p4", "cpu_c1", "clients_30",
                                      "clients_300", "clients_900", "key_bytes_3",
                                      "key_bytes_100", "key_bytes_1000"}
    # A row fails, or errs; a row whose real runs are noisier than its cap is
    # inconclusive (host noise), which is neither a pass nor the model's fault.
    # The memory rows are exact on any host (CV ~0): they must be conclusive.
    failed = [r for r in rows if r.verdict in ("FAIL", "ERROR")]
    assert not failed, "\n" + markdown(rows)
    memory = [r for r in rows if r.unit == "bytes"]
    assert len(memory) == 6 and all(r.passed for r in memory), "\n" + markdown(rows)
