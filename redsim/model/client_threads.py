"""A client group on Redis's own host: its threads' CPU per request.

No Redis source: the benchmark or application process that shares the box
with Redis (``placement: same-host``), as redis-benchmark and memtier run.
Each of the group's ``client-threads`` runs an event loop over its share of
the connections (connection c is thread c mod n's): when a reply reaches
the client, its thread reads and parses it and writes the next request, at
``client-cpu`` CPU s per request, after the work it already has; a thread
that was idle slept in ``epoll_wait`` and pays the wake-up too
(``engine.cpu.wakeup``, as Redis's main thread does). The request is
complete, and its latency taken, when its thread has read the reply — as a
benchmark measures it.

On a host with ``cores`` the threads take the host's cores like Redis's own:
runnable while they work (``CLI_BUSY``), at the rate the host gives them
(``CLI_SLOW``, ``Kernel.set_client_rate``); so a client on a 2-core VM slows
Redis, and Redis slows it.

Measured on the reference host (a 2-vCPU VM, redis-server 7.0.15 and
redis-benchmark from Debian's redis-tools, loopback): redis-benchmark
``-P 1 -c 50`` of GET or SET uses 11.0-11.1 µs of CPU per request (its one
thread is the bottleneck at ~90K req/s, 0.99 of a core), and ``-c 1``
26.3 µs per request, the single connection's thread sleeping between
replies: 11 µs + one wake-up.

Simplifications:
- The request's own writing is charged with its reply's reading, at the
  reply: a closed loop with no think time writes at once, and a think time
  between the two moves the write's CPU by that much.
- The threads of every same-host group of an instance count as one kind for
  the host (one rate), as the I/O threads do.
"""

from __future__ import annotations

from redsim.model import thread_clock
from redsim.model.jit import leaf
from redsim.model.state import C_WAKE, CLI_BUSY, CLI_SLOW

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
     "CPU a same-host client thread spends per request (client-cpu), s; 0: a remote group"),
    ("gp", "cli_first", "i8", "-", "config", "the group's first client thread (ct row)"),
    ("gp", "cli_n", "i8", "-", "config", "the group's client threads (client-threads)"),
    ("ct", "clock", "f8", "s", "state", "when the client thread is next free, s"),
)


@leaf
def read_reply(w, g, c, t_in):
    """The reply of connection c (group g) reached the client at ``t_in``: its
    thread reads it (and writes the next request) from when it is free; returns
    when it is done."""
    F = w.F
    th = w.gp_cli_first[g] + c % w.gp_cli_n[g]
    # Asleep in epoll_wait by then, the thread is woken by the reply.
    end, wall = thread_clock.run(w.ct_clock, th, t_in, w.gp_cli_cpu[g], F[C_WAKE], F[CLI_SLOW])
    F[CLI_BUSY] += wall
    return end


def configure(b) -> None:
    """``placement``, ``client-cpu`` and ``client-threads`` of each client group."""
    import numpy as np

    from redsim.model import state as S
    from redsim.model.blueprint import US, f64, i64

    cpu, first, n = [], [], []
    total = 0
    for grp in b.scenario.clients:
        same = grp.placement == "same-host"
        cpu.append(grp.client_cpu * US * b.scenario.engine.cpu.scale if same else 0.0)
        first.append(total)
        n.append(grp.client_threads if same else 1)
        total += grp.client_threads if same else 0
    b.I[S.CLI_THREADS] = total
    b.F[S.CLI_SLOW] = 1.0
    b.fill("gp", cli_cpu=f64(cpu), cli_first=i64(first), cli_n=i64(n))
    b.fill("ct", clock=np.zeros(max(total, 1)))
