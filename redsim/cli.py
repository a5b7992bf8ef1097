"""The ``redsim`` command: run, validate, sweep scenarios, find a burst frontier.

``run`` simulates a scenario, ``validate`` checks a scenario file, ``sweep``
runs a grid of scenarios x replications, ``frontier`` bisects for where burst
probability crosses a threshold.

Every mistake in a scenario file is reported as one line naming the file, the
field and what was expected, with exit status 2 and no traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

EXIT_BAD_INPUT = 2


def _fmt_s(v: float | None) -> str:
    """A duration as the summary prints it (``observe/metrics.fmt_s``)."""
    from redsim.observe.metrics import fmt_s

    return fmt_s(v)


def verdict(summary: dict) -> str:
    """The answer a planner reads first: eviction bursts, stalls by cause, and the
    CPU and memory headroom left."""
    bursts = summary.get("bursts", 0)
    parts = ["no eviction burst" if not bursts else
             f"{bursts} eviction burst{'s' * (bursts != 1)}"
             + (f" (every {summary['cycle_period_s'] / 60:.1f} min)" if bursts > 1 else "")]
    stalls = summary.get("stalls", 0)
    if stalls:
        causes = ", ".join(c.replace("=", " x") for c in summary["stall_causes"].split(";"))
        parts.append(f"{stalls} stall{'s' * (stalls != 1)} ({causes}; longest "
                     f"{_fmt_s(summary['stall_max_s'])})")
    else:
        parts.append("no stall")
    if "utilisation_peak" in summary:
        left = max(0.0, 1.0 - summary["utilisation_peak"])  # a full window: 1 +- rounding
        parts.append(f"CPU headroom {left:.0%} in the busiest window")
    maxmem = summary.get("maxmemory", 0)
    if maxmem:
        left = maxmem - summary["used_memory_peak"]
        parts.append(f"memory headroom {left / 2**20:,.0f} MB of maxmemory"
                     if left > 0 else "used_memory reached maxmemory")
    return "; ".join(parts)


def summary_table(summary: dict) -> str:
    """The human-readable summary printed after a run, its answer first, then
    the lines the summary keys' declarations give (``Metric.line``, ``Line``:
    each mechanism's ``RESULTS`` block, ``observe/metrics.py``), in their order,
    those whose condition holds."""
    from redsim.result import declared

    rows = [("answer", verdict(summary))]
    rows += [(line.label, line.text(summary)) for line in declared().lines
             if line.when is None or line.when(summary)]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)


def instance_table(per) -> str:
    """One line per instance of a host's run (``HostResult.per_instance``)."""
    lines = [f"  {'instance':<12} {'req/s':>10} {'p99':>10} {'main thread':>12} "
             f"{'evicted keys':>13}"]
    for _, r in per.iterrows():
        lines.append(f"  {str(r['name']):<12} {r['throughput_rps']:>10,.0f} "
                     f"{_fmt_s(r['latency_p99_s']):>10} {r['main_thread_cpu_cores']:>7.2f} core "
                     f"{int(r['evicted_keys']):>13,}")
    return "\n".join(lines)


def group_table(groups) -> str:
    """One line per client group of a run (``Result.groups``)."""
    lines = [f"  {'group':<12} {'req/s':>10} {'mean':>10} {'p99':>10} {'max':>10} "
             f"{'rejected':>9} {'failed':>7} {'timeout':>8} {'refused':>8} {'-OOM':>7} "
             f"{'conns':>6}"]
    for _, r in groups.iterrows():
        lines.append(f"  {str(r['group']):<12} {r['throughput_rps']:>10,.0f} "
                     f"{_fmt_s(r['latency_mean_s']):>10} {_fmt_s(r['latency_p99_s']):>10} "
                     f"{_fmt_s(r['latency_max_s']):>10} {int(r['requests_rejected']):>9,} "
                     f"{int(r['requests_failed']):>7,} {int(r['requests_timed_out']):>8,} "
                     f"{int(r['connections_refused']):>8,} {int(r['oom_rejected']):>7,} "
                     f"{int(r['connections_peak']):>6,}")
    return "\n".join(lines)


def _load(args) -> object:
    from redsim.config import load_scenario

    overrides = list(args.set or [])
    if getattr(args, "duration", None):
        overrides.append(f"duration={args.duration}")
    from redsim.config.errors import UnmodelledDirectiveWarning

    with _one_line_warnings(UnmodelledDirectiveWarning):
        return load_scenario(args.scenario, overrides=overrides,
                             calibration=getattr(args, "calibration", None))


@contextlib.contextmanager
def _one_line_warnings(*categories: type[Warning]) -> Iterator[None]:
    """While the block runs, warnings of ``categories`` (an unmodelled directive, a
    figure that could not be drawn) are held; then each is one ``redsim:
    warning:`` line on stderr, not Python's two-line format with a source
    excerpt. Other warnings are shown as they would have been."""
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            for category in categories:
                warnings.simplefilter("always", category)
            yield
    finally:
        for w in caught:
            if issubclass(w.category, categories):
                print(f"redsim: warning: {w.message}", file=sys.stderr)
            else:  # not ours: shown as it would have been
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def cmd_run(args) -> int:
    from redsim.config.cost_sources import cost_notes
    from redsim.driver import make_simulation
    from redsim.kernel_compile import ensure_compiled

    scenario = _load(args)
    seed = scenario.seed if args.seed is None else args.seed
    progress = None if not args.no_progress else False
    for line in cost_notes(scenario):  # which host the CPU costs describe
        print(f"redsim: {line}", file=sys.stderr)
    ensure_compiled(progress=progress)
    t0 = time.perf_counter()
    sim = make_simulation(scenario, seed=seed, progress=progress)
    t1 = time.perf_counter()
    result = sim.run()
    t2 = time.perf_counter()
    out = Path(args.out) if args.out else Path("runs") / f"{scenario.name}-seed{seed}"
    print(summary_table(result.summary))  # before the folder: nothing in saving it can lose this
    per = getattr(result, "per_instance", None)
    if per is not None and 1 < len(per) <= 16:
        print("\n" + instance_table(per))
    groups = getattr(result, "groups", None)
    if groups is not None and len(groups) > 1:
        print("\n" + group_table(groups))
    from redsim.result import FigureWarning

    with _one_line_warnings(FigureWarning):  # a figure that fails costs only itself
        result.save(out, plots=not args.no_plots)
    if result.summary.get("eviction_calls_over_limit", 0) > 0:
        from redsim.analysis.phases import format_table

        print("\n  eviction cycles (redsim.analysis.phases):")
        print(format_table(result.phases()))
    print(f"\n  wall time {t2 - t0:.1f} s (building the keyspace {t1 - t0:.1f} s, simulating "
          f"{t2 - t1:.1f} s); real-time factor of the simulation "
          f"{scenario.duration / max(t2 - t1, 1e-9):,.1f}")
    print(f"  run folder: {out}")
    return 0


def cmd_compile(args) -> int:
    import shutil

    from redsim.kernel_compile import cache_base, ensure_compiled
    from redsim.model.jit import kernel_cache_dir

    cache = kernel_cache_dir()
    if args.clear:
        stale = [d for d in sorted(cache_base().glob("kernel-*"))
                 if d.is_dir() and d != cache]
        for d in stale:
            shutil.rmtree(d, ignore_errors=True)
        print(f"removed {len(stale)} cache(s) of other code versions from {cache_base()}")
    took = ensure_compiled(progress=None if not args.no_progress else False)
    state = "already compiled" if took is None else f"compiled in {took:.0f} s"
    size = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()) / 1e6
    print(f"kernel {state}: {cache} ({size:.0f} MB)")
    return 0


def _size_arg(text: str) -> int:
    """A memory size as Redis writes one (``4gb``, ``512mb``), for argparse."""
    import argparse

    from redsim.config.units import parse_size

    try:
        n = parse_size(text)
    except Exception as exc:  # noqa: BLE001 - the parser's message, as argparse's
        raise argparse.ArgumentTypeError(f"a size such as 2gb or 512mb, not {text!r} "
                                         f"({exc})") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"a size above 0, not {text!r}")
    return n


def _calibration_for(args, max_bytes: float):
    """``--for SCENARIO``: the commands its groups send that redis-benchmark can
    drive (SET always: the per-request fit's loads), the dataset sweep of its
    value sizes and keyspace, the eviction loads' value size (that of its
    group with the most keys) and its collection commands' element sizes; says
    what it leaves to the defaults."""
    from redsim.calibrate import dataset
    from redsim.calibrate.measure import BENCH_COMMANDS
    from redsim.config.cost_sources import sent_commands

    if args.commands != "SET,GET":
        raise _UsageError("--for measures the scenario's own commands: leave out --commands")
    scenario = _load(argparse.Namespace(scenario=args.for_scenario, set=[], calibration=None))
    sent = sent_commands(scenario)
    commands = tuple(["SET"] + [c for c in sent if c in BENCH_COMMANDS and c != "SET"])
    sweep = dataset.for_scenario(scenario, max_bytes)
    shapes = "; ".join(f"{v} B to {sizes[-1]:,} keys" for v, sizes in sweep.shapes())
    print(f"--for {args.for_scenario}: commands {', '.join(commands)}; dataset sweep {shapes}")
    left = [c for c in sent if c not in BENCH_COMMANDS]
    if left:
        print(f"  {', '.join(left)}: no redis-benchmark load drives them; they keep the "
              "model's default costs (a run with this calibration names them)")
    sizes = collection_value_sizes(scenario, commands)
    if sizes:
        print("  " + ", ".join(f"{c} with {v}-byte elements" for c, v in sizes.items()))
    bulk = max(scenario.clients, key=lambda g: g.keyspace.keys)
    eviction_value_size = max(1, round(bulk.value_size.mean))
    print(f"  eviction measured with {eviction_value_size}-byte values (group {bulk.name}, "
          f"{bulk.keyspace.keys:,} keys)")
    cut = [v for v, sizes in sweep.shapes() if sizes[-1] < sweep.sizes[-1]]
    if cut:
        print(f"  the {', '.join(f'{v} B' for v in cut)} sweep stops short of the scenario's "
              f"{sweep.sizes[-1]:,} keys at --max-dataset {max_bytes / 2**30:.3g} GiB")
    return commands, sweep, eviction_value_size, sizes


def collection_value_sizes(scenario, commands: tuple[str, ...]) -> dict[str, int]:
    """Bytes of each collection command's element (a list's or set's member, a
    hash's value), from the first group that sends it: what ``--for`` measures
    the command with (a list's pushes cost more with larger elements: LPUSH
    0.75 µs with 3 B, 0.89 with 64 B on the Intel VM)."""
    from redsim.calibrate.measure import BENCH_COMMANDS
    from redsim.model import collection
    from redsim.model.commands import COMMANDS

    out: dict[str, int] = {}
    for g in scenario.clients:
        ks = g.keyspace
        for m in g.mix or ():
            cmd = m.command.upper()
            sends = "V" in BENCH_COMMANDS.get(cmd, ())  # its load carries a value
            if cmd in commands and cmd not in out and sends and COMMANDS[cmd].type is not None \
                    and ks.type != "string":
                # The sizes the model gives the keyspace's elements.
                size = (collection.hash_value_size(g) if ks.type == "hash"
                        else collection.member_size(g))
                out[cmd] = max(1, size)
    return out


def cmd_calibrate(args) -> int:
    from redsim.calibrate import ALL_PARTS, QUICK_PARTS, calibrate
    from redsim.live.guard import GuardError
    from redsim.live.server import RedisNotFound

    if args.combine:
        if args.quick:
            raise _UsageError("--combine measures nothing: leave out --quick")
        from redsim.calibrate import combine

        combine([Path(f) for f in args.combine], Path(args.out))
        return 0
    if args.cleanup:
        return _calibrate_cleanup(args)
    if not args.start and args.port is None:
        raise _UsageError("give --port (and --host) of a server to measure, or --start to "
                          "start a throw-away local redis-server")
    if args.quick and (args.only or args.skip):
        raise _UsageError("--quick measures the CPU costs only: leave out --only/--skip")
    if args.scale_only:
        if args.quick or args.only or args.skip:
            raise _UsageError("--scale-only measures one figure: leave out "
                              "--quick/--only/--skip")
        from redsim.calibrate import calibrate_scale

        try:
            calibrate_scale(Path(args.out), host=args.host, port=args.port, start=args.start,
                            can_write=args.i_know_this_writes,
                            progress=False if args.no_progress else None)
        except (RedisNotFound, PermissionError, ValueError, GuardError) as exc:
            raise _UsageError(str(exc)) from None
        except (OSError, RuntimeError) as exc:
            raise _UsageError(f"calibration stopped: {exc}") from None
        return 0
    parts = tuple(args.only.split(",")) if args.only else ALL_PARTS
    if args.skip:
        parts = tuple(p for p in parts if p not in args.skip.split(","))
    if args.quick:
        parts = QUICK_PARTS
    commands = _commands(args.commands)
    from redsim.calibrate import dataset

    sweep = dataset.Sweep(max_bytes=args.max_dataset or dataset.MAX_DATASET)
    eviction_value_size = None
    value_sizes: dict[str, int] = {}
    if args.for_scenario:
        commands, sweep, eviction_value_size, value_sizes = _calibration_for(
            args, sweep.max_bytes)
    print("redsim calibrate" + (" --quick: the per-request and per-command CPU costs only"
                                if args.quick else "")
          + "; keys use the prefix redsim:calib: and are deleted at the end")
    try:
        doc = calibrate(Path(args.out), host=args.host, port=args.port, start=args.start,
                        can_write=args.i_know_this_writes, parts=parts,
                        commands=commands, reps=args.reps,
                        data_dir=Path(args.data_dir) if args.data_dir else None,
                        quick=args.quick, progress=False if args.no_progress else None,
                        sweep=sweep, value_sizes=value_sizes,
                        allow_fork="fork" in (args.only or "").split(","),
                        **({"eviction_value_size": eviction_value_size}
                           if eviction_value_size is not None else {}))
    except (RedisNotFound, PermissionError, ValueError, GuardError) as exc:
        raise _UsageError(str(exc)) from None
    except (OSError, RuntimeError) as exc:  # the server went away, refused, a load failed
        raise _UsageError(f"calibration stopped: {exc}") from None
    except Exception as exc:
        import redis

        if isinstance(exc, redis.RedisError):
            raise _UsageError(f"calibration stopped: {args.host}:{args.port}: {exc}") from None
        raise
    lacks = doc.get("not-measured") or {}
    if lacks:
        print(f"{args.out} lacks these; a scenario using it keeps the model's defaults for "
              "them" + (" (without --quick, redsim calibrate measures them all but the "
                        "commands, which --commands all adds):" if args.quick else ":"))
        for part, v in lacks.items():
            print(f"  {part}: {v['what']}")
    return 0


def cmd_validate_model(args) -> int:
    from redsim.live.server import RedisNotFound
    from redsim.validation import validate

    try:
        if args.defaults and args.scale_only:
            raise _UsageError("--defaults and --scale-only: choose one")
        rows = validate(Path(args.out), quick=args.quick, calibrate=not args.defaults,
                        only=tuple(args.only.split(",")) if args.only else (),
                        scale_only=args.scale_only)
    except (RedisNotFound, ValueError) as exc:
        raise _UsageError(str(exc)) from None
    return 0 if all(r.passed for r in rows) else 1


def _commands(text: str) -> tuple[str, ...]:
    from redsim.calibrate.measure import BENCH_COMMANDS

    if text.strip().lower() == "all":
        return tuple(BENCH_COMMANDS)
    return tuple(c.strip().upper() for c in text.split(",") if c.strip())


def cmd_validate(args) -> int:
    scenario = _load(args)
    groups = ", ".join(f"{g.name} ({g.kind})" for g in scenario.clients)
    print(f"{args.scenario}: OK — {scenario.name}: {scenario.duration:g} s, "
          f"redis {scenario.redis_version}, client groups: {groups}")
    if args.verbose and scenario.server.unmodelled:
        print(_unmodelled_listing(scenario.server.unmodelled))
    return 0


def _unmodelled_listing(unmodelled: dict[str, str]) -> str:
    """Every unmodelled directive with its value, marking those that could change
    the answer (!) and those not at Redis 7.2's default (*): `validate --verbose`."""
    from redsim.config.loader import unmodelled_report

    changing, differing = unmodelled_report(unmodelled)
    lines = [f"  {len(unmodelled)} Redis directives redsim does not model (kept in "
             "server.unmodelled; ! could change the answer, * not at Redis's default):"]
    width = max(len(name) for name in unmodelled)
    for name in sorted(unmodelled):
        mark = "!" if name in changing else "*" if name in differing else " "
        lines.append(f"  {mark} {name:<{width}}  {unmodelled[name]}")
    return "\n".join(lines)


def _sweep_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("sweep", help="sweep YAML file")
    p.add_argument("--out", help="sweep folder (default sweeps/NAME)")
    p.add_argument("--jobs", "-j", type=int,
                   help="local worker processes (default: one per core; 1 = in-process)")
    p.add_argument("--resume", action="store_true",
                   help="keep the runs already in --out and run only the missing ones")
    p.add_argument("--executor", choices=("local", "dask"), default="local")
    p.add_argument("--scheduler", help="Dask scheduler address (tcp://host:8786)")
    p.add_argument("--replications", type=int, help="override the file's replications")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a field of every point, e.g. duration=5m")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-shared-start", action="store_true",
                   help="build every run's keyspace (by default a worker starts the runs "
                        "whose keyspace fields agree from the one it built: same results, "
                        "~2.6 GB more per worker for S0)")
    p.add_argument("--max-points", type=int, metavar="N",
                   help="refuse a sweep of more than N runs (grid points x replications, "
                        "counted before anything runs; default 10,000)")


def _sweep_setup(args):
    from redsim.config.sweep import load_sweep

    if args.executor == "dask" and not args.scheduler:
        raise _UsageError("--executor dask needs --scheduler ADDRESS")
    if args.jobs is not None and args.jobs < 1:
        raise _UsageError(f"--jobs must be >= 1, not {args.jobs}")
    if args.replications is not None and args.replications < 1:
        raise _UsageError(f"--replications must be >= 1, not {args.replications}")
    if args.max_points is not None and args.max_points < 1:
        raise _UsageError(f"--max-points must be >= 1, not {args.max_points}")
    spec = load_sweep(args.sweep)
    # The name is checked to be a name (no '/', no '..'), so this stays in sweeps/.
    out = Path(args.out) if args.out else Path("sweeps") / spec.name
    opts = dict(jobs=args.jobs, executor=args.executor, scheduler=args.scheduler,
                resume=args.resume, progress=not args.no_progress,
                overrides=tuple(args.set or ()), replications=args.replications,
                max_points=args.max_points or DEFAULT_MAX_POINTS,
                shared_start=not args.no_shared_start)
    return spec, out, opts


DEFAULT_MAX_POINTS = 10_000
"""``--max-points`` when not given: ``redsim.sweep.grid.DEFAULT_MAX_POINTS``,
repeated so that ``redsim --help`` imports nothing heavy (a test keeps them equal)."""


class _UsageError(Exception):
    pass


def _interrupted(out: Path) -> int:
    from redsim.sweep.store import RunStore

    print(f"\nredsim: interrupted; {RunStore(out).count()} runs are on disk in {out}; "
          "the same command with --resume runs the rest", file=sys.stderr)
    return 130


def cmd_sweep(args) -> int:
    from redsim.result import FigureWarning
    from redsim.sweep.grid import expand
    from redsim.sweep.runner import run_sweep

    spec, out, opts = _sweep_setup(args)
    if args.dry_run:
        reps = opts["replications"] or spec.replications
        points = expand(spec, opts["overrides"], max_points=opts["max_points"],
                        replications=reps)
        print(f"{spec.name}: {len(points)} points x {reps} replications = "
              f"{len(points) * reps} runs")
        for p in points:
            print(f"  {p.index:>4}  " + "  ".join(f"{k}={v}" for k, v in p.labels.items()))
        return 0
    t0 = time.perf_counter()
    try:
        with _one_line_warnings(FigureWarning):
            res = run_sweep(spec, out, **opts)
    except KeyboardInterrupt:
        return _interrupted(out)
    wall = time.perf_counter() - t0
    runs = res.runs
    errors = int((runs["status"] == "error").sum()) if len(runs) else 0
    print(f"{spec.name}: {len(res.points)} points x {len(res.seeds)} replications; "
          f"ran {res.ran} in {wall:.1f} s ({res.ran / wall * 60 if wall else 0:.1f} runs/min), "
          f"{len(runs) - res.ran} from disk; {errors} raised")
    cols = [a.name for a in spec.axes] + [c for c in (
        "burst_probability", "burst_probability_low", "burst_probability_high",
        "latency_p99_s_mean") if c in res.aggregate.columns]
    if len(res.aggregate):
        print(res.aggregate[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for line in res.lost:
        print(f"  lost (worker died; --resume retries): {line}", file=sys.stderr)
    print(f"  tables: {out}/runs.parquet, {out}/aggregate.parquet (and .csv)")
    print(figure_listing(res.figures, out))
    return 0 if not res.lost else 1


def figure_listing(figures: list[Path], out: Path) -> str:
    """The line naming a sweep's figures; those of each client group apart."""
    if not figures:
        return f"  figures: none in {out}"
    own = [p.name for p in figures if not p.name.startswith("groups_")]
    groups = [p.name for p in figures if p.name.startswith("groups_")]
    parts = [", ".join(own)] if own else []
    if groups:
        parts.append("per client group (one line each): " + ", ".join(groups))
    return f"  figures in {out}: " + "; ".join(parts)


def cmd_frontier(args) -> int:
    from redsim.result import FigureWarning
    from redsim.sweep.frontier import find_frontier

    spec, out, opts = _sweep_setup(args)
    if args.out is None:
        out = Path("sweeps") / f"{spec.name}-frontier"
    t0 = time.perf_counter()
    try:
        with _one_line_warnings(FigureWarning):
            res = find_frontier(spec, out, **opts)
    except KeyboardInterrupt:
        return _interrupted(out)
    f = spec.frontier
    print(f"{spec.name}: where P({f.criterion}) crosses {f.threshold:g} along {f.y}, "
          f"per {f.x} ({len(res.evaluations)} points evaluated, "
          f"{time.perf_counter() - t0:.1f} s)")
    print(res.table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"  {out}/frontier.csv, {out}/frontier.png")
    return 0


def _calibrate_cleanup(args) -> int:
    """``redsim calibrate --cleanup``: undo what a killed calibration of
    --host/--port left (``live.guard.cleanup_server``)."""
    import redis

    from redsim.live.guard import GuardError, cleanup_server

    others = [flag for name, flag in (("start", "--start"), ("quick", "--quick"),
                                      ("only", "--only"), ("skip", "--skip"),
                                      ("scale_only", "--scale-only"), ("for_scenario", "--for"))
              if getattr(args, name)]
    if others:
        raise _UsageError(f"--cleanup measures nothing: leave out {', '.join(others)}")
    if args.port is None:
        raise _UsageError("--cleanup needs the --port (and --host) of the server a "
                          "calibration was killed on")
    try:
        cleanup_server(args.host, args.port)
    except GuardError as exc:
        raise _UsageError(str(exc)) from None
    except redis.RedisError as exc:
        raise _UsageError(f"cleanup stopped: {args.host}:{args.port}: {exc}") from None
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="redsim", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="simulate a scenario and write a run folder")
    r.add_argument("scenario", help="scenario YAML file")
    r.add_argument("--out", help="run folder (default runs/NAME-seedN)")
    r.add_argument("--seed", type=int, help="random seed (default: the scenario's)")
    r.add_argument("--duration", help="override the simulated duration, e.g. 10m")
    r.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a field, e.g. server.hz=100 or clients.0.rate=30k/s")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--no-plots", action="store_true",
                   help="skip the figures (overview.png, cycles.png)")
    r.add_argument("--calibration", metavar="FILE",
                   help="a calibration file from `redsim calibrate` (its values fill "
                        "engine/disk/host below the scenario's own keys)")
    r.set_defaults(func=cmd_run)
    k = sub.add_parser("compile", help="compile the simulation kernel ahead of time (an image "
                       "build, a CI step, a worker's start-up) and say where its cache is")
    k.add_argument("--clear", action="store_true",
                   help="first delete the caches of other code versions")
    k.add_argument("--no-progress", action="store_true", help="no progress bar")
    k.set_defaults(func=cmd_compile)
    v = sub.add_parser("validate", help="check a scenario file without running it")
    v.add_argument("scenario")
    v.add_argument("--set", action="append", metavar="KEY=VALUE")
    v.add_argument("--calibration", metavar="FILE", help="as for run")
    v.add_argument("--verbose", "-v", action="store_true",
                   help="list every Redis directive redsim keeps without modelling it")
    v.set_defaults(func=cmd_validate)
    c = sub.add_parser("calibrate", help="measure a live Redis and write a calibration file "
                       "(a scenario fragment)")
    c.add_argument("--host", default="127.0.0.1", help="server address (default 127.0.0.1)")
    c.add_argument("--port", type=int, help="server port")
    c.add_argument("--start", action="store_true",
                   help="start a throw-away redis-server on 127.0.0.1 and a free port, "
                        "stop it at the end")
    c.add_argument("--out", default="calibration.yaml",
                   help="calibration file to write (fsync.csv goes beside it)")
    c.add_argument("--i-know-this-writes", action="store_true",
                   help="allow writing keys (prefix redsim:calib:, each with a TTL of a few "
                        "minutes past the longest part, deleted at the end) and changing "
                        "maxmemory on a server redsim did not start; if the run is killed, a "
                        "guardian process puts both back (else --cleanup does). BGSAVE (the "
                        "fork step) runs there only with --only fork")
    c.add_argument("--only", help="comma-separated parts: "
                   "cpu,caches,memory,clients,eviction,disk,fork (fork runs on a server "
                   "redsim did not start only when named here)")
    c.add_argument("--skip", help="comma-separated parts to leave out")
    c.add_argument("--commands", default="SET,GET",
                   help="commands whose per-command cost is measured: a comma-separated "
                        "list, or all (default SET,GET)")
    c.add_argument("--reps", type=int, default=3, help="repetitions of each CPU load")
    c.add_argument("--cleanup", action="store_true",
                   help="measure nothing: undo what a killed calibration of --host/--port "
                        "left, the configuration it recorded before changing it and its keys "
                        "(SCAN + UNLINK of redsim:calib:*), and say what was done")
    c.add_argument("--combine", nargs="+", metavar="FILE",
                   help="measure nothing: combine calibrations of one server made at "
                        "different times into --out (the median of each value)")
    c.add_argument("--data-dir", help="directory to probe fsync in (default: the "
                   "server's dir, when it is on this machine)")
    c.add_argument("--quick", action="store_true",
                   help="the per-request and per-command CPU costs only (as --only cpu, "
                        "< 3 min); the file lists what it lacks")
    c.add_argument("--scale-only", action="store_true",
                   help="only engine.cpu.scale: one saturated SET load against the model "
                        "with the reference host's costs (~5 s)")
    c.add_argument("--for", dest="for_scenario", metavar="SCENARIO",
                   help="measure what this scenario needs: its commands, and the dataset "
                        "sweep at its value sizes up to its keyspace")
    c.add_argument("--max-dataset", type=_size_arg, default=None, metavar="SIZE",
                   help="memory the caches part's dataset sweep may fill on the server "
                        "(e.g. 4gb; default 2gb)")
    c.add_argument("--no-progress", action="store_true",
                   help="no progress bars (the line per step stays)")
    c.set_defaults(func=cmd_calibrate)
    vm = sub.add_parser("validate-model", help="compare the model with a real redis-server "
                        "it starts (calibrated on it, or with --defaults)")
    vm.add_argument("--out", default="validation", help="folder for the table and figures")
    vm.add_argument("--quick", action="store_true",
                    help="the CPU and memory subset CI runs (< 3 min)")
    vm.add_argument("--defaults", action="store_true",
                    help="the model's defaults, not a calibration on the server")
    vm.add_argument("--scale-only", action="store_true",
                    help="the defaults scaled to the server by `redsim calibrate "
                         "--scale-only`, not a full calibration")
    vm.add_argument("--only", help="comma-separated experiment names")
    vm.set_defaults(func=cmd_validate_model)
    sw = sub.add_parser("sweep", help="run every point x replication of a sweep file")
    _sweep_common(sw)
    sw.add_argument("--dry-run", action="store_true", help="list the points and stop")
    sw.set_defaults(func=cmd_sweep)
    fr = sub.add_parser("frontier", help="bisect for where burst probability crosses a "
                        "threshold (the sweep file's frontier: section)")
    _sweep_common(fr)
    fr.set_defaults(func=cmd_frontier)
    return p


def main(argv: list[str] | None = None) -> int:
    from redsim.config import ScenarioError
    from redsim.sweep.runner import SweepError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ScenarioError as e:
        print(f"redsim: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (_UsageError, SweepError) as e:
        print(f"redsim: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (`redsim sweep ... --dry-run | head`): stop quietly,
        # and point stdout at devnull so the interpreter's final flush cannot
        # raise a second time. Runs already finished are on disk.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
