"""Regenerate the persistence results (seeds S1 and S2, issue #4).

    python results/persistence.py

Writes, next to this file: one run folder per scenario (``redsim run``'s
files), ``s2-aof-fsync/endpoint_times.png`` (the endpoint's time per
``appendfsync`` policy against the seed's figures) and
``s1-fork-thp/fork_spike.png`` (latency and copy-on-write around the BGSAVE,
2 MB vs 4 KB pages), and a ``summary.md`` of the figures per seed.
"""

from __future__ import annotations

from pathlib import Path

import redsim
from redsim.plots import plot_endpoint_times, plot_fork_spike

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE.parent / "scenarios"

S2 = {"always": "aof-fsync-always", "everysec": "aof-fsync-everysec",
      "always, no SADD": "get-cache-data"}
S2_PUBLISHED = {"always": 10.5, "everysec": 0.94}
S1 = {"EC2, THP": ("fork-thp-ec2", 5.0), "bare metal, THP": ("fork-thp-bare-metal", 3.0),
      "bare metal, 4 KB pages": ("fork-thp-off-bare-metal", 3.0)}


def main() -> None:
    lines = ["# Persistence results (regenerate: `python results/persistence.py`)", ""]
    out = HERE / "s2-aof-fsync"
    runs = {}
    for label, name in S2.items():
        runs[label] = redsim.simulate(SCENARIOS / f"{name}.yaml")
        runs[label].save(out / name)
    plot_endpoint_times({k: r.trace_passes["duration_s"] for k, r in runs.items()},
                        out / "endpoint_times.png", published=S2_PUBLISHED,
                        title="Seed S2: /get_cache per appendfsync policy")
    lines += ["## S2: /get_cache endpoint time", "", "| run | model (mean) | published |",
              "|---|---|---|"]
    for label, r in runs.items():
        pub = S2_PUBLISHED.get(label)
        lines.append(f"| {label} | {r.summary['trace_pass_mean_s']:.2f} s | "
                     + (f"{pub} s |" if pub else "faster than everysec |"))
    out = HERE / "s1-fork-thp"
    lines += ["", "## S1: latency after BGSAVE", "",
              "| run | fork() | worst latency | copy-on-write peak | published |",
              "|---|---|---|---|---|"]
    published = {"EC2, THP": "fork ~6 ms, spikes ~300 ms",
                 "bare metal, THP": "339 ms", "bare metal, 4 KB pages": "21 ms"}
    series = {}
    for label, (name, _) in S1.items():
        r = redsim.simulate(SCENARIOS / f"{name}.yaml")
        r.save(out / name)
        series[label] = r
        lines.append(f"| {label} | {r.summary['latest_fork_usec'] / 1e3:.1f} ms | "
                     f"{r.summary['latency_max_s'] * 1e3:.0f} ms | "
                     f"{r.summary['cow_peak_bytes'] / 2**20:,.0f} MB | {published[label]} |")
    plot_fork_spike({k: series[k].timeseries for k in ("bare metal, THP",
                                                       "bare metal, 4 KB pages")},
                    out / "fork_spike.png", t_fork=3.0,
                    title="Seed S1 (b): BGSAVE at 675K SET/s over 15 M keys")
    plot_fork_spike({"EC2, THP": series["EC2, THP"].timeseries}, out / "fork_spike_ec2.png",
                    t_fork=5.0, title="Seed S1 (a): BGSAVE at 150K SET/s over 5 M keys")
    (HERE / "persistence.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
