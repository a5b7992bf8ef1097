"""What every section of a scenario is built from: the annotated value types
(``Bool``, ``Bytes``, ``Seconds``, ``CostUs``, …: a plain Python type and the
``redsim.config.units`` parser that produces it), the validator helpers (``_v``,
``_optional``, ``_choice``, ``_literal``), the bounds on what one run may hold
(``MAX_*``), the choices a key may take (``EvictionPolicy``, ``ClientKind``, …)
and ``_Model``, the base of every section's model (hyphenated YAML keys, no
unknown keys, attribute docstrings as field descriptions).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, model_validator

from redsim.config.errors import BadValue, did_you_mean, show
from redsim.config.units import (
    parse_bool,
    parse_cost_us,
    parse_duration,
    parse_int,
    parse_size,
)
from redsim.model.commands import COMMANDS

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


def parse_command_name(v: Any) -> str:
    """An upper-case command name from COMMANDS (case-insensitive input)."""
    if isinstance(v, str) and v.strip().upper() in COMMANDS:
        return v.strip().upper()
    raise BadValue(
        "a command redsim models (" + ", ".join(sorted(COMMANDS)) + ")",
        show(v),
        hint=did_you_mean(v.upper(), COMMANDS) if isinstance(v, str) else None,
    )


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

# The words a key may take, each validated case-insensitively by `_literal`.
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


def _as_section(annotation: Any) -> bool:
    # A nested model that is always present (not Optional), like server or pool.
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


# ---------------------------------------------------------------------------------
# The base of every section's model.


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
