"""libCacheSim's oracleGeneral binary traces (github.com/1a1a11a/libCacheSim,
``libCacheSim/traceReader/customizedReader/oracle/oracleGeneralBin.h``), the
format its public cache datasets (Twitter, Meta, Wikimedia, …) ship in,
replayed as Redis GETs.

No Redis source: a client-side input format. Each request is one packed
24-byte little-endian record, no header:

    uint32 clock_time; uint64 obj_id; uint32 obj_size; int64 next_access_vtime

``clock_time`` in whole seconds, ``obj_size`` in bytes; ``next_access_vtime``
(the record number of the object's next request, -1 or INT64_MAX for none) is
for offline optimal eviction and is not used. Compressed files (``.zst``) must
be decompressed first (``zstd -d``); a file may hold at most
``MAX_TRACE_BYTES`` (64 MB, 2.8 million records).

The format has no operation: each record is replayed as ``GET key`` of its
object, with a key of the group's ``key-size`` bytes (the trace has no key
size) and, as the object's size, ``value`` = ``obj_size`` (the size a hit
returns; the reply is a stored value, -1, sized when it runs). A miss is not
followed by a write (no write-on-miss): the trace's own requests only.
Records of size 0 are skipped, as libCacheSim's readers skip them by
default (``ignore_size_zero_req``); record numbers in errors count every
record of the file, from 1.

Times: the requests of one second are spread evenly over it
(``arrays.spread_seconds``), and divided by the replay speed. Keys: numbered
0, 1, 2, … by first appearance of each ``obj_id`` (``arrays.dense_keys``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from redsim.model.commands import COMMAND_IDS
from redsim.model.trace import Trace, TraceError
from redsim.traces.arrays import check_time_order, dense_keys, read_trace_bytes, spread_seconds
from redsim.traces.wire import MAX_STRING, command_sizes

RECORD = np.dtype([("clock_time", "<u4"), ("obj_id", "<u8"), ("obj_size", "<u4"),
                   ("next_access_vtime", "<i8")])
"""One oracleGeneral record: 24 bytes, packed, little-endian."""
assert RECORD.itemsize == 24


def read_oracle_general(path: str | Path, speed: float = 1.0, keys: int | None = None,
                        overflow: str = "error", key_size: int = 16) -> Trace:
    """Read a libCacheSim oracleGeneral file into a Trace of GETs (see the module's
    docstring); raises TraceError naming the file and record on bad input.

    Args:
        path: the decompressed trace.
        speed: replay speed: times are divided by it.
        keys: the group's keyspace size (``keyspace.keys``); None: no bound.
        overflow: more distinct objects than ``keys``: "error" or "modulo".
        key_size: each key's length, bytes (the group's ``key-size``).
    """
    path = Path(path)
    raw = read_trace_bytes(path)
    n, cut = divmod(len(raw), RECORD.itemsize)
    if cut:
        raise TraceError(path, f"whole {RECORD.itemsize}-byte oracleGeneral records",
                         f"{len(raw):,} bytes: record {n + 1} cut short after {cut} bytes",
                         n + 1)
    rec = np.frombuffer(raw, RECORD, count=n)
    number = np.flatnonzero(rec["obj_size"] > 0) + 1  # record numbers kept, from 1
    rec = rec[number - 1]
    if len(rec) == 0:
        found = "an empty file" if n == 0 else f"{n:,} records, all of size 0"
        raise TraceError(path, "at least one oracleGeneral record of an object of size > 0",
                         found)
    size = rec["obj_size"].astype(np.int64)
    big_size = np.flatnonzero(size > MAX_STRING)
    if len(big_size):
        i = int(big_size[0])
        raise TraceError(path, f"an object size of at most {MAX_STRING >> 20} MB "
                         "(Redis's string limit)", f"{int(size[i]):,} bytes", int(number[i]))
    seconds = rec["clock_time"].astype(np.int64)
    check_time_order(path, seconds, number, "record")
    req, rep, big = command_sizes("GET", key_size)
    m = len(rec)
    return Trace(np.full(m, COMMAND_IDS["GET"], np.int64), np.full(m, req, np.int64),
                 np.full(m, rep, np.int64), np.ones(m, np.int64), size,
                 spread_seconds(seconds, speed), np.tile(np.asarray(big, np.int64), (m, 1)),
                 key=dense_keys(path, rec["obj_id"], number, "record", keys, overflow))
