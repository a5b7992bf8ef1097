"""The summary's keys are declared where they are made (observe/metrics.py): every
key a run or a host produces has one declaration, its combine rule is the one
the host applies, and one declared metric reaches the summary, the printed
table and the host's aggregate with nothing else changed."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from redsim import simulate
from redsim.cli import summary_table
from redsim.host.result import aggregate_summary
from redsim.observe import bins, stalls
from redsim.observe import metrics as M
from redsim.result import GROUP_METRICS, declared
from tests.engine_helpers import changed

# Two client groups (so <group>.<metric> keys), the AOF on everysec (fsyncs, so
# the conditional fsync_median_usecs_bucket), 1.5 s.
TWO_GROUPS = {
    "name": "declared", "duration": 1.5, "warmup": 0.5, "sample-interval": 0.1,
    "server": {"save": "", "appendonly": True},
    "network": {"rtt": "50us"},
    "clients": [{"name": "web", "processes": 8, "pool": {"max-size": 1},
                 "mix": {"GET": 3, "SET": 1}, "keyspace": {"keys": 2000}},
                {"name": "batch", "processes": 4, "pool": {"max-size": 1},
                 "mix": {"GET": 1}, "keyspace": {"keys": 2000}}],
}


@pytest.fixture(autouse=True)
def _fresh_declarations():
    # A test that adds a declaration must not leave it cached for the next.
    declared.cache_clear()
    yield
    declared.cache_clear()


@pytest.fixture(scope="module")
def runs():
    """One single-instance run and one host of two instances (module-scoped:
    the declarations these read are the shipped ones)."""
    declared.cache_clear()
    host = changed(TWO_GROUPS, instances=2, host={"cores": 4})
    return simulate(TWO_GROUPS, seed=1), simulate(host, seed=1)


def test_every_key_a_run_or_a_host_makes_has_one_declaration(runs):
    single, host = runs
    decl = declared()
    for summary in (single.summary, host.summary, host.instances[1].summary):
        missing = sorted(k for k in summary if decl.of(k) is None)
        assert not missing, f"undeclared summary keys {missing}"
    # Each group key is declared by the run's key of its name, nothing else.
    assert {k.partition(".")[2] for k in single.summary if "." in k} == set(GROUP_METRICS)
    # And every declaration is made: the run's keys by a run, the host's by a host.
    host_only = {k for k, m in decl.metrics.items() if m.combine == M.HOST}
    assert set(decl.metrics) - host_only <= set(single.summary)
    assert set(decl.metrics) <= set(host.summary)
    assert host_only.isdisjoint(single.summary)


def test_a_key_declared_twice_is_refused_naming_both(monkeypatch):
    twin = M.Metric("evicted_keys", "-", M.SUM, "a second evicted_keys")
    monkeypatch.setattr(bins, "RESULTS", (*bins.RESULTS, twin))
    with pytest.raises(RuntimeError, match="'evicted_keys' declared by observe.bins and "
                                           "model.eviction"):
        declared()


def test_a_line_declared_at_a_taken_place_is_refused(monkeypatch):
    line = M.Line(50, "again", lambda s: "")
    monkeypatch.setattr(bins, "RESULTS", (*bins.RESULTS, line))
    with pytest.raises(RuntimeError, match="at 50"):
        declared()


# The rules aggregate_summary took from a key's name before they were declared
# (commit 0042c36), frozen here as a one-off check that each declaration says
# what the name said; "first" also stood for any value that is not a number.
_OLD_FIRST = ("scenario", "seed", "redis_version", "duration_s", "warmup_s", "scenario_hash",
              "replica_states_end", "replica_lag_bytes_end", "fsync_median_usecs_bucket")
_OLD_MAX = ("latency_max_s", "cycle_period_s", "latest_fork_usec", "cow_peak_bytes")
_OLD_MEAN = ("utilisation", "allocator_frag_ratio_end", "rss_overhead_ratio_end",
             "mem_fragmentation_ratio_end")


def _old_rule(key: str) -> str:
    if key in _OLD_FIRST:
        return "first"
    if key == "latency_mean_s":
        return "weighted"
    if key.startswith("latency_p") and key.endswith("_s"):
        return "histogram"
    if key == "stall_causes":
        return "causes"
    if key == "burst_detected":
        return "any"
    if key == "commands_per_cycle":
        return "ratio"  # the mean, then replaced by ops_per_sec / eventloop_cycles_per_sec
    if key in ("used_memory_peak", "used_memory_rss_peak", "host_memory_peak"):
        return "series_peak"  # the max, then replaced by the summed series' peak
    if key in _OLD_MAX or key.endswith("_max_s") or key.endswith("_peak"):
        return "max"
    if key in _OLD_MEAN or key.endswith(("_share", "_median_s", "_mean_s", "_median",
                                         "_median_bytes")):
        return "mean"
    return "sum"


def test_each_declared_rule_is_the_one_its_name_gave():
    decl = declared()
    rules = {k: m.combine.rule for k, m in decl.metrics.items() if m.combine != M.HOST}
    # The one rule the names gave wrongly: aof_buffer_length_max ("_max", not
    # "_max_s") was added up over the instances, whose peaks need not coincide;
    # the host's is the worst instance's buffer.
    assert rules.pop("aof_buffer_length_max") == "max"
    assert rules == {k: _old_rule(k) for k in rules}


def _instance(summary: dict, used: list[int]) -> SimpleNamespace:
    return SimpleNamespace(summary=summary, group_counts={},
                           timeseries=pd.DataFrame({"used_memory": used}))


def _counts() -> np.ndarray:
    from redsim.model.histogram import N_BUCKETS

    return np.ones(N_BUCKETS, dtype=np.int64)


def test_the_host_combines_by_the_declared_rule(monkeypatch):
    extra = (M.Metric("probe_total", "-", M.SUM, "a summed test key"),
             M.Metric("probe_worst", "s", M.MAX, "a test maximum"),
             M.Metric("probe_level", "-", M.MEAN, "a test mean"),
             M.Metric("probe_lat", "s", M.weighted("probe_total"), "a weighted test mean"))
    monkeypatch.setattr(bins, "RESULTS", (*bins.RESULTS, *extra))
    base = {"ops_per_sec": 10.0, "eventloop_cycles_per_sec": 4.0, "commands_per_cycle": 0.0}
    a = _instance({**base, "used_memory_peak": 5, "probe_total": 1, "probe_worst": 0.5,
                   "probe_level": 1.0, "probe_lat": 1.0}, [3, 5])
    b = _instance({**base, "used_memory_peak": 4, "probe_total": 3, "probe_worst": 0.25,
                   "probe_level": 3.0, "probe_lat": 2.0}, [4, 1])
    out = aggregate_summary([a, b], _counts())
    assert out["probe_total"] == 4 and isinstance(out["probe_total"], int)
    assert out["probe_worst"] == 0.5
    assert out["probe_level"] == 2.0
    assert out["probe_lat"] == pytest.approx((1 * 1.0 + 3 * 2.0) / 4)
    assert out["commands_per_cycle"] == 20.0 / 8.0  # the host's ratio, not the mean
    assert out["used_memory_peak"] == 7  # the summed series' peak (3 + 4), not 5
    with pytest.raises(KeyError, match="mystery"):
        aggregate_summary([_instance({"mystery": 1}, [0])], _counts())


def test_one_declared_metric_reaches_summary_table_and_host(monkeypatch):
    # A test-local metric declared beside the requests it counts, and nothing
    # else: the run makes it, the table prints it, the host adds it up.
    twice = M.Metric("requests_completed_twice", "-", M.SUM, "requests completed, twice",
                     value=lambda r: 2 * r.summary["requests_completed"],
                     line=M.Line(55, "requests completed, twice",
                                 lambda s: f"{s['requests_completed_twice']:,}"))
    monkeypatch.setattr(bins, "RESULTS", (*bins.RESULTS, twice))
    host = simulate(changed(TWO_GROUPS, instances=2, duration=1.0), seed=2)
    per = [r.summary["requests_completed_twice"] for r in host.instances]
    assert per == [2 * r.summary["requests_completed"] for r in host.instances]
    assert per[0] > 0
    assert host.summary["requests_completed_twice"] == sum(per)
    lines = summary_table(host.summary).splitlines()
    label = [i for i, ln in enumerate(lines) if "requests completed, twice" in ln]
    assert len(label) == 1 and lines[label[0]].endswith(f"{sum(per):,}")
    # Placed by its number: after "requests completed" (50), before "throughput" (60).
    assert "requests completed " in lines[label[0] - 1] and "throughput" in lines[label[0] + 1]
    monkeypatch.undo()
    declared.cache_clear()
    assert "twice" not in summary_table(host.summary)


def test_an_undeclared_key_fails_the_run(monkeypatch):
    # A key made by a run but declared nowhere is refused when the result is
    # built, not found later in a host's aggregate.
    monkeypatch.setattr(stalls, "RESULTS", tuple(m for m in stalls.RESULTS
                                                 if getattr(m, "name", "") != "stall_time_s"))
    with pytest.raises(RuntimeError, match="stall_time_s"):
        simulate(changed(TWO_GROUPS, duration=0.6, warmup=0.1), seed=1)


# The columns Result.from_world named by hand before they were declared (commit
# 0042c36), in the order the run folder's timeseries.parquet holds them; a
# one-off check that the declarations give the same list in the same order.
_OLD_COLUMNS = (
    "instantaneous_ops_per_sec", "total_commands_processed", "requests_per_sec",
    "offered_per_sec", "rejected_per_sec", "failed_per_sec", "timeouts_per_sec",
    "refused_per_sec", "connected_clients", "connections_opened", "connections_closed",
    "evicted_clients", "busy_connections", "pool_waiters", "queue_length", "in_system",
    "requests_in_flight", "cpu_commands", "cpu_read", "cpu_write", "cpu_iteration", "cpu_cron",
    "cpu_connections", "cpu_eviction", "cpu_expire", "cpu_aof", "cpu_fsync", "cpu_fork",
    "cpu_repl", "cpu_cow", "cpu_defrag", "cpu_idle", "eventloop_cycles", "latency_mean",
    "latency_p50", "latency_p90", "latency_p99", "latency_p999", "latency_max", "hz",
    "active_defrag_running", "active_defrag_hits", "used_memory", "used_memory_dataset",
    "used_memory_overhead", "mem_clients_normal", "mem_clients_true", "maxmemory", "keys",
    "expires", "keyspace_hits", "keyspace_misses", "expired_keys", "expired_per_sec",
    "evicted_keys", "lazyfree_pending_objects", "lazyfreed_objects", "evicted_per_sec",
    "oom_rejected_per_sec", "busy_rejected_per_sec", "aof_buffer_length", "aof_current_size",
    "aof_delayed_fsync", "fsyncs_per_sec", "rdb_changes_since_last_save",
    "rdb_bgsave_in_progress", "aof_rewrite_in_progress", "total_forks", "current_cow_size",
    "used_memory_rss", "allocator_allocated", "allocator_active", "allocator_resident",
    "allocator_frag_ratio", "allocator_rss_ratio", "rss_overhead_ratio",
    "mem_fragmentation_ratio", "allocator_frag_bytes", "allocator_rss_bytes",
    "rss_overhead_bytes", "mem_fragmentation_bytes", "host_memory", "master_repl_offset",
    "connected_slaves", "replicas_online", "mem_total_replication_buffers",
    "repl_max_lag_bytes", "replica_fullsync_buffer", "sync_full",
    "replica_obuf_disconnections")


def test_the_series_columns_are_the_declared_ones_in_their_order(runs):
    single, _ = runs
    names = [c.name for c in declared().columns]
    assert tuple(names) == _OLD_COLUMNS
    # The run's series: the declared columns, then each group's (two groups here).
    groups = [c for c in single.timeseries.columns if "." in c]
    assert list(single.timeseries.columns) == names + groups
    assert {c.partition(".")[0] for c in groups} == {"web", "batch"}


def test_a_column_declared_twice_or_at_a_taken_place_is_refused(monkeypatch):
    again = M.Column(1, "requests_per_sec", "1/s", "again", M.rate("WI_DONE"))
    monkeypatch.setattr(bins, "RESULTS", (*bins.RESULTS, again))
    with pytest.raises(RuntimeError, match="'requests_per_sec' at 1 \\(also declared by "
                                           "observe.bins\\)"):
        declared()
    taken = M.Column(30, "requests_per_sec_again", "1/s", "again", M.rate("WI_DONE"))
    monkeypatch.setattr(bins, "RESULTS", (taken, *bins.RESULTS))
    declared.cache_clear()
    with pytest.raises(RuntimeError, match="at 30"):
        declared()


def test_one_declared_column_reaches_the_series(monkeypatch):
    # A test-local column beside the series it reads: the run's series has it,
    # in its place, with the values the recorded series give.
    doubled = M.Column(35, "requests_per_sec_doubled", "1/s", "twice requests_per_sec",
                       lambda r: 2 * M.row(r, "WI_DONE") / r.length)
    monkeypatch.setattr(bins, "RESULTS", (*bins.RESULTS, doubled))
    res = simulate(changed(TWO_GROUPS, duration=0.6, warmup=0.1), seed=1)
    cols = list(res.timeseries.columns)
    assert cols[cols.index("requests_per_sec") + 1] == "requests_per_sec_doubled"
    np.testing.assert_array_equal(res.timeseries["requests_per_sec_doubled"],
                                  2 * res.timeseries["requests_per_sec"])
    assert res.timeseries["requests_per_sec"].sum() > 0


def _resolve(made_by: str) -> object:
    """The function a ``made_by`` names: in redsim/result.py or redsim/host/result.py,
    or at a module path under redsim (``analysis.phases.burst_summary``)."""
    import importlib

    for module in ("redsim.result", "redsim.host.result"):
        obj: object = importlib.import_module(module)
        for part in made_by.split("."):
            obj = getattr(obj, part, None)
        if obj is not None:
            return obj
    module, _, name = made_by.rpartition(".")
    return getattr(importlib.import_module(f"redsim.{module}"), name)


def test_each_key_without_a_value_names_the_function_that_makes_it():
    for name, metric in declared().metrics.items():
        assert (metric.value is None) == bool(metric.made_by), name
        if metric.made_by:
            assert callable(_resolve(metric.made_by)), (name, metric.made_by)
