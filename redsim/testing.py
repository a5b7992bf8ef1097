"""Burst / no-burst assertions for a capacity planner's own test suite.

```python
from redsim.testing import assert_burst, assert_no_burst, assert_replicas_keep_up, headroom

def test_our_cache_survives_black_friday():
    assert_no_burst("scenarios/our-cache.yaml", set=["clients[0].rate=40k/s"],
                    seeds=(1, 2, 3))

def test_the_replica_survives_a_full_sync_at_peak():
    assert_replicas_keep_up("scenarios/our-cache.yaml", set=["clients[0].rate=40k/s"])

def test_cpu_headroom_is_at_least_20_percent():
    h = headroom("scenarios/our-cache.yaml", "engine.cpu.scale", to=2.0)
    assert h.boundary >= 1.2, h
```

A burst is what ``redsim.analysis.phases`` calls one: a stretch of windows in
which the main thread is >= 95 % busy with >= 10 % of it in
``performEvictions`` while the answered-request rate falls to <= 50 % of
normal. Failure messages print the run's phase table and the figure that
crossed (or, for ``assert_burst``, the one that fell short).

Runs are cached by scenario hash and seed when a cache is given (a folder, or
the ``redsim`` pytest fixture's, which lives in pytest's cache directory):
the second test that asks for the same run reads it from disk. A cached run
is reused only by the model version that made it.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from redsim.analysis.phases import (
    BURST_RATE_DIP,
    COLUMNS,
    EVICTION_SHARE,
    SATURATED,
    format_table,
)
from redsim.config import load_scenario as _load_scenario
from redsim.config import resolved_dict, scenario_hash
from redsim.config.errors import UnmodelledDirectiveWarning
from redsim.config.schema import Scenario
from redsim.sweep.frontier import bisect
from redsim.sweep.frontier import criterion as parse_criterion
from redsim.sweep.grid import read_path
from redsim.sweep.runner import RunTask, execute
from redsim.sweep.store import RunStore

ScenarioLike = str | os.PathLike[str] | dict | Scenario


@dataclass
class Run:
    """One run as the assertions see it: summary, cycle table and peak figures."""

    scenario: Scenario
    seed: int
    summary: dict[str, Any]
    phases: pd.DataFrame
    peaks: dict[str, float]
    error: str = ""
    cached: bool = False

    @property
    def name(self) -> str:
        return f"{self.scenario.name} (seed {self.seed}, {self.scenario.duration:g} s simulated)"


class RunCache:
    """Runs on disk, keyed by scenario hash and seed (a ``RunStore`` folder)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.store = RunStore(folder)

    def get(self, key: str, seed: int) -> dict | None:
        return self.store.get(key, seed)

    def put(self, record: dict) -> None:
        self.store.put(record)


def load_scenario(source: Any, **kw: Any) -> Scenario:
    """``redsim.load_scenario`` without repeating the unmodelled-directive warning
    for variants of a scenario the user already loaded (it was said once)."""
    with warnings.catch_warnings():
        if isinstance(source, dict) and "unmodelled" in (source.get("server") or {}):
            warnings.simplefilter("ignore", UnmodelledDirectiveWarning)
        return _load_scenario(source, **kw)


def _scenario(scenario: ScenarioLike, overrides: Sequence[str], duration: Any) -> Scenario:
    over = list(overrides)
    if duration is not None:
        over.append(f"duration={duration}")
    if isinstance(scenario, Scenario):
        if not over:
            return scenario
        scenario = resolved_dict(scenario)
    return load_scenario(scenario, overrides=over)


def run(scenario: ScenarioLike, *, seed: int | None = None, set: Sequence[str] = (),  # noqa: A002
        duration: Any = None, cache: RunCache | str | os.PathLike[str] | None = None) -> Run:
    """Simulate (or read from ``cache``) one run.

    Args:
        scenario: a scenario file, mapping or ``Scenario``.
        seed: default the scenario's.
        set: ``key=value`` overrides, as ``redsim run --set`` takes.
        duration: overrides the simulated duration (``5m``).
        cache: a ``RunCache`` or a folder for one.
    """
    sc = _scenario(scenario, set, duration)
    seed = sc.seed if seed is None else int(seed)
    if cache is not None and not isinstance(cache, RunCache):
        cache = RunCache(cache)
    key = scenario_hash(sc)
    rec = cache.get(key, seed) if cache is not None else None
    cached = rec is not None
    if rec is None:
        rec = execute(RunTask(key, seed, sc))
        if cache is not None:
            cache.put(rec)
    return Run(sc, seed, rec.get("summary") or {},
               pd.DataFrame(rec.get("phases") or [], columns=COLUMNS),
               rec.get("peaks") or {}, rec.get("error") or "", cached)


def _runs(scenario, seeds, overrides, duration, cache) -> list[Run]:
    out = []
    for s in seeds if seeds is not None else (None,):
        r = run(scenario, seed=s, set=overrides, duration=duration, cache=cache)
        if r.error:
            raise AssertionError(f"{r.name} raised instead of running: {r.error}")
        out.append(r)
    return out


def _burst_rows(r: Run) -> pd.DataFrame:
    return r.phases[r.phases["burst"].astype(bool)] if len(r.phases) else r.phases


def _explain_burst(r: Run) -> str:
    bursts = _burst_rows(r)
    first = bursts.iloc[0]
    return (
        f"{r.name} has {len(bursts)} eviction burst{'s' * (len(bursts) != 1)}.\n"
        f"  first burst: Phase 2 from {first.phase2_start:.0f} s to {first.phase2_end:.0f} s "
        f"— the main thread was >= {SATURATED:.0%} busy with >= {EVICTION_SHARE:.0%} in "
        f"performEvictions, and the answered-request rate fell to {first.rate_dip:.0%} of "
        f"normal (a burst is <= {BURST_RATE_DIP:.0%}); p99 in Phase 2 "
        f"{first.p99_phase2_s * 1e3:.0f} ms; memory given back "
        f"{first.memory_drop_bytes / 2**20:.0f} MB.\n"
        f"  phase table (redsim.analysis.phases):\n{format_table(r.phases)}")


def assert_no_burst(scenario: ScenarioLike, *, seeds: Iterable[int] | None = None,
                    set: Sequence[str] = (), duration: Any = None,  # noqa: A002
                    max_p99: float | str | None = None, max_rss: int | str | None = None,
                    cache: RunCache | str | os.PathLike[str] | None = None,
                    group: str | None = None) -> list[Run]:
    """Fail if any run (one per seed; default the scenario's seed) has an eviction
    burst, or, with ``max_p99`` (s, or a duration such as ``"5ms"``), a p99 latency
    above it, or, with ``max_rss``
    (bytes, or a size such as ``"2gb"``), a ``used_memory_rss`` peak above it.
    With ``group`` (a client group's name) ``max_p99`` is that group's p99, not
    the whole run's. Returns the runs."""
    from redsim.config.units import parse_duration, parse_size

    rss_limit = None if max_rss is None else parse_size(max_rss)
    max_p99 = None if max_p99 is None else parse_duration(max_p99)
    runs = _runs(scenario, seeds, set, duration, cache)
    for r in runs:
        if r.summary.get("burst_detected"):
            raise AssertionError(_explain_burst(r))
        rss = r.summary.get("used_memory_rss_peak")
        if rss_limit is not None and rss is not None and rss > rss_limit:
            raise AssertionError(
                f"{r.name}: no burst, but used_memory_rss peaked at {rss / 2**20:,.1f} MB, "
                f"over max_rss {rss_limit / 2**20:,.1f} MB (used_memory peak "
                f"{r.summary['used_memory_peak'] / 2**20:,.1f} MB; allocator_frag_ratio at "
                f"the end {r.summary.get('allocator_frag_ratio_end', math.nan):.2f})")
        key = "" if group is None else f"{_group_key(r, group)}."
        p99 = r.summary.get(f"{key}latency_p99_s")
        if max_p99 is not None and p99 is not None and p99 > max_p99:
            who = "p99 latency" if group is None else f"group {group!r}'s p99 latency"
            raise AssertionError(
                f"{r.name}: no burst, but {who} {p99 * 1e3:.3f} ms exceeds "
                f"max_p99 {max_p99 * 1e3:.3f} ms (p99.9 "
                f"{r.summary[f'{key}latency_p999_s'] * 1e3:.3f} ms, main thread "
                f"{r.summary['utilisation']:.0%} busy on average){_worst_stall(r)}")
    return runs


def _worst_stall(r: Run) -> str:
    """The run's stalls by cause and the longest, for a failure message
    ("; no stall" without any)."""
    n = r.summary.get("stalls", 0)
    if not n:
        return "; no stall"
    return (f"; {n} stall{'s' * (n != 1)} ({r.summary['stall_causes'].replace(';', ', ')}), "
            f"the longest {r.summary['stall_max_s'] * 1e3:,.1f} ms")


def _group_key(r: Run, group: str) -> str:
    """``group`` if the run has a client group of that name, else a clear error."""
    names = [g.name for g in r.scenario.clients]
    if group not in names:
        raise ValueError(f"{r.name}: no client group {group!r}; its groups are "
                         + ", ".join(repr(n) for n in names))
    return group


def _explain_no_burst(r: Run) -> str:
    p = r.peaks
    maxmem = p.get("maxmemory", 0.0)
    mem = (f"used_memory peaked at {p.get('used_memory_max', 0) / 2**20:,.0f} MB of "
           f"maxmemory {maxmem / 2**20:,.0f} MB ({p.get('used_memory_max', 0) / maxmem:.1%})"
           if maxmem else "no maxmemory, so nothing is evicted")
    lines = [f"{r.name} has no eviction burst.",
             f"  {mem};",
             f"  busiest window {p.get('busy_max', math.nan):.0%} busy (a burst needs >= "
             f"{SATURATED:.0%}), at most {p.get('cpu_eviction_max', math.nan):.0%} in "
             f"performEvictions (needs >= {EVICTION_SHARE:.0%});"]
    if len(r.phases):
        lines.append("  saturated eviction happened, but the request rate held "
                     f"(a burst needs it <= {BURST_RATE_DIP:.0%} of normal):\n"
                     + format_table(r.phases))
    return "\n".join(lines)


def assert_burst(scenario: ScenarioLike, *, seeds: Iterable[int] | None = None,
                 set: Sequence[str] = (), duration: Any = None,  # noqa: A002
                 within: float | None = None,
                 cache: RunCache | str | os.PathLike[str] | None = None) -> list[Run]:
    """Fail unless every run (one per seed) has an eviction burst — starting within
    ``within`` simulated seconds if given. Returns the runs."""
    runs = _runs(scenario, seeds, set, duration, cache)
    for r in runs:
        if not r.summary.get("burst_detected"):
            raise AssertionError(_explain_no_burst(r))
        start = float(_burst_rows(r).iloc[0].phase2_start)
        if within is not None and start > within:
            raise AssertionError(f"{r.name}: the first burst starts at {start:.0f} s, "
                                 f"later than within={within:g} s.\n"
                                 + format_table(r.phases))
    return runs


def assert_replicas_keep_up(scenario: ScenarioLike, *, seeds: Iterable[int] | None = None,
                            set: Sequence[str] = (), duration: Any = None,  # noqa: A002
                            max_lag: int | str | None = None,
                            cache: RunCache | str | os.PathLike[str] | None = None
                            ) -> list[Run]:
    """Fail if, in any run (one per seed), a replica falls out of sync: dropped
    for ``client-output-buffer-limit`` or ``repl-timeout``, a full sync beyond
    the one each ``start: full-sync`` replica asks for at the start, or a
    replica not online at the end — or, with ``max_lag`` (bytes, or a size such
    as ``"64mb"``), one that lacks more than that of the stream at the end.
    Returns the runs."""
    from redsim.config.units import parse_size

    lag_limit = None if max_lag is None else parse_size(max_lag)
    runs = _runs(scenario, seeds, set, duration, cache)
    for r in runs:
        s = r.summary
        states = s.get("replica_states_end") or []
        if not states:
            raise ValueError(f"{r.name}: no replicas (add `replicas:` to the scenario)")
        expected_full = sum(rep.count for rep in r.scenario.replicas if rep.start == "full-sync")
        hard, soft, secs = r.scenario.server.client_output_buffer_limit["replica"]
        why = []
        if s["replica_obuf_disconnections"]:
            why.append(f"{s['replica_obuf_disconnections']} dropped for "
                       f"client-output-buffer-limit replica {hard / 2**20:,.0f}mb "
                       f"{soft / 2**20:,.0f}mb {secs} (the replication buffer peaked at "
                       f"{s['mem_total_replication_buffers_peak'] / 2**20:,.1f} MB)")
        if s["replica_timeouts"]:
            why.append(f"{s['replica_timeouts']} link(s) dropped after repl-timeout")
        if s["sync_full"] > expected_full:
            every = s.get("full_resync_interval_mean_s")
            why.append(f"{s['sync_full']} full syncs ({expected_full} expected)"
                       + (f", one every {every:.1f} s" if every else ""))
        if any(st != "online" for st in states):
            why.append("at the end: " + ", ".join(states))
        lags = s.get("replica_lag_bytes_end") or []
        if lag_limit is not None and lags and max(lags) > lag_limit:
            why.append(f"at the end a replica lacks {max(lags) / 2**20:,.1f} MB of the stream "
                       f"(max_lag {lag_limit / 2**20:,.1f} MB)")
        if why:
            raise AssertionError(f"{r.name}: the replicas did not keep up: " + "; ".join(why)
                                 + f" (sync_partial_ok {s['sync_partial_ok']}, "
                                   f"sync_partial_err {s['sync_partial_err']})")
    return runs


@dataclass
class Headroom:
    """How far a field can move before bursts appear.

    Attributes:
        path: the field (dotted path).
        current: its value in the scenario (in the field's unit).
        to: the far end searched.
        boundary: the last value found on the safe side (``current`` if the
            scenario already fails; ``to`` if nothing in range fails).
        failing: the first value found on the failing side (None if none).
        probabilities: every value tried -> its probability.
    """

    path: str
    current: float
    to: float
    boundary: float
    failing: float | None
    criterion: str
    threshold: float
    probabilities: dict[float, float] = field(default_factory=dict)

    @property
    def margin(self) -> float:
        """``boundary / current`` (1.0: no headroom)."""
        return self.boundary / self.current if self.current else math.nan

    def __str__(self) -> str:
        if self.failing is None:
            return (f"{self.path}: no failure up to {self.to:g} (from {self.current:g}; "
                    f"P({self.criterion}) <= {self.threshold:g} everywhere tried)")
        if self.boundary == self.current and self.probabilities.get(self.current, 0) > \
                self.threshold:
            return (f"{self.path}: already failing at {self.current:g} "
                    f"(P({self.criterion}) = {self.probabilities[self.current]:.2f})")
        return (f"{self.path}: safe up to {self.boundary:g}, failing at {self.failing:g} "
                f"(from {self.current:g}: x{self.margin:.3g}; P({self.criterion}) "
                f"crosses {self.threshold:g} in between)")

    def __repr__(self) -> str:
        # pytest shows an assertion's message by repr(): `assert h.boundary >= 1.2, h`
        # must print the sentence, not the dataclass's fields (they stay attributes).
        return f"Headroom({self})"


def headroom(scenario: ScenarioLike, path: str, *, to: float, seeds: Iterable[int] | None = None,
             set: Sequence[str] = (), duration: Any = None,  # noqa: A002
             criterion: str = "burst_detected", threshold: float = 0.5,
             iterations: int = 6, log: bool = False,
             cache: RunCache | str | os.PathLike[str] | None = None) -> Headroom:
    """Bisect ``path`` between its current value and ``to`` for where the
    probability (over ``seeds``) of ``criterion`` (a summary key, or a comparison
    like ``latency_p99_s > 0.01``) crosses ``threshold``.

    Assumes the probability grows monotonically towards ``to``. The answer's
    resolution is ``|to - current| / 2**iterations`` (a ratio for ``log``).
    """
    base = _scenario(scenario, set, duration)
    current = read_path(resolved_dict(base), path)
    if isinstance(current, bool) or not isinstance(current, (int, float)):
        raise ValueError(f"headroom: {path} is {current!r}, not a number")
    key, predicate = parse_criterion(criterion)
    seed_list = list(seeds) if seeds is not None else [base.seed]
    base_data = resolved_dict(base)
    probs: dict[float, float] = {}

    def evaluate(pairs):
        out = []
        for _, y in pairs:
            if y not in probs:
                hits = 0
                sc = load_scenario(base_data, values=[(path, y, "headroom")])
                for s in seed_list:
                    r = run(sc, seed=s, cache=cache)
                    if r.error:
                        raise AssertionError(f"{r.name} raised: {r.error}")
                    hits += bool(predicate(r.summary.get(key)))
                probs[y] = hits / len(seed_list)
            out.append(probs[y])
        return out

    integer = isinstance(current, int) and float(to).is_integer()
    br = bisect([0], current, int(to) if integer else float(to), evaluate,
                threshold=threshold, iterations=iterations, log=log, integer=integer)[0]
    failing_start = br.pa > threshold
    if failing_start:
        return Headroom(path, current, to, current, current, criterion, threshold, probs)
    if br.pb <= threshold:
        return Headroom(path, current, to, br.b, None, criterion, threshold, probs)
    return Headroom(path, current, to, br.a, br.b, criterion, threshold, probs)


__all__ = ["Headroom", "Run", "RunCache", "assert_burst", "assert_no_burst",
           "assert_replicas_keep_up", "headroom", "run"]

