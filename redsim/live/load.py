"""Driving a live server: redis-benchmark, bulk loads, raw connections, clean-up.

Every key this module writes starts with a prefix (``redsim:calib:`` by
default) that ``delete_prefix`` removes at the end, so a server is left as it
was found; on a server redsim did not start they also carry a TTL (``ttl_s``,
``expire_untimed``), so that keys a killed calibration left expire by
themselves. ``redis_benchmark`` runs the ``redis-benchmark`` binary (Debian's
``redis-tools``) with a custom command line, so its keys carry the prefix too
(``SET redsim:calib:__rand_int__ v``: the benchmark puts a 12-digit number in
place of ``__rand_int__``); it dies with the process that started it.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import socket
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from redsim.live.server import die_with_parent, find_redis

PREFIX = "redsim:calib:"


@dataclass(frozen=True)
class BenchResult:
    """One redis-benchmark run: its command and load, and what it printed."""

    command: str
    clients: int
    pipeline: int
    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    client_cpu_s: float = math.nan
    """redis-benchmark's own CPU (user + system, all its threads), s."""

    @property
    def client_us_per_request(self) -> float:
        """redis-benchmark's own CPU per request (command), µs (NaN: not measured)."""
        return self.client_cpu_s / self.requests * 1e6


def key_pattern(prefix: str = PREFIX) -> str:
    """The key redis-benchmark writes: the prefix and a 12-digit random number."""
    return prefix + "__rand_int__"


def redis_benchmark(host: str, port: int, command: list[str], *, clients: int = 50,
                    pipeline: int = 1, requests: int = 100_000, keyspace: int = 100_000,
                    timeout_s: float = 300.0) -> BenchResult:
    """Run ``redis-benchmark`` with a custom command against host:port.

    Args:
        command: the command and its arguments (``["SET", key_pattern(), "xxx"]``).
        clients, pipeline, requests: ``-c``, ``-P``, ``-n``.
        keyspace: ``-r``, the range of ``__rand_int__``.
        timeout_s: the run is killed after this long (a stuck server cannot hang
            a calibration). It also dies with this process (``PR_SET_PDEATHSIG``):
            a killed calibration's load does not go on writing after its
            guardian's clean-up.
    """
    args = [find_redis("redis-benchmark"), "-h", host, "-p", str(port), "-c", str(clients),
            "-P", str(pipeline), "-n", str(requests), "-r", str(keyspace), "--csv", *command]
    before = _children_cpu_s()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s,
                          stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
    client_cpu = _children_cpu_s() - before
    rows = [r for r in csv.reader(io.StringIO(proc.stdout)) if len(r) >= 7]
    if proc.returncode != 0 or len(rows) < 2:
        raise RuntimeError(f"redis-benchmark failed (exit {proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()[-300:]}")
    head, row = rows[0], rows[-1]
    col = {name: i for i, name in enumerate(head)}
    return BenchResult(command=" ".join(command[:1]), clients=clients, pipeline=pipeline,
                       requests=requests, rps=float(row[col["rps"]]),
                       p50_ms=float(row[col["p50_latency_ms"]]),
                       p99_ms=float(row[col["p99_latency_ms"]]), client_cpu_s=client_cpu)


def _children_cpu_s() -> float:
    """CPU s of this process's finished children (``getrusage(RUSAGE_CHILDREN)``):
    the difference around a ``subprocess.run`` is that child's own CPU."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def fill(client: Any, n: int, value_size: int, *, prefix: str = PREFIX, start: int = 0,
         batch: int = 1000, ttl_s: int | None = None) -> None:
    """SET ``n`` keys ``prefix + 12-digit index`` to values of ``value_size`` bytes,
    each with a TTL of ``ttl_s`` seconds (None: none)."""
    value = b"x" * value_size
    for lo in range(start, start + n, batch):
        pipe = client.pipeline(transaction=False)
        for i in range(lo, min(lo + batch, start + n)):
            pipe.set(f"{prefix}{i:012d}", value, ex=ttl_s)
        pipe.execute()


def unlink_prefix(client: Any, prefix: str = PREFIX, until: float | None = None
                  ) -> tuple[int, bool]:
    """UNLINK every key starting with ``prefix`` (SCAN + UNLINK, 1,000 at a time:
    never KEYS, which would block a large server), stopping at ``until``
    (``time.monotonic()`` s; None: no bound). Returns (keys removed, finished)."""
    removed = 0
    batch: list[bytes] = []
    for key in client.scan_iter(match=prefix + "*", count=1000):
        batch.append(key)
        if len(batch) >= 1000:
            removed += client.unlink(*batch)
            batch = []
            if until is not None and time.monotonic() > until:
                return removed, False
    if batch:
        removed += client.unlink(*batch)
    return removed, True


def delete_prefix(client: Any, prefix: str = PREFIX) -> int:
    """UNLINK every key starting with ``prefix``; returns how many were removed."""
    return unlink_prefix(client, prefix)[0]


def expire_untimed(client: Any, match: str, ttl_s: int) -> int:
    """Give a TTL of ``ttl_s`` seconds to each key matching ``match`` (a SCAN
    pattern, or one key's name) that has none: the keys of a load whose command
    cannot carry one (INCR, MSET, LPUSH...). Returns how many it gave one to."""
    keys = client.scan_iter(match=match, count=1000) if "*" in match else iter(
        [match.encode()])
    given = 0
    while True:
        batch = list(itertools.islice(keys, 1000))
        if not batch:
            return given
        pipe = client.pipeline(transaction=False)
        for k in batch:
            pipe.ttl(k)
        untimed = [k for k, ttl in zip(batch, pipe.execute(), strict=True) if ttl == -1]
        pipe = client.pipeline(transaction=False)
        for k in untimed:
            pipe.expire(k, ttl_s)
        given += sum(map(bool, pipe.execute()))


def settle(client: Any, timeout_s: float = 10.0) -> None:
    """Wait until the lazy-free thread has freed what UNLINK handed it (a big
    collection is freed in the background, which would show as memory going
    down during the next measurement), then one serverCron period more (dict
    resizing)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if int(client.info("memory").get("lazyfree_pending_objects", 0)) == 0:
            break
        time.sleep(0.02)
    time.sleep(0.2)


def resp(*args: str | bytes) -> bytes:
    """One RESP request."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a.encode() if isinstance(a, str) else a
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class Connections:
    """``n`` plain TCP connections to a server, each used for one request at a time.

    Closed on exit; used to see what connections cost a server (its
    ``mem_clients_normal``) without a client library's own behaviour in between.
    """

    def __init__(self, host: str, port: int, n: int) -> None:
        self.socks: list[socket.socket] = []
        try:
            for _ in range(n):
                s = socket.create_connection((host, port), timeout=10)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.socks.append(s)
        except BaseException:
            self.close()
            raise

    def request_all(self, requests: list[bytes]) -> None:
        """Send ``requests[i % len]`` on connection i, then read every reply.

        Each reply is a simple string or integer, or a bulk short enough to
        arrive in one segment (the requests here are SET/PING/GET of small values).
        """
        for i, s in enumerate(self.socks):
            s.sendall(requests[i % len(requests)])
        for s in self.socks:
            data = s.recv(65536)
            if not data:
                raise RuntimeError("the server closed a connection")
            if data.startswith(b"-"):
                raise RuntimeError(f"the server refused a request: {data[:100]!r}")

    def close(self) -> None:
        for s in self.socks:
            s.close()
        self.socks = []

    def __enter__(self) -> Connections:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
