"""What a calibration leaves on a server it did not start: bounded, and undone.

``redsim calibrate --i-know-this-writes`` writes keys (``load.PREFIX``) to a
server redsim did not start and may change its configuration (``maxmemory``
and ``maxmemory-policy`` for the eviction load). It undoes both in ``finally``
blocks; this module covers the faults that skip them (SIGKILL, SIGTERM, the
OOM killer) and the clean-up a dead server kept from finishing:

- a ``Record`` of the run, in a small JSON file named by host and port in the
  user's cache directory (``record_path``): the calibration's PID and, per
  directive, the value it had before calibration changed it and the values
  calibration set. ``Target.config_set`` writes it *before* each CONFIG SET;
- a guardian, ``python -m redsim.live.guard``: a child in a session of its own
  (so a Ctrl-C or a signal to the calibration's process group does not reach
  it) that blocks on a pipe from the calibration. When the pipe closes without
  the word ``done`` (the calibration died, however it died, or failed in its
  own clean-up) it puts the recorded configuration back, UNLINKs the prefix's
  keys (SCAN + UNLINK, never KEYS), within ``CLEANUP_BOUND_S``, removes the
  record and logs what it did beside it (``log_path``);
- ``cleanup``, what the guardian does, which ``redsim calibrate --cleanup``
  also runs from a record whose guardian could not finish (the server was
  down, the guardian was killed too).

The last line of defence is the keys' TTL (``Target.key_ttl_s``): keys that
nothing deleted expire by themselves. A value is put back only where the
server still holds one calibration set: a directive someone changed since is
left alone, and said so.

``redis-benchmark`` runs die with the calibration (``load.redis_benchmark``),
so none writes after the guardian's clean-up; the guardian still makes a
second pass ``GRACE_S`` later for requests that were in flight.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from redsim.live import load

FORMAT = 1
"""The record file's format (its ``redsim-calibration-record``)."""
CLEANUP_BOUND_S = 60.0
"""How long the guardian may spend restoring and deleting, s: past it, it
stops, keeps the record (for ``--cleanup``) and leaves the rest to the TTL.
About 1 M keys take 3-5 s to SCAN + UNLINK on loopback."""
READY_TIMEOUT_S = 20.0
"""How long a new guardian gets to say it is watching, s (it takes ~0.1-0.3 s:
a Python start and redis-py's import); calibration does not write without one."""
POLL_S = 0.5
"""How often the guardian checks that its parent is alive besides the pipe, s
(a forked grandchild holding the pipe open would hide the parent's death)."""
GRACE_S = 0.5
"""Wait before the guardian's second pass, s: for requests in flight when the
calibration died (a pipeline already sent, a redis-benchmark being killed)."""
EXIT_WAIT_S = 5.0
"""How long a calibration that ended cleanly waits for its guardian to exit, s."""


class GuardError(RuntimeError):
    """A calibration cannot be guarded, or a record is in the way or unreadable."""


# ---- the record ----------------------------------------------------------------------


def records_dir() -> Path:
    """Where records live: ``calibrate/`` in redsim's cache folder, the kernel
    cache's (``$REDSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/redsim``, else
    ``~/.cache/redsim``)."""
    base = os.environ.get("REDSIM_CACHE_DIR") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "redsim"
    return Path(base) / "calibrate"


def record_path(host: str, port: int) -> Path:
    """The record of a calibration of ``host:port`` (``127.0.0.1_6379.json``; any
    character other than a letter, digit, dot or dash becomes ``_``)."""
    return records_dir() / f"{re.sub(r'[^A-Za-z0-9.-]', '_', host)}_{int(port)}.json"


def log_path(record: Path) -> Path:
    """The guardian's log beside its record, written only when it has something
    to say (it undid a calibration, or failed); kept: it says what it did."""
    return record.with_suffix(".log")


def process_start(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks since boot (``/proc/PID/stat``
    field 22): with the PID, it names one process, even after the PID is reused.
    None where it cannot be read (no such process, not Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def process_alive(pid: int, start: str | None) -> bool:
    """Process ``pid`` runs and is the one that started at ``start`` (when known)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = process_start(pid)
    return start is None or now is None or now == start


@dataclass
class Record:
    """A calibration of one server, as its guardian and ``--cleanup`` need it.

    Attributes:
        host, port: the server.
        prefix: the keys calibration writes start with it.
        pid, pid_start: the calibration's process (``process_start``).
        started: when it started, UTC (ISO 8601).
        key_ttl_s: the TTL its keys carry, s.
        guardian_pid, guardian_start: its guardian's process (None until started).
        config: per directive changed, ``{"was": value before calibration,
            "set": [values calibration set]}``, values as CONFIG GET spells them.
    """

    host: str
    port: int
    prefix: str
    pid: int
    pid_start: str | None
    started: str
    key_ttl_s: int | None
    guardian_pid: int | None = None
    guardian_start: str | None = None
    config: dict[str, dict[str, Any]] = field(default_factory=dict)

    def save(self, path: Path, *, new: bool = False) -> None:
        """Write the record (a temporary file renamed over it: a reader never
        sees half of one). ``new``: only if there is none yet (else
        FileExistsError: two calibrations of one server starting together)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"redsim-calibration-record": FORMAT, **asdict(self)},
                                  indent=1) + "\n")
        if new:
            try:
                os.link(tmp, path)  # fails if the name exists, where a rename would not
            finally:
                tmp.unlink()
        else:
            os.replace(tmp, path)

    @classmethod
    def read(cls, path: Path) -> Record:
        """The record in ``path``. Raises GuardError naming the file when it is not one."""
        try:
            data = json.loads(path.read_text())
            if data.pop("redsim-calibration-record") != FORMAT:
                raise ValueError("another format")
            rec = cls(**data)
            if not isinstance(rec.config, dict) or not all(
                    isinstance(c, dict) and "was" in c and isinstance(c.get("set"), list)
                    for c in rec.config.values()):
                raise ValueError("config is not {name: {was, set}}")
            return rec
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise GuardError(f"{path}: expected a calibration record (JSON written by "
                             f"redsim calibrate), could not read it: {exc}") from None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def running(self) -> bool:
        """The calibration that wrote the record still runs."""
        return process_alive(self.pid, self.pid_start)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def refuse_if_recorded(path: Path) -> None:
    """Raise GuardError if a record of this server is in the way: another
    calibration of it runs, or one was killed and its clean-up did not finish
    (calibrating now would record its changed configuration as the original)."""
    if not path.exists():
        return
    rec = Record.read(path)
    if rec.running():
        raise GuardError(f"another redsim calibrate (pid {rec.pid}) is calibrating "
                         f"{rec.address} ({path}): wait for it to end")
    if rec.guardian_pid and process_alive(rec.guardian_pid, rec.guardian_start):
        raise GuardError(f"a killed calibration of {rec.address} is being cleaned up by its "
                         f"guardian (pid {rec.guardian_pid}): try again within "
                         f"{CLEANUP_BOUND_S:.0f} s")
    raise GuardError(f"a calibration of {rec.address} (pid {rec.pid}, started {rec.started}) "
                     f"was killed and its clean-up did not finish ({path}): run `redsim "
                     f"calibrate --cleanup --host {rec.host} --port {rec.port}` first")


# ---- undoing a calibration -----------------------------------------------------------


def restore_config(client: Any, config: dict[str, dict[str, Any]]) -> list[str]:
    """Put back each recorded directive whose value is still one calibration set;
    returns a line per directive saying what was done."""
    lines = []
    for name, c in config.items():
        now = str(client.config_get(name).get(name))
        was = str(c["was"])
        if now == was:
            lines.append(f"{name} is {was}, as before calibration")
        elif now in {str(v) for v in c["set"]}:
            client.config_set(name, was)
            lines.append(f"{name}: {now} -> {was}, as before calibration")
        else:
            lines.append(f"{name} is {now}: neither what calibration found ({was}) nor a "
                         "value it set, so someone changed it since; left alone")
    return lines


def connect(host: str, port: int, until: float | None) -> Any:
    """A redis-py client of host:port that answered PING, retried until ``until``
    (monotonic s; None: one try). Raises ``redis.ConnectionError`` after."""
    import redis

    while True:
        client = redis.Redis(host=host, port=port, socket_timeout=30,
                             socket_connect_timeout=5)
        try:
            client.ping()
            return client
        except (redis.ConnectionError, redis.TimeoutError):
            if until is None or time.monotonic() + 1.0 > until:
                raise
            time.sleep(1.0)


def cleanup(rec: Record, until: float | None = None, say: Callable[[str], None] = print
            ) -> bool:
    """Undo what the recorded calibration left on its server: the configuration
    first (an ``allkeys`` policy would evict the owner's keys), then its keys,
    twice ``GRACE_S`` apart; within ``until`` (monotonic s; None: no bound).
    Says a line per thing done; returns whether it finished."""
    client = connect(rec.host, rec.port, until)
    for line in restore_config(client, rec.config):
        say(line)
    removed, done = load.unlink_prefix(client, rec.prefix, until)
    if done:
        time.sleep(GRACE_S)
        more, done = load.unlink_prefix(client, rec.prefix, until)
        removed += more
    say(f"deleted {removed:,} key(s) {rec.prefix}* (SCAN + UNLINK)"
        + ("" if done else f"; stopped at the time bound, the rest expire within "
           f"{rec.key_ttl_s} s (their TTL)"))
    return done


def cleanup_server(host: str, port: int, say: Callable[[str], None] = print) -> None:
    """``redsim calibrate --cleanup``: undo what a killed calibration of host:port
    left, from its record (the configuration it recorded, its keys), and
    remove the record; without one, delete the keys with calibration's prefix
    only. Raises GuardError while that calibration still runs."""
    path = record_path(host, port)
    rec = Record.read(path) if path.exists() else None
    if rec is None:
        say(f"{host}:{port}: no record of a calibration in {path.parent}: its configuration "
            "is left as it is")
        rec = Record(host, port, load.PREFIX, 0, None, _now(), None)
    else:
        if rec.running():
            raise GuardError(f"the calibration that wrote {path} (pid {rec.pid}) still runs: "
                             "its own clean-up, or its guardian's, comes when it ends")
        say(f"{rec.address}: a calibration (pid {rec.pid}, started {rec.started}) left {path}")
    cleanup(rec, None, lambda line: say("  " + line))
    if path.exists():
        path.unlink()
        say(f"  removed {path}")


# ---- the guardian, from the calibration's side ---------------------------------------


class Guard:
    """A calibration's record and guardian, for a server it did not start.

    ``with Guard(host, port, key_ttl_s=...) as g:`` refuses when a record is in
    the way (``refuse_if_recorded``), writes the record, starts the guardian and
    waits until it watches; ``note_config`` rewrites the record before each
    configuration change. Leaving the block without an exception (the
    calibration cleaned up itself) removes the record and sends ``done``; with
    one, the guardian undoes what is left and the block waits for it (bounded).
    """

    def __init__(self, host: str, port: int, *, key_ttl_s: int | None,
                 prefix: str = load.PREFIX, path: Path | None = None) -> None:
        self.path = path or record_path(host, port)
        pid = os.getpid()
        self.record = Record(host, port, prefix, pid, process_start(pid), _now(), key_ttl_s)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The guardian's PID while it runs."""
        return self.proc.pid if self.proc is not None else None

    def start(self) -> Guard:
        refuse_if_recorded(self.path)
        try:
            self.record.save(self.path, new=True)
        except FileExistsError:
            refuse_if_recorded(self.path)  # another calibration's, written just now
            raise
        try:
            self.proc = _spawn(self.path, self.record.pid)
        except BaseException:
            self.path.unlink(missing_ok=True)
            raise
        self.record.guardian_pid = self.proc.pid
        self.record.guardian_start = process_start(self.proc.pid)
        self.record.save(self.path)
        return self

    def note_config(self, config: dict[str, dict[str, Any]]) -> None:
        """Record the configuration calibration changed (or is about to change)."""
        self.record.config = {k: {"was": v["was"], "set": list(v["set"])}
                              for k, v in config.items()}
        self.record.save(self.path)

    def close(self, clean: bool) -> None:
        """``clean``: the calibration undid everything itself; the record goes and the
        guardian is told. Else the guardian does it, and this waits for it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if clean:
            self.path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                proc.stdin.write(b"done\n")  # type: ignore[union-attr]
        with contextlib.suppress(OSError):
            proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(EXIT_WAIT_S if clean else CLEANUP_BOUND_S + EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()

    def __enter__(self) -> Guard:
        return self.start()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(clean=exc_type is None)


def _spawn(record: Path, parent: int) -> subprocess.Popen[bytes]:
    """Start the guardian in a session of its own and wait for its ``ready``."""
    import redsim

    env = dict(os.environ)
    root = str(Path(redsim.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen([sys.executable, "-m", "redsim.live.guard", str(record),
                             str(parent)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd="/", env=env,
                            start_new_session=True)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT_S)
    line = proc.stdout.readline() if ready else b""
    proc.stdout.close()
    if line.strip() != b"ready":
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        raise GuardError(f"the calibration's guardian did not start within "
                         f"{READY_TIMEOUT_S:g} s (`{sys.executable} -m redsim.live.guard` "
                         "fails?); nothing was written")
    return proc


# ---- the guardian, its own side ------------------------------------------------------


def wait_for_parent(fd: int, parent: int) -> str:
    """Block until the calibration is over: ``done`` (it said so) or ``gone`` (its
    end of the pipe closed without it, or this process was handed to another
    parent: the calibration died)."""
    said = b""
    while True:
        readable, _, _ = select.select([fd], [], [], POLL_S)
        if readable:
            chunk = os.read(fd, 64)
            said += chunk
            if b"done" in said:
                return "done"
            if not chunk:
                return "gone"
        elif os.getppid() != parent:
            return "gone"


def _logger(record: Path) -> Callable[[str], None]:
    """Lines to the guardian's log (``log_path``), each with the time and its PID."""
    def log(text: str) -> None:
        with open(log_path(record), "a") as f:
            f.write(f"{_now()} guardian {os.getpid()}: {text}\n")

    return log


def main(argv: list[str] | None = None) -> int:
    """``python -m redsim.live.guard RECORD PARENT_PID``: the guardian."""
    args = sys.argv[1:] if argv is None else argv
    record, parent = Path(args[0]), int(args[1])
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # the terminal's, not ours to act on
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    if wait_for_parent(0, parent) == "done":
        return 0
    if not record.exists():
        return 0  # the calibration cleaned up and removed it, then died
    log = _logger(record)
    log(f"calibration {parent} ended without cleaning up; undoing what it left")
    try:
        rec = Record.read(record)
        with _bounded(CLEANUP_BOUND_S):
            done = cleanup(rec, time.monotonic() + CLEANUP_BOUND_S, log)
    except Exception as exc:  # noqa: BLE001 - the log is all a detached process has
        log(f"could not finish ({type(exc).__name__}: {exc}); `redsim calibrate --cleanup` "
            "does it from the record")
        return 1
    if not done:
        log(f"stopped after {CLEANUP_BOUND_S:g} s; the record stays for `redsim calibrate "
            "--cleanup`")
        return 1
    record.unlink(missing_ok=True)
    log(f"done; removed {record}")
    return 0


@contextlib.contextmanager
def _bounded(seconds: float) -> Iterator[None]:
    """Raise TimeoutError in the block after ``seconds`` (+ the reply timeout's
    slack): a server that stops answering mid-command cannot hold the guardian."""
    def expire(*_: object) -> None:
        raise TimeoutError(f"over {seconds:g} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(int(seconds) + 10)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


if __name__ == "__main__":
    sys.exit(main())
