"""Run every benchmark, append one row to ``bench/history.csv``, and rewrite the
README's performance table from the latest rows.

    python bench/run_all.py                   # every bench (~12 min on 2 cores)
    python bench/run_all.py --sweep-points 100   # the whole 100-point sweep (~25 min more)
    python bench/run_all.py --table           # only rewrite the README's table

Each bench runs in a process of its own (``python bench/bench_X.py --json``),
one after the other, so one's memory and caches do not colour the next, and
its peak RSS is its own. A row records when (UTC), the commit (``+dirty`` when
the tree had uncommitted changes), the machine (CPU model, cores, memory) and
each bench's figures (not the sweep's peak RSS: its workers exit after it
reports); a bench that failed leaves its columns empty and its error in
``failed``. Timings on a 2-vCPU VM vary by ±15 % from run to run
(bench/README.md): compare rows of one sitting, or several rows.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HISTORY = HERE / "history.csv"
README = ROOT / "README.md"
TABLE_START = "<!-- bench-table:start (bench/run_all.py --table writes this) -->"
TABLE_END = "<!-- bench-table:end -->"
TABLE_ROWS = 6
COLUMNS = (
    "date", "commit", "machine", "cores", "memory_gb", "python", "numba",
    "engine_rtf", "engine_naive_rtf", "engine_ratio", "engine_peak_rss_mb",
    "s0_minutes", "s0_rtf", "s0_rtf_run", "s0_build_s", "s0_naive_rtf", "s0_ratio",
    "s0_peak_rss_mb",
    "persistence_rtf_min", "persistence_rtf_median", "persistence_peak_rss_mb",
    "sweep_points", "sweep_jobs", "sweep_min_per_100",
    "failed",
    "compile_cold_s", "compile_peak_rss_mb", "compile_warm_s",
)
"""history.csv's columns, in order (a new column goes at the end of its group and
the table is rewritten with the old rows' cell empty)."""


def machine() -> dict:
    """The CPU's model name, the cores this process may use, the memory in GB."""
    from redsim.machine import cpu_model

    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    return {"machine": cpu_model(), "cores": len(os.sched_getaffinity(0)),
            "memory_gb": round(mem, 1)}


def commit() -> str:
    """The short commit, with ``+dirty`` when tracked files differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=False).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def run_bench(script: str, *args: str) -> dict:
    """Run ``bench/<script> --json <args>`` and return the JSON it prints last."""
    proc = subprocess.run([sys.executable, str(HERE / script), "--json", *args], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{script} exited with {proc.returncode}: {tail}")
    return json.loads(lines[-1])


def compile_kernel() -> None:
    """Compile the kernel in a process of its own if its cache is cold, so that
    no bench's figures include the compile: its time is left out of each real-time
    factor already, but its memory (~1.9 GB) would be the first bench's peak RSS."""
    from bench_engine import warm_up_apart

    from redsim.model.jit import kernel_compiled

    if kernel_compiled():
        return
    print("compiling the kernel first (its cache is cold; several minutes)", flush=True)
    warm_up_apart()


def measure_all(sweep_points: int, jobs: int) -> dict:
    """Every bench's figures as one history row."""
    import numba

    row: dict = {"date": datetime.datetime.now(datetime.timezone.utc)
                 .strftime("%Y-%m-%dT%H:%MZ"), "commit": commit(), **machine(),
                 "python": platform.python_version(), "numba": numba.__version__}
    failed = []
    compile_kernel()
    steps = [
        ("compile", "bench_compile.py", ()),
        ("engine", "bench_engine.py", ()),
        ("s0", "bench_s0.py", ()),
        ("persistence", "bench_persistence.py", ()),
        ("sweep", "bench_sweep.py", ("--points", str(sweep_points), "--jobs", str(jobs))),
    ]
    for name, script, args in steps:
        print(f"{name}: python bench/{script} {' '.join(args)}", flush=True)
        try:
            m = run_bench(script, *args)
        except RuntimeError as exc:
            print(f"  failed: {exc}", flush=True)
            failed.append(name)
            continue
        row.update(flatten(name, m))
        print("  " + ", ".join(f"{k}={v}" for k, v in flatten(name, m).items()), flush=True)
    row["failed"] = " ".join(failed)
    return row


def flatten(name: str, m: dict) -> dict:
    """One bench's JSON as history columns."""
    if name == "compile":
        return {"compile_cold_s": m["cold_s"], "compile_peak_rss_mb": m["cold_peak_rss_mb"],
                "compile_warm_s": m["warm_s"]}
    rss = round(m["peak_rss_mb"])
    if name in ("engine", "s0"):
        eng, naive = m["engine"], m["naive"]
        out = {f"{name}_rtf": round(eng["rtf"], 1), f"{name}_naive_rtf": round(naive["rtf"], 2),
               f"{name}_ratio": round(m["ratio"], 1), f"{name}_peak_rss_mb": rss}
        if name == "s0":
            out.update(s0_minutes=round(eng["sim_s"] / 60), s0_rtf_run=round(eng["rtf_run"], 1),
                       s0_build_s=round(eng["build_s"], 1))
        return out
    if name == "persistence":
        rtfs = sorted(r["rtf_run"] for r in m["runs"].values())
        return {"persistence_rtf_min": round(rtfs[0], 1),
                "persistence_rtf_median": round(rtfs[len(rtfs) // 2], 1),
                "persistence_peak_rss_mb": rss}
    return {"sweep_points": m["points"], "sweep_jobs": m["jobs"],
            "sweep_min_per_100": round(m["min_per_100"], 1) if m["min_per_100"] else ""}


def read_history() -> list[dict]:
    if not HISTORY.exists():
        return []
    with HISTORY.open(newline="") as f:
        return list(csv.DictReader(f))


def append_row(row: dict) -> None:
    """Append ``row``; rewrite the file when its header is not ``COLUMNS``."""
    rows = read_history()
    header = None
    if HISTORY.exists():
        with HISTORY.open(newline="") as f:
            header = next(csv.reader(f), None)
    if header is not None and tuple(header) != COLUMNS:
        with HISTORY.open("w", newline="") as f:
            w = csv.DictWriter(f, COLUMNS, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
        header = list(COLUMNS)
    with HISTORY.open("a", newline="") as f:
        w = csv.DictWriter(f, COLUMNS, extrasaction="ignore")
        if header is None:
            w.writeheader()
        w.writerow({c: row.get(c, "") for c in COLUMNS})


def _with_ratio(row: dict, rtf: str, ratio: str) -> str:
    """A real-time factor and, when measured, its multiple of the naive SimPy
    model's in the same sitting: "81.3 (33.4× naive)". The multiple is the
    figure to compare across days: these VMs run 20 % slower some hours, and
    the naive model slows with them."""
    if not row.get(rtf):
        return "—"
    if not row.get(ratio):
        return str(row[rtf])
    return f"{row[rtf]} ({row[ratio]}× naive)"


def table(rows: list[dict]) -> str:
    """The README's performance table: the latest ``TABLE_ROWS`` rows of history."""
    lines = [
        "| date (UTC) | commit | machine | engine RTF (target ≥ 150) | S0 RTF, whole run "
        "(target ≥ 100) | S0 RTF, run alone | S0 keyspace build | S0 peak RSS "
        "| 100-point S0 sweep (target ≤ 10 min) | cold compile (target ≤ 60 s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows[-TABLE_ROWS:]:
        sweep = (f"{r['sweep_min_per_100']} min ({r['sweep_points']} points run, "
                 f"{r['sweep_jobs']} workers)" if r.get("sweep_min_per_100") else "—")
        lines.append(
            f"| {r['date']} | {r['commit']} | {r['machine']}, {r['cores']} cores "
            f"| {_with_ratio(r, 'engine_rtf', 'engine_ratio')} "
            f"| {_with_ratio(r, 's0_rtf', 's0_ratio')} "
            f"| {r.get('s0_rtf_run') or '—'} "
            f"| {r['s0_build_s'] + ' s' if r.get('s0_build_s') else '—'} "
            f"| {r['s0_peak_rss_mb'] + ' MB' if r.get('s0_peak_rss_mb') else '—'} "
            f"| {sweep} "
            f"| {r['compile_cold_s'] + ' s' if r.get('compile_cold_s') else '—'} |")
    return "\n".join(lines)


def write_table() -> None:
    """Replace the README's table between its markers with ``table(history)``."""
    text = README.read_text()
    if TABLE_START not in text or TABLE_END not in text:
        raise SystemExit(f"{README}: no {TABLE_START} … {TABLE_END} block to rewrite")
    head, rest = text.split(TABLE_START, 1)
    _, tail = rest.split(TABLE_END, 1)
    README.write_text(head + TABLE_START + "\n" + table(read_history()) + "\n" + TABLE_END
                      + tail)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", action="store_true",
                    help="only rewrite the README's table from bench/history.csv")
    ap.add_argument("--sweep-points", type=int, default=10,
                    help="S0 sweep points to run (the 100-point time is extrapolated)")
    ap.add_argument("--jobs", type=int, default=2, help="sweep workers")
    a = ap.parse_args()
    if not a.table:
        row = measure_all(a.sweep_points, a.jobs)
        append_row(row)
        print(f"appended a row to {HISTORY.relative_to(ROOT)}")
    write_table()
    print(f"rewrote the performance table in {README.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
