"""Sweep files: a base scenario, the axes to vary, replications, and a frontier.

```yaml
name: s0-ttl-connections
base: ../gitlab-2022.yaml          # a scenario file (relative to this file) or a mapping
set: {duration: 30m}               # fixed changes applied to every point
replications: 5
seed: 1                            # replication r runs with seed + r (default: base's seed)
axes:
  - name: ttl
    path: clients[0].mix[1].ttl    # a dotted path as `redsim run --set` takes; or a list
    values: [1h, 8h, 2w]
  - name: processes
    path: clients[0].processes
    range: {start: 600, stop: 1800, num: 7}        # or step:; log-range: for geometric
  - link:                          # axes that move together (same number of values)
      - {name: appendonly, path: server.appendonly, values: [no, yes, yes]}
      - {name: appendfsync, path: server.appendfsync, values: [everysec, everysec, always]}
constraints: ["processes * 10 <= 20000"]   # over the values the simulator used (s, bytes)
metrics: [burst_detected, latency_p99_s]   # the aggregated table's metrics (optional)
frontier: {x: processes, y: ttl, threshold: 0.5}   # see redsim.sweep.frontier
```

Every mistake is one `ScenarioError` naming the sweep file, its line, the field
(`axes[1].range.num`) and what was expected. Scenario-level mistakes an axis
would cause (a value a field refuses) are reported when the grid is expanded
(`redsim.sweep.grid`), naming the axis.

What a file can ask for is bounded, so that no sweep file hangs or exhausts
memory before it runs: `name` is a name (it becomes `sweeps/NAME`), a range has
at most `MAX_RANGE_NUM` values and a step that is not 0 and points from start to
stop, and a constraint is a small expression walked by `evaluate_constraint`
with bounded cost (numbers of magnitude <= 1e300, no calls or sequences, at
most 500 characters and 32 levels deep). The grid's size is checked against a
limit when it is expanded (`redsim.sweep.grid.DEFAULT_MAX_POINTS`).
"""

from __future__ import annotations

import ast
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from redsim.config.constraint import MAX_CONSTRAINT_CHARS, _pythonise, check_constraint
from redsim.config.errors import ScenarioError, did_you_mean, show
from redsim.config.loader import (
    _dotted,
    _norm_path,
    _parse_override,
    _read_text,
    _read_yaml,
    line_of,
)

_TOP_KEYS = ("name", "description", "base", "set", "replications", "seed", "axes",
             "constraints", "metrics", "frontier")
_AXIS_KEYS = ("name", "path", "values", "range", "log-range")
_FRONTIER_KEYS = ("x", "y", "threshold", "criterion", "iterations", "replications")

DEFAULT_METRICS = (
    "burst_detected", "bursts", "cycle_period_s", "phase1_median_s", "phase2_median_s",
    "phase3_median_s", "rate_dip_median", "memory_drop_median_bytes", "latency_p50_s",
    "latency_p99_s", "latency_p999_s", "latency_max_s", "throughput_rps", "utilisation",
    "used_memory_peak", "evicted_keys", "expired_keys", "oom_rejected",
    "aof_delayed_fsync", "latest_fork_usec", "cow_peak_bytes",
)
"""What the aggregated table reports by default (``summary`` keys)."""


@dataclass(frozen=True)
class Axis:
    """One swept quantity.

    Attributes:
        name: column name in the tables (an identifier; ``-`` allowed).
        paths: scenario fields it sets, dotted like ``clients[0].pool.max-size``.
        values: the values, as written (``8h``) or computed (ranges).
        log: True for a ``log-range`` (plots and the frontier bisect geometrically).
        link: index of its link group: axes of one group move together.
    """

    name: str
    paths: tuple[str, ...]
    values: tuple[Any, ...]
    log: bool = False
    link: int = 0
    range_spec: tuple[Any, Any, Any, str] | None = None  # (start, stop, num|step, kind)


@dataclass(frozen=True)
class FrontierSpec:
    """Where burst probability crosses ``threshold`` along ``y``, for each ``x``.

    Attributes:
        x, y: axis names; y must be numeric (its range is the bisection bracket).
        threshold: a point "bursts" when the criterion's probability exceeds this.
        criterion: a summary key read as a bool (``burst_detected``) or a comparison
            like ``latency_p99_s > 0.01``.
        iterations: bisection steps per x (the bracket shrinks 2**iterations times).
        replications: per evaluated point (default: the sweep's).
    """

    x: str
    y: str
    threshold: float = 0.5
    criterion: str = "burst_detected"
    iterations: int = 6
    replications: int | None = None


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep file."""

    name: str
    description: str
    file: str | None
    base: dict[str, Any]
    """The base scenario's raw data (trace and redis_conf paths made absolute)."""
    base_dir: str
    fixed: tuple[tuple[str, Any], ...]
    """``set:`` entries (path, value), applied to every point before the axes."""
    replications: int
    seed: int | None
    axes: tuple[Axis, ...]
    constraints: tuple[str, ...]
    metrics: tuple[str, ...]
    frontier: FrontierSpec | None
    lines: dict = field(default_factory=dict, compare=False, repr=False)

    def groups(self) -> list[list[Axis]]:
        """The axes by link group, in file order: each group moves together."""
        out: dict[int, list[Axis]] = {}
        for a in self.axes:
            out.setdefault(a.link, []).append(a)
        return list(out.values())

    def axis(self, name: str) -> Axis:
        """The axis called ``name``."""
        for a in self.axes:
            if a.name == name:
                return a
        raise KeyError(name)


class _Reader:
    """Validation helpers that know the file and its line map."""

    def __init__(self, file: str | None, lines: dict) -> None:
        self.file = file
        self.lines = lines

    def error(self, loc: tuple, expected: str, found: str, hint: str | None = None):
        return ScenarioError(file=self.file, line=line_of(self.lines, _norm_path(loc)),
                             location=_dotted(list(loc)), expected=expected, found=found,
                             hint=hint)

    def mapping(self, v: Any, loc: tuple, keys: tuple[str, ...]) -> dict:
        if not isinstance(v, dict):
            raise self.error(loc, "a mapping", show(v))
        for k in v:
            if str(k) not in keys:
                hint = did_you_mean(str(k), keys) or "valid keys: " + ", ".join(keys)
                raise self.error((*loc, str(k)), f"a key of {_where(loc)}", show(k), hint)
        return v

    def integer(self, v: Any, loc: tuple, minimum: int, maximum: int | None = None) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum or (
                maximum is not None and v > maximum):
            bound = f"an integer >= {minimum}" if maximum is None else \
                f"an integer from {minimum} to {maximum:,}"
            raise self.error(loc, bound, show(v))
        return v

    def number(self, v: Any, loc: tuple, lo: float, hi: float) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
            raise self.error(loc, f"a number in [{lo:g}, {hi:g}]", show(v))
        return float(v)

    def sweep_name(self, v: Any, loc: tuple) -> str:
        """The sweep's name: it becomes the folder ``sweeps/NAME``, so it is a
        name, never a path (``../../etc`` would write outside ``sweeps/``)."""
        if not isinstance(v, str) or not _SAFE_NAME.fullmatch(v) or ".." in v:
            raise self.error(loc, "a name of at most 100 letters, digits, '.', '_' and "
                             "'-', starting with a letter or digit, without '..' "
                             "(it names the folder sweeps/NAME)", show(v))
        return v

    def name(self, v: Any, loc: tuple) -> str:
        if not isinstance(v, str) or not v.replace("-", "_").isidentifier():
            raise self.error(loc, "a name made of letters, digits, '_' and '-'", show(v))
        return v


_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")

MAX_RANGE_NUM = 100_000
"""Most values one ``range`` / ``log-range`` may have (``num``, or the count a
``step`` gives). A grid is further bounded by ``max_points`` when expanded."""


def _default_name(file: str | None) -> str:
    """The name of a sweep without ``name:``: its file's stem, made safe."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(file).stem if file else "sweep")
    stem = stem.replace("..", "-").lstrip(".-_")[:100]
    return stem or "sweep"


def _plain_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# The number a written step starts with ("0s", "-1h", "0.5mb"): a step of zero
# is refused whatever its unit, before the field reads it (a field that clamps,
# like server.hz, would turn 0 into 1 and the range into something not asked for).
_LEADING_NUMBER = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")


def step_number(v: Any) -> float | None:
    """The number a step is written with (its unit aside), or None if unreadable."""
    if _plain_number(v):
        return float(v)
    if isinstance(v, str):
        m = _LEADING_NUMBER.match(v)
        if m:
            return float(m.group(1))
    return None


def _where(loc: tuple) -> str:
    return _dotted(list(loc)) or "the sweep file"


def _paths(r: _Reader, v: Any, loc: tuple) -> tuple[str, ...]:
    items = v if isinstance(v, list) else [v]
    if not items:
        raise r.error(loc, "a dotted field path or a list of them", show(v))
    out = []
    for i, p in enumerate(items):
        where = (*loc, i) if isinstance(v, list) else loc
        if not isinstance(p, str) or not p.strip():
            raise r.error(where, "a dotted field path like clients[0].processes", show(p))
        try:
            _parse_override(f"{p}=0")
        except ScenarioError:
            raise r.error(where, "a dotted field path like clients[0].processes",
                          show(p)) from None
        out.append(p.strip())
    return tuple(out)


def _axis(r: _Reader, v: Any, loc: tuple, link: int) -> Axis:
    m = r.mapping(v, loc, _AXIS_KEYS)
    for key in ("name", "path"):
        if key not in m:
            raise r.error((*loc, key), f"a value for {key} (required)", "nothing")
    name = r.name(m["name"], (*loc, "name"))
    paths = _paths(r, m["path"], (*loc, "path"))
    given = [k for k in ("values", "range", "log-range") if k in m]
    if len(given) != 1:
        raise r.error(loc, "exactly one of values, range, log-range", ", ".join(given)
                      or "none of them")
    kind = given[0]
    if kind == "values":
        # Any value the field takes: numbers, strings, and lists or mappings for a
        # field such as server.save; the tables show a value that is not a
        # number, a bool or a string by how it is written (a categorical axis).
        values = m["values"]
        if not isinstance(values, list) or not values:
            raise r.error((*loc, "values"), "a non-empty list", show(values))
        return Axis(name, paths, tuple(values), link=link)
    spec = r.mapping(m[kind], (*loc, kind), ("start", "stop", "num", "step"))
    for key in ("start", "stop"):
        if key not in spec:
            raise r.error((*loc, kind, key), f"a value for {key} (required)", "nothing")
    if ("num" in spec) == ("step" in spec):
        raise r.error((*loc, kind), "exactly one of num, step", show(spec))
    if "num" in spec:
        n = r.integer(spec["num"], (*loc, kind, "num"), 2, MAX_RANGE_NUM)
        return Axis(name, paths, (), log=kind == "log-range", link=link,
                    range_spec=(spec["start"], spec["stop"], n, "num"))
    if kind == "log-range":
        raise r.error((*loc, kind, "step"), "num (a log-range is num values apart "
                      "by a constant factor)", show(spec["step"]))
    start, stop, step = spec["start"], spec["stop"], spec["step"]
    number = step_number(step)
    if number is None or number == 0 or not math.isfinite(number):
        raise r.error((*loc, kind, "step"), "a step other than 0, like 10 or 1h (the "
                      "distance between values, in the field's unit)", show(step))
    if _plain_number(start) and _plain_number(stop):
        # All three plain numbers: the sign and the count are known now. Ranges
        # with units are checked the same way once the field has read them.
        check_step(start, stop, number, lambda e, f: r.error((*loc, kind, "step"), e, f))
    return Axis(name, paths, (), link=link, range_spec=(start, stop, step, "step"))


def check_step(start: float, stop: float, step: float,
               error: Callable[[str, str], Exception]) -> int:
    """The number of values ``start, start + step, ...`` up to ``stop``.

    Args:
        error: ``error(expected, found)`` builds the exception to raise.

    Raises:
        what ``error`` builds: the step is 0, points away from ``stop``, or
        gives more than ``MAX_RANGE_NUM`` values.
    """
    if step == 0 or not math.isfinite(step):
        raise error("a step other than 0", show(step))
    try:
        span = (stop - start) / step  # a float, however large the integers written
    except OverflowError:
        span = math.inf
    if span < 0:
        raise error(f"a step from start towards stop ({'+' if stop > start else '-'})",
                    f"{show(step)} from {show(start)} to {show(stop)}")
    if not span + 1 <= MAX_RANGE_NUM:  # also refuses nan
        raise error(f"a step giving at most {MAX_RANGE_NUM:,} values",
                    f"{show(step)} from {show(start)} to {show(stop)}: "
                    f"{span + 1:,.0f} values")
    # The 1e-9 keeps a stop reached by float steps (0.1 * 3 = 0.30000000000000004).
    return math.floor(span + 1e-9) + 1


# --- constraints: the evaluator is config/constraint.py -------------------------

def _constraint(r: _Reader, v: Any, loc: tuple, names: set[str]) -> str:
    """A constraint checked against the grammar (not evaluated: that is per point)."""
    if not isinstance(v, str) or not v.strip():
        raise r.error(loc, "an expression over axis names, like 'a * b <= 100'", show(v))
    if len(v) > MAX_CONSTRAINT_CHARS:
        raise r.error(loc, f"a constraint of at most {MAX_CONSTRAINT_CHARS} characters",
                      f"{len(v)} characters")
    try:
        tree = ast.parse(_pythonise(v.strip(), names), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # Python's own parser refuses > 200 nested parentheses with a SyntaxError;
        # the other kinds are belt and braces for a parser on odd input.
        raise r.error(loc, "a Python-like comparison over axis names", show(v)) from None
    bad = check_constraint(tree, names)
    if bad is not None:
        expected, found = bad
        unknown = expected.startswith("axis names")
        hint = did_you_mean(found, names) if unknown else None
        raise r.error(loc, expected, f"{show(found) if unknown else found} in {show(v)}",
                      hint)
    return v



def _frontier(r: _Reader, v: Any, names: set[str]) -> FrontierSpec:
    loc = ("frontier",)
    m = r.mapping(v, loc, _FRONTIER_KEYS)
    for key in ("x", "y"):
        if key not in m:
            raise r.error((*loc, key), f"a value for {key} (required)", "nothing")
        if m[key] not in names:
            raise r.error((*loc, key), "an axis name: " + ", ".join(sorted(names)),
                          show(m[key]), did_you_mean(str(m[key]), names))
    if m["x"] == m["y"]:
        raise r.error((*loc, "y"), "an axis other than x", show(m["y"]))
    crit = m.get("criterion", "burst_detected")
    if not isinstance(crit, str) or not crit.strip():
        raise r.error((*loc, "criterion"), "a summary key or a comparison like "
                      "'latency_p99_s > 0.01'", show(crit))
    return FrontierSpec(
        x=m["x"], y=m["y"],
        threshold=r.number(m.get("threshold", 0.5), (*loc, "threshold"), 0.0, 1.0),
        criterion=crit.strip(),
        iterations=r.integer(m.get("iterations", 6), (*loc, "iterations"), 1),
        replications=(r.integer(m["replications"], (*loc, "replications"), 1)
                      if "replications" in m else None),
    )


def _base(r: _Reader, v: Any, base_dir: Path) -> tuple[dict, str]:
    """The base scenario's raw data and the directory its relative paths are from."""
    if isinstance(v, dict):
        return dict(v), str(base_dir)
    if not isinstance(v, str) or not v.strip():
        raise r.error(("base",), "a scenario file path or a scenario mapping", show(v))
    path = (base_dir / os.path.expanduser(v)).resolve()
    try:
        text = _read_text(path)
    except ScenarioError as exc:
        raise r.error(("base",), "a readable scenario file", f"{show(v)} ({exc.found})") \
            from None
    data, _ = _read_yaml(text, str(path))
    if not isinstance(data, dict):
        raise ScenarioError(file=str(path), expected="a mapping of scenario keys",
                            found=show(data))
    return data, str(path.parent)


def load_sweep(source: str | os.PathLike[str] | dict, *,
               base_dir: str | os.PathLike[str] | None = None) -> SweepSpec:
    """Read and validate a sweep file (or mapping).

    Raises:
        ScenarioError: naming the file, line and field for any mistake.
    """
    if isinstance(source, dict):
        file, data, lines = None, source, {}
        here = Path(base_dir) if base_dir is not None else Path.cwd()
    else:
        path = Path(source)
        file = str(path)
        data, lines = _read_yaml(_read_text(path), file)
        here = Path(base_dir) if base_dir is not None else path.resolve().parent
        if not isinstance(data, dict):
            raise ScenarioError(file=file, expected="a mapping with base: and axes:",
                                found="an empty file" if data is None else show(data))
    r = _Reader(file, lines)
    r.mapping(data, (), _TOP_KEYS)
    if "base" not in data:
        raise r.error(("base",), "a value for base (required): a scenario file or mapping",
                      "nothing")
    base, base_dir_s = _base(r, data["base"], here)
    fixed = data.get("set") or {}
    if not isinstance(fixed, dict):
        raise r.error(("set",), "a mapping of field path: value", show(fixed))
    fixed_items = []
    for k, v in fixed.items():
        _paths(r, k, ("set", str(k)))
        fixed_items.append((str(k), v))
    raw_axes = data.get("axes")
    if not isinstance(raw_axes, list) or not raw_axes:
        raise r.error(("axes",), "a non-empty list of axes", show(raw_axes))
    axes: list[Axis] = []
    for i, item in enumerate(raw_axes):
        loc = ("axes", i)
        if isinstance(item, dict) and "link" in item:
            r.mapping(item, loc, ("link",))
            members = item["link"]
            if not isinstance(members, list) or len(members) < 2:
                raise r.error((*loc, "link"), "a list of two or more axes", show(members))
            for j, m in enumerate(members):
                axes.append(_axis(r, m, (*loc, "link", j), link=i))
        else:
            axes.append(_axis(r, item, loc, link=i))
    names = [a.name for a in axes]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise r.error(("axes",), "distinct axis names", ", ".join(dup) + " repeated")
    constraints = data.get("constraints") or []
    if not isinstance(constraints, list):
        raise r.error(("constraints",), "a list of expressions", show(constraints))
    cons = tuple(_constraint(r, c, ("constraints", i), set(names))
                 for i, c in enumerate(constraints))
    metrics = data.get("metrics", list(DEFAULT_METRICS))
    if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
        raise r.error(("metrics",), "a list of summary keys", show(metrics))
    seed = data.get("seed")
    if seed is not None:
        seed = r.integer(seed, ("seed",), 0)
    name = (r.sweep_name(data["name"], ("name",)) if data.get("name") is not None
            else _default_name(file))
    return SweepSpec(
        name=name, description=str(data.get("description") or ""), file=file,
        base=base, base_dir=base_dir_s, fixed=tuple(fixed_items),
        replications=r.integer(data.get("replications", 1), ("replications",), 1),
        seed=seed, axes=tuple(axes), constraints=cons, metrics=tuple(metrics),
        frontier=_frontier(r, data["frontier"], set(names)) if data.get("frontier") else None,
        lines=lines,
    )


def spec_error(spec: SweepSpec, loc: tuple, expected: str, found: str,
               hint: str | None = None) -> ScenarioError:
    """An error located in the sweep file (for mistakes found when expanding)."""
    return _Reader(spec.file, spec.lines).error(loc, expected, found, hint)


def axis_loc(spec: SweepSpec, axis: Axis) -> tuple:
    """The location of an axis in the sweep file, for error messages."""
    members = next(g for g in spec.groups() if axis in g)
    if len(members) == 1:
        return ("axes", axis.link)
    return ("axes", axis.link, "link", members.index(axis))


def dump_spec(spec: SweepSpec) -> str:
    """The sweep as canonical YAML (what a run folder records)."""
    def axis(a: Axis) -> dict:
        d: dict[str, Any] = {"name": a.name, "path": list(a.paths)}
        if a.range_spec is not None:
            start, stop, n, kind = a.range_spec
            d["log-range" if a.log else "range"] = {"start": start, "stop": stop, kind: n}
        else:
            d["values"] = list(a.values)
        return d
    out = {
        "name": spec.name, "description": spec.description, "base": spec.base,
        "set": dict(spec.fixed), "replications": spec.replications, "seed": spec.seed,
        "axes": [axis(g[0]) if len(g) == 1 else {"link": [axis(a) for a in g]}
                 for g in spec.groups()],
        "constraints": list(spec.constraints), "metrics": list(spec.metrics),
    }
    if spec.frontier is not None:
        f = spec.frontier
        out["frontier"] = {"x": f.x, "y": f.y, "threshold": f.threshold,
                           "criterion": f.criterion, "iterations": f.iterations,
                           "replications": f.replications}
    return yaml.safe_dump(out, sort_keys=False, allow_unicode=True)


__all__ = ["Axis", "DEFAULT_METRICS", "FrontierSpec", "MAX_RANGE_NUM", "SweepSpec",
           "axis_loc", "check_step", "dump_spec", "load_sweep", "spec_error", "step_number"]

