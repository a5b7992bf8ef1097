"""What the cache-trace readers share: reading the file, arrival times from
whole-second timestamps, and numbering the trace's keys into a keyspace."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from redsim.fileio import IRREGULAR, TOO_LARGE, UNREADABLE, RefusedFile, read_bounded
from redsim.model.trace import MAX_TRACE_BYTES, TraceError

OVERFLOWS = ("error", "modulo")
"""What ``dense_keys`` does with more distinct keys than the keyspace holds."""


def read_trace_bytes(path: Path) -> bytes:
    """The bytes of a trace file: a regular file of at most ``MAX_TRACE_BYTES``
    (``redsim.fileio.read_bounded``), as ``redsim/model/trace.py`` reads a command
    file; raises TraceError naming the file otherwise."""
    try:
        return read_bounded(path, MAX_TRACE_BYTES)
    except RefusedFile as exc:
        expected = {UNREADABLE: "a readable trace file", IRREGULAR: "a regular trace file",
                    TOO_LARGE: f"a trace file of at most {MAX_TRACE_BYTES >> 20} MB"}[exc.reason]
        raise TraceError(path, expected, exc.found) from None


def check_time_order(path: Path, seconds: np.ndarray, where: np.ndarray, unit: str) -> None:
    """Raise TraceError at the first request timestamped earlier than the one before
    it; ``where[i]`` is request i's line (or record) number, ``unit`` the word."""
    back = np.flatnonzero(np.diff(seconds) < 0)
    if len(back):
        i = int(back[0]) + 1
        raise TraceError(path, "timestamps in time order",
                         f"{int(seconds[i])} after {int(seconds[i - 1])} on {unit} "
                         f"{int(where[i - 1])}", int(where[i]))


def spread_seconds(seconds: np.ndarray, speed: float = 1.0) -> np.ndarray:
    """Arrival times, s after the first request, from whole-second timestamps in time
    order: the m requests stamped with one second are spread evenly over it, the
    j-th (0-based, in file order) at that second + j/m (deterministic, so a replay
    is the same every run); then divided by ``speed``.

    >>> spread_seconds(np.array([10, 10, 10, 10, 11, 13]), speed=2.0).tolist()
    [0.0, 0.125, 0.25, 0.375, 0.5, 1.5]
    """
    t = np.asarray(seconds, np.int64)
    n = len(t)
    if n == 0:
        return np.zeros(0, np.float64)
    starts = np.flatnonzero(np.r_[True, t[1:] != t[:-1]])  # each second's first request
    counts = np.diff(np.r_[starts, n])
    run = np.repeat(np.arange(len(starts)), counts)
    within = (np.arange(n) - starts[run]) / counts[run]
    return ((t - t[0]).astype(np.float64) + within) / speed


def dense_keys(path: Path, ids: np.ndarray, where: np.ndarray, unit: str,
               keys: int | None, overflow: str) -> np.ndarray:
    """Key ids 0, 1, 2, … in order of first appearance from a trace's own key
    identifiers ``ids`` (any integers, one per request; equal ids = one key).

    ``keys`` is the group's keyspace size (None: no bound). A trace with more
    distinct keys is a TraceError naming the ``where`` (line or record number,
    ``unit`` its word) of the first key past the bound (``overflow`` "error"),
    or its ids wrap round: key i becomes i mod ``keys`` ("modulo"), so keys
    that far apart in first appearance share one key of the keyspace.
    """
    if overflow not in OVERFLOWS:
        raise ValueError(f"overflow must be one of {OVERFLOWS}, not {overflow!r}")
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    key = rank[inverse.reshape(-1)]
    if keys is not None and len(first) > keys:
        if overflow == "error":
            i = int(np.sort(first)[keys])  # the request naming key number `keys` + 1
            raise TraceError(path, f"at most {keys:,} distinct keys (the group's "
                             "keyspace.keys; or trace-key-overflow: modulo)",
                             f"{len(first):,} distinct keys, key {keys + 1:,} first on "
                             f"{unit} {int(where[i])}", int(where[i]))
        key %= keys
    return key
