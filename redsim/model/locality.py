"""Temporal locality of a group's keys: a hot set, a drifting working set, and
reads of what was just written.

No Redis source: how an application picks its keys. Three knobs of
``keyspace`` shape the draw ``call.key_at`` makes from the group's uniform or
Zipf distribution, each with the same single uniform, so a group without them
draws exactly what it drew before:

- ``hot: {share: h, keys: m}``: with probability h the key is one of the m
  hottest ids (0 .. m-1, uniformly), else a draw from the distribution — the
  "hot-key share" of cache studies (Twitter's 2020 cache traces, Yang et al.,
  OSDI '20: a few keys take a large share of requests).
- ``drift: r`` (keys/s): the whole key choice slides by ``r·t`` ids (modulo the
  keyspace) as simulated time t passes, so yesterday's hot keys go cold and new
  ones warm up — a working set that moves.
- ``recent: {probability: p, window: k}``: a read, with probability p, names
  one of the group's last k written keys (uniformly), else draws as usual:
  reads that follow writes ("read your writes", a feed shown after a post).
  The window is the group's, not each connection's (deviation from a
  per-session model: with many connections a session's own writes are a
  small part of the group's last k).

The time of a drift is the main thread's clock when the command is drawn (at
its arrival), within one event-loop iteration of its client time.
"""

from __future__ import annotations

from redsim.model.jit import leaf
from redsim.model.rng import uniform
from redsim.model.state import T

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("gp", "hot_share", "f8", "-", "config",
     "keyspace.hot.share: probability a key is drawn from the hot set; 0 = none"),
    ("gp", "hot_keys", "i8", "-", "config", "keyspace.hot.keys: the hot set, ids 0 .. hot_keys-1"),
    ("gp", "drift", "f8", "1/s", "config",
     "keyspace.drift: key ids the working set slides by per second; 0 = none"),
    ("gp", "rw_p", "f8", "-", "config",
     "keyspace.recent.probability: a read names one of the last written keys; 0 = never"),
    ("gp", "rw_base", "i8", "-", "config", "first entry of the group's ring in tb rw_ring"),
    ("gp", "rw_size", "i8", "-", "config", "keyspace.recent.window: the ring's length; 0 = none"),
    ("gp", "rw_n", "i8", "-", "state", "keys in the group's ring now (up to rw_size)"),
    ("gp", "rw_head", "i8", "-", "state", "ring index the next written key goes to"),
    ("tb", "rw_ring", "i8", "-", "state",
     "every group's ring of its last written key ids, group g's at [rw_base, rw_base+rw_size)"),
)


@leaf
def hot_or_rest(w, g, u):
    """(hot id or -1, the uniform left for the base distribution) for uniform u."""
    h = w.gp_hot_share[g]
    if h <= 0.0:
        return -1, u
    if u < h:
        return int(u / h * w.gp_hot_keys[g]), 0.0
    return -1, (u - h) / (1.0 - h)


@leaf
def slide(w, g, key):
    """Key id ``key`` moved by the working set's drift at the current time."""
    r = w.gp_drift[g]
    if r <= 0.0:
        return key
    n = w.gp_keys[g]
    return (key + int(r * w.F[T]) % n) % n


@leaf
def recent_or_rest(w, g):
    """A read's draw: (one of the group's recently written key ids, or -1, and
    the uniform left for the usual draw)."""
    u = uniform(w, w.gp_stream[g] + 1)
    p = w.gp_rw_p[g]
    n = w.gp_rw_n[g]
    if p <= 0.0 or n == 0:
        return -1, u
    if u < p:
        size = w.gp_rw_size[g]
        newest = w.gp_rw_head[g] - 1
        back = int(u / p * n)
        return w.tb_rw_ring[w.gp_rw_base[g] + (newest - back + size) % size], 0.0
    return -1, (u - p) / (1.0 - p)


@leaf
def remember(w, g, key):
    """Group g wrote key id ``key``: the newest entry of its ring."""
    size = w.gp_rw_size[g]
    if size == 0:
        return
    h = w.gp_rw_head[g]
    w.tb_rw_ring[w.gp_rw_base[g] + h] = key
    w.gp_rw_head[g] = h + 1 if h + 1 < size else 0
    if w.gp_rw_n[g] < size:
        w.gp_rw_n[g] += 1


def configure(b) -> None:
    """Each group's hot set, drift and ring of recent writes."""
    import numpy as np

    from redsim.model.blueprint import f64, i64

    groups = b.scenario.clients
    sizes = [g.keyspace.recent.window if g.keyspace.recent else 0 for g in groups]
    bases = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    b.fill("gp",
           hot_share=f64([g.keyspace.hot.share if g.keyspace.hot else 0.0 for g in groups]),
           hot_keys=i64([g.keyspace.hot.keys if g.keyspace.hot else 0 for g in groups]),
           drift=f64([g.keyspace.drift for g in groups]),
           rw_p=f64([g.keyspace.recent.probability if g.keyspace.recent else 0.0
                     for g in groups]),
           rw_base=bases, rw_size=i64(sizes), rw_n=np.zeros(len(groups), np.int64),
           rw_head=np.zeros(len(groups), np.int64))
    b.fill("tb", rw_ring=np.zeros(max(1, int(sum(sizes))), np.int64))
