"""A client group on Redis's own host (``placement: same-host``,
model/client_threads.py): its threads' CPU per request, against hand
arithmetic, a live redis-benchmark's figures on the reference VM, and a fork
child that takes the cores the client and Redis share."""

from __future__ import annotations

import pytest

from redsim import load_scenario, simulate
from tests.engine_helpers import changed

# One closed-loop connection with no think time, 20 us round trip: every thread
# is idle when its work comes. The default costs: Redis's per request is
# wakeup 24.3 + read 1.73 + GET 0.67 + iteration 1.0 + write 2.60 (+ per byte).
ONE = {
    "name": "same-host", "duration": 0.5, "warmup": 0.1, "sample-interval": 0.05,
    "server": {"save": ""}, "network": {"rtt": "20us"},
    "clients": [{"name": "bench", "processes": 1, "pool": {"max-size": 1},
                 "placement": "same-host", "mix": {"GET": 1}, "keyspace": {"keys": 1000}}],
}
# 2 cores and no network work: on loopback it runs in both sides' syscall
# costs, which the measured client and server costs already include.
TWO_CORES = {"cores": 2, "network": {"per-rx": 0, "per-tx": 0, "per-interrupt": 0}}
CLIENT_US = 7.6  # engine default client-cpu: redis-benchmark's CPU per request here
WAKEUP_US = 24.3  # engine.cpu.wakeup


def _group(**changes) -> dict:
    return changed(ONE, clients=[{**ONE["clients"][0], **changes}])


def test_an_idle_client_adds_its_cpu_and_a_wakeup_to_each_request():
    # The reply wakes the client's thread (wakeup), which reads it and writes
    # the next request (client-cpu): 7.6 + 24.3 = 31.9 us more than a remote
    # client's round trip, whose machine the model does not see.
    remote = simulate(load_scenario(_group(placement="remote")), seed=1).summary
    same = simulate(load_scenario(ONE), seed=1).summary
    extra = same["latency_mean_s"] - remote["latency_mean_s"]
    assert extra == pytest.approx((CLIENT_US + WAKEUP_US) * 1e-6, abs=0.2e-6)


def test_a_busy_client_thread_is_the_bottleneck_at_one_request_per_client_cpu():
    # 50 connections on one client thread with cores to spare: the thread never
    # sleeps, so it completes one request per 7.6 us, 132K/s, below what Redis
    # could serve (~5.1 us per request). redis-benchmark -c 50 -P 1 on the
    # reference VM: 135-138K GET/s over 100,000 keys
    # (results/validation/caches-sweep/full.dataset.csv); on the EPYC VM,
    # 89.6K GET/s at 11 us, its thread at 0.99 of a core.
    r = simulate(load_scenario(_group(processes=50)), seed=1).summary
    assert r["throughput_rps"] == pytest.approx(1e6 / CLIENT_US, rel=0.02)
    # Two client threads split the connections and the work: Redis is the limit.
    two = simulate(load_scenario(_group(processes=50, **{"client-threads": 2})), seed=1).summary
    assert two["throughput_rps"] > 1.5 * r["throughput_rps"]


def test_a_pipelined_batch_costs_the_client_its_cpu_and_each_further_commands():
    # 50 connections at pipeline 16 on one client thread: a batch costs
    # client-cpu + 15 x client-cpu-per-command = 7.6 + 15 x 1.0 = 22.6 us, so
    # the thread completes a batch (a request of 16 commands) per 22.6 us:
    # 44.2K requests/s, 708K commands/s. Redis's share per command is
    # 0.67 + 0.03 (GET, its bytes) + (1.73 + 2.60) / 16 = 0.97 us (1.03 M/s):
    # the client is the limit, as a slow client library on one thread is.
    r = simulate(load_scenario(_group(processes=50, pipeline=16,
                                      **{"client-cpu-per-command": 1.0})), seed=1).summary
    assert r["throughput_rps"] == pytest.approx(1 / 22.6e-6, rel=0.02)
    assert r["ops_per_sec"] == pytest.approx(16 / 22.6e-6, rel=0.02)


def test_a_fork_child_takes_the_cores_the_client_and_redis_share():
    # 2 cores, no network work (loopback's is in both sides' syscall costs), 50
    # connections on one client thread: before the BGSAVE the client thread and
    # Redis's main thread each have a core and the client is the bottleneck.
    # While the child serialises, three threads want the 2 cores: the client
    # thread gets less than a core, and the throughput follows its share -
    # the drop's mechanism: the request rate is the client's rate / client-cpu.
    # Processor sharing, by hand: the client and the child are always runnable,
    # Redis a fraction f of the time. With all three runnable each gets 2/3 of
    # a core, else the client and the child get one each; so Redis gets 2f/3
    # and the client f*2/3 + (1 - f) = 1 - f/3 = 1 - redis/2.
    sc = load_scenario(changed(
        _group(processes=50), duration=6.0, warmup=0.5, **{"sample-interval": 0.1},
        host=TWO_CORES,
        clients=[{**ONE["clients"][0], "processes": 50,
                  "keyspace": {"keys": 400_000, "preload": 1.0}, "value-size": 1024}],
        events=[{"at": 1.0, "do": "bgsave"}]))
    r = simulate(sc, seed=1)
    ts = r.timeseries
    child = ts["host_cpu_children"] > 0.3
    before = ts[(ts.index > 0.5) & (ts.index < 1.0)]
    during = ts[child]
    assert len(during) >= 5
    cli_before = before["host_cpu_clients"].mean()
    cli_during = during["host_cpu_clients"].mean()
    redis_during = during["host_cpu_redis"].mean()
    assert cli_before == pytest.approx(1.0, abs=0.03)
    assert redis_during > 0.2  # Redis does compete for the cores
    assert cli_during == pytest.approx(1.0 - redis_during / 2, abs=0.02)
    ratio = during["requests_per_sec"].mean() / before["requests_per_sec"].mean()
    assert ratio == pytest.approx(cli_during / cli_before, rel=0.05)
    # Every core is accounted for: Redis + client + child + idle = 2.
    used = during[["host_cpu_redis", "host_cpu_clients", "host_cpu_children",
                   "host_cpu_idle"]].sum(axis=1)
    assert used.mean() == pytest.approx(2.0, abs=0.05)


@pytest.mark.xfail(strict=True, reason=(
    "the model threads 0.1 % of the writes (live 78 %) and keeps all its "
    "throughput (live 64 %): Redis finds 1.4 clients ready per iteration, the live "
    "server >= 4 in most. Its CPU per GET matches (model 7.6 us, live 6.7-7.8), but "
    "perf puts 61 % of the live main thread in write() (4.8 us on loopback, the "
    "model's 2.60). Neither that write cost nor collecting the poll's ready list "
    "after the wake-up (both tried) lifts the model past 1.6 clients per "
    "iteration: what makes the live batches is not found yet (issue #19 note)"))
def test_a_same_host_benchmarks_bursts_start_redis_io_threads():
    # Live, on the reference 2-vCPU VM (redis-server 7.0.15, redis-benchmark -c 50
    # -P 1 -t get -n 400000, five alternated pairs, 2026-11-26): io-threads 1 gave
    # 81.7-92.3K req/s, io-threads 2 54.7-58.3K; per pair the ratio is 0.60-0.67
    # (mean 0.64), and 310-317K of the 400K replies went through a threaded write
    # pass (io_threaded_writes_processed: 78-79 %). Mechanism: the benchmark's
    # thread writes a pass's requests after reading its replies, so Redis finds
    # 2 x io-threads clients ready at once and writes through its threads; then
    # the I/O thread spins on a core the client needs. Tolerance ±20 %, as for
    # the other measured figures.
    base = changed(_group(processes=50), host=TWO_CORES, duration=1.0, warmup=0.2)
    one = simulate(load_scenario(base), seed=1).summary
    two = simulate(load_scenario(changed(base, server={"save": "", "io-threads": 2})),
                   seed=1).summary
    assert one["io_threaded_writes_processed"] == 0
    share = two["io_threaded_writes_processed"] / two["requests_completed_total"]
    assert share == pytest.approx(0.785, rel=0.20)
    assert two["throughput_rps"] / one["throughput_rps"] == pytest.approx(0.64, rel=0.20)


def test_a_same_host_group_takes_the_hosts_client_costs_unless_it_has_its_own(tmp_path):
    # host.client-cpu is what `redsim calibrate` writes (redis-benchmark's own
    # CPU on the calibrated host): a same-host group without client costs of
    # its own takes it, one with its own keeps them, a remote group has none.
    host = {"client-cpu": "7.5us", "client-cpu-per-command": "0.08us"}
    own = {**ONE["clients"][0], "name": "own", "client-cpu": 9}
    remote = {**ONE["clients"][0], "name": "remote", "placement": "remote"}
    sc = load_scenario(changed(ONE, host=host, clients=[ONE["clients"][0], own, remote]))
    bench, mine, far = sc.clients
    assert (bench.client_cpu, bench.client_cpu_per_command) == (7.5, 0.08)
    assert (mine.client_cpu, mine.client_cpu_per_command) == (9.0, 0.08)
    assert far.client_cpu == 7.6  # the group default, unused by a remote group
    # From a calibration file, and for the groups of listed instances too.
    cal = tmp_path / "cal.yaml"
    cal.write_text("redsim-calibration: 1\nvalues:\n  host: {client-cpu: 7.5us}\n")
    listed = {k: v for k, v in ONE.items() if k != "clients"}
    listed.update(calibration=str(cal),
                  instances=[{"name": "a", "clients": ONE["clients"]}])
    inst = load_scenario(listed).instances[0]
    assert inst.clients[0].client_cpu == 7.5


def test_a_run_says_when_a_same_host_clients_cpu_is_the_reference_hosts():
    from redsim.config.cost_sources import client_note

    # The default client-cpu is redis-benchmark's on the reference VM (7.6 µs);
    # a planner's client on another host can differ by 30 % (11 µs on the
    # EPYC VM), and same-host throughput follows it: the run must say so, and
    # stay quiet once the group or the host gives its own.
    (line,) = client_note(load_scenario(ONE))
    assert "bench on Redis's host at the default 7.6 µs" in line and "host.client-cpu" in line
    assert client_note(load_scenario(_group(**{"client-cpu": 8}))) == []
    assert client_note(load_scenario(changed(ONE, host={"client-cpu": "7.5us"}))) == []
    assert client_note(load_scenario(_group(placement="remote"))) == []
