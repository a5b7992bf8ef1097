"""Scenario input that `redsim validate` accepts must run (issue #17, "Crashes, hangs
and wrong answers"): numbers bounded to what the model represents, only regular files
read and only so much of them, duplicate YAML keys and out-of-order events refused,
a redis.conf hashed by content, and the unmodelled-directive warning said once.

Every error test checks the message names the file (when there is one), the field
or line, and what was expected, not only the exception type.
"""

from __future__ import annotations

import os
import shutil
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from redsim.config import ScenarioError, load_scenario, scenario_hash
from redsim.config.errors import MAX_CONFIG_BYTES, UnmodelledDirectiveWarning
from redsim.config.loader import forget_warnings, read_calibration, unmodelled_report
from redsim.config.redis_conf import is_default, parse_redis_conf
from redsim.model.trace import MAX_TRACE_BYTES

DATA = Path(__file__).parent / "data"
STOCK_CONF = DATA / "redis-7.2-stock.conf"  # Redis 7.2.6's redis.conf, unedited

# 100 years of 365.25 days, in seconds: the longest duration a scenario may hold.
HUNDRED_YEARS = 100 * 365.25 * 86400  # = 3,155,760,000 s


def error_of(source: Any, **kwargs: Any) -> ScenarioError:
    """The ScenarioError loading `source` raises (unmodelled warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnmodelledDirectiveWarning)
        with pytest.raises(ScenarioError) as info:
            load_scenario(source, **kwargs)
    return info.value


def finishes(fn: Callable[[], Any], seconds: float = 20.0) -> Any:
    """Run `fn` in a daemon thread; fail (not hang) if it has not returned in time.
    Opening a FIFO blocks until a writer comes, which is what these tests check."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s (reading a FIFO?)"
    if "error" in out:
        raise out["error"]
    return out.get("value")


# --- 1. numbers bounded to what the model represents ------------------------------


# (scenario, dotted field in the message, words of the bound in the message). Each
# value was accepted before and then crashed or hung the run (OverflowError,
# "Maximum allowed dimension exceeded", MemoryError, a run that never ends).
HUGE = [
    ({"clients": [{"mix": [{"command": "SET", "ttl": 1e308}]}]},
     "clients[0].mix[0].ttl", "at most 100 years"),
    ({"server": {"latency-monitor-threshold": 1e308}},
     "server.latency-monitor-threshold", "at most 100 years"),
    ({"duration": 1e308}, "duration", "at most 100 years"),
    ({"duration": "101w", "sample-interval": "50ms"},  # 61,084,800 s / 0.05 s = 1.2e9 samples
     "duration", "at most 1,000,000 samples"),
    ({"duration": "12d"},  # 1,036,800 samples of 1 s
     "duration", "at most 1,000,000 samples"),
    ({"server": {"timeout": 3e9}}, "server.timeout", "at most 2147483647 s"),
    ({"server": {"maxmemory": "2048gb"}}, "server.maxmemory", "at most 1tb"),
    ({"server": {"lfu-log-factor": 2**40}}, "server.lfu-log-factor", "2147483647"),
    ({"server": {"auto-aof-rewrite-percentage": 2**40}},
     "server.auto-aof-rewrite-percentage", "2147483647"),
    ({"clients": [{"kind": "open", "rate": 1e308}]}, "clients[0].rate", "at most 1e9"),
    ({"clients": [{"kind": "open", "profile": [{"at": 0, "rate": "2000m/s"}]}]},
     "clients[0].profile[0].rate", "at most 1e9"),
    ({"clients": [{"keyspace": {"keys": 10**12}}]},
     "clients[0].keyspace.keys", "100000000"),
    ({"clients": [{"key-size": 10**12}]}, "clients[0].key-size", "536870912"),
    ({"clients": [{"value-size": "1000gb"}]}, "clients[0].value-size", "4gb"),
    ({"clients": [{"value-size": {"distribution": "empirical", "values": [1, 1e15]}}]},
     "clients[0].value-size", "4gb"),
    ({"clients": [{"think": {"distribution": "empirical", "quantiles": {1.0: 1e300}}}]},
     "clients[0].think", "100 years"),
    ({"clients": [{"think": {"distribution": "lognormal", "mean": "1ms", "sigma": 1000}}]},
     "clients[0].think.sigma", "at most 10"),
    ({"clients": [{"mix": [{"command": "GET", "weight": 1e300}]}]},
     "clients[0].mix[0].weight", "1000000000000.0"),
    ({"clients": [{"mix": [{"command": "MGET", "keys": 10**9}]}]},
     "clients[0].mix[0].keys", "1000000"),
    # 200,000 processes × 8 connections = 1,600,000 > 1,000,000
    ({"server": {"maxclients": 10**8}, "clients": [{"processes": 200_000}]},
     "clients", "at most 1,000,000 connections"),
    # 10 × 10**7 sources with fixed think: 10**8 > 10,000,000 request sources
    ({"clients": [{"processes": 10, "threads": 10**7, "think": "1ms"}]},
     "clients[0]", "at most 10,000,000 request sources"),
    # 100 × 8 connections × pipeline 100,000 = 8e7 > 10,000,000 in flight
    ({"clients": [{"processes": 100, "pipeline": 100_000}]},
     "clients", "at most 10,000,000 requests in flight"),
    # A period the clock cannot step by: 0.5 + 1e-300 == 0.5, the reaper ran forever.
    ({"clients": [{"pool": {"idle-timeout": "10ms", "reap-interval": 1e-300}}]},
     "clients[0].pool.reap-interval", "at least 1us"),
    ({"clients": [{"pool": {"retry-backoff": "1ns"}}]},
     "clients[0].pool.retry-backoff", "at least 1us"),
    # No think, no round trip, CPU scaled to ~5e-306 s a request: the loop hung at t=0.
    ({"network": {"rtt": 0}, "engine": {"cpu": {"scale": 1e-300}},
      "clients": [{"think": 0}]}, "clients[0].think", "the clock never moves"),
    # 1e9/s × write-once 0.5 (all SETs) = 5e8 new keys/s; × ttl 3600 s preloaded =
    # 1.8e12 rows (a 6.5 TiB MemoryError).
    ({"duration": 1, "clients": [{"kind": "open", "rate": 1e9,
                                  "mix": [{"command": "SET", "ttl": "1h"}],
                                  "keyspace": {"write-once": 0.5}}]},
     "clients[0].keyspace.write-once", "at most 100,000,000 keys in the run"),
    ({"engine": {"cpu": {"scale": 1e9}}}, "engine.cpu.scale", "1000"),
    ({"engine": {"cpu": {"read": "1e12s"}}}, "engine.cpu.read", "at most 100 years"),
    ({"host": {"child-keys-per-sec": 0}}, "host.child-keys-per-sec", "a rate > 0"),
    ({"disk": {"write-bandwidth": 0.5}}, "disk.write-bandwidth", "from 1 byte/s"),
    ({"disk": {"write-bandwidth": 1e300}}, "disk.write-bandwidth", "1 PB/s"),
]


@pytest.mark.parametrize(("doc", "field", "bound"), HUGE, ids=[h[1] for h in HUGE])
def test_numbers_past_what_the_model_represents_are_refused(doc, field, bound) -> None:
    err = error_of(doc)
    assert err.location == field, str(err)
    assert bound in err.expected, str(err)


def test_a_huge_number_in_a_file_names_the_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "big.yaml"
    f.write_text("name: big\nclients:\n  - mix:\n      - {command: SET, ttl: 1e308}\n")
    err = error_of(f)
    # "big.yaml:4: clients[0].mix[0].ttl: expected … at most 100 years, found 1e+308 …"
    assert str(err).startswith(f"{f}:4: clients[0].mix[0].ttl: expected ")
    assert "at most 100 years" in str(err) and "too large" in str(err)


def test_the_bounds_themselves_are_accepted() -> None:
    sc = load_scenario({
        "duration": "1000000s",  # exactly 1,000,000 samples of 1 s
        "server": {"latency-monitor-threshold": f"{HUNDRED_YEARS:.0f}s", "maxmemory": "1024gb",
                   "timeout": 2**31 - 1},
        "clients": [{"mix": [{"command": "SET", "ttl": HUNDRED_YEARS}],
                     "keyspace": {"keys": 100_000_000}}],
    })
    # latency-monitor-threshold is held in ms: 3,155,760,000 s × 1000
    assert sc.server.latency_monitor_threshold == 3_155_760_000_000
    assert sc.clients[0].mix[0].ttl == HUNDRED_YEARS
    assert sc.server.maxmemory == 2**40


def test_a_run_at_the_duration_bounds_completes() -> None:
    """The named crashes at the largest values validate now accepts: a TTL and a
    latency-monitor threshold of 100 years (int64 in the kernel) run to the end."""
    from redsim.driver import simulate

    sc = load_scenario({
        "duration": "200ms", "sample-interval": "50ms",
        "server": {"latency-monitor-threshold": f"{HUNDRED_YEARS:.0f}s"},
        "clients": [{"processes": 1, "threads": 2, "think": "1ms",
                     "mix": [{"command": "SET", "ttl": HUNDRED_YEARS}],
                     "keyspace": {"keys": 100}}],
    })
    result = simulate(sc, seed=1)
    # 2 sources, 1 ms think + ~0.2 ms round trip: some 300 requests in 200 ms; at
    # least one proves the run went past the first request.
    assert result.summary["requests_completed"] > 100


def _trace_scenario(tmp_path: Path, trace_text: str | None, name: str = "t.trace") -> Path:
    if trace_text is not None:
        (tmp_path / name).write_text(trace_text)
    sc = tmp_path / "replay.yaml"
    sc.write_text(f"name: replay\nclients:\n  - kind: trace\n    trace: {name}\n")
    return sc


@pytest.mark.parametrize("text", ["", "# only a header\n\n# and comments\n", "\n\n"])
def test_an_empty_or_header_only_trace_is_a_clean_error(tmp_path: Path, text: str) -> None:
    sc = _trace_scenario(tmp_path, text)
    err = error_of(sc)
    assert err.file == str(sc) and err.line == 4  # the `trace:` line
    assert err.location == "clients[0].trace"
    assert err.expected == "at least one command in the trace file"
    assert "'t.trace'" in err.found


def test_a_bad_trace_line_is_reported_at_validation(tmp_path: Path) -> None:
    sc = _trace_scenario(tmp_path, "GET a\nSET a 1\nFROB a\n")
    err = error_of(sc)
    assert err.location == "clients[0].trace" and "a command redsim models" in err.expected
    assert "'FROB'" in err.found and "'t.trace' line 3" in err.found


# --- 2. only regular files, and only so much of them ---------------------------------


def _fifo(tmp_path: Path, name: str = "fifo") -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


def test_redis_conf_pointing_at_dev_zero_is_refused(tmp_path: Path) -> None:
    sc = tmp_path / "s.yaml"
    sc.write_text("redis_conf: /dev/zero\n")
    err = finishes(lambda: error_of(sc))
    assert err.file == "/dev/zero"
    assert err.expected == "a regular file (redis.conf)" and err.found == "a character device"


def test_redis_conf_pointing_at_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path, "redis.conf")
    sc = tmp_path / "s.yaml"
    sc.write_text("redis_conf: redis.conf\n")
    err = finishes(lambda: error_of(sc))
    assert err.file == str(fifo) and "FIFO" in err.found and "regular file" in err.expected


def test_an_include_of_dev_zero_is_refused(tmp_path: Path) -> None:
    (tmp_path / "r.conf").write_text("hz 20\ninclude /dev/zero\n")
    with pytest.raises(ScenarioError) as info:
        finishes(lambda: parse_redis_conf(tmp_path / "r.conf"))
    assert info.value.file == "/dev/zero" and info.value.found == "a character device"


def test_includes_together_are_bounded(tmp_path: Path) -> None:
    # A 9 MB conf (one comment line) included twice: 18 MB > 16 MB in all.
    (tmp_path / "big.conf").write_text("#" + "x" * (9 * 2**20) + "\n")
    (tmp_path / "r.conf").write_text("include big.conf\ninclude big.conf\n")
    with pytest.raises(ScenarioError) as info:
        parse_redis_conf(tmp_path / "r.conf")
    assert info.value.file == str(tmp_path / "big.conf")
    assert "at most 16 MB in all" in info.value.expected


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_a_trace_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    target = "/dev/zero" if kind == "dev-zero" else str(_fifo(tmp_path))
    sc = tmp_path / "replay.yaml"
    sc.write_text(f"clients:\n  - kind: trace\n    trace: {target}\n")
    err = finishes(lambda: error_of(sc))
    assert err.file == str(sc) and err.location == "clients[0].trace"
    assert err.expected == "a regular trace file"
    assert ("a character device" if kind == "dev-zero" else "a FIFO") in err.found


def test_a_trace_past_its_limit_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "t.trace"
    with open(big, "wb") as f:  # sparse: no 64 MB written
        f.truncate(MAX_TRACE_BYTES + 1)
    err = error_of(_trace_scenario(tmp_path, None))
    assert err.location == "clients[0].trace"
    assert err.expected == "a trace file of at most 64 MB"
    assert f"{MAX_TRACE_BYTES + 1:,} bytes" in err.found


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "too-big"])
def test_a_scenario_file_that_is_not_a_small_regular_file_is_refused(tmp_path: Path,
                                                                     kind: str) -> None:
    if kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "fifo":
        path = _fifo(tmp_path, "s.yaml")
    else:
        path = tmp_path / "s.yaml"
        with open(path, "wb") as f:
            f.truncate(MAX_CONFIG_BYTES + 1)
    err = finishes(lambda: error_of(path))
    assert err.file == str(path)
    if kind == "too-big":
        assert err.expected == "a scenario file of at most 16 MB"
    else:
        assert err.expected == "a regular file (scenario file)"


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_a_sweep_base_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    from redsim.sweep import load_sweep

    base = "/dev/zero" if kind == "dev-zero" else str(_fifo(tmp_path, "base.yaml"))
    sw = tmp_path / "sw.yaml"
    sw.write_text(f"base: {base}\naxes:\n  - {{name: hz, path: server.hz, values: [1, 2]}}\n")
    with pytest.raises(ScenarioError) as info:
        finishes(lambda: load_sweep(sw))
    err = info.value
    assert err.file == str(sw) and err.location == "base" and err.line == 1
    assert ("character device" if kind == "dev-zero" else "FIFO") in err.found


# --- 3. duplicate keys and events out of order ---------------------------------------


def test_a_duplicate_key_names_the_file_the_second_line_and_the_key(tmp_path: Path) -> None:
    f = tmp_path / "dup.yaml"
    f.write_text("name: dup\nserver:\n  hz: 10\n  maxmemory: 1gb\n  hz: 20\n")
    err = error_of(f)
    assert (err.file, err.line, err.location) == (str(f), 5, "server.hz")
    assert err.expected == "each key once in a mapping"
    assert err.found == "'hz' again, first on line 3"


def test_keys_spelled_two_ways_are_one_key(tmp_path: Path) -> None:
    f = tmp_path / "dup.yaml"
    f.write_text("clients:\n  - pool:\n      max-size: 4\n      max_size: 8\n")
    err = error_of(f)
    assert (err.line, err.location) == (4, "clients[0].pool.max_size")
    assert "the same key as 'max-size'" in err.found


def test_a_merge_key_may_be_overridden(tmp_path: Path) -> None:
    # `<<: *base` then `hz: 20` is YAML's way to override, not a duplicate.
    f = tmp_path / "merge.yaml"
    f.write_text("x-base: &b {hz: 10, maxmemory: 1gb}\nserver:\n  <<: *b\n  hz: 20\n")
    with pytest.raises(ScenarioError) as info:  # x-base itself is not a scenario key
        load_scenario(f)
    assert info.value.location == "x-base"  # …so the merge itself passed the duplicate check


def test_duplicate_keys_in_a_sweep_file(tmp_path: Path) -> None:
    from redsim.sweep import load_sweep

    f = tmp_path / "sw.yaml"
    f.write_text("name: a\nbase: {duration: 1}\nname: b\n"
                 "axes:\n  - {name: hz, path: server.hz, values: [1, 2]}\n")
    with pytest.raises(ScenarioError) as info:
        load_sweep(f)
    assert (info.value.file, info.value.line, info.value.location) == (str(f), 3, "name")
    assert "first on line 1" in info.value.found


def test_duplicate_keys_in_a_calibration_file(tmp_path: Path) -> None:
    f = tmp_path / "calibration.yaml"
    f.write_text("redsim-calibration: 1\nvalues:\n  engine:\n    cpu:\n      read: 1.5\n"
                 "      read: 2.5\n")
    with pytest.raises(ScenarioError) as info:
        read_calibration(f)
    assert (info.value.file, info.value.line) == (str(f), 6)
    assert info.value.location == "values.engine.cpu.read"


def test_events_out_of_time_order_name_the_event(tmp_path: Path) -> None:
    f = tmp_path / "ev.yaml"
    f.write_text("duration: 60s\nevents:\n  - {at: 30s, do: bgsave}\n"
                 "  - {at: 10s, do: bgrewriteaof}\n")
    err = error_of(f)
    assert (err.file, err.line, err.location) == (str(f), 4, "events[1].at")
    assert "time order" in err.expected and "30 s" in err.expected and err.found == "10 s"


def test_events_at_the_same_time_are_in_order() -> None:
    sc = load_scenario({"duration": 60, "events": [{"at": 30, "do": "bgsave"},
                                                   {"at": 30, "do": "bgrewriteaof"}]})
    assert [e.do for e in sc.events] == ["bgsave", "bgrewriteaof"]


# --- 4. a redis.conf is hashed by its content ----------------------------------------


def _copy_with_conf(folder: Path, conf_text: str) -> Path:
    folder.mkdir()
    (folder / "redis.conf").write_text(conf_text)
    sc = folder / "s.yaml"
    sc.write_text("name: moved\nduration: 10s\nredis_conf: redis.conf\n")
    return sc


def test_a_moved_scenario_with_its_redis_conf_keeps_its_hash(tmp_path: Path) -> None:
    conf = "maxmemory 1gb\nmaxmemory-policy allkeys-lru\n"
    a = load_scenario(_copy_with_conf(tmp_path / "a", conf))
    b = load_scenario(_copy_with_conf(tmp_path / "elsewhere", conf))
    assert a.redis_conf != b.redis_conf  # two absolute paths…
    assert scenario_hash(a) == scenario_hash(b)  # …one scenario


def test_an_edited_redis_conf_changes_the_hash(tmp_path: Path) -> None:
    a = load_scenario(_copy_with_conf(tmp_path / "a", "maxmemory 1gb\n"))
    b = load_scenario(_copy_with_conf(tmp_path / "b", "maxmemory 2gb\n"))
    c = load_scenario(_copy_with_conf(tmp_path / "c", "# tuned\nmaxmemory 1gb\n"))
    assert len({scenario_hash(a), scenario_hash(b), scenario_hash(c)}) == 3


def test_a_redis_conf_deleted_after_loading_still_hashes(tmp_path: Path) -> None:
    sc = load_scenario(_copy_with_conf(tmp_path / "a", "maxmemory 1gb\n"))
    before = scenario_hash(sc)
    (tmp_path / "a" / "redis.conf").unlink()
    after = scenario_hash(sc)  # no FileNotFoundError
    assert len(after) == 64 and after != before  # the content is no longer known


# --- 5. the unmodelled-directive warning ----------------------------------------------

def _stock_unmodelled() -> int:
    """How many directives of the stock file redsim does not model, counted without
    redsim's parser: the first word of each directive line (74 lines; the three
    client-output-buffer-limit lines are one directive: 72 names), less the
    modelled ones (14 at the time of writing, so 58)."""
    from redsim.config.schema import MODELLED_DIRECTIVES

    names = {line.split()[0].lower() for line in STOCK_CONF.read_text().splitlines()
             if line[:1].isalpha()}
    return len(names - MODELLED_DIRECTIVES)


STOCK_UNMODELLED = _stock_unmodelled()


def _stock_scenario(tmp_path: Path) -> Path:
    shutil.copy(STOCK_CONF, tmp_path / "redis.conf")
    sc = tmp_path / "stock.yaml"
    sc.write_text("name: stock\nredis_conf: redis.conf\n")
    return sc


def test_the_stock_redis_conf_warns_once_in_one_line(tmp_path: Path) -> None:
    forget_warnings()
    sc = _stock_scenario(tmp_path)
    with pytest.warns(UnmodelledDirectiveWarning) as record:
        load_scenario(sc)
    [warning] = record.list
    text = str(warning.message)
    assert "\n" not in text
    assert text.startswith(f"{tmp_path / 'redis.conf'}: {STOCK_UNMODELLED} Redis directives")
    # Named although at Redis's defaults: they could change the answer.
    assert "activerehashing" in text and "stop-writes-on-bgsave-error" in text
    # Read since issue #22 (the replica class's limits), so not named.
    assert "client-output-buffer-limit" not in text
    # Not at Redis 7.2's defaults in the stock file: bind (`* -::*`) and pidfile
    # (none); proc-title-template is one quoted argument equal to the default.
    assert "; not at Redis's default: bind, pidfile (" in text
    # At their defaults and without effect on the answer: not named.
    for quiet in ("tcp-backlog", "databases", "rdbcompression", "hash-max-listpack-entries"):
        assert quiet not in text
    # The same file again in this process: said already.
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnmodelledDirectiveWarning)
        load_scenario(sc)


def test_the_command_shows_the_warning_on_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    sc = _stock_scenario(tmp_path)
    p = subprocess.run([sys.executable, "-m", "redsim", "validate", str(sc)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    [line] = p.stderr.strip().splitlines()  # not Python's two-line warning format
    assert line.startswith(f"redsim: warning: {tmp_path / 'redis.conf'}: "
                           f"{STOCK_UNMODELLED} Redis directives")


def test_validate_verbose_lists_every_unmodelled_directive(tmp_path: Path, capsys) -> None:
    from redsim.cli import main

    forget_warnings()
    sc = _stock_scenario(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnmodelledDirectiveWarning)
        assert main(["validate", str(sc), "--verbose"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{sc}: OK")
    assert out[1].startswith(f"  {STOCK_UNMODELLED} Redis directives redsim does not model")
    rows = {line[4:].split()[0]: line for line in out[2:]}  # "  ! name  value"
    assert len(rows) == STOCK_UNMODELLED
    assert rows["tcp-backlog"].startswith("    tcp-backlog ")  # at its default, unmarked
    assert rows["stop-writes-on-bgsave-error"].startswith("  ! ")
    assert rows["pidfile"].startswith("  * ") and rows["pidfile"].endswith(
        "/var/run/redis_6379.pid")


@pytest.mark.parametrize(("name", "text", "default"), [
    ("tcp-backlog", "511", True),
    ("tcp-backlog", "512", False),
    ("repl-backlog-size", "1mb", True),  # 1mb = 1048576, config.c's 1024*1024
    ("repl-backlog-size", "1m", False),  # 1m = 1,000,000
    ("loglevel", "NOTICE", True),
    ("notify-keyspace-events", '""', True),
    ("notify-keyspace-events", "Ex", False),
    ("dir", "./", True),
    ("client-output-buffer-limit", "replica 256mb 64mb 60", True),  # others keep theirs
    ("client-output-buffer-limit", "normal 0 0 0 pubsub 32mb 8mb 61", False),
    ("rename-command", "FLUSHALL ''", False),  # no default: set is a difference
])
def test_is_default_compares_values_as_redis_reads_them(name, text, default) -> None:
    assert is_default(name, text) is default


def test_unmodelled_report_splits_answer_changing_from_non_default() -> None:
    changing, differing = unmodelled_report({
        "tcp-backlog": "511", "port": "6380", "activerehashing": "yes",
        "stop-writes-on-bgsave-error": "yes"})
    assert changing == ["activerehashing", "stop-writes-on-bgsave-error"]
    assert differing == ["port"]


def test_a_mapping_without_a_file_warns_once_per_set_of_directives() -> None:
    forget_warnings()
    doc = {"server": {"port": 6380}}
    with pytest.warns(UnmodelledDirectiveWarning, match=r"^scenario: 1 Redis directive "):
        load_scenario(doc)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnmodelledDirectiveWarning)
        load_scenario(yaml.safe_load(yaml.safe_dump(doc)))  # an equal mapping: said


def test_a_loop_whose_writes_wait_for_fsync_moves_the_clock():
    # No think, no round trip, no CPU: refused as a clock that never moves, but
    # with appendfsync always each SET's reply waits for an fdatasync (1 ms
    # here), so the loop runs at ~1,000 SET/s and is accepted.
    from redsim import load_scenario
    from redsim.config import ScenarioError

    zero = {"scale": 1e-300}
    base = {"network": {"rtt": 0}, "engine": {"cpu": zero},
            "disk": {"fsync": "1ms"}, "clients": [{"think": 0, "mix": {"SET": 1}}]}
    with pytest.raises(ScenarioError, match="the clock never moves"):
        load_scenario({**base, "server": {"appendonly": "yes", "appendfsync": "everysec"}})
    load_scenario({**base, "server": {"appendonly": "yes", "appendfsync": "always"}})
    # Reads never fsync: a GET-only loop is refused even with always.
    with pytest.raises(ScenarioError, match="the clock never moves"):
        load_scenario({**base, "server": {"appendonly": "yes", "appendfsync": "always"},
                       "clients": [{"think": 0, "mix": {"GET": 1}}]})
