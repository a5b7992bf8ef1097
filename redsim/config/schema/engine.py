"""The ``engine:`` section: the model's switches and the CPU cost model, all
costs in µs: ``Cpu`` (the main thread's costs besides the command table's, and
the variability of command costs), ``CommandCost`` (a command's overrides),
``CacheMiss`` and ``CalibratedOn`` (what a load missing each cache level costs,
and the dataset the costs were measured on), and ``Engine`` itself.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from redsim.config.declare import NotKeyspace
from redsim.config.errors import BadValue, show
from redsim.config.schema.distributions import ScaleDist, _Dist
from redsim.config.schema.types import (
    Bool,
    CostUs,
    IoThreadsModel,
    OptionalCostUs,
    ServiceDistribution,
    _choice,
    _literal,
    _Model,
    _optional,
    _v,
    parse_command_name,
)
from redsim.config.units import parse_float, parse_int
from redsim.model.presets import ALLOCATOR_BUILDS


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


def _service_dist(v: Any) -> Any:
    """``engine.cpu.distribution``: fixed | exponential, or a distribution mapping."""
    if isinstance(v, _Dist):
        return v
    if isinstance(v, dict):  # checked here, so a mistake names its own key
        return ScaleDist.model_validate(ScaleDist._from_mapping(v))
    return _literal(ServiceDistribution).func(v)


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

    reply_batching: Annotated[Bool, NotKeyspace()] = True
    """True: replies wait for beforeSleep like Redis; False: each reply is written right
    after its command (a plain single-server queue, for theory checks)."""
    cpu: Annotated[Cpu, NotKeyspace()] = Field(default_factory=Cpu)
    io_threads_model: Annotated[IoThreadsModel, _literal(IoThreadsModel), NotKeyspace()] = "sync"
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
    allocator: Annotated[str | None, _v(_optional(_choice(tuple(ALLOCATOR_BUILDS))))] = None
    """The jemalloc build (``redsim.model.presets.ALLOCATOR_BUILDS``): its quantum,
    whether large extents carry a page of cache-oblivious pad, and how its
    thread cache's GC is paced. ``bundled-5.1`` (Redis 6.2's), ``bundled-5.2.1``
    (7.0's), ``bundled-5.3`` (7.2's and later: no pad), ``debian-5.3``
    (Debian's and Ubuntu's packages: the system libjemalloc, 16-B quantum, pad).
    None: the one bundled with ``redis-version`` (``Scenario.jemalloc``).
    ``MEMORY MALLOC-STATS`` prints the version, ``config.cache_oblivious`` and
    the quantum; ``redsim calibrate`` reads them."""
    allocator_quantum: Annotated[int | None, _v(_optional(_quantum))] = None
    """jemalloc quantum, bytes, over the build's: 8 for Redis's bundled jemalloc,
    16 for distribution packages linked to the system jemalloc (`MEMORY
    MALLOC-STATS` prints it). None: the build's."""
    allocator_tcache: Bool = True
    """jemalloc's thread cache (``opt.tcache``, on by default): freed regions are
    kept per size class (up to 200) and reused first; false is
    ``MALLOC_CONF=tcache:false``, every allocation goes to the arena's slabs."""
    allocator_dirty_decay_ms: Annotated[int, _v(parse_int, minimum=-1)] = 10000
    """jemalloc's ``dirty_decay_ms`` (set with ``MALLOC_CONF``; Redis leaves jemalloc's
    default): freed pages leave RSS along a smootherstep over this many ms; 0 at
    once, -1 never (only ``MEMORY PURGE`` returns them)."""
