"""``activeExpireCycle`` (``src/expire.c``): deleting expired keys nobody reads.

Follows ``src/expire.c:activeExpireCycle`` and
``src/expire.c:activeExpireCycleTryExpire``, called from
``src/server.c:databasesCron`` (slow) and ``src/server.c:beforeSleep`` (fast);
6.2 and 7.0 walk the expires dict's buckets with ``db->expires_cursor``, 7.2
with ``dictScan``.

Reference §4.2, with ``e = active-expire-effort − 1``:

- the **slow** cycle runs from serverCron each tick with a time limit of
  ``(25 + 2e) %`` of the tick (25 ms at hz 10); the **fast** cycle runs from
  beforeSleep, for at most ``1000 + 250e`` µs and not within twice that of the
  last one — and, as in 6.2 and 7.2 (issue #15410), only after a cycle that
  hit its time limit, because the stale-percentage trigger compares a
  fraction with a percentage and never fires;
- each loop samples ``20 + 5e`` keys of the expires dict from a persistent
  cursor, deletes those past their time, and the cycle repeats while more than
  ``10 − e`` % of a loop's samples had expired; the time is checked every 16
  loops; a dict less than 1 % full is skipped.

The expires dict's entries are kept in a pseudo-random order (each new entry
swaps into a hashed position), so the cursor meets keys in no particular
expiry order, as hash order does. Costs: ``engine.cpu.expire-sample`` per key
looked at, ``engine.cpu.expire-delete`` per key deleted.
"""

from __future__ import annotations

from redsim.model import latency
from redsim.model.db import db_delete
from redsim.model.jit import leaf, step
from redsim.model.propagate import propagate_del
from redsim.model.state import (
    C_EXP_DELETE,
    C_EXP_SAMPLE,
    C_EXP_SAMPLE_MISS,
    EXP_CURSOR,
    EXP_EFFORT,
    EXP_LAST_FAST,
    EXP_TIMELIMIT_EXIT,
    HZ,
    KS_EXP_BUCKETS,
    KS_EXPIRES,
    LAZY_EXPIRE,
    STAT_EXPIRE_CAPPED,
    STAT_EXPIRED,
    WI_EXPIRED,
    T,
)
from redsim.observe import metrics as M
from redsim.observe.bins import count

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "C_EXP_SAMPLE", "f8", "s", "config",
     "CPU per expires-dict key looked at by activeExpireCycle, s"),
    ("F", "C_EXP_DELETE", "f8", "s", "config", "CPU per key deleted by activeExpireCycle, s"),
    ("F", "EXP_LAST_FAST", "f8", "s", "state",
     "when the last fast expire cycle started (last_fast_cycle), s; -1 before any"),
    ("I", "STAT_EXPIRED", "i8", "-", "counter",
     "server.stat_expiredkeys: keys expired (active and passive) since start"),
    ("I", "EXP_EFFORT", "i8", "-", "config",
     "active-expire-effort - 1 (effort in activeExpireCycle), 0 to 9"),
    ("I", "EXP_CURSOR", "i8", "-", "state",
     "position in the expires dict's entries where the next cycle samples (db->expires_cursor)"),
    ("I", "EXP_TIMELIMIT_EXIT", "i8", "-", "state",
     "1: the last cycle stopped at its time limit (timelimit_exit; lets a fast cycle run)"),
    ("I", "STAT_EXPIRE_CAPPED", "i8", "-", "counter",
     "server.stat_expired_time_cap_reached_count: cycles stopped at their time limit"),
    ("wf", "W_CPU_EXPIRE", "f8", "s", "cpu",
     "main-thread time in activeExpireCycle (slow and fast)"),
    ("wi", "WI_EXPIRED", "i8", "-", "count", "keys expired (active and passive) in the window"),
)


RESULTS = (
    M.Metric("expired_keys", "-", M.SUM, "INFO expired_keys", value=M.counter("STAT_EXPIRED")),
    M.Metric("expired_time_cap_reached_count", "-", M.SUM,
             "INFO expired_time_cap_reached_count", value=M.counter("STAT_EXPIRE_CAPPED")),
    M.Column(400, "expired_keys", "-", "INFO expired_keys", M.total("WI_EXPIRED")),
    M.Column(410, "expired_per_sec", "1/s", "keys expired per second", M.rate("WI_EXPIRED")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

KEYS_PER_LOOP = 20  # ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP
FAST_DURATION = 1000e-6  # ACTIVE_EXPIRE_CYCLE_FAST_DURATION, s
SLOW_TIME_PERC = 25  # ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC
ACCEPTABLE_STALE = 10  # ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE, %
CHECK_EVERY = 16  # loops between time checks


@leaf
def fast_duration(w):
    return FAST_DURATION + 250e-6 * w.I[EXP_EFFORT]


@step
def active_expire_cycle(w, fast):
    """One cycle; returns the CPU spent, s."""
    F = w.F
    I = w.I
    e = I[EXP_EFFORT]
    now = F[T]
    if fast:
        if not I[EXP_TIMELIMIT_EXIT]:
            return 0.0
        if now < F[EXP_LAST_FAST] + 2.0 * fast_duration(w):
            return 0.0
        F[EXP_LAST_FAST] = now
        limit = fast_duration(w)
    else:
        limit = (SLOW_TIME_PERC + 2 * e) / 100.0 / I[HZ]
    I[EXP_TIMELIMIT_EXIT] = 0
    n = I[KS_EXPIRES]
    if n == 0 or n * 100 < I[KS_EXP_BUCKETS]:
        return 0.0
    per_loop = KEYS_PER_LOOP + 5 * e
    stale = ACCEPTABLE_STALE - e
    cpu = 0.0
    loops = 0
    while True:
        sampled = 0
        expired = 0
        for _ in range(per_loop):
            n = I[KS_EXPIRES]
            if n == 0:
                break
            pos = I[EXP_CURSOR]
            if pos >= n:
                pos = 0
            k = w.ks_xdense[pos]
            sampled += 1
            cpu += F[C_EXP_SAMPLE] + F[C_EXP_SAMPLE_MISS]
            if w.ks_expire[k] < now:
                # The last entry moves into pos: look at pos again.
                _, free_cpu = db_delete(w, k, I[LAZY_EXPIRE] == 1)
                propagate_del(w)
                expired += 1
                cpu += F[C_EXP_DELETE] + free_cpu
                I[EXP_CURSOR] = pos
            else:
                I[EXP_CURSOR] = pos + 1
        if expired > 0:
            I[STAT_EXPIRED] += expired
            count(w, WI_EXPIRED, now, expired)
        loops += 1
        if loops % CHECK_EVERY == 0 and cpu > limit:
            I[EXP_TIMELIMIT_EXIT] = 1
            I[STAT_EXPIRE_CAPPED] += 1
            break
        if sampled == 0 or expired * 100 <= stale * sampled:
            break
    latency.add_sample(w, latency.LM_EXPIRE_CYCLE, cpu)  # the cycle's time, as Redis
    return cpu


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """``active-expire-effort`` and active expiry's CPU costs."""
    from redsim.model import state as S
    from redsim.model.blueprint import US

    cpu = b.scenario.engine.cpu
    b.F[S.C_EXP_SAMPLE] = cpu.expire_sample * US * cpu.scale
    b.F[S.C_EXP_DELETE] = cpu.expire_delete * US * cpu.scale
    b.I[S.EXP_EFFORT] = b.scenario.server.active_expire_effort - 1
    b.F[S.EXP_LAST_FAST] = -1.0
