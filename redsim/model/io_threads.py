"""Threaded I/O as Redis 6.0-7.x does it: fan the ready clients out, wait for all.

Follows ``src/networking.c`` of 7.0.15: ``IOThreadMain``,
``handleClientsWithPendingWritesUsingThreads``,
``handleClientsWithPendingReadsUsingThreads``, ``stopThreadedIOIfNeeded``,
``postponeClientRead``. With ``io-threads N`` (N > 1) there are N - 1 I/O
threads; the main thread is thread 0.

- Starting and stopping: before each write pass, if fewer than 2N clients have
  replies pending the threads are stopped (their mutexes taken) and the main
  thread writes alone; otherwise they are started.
- A threaded write pass: client k of the pending list goes to thread k mod N;
  every thread writes its clients in order from the pass's start, the main
  thread its own share; the main thread then spins until every thread is
  done. A reply leaves when its own thread has written it.
- Threaded reads (``io-threads-do-reads yes``, only while the threads are
  started): the ready clients' ``read()`` and parsing are split the same
  way; the main thread waits for the slowest thread, then executes every
  command itself.
- While started, an I/O thread busy-waits for work (a loop of up to 10^6
  checks of its pending count, then a mutex the main thread does not hold):
  it keeps a core busy the whole time, which the host counts
  (``IO_ON_TIME``, ``redsim/host``).

Simplifications:
- Threaded reads are charged where the model reads (the file events, right
  after the poll), where 7.x postpones them to the start of ``beforeSleep``; the
  same iteration either way, with the timers run before instead of after.
- The read pass's length is its slowest thread's, taken as the larger of the
  reads' mean times the most clients one thread gets (ceil(n / N)) and the
  single longest read, rather than summed per thread.
- The I/O threads progress at the main thread's rate (``CPU_SLOW``): under
  processor sharing threads that are runnable as often get the same share.
"""

from __future__ import annotations

import numpy as np

from redsim.model.jit import leaf, step
from redsim.model.main_thread import busy
from redsim.model.state import (
    IO_ACTIVE,
    IO_DO_READS,
    IO_ON_SINCE,
    IO_ON_TIME,
    IO_PHASE,
    IO_READ_MAX,
    IO_READ_N,
    IO_READ_SUM,
    IO_THREADS,
    PW_N,
    T,
)

FIELDS = (
    ("I", "IO_THREADS", "i8", "-", "config",
     "io-threads: threads doing reads and writes, the main thread included"),
    ("I", "IO_DO_READS", "i8", "-", "config", "io-threads-do-reads: 1 = reads threaded too"),
    ("I", "IO_ACTIVE", "i8", "-", "state",
     "the I/O threads are started (server.io_threads_active): each spins on a core"),
    ("I", "IO_PHASE", "i8", "-", "state",
     "1 while a threaded write pass runs: writes advance the writing thread's clock "
     "without recording main-thread time"),
    ("F", "IO_ON_SINCE", "f8", "s", "state", "when the I/O threads were last started, s"),
    ("F", "IO_ON_TIME", "f8", "s", "counter",
     "wall s the I/O threads have been started, since the start (up to the last stop)"),
    ("F", "IO_READ_SUM", "f8", "s", "state", "CPU s of the threaded reads of this pass"),
    ("F", "IO_READ_MAX", "f8", "s", "state", "CPU s of this pass's longest threaded read"),
    ("I", "IO_READ_N", "i8", "-", "state", "threaded reads in this pass"),
)


@leaf
def stop_if_needed(w):
    """``stopThreadedIOIfNeeded`` then ``startThreadedIO``: whether this write pass
    is threaded (at least 2N clients with pending replies)."""
    I = w.I
    F = w.F
    if I[IO_THREADS] <= 1:
        return False
    if I[PW_N] < 2 * I[IO_THREADS]:
        if I[IO_ACTIVE]:
            I[IO_ACTIVE] = 0
            F[IO_ON_TIME] += F[T] - F[IO_ON_SINCE]
        return False
    if not I[IO_ACTIVE]:
        I[IO_ACTIVE] = 1
        F[IO_ON_SINCE] = F[T]
    return True


@step
def thread_clocks(w):
    """The write pass's per-thread clocks, all at the main thread's clock now."""
    return np.full(w.I[IO_THREADS], w.F[T])


@leaf
def reads_threaded(w):
    """Whether this pass's reads go to the I/O threads (``postponeClientRead``)."""
    return w.I[IO_ACTIVE] != 0 and w.I[IO_DO_READS] != 0


@leaf
def add_read(w, cost):
    """One threaded ``read()`` + parse of ``cost`` CPU s, done by some I/O thread."""
    F = w.F
    F[IO_READ_SUM] += cost
    F[IO_READ_MAX] = max(F[IO_READ_MAX], cost)
    w.I[IO_READ_N] += 1


@step
def finish_reads(w, row):
    """The main thread waits for the read pass's slowest thread (it read its own
    share meanwhile, and spins for the rest): that thread's CPU, charged to ``row``."""
    F = w.F
    I = w.I
    n = I[IO_READ_N]
    if n == 0:
        return
    per = (n + I[IO_THREADS] - 1) // I[IO_THREADS]
    busy(w, row, max(F[IO_READ_SUM] / n * per, F[IO_READ_MAX]))
    F[IO_READ_SUM] = 0.0
    F[IO_READ_MAX] = 0.0
    I[IO_READ_N] = 0


def configure(b) -> None:
    """``io-threads`` and ``io-threads-do-reads``."""
    from redsim.model import state as S

    server = b.scenario.server
    b.I[S.IO_THREADS] = server.io_threads
    b.I[S.IO_DO_READS] = 1 if server.io_threads_do_reads else 0


__all__ = ["IO_PHASE"]
