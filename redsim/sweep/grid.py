"""Expanding a sweep into points: ranges, linked axes, constraints, validation.

A point is one combination of axis values. Its scenario is the base scenario
with the sweep's ``set:`` entries and the point's axis values applied, then
validated like any scenario file, so a value a field refuses is reported
before anything runs. A point's identity is its resolved scenario's hash:
two points (or two sweeps) that simulate the same thing share their runs.

Ranges with units (``range: {start: 1h, stop: 8h, num: 8}``) are read through
the field they set, so ``1h`` becomes 3600 s before the values are spaced; the
values of a range are numbers in the field's unit (s, bytes, 1/s), integers
for integer fields.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from redsim.config.constraint import ConstraintError, evaluate_constraint
from redsim.config.errors import ScenarioError, show
from redsim.config.loader import (
    _norm_key,
    field_parser,
    field_path,
    load_scenario,
    resolved_dict,
    scenario_hash,
)
from redsim.config.schema import Scenario
from redsim.config.sweep import (
    Axis,
    SweepSpec,
    axis_loc,
    check_step,
    spec_error,
    step_number,
)
from redsim.config.units import parsed_quantity


@dataclass(frozen=True)
class Point:
    """One combination of axis values.

    Attributes:
        index: position in the grid (axis order, last axis fastest).
        labels: axis name -> the value as the sweep file wrote it.
        values: axis name -> the value the simulator used (s, bytes, 1/s, ...).
        scenario: the validated scenario.
        key: ``scenario_hash(scenario)``: what identifies its runs.
    """

    index: int
    labels: dict[str, Any]
    values: dict[str, Any]
    scenario: Scenario
    key: str


def read_path(data: Any, path: str) -> Any:
    """The value at a dotted path in a resolved scenario dict (None if absent)."""
    node = data
    for seg in field_path(path):
        if isinstance(seg, int):
            if not isinstance(node, list) or seg >= len(node):
                return None
            node = node[seg]
        else:
            if not isinstance(node, dict):
                return None
            match = [k for k in node if _norm_key(k) == _norm_key(seg)]
            if not match:
                return None
            node = node[match[0]]
    return node


def base_values(spec: SweepSpec) -> list[tuple[str, Any, str]]:
    """The sweep's ``set:`` entries as ``load_scenario(values=...)`` triples."""
    return [(p, v, "the sweep's set:") for p, v in spec.fixed]


def point_scenario(spec: SweepSpec, assignments: list[tuple[str, Any, str]],
                   extra: tuple[str, ...] = ()) -> Scenario:
    """The base scenario with ``set:``, CLI overrides and the given values applied."""
    return load_scenario(spec.base, overrides=extra,
                         values=[*base_values(spec), *assignments], base_dir=spec.base_dir)


def _resolved_number(spec: SweepSpec, axis: Axis, value: Any, extra: tuple[str, ...]) -> Any:
    """What the axis's field makes of ``value`` (``1h`` -> 3600.0)."""
    try:
        sc = point_scenario(spec, [(p, value, f"axis {axis.name}") for p in axis.paths], extra)
    except ScenarioError as exc:
        raise spec_error(spec, axis_loc(spec, axis), "a value its field accepts",
                         f"{show(value)}: {exc}") from None
    got = read_path(resolved_dict(sc), axis.paths[0])
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        raise spec_error(spec, axis_loc(spec, axis), "a numeric field for a range",
                         f"{axis.paths[0]} = {show(got)}")
    return got


def axis_quantity(axis: Axis) -> tuple[str, float] | None:
    """What an axis's numbers measure, from the field it sets (its first path):
    ``("duration", 1.0)`` for a TTL in s, ``("size", 1.0)`` for maxmemory in
    bytes, ``("duration", 1e-6)`` for a CPU cost in µs; None for a count, a
    choice or a list (``redsim.config.units.parsed_quantity``)."""
    return parsed_quantity(field_parser(axis.paths[0]))


def axis_values(spec: SweepSpec, axis: Axis, extra: tuple[str, ...] = ()) -> tuple[Any, ...]:
    """An axis's values: as listed, or a range spaced in the field's unit."""
    if axis.range_spec is None:
        return axis.values
    start, stop, n, kind = axis.range_spec
    lo = _resolved_number(spec, axis, start, extra)
    hi = _resolved_number(spec, axis, stop, extra)
    integer = isinstance(lo, int) and isinstance(hi, int)
    loc = axis_loc(spec, axis)
    if kind == "num":
        if axis.log:
            if lo <= 0 or hi <= 0:
                raise spec_error(spec, (*loc, "log-range"), "start and stop > 0", f"{lo}, {hi}")
            vals = np.geomspace(lo, hi, n)
        else:
            vals = np.linspace(lo, hi, n)
    else:
        # A step is a distance in the field's unit: read its magnitude through the
        # field (which may refuse a negative "-1h"), then give it back its sign.
        negative = step_number(n) is not None and step_number(n) < 0
        magnitude = n.strip()[1:] if negative and isinstance(n, str) else \
            (abs(n) if negative else n)
        step = _resolved_number(spec, axis, magnitude, extra)
        step = -step if negative else step

        def error(expected: str, found: str) -> ScenarioError:
            return spec_error(spec, (*loc, "range", "step"), expected,
                              f"{show(n)}: {found}")

        count = check_step(lo, hi, step, error)
        vals = lo + step * np.arange(count)
    if integer:
        out = list(dict.fromkeys(int(round(v)) for v in vals))
    else:
        out = [float(v) for v in vals]
    return tuple(out)


DEFAULT_MAX_POINTS = 10_000
"""Most runs (grid points x replications, counted before constraints) a sweep
may have unless the caller raises the limit (``--max-points``, ``max_points=``):
a few days of runs on a laptop, and a grid written by mistake (three axes of
1,000 values: 10^9 points) is refused in a second instead of expanding for ever."""


def check_size(spec: SweepSpec, lengths: list[int], replications: int,
               max_points: int) -> int:
    """The number of runs a grid of link groups with ``lengths`` values has,
    refused past ``max_points``.

    Raises:
        ScenarioError: naming the sweep file and ``axes``, the count and how to
            raise the limit.
    """
    points = math.prod(lengths)  # Python integers: exact, however large
    runs = points * replications
    if runs > max_points:
        shape = " x ".join(f"{n:,}" for n in lengths)
        raise spec_error(spec, ("axes",),
                         f"a sweep of at most {max_points:,} runs (grid points x "
                         "replications, before constraints; raise the limit with "
                         "--max-points N, or max_points= in Python)",
                         f"{points:,} points ({shape}) x {replications} replications "
                         f"= {runs:,} runs")
    return runs


def expand(spec: SweepSpec, extra: tuple[str, ...] = (), *,
           max_points: int = DEFAULT_MAX_POINTS,
           replications: int | None = None) -> list[Point]:
    """Every point of the sweep that passes its constraints, validated.

    Args:
        spec: the sweep.
        extra: ``--set`` overrides from the command line, applied to every point.
        max_points: the most runs (points x replications, counted before the
            constraints drop any) the grid may have; checked before any point
            is built.
        replications: what the count multiplies by (default: the sweep's).

    Raises:
        ScenarioError: a point's scenario is invalid (naming the point), linked
            axes differ in length, the grid is past ``max_points``, a constraint
            fails at a point (division by zero, overflow; naming the constraint
            and the point), or every point is excluded by the constraints.
    """
    # Per link group, its columns: each axis with its values, as written (`8h`)
    # or computed for a range (at most MAX_RANGE_NUM each, so this is cheap).
    group_cols: list[list[tuple[Axis, tuple[Any, ...]]]] = []
    for members in spec.groups():
        cols = [(a, axis_values(spec, a, extra)) for a in members]
        lengths = {len(v) for _, v in cols}
        if len(lengths) > 1:
            raise spec_error(spec, ("axes", members[0].link, "link"),
                             "linked axes with the same number of values",
                             ", ".join(f"{a.name}: {len(v)}" for a, v in cols))
        group_cols.append(cols)
    # Counted before a single combination is built: the product is what hangs.
    check_size(spec, [len(cols[0][1]) for cols in group_cols],
               replications or spec.replications, max_points)
    group_rows: list[list[list[tuple[Axis, Any]]]] = [
        [[(a, v[i]) for a, v in cols] for i in range(len(cols[0][1]))]
        for cols in group_cols]
    points: list[Point] = []
    for combo in itertools.product(*group_rows):
        assigned = [cell for row in combo for cell in row]
        labels = {a.name: value for a, value in assigned}
        sets = [(p, value, f"sweep axis {a.name}") for a, value in assigned for p in a.paths]
        try:
            sc = point_scenario(spec, sets, extra)
        except ScenarioError as exc:
            raise ScenarioError(file=spec.file, location=f"point {labels}",
                                expected=exc.expected,
                                found=f"{exc.found} at {exc.location}") from None
        resolved = resolved_dict(sc)
        values = {a.name: read_path(resolved, a.paths[0]) for a, _ in assigned}
        if spec.constraints and not _passes(spec, values):
            continue
        points.append(Point(len(points), labels, values, sc, scenario_hash(sc)))
    if not points:
        raise spec_error(spec, ("constraints",), "at least one point that passes",
                         "every point excluded")
    return points


def _passes(spec: SweepSpec, values: dict[str, Any]) -> bool:
    """Whether a point passes every constraint; a constraint that cannot be
    evaluated there is an error naming the file, the constraint and the point."""
    for i, expr in enumerate(spec.constraints):
        try:
            if not evaluate_constraint(expr, values):
                return False
        except ConstraintError as exc:
            point = ", ".join(f"{k}={show(v)}" for k, v in values.items())
            raise spec_error(spec, ("constraints", i),
                             "a constraint that can be evaluated at every point",
                             f"{show(expr)}: {exc} at the point {point}") from None
    return True


def replication_seed(root: int, replication: int) -> int:
    """The seed of replication r: ``root + r``, the same at every point.

    Runs with the same replication index share their seed at every point
    (common random numbers: differences between points are not drowned by
    seed noise), and replications differ. Each seed is expanded by numpy's
    ``SeedSequence``, whose hashing makes adjacent integers independent
    streams; ``redsim run --seed root+r`` reproduces any one run.
    """
    return root + replication


def root_seed(spec: SweepSpec, points: list[Point]) -> int:
    """The sweep's root seed: its ``seed:``, else the base scenario's."""
    return spec.seed if spec.seed is not None else points[0].scenario.seed
