"""How much a run allocates for its clients and keys, from the scenario alone.

No Redis source: the arithmetic shared by the configure steps that size the
kernel's arrays (``pools.configure``, ``sources.configure``,
``preload.plan``) and by validation, which refuses a run that would allocate
too much (``config/schema/``) before building anything. No numba, no numpy:
``redsim.config`` imports it.
"""

from __future__ import annotations

import math
from typing import Any

from redsim.model.commands import COMMANDS, EFFECT_COLLECTION, EFFECT_READ, EFFECT_WRITE

OPEN_SLOTS_CAP = 2_000_000
"""Most request slots an open-loop or recorded-trace group gets."""


def memoryless_group(grp: Any) -> bool:
    """Whether a group's sources run as one uniformized think clock
    (``clients.think_clock``): a closed loop with exponential think."""
    return grp.kind == "closed" and grp.think.kind == "exponential" and grp.think.mean > 0


def request_slots(grp: Any) -> int:
    """Request slots of group ``grp``: one per source of a closed or trace group; an
    open group (or a recorded trace) shares a list bounded by its pools and waiters
    (at most ``OPEN_SLOTS_CAP``), a memoryless closed group one per thread that can
    be out at once (its pools, their waiters, one more)."""
    if grp.kind == "open" or (grp.kind == "trace" and grp.trace_timing == "recorded"):
        return min(grp.processes * (grp.pool.max_size + grp.pool.max_waiters), OPEN_SLOTS_CAP)
    if memoryless_group(grp):
        return grp.processes * min(grp.threads, grp.pool.max_size + grp.pool.max_waiters + 1)
    return grp.processes * grp.threads


def nominal_rate(grp: Any, peak: bool = False) -> float | None:
    """Commands per second the group sends while Redis keeps up (an open group's
    first profile rate, or with ``peak`` its highest), or None if that depends on
    Redis's speed (closed without think time, traces)."""
    # Every request carries `pipeline` commands, whatever sends it.
    if grp.kind == "open":
        rates = [p.rate for p in grp.profile] if grp.profile else [grp.rate]
        return float(max(rates) if peak else rates[0]) * grp.pipeline
    if grp.kind == "closed" and grp.think.mean > 0:
        return grp.processes * grp.threads / float(grp.think.mean) * grp.pipeline
    return None


def stream_rates(grp: Any, rate: float) -> tuple[float, float, float]:
    """Writes landing on the key distribution, reads (key lookups) from it, and
    write-once keys created, per second, for the whole group at ``rate``
    commands/s. In a collection keyspace a collection command (HSET, HGET,
    LPUSH …) looks its one key up whatever its members (``lookupKeyRead`` /
    ``lookupKeyWrite`` touch the access time alike) and sets no TTL, so it
    counts as a read; in a string keyspace it touches no key."""
    total = sum(e.weight for e in grp.mix)
    f = grp.keyspace.write_once
    writes = reads = once = 0.0
    for e in grp.mix:
        share = rate * e.weight / total
        effect = COMMANDS[e.command.upper()].effect
        if effect == EFFECT_WRITE:
            writes += share * (e.keys - f)  # the first key is write-once with chance f
            once += share * f
        elif effect == EFFECT_READ:
            reads += share * e.keys
        elif effect == EFFECT_COLLECTION and grp.keyspace.type != "string":
            reads += share
    return writes, reads, once


def write_ttl(grp: Any) -> float:
    """The TTL the group's writes set, whole s (inf if none)."""
    ttls = [e.ttl for e in grp.mix if e.ttl and COMMANDS[e.command.upper()].effect
            == EFFECT_WRITE]
    return float(math.ceil(ttls[0])) if ttls else math.inf


def once_span(grp: Any) -> float:
    """How far back the write-once keys present at time 0 were written, s: the
    keyspace's history, or the writes' TTL if shorter (inf: no bound)."""
    history = grp.keyspace.history
    return min(math.inf if history is None else history, write_ttl(grp))


def once_fit(room: float, per_key: float) -> float:
    """Write-once keys to draw so that those fitting in ``room`` bytes are among
    them (5 % and 16 keys over ``room / per_key``)."""
    return 1.05 * max(room, 0.0) / per_key + 16


SPARE_ONCE = 1.25
"""Spare write-once rows per write-once key the run is expected to create."""

SPARE_WINDOW = 1800.0
"""s: a group that can hold no more write-once keys than it holds (maxmemory
full, or every key younger than its TTL present) still gets rows for this long
of creation, for the keys evicted or expired whose rows are not free yet and
for a keyspace that shrinks; past that the kernel grows the table
(``db.grow_write_once``), which changes nothing in the run."""


def write_once_spare(rate: float, duration: float, preloaded: float, cap: float) -> float:
    """Write-once rows, beyond the ``preloaded`` ones, a group creating ``rate``
    keys/s is given for ``duration`` s: ``SPARE_ONCE`` × the keys it will create,
    but no more than it can hold at once (``cap``: what fits in maxmemory, or
    ``rate`` × TTL; inf: no bound) less those preloaded, plus ``SPARE_WINDOW``
    of creation. An evicted or expired key's row is reused, so a cache at
    maxmemory needs as many rows after a day as after half an hour."""
    new = rate * duration
    if math.isfinite(cap):
        new = min(new, max(cap - preloaded, 0.0) + rate * min(duration, SPARE_WINDOW))
    return SPARE_ONCE * new


def write_once_rows_bound(grp: Any, maxmemory: int, duration: float) -> float:
    """About how many write-once key rows group ``grp`` takes (``preload.plan`` and
    ``preload.write_once_rows``): those preloaded (at its peak nominal rate, or what
    fits in maxmemory) plus the spare rows for the run (``write_once_spare``)."""
    if grp.keyspace.write_once <= 0:
        return 0.0
    rate = nominal_rate(grp, peak=True)
    if rate is None:
        return 0.0  # no nominal rate: preload.plan preloads none
    once = stream_rates(grp, rate)[2]
    ttl = write_ttl(grp)
    cap = once * ttl if math.isfinite(ttl) else math.inf
    if maxmemory > 0:
        cap = min(cap, once_fit(maxmemory, grp.value_size.mean + grp.key_size))
    preloaded = min(once * once_span(grp), cap)
    if not math.isfinite(preloaded):
        return math.inf
    return preloaded + write_once_spare(once, duration, preloaded, cap)


ABANDON_ROWS = 3
"""With a client timeout, each pool connection gets this many extra rows for
connections its client closed and Redis has not freed yet; when all are taken, a
request waits for one as for a pool connection (deviation: a pool whose
abandoned connections outnumber 3 × max-size waits where a real one would open
more, so a long stall's connection count is capped there)."""


def connection_rows(grp) -> int:
    """Connection rows one process of group ``grp`` gets (``cn`` rows)."""
    return grp.pool.max_size * (1 + ABANDON_ROWS if grp.timeout > 0 else 1)
