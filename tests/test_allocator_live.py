"""The allocator build against the installed redis-server (issue #45, deviations
3 and 4): jemalloc's cache-oblivious pad on large values, and the RSS a dropped
replica's buffer leaves behind as jemalloc's decay purges it.

Each test starts its own servers on 127.0.0.1 (free ports, throw-away dirs,
stopped by their PIDs) and takes the build from the server's own ``MEMORY
MALLOC-STATS`` (``redsim.calibrate.allocator_from_stats``), as ``redsim
calibrate`` does.

Tolerances, fixed before any run (the issue's): active − allocated per 16-KB
value within ±5 % of the live figure; RSS 2, 5 and 10 s after the drop within
±25 %. Cap: the drop test runs twice live; RSS samples of the two runs more
than 20 % apart at any of those times make it inconclusive (skipped).
"""

from __future__ import annotations

import os
import signal
import time

import pytest

pytestmark = [pytest.mark.live, pytest.mark.slow]

KEYS = 10_000
VALUE = 100_000  # B per SET in the drop test: one key, overwritten
LIMIT_MB = 64
AFTER = (2.0, 5.0, 10.0)
CAP = 0.20


def _build(client) -> dict:
    from redsim.calibrate import allocator_from_stats

    text = client.execute_command("MEMORY", "MALLOC-STATS")
    found = allocator_from_stats(text.decode() if isinstance(text, bytes) else str(text))
    if "engine.allocator" not in found:
        pytest.skip(f"the installed server's jemalloc is none of the known builds: {found}")
    return {"allocator": found["engine.allocator"]}


def _mem(client) -> dict:
    time.sleep(0.25)  # cronUpdateMemoryStats: the allocator's figures, every 100 ms
    return client.info("memory")


def test_a_16kb_value_pads_its_extent_by_a_page_as_live():
    from redsim.live.server import RedisServer
    from tests.test_allocator_builds import _populate

    with RedisServer(config={"save": "", "enable-debug-command": "yes"}) as srv:
        c = srv.client()
        engine = _build(c)
        m0 = _mem(c)
        c.execute_command("DEBUG", "POPULATE", KEYS, "key", 16_384)
        m1 = _mem(c)
    live = ((m1["allocator_active"] - m1["allocator_allocated"])
            - (m0["allocator_active"] - m0["allocator_allocated"])) / KEYS
    model, _ = _populate(engine["allocator"], 16_384)  # the same populate, modelled
    print(f"{engine['allocator']}: active − allocated per 16-KB value: live {live:.0f} B, "
          f"model {model:.0f} B")
    assert model == pytest.approx(live, rel=0.05)


def _live_drop() -> tuple[list[float], dict, float]:
    """A replica stopped (SIGSTOP) while a client overwrites one key with
    100-KB values until the primary drops it at its hard limit; then RSS every
    100 ms for 11 s. Returns (RSS at each of AFTER, B; the build; the write rate, B/s)."""
    from redsim.live.server import RedisServer

    value = b"x" * VALUE
    with RedisServer(config={"save": "", "repl-diskless-sync-delay": 0,
                             "client-output-buffer-limit":
                                 f"replica {LIMIT_MB}mb 0 0"}) as primary:
        p = primary.client()
        engine = _build(p)
        with RedisServer(config={"replicaof": f"127.0.0.1 {primary.port}"}) as replica:
            deadline = time.monotonic() + 20
            while p.info("replication").get("slave0", {}).get("state") != "online":
                if time.monotonic() > deadline:
                    pytest.fail("the replica did not come online in 20 s")
                time.sleep(0.05)
            os.kill(replica.pid, signal.SIGSTOP)
            try:
                t0 = time.monotonic()
                sent = 0
                while p.info("replication")["connected_slaves"] > 0:
                    pipe = p.pipeline(transaction=False)
                    for _ in range(10):
                        pipe.set("k", value)
                    pipe.execute()
                    sent += 10 * VALUE
                    if time.monotonic() - t0 > 60:
                        pytest.fail("no drop in 60 s")
                t_drop = time.monotonic()
                rate = sent / (t_drop - t0)
                samples = []
                while time.monotonic() - t_drop < max(AFTER) + 0.5:
                    samples.append((time.monotonic() - t_drop,
                                    p.info("memory")["used_memory_rss"]))
                    time.sleep(0.1)
            finally:
                os.kill(replica.pid, signal.SIGCONT)
    at = [min(samples, key=lambda s: abs(s[0] - a))[1] for a in AFTER]
    return at, engine, rate


def _model_drop(engine: dict, rate: float) -> list[float]:
    """The same on the model: an open-loop writer at the live rate stopped once
    the replica is dropped, RSS sampled every 100 ms."""
    from redsim import load_scenario, simulate

    def run(stop: float | None):
        steps = [{"at": 0, "rate": rate / VALUE}]
        if stop is not None:
            steps.append({"at": stop, "rate": 0.001})
        return simulate(load_scenario({
            "name": "drop-live", "redis-version": "7.0", "duration": 40, "warmup": 0,
            "sample-interval": 0.1, "engine": engine,
            "server": {"save": "", "repl-diskless-sync-delay": 0,
                       "client-output-buffer-limit": f"replica {LIMIT_MB}mb 0 0"},
            "replicas": [{"link-bandwidth": "1kbit", "rtt": "100us"}],
            "clients": [{"name": "writer", "kind": "open", "processes": 1, "profile": steps,
                         "mix": {"SET": 1}, "key-size": 1, "value-size": VALUE,
                         "keyspace": {"keys": 1, "preload": 1.0}}],
        }), progress=False)

    ev = run(None).replication
    t_drop = float(ev[ev["event"] == "dropped_hard_limit"]["time"].iloc[0])
    r = run(round(t_drop + 0.05, 2))
    ev = r.replication
    t_drop = float(ev[ev["event"] == "dropped_hard_limit"]["time"].iloc[0])
    rss = r.timeseries["used_memory_rss"]
    return [float(rss[rss.index >= t_drop + a].iloc[0]) for a in AFTER]


@pytest.mark.xfail(reason="live 7.0.15 purges later than the model's jemalloc background "
                          "thread: a 64 MB drop's RSS 2/5/10 s after it was 71/71/68 and "
                          "63/63/61 MB live (the first purge ~7 s after the drop), model "
                          "73/47/15 MB (its first purge at ~3 s); another live pair was "
                          "inconclusive (47 and 38 MB at 5 s). Not found why the freed "
                          "pages wait longer live: see model/arena.py's deviations",
                   strict=False)
def test_a_dropped_replicas_buffer_leaves_rss_over_jemallocs_decay():
    runs = [_live_drop() for _ in range(2)]
    for i, a in enumerate(AFTER):
        x, y = runs[0][0][i], runs[1][0][i]
        if abs(x - y) / min(x, y) > CAP:
            pytest.skip(f"inconclusive: live RSS {a:g} s after the drop {x / 1e6:.1f} and "
                        f"{y / 1e6:.1f} MB differ by more than {CAP:.0%}")
    live = [(runs[0][0][i] + runs[1][0][i]) / 2 for i in range(len(AFTER))]
    engine, rate = runs[0][1], (runs[0][2] + runs[1][2]) / 2
    model = _model_drop(engine, rate)
    print(f"{engine['allocator']}, writes {rate / 1e6:.0f} MB/s; RSS after the drop at "
          + ", ".join(f"{a:g} s: live {lv / 1e6:.1f} MB, model {m / 1e6:.1f} MB"
                      for a, lv, m in zip(AFTER, live, model, strict=True)))
    for a, lv, m in zip(AFTER, live, model, strict=True):
        assert m == pytest.approx(lv, rel=0.25), f"{a:g} s after the drop"
