"""Active defrag (redsim/model/defrag.py, arena.defrag_hint / defrag_move), by hand.

jemalloc's hint (Redis's patch, ``iget_defrag_hint``) and the effort
``computeDefragCycles`` picks are checked with the arithmetic worked in the
comments; then whole runs of seed S3's fragmentation with ``activedefrag``
switched on by a ``config-set`` event: a pass moves allocations without
changing any class's regions in use, frees slabs, takes its time limit of each
cron period, stays off below its thresholds and while a fork child exists.

A live check is not possible here: Debian's redis-server links the system
jemalloc, which lacks the hint, and refuses ``activedefrag yes``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from redsim import load_scenario, simulate
from redsim.config import ScenarioError
from redsim.model import arena as A
from redsim.model import defrag as D
from redsim.model import state as S
from redsim.model.zmalloc import new_arena

S3 = Path(__file__).resolve().parents[1] / "scenarios" / "jemalloc-fragmentation.yaml"


def _bin_1280():
    a = new_arena(False, 16)
    return a, A.bin_of(a, 1280)  # 16 regions in a 5-page slab


def _free(a, slab, n):
    for _ in range(n):
        A.arena_free(a, slab)


def _used(a, b, s):
    return int(a.al_nregs[b] - a.sb_nfree[s])


def test_the_hint_compares_a_slab_with_the_heaps_average_as_jemalloc_computes_it():
    a, b = _bin_1280()
    for _ in range(80):  # slabs 0..4 full, slabcur 4 (full)
        A.arena_malloc(a, b)
    # Free 2 of slab 1 (full, below slabcur: it becomes slabcur; full 4 is
    # dropped), 4 of slab 2 and 13 of slab 3 (both join the heap), 8 of slab 0
    # (lower than slabcur 1: slab 0 becomes slabcur, 1 joins the heap).
    _free(a, 1, 2)
    _free(a, 2, 4)
    _free(a, 3, 13)
    _free(a, 0, 8)
    assert a.al_cur[b] == 0 and a.al_nonfull[b] == 3
    assert [_used(a, b, s) for s in range(5)] == [8, 14, 12, 3, 16]
    # curslabs 5, curregs 8+14+12+3+16 = 53, nonfull_slabs 3 (slabcur not counted).
    # full = 5 - 3 = 2; curregs - 2 x 16 = 21; minus slabcur's 16 - 8 free = 8 in
    # use -> 13; slabs 3 - 1 = 2. Move when used x 2 <= 13 + 13 // 8 = 14.
    assert [bool(A.defrag_hint(a, s)) for s in range(5)] == [
        False,  # slabcur: never
        False,  # 14 x 2 = 28 > 14
        False,  # 12 x 2 = 24 > 14
        True,  # 3 x 2 = 6 <= 14
        False,  # full: never
    ]
    # Moving slab 3's regions: each new region comes from slabcur (slab 0, 8
    # free), and the hint stays yes (used 2: 4 <= 12 + 1; used 1: 2 <= 11 + 1).
    # After three moves slab 3 is empty: its 5 pages turn dirty.
    moved = [A.defrag_move(a, A.small_handle(b, 3)) for _ in range(3)]
    assert moved == [A.small_handle(b, 0)] * 3  # regions of slab 0
    assert a.sb_bin[3] == -1 and int(a.I[S.AL_PAGES_DIRTY]) == 5
    assert _used(a, b, 0) == 11 and int(a.al_curregs[b]) == 53  # a move: one in, one out
    # Refused, nothing changes: the handle comes back as 0.
    assert A.defrag_move(a, A.small_handle(b, 1)) == 0 and _used(a, b, 1) == 14


def test_with_one_heap_slab_beside_slabcur_the_hint_always_moves():
    # jemalloc's sums leave (heap regions - one slab's worth) / (heap slabs - 1):
    # with one heap slab of 14 used, 14 - 16 < 0 wraps around in C (size_t) to a
    # huge average, so even a nearly full slab is moved.
    a, b = _bin_1280()
    for _ in range(48):  # slabs 0..2 full
        A.arena_malloc(a, b)
    _free(a, 1, 2)  # slab 1 becomes slabcur
    _free(a, 0, 2)  # slab 0 becomes slabcur, slab 1 (14 used) the heap's only slab
    assert a.al_cur[b] == 0 and a.al_nonfull[b] == 1
    assert A.defrag_hint(a, 1)


@pytest.mark.parametrize(("frag", "lower", "upper", "cmin", "cmax", "effort"), [
    (96.0, 10, 100, 1, 25, 23),  # 1 + 86 x 24 / 90 = 23.9 -> 23 (truncated)
    (10.0, 10, 100, 1, 25, 1),  # at threshold-lower: cycle-min
    (5.0, 10, 100, 1, 25, 1),  # below: LIMIT raises it to cycle-min
    (150.0, 10, 100, 1, 25, 25),  # above threshold-upper: cycle-max
    (55.0, 10, 100, 5, 75, 40),  # 5 + 45 x 70 / 90 = 40.0
    (50.0, 20, 20, 1, 25, 1),  # upper == lower: x86 turns the +inf into INT_MIN
])
def test_the_effort_interpolates_between_the_thresholds(frag, lower, upper, cmin, cmax, effort):
    assert D.effort(frag, lower, upper, cmin, cmax) == effort


def test_the_scan_order_visits_every_position_once():
    for mask in (0, 1, 7, 1023, (1 << 17) - 1):
        seen = sorted(D.scan_position(x, mask) for x in range(mask + 1))
        assert seen == list(range(mask + 1))


# ---- whole runs: seed S3 with activedefrag switched on -------------------------------


def _s3(tmp_path, config, extra_events=(), duration="30s", populate_keys=None, **top):
    """Seed S3 (100K x 1 KB, every odd key deleted at 10 s) with a config-set at 12 s."""
    d = yaml.safe_load(S3.read_text())
    if populate_keys:
        d["events"][0]["keys"] = populate_keys
    d["events"] = d["events"][:2] + list(extra_events) + [
        {"at": "12s", "do": "config-set", "config": config}]
    d["duration"] = duration
    d.update(top)
    path = tmp_path / "s3-defrag.yaml"
    path.write_text(yaml.safe_dump(d))
    sc = load_scenario(path)
    return simulate(sc, seed=sc.seed, progress=False)


@pytest.fixture(scope="module")
def defragged(tmp_path_factory):
    return _s3(tmp_path_factory.mktemp("defrag"),
               {"activedefrag": "yes", "active-defrag-ignore-bytes": "10mb"})


def test_a_pass_moves_regions_without_changing_any_class_and_frees_slabs(defragged):
    r = defragged
    slabs = r.slabs
    before = slabs[slabs["at"] == "before config-set"].set_index("size")
    after = slabs[slabs["at"] == "end"].set_index("size")
    # A move is a malloc and a free of the same class: the regions the keys hold
    # per class (in use, less those in the thread cache, which the moves' GC
    # clock may flush) are exactly what they were before the pass (no load but
    # a PING a second).
    assert ((after["curregs"] - after["tcached"])
            == (before["curregs"] - before["tcached"])).all()
    # The 1280-B class held 50,000 values in 6,250 half-used slabs; packed, 3,125
    # would do. The passes stop once fragmentation is under threshold-lower (10 %),
    # so at least 90 % of what packing frees must be freed:
    c = 1280
    assert before.loc[c, "curslabs"] >= 6250
    assert after.loc[c, "curslabs"] <= 3125 + 0.1 * 3125
    assert r.summary["active_defrag_hits"] > 0


def test_the_passes_stop_below_threshold_lower_and_rss_follows_after_decay(defragged):
    ts = defragged.timeseries
    frag0 = ts["allocator_frag_ratio"].loc[11.5]  # after the DELs, before defrag
    assert frag0 > 1.9  # seed S3: ~2 (mem_fragmentation_ratio 2.16)
    end = ts.iloc[-1]
    # computeDefragCycles starts no pass under 10 % (or 10 MB): the end is under
    # 1.10, or within 10 MB of allocated; the last passes started above it.
    frag_bytes = end["allocator_active"] - end["allocator_allocated"]
    assert end["allocator_frag_ratio"] < 1.10 or frag_bytes < 10 * 2**20
    assert end["active_defrag_running"] == 0
    # The freed slabs' pages leave RSS within jemalloc's 10-s decay: RSS drops by
    # at least the active bytes given back, less 10 % (what decay still holds).
    rss0 = ts["used_memory_rss"].loc[11.5]
    freed = ts["allocator_active"].loc[11.5] - end["allocator_active"]
    assert rss0 - end["used_memory_rss"] >= 0.9 * freed


def test_a_pass_takes_its_time_limit_of_each_cron_period(tmp_path):
    # Ten times seed S3 (1M keys, 500K left), so that a pass spans several
    # 1-s windows; the latency monitor records each cycle's length.
    r = _s3(tmp_path, {"activedefrag": "yes"}, duration="24s", **{
        "sample-interval": "1s", "server": {"save": "", "latency-monitor-threshold": 1}},
        populate_keys=1_000_000)
    ts = r.timeseries
    frag_pct = (ts["allocator_frag_ratio"].loc[11.0] - 1) * 100
    running = ts["active_defrag_running"]
    effort = running[running > 0].iloc[0]
    # The series' ratio is rounded to 2 places; the effort, 1 + (f - 10) x 24/90,
    # moves 0.27 per 1 %, so the rounding moves it by at most one step.
    assert abs(effort - (1 + (frag_pct - 10) * 24 / 90)) <= 1.01
    # Each cron call may spend effort % of 1/hz = 100 ms (timelimit, integer µs)
    # and overruns it by at most 17 keys' work (~40 µs): LATENCY LATEST's
    # active-defrag-cycle, in whole ms, is the effort in ms.
    cycles = r.latency_events["active-defrag-cycle"]
    assert cycles["latency_ms"].max() == effort
    # The next cron is due 100 ms after the call returns (ae's time events:
    # when = now + period), so a busy stretch spends limit / (100 ms + limit) on
    # defrag. A 1-s window holds several periods and may cut one cycle short:
    # ± limit (one cycle of the window's 1 s). Windows inside a stretch (busy on
    # both sides), whatever the pass's effort:
    cpu = ts["cpu_defrag"].to_numpy()
    inside = [i for i in range(1, len(ts) - 1) if min(cpu[i - 1:i + 2]) > 0]
    assert len(inside) >= 3
    for i in inside:
        limit = running.iloc[i] / 100 * 0.1
        assert cpu[i] == pytest.approx(limit / (0.1 + limit), abs=limit)
    assert ts["cpu_defrag"].max() <= 0.25  # never above cycle-max


def test_no_pass_below_active_defrag_ignore_bytes(tmp_path):
    # Seed S3 at the default ignore-bytes (100 MB): after the DELs active is ~137
    # MB and allocated ~70 MB, 67 MB of fragmentation, so computeDefragCycles
    # never starts a pass, whatever the 96 % of fragmentation says.
    r = _s3(tmp_path, {"activedefrag": "yes"})
    assert r.summary["active_defrag_scanned"] == 0
    assert r.summary["cpu_defrag_share"] == 0.0


def test_no_defrag_while_a_fork_child_exists(tmp_path):
    # A BGSAVE at 11.9 s whose child writes 50K keys at 10K keys/s lives ~5 s:
    # activeDefragCycle returns at once while it exists.
    r = _s3(tmp_path, {"activedefrag": "yes", "active-defrag-ignore-bytes": "10mb"},
            extra_events=[{"at": "11.9s", "do": "bgsave"}],
            host={"child-keys-per-sec": "10k"})
    child_end = r.forks.iloc[0]["end"]
    assert child_end > 16.0
    ts = r.timeseries
    window_ends = ts.index.to_numpy()
    assert ts["cpu_defrag"][window_ends <= child_end].sum() == 0.0
    assert ts["cpu_defrag"][window_ends > child_end + 1.0].sum() > 0.0


@pytest.mark.parametrize(("config", "message"), [
    ({"maxmemory": "1gb"}, "a directive config-set can change"),
    ({}, "at least one directive to set"),
    ({"active-defrag-cycle-min": 0}, "active-defrag-cycle-min"),
])
def test_bad_config_set_events_are_named(tmp_path, config, message):
    d = yaml.safe_load(S3.read_text())
    d["events"].append({"at": "30s", "do": "config-set", "config": config})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(d))
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    text = str(e.value)
    assert "events" in text and "config" in text and message in text


def test_a_config_set_writes_what_its_directives_declare():
    # The schema hands the kernel (scalar, value) pairs from the fields'
    # declarations (config/schema/server.py RUNTIME_SETTABLE); admin.request writes
    # them into I as they are, and nothing else.
    from redsim.config.schema import ScenarioEvent
    from redsim.model import admin

    ev = ScenarioEvent.model_validate({"at": 1, "do": "config-set", "config": {
        "activedefrag": "yes", "active-defrag-threshold-lower": 5}})

    class World:
        I = np.zeros(S.N_I, np.int64)

    before = World.I.copy()
    admin.request(World, ev, None)
    changed = np.flatnonzero(World.I != before)
    assert sorted(changed) == sorted([S.DF_ENABLED, S.DF_LOWER])
    assert (World.I[S.DF_ENABLED], World.I[S.DF_LOWER]) == (1, 5)
