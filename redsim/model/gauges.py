"""Gauges at each window's end: the server's state as a poll of ``INFO`` sees it.

No Redis source: the recorder's snapshots of what ``INFO`` reports
(``connected_clients``, ``used_memory``, ``mem_clients_normal``,
``aof_buffer_length``, ``current_cow_size``, ...), taken at each window's end
from the mechanisms that own those figures. The recorder itself
(``observe/bins.py``) knows windows, not mechanisms.
"""

from __future__ import annotations

from redsim.model import replication
from redsim.model.jit import entry, hot_leaf
from redsim.model.memory import clients_memory, used_memory
from redsim.model.rss import (
    allocator_active,
    allocator_allocated,
    allocator_resident,
    used_memory_rss,
)
from redsim.model.state import (
    AOF_BUF,
    AOF_SIZE,
    CE_LIMIT,
    CHILD,
    CONNECTED,
    COW_PAGES,
    CUR_WIN,
    DF_RUNNING,
    DIRTY,
    DT,
    HZ,
    IN_FLIGHT,
    KS_BUCKETS,
    KS_EXP_BUCKETS,
    KS_EXPIRES,
    KS_KEYS,
    LF_OBJECTS,
    MEM_CLIENTS_INFO,
    N_WIN,
    PAGE_SHIFT,
    REPL_N,
    SNAP_WIN,
    T_NEXT_SNAP,
    W_HZ,
    WI_AL_ACTIVE,
    WI_AL_ALLOCATED,
    WI_AL_RESIDENT,
    WI_AOF_BUF,
    WI_AOF_SIZE,
    WI_BUCKETS,
    WI_CHILD,
    WI_CONNECTED,
    WI_COW_BYTES,
    WI_DF_RUNNING,
    WI_DIRTY,
    WI_EXPIRES,
    WI_IN_FLIGHT,
    WI_KEYS,
    WI_LF_PENDING,
    WI_MEM_CLIENTS,
    WI_MEM_CLIENTS_INFO,
    WI_RSS,
    WI_USED_MEMORY,
)
from redsim.model.world import as_world
from redsim.observe import groups
from redsim.observe.bins import cell, close_window


@hot_leaf
def snapshot_gauges(w, te):
    """Record end-of-window gauges for every window that ends at or before ``te``."""
    F = w.F
    I = w.I
    while te >= F[T_NEXT_SNAP] and I[SNAP_WIN] < I[N_WIN] - 1:
        k = I[SNAP_WIN]
        w.rc_wi[cell(I, WI_CONNECTED, k)] = I[CONNECTED]
        w.rc_wi[cell(I, WI_IN_FLIGHT, k)] = I[IN_FLIGHT]
        w.rc_wf[cell(I, W_HZ, k)] = I[HZ]
        w.rc_wi[cell(I, WI_USED_MEMORY, k)] = used_memory(w)
        w.rc_wi[cell(I, WI_RSS, k)] = used_memory_rss(w)
        w.rc_wi[cell(I, WI_AL_ALLOCATED, k)] = allocator_allocated(w)
        w.rc_wi[cell(I, WI_AL_ACTIVE, k)] = allocator_active(w)
        w.rc_wi[cell(I, WI_AL_RESIDENT, k)] = allocator_resident(w)
        w.rc_wi[cell(I, WI_KEYS, k)] = I[KS_KEYS]
        w.rc_wi[cell(I, WI_EXPIRES, k)] = I[KS_EXPIRES]
        w.rc_wi[cell(I, WI_BUCKETS, k)] = I[KS_BUCKETS] + I[KS_EXP_BUCKETS]
        w.rc_wi[cell(I, WI_MEM_CLIENTS, k)] = clients_memory(w)
        # With client eviction on, Redis keeps INFO's figure in real time (§2.10).
        w.rc_wi[cell(I, WI_MEM_CLIENTS_INFO, k)] = clients_memory(w) if I[CE_LIMIT] > 0 else \
            I[MEM_CLIENTS_INFO]
        w.rc_wi[cell(I, WI_AOF_BUF, k)] = I[AOF_BUF]
        w.rc_wi[cell(I, WI_AOF_SIZE, k)] = I[AOF_SIZE]
        w.rc_wi[cell(I, WI_COW_BYTES, k)] = I[COW_PAGES] << I[PAGE_SHIFT]
        w.rc_wi[cell(I, WI_CHILD, k)] = I[CHILD]
        w.rc_wi[cell(I, WI_DIRTY, k)] = I[DIRTY]
        w.rc_wi[cell(I, WI_DF_RUNNING, k)] = I[DF_RUNNING]
        w.rc_wi[cell(I, WI_LF_PENDING, k)] = I[LF_OBJECTS]
        if I[REPL_N] > 0:
            replication.snapshot(w, k)
        I[SNAP_WIN] = k + 1
        F[T_NEXT_SNAP] += F[DT]


@entry
def finish_windows(world, t_end):
    """Close the open latency windows (the run's and each group's) and snapshot
    the remaining gauges."""
    w = as_world(world)
    F = w.F
    I = w.I
    close_window(w, I[CUR_WIN])
    groups.finish(w)
    snapshot_gauges(w, t_end + 0.5 * F[DT])
