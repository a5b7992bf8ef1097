"""The kernel's cold compile and warm load: wall time and peak memory.

A first run of redsim compiles the kernel with numba and caches the machine
code on disk (``redsim.model.jit``); every later run loads it. This bench
measures both, each in a fresh process of its own, with a fresh cache
directory (``REDSIM_CACHE_DIR`` set to a temporary folder):

- **cold**: ``redsim.kernel_compile.ensure_compiled``, the compile of
  everything ``redsim.driver.warm_up`` needs (the functions a run calls),
  from nothing, in the process of its own it starts (the peak RSS is the
  larger of the two processes');
- **warm**: ``warm_up`` in a new process that finds the cache.

``--profile`` compiles in the cold process itself, records numba's compile
events (``numba.core.event``) and prints where the time went: each compiled function's
own time (its inclusive compile less the compiles it started), the compiler
passes summed over all functions, and the time under numba's LLVM lock.

Run: ``python bench/bench_compile.py [--profile] [--top 25] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
profile = sys.argv[1] == "1"
if profile:
    from numba.core import event
    rec = event.RecordingListener()
    for kind in ("numba:compile", "numba:run_pass", "numba:llvm_lock"):
        event.register(kind, rec)
t1 = time.perf_counter()
from redsim.kernel_compile import ensure_compiled
from redsim.driver import warm_up
import_s = time.perf_counter() - t1
# cold: compiles (by running warm_up once), in a process of its own unless profiled
if ensure_compiled(quiet=True, separate_process=not profile) is None:
    warm_up()  # warm: loads the cache
rss = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF,
                                                        resource.RUSAGE_CHILDREN))
out = {"wall_s": time.perf_counter() - t0, "import_s": import_s, "peak_rss_mb": rss / 1024}
if profile:
    evs, sigs = [], {}
    for ts, ev in rec.buffer:
        d = ev.data or {}
        if ev.kind == "numba:compile":
            disp = d.get("dispatcher")
            name = getattr(getattr(disp, "py_func", None), "__qualname__", str(disp))
            mod = getattr(getattr(disp, "py_func", None), "__module__", "")
            name = f"{mod.rsplit('.', 1)[-1]}.{name}"
            if ev.is_start:
                sigs.setdefault(name, []).append(str(d.get("args")))
        elif ev.kind == "numba:run_pass":
            name = d.get("name", "?")
        else:
            name = ""
        evs.append((ts, ev.kind, ev.is_start, name))
    out["events"] = evs
    out["signatures"] = sigs
print("RESULT " + json.dumps(out))
"""


def _child(cache_dir: str, profile: bool) -> dict:
    """Run ``warm_up`` in a new interpreter with ``cache_dir`` as the kernel cache."""
    env = dict(os.environ, REDSIM_CACHE_DIR=cache_dir)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, "1" if profile else "0"], env=env,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"the compile failed:\n{proc.stderr[-3000:]}")
    out = json.loads(lines[-1][len("RESULT "):])
    out["process_s"] = wall  # interpreter start-up included
    return out


def exclusive_times(events: list) -> tuple[dict, dict, float]:
    """From numba's start/end events: each function's own compile time (seconds,
    summed over its signatures, without the nested compiles it started), each
    compiler pass's own time summed over functions (without nested passes), and
    the total time under the LLVM lock."""
    func: dict[str, float] = defaultdict(float)
    passes: dict[str, float] = defaultdict(float)
    llvm = 0.0
    stacks: dict[str, list] = {"numba:compile": [], "numba:run_pass": []}
    own = {"numba:compile": func, "numba:run_pass": passes}
    llvm_start = None
    for ts, kind, is_start, name in events:
        if kind == "numba:llvm_lock":
            if is_start:
                llvm_start = ts
            elif llvm_start is not None:
                llvm += ts - llvm_start
                llvm_start = None
            continue
        stack = stacks[kind]
        if is_start:
            stack.append([name, ts, 0.0])  # name, start, time spent in children
            continue
        name, start, children = stack.pop()
        total = ts - start
        if kind == "numba:run_pass":  # "pass_name [function]": summed by pass
            name = name.split(" [", 1)[0]
        own[kind][name] += total - children
        if stack:
            stack[-1][2] += total
    return dict(func), dict(passes), llvm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", action="store_true", help="print where the cold compile went")
    ap.add_argument("--top", type=int, default=25, help="functions and passes to list")
    ap.add_argument("--json", action="store_true", help="print one JSON line for run_all.py")
    ap.add_argument("--no-warm", action="store_true", help="skip the warm-load measurement")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="redsim-compile-") as cache:
        cold = _child(cache, args.profile)
        warm = None if args.no_warm else _child(cache, False)
    res = {"cold_s": round(cold["wall_s"], 1), "cold_process_s": round(cold["process_s"], 1),
           "cold_peak_rss_mb": round(cold["peak_rss_mb"]),
           "import_s": round(cold["import_s"], 2)}
    if warm is not None:
        res.update(warm_s=round(warm["wall_s"], 2), warm_process_s=round(warm["process_s"], 2),
                   warm_peak_rss_mb=round(warm["peak_rss_mb"]))
    if args.json:
        print(json.dumps(res))
        return
    print(f"cold compile : {cold['wall_s']:.1f} s ({cold['process_s']:.1f} s with the "
          f"interpreter's start), peak RSS {cold['peak_rss_mb']:.0f} MB")
    if warm is not None:
        print(f"warm load    : {warm['wall_s']:.2f} s ({warm['process_s']:.2f} s with the "
              f"interpreter's start), peak RSS {warm['peak_rss_mb']:.0f} MB")
    if args.profile:
        func, passes, llvm = exclusive_times(cold["events"])
        total = sum(func.values())
        print(f"\ncompiles: {len(func)} functions, {total:.1f} s in all; "
              f"{llvm:.1f} s under the LLVM lock")
        print(f"\n{'own s':>8}  function (top {args.top})")
        for name, s in sorted(func.items(), key=lambda kv: -kv[1])[:args.top]:
            print(f"{s:8.2f}  {name}")
        many = {k: v for k, v in cold["signatures"].items() if len(v) > 1}
        print(f"\n{len(many)} functions compiled for more than one signature "
              f"({sum(len(v) for v in many.values()) - len(many)} extra compiles):")
        for name, sig in sorted(many.items(), key=lambda kv: -len(kv[1]))[:args.top]:
            print(f"{len(sig):4d}  {name}: {'; '.join(s[:80] for s in sig[:3])}")
        print(f"\n{'own s':>8}  compiler pass (top {args.top})")
        for name, s in sorted(passes.items(), key=lambda kv: -kv[1])[:args.top]:
            print(f"{s:8.2f}  {name}")
    print(f"(this process's own peak RSS: "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
