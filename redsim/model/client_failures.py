"""A request that fails at the client: its client timeout, a connection
refused at ``maxclients``, a connection Redis closed; and the source's backoff
before it tries again.

No Redis source: the client libraries' behaviour (redis-py, Jedis and go-redis
all drop a connection whose read timed out, since its reply may still come,
and retry with capped exponential backoff and jitter, the ``reconnect``
section). With a group ``timeout``, ``client_requests.send`` arms one timer
per connection (``client_requests.arm``; a timer that fires for a finished
request re-arms for the newer deadline); ``time_out`` fails the request and
abandons the connection (``cn_abandoned``): the pool may open another at once,
into a spare row (``sizing.connection_rows``), while Redis keeps the abandoned
client, runs what it read and frees it when its reply finds the socket closed
(``abandoned_freed``). The source waits ``backoff`` before its next request
(``fail_source``). A connection refused at ``maxclients`` (``pools.refuse``)
fails its request when the error is back (``refused``). A connection Redis
closed before answering (clientsCron's ``timeout``, client eviction:
``client_close.free_client``) fails its request when the EOF reaches the
client (``server_closed``).
"""

from __future__ import annotations

from redsim.model import events
from redsim.model.client_requests import request_failed, serve_waiter
from redsim.model.jit import leaf, step
from redsim.model.pools import free_row, release_slot, server_frees
from redsim.model.rng import uniform
from redsim.model.sources import finish_source
from redsim.model.state import (
    EV_TIMEOUT,
    KIND_OPEN,
    KIND_TRACE,
    REQ_FAILED,
    REQ_REFUSED,
    REQ_TIMEOUT,
    WI_FAILED,
    WI_REFUSED,
    WI_TIMEOUT,
)

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "REQ_FAILED", "i8", "-", "counter",
     "requests that failed because Redis closed their connection before answering"),
    ("I", "REQ_TIMEOUT", "i8", "-", "counter",
     "requests that failed at their group's client timeout, since start"),
    ("I", "REQ_REFUSED", "i8", "-", "counter",
     "requests whose new connection Redis refused at maxclients (INFO rejected_connections)"),
    ("wi", "WI_FAILED", "i8", "-", "count",
     "requests failed because Redis closed their connection before answering"),
    ("wi", "WI_TIMEOUT", "i8", "-", "count", "requests failed at the client timeout in the window"),
    ("wi", "WI_REFUSED", "i8", "-", "count",
     "new connections refused at maxclients in the window (their requests failed)"),
    ("cn", "abandoned", "i8", "-", "state",
     "1: its client timed out and closed it; Redis still holds it until it frees the client"),
    ("rq", "fails", "i8", "-", "state",
     "closed/trace sources: requests failed in a row (timeout, refused); sets the backoff"),
    ("gp", "bo_base", "f8", "s", "config", "reconnect.backoff: first wait after a failure, s"),
    ("gp", "bo_max", "f8", "s", "config", "reconnect.max-backoff: longest wait, s"),
    ("gp", "bo_jitter", "f8", "-", "config", "reconnect.jitter: random fraction of a wait"),
)


@step
def timer(w, c, te):
    """Connection c's timeout timer fires at te."""
    w.cn_timer[c] = 0
    if w.cn_req[c] < 0 or w.cn_abandoned[c]:
        return
    if w.cn_deadline[c] > te:  # a later request's deadline
        w.cn_timer[c] = 1
        events.push(w, w.cn_deadline[c], EV_TIMEOUT, c)
        return
    time_out(w, c, te)


@step
def time_out(w, c, te):
    """The request on c passed its group's timeout: it fails, and the client
    closes the connection (redis-py, Jedis and go-redis all drop a connection
    whose read timed out: its reply may still come). Redis keeps the client,
    runs what it has read and frees it when it finds the socket closed
    (``abandoned_freed``); the pool may open another connection at once."""
    r = w.cn_req[c]
    p = w.cn_pool[c]
    request_failed(w, r, c, te, REQ_TIMEOUT, w.gp_timeouts, WI_TIMEOUT)
    w.cn_abandoned[c] = 1
    w.pl_n_open[p] -= 1  # the client's end is closed; the row waits for Redis
    serve_waiter(w, p, te)
    fail_source(w, r, te)


@step
def abandoned_freed(w, c, te, server_closed_it):
    """Abandoned connection c is done with on Redis's side at te: its reply was
    written to a socket the client had closed, and Redis reads the EOF and frees
    the client (deviation: at most half an RTT late — the reply's arrival time,
    not the close's), or Redis had closed it itself. Its row is free again."""
    w.cn_abandoned[c] = 0
    w.cn_req[c] = -1
    if server_closed_it:
        w.cn_srv_closed[c] = 0
    else:
        server_frees(w, c, te)
    p = w.cn_pool[c]
    free_row(w, p, c)
    serve_waiter(w, p, te)


@leaf
def backoff(w, r):
    """The wait before source r's next request after its ``rq_fails``-th failure
    in a row, s (``Reconnect``: capped doubling, then jitter)."""
    g = w.rq_group[r]
    k = w.rq_fails[r]
    b = w.gp_bo_base[g] * 2.0 ** min(k - 1, 60)
    if b > w.gp_bo_max[g]:
        b = w.gp_bo_max[g]
    j = w.gp_bo_jitter[g]
    if j > 0.0:
        b *= 1.0 - j * uniform(w, w.gp_stream[g])
    return b


@step
def fail_source(w, r, te):
    """Source r's request failed at te (timeout, refused): back off, then go on.
    (An arrival's slot is simply freed: arrivals keep their own pace.)"""
    g = w.rq_group[r]
    if w.gp_kind[g] == KIND_OPEN or (w.gp_kind[g] == KIND_TRACE and w.gp_recorded[g]):
        finish_source(w, r, te, 0.0)
        return
    w.rq_fails[r] += 1
    finish_source(w, r, te, backoff(w, r))


@step
def refused(w, r, te):
    """The maxclients error for request r's connection reached the client at te."""
    request_failed(w, r, -1, te, REQ_REFUSED, w.gp_refused, WI_REFUSED)
    fail_source(w, r, te)


@step
def server_closed(w, c, te):
    """Redis closed connection c before answering its request (client eviction):
    the EOF reaches the client at te. The request fails; the client closes its
    end, which frees the pool's slot for a waiter, and the source tries again
    after its group's ``retry-backoff``."""
    if w.cn_abandoned[c]:  # its client had given up on it already
        abandoned_freed(w, c, te, True)
        return
    r = w.cn_req[c]
    request_failed(w, r, c, te, REQ_FAILED, w.gp_failed, WI_FAILED)
    w.cn_req[c] = -1
    w.cn_srv_closed[c] = 0
    p = w.cn_pool[c]
    release_slot(w, p, c)
    serve_waiter(w, p, te)  # the freed slot goes to the oldest waiter, on a new connection
    finish_source(w, r, te, w.gp_retry_backoff[w.rq_group[r]])


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """Each group's backoff (``reconnect``), each connection's abandoned flag and
    each source's count of failures in a row."""
    import numpy as np

    from redsim.model.blueprint import f64

    groups = b.scenario.clients
    b.fill("gp", bo_base=f64([g.reconnect.backoff for g in groups]),
           bo_max=f64([g.reconnect.max_backoff for g in groups]),
           bo_jitter=f64([g.reconnect.jitter for g in groups]))
    b.fill("cn", abandoned=np.zeros(b.size.conns, np.int64))
    b.fill("rq", fails=np.zeros(b.size.slots, np.int64))
