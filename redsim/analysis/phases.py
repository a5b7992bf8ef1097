"""Eviction bursts and the three-phase cycle (seed S0), found in a Result's time series.

The definitions use only the recorded INFO-style series, never the scenario,
so the same rule judges every run (all times in seconds, one row per sample
window):

- **Phase 2** (evicting, thread saturated): a maximal run of windows in which
  eviction took at least ``EVICTION_SHARE`` of the main thread *and* the
  thread was at least ``SATURATED`` busy; runs less than ``MERGE_GAP_S`` apart
  are one Phase 2. (A trickle of evictions while the thread works through a
  backlog belongs to Phase 3.)
- **Phase 3** (reclaim): from the end of Phase 2 until the requests in the
  system (issued, not yet answered) are back to at most twice their median
  over the preceding Phase 1 (the backlog has drained).
- **Phase 1** (not saturated): from the end of the previous Phase 3 (or the
  start of the run) to the start of Phase 2.
- A Phase 2 is a **burst** when the answered-request rate fell to at most
  ``BURST_RATE_DIP`` of the normal rate during it: eviction that the thread
  absorbs without losing throughput is not a burst. The normal rate is a rate
  the run produced outside the burst: the median over the Phase 1 before it;
  for a Phase 2 that starts the run (no Phase 1), the median over the windows
  after its Phase 3 (up to the next Phase 2); failing both, the median
  offered (issued) rate during it. Never the burst's own windows, which
  would compare the burst with itself and call a storm "no burst".

``phases(result)`` returns one row per Phase 2 with the three phases' bounds
and durations, the memory given back (maxmemory minus the lowest
``used_memory`` in Phase 3), the normal rate and the lowest answered rate in
Phase 2 (``rate_dip``: the lowest as a share of the normal one, so 0 means no
request answered in some window) and the worst per-window p99 of each phase.
``cycle_period`` is the mean gap between successive burst starts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

SATURATED = 0.95  # main-thread busy share that counts as saturated
EVICTION_SHARE = 0.10  # share of the main thread in performEvictions that marks Phase 2
MERGE_GAP_S = 5.0  # Phase-2 runs closer than this are one
BURST_RATE_DIP = 0.5  # a burst's answered rate falls to at most this share of normal
BACKLOG_FACTOR = 2.0  # Phase 3 ends when requests in system are back under 2x normal

COLUMNS = ["phase1_start", "phase2_start", "phase2_end", "phase3_end", "phase1_s", "phase2_s",
           "phase3_s", "memory_drop_bytes", "rate_normal", "rate_min", "rate_dip", "p99_phase1_s",
           "p99_phase2_s", "p99_phase3_s", "burst", "complete"]


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) indices of each run of True."""
    runs, start = [], None
    for i, m in enumerate(mask):
        if m and start is None:
            start = i
        elif not m and start is not None:
            runs.append((start, i - 1))
            start = None
    if start is not None:
        runs.append((start, len(mask) - 1))
    return runs


def phases(result: Any) -> pd.DataFrame:
    """The cycle table of ``result`` (a ``Result`` or its time series), one row per
    Phase 2; times are window ends in simulated seconds."""
    ts = result.timeseries if hasattr(result, "timeseries") else result
    t = ts.index.to_numpy(dtype=float)
    dt = float(t[1] - t[0]) if len(t) > 1 else float(t[0]) if len(t) else 1.0
    if len(t) == 0 or "evicted_per_sec" not in ts:
        return pd.DataFrame(columns=COLUMNS)
    busy = 1.0 - ts["cpu_idle"].to_numpy()
    evicting = (ts["cpu_eviction"].to_numpy() >= EVICTION_SHARE) & (busy >= SATURATED)
    runs: list[list[int]] = []
    for a, b in _runs(evicting):
        if runs and (a - runs[-1][1]) * dt <= MERGE_GAP_S:
            runs[-1][1] = b
        else:
            runs.append([a, b])
    rate = ts["requests_per_sec"].to_numpy()
    in_sys = ts["in_system"].to_numpy()
    used = ts["used_memory"].to_numpy()
    maxmem = ts["maxmemory"].to_numpy()
    p99 = ts["latency_p99"].to_numpy()
    offered = ts["offered_per_sec"].to_numpy() if "offered_per_sec" in ts else None
    rows = []
    prev_end = 0
    for i, (a, b) in enumerate(runs):
        p1 = slice(prev_end, a) if a > prev_end else slice(max(a - 1, 0), a)
        normal_sys = float(np.median(in_sys[p1])) if a > prev_end else float(in_sys[a])
        end3 = b + 1
        while end3 < len(t) and in_sys[end3] > BACKLOG_FACTOR * max(normal_sys, 1.0):
            end3 += 1
        end3 = min(end3, len(t) - 1)
        if a > prev_end:
            normal_rate = float(np.median(rate[p1]))
        else:
            # No Phase 1 before it: the windows after it, up to the next Phase 2.
            nxt = runs[i + 1][0] if i + 1 < len(runs) else len(t)
            after = rate[end3 + 1:nxt]
            normal_rate = (float(np.median(after)) if len(after)
                           else float(np.median(offered[a:b + 1])) if offered is not None
                           else float("nan"))
        p3 = slice(b + 1, end3 + 1)
        rate_min = float(rate[a:b + 1].min())
        low = float(used[b + 1:end3 + 1].min()) if end3 > b else float(used[b])
        start1 = float(t[prev_end] - dt) if prev_end > 0 or a > 0 else float(t[0] - dt)
        rows.append({
            "phase1_start": start1,
            "phase2_start": float(t[a] - dt),
            "phase2_end": float(t[b]),
            "phase3_end": float(t[end3]),
            "phase1_s": float(t[a] - dt) - start1,
            "phase2_s": float(t[b] - t[a] + dt),
            "phase3_s": float(t[end3] - t[b]),
            "memory_drop_bytes": float(maxmem[b] - low),
            "rate_normal": normal_rate,
            "rate_min": rate_min,
            "rate_dip": rate_min / normal_rate if normal_rate > 0 else float("nan"),
            "p99_phase1_s": float(np.nanmax(p99[p1])) if a > prev_end else float("nan"),
            "p99_phase2_s": float(np.nanmax(p99[a:b + 1])) if np.isfinite(p99[a:b + 1]).any()
            else float("nan"),
            "p99_phase3_s": float(np.nanmax(p99[p3])) if end3 > b and np.isfinite(p99[p3]).any()
            else float("nan"),
            "burst": bool(normal_rate > 0 and rate_min <= BURST_RATE_DIP * normal_rate),
            # False when the run ended before the backlog drained (Phase 3 cut short).
            "complete": bool(in_sys[end3] <= BACKLOG_FACTOR * max(normal_sys, 1.0)),
        })
        prev_end = end3 + 1
    return pd.DataFrame(rows, columns=COLUMNS)


def burst_summary(table: pd.DataFrame) -> dict[str, Any]:
    """``summary`` fields from a cycle table: whether a burst happened, how many,
    the mean gap between burst starts (s), the median phase lengths (s), memory
    given back (bytes), request rate at its lowest as a fraction of the normal
    rate (``rate_dip_median``) and worst p99 in phase 2 (s); None where there is
    nothing to measure."""
    bursts = table[table["burst"]] if len(table) else table
    starts = bursts["phase2_start"].to_numpy() if len(bursts) else np.array([])

    def median(col: str) -> float | None:
        return float(bursts[col].median()) if len(bursts) else None

    return {
        "burst_detected": bool(len(bursts) > 0),
        "bursts": int(len(bursts)),
        "cycle_period_s": float(np.diff(starts).mean()) if len(starts) > 1 else None,
        "phase1_median_s": median("phase1_s"),
        "phase2_median_s": median("phase2_s"),
        "phase3_median_s": median("phase3_s"),
        "memory_drop_median_bytes": median("memory_drop_bytes"),
        "rate_dip_median": median("rate_dip"),
        "p99_phase2_median_s": median("p99_phase2_s"),
    }


def format_table(table: pd.DataFrame) -> str:
    """The cycle table as ``redsim run`` prints it."""
    if table.empty:
        return "  no eviction bursts (no window >= 95 % busy with >= 10 % in eviction)"
    # "lowest rate": the answered rate at its lowest in Phase 2, as a share of the
    # normal rate (0 %: nothing answered in some window), not the size of the fall.
    lines = ["  cycle  phase 1  phase 2  phase 3  starts at  mem drop  lowest rate  "
             "p99 in phase 2"]
    for i, r in table.iterrows():
        lines.append(
            f"  {i + 1:>5}  {r.phase1_s:>6.0f}s  {r.phase2_s:>6.0f}s  {r.phase3_s:>6.0f}s  "
            f"{r.phase2_start:>8.0f}s  {r.memory_drop_bytes / 2**20:>5.0f} MB  "
            f"{r.rate_dip:>11.0%}  {r.p99_phase2_s * 1e3:>10.0f} ms"
            + ("" if r.burst else "  (no burst: rate held)")
            + ("" if r.complete else "  (cut short by the end of the run)"))
    return "\n".join(lines)


def log2_histogram_text(unit: str, lo, hi, counts) -> str:
    """A log2 histogram printed like BCC's tools (``funclatency``, ``biolatency``)."""
    lo, hi, counts = np.asarray(lo), np.asarray(hi), np.asarray(counts)
    nz = np.nonzero(counts)[0]
    if len(nz) == 0:
        return f"{unit:>20} : count     distribution\n(no calls)"
    first, last = 0, nz[-1]
    top = counts.max()
    lines = [f"{unit:>20} : count     distribution"]
    for i in range(first, last + 1):
        bar = "*" * int(round(40 * counts[i] / top)) if top else ""
        lines.append(f"{lo[i]:>10} -> {hi[i]:<10}: {counts[i]:<9} |{bar:<40}|")
    return "\n".join(lines)
