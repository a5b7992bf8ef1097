"""Sweep files and grid expansion: counts, ranges with units, linked axes,
constraints, and errors that name the file, line and field."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from redsim.config.errors import ScenarioError
from redsim.sweep import expand, load_sweep, replication_seed
from redsim.sweep.stats import mean_ci, t_quantile_975, wilson

BASE = {"name": "base", "duration": 1, "seed": 7,
        "clients": [{"kind": "open", "rate": 1000, "processes": 1, "pool": {"max-size": 64},
                     "mix": [{"command": "GET", "weight": 0.9},
                             {"command": "SET", "weight": 0.1, "ttl": "1h"}],
                     "keyspace": {"keys": 1000}}]}


def _spec(**kw) -> dict:
    return {"base": BASE, **kw}


def test_grid_is_the_product_of_axes_last_fastest() -> None:
    spec = load_sweep(_spec(axes=[
        {"name": "rate", "path": "clients[0].rate", "values": [100, 200, 300]},
        {"name": "hz", "path": "server.hz", "values": [10, 100]}]))
    points = expand(spec)
    assert len(points) == 3 * 2
    assert [(p.values["rate"], p.values["hz"]) for p in points] == [
        (100.0, 10), (100.0, 100), (200.0, 10), (200.0, 100), (300.0, 10), (300.0, 100)]
    assert [p.scenario.server.hz for p in points] == [10, 100] * 3
    assert len({p.key for p in points}) == 6  # each a different scenario


def test_ranges_are_spaced_in_the_fields_unit() -> None:
    spec = load_sweep(_spec(axes=[
        {"name": "ttl", "path": "clients[0].mix[1].ttl", "range": {"start": "1h",
                                                                    "stop": "8h", "num": 8}},
        {"name": "keys", "path": "clients[0].keyspace.keys",
         "log-range": {"start": 100, "stop": 10000, "num": 3}},
        {"name": "mem", "path": "server.maxmemory", "range": {"start": "1mb", "stop": "3mb",
                                                              "step": "1mb"}}]))
    points = expand(spec)
    assert len(points) == 8 * 3 * 3
    assert sorted({p.values["ttl"] for p in points}) == [3600.0 * h for h in range(1, 9)]
    assert sorted({p.values["keys"] for p in points}) == [100, 1000, 10000]  # integers
    assert sorted({p.values["mem"] for p in points}) == [2**20, 2 * 2**20, 3 * 2**20]
    p = points[-1]
    assert p.scenario.clients[0].mix[1].ttl == 8 * 3600.0


def test_linked_axes_move_together_and_constraints_drop_points() -> None:
    spec = load_sweep(_spec(
        axes=[{"link": [{"name": "aof", "path": "server.appendonly",
                         "values": [False, True, True]},
                        {"name": "fsync", "path": "server.appendfsync",
                         "values": ["everysec", "everysec", "always"]}]},
              {"name": "rate", "path": "clients[0].rate", "values": [100, 1000]}],
        constraints=["not (fsync == 'always' and rate > 500)"]))
    points = expand(spec)
    combos = [(p.values["aof"], p.values["fsync"], p.values["rate"]) for p in points]
    # 3 linked rows x 2 rates = 6, minus (always, 1000).
    assert combos == [(False, "everysec", 100.0), (False, "everysec", 1000.0),
                      (True, "everysec", 100.0), (True, "everysec", 1000.0),
                      (True, "always", 100.0)]


def test_one_axis_may_set_several_fields() -> None:
    spec = load_sweep(_spec(axes=[{"name": "cost", "path": ["engine.cpu.commands.GET",
                                                            "engine.cpu.commands.SET"],
                                   "values": ["10us", "20us"]}]))
    sc = expand(spec)[1].scenario
    assert sc.engine.cpu.commands["GET"].fixed == sc.engine.cpu.commands["SET"].fixed == 20.0


def test_replication_seeds_are_common_across_points_and_distinct_across_reps() -> None:
    assert [replication_seed(7, r) for r in range(3)] == [7, 8, 9]


@pytest.mark.parametrize(("sweep", "where", "expected"), [
    (_spec(axes=[{"name": "x", "path": "server.hz"}]), "axes[0]", "exactly one of values"),
    (_spec(axes=[{"name": "x", "path": "server.hz", "values": []}]), "axes[0].values",
     "a non-empty list"),
    (_spec(axes=[{"name": "x", "path": "server.hz", "range": {"start": 1, "stop": 5}}]),
     "axes[0].range", "exactly one of num, step"),
    (_spec(axes=[{"name": "x", "path": "server.hz", "values": [1]}], replications=0),
     "replications", "an integer >= 1"),
    (_spec(axes=[{"name": "x", "path": "server.hz", "valus": [1]}]), "axes[0].valus",
     "a key of axes[0]"),
    (_spec(axes=[{"name": "x", "path": "server.hz", "values": [1]}],
           constraints=["y > 1"]), "constraints[0]", "axis names only"),
    (_spec(axes=[{"name": "x", "path": "server.hz", "values": [1]}],
           constraints=["__import__('os')"]), "constraints[0]", "over axis names"),
    (_spec(axes=[{"link": [{"name": "a", "path": "server.hz", "values": [1, 2]},
                           {"name": "b", "path": "duration", "values": [1]}]}]),
     "axes[0].link", "the same number of values"),
    (_spec(axes=[{"name": "x", "path": "server.hz", "values": [1]}],
           frontier={"x": "x", "y": "z"}), "frontier.y", "an axis name"),
    ({"axes": []}, "base", "a value for base"),
])
def test_sweep_file_errors_name_the_field(sweep, where, expected) -> None:
    with pytest.raises(ScenarioError) as info:
        expand(load_sweep(sweep))
    assert where in info.value.location and expected in info.value.expected


def test_a_value_the_field_refuses_names_the_point_and_field(tmp_path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("base: {duration: 1}\naxes:\n  - name: pol\n    path: server.maxmemory-policy\n"
                 "    values: [allkeys-lru, most-recent]\n")
    with pytest.raises(ScenarioError) as info:
        expand(load_sweep(f))
    msg = str(info.value)
    assert str(f) in msg and "most-recent" in msg and "sweep axis pol" in msg


def test_errors_in_a_file_carry_its_line(tmp_path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("base: {duration: 1}\naxes:\n  - name: x\n    path: server.hz\n"
                 "    range: {start: 1, stop: 5, num: 1}\n")
    with pytest.raises(ScenarioError) as info:
        load_sweep(f)
    assert info.value.file == str(f) and info.value.line == 5
    assert info.value.location == "axes[0].range.num"


# --- intervals, against textbook values -------------------------------------------

def test_wilson_interval_matches_hand_calculation() -> None:
    # 0 of 10: upper = z²/(n + z²) = 3.8415 / 13.8415 = 0.2775 (lower 0).
    p, lo, hi = wilson(0, 10)
    assert (p, lo) == (0.0, 0.0) and hi == pytest.approx(0.2775, abs=1e-4)
    # 5 of 10: centre 0.5, half-width z sqrt(0.025 + z²/400) / (1 + z²/10) = 0.2634.
    p, lo, hi = wilson(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    assert math.isnan(wilson(0, 0)[0])


def test_t_quantiles_and_mean_interval() -> None:
    assert t_quantile_975(1) == 12.706 and t_quantile_975(10) == 2.228
    assert t_quantile_975(40) == pytest.approx(2.0211, abs=2e-4)  # tables: 2.021
    assert t_quantile_975(120) == pytest.approx(1.9799, abs=2e-4)  # tables: 1.980
    m, lo, hi = mean_ci([1.0, 2.0, 3.0])
    # mean 2, s = 1, t(2) = 4.303: 2 ± 4.303 / sqrt(3).
    assert (m, lo, hi) == pytest.approx((2.0, 2 - 4.303 / 3**0.5, 2 + 4.303 / 3**0.5))
    assert math.isnan(mean_ci([5.0])[1])


SHIPPED = sorted((Path(__file__).resolve().parents[1] / "scenarios" / "sweeps").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_sweeps_expand_and_change_only_their_axes(path) -> None:
    from redsim.config import load_scenario
    from redsim.config.loader import resolved_dict

    spec = load_sweep(path)
    points = expand(spec)
    assert len(points) >= 4
    base = resolved_dict(load_scenario(spec.base, base_dir=spec.base_dir))
    # Axes and set touch the top-level sections their paths name; nothing else moves.
    allowed = {q.split(".")[0].split("[")[0].replace("_", "-")
               for a in spec.axes for q in a.paths}
    allowed |= {p.split(".")[0].split("[")[0].replace("_", "-") for p, _ in spec.fixed}
    for p in points:
        d = resolved_dict(p.scenario)
        changed = {k for k in d if d[k] != base[k]}
        assert changed <= allowed, (changed, allowed)
