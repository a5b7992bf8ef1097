"""Trace files: a command list to replay, as ``redis-cli`` or ``MONITOR`` shows it.

No Redis source: a client-side input format. The MONITOR line form is the
one ``src/replication.c:replicationFeedMonitors`` writes.

Accepted line forms (blank lines and lines starting with ``#`` are skipped):

- ``GET user:42`` / ``SET user:42 "some value" EX 60`` — redis-cli style,
  arguments split like the shell (double or single quotes);
- ``1339518083.107412 [0 127.0.0.1:60866] "get" "user:42"`` — MONITOR output,
  whose timestamp is used by ``trace-timing: recorded``.

Each line becomes one command with its real request size (RESP encoding of the
actual arguments). The reply size is known for writes and counters; for reads
that return stored values (GET, MGET, SMEMBERS, ...) it is marked unknown (-1)
and drawn from the group's ``value-size`` at run time.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from redsim.model.commands import (
    COMMAND_IDS,
    COMMANDS,
    SHAPE_KEY,
    SHAPE_KEY_ARRAY,
    SHAPE_MULTI_GET,
    SHAPE_SCAN,
)
from redsim.model.protocol import PROTO_MBULK_BIG_ARG

_MONITOR = re.compile(r"^(\d+(?:\.\d+)?)\s+\[[^\]]*\]\s+(.*)$")


class TraceError(ValueError):
    """A trace line could not be understood; the message names file and line."""


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
    if name in ("SET", "SETEX", "MSET"):
        return 5
    if name == "PING":
        return 7
    if name == "INFO":
        return 4000 + 8
    return 4  # an integer reply such as :1\r\n


def parse_trace(path: str | Path) -> Trace:
    """Read a trace file; raises TraceError naming the file and line on bad input."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise TraceError(f"{path}: cannot read trace file: {e.strerror}") from None
    cmd, req, rep, elems, value, times, big = [], [], [], [], [], [], []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        ts = float(lineno)
        m = _MONITOR.match(line)
        if m:
            ts = float(m.group(1))
            line = m.group(2)
        try:
            parts = shlex.split(line)
        except ValueError as e:
            raise TraceError(f"{path}:{lineno}: cannot split arguments: {e}") from None
        if not parts:
            continue
        name = parts[0].upper()
        if name not in COMMAND_IDS:
            known = ", ".join(sorted(COMMAND_IDS))
            raise TraceError(f"{path}:{lineno}: unknown command {parts[0]!r}; known: {known}")
        args = [p.encode() for p in parts]
        cmd.append(COMMAND_IDS[name])
        req.append(_resp_size(args))
        rep.append(_reply_size(name, args))
        elems.append(max(1, len(args) - 2) if name != "MSET" else max(1, (len(args) - 1) // 2))
        value.append(len(args[2]) if len(args) > 2 else 0)
        times.append(ts)
        big.append(_big_args(args))
    if not cmd:
        raise TraceError(f"{path}: the trace has no commands")
    t = np.asarray(times, np.float64)
    if np.any(np.diff(t) < 0):
        raise TraceError(f"{path}: timestamps go backwards; a recorded trace must be in order")
    return Trace(np.asarray(cmd, np.int64), np.asarray(req, np.int64),
                 np.asarray(rep, np.int64), np.asarray(elems, np.int64),
                 np.asarray(value, np.int64), t, np.asarray(big, np.int64).reshape(-1, 4))
