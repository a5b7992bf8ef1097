"""The burst frontier: for each value of one axis, where along another the
burst probability crosses a threshold (``redsim frontier FILE``).

For each x, the y axis's first and last values bracket the search. Both ends
are run (``replications`` runs each); if they fall on the same side of the
threshold there is no crossing in the range, and the row says which side.
Otherwise the bracket is halved ``iterations`` times — at its arithmetic
midpoint, or geometric for a ``log-range`` axis, or the integer midpoint for an
integer field — keeping the half whose ends straddle the threshold. All x
values advance together, so each round is one batch for the executor.

Assumes the probability is monotone in y between the ends (more TTL, fewer
CPU, more connections: more bursts). Near the boundary the probability is
estimated from a few replications, so the bracket found has the resolution
of the bisection but the confidence of ``replications`` runs per point; the
``evaluations`` table gives each point's Wilson interval.

Runs go to the same content-addressed store as ``redsim sweep``: a frontier
reuses a sweep's runs where they coincide, and ``--resume`` retraces the same
bisection from disk.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from redsim.config.errors import BadValue
from redsim.config.loader import scenario_hash
from redsim.config.sweep import FrontierSpec, SweepSpec, spec_error
from redsim.config.units import parse_size
from redsim.sweep.grid import (
    DEFAULT_MAX_POINTS,
    Point,
    axis_quantity,
    axis_values,
    check_size,
    point_scenario,
    root_seed,
)
from redsim.sweep.runner import RunTask, SweepError, draw_figure, run_batch
from redsim.sweep.stats import wilson
from redsim.sweep.store import RunStore, atomic_write_bytes, write_table
from redsim.sweep.tables import table_value

_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
        "==": operator.eq, "!=": operator.ne}
_KEY = r"[A-Za-z_][A-Za-z0-9_.\-]*"
"""A summary key; a client group's are ``<group>.<metric>`` (``web.latency_p99_s``)."""
_COMPARISON = re.compile(rf"^\s*({_KEY})\s*(>=|<=|==|!=|>|<)\s*(\S+)\s*$")


def criterion(text: str) -> tuple[str, Callable[[Any], bool]]:
    """Parse a criterion: a summary key read as a bool, or ``key OP number``; the
    key may be a client group's (``web.latency_p99_s > 0.005``); the number may be a
    size (``used_memory_rss_peak > 2gb``: bytes, as Redis reads
    sizes).

    Returns:
        (the summary key it reads, a predicate on that key's value)
    """
    m = _COMPARISON.match(text)
    if m is None:
        if not re.fullmatch(_KEY, text):
            raise ValueError(f"criterion {text!r}: expected a summary key or "
                             "'key > number'")
        return text, lambda v: bool(v)
    key, op, num = m.groups()
    try:
        bound = float(num)
    except ValueError:
        try:
            bound = float(parse_size(num))
        except BadValue:
            raise ValueError(f"criterion {text!r}: {num!r} is not a number or a size "
                             "like 2gb") from None
    fn = _OPS[op]
    return key, lambda v: v is not None and fn(float(v), bound)


def midpoint(a: float, b: float, *, log: bool, integer: bool) -> float | None:
    """The next y to try between a and b, or None when nothing lies between."""
    if integer:
        if abs(b - a) <= 1:
            return None
        return (a + b) // 2
    return math.sqrt(a * b) if log else (a + b) / 2


@dataclass
class Bracket:
    """The search along y for one x: the ends and their probabilities."""

    a: float
    b: float
    pa: float
    pb: float
    done: bool = False


def bisect(xs: list[Any], ya: float, yb: float, evaluate: Callable[[list[tuple[int, float]]],
                                                                    list[float]],
           *, threshold: float, iterations: int, log: bool = False,
           integer: bool = False) -> list[Bracket]:
    """Bisect every x's bracket [ya, yb] for where probability crosses ``threshold``.

    Args:
        xs: the x values (only their count and order matter here).
        evaluate: given (x index, y) pairs, returns each pair's probability;
            called once per round with every pending pair.

    Returns:
        One Bracket per x: ``a``/``b`` the final ends (on opposite sides of the
        threshold unless ``done`` was set at the start because they were not).
    """
    p = evaluate([(i, ya) for i in range(len(xs))] + [(i, yb) for i in range(len(xs))])
    n = len(xs)
    brackets = [Bracket(ya, yb, p[i], p[n + i]) for i in range(n)]
    for br in brackets:
        br.done = (br.pa > threshold) == (br.pb > threshold)
    for _ in range(iterations):
        asks = []
        for i, br in enumerate(brackets):
            if br.done:
                continue
            mid = midpoint(br.a, br.b, log=log, integer=integer)
            if mid is None:
                br.done = True
                continue
            asks.append((i, mid))
        if not asks:
            break
        for (i, mid), pm in zip(asks, evaluate(asks), strict=True):
            br = brackets[i]
            if (pm > threshold) == (br.pa > threshold):
                br.a, br.pa = mid, pm
            else:
                br.b, br.pb = mid, pm
    return brackets


@dataclass
class FrontierResult:
    """The frontier table, every evaluated point, and where they are on disk."""

    table: pd.DataFrame
    evaluations: pd.DataFrame
    out: Path


def _x_groups(spec: SweepSpec, f: FrontierSpec, extra: tuple[str, ...]):
    """The x values, each with the assignments of x and its linked axes (and of
    the other axes, which must have one value each)."""
    x_axis = spec.axis(f.x)
    y_axis = spec.axis(f.y)
    values = {a.name: axis_values(spec, a, extra) for a in spec.axes if a is not y_axis}
    x_group = next(g for g in spec.groups() if x_axis in g)
    rest = [a for g in spec.groups() if x_axis not in g and y_axis not in g for a in g]
    others = [a for a in rest if len(values[a.name]) > 1]
    if others:
        raise spec_error(spec, ("frontier",), "a sweep whose axes besides x and y have "
                         "one value each", ", ".join(a.name for a in others))
    if len(next(g for g in spec.groups() if y_axis in g)) > 1:
        raise spec_error(spec, ("frontier", "y"), "an axis not linked to others",
                         f"{y_axis.name} is linked")
    fixed = [(p, values[a.name][0], f"sweep axis {a.name}") for a in rest for p in a.paths]
    groups = []
    for i in range(len(values[x_axis.name])):
        sets = [(p, values[a.name][i], f"sweep axis {a.name}")
                for a in x_group for p in a.paths]
        # The tables show each x as table_value does (a list as its JSON); the
        # assignments keep the value itself.
        groups.append(({a.name: table_value(values[a.name][i]) for a in x_group},
                       fixed + sets))
    return groups


def find_frontier(spec: SweepSpec, out: str | Path, *, jobs: int | None = None,
                  executor: str = "local", scheduler: Any = None, resume: bool = False,
                  progress: bool = True, overrides: tuple[str, ...] = (),
                  replications: int | None = None,
                  max_points: int = DEFAULT_MAX_POINTS,
                  shared_start: bool = True) -> FrontierResult:
    """Find the burst frontier of a sweep with a ``frontier:`` section.

    Writes ``frontier.csv/.parquet`` (one row per x: ``y_ok``, the y on the
    side at or below the threshold, ``y_over`` beyond it, ``y_frontier`` their
    midpoint, their probabilities, and ``note``), ``frontier_evaluations.csv``
    (every (x, y) run with its probability and Wilson interval) and
    ``frontier.png`` into ``out``. The tables are written first; a figure that
    fails is a ``FigureWarning``.

    ``max_points`` bounds the runs the bisection may need, x values x (2 +
    iterations) x replications, checked before anything runs. ``shared_start``:
    as for ``run_sweep``.
    """
    f = spec.frontier
    if f is None:
        raise SweepError(f"{spec.file or spec.name}: no frontier: section "
                         "(frontier: {x: AXIS, y: AXIS, threshold: 0.5})")
    try:
        key, predicate = criterion(f.criterion)
    except ValueError as exc:
        raise spec_error(spec, ("frontier", "criterion"), "a summary key or "
                         "'key > number'", str(exc)) from None
    y_axis = spec.axis(f.y)
    yvals = axis_values(spec, y_axis, overrides)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in yvals):
        raise spec_error(spec, ("frontier", "y"), "a numeric axis (a range, or numbers)",
                         f"{y_axis.name}: {list(yvals)}")
    ya, yb = yvals[0], yvals[-1]
    integer = all(isinstance(v, int) for v in yvals)
    groups = _x_groups(spec, f, overrides)
    reps = replications or f.replications or spec.replications
    # Both ends, then one midpoint per round, for every x value.
    check_size(spec, [len(groups), 2 + f.iterations], reps, max_points)
    store = RunStore(out)
    if not resume and store.count():
        raise SweepError(f"{out} already holds {store.count()} runs; pass --resume to "
                         "keep them, or choose another --out")
    store.out.mkdir(parents=True, exist_ok=True)
    seeds: list[int] = []
    evaluations: list[dict[str, Any]] = []
    cache: dict[tuple[int, float], float] = {}

    def evaluate(pairs: list[tuple[int, float]]) -> list[float]:
        pts: dict[tuple[int, float], Point] = {}
        for i, y in pairs:
            if (i, y) in pts or (i, y) in cache:
                continue
            sets = groups[i][1] + [(p, y, f"frontier y {y_axis.name}") for p in y_axis.paths]
            sc = point_scenario(spec, sets, overrides)
            pts[(i, y)] = Point(len(evaluations) + len(pts), {**groups[i][0], f.y: y},
                                {**groups[i][0], f.y: y}, sc, scenario_hash(sc))
        if not seeds and pts:
            root = root_seed(spec, list(pts.values()))
            seeds.extend(root + r for r in range(reps))
        tasks = [RunTask(p.key, s, p.scenario, shared_start and executor == "local")
                 for p in pts.values() for s in seeds]
        run_batch(tasks, store, executor=executor, jobs=jobs, scheduler=scheduler,
                  progress=progress, desc=f"{spec.name} frontier")
        for (i, y), p in pts.items():
            hits = n = errors = 0
            for s in seeds:
                rec = store.get(p.key, s)
                if rec is None or rec.get("error"):
                    errors += 1
                    continue
                summary = rec["summary"]
                if key not in summary:
                    raise SweepError(f"frontier criterion {f.criterion!r}: runs have no "
                                     f"summary key {key!r}")
                n += 1
                hits += bool(predicate(summary[key]))
            prob, lo, hi = wilson(hits, n)
            cache[(i, y)] = prob
            evaluations.append({"x_index": i, **groups[i][0], f.y: y, "runs": n,
                                "errors": errors,
                                "probability": prob, "probability_low": lo,
                                "probability_high": hi})
        return [cache[(i, y)] for i, y in pairs]

    brackets = bisect([g[0] for g in groups], ya, yb, evaluate, threshold=f.threshold,
                      iterations=f.iterations, log=y_axis.log, integer=integer)
    rows = []
    for (xvals, _), br in zip(groups, brackets, strict=True):
        over_a = br.pa > f.threshold
        if (br.pa > f.threshold) == (br.pb > f.threshold):
            note = "over the threshold at both ends" if over_a else \
                "at or below the threshold at both ends"
            rows.append({**xvals, "y_ok": math.nan, "y_over": math.nan,
                         "y_frontier": math.nan, "p_ok": math.nan, "p_over": math.nan,
                         "note": note})
            continue
        (y_ok, p_ok), (y_over, p_over) = ((br.b, br.pb), (br.a, br.pa)) if over_a else \
            ((br.a, br.pa), (br.b, br.pb))
        mid = midpoint(y_ok, y_over, log=y_axis.log, integer=False)
        rows.append({**xvals, "y_ok": y_ok, "y_over": y_over, "y_frontier": mid,
                     "p_ok": p_ok, "p_over": p_over, "note": ""})
    table = pd.DataFrame.from_records(rows)
    evals = (pd.DataFrame.from_records(evaluations)
             .sort_values(["x_index", f.y], kind="stable").drop(columns="x_index")
             .reset_index(drop=True))  # in the x axis's order, then along y
    write_table(table, store.out / "frontier")
    atomic_write_bytes(store.out / "frontier_evaluations.csv",
                       evals.to_csv(index=False).encode())
    from redsim.sweep.plots import plot_frontier

    path = store.out / "frontier.png"
    draw_figure(path, lambda: plot_frontier(
        table, evals, f.x, f.y, f.threshold, path, log_y=y_axis.log,
        title=f"{spec.name}: where P({f.criterion}) crosses {f.threshold:g}",
        what=f"P({f.criterion})",
        units={f.x: axis_quantity(spec.axis(f.x)), f.y: axis_quantity(y_axis)}), [])
    return FrontierResult(table, evals, store.out)


__all__ = ["Bracket", "FrontierResult", "bisect", "criterion", "find_frontier", "midpoint"]
