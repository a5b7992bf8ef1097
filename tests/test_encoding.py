"""Collections' encodings and memory per element (``redsim/model/encoding.py``),
checked against hand arithmetic from the Redis 7.0/7.2 source (t_hash.c,
t_set.c, t_zset.c, t_list.c/quicklist.c, listpack.c, dict.c, intset.c) and
jemalloc's size classes. Every expected figure is worked out in its comment;
none is copied from the code's output."""

from __future__ import annotations

from dataclasses import replace

import pytest

from redsim.config.schema import Scenario
from redsim.model.encoding import (
    HASH,
    HASHTABLE,
    INTSET,
    LIST,
    LISTPACK,
    QUICKLIST,
    SET,
    SKIPLIST,
    ZSET,
    Limits,
    footprint,
    list_node_elements,
    lp_entry,
)

V70 = Limits.of(Scenario(redis_version="7.0"))
V72 = Limits.of(Scenario(redis_version="7.2"))


def test_listpack_entry_sizes_follow_lpEncodeGetType():
    # 10-byte string: 1-byte header (6-bit length) + 10 + 1-byte backlen = 12.
    assert lp_entry(10) == 12
    # 63 is the last 6-bit length: 1 + 63 + 1 = 65; 64 needs the 12-bit header
    # (2 bytes): 2 + 64 = 66, whose backlen is still 1 byte (66 ≤ 127) → 67.
    assert lp_entry(63) == 65
    assert lp_entry(64) == 67
    # 200 bytes: 2 + 200 = 202 > 127, so a 2-byte backlen → 204.
    assert lp_entry(200) == 204


def test_hash_of_100_small_fields_is_one_listpack():
    # 100 fields of 10 B with 20-B values: entries 12 + 22 = 34 B per pair;
    # the listpack is 7 + 100 × 34 = 3,407 B → jemalloc class 3,584 (3,072 <
    # 3,407 ≤ 3,584); plus the 16-B robj: 3,600 B, 36 B per field.
    fp = footprint(HASH, 100, 10, 20, limits=V70)
    assert (fp.encoding, fp.bytes) == (LISTPACK, 3600)
    assert fp.effort == 1  # a listpack is one allocation: freed on the main thread


def test_hash_of_1000_fields_is_a_hashtable_at_72_bytes_per_field():
    # Per field: dictEntry 24 + field sds (sdshdr5: 1 + 10 + 1 = 12 → 16) +
    # value sds (1 + 20 + 1 = 22 → 24) = 64 B. Buckets: next power of two ≥
    # 1,000 = 1,024 × 8 B = 8,192; dict struct 56; robj 16.
    # 1,000 × 64 + 8,192 + 56 + 16 = 72,264 B.
    fp = footprint(HASH, 1000, 10, 20, limits=V70)
    assert (fp.encoding, fp.bytes) == (HASHTABLE, 72_264)
    # Freed by walking 3 allocations per field, plus dict, table and robj.
    assert (fp.allocs, fp.effort) == (3003, 1000)


def test_hash_on_a_16_byte_quantum_build():
    # Distribution jemalloc (16-B quantum): entry 24 → 32, field sds 12 → 16,
    # value sds 22 → 32: 80 B per field; dict 56 → 64.
    # 1,000 × 80 + 8,192 + 64 + 16 = 88,272 B.
    assert footprint(HASH, 1000, 10, 20, limits=V70, q16=True).bytes == 88_272


@pytest.mark.parametrize("version", ["7.0", "7.2"])
def test_hash_converts_at_the_513th_field(version):
    lim = Limits.of(Scenario(redis_version=version))
    # 512 fields: listpack 7 + 512 × 34 = 17,415 B → class 20,480 (16,384 <
    # 17,415 ≤ 20,480) + robj 16 = 20,496 B.
    at = footprint(HASH, 512, 10, 20, limits=lim)
    assert (at.encoding, at.bytes) == (LISTPACK, 20_496)
    # 513 fields: hashtable, 513 × 64 + 1,024 buckets × 8 + 56 + 16 = 41,096 B.
    over = footprint(HASH, 513, 10, 20, limits=lim)
    assert (over.encoding, over.bytes) == (HASHTABLE, 41_096)
    # The per-element cost changes with it: 1 free for the listpack, 3 per field after.
    assert (at.allocs, over.allocs) == (2, 3 * 513 + 3)


def test_hash_converts_on_a_value_longer_than_hash_max_listpack_value():
    # 64-B values stay in the listpack (entry 2 + 64 + 1 = 67); 65 B converts.
    assert footprint(HASH, 10, 10, 64, limits=V72).encoding == LISTPACK
    assert footprint(HASH, 10, 10, 65, limits=V72).encoding == HASHTABLE
    # The threshold is the scenario's: with hash-max-listpack-entries 1000,
    # 1,000 fields stay a listpack of 7 + 1,000 × 34 = 34,007 B → 40,960 + 16.
    fp = footprint(HASH, 1000, 10, 20, limits=replace(V72, hash_entries=1000))
    assert (fp.encoding, fp.bytes) == (LISTPACK, 40_976)


def test_set_of_integers_is_an_intset_up_to_set_max_intset_entries():
    # 512 integers < 32,768: 2-byte entries; 8 + 1,024 = 1,032 B → class 1,280
    # (1,024 < 1,032 ≤ 1,280) + robj 16 = 1,296 B.
    fp = footprint(SET, 512, 3, integers=True, limits=V70)
    assert (fp.encoding, fp.bytes) == (INTSET, 1296)
    # The 513th converts to a hashtable (7.0: entry 24 + sds 1 + 3 + 1 = 5 → 8
    # per member); 1,024 buckets: 513 × 32 + 8,192 + 56 + 16 = 24,680 B.
    fp = footprint(SET, 513, 3, integers=True, limits=V70)
    assert (fp.encoding, fp.bytes) == (HASHTABLE, 24_680)


def test_set_of_strings_7_0_hashtable_7_2_listpack():
    # 100 members of 10 B. 7.0 has no listpack sets: hashtable, per member entry
    # 24 + sds 16 = 40, 128 buckets: 100 × 40 + 1,024 + 56 + 16 = 5,096 B.
    fp = footprint(SET, 100, 10, limits=V70)
    assert (fp.encoding, fp.bytes) == (HASHTABLE, 5096)
    # 7.2: a listpack of 7 + 100 × 12 = 1,207 B → class 1,280, + 16 = 1,296 B.
    fp = footprint(SET, 100, 10, limits=V72)
    assert (fp.encoding, fp.bytes) == (LISTPACK, 1296)
    # 7.2's 129th member converts (set-max-listpack-entries 128).
    assert footprint(SET, 128, 10, limits=V72).encoding == LISTPACK
    assert footprint(SET, 129, 10, limits=V72).encoding == HASHTABLE


def test_set_7_2_hashtable_keeps_members_in_empty_buckets():
    # 1,000 members, 1,024 buckets: the expected occupied buckets are
    # 1,024 × (1 − e^(−0.9766)) = 1,024 × 0.6234 = 638.3, so 361.7 → 362
    # members need a 16-B dictEntryNoValue. Bytes: 1,000 × 16 (sds) + 362 × 16
    # + 8,192 + 56 + 16 = 30,056 B, against 7.0's 1,000 × 40 + 8,264 = 48,264 B.
    assert footprint(SET, 1000, 10, limits=V72).bytes == 30_056
    assert footprint(SET, 1000, 10, limits=V70).bytes == 48_264


def test_zset_converts_at_the_129th_member():
    # 128 members of 10 B with integer scores (10-B listpack int64 entries):
    # 7 + 128 × (12 + 10) = 2,823 B → class 3,072 + robj 16 = 3,088 B.
    fp = footprint(ZSET, 128, 10, limits=V72)
    assert (fp.encoding, fp.bytes) == (LISTPACK, 3088)
    fp = footprint(ZSET, 129, 10, limits=V72)
    assert fp.encoding == SKIPLIST
    # Fixed part: robj 16 + zset 16 + dict 56 + 256 buckets × 8 = 2,048 +
    # zskiplist 32 + header node (24 + 32 × 16 = 536 → 640) = 2,808. Per member:
    # node E[class(24 + 16 L)], L ≥ 1 with P = 0.75 × 0.25^(L−1): 40 × 0.75 +
    # 56 × 0.1875 + 80 × 0.046875 + 96 × 0.01171875 + 112 × 0.0029296875 + …
    # ≈ 45.8; sds 16; dictEntry 24: ≈ 85.8 B. 2,808 + 129 × 85.8 ≈ 13,877 B.
    assert fp.bytes == pytest.approx(13_877, abs=20)
    assert (fp.allocs, fp.effort) == (3 * 129 + 6, 129)


def test_list_of_a_million_foobar_is_979_quicklist_nodes():
    # "foobar" is a 6-byte entry + 1 + 1 = 8 B. A node takes another element
    # while 7 + 8k + 6 + 8 ≤ 8,192, i.e. up to k = 1,021 held: 1,022 per node.
    assert list_node_elements(6, 8192) == 1022
    fp = footprint(LIST, 1_000_000, 6, limits=V70)
    # ⌈10⁶ / 1,022⌉ = 979 nodes: 978 full (listpack 7 + 8,176 = 8,183 → 8,192,
    # node struct 40) and one of 484 elements (7 + 3,872 = 3,879 → 4,096):
    # 16 + 40 + 978 × 8,232 + 40 + 4,096 = 8,055,088 B (8.06 B per element).
    assert (fp.encoding, fp.nodes, fp.bytes) == (QUICKLIST, 979, 8_055_088)
    # Free effort is the node count (> 64: UNLINK hands it to the lazyfree
    # thread); a free walks 2 allocations per node + quicklist + robj.
    assert (fp.effort, fp.allocs) == (979, 1960)


def test_list_7_2_starts_as_a_listpack():
    # 100 × "foobar": 7 + 800 = 807 B → class 896 (768 < 807 ≤ 896).
    # 7.2: one listpack, 896 + 16 = 912 B; 7.0: a quicklist of one node,
    # 16 + 40 + 40 + 896 = 992 B.
    assert footprint(LIST, 100, 6, limits=V72).bytes == 912
    assert footprint(LIST, 100, 6, limits=V72).encoding == LISTPACK
    assert footprint(LIST, 100, 6, limits=V70).bytes == 992
    # 7.2 converts once the listpack would pass 8 KB: 1,023 elements make
    # 7 + 8,184 = 8,191 B (fits), 1,024 make 8,199 (a quicklist).
    assert footprint(LIST, 1023, 6, limits=V72).encoding == LISTPACK
    assert footprint(LIST, 1024, 6, limits=V72).encoding == QUICKLIST
