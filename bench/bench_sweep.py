"""A sweep of the S0 deployment on this machine: wall time and points per minute.

The issue's target: 100 points of GitLab's full 60 GB deployment, 30
simulated minutes each, in <= 10 minutes on 2 cores. The grid is SET TTL x
connections per process (10 x 10); ``--points N`` runs N of them and
extrapolates, for a quicker measurement: whole TTL rows of the grid (all ten
pool sizes of a TTL), as in the full sweep each TTL's ten points share one
keyspace (``redsim sweep``'s shared start; ``--no-shared-start`` builds each
one's). The k rows are spread over the TTLs, row (i + 1/2) 10 / k, since a
longer TTL keeps more keys and costs more to build and to run.

Run: ``python bench/bench_sweep.py [--points 100] [--jobs 2] [--duration 30m]``.
The folder is temporary; nothing is reused from an earlier run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from redsim.config.sweep import load_sweep
from redsim.sweep.grid import expand, replication_seed, root_seed
from redsim.sweep.runner import RunTask, run_batch
from redsim.sweep.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import print_json  # noqa: E402


def measure(points: int = 100, jobs: int = 2, duration: str = "30m",
            shared_start: bool = True) -> dict:
    """``points`` of the S0 sweep on ``jobs`` workers: wall time, points per
    minute, the minutes 100 points take at that rate, bursts and failures;
    ``shared_start`` as ``redsim sweep`` does by default (``--no-shared-start``)."""
    spec = load_sweep({
        "name": "bench-s0", "base": str(ROOT / "scenarios" / "gitlab-2022.yaml"),
        "set": {"duration": duration}, "replications": 1,
        "axes": [{"name": "pool-size", "path": "clients[0].pool.max-size",
                  "values": list(range(1, 11))},
                 {"name": "ttl", "path": "clients[0].mix[1].ttl",
                  "log-range": {"start": "20m", "stop": "2w", "num": 10}}]},
        base_dir=ROOT)
    grid = expand(spec)
    seed = replication_seed(root_seed(spec, grid), 0)
    # Grid order runs the TTL fastest: point = pool index x 10 + TTL index.
    k = min(10, -(-points // 10))
    ttls = [int((i + 0.5) * 10 / k) for i in range(k)]
    chosen = [grid[pool * 10 + t] for t in ttls for pool in range(10)][:points]
    with tempfile.TemporaryDirectory(prefix="redsim-bench-sweep-") as out:
        store = RunStore(out)
        t0 = time.perf_counter()
        _, lost = run_batch([RunTask(p.key, seed, p.scenario, shared_start) for p in chosen],
                            store, jobs=jobs, desc=spec.name)
        wall = time.perf_counter() - t0
        # A run lost to a dead worker has no record; the figures are over the rest.
        records = [r for p in chosen if (r := store.get(p.key, seed)) is not None]
    n = len(records)
    per_min = n / wall * 60 if n else 0.0
    return {"points": n, "jobs": jobs, "duration": duration, "wall_s": wall,
            "points_per_min": per_min, "min_per_100": 100 / per_min if per_min else None,
            "sim_s_per_wall_s": n * chosen[0].scenario.duration / wall,
            "bursts": sum(bool(r["summary"].get("burst_detected")) for r in records),
            "shared_starts": sum(bool(r.get("shared_start")) for r in records),
            "errors": [r["error"] for r in records if r["error"]], "lost": lost}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--duration", default="30m")
    ap.add_argument("--no-shared-start", action="store_true",
                    help="build every point's keyspace (the sweep's behaviour before issue #23)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    m = measure(args.points, args.jobs, args.duration, not args.no_shared_start)
    if args.json:
        print_json(m)
        return
    n, wall, errors, lost = m["points"], m["wall_s"], m["errors"], m["lost"]
    print(f"{n} points of S0 x {args.duration} on {args.jobs} workers: {wall:.0f} s wall, "
          f"{m['points_per_min']:.2f} points/min, {m['sim_s_per_wall_s']:.0f} simulated s "
          "per wall s in total")
    print(f"  100 points at this rate: {m['min_per_100']:.1f} min (target <= 10 min)")
    print(f"  mean run {wall * args.jobs / n:.1f} s of a worker; {m['bursts']} of {n} burst"
          + f"; {m['shared_starts']} started from a shared keyspace"
          + (f"; {len(errors)} failed, first: {errors[0]}" if errors else "")
          + (f"; {len(lost)} lost: {lost[0]}" if lost else ""))


if __name__ == "__main__":
    main()
