"""Regenerate the async I/O-threads result: Redis 8's I/O threads on 8 and 64 cores (issue #19).

    python results/io_threads_async.py

Runs ``scenarios/sweeps/io-threads-async.yaml`` into ``io-threads-async/``
next to this file (resuming) and draws ``io-threads-async/io_threads_async.png``:
throughput and p99 against ``io-threads`` on an 8-core and a 64-core host,
with Redis 8's and Valkey 8's published figures, and the 8-core host's CPU
by thread; and ``summary.md``, the table behind it.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
OUT = HERE / "io-threads-async"

REDIS8 = (10, 1_157_714)
"""redis/redis PR #13665: io-threads 10, memtier 650 connections, SET:GET 1:1, 128 B."""
VALKEY8 = (8, 1_190_000)
"""Valkey 8.0's announcement (valkey.io, 2024-07-08): 8 I/O threads, 650 clients of SETs,
512 B, 3M keys, c7g.16xlarge (64 cores)."""

PUBLISHED = [
    ("redis/redis PR #13665", "Redis 8 async I/O threads, io-threads 10, memtier 13 x 50 "
     "connections, SET:GET 1:1, 128 B, 3M keys: 1,157,714 ops/s, p99 1.055 ms (host not "
     "described)"),
    ("valkey.io, \"Unlock 1 Million RPS\" (2024-07-08)", "Valkey 8, 8 I/O threads, 650 "
     "clients of SETs, 512 B, 3M keys, c7g.16xlarge: 1.19M requests/s, against 360K with "
     "the old (7.x-style) threads; mean latency 1.792 -> 0.542 ms"),
    ("redis/redis#13874", "Redis 8, TLS, 100 % writes: 163K with no I/O thread, 156K with 2, "
     "367K with 4, 473K with 8 (TLS: not this scenario's costs)"),
]
"""What is published about async I/O threads that this sweep can be read against."""


def figure() -> None:
    import io_threads
    import pandas as pd
    from matplotlib.figure import Figure  # no pyplot: no backend switched, nothing global

    runs = pd.read_csv(OUT / "runs.csv").sort_values(["cores", "io-threads"])
    fig = Figure(figsize=(8, 7.5))
    a1, a2 = fig.subplots(2, 1, sharex=True)
    ax2 = a1.twinx()
    for cores, color in ((64, "tab:green"), (8, "tab:blue")):
        r = runs[runs["cores"] == cores]
        n = r["io-threads"].to_numpy()
        a1.plot(n, r["throughput_rps"] / 1e3, "d-", color=color,
                label=f"throughput, {cores} cores")
        ax2.plot(n, r["latency_p99_s"] * 1e3, "s:", color=color, alpha=0.6,
                 label=f"p99, {cores} cores")
    a1.plot(*REDIS8[:1], REDIS8[1] / 1e3, "k*", ms=12,
            label="Redis 8, PR #13665 (SET:GET 1:1, 128 B)")
    a1.plot(*VALKEY8[:1], VALKEY8[1] / 1e3, "kP", ms=9, mfc="none",
            label="Valkey 8 (SETs, 512 B, 64 cores)")
    a1.axvline(8, color="grey", lw=0.8, ls="--")
    a1.set_ylabel("requests/s (K)")
    a1.set_ylim(bottom=0)
    ax2.set_ylabel("p99 (ms)")
    ax2.set_ylim(bottom=0)
    h1, l1 = a1.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    a1.legend(h1 + h2, l1 + l2, fontsize=7, loc="center right")
    a1.set_title("Redis 8 async I/O threads: 650 connections, SET:GET 1:1, 128 B, 3M keys",
                 fontsize=10)
    r8 = runs[runs["cores"] == 8]
    n = r8["io-threads"].to_numpy()
    a2.stackplot(n, r8["host_cpu_redis_cores"], r8["host_cpu_io_threads_cores"],
                 r8["host_cpu_softirq_cores"] + r8["host_cpu_irq_cores"],
                 labels=["main thread", "I/O threads", "network softirq + IRQ"])
    a2.axhline(8, color="k", lw=0.8, ls="--")
    a2.set_ylabel("8-core host's CPU (cores)")
    a2.set_xlabel("io-threads (the main thread included)")
    a2.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(OUT / "io_threads_async.png", dpi=110)
    lines = ["# Redis 8 async I/O threads on 8 and 64 cores (regenerate: "
             "`python results/io_threads_async.py`)", ""]
    for cores in (64, 8):
        lines += [f"## {cores} cores", "", *io_threads.table(runs[runs["cores"] == cores]), ""]
    at10 = runs[(runs["cores"] == 64) & (runs["io-threads"] == REDIS8[0])]
    if len(at10):
        got = float(at10["throughput_rps"].iloc[0])
        lines += [f"Redis 8 at io-threads 10, 64 cores: model {got:,.0f} req/s against "
                  f"PR #13665's {REDIS8[1]:,} ({got / REDIS8[1] - 1:+.0%}).", ""]
    lines += ["Published, to read it against:", ""]
    lines += [f"- {src}: {what}" for src, what in PUBLISHED]
    lines += ["", "The CPU costs are this project's reference host's (a 2-core VM, "
              "redis-server 7.0), not the published hosts'; the hand-over cost "
              "(engine.cpu.io-handoff, 0.2 us) is an estimate of the cache lines a client "
              "brings from another core, not fitted to these figures."]
    (OUT / "summary.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    import regenerate

    regenerate.sweep_folder("io-threads-async", figure=True)


if __name__ == "__main__":
    main()
