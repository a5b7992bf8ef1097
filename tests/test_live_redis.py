"""Against a real redis-server (Debian's redis-server / redis-tools packages).

These start their own throw-away server on 127.0.0.1 and a free port and stop
it by PID; they are skipped, with the reason in the test summary, only where
no redis-server or redis-benchmark binary can be found (`.ci/run` installs
them). The CPU and memory validation rows the issue puts in CI are in
``test_validation_live.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from redsim.live.server import RedisServer

# Minutes against a real server, alone on the machine: in the slow lane too.
pytestmark = [pytest.mark.live, pytest.mark.slow]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it has exited all the same.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def test_server_listens_on_loopback_and_stops_by_pid():
    srv = RedisServer().start()
    pid, folder = srv.pid, srv.dir
    r = srv.client()
    assert r.config_get("bind")["bind"] == "127.0.0.1"
    assert r.config_get("dir")["dir"] == str(folder)
    assert r.config_get("save")["save"] == ""
    assert _alive(pid)
    srv.stop()
    assert not _alive(pid)
    assert not folder.exists()
    srv.stop()  # a second stop is harmless


def test_a_server_dies_with_the_program_that_started_it():
    code = textwrap.dedent("""
        import sys, time
        from redsim.live.server import RedisServer
        srv = RedisServer().start()
        print(srv.pid, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline())
    assert _alive(pid)
    folder = Path(f"/proc/{pid}/cwd").resolve()  # the server runs in its data folder
    assert folder.name.startswith("redsim-redis-")
    proc.send_signal(signal.SIGKILL)  # no atexit, no finally: only PR_SET_PDEATHSIG
    proc.wait()
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
    assert folder.exists()  # its starter could not clean up …
    with RedisServer():
        assert not folder.exists()  # … the next start does


def test_calibration_leaves_the_server_as_it_found_it(tmp_path):
    from redsim.calibrate import calibrate
    from redsim.config import load_scenario

    with RedisServer() as srv:
        r = srv.client()
        r.set("mine", "1")
        r.config_set("maxmemory-policy", "volatile-lru")
        out = tmp_path / "calibration.yaml"
        said: list[str] = []
        doc = calibrate(out, host=srv.host, port=srv.port, can_write=True,
                        parts=("memory", "eviction", "disk"), reps=1, say=said.append)
        # Eviction would have removed "mine": it is skipped, and says so.
        assert r.dbsize() == 1 and r.get("mine") == b"1"
        assert any(m.startswith("eviction: skipped") for m in said)
        assert "cpu.eviction_per_key" not in {m["name"] for m in doc["measurements"]}
        r.delete("mine")
        evict = calibrate(tmp_path / "evict.yaml", host=srv.host, port=srv.port,
                          can_write=True, parts=("eviction",), reps=1, say=lambda m: None)
        assert r.dbsize() == 0
        assert r.config_get("maxmemory")["maxmemory"] == "0"
        assert r.config_get("maxmemory-policy")["maxmemory-policy"] == "volatile-lru"
    assert "eviction-delete" in evict["values"]["engine"]["cpu"]
    # Debian's redis-server links the system jemalloc: a 16-byte quantum (reference §3.3).
    assert doc["values"]["engine"]["allocator-quantum"] == 16
    names = {m["name"] for m in doc["measurements"]}
    assert {"memory.key_v3", "disk.fsync_median"} <= names
    assert (tmp_path / "calibration.fsync.csv").exists()
    sc = tmp_path / "s.yaml"
    sc.write_text("calibration: calibration.yaml\n")
    try:
        s = load_scenario(sc)
    except Exception as exc:  # the empirical fsync distribution is another part of #16
        pytest.fail(f"the calibration file does not load into a scenario: {exc}")
    assert s.engine.allocator_quantum == 16


def test_calibration_will_not_write_to_a_server_it_may_not(tmp_path):
    from redsim.calibrate import calibrate

    with RedisServer() as srv:
        r = srv.client()
        with pytest.raises(PermissionError, match="--i-know-this-writes"):
            calibrate(tmp_path / "c.yaml", host=srv.host, port=srv.port, can_write=False,
                      parts=("cpu",), say=lambda m: None)
        assert r.dbsize() == 0
        assert r.info("commandstats").get("cmdstat_set") is None
        # The disk probe writes a file in the server's own directory: not without
        # permission either, unless given a directory of the user's choosing.
        with pytest.raises(PermissionError, match="--data-dir"):
            calibrate(tmp_path / "c.yaml", host=srv.host, port=srv.port, can_write=False,
                      parts=("disk",), say=lambda m: None)
        assert sorted(p.name for p in srv.dir.iterdir()) == ["owner.pid", "redis.log"]
        probe = tmp_path / "probe"
        probe.mkdir()
        doc = calibrate(tmp_path / "d.yaml", host=srv.host, port=srv.port, can_write=False,
                        parts=("disk",), data_dir=probe, say=lambda m: None)
        assert doc["values"]["disk"]["fsync"]["distribution"] == "empirical"
        assert list(probe.iterdir()) == []  # its probe files are gone
    assert not (tmp_path / "c.yaml").exists()


def test_calibrate_command_starts_and_stops_its_own_server(tmp_path):
    out = tmp_path / "cal.yaml"
    proc = subprocess.run([sys.executable, "-m", "redsim", "calibrate", "--start",
                           "--only", "memory", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "started redis-server" in proc.stdout and "stopped redis-server" in proc.stdout
    pid = int(proc.stdout.split("(pid ")[1].split(",")[0])
    assert not _alive(pid)
    assert out.exists()
