"""``freeClient`` from the server's side: a client closed by Redis, whatever
it was doing (idle past ``timeout``, or evicted for its memory).

Follows ``src/networking.c:freeClient`` for a normal client: its query
buffer, pending replies and argv go, it leaves the ready list and
``clients_pending_write``, its memory goes back, ``connected_clients`` drops,
and the socket is closed. Reference §1.7, §2.10.

What the client sees depends on where its request was:

- no request in flight, or the last byte of its reply already written: the
  reply arrives, then the EOF; the pool finds the connection dead at its next
  checkout and dials again (``client_requests.send_on``);
- a request not yet answered (its bytes in flight to Redis, unread, being
  run, or its reply not all written): the EOF or reset reaches the client
  half an RTT later (``EV_CLOSED``), the request fails there
  (``client_failures.server_closed``) and the source retries after its group's
  ``retry-backoff``. Bytes of it still on their way to Redis are dropped on
  arrival.

Deviation: the replies of the commands it had run are dropped whole; Redis
may have written part of them (at most 64 KB per pass) before the close,
which the client discards with the failed request anyway.
"""

from __future__ import annotations

from redsim.model import client_memory, events
from redsim.model.jit import step
from redsim.model.main_thread import busy
from redsim.model.ring import wrap
from redsim.model.state import (
    C_CLOSE,
    CONNECTED,
    EV_CLOSED,
    N_CONNS,
    PW_N,
    READY_HEAD,
    READY_N,
    READY_PASS,
    RTT_HALF,
    STAT_SERVER_CLOSED,
    W_CPU_CONNECTIONS,
    W_IN_SERVER,
    WI_CLOSED,
    T,
)
from redsim.observe import groups
from redsim.observe import metrics as M
from redsim.observe.bins import add_interval, count

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "STAT_SERVER_CLOSED", "i8", "-", "counter",
     "clients Redis closed itself (timeout, client eviction) since start"),
)


RESULTS = (
    M.Metric("connections_closed_by_server", "-", M.SUM, "client connections Redis closed",
             value=M.counter("STAT_SERVER_CLOSED"),
             line=M.Line(280, "clients closed by Redis (of them evicted)", lambda s: (
                 f"{s['connections_closed_by_server']:,} ({s['evicted_clients']:,})"),
                 when=lambda s: bool(s.get("connections_closed_by_server")))),
)
"""The summary keys this module's figures make (``observe/metrics.py``)."""


@step
def unlist(w, c):
    """Take connection c off epoll's ready ring and ``clients_pending_write``
    (a freed client is on neither), keeping the others' order."""
    I = w.I
    size = I[N_CONNS]
    head = I[READY_HEAD]
    n = I[READY_N]
    keep = 0
    for k in range(n):
        other = w.ready[wrap(head + k, size)]
        if other != c:
            w.ready[wrap(head + keep, size)] = other
            keep += 1
        elif k < I[READY_PASS]:
            I[READY_PASS] -= 1  # the read pass under way had it still to read
    I[READY_N] = keep
    if w.cn_in_pw[c]:
        keep = 0
        for k in range(I[PW_N]):
            if w.pw[k] != c:
                w.pw[keep] = w.pw[k]
                keep += 1
        I[PW_N] = keep
        w.cn_in_pw[c] = 0


@step
def free_client(w, c):
    """Redis frees connected client c now (``freeClient``), on the main thread."""
    F = w.F
    I = w.I
    r = w.cn_req[c]
    unanswered = r >= 0 and (w.cn_cmds_left[c] > 0 or w.cn_reply_bytes[c] > 0)
    if w.cn_t_arrive[c] >= 0.0:  # its request had reached Redis and not left it
        add_interval(w, W_IN_SERVER, w.cn_t_arrive[c], F[T])
        w.cn_t_arrive[c] = -1.0
    unlist(w, c)
    w.cn_cmds_left[c] = 0
    w.cn_partial[c] = 0
    w.cn_next_cmd[c] = -1
    w.cn_reply_bytes[c] = 0
    w.cn_reply_nodes[c] = 0
    w.cn_tail_room[c] = 0
    client_memory.free_client(w, c)
    w.cn_is_open[c] = 0
    w.cn_srv_closed[c] = 1
    I[CONNECTED] -= 1
    groups.connected(w, w.cn_group[c], -1)
    count(w, WI_CLOSED, F[T], 1)
    I[STAT_SERVER_CLOSED] += 1
    busy(w, W_CPU_CONNECTIONS, F[C_CLOSE])
    if unanswered:
        events.push(w, F[T] + F[RTT_HALF], EV_CLOSED, c)
