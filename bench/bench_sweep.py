"""A sweep of the S0 deployment on this machine: wall time and points per minute.

The issue's target: 100 points of GitLab's full 60 GB deployment, 30
simulated minutes each, in <= 10 minutes on 2 cores. The grid is SET TTL x
connections per process (10 x 10); ``--points N`` runs N of them spread over
both axes (grid index 37 j mod 100, so every pool size and TTL is visited in
turn: the first N in grid order would all be pool size 1, the cheapest runs)
and extrapolates, for a quicker measurement.

Run: ``python bench/bench_sweep.py [--points 100] [--jobs 2] [--duration 30m]``.
The folder is temporary; nothing is reused from an earlier run.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from redsim.config.sweep import load_sweep
from redsim.sweep.grid import expand, replication_seed, root_seed
from redsim.sweep.runner import RunTask, run_batch
from redsim.sweep.store import RunStore

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--duration", default="30m")
    args = ap.parse_args()
    spec = load_sweep({
        "name": "bench-s0", "base": str(ROOT / "scenarios" / "gitlab-2022.yaml"),
        "set": {"duration": args.duration}, "replications": 1,
        "axes": [{"name": "pool-size", "path": "clients[0].pool.max-size",
                  "values": list(range(1, 11))},
                 {"name": "ttl", "path": "clients[0].mix[1].ttl",
                  "log-range": {"start": "20m", "stop": "2w", "num": 10}}]},
        base_dir=ROOT)
    grid = expand(spec)
    seed = replication_seed(root_seed(spec, grid), 0)
    # 37 is coprime with 100: j -> 37 j mod 100 visits every grid point once.
    points = [grid[(37 * j) % len(grid)] for j in range(min(args.points, len(grid)))]
    with tempfile.TemporaryDirectory(prefix="redsim-bench-sweep-") as out:
        store = RunStore(out)
        t0 = time.perf_counter()
        _, lost = run_batch([RunTask(p.key, seed, p.scenario) for p in points], store,
                            jobs=args.jobs, desc=spec.name)
        wall = time.perf_counter() - t0
        # A run lost to a dead worker has no record; the figures are over the rest.
        records = [r for p in points if (r := store.get(p.key, seed)) is not None]
    n = len(records)
    sim = n * points[0].scenario.duration
    per_min = n / wall * 60
    bursts = sum(bool(r["summary"].get("burst_detected")) for r in records)
    print(f"{n} points of S0 x {args.duration} on {args.jobs} workers: {wall:.0f} s wall, "
          f"{per_min:.2f} points/min, {sim / wall:.0f} simulated s per wall s in total")
    print(f"  100 points at this rate: {100 / per_min:.1f} min (target <= 10 min)")
    errors = [r["error"] for r in records if r["error"]]
    print(f"  mean run {wall * args.jobs / n:.1f} s of a worker; {bursts} of {n} burst"
          + (f"; {len(errors)} failed, first: {errors[0]}" if errors else "")
          + (f"; {len(lost)} lost: {lost[0]}" if lost else ""))


if __name__ == "__main__":
    main()
