"""Instructions per simulated request on S0, counted by callgrind: a speed figure
the VM's noise cannot move.

Timed pairs of `bench_s0.py` spread by ±15 % from run to run on this kind of VM,
more than the few per cent a mechanism is allowed to cost. This script counts
the machine instructions the run itself executes (the keyspace build and the
kernel load are left out), which is the same from one run to the next to a few
parts per million, so two commits can be compared in one run each.

It re-runs itself under ``valgrind --tool=callgrind --instr-atstart=no`` and
switches the instrumentation on only around ``Simulation.run()``, through a
tiny C shim over ``<valgrind/callgrind.h>`` built with gcc on first use (Debian:
``apt-get install valgrind``). Instructions are not time: a cache miss costs no
more instructions than a hit, so a change that touches more memory per request
shows here less than on the clock.

Valgrind's CPU has no AVX-512, so a kernel compiled for this host's CPU would
be compiled again under it (hours). Both the native warm-up and the traced run
therefore use ``NUMBA_CPU_NAME=generic`` and a cache of their own
(``$REDSIM_CACHE_DIR``, by default ``~/.cache/redsim-generic``): the first use
compiles the kernel once more, natively (about 8 minutes). Generic code runs
somewhat more instructions than host-tuned code; compare counts only with
counts.

With ``--by-function`` it also says where they go: the kernel's compiled
functions (each ``step``, with the ``leaf`` functions numba inlined into it)
and the rest (Python between the kernel's calls, numpy), per request. The
functions' addresses come from the symbols of the cached object code of
``event_loop.run`` (``nm``) looked up in the loaded library; callgrind's
per-instruction self costs (``--dump-instr=yes``) are summed over them.

Run: ``python bench/bench_instructions.py [--seconds 120] [--scenario PATH]
[--by-function]``; prints instructions per simulated request and in total. About 2 minutes of wall
time per 100 simulated seconds of S0, plus a few minutes for the 27 M-key build
under valgrind.
"""

from __future__ import annotations

import argparse
import ctypes
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import warm_up_apart  # noqa: E402
from bench_s0 import SCENARIO  # noqa: E402

SHIM_C = r"""
#include <valgrind/callgrind.h>
void redsim_cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void redsim_cg_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT("run"); }
"""
INNER = "REDSIM_CALLGRIND_INNER"


def _shim(workdir: Path) -> ctypes.CDLL:
    """Build (once per run) and load the start/stop shim."""
    src, lib = workdir / "cg_shim.c", workdir / "cg_shim.so"
    src.write_text(SHIM_C)
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return ctypes.CDLL(str(lib))


def _inner(scenario: Path, seconds: float, workdir: Path, by_function: bool) -> None:
    """Runs under valgrind: build untraced, run traced, print the request count
    (and, ``by_function``, the kernel's functions).

    The redsim imported is the one on PYTHONPATH (so another commit's tree can
    be counted with this script), else the installed one.
    """
    from redsim import load_scenario
    from redsim.simulation import Simulation

    shim = _shim(workdir)
    sc = load_scenario(scenario, overrides=[f"duration={seconds}"])
    sim = Simulation(sc, progress=False)
    shim.redsim_cg_start()
    r = sim.run()
    shim.redsim_cg_stop()
    print(f"REQUESTS {r.summary['requests_completed']}", flush=True)
    if by_function:
        for start, size, name in _kernel_functions():
            print(f"FUNC {start:x} {size} {name}", flush=True)


def _short(symbol: str) -> str:
    """``redsim.model.db.set_key`` from numba's mangled name (``_ZN6redsim5model...``)."""
    if not symbol.startswith("_ZN"):
        return symbol
    parts, i = [], 3
    while i < len(symbol) and symbol[i].isdigit():
        j = i
        while symbol[j].isdigit():
            j += 1
        n = int(symbol[i:j])
        parts.append(symbol[j:j + n])
        i = j + n
    return ".".join(parts[2:]) if parts[:2] == ["redsim", "model"] else ".".join(parts)


def kernel_objects() -> list[bytes]:
    """The ELF object code numba cached for ``event_loop.run`` (the whole
    kernel: every ``step`` it calls is in it), one per cache entry."""
    import struct

    from redsim.model.jit import kernel_cache_dir

    out = []
    for nbc in sorted(kernel_cache_dir().rglob("event_loop.run-*.nbc")):
        data = nbc.read_bytes()
        i = data.find(b"\x7fELF")
        if i < 0:
            continue
        shoff, = struct.unpack_from("<Q", data, i + 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, i + 0x3A)
        out.append(data[i:i + shoff + shentsize * shnum])
    return out


def object_symbols(obj: Path) -> list[tuple[int, int, str]]:
    """(offset, size, mangled name) of the functions defined in object file ``obj`` (``nm``)."""
    nm = subprocess.run(["nm", "-S", "--defined-only", str(obj)],
                        capture_output=True, text=True).stdout
    out = []
    for line in nm.splitlines():
        cols = line.split()
        if len(cols) == 4 and cols[2] in "TtWw":
            out.append((int(cols[0], 16), int(cols[1], 16), cols[3]))
    return out


def _kernel_functions() -> list[tuple[int, int, str]]:
    """(address, size, name) of the functions in the loaded ``event_loop.run``."""
    from redsim.model import event_loop

    lib = next(iter(event_loop.run.overloads.values())).library
    out = []
    for data in kernel_objects():
        with tempfile.NamedTemporaryFile(suffix=".o") as obj:
            obj.write(data)
            obj.flush()
            symbols = object_symbols(Path(obj.name))
        for _offset, size, symbol in symbols:
            try:
                addr = lib.get_pointer_to_function(symbol)
            except Exception:  # noqa: BLE001 - a symbol the engine did not keep
                continue
            if addr:
                out.append((addr, size, _short(symbol)))
    return out


def _run_dump(workdir: Path) -> Path:
    """The dump taken at the end of the run (``CALLGRIND_DUMP_STATS_AT("run")``),
    told from the one at the program's end by its header's trigger line."""
    def trigger(path: Path) -> str:  # the header's first lines
        with path.open(errors="replace") as f:
            return "".join(itertools.islice(f, 20))

    dumps = [p for p in workdir.glob("callgrind.out*")
             if "Trigger: Client Request: run" in trigger(p)]
    if len(dumps) != 1:
        raise SystemExit(f"bench_instructions: expected one dump of the run in {workdir}, "
                         f"found {len(dumps)}")
    return dumps[0]


def _totals(dump: Path) -> int:
    """The instruction total of a dump: its header says "summary: 0", its
    "totals:" line has the count."""
    with dump.open() as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    raise SystemExit(f"bench_instructions: no instruction total in {dump}")


def _self_costs(dump: Path) -> tuple[dict[int, int], dict[int, str]]:
    """Self instructions per instruction address of the run's dump (written
    with ``--dump-instr=yes --compress-pos=no``: every cost line is its
    absolute address, its source line and its cost; the line after
    ``calls=`` is a call's inclusive cost, left out), and the object file
    (``ob=``) each address is in."""
    costs: dict[int, int] = {}
    where: dict[int, str] = {}
    names: dict[str, str] = {}  # callgrind's compressed "(id) name" strings
    ob = "?"
    skip = False
    with dump.open() as f:
        for line in f:
            if line.startswith(("ob=", "cob=")):  # either may name an object first
                ref, _, name = line.partition("=")[2].strip().partition(" ")
                if name:
                    names[ref] = name
                if line.startswith("ob="):
                    ob = names.get(ref, ref)
            elif line.startswith("calls="):
                skip = True
            elif line.startswith("0x"):
                if skip:
                    skip = False
                    continue
                cols = line.split()  # positions "instr line", then the cost (Ir)
                addr = int(cols[0], 16)
                costs[addr] = costs.get(addr, 0) + int(cols[-1])
                where[addr] = ob
    return costs, where


def _by_function(funcs: list[tuple[int, int, str]], costs: dict[int, int],
                 where: dict[int, str], requests: int) -> None:
    import bisect

    funcs.sort()
    starts = [f[0] for f in funcs]
    per: dict[str, int] = {}
    for addr, cost in costs.items():
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0 and addr < funcs[i][0] + funcs[i][1]:
            name = funcs[i][2]
        else:  # outside the kernel: by shared object (libpython, numpy, libm ...)
            name = "outside the kernel: " + Path(where.get(addr, "?")).name
        per[name] = per.get(name, 0) + cost
    total = sum(per.values())
    print(f"{'instructions per request':>26}  share  function")
    for name, cost in sorted(per.items(), key=lambda x: -x[1]):
        if cost / total < 0.001:
            break
        print(f"{cost / requests:26,.1f}  {cost / total:5.1%}  {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=120.0,
                    help="simulated seconds of the run (default 120)")
    ap.add_argument("--scenario", type=Path, default=SCENARIO)
    ap.add_argument("--by-function", action="store_true",
                    help="also the instructions per request of each kernel function")
    a = ap.parse_args()
    if os.environ.get(INNER):
        _inner(a.scenario, a.seconds, Path(os.environ[INNER]), a.by_function)
        return
    if not shutil.which("valgrind"):
        raise SystemExit("bench_instructions: valgrind is not installed "
                         "(Debian: apt-get install valgrind)")
    env = dict(os.environ)
    env.setdefault("NUMBA_CPU_NAME", "generic")
    env.setdefault("REDSIM_CACHE_DIR", str(Path.home() / ".cache" / "redsim-generic"))
    # Load (or compile) the kernel natively first: compiling under valgrind
    # would take hours.
    warm_up_apart(env)
    with tempfile.TemporaryDirectory(prefix="redsim-cg-") as tmp:
        work = Path(tmp)
        env[INNER] = str(work)
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
               *(["--dump-instr=yes", "--compress-pos=no"] if a.by_function else []),
               f"--callgrind-out-file={work}/callgrind.out.%p", sys.executable,
               __file__, "--seconds", str(a.seconds), "--scenario", str(a.scenario),
               *(["--by-function"] if a.by_function else [])]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        m = re.search(r"^REQUESTS (\d+)", p.stdout, re.M)
        if p.returncode or not m:
            sys.stderr.write(p.stdout[-3000:] + p.stderr[-3000:])
            raise SystemExit(f"bench_instructions: the traced run failed ({p.returncode})")
        dump = _run_dump(work)
        n, ir = int(m.group(1)), _totals(dump)
        print(f"{a.scenario.name}: {a.seconds:.0f} sim-s, {n:,} requests, "
              f"{ir:,} instructions in the run, {ir / n:,.0f} per request")
        if a.by_function:
            funcs = [(int(x, 16), int(size), name) for x, size, name in
                     re.findall(r"^FUNC (\w+) (\d+) (.+)$", p.stdout, re.M)]
            _by_function(funcs, *_self_costs(dump), n)


if __name__ == "__main__":
    main()
