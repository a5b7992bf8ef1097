"""Every mechanism is registered once (redsim/model/mechanisms.py): the layout's
owners and the configure steps follow from the registry, and the Blueprint holds
each step to its entry: the sizes it needs and provides, the scalars its module
owns, and every config scalar written by some step."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from redsim.config import load_scenario
from redsim.model import build
from redsim.model import mechanisms as M
from redsim.model import state as S
from redsim.model.blueprint import Blueprint
from redsim.traces import group_traces

ROOT = Path(__file__).resolve().parent.parent

# The hand-kept tuples the registry replaced (state.OWNERS and build.STEPS at
# commit 0042c36), pasted once as the independent reference.
OWNERS_0042C36 = (
    "model.main_thread", "model.netstack", "model.io_threads", "model.event_loop",
    "model.clients", "model.network", "model.client_threads", "model.client_memory",
    "model.clients_cron",
    "model.client_close", "model.client_eviction", "model.protocol",
    "model.call", "model.cpu_caches", "model.scripts", "model.locality", "model.db",
    "model.objects", "model.bigkeys",
    "model.collection", "model.lazyfree", "model.arena", "model.nonfull",
    "model.tcache", "model.rss",
    "model.admin", "model.memory",
    "model.eviction", "model.lfu", "model.expire",
    "model.aof", "model.disk", "model.fork", "model.replication_buffer", "model.replication",
    "model.cow", "model.defrag", "model.latency",
    "model.events",
    "model.heap", "model.wheel", "model.rng", "observe.bins", "observe.groups",
    "observe.stalls",
)
STEPS_0042C36 = (
    "model.main_thread", "model.disk", "model.clients", "model.network",
    "model.client_threads", "model.call", "model.scripts", "model.locality",
    "model.collection", "model.bigkeys", "model.cpu_caches", "model.lazyfree", "model.admin",
    "model.db", "model.memory", "model.arena", "model.tcache", "model.rss",
    "model.clients_cron", "model.client_eviction", "model.protocol", "model.eviction",
    "model.expire", "model.defrag", "model.events", "model.rng", "observe.bins",
    "observe.groups", "observe.stalls", "model.latency", "model.aof", "model.fork",
    "model.replication", "model.event_loop", "model.io_threads",
)
START_0042C36 = ("model.arena", "model.rss", "model.db", "model.bigkeys", "model.aof")
# Steps added since, each right after the step named: all but the preload take
# over the writes of the step they follow (a step writes only its own module's
# scalars and fields: objects, nonfull and cow took over the key rows' arena
# handles, the bins' non-full sets and the page bitmap); the preload's plans
# the keys for which the next step, db's, lays out rows (issue #44:
# db.configure no longer imports the preload above it).
NEW_STEPS = {"model.client_memory": "model.memory", "model.lfu": "model.eviction",
             "model.heap": "model.events", "model.wheel": "model.heap",
             "model.cow": "model.fork", "model.replication_buffer": "model.replication",
             "model.preload": "model.admin", "model.objects": "model.db",
             "model.nonfull": "model.arena"}
# Start steps moved since to another module, at the same place in the order:
# placing the preloaded keys went from db.start to preload.start with the plan.
MOVED_STARTS = {"model.db": "model.preload"}
# Modules split out of model.clients since (issue #44), each placed in the
# layout after the one named. Their steps run where clients' ran, in the order
# their parts ran inside clients.configure: the pools, the sources' think times
# before clients' own (the value sizes), the phases' think times after (the
# order the empirical tables are appended in).
NEW_OWNERS = {"model.pools": "model.clients", "model.sources": "model.pools",
              "model.client_lifecycle": "model.sources",
              "model.client_requests": "model.client_lifecycle",
              "model.client_failures": "model.client_requests"}
# Modules whose state and step moved into another's (issue #44): bigkeys
# filled the collections' table (cl), which collection.py reads and writes in
# the kernel; collection now declares and fills it, big keys' rows first
# (bigkeys.table_rows), at collection's rank, just before bigkeys' old one (what
# moved earlier is its slab demand, which arena.configure sums in any order).
MERGED = {"model.bigkeys": "model.collection"}
SPLIT_STEPS = ("model.pools", "model.sources", "model.clients", "model.client_lifecycle",
               "model.client_requests", "model.client_failures")


def _entry(module: str) -> M.Mechanism:
    return next(m for m in M.MECHANISMS if m.module == module)


def _scenario():
    return load_scenario({"name": "u", "duration": 1, "clients": [{"name": "a"}]})


def test_owners_and_steps_follow_from_the_registry_in_the_old_order():
    assert tuple(m for m in S.OWNERS if m not in NEW_OWNERS) \
        == tuple(m for m in OWNERS_0042C36 if m not in MERGED)
    for new, after in NEW_OWNERS.items():
        assert S.OWNERS[S.OWNERS.index(new) - 1] == after
    order = [m.module for m, _configure in build.STEPS]
    assert [m for m in order if m not in NEW_STEPS and m not in NEW_OWNERS] \
        == [m for m in STEPS_0042C36 if m not in MERGED]
    split = order.index("model.pools")
    assert tuple(order[split - 1:split + len(SPLIT_STEPS)]) == ("model.disk",) + SPLIT_STEPS
    for new, after in NEW_STEPS.items():
        assert order[order.index(new) - 1] == after
    assert [m.module for m, _start in build.START] == [MOVED_STARTS.get(m, m)
                                                       for m in START_0042C36]
    assert all(f.__name__ == "configure" and f.__module__ == f"redsim.{m.module}"
               for m, f in build.STEPS)


def test_every_module_with_state_or_a_configure_is_registered():
    # Registering once means nowhere else to forget: a FIELDS block or a
    # configure(b) in a module the registry does not list is caught here.
    for sub in ("model", "observe"):
        for p in sorted((ROOT / "redsim" / sub).glob("*.py")):
            text = p.read_text(encoding="utf-8")
            module = f"{sub}.{p.stem}"
            entry = next((m for m in M.MECHANISMS if m.module == module), None)
            has_fields = re.search(r"^FIELDS = \(", text, re.M) is not None
            has_configure = re.search(r"^def configure\(b\)", text, re.M) is not None
            assert has_fields == (entry is not None and entry.state), module
            assert has_configure == (entry is not None and entry.step is not None), module


def test_a_step_writing_a_scalar_another_mechanism_owns_fails_the_build(monkeypatch):
    def memory_configure(b):  # as memory.configure did before client_memory had a step
        b.I[S.CLIENT_STRUCT] = 768

    steps = tuple((m, memory_configure if m.module == "model.memory" else f)
                  for m, f in build.STEPS)
    monkeypatch.setattr(build, "STEPS", steps)
    with pytest.raises(RuntimeError, match=re.escape(
            "model.memory's step writes I[CLIENT_STRUCT], which model.client_memory owns")):
        build.build_world(_scenario(), 1)


def test_a_step_filling_a_field_another_mechanism_declares_fails_the_build(monkeypatch):
    def fork_configure(b):  # as fork.configure did before cow filled its own bitmap
        configure_fork(b)
        b.fill("pg", cow=np.zeros(int(b.I[S.PG_WORDS]), np.int64))

    configure_fork = dict((m.module, f) for m, f in build.STEPS)["model.fork"]
    steps = tuple((m, fork_configure if m.module == "model.fork" else f)
                  for m, f in build.STEPS)
    monkeypatch.setattr(build, "STEPS", steps)
    with pytest.raises(RuntimeError, match=re.escape(
            "model.fork's configure fills pg_cow (model.cow), which another module declares")):
        build.build_world(_scenario(), 1)
    # A field the step's entry shares is let through (then filled twice here).
    b = Blueprint(_scenario(), 1)
    with b.running(_entry("model.fork")._replace(shares=("pg_cow",))):
        b.fill("pg", cow=np.zeros(1, np.int64))
    assert list(b.part("pg")) == ["cow"]


@pytest.mark.slow  # ~40 s: every scenario's keyspace is planned and preloaded
@pytest.mark.filterwarnings("ignore:.*keyspace.preload would put")
def test_every_shipped_scenario_builds_with_each_step_filling_its_own_fields():
    # Build only (no run): Blueprint.fill refuses a step filling a field its
    # module does not declare, so a build that succeeds is the check.
    paths = sorted((ROOT / "scenarios").glob("*.yaml"))
    assert paths
    for path in paths:
        sc = load_scenario(path)
        sc = sc.model_copy(update={"duration": min(sc.duration, 1.0)})
        build.build_world(sc, 1, traces=group_traces(sc))


def test_a_config_scalar_no_step_wrote_fails_the_build():
    b = Blueprint(_scenario(), 1)
    for m, configure in build.STEPS:
        if m.module != "model.lfu":  # as if lfu-log-factor were left at 0
            with b.running(m):
                configure(b)
    with b.running(_entry("model.rss")):
        b.I[S.AL_META_BASE] = 0  # rss.start's, which needs the laid-out world
    with pytest.raises(RuntimeError) as e:
        b.finish()
    assert "no configure step wrote the config scalar(s) I[LFU_LOG_FACTOR] (model.lfu), " \
           "I[LFU_DECAY_TIME] (model.lfu)" in str(e.value)
    # Written is what counts, whatever the value (0 included).
    with b.running(_entry("model.lfu")):
        b.I[S.LFU_LOG_FACTOR] = b.I[S.LFU_DECAY_TIME] = 0
    b.finish()


def test_a_step_needing_a_size_no_earlier_step_provides_is_refused():
    early_fork = tuple(m._replace(step=137) if m.module == "model.fork" else m
                       for m in M.MECHANISMS)  # before db, which provides key_rows_created
    with pytest.raises(RuntimeError, match=re.escape(
            "model.fork's step (rank 137) needs size 'key_rows_created', which no earlier "
            "step provides (model.db runs later)")):
        M.check(early_fork)
    typo = tuple(m._replace(needs=("conn",)) if m.module == "model.scripts" else m
                 for m in M.MECHANISMS)
    with pytest.raises(RuntimeError, match=r"model.scripts: \['conn'\] are not sizes"):
        M.check(typo)
    twice = M.MECHANISMS + (M.Mechanism("model.db", step=999),)
    with pytest.raises(RuntimeError, match=r"\['model.db'\] registered twice"):
        M.check(twice)
    same_rank = tuple(m._replace(step=10) if m.module == "model.disk" else m
                      for m in M.MECHANISMS)
    with pytest.raises(RuntimeError, match=r"two steps have rank \[10\]"):
        M.check(same_rank)


def test_a_step_reads_and_sets_only_the_sizes_its_entry_names():
    b = Blueprint(_scenario(), 1)
    with pytest.raises(AttributeError, match="size 'conns' read before any step set it "
                                             r"\(provided by model.pools\)"):
        _ = b.size.conns
    with pytest.raises(AttributeError, match="no size 'conn'; the sizes are conns, "):
        _ = b.size.conn
    with b.running(_entry("model.pools")):
        b.size.conns = 3
        with pytest.raises(AttributeError, match="size 'conns' set twice"):
            b.size.conns = 4
        with pytest.raises(AttributeError, match="model.pools.configure sets size "
                                                 "'once_lo', which only model.db provides"):
            b.size.once_lo = 1
    with b.running(_entry("model.sources")):
        b.size.slots = b.size.timed = 1
    with pytest.raises(RuntimeError, match=re.escape(
            "model.sources.configure did not set size(s) ['slots', 'timed']")):
        with Blueprint(_scenario(), 1).running(_entry("model.sources")):
            pass  # sets nothing
    with b.running(_entry("model.scripts")):
        assert b.size.conns == 3
        with pytest.raises(AttributeError, match="model.scripts.configure reads size 'slots': "
                                                 "add it to its needs"):
            _ = b.size.slots
    assert b.size.conns == 3  # outside the steps (``start``), any set size reads


def test_a_step_reading_a_scalar_a_later_step_writes_fails_the_build(monkeypatch):
    # observe.groups sizes its arrays from bins' windows (I[N_WIN]); ranked
    # before bins, it would read the 0 N_WIN starts at.
    steps = tuple(sorted(build.STEPS, key=lambda s: 265 if s[0].module == "observe.groups"
                         else s[0].step))  # bins is 270
    monkeypatch.setattr(build, "STEPS", steps)
    with pytest.raises(RuntimeError, match=re.escape(
            "observe.groups's step reads I[N_WIN] before observe.bins's step wrote it")):
        build.build_world(_scenario(), 1)


def test_the_client_sides_steps_fill_only_their_own_modules_fields(monkeypatch):
    # clients.configure filled every client-side field (and client_memory's)
    # before the split; now each step fills what its module declares.
    owner = {(pre, f.name): f.owner for pre, fields in S.LAYOUT.parts.items() for f in fields}
    client_side = {"model.clients", *NEW_OWNERS, "model.client_memory"}
    foreign = []
    fill = Blueprint.fill

    def checked(self, pre, **fields):
        if self.step is not None and self.step.module in client_side:
            foreign.extend((self.step.module, pre, k, owner[(pre, k)]) for k in fields
                           if owner[(pre, k)] != self.step.module)
        return fill(self, pre, **fields)

    monkeypatch.setattr(Blueprint, "fill", checked)
    sc = load_scenario({"name": "u", "duration": 1, "clients": [
        {"name": "a", "timeout": "5ms", "phases": [{"at": 0.5, "threads": 1}]},
        {"name": "b", "kind": "open", "rate": "1k/s", "stop": 0.5}]})
    build.build_world(sc, 1)
    assert foreign == []
