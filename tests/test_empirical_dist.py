"""Empirical distributions: measured samples or quantiles as an inverse-CDF table
(probabilities and values, linear in between) that the kernel samples, so a
heavy tail survives (issue #16)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from redsim import load_scenario, simulate
from redsim.config import ScenarioError, resolved_dict, scenario_hash
from redsim.config.loader import resolve_distribution_files
from redsim.config.schema import DurationDist, SizeDist
from redsim.model import disk, rng
from redsim.model import state as S
from tests.engine_helpers import ZERO_OVERHEAD, tiny_world

# Quantiles at log2-µs bin edges (the fsync histogram's bins): P(< 128 µs) = 0.25,
# P(< 256 µs) = 0.5, P(< 1024 µs) = 0.9, and nothing above 4 096 µs.
QUANTILES = {0.0: "100us", 0.25: "128us", 0.5: "256us", 0.9: "1024us", 1.0: "4096us"}
# Mean of the piecewise-linear inverse CDF, by hand: 0.25 x (100+128)/2 + 0.25 x
# (128+256)/2 + 0.4 x (256+1024)/2 + 0.1 x (1024+4096)/2 = 28.5 + 48 + 256 + 256.
MEAN_US = 588.5
# Value sizes, bytes: strictly increasing, so the distribution has no atom.
SIZES = {0.0: 16, 0.5: 100, 0.9: 1000, 0.99: 10_000, 1.0: 100_000}

# Kolmogorov-Smirnov: for n draws of a continuous distribution, P(sqrt(n) D > 1.95)
# is 0.001 (Kolmogorov's limit law; the finite-n law is below it for n ≥ 100), so
# draws that follow the table pass at D < 1.95 / sqrt(n) but for one seed in 1000.
KS_C = 1.95


def _emp(cls, **spec):
    return cls.model_validate({"distribution": "empirical", **spec})


def _ks(draws: np.ndarray, d) -> float:
    """Kolmogorov-Smirnov distance between the draws and the table's CDF (the
    table's values strictly increase: its CDF is linear between them)."""
    x = np.sort(draws)
    cdf = np.interp(x, d.table_x, d.table_p)
    n = len(x)
    return float(max((np.arange(1, n + 1) / n - cdf).max(), (cdf - np.arange(n) / n).max()))


# --- the table --------------------------------------------------------------------


def test_quantiles_are_the_table_and_give_its_mean():
    d = _emp(DurationDist, quantiles=QUANTILES)
    assert d.table_p == (0.0, 0.25, 0.5, 0.9, 1.0)
    assert d.table_x == pytest.approx((100e-6, 128e-6, 256e-6, 1024e-6, 4096e-6), rel=1e-12)
    assert (d.low, d.high) == (d.table_x[0], d.table_x[-1])
    assert d.mean == pytest.approx(MEAN_US * 1e-6, rel=1e-12)


def test_below_the_lowest_quantile_is_its_value():
    # {0.5: 2 ms, 1.0: 80 ms}: flat 2 ms below the median, so the mean is
    # 0.5 x 2 + 0.5 x (2 + 80) / 2 = 21.5 ms.
    d = _emp(DurationDist, quantiles={0.5: "2ms", 1.0: "80ms"})
    assert d.table_p == (0.0, 0.5, 1.0)
    assert d.table_x == pytest.approx((2e-3, 2e-3, 80e-3))
    assert d.mean == pytest.approx(21.5e-3, rel=1e-12)


def test_a_quantile_finer_than_a_thousandth_is_kept():
    # p99.99 is a point of the table, not smeared over a 1/1000 grid step. Mean by
    # hand: 0.5 x 2 + 0.499 x 3.5 + 0.0009 x 52.5 + 0.0001 x 150 = 2.80875 ms.
    d = _emp(DurationDist, quantiles={0.5: "2ms", 0.999: "5ms", 0.9999: "100ms", 1.0: "200ms"})
    assert d.table_p == (0.0, 0.5, 0.999, 0.9999, 1.0)
    assert d.table_x[3] == pytest.approx(0.1)
    assert d.mean == pytest.approx(2.80875e-3, rel=1e-12)


def test_samples_file_values_list_and_quantiles_give_the_same_table(tmp_path):
    samples = [0.003, 0.0011, 0.0052, 0.0009, 0.0150]
    f = tmp_path / "fsync.csv"
    f.write_text("# measured by hand\nfdatasync_s\n" + "\n".join(map(str, samples))
                 + "\n# a comment\n\n")
    a = _emp(DurationDist, samples=str(f))
    b = _emp(DurationDist, values=samples)
    # The sorted samples at probabilities r/(n-1) = 0, 1/4, ..., 1.
    c = _emp(DurationDist, quantiles={0: 0.0009, 0.25: 0.0011, 0.5: 0.003, 0.75: 0.0052,
                                      1: 0.0150})
    assert a == b == c
    assert a.table_x == (0.0009, 0.0011, 0.003, 0.0052, 0.015)
    # Units in a file: the same durations.
    g = tmp_path / "units.txt"
    g.write_text("3ms\n1.1ms\n5.2ms\n900us\n15ms\n")
    assert _emp(DurationDist, samples=str(g)).table_x == pytest.approx(a.table_x, rel=1e-12)
    # One sample: a fixed value, as a table.
    one = _emp(SizeDist, values=[512])
    assert (one.table_p, one.table_x, one.mean) == ((0.0, 1.0), (512.0, 512.0), 512.0)


def test_a_large_sample_is_thinned_keeping_its_extremes_and_its_mean():
    # 200 000 fsyncs: lognormal around 1 ms (sigma 0.5) and 20 outliers of 1 s.
    rng = np.random.default_rng(7)
    n = 200_000
    x = np.concatenate([rng.lognormal(math.log(1e-3), 0.5, n - 20), np.full(20, 1.0)])
    d = _emp(DurationDist, values=x.tolist())
    p, v = np.array(d.table_p), np.array(d.table_x)
    assert len(p) <= S.EMP_MAX_POINTS
    assert (p[0], v[0], p[-1], v[-1]) == (0.0, x.min(), 1.0, x.max())
    # Every point is the samples' own quantile (an order statistic).
    assert v == pytest.approx(np.quantile(x, p), rel=1e-12, abs=0)
    # The body is an even grid: no gap wider than one step of 900 points, plus the
    # one rank (1/(n-1)) that rounding the grid to order statistics can add.
    assert np.diff(p).max() <= 1 / 900 + 1 / (n - 1) + 1e-12
    # The mean stays the samples' (1.233 ms; outliers 0.1 ms of it). Bound, worked
    # before the run: the linear interpolant through every order statistic differs
    # from the sample mean by |mean - (min + max)/2| / n ~ 2.5 µs; the body's
    # chords (width 1/900) add less than (1/900)/2 x its ~10 ms range ~ 5.6 µs; the
    # top segments span a few ranks each, so the jump to the 1-s outliers weighs
    # ~2/n x 1 s / 2 ~ 5 µs: ~13 µs, 1.1 %; the test allows 2 %.
    assert d.mean == pytest.approx(x.mean(), rel=0.02)
    # An even 1001-point grid alone puts the last 1/1000 of probability on one
    # segment from the 99.9th percentile (~5 ms) to 1 s: ~0.5 ms where the
    # samples have ~0.1 ms, +30 %. This is what the top points are for.
    grid = np.linspace(0, 1, 1001)
    even = np.trapezoid(np.quantile(x, grid), grid)
    assert even > 1.2 * x.mean()


# --- files, the resolved scenario, the hash ---------------------------------------


def test_resolved_scenario_holds_the_table_and_loads_back(tmp_path):
    f = tmp_path / "data" / "sizes.csv"
    f.parent.mkdir()
    f.write_text("bytes\n10\n20\n30\n1kb\n")  # 1kb = 1024 B, as redis.conf reads it
    sc = tmp_path / "s.yaml"
    sc.write_text("clients: [{value-size: {distribution: empirical, samples: data/sizes.csv}}]\n")
    s = load_scenario(sc)  # the file is relative to the scenario
    vs = s.clients[0].value_size
    assert isinstance(vs, SizeDist)
    assert vs.table_x == (10.0, 20.0, 30.0, 1024.0)
    d = resolved_dict(s)
    assert d["clients"][0]["value-size"] == {
        "distribution": "empirical",
        "quantiles": {"0.0": 10, "0.3333333333333333": 20, "0.6666666666666666": 30, "1.0": 1024}}
    h = scenario_hash(s)
    f.unlink()  # the resolved scenario (a run folder's scenario.yaml) needs no file
    assert load_scenario(d) == s
    assert load_scenario(yaml.safe_load(yaml.safe_dump(d, sort_keys=False))) == s
    # The hash follows the content, not the path: the same samples elsewhere hash
    # alike, other samples do not.
    g = tmp_path / "elsewhere.csv"
    g.write_text("30\n10\n1024\n20\n")
    same = {"clients": [{"value-size": {"distribution": "empirical", "samples": str(g)}}]}
    assert scenario_hash(load_scenario(same)) == h
    g.write_text("30\n10\n1025\n20\n")
    assert scenario_hash(load_scenario(same)) != h


def test_sample_paths_resolve_against_the_naming_files_directory(tmp_path):
    data = {"disk": {"fsync": {"distribution": "Empirical", "samples": "f.csv"}},
            "clients": [{"think": {"distribution": "empirical", "samples": "/abs/t.csv"}},
                        {"think": {"distribution": "fixed", "samples": "x"}}]}
    resolve_distribution_files(data, tmp_path / "calib")
    assert data["disk"]["fsync"]["samples"] == str((tmp_path / "calib" / "f.csv").resolve())
    assert data["clients"][0]["think"]["samples"] == "/abs/t.csv"
    assert data["clients"][1]["think"]["samples"] == "x"  # not an empirical distribution


# --- mistakes -----------------------------------------------------------------------


def _load_error(fsync: dict, tmp_path) -> ScenarioError:
    sc = tmp_path / "s.yaml"
    sc.write_text(yaml.safe_dump({"disk": {"fsync": {"distribution": "empirical", **fsync}}}))
    with pytest.raises(ScenarioError) as err:
        load_scenario(sc)
    assert "\n" not in str(err.value)  # one line
    assert str(err.value).startswith(f"{sc}:")
    return err.value


@pytest.mark.parametrize("content, expected, found", [
    (None, "a readable samples file", "No such file"),
    ("dir", "a regular file of samples", "not a regular file"),
    ("", "at least one sample in", "none"),
    ("seconds\n# only a header\n", "at least one sample in", "none"),
    ("seconds\n0.001\nabc\n", "one value ≥ 0 per line of", "'abc' on line 3"),
    ("0.001\n-0.002\n", "one value ≥ 0 per line of", "'-0.002' on line 2"),
    ("0.001\nnan\n", "one value ≥ 0 per line of", "'nan' on line 2"),
    ("t,latency\n1,0.001\n", "one value ≥ 0 per line of", "'1,0.001' on line 2"),
    (b"\xff\xfe\x00", "a text file of samples", "binary data"),
])
def test_a_bad_samples_file_names_the_file_field_and_line(tmp_path, content, expected, found):
    f = tmp_path / "bad.csv"
    if content == "dir":
        f.mkdir()
    elif isinstance(content, bytes):
        f.write_bytes(content)
    elif content is not None:
        f.write_text(content)
    err = _load_error({"samples": "bad.csv"}, tmp_path)
    assert err.location == "disk.fsync.samples"
    assert err.line == (tmp_path / "s.yaml").read_text().splitlines().index(
        "    samples: bad.csv") + 1
    assert expected in err.expected and found in err.found
    assert "bad.csv" in str(err)


def test_too_many_samples_is_an_error(tmp_path, monkeypatch):
    from redsim.config.schema import distributions

    monkeypatch.setattr(distributions, "MAX_SAMPLES", 3)
    (tmp_path / "big.csv").write_text("1\n2\n3\n4\n5\n")
    err = _load_error({"samples": "big.csv"}, tmp_path)
    assert err.location == "disk.fsync.samples"
    assert "at most 3 samples" in err.expected and "line 4" in err.found


@pytest.mark.parametrize("spec, where, expected", [
    ({"quantiles": {0.5: "2ms"}}, "quantiles", "a 1.0 quantile"),
    ({"quantiles": {0.5: "5ms", 1.0: "2ms"}}, "quantiles.1.0", "do not decrease"),
    ({"quantiles": {1.5: "5ms"}}, "quantiles.1.5", "a probability from 0 to 1"),
    ({"quantiles": {-0.1: "5ms", 1.0: "6ms"}}, "quantiles.-0.1", "a probability from 0 to 1"),
    ({"quantiles": {0.5: "1ms", "0.50": "1ms", 1: "2ms"}}, "quantiles.0.50",
     "each probability once"),
    ({"quantiles": {0.5: "-1ms", 1: "2ms"}}, "quantiles.0.5", "duration"),
    ({"quantiles": [1, 2]}, "quantiles", "a mapping of probability"),
    ({"values": [1, -2]}, "values[1]", "≥ 0"),
    ({"values": []}, "values", "a non-empty list"),
    ({"values": [1], "quantiles": {1.0: 1}}, "quantiles", "one of samples"),
    ({}, "samples", "one of samples"),
    ({"table": [1, 2]}, "table", "keys of an empirical distribution"),
])
def test_mistakes_name_the_field(tmp_path, spec, where, expected):
    with pytest.raises(ScenarioError) as err:
        load_scenario({"disk": {"fsync": {"distribution": "empirical", **spec}}},
                      base_dir=tmp_path)
    assert err.value.location == f"disk.fsync.{where}"
    assert expected in err.value.expected


# --- the kernel's draws -------------------------------------------------------------


@pytest.mark.usefixtures("python_kernel")  # a step on a World of arrays, as Python
def test_the_kernels_fsync_draws_follow_the_table():
    w, _ = tiny_world({"disk": {"fsync": {"distribution": "empirical", "quantiles": QUANTILES}}})
    assert w.I[S.DISK_KIND] == S.DIST_EMPIRICAL
    d = _emp(DurationDist, quantiles=QUANTILES)
    n = 20_000
    x = np.array([disk.fsync_latency(w) for _ in range(n)])
    assert x.min() >= 100e-6 and x.max() <= 4096e-6
    assert _ks(x, d) < KS_C / math.sqrt(n)


@pytest.mark.usefixtures("python_kernel")
def test_the_kernels_value_size_and_think_draws_are_the_tables_inverse_cdf():
    # Each draw is the table's inverse CDF at the uniform it consumed: with the
    # uniforms peeked before each draw, the kernel's value must equal numpy's
    # interpolation of the same table at the same point (exact up to rounding).
    # This checks the transform for every draw, independent of the stream's luck.
    think = {0.0: "1ms", 0.5: "2ms", 0.99: "10ms", 1.0: "1s"}
    w, streams = tiny_world({
        "disk": {"fsync": {"distribution": "empirical", "quantiles": QUANTILES}},  # a table first
        "clients": [{"value-size": {"distribution": "empirical", "quantiles": SIZES},
                     "think": {"distribution": "empirical", "quantiles": think}}]})
    assert np.shares_memory(w.rg_buf, streams.buf)  # the refills below reach the kernel
    n = 20_000
    for prefix, d in (("vs", _emp(SizeDist, quantiles=SIZES)),
                      ("think", _emp(DurationDist, quantiles=think))):
        assert getattr(w, f"gp_{prefix}_kind")[0] == S.DIST_EMPIRICAL
        args = [getattr(w, f"gp_{prefix}_{f}")[0] for f in ("kind", "mean", "low", "high", "sigma")]
        s = int(w.gp_stream[0]) + (2 if prefix == "vs" else 0)  # call.py, clients.py
        u = np.empty(n)
        x = np.empty(n)
        for i in range(n):
            u[i] = rng.peek_uniform(w, s, 0)
            x[i] = rng.draw(w, s, *args)
            if w.I[S.RNG_LOW]:
                streams.refill()
                w.I[S.RNG_LOW] = 0
        assert w.I[S.RNG_OVERRUN] == 0
        assert (u >= 0).all()
        np.testing.assert_allclose(x, np.interp(u, d.table_p, d.table_x), rtol=1e-12,
                                   err_msg=prefix)
        # Every segment is reached, the top one (1 % or 0.01 of the mass) too.
        assert (x > d.table_x[-2]).sum() > 0.5 * (1 - d.table_p[-2]) * n, prefix
    # The preload draws value sizes from the same table (numpy, not the kernel):
    # Kolmogorov-Smirnov against the table's CDF, at the 0.001 level.
    x = rng.variates(np.random.default_rng(5), _emp(SizeDist, quantiles=SIZES), n)
    assert _ks(x, _emp(SizeDist, quantiles=SIZES)) < KS_C / math.sqrt(n)


def test_a_runs_fsyncs_follow_the_table():
    # appendfsync always, one client, no other cost and no network: each request
    # waits for exactly one fdatasync drawn from the table.
    sc = {"name": "emp", "duration": 10, "seed": 3, "network": {"rtt": 0},
          "server": {"appendonly": "yes", "appendfsync": "always", "save": ""},
          "engine": {"cpu": {**ZERO_OVERHEAD, "aof-write": 0, "aof-write-per-byte": 0,
                             "commands": {"SET": {"fixed": 0, "per-byte": 0}}}},
          "disk": {"fsync": {"distribution": "empirical", "quantiles": QUANTILES},
                   "write-bandwidth": "500000gb/s"},
          "clients": [{"mix": {"SET": 1}, "pool": {"max-size": 1}}]}
    r = simulate(load_scenario(sc))
    h = r.fsync_calls
    n = int(h["count"].sum())
    assert n > 10_000
    below = {edge: int(h.loc[h["usecs_hi"] < edge, "count"].sum()) / n
             for edge in (128, 256, 1024)}
    # Each fraction is a binomial proportion: within 4 standard errors of the table's CDF.
    for edge, p in ((128, 0.25), (256, 0.5), (1024, 0.9)):
        assert abs(below[edge] - p) < 4 * math.sqrt(p * (1 - p) / n), (edge, below[edge])
    assert int(h.loc[h["usecs_lo"] >= 4096, "count"].sum()) == 0
    # The mean fsync, from the throughput: 1 / X, within 4 standard errors (the
    # table's standard deviation, ~760 µs, over sqrt n).
    d = load_scenario(sc).disk.fsync
    p, v = np.array(d.table_p), np.array(d.table_x)
    # E[X^2] of a linear segment from a to b over dp: dp (a^2 + ab + b^2) / 3.
    ex2 = float(np.sum(np.diff(p) * (v[:-1] ** 2 + v[:-1] * v[1:] + v[1:] ** 2) / 3))
    sd = math.sqrt(ex2 - (MEAN_US * 1e-6) ** 2)
    assert 1 / r.summary["throughput_rps"] == pytest.approx(MEAN_US * 1e-6,
                                                            abs=4 * sd / math.sqrt(n))
