"""Regenerate the I/O-threads result: Redis 6/7's threaded I/O on an 8-core host (issue #19).

    python results/io_threads.py

Runs ``scenarios/sweeps/io-threads.yaml`` into ``io-threads/`` next to this
file (resuming) and draws ``io-threads/io_threads.png``: throughput and p99
against ``io-threads``, with the host's CPU by activity, next to what Redis
itself says of the feature; and ``summary.md``, the table behind it.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
OUT = HERE / "io-threads"

PUBLISHED = [
    ("redis.conf 7.0.15 (THREADED I/O)", "\"possible to easily speedup two times Redis\"; "
     "\"if you have a 8 cores, try to use 6 threads\"; \"Using more than 8 threads is "
     "unlikely to help much\""),
    ("devhands.io, \"Valkey: a million RPS with a fly in the ointment\" (2024)", "Redis: "
     "~160K with one thread, growing \"by about 2-2.5 times\" with io-threads, falling past 8"),
    ("valkey.io, \"Unlock 1 Million RPS\" (2024-08-05)", "Valkey 7.2 (Redis 7's threads), 8 "
     "I/O threads, 650 clients of SETs, 512 B, 3M keys, 64 cores: 360K, mean 1.792 ms; its "
     "command line leaves io-threads-do-reads at no. The model on that load, io-threads 9, "
     "reads on the main thread, is held to it within 20 % (tests/test_host.py::"
     "test_valkey72_threads_reach_the_published_throughput_and_latency)"),
    ("redis/redis#15008", "Redis 6.0, io-threads 4: ~190K vs ~164K SET/s for 3.2 (+15 %), "
     "redis-benchmark -c 200 -d 128 --threads 4"),
    ("redis/redis#13874", "Redis 8, TLS, 100 % writes: 163K with no I/O thread, 156K with 2, "
     "367K with 4, 473K with 8 (async threads, not this model)"),
]
"""What is published about threaded I/O that this sweep can be read against."""


def table(runs) -> list[str]:
    """A markdown table of a sweep over io-threads: throughput (and against the
    first row's), p99, and the host's CPU by thread."""
    base = float(runs["throughput_rps"].iloc[0])
    lines = ["| io-threads | throughput (req/s) | vs 1 | p99 | host CPU: main / I/O threads / "
             "network (cores) |", "|---|---|---|---|---|"]
    for _, r in runs.iterrows():
        lines.append(f"| {int(r['io-threads'])} | {r['throughput_rps']:,.0f} | "
                     f"{r['throughput_rps'] / base:.2f}x | {r['latency_p99_s'] * 1e3:.3f} ms | "
                     f"{r['host_cpu_redis_cores']:.2f} / {r['host_cpu_io_threads_cores']:.2f} / "
                     f"{r['host_cpu_softirq_cores'] + r['host_cpu_irq_cores']:.2f} |")
    return lines


def figure() -> None:
    import pandas as pd
    from matplotlib.figure import Figure  # no pyplot: no backend switched, nothing global

    runs = pd.read_csv(OUT / "runs.csv").sort_values("io-threads")
    n = runs["io-threads"].to_numpy()
    base = float(runs["throughput_rps"].iloc[0])
    fig = Figure(figsize=(8, 7))
    a1, a2 = fig.subplots(2, 1, sharex=True)
    a1.plot(n, runs["throughput_rps"] / 1e3, "d-", color="tab:green", label="throughput")
    a1.plot(n, 2 * base / 1e3 * (n > 1) + base / 1e3 * (n == 1), "k:", lw=1,
            label="redis.conf: \"speedup two times\"")
    a1.axvline(8, color="grey", lw=0.8, ls="--", label="the host's 8 cores")
    a1.set_ylabel("requests/s (K)")
    a1.set_ylim(bottom=0)
    ax2 = a1.twinx()
    ax2.plot(n, runs["latency_p99_s"] * 1e3, "s-", color="tab:orange", label="p99")
    ax2.set_ylabel("p99 (ms)")
    ax2.set_ylim(bottom=0)
    h1, l1 = a1.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    a1.legend(h1 + h2, l1 + l2, fontsize=8, loc="lower right")
    a1.set_title("Redis 7 threaded I/O (reads too) on 8 cores: 400 connections, SET:GET 1:1, "
                 "128 B", fontsize=10)
    a2.stackplot(n, runs["host_cpu_redis_cores"], runs["host_cpu_io_threads_cores"],
                 runs["host_cpu_softirq_cores"] + runs["host_cpu_irq_cores"],
                 labels=["main thread", "I/O threads (working or spinning)",
                         "network softirq + IRQ"])
    a2.axhline(8, color="k", lw=0.8, ls="--")
    a2.set_ylabel("host CPU (cores)")
    a2.set_xlabel("io-threads (the main thread included)")
    a2.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(OUT / "io_threads.png", dpi=110)
    lines = ["# Redis 6/7 I/O threads on an 8-core host (regenerate: "
             "`python results/io_threads.py`)", "", *table(runs)]
    lines += ["", "Published, to read it against:", ""]
    lines += [f"- {src}: {what}" for src, what in PUBLISHED]
    lines += ["", "What stays on the main thread, besides every command: the poll's part of "
              "each read (engine.cpu.poll-event, 0.3 us, from Valkey's measure of epoll_wait), "
              "its own share of the reads and writes, the wait for the slowest thread, and "
              "taking back each client another thread read or wrote (engine.cpu.io-handoff, "
              "0.2 us, an estimate of the cache lines a client brings from another core)."]
    (OUT / "summary.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    import regenerate

    regenerate.sweep_folder("io-threads", figure=True)


if __name__ == "__main__":
    main()
