"""Trace files in the formats a trace group replays, read into ``redsim.model.trace.Trace``.

- ``commands``: redis-cli or MONITOR lines (``redsim/model/trace.py``, ``parse_trace``);
- ``twitter``: Twitter's cache-trace CSV (``twitter.py``);
- ``oracle-general``: libCacheSim's oracleGeneral binary records (``oracle_general.py``).

``load_trace`` reads any of them; ``load_group_trace`` reads a client group's,
``group_traces`` every group's. No numba: ``redsim/config`` reads the file
when it validates a scenario, so a malformed trace is a ScenarioError at load
time, naming its line (or record); the driver (``kernel.Kernel``) hands the
groups' traces to the build (``build.build_world``), since the kernel imports
nothing of this package.

The cache-trace formats give each request a key; the readers number the keys
0, 1, 2, … by first appearance into the group's keyspace (``Trace.key``), and
spread the requests of each whole-second timestamp evenly over the second
(``arrays``). A command file's lines name no tracked key (``Trace.key`` None).
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Any

from redsim.model.trace import Trace, parse_trace
from redsim.traces.arrays import OVERFLOWS
from redsim.traces.oracle_general import read_oracle_general
from redsim.traces.twitter import read_twitter

__all__ = ["BINARY_FORMATS", "FORMATS", "OVERFLOWS", "group_traces", "load_group_trace",
           "load_trace", "read_oracle_general", "read_twitter"]

FORMATS = ("commands", "twitter", "oracle-general")
"""The ``trace-format`` values (``redsim/config/schema/types.py``'s ``TraceFormat``)."""

BINARY_FORMATS = frozenset(("oracle-general",))
"""Formats of fixed-size records: a TraceError's ``line`` is the record's number."""


def load_trace(path: str | Path, format: str = "commands", speed: float = 1.0,
               keys: int | None = None, *, overflow: str = "error",
               key_size: int = 16) -> Trace:
    """Read the trace file ``path`` in ``format``; raises TraceError naming the file
    and line (record) on bad input.

    Args:
        path: the file.
        format: one of ``FORMATS``.
        speed: replay speed (> 0): every time is divided by it, from the first
            request's (a commands file's MONITOR times keep their origin).
        keys: the group's ``keyspace.keys``: the cache formats' keys are numbered
            into 0 .. keys-1 (None: no bound). Unused for commands.
        overflow: a cache trace with more distinct keys than ``keys``: "error"
            (TraceError naming the line of the first key too many) or "modulo".
        key_size: oracle-general's key length, B (the group's ``key-size``; that
            format has no key size).

    The same unchanged file read with the same arguments is read once per
    process (the loader reads it to validate a scenario, the run again to build
    the world): the arrays returned are shared; callers copy them.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
    if not (math.isfinite(speed) and speed > 0):
        raise ValueError(f"speed must be a positive number, not {speed!r}")
    if overflow not in OVERFLOWS:
        raise ValueError(f"overflow must be one of {OVERFLOWS}, not {overflow!r}")
    if format == "commands":
        trace = parse_trace(path)  # cached there
        if speed == 1.0:
            return trace
        t0 = trace.time[0]
        return dataclasses.replace(trace, time=t0 + (trace.time - t0) / speed)
    path = Path(path)
    try:
        st = os.stat(path)
        cache_key: tuple[Any, ...] | None = (os.path.realpath(path), st.st_size,
                                             st.st_mtime_ns, format, speed, keys, overflow,
                                             key_size if format == "oracle-general" else None)
    except OSError:
        cache_key = None  # the reader reports it
    if cache_key is not None and cache_key in _CACHE:
        return _CACHE[cache_key]
    if format == "twitter":
        trace = read_twitter(path, speed, keys, overflow)
    else:
        trace = read_oracle_general(path, speed, keys, overflow, key_size)
    if cache_key is not None:
        while len(_CACHE) >= _CACHE_SIZE:  # the oldest goes: a run reuses the last few
            del _CACHE[next(iter(_CACHE))]
        _CACHE[cache_key] = trace
    return trace


_CACHE: dict[tuple[Any, ...], Trace] = {}
_CACHE_SIZE = 2  # traces kept, as parse_trace keeps them


def load_group_trace(group: Any) -> Trace:
    """The trace of a validated ``ClientGroup`` of kind trace (``group.trace`` set):
    ``load_trace`` with its ``trace-format``, ``trace-speed``, ``keyspace.keys``,
    ``trace-key-overflow`` and ``key-size``."""
    return load_trace(group.trace, group.trace_format, group.trace_speed,
                      group.keyspace.keys, overflow=group.trace_key_overflow,
                      key_size=group.key_size)


def group_traces(scenario: Any) -> tuple[Trace | None, ...]:
    """Each client group of a validated scenario's trace (``load_group_trace``),
    None for a group that replays none: what ``build.build_world`` takes as
    ``traces`` (``Blueprint.traces``, indexed by group)."""
    return tuple(load_group_trace(g) if g.kind == "trace" else None
                 for g in scenario.clients)
