"""The scenario itself: its top-level keys (name, duration, warm-up, seed,
sampling, the files it draws on) and its sections (``Scenario``), the
``instances:`` a host runs (``Instance``), and what the loader does to the raw
mapping before validation (naming client groups, splitting a surge's
connections into a group of their own, giving same-host groups the host's
client costs, merging an instance's ``server:`` over the scenario's).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Annotated, Any, get_args

from pydantic import AliasChoices, Discriminator, Field, Tag, model_validator

from redsim.config.declare import NotKeyspace
from redsim.config.errors import BadValue, show
from redsim.config.schema.big_keys import BigKey
from redsim.config.schema.clients import ClientGroup, Network
from redsim.config.schema.engine import Engine
from redsim.config.schema.events import ScenarioEvent
from redsim.config.schema.host import Disk, Host
from redsim.config.schema.replicas import Replica
from redsim.config.schema.server import Server, _directive
from redsim.config.schema.types import (
    MAX_CONNECTIONS,
    MAX_IN_FLIGHT,
    MAX_KEYS,
    MAX_REQUEST_SLOTS,
    MAX_SAMPLES_PER_RUN,
    MIN_CYCLE_S,
    NonNegInt,
    PositiveSeconds,
    RedisVersion,
    Seconds,
    _Model,
    _v,
)
from redsim.config.units import parse_int
from redsim.model.commands import COMMANDS, EFFECT_WRITE
from redsim.model.presets import (
    ALLOCATOR_BUILDS,
    BUNDLED_ALLOCATOR,
    DISK_PRESETS,
    AllocatorBuild,
)
from redsim.model.sizing import connection_rows, request_slots, write_once_rows_bound


def _parse_version(v: Any) -> str:
    # YAML reads `6.2` as a float and `7` as an int; accept those and "7.2.4".
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        v = f"{float(v):.1f}" if math.isfinite(v) else str(v)
    if isinstance(v, str):
        parts = v.strip().split(".")
        if len(parts) == 1:
            parts.append("0")
        short = ".".join(parts[:2])
        if short in get_args(RedisVersion):
            return short
    raise BadValue("a Redis version: one of '6.2', '7.0', '7.2'", show(v))


def _parse_clients(v: Any) -> Any:
    if isinstance(v, list) and not v:
        raise BadValue("at least one client group", "an empty list")
    return v


def _default_clients() -> list[ClientGroup]:
    return [ClientGroup(name="group0")]


def _name_groups(data: Any, host: Any = None) -> Any:
    """Name unnamed client groups by position (``group0``, ...), so that results and
    errors can refer to them; give a same-host group without client costs of its
    own the host's (``Host.client_cpu``), from ``host`` (the scenario's raw
    ``host:`` section; default: ``data``'s own)."""
    if not isinstance(data, dict) or not isinstance(data.get("clients"), list):
        return data
    host = data.get("host") if host is None else host
    groups = []
    for i, group in enumerate(data["clients"]):
        if isinstance(group, dict) and group.get("name") is None:
            group = {**group, "name": f"group{i}"}
        groups.extend(_surge_groups(_host_client_costs(group, host)))
    return {**data, "clients": groups}


_HOST_CLIENT_COSTS = (("client-cpu", "client_cpu"),
                      ("client-cpu-per-command", "client_cpu_per_command"))


def _host_client_costs(group: Any, host: Any) -> Any:
    """``group`` with the host's ``client-cpu`` / ``client-cpu-per-command`` where
    it is a same-host group that does not set them itself."""
    if not (isinstance(group, dict) and isinstance(host, dict)
            and group.get("placement") == "same-host"):
        return group
    for names in _HOST_CLIENT_COSTS:
        given = next((host[n] for n in names if host.get(n) is not None), None)
        if given is not None and not any(n in group for n in names):
            group = {**group, names[0]: given}
    return group


def _surge_groups(group: Any) -> list[Any]:
    """A closed group with ``surge: {every, for, connections: N}`` as the two groups
    it stands for: itself without the surge, and ``<name>-surge``, N one-connection
    clients with the same load that run only during surges (``Surge``)."""
    surge = group.get("surge") if isinstance(group, dict) else None
    if not isinstance(surge, dict) or surge.get("connections") is None \
            or group.get("kind", "closed") != "closed":
        return [group]
    base = {k: v for k, v in group.items() if k != "surge"}
    pool = group.get("pool") if isinstance(group.get("pool"), dict) else {}
    pool = {k: v for k, v in pool.items() if k not in ("max-size", "max_size")}
    extra = {**base, "name": f"{group['name']}-surge", "processes": surge["connections"],
             "threads": 1, "pool": {**pool, "max-size": 1},
             "surge": {k: v for k, v in surge.items() if k != "connections"}}
    return [base, extra]


def _instance_name(v: Any) -> str:
    if not isinstance(v, str) or not v or not all(ch.isalnum() or ch in "-_" for ch in v):
        raise BadValue("a name of letters, digits, - and _", show(v))
    return v


class Instance(_Model):
    """One Redis instance of the host with a configuration and a load of its own
    (``instances: [{name: cache, server: {...}, clients: [...]}, ...]``)."""

    name: Annotated[str, _v(_instance_name)]
    """The instance's name in the results (its per-instance row, its figures)."""
    server: Server = Field(default_factory=Server)
    """Its directives: the scenario's ``server:`` with these keys over it."""
    clients: Annotated[list[ClientGroup], _v(_parse_clients)]
    """Its client groups (the scenario's top-level ``clients:`` is not used)."""
    events: list[ScenarioEvent] = Field(default_factory=list)
    """Commands run on this instance only (``{at: 10s, do: bgsave}``), in time order;
    the scenario's ``events:`` run on every instance."""

    @model_validator(mode="before")
    @classmethod
    def _name_groups(cls, data: Any) -> Any:
        return _name_groups(data)


INSTANCE_TAGS = ("instances: a count", "instances: a list")
"""The tags of ``Scenario.instances``' two forms, which pydantic puts in an error's
location; the loader leaves them out of the path it shows."""


def _instances_form(v: Any) -> str:
    return INSTANCE_TAGS[1] if isinstance(v, list | tuple) else INSTANCE_TAGS[0]


def _merge_server(top: Any, own: Any) -> Any:
    """An instance's raw ``server:`` mapping over the scenario's, keys compared as
    Redis compares directives (case and - or _ alike)."""
    if not isinstance(top, dict) or not isinstance(own, dict):
        return own
    return {**{_directive(k): v for k, v in top.items()},
            **{_directive(k): v for k, v in own.items()}}


class Scenario(_Model):
    """A Redis deployment and its workload, fully validated."""

    name: Annotated[str, NotKeyspace()] = "scenario"
    description: Annotated[str, NotKeyspace()] = ""
    redis_version: Annotated[RedisVersion, _v(_parse_version)] = "7.2"
    duration: PositiveSeconds = 60.0
    """Simulated time, s."""
    warmup: Annotated[Seconds, NotKeyspace()] = 0.0
    """Initial time excluded from statistics, s; < duration."""
    seed: NonNegInt = 0
    """Root seed of all random streams."""
    sample_interval: Annotated[PositiveSeconds, NotKeyspace()] = 1.0
    """Period of the INFO-like samples, s; ≤ duration."""
    stall_threshold: Annotated[PositiveSeconds, NotKeyspace()] = 0.01
    """A stall is the main thread held on one thing (a fork, a write behind an
    fsync, an expiry or eviction cycle, one client's commands) at least this
    long, s. Stalls are listed with their cause in ``Result.stalls`` and counted
    in the summary (``stalls``, ``stall_causes``). 10 ms: a hundred requests'
    worth of a busy Redis, and ten times a 1 ms p99 objective."""
    redis_conf: str | None = Field(
        default=None,
        validation_alias=AliasChoices("redis_conf", "redis-conf"),
        serialization_alias="redis_conf",
    )
    """A redis.conf whose directives fill `server` (path as resolved by the loader)."""
    calibration: str | None = None
    """A calibration file from ``redsim calibrate`` whose values fill ``engine``,
    ``disk`` and ``host`` below this file's own keys (path as resolved by the loader)."""
    server: Server = Field(default_factory=Server)
    engine: Engine = Field(default_factory=Engine)
    network: Annotated[Network, NotKeyspace()] = Field(default_factory=Network)
    disk: Annotated[Disk, NotKeyspace()] = Field(default_factory=Disk)
    host: Host = Field(default_factory=Host)
    big_keys: list[BigKey] = Field(default_factory=list)
    """Collections in the dataset from the start, each with its own name
    (``model/bigkeys.py``): what ``del`` and ``unlink`` events delete."""
    replicas: Annotated[list[Replica], NotKeyspace()] = Field(default_factory=list)
    """Replicas of this server (``model/replication.py``): each entry a link and
    a replica's speeds, with a ``count``."""
    events: list[ScenarioEvent] = Field(default_factory=list)
    """Commands run at given times (``{at: 30s, do: bgsave}``), in time order."""
    clients: Annotated[list[ClientGroup], _v(_parse_clients)] = Field(
        default_factory=_default_clients
    )
    instances: Annotated[
        Annotated[int, _v(parse_int, minimum=1, maximum=256), Tag(INSTANCE_TAGS[0])]
        | Annotated[list[Instance], Field(min_length=1, max_length=256), Tag(INSTANCE_TAGS[1])],
        Discriminator(_instances_form)] = 1
    """Redis instances on the host (``redsim/host/instances.py``). A number N: N
    instances, each with ``server`` and an even share of the clients, keyspace and
    ``maxmemory`` (seed S4's partitioning). A list: one instance per entry, each
    with its own name, ``server:`` keys (over the scenario's) and ``clients:``. With
    more than one instance, or a list, ``simulate`` returns a ``HostResult``."""

    @model_validator(mode="before")
    @classmethod
    def _name_groups(cls, data: Any) -> Any:
        data = _name_groups(data)
        # Each listed instance's server: is the scenario's with its own keys over
        # it; its same-host groups take the host's client costs as the top's do.
        if isinstance(data, dict) and isinstance(data.get("instances"), list):
            top = data.get("server") or {}
            data = {**data, "instances": [
                _name_groups({**inst, "server": _merge_server(top, inst.get("server") or {})},
                             data.get("host"))
                if isinstance(inst, dict) else inst for inst in data["instances"]]}
        return data

    @property
    def jemalloc(self) -> AllocatorBuild:
        """The jemalloc build the scenario's Redis runs on: ``engine.allocator``,
        or the one bundled with ``redis-version``; ``engine.allocator-quantum``
        over its quantum."""
        build = ALLOCATOR_BUILDS[self.engine.allocator or BUNDLED_ALLOCATOR[self.redis_version]]
        if self.engine.allocator_quantum is not None:
            build = replace(build, quantum=self.engine.allocator_quantum)
        return build

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if self.warmup >= self.duration:
            raise BadValue(f"a warmup shorter than the duration ({self.duration:g} s)",
                           f"{self.warmup:g} s", field=("warmup",))
        if self.sample_interval > self.duration:
            raise BadValue(f"a sample-interval ≤ the duration ({self.duration:g} s)",
                           f"{self.sample_interval:g} s", field=("sample-interval",))
        # Statistics after the warm-up come from the sample windows that start at
        # or after it (result.py); with none, a run has nothing to report.
        dt = self.sample_interval
        last_start = (math.ceil(self.duration / dt - 1e-9) - 1) * dt
        if self.warmup > last_start + 1e-9:
            raise BadValue(f"a warmup of at most {last_start:g} s: the statistics come from "
                           f"the sample windows starting at or after it (0, {dt:g} s, ... "
                           f"before the duration, {self.duration:g} s); or a shorter "
                           "sample-interval", f"{self.warmup:g} s", field=("warmup",))
        samples = self.duration / self.sample_interval
        if samples > MAX_SAMPLES_PER_RUN:
            # The run keeps every sample in memory (~2 KB each at its peak).
            longest = MAX_SAMPLES_PER_RUN * self.sample_interval
            raise BadValue(f"at most {MAX_SAMPLES_PER_RUN:,} samples per run (duration / "
                           f"sample-interval); with sample-interval {self.sample_interval:g} s "
                           f"a duration of at most {longest:g} s",
                           f"{self.duration:g} s, {samples:,.0f} samples", field=("duration",))
        for i, ev in enumerate(self.events):
            if not 0 <= ev.at < self.duration:
                raise BadValue(f"an event time in [0, duration = {self.duration:g} s)",
                               f"{ev.at:g} s", field=("events", i, "at"))
            # The list is documented as in time order; one out of order is most
            # likely a typo (30s for 300s), so it is reported rather than sorted.
            if i and ev.at < self.events[i - 1].at:
                raise BadValue(f"events in time order (at ≥ {self.events[i - 1].at:g} s, "
                               f"the time of events[{i - 1}])",
                               f"{ev.at:g} s", field=("events", i, "at"))
        seen: dict[str, int] = {}
        for i, group in enumerate(self.clients):
            name = group.name or f"group{i}"
            if name in seen:
                raise BadValue("unique client group names",
                               f"{name!r} again (also clients[{seen[name]}])",
                               field=("clients", i, "name"))
            seen[name] = i
        names: dict[str, int] = {}
        for i, big in enumerate(self.big_keys):
            if big.name in names:
                raise BadValue("unique big-key names", f"{big.name!r} again (also "
                               f"big-keys[{names[big.name]}])", field=("big-keys", i, "name"))
            names[big.name] = i
        if self.big_keys and self.instance_count > 1:
            raise BadValue("big-keys with one instance (several instances cannot share them "
                           "yet)", f"{self.instance_count} instances", field=("big-keys",))
        for i, ev in enumerate(self.events):
            if ev.key is not None and ev.key not in names:
                known = ", ".join(map(repr, names)) or "none declared"
                raise BadValue(f"the name of one of big-keys ({known})", repr(ev.key),
                               field=("events", i, "key"))
            if ev.group is not None and ev.group not in seen:
                raise BadValue(f"a client group's name ({', '.join(map(repr, seen))})",
                               repr(ev.group), field=("events", i, "group"))
            if ev.do == "del" and ev.key is None and ev.group is None and not any(
                    e.do == "populate" for e in self.events[:i]):
                raise BadValue("a populate event before a del with no group (it deletes "
                               "populated keys), or a group", "neither",
                               field=("events", i, "pattern"))
        for i, group in enumerate(self.clients):
            ks = group.keyspace
            ttls = [m.ttl for m in group.mix  # the TTL the written keys get
                    if m.ttl and COMMANDS[m.command.upper()].effect == EFFECT_WRITE]
            if (ks.write_once > 0 and ks.history is None and not ttls
                    and self.server.maxmemory == 0):
                raise BadValue("a history (how long the workload ran before time 0), a TTL on "
                               "the writes or a maxmemory: without one the write-once keys "
                               "present at the start have no bound", "none of them",
                               field=("clients", i, "keyspace", "history"))
        self._check_size()
        if self.redis_version == "6.2" and self.server.maxmemory_clients > 0:
            raise BadValue("maxmemory-clients 0 with redis-version 6.2 (client eviction is new "
                           "in Redis 7.0)", show(self.server.maxmemory_clients),
                           field=("server", "maxmemory-clients"))
        for i, rep in enumerate(self.replicas):
            if rep.dual_channel != self.replicas[0].dual_channel:
                raise BadValue("the same dual-channel for every replicas entry (a primary "
                               "forks for the replicas of one kind of sync at a time)",
                               f"{'yes' if rep.dual_channel else 'no'} (replicas[0] says "
                               f"{'yes' if self.replicas[0].dual_channel else 'no'})",
                               field=("replicas", i, "dual-channel"))
            if rep.dual_channel and self.redis_version == "6.2":
                raise BadValue("dual-channel with redis-version 7.0 or later (it streams "
                               "from the shared replication buffer)", "6.2",
                               field=("replicas", i, "dual-channel"))
        if isinstance(self.instances, list):
            self._check_listed_instances()
        n = self.instances if isinstance(self.instances, int) else 1
        for i, group in enumerate(self.clients):
            if n > 1 and group.kind != "open" and group.processes < n:
                raise BadValue(f"at least {n} processes (instances: {n} deals each instance "
                               "its share of a group's processes)", show(group.processes),
                               field=("clients", i, "processes"))
            if n > 1 and group.keyspace.keys < n:
                raise BadValue(f"at least {n} keys (instances: {n} splits the keyspace)",
                               show(group.keyspace.keys), field=("clients", i, "keyspace", "keys"))
        return self

    @property
    def instance_count(self) -> int:
        """How many Redis instances the scenario puts on its host."""
        return self.instances if isinstance(self.instances, int) else len(self.instances)

    def listed_instances(self) -> list[Scenario]:
        """For ``instances: [...]``, one scenario per entry, named
        ``<name>/<instance>``, with the entry's server and clients and
        ``instances: 1``; everything else is the scenario's."""
        assert isinstance(self.instances, list)
        return [self.model_copy(update={
            "name": f"{self.name}/{inst.name}", "instances": 1, "server": inst.server,
            "clients": inst.clients,
            "events": sorted(self.events + inst.events, key=lambda ev: ev.at)})
            for inst in self.instances]

    def _check_listed_instances(self) -> None:
        """``instances: [...]``: the top-level clients unused, names unique, and each
        instance's scenario as valid as a scenario of its own."""
        if "clients" in self.model_fields_set:
            raise BadValue("no top-level clients when instances is a list (each instance "
                           "has its own clients: ...)", "a clients list", field=("clients",))
        names = [inst.name for inst in self.instances]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise BadValue("a name no other instance has", show(name),
                               field=("instances", i, "name"))
        for i, inst in enumerate(self.instances):
            for j, ev in enumerate(inst.events):
                if not 0 <= ev.at < self.duration:
                    raise BadValue(f"an event time in [0, duration = {self.duration:g} s)",
                                   f"{ev.at:g} s", field=("instances", i, "events", j, "at"))
                if j and ev.at < inst.events[j - 1].at:
                    raise BadValue(f"events in time order (at ≥ {inst.events[j - 1].at:g} s)",
                                   f"{ev.at:g} s", field=("instances", i, "events", j, "at"))
        for i, part in enumerate(self.listed_instances()):
            try:
                part._check()
            except BadValue as exc:
                field = exc.field
                if field[:1] == ("events",):  # an entry of the merged list: say which one
                    ev = part.events[field[1]]
                    own = self.instances[i].events
                    field = ((*("instances", i, "events", own.index(ev)), *field[2:])
                             if ev in own else ("events", self.events.index(ev), *field[2:]))
                else:
                    field = ("instances", i, *field)
                raise BadValue(exc.expected, exc.found, field=field, hint=exc.hint) from None

    def _check_size(self) -> None:
        """Bound what the run allocates per connection, per request slot, per key
        row and per request in flight, with the counts ``model/build.py`` uses, and
        refuse a closed loop that cannot move the clock."""
        conns = sum(g.processes * connection_rows(g) for g in self.clients)
        if conns > MAX_CONNECTIONS:
            raise BadValue(f"at most {MAX_CONNECTIONS:,} connections in all "
                           "(Σ processes × pool.max-size, × 4 for a group with a timeout)",
                           f"{conns:,}", field=("clients",))
        slots = 0
        for i, g in enumerate(self.clients):
            n = request_slots(g)
            slots += n
            if slots > MAX_REQUEST_SLOTS:
                raise BadValue(
                    f"at most {MAX_REQUEST_SLOTS:,} request sources in all (processes × "
                    "threads; a closed group with exponential think time counts at most "
                    "its pools and waiters)", f"{slots:,} by this group", field=("clients", i))
        for i, g in enumerate(self.clients):
            self._check_clock_moves(i, g)
        rows = max(g.keyspace.keys for g in self.clients) + sum(
            write_once_rows_bound(g, self.server.maxmemory, self.duration) for g in self.clients)
        if not rows <= MAX_KEYS:  # NaN too: sizes at the edge of floating point
            i = next(i for i, g in enumerate(self.clients) if g.keyspace.write_once > 0)
            raise BadValue(
                f"at most {MAX_KEYS:,} keys in the run: the keyspace, the write-once keys "
                "preloaded (nominal rate × min(history, ttl), or what fits in maxmemory) and "
                "rows for those written during the run (1.25 × rate × duration, or with "
                "maxmemory or a TTL × what fits or lives at once + 30 min of them)",
                f"about {rows:,.0f}" if not math.isnan(rows) else
                "no number (NaN: a rate, TTL or history at the edge of floating point)",
                field=("clients", i, "keyspace", "write-once"))
        deepest = max(g.pipeline for g in self.clients)
        if conns * deepest > MAX_IN_FLIGHT:
            raise BadValue(f"at most {MAX_IN_FLIGHT:,} requests in flight (connections × "
                           "the deepest pipeline)", f"{conns:,} × {deepest:,}",
                           field=("clients",))

    def _check_clock_moves(self, i: int, g: ClientGroup) -> None:
        """A closed loop without think time whose requests take no time (no round
        trip, zero CPU costs) sends its next request at the same instant forever."""
        if g.kind == "open" or (g.kind == "trace" and g.trace_timing == "recorded"):
            return
        if g.think.mean > 0:
            return
        cpu = self.engine.cpu
        # appendfsync always: a write's reply waits for an fdatasync (any
        # distribution with a mean > 0 takes time).
        fsync_s = 0.0
        if self.server.appendonly and self.server.appendfsync == "always":
            fsync_s = (float(self.disk.fsync.mean) if self.disk.fsync is not None
                       else DISK_PRESETS[self.disk.preset].fsync_mean_s)
        fixed = []
        for m in g.mix:
            override = cpu.commands.get(m.command.upper())
            own = override.fixed if override is not None else None
            us = own if own is not None else COMMANDS[m.command.upper()].fixed_us
            write = COMMANDS[m.command.upper()].effect == EFFECT_WRITE
            fixed.append(cpu.scale * us * 1e-6 + (fsync_s if write else 0.0))
        per_request_s = cpu.scale * (cpu.iteration + cpu.read + cpu.write) * 1e-6 + min(fixed)
        cycle = self.network.rtt.low + per_request_s
        if cycle < MIN_CYCLE_S:
            raise BadValue("a think time > 0, or requests that take time (network.rtt, "
                           "engine.cpu costs): without either the clock never moves",
                           f"think 0 and {cycle:g} s per request", field=("clients", i, "think"))
