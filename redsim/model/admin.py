"""Commands a scenario's events send to the server: DEBUG POPULATE, DEL of a key
pattern, DEL or UNLINK of a big key, FLUSHALL, MEMORY PURGE and CONFIG SET.

Follows ``src/debug.c:debugCommand`` (``DEBUG POPULATE count prefix size``: keys
``key:0`` .. ``key:<count-1>``, values ``value:<i>`` padded to ``size`` bytes,
existing keys skipped), ``src/db.c:delCommand``, ``src/db.c:flushallCommand``
(7.0: ``emptyData``, the dicts' tables freed) and ``src/object.c:memoryCommand``
(``MEMORY PURGE``: jemalloc's ``arena.<i>.purge``). DEL and UNLINK of a big
key follow ``src/db.c:delGenericCommand`` (``db.db_delete``: a lazy delete
hands a big value to the lazyfree thread). Like BGSAVE, an event's
command is read with the main thread's next file events and runs there,
blocking it for its whole length.

No Redis source for the key patterns: ``del`` deletes, in ascending order of the
key's number, the odd-, even- or every k-th numbered keys, the first (lowest
numbered) fraction of them, or each with a given probability (the keyspace's
own generator), of the populated keys (``key:<i>``
is number i) or of one client group's key ids; each as a client sending ``DEL``
one key at a time would, at the DEL command's cost.

Deviations: the DELs of a pattern run back to back as one blocking command
(a client would send them interleaved with other traffic); FLUSHALL's
synchronous save when save points are set is not modelled (an empty dataset
saves in well under a millisecond); MEMORY PURGE costs no main-thread time
(its ``madvise`` calls are in the OS, not measured).
"""

from __future__ import annotations

import numpy as np

from redsim.model import lazyfree
from redsim.model.arena import purge_all
from redsim.model.bigkeys import row_of
from redsim.model.commands import COMMAND_IDS
from redsim.model.db import NO_TTL, db_add, db_delete, key_exists, resize_table
from redsim.model.defrag import scan_mask, scan_position
from redsim.model.jit import leaf, step
from redsim.model.main_thread import busy
from redsim.model.memory import POINTER
from redsim.model.objects import key_requests
from redsim.model.propagate import propagate_del
from redsim.model.protocol import digits
from redsim.model.rng import server_uniform
from redsim.model.state import (
    ADMIN_ARG,
    ADMIN_FRACTION,
    ADMIN_HI,
    ADMIN_LO,
    ADMIN_N,
    ADMIN_REQ,
    C_FLUSH_KEY,
    C_LF_JOB,
    KS_BUCKETS,
    KS_BUCKETS_H,
    KS_EXP_BUCKETS,
    KS_EXP_BUCKETS_H,
    KS_KEYS,
    LAZY_USER_DEL,
    LAZY_USER_FLUSH,
    MEM_DATASET,
    POP_LO,
    POP_ROWS,
    W_CPU_COMMANDS,
)

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "ADMIN_REQ", "i8", "-", "state",
     "an event's command waiting for the next file events: 0 none, else an ADMIN_* code"),
    ("I", "ADMIN_N", "i8", "-", "state",
     "populate: keys; del: the pattern (DEL_*); del of a key: 1 for UNLINK"),
    ("I", "ADMIN_ARG", "i8", "-", "state",
     "populate: value size, B; del every: k; flushall: 1 ASYNC, 0 SYNC, -1 neither"),
    ("I", "ADMIN_LO", "i8", "-", "state",
     "del: the first key row of the keys it numbers; del of a key: its row"),
    ("I", "ADMIN_HI", "i8", "-", "state", "del: one past their last key row"),
    ("F", "ADMIN_FRACTION", "f8", "-", "state", "del random: each key's probability"),
    ("F", "C_FLUSH_KEY", "f8", "s", "config",
     "CPU to free one key of a FLUSHALL (emptyData's dictEmpty), s; on the bio thread when "
     "the flush is ASYNC"),
)

ADMIN_POPULATE = 1
ADMIN_DEL = 2
ADMIN_FLUSHALL = 3
ADMIN_PURGE = 4
ADMIN_DEL_KEY = 5
ADMIN_CODES = {"populate": ADMIN_POPULATE, "del": ADMIN_DEL, "flushall": ADMIN_FLUSHALL,
               "memory-purge": ADMIN_PURGE, "unlink": ADMIN_DEL_KEY}
DEL_ODD = 0
DEL_EVEN = 1
DEL_EVERY = 2
DEL_RANDOM = 3
DEL_FIRST = 4
DEL_PATTERNS = {"odd": DEL_ODD, "even": DEL_EVEN, "every": DEL_EVERY, "random": DEL_RANDOM,
                "first": DEL_FIRST}
KEY_PREFIX = 4  # "key:"
VALUE_PREFIX = 6  # "value:"
SET = COMMAND_IDS["SET"]
DEL = COMMAND_IDS["DEL"]
UNLINK = COMMAND_IDS["UNLINK"]


@leaf
def _cost(w, cmd, nbytes):
    return w.tb_cmd_fixed[cmd] + w.tb_cmd_per_byte[cmd] * nbytes


@step
def populate(w, n, size):
    """``DEBUG POPULATE n key size``; returns the main-thread seconds it took."""
    I = w.I
    spent = 0.0
    for i in range(min(n, I[POP_ROWS])):
        k = I[POP_LO] + i
        if key_exists(w, k):
            continue
        vlen = max(size, VALUE_PREFIX + digits(i))
        db_add(w, k, KEY_PREFIX + digits(i), vlen, NO_TTL)
        spent += _cost(w, SET, vlen)
    return spent


@leaf
def _chosen(w, i, n, pattern, every, fraction):
    """Whether key number ``i`` of ``n`` is deleted."""
    if pattern == DEL_ODD:
        return i % 2 == 1
    if pattern == DEL_EVEN:
        return i % 2 == 0
    if pattern == DEL_EVERY:
        return i % every == 0
    if pattern == DEL_FIRST:
        return i < fraction * n
    return server_uniform(w) < fraction


@step
def delete_pattern(w, lo, hi, pattern, every, fraction):
    """``DEL`` of the keys of rows ``lo`` .. ``hi - 1`` the pattern picks, in
    order; returns the main-thread seconds it took."""
    spent = 0.0
    for k in range(lo, hi):
        if key_exists(w, k) and _chosen(w, k - lo, hi - lo, pattern, every, fraction):
            spent += db_delete(w, k, np.bool_(False))[1]  # one db_delete
            propagate_del(w)
            spent += _cost(w, DEL, 0)
    return spent


@step
def delete_key(w, k, unlink):
    """``DEL`` (``unlink`` 0) or ``UNLINK`` (1) of key row ``k``, a big key;
    returns the main-thread seconds it took (nothing to do if it is gone)."""
    spent = _cost(w, UNLINK if unlink else DEL, 0)
    if key_exists(w, k):
        spent += db_delete(w, k, unlink == 1 or w.I[LAZY_USER_DEL] == 1)[1]
        propagate_del(w)
    return spent


@step
def flushall(w, lazy):
    """``FLUSHALL``: every key freed, then the dicts' tables; returns the
    main-thread seconds it took. ``dictEmpty`` frees bucket by bucket, so in
    the order of the keys' hashes, unrelated to the order they were written in
    (which decides what the thread cache is left holding); the defrag scan's
    bijection stands for it. ``lazy`` (``FLUSHALL ASYNC``, ``emptyDbAsync``):
    the bio thread does the same work, at the same cost, as one job holding
    every key, and the main thread only queues it (``lazyfree.py``)."""
    I = w.I
    held = I[MEM_DATASET] + POINTER * (I[KS_BUCKETS] + I[KS_EXP_BUCKETS])
    spent = 0.0
    n = I[KS_KEYS]
    keys = np.empty(n, np.int64)
    for i in range(n):
        keys[i] = w.ks_dense[i]
    mask = scan_mask(n)
    for x in range(mask + 1):
        p = scan_position(x, mask)
        if p < n:
            spent += db_delete(w, keys[p], np.bool_(False))[1] + w.F[C_FLUSH_KEY]
    resize_table(w, KS_BUCKETS, KS_BUCKETS_H, 0)
    resize_table(w, KS_EXP_BUCKETS, KS_EXP_BUCKETS_H, 0)
    propagate_del(w)
    if lazy and lazyfree.queue_job(w, 0, held, spent, n):
        return w.F[C_LF_JOB]
    return spent


@step
def admin_command(w):
    """Run the event's command that is waiting (``ADMIN_REQ``)."""
    I = w.I
    req = I[ADMIN_REQ]
    I[ADMIN_REQ] = 0
    spent = 0.0
    if req == ADMIN_POPULATE:
        spent = populate(w, I[ADMIN_N], I[ADMIN_ARG])
    elif req == ADMIN_DEL:
        spent = delete_pattern(w, I[ADMIN_LO], I[ADMIN_HI], I[ADMIN_N], I[ADMIN_ARG],
                               w.F[ADMIN_FRACTION])
    elif req == ADMIN_DEL_KEY:
        spent = delete_key(w, I[ADMIN_LO], I[ADMIN_N])
    elif req == ADMIN_FLUSHALL:
        # getFlushCommandFlags: a bare FLUSHALL is ASYNC with lazyfree-lazy-user-flush
        spent = flushall(w, I[ADMIN_ARG] == 1 or (I[ADMIN_ARG] == -1 and I[LAZY_USER_FLUSH] == 1))
    elif req == ADMIN_PURGE:
        purge_all(w)
    busy(w, W_CPU_COMMANDS, spent)


# ---- configuration and requests (Python) -----------------------------------------------


def populate_demand(scenario) -> tuple[np.ndarray, np.ndarray]:
    """The allocations of the populate events' keys (``objects.key_requests``),
    for sizing the arena's slab arrays (their key rows: ``db.first_rows``)."""
    sizes, counts = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for ev in scenario.events:
        if ev.do == "populate":
            i = np.arange(int(ev.keys))
            vlens = np.maximum(int(ev.value_size), VALUE_PREFIX + np.char.str_len(
                i.astype(str)))
            s, c = key_requests(KEY_PREFIX + len(str(max(int(ev.keys) - 1, 0))), vlens, 0)
            sizes.append(s)
            counts.append(c)
    return np.concatenate(sizes), np.concatenate(counts)


def request(world, event, scenario) -> None:
    """Queue a scenario event's command for the main thread's next file events;
    a ``config-set`` takes effect at once (its CPU, a few µs, is not charged)."""
    from redsim.model import state as S

    if event.do == "config-set":
        # CONFIG SET: the schema parsed each directive and named the scalar its
        # declaration says it writes (ScenarioEvent.settings).
        for scalar, value in event.settings:
            world.I[S.LAYOUT.index[scalar]] = value
        return
    I = world.I
    I[S.ADMIN_REQ] = ADMIN_CODES[event.do]
    if event.key is not None:  # DEL or UNLINK of a big key
        I[S.ADMIN_REQ] = ADMIN_DEL_KEY
        I[S.ADMIN_LO] = row_of(scenario, world, event.key)
        I[S.ADMIN_N] = 1 if event.do == "unlink" else 0
    elif event.do == "populate":
        I[S.ADMIN_N] = int(event.keys)
        I[S.ADMIN_ARG] = int(event.value_size)
    elif event.do == "del":
        I[S.ADMIN_N] = DEL_PATTERNS[event.pattern]
        I[S.ADMIN_ARG] = int(event.every or 1)
        world.F[S.ADMIN_FRACTION] = float(event.fraction or 0.0)
        if event.group is None:
            I[S.ADMIN_LO] = I[S.POP_LO]
            I[S.ADMIN_HI] = I[S.POP_LO] + I[S.POP_ROWS]
        else:
            grp = next(g for g in scenario.clients if g.name == event.group)
            I[S.ADMIN_LO], I[S.ADMIN_HI] = 0, int(grp.keyspace.keys)
    elif event.do == "flushall":  # FLUSHALL ASYNC, SYNC, or bare (-1)
        I[S.ADMIN_ARG] = {"async": 1, "sync": 0, None: -1}[event.mode]


FLUSH_KEY_US = 0.29
"""FLUSHALL's CPU per key, µs: Debian's Redis 7.0.15 on the 2-vCPU
AMD EPYC VM, ``FLUSHALL SYNC`` of ``DEBUG POPULATE 1000000 key 10`` took
282-321 ms over two sittings (``tests/test_flushall_live.py`` measures it
again), and ``FLUSHALL ASYNC``'s bio thread drained the same keys in 305-331 ms."""


def configure(b) -> None:
    """FLUSHALL's per-key cost (``engine.cpu.scale`` applies), and the populate
    events' keys' allocations for the arena's sizing (``b.slab_demand``)."""
    from redsim.model import state as S
    from redsim.model.blueprint import US

    b.F[S.C_FLUSH_KEY] = FLUSH_KEY_US * US * b.scenario.engine.cpu.scale
    b.slab_demand.append(populate_demand(b.scenario))
