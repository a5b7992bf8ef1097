"""A command file's collection keys are real collections (``model/trace.py``'s
``TraceCollection``, ``model/collection.py``): ``SADD good <uuid>`` in seed S2's
trace adds to a set that SMEMBERS reads and DEL frees.

Expected figures are worked out in the comments from the trace's own lines
and ``encoding.footprint`` (whose bytes and allocations are checked against
Redis by hand in ``test_encoding*.py``), or from a cost the test sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from redsim import load_scenario, simulate
from redsim.model.encoding import HASHTABLE, SET, Limits, footprint
from redsim.model.trace import TraceError, parse_trace

ROOT = Path(__file__).resolve().parents[1]


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "t.trace"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_keys_collection_commands_name_are_collections(tmp_path):
    t = parse_trace(_write(tmp_path, [
        "SADD s a b", "SADD s c a", "HSET h f1 v1 f2 v22", "LPUSH l x y", "LPUSH l x",
        "GET k", "SMEMBERS s", "DEL s", "DEL s h", "EXPIRE h 10", "SADD n 12 -7 0"]))
    by = {c.name: c for c in t.collections}
    assert list(by) == ["s", "h", "l", "n"]  # by first appearance
    # s: members a, b, c (a twice) of 1 B; h: fields f1, f2 (2 B), values 2 and
    # 3 B (mean 2.5, rounded to even: 2); l: 3 elements pushed; n: all integers.
    assert (by["s"].type, by["s"].members, by["s"].member_size) == ("set", 3, 1)
    assert (by["h"].type, by["h"].members, by["h"].member_size, by["h"].value_size) == (
        "hash", 2, 2, 2)
    assert (by["l"].type, by["l"].members) == ("list", 3)
    assert by["n"].integers and not by["s"].integers
    # Per line: its collection's index; GET k, and the DEL of two keys, name none.
    assert t.coll_key.tolist() == [0, 0, 1, 2, 2, -1, 0, 0, -1, 1, 3]
    # HSET's elements are its field-value pairs: 2.
    assert t.elems[2] == 2


def test_a_key_used_as_two_types_is_refused_with_its_line(tmp_path):
    with pytest.raises(TraceError) as e:
        parse_trace(_write(tmp_path, ["SADD x a", "GET y", "HSET x f v"]))
    assert ":3:" in str(e.value) and "WRONGTYPE" in str(e.value)


def test_the_s2_trace_adds_its_good_uuids_to_one_set():
    t = parse_trace(ROOT / "scenarios" / "traces" / "get_cache.trace")
    # make_get_cache.py: 1,677 good uuids (36 B each) of 5,000, one SADD each,
    # then one SMEMBERS and one DEL of the set.
    (good,) = t.collections
    assert (good.name, good.type, good.members, good.member_size) == ("good", "set", 1677, 36)
    assert (t.coll_key == 0).sum() == 1677 + 2


def test_a_trace_set_grows_and_its_del_frees_it_on_the_main_thread(tmp_path):
    # 600 SADDs of distinct 5-byte members, 20 SCARDs (the set stays whole past a
    # sample), then DEL. 600 non-integer members: a hashtable set in 7.0. The
    # DEL frees its allocations at engine.cpu.free-alloc, set to 1 ms so that
    # the DEL is the run's slowest command by far: fp.allocs × 1 ms.
    lines = [f"SADD s m{i:04d}" for i in range(600)] + ["SCARD s"] * 20 + ["DEL s"]
    path = _write(tmp_path, lines)
    sc = load_scenario({
        "name": "trace-set", "redis-version": "7.0", "duration": 30, "sample-interval": 0.1,
        "server": {"save": ""}, "engine": {"cpu": {"free-alloc": "1ms"}},
        "clients": [{"name": "app", "kind": "trace", "trace": str(path), "replay": "once",
                     "trace-timing": "closed", "think": "10ms", "processes": 1,
                     "pool": {"max-size": 1}}]})
    r = simulate(sc, seed=1)
    fp = footprint(SET, 600, 5, limits=Limits.of(sc))  # 7.0's, the server's
    assert fp.encoding == HASHTABLE and fp.allocs > 1200  # 2 allocations a member, and more
    assert r.summary["latency_max_s"] == pytest.approx(fp.allocs * 1e-3, rel=0.01)
    assert r.summary["keys_end"] == 0  # the DEL removed it
    # At its fullest the set held its footprint, and the key's own objects
    # (sds, dictEntry, robj, the main dict's 4 buckets: under 256 B): the drop
    # from the peak to the first sample without the key (before the idle
    # client's 20 KB query buffer is freed, which the run's end would include).
    ts = r.timeseries
    peak = ts["used_memory"].idxmax()
    gone = ts.loc[peak:].index[ts.loc[peak:, "keys"] == 0][0]
    held = ts["used_memory"].loc[peak] - ts["used_memory"].loc[gone]
    assert fp.bytes <= held <= fp.bytes + 256
