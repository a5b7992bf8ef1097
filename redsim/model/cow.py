"""Copy-on-write after ``fork()``: which pages the parent's writes copy, and
what the copies cost (reference §5.4; the mechanism is described in
``model/fork.py``).

No Redis source: the copies are made by the Linux kernel's page-fault handler,
not by Redis. What Redis reports of them, ``current_cow_size``, the child
measures as its private dirty memory (``src/server.c:sendChildCowInfo`` through
``src/childinfo.c:sendChildInfoGeneric``, from
``src/zmalloc.c:zmalloc_get_private_dirty``); Redis's part in what is copied —
no LRU/LFU update and no dict resize while a child lives — is in ``db.py``.

The bitmap ``pg_cow`` has one bit per page that existed at the fork (4 KB,
or 2 MB with transparent huge pages on a kernel that copies them whole,
``host.thp-cow: copy-huge``): set once the parent copied it.

Deviation: from 7.0, the child gives back the pages of each value it has
saved (``src/rdb.c:rdbSaveDb`` and ``src/aof.c:rewriteAppendOnlyFileRio`` call
``src/object.c:dismissObject`` after every key; ``src/server.c:dismissMemoryInChild``
for client buffers), so a later write by the parent to such a page copies
nothing. Not modelled: only allocations of a page or more can be given back
(``dismissMemory``), so values under 4 KB (S0's ~2.3 KB) are unaffected; with
larger values the model overstates ``current_cow_size`` by the pages of keys
the child had already saved (not measured).
"""

from __future__ import annotations

from redsim.model.jit import leaf
from redsim.model.main_thread import busy
from redsim.model.state import (
    CHILD,
    CHILD_NONE,
    COW_COPY_B,
    COW_CPU,
    COW_FAULT,
    COW_PAGES,
    N_PAGES,
    PAGE_SHIFT,
    W_CPU_COW,
)
from redsim.observe import metrics as M

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "COW_FAULT", "f8", "s", "config",
     "a copy-on-write fault's fixed cost (trap, page allocation, PTE update; host.cow-fault), s"),
    ("F", "COW_COPY_B", "f8", "s/B", "config",
     "copy-on-write copy time per byte of the page (1 / host.cow-copy-bandwidth), s/B"),
    ("F", "COW_CPU", "f8", "s", "state",
     "copy-on-write fault time accumulated by the command being run, s"),
    ("I", "N_PAGES", "i8", "-", "state",
     "pages of RSS at the fork (bounded by the bitmap), that key rows hash onto"),
    ("I", "COW_PAGES", "i8", "-", "state",
     "pages the parent copied since the fork (current_cow_size = this << PAGE_SHIFT)"),
    ("wf", "W_CPU_COW", "f8", "s", "cpu",
     "main-thread time in copy-on-write faults while a child lives"),
    ("wi", "WI_COW_BYTES", "i8", "B", "gauge",
     "current_cow_size: bytes the parent copied on write, at the window's end"),
    ("pg", "cow", "i8", "-", "state",
     "copy-on-write bitmap: bit p of word p >> 5 set once page p was copied"),
)


RESULTS = (
    M.Metric("cow_peak_bytes", "B", M.MAX, "copy-on-write bytes, largest sample",
             value=M.peak("current_cow_size"),
             line=M.Line(330, "copy-on-write peak", lambda s: f"{M.mb(s['cow_peak_bytes'])} MB",
                         when=lambda s: bool(s.get("aof_enabled") or s.get("total_forks")))),
    M.Metric("cow_bytes_last_child", "B", M.SUM, "bytes the last fork child copied",
             made_by="_persistence_summary"),
    M.Column(560, "current_cow_size", "B", "INFO current_cow_size", M.gauge("WI_COW_BYTES")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""


@leaf
def page_of(w, k, salt):
    """The page (of the ``N_PAGES`` that existed at the fork) holding key row
    k's dict entry (salt 0) or value (salt 1): a fixed hash of the row."""
    h = ((k + 1) * 2654435761 + salt * 0x5BD1E995) & 0xFFFFFFFF
    h ^= h >> 15
    h = (h * 0x7FEB352D) & 0xFFFFFFFF
    h ^= h >> 13
    return h % w.I[N_PAGES]


@leaf
def cow_touch(w, k, salt):
    """The parent writes to key row k's entry (salt 0) or value (salt 1): the
    first write to its page since the fork copies the page."""
    I = w.I
    if I[CHILD] == CHILD_NONE:
        return
    p = page_of(w, k, salt)
    word = p >> 5
    bit = 1 << (p & 31)
    if w.pg_cow[word] & bit:
        return
    w.pg_cow[word] |= bit
    I[COW_PAGES] += 1
    w.F[COW_CPU] += w.F[COW_FAULT] + (1 << I[PAGE_SHIFT]) * w.F[COW_COPY_B]


@leaf
def cow_bytes(w):
    """``current_cow_size``: bytes the parent copied since the fork."""
    return w.I[COW_PAGES] << w.I[PAGE_SHIFT]


@leaf
def charge_cow(w):
    """Put the copy-on-write faults of the work just done on the main thread."""
    F = w.F
    if F[COW_CPU] > 0.0:
        busy(w, W_CPU_COW, F[COW_CPU])
        F[COW_CPU] = 0.0


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """The host's copy-on-write costs: ``host.cow-fault`` per page fault and
    ``host.cow-copy-bandwidth`` for the copy; the page bitmap, empty, of the
    ``PG_WORDS`` words ``fork.configure`` sized for the key rows."""
    import numpy as np

    from redsim.model import state as S

    host = b.scenario.host
    b.fill("pg", cow=np.zeros(int(b.I[S.PG_WORDS]), np.int64))
    b.F[COW_FAULT] = host.cow_fault
    b.F[COW_COPY_B] = 1.0 / host.cow_copy_bandwidth
