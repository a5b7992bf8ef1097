"""The cache-trace readers (issue #20, "Replay of public cache traces"):
Twitter's cache-trace CSV and libCacheSim's oracleGeneral binary records, read
into ``Trace`` by ``redsim/traces``, and the scenario fields that choose them.

The samples under ``tests/data/traces`` come from ``make_samples.py``; the
round-trip tests compare what the readers return with what that generator
wrote (its rows, and RESP requests built here byte by byte), not with the
readers' own output.
"""

from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from redsim.config import ScenarioError, load_scenario
from redsim.model.commands import COMMAND_IDS
from redsim.model.trace import TraceError, parse_trace
from redsim.traces import load_trace, read_oracle_general, read_twitter

SAMPLES = Path(__file__).parent / "data" / "traces"
TWITTER = SAMPLES / "twitter-sample.csv"
ORACLE = SAMPLES / "oracle-sample.bin"

_spec = importlib.util.spec_from_file_location("make_samples", SAMPLES / "make_samples.py")
assert _spec is not None and _spec.loader is not None
make_samples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_samples)

# The mapping the Twitter reader documents, written out again here.
REDIS_COMMAND = {"get": "GET", "gets": "GET", "set": "SET", "add": "SET", "replace": "SET",
                 "cas": "SET", "append": "SET", "prepend": "SET", "delete": "DEL",
                 "incr": "INCR", "decr": "DECR"}


def resp(*args: bytes) -> bytes:
    """A command as RESP2 puts it on the wire."""
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def request(op: str, key_size: int, value_size: int, ttl: int) -> bytes:
    name = REDIS_COMMAND[op].encode()
    if name == b"SET":
        extra = (b"EX", str(ttl).encode()) if ttl > 0 else ()
        return resp(name, b"k" * key_size, b"v" * value_size, *extra)
    return resp(name, b"k" * key_size)


def first_appearance(ids: list) -> list[int]:
    number: dict = {}
    return [number.setdefault(i, len(number)) for i in ids]


def spread_by_hand(seconds: list[int], speed: float = 1.0) -> list[float]:
    """Request j of the m stamped with second s at s + j/m, from the first request."""
    out = []
    for i, s in enumerate(seconds):
        m = seconds.count(s)
        j = seconds[:i].count(s)
        out.append((s - seconds[0] + j / m) / speed)
    return out


def write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the samples ------------------------------------------------------------------------------

def test_the_samples_are_the_generators_output():
    assert TWITTER.read_text() == make_samples.twitter_text(make_samples.twitter_rows())
    assert ORACLE.read_bytes() == make_samples.oracle_bytes(make_samples.oracle_records())


def test_twitter_sample_round_trips():
    rows = make_samples.twitter_rows()
    tr = read_twitter(TWITTER)
    assert len(tr.cmd) == len(rows) == 300
    ops = [row[5] for row in rows]
    assert set(ops) == set(REDIS_COMMAND)  # the sample has every operation
    assert tr.cmd.tolist() == [COMMAND_IDS[REDIS_COMMAND[op]] for op in ops]
    assert tr.req_bytes.tolist() == [len(request(op, ks, vs, ttl))
                                     for _, _, ks, vs, _, op, ttl in rows]
    assert tr.reply_bytes.tolist() == [{"GET": -1, "SET": 5}.get(REDIS_COMMAND[op], 4)
                                       for op in ops]
    assert tr.value.tolist() == [row[3] for row in rows]
    assert tr.elems.tolist() == [1] * len(rows)
    assert tr.key.tolist() == first_appearance([row[1] for row in rows])
    assert tr.key.max() + 1 == len({row[1] for row in rows}) == 39
    np.testing.assert_allclose(tr.time, spread_by_hand([row[0] for row in rows]), rtol=0,
                               atol=1e-9)
    # Big arguments: only the 40,000-byte values, each one at its own offset.
    big = [i for i, row in enumerate(rows) if row[3] >= 32768 and REDIS_COMMAND[row[5]] == "SET"]
    assert big and np.flatnonzero(tr.big[:, 2]).tolist() == big
    for i in big:
        _, _, ks, vs, _, _, _ = rows[i]
        head = len(b"*3\r\n$3\r\nSET\r\n") + len(b"$%d\r\n" % ks) + ks + 2 + len(b"$40000\r\n")
        assert tr.big[i].tolist() == [head, 0, 1, vs + 2]


def test_a_key_holding_a_comma_reads_as_one_key():
    rows = make_samples.twitter_rows()
    lines = [i for i, row in enumerate(rows) if "," in row[1]]
    assert lines  # the generator wrote one
    tr = read_twitter(TWITTER)
    keys = {int(tr.key[i]) for i in lines}
    assert len(keys) == 1 and tr.req_bytes[lines[0]] == len(request(
        rows[lines[0]][5], rows[lines[0]][2], rows[lines[0]][3], rows[lines[0]][6]))


def test_oracle_sample_round_trips_skipping_size_zero_records():
    records = make_samples.oracle_records()
    kept = [r for r in records if r[2] > 0]
    assert 0 < len(kept) < len(records)  # the sample has records of size 0
    tr = read_oracle_general(ORACLE, key_size=20)
    assert tr.cmd.tolist() == [COMMAND_IDS["GET"]] * len(kept)
    assert tr.req_bytes.tolist() == [len(resp(b"GET", b"k" * 20))] * len(kept)
    assert tr.reply_bytes.tolist() == [-1] * len(kept)
    assert tr.value.tolist() == [r[2] for r in kept]
    assert tr.elems.tolist() == [1] * len(kept)
    assert tr.key.tolist() == first_appearance([r[1] for r in kept])
    assert not tr.big.any()
    np.testing.assert_allclose(tr.time, spread_by_hand([r[0] for r in kept]), rtol=0, atol=1e-9)


def test_the_record_layout_is_libcachesims():
    # uint32 time, uint64 id, uint32 size, int64 next access: 24 bytes, little-endian.
    rec = (7, 0x0102030405060708, 300, -1)
    raw = struct.pack("<IQIq", *rec)
    assert len(raw) == 24 and raw[4:12] == bytes.fromhex("0807060504030201")


# --- times ------------------------------------------------------------------------------------

def test_requests_of_one_second_are_spread_evenly(tmp_path):
    path = write(tmp_path, "5,a,3,10,1,get,0\n5,b,3,10,1,get,0\n5,a,3,10,1,set,0\n"
                           "6,a,3,10,1,get,0\n8,b,3,0,1,delete,0\n8,a,3,10,1,get,0\n")
    assert read_twitter(path).time.tolist() == pytest.approx([0, 1 / 3, 2 / 3, 1, 3, 3.5])
    assert read_twitter(path, speed=2).time.tolist() == pytest.approx(
        [0, 1 / 6, 1 / 3, 0.5, 1.5, 1.75])


def test_oracle_times_are_spread_and_scaled(tmp_path):
    path = tmp_path / "t.bin"
    path.write_bytes(b"".join(struct.pack("<IQIq", t, 9, 100, -1) for t in (40, 40, 40, 40, 42)))
    assert read_oracle_general(path).time.tolist() == [0, 0.25, 0.5, 0.75, 2]
    assert read_oracle_general(path, speed=0.5).time.tolist() == [0, 0.5, 1, 1.5, 4]


def test_speed_divides_every_time():
    one = load_trace(TWITTER, "twitter")
    four = load_trace(TWITTER, "twitter", speed=4)
    assert four.time.tolist() == pytest.approx((one.time / 4).tolist())
    assert four.time[-1] > 0 and np.array_equal(one.key, four.key)


def test_speed_scales_a_command_files_monitor_times(tmp_path):
    path = write(tmp_path, '100.0 [0 127.0.0.1:1] "GET" "a"\n103.0 [0 127.0.0.1:1] "GET" "b"\n',
                 "m.trace")
    assert load_trace(path, "commands").time.tolist() == [100.0, 103.0]
    assert load_trace(path, "commands", speed=3).time.tolist() == [100.0, 101.0]
    assert load_trace(path) is parse_trace(path)  # commands: the command-file reader's


# --- keys -------------------------------------------------------------------------------------

def test_more_keys_than_the_keyspace_is_an_error_naming_the_line(tmp_path):
    path = write(tmp_path, "# header\n1,a,3,1,1,get,0\n1,b,3,1,1,get,0\n2,a,3,1,1,get,0\n"
                           "2,c,3,1,1,get,0\n3,d,3,1,1,get,0\n")
    assert read_twitter(path, keys=4).key.tolist() == [0, 1, 0, 2, 3]
    with pytest.raises(TraceError) as info:
        read_twitter(path, keys=2)
    assert info.value.line == 5  # c, the third key
    assert "at most 2 distinct keys" in info.value.expected
    assert "4 distinct keys" in info.value.found


def test_modulo_folds_keys_into_the_keyspace(tmp_path):
    path = write(tmp_path, "".join(f"1,k{i % 7},3,1,1,get,0\n" for i in range(20)))
    assert read_twitter(path, keys=3, overflow="modulo").key.tolist() == [
        (i % 7) % 3 for i in range(20)]
    tr = read_oracle_general(ORACLE, keys=4, overflow="modulo")
    kept = [r for r in make_samples.oracle_records() if r[2] > 0]
    assert tr.key.tolist() == [k % 4 for k in first_appearance([r[1] for r in kept])]


def test_oracle_key_overflow_names_the_record():
    records = make_samples.oracle_records()
    first: dict[int, int] = {}  # object id: record number (from 1) of its first request
    for i, r in enumerate(records):
        if r[2] > 0:
            first.setdefault(r[1], i + 1)
    number = sorted(first.values())[10]  # the eleventh object's
    with pytest.raises(TraceError) as info:
        read_oracle_general(ORACLE, keys=10)
    assert info.value.line == number
    assert f"record {number}" in info.value.found


# --- malformed input --------------------------------------------------------------------------

@pytest.mark.parametrize(("line", "expected"), [
    ("3,a,3,10,1,get", "7 comma-separated fields"),
    ("3", "7 comma-separated fields"),
    ("3,a,3,10,1,frob,0", "an operation"),
    ("3,a,x,10,1,get,0", "a key size in bytes"),
    ("3,a,3,-4,1,set,0", "a value size in bytes"),
    ("3,a,3,600000000,1,set,0", "at most 536,870,912"),
    ("3.5,a,3,10,1,get,0", "whole seconds"),
    ("3,a,3,10,1,set,soon", "a TTL in seconds"),
    ("1,a,3,10,1,get,0", "timestamps in time order"),
    ("9" * 5000 + ",a,3,10,1,get,0", "at most"),
])
def test_a_malformed_twitter_line_names_its_number(tmp_path, line, expected):
    path = write(tmp_path, f"2,a,3,10,1,get,0\n\n{line}\n4,a,3,10,1,get,0\n")
    with pytest.raises(TraceError) as info:
        read_twitter(path)
    assert info.value.line == 3, str(info.value)
    assert expected in info.value.expected
    assert f"{path}:3: expected" in str(info.value)


def test_an_empty_twitter_file_is_an_error(tmp_path):
    with pytest.raises(TraceError) as info:
        read_twitter(write(tmp_path, "# nothing\n\n"))
    assert info.value.line is None and "at least one request" in info.value.expected


def test_a_truncated_binary_file_names_the_record(tmp_path):
    raw = ORACLE.read_bytes()
    path = tmp_path / "cut.bin"
    path.write_bytes(raw[:-10])
    with pytest.raises(TraceError) as info:
        read_oracle_general(path)
    n = len(raw) // 24
    assert info.value.line == n  # the last record lost 10 of its 24 bytes
    assert f"record {n} cut short after 14 bytes" in info.value.found


def test_binary_records_out_of_order_name_the_record(tmp_path):
    path = tmp_path / "t.bin"
    path.write_bytes(b"".join(struct.pack("<IQIq", t, 1, 10, -1) for t in (5, 6, 6, 4, 7)))
    with pytest.raises(TraceError) as info:
        read_oracle_general(path)
    assert info.value.line == 4 and "on record 3" in info.value.found


def test_a_file_of_size_zero_records_or_none_is_an_error(tmp_path):
    path = tmp_path / "t.bin"
    path.write_bytes(struct.pack("<IQIq", 1, 1, 0, -1))
    with pytest.raises(TraceError, match="all of size 0"):
        read_oracle_general(path)
    path.write_bytes(b"")
    with pytest.raises(TraceError, match="an empty file"):
        read_oracle_general(path)


def test_load_trace_refuses_a_bad_format_or_speed():
    with pytest.raises(ValueError, match="format"):
        load_trace(TWITTER, "csv")
    with pytest.raises(ValueError, match="speed"):
        load_trace(TWITTER, "twitter", speed=0)


# --- the scenario -----------------------------------------------------------------------------

def group(**fields) -> dict:
    return {"clients": [{"kind": "trace", **fields}]}


def test_a_scenario_replays_a_cache_trace():
    sc = load_scenario(group(**{"trace": str(TWITTER), "trace-format": "twitter",
                                "trace-timing": "recorded", "trace-speed": 2,
                                "keyspace": {"keys": 40}}))
    g = sc.clients[0]
    assert (g.trace_format, g.trace_speed, g.trace_key_overflow) == ("twitter", 2.0, "error")
    sc = load_scenario(group(trace=str(ORACLE), **{"trace-format": "oracle-general"}))
    assert sc.clients[0].trace_format == "oracle-general"


def test_a_malformed_cache_trace_is_a_scenario_error_naming_the_line(tmp_path):
    path = write(tmp_path, "1,a,3,10,1,get,0\n1,a,3,10,1,get\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(group(trace=str(path), **{"trace-format": "twitter"}))
    assert info.value.location == "clients[0].trace"
    assert "line 2" in info.value.found and "7 comma-separated fields" in info.value.expected
    cut = tmp_path / "cut.bin"
    cut.write_bytes(ORACLE.read_bytes()[:30])
    with pytest.raises(ScenarioError) as info:
        load_scenario(group(trace=str(cut), **{"trace-format": "oracle-general"}))
    assert "record 2" in info.value.found and "24-byte" in info.value.expected


def test_a_trace_with_more_keys_than_the_keyspace_is_a_scenario_error():
    with pytest.raises(ScenarioError) as info:
        load_scenario(group(trace=str(TWITTER), keyspace={"keys": 38},
                            **{"trace-format": "twitter"}))
    assert "at most 38 distinct keys" in info.value.expected
    assert "39 distinct keys" in info.value.found
    sc = load_scenario(group(trace=str(TWITTER), keyspace={"keys": 38},
                             **{"trace-format": "twitter", "trace-key-overflow": "modulo"}))
    assert sc.clients[0].trace_key_overflow == "modulo"


@pytest.mark.parametrize(("fields", "where", "expected"), [
    ({"kind": "closed", "trace-format": "twitter"}, "trace-format", "no trace-format"),
    ({"kind": "closed", "trace-speed": 2}, "trace-speed", "no trace-speed"),
    ({"kind": "open", "rate": 10, "trace-key-overflow": "modulo"}, "trace-key-overflow",
     "no trace-key-overflow"),
    ({"trace-format": "csv"}, "trace-format", "one of 'commands', 'twitter'"),
    ({"trace-speed": 0, "trace-timing": "recorded"}, "trace-speed", "a number > 0"),
    ({"trace-speed": "fast", "trace-timing": "recorded"}, "trace-speed", "a number > 0"),
    ({"trace-speed": 2}, "trace-speed", "unless trace-timing is recorded"),
    ({"trace-key-overflow": "modulo"}, "trace-key-overflow", "for trace-format commands"),
    ({"trace-key-overflow": "wrap", "trace-format": "twitter"}, "trace-key-overflow",
     "one of 'error', 'modulo'"),
])
def test_bad_trace_fields_name_the_field(fields, where, expected):
    data = {"kind": "trace", "trace": str(TWITTER), **fields}
    if data["kind"] != "trace":
        del data["trace"]
    with pytest.raises(ScenarioError) as info:
        load_scenario({"clients": [data]})
    assert info.value.location == f"clients[0].{where}"
    assert expected in info.value.expected


def test_validating_a_cache_trace_scenario_does_not_load_the_kernel():
    code = ("import sys; from redsim.config import load_scenario; "
            f"load_scenario({{'clients': [{{'kind': 'trace', 'trace': {str(ORACLE)!r}, "
            "'trace-format': 'oracle-general'}]}); print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "False"


# --- replayed by the kernel -------------------------------------------------------------------


def test_a_replayed_twitter_trace_reads_and_writes_its_own_keys():
    # Replayed once at its recorded times (requests of a second spread over
    # it: gaps of milliseconds, so they reach Redis in order) on an empty
    # keyspace. Walking the generator's rows by hand: a set-like operation,
    # incr or decr leaves its key present (INCR of a missing key stores 1),
    # delete removes it; the keys present at the end are what Redis holds.
    rows = make_samples.twitter_rows()
    present: set = set()
    for row in rows:
        key, op = row[1], row[5]
        if REDIS_COMMAND[op] == "DEL":
            present.discard(key)
        elif REDIS_COMMAND[op] != "GET":
            present.add(key)
    keys = len({row[1] for row in rows})
    span = int(rows[-1][0]) - int(rows[0][0])
    sc = load_scenario({"name": "twitter-replay", "duration": span + 2, "seed": 1,
                        "sample-interval": 1, "server": {"save": ""},
                        "clients": [{"name": "replay", "kind": "trace", "trace": str(TWITTER),
                                     "trace-format": "twitter", "trace-timing": "recorded",
                                     "replay": "once", "processes": 1,
                                     "pool": {"max-size": 4},
                                     "keyspace": {"keys": keys, "preload": 0}}]})
    from redsim import simulate

    s = simulate(sc).summary
    assert s["requests_completed"] == len(rows)
    assert s["keys_end"] == len(present)
