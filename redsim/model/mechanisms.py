"""Every mechanism of the kernel, registered once: its state, its configure step,
and the sizes its step hands on.

No Redis source: the simulator's own wiring.

``MECHANISMS`` lists one entry per module of ``redsim/model`` and
``redsim/observe`` that owns kernel state or configures it, in the order of
the state's layout. From it ``state.OWNERS`` (whose ``FIELDS`` blocks are read,
in this order), ``build.STEPS`` (the ``configure(b)`` steps, by rank) and
``build.START`` (the ``start(w, b)`` steps, which need the laid-out world) are
derived; nothing else lists the mechanisms.

Plain data, no numpy, no numba and no kernel import: ``state`` reads it
before any kernel module exists (the indices numba compiles in must follow
from the sources alone, ``model/layout.py``), and ``redsim/config`` imports
``state``.

A step's rank fixes when its ``configure`` runs; it is not the layout's order,
because steps hand on sizes (``Sizes``), append to shared tables in order
(the empirical distributions' points: the disk's fsync table comes first) and
spawn the random streams in order, so a step's rank is part of what makes a
run byte-identical. Ranks are spaced by 10 so that a new step slots in
between two without renumbering. ``check`` (run on import) refuses a step that
needs a size no step of lower rank provides; ``blueprint.Blueprint`` refuses,
while a run is built, a step that reads or sets a size its entry does not
declare, a step that writes a scalar or fills a per-entity field another
mechanism declares (``shares`` excepted, none today), and a config scalar no
step wrote
(``tests/test_mechanism_registry.py``).
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Mechanism(NamedTuple):
    """One mechanism's registration."""

    module: str
    """The module, relative to ``redsim`` (``"model.eviction"``)."""
    state: bool = True
    """Whether it declares kernel state (a ``FIELDS`` block, ``model/layout.py``)."""
    step: int | None = None
    """Rank of its ``configure(b)`` among the steps (``build.STEPS``); None: it has none."""
    start: int | None = None
    """Rank of its ``start(w, b)``, run once the arrays are laid out (``build.START``)."""
    needs: tuple[str, ...] = ()
    """The ``Sizes`` its step reads (each provided by a step of lower rank)."""
    provides: tuple[str, ...] = ()
    """The ``Sizes`` its step sets."""
    shares: tuple[str, ...] = ()
    """Scalars (``"NAME"``) and per-entity fields (``"cn_req"``) another
    mechanism declares that its step may write too (say why)."""


class Sizes:
    """Sizes one configure step decides and later ones need (``Blueprint.size``).

    Each starts unset; reading it before its step set it, or from a step whose
    registry entry does not declare it, is an error naming it; so is a name that
    is not one of these attributes.
    """

    __slots__ = ("_values", "_step")

    conns: int
    """Connection slots, rows of ``cn`` (every group's pool; ``pools``)."""
    slots: int
    """Request slots, rows of ``rq`` (``sources``)."""
    groups: int
    """Client groups, rows of ``gp`` (``clients``)."""
    max_pipeline: int
    """Most requests one connection sends before it reads a reply (``client_requests``)."""
    timed: int
    """Request slots whose sources draw think times from the random buffers
    (closed, not recorded, not memoryless; ``sources``)."""
    collection_keys: int
    """Key rows of the collection keyspaces' keys and of the collections the
    groups' command traces name (``collection``)."""
    collections: int
    """Collection values, rows of ``cl`` used: the big keys', then the collection
    keyspaces' (``collection``)."""
    once_rows: int
    """Key rows laid out for write-once keys: the preloaded ones and the spare
    (``preload``)."""
    once_low: int
    """Free write-once rows below which the kernel asks for more (``KS_FREE_LOW``;
    ``preload``)."""
    once_created: int
    """Write-once key rows of every write-once key the run creates, as if none
    were evicted or expired (``preload``; 0 without spare rows)."""
    once_lo: int
    """First key row of the write-once keys (``db``)."""
    key_rows: int
    """Rows of the key table laid out at build (``db``; ``objects`` lays the rows'
    arena handles over them)."""
    key_rows_created: int
    """Key rows of every key the run creates, as if none were evicted or expired
    (``db``; the fork's page bitmap spans them)."""
    slab_ids: int
    """Slab ids of the arena's slab arrays laid out at build (``arena``; the
    non-full bit sets span them, ``nonfull``)."""
    small_bins: int
    """Bins of the arena: its small size classes (``arena``)."""
    event_entries: int
    """Entries of the client-side event heap, and of the timing wheel (``events``)."""

    def __init__(self) -> None:
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_step", None)

    def __getattr__(self, name: str) -> int:
        step = self._step
        if name not in SIZE_NAMES:
            raise AttributeError(f"no size {name!r}; the sizes are {', '.join(SIZE_NAMES)}")
        if step is not None and name not in step.needs + step.provides:
            raise AttributeError(f"{step.module}.configure reads size {name!r}: add it to "
                                 "its needs in model/mechanisms.py")
        if name not in self._values:
            raise AttributeError(f"size {name!r} read before any step set it (provided by "
                                 f"{', '.join(providers(name)) or 'no step'})")
        return self._values[name]

    def __setattr__(self, name: str, value: Any) -> None:
        step = self._step
        if name not in SIZE_NAMES:
            raise AttributeError(f"no size {name!r}; the sizes are {', '.join(SIZE_NAMES)}")
        if step is None or name not in step.provides:
            who = f"{step.module}.configure" if step is not None else "code outside a step"
            raise AttributeError(f"{who} sets size {name!r}, which only "
                                 f"{', '.join(providers(name)) or 'no step'} provides")
        if name in self._values:
            raise AttributeError(f"size {name!r} set twice")
        self._values[name] = int(value)

    def during(self, step: Mechanism | None) -> None:
        """Check the reads and sets that follow against ``step``'s entry (None:
        outside the steps, where sizes are only read)."""
        object.__setattr__(self, "_step", step)

    def is_set(self, name: str) -> bool:
        return name in self._values


SIZE_NAMES = tuple(Sizes.__annotations__)

MECHANISMS = (
    Mechanism("model.main_thread", step=10),  # a core to itself until the host says otherwise
    Mechanism("model.netstack"),
    Mechanism("model.io_threads", step=350),
    Mechanism("model.event_loop", step=340, needs=("conns",)),
    Mechanism("model.clients", step=30, needs=("conns",), provides=("groups",)),
    # The client side's other modules (split out of clients, issue #44). Their
    # steps run where clients' ran, in the order their parts ran inside it: the
    # pools lay out the connection rows; then the think times (sources), the value
    # sizes (clients) and the phases' think times (client_lifecycle) append their
    # empirical tables, each step for every group in turn. With several groups a
    # table's place in tb_emp_* moved (before, they went group by group), not its
    # points: a draw reads only its own points (rng.empirical).
    Mechanism("model.pools", step=24, provides=("conns",)),
    Mechanism("model.sources", step=26, provides=("slots", "timed")),
    Mechanism("model.client_lifecycle", step=32, needs=("slots",)),
    Mechanism("model.client_requests", step=34, needs=("conns", "slots"),
              provides=("max_pipeline",)),
    Mechanism("model.client_failures", step=36, needs=("conns", "slots")),
    Mechanism("model.network", step=40, needs=("conns", "groups")),
    Mechanism("model.client_threads", step=50, needs=("conns",)),
    Mechanism("model.client_memory", step=155, needs=("conns",)),
    Mechanism("model.clients_cron", step=190),
    Mechanism("model.client_close"),
    Mechanism("model.client_eviction", step=200),
    Mechanism("model.protocol", step=210),
    Mechanism("model.call", step=60),
    Mechanism("model.cpu_caches", step=110),  # needs the groups' first rows (collection)
    Mechanism("model.scripts", step=70, needs=("conns",)),
    Mechanism("model.locality", step=80),
    Mechanism("model.db", step=140, needs=("collection_keys", "once_rows", "once_low",
                                            "once_created"),
              provides=("once_lo", "key_rows", "key_rows_created")),
    Mechanism("model.preload", state=False, step=135, start=30,  # start: the preload
              needs=("conns", "max_pipeline"), provides=("once_rows", "once_low", "once_created")),
    Mechanism("model.objects", step=145, needs=("key_rows",)),  # the rows' arena handles
    Mechanism("model.bigkeys", state=False, start=40),  # its rows: collection's step
    Mechanism("model.collection", step=90,  # the collections' table, the keyspaces' rows
              provides=("collection_keys", "collections")),
    Mechanism("model.lazyfree", step=120, needs=("collections",)),
    Mechanism("model.arena", step=160, start=10,  # after the steps' b.slab_demand
              needs=("conns", "max_pipeline"),  # start: Redis's own allocations
              provides=("slab_ids", "small_bins")),
    Mechanism("model.nonfull", step=165, needs=("slab_ids", "small_bins")),
    Mechanism("model.tcache", step=170),
    Mechanism("model.rss", step=180, start=20),  # start: the metadata base
    Mechanism("model.admin", step=130),
    Mechanism("model.memory", step=150),
    Mechanism("model.eviction", step=220),
    Mechanism("model.lfu", step=225),
    Mechanism("model.expire", step=230),
    Mechanism("model.aof", step=310, start=50),  # start: the base, after the preload
    Mechanism("model.disk", step=20),  # its fsync table is the first empirical table
    Mechanism("model.fork", step=320, needs=("key_rows_created",)),
    Mechanism("model.replication_buffer", step=335),
    Mechanism("model.replication", step=330),  # reads the windows (I[N_WIN], bins)
    Mechanism("model.cow", step=325),
    Mechanism("model.defrag", step=240),
    Mechanism("model.latency", step=300),
    Mechanism("model.events", step=250, needs=("conns", "slots", "groups"),
              provides=("event_entries",)),
    Mechanism("model.heap", step=252, needs=("event_entries",)),
    Mechanism("model.wheel", step=254, needs=("event_entries",)),
    Mechanism("model.rng", step=260, needs=("conns", "groups", "max_pipeline", "timed")),
    Mechanism("observe.bins", step=270),
    Mechanism("observe.groups", step=280),  # reads the windows (I[N_WIN], bins)
    Mechanism("observe.stalls", step=290),
)
"""Every mechanism, in the order of the kernel state's layout."""


def providers(name: str, mechanisms: tuple[Mechanism, ...] = MECHANISMS) -> list[str]:
    """The modules whose step provides size ``name``."""
    return [m.module for m in mechanisms if name in m.provides]


def steps(mechanisms: tuple[Mechanism, ...] = MECHANISMS) -> tuple[Mechanism, ...]:
    """The mechanisms with a configure step, in the order the steps run."""
    return tuple(sorted((m for m in mechanisms if m.step is not None), key=lambda m: m.step))


def starts(mechanisms: tuple[Mechanism, ...] = MECHANISMS) -> tuple[Mechanism, ...]:
    """The mechanisms with a start step, in the order they run."""
    return tuple(sorted((m for m in mechanisms if m.start is not None), key=lambda m: m.start))


def check(mechanisms: tuple[Mechanism, ...] = MECHANISMS) -> None:
    """Refuse a registry that cannot be built: a module listed twice, one with
    neither state nor a step, two steps of one rank, a size that is no
    ``Sizes`` attribute, provided twice, or needed by a step that runs before
    its provider (or with none)."""
    modules = [m.module for m in mechanisms]
    twice = sorted({m for m in modules if modules.count(m) > 1})
    if twice:
        raise RuntimeError(f"model/mechanisms.py: {twice} registered twice")
    for m in mechanisms:
        if not m.state and m.step is None and m.start is None:
            raise RuntimeError(f"model/mechanisms.py: {m.module} has neither state nor a step")
        if m.step is None and (m.needs or m.provides or m.shares):
            raise RuntimeError(f"model/mechanisms.py: {m.module} has no step, so it "
                               "needs, provides and shares nothing")
        unknown = [s for s in m.needs + m.provides if s not in SIZE_NAMES]
        if unknown:
            raise RuntimeError(f"model/mechanisms.py: {m.module}: {unknown} are not sizes "
                               f"(Sizes has {', '.join(SIZE_NAMES)})")
    for kind in ("step", "start"):
        ranks = [getattr(m, kind) for m in mechanisms if getattr(m, kind) is not None]
        same = sorted({r for r in ranks if ranks.count(r) > 1})
        if same:
            raise RuntimeError(f"model/mechanisms.py: two {kind}s have rank {same}")
    provided: dict[str, str] = {}
    for m in steps(mechanisms):
        for name in m.needs:
            if name not in provided:
                later = providers(name, mechanisms)
                raise RuntimeError(
                    f"model/mechanisms.py: {m.module}'s step (rank {m.step}) needs size "
                    f"{name!r}, which no earlier step provides"
                    + (f" ({', '.join(later)} runs later)" if later else ""))
        for name in m.provides:
            if name in provided:
                raise RuntimeError(f"model/mechanisms.py: size {name!r} provided by "
                                   f"{provided[name]} and {m.module}")
            provided[name] = m.module


check()
