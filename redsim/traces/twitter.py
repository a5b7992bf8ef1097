"""Twitter's cache traces (github.com/twitter/cache-trace): a CSV of requests to
Twemcache/Pelikan clusters, replayed as the Redis commands that do the same.

No Redis source: a client-side input format. The format, as the traces' README
gives it: one request per line, seven comma-separated fields

    timestamp, anonymized key, key size, value size, client id, operation, TTL

``timestamp`` in whole seconds; ``key size`` and ``value size`` in bytes;
``operation`` one of get/gets/set/add/replace/cas/append/prepend/delete/incr/decr;
``TTL`` in seconds, 0 when the request is not a write. The traces ship
zstd-compressed: decompress them first (``zstd -d``). A file may hold at most
``MAX_TRACE_BYTES`` (64 MB; ``head -n`` cuts a part of one). Blank lines and
lines starting with ``#`` are skipped. The key is the text between the first
comma and the last five, so an anonymized key holding a comma still reads.

Each line becomes one command (``COMMAND_IDS``):

==========================  ======  ===============================================
operation                   Redis   request
==========================  ======  ===============================================
get, gets                   GET     ``GET key``
set, add, replace, cas      SET     ``SET key value`` (+ ``EX ttl`` when TTL > 0)
append, prepend             SET     ``SET key value`` (+ ``EX ttl``): APPEND is not
                                    modelled; the value is the appended bytes
delete                      DEL     ``DEL key``
incr, decr                  INCR,   ``INCR key`` / ``DECR key`` (memcached's delta
                            DECR    argument has no Redis counterpart in INCR)
==========================  ======  ===============================================

with a key of the line's key size and a value of its value size (the anonymized
key's own length is not used). Reply sizes are ``redsim/model/trace.py``'s:
``+OK`` for SET, an integer for DEL/INCR/DECR, a stored value (-1, sized when
it runs) for GET. ``elems`` is 1; ``value`` is the line's value size (for a
read: the size the trace recorded for it).

Deviations: add/replace/cas always store (their conditions, and cas's
version, are not replayed); append/prepend store the appended bytes as the
whole value; the TTL counts in the request's size but is not set on the key
(``Trace`` has no TTL column: the key expires as the group's keyspace says);
the client id is not used (the group's connections send every line).

Times: the requests of one second are spread evenly over it
(``arrays.spread_seconds``), and divided by the replay speed. Keys: numbered
0, 1, 2, … by first appearance (``arrays.dense_keys``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from redsim.model.commands import COMMAND_IDS
from redsim.model.trace import Trace, TraceError
from redsim.traces.arrays import check_time_order, dense_keys, read_trace_bytes, spread_seconds
from redsim.traces.wire import MAX_STRING, command_sizes

OPERATIONS = {
    "get": "GET", "gets": "GET",
    "set": "SET", "add": "SET", "replace": "SET", "cas": "SET",
    "append": "SET", "prepend": "SET",
    "delete": "DEL",
    "incr": "INCR", "decr": "DECR",
}
"""Each Twitter (memcached) operation's Redis command."""

MAX_NUMBER = 10**12
"""Largest timestamp or TTL read, s (some 30,000 years: a trace's, or an epoch's)."""

FIELDS = "timestamp, key, key size, value size, client id, operation, TTL"

_CARRIES_VALUE = frozenset(("SET",))
"""Commands whose request carries the value (and the TTL)."""


def _whole(text: str, what: str, path: Path, lineno: int, maximum: int | None = None) -> int:
    """``text`` as a whole number ≥ 0 (≤ ``maximum``), or a TraceError naming the line."""
    s = text.strip()
    if not s.isdigit() or not s.isascii():
        raise TraceError(path, f"{what}: a whole number ≥ 0", repr(text[:40]), lineno)
    v = int(s) if len(s) <= 18 else MAX_NUMBER + 1  # int() of thousands of digits is refused
    maximum = MAX_NUMBER if maximum is None else maximum
    if v > maximum:
        raise TraceError(path, f"{what}: at most {maximum:,}", f"{v:,}", lineno)
    return v


def read_twitter(path: str | Path, speed: float = 1.0, keys: int | None = None,
                 overflow: str = "error") -> Trace:
    """Read a Twitter cache-trace CSV file into a Trace (see the module's docstring);
    raises TraceError naming the file and line on bad input.

    Args:
        path: the decompressed trace.
        speed: replay speed: times are divided by it.
        keys: the group's keyspace size (``keyspace.keys``); None: no bound.
        overflow: more distinct keys than ``keys``: "error" or "modulo".
    """
    path = Path(path)
    text = read_trace_bytes(path).decode("utf-8", errors="replace")
    ops = ", ".join(OPERATIONS)
    key_of: dict[str, int] = {}
    cmd, req, rep, value, seconds, big, key, linenos = [], [], [], [], [], [], [], []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        stamp, _, rest = line.partition(",")
        parts = rest.rsplit(",", 5)
        if len(parts) != 6:
            found = 1 + len(parts) if rest else 1
            raise TraceError(path, f"7 comma-separated fields ({FIELDS})",
                             f"{found} field{'s' if found > 1 else ''}: {line[:60]!r}", lineno)
        name_key, k_size, v_size, _client, op, ttl_text = parts
        t = _whole(stamp, "a timestamp in whole seconds", path, lineno)
        key_size = _whole(k_size, "a key size in bytes", path, lineno, MAX_STRING)
        value_size = _whole(v_size, "a value size in bytes", path, lineno, MAX_STRING)
        ttl = _whole(ttl_text, "a TTL in seconds", path, lineno)
        name = OPERATIONS.get(op.strip().lower())
        if name is None:
            raise TraceError(path, f"an operation ({ops})", repr(op[:40]), lineno)
        if name in _CARRIES_VALUE:
            sizes = command_sizes(name, key_size, value_size, ttl)
        else:
            sizes = command_sizes(name, key_size)
        cmd.append(COMMAND_IDS[name])
        req.append(sizes[0])
        rep.append(sizes[1])
        big.append(sizes[2])
        value.append(value_size)
        seconds.append(t)
        key.append(key_of.setdefault(name_key, len(key_of)))
        linenos.append(lineno)
    if not cmd:
        raise TraceError(path, f"at least one request ({FIELDS})",
                         "none (only blank lines, comments or nothing)")
    t_s = np.asarray(seconds, np.int64)
    where = np.asarray(linenos, np.int64)
    check_time_order(path, t_s, where, "line")
    n = len(cmd)
    return Trace(np.asarray(cmd, np.int64), np.asarray(req, np.int64),
                 np.asarray(rep, np.int64), np.ones(n, np.int64),
                 np.asarray(value, np.int64), spread_seconds(t_s, speed),
                 np.asarray(big, np.int64).reshape(-1, 4),
                 key=dense_keys(path, np.asarray(key, np.int64), where, "line", keys, overflow))
