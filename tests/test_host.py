"""The host (redsim/host, model/io_threads.py) through the kernel: shared cores,
fork children, I/O threads, against processor-sharing theory and hand-worked
per-request costs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from redsim import load_scenario, simulate
from redsim.config import ScenarioError
from redsim.driver import make_simulation
from redsim.host.instances import deal, split
from redsim.host.result import HostResult
from redsim.host.simulation import HostSimulation, uses_host
from redsim.result import Result
from redsim.simulation import Simulation
from tests.engine_helpers import MISS_COSTS_OF_ANOTHER_HOST, changed

# A main thread kept busy: 64 closed-loop connections, 50 us round trips, GETs
# of preloaded 64-B values. Per request the main thread spends read 1.5 +
# GET 0.52 + write 2.25 = 4.27 us (per-byte and per-iteration costs zeroed so
# the arithmetic below is exact), so it saturates at ~234K req/s, and 64
# connections keep it so (64 x 4.27 us = 273 us of work per 50 us round trip).
SATURATED = {
    "name": "saturated", "duration": 1.5, "warmup": 0.5, "sample-interval": 0.1,
    "server": {"save": ""},
    "network": {"rtt": "50us"},
    "engine": {"cpu": {"iteration": 0, "wakeup": 0, "read-per-byte": 0, "write-per-byte": 0,
                       "read": 1.5, "write": 2.25,  # pinned: the arithmetic is by hand
                       "miss": "none",  # the costs worked by hand are the whole cost
                       "commands": {"GET": {"fixed": 0.52, "per-byte": 0}}}},
    "clients": [{"name": "app", "processes": 64, "pool": {"max-size": 1},
                 "mix": {"GET": 1}, "keyspace": {"keys": 10000}}],
}
PER_REQUEST_US = 1.5 + 0.52 + 2.25


def _scenario(**changes) -> object:
    return load_scenario(changed(SATURATED, **changes))


def test_deal_gives_whole_shares_that_add_up():
    assert [deal(112, 5, i) for i in range(5)] == [23, 23, 22, 22, 22]
    assert sum(deal(10_000_000, 7, i) for i in range(7)) == 10_000_000


def test_instances_split_processes_keys_and_maxmemory():
    sc = _scenario(instances=3, server={"maxmemory": "3gb", "save": ""})
    parts = split(sc)
    assert [p.clients[0].processes for p in parts] == [22, 21, 21]
    assert [p.clients[0].keyspace.keys for p in parts] == [3334, 3333, 3333]
    assert {p.server.maxmemory for p in parts} == {2**30}


def test_more_instances_than_processes_is_refused_with_the_field():
    with pytest.raises(ScenarioError) as e:
        _scenario(instances=80)
    assert "clients[0].processes" in str(e.value) or "processes" in str(e.value)


def test_the_host_driver_runs_only_what_needs_it():
    # One instance with no host.cores keeps the single-server driver (and its
    # Result); several instances or shared cores take the host's.
    assert not uses_host(_scenario())
    assert isinstance(make_simulation(_scenario()), Simulation)
    assert isinstance(make_simulation(_scenario(instances=2)), HostSimulation)
    assert isinstance(make_simulation(_scenario(host={"cores": 1})), HostSimulation)


def test_a_host_with_cores_to_spare_changes_nothing():
    # One instance, 8 cores: the thread is never short of a core, so its rate is
    # exactly 1 and every figure is the plain run's, bit for bit (the network's
    # softirq work, ~0.5 core here, still leaves 7.5).
    plain = simulate(_scenario(), seed=3)
    hosted = simulate(_scenario(host={"cores": 8}), seed=3)
    assert isinstance(plain, Result) and isinstance(hosted, HostResult)
    inst = hosted.instances[0]
    pd.testing.assert_frame_equal(inst.timeseries, plain.timeseries)
    assert np.array_equal(inst.latency.counts, plain.latency.counts)
    assert hosted.summary["host_cpu_softirq_cores"] > 0.1


def test_cpu_bound_instances_share_cores_as_processor_sharing_says():
    # 4 saturated instances on 2 cores with no network cost: each main thread is
    # always runnable, so each progresses at min(1, 2/4) = 1/2 and serves half
    # of what it serves on a core of its own (same per-instance load: 64
    # connections each). Tolerance 3 %: the instances' own random draws.
    net0 = {"per-rx": 0, "per-tx": 0, "per-interrupt": 0}
    alone = simulate(_scenario(), seed=5).summary["throughput_rps"]
    assert alone == pytest.approx(1e6 / PER_REQUEST_US, rel=0.03)  # the saturation above
    shared = simulate(_scenario(instances=4, clients=[{**SATURATED["clients"][0],
                                                       "processes": 256}],
                                host={"cores": 2, "network": net0}), seed=5)
    per = shared.per_instance["throughput_rps"].to_numpy()
    assert per == pytest.approx(np.full(4, 0.5 * alone), rel=0.03)
    assert shared.summary["threads_runnable"] == pytest.approx(4.0, abs=0.05)
    # Per instance, the main thread's time by activity keeps the cost split:
    # read 1.5, GET 0.52, write 2.25 of 4.27 us per request.
    row = shared.per_instance.iloc[0]
    busy = row["cpu_read_share"] + row["cpu_commands_share"] + row["cpu_write_share"]
    assert row["cpu_write_share"] / busy == pytest.approx(2.25 / PER_REQUEST_US, rel=0.02)
    assert shared.summary["host_cpu_redis_cores"] == pytest.approx(2.0, rel=0.01)


def test_a_fork_child_takes_a_share_of_a_two_core_host():
    # One saturated instance on 2 cores; the network's softirq work (1.0 us per
    # segment in, 0.5 out, no interrupt cost: 1.5 us per request) takes L cores
    # ahead of the threads. Before the BGSAVE the main thread has a core of its
    # own (2 - L >= 1 at L ~0.35). While the child serialises, the two threads
    # share 2 - L cores: each gets (2 - L) / 2 of a core, and the saturated
    # throughput follows the main thread's CPU.
    # 1.2M keys at 600K keys/s: the child needs 2 s of CPU.
    net = {"per-rx": 1.0, "per-tx": 0.5, "per-interrupt": 0}
    sc = _scenario(duration=5.0, warmup=0.0, host={"cores": 2, "network": net},
                   events=[{"at": 1.0, "do": "bgsave"}],
                   clients=[{**SATURATED["clients"][0], "keyspace": {"keys": 1_200_000}}])
    r = simulate(sc, seed=2)
    ts = r.timeseries
    fork = r.instances[0].forks.iloc[0]
    before = ts[(ts.index > 0.3) & (ts.index <= 1.0)]
    during = ts[(ts.index > fork["time"] + 0.2) & (ts.index <= fork["time"] + 2.0)]
    load = {k: float((p["host_cpu_softirq"] + p["host_cpu_irq"]).mean())
            for k, p in (("before", before), ("during", during))}
    assert 2.0 - load["before"] >= 1.0
    cpu_before = float(before["i0_cpu"].mean())
    cpu_during = float(during["i0_cpu"].mean())
    assert cpu_before == pytest.approx(1.0, rel=0.02)
    assert cpu_during == pytest.approx((2.0 - load["during"]) / 2.0, rel=0.03)
    assert float(during["host_cpu_children"].mean()) == pytest.approx(cpu_during, rel=0.03)
    ratio = during["requests_per_sec"].mean() / before["requests_per_sec"].mean()
    assert ratio < 0.9  # the drop is there to see
    assert ratio == pytest.approx(cpu_during / cpu_before, rel=0.03)
    # The child got less than a core, so its 2 s of serialising took longer.
    assert fork["end"] - fork["time"] > 2.0 / cpu_during * 0.97


# Redis 6/7's threaded passes per request on the main thread, with io-threads
# N, the read 1.5 (of which the poll's part, poll-event, 0.3 stays on the main
# thread), GET 0.52, write 2.25 and a hand-over 0.2 (io-handoff) wherever a
# client changes cores: an I/O thread takes each client it reads or writes;
# the main thread takes back each client another thread read (to run its
# command) or wrote (to look at it after the pass), (N - 1) / N of them.
POLL, HANDOFF = 0.3, 0.2


def _main_us_per_request(nth: int, do_reads: bool) -> float:
    moved = HANDOFF * (nth - 1) / nth  # the main thread's hand-overs, per pass
    writes = (HANDOFF + 2.25) / nth + moved  # its wait for the slowest writer, then its walk
    if not do_reads:
        return 1.5 + 0.52 + writes
    return POLL + moved + (1.5 - POLL + HANDOFF) / nth + 0.52 + writes


@pytest.mark.parametrize("do_reads, per_request_us", [
    (False, 1.5 + 0.52 + (0.2 + 2.25) / 4 + 0.2 * 3 / 4),  # 2.7825 us: the writes split
    (True, 0.3 + 0.2 * 3 / 4 + (1.2 + 0.2) / 4 + 0.52 + (0.2 + 2.25) / 4 + 0.2 * 3 / 4),
])  # reads too (2.0825 us); the commands and the poll stay on the main thread
def test_io_threads_split_the_io_and_leave_commands_to_the_main_thread(do_reads, per_request_us):
    # io-threads 4 on cores of their own: with 64 clients pending every pass is
    # threaded (>= 2 x 4), each thread writes 16 of them while the main thread
    # writes its 16 and waits, so a pass takes a quarter of the slowest
    # thread's writes, an I/O thread's (it takes each client over first).
    assert per_request_us == pytest.approx(_main_us_per_request(4, do_reads))
    r = simulate(_scenario(server={"save": "", "io-threads": 4, "io-threads-do-reads": do_reads},
                           engine={**SATURATED["engine"], "cpu": {
                               **SATURATED["engine"]["cpu"], "poll-event": POLL,
                               "io-handoff": HANDOFF}}), seed=4)
    assert r.summary["throughput_rps"] == pytest.approx(1e6 / per_request_us, rel=0.03)


def test_io_threads_beyond_the_cores_lose():
    # c = 4 cores, io-threads N with reads: N threads always runnable (the main
    # thread saturated, the I/O threads spinning), and the network's work per
    # request n = 1.5 + 0.5 + 2 interrupts x 2.0 = 6 us ahead of them. Each
    # thread gets r = (c - n X) / N of a core and the main thread's work per
    # request is m_N (_main_us_per_request), so X = r / m_N = c / (N m_N + n):
    # N = 4: 4 / (4 x 2.0825 + 6) us = 279K/s; N = 8: 4 / (8 x 1.65125 + 6) =
    # 208K/s. More threads split the I/O finer but leave the main thread less.
    def expect(nth):
        return 4.0 / (nth * _main_us_per_request(nth, True) + 6.0) * 1e6

    runs = {nth: simulate(_scenario(host={"cores": 4}, server={
        "save": "", "io-threads": nth, "io-threads-do-reads": True}), seed=1)
        for nth in (4, 8)}
    for nth, r in runs.items():
        assert r.summary["throughput_rps"] == pytest.approx(expect(nth), rel=0.03)
        assert r.summary["threads_runnable"] == pytest.approx(nth, rel=0.03)
    assert runs[8].summary["throughput_rps"] < runs[4].summary["throughput_rps"]


# Published: Valkey's "Unlock 1 Million RPS" (valkey.io, 2024-08-05): Valkey
# 7.2's threads (Redis 7's) gave 360K SET/s, mean latency 1.792 ms, with 8
# I/O threads, 650 clients of SETs, 512 B values, 3M keys, c7g.16xlarge (64
# cores). Its reproduction command is `valkey-server --io-threads 9 --save`:
# nothing sets io-threads-do-reads, whose default (no) keeps 7.2's reads on
# the main thread. The model's costs are the reference host's, not theirs, so
# the tolerance is the issue's +-20 %.
PUBLISHED_TOL = 0.20



@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=MISS_COSTS_OF_ANOTHER_HOST)
def test_valkey72_threads_reach_the_published_throughput_and_latency():
    d = load_scenario("scenarios/io-threads-async.yaml").model_dump(by_alias=True)
    d.update(duration=2.0, warmup=0.5)
    d["engine"]["io-threads-model"] = "sync"
    d["server"]["io-threads"] = 9
    d["server"]["io-threads-do-reads"] = False
    grp = d["clients"][0]
    grp["mix"] = {"SET": 1}
    grp["value-size"] = 512
    s = simulate(load_scenario(d), seed=1).summary
    assert s["throughput_rps"] == pytest.approx(360e3, rel=PUBLISHED_TOL)
    assert s["latency_mean_s"] == pytest.approx(1.792e-3, rel=PUBLISHED_TOL)


@pytest.mark.slow
def test_threaded_reads_about_double_redis7_on_eight_cores():
    # redis.conf 7.0.15 (THREADED I/O): "possible to easily speedup two times
    # Redis", "if you have a 8 cores, try to use 6 threads"; devhands.io's
    # Redis run of io-threads: from ~160K with one thread it "can grow by about
    # 2-2.5 times". Their range, widened by the issue's +-20 %: 1.6x to 3.0x.
    sc = load_scenario("scenarios/io-threads.yaml")
    rps = {}
    for n in (1, 6):
        d = sc.model_dump(by_alias=True)
        d.update(duration=1.5, warmup=0.5)
        d["server"]["io-threads"] = n
        rps[n] = simulate(load_scenario(d), seed=1).summary["throughput_rps"]
    assert 1.6 <= rps[6] / rps[1] <= 3.0


def test_a_host_run_folder_is_strict_json(tmp_path):
    # Without host.cores the idle cores are undefined (NaN); summary.json must still
    # be JSON (null), written as a single run's is (sorted keys).
    import json

    r = simulate(_scenario(instances=2, duration=0.3, warmup=0.1), seed=1)
    r.save(tmp_path, plots=False)
    text = (tmp_path / "summary.json").read_text()
    assert "NaN" not in text
    summary = json.loads(text)
    assert summary["host_cpu_idle_cores"] is None
    assert list(summary) == sorted(summary)
