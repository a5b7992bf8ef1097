"""Engine speed on the reference load, next to a naive per-request SimPy model.

Reference (issue #2): closed-loop sources over 10,000 connections offering
~25K req/s, the main thread ~80 % busy, 10 simulated minutes. Prints simulated
requests per wall second and the real-time factor (simulated s / wall s) of
both, and their ratio. Run: ``python bench/bench_engine.py [--minutes 10]``.
The first run also compiles the kernel (cached afterwards); a warm-up run on
a short horizon excludes that from the figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from naive_simpy import run_naive  # noqa: E402

from redsim import load_scenario  # noqa: E402
from redsim.simulation import Simulation  # noqa: E402

SERVICE_US = 32.0  # main-thread time per request: 25K req/s at ~80 % busy
# Main-thread time a request costs outside the GET itself with the default CPU
# model: read 2.5 + reply write 3.5 + about one iteration 1.0 µs, plus ~1 µs of
# per-byte, cron and accept work spread over requests.
OVERHEAD_US = 8.0
REFERENCE = {
    "name": "bench-reference", "seed": 1,
    "server": {"maxclients": 10000},
    "network": {"rtt": "200us"},
    "engine": {"cpu": {"commands": {"GET": {"fixed": f"{SERVICE_US - OVERHEAD_US}us"}}}},
    "clients": [{"processes": 10000, "threads": 1, "pool": {"max-size": 1},
                 "think": {"distribution": "exponential", "mean": "400ms"},
                 "mix": {"GET": 1}}],
}


def print_json(figures: dict) -> None:
    """Print ``figures`` as one JSON line with the peak RSS of this process and its
    children, MB (what ``run_all.py`` reads)."""
    import json
    import resource

    rss_kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                 resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    print(json.dumps({**figures, "peak_rss_mb": rss_kb / 1024}, default=str))


def measure_cli(doc: str, measure, minutes: float) -> dict | None:
    """The command line of ``bench_engine`` and ``bench_s0``: ``--minutes``,
    ``--naive-seconds``, ``--json``. Returns ``measure``'s figures to print, or
    None when they went out as JSON."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=minutes)
    ap.add_argument("--naive-seconds", type=float, default=5.0)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args()
    m = measure(a.minutes, a.naive_seconds)
    if a.json:
        print_json(m)
        return None
    return m


def add_load_arguments(ap: argparse.ArgumentParser, default: Path) -> None:
    """The load a bench runs: ``--scenario PATH`` (``default``), or ``--engine``
    for this bench's reference load (``REFERENCE``)."""
    ap.add_argument("--scenario", type=Path, default=default)
    ap.add_argument("--engine", action="store_true",
                    help="bench_engine.py's reference load (10,000 pools) instead of --scenario")


def load_source(a: argparse.Namespace) -> tuple[object, str]:
    """The load ``add_load_arguments`` parsed: (a scenario path or dict, its name)."""
    if a.engine:
        return REFERENCE, "engine reference"
    return a.scenario, a.scenario.name


def warm_up_apart(env: dict | None = None) -> None:
    """Load (or compile) the kernel in a child process, under ``env`` (this
    process's environment if None): the compile's time and memory stay out of
    the caller's, and a child can compile for another CPU or cache directory."""
    import subprocess

    subprocess.run([sys.executable, "-c", "from redsim.driver import warm_up; warm_up()"],
                   cwd=Path(__file__).resolve().parents[1], check=True, env=env)


def run_engine(seconds: float, source=REFERENCE) -> dict:
    """Time one run of ``source`` (a scenario dict or path) for ``seconds`` simulated."""
    sc = load_scenario(source, overrides=[f"duration={seconds}"])
    t0 = time.perf_counter()
    sim = Simulation(sc, progress=False)
    t1 = time.perf_counter()
    r = sim.run()
    wall = time.perf_counter() - t0
    n = r.summary["requests_completed"]
    return {"sim_s": seconds, "wall_s": wall, "build_s": t1 - t0, "rtf": seconds / wall,
            "rtf_run": seconds / (wall - (t1 - t0)),
            "req_per_wall_s": n / wall, "utilisation": r.summary["utilisation"],
            "throughput_rps": r.summary["throughput_rps"], "bursts": r.summary.get("bursts")}


def measure(minutes: float = 10.0, naive_seconds: float = 5.0) -> dict:
    """The reference load for ``minutes`` simulated and the naive model for
    ``naive_seconds``: their figures, and the ratio of their real-time factors."""
    run_engine(1.0)  # compile / load the cached kernel
    eng = run_engine(minutes * 60.0)
    naive = run_naive(10000, 0.4, SERVICE_US * 1e-6, naive_seconds, seed=1)
    return {"engine": eng, "naive": naive, "ratio": eng["rtf"] / naive["rtf"]}


def main() -> None:
    m = measure_cli(__doc__, measure, 10.0)
    if m is None:
        return
    eng, naive = m["engine"], m["naive"]
    print(f"redsim engine : {eng['sim_s']:.0f} sim-s in {eng['wall_s']:.1f} s wall, "
          f"RTF {eng['rtf']:.2f}, {eng['req_per_wall_s']:,.0f} req/wall-s, "
          f"{eng['throughput_rps']:,.0f} req/s at {eng['utilisation']:.0%} busy")
    print(f"naive SimPy   : {naive['sim_s']:.0f} sim-s in {naive['wall_s']:.1f} s wall, "
          f"RTF {naive['rtf']:.2f}, {naive['req_per_wall_s']:,.0f} req/wall-s")
    print(f"ratio engine/naive (RTF): {m['ratio']:.2f}")


if __name__ == "__main__":
    main()
