"""The scenario schema: pydantic models of a Redis deployment and its workload.

YAML keys use hyphens like Redis directives (`maxmemory-policy`, `max-size`); Python
attributes are snake_case. Every value with a unit goes through the parsers in
`redsim.config.units`, so models hold plain numbers in fixed units:

- sizes: int bytes;  durations: float seconds;  CPU costs: float µs;
- rates: float per second;  `latency_monitor_threshold`: int ms (as Redis).

Defaults are Redis 7.2's (reference §9). The models are plain data: no behaviour
beyond validation. Errors raise `BadValue` (a `ValueError`) so the loader can turn
them into a `ScenarioError` naming the file, line and field path.

One module per part of a scenario file, each importing only those above it:

- `types.py`: what every section is built from (`Bool`, `Bytes`, `Seconds`,
  `CostUs`, …), the bounds on a run (`MAX_*`), the words a key may take
  (`EvictionPolicy`, …) and `_Model`, the base of every model;
- `distributions.py`: durations, sizes and counts drawn from a distribution
  (`DurationDist`, `SizeDist`, …; samples files, quantile tables, mixtures);
- `server.py`: `server:`, the Redis directives (`Server`; `DIRECTIVES`,
  `MODELLED_DIRECTIVES`, `RUNTIME_SETTABLE` read from the fields' declarations);
- `engine.py`: `engine:`, the CPU cost model (`Engine`, `Cpu`, `CommandCost`, …);
- `host.py`: `host:` and `disk:` (`Host`, `HostNetwork`, `Disk`);
- `clients.py`: `clients:` and `network:` (`ClientGroup`, `Pool`, `MixEntry`,
  `Keyspace`, …, `Network`);
- `big_keys.py`, `replicas.py`, `events.py`: `big-keys:`, `replicas:`, `events:`;
- `scenario.py`: `Scenario` and `instances:` (`Instance`), with what is done to
  the raw mapping before validation.

Every public name is importable from here as it was from the single
`schema.py` this package replaces (`from redsim.config.schema import Scenario`),
and so are the private helpers that the docs generator
(`redsim/docs/scenario_reference.py`) and the tests name as `schema._x`, each
imported `as` itself.
"""

from redsim.config.schema.big_keys import BigKey
from redsim.config.schema.clients import (
    ClientGroup,
    HotKeys,
    Keyspace,
    MixEntry,
    Network,
    Phase,
    Pool,
    ProfileStep,
    RecentReads,
    Reconnect,
    Surge,
)
from redsim.config.schema.clients import _parse_mix as _parse_mix
from redsim.config.schema.distributions import _DIST_KEYS as _DIST_KEYS
from redsim.config.schema.distributions import (
    EMP_TAIL_POINTS,
    MAX_COMPONENTS,
    MAX_SAMPLE_FILE,
    MAX_SAMPLES,
    CountDist,
    DurationDist,
    ScaleDist,
    SizeDist,
    samples_table,
    table_mean,
)
from redsim.config.schema.distributions import _Dist as _Dist
from redsim.config.schema.distributions import _sample_file as _sample_file
from redsim.config.schema.engine import (
    CacheMiss,
    CalibratedOn,
    CommandCost,
    Cpu,
    Engine,
)
from redsim.config.schema.engine import _parse_commands as _parse_commands
from redsim.config.schema.engine import _quantum as _quantum
from redsim.config.schema.events import ScenarioEvent
from redsim.config.schema.host import (
    Disk,
    Host,
    HostNetwork,
)
from redsim.config.schema.replicas import (
    Replica,
    ReplicaStart,
)
from redsim.config.schema.scenario import (
    INSTANCE_TAGS,
    Instance,
    Scenario,
)
from redsim.config.schema.scenario import _host_client_costs as _host_client_costs
from redsim.config.schema.scenario import _surge_groups as _surge_groups
from redsim.config.schema.server import (
    DIRECTIVES,
    MODELLED_DIRECTIVES,
    OBUF_DEFAULTS,
    RUNTIME_SETTABLE,
    Server,
    parse_obuf_limits,
    parse_save,
    parse_unmodelled,
)
from redsim.config.schema.server import _hz as _hz
from redsim.config.schema.server import _whole_ms as _whole_ms
from redsim.config.schema.types import (
    INT_MAX,
    MAX_CONNECTIONS,
    MAX_IN_FLIGHT,
    MAX_KEY_SIZE,
    MAX_KEYS,
    MAX_MAXMEMORY,
    MAX_REPLICAS,
    MAX_REQUEST_SLOTS,
    MAX_SAMPLES_PER_RUN,
    MAX_SIGMA,
    MAX_VALUE_SIZE,
    MIN_CYCLE_S,
    MIN_PERIOD_S,
    AppendFsync,
    Bool,
    Bytes,
    Checkout,
    ClientKind,
    CollectionType,
    CostUs,
    DelPattern,
    DistKind,
    EventAction,
    EvictionPolicy,
    FlushMode,
    IoThreadsModel,
    KeyDistribution,
    KeyType,
    NonNegInt,
    OptionalCostUs,
    Placement,
    PositiveInt,
    PositiveSeconds,
    RedisVersion,
    Replay,
    Seconds,
    ServiceDistribution,
    Thp,
    ThpCow,
    TraceFormat,
    TraceKeyOverflow,
    TraceTiming,
    parse_command_name,
)
from redsim.config.schema.types import _duration_above_zero as _duration_above_zero

__all__ = [
    "AppendFsync",
    "BigKey",
    "Bool",
    "Bytes",
    "CacheMiss",
    "CalibratedOn",
    "Checkout",
    "ClientGroup",
    "ClientKind",
    "CollectionType",
    "CommandCost",
    "CostUs",
    "CountDist",
    "Cpu",
    "DIRECTIVES",
    "DelPattern",
    "Disk",
    "DistKind",
    "DurationDist",
    "EMP_TAIL_POINTS",
    "Engine",
    "EventAction",
    "EvictionPolicy",
    "FlushMode",
    "Host",
    "HostNetwork",
    "HotKeys",
    "INSTANCE_TAGS",
    "INT_MAX",
    "Instance",
    "IoThreadsModel",
    "KeyDistribution",
    "KeyType",
    "Keyspace",
    "MAX_COMPONENTS",
    "MAX_CONNECTIONS",
    "MAX_IN_FLIGHT",
    "MAX_KEYS",
    "MAX_KEY_SIZE",
    "MAX_MAXMEMORY",
    "MAX_REPLICAS",
    "MAX_REQUEST_SLOTS",
    "MAX_SAMPLES",
    "MAX_SAMPLES_PER_RUN",
    "MAX_SAMPLE_FILE",
    "MAX_SIGMA",
    "MAX_VALUE_SIZE",
    "MIN_CYCLE_S",
    "MIN_PERIOD_S",
    "MODELLED_DIRECTIVES",
    "MixEntry",
    "Network",
    "NonNegInt",
    "OBUF_DEFAULTS",
    "OptionalCostUs",
    "Phase",
    "Placement",
    "Pool",
    "PositiveInt",
    "PositiveSeconds",
    "ProfileStep",
    "RUNTIME_SETTABLE",
    "RecentReads",
    "Reconnect",
    "RedisVersion",
    "Replay",
    "Replica",
    "ReplicaStart",
    "ScaleDist",
    "Scenario",
    "ScenarioEvent",
    "Seconds",
    "Server",
    "ServiceDistribution",
    "SizeDist",
    "Surge",
    "Thp",
    "ThpCow",
    "TraceFormat",
    "TraceKeyOverflow",
    "TraceTiming",
    "parse_command_name",
    "parse_obuf_limits",
    "parse_save",
    "parse_unmodelled",
    "samples_table",
    "table_mean",
]
