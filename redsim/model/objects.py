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
see ``keyspace``.
"""

from __future__ import annotations

import numpy as np

from redsim.model.jemalloc import size_class
from redsim.model.jit import entry, leaf

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
def value_bytes(length, integer, shared, quantum16):
    """Allocated bytes of a string value of ``length`` bytes. ``integer``: the
    value is an integer that fits in a long (INCR counters); ``shared``: such
    small integers may use Redis's shared objects (no LRU/LFU eviction)."""
    if integer:
        return 0 if shared else size_class(ROBJ, quantum16)
    if length <= EMBSTR_LIMIT:
        return size_class(ROBJ + 3 + length + 1, quantum16)
    return size_class(ROBJ, quantum16) + sds_bytes(length, False, quantum16)


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
