"""Run Redis instances on one host: SimPy drives their kernels window by window.

No Redis source: the driver of ``redsim/host``. Each instance is a kernel of
its own (``redsim.kernel.Kernel``, the same as a single run's). The host's
cores are re-divided every ``host.scheduler-window`` (1 ms by default): over
the last window each thread's CPU demand and the kernel's network work are
measured, ``scheduler.shares`` gives each main thread and fork child its rate
for the next window, and every kernel runs to the window's end at its rate
(``Kernel.set_cpu_rate``). The kernels only meet at window boundaries, so
which one runs first inside a window does not matter, and a run is
deterministic.

SimPy holds the rest, as in ``redsim/simulation.py``: the scenario's timed
events (sent to every instance at once), the progress bar, and the host's
loop as one process that stops at every control event.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import simpy

from redsim.host.instances import instance_seed, split
from redsim.host.network import NetworkCosts
from redsim.host.scheduler import share
from redsim.kernel import Kernel
from redsim.simulation import Simulation, control_timeout

BACKGROUND = (("child_serialising", "delay_child"), ("lazyfree_running", "delay_lazyfree"))
"""The background threads a host's cores run beside each instance's main thread,
CPU-bound while they work: (the ``Kernel`` property that says one is working,
the ``Kernel`` method that pushes its work back by CPU it did not get)."""

HOST_FIELDS = ("t0", "t1", "redis_cpu", "children_cpu", "softirq_cpu", "irq_cpu",
               "threads_runnable", "io_cpu", "client_cpu", "lazyfree_cpu")
"""One row per scheduler window (``HostSimulation.windows``): its start and end
(s), CPU s the main threads and fork children used, the kernel's network work
(softirq and hard-IRQ CPU s), the mean number of runnable threads, and the
CPU s of the instances' I/O threads, of same-host client threads and of the
lazyfree threads."""


class HostSimulation:
    """One run of a scenario's instances on its host, with one seed."""

    def __init__(self, scenario: Any, seed: int | None = None,
                 progress: bool | None = None) -> None:
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else int(seed)
        n = scenario.instance_count
        self.parts = split(scenario) if n > 1 or isinstance(scenario.instances, list) \
            else [scenario]
        seeds = [instance_seed(self.seed, i) for i in range(n)] if n > 1 else [self.seed]
        self.kernels = [Kernel(sc, s) for sc, s in zip(self.parts, seeds, strict=True)]
        self.seeds = seeds
        host = scenario.host
        self.cores = float(host.cores) if host.cores is not None else math.inf
        self.net = NetworkCosts.from_scenario(host)
        self.window = float(host.scheduler_window)
        self.horizon = float(scenario.duration)
        self.env = simpy.Environment()
        if progress is None:
            progress = sys.stderr.isatty() and self.horizon >= 60.0
        self.progress = progress
        self._bar = None
        self.windows: list[tuple[float, ...]] = []
        """The host's record per scheduler window (``HOST_FIELDS``)."""
        self.instance_cpu: list[np.ndarray] = []
        """Per window, each main thread's CPU s (the host's per-instance CPU share)."""
        self.slab_snapshots: list[list] = [[] for _ in self.kernels]

    # -- the host's loop ---------------------------------------------------------

    def _host(self):
        env = self.env
        ks = self.kernels
        n = len(ks)
        last = np.array([k.cpu_account() for k in ks], dtype=float)
        # Started 6/7 I/O threads spin: runnable for as long as they are started;
        # Redis 8's, and same-host client threads, are runnable while they work.
        io = _Threads([k.io_threads_account for k in ks])
        cli = _Threads([k.client_account for k in ks])
        rates = np.ones(n)
        # Each instance's CPU-bound background threads, one row per kind: its fork
        # child while it serialises, its lazyfree thread while it frees
        # (model/lazyfree.py); a row's share of a core, 1 when cores are not short.
        bg_rate = np.ones((len(BACKGROUND), n))
        held_est = None
        held_prev = np.zeros(n)
        clock_last = np.array([k.now for k in ks])
        t = 0.0
        while t < self.horizon:
            t_next = min(t + self.window, env.peek(), self.horizon)
            if t_next <= t:
                t_next = min(t + self.window, self.horizon)
            dt = t_next - t
            working = [[i for i, k in enumerate(ks) if getattr(k, running)]
                       for running, _ in BACKGROUND]
            for j, (_, delay) in enumerate(BACKGROUND):
                for i in working[j]:
                    if bg_rate[j, i] < 1.0:  # what it did not get pushes its work back
                        getattr(ks[i], delay)(dt * (1.0 - bg_rate[j, i]))
            for i, k in enumerate(ks):
                k.set_cpu_rate(rates[i])
                k.set_io_rate(io.rate[i])
                k.set_client_rate(cli.rate[i])
                if k.now < t_next:
                    k.run_until(t_next)
            now = np.array([k.cpu_account() for k in ks], dtype=float)
            delta = now - last
            last = now
            used = delta[:, 0]
            softirq, irq = self.net.cpu(float(delta[:, 2].sum()), float(delta[:, 3].sum()), dt)
            child_cpu, bio_cpu = (float(sum(bg_rate[j, i] for i in working[j])) * dt
                                  for j in range(len(BACKGROUND)))
            n_bg = sum(len(idx) for idx in working)
            # A kernel stops at an iteration's end, past the window's at times, and
            # then sits out the next: shares are over its own clock's advance.
            clocks = np.array([k.now for k in ks])
            moved = clocks - clock_last
            clock_last = clocks
            seen = moved > 0
            held = held_prev.copy()
            held[seen] = np.minimum(delta[seen, 1] / moved[seen], 1.0)
            held_prev = held
            io_cpu = io.observe(seen, moved)
            cli_cpu = cli.observe(seen, moved)
            runnable = float(held.sum() + n_bg + io.b.sum() + cli.b.sum())
            # The next window's shares, from this one's runnable shares (one
            # window's lag), smoothed over two windows against see-saws.
            if math.isfinite(self.cores):
                held_est = held if held_est is None else 0.5 * (held_est + held)
                # Fork children and lazyfree threads are CPU-bound while they work.
                b = np.concatenate([held_est, np.ones(n_bg), io.b, cli.b])
                free = max(self.cores - (softirq + irq) / dt, 0.01 * self.cores)
                r = share(b, free)
                rates = r[:n].copy()
                bg_rate = np.ones((len(BACKGROUND), n))
                pos = n
                for j, idx in enumerate(working):
                    bg_rate[j, idx] = r[pos:pos + len(idx)]
                    pos += len(idx)
                first = io.assign(r, pos)
                cli.assign(r, first)
            self.windows.append((t, t_next, float(used.sum()), child_cpu, softirq, irq,
                                 runnable, io_cpu, cli_cpu, bio_cpu))
            self.instance_cpu.append(used.copy())
            t = t_next
            if t < self.horizon:
                yield env.timeout(t - env.now)

    def _event(self, at: float, event, i: int):
        """A scenario event, sent to instance ``i`` at ``at`` s (``Simulation._event``)."""
        yield control_timeout(self.env, at)
        k = self.kernels[i]
        self.slab_snapshots[i].append((k.now, f"before {event.do}", k.allocator()))
        k.request(event)

    # The progress bar and its process read env, horizon, scenario, progress and
    # _bar, as here.
    _progress = Simulation._progress
    _open_bar = Simulation._open_bar

    def run(self):
        """Simulate the whole horizon and return a ``HostResult``."""
        from redsim.host.result import HostResult
        from redsim.result import Result

        for k in self.kernels:
            k.start()
        self._open_bar()
        # Each instance's own events: the scenario's, and with instances: [...]
        # its entry's too.
        for i, part in enumerate(self.parts):
            for ev in part.events:
                self.env.process(self._event(float(ev.at), ev, i))
        host = self.env.process(self._host())
        self.env.run(until=host)
        results = []
        for i, k in enumerate(self.kernels):
            pending = k.finish(self.horizon)
            self.slab_snapshots[i].append((k.now, "end", k.allocator()))
            results.append(Result.from_world(self.parts[i], self.seeds[i], k.world, k.info,
                                             pending, self.slab_snapshots[i]))
        if self._bar is not None:
            self._bar.close()
        return HostResult.build(self.scenario, self.seed, results,
                                np.array(self.windows, dtype=float).reshape(-1, len(HOST_FIELDS)),
                                np.array(self.instance_cpu, dtype=float).reshape(
                                    -1, len(self.kernels)))


class _Threads:
    """One kind of helper thread of every instance, for the host's scheduler: Redis's
    I/O threads, or a same-host client's threads. Each instance's ``account()``
    gives its thread count and the wall s each has been runnable; the threads of
    one instance are alike, so they get one rate (``rate``)."""

    def __init__(self, accounts: list) -> None:
        self.accounts = accounts
        self.n = np.array([a()[0] for a in accounts], dtype=np.int64)
        self.last = np.zeros(len(accounts))
        self.frac = np.zeros(len(accounts))
        self.rate = np.ones(len(accounts))
        self.b = np.zeros(0)
        """Each thread's runnable share over the last window (one entry per thread)."""

    def observe(self, seen: np.ndarray, moved: np.ndarray) -> float:
        """Read the window just run (the instances whose clocks moved); returns the
        CPU s the threads used in it."""
        on = np.array([a()[1] for a in self.accounts], dtype=float)
        self.frac[seen] = np.minimum((on - self.last)[seen] / moved[seen], 1.0)
        cpu = float(np.dot(self.n, (on - self.last) * self.rate))
        self.last = on
        self.b = np.repeat(self.frac, self.n)
        return cpu

    def assign(self, r: np.ndarray, first: int) -> int:
        """Take the rates from the scheduler's ``r``, whose entries from ``first`` on
        are these threads'; returns the index after them."""
        self.rate = np.ones(len(self.accounts))
        for i, k in enumerate(self.n):
            if k > 0:
                self.rate[i] = r[first]
                first += k
        return first


def uses_host(scenario: Any) -> bool:
    """Whether a scenario needs the host's driver: several instances (or a list
    of them), or cores shared among a host's threads."""
    return (scenario.instance_count > 1 or isinstance(scenario.instances, list)
            or scenario.host.cores is not None)
