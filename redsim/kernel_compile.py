"""The kernel's first compile: one process compiles, the others wait, and the user is told.

No Redis source: how redsim gets its machine code. numba compiles the kernel
(``redsim/model``) on first use and caches it on disk (``model.jit``); a run
that finds the cache starts at once. A run that does not pays the compile, so
everything that builds a kernel goes through ``ensure_compiled`` first:

- it takes a file lock beside the cache directory, so two processes that start
  cold at once (two sweep workers, a notebook and a CLI run, two pytest
  workers) do not both compile: one compiles, the others wait for it and then
  load its cache. numba writes each cache file whole (a temporary file renamed
  over), and the waiters read only once the lock is free, so none loads a
  half-written cache;
- it compiles in a process of its own, then loads the cache like any later
  run (``_compile_in_child``: compiled in place, the kernel ran ~3× slower for
  the rest of the process);
- it says on stderr, once per process, that it is compiling, why, roughly how
  long it takes on this machine (the last compile measured here, else the
  reference VM's figure), where the cache is, and shows a progress bar of the
  kernel functions compiled;
- it records the time it took (``compile-times.json`` beside the caches), for
  the next estimate.

``redsim compile`` calls it ahead of time (an image build, a CI step, a Dask
worker's start-up).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
from pathlib import Path

REFERENCE_COMPILE_S = 50.0
"""Seconds of a cold compile on a 2-vCPU Intel Xeon VM (CPython 3.11, numba
0.68; ``bench/bench_compile.py``: 49.1 and 49.7 s on 2026-11-28), the estimate
shown before this machine has compiled once."""

_ready = False
"""True once this process has seen the kernel compiled (no further look at the disk)."""

_busy = False
"""True while this process compiles: the warm-up run's own kernel must not
ask again."""


def cache_base() -> Path:
    """The folder holding every kernel cache (``$REDSIM_CACHE_DIR`` or
    ``~/.cache/redsim``): each ``kernel-<hash>`` in it is one code version's
    machine code, and can be deleted freely."""
    from redsim.model.jit import kernel_cache_dir

    return kernel_cache_dir().parent


def _machine() -> str:
    """This machine's key in ``compile-times.json``: its CPU and how many."""
    from redsim.machine import cpu_model

    return f"{cpu_model()}, {os.cpu_count()} cpus"


def _times_file() -> Path:
    return cache_base() / "compile-times.json"


def _read_times() -> dict:
    try:
        data = json.loads(_times_file().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _last_compile() -> dict:
    """What ``_record`` kept of the last compile on this machine ({} before one)."""
    last = _read_times().get(_machine())
    return last if isinstance(last, dict) else {}


def estimate_s() -> tuple[float, str]:
    """Seconds a cold compile should take here, and where the figure comes from."""
    seconds = _last_compile().get("seconds")
    if isinstance(seconds, (int, float)):
        return float(seconds), "the last compile on this machine"
    return REFERENCE_COMPILE_S, "a 2-vCPU VM"


def expected_functions() -> int | None:
    """How many kernel functions the last compile here compiled (the progress
    bar's total), or None before the first."""
    n = _last_compile().get("functions")
    return n if isinstance(n, int) and n > 0 else None


def _record(seconds: float, functions: int) -> None:
    times = _read_times()
    times[_machine()] = {"seconds": round(seconds, 1), "functions": functions}
    tmp = _times_file().with_suffix(".tmp")
    with contextlib.suppress(OSError):
        tmp.write_text(json.dumps(times, indent=1) + "\n")
        os.replace(tmp, _times_file())


class _Progress:
    """A numba compile-event listener that moves a tqdm bar, one step per kernel
    function compiled (``numba:compile`` ends)."""

    def __init__(self, total: int | None, show: bool) -> None:
        from tqdm import tqdm

        self.count = 0
        self.bar = tqdm(total=total, unit="fn", desc="redsim: compiling", leave=False,
                        file=sys.stderr, dynamic_ncols=True, disable=not show,
                        mininterval=1.0)

    def __enter__(self) -> _Progress:
        from numba.core import event

        class Listener(event.Listener):
            def on_start(_, ev) -> None:
                pass

            def on_end(_, ev) -> None:
                self.count += 1
                if self.bar.total is not None and self.count > self.bar.total:
                    self.bar.total = self.count
                self.bar.update(1)

        self._listener = Listener()
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc) -> None:
        from numba.core import event

        event.unregister("numba:compile", self._listener)
        self.bar.close()


@contextlib.contextmanager
def _compile_lock(path: Path, say):
    """An exclusive ``flock`` on ``path``; says once that it waits when another
    process holds it. The lock goes with the process, even a killed one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            say(f"redsim: waiting for {holder}, which is compiling the kernel into "
                f"{path.with_suffix('')}")
            fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}")
        f.flush()
        try:
            yield
        finally:
            f.seek(0)
            f.truncate()


def _compile_here(show: bool) -> int:
    """Compile the kernel in this process (by running ``warm_up``, which calls
    what a run calls); returns how many kernel functions it compiled."""
    global _busy
    from redsim.driver import warm_up

    _busy = True
    try:
        with _Progress(expected_functions(), show) as bar:
            warm_up()
    finally:
        _busy = False
    return bar.count


def _child_command(show: bool) -> list[str]:
    """The command of the process that compiles: this interpreter, importing
    this copy of redsim whatever the working directory."""
    root = str(Path(__file__).resolve().parent.parent)
    code = (f"import sys; sys.path.insert(0, {root!r}); "
            f"from redsim.kernel_compile import _child_main; _child_main({show!r})")
    return [sys.executable, "-c", code]


def _child_main(show: bool) -> None:
    """The compiling process: compile, then print the number of functions."""
    print(f"compiled {_compile_here(show)}", flush=True)


def _compile_in_child(show: bool) -> int:
    """Compile the kernel in a process of its own, which writes the cache;
    returns how many functions it compiled. This process then loads the
    cache like any later run. Compiled in the process that runs, the kernel
    ran ~3× slower for the rest of that process (S0: real-time factor 27
    against 80, ``bench/bench_s0.py`` with a cold cache): numba links each
    function's callers to the machine code of the callee's own library,
    which ``model.jit`` leaves without the whole-program optimisation that
    the cached ``entry`` code has. The compile's ~1 GB of memory also goes
    with its process."""
    import subprocess

    proc = subprocess.run(_child_command(show), stdout=subprocess.PIPE, text=True,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"redsim: the kernel's compile failed (its process exited with "
                           f"status {proc.returncode}; numba's message is above)")
    said = [ln for ln in proc.stdout.splitlines() if ln.startswith("compiled ")]
    return int(said[-1].split()[1]) if said else 0


def ensure_compiled(quiet: bool = False, progress: bool | None = None,
                    separate_process: bool = True) -> float | None:
    """Make sure the kernel's machine code is in the cache: return None if it
    already was (nothing printed), else compile it (or wait for another process
    that does) and return the seconds it took. ``quiet``: print nothing;
    ``progress``: show the bar (default: when stderr is a terminal);
    ``separate_process``: compile in a process of its own and load its cache
    (``_compile_in_child``), as every run should; False compiles here (for
    ``bench/bench_compile.py --profile``, which records numba's events)."""
    global _ready
    from redsim.model.jit import kernel_cache_dir, kernel_compiled

    if _ready or _busy or os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return None
    if kernel_compiled():
        _ready = True
        return None

    def say(msg: str) -> None:
        if not quiet:
            print(msg, file=sys.stderr, flush=True)

    cache = kernel_cache_dir()
    t0 = time.perf_counter()
    with _compile_lock(cache.with_name(cache.name + ".lock"), say):
        if kernel_compiled():  # another process compiled it while we waited
            _ready = True
            return time.perf_counter() - t0
        est, source = estimate_s()
        say(f"redsim: compiling the simulation kernel with numba: this code version has no "
            f"machine code in {cache} yet (once per install, code or numba version; "
            f"about {est:.0f} s, as on {source})...")
        show = (not quiet) and (sys.stderr.isatty() if progress is None else progress)
        count = _compile_in_child(show) if separate_process else 0
        if not kernel_compiled():  # in this process, or the cache could not be written
            if separate_process:
                say(f"redsim: the compile left no machine code in {cache} (is it writable?); "
                    f"compiling in this process instead")
            count = _compile_here(show)
        took = time.perf_counter() - t0
        _ready = True
        _record(took, count)
        say(f"redsim: compiled {count} kernel functions in {took:.0f} s")
        return took


__all__ = ["REFERENCE_COMPILE_S", "cache_base", "ensure_compiled", "estimate_s",
           "expected_functions"]
