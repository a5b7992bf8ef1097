"""What a calibration leaves on a server it did not start, without a server
(``redsim/live/guard.py``, the TTL in ``plan.py`` and ``measure.py``): the
record file, the rules for putting configuration back, the guardian's
lifecycle, and the CLI's ``--cleanup`` and fork choice. The same against a
real redis-server, with SIGKILL, is ``test_calibrate_faults_live.py``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from redsim.calibrate import ALL_PARTS, measure, plan
from redsim.live import guard


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """Records go to a folder of the test, not the user's cache."""
    monkeypatch.delenv("REDSIM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "redsim" / "calibrate"


def _dead_pid() -> int:
    """The PID of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_record_is_named_by_host_and_port_in_the_cache_and_reads_back(cache):
    path = guard.record_path("127.0.0.1", 6379)
    assert path == cache / "127.0.0.1_6379.json"
    assert guard.record_path("::1", 7000).name == "__1_7000.json"
    rec = guard.Record("127.0.0.1", 6379, "redsim:calib:", 123, "456", "2026-01-01T00:00:00Z",
                       420, 124, {"maxmemory": {"was": "0", "set": ["0", "181928480"]}})
    rec.save(path)
    assert guard.Record.read(path) == rec
    with pytest.raises(FileExistsError):  # a second calibration starting at the same time
        rec.save(path, new=True)
    assert [p.name for p in cache.iterdir()] == [path.name]  # no temporary file left
    path.write_text('{"redsim-calibration-record": 1, "host": "h"}')
    with pytest.raises(guard.GuardError, match=r"127\.0\.0\.1_6379\.json: expected a "
                                               "calibration record"):
        guard.Record.read(path)


class _Config:
    """CONFIG GET / SET of a server, as a dict."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = dict(values)
        self.sets: list[tuple[str, str]] = []

    def config_get(self, name):
        return {name: self.values[name]}

    def config_set(self, name, value):
        self.sets.append((name, str(value)))
        self.values[name] = str(value)


def test_configuration_is_put_back_only_where_it_still_holds_what_calibration_set():
    # The server: maxmemory 0, noeviction; calibration set 181928480 and
    # allkeys-lru. Since then the owner set appendonly to a value of their own.
    server = _Config({"maxmemory": "181928480", "maxmemory-policy": "allkeys-lru",
                      "appendonly": "yes", "hz": "10"})
    lines = guard.restore_config(server, {
        "maxmemory": {"was": "0", "set": ["0", "181928480"]},
        "maxmemory-policy": {"was": "noeviction", "set": ["allkeys-lru"]},
        "appendonly": {"was": "no", "set": ["no"]},      # someone's "yes" since
        "hz": {"was": "10", "set": ["100"]}})             # already back
    assert server.values == {"maxmemory": "0", "maxmemory-policy": "noeviction",
                             "appendonly": "yes", "hz": "10"}
    assert server.sets == [("maxmemory", "0"), ("maxmemory-policy", "noeviction")]
    assert lines[0] == "maxmemory: 181928480 -> 0, as before calibration"
    assert "left alone" in lines[2] and lines[3] == "hz is 10, as before calibration"


def test_a_target_records_what_it_replaces_before_it_changes_it():
    seen: list[dict] = []

    class _Guard:
        def note_config(self, config):
            # What is on disk when the server changes: the value it replaces.
            seen.append({k: dict(v, set=list(v["set"])) for k, v in config.items()})

    server = _Config({"maxmemory": "0"})
    t = measure.Target(server, "h", 1, None, True, None, guard=_Guard())
    t.config_set("maxmemory", 181928480)
    assert seen[0] == {"maxmemory": {"was": "0", "set": ["181928480"]}}
    assert server.values["maxmemory"] == "181928480"
    t.restore_config()
    assert server.values["maxmemory"] == "0"


def test_a_record_in_the_way_stops_a_new_calibration_and_says_what_to_do(cache):
    path = guard.record_path("127.0.0.1", 6390)
    guard.Record("127.0.0.1", 6390, "redsim:calib:", _dead_pid(), None, "then", 420).save(path)
    with pytest.raises(guard.GuardError, match="was killed and its clean-up did not finish.*"
                       r"redsim calibrate --cleanup --host 127\.0\.0\.1 --port 6390"):
        guard.refuse_if_recorded(path)
    me = os.getpid()
    guard.Record("127.0.0.1", 6390, "redsim:calib:", me, guard.process_start(me), "now",
                 420).save(path)
    with pytest.raises(guard.GuardError, match=f"another redsim calibrate \\(pid {me}\\)"):
        guard.refuse_if_recorded(path)
    with pytest.raises(guard.GuardError, match="still runs"):
        guard.cleanup_server("127.0.0.1", 6390)


def test_a_pid_reused_by_another_process_is_not_the_calibration():
    me = os.getpid()
    assert guard.process_alive(me, guard.process_start(me))
    assert not guard.process_alive(me, "1")  # this PID, another start: another process
    assert not guard.process_alive(_dead_pid(), None)


def test_the_guardian_tells_done_from_a_parent_that_died():
    r, w = os.pipe()
    os.write(w, b"do")
    os.write(w, b"ne\n")
    assert guard.wait_for_parent(r, os.getppid()) == "done"
    os.close(r)
    os.close(w)
    r, w = os.pipe()
    os.close(w)  # the writer died: the kernel closed its end
    assert guard.wait_for_parent(r, os.getppid()) == "gone"
    os.close(r)


def test_a_guard_starts_its_guardian_and_ends_it_with_the_record_when_all_went_well(cache):
    with guard.Guard("127.0.0.1", 6391, key_ttl_s=420) as g:
        rec = guard.Record.read(g.path)
        assert rec.guardian_pid == g.pid and guard.process_alive(g.pid, None)
        assert rec.pid == os.getpid() and rec.key_ttl_s == 420
        # In a session of its own: a Ctrl-C to the calibration's group misses it.
        assert os.getsid(g.pid) == g.pid != os.getsid(0)
        proc = g.proc
    assert proc.returncode == 0
    assert list(cache.iterdir()) == []  # no record, and no log: it had nothing to do


def test_keys_live_past_their_part_at_three_times_the_reference_speed():
    for part in ALL_PARTS:
        steps = plan.plan((part,), ("SET", "GET"), 3)
        longest = plan.longest_part_s(steps)
        assert longest == pytest.approx(sum(s.estimate_s for s in steps))
        ttl = plan.key_ttl_s(longest)
        assert ttl % 60 == 0 and 3 * longest + 300 <= ttl < 3 * longest + 360
    # A full calibration's keys go by themselves within 20 minutes.
    assert plan.key_ttl_s(plan.longest_part_s(plan.plan(ALL_PARTS, ("SET",), 3))) <= 1200


def test_benchmark_keys_carry_the_ttl_where_their_command_can():
    assert measure._bench_args("SET", 3, ttl_s=420)[-2:] == ["EX", "420"]
    assert measure._bench_args("SET", 3)[-1] == "xxx"
    assert measure._bench_args("SETEX", 3, ttl_s=420)[2] == "420"
    assert measure._bench_args("EXPIRE", 3, ttl_s=420)[2] == "420"
    assert measure._bench_args("EXPIRE", 3)[2] == "3600"
    # What cannot carry one gets it after its load (load.expire_untimed).
    creating = {"INCR", "DECR", "MSET", "SADD", "LPUSH", "RPUSH", "HSET", "ZADD"}
    assert set(measure.UNTIMED) == creating


def test_cli_cleanup_takes_a_port_and_nothing_to_measure(capsys):
    from redsim.cli import main

    assert main(["calibrate", "--cleanup"]) == 2
    assert "--cleanup needs the --port" in capsys.readouterr().err
    assert main(["calibrate", "--cleanup", "--start"]) == 2
    assert "--cleanup measures nothing: leave out --start" in capsys.readouterr().err


@pytest.mark.parametrize("only, forks", [(None, False), ("fork", True),
                                         ("eviction,fork", True), ("eviction", False)])
def test_cli_forks_a_server_it_did_not_start_only_when_fork_is_named(monkeypatch, tmp_path,
                                                                    only, forks):
    import redsim.calibrate
    from redsim.cli import main

    seen = {}

    def fake(out, **kw):
        seen.update(kw)
        return {}

    monkeypatch.setattr(redsim.calibrate, "calibrate", fake)
    argv = ["calibrate", "--port", "1", "--out", str(tmp_path / "c.yaml")]
    assert main(argv + (["--only", only] if only else [])) == 0
    assert seen["allow_fork"] is forks
