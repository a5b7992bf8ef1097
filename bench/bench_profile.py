"""Where S0's run spends its *time*, by kernel function and by instruction,
from `perf` samples: the memory stalls `bench_instructions.py` cannot see.

Callgrind counts instructions, which are the same from run to run but blind to
cache and TLB misses; on this kind of VM those are about a quarter of S0's run
(a random row of a 27 M-key table). This script samples the run instead:
`perf record -e cpu-clock` (a software clock, which needs no hardware
counters, so it works on VMs that have none) on this process, only while
`Simulation.run()` runs, at ~3 kHz. Each sample's address is looked up in the
kernel's compiled functions (their addresses come from the cached object code
of `event_loop.run`, as in `bench_instructions.py`) or, outside the kernel, by
shared object.

With `--instructions N` it also prints, per function among the top ones, its
N most-sampled instructions with the few before them (`objdump` of the cached
object): a sample lands on the instruction *after* one the CPU waited on, so
a load or prefetch followed by a heavily sampled instruction is a miss.
Field offsets in those instructions (`[r15+0x5f0]`) are 8 × the field's
index in `state.World._fields`.

Run: ``python bench/bench_profile.py [--seconds 300] [--scenario PATH |
--engine] [--top 25] [--instructions 0]``. Needs ``perf`` (Debian: ``apt-get install
linux-perf``) and root or ``kernel.perf_event_paranoid`` ≤ 1. Samples are
time, so the other core's load moves them: run it on an idle machine.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import add_load_arguments, load_source  # noqa: E402
from bench_instructions import (  # noqa: E402
    _kernel_functions,
    _short,
    kernel_objects,
    object_symbols,
)
from bench_s0 import SCENARIO  # noqa: E402

RATE = 2999  # samples per second: not a multiple of the kernel's timer ticks


def _record(scenario, seconds: float, data: Path) -> dict:
    """Run the scenario for ``seconds`` simulated under ``perf record``; returns the
    run's figures and the kernel's function table."""
    from redsim import load_scenario
    from redsim.driver import warm_up
    from redsim.simulation import Simulation

    warm_up()  # load (or compile) the kernel before sampling
    sim = Simulation(load_scenario(scenario, overrides=[f"duration={seconds}"]),
                     progress=False)
    perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(RATE),
                             "-p", str(os.getpid()), "-o", str(data)],
                            stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)  # perf attaches
        t0 = time.perf_counter()
        result = sim.run()
        wall = time.perf_counter() - t0
    finally:
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=60)
    return {"wall_s": wall, "sim_s": seconds,
            "requests": int(result.summary["requests_completed"]),
            "functions": _kernel_functions()}


def _samples(data: Path) -> list[tuple[int, str]]:
    """(address, shared object) of every sample in ``data``."""
    out = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,dso"],
                         capture_output=True, text=True, check=True).stdout
    samples = []
    for line in out.splitlines():
        cols = line.split(None, 1)
        if cols:
            samples.append((int(cols[0], 16), cols[1].strip("() ") if len(cols) > 1 else "?"))
    return samples


def _attribute(samples, funcs):
    """Samples per kernel function (or ``outside the kernel: <object>``), and
    per (function, offset in it)."""
    funcs = sorted(funcs)
    starts = [f[0] for f in funcs]
    per, at = Counter(), Counter()
    for addr, dso in samples:
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0 and addr < funcs[i][0] + funcs[i][1]:
            per[funcs[i][2]] += 1
            at[(funcs[i][2], addr - funcs[i][0])] += 1
        else:
            per["outside the kernel: " + Path(dso).name] += 1
    return per, at


def _hot_instructions(objects: list[tuple[Path, list]], name: str, hits: dict[int, int],
                      total: int, n: int) -> None:
    """Print function ``name``'s ``n`` most-sampled instructions, each with the
    three before it (the one waited on is usually among them). ``objects``:
    the kernel's object files and their symbols (``object_symbols``)."""
    for obj, symbols in objects:
        for offset, size, symbol in symbols:
            if _short(symbol) != name:
                continue
            dis = subprocess.run(
                ["objdump", "-d", "--no-show-raw-insn", "-M", "intel",
                 f"--start-address={offset}", f"--stop-address={offset + size}", str(obj)],
                capture_output=True, text=True).stdout
            lines = []
            for line in dis.splitlines():
                m = re.match(r"\s*([0-9a-f]+):\s*(.*)", line)
                if m:  # numba's mangled names are kilobytes long: cut them
                    lines.append((int(m.group(1), 16) - offset,
                                  re.sub(r"<_ZN[^>+]*", "<", m.group(2))))
            index = {off: i for i, (off, _) in enumerate(lines)}
            for off, c in sorted(hits.items(), key=lambda x: -x[1])[:n]:
                i = index.get(off)
                if i is None:
                    continue
                print(f"    {c / total:6.2%} at +0x{off:x}")
                for j in range(max(0, i - 3), i + 1):
                    print(f"{'':14}{lines[j][0]:6x}: {lines[j][1][:90]}")
            return


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300.0,
                    help="simulated seconds of the run (default 300: S0's first burst)")
    add_load_arguments(ap, SCENARIO)
    ap.add_argument("--top", type=int, default=25, help="functions to list (default 25)")
    ap.add_argument("--instructions", type=int, default=0, metavar="N",
                    help="also the N most-sampled instructions of each of the top 5 functions")
    ap.add_argument("--json", action="store_true", help="print the shares as one JSON line")
    a = ap.parse_args()
    if not shutil.which("perf"):
        raise SystemExit("bench_profile: perf is not installed "
                         "(Debian: apt-get install linux-perf)")
    with tempfile.TemporaryDirectory(prefix="redsim-perf-") as tmp:
        data = Path(tmp) / "perf.data"
        source, name = load_source(a)
        run = _record(source, a.seconds, data)
        samples = _samples(data)
    if not samples:
        raise SystemExit("bench_profile: perf recorded no samples (is perf_event_paranoid > 1 "
                         "and this not root?)")
    per, at = _attribute(samples, run["functions"])
    total = len(samples)
    ns = run["wall_s"] * 1e9 / run["requests"]
    if a.json:
        print(json.dumps({"wall_s": run["wall_s"], "requests": run["requests"],
                          "ns_per_request": ns, "samples": total,
                          "shares": {k: v / total for k, v in per.most_common()}}))
        return
    print(f"{name}, {a.seconds:g} simulated s: {run['wall_s']:.1f} s of wall time, "
          f"{run['requests']:,} requests, {ns:.0f} ns per request, {total:,} samples")
    print(f"{'share':>7} {'ns/request':>10}  function")
    for name, c in per.most_common(a.top):
        print(f"{c / total:7.1%} {ns * c / total:10.1f}  {name}")
    if a.instructions:
        with tempfile.TemporaryDirectory(prefix="redsim-prof-") as tmp:
            objects = []  # written and read once for the five functions
            for k, data in enumerate(kernel_objects()):
                obj = Path(tmp) / f"k{k}.o"
                obj.write_bytes(data)
                objects.append((obj, object_symbols(obj)))
            for fn, _c in [x for x in per.most_common() if "outside" not in x[0]][:5]:
                print(f"\n{fn}:")
                hits = {off: c for (f, off), c in at.items() if f == fn}
                _hot_instructions(objects, fn, hits, total, a.instructions)


if __name__ == "__main__":
    main()
