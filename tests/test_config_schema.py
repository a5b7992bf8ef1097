"""Scenario schema: Redis 7.2 defaults, shorthand forms, cross-field checks, and the
resolved form / hash."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

from redsim.config import (
    Scenario,
    ScenarioError,
    load_scenario,
    resolved_dict,
    scenario_hash,
)
from redsim.config.errors import UnmodelledDirectiveWarning
from redsim.config.loader import forget_warnings, valid_keys
from redsim.config.schema import (
    MODELLED_DIRECTIVES,
    ClientGroup,
    DurationDist,
    Server,
    SizeDist,
)

DATA = Path(__file__).parent / "data"
MB, GB = 1024**2, 1024**3


def load(doc: dict[str, Any], **kwargs: Any) -> Scenario:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnmodelledDirectiveWarning)
        return load_scenario(doc, base_dir=DATA, **kwargs)


def error_of(doc: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        load(doc)
    return str(info.value)


# --- defaults ----------------------------------------------------------------------


def test_server_defaults_are_redis_7_2_defaults() -> None:
    # Reference §9 (config.c defaults of Redis 7.2).
    s = Server()
    assert s.hz == 10
    assert s.dynamic_hz is True
    assert s.maxclients == 10000
    assert s.timeout == 0
    assert s.maxmemory == 0
    assert s.maxmemory_policy == "noeviction"
    assert s.maxmemory_samples == 5
    assert s.maxmemory_eviction_tenacity == 10
    assert (s.lazyfree_lazy_eviction, s.lazyfree_lazy_expire) == (False, False)
    assert (s.lazyfree_lazy_server_del, s.lazyfree_lazy_user_del) == (False, False)
    assert s.active_expire_effort == 1
    assert s.appendonly is False
    assert s.appendfsync == "everysec"
    assert s.save == [(3600, 1), (300, 100), (60, 10000)]
    assert s.io_threads == 1
    assert s.client_query_buffer_limit == 1 * GB
    assert s.proto_max_bulk_len == 512 * MB
    assert s.maxmemory_clients == 0
    assert s.latency_monitor_threshold == 0
    assert s.unmodelled == {}


def test_empty_scenario_defaults() -> None:
    sc = load({})
    assert sc == Scenario()
    assert (sc.name, sc.redis_version, sc.duration, sc.warmup, sc.seed) == (
        "scenario", "7.2", 60.0, 0.0, 0,
    )
    assert sc.sample_interval == 1.0
    assert sc.network.rtt.kind == "fixed" and sc.network.rtt.mean == 200e-6
    assert sc.engine.reply_batching is True
    assert sc.engine.cpu.read == 1.73 and sc.engine.cpu.write == 2.60  # reference host
    assert sc.engine.cpu.distribution == "fixed"
    [group] = sc.clients
    assert (group.name, group.kind, group.processes, group.threads) == ("group0", "closed", 1, 1)
    assert group.pool.max_size == 8 and group.pool.checkout == "lifo"
    assert group.pool.max_waiters == 100000 and group.pool.reap_interval == 1.0
    assert [(m.command, m.weight) for m in group.mix] == [("GET", 1.0)]
    assert group.think == DurationDist(kind="fixed", mean=0.0, low=0.0, high=0.0)
    assert group.value_size.kind == "fixed" and group.value_size.mean == 64
    assert group.key_size == 16
    assert group.keyspace.keys == 10000 and group.keyspace.zipf_exponent == 0.99


def test_modelled_directives_are_exactly_the_server_keys() -> None:
    assert set(valid_keys(Server)) - {"unmodelled"} == set(MODELLED_DIRECTIVES)


def test_no_modelled_directive_is_listed_as_unmodelled() -> None:
    # ANSWER_CHANGING names unmodelled directives whose mere presence changes
    # the answer; a directive the model reads cannot be one (it listed
    # activedefrag after model/defrag.py had modelled it: issue #44).
    from redsim.config.directives import ANSWER_CHANGING, KNOWN_REDIS_DIRECTIVES

    assert not ANSWER_CHANGING & set(MODELLED_DIRECTIVES)
    assert ANSWER_CHANGING <= set(KNOWN_REDIS_DIRECTIVES)


def test_models_are_frozen() -> None:
    sc = load({})
    with pytest.raises(pydantic.ValidationError) as info:
        sc.server.hz = 100  # type: ignore[misc]
    # The refusal names the field assigned and why, not only its type.
    [error] = info.value.errors()
    assert error["loc"] == ("hz",) and error["type"] == "frozen_instance"
    assert sc.server.hz != 100


def test_python_names_are_accepted_too() -> None:
    sc = Scenario(sample_interval=0.5, server=Server(maxmemory_policy="allkeys-lru"))
    assert sc.sample_interval == 0.5 and sc.server.maxmemory_policy == "allkeys-lru"
    assert load({"server": {"maxmemory_policy": "allkeys-lfu"}}).server.maxmemory_policy == (
        "allkeys-lfu"
    )


# --- units and shorthand forms --------------------------------------------------------


def test_units_everywhere() -> None:
    sc = load({
        "duration": "2h",
        "warmup": "1m",
        "sample-interval": "250ms",
        "server": {"maxmemory": "60gb", "timeout": "5m", "latency-monitor-threshold": "1s",
                   "client-query-buffer-limit": "2mb"},
        "engine": {"cpu": {"read": "1us", "cron": "0.05ms", "iteration": "800ns"}},
        "network": {"rtt": "1ms"},
        "clients": [{"kind": "open", "rate": "25k/s", "value-size": "2kb",
                     "pool": {"idle-timeout": "30s"}, "mix": [{"command": "set", "ttl": "2w"}]}],
    })
    assert (sc.duration, sc.warmup, sc.sample_interval) == (7200.0, 60.0, 0.25)
    assert sc.server.maxmemory == 60 * GB and sc.server.timeout == 300.0
    assert sc.server.latency_monitor_threshold == 1000  # ms
    assert sc.server.client_query_buffer_limit == 2 * MB
    assert (sc.engine.cpu.read, sc.engine.cpu.cron, sc.engine.cpu.iteration) == (1.0, 50.0, 0.8)
    assert sc.network.rtt.mean == 0.001
    g = sc.clients[0]
    assert g.rate == 25000.0 and g.value_size.mean == 2048 and g.pool.idle_timeout == 30.0
    assert g.mix[0].command == "SET" and g.mix[0].ttl == 14 * 86400


def test_mix_shorthand_forms() -> None:
    by_map = load({"clients": [{"mix": {"GET": 0.9, "set": 0.1}}]}).clients[0].mix
    assert [(m.command, m.weight) for m in by_map] == [("GET", 0.9), ("SET", 0.1)]
    nested = load({"clients": [{"mix": {"MGET": {"weight": 2, "keys": 10}}}]}).clients[0].mix
    assert (nested[0].command, nested[0].weight, nested[0].keys) == ("MGET", 2.0, 10)
    names = load({"clients": [{"mix": ["get", "SMEMBERS"]}]}).clients[0].mix
    assert [m.command for m in names] == ["GET", "SMEMBERS"]


def test_command_costs_case_insensitive_and_scalar_shorthand() -> None:
    sc = load({"engine": {"cpu": {"commands": {"get": 1.2, "Set": {"per-byte": "1ns"}}}}})
    cmds = sc.engine.cpu.commands
    assert set(cmds) == {"GET", "SET"}
    assert cmds["GET"].fixed == 1.2 and cmds["GET"].per_byte is None
    assert cmds["SET"].per_byte == 0.001 and cmds["SET"].fixed is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3600 1 300 100", [(3600, 1), (300, 100)]),
        ("", []),
        ([], []),
        ([[900, 1], [60, 10000]], [(900, 1), (60, 10000)]),
        (["900 1", "300 10"], [(900, 1), (300, 10)]),
        ([900, 1], [(900, 1)]),
    ],
)
def test_save_forms(value: Any, expected: list[tuple[int, int]]) -> None:
    assert load({"server": {"save": value}}).server.save == expected


@pytest.mark.parametrize("value", ["3600", "0 1", "60 -1", "a b", [[1, 2, 3]], None])
def test_save_rejects(value: Any) -> None:
    assert "server.save: expected save points" in error_of({"server": {"save": value}})


@pytest.mark.parametrize(
    ("value", "expected"), [(6.2, "6.2"), (7, "7.0"), (7.0, "7.0"), ("7.2", "7.2"),
                            ("7.2.4", "7.2")]
)
def test_redis_version_from_yaml_numbers(value: Any, expected: str) -> None:
    assert load({"redis-version": value}).redis_version == expected


def test_redis_version_rejects_unknown() -> None:
    assert "redis-version: expected a Redis version" in error_of({"redis-version": 5.0})


@pytest.mark.parametrize(("value", "expected"), [(0, 1), (1, 1), (100, 100), (500, 500),
                                                 (1000, 500), ("50", 50)])
def test_hz_is_clamped_like_redis(value: Any, expected: int) -> None:
    assert load({"server": {"hz": value}}).server.hz == expected


def test_negative_hz_is_an_error() -> None:
    assert "server.hz: expected an integer ≥ 0, found -1" in error_of({"server": {"hz": -1}})


@pytest.mark.parametrize(
    ("spec", "kind", "mean", "low", "high", "sigma"),
    [
        ("5ms", "fixed", 0.005, 0.005, 0.005, 0.0),
        ({"distribution": "fixed", "value": "1s"}, "fixed", 1.0, 1.0, 1.0, 0.0),
        ({"mean": 2}, "fixed", 2.0, 2.0, 2.0, 0.0),
        ({"distribution": "exponential", "mean": "10ms"}, "exponential", 0.01, 0.0, math.inf, 0),
        ({"distribution": "uniform", "min": "1ms", "max": "3ms"}, "uniform", 0.002, 0.001,
         0.003, 0.0),
        ({"distribution": "lognormal", "mean": 1, "sigma": 0.5}, "lognormal", 1.0, 0.0,
         math.inf, 0.5),
    ],
)
def test_duration_dist_forms(
    spec: Any, kind: str, mean: float, low: float, high: float, sigma: float
) -> None:
    think = load({"clients": [{"think": spec}]}).clients[0].think
    assert (think.kind, think.low, think.high, think.sigma) == (kind, low, high, sigma)
    assert think.mean == pytest.approx(mean)


def test_size_dist_uses_memtoull_units() -> None:
    vs = load({"clients": [{"value-size": {"distribution": "uniform", "min": "1k",
                                           "max": "1kb"}}]}).clients[0].value_size
    assert (vs.low, vs.high) == (1000, 1024)
    assert SizeDist.model_validate("1mb").mean == MB


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ({"distribution": "exponential"}, "clients[0].think.mean"),
        ({"distribution": "uniform", "min": 1}, "clients[0].think.max"),
        ({"distribution": "uniform", "min": 3, "max": 1}, "clients[0].think.max"),
        ({"distribution": "lognormal", "mean": 1}, "clients[0].think.sigma"),
        ({"distribution": "lognormal", "mean": 1, "sigma": -1}, "clients[0].think.sigma"),
        ({"distribution": "exponential", "mean": 1, "sigma": 1}, "clients[0].think.sigma"),
        ({"distribution": "gamma", "mean": 1}, "clients[0].think.distribution"),
        ({"distribution": "fixed", "value": "-1s"}, "clients[0].think.value"),
        ("soon", "clients[0].think"),
    ],
)
def test_dist_errors_name_the_field(spec: Any, where: str) -> None:
    assert f"{where}: expected" in error_of({"clients": [{"think": spec}]})


def test_maxmemory_clients_percentage_of_maxmemory() -> None:
    sc = load({"server": {"maxmemory": "1gb", "maxmemory-clients": "10%"}})
    assert sc.server.maxmemory_clients == round(GB * 0.10)
    assert load({"server": {"maxmemory-clients": "5%"}}).server.maxmemory_clients == 0


def test_unmodelled_directives_are_kept_with_a_warning() -> None:
    # One line: the count, slaveof (replication could change the answer) and port
    # (6380, not Redis's 6379); tcp-backlog 511 is Redis's default and unnamed.
    forget_warnings()  # said once per process: this test must see it
    with pytest.warns(UnmodelledDirectiveWarning,
                      match=r"^scenario: 3 Redis directives redsim does not model .*"
                            r"could change the answer: slaveof; "
                            r"not at Redis's default: port \("):
        sc = load_scenario({"server": {"port": 6380, "tcp-backlog": 511, "appendonly": True,
                                       "unmodelled": {"slaveof": "10.0.0.1 6379"}}})
    assert sc.server.unmodelled == {"port": "6380", "tcp-backlog": "511",
                                    "slaveof": "10.0.0.1 6379"}
    assert sc.server.appendonly is True


def test_unmodelled_rejects_unknown_and_modelled_names() -> None:
    msg = error_of({"server": {"unmodelled": {"tcp-backlgo": 1}}})
    assert "server.unmodelled.tcp-backlgo" in msg and "did you mean 'tcp-backlog'?" in msg
    msg = error_of({"server": {"unmodelled": {"hz": 5}}})
    assert "server.unmodelled.hz" in msg and "server.hz" in msg


# --- cross-field checks -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "where", "words"),
    [
        ({"clients": [{"kind": "open"}]}, "clients[0].rate", "rate (like 25k/s) or a profile"),
        ({"clients": [{"kind": "open", "rate": 5, "profile": [{"at": 0, "rate": 1}]}]},
         "clients[0].profile", "not both"),
        ({"clients": [{"rate": 5}]}, "clients[0].rate", "no rate for a closed group"),
        ({"clients": [{"kind": "trace", "trace": "endpoint.trace", "rate": 5}]},
         "clients[0].rate", "no rate for a trace group"),
        ({"clients": [{"profile": [{"at": 0, "rate": 1}]}]}, "clients[0].profile",
         "no profile for a closed group"),
        ({"clients": [{"kind": "trace"}]}, "clients[0].trace", "a trace file path"),
        ({"clients": [{"trace": "endpoint.trace"}]}, "clients[0].trace",
         "no trace for a closed group"),
        ({"clients": [{"kind": "open", "profile": [{"at": 5, "rate": 1}]}]},
         "clients[0].profile[0].at", "the first profile step at 0"),
        ({"clients": [{"kind": "open", "profile": [{"at": 0, "rate": 1}, {"at": 0, "rate": 2}]}]},
         "clients[0].profile[1].at", "strictly increasing"),
        ({"clients": [{"kind": "open", "profile": []}]}, "clients[0].profile", "at least one"),
        ({"clients": [{"name": "a"}, {"name": "a"}]}, "clients[1].name", "unique"),
        ({"clients": [{"name": "group1"}, {}]}, "clients[1].name", "unique"),
        ({"clients": []}, "clients", "at least one client group"),
        ({"clients": [{"mix": []}]}, "clients[0].mix", "at least one command"),
        ({"duration": 0}, "duration", "a duration > 0"),
        ({"duration": 10, "warmup": 10}, "warmup", "shorter than the duration"),
        ({"duration": 10, "sample-interval": 11}, "sample-interval", "≤ the duration"),
        ({"clients": [{"pool": {"max-size": 0}}]}, "clients[0].pool.max-size",
         "an integer ≥ 1, found 0"),
        ({"clients": [{"processes": 0}]}, "clients[0].processes", "an integer ≥ 1"),
        ({"clients": [{"mix": [{"command": "GET", "weight": 0}]}]}, "clients[0].mix[0].weight",
         "a number > 0"),
        ({"clients": [{"keyspace": {"zipf-exponent": 0}}]},
         "clients[0].keyspace.zipf-exponent", "a number > 0"),
        ({"server": {"maxmemory-samples": 65}}, "server.maxmemory-samples", "between 1 and 64"),
        ({"server": {"maxmemory-eviction-tenacity": 101}}, "server.maxmemory-eviction-tenacity",
         "between 0 and 100"),
        ({"server": {"active-expire-effort": 0}}, "server.active-expire-effort",
         "between 1 and 10"),
        ({"server": {"maxmemory-policy": "allkeys-lru-ish"}}, "server.maxmemory-policy",
         "did you mean 'allkeys-lru'?"),
        ({"server": {"appendfsync": "sometimes"}}, "server.appendfsync", "'always'"),
        ({"server": {"client-query-buffer-limit": "1kb"}}, "server.client-query-buffer-limit",
         "a size ≥ 1mb"),
        ({"engine": {"cpu": {"commands": {"GETT": 1}}}}, "engine.cpu.commands.GETT",
         "did you mean 'GET'?"),
        ({"clients": [{"mix": {"SMEMBER": 1}}]}, "clients[0].mix[0].command",
         "did you mean 'SMEMBERS'?"),
    ],
)
def test_checks_name_the_field(doc: dict[str, Any], where: str, words: str) -> None:
    msg = error_of(doc)
    assert msg.startswith(f"{where}: expected"), msg
    assert words in msg


def test_unknown_command_lists_valid_ones() -> None:
    msg = error_of({"clients": [{"mix": [{"command": "FLY"}]}]})
    assert "GET" in msg and "SMEMBERS" in msg and "found 'FLY'" in msg


# --- resolved form and hash -----------------------------------------------------------------


def _valid() -> Scenario:
    return load_scenario(DATA / "valid.yaml")


def test_resolved_dict_is_plain_yaml_and_loads_back() -> None:
    sc = _valid()
    resolved = resolved_dict(sc)
    text = yaml.safe_dump(resolved)  # plain types only
    json.dumps(resolved)
    assert resolved["server"]["maxmemory"] == 64 * MB
    assert resolved["sample-interval"] == 0.5
    assert resolved["clients"][0]["pool"]["max-size"] == 8
    assert resolved["clients"][0]["value-size"] == {"distribution": "fixed", "value": 1024}
    assert resolved["clients"][0]["think"] == {"distribution": "exponential", "mean": 0.005}
    assert resolved["engine"]["cpu"]["commands"]["SET"]["fixed"] == 1.5
    assert Path(resolved["clients"][2]["trace"]).is_absolute()
    assert load_scenario(yaml.safe_load(text)) == sc


def test_hash_is_stable_and_sensitive() -> None:
    a, b = _valid(), _valid()
    assert scenario_hash(a) == scenario_hash(b)
    assert len(scenario_hash(a)) == 64 and int(scenario_hash(a), 16) >= 0
    c = load_scenario(DATA / "valid.yaml", overrides=["server.hz=11"])
    assert scenario_hash(c) != scenario_hash(a)
    # Same meaning, different spelling: same hash.
    d = load({"duration": "1m", "server": {"maxmemory": "1kb"}})
    e = load({"duration": 60, "server": {"maxmemory": 1024}})
    assert scenario_hash(d) == scenario_hash(e)


def test_hash_follows_trace_content_not_its_location(tmp_path: Path) -> None:
    # The same scenario and trace copied to two directories (two checkouts) must
    # hash alike, or committed results look stale on every other machine; editing
    # the trace must change the hash, since the run replays its bytes.
    hashes = []
    for name, extra in (("a", b""), ("b", b""), ("c", b"GET extra\n")):
        d = tmp_path / name
        d.mkdir()
        (d / "valid.yaml").write_bytes((DATA / "valid.yaml").read_bytes())
        (d / "endpoint.trace").write_bytes((DATA / "endpoint.trace").read_bytes() + extra)
        hashes.append(scenario_hash(load_scenario(d / "valid.yaml")))
    assert hashes[0] == hashes[1] == scenario_hash(_valid())
    assert hashes[2] != hashes[0]


def test_group_names_filled_by_position() -> None:
    sc = load({"clients": [{"name": "web"}, {}, {"name": None}]})
    assert [g.name for g in sc.clients] == ["web", "group1", "group2"]


def test_client_group_built_in_code_is_checked() -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        ClientGroup(kind="open")
    # An open group needs an arrival rate: the message names both fields it could take.
    text = str(info.value)
    assert "rate" in text and "profile" in text and "open group" in text


def test_cpu_defaults_are_the_reference_host_calibration() -> None:
    """engine.cpu's defaults and the command table are the medians measured on the
    reference host (results/calibration/reference-host/calibration.yaml), rounded
    to 2-3 significant digits (≤ 2 %)."""
    from pathlib import Path

    import yaml

    from redsim.config.units import parse_cost_us
    from redsim.model.commands import COMMANDS

    cal = Path(__file__).parent.parent / "results/calibration/reference-host/calibration.yaml"
    cpu = yaml.safe_load(cal.read_text())["values"]["engine"]["cpu"]
    defaults = Scenario().engine.cpu
    for key in ("read", "write", "wakeup", "eviction-check", "eviction-sample",
                "eviction-delete"):
        assert getattr(defaults, key.replace("-", "_")) == pytest.approx(
            parse_cost_us(cpu[key]), rel=0.02), key
    assert len(cpu["commands"]) == 21
    for name, parts in cpu["commands"].items():
        assert COMMANDS[name].fixed_us == pytest.approx(parse_cost_us(parts["fixed"]),
                                                        rel=0.02), name
        if "per-element" in parts:
            assert COMMANDS[name].per_element_us == pytest.approx(
                parse_cost_us(parts["per-element"]), rel=0.02), name
