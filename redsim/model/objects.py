"""Bytes Redis allocates for a string key: dictEntry, key sds, value object, TTL entry.

Follows ``src/object.c:createStringObject`` (``src/object.c:createEmbeddedStringObject``
up to 44 bytes, ``src/object.c:createRawStringObject`` above),
``src/object.c:tryObjectEncoding`` (integers, shared integers) with
``src/object.c:trimStringObjectIfNeeded``, ``src/sds.c:sdsReqType`` for sds
headers, and ``src/db.c:dbAdd`` / ``src/db.c:setExpire`` for the dict entries
(the key's ``src/sds.c:sdsdup`` copy is shared by the expires entry).

Reference §3.4–3.5 (64-bit, no cluster mode), every allocation rounded by
``jemalloc.size_class``:

- main dict: one ``dictEntry`` of 24 bytes (key pointer, value union, next);
- key: an sds copy; keys are never grown, so below 32 bytes they use the 1-byte
  ``sdshdr5`` header: ``len + 2`` bytes, else ``sdshdr8/16/32`` + len + 1;
- value: a 16-byte ``robj``. An integer-looking value of ≤ 20 digits is stored
  in the robj itself (0 bytes when it is one of the 10,000 shared integers,
  which eviction with an LRU/LFU policy disables, §2.7); up to 44 bytes it is an
  embstr, one allocation of ``16 + 3 + len + 1``; longer values get a separate
  sds (``SET`` trims spare room, so the sds is exact);
- a TTL adds one more ``dictEntry`` in the expires dict (the key sds is shared).

Bucket arrays (8 bytes per bucket, a power of two) are per dict, not per key:
see ``db.py``.

Each of those allocations is also placed in jemalloc's arena (``zmalloc.py``:
through the main thread's thread cache) and remembered by key id (``aval`` and
``akey`` in the key's row, ``attl`` in an array beside it), so that freeing a
key frees the regions it holds in the slabs it holds them in. The order is
Redis's, which decides what the thread cache hands out next: a SET's value is
made when its command is parsed (the sds, then the robj), then ``dbAdd``'s key
sds and dictEntry; ``dbOverwrite`` frees the old value once the new one is in
place; a delete frees the key sds, the value, then the entry.

A key row whose value length is ``COLLECTION`` or below holds a collection
(row ``collection_of(vlen)`` of the collections' table, ``bigkeys.py``): its
value is its robj and one stand-in extent for the rest (``value_extent``;
``bigkeys.py`` states the deviation).
"""

from __future__ import annotations

import numpy as np

from redsim.model.arena import PAGE, SMALL_MAX, hi_handle, large_malloc, lo_handle, pair
from redsim.model.jemalloc import size_class
from redsim.model.jit import entry, hot_leaf, leaf
from redsim.model.tcache import LARGE_MAX_PAGES
from redsim.model.zmalloc import zfree, zfree_pair, zmalloc

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    # A SET of an existing key (S0's most common write) replaces the value: its
    # handles live in the key's row, which the command reads anyway. So do the
    # key's, which fill the row to 64 bytes, one cache line (state.row_table
    # aligns the table). The TTL entry's handle, needed only to add or delete
    # a key with a TTL, is an array of its own.
    ("ks", "aval", "i8", "-", "state",
     "its value: a raw value's sds and the robj or embstr (two arena handles)"),
    ("ks", "akey", "i8", "-", "state",
     "the key's sds and dictEntry in the arena: two arena handles (low, high 32 bits)"),
    ("ks", "attl", "i8[]", "-", "state", "its expires dictEntry (an arena handle), 0 if no TTL"),
)
HANDLE_FIELDS = ("attl",)
"""The key table's arena handle arrays (0: no allocation)."""
ROW_HANDLES = ("aval", "akey")
"""The arena handles stored in the key row (``state.KEY_ROW_ABSENT`` gives
their value in an absent key's row: 0, no allocation)."""

DICT_ENTRY = 24  # bytes: key pointer, value union, next pointer (src/dict.h)
ROBJ = 16  # bytes: type/encoding/lru (4) + refcount (4) + ptr (8) (src/server.h)
EMBSTR_LIMIT = 44  # OBJ_ENCODING_EMBSTR_SIZE_LIMIT (src/object.c)
SHARED_INTEGERS = 10000  # OBJ_SHARED_INTEGERS (src/server.h)


@leaf
def sds_header(length, for_key):
    """Header bytes of an sds of ``length`` bytes (sdshdr5 only for keys)."""
    if length < 32 and for_key:
        return 1
    if length < 256:
        return 3
    if length < 65536:
        return 5
    return 9


@leaf
def sds_bytes(length, for_key, quantum16):
    """Allocated bytes of an exact-size sds: header + payload + NUL, rounded."""
    return size_class(sds_header(length, for_key) + length + 1, quantum16)


@leaf
def value_requests(length, integer, shared):
    """The allocations of a string value of ``length`` bytes, requested bytes:
    (object, separate sds), 0 for none. ``integer``: the value is an integer
    that fits in a long (INCR counters); ``shared``: such small integers may use
    Redis's shared objects (no LRU/LFU eviction)."""
    if integer:
        return (0 if shared else ROBJ), 0
    if length <= EMBSTR_LIMIT:
        return ROBJ + 3 + length + 1, 0
    return ROBJ, sds_header(length, False) + length + 1


@hot_leaf
def value_bytes(length, integer, shared, quantum16):
    """Allocated bytes of a string value of ``length`` bytes (``value_requests``)."""
    obj, sds = value_requests(length, integer, shared)
    return size_class(obj, quantum16) + size_class(sds, quantum16)


@leaf
def string_key_bytes(key_len, value_len, integer, shared, has_ttl, quantum16):
    """Allocated bytes of one string key, excluding the dicts' bucket arrays."""
    entry = size_class(DICT_ENTRY, quantum16)
    total = entry + sds_bytes(key_len, True, quantum16)
    total += value_bytes(value_len, integer, shared, quantum16)
    if has_ttl:
        total += entry
    return total


@entry
def string_keys_bytes(key_len, vlens, has_ttl, quantum16):
    """``string_key_bytes`` of a batch of string (non-integer) values."""
    out = np.empty(len(vlens), np.int64)
    for i in range(len(vlens)):
        out[i] = string_key_bytes(key_len, vlens[i], False, False, has_ttl, quantum16)
    return out


# ---- a collection's value (the table is bigkeys.py's) ------------------------------------


COLLECTION = -3
"""``ks_vlen`` of the key holding collection 0: collection ``cid``'s is ``-3 - cid``
(-1 is an integer, -2 ``lookup_key``'s miss)."""


@leaf
def is_collection(vlen):
    return vlen <= COLLECTION


@leaf
def collection_of(vlen):
    """The collection id a key row's value length points at."""
    return COLLECTION - vlen


@leaf
def extent_pages(n):
    """Pages of an extent holding ``n`` bytes."""
    return (n + PAGE - 1) // PAGE


@leaf
def value_extent(w, n):
    """The arena's stand-in for a collection value's ``n`` bytes past its robj:
    one allocation of its size class up to the thread cache's largest (32 KB),
    else an extent of exactly the pages it needs, as a value's many regions
    fill their slabs (a large size class would add up to 25 %)."""
    pages = extent_pages(n)
    if pages <= LARGE_MAX_PAGES:
        return zmalloc(w, n)
    return large_malloc(w, pages)


@leaf
def extent_class(n, q16):
    """What ``value_extent`` allocates for ``n`` bytes: its size class up to
    32 KB, as a negative page count above (equal classes reallocate in place)."""
    pages = extent_pages(n)
    if pages <= LARGE_MAX_PAGES:
        return size_class(n, q16)
    return -pages


# ---- the arena's view: allocate and free a key's objects --------------------------------


@leaf
def alloc_key(w, k, key_len):
    """``dbAdd``'s key sds (``sdsdup``), then its dictEntry (``dictAddRaw``), for key k."""
    key = zmalloc(w, sds_header(key_len, True) + key_len + 1)
    # The handle that may be a large extent goes low: a high one must stay < 2^31.
    w.ks_akey[k] = pair(key, zmalloc(w, DICT_ENTRY))


@leaf
def free_key_sds(w, k):
    """The key's sds, freed first when a key is deleted (``dictFreeKey``)."""
    zfree(w, lo_handle(w.ks_akey[k]))


@leaf
def free_key_entry(w, k):
    """The key's dictEntry, freed last (after ``dictFreeVal``)."""
    zfree(w, hi_handle(w.ks_akey[k]))
    w.ks_akey[k] = 0


@hot_leaf
def alloc_value(w, k, vlen, shared):
    """A new value object for key k (``vlen`` -1: an integer; -3 and below: a
    collection, ``COLLECTION``), as the query
    parser makes it (``createRawStringObject``: the sds, then the robj; an
    embstr is one allocation); the old one, if any, is freed after it
    (``dbOverwrite``'s ``decrRefCount``: the sds, then the robj)."""
    if is_collection(vlen):  # its robj and one extent (value_extent)
        obj = ROBJ
        h_sds = value_extent(w, w.cl_bytes[collection_of(vlen)] - ROBJ)
    else:
        obj, sds = value_requests(vlen if vlen > 0 else 0, vlen < 0, shared)
        h_sds = zmalloc(w, sds)
    old = w.ks_aval[k]
    w.ks_aval[k] = pair(h_sds, zmalloc(w, obj))
    zfree_pair(w, old)


@leaf
def free_value(w, k):
    """``decrRefCount`` of key k's value: its sds, then its robj."""
    zfree_pair(w, w.ks_aval[k])
    w.ks_aval[k] = 0


@leaf
def alloc_ttl(w, k):
    """``setExpire``'s dictEntry in the expires dict."""
    w.ks_attl[k] = zmalloc(w, DICT_ENTRY)


@hot_leaf
def free_ttl(w, k):
    zfree(w, w.ks_attl[k])
    w.ks_attl[k] = 0


@entry
def _count_value_requests(vlens, counts):
    """Add each string value's small allocations (``value_requests``) to
    ``counts``, indexed by requested bytes (those above its length are large)."""
    for i in range(len(vlens)):
        obj, sds = value_requests(vlens[i], False, False)
        counts[obj] += 1
        if 0 < sds < len(counts):
            counts[sds] += 1


def key_requests(key_len: int, vlens: np.ndarray, n_ttl: int) -> tuple[np.ndarray, np.ndarray]:
    """The small allocations (requested bytes, how many of each) of string keys
    with values of ``vlens`` bytes, ``n_ttl`` of them with a TTL: what the arena's
    slab arrays are sized for (``arena.slabs_for``; large ones need no slab)."""
    vl = np.asarray(vlens, np.int64)
    counts = np.zeros(SMALL_MAX + 1, np.int64)
    _count_value_requests(vl, counts)
    key = int(sds_header(key_len, True)) + key_len + 1
    counts[DICT_ENTRY] += len(vl) + n_ttl
    if key <= SMALL_MAX:
        counts[key] += len(vl)
    sizes = np.flatnonzero(counts)
    return sizes.astype(np.int64), counts[sizes].astype(np.int64)


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """Every key row's arena handles, none allocated yet, over the ``key_rows``
    rows ``db.configure`` laid out (``db.grow_write_once`` grows them with the
    key table)."""
    from redsim.model import state as S

    n_keys = b.size.key_rows
    b.fill("ks", **{f: np.broadcast_to(np.asarray(S.KEY_ROW_ABSENT[f]), (n_keys,))
                    for f in ROW_HANDLES},
           **{f: np.zeros(n_keys, np.int64) for f in HANDLE_FIELDS})
