"""FLUSHALL SYNC and ASYNC on a real redis-server, next to the model
(``tests/test_flushall.py``, ``model/admin.py``'s ``flushall`` and
``FLUSH_KEY_US``).

On a redis-server this test starts (127.0.0.1, a free port, a throw-away
--dir, stopped by its PID), ``ROUNDS`` times: ``DEBUG POPULATE 1000000 key 10``
and ``FLUSHALL SYNC``; 300,000 keys and ``FLUSHALL SYNC``; a million keys and
``FLUSHALL ASYNC``, polling ``INFO memory`` every ~2 ms until
``lazyfree_pending_objects`` is 0. The SYNC times come from ``INFO
commandstats``.

What is compared is what the model claims whatever the host: a flush costs the
same per key whatever the keyspace's size (``flushall`` charges
``FLUSH_KEY_US`` per key and nothing else), the bio thread does the same work
at the same cost (``emptyDbAsync``: one job holding every key), the ASYNC
reply does not wait for it (one job queued, ``lazyfree_job``: 20 µs), and the
thread frees at a steady rate. The per-key figure itself is the host's, as
every CPU cost is: the model's 0.29 µs is the reference host's (2 vCPU EPYC,
282-321 ms for the million keys), and this test measures this host's from
its million-key SYNC flushes and predicts the rest from it, as a calibration
does. It prints both.

Why so, and why fifteen rounds: the same million keys, flushed back to back,
took 203-485 ms on a 2-vCPU Intel Xeon VM (2026-11-27; per-flush CV ~22 %,
medians of seven 275-415 ms from one sitting to the next, whichever vCPU the
server was pinned to), and CI's host took 386-440 ms in all seven of a
sitting: a comparison with the reference host's 290 ms then fails however
many rounds it takes. Flushes next to each other move together (the 300K and
the million of a round: correlation 0.73 over 20 rounds), so each round's
figures are divided by its own million-key SYNC flush and the medians over
the rounds are compared. Over those 20 rounds the ratios had CVs of 19 %
(300K) and 27 % (the drain, which correlates less, 0.25); the median of 15
has a standard error of ~1.25 × 27 % / √15 ≈ 9 %, so the ±30 % below sits
more than three of them away from a model that is right.

Tolerances, set before comparing (the issue's ±30 % for a measured figure):
- the 300K SYNC flush, over the round's million-key one, within 30 % of
  0.3 (the model's: 300,000 × c / (1,000,000 × c));
- the ASYNC drain, over the round's million-key SYNC flush, within 30 % of
  1 (the model gives the bio thread the same work);
- the median ASYNC reply under 10 ms (the model: 20 µs; a reply that waited
  for the freeing would take ~300 ms). The median, because of 62 replies on
  that VM the slowest took 12.3 ms and the next 9.7 ms: with two vCPUs the
  woken bio thread can hold the main thread's core for a scheduler tick, which
  the model, giving the thread a core of its own, does not claim to follow;
- a million objects pending just after the reply;
- used_memory, sampled during each drain (20-80 % of it), freed in
  proportion to the time elapsed: the median over the drains of their largest
  gap within 0.15 (the model frees at a steady rate; the reference host showed
  44-46 % freed at half the drain). The median, because the host's speed moves
  within a drain as it does between flushes: over 20 drains on that VM the
  largest gaps were 0.02-0.13, and 4 runs in 15 of the earlier form of this
  test had a drain of their seven past 0.15.
"""

from __future__ import annotations

import statistics
import time

import pytest

from redsim.model.admin import FLUSH_KEY_US

KEYS = 1_000_000
SMALL = 300_000  # the second flush's keys, for the cost per key at another size
ROUNDS = 15  # the medians over the rounds are compared (see above)


def _flush_usec(client) -> float:
    return float(client.info("commandstats").get("cmdstat_flushall", {}).get("usec", 0))


def _sync_flush_s(r, keys: int) -> float:
    """``FLUSHALL SYNC`` of ``keys`` fresh keys, its own time (``INFO
    commandstats``), s."""
    r.execute_command("DEBUG", "POPULATE", keys, "key", 10)
    before = _flush_usec(r)
    r.execute_command("FLUSHALL", "SYNC")
    return (_flush_usec(r) - before) * 1e-6


def _async_flush(r) -> tuple[float, float, float]:
    """``FLUSHALL ASYNC`` of a million fresh keys: (reply s, drain s, the largest
    gap between the fraction freed and the fraction of the drain elapsed, over
    the samples in 20-80 % of it)."""
    r.execute_command("DEBUG", "POPULATE", KEYS, "key", 10)
    full = r.info("memory")["used_memory"]
    t0 = time.perf_counter()
    r.execute_command("FLUSHALL", "ASYNC")
    reply = time.perf_counter() - t0
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
    empty = r.info("memory")["used_memory"]
    assert samples and samples[0][2] == KEYS  # emptyDbAsync counts every key
    gaps = [abs((full - used) / (full - empty) - t / drain)
            for t, used, _ in samples if 0.2 < t / drain < 0.8]
    assert gaps, f"no sample in the middle of a {drain * 1e3:.0f} ms drain"
    return reply, drain, max(gaps)


@pytest.mark.live
@pytest.mark.slow
def test_a_real_flushall_costs_what_the_model_charges_per_key_sync_and_async():
    from redsim.live.server import RedisServer

    big, small, drains, replies, gaps = [], [], [], [], []
    with RedisServer(config={"enable-debug-command": "yes", "save": ""}) as srv:
        r = srv.client()
        for _ in range(ROUNDS):
            big.append(_sync_flush_s(r, KEYS))
            small.append(_sync_flush_s(r, SMALL))
            reply, drain, gap = _async_flush(r)
            replies.append(reply)
            drains.append(drain)
            gaps.append(gap)
    host_key_us = statistics.median(big) / KEYS * 1e6
    size_ratio = statistics.median(s / b for s, b in zip(small, big, strict=True))
    drain_ratio = statistics.median(d / b for d, b in zip(drains, big, strict=True))
    print(f"FLUSHALL SYNC of {KEYS:,} keys {[round(s * 1e3) for s in big]} ms: "
          f"{host_key_us:.3f} µs per key on this host (the model's reference host "
          f"{FLUSH_KEY_US}); of {SMALL:,} / of {KEYS:,}: median {size_ratio:.3f}; "
          f"ASYNC drain {[round(d * 1e3) for d in drains]} ms, over the round's SYNC: "
          f"median {drain_ratio:.3f}; replies {[round(x * 1e3, 2) for x in replies]} ms; "
          f"largest gaps {[round(g, 3) for g in gaps]}")
    # The model's flush of n keys is n × the per-key cost, on either thread.
    assert size_ratio == pytest.approx(SMALL / KEYS, rel=0.30)
    assert drain_ratio == pytest.approx(1.0, rel=0.30)
    assert statistics.median(replies) < 0.010
    assert statistics.median(gaps) <= 0.15
