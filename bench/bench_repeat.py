"""S0's run alone, several times in one process from one keyspace build: the
figure to compare two trees with when the difference is a few per cent.

On these 2-vCPU VMs one `bench_s0.py` run against another differs by up to
±15 %, and a change's few per cent drown in it: on 2026-11-27 three
alternating pairs said a change gained 11 % that eight repeats here showed
was nothing (bench/README.md). This script builds S0's keyspace once, keeps
its image (`model/keyspace_image.py`, the sweeps' shared start), then runs the
same `--seconds` of S0 `--repeat` times, each from a fresh copy of the image,
and prints each run's wall time (the kernel's `run_until` only: no build, no
result) with their mean and standard deviation. The first run, which keeps
the image, is left out.

Compare two trees by alternating them, a few repeats each:

```
for i in 1 2; do
  PYTHONPATH=/tmp/before python bench/bench_repeat.py --repeat 4
  python bench/bench_repeat.py --repeat 4
done
```

Run: ``python bench/bench_repeat.py [--seconds 300] [--repeat 4] [--scenario PATH | --engine]
[--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import add_load_arguments, load_source  # noqa: E402
from bench_s0 import SCENARIO  # noqa: E402


def measure(scenario, seconds: float, repeat: int) -> list[float]:
    """Wall seconds of ``repeat`` runs of ``seconds`` simulated from one keyspace build."""
    from redsim import load_scenario
    from redsim.driver import warm_up
    from redsim.model.keyspace_image import KeyspaceImages
    from redsim.simulation import Simulation

    warm_up()  # load (or compile) the kernel
    sc = load_scenario(scenario, overrides=[f"duration={seconds}"])
    if sc.events:  # the runs below drive the kernel alone, without Simulation's events
        raise SystemExit(f"bench_repeat: {sc.name} has scenario events ({len(sc.events)}), "
                         "which these runs would skip; give a scenario without `events`")
    images = KeyspaceImages()
    walls = []
    for i in range(repeat + 1):
        sim = Simulation(sc, progress=False, keyspace_images=images)
        sim.kernel.start()
        t0 = time.perf_counter()
        sim.kernel.run_until(seconds)
        if i:  # the first run copied the image as it built it
            walls.append(time.perf_counter() - t0)
        del sim
    if images.hits != repeat:
        raise SystemExit(f"bench_repeat: {images.hits} of {repeat} runs started from the image")
    return walls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300.0,
                    help="simulated seconds per run (default 300: S0's first burst)")
    ap.add_argument("--repeat", type=int, default=4, help="runs to time (default 4)")
    add_load_arguments(ap, SCENARIO)
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    a = ap.parse_args()
    if a.repeat < 1:
        raise SystemExit("bench_repeat: --repeat must be at least 1")
    source, name = load_source(a)
    walls = measure(source, a.seconds, a.repeat)
    mean = statistics.fmean(walls)
    sd = statistics.stdev(walls) if len(walls) > 1 else 0.0
    if a.json:
        print(json.dumps({"sim_s": a.seconds, "walls_s": walls, "mean_s": mean, "sd_s": sd,
                          "rtf": a.seconds / mean}))
        return
    print(f"{name}, {a.seconds:g} simulated s, {a.repeat} runs from one build: "
          + ", ".join(f"{x:.2f}" for x in walls)
          + f" s; mean {mean:.2f} s (sd {sd:.2f}), RTF {a.seconds / mean:.1f}")


if __name__ == "__main__":
    main()
