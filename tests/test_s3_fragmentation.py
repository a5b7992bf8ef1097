"""Seed S3: after deleting every other key, used_memory halves and RSS stays.

The allocator model (model/arena.py, model/objects.py, model/rss.py) against
three independent sources:

- the seed (../shared/seeds/003_*, Redis 7.2): 100K keys of 1 KB, every odd key
  deleted: mem_fragmentation_ratio 2.16, 0 % of slabs drainable;
- Debian's redis-server 7.0.15 (jemalloc 5.3, 16-B quantum) on this project's
  VM, 2026-11-25, the same commands (DEBUG POPULATE 100000 key 1024, DEL key:1,
  key:3, ...): INFO memory and MEMORY MALLOC-STATS, quoted in each test
  (tests/test_s3_fragmentation_live.py repeats the measurement);
- hand calculations from jemalloc's rules, in the comments.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from redsim import load_scenario
from redsim.config import ScenarioError
from redsim.driver import simulate

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "jemalloc-fragmentation.yaml"
MB = 1e6


@pytest.fixture(scope="module")
def s3():
    return simulate(load_scenario(SCENARIO), seed=3, progress=False)


def _at(r, t):
    """The time series' row of the window ending at t (s)."""
    return r.timeseries.loc[t]


def _slabs(r, at, size):
    tab = r.slabs[(r.slabs["at"] == at) & (r.slabs["size"] == size)]
    assert len(tab) == 1, (at, size)
    return tab.iloc[0]


def test_used_memory_halves_and_rss_stays(s3):
    populated, deleted, purged = _at(s3, 9.5), _at(s3, 19.5), _at(s3, 24.5)
    # 7.0.15 after DEBUG POPULATE: used_memory 136,412,192, RSS 149,008,384;
    # after the DELs: used_memory 69,237,280, RSS 149,008,384. Tolerances: 2 % on
    # used_memory (per-key bytes are exact size classes; the rest is startup
    # bytes), 3 % on RSS (the model's RSS outside jemalloc is a constant,
    # measured 7.67-7.77 MB empty and 8.2 MB with the keys).
    assert populated["used_memory"] == pytest.approx(136.41 * MB, rel=0.02)
    assert populated["used_memory_rss"] == pytest.approx(149.01 * MB, rel=0.03)
    assert deleted["used_memory"] == pytest.approx(69.24 * MB, rel=0.02)
    assert deleted["used_memory_rss"] == pytest.approx(149.01 * MB, rel=0.03)
    # RSS does not move: no slab empties, so no page of the keys' is freed. (What
    # does move is the monitor's 20-KB query buffer, made per read and freed when
    # idle, model/client_memory.py: at most one such buffer, 20,480 B.)
    assert abs(deleted["used_memory_rss"] - populated["used_memory_rss"]) <= 20_480
    # The ratio: the seed's 2.16 within the issue's ±15 %, 7.0.15's 2.15 within 3 %.
    assert deleted["mem_fragmentation_ratio"] == pytest.approx(2.16, rel=0.15)
    assert deleted["mem_fragmentation_ratio"] == pytest.approx(2.15, rel=0.03)
    assert populated["mem_fragmentation_ratio"] == pytest.approx(1.09, rel=0.03)
    # allocator_frag_ratio: 7.0.15 1.00 after populate, 1.97 after the DELs.
    assert populated["allocator_frag_ratio"] == pytest.approx(1.00, abs=0.03)
    assert deleted["allocator_frag_ratio"] == pytest.approx(1.97, rel=0.03)
    # MEMORY PURGE gives nothing back: there is no empty slab to purge.
    assert abs(purged["used_memory_rss"] - deleted["used_memory_rss"]) <= 20_480


def test_no_slab_drains_when_every_other_key_goes(s3):
    # Each bin's slabs before the DELs and after them (before MEMORY PURGE): the
    # same slabs stay in use, so 0 % are drainable (the seed: 0 of 256).
    before = s3.slabs[s3.slabs["at"] == "before del"].set_index("size")
    after = s3.slabs[s3.slabs["at"] == "before memory-purge"].set_index("size")
    assert (after["curslabs"] == before["curslabs"]).all()
    # The three classes a key uses (16-B quantum): key sds and robj (16 B),
    # dictEntry (32 B), the 1 KB value's sds (1030 B -> 1280 B, 16 per slab).
    # 7.0.15's MALLOC-STATS after populate: 828, 821 and 6251 slabs; the 1280 class
    # by hand: 100,000 / 16 = 6,250 slabs plus the startup's one (16 regions).
    assert _slabs(s3, "before del", 1280)["curslabs"] == 6251
    assert _slabs(s3, "before del", 16)["curslabs"] == pytest.approx(828, rel=0.01)
    assert _slabs(s3, "before del", 32)["curslabs"] == pytest.approx(821, rel=0.01)
    # After the DELs every value slab is half used: 7.0.15 6,247 non-full of 6,251
    # (util 0.500); by hand, each 16-region slab of consecutive keys keeps 8.
    v = _slabs(s3, "before memory-purge", 1280)
    assert v["nonfull"] == pytest.approx(6247, rel=0.005)
    assert v["curregs"] == pytest.approx(50_038, rel=0.005)


def test_flushall_returns_the_pages_gradually_and_redis_pins_its_own_slabs(s3):
    ts = s3.timeseries
    before = _at(s3, 24.5)["used_memory_rss"]
    startup = _at(s3, 0.5)["used_memory_rss"]
    dirty = before - startup  # every page the keys held turns dirty at FLUSHALL
    # jemalloc's decay keeps S(1 - k/200) of them k epochs (50 ms) later, S the
    # smootherstep: 1 s after (k = 20), S(0.9) = 0.9914; 5 s after, S(0.5) = 0.5;
    # past 10 s, none. FLUSHALL runs at 25 s; cron ticks every 100 ms, so the
    # window ends at 26.5 and 30.5 s are 1.5 s and 5.5 s after (S(0.85) = 0.9734,
    # S(0.45) = 0.4069). Tolerance 3 % of the dirty pages: the epoch the cron
    # tick falls in and the metadata of the freed extents.
    for t, kept in ((26.5, 0.9734), (30.5, 0.4069), (44.5, 0.0)):
        assert ts.loc[t, "used_memory_rss"] - startup == pytest.approx(kept * dirty,
                                                                      abs=0.03 * dirty)
    # What stays in use is Redis's own allocations and the thread cache's stock:
    # no key's region is left, so per class the regions in use are the empty
    # server's plus the cached ones, and every slab pinned beyond the empty
    # server's holds at least one cached region.
    tab = s3.slabs
    start = tab[tab["at"] == "before populate"].set_index("size")
    end = tab[tab["at"] == "end"].set_index("size")
    assert (end["curregs"] - start["curregs"] == end["tcached"]).all()
    extra = end["curslabs"] - start["curslabs"]
    assert (extra <= end["tcached"]).all()
    # 7.0.15 on this VM (2026-11-25, 4 runs of the same steps: populate, DEL odd,
    # MEMORY PURGE, FLUSHALL; MALLOC-STATS' curslabs): 16-B class 107-112 slabs,
    # 32-B 172-189, 1,280-B 18-28; its empty server has 47, 40 and 1 (the model's
    # startup, measured). Pinned beyond those, the real server's means: 63, 141
    # and 20 slabs. The real runs spread by up to ±25 % (the 1,280-B class: 17 to
    # 27), and the model's cache is visited by the GC less often than Redis's
    # (only the keys' allocations drive it, model/tcache.py): within ±35 %.
    for size, real in ((16, 63), (32, 141), (1280, 20)):
        assert extra[size] == pytest.approx(real, rel=0.35), size
    assert s3.summary["pages_purged"] > 0


def _run(events, keys=100_000, decay_ms=10_000):
    doc = {"name": "frag", "duration": 40.0, "warmup": 0.0, "sample-interval": 1.0,
           "server": {"save": ""},
           "engine": {"allocator": "debian-5.3", "allocator-dirty-decay-ms": decay_ms},
           "events": [{"at": 1.0, "do": "populate", "keys": keys, "value-size": 1024},
                      *events],
           "clients": [{"name": "monitor", "kind": "open", "rate": 1,
                        "mix": [{"command": "PING", "weight": 1}],
                        "keyspace": {"keys": 1, "preload": 0}}]}
    return simulate(load_scenario(doc), seed=1, progress=False)


@pytest.mark.slow
def test_deleting_in_insertion_order_returns_pages_and_every_other_key_does_not():
    first = _run([{"at": 5.0, "do": "del", "pattern": "first", "fraction": 0.5}])
    odd = _run([{"at": 5.0, "do": "del", "pattern": "odd"}])
    populated = first.timeseries.loc[4.0, "used_memory_rss"]
    # Both free half the keys: used_memory ~halves in both.
    for r in (first, odd):
        assert r.timeseries.loc[39.0, "used_memory"] == pytest.approx(
            r.timeseries.loc[4.0, "used_memory"] / 2, rel=0.03)
    # Keys 0..49,999 filled whole slabs in order: deleting them empties those
    # slabs, and 34 s later decay has returned their pages. By hand: 3,125 value
    # slabs x 5 pages = 64.0 MB, plus the 16-B and 32-B slabs of those keys
    # (~390 + ~390 pages = 3.2 MB): RSS falls by ~67 MB (5 % tolerance: partial
    # slabs at the boundary and metadata).
    assert populated - first.timeseries.loc[39.0, "used_memory_rss"] == pytest.approx(
        67.2 * MB, rel=0.05)
    # Every other key: not a page (but the monitor's query buffer, ≤ 20,480 B).
    assert abs(odd.timeseries.loc[39.0, "used_memory_rss"]
               - odd.timeseries.loc[4.0, "used_memory_rss"]) <= 20_480


@pytest.mark.slow
def test_dirty_decay_ms_0_returns_pages_at_once_and_minus_1_only_on_purge():
    # The first half of the keys deleted at 5 s empties whole slabs (~67 MB, the
    # test above). dirty_decay_ms 0 purges a slab's pages as it empties: the
    # window ending at 6 s has them gone. -1 never decays: they stay until the
    # MEMORY PURGE at 20 s, then leave at once.
    half = {"at": 5.0, "do": "del", "pattern": "first", "fraction": 0.5}
    now = _run([half], decay_ms=0).timeseries["used_memory_rss"]
    assert now.loc[4.0] - now.loc[6.0] == pytest.approx(67.2 * MB, rel=0.05)
    never = _run([half, {"at": 20.0, "do": "memory-purge"}],
                 decay_ms=-1).timeseries["used_memory_rss"]
    # Nothing leaves but jemalloc's metadata of the emptied slabs (EXTENT_META,
    # 128 B each): 3,125 value slabs + ~390 of the 16-B and ~390 of the 32-B
    # class = ~3,905 slabs, 0.50 MB; within the monitor's buffers (20 KB).
    assert abs(never.loc[4.0] - never.loc[19.0] - 3905 * 128) <= 20_480
    assert never.loc[19.0] - never.loc[21.0] == pytest.approx(67.2 * MB, rel=0.05)


def test_populate_skips_existing_keys_and_del_patterns_count_as_documented():
    r = _run([{"at": 3.0, "do": "populate", "keys": 1000, "value-size": 10},
              {"at": 5.0, "do": "del", "pattern": "every", "every": 3},
              {"at": 7.0, "do": "del", "pattern": "even"}], keys=1000)
    ts = r.timeseries
    # 1,000 keys; the second populate changes nothing (DEBUG POPULATE skips
    # existing keys), so used_memory is the same before and after it.
    assert ts.loc[2.0, "keys"] == 1000
    assert ts.loc[4.0, "used_memory"] == ts.loc[2.0, "used_memory"]
    # every 3: keys 0, 3, ..., 999: 334 of them; then even among the rest:
    # even numbers not multiples of 3: 500 - 167 = 333. Left: 1000 - 334 - 333.
    assert ts.loc[6.0, "keys"] == 1000 - 334
    assert ts.loc[8.0, "keys"] == 1000 - 334 - 333


def test_the_tracked_allocations_are_the_ledgers_bytes():
    # allocator_allocated counts every key's regions at their size class, as
    # used_memory does: the growth from populating equals used_memory's growth
    # (both are the keys' objects plus the bucket arrays) to the byte.
    r = _run([], keys=20_000)
    ts = r.timeseries
    d_used = ts.loc[5.0, "used_memory"] - ts.loc[0.0 + 1.0, "used_memory"]
    d_alloc = ts.loc[5.0, "allocator_allocated"] - ts.loc[1.0, "allocator_allocated"]
    assert d_used > 20_000 * 1280
    assert d_alloc == d_used


@pytest.mark.parametrize("event, message", [
    ({"at": 1, "do": "populate", "keys": 10}, "value-size"),
    ({"at": 1, "do": "del"}, "pattern"),
    ({"at": 1, "do": "del", "pattern": "every"}, "every"),
    ({"at": 1, "do": "del", "pattern": "random"}, "fraction"),
    ({"at": 1, "do": "bgsave", "keys": 3}, "keys"),
    ({"at": 1, "do": "del", "pattern": "odd", "group": "nope"}, "nope"),
    ({"at": 1, "do": "del", "pattern": "sideways"}, "sideways"),
])
def test_bad_events_are_named(event, message):
    doc = {"name": "x", "events": [event], "clients": [{"name": "a"}]}
    with pytest.raises(ScenarioError) as err:
        load_scenario(doc)
    text = str(err.value)
    assert "events" in text and message in text


def test_a_del_with_nothing_populated_and_no_group_is_refused():
    doc = {"name": "x", "events": [{"at": 1, "do": "del", "pattern": "odd"}],
           "clients": [{"name": "a"}]}
    with pytest.raises(ScenarioError, match="populate"):
        load_scenario(doc)


def test_rss_grows_with_the_keys_slabs_not_only_with_used_memory():
    # 1 KB values' sds fall in the 1,280-B class (16 per 5-page slab): the
    # allocator rounds 1,028 B up to 1,280, which used_memory already counts;
    # full slabs add no page on top (5 x 4096 = 20,480 B = 16 x 1,280 B), so
    # allocator_frag_ratio stays ~1.0 for keys written in order, as 7.0.15
    # showed after DEBUG POPULATE (1.00).
    r = _run([], keys=20_000)
    assert r.timeseries.loc[5.0, "allocator_frag_ratio"] == pytest.approx(1.0, abs=0.05)
    assert np.all(r.timeseries["used_memory_rss"] > r.timeseries["used_memory"])


def test_assert_no_burst_holds_rss_to_max_rss(tmp_path):
    import redsim.testing as rt

    # The S3 run's RSS peaks at ~149 MB (7.0.15: 149.0 MB = 142.1 MiB): a 128 MiB
    # limit fails, naming the peak; a 160 MiB one passes.
    with pytest.raises(AssertionError, match=r"used_memory_rss peaked at 14\d\.\d MB, over "
                                             r"max_rss 128\.0 MB"):
        rt.assert_no_burst(SCENARIO, max_rss="128mb", cache=tmp_path)
    rt.assert_no_burst(SCENARIO, max_rss="160mb", cache=tmp_path)
