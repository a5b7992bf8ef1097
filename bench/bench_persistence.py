"""Engine speed on the persistence scenarios (seeds S1 and S2).

Prints, per scenario, simulated seconds per wall second (RTF) and commands
per wall second, build (preload) time apart. The S1 runs are the heaviest
loads redsim ships per simulated second: 150K and 675K pipelined SETs/s,
with a BGSAVE and copy-on-write; S2 is one client replaying a trace.

Run: ``python bench/bench_persistence.py``. A short run of each first loads
(or compiles) the kernel, so compile time is excluded.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import print_json, run_engine  # noqa: E402

SCENARIOS = ("aof-fsync-always", "aof-fsync-everysec", "fork-thp-ec2", "fork-thp-bare-metal",
             "fork-thp-off-bare-metal")


def measure() -> dict:
    """Each persistence scenario's run, by name (``run_engine``'s figures plus
    ``requests_per_wall_s``, the run alone)."""
    from redsim import load_scenario

    run_engine(2.0, ROOT / "scenarios" / "aof-fsync-always.yaml")  # load the kernel
    out = {}
    for name in SCENARIOS:
        path = ROOT / "scenarios" / f"{name}.yaml"
        seconds = float(load_scenario(path).duration)
        r = run_engine(seconds, path)
        r["requests_per_wall_s"] = r["throughput_rps"] * seconds / (r["wall_s"] - r["build_s"])
        out[name] = r
    return out


def main() -> None:
    runs = measure()
    if "--json" in sys.argv[1:]:
        print_json({"runs": runs})
        return
    for name, r in runs.items():
        print(f"{name:<26} {r['sim_s']:>5.0f} sim-s in {r['wall_s']:>5.1f} s wall "
              f"(build {r['build_s']:.1f} s): RTF {r['rtf']:.1f}, run alone "
              f"{r['rtf_run']:.1f}; {r['requests_per_wall_s']:,.0f} requests/wall-s")


if __name__ == "__main__":
    main()
