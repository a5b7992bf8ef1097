"""The measurements ``redsim calibrate`` makes on a live server.

Each function drives one bounded load against a ``Target`` and returns
``Measurement`` records: the value, its spread over repetitions, the scenario
field it fills (if any) and, in words, how it was measured. Everything reads
differences of INFO snapshots (``live.probe``); nothing resets a server's
statistics. Keys carry ``live.load.PREFIX`` and are deleted by the caller; on
a server redsim did not start they also carry a TTL (``Target.key_ttl_s``).

What changes a server's configuration (``maxmemory`` for the eviction load,
``BGSAVE`` for the fork) runs only on a server calibration may write to;
``Target.config_set`` records the value it replaces before changing it (in
the guardian's record too, ``live.guard``), and the original configuration
is put back in a ``finally``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redsim.calibrate import replay, solver
from redsim.live import load
from redsim.live.probe import Delta, local_pid, snapshot


@dataclass
class Target:
    """A server to calibrate against.

    Attributes:
        client: a redis-py client.
        host, port: where it listens.
        pid: its PID when it runs on this machine (for context switches), else None.
        can_write: calibration may write keys and change configuration.
        data_dir: where its RDB/AOF files go, when readable here (fsync probe).
        say: progress messages go here.
        progress: a ``plan.Progress`` that each measurement announces its steps
            to (None: they run silently).
        key_ttl_s: the TTL every key written carries, s (None: none, on a
            server redsim started and stops): keys a killed calibration left
            on a user's server expire by themselves.
        guard: the ``live.guard.Guard`` whose record ``config_set`` keeps up to
            date (None: no guardian, on a server redsim started).
        changed: per directive ``config_set`` changed, the value before it
            (``was``) and those it set (``set``), as CONFIG GET spells them.
    """

    client: Any
    host: str
    port: int
    pid: int | None
    can_write: bool
    data_dir: Path | None
    say: Callable[[str], None] = print
    progress: Any = None
    key_ttl_s: int | None = None
    guard: Any = None
    changed: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def connect(cls, host: str, port: int, *, can_write: bool,
                say: Callable[[str], None] = print, progress: Any = None) -> Target:
        import redis

        client = redis.Redis(host=host, port=port, socket_timeout=120)
        client.ping()
        pid = local_pid(client, host)
        data_dir = None
        if pid is not None:
            d = Path(client.config_get("dir").get("dir", ""))
            if d.is_dir() and os.access(d, os.W_OK):
                data_dir = d
        return cls(client, host, port, pid, can_write, data_dir, say, progress)

    def _config_get(self, name: str) -> str:
        return str(self.client.config_get(name)[name])

    def config_set(self, name: str, value: Any) -> None:
        """CONFIG SET ``name value``, the value it replaces recorded first (in
        ``changed`` and, with a guardian, on disk before the server changes), so
        that ``restore_config``, the guardian or ``redsim calibrate --cleanup``
        can put it back whatever ends the calibration."""
        entry = self.changed.get(name)
        if entry is None:
            entry = self.changed[name] = {"was": self._config_get(name), "set": []}
        entry["set"].append(str(value))
        if self.guard is not None:
            self.guard.note_config(self.changed)
        self.client.config_set(name, value)
        now = self._config_get(name)  # as the server spells it ("1gb" -> "1073741824")
        if now not in entry["set"]:
            entry["set"].append(now)
            if self.guard is not None:
                self.guard.note_config(self.changed)

    def restore_config(self) -> None:
        """Put back every directive ``config_set`` changed, as it was before."""
        for name, entry in self.changed.items():
            self.client.config_set(name, entry["was"])


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def note(self, text: str) -> None:
        pass


@contextlib.contextmanager
def _step(t: Any, key: str, **facts: Any) -> Iterator[Any]:
    """Step ``key`` of ``t.progress`` (its start, end and bar), if it has one."""
    progress = getattr(t, "progress", None)
    if progress is None:
        yield _NoBar()
    else:
        with progress.step(key, **facts) as bar:
            yield bar


@dataclass(frozen=True)
class Measurement:
    """One calibrated figure.

    Attributes:
        name: what it is, e.g. ``cpu.io_per_request``.
        value: the figure (mean over repetitions), in ``unit``.
        unit: ``us``, ``bytes``, ``s``, ``bytes/s``, ``1/s`` or ``-``.
        spread: sample standard deviation over repetitions (0 for one).
        n: repetitions (or samples).
        method: how it was measured, in words.
        field: the scenario field it fills (dotted path), or None (evidence only).
        values: the repetitions themselves, where they are kept (the SET loads'
            CPU figures, which the validation pools with its own repetitions).
    """

    name: str
    value: float
    unit: str
    spread: float
    n: int
    method: str
    field: str | None = None
    values: tuple[float, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "value": _round(self.value),
                               "unit": self.unit, "spread": _round(self.spread),
                               "n": self.n, "method": self.method}
        if self.field:
            out["field"] = self.field
        if self.values:
            out["values"] = [_round(v) for v in self.values]
        return out


def _round(v: float) -> float:
    return float(f"{v:.4g}") if math.isfinite(v) else v


# ---- main-thread CPU per request ---------------------------------------------

# redis-benchmark command lines for the commands the model knows; K is a key
# with the calibration prefix and a random number, V a value.
_K = load.key_pattern()
_N = load.key_pattern(load.PREFIX + "n:")  # counters: SET's values are not integers
_TTL = "3600"
"""The TTL SETEX and EXPIRE set (s); the keys' own TTL where they carry one."""
BENCH_COMMANDS: dict[str, list[str]] = {
    "SET": ["SET", _K, "V"], "GET": ["GET", _K], "SETEX": ["SETEX", _K, _TTL, "V"],
    "INCR": ["INCR", _N], "DECR": ["DECR", _N], "EXISTS": ["EXISTS", _K],
    "DEL": ["DEL", _K], "UNLINK": ["UNLINK", _K], "EXPIRE": ["EXPIRE", _K, _TTL],
    "SADD": ["SADD", load.PREFIX + "set", "__rand_int__"],
    "SCARD": ["SCARD", load.PREFIX + "set"],
    "LPUSH": ["LPUSH", load.PREFIX + "list", "V"], "RPUSH": ["RPUSH", load.PREFIX + "list", "V"],
    "LPOP": ["LPOP", load.PREFIX + "list"], "RPOP": ["RPOP", load.PREFIX + "list"],
    "HSET": ["HSET", load.PREFIX + "hash", "f__rand_int__", "V"],
    "HGET": ["HGET", load.PREFIX + "hash", "f__rand_int__"],
    "ZADD": ["ZADD", load.PREFIX + "zset", "__rand_int__", "m__rand_int__"],
    "PING": ["PING"], "MGET": ["MGET", _K], "MSET": ["MSET", _K, "V"],
}

MULTI_ELEMENTS = 10
"""Elements of the second load of a command with a per-element cost (below)."""
MULTI: dict[str, tuple[list[str], list[str]]] = {
    "DEL": (["DEL"], [_K]), "UNLINK": (["UNLINK"], [_K]), "EXISTS": (["EXISTS"], [_K]),
    "MGET": (["MGET"], [_K]), "MSET": (["MSET"], [_K, "V"]),
    "SADD": (["SADD", load.PREFIX + "set"], ["__rand_int__"]),
    "LPUSH": (["LPUSH", load.PREFIX + "list"], ["V"]),
    "RPUSH": (["RPUSH", load.PREFIX + "list"], ["V"]),
}
"""Commands whose cost grows with their keys or members, as (head, one element):
measured with 1 and with ``MULTI_ELEMENTS`` elements (redis-benchmark draws each
``__rand_int__`` on its own), which gives their fixed and per-element parts."""

UNTIMED: dict[str, str] = {
    "INCR": _N, "DECR": _N, "MSET": _K, "SADD": load.PREFIX + "set",
    "LPUSH": load.PREFIX + "list", "RPUSH": load.PREFIX + "list",
    "HSET": load.PREFIX + "hash", "ZADD": load.PREFIX + "zset"}
"""Commands that create keys and cannot give them a TTL (SET takes ``EX``, SETEX
its own), with the keys they write: on a server redsim did not start, those
without one get the calibration's TTL right after the load
(``load.expire_untimed``)."""


@dataclass(frozen=True)
class CpuLoad:
    """A redis-benchmark load for the CPU fit: connections, pipeline, requests."""

    clients: int
    pipeline: int
    requests: int


# The fit's loads: a saturated pipelined load (no sleeps), the P = 1
# load, and a lone client (one sleep per request): three points, three
# parameters, so the fit goes through each. A lone pipelined client is
# measured too, as a check the fit does not see (its residual is reported): on
# hosts seen so far it costs 15-35 % more than y = a/P + b + W*s predicts, and
# fitted with the others it pulled the 50-connection P = 16 figure 32 % off on
# a CI machine (the loads a planner's question is about).
FIT_LOADS = (CpuLoad(50, 1, 100_000), CpuLoad(50, 16, 600_000), CpuLoad(1, 1, 20_000))
CHECK_LOADS = (CpuLoad(1, 16, 100_000),)
COMMAND_LOAD = CpuLoad(50, 16, 300_000)
"""The load of a per-command cost (and of the SET load next to it): saturated
and pipelined, where a command's own cost is the largest share."""


@dataclass(frozen=True)
class CpuSettings:
    """What the CPU part runs: the SET loads it fits and checks, the per-command
    load, and how long the fit in the model may take."""

    loads: tuple[CpuLoad, ...] = FIT_LOADS
    checks: tuple[CpuLoad, ...] = CHECK_LOADS
    command_load: CpuLoad = COMMAND_LOAD
    fit: replay.FitBudget = replay.FIT_FULL


CPU_FULL = CpuSettings()
"""What ``redsim calibrate`` runs, ``--quick`` included: on the reference host
the loads take ~7 s and the fit ~7 s (a model run of 2.5 simulated s takes
0.05-0.2 s once the kernel is compiled), so a smaller fit would save seconds
and cost accuracy."""


def _bench_args(command: str, value_size: int, elements: int = 1, keys: str = _K,
                ttl_s: int | None = None) -> list[str]:
    """redis-benchmark's arguments for ``command``; ``keys``: the key pattern;
    ``ttl_s``: the TTL its keys get (SET's ``EX``, SETEX's and EXPIRE's seconds;
    None: SET without one, the others ``_TTL``)."""
    if elements == 1:
        args = list(BENCH_COMMANDS[command])
    else:
        head, one = MULTI[command]
        args = head + one * elements
    if ttl_s is not None and command == "SET":
        args += ["EX", _TTL]
    ttl = _TTL if ttl_s is None else str(ttl_s)
    return ["x" * value_size if a == "V" else keys if a == _K else ttl if a == _TTL else a
            for a in args]


def _pattern(keys: str) -> str:
    """The SCAN pattern of a redis-benchmark key pattern (``__rand_int__`` is any)."""
    return keys.replace("__rand_int__", "*")


def point_from_delta(d: Delta, command: str, clients: int, pipeline: int,
                     requests: int) -> tuple[solver.CpuPoint, int]:
    """The CPU point of one load from the INFO snapshots around it, and how many
    other commands ran meanwhile (besides the second snapshot's INFO)."""
    calls = d.calls(command)
    if calls < requests * 0.99:
        raise RuntimeError(f"{command}: INFO counted {calls} calls for {requests} requests")
    sleeps = d.sleeps / calls if d.sleeps is not None else None
    return (solver.CpuPoint(clients, pipeline, d.cpu_s / calls * 1e6, sleeps),
            d.commands - calls - 1)


CPU_VALUE_SIZE = 3
"""Bytes per value of the CPU loads (redis-benchmark's default ``-d``)."""
CPU_KEYSPACE = 100_000
"""Keys the CPU loads draw from (``-r``): with ``CPU_VALUE_SIZE``, the dataset
the per-command costs are measured on (``engine.cpu.calibrated-on``)."""


def cpu_point(t: Target, command: str, ld: CpuLoad, value_size: int = CPU_VALUE_SIZE,
              keyspace: int = CPU_KEYSPACE, elements: int = 1, keys: str = _K
              ) -> tuple[solver.CpuPoint, load.BenchResult]:
    """Main-thread CPU (and sleeps) per ``command`` under one redis-benchmark load
    (``keys``: the key pattern, ``load.key_pattern()`` by default)."""
    a = snapshot(t.client, t.pid)
    bench = load.redis_benchmark(t.host, t.port,
                                 _bench_args(command, value_size, elements, keys, t.key_ttl_s),
                                 clients=ld.clients, pipeline=ld.pipeline,
                                 requests=ld.requests, keyspace=keyspace)
    point, foreign = point_from_delta(Delta(a, snapshot(t.client, t.pid)), command,
                                      ld.clients, ld.pipeline, ld.requests)
    if t.key_ttl_s is not None and command in UNTIMED:
        # After the second snapshot: not part of the load's figures.
        load.expire_untimed(t.client, _pattern(keys if UNTIMED[command] == _K
                                               else UNTIMED[command]), t.key_ttl_s)
    if math.isfinite(bench.client_cpu_s):
        point = dataclasses.replace(point, client_us_per_request=bench.client_us_per_request)
    if foreign > 0.01 * ld.requests:
        t.say(f"  warning: {foreign} other commands ran during the {command} load; "
              "its CPU figure includes them")
    return point, bench


def _command_costs(t: Target, cmd: str, elements: int, ld: CpuLoad,
                   fit: solver.RequestCosts, reps: int, value_size: int = CPU_VALUE_SIZE
                   ) -> tuple[list[float], list[float]]:
    """b of ``cmd`` with ``elements`` elements (values or elements of
    ``value_size`` bytes), once per repetition, each next to a SET load: the
    host's speed drifts by tens of % over seconds (a VM's neighbours), which a
    ratio of two loads a second apart cancels and a figure on its own does not.
    Also the commandstats µs per call."""
    vals, procs = [], []
    for _ in range(reps):
        ref, _ = cpu_point(t, "SET", ld)
        a = snapshot(t.client)
        # The fit's keyspace: misses alike.
        p, _ = cpu_point(t, cmd, ld, value_size=value_size, elements=elements)
        d = Delta(a, snapshot(t.client))
        procs.append(d.usec(cmd) / max(d.calls(cmd), 1))
        vals.append(solver.relative_command_cost(p, ref, ld.pipeline, fit))
    return vals, procs


def _fittable(points: list[solver.CpuPoint], say: Callable[[str], None] | None = None
              ) -> list[solver.CpuPoint]:
    """The points the fit can use. Without the main thread's context switches (a
    server on another machine) the sleeps are unknown, so only the 50-connection
    loads are kept, where the server sleeps least (0.1-0.15 sleeps per SET at P1
    on the reference host), and the wake-up cost is not fitted."""
    if all(p.sleeps_per_request is not None for p in points):
        return points
    if say is not None:
        say("  the server is not on this machine: its epoll sleeps cannot be counted, so "
            "the fit uses the 50-connection loads only and leaves engine.cpu.wakeup alone")
    return [p for p in points if p.clients > 1]


def _median_point(pts: list[solver.CpuPoint]) -> solver.CpuPoint:
    """The repetitions of one load, by their medians: a host that slows down for
    one repetition (a VM's steal) moves the median less than the mean."""
    s = [p.sleeps_per_request for p in pts]
    c = [p.client_us_per_request for p in pts]
    return solver.CpuPoint(pts[0].clients, pts[0].pipeline,
                           statistics.median(p.us_per_request for p in pts),
                           None if None in s else statistics.median(s),  # type: ignore[arg-type]
                           None if None in c else statistics.median(c))  # type: ignore[arg-type]


CLIENT_CONNECTIONS_LOADED = 50
"""The loads whose redis-benchmark CPU gives the client's costs: 50 connections,
where its one thread is busy (a lone connection's sleeps between replies
would add a wake-up per request)."""


def client_measurements(client: dict[CpuLoad, list[float]], reps: int) -> list[Measurement]:
    """redis-benchmark's own CPU per batch and per further command (``host.client-cpu``
    and ``host.client-cpu-per-command``: what a same-host group without its own
    costs spends), from its CPU per request (µs) under the loads of
    ``CLIENT_CONNECTIONS_LOADED`` connections, medians over repetitions; none if
    under two pipeline depths."""
    pts = [(ld.pipeline, statistics.median(v)) for ld, v in client.items()
           if ld.clients == CLIENT_CONNECTIONS_LOADED and v and all(map(math.isfinite, v))]
    try:
        batch, per_command = solver.client_costs(pts)
    except ValueError:
        return []
    how = ("redis-benchmark's own CPU (getrusage of the finished child) per SET at "
           + ", ".join(f"c={CLIENT_CONNECTIONS_LOADED} P={p}: {y:.3g} µs" for p, y in pts)
           + f", medians of {reps}; least squares y = a/P + b. A same-host group driven by "
           "redis-benchmark on this host: client-cpu = a + b, client-cpu-per-command = b")
    return [Measurement("client.cpu_per_batch", batch, "us", 0.0, reps, how,
                        "host.client-cpu"),
            Measurement("client.cpu_per_command", per_command, "us", 0.0, reps, how,
                        "host.client-cpu-per-command")]


def measure_cpu(t: Target, commands: list[str], reps: int = 3,
                settings: CpuSettings = CPU_FULL,
                model_version: str | None = None,
                value_sizes: dict[str, int] | None = None) -> list[Measurement]:
    """The per-request I/O, per-command and sleeping-iteration costs (µs), fitted
    to ``settings.loads``; ``settings.checks`` are measured and reported, not fitted.
    ``value_sizes``: bytes of a command's values or elements (a scenario's, for
    its collection commands), ``CPU_VALUE_SIZE`` for the others.

    With ``model_version`` (the model's ``redis-version`` for this server) the
    costs are then fitted in the model (``replay.fit_in_model``): the model,
    run at each load's measured rate, spends the measured CPU per SET with its
    own sleep counts. Without it, the fit on the real sleep counts is kept.
    """
    loads, checks = settings.loads, settings.checks
    fits: list[solver.RequestCosts] = []
    per_load: dict[CpuLoad, list[solver.CpuPoint]] = {ld: [] for ld in loads + checks}
    rates: dict[CpuLoad, list[float]] = {ld: [] for ld in loads + checks}
    client: dict[CpuLoad, list[float]] = {ld: [] for ld in loads + checks}
    with _step(t, "cpu.loads") as bar:
        for _ in range(reps):
            pts = []
            for ld in loads + checks:
                p, bench = cpu_point(t, "SET", ld)
                per_load[ld].append(p)
                rates[ld].append(bench.rps if bench is not None else math.nan)
                if bench is not None:
                    client[ld].append(bench.client_us_per_request)
                if ld in loads:
                    pts.append(p)
                bar.update()
            fits.append(solver.fit_request_costs(_fittable(pts)))
    medians = {ld: _median_point(v) for ld, v in per_load.items()}
    client_ms = client_measurements(client, reps)
    for m in client_ms:
        t.say(f"  {m.name}: {m.value:.3g} µs (redis-benchmark's own CPU)")
    kept = _fittable([medians[ld] for ld in loads], t.say)
    mean = solver.fit_request_costs(kept)
    how = ("redis-benchmark SET (3-byte values) at " + ", ".join(
        f"c={ld.clients} P={ld.pipeline}" for ld in loads)
        + f", {reps} repetitions; main-thread CPU (used_cpu_*_main_thread) per SET")
    iteration = 1.0  # engine.cpu.iteration's default, µs
    if model_version is None:
        checked = "".join(
            f"; c={ld.clients} P={ld.pipeline}, not fitted, is "
            f"{solver.relative_residual(mean, medians[ld]):+.0%} off it" for ld in checks
            if medians[ld].sleeps_per_request is not None or math.isnan(mean.wake_us))
        how += ("; epoll sleeps from the main thread's voluntary context switches; least "
                f"squares y = a/P + b + W*s (largest residual {mean.max_rel_residual:.0%}"
                f"{checked})")
    else:
        fitted = [(medians[ld], statistics.median(rates[ld])) for ld in loads
                  if medians[ld] in kept]
        checked_loads = [ld for ld in checks if medians[ld].sleeps_per_request is not None
                         or math.isnan(mean.wake_us)]
        measured = {ld: statistics.median(rates[ld]) for ld in loads + checks}
        with _step(t, "cpu.fit", rates={ld: r for ld, r in measured.items()
                                        if math.isfinite(r)}) as bar:
            def replayed(note: str) -> None:
                bar.update()
                bar.note(note)

            mf = replay.fit_in_model(
                model_version, fitted, [(medians[ld], measured[ld]) for ld in checked_loads],
                mean.io_us, mean.command_us,
                None if math.isnan(mean.wake_us) else mean.wake_us - 1.0,
                budget=settings.fit, progress=replayed)
        iteration = mf.iteration_us
        res_fit, res_check = mf.residuals[:len(fitted)], mf.residuals[len(fitted):]
        mean = solver.RequestCosts(
            mf.io_us, mf.command_us,
            math.nan if math.isnan(mean.wake_us) else mf.wakeup_us + iteration,
            max(abs(r) for r in res_fit))
        how += ("; y = a/P + b + W*s fitted in the model: run at each load's measured rate "
                f"(redis-version {model_version}), its CPU per SET is the measured one with "
                "its own sleeping polls per SET (the real ones vary 0.08-0.2 at c=50 P=1 "
                f"between runs); the model is within {mean.max_rel_residual:.0%} of the "
                f"fitted loads after {mf.rounds} of {settings.fit.rounds} rounds" + "".join(
                    f"; c={ld.clients} P={ld.pipeline}, not fitted, model {r:+.0%}"
                    for ld, r in zip(checked_loads, res_check, strict=True)))
    share = solver.READ_SHARE  # of the I/O cost given to read
    out = [
        Measurement("cpu.io_per_request", mean.io_us, "us",
                    solver.spread([f.io_us for f in fits]), reps, how),
        Measurement("cpu.read", mean.io_us * share, "us",
                    solver.spread([f.io_us for f in fits]) * share, reps,
                    f"{share:.0%} of the I/O cost a (assumed split)", "engine.cpu.read"),
        Measurement("cpu.write", mean.io_us * (1 - share), "us",
                    solver.spread([f.io_us for f in fits]) * (1 - share), reps,
                    f"{1 - share:.0%} of the I/O cost a (assumed split)",
                    "engine.cpu.write"),
    ]
    if not math.isnan(mean.wake_us):
        out.append(Measurement(
            "cpu.wakeup", max(mean.wake_us - iteration, 0.0), "us",
            solver.spread([f.wake_us for f in fits]), reps,
            f"W minus engine.cpu.iteration ({iteration:g} us): " + how, "engine.cpu.wakeup"))
    out += client_ms
    for ld, pts in per_load.items():
        m = medians[ld]
        out.append(Measurement(
            f"cpu.set_c{ld.clients}_p{ld.pipeline}", m.us_per_request, "us",
            solver.spread([p.us_per_request for p in pts]), reps,
            f"main-thread CPU per SET, redis-benchmark -c {ld.clients} -P {ld.pipeline}"
            + (f"; {m.sleeps_per_request:.3f} epoll sleeps per SET"
               if m.sleeps_per_request is not None else ""),
            values=tuple(p.us_per_request for p in pts)))
    # Each command is measured next to a SET load of the same shape, and costed
    # as the fit's SET cost times the ratio of the two: the host's speed drifts
    # by tens of % over seconds (a VM's neighbours), which a ratio of two loads a
    # second apart cancels and a figure on its own does not.
    sat = settings.command_load
    if "SET" in commands:
        out.append(Measurement(
            "cpu.command.SET", mean.command_us, "us",
            solver.spread([f.command_us for f in fits]), reps,
            "b of the fit above", "engine.cpu.commands.SET.fixed"))
    with _step(t, "cpu.commands") as bar:
        for cmd in commands:
            if cmd != "SET":
                out += _command_measurements(t, cmd, sat, mean, reps, bar,
                                             (value_sizes or {}).get(cmd, CPU_VALUE_SIZE))
    return out


def _command_measurements(t: Target, cmd: str, sat: CpuLoad, mean: solver.RequestCosts,
                          reps: int, bar: Any, value_size: int = CPU_VALUE_SIZE
                          ) -> list[Measurement]:
    """The cost of ``cmd`` (and its per-element part, for ``MULTI``'s) at load
    ``sat``, its values or elements of ``value_size`` bytes."""
    b1, procs = _command_costs(t, cmd, 1, sat, mean, reps, value_size)
    bar.update(2 * reps)
    p = sat.pipeline
    how = (f"b(SET) x (y({cmd}) - a/{p}) / (y(SET) - a/{p}), y = main-thread CPU per "
           f"command at redis-benchmark -c {sat.clients} -P {p}, a SET load just before each "
           f"{cmd} load (INFO commandstats usec_per_call, the procedure alone: "
           f"{statistics.fmean(procs):.2f} us)"
           + ("" if value_size == CPU_VALUE_SIZE else f"; {value_size}-byte values"))
    if cmd not in MULTI:
        return [Measurement(f"cpu.command.{cmd}", statistics.median(b1), "us",
                            solver.spread(b1), reps, how, f"engine.cpu.commands.{cmd}.fixed")]
    bk, _ = _command_costs(t, cmd, MULTI_ELEMENTS, sat, mean, reps, value_size)
    bar.update(2 * reps)
    fixed, per = solver.per_element(statistics.median(b1), statistics.median(bk),
                                    MULTI_ELEMENTS)
    how += f"; with 1 and {MULTI_ELEMENTS} elements: b = fixed + per-element x elements"
    return [Measurement(f"cpu.command.{cmd}", fixed, "us", solver.spread(b1), reps, how,
                        f"engine.cpu.commands.{cmd}.fixed"),
            Measurement(f"cpu.command.{cmd}.per_element", per, "us",
                        solver.spread(bk) / (MULTI_ELEMENTS - 1), reps, how,
                        f"engine.cpu.commands.{cmd}.per-element")]


# ---- memory ----------------------------------------------------------------------


KEY_MEMORY_SIZES = (3, 100, 1000)
"""Value sizes (bytes) of the memory-per-key loads."""
KEY_MEMORY_KEYS = 100_000
"""Keys written at each of them."""


def measure_key_memory(t: Target, value_sizes: tuple[int, ...] = KEY_MEMORY_SIZES,
                       n: int = KEY_MEMORY_KEYS) -> list[Measurement]:
    """Bytes per key (``used_memory`` delta over ``n`` SETs) at each value size."""
    out = []
    with _step(t, "memory") as bar:
        for size in value_sizes:
            load.delete_prefix(t.client)
            load.settle(t.client)
            before = t.client.info("memory")["used_memory"]
            load.fill(t.client, n, size, ttl_s=t.key_ttl_s)
            after = t.client.info("memory")["used_memory"]
            out.append(Measurement(
                f"memory.key_v{size}", (after - before) / n, "bytes", 0.0, 1,
                f"used_memory delta over {n:,} SETs of {len(load.PREFIX) + 12}-byte keys and "
                f"{size}-byte values into an empty calibration prefix (includes the "
                "dict's bucket array"
                + (f"; each key with a TTL of {t.key_ttl_s} s, so its expires entry too)"
                   if t.key_ttl_s is not None else ")")))
            bar.update()
        load.delete_prefix(t.client)
    return out


CLIENT_CONNECTIONS = 200
"""Connections of the memory-per-connection measurement."""
CLIENT_WAITS_S = (1.5, 1.2, 6.0)
"""Its waits: after connecting, after one request each, and idle after that."""


def measure_client_memory(t: Target, n: int = CLIENT_CONNECTIONS) -> list[Measurement]:
    """``mem_clients_normal`` per connection: fresh, right after a request, idle."""
    with _step(t, "clients"):
        return _client_memory(t, n)


def _client_memory(t: Target, n: int) -> list[Measurement]:
    out = []
    fresh_s, busy_s, idle_s = CLIENT_WAITS_S

    def per_conn(base: int) -> float:
        return (t.client.info("memory")["mem_clients_normal"] - base) / n

    load.settle(t.client)
    base = t.client.info("memory")["mem_clients_normal"]
    with load.Connections(t.host, t.port, n) as conns:
        time.sleep(fresh_s)  # clientsCron visits each client about once a second
        fresh = per_conn(base)
        conns.request_all([load.resp("PING")])
        time.sleep(busy_s)
        busy = per_conn(base)
        time.sleep(idle_s)  # past 2 s idle (query buffer) and 5 s (reply-buffer peak)
        idle = per_conn(base)
    for name, v, how in (("fresh", fresh, f"{fresh_s:g} s after connecting"),
                         ("after_request", busy, f"{busy_s:g} s after one PING each"),
                         ("idle", idle, f"{busy_s + idle_s:g} s after that PING")):
        out.append(Measurement(f"memory.client_{name}", v, "bytes", 0.0, n,
                               f"mem_clients_normal delta / {n} connections, {how}"))
    return out


# ---- eviction ----------------------------------------------------------------------


MIN_EVICTED_PER_SET = 0.5
"""Evicted keys per SET below which an eviction repetition is left out (a SET
of a new key at the limit evicts about one)."""


EVICTION_REPS = 3
EVICTION_BASE_KEYS = 600_000
"""Keys written before each eviction repetition's loads (100-byte values)."""
EVICTION_LOAD = CpuLoad(50, 16, 300_000)
"""Each repetition's two SET loads, without and with maxmemory."""
EVICTION_VALUE_SIZE = 100
"""Bytes per value of the eviction loads' keys, by default."""


def measure_eviction(t: Target, reps: int = EVICTION_REPS, base_keys: int = EVICTION_BASE_KEYS,
                     requests: int = EVICTION_LOAD.requests,
                     value_size: int = EVICTION_VALUE_SIZE) -> list[Measurement]:
    """Main-thread µs per evicted key (allkeys-lru, ``value_size``-byte values:
    100 by default, a scenario's own with ``redsim calibrate --for``).

    Both loads SET new keys at pipeline 16 (where a SET costs well under 1 µs,
    so the eviction's share stands out of the host's noise) into a dict already
    sized for them (``base_keys`` keys first: 1,048,576 buckets hold base +
    requests keys with no rehash), so they differ only in the eviction: the
    first with ``maxmemory 0``, the second with ``maxmemory`` at the memory then
    used, where every new key evicts about one.
    """
    with _step(t, "eviction") as bar:
        return _eviction(t, reps, base_keys, requests, bar, value_size)


def _eviction(t: Target, reps: int, base_keys: int, requests: int, bar: Any,
              value_size: int = 100) -> list[Measurement]:
    unlimited = t.client.config_get("maxmemory")["maxmemory"]  # as the owner set it
    ld = CpuLoad(EVICTION_LOAD.clients, EVICTION_LOAD.pipeline, requests)
    costs, with_us, without_us, per_set = [], [], [], []
    try:
        for _ in range(reps):
            load.delete_prefix(t.client)
            load.settle(t.client)
            t.config_set("maxmemory", 0)
            load.fill(t.client, base_keys, value_size, ttl_s=t.key_ttl_s)
            p0, _ = cpu_point(t, "SET", ld, value_size=value_size, keyspace=100_000_000)
            t.config_set("maxmemory-policy", "allkeys-lru")
            load.settle(t.client)  # a rehash or lazy free that ends later would leave room
            t.config_set("maxmemory", int(t.client.info("memory")["used_memory"]))
            a = snapshot(t.client)
            # Keys of their own: redis-benchmark seeds __rand_int__ so that two runs
            # a second apart often draw the same numbers (seen on Debian's 7.0.15),
            # and SETs of the first load's keys would overwrite instead of evict.
            p1, _ = cpu_point(t, "SET", ld, value_size=value_size, keyspace=100_000_000,
                              keys=load.key_pattern(load.PREFIX + "evict:"))
            b = snapshot(t.client)
            evicted = Delta(a, b).field("evicted_keys") / ld.requests
            t.config_set("maxmemory", unlimited)
            costs.append(solver.eviction_cost(p1.us_per_request, p0.us_per_request, evicted))
            with_us.append(p1.us_per_request)
            without_us.append(p0.us_per_request)
            per_set.append(evicted)
            bar.update()
    finally:
        t.restore_config()
        load.delete_prefix(t.client)
    # A repetition whose SETs evicted fewer than half a key each did not hold
    # used_memory at the limit (memory freed late, a transient allocation at the
    # moment the limit was read): its extra CPU divided by a small count is noise.
    held = [i for i, e in enumerate(per_set) if e >= MIN_EVICTED_PER_SET]
    dropped = len(per_set) - len(held)
    if not held:
        t.say(f"eviction: no repetition evicted {MIN_EVICTED_PER_SET} key per SET or more "
              f"({', '.join(f'{e:.2f}' for e in per_set)}); eviction costs not measured, "
              "the model's defaults stay")
        return []
    costs = [costs[i] for i in held]
    per_key = statistics.fmean(costs)
    clipped = per_key < 0
    if clipped:
        t.say(f"eviction: the extra CPU per evicted key came out negative ({per_key:.2f} us: "
              "the host's drift is larger than the effect); taken as 0")
        per_key = 0.0
    how = (f"redis-benchmark SET of new {value_size}-byte keys (-c 50 -P 16) after "
           f"{base_keys:,} keys, "
           "with maxmemory 0, then with maxmemory at the used memory (allkeys-lru): extra "
           "main-thread CPU per SET over evicted keys per SET ("
           + ", ".join(f"{e:.2f}" for e in per_set) + ")"
           + (f"; {dropped} repetition(s) under {MIN_EVICTED_PER_SET} evicted per SET left out"
              if dropped else "")
           + (f"; {statistics.fmean([with_us[i] for i in held]):.2f} vs "
              f"{statistics.fmean([without_us[i] for i in held]):.2f} us per SET")
           + ("; negative, taken as 0" if clipped else ""))
    out = [Measurement("cpu.eviction_per_key", per_key, "us", solver.spread(costs), len(costs),
                       how)]
    # The model charges a call over the limit eviction-check, and each evicted
    # key maxmemory-samples (5) x eviction-sample + eviction-delete; CPU alone
    # cannot split them, so the measured total keeps the defaults' proportions.
    parts = solver.split_eviction(per_key)
    for name, value in parts.items():
        share = value / per_key if per_key else 0.0
        out.append(Measurement(f"cpu.{name}", value, "us", solver.spread(costs) * share,
                               len(costs), "the per-key total split as the defaults are ("
                               + ", ".join(f"{k} {v:g} us" for k, v in
                                           solver.eviction_defaults().items()) + ")",
                               "engine.cpu." + name.replace("_", "-")))
    return out


# ---- the disk ------------------------------------------------------------------------


FSYNC_PROBE_BYTES = 64
"""Bytes appended before each probe fdatasync: one small SET's AOF record
(``*3 $3 SET`` + a ~25-B key + a short value is ~50-60 B), what Redis appends
per fsync under ``appendfsync always`` with one client. On the reference VM
(ext4) 4 KB appends fdatasync'd ~15-30 % slower (median 190-260 us against
170-180 us), which made the model lose more to ``always`` than Redis did."""


FSYNC_SAMPLES = 200
FSYNC_MAX_S = 10.0
"""The fsync probe stops at FSYNC_SAMPLES fdatasyncs or after this long."""
BANDWIDTH_BYTES = 64 << 20
"""Bytes of the write-bandwidth probe."""


def probe_fsync(directory: Path, *, samples: int = FSYNC_SAMPLES, max_s: float = FSYNC_MAX_S,
                block: int = FSYNC_PROBE_BYTES) -> list[float]:
    """fdatasync latencies (s) of ``block``-byte appends to a file in ``directory``,
    as Redis's AOF does: append, then fdatasync; at most ``samples`` or ``max_s``."""
    fd, path = tempfile.mkstemp(prefix="redsim-fsync-", dir=directory)
    out: list[float] = []
    data = b"x" * block
    try:
        t_end = time.monotonic() + max_s
        while len(out) < samples and time.monotonic() < t_end:
            os.write(fd, data)
            t0 = time.perf_counter()
            os.fdatasync(fd)
            out.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        os.unlink(path)
    return out


def probe_write_bandwidth(directory: Path, total: int = BANDWIDTH_BYTES,
                          chunk: int = 4 << 20) -> float:
    """Sequential write bandwidth (bytes/s): ``total`` bytes in ``chunk`` writes, each
    followed by fdatasync as the fork child does (4 MB chunks in 7.x)."""
    fd, path = tempfile.mkstemp(prefix="redsim-bw-", dir=directory)
    data = os.urandom(chunk)
    try:
        t0 = time.perf_counter()
        for _ in range(total // chunk):
            os.write(fd, data)
            os.fdatasync(fd)
        return total / (time.perf_counter() - t0)
    finally:
        os.close(fd)
        os.unlink(path)


def measure_disk(t: Target, directory: Path, csv_path: Path, *, samples: int = FSYNC_SAMPLES
                 ) -> tuple[list[Measurement], Path]:
    """fsync latency samples (written to ``csv_path``, one per line, seconds) and
    the write bandwidth."""
    with _step(t, "disk"):
        t.say(f"  probe files in {directory}")
        lat = probe_fsync(directory, samples=samples)
        bw = probe_write_bandwidth(directory)
    csv_path.write_text("fdatasync_s\n" + "".join(f"{v:.9f}\n" for v in lat))
    q = solver.quantiles(lat)
    how = (f"{len(lat)} x (write {FSYNC_PROBE_BYTES} B + fdatasync) to a file in {directory}: "
           + ", ".join(f"p{int(p * 100)} {v * 1e3:.3f} ms" for p, v in q.items()))
    return [Measurement("disk.fsync_median", q[0.5], "s", solver.spread(lat), len(lat), how),
            Measurement("disk.write_bandwidth", bw, "bytes/s", 0.0, 1,
                        f"{BANDWIDTH_BYTES >> 20} MB in 4 MB writes, each followed by "
                        f"fdatasync, to {directory}",
                        "disk.write-bandwidth")], csv_path


# ---- fork ----------------------------------------------------------------------------


def _bgsave(t: Target) -> tuple[float, float, float]:
    """BGSAVE and wait: (fork s, RSS bytes at the fork, child wall time s)."""
    rss = float(t.client.info("memory")["used_memory_rss"])
    t0 = time.monotonic()
    t.client.bgsave()
    while True:
        time.sleep(0.01)
        p = t.client.info("persistence")
        if not p["rdb_bgsave_in_progress"]:
            break
        if time.monotonic() - t0 > 120:
            raise RuntimeError("BGSAVE did not finish within 120 s")
    if p.get("rdb_last_bgsave_status") != "ok":
        raise RuntimeError("BGSAVE failed (see the server's log)")
    fork_s = float(t.client.info("stats")["latest_fork_usec"]) * 1e-6
    return fork_s, rss, time.monotonic() - t0 - fork_s


FORK_SIZES_MB = (100, 400)
"""Dataset sizes of the fork measurement's BGSAVEs."""
FORK_REPS = 3
FORK_VALUE_SIZE = 1000


def fork_keys(mb: int, value_size: int = FORK_VALUE_SIZE) -> int:
    """Keys of ``value_size``-byte values that make about ``mb`` MB of dataset."""
    return mb * 1_000_000 // (value_size + 100)


def measure_fork(t: Target, sizes_mb: tuple[int, ...] = FORK_SIZES_MB, reps: int = FORK_REPS,
                 value_size: int = FORK_VALUE_SIZE) -> list[Measurement]:
    """fork() time vs RSS (BGSAVE at two dataset sizes) and the child's keys/s."""
    rss, forks, rates = [], [], []
    with _step(t, "fork") as bar:
        try:
            load.delete_prefix(t.client)
            have = 0
            for mb in sizes_mb:
                n = fork_keys(mb, value_size)
                load.fill(t.client, n - have, value_size, start=have, ttl_s=t.key_ttl_s)
                have = n
                for _ in range(reps):
                    f, r, child = _bgsave(t)
                    forks.append(f)
                    rss.append(r)
                    rates.append(n / child if child > 0 else math.nan)
                    bar.update()
        finally:
            load.delete_prefix(t.client)
    fixed, per_gb = solver.fork_cost(rss, forks)
    how = ("BGSAVE with " + ", ".join(f"{r / 1e6:.0f} MB RSS: {f * 1e3:.2f} ms"
                                      for r, f in zip(rss, forks, strict=True))
           + " (latest_fork_usec); least-squares line through (RSS, fork time), parts ≥ 0")
    rate = statistics.fmean([r for r in rates if math.isfinite(r)])
    return [
        Measurement("fork.fixed", fixed, "s", 0.0, len(forks), how, "host.fork-fixed"),
        Measurement("fork.per_gb", per_gb, "s", 0.0, len(forks), how, "host.fork-per-gb"),
        Measurement("fork.child_keys_per_sec", rate, "1/s", solver.spread(rates), len(rates),
                    f"keys / (BGSAVE wall time - fork time) for {value_size}-byte values, "
                    "including the RDB file's write and fsync", "host.child-keys-per-sec"),
    ]


__all__ = ["Measurement", "Target"]
