"""The scenario schema: pydantic models of a Redis deployment and its workload.

YAML keys use hyphens like Redis directives (`maxmemory-policy`, `max-size`); Python
attributes are snake_case. Every value with a unit goes through the parsers in
`redsim.config.units`, so models hold plain numbers in fixed units:

- sizes: int bytes;  durations: float seconds;  CPU costs: float µs;
- rates: float per second;  `latency_monitor_threshold`: int ms (as Redis).

Defaults are Redis 7.2's (reference §9). The models are plain data: no behaviour
beyond validation. Errors raise `BadValue` (a `ValueError`) so the loader can turn
them into a `ScenarioError` naming the file, line and field path.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from functools import partial
from itertools import pairwise
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_serializer,
    model_serializer,
    model_validator,
)

from redsim.config import host_presets
from redsim.config.directives import (
    DIRECTIVE_ALIASES,
    KNOWN_REDIS_DIRECTIVES,
    MODELLED_DIRECTIVES,
    REDIS_DEFAULTS,
)
from redsim.config.errors import BadValue, did_you_mean, show, show_path
from redsim.config.host_presets import HOST_PRESETS
from redsim.config.redis_conf import OBUF_CLASSES, quote_arg
from redsim.config.units import (
    MAX_DURATION_S,
    parse_bandwidth,
    parse_bool,
    parse_cost_us,
    parse_duration,
    parse_float,
    parse_int,
    parse_link_rate,
    parse_rate,
    parse_size,
)
from redsim.fileio import IRREGULAR, TOO_LARGE, UNREADABLE, RefusedFile, open_regular
from redsim.model.commands import COMMANDS, EFFECT_INCR, EFFECT_READ, EFFECT_WRITE
from redsim.model.presets import DISK_PRESETS, FORK_PRESETS
from redsim.model.sizing import (
    connection_rows,
    memoryless_group,
    request_slots,
    write_once_rows_bound,
)
from redsim.model.state import CONFIG_MAX_HZ, CONFIG_MIN_HZ, EMP_MAX_POINTS

# ---------------------------------------------------------------------------------
# Annotated value types: a plain Python type plus the unit parser that produces it.


def _v(fn: Callable[..., Any], **kwargs: Any) -> BeforeValidator:
    """A before-validator calling `fn(value, **kwargs)`."""
    return BeforeValidator(partial(fn, **kwargs) if kwargs else fn)


def _optional(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Let None through `fn` (for fields whose None means "not set")."""

    def parse(v: Any) -> Any:
        return None if v is None else fn(v)

    return parse


def _choice(options: tuple[str, ...]) -> Callable[[Any], str]:
    """A validator accepting one of `options`, case-insensitively."""

    def parse(v: Any) -> str:
        if isinstance(v, str) and v.strip().lower() in options:
            return v.strip().lower()
        expected = "one of " + ", ".join(repr(o) for o in options)
        hint = did_you_mean(v, options) if isinstance(v, str) else None
        raise BadValue(expected, show(v), hint=hint)

    return parse


def _duration_above_zero(v: Any) -> float:
    seconds = parse_duration(v)
    if seconds <= 0:
        raise BadValue("a duration > 0 like 1s or 500ms (a bare number is in seconds)", show(v))
    return seconds


def _whole_ms(v: Any) -> int:
    # Redis stores latency-monitor-threshold as integer milliseconds.
    return round(parse_duration(v, "ms") * 1000)


def _hz(v: Any) -> int:
    # Redis accepts 0..INT_MAX and clamps to CONFIG_MIN_HZ..CONFIG_MAX_HZ (1..500)
    # when applying it (server.c), so 0 runs at 1 Hz and 1000 at 500 Hz.
    return min(max(parse_int(v, minimum=0), CONFIG_MIN_HZ), CONFIG_MAX_HZ)


def _big_key_name(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise BadValue("a key name (a non-empty string)", show(v))
    return v


def _list_size(v: Any) -> int:
    # quicklistSetFill clamps: below -5 is -5 (64 KB nodes), above 32768 is 32768.
    return min(max(parse_int(v), -5), 1 << 15)


def _backlog_size(v: Any) -> int:
    # config.c: repl-backlog-size has a minimum of 16 KB (CONFIG_REPL_BACKLOG_MIN_SIZE).
    size = parse_size(v)
    if size < 16 * 1024:
        raise BadValue("a size ≥ 16kb (Redis's minimum backlog)", show(v))
    return size


Bool = Annotated[bool, _v(parse_bool)]
Bytes = Annotated[int, _v(parse_size)]
Seconds = Annotated[float, _v(parse_duration)]
PositiveSeconds = Annotated[float, _v(_duration_above_zero)]
CostUs = Annotated[float, _v(parse_cost_us)]
OptionalCostUs = Annotated[float | None, _v(_optional(parse_cost_us))]
NonNegInt = Annotated[int, _v(parse_int, minimum=0)]
PositiveInt = Annotated[int, _v(parse_int, minimum=1)]

# Bounds on what one run may hold. Each is far above any scenario shipped (the
# largest has 5,000,000 keys and ~10,000 connections) and keeps the arrays the
# run allocates within a few GB, so a typo (`keys: 5e12`) is an error naming the
# field instead of a MemoryError or an out-of-memory kill minutes later.
INT_MAX = 2**31 - 1
"""C's INT_MAX: the upper bound Redis's config.c gives most integer directives."""


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


MAX_KEYS = 100_000_000
"""Keys per client group's keyspace (each key row takes ~100 bytes of simulator memory)."""
MAX_CONNECTIONS = 1_000_000
"""Connections all pools may open together (Σ processes × pool.max-size)."""
MAX_REQUEST_SLOTS = 10_000_000
"""Requests the clients may have outstanding (one slot each, ~200 bytes)."""
MAX_IN_FLIGHT = 10_000_000
"""Connections × the deepest pipeline: what one event-loop iteration may read."""
MAX_SAMPLES_PER_RUN = 1_000_000
"""duration / sample-interval: the INFO-like samples a run records. Each costs ~2 KB
at the run's peak (the kernel's windows, ~600 B, then the result's table and its
file): a one-group light load over 30 days peaked at 0.34 GB with hourly samples
and 2.0 GB with 864,000 (bench/bench_long.py, 2026-11-27); more client groups add
columns."""
MAX_MAXMEMORY = 1024**4
"""maxmemory, bytes (1 TB): the copy-on-write page map of a fork scales with it."""
MAX_VALUE_SIZE = 4 * 1024**3
"""A value size, bytes (4 GB; Redis's own limit is proto-max-bulk-len, 512 MB by default)."""
MAX_KEY_SIZE = 512 * 1024**2
"""A key's length, bytes (512 MB, Redis's string limit)."""
MIN_PERIOD_S = 1e-6
"""Shortest period of a repeating timer, s: a clock near 100 years still moves by it."""
MIN_CYCLE_S = 1e-9
"""Shortest time one request of a closed loop may take, round trip and CPU included."""
MAX_REPLICAS = 64
"""Replicas one server may have (the kernel walks them every event-loop iteration)."""
MAX_SIGMA = 10.0
"""A lognormal sigma: e^(sigma²/2) = e^50 between the mean and the median already."""

EvictionPolicy = Literal[
    "noeviction",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
]
AppendFsync = Literal["always", "everysec", "no"]
Thp = Literal["always", "madvise", "never"]
ThpCow = Literal["split", "copy-huge"]
EventAction = Literal["bgsave", "bgrewriteaof", "populate", "del", "unlink", "flushall",
                      "memory-purge", "config-set"]
RUNTIME_SETTABLE = frozenset({
    "activedefrag", "active-defrag-ignore-bytes", "active-defrag-threshold-lower",
    "active-defrag-threshold-upper", "active-defrag-cycle-min", "active-defrag-cycle-max"})
"""Directives a ``config-set`` event may change (``model/defrag.py``'s ``SETTABLE``)."""
DelPattern = Literal["odd", "even", "every", "random", "first"]
FlushMode = Literal["async", "sync"]
CollectionType = Literal["hash", "set", "zset", "list"]
KeyType = Literal["string", "hash", "set", "zset", "list"]
RedisVersion = Literal["6.2", "7.0", "7.2"]
ServiceDistribution = Literal["fixed", "exponential"]
ClientKind = Literal["closed", "open", "trace"]
TraceTiming = Literal["closed", "recorded"]
TraceFormat = Literal["commands", "twitter", "oracle-general"]
TraceKeyOverflow = Literal["error", "modulo"]
Replay = Literal["once", "loop"]
Checkout = Literal["lifo", "fifo"]
KeyDistribution = Literal["uniform", "zipf"]
IoThreadsModel = Literal["sync", "async"]
Placement = Literal["remote", "same-host"]
DistKind = Literal["fixed", "exponential", "uniform", "lognormal", "empirical", "mixture"]


def _literal(lit: Any) -> BeforeValidator:
    return _v(_choice(get_args(lit)))


def _hyphen(name: str) -> str:
    return name.replace("_", "-")


def _directive(key: Any) -> str:
    """A ``server:`` key as Redis reads a directive: case-insensitive, ``_`` as ``-``."""
    return str(key).lower().replace("_", "-")


def _as_section(annotation: Any) -> bool:
    # A nested model that is always present (not Optional), like server or pool.
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


class _Model(BaseModel):
    """Shared settings: hyphenated YAML keys, snake_case attributes, no unknown keys.

    A section key with no value (`server:` with every line commented out) means
    the section's defaults, not an error.
    """

    model_config = ConfigDict(
        alias_generator=_hyphen,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _empty_sections(cls, data: Any) -> Any:
        if not isinstance(data, dict) or None not in data.values():
            return data
        sections = {
            key
            for name, field in cls.model_fields.items()
            if _as_section(field.annotation)
            for key in (name, _hyphen(name))
        }
        return {k: v for k, v in data.items() if not (v is None and k in sections)}


# ---------------------------------------------------------------------------------
# Server: the Redis directives redsim models.

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


class Server(_Model):
    """The Redis server's configuration; keys are Redis directive names and defaults
    are Redis 7.2's. Directives Redis knows but redsim does not model go to
    `unmodelled` (also when written directly under `server:`)."""

    hz: Annotated[int, _v(_hz)] = 10
    """serverCron frequency, 1/s; clamped to 1..500 like Redis (0 → 1, 1000 → 500)."""
    dynamic_hz: Bool = True
    """Double hz while clients/hz > 200 (up to 500)."""
    maxclients: Annotated[int, _v(parse_int, minimum=1, maximum=2**32 - 1)] = 10000
    """Connection limit, clients (1..UINT_MAX, as Redis). A scenario whose pools could
    open more connections is refused, so no connection is ever refused in a run."""
    timeout: Seconds = 0.0
    """Idle client timeout, whole seconds; 0 = never. clientsCron closes a client
    whose last read or reply is more than this many whole seconds old (so after
    ``timeout`` to ``timeout + 1`` s idle); its pool dials a new connection at
    its next use."""
    maxmemory: Bytes = 0
    """Memory limit, bytes; 0 = no limit; at most 1 TB (``MAX_MAXMEMORY``)."""
    maxmemory_policy: Annotated[EvictionPolicy, _literal(EvictionPolicy)] = "noeviction"
    maxmemory_samples: Annotated[int, _v(parse_int, minimum=1, maximum=64)] = 5
    """Keys sampled per eviction round (Redis allows more; redsim caps at 64)."""
    maxmemory_eviction_tenacity: Annotated[int, _v(parse_int, minimum=0, maximum=100)] = 10
    lazyfree_lazy_eviction: Bool = False
    """Free evicted keys on the lazyfree thread (``model/eviction.py``)."""
    lazyfree_lazy_expire: Bool = False
    """Free expired keys' big values on the lazyfree thread (``model/lazyfree.py``)."""
    lazyfree_lazy_server_del: Bool = False
    """Free keys a command deletes implicitly on the lazyfree thread: in redsim,
    a collection emptied by HDEL, SREM, ZREM or a pop, whose effort of 0 keeps
    it on the main thread all the same (redsim's commands never overwrite a
    collection; ``model/lazyfree.py``)."""
    lazyfree_lazy_user_del: Bool = False
    """DEL as UNLINK: big values go to the lazyfree thread (``model/lazyfree.py``)."""
    lazyfree_lazy_user_flush: Bool = False
    """A FLUSHALL event without a ``mode`` is FLUSHALL ASYNC: the bio lazyfree
    thread frees the keys (``model/admin.py``)."""
    hash_max_listpack_entries: NonNegInt = 512
    """A hash with more fields is a hashtable (alias ``hash-max-ziplist-entries``)."""
    hash_max_listpack_value: NonNegInt = 64
    """A hash with a longer field or value is a hashtable, bytes."""
    set_max_intset_entries: NonNegInt = 512
    """A set of integers with more members is a hashtable."""
    set_max_listpack_entries: NonNegInt = 128
    """7.2: a set of strings with more members is a hashtable (7.0 has no listpack sets)."""
    set_max_listpack_value: NonNegInt = 64
    """7.2: a set with a longer member is a hashtable, bytes."""
    zset_max_listpack_entries: NonNegInt = 128
    """A sorted set with more members is a skiplist (alias ``zset-max-ziplist-entries``)."""
    zset_max_listpack_value: NonNegInt = 64
    """A sorted set with a longer member is a skiplist, bytes."""
    list_max_listpack_size: Annotated[int, _v(_list_size)] = -2
    """A list's node (quicklist) limit: −1 … −5 for 4, 8, 16, 32, 64 KB, or a
    positive count of elements per node (alias ``list-max-ziplist-size``)."""
    busy_reply_threshold: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX)] = 5000
    """A script (EVAL, FCALL) running longer than this lets other clients in,
    each command answered ``-BUSY``, ms; 0 = never (alias ``lua-time-limit``;
    ``model/scripts.py``)."""
    lfu_log_factor: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX)] = 10
    lfu_decay_time: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX)] = 1
    """Minutes per LFU counter decrement; 0 = never decay."""
    active_expire_effort: Annotated[int, _v(parse_int, minimum=1, maximum=10)] = 1
    appendonly: Bool = False
    """Log every write to the append-only file (``model/aof.py``)."""
    appendfsync: Annotated[AppendFsync, _literal(AppendFsync)] = "everysec"
    """always: fdatasync on the main thread before the replies; everysec: a
    background fsync once a second (writes wait ≤ 2 s behind a slow one); no: the
    kernel writes back."""
    no_appendfsync_on_rewrite: Bool = False
    """Skip fsync while a fork child (BGSAVE or rewrite) exists."""
    auto_aof_rewrite_percentage: Annotated[int, _v(parse_int, minimum=0,
                                                   maximum=INT_MAX)] = 100
    """Rewrite the AOF once it grew by this % over its size after the last
    rewrite, %; 0 = never."""
    auto_aof_rewrite_min_size: Bytes = 64 * 1024**2
    """... and only once it is larger than this, bytes."""
    disable_thp: Bool = True
    """Redis opts out of transparent huge pages (``prctl``) when the host's
    setting is ``always`` (6.2+); set ``no`` to keep them (S1)."""
    save: Annotated[list[tuple[int, int]], _v(parse_save)] = Field(
        default_factory=lambda: [(3600, 1), (300, 100), (60, 10000)]
    )
    """RDB save points as (seconds, changes) pairs; [] = no snapshots."""
    io_threads: Annotated[int, _v(parse_int, minimum=1, maximum=128)] = 1
    """Threads writing replies (and with ``io-threads-do-reads``, reading and parsing),
    the main thread included (``model/io_threads.py``). As Redis 6/7 does it
    (``engine.io-threads-model: sync``, the default): used when at least
    2 x io-threads clients have replies pending; while in use each I/O thread
    keeps a core busy. As Redis 8 does it (``async``): every client is served by
    one of the io-threads - 1 threads, which read, parse and write for it."""
    io_threads_do_reads: Bool = False
    """With ``io-threads`` > 1, the I/O threads also read and parse the queries; the
    main thread still executes every command."""
    client_query_buffer_limit: Annotated[int, _v(parse_size)] = 1024**3
    """Per-client query buffer cap, bytes (at least 1mb). A client whose query buffer
    passes it after a read is closed: its request fails."""
    proto_max_bulk_len: Annotated[int, _v(parse_size)] = 512 * 1024**2
    """Largest bulk argument, bytes (at least 1mb). A command carrying a longer one is
    a protocol error and its client is closed: the request fails."""
    maxmemory_clients: Bytes = 0
    """Client-eviction limit, bytes (a "N%" of maxmemory is resolved to bytes); 0 = off;
    7.0+. While the normal clients' memory is at or over it (raised to at least
    128 KB, as Redis does), Redis frees the largest clients; a request they had in
    flight fails and the client reconnects after its group's retry-backoff."""
    latency_monitor_threshold: Annotated[int, _v(_whole_ms)] = 0
    """Latency monitor threshold, ms (a bare number is ms, as in Redis); 0 = off."""
    activedefrag: Bool = False
    """Active defrag (``model/defrag.py``): serverCron moves allocations out of
    sparsely used jemalloc slabs, spending cycle-min..cycle-max % of the main thread
    while the allocator's fragmentation calls for it. Needs Redis's bundled jemalloc
    (a build linked to the system's, like Debian's, refuses it)."""
    active_defrag_ignore_bytes: Bytes = 100 * 1024**2
    """No defrag pass starts while ``allocator_frag_bytes`` is below this, bytes."""
    active_defrag_threshold_lower: Annotated[int, _v(parse_int, minimum=0, maximum=1000)] = 10
    """No defrag pass starts below this allocator fragmentation, % (frag ratio − 1)."""
    active_defrag_threshold_upper: Annotated[int, _v(parse_int, minimum=0, maximum=1000)] = 100
    """At this fragmentation, % (and above), a pass takes cycle-max."""
    active_defrag_cycle_min: Annotated[int, _v(parse_int, minimum=1, maximum=99)] = 1
    """Least main-thread effort of a defrag pass, % of each serverCron period."""
    active_defrag_cycle_max: Annotated[int, _v(parse_int, minimum=1, maximum=99)] = 25
    """Most main-thread effort of a defrag pass, % of each serverCron period."""
    active_defrag_max_scan_fields: Annotated[int, _v(parse_int, minimum=1)] = 1000
    """Fields of a big collection scanned in one step (``defragLater``); every key
    is a string here, so it has nothing to bound."""
    repl_backlog_size: Annotated[int, _v(_backlog_size)] = 1024**2
    """The replication backlog a replica's partial resync (PSYNC) is served from,
    bytes (at least 16 KB, Redis's minimum); it exists once a replica has
    connected (``model/replication.py``)."""
    repl_backlog_ttl: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX)] = 3600
    """Seconds without any replica after which the backlog is freed; 0 = never."""
    client_output_buffer_limit: Annotated[dict[str, tuple[int, int, int]],
                                          _v(parse_obuf_limits)] = Field(
        default_factory=lambda: dict(OBUF_DEFAULTS))
    """Output-buffer limits per client class, ``CLASS HARD SOFT SOFT-SECONDS``
    as in redis.conf (``replica 256mb 64mb 60``; the classes not given keep
    Redis's defaults). redsim applies the ``replica`` class: a replica whose
    pending replication stream reaches ``hard``, or stays at ``soft`` or above
    for more than ``soft-seconds``, is disconnected. ``normal`` (0 0 0 by
    default) and ``pubsub`` are accepted and not modelled."""
    repl_diskless_sync: Bool = True
    """A full sync's RDB goes from the fork child straight to the replicas'
    sockets (Redis 7's default; 6.2's is ``no``: written to disk first, then sent)."""
    repl_diskless_sync_delay: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX)] = 5
    """Seconds a diskless full sync waits for more replicas before it forks."""
    repl_diskless_sync_max_replicas: Annotated[int, _v(parse_int, minimum=0,
                                                       maximum=INT_MAX)] = 0
    """A diskless full sync forks before its delay once this many replicas wait for
    it; 0 = always wait the delay (Redis 7.0+)."""
    repl_timeout: Annotated[int, _v(parse_int, minimum=1, maximum=INT_MAX)] = 60
    """Seconds a replica waits without data from the primary before it drops the
    link and reconnects (the primary's pings, every ``repl-ping-replica-period``,
    count as data)."""
    repl_ping_replica_period: Annotated[int, _v(parse_int, minimum=1, maximum=INT_MAX)] = 10
    """Seconds between the PINGs the primary sends its replicas down the stream."""
    min_replicas_to_write: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX)] = 0
    """Refuse writes (``-NOREPLICAS``) while fewer replicas than this are online and
    acked within ``min-replicas-max-lag``; 0 = off (alias ``min-slaves-to-write``)."""
    min_replicas_max_lag: Annotated[int, _v(parse_int, minimum=0, maximum=INT_MAX)] = 10
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


# ---------------------------------------------------------------------------------
# Engine: model switches and the CPU cost model (all costs in µs).


class CommandCost(_Model):
    """Overrides of one command's CPU cost, µs; None keeps the command table's value."""

    fixed: OptionalCostUs = None
    """Fixed CPU per call, µs."""
    per_byte: OptionalCostUs = None
    """CPU per value byte copied, µs/B."""
    per_element: OptionalCostUs = None
    """CPU per key/member/element touched, µs."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        # `GET: 1.2` is short for `GET: {fixed: 1.2}`.
        if isinstance(data, (int, float, str)) and not isinstance(data, bool):
            return {"fixed": data}
        return data


def parse_command_name(v: Any) -> str:
    """An upper-case command name from COMMANDS (case-insensitive input)."""
    if isinstance(v, str) and v.strip().upper() in COMMANDS:
        return v.strip().upper()
    raise BadValue(
        "a command redsim models (" + ", ".join(sorted(COMMANDS)) + ")",
        show(v),
        hint=did_you_mean(v.upper(), COMMANDS) if isinstance(v, str) else None,
    )


def _parse_commands(v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise BadValue("a mapping of command name → cost", show(v))
    out: dict[str, Any] = {}
    for key, value in v.items():
        try:
            name = parse_command_name(key)
        except BadValue as exc:
            raise BadValue(exc.expected, exc.found, field=(str(key),), hint=exc.hint) from None
        out[name] = value
    return out


class CacheMiss(_Model):
    """What a dependent load that misses each level of the memory hierarchy costs
    the main thread, µs (``model/cpu_caches.py``), beyond what the per-command
    costs already hold for the dataset they were calibrated on
    (``calibrated-on``). Fitted by non-negative least squares to GET and SET at
    pipeline 1 and 16 over 10 K to 30 M keys of 64 B on a 2-vCPU Intel Xeon VM
    (L2 2 MB, L3 260 MB; Debian's Redis 7.0.15; ``python
    results/cpu_vs_dataset.py``, 2026-11-28; ``calibrate/misses.py``'s fit):
    each level's share of the rise from 0.72 to 2.6 µs per GET; the 24 medians
    within 12 %, rms 5 %. ``redsim calibrate`` fits them for its host."""

    l2: CostUs = 0.055
    """A load that misses the L2 and hits the last-level cache, µs."""
    tlb: CostUs = 0.116
    """A load whose page is not in the TLB (a page walk that hits the caches), µs."""
    llc: CostUs = 0.111
    """A load that misses the last-level cache (DRAM), µs."""
    page_walk: CostUs = 0.170
    """A page walk whose page-table entries miss the L2 too (the dataset past
    512 × the L2: an 8-byte entry maps each 4 KB page), µs. On a VM the walk
    is two-dimensional, hence a cost near a DRAM access's."""


def _no_miss(v: Any) -> Any:
    """``none`` (or 0) for a ``CacheMiss`` of zeros."""
    if v is None or v == 0 or (isinstance(v, str) and v.strip().lower() == "none"):
        return {"l2": 0, "tlb": 0, "llc": 0, "page-walk": 0}
    return v


class CalibratedOn(_Model):
    """The dataset the per-command costs were measured on: a run over another
    dataset is charged the difference in cache misses (``model/cpu_caches.py``).
    The defaults are ``redsim calibrate``'s loads (redis-benchmark ``-r
    100000``, 3-byte values, keys of ``redsim:calib:`` and 12 digits)."""

    keys: Annotated[int, _v(parse_int, minimum=1)] = 100_000
    """Keys, accessed uniformly."""
    value_size: Annotated[int, _v(parse_int, minimum=0)] = 3
    """Bytes per value."""
    key_size: Annotated[int, _v(parse_int, minimum=1)] = 25
    """Bytes per key name."""
    eviction_keys: Annotated[int, _v(parse_int, minimum=1)] = 900_000
    """Keys eviction sampled while its costs were measured (``eviction-sample``,
    ``eviction-delete``): ``redsim calibrate``'s 600,000 keys and the 300,000 a
    load adds. Expiry's samples are referred to the same dataset."""
    eviction_value_size: Annotated[int, _v(parse_int, minimum=0)] = 100
    """Bytes per value of that dataset."""


class Cpu(_Model):
    """Main-thread CPU costs, µs, besides the command procedures themselves.

    Defaults are a calibration of the reference host, a 2-vCPU Intel Xeon VM
    (5th-generation Xeon Scalable, KVM; L2 2 MB, LLC 260 MB shared) running
    Debian's Redis 7.0.15: the medians of eight full calibrations
    (``redsim calibrate --start --reps 5 --commands all``) a minute or more
    apart on two days, 2026-11-28 and 29, file
    ``results/calibration/reference-host/calibration.yaml``, whose README gives
    each run and the spread (1-7 % for the per-request figures, 14-17 % for
    the per-command parts). They are the per-request I/O, the sleeping poll,
    the eviction costs and the command table's per-command parts; the miss
    costs (``miss``) were fitted on the same VM's dataset sweep. Costs it did
    not measure (iteration, per byte, accept/close, cron, expiry, AOF write)
    keep their earlier estimates. The first reference host, a 2-vCPU AMD EPYC
    VM (``results/calibration/amd-epyc-2vcpu/``, 2026-11-24), measured 18 %
    more per SET at pipeline 1 and 18 % less at pipeline 16."""

    scale: Annotated[float, _v(parse_float, minimum=0, exclusive_min=True,
                               maximum=1000)] = 1.0
    """Multiplier on every main-thread CPU cost below and in the command table
    (dimensionless): 0.5 is a core twice as fast. The "CPU headroom" what-if: it
    scales eviction and expiry work with the commands, as a faster core would."""

    iteration: CostUs = 1.0
    """Per event-loop iteration: epoll_wait + beforeSleep fixed work, µs."""
    wakeup: CostUs = 24.3
    """Per iteration whose epoll_wait slept: the blocking call, the wake-up and the
    caches gone cold after it, µs. What a lightly loaded server pays per request
    (``redsim calibrate`` measures it from the main thread's voluntary context
    switches)."""
    read: CostUs = 1.73
    """Per read() of a connection, incl. parsing what was read, µs (the reference
    host's per-request I/O cost, 4.33 µs, split 40/60 between read and write:
    CPU time alone cannot tell them apart)."""
    read_per_byte: CostUs = 0.0002
    """Per byte read, µs/B."""
    write: CostUs = 2.60
    """Per reply write() to a connection, µs (on loopback a write also runs the
    receiver's TCP input path, hence the larger share)."""
    write_per_byte: CostUs = 0.0002
    """Per byte written, µs/B."""
    accept: CostUs = 20.0
    """Accepting a connection (createClient), µs."""
    tls_handshake: CostUs = 350.0
    """The server's side of a TLS 1.3 handshake, on the main thread (7.x runs
    ``SSL_accept`` in the connection's event handler), per connection of a group
    with ``tls: yes``, µs. Measured with ``openssl speed`` (OpenSSL 3.0.19) on
    the 2-vCPU AMD EPYC VM: an RSA-2048 signature (the key
    ``utils/gen-test-certs.sh`` makes) 257 µs and an X25519 key agreement
    32.5 µs, twice (key generation and derivation): ~322 µs, plus the
    handshake's hashing, key schedule and records, rounded to 350 µs. An ECDSA
    P-256 certificate signs in ~20 µs: about 100 µs in all."""
    close: CostUs = 10.0
    """Freeing a closed connection (freeClient), µs."""
    cron: CostUs = 30.0
    """serverCron fixed work per call, µs."""
    clients_cron_per_client: CostUs = 0.1
    """clientsCron work per client visited, µs."""
    eviction_call: CostUs = 0.05
    """performEvictions when memory is under the limit (getMaxmemoryState), µs."""
    eviction_check: CostUs = 0.375
    """performEvictions over the limit: not-counted memory, timers, latency monitor, µs."""
    eviction_sample: CostUs = 0.114
    """Per key sampled into the eviction pool (a cache miss and a score), µs."""
    eviction_delete: CostUs = 0.75
    """Per key evicted: dbDelete, free, keyspace event, propagation of the DEL, µs.
    The three eviction defaults total the reference host's 1.70 µs per evicted key
    with 900K keys of 100 B (the split between them is the fit's, with the
    pool's 5 samples a call); a keyspace far larger than the CPU caches costs more
    per sample and delete (GitLab's 60 GB: ~31 µs per key, scenarios/gitlab-2022.yaml)."""
    io_handoff: CostUs = 0.2
    """Per client taken over from another thread, paid by the thread that takes
    it, µs. Async I/O threads (``engine.io-threads-model: async``): the main
    thread per parsed command, the I/O thread per reply to write. Redis 6/7's
    threaded passes: an I/O thread per client it reads or writes, and the main
    thread per client another thread read (to run its command) or wrote (to see
    whether a reply is left, ``handleClientsWithPendingWritesUsingThreads``). An
    estimate: two or three cache lines of the client (its struct's hot fields,
    the query and reply buffers' heads) last written on another core, at
    ~70-100 ns per core-to-core transfer on current Xeon and Graviton parts,
    plus the queue's list work."""
    poll_event: CostUs = 0.3
    """Of each ``read``, the part that is the poll's: ``epoll_wait`` reporting
    the ready connection and the event loop calling its read handler, µs. Part
    of ``read``, not added to it; it matters only with Redis 6/7's threaded
    reads (``io-threads-do-reads yes``), where this part stays on the main
    thread while the thread takes the rest. From Valkey's measurement that
    ``epoll_wait`` took "more than 20 percent" of a main thread that only ran
    commands (valkey.io, "Unlock 1 Million RPS", 2024-08-05), at ~780K SET/s
    before its prefetching (part 2): 0.2 / 0.8 × 1.28 µs ≈ 0.32 µs per request
    on Graviton 3."""
    free_alloc: CostUs = 0.09
    """Freeing one allocation of a collection (``decrRefCount`` walking a
    hashtable's entries, a skiplist's nodes, a quicklist's nodes), on the main
    thread or the lazyfree thread, µs (``model/lazyfree.py``). The 2-vCPU AMD
    EPYC VM's DEL of a 1M-field hash, 3 allocations per field: 269 ms, 90 ns each
    (``results/calibration/amd-epyc-2vcpu/collections``). The same host
    measured 97 ns for a 1M-member set, 74 for a 1M-element list's nodes, 40
    for a 1M-member sorted set (its skiplist walked in allocation order) and
    157 for a 513 MB hash (page walks): calibrate to your values' sizes."""
    listpack_entry: CostUs = 0.0069
    """A search through a hash, set or sorted set held as a listpack, per entry
    passed, µs (``model/collection.py``). The EPYC VM (Debian 7.0.15,
    ``INFO commandstats``): HGET of the last of 100 fields took 0.68 µs more
    than of the first (reads-keys-eval.md §3e)."""
    lua_hook: CostUs = 260.0
    """The main thread's time between two of a running script's busy checks
    (Redis's count hook, every 100,000 Lua VM instructions), µs
    (``model/scripts.py``). The EPYC VM (Debian 7.0.15, a bare Lua loop
    at 6.9 ns per iteration, busy-reply-threshold 100 ms): a client sending
    PING back to back was answered -BUSY every 0.24-0.28 ms (medians of 5
    trials, 0.27 ms in the middle one), of which ~10 µs is the pass that
    answers it. A script whose time goes into ``redis.call`` executes fewer
    instructions per second: one calling PING in its loop was checked every
    4.5 ms, so set this from your scripts."""
    lazyfree_job: CostUs = 20.0
    """Queueing one value for the lazyfree thread (``bioCreateLazyFreeJob``: an
    allocation, a mutex and a condition-variable signal that wakes the bio
    thread), main thread, µs. The EPYC VM's UNLINK of big values: 8–42
    µs in ``INFO commandstats``, median 24 µs over 25 (the same figure as
    redisgate.jp's 25 µs)."""
    expire_sample: CostUs = 0.15
    """activeExpireCycle, per key looked at, µs."""
    expire_delete: CostUs = 2.0
    """activeExpireCycle, per expired key deleted, µs."""
    defrag_key: CostUs = 0.5
    """Active defrag, per key scanned: the bucket step, the entry and robj reads and
    five jemalloc hint look-ups (a radix-tree lookup under the bin lock each), µs.
    An estimate: Debian's Redis cannot run active defrag, so it was not measured."""
    defrag_move: CostUs = 0.2
    """Active defrag, per allocation moved: malloc and free without the thread
    cache, each under the bin lock, besides copying its bytes (at 10 GB/s), µs.
    An estimate, as ``defrag-key``."""
    aof_write: CostUs = 5.0
    """The AOF ``write()`` into the page cache, per call, µs."""
    aof_write_per_byte: CostUs = 0.0005
    """... per byte written, µs/B (~2 GB/s)."""
    distribution: Annotated[ServiceDistribution | ScaleDist, BeforeValidator(_service_dist)
                            ] = "fixed"
    """Variability of command costs: ``fixed`` (as the table has them),
    ``exponential`` (× a mean-1 exponential: the M/M/1 checks), or any
    distribution of a dimensionless multiplier — lognormal, empirical (samples
    of measured service times: only their shape counts), a mixture such as
    ``{distribution: mixture, components: [{weight: 99, value: 1}, {weight: 1,
    value: 30}]}`` (one command in a hundred 30 times its cost) — each command's
    cost is multiplied by a draw divided by the distribution's mean, so the
    table's costs stay the means."""

    def service_dist(self) -> _Dist | None:
        """``distribution`` as a distribution of the multiplier; None for fixed."""
        if self.distribution == "fixed":
            return None
        if self.distribution == "exponential":
            return ScaleDist.model_validate({"distribution": "exponential", "mean": 1.0})
        return self.distribution
    commands: Annotated[dict[str, CommandCost], _v(_parse_commands)] = Field(default_factory=dict)
    """Per-command overrides of the command table, by upper-case name."""
    miss: Annotated[CacheMiss, BeforeValidator(_no_miss)] = Field(default_factory=CacheMiss)
    """What a load that misses each cache level costs (``model/cpu_caches.py``);
    ``none`` (every level 0) leaves the costs above as they are at every dataset
    size: for costs measured on the scenario's own dataset."""
    calibrated_on: CalibratedOn = Field(default_factory=CalibratedOn)
    """The dataset the costs above were measured on."""


def _quantum(v: Any) -> int:
    q = parse_int(v)
    if q not in (8, 16):
        raise BadValue("an allocator quantum of 8 or 16 bytes", show(v))
    return q


class Engine(_Model):
    """Model switches and the CPU cost model."""

    reply_batching: Bool = True
    """True: replies wait for beforeSleep like Redis; False: each reply is written right
    after its command (a plain single-server queue, for theory checks)."""
    cpu: Cpu = Field(default_factory=Cpu)
    io_threads_model: Annotated[IoThreadsModel, _literal(IoThreadsModel)] = "sync"
    """How ``io-threads`` > 1 works (``model/io_threads.py``). ``sync``: Redis 6/7,
    the main thread fans the pending writes (and with ``io-threads-do-reads`` the
    reads) out to the threads and waits for them, keeps the poll
    (``cpu.poll-event``) and takes every client back (``cpu.io-handoff``), and
    the threads spin while started. ``async``: Redis 8 (and, for the
    per-request split, Valkey 8), each client belongs to one I/O thread that
    reads, parses and writes for it; the main thread only executes commands,
    taking clients over through queues (``cpu.io-handoff``), and idle threads
    sleep. ``io-threads-do-reads`` is
    ignored with ``async``, as Redis 8 ignores it."""
    allocator_quantum: Annotated[int, _v(_quantum)] = 8
    """jemalloc quantum, bytes: 8 for Redis's bundled jemalloc, 16 for distribution
    packages linked to the system jemalloc (`MEMORY MALLOC-STATS` prints it)."""
    allocator_tcache: Bool = True
    """jemalloc's thread cache (``opt.tcache``, on by default): freed regions are
    kept per size class (up to 200) and reused first; false is
    ``MALLOC_CONF=tcache:false``, every allocation goes to the arena's slabs."""
    allocator_dirty_decay_ms: Annotated[int, _v(parse_int, minimum=-1)] = 10000
    """jemalloc's ``dirty_decay_ms`` (set with ``MALLOC_CONF``; Redis leaves jemalloc's
    default): freed pages leave RSS along a smootherstep over this many ms; 0 at
    once, -1 never (only ``MEMORY PURGE`` returns them)."""


class Disk(_Model):
    """The disk under the AOF and RDB files (``model/disk.py``): a FIFO device."""

    preset: Annotated[str, _v(_choice(tuple(DISK_PRESETS)))] = "ssd"
    """A device from ``redsim.model.presets.DISK_PRESETS``: nvme, nvme-consumer, ssd, cloud-disk,
    hdd (each with its sources)."""
    fsync: DurationDist | None = None
    """fdatasync latency of a small append, s; None = the preset's (lognormal)."""
    write_bandwidth: Annotated[float | None, _v(_optional(parse_bandwidth))] = None
    """Sequential write bandwidth, bytes/s (`200mb/s`); None = the preset's."""


class HostNetwork(_Model):
    """The kernel's network work per packet (``redsim/host/network.py``): interrupt
    and softirq CPU charged to the host's cores, ahead of every thread."""

    per_rx: CostUs = 1.5
    """Softirq CPU per TCP segment received (NAPI poll, IP/TCP input, waking the
    reader), µs."""
    per_tx: CostUs = 0.5
    """Softirq CPU per segment sent (transmit completion, freeing the buffer), µs."""
    per_interrupt: CostUs = 2.0
    """CPU per hardware interrupt taken, µs (entry, handler, exit; on a VM guest
    also the exit to the hypervisor)."""
    coalesce: CostUs = 0.0
    """Interrupt moderation per NIC queue, µs (ethtool ``rx-usecs``): a queue fires
    at most once per this delay, so at high packet rates one interrupt serves
    many packets; 0 = an interrupt per packet."""
    queues: NonNegInt = 0
    """NIC queues the packets spread over (RSS); 0 = one per core."""


class Host(_Model):
    """The machine Redis runs on: its cores and their scheduler (``redsim/host``),
    its caches (``model/cpu_caches.py``), what fork() and copy-on-write cost
    (``model/fork.py``)."""

    @model_validator(mode="before")
    @classmethod
    def _preset_sizes(cls, data: Any) -> Any:
        return host_presets.fill(data) if isinstance(data, dict) else data

    cores: Annotated[int | None, _v(_optional(partial(parse_int, minimum=1,
                                                      maximum=4096)))] = None
    """Cores the host's threads share (``redsim/host/scheduler.py``): every
    instance's main thread, fork children and the kernel's network work. None
    (the default): every thread has a core to itself and the kernel's network
    work costs Redis nothing."""
    quantum: Seconds = 0.0
    """Scheduling quantum when threads outnumber cores, s: 0 = processor sharing
    (every runnable thread progresses at its share at every instant); > 0 = round
    robin turns of this much CPU (CFS's ``sched_min_granularity`` / EEVDF's
    ``sched_base_slice`` is 0.75 ms x (1 + ilog2(min(cores, 8))): 2.25 ms on 4-7
    cores, 3 ms on 8 or more; kernel/sched/fair.c)."""
    context_switch: Seconds = 3.8e-6
    """CPU lost per involuntary context switch (a preempted turn), s; with
    ``quantum`` > 0. The default is the direct cost Li, Ding and Shen measured
    ("Quantifying the cost of context switch", ExpCS 2007); refilling the caches
    after it can cost far more."""
    scheduler_window: PositiveSeconds = 1e-3
    """How often the host re-divides its cores among the runnable threads, s: the
    threads' demand is measured over one window and sets their shares in the next."""
    preset: Annotated[str | None, _v(_optional(_choice(tuple(HOST_PRESETS))))] = None
    """A cloud instance family (``redsim/config/host_presets.py``: aws-c7i,
    aws-r7g, gcp-c3, azure-dv5, ...) whose processor's published cache and TLB
    sizes fill ``l2``, ``llc`` and ``tlb-reach`` where this section gives none;
    None: the reference VM's."""
    l2: Bytes = 2 << 20
    """Bytes of L2 cache a core has (``/sys/devices/system/cpu/cpu0/cache/index2/size``;
    ``redsim calibrate`` reads it). The default is the reference VM's."""
    llc: Bytes = 260 << 20
    """Bytes of last-level cache Redis's main thread can use: the L3 (``index3``)
    less what other processes on the host keep in it. The default is what the
    reference VM (a slice of a shared Xeon socket) reports."""
    tlb_reach: Bytes = 6 << 20
    """Bytes of memory the data TLB maps with 4 KB pages: its second-level
    entries × 4 KB (1,536 on Intel since Skylake, 2,048 on AMD Zen 3/4 and
    Graviton 3). Redis 7 turns transparent huge pages off for itself
    (``disable-thp``), so its heap is mapped in 4 KB pages."""
    client_cpu: OptionalCostUs = None
    """CPU a load generator on this host spends per request batch of one
    command, µs: the ``client-cpu`` of every same-host client group that does
    not give its own (None: theirs, 7.6 µs). ``redsim calibrate`` measures
    redis-benchmark's (getrusage of its process during the CPU loads) and
    writes it here, so that same-host throughput follows the calibrated host's
    client, not the reference host's."""
    client_cpu_per_command: OptionalCostUs = None
    """The same for each further command of a pipelined batch, µs: the
    ``client-cpu-per-command`` of same-host groups that do not give theirs."""
    network: HostNetwork = Field(default_factory=HostNetwork)

    transparent_huge_pages: Annotated[Thp, _literal(Thp)] = "madvise"
    """/sys/kernel/mm/transparent_hugepage/enabled. Redis's heap uses 2 MB pages only
    with ``always`` and ``disable-thp no``."""
    thp_cow: Annotated[ThpCow, _literal(ThpCow)] = "split"
    """What a copy-on-write fault on a shared 2 MB page copies: ``split`` (Linux >= 5.8,
    commit 3917c80280c9: the huge mapping is split and 4 KB copied) or ``copy-huge``
    (older kernels: the whole 2 MB page, the seed S1 stall)."""
    fork: Annotated[str, _v(_choice(tuple(FORK_PRESETS)))] = "bare-metal"
    """fork() cost preset (``redsim.model.presets.FORK_PRESETS``, from the Redis latency docs)."""
    fork_per_gb: Annotated[float | None, _v(_optional(parse_duration))] = None
    """fork() time per GB of RSS mapped with 4 KB pages, s; None = the preset's."""
    fork_fixed: Seconds = 0.5e-3
    """fork() time besides the page tables (process, VMAs, file table), s."""
    cow_fault: Seconds = 1e-6
    """A copy-on-write fault's fixed cost (trap, page allocation, PTE update), s."""
    cow_copy_bandwidth: Annotated[float, _v(parse_bandwidth)] = 4.5e9
    """Bytes/s the kernel copies a page at: a 2 MB page takes ~0.47 ms, a 4 KB one ~1 µs."""
    child_keys_per_sec: Annotated[float, _v(parse_rate)] = 600e3
    """Keys the fork child serialises per second (reference §5.4: 5 M keys in 8 s); > 0."""

    @model_validator(mode="after")
    def _check(self) -> Host:
        if self.child_keys_per_sec <= 0:  # the child's run time divides by it
            raise BadValue("a rate > 0 like 600k/s", show(self.child_keys_per_sec),
                           field=("child-keys-per-sec",))
        return self


class BigKey(_Model):
    """A collection in the dataset from the start: ``{name: big:hash, type: hash,
    elements: 1M, member-size: 10, value-size: 20}`` (``model/bigkeys.py``). Its
    encoding, bytes and free cost follow from the elements and the server's
    ``*-max-listpack-*`` thresholds (``model/encoding.py``)."""

    name: Annotated[str, _v(_big_key_name)]
    """The key's name (what ``del`` and ``unlink`` events call it)."""
    type: Annotated[CollectionType, _literal(CollectionType)]
    """hash, set, zset (sorted set) or list."""
    elements: Annotated[int, _v(parse_int, minimum=1, maximum=1 << 32)]
    """Fields (hash), members (set, zset) or elements (list)."""
    member_size: Annotated[int, _v(parse_int, minimum=1, maximum=1 << 20)] = 10
    """Bytes of each hash field, set or sorted-set member, or list element."""
    value_size: Annotated[int | None, _v(_optional(partial(parse_int, minimum=0,
                                                           maximum=1 << 20)))] = None
    """hash: bytes of each field's value (default 20)."""
    integers: Bool = False
    """set: its members are integers (an intset while few enough)."""

    @model_validator(mode="after")
    def _check(self) -> BigKey:
        if self.value_size is not None and self.type != "hash":
            raise BadValue("no value-size but for a hash (its fields' values)",
                           show(self.value_size), field=("value-size",))
        if self.integers and self.type != "set":
            raise BadValue("integers only for a set", "yes", field=("integers",))
        return self


ReplicaStart = Literal["online", "full-sync"]


class Replica(_Model):
    """Replicas attached to the server: ``{count: 2, link-bandwidth: 1gbit,
    rtt: 500us, load-rate: 200mb/s}`` (``model/replication.py``). The primary's
    side of replication is simulated: the stream it feeds, its buffers, the
    syncs; a replica is its link, how fast it loads an RDB and applies the stream."""

    count: Annotated[int, _v(parse_int, minimum=1, maximum=MAX_REPLICAS)] = 1
    """Replicas with these settings."""
    link_bandwidth: Annotated[float, _v(parse_link_rate)] = 1.25e9
    """The network path to the replica: bits (``1gbit``) or bytes per second
    (``125mb/s``); default 10gbit."""
    rtt: Seconds = 0.0005
    """Round trip to the replica, s: its reconnect handshake takes 4.5 of them."""
    load_rate: Annotated[float, _v(parse_bandwidth)] = 200.0 * 1024**2
    """How fast the replica loads a full sync's RDB, bytes of RDB per second."""
    apply_rate: Annotated[float | None, _v(_optional(parse_bandwidth))] = None
    """How fast the replica reads and applies the stream, bytes per second; none:
    as fast as the link brings it."""
    socket_buffer: Annotated[int, _v(parse_size, )] = 4 * 1024**2
    """The primary's socket send buffer to the replica, bytes (Linux's
    ``net.ipv4.tcp_wmem`` maximum, which autotuning reaches on a busy link):
    what one write can hand the kernel beyond what the link has taken."""
    start: Annotated[ReplicaStart, _literal(ReplicaStart)] = "online"
    """``online``: in sync when the run starts (the backlog exists, offset 0);
    ``full-sync``: connects at ``connect-at`` with no data and asks for a full sync."""
    connect_at: Seconds = 0.0
    """With ``start: full-sync``, when the replica connects, s."""
    dual_channel: Bool = False
    """A full sync over two connections (Valkey 8's ``dual-channel-replication-enabled``,
    Redis 8's RDB channel): the fork child writes the RDB to its own connection while
    the primary streams the writes since the fork down the replica's main one, and
    the replica buffers them until it has loaded the RDB. The same for every entry."""
    full_sync_buffer_limit: Annotated[int | None, _v(_optional(parse_size))] = None
    """With ``dual-channel``: how much of the stream the replica buffers during a full
    sync before it stops reading (Redis 8's ``replica-full-sync-buffer-limit``), bytes;
    none or 0: the hard limit of ``client-output-buffer-limit replica``, as Valkey 8
    and Redis 8 inherit it."""

    @model_validator(mode="after")
    def _check(self) -> Replica:
        if self.socket_buffer < 16 * 1024:
            raise BadValue("a socket-buffer ≥ 16kb (one write of the stream)",
                           show(self.socket_buffer), field=("socket-buffer",))
        if self.connect_at and self.start != "full-sync":
            raise BadValue("connect-at only with start: full-sync", show(self.connect_at),
                           field=("connect-at",))
        if self.full_sync_buffer_limit and not self.dual_channel:
            raise BadValue("full-sync-buffer-limit only with dual-channel: yes",
                           show(self.full_sync_buffer_limit),
                           field=("full-sync-buffer-limit",))
        return self


class ScenarioEvent(_Model):
    """Something done to the server at a given time: ``{at: 30s, do: bgsave}``,
    ``{at: 0s, do: populate, keys: 100000, value-size: 1kb}``,
    ``{at: 10s, do: del, pattern: odd}``, ``{at: 20s, do: unlink, key: big:hash}``,
    ``{at: 30s, do: flushall, mode: async}`` (``model/admin.py``)."""

    at: Seconds
    do: Annotated[EventAction, _literal(EventAction)]
    """bgsave, bgrewriteaof, populate (DEBUG POPULATE keys key value-size: keys
    ``key:0`` .. ``key:<keys-1>``), del (DEL of the keys a pattern picks, or of one
    of ``big-keys`` by its ``key``), unlink (UNLINK of a big key), flushall
    (FLUSHALL, with ``mode``), memory-purge, or config-set (CONFIG SET of the
    directives under ``config``); run as the command would be."""
    keys: Annotated[int, _v(parse_int, minimum=1)] | None = None
    """populate: how many keys (``key:0`` .. ``key:<keys-1>``; existing ones are kept)."""
    value_size: Bytes | None = None
    """populate: each value's size, bytes (at least ``value:<i>``'s length, as DEBUG
    POPULATE pads)."""
    pattern: Annotated[DelPattern, _literal(DelPattern)] | None = None
    """del: which keys, in ascending order of their number: odd, even, every (each
    ``every``-th, from 0), first (the lowest-numbered ``fraction`` of them: whole
    slabs empty) or random (each with probability ``fraction``)."""
    every: Annotated[int, _v(parse_int, minimum=1)] | None = None
    """del with pattern every: k, the step."""
    fraction: Annotated[float, _v(parse_float, minimum=0, maximum=1)] | None = None
    """del with pattern random: each key's probability of deletion; with first: the
    share of the keys deleted."""
    key: str | None = None
    """del or unlink: the name of one of the scenario's ``big-keys``."""
    group: str | None = None
    """del: a client group whose key ids (number i = key id i) the pattern picks from;
    by default the populated keys (``key:<i>`` is number i)."""
    mode: Annotated[FlushMode, _literal(FlushMode)] | None = None
    """flushall: ``async`` (FLUSHALL ASYNC: the bio lazy-free thread frees the keys
    while the main thread goes on) or ``sync`` (FLUSHALL SYNC: the main thread frees
    them all before anything else runs); by default, as ``lazyfree-lazy-user-flush``
    says."""
    config: dict[str, Any] | None = None
    """config-set: the directives to set and their values, as under ``server:``
    (``{activedefrag: yes}``); ``activedefrag`` and the active-defrag thresholds
    and cycle limits can be set. They apply from the event's time on, between two
    event-loop iterations."""

    @model_validator(mode="after")
    def _check(self) -> ScenarioEvent:
        need: dict[str, tuple[str, ...]] = {
            "populate": ("keys", "value_size"), "unlink": ("key",), "config-set": ("config",)}
        for name in need.get(self.do, ()):
            if getattr(self, name) is None:
                raise BadValue(f"a {name.replace('_', '-')} for do: {self.do}", "none",
                               field=(name.replace("_", "-"),))
        allowed = {"populate": {"keys", "value_size"},
                   "del": {"pattern", "every", "fraction", "group", "key"},
                   "unlink": {"key"}, "config-set": {"config"},
                   "flushall": {"mode"}}.get(self.do, set())
        for name in ("keys", "value_size", "pattern", "every", "fraction", "group", "key",
                     "config", "mode"):
            if getattr(self, name) is not None and name not in allowed:
                raise BadValue(f"no {name.replace('_', '-')} with do: {self.do}",
                               repr(getattr(self, name)), field=(name.replace("_", "-"),))
        if self.config is not None:
            if not self.config:
                raise BadValue("at least one directive to set", "none", field=("config",))
            for key, value in self.config.items():
                name = str(key).lower().replace("_", "-")
                if name not in RUNTIME_SETTABLE:
                    raise BadValue("a directive config-set can change: "
                                   + ", ".join(sorted(RUNTIME_SETTABLE)), show(key),
                                   field=("config", str(key)))
                try:
                    Server.model_validate({name: value})
                except ValidationError as e:
                    err = e.errors()[0]
                    cause = err.get("ctx", {}).get("error")
                    expected = cause.expected if isinstance(cause, BadValue) else err["msg"]
                    raise BadValue(expected, show(value), field=("config", str(key))) from None
        if self.do == "del":
            if (self.pattern is None) == (self.key is None):
                raise BadValue("either a pattern (the keys it picks) or a key (a big key's "
                               "name) for do: del", "both" if self.key else "neither",
                               field=("pattern",))
            if self.key is not None and (self.group or self.every or self.fraction):
                raise BadValue("no group, every or fraction with a key", "one of them",
                               field=("key",))
            if self.pattern == "every" and self.every is None:
                raise BadValue("every: k for pattern every", "none", field=("every",))
            if self.pattern in ("random", "first") and self.fraction is None:
                raise BadValue(f"fraction: f for pattern {self.pattern}", "none",
                               field=("fraction",))
        return self


# ---------------------------------------------------------------------------------
# Distributions of times (s) and sizes (bytes).

def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


_DIST_KEYS: dict[str, tuple[str, ...]] = {
    "fixed": ("value", "mean"),
    "exponential": ("mean",),
    "uniform": ("min", "max"),
    "lognormal": ("mean", "sigma"),
    "empirical": ("samples", "values", "quantiles"),
    "mixture": ("components",),
}

MAX_COMPONENTS = 16
"""Most components a mixture distribution may have."""

MAX_SAMPLES = 10_000_000
"""Most values a samples file or ``values`` list may hold."""
MAX_SAMPLE_FILE = 256 * 1024 * 1024
"""Largest samples file read, bytes."""
EMP_TAIL_POINTS = 100
"""Of a thinned table's ``EMP_MAX_POINTS``, the ones refining its top end."""


def _sample_file(path: Any, parse: Callable[[Any], float], unit: str) -> list[float]:
    """The values of a samples file: one column, one value per line, plain numbers in
    the field's unit (s or bytes) or with a unit (``1.2ms``, ``4kb``). A first line
    that is not a value is a header; blank lines and ``#`` comments are skipped."""
    if not isinstance(path, str) or not path.strip():
        raise BadValue("the path of a samples file (one value per line)", show(path),
                       field=("samples",))
    expected = (f"one value ≥ 0 per line of {path} (in {unit}, or with a unit like "
                f"{'1.2ms' if unit == 's' else '4kb'})")
    values: list[float] = []
    first = True
    try:
        with open_regular(path, MAX_SAMPLE_FILE) as raw, \
                io.TextIOWrapper(raw, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                text = line.split("#", 1)[0].strip()
                if not text:
                    continue
                try:
                    x = float(text)
                except ValueError:
                    try:
                        x = float(parse(text))
                    except BadValue:
                        if first:
                            first = False
                            continue  # a header line
                        raise BadValue(expected, f"{show(text)} on line {n}",
                                       field=("samples",)) from None
                first = False
                if not math.isfinite(x) or x < 0:
                    raise BadValue(expected, f"{show(text)} on line {n}", field=("samples",))
                values.append(x)
                if len(values) > MAX_SAMPLES:
                    raise BadValue(f"at most {MAX_SAMPLES:,} samples in {path}",
                                   f"more (line {n})", field=("samples",))
    except RefusedFile as exc:  # a FIFO or a device is refused before it is opened
        expected, why = {
            UNREADABLE: ("a readable samples file", exc.found),
            IRREGULAR: ("a regular file of samples", f"{exc.found}: not a regular file"),
            TOO_LARGE: (f"a samples file of at most {MAX_SAMPLE_FILE >> 20} MB", exc.found),
        }[exc.reason]
        raise BadValue(expected, f"{show_path(path)} ({why})", field=("samples",)) from None
    except UnicodeDecodeError:
        raise BadValue(f"a text file of samples (UTF-8) in {path}", "binary data",
                       field=("samples",)) from None
    except OSError as exc:  # the read itself failed (EIO): stat and open succeeded
        raise BadValue("a readable samples file", f"{show_path(path)} "
                       f"({exc.strerror or type(exc).__name__})", field=("samples",)) from None
    if not values:
        raise BadValue(f"at least one sample in {path}", "none", field=("samples",))
    return values


def samples_table(values: list[float]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The inverse-CDF table (probabilities, values) of samples: the sorted samples
    ``x(0) ≤ … ≤ x(n-1)`` at probabilities ``r/(n-1)`` (numpy's default quantiles,
    so the table is exact between order statistics). Above ``EMP_MAX_POINTS``
    samples the table keeps the ranks of an even grid of ``EMP_MAX_POINTS -
    EMP_TAIL_POINTS`` points (rank 0, the minimum, and n-1, the maximum, among them)
    plus ``EMP_TAIL_POINTS`` ranks spaced geometrically below the maximum (1, 2, 3,
    5, … below it, down to ten grid steps): the highest samples keep their own
    probabilities, so a rare outlier weighs 1/n, not a whole grid step."""
    import numpy as np

    x = np.sort(np.asarray(values, np.float64))
    n = len(x)
    if n == 1:
        return (0.0, 1.0), (float(x[0]), float(x[0]))
    if n <= EMP_MAX_POINTS:
        ranks = np.arange(n)
    else:
        even = EMP_MAX_POINTS - EMP_TAIL_POINTS
        top = min(n - 1.0, 10 * (n - 1) / (even - 1))
        ranks = np.unique(np.concatenate([
            np.rint(np.linspace(0, n - 1, even)),
            n - 1 - np.rint(np.geomspace(1, top, EMP_TAIL_POINTS)),
        ]).astype(np.int64))
    return (tuple(float(r) / (n - 1) for r in ranks.tolist()),
            tuple(float(v) for v in x[ranks].tolist()))


def table_mean(ps: tuple[float, ...], xs: tuple[float, ...]) -> float:
    """The mean of the distribution an inverse-CDF table defines (linear between its
    points): the sum of each segment's probability times its midpoint."""
    return math.fsum((p1 - p0) * (x0 + x1) / 2
                     for (p0, x0), (p1, x1) in pairwise(zip(ps, xs, strict=True)))


class _Dist(_Model):
    """A distribution, normalised. YAML gives a scalar (fixed) or a mapping
    {distribution, value | mean | min, max | sigma | samples | values | quantiles}.

    An empirical distribution is an inverse-CDF table: probabilities from 0 to 1
    and the values at them, linear in between (at most 1,001 points).
    ``samples: FILE`` (one value per line) and ``values: [...]`` give the
    samples' own quantiles; past 1,001 samples the table keeps 901 evenly
    spaced ranks and 100 more near the maximum, so a rare outlier keeps its
    weight of one sample. ``quantiles: {0.5: 2ms, 1.0: 80ms}`` gives the points
    themselves (a 1.0 quantile is required; without a 0.0 one, the lowest value
    given holds down to probability 0). A resolved scenario writes the table as
    ``quantiles``, so it loads back equal without the file.

    Attributes:
        kind: fixed, exponential, uniform, lognormal or empirical.
        mean: arithmetic mean (for fixed, the value; for empirical, the table's).
        low, high: support bounds (fixed: value, value; uniform: min, max;
            exponential/lognormal: 0, inf; empirical: the table's first and last value).
        sigma: lognormal shape (standard deviation of the log); 0 otherwise.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    _parse: ClassVar[Callable[[Any], float]]
    _unit: ClassVar[str]
    _max: ClassVar[float]
    """Largest value the distribution may name (mean, bounds, table values)."""
    _max_text: ClassVar[str]

    kind: DistKind
    mean: float
    low: float
    high: float
    sigma: float = 0.0
    weights: tuple[float, ...] = ()
    """Mixture only: each component's probability, summing to 1."""
    parts: tuple[Any, ...] = ()
    """Mixture only: the components, distributions of the same class (not mixtures)."""
    table_p: tuple[float, ...] = ()
    """Empirical only: the table's probabilities, 0 first, 1 last, increasing."""
    table_x: tuple[float, ...] = ()
    """Empirical only: the values at ``table_p``, not decreasing."""

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if isinstance(data, _Dist):
            return data
        if isinstance(data, dict) and {"kind", "mean", "low", "high"} <= set(data):
            return data  # already normalised (built in code)
        if not isinstance(data, dict):
            value = float(cls._parse(data))
            return {"kind": "fixed", "mean": value, "low": value, "high": value}
        return cls._from_mapping(data)

    @classmethod
    def _from_mapping(cls, data: dict[Any, Any]) -> dict[str, Any]:
        try:
            kind = _choice(tuple(_DIST_KEYS))(data.get("distribution", "fixed"))
        except BadValue as exc:
            raise BadValue(
                exc.expected, exc.found, field=("distribution",), hint=exc.hint
            ) from None
        allowed = ("distribution", *_DIST_KEYS[kind])
        for key in data:
            if key not in allowed:
                raise BadValue(
                    f"keys of {_a(kind)} distribution ({', '.join(allowed)})",
                    show(key),
                    field=(str(key),),
                    hint=did_you_mean(str(key), allowed),
                )
        if kind == "empirical":
            return cls._empirical(data)
        if kind == "mixture":
            return cls._mixture(data)
        values: dict[str, float] = {}
        for key in _DIST_KEYS[kind]:
            if key in data:
                parse = partial(parse_float, minimum=0) if key == "sigma" else cls._parse
                try:
                    values[key] = float(parse(data[key]))
                except BadValue as exc:
                    raise BadValue(exc.expected, exc.found, field=(key,)) from None
        return cls._build(kind, values)

    @classmethod
    def _empirical(cls, data: dict[Any, Any]) -> dict[str, Any]:
        """``samples: FILE`` | ``values: [...]`` | ``quantiles: {p: v}``."""
        given = [k for k in _DIST_KEYS["empirical"] if k in data]
        if len(given) != 1:
            raise BadValue("one of samples (a file), values (a list) or quantiles "
                           "(probability: value) for an empirical distribution",
                           "none" if not given else " and ".join(given),
                           field=(given[1] if len(given) > 1 else "samples",))
        key = given[0]
        raw = data[key]

        def value(v: Any, where: tuple[Any, ...]) -> float:
            # A bare number is in the base unit as it is: a table's interpolated
            # sizes keep their fractions, so a resolved scenario loads back equal.
            try:
                x = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) \
                    else float(cls._parse(v))
            except BadValue as exc:
                raise BadValue(exc.expected, exc.found, field=where) from None
            if not math.isfinite(x) or x < 0:
                raise BadValue(f"a finite value ≥ 0 ({cls._unit})", show(v), field=where)
            return x

        if key == "samples":
            ps, xs = samples_table(_sample_file(raw, cls._parse, cls._unit))
        elif key == "values":
            if not isinstance(raw, (list, tuple)) or not raw:
                raise BadValue("a non-empty list of values", show(raw), field=(key,))
            if len(raw) > MAX_SAMPLES:
                raise BadValue(f"at most {MAX_SAMPLES:,} values", f"{len(raw):,}", field=(key,))
            ps, xs = samples_table([value(v, (key, i)) for i, v in enumerate(raw)])
        else:
            ps, xs = cls._quantiles(raw, value)
        return {"kind": "empirical", "mean": table_mean(ps, xs), "low": xs[0],
                "high": xs[-1], "table_p": ps, "table_x": xs}

    @classmethod
    def _mixture(cls, data: dict[Any, Any]) -> dict[str, Any]:
        """``components: [{weight: 0.99, distribution: lognormal, ...}, ...]``: each
        draw picks a component with its weight's probability (weights are
        normalised to sum to 1), then draws from it."""
        raw = data.get("components")
        if not isinstance(raw, list) or not 2 <= len(raw) <= MAX_COMPONENTS:
            raise BadValue(f"a list of 2 to {MAX_COMPONENTS} components, each a distribution "
                           "with a weight", show(raw), field=("components",))
        weights, parts = [], []
        for i, comp in enumerate(raw):
            where = ("components", i)
            if not isinstance(comp, dict) or "weight" not in comp:
                raise BadValue("a distribution with a weight, like {weight: 0.01, "
                               "distribution: fixed, value: 50ms}", show(comp), field=where)
            try:
                weight = parse_float(comp["weight"], minimum=0, exclusive_min=True)
            except BadValue as exc:
                raise BadValue(exc.expected, exc.found, field=(*where, "weight")) from None
            rest = {k: v for k, v in comp.items() if k != "weight"}
            if rest.get("distribution") == "mixture":
                raise BadValue("a component that is not itself a mixture", "mixture",
                               field=(*where, "distribution"))
            try:
                part = cls.model_validate(cls._from_mapping(rest))
            except BadValue as exc:
                raise BadValue(exc.expected, exc.found, field=(*where, *exc.field),
                               hint=exc.hint) from None
            weights.append(weight)
            parts.append(part)
        # Scaled by the largest first: the sum of weights near the float's
        # largest value would overflow, and the proportions are all that count.
        top = max(weights)
        total = math.fsum(x / top for x in weights)
        weights = [x / top / total for x in weights]
        return {"kind": "mixture", "mean": math.fsum(x * p.mean for x, p in zip(
                    weights, parts, strict=True)),
                "low": min(p.low for p in parts), "high": max(p.high for p in parts),
                "weights": tuple(weights), "parts": tuple(parts)}

    @staticmethod
    def _quantiles(raw: Any, value: Callable[[Any, tuple[Any, ...]], float]
                   ) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The table of ``quantiles: {probability: value}``, checked."""
        key = "quantiles"
        if not isinstance(raw, dict) or not raw:
            raise BadValue("a mapping of probability → value, like {0.5: 2ms, 1.0: 20ms}",
                           show(raw), field=(key,))
        def too_many(n: int) -> BadValue:
            return BadValue(f"at most {EMP_MAX_POINTS} quantiles with 0 (give samples for "
                            "more)", f"{n:,}", field=(key,))

        if len(raw) > EMP_MAX_POINTS:  # counted before parsing: a huge table is refused at once
            raise too_many(len(raw))
        qs: dict[float, float] = {}
        for p, v in raw.items():
            try:
                prob = parse_float(p, minimum=0, maximum=1)
            except BadValue:
                raise BadValue("a probability from 0 to 1", show(p),
                               field=(key, p)) from None
            if prob in qs:
                raise BadValue("each probability once", f"{show(p)} twice", field=(key, p))
            qs[prob] = value(v, (key, p))
        ps = sorted(qs)
        if ps[-1] != 1.0:
            raise BadValue("a 1.0 quantile (the largest value)", f"largest {ps[-1]:g}",
                           field=(key,))
        for a, b in pairwise(ps):
            if qs[b] < qs[a]:
                raise BadValue("values that do not decrease as the probability grows",
                               f"{a:g}: {qs[a]:g} but {b:g}: {qs[b]:g}", field=(key, b))
        if ps[0] > 0.0:  # below the lowest quantile given, its value
            qs[0.0] = qs[ps[0]]
            ps.insert(0, 0.0)
        if len(ps) > EMP_MAX_POINTS:  # the 0 added below the lowest can be one too many
            raise too_many(len(ps))
        return tuple(ps), tuple(qs[p] for p in ps)

    @classmethod
    def _build(cls, kind: str, values: dict[str, float]) -> dict[str, Any]:
        def need(*keys: str) -> None:
            missing = [k for k in keys if k not in values]
            if missing:
                raise BadValue(
                    f"{' and '.join(keys)} for {_a(kind)} distribution",
                    "no " + " or ".join(missing),
                    field=(missing[0],),
                )

        if kind == "fixed":
            if "value" in values and "mean" in values and values["value"] != values["mean"]:
                raise BadValue("value or mean for a fixed distribution, not two different ones",
                               show([values["value"], values["mean"]]), field=("mean",))
            if "value" not in values:
                need("mean")
            v = values.get("value", values.get("mean", 0.0))
            return {"kind": kind, "mean": v, "low": v, "high": v}
        if kind == "exponential":
            need("mean")
            return {"kind": kind, "mean": values["mean"], "low": 0.0, "high": math.inf}
        if kind == "uniform":
            need("min", "max")
            if values["min"] > values["max"]:
                raise BadValue("min ≤ max", f"min {values['min']} > max {values['max']}",
                               field=("max",))
            mid = (values["min"] + values["max"]) / 2
            return {"kind": kind, "mean": mid, "low": values["min"], "high": values["max"]}
        need("mean", "sigma")
        if values["mean"] <= 0:
            raise BadValue(f"a mean > 0 ({cls._unit}) for a lognormal distribution",
                           show(values["mean"]), field=("mean",))
        return {"kind": kind, "mean": values["mean"], "low": 0.0, "high": math.inf,
                "sigma": values["sigma"]}

    @model_validator(mode="after")
    def _bounded(self) -> _Dist:
        # The parsers bound values written with a unit; a bare number in a table
        # (values, quantiles) or a lognormal's sigma is checked here, so no value
        # the kernel draws from can overflow what it is added to.
        if self.sigma > MAX_SIGMA:
            raise BadValue(f"a lognormal sigma of at most {MAX_SIGMA:g}", show(self.sigma),
                           field=("sigma",))
        if self.kind == "mixture" and len(self.parts) != len(self.weights):
            raise BadValue("one weight per mixture component", f"{len(self.weights)} weights "
                           f"for {len(self.parts)} components")
        finite = [x for x in (self.mean, self.low, self.high, *self.table_x) if math.isfinite(x)]
        if finite and max(finite) > self._max:
            raise BadValue(f"values of at most {self._max_text} ({self._unit})",
                           f"{max(finite):g}")
        return self

    @classmethod
    def _out(cls, x: float) -> float | int:
        return x

    @model_serializer
    def _to_yaml(self) -> dict[str, Any]:
        # Serialise in the form a scenario file uses, so resolved output loads back.
        out = self._out
        if self.kind == "fixed":
            return {"distribution": "fixed", "value": out(self.mean)}
        if self.kind == "exponential":
            return {"distribution": "exponential", "mean": out(self.mean)}
        if self.kind == "uniform":
            return {"distribution": "uniform", "min": out(self.low), "max": out(self.high)}
        if self.kind == "empirical":
            return {"distribution": "empirical",
                    "quantiles": {p: out(x) for p, x in zip(self.table_p, self.table_x,
                                                            strict=True)}}
        if self.kind == "mixture":
            return {"distribution": "mixture",
                    "components": [{"weight": x, **p._to_yaml()}
                                   for x, p in zip(self.weights, self.parts, strict=True)]}
        return {"distribution": "lognormal", "mean": out(self.mean), "sigma": self.sigma}


class DurationDist(_Dist):
    """A distribution of durations, s (values parsed with parse_duration)."""

    _parse = staticmethod(parse_duration)
    _unit = "s"
    _max = float(MAX_DURATION_S)
    _max_text = "100 years"


class ScaleDist(_Dist):
    """A distribution of a dimensionless multiplier (plain numbers ≥ 0)."""

    _parse = staticmethod(partial(parse_float, minimum=0))
    _unit = "×"
    _max = 1e6
    _max_text = "1e6"


def _service_dist(v: Any) -> Any:
    """``engine.cpu.distribution``: fixed | exponential, or a distribution mapping."""
    if isinstance(v, _Dist):
        return v
    if isinstance(v, dict):  # checked here, so a mistake names its own key
        return ScaleDist.model_validate(ScaleDist._from_mapping(v))
    return _literal(ServiceDistribution).func(v)


class SizeDist(_Dist):
    """A distribution of sizes, bytes (values parsed with parse_size)."""

    _parse = staticmethod(parse_size)
    _unit = "bytes"
    _max = float(MAX_VALUE_SIZE)
    _max_text = "4gb"

    @classmethod
    def _out(cls, x: float) -> float | int:
        # Sizes read back as whole bytes; only a uniform mean can be fractional.
        return int(x) if x.is_integer() else x


class CountDist(_Dist):
    """A distribution of counts (elements of a collection), parsed as integers."""

    _parse = staticmethod(parse_int)
    _unit = "elements"
    _max = float(1 << 32)
    _max_text = "4294967296"

    @classmethod
    def _out(cls, x: float) -> float | int:
        return int(x) if x.is_integer() else x


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
# Clients.


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

    name: str | None = None
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
    pool: Pool = Field(default_factory=Pool)
    placement: Annotated[Placement, _literal(Placement)] = "remote"
    """Where the group's processes run. remote: on other machines, their CPU not
    modelled (the network's round trip covers them). same-host: on Redis's host
    (``redsim/model/client_threads.py``): each reply is read, and the next
    request written, by one of ``client-threads`` at ``client-cpu`` per request,
    and with ``host.cores`` those threads share the cores with Redis."""
    client_cpu: CostUs = 7.6
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
    client_threads: PositiveInt = 1
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
    timeout: Seconds = 0.0
    """Client socket timeout, s; 0 = none (redis-py ``socket_timeout``, Jedis
    ``soTimeout``, go-redis ``ReadTimeout``). A request whose reply has not come
    this long after it was sent fails; the client closes the connection (Redis
    still runs what it read, and frees the client when it finds the socket
    closed) and the source waits its ``reconnect`` backoff before its next
    request, which opens a new connection."""
    connect_timeout: Annotated[float | None, _v(_optional(parse_duration))] = None
    """A new connection's own allowance for its handshake (TCP, and TLS with
    ``tls``), s, before its first request's ``timeout`` starts; none = the same
    as ``timeout``, as redis-py's ``socket_connect_timeout`` defaults. Redis's
    accept and handshake work runs at the connection's first read, so the two
    make one deadline: ``connect-timeout + timeout`` after the request is sent."""
    reconnect: Reconnect = Field(default_factory=Reconnect)
    """Backoff after a timeout or a connection refused at ``maxclients``."""
    tls: Bool = False
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


# ---------------------------------------------------------------------------------
# The scenario.


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

    name: str = "scenario"
    description: str = ""
    redis_version: Annotated[RedisVersion, _v(_parse_version)] = "7.2"
    duration: PositiveSeconds = 60.0
    """Simulated time, s."""
    warmup: Seconds = 0.0
    """Initial time excluded from statistics, s; < duration."""
    seed: NonNegInt = 0
    """Root seed of all random streams."""
    sample_interval: PositiveSeconds = 1.0
    """Period of the INFO-like samples, s; ≤ duration."""
    stall_threshold: PositiveSeconds = 0.01
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
    network: Network = Field(default_factory=Network)
    disk: Disk = Field(default_factory=Disk)
    host: Host = Field(default_factory=Host)
    big_keys: list[BigKey] = Field(default_factory=list)
    """Collections in the dataset from the start, each with its own name
    (``model/bigkeys.py``): what ``del`` and ``unlink`` events delete."""
    replicas: list[Replica] = Field(default_factory=list)
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
        if rows > MAX_KEYS:
            i = next(i for i, g in enumerate(self.clients) if g.keyspace.write_once > 0)
            raise BadValue(
                f"at most {MAX_KEYS:,} keys in the run: the keyspace, the write-once keys "
                "preloaded (nominal rate × min(history, ttl), or what fits in maxmemory) and "
                "rows for those written during the run (1.25 × rate × duration, or with "
                "maxmemory or a TTL × what fits or lives at once + 30 min of them)",
                f"about {rows:,.0f}", field=("clients", i, "keyspace", "write-once"))
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
