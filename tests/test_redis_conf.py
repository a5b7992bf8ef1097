"""redis.conf parsing, following Redis 7.2's loadServerConfigFromString/sdssplitargs,
and a scenario built on top of a conf."""

from __future__ import annotations

from pathlib import Path

import pytest

from redsim.config import ScenarioError, load_scenario
from redsim.config.directives import KNOWN_REDIS_DIRECTIVES
from redsim.config.errors import UnmodelledDirectiveWarning
from redsim.config.loader import forget_warnings
from redsim.config.redis_conf import (
    parse_redis_conf,
    quote_arg,
    read_redis_conf,
    split_args,
)
from redsim.config.schema import MODELLED_DIRECTIVES

DATA = Path(__file__).parent / "data"
GB = 1024**3


@pytest.mark.parametrize(
    ("line", "args"),
    [
        ("maxmemory 1gb", ["maxmemory", "1gb"]),
        ("  save   900\t1  ", ["save", "900", "1"]),
        ('logfile ""', ["logfile", ""]),
        ('dir "/var/lib/my redis"', ["dir", "/var/lib/my redis"]),
        ("dbfilename 'dump file.rdb'", ["dbfilename", "dump file.rdb"]),
        (r'requirepass "a\nb\tc\"d\\e"', ["requirepass", 'a\nb\tc"d\\e']),
        (r'x "\x41\x7a"', ["x", "Az"]),
        (r'x "\xZZ"', ["x", "xZZ"]),  # not hex: the backslash escapes the x
        (r"x 'it\'s'", ["x", "it's"]),
        (r"x 'a\nb'", ["x", "a\\nb"]),  # single quotes take no escapes but \'
        ('a"b c"', ['ab c']),  # a quote inside a token opens a quoted part
        ("", []),
    ],
)
def test_split_args_like_sdssplitargs(line: str, args: list[str]) -> None:
    assert split_args(line) == args


@pytest.mark.parametrize("line", ['x "abc', "x 'abc", 'x "ab"c', "x 'ab'c", 'x "a\\'])
def test_split_args_unbalanced(line: str) -> None:
    assert split_args(line) is None


@pytest.mark.parametrize("arg", ["plain", "", "two words", 'q"uote', "back\\slash", "a\nb"])
def test_quote_arg_round_trips(arg: str) -> None:
    assert split_args(quote_arg(arg)) == [arg]


def test_known_directives_cover_redis_7_2_and_6_2() -> None:
    assert len(KNOWN_REDIS_DIRECTIVES) >= 150
    for name in ["bind", "port", "daemonize", "logfile", "save", "dbfilename", "dir",
                 "maxmemory", "maxmemory-policy", "hz", "appendonly", "appendfsync",
                 "client-output-buffer-limit", "rename-command", "include", "loadmodule",
                 "slaveof", "replicaof", "slave-read-only", "replica-read-only",
                 "hash-max-ziplist-entries", "hash-max-listpack-entries", "io-threads",
                 "maxmemory-clients", "latency-tracking", "gopher-enabled",
                 "lua-replicate-commands", "list-max-ziplist-entries", "sentinel", "user"]:
        assert name in KNOWN_REDIS_DIRECTIVES, name
    assert MODELLED_DIRECTIVES <= KNOWN_REDIS_DIRECTIVES
    assert all(n == n.lower() for n in KNOWN_REDIS_DIRECTIVES)


def test_fixture_conf() -> None:
    conf = parse_redis_conf(DATA / "redis.conf")
    # Comments, including one that starts with a directive name, are skipped.
    assert conf["maxmemory"] == (["2gb"], 16)  # `MaxMemory`: names are case-insensitive
    assert conf["maxmemory-policy"] == (["allkeys-lru"], 18)  # the later line wins
    assert conf["dbfilename"][0] == ["dump file.rdb"]
    assert conf["logfile"][0] == [""]
    assert conf["appendfsync"][0] == ["always"]
    assert conf["bind"][0] == ["127.0.0.1", "-::1"]
    # save lines accumulate, the included file's after the main file's.
    assert conf["save"][0] == ["900", "1", "300", "10", "60", "10000"]
    # Included directives are there, with their line numbers in the included file.
    assert conf["maxmemory-samples"] == (["10"], 3)
    assert conf["notify-keyspace-events"][0] == ["Ex"]
    assert conf["client-output-buffer-limit"][0] == [
        "normal", "0", "0", "0", "replica", "256mb", "64mb", "60", "pubsub", "32mb", "8mb", "60",
    ]
    assert conf["rename-command"][0] == ["FLUSHALL", ""]
    assert "include" not in conf
    detailed = read_redis_conf(DATA / "redis.conf")
    assert Path(detailed["maxmemory-samples"].file).name == "redis-extra.conf"
    assert Path(detailed["maxmemory"].file).name == "redis.conf"


def _conf(tmp_path: Path, text: str, name: str = "redis.conf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "save"),
    [
        ('save 900 1\nsave ""\nsave 60 5\n', ["60", "5"]),
        ("save 900 1\nsave ''\n", []),
        ('save "3600 1 300 100"\n', ["3600", "1", "300", "100"]),
        ("SAVE 1 2\nSave 3 4\n", ["1", "2", "3", "4"]),
    ],
)
def test_save_accumulates_and_resets(tmp_path: Path, text: str, save: list[str]) -> None:
    assert parse_redis_conf(_conf(tmp_path, text))["save"][0] == save


def test_output_buffer_limits_merge_per_class(tmp_path: Path) -> None:
    path = _conf(tmp_path, "client-output-buffer-limit pubsub 32mb 8mb 60\n"
                           "client-output-buffer-limit slave 1gb 1gb 0 pubsub 1mb 1mb 5\n")
    assert parse_redis_conf(path)["client-output-buffer-limit"] == (
        ["pubsub", "1mb", "1mb", "5", "replica", "1gb", "1gb", "0"], 2,
    )


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("port 6379\nmaxmemroy 1gb\n", 2, "did you mean 'maxmemory'?"),
        ("maxmemory 1gb 2gb\n", 1, "exactly 1 argument"),
        ("maxmemory 1gb # a trailing comment is an argument in Redis\n", 1, "exactly 1 argument"),
        ("hz\n", 1, "exactly 1 argument"),
        ("rename-command GET\n", 1, "exactly 2 arguments"),
        ("\n\n# x\ndir \"/tmp\n", 4, "Unbalanced quotes"),
        ("client-output-buffer-limit normal 0 0\n", 1, "Wrong number of arguments in buffer"),
        ("client-output-buffer-limit master 0 0 0\n", 1, "Invalid client class"),
        ("replicaof 10.0.0.1\n", 1, "exactly 2 arguments"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = _conf(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        parse_redis_conf(path)
    err = info.value
    assert (err.file, err.line) == (str(path), line)
    assert str(err).startswith(f"{path}:{line}: expected")
    assert words in str(err)


def test_unknown_directive_message(tmp_path: Path) -> None:
    path = _conf(tmp_path, "maxmemroy 1gb\n")
    with pytest.raises(ScenarioError, match="Bad directive or wrong number of arguments"):
        parse_redis_conf(path)


def test_accepted_oddities(tmp_path: Path) -> None:
    path = _conf(tmp_path, "replicaof \"10.0.0.1 6379\"\n"
                           "mymodule.some-option 5\n"
                           "list-max-ziplist-entries 512\n"
                           "loadmodule /opt/a.so arg1\nloadmodule /opt/b.so\n"
                           "include conf.d/*.conf\n")
    conf = parse_redis_conf(path)
    assert conf["replicaof"][0] == ["10.0.0.1", "6379"]  # one argument is split again
    assert conf["mymodule.some-option"][0] == ["5"]  # module configs, as Redis accepts
    assert conf["loadmodule"][0] == ["/opt/a.so arg1", "/opt/b.so"]  # one entry per line


def test_glob_include(tmp_path: Path) -> None:
    (tmp_path / "conf.d").mkdir()
    _conf(tmp_path / "conf.d", "hz 20\n", "a.conf")
    _conf(tmp_path / "conf.d", "hz 30\n", "b.conf")
    conf = parse_redis_conf(_conf(tmp_path, "hz 10\ninclude conf.d/*.conf\n"))
    assert conf["hz"] == (["30"], 1)  # sorted: b.conf last


def test_unreadable_conf_and_include(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_redis_conf(tmp_path / "missing.conf")
    assert "missing.conf" in str(info.value) and "a readable redis.conf" in str(info.value)
    path = _conf(tmp_path, "hz 10\ninclude nope.conf\n")
    with pytest.raises(ScenarioError, match=r"nope\.conf"):
        parse_redis_conf(path)


def test_include_cycle_is_an_error(tmp_path: Path) -> None:
    _conf(tmp_path, "include b.conf\n", "a.conf")
    _conf(tmp_path, "include a.conf\n", "b.conf")
    with pytest.raises(ScenarioError, match="include cycles"):
        parse_redis_conf(tmp_path / "a.conf")


# --- a scenario on top of a conf ------------------------------------------------------------


def test_scenario_with_conf() -> None:
    forget_warnings()  # the warning is said once per file per process
    # port 6380 is not Redis's 6379; notify-keyspace-events could change the answer.
    with pytest.warns(UnmodelledDirectiveWarning,
                      match="could change the answer: notify-keyspace-events.*port"):
        sc = load_scenario(DATA / "scenario_with_conf.yaml")
    s = sc.server
    assert s.maxmemory == 2 * GB  # from `MaxMemory 2gb`
    assert s.appendonly is True and s.appendfsync == "always"
    assert s.save == [(900, 1), (300, 10), (60, 10000)]  # main file + include
    assert s.maxmemory_samples == 10 and s.lazyfree_lazy_eviction is True  # from the include
    assert s.latency_monitor_threshold == 100
    # The scenario's own server keys override the conf.
    assert s.maxmemory_policy == "allkeys-lfu" and s.hz == 100
    # Known but unmodelled directives are kept as conf text.
    assert s.unmodelled["port"] == "6380"
    assert s.unmodelled["dbfilename"] == '"dump file.rdb"'
    # client-output-buffer-limit, three lines of the conf, is read (issue #22).
    assert "client-output-buffer-limit" not in s.unmodelled
    assert s.client_output_buffer_limit == {"normal": (0, 0, 0),
                                            "replica": (256 * 2**20, 64 * 2**20, 60),
                                            "pubsub": (32 * 2**20, 8 * 2**20, 60)}
    assert Path(sc.redis_conf or "").is_absolute()


def test_overrides_beat_scenario_and_conf() -> None:
    forget_warnings()  # the warning is said once per file per process
    with pytest.warns(UnmodelledDirectiveWarning):
        sc = load_scenario(DATA / "scenario_with_conf.yaml",
                           overrides=["server.hz=7", "server.maxmemory=1gb", "server.port=7000"])
    assert (sc.server.hz, sc.server.maxmemory) == (7, GB)
    assert sc.server.unmodelled["port"] == "7000"


def test_bad_value_in_conf_points_at_conf_line(tmp_path: Path) -> None:
    conf = _conf(tmp_path, "# limits\nmaxmemory 1gb\nmaxmemory-samples 100\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text("redis_conf: redis.conf\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario)
    assert (info.value.file, info.value.line) == (str(conf), 3)
    assert str(info.value) == (
        f"{conf}:3: maxmemory-samples: expected an integer between 1 and 64, found '100'"
    )


def test_scenario_naming_missing_conf(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("redis_conf: conf/missing.conf\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario)
    assert info.value.file == str(tmp_path / "conf" / "missing.conf")
