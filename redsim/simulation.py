"""Run one scenario: SimPy drives the compiled main-thread kernel.

SimPy holds what acts on the Redis main thread from outside: the progress
reporter and the scenario's timed events (BGSAVE / BGREWRITEAOF). The
``everysec`` fsync thread, the disk and the fork child are timelines inside
the kernel (``model/event_loop.py`` says why). The main thread is a
SimPy process that, each time it runs, lets the kernel advance iteration by
iteration up to the next scheduled control event (``env.peek()``), then
yields until the thread's own clock. Control events are scheduled with
SimPy's URGENT priority, so at one instant they always act before the main
thread resumes; among themselves they keep their scheduling order.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import simpy
from simpy.core import URGENT

from redsim.kernel import Kernel


class ControlTimeout(simpy.Event):
    """A timeout that fires before the main thread resumes at the same instant:
    SimPy's ``Timeout`` scheduled at URGENT priority instead of NORMAL. An event
    type of its own, defined as SimPy defines ``Timeout`` and ``Initialize``
    (the event triggered, with no value, in its constructor), so that no
    caller sets another object's state."""

    def __init__(self, env: simpy.Environment, delay: float) -> None:
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, URGENT, delay)


def control_timeout(env: simpy.Environment, delay: float) -> simpy.Event:
    """A ``ControlTimeout`` of ``delay`` s."""
    return ControlTimeout(env, delay)


class Simulation:
    """One run of one scenario with one seed."""

    def __init__(self, scenario: Any, seed: int | None = None,
                 progress: bool | None = None, keyspace_images: Any = None) -> None:
        """``keyspace_images``: a ``model.keyspace_image.KeyspaceImages`` to
        start from a keyspace built before with the same keyspace fields and
        seed, and to keep this one's in (a sweep's worker passes one)."""
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else int(seed)
        self.kernel = Kernel(scenario, self.seed, keyspace_images)
        self.env = simpy.Environment()
        self.horizon = float(scenario.duration)
        if progress is None:
            progress = sys.stderr.isatty() and self.horizon >= 60.0
        self.progress = progress
        self._bar = None

    @property
    def world(self):
        """The kernel's arrays (``state.World``), for tests and inspection."""
        return self.kernel.world

    # -- SimPy processes -------------------------------------------------------

    def _main_thread(self):
        env = self.env
        while True:
            t_stop = min(env.peek(), self.horizon)
            t = self.kernel.run_until(t_stop)
            if t >= self.horizon:
                return
            yield env.timeout(max(t, t_stop) - env.now)

    def _event(self, at: float, event):
        """A scenario event: at ``at`` s its command is sent (BGSAVE,
        BGREWRITEAOF, DEBUG POPULATE, DEL, FLUSHALL, MEMORY PURGE); the main
        thread runs it with the next file events. The allocator's slabs are
        recorded as the command arrives (before it runs)."""
        yield control_timeout(self.env, at)
        self._snapshot(f"before {event.do}")
        self.kernel.request(event)

    def _snapshot(self, label: str) -> None:
        self.slab_snapshots.append((self.kernel.now, label, self.kernel.allocator()))

    def _progress(self):
        step = max(self.horizon / 200.0, float(self.scenario.sample_interval))
        done = 0.0
        while done < self.horizon:
            yield control_timeout(self.env, min(step, self.horizon - done))
            done = self.env.now
            if self._bar is not None:
                self._bar.n = round(min(done, self.horizon), 3)
                self._bar.refresh()

    def _open_bar(self) -> None:
        """With ``progress``, a tqdm bar in simulated seconds and the process that
        moves it (reads env, horizon, scenario and progress, sets _bar)."""
        if not self.progress:
            return
        from tqdm import tqdm

        self._bar = tqdm(total=self.horizon, unit="sim-s", desc=self.scenario.name,
                         leave=False, dynamic_ncols=True,
                         disable=os.environ.get("REDSIM_NO_PROGRESS") == "1")
        self.env.process(self._progress())

    # -- running ---------------------------------------------------------------

    def run(self):
        """Simulate the whole horizon and return a ``Result``."""
        from redsim.result import Result

        self.kernel.start()
        self._open_bar()
        self.slab_snapshots = []
        for ev in self.scenario.events:
            self.env.process(self._event(float(ev.at), ev))
        main = self.env.process(self._main_thread())
        self.env.run(until=main)
        pending = self.kernel.finish(self.horizon)
        self._snapshot("end")
        if self._bar is not None:
            self._bar.close()
        return Result.from_world(self.scenario, self.seed, self.kernel.world, self.kernel.info,
                                 pending, self.slab_snapshots)


__all__ = ["ControlTimeout", "Simulation", "control_timeout"]
