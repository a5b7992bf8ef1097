"""The compiled main thread as Python drives it: build, run until, refill, finish.

No Redis source: the boundary between the SimPy driver (``simulation.py``) and
the numba kernel. Python code outside ``redsim/model`` goes through ``Kernel``
instead of indexing the kernel's scalars, so the state's layout stays the
model's business.
"""

from __future__ import annotations

from typing import Any

from redsim.kernel_compile import ensure_compiled
from redsim.model import admin, arena
from redsim.model import state as S
from redsim.model.build import build_world
from redsim.model.clients import start_sources
from redsim.model.db import grow_write_once
from redsim.model.event_loop import finish, run
from redsim.model.gauges import finish_windows
from redsim.model.replication import CHILD_LEAD
from redsim.model.world import pack
from redsim.traces import group_traces

FORK_CHILDREN = {"bgsave": S.CHILD_RDB, "bgrewriteaof": S.CHILD_AOF}
"""A scenario event's command → the fork child it asks for."""


class Kernel:
    """One run's kernel state and the calls that advance it.

    Attributes:
        world: every array (``state.World``); replaced when the write-once keys'
            rows grow, so read it from here after running.
        streams: the random streams that feed it (``rng.RandomStreams``).
        info: sizes the result needs (windows, groups' names).
    """

    def __init__(self, scenario: Any, seed: int, keyspace_images: Any = None) -> None:
        ensure_compiled()  # says so and compiles once if the cache is cold
        self.scenario = scenario
        key = ""
        if keyspace_images is not None:
            # The config side names what shapes the keyspace (loader.NOT_KEYSPACE).
            from redsim.config.loader import keyspace_hash

            key = keyspace_hash(scenario, seed)
        # Parsed here, above the kernel (validation has read them already: cached).
        traces = group_traces(scenario)
        self.world, self.streams, self.info = build_world(scenario, seed, keyspace_images, key,
                                                          traces)
        self._ref = pack(self.world)  # the kernel's view; self.world owns the arrays

    @property
    def now(self) -> float:
        """The main thread's clock, simulated s."""
        return float(self.world.F[S.T])

    def start(self) -> None:
        """Start every client group's sources (their first think times and arrivals)."""
        start_sources(self._ref)

    def run_until(self, t_stop: float) -> float:
        """Advance the main thread iteration by iteration until ``t_stop`` (it
        stops at an iteration boundary, or asleep until ``t_stop``); refill the
        random buffers and grow the write-once keys' rows whenever it asks.
        Returns the main thread's clock."""
        while run(self._ref, t_stop) == S.RET_REFILL:
            self._refill()
        if self.world.I[S.RNG_OVERRUN]:
            raise RuntimeError("random-number buffer overrun (a redsim bug): "
                               "an iteration drew more numbers than the buffer holds")
        if self.world.I[S.AL_OVERRUN]:
            raise RuntimeError("allocator slab overrun (a redsim bug): an iteration "
                               "needed more new slabs than the spare held")
        return self.now

    def _refill(self) -> None:
        self.streams.refill()
        w = self.world
        if w.I[S.KS_LOW]:
            extra = max(4 * int(w.I[S.KS_FREE_LOW]),
                        (len(w.ks_cost) - int(w.I[S.KS_ONCE_LO])) // 4)
            self.world = grow_write_once(w, extra)
            self._ref = pack(self.world)
        w = self.world
        if w.I[S.AL_LOW]:
            self.world = arena.grow(w, max(4 * int(w.I[S.AL_SPARE_LOW]), len(w.sb_bin) // 4))
            self._ref = pack(self.world)

    def request(self, event: Any) -> None:
        """A scenario event's command arrives: BGSAVE / BGREWRITEAOF (``request_fork``)
        or an admin command (``request_admin``)."""
        if event.do in FORK_CHILDREN:
            self.request_fork(event.do)
        else:
            self.request_admin(event)

    def request_fork(self, command: str) -> None:
        """``BGSAVE`` / ``BGREWRITEAOF`` arrives; the main thread runs it with
        the next file events (``fork.fork_command``)."""
        self.world.I[S.FORK_REQ] = FORK_CHILDREN[command]

    def request_admin(self, event: Any) -> None:
        """A scenario event's DEBUG POPULATE, DEL of a pattern, FLUSHALL or MEMORY
        PURGE arrives; the main thread runs it with the next file events
        (``admin.admin_command``)."""
        admin.request(self.world, event, self.scenario)

    # -- the host's view (redsim/host): CPU demand, packets, the share given ----

    def cpu_account(self) -> tuple[float, float, int, int]:
        """Counters since the start: the main thread's CPU s, its wall s running or
        runnable, TCP segments read and sent (``main_thread``, ``netstack``)."""
        F, I = self.world.F, self.world.I
        return (float(F[S.CPU_USED]), float(F[S.CPU_HELD]), int(I[S.NET_RX_SEGS]),
                int(I[S.NET_TX_SEGS]))

    def io_threads_account(self) -> tuple[int, float]:
        """The I/O threads besides the main thread (``io-threads`` - 1), and the wall s
        each has been runnable since the start (``io_threads``): Redis 6/7's
        threads while started (spinning on a core each), Redis 8's async ones
        while they work (their mean)."""
        F, I = self.world.F, self.world.I
        n = int(I[S.IO_THREADS]) - 1
        if I[S.IO_ASYNC]:
            return n, float(F[S.IO_BUSY]) / n
        on = float(F[S.IO_ON_TIME])
        if I[S.IO_ACTIVE]:
            on += max(self.now - float(F[S.IO_ON_SINCE]), 0.0)
        return n, on

    def set_cpu_rate(self, rate: float) -> None:
        """From the next iteration on, the main thread gets ``rate`` CPU s per wall
        s (1: a core to itself); Redis 6/7's I/O threads, which run when it waits
        for them, progress at the same rate."""
        F = self.world.F
        F[S.CPU_SLOW] = 1.0 / rate
        if not self.world.I[S.IO_ASYNC]:
            F[S.IO_SLOW] = F[S.CPU_SLOW]

    def client_account(self) -> tuple[int, float]:
        """The same-host client threads (``client_threads``) and the wall s each has
        worked since the start (their mean)."""
        F, I = self.world.F, self.world.I
        n = int(I[S.CLI_THREADS])
        return n, (float(F[S.CLI_BUSY]) / n if n else 0.0)

    def set_client_rate(self, rate: float) -> None:
        """From now on, each same-host client thread gets ``rate`` CPU s per wall s."""
        self.world.F[S.CLI_SLOW] = 1.0 / rate

    def set_io_rate(self, rate: float) -> None:
        """From now on, each async I/O thread gets ``rate`` CPU s per wall s (Redis
        6/7's threads follow the main thread's rate instead)."""
        if self.world.I[S.IO_ASYNC]:
            self.world.F[S.IO_SLOW] = 1.0 / rate

    @property
    def child_serialising(self) -> bool:
        """A fork child is alive and still producing its file (CPU-bound): a disk
        child while it has chunks to write, a diskless relay's child while it is
        not blocked on its full pipe (``replication.child_advance``'s bound, its
        progress taken up to now without moving it)."""
        w = self.world
        I, F = w.I, w.F
        if I[S.CHILD] == S.CHILD_NONE:
            return False
        if I[S.CHILD_SOCKET] and I[S.REPL_CHILD] == 2:
            cap = min(I[S.REPL_RDB_B], I[S.REPL_PIPE_READ] + CHILD_LEAD)
            ran = max(F[S.T] - F[S.REPL_CHILD_AT], 0.0)
            made = I[S.REPL_CHILD_MADE] + ran * F[S.REPL_CHILD_BPS]
            return bool(made < cap)
        return bool(I[S.CHILD_CHUNKS] > 0)

    def delay_child(self, lost: float) -> None:
        """The fork child got ``lost`` s less CPU than its wall time: its remaining
        chunks come that much later (``fork.py``'s timeline is CPU-bound), or a
        relay's child has made that much less of its RDB (coarse: the whole
        window counts, though the child may have blocked on its pipe in it)."""
        if not self.child_serialising:
            return
        w = self.world
        if w.I[S.CHILD_SOCKET] and w.I[S.REPL_CHILD] == 2:
            w.F[S.REPL_CHILD_AT] += lost
        else:
            w.F[S.CHILD_NEXT] += lost

    @property
    def lazyfree_running(self) -> bool:
        """The lazyfree thread has jobs it has not finished (it is CPU-bound)."""
        w = self.world
        return bool(w.I[S.LF_N] > 0 and w.F[S.LF_FREE_AT] > w.F[S.T])

    def delay_lazyfree(self, lost: float) -> None:
        """The lazyfree thread got ``lost`` s less CPU than its wall time: its
        current job ends that much later, and every queued job starts and ends
        that much later (``lazyfree.py``'s timeline is CPU-bound)."""
        w = self.world
        now = w.F[S.T]
        cap, first = int(w.I[S.LF_CAP]), int(w.I[S.LF_FIRST])
        for j in range(int(w.I[S.LF_N])):
            slot = (first + j) % cap
            if w.lf_t0[slot] > now:
                w.lf_t0[slot] += lost
            w.lf_t1[slot] += lost
        if w.I[S.LF_N] > 0:
            w.F[S.LF_FREE_AT] += lost

    def allocator(self) -> dict[str, Any]:
        """The arena now: per small class, regions and slabs in use, full and partly
        used (``arena.slab_table``), and each slab's share of regions in use."""
        return {"table": arena.slab_table(self.world),
                "utilisation": arena.slab_utilisation(self.world)}

    def finish(self, horizon: float) -> int:
        """Close the books at ``horizon``: requests still in flight count up to
        it, the last window closes. Returns the requests still pending."""
        pending = int(finish(self._ref, horizon))
        finish_windows(self._ref, horizon)
        return pending
