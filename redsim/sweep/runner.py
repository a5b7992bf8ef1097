"""Running a sweep: every point x replication, stored as it finishes, resumable.

``run_sweep`` expands the grid, skips the runs already on disk, sends the rest
to an executor, stores each run the moment it finishes, and writes the tables
from everything on disk — also when it is interrupted, so the tables always
describe the finished runs. ``--resume`` after a kill runs only what is
missing, and the final tables equal an uninterrupted sweep's.
"""

from __future__ import annotations

import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from redsim.config.schema import Scenario
from redsim.config.sweep import SweepSpec, dump_spec
from redsim.result import FigureWarning, draw_guarded
from redsim.sweep.executors import run_tasks
from redsim.sweep.grid import (
    DEFAULT_MAX_POINTS,
    Point,
    axis_quantity,
    expand,
    replication_seed,
    root_seed,
)
from redsim.sweep.store import RunStore, atomic_write_bytes, model_version, write_table
from redsim.sweep.tables import aggregate_table, tidy_table


class SweepError(Exception):
    """A sweep that cannot start or continue as asked (e.g. its folder holds runs)."""


@dataclass(frozen=True)
class RunTask:
    """One run to execute: a validated scenario and a seed; ``shared_start``:
    start from the keyspace image the process kept from an earlier run with
    the same keyspace fields and seed, if it has one (``keyspace_image``)."""

    key: str
    seed: int
    scenario: Scenario
    shared_start: bool = False


_IMAGES: Any = None
"""This process's keyspace images (one at a time), made on first use."""


def keyspace_images() -> Any:
    """This process's ``KeyspaceImages`` (a worker's, kept from run to run)."""
    global _IMAGES
    if _IMAGES is None:
        from redsim.model.keyspace_image import KeyspaceImages

        _IMAGES = KeyspaceImages(keep=1)
    return _IMAGES


def drop_keyspace_images() -> None:
    """Forget this process's keyspace images (their memory goes back)."""
    global _IMAGES
    _IMAGES = None


def execute(task: RunTask) -> dict[str, Any]:
    """Simulate one run; never raises for a failing scenario: the error is returned.

    Returns:
        ``key``, ``seed``, ``summary`` (the Result's summary; empty on error),
        ``error`` ("" or "ExceptionType: message" and the innermost frames),
        ``phases`` (the cycle table's rows), ``peaks`` (``run_peaks``),
        ``wall_s``, ``shared_start`` (True if the keyspace came from an image),
        and ``model`` (the hash of the model's source that ran it).
    """
    from redsim.driver import simulate

    t0 = time.perf_counter()
    cycles: list[dict] = []
    peaks: dict[str, float] = {}
    images = keyspace_images() if task.shared_start else None
    hits = images.hits if images is not None else 0
    try:
        result = simulate(task.scenario, seed=task.seed, progress=False,
                          keyspace_images=images)
        summary, error = result.summary, ""
        cycles = result.phases().to_dict("records")
        peaks = run_peaks(result.timeseries)
    except Exception as exc:  # noqa: BLE001 - a failing point is data, not a crash
        frames = traceback.extract_tb(exc.__traceback__)[-3:]
        where = "; ".join(f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in frames)
        summary, error = {}, f"{type(exc).__name__}: {exc} ({where})"
    return {"key": task.key, "seed": task.seed, "summary": summary, "error": error,
            "phases": cycles, "peaks": peaks, "wall_s": time.perf_counter() - t0,
            "shared_start": images is not None and images.hits > hits,
            "model": model_version()}


def shared_start_order(tasks: list[RunTask]) -> list[RunTask]:
    """The tasks with those that can share a keyspace next to each other (same
    ``config.loader.keyspace_hash``), each group in the order of its first task, and within a
    group the fewest connections first: an image serves runs whose slab and
    row spares are at least its own (``keyspace_image.fits``). A worker then
    builds each keyspace about once. Results do not depend on the order."""
    from redsim.config.loader import keyspace_hash
    from redsim.model.sizing import connection_rows

    if not any(t.shared_start for t in tasks):
        return tasks
    keys = [keyspace_hash(t.scenario, t.seed) for t in tasks]
    first = {k: i for i, k in reversed(list(enumerate(keys)))}
    conns = [sum(g.processes * connection_rows(g) for g in t.scenario.clients) for t in tasks]
    order = sorted(range(len(tasks)), key=lambda i: (first[keys[i]], conns[i], i))
    return [tasks[i] for i in order]


def run_peaks(ts: pd.DataFrame) -> dict[str, float]:
    """The figures a burst is judged by, at their most extreme over the run's
    windows: main-thread busy share, share in ``performEvictions``, used memory
    over ``maxmemory`` (0 without a limit)."""
    if ts.empty:
        return {}
    busy = 1.0 - ts["cpu_idle"]
    maxmem = ts["maxmemory"].max() if "maxmemory" in ts else 0
    return {
        "busy_max": float(busy.max()),
        "cpu_eviction_max": float(ts["cpu_eviction"].max()) if "cpu_eviction" in ts else 0.0,
        "used_memory_max": float(ts["used_memory"].max()) if "used_memory" in ts else 0.0,
        "maxmemory": float(maxmem or 0),
    }


@dataclass
class SweepResult:
    """What a sweep produced (also on disk in ``out``)."""

    spec: SweepSpec
    points: list[Point]
    seeds: list[int]
    runs: pd.DataFrame
    aggregate: pd.DataFrame
    out: Path
    ran: int = 0
    """Runs executed by this call (the rest came from disk)."""
    lost: list[str] = field(default_factory=list)
    """Runs whose worker died (not stored: ``--resume`` retries them)."""
    figures: list[Path] = field(default_factory=list)
    """The figures written into ``out`` (``write_figures``)."""


def run_batch(tasks: list[RunTask], store: RunStore, *, executor: str = "local",
              jobs: int | None = None, scheduler: Any = None, progress: bool = True,
              desc: str = "runs", on_stored: Callable[[dict], None] | None = None
              ) -> tuple[int, list[str]]:
    """Execute the tasks not yet in ``store``, storing each as it finishes.

    Returns:
        (runs executed, descriptions of runs lost to a dead worker)
    """
    todo = [t for t in tasks if store.get(t.key, t.seed) is None]
    todo = list({(t.key, t.seed): t for t in todo}.values())  # a run once, however asked
    todo = shared_start_order(todo)
    lost: list[str] = []
    if not todo:
        return 0, lost
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc=desc, unit="run", dynamic_ncols=True)
    errors = 0
    try:
        for task, outcome in run_tasks(execute, todo, executor=executor, jobs=jobs,
                                       scheduler=scheduler):
            if isinstance(outcome, BaseException):
                lost.append(f"seed {task.seed} of {task.key[:12]}: "
                            f"{type(outcome).__name__}: {outcome}")
            elif outcome.get("model") != store.version:
                # A Dask worker with another redsim: its figures are not this model's.
                lost.append(f"seed {task.seed} of {task.key[:12]}: the worker runs "
                            f"model {outcome.get('model')}, this process "
                            f"{store.version}; install the same redsim on the workers")
            else:
                store.put(outcome)
                errors += bool(outcome["error"])
                if on_stored is not None:
                    on_stored(outcome)
            if bar is not None:
                bar.update(1)
                if errors or lost:
                    bar.set_postfix(errors=errors, lost=len(lost))
    finally:
        if bar is not None:
            bar.close()
        drop_keyspace_images()  # a serial batch kept them in this process
    return len(todo), lost


def collect(store: RunStore, points: list[Point], seeds: list[int]) -> dict:
    """The stored records of the given runs."""
    out = {}
    for p in points:
        for s in seeds:
            rec = store.get(p.key, s)
            if rec is not None:
                out[(p.key, s)] = rec
    return out


def write_tables(spec: SweepSpec, points: list[Point], seeds: list[int],
                 store: RunStore) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Build and write runs/aggregate tables and timings from what is on disk."""
    records = collect(store, points, seeds)
    runs = tidy_table(points, seeds, records)
    agg = aggregate_table(runs, points, spec.metrics)
    out = store.out
    write_table(runs, out / "runs")
    write_table(agg, out / "aggregate")
    timings = pd.DataFrame.from_records(
        [{"point": p.index, "replication": r, "seed": s,
          "wall_s": records[(p.key, s)].get("wall_s"),
          "shared_start": bool(records[(p.key, s)].get("shared_start"))}
         for p in points for r, s in enumerate(seeds) if (p.key, s) in records])
    atomic_write_bytes(out / "timings.csv", timings.to_csv(index=False).encode())
    return runs, agg


def draw_figure(path: Path, draw: Callable[[], None], written: list[Path]) -> None:
    """Draw one figure (``result.draw_guarded``); a failure costs that figure
    only, and the sweep goes on (its tables are on disk)."""
    if draw_guarded(path, draw, f"the sweep's tables in {path.parent} are complete"):
        written.append(path)


def write_figures(spec: SweepSpec, agg: pd.DataFrame, out: Path) -> list[Path]:
    """The sweep's standard figures: with one varying axis, burst probability and
    p99 latency against it; with two, the burst-probability heatmap and p99 per
    second-axis value; more axes get no automatic figure (use redsim.sweep.plots).
    With more than one client group in the table (``<group>.<metric>_mean``
    columns), also ``groups_latency_p99_s.png``, ``groups_throughput_rps.png``
    and ``groups_errors.png`` (``plots.GROUP_FIGURES``): one line per group,
    or with two axes one panel per group.

    Axis ticks are in the units of the field each axis sets (``axis_quantity``).
    A figure that fails is skipped with a ``FigureWarning`` (one line naming it
    and the error); the others are still drawn.

    Returns:
        The figures written.
    """
    from redsim.sweep import plots

    written: list[Path] = []
    try:
        varying = [a for a in spec.axes if agg[a.name].nunique() > 1] if len(agg) else []
        groups = plots.client_groups(agg)
    except Exception as exc:  # noqa: BLE001 - e.g. a column of unhashable values
        warnings.warn(f"no figures written: {type(exc).__name__}: {exc}", FigureWarning,
                      stacklevel=2)
        return written
    try:
        units = {a.name: axis_quantity(a) for a in spec.axes}
    except Exception:  # noqa: BLE001 - without units the ticks are the values, as written
        units = {}
    if not varying:
        return written
    first = varying[0]
    burst = "burst_probability" in agg.columns
    if len(varying) == 1 or all(a.link == first.link for a in varying):
        axis, data, hue, log = first.name, agg, None, first.log or None
        if len(varying) > 1:  # linked axes: one category per point, "yes / always"
            axis = " / ".join(a.name for a in varying)
            data = agg.assign(**{axis: [" / ".join(str(v) for v in row) for row in
                                        agg[[a.name for a in varying]].itertuples(
                                            index=False)]})
        for metric in ("burst_probability", "latency_p99_s") if burst else ():
            if metric == "burst_probability" or f"{metric}_mean" in agg.columns:
                path = out / f"{metric}.png"
                draw_figure(path, lambda m=metric, p=path: plots.plot_metric(
                    data, axis, m, p, log_x=log, units=units), written)
    elif len({a.link for a in varying}) == 2:
        second = next(a for a in varying if a.link != first.link)
        axis, data, hue, log = second.name, agg, first.name, second.log or None
        if burst:
            path = out / "burst_heatmap.png"
            draw_figure(path, lambda: plots.plot_burst_heatmap(
                agg, second.name, first.name, path, units=units), written)
        if burst and "latency_p99_s_mean" in agg.columns:
            p99 = out / "latency_p99_s.png"
            draw_figure(p99, lambda: plots.plot_metric(
                agg, second.name, "latency_p99_s", p99, hue=first.name, log_x=log,
                units=units), written)
    else:
        return written
    if len(groups) > 1:
        for name, metrics in plots.GROUP_FIGURES.items():
            present = [m for m in metrics
                       if any(f"{g}.{m}_mean" in agg.columns for g in groups)]
            if present:
                path = out / f"groups_{name}.png"
                draw_figure(path, lambda ms=present, p=path: plots.plot_groups(
                    data, axis, ms, groups, p, hue=hue, log_x=log, units=units), written)
    return written


def run_sweep(spec: SweepSpec, out: str | Path, *, jobs: int | None = None,
              executor: str = "local", scheduler: Any = None, resume: bool = False,
              progress: bool = True, overrides: tuple[str, ...] = (),
              replications: int | None = None,
              on_stored: Callable[[dict], None] | None = None,
              max_points: int = DEFAULT_MAX_POINTS,
              shared_start: bool = True) -> SweepResult:
    """Run every point x replication of a sweep into the folder ``out``.

    Args:
        spec: from ``redsim.config.sweep.load_sweep``.
        out: the sweep folder (created).
        jobs: local worker processes (default: one per core; 1 runs in-process).
        executor: ``local`` or ``dask`` (with ``scheduler``: address or Client).
        resume: keep the runs already in ``out`` and run only the missing ones.
        progress: a progress bar with ETA.
        overrides: ``--set key=value`` applied to every point.
        replications: overrides the sweep's ``replications``.
        on_stored: called with each run's record once it is on disk.
        max_points: the most runs (points x replications) the sweep may have;
            past it nothing runs and the error says how many it would have.
        shared_start: with the local executor, each worker keeps the keyspace
            it built last (``model/keyspace_image.py``; ~2.6 GB for S0) and
            starts the runs with the same keyspace fields and seed from it, run
            one after another: the same results without building each keyspace
            again. False builds every run's own (less memory).

    The tables are written before the figures, also when runs fail or the sweep
    is interrupted; a figure that fails is a ``FigureWarning``, not an error.

    Raises:
        SweepError: ``out`` holds runs and ``resume`` is False.
        ScenarioError: the sweep or one of its points is invalid, or it has more
            than ``max_points`` runs.
    """
    reps = replications or spec.replications
    points = expand(spec, overrides, max_points=max_points, replications=reps)
    root = root_seed(spec, points)
    seeds = [replication_seed(root, r) for r in range(reps)]
    store = RunStore(out)
    if not resume and store.count():
        raise SweepError(f"{out} already holds {store.count()} runs; pass --resume to "
                         "keep them and run the rest, or choose another --out")
    store.out.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(store.out / "sweep.yaml", dump_spec(spec).encode())
    tasks = [RunTask(p.key, s, p.scenario, shared_start and executor == "local")
             for p in points for s in seeds]
    ran, lost = 0, []
    try:
        ran, lost = run_batch(tasks, store, executor=executor, jobs=jobs,
                              scheduler=scheduler, progress=progress, desc=spec.name,
                              on_stored=on_stored)
    finally:
        runs, agg = write_tables(spec, points, seeds, store)
    figures = write_figures(spec, agg, store.out)
    return SweepResult(spec, points, seeds, runs, agg, store.out, ran, lost, figures)
