"""What ``redsim calibrate`` will do, how long each step should take, and its progress.

``plan()`` lists a calibration's steps, each with what it measures and an
estimate of its wall time computed from the step's own parameters — the
requests and repetitions of its loads, the keys it writes, the model replays of
the fit — and from how fast the reference host does one unit of each
(``REFERENCE``: redis-benchmark's rate per load shape, keys written per second,
the model's wall time per simulated command...). ``Progress`` says when each
step starts and ends, with its time against the estimate, and draws a tqdm bar
on stderr within the steps that take a while (a bar only on a terminal, and
never with ``REDSIM_NO_PROGRESS=1``).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from redsim.calibrate import dataset, measure, replay


@dataclass(frozen=True)
class HostSpeed:
    """How fast a host does the units calibration's steps are made of.

    Attributes:
        bench_rps: redis-benchmark's SET requests/s per load shape
            (clients, pipeline); another shape takes the nearest one's.
        bench_start_s: each redis-benchmark run's own time (process, connections,
            the INFO snapshots around it).
        element_cost: extra time of a request per extra key or member (MGET of 10
            keys takes 1 + 9 x this of a one-key request's time).
        fill_keys_per_s, fill_bytes_per_s: keys SET through redis-py pipelines
            (``load.fill``): per key, and per value byte.
        unlink_keys_per_s: keys removed by ``load.delete_prefix`` (SCAN + UNLINK).
        settle_s: ``load.settle`` on an idle server (its serverCron wait).
        model_start_s: the first model run of a process (loading the kernel's
            machine code from its cache).
        model_run_s: every model run's own time (the scenario, the keyspace).
        model_us_per_batch, model_us_per_command: wall µs per simulated request
            batch and per simulated command.
        fsync_s: one small append + fdatasync; write_bytes_per_s: the disk's
            sequential writes with fdatasync.
        fork_keys_per_s: keys a BGSAVE child writes per second (1000-B values).
        populate_keys_per_s: keys the dataset sweep writes per second (a Lua
            loop of SETs, ``dataset.populate``).
    """

    bench_rps: dict[tuple[int, int], float]
    bench_start_s: float
    element_cost: float
    fill_keys_per_s: float
    fill_bytes_per_s: float
    unlink_keys_per_s: float
    settle_s: float
    model_start_s: float
    model_run_s: float
    model_us_per_batch: float
    model_us_per_command: float
    fsync_s: float
    write_bytes_per_s: float
    fork_keys_per_s: float
    populate_keys_per_s: float = 1_000_000.0

    def rps(self, clients: int, pipeline: int) -> float:
        """redis-benchmark's rate at this shape (the nearest measured one's)."""
        if (clients, pipeline) in self.bench_rps:
            return self.bench_rps[(clients, pipeline)]
        near = min(self.bench_rps, key=lambda s: (abs(s[1] - pipeline), abs(s[0] - clients)))
        return self.bench_rps[near]

    def bench_s(self, ld: measure.CpuLoad, elements: int = 1) -> float:
        """One redis-benchmark load of ``elements`` keys or members per request."""
        per = (1 + self.element_cost * (elements - 1)) / self.rps(ld.clients, ld.pipeline)
        return self.bench_start_s + ld.requests * per

    def fill_s(self, keys: int, value_size: int) -> float:
        return keys / self.fill_keys_per_s + keys * value_size / self.fill_bytes_per_s

    def unlink_s(self, keys: int) -> float:
        return keys / self.unlink_keys_per_s

    def replay_s(self, ld: measure.CpuLoad, rate: float, budget: replay.FitBudget) -> float:
        """One replay of a load in the model at ``rate`` commands/s (``budget.matching``
        runs of ``budget.duration`` + ``warmup`` simulated seconds)."""
        per_s = rate * (self.model_us_per_command + self.model_us_per_batch / ld.pipeline) * 1e-6
        return budget.matching * (self.model_run_s + (budget.duration + budget.warmup) * per_s)


# Measured on this project's 2-vCPU VM (Intel Xeon, Debian's Redis 7.0.15 on
# loopback, the kernel's machine code cached), 2026-11-28: redis-benchmark SET
# loads timed at each shape (MGET of 10 keys ran at 0.30 of MGET of one's
# rate: 0.26 per extra key), load.fill of 100,000 keys at 3/100/1000 B,
# model runs of scenario() at each load's rate.
REFERENCE = HostSpeed(
    bench_rps={(50, 1): 100_000.0, (50, 16): 675_000.0, (1, 1): 78_000.0,
               (1, 16): 600_000.0},
    bench_start_s=0.02,
    element_cost=0.26,
    fill_keys_per_s=93_000.0,
    fill_bytes_per_s=650e6,
    unlink_keys_per_s=350_000.0,
    settle_s=0.2,
    model_start_s=2.0,
    model_run_s=0.04,
    model_us_per_batch=0.17,
    model_us_per_command=0.075,
    fsync_s=0.0003,
    write_bytes_per_s=400e6,
    fork_keys_per_s=300_000.0,
)
"""The reference host's speeds: the estimates are for it, and a slower or
busier machine takes longer (the step's end line says by how much)."""

@dataclass(frozen=True)
class Step:
    """One step of a calibration.

    Attributes:
        key: its name in ``Progress`` (``cpu.loads``, ``memory``...).
        part: the calibration part it belongs to (``ALL_PARTS``).
        title: a few words.
        what: what it measures, in a few words.
        how: its loads and sizes, from its parameters.
        estimate_s: wall time on the reference host.
        units, unit: its progress bar (0: no bar).
    """

    key: str
    part: str
    title: str
    what: str
    how: str
    estimate_s: float
    units: int = 0
    unit: str = ""
    revise: Callable[..., float] | None = field(default=None, compare=False, repr=False)
    """Re-estimates the step from what earlier steps measured (keyword facts)."""


def _loads_text(loads: tuple[measure.CpuLoad, ...]) -> str:
    return ", ".join(f"c={ld.clients} P={ld.pipeline} x {ld.requests:,}" for ld in loads)


def cpu_steps(commands: tuple[str, ...], reps: int, cpu: measure.CpuSettings,
              local: bool = True, speed: HostSpeed = REFERENCE) -> list[Step]:
    """The CPU part's steps: the SET loads, their fit in the model, the commands."""
    loads = cpu.loads + cpu.checks
    set_s = reps * sum(speed.bench_s(ld) for ld in loads)
    steps = [Step("cpu.loads", "cpu", "CPU per request",
                  "main-thread CPU per SET at pipeline 1 and 16 and for a lone client: "
                  "the read + write, command and sleeping-poll costs",
                  f"{len(loads)} redis-benchmark SET loads ({_loads_text(loads)} requests) "
                  f"x {reps} repetitions", set_s, reps * len(loads), "load")]
    # A server on another machine: its sleeps are unknown, the fit keeps the
    # 50-connection loads only (measure._fittable).
    fitted = tuple(ld for ld in cpu.loads if local or ld.clients > 1)
    budget = cpu.fit

    # Every round: on the reference host the fit has not converged to its
    # tolerance within them (the lone client's real rate, 78K/s, is beyond the
    # model's at its loopback round trip), so the estimate is its longest.
    def fit_s(rates: dict[measure.CpuLoad, float] | None = None) -> float:
        def rate(ld: measure.CpuLoad) -> float:
            return (rates or {}).get(ld) or speed.rps(ld.clients, ld.pipeline)

        one_round = sum(speed.replay_s(ld, rate(ld), budget) for ld in fitted)
        return (speed.model_start_s + (1 + budget.rounds) * one_round
                + sum(speed.replay_s(ld, rate(ld), budget) for ld in cpu.checks))

    sim = budget.duration + budget.warmup
    steps.append(Step(
        "cpu.fit", "cpu", "fit in the model",
        "the costs with which the model, run at each load's measured rate, spends the "
        "measured CPU per SET",
        f"{len(fitted)} loads replayed per round, {1 + budget.rounds} rounds (fewer once "
        f"every load is within {budget.tol:.1%}), "
        + (f"then {len(cpu.checks)} check load{'s' * (len(cpu.checks) != 1)} (not fitted); "
           if cpu.checks else "")
        + f"a replay is {budget.matching} model runs of {sim:g} simulated s",
        fit_s(), budget.replays(len(fitted), len(cpu.checks)), "replay", revise=fit_s))
    others = [c for c in commands if c != "SET"]
    if others:
        ld = cpu.command_load
        runs = 0
        cmd_s = 0.0
        for c in others:
            for elements in (1, measure.MULTI_ELEMENTS) if c in measure.MULTI else (1,):
                runs += 2 * reps
                cmd_s += reps * (speed.bench_s(ld) + speed.bench_s(ld, elements))
        multi = [c for c in others if c in measure.MULTI]
        steps.append(Step(
            "cpu.commands", "cpu", "CPU per command",
            "each command's cost, from its load next to a SET load of the same shape"
            + (" (fixed and per-element parts)" if multi else ""),
            f"{', '.join(others)}: {reps} x (a SET load and the command's) of "
            f"{ld.requests:,} requests at c={ld.clients} P={ld.pipeline}"
            + (f", and again with {measure.MULTI_ELEMENTS} elements for {', '.join(multi)}"
               if multi else ""), cmd_s, runs, "load"))
    return steps


def caches_step(reps: int, spec: dataset.Sweep = dataset.DEFAULT_SWEEP,
                speed: HostSpeed = REFERENCE) -> Step:
    """The caches part: its dataset sweep (``dataset.sweep``), one bar unit per
    value size."""
    total = 0.0
    shapes = []
    for v, sizes in spec.shapes():
        shapes.append(f"{v} B: {', '.join(f'{n:,}' for n in sizes)} keys")
        total += sizes[-1] / speed.populate_keys_per_s + speed.unlink_s(sizes[-1])
        total += len(sizes) * reps * 2 * sum(speed.bench_s(ld) for ld in dataset.LOADS)
    loads = _loads_text(dataset.LOADS)
    return Step("caches", "caches", "CPU against the dataset's size",
                "main-thread CPU per GET and SET as the dataset outgrows the CPU's caches: "
                "the miss costs", f"{'; '.join(shapes)} (up to {spec.max_bytes / 2**30:.3g} "
                f"GiB); GET and SET at {loads} x {reps}", total,
                len(spec.value_sizes), "value size")


def part_steps(part: str, speed: HostSpeed = REFERENCE) -> list[Step]:
    """The steps of a part other than cpu, from ``measure``'s parameters."""
    if part == "memory":
        sizes, n = measure.KEY_MEMORY_SIZES, measure.KEY_MEMORY_KEYS
        s = sum(2 * speed.settle_s + speed.fill_s(n, v) + speed.unlink_s(n) for v in sizes)
        return [Step("memory", part, "memory per key",
                     "used_memory per key at each value size, and the allocator's quantum",
                     f"{n:,} keys at {', '.join(map(str, sizes))}-byte values", s,
                     len(sizes), "size")]
    if part == "clients":
        n = measure.CLIENT_CONNECTIONS
        waits = sum(measure.CLIENT_WAITS_S)
        return [Step("clients", part, "memory per connection",
                     "mem_clients_normal per connection: fresh, after a request, idle",
                     f"{n} connections held {waits:g} s", speed.settle_s + waits)]
    if part == "eviction":
        reps, base, ld = (measure.EVICTION_REPS, measure.EVICTION_BASE_KEYS,
                          measure.EVICTION_LOAD)
        one = (2 * speed.settle_s + speed.fill_s(base, 100) + 2 * speed.bench_s(ld)
               + speed.unlink_s(base + 2 * ld.requests))
        return [Step("eviction", part, "eviction CPU",
                     "main-thread CPU per evicted key (allkeys-lru)",
                     f"{reps} x ({base:,} keys of 100 B, then {ld.requests:,} new-key SETs at "
                     f"c={ld.clients} P={ld.pipeline} without and with maxmemory)",
                     reps * one, reps, "repetition")]
    if part == "disk":
        n, most = measure.FSYNC_SAMPLES, measure.FSYNC_MAX_S
        total = measure.BANDWIDTH_BYTES
        s = min(n * speed.fsync_s, most) + total / speed.write_bytes_per_s
        return [Step("disk", part, "disk",
                     "fdatasync latency of an AOF-sized append, and write bandwidth",
                     f"up to {n} fdatasyncs of {measure.FSYNC_PROBE_BYTES} B (or {most:g} s), "
                     f"then {total >> 20} MB of writes", s)]
    if part == "fork":
        sizes, reps, v = measure.FORK_SIZES_MB, measure.FORK_REPS, measure.FORK_VALUE_SIZE
        keys = [measure.fork_keys(mb, v) for mb in sizes]
        s = speed.fill_s(keys[-1], v) + speed.unlink_s(keys[-1]) + sum(
            reps * (speed.settle_s + k / speed.fork_keys_per_s) for k in keys)
        return [Step("fork", part, "fork",
                     "fork() time against RSS, and the RDB child's keys per second",
                     f"BGSAVE x {reps} at {' and '.join(f'{mb} MB' for mb in sizes)} "
                     f"({keys[-1]:,} keys of {v} B at most)", s, reps * len(sizes), "BGSAVE")]
    raise ValueError(f"unknown calibration part {part!r}")


def plan(parts: tuple[str, ...], commands: tuple[str, ...], reps: int,
         cpu: measure.CpuSettings = measure.CPU_FULL, *, local: bool = True,
         data_dir: bool = True, speed: HostSpeed = REFERENCE,
         sweep: dataset.Sweep = dataset.DEFAULT_SWEEP) -> list[Step]:
    """The steps of a calibration of ``parts`` (in the order it runs them);
    ``local``: the server runs on this machine (its sleeps can be counted);
    ``data_dir``: a directory to probe the disk in is known (else no disk step);
    ``sweep``: what the caches part's dataset sweep measures."""
    steps: list[Step] = []
    for part in parts:
        if part == "cpu":
            steps += cpu_steps(commands, reps, cpu, local, speed)
        elif part == "caches":
            steps.append(caches_step(reps, sweep, speed))
        elif part != "disk" or data_dir:
            steps += part_steps(part, speed)
    return steps


KEY_TTL_FACTOR = 3.0
"""How many times the reference host's time a part may take before its keys
expire: a host that much slower still measures on all of them."""
KEY_TTL_MARGIN_S = 300.0
"""Added to the TTL, s: a part's start (deleting the last one's keys, settling)."""


def longest_part_s(steps: list[Step]) -> float:
    """The estimate of the longest part (its steps' sum), s: a key lives no longer
    than the part that wrote it (each part deletes the calibration's keys
    before it writes and when it ends)."""
    by_part: dict[str, float] = {}
    for s in steps:
        by_part[s.part] = by_part.get(s.part, 0.0) + s.estimate_s
    return max(by_part.values(), default=0.0)


def key_ttl_s(longest_s: float) -> int:
    """The TTL of the keys calibration writes on a server it did not start, s:
    ``KEY_TTL_FACTOR`` times the longest part's estimate plus ``KEY_TTL_MARGIN_S``,
    rounded up to a minute (7 min for ``--only eviction``, 17 min for a full
    calibration): long enough that no key expires while it is measured, short
    enough that a killed run's keys go by themselves within minutes."""
    return int(math.ceil((KEY_TTL_FACTOR * longest_s + KEY_TTL_MARGIN_S) / 60.0)) * 60


def duration(seconds: float) -> str:
    """``<1 s``, ``45 s``, ``2 min 10 s``, ``14 min``."""
    s = round(seconds)
    if s < 1:
        return "<1 s"
    if s < 60:
        return f"{s} s"
    if s < 600:
        return f"{s // 60} min {s % 60:02d} s" if s % 60 else f"{s // 60} min"
    return f"{round(seconds / 60)} min"


def describe(steps: list[Step], width: int = 100) -> str:
    """The plan as the CLI prints it before measuring (lines of at most ``width``)."""
    total = sum(s.estimate_s for s in steps)
    lines = [f"plan: {len(steps)} step(s), about {duration(total)} at the speed of the "
             "reference host (a 2-vCPU VM, the server on loopback)"]
    for i, s in enumerate(steps, 1):
        lines.append(f"  {i}. {s.title}: ~{duration(s.estimate_s)}")
        for text in (f"measures {s.what}", f"by {s.how}"):
            lines += textwrap.wrap(text, width, initial_indent="     ",
                                   subsequent_indent="       ")
    return "\n".join(lines)


def _bars_wanted() -> bool:
    return sys.stderr.isatty() and os.environ.get("REDSIM_NO_PROGRESS") != "1"


class Bar:
    """A step's progress bar (a no-op when bars are off)."""

    def __init__(self, bar: Any = None) -> None:
        self._bar = bar

    def update(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def note(self, text: str) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=True)


class Progress:
    """Says when each step of a plan starts and ends, and draws its bar.

    ``say`` gets the lines (through tqdm, so that they do not break a bar);
    ``bars``: draw tqdm bars on stderr (None: when stderr is a terminal and
    ``REDSIM_NO_PROGRESS`` is not 1). ``took`` keeps each step's time.
    """

    def __init__(self, steps: list[Step], say: Callable[[str], None] = print,
                 bars: bool | None = None) -> None:
        self.steps = list(steps)
        self._say = say
        self.bars = _bars_wanted() if bars is None else bars
        self.took: dict[str, float] = {}
        self.estimates = {s.key: s.estimate_s for s in self.steps}
        self._open = 0

    def say(self, text: str) -> None:
        if self._open:
            from tqdm import tqdm

            with tqdm.external_write_mode():
                self._say(text)
        else:
            self._say(text)

    def _find(self, key: str) -> tuple[int, Step] | None:
        for i, s in enumerate(self.steps, 1):
            if s.key == key:
                return i, s
        return None

    def left_s(self, after: str) -> float:
        """The estimates of the steps after ``after``."""
        keys = [s.key for s in self.steps]
        return sum(self.estimates[k] for k in keys[keys.index(after) + 1:])

    @contextlib.contextmanager
    def step(self, key: str, **facts: Any) -> Iterator[Bar]:
        """Run step ``key`` (a step not in the plan runs silently); ``facts``
        re-estimate it (the fit, at the rates the loads measured)."""
        found = self._find(key)
        if found is None:
            yield Bar()
            return
        i, s = found
        head = f"[{i}/{len(self.steps)}] {s.title}"
        est = self.estimates[key]
        if facts and s.revise is not None:
            est = self.estimates[key] = s.revise(**facts)
        self.say(f"{head}: ~{duration(est)}"
                 + (" at the rates measured" if facts and s.revise is not None else ""))
        bar = None
        if self.bars and s.units:
            from tqdm import tqdm

            bar = tqdm(total=s.units, unit=s.unit, desc=f"  {s.title}", leave=False,
                       file=sys.stderr, dynamic_ncols=True)
        self._open += bar is not None
        t0 = time.monotonic()
        try:
            yield Bar(bar)
        finally:
            if bar is not None:
                bar.close()
                self._open -= 1
        took = self.took[key] = time.monotonic() - t0
        left = self.left_s(key)
        self.say(f"{head}: done in {duration(took)} (estimated {duration(est)})"
                 + (f"; about {duration(left)} left" if left >= 1 else ""))

    def skip(self, key: str, why: str) -> None:
        """Say that step ``key`` is skipped, and why."""
        found = self._find(key)
        if found is not None:
            i, s = found
            self.took[key] = 0.0
            self.say(f"[{i}/{len(self.steps)}] {s.title}: skipped ({why})")

    def record(self) -> list[dict[str, Any]]:
        """Each step's estimate and time, for the calibration file's ``made``."""
        return [{"step": s.key, "estimate_s": round(self.estimates[s.key], 1),
                 "took_s": round(self.took[s.key], 1)} for s in self.steps
                if s.key in self.took]
