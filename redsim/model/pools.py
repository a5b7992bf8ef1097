"""A client process's connection pool: checkout and return, waiters, opening
and closing connections, refusal at ``maxclients``, and the idle reaper.

No Redis source for the pool itself: it lives in the client library. It
follows real pools (redis-py's BlockingConnectionPool, Jedis/commons-pool,
go-redis): each app process owns one pool of at most ``max_size``
connections. A request takes the most recently returned idle connection
(LIFO) or the least (FIFO), or opens a new one if the pool is below its
maximum (connections are opened lazily: the TCP handshake's round trip, and
TLS 1.3's one more, before the request can leave), or waits in the pool's
FIFO waiter list (``client_requests.issue``). A reaper closes connections
idle longer than ``idle_timeout``. This is what makes the number of busy
connections follow λ·R.

Redis's side of a connection's life is followed where the pool meets it:
``src/networking.c:acceptCommonHandler`` refuses a connection while it holds
``maxclients`` (``refused_now``, ``refuse``), and a client that closed its
end is freed at the main thread's next read (``server_frees``,
``PENDING_CLOSE``).
"""

from __future__ import annotations

from redsim.model import client_memory, events
from redsim.model.jit import leaf, step
from redsim.model.ring import wrap
from redsim.model.sizing import connection_rows
from redsim.model.state import (
    CONNECTED,
    EV_REAP,
    EV_REFUSED,
    MAXCLIENTS,
    N_CONNS,
    N_POOLS,
    PENDING_CLOSE,
    PENDING_REFUSED,
    RTT_HALF,
    STAT_CONNECTIONS,
    WI_CLOSED,
    WI_OPENED,
)
from redsim.observe import groups
from redsim.observe.bins import count

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "CONNECTED", "i8", "-", "state", "open connections now (INFO connected_clients)"),
    ("I", "STAT_CONNECTIONS", "i8", "-", "counter",
     "server.stat_numconnections: connections opened since start"),
    ("I", "PENDING_CLOSE", "i8", "-", "state",
     "connections the clients closed whose freeClient the main thread has not yet run"),
    ("I", "PENDING_REFUSED", "i8", "-", "state",
     "connections refused at maxclients whose accept the main thread has not yet paid"),
    ("I", "MAXCLIENTS", "i8", "-", "config",
     "maxclients: connections Redis holds at most; the next one is refused"),
    ("I", "N_CONNS", "i8", "-", "size", "connection slots (cn rows): the pools' max sizes summed"),
    ("I", "N_POOLS", "i8", "-", "size",
     "connection pools (pl rows): one per process of every group"),
    ("wi", "WI_CONNECTED", "i8", "-", "gauge",
     "open connections at the window's end (connected_clients)"),
    ("wi", "WI_OPENED", "i8", "-", "count", "connections opened in the window"),
    ("wi", "WI_CLOSED", "i8", "-", "count",
     "connections closed by their pools' reapers in the window"),
    ("cn", "pool", "i8", "-", "config", "owning pool"),
    ("cn", "group", "i8", "-", "config", "owning client group"),
    ("cn", "is_open", "i8", "-", "state", "1 once connected, 0 when closed / never opened"),
    ("cn", "srv_closed", "i8", "-", "state",
     "1: the server closed it while it sat idle in its pool (timeout); the client "
     "finds out at its next checkout"),
    ("cn", "new", "i8", "-", "state", "1 until Redis has done the accept work for it"),
    ("cn", "t_idle", "f8", "s", "state", "when it was last returned to the pool"),
    ("pl", "group", "i8", "-", "config",
     "the client group this pool (one process's pool) belongs to; not read by the kernel"),
    ("pl", "max_size", "i8", "-", "config", "pool.max-size: most connections the pool opens"),
    ("pl", "slots", "i8", "-", "config",
     "connection rows of the pool: max_size, times ABANDON_ROWS + 1 with a client timeout "
     "(rows of connections the client closed and Redis has not freed yet)"),
    ("pl", "n_open", "i8", "-", "state", "connections the pool has open now (idle or busy)"),
    ("pl", "lifo", "i8", "-", "config",
     "1: pool.checkout lifo (newest idle connection first); 0: fifo"),
    ("pl", "base", "i8", "-", "config",
     "first connection slot of this pool; slots [base, base+max_size)"),
    ("pl", "idle_head", "i8", "-", "state",
     "ring index (in idle_ring[base:base+max_size]) of the oldest idle connection"),
    ("pl", "idle_n", "i8", "-", "state", "idle connections in the pool's idle ring"),
    ("pl", "free_n", "i8", "-", "state",
     "stack of never-opened/closed slots in free_slots[base:...]"),
    ("pl", "wait_head", "i8", "-", "state",
     "first (oldest) request slot waiting for a connection, -1 if none"),
    ("pl", "wait_tail", "i8", "-", "state",
     "last request slot waiting for a connection (the list links through rq next)"),
    ("pl", "wait_n", "i8", "-", "state",
     "requests waiting for a connection (bounded by pool.max-waiters)"),
    ("pl", "idle_ring", "i8[]", "-", "state",
     "the pools' idle rings of connection slots, pool p's at [base, base+max_size)"),
    ("pl", "free_slots", "i8[]", "-", "state",
     "the pools' stacks of unopened connection slots, pool p's at [base, base+free_n)"),
    ("gp", "processes", "i8", "-", "config", "client processes, each with its own pool"),
    ("gp", "pool_base", "i8", "-", "config",
     "first pool (pl row) of the group; pools [pool_base, pool_base+processes)"),
    ("gp", "idle_timeout", "f8", "s", "config",
     "pool.idle-timeout: an idle connection is closed after this; 0 = never"),
    ("gp", "reap_interval", "f8", "s", "config",
     "pool.reap-interval: time between the pool reaper's runs"),
    ("gp", "max_waiters", "i8", "-", "config",
     "pool.max-waiters: requests that may wait for a connection, per pool"),
    ("gp", "retry_backoff", "f8", "s", "config",
     "pool.retry-backoff: a source's wait after a rejected request"),
    ("gp", "tls", "i8", "-", "config", "1: the group connects over TLS (tls)"),
)


@leaf
def pool_checkout(w, p):
    """Take an idle connection from pool p (LIFO or FIFO); -1 if none is idle."""
    n = w.pl_idle_n[p]
    if n == 0:
        return -1
    size = w.pl_max_size[p]
    if w.pl_lifo[p]:
        i = wrap(w.pl_idle_head[p] + n - 1, size)
    else:
        i = w.pl_idle_head[p]
        w.pl_idle_head[p] = wrap(i + 1, size)
    w.pl_idle_n[p] = n - 1
    return w.pl_idle_ring[w.pl_base[p] + i]


@leaf
def pop_waiter(w, p):
    """The oldest request waiting for a connection of pool p, off its list."""
    r = w.pl_wait_head[p]
    w.pl_wait_head[p] = w.rq_next[r]
    w.pl_wait_n[p] -= 1
    return r


@leaf
def pool_return(w, p, c):
    """Put connection c back as the newest idle connection of pool p."""
    i = wrap(w.pl_idle_head[p] + w.pl_idle_n[p], w.pl_max_size[p])
    w.pl_idle_ring[w.pl_base[p] + i] = c
    w.pl_idle_n[p] += 1


@leaf
def free_row(w, p, c):
    """Connection row c of pool p may hold a new connection again."""
    w.pl_free_slots[w.pl_base[p] + w.pl_free_n[p]] = c
    w.pl_free_n[p] += 1


@leaf
def release_slot(w, p, c):
    """Connection slot c of pool p is closed on the client's side: free for a new one."""
    w.pl_n_open[p] -= 1
    free_row(w, p, c)


@leaf
def can_open(w, p):
    """1 if pool p may open another connection: below its max-size, with a free row."""
    return w.pl_n_open[p] < w.pl_max_size[p] and w.pl_free_n[p] > 0


@leaf
def dial(w, c, te):
    """Connection slot c connects at te; Redis pays accept/createClient when it
    first reads it."""
    I = w.I
    w.cn_is_open[c] = 1
    w.cn_new[c] = 1
    I[CONNECTED] += 1
    I[STAT_CONNECTIONS] += 1
    groups.connected(w, w.cn_group[c], 1)
    count(w, WI_OPENED, te, 1)


@leaf
def handshake(w, g):
    """Time from dialling to sending the first request, s: the TCP handshake's
    round trip, and TLS 1.3's one more."""
    return 2.0 * w.F[RTT_HALF] * (1 + w.gp_tls[g])


@leaf
def refused_now(w):
    """1 if Redis would refuse a new connection now: it holds ``maxclients``
    (``acceptCommonHandler``: ``listLength(server.clients) >= maxclients``;
    clients whose socket the other end closed count until freed)."""
    return w.I[CONNECTED] >= w.I[MAXCLIENTS]


@step
def refuse(w, r, te):
    """Request r's new connection is refused at maxclients: Redis accepts it,
    writes ``-ERR max number of clients reached`` and closes it (the main thread
    pays an accept, ``PENDING_REFUSED``); the error reaches the client after the
    handshake and one more round trip, and the request fails then."""
    w.I[PENDING_REFUSED] += 1
    events.push(w, te + handshake(w, w.rq_group[r]) + 2.0 * w.F[RTT_HALF], EV_REFUSED, r)


@step
def open_connection(w, p, te):
    """Open a new connection in pool p (the caller checked a slot is free)."""
    w.pl_free_n[p] -= 1
    c = w.pl_free_slots[w.pl_base[p] + w.pl_free_n[p]]
    w.pl_n_open[p] += 1
    dial(w, c, te)
    return c


@step
def close_connection(w, c, te):
    """The client closes an idle connection; Redis frees the client later (or
    freed it already, if it closed it first: ``clients_cron.handle_timeout``)."""
    p = w.cn_pool[c]
    if w.cn_srv_closed[c]:
        w.cn_srv_closed[c] = 0  # only the client's end of the socket was left
    else:
        server_frees(w, c, te)
    release_slot(w, p, c)


@step
def server_frees(w, c, te):
    """Redis frees connection c, whose client closed it: the EOF is read (and
    ``freeClient`` runs, ``PENDING_CLOSE``) on the main thread; its memory is
    freed here."""
    I = w.I
    w.cn_is_open[c] = 0
    client_memory.free_client(w, c)
    I[CONNECTED] -= 1
    groups.connected(w, w.cn_group[c], -1)
    I[PENDING_CLOSE] += 1
    count(w, WI_CLOSED, te, 1)


@step
def reap(w, g, te):
    """A group's pool reaper: close connections idle for ``idle_timeout`` or more.

    The oldest idle connection is always at the head of the idle ring (returns
    push at the tail), for LIFO and FIFO checkout alike.
    """
    timeout = w.gp_idle_timeout[g]
    first = w.gp_pool_base[g]
    nproc = w.gp_processes[g]
    interval = w.gp_reap_interval[g]
    for p in range(first, first + nproc):
        while w.pl_idle_n[p] > 0:
            c = w.pl_idle_ring[w.pl_base[p] + w.pl_idle_head[p]]
            if te - w.cn_t_idle[c] < timeout:
                break
            w.pl_idle_head[p] = wrap(w.pl_idle_head[p] + 1, w.pl_max_size[p])
            w.pl_idle_n[p] -= 1
            close_connection(w, c, te)
    events.push(w, te + interval, EV_REAP, g)


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """The pools: one per process of every group, each with its connection rows
    (``sizing.connection_rows``: max-size, more with a client timeout), its idle
    ring, its stack of free rows and its waiter list; each connection row's
    pool and group; the group's pool settings; ``maxclients``.

    Size for later steps: ``conns`` (connection rows, every pool's).
    """
    import numpy as np

    from redsim.model.blueprint import f64, i64

    groups = b.scenario.clients
    pool_group, pool_max, pool_base, pool_rows = [], [], [], []
    conn_pool, conn_group = [], []
    group_pool_base = []
    for gi, grp in enumerate(groups):
        group_pool_base.append(len(pool_group))
        rows = connection_rows(grp)
        for _ in range(grp.processes):
            p = len(pool_group)
            pool_group.append(gi)
            pool_max.append(grp.pool.max_size)
            pool_rows.append(rows)
            pool_base.append(len(conn_pool))
            conn_pool.extend([p] * rows)
            conn_group.extend([gi] * rows)
    C, P = len(conn_pool), len(pool_group)
    b.fill("gp",
           processes=i64([g.processes for g in groups]), pool_base=i64(group_pool_base),
           idle_timeout=f64([g.pool.idle_timeout for g in groups]),
           reap_interval=f64([g.pool.reap_interval for g in groups]),
           max_waiters=i64([g.pool.max_waiters for g in groups]),
           retry_backoff=f64([g.pool.retry_backoff for g in groups]),
           tls=i64([1 if g.tls else 0 for g in groups]))
    b.fill("cn",
           pool=i64(conn_pool), group=i64(conn_group), is_open=np.zeros(C, np.int64),
           srv_closed=np.zeros(C, np.int64), new=np.zeros(C, np.int64), t_idle=np.zeros(C))
    free_slots = np.empty(C, np.int64)
    for p in range(P):
        base, m = pool_base[p], pool_rows[p]
        free_slots[base:base + m] = np.arange(base + m - 1, base - 1, -1)  # lowest slot first
    b.fill("pl",
           group=i64(pool_group), max_size=i64(pool_max), slots=i64(pool_rows),
           n_open=np.zeros(P, np.int64),
           lifo=i64([1 if groups[g].pool.checkout == "lifo" else 0 for g in pool_group]),
           base=i64(pool_base), idle_head=np.zeros(P, np.int64), idle_n=np.zeros(P, np.int64),
           free_n=i64(pool_rows), wait_head=np.full(P, -1, np.int64),
           wait_tail=np.full(P, -1, np.int64), wait_n=np.zeros(P, np.int64),
           idle_ring=np.zeros(C, np.int64), free_slots=free_slots)
    b.I[N_CONNS] = C
    b.I[MAXCLIENTS] = b.scenario.server.maxclients
    b.I[N_POOLS] = P
    b.size.conns = C
