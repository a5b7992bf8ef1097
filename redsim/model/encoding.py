"""Collections: the encoding Redis picks for a hash, set, sorted set or list, and
what it allocates — bytes at jemalloc's size classes, the allocations a free
walks, and ``lazyfreeGetFreeEffort``.

Follows, for Redis 7.0 and 7.2 (the differences are noted):

- hashes, ``src/t_hash.c``: created as a listpack (``createHashObject``);
  ``hashTypeTryConversion`` / ``hashTypeSet`` convert to a hashtable when a
  field or value passes ``hash-max-listpack-value`` or the count passes
  ``hash-max-listpack-entries`` (the 513th field with the default 512); a
  hashtable entry is a ``dictEntry`` and two ``sdsdup`` copies (field, value);
- sets, ``src/t_set.c``: an intset while every member is an integer and the
  count is ≤ ``set-max-intset-entries``; 7.2 adds a listpack for up to
  ``set-max-listpack-entries`` members of ≤ ``set-max-listpack-value`` bytes;
  else a hashtable: 7.0 a ``dictEntry`` and an sds per member, 7.2's
  ``setDictType`` (``no_value``, ``keys_are_odd``) stores the member's sds in
  the bucket itself when the bucket is empty and a 16-byte ``dictEntryNoValue``
  only for members chained behind another;
- sorted sets, ``src/t_zset.c``: a listpack of (member, score) while the count
  is ≤ ``zset-max-listpack-entries`` and members ≤ ``zset-max-listpack-value``
  bytes, else a skiplist plus a dict (``zsetConvert``): per member a skiplist
  node of ``24 + 16·level`` bytes (``zslRandomLevel``: P(level ≥ k) = 0.25^(k−1),
  at most 32), its sds and a ``dictEntry``;
- lists, ``src/t_list.c`` and ``src/quicklist.c``: 7.0 always a quicklist; 7.2
  a listpack until it would pass the node limit of ``list-max-listpack-size``
  (−2: 8 KB), then a quicklist, whose nodes (40 bytes each) hold a listpack
  each, filled while ``node bytes + element + 8 ≤ limit``
  (``_quicklistNodeAllowInsert``);
- listpack entries (``src/listpack.c:lpEncodeGetType``, ``lpEncodeBacklen``): a
  string of L bytes takes 1 + L (L ≤ 63), 2 + L (≤ 4095) or 5 + L bytes plus a
  1–5-byte back length; a listpack is one allocation of 7 bytes of header and
  terminator plus its entries, reallocated to its exact size at every insert;
- dicts, ``src/dict.c``: a 56-byte ``dict`` and a bucket array of 8 bytes per
  bucket, a power of two (at least 4) that grows when an insert finds it full:
  n members inserted one by one leave ``next_power(n)`` buckets;
- ``src/lazyfree.c:lazyfreeGetFreeEffort``: a quicklist's node count, a
  hashtable set's, hash's or skiplist's element count, 1 for anything else
  (7.2 listpack lists included).

Reference §3.3–3.5 and ``docs/research/issue-21-collections.md`` §1–§2 hold the
figures and worked examples. All sizes are for 64-bit builds. ``shape_of``
does the arithmetic for Python (``footprint``) and for the kernel alike
(``collection.reshape``, at every change of a collection keyspace's key).

Simplifications (stated, each small against a collection's size):

- every element of a collection has the same sizes: ``member`` bytes (a hash's
  field, a set's or sorted set's member, a list's element) and, for a hash,
  ``value`` bytes;
- members are strings; a set of integers (``integers``) takes an intset of
  2-byte entries up to 32,767 members and 4-byte ones above, and in a
  hashtable each integer is an sds of ``member`` characters;
- a sorted set's scores are integer-valued doubles up to 2^63 (timestamps,
  counters), which a listpack stores as a 10-byte integer entry (a score like
  1.5 would be 5 bytes in 7.2 and 21 in 7.0's ``%.17g``);
- a hash converted at ``hash-max-listpack-entries`` (``dictExpand`` to the
  count) and a hash grown one field at a time both end with ``next_power(n)``
  buckets;
- the expected number of chained 7.2 set entries, n − B·(1 − e^(−n/B)), is
  used for its bytes (members hash uniformly into B buckets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from redsim.model.jemalloc import size_class
from redsim.model.jit import leaf
from redsim.model.objects import DICT_ENTRY, ROBJ, sds_bytes

# Types and encodings (src/server.h OBJ_* values are not needed: these index tables).
HASH = 0
SET = 1
ZSET = 2
LIST = 3
TYPES = {"hash": HASH, "set": SET, "zset": ZSET, "list": LIST}

LISTPACK = 0  # OBJ_ENCODING_LISTPACK
HASHTABLE = 1  # OBJ_ENCODING_HT
INTSET = 2  # OBJ_ENCODING_INTSET
SKIPLIST = 3  # OBJ_ENCODING_SKIPLIST
QUICKLIST = 4  # OBJ_ENCODING_QUICKLIST
ENCODINGS = ("listpack", "hashtable", "intset", "skiplist", "quicklist")

DICT = 56  # struct dict (src/dict.h, 7.0 and 7.2)
POINTER = 8  # a bucket
DICT_HT_INITIAL_SIZE = 4  # a dict's first table, buckets (src/dict.h)
SET_ENTRY_NO_VALUE = 16  # 7.2 dictEntryNoValue: key pointer, next
LP_HEADER = 7  # 4-byte total length, 2-byte count, 1-byte terminator
LP_SCORE = 10  # a listpack int64 entry: 1-byte encoding, 8 bytes, 1-byte back length
ZSET_STRUCT = 16  # struct zset: dict*, zskiplist*
ZSKIPLIST = 32  # struct zskiplist: header, tail, length, level
ZSKIPLIST_MAXLEVEL = 32
ZSKIPLIST_P = 0.25
QUICKLIST_STRUCT = 40  # struct quicklist
QUICKLIST_NODE = 40  # struct quicklistNode
QUICKLIST_OVERHEAD = 8  # SIZE_ESTIMATE_OVERHEAD (src/quicklist.c)
INTSET_HEADER = 8  # encoding and length, 4 bytes each
LAZYFREE_THRESHOLD = 64  # src/lazyfree.c

# list-max-listpack-size −1 .. −5: bytes per quicklist node (src/quicklist.c).
LIST_NODE_BYTES = {-1: 4096, -2: 8192, -3: 16384, -4: 32768, -5: 65536}
SIZE_SAFETY_LIMIT = 8192  # a node with a positive fill still stops at 8 KB


@dataclass(frozen=True)
class Limits:
    """The conversion thresholds of ``redis.conf`` (``*-max-listpack-*``,
    ``set-max-intset-entries``, ``list-max-listpack-size``) and the version.
    Redis's defaults are the ``Server`` fields' (``config/schema/server.py``):
    ``Limits.of(Scenario())``."""

    version: str
    hash_entries: int
    hash_value: int
    set_intset_entries: int
    set_entries: int
    set_value: int
    zset_entries: int
    zset_value: int
    list_size: int

    @classmethod
    def of(cls, scenario) -> Limits:
        """The limits a scenario's server runs with."""
        s = scenario.server
        return cls(scenario.redis_version, s.hash_max_listpack_entries,
                   s.hash_max_listpack_value, s.set_max_intset_entries,
                   s.set_max_listpack_entries, s.set_max_listpack_value,
                   s.zset_max_listpack_entries, s.zset_max_listpack_value,
                   s.list_max_listpack_size)

    @property
    def v72(self) -> bool:
        """7.2 or later: set listpacks, list listpacks, ``setDictType``'s entries."""
        return self.version not in ("6.2", "7.0")

    def row(self) -> np.ndarray:
        """The thresholds as ``shape_of`` reads them (and the kernel's
        ``tb_coll_lim`` holds them): hash entries and value, set intset entries,
        set listpack entries and value, zset entries and value, a list node's
        byte and element limits."""
        limit, count = _list_limit(self.list_size)
        return np.array([self.hash_entries, self.hash_value, self.set_intset_entries,
                         self.set_entries, self.set_value, self.zset_entries,
                         self.zset_value, limit, count], np.int64)


@dataclass(frozen=True)
class Footprint:
    """What one collection value holds.

    Attributes:
        encoding: LISTPACK, HASHTABLE, INTSET, SKIPLIST or QUICKLIST.
        bytes: allocated bytes of the value (robj included), at size classes.
        allocs: allocations a synchronous free releases (robj included).
        effort: ``lazyfreeGetFreeEffort`` of the value.
        nodes: quicklist nodes (0 for other encodings).
    """

    encoding: int
    bytes: int
    allocs: int
    effort: int
    nodes: int = 0


@leaf
def lp_entry(length):
    """Bytes of a listpack string entry of ``length`` bytes: encoding, data and
    back length (``lpEncodeGetType``, ``lpEncodeBacklen``)."""
    enc = 1 + length if length <= 63 else (2 + length if length <= 4095 else 5 + length)
    if enc <= 127:
        return enc + 1
    if enc <= 16382:
        return enc + 2
    if enc <= 2097150:
        return enc + 3
    if enc <= 268435454:
        return enc + 4
    return enc + 5


@leaf
def next_power(n):
    """``_dictNextExp`` as a size: the least power of two ≥ n, at least 4. Also
    the buckets of a dict after ``n`` inserts (``_dictExpandIfNeeded`` grows a
    full table to the next power ≥ used + 1)."""
    size = DICT_HT_INITIAL_SIZE
    while size < n:
        size *= 2
    return size


@leaf
def _dict_bytes(n, q16):
    return size_class(DICT, q16) + size_class(POINTER * next_power(n), q16)


def skiplist_node_bytes(q16: bool) -> float:
    """Expected allocated bytes of a skiplist node (``zslCreateNode``:
    24 + 16·level bytes, level drawn by ``zslRandomLevel``)."""
    total, p_level = 0.0, 1.0 - ZSKIPLIST_P
    for level in range(1, ZSKIPLIST_MAXLEVEL + 1):
        p = p_level * ZSKIPLIST_P ** (level - 1) if level < ZSKIPLIST_MAXLEVEL else \
            ZSKIPLIST_P ** (ZSKIPLIST_MAXLEVEL - 1)
        total += p * size_class(24 + 16 * level, q16)
    return total


@leaf
def list_node_elements(member, limit):
    """Elements a quicklist node takes before a new node starts: inserts go on
    while ``node bytes + element + 8 ≤ limit`` (``_quicklistNodeAllowInsert``;
    ``limit`` is the node's byte limit), so the first k for which
    ``7 + k·entry + member + 8 > limit``."""
    room = limit - LP_HEADER - member - QUICKLIST_OVERHEAD
    if room < 0:
        return 1
    return room // lp_entry(member) + 1


def _list_limit(list_size: int) -> tuple[int, int]:
    """(bytes, count) limits of one quicklist node for ``list-max-listpack-size``."""
    if list_size < 0:
        return LIST_NODE_BYTES[max(list_size, -5)], 1 << 62
    return SIZE_SAFETY_LIMIT, max(list_size, 1)  # fill 0 allows no insert: one per node


@leaf
def _round(x):
    return int(math.floor(x + 0.5))


@leaf
def shape_of(kind, n, member, value, integers, big, v72, lim, q16, score_entry, skl):
    """``footprint``'s arithmetic, for Python and the kernel alike: (encoding,
    bytes, allocations, free effort, quicklist nodes) of a collection of ``n``
    elements. ``lim``: the thresholds as ``Limits.row`` lays them out; ``big``:
    it already has its large encoding, which Redis never converts back (a
    hash, set or sorted set that shrinks stays a hashtable or skiplist);
    ``skl``: a skiplist node's expected bytes (``skiplist_node_bytes``)."""
    c = size_class
    robj = c(ROBJ, q16)
    entry = c(DICT_ENTRY, q16)
    if kind == HASH:
        if not big and n <= lim[0] and member <= lim[1] and value <= lim[1]:
            lp = LP_HEADER + n * (lp_entry(member) + lp_entry(value))
            return LISTPACK, robj + c(lp, q16), 2, 1, 0
        per = entry + sds_bytes(member, True, q16) + sds_bytes(value, True, q16)
        return HASHTABLE, robj + _dict_bytes(n, q16) + n * per, 3 * n + 3, n, 0
    if kind == SET:
        if not big and integers and n <= lim[2]:
            width = 2 if n <= 32767 else 4
            return INTSET, robj + c(INTSET_HEADER + n * width, q16), 2, 1, 0
        if not big and v72 and not integers and n <= lim[3] and member <= lim[4]:
            return LISTPACK, robj + c(LP_HEADER + n * lp_entry(member), q16), 2, 1, 0
        sds = sds_bytes(member, True, q16)
        if v72:
            b = next_power(n)
            chained = _round(n - b * (1.0 - math.exp(-n / b)))
            total = robj + _dict_bytes(n, q16) + n * sds + chained * c(SET_ENTRY_NO_VALUE, q16)
            return HASHTABLE, total, n + chained + 3, n, 0
        return HASHTABLE, robj + _dict_bytes(n, q16) + n * (entry + sds), 2 * n + 3, n, 0
    if kind == ZSET:
        if not big and n <= lim[5] and member <= lim[6]:
            lp = LP_HEADER + _round(n * (lp_entry(member) + score_entry))
            return LISTPACK, robj + c(lp, q16), 2, 1, 0
        header = c(24 + 16 * ZSKIPLIST_MAXLEVEL, q16)
        fixed = robj + c(ZSET_STRUCT, q16) + _dict_bytes(n, q16) + c(ZSKIPLIST, q16) + header
        per = skl + sds_bytes(member, True, q16) + entry
        return SKIPLIST, _round(fixed + n * per), 3 * n + 6, n, 0
    # LIST
    limit, count = lim[7], lim[8]
    e = lp_entry(member)
    if not big and v72 and LP_HEADER + n * e <= limit and n <= count:
        return LISTPACK, robj + c(LP_HEADER + n * e, q16), 2, 1, 0
    per_node = min(list_node_elements(member, limit), count)
    full = n // per_node
    rest = n - full * per_node
    node = c(QUICKLIST_NODE, q16)
    total = robj + c(QUICKLIST_STRUCT, q16) + full * (node + c(LP_HEADER + per_node * e, q16))
    nodes = full
    if rest:
        total += node + c(LP_HEADER + rest * e, q16)
        nodes += 1
    return QUICKLIST, total, 2 * nodes + 2, nodes, nodes


def footprint(kind: int, n: int, member: int, value: int = 0, integers: bool = False, *,
              limits: Limits, q16: bool = False,
              score_entry: float = LP_SCORE) -> Footprint:
    """The encoding, bytes, allocations and free effort of a collection of ``n``
    elements built one element at a time (``kind``: HASH, SET, ZSET or LIST)
    under ``limits`` (the server's: ``Limits.of(scenario)``).
    ``score_entry``: a sorted set's mean listpack bytes per score (10 for
    integer-valued scores past 2^31; ``"1.5"`` takes 5)."""
    if kind not in (HASH, SET, ZSET, LIST):
        raise ValueError(f"unknown collection type {kind}")
    enc, nbytes, allocs, effort, nodes = shape_of(
        kind, n, member, value, integers, False, limits.v72, limits.row(), q16,
        float(score_entry), skiplist_node_bytes(q16))
    return Footprint(int(enc), int(nbytes), int(allocs), int(effort), int(nodes))


@leaf
def rdb_of(kind, enc, nbytes, nodes, n, member, value):
    """``rdb_bytes``' arithmetic, for Python and the kernel alike."""
    if enc == LISTPACK or enc == INTSET:
        return nbytes - ROBJ
    if enc == QUICKLIST:
        return nbytes - ROBJ - QUICKLIST_STRUCT - nodes * QUICKLIST_NODE
    per = (1 if member < 64 else 2) + member
    if kind == HASH:
        per += (1 if value < 64 else 2) + value
    elif kind == ZSET:
        per += 8
    return n * per + 5


def rdb_bytes(kind: int, fp: Footprint, n: int, member: int, value: int = 0) -> int:
    """Bytes the value takes in an RDB file: a listpack or intset is written as
    its blob (``rdbSaveObject``), other encodings element by element with a
    length prefix each (1 byte below 64, as ``rdbSaveLen``), a skiplist's
    score as 8 binary bytes."""
    return int(rdb_of(kind, fp.encoding, fp.bytes, fp.nodes, n, member, value))
