"""A throw-away local ``redis-server``: started on 127.0.0.1, stopped by its PID.

``RedisServer`` starts Debian's (or any) ``redis-server`` binary on the
loopback address and a free port, with its own temporary ``--dir`` (so RDB and
AOF files land there), no save points and no AOF unless asked, and removes the
folder when it stops. It stops the process it started, by PID: SIGTERM, then
SIGKILL if the server has not exited within a few seconds. The child is also
asked to die with its parent (Linux ``PR_SET_PDEATHSIG``), and an ``atexit``
hook stops it if the program ends without calling ``stop()``, so a crashed or
interrupted calibration leaves no server behind; the folder of a server whose
starter was killed outright is removed by the next ``start()`` (each folder
names its starter's PID).

Nothing here connects to a server it did not start.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any

# How long a fresh server gets to answer PING, s (a cold start takes ~10 ms).
START_TIMEOUT_S = 10.0
# How long SIGTERM gets before SIGKILL, s (shutdown with no save is immediate).
STOP_TIMEOUT_S = 5.0

INSTALL_HINT = (
    "install Debian's packages (`apt-get install redis-server redis-tools`) or set "
    "REDSIM_REDIS_SERVER to the redis-server binary"
)


class RedisNotFound(RuntimeError):
    """No ``redis-server`` binary could be found."""


def find_redis(tool: str = "redis-server") -> str:
    """Path of a Redis binary: ``$REDSIM_REDIS_SERVER`` (for redis-server, or the
    same folder for the other tools), else the one on ``PATH``.

    Raises:
        RedisNotFound: with the install hint, when there is none.
    """
    env = os.environ.get("REDSIM_REDIS_SERVER")
    if env:
        path = Path(env) if tool == "redis-server" else Path(env).with_name(tool)
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    found = shutil.which(tool)
    if found is None:
        raise RedisNotFound(f"no {tool} found: {INSTALL_HINT}")
    return found


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def die_with_parent() -> None:  # pragma: no cover - runs in the child
    """A ``preexec_fn``: the child gets SIGTERM when its parent exits (Linux
    ``PR_SET_PDEATHSIG``), so a SIGKILLed calibration leaves neither a server nor
    a redis-benchmark load running."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


DIR_PREFIX = "redsim-redis-"
OWNER_FILE = "owner.pid"
"""In each data folder: the PID of the program that started the server."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_orphans() -> int:
    """Remove the data folders of servers whose starter is gone (killed before it
    could clean up; the server itself died with it). Returns how many."""
    removed = 0
    for d in Path(tempfile.gettempdir()).glob(DIR_PREFIX + "*"):
        try:
            owner = int((d / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue  # not ours, or being created right now
        if not _pid_alive(owner):
            shutil.rmtree(d, ignore_errors=True)
            removed += 1
    return removed


_LIVE: weakref.WeakSet[RedisServer] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop()


class RedisServer:
    """A ``redis-server`` this process started, on 127.0.0.1.

    Use as a context manager::

        with RedisServer(config={"maxmemory": "64mb"}) as srv:
            r = srv.client()
            r.set("k", "v")

    Args:
        config: extra directives, passed as ``--name value`` (values as Redis
            takes them: ``"64mb"``, ``"yes"``, ``""`` for an empty save).
        binary: the redis-server to run (default: ``find_redis()``).
        keep_dir: leave the data folder after stopping (for a post-mortem).
    """

    def __init__(self, config: dict[str, Any] | None = None, *, binary: str | None = None,
                 keep_dir: bool = False) -> None:
        self.binary = binary or find_redis()
        self.config = dict(config or {})
        self.keep_dir = keep_dir
        self.host = "127.0.0.1"
        self.port = 0
        self.dir: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    # -- lifecycle -------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The server's PID while it runs."""
        return self.proc.pid if self.proc is not None else None

    def start(self) -> RedisServer:
        """Start the server and wait until it answers PING; returns self."""
        if self.proc is not None:
            return self
        remove_orphans()
        self.dir = Path(tempfile.mkdtemp(prefix=DIR_PREFIX))
        (self.dir / OWNER_FILE).write_text(str(os.getpid()))
        last_error = ""
        for _ in range(3):  # a free port can be taken between the probe and the bind
            self.port = free_port()
            args = [self.binary, "--port", str(self.port), "--bind", self.host,
                    "--dir", str(self.dir), "--logfile", "redis.log", "--daemonize", "no",
                    "--save", "", "--appendonly", "no", "--protected-mode", "yes"]
            for name, value in self.config.items():
                args += [f"--{name}", str(value)]
            self.proc = subprocess.Popen(args, cwd=self.dir, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         preexec_fn=die_with_parent)
            _LIVE.add(self)
            ok, last_error = self._wait_ready()
            if ok:
                return self
            self._reap()
        self._cleanup_dir()
        raise RuntimeError(f"redis-server did not start: {last_error}")

    def _wait_ready(self) -> tuple[bool, str]:
        assert self.proc is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                return False, (err.strip() or self._log_tail()) or f"exit {self.proc.returncode}"
            with contextlib.suppress(OSError):
                with socket.create_connection((self.host, self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64).startswith(b"+PONG"):
                        return True, ""
            time.sleep(0.02)
        return False, f"no answer on {self.host}:{self.port} within {START_TIMEOUT_S:g} s"

    def _log_tail(self, lines: int = 5) -> str:
        if self.dir is None:
            return ""
        log = self.dir / "redis.log"
        if not log.exists():
            return ""
        return " | ".join(log.read_text(errors="replace").strip().splitlines()[-lines:])

    def _reap(self) -> None:
        """Stop our process by its PID: SIGTERM, then SIGKILL."""
        proc, self.proc = self.proc, None
        _LIVE.discard(self)
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()

    def _cleanup_dir(self) -> None:
        if self.dir is not None and not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def stop(self) -> None:
        """Stop the server (by PID) and remove its data folder."""
        self._reap()
        self._cleanup_dir()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- talking to it ---------------------------------------------------------

    def client(self, **kwargs: Any):
        """A redis-py client of this server."""
        import redis

        kwargs.setdefault("socket_timeout", 60)
        return redis.Redis(host=self.host, port=self.port, **kwargs)

    def version(self) -> str:
        """The server's ``redis_version``."""
        return str(self.client().info("server")["redis_version"])

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.proc is not None else "stopped"
        return f"RedisServer({self.host}:{self.port}, {state})"
