"""What a run produces: time series, latency, summary, and the run folder."""

from __future__ import annotations

import functools
import importlib
import json
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from redsim.analysis.phases import burst_summary, phases
from redsim.model import state as S
from redsim.model.histogram import _EDGES, N_BUCKETS, quantiles
from redsim.observe import metrics as M

PERCENTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}

CPU_COLUMNS = {"cpu_" + f.name.removeprefix("W_CPU_").lower(): S.LAYOUT.index[f.name]
               for f in S.LAYOUT.fields if f.kind == "cpu"}
"""Result columns of main-thread time per activity (``cpu_commands``, ...) -> their
row of ``rc_wf``: every series its mechanism declares as ``cpu``, in row order."""

RESULTS = (
    M.Metric("scenario", "-", M.FIRST, "the scenario's name", made_by="Result.from_world",
             line=M.Line(20, "scenario", lambda s: f"{s['scenario']}")),
    M.Metric("seed", "-", M.FIRST, "the run's seed", made_by="Result.from_world",
             line=M.Line(30, "seed", lambda s: f"{s['seed']}")),
    M.Metric("redis_version", "-", M.FIRST, "the Redis version modelled",
             made_by="Result.from_world"),
    M.Metric("duration_s", "s", M.FIRST, "simulated time", made_by="Result.from_world",
             line=M.Line(40, "simulated",
                         lambda s: f"{s['duration_s']:g} s (warm-up {s['warmup_s']:g} s)")),
    M.Metric("warmup_s", "s", M.FIRST, "the warm-up left out of the figures",
             made_by="Result.from_world"),
    M.Metric("scenario_hash", "-", M.FIRST, "the resolved scenario's hash (provenance)",
             made_by="Result.from_world"),
    # One share per cpu series, as the cpu_* columns: declared with the series.
    *(M.Metric(f"{name}_share", "-", M.MEAN, f"the main thread's share of time on "
               f"{name.removeprefix('cpu_')} after the warm-up", made_by="Result.from_world")
      for name in CPU_COLUMNS),
    *(M.Column(180 + i / 100, name, "-", f"the main thread's share of the window on "
               f"{name.removeprefix('cpu_')}", lambda r, row=row: r.wf[row] / r.length)
      for i, (name, row) in enumerate(CPU_COLUMNS.items())),
    M.Column(190, "cpu_idle", "-", "the main thread's idle share of the window",
             lambda r: np.clip(1.0 - _busy(r.wf) / r.length, 0.0, 1.0)),
)
"""The run's own summary keys and columns (``observe/metrics.py``): its
identity, and the main thread's share per ``cpu`` series."""


def _busy(wf: np.ndarray) -> np.ndarray:
    """The main thread's busy time per window, s: every ``cpu`` series added up."""
    busy = np.zeros(wf.shape[1])
    for row in CPU_COLUMNS.values():
        busy += wf[row]
    return busy

RESULT_OWNERS = (*S.OWNERS, "result", "host.result")
"""The modules whose ``RESULTS`` blocks declare the summary keys, in this order:
the kernel's owners (``state.OWNERS``), this module, the host's result."""


@dataclass(frozen=True)
class Declared:
    """Every declared summary key (``metrics``, by name, in ``RESULT_OWNERS``
    order; ``owner`` says which module declares it), the printed summary's
    ``lines`` and the time series' ``columns``, each in their order."""

    metrics: dict[str, M.Metric]
    owner: dict[str, str]
    lines: tuple[M.Line, ...]
    columns: tuple[M.Column, ...]

    def of(self, key: str) -> M.Metric | None:
        """The declaration of summary ``key``; a client group's ``<group>.<metric>``
        is declared by the run's ``<metric>`` (``GROUP_METRICS``)."""
        metric = self.metrics.get(key)
        if metric is None and "." in key:
            name = key.rpartition(".")[2]
            metric = self.metrics.get(name) if name in GROUP_METRICS else None
        return metric


@functools.cache
def declared() -> Declared:
    """The ``RESULTS`` blocks of ``RESULT_OWNERS``, checked: a key, a column or
    a line's or a column's place declared twice is an error naming both
    modules. Imports the kernel's modules (numba is loaded already; nothing is
    compiled)."""
    metrics: dict[str, M.Metric] = {}
    owner: dict[str, str] = {}
    lines: dict[float, tuple[str, M.Line]] = {}
    columns: dict[float, tuple[str, M.Column]] = {}
    column_names: dict[str, str] = {}

    def add_line(line: M.Line, where: str) -> None:
        if line.at in lines:
            raise RuntimeError(f"{where}: summary line {line.label!r} at {line.at} "
                               f"(also {lines[line.at][0]}'s {lines[line.at][1].label!r})")
        lines[line.at] = (where, line)

    for module in RESULT_OWNERS:
        for item in getattr(importlib.import_module(f"redsim.{module}"), "RESULTS", ()):
            if isinstance(item, M.Line):
                add_line(item, module)
                continue
            if isinstance(item, M.Column):
                if item.name in column_names or item.at in columns:
                    other = column_names.get(item.name) or columns[item.at][0]
                    raise RuntimeError(f"{module}: column {item.name!r} at {item.at} "
                                       f"(also declared by {other})")
                columns[item.at], column_names[item.name] = (module, item), module
                continue
            if not isinstance(item, M.Metric) or item.combine.rule not in M.RULES:
                raise RuntimeError(f"redsim.{module}.RESULTS: {item!r} is not a Metric "
                                   "or a Line with a known combine rule")
            if item.name in metrics:
                raise RuntimeError(f"summary key {item.name!r} declared by {module} and "
                                   f"{owner[item.name]}")
            metrics[item.name], owner[item.name] = item, module
            if item.line is not None:
                add_line(item.line, module)
    return Declared(metrics, owner, tuple(line for _, (_, line) in sorted(lines.items())),
                    tuple(column for _, (_, column) in sorted(columns.items())))


MODEL_SOURCES = ("model", "observe", "host", "traces")
"""The packages a run's figures depend on: the kernel's, the host's driver and the
trace readers (a trace group's commands and keys)."""
MODEL_SKIP = ("host/result.py",)
"""Left out of the model version: the host's result only names and aggregates what
the runs produced, as this module does for one run."""


@functools.cache
def model_version() -> str:
    """A hash of the model's code (``redsim/model``, ``redsim/observe``, without
    comments and docstrings: ``jit.code_hash``): what a run's figures depend on
    besides its scenario and seed. Two runs with equal scenario hash, seed and
    model version are identical. (numba's version is left out: the kernel is
    compiled without fast-math, so IEEE arithmetic gives the same figures
    whichever numba compiled it.)"""
    from redsim.model.jit import code_hash

    return code_hash(MODEL_SOURCES, MODEL_SKIP)[:16]


class FigureWarning(UserWarning):
    """A figure (of a run folder or a sweep) could not be drawn; the data files and
    tables were written regardless."""


def draw_guarded(path: Path, draw: Callable[[], None], tail: str) -> bool:
    """Draw one figure into ``path`` (``draw()`` writes it); a failure costs that
    figure only. Its file is removed (a partial PNG, or one an earlier run left
    in the same folder, would pass for this one's) and a ``FigureWarning`` says
    in one line which figure, why, and ``tail`` (where the data are). Returns
    whether the figure was written."""
    import warnings

    try:
        draw()
    except Exception as exc:  # noqa: BLE001 - a figure is never worth the data
        try:
            path.unlink(missing_ok=True)
        except OSError:  # the warning below still says the figure is not this run's
            pass
        reason = " ".join(str(exc).split()) or "no message"  # one line
        warnings.warn(FigureWarning(f"{path.name} not written ({type(exc).__name__}: "
                                    f"{reason}); {tail}"), stacklevel=3)
        return False
    return True


@dataclass
class Latency:
    """Client-observed request latency (issue → last reply byte received), seconds.

    ``counts`` is the whole-run histogram after warm-up over bucket ``edges``;
    per-window percentiles are columns of the time series.
    """

    edges: np.ndarray
    counts: np.ndarray
    mean: float
    max: float
    percentiles: dict[str, float] = field(default_factory=dict)

    def quantile(self, q: float) -> float:
        """Any quantile 0 < q ≤ 1 of the post-warm-up latency, seconds."""
        return quantiles(self.counts, [q])[0]

    def table(self) -> pd.DataFrame:
        """Non-empty buckets as a DataFrame (lower_s, upper_s, count)."""
        nz = np.nonzero(self.counts)[0]
        return pd.DataFrame({"lower_s": self.edges[nz], "upper_s": self.edges[nz + 1],
                             "count": self.counts[nz]})


@dataclass
class Result:
    """The outcome of ``simulate``: everything a notebook or a test needs."""

    scenario: Any
    seed: int
    timeseries: pd.DataFrame
    latency: Latency
    summary: dict[str, Any]
    provenance: dict[str, Any]
    forks: pd.DataFrame = field(default_factory=pd.DataFrame)
    """One row per fork: ``time``, ``fork_s`` (the main thread's stall), ``child``
    (rdb / aof), ``rss`` and ``pages`` at the fork, ``cow_bytes`` copied by the
    time the child exited, and ``end`` (when it exited; inf if still running)."""
    trace_passes: pd.DataFrame = field(default_factory=pd.DataFrame)
    """One row per completed pass over a trace by one source (an endpoint call):
    ``group``, ``start``, ``end``, ``duration_s``."""
    latency_events: dict[str, pd.DataFrame] = field(default_factory=dict)
    """The latency monitor (``LATENCY HISTORY event``): per event, its last 160
    per-second maxima as ``time`` (s) and ``latency_ms``."""
    fsync_calls: pd.DataFrame = field(default_factory=pd.DataFrame)
    """fdatasync calls of the AOF by duration (queueing on the disk + the call):
    ``usecs_lo``, ``usecs_hi``, ``count``."""
    eviction_calls: pd.DataFrame = field(default_factory=pd.DataFrame)
    """performEvictions calls per log2 bucket: ``usecs_lo``/``usecs_hi`` and ``count``
    (all calls), ``tofree_lo``/``tofree_hi`` bytes and ``tofree_count`` (calls over
    the limit, by ``mem_tofree``)."""

    slabs: pd.DataFrame = field(default_factory=pd.DataFrame)
    """jemalloc's small bins at each scenario event (before its command runs) and at
    the end, as ``MEMORY MALLOC-STATS`` prints them: ``time``, ``at`` (``before
    populate``, ..., ``end``), ``size`` (the class, B), ``regs`` (regions per slab),
    ``curregs`` (regions in use, the thread cache's included, as jemalloc counts
    them), ``curslabs`` (slabs in use), ``full`` and ``nonfull`` slabs, and
    ``tcached`` (regions the main thread's thread cache holds); only classes
    with slabs in use."""
    slab_utilisation: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Slabs in use by the share of their regions in use, at the same moments:
    ``time``, ``at``, ``lo`` < share ≤ ``hi`` (tenths), ``slabs``."""
    group_counts: dict[str, np.ndarray] = field(default_factory=dict)
    """Each client group's latency histogram after the warm-up (``latency.edges``
    buckets), by group name: what a host's result merges per group."""
    stalls: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The main thread held on one thing for at least ``stall-threshold``
    (``observe/stalls.py``), one row per stall: ``time`` (its start, s),
    ``duration_s``, ``cause`` (``fork``, ``aof-write``, ``aof-fsync-always``,
    ``expire-cycle``, ``eviction-cycle``, ``command``, ...),
    ``requests_delayed`` and ``worst_latency_s``."""
    replication: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The replicas' events (``model/replication.py``), one row each: ``time``,
    ``replica``, ``event`` (full_resync, partial_resync, fork, rdb_transferred,
    online, dropped_hard_limit, dropped_soft_limit, timeout; dual-channel: loaded),
    ``offset``
    (master_repl_offset then) and ``detail`` (the PSYNC's offset for a resync,
    the RDB's bytes for a fork, the load's end for rdb_transferred, the output
    buffer's usage for a drop, the seconds without data for a timeout)."""
    replicas: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Each replica at each sample (``model/replication.py``), one row per window
    and replica: ``time`` (the window's end, s), ``replica``, ``state``
    (connecting, wait_bgsave, bgsave, send_bulk, loading, applying, online) and
    ``lag_bytes`` (master_repl_offset − what it received; empty while it has no
    place in the buffer). Empty without replicas."""
    groups: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Each client group's figures, one row per group: ``group``, then
    ``GROUP_METRICS`` (requests completed, throughput, latency mean,
    percentiles and max after the warm-up; requests rejected, failed and
    answered -OOM). The same figures are in ``summary`` as ``<group>.<metric>``
    and, with more than one group, per window in the time series as
    ``<group>.requests_per_sec``, ``.latency_mean``, ``.latency_p50``,
    ``.latency_p99`` and ``.latency_max``."""

    def phases(self) -> pd.DataFrame:
        """The eviction-cycle table (``redsim.analysis.phases``)."""
        from redsim.analysis.phases import phases

        return phases(self.timeseries)

    def funclatency(self) -> str:
        """performEvictions call times as BCC's ``funclatency --microseconds`` prints them."""
        from redsim.analysis.phases import log2_histogram_text

        c = self.eviction_calls
        return log2_histogram_text("usecs", c["usecs_lo"], c["usecs_hi"], c["count"])

    def latency_doctor(self) -> str:
        """``LATENCY LATEST`` as redis-cli prints it, then each event's history."""
        lines = ["event                      latest-time  latest-ms  max-ms  samples"]
        for name, df in self.latency_events.items():
            lines.append(f"{name:<26} {df['time'].iloc[-1]:>11.0f}  "
                         f"{df['latency_ms'].iloc[-1]:>9d}  {df['latency_ms'].max():>6d}  "
                         f"{len(df):>7d}")
        for name, df in self.latency_events.items():
            lines.append(f"\nLATENCY HISTORY {name} (time s, ms)")
            lines += [f"  {t:>8.0f}  {ms}" for t, ms in zip(df["time"], df["latency_ms"],
                                                            strict=True)]
        return "\n".join(lines)

    @classmethod
    def from_world(cls, scenario, seed: int, w: S.World, info: dict, pending: int,
                   snapshots: Any = ()) -> Result:
        """The result of a finished run: its arrays named, and the allocator
        ``snapshots`` (``(time, label, Kernel.allocator())``) as tables."""
        from redsim import __version__
        from redsim.config import scenario_hash

        n = info["n_windows"]
        dt = float(scenario.sample_interval)
        horizon = float(scenario.duration)
        starts = np.arange(n) * dt
        length = np.minimum(dt, horizon - starts)
        wf, wi = w.rc_wf[:, :n], w.rc_wi[:, :n]
        ts = pd.DataFrame(index=pd.Index(np.minimum(starts + dt, horizon), name="time"))
        warm = float(scenario.warmup)
        post = starts >= warm - 1e-12
        span = float(length[post].sum()) or 1.0
        run = M.Run(w=w, ts=ts, n=n, length=length, post=post, span=span, wf=wf, wi=wi,
                    scenario=scenario)
        decl = declared()
        for column in decl.columns:  # each mechanism's (observe/metrics.py), in place order
            ts[column.name] = column.value(run)
        busy = _busy(wf)
        counts = w.rc_hist.copy()
        lat_n = int(w.I[S.LAT_N])
        lat_max = float(np.nanmax(ts["latency_max"][post])) if lat_n else float("nan")
        pct = dict(zip(PERCENTILES, quantiles(counts, list(PERCENTILES.values())), strict=True))
        latency = Latency(edges=_EDGES, counts=counts,
                          mean=float(w.F[S.LAT_SUM] / lat_n) if lat_n else float("nan"),
                          max=lat_max, percentiles=pct)
        cpu = {name: float(wf[row][post].sum() / span) for name, row in CPU_COLUMNS.items()}
        # The keys made here (the run's identity, latency, the main thread's
        # shares), then every declared key with a value of its own
        # (observe/metrics.py), then those the tables below make.
        summary: dict[str, Any] = {
            "scenario": scenario.name,
            "seed": seed,
            "redis_version": scenario.redis_version,
            "duration_s": horizon,
            "warmup_s": warm,
            "latency_mean_s": latency.mean,
            **{f"latency_{k}_s": v for k, v in pct.items()},
            "latency_max_s": lat_max,
            "utilisation": float(sum(cpu.values())),
            **{f"{k}_share": v for k, v in cpu.items()},
            "utilisation_peak": (float((busy[post] / length[post]).max()) if post.any()
                                 else 0.0),
            "requests_pending_at_end": pending,
            "scenario_hash": scenario_hash(scenario),
        }
        run.summary = summary
        for metric in decl.metrics.values():
            if metric.value is not None:
                summary[metric.name] = metric.value(run)
        summary.update(burst_summary(phases(ts)))
        groups, group_counts, group_series = _group_tables(scenario, w, n, length, summary,
                                                           counts)
        if group_series:  # joined at once: inserted one by one they fragment the frame
            ts = pd.concat([ts, pd.DataFrame(group_series, index=ts.index)], axis=1)
        stalls = _stall_table(w, ts, dt)
        summary.update(_stall_summary(stalls))
        b = np.arange(len(w.rc_evhist))
        calls = pd.DataFrame({"usecs_lo": np.where(b == 0, 0, 2 ** b), "usecs_hi": 2 ** (b + 1) - 1,
                              "count": w.rc_evhist.copy(), "tofree_lo": np.where(b == 0, 0, 2 ** b),
                              "tofree_hi": 2 ** (b + 1) - 1, "tofree_count": w.rc_tofree.copy()})
        forks, passes, lm, fsyncs = _persistence_tables(scenario, w, info)
        summary.update(_persistence_summary(forks, passes, fsyncs))
        replication = _replication_table(w)
        summary.update(_replication_summary(w, replication))
        undeclared = sorted(k for k in summary if decl.of(k) is None)
        if undeclared:
            raise RuntimeError(f"summary keys {undeclared} are declared by no RESULTS block "
                               "(observe/metrics.py)")
        replicas = _replica_series(w, ts)
        provenance = {
            "redsim_version": __version__,
            "model": model_version(),
            "seed": seed,
            "scenario_name": scenario.name,
            "scenario_hash": summary["scenario_hash"],
            "python": platform.python_version(),
            "numpy": np.__version__,
        }
        try:
            import numba
            import simpy

            provenance["numba"] = numba.__version__
            provenance["simpy"] = simpy.__version__
        except ImportError:  # pragma: no cover
            pass
        slabs, util = _slab_tables(snapshots)
        return cls(scenario, seed, ts, latency, summary, provenance, forks=forks,
                   trace_passes=passes, latency_events=lm, fsync_calls=fsyncs,
                   eviction_calls=calls, slabs=slabs, slab_utilisation=util,
                   groups=groups, group_counts=group_counts, stalls=stalls,
                   replication=replication, replicas=replicas)

    # -- the run folder ----------------------------------------------------------

    def save(self, directory: str | Path, plots: bool = True) -> Path:
        """Write the run folder; returns its path.

        Files: ``scenario.yaml`` (resolved, every default filled in, trace paths
        relative to the folder),
        ``summary.json``, ``timeseries.parquet``, ``latency_histogram.csv``,
        ``cycles.csv`` (the phase table), ``groups.csv`` (each client group's
        figures), ``stalls.csv`` (when there were stalls), ``eviction_calls.csv`` and
        ``funclatency.txt`` (performEvictions call times), ``overview.png``,
        ``cycles.png`` (the S0-style figure, when maxmemory is set),
        ``fragmentation.png`` (memory against RSS and the slabs' fill, when the
        scenario has populate, del, flushall, memory-purge or config-set events
        or active defrag ran; then also defrag's CPU against latency),
        ``forks.csv``, ``trace_passes.csv`` and ``latency_monitor.txt`` when
        there were forks, trace passes or latency-monitor samples, ``slabs.csv``
        and ``slab_utilisation.csv`` (the allocator's bins at each event and at
        the end), and
        ``provenance.json``. Nothing in them depends on the
        wall clock, so the same scenario and seed give byte-identical files.

        The data files are written first, then the figures (``plots=True``),
        each on its own: a figure that cannot be drawn is left out with a
        ``FigureWarning`` naming it and the error, never an exception, so a
        plotting problem never costs the run's data.
        """
        import yaml

        from redsim.config import resolved_dict

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        resolved = resolved_dict(self.scenario)
        for group in resolved["clients"]:
            # Relative to the folder, so the file loads back from any checkout
            # and carries no machine's directory layout.
            if group.get("trace") is not None:
                group["trace"] = os.path.relpath(group["trace"], out.resolve())
        if resolved.get("calibration") is not None:
            resolved["calibration"] = os.path.relpath(resolved["calibration"], out.resolve())
        (out / "scenario.yaml").write_text(yaml.safe_dump(resolved, sort_keys=False))
        (out / "summary.json").write_text(json.dumps(_jsonable(self.summary), indent=2,
                                                     sort_keys=True) + "\n")
        self.timeseries.to_parquet(out / "timeseries.parquet")
        self.latency.table().to_csv(out / "latency_histogram.csv", index=False)
        cycles = self.phases()
        cycles.to_csv(out / "cycles.csv", index=False)
        self.eviction_calls.to_csv(out / "eviction_calls.csv", index=False)
        self.groups.to_csv(out / "groups.csv", index=False)
        if not self.stalls.empty:
            self.stalls.to_csv(out / "stalls.csv", index=False)
        (out / "provenance.json").write_text(json.dumps(self.provenance, indent=2,
                                                        sort_keys=True) + "\n")
        if not self.forks.empty:
            self.forks.to_csv(out / "forks.csv", index=False)
        if not self.replication.empty:
            self.replication.to_csv(out / "replication.csv", index=False)
        if not self.replicas.empty:
            self.replicas.to_csv(out / "replicas.csv", index=False)
        if not self.slabs.empty:
            self.slabs.to_csv(out / "slabs.csv", index=False)
            self.slab_utilisation.to_csv(out / "slab_utilisation.csv", index=False)
        if not self.trace_passes.empty:
            self.trace_passes.to_csv(out / "trace_passes.csv", index=False)
        if self.latency_events:
            (out / "latency_monitor.txt").write_text(self.latency_doctor() + "\n")
        if not self.eviction_calls.empty and self.eviction_calls["count"].sum():
            (out / "funclatency.txt").write_text(self.funclatency() + "\n")
        if plots:
            self._save_figures(out, cycles)
        return out

    def _save_figures(self, out: Path, cycles: pd.DataFrame) -> list[str]:
        """Write the run's figures into ``out``, each on its own; return the names written.

        Called after every data file is on disk. A figure that fails (a plotting
        bug, an odd time series) must not cost the run: its file is removed (a
        partial PNG, or one left by an earlier run into the same folder, would
        pass for this run's) and a ``FigureWarning`` says in one line which
        figure and why; the other figures are still drawn.
        """
        from redsim import plots  # looked up at call time: tests replace a figure function

        title = f"{self.scenario.name} (seed {self.seed})"
        ts = self.timeseries
        figures = [("overview.png", lambda path: plots.plot_overview(ts, path, title=title))]
        if "used_memory" in ts and self.scenario.server.maxmemory:
            figures.append(("cycles.png", lambda path: plots.plot_cycles(
                ts, path, cycles, title=f"{title}: the eviction cycle")))
        if any(ev.do in ("populate", "del", "unlink", "flushall", "memory-purge", "config-set")
               for ev in self.scenario.events) or (
                   "cpu_defrag" in ts and bool((ts["cpu_defrag"] > 0).any())):
            marks = [(float(ev.at), ev.do) for ev in self.scenario.events]
            figures.append(("fragmentation.png", lambda path: plots.plot_fragmentation(
                ts, self.slab_utilisation, path, marks,
                title=f"{title}: used_memory against RSS")))
        if self.scenario.replicas:
            hard, soft, _ = self.scenario.server.client_output_buffer_limit["replica"]
            figures.append(("replication.png", lambda path: plots.plot_replication(
                ts, self.replication, path, (hard, soft), replicas=self.replicas,
                title=f"{title}: the replication buffer")))
        tail = f"the run's data files in {out} are complete"
        return [name for name, draw in figures
                if draw_guarded(out / name, lambda d=draw, p=out / name: d(p), tail)]


GROUP_METRICS = ("requests_completed", "throughput_rps", "latency_mean_s",
                 *(f"latency_{k}_s" for k in PERCENTILES), "latency_max_s",
                 "requests_rejected", "requests_failed", "requests_timed_out",
                 "connections_refused", "oom_rejected", "busy_rejected", "connections_peak")
"""Each client group's figures in ``Result.groups`` and, as ``<group>.<metric>``,
in ``Result.summary``."""


def _group_tables(scenario, w: S.World, n: int, length: np.ndarray, summary: dict,
                  run_counts: np.ndarray
                  ) -> tuple[pd.DataFrame, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Each client group's figures (``observe/groups.py``): a table, one row per
    group, its ``<group>.<metric>`` summary keys and, with more than one group,
    its ``<group>.requests_per_sec``, ``.latency_mean``, ``.latency_p50``,
    ``.latency_p99``, ``.latency_max`` and ``.errors_per_sec`` (failed requests
    of any kind) series (returned as columns to join to the time series); and
    each group's latency histogram. With one group the run's figures are the
    group's."""
    names = [g.name for g in scenario.clients]
    warm = float(scenario.warmup)
    span = float(scenario.duration) - warm
    rows = []
    hists: dict[str, np.ndarray] = {}
    series: dict[str, np.ndarray] = {}
    if len(names) == 1:
        rows.append({"group": names[0], **{k: summary[k] for k in GROUP_METRICS}})
        hists[names[0]] = run_counts
    for g, name in enumerate(names if len(names) > 1 else ()):
        done = int(w.gp_lat_n[g])
        counts = w.rc_ghist[g * N_BUCKETS:(g + 1) * N_BUCKETS].copy()
        hists[name] = counts
        pct = dict(zip(PERCENTILES, quantiles(counts, list(PERCENTILES.values())), strict=True))
        rows.append({
            "group": name, "requests_completed": done, "throughput_rps": done / span,
            "latency_mean_s": float(w.gp_lat_sum[g] / done) if done else float("nan"),
            **{f"latency_{k}_s": v for k, v in pct.items()},
            "latency_max_s": float(w.gp_lat_max[g]) if done else float("nan"),
            "requests_rejected": int(w.gp_rejected[g]), "requests_failed": int(w.gp_failed[g]),
            "requests_timed_out": int(w.gp_timeouts[g]),
            "connections_refused": int(w.gp_refused[g]), "oom_rejected": int(w.gp_oom[g]),
            "busy_rejected": int(w.gp_busy[g]),
            "connections_peak": int(w.gp_conns_peak[g])})
        win = w.I[S.N_WIN]
        cut = slice(g * win, g * win + n)
        done_w = w.rc_gw_done[cut]
        series[f"{name}.requests_per_sec"] = done_w / length
        with np.errstate(invalid="ignore", divide="ignore"):
            series[f"{name}.latency_mean"] = np.where(done_w > 0, w.rc_gw_sum[cut] / done_w, np.nan)
        series[f"{name}.latency_p50"] = w.rc_gw_p50[cut]
        series[f"{name}.latency_p99"] = w.rc_gw_p99[cut]
        series[f"{name}.latency_max"] = np.where(done_w > 0, w.rc_gw_max[cut], np.nan)
        series[f"{name}.errors_per_sec"] = w.rc_gw_err[cut] / length
    table = pd.DataFrame(rows, columns=["group", *GROUP_METRICS])
    for row in rows:
        summary.update({f"{row['group']}.{k}": row[k] for k in GROUP_METRICS})
    return table, hists, series


STALL_CAUSES = {
    "fork": "fork", "aof": "aof-write", "fsync": "aof-fsync-always", "eviction": "eviction-cycle",
    "expire": "expire-cycle", "defrag": "active-defrag-cycle", "commands": "command",
    "cow": "copy-on-write", "cron": "cron", "read": "read", "write": "write",
    "iteration": "event-loop", "connections": "connections"}
"""A stall's cause, by the main-thread activity it held (``cpu_<activity>``);
where Redis's latency monitor has an event for it, the event's name."""


def _stall_table(w: S.World, ts: pd.DataFrame, dt: float) -> pd.DataFrame:
    """The kept stalls (``observe/stalls.py``): ``time`` (start, s), ``duration_s``
    (the main thread held), ``cause``, ``requests_delayed`` (in flight when it
    began: each waited for it; those issued while it lasted waited too and are
    not counted) and ``worst_latency_s`` (the largest latency completed in the
    windows from its start to one window past its end)."""
    n = min(int(w.I[S.N_STALLS]), len(w.rc_st_t))
    rows = {row: STALL_CAUSES.get(name.removeprefix("cpu_"), name.removeprefix("cpu_"))
            for name, row in CPU_COLUMNS.items()}
    t = w.rc_st_t[:n].copy()
    wall = w.rc_st_wall[:n].copy()
    ends = ts.index.to_numpy()  # each window's end
    lat = ts["latency_max"].to_numpy() if len(ts) else np.zeros(0)
    worst = np.full(n, np.nan)
    for i in range(n):
        first = int(np.searchsorted(ends, t[i], side="right"))
        last = int(np.searchsorted(ends, t[i] + wall[i] + dt, side="left"))
        span = lat[first:last + 1]
        if np.isfinite(span).any():
            worst[i] = np.nanmax(span)
    return pd.DataFrame({"time": t, "duration_s": wall,
                         "cause": [rows.get(int(r), "other") for r in w.rc_st_row[:n]],
                         "requests_delayed": w.rc_st_inflight[:n].copy(),
                         "worst_latency_s": worst})


def _stall_summary(stalls: pd.DataFrame) -> dict[str, Any]:
    """``stall_causes`` (``cause=count;...``, most first), ``stall_max_s`` and
    ``stall_time_s`` (the kept ones' total); ``stalls`` (all, kept or not) is
    declared with its counter (``observe/stalls.py``)."""
    return {"stall_causes": join_causes(stalls["cause"].value_counts().to_dict()),
            "stall_max_s": float(stalls["duration_s"].max()) if len(stalls) else 0.0,
            "stall_time_s": float(stalls["duration_s"].sum())}


def join_causes(counts: dict[str, int]) -> str:
    """Stall counts by cause as the summary's ``stall_causes``: ``cause=count``
    joined by ``;``, most first, ties by name."""
    order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ";".join(f"{c}={k}" for c, k in order)


def _jsonable(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, float) and not np.isfinite(v):
            out[k] = None
        elif isinstance(v, np.generic):
            out[k] = v.item()
        else:
            out[k] = v
    return out


def _slab_tables(snapshots) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``Result.slabs`` and ``Result.slab_utilisation`` from the run's snapshots."""
    tables, hists = [], []
    edges = np.linspace(0.0, 1.0, 11)
    for t, label, snap in snapshots:
        tab = pd.DataFrame(snap["table"])
        tab.insert(0, "at", label)
        tab.insert(0, "time", float(t))
        tables.append(tab)
        # (lo, hi] tenths: a slab half used is in (0.4, 0.5], a full one in (0.9, 1].
        idx = np.clip(np.ceil(snap["utilisation"] * 10 - 1e-9).astype(np.int64) - 1, 0, 9)
        counts = np.bincount(idx, minlength=10)
        hists.append(pd.DataFrame({"time": float(t), "at": label, "lo": edges[:-1],
                                   "hi": edges[1:], "slabs": counts.astype(np.int64)}))
    if not tables:
        return pd.DataFrame(), pd.DataFrame()
    return pd.concat(tables, ignore_index=True), pd.concat(hists, ignore_index=True)


def _persistence_tables(scenario, w: S.World, info: dict):
    """Forks, trace passes, latency-monitor histories and fsync durations."""
    from redsim.model import latency

    n = int(w.I[S.N_FORK_REC])
    rec = w.rc_forks[: n * S.N_FORK_FIELDS].reshape(n, S.N_FORK_FIELDS)
    forks = pd.DataFrame(rec, columns=list(S.FORK_FIELDS))
    forks["child"] = forks["child"].map({S.CHILD_RDB: "rdb", S.CHILD_AOF: "aof"})
    for col in ("rss", "pages", "cow_bytes"):
        forks[col] = forks[col].astype(np.int64)
    n = int(w.I[S.N_PASS])
    rec = w.rc_passes[: n * S.N_PASS_FIELDS].reshape(n, S.N_PASS_FIELDS)
    passes = pd.DataFrame({"group": [info["groups"][int(g)] for g in rec[:, 0]],
                           "start": rec[:, 1], "end": rec[:, 2]})
    passes["duration_s"] = passes["end"] - passes["start"]
    lm = {}
    size = latency.LATENCY_TS_LEN
    for e, name in enumerate(latency.EVENTS):
        count = int(w.rc_lm_n[e])
        if not count:
            continue
        idx = [(i % size) for i in range(max(0, count - size), count)]
        base = e * size
        lm[name] = pd.DataFrame({"time": w.rc_lm_t[base:base + size][idx],
                                 "latency_ms": w.rc_lm_ms[base:base + size][idx]})
    b = np.arange(len(w.rc_fsync))
    fsyncs = pd.DataFrame({"usecs_lo": np.where(b == 0, 0, 2 ** b), "usecs_hi": 2 ** (b + 1) - 1,
                           "count": w.rc_fsync.copy()})
    return forks, passes, lm, fsyncs


def _persistence_summary(forks: pd.DataFrame, passes: pd.DataFrame,
                         fsyncs: pd.DataFrame) -> dict:
    """The summary keys made from the fork, trace-pass and fsync tables (declared
    in ``model/fork.py``, ``model/cow.py``, ``model/clients.py``, ``model/aof.py``)."""
    out = {
        "fork_max_s": float(forks["fork_s"].max()) if len(forks) else 0.0,
        "cow_bytes_last_child": int(forks["cow_bytes"].iloc[-1]) if len(forks) else 0,
        "trace_passes": len(passes),
        "trace_pass_mean_s": float(passes["duration_s"].mean()) if len(passes) else None,
    }
    c = fsyncs["count"].to_numpy()
    if c.sum():
        # Bucket b holds [2^b, 2^(b+1)) µs: the median bucket's bounds.
        mid = int(np.searchsorted(np.cumsum(c), c.sum() / 2))
        out["fsync_median_usecs_bucket"] = [int(fsyncs["usecs_lo"][mid]),
                                            int(fsyncs["usecs_hi"][mid])]
    return out


def _replication_table(w: S.World) -> pd.DataFrame:
    """``Result.replication``: the replicas' event log."""
    from redsim.model.replication import RE_NAMES

    n = min(int(w.I[S.N_REPL_REC]), S.MAX_REPL_REC)
    rec = w.rc_repl[: n * S.N_REPL_FIELDS].reshape(n, S.N_REPL_FIELDS)
    table = pd.DataFrame(rec, columns=list(S.REPL_FIELDS))
    table["replica"] = table["replica"].astype(np.int64)
    table["event"] = [RE_NAMES[int(e)] for e in table["event"]]
    table["offset"] = table["offset"].astype(np.int64)
    return table


def _replica_series(w: S.World, ts: pd.DataFrame) -> pd.DataFrame:
    """``Result.replicas``: each replica's state and lag at each window's end."""
    n = int(w.I[S.REPL_N])
    if n == 0:
        return pd.DataFrame()
    k = len(ts)
    state = w.rc_repl_state[: k * n]
    lag = w.rc_repl_lag[: k * n]
    return pd.DataFrame({
        "time": np.repeat(ts.index.to_numpy(), n),
        "replica": np.tile(np.arange(n), k),
        "state": pd.Categorical.from_codes(state, S.RS_NAMES),
        "lag_bytes": pd.arrays.IntegerArray(np.where(lag >= 0, lag, 0), mask=lag < 0),
    })


def _replication_summary(w: S.World, table: pd.DataFrame) -> dict:
    """The summary keys made from the replicas' states and event log (declared in
    ``model/replication.py``; empty lists and None without replicas)."""
    n = int(w.I[S.REPL_N])
    states = [S.RS_NAMES[int(w.rp_state[r])] for r in range(n)]
    full = table[table["event"] == "full_resync"]["time"].to_numpy() if len(table) else []
    return {
        "connected_slaves_end": sum(st != "connecting" for st in states),
        "replica_states_end": states,
        # What each replica lacks at the end (master_repl_offset − what its link
        # delivered), B; 0 for one reconnecting or waiting for its sync.
        "replica_lag_bytes_end": [int(w.I[S.REPL_OFFSET] - w.rp_wire[r])
                                  if int(w.rp_state[r]) >= S.RS_BGSAVE else 0
                                  for r in range(n)],
        "full_resync_interval_mean_s": (float(np.diff(full).mean()) if len(full) > 1
                                        else None),
    }
