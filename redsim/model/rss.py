"""The process's RSS and jemalloc's statistics, as ``INFO memory`` reports them.

Follows ``src/server.c:cronUpdateMemoryStats`` (``zmalloc_get_rss``,
``zmalloc_get_allocator_info``: jemalloc's ``stats.allocated``,
``stats.active`` and ``stats.resident``) and the ratios
``src/server.c:genRedisInfoString`` prints (reference §3.2):

- ``allocator_allocated``: bytes in allocations; ``allocator_active``: bytes of
  the pages of slabs and extents in use; ``allocator_resident``: active pages,
  dirty pages not yet purged and jemalloc's metadata;
- ``used_memory_rss``: the process's resident pages: the allocator's resident
  plus what lives outside jemalloc (the binary, libraries, stacks, Lua's heap);
- ``allocator_frag_ratio`` = active / allocated, ``rss_overhead_ratio`` =
  RSS / allocator resident, ``mem_fragmentation_ratio`` = RSS / used_memory
  (computed from the recorded gauges in ``redsim/result.py``).

Every allocation of the keyspace (keys, values, TTL entries, bucket arrays) and
Redis's own startup allocations are placed in the arena (``arena.py``); so are
the replication buffer's blocks, as large extents of 5 pages and the build's
pad, counted once per cron tick (``replication_buffer.place_in_arena``): what
a trim frees turns dirty and leaves RSS over ``dirty_decay_ms`` (live 7.0.15:
a dropped replica's 231 MB took RSS from 318 to 24 MB over ~8 s). Client
structs and buffers and the AOF buffer are not: they count as allocated and
active at their ``used_memory`` bytes, with no slab waste or pad of their own,
and what they free leaves the RSS at once.

Deviations: a large extent's pages count resident whole and its pad page not
at all, where Linux counts the pages a value's bytes reach from its random
cache line: 16-KB values exact, 20,000-B values −16 % (live 24,327 B of RSS
each, the model 20,480 + the key's), 32-KB values +10 % (live 37,159 B, the
model 40,960); a freed extent's pad counts in the dirty pages until purged;
client buffers of 16 KB and more have no pad (reply nodes and query buffers
over 14 KB are large extents: ~20 % more RSS live for such buffers); RSS
outside jemalloc is a constant, measured on Debian's 7.0.15 (7.7 MB: RSS −
``allocator_resident`` of an empty server; it grew 0.5 MB with 100K keys);
Redis samples these figures every 100 ms in serverCron, the model at each
window's end; copy-on-write copies after a fork are the child's pages,
not the parent's, and are not in ``used_memory_rss`` (``current_cow_size``
reports them).
"""

from __future__ import annotations

from redsim.model.arena import EXTENT_META, PAGE, STARTUP_RESIDENT
from redsim.model.jit import leaf
from redsim.model.memory import clients_memory
from redsim.model.replication_buffer import replication_memory
from redsim.model.state import (
    AL_ALLOCATED,
    AL_EXTENTS,
    AL_LARGE_LIVE,
    AL_LARGE_PAD,
    AL_META_BASE,
    AL_PAGES_ACTIVE,
    AL_PAGES_DIRTY,
    AOF_BUF,
    REPL_BACKLOG,
    RSS_BASE,
)
from redsim.observe import metrics as M

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "RSS_BASE", "i8", "B", "config",
     "resident bytes outside jemalloc: binary, libraries, stacks, Lua (measured), B"),
    ("I", "AL_META_BASE", "i8", "B", "config",
     "jemalloc's resident metadata of an empty server, B (EXTENT_META per extent on top)"),
    ("wi", "WI_RSS", "i8", "B", "gauge", "used_memory_rss at the window's end, B"),
    ("wi", "WI_AL_ALLOCATED", "i8", "B", "gauge", "allocator_allocated at the window's end, B"),
    ("wi", "WI_AL_ACTIVE", "i8", "B", "gauge", "allocator_active at the window's end, B"),
    ("wi", "WI_AL_RESIDENT", "i8", "B", "gauge", "allocator_resident at the window's end, B"),
)


_INFO_RATIOS = ((610, "allocator_frag", "WI_AL_ACTIVE", "WI_AL_ALLOCATED"),
                (620, "allocator_rss", "WI_AL_RESIDENT", "WI_AL_ACTIVE"),
                (630, "rss_overhead", "WI_RSS", "WI_AL_RESIDENT"),
                (640, "mem_fragmentation", "WI_RSS", "WI_USED_MEMORY"))
"""INFO memory's ratios (``src/server.c:genRedisInfoString``) as columns: place,
name, numerator, denominator; each also as their difference, ``<name>_bytes``."""


RESULTS = (
    M.Metric("used_memory_rss_end", "B", M.SUM, "INFO used_memory_rss at the end",
             value=M.end("used_memory_rss"),
             line=M.Line(150, "used_memory_rss end / peak", lambda s: " / ".join(
                 M.mb(s[k]) for k in ("used_memory_rss_end", "used_memory_rss_peak"))
                 + f" MB (fragmentation ratio {s['mem_fragmentation_ratio_end']:.2f} at "
                 "the end)")),
    M.Metric("used_memory_rss_peak", "B", M.series_peak("used_memory_rss"),
             "used_memory_rss's largest sample", value=M.peak("used_memory_rss")),
    M.Metric("host_memory_peak", "B", M.series_peak("host_memory"),
             "RSS and a fork child's copied pages, largest sample", value=M.peak("host_memory")),
    M.Metric("allocator_allocated_end", "B", M.SUM, "INFO allocator_allocated at the end",
             value=M.end("allocator_allocated")),
    M.Metric("allocator_active_end", "B", M.SUM, "INFO allocator_active at the end",
             value=M.end("allocator_active")),
    M.Metric("allocator_resident_end", "B", M.SUM, "INFO allocator_resident at the end",
             value=M.end("allocator_resident")),
    M.Metric("allocator_frag_ratio_end", "-", M.MEAN, "INFO allocator_frag_ratio at the end",
             value=M.end("allocator_frag_ratio", float)),
    M.Metric("rss_overhead_ratio_end", "-", M.MEAN, "INFO rss_overhead_ratio at the end",
             value=M.end("rss_overhead_ratio", float)),
    M.Metric("mem_fragmentation_ratio_end", "-", M.MEAN, "INFO mem_fragmentation_ratio at "
             "the end", value=M.end("mem_fragmentation_ratio", float)),
    M.Column(570, "used_memory_rss", "B", "INFO used_memory_rss", M.gauge("WI_RSS")),
    M.Column(580, "allocator_allocated", "B", "INFO allocator_allocated",
             M.gauge("WI_AL_ALLOCATED")),
    M.Column(590, "allocator_active", "B", "INFO allocator_active", M.gauge("WI_AL_ACTIVE")),
    M.Column(600, "allocator_resident", "B", "INFO allocator_resident",
             M.gauge("WI_AL_RESIDENT")),
    *(M.Column(at, f"{name}_ratio", "-", f"INFO {name}_ratio", M.info_ratio(num, den))
      for at, name, num, den in _INFO_RATIOS),
    *(M.Column(at + 40, f"{name}_bytes", "B", f"INFO {name}_bytes",
               lambda r, num=num, den=den: M.row(r, num) - M.row(r, den))
      for at, name, num, den in _INFO_RATIOS),
    # A fork child's copied pages are its own: on the host they come on top of RSS.
    M.Column(690, "host_memory", "B", "RSS and a fork child's copied pages",
             lambda r: M.row(r, "WI_RSS") + M.row(r, "WI_COW_BYTES")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

OUTSIDE_JEMALLOC = 7_700_000
"""RSS of an empty 7.0.15 outside jemalloc, bytes: ``used_memory_rss`` 12.17-12.27 MB
minus ``allocator_resident`` 4.50 MB, two starts on this project's VM."""


@leaf
def untracked(w):
    """Bytes of ``used_memory`` not placed in the arena: client structs and
    buffers, the AOF buffer."""
    return clients_memory(w) + w.I[AOF_BUF]


@leaf
def allocator_allocated(w):
    """jemalloc ``stats.allocated``, bytes: the arena's, the untracked bytes and
    the replication buffer's (its pages are the arena's, ``place_in_arena``)."""
    I = w.I
    allocated = I[AL_ALLOCATED] + untracked(w)
    if I[REPL_BACKLOG]:
        allocated += replication_memory(w)
    return allocated


@leaf
def allocator_active(w):
    """jemalloc ``stats.active``, bytes."""
    return w.I[AL_PAGES_ACTIVE] * PAGE + untracked(w)


@leaf
def allocator_resident(w):
    """jemalloc ``stats.resident``, bytes: active, dirty and metadata."""
    I = w.I
    return (allocator_active(w) + I[AL_PAGES_DIRTY] * PAGE + I[AL_META_BASE]
            + EXTENT_META * I[AL_EXTENTS])


@leaf
def used_memory_rss(w):
    """``used_memory_rss`` (``zmalloc_get_rss``), bytes: jemalloc's resident less
    the pad pages of the large extents in use, which no one writes (a value
    starts at a random cache line of its extent's first page and ends inside
    its size class: live, 10,000 values of 16 KB added 20,736 B of RSS each
    and 24,643 B of ``allocator_active``)."""
    I = w.I
    return I[RSS_BASE] + allocator_resident(w) - I[AL_LARGE_LIVE] * I[AL_LARGE_PAD] * PAGE


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """RSS outside jemalloc."""
    from redsim.model import state as S

    b.I[S.RSS_BASE] = OUTSIDE_JEMALLOC


def start(w, b) -> None:
    """jemalloc's metadata base: what makes the empty server's resident the
    measured ``STARTUP_RESIDENT`` once Redis's own allocations are placed
    (``arena.start`` runs first). Written through ``b.I`` (the same array as
    ``w.I``), which records that a step set this config scalar."""
    from redsim.model import state as S

    I = w.I
    b.I[S.AL_META_BASE] = max(0, STARTUP_RESIDENT - int(I[S.AL_PAGES_ACTIVE]) * PAGE
                              - EXTENT_META * int(I[S.AL_EXTENTS]))
    # OUTSIDE_JEMALLOC was measured as RSS less jemalloc's resident, which counts
    # the startup extents' untouched pad pages: keep the empty server's RSS.
    b.I[S.RSS_BASE] = OUTSIDE_JEMALLOC + int(I[S.AL_LARGE_LIVE] * I[S.AL_LARGE_PAD]) * PAGE
