"""Sweep figures a planner can read (issue #20): axes in the units the sweep file
writes (``20m … 2w``, ``64MB``, ``25k/s``), metric axes in one unit named in
their label (``p99 latency (ms)``), and each client group's metrics in figures
of their own.

No simulation: the tables are synthetic, or built from points the grid expands
(validation only) and run records written by hand. Every expectation below is
written out by hand.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from redsim.cli import figure_listing
from redsim.config.loader import field_parser
from redsim.config.sweep import load_sweep
from redsim.config.units import (
    common_unit,
    format_quantity,
    parse_bandwidth,
    parse_cost_us,
    parse_duration,
    parse_int,
    parse_rate,
    parse_size,
    parsed_quantity,
)
from redsim.result import FigureWarning
from redsim.sweep import plots
from redsim.sweep.grid import axis_quantity, expand
from redsim.sweep.runner import write_figures
from redsim.sweep.tables import aggregate_table, tidy_table

MB, GB = 1024**2, 1024**3
S0_TTLS = [1200.0, 3600.0, 14400.0, 28800.0, 86400.0, 1209600.0]  # s0-ttl.yaml's values

BASE = {"name": "base", "duration": 1, "seed": 7,
        "clients": [{"kind": "open", "rate": 1000, "processes": 1, "pool": {"max-size": 64},
                     "mix": [{"command": "GET", "weight": 0.9},
                             {"command": "SET", "weight": 0.1, "ttl": "1h"}],
                     "keyspace": {"keys": 1000}}]}
TWO_GROUPS = {**BASE, "clients": [{**BASE["clients"][0], "name": "web"},
                                  {**BASE["clients"][0], "name": "batch", "rate": 200}]}


def _texts(labels) -> list[str]:
    return [t.get_text() for t in labels]


def _shown(axis) -> list[str]:
    """The tick labels a rendered axis shows: those of ticks within its view (a
    locator may place some beyond it)."""
    lo, hi = sorted(axis.get_view_interval())
    return [t.get_text() for v, t in zip(axis.get_majorticklocs(), axis.get_ticklabels(),
                                         strict=True) if lo <= v <= hi and t.get_text()]


# --- 1. values in the units a sweep file writes -----------------------------------

@pytest.mark.parametrize(("kind", "values", "expected"), [
    # The brief's example: one label per value, each in its largest whole unit.
    ("duration", [1200, 3600, 86400, 1209600], ["20m", "1h", "1d", "2w"]),
    # s0-ttl-connections.yaml's log-range 20m..2w, num 6: ratio 1008 ** (1/5).
    ("duration", list(np.geomspace(1200, 1209600, 6)),
     ["20m", "1.33h", "5.3h", "21.1h", "3.51d", "2w"]),
    # Whole in a smaller unit beats a fraction of a larger one: 90m, 10d, 90s.
    ("duration", [5400, 864000, 90, 0.0005, 0.0015, 0],
     ["90m", "10d", "90s", "500µs", "1.5ms", "0"]),
    # Sizes in Redis's binary units; 10**9 bytes is 953.67 MiB.
    ("size", [64 * MB, 1.5 * GB, 512, 10**9], ["64MB", "1.5GB", "512B", "954MB"]),
    ("rate", [25000, 1500, 500, 2.5e6], ["25k/s", "1.5k/s", "500/s", "2.5M/s"]),
    ("bandwidth", [200 * MB, 1.5 * GB], ["200MB/s", "1.5GB/s"]),
])
def test_values_are_shown_as_a_sweep_file_writes_them(kind, values, expected) -> None:
    assert [format_quantity(v, kind) for v in values] == expected


def test_a_given_unit_shows_every_value_in_it() -> None:
    assert [format_quantity(v, "duration", "h") for v in (1800, 3600, 0)] == [
        "0.5h", "1h", "0"]
    assert format_quantity(3 * GB, "size", "MB") == "3072MB"


PARSERS = {"duration": parse_duration, "size": parse_size, "rate": parse_rate,
           "bandwidth": parse_bandwidth}


@given(st.sampled_from(sorted(PARSERS)), st.floats(min_value=1e-6, max_value=1e9))
def test_a_label_reads_back_through_its_parser(kind, value) -> None:
    # Three significant digits: what a label reads back as is within 0.5 % of
    # the value (a size rounds to whole bytes, hence the absolute term).
    if kind in ("size", "bandwidth"):
        value = max(value, 1.0)
    text = format_quantity(value, kind)
    assert math.isclose(PARSERS[kind](text), value, rel_tol=5e-3, abs_tol=0.5), text


@pytest.mark.parametrize(("kind", "values", "expected"), [
    ("duration", [0, 0.0005, 0.003], ("ms", 1e-3)),        # a p99 axis: ms
    ("duration", [0.0004, 7.6], ("s", 1.0)),
    ("size", [3.4e10, 6.4e10], ("GB", float(GB))),          # used_memory: GB
    ("rate", [0, 12000], ("k/s", 1e3)),
    ("size", [0, float("nan")], ("B", 1.0)),                 # nothing to scale by
])
def test_one_unit_per_axis_is_the_largest_keeping_its_values_at_least_1(
        kind, values, expected) -> None:
    assert common_unit(kind, values) == expected


# --- 2. what a field measures ------------------------------------------------------

@pytest.mark.parametrize(("path", "expected"), [
    ("clients[0].mix[1].ttl", ("duration", 1.0)),        # optional, > 0: still a duration
    ("duration", ("duration", 1.0)),
    ("server.maxmemory", ("size", 1.0)),
    ("clients[0].rate", ("rate", 1.0)),
    ("server.latency-monitor-threshold", ("duration", 1e-3)),   # whole ms
    ("engine.cpu.commands.GET.fixed", ("duration", 1e-6)),      # a CPU cost, µs
    ("clients[0].pool.max-size", None),                         # a count
    ("server.appendfsync", None),
    ("server.save", None),
    ("clients[0].no-such-key", None),
])
def test_a_fields_quantity_comes_from_its_parser(path, expected) -> None:
    assert parsed_quantity(field_parser(path)) == expected


def test_parsers_are_told_apart_by_what_they_read() -> None:
    assert parsed_quantity(parse_cost_us) == ("duration", 1e-6)
    assert parsed_quantity(parse_bandwidth) == ("bandwidth", 1.0)  # not a rate
    assert parsed_quantity(parse_rate) == ("rate", 1.0)
    assert parsed_quantity(parse_int) is None
    assert parsed_quantity(None) is None


def test_an_axis_has_its_fields_quantity() -> None:
    spec = load_sweep({"base": BASE, "axes": [
        {"name": "ttl", "path": "clients[0].mix[1].ttl", "values": [1200, 3600]},
        {"name": "pool", "path": "clients[0].pool.max-size", "values": [1, 2]}]})
    assert [axis_quantity(a) for a in spec.axes] == [("duration", 1.0), None]


@pytest.mark.parametrize(("metric", "quantity", "unit", "label"), [
    ("latency_p99_s", ("duration", 1.0), "ms", "p99 latency (ms)"),
    ("latency_p999_s", ("duration", 1.0), "ms", "p99.9 latency (ms)"),
    ("web.latency_mean_s", ("duration", 1.0), "s", "mean latency (s)"),
    ("latest_fork_usec", ("duration", 1e-6), "ms", "latest_fork (ms)"),
    ("cycle_period_s", ("duration", 1.0), "m", "cycle_period (min)"),  # not metres
    ("used_memory_peak", ("size", 1.0), "GB", "used_memory_peak (GB)"),
    ("cow_peak_bytes", ("size", 1.0), "MB", "cow_peak (MB)"),
    ("throughput_rps", ("rate", 1.0), "k/s", "throughput (k/s)"),
    ("batch.throughput_rps", ("rate", 1.0), "/s", "throughput (1/s)"),
    ("evicted_keys", None, None, "evicted_keys"),
    ("mem_fragmentation_ratio", None, None, "mem_fragmentation_ratio"),
])
def test_a_metric_has_a_quantity_and_a_label_by_its_name(metric, quantity, unit,
                                                         label) -> None:
    assert plots.metric_quantity(metric) == quantity
    assert plots.metric_label(metric, unit) == label


# --- 3. the figures ----------------------------------------------------------------

def _agg(axis: str, values, labels=None, **metrics) -> pd.DataFrame:
    """An aggregate table: one row per value, each metric's mean with a band."""
    df = pd.DataFrame({"point": range(len(values)), axis: values})
    if labels is not None:
        df[f"{axis}_label"] = labels
    for m, ys in metrics.items():
        if m == "burst_probability":
            df[m], df[f"{m}_low"], df[f"{m}_high"] = ys, 0.0, 1.0
        else:
            df[f"{m}_mean"] = ys
            df[f"{m}_low"] = np.asarray(ys) * 0.9
            df[f"{m}_high"] = np.asarray(ys) * 1.1
    return df


S0_TTL_AGG = _agg("ttl", S0_TTLS, ["20m", "1h", "4h", "8h", "1d", "2w"],
                  burst_probability=[0, 0, 0, 0, 1.0, 1.0],
                  latency_p99_s=[0.00045, 0.00046, 0.0005, 0.0006, 0.6, 0.61],
                  used_memory_peak=[34e9, 35e9, 36e9, 37e9, 64e9, 64e9])


def test_the_s0_ttl_axis_reads_as_the_file_wrote_it(tmp_path, saved_figures) -> None:
    # It showed 0.0 ... 1.2 x 1e6 (seconds), the four TTLs up to 8 h crowded at 0.
    plots.plot_metric(S0_TTL_AGG, "ttl", "latency_p99_s", tmp_path / "p99.png")
    [ax] = saved_figures["p99.png"].axes
    assert ax.get_xscale() == "log"  # 20m ... 2w spans three decades
    assert _texts(ax.get_xticklabels()) == ["20m", "1h", "4h", "8h", "1d", "2w"]
    np.testing.assert_allclose(ax.get_xticks(), S0_TTLS)
    assert ax.get_xlabel() == "ttl"
    # The metric in one unit, named in the label; the data stay in seconds.
    assert ax.get_ylabel() == "p99 latency (ms)"
    [line] = ax.get_lines()
    np.testing.assert_allclose(line.get_ydata(), S0_TTL_AGG["latency_p99_s_mean"])
    # 0.45 ms ... 0.61 s, its band to 0.67 s: in ms.
    assert _shown(ax.yaxis) == ["0", "100", "200", "300", "400", "500", "600", "700"]


def test_plain_seconds_are_shown_in_the_fields_unit(tmp_path, saved_figures) -> None:
    # The file wrote numbers: no `_label` column; the field says they are seconds.
    agg = _agg("ttl", [1200.0, 3600.0, 86400.0, 1209600.0], burst_probability=[0, 0, 1, 1.0])
    agg = pd.concat([agg.assign(pool=p) for p in (2, 4)], ignore_index=True)
    units = {"ttl": ("duration", 1.0), "pool": None}
    plots.plot_burst_heatmap(agg, "ttl", "pool", tmp_path / "heat.png", units=units)
    [ax, _bar] = saved_figures["heat.png"].axes
    assert _texts(ax.get_xticklabels()) == ["20m", "1h", "1d", "2w"]
    assert _texts(ax.get_yticklabels()) == ["2", "4"]
    assert ax.get_xlabel() == "ttl" and ax.get_ylabel() == "pool"
    # Without the field's unit they are plain numbers, as before.
    plots.plot_burst_heatmap(agg, "ttl", "pool", tmp_path / "raw.png")
    [ax, _bar] = saved_figures["raw.png"].axes
    assert _texts(ax.get_xticklabels()) == ["1,200", "3,600", "86,400", "1,209,600"]


def test_a_heatmap_of_a_metric_writes_its_cells_in_units(tmp_path, saved_figures) -> None:
    agg = pd.DataFrame([{"rate": r, "pool": p, "latency_p99_s_mean": v}
                        for (r, p), v in zip([(1000.0, 1), (2000.0, 1), (1000.0, 2),
                                              (2000.0, 2)], [0.0002, 0.0004, 0.0016, 2.5],
                                             strict=True)])
    plots.plot_burst_heatmap(agg, "rate", "pool", tmp_path / "h.png",
                             value="latency_p99_s_mean", units={"rate": ("rate", 1.0)})
    ax, bar = saved_figures["h.png"].axes
    assert [t.get_text() for t in ax.texts] == ["200µs", "400µs", "1.6ms", "2.5s"]
    assert _texts(ax.get_xticklabels()) == ["1k/s", "2k/s"]
    assert bar.get_ylabel() == "p99 latency (s)"


def test_labels_keep_the_files_spelling_and_format_its_plain_numbers() -> None:
    agg = pd.DataFrame({"ttl": [1200.0, 28800.0], "ttl_label": ["1200", "8h"]})
    assert plots.tick_labels(agg, "ttl", ("duration", 1.0)) == ["20m", "8h"]
    assert plots.tick_labels(agg, "ttl") == ["1200", "8h"]
    # The file's spelling wins over the one a formatter would choose (90m, 12h).
    agg = pd.DataFrame({"ttl": [5400.0, 43200.0], "ttl_label": ["1.5h", "0.5d"]})
    assert plots.tick_labels(agg, "ttl", ("duration", 1.0)) == ["1.5h", "0.5d"]
    # A CPU cost in µs: 50 of them is 50µs.
    cost = pd.DataFrame({"cost": [50.0, 1500.0]})
    assert plots.tick_labels(cost, "cost", ("duration", 1e-6)) == ["50µs", "1.5ms"]


def test_the_unit_is_read_from_how_the_file_wrote_the_values(tmp_path, saved_figures) -> None:
    # No units given: `8h` beside 28800.0 says seconds, `10k/s` beside 10000 a rate.
    assert plots._quantity(S0_TTL_AGG, "ttl", None) == ("duration", 1.0)
    rate = _agg("rate", [10000.0, 20000.0, 40000.0], ["10k/s", "20k/s", "40k/s"],
                throughput_rps=[9000.0, 18000.0, 30000.0])
    assert plots._quantity(rate, "rate", None) == ("rate", 1.0)
    plots.plot_metric(rate, "rate", "throughput_rps", tmp_path / "tp.png")
    [ax] = saved_figures["tp.png"].axes
    assert ax.get_xscale() == "linear"
    assert _shown(ax.xaxis) == ["10k/s", "15k/s", "20k/s", "25k/s", "30k/s", "35k/s",
                                "40k/s"]
    assert ax.get_ylabel() == "throughput (k/s)"


def test_a_linear_duration_axis_takes_the_largest_unit_with_ticks_at_least_1_apart(
        tmp_path, saved_figures) -> None:
    plots.plot_metric(S0_TTL_AGG, "ttl", "used_memory_peak", tmp_path / "mem.png",
                      log_x=False)
    [ax] = saved_figures["mem.png"].axes
    # 0 ... 14 days: in weeks the ticks would be 0.25w apart.
    assert _shown(ax.xaxis) == ["0", "2d", "4d", "6d", "8d", "10d", "12d", "14d"]
    assert ax.get_ylabel() == "used_memory_peak (GB)"
    # 34e9 ... 64e9 bytes, the band 0.9 ... 1.1 times that: 28.5 ... 65.6 GiB.
    assert _shown(ax.yaxis) == ["30", "35", "40", "45", "50", "55", "60", "65"]


def test_the_frontier_shows_its_axes_in_their_units(tmp_path, saved_figures) -> None:
    ev = pd.DataFrame([{"pool": p, "ttl": y, "probability": float(y > 40000)}
                       for p in (2, 4) for y in (1200, 38000, 45000, 90000, 1209600)])
    table = pd.DataFrame([{"pool": p, "y_ok": 38000.0, "y_over": 45000.0,
                           "y_frontier": 41000.0} for p in (2, 4)])
    plots.plot_frontier(table, ev, "pool", "ttl", 0.5, tmp_path / "f.png", log_y=True,
                        units={"pool": None, "ttl": ("duration", 1.0)})
    ax = saved_figures["f.png"].axes[0]
    # Round durations on the log axis, where it showed 10^3 ... 10^6.
    assert _shown(ax.yaxis) == ["1h", "10h", "1d", "1w"]
    assert ax.get_xlabel() == "pool" and ax.get_ylabel() == "ttl"


# --- 4. each client group's figures -------------------------------------------------

GROUP_VALUES = {"latency_p99_s": 0.0004, "throughput_rps": 5000.0, "requests_rejected": 0.0,
                "requests_failed": 2.0, "oom_rejected": 0.0}


def _two_groups(agg: pd.DataFrame, groups=("web", "batch")) -> pd.DataFrame:
    out = agg.copy()
    for k, g in enumerate(groups, 1):
        for m, base in GROUP_VALUES.items():
            ys = base * k * (np.arange(len(out)) + 1)
            out[f"{g}.{m}_mean"], out[f"{g}.{m}_low"], out[f"{g}.{m}_high"] = ys, ys, ys
    return out


def _rate_spec(*extra_axes):
    return load_sweep({"base": TWO_GROUPS, "axes": [
        {"name": "rate", "path": "clients[0].rate", "values": ["10k/s", "20k/s", "40k/s"]},
        *extra_axes]})


RATE_AGG = _agg("rate", [10000.0, 20000.0, 40000.0], ["10k/s", "20k/s", "40k/s"],
                burst_probability=[0, 0, 1.0], latency_p99_s=[0.001, 0.002, 0.004])


def test_two_groups_get_a_figure_per_metric_with_a_line_per_group(tmp_path,
                                                                  saved_figures) -> None:
    agg = _two_groups(RATE_AGG)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FigureWarning)
        written = write_figures(_rate_spec(), agg, tmp_path)
    assert [p.name for p in written] == [
        "burst_probability.png", "latency_p99_s.png", "groups_latency_p99_s.png",
        "groups_throughput_rps.png", "groups_errors.png"]
    assert all(p.stat().st_size > 5000 for p in written)
    for name, ylabels in (("groups_latency_p99_s.png", ["p99 latency (ms)"]),
                          ("groups_throughput_rps.png", ["throughput (k/s)"]),
                          ("groups_errors.png", ["rejected by the pool",
                                                 "failed: conn. closed", "answered -OOM"])):
        axes = saved_figures[name].axes
        assert [ax.get_ylabel() for ax in axes] == ylabels
        for ax in axes:
            assert len(ax.get_lines()) == 2  # web, batch
        assert _texts(axes[0].get_legend().get_texts()) == ["web", "batch"]
        assert _shown(axes[-1].xaxis) == ["10k/s", "15k/s", "20k/s", "25k/s", "30k/s",
                                          "35k/s", "40k/s"]
    # Each line is its group's means, in the table's units.
    web, batch = saved_figures["groups_latency_p99_s.png"].axes[0].get_lines()
    np.testing.assert_allclose(web.get_ydata(), [0.0004, 0.0008, 0.0012])
    np.testing.assert_allclose(batch.get_ydata(), [0.0008, 0.0016, 0.0024])
    np.testing.assert_allclose(web.get_xdata(), [10000, 20000, 40000])


def test_one_group_gets_no_group_figures(tmp_path) -> None:
    written = write_figures(_rate_spec(), _two_groups(RATE_AGG, ("web",)), tmp_path)
    assert [p.name for p in written] == ["burst_probability.png", "latency_p99_s.png"]
    assert not list(tmp_path.glob("groups_*.png"))


def test_with_two_axes_each_group_has_its_panel(tmp_path, saved_figures) -> None:
    spec = _rate_spec({"name": "pool", "path": "clients[0].pool.max-size", "values": [1, 2]})
    agg = pd.concat([RATE_AGG.assign(pool=p) for p in (1, 2)], ignore_index=True)
    agg = _two_groups(agg)
    written = write_figures(spec, agg, tmp_path)
    assert "groups_latency_p99_s.png" in [p.name for p in written]
    # As the p99 figure: along the second axis (pool), a line per first-axis value.
    axes = saved_figures["groups_latency_p99_s.png"].axes
    assert [ax.get_title() for ax in axes] == ["web", "batch"]
    for ax in axes:
        assert len(ax.get_lines()) == 3
        assert ax.get_xlabel() == "pool"
    assert _shown(axes[0].xaxis) == ["1", "2"]  # a count: no 1.5 connections
    assert _texts(axes[0].get_legend().get_texts()) == ["rate = 10k/s", "rate = 20k/s",
                                                        "rate = 40k/s"]
    # batch's panel, rate 10k/s: its p99 at pool 1 and 2 (rows 0 and 3).
    np.testing.assert_allclose(axes[1].get_lines()[0].get_ydata(), [0.0008, 0.0032])


def test_a_failing_group_figure_costs_only_itself(tmp_path, monkeypatch) -> None:
    def boom(*args, **kwargs):
        raise RuntimeError("no ink")

    monkeypatch.setattr(plots, "plot_groups", boom)
    with pytest.warns(FigureWarning) as caught:
        written = write_figures(_rate_spec(), _two_groups(RATE_AGG), tmp_path)
    assert [p.name for p in written] == ["burst_probability.png", "latency_p99_s.png"]
    assert sorted(str(w.message).split(" ")[0] for w in caught) == [
        "groups_errors.png", "groups_latency_p99_s.png", "groups_throughput_rps.png"]
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "burst_probability.png", "latency_p99_s.png"]


def test_the_aggregate_table_carries_each_groups_metrics(tmp_path) -> None:
    points = expand(_rate_spec())
    records = {(p.key, s): {"key": p.key, "seed": s, "error": "", "summary": {
        "burst_detected": False, "latency_p99_s": 0.001,
        **{f"{g}.{m}": v * (i + 1) * (s + 1) for g in ("web", "batch")
           for m, v in GROUP_VALUES.items()}}}
        for i, p in enumerate(points) for s in (0, 1)}
    agg = aggregate_table(tidy_table(points, [0, 1], records), points, ("latency_p99_s",))
    # Replication means: (1 + 2) / 2 times the point's value.
    np.testing.assert_allclose(agg["web.latency_p99_s_mean"], [0.0006, 0.0012, 0.0018])
    np.testing.assert_allclose(agg["batch.throughput_rps_mean"], [7500, 15000, 22500])
    assert plots.client_groups(agg) == ["web", "batch"]
    # One group: its metrics are the run's, no group columns.
    one = load_sweep({"base": BASE, "axes": [
        {"name": "rate", "path": "clients[0].rate", "values": [1000, 2000]}]})
    points = expand(one)
    records = {(p.key, 0): {"key": p.key, "seed": 0, "error": "", "summary": {
        "latency_p99_s": 0.001, "group0.latency_p99_s": 0.001}} for p in points}
    agg = aggregate_table(tidy_table(points, [0], records), points, ("latency_p99_s",))
    assert not [c for c in agg.columns if "." in c]


def test_the_cli_lists_the_group_figures_apart() -> None:
    out = Path("sweeps/x")
    names = ["burst_probability.png", "groups_latency_p99_s.png", "groups_errors.png"]
    assert figure_listing([out / n for n in names], out) == (
        "  figures in sweeps/x: burst_probability.png; per client group (one line each): "
        "groups_latency_p99_s.png, groups_errors.png")
    assert figure_listing([], out) == "  figures: none in sweeps/x"
