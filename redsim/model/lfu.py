"""LFU counters as ``src/evict.c`` keeps them in an object's 24-bit ``lru`` field.

Follows ``src/evict.c:LFUGetTimeInMinutes``, ``src/evict.c:LFUDecrAndReturn``
and ``src/evict.c:LFULogIncr``, applied on access by ``src/db.c:updateLFU``;
the same in 6.2, 7.0 and 7.2.

The field holds the last decrement time in minutes (16 bits) and an 8-bit
logarithmic counter (reference §2.6): new keys start at ``LFU_INIT_VAL`` = 5;
an access first decays the counter by one per ``lfu-decay-time`` minutes
elapsed, then increments it with probability ``1 / ((counter − 5)·factor + 1)``.
"""

from __future__ import annotations

from redsim.model.jit import leaf
from redsim.model.rng import server_uniform
from redsim.model.state import LFU_DECAY_TIME, LFU_LOG_FACTOR, T

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "LFU_LOG_FACTOR", "i8", "-", "config",
     "server.lfu_log_factor: the LFU counter's increment damping (lfu-log-factor)"),
    ("I", "LFU_DECAY_TIME", "i8", "min", "config",
     "server.lfu_decay_time: minutes per decrement of an idle key's LFU counter; 0 = no decay"),
)

LFU_INIT_VAL = 5
COUNTER_MAX = 255


@leaf
def minutes(w):
    """``LFUGetTimeInMinutes``: the clock in minutes, 16 bits."""
    return int(w.F[T] / 60.0) & 0xFFFF


@leaf
def new_field(w):
    """The ``lru`` field of a new object under an LFU policy."""
    return (minutes(w) << 8) | LFU_INIT_VAL


@leaf
def decr_and_return(w, field):
    """``LFUDecrAndReturn``: the counter after decay (not stored)."""
    ldt = field >> 8
    counter = field & 255
    period = w.I[LFU_DECAY_TIME]
    if period == 0:
        return counter
    now = minutes(w)
    elapsed = now - ldt if now >= ldt else 65535 - ldt + now
    periods = elapsed // period
    return counter - periods if periods < counter else 0


@leaf
def log_incr(w, counter):
    """``LFULogIncr``: a probabilistic increment, saturating at 255."""
    if counter == COUNTER_MAX:
        return counter
    base = counter - LFU_INIT_VAL
    if base < 0:
        base = 0
    p = 1.0 / (base * w.I[LFU_LOG_FACTOR] + 1)
    if server_uniform(w) < p:
        counter += 1
    return counter


@leaf
def touched(w, field):
    """``updateLFU``: the field after one access."""
    counter = log_incr(w, decr_and_return(w, field))
    return (minutes(w) << 8) | counter


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """``lfu-log-factor`` and ``lfu-decay-time``."""
    server = b.scenario.server
    b.I[LFU_LOG_FACTOR] = server.lfu_log_factor
    b.I[LFU_DECAY_TIME] = server.lfu_decay_time
