"""A calibration of a server redsim did not start, killed mid-way (issue #44).

Each test starts its own redis-server on 127.0.0.1 and a free port with a
throw-away --dir (``RedisServer``, stopped by PID at the end) and points
``redsim calibrate --host --port --i-know-this-writes`` at it, as a user would
at theirs: not ``--start``. Records go to the test's own cache folder
(``XDG_CACHE_HOME``). Skipped where no redis-server or redis-benchmark is found.

The server's configuration before calibration is chosen unlike anything
calibration sets or Redis defaults to (maxmemory 1gb, volatile-ttl), so
"put back" cannot pass by accident.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from redsim.live.server import RedisServer

pytestmark = [pytest.mark.live, pytest.mark.slow]

OWNER = {"maxmemory": "1073741824", "maxmemory-policy": "volatile-ttl"}
"""The owner's configuration of the test's server (maxmemory 1gb)."""
REACH_S = 60.0
"""Bound on the calibration reaching its eviction load (~3 s on the 2-vCPU VM)."""
UNDONE_S = 20.0
"""Bound on the guardian undoing it after SIGKILL (~2 s for ~400,000 keys on the
2-vCPU VM); the guardian's own bound is 60 s, for a million keys and more."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has exited
    except OSError:
        return False


def _each(r, command: str) -> list:
    """``command`` (TTL, TYPE) of every key of the server, pipelined."""
    keys = list(r.scan_iter(count=1000))
    pipe = r.pipeline(transaction=False)
    for k in keys:
        pipe.execute_command(command, k)
    return pipe.execute() if keys else []


def _config(r) -> dict[str, str]:
    return {k: r.config_get(k)[k] for k in OWNER}


def _owned_server() -> RedisServer:
    srv = RedisServer().start()
    r = srv.client()
    for k, v in OWNER.items():
        r.config_set(k, v)
    assert _config(r) == OWNER
    return srv


def _calibrate(srv: RedisServer, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "redsim", "calibrate", "--host", srv.host, "--port",
            str(srv.port), "--i-know-this-writes", "--no-progress", "--out", str(out), *extra]


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "REDSIM_CACHE_DIR"}
    return dict(env, XDG_CACHE_HOME=str(cache), REDSIM_NO_PROGRESS="1")


def _start_eviction(srv: RedisServer, tmp_path: Path) -> tuple[subprocess.Popen, dict]:
    """``redsim calibrate --only eviction`` against ``srv`` (100,000 base keys:
    ``--max-dataset 1mb``), returned once it has changed the eviction policy
    and written keys, with its record as it was then."""
    r = srv.client()
    proc = subprocess.Popen(_calibrate(srv, tmp_path / "c.yaml",
                                       "--only", "eviction", "--max-dataset", "1mb"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(tmp_path / "cache"))
    deadline = time.monotonic() + REACH_S
    while r.config_get("maxmemory-policy")["maxmemory-policy"] != "allkeys-lru" \
            or r.dbsize() == 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"calibration did not reach its eviction load in {REACH_S:g} s "
                        f"(exit {proc.returncode}):\n{out.decode()}\n{err.decode()}")
        time.sleep(0.01)
    return proc, json.loads(_record(srv, tmp_path).read_text())


def _record(srv: RedisServer, tmp_path: Path) -> Path:
    """Where a calibration of ``srv`` keeps its record (``_env``'s cache dir)."""
    return tmp_path / "cache" / "redsim" / "calibrate" / f"127.0.0.1_{srv.port}.json"


def _wait_gone(pid: int, seconds: float = 5.0) -> None:
    """Return once process ``pid`` has exited, or after ``seconds``."""
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _cleanup(srv: RedisServer, tmp_path: Path) -> subprocess.CompletedProcess:
    """``redsim calibrate --cleanup`` of ``srv``, as a user would run it."""
    return subprocess.run([sys.executable, "-m", "redsim", "calibrate", "--cleanup",
                           "--host", srv.host, "--port", str(srv.port)],
                          capture_output=True, text=True, env=_env(tmp_path / "cache"),
                          timeout=60)


def _stop(pid: int | None) -> None:
    """SIGKILL a process the test's calibration started (its guardian), if left."""
    if pid and _alive(pid):
        os.kill(pid, signal.SIGKILL)


def _kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)  # no finally, no atexit
    proc.communicate()


def test_a_killed_calibration_is_undone_by_its_guardian(tmp_path):
    srv = _owned_server()
    guardian = None
    try:
        r = srv.client()
        proc, rec = _start_eviction(srv, tmp_path)
        guardian = rec["guardian_pid"]
        # The record holds the owner's values, written before calibration changed them.
        assert {k: c["was"] for k, c in rec["config"].items()} == OWNER
        assert _config(r) != OWNER
        _kill(proc)
        t0 = time.monotonic()
        while (r.dbsize() or _config(r) != OWNER) and time.monotonic() - t0 < UNDONE_S:
            time.sleep(0.05)
        took = time.monotonic() - t0
        assert _config(r) == OWNER, f"not put back within {UNDONE_S:g} s"
        assert r.dbsize() == 0, f"{r.dbsize()} keys left after {UNDONE_S:g} s"
        # Nothing writes after the clean-up: the load's redis-benchmark died with it.
        time.sleep(1.0)
        assert r.dbsize() == 0
        record = _record(srv, tmp_path)
        _wait_gone(guardian)
        assert not _alive(guardian) and not record.exists()
        log = record.with_suffix(".log").read_text()
        assert "maxmemory-policy: allkeys-lru -> volatile-ttl, as before calibration" in log
        assert f"calibration {rec['pid']} ended without cleaning up" in log
        print(f"undone {took:.1f} s after SIGKILL")
    finally:
        _stop(guardian)
        srv.stop()


def test_cleanup_undoes_a_run_whose_guardian_was_killed_too(tmp_path):
    srv = _owned_server()
    guardian = None
    try:
        r = srv.client()
        proc, rec = _start_eviction(srv, tmp_path)
        guardian = rec["guardian_pid"]
        os.kill(guardian, signal.SIGKILL)  # first, so that it cannot clean up
        _kill(proc)
        _wait_gone(guardian)
        assert not _alive(guardian)
        assert _config(r) != OWNER
        # What is left goes by itself: every key has a TTL, at most the record's.
        ttls = _each(r, "TTL")
        assert len(ttls) == r.dbsize() > 0
        assert all(0 < t <= rec["key_ttl_s"] for t in ttls), sorted(set(ttls))[:5]
        assert rec["key_ttl_s"] <= 600  # --only eviction: minutes, not hours
        # A new calibration will not record the changed values as the owner's.
        again = subprocess.run(_calibrate(srv, tmp_path / "d.yaml",
                                          "--only", "memory"),
                               capture_output=True, text=True, env=_env(tmp_path / "cache"),
                               timeout=60)
        assert again.returncode == 2
        assert f"redsim calibrate --cleanup --host 127.0.0.1 --port {srv.port}" in again.stderr
        assert r.dbsize() == len(ttls)
        done = _cleanup(srv, tmp_path)
        assert done.returncode == 0, done.stderr
        assert _config(r) == OWNER and r.dbsize() == 0
        said = done.stdout
        assert f"a calibration (pid {rec['pid']}" in said
        assert "maxmemory: " in said and "-> 1073741824, as before calibration" in said
        assert f"deleted {len(ttls):,} key(s) redsim:calib:*" in said
        assert not _record(srv, tmp_path).exists()
        # A second time: no record, nothing to do, and it says so.
        twice = _cleanup(srv, tmp_path)
        assert twice.returncode == 0 and "no record of a calibration" in twice.stdout
        assert "deleted 0 key(s)" in twice.stdout
    finally:
        _stop(guardian)
        srv.stop()


def test_what_a_failed_calibration_did_not_undo_its_guardian_does(tmp_path, monkeypatch):
    from redsim.calibrate import calibrate, measure
    from redsim.live import load

    monkeypatch.delenv("REDSIM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def fails_midway(t, *args, **kw):
        # A part that changed the configuration and wrote keys, then failed
        # without a finally of its own.
        t.config_set("maxmemory-policy", "allkeys-lru")
        load.fill(t.client, 1000, 10, ttl_s=t.key_ttl_s)
        raise RuntimeError("the part failed")

    monkeypatch.setattr(measure, "measure_key_memory", fails_midway)
    srv = _owned_server()
    try:
        r = srv.client()
        said: list[str] = []
        with pytest.raises(RuntimeError, match="the part failed"):
            calibrate(tmp_path / "c.yaml", host=srv.host, port=srv.port, can_write=True,
                      parts=("memory",), say=said.append)
        # calibrate returns once the guardian has finished.
        assert _config(r) == OWNER and r.dbsize() == 0
        assert any(line.startswith("calibration stopped: its guardian") for line in said)
        assert not _record(srv, tmp_path).exists()
    finally:
        srv.stop()


def test_keys_written_on_a_server_redsim_did_not_start_carry_a_ttl():
    from redsim.calibrate import dataset
    from redsim.calibrate.measure import CpuLoad, Target, cpu_point
    from redsim.live import load

    small = CpuLoad(10, 4, 20_000)
    with RedisServer() as srv:
        t = Target.connect(srv.host, srv.port, can_write=True, say=lambda _: None)
        r = t.client
        cpu_point(t, "SET", small)  # a server redsim started: no TTL
        assert set(_each(r, "TTL")) == {-1}
        load.delete_prefix(r)
        t.key_ttl_s = 600
        load.fill(r, 5_000, 10, ttl_s=t.key_ttl_s)
        dataset.populate(r, 5_000, 10_000, 10, ttl_s=t.key_ttl_s)
        for command in ("SET", "INCR", "LPUSH", "SADD", "MSET", "SETEX", "EXPIRE"):
            cpu_point(t, command, small)
        assert set(_each(r, "TYPE")) >= {b"string", b"list", b"set"}
        ttls = _each(r, "TTL")
        assert len(ttls) > 10_000
        assert all(0 < x <= 600 for x in ttls), sorted(set(ttls))[:5]


def test_the_fork_step_runs_on_a_server_redsim_did_not_start_only_when_named(
        tmp_path, monkeypatch, capsys):
    from redsim.calibrate import calibrate, measure
    from redsim.cli import main

    monkeypatch.delenv("REDSIM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    real = measure.measure_fork
    # Two small BGSAVEs instead of six of up to 400 MB: the choice is under test.
    monkeypatch.setattr(measure, "measure_fork",
                        lambda t: real(t, sizes_mb=(5, 10), reps=1))
    with RedisServer() as srv:
        r = srv.client()
        said: list[str] = []
        doc = calibrate(tmp_path / "a.yaml", host=srv.host, port=srv.port, can_write=True,
                        parts=("disk", "fork"), data_dir=tmp_path, say=said.append)
        assert r.info("stats")["total_forks"] == 0  # no BGSAVE
        assert doc["not-measured"]["fork"]["why"].startswith("BGSAVE forks the server, "
                                                             "which redsim did not start")
        assert "--only fork" in doc["not-measured"]["fork"]["why"]
        assert "host.fork-fixed" not in str(doc["values"])
        skip = next(i for i, s in enumerate(said) if s.startswith("fork: skipped, BGSAVE"))
        assert skip < next(i for i, s in enumerate(said) if s.startswith("plan: "))
        capsys.readouterr()
        assert main(["calibrate", "--host", srv.host, "--port", str(srv.port),
                     "--i-know-this-writes", "--only", "fork", "--no-progress",
                     "--out", str(tmp_path / "b.yaml")]) == 0
        out = capsys.readouterr().out
        assert r.info("stats")["total_forks"] == 2
        assert r.dbsize() == 0
    warn = out.index(f"fork: the fork step runs BGSAVE 6 times on 127.0.0.1:{srv.port}")
    assert warn < out.index("[1/1] fork: ")
    assert "pauses its main thread for a time that grows with its RSS" in out
