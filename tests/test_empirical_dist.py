"""Empirical distributions: measured samples or quantiles as an inverse-CDF table
the kernel samples, so a heavy tail survives (issue #16)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from redsim import load_scenario, simulate
from redsim.config import ScenarioError, resolved_dict
from redsim.config.schema import DurationDist, SizeDist
from tests.engine_helpers import ZERO_OVERHEAD

# Quantiles at log2-µs bin edges (the fsync histogram's bins): P(< 128 µs) = 0.25,
# P(< 256 µs) = 0.5, P(< 1024 µs) = 0.9, and nothing above 4 096 µs.
QUANTILES = {0.0: "100us", 0.25: "128us", 0.5: "256us", 0.9: "1024us", 1.0: "4096us"}
# Mean of the piecewise-linear inverse CDF, by hand: 0.25 x (100+128)/2 + 0.25 x
# (128+256)/2 + 0.4 x (256+1024)/2 + 0.1 x (1024+4096)/2 = 28.5 + 48 + 256 + 256.
MEAN_US = 588.5


def test_quantiles_give_the_table_and_its_mean():
    d = DurationDist.model_validate({"distribution": "empirical", "quantiles": QUANTILES})
    assert len(d.table) == 1001
    assert d.table[0] == pytest.approx(100e-6) and d.table[250] == pytest.approx(128e-6)
    assert d.table[500] == pytest.approx(256e-6) and d.table[900] == pytest.approx(1024e-6)
    assert d.table[1000] == pytest.approx(4096e-6)
    assert (d.low, d.high) == (d.table[0], d.table[-1])
    assert d.mean == pytest.approx(MEAN_US * 1e-6, rel=1e-9)


def test_below_the_lowest_quantile_is_its_value():
    # {0.5: 2 ms, 1.0: 80 ms}: flat 2 ms below the median, so the mean is
    # 0.5 x 2 + 0.5 x (2 + 80) / 2 = 21.5 ms.
    d = DurationDist.model_validate({"distribution": "empirical",
                                     "quantiles": {0.5: "2ms", 1.0: "80ms"}})
    assert d.table[0] == d.table[500] == pytest.approx(2e-3)
    assert d.mean == pytest.approx(21.5e-3, rel=1e-9)


def test_samples_file_and_values_list_agree(tmp_path):
    samples = [0.003, 0.0011, 0.0052, 0.0009, 0.0150]
    f = tmp_path / "fsync.csv"
    f.write_text("fdatasync_s\n" + "\n".join(map(str, samples)) + "\n# a comment\n\n")
    a = DurationDist.model_validate({"distribution": "empirical", "samples": str(f)})
    b = DurationDist.model_validate({"distribution": "empirical", "values": samples})
    assert a == b
    # The table is the samples' quantiles: min, max, median 3 ms at p = 0.5.
    assert (a.table[0], a.table[500], a.table[1000]) == (0.0009, 0.003, 0.015)
    # Units in a file work too.
    g = tmp_path / "units.txt"
    g.write_text("3ms\n1.1ms\n5.2ms\n900us\n15ms\n")
    assert DurationDist.model_validate({"distribution": "empirical",
                                        "samples": str(g)}).table == pytest.approx(a.table)


def test_resolved_scenario_holds_the_table_and_loads_back(tmp_path):
    f = tmp_path / "sizes.csv"
    f.write_text("10\n20\n30\n1000\n")
    sc = tmp_path / "s.yaml"
    sc.write_text("clients: [{value-size: {distribution: empirical, samples: sizes.csv}}]\n")
    s = load_scenario(sc)  # the file is relative to the scenario
    d = resolved_dict(s)
    assert set(d["clients"][0]["value-size"]) == {"distribution", "table"}
    f.unlink()  # the resolved scenario no longer needs the file
    assert load_scenario(d) == s
    assert isinstance(s.clients[0].value_size, SizeDist)


@pytest.mark.parametrize("spec, where, expected", [
    ({"samples": "nowhere.csv"}, "samples", "a readable samples file"),
    ({"quantiles": {0.5: "2ms"}}, "quantiles", "a 1.0 quantile"),
    ({"quantiles": {0.5: "5ms", 1.0: "2ms"}}, "quantiles.1.0", "do not decrease"),
    ({"quantiles": {1.5: "5ms"}}, "quantiles.1.5", "probabilities in [0, 1]"),
    ({"values": [1, -2]}, "values[1]", "≥ 0"),
    ({"values": []}, "values", "a non-empty list"),
    ({"values": [1], "quantiles": {1.0: 1}}, "quantiles", "one of samples"),
])
def test_mistakes_name_the_field(tmp_path, spec, where, expected):
    with pytest.raises(ScenarioError) as err:
        load_scenario({"disk": {"fsync": {"distribution": "empirical", **spec}}},
                      base_dir=tmp_path)
    assert err.value.location == f"disk.fsync.{where}"
    assert expected in err.value.expected


def test_a_bad_line_names_the_file_and_line(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("seconds\n0.001\nabc\n")
    with pytest.raises(ScenarioError, match=r"bad\.csv.*'abc' on line 3"):
        load_scenario({"disk": {"fsync": {"distribution": "empirical", "samples": str(f)}}})
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(ScenarioError, match="not a regular file"):
        load_scenario({"disk": {"fsync": {"distribution": "empirical",
                                          "samples": str(tmp_path / "dir.csv")}}})


def test_the_kernels_fsync_draws_follow_the_table():
    # appendfsync always, one client, no other cost and no network: each request
    # waits for exactly one fdatasync drawn from the table.
    sc = {"name": "emp", "duration": 10, "seed": 3, "network": {"rtt": 0},
          "server": {"appendonly": "yes", "appendfsync": "always", "save": ""},
          "engine": {"cpu": {**ZERO_OVERHEAD, "aof-write": 0, "aof-write-per-byte": 0,
                             "commands": {"SET": {"fixed": 0, "per-byte": 0}}}},
          "disk": {"fsync": {"distribution": "empirical", "quantiles": QUANTILES},
                   "write-bandwidth": "1000000gb/s"},
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
    table = np.asarray(load_scenario(sc).disk.fsync.table)
    sd = math.sqrt(np.trapezoid(table ** 2, np.linspace(0, 1, 1001)) - (MEAN_US * 1e-6) ** 2)
    assert 1 / r.summary["throughput_rps"] == pytest.approx(MEAN_US * 1e-6,
                                                            abs=4 * sd / math.sqrt(n))
