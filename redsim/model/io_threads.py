"""Threaded I/O: Redis 6.0-7.x's fan-out-and-wait, and Redis 8's async threads.

**Redis 6/7 (``engine.io-threads-model: sync``).** Follows ``src/networking.c``
of 7.0.15: ``IOThreadMain``, ``handleClientsWithPendingWritesUsingThreads``,
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
  command itself. The poll's part of each read (``engine.cpu.poll-event``:
  ``epoll_wait`` reporting the connection, ``readQueryFromClient`` calling
  ``postponeClientRead``) stays on the main thread, which still polls every
  connection.
- Clients cross cores at every pass: a thread that reads or writes a client
  the main thread last touched takes it over (``engine.cpu.io-handoff``: the
  client struct's hot lines, the query or reply buffer's head, the list
  node), and so does the main thread when it runs the command of a client
  another thread read and, after a write pass, when it looks at every client
  another thread wrote (``updateClientMemUsageBucket``,
  ``clientHasPendingReplies``). Without threaded reads the main thread pays
  one hand-over per request; with them two, and the threads two.
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
  single longest read, rather than summed per thread; every share is
  charged the hand-over, the main thread's own too (it takes none), which
  lengthens a pass by at most one hand-over per client of the main
  thread's share when that share is the slowest.
- The main thread's hand-overs of threaded reads are (N - 1) / N per read,
  their mean under round-robin, not counted client by client.
- The I/O threads progress at the main thread's rate (``CPU_SLOW``): under
  processor sharing threads that are runnable as often get the same share.

**Redis 8 / Valkey 8 (``engine.io-threads-model: async``).** Follows Redis
8's ``src/iothread.c`` (``assignClientToIOThread``,
``processClientsFromIOThread``, ``processClientsFromMainThread``,
``IOThreadBeforeSleep``): each of the N - 1 I/O threads runs its own event
loop; a client is bound to one thread when accepted (the one with the fewest
clients); that thread reads and parses its queries and hands the client to
the main thread through a queue; the main thread executes the commands and
hands the client back; the thread writes the reply. The main thread touches
no socket of a normal client.

- Each I/O thread is one server with a clock (``io_clock``): a read starts
  when the request's bytes are in and the thread is free, a write when the
  main thread hands the client back and the thread is free. An idle thread
  sleeps in ``epoll_wait``: the work that wakes it pays the wake-up and one
  loop's fixed work (``engine.cpu.wakeup`` + ``iteration``), as the main
  thread does.
- A hand-over costs the thread that takes the client ``engine.cpu.io-handoff``
  (the main thread when it takes a parsed command, charged as its read time;
  the I/O thread when it takes the client back to write): the client's
  struct, query and reply buffers come from another core's cache, plus the
  list and lock work of the queue.
- The threads sleep when idle (they do not spin), so the host counts an I/O
  thread runnable only while it works (``IO_BUSY``) and sets its own rate
  (``IO_SLOW``).

Simplifications of the async model:
- Client c is bound to thread 1 + c mod (N - 1): "fewest clients" when
  connections open in order and none close.
- A request is read and parsed whole by one read, charged as the first
  command's bytes times the request's commands (exact when a mix's commands
  have one size); the rest of a request longer than the query buffer's read
  is read by the main thread's model at no extra cost.
- Hand-overs are one client at a time, at once. Redis moves clients in
  batches: an I/O thread sends what it parsed at the end of its loop's
  iteration, or every 16 (``IO_THREAD_MAX_PENDING_CLIENTS``); the main thread
  sends a thread's clients back every 16 or when that thread's batch is done.
  The model's clients cross up to a batch's work (16 commands, ~15 µs at 1M
  commands/s) earlier.
- Valkey 8's variant (``src/io_threads.c``) differs in who polls and how
  clients are dispatched: the main thread keeps the event loop, offloads
  each read and write as a job (and ``epoll_wait`` itself), and prefetches the
  batch's keys. Its per-request split is the same (read, parse and write on an
  I/O thread; execution and the hand-overs on the main thread); its spinning
  threads and dynamic thread count are not modelled.
"""

from __future__ import annotations

import numpy as np

from redsim.model import thread_clock
from redsim.model.jit import leaf, step
from redsim.model.main_thread import busy
from redsim.model.state import (
    C_HANDOFF,
    C_ITER,
    C_POLL_EV,
    C_READ,
    C_READ_B,
    C_WAKE,
    IO_ACTIVE,
    IO_ASYNC,
    IO_BUSY,
    IO_DO_READS,
    IO_ON_SINCE,
    IO_ON_TIME,
    IO_PHASE,
    IO_READ_MAX,
    IO_READ_N,
    IO_READ_SUM,
    IO_SLOW,
    IO_THREADS,
    PW_N,
    STAT_IO_READS,
    STAT_IO_WRITES,
    T,
)
from redsim.observe import metrics as M

FIELDS = (
    ("I", "STAT_IO_READS", "i8", "-", "counter",
     "server.stat_io_reads_processed: clients read in threaded read passes (INFO "
     "io_threaded_reads_processed)"),
    ("I", "STAT_IO_WRITES", "i8", "-", "counter",
     "server.stat_io_writes_processed: clients written in threaded write passes, the main "
     "thread's share included (INFO io_threaded_writes_processed)"),
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
    ("I", "IO_ASYNC", "i8", "-", "config",
     "1: Redis 8's async I/O threads serve the clients (engine.io-threads-model async, "
     "io-threads > 1)"),
    ("F", "IO_SLOW", "f8", "-", "state",
     "wall s per CPU s an I/O thread gets now (1: a core each; the host sets it)"),
    ("F", "IO_BUSY", "f8", "s", "counter",
     "wall s the async I/O threads have worked since the start, summed over threads"),
    ("F", "C_HANDOFF", "f8", "s", "config",
     "CPU of taking over a client another thread last touched, s"),
    ("F", "C_POLL_EV", "f8", "s", "config",
     "of a read's CPU, the poll's part, which stays on the main thread with "
     "Redis 6/7's threaded reads, s"),
    ("io", "clock", "f8", "s", "state",
     "when the thread is next free, s: an async I/O thread's clock, or each thread's "
     "in a Redis 6/7 write pass (row 0: the main thread)"),
)


RESULTS = (
    M.Metric("io_threaded_reads_processed", "-", M.SUM, "INFO io_threaded_reads_processed",
             value=M.counter("STAT_IO_READS")),
    M.Metric("io_threaded_writes_processed", "-", M.SUM, "INFO io_threaded_writes_processed",
             value=M.counter("STAT_IO_WRITES")),
)
"""The summary keys this module's figures make (``observe/metrics.py``)."""


@leaf
def stop_if_needed(w):
    """``stopThreadedIOIfNeeded`` then ``startThreadedIO``: whether this write pass
    is threaded (at least 2N clients with pending replies)."""
    I = w.I
    F = w.F
    if I[IO_THREADS] <= 1 or I[IO_ASYNC]:
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


@leaf
def start_pass(w):
    """A threaded write pass starts: every thread's clock (``io_clock``, thread 0
    the main thread's) at the main thread's now; writes go on those clocks."""
    for th in range(w.I[IO_THREADS]):
        w.io_clock[th] = w.F[T]
    w.I[IO_PHASE] = 1
    w.I[STAT_IO_WRITES] += w.I[PW_N]


@leaf
def pass_thread(w, k):
    """The thread that writes the write pass's k-th client (k mod N) and when it
    starts on it: after its earlier clients and, for an I/O thread, after
    taking the client over from the main thread, which queued its reply."""
    th = k % w.I[IO_THREADS]
    t = w.io_clock[th]
    if th > 0:
        t += w.F[C_HANDOFF] * w.F[IO_SLOW]
    return th, t


@leaf
def end_pass(w):
    """The threaded write pass is over: when its last thread finished."""
    w.I[IO_PHASE] = 0
    last = w.io_clock[0]
    for th in range(1, w.I[IO_THREADS]):
        last = max(last, w.io_clock[th])
    return last


@leaf
def after_pass(w, n):
    """CPU s of the main thread's walk over the ``n`` clients of a write pass
    once the threads are done: each that an I/O thread wrote is taken back
    (all but the main thread's own share, ceil(n / N))."""
    nth = w.I[IO_THREADS]
    return w.F[C_HANDOFF] * (n - (n + nth - 1) // nth)


@leaf
def reads_threaded(w):
    """Whether this pass's reads go to the I/O threads (``postponeClientRead``)."""
    return w.I[IO_ACTIVE] != 0 and w.I[IO_DO_READS] != 0


@leaf
def postpone_read(w, cost):
    """One connection's read of ``cost`` CPU s goes to the threads
    (``postponeClientRead``); returns the main thread's CPU s for it: the
    poll's part, and taking the client back to run its command if another
    thread read it ((N - 1) / N of reads). The reading thread takes the client
    over, then reads and parses the rest."""
    F = w.F
    nth = w.I[IO_THREADS]
    poll = min(F[C_POLL_EV], cost)
    threaded = cost - poll + F[C_HANDOFF]
    F[IO_READ_SUM] += threaded
    F[IO_READ_MAX] = max(F[IO_READ_MAX], threaded)
    w.I[IO_READ_N] += 1
    w.I[STAT_IO_READS] += 1
    return poll + F[C_HANDOFF] * (nth - 1) / nth


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


# ---- Redis 8's async I/O threads --------------------------------------------


@leaf
def thread_of(w, c):
    """The I/O thread connection c is bound to (``assignClientToIOThread``)."""
    return 1 + c % (w.I[IO_THREADS] - 1)


@step
def take(w, th, t_ready, cost):
    """I/O thread ``th`` does ``cost`` CPU s of work that is ready at ``t_ready``,
    after what it already has; returns when it is done. A thread that is idle by
    then slept in ``epoll_wait`` and pays the wake-up and its loop's fixed work."""
    F = w.F
    end, wall = thread_clock.run(w.io_clock, th, t_ready, cost, F[C_WAKE] + F[C_ITER],
                                 F[IO_SLOW])
    F[IO_BUSY] += wall
    return end


@leaf
def read_request(w, c, t_in):
    """Connection c's thread reads and parses the request whose bytes came in at
    ``t_in`` (``readQueryFromClient`` in the I/O thread); returns when the main
    thread can have it."""
    F = w.F
    nbytes = w.cn_next_bytes[c] * w.cn_cmds_left[c] - w.cn_partial[c]
    return take(w, thread_of(w, c), t_in, F[C_READ] + F[C_READ_B] * max(nbytes, 0))


@leaf
def write_start(w, c):
    """Connection c goes back to its thread to write its replies
    (``processClientsFromMainThread``): when that thread starts writing."""
    F = w.F
    th = thread_of(w, c)
    end = take(w, th, F[T], F[C_HANDOFF])
    return th, end


@leaf
def write_done(w, th, start, end):
    """Thread ``th`` wrote from ``start`` to ``end`` (its clock and busy time)."""
    w.io_clock[th] = end
    w.F[IO_BUSY] += end - start


def configure(b) -> None:
    """``io-threads``, ``io-threads-do-reads``, ``engine.io-threads-model``,
    ``engine.cpu.io-handoff`` and ``engine.cpu.poll-event``."""
    from redsim.model import state as S
    from redsim.model.blueprint import US

    sc = b.scenario
    server = sc.server
    b.I[S.IO_THREADS] = server.io_threads
    asynchronous = sc.engine.io_threads_model == "async" and server.io_threads > 1
    b.I[S.IO_ASYNC] = 1 if asynchronous else 0
    # Redis 8 deprecates io-threads-do-reads: its threads always read.
    b.I[S.IO_DO_READS] = 1 if server.io_threads_do_reads and not asynchronous else 0
    b.F[S.IO_SLOW] = 1.0
    b.F[S.C_HANDOFF] = sc.engine.cpu.io_handoff * US * sc.engine.cpu.scale
    b.F[S.C_POLL_EV] = sc.engine.cpu.poll_event * US * sc.engine.cpu.scale
    b.fill("io", clock=np.zeros(max(server.io_threads, 1)))


__all__ = ["IO_PHASE"]
