"""Memory per collection against a real Redis: Debian's 7.0.15 (the system
jemalloc 5.3, 16-byte quantum) on the reference host, 2026-11-26
(``results/calibration/amd-epyc-2vcpu/collections/``: ``used_memory`` before
and after building each key on an otherwise idle server, 3 repetitions,
identical to the byte but for the skiplists' random levels).

Each measured delta holds the key's own overhead too: its dictEntry (24 B →
32 in a 16-byte-quantum build) and its sds "k" (1 + 1 + 1 = 3 → 8 B), 40 B,
which ``footprint`` leaves to ``objects.py``. Expected = delta − 40.
"""

from __future__ import annotations

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
)

KEY = 40  # the key's dictEntry (32) and sds (8), 16-byte quantum
V70 = Limits.of(Scenario(redis_version="7.0"))

# (kind, n, member, value, integers, encoding, measured used_memory delta)
MEASURED = [
    (HASH, 100, 10, 20, False, LISTPACK, 3_640),
    (HASH, 512, 10, 20, False, LISTPACK, 20_536),
    (HASH, 513, 10, 20, False, HASHTABLE, 49_352),
    (HASH, 1000, 10, 20, False, HASHTABLE, 88_312),
    (SET, 512, 3, 0, True, INTSET, 1_336),
    # Members 0..512 as sds of 1–3 digits: each 3–5 B → the 8-B class, like 3.
    (SET, 513, 3, 0, True, HASHTABLE, 28_832),
    (SET, 1000, 10, 0, False, HASHTABLE, 56_312),
    (LIST, 1_000_000, 6, 0, False, QUICKLIST, 8_062_968),
]


@pytest.mark.parametrize("kind, n, member, value, integers, encoding, delta", MEASURED)
def test_bytes_match_redis_7_0_to_the_byte(kind, n, member, value, integers, encoding, delta):
    fp = footprint(kind, n, member, value, integers, limits=V70, q16=True)
    assert fp.encoding == encoding
    assert fp.bytes == delta - KEY


def test_zset_listpack_with_the_measured_scores():
    # Scores i + 0.5 for i = 1..128 are the strings "1.5" .. "128.5": 9 of 3
    # characters, 90 of 4 and 29 of 5, listpack entries of 5, 6 and 7 B: 788 B
    # in all. 7 + 128 × 12 + 788 = 2,331 B → 2,560 + 16 = 2,576 = 2,616 − 40.
    fp = footprint(ZSET, 128, 10, limits=V70, q16=True, score_entry=788 / 128)
    assert (fp.encoding, fp.bytes) == (LISTPACK, 2_616 - KEY)


def test_zset_skiplist_of_1000_within_the_levels_spread():
    # Measured 110,520 / 110,056 / 110,280 B (levels are random): median
    # 110,280 − 40 = 110,240. The model's expected node size gives the mean;
    # three builds spread by ±0.3 %, so 1 % covers them.
    fp = footprint(ZSET, 1000, 10, limits=V70, q16=True)
    assert fp.encoding == SKIPLIST
    assert fp.bytes == pytest.approx(110_240, rel=0.01)
