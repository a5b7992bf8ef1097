"""The dataset sweep (``redsim/calibrate/dataset.py``) against a real
redis-server that the test starts on 127.0.0.1 (a free port, its own --dir)
and stops by PID; skipped where no redis-server or redis-benchmark is found."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_a_dataset_beyond_the_caches_costs_more_per_get_and_every_get_hits():
    from redsim.calibrate import dataset
    from redsim.calibrate.measure import CpuLoad, Target
    from redsim.live.server import RedisServer

    with RedisServer() as srv:
        t = Target.connect(srv.host, srv.port, can_write=True, say=lambda _: None)
        before = t.client.info("stats")
        pts = dataset.measure(t, sizes=(10_000, 1_000_000), loads=(CpuLoad(50, 16, 300_000),),
                              reps=3, commands=("GET",))
        after = t.client.info("stats")
    # The keys are named as redis-benchmark names them: all 1.8 M GETs hit.
    assert after["keyspace_misses"] == before["keyspace_misses"]
    assert after["keyspace_hits"] - before["keyspace_hits"] == 6 * 300_000
    med = dataset.medians(pts)
    small, large = med[(10_000, 64, "GET", 16)], med[(1_000_000, 64, "GET", 16)]
    # 10 K keys (~3 MB) stay in any server CPU's L2 and TLB reach; 1 M keys
    # (~160 MB) are far past both (L2 <= 2 MB per core, a 4 KB-page TLB reach
    # <= 8 MB on x86 servers), so each GET's ~5 dependent loads wait >= 30 ns
    # more each: >= 0.15 µs on a ~0.75 µs request, a ratio of >= 1.2 (bound set
    # from that reasoning before the run; the Intel VM measured 2.2).
    assert large >= 1.2 * small, (small, large)


def test_calibrate_fits_the_miss_costs_of_the_levels_its_sweep_reaches(tmp_path):
    import yaml

    from redsim.calibrate import calibrate, dataset, misses

    out = tmp_path / "caches.yaml"
    calibrate(out, start=True, parts=("caches",), reps=1, sweep=dataset.Sweep(max_bytes=100 << 20),
              progress=False, say=lambda _: None)
    values = yaml.safe_load(out.read_text())["values"]
    # 100 MiB: 3-byte values up to 1 M keys, ~100 MB of span and ~200 MB of
    # lines: far past any L2 (<= 2 MB a core) and 4 KB-page TLB reach (<= 8 MB),
    # so both are fitted; the page walk's reach, 512 x the L2 (>= 512 MB), is
    # not reached and keeps its default; the LLC is fitted only where 200 MB
    # of lines miss it half the time, an LLC of 100 MB or less (this VM's
    # 260 MB is not; a 32 MB one is).
    miss = values["engine"]["cpu"]["miss"]
    assert {"l2", "tlb"} <= set(miss) and "page-walk" not in miss
    # The GET rise from 10 K to 1 M keys is >= 0.15 µs (the test above) over
    # 4-5 loads that all miss the TLB and L2 at 1 M keys: >= 0.03 µs per load.
    total = sum(float(str(v).removesuffix("us")) for v in miss.values())
    assert total >= 0.03, miss
    sizes = misses.cache_sizes()
    assert values["host"] == {k: v for k, v in sizes.items()}
    assert (tmp_path / "caches.dataset.csv").exists()
