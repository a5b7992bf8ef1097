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


def run_local(fn: Callable[[Any], Any], tasks: list[Any], jobs: int) -> Iterator[tuple[Any, Any]]:
    """A pool of ``jobs`` worker processes, started with ``spawn`` (a clean
    interpreter: no state inherited from a notebook or a progress-bar thread).

    At most ``2 * jobs`` tasks are queued at once, so a killed sweep has few
    runs in flight and memory holds few scenarios.
    """
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)
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
