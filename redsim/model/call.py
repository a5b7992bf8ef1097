"""``call()``: execute one parsed command against the keyspace and cost it.

Follows ``src/server.c:call`` — the command's procedure, ``server.dirty``'s count
of changes, and propagation to the AOF (``src/server.c:propagate`` in 6.2,
``src/server.c:alsoPropagate`` then ``src/server.c:propagatePendingCommands`` in
7.x) — and, as far as their effect on the keyspace, their reply and their cost
go, the command procedures ``src/t_string.c:getCommand``,
``src/t_string.c:setCommand``, ``src/t_string.c:mgetCommand``,
``src/t_string.c:msetCommand``, ``src/t_string.c:incrDecrCommand``,
``src/db.c:delCommand`` / ``src/db.c:unlinkCommand`` (``delGenericCommand``:
lazy for UNLINK, or DEL with ``lazyfree-lazy-user-del``), ``src/db.c:existsCommand``,
``src/db.c:keysCommand`` (a walk of every key of the db, at a cost per key and
per key matched) and ``src/expire.c:expireCommand``.

What each command does follows its ``effect`` in the command table
(``commands.EFFECT_*``); the CPU cost is the table's fixed part, plus a part
per value byte moved and per element touched, times the service multiplier
drawn when the command was parsed. A read's reply and per-byte cost come from
what is stored: a hit returns the value, a miss a 5-byte nil (``$-1\\r\\n``).

Collection commands (HSET, SADD, LRANGE …) act on stored elements in a
group whose keyspace holds that type (``model/collection.py``); elsewhere
they cost CPU and bytes but leave the keyspace alone. A trace's lines carry
a key row where they name a key redsim tracks (a cache trace's keys; a
command file's collection keys, ``trace.TraceCollection``); the rest leave
the keyspace alone (their sizes come from the trace).

Extra keys of a multi-key command (MGET, MSET, DEL k1 k2 …) are drawn from
the group's key distribution when the command runs. A write's first key may
be a write-once key (``keyspace.write-once``): a new name, whose row is taken
when the command runs; only writes create them.

A write command that changed something counts its keys in ``server.dirty``
(the save points' change count) and is propagated to the AOF as sent (a DEL
or EXPIRE of a missing key changes nothing and is not). Trace commands and
collection commands outside a collection keyspace count as one change.
"""

from __future__ import annotations

import numpy as np

from redsim.model.collection import collection_command
from redsim.model.commands import (
    COMMAND_IDS,
    EFFECT_COLLECTION,
    EFFECT_DELETE,
    EFFECT_EXISTS,
    EFFECT_EXPIRE,
    EFFECT_INCR,
    EFFECT_KEYS,
    EFFECT_NONE,
    EFFECT_READ,
    EFFECT_WRITE,
    SHAPE_MULTI_GET,
)
from redsim.model.db import (
    NEW_KEY,
    NO_KEY,
    NO_TTL,
    db_delete,
    key_live,
    lookup_key,
    new_key_row,
    set_key,
)
from redsim.model.jit import hot_leaf, leaf, step
from redsim.model.locality import hot_or_rest, recent_or_rest, remember, slide
from redsim.model.propagate import propagate
from redsim.model.protocol import bulk, digits, elements, header, value_bytes_moved
from redsim.model.rng import draw, peek_uniform, uniform
from redsim.model.state import C_ONE_KEY_MISS, DIRTY, KS_KEYS, LAZY_USER_DEL, T
from redsim.model.world import prefetch
from redsim.observe import metrics as M

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "DIRTY", "i8", "-", "state",
     "server.dirty: changes since the last successful save (writes add the keys they changed)"),
    ("wi", "WI_DIRTY", "i8", "-", "gauge",
     "server.dirty at the window's end (rdb_changes_since_last_save)"),
    ("tb", "cmd_shape", "i8", "-", "config",
     "each command's argument shape (protocol SHAPE_*): its request and reply bytes"),
    ("tb", "cmd_fixed", "f8", "s", "config", "each command's CPU per call, s (engine.cpu scaled)"),
    ("tb", "cmd_per_byte", "f8", "s/B", "config", "each command's CPU per value byte moved, s/B"),
    ("tb", "cmd_per_elem", "f8", "s", "config",
     "each command's CPU per element (key, member, field), s"),
    ("tb", "cmd_per_scanned", "f8", "s", "config",
     "each command's CPU per key of the db it walks (KEYS), s"),
    ("tb", "cmd_namelen", "i8", "B", "config",
     "each command's name length, B (its RESP bulk in a request)"),
    ("tb", "cmd_effect", "i8", "-", "config",
     "what the command does to the keyspace (db.EFFECT_*)"),
    ("tb", "cmd_write", "i8", "-", "config",
     "1: a write command (propagated to the AOF, counted in server.dirty)"),
    ("tb", "cmd_denyoom", "i8", "-", "config", "1: refused with -OOM when eviction fails"),
)


RESULTS = (
    M.Column(520, "rdb_changes_since_last_save", "-", "INFO rdb_changes_since_last_save",
             M.gauge("WI_DIRTY")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

NIL_REPLY = 5  # $-1\r\n
UNLINK = COMMAND_IDS["UNLINK"]
INTEGER_VALUE = -1  # ks_vlen of a counter (INCR/DECR)
COUNTER_DIGITS = 4  # bytes a GET of a counter returns, assumed (values < 10 000)


@leaf
def value_size(w, g):
    """Bytes of one stored value of group g (its value-size distribution)."""
    v = draw(w, w.gp_stream[g] + 2, w.gp_vs_kind[g], w.gp_vs_mean[g], w.gp_vs_low[g],
             w.gp_vs_high[g], w.gp_vs_sigma[g])
    return int(v + 0.5)


@step
def _search(cdf, lo, hi, u):
    """First index i in [lo, hi) with cdf[i] > u (binary search)."""
    while lo < hi - 1:
        mid = (lo + hi) >> 1
        if cdf[mid - 1] > u:
            hi = mid
        else:
            lo = mid
    return lo


def zipf_cdf(n: int, s: float) -> np.ndarray:
    """Cumulative Zipf(s) probabilities over ranks 1..n (key id 0 is the hottest):
    the table ``key_at`` searches."""
    w = np.arange(1, n + 1, dtype=np.float64) ** (-s)
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    cdf[-1] = 1.0
    return cdf


@hot_leaf
def key_at(w, g, u):
    """The key row at quantile u of group g's key distribution: its key id
    (``key_id_at``) past the group's first row (a collection keyspace's own
    rows; 0 for strings)."""
    return key_id_at(w, g, u) + w.gp_key_lo[g]


@hot_leaf
def key_id_at(w, g, u):
    """The key id at quantile u of group g's key distribution (uniform or Zipf),
    with its hot set and drift (``locality.py``)."""
    if w.gp_hot_share[g] > 0.0:
        hot, u = hot_or_rest(w, g, u)
        if hot >= 0:
            return slide(w, g, hot)
    if w.gp_zipf_base[g] < 0:
        key = int(u * w.gp_keys[g])
    else:
        base = w.gp_zipf_base[g]
        key = _search(w.tb_zipf_cdf, base, base + w.gp_keys[g], u) - base
    if w.gp_drift[g] > 0.0:
        return slide(w, g, key)
    return key


@hot_leaf
def pick_key(w, g):
    """A key id drawn from group g's key distribution."""
    return key_at(w, g, uniform(w, w.gp_stream[g] + 1))


@hot_leaf
def pick_read_key(w, g):
    """The key a read of group g names: one of its recent writes with the
    ``recent`` probability, else a draw as ``pick_key`` (one uniform either way)."""
    if w.gp_rw_size[g] == 0:
        return pick_key(w, g)
    key, u = recent_or_rest(w, g)
    if key >= 0:
        return key
    return key_at(w, g, u)


@hot_leaf
def pick_write_key(w, g):
    """The key a write of group g stores: ``NEW_KEY`` with probability
    ``write_once``, else one from the key distribution. One uniform decides
    both, so a group without write-once keys draws exactly what ``pick_key`` does."""
    u = uniform(w, w.gp_stream[g] + 1)
    f = w.gp_write_once[g]
    if f <= 0.0:
        return key_at(w, g, u)
    if u < f:
        return NEW_KEY
    return key_at(w, g, (u - f) / (1.0 - f))


@hot_leaf
def prefetch_extra_keys(w, g, k):
    """Start loading the rows of the k−1 further keys a multi-key command is
    about to draw (uniform key choice: the draws are known in advance), so
    their cache misses overlap instead of following one another."""
    if w.gp_zipf_base[g] >= 0:
        return
    s = w.gp_stream[g] + 1
    n = w.gp_keys[g]
    lo = w.gp_key_lo[g]
    for i in range(k - 1):
        u = peek_uniform(w, s, i)
        if u >= 0.0:
            prefetch(w.ks_cost, lo + int(u * n))


@step
def call(w, c):
    """Run connection c's parsed command; returns its CPU cost, s, and leaves its
    reply size in ``cn_next_reply``."""
    cmd = w.cn_next_cmd[c]
    shape = w.tb_cmd_shape[cmd]
    k = w.cn_next_k[c]
    n = w.cn_next_n[c]
    moved = value_bytes_moved(shape, w.cn_next_value[c], k, n)
    key = w.cn_next_key[c]
    effect = w.tb_cmd_effect[cmd]
    changed = 1  # keys a write changed (server.dirty); traces: 1
    unscaled = 0.0  # CPU past the table's: freeing deleted values, a script's run, s
    extra = 0.0  # CPU past the table's that the service multiplier scales, s
    scanned = 0  # keys of the db the command walks (KEYS)
    touched = elements(shape, k, n)  # elements for the per-element part
    if effect == EFFECT_KEYS:
        scanned = w.I[KS_KEYS]
    if key != NO_KEY and effect != EFFECT_NONE:
        g = w.cn_group[c]
        key_len = w.gp_key_size[g]
        if k > 1 and effect != EFFECT_COLLECTION:
            prefetch_extra_keys(w, g, k)
        if effect == EFFECT_READ:
            moved = 0
            rep = header(k) if shape == SHAPE_MULTI_GET else 0
            for i in range(k):
                v = lookup_key(w, key if i == 0 else pick_key(w, g), True)
                if v == -2:
                    rep += NIL_REPLY
                else:
                    if v == INTEGER_VALUE:
                        v = COUNTER_DIGITS
                    rep += bulk(v)
                    moved += v
            w.cn_next_reply[c] = rep
        elif effect == EFFECT_WRITE:
            if key == NEW_KEY:
                key = new_key_row(w)
            for i in range(k):
                set_key(w, key if i == 0 else pick_key(w, g), key_len, w.cn_next_value[c],
                        float(w.cn_next_ttl[c]))  # float as INCR's: one compiled set_key
            changed = k
            remember(w, g, key)
        elif effect == EFFECT_DELETE:
            changed = 0
            # UNLINK, or DEL with lazyfree-lazy-user-del (delGenericCommand's lazy).
            lazy = cmd == UNLINK or w.I[LAZY_USER_DEL] == 1
            for i in range(k):
                kk = key if i == 0 else pick_key(w, g)
                if key_live(w, kk):
                    unscaled += db_delete(w, kk, lazy)[1]
                    changed += 1
        elif effect == EFFECT_EXISTS:
            for i in range(k):
                lookup_key(w, key if i == 0 else pick_key(w, g), False)
        elif effect == EFFECT_INCR:
            v = lookup_key(w, key, True)
            if v == -2 or v == INTEGER_VALUE:
                ttl = 0.0
                if v != -2 and w.ks_expire[key] != NO_TTL:
                    ttl = w.ks_expire[key] - w.F[T]  # INCR keeps the TTL
                set_key(w, key, key_len, np.int64(INTEGER_VALUE), ttl)  # not a literal: one set_key
            w.cn_next_reply[c] = 1 + digits(1000) + 2
        elif effect == EFFECT_EXPIRE:
            changed = 0
            if key_live(w, key):
                set_key(w, key, key_len, w.ks_vlen[key], float(w.cn_next_ttl[c]))
                changed = 1
        elif effect == EFFECT_COLLECTION and w.gp_coll_kind[g] >= 0:
            touched, moved, changed, extra = collection_command(
                w, c, g, key, w.tb_cmd_coll[cmd], k, n)
        # The keys' cache and TLB misses past the calibrated dataset's (cpu_caches);
        # a collection command looks one key up, and its cost was measured on one.
        if effect == EFFECT_COLLECTION:
            unscaled += w.gp_miss_cpu[g] + w.F[C_ONE_KEY_MISS]
        else:
            unscaled += w.gp_miss_cpu[g] * k
    if w.tb_cmd_write[cmd] and changed > 0:
        # call() → propagate: the command goes to the AOF and the replicas as it was sent.
        w.I[DIRTY] += changed
        propagate(w, w.cn_next_bytes[c])
    if w.tb_cmd_script[cmd]:  # the script's own run time (model/scripts.py)
        unscaled += w.cn_next_script[c]
    cost = w.cn_next_scale[c] * (w.tb_cmd_fixed[cmd] + w.tb_cmd_per_byte[cmd] * moved
                                 + w.tb_cmd_per_elem[cmd] * touched
                                 + w.tb_cmd_per_scanned[cmd] * scanned + extra) + unscaled
    return cost if cost > 0.0 else 0.0  # a dataset smaller than the calibrated one's misses


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """The command table's costs (``commands._TABLE``, with the scenario's
    ``engine.cpu.commands`` overrides, all scaled by ``engine.cpu.scale``) and flags."""
    from redsim.model.blueprint import US
    from redsim.model.commands import _TABLE, COMMAND_IDS

    cpu = b.scenario.engine.cpu
    fixed = np.array([c.fixed_us for c in _TABLE]) * US
    per_byte = np.array([c.per_byte_us for c in _TABLE]) * US
    per_elem = np.array([c.per_element_us for c in _TABLE]) * US
    per_scanned = np.array([c.per_key_scanned_us for c in _TABLE]) * US
    for name, cost in cpu.commands.items():
        i = COMMAND_IDS[name.upper()]
        if cost.fixed is not None:
            fixed[i] = cost.fixed * US
        if cost.per_byte is not None:
            per_byte[i] = cost.per_byte * US
        if cost.per_element is not None:
            per_elem[i] = cost.per_element * US
    k = cpu.scale
    b.fill("tb",
           cmd_shape=np.array([c.shape for c in _TABLE], np.int64),
           cmd_fixed=fixed * k, cmd_per_byte=per_byte * k, cmd_per_elem=per_elem * k,
           cmd_per_scanned=per_scanned * k,
           cmd_namelen=np.array([len(c.name) for c in _TABLE], np.int64),
           cmd_effect=np.array([c.effect for c in _TABLE], np.int64),
           cmd_denyoom=np.array([1 if c.denyoom else 0 for c in _TABLE], np.int64),
           cmd_write=np.array([1 if c.write else 0 for c in _TABLE], np.int64))
