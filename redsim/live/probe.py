"""What a live server reports: INFO snapshots and their differences.

A ``Snapshot`` is one ``INFO everything`` (parsed by redis-py), taken with the
monotonic clock and, for a server on this machine, the main thread's
voluntary context switches from ``/proc/PID/task/PID/status`` (each one is an
``epoll_wait`` that slept: Redis's main thread blocks nowhere else). Calibration
and validation work on differences of two snapshots, so they never need
``CONFIG RESETSTAT`` and leave a user's statistics alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


def main_thread_cpu_s(info: dict[str, Any]) -> float:
    """``used_cpu_sys_main_thread + used_cpu_user_main_thread``, s (Redis ≥ 6.2)."""
    try:
        return float(info["used_cpu_sys_main_thread"]) + float(info["used_cpu_user_main_thread"])
    except KeyError:
        raise RuntimeError("INFO has no used_cpu_*_main_thread: Redis 6.2 or later is "
                           "needed to measure the main thread's CPU") from None


def voluntary_switches(pid: int | None) -> int | None:
    """The main thread's voluntary context switches, or None when not readable."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/task/{pid}/status") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


@dataclass(frozen=True)
class Snapshot:
    """One INFO of a server, with when it was taken.

    Attributes:
        t: ``time.monotonic()`` when the reply arrived, s.
        info: the parsed ``INFO everything``.
        switches: main-thread voluntary context switches (None if unknown).
    """

    t: float
    info: dict[str, Any]
    switches: int | None

    @property
    def cpu_s(self) -> float:
        """Main-thread CPU used so far, s."""
        return main_thread_cpu_s(self.info)

    def calls(self, command: str) -> int:
        """Calls of ``command`` so far (``INFO commandstats``)."""
        return int(self.info.get(f"cmdstat_{command.lower()}", {}).get("calls", 0))

    def usec(self, command: str) -> int:
        """µs spent in ``command``'s procedure so far (``INFO commandstats``)."""
        return int(self.info.get(f"cmdstat_{command.lower()}", {}).get("usec", 0))

    def get(self, field: str, default: float = 0.0) -> float:
        return float(self.info.get(field, default))


def snapshot(client: Any, pid: int | None = None) -> Snapshot:
    """An INFO snapshot of the server behind ``client`` (``pid`` if it is local)."""
    info = client.info("everything")
    return Snapshot(time.monotonic(), info, voluntary_switches(pid))


@dataclass(frozen=True)
class Delta:
    """What happened between two snapshots of one server."""

    a: Snapshot
    b: Snapshot

    @property
    def cpu_s(self) -> float:
        return self.b.cpu_s - self.a.cpu_s

    @property
    def wall_s(self) -> float:
        return self.b.t - self.a.t

    def calls(self, command: str) -> int:
        return self.b.calls(command) - self.a.calls(command)

    def usec(self, command: str) -> int:
        return self.b.usec(command) - self.a.usec(command)

    def field(self, name: str) -> float:
        return self.b.get(name) - self.a.get(name)

    @property
    def commands(self) -> int:
        return int(self.field("total_commands_processed"))

    @property
    def sleeps(self) -> int | None:
        if self.a.switches is None or self.b.switches is None:
            return None
        return self.b.switches - self.a.switches


def local_pid(client: Any, host: str) -> int | None:
    """The server's PID if it runs on this machine (loopback), else None."""
    if host not in ("127.0.0.1", "localhost", "::1"):
        return None
    pid = int(client.info("server").get("process_id", 0))
    return pid if voluntary_switches(pid) is not None else None
