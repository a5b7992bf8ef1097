"""Scenario fields of the persistence model: units, presets, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from redsim import load_scenario
from redsim.config.errors import ScenarioError
from redsim.config.units import parse_bandwidth
from redsim.model import disk, presets
from redsim.model import state as S
from redsim.model.build import build_world


def _error(data: dict) -> str:
    with pytest.raises(ScenarioError) as info:
        load_scenario(data)
    return str(info.value)


@pytest.mark.parametrize(("text", "expected"), [
    ("200mb/s", 200 * 2**20), ("1gb/s", 2**30), ("4.5gb/s", 4.5 * 2**30),
    ("1m/s", 1e6), (125e6, 125e6)])
def test_bandwidth_units_follow_redis_sizes(text, expected) -> None:
    assert parse_bandwidth(text) == pytest.approx(expected)


@pytest.mark.parametrize(("data", "field", "expected"), [
    ({"disk": {"preset": "floppy"}}, "disk.preset", "'nvme'"),
    ({"disk": {"write-bandwidth": "fast"}}, "disk.write-bandwidth", "a bandwidth"),
    ({"host": {"transparent-huge-pages": "sometimes"}}, "host.transparent-huge-pages",
     "'madvise'"),
    ({"host": {"fork": "mainframe"}}, "host.fork", "'bare-metal'"),
    ({"events": [{"at": "90s", "do": "bgsave"}]}, "events[0].at", "an event time in [0"),
    ({"events": [{"at": "1s", "do": "save"}]}, "events[0].do", "'bgsave'"),
])
def test_errors_name_the_field(data, field, expected) -> None:
    msg = _error({"duration": 60, **data})
    assert field in msg and expected in msg


def test_presets_and_overrides_reach_the_kernel() -> None:
    sc = load_scenario({"duration": 1, "server": {"appendonly": True, "appendfsync": "always"},
                        "disk": {"preset": "hdd", "write-bandwidth": "100mb/s"},
                        "host": {"fork": "ec2-xen"}})
    w, _, _ = build_world(sc, 1)
    assert w.I[S.AOF_POLICY] == S.FSYNC_ALWAYS
    # the hdd preset: lognormal median 12 ms, sigma 0.44 -> mean 12 ms x e^(0.44^2/2)
    assert w.F[S.DISK_MEAN] == pytest.approx(12e-3 * 1.10162, rel=1e-4)
    assert w.F[S.DISK_SIGMA] == pytest.approx(0.44)
    assert w.F[S.DISK_BW] == pytest.approx(100 * 2**20)
    assert w.F[S.FORK_PER_BYTE] * 2**30 == pytest.approx(0.2393)  # 239.3 ms/GB
    assert w.I[S.PAGE_SHIFT] == 12  # THP madvise: 4 KB pages


def test_redis_conf_directives_are_modelled() -> None:
    sc = load_scenario({"server": {"no-appendfsync-on-rewrite": "yes",
                                   "auto-aof-rewrite-percentage": 50,
                                   "auto-aof-rewrite-min-size": "1gb", "disable-thp": "no"}})
    s = sc.server
    assert s.no_appendfsync_on_rewrite and not s.disable_thp
    assert (s.auto_aof_rewrite_percentage, s.auto_aof_rewrite_min_size) == (50, 2**30)
    assert s.unmodelled == {}


@pytest.mark.parametrize("name", sorted(presets.DISK_PRESETS))
def test_disk_preset_draws_have_the_stated_median_and_spread(name) -> None:
    """Each preset's fdatasync draws are lognormal with the median and sigma its
    sources give. n = 4000 draws: the log of the sample median has standard
    error 1.2533 sigma / sqrt(n), the sample sd of the logs sigma / sqrt(2n);
    both are checked to 4 standard errors (seed fixed)."""
    p = presets.DISK_PRESETS[name]
    assert p.source  # every preset says where its figures come from
    w, _, _ = build_world(load_scenario({"duration": 1, "disk": {"preset": name}}), 1)
    n = 4000
    logs = np.log([disk.fsync_latency(w) for _ in range(n)])
    se_median = 1.2533 * p.fsync_sigma / math.sqrt(n)
    assert abs(np.median(logs) - math.log(p.fsync_median_s)) < 4 * se_median
    assert abs(logs.std() - p.fsync_sigma) < 4 * p.fsync_sigma / math.sqrt(2 * n)
