"""Where a sweep's runs execute: in this process, a local process pool, or Dask.

Each executor takes picklable tasks and a top-level function, and yields
``(task, outcome)`` as runs finish, in completion order; an outcome is the
function's return value, or the exception that kept the run from finishing
(a worker that died). The order of completion never reaches the tables: runs
are stored by their identity and the tables are built in grid order, so every
executor gives the same tables.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

EXECUTORS = ("local", "dask")


def default_jobs() -> int:
    """Worker processes for the local pool: one per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def run_serial(fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
    """Run each task here, in order (``--jobs 1``: easiest to debug)."""
    for t in tasks:
        yield t, fn(t)


PR_SET_PDEATHSIG = 1
"""``prctl`` option (linux/prctl.h): the signal the kernel sends this process
when its parent dies."""
PARENT_POLL_S = 1.0
"""How often a worker without ``prctl`` checks that its parent is alive."""


def _set_pdeathsig(sig: int) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent dies; False
    where that is not available (not Linux, no libc, a refusing kernel)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent_pid: int, interval: float) -> None:
    """Exit this process as soon as its parent is gone (polled)."""
    while True:
        time.sleep(interval)
        # Orphans are re-parented (to init or a subreaper): the parent's pid is
        # then no longer ours, even if the number has been reused since.
        if os.getppid() != parent_pid:
            os._exit(1)


def die_with_parent(parent_pid: int, use_prctl: bool = True,
                    interval: float = PARENT_POLL_S) -> str:
    """Make this (worker) process end when ``parent_pid``, its parent, ends.

    A sweep's parent killed with SIGKILL runs no cleanup, and its workers
    (~0.5 GB each) would run on, orphaned, until their queue breaks or for
    ever. On Linux the kernel sends SIGKILL to the worker when the parent dies
    (``prctl(PR_SET_PDEATHSIG)``, as ``redsim.live.server`` does for a
    redis-server); elsewhere, or with ``use_prctl=False``, a daemon thread
    polls the parent every ``interval`` seconds. Either way, a parent that
    died before this ran (the death signal is only sent for a death after the
    call) makes the process exit at once.

    Returns:
        ``"prctl"`` or ``"poll"``: how the process is tied to its parent.
    """
    how = "prctl" if use_prctl and _set_pdeathsig(signal.SIGKILL) else "poll"
    if os.getppid() != parent_pid:
        os._exit(1)
    if how == "poll":
        threading.Thread(target=_watch_parent, args=(parent_pid, interval),
                         name="redsim-parent-watch", daemon=True).start()
    return how


def run_local(fn: Callable[[Any], Any], tasks: list[Any], jobs: int) -> Iterator[tuple[Any, Any]]:
    """A pool of ``jobs`` worker processes, started with ``spawn`` (a clean
    interpreter: no state inherited from a notebook or a progress-bar thread).

    At most ``2 * jobs`` tasks are queued at once, so a killed sweep has few
    runs in flight and memory holds few scenarios. Each worker dies with this
    process (``die_with_parent``), also when it is killed with SIGKILL.
    """
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx,
                               initializer=die_with_parent, initargs=(os.getpid(),))
    pending: dict[Future, Any] = {}
    it = iter(tasks)
    try:
        while True:
            while len(pending) < 2 * jobs:
                t = next(it, None)
                if t is None:
                    break
                pending[pool.submit(fn, t)] = t
            if not pending:
                break
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                t = pending.pop(f)
                try:
                    yield t, f.result()
                except Exception as exc:  # noqa: BLE001 - reported per run
                    yield t, exc
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def run_dask(fn: Callable[[Any], Any], tasks: list[Any],
             scheduler: Any) -> Iterator[tuple[Any, Any]]:
    """Send the tasks to a Dask distributed cluster.

    Args:
        scheduler: the scheduler's address (``tcp://host:8786``) or a
            ``distributed.Client`` already connected (used as is, not closed).
    """
    try:
        from distributed import Client, as_completed
    except ImportError:  # pragma: no cover - depends on the installation
        raise RuntimeError("--executor dask needs dask.distributed: "
                           "pip install 'redsim[dask]'") from None
    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        futures = {client.submit(fn, t, pure=False): t for t in tasks}
        for f in as_completed(futures):
            t = futures[f]
            try:
                yield t, f.result()
            except Exception as exc:  # noqa: BLE001 - reported per run
                yield t, exc
    finally:
        if own:
            client.close()


def run_tasks(fn: Callable[[Any], Any], tasks: list[Any], *, executor: str = "local",
              jobs: int | None = None, scheduler: Any = None) -> Iterator[tuple[Any, Any]]:
    """Dispatch to the chosen executor (``local`` with ``jobs=1`` runs serially)."""
    if executor == "dask":
        if scheduler is None:
            raise ValueError("--executor dask needs --scheduler ADDRESS")
        return run_dask(fn, tasks, scheduler)
    if executor != "local":
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, not {executor!r}")
    jobs = default_jobs() if jobs is None else jobs
    if jobs <= 1 or len(tasks) <= 1:
        return run_serial(fn, tasks)
    return run_local(fn, tasks, min(jobs, len(tasks)))
