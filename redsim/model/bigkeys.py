"""Big keys: the scenario's collections (``big-keys``), their rows of the
collections' table (``model/collection.py`` keeps the table: the big keys'
rows, then the collection keyspaces'), and what deleting a collection costs.

No single Redis function: a big key is a hash, set, sorted set or list in
the dataset from the start, as ``redis-cli --bigkeys`` would find it. Its
encoding, bytes, allocations and free effort come from ``encoding.footprint``
with the server's thresholds. A key row holds a collection by a value length
of ``COLLECTION - cid`` (``objects.py``: -3 and below; -1 is an integer, -2 is
``lookup_key``'s miss), which points at row ``cid`` of that table; string keys
are unchanged.

Deleting one follows ``src/db.c:dbGenericDelete``: the key's sds, dictEntry
and expires entry go at once (``db.db_delete``); the value goes to the bio
lazy-free thread when the delete is lazy and its free effort is above 64
(``lazyfree.queue``), else it is freed at once, ``allocations × free-alloc``
of main-thread CPU (``src/object.c:decrRefCount`` →
``freeHashObject``/``freeSetObject``/``freeZsetObject``/``freeListObject``).

Deviation: the arena holds a collection's value as two allocations, its robj
and one stand-in for the rest of its bytes (``objects.value_extent``): an allocation
of its size class up to 32 KB, else an extent of exactly the pages it needs.
A listpack, an intset or a small quicklist is one allocation in Redis too; a
hashtable's or skiplist's elements are many small regions, whose slab
fragmentation and thread-cache traffic are not modelled. ``used_memory``
counts the value exactly, at its allocations' size classes; RSS exceeds it by
under a page per big collection.

Deviation: a fork child serialises keys at ``host.child-keys-per-sec``
whatever their size, so a big key counts as one key there (its RDB bytes are
its own, ``encoding.rdb_bytes``).
"""

from __future__ import annotations

import numpy as np

from redsim.model import state as S
from redsim.model.db import preload
from redsim.model.encoding import TYPES, Limits, footprint, rdb_bytes
from redsim.model.objects import COLLECTION
from redsim.model.world import pack

# ---- configuration (Python, once per run) ---------------------------------------------


def footprints(scenario) -> list:
    """Each big key's ``encoding.Footprint`` under the scenario's server."""
    limits = Limits.of(scenario)
    q16 = scenario.jemalloc.quantum == 16
    return [footprint(TYPES[k.type], k.elements, k.member_size, _value(k), k.integers,
                      limits=limits, q16=q16) for k in scenario.big_keys]


def _value(k) -> int:
    return (20 if k.value_size is None else k.value_size) if k.type == "hash" else 0


def table_rows(scenario) -> dict[str, list[int]]:
    """The big keys' rows of the collections' table (``collection.py``'s ``cl``
    fields, by name), in the scenario's order: ``collection.configure`` puts
    them before the collection keyspaces' rows."""
    sc = scenario
    fps = footprints(sc)
    return {
        "kind": [TYPES[k.type] for k in sc.big_keys], "enc": [fp.encoding for fp in fps],
        "elems": [k.elements for k in sc.big_keys], "bytes": [fp.bytes for fp in fps],
        "allocs": [fp.allocs for fp in fps], "effort": [fp.effort for fp in fps],
        "rdb": [rdb_bytes(TYPES[k.type], fp, k.elements, k.member_size, _value(k))
                for k, fp in zip(sc.big_keys, fps, strict=True)],
        "member": [k.member_size for k in sc.big_keys],
        "value": [_value(k) for k in sc.big_keys],
        "integers": [int(k.integers) for k in sc.big_keys],
        "target": [k.elements for k in sc.big_keys]}


def start(w, b) -> None:
    """Put the big keys in the dataset, in their order, before the run (no CPU):
    ``db.preload`` adds each as a client's writes would."""
    ref = pack(w)
    lo = int(w.I[S.BIG_LO])
    for i, k in enumerate(b.scenario.big_keys):
        one = np.ones(1, np.int64)
        preload(ref, one * (lo + i), one * (COLLECTION - i), np.full(1, np.inf), one * 0,
                len(k.name.encode()), 0.0)


def row_of(scenario, world, name: str) -> int:
    """The key row of the big key called ``name``."""
    names = [k.name for k in scenario.big_keys]
    return int(world.I[S.BIG_LO]) + names.index(name)
