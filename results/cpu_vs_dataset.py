"""Main-thread CPU per request against the dataset's size, on a real Redis (issue #43).

    python results/cpu_vs_dataset.py             # redraw the figure from the CSV
    python results/cpu_vs_dataset.py --measure   # measure again first (~4 min; a
                                                 # throw-away redis-server, 5 GB)

``results/validation/cpu_vs_dataset.csv`` holds the measurements
(``redsim.calibrate.dataset``: GET and SET, 50 connections, 64-byte values,
pipeline 1 and 16, 3 repetitions per dataset; run ``a``: 10 K to 10 M keys,
run ``b``: 300 K, 10 M and 30 M keys at pipeline 16) on the 2-vCPU Intel
Xeon VM, Debian's redis-server 7.0.15, 2026-11-28. The figure draws their
medians and ranges against ``used_memory``, and two model curves:

- the simulator with its default costs (the reference host's per-request
  costs, calibrated on 100,000 keys of 3 B, and the default miss costs,
  ``model/cpu_caches.py``), saturated at each dataset (``MODEL_CSV``, made
  again with ``--model``, ~1 min);
- the miss model fitted to these points (``calibrate/misses.py``): this host's
  base per command and pipeline plus the fitted miss costs, what ``redsim
  calibrate`` writes for this host.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CSV = HERE / "validation" / "cpu_vs_dataset.csv"
PNG = HERE / "validation" / "cpu_vs_dataset.png"
MODEL_CSV = HERE / "validation" / "cpu_vs_dataset_model.csv"
L2, LLC, TLB = 2 << 20, 260 << 20, 6 << 20
"""The VM's L2 and L3 (sysfs) and the default TLB reach."""


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


def model() -> None:
    """The simulator's CPU per request at each dataset of ``CSV``, saturated
    with the real loads' shape, into ``MODEL_CSV``."""
    import pandas as pd

    from redsim.calibrate import replay

    d = pd.read_csv(CSV)
    rows = []
    for keys in sorted(d["keys"].unique()):
        for cmd in ("GET", "SET"):
            for pipeline in (16, 1):
                sc = replay.merge(replay.scenario("7.0", duration=0.3, warmup=0.1),
                                  {"clients": [replay.bench_group(50, pipeline, 0.0, cmd, 64,
                                                                  keys=int(keys))]})
                us = replay.cpu_per_command(replay.run(sc))
                rows.append({"keys": keys, "command": cmd, "pipeline": pipeline,
                             "us_per_request": round(us, 4)})
                print(f"model: {keys:,} keys {cmd} P={pipeline}: {us:.3f} µs", file=sys.stderr)
    pd.DataFrame(rows).to_csv(MODEL_CSV, index=False)


def draw() -> None:
    """The figure from ``CSV`` and ``MODEL_CSV``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from redsim.calibrate import dataset, misses
    from redsim.calibrate.dataset import DatasetPoint

    d = pd.read_csv(CSV)
    pts = [DatasetPoint(**{k: r[k] for k in DatasetPoint.__dataclass_fields__})
           for _, r in d.iterrows()]
    med = dataset.medians(pts)
    fit = misses.fit(med, L2, LLC, TLB)
    a, _, _ = misses.design(med, L2, LLC, TLB)
    x = [fit.base[b] for b in sorted(fit.base)] + [fit.penalty.get(n, 0.0) for n in misses.LEVELS]
    fitted = dict(zip(sorted(med), a @ x, strict=True))
    sim = pd.read_csv(MODEL_CSV) if MODEL_CSV.exists() else None
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
                        color=colour, capsize=3, ls="none", label=f"{cmd}, real (median, range)")
            f = [fitted[(k, 64, cmd, pipeline)] for k in g.index]
            ax.plot(g.mb, f, ls="--", color=colour, label=f"{cmd}, miss model fitted here")
            if sim is not None:
                m = sim[(sim.command == cmd) & (sim.pipeline == pipeline)].set_index("keys")
                m = m.reindex(g.index)
                ax.plot(g.mb, m.us_per_request, ls="-", marker=".", color=colour, alpha=0.6,
                        label=f"{cmd}, simulator, default costs")
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("used_memory, MB (64-byte values)")
        ax.set_title(f"pipeline {pipeline}, 50 connections")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("main-thread CPU per request, µs")
    axes[0].legend(loc="upper left", fontsize=7)
    print(f"miss model: {', '.join(f'{k} {v:.3f}' for k, v in fit.penalty.items())} µs per "
          f"load; points within {fit.worst:.1%}, rms {fit.rms:.1%}")
    fig.suptitle("redis-server 7.0.15 on a 2-vCPU Intel Xeon VM (L2 2 MB/core, L3 260 MB)")
    fig.tight_layout()
    fig.savefig(PNG, dpi=110)
    print(f"wrote {PNG}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--measure", action="store_true", help="measure again before drawing")
    ap.add_argument("--model", action="store_true",
                    help="run the simulator at each dataset again before drawing")
    args = ap.parse_args()
    if args.measure:
        measure()
    if args.model or args.measure:
        model()
    draw()
