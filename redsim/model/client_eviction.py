"""Client eviction (``maxmemory-clients``, 7.0+): when the normal clients'
memory reaches the limit, Redis frees the largest clients until it is below.

Follows ``src/networking.c:evictClients`` and
``src/networking.c:getClientEvictionLimit`` (7.0, PR #8687); reference §2.10.

- The limit is ``maxmemory-clients`` in bytes (a percentage of ``maxmemory``
  is resolved to bytes by the schema), raised to at least 128 KB so a bad
  setting cannot lock every client out; 0 turns eviction off.
- While it is on, every client's memory (``getClientMemoryUsage``: the
  client struct, its query buffer, ``c->buf`` and its reply list — the
  model's ``cn_mem``) is kept in real time, and the client sits in one of 19
  buckets by the bit length of that memory (≤ 32 KB, 64 KB, ..., > 4 GB;
  ``client_memory.update`` tracks the bucket and when it entered it), and
  INFO's ``mem_clients_normal`` is that real-time sum.
- ``evictClients`` runs in ``beforeSleep`` (after the reply writes) and in
  ``processCommand`` before ``performEvictions``. While the sum is at or over
  the limit it frees the clients of the largest non-empty bucket, the one
  that entered it first first, then the next bucket down
  (``client_close.free_client``); each is counted in ``evicted_clients``.
  If it frees the client whose command is being processed, the command is
  not run (``processCommand`` returns).

Deviations: Redis walks a bucket's list in the order clients entered it;
the model finds the same client by scanning the connections (a few µs of
simulation per eviction, no simulated time). ``CLIENT NO-EVICT`` does not
exist in the model; neither do replicas or pub/sub clients.
"""

from __future__ import annotations

from redsim.model import client_close
from redsim.model.jit import step
from redsim.model.state import (
    CE_LIMIT,
    MEM_CLIENTS,
    N_CONNS,
    STAT_EVICTED_CLIENTS,
    WI_EVICTED_CLIENTS,
    T,
)
from redsim.observe import metrics as M
from redsim.observe.bins import count

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "CE_LIMIT", "i8", "B", "config",
     "getClientEvictionLimit(): maxmemory-clients in bytes, at least 128 KB; 0 = off"),
    ("I", "STAT_EVICTED_CLIENTS", "i8", "-", "counter",
     "server.stat_evictedclients: clients freed by client eviction since start"),
    ("wi", "WI_EVICTED_CLIENTS", "i8", "-", "count", "clients freed by client eviction"),
)


RESULTS = (
    M.Metric("evicted_clients", "-", M.SUM, "INFO evicted_clients",
             value=M.counter("STAT_EVICTED_CLIENTS")),
    M.Column(120, "evicted_clients", "-", "INFO evicted_clients", M.total("WI_EVICTED_CLIENTS")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

MIN_LIMIT = 128 * 1024
"""``getClientEvictionLimit``'s floor, bytes."""


@step
def evict_clients(w):
    """``evictClients``: free the largest clients while the clients' memory is
    at or over the limit. Returns how many were freed."""
    I = w.I
    limit = I[CE_LIMIT]
    freed = 0
    while limit > 0 and I[MEM_CLIENTS] >= limit:
        victim = -1
        bucket = -1
        entered = 0
        for c in range(I[N_CONNS]):
            if w.cn_mem[c] > 0:
                b = w.cn_ce_bucket[c]
                if b > bucket or (b == bucket and w.cn_ce_entered[c] < entered):
                    victim = c
                    bucket = b
                    entered = w.cn_ce_entered[c]
        if victim < 0:  # "Over client maxmemory after evicting all evictable clients"
            break
        client_close.free_client(w, victim)
        I[STAT_EVICTED_CLIENTS] += 1
        count(w, WI_EVICTED_CLIENTS, w.F[T], 1)
        freed += 1
    return freed


def configure(b) -> None:
    """``maxmemory-clients`` (bytes, percentages already resolved; 7.0+)."""
    limit = int(b.scenario.server.maxmemory_clients)
    b.I[CE_LIMIT] = max(limit, MIN_LIMIT) if limit > 0 else 0
