"""A directive is declared once, on its ``Server`` field (``config/declare.py``),
and the lists other code reads are made from the declarations: the modelled
directives, what a ``config-set`` event may change, the fields a shared start
ignores, and the listpack thresholds' defaults.

The ``*_BEFORE`` literals are the lists as they were kept by hand until the
declarations replaced them (issue #44): each generated list is checked once
against its hand-kept ancestor, which nothing generated."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import BaseModel

from redsim.config.declare import Directive, NotKeyspace, directives, not_keyspace
from redsim.config.loader import NOT_KEYSPACE, keyspace_hash
from redsim.config.schema import (
    DIRECTIVES,
    MODELLED_DIRECTIVES,
    RUNTIME_SETTABLE,
    Scenario,
    ScenarioEvent,
    Server,
)
from redsim.model import state as S
from redsim.model.blueprint import Blueprint
from redsim.model.encoding import Limits

ROOT = Path(__file__).resolve().parents[1]

MODELLED_BEFORE = {
    "repl-backlog-size", "repl-backlog-ttl", "client-output-buffer-limit", "repl-diskless-sync",
    "repl-diskless-sync-delay", "repl-diskless-sync-max-replicas", "repl-timeout",
    "repl-ping-replica-period", "min-replicas-to-write", "min-replicas-max-lag", "hz",
    "dynamic-hz", "maxclients", "timeout", "maxmemory", "maxmemory-policy", "maxmemory-samples",
    "maxmemory-eviction-tenacity", "lfu-log-factor", "lfu-decay-time", "lazyfree-lazy-eviction",
    "lazyfree-lazy-expire", "lazyfree-lazy-server-del", "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush", "active-expire-effort", "appendonly", "appendfsync",
    "no-appendfsync-on-rewrite", "auto-aof-rewrite-percentage", "auto-aof-rewrite-min-size",
    "disable-thp", "save", "io-threads", "io-threads-do-reads", "client-query-buffer-limit",
    "proto-max-bulk-len", "maxmemory-clients", "latency-monitor-threshold", "activedefrag",
    "active-defrag-ignore-bytes", "active-defrag-threshold-lower",
    "active-defrag-threshold-upper", "active-defrag-cycle-min", "active-defrag-cycle-max",
    "active-defrag-max-scan-fields", "hash-max-listpack-entries", "hash-max-listpack-value",
    "set-max-intset-entries", "set-max-listpack-entries", "set-max-listpack-value",
    "zset-max-listpack-entries", "zset-max-listpack-value", "list-max-listpack-size",
    "busy-reply-threshold",
}
"""``config/directives.py``'s ``MODELLED_DIRECTIVES`` at commit 0042c36."""

SETTABLE_BEFORE = {
    "activedefrag": "DF_ENABLED", "active-defrag-ignore-bytes": "DF_IGNORE_BYTES",
    "active-defrag-threshold-lower": "DF_LOWER", "active-defrag-threshold-upper": "DF_UPPER",
    "active-defrag-cycle-min": "DF_MIN", "active-defrag-cycle-max": "DF_MAX",
}
"""``model/defrag.py``'s ``SETTABLE`` at commit 0042c36 (its scalars by name),
whose keys were ``schema.RUNTIME_SETTABLE``."""

NOT_KEYSPACE_BEFORE = {
    ("name",), ("description",), ("warmup",), ("sample-interval",), ("stall-threshold",),
    *(("server", f) for f in (
        "hz", "dynamic-hz", "maxclients", "timeout", "maxmemory-samples",
        "maxmemory-eviction-tenacity", "busy-reply-threshold", "active-expire-effort",
        "appendfsync", "no-appendfsync-on-rewrite", "auto-aof-rewrite-percentage",
        "auto-aof-rewrite-min-size", "io-threads", "io-threads-do-reads",
        "client-query-buffer-limit", "maxmemory-clients", "latency-monitor-threshold",
        "client-output-buffer-limit", "repl-backlog-size", "repl-backlog-ttl",
        "repl-diskless-sync", "repl-diskless-sync-delay", "repl-diskless-sync-max-replicas",
        "repl-timeout", "repl-ping-replica-period", "min-replicas-to-write",
        "min-replicas-max-lag")),
    ("engine", "cpu"), ("engine", "reply-batching"), ("engine", "io-threads-model"),
    ("network",), ("disk",), ("replicas",),
    *(("host", f) for f in (
        "cores", "quantum", "context-switch", "scheduler-window", "network", "fork",
        "fork-per-gb", "fork-fixed", "cow-fault", "cow-copy-bandwidth",
        "child-keys-per-sec")),
    *(("clients", "*", f) for f in (
        "name", "pool", "placement", "client-cpu", "client-threads", "timeout",
        "connect-timeout", "reconnect", "tls")),
}
"""``model/keyspace_image.py``'s ``NOT_KEYSPACE`` at commit 0042c36."""


def test_the_generated_lists_are_the_hand_kept_ones():
    assert MODELLED_DIRECTIVES == MODELLED_BEFORE
    assert RUNTIME_SETTABLE == SETTABLE_BEFORE
    assert set(NOT_KEYSPACE) == NOT_KEYSPACE_BEFORE
    assert len(NOT_KEYSPACE) == len(NOT_KEYSPACE_BEFORE)  # no path twice


def test_the_listpack_thresholds_default_to_the_server_fields():
    # encoding.Limits' own defaults until the fields became their only source.
    assert Limits.of(Scenario()) == Limits("7.2", 512, 64, 512, 128, 64, 128, 64, -2)


def test_every_server_field_but_unmodelled_declares_its_directive():
    assert set(Server.model_fields) - set(f.replace("-", "_") for f in DIRECTIVES) == \
        {"unmodelled"}

    class Forgotten(BaseModel):
        declared: Annotated[int, Directive("model/eviction.py")] = 0
        bare: int = 0

    with pytest.raises(TypeError, match=r"Forgotten\.bare declares no Directive"):
        directives(Forgotten)


def test_each_declaration_names_a_module_that_exists():
    for name, d in DIRECTIVES.items():
        assert (ROOT / "redsim" / d.reads).is_file(), (name, d.reads)


@pytest.mark.parametrize("name", sorted(RUNTIME_SETTABLE))
def test_a_runtime_scalar_is_the_one_its_module_configures_from_the_field(name):
    # The scalar a CONFIG SET writes must be the one the build fills from the
    # same field, in the module the declaration names: set a value other than
    # the default and see it there.
    d = DIRECTIVES[name]
    scalar = S.LAYOUT.fields[[f.name for f in S.LAYOUT.fields].index(d.runtime)]
    assert (scalar.where, scalar.owner) == ("I", d.reads[:-3].replace("/", "."))
    field = Server.model_fields[name.replace("-", "_")]
    value, expected = ("yes", 1) if field.default is False else (field.default + 1,) * 2
    sc = Scenario.model_validate({"server": {name: value}})
    b = Blueprint(sc, 1)
    importlib.import_module(f"redsim.{scalar.owner}").configure(b)
    assert b.I[S.LAYOUT.index[d.runtime]] == expected


def test_a_config_set_event_carries_the_scalars_and_parsed_values():
    ev = ScenarioEvent.model_validate({"at": 1, "do": "config-set", "config": {
        "ACTIVEDEFRAG": "yes", "active_defrag_ignore_bytes": "1mb",
        "active-defrag-cycle-max": 50}})
    assert ev.settings == (("DF_ENABLED", 1), ("DF_IGNORE_BYTES", 1 << 20), ("DF_MAX", 50))
    assert ScenarioEvent.model_validate({"at": 1, "do": "bgsave"}).settings == ()


def test_a_section_or_a_field_declared_outside_the_keyspace_is_one_path():
    class Inner(BaseModel):
        shapes: int = 0
        ignored: Annotated[int, NotKeyspace()] = 0

    class Outer(BaseModel):
        one: Inner = Inner()
        many: list[Inner] = []
        maybe: Inner | None = None
        whole: Annotated[Inner, NotKeyspace()] = Inner()
        knob: Annotated[int, Directive("model/eviction.py", keyspace=False)] = 0
        kept: Annotated[int, Directive("model/eviction.py")] = 0

    assert not_keyspace(Outer) == (("one", "ignored"), ("many", "*", "ignored"),
                                   ("maybe", "ignored"), ("whole",), ("knob",))


def test_the_keyspace_hash_ignores_exactly_the_declared_fields():
    base = Scenario.model_validate({"clients": [{"name": "a", "rate": 100, "kind": "open"}]})
    same = Scenario.model_validate({"server": {"hz": 50}, "engine": {"cpu": {"read": 9}},
                                    "clients": [{"name": "b", "rate": 100, "kind": "open",
                                                 "pool": {"max-size": 3}}]})
    other = Scenario.model_validate({"server": {"maxmemory": "1gb"},
                                     "clients": [{"name": "a", "rate": 100, "kind": "open"}]})
    assert keyspace_hash(base, 1) == keyspace_hash(same, 1)
    assert keyspace_hash(base, 1) != keyspace_hash(other, 1)
    assert keyspace_hash(base, 1) != keyspace_hash(base, 2)
