"""Collection keyspaces (``keyspace.type``; ``model/collection.py``): what HSET,
HGET, HGETALL, HDEL, SADD, SISMEMBER, LPUSH, LPOP and the rest do to stored
hashes, sets, sorted sets and lists, their replies, their costs, the encoding
switch at a threshold, and lazy eviction of collections.

Every expected figure is worked out in its comment from the Redis source's
layouts (t_hash.c, listpack.c, dict.c), jemalloc's size classes and the RESP
encoding, or from a cost the test sets; none is copied from the code's output."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from redsim import load_scenario, simulate
from redsim.config.errors import ScenarioError
from redsim.model import state as S
from redsim.model.commands import COMMANDS
from tests.engine_helpers import tiny_world

US = 1e-6
LP_ENTRY = 0.0069 * US  # engine.cpu.listpack-entry's default, s
FREE_ALLOC = 0.09 * US  # engine.cpu.free-alloc's default, s


def _hashes(elements: int, keys: int = 4, **keyspace) -> dict:
    return {"name": "h", "redis-version": "7.2",
            "clients": [{"name": "app", "mix": {"HGET": 1}, "value-size": 20,
                         "keyspace": {"keys": keys, "type": "hash", "elements": elements,
                                      "member-size": 10, **keyspace}}]}


def _world(scenario: dict):
    w, _ = tiny_world(scenario)
    return w


def _run(w, command: str, key_id: int = 0, k: int = 1, n: int = 10):
    """Run one collection command on key id ``key_id`` of group 0 as ``call``
    would; returns (elements, bytes moved, dirty changes, extra CPU s, reply B)."""
    from redsim.model.collection import collection_command
    from redsim.model.commands import COMMAND_IDS

    key = int(w.gp_key_lo[0]) + key_id
    op = int(w.tb_cmd_coll[COMMAND_IDS[command]])
    out = collection_command(w, 0, 0, key, op, k, n)
    return (*out, int(w.cn_next_reply[0]))


def _cid(w, key_id: int = 0) -> int:
    return int(w.gp_key_lo[0]) + key_id - int(w.I[S.BIG_LO])


# ---- the table and the keyspace's rows ---------------------------------------


def test_collection_commands_name_their_type():
    for name, kind in (("HSET", "hash"), ("HGETALL", "hash"), ("SADD", "set"),
                       ("SISMEMBER", "set"), ("ZADD", "zset"), ("ZRANGEBYSCORE", "zset"),
                       ("LPUSH", "list"), ("LRANGE", "list")):
        assert COMMANDS[name].type == kind
    assert COMMANDS["GET"].type is None and COMMANDS["DEL"].type is None


@pytest.mark.usefixtures("python_kernel")
def test_a_collection_keyspace_has_rows_of_its_own_after_the_strings():
    # A string group of 50 keys takes rows 0..49; the hash group's 4 keys come
    # after them (no DEBUG POPULATE, no big keys): rows 50..53, collections 0..3.
    sc = _hashes(100)
    sc["clients"].append({"name": "web", "mix": {"GET": 1}, "keyspace": {"keys": 50}})
    w = _world(sc)
    assert int(w.gp_key_lo[0]) == 50 and int(w.gp_key_lo[1]) == 0
    assert int(w.I[S.BIG_LO]) == 50
    assert int(w.I[S.KS_ONCE_LO]) == 54
    # Every hash is preloaded with its 100 fields.
    assert list(w.cl_elems[:4]) == [100] * 4
    assert all(w.ks_cost[50:54] > 0)


# ---- replies and costs ----------------------------------------------------------


@pytest.mark.usefixtures("python_kernel")
def test_hgetall_replies_every_field_and_value():
    # 100 fields of 10 B with 20-B values: *200\r\n (6 B), then per field
    # $10\r\n<10>\r\n (17 B) and $20\r\n<20>\r\n (27 B): 6 + 100 × 44 = 4,406 B.
    # Elements 100 (the per-element part), 100 × 30 = 3,000 B moved.
    w = _world(_hashes(100))
    assert _run(w, "HGETALL") == (100, 3000, 0, 0.0, 4406)


@pytest.mark.usefixtures("python_kernel")
def test_hget_searches_half_a_listpack():
    # A 100-field listpack: an existing field is found after 50 entries on
    # average, at listpack-entry each; the reply is $20\r\n<20>\r\n = 27 B.
    w = _world(_hashes(100))
    elems, moved, dirty, extra, reply = _run(w, "HGET")
    assert (elems, moved, dirty, reply) == (1, 20, 0, 27)
    assert extra == pytest.approx(50 * LP_ENTRY)


@pytest.mark.usefixtures("python_kernel")
def test_hset_of_a_new_field_scans_the_whole_listpack_and_grows_it():
    # The key may grow to 200 fields; HSET of a new field into 100 scans all
    # 100 entries, replies :1\r\n (4 B), and the listpack grows by one pair:
    # 7 + 101 × 34 = 3,441 B → class 3,584 (3,072 < 3,441 ≤ 3,584) + robj 16.
    w = _world(_hashes(100))
    w.cl_target[_cid(w)] = 200
    before = int(w.I[S.MEM_DATASET])
    elems, moved, dirty, extra, reply = _run(w, "HSET")
    assert (elems, moved, dirty, reply) == (1, 30, 1, 4)
    assert extra == pytest.approx(100 * LP_ENTRY)
    assert int(w.cl_elems[_cid(w)]) == 101
    assert int(w.cl_bytes[_cid(w)]) == 3584 + 16
    # 100 fields were 7 + 3,400 = 3,407 B → 3,584 too: same class, no change.
    assert int(w.I[S.MEM_DATASET]) == before


@pytest.mark.usefixtures("python_kernel")
def test_hset_at_its_size_updates_a_field():
    # At its element count an add updates an existing field: half the
    # listpack searched, nothing added (:0), one change for server.dirty.
    w = _world(_hashes(100))
    elems, moved, dirty, extra, reply = _run(w, "HSET")
    assert (elems, dirty, reply) == (1, 1, 4)
    assert extra == pytest.approx(50 * LP_ENTRY)
    assert int(w.cl_elems[_cid(w)]) == 100


@pytest.mark.usefixtures("python_kernel")
@pytest.mark.parametrize("fields, encoding, value_bytes, converted", [
    # 511 → 512 fields (hash-max-listpack-entries 512): still a listpack,
    # 7 + 512 × 34 = 17,415 B → class 20,480 (16,384 < 17,415 ≤ 20,480) + 16.
    (511, "listpack", 20_480 + 16, False),
    # 512 → 513: hashTypeConvert. Per field a 24-B dictEntry, a 16-B field sds
    # (sdshdr5 1 + 10 + 1 = 12 → 16) and a 24-B value sds (1 + 20 + 1 = 22 →
    # 24): 64 B × 513 = 32,832; 1,024 buckets × 8 = 8,192; dict 56; robj 16:
    # 41,096 B, made in 3 × 513 + 3 = 1,542 allocations.
    (512, "hashtable", 41_096, True),
])
def test_the_encoding_switches_at_the_threshold(fields, encoding, value_bytes, converted):
    from redsim.model.encoding import ENCODINGS

    w = _world(_hashes(fields))
    cid = _cid(w)
    w.cl_target[cid] = fields + 1
    _, _, _, extra, _ = _run(w, "HSET")
    assert ENCODINGS[int(w.cl_enc[cid])] == encoding
    assert int(w.cl_bytes[cid]) == value_bytes
    scan = fields * LP_ENTRY  # the whole listpack searched for the new field
    assert extra == pytest.approx(scan + (1542 * FREE_ALLOC if converted else 0.0))
    # Once a hashtable, a search costs nothing past the fixed part.
    if converted:
        assert _run(w, "HGET")[3] == 0.0


@pytest.mark.usefixtures("python_kernel")
def test_a_hashtable_stays_one_when_it_shrinks():
    # Redis never converts a hash back to a listpack: HDEL from 513 to 512
    # leaves a hashtable of 512 fields (64 × 512 + 512 buckets × 8 + 56 + 16
    # = 36,936 B), where a listpack would be 20,496.
    w = _world(_hashes(513))
    elems, moved, dirty, extra, reply = _run(w, "HDEL")
    assert (elems, dirty, reply) == (1, 1, 4)
    cid = _cid(w)
    assert int(w.cl_elems[cid]) == 512
    assert int(w.cl_bytes[cid]) == 64 * 512 + 512 * 8 + 56 + 16


@pytest.mark.usefixtures("python_kernel")
def test_removing_the_last_member_deletes_the_key():
    w = _world(_hashes(2))
    keys = int(w.I[S.KS_KEYS])
    assert _run(w, "HDEL", k=5)[2] == 2  # two removed of five named
    assert int(w.I[S.KS_KEYS]) == keys - 1
    # The key is gone: HGET misses ($-1\r\n, 5 B), HGETALL replies *0\r\n (4 B).
    assert _run(w, "HGET")[4] == 5
    assert _run(w, "HGETALL")[4] == 4
    # HSET creates it again, with one field: :1\r\n.
    assert _run(w, "HSET")[4] == 4
    assert int(w.cl_elems[_cid(w)]) == 1
    assert int(w.I[S.KS_KEYS]) == keys


@pytest.mark.usefixtures("python_kernel")
def test_list_pushes_pops_and_ranges():
    # A list of 30 six-byte elements: LRANGE of 10 replies *10\r\n (5 B) and
    # ten $6\r\n<6>\r\n (12 B): 125 B; LPUSH of 3 makes 33 (:3\r\n); LPOP
    # replies one bulk (12 B); LLEN :32\r\n (5 B).
    sc = {"name": "l", "redis-version": "7.2",
          "clients": [{"mix": {"LPUSH": 1}, "keyspace": {
              "keys": 2, "type": "list", "elements": 30, "member-size": 6}}]}
    w = _world(sc)
    assert _run(w, "LRANGE", n=10)[4] == 125
    assert _run(w, "LPUSH", k=3)[4] == 4
    assert int(w.cl_elems[_cid(w)]) == 33
    assert _run(w, "LPOP")[4] == 12
    assert _run(w, "LLEN")[4] == 5
    # A list pushes past its preloaded count: no member is "already there".
    assert int(w.cl_elems[_cid(w)]) == 32


@pytest.mark.usefixtures("python_kernel")
def test_set_membership_and_an_intset():
    # 100 integer members: an intset, 8 + 100 × 2 = 208 B → class 224 (classes
    # step by 32 between 128 and 256: 192 < 208 ≤ 224), + the 16-B robj.
    # SISMEMBER of a present key :1\r\n, of a missing one :0\r\n (4 B each);
    # an intset's binary search costs nothing past the fixed part.
    sc = {"name": "s", "redis-version": "7.2",
          "clients": [{"mix": {"SISMEMBER": 1}, "keyspace": {
              "keys": 2, "type": "set", "elements": 100, "member-size": 4,
              "integers": True}}]}
    w = _world(sc)
    assert int(w.cl_bytes[_cid(w)]) == 224 + 16
    assert _run(w, "SISMEMBER")[3:] == (0.0, 4)


# ---- runs -------------------------------------------------------------------------


BASE = {
    "name": "coll", "duration": 2.0, "sample-interval": 0.1, "redis-version": "7.2",
    "server": {"save": ""}, "network": {"rtt": "100us"},
}


def _group(mix, elements, keys=50, **extra) -> dict:
    return {"name": "app", "processes": 1, "think": "1ms", "mix": mix, "value-size": 20,
            "keyspace": {"keys": keys, "type": "hash", "elements": elements,
                         "member-size": 10}, **extra}


def test_listpack_searches_cost_what_the_listpack_holds():
    # One connection, HGET only, listpack-entry 1 µs. 511 fields (a listpack):
    # each HGET passes 255.5 entries, +255.5 µs; 513 (a hashtable): nothing.
    # Everything else about the two runs is the same, so their mean latencies
    # differ by 255.5 µs.
    means = []
    for fields in (511, 513):
        sc = {**BASE, "engine": {"cpu": {"listpack-entry": "1us"}},
              "clients": [_group({"HGET": 1}, fields)]}
        means.append(simulate(load_scenario(sc), seed=1).summary["latency_mean_s"])
    assert means[0] - means[1] == pytest.approx(255.5e-6, abs=2e-6)


def test_a_run_keeps_every_collection_at_the_shape_of_its_count():
    # HSET, HDEL and DEL over 200 hashes of 1..1,000 fields: when the run
    # ends, each present hash's bytes are encoding.footprint's at its field
    # count (a hashtable that shrank under 512 stays one: footprint with no
    # listpack allowed), and the dataset's bytes are its keys' sum.
    from redsim.driver import make_simulation
    from redsim.model.encoding import HASH, HASHTABLE, Limits, footprint
    from redsim.model.objects import COLLECTION

    sc = {**BASE, "clients": [_group(
        {"HSET": 0.5, "HDEL": {"weight": 0.4, "keys": 3}, "DEL": 0.01, "HGETALL": 0.09},
        {"distribution": "uniform", "min": 1, "max": 1000}, keys=200,
        processes=4, think={"distribution": "exponential", "mean": "200us"})]}
    scenario = load_scenario(sc)
    sim = make_simulation(scenario, seed=3, progress=False)
    sim.run()
    w = sim.kernel.world
    limits = Limits.of(scenario)  # 7.2's: a hash converts past 512 fields
    rows = np.flatnonzero((w.ks_cost > 0) & (w.ks_vlen <= COLLECTION))
    assert len(rows) > 100
    encodings = set()
    for k in rows:
        cid = int(COLLECTION - w.ks_vlen[k])
        n = int(w.cl_elems[cid])
        big = int(w.cl_enc[cid]) == HASHTABLE
        fp = footprint(HASH, n, 10, 20, limits=replace(limits, hash_entries=0) if big else limits)
        assert (int(w.cl_bytes[cid]), int(w.cl_enc[cid])) == (fp.bytes, fp.encoding), n
        encodings.add(fp.encoding)
    assert len(encodings) == 2  # both encodings were reached
    assert int(w.I[S.MEM_DATASET]) == int(w.ks_cost.sum())


@pytest.mark.parametrize("lazy", [False, True])
def test_evicted_hashes_go_to_the_lazyfree_thread_only_with_lazy_eviction(lazy):
    # 300 hashes of 2,000 fields (hashtables of ~120 KB, free effort 2,000 >
    # 64) against a 16 MB maxmemory: the preload stops at the limit and HSETs
    # recreate evicted hashes, so eviction runs all along. With
    # lazyfree-lazy-eviction every evicted hash is the bio thread's to free;
    # without, none is.
    sc = {**BASE, "server": {"save": "", "maxmemory": "16mb",
                             "maxmemory-policy": "allkeys-random",
                             "lazyfree-lazy-eviction": lazy},
          "clients": [_group({"HSET": 1}, 2000, keys=300, processes=4,
                             think={"distribution": "exponential", "mean": "100us"})]}
    with pytest.warns(UserWarning, match="preload"):
        r = simulate(load_scenario(sc), seed=1)
    s = r.summary
    assert s["evicted_keys"] > 0
    if lazy:
        # Each evicted hash that had grown past 64 fields went to the thread.
        assert 0 < s["lazyfreed_objects"] <= s["evicted_keys"]
    else:
        assert s["lazyfreed_objects"] == 0


# ---- the scenario's errors -------------------------------------------------------


@pytest.mark.parametrize("keyspace, mix, field, expected", [
    ({"type": "hash"}, {"GET": 1}, "clients[0].mix[0].command", "WRONGTYPE"),
    ({"type": "set"}, {"HSET": 1}, "clients[0].mix[0].command", "WRONGTYPE"),
    ({"elements": 10}, {"GET": 1}, "clients[0].keyspace.elements", "string keyspace"),
    ({"type": "hash", "integers": True}, {"HGET": 1}, "clients[0].keyspace.integers",
     "only for a set"),
    ({"type": "hash", "write-once": 0.5}, {"HSET": 1}, "clients[0].keyspace.write-once",
     "write-once 0"),
])
def test_a_collection_keyspace_refuses_what_redis_would(keyspace, mix, field, expected):
    sc = {"name": "bad", "clients": [{"mix": mix, "keyspace": {"keys": 10, **keyspace}}]}
    with pytest.raises(ScenarioError) as err:
        load_scenario(sc)
    assert field in str(err.value) and expected in str(err.value)


def test_string_commands_of_a_collection_type_leave_a_string_keyspace_alone():
    # Outside a collection keyspace SADD costs its CPU and bytes only, as
    # before collections were stored: no key is created.
    sc = {**BASE, "clients": [{"name": "app", "processes": 1, "think": "1ms",
                               "mix": {"SADD": 1}, "keyspace": {"keys": 10, "preload": 0}}]}
    r = simulate(load_scenario(sc), seed=1)
    assert r.summary["keys_end"] == 0
