"""Sweeps that cannot crash, hang or escape (issue #17).

Each test here failed before the fix it names: constraints that raised
ZeroDivisionError / MemoryError or never returned, grids that expanded for
ever, a sweep name that wrote outside ``sweeps/``, a string- or list-valued
axis that lost the tables to ``TypeError: unhashable type``, a failing figure
that cost the tables, and workers that outlived a SIGKILLed ``redsim sweep``.
Bad input must give one ``ScenarioError`` naming the file, the line, the field
and what was expected.
"""

from __future__ import annotations

import json
import operator
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from redsim.cli import DEFAULT_MAX_POINTS as CLI_DEFAULT_MAX_POINTS
from redsim.cli import main
from redsim.config.constraint import ConstraintError, evaluate_constraint
from redsim.config.errors import ScenarioError
from redsim.config.sweep import load_sweep
from redsim.sweep import run_sweep
from redsim.sweep.grid import DEFAULT_MAX_POINTS, expand
from tests.engine_helpers import ZERO_OVERHEAD

# A small base scenario: validation only, unless a test runs it (0.5 s simulated).
BASE = textwrap.dedent("""\
    base:
      name: tiny
      duration: 0.5
      warmup: 0
      sample-interval: 0.1
      seed: 11
      engine: {cpu: {commands: {GET: {fixed: 20us}}}}
      clients:
        - kind: open
          rate: 2000
          processes: 1
          pool: {max-size: 64}
          mix: [{command: GET, weight: 0.9}, {command: SET, weight: 0.1, ttl: 1h}]
          keyspace: {keys: 1000}
    """)


def _write(tmp_path: Path, body: str, name: str = "s.yaml") -> Path:
    f = tmp_path / name
    f.write_text(BASE + textwrap.dedent(body))
    return f


def _line(f: Path, text: str) -> int:
    """The 1-based line of the first line of ``f`` containing ``text``."""
    return next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if text in ln)


# Two axes: procs (1, 2, 3) and hz (10, 100); 6 points.
AXES = textwrap.dedent("""\
    axes:
      - {name: procs, path: "clients[0].processes", values: [1, 2, 3]}
      - {name: hz, path: server.hz, values: [10, 100]}
    """)


# --- 1. constraints: a grammar checked at load, bounded cost at evaluation --------

@pytest.mark.parametrize(("constraint", "expected"), [
    # Sequences: `[0] * 10 ** 10` allocated 80 GB (MemoryError).
    ("[0] * 10 ** 10 == procs", "an expression over axis names and numbers"),
    # String repetition: `'x' * 10 ** 12` (MemoryError).
    ("'x' * 10 ** 12 == procs", "strings only in == / != comparisons"),
    # 200 `not`s: Python's parser ran out of memory on a long enough chain.
    ("not " * 120 + "procs", "at most 32 nested operators"),
    ("abs(procs) > 1", "an expression over axis names and numbers"),
    ("procs.real > 1", "an expression over axis names and numbers"),
    ("procs[0] > 1", "an expression over axis names and numbers"),
    ("(lambda: 1)() > 0", "an expression over axis names and numbers"),
    ("procs if hz else 1", "an expression over axis names and numbers"),
    ("procs << 3 > 1", "an expression over axis names and numbers"),
    ("procs in hz", "`in` followed by a written list of constants"),
    ("procs > 1e999", "a number of magnitude at most 1e+300"),   # inf as written
    ("procs > " + "9" * 400, "a number of magnitude at most 1e+300"),
    ("procs < " + "1 + " * 200 + "1", "a constraint of at most 500 characters"),
])
def test_a_constraint_outside_the_grammar_is_refused_at_load(tmp_path, constraint,
                                                             expected) -> None:
    f = _write(tmp_path, AXES + f"constraints:\n  - {json.dumps(constraint)}\n")
    with pytest.raises(ScenarioError) as info:
        load_sweep(f)
    err = info.value
    assert err.file == str(f) and err.location == "constraints[0]"
    assert err.line == _line(f, "constraints:") + 1  # the list item's own line
    assert expected in err.expected, str(err)
    assert str(f) in str(err) and "constraints[0]" in str(err)


@pytest.mark.parametrize(("constraint", "found"), [
    ("procs / 0 > 1", "1 / 0 divides by zero"),          # was ZeroDivisionError
    ("procs % 0 == 1", "divides by zero"),
    ("procs // (hz - hz) == 1", "divides by zero"),
    ("0 ** -procs > 1", "divides by zero"),
    # 9 ** 9 ** 9 = 9 ** 387420489: 370 million digits, computed for hours before.
    # log10(9) x 387420489 = 3.7e8 > 300: refused from the logarithm.
    ("9 ** 9 ** 9 > procs", "is beyond 1e+300"),
    ("procs ** 10 ** 10 > 1", "is beyond 1e+300"),            # 2 ** 1e10 at procs=2
    ("(-procs) ** 0.5 > 1", "has no real value"),
    ("1e300 * 1e300 * procs > 1", "1e+300 * 1e+300 is beyond 1e+300"),  # inf from finite
])
def test_a_constraint_failing_at_a_point_names_file_constraint_and_point(
        tmp_path, constraint, found) -> None:
    f = _write(tmp_path, AXES + f"constraints: [{json.dumps(constraint)}]\n")
    spec = load_sweep(f)
    t0 = time.perf_counter()
    with pytest.raises(ScenarioError) as info:
        expand(spec)
    assert time.perf_counter() - t0 < 10  # no hang: each step costs O(1)
    err = info.value
    assert err.file == str(f) and err.location == "constraints[0]"
    assert err.expected == "a constraint that can be evaluated at every point"
    assert found in err.found and json.dumps(constraint)[1:-1] in err.found
    # The point's values as the simulator uses them: procs first, hz second.
    assert "at the point procs=" in err.found and ", hz=10" in err.found


def test_ordering_a_string_against_a_number_fails_cleanly(tmp_path) -> None:
    f = _write(tmp_path, """\
        axes:
          - {name: fsync, path: server.appendfsync, values: [everysec, always]}
        constraints: ["fsync > 1"]
        """)
    with pytest.raises(ScenarioError) as info:
        expand(load_sweep(f))
    assert "compares two numbers or two strings" in info.value.found
    assert "fsync='everysec'" in info.value.found


@pytest.mark.parametrize(("expr", "values", "expected"), [
    # The shipped s0-connections constraint: 6 x 1200 = 7200 <= 20000; 20 x 1200 > 20000.
    ("pool-size * 1200 <= 20000", {"pool-size": 6}, True),
    ("pool-size * 1200 <= 20000", {"pool-size": 20}, False),
    ("not (fsync == 'always' and rate > 500)", {"fsync": "always", "rate": 1000.0}, False),
    ("not (fsync == 'always' and rate > 500)", {"fsync": "everysec", "rate": 1000.0}, True),
    # 3 ** 2 + 12 // 3 - 7 % 4 = 9 + 4 - 3 = 10.
    ("a ** 2 + b // 3 - 7 % 4 == 10", {"a": 3, "b": 12}, True),
    ("-a ** 2 == -9", {"a": 3}, True),                # Python's precedence: -(a ** 2)
    ("1 < a <= 3 < b", {"a": 3, "b": 4}, True),       # a chain, each link must hold
    ("1 < a <= 3 < b", {"a": 3, "b": 3}, False),
    ("a in (1, 2) or s not in ('no', 'yes')", {"a": 5, "s": "no"}, False),
    ("a in (1, 2) or s not in ('no', 'yes')", {"a": 2, "s": "no"}, True),
    ("2 ** -1 == 0.5 and 10 ** 300 > 0", {"a": 0}, True),   # both at the bounds
    ("a / 4 == 0.75", {"a": 3}, True),                  # true division, as written
    ("aof and not x", {"aof": True, "x": False}, True),  # bools read as bools
    ("save == '\"\"' or save != 1", {"save": [[3600, 1]]}, True),  # a list: == only
])
def test_valid_constraints_evaluate_as_written(expr, values, expected) -> None:
    assert evaluate_constraint(expr, values) is expected


_NUM = st.one_of(st.integers(-1000, 1000),
                 st.floats(-1e3, 1e3, allow_nan=False).map(lambda x: round(x, 3)))
_OPS = ["+", "-", "*", "/", "//", "%", "**"]
_CMPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
         "==": operator.eq, "!=": operator.ne}


def _python(expr: str, env: dict) -> object:
    """Python's own value of an arithmetic expression, or the exception class it
    raises; a complex value or one beyond 1e300 counts as an error (the walker
    refuses them: no axis is complex, and 1e300 is its documented bound)."""
    try:
        v = eval(expr, {"__builtins__": {}}, dict(env))  # noqa: S307 - the oracle
    except (ZeroDivisionError, OverflowError, TypeError) as exc:
        return type(exc)
    if isinstance(v, complex) or abs(v) > 1e300:
        return OverflowError
    return v


@settings(max_examples=300, deadline=None)
@given(a=_NUM, b=_NUM, c=_NUM, op1=st.sampled_from(_OPS), op2=st.sampled_from(_OPS),
       cmp=st.sampled_from(sorted(_CMPS)))
def test_arithmetic_agrees_with_python(a, b, c, op1, op2, cmp) -> None:
    # The independent oracle: Python's eval of the same expression. |values| <=
    # 1000 keep it cheap (x ** y has at most 3,000 digits), except a power of a
    # power (3 million digits), which is left out.
    assume(not (op1 == "**" and op2 == "**"))
    env = {"x": a, "y": b, "z": c}
    inner = _python(f"x {op1} y", env)
    outer = _python(f"(x {op1} y) {op2} z", env)
    expr = f"(x {op1} y) {op2} z {cmp} 1.5"
    if isinstance(inner, type) or isinstance(outer, type):
        with pytest.raises(ConstraintError) as info:
            evaluate_constraint(expr, env)
        # The message names the operation that failed, with the operator written.
        failed = op1 if isinstance(inner, type) else op2
        assert f" {failed} " in str(info.value), str(info.value)
    else:
        assert evaluate_constraint(expr, env) is _CMPS[cmp](outer, 1.5)


@pytest.mark.parametrize("constraint", ["9 ** 9 ** 9 > procs", "procs ** 10 ** 10 > 1",
                                        "[0] * 10 ** 10 == procs"])
def test_the_cli_reports_a_runaway_constraint_in_one_line(tmp_path, constraint) -> None:
    # In a subprocess with a timeout: before the fix the first two never returned,
    # and an in-process test would hang with them (a C-level pow ignores signals).
    f = _write(tmp_path, AXES + f"constraints: [{json.dumps(constraint)}]\n")
    p = subprocess.run([sys.executable, "-m", "redsim", "sweep", str(f), "--dry-run"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert str(f) in p.stderr and "constraints[0]" in p.stderr


# --- 2. grid size: counted before anything is built; steps that make sense -----

def test_a_huge_num_is_refused_at_load(tmp_path) -> None:
    f = _write(tmp_path, """\
        axes:
          - name: rate
            path: clients[0].rate
            range: {start: 1, stop: 10, num: 1000000000}
        """)
    with pytest.raises(ScenarioError) as info:
        load_sweep(f)
    err = info.value
    assert (err.file, err.line, err.location) == (str(f), _line(f, "range:"),
                                                  "axes[0].range.num")
    assert err.expected == "an integer from 2 to 100,000" and "1000000000" in err.found


def _three_axes_of_1000(tmp_path: Path) -> Path:
    values = json.dumps(list(range(1, 1001)))
    return _write(tmp_path, f"""\
        axes:
          - {{name: rate, path: "clients[0].rate", values: {values}}}
          - {{name: keys, path: "clients[0].keyspace.keys", values: {values}}}
          - {{name: procs, path: "clients[0].processes", values: {values}}}
        """)


def test_three_axes_of_1000_values_are_refused_at_once_with_the_count(tmp_path) -> None:
    f = _three_axes_of_1000(tmp_path)
    spec = load_sweep(f)
    t0 = time.perf_counter()
    with pytest.raises(ScenarioError) as info:
        expand(spec)
    assert time.perf_counter() - t0 < 5  # counted, not expanded (10^9 points)
    err = info.value
    assert err.file == str(f) and err.location == "axes" and err.line == _line(f, "axes:")
    assert "at most 10,000 runs" in err.expected and "--max-points" in err.expected
    # 1,000 x 1,000 x 1,000 = 10^9 points, x 1 replication.
    assert err.found == ("1,000,000,000 points (1,000 x 1,000 x 1,000) x 1 replications "
                         "= 1,000,000,000 runs")


def test_the_limit_counts_replications_and_can_be_raised(tmp_path) -> None:
    # 3 procs x 2 hz = 6 points, x 2 replications = 12 runs.
    f = _write(tmp_path, AXES + "replications: 2\n")
    spec = load_sweep(f)
    with pytest.raises(ScenarioError, match=r"6 points \(3 x 2\) x 2 replications = 12 runs"):
        expand(spec, max_points=11)
    assert len(expand(spec, max_points=12)) == 6
    # --replications on the command line is what counts: 6 x 1 = 6 runs.
    assert len(expand(spec, max_points=6, replications=1)) == 6
    assert DEFAULT_MAX_POINTS == CLI_DEFAULT_MAX_POINTS == 10_000


def test_the_cli_refuses_a_huge_grid_in_one_line_and_max_points_raises_it(tmp_path,
                                                                         capsys) -> None:
    f = _write(tmp_path, AXES + "replications: 2\n")
    assert main(["sweep", str(f), "--dry-run", "--max-points", "11"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(f) in err
    assert "12 runs" in err and "--max-points N" in err
    assert main(["sweep", str(f), "--dry-run", "--max-points", "12"]) == 0
    assert "6 points x 2 replications = 12 runs" in capsys.readouterr().out
    assert main(["sweep", str(_three_axes_of_1000(tmp_path)), "--dry-run"]) == 2
    assert "1,000,000,000 runs" in capsys.readouterr().err


@pytest.mark.parametrize(("rng", "field", "expected"), [
    # step 0 on server.hz gave 10 points: the field clamps hz 0 to 1.
    ("{start: 1, stop: 10, step: 0}", "server.hz", "a step other than 0"),
    ("{start: 1s, stop: 1h, step: 0s}", "clients[0].mix[1].ttl", "a step other than 0"),
    ("{start: 1, stop: 10, step: -1}", "server.hz", "a step from start towards stop (+)"),
    ("{start: 10, stop: 1, step: 2}", "server.hz", "a step from start towards stop (-)"),
    # (10^12 - 0) / 1 + 1 values.
    ("{start: 0, stop: 1000000000000, step: 1}", "clients[0].keyspace.keys",
     "a step giving at most 100,000 values"),
    ("{start: 1, stop: 10, step: .nan}", "server.hz", "a step other than 0"),
])
def test_a_step_that_cannot_give_a_range_is_refused_at_load(tmp_path, rng, field,
                                                            expected) -> None:
    f = _write(tmp_path, f"axes:\n  - name: x\n    path: {field}\n    range: {rng}\n")
    with pytest.raises(ScenarioError) as info:
        load_sweep(f)
    err = info.value
    assert (err.file, err.location) == (str(f), "axes[0].range.step")
    assert err.line == _line(f, "range:") and expected in err.expected, str(err)


@pytest.mark.parametrize(("rng", "expected"), [
    # With units the sign and count are known once the field has read them.
    ("{start: 1h, stop: 8h, step: -1h}", "a step from start towards stop (+)"),
    # 1 s to 100,000 h by 1 s: 360,000,000 values.
    ("{start: 1s, stop: 100000h, step: 1s}", "a step giving at most 100,000 values"),
])
def test_a_step_with_units_is_checked_when_expanded(tmp_path, rng, expected) -> None:
    f = _write(tmp_path, f"axes:\n  - name: ttl\n    path: clients[0].mix[1].ttl\n"
                         f"    range: {rng}\n")
    t0 = time.perf_counter()
    with pytest.raises(ScenarioError) as info:
        expand(load_sweep(f))
    assert time.perf_counter() - t0 < 5
    err = info.value
    assert (err.file, err.location) == (str(f), "axes[0].range.step")
    assert expected in err.expected, str(err)


def test_descending_ranges_still_work(tmp_path) -> None:
    f = _write(tmp_path, """\
        axes:
          - {name: keys, path: "clients[0].keyspace.keys", range: {start: 10, stop: 1, step: -3}}
          - {name: ttl, path: "clients[0].mix[1].ttl", range: {start: 8h, stop: 2h, step: -3h}}
        """)
    points = expand(load_sweep(f))
    # 10, 7, 4, 1 (four steps of -3); 8 h, 5 h, 2 h = 28800, 18000, 7200 s.
    assert sorted({p.values["keys"] for p in points}, reverse=True) == [10, 7, 4, 1]
    assert sorted({p.values["ttl"] for p in points}, reverse=True) == [28800, 18000, 7200]


def test_a_large_allowed_grid_dry_runs_quickly(tmp_path) -> None:
    # 2,000 points: counting, constraints and validating every point stay fast.
    f = _write(tmp_path, """\
        axes:
          - {name: rate, path: "clients[0].rate", range: {start: 100, stop: 10000, num: 100}}
          - {name: keys, path: "clients[0].keyspace.keys", range: {start: 10, stop: 200, step: 10}}
        constraints: ["rate * keys > 0"]
        """)
    t0 = time.perf_counter()
    points = expand(load_sweep(f))
    assert len(points) == 100 * 20  # (200 - 10) / 10 + 1 = 20 key counts
    assert time.perf_counter() - t0 < 60


def test_a_frontier_too_large_is_refused_before_anything_runs(tmp_path) -> None:
    from redsim.sweep.frontier import find_frontier

    f = _write(tmp_path, """\
        replications: 10
        axes:
          - {name: rate, path: "clients[0].rate", range: {start: 100, stop: 10000, num: 200}}
          - {name: keys, path: "clients[0].keyspace.keys", values: [10, 1000]}
        frontier: {x: rate, y: keys, iterations: 6}
        """)
    out = tmp_path / "out"
    # 200 x values x (2 ends + 6 midpoints) x 10 replications = 16,000 runs.
    with pytest.raises(ScenarioError, match=r"16,000 runs"):
        find_frontier(load_sweep(f), out, jobs=1, progress=False)
    assert not out.exists()


# --- 3. a name is a name, not a path ------------------------------------------

@pytest.mark.parametrize("name", ["../../etc", "a/b", "..", ".hidden", "a\\b", "a b",
                                  "x" * 101, "a..b", ""])
def test_a_name_that_is_a_path_is_refused(tmp_path, name) -> None:
    f = _write(tmp_path, f"name: {json.dumps(name)}\n" + AXES)
    with pytest.raises(ScenarioError) as info:
        load_sweep(f)
    err = info.value
    assert (err.file, err.line, err.location) == (str(f), _line(f, "name: \""), "name")
    assert "it names the folder sweeps/NAME" in err.expected


def test_the_cli_does_not_write_outside_sweeps(tmp_path, monkeypatch, capsys) -> None:
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    f = _write(work, "name: ../../etc\n" + AXES)
    assert main(["sweep", str(f), "--jobs", "1", "--no-progress"]) == 2
    assert "name: expected a name" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "s.yaml"]


def test_names_that_are_names_are_kept_and_a_file_stem_is_made_safe(tmp_path) -> None:
    assert load_sweep(_write(tmp_path, "name: s0-ttl.v2_b\n" + AXES)).name == "s0-ttl.v2_b"
    assert load_sweep(_write(tmp_path, AXES, name="my sweep (2).yaml")).name == "my-sweep-2-"


# --- 4. string and list fields are axes; a failing figure costs only itself ----

SAVE = """\
    axes:
      - name: save
        path: server.save
        values: ["3600 1 300 100 60 10000", ""]
    """


def _fake_records(points, seeds, bursts):
    """Run records as a worker stores them, without simulating."""
    return {(p.key, s): {"key": p.key, "seed": s, "error": "",
                         "summary": {"burst_detected": b, "latency_p99_s": 0.001 * (i + 1)}}
            for i, (p, b) in enumerate(zip(points, bursts, strict=True)) for s in seeds}


def test_a_list_valued_field_is_a_categorical_axis(tmp_path, saved_figures) -> None:
    from redsim.sweep.runner import FigureWarning, write_figures
    from redsim.sweep.tables import aggregate_table, tidy_table

    spec = load_sweep(_write(tmp_path, SAVE))
    points = expand(spec)
    # The simulator uses the parsed save points, a list of [seconds, changes] pairs.
    assert [p.values["save"] for p in points] == [
        [[3600, 1], [300, 100], [60, 10000]], []]
    records = _fake_records(points, [11], [True, False])
    runs = tidy_table(points, [11], records)
    agg = aggregate_table(runs, points, spec.metrics)
    # Tabled by the written value (the empty string shown as ""): hashable, one column.
    assert list(agg["save"]) == ["3600 1 300 100 60 10000", '""']
    assert "save_label" not in agg.columns
    assert list(agg["burst_probability"]) == [1.0, 0.0]
    runs.to_parquet(tmp_path / "runs.parquet")  # writes: no list cells
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        written = write_figures(spec, agg, tmp_path)
    assert not [w for w in caught if issubclass(w.category, FigureWarning)]
    assert sorted(p.name for p in written) == ["burst_probability.png", "latency_p99_s.png"]
    assert all(p.stat().st_size > 5000 for p in written)
    # What the figures show: one category per written value, in the file's order,
    # and the values the fake records hold (bursts [True, False]; p99 1 ms, 2 ms).
    for name, metric, ys, ylabel in (
            ("burst_probability.png", "burst_probability", [1.0, 0.0], "burst probability"),
            ("latency_p99_s.png", "latency_p99_s", [0.001, 0.002], "p99 latency (ms)")):
        [ax] = saved_figures[name].axes
        assert [t.get_text() for t in ax.get_xticklabels()] == ["3600 1 300 100 60 10000",
                                                                '""']
        [line] = ax.get_lines()
        assert list(line.get_xdata()) == [0, 1]
        np.testing.assert_allclose(line.get_ydata(), ys)
        assert ax.get_xlabel() == "save" and ax.get_ylabel() == ylabel
        assert ax.get_title().startswith(f"{metric} vs save")
    # A probability axis shows all of [0, 1] whatever the data.
    [ax] = saved_figures["burst_probability.png"].axes
    assert ax.get_ylim() == (-0.02, 1.02)


def test_list_and_mapping_values_are_axes_too(tmp_path) -> None:
    from redsim.sweep.tables import aggregate_table, tidy_table

    spec = load_sweep(_write(tmp_path, """\
        axes:
          - name: save
            path: server.save
            values: [[3600, 1], [[900, 1], [300, 10]]]
          - name: mix
            path: clients[0].mix
            values: [{GET: 1}, {GET: 0.5, SET: 0.5}]
        """))
    points = expand(spec)
    assert len(points) == 4
    records = _fake_records(points, [1], [False, True, False, True])
    agg = aggregate_table(tidy_table(points, [1], records), points, spec.metrics)
    # Written as compact JSON, the order the file gave.
    assert list(agg["save"]) == ["[3600, 1]"] * 2 + ["[[900, 1], [300, 10]]"] * 2
    assert list(agg["mix"])[:2] == ['{"GET": 1}', '{"GET": 0.5, "SET": 0.5}']


def test_a_string_axis_sweep_runs_and_writes_tables_and_figures(tmp_path,
                                                                 saved_figures) -> None:
    # The planner's sweep: it ran every point, then died in write_figures with
    # `TypeError: unhashable type: 'list'` and wrote no table.
    spec = load_sweep(_write(tmp_path, SAVE))
    res = run_sweep(spec, tmp_path / "out", jobs=1, progress=False)
    agg = pd.read_csv(tmp_path / "out" / "aggregate.csv", keep_default_na=False)
    assert list(agg["save"]) == ["3600 1 300 100 60 10000", '""']
    assert list(res.runs["status"]) == ["ok", "ok"]
    assert (tmp_path / "out" / "burst_probability.png").stat().st_size > 5000
    [ax] = saved_figures["burst_probability.png"].axes
    assert [t.get_text() for t in ax.get_xticklabels()] == list(agg["save"])
    [line] = ax.get_lines()
    np.testing.assert_allclose(line.get_ydata(), agg["burst_probability"])


def _boom(*args, **kwargs):
    raise RuntimeError("no ink\nsecond line")


ONE_AXIS = """\
    axes:
      - {name: rate, path: "clients[0].rate", values: [1000, 3000]}
    """


def test_a_failing_figure_costs_only_itself(tmp_path, monkeypatch) -> None:
    import redsim.sweep.plots
    from redsim.sweep.runner import FigureWarning

    calls = []
    real = redsim.sweep.plots.plot_metric

    def first_fails(*args, **kwargs):  # the first figure fails, the second is drawn
        calls.append(args[2])
        if len(calls) == 1:
            _boom()
        real(*args, **kwargs)

    monkeypatch.setattr(redsim.sweep.plots, "plot_metric", first_fails)
    out = tmp_path / "out"
    with pytest.warns(FigureWarning) as caught:
        res = run_sweep(load_sweep(_write(tmp_path, ONE_AXIS)), out, jobs=1, progress=False)
    assert [str(w.message) for w in caught] == [
        "burst_probability.png not written (RuntimeError: no ink second line); "
        f"the sweep's tables in {out} are complete"]
    assert calls == ["burst_probability", "latency_p99_s"]  # it went on
    assert len(res.runs) == 2 and len(pd.read_parquet(out / "runs.parquet")) == 2
    assert len(pd.read_csv(out / "aggregate.csv")) == 2
    assert [p.name for p in out.glob("*.png")] == ["latency_p99_s.png"]


def test_the_cli_shows_a_failing_figure_in_one_line(tmp_path) -> None:
    # In a subprocess: pytest records warnings itself, so stderr is only real there.
    f = _write(tmp_path, ONE_AXIS)
    out = tmp_path / "out"
    script = ("import sys, redsim.sweep.plots as p\n"
              "def boom(*a, **k): raise RuntimeError('no ink\\nsecond line')\n"
              "p.plot_metric = boom\n"
              "from redsim.cli import main\n"
              f"sys.exit(main(['sweep', {str(f)!r}, '--out', {str(out)!r}, '--jobs', '1', "
              "'--no-progress']))\n")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    # Both figures of a one-axis sweep fail, each on one line of its own.
    assert [ln for ln in p.stderr.splitlines() if "not written" in ln or "Warning" in ln] == [
        f"redsim: warning: {name}.png not written (RuntimeError: no ink second line); "
        f"the sweep's tables in {out} are complete"
        for name in ("burst_probability", "latency_p99_s")]
    assert len(pd.read_parquet(out / "runs.parquet")) == 2
    assert "tables:" in p.stdout


# --- 5. workers die with their parent ---------------------------------------------

def _workers(pid: int) -> list[int]:
    """The pool workers of process ``pid``: its live children started by
    multiprocessing's ``spawn_main`` (not its resource tracker), from /proc."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmdline = (d / "cmdline").read_bytes()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces; split after the last ')'.
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z" and b"spawn_main" in cmdline:
            out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    """Running, not a zombie (an orphan's zombie waits for a reaper that may not
    reap; it holds no memory and runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc; PR_SET_PDEATHSIG is Linux's")


@pytest.mark.slow  # a CLI sweep killed and resumed: ~15 s
@linux_only
def test_workers_die_when_the_sweep_is_sigkilled_and_resume_completes(tmp_path) -> None:
    # 12 runs of 2 s simulated each: the kill lands while workers simulate.
    sweep = {"name": "tiny", "replications": 3, "base": {
        "name": "tiny", "duration": 2, "warmup": 0, "sample-interval": 0.1, "seed": 11,
        "engine": {"cpu": {**ZERO_OVERHEAD, "commands": {"GET": {"fixed": "20us"}}}},
        "clients": [{"kind": "open", "rate": 2000, "processes": 1, "pool": {"max-size": 64},
                     "mix": {"GET": 1}, "keyspace": {"keys": 1000}}]},
        "axes": [{"name": "rate", "path": "clients[0].rate",
                  "values": [1000, 2000, 3000, 4000]}]}
    f = tmp_path / "tiny.yaml"
    f.write_text(json.dumps(sweep))  # JSON is YAML
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "redsim", "sweep", str(f), "--out", str(out),
           "--jobs", "2", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    workers: list[int] = []
    try:
        # Workers exist once the pool starts; a first run file shows they are past
        # their start-up (the initializer ran) and simulating.
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if len(_workers(proc.pid)) == 2 and list((out / "runs").glob("*.json")):
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the sweep ended before it could be killed"
        workers = _workers(proc.pid)
        assert len(workers) == 2 and all(_alive(w) for w in workers)
        os.kill(proc.pid, signal.SIGKILL)  # the parent only, as `kill -9 PID` does
        proc.wait(timeout=10)
        # Before: both workers ran on (~0.5 GB each) until killed by hand.
        assert _wait_gone(workers, 5.0) == []
    finally:
        for pid in [proc.pid, *workers]:  # whatever is left, e.g. when an assert failed
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        proc.wait(timeout=10)
    done = len(list((out / "runs").glob("*.json")))
    assert 1 <= done < 12
    again = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    runs = pd.read_csv(out / "runs.csv")
    assert len(runs) == 12 and set(runs["status"]) == {"ok"}
    assert f"ran {12 - done} in" in again.stdout and f"{done} from disk" in again.stdout


_CHILD = """\
import sys, time
from redsim.sweep.executors import die_with_parent
how = die_with_parent(int(sys.argv[1]), use_prctl=sys.argv[2] == "prctl", interval=0.1)
open(sys.argv[3], "w").write(how)
time.sleep(120)
"""

_PARENT = """\
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(os.getpid()), sys.argv[2],
                          sys.argv[3]])
print(child.pid, flush=True)
time.sleep(120)
"""


@linux_only
@pytest.mark.parametrize("how", ["prctl", "poll"])
def test_a_worker_dies_with_its_parent_by_prctl_or_by_polling(tmp_path, how) -> None:
    # The fallback (a thread polling the parent) is what runs where prctl is not
    # available; both are tried here on Linux.
    ready = tmp_path / "ready"
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, _CHILD, how, str(ready)],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    child = 0
    try:
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not ready.exists():
            time.sleep(0.02)
        time.sleep(0.1)  # the file is written, then closed
        assert ready.read_text() == how and _alive(child)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        # prctl: at once; polling: within one 0.1 s interval.
        assert _wait_gone([child], 3.0) == []
    finally:
        for pid in (parent.pid, child):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        parent.wait(timeout=10)


def test_a_worker_whose_parent_is_already_gone_exits_at_once() -> None:
    # A pid that is not our parent stands for a parent that died before the
    # worker ran its initializer: the death signal would never come.
    p = subprocess.run([sys.executable, "-c", "import os; from redsim.sweep.executors "
                        "import die_with_parent; die_with_parent(os.getppid() + 1); "
                        "print('still here')"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "still here" not in p.stdout



def test_a_failing_redraw_removes_the_stale_figure(tmp_path) -> None:
    # `--resume` into an old folder redraws its figures; one that fails must not
    # leave the earlier model's PNG to pass for this sweep's (run folders did
    # this already; both now share result.draw_guarded).
    from redsim.sweep.runner import FigureWarning, draw_figure

    stale = tmp_path / "burst_probability.png"
    stale.write_bytes(b"an earlier sweep's figure")
    written: list = []
    with pytest.warns(FigureWarning, match="burst_probability.png not written"):
        draw_figure(stale, _boom, written)
    assert not stale.exists() and written == []
