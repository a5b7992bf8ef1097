"""A client group on Redis's own host: its threads' CPU per request.

No Redis source: the benchmark or application process that shares the box
with Redis (``placement: same-host``), as redis-benchmark and memtier run.
Each of the group's ``client-threads`` runs an event loop over its share of
the connections (connection c is thread c mod n's), as redis-benchmark's and
memtier's ``ae``/libevent loops do. A reply that reaches the client waits for
its thread's next ``epoll_wait``: at once if the thread slept (it pays the
wake-up first, ``engine.cpu.wakeup``, as Redis's main thread does), else when
its current pass ends. A pass reads and parses every reply the poll returned,
then writes the next requests, in the same order: redis-benchmark's
``readHandler`` re-arms the connection's write handler (``resetClient``), which
fires at the next poll, so a pass's requests leave together after its reads.
That burst is what lets Redis find several clients ready at once — and start
its I/O threads (``io_threads.py``) — where one write per reply would not.
A request batch (a connection's ``pipeline`` commands) costs ``client-cpu`` +
(pipeline − 1) × ``client-cpu-per-command`` CPU s: 30 % reading its replies,
70 % writing the next (``CLIENT_READ_SHARE``). ``perf record -g`` of redis-benchmark ``-c 50``
GET on the reference VM: ``send`` 48 % of its CPU (on loopback the write also
runs the receiver's TCP input in softirq), ``epoll_ctl`` 34 % (two per
handler: ``resetClient`` deletes the read event and adds the write event, the
write handler the reverse), ``recv`` 6.5 %; so reading is recv + half the
epoll_ctl ≈ 24 %, writing send + half ≈ 65 %, and the rest (``epoll_wait``,
scheduling, parsing) split evenly: 0.3.
The request is complete, and its latency taken, when its thread has written
the next one.

On a host with ``cores`` the threads take the host's cores like Redis's own:
runnable while they work (``CLI_BUSY``), at the rate the host gives them
(``CLI_SLOW``, ``Kernel.set_client_rate``); so a client on a 2-core VM slows
Redis, and Redis slows it.

Measured on the 2-vCPU AMD EPYC VM ( redis-server 7.0.15 and
redis-benchmark from Debian's redis-tools, loopback): redis-benchmark
``-P 1 -c 50`` of GET or SET uses 11.0-11.1 µs of CPU per request (its one
thread is the bottleneck at ~90K req/s, 0.99 of a core), and ``-c 1``
26.3 µs per request, the single connection's thread sleeping between
replies: 11 µs + one wake-up.

Measured on the same VM with ``io-threads 2`` (``io-threads-do-reads no``):
redis-benchmark ``-c 50`` of GET reaches 50.2K req/s (72-92K without I/O
threads) and 81 % of the writes are threaded (``io_threaded_writes_processed``
324,701 of 400,000): Redis does see batches of ≥ 4 clients.

Simplifications:
- The request's own writing is charged with its reply's reading, in the
  reply's pass: a closed loop with no think time writes at once, and a think
  time between the two moves the write's CPU by that much.
- The latency is taken at the write, not at the read: it includes the pass's
  reads and the writes before it (≤ one pass, a few client-cpu).
- The threads of every same-host group of an instance count as one kind for
  the host (one rate), as the I/O threads do.
"""

from __future__ import annotations

from redsim.model import events, linked_fifo
from redsim.model.jit import leaf, step
from redsim.model.state import C_WAKE, CLI_BUSY, CLI_SLOW, EV_CLI_POLL, EV_REPLY_READ

CLIENT_READ_SHARE = 0.3
"""Of a same-host client's CPU per request, the share that reads the reply (the
rest writes the next request)."""

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "CLI_THREADS", "i8", "-", "config",
     "threads of the instance's same-host client groups, in all"),
    ("F", "CLI_SLOW", "f8", "-", "state",
     "wall s per CPU s a same-host client thread gets now (1: a core each; the host sets it)"),
    ("F", "CLI_BUSY", "f8", "s", "counter",
     "wall s the same-host client threads have worked since the start, summed over threads"),
    ("gp", "cli_cpu", "f8", "s", "config",
     "CPU a same-host client thread spends per request batch (client-cpu, and "
     "client-cpu-per-command per further command), s; 0: a remote group"),
    ("gp", "cli_first", "i8", "-", "config", "the group's first client thread (ct row)"),
    ("gp", "cli_n", "i8", "-", "config", "the group's client threads (client-threads)"),
    ("ct", "clock", "f8", "s", "state", "when the client thread is next free, s"),
    ("ct", "q_head", "i8", "-", "state", "first connection whose reply waits for the thread"),
    ("ct", "q_tail", "i8", "-", "state", "last connection whose reply waits for the thread"),
    ("ct", "q_n", "i8", "-", "state",
     "replies waiting for the thread's next poll (EV_CLI_POLL), pending while there are any"),
    ("cn", "cli_next", "i8", "-", "state",
     "same-host client: the next connection in its thread's queue of replies"),
)


@leaf
def reply_in(w, g, c, te):
    """The reply of connection c (group g) reached the client at ``te``: it waits
    for its thread's next poll, which a sleeping thread makes after waking."""
    F = w.F
    th = w.gp_cli_first[g] + c % w.gp_cli_n[g]
    pending = w.ct_q_n[th] > 0  # a poll is pending exactly while replies wait for it
    linked_fifo.append(w.cn_cli_next, w.ct_q_head, w.ct_q_tail, w.ct_q_n, th, c)
    if pending:
        return  # the pending poll will return it too
    t = w.ct_clock[th]
    if t < te:  # asleep in epoll_wait: this reply wakes it
        wall = F[C_WAKE] * F[CLI_SLOW]
        F[CLI_BUSY] += wall
        t = te + wall
        w.ct_clock[th] = t
    events.push(w, t, EV_CLI_POLL, th)


@step
def poll(w, th, tp):
    """Client thread th's ``epoll_wait`` returned at ``tp`` with the replies
    queued for it: it reads them all, then writes each connection's next
    request in the same order; each request completes at its write
    (EV_REPLY_READ)."""
    F = w.F
    n = w.ct_q_n[th]
    c = w.ct_q_head[th]
    cpu = w.gp_cli_cpu[w.cn_group[c]] * F[CLI_SLOW]
    read = cpu * CLIENT_READ_SHARE
    t = tp + n * read
    for _ in range(n):
        t += cpu - read
        events.push(w, t, EV_REPLY_READ, c)
        c = w.cn_cli_next[c]
    w.ct_q_n[th] = 0
    w.ct_clock[th] = t


@leaf
def written(w, g):
    """A request of group g was written, ending its share of a pass: the thread
    worked that share's wall s. (Credited as the pass goes, not when it starts,
    so that a pass longer than the host's window does not land in one window.)"""
    w.F[CLI_BUSY] += w.gp_cli_cpu[g] * w.F[CLI_SLOW]


def configure(b) -> None:
    """``placement``, ``client-cpu`` and ``client-threads`` of each client group."""
    import numpy as np

    from redsim.model import state as S
    from redsim.model.blueprint import US, f64, i64

    cpu, first, n = [], [], []
    total = 0
    for grp in b.scenario.clients:
        same = grp.placement == "same-host"
        batch = grp.client_cpu + (grp.pipeline - 1) * grp.client_cpu_per_command
        cpu.append(batch * US * b.scenario.engine.cpu.scale if same else 0.0)
        first.append(total)
        n.append(grp.client_threads if same else 1)
        total += grp.client_threads if same else 0
    b.I[S.CLI_THREADS] = total
    b.F[S.CLI_SLOW] = 1.0
    b.fill("gp", cli_cpu=f64(cpu), cli_first=i64(first), cli_n=i64(n))
    rows = max(total, 1)
    b.fill("ct", clock=np.zeros(rows),
           q_head=np.full(rows, -1, np.int64), q_tail=np.full(rows, -1, np.int64),
           q_n=np.zeros(rows, np.int64))
    b.fill("cn", cli_next=np.full(b.size.conns, -1, np.int64))
