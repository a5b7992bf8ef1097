"""Trace files: a command list to replay, as ``redis-cli`` or ``MONITOR`` shows it.

No Redis source: a client-side input format. The MONITOR line form is the
one ``src/replication.c:replicationFeedMonitors`` writes.

Accepted line forms (blank lines and lines starting with ``#`` are skipped):

- ``GET user:42`` / ``SET user:42 "some value" EX 60`` — redis-cli style,
  arguments split like the shell (double or single quotes);
- ``1339518083.107412 [0 127.0.0.1:60866] "get" "user:42"`` — MONITOR output,
  whose timestamp is used by ``trace-timing: recorded``.

A trace file must be a regular file (not a FIFO or a device) of at most
``MAX_TRACE_BYTES`` (64 MB, some two million commands) holding at least one
command.

Each line becomes one command with its real request size (RESP encoding of the
actual arguments). The reply size is known for writes and counters; for reads
that return stored values (GET, MGET, SMEMBERS, ...) it is marked unknown (-1)
and drawn from the group's ``value-size`` at run time.

A key that a collection command names (``SADD good <uuid>``, HSET, LPUSH, ...)
is a real collection (``TraceCollection``, ``model/collection.py``): it is
absent at the start, its first add creates it, the trace's lines change it,
read it (SMEMBERS replies with what it holds) and DEL, UNLINK, EXISTS or
EXPIRE of it alone act on it. Its type is its commands'; its members' and
values' sizes are the means of those the trace adds; it grows to the
distinct members its adds name (a list: to the elements pushed), and an add
past that updates a member, as a repeated SADD of the same member would.
Deviation: its key's size is the group's ``key-size``, not its name's.
Other keys are not tracked: a GET of one costs what its command costs and
its reply is drawn from ``value-size``.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from redsim.fileio import IRREGULAR, TOO_LARGE, UNREADABLE, RefusedFile, read_bounded
from redsim.model.commands import (
    COLL_ADD,
    COMMAND_IDS,
    COMMANDS,
    EFFECT_DELETE,
    EFFECT_EXISTS,
    EFFECT_EXPIRE,
    PROTO_MBULK_BIG_ARG,
    SHAPE_KEY,
    SHAPE_KEY_ARRAY,
    SHAPE_KEY_FIELD_VALUE,
    SHAPE_MULTI_GET,
    SHAPE_SCAN,
)

MAX_TRACE_BYTES = 64 * 1024 * 1024
"""Largest trace file read, bytes. Parsing holds about 400 bytes of Python objects
per command, so 64 MB of ~30-byte lines (two million commands) peaks near 1 GB."""

_MONITOR = re.compile(r"^(\d+(?:\.\d+)?)\s+\[[^\]]*\]\s+(.*)$")


class TraceError(ValueError):
    """A trace file that cannot be replayed; the message names the file (and line).

    Attributes:
        file: the trace file.
        line: 1-based line number, or None when the whole file is at fault.
        expected: what would have been accepted.
        found: what was there.
    """

    def __init__(self, file: str | Path, expected: str, found: str,
                 line: int | None = None) -> None:
        self.file = str(file)
        self.line = line
        self.expected = expected
        self.found = found
        where = self.file if line is None else f"{self.file}:{line}"
        super().__init__(f"{where}: expected {expected}, found {found}")

    def __reduce__(self) -> tuple[object, ...]:
        # Rebuilt from its parts when it crosses a process boundary (sweeps).
        return (TraceError, (self.file, self.expected, self.found, self.line))


@dataclass(frozen=True)
class TraceCollection:
    """A key a command file's collection commands name (module docstring)."""

    name: str
    type: str  # hash, set, zset or list
    members: int  # distinct members its adds name (a list: elements pushed), ≥ 1
    member_size: int  # their mean size, B
    value_size: int  # a hash's: its values' mean size, B (0 otherwise)
    integers: bool  # a set whose members are all integers (an intset)


@dataclass
class Trace:
    """A parsed trace as parallel arrays (one entry per command)."""

    cmd: np.ndarray  # command id
    req_bytes: np.ndarray  # request size on the wire, B
    reply_bytes: np.ndarray  # reply size, B; -1 = a stored value of unknown size
    elems: np.ndarray  # keys/members the command names
    value: np.ndarray  # value bytes carried by the request (writes)
    time: np.ndarray  # MONITOR timestamp, s (line number when absent)
    big: np.ndarray  # (n, 4) big bulk arguments: first, period, count, length (see _big_args)
    key: np.ndarray | None = None
    """Key id in the group's keyspace (0 .. keys-1) per command, or -1 where the line
    names no key the keyspace tracks; None (a command file) = -1 everywhere. Reads
    of a keyed line return the stored value's size, writes store theirs."""

    coll_key: np.ndarray | None = None
    """A command file's collection key per line: its index in ``collections``, or
    -1 (a line naming no such key, or more than one key)."""
    collections: tuple[TraceCollection, ...] = ()
    """The keys a command file's collection commands name, by first appearance."""

    def key_ids(self) -> np.ndarray:
        """``key`` with None spelled out as -1 per line."""
        return self.key if self.key is not None else np.full(len(self.cmd), -1, np.int64)


def _big_args(args: list[bytes]) -> tuple[int, int, int, int]:
    """The line's big bulk arguments as ``protocol.big_args`` describes them.

    Exact when the big arguments are equally long and evenly spaced (one big
    value, or MSET/SADD of equal-size values); otherwise the spacing is the
    mean gap and the length the longest, which moves read boundaries inside
    that one command only.
    """
    pos = len(f"*{len(args)}\r\n")
    starts, lengths = [], []
    for a in args:
        pos += len(f"${len(a)}\r\n")
        if len(a) >= PROTO_MBULK_BIG_ARG:
            starts.append(pos)
            lengths.append(len(a) + 2)
        pos += len(a) + 2
    if not starts:
        return 0, 0, 0, 0
    n = len(starts)
    period = (starts[-1] - starts[0]) // (n - 1) if n > 1 else 0
    return starts[0], period, n, max(lengths)


def _resp_size(args: list[bytes]) -> int:
    size = len(f"*{len(args)}\r\n")
    for a in args:
        size += len(f"${len(a)}\r\n") + len(a) + 2
    return size


def _reply_size(name: str, args: list[bytes]) -> int:
    shape = COMMANDS[name].shape
    if shape in (SHAPE_KEY, SHAPE_MULTI_GET, SHAPE_KEY_ARRAY, SHAPE_SCAN):
        return -1
    if name == "KEYS":  # what a recorded pattern matched is unknown: one 16-B key
        return _resp_size([b"k" * 16])
    if name in ("SET", "SETEX", "MSET"):
        return 5
    if name == "PING":
        return 7
    if name == "INFO":
        return 4000 + 8
    return 4  # an integer reply such as :1\r\n


def _read_trace_text(path: Path) -> str:
    """The text of a trace file: a regular file of at most MAX_TRACE_BYTES
    (``redsim.fileio.read_bounded``: a FIFO or a device such as /dev/zero is
    refused before it is opened)."""
    try:
        raw = read_bounded(path, MAX_TRACE_BYTES)
    except RefusedFile as exc:
        expected = {UNREADABLE: "a readable trace file", IRREGULAR: "a regular trace file",
                    TOO_LARGE: f"a trace file of at most {MAX_TRACE_BYTES >> 20} MB"}[exc.reason]
        raise TraceError(path, expected, exc.found) from None
    return raw.decode("utf-8", errors="replace")


def parse_trace(path: str | Path) -> Trace:
    """Read a trace file; raises TraceError naming the file and line on bad input.

    The same unchanged file (path, size and modification time) is parsed once per
    process: the loader parses it to validate a scenario and the run parses it
    again to build the world. The arrays returned are shared; callers copy them.
    """
    path = Path(path)
    try:
        st = os.stat(path)
        key: tuple[str, int, int] | None = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    except (OSError, ValueError):  # ValueError: a NUL byte, an unencodable name
        key = None  # _parse_trace reports it
    if key is not None and key in _CACHE:
        return _CACHE[key]
    trace = _parse_trace(path)
    if key is not None:
        while len(_CACHE) >= _CACHE_SIZE:  # the oldest goes: a run reuses the last few
            del _CACHE[next(iter(_CACHE))]
        _CACHE[key] = trace
    return trace


_CACHE: dict[tuple[str, int, int], Trace] = {}
_CACHE_SIZE = 2  # traces kept; each up to ~200 MB of arrays


def _parse_trace(path: Path) -> Trace:
    """Read a trace file; raises TraceError naming the file and line on bad input."""
    path = Path(path)
    text = _read_trace_text(path)
    cmd, req, rep, elems, value, times, big = [], [], [], [], [], [], []
    linenos: list[int] = []
    named: list[list[bytes] | None] = []  # the arguments of lines that may name a collection
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        ts = float(lineno)
        m = _MONITOR.match(line)
        if m:
            ts = float(m.group(1))
            if not math.isfinite(ts):  # hundreds of digits: no time the run can reach
                raise TraceError(path, "a MONITOR timestamp in seconds",
                                 f"{m.group(1)[:20]}… (too large)", lineno)
            line = m.group(2)
        try:
            parts = shlex.split(line)
        except ValueError as e:
            raise TraceError(path, "arguments split like the shell (balanced quotes)",
                             str(e), lineno) from None
        if not parts:
            continue
        name = parts[0].upper()
        if name not in COMMAND_IDS:
            known = ", ".join(sorted(COMMAND_IDS))
            raise TraceError(path, f"a command redsim models ({known})", repr(parts[0]),
                             lineno)
        args = [p.encode() for p in parts]
        cmd.append(COMMAND_IDS[name])
        req.append(_resp_size(args))
        rep.append(_reply_size(name, args))
        if name == "MSET":
            elems.append(max(1, (len(args) - 1) // 2))
        elif COMMANDS[name].shape == SHAPE_KEY_FIELD_VALUE:  # HSET, ZADD: pairs
            elems.append(max(1, (len(args) - 2) // 2))
        else:
            elems.append(max(1, len(args) - 2))
        named.append(args if _may_name_collection(name, args) else None)
        value.append(len(args[2]) if len(args) > 2 else 0)
        times.append(ts)
        linenos.append(lineno)
        big.append(_big_args(args))
    if not cmd:
        raise TraceError(path, "at least one command in the trace file",
                         "none (only blank lines, comments or nothing)")
    t = np.asarray(times, np.float64)
    if np.any(np.diff(t) < 0):
        back = int(np.argmax(np.diff(t) < 0)) + 1  # the first command earlier than the one before
        raise TraceError(path, "MONITOR timestamps in time order (a recorded trace)",
                         f"{t[back]:.6f} after {t[back - 1]:.6f} on line {linenos[back - 1]}",
                         linenos[back])
    coll_key, collections = _collections(path, named, linenos)
    return Trace(np.asarray(cmd, np.int64), np.asarray(req, np.int64),
                 np.asarray(rep, np.int64), np.asarray(elems, np.int64),
                 np.asarray(value, np.int64), t, np.asarray(big, np.int64).reshape(-1, 4),
                 coll_key=coll_key, collections=collections)


_KEY_EFFECTS = (EFFECT_DELETE, EFFECT_EXISTS, EFFECT_EXPIRE)
_INTEGER = re.compile(rb"-?[1-9][0-9]{0,17}|0")  # fits a long long: an intset member


def _may_name_collection(name: str, args: list[bytes]) -> bool:
    """A collection command, or DEL/UNLINK/EXISTS/EXPIRE of one key."""
    c = COMMANDS[name]
    if c.coll:
        return len(args) >= 2
    if c.effect in _KEY_EFFECTS:
        return len(args) == (3 if c.effect == EFFECT_EXPIRE else 2)
    return False


def _added(name: str, args: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """The members (and a hash's values) an add names."""
    if name == "HSET":
        return args[2::2], args[3::2]
    if name == "ZADD":
        return args[3::2], []
    return args[2:], []


def _collections(path: Path, named: list[list[bytes] | None],
                 linenos: list[int]) -> tuple[np.ndarray | None, tuple[TraceCollection, ...]]:
    """The keys the collection commands name, and each line's (module docstring)."""
    types: dict[bytes, str] = {}
    members: dict[bytes, set[bytes]] = {}
    pushed: dict[bytes, int] = {}
    values: dict[bytes, list[int]] = {}
    for args, lineno in zip(named, linenos, strict=True):
        if args is None:
            continue
        name = args[0].decode().upper()
        c = COMMANDS[name]
        if not c.coll:
            continue
        key = args[1]
        kind = types.setdefault(key, c.type)
        if kind != c.type:
            raise TraceError(path, f"commands of one type on key {key.decode(errors='replace')!r}"
                             f" (a {kind}: Redis answers WRONGTYPE)", f"{name}", lineno)
        if c.coll == COLL_ADD:
            new, vals = _added(name, args)
            members.setdefault(key, set()).update(new)
            pushed[key] = pushed.get(key, 0) + len(new)
            values.setdefault(key, []).extend(len(v) for v in vals)
    if not types:
        return None, ()
    index = {key: i for i, key in enumerate(types)}
    colls = []
    for key, kind in types.items():
        ms = members.get(key, set())
        count = pushed.get(key, 0) if kind == "list" else len(ms)
        vals = values.get(key, [])
        colls.append(TraceCollection(
            name=key.decode(errors="replace"), type=kind, members=max(count, 1),
            member_size=round(sum(map(len, ms)) / len(ms)) if ms else 10,
            value_size=round(sum(vals) / len(vals)) if vals else 0,
            integers=kind == "set" and bool(ms) and all(_INTEGER.fullmatch(m) for m in ms)))
    coll_key = np.array([index.get(args[1], -1) if args is not None else -1 for args in named],
                        np.int64)
    return coll_key, tuple(colls)
