"""`redsim calibrate --start --quick` against a real redis-server, timed.

The command starts its own throw-away server on 127.0.0.1 and a free port (its
own --dir) and stops it by PID; skipped where no redis-server or
redis-benchmark can be found. Issue #42 bounds the quick calibration at three
minutes on the reference 2-vCPU VM; the kernel's compile is not part of it (a
fresh install pays that once, for every command, and says so), so it is done
before the clock starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import yaml

pytestmark = [pytest.mark.live, pytest.mark.slow]

QUICK_BOUND_S = 180.0
"""The issue's bound for `--quick`, set before the run; the command is killed there."""


def test_quick_calibration_measures_the_cpu_costs_within_three_minutes(tmp_path):
    from redsim.kernel_compile import ensure_compiled

    ensure_compiled(progress=False)
    out = tmp_path / "quick.yaml"
    env = dict(os.environ, COLUMNS="100")
    t0 = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "redsim", "calibrate", "--start", "--quick",
                               "--out", str(out)], capture_output=True, text=True, env=env,
                              timeout=QUICK_BOUND_S, cwd=tmp_path)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"redsim calibrate --quick ran past {QUICK_BOUND_S:.0f} s:\n{exc.stdout}")
    took = time.monotonic() - t0
    if proc.returncode != 0 and "on the solver's floor" in proc.stderr:
        # The fit in the model could not reproduce this host's loads without a
        # zero cost (issue #43): the command refused to write a file, as it must.
        # The model's gap, not this test's; shown as XFAIL with the figures.
        pytest.xfail(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    assert took < QUICK_BOUND_S
    said = proc.stdout
    # Up front: the plan, its CPU steps only, each with an estimate.
    plan_at = said.index("plan: 3 step(s), about ")
    assert plan_at < said.index("[1/3] CPU per request: ")
    for title in ("1. CPU per request: ~", "2. fit in the model: ~", "3. CPU per command: ~"):
        assert title in said
    assert "not measured (a scenario using the file keeps the model's defaults for them): " \
           "caches, memory, clients, eviction, disk, fork" in said
    # A line as each step ends, with its time against the estimate.
    for i, title in enumerate(("CPU per request", "fit in the model", "CPU per command"), 1):
        assert f"[{i}/3] {title}: done in " in said
    # stderr is no terminal here: no progress bar in it.
    assert "replay/s" not in proc.stderr and "load/s" not in proc.stderr
    # The server it started is gone.
    pid = int(said.split("(pid ")[1].split(",")[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # The file: the per-request and per-command costs, and what it lacks.
    doc = yaml.safe_load(out.read_text())
    cpu = doc["values"]["engine"]["cpu"]
    assert {"read", "write", "wakeup"} <= set(cpu)
    assert set(cpu["commands"]) == {"SET", "GET"}
    assert all(float(str(v).removesuffix("us")) > 0 for v in (cpu["read"], cpu["write"]))
    assert set(doc["not-measured"]) == {"caches", "memory", "clients", "eviction", "disk",
                                        "fork", "commands"}
    assert doc["not-measured"]["fork"]["why"] == "a quick calibration (--quick)"
    assert [s["step"] for s in doc["made"]["steps"]] == ["cpu.loads", "cpu.fit", "cpu.commands"]
    # The command says so at the end, a part a line.
    assert "quick.yaml lacks these; a scenario using it keeps the model's defaults" in said
    assert said.rstrip().endswith("  commands: main-thread CPU of commands other than SET, GET")
    assert "\n  fork: fork time against RSS" in said
