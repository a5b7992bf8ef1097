"""fork(), the child and copy-on-write (``model/fork.py``, ``model/cow.py``)
against hand calculations and the coupon-collector law of page copies."""

from __future__ import annotations

import math

import pytest

import redsim
from tests.engine_helpers import ZERO_OVERHEAD

GB = 2**30


def _scenario(*, keys: int = 200_000, mix: dict | None = None, duration: float = 3.0,
              rate: float = 3000.0, host: dict | None = None, **server) -> dict:
    return {
        "name": "fork", "duration": duration, "sample-interval": 0.1, "seed": 5,
        "server": {"save": "", **server},
        "host": {"child-keys-per-sec": 1000, **(host or {})},  # the child outlives the run
        "events": [{"at": 1.0, "do": "bgsave"}],
        "engine": {"cpu": dict(ZERO_OVERHEAD)}, "network": {"rtt": 0},
        "clients": [{"kind": "open", "rate": rate, "processes": 1, "pool": {"max-size": 64},
                     "mix": mix or {"SET": 1}, "key-size": 16, "value-size": 64,
                     "keyspace": {"keys": keys}}],
    }


def test_fork_time_follows_rss_and_page_size() -> None:
    # 4 KB pages: fixed + RSS × ms/GB; 2 MB pages: the page tables are 512× smaller.
    host = {"fork": "ec2-xen", "fork-fixed": "1ms"}  # 239.3 ms/GB (Redis latency docs)
    small = redsim.simulate(_scenario(host=host))
    huge = redsim.simulate(_scenario(host={**host, "transparent-huge-pages": "always"},
                                     **{"disable-thp": False}))
    for r, mapped in ((small, 1.0), (huge, 1 / 512)):
        f = r.forks.iloc[0]
        assert f["time"] == pytest.approx(1.0, abs=1e-3)  # the event's BGSAVE
        assert f["fork_s"] == pytest.approx(1e-3 + f["rss"] * mapped / GB * 0.2393, rel=1e-9)
        assert r.summary["latest_fork_usec"] == round(f["fork_s"] * 1e6)
    # disable-thp yes (the default) keeps Redis on 4 KB pages even with THP "always".
    optout = redsim.simulate(_scenario(host={**host, "transparent-huge-pages": "always"}))
    assert optout.forks.iloc[0]["pages"] == small.forks.iloc[0]["pages"]


def test_thp_copy_on_write_follows_the_kernel() -> None:
    # A heap on 2 MB pages forks with 512x smaller page tables either way; what a
    # write fault copies depends on the kernel: since Linux 5.8 (commit
    # 3917c80280c9) the huge mapping is split and 4 KB copied, before it the
    # whole 2 MB page. Each copy costs cow-fault + page / cow-copy-bandwidth.
    host = {"fork": "ec2-xen", "fork-fixed": "1ms", "transparent-huge-pages": "always",
            "cow-fault": "1us", "cow-copy-bandwidth": 4.5e9}
    runs = {cow: redsim.simulate(_scenario(host={**host, "thp-cow": cow},
                                           **{"disable-thp": False}))
            for cow in ("split", "copy-huge")}
    small = redsim.simulate(_scenario(host={k: v for k, v in host.items()
                                            if k != "transparent-huge-pages"}))
    split, whole = runs["split"].forks.iloc[0], runs["copy-huge"].forks.iloc[0]
    assert split["fork_s"] == whole["fork_s"] == pytest.approx(
        1e-3 + split["rss"] / 512 / GB * 0.2393, rel=1e-9)
    assert split["pages"] == small.forks.iloc[0]["pages"] == math.ceil(split["rss"] / 4096)
    assert whole["pages"] == math.ceil(whole["rss"] / 2**21)
    for r, page in ((runs["split"], 4096), (runs["copy-huge"], 2**21)):
        ts = r.timeseries
        copied = ts["current_cow_size"].iloc[-1]
        assert copied > 0 and copied % page == 0
        spent = ts["cpu_cow"].sum() * 0.1  # CPU share per 0.1 s window -> seconds
        assert spent == pytest.approx(copied / page * (1e-6 + page / 4.5e9), rel=1e-6)


def test_copied_pages_follow_the_coupon_collector_law() -> None:
    # Each distinct key written after the fork touches two pages, each a uniform
    # pick among the P pages that existed: after 2D touches the expected number
    # copied is P (1 − (1 − 1/P)^2D), with D = K (1 − e^(−W/K)) distinct keys out
    # of W uniform writes over K keys.
    r = redsim.simulate(_scenario())
    f = r.forks.iloc[0]
    pages = int(f["pages"])
    ts = r.timeseries
    writes = ts["instantaneous_ops_per_sec"].loc[1.1:].sum() * 0.1  # windows after the fork
    keys = 200_000
    distinct = keys * (1 - math.exp(-writes / keys))
    expected = pages * (1 - (1 - 1 / pages) ** (2 * distinct))
    copied = ts["current_cow_size"].iloc[-1] / 4096
    # Binomial-like spread: sd ≈ sqrt(P p (1 - p)) ≈ 35 pages here; 4 sd.
    sd = math.sqrt(pages * (expected / pages) * (1 - expected / pages))
    assert abs(copied - expected) < 4 * sd + 0.002 * expected
    assert ts["cpu_cow"].loc[1.1:].sum() > 0


def test_reads_copy_nothing_while_a_child_runs() -> None:
    # lookupKey leaves the LRU field alone while a child exists: no page is written.
    r = redsim.simulate(_scenario(mix={"GET": 1}, **{"maxmemory-policy": "allkeys-lru"}))
    assert r.summary["total_forks"] == 1
    assert r.summary["cow_peak_bytes"] == 0


def test_save_points_fork_and_reset_dirty() -> None:
    # save "2 100": a BGSAVE once more than 2 s passed since the last save and
    # ≥ 100 keys changed. The child takes 10 000 keys / 1M keys/s = 10 ms and one
    # disk chunk, so saves start at the first cron after 2, 4, 6, 8 s (+ the
    # previous child's ~0.01 s): four of them in 9 s.
    sc = _scenario(keys=10_000, duration=9.0, host={"child-keys-per-sec": 1e6},
                   save="2 100")
    sc["events"] = []
    r = redsim.simulate(sc)
    assert r.summary["rdb_saves"] == 4 and r.summary["total_forks"] == 4
    starts = r.forks["time"].to_numpy()
    assert starts == pytest.approx([2.1, 4.2, 6.3, 8.4], abs=0.11)
    dirty = r.timeseries["rdb_changes_since_last_save"]
    assert dirty.loc[2.2] < dirty.loc[2.0]  # the save took the changes it wrote


def test_bgsave_is_refused_while_a_child_runs() -> None:
    sc = _scenario()
    sc["events"] = [{"at": 1.0, "do": "bgsave"}, {"at": 2.0, "do": "bgsave"}]
    r = redsim.simulate(sc)
    assert r.summary["total_forks"] == 1


def test_dicts_do_not_grow_while_a_child_runs() -> None:
    # New keys arrive during the child: the main dict (1M keys' worth of
    # buckets needed) stays at its pre-fork size until it is 5× overfull.
    sc = _scenario(keys=50_000, duration=2.0, rate=20_000)
    sc["clients"][0]["keyspace"]["preload"] = 0.3  # 15 000 keys → 16 384 buckets
    sc["events"] = [{"at": 0.01, "do": "bgsave"}]
    r = redsim.simulate(sc)
    keys = r.timeseries["keys"].iloc[-1]
    assert keys > 20_000  # more entries than buckets ...
    sc["events"] = []
    free = redsim.simulate(sc)
    # ... and the run without a child grew its table (32 768 buckets × 8 B more).
    # Clients' buffers are left out: the fork's stall leaves different ones queued.
    def dataset(x):
        return (x.timeseries["used_memory"] - x.timeseries["mem_clients_true"]).iloc[-1]
    assert dataset(free) - dataset(r) >= 16_384 * 8 * 0.9
