"""What a run on a host produces: each instance's ``Result`` and the host's figures.

The host's ``summary`` has every key a single run's has, aggregated over the
instances (``aggregate_summary`` says how), so the printed table, sweeps and
the testing API read it as they read one server's; the host's own figures are
added under ``host_*`` keys, and ``per_instance`` has one row per instance.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from redsim.model.histogram import quantiles
from redsim.observe import metrics as M
from redsim.result import (
    PERCENTILES,
    Latency,
    Result,
    _jsonable,
    declared,
    draw_guarded,
    join_causes,
)

HOST_COLUMNS = ("host_cpu_redis", "host_cpu_io_threads", "host_cpu_children",
                "host_cpu_softirq", "host_cpu_irq", "host_cpu_clients", "host_cpu_lazyfree",
                "host_cpu_idle", "host_threads_runnable")
"""The host's time series columns: cores' worth of CPU (0..cores) per activity
(the instances' main threads, their I/O threads, fork children, the kernel's
network softirq and hard-IRQ work, same-host client threads, lazyfree
threads, idle), averaged over each sample window, and the mean runnable
threads."""

def _hosted(s: dict) -> bool:
    """The summary's host lines are printed: a host with cores or instances."""
    return s.get("host_cores") is not None or s.get("instances", 1) > 1


def _cores(s: dict, *activities: str) -> str:
    return " / ".join(f"{s[f'host_cpu_{k}_cores']:.2f}" for k in activities)


_ACTIVITY = {"redis": "the instances' main threads", "io_threads": "their I/O threads",
             "children": "fork children", "softirq": "network softirq",
             "irq": "hard IRQs", "clients": "same-host client threads",
             "lazyfree": "lazyfree threads", "idle": "idle"}

RESULTS = (
    M.Metric("instances", "-", M.HOST, "server instances on the host",
             made_by="HostResult.build",
             line=M.Line(440, "instances on the host", lambda s: f"{s['instances']} on " + (
                 f"{s['host_cores']} cores" if s.get("host_cores") else "a core each"),
                 when=_hosted)),
    M.Metric("host_cores", "-", M.HOST, "the host's cores (None: a core per thread)",
             made_by="HostResult.build"),
    *(M.Metric(f"{col}_cores", "cores", M.HOST, f"cores' worth of CPU on {_ACTIVITY[k]}, "
               "mean after the warm-up", made_by="HostResult.build")
      for col, k in zip(HOST_COLUMNS[:-1], _ACTIVITY, strict=True)),
    *(M.Metric(f"{col}_share", "-", M.HOST, f"the host's cores' share on {_ACTIVITY[k]} "
               "(only with host.cores)", made_by="HostResult.build")
      for col, k in zip(HOST_COLUMNS[:-1], _ACTIVITY, strict=True)),
    M.Metric("threads_runnable", "-", M.HOST, "runnable threads, mean after the warm-up",
             made_by="HostResult.build",
             line=M.Line(500, "  runnable threads (mean)",
                         lambda s: f"{s['threads_runnable']:.2f}", when=_hosted)),
    M.Metric("instance_throughput_min_rps", "1/s", M.HOST, "the slowest instance's "
             "throughput", made_by="HostResult.build",
             line=M.Line(450, "  per instance: throughput min / max", lambda s: (
                 f"{s['instance_throughput_min_rps']:,.0f} / "
                 f"{s['instance_throughput_max_rps']:,.0f} req/s"), when=_hosted)),
    M.Metric("instance_throughput_max_rps", "1/s", M.HOST, "the fastest instance's "
             "throughput", made_by="HostResult.build"),
    M.Metric("instance_p99_max_s", "s", M.HOST, "the worst instance's p99",
             made_by="HostResult.build",
             line=M.Line(460, "  worst instance's p99",
                         lambda s: M.fmt_s(s["instance_p99_max_s"]), when=_hosted)),
    M.Line(470, "host CPU, cores: main threads / I/O threads / fork children",
           lambda s: _cores(s, "redis", "io_threads", "children"), when=_hosted),
    M.Line(480, "  same-host clients", lambda s: _cores(s, "clients"), when=_hosted),
    M.Line(490, "  softirq / hard IRQ / idle", lambda s: _cores(s, "softirq", "irq", "idle"),
           when=_hosted),
)
"""The host's own summary keys (``observe/metrics.py``; combined by no rule:
``HostResult.build`` makes them from the scheduler's windows)."""


def aggregate_summary(results: list[Result], counts: np.ndarray) -> dict[str, Any]:
    """One summary for the instances together, each key by the rule its
    declaration names (``Metric.combine``, ``observe/metrics.Combine``): counts,
    rates, bytes and clients add up; latency percentiles come from the merged
    histogram ``counts`` (a client group's from its merged histograms) and the
    mean is weighted by requests; the main thread's shares and the ratios are
    the instances' mean; maxima are maxima; ``burst_detected`` is any
    instance's; memory peaks are the peaks of the instances' summed series."""
    decl = declared()
    out: dict[str, Any] = {}
    first = results[0].summary
    late: list[tuple[str, M.Combine]] = []
    for key, v0 in first.items():
        metric = decl.of(key)
        if metric is None:
            raise KeyError(f"summary key {key!r} is declared by no RESULTS block")
        rule = metric.combine
        vals = [r.summary.get(key) for r in results]
        group, dot, _ = key.rpartition(".")
        if rule.rule in ("first", "host"):
            out[key] = v0
        elif rule.rule == "histogram":
            continue  # from the merged histograms below
        elif rule.rule == "weighted":
            weight = f"{group}.{rule.of}" if dot else str(rule.of)
            n = np.array([r.summary.get(weight, 0) for r in results], dtype=float)
            ok = (n > 0) & np.array([v is not None for v in vals])
            out[key] = (float(np.dot(n[ok], np.array(vals, dtype=float)[ok]) / n[ok].sum())
                        if ok.any() else float("nan"))
        elif rule.rule == "causes":
            out[key] = _merge_causes(vals)
        elif rule.rule == "any":
            out[key] = any(bool(v) for v in vals)
        elif rule.rule == "ratio":
            out[key] = None  # below, from the keys it divides once they are combined
        elif isinstance(v0, bool) or not isinstance(v0, (int, float)) or v0 is None:
            out[key] = v0
        elif any(v is None for v in vals):
            out[key] = None
        elif rule.rule in ("max", "series_peak"):
            out[key] = max(vals)
        elif rule.rule == "mean":
            out[key] = float(np.mean(vals))
        elif rule.rule == "sum":
            out[key] = type(v0)(sum(vals))
        if rule.rule in ("series_peak", "ratio"):
            late.append((key, rule))
    for key, rule in late:
        if rule.rule == "series_peak":
            # The host's memory peaks are those of the instances' summed series
            # (all instances share the sample windows), not the largest instance's.
            if key in out and all(rule.of in r.timeseries for r in results):
                out[key] = int(sum(r.timeseries[rule.of] for r in results).max())
        else:
            num, den = rule.of
            total = out.get(den) or 0.0
            out[key] = out[num] / total if total else 0.0
    pct = quantiles(counts, list(PERCENTILES.values()))
    for name, v in zip(PERCENTILES, pct, strict=True):
        out[f"latency_{name}_s"] = float(v)
    # Each client group's percentiles from its histograms merged over the
    # instances that have it (every instance has the scenario's groups).
    for group in results[0].group_counts:
        merged = sum(r.group_counts[group] for r in results if group in r.group_counts)
        pct = quantiles(merged, list(PERCENTILES.values()))
        for name, v in zip(PERCENTILES, pct, strict=True):
            out[f"{group}.latency_{name}_s"] = float(v)
    return out


def _merge_causes(vals: list[Any]) -> str:
    """The instances' ``stall_causes`` (``cause=count;...``) added up, most first."""
    total: dict[str, int] = {}
    for v in vals:
        for part in filter(None, (v or "").split(";")):
            cause, _, k = part.partition("=")
            total[cause] = total.get(cause, 0) + int(k)
    return join_causes(total)


@dataclass
class HostResult:
    """The outcome of ``simulate`` for a scenario with ``instances`` > 1 or
    ``host.cores``: the host's summary and series, and every instance's
    ``Result`` (``instances[i]``). ``per_instance`` has a row per instance: its
    throughput, latency, main-thread busy share and CPU (cores), memory peak,
    evictions, forks, and its main thread's time by activity (``cpu_*_share``)."""

    scenario: Any
    seed: int
    instances: list[Result]
    timeseries: pd.DataFrame
    latency: Latency
    summary: dict[str, Any]
    per_instance: pd.DataFrame
    provenance: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, scenario: Any, seed: int, results: list[Result], windows: np.ndarray,
              instance_cpu: np.ndarray) -> HostResult:
        """The host's result from its instances' and the scheduler's records
        (``HostSimulation.windows`` rows and each window's per-instance CPU s)."""
        first = results[0]
        counts = np.sum([r.latency.counts for r in results], axis=0)
        summary = aggregate_summary(results, counts)
        summary["scenario"] = scenario.name
        summary["seed"] = seed
        summary["scenario_hash"] = _scenario_hash(scenario)
        lat = Latency(edges=first.latency.edges, counts=counts,
                      mean=summary["latency_mean_s"], max=summary["latency_max_s"],
                      percentiles={k: summary[f"latency_{k}_s"] for k in PERCENTILES})
        ts = _host_series(scenario, results, windows, instance_cpu)
        cores = scenario.host.cores
        post = ts.index.to_numpy() > float(scenario.warmup) + 1e-12
        summary["instances"] = len(results)
        summary["host_cores"] = cores
        for col in HOST_COLUMNS:
            v = float(ts[col][post].mean()) if post.any() else 0.0
            summary[col.removeprefix("host_") if col == "host_threads_runnable"
                    else col + "_cores"] = v
        if cores:
            for col in HOST_COLUMNS[:-1]:
                summary[col + "_share"] = summary[col + "_cores"] / cores
        rows = []
        for i, r in enumerate(results):
            s = r.summary
            rows.append({"instance": i, "name": instance_name(r),
                         "seed": r.seed, "throughput_rps": s["throughput_rps"],
                         "latency_mean_s": s["latency_mean_s"],
                         "latency_p99_s": s["latency_p99_s"],
                         "latency_max_s": s["latency_max_s"],
                         "main_thread_busy": s["utilisation"],
                         "main_thread_cpu_cores": float(ts[f"i{i}_cpu"][post].mean())
                         if post.any() else 0.0,
                         "mean_connected_clients": s["mean_connected_clients"],
                         "used_memory_peak": s["used_memory_peak"],
                         "evicted_keys": s["evicted_keys"], "total_forks":
                         s.get("total_forks", 0),
                         # The main thread's time by activity (Result's cpu_*_share).
                         **{k: v for k, v in s.items()
                            if k.startswith("cpu_") and k.endswith("_share")}})
        per = pd.DataFrame(rows).set_index("instance")
        summary["instance_throughput_min_rps"] = float(per["throughput_rps"].min())
        summary["instance_throughput_max_rps"] = float(per["throughput_rps"].max())
        summary["instance_p99_max_s"] = float(per["latency_p99_s"].max())
        provenance = {**first.provenance, "seed": seed, "scenario_name": scenario.name,
                      "scenario_hash": summary["scenario_hash"],
                      "instance_seeds": [r.seed for r in results]}
        return cls(scenario, seed, results, ts, lat, summary, per, provenance)

    def phases(self) -> pd.DataFrame:
        """Every instance's eviction-cycle table, with an ``instance`` column."""
        tables = [r.phases().assign(instance=i) for i, r in enumerate(self.instances)]
        tables = [t for t in tables if len(t)]
        return pd.concat(tables, ignore_index=True) if tables else self.instances[0].phases()

    def save(self, directory: str | Path, plots: bool = True) -> Path:
        """Write the host's run folder: ``summary.json``, ``host_timeseries.csv``,
        ``instances.csv``, ``latency_histogram.csv``, ``provenance.json``,
        ``host.png`` (CPU by activity and each instance's rate and p99) and one
        run folder per instance under ``instances/i<k>`` (their own figures only
        with ``plots``). Data first, then figures, each on its own."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(_jsonable(self.summary), indent=2,
                                                     sort_keys=True) + "\n")
        self.timeseries.to_csv(out / "host_timeseries.csv", float_format="%.9g")
        self.per_instance.to_csv(out / "instances.csv", float_format="%.9g")
        self.latency.table().to_csv(out / "latency_histogram.csv", index=False)
        (out / "provenance.json").write_text(json.dumps(self.provenance, indent=2,
                                                        sort_keys=True) + "\n")
        for i, r in enumerate(self.instances):
            r.save(out / "instances" / f"i{i}", plots=plots)
        if plots:
            draw_guarded(out / "host.png", lambda: _host_figure(self, out / "host.png"),
                         f"the data are in {out / 'host_timeseries.csv'}")
        return out


def _scenario_hash(scenario: Any) -> str:
    from redsim.config import scenario_hash

    return scenario_hash(scenario)


def _host_series(scenario: Any, results: list[Result], windows: np.ndarray,
                 instance_cpu: np.ndarray) -> pd.DataFrame:
    """The host's series on the instances' sample windows: requests/s and
    commands/s added up, each instance's rate, p99 and main-thread CPU, the
    worst instance's p99 and busiest main thread, and the host's CPU by activity
    (cores' worth), from the scheduler's windows."""
    idx = results[0].timeseries.index
    ts = pd.DataFrame(index=idx)
    for col in ("requests_per_sec", "instantaneous_ops_per_sec", "offered_per_sec",
                "connected_clients", "used_memory", "maxmemory", "lazyfree_pending_objects",
                "lazyfreed_objects"):
        if col in results[0].timeseries:
            ts[col] = sum(r.timeseries[col] for r in results)
    ts["latency_p99"] = np.nanmax([r.timeseries["latency_p99"] for r in results], axis=0)
    ts["latency_max"] = np.nanmax([r.timeseries["latency_max"] for r in results], axis=0)
    ts["cpu_idle"] = np.min([r.timeseries["cpu_idle"] for r in results], axis=0)
    for name in ("cpu_eviction",):
        ts[name] = np.max([r.timeseries[name] for r in results], axis=0)
    for i, r in enumerate(results):
        ts[f"i{i}_requests_per_sec"] = r.timeseries["requests_per_sec"]
        ts[f"i{i}_latency_p99"] = r.timeseries["latency_p99"]
    # The scheduler's windows, folded into the sample windows (a window straddling
    # a sample boundary is split in proportion to its time on each side).
    dt = float(scenario.sample_interval)
    n = len(idx)
    starts = np.arange(n) * dt
    ends = np.minimum(starts + dt, float(scenario.duration))
    length = ends - starts
    t0, t1 = windows[:, 0], windows[:, 1]
    cores = scenario.host.cores
    acc = np.zeros((n, 8 + instance_cpu.shape[1]))
    vals = np.column_stack([windows[:, 2], windows[:, 3], windows[:, 4], windows[:, 5],
                            windows[:, 7], windows[:, 8], windows[:, 9],
                            windows[:, 6] * (t1 - t0), instance_cpu])
    for k in range(n):
        lo = np.maximum(t0, starts[k])
        hi = np.minimum(t1, ends[k])
        frac = np.clip(hi - lo, 0.0, None) / np.maximum(t1 - t0, 1e-300)
        acc[k] = frac @ vals
    acc /= length[:, None]
    ts["host_cpu_redis"] = acc[:, 0]
    ts["host_cpu_io_threads"] = acc[:, 4]
    ts["host_cpu_children"] = acc[:, 1]
    ts["host_cpu_softirq"] = acc[:, 2]
    ts["host_cpu_irq"] = acc[:, 3]
    ts["host_cpu_clients"] = acc[:, 5]
    ts["host_cpu_lazyfree"] = acc[:, 6]
    ts["host_cpu_idle"] = (np.clip(cores - acc[:, :7].sum(axis=1), 0.0, None)
                           if cores else np.nan)
    ts["host_threads_runnable"] = acc[:, 7]
    for i in range(instance_cpu.shape[1]):
        ts[f"i{i}_cpu"] = acc[:, 8 + i]
    return ts


def instance_name(r: Result) -> str:
    """An instance's name: its entry's in ``instances: [...]``, else ``i<k>``
    (the part after the last / of its scenario's name, ``host/instances.py``;
    ``i0`` for a host's only instance)."""
    name = str(r.scenario.name)
    return name.rsplit("/", 1)[-1] if "/" in name else "i0"


def _host_figure(res: HostResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ts = res.timeseries
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    t = ts.index.to_numpy()
    a1.stackplot(t, ts["host_cpu_redis"], ts["host_cpu_io_threads"], ts["host_cpu_children"],
                 ts["host_cpu_softirq"], ts["host_cpu_irq"], ts["host_cpu_clients"],
                 ts["host_cpu_lazyfree"],
                 labels=["Redis main threads", "I/O threads", "fork children",
                         "softirq (network)", "hard IRQ", "same-host clients",
                         "lazyfree threads"])
    if res.scenario.host.cores:
        a1.axhline(res.scenario.host.cores, color="k", lw=0.8, ls="--", label="cores")
    a1.set_ylabel("cores")
    a1.legend(loc="upper left", fontsize=8, ncol=2)
    n = len(res.instances)
    for i in range(n):
        label = instance_name(res.instances[i])
        a2.plot(t, ts[f"i{i}_requests_per_sec"] / 1e3, lw=0.8, label=label)
        a3.plot(t, ts[f"i{i}_latency_p99"] * 1e3, lw=0.8)
    if n <= 12:
        a2.legend(fontsize=7, ncol=min(n, 6), loc="upper right")
    a2.set_ylabel("requests/s per instance (K)")
    a3.set_ylabel("p99 per instance (ms)")
    a3.set_xlabel("time (s)")
    fig.suptitle(f"{res.scenario.name}: {n} instance(s) on "
                 f"{res.scenario.host.cores or 'dedicated'} cores")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
