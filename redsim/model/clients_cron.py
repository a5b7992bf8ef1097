"""``clientsCron``: the slice of clients serverCron visits per call, and what
it does to each: close it when idle past ``timeout``, trim its buffers, count
its memory.

Follows ``src/server.c:clientsCron`` (7.0): ``numclients / hz`` clients per
call, at least ``CLIENTS_CRON_MIN_ITERATIONS`` (5), so each about once per
second; for each, in Redis's order, ``src/server.c:clientsCronHandleTimeout``
(freed when idle past ``timeout``, and then nothing else is done for it),
``clientsCronResizeQueryBuffer``, 7.x ``clientsCronResizeOutputBuffer``, and
the memory INFO reports (``model/client_memory.py`` has those three).

``timeout`` (``server.maxidletime``, whole seconds; 0 = never) closes a
client when ``now - c->lastinteraction > maxidletime``: ``now`` is the cron's
``mstime / 1000`` and ``lastinteraction`` the ``server.unixtime`` of its last
read or reply write, both whole seconds, so a client idle for ``timeout + f``
s (0 ≤ f < 1) is closed when the seconds it was last served in and it is
visited in differ by more than ``timeout``. Replicas, blocked and pub/sub
clients are exempt in Redis; the model has none of them. The close is
``freeClient`` (``client_close.free_client``): its memory goes back at once
and it costs one ``engine.cpu.close`` on the main thread, recorded as
connection work.

The client finds out at its next use (``client_requests.send_on``): a pool's
connection the server closed is dead, and the library dials a new one
before sending (redis-py's ``get_connection`` sees the EOF with
``can_read()`` and reconnects; go-redis checks a pooled connection's health
the same way), which costs the request one round trip and Redis an accept.

Deviations: only a client with no request in flight is looked at. A client
is served (read, then written back) within the iteration its request
arrives in, so its ``lastinteraction`` is at most that long old while a
request is in flight; Redis would close one only after a main-thread stall
longer than ``timeout`` (cron does not run during the stall either), which
the model does not represent. ``lastinteraction`` is taken as the reply's
write time (the moment it left, half an RTT before the client had it); a
connection's first use opens it, so every idle connection has a write.
"""

from __future__ import annotations

import math

from redsim.model import client_close, client_memory, network
from redsim.model.jit import step
from redsim.model.state import (
    CC_CURSOR,
    MAXIDLE,
    MEM_CLIENTS_INFO,
    N_CONNS,
    REDIS_62,
    T,
)

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "CC_CURSOR", "i8", "-", "state",
     "connection slot clientsCron visited last (its round-robin position)"),
    ("I", "MAXIDLE", "i8", "s", "config",
     "server.maxidletime (the timeout directive): idle clients are closed past it; 0 = never"),
)


@step
def handle_timeout(w, c):
    """``clientsCronHandleTimeout``: free client ``c`` if it has been idle past
    ``timeout``, in whole seconds; True if it was freed."""
    F = w.F
    I = w.I
    if I[MAXIDLE] == 0 or w.cn_req[c] >= 0:
        return False
    # lastinteraction: the reply's write, half an RTT before the client had it.
    last = w.cn_t_idle[c] - network.half(w, c)
    if math.floor(F[T]) - math.floor(last) <= I[MAXIDLE]:
        return False
    client_close.free_client(w, c)  # idle: its client finds out at the next checkout
    return True


@step
def clients_cron(w, visits):
    """Visit ``visits`` connected clients round-robin: close the idle ones,
    trim buffers, report memory."""
    I = w.I
    n = I[N_CONNS]
    c = I[CC_CURSOR]
    done = 0
    for _ in range(n):
        if done == visits:
            break
        c += 1
        if c >= n:
            c = 0
        if w.cn_mem[c] == 0:  # not connected (or not yet accepted)
            continue
        done += 1
        if handle_timeout(w, c):
            continue
        client_memory.resize_query_buffer(w, c, w.cn_partial[c], client_memory.current_bulk(w, c))
        if not I[REDIS_62]:
            client_memory.resize_output_buffer(w, c)
        client_memory.update(w, c)
        I[MEM_CLIENTS_INFO] += w.cn_mem[c] - w.cn_mem_info[c]
        w.cn_mem_info[c] = w.cn_mem[c]
    I[CC_CURSOR] = c


def configure(b) -> None:
    """``timeout``: ``server.maxidletime``, whole seconds (the schema refuses a
    fraction, as Redis's integer directive does)."""
    b.I[MAXIDLE] = int(b.scenario.server.timeout)
