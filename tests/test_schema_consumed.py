"""Every scenario field reaches the model, or is listed as read elsewhere or as
not modelled yet (which warns when set).

A field the schema checks and documents but the model never reads is a setting
a planner changes to no effect and without a word. The model's reads are
recorded, not guessed: the scenario is wrapped in a proxy that notes every
field read while worlds are built for the shipped scenarios and a scenario that
takes every path (trace, open loop with a profile, zipf, write-once, empirical
distributions, AOF, RDB, events, 6.2, huge pages), and while that one runs.
"""

from __future__ import annotations

import glob
import typing
import warnings
from pathlib import Path

import pytest
from pydantic import BaseModel

from redsim.config import load_scenario, schema
from redsim.config.directives import NOT_YET_MODELLED
from redsim.config.errors import UnmodelledDirectiveWarning
from redsim.config.loader import forget_warnings
from redsim.host.simulation import HostSimulation
from redsim.model.build import build_world
from redsim.simulation import Simulation
from redsim.traces import group_traces

ROOT = Path(__file__).resolve().parents[1]

READ_OUTSIDE_THE_MODEL = {
    "calibration": "merged into engine / disk / host by the loader",
    "redis_conf": "merged into server by the loader",
    "description": "words for the reader",
    "seed": "the default of Simulation(seed=...) and `redsim run --seed`",
    "server.unmodelled": "kept as conf text, warned about by the loader",
    "clients.surge.connections": "expanded by validation into a group of its own "
                                 "(schema._surge_groups)",
    "engine.cpu.distribution": "read through Cpu.service_dist(), which event_loop.configure "
                               "calls: a method runs on the model itself, out of the "
                               "recorder's sight",
    "server.active_defrag_max_scan_fields": "bounds the defrag scan of a big collection; "
                                            "every key is a string (collections: issue #21)",
    "host.preset": "fills host.l2 / llc / tlb-reach at validation (host_presets.fill)",
    "host.client_cpu": "fills the client-cpu of same-host groups without their own at "
                       "validation (schema._host_client_costs)",
    "host.client_cpu_per_command": "likewise their client-cpu-per-command",
    "events.config": "parsed at validation into ScenarioEvent.settings (each directive's "
                     "declared kernel scalar and its value), which model/admin.py writes",
    "engine.allocator": "read through Scenario.jemalloc (the build), which arena, tcache "
                        "and memory configure from: a property runs on the model itself, "
                        "out of the recorder's sight",
    "engine.allocator_quantum": "likewise: Scenario.jemalloc's quantum",
}


def _nested(t) -> bool:
    # Distributions and per-command costs are read whole (their attributes are
    # the normalised form, not YAML keys). An `instances: [...]` entry is read
    # whole too: its server, clients and events are the top-level sections'
    # models, read through the instance's own scenario (Scenario.listed_instances;
    # tests/test_host_instances.py shows each taking effect).
    return (isinstance(t, type) and issubclass(t, BaseModel)
            and not issubclass(t, schema._Dist) and t is not schema.CommandCost
            and t is not schema.Instance)


def _models(ann) -> list[type]:
    if isinstance(ann, type):
        return [ann] if _nested(ann) else []
    return [m for a in typing.get_args(ann) for m in _models(a)]


def schema_fields(model: type, prefix: str = "") -> set[str]:
    out: set[str] = set()
    for name, f in model.model_fields.items():
        subs = _models(f.annotation)
        if subs:
            for m in subs:
                out |= schema_fields(m, prefix + name + ".")
        else:
            out.add(prefix + name)
    return out


class Recorder:
    """Reads through to a validated model and notes the dotted path of each field read."""

    def __init__(self, obj, path: str, seen: set[str]) -> None:
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_seen", seen)

    def __getattr__(self, name):
        obj, path, seen = self._obj, self._path, self._seen
        value = getattr(obj, name)
        if name not in type(obj).model_fields:
            return value
        where = path + name
        if isinstance(value, BaseModel) and _nested(type(value)):
            return Recorder(value, where + ".", seen)
        if isinstance(value, list) and value and isinstance(value[0], BaseModel) \
                and _nested(type(value[0])):
            return [Recorder(v, where + ".", seen) for v in value]
        seen.add(where)
        return value


def _every_path() -> dict:
    trace = sorted(glob.glob(str(ROOT / "scenarios" / "traces" / "*.trace")))[0]
    return {
        "name": "every-path", "duration": 1, "warmup": 0.5, "sample-interval": 0.25,
        "redis-version": "6.2",
        "server": {"appendonly": "yes", "appendfsync": "always", "maxmemory": "10mb",
                   "maxmemory-policy": "allkeys-lfu", "save": "60 1", "disable-thp": "no"},
        "host": {"transparent-huge-pages": "always", "thp-cow": "copy-huge"},
        "disk": {"fsync": {"distribution": "empirical", "values": [0.001, 0.002, 0.01]}},
        "events": [{"at": 0.1, "do": "populate", "keys": 100, "value-size": 64},
                   {"at": 0.5, "do": "bgsave"},
                   {"at": 0.6, "do": "del", "pattern": "every", "every": 3},
                   {"at": 0.7, "do": "del", "pattern": "random", "fraction": 0.5,
                    "group": "closed"},
                   {"at": 0.8, "do": "memory-purge"},
                   {"at": 0.9, "do": "config-set", "config": {"activedefrag": "yes"}},
                   {"at": 0.95, "do": "flushall", "mode": "async"}],
        "replicas": [{"link-bandwidth": "1gbit", "start": "full-sync", "connect-at": 0.2},
                     {"start": "online", "apply-rate": "50mb/s"}],
        "clients": [
            {"name": "recorded", "kind": "trace", "trace": trace, "trace-timing": "recorded"},
            {"name": "looped", "kind": "trace", "trace": trace, "replay": "loop"},
            {"name": "open", "kind": "open", "processes": 3, "mix": {"GET": 1, "SET": 1},
             "profile": [{"at": 0, "rate": 100}, {"at": 0.5, "rate": 300}]},
            {"name": "phased", "kind": "open", "rate": 100, "mix": {"GET": 1},
             "phases": [{"at": 0.5, "rate": 200}]},
            {"name": "closed", "processes": 2, "threads": 4, "mix": {"GET": 3, "SET": 1},
             "think": {"distribution": "empirical", "quantiles": {"0.5": "1ms", "1.0": "5ms"}},
             "value-size": {"distribution": "uniform", "min": 10, "max": 100},
             "phases": [{"at": 0.3, "threads": 2, "think": "2ms"}],
             "keyspace": {"keys": 1000, "distribution": "zipf", "write-once": 0.3,
                          "preload": 0.5, "hot": {"share": 0.1, "keys": 10},
                          "recent": {"probability": 0.2, "window": 10}}},
        ],
    }


@pytest.fixture(scope="module")
def consumed() -> set[str]:
    seen: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in sorted(glob.glob(str(ROOT / "scenarios" / "*.yaml"))):
            sc = load_scenario(path)
            if max(g.keyspace.keys for g in sc.clients) <= 2_000_000:  # not the 60 GB S0
                rec = Recorder(sc, "", seen)
                build_world(rec, 1, traces=group_traces(rec))
        Simulation(Recorder(load_scenario(_every_path()), "", seen), seed=1,
                   progress=False).run()
        # The host's fields are read by its driver (redsim/host), around the kernels.
        host = load_scenario(ROOT / "scenarios" / "multi-instance.yaml",
                             overrides=["duration=0.2s", "warmup=0s", "sample-interval=0.1s",
                                        "instances=2", "clients[0].keyspace.keys=1000"])
        HostSimulation(Recorder(host, "", seen), seed=1, progress=False).run()
    return seen


def test_every_field_is_read_by_the_model_or_listed(consumed):
    not_yet = {"server." + n.replace("-", "_") for n in NOT_YET_MODELLED}
    unread = schema_fields(schema.Scenario) - consumed
    # Both ways: a listed field the model does read must leave the list.
    assert unread == set(READ_OUTSIDE_THE_MODEL) | not_yet, (
        f"read by nothing, not listed: {sorted(unread - set(READ_OUTSIDE_THE_MODEL) - not_yet)}; "
        f"listed but read: {sorted((set(READ_OUTSIDE_THE_MODEL) | not_yet) - unread)}")


def test_a_field_not_modelled_yet_warns_when_set(monkeypatch):
    # Every directive is modelled today; the warning is for the next one that
    # is read but not yet modelled, so a modelled one stands in for it here.
    directive, value = "lazyfree-lazy-user-del", "yes"
    monkeypatch.setitem(NOT_YET_MODELLED, directive, "deletes free on the main thread")
    forget_warnings()
    doc = {"name": "x", "clients": [{"name": "a"}], "server": {directive: value}}
    with pytest.warns(UnmodelledDirectiveWarning) as got:
        load_scenario(doc)
    text = " ".join(str(w.message) for w in got)
    assert directive in text and "not modelled yet" in text


def test_redis_defaults_do_not_warn():
    forget_warnings()
    doc = {"name": "x", "clients": [{"name": "a"}],
           "server": {"timeout": 0, "io-threads": 1, "maxmemory-clients": 0,
                      "client-query-buffer-limit": "1gb", "proto-max-bulk-len": "512mb"}}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnmodelledDirectiveWarning)
        load_scenario(doc)
