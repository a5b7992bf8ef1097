"""A sweep of the S0 deployment on this machine: wall time and points per minute.

The issue's target: 100 points of GitLab's full 60 GB deployment, 30
simulated minutes each, in <= 10 minutes on 2 cores. The grid is SET TTL x
connections per process (10 x 10); ``--points N`` runs the first N of them
(in grid order: all TTLs of the first pool sizes) and extrapolates, for a
quicker measurement.

Run: ``python bench/bench_sweep.py [--points 100] [--jobs 2] [--duration 30m]``.
The folder is temporary; nothing is reused from an earlier run.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from redsim.config.sweep import load_sweep
from redsim.sweep.runner import run_sweep

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--duration", default="30m")
    args = ap.parse_args()
    pools = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    n_pools = max(1, -(-args.points // 10))
    spec = load_sweep({
        "name": "bench-s0", "base": str(ROOT / "scenarios" / "gitlab-2022.yaml"),
        "set": {"duration": args.duration}, "replications": 1,
        "axes": [{"name": "pool-size", "path": "clients[0].pool.max-size",
                  "values": pools[:n_pools]},
                 {"name": "ttl", "path": "clients[0].mix[1].ttl",
                  "log-range": {"start": "20m", "stop": "2w", "num": 10}}]},
        base_dir=ROOT)
    with tempfile.TemporaryDirectory(prefix="redsim-bench-sweep-") as out:
        t0 = time.perf_counter()
        res = run_sweep(spec, out, jobs=args.jobs, progress=True)
        wall = time.perf_counter() - t0
    n = len(res.runs)
    sim = n * res.points[0].scenario.duration
    per_min = n / wall * 60
    print(f"{n} points of S0 x {args.duration} on {args.jobs} workers: {wall:.0f} s wall, "
          f"{per_min:.2f} points/min, {sim / wall:.0f} simulated s per wall s in total")
    print(f"  100 points at this rate: {100 / per_min:.1f} min (target <= 10 min)")
    print(f"  mean run {res.runs.shape[0] and wall * args.jobs / n:.1f} s of a worker; "
          f"{int(res.runs['burst_detected'].sum())} of {n} burst")


if __name__ == "__main__":
    main()
