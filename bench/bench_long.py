"""Long horizons: wall time and peak memory of S0 over hours and of a light load over days.

Issue #23's targets: 24 simulated hours of S0 with a peak RSS below 6 GB, and a
light load over 365 simulated days in bounded memory. Each case runs in a
process of its own (``redsim run`` under this interpreter) and reports its
wall time and its peak RSS (``ru_maxrss`` of the finished child), so one case's
memory does not count in the next's.

- ``s0``: ``scenarios/gitlab-2022.yaml`` for ``--hours`` (default 24) simulated
  hours, figures off.
- ``light``: ``LIGHT`` (20 open-loop requests/s, 3 GETs to a SET, 10,000 keys,
  hourly samples) for ``--days`` (default 365) simulated days.

Run: ``python bench/bench_long.py [--hours 24] [--days 365] [--only s0|light]
[--json]``. S0 for 24 h takes ~25 min on the reference VM, the light load for
365 days ~5 min.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIGHT = """\
name: light-load
duration: {days}d
sample-interval: 1h
seed: 1
clients:
  - name: app
    kind: open
    rate: 20/s
    mix: {{GET: 3, SET: 1}}
    keyspace: {{keys: 10000}}
"""
"""The light load: a scenario template with the days to simulate."""


def run_case(scenario: Path, out: Path, *args: str) -> dict:
    """``redsim run scenario`` in a child process: its wall time, peak RSS (MB) and
    the real-time factor it printed."""
    cmd = [sys.executable, "-m", "redsim", "run", str(scenario), "--out", str(out),
           "--no-progress", "--no-plots", *args]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(cmd)} failed:\n{output[-2000:]}")
    rtf = next((line.split("real-time factor of the simulation")[1].strip()
                for line in output.splitlines() if "real-time factor" in line), "")
    return {"wall_s": round(wall, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024),
            "rtf_run": rtf}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--days", type=float, default=365.0)
    ap.add_argument("--only", choices=("s0", "light"))
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args()
    figures = {}
    with tempfile.TemporaryDirectory(prefix="redsim-bench-long-") as tmp:
        tmp = Path(tmp)
        if a.only in (None, "light"):
            light = tmp / "light.yaml"
            light.write_text(LIGHT.format(days=f"{a.days:g}"))
            figures["light"] = {"days": a.days, **run_case(light, tmp / "light")}
        if a.only in (None, "s0"):
            figures["s0"] = {"hours": a.hours, **run_case(
                ROOT / "scenarios" / "gitlab-2022.yaml", tmp / "s0", "--duration",
                f"{a.hours:g}h")}
    if a.json:
        print(json.dumps(figures))
        return
    for name, f in figures.items():
        span = f"{f['days']:g} days" if name == "light" else f"{f['hours']:g} h"
        print(f"{name:<6} {span:>9}: {f['wall_s']:,.0f} s wall, peak RSS {f['peak_rss_mb']:,} MB,"
              f" real-time factor of the run {f['rtf_run']}")
    print("targets: S0 24 h under 6,000 MB; the light load's memory flat in the days")


if __name__ == "__main__":
    main()
