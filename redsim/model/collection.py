"""Collections in a client group's keyspace: what HSET, SADD, ZADD, LPUSH and the
rest do to a stored hash, set, sorted set or list, what they cost and reply.

Follows, for their effect on the element count, the encoding, memory and the
reply: ``src/t_hash.c`` (``hsetCommand``, ``hdelCommand``, ``hgetCommand``,
``hgetallCommand``, ``hlenCommand``; ``hashTypeTryConversion`` /
``hashTypeConvert``), ``src/t_set.c`` (``saddCommand``, ``sremCommand``,
``sismemberCommand``, ``smembersCommand``, ``scardCommand``;
``setTypeMaybeConvert``), ``src/t_zset.c`` (``zaddGenericCommand``,
``zremCommand``, ``zscoreCommand``, ``zrangeGenericCommand``, ``zcardCommand``;
``zsetConvert``) and ``src/t_list.c`` (``pushGenericCommand``,
``popGenericCommand``, ``lrangeCommand``, ``llenCommand``): a write finds its
key with ``lookupKeyWrite`` (no hit or miss counted), creates the collection
when it is missing, and a collection left empty is deleted (``dbDelete``); a
read finds it with ``lookupKeyRead``.

A collection keyspace (``keyspace.type``) has rows of its own: key id i of
group g is row ``gp_key_lo[g] + i``, and its collection is row ``row - BIG_LO``
of the collections' table (``bigkeys``; the big keys come first). The table
row holds the element count, and the encoding, bytes, allocations, free effort
and RDB bytes that follow from it (``encoding.shape_of``, the same arithmetic
the memory tests check by hand), recomputed at every change: crossing a
``*-max-listpack-*`` threshold converts it. A hashtable, skiplist or quicklist
is never converted back when it shrinks, as Redis does for hashes, sets and
sorted sets.

Costs: the command table's fixed part, per element (members added, removed or
returned) and per byte moved, and

- a listpack search: a hash, set or sorted set held as a listpack is searched
  entry by entry (``lpFind``), ``engine.cpu.listpack-entry`` per entry
  passed: all of them to find a member is new, half on average to find one
  that exists (an intset's binary search and a hashtable's lookup are in the
  fixed part; reads-keys-eval.md §3e measured the listpack's 6.9 ns per field);
- a conversion: the new encoding's allocations, each at ``engine.cpu.free-alloc``
  (a malloc taken to cost what a free does; not measured separately).

Simplifications, each stated:

- members: a hash, set or sorted set grows by new members until it holds its
  key's element count (``keyspace.elements``, drawn once per key), after which
  an add updates an existing member; a remove names a member that is there
  while there is one. A list grows with every push.
- every element has the group's member size (and a hash field the mean of
  its value size); a sorted set's scores are integers (``encoding.LP_SCORE``);
  ZSCORE replies with a 10-digit score.
- the value's memory is one stand-in extent (``objects.value_extent``): a
  change moves it only when its size class (its pages, above 32 KB) changes,
  as ``je_rallocx`` stays in place within a class; ``used_memory`` follows the
  exact bytes at every change.
- ZRANGEBYSCORE's O(log n) seek and ZRANGE ... WITHSCORES are not modelled;
  7.2's lists are not converted back to a listpack when they shrink.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from redsim.model import state as S
from redsim.model.arena import SMALL_MAX, hi_handle, lo_handle, pair
from redsim.model.bigkeys import table_rows
from redsim.model.blueprint import US
from redsim.model.commands import (
    _TABLE,
    COLL_ADD,
    COLL_ALL,
    COLL_CARD,
    COLL_GET,
    COLL_POP,
    COLL_REMOVE,
)
from redsim.model.cow import cow_touch
from redsim.model.db import (
    NO_TTL,
    access_field,
    db_add,
    db_delete,
    first_rows,
    key_cost,
    key_live,
    lookup_key,
)
from redsim.model.encoding import (
    HASH,
    INTSET,
    LIST,
    LISTPACK,
    LP_SCORE,
    SET,
    TYPES,
    Limits,
    footprint,
    rdb_bytes,
    rdb_of,
    shape_of,
    skiplist_node_bytes,
)
from redsim.model.jit import leaf, step
from redsim.model.objects import COLLECTION, ROBJ, extent_class, value_extent
from redsim.model.protocol import bulk, header, integer_reply
from redsim.model.rng import preload_generator, variates
from redsim.model.state import (
    BIG_LO,
    C_FREE_ALLOC,
    C_LP_ENTRY,
    CHILD,
    CHILD_NONE,
    COLL_V72,
    LAZY_SERVER_DEL,
    MEM_DATASET,
    Q16,
    SKL_NODE,
)
from redsim.model.trace import Trace
from redsim.model.zmalloc import zfree

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "COLL_V72", "i8", "-", "config",
     "1: 7.2's encodings (set and list listpacks, setDictType's entries)"),
    ("F", "SKL_NODE", "f8", "B", "config",
     "a skiplist node's expected allocated bytes (encoding.skiplist_node_bytes)"),
    ("F", "C_LP_ENTRY", "f8", "s", "config",
     "CPU per listpack entry a search passes, s (engine.cpu.listpack-entry)"),
    ("tb", "coll_lim", "i8", "-", "config",
     "the *-max-listpack-* thresholds, as encoding.Limits.row lays them out"),
    ("tb", "cmd_coll", "i8", "-", "config",
     "each command's collection op (commands.COLL_*; 0: none)"),
    ("gp", "coll_kind", "i8", "-", "config",
     "the keyspace's collection type (encoding.HASH, SET, ZSET, LIST; a trace's: its first "
     "collection's); -1: strings only"),
    ("gp", "key_lo", "i8", "-", "config",
     "the key row of the group's key id 0 (0 for strings; a collection keyspace's own rows; "
     "a trace's first collection)"),
    # The collections' table, one row per collection value: the big keys'
    # (bigkeys.table_rows), then the collection keyspaces' (group_table).
    ("cl", "kind", "i8", "-", "config", "the collection's type (encoding.HASH, SET, ZSET, LIST)"),
    ("cl", "enc", "i8", "-", "state", "its encoding (encoding.LISTPACK, HASHTABLE, ...)"),
    ("cl", "elems", "i8", "-", "state", "its elements (fields, members)"),
    ("cl", "bytes", "i8", "B", "state", "its value's allocated bytes, robj included"),
    ("cl", "allocs", "i8", "-", "state", "allocations freeing the value releases"),
    ("cl", "effort", "i8", "-", "state", "lazyfreeGetFreeEffort of the value"),
    ("cl", "rdb", "i8", "B", "state", "bytes of the value in an RDB file"),
    ("cl", "member", "i8", "B", "config", "bytes of each member (hash field, list element)"),
    ("cl", "value", "i8", "B", "config", "a hash: bytes of each field's value"),
    ("cl", "integers", "i8", "-", "config", "1: a set of integers (an intset while small)"),
    ("cl", "target", "i8", "-", "config",
     "the key's element count (keyspace.elements): preloaded with it; adds past it update"),
)

ZSCORE_DIGITS = 10  # an integer-valued score as a bulk string (a Unix time)


@leaf
def is_large(enc):
    """A hashtable, skiplist or quicklist: what Redis never converts back."""
    return enc != LISTPACK and enc != INTSET


@step  # not inlined: one compiled copy of shape_of (the compile's time)
def reshape(w, cid, n):
    """Give collection ``cid`` ``n`` elements: its encoding, bytes, allocations,
    free effort and RDB bytes follow (``encoding.shape_of``). Returns the
    allocations of a conversion it made (0: none)."""
    kind = w.cl_kind[cid]
    old = w.cl_enc[cid]
    member = w.cl_member[cid]
    value = w.cl_value[cid]
    enc, nbytes, allocs, effort, nodes = shape_of(
        kind, n, member, value, w.cl_integers[cid] == 1, is_large(old) and w.cl_elems[cid] > 0,
        w.I[COLL_V72] == 1, w.tb_coll_lim, w.I[Q16], LP_SCORE, w.F[SKL_NODE])
    w.cl_enc[cid] = enc
    w.cl_elems[cid] = n
    w.cl_bytes[cid] = nbytes
    w.cl_allocs[cid] = allocs
    w.cl_effort[cid] = effort
    w.cl_rdb[cid] = rdb_of(kind, enc, nbytes, nodes, n, member, value)
    if is_large(enc) and not is_large(old):
        return allocs
    return 0


@step
def resize(w, key, cid, n, key_len):
    """A present collection's element count becomes ``n`` (> 0): its memory
    follows, its extent moves if its class changed; returns the CPU of a
    conversion, s."""
    I = w.I
    old_bytes = w.cl_bytes[cid]
    made = reshape(w, cid, n)
    new_bytes = w.cl_bytes[cid]
    q16 = I[Q16]
    if extent_class(new_bytes - ROBJ, q16) != extent_class(old_bytes - ROBJ, q16):
        v = w.ks_aval[key]
        h = value_extent(w, new_bytes - ROBJ)  # realloc: the new extent, then the old freed
        zfree(w, lo_handle(v))
        w.ks_aval[key] = pair(h, hi_handle(v))
        cow_touch(w, key, 1)
    cost = key_cost(w, key_len, w.ks_vlen[key], w.ks_expire[key] != NO_TTL)
    I[MEM_DATASET] += cost - w.ks_cost[key]
    w.ks_cost[key] = cost
    return made * w.F[C_FREE_ALLOC]


@leaf
def touch(w, key):
    """``lookupKeyWrite``'s LRU/LFU update (none while a fork child exists)."""
    if w.I[CHILD] == CHILD_NONE:
        w.ks_lru[key] = access_field(w, w.ks_lru[key])


@leaf
def searched(w, cid, found, new):
    """Listpack entries a search of ``found`` existing and ``new`` absent members
    passes: half the entries for each existing one, all for each new one; none
    in a hashtable, skiplist, intset or list."""
    if w.cl_enc[cid] != LISTPACK or w.cl_kind[cid] == LIST:
        return 0.0
    n = w.cl_elems[cid]
    return found * 0.5 * n + new * n


@step
def collection_command(w, c, g, key, op, k, n):
    """Run collection op ``op`` (``commands.COLL_*``) of connection c's command on
    key row ``key`` of group g's collection keyspace, with ``k`` members and
    count ``n``. Sets the reply's bytes (``cn_next_reply``); returns (elements
    for the per-element cost, value bytes moved, changes for ``server.dirty``,
    extra CPU before the service multiplier, s)."""
    cid = key - w.I[BIG_LO]
    kind = w.cl_kind[cid]
    member = w.cl_member[cid]
    value = w.cl_value[cid] if kind == HASH else 0
    key_len = w.gp_key_size[g]
    extra = 0.0
    if op == COLL_ADD or op == COLL_REMOVE or op == COLL_POP:
        live = key_live(w, key)
        if live:
            touch(w, key)
        n0 = w.cl_elems[cid] if live else 0
        if op == COLL_ADD:
            added = k if kind == LIST else min(k, max(w.cl_target[cid] - n0, 1 if n0 == 0 else 0))
            w.cn_next_reply[c] = integer_reply(added)
            if not live:
                w.cl_enc[cid] = LISTPACK
                w.cl_elems[cid] = 0
                extra = reshape(w, cid, added) * w.F[C_FREE_ALLOC]
                db_add(w, key, key_len, COLLECTION - cid, NO_TTL)
            else:
                extra = searched(w, cid, k - added, added) * w.F[C_LP_ENTRY]
                if added > 0:
                    extra += resize(w, key, cid, n0 + added, key_len)
            changed = added if kind == SET else k
            return k, k * (member + value), changed, extra
        gone = min(k, n0)
        if op == COLL_POP:
            if not live:
                w.cn_next_reply[c] = 5  # $-1\r\n
            elif k == 1:
                w.cn_next_reply[c] = bulk(member)
            else:
                w.cn_next_reply[c] = header(gone) + gone * bulk(member)
        else:
            w.cn_next_reply[c] = integer_reply(gone)
        if gone > 0:
            extra = searched(w, cid, gone, 0) * w.F[C_LP_ENTRY]
            if gone == n0:  # the last element: the key goes (dbDelete, implicit)
                extra += db_delete(w, key, w.I[LAZY_SERVER_DEL] == 1)[1]
            else:
                extra += resize(w, key, cid, n0 - gone, key_len)
        return k, gone * (member + value), gone, extra
    v = lookup_key(w, key, True)
    live = v != -2
    n0 = w.cl_elems[cid] if live else 0
    if op == COLL_GET:
        if not live:
            w.cn_next_reply[c] = integer_reply(0) if kind == SET else 5
            return 1, 0, 0, 0.0
        extra = searched(w, cid, 1, 0) * w.F[C_LP_ENTRY]
        if kind == SET:
            w.cn_next_reply[c] = integer_reply(1)
            return 1, 0, 0, extra
        size = value if kind == HASH else ZSCORE_DIGITS
        w.cn_next_reply[c] = bulk(size)
        return 1, size, 0, extra
    if op == COLL_CARD:
        w.cn_next_reply[c] = integer_reply(n0)
        return 0, 0, 0, 0.0
    m = n0 if op == COLL_ALL else min(n, n0)
    if kind == HASH:  # field and value, two bulks each
        w.cn_next_reply[c] = header(2 * m) + m * (bulk(member) + bulk(value))
    else:
        w.cn_next_reply[c] = header(m) + m * bulk(member)
    return m, m * (member + value), 0, 0.0


# ---- configuration (Python, once per run) ---------------------------------------------


ELEMENTS = 10
"""A collection key's elements when its keyspace sets no ``elements``."""


def element_counts(rng, grp, n: int) -> np.ndarray:
    """Each of ``n`` keys' element count, drawn from the keyspace's ``elements``
    (at least 1), or ``ELEMENTS`` each."""
    if grp.keyspace.elements is None:
        return np.full(n, ELEMENTS, np.int64)
    return np.maximum(np.rint(variates(rng, grp.keyspace.elements, n)), 1).astype(np.int64)


def member_size(grp) -> int:
    return grp.keyspace.member_size or 10


def hash_value_size(grp) -> int:
    """A hash field's value bytes: the mean of the group's value size."""
    return int(round(float(grp.value_size.mean)))


def trace_collections(grp, trace: Trace | None) -> tuple:
    """The collections a trace group's command file names
    (``trace.TraceCollection``; none for other groups and formats), from its
    parsed ``trace`` (``Blueprint.traces``: the driver parses it)."""
    if grp.kind != "trace" or grp.trace_format != "commands" or grp.trace is None:
        return ()
    if trace is None:
        raise ValueError(f"client group {grp.name!r} replays a command trace, but no "
                         "parsed trace was given for it (redsim.traces.group_traces)")
    return trace.collections


def group_keys(grp, trace: Trace | None) -> int:
    """Collection keys of a group: its keyspace's when it holds collections,
    or those its trace names."""
    if grp.keyspace.type != "string":
        return grp.keyspace.keys
    return len(trace_collections(grp, trace))


def layout(scenario, traces: Sequence[Trace | None], first_row: int) -> list[int]:
    """Each group's first key row: 0 for strings; the collection keys' rows
    (a collection keyspace's, a trace's) follow one another from
    ``first_row`` (the first after the big keys)."""
    out, row = [], first_row
    for grp, trace in zip(scenario.clients, traces, strict=True):
        n = group_keys(grp, trace)
        out.append(row if n else 0)
        row += n
    return out


def first_key_rows(scenario, traces: Sequence[Trace | None]) -> list[int]:
    """Each group's first collection key row: ``layout`` from the row after
    the big keys' (``db.first_rows``: the string groups', DEBUG POPULATE's);
    ``traces``: each group's parsed trace or None (``Blueprint.traces``)."""
    return layout(scenario, traces, sum(first_rows(scenario)) + len(scenario.big_keys))


@dataclass
class CollectionRows:
    """Where a collection keyspace's keys live: the key row of its key id 0,
    the collection id of that key, and each key's value bytes at its
    preloaded element count (``preload.plan`` places them)."""

    row_lo: int
    cid_lo: int
    value_bytes: np.ndarray


def collection_rows(scenario, traces: Sequence[Trace | None], lo: list[int],
                    values: np.ndarray) -> list[CollectionRows | None]:
    """Per group, where its collection keyspace's keys are (``CollectionRows``;
    None for strings, and for a trace's collections, which start absent): its
    first row from ``layout``, its first collection id (after the big keys')
    and its keys' value bytes (``values``, ``group_table``'s, group after group)."""
    out, done = [], 0
    for grp, trace, row_lo in zip(scenario.clients, traces, lo, strict=True):
        n = group_keys(grp, trace)
        out.append(None if grp.keyspace.type == "string" else CollectionRows(
            row_lo=row_lo, cid_lo=len(scenario.big_keys) + done,
            value_bytes=values[done:done + n]))
        done += n
    return out


def collection_keys(scenario, traces: Sequence[Trace | None]) -> int:
    return sum(group_keys(g, t) for g, t in zip(scenario.clients, traces, strict=True))


def group_table(scenario, traces: Sequence[Trace | None], seed: int) -> dict[str, np.ndarray]:
    """The collections' table rows of the collection keyspaces, group by group,
    key id by key id: each key's element count drawn (its own random stream,
    the preload's part 2, apart from the preload's keys and the kernel's) and
    the shape it has at that count (``encoding.footprint`` per distinct count)."""
    limits = Limits.of(scenario)
    q16 = scenario.jemalloc.quantum == 16
    cols: dict[str, list[np.ndarray]] = {f: [] for f in (
        "kind", "enc", "elems", "bytes", "allocs", "effort", "rdb", "member", "value",
        "integers", "target")}
    def rows(kind, counts, member, value, integers):
        uniq, inv = np.unique(counts, return_inverse=True)
        fps = [footprint(kind, int(e), member, value, integers, limits=limits, q16=q16)
               for e in uniq]
        per = {
            "enc": [fp.encoding for fp in fps], "bytes": [fp.bytes for fp in fps],
            "allocs": [fp.allocs for fp in fps], "effort": [fp.effort for fp in fps],
            "rdb": [rdb_bytes(kind, fp, int(e), member, value) for fp, e in zip(fps, uniq,
                                                                                strict=True)]}
        for f, vals in per.items():
            cols[f].append(np.asarray(vals, np.int64)[inv])
        cols["elems"].append(counts)
        cols["target"].append(counts)
        for f, v in (("kind", kind), ("member", member), ("value", value),
                     ("integers", int(integers))):
            cols[f].append(np.full(len(counts), v, np.int64))

    rng = preload_generator(seed, 2)
    for grp, trace in zip(scenario.clients, traces, strict=True):
        if grp.keyspace.type != "string":
            n = grp.keyspace.keys
            kind = TYPES[grp.keyspace.type]
            counts = element_counts(rng, grp, n)
            rows(kind, counts, member_size(grp), hash_value_size(grp) if kind == HASH else 0,
                 grp.keyspace.integers)
        # A trace's: absent at the start; their size is the one their adds reach.
        for tc in trace_collections(grp, trace):
            rows(TYPES[tc.type], np.array([tc.members], np.int64), tc.member_size,
                 tc.value_size, tc.integers)
    return {f: (np.concatenate(v) if v else np.zeros(0, np.int64)) for f, v in cols.items()}


def slab_demand(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every collection's small allocations, big keys' and collection
    keyspaces' alike, from their values' bytes (the table's ``bytes``, robj
    included): a robj each, and each value's extent when it is small
    (``arena.slabs_for`` sizes the slab arrays)."""
    n = len(values)
    extents = values - ROBJ
    small = extents[extents <= SMALL_MAX]
    sizes = np.concatenate([np.full(min(n, 1), ROBJ, np.int64), small])
    counts = np.concatenate([np.full(min(n, 1), n, np.int64), np.ones(len(small), np.int64)])
    return sizes.astype(np.int64), counts.astype(np.int64)


def configure(b) -> None:
    """The thresholds, the per-command ops, each group's collection type and
    first key row, the collections' table (the big keys' rows,
    ``bigkeys.table_rows``, then the collection keyspaces', at least one row,
    unused when there is none) and where the keyspaces' keys are
    (``b.extra["collection_rows"]``, which ``preload.configure`` plans); gives
    ``collection_keys`` and ``collections``, and the collections' allocations
    to the arena's sizing (``b.slab_demand``). Needs ``call.configure``; a trace
    group's collections come from its parsed trace (``b.traces``)."""
    sc, traces = b.scenario, b.traces
    limits = Limits.of(sc)
    q16 = sc.jemalloc.quantum == 16
    b.I[S.COLL_V72] = int(limits.v72)
    b.F[S.SKL_NODE] = skiplist_node_bytes(q16)
    b.F[S.C_LP_ENTRY] = sc.engine.cpu.listpack_entry * US * sc.engine.cpu.scale
    lo = first_key_rows(sc, traces)
    b.fill("tb", coll_lim=limits.row(), cmd_coll=np.array([c.coll for c in _TABLE], np.int64))
    kinds = [TYPES[t[0].type] if (t := trace_collections(g, tr))
             else TYPES.get(g.keyspace.type, -1) for g, tr in zip(sc.clients, traces, strict=True)]
    b.fill("gp", coll_kind=np.array(kinds, np.int64),
           key_lo=np.array(lo, np.int64))
    table = group_table(sc, traces, b.seed)
    b.extra["collection_rows"] = collection_rows(sc, traces, lo, table["bytes"])
    b.size.collection_keys = collection_keys(sc, traces)
    big = table_rows(sc)
    n = len(sc.big_keys) + len(table["kind"])
    rows = max(n, 1)

    def col(name):
        out = np.zeros(rows, np.int64)
        out[:n] = np.concatenate([np.asarray(big[name], np.int64), table[name]])
        return out

    b.fill("cl", **{name: col(name) for name in big})
    b.size.collections = n
    b.slab_demand.append(slab_demand(col("bytes")[:n]))
