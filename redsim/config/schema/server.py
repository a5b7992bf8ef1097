"""The ``server:`` section: the Redis directives redsim models, as the fields of
``Server`` (Redis 7.2's defaults), each carrying its declaration
(``declare.Directive``: the module that models it, whether a ``config-set``
event may change it, whether it shapes the keyspace); the parsers of the
directives whose values need more than a unit (``save``,
``client-output-buffer-limit``, ``unmodelled``); and the lists read from those
declarations (``DIRECTIVES``, ``MODELLED_DIRECTIVES``, ``RUNTIME_SETTABLE``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from redsim.config.declare import Directive, directives
from redsim.config.directives import (
    DIRECTIVE_ALIASES,
    KNOWN_REDIS_DIRECTIVES,
    REDIS_DEFAULTS,
)
from redsim.config.errors import BadValue, did_you_mean, show
from redsim.config.redis_conf import OBUF_CLASSES, quote_arg
from redsim.config.schema.types import (
    INT_MAX,
    MAX_MAXMEMORY,
    AppendFsync,
    Bool,
    Bytes,
    EvictionPolicy,
    NonNegInt,
    Seconds,
    _hyphen,
    _literal,
    _Model,
    _v,
)
from redsim.config.units import parse_duration, parse_float, parse_int, parse_size
from redsim.model.state import CONFIG_MAX_HZ, CONFIG_MIN_HZ

# ---------------------------------------------------------------------------------
# Directive names, and values Redis clamps or bounds on its own terms.


def _whole_ms(v: Any) -> int:
    # Redis stores latency-monitor-threshold as integer milliseconds.
    return round(parse_duration(v, "ms") * 1000)


def _hz(v: Any) -> int:
    # Redis accepts 0..INT_MAX and clamps to CONFIG_MIN_HZ..CONFIG_MAX_HZ (1..500)
    # when applying it (server.c), so 0 runs at 1 Hz and 1000 at 500 Hz.
    return min(max(parse_int(v, minimum=0), CONFIG_MIN_HZ), CONFIG_MAX_HZ)


def _list_size(v: Any) -> int:
    # quicklistSetFill clamps: below -5 is -5 (64 KB nodes), above 32768 is 32768.
    return min(max(parse_int(v), -5), 1 << 15)


def _backlog_size(v: Any) -> int:
    # config.c: repl-backlog-size has a minimum of 16 KB (CONFIG_REPL_BACKLOG_MIN_SIZE).
    size = parse_size(v)
    if size < 16 * 1024:
        raise BadValue("a size ≥ 16kb (Redis's minimum backlog)", show(v))
    return size


def _directive(key: Any) -> str:
    """A ``server:`` key as Redis reads a directive: case-insensitive, ``_`` as ``-``."""
    return str(key).lower().replace("_", "-")


# ---------------------------------------------------------------------------------
# Server: the Redis directives redsim models, and its structured values' parsers.

_SAVE_EXPECTED = 'save points "seconds changes …" like "3600 1 300 100", or "" for none'


def _save_point(seconds: Any, changes: Any) -> tuple[int, int]:
    # config.c setConfigSaveOption: seconds ≥ 1, changes ≥ 0.
    try:
        return parse_int(seconds, minimum=1), parse_int(changes, minimum=0)
    except BadValue:
        raise BadValue(
            _SAVE_EXPECTED + " (seconds ≥ 1, changes ≥ 0)", show([seconds, changes])
        ) from None


def parse_save(v: Any) -> list[tuple[int, int]]:
    """Parse `save`: the Redis string "3600 1 300 100", "" (no snapshots), a flat list
    of numbers, or a list of pairs / "seconds changes" strings (one per save line)."""
    if isinstance(v, str):
        flat: list[Any] = v.split()
    elif isinstance(v, (list, tuple)):
        flat = []
        for item in v:
            if isinstance(item, (list, tuple)) and len(item) == 2:
                flat.extend(item)
            elif isinstance(item, str) and len(item.split()) == 2:
                flat.extend(item.split())
            elif isinstance(item, (int, str)) and not isinstance(item, bool):
                flat.append(item)
            else:
                raise BadValue(_SAVE_EXPECTED, show(v))
    else:
        raise BadValue(_SAVE_EXPECTED, show(v))
    if len(flat) % 2:
        raise BadValue(_SAVE_EXPECTED + " (in pairs)", show(v))
    return [_save_point(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]


def _directive_text(v: Any) -> str:
    """A YAML value of an unmodelled directive as the text redis.conf would hold."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v is None:
        return ""
    if isinstance(v, (list, tuple)):
        # One level only: a list is the directive's arguments (`bind: [a, b]`);
        # deeper nesting has no redis.conf meaning and is kept as its repr.
        return " ".join(
            quote_arg(str(x) if isinstance(x, (list, tuple, dict)) else _directive_text(x))
            for x in v
        )
    return str(v)


def _known_directive(name: str) -> bool:
    # Module configs are `module.name`; Redis accepts any of those in a conf.
    return name in KNOWN_REDIS_DIRECTIVES or "." in name


def parse_unmodelled(v: Any) -> dict[str, str]:
    """Parse `unmodelled`: {directive: value}, names Redis knows but redsim does not
    model; values become the text a redis.conf line would carry."""
    if not isinstance(v, dict):
        raise BadValue("a mapping of Redis directive → value", show(v))
    out: dict[str, str] = {}
    for key, value in v.items():
        name = str(key).lower()
        if name in MODELLED_DIRECTIVES:
            raise BadValue(
                "a directive redsim does not model (set modelled ones directly in server)",
                show(key),
                field=(str(key),),
                hint=f"write it as server.{name}",
            )
        if not _known_directive(name):
            raise BadValue(
                "a Redis configuration directive",
                show(key),
                field=(str(key),),
                hint=did_you_mean(name, KNOWN_REDIS_DIRECTIVES),
            )
        out[name] = _directive_text(value)
    return out


_OBUF_EXPECTED = ("CLASS HARD SOFT SOFT-SECONDS groups, CLASS normal, replica "
                  "(or slave) or pubsub: e.g. \"replica 256mb 64mb 60\"")


def _obuf_table(words: list[str], base: dict[str, tuple[int, int, int]],
                original: Any) -> dict[str, tuple[int, int, int]]:
    """``base`` with the (hard B, soft B, soft seconds) of each class ``words``
    (redis.conf's arguments) give."""
    if not words or len(words) % 4:
        raise BadValue(_OBUF_EXPECTED, show(original))
    out = dict(base)
    for j in range(0, len(words), 4):
        cls = OBUF_CLASSES.get(words[j].lower())
        if cls is None:
            raise BadValue(_OBUF_EXPECTED, show(words[j]))
        hard, soft = parse_size(words[j + 1]), parse_size(words[j + 2])
        secs = parse_int(words[j + 3], minimum=0, maximum=INT_MAX)
        out[cls] = (hard, soft, secs)
    return out


OBUF_DEFAULTS = _obuf_table(REDIS_DEFAULTS["client-output-buffer-limit"].split(), {},
                            REDIS_DEFAULTS["client-output-buffer-limit"])
"""Redis's limits (hard B, soft B, soft seconds) per client class, from
``REDIS_DEFAULTS`` (``src/config.c``)."""


def parse_obuf_limits(v: Any) -> dict[str, tuple[int, int, int]]:
    """Parse ``client-output-buffer-limit``: redis.conf's text (``replica 256mb
    64mb 60``, several classes in one line allowed), or a mapping ``{replica:
    "256mb 64mb 60"}``; classes not given keep Redis's defaults."""
    if isinstance(v, dict):
        words: list[str] = []
        for key, limits in v.items():
            words += [str(key), *str(_directive_text(limits)).split()]
    elif isinstance(v, str):
        words = v.split()
    else:
        raise BadValue(_OBUF_EXPECTED, show(v))
    return _obuf_table(words, OBUF_DEFAULTS, v)


class Server(_Model):
    """The Redis server's configuration; keys are Redis directive names and defaults
    are Redis 7.2's. Directives Redis knows but redsim does not model go to
    `unmodelled` (also when written directly under `server:`)."""

    hz: Annotated[int, _v(_hz), Directive("model/event_loop.py", keyspace=False)] = 10
    """serverCron frequency, 1/s; clamped to 1..500 like Redis (0 → 1, 1000 → 500)."""
    dynamic_hz: Annotated[Bool, Directive("model/event_loop.py", keyspace=False)] = True
    """Double hz while clients/hz > 200 (up to 500)."""
    maxclients: Annotated[int, _v(parse_int, minimum=1, maximum=2**32 - 1),
                          Directive("model/clients.py", keyspace=False)] = 10000
    """Connection limit, clients (1..UINT_MAX, as Redis). A scenario whose pools could
    open more connections is refused, so no connection is ever refused in a run."""
    timeout: Annotated[Seconds, Directive("model/clients_cron.py", keyspace=False)] = 0.0
    """Idle client timeout, whole seconds; 0 = never. clientsCron closes a client
    whose last read or reply is more than this many whole seconds old (so after
    ``timeout`` to ``timeout + 1`` s idle); its pool dials a new connection at
    its next use."""
    maxmemory: Annotated[Bytes, Directive("model/memory.py")] = 0
    """Memory limit, bytes; 0 = no limit; at most 1 TB (``MAX_MAXMEMORY``)."""
    maxmemory_policy: Annotated[EvictionPolicy, _literal(EvictionPolicy),
                                Directive("model/eviction.py")] = "noeviction"
    maxmemory_samples: Annotated[int, _v(parse_int, minimum=1, maximum=64),
                                 Directive("model/eviction.py", keyspace=False)] = 5
    """Keys sampled per eviction round (Redis allows more; redsim caps at 64)."""
    maxmemory_eviction_tenacity: Annotated[int, _v(parse_int, minimum=0, maximum=100),
                                           Directive("model/eviction.py", keyspace=False)] = 10
    lazyfree_lazy_eviction: Annotated[Bool, Directive("model/eviction.py")] = False
    """Free evicted keys on the lazyfree thread (``model/eviction.py``)."""
    lazyfree_lazy_expire: Annotated[Bool, Directive("model/lazyfree.py")] = False
    """Free expired keys' big values on the lazyfree thread (``model/lazyfree.py``)."""
    lazyfree_lazy_server_del: Annotated[Bool, Directive("model/lazyfree.py")] = False
    """Free keys a command deletes implicitly on the lazyfree thread: in redsim,
    a collection emptied by HDEL, SREM, ZREM or a pop, whose effort of 0 keeps
    it on the main thread all the same (redsim's commands never overwrite a
    collection; ``model/lazyfree.py``)."""
    lazyfree_lazy_user_del: Annotated[Bool, Directive("model/lazyfree.py")] = False
    """DEL as UNLINK: big values go to the lazyfree thread (``model/lazyfree.py``)."""
    lazyfree_lazy_user_flush: Annotated[Bool, Directive("model/lazyfree.py")] = False
    """A FLUSHALL event without a ``mode`` is FLUSHALL ASYNC: the bio lazyfree
    thread frees the keys (``model/admin.py``)."""
    hash_max_listpack_entries: Annotated[NonNegInt, Directive("model/encoding.py")] = 512
    """A hash with more fields is a hashtable (alias ``hash-max-ziplist-entries``)."""
    hash_max_listpack_value: Annotated[NonNegInt, Directive("model/encoding.py")] = 64
    """A hash with a longer field or value is a hashtable, bytes."""
    set_max_intset_entries: Annotated[NonNegInt, Directive("model/encoding.py")] = 512
    """A set of integers with more members is a hashtable."""
    set_max_listpack_entries: Annotated[NonNegInt, Directive("model/encoding.py")] = 128
    """7.2: a set of strings with more members is a hashtable (7.0 has no listpack sets)."""
    set_max_listpack_value: Annotated[NonNegInt, Directive("model/encoding.py")] = 64
    """7.2: a set with a longer member is a hashtable, bytes."""
    zset_max_listpack_entries: Annotated[NonNegInt, Directive("model/encoding.py")] = 128
    """A sorted set with more members is a skiplist (alias ``zset-max-ziplist-entries``)."""
    zset_max_listpack_value: Annotated[NonNegInt, Directive("model/encoding.py")] = 64
    """A sorted set with a longer member is a skiplist, bytes."""
    list_max_listpack_size: Annotated[int, _v(_list_size), Directive("model/encoding.py")] = -2
    """A list's node (quicklist) limit: −1 … −5 for 4, 8, 16, 32, 64 KB, or a
    positive count of elements per node (alias ``list-max-ziplist-size``)."""
    busy_reply_threshold: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX),
                                    Directive("model/scripts.py", keyspace=False)] = 5000
    """A script (EVAL, FCALL) running longer than this lets other clients in,
    each command answered ``-BUSY``, ms; 0 = never (alias ``lua-time-limit``;
    ``model/scripts.py``)."""
    lfu_log_factor: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX),
                              Directive("model/eviction.py")] = 10
    lfu_decay_time: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX),
                              Directive("model/eviction.py")] = 1
    """Minutes per LFU counter decrement; 0 = never decay."""
    active_expire_effort: Annotated[int, _v(parse_int, minimum=1, maximum=10),
                                    Directive("model/expire.py", keyspace=False)] = 1
    appendonly: Annotated[Bool, Directive("model/aof.py")] = False
    """Log every write to the append-only file (``model/aof.py``)."""
    appendfsync: Annotated[AppendFsync, _literal(AppendFsync),
                           Directive("model/aof.py", keyspace=False)] = "everysec"
    """always: fdatasync on the main thread before the replies; everysec: a
    background fsync once a second (writes wait ≤ 2 s behind a slow one); no: the
    kernel writes back."""
    no_appendfsync_on_rewrite: Annotated[Bool, Directive("model/aof.py", keyspace=False)] = False
    """Skip fsync while a fork child (BGSAVE or rewrite) exists."""
    auto_aof_rewrite_percentage: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX),
                                           Directive("model/aof.py", keyspace=False)] = 100
    """Rewrite the AOF once it grew by this % over its size after the last
    rewrite, %; 0 = never."""
    auto_aof_rewrite_min_size: Annotated[Bytes, Directive("model/aof.py", keyspace=False)] = (
        64 * 1024**2)
    """... and only once it is larger than this, bytes."""
    disable_thp: Annotated[Bool, Directive("model/fork.py")] = True
    """Redis opts out of transparent huge pages (``prctl``) when the host's
    setting is ``always`` (6.2+); set ``no`` to keep them (S1)."""
    save: Annotated[list[tuple[int, int]], _v(parse_save), Directive("model/fork.py")] = Field(
        default_factory=lambda: [(3600, 1), (300, 100), (60, 10000)]
    )
    """RDB save points as (seconds, changes) pairs; [] = no snapshots."""
    io_threads: Annotated[int, _v(parse_int, minimum=1, maximum=128),
                          Directive("model/io_threads.py", keyspace=False)] = 1
    """Threads writing replies (and with ``io-threads-do-reads``, reading and parsing),
    the main thread included (``model/io_threads.py``). As Redis 6/7 does it
    (``engine.io-threads-model: sync``, the default): used when at least
    2 x io-threads clients have replies pending; while in use each I/O thread
    keeps a core busy. As Redis 8 does it (``async``): every client is served by
    one of the io-threads - 1 threads, which read, parse and write for it."""
    io_threads_do_reads: Annotated[Bool, Directive("model/io_threads.py", keyspace=False)] = False
    """With ``io-threads`` > 1, the I/O threads also read and parse the queries; the
    main thread still executes every command."""
    client_query_buffer_limit: Annotated[int, _v(parse_size),
                                         Directive("model/protocol.py", keyspace=False)] = 1024**3
    """Per-client query buffer cap, bytes (at least 1mb). A client whose query buffer
    passes it after a read is closed: its request fails."""
    proto_max_bulk_len: Annotated[int, _v(parse_size),
                                  Directive("model/protocol.py")] = 512 * 1024**2
    """Largest bulk argument, bytes (at least 1mb). A command carrying a longer one is
    a protocol error and its client is closed: the request fails."""
    maxmemory_clients: Annotated[Bytes, Directive("model/client_eviction.py", keyspace=False)] = 0
    """Client-eviction limit, bytes (a "N%" of maxmemory is resolved to bytes); 0 = off;
    7.0+. While the normal clients' memory is at or over it (raised to at least
    128 KB, as Redis does), Redis frees the largest clients; a request they had in
    flight fails and the client reconnects after its group's retry-backoff."""
    latency_monitor_threshold: Annotated[int, _v(_whole_ms),
                                         Directive("model/latency.py", keyspace=False)] = 0
    """Latency monitor threshold, ms (a bare number is ms, as in Redis); 0 = off."""
    activedefrag: Annotated[Bool, Directive("model/defrag.py", runtime="DF_ENABLED")] = False
    """Active defrag (``model/defrag.py``): serverCron moves allocations out of
    sparsely used jemalloc slabs, spending cycle-min..cycle-max % of the main thread
    while the allocator's fragmentation calls for it. Needs Redis's bundled jemalloc
    (a build linked to the system's, like Debian's, refuses it)."""
    active_defrag_ignore_bytes: Annotated[Bytes, Directive("model/defrag.py",
                                                           runtime="DF_IGNORE_BYTES")] = (
        100 * 1024**2)
    """No defrag pass starts while ``allocator_frag_bytes`` is below this, bytes."""
    active_defrag_threshold_lower: Annotated[int, _v(parse_int, minimum=0, maximum=1000),
                                             Directive("model/defrag.py", runtime="DF_LOWER")] = 10
    """No defrag pass starts below this allocator fragmentation, % (frag ratio − 1)."""
    active_defrag_threshold_upper: Annotated[int, _v(parse_int, minimum=0, maximum=1000),
                                             Directive("model/defrag.py", runtime="DF_UPPER")] = 100
    """At this fragmentation, % (and above), a pass takes cycle-max."""
    active_defrag_cycle_min: Annotated[int, _v(parse_int, minimum=1, maximum=99),
                                       Directive("model/defrag.py", runtime="DF_MIN")] = 1
    """Least main-thread effort of a defrag pass, % of each serverCron period."""
    active_defrag_cycle_max: Annotated[int, _v(parse_int, minimum=1, maximum=99),
                                       Directive("model/defrag.py", runtime="DF_MAX")] = 25
    """Most main-thread effort of a defrag pass, % of each serverCron period."""
    active_defrag_max_scan_fields: Annotated[int, _v(parse_int, minimum=1),
                                             Directive("model/defrag.py")] = 1000
    """Fields of a big collection scanned in one step (``defragLater``); every key
    is a string here, so it has nothing to bound."""
    repl_backlog_size: Annotated[int, _v(_backlog_size),
                                 Directive("model/replication.py", keyspace=False)] = 1024**2
    """The replication backlog a replica's partial resync (PSYNC) is served from,
    bytes (at least 16 KB, Redis's minimum); it exists once a replica has
    connected (``model/replication.py``)."""
    repl_backlog_ttl: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX),
                                Directive("model/replication.py", keyspace=False)] = 3600
    """Seconds without any replica after which the backlog is freed; 0 = never."""
    client_output_buffer_limit: Annotated[
        dict[str, tuple[int, int, int]], _v(parse_obuf_limits),
        Directive("model/replication.py", keyspace=False)] = Field(
        default_factory=lambda: dict(OBUF_DEFAULTS))
    """Output-buffer limits per client class, ``CLASS HARD SOFT SOFT-SECONDS``
    as in redis.conf (``replica 256mb 64mb 60``; the classes not given keep
    Redis's defaults). redsim applies the ``replica`` class: a replica whose
    pending replication stream reaches ``hard``, or stays at ``soft`` or above
    for more than ``soft-seconds``, is disconnected. ``normal`` (0 0 0 by
    default) and ``pubsub`` are accepted and not modelled."""
    repl_diskless_sync: Annotated[Bool, Directive("model/replication.py", keyspace=False)] = True
    """A full sync's RDB goes from the fork child straight to the replicas'
    sockets (Redis 7's default; 6.2's is ``no``: written to disk first, then sent)."""
    repl_diskless_sync_delay: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX),
                                        Directive("model/replication.py", keyspace=False)] = 5
    """Seconds a diskless full sync waits for more replicas before it forks."""
    repl_diskless_sync_max_replicas: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX),
                                               Directive("model/replication.py",
                                                         keyspace=False)] = 0
    """A diskless full sync forks before its delay once this many replicas wait for
    it; 0 = always wait the delay (Redis 7.0+)."""
    repl_timeout: Annotated[int, _v(parse_int, minimum=1, maximum=INT_MAX),
                            Directive("model/replication.py", keyspace=False)] = 60
    """Seconds a replica waits without data from the primary before it drops the
    link and reconnects (the primary's pings, every ``repl-ping-replica-period``,
    count as data)."""
    repl_ping_replica_period: Annotated[int, _v(parse_int, minimum=1, maximum=INT_MAX),
                                        Directive("model/replication.py", keyspace=False)] = 10
    """Seconds between the PINGs the primary sends its replicas down the stream."""
    min_replicas_to_write: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX),
                                     Directive("model/replication.py", keyspace=False)] = 0
    """Refuse writes (``-NOREPLICAS``) while fewer replicas than this are online and
    acked within ``min-replicas-max-lag``; 0 = off (alias ``min-slaves-to-write``)."""
    min_replicas_max_lag: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX),
                                    Directive("model/replication.py", keyspace=False)] = 10
    """Seconds since a replica's last ack for it to count; 0 = the check is off."""
    unmodelled: Annotated[dict[str, str], _v(parse_unmodelled)] = Field(default_factory=dict)
    """Directives Redis knows and redsim does not model, kept as conf text."""

    @model_validator(mode="before")
    @classmethod
    def _route_unmodelled(cls, data: Any) -> Any:
        # Any key Redis knows but redsim does not model is kept, never an error:
        # move it into `unmodelled` before the strict key check sees it.
        if not isinstance(data, dict):
            return data
        keys = {_hyphen(name) for name in cls.model_fields} | set(cls.model_fields)
        out: dict[Any, Any] = {}
        moved: dict[Any, Any] = {}
        for key, value in data.items():
            name = _directive(key)
            if name in DIRECTIVE_ALIASES:  # an old name of a modelled directive
                key = name = DIRECTIVE_ALIASES[name]
            if key not in keys and name not in MODELLED_DIRECTIVES and _known_directive(name):
                moved[name] = value
            else:
                out[key] = value
        if moved:
            existing = out.get("unmodelled", {})
            if isinstance(existing, dict):
                out["unmodelled"] = {**moved, **existing}
        _resolve_percent(out)
        return out

    @model_validator(mode="after")
    def _check(self) -> Server:
        if self.maxmemory > MAX_MAXMEMORY:
            raise BadValue("a maxmemory of at most 1tb (the most redsim simulates: a fork's "
                           "copy-on-write page map grows with it)", show(self.maxmemory),
                           field=("maxmemory",))
        if self.timeout > INT_MAX:
            # config.c: timeout is an int of seconds, 0..INT_MAX.
            raise BadValue(f"a timeout of at most {INT_MAX} s (Redis's limit)",
                           f"{self.timeout:g} s", field=("timeout",))
        if self.timeout != int(self.timeout):
            raise BadValue("whole seconds (Redis's timeout is an integer of seconds)",
                           f"{self.timeout:g} s", field=("timeout",))
        if self.client_query_buffer_limit < 1024**2:
            # config.c: client-query-buffer-limit lower bound is 1mb.
            raise BadValue("a size ≥ 1mb", show(self.client_query_buffer_limit),
                           field=("client-query-buffer-limit",))
        if self.proto_max_bulk_len < 1024**2:
            raise BadValue("a size ≥ 1mb", show(self.proto_max_bulk_len),
                           field=("proto-max-bulk-len",))
        return self


DIRECTIVES: dict[str, Directive] = directives(Server, exempt=("unmodelled",))
"""Every modelled Redis directive (the hyphenated field name) and its
declaration (``declare.Directive``), in ``Server``'s field order."""

MODELLED_DIRECTIVES: frozenset[str] = frozenset(DIRECTIVES)
"""The directives ``server:`` checks as fields (all modelled but those of
``directives.NOT_YET_MODELLED``, which warn when set); every other directive
Redis knows goes to ``server.unmodelled``."""

RUNTIME_SETTABLE: dict[str, str] = {
    name: d.runtime for name, d in DIRECTIVES.items() if d.runtime is not None}
"""The directives a ``config-set`` event may change, and the kernel's ``I``
scalar each one's ``CONFIG SET`` writes (``ScenarioEvent.settings``)."""


def _resolve_percent(data: dict[Any, Any]) -> None:
    """Turn `maxmemory-clients: 10%` into bytes of maxmemory, as Redis 7 computes it
    (`maxmemory * pct / 100`; 0 when maxmemory is 0)."""
    for key in ("maxmemory-clients", "maxmemory_clients"):
        value = data.get(key)
        if isinstance(value, str) and value.strip().endswith("%"):
            try:
                pct = parse_float(value.strip()[:-1], minimum=0, maximum=100)
            except BadValue:
                raise BadValue("a percentage of maxmemory between 0% and 100%", show(value),
                               field=(key,)) from None
            try:
                limit = parse_size(data.get("maxmemory", 0))
            except BadValue:
                return  # maxmemory's own error is reported first
            data[key] = round(limit * pct / 100)
