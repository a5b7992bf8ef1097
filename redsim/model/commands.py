"""The command table: what each Redis command costs the main thread and how big
its request and reply are on the wire.

Follows Redis's command table for each command's flags (``write``, ``denyoom``):
``redisCommandTable`` in ``src/server.c`` (6.2), generated into
``src/commands.c`` (7.0) and ``src/commands.def`` (7.2). The costs are
measurements (below), not source.

CPU costs are in microseconds (µs) of main-thread time for the command procedure
(`c->cmd->proc`, what `INFO commandstats` reports as `usec_per_call`), split into
a fixed part, a part per byte of value copied, and a part per element touched
(keys of an MGET, members returned by SMEMBERS, entries visited by SCAN).
Socket read/parse and reply write costs are not here: they are per syscall and
live in the engine's CPU model (`engine.cpu.read`, `engine.cpu.write`).

Default sources:
- GET, SET, SETEX, DEL, UNLINK, EXISTS, INCR, DECR, MGET, MSET, EXPIRE, SADD,
  SCARD, LPUSH, RPUSH, LPOP, RPOP, HSET, HGET, ZADD and PING: the reference
  host's calibration (``results/calibration/reference-host/``: Debian's Redis
  7.0.15 on a 2-vCPU Intel Xeon VM, medians of eight calibrations on two days,
  2026-11-28 and 29, run-to-run spread 14-17 %), the main thread's CPU per
  command at redis-benchmark -c 50 -P 16 less the shared read/write; the
  commands with keys or members measured with 1 and 10 of them for their
  per-element part. It is more than ``INFO commandstats`` shows (the
  procedure alone, e.g. SET ~0.4 µs of 0.61 on the EPYC VM): lookup,
  ``processCommand`` and the reply count here, since the model has no other
  per-command cost.
- SMEMBERS, HGETALL, LRANGE, ZRANGE, KEYS and the scripts: ``INFO commandstats``
  on the first reference host, a 2-vCPU AMD EPYC VM
  (``results/calibration/amd-epyc-2vcpu/collections``), per element returned
  (the constants below say how). Not re-measured on the Intel VM: that VM
  ran SET 16 % cheaper than the EPYC VM at pipeline 1 and 22 %
  dearer at pipeline 16, so these may be off by about that much.
- SCAN: the EPYC VM's ``INFO commandstats`` following the cursor over a
  million keys (the constants below say how).
- INFO: the production ``INFO commandstats`` in valkey-io/valkey#2322 and
  the redis-benchmark fit of reference §6.2 (per command, older hardware).
- Not measured, taken from their closest measured sibling: SREM and HDEL as
  SADD (HDEL at HSET's fixed part), ZREM as ZADD, SISMEMBER and ZSCORE as HGET,
  HLEN, ZCARD and LLEN as SCARD, ZRANGEBYSCORE as ZRANGE (its skiplist seek,
  O(log n), is left out).
- Per-byte 0.0002 µs/B: a memcpy at ~5 GB/s, the order of one core's copy speed.
Values vary with object size and host; calibrate from `INFO commandstats`
(reference §6.3) and override per command in the scenario's `engine.cpu.commands`.
"""

from __future__ import annotations

from dataclasses import dataclass

# The wire's constants (src/server.h), here so that readers of traces and
# scenarios need not load the kernel; ``protocol.py`` computes with them.
INFO_REPLY_BYTES = 4000  # a default `INFO` reply is ~4 KB of text
PROTO_IOBUF_LEN = 16384  # bytes per read() (src/server.h)
PROTO_MBULK_BIG_ARG = 32768  # bulk arguments this long get their own reads (src/server.h)

# Request/reply shapes: how argc and reply size follow from a command's parameters.
# k = keys (or members/values) per command, n = count (elements returned/visited),
# K = key size in bytes, V = value size in bytes.
SHAPE_KEY = 0  # CMD key -> bulk reply of V bytes (GET, LPOP, HGET)
SHAPE_KEY_VALUE = 1  # CMD key value [EX ttl] -> +OK (SET, SETEX)
SHAPE_KEYS_INT = 2  # CMD key*k -> :int (DEL, UNLINK, EXISTS)
SHAPE_KEY_INT = 3  # CMD key -> :int (INCR, SCARD, DECR)
SHAPE_MULTI_GET = 4  # CMD key*k -> array of k bulks of V (MGET)
SHAPE_MULTI_SET = 5  # CMD (key value)*k -> +OK (MSET)
SHAPE_KEY_MEMBERS_INT = 6  # CMD key member*k -> :int (SADD, LPUSH, RPUSH)
SHAPE_KEY_ARRAY = 7  # CMD key -> array of n bulks of V (SMEMBERS, HGETALL, ZRANGE)
SHAPE_SCAN = 8  # SCAN cursor COUNT n -> [cursor, array of n keys]
SHAPE_SIMPLE = 9  # CMD -> +PONG / small status (PING)
SHAPE_KEY_FIELD_VALUE = 10  # CMD key field value -> :int (HSET, ZADD)
SHAPE_KEY_TTL = 11  # CMD key ttl -> :int (EXPIRE)
SHAPE_INFO = 12  # INFO -> bulk of ~4 KB
SHAPE_KEYS_PATTERN = 13  # KEYS pattern -> array of the n keys it matches
SHAPE_SCRIPT = 14  # CMD script numkeys key*k -> :int (EVAL, EVALSHA, FCALL)

# A script command's second argument: EVALSHA's SHA1 in hex; EVAL's script text
# and FCALL's function name are taken as long.
SCRIPT_ARG_BYTES = 40

# What a command does to the keyspace (model/call.py). A collection command
# (HSET, SADD, LRANGE …) acts on stored elements in a group whose keyspace has
# that type (model/collection.py); elsewhere it costs CPU and bytes on the wire
# but leaves the keyspace alone.
EFFECT_NONE = 0
EFFECT_READ = 1  # look the keys up; the reply carries the stored values (GET, MGET)
EFFECT_WRITE = 2  # store the value(s), with the mix's TTL or none (SET, SETEX, MSET)
EFFECT_DELETE = 3  # delete the keys (DEL, UNLINK)
EFFECT_EXISTS = 4  # look up without touching the LRU clock (EXISTS)
EFFECT_INCR = 5  # create or update an integer value (INCR, DECR)
EFFECT_EXPIRE = 6  # set a TTL on an existing key (EXPIRE)
EFFECT_KEYS = 7  # walk every key of the db (KEYS: src/db.c:keysCommand)
EFFECT_COLLECTION = 8  # act on a stored collection's elements (its `coll` op)

# What a collection command does to its collection (model/collection.py); k is
# the mix entry's keys (members), n its count.
COLL_ADD = 1  # add or update k members, creating the key (HSET, SADD, ZADD, LPUSH, RPUSH)
COLL_REMOVE = 2  # remove k members; the key goes with its last (HDEL, SREM, ZREM)
COLL_POP = 3  # remove and return k elements from an end (LPOP, RPOP)
COLL_GET = 4  # look one member up (HGET, SISMEMBER, ZSCORE)
COLL_ALL = 5  # return every element (HGETALL, SMEMBERS)
COLL_RANGE = 6  # return up to n elements (LRANGE, ZRANGE, ZRANGEBYSCORE)
COLL_CARD = 7  # return the element count (HLEN, SCARD, ZCARD, LLEN)


@dataclass(frozen=True)
class Command:
    """One row of the command table.

    Attributes:
        name: upper-case Redis command name.
        shape: one of the SHAPE_* constants.
        fixed_us: fixed main-thread CPU per call, µs.
        per_byte_us: CPU per value byte copied, µs/B.
        per_element_us: CPU per key/member/element touched, µs (KEYS: per
            key matched and replied).
        per_key_scanned_us: CPU per key of the db the command walks (KEYS), µs.
        write: modifies the dataset (propagated to AOF/replicas; later issues).
        denyoom: flagged CMD_DENYOOM in Redis (rejected with -OOM when nothing
            can be evicted; reference §2.8).
        effect: what it does to the keyspace (EFFECT_*).
        script: runs a script, for the mix entry's ``duration``
            (``model/scripts.py``).
        coll: what it does to a stored collection (COLL_*; 0: nothing).
        type: the collection type it acts on (``hash``, ``set``, ``zset``,
            ``list``), None for the others.
    """

    name: str
    shape: int
    fixed_us: float
    per_byte_us: float = 0.0002
    per_element_us: float = 0.0
    per_key_scanned_us: float = 0.0
    write: bool = False
    denyoom: bool = False
    effect: int = EFFECT_NONE
    script: bool = False
    coll: int = 0
    type: str | None = None


# KEYS (src/db.c:keysCommand): a safe iterator over the whole db, the pattern
# matched against every key (stringmatchlen), and per match an object made,
# its expiry checked and a bulk reply added. The 2-vCPU EPYC VM's Debian 7.0.15
# (results/calibration/amd-epyc-2vcpu/collections/reads-keys-eval.md, INFO
# commandstats, 5-7 calls each): `KEYS nomatch:*` over DEBUG POPULATE keys 112
# ns per key at 1M keys, 132 at 5M (caches missed more often); `KEYS *` less
# that, 261 ns per key matched. The fixed part is under the noise (~1 ms).
# redis.io: "scan a 1 million key database in 40 milliseconds" on a laptop.
KEYS_FIXED_US = 1.0
KEYS_PER_KEY_US = 0.12
KEYS_PER_MATCH_US = 0.26

# SCAN (src/db.c:scanGenericCommand): each call collects COUNT buckets' keys
# into a list (an object each), filters them (pattern, expiry) and replies. The
# EPYC VM's Debian 7.0.15 over DEBUG POPULATE 1000000 key 16, following
# the cursor from 0, 200 calls × 5 reps (results/calibration/amd-epyc-2vcpu/
# collections/reads-keys-eval.md §2): median 68.0 µs a call at COUNT 100 (100.5
# keys returned), 672.9 µs at COUNT 1000 (1000.4): 0.672 µs per key, intercept
# 0.46 µs, plus PING's 0.096 µs (lookup, processCommand, the reply). The
# table's older figures, 2.0 + 0.2 µs per key, were production ones
# (valkey-io/valkey#2322); the S2 scenarios keep them (their costs are pinned).
SCAN_FIXED_US, SCAN_PER_KEY_US = 0.56, 0.67

# Scripts (src/eval.c:evalGenericCommand, src/functions.c:fcallCommand): the
# fixed part is a trivial script's, the rest is the mix entry's `duration`
# (model/scripts.py). The EPYC VM's Debian 7.0.15, INFO commandstats
# usec_per_call at redis-benchmark -c 50 -P 16, medians of 5
# (results/calibration/amd-epyc-2vcpu/collections/scripts.md): EVAL "return 1"
# 0.525 µs, EVALSHA of it 0.497, FCALL of a Lua function returning 1 0.389,
# PING 0.034; the table adds PING's 0.096 µs between its commandstats and its
# row here (lookup, processCommand, the reply). One redis.call inside adds
# 0.54 µs (GET) or 0.88 µs (SET of 100 B): a script's `duration` includes them.
EVAL_FIXED_US = 0.62
EVALSHA_FIXED_US = 0.59
FCALL_FIXED_US = 0.49

# Reads of a collection's elements: the EPYC VM's Debian 7.0.15, INFO
# commandstats usec_per_call, 5 × 50 calls pipelined 10 at a time
# (results/calibration/amd-epyc-2vcpu/collections/reads-keys-eval.md §3,
# 10-byte members, 20-byte hash values): the slope over n = 30..300 and the
# per-element figure at n = 1000 agree within 10 % (HGETALL 76/79 ns per field,
# SMEMBERS 36/43, LRANGE 36/37, ZRANGE 26/29 ns per member); the fixed parts
# are that fit's intercept plus PING's 0.096 µs (lookup, processCommand, the
# reply). At 10,000 elements the per-element cost grows (HGETALL ~110-160 ns,
# SMEMBERS ~58) as the collection and its reply leave the caches: not modelled.
HGETALL_FIXED_US, HGETALL_PER_US = 0.14, 0.078
SMEMBERS_FIXED_US, SMEMBERS_PER_US = 0.48, 0.040
LRANGE_FIXED_US, LRANGE_PER_US = 0.17, 0.037
ZRANGE_FIXED_US, ZRANGE_PER_US = 1.0, 0.029
# A listpack is searched entry by entry: HGET of the last of 100 fields minus
# the first, 0.68 µs over 99 fields, same source §3e; a new field's HSET scans
# them all (0.92 µs into 100 fields against 0.27 into a 1,000-field hashtable).
LISTPACK_ENTRY_US = 0.0069


def _coll(op: int, kind: str) -> dict:
    return {"effect": EFFECT_COLLECTION, "coll": op, "type": kind}


_TABLE = [
    Command("GET", SHAPE_KEY, 0.67, effect=EFFECT_READ),
    Command("SET", SHAPE_KEY_VALUE, 0.79, write=True, denyoom=True, effect=EFFECT_WRITE),
    Command("SETEX", SHAPE_KEY_VALUE, 1.18, write=True, denyoom=True, effect=EFFECT_WRITE),
    Command("DEL", SHAPE_KEYS_INT, 0.51, per_element_us=0.104, write=True, effect=EFFECT_DELETE),
    Command("UNLINK", SHAPE_KEYS_INT, 0.52, per_element_us=0.108, write=True, effect=EFFECT_DELETE),
    Command("EXISTS", SHAPE_KEYS_INT, 0.48, per_element_us=0.16, effect=EFFECT_EXISTS),
    Command("INCR", SHAPE_KEY_INT, 0.68, write=True, denyoom=True, effect=EFFECT_INCR),
    Command("DECR", SHAPE_KEY_INT, 0.69, write=True, denyoom=True, effect=EFFECT_INCR),
    Command("MGET", SHAPE_MULTI_GET, 0.37, per_element_us=0.32, effect=EFFECT_READ),
    Command("MSET", SHAPE_MULTI_SET, 0.36, per_element_us=0.43, write=True, denyoom=True,
            effect=EFFECT_WRITE),
    Command("SADD", SHAPE_KEY_MEMBERS_INT, 0.51, per_element_us=0.15, write=True, denyoom=True,
            **_coll(COLL_ADD, "set")),
    Command("SREM", SHAPE_KEY_MEMBERS_INT, 0.51, per_element_us=0.15, write=True,
            **_coll(COLL_REMOVE, "set")),
    Command("SISMEMBER", SHAPE_KEY_MEMBERS_INT, 0.67, **_coll(COLL_GET, "set")),
    Command("SMEMBERS", SHAPE_KEY_ARRAY, SMEMBERS_FIXED_US, per_element_us=SMEMBERS_PER_US,
            **_coll(COLL_ALL, "set")),
    Command("SCARD", SHAPE_KEY_INT, 0.31, **_coll(COLL_CARD, "set")),
    Command("LPUSH", SHAPE_KEY_MEMBERS_INT, 0.35, per_element_us=0.092, write=True, denyoom=True,
            **_coll(COLL_ADD, "list")),
    Command("RPUSH", SHAPE_KEY_MEMBERS_INT, 0.35, per_element_us=0.063, write=True, denyoom=True,
            **_coll(COLL_ADD, "list")),
    Command("LPOP", SHAPE_KEY, 0.49, write=True, **_coll(COLL_POP, "list")),
    Command("RPOP", SHAPE_KEY, 0.47, write=True, **_coll(COLL_POP, "list")),
    Command("LRANGE", SHAPE_KEY_ARRAY, LRANGE_FIXED_US, per_element_us=LRANGE_PER_US,
            **_coll(COLL_RANGE, "list")),
    Command("LLEN", SHAPE_KEY_INT, 0.31, **_coll(COLL_CARD, "list")),
    Command("HSET", SHAPE_KEY_FIELD_VALUE, 0.76, write=True, denyoom=True,
            **_coll(COLL_ADD, "hash")),
    Command("HDEL", SHAPE_KEY_MEMBERS_INT, 0.76, per_element_us=0.15, write=True,
            **_coll(COLL_REMOVE, "hash")),
    Command("HGET", SHAPE_KEY, 0.67, **_coll(COLL_GET, "hash")),
    Command("HGETALL", SHAPE_KEY_ARRAY, HGETALL_FIXED_US, per_element_us=HGETALL_PER_US,
            **_coll(COLL_ALL, "hash")),
    Command("HLEN", SHAPE_KEY_INT, 0.31, **_coll(COLL_CARD, "hash")),
    Command("ZADD", SHAPE_KEY_FIELD_VALUE, 2.17, write=True, denyoom=True,
            **_coll(COLL_ADD, "zset")),
    Command("ZREM", SHAPE_KEY_MEMBERS_INT, 2.17, per_element_us=0.15, write=True,
            **_coll(COLL_REMOVE, "zset")),
    Command("ZSCORE", SHAPE_KEY, 0.67, **_coll(COLL_GET, "zset")),
    Command("ZRANGE", SHAPE_KEY_ARRAY, ZRANGE_FIXED_US, per_element_us=ZRANGE_PER_US,
            **_coll(COLL_RANGE, "zset")),
    Command("ZRANGEBYSCORE", SHAPE_KEY_ARRAY, ZRANGE_FIXED_US, per_element_us=ZRANGE_PER_US,
            **_coll(COLL_RANGE, "zset")),
    Command("ZCARD", SHAPE_KEY_INT, 0.31, **_coll(COLL_CARD, "zset")),
    Command("EXPIRE", SHAPE_KEY_TTL, 1.07, write=True, effect=EFFECT_EXPIRE),
    Command("SCAN", SHAPE_SCAN, SCAN_FIXED_US, per_element_us=SCAN_PER_KEY_US),
    Command("PING", SHAPE_SIMPLE, 0.2),
    Command("INFO", SHAPE_INFO, 20.0),
    Command("KEYS", SHAPE_KEYS_PATTERN, KEYS_FIXED_US, per_element_us=KEYS_PER_MATCH_US,
            per_key_scanned_us=KEYS_PER_KEY_US, effect=EFFECT_KEYS),
    Command("EVAL", SHAPE_SCRIPT, EVAL_FIXED_US, script=True),
    Command("EVALSHA", SHAPE_SCRIPT, EVALSHA_FIXED_US, script=True),
    Command("FCALL", SHAPE_SCRIPT, FCALL_FIXED_US, script=True),
]

COMMANDS: dict[str, Command] = {c.name: c for c in _TABLE}
"""All commands redsim knows, by upper-case name."""

COMMAND_IDS: dict[str, int] = {c.name: i for i, c in enumerate(_TABLE)}
"""Stable integer id of each command, as the kernel sees it."""

# Default element count (n) for shapes whose reply size depends on it (KEYS: the
# keys its pattern matches).
DEFAULT_COUNT = {SHAPE_KEY_ARRAY: 10, SHAPE_SCAN: 10, SHAPE_KEYS_PATTERN: 0}
