"""The clock of a thread other than the main one: an I/O thread.

No Redis source: the simulator's account of a helper thread that serves its
work in order (Redis 8's I/O threads, ``io_threads.py``; a same-host
client's threads batch their work in passes instead, ``client_threads.py``).
Each thread is one server with a clock (when
it is next free): work ready at t starts at t or when the thread is free,
whichever is later; a thread idle by then slept in ``epoll_wait`` and pays a
wake-up first; its CPU takes ``slow`` wall s per CPU s (the share of a core
the host gives that kind of thread).
"""

from __future__ import annotations

from redsim.model.jit import leaf


@leaf
def run(clocks, th, t_ready, cost, wake, slow):
    """Thread ``th`` (its clock in ``clocks``) does ``cost`` CPU s of work ready at
    ``t_ready``, plus ``wake`` CPU s if it is idle by then. Returns when it is done
    and the wall s it worked."""
    start = clocks[th]
    if start < t_ready:
        start = t_ready
        cost += wake
    wall = cost * slow
    clocks[th] = start + wall
    return start + wall, wall
