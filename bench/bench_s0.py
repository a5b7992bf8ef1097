"""Engine speed on the S0 reference: the GitLab scenario with its whole mechanism.

`scenarios/gitlab-2022.yaml` as shipped: 25K req/s from 3 M request sources over
12,000 pooled connections, a 60 GB keyspace (~27 M keys) with eviction, expiry, client query
and reply buffers and clientsCron, 30 simulated minutes with three eviction
bursts. Prints the real-time factor (simulated s / wall s) and simulated requests
per wall second, next to the naive per-request SimPy model (`naive_simpy.py`) of
the same load — one closed-loop source per pooled connection at the engine's
throughput and busy time per request, queueing only, no memory — run for a
shorter span, because it is slow.

Run: ``python bench/bench_s0.py [--minutes 30] [--naive-seconds 5]``. A short
warm-up run first loads (or compiles) the kernel, so compile time is excluded.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import measure_cli, run_engine  # noqa: E402
from naive_simpy import run_naive  # noqa: E402

from redsim import load_scenario  # noqa: E402

SCENARIO = ROOT / "scenarios" / "gitlab-2022.yaml"


def measure(minutes: float = 30.0, naive_seconds: float = 5.0) -> dict:
    """S0 for ``minutes`` simulated, and the naive model of the same load for
    ``naive_seconds``: their figures, and the ratio of their real-time factors."""
    run_engine(2.0, SCENARIO)  # load or compile the kernel
    eng = run_engine(minutes * 60.0, SCENARIO)
    # The naive model gets the same load: one source per pooled connection, the
    # engine's throughput, and its busy time per request as the service time.
    sc = load_scenario(SCENARIO)
    conns = sum(g.processes * g.pool.max_size for g in sc.clients)
    rate = eng["throughput_rps"]
    service = eng["utilisation"] / rate
    naive = run_naive(conns, conns / rate, service, naive_seconds, seed=1)
    return {"engine": eng, "naive": naive, "ratio": eng["rtf"] / naive["rtf"]}


def main() -> None:
    m = measure_cli(__doc__, measure, 30.0)
    if m is None:
        return
    eng, naive = m["engine"], m["naive"]
    print(f"redsim S0     : {eng['sim_s']:.0f} sim-s in {eng['wall_s']:.1f} s wall, "
          f"RTF {eng['rtf']:.1f}, {eng['req_per_wall_s']:,.0f} req/wall-s, "
          f"{eng['bursts']} bursts, {eng['utilisation']:.0%} busy")
    print(f"                of which {eng['build_s']:.1f} s build (preloading the 60 GB "
          f"keyspace); the run alone: RTF {eng['rtf_run']:.1f}")
    print(f"naive SimPy   : {naive['sim_s']:.0f} sim-s in {naive['wall_s']:.1f} s wall, "
          f"RTF {naive['rtf']:.2f}, {naive['req_per_wall_s']:,.0f} req/wall-s "
          f"(queueing only)")
    print(f"ratio engine/naive (RTF): {m['ratio']:.1f}")
    print("target: RTF >= 100 on one core")


if __name__ == "__main__":
    main()
