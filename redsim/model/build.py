"""Turn a validated scenario into the kernel's flat arrays (a ``World``).

No Redis source: the wiring from a validated scenario to the kernel's arrays.
Each mechanism configures its own part: its ``configure(b)`` reads its part of
the scenario and fills its scalars and arrays in a ``blueprint.Blueprint``
(each names the directives it reads and the Redis code it follows). ``STEPS``
runs them in order (a step may use sizes an earlier one decided); the arrays
are then laid out (``state.flatten``) and ``START`` places what needs the
laid-out world (the preloaded keys, the AOF's base).

Adding a directive that changes a mechanism: the schema field
(``config/schema.py``), the directive list (``config/directives.py``), and the
mechanism's own module: a ``FIELDS`` entry if the kernel needs a new number
(``model/layout.py``), its ``configure`` and its kernel code.
"""

from __future__ import annotations

from redsim.model import (
    admin,
    aof,
    arena,
    bigkeys,
    call,
    client_eviction,
    client_threads,
    clients,
    clients_cron,
    collection,
    cpu_caches,
    db,
    defrag,
    disk,
    event_loop,
    events,
    eviction,
    expire,
    fork,
    io_threads,
    latency,
    lazyfree,
    locality,
    main_thread,
    memory,
    network,
    protocol,
    replication,
    rng,
    rss,
    scripts,
    tcache,
)
from redsim.model import state as S
from redsim.model.blueprint import Blueprint
from redsim.model.rng import RandomStreams
from redsim.observe import bins, groups, stalls

STEPS = (
    main_thread.configure,  # a core to itself until the host says otherwise
    disk.configure,  # first: its fsync table is the first empirical table
    clients.configure,  # decides conns, slots, pools, groups
    network.configure,  # needs conns and groups
    client_threads.configure,
    call.configure,
    scripts.configure,  # needs conns
    locality.configure,
    collection.configure,  # the collection keyspaces' rows and their elements
    bigkeys.configure,  # the collections' table (needs collection's rows)
    cpu_caches.configure,  # needs the groups' first rows (collection)
    lazyfree.configure,  # needs collections
    admin.configure,
    db.configure,  # decides key_rows (needs conns)
    memory.configure,
    arena.configure,  # needs conns, max_pipeline and db's slab_demand
    tcache.configure,
    rss.configure,
    clients_cron.configure,
    client_eviction.configure,
    protocol.configure,
    eviction.configure,
    expire.configure,
    defrag.configure,
    events.configure,  # needs conns, slots, groups
    rng.configure,
    bins.configure,
    groups.configure,  # needs the windows
    stalls.configure,
    latency.configure,
    aof.configure,
    fork.configure,  # needs key_rows_created
    replication.configure,
    event_loop.configure,
    io_threads.configure,
)
"""Every mechanism's configure step, in the order they run."""

START = (arena.start, rss.start, db.start, bigkeys.start, aof.start)
"""Steps that need the laid-out world, in order: Redis's own allocations, the
allocator's metadata base, the preload, then the AOF's base."""


def build_world(scenario, seed: int, images=None) -> tuple[S.World, RandomStreams, dict]:
    """Allocate and fill every array for one run.

    ``images``: a ``keyspace_image.KeyspaceImages``; the keyspace is copied
    from its image for this scenario and seed if it has one, else built and
    an image of it kept there.

    Returns the world, the random streams that feed it, and a small dict of
    sizes the driver needs (windows, groups' names).
    """
    b = Blueprint(scenario, seed)
    if images is not None:
        from redsim.model.keyspace_image import keyspace_key

        key = keyspace_key(scenario, seed)
        b.extra.update(keyspace_images=images, keyspace_key=key,
                       keyspace_image=images.get(key))
    for step in STEPS:
        step(b)
    b.fill("tb", **b.empirical_tables())
    w = S.flatten(b.F, b.I, **b.extra["lists"], **b.parts())
    for step in START:
        step(w, b)
    return w, b.extra["streams"], {"n_windows": b.info["n_windows"],
                                   "groups": b.info["groups"]}
