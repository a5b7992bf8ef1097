"""The load: ``clients:``, the client groups (``ClientGroup``) with what each
holds (its connection pool, request mix, keyspace, schedule of phases and
surges, reconnect backoff), and ``network:``, the round trip between the
clients and the server (``Network``).
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from pydantic import Field, field_serializer, model_validator

from redsim.config.declare import NotKeyspace
from redsim.config.errors import BadValue, show
from redsim.config.schema.distributions import CountDist, DurationDist, SizeDist
from redsim.config.schema.types import (
    MAX_KEY_SIZE,
    MAX_KEYS,
    MIN_PERIOD_S,
    Bool,
    Checkout,
    ClientKind,
    CostUs,
    KeyDistribution,
    KeyType,
    Placement,
    PositiveInt,
    PositiveSeconds,
    Replay,
    Seconds,
    TraceFormat,
    TraceKeyOverflow,
    TraceTiming,
    _duration_above_zero,
    _hyphen,
    _literal,
    _Model,
    _optional,
    _v,
    parse_command_name,
)
from redsim.config.units import parse_duration, parse_float, parse_int, parse_rate
from redsim.model.commands import COMMANDS, EFFECT_INCR, EFFECT_READ, EFFECT_WRITE
from redsim.model.sizing import memoryless_group


class Network(_Model):
    """The client ↔ server network."""

    rtt: DurationDist = Field(default_factory=lambda: DurationDist.model_validate(200e-6))
    """Round-trip time, s: a duration, or a distribution of them (for instance
    ``{distribution: empirical, samples: ping.txt}`` from a ``ping`` or
    ``redis-cli --latency`` of the real path). Each request's round trip is
    drawn when it is sent; it goes half out, half back."""

    @field_serializer("rtt")
    def _rtt_out(self, rtt: DurationDist) -> Any:
        # A fixed round trip reads back as the plain duration it was before
        # round trips could be drawn, so a scenario's hash stays what it was.
        return rtt.mean if rtt.kind == "fixed" else rtt._to_yaml()


# ---------------------------------------------------------------------------------
# The client groups (clients:) and what each holds.


class Pool(_Model):
    """One app process's connection pool."""

    max_size: PositiveInt = 8
    """Most connections the pool opens (lazily), connections."""
    checkout: Annotated[Checkout, _literal(Checkout)] = "lifo"
    """Which idle connection a request takes: most (lifo) or least (fifo) recent."""
    idle_timeout: Seconds = 0.0
    """Close a connection idle this long, s; 0 = never."""
    reap_interval: PositiveSeconds = 1.0
    """How often idle connections are checked, s."""
    max_waiters: PositiveInt = 100000
    """Requests that may wait for a connection, requests."""
    retry_backoff: PositiveSeconds = 0.001
    """After its request is refused (wait queue full), a closed-loop or trace
    source waits this long on top of its think time, s. At least 1 µs so that a
    source with zero think time cannot retry forever at one instant."""

    @model_validator(mode="after")
    def _check(self) -> Pool:
        # A period the clock cannot step by (1e-300 added to 0.5 is 0.5) would
        # schedule the same event at the same instant forever: the run hung.
        for key in ("reap_interval", "retry_backoff"):
            if getattr(self, key) < MIN_PERIOD_S:
                raise BadValue("at least 1us (a shorter period would not move the clock)",
                               f"{getattr(self, key):g} s", field=(_hyphen(key),))
        return self


def _increasing_times(steps: list[Any], key: str, what: str) -> None:
    """Steps whose ``at`` must grow strictly (a profile's, a schedule's phases)."""
    for i in range(1, len(steps)):
        if steps[i].at <= steps[i - 1].at:
            raise BadValue(f"{what} times strictly increasing (after {steps[i - 1].at:g})",
                           show(steps[i].at), field=(key, i, "at"))


class Phase(_Model):
    """From ``at`` (s after the group's start) on, the group runs with these
    settings; the ones a phase leaves out keep their values."""

    at: Seconds
    """When the phase starts, s from the group's start."""
    threads: Annotated[int | None, _v(_optional(partial(parse_int, minimum=0)))] = None
    """Threads per process that send (at most the group's ``threads``; 0 = none):
    the others park, and the connections they no longer need idle in the pool."""
    think: DurationDist | None = None
    """The think time from this phase on (closed and trace groups)."""
    rate: Annotated[float | None, _v(_optional(parse_rate))] = None
    """Open groups: the arrival rate from this phase on, /s."""


class Surge(_Model):
    """A group that comes and goes: on for ``for`` every ``every``, from its start."""

    every: PositiveSeconds
    """Time from one surge's start to the next's, s."""
    length: PositiveSeconds = Field(alias="for")
    """How long each surge lasts, s (``for`` in YAML; less than ``every``)."""
    connections: Annotated[int | None, _v(_optional(partial(parse_int, minimum=1,
                                                            maximum=1_000_000)))] = None
    """Shorthand for a closed group: the group runs throughout, and a group named
    ``<name>-surge`` of this many clients (one process each, one thread, a pool of
    one connection, the same commands, keys and think time) runs only during
    surges. Without it the group itself runs only during surges."""

    @model_validator(mode="after")
    def _check(self) -> Surge:
        if self.length >= self.every:
            raise BadValue(f"for shorter than every ({self.every:g} s)", f"{self.length:g} s",
                           field=("for",))
        return self


class Reconnect(_Model):
    """What a source waits after a failed request (timeout, refused connection)
    before its next one: capped exponential backoff with jitter, as client
    libraries do it (go-redis ``MinRetryBackoff`` 8 ms / ``MaxRetryBackoff``
    512 ms, redis-py ``ExponentialBackoff``, Lettuce's reconnect delay). The
    k-th failure in a row waits ``min(max-backoff, backoff · 2^(k-1)) · (1 −
    jitter · U)``, U uniform in [0, 1): jitter 1 is "full jitter", 0 none."""

    backoff: PositiveSeconds = 0.008
    """Wait after the first failure in a row, s (doubles with each further one)."""
    max_backoff: PositiveSeconds = 0.512
    """Longest wait, s."""
    jitter: Annotated[float, _v(parse_float, minimum=0, maximum=1)] = 1.0
    """Fraction of the wait drawn at random (0: none; 1: uniform from 0 to the wait)."""

    @model_validator(mode="after")
    def _check(self) -> Reconnect:
        if self.max_backoff < self.backoff:
            raise BadValue(f"max-backoff ≥ backoff ({self.backoff:g} s)",
                           f"{self.max_backoff:g} s", field=("max-backoff",))
        return self


class MixEntry(_Model):
    """One command in a client group's request mix."""

    command: Annotated[str, _v(parse_command_name)]
    """Upper-case command name."""
    weight: Annotated[float, _v(parse_float, minimum=0, exclusive_min=True,
                                maximum=1e12)] = 1.0
    """Relative frequency (weights are normalised over the mix; at most 1e12 so
    their sum stays finite)."""
    keys: Annotated[int, _v(parse_int, minimum=1, maximum=1_000_000)] = 1
    """Keys or members per command (e.g. MGET 10)."""
    count: Annotated[int | None, _v(_optional(partial(parse_int, minimum=0,
                                                      maximum=1_000_000_000)))] = None
    """Elements returned/visited (SMEMBERS, HGETALL, ZRANGE, SCAN); None = default."""
    ttl: Annotated[float | None, _v(_optional(_duration_above_zero))] = None
    """TTL set on written keys, s; None = no TTL."""
    duration: DurationDist | None = None
    """EVAL, EVALSHA, FCALL: the script's run time on the main thread on top of
    the command's fixed cost, s (a distribution, e.g. ``{distribution: exponential, mean: 2ms}``);
    None = a trivial script. Past ``server.busy-reply-threshold`` other
    clients get ``-BUSY`` (``model/scripts.py``)."""

    @model_validator(mode="after")
    def _check(self) -> MixEntry:
        if self.duration is not None and not COMMANDS[self.command.upper()].script:
            raise BadValue("a duration only for EVAL, EVALSHA or FCALL (a script's run time)",
                           self.command, field=("duration",))
        return self


def _parse_mix(v: Any) -> Any:
    # Shorthands: `{GET: 0.9, SET: 0.1}`, `{MGET: {weight: 1, keys: 10}}`, `[GET, SET]`.
    if isinstance(v, dict):
        items: list[Any] = []
        for cmd, spec in v.items():
            if isinstance(spec, dict):
                items.append({"command": cmd, **spec})
            else:
                items.append({"command": cmd, "weight": spec})
        v = items
    if isinstance(v, list):
        if not v:
            raise BadValue("at least one command in the mix", "an empty list")
        return [{"command": item} if isinstance(item, str) else item for item in v]
    return v


class HotKeys(_Model):
    """A hot set: ``share`` of the group's key draws go to its ``keys`` hottest
    ids, uniformly (``model/locality.py``)."""

    share: Annotated[float, _v(parse_float, minimum=0, exclusive_min=True, maximum=0.999999)]
    """Probability a key is drawn from the hot set (above 0, below 1)."""
    keys: Annotated[int, _v(parse_int, minimum=1, maximum=MAX_KEYS)]
    """Keys in the hot set: ids 0 .. keys-1."""


class RecentReads(_Model):
    """Reads that follow writes: with ``probability``, a read names one of the
    group's last ``window`` written keys, uniformly (``model/locality.py``)."""

    probability: Annotated[float, _v(parse_float, minimum=0, exclusive_min=True, maximum=1)]
    """Probability a read names a recently written key."""
    window: Annotated[int, _v(parse_int, minimum=1, maximum=1_000_000)] = 1000
    """How many of the group's last written keys count as recent, keys."""


class Keyspace(_Model):
    """How a client group picks keys."""

    keys: Annotated[int, _v(parse_int, minimum=1, maximum=MAX_KEYS)] = 10000
    """Distinct keys, keys (at most 100,000,000)."""
    type: Annotated[KeyType, _literal(KeyType)] = "string"
    """What the keys hold: string, or a collection (hash, set, zset, list) whose
    commands (HSET, SADD, ZRANGE, LPUSH …) then add, remove and return stored
    elements, in the encodings Redis picks (``model/collection.py``). A
    collection keyspace has rows of its own, not shared with string groups."""
    elements: CountDist | None = None
    """Collections: each key's element count (a count, or a distribution of
    them; 10 by default), drawn once per key: the size it is preloaded with,
    and for a hash, set or sorted set the size at which adds stop adding new
    members and update existing ones (a list grows with every push)."""
    member_size: Annotated[int | None, _v(_optional(partial(parse_int, minimum=1,
                                                            maximum=1 << 20)))] = None
    """Collections: bytes of each hash field, set or sorted-set member, or list
    element (10 by default); a hash's values take the group's ``value-size``
    (its mean)."""
    integers: Bool = False
    """A set keyspace: its members are integers (an intset while few enough)."""
    distribution: Annotated[KeyDistribution, _literal(KeyDistribution)] = "uniform"
    zipf_exponent: Annotated[float, _v(parse_float, minimum=0, exclusive_min=True)] = 0.99
    """Zipf exponent s (P(rank k) ∝ k^-s), used when distribution is zipf."""
    preload: Annotated[float, _v(parse_float, minimum=0, maximum=1)] = 1.0
    """Fraction of the keys present at the start, a random subset, with values
    from the group's value-size distribution. 1 = a warm cache. When the
    group's rate is known (open, or closed with think time) each key's last
    write and last access are as long ago as the steady state of its access
    rates makes them (a TTL'd key: written less than ttl ago); otherwise a
    TTL'd key has a remaining TTL uniform in (0, ttl] and others were last
    touched uniformly over the past hour."""
    write_once: Annotated[float, _v(parse_float, minimum=0, maximum=1)] = 0.0
    """Fraction of the group's writes (SET …, first key) that store a key never
    used before, which no client reads again: a cache's long tail of entries
    written once (per user, per page, per commit). Such keys leave only by
    their TTL or by eviction, so with a long TTL they fill memory at the rate
    they are written, and with a short one they stay near rate × TTL."""
    history: Annotated[float | None, _v(_optional(parse_duration))] = None
    """How long the workload ran before time 0, s: the write-once keys present at
    the start are those the group's nominal rate wrote over the last
    min(history, ttl) s, ages uniform. None: as far back as the TTL (or
    preload-limit) allows; 0: none."""
    hot: HotKeys | None = None
    """A hot set (``{share: 0.2, keys: 100}``): that share of draws go to the
    hottest ``keys`` ids; the rest follow ``distribution``."""
    drift: Annotated[float, _v(parse_rate)] = 0.0
    """The working set slides by this many key ids per second (``1k/s``), modulo
    ``keys``: hot keys cool and others warm up. 0 = a fixed working set."""
    recent: RecentReads | None = None
    """Reads of recent writes (``{probability: 0.3, window: 1000}``)."""
    preload_limit: Annotated[float, _v(parse_float, minimum=0, exclusive_min=True,
                                       maximum=100)] = 1.0
    """The preloaded keys stay under this multiple of maxmemory: the group's
    ``preload`` keys, most recently used first, then its write-once keys,
    youngest first; the rest are taken to have been evicted (a warning says
    how many of the ``preload`` keys). Above 1 a run may start past maxmemory
    (a server restarted from an RDB larger than its new limit, which evicts
    from its first write on). Ignored without maxmemory."""


class ProfileStep(_Model):
    """From time `at` (s) on, an open group's total Poisson rate is `rate` (/s)."""

    at: Seconds
    rate: Annotated[float, _v(parse_rate)]


def _parse_profile(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, list) and not v:
        raise BadValue("at least one {at, rate} step", "an empty list")
    return v


class ClientGroup(_Model):
    """A group of identical app processes and their request sources."""

    name: Annotated[str | None, NotKeyspace()] = None
    """Unique group name; the loader names unnamed groups group0, group1, …"""
    kind: Annotated[ClientKind, _literal(ClientKind)] = "closed"
    """closed: sources wait for the reply then think; open: Poisson arrivals;
    trace: replay a command file."""
    processes: PositiveInt = 1
    """App processes, each with its own connection pool."""
    threads: PositiveInt = 1
    """Request sources per process (closed/trace)."""
    think: DurationDist = Field(default_factory=lambda: DurationDist.model_validate(0.0))
    """Think time between a reply and the next request, s (closed/trace).
    Exponential think in a closed group costs nothing per source (one clock per
    group), so millions of threads are cheap; other distributions keep a timer
    per source."""
    rate: Annotated[float | None, _v(_optional(parse_rate))] = None
    """Open: the group's total Poisson rate, /s."""
    profile: Annotated[list[ProfileStep] | None, _v(_parse_profile)] = None
    """Open: piecewise-constant rate steps; `at` strictly increasing from 0."""
    pool: Annotated[Pool, NotKeyspace()] = Field(default_factory=Pool)
    placement: Annotated[Placement, _literal(Placement), NotKeyspace()] = "remote"
    """Where the group's processes run. remote: on other machines, their CPU not
    modelled (the network's round trip covers them). same-host: on Redis's host
    (``redsim/model/client_threads.py``): each reply is read, and the next
    request written, by one of ``client-threads`` at ``client-cpu`` per request,
    and with ``host.cores`` those threads share the cores with Redis."""
    client_cpu: Annotated[CostUs, NotKeyspace()] = 7.6
    """same-host: CPU a client thread spends per request batch of one command
    (reading the reply, writing the next request), µs. redis-benchmark 7.0 on
    the reference host (SET at 50 connections, pipeline 1 and 16, getrusage
    of its process), the median of its eight calibrations: 7.57 µs (7.38-7.87);
    the 2-vCPU AMD EPYC VM measured 11.0-11.1 µs per request at pipeline 1.
    ``redsim calibrate`` measures redis-benchmark's on your host
    (``host.client-cpu``, which a group without its own takes)."""
    client_cpu_per_command: CostUs = 0.053
    """same-host: CPU per further command of a pipelined batch (parsing one more
    reply, formatting one more request), µs: a batch of P commands costs
    ``client-cpu`` + (P − 1) × this. redis-benchmark 7.0 on the reference host,
    the median of its eight calibrations: 0.053 µs (0.039-0.16);
    ``redsim calibrate`` measures it (``client.cpu_per_command``)."""
    client_threads: Annotated[PositiveInt, NotKeyspace()] = 1
    """same-host: the client's threads doing that work (redis-benchmark
    ``--threads``, memtier ``-t``); connection c is thread c mod n's."""
    pipeline: PositiveInt = 1
    """Requests in flight per connection checkout (pipelining depth)."""
    mix: Annotated[list[MixEntry], _v(_parse_mix)] = Field(
        default_factory=lambda: [MixEntry(command="GET")]
    )
    keyspace: Keyspace = Field(default_factory=Keyspace)
    key_size: Annotated[int, _v(parse_int, minimum=1, maximum=MAX_KEY_SIZE)] = 16
    """Key length, bytes (at most 512 MB, Redis's string limit)."""
    value_size: SizeDist = Field(default_factory=lambda: SizeDist.model_validate(64))
    """Value length, bytes."""
    trace: str | None = None
    """Trace: path of the command file (resolved to an absolute path by the loader)."""
    trace_timing: Annotated[TraceTiming, _literal(TraceTiming)] = "closed"
    """Trace: send the next command after the reply + think (closed) or at the
    recorded timestamps (recorded)."""
    trace_format: Annotated[TraceFormat, _literal(TraceFormat)] = "commands"
    """Trace: the file's format (``redsim/traces``). commands: redis-cli or
    MONITOR lines; twitter: the Twitter cache-trace CSV (twitter/cache-trace);
    oracle-general: libCacheSim's oracleGeneral binary records, each a GET."""
    trace_speed: Annotated[float, _v(parse_float, minimum=0, exclusive_min=True)] = 1.0
    """Trace: replay speed with trace-timing recorded: a line recorded t s after
    the first is sent t / trace-speed s after the group starts (2 = twice as fast)."""
    trace_key_overflow: Annotated[TraceKeyOverflow, _literal(TraceKeyOverflow)] = "error"
    """Trace (twitter, oracle-general): the trace's keys are numbered 0, 1, 2, …
    by first appearance into the group's keyspace; a trace with more distinct
    keys than ``keyspace.keys`` is an error, or with modulo key i becomes
    i mod ``keyspace.keys`` (distinct keys then share one)."""
    replay: Annotated[Replay, _literal(Replay)] = "loop"
    """Trace: play the file once or loop over it."""
    start: Seconds = 0.0
    """When the group starts sending, s."""
    ramp: Seconds = 0.0
    """The group's threads start one after another over this long from
    ``start``, evenly spaced (an app fleet starting up, memtier's or JMeter's
    ramp-up), s; 0 = all at once. Closed and trace groups."""
    stop: Annotated[float | None, _v(_optional(parse_duration))] = None
    """When the group stops sending, s from the run's start; none = never. Its
    requests in flight finish; its idle connections close at once and the others
    as their replies come back (the client memory they held is freed)."""
    phases: list[Phase] | None = None
    """A schedule: ``[{at: 0s, threads: 2}, {at: 60s, threads: 10, think: 1ms},
    {at: 120s, threads: 0}]`` (closed and trace groups: threads, think) or
    ``[{at: 30s, rate: 5k/s}]`` (open groups: rate, like a profile)."""
    surge: Surge | None = None
    """Run only in surges (``{every: 60s, for: 3s}``), between ``start`` and
    ``stop``; with ``connections:``, add that many surging clients instead."""
    timeout: Annotated[Seconds, NotKeyspace()] = 0.0
    """Client socket timeout, s; 0 = none (redis-py ``socket_timeout``, Jedis
    ``soTimeout``, go-redis ``ReadTimeout``). A request whose reply has not come
    this long after it was sent fails; the client closes the connection (Redis
    still runs what it read, and frees the client when it finds the socket
    closed) and the source waits its ``reconnect`` backoff before its next
    request, which opens a new connection."""
    connect_timeout: Annotated[float | None, _v(_optional(parse_duration)), NotKeyspace()] = None
    """A new connection's own allowance for its handshake (TCP, and TLS with
    ``tls``), s, before its first request's ``timeout`` starts; none = the same
    as ``timeout``, as redis-py's ``socket_connect_timeout`` defaults. Redis's
    accept and handshake work runs at the connection's first read, so the two
    make one deadline: ``connect-timeout + timeout`` after the request is sent."""
    reconnect: Annotated[Reconnect, NotKeyspace()] = Field(default_factory=Reconnect)
    """Backoff after a timeout or a connection refused at ``maxclients``."""
    tls: Annotated[Bool, NotKeyspace()] = False
    """Connect over TLS: each new connection costs Redis ``engine.cpu.tls-handshake``
    on its main thread and the client one more round trip (TLS 1.3)."""

    def _check_phases(self) -> None:
        phases = self.phases or []
        _increasing_times(phases, "phases", "phase")
        for i, ph in enumerate(phases):
            if self.kind == "open":
                for key in ("threads", "think"):
                    if getattr(ph, key) is not None:
                        raise BadValue("only rate in an open group's phase", key,
                                       field=("phases", i, key))
                if self.profile is not None:
                    raise BadValue("either a profile or phases with rates for an open group",
                                   "both", field=("phases",))
                continue
            if ph.rate is not None:
                raise BadValue(f"no rate in a {self.kind} group's phase (threads, think)",
                               show(ph.rate), field=("phases", i, "rate"))
            if ph.threads is not None and ph.threads > self.threads:
                raise BadValue(f"at most the group's threads ({self.threads})",
                               show(ph.threads), field=("phases", i, "threads"))
            if ph.think is not None and memoryless_group(self) and (
                    ph.think.kind != "exponential" or ph.think.mean <= 0):
                raise BadValue("an exponential think time > 0 (the group's is, and it runs "
                               "as one clock)", ph.think.kind, field=("phases", i, "think"))
            if ph.threads is not None and self.ramp > 0:
                raise BadValue("threads in phases or a ramp, not both", "both",
                               field=("phases", i, "threads"))

    def _check_collections(self) -> None:
        ks = self.keyspace
        if ks.type == "string":
            for key, value in (("elements", ks.elements), ("member_size", ks.member_size)):
                if value is not None:
                    raise BadValue(f"no {_hyphen(key)} for a string keyspace (it is for "
                                   "type: hash, set, zset or list)", "given",
                                   field=("keyspace", key))
        if ks.integers and ks.type != "set":
            raise BadValue("integers only for a set keyspace", "yes",
                           field=("keyspace", "integers"))
        if ks.type == "string":
            return
        if self.kind == "trace":
            raise BadValue("type string for a trace group (a trace's keys are strings)",
                           ks.type, field=("keyspace", "type"))
        if ks.write_once > 0:
            raise BadValue("write-once 0 for a collection keyspace", show(ks.write_once),
                           field=("keyspace", "write_once"))
        takes = sorted(c.name for c in COMMANDS.values() if c.type == ks.type)
        for i, m in enumerate(self.mix):
            cmd = COMMANDS[m.command.upper()]
            if cmd.type not in (None, ks.type) or cmd.effect in (
                    EFFECT_READ, EFFECT_WRITE, EFFECT_INCR):
                raise BadValue(f"a command for a {ks.type} keyspace ({', '.join(takes)}, or "
                               "DEL, UNLINK, EXISTS, EXPIRE and keyless ones): Redis answers "
                               "WRONGTYPE", cmd.name, field=("mix", i, "command"))

    @model_validator(mode="after")
    def _check(self) -> ClientGroup:
        if self.kind == "open":
            if self.rate is None and self.profile is None:
                raise BadValue("a rate (like 25k/s) or a profile for an open group",
                               "neither", field=("rate",))
            if self.rate is not None and self.profile is not None:
                raise BadValue("either rate or profile for an open group, not both",
                               "both", field=("profile",))
        else:
            for key, value in (("rate", self.rate), ("profile", self.profile)):
                if value is not None:
                    raise BadValue(f"no {key} for a {self.kind} group ({key} is for kind: open)",
                                   show(value) if key == "rate" else "a profile", field=(key,))
        if self.stop is not None and self.stop <= self.start:
            raise BadValue(f"a stop after start ({self.start:g} s)", show(self.stop),
                           field=("stop",))
        if (self.stop is not None or self.surge is not None) and self.kind == "trace" \
                and self.trace_timing == "recorded":
            raise BadValue("no stop or surge for a trace replayed at its recorded times",
                           "stop" if self.stop is not None else "surge",
                           field=("stop" if self.stop is not None else "surge",))
        if self.surge is not None and self.surge.connections is not None:
            raise BadValue("surge connections only on a closed group (it adds a group of "
                           "that many clients)", f"a {self.kind} group", field=("surge",))
        if self.ramp > 0 and (self.kind == "open" or (self.kind == "trace"
                                                      and self.trace_timing == "recorded")):
            raise BadValue("no ramp for arrivals (ramp starts threads; give an open group a "
                           "rate profile)", show(self.ramp), field=("ramp",))
        if self.phases:
            self._check_phases()
        if self.kind == "trace" and self.trace is None:
            raise BadValue("a trace file path for a trace group", "none", field=("trace",))
        if self.kind != "trace" and self.trace is not None:
            raise BadValue(f"no trace for a {self.kind} group (trace is for kind: trace)",
                           show(self.trace), field=("trace",))
        if self.kind != "trace":
            for key, value, default in (("trace_format", self.trace_format, "commands"),
                                        ("trace_speed", self.trace_speed, 1.0),
                                        ("trace_key_overflow", self.trace_key_overflow,
                                         "error")):
                if value != default:
                    raise BadValue(f"no {_hyphen(key)} for a {self.kind} group ({_hyphen(key)} "
                                   "is for kind: trace)", show(value), field=(key,))
        if self.trace_speed != 1.0 and self.trace_timing != "recorded":
            raise BadValue("trace-speed 1 unless trace-timing is recorded (the speed scales "
                           "the recorded times; a closed replay sends after each reply)",
                           show(self.trace_speed), field=("trace_speed",))
        if self.trace_key_overflow != "error" and self.trace_format == "commands":
            raise BadValue("trace-key-overflow error for trace-format commands (a command "
                           "file's keys are not mapped to the keyspace)",
                           show(self.trace_key_overflow), field=("trace_key_overflow",))
        hot = self.keyspace.hot
        if hot is not None and hot.keys > self.keyspace.keys:
            raise BadValue(f"a hot set of at most keyspace.keys ({self.keyspace.keys:,}) keys",
                           f"{hot.keys:,}", field=("keyspace", "hot", "keys"))
        self._check_collections()
        once = self.keyspace.write_once
        if once > 0:
            writes = [m for m in self.mix if COMMANDS[m.command.upper()].effect == EFFECT_WRITE]
            if self.kind == "trace" or not writes:
                raise BadValue("write-once 0 for a group that stores no key (write-once applies "
                               "to the mix's SET-like commands)", show(once),
                               field=("keyspace", "write_once"))
            if (self.kind == "closed" and self.think.mean <= 0
                    and self.keyspace.history != 0):
                raise BadValue("history: 0 for a closed group without think time (the "
                               "write-once keys written before time 0 need the group's "
                               "rate, processes × threads / think)",
                               show(self.keyspace.history),
                               field=("keyspace", "history"))
        if self.profile is not None:
            if self.profile[0].at != 0:
                raise BadValue("the first profile step at 0", show(self.profile[0].at),
                               field=("profile", 0, "at"))
            _increasing_times(self.profile, "profile", "profile")
        return self
