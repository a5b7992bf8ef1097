"""``instances: [...]``: Redis instances with their own configuration, load and
events on one host (redsim/config/schema/scenario.py Instance, redsim/host/instances.py)."""

from __future__ import annotations

import copy

import pytest

from redsim import load_scenario, simulate
from redsim.config import ScenarioError
from redsim.host.instances import instance_seed, split
from redsim.host.result import HostResult

TWO = {
    "name": "two", "duration": 1.0, "warmup": 0.2, "sample-interval": 0.1,
    "server": {"save": "", "hz": 20},
    "network": {"rtt": "100us"},
    "instances": [
        {"name": "cache", "server": {"maxmemory": "64mb", "maxmemory-policy": "allkeys-lru"},
         "clients": [{"name": "web", "processes": 16, "mix": {"GET": 9, "SET": 1},
                      "keyspace": {"keys": 20000}}]},
        {"name": "jobs", "server": {"hz": 50},
         "clients": [{"processes": 4, "think": "1ms", "mix": {"SET": 1},
                      "value-size": 1024, "keyspace": {"keys": 50000}}]},
    ],
}


def _two(**changes) -> dict:
    d = copy.deepcopy(TWO)
    d.update(changes)
    return d


def test_each_instance_has_its_server_over_the_shared_one_and_its_own_clients():
    sc = load_scenario(TWO)
    cache, jobs = split(sc)
    assert sc.instance_count == 2
    assert (cache.server.maxmemory, cache.server.maxmemory_policy) == (64 * 2**20, "allkeys-lru")
    assert (jobs.server.maxmemory, jobs.server.maxmemory_policy) == (0, "noeviction")
    assert (cache.server.hz, jobs.server.hz) == (20, 50)  # shared, then overridden
    assert cache.server.save == jobs.server.save == []
    assert [g.name for g in cache.clients] == ["web"]
    assert [g.name for g in jobs.clients] == ["group0"]  # named by position, as at the top
    assert (cache.name, jobs.name) == ("two/cache", "two/jobs")


def test_instances_with_cores_of_their_own_run_as_they_would_alone():
    # No host.cores: nothing couples the instances, so each one's figures are
    # those of its own scenario run alone with its instance seed, bit for bit.
    sc = load_scenario(TWO)
    host = simulate(sc, seed=7)
    assert isinstance(host, HostResult)
    assert list(host.per_instance["name"]) == ["cache", "jobs"]
    for i, part in enumerate(split(sc)):
        alone = simulate(part, seed=instance_seed(7, i)).summary
        got = host.instances[i].summary
        for key in ("throughput_rps", "latency_p99_s", "latency_mean_s", "used_memory_peak",
                    "evicted_keys", "requests_completed"):
            assert got[key] == alone[key], key
    assert host.summary["throughput_rps"] == pytest.approx(
        sum(r.summary["throughput_rps"] for r in host.instances))


def test_an_instance_event_runs_on_that_instance_only():
    d = _two(events=[{"at": 0.3, "do": "bgsave"}])
    d["instances"][1]["events"] = [{"at": 0.5, "do": "bgsave"}]
    per = simulate(load_scenario(d), seed=1).per_instance.set_index("name")
    # The scenario's BGSAVE forks both instances; the jobs instance's own, only it.
    assert per.loc["cache", "total_forks"] == 1
    assert per.loc["jobs", "total_forks"] == 2


@pytest.mark.parametrize("change, where, expected", [
    (lambda d: d.update(clients=[{"name": "x"}]), "clients", "no top-level clients"),
    (lambda d: d["instances"][1].update(name="cache"), "instances[1].name", "no other instance"),
    (lambda d: d["instances"][0]["server"].update(maxmemory="lots"),
     "instances[0].server.maxmemory", "a size"),
    (lambda d: d["instances"][1].update(events=[{"at": "40s", "do": "bgsave"}]),
     "instances[1].events[0].at", "an event time"),
    (lambda d: d["instances"][0].pop("clients"), "instances[0].clients", "required"),
    (lambda d: d["instances"][0].update(colour="red"), "instances[0].colour", "a key of"),
    (lambda d: d["instances"][0]["clients"][0].update(processes=200_000),
     "instances[0].clients", "at most 1,000,000 connections"),
    (lambda d: d.update(instances=[]), "instances", "at least 1"),
    (lambda d: d["instances"][0].update(name="a b"), "instances[0].name", "letters, digits"),
])
def test_a_mistake_in_an_instance_names_its_path(change, where, expected):
    d = _two()
    change(d)
    with pytest.raises(ScenarioError) as e:
        load_scenario(d)
    assert str(e.value).startswith(where + ":") or f"{where}:" in str(e.value)
    assert expected in str(e.value)


@pytest.mark.slow
def test_a_neighbours_bgsave_slows_the_cache_on_a_two_core_host():
    # scenarios/noisy-neighbour.yaml: the jobs instance's BGSAVE at 10 s; its
    # fork child serialises for seconds and takes a share of the 2 cores, so
    # the cache - which did nothing different - serves less while it lives,
    # and gets its throughput back once it is gone. The child is the jobs
    # instance's only (it alone forks).
    r = simulate(load_scenario("scenarios/noisy-neighbour.yaml"), seed=1)
    per = r.per_instance.set_index("name")
    assert (per.loc["cache", "total_forks"], per.loc["jobs", "total_forks"]) == (0, 1)
    ts = r.timeseries
    before = ts.loc[(ts.index > 3) & (ts.index < 10), "i0_requests_per_sec"].mean()
    child = ts["host_cpu_children"] > 0.3
    during = ts.loc[child, "i0_requests_per_sec"].mean()
    after = ts.loc[(ts.index > ts.index[child].max() + 1), "i0_requests_per_sec"].mean()
    assert child.sum() >= 4  # the child lives for seconds (0.5 s samples)
    assert during < 0.85 * before
    assert after == pytest.approx(before, rel=0.05)
