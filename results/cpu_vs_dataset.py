"""Main-thread CPU per request against the dataset's size, on a real Redis (issue #43).

    python results/cpu_vs_dataset.py             # redraw the figure from the CSV
    python results/cpu_vs_dataset.py --measure   # measure again first (~4 min; a
                                                 # throw-away redis-server, 5 GB)

``results/validation/cpu_vs_dataset.csv`` holds the measurements
(``redsim.calibrate.dataset``: GET and SET, 50 connections, 64-byte values,
pipeline 1 and 16, 3 repetitions per dataset; run ``a``: 10 K to 10 M keys,
run ``b``: 300 K, 10 M and 30 M keys at pipeline 16) on the 2-vCPU Intel
Xeon VM, Debian's redis-server 7.0.15, 2026-11-28. The figure draws their
medians and ranges against ``used_memory``. The model's curve joins it when
the cache-miss costs are in the model (``redsim/model/cpu_caches.py``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CSV = HERE / "validation" / "cpu_vs_dataset.csv"
PNG = HERE / "validation" / "cpu_vs_dataset.png"


def measure() -> None:
    """Both runs again, into ``CSV``."""
    import pandas as pd

    from redsim.calibrate import dataset
    from redsim.calibrate.measure import CpuLoad, Target
    from redsim.live.server import RedisServer

    frames = []
    runs = (("a", (10_000, 100_000, 1_000_000, 3_000_000, 10_000_000), dataset.LOADS),
            ("b", (300_000, 10_000_000, 30_000_000), (CpuLoad(50, 16, 600_000),)))
    for run, sizes, loads in runs:
        with RedisServer() as srv:
            t = Target.connect(srv.host, srv.port, can_write=True,
                               say=lambda m: print(m, file=sys.stderr))
            pts = dataset.measure(t, sizes=sizes, value_size=64, loads=loads, reps=3)
        frame = pd.DataFrame([p.__dict__ for p in pts])
        frame.insert(0, "run", run)
        frames.append(frame)
    pd.concat(frames, ignore_index=True).to_csv(CSV, index=False)


def draw() -> None:
    """The figure from ``CSV``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    d = pd.read_csv(CSV)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for ax, pipeline in zip(axes, (16, 1), strict=True):
        for cmd, colour in (("GET", "tab:blue"), ("SET", "tab:orange")):
            s = d[(d.command == cmd) & (d.pipeline == pipeline)]
            if s.empty:
                continue
            us = "us_per_request"
            g = s.groupby("keys").agg(mb=("used_memory_mb", "max"), med=(us, "median"),
                                      lo=(us, "min"), hi=(us, "max"))
            ax.errorbar(g.mb, g.med, yerr=[g.med - g.lo, g.hi - g.med], marker="o",
                        color=colour, capsize=3, label=f"{cmd}, real (median, range)")
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("used_memory, MB (64-byte values)")
        ax.set_title(f"pipeline {pipeline}, 50 connections")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("main-thread CPU per request, µs")
    axes[0].legend(loc="upper left")
    fig.suptitle("redis-server 7.0.15 on a 2-vCPU Intel Xeon VM (L2 2 MB/core, L3 260 MB)")
    fig.tight_layout()
    fig.savefig(PNG, dpi=110)
    print(f"wrote {PNG}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--measure", action="store_true", help="measure again before drawing")
    if ap.parse_args().measure:
        measure()
    draw()
