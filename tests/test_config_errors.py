"""Every mistake becomes one ScenarioError naming file, line, field, expected and found;
and no input, however broken, escapes as another exception type."""

from __future__ import annotations

import copy
import pickle
import re
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from redsim.config import Scenario, ScenarioError, load_scenario
from redsim.config.errors import closest
from redsim.config.loader import valid_keys, validate_file

DATA = Path(__file__).parent / "data"


def write(tmp_path: Path, text: str, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(path: Path, **kwargs: Any) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, **kwargs)
    return info.value


# --- the message ------------------------------------------------------------------------


def test_message_format_and_parts() -> None:
    err = ScenarioError(file="scenarios/x.yaml", line=12, location="clients[0].pool.max-size",
                        expected="an integer ≥ 1", found="0")
    assert str(err) == (
        "scenarios/x.yaml:12: clients[0].pool.max-size: expected an integer ≥ 1, found 0"
    )
    assert str(ScenarioError(expected="a", found="b")) == "expected a, found b"
    assert str(ScenarioError(file="f.yaml", expected="a", found="b", hint="try c")) == (
        "f.yaml: expected a, found b (try c)"
    )
    assert str(ScenarioError(line=3, location="x", expected="a", found="b")) == (
        "line 3: x: expected a, found b"
    )


def test_error_pickles() -> None:
    # Sweeps move errors between processes.
    err = ScenarioError(file="f", line=2, location="a.b", expected="e", found="x", hint="h")
    copy_ = pickle.loads(pickle.dumps(err))
    assert str(copy_) == str(err)
    assert (copy_.file, copy_.line, copy_.location, copy_.hint) == ("f", 2, "a.b", "h")


@pytest.mark.parametrize(
    ("name", "candidates", "expected"),
    [
        ("maxmemory-polcy", ["maxmemory", "maxmemory-policy", "hz"], "maxmemory-policy"),
        ("MAXMEMORY_POLICY", ["maxmemory-policy"], "maxmemory-policy"),
        ("max_size", ["max-size", "checkout"], "max-size"),
        ("zzzzzz", ["maxmemory", "hz"], None),
    ],
)
def test_closest(name: str, candidates: list[str], expected: str | None) -> None:
    assert closest(name, candidates) == expected


# --- mistakes in a scenario file ----------------------------------------------------------


def test_unknown_key_suggests_closest(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\nserver:\n  hz: 10\n  maxmemory-polcy: allkeys-lru\n")
    err = error_of(path)
    assert (err.file, err.line, err.location) == (str(path), 4, "server.maxmemory-polcy")
    assert err.hint == "did you mean 'maxmemory-policy'?"
    assert str(err) == (f"{path}:4: server.maxmemory-polcy: expected a key of server, "
                        "found 'maxmemory-polcy' (did you mean 'maxmemory-policy'?)")


def test_unknown_top_level_and_nested_keys(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, "durration: 10s\n"))
    assert err.location == "durration" and err.hint == "did you mean 'duration'?"
    err = error_of(write(tmp_path, "clients:\n  - pool:\n      max_sise: 3\n"))
    assert err.location == "clients[0].pool.max_sise" and err.line == 3
    assert err.hint == "did you mean 'max-size'?"
    err = error_of(write(tmp_path, "clients:\n  - qwertyuiop: 3\n"))
    assert err.hint is not None and err.hint.startswith("valid keys: name, kind, processes")


def test_bad_unit(tmp_path: Path) -> None:
    path = write(tmp_path, "duration: 10s\nserver:\n  maxmemory: 64 megabytes\n")
    err = error_of(path)
    assert (err.line, err.location) == (3, "server.maxmemory")
    assert err.expected.startswith("a size in bytes") and err.found == "'64 megabytes'"
    assert str(path) in str(err)


def test_negative_rate(tmp_path: Path) -> None:
    path = write(tmp_path, "clients:\n  - kind: open\n    rate: -25k/s\n")
    err = error_of(path)
    assert str(err).startswith(f"{path}:3: clients[0].rate: expected a rate ≥ 0")
    assert err.found == "'-25k/s'"


def test_zero_connections(tmp_path: Path) -> None:
    path = write(tmp_path, "clients:\n  - name: web\n    pool:\n      max-size: 0\n")
    assert str(error_of(path)) == (
        f"{path}:4: clients[0].pool.max-size: expected an integer ≥ 1, found 0"
    )


def test_unreadable_redis_conf(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, "redis_conf: nowhere/redis.conf\n"))
    assert err.file == str(tmp_path / "nowhere" / "redis.conf")
    assert "a readable redis.conf" in str(err) and "redis.conf" in str(err)


def test_unreadable_trace(tmp_path: Path) -> None:
    path = write(tmp_path, "clients:\n  - name: endpoint\n    kind: trace\n    trace: gone.trace\n")
    err = error_of(path)
    assert (err.file, err.line, err.location) == (str(path), 4, "clients[0].trace")
    assert "a readable trace file" in str(err) and "'gone.trace'" in str(err)


def test_trace_is_relative_to_scenario_and_stored_absolute(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.trace").write_text("GET a\n")
    path = write(tmp_path, "clients:\n  - kind: trace\n    trace: traces/t.trace\n")
    assert load_scenario(path).clients[0].trace == str(tmp_path / "traces" / "t.trace")
    sc = load_scenario({"clients": [{"kind": "trace", "trace": "endpoint.trace"}]}, base_dir=DATA)
    assert sc.clients[0].trace == str((DATA / "endpoint.trace").resolve())


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("name: x\nserver:\n  hz: 10\n   maxmemory: 1gb\n", 4),
        ("name: x\nclients: [a, b\n", 3),
        ("a: 'unterminated\n", 2),
        ("a: 1\n\tb: 2\n", 2),
        ("a: 1\na: [\n", 3),
    ],
)
def test_malformed_yaml_gives_line(tmp_path: Path, text: str, line: int) -> None:
    path = write(tmp_path, text)
    err = error_of(path)
    assert err.line == line and err.expected == "valid YAML"
    assert str(err).startswith(f"{path}:{line}: expected valid YAML, found ")


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("- a\n- b\n", "['a', 'b']"),
        ("", "an empty file"),
        ("# only a comment\n", "an empty file"),
        ("just text\n", "'just text'"),
        ("a: 1\n---\nb: 2\n", "but found another document"),
    ],
)
def test_top_level_must_be_one_mapping(tmp_path: Path, text: str, found: str) -> None:
    err = error_of(write(tmp_path, text))
    assert found in err.found and err.file is not None


@pytest.mark.parametrize(
    "raw",
    [
        b"a: 2020-13-01\n",  # a timestamp datetime() refuses
        b"a: !!python/object:os.system x\n",  # unsafe tag
        b"a: \x01\n",  # control character
        b"a: \xff\xfe\n",  # not UTF-8
        b"a: &x [*x]\n",  # recursive alias
        b"a: !!binary 'not base64!'\n",
        b"? [a]\n: b\n",  # unhashable key
        b"a: 1" + b"0" * 5000 + b"\n",  # an int Python refuses to convert
    ],
)
def test_hostile_yaml_is_a_scenario_error(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "s.yaml"
    path.write_bytes(raw)
    assert error_of(path).file == str(path)


def test_billion_laughs_is_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 8):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    err = error_of(write(tmp_path, "\n".join(lines) + "\n"))
    assert "at most" in err.expected


def test_missing_scenario_file(tmp_path: Path) -> None:
    err = error_of(tmp_path / "nope.yaml")
    assert err.file == str(tmp_path / "nope.yaml") and "readable scenario file" in str(err)
    with pytest.raises(ScenarioError):
        validate_file(tmp_path)  # a directory


# --- overrides ----------------------------------------------------------------------------------


def test_overrides_apply(tmp_path: Path) -> None:
    path = write(tmp_path, "clients:\n  - kind: open\n    rate: 1k/s\n    pool: {max_size: 8}\n")
    sc = load_scenario(path, overrides=["server.hz=100", "clients.0.rate=30k/s",
                                        "clients[0].pool.max-size=4", "duration=10m",
                                        "server.save=", "name=x: y"])
    assert sc.server.hz == 100 and sc.clients[0].rate == 30000.0
    assert sc.clients[0].pool.max_size == 4 and sc.duration == 600.0
    assert sc.server.save == [] and sc.name == "x: y"


def test_override_on_default_group() -> None:
    sc = load_scenario({}, overrides=["clients[0].kind=open", "clients[0].rate=5"])
    assert (sc.clients[0].kind, sc.clients[0].rate) == ("open", 5.0)


@pytest.mark.parametrize(
    "override",
    ["clients.3.rate=1", "duration.x=1", "nokey", "=5", "a..b=1", "clients[x]=1",
     "server.hz[0]=1"],
)
def test_bad_override_path_names_the_override(tmp_path: Path, override: str) -> None:
    path = write(tmp_path, "clients:\n  - name: a\n")
    err = error_of(path, overrides=[override])
    assert override in str(err)


def test_bad_override_value_names_the_override(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, "name: a\n"), overrides=["server.hz=-1"])
    assert err.location == "server.hz (set by --set server.hz=-1)"
    assert "expected an integer ≥ 0, found -1" in str(err)


def test_bad_key_via_override_gets_hint() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario({}, overrides=["server.maxmemory-polcy=allkeys-lru"])
    assert info.value.hint == "did you mean 'maxmemory-policy'?"


# --- nothing escapes but ScenarioError (hypothesis) -----------------------------------------------

_TOKENS = [
    "name", "duration", "server", "clients", "kind", "open", "trace", "closed", "rate", "profile",
    "pool", "max-size", "mix", "GET", "think", "value-size", "distribution", "uniform", "min",
    "max", "mean", "at", "save", "hz", "maxmemory", "redis_conf", "engine", "cpu", "commands",
    "64mb", "5ms", "25k/s", "-1", "0", "1e999", "yes", "no", "null", "~", "10%", "2020-13-01",
    ":", ": ", " ", "  ", "\n", "\n  ", "\n    ", "- ", "[", "]", "{", "}", ",", "'", '"', "#",
    "&a ", "*a", "!!str ", "!!int ", "!!binary ", "!!set ", "!!python/name:os.system", "? ",
    "|", ">", "%YAML 1.1\n", "---\n", "...", "\t", "\\", "@", "`", "<<: ", "\x00", "µs",
]
VALID = yaml.safe_load((DATA / "valid.yaml").read_text())


def _load_quietly(source: Any, **kwargs: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = load_scenario(source, **kwargs)
        except ScenarioError as err:
            _names_where(err, source, kwargs.get("overrides", ()))
        else:
            assert isinstance(result, Scenario)


def _names_where(err: ScenarioError, source: Any, overrides: Any) -> None:
    """A refusal names where the mistake is, not only that there is one: the
    file when one was read (the scenario itself or a file it names, a
    redis_conf or a trace), at the start of the message as `path:line: ...`; and
    otherwise the field, whose first part is a key the document holds, a key a
    scenario may hold (one left out) or the key an override set (or the
    override itself, when it sets no key)."""
    text = str(err)
    assert err.expected and err.expected in text, text
    if isinstance(source, Path):
        assert err.file, f"a file was read but the message names none: {text}"
    if err.file:
        assert text.startswith(err.file), text
        return
    location = err.location
    if location.startswith("--set "):  # an override that is no key=value: itself
        assert location.removeprefix("--set ") in overrides, text
        return
    by_override = re.fullmatch(r"(.*) \(set by --set (.*)\)", location, re.S)
    if by_override:  # the field, and the override that set it
        location = by_override[1]
        assert by_override[2] in overrides, text
    if not location:  # a key that renders as no path (''): the key is what is shown
        assert "a key" in err.expected, f"no field named: {text}"
        return
    root = location.replace("[", ".").split(".")[0]
    keys = {str(k) for k in source} | set(valid_keys(Scenario))
    keys |= {str(o).partition("=")[0].replace("[", ".").split(".")[0].strip()
             for o in overrides}  # an override's key is read stripped, as `hz = 1`
    assert root in keys, f"{root!r} is no key of the document: {text}"


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.lists(st.sampled_from(_TOKENS), max_size=40).map("".join),
    st.text(max_size=200),
    st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
))
def test_random_text_raises_only_scenario_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        _load_quietly(path)


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(), st.text(max_size=12),
    st.sampled_from(["64mb", "5ms", "25k/s", "yes", "open", "trace", "closed", "GET", "", "-1",
                     "1e999", "10%", "zipf", "exponential", "uniform", "endpoint.trace",
                     "redis.conf", "missing.conf", "3600 1", "lifo", "7.2"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.one_of(st.text(max_size=8), st.sampled_from(_TOKENS[:30]),
                                st.integers()), inner, max_size=4),
    max_leaves=8,
)


def _containers(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, (dict, list)):
                yield from _containers(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            if isinstance(value, (dict, list)):
                yield from _containers(value, (*path, i))


def _mutate(doc: dict[str, Any], data: st.DataObject) -> None:
    paths = list(_containers(doc))
    path = data.draw(st.sampled_from(paths))
    node: Any = doc
    for step in path:
        node = node[step]
    action = data.draw(st.sampled_from(["replace", "delete", "add", "rename", "wrap"]))
    if isinstance(node, dict):
        keys = list(node)
        if action == "add" or not keys:
            node[data.draw(st.one_of(st.sampled_from(_TOKENS[:30]), st.text(max_size=8)))] = (
                data.draw(_VALUES))
            return
        key = data.draw(st.sampled_from(keys))
        if action == "delete":
            del node[key]
        elif action == "rename":
            node[str(key) + data.draw(st.sampled_from(["x", "_", "-", "s"]))] = node.pop(key)
        elif action == "wrap":
            node[key] = data.draw(st.sampled_from([[node[key]], {"value": node[key]}]))
        else:
            node[key] = data.draw(_VALUES)
    elif isinstance(node, list):
        if action == "add" or not node:
            node.append(data.draw(_VALUES))
            return
        index = data.draw(st.integers(0, len(node) - 1))
        if action == "delete":
            del node[index]
        elif action == "wrap":
            node[index] = [node[index]]
        else:
            node[index] = data.draw(_VALUES)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_scenarios_raise_only_scenario_error(scratch: Path, data: st.DataObject) -> None:
    doc = copy.deepcopy(VALID)
    for _ in range(data.draw(st.integers(1, 4))):
        _mutate(doc, data)
    _load_quietly(doc, base_dir=DATA)
    # The same document through a file, which adds line numbers to the path lookup.
    try:
        text = yaml.safe_dump(doc, allow_unicode=True)
    except yaml.YAMLError:
        return
    path = scratch / "mutated.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    (scratch / "endpoint.trace").write_text("GET a\n")
    _load_quietly(path)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=3))
@example(["²"])  # a Unicode digit: str.isdigit() is True, int() refuses it
@example(["clients[0].keyspace.preload=2"])
def test_random_overrides_raise_only_scenario_error(overrides: list[str]) -> None:
    _load_quietly({}, overrides=overrides)
