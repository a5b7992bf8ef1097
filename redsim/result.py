"""What a run produces: time series, latency, summary, and the run folder."""

from __future__ import annotations

import functools
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

PERCENTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}

CPU_COLUMNS = {"cpu_" + f.name.removeprefix("W_CPU_").lower(): S.LAYOUT.index[f.name]
               for f in S.LAYOUT.fields if f.kind == "cpu"}
"""Result columns of main-thread time per activity (``cpu_commands``, ...) -> their
row of ``rc_wf``: every series its mechanism declares as ``cpu``, in row order."""


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
        ts["instantaneous_ops_per_sec"] = wi[S.WI_COMMANDS] / length
        ts["total_commands_processed"] = np.cumsum(wi[S.WI_COMMANDS])
        ts["requests_per_sec"] = wi[S.WI_DONE] / length
        ts["offered_per_sec"] = wi[S.WI_ISSUED] / length
        ts["rejected_per_sec"] = wi[S.WI_REJECTED] / length
        ts["failed_per_sec"] = wi[S.WI_FAILED] / length  # Redis closed their connection
        ts["timeouts_per_sec"] = wi[S.WI_TIMEOUT] / length  # the client timeout passed
        ts["refused_per_sec"] = wi[S.WI_REFUSED] / length  # refused at maxclients
        ts["connected_clients"] = wi[S.WI_CONNECTED]
        ts["connections_opened"] = wi[S.WI_OPENED]
        ts["connections_closed"] = wi[S.WI_CLOSED]
        ts["evicted_clients"] = np.cumsum(wi[S.WI_EVICTED_CLIENTS])  # INFO evicted_clients
        ts["busy_connections"] = wf[S.W_BUSY_CONNS] / length
        ts["pool_waiters"] = wf[S.W_WAITERS] / length
        ts["queue_length"] = wf[S.W_IN_SERVER] / length
        ts["in_system"] = wf[S.W_IN_SYSTEM] / length
        ts["requests_in_flight"] = wi[S.WI_IN_FLIGHT]
        busy = np.zeros(n)
        for name, row in CPU_COLUMNS.items():
            ts[name] = wf[row] / length
            busy += wf[row]
        ts["cpu_idle"] = np.clip(1.0 - busy / length, 0.0, 1.0)
        ts["eventloop_cycles"] = wi[S.WI_CYCLES]
        done = wi[S.WI_DONE]
        with np.errstate(invalid="ignore", divide="ignore"):
            ts["latency_mean"] = np.where(done > 0, wf[S.W_LAT_SUM] / done, np.nan)
        for name, row in (("latency_p50", S.W_P50), ("latency_p90", S.W_P90),
                          ("latency_p99", S.W_P99), ("latency_p999", S.W_P999)):
            ts[name] = wf[row]
        ts["latency_max"] = np.where(done > 0, wf[S.W_LAT_MAX], np.nan)
        ts["hz"] = wf[S.W_HZ].astype(np.int64)
        ts["active_defrag_running"] = wi[S.WI_DF_RUNNING]  # the pass's effort, %
        ts["active_defrag_hits"] = np.cumsum(wi[S.WI_DF_HITS])  # INFO's counter
        _memory_columns(ts, wi, scenario, length)

        counts = w.rc_hist.copy()
        lat_n = int(w.I[S.LAT_N])
        warm = float(scenario.warmup)
        post = starts >= warm - 1e-12
        span = float(length[post].sum()) or 1.0
        lat_max = float(np.nanmax(ts["latency_max"][post])) if lat_n else float("nan")
        pct = dict(zip(PERCENTILES, quantiles(counts, list(PERCENTILES.values())), strict=True))
        latency = Latency(edges=_EDGES, counts=counts,
                          mean=float(w.F[S.LAT_SUM] / lat_n) if lat_n else float("nan"),
                          max=lat_max, percentiles=pct)
        cpu = {name: float(wf[row][post].sum() / span) for name, row in CPU_COLUMNS.items()}
        summary: dict[str, Any] = {
            "scenario": scenario.name,
            "seed": seed,
            "redis_version": scenario.redis_version,
            "duration_s": horizon,
            "warmup_s": warm,
            "requests_completed": lat_n,
            "throughput_rps": lat_n / (horizon - warm),
            "ops_per_sec": float(wi[S.WI_COMMANDS][post].sum() / span),
            "latency_mean_s": latency.mean,
            **{f"latency_{k}_s": v for k, v in pct.items()},
            "latency_max_s": lat_max,
            "utilisation": float(sum(cpu.values())),
            **{f"{k}_share": v for k, v in cpu.items()},
            "mean_connected_clients": float(ts["connected_clients"][post].mean()),
            "mean_busy_connections": float(wf[S.W_BUSY_CONNS][post].sum() / span),
            "mean_queue_length": float(wf[S.W_IN_SERVER][post].sum() / span),
            "mean_in_system": float(wf[S.W_IN_SYSTEM][post].sum() / span),
            "mean_pool_waiters": float(wf[S.W_WAITERS][post].sum() / span),
            "eventloop_cycles_per_sec": float(wi[S.WI_CYCLES][post].sum() / span),
            "total_commands_processed": int(w.I[S.STAT_COMMANDS]),
            "total_connections_received": int(w.I[S.STAT_CONNECTIONS]),
            "requests_rejected": int(w.I[S.REQ_REJECTED]),
            "requests_failed": int(w.I[S.REQ_FAILED]),
            "requests_timed_out": int(w.I[S.REQ_TIMEOUT]),
            "connections_refused": int(w.I[S.REQ_REFUSED]),
            "connections_peak": int(w.I[S.CONNECTED_PEAK]),
            "connections_closed_by_server": int(w.I[S.STAT_SERVER_CLOSED]),
            "io_threaded_reads_processed": int(w.I[S.STAT_IO_READS]),
            "io_threaded_writes_processed": int(w.I[S.STAT_IO_WRITES]),
            "evicted_clients": int(w.I[S.STAT_EVICTED_CLIENTS]),
            "requests_issued_total": int(w.I[S.REQ_ISSUED]),
            "requests_completed_total": int(w.I[S.REQ_DONE]),
            "requests_pending_at_end": pending,
            "used_memory_end": int(ts["used_memory"].iloc[-1]) if n else 0,
            "used_memory_peak": int(ts["used_memory"].max()) if n else 0,
            "used_memory_rss_end": int(ts["used_memory_rss"].iloc[-1]) if n else 0,
            "used_memory_rss_peak": int(ts["used_memory_rss"].max()) if n else 0,
            "host_memory_peak": int(ts["host_memory"].max()) if n else 0,
            "allocator_allocated_end": int(ts["allocator_allocated"].iloc[-1]) if n else 0,
            "allocator_active_end": int(ts["allocator_active"].iloc[-1]) if n else 0,
            "allocator_resident_end": int(ts["allocator_resident"].iloc[-1]) if n else 0,
            "allocator_frag_ratio_end": float(ts["allocator_frag_ratio"].iloc[-1]) if n else 0.0,
            "rss_overhead_ratio_end": float(ts["rss_overhead_ratio"].iloc[-1]) if n else 0.0,
            "mem_fragmentation_ratio_end": (float(ts["mem_fragmentation_ratio"].iloc[-1])
                                            if n else 0.0),
            "pages_purged": int(w.I[S.AL_PAGES_PURGED]),
            "keys_end": int(ts["keys"].iloc[-1]) if n else 0,
            "keyspace_hits": int(w.I[S.STAT_HITS]),
            "keyspace_misses": int(w.I[S.STAT_MISSES]),
            "expired_keys": int(w.I[S.STAT_EXPIRED]),
            "evicted_keys": int(w.I[S.STAT_EVICTED]),
            "lazyfreed_objects": int(w.I[S.STAT_LAZYFREED]),
            "lazyfree_pending_objects_end": int(w.I[S.LF_OBJECTS]),
            "expired_time_cap_reached_count": int(w.I[S.STAT_EXPIRE_CAPPED]),
            "oom_rejected": int(w.I[S.STAT_OOM]),
            "busy_rejected": int(w.I[S.STAT_BUSY]),
            "active_defrag_hits": int(w.I[S.STAT_DF_HITS]),
            "active_defrag_misses": int(w.I[S.STAT_DF_MISSES]),
            "active_defrag_key_hits": int(w.I[S.STAT_DF_KEY_HITS]),
            "active_defrag_key_misses": int(w.I[S.STAT_DF_KEY_MISSES]),
            "active_defrag_scanned": int(w.I[S.STAT_DF_SCANNED]),
            "scenario_hash": scenario_hash(scenario),
        }
        cycles = summary["eventloop_cycles_per_sec"]
        summary["commands_per_cycle"] = summary["ops_per_sec"] / cycles if cycles else 0.0
        summary.update(burst_summary(phases(ts)))
        groups, group_counts, group_series = _group_tables(scenario, w, n, length, summary,
                                                           counts)
        if group_series:  # joined at once: inserted one by one they fragment the frame
            ts = pd.concat([ts, pd.DataFrame(group_series, index=ts.index)], axis=1)
        stalls = _stall_table(w, ts, dt)
        summary.update(_stall_summary(w, stalls))
        summary["utilisation_peak"] = (float((busy[post] / length[post]).max())
                                       if post.any() else 0.0)
        summary["maxmemory"] = int(scenario.server.maxmemory)
        b = np.arange(len(w.rc_evhist))
        calls = pd.DataFrame({"usecs_lo": np.where(b == 0, 0, 2 ** b), "usecs_hi": 2 ** (b + 1) - 1,
                              "count": w.rc_evhist.copy(), "tofree_lo": np.where(b == 0, 0, 2 ** b),
                              "tofree_hi": 2 ** (b + 1) - 1, "tofree_count": w.rc_tofree.copy()})
        summary["eviction_calls"] = int(w.rc_evhist.sum())
        summary["eviction_calls_over_limit"] = int(w.rc_tofree.sum())
        forks, passes, lm, fsyncs = _persistence_tables(scenario, w, info)
        summary.update(_persistence_summary(w, ts, forks, passes, fsyncs))
        replication = _replication_table(w)
        summary.update(_replication_summary(w, ts, replication))
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


def _stall_summary(w: S.World, stalls: pd.DataFrame) -> dict[str, Any]:
    """``stalls`` (all, kept or not), ``stall_causes`` (``cause=count;...``, most
    first), ``stall_max_s`` and ``stall_time_s`` (the kept ones' total)."""
    return {"stalls": int(w.I[S.N_STALLS]),
            "stall_causes": join_causes(stalls["cause"].value_counts().to_dict()),
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


# sizeof() terms of Redis's per-db overhead (object.c getMemoryOverheadData):
# dictEntry and robj per key, dictEntry per TTL, a pointer per bucket.
_DICT_ENTRY, _ROBJ, _BUCKET = 24, 16, 8


def _memory_columns(ts: pd.DataFrame, wi: np.ndarray, scenario, length: np.ndarray) -> None:
    """INFO memory/keyspace columns: gauges at each window's end, counters cumulative."""
    from redsim.model.memory import STARTUP_BYTES

    used = wi[S.WI_USED_MEMORY]
    keys, expires = wi[S.WI_KEYS], wi[S.WI_EXPIRES]
    clients = wi[S.WI_MEM_CLIENTS]
    startup = STARTUP_BYTES[scenario.redis_version]
    overhead = (startup + clients + keys * (_DICT_ENTRY + _ROBJ) + expires * _DICT_ENTRY
                + wi[S.WI_BUCKETS] * _BUCKET)
    ts["used_memory"] = used
    ts["used_memory_dataset"] = used - overhead
    ts["used_memory_overhead"] = overhead
    ts["mem_clients_normal"] = wi[S.WI_MEM_CLIENTS_INFO]  # as INFO reports it (lags)
    ts["mem_clients_true"] = clients  # what used_memory holds for clients now
    ts["maxmemory"] = int(scenario.server.maxmemory)
    ts["keys"] = keys
    ts["expires"] = expires
    ts["keyspace_hits"] = np.cumsum(wi[S.WI_HITS])
    ts["keyspace_misses"] = np.cumsum(wi[S.WI_MISSES])
    ts["expired_keys"] = np.cumsum(wi[S.WI_EXPIRED])
    ts["expired_per_sec"] = wi[S.WI_EXPIRED] / length
    ts["evicted_keys"] = np.cumsum(wi[S.WI_EVICTED])
    ts["lazyfree_pending_objects"] = wi[S.WI_LF_PENDING]
    ts["lazyfreed_objects"] = np.cumsum(wi[S.WI_LAZYFREED])
    ts["evicted_per_sec"] = wi[S.WI_EVICTED] / length
    ts["oom_rejected_per_sec"] = wi[S.WI_OOM] / length
    ts["busy_rejected_per_sec"] = wi[S.WI_BUSY] / length
    # Persistence (INFO persistence), gauges at each window's end.
    ts["aof_buffer_length"] = wi[S.WI_AOF_BUF]
    ts["aof_current_size"] = wi[S.WI_AOF_SIZE]
    ts["aof_delayed_fsync"] = np.cumsum(wi[S.WI_AOF_DELAYED])
    ts["fsyncs_per_sec"] = wi[S.WI_FSYNCS] / length
    ts["rdb_changes_since_last_save"] = wi[S.WI_DIRTY]
    ts["rdb_bgsave_in_progress"] = (wi[S.WI_CHILD] == S.CHILD_RDB).astype(np.int64)
    ts["aof_rewrite_in_progress"] = (wi[S.WI_CHILD] == S.CHILD_AOF).astype(np.int64)
    ts["total_forks"] = np.cumsum(wi[S.WI_FORKS])
    ts["current_cow_size"] = wi[S.WI_COW_BYTES]
    # The process's RSS and jemalloc's figures (model/rss.py), and INFO's ratios
    # (src/server.c:genRedisInfoString). A fork child's copied pages are its own:
    # on the host they come on top of used_memory_rss (host_memory).
    rss = wi[S.WI_RSS]
    allocated, active, resident = wi[S.WI_AL_ALLOCATED], wi[S.WI_AL_ACTIVE], wi[S.WI_AL_RESIDENT]
    ts["used_memory_rss"] = rss
    ts["allocator_allocated"] = allocated
    ts["allocator_active"] = active
    ts["allocator_resident"] = resident
    with np.errstate(divide="ignore", invalid="ignore"):
        ts["allocator_frag_ratio"] = np.round(active / allocated, 2)
        ts["allocator_rss_ratio"] = np.round(resident / active, 2)
        ts["rss_overhead_ratio"] = np.round(rss / resident, 2)
        ts["mem_fragmentation_ratio"] = np.round(rss / used, 2)
    ts["allocator_frag_bytes"] = active - allocated
    ts["allocator_rss_bytes"] = resident - active
    ts["rss_overhead_bytes"] = rss - resident
    ts["mem_fragmentation_bytes"] = rss - used
    ts["host_memory"] = rss + wi[S.WI_COW_BYTES]
    # Replication (INFO replication / memory), gauges at each window's end.
    ts["master_repl_offset"] = wi[S.WI_REPL_OFFSET]
    ts["connected_slaves"] = wi[S.WI_REPL_CONNECTED]
    ts["replicas_online"] = wi[S.WI_REPL_ONLINE]
    ts["mem_total_replication_buffers"] = wi[S.WI_REPL_BUF]
    ts["repl_max_lag_bytes"] = wi[S.WI_REPL_LAG]
    ts["replica_fullsync_buffer"] = wi[S.WI_REPL_LOCAL]  # dual-channel, on the replica
    ts["sync_full"] = np.cumsum(wi[S.WI_SYNC_FULL])
    ts["replica_obuf_disconnections"] = np.cumsum(wi[S.WI_REPL_DROPS])


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


def _persistence_summary(w: S.World, ts: pd.DataFrame, forks: pd.DataFrame,
                         passes: pd.DataFrame, fsyncs: pd.DataFrame) -> dict:
    """INFO persistence / stats figures for the summary."""
    out = {
        "aof_enabled": int(w.I[S.AOF_ON]),
        "aof_delayed_fsync": int(w.I[S.AOF_DELAYED]),
        "aof_fsyncs": int(w.I[S.STAT_FSYNCS]),
        "aof_current_size_end": int(w.I[S.AOF_SIZE]),
        "aof_buffer_length_max": int(ts["aof_buffer_length"].max()) if len(ts) else 0,
        "total_forks": int(w.I[S.STAT_FORKS]),
        "latest_fork_usec": int(round(float(w.F[S.LATEST_FORK]) * 1e6)),
        "fork_max_s": float(forks["fork_s"].max()) if len(forks) else 0.0,
        "rdb_saves": int(w.I[S.STAT_RDB_SAVES]),
        "aof_rewrites": int(w.I[S.STAT_AOF_REWRITES]),
        "cow_peak_bytes": int(ts["current_cow_size"].max()) if len(ts) else 0,
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


def _replication_summary(w: S.World, ts: pd.DataFrame, table: pd.DataFrame) -> dict:
    """INFO replication / stats figures for the summary (all 0 without replicas)."""
    n = int(w.I[S.REPL_N])
    states = [S.RS_NAMES[int(w.rp_state[r])] for r in range(n)]
    buf = ts["mem_total_replication_buffers"] if len(ts) else pd.Series([0])
    full = table[table["event"] == "full_resync"]["time"].to_numpy() if len(table) else []
    return {
        "connected_slaves_end": sum(st != "connecting" for st in states),
        "replica_states_end": states,
        # What each replica lacks at the end (master_repl_offset − what its link
        # delivered), B; 0 for one reconnecting or waiting for its sync.
        "replica_lag_bytes_end": [int(w.I[S.REPL_OFFSET] - w.rp_wire[r])
                                  if int(w.rp_state[r]) >= S.RS_BGSAVE else 0
                                  for r in range(n)],
        "master_repl_offset_end": int(w.I[S.REPL_OFFSET]),
        "sync_full": int(w.I[S.STAT_SYNC_FULL]),
        "sync_partial_ok": int(w.I[S.STAT_SYNC_PARTIAL_OK]),
        "sync_partial_err": int(w.I[S.STAT_SYNC_PARTIAL_ERR]),
        "replica_obuf_disconnections": int(w.I[S.STAT_REPL_OBUF_DROPS]),
        "replica_timeouts": int(w.I[S.STAT_REPL_TIMEOUTS]),
        "noreplicas_rejected": int(w.I[S.STAT_NOREPLICAS]),
        # At its largest, before a beforeSleep's writes: between the samples.
        "mem_total_replication_buffers_peak": max(int(w.I[S.REPL_BUF_PEAK]), int(buf.max())),
        # Dual-channel: the most stream a replica buffered itself in a full sync
        # (its replicas_replication_buffers; not the primary's memory), B.
        "replica_fullsync_buffer_peak": int(w.I[S.REPL_LOCAL_PEAK]),
        "full_resync_interval_mean_s": (float(np.diff(full).mean()) if len(full) > 1
                                        else None),
    }
