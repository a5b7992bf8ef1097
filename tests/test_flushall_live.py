"""FLUSHALL SYNC and ASYNC on a real redis-server, next to the model
(``tests/test_flushall.py``, ``model/admin.py``'s ``FLUSH_KEY_US``).

On a redis-server this test starts (127.0.0.1, a free port, a throw-away
--dir, stopped by its PID): ``DEBUG POPULATE 1000000 key 10``, then
``FLUSHALL SYNC`` (its time from ``INFO commandstats``), ``ROUNDS`` times; then
the same with ``FLUSHALL ASYNC``, polling ``INFO memory`` every ~2 ms until
``lazyfree_pending_objects`` is 0.

Seven rounds, not three: on a 2-vCPU Intel Xeon VM (2026-11-27) single
flushes of the same million keys took 194-430 ms within one test, in two
clusters (~220-250 and ~390-430 ms), and a median of three missed the
tolerance below in three runs of nine (a 210 ms SYNC; a 406 ms drain); medians
of seven, over six runs, stayed within 232-398 ms. The tolerance is unchanged.

Tolerances, set before comparing (the issue's ±30 % for a published or
measured figure): the model's flush, 1,000,000 × 0.29 µs = 290 ms, within
30 % of the median SYNC flush; the bio thread's drain within 30 % of it too
(the model gives the thread the same work); the ASYNC reply under 10 ms (the
model: one job queued, 20 µs); a million objects pending just after it; and
used_memory, sampled during the drain, freed in proportion to the time
elapsed within 0.15 (the model frees at a steady rate; the reference host
showed 44-46 % freed at half the drain).
"""

from __future__ import annotations

import statistics
import time

import pytest

from redsim.model.admin import FLUSH_KEY_US

KEYS = 1_000_000
ROUNDS = 7  # flushes per mode; the medians are compared
MODEL_S = KEYS * FLUSH_KEY_US * 1e-6


def _flush_usec(client) -> float:
    return float(client.info("commandstats").get("cmdstat_flushall", {}).get("usec", 0))


@pytest.mark.live
@pytest.mark.slow
def test_a_real_flushall_takes_what_the_model_charges_sync_and_async():
    from redsim.live.server import RedisServer

    with RedisServer(config={"enable-debug-command": "yes", "save": ""}) as srv:
        r = srv.client()
        sync = []
        for _ in range(ROUNDS):
            r.execute_command("DEBUG", "POPULATE", KEYS, "key", 10)
            before = _flush_usec(r)
            r.execute_command("FLUSHALL", "SYNC")
            sync.append((_flush_usec(r) - before) * 1e-6)
        drains, replies, shapes = [], [], []
        for _ in range(ROUNDS):
            r.execute_command("DEBUG", "POPULATE", KEYS, "key", 10)
            full = r.info("memory")["used_memory"]
            t0 = time.perf_counter()
            r.execute_command("FLUSHALL", "ASYNC")
            replies.append(time.perf_counter() - t0)
            samples = []
            while True:
                m = r.info("memory")
                t = time.perf_counter() - t0
                if m["lazyfree_pending_objects"] == 0:
                    break
                samples.append((t, m["used_memory"], m["lazyfree_pending_objects"]))
                if t > 10:
                    pytest.fail("FLUSHALL ASYNC still pending after 10 s")
                time.sleep(0.002)
            drain = time.perf_counter() - t0
            drains.append(drain)
            empty = r.info("memory")["used_memory"]
            assert samples and samples[0][2] == KEYS  # emptyDbAsync counts every key
            shapes += [((full - used) / (full - empty), t / drain)
                       for t, used, _ in samples if 0.2 < t / drain < 0.8]
    flush = statistics.median(sync)
    drain = statistics.median(drains)
    print(f"FLUSHALL SYNC {[round(s * 1e3) for s in sync]} ms, ASYNC drain "
          f"{[round(d * 1e3) for d in drains]} ms, replies "
          f"{[round(x * 1e3, 2) for x in replies]} ms; model {MODEL_S * 1e3:.0f} ms")
    assert MODEL_S == pytest.approx(flush, rel=0.30)
    assert MODEL_S == pytest.approx(drain, rel=0.30)
    assert max(replies) < 0.010
    assert shapes and all(abs(freed - elapsed) <= 0.15 for freed, elapsed in shapes)
