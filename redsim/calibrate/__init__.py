"""``redsim calibrate``: measure a live Redis and write a scenario fragment.

``calibrate()`` runs the measurements of ``measure.py`` against a server — one
the user names (read-only figures unless ``can_write``) or a throw-away local
one it starts itself — and writes a calibration file (``fragment.py``) that a
scenario takes with ``calibration: FILE``. Keys it writes carry a prefix and
are deleted at the end; configuration it changes is put back. On a server it
did not start, the keys also carry a TTL and a guardian process
(``live.guard``) undoes both if the calibration is killed; the fork step,
which pauses the server, runs there only when asked for by name. Before
measuring it says what it will do and how long each step should take
(``plan.py``), then when each step starts and ends; the file lists the parts
it did not measure, whose fields stay at the model's defaults.

Depends on the model's configuration layer, never the reverse.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import platform
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from redsim.calibrate import dataset, fragment, measure, misses, plan, replay
from redsim.calibrate.parts import (
    ALL_PARTS,
    QUICK_PARTS,
    WRITE_PARTS,
    not_measured,
)
from redsim.live import guard, load
from redsim.live.server import RedisServer
from redsim.machine import cpu_model


def host_description() -> dict[str, Any]:
    """The machine calibration ran on (the client side; for a local server, its host)."""
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "os": platform.platform()}


def calibrate(out: Path, *, host: str = "127.0.0.1", port: int | None = None,
              start: bool = False, can_write: bool = False,
              parts: tuple[str, ...] = ALL_PARTS, commands: tuple[str, ...] = ("SET", "GET"),
              reps: int = 3, data_dir: Path | None = None, quick: bool = False,
              sweep: dataset.Sweep = dataset.DEFAULT_SWEEP,
              eviction_value_size: int = measure.EVICTION_VALUE_SIZE,
              value_sizes: dict[str, int] | None = None,
              progress: bool | None = None, owned: bool = False, allow_fork: bool = False,
              say: Callable[[str], None] = print) -> dict[str, Any]:
    """Measure a server and write the calibration file ``out`` (and the fsync
    samples beside it, ``<name>.fsync.csv``). Returns the calibration document;
    its ``not-measured`` lists the parts it lacks.

    Args:
        start: start a throw-away local redis-server (and stop it at the end);
            otherwise connect to host:port.
        can_write: allowed to write keys (always with the calibration prefix) to a
            server this call did not start; eviction and fork need it too. There
            its keys carry a TTL (``plan.key_ttl_s``) and a guardian undoes the
            keys and configuration if the calibration dies (``live.guard``).
        owned: host:port is a throw-away server the caller started and stops
            (``redsim validate-model``'s): treated as one ``start`` started (no
            TTL, no guardian, the fork step runs).
        allow_fork: run the fork step (BGSAVE, a pause of the server's main
            thread that grows with its RSS) on a server redsim did not start
            (the CLI: when ``--only`` names fork); otherwise it is skipped there
            and listed in ``not-measured``.
        parts: which measurements to make (``ALL_PARTS``).
        commands: commands whose per-command cost is measured.
        reps: repetitions of each CPU load.
        data_dir: where to probe fsync (default: the server's ``dir`` when local).
        quick: the per-request and per-command CPU costs only (``parts`` must
            be ``QUICK_PARTS``); the file says that it lacks the other parts.
        sweep: what the caches part's dataset sweep measures (value sizes, key
            counts, the memory it may fill; ``dataset.for_scenario`` for
            ``--for``).
        eviction_value_size: bytes per value of the eviction loads (a
            scenario's own with ``--for``); the file records it, and the keys,
            as ``engine.cpu.calibrated-on``'s eviction dataset.
        value_sizes: bytes of the values or elements a command's load sends
            (a scenario's collection commands' with ``--for``; 3 otherwise).
        progress: progress bars on stderr within long steps (None: when stderr
            is a terminal); the lines saying when each step starts and ends go
            to ``say`` either way.
    """
    unknown = sorted(set(parts) - set(ALL_PARTS))
    if unknown:
        raise ValueError(f"unknown calibration part(s) {unknown}; known: {', '.join(ALL_PARTS)}")
    bad_cmd = sorted(set(commands) - set(measure.BENCH_COMMANDS))
    if bad_cmd:
        raise ValueError(f"no benchmark load for {bad_cmd}; known: "
                         f"{', '.join(measure.BENCH_COMMANDS)}")
    if quick and tuple(parts) != QUICK_PARTS:
        raise ValueError(f"quick calibration measures {', '.join(QUICK_PARTS)} only, not "
                         f"{', '.join(parts)}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with _target(host, port, start, can_write, say,
                 {"enable-debug-command": "local"}, owned=owned) as (target, started):
        if data_dir is not None:
            target.data_dir = Path(data_dir)
        skipped = _fork_policy(target, parts, started, allow_fork, say)
        parts = tuple(p for p in parts if p not in skipped)
        cpu = measure.CPU_FULL
        steps = plan.plan(parts, commands, reps, cpu, local=target.pid is not None,
                          data_dir=target.data_dir is not None, sweep=sweep)
        if "cpu" in parts:
            steps = _compile_first() + steps
        target.progress = plan.Progress(steps, say, progress)
        target.say = target.progress.say
        say(plan.describe(steps))
        missing = [p for p in ALL_PARTS if p not in parts]
        if missing:
            say("not measured (a scenario using the file keeps the model's defaults for "
                "them): " + ", ".join(missing))
        with _guarded(target, started, plan.longest_part_s(steps), say):
            return _run(target, out, parts, commands, reps, t0, started=started,
                        data_dir_given=data_dir is not None, cpu=cpu, quick=quick,
                        sweep=sweep, eviction_value_size=eviction_value_size,
                        value_sizes=value_sizes, skipped=skipped)


FORK_SKIPPED = ("BGSAVE forks the server, which redsim did not start: a pause of its main "
                "thread that grows with its RSS, and a new RDB file in its dir; --only fork "
                "measures it there (or --start, on a throw-away server)")
"""Why the fork step is skipped on a server redsim did not start (``not-measured``)."""


def _fork_policy(t: measure.Target, parts: tuple[str, ...], started: bool,
                 allow_fork: bool, say: Callable[[str], None]) -> dict[str, str]:
    """The parts skipped because of what the fork step does to a server redsim did
    not start ({"fork": why}, or none), said before anything runs; when it runs
    there (``allow_fork``), what it will do, said before it starts."""
    if "fork" not in parts or started:
        return {}
    if not allow_fork:
        say(f"fork: skipped, {FORK_SKIPPED}")
        return {"fork": FORK_SKIPPED}
    if not t.can_write:
        return {}  # refused with the other writes (``_run``)
    bgsaves = measure.FORK_REPS * len(measure.FORK_SIZES_MB)
    say(f"fork: the fork step runs BGSAVE {bgsaves} times on {t.host}:{t.port}, a server redsim "
        "did not start: each fork() pauses its main thread for a time that grows with its "
        f"RSS (its page tables are copied: a latency spike for its clients), and each writes "
        f"{_rdb_file(t)}, replacing its last snapshot")
    return {}


def _rdb_file(t: measure.Target) -> str:
    """The server's RDB file (``dir``/``dbfilename``), or words for it when CONFIG
    GET is refused."""
    try:
        cfg = {k: t.client.config_get(k)[k] for k in ("dir", "dbfilename")}
    except Exception:  # noqa: BLE001 - CONFIG renamed or refused: words will do
        return "its RDB file"
    return f"its RDB file {os.path.join(cfg['dir'], cfg['dbfilename'])}"


@contextlib.contextmanager
def _guarded(t: measure.Target, started: bool, longest_s: float,
             say: Callable[[str], None]) -> Iterator[None]:
    """On a server redsim did not start, with writes allowed: every key written
    carries a TTL (from ``longest_s``, the longest part's estimate, s), and a
    guardian undoes the keys and configuration left if the calibration dies;
    said before anything is written. Elsewhere, nothing."""
    if started or not t.can_write:
        yield
        return
    t.key_ttl_s = plan.key_ttl_s(longest_s)
    with guard.Guard(t.host, t.port, key_ttl_s=t.key_ttl_s) as g:
        t.guard = g
        say(f"keys written carry a TTL of {plan.duration(t.key_ttl_s)} ({t.key_ttl_s} s); if "
            f"this run is killed, a guardian (pid {g.pid}) puts back the configuration it "
            f"changed and deletes its keys (record: {g.path}; `redsim calibrate --cleanup "
            f"--host {t.host} --port {t.port}` does it if the guardian could not)")
        try:
            yield
        except BaseException:
            say(f"calibration stopped: its guardian (pid {g.pid}) checks that the configuration "
                f"and keys are as they were (at most {guard.CLEANUP_BOUND_S:.0f} s; log: "
                f"{guard.log_path(g.path)})")
            raise
        finally:
            t.guard = None


@contextlib.contextmanager
def _target(host: str, port: int | None, start: bool, can_write: bool,
            say: Callable[[str], None], config: dict[str, Any] | None = None,
            owned: bool = False) -> Iterator[tuple[measure.Target, bool]]:
    """The server to measure, connected: a throw-away one started with
    ``config`` (written to freely; stopped by PID at the end, whatever
    happens) when ``start``, else host:port (``owned``: a throw-away server the
    caller started). Yields (target, started by redsim)."""
    server = RedisServer(config=config) if start else None
    try:
        if server is not None:
            server.start()
            say(f"started redis-server {server.version()} on 127.0.0.1:{server.port} "
                f"(pid {server.pid}, dir {server.dir})")
            host, port, can_write = server.host, server.port, True
        if port is None:
            raise ValueError("a port is needed (or start a server with start=True)")
        yield measure.Target.connect(host, port, can_write=can_write, say=say), start or owned
    finally:
        if server is not None:
            pid = server.pid
            server.stop()
            say(f"stopped redis-server (pid {pid}); its folder is removed")


def _made(t: measure.Target, info: dict[str, Any], t0: float, started: bool
          ) -> dict[str, Any]:
    """A calibration file's ``made``: when, by which command, how long, on which
    server and host."""
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "redsim calibrate " + " ".join(shlex.quote(a) for a in sys.argv[2:])
        if sys.argv[1:2] == ["calibrate"] else "redsim.calibrate.calibrate()",
        "duration_s": round(time.monotonic() - t0, 1),
        "server": {"redis_version": info.get("redis_version"),
                   "mem_allocator": info.get("mem_allocator"
                                             ) or t.client.info("memory").get("mem_allocator"),
                   "started_by_redsim": started,
                   "address": f"{t.host}:{t.port}",
                   **({"key_ttl_s": t.key_ttl_s} if t.key_ttl_s is not None else {})},
        "host": host_description(),
    }


def calibrate_scale(out: Path, *, host: str = "127.0.0.1", port: int | None = None,
                    start: bool = False, can_write: bool = False,
                    progress: bool | None = None, owned: bool = False,
                    say: Callable[[str], None] = print) -> dict[str, Any]:
    """``redsim calibrate --scale-only``: measure ``engine.cpu.scale`` (``scale.py``)
    and write it alone to ``out``; arguments as ``calibrate``'s. Returns the
    document."""
    from redsim.calibrate import scale

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with _target(host, port, start, can_write, say, owned=owned) as (t, started):
        if not t.can_write:
            raise PermissionError("the SET load writes keys (prefix redsim:calib:): pass "
                                  "--i-know-this-writes, or --start a throw-away server")
        info = t.client.info("server")
        version = replay.model_version_of(str(info.get("redis_version", "")))
        _ensure_compiled(t, progress)
        say(f"measuring SET at c={scale.LOAD.clients} P={scale.LOAD.pipeline}, "
            f"{scale.REPS} times (~5 s), and the model with the reference host's costs")
        with _guarded(t, started, scale.REPS * plan.REFERENCE.bench_s(scale.LOAD), say):
            try:
                m = scale.measure_scale(t, version)
            finally:
                n = load.delete_prefix(t.client)
                if n:
                    say(f"deleted {n} calibration key(s) ({load.PREFIX}*)")
        made = _made(t, info, t0, started)
        doc = scale.write(out, m, made)
        say(f"engine.cpu.scale = {m.value:.3g}: {m.method}")
        say(f"wrote {out} in {made['duration_s']:.0f} s")
        return doc


def _compile_first() -> list[plan.Step]:
    """A step compiling the simulation kernel, when the fit would otherwise do it
    unannounced (its first model run)."""
    from redsim.kernel_compile import estimate_s
    from redsim.model.jit import kernel_compiled

    if kernel_compiled():
        return []
    est, source = estimate_s()
    return [plan.Step("compile", "cpu", "compile the model",
                      "nothing: it builds the simulation kernel's machine code, which the "
                      "fit needs, once per install and version (`redsim compile` does it "
                      "ahead)", f"numba, into its cache; the estimate is {source}'s", est)]


def _ensure_compiled(t: measure.Target, bars: bool | None) -> None:
    from redsim.kernel_compile import ensure_compiled
    from redsim.model.jit import kernel_compiled

    if kernel_compiled():
        return
    with measure._step(t, "compile"):
        ensure_compiled(progress=bars)


def _run(t: measure.Target, out: Path, parts: tuple[str, ...], commands: tuple[str, ...],
         reps: int, t0: float, started: bool, data_dir_given: bool = False,
         cpu: measure.CpuSettings = measure.CPU_FULL, quick: bool = False,
         sweep: dataset.Sweep = dataset.DEFAULT_SWEEP,
         eviction_value_size: int = measure.EVICTION_VALUE_SIZE,
         value_sizes: dict[str, int] | None = None,
         skipped: dict[str, str] | None = None) -> dict[str, Any]:
    """Measure ``parts`` on ``t`` and write the file; ``skipped``: parts left
    out before the run (part -> why), listed in ``not-measured`` with it."""
    info = t.client.info("server")
    if not t.can_write:
        blocked = [p for p in parts if p in WRITE_PARTS or p in ("cpu", "caches", "memory")]
        if "disk" in parts and not data_dir_given:
            blocked.append("disk")  # a probe file in the server's own data directory
        if blocked:
            raise PermissionError(
                f"calibrating {', '.join(blocked)} writes keys (prefix {load.PREFIX}), "
                "changes the configuration of a server redsim did not start, or writes in "
                "its data directory: pass --i-know-this-writes (or --data-dir for the disk "
                "probe), or --start to calibrate a throw-away local server")
    ms: list[measure.Measurement] = []
    extra: dict[str, Any] = {}
    csv_path: Path | None = None
    skipped = dict(skipped or {})
    try:
        if "cpu" in parts:
            _ensure_compiled(t, t.progress.bars if t.progress is not None else False)
            ms += measure.measure_cpu(t, list(commands), reps=reps, settings=cpu,
                                      model_version=replay.model_version_of(
                                          str(info.get("redis_version", ""))),
                                      value_sizes=value_sizes)
            # The dataset the costs were measured on (model/cpu_caches.py's reference).
            extra.update({"engine.cpu.calibrated-on.keys": measure.CPU_KEYSPACE,
                          "engine.cpu.calibrated-on.value-size": measure.CPU_VALUE_SIZE,
                          "engine.cpu.calibrated-on.key-size": replay.KEY_SIZE})
        if "caches" in parts:
            caches_ms, caches_extra, why = _caches(t, out, reps, sweep)
            ms += caches_ms
            extra.update(caches_extra)
            if why:
                skipped["caches"] = why
        if "memory" in parts:
            ms += measure.measure_key_memory(t)
            extra.update(_allocator(t))
        if "clients" in parts:
            ms += measure.measure_client_memory(t)
        if "eviction" in parts:
            others = t.client.dbsize() - sum(1 for _ in t.client.scan_iter(
                match=load.PREFIX + "*", count=1000))
            if others > 0:
                # maxmemory with an allkeys policy would evict the owner's keys.
                skipped["eviction"] = (f"the server holds {others} key(s) that are not "
                                       "calibration's and eviction could remove them; "
                                       "calibrate eviction on an empty server (--start)")
                t.say("eviction: skipped, " + skipped["eviction"])
                if t.progress is not None:
                    t.progress.took["eviction"] = 0.0
            else:
                base = eviction_base_keys(eviction_value_size, sweep.max_bytes)
                evicted = measure.measure_eviction(t, base_keys=base,
                                                   value_size=eviction_value_size)
                ms += evicted
                if evicted:
                    extra.update({
                        "engine.cpu.calibrated-on.eviction-keys":
                            base + measure.EVICTION_LOAD.requests,
                        "engine.cpu.calibrated-on.eviction-value-size": eviction_value_size})
        if "disk" in parts:
            if t.data_dir is None:
                skipped["disk"] = "the server's dir is not on this machine; give --data-dir"
                t.say(f"disk: skipped ({skipped['disk']})")
            else:
                disk_ms, csv_path = measure.measure_disk(
                    t, t.data_dir, out.with_name(out.stem + ".fsync.csv"))
                ms += disk_ms
                extra["disk.fsync"] = {"distribution": "empirical",
                                       "samples": os.path.relpath(csv_path, out.parent)}
        if "fork" in parts:
            ms += measure.measure_fork(t)
    finally:
        if t.can_write:
            n = load.delete_prefix(t.client)
            if n:
                t.say(f"deleted {n} calibration key(s) ({load.PREFIX}*)")
    made = _made(t, info, t0, started)
    if t.progress is not None:
        made["steps"] = t.progress.record()
    left_out = "a quick calibration (--quick)" if quick else "left out (--only / --skip)"
    lacks = {p: skipped.get(p, left_out) for p in ALL_PARTS if p not in parts or p in skipped}
    doc = fragment.build(ms, made, extra,
                         not_measured(lacks, commands if "cpu" in parts else None))
    fragment.write(doc, out)
    from redsim.config.loader import read_calibration

    read_calibration(out)  # a value a scenario would refuse fails here, not in every run
    t.say(f"wrote {out}" + (f" and {csv_path}" if csv_path else "")
          + f" in {made['duration_s']:.0f} s")
    return doc


def _caches(t: measure.Target, out: Path, reps: int, spec: dataset.Sweep
            ) -> tuple[list[measure.Measurement], dict[str, Any], str | None]:
    """The caches part: the dataset sweep (its points in ``<name>.dataset.csv``
    beside ``out``), the host's cache sizes (from sysfs, for a local server)
    and the fitted miss costs. Returns (measurements, extra values, why the
    part could not be fitted or None)."""
    from redsim.config.schema import Host

    sizes = misses.cache_sizes() if t.pid is not None else {}
    l2 = sizes.get("l2", Host.model_fields["l2"].default)
    llc = sizes.get("llc", Host.model_fields["llc"].default)
    tlb = Host.model_fields["tlb_reach"].default
    with measure._step(t, "caches") as bar:
        points = dataset.sweep(t, spec, reps=reps, bar=bar)
    csv_path = out.with_name(out.stem + ".dataset.csv")
    dataset.write_csv(points, csv_path)
    try:
        fit = misses.fit(dataset.medians(points), l2, llc, tlb)
    except misses.MissFitError as exc:
        t.say(f"caches: not fitted, {exc}")
        return [], {}, f"the fit failed: {exc}"
    where = "sysfs" if sizes else "the defaults (the server is not on this machine)"
    method = (f"non-negative least squares over {fit.points} medians of GET and SET at "
              f"pipeline 1 and 16 ({csv_path.name}), L2 {l2 >> 20} MiB and LLC "
              f"{llc >> 20} MiB from {where}; points within {fit.worst:.0%}, "
              f"rms {fit.rms:.0%}")
    ms = [measure.Measurement(f"caches.{name}", v, "us", 0.0, fit.points, method,
                              field=f"engine.cpu.miss.{name}")
          for name, v in fit.penalty.items()]
    t.say("caches: miss costs " + ", ".join(f"{k} {v:.3f} µs" for k, v in fit.penalty.items())
          + f" per load; the sweep's points within {fit.worst:.0%} (rms {fit.rms:.0%})")
    if fit.uncovered:
        t.say(f"caches: {', '.join(fit.uncovered)} not reached by the sweep's largest dataset "
              "(a larger --max-dataset reaches them): they keep the model's defaults")
    extra = {"host.l2": int(l2), "host.llc": int(llc)} if sizes else {}
    return ms, extra, None


def eviction_base_keys(value_size: int, max_bytes: float) -> int:
    """Keys written before the eviction loads: ``measure.EVICTION_BASE_KEYS``, or
    fewer where values that large would pass ``max_bytes`` (at least 100,000)."""
    return max(100_000, min(measure.EVICTION_BASE_KEYS,
                            int(max_bytes // dataset.bytes_per_key(value_size))))


def combine(files: list[Path], out: Path, say: Callable[[str], None] = print
            ) -> dict[str, Any]:
    """Combine calibrations of one server made at different times into ``out``
    (medians; see ``fragment.combine``). Sample files stay where they are and are
    named relative to ``out``."""
    import yaml

    from redsim.config.loader import read_calibration

    docs = []
    for f in files:
        read_calibration(Path(f))  # a clean error for a file that is not one
        doc = yaml.safe_load(Path(f).read_text())
        fsync = doc.get("values", {}).get("disk", {}).get("fsync")
        if isinstance(fsync, dict) and isinstance(fsync.get("samples"), str):
            where = (Path(f).parent / fsync["samples"]).resolve()
            fsync["samples"] = os.path.relpath(where, Path(out).resolve().parent)
        docs.append(doc)
    made = {"date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "combined": [str(f) for f in files], "server": docs[0].get("made", {}).get("server"),
            "host": docs[0].get("made", {}).get("host")}
    doc = fragment.combine(docs, made)
    fragment.write(doc, Path(out))
    say(f"wrote {out}: medians of {len(docs)} calibrations")
    return doc


def _allocator(t: measure.Target) -> dict[str, Any]:
    """The jemalloc build from ``MEMORY MALLOC-STATS`` (reference §3.3): its quantum
    (8 or 16) as ``engine.allocator-quantum``, and, when its version, quantum and
    ``config.cache_oblivious`` are one of ``ALLOCATOR_BUILDS``', that build as
    ``engine.allocator``. Empty when the server does not answer it."""
    try:
        text = t.client.execute_command("MEMORY", "MALLOC-STATS")
    except Exception:  # noqa: BLE001 - not every build answers it
        return {}
    return allocator_from_stats(text.decode(errors="replace") if isinstance(text, bytes)
                                else str(text))


def allocator_from_stats(text: str) -> dict[str, Any]:
    """``_allocator``'s reading of a ``MEMORY MALLOC-STATS`` text."""
    from redsim.model.presets import ALLOCATOR_BUILDS

    quantum = version = oblivious = None
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        value = value.strip().strip('"')
        if key.lower() == "quantum size":
            quantum = int(value) if value.isdigit() and int(value) in (8, 16) else None
        elif key == "Version":
            version = ".".join(value.split("-", 1)[0].split(".")[:3])
        elif key == "config.cache_oblivious":
            oblivious = value == "true"
    if quantum is None:
        return {}
    out: dict[str, Any] = {"engine.allocator-quantum": quantum}
    for name, build in ALLOCATOR_BUILDS.items():
        built = name.split("-", 1)[1]  # 5.1, 5.2.1, 5.3
        if version is not None and (version == built or version.startswith(built + ".")) \
                and build.quantum == quantum and build.cache_oblivious == oblivious:
            out["engine.allocator"] = name
    return out
