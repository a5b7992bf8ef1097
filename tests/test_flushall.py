"""FLUSHALL, SYNC and ASYNC (``model/admin.py``, ``model/lazyfree.py``): what it
costs the main thread, how ``used_memory`` drains while the bio thread frees a
flushed database, ``lazyfree_pending_objects`` / ``lazyfreed_objects``, and
which FLUSHALL ``lazyfree-lazy-user-flush`` makes lazy.

The expected figures are hand-worked: a million preloaded string keys, each
freed at ``admin.FLUSH_KEY_US`` (0.29 µs, the reference host's FLUSHALL SYNC of
a million DEBUG POPULATE keys: 282-310 ms; ``test_flushall_live.py`` measures
the host's and checks the same cost per key at another size and on the bio
thread), so the flush takes 1,000,000 × 0.29 µs = 290 ms, on the main thread
(SYNC) or on the bio thread (ASYNC, ``emptyDbAsync``: one job for all keys).
"""

from __future__ import annotations

import pytest

from redsim import load_scenario, simulate
from redsim.config.errors import ScenarioError
from redsim.model.admin import FLUSH_KEY_US

KEYS = 1_000_000
FLUSH = KEYS * FLUSH_KEY_US * 1e-6  # 0.29 s

# One closed-loop connection sending GETs with 1 ms think over a preloaded
# keyspace: the main thread is idle but for it, so a stall shows whole in its
# worst latency, and the GETs after the flush find nothing.
BASE = {
    "name": "flushall", "duration": 2.0, "sample-interval": 0.01,
    "server": {"save": ""},
    "clients": [{"name": "web", "processes": 1, "think": "1ms", "mix": {"GET": 1},
                 "keyspace": {"keys": KEYS}, "value-size": 10}],
}


def _run(mode=None, **server):
    flush = {"at": 1.0, "do": "flushall", **({"mode": mode} if mode else {})}
    sc = {**BASE, "server": {"save": "", **server}, "events": [flush]}
    return simulate(load_scenario(sc), seed=1)


@pytest.fixture(scope="module")
def sync():
    return _run("sync")


@pytest.fixture(scope="module")
def lazy():
    return _run("async")


def test_flushall_sync_blocks_the_main_thread_for_every_key(sync):
    # The GET that arrives during the flush waits for all of it (290 ms); the
    # memory leaves used_memory at once.
    assert sync.summary["latency_max_s"] == pytest.approx(FLUSH, abs=2e-3)
    assert sync.summary["lazyfreed_objects"] == 0
    used = sync.timeseries["used_memory"]
    assert used.loc[1.01] == used.loc[1.5]  # nothing left to free after the flush
    assert used.loc[0.99] - used.loc[1.01] > 50e6  # a million small keys: ~90 MB


def test_flushall_async_returns_at_once_and_the_memory_drains_over_the_flush(sync, lazy):
    # ASYNC: the main thread queues one job; the bio thread frees the same keys
    # at the same cost, its bytes leaving used_memory at a steady rate over the
    # 290 ms, a million objects pending meanwhile (live: 306-313 ms, pending
    # 1,000,000 until the end, used_memory about halfway at half the time).
    assert lazy.summary["latency_max_s"] < 1.5e-3  # 1 ms think + a few µs: no stall
    ts = lazy.timeseries
    before = ts["used_memory"].loc[0.99]
    gone = before - ts["used_memory"].loc[1.5]
    # The same bytes leave as with SYNC (the keys, their dicts' tables).
    s = sync.timeseries["used_memory"]
    assert gone == s.loc[0.99] - s.loc[1.5]
    # Snapshots at window ends, taken at the first event-loop iteration past
    # them (≤ ~1 ms late with a GET every ms: 1/290 of the job, 0.35 %).
    for t in (1.10, 1.20):
        freed = before - ts["used_memory"].loc[t]
        assert freed / gone == pytest.approx((t - 1.0) / FLUSH, abs=0.006)
        assert ts["lazyfree_pending_objects"].loc[t] == KEYS
    assert ts["lazyfree_pending_objects"].loc[1.5] == 0
    assert lazy.summary["lazyfreed_objects"] == KEYS
    # The flushed keys are gone at once: the GETs after 1.0 s all miss.
    assert lazy.summary["keyspace_hits"] == sync.summary["keyspace_hits"]


@pytest.mark.parametrize("mode, user_flush, lazily", [
    (None, "no", False), (None, "yes", True), ("sync", "yes", False), ("async", "no", True)])
def test_lazyfree_lazy_user_flush_decides_a_bare_flushall(mode, user_flush, lazily):
    # getFlushCommandFlags: ASYNC or SYNC as given; a bare FLUSHALL is ASYNC
    # only with lazyfree-lazy-user-flush yes.
    r = _run(mode, **{"lazyfree-lazy-user-flush": user_flush})
    assert r.summary["lazyfreed_objects"] == (KEYS if lazily else 0)


@pytest.mark.parametrize("event, field", [
    ({"at": 1, "do": "bgsave", "mode": "async"}, "mode"),
    ({"at": 1, "do": "flushall", "mode": "lazy"}, "mode")])
def test_a_flush_mode_is_refused_where_it_means_nothing(event, field):
    with pytest.raises(ScenarioError) as e:
        load_scenario({**BASE, "events": [event]})
    assert f"events[0].{field}" in str(e.value)
