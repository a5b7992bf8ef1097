"""Active defrag (``activedefrag``): moving allocations out of sparsely used slabs.

Follows ``src/defrag.c`` of 7.0 (6.2 is the same for string keys):
``activeDefragCycle`` (run from ``databasesCron``, after the slow expire cycle),
``computeDefragCycles`` and ``getAllocatorFragmentation``, ``defragScanCallback``
with ``defragKey`` and ``activeDefragStringOb``, ``defragDictBucketCallback``;
the per-allocation decision is jemalloc's (``arena.defrag_hint``, Redis's
``je_get_defrag_hint``) and the move is ``activeDefragAlloc`` (``arena.defrag_move``).

- Once a second (``run_with_period(1000)``: every ``1000 / (1000 / hz)`` cron
  calls) ``computeDefragCycles`` reads the allocator's fragmentation,
  ``frag% = active / allocated × 100 − 100`` and ``frag_bytes = active −
  allocated`` (``allocator_frag_ratio``/``_bytes``). Not running, it starts
  only when ``frag% ≥ active-defrag-threshold-lower`` and ``frag_bytes ≥
  active-defrag-ignore-bytes``; its effort is ``cycle-min`` + (frag% − lower)
  × (max − min) / (upper − lower), truncated and clamped to [min, max] %, and
  a running scan may raise it, never lower it.
- Each cron call while running may spend ``effort % / hz`` of the main thread
  (``timelimit``), scanning keys and, for each, asking the hint about every
  allocation the key holds, in ``dictScan``'s order: the main dictEntry (the
  bucket callback), then ``defragKey``: the key's sds, its expires entry, the
  value's robj (an embstr is one allocation) and a raw value's sds. A move is
  a hit, a refusal a miss (the main dictEntry's moves are not counted, as in
  Redis); a key with a hit is a key hit. The time is checked every 16 buckets
  (``++iterations > 16``), so a cycle overruns its limit by at most that.
- A scan of db 0 that reaches its end stops the cycle; the next 15 cron calls
  each scan one of the other (empty) databases of the default ``databases
  16`` and stop; the one after ends the pass (``active_defrag_running = 0``)
  and, if the fragmentation still calls for it, starts the next pass at once
  within the time left.
- Nothing runs while a fork child exists (``hasActiveChildProcess``), and
  ``activedefrag no`` mid-pass drops the pass.

The keyspace is scanned in a fixed pseudo-random order of the dense key
positions (``ks_dense``; a bijection of the positions below the next power of
two, fixed at a pass's start), as ``dictScan`` meets keys in hash order,
unrelated to the order their allocations were made in.

Costs: ``engine.cpu.defrag-key`` per key scanned (the bucket step, the dict
entry and robj reads, five hint look-ups, each a jemalloc radix-tree lookup
under the bin's lock) and ``engine.cpu.defrag-move`` per allocation moved
(``zmalloc_no_tcache`` and ``zfree_no_tcache`` under the bin lock) plus its
bytes copied at ``COPY_BYTES_PER_S``. Both are estimates: Debian's Redis links
the system jemalloc, which lacks the hint, and refuses ``activedefrag yes``, so
they could not be measured here.

Deviations: the dense positions move when a key is deleted during a pass (the
last one fills the hole), so such a pass can miss or revisit a key, as
``dictScan`` can revisit keys across a rehash; the main dict's and the expires
dict's bucket arrays (large allocations) are never moved, as Redis's hint
refuses extents; ``active-defrag-max-scan-fields`` bounds the scan of big
collections (``defragLater``) and is accepted but has nothing to bound, every
key being a string.
"""

from __future__ import annotations

from redsim.model import latency
from redsim.model.arena import defrag_move, handle_bin, hi_handle, lo_handle, pair
from redsim.model.jit import leaf, step
from redsim.model.rss import allocator_active, allocator_allocated
from redsim.model.state import (
    C_DF_KEY,
    C_DF_MOVE,
    CHILD,
    CHILD_NONE,
    CRONLOOPS,
    DF_CURSOR,
    DF_DB,
    DF_ENABLED,
    DF_IGNORE_BYTES,
    DF_LOWER,
    DF_MASK,
    DF_MAX,
    DF_MIN,
    DF_RUNNING,
    DF_UPPER,
    HZ,
    KS_KEYS,
    STAT_DF_HITS,
    STAT_DF_KEY_HITS,
    STAT_DF_KEY_MISSES,
    STAT_DF_MISSES,
    STAT_DF_SCANNED,
    TC_ON,
    WI_DF_HITS,
    T,
)
from redsim.model.tcache import alloc_event, dalloc_event
from redsim.observe import metrics as M
from redsim.observe.bins import count

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "C_DF_KEY", "f8", "s", "config", "CPU per key active defrag scans, s"),
    ("F", "C_DF_MOVE", "f8", "s", "config",
     "CPU per allocation active defrag moves, besides the copy, s"),
    ("I", "DF_ENABLED", "i8", "-", "config", "activedefrag: 1 yes, 0 no"),
    ("I", "DF_IGNORE_BYTES", "i8", "B", "config",
     "active-defrag-ignore-bytes: no pass starts below this many fragmentation bytes, B"),
    ("I", "DF_LOWER", "i8", "%", "config",
     "active-defrag-threshold-lower: no pass starts below this fragmentation, %"),
    ("I", "DF_UPPER", "i8", "%", "config",
     "active-defrag-threshold-upper: at this fragmentation the effort is cycle-max, %"),
    ("I", "DF_MIN", "i8", "%", "config", "active-defrag-cycle-min: least effort, % of the CPU"),
    ("I", "DF_MAX", "i8", "%", "config", "active-defrag-cycle-max: most effort, % of the CPU"),
    ("I", "DF_RUNNING", "i8", "%", "state",
     "server.active_defrag_running: the pass's effort, % of the main thread; 0 idle"),
    ("I", "DF_CURSOR", "i8", "-", "state",
     "the pass's scan cursor over db 0 (0: not started or finished)"),
    ("I", "DF_MASK", "i8", "-", "state",
     "the pass's scan space - 1: a power of two at least db 0's keys at its start"),
    ("I", "DF_DB", "i8", "-", "state",
     "the pass's database (current_db): -1 between passes, 0 db 0, 1..15 the empty ones"),
    ("I", "STAT_DF_HITS", "i8", "-", "counter", "active_defrag_hits: allocations moved"),
    ("I", "STAT_DF_MISSES", "i8", "-", "counter",
     "active_defrag_misses: allocations the hint left where they are"),
    ("I", "STAT_DF_KEY_HITS", "i8", "-", "counter",
     "active_defrag_key_hits: keys with an allocation moved"),
    ("I", "STAT_DF_KEY_MISSES", "i8", "-", "counter",
     "active_defrag_key_misses: keys scanned with nothing moved"),
    ("I", "STAT_DF_SCANNED", "i8", "-", "counter", "keys active defrag scanned"),
    ("wf", "W_CPU_DEFRAG", "f8", "s", "cpu", "main-thread time in activeDefragCycle"),
    ("wi", "WI_DF_HITS", "i8", "-", "count", "allocations active defrag moved in the window"),
    ("wi", "WI_DF_RUNNING", "i8", "%", "gauge",
     "active_defrag_running at the window's end: the pass's effort, %"),
)


RESULTS = (
    M.Metric("active_defrag_hits", "-", M.SUM, "INFO active_defrag_hits",
             value=M.counter("STAT_DF_HITS"),
             line=M.Line(430, "defrag: keys scanned / moved allocations", lambda s: (
                 f"{s['active_defrag_scanned']:,} / {s['active_defrag_hits']:,}"),
                 when=lambda s: bool(s.get("active_defrag_scanned")))),
    M.Metric("active_defrag_misses", "-", M.SUM, "INFO active_defrag_misses",
             value=M.counter("STAT_DF_MISSES")),
    M.Metric("active_defrag_key_hits", "-", M.SUM, "INFO active_defrag_key_hits",
             value=M.counter("STAT_DF_KEY_HITS")),
    M.Metric("active_defrag_key_misses", "-", M.SUM, "INFO active_defrag_key_misses",
             value=M.counter("STAT_DF_KEY_MISSES")),
    M.Metric("active_defrag_scanned", "-", M.SUM, "INFO active_defrag_scanned",
             value=M.counter("STAT_DF_SCANNED"),
             line=M.Line(420, "  active defrag", lambda s: f"{s['cpu_defrag_share']:.1%}",
                         when=lambda s: bool(s.get("active_defrag_scanned")))),
    M.Column(280, "active_defrag_running", "%", "the defrag pass's effort",
             M.gauge("WI_DF_RUNNING")),
    M.Column(290, "active_defrag_hits", "-", "INFO active_defrag_hits", M.total("WI_DF_HITS")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

DBNUM = 16
"""``databases``' default: a pass visits db 1..15 too, one cron call each."""
CHECK_EVERY = 16
"""Buckets scanned between time checks (``++iterations > 16``)."""
COPY_BYTES_PER_S = 10e9
"""memcpy of a moved region, bytes/s (a core's copy bandwidth within its caches)."""
_MIX1 = 0x5BD1E995  # odd multipliers of the scan order's bijection (< 2^31: no overflow)
_MIX2 = 0x2C1B3C6D


@leaf
def effort(frag_pct, lower, upper, cmin, cmax):
    """``computeDefragCycles``' CPU effort for ``frag_pct`` %: INTERPOLATE then
    LIMIT, truncated to an int as C's assignment does. With ``upper == lower``
    Redis divides by zero and x86 converts the ±inf (or NaN) to INT_MIN, which
    LIMIT raises to ``cmin``."""
    if upper == lower:
        return cmin
    pct = int(cmin + (frag_pct - lower) * (cmax - cmin) / (upper - lower))
    if pct < cmin:
        return cmin
    if pct > cmax:
        return cmax
    return pct


@leaf
def compute_defrag_cycles(w):
    """``computeDefragCycles``: start a pass, or raise the running one's effort."""
    I = w.I
    allocated = allocator_allocated(w)
    active = allocator_active(w)
    frag_pct = active / allocated * 100.0 - 100.0
    if I[DF_RUNNING] == 0 and (frag_pct < I[DF_LOWER]
                               or active - allocated < I[DF_IGNORE_BYTES]):
        return
    pct = effort(frag_pct, I[DF_LOWER], I[DF_UPPER], I[DF_MIN], I[DF_MAX])
    if pct > I[DF_RUNNING]:
        I[DF_RUNNING] = pct


@leaf
def scan_mask(n):
    """The mask ``scan_position`` walks to visit ``n`` positions: the least power
    of two ≥ n, less one."""
    mask = 1
    while mask < n:
        mask <<= 1
    return mask - 1


@leaf
def scan_position(x, mask):
    """The dense key position the scan visits at step ``x``: a bijection of
    0..mask (mask + 1 a power of two): odd multiplications and an xor-shift,
    each one-to-one modulo a power of two."""
    x = (x * _MIX1) & mask
    x ^= x >> 7
    return (x * _MIX2) & mask


@leaf
def _move(w, h):
    """One ``activeDefragAlloc``: the new handle (0: not moved), its stats and
    its CPU, s."""
    h2 = defrag_move(w, h)
    if h2 == 0:
        if h > 0:
            w.I[STAT_DF_MISSES] += 1
        return 0, 0.0
    usize = w.al_reg_size[handle_bin(h2)]
    if w.I[TC_ON]:  # zmalloc_no_tcache and zfree_no_tcache still tick the GC's clocks
        alloc_event(w, usize)
        dalloc_event(w, usize)
    return h2, w.F[C_DF_MOVE] + usize / COPY_BYTES_PER_S


@leaf
def _move_pair(w, v):
    """``_move`` of both handles of a key-row ``pair``, the high one first (the
    dictEntry before the key's sds; the robj before a raw value's sds): the new
    pair, whether each moved, and the CPU, s."""
    hi, c_hi = _move(w, hi_handle(v))
    lo, c_lo = _move(w, lo_handle(v))
    new = pair(lo if lo > 0 else lo_handle(v), hi if hi > 0 else hi_handle(v))
    return new, 1 if lo > 0 else 0, 1 if hi > 0 else 0, c_hi + c_lo


@leaf
def defrag_key(w, k):
    """``defragDictBucketCallback`` and ``defragKey`` for string key ``k``:
    returns (allocations moved that Redis counts, CPU spent in moves, s)."""
    v, hits, _, cpu = _move_pair(w, w.ks_akey[k])  # the key's sds counts, the dictEntry not
    w.ks_akey[k] = v
    ttl, c = _move(w, w.ks_attl[k])
    if ttl > 0:
        w.ks_attl[k] = ttl
        hits += 1
    v, raw, obj, c_val = _move_pair(w, w.ks_aval[k])
    w.ks_aval[k] = v
    return hits + raw + obj, cpu + c + c_val


@step
def active_defrag_cycle(w):
    """``activeDefragCycle``, from serverCron; returns the main-thread time it
    took, s (the caller charges it)."""
    I = w.I
    F = w.F
    if I[DF_ENABLED] == 0:
        if I[DF_RUNNING] > 0:  # disabled mid-pass: start afresh next time
            I[DF_RUNNING] = 0
            I[DF_CURSOR] = 0
            I[DF_DB] = -1
        return 0.0
    if I[CHILD] != CHILD_NONE:
        return 0.0  # "Defragging memory while there's a fork will just do damage."
    hz = I[HZ]
    if I[CRONLOOPS] % (1000 // (1000 // hz)) == 0:  # run_with_period(1000)
        compute_defrag_cycles(w)
    if I[DF_RUNNING] == 0:
        return 0.0
    timelimit = (1000000 * I[DF_RUNNING] // hz // 100) * 1e-6
    if timelimit <= 0.0:
        timelimit = 1e-6
    cpu = 0.0
    hits0 = I[STAT_DF_HITS]
    while True:
        if I[DF_CURSOR] == 0:  # a database's scan starts
            db = I[DF_DB] + 1
            if db >= DBNUM:  # every database scanned: the pass is done
                I[DF_DB] = -1
                I[DF_RUNNING] = 0
                compute_defrag_cycles(w)  # another pass right away, if still needed
                if I[DF_RUNNING] != 0 and cpu < timelimit:
                    continue
                break
            I[DF_DB] = db
            if db > 0:
                break  # an empty database: dictScan returns cursor 0, the cycle ends
            I[DF_MASK] = scan_mask(I[KS_KEYS])
        iterations = 0
        while True:
            x = I[DF_CURSOR]
            p = scan_position(x, I[DF_MASK])
            if p < I[KS_KEYS]:
                k = w.ks_dense[p]
                hits, c = defrag_key(w, k)
                cpu += F[C_DF_KEY] + c
                I[STAT_DF_HITS] += hits
                I[STAT_DF_SCANNED] += 1
                if hits > 0:
                    I[STAT_DF_KEY_HITS] += 1
                else:
                    I[STAT_DF_KEY_MISSES] += 1
            x = x + 1 if x < I[DF_MASK] else 0
            I[DF_CURSOR] = x
            iterations += 1
            if x == 0:
                break  # db 0 scanned: the cycle ends here
            if iterations > CHECK_EVERY:
                iterations = 0
                if cpu > timelimit:
                    break
        break
    moved = I[STAT_DF_HITS] - hits0
    if moved > 0:
        count(w, WI_DF_HITS, F[T], moved)
    latency.add_sample(w, latency.LM_ACTIVE_DEFRAG_CYCLE, cpu)
    return cpu


# ---- configuration (Python, once per run) ---------------------------------------------

def configure(b) -> None:
    """``activedefrag`` and its thresholds, and active defrag's CPU costs. A
    ``config-set`` event may rewrite these directives' scalars during the run:
    each field's ``Directive(runtime=...)`` in ``config/schema/server.py`` names its
    scalar, and ``model/admin.py`` writes it."""
    from redsim.model import state as S
    from redsim.model.blueprint import US

    sv = b.scenario.server
    cpu = b.scenario.engine.cpu
    b.F[S.C_DF_KEY] = cpu.defrag_key * US * cpu.scale
    b.F[S.C_DF_MOVE] = cpu.defrag_move * US * cpu.scale
    b.I[DF_ENABLED] = int(sv.activedefrag)
    b.I[DF_IGNORE_BYTES] = sv.active_defrag_ignore_bytes
    b.I[DF_LOWER] = sv.active_defrag_threshold_lower
    b.I[DF_UPPER] = sv.active_defrag_threshold_upper
    b.I[DF_MIN] = sv.active_defrag_cycle_min
    b.I[DF_MAX] = sv.active_defrag_cycle_max
    b.I[S.DF_DB] = -1
