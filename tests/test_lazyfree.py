"""Big keys and the lazyfree thread (``model/bigkeys.py``, ``model/lazyfree.py``):
what DEL and UNLINK cost the main thread, how ``used_memory`` drains while the
bio thread frees, the free-effort threshold, and lazy eviction's accounting.
Expected figures are hand-worked from ``encoding.footprint``'s allocation
counts (checked against Redis in ``test_encoding*.py``) and the cost per
allocation the test sets."""

from __future__ import annotations

import pytest

from redsim import load_scenario, simulate
from redsim.config.schema import Scenario
from redsim.model.encoding import HASH, LIST, Limits, footprint

REDIS_72 = Limits.of(Scenario())  # Redis 7.2's thresholds, as BASE runs with
C_FREE = 0.1e-6  # s per allocation freed (engine.cpu.free-alloc below)
JOB = 20e-6  # s to queue a lazy free (engine.cpu.lazyfree-job)

# One closed-loop connection sending GETs with 1 ms think: the main thread is
# idle but for it, so a stall shows whole in its worst latency.
BASE = {
    "name": "lazyfree", "duration": 2.0, "sample-interval": 0.01,
    "server": {"save": ""},
    "engine": {"cpu": {"free-alloc": "0.1us", "lazyfree-job": "20us"}},
    "clients": [{"name": "web", "processes": 1, "think": "1ms", "mix": {"GET": 1},
                 "keyspace": {"keys": 1000}}],
}
HASH_1M = {"name": "h", "type": "hash", "elements": 1_000_000, "member-size": 10,
           "value-size": 20}


def _run(big, events, **changes):
    sc = {**BASE, "big-keys": big, "events": events, **changes}
    return simulate(load_scenario(sc), seed=1)


def test_del_of_a_big_hash_blocks_the_main_thread_for_its_allocations():
    # 1M fields: 3 allocations each + dict, bucket array, robj = 3,000,003
    # frees × 0.1 µs = 300.0 ms on the main thread. The GET that arrives
    # meanwhile waits for all of it; nothing else is slow.
    r = _run([HASH_1M], [{"at": 1.0, "do": "del", "key": "h"}])
    stall = 3_000_003 * C_FREE
    assert r.summary["latency_max_s"] == pytest.approx(stall, abs=2e-3)
    assert r.summary["lazyfreed_objects"] == 0
    # The whole value leaves used_memory at once, at the DEL.
    fp = footprint(HASH, 1_000_000, 10, 20, limits=REDIS_72)
    used = r.timeseries["used_memory"]
    drop = used.loc[0.99] - used.loc[1.5]
    assert drop == pytest.approx(fp.bytes, rel=0.001)


def test_unlink_costs_microseconds_and_memory_drains_as_the_thread_frees():
    # UNLINK: the main thread queues a job (20 µs) and frees the key's entry and
    # sds; the lazyfree thread frees 3,000,003 allocations over 300 ms, its bytes
    # leaving used_memory at a steady rate.
    r = _run([HASH_1M], [{"at": 1.0, "do": "unlink", "key": "h"}])
    assert r.summary["latency_max_s"] < 1e-3  # 1 ms think + a few µs: no stall
    ts = r.timeseries
    fp = footprint(HASH, 1_000_000, 10, 20, limits=REDIS_72)
    before = ts["used_memory"].loc[0.99]
    job = 3_000_003 * C_FREE
    # Snapshots at window ends: 1.10 s is 0.10 / 0.30 of the job, 1.20 s 0.20 / 0.30.
    # A snapshot is taken at the first event-loop iteration past the window's
    # end (≤ ~1 ms late with a GET every ms): 1 ms / 300 ms of the value, 0.4 %.
    for t in (1.10, 1.20):
        freed = before - ts["used_memory"].loc[t]
        assert freed / fp.bytes == pytest.approx((t - 1.0) / job, abs=0.006)
        assert ts["lazyfree_pending_objects"].loc[t] == 1
    assert before - ts["used_memory"].loc[1.5] == pytest.approx(fp.bytes, rel=0.001)
    assert ts["lazyfree_pending_objects"].loc[1.5] == 0
    assert r.summary["lazyfreed_objects"] == 1


@pytest.mark.parametrize("nodes, lazy", [(64, False), (65, True)])
def test_the_free_effort_threshold_keeps_small_values_on_the_main_thread(nodes, lazy):
    # A list of "foobar" holds 1,022 per quicklist node (test_encoding), so
    # 1,022 × nodes elements make `nodes` nodes: effort 64 is freed at once even
    # by UNLINK (lazyfreeGetFreeEffort ≤ LAZYFREE_THRESHOLD), 65 goes to the thread.
    n = 1022 * nodes
    assert footprint(LIST, n, 6, limits=REDIS_72).effort == nodes
    r = _run([{"name": "l", "type": "list", "elements": n, "member-size": 6}],
             [{"at": 1.0, "do": "unlink", "key": "l"}])
    assert r.summary["lazyfreed_objects"] == (1 if lazy else 0)


def test_lazyfree_lazy_user_del_makes_del_lazy():
    r = _run([HASH_1M], [{"at": 1.0, "do": "del", "key": "h"}],
             server={"save": "", "lazyfree-lazy-user-del": "yes"})
    assert r.summary["latency_max_s"] < 1e-3
    assert r.summary["lazyfreed_objects"] == 1


def test_lazy_eviction_evicts_more_while_used_memory_lags():
    # Four 1M-field hashes (72.4 MB each) that nobody reads, and a writer that
    # starts at 2 s and SETs 1 MB values (~20/s) into 200 keys. With an LRU
    # policy the hashes (last touched at 0 s, the LRU clock counts whole
    # seconds) are the idlest keys: the first victims. maxmemory leaves 20 MB
    # of room, so eviction starts at ~3 s, and by 6 s the writer has added
    # ~60 MB past the limit: less than one hash. Sampling (5 keys of ~20,
    # the pool kept between calls) may pick a string or two before a hash.
    # - lazyfree-lazy-eviction no: the first hash evicted frees 72.4 MB at once
    #   (mem_freed ≥ mem_tofree): no other hash need go.
    # - yes: an evicted hash's value goes to the thread, so mem_freed gains only
    #   the key's few dozen bytes and the loop picks again, hash after hash,
    #   until a string's 1 MB (freed at once) covers the ~1 MB asked for.
    fp = footprint(HASH, 1_000_000, 10, 20, limits=REDIS_72)
    big = [{**HASH_1M, "name": f"h{i}"} for i in range(4)]
    writes = {"clients": [{"name": "w", "processes": 1, "think": "50ms", "start": "2s",
                           "mix": {"SET": 1}, "value-size": "1mb",
                           "keyspace": {"keys": 200, "preload": 0}}],
              "duration": 6.0, "sample-interval": 0.1}
    limit = 4 * fp.bytes + 20 * 2**20
    out = {}
    for lazy in ("no", "yes"):
        server = {"save": "", "maxmemory": limit, "maxmemory-policy": "allkeys-lru",
                  "lazyfree-lazy-eviction": lazy}
        out[lazy] = _run(big, [], server=server, **writes)
    sync, lazy = out["no"].summary, out["yes"].summary
    assert sync["lazyfreed_objects"] == 0
    assert sync["used_memory_end"] > 3 * fp.bytes  # three hashes are left
    # Lazily, more than one hash went for the same ~1 MB asked: eviction freed
    # far more than mem_tofree.
    assert lazy["lazyfreed_objects"] >= 2
    assert sync["used_memory_end"] - lazy["used_memory_end"] >= (
        lazy["lazyfreed_objects"] - 1.5) * fp.bytes
    # And used_memory lags what eviction decided: at the first sample with
    # values pending, two or more hashes are evicted but less than one hash's
    # bytes have left used_memory (it stays above limit − 72.4 MB).
    ts = out["yes"].timeseries
    first = ts.index[ts["lazyfree_pending_objects"].to_numpy() >= 1][0]
    assert ts["lazyfree_pending_objects"].loc[first] + ts["lazyfreed_objects"].loc[first] >= 2
    assert ts["used_memory"].loc[first] > limit - fp.bytes


def test_on_shared_cores_the_lazyfree_thread_waits_for_a_core():
    # One core, and a main thread kept busy by 8 connections with no think
    # time: while the lazyfree thread frees, two threads want the core, and
    # processor sharing gives each about half. The thread's 300 ms of freeing
    # (3,000,003 × 0.1 µs) then take about twice as long, and the host's
    # lazyfree CPU adds up to the job's 0.30 s whatever the wall time.
    busy = {"clients": [{"name": "web", "processes": 8, "mix": {"GET": 1},
                         "keyspace": {"keys": 1000}}],
            "host": {"cores": 1}, "sample-interval": 0.05}
    r = _run([HASH_1M], [{"at": 1.0, "do": "unlink", "key": "h"}], **busy)
    ts = r.timeseries
    cpu = (ts["host_cpu_lazyfree"] * 0.05).sum()
    assert cpu == pytest.approx(3_000_003 * C_FREE, rel=0.05)
    done = ts.index[ts["lazyfreed_objects"].to_numpy() >= 1][0]
    assert 1.0 + 1.5 * 0.3 <= done <= 1.0 + 2.5 * 0.3
