"""Loading a scenario: YAML (with line numbers), an optional redis.conf, `--set`
overrides, trace paths, validation, and turning every mistake into one ScenarioError.

Order of precedence for `server` settings, lowest first: Redis 7.2 defaults, the
`redis_conf` file, the scenario's own `server:` keys, `--set` overrides.

Relative paths (`redis_conf`, a group's `trace`) are resolved against the scenario
file's directory (or `base_dir`, or the working directory for a dict source) and
stored absolute, so a loaded Scenario does not depend on the working directory.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import types
import typing
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, BeforeValidator, ValidationError

from redsim.config.declare import not_keyspace
from redsim.config.directives import (
    ANSWER_CHANGING,
    DIRECTIVE_ALIASES,
    MULTI_ARG_DIRECTIVES,
    NOT_YET_MODELLED,
)
from redsim.config.errors import (
    BadValue,
    ScenarioError,
    UnmodelledDirectiveWarning,
    did_you_mean,
    read_regular_file,
    show,
)
from redsim.config.redis_conf import is_default, quote_arg, read_redis_conf
from redsim.config.schema import INSTANCE_TAGS, MODELLED_DIRECTIVES, Scenario
from redsim.fileio import real_path

# Most YAML nodes a scenario may expand to (aliases counted each time they are
# used). Stops "billion laughs" files and recursive aliases before validation walks
# them; a real scenario has a few hundred nodes.
MAX_NODES = 100_000
# Deepest nesting accepted; a scenario needs about 6 levels, and a recursive alias
# (`a: &x [*x]`) would otherwise be walked forever.
MAX_DEPTH = 64

Path_ = tuple[str | int, ...]


def _norm_key(key: object) -> str:
    # Paths are compared case-insensitively with `_` == `-`, as keys are written
    # either way (`max-size`, `max_size`) and command names in any case.
    return str(key).lower().replace("_", "-")


def _norm_path(path: Iterable[object]) -> Path_:
    return tuple(p if isinstance(p, int) else _norm_key(p) for p in path)


def line_of(lines: dict[Path_, int], norm: Path_) -> int | None:
    """The line of the deepest part of normalised path `norm` that `lines` knows."""
    for n in range(len(norm), 0, -1):
        if norm[:n] in lines:
            return lines[norm[:n]]
    return None


class _Context:
    """Where each part of the raw scenario came from, for error messages."""

    def __init__(self, file: str | None, lines: dict[Path_, int]) -> None:
        self.file = file
        self.lines = lines
        self.overrides: list[tuple[Path_, str]] = []
        self.conf: dict[str, tuple[str, int]] = {}  # server key -> (conf file, line)

    def error(
        self, path: Iterable[object], expected: str, found: str, hint: str | None = None
    ) -> ScenarioError:
        """A ScenarioError at `path` (a pydantic-style loc), located as well as known."""
        rendered, norm = render_path(tuple(path))
        for prefix, text in reversed(self.overrides):
            # The error is inside what the override set, or the override created
            # the thing the error is about (`duration.x=1` makes duration a mapping).
            if norm[: len(prefix)] == prefix or prefix[: len(norm)] == norm:
                return ScenarioError(
                    file=self.file, location=f"{rendered} (set by {text})",
                    expected=expected, found=found, hint=hint,
                )
        if len(norm) >= 2 and norm[0] == "server" and norm[1] in self.conf:
            conf_file, line = self.conf[str(norm[1])]
            return ScenarioError(
                file=conf_file, line=line, location=str(norm[1]),
                expected=expected, found=found, hint=hint,
            )
        return ScenarioError(
            file=self.file, line=line_of(self.lines, norm), location=rendered,
            expected=expected, found=found, hint=hint,
        )


# ---------------------------------------------------------------------------------
# YAML with line numbers.


def _read_yaml(text: str, file: str | None) -> tuple[Any, dict[Path_, int]]:
    """Parse one YAML document; return the data and {normalised path: line}."""
    loader: yaml.SafeLoader | None = None
    try:
        loader = yaml.SafeLoader(text)  # the reader already rejects control characters
        node = loader.get_single_node()
        lines = _line_map(node, file) if node is not None else {}
        data = loader.construct_document(node) if node is not None else None
    except ScenarioError:
        raise
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, text, file) from None
    except Exception as exc:  # noqa: BLE001 - PyYAML raises ValueError, RecursionError…
        # e.g. `2020-13-01` matches the timestamp pattern and datetime() refuses it.
        raise ScenarioError(
            file=file, expected="valid YAML", found=f"{type(exc).__name__}: {exc}"
        ) from None
    finally:
        if loader is not None:
            loader.dispose()
    return data, lines


def _yaml_error(exc: yaml.YAMLError, text: str, file: str | None) -> ScenarioError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    if isinstance(exc, yaml.reader.ReaderError):
        line = text.count("\n", 0, exc.position) + 1
        char = exc.character
        shown = f"U+{char:04X}" if isinstance(char, int) else show(char)
        found = f"a character YAML does not allow ({shown})"
    else:
        found = str(getattr(exc, "problem", None) or exc).strip()
        context = getattr(exc, "context", None)
        if context:
            found = f"{found} ({context})"
    return ScenarioError(file=file, line=line, expected="valid YAML", found=found)


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _duplicate_key(first: yaml.Node, again: yaml.Node, path: tuple[str | int, ...],
                   file: str | None) -> ScenarioError:
    """The error for a key written twice in one mapping. PyYAML keeps the last one
    silently; a user who wrote both meant one of them. Keys are compared as the
    loader reads them (case-insensitive, `_` = `-`), so `max_size` after `max-size`
    is the same key."""
    key = _dotted([*path, str(again.value)])
    same = "" if first.value == again.value else f" (the same key as {first.value!r})"
    return ScenarioError(
        file=file, line=again.start_mark.line + 1, location=key,
        expected="each key once in a mapping",
        found=f"{again.value!r} again{same}, first on line {first.start_mark.line + 1}",
    )


def _line_map(root: yaml.Node, file: str | None) -> dict[Path_, int]:
    """{normalised path: 1-based line} for every mapping key and sequence item."""
    lines: dict[Path_, int] = {}
    budget = MAX_NODES
    # Each entry: a node, its normalised path, and the path as written (for errors).
    stack: list[tuple[yaml.Node, Path_, tuple[str | int, ...]]] = [(root, (), ())]
    while stack:
        node, path, written = stack.pop()
        budget -= 1
        if budget < 0:
            raise ScenarioError(
                file=file,
                expected=f"a scenario of at most {MAX_NODES} YAML nodes (aliases expanded)",
                found="more (deeply repeated aliases?)",
            )
        if len(path) > MAX_DEPTH:
            raise ScenarioError(
                file=file,
                line=node.start_mark.line + 1,
                expected=f"a scenario nested at most {MAX_DEPTH} levels deep",
                found="deeper nesting (a recursive alias?)",
            )
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, yaml.Node] = {}
            for key_node, value_node in node.value:
                budget -= 1
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                    continue  # `<<: *base`: keys written after it override it, on purpose
                norm = _norm_key(key_node.value)
                if norm in seen:
                    raise _duplicate_key(seen[norm], key_node, written, file)
                seen[norm] = key_node
                child = (*path, norm)
                lines.setdefault(child, key_node.start_mark.line + 1)
                stack.append((value_node, child, (*written, str(key_node.value))))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                child = (*path, index)
                lines.setdefault(child, item.start_mark.line + 1)
                stack.append((item, child, (*written, index)))
    return lines


# ---------------------------------------------------------------------------------
# Field paths: pydantic locs rendered with YAML key names.


def _unwrap(t: Any) -> Any:
    """Strip Annotated and Optional from a type."""
    while True:
        origin = typing.get_origin(t)
        if origin is typing.Annotated:
            t = typing.get_args(t)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(t) if a is not type(None)]
            if not args:
                return t
            # A path goes on below a list or a mapping, never below a scalar
            # (`instances: 3` or `instances: [...]`).
            nested = [a for a in args if _is_nested(a)]
            t = (nested or args)[0]
        else:
            return t


def _is_nested(t: Any) -> bool:
    """Whether ``t`` (Annotated or not) is a list, a mapping or a model."""
    while typing.get_origin(t) is typing.Annotated:
        t = typing.get_args(t)[0]
    origin = typing.get_origin(t)
    return origin in (list, tuple, dict) or (isinstance(t, type) and issubclass(t, BaseModel))


def _as_model(t: Any) -> type[BaseModel] | None:
    t = _unwrap(t)
    return t if isinstance(t, type) and issubclass(t, BaseModel) else None


def _field_key(model: type[BaseModel], name: str) -> str:
    field = model.model_fields[name]
    return field.serialization_alias or field.alias or name


def _find_field(model: type[BaseModel], key: str) -> str | None:
    """The attribute name of `model`'s field written as `key` (alias or name)."""
    norm = _norm_key(key)
    for name in model.model_fields:
        if norm in (_norm_key(name), _norm_key(_field_key(model, name))):
            return name
    return None


def valid_keys(model: type[BaseModel]) -> list[str]:
    """The YAML keys `model` accepts."""
    return [_field_key(model, name) for name in model.model_fields]


def render_path(loc: tuple[object, ...]) -> tuple[str, Path_]:
    """Render a pydantic loc as `clients[0].pool.max-size` and its normalised path.

    Walks the Scenario model alongside the loc, so attribute names become the YAML
    keys (`max_size` → `max-size`) and list positions become `[i]`.
    """
    t: Any = Scenario
    text = ""
    norm: list[str | int] = []
    for item in loc:
        model = _as_model(t)
        if isinstance(item, int) and model is None:
            text += f"[{item}]"
            norm.append(item)
            args = typing.get_args(_unwrap(t))
            t = args[0] if args else None
            continue
        key = str(item)
        if model is not None:
            name = _find_field(model, key)
            if name is not None:
                key = _field_key(model, name)
                t = model.model_fields[name].annotation
            else:
                t = None
        else:
            args = typing.get_args(_unwrap(t))
            t = args[1] if typing.get_origin(_unwrap(t)) is dict and len(args) == 2 else None
        text += ("." if text else "") + key
        norm.append(_norm_key(key))
    return text, tuple(norm)


def _model_at(loc: tuple[object, ...]) -> type[BaseModel] | None:
    t: Any = Scenario
    for item in loc:
        model = _as_model(t)
        if model is not None and not isinstance(item, int):
            name = _find_field(model, str(item))
            t = model.model_fields[name].annotation if name else None
        else:
            args = typing.get_args(_unwrap(t))
            if typing.get_origin(_unwrap(t)) is dict:
                t = args[1] if len(args) == 2 else None
            else:
                t = args[0] if args else None
    return _as_model(t)


# ---------------------------------------------------------------------------------
# pydantic errors → ScenarioError.

_EXPECTED_BY_TYPE = {
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "dict_type": "a mapping",
    "list_type": "a list",
    "tuple_type": "a list",
    "string_type": "a string",
    "string_sub_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "yes/no",
    "bool_parsing": "yes/no",
    "recursion_loop": "a structure without recursive aliases",
    "invalid_key": "string keys",
}


def _from_validation_error(exc: ValidationError, ctx: _Context) -> ScenarioError:
    err = exc.errors(include_url=False)[0]
    loc = tuple(x for x in err.get("loc", ()) if x not in INSTANCE_TAGS)
    kind = err.get("type", "")
    value_error = (err.get("ctx") or {}).get("error")
    if isinstance(value_error, BadValue):
        return ctx.error(
            (*loc, *value_error.field), value_error.expected, value_error.found, value_error.hint
        )
    if kind == "extra_forbidden" and loc:
        model = _model_at(loc[:-1])
        keys = valid_keys(model) if model is not None else []
        section = render_path(loc[:-1])[0] or "the top level"
        hint = did_you_mean(str(loc[-1]), keys)
        if hint is None and keys:
            hint = "valid keys: " + ", ".join(keys)
        return ctx.error(loc, f"a key of {section}", show(loc[-1]), hint)
    if kind == "missing":
        return ctx.error(loc, f"a value for {str(loc[-1]) if loc else 'this field'} (required)",
                         "nothing")
    if kind == "literal_error":
        expected = f"one of {(err.get('ctx') or {}).get('expected', '')}"
    elif kind == "too_short":
        expected = f"at least {(err.get('ctx') or {}).get('min_length', 1)} entries"
    else:
        msg = str(err.get("msg", "a valid value"))
        msg = msg.removeprefix("Value error, ")
        expected = _EXPECTED_BY_TYPE.get(kind, msg[:1].lower() + msg[1:])
    return ctx.error(loc, expected, show(err.get("input")))


# ---------------------------------------------------------------------------------
# Overrides (`--set key=value`).

_SEGMENT = re.compile(r"([^.\[\]]+)((?:\[[0-9]+\])*)")


def _parse_override(text: str) -> tuple[list[str | int], Any]:
    key, sep, raw = text.partition("=")
    segments: list[str | int] = []
    for part in key.strip().split(".") if key.strip() else [""]:
        m = _SEGMENT.fullmatch(part.strip())
        if m is None:
            raise ScenarioError(
                location=f"--set {text}",
                expected="key=value with a dotted key like clients[0].pool.max-size=4",
                found=show(text),
            )
        name = m.group(1)
        # ASCII digits only: str.isdigit() accepts "²", which int() rejects.
        segments.append(int(name) if name.isascii() and name.isdigit() else name)
        segments.extend(int(i) for i in re.findall(r"\[([0-9]+)\]", m.group(2)))
    if not sep:
        raise ScenarioError(
            location=f"--set {text}",
            expected="key=value (e.g. server.hz=100)",
            found=f"{show(text)} (no '=')",
        )
    stripped = raw.strip()
    if not stripped:
        return segments, ""
    try:
        value = yaml.safe_load(stripped)
    except Exception:  # noqa: BLE001 - anything YAML refuses is taken as a plain string
        return segments, stripped
    # The value is a YAML scalar or flow collection; `a: b` or `# x` are plain text.
    if isinstance(value, (dict, list)) and not stripped.startswith(("{", "[")):
        return segments, stripped
    if value is None and stripped not in ("null", "Null", "NULL", "~"):
        return segments, stripped
    return segments, value


def _dotted(segments: list[str | int]) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in segments).lstrip(".")


def _apply_override(data: dict[Any, Any], text: str) -> Path_:
    segments, value = _parse_override(text)
    return _set_path(data, segments, value, f"--set {text}")


def _set_path(data: dict[Any, Any], segments: list[str | int], value: Any,
              label: str) -> Path_:
    """Set the field at `segments` in the raw scenario to `value`, creating
    mappings on the way; `label` says who asked, for errors."""

    def bad(expected: str, found: str) -> ScenarioError:
        return ScenarioError(location=label, expected=expected, found=found)

    node: Any = data
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        where = _dotted(segments[:i]) or "the top level"
        if isinstance(seg, int):
            if not isinstance(node, list):
                raise bad(f"a list at {where} to index with [{seg}]", show(node))
            if seg >= len(node):
                raise bad(f"an index below {len(node)} at {where}", str(seg))
            if last:
                node[seg] = value
            else:
                node = node[seg]
            continue
        if not isinstance(node, dict):
            raise bad(f"a mapping at {where} to set {seg!r} in", show(node))
        existing = [k for k in node if _norm_key(k) == _norm_key(seg)]
        if last:
            for k in existing:
                del node[k]
            node[seg] = value
        elif existing:
            node = node[existing[0]]
        elif segments[i + 1] == 0:
            # `clients.0.x=…` on a scenario without `clients`: the default is one
            # group, so index 0 names it.
            node[seg] = [{}]
            node = node[seg]
        elif isinstance(segments[i + 1], int):
            raise bad(f"a list at {_dotted([*segments[:i], seg])}", "nothing there")
        else:
            node[seg] = {}
            node = node[seg]
    return _norm_path(segments)


def field_path(path: str) -> list[str | int]:
    """The segments of a dotted field path (`clients[0].pool.max-size`)."""
    segments, _ = _parse_override(f"{path}=0")
    return segments


def field_parser(path: str) -> Callable[[Any], Any] | None:
    """The function that reads the value written at a dotted field path (the
    last before-validator of its field: `clients[0].mix[1].ttl` -> the TTL's
    duration parser), or None when the path names no field, or one without.

    Walks the Scenario model as `render_path` does; a list position or a
    mapping key steps into the element's type.
    """
    t: Any = Scenario
    field: Any = None
    try:
        segments = field_path(path)
    except ScenarioError:
        return None
    for seg in segments:
        model = _as_model(t)
        if model is not None and not isinstance(seg, int):
            name = _find_field(model, str(seg))
            if name is None:
                return None
            field = model.model_fields[name]
            t = field.annotation
            if isinstance(t, (typing.ForwardRef, str)):  # a model pydantic has not rebuilt
                t = typing.get_type_hints(model, include_extras=True)[name]
            continue
        args = typing.get_args(_unwrap(t))
        if typing.get_origin(_unwrap(t)) is dict:
            t = args[1] if len(args) == 2 else None
        else:
            t = args[0] if args else None
        field = None  # an element: its parser, if any, is in its Annotated type
    metadata = list(getattr(field, "metadata", None) or ())
    if typing.get_origin(t) is typing.Annotated:
        metadata += list(t.__metadata__)
    parsers = [m.func for m in metadata if isinstance(m, BeforeValidator)]
    return parsers[-1] if parsers else None


# ---------------------------------------------------------------------------------
# redis.conf and trace paths.


def _resolve(base: Path, value: str) -> Path:
    """``value`` made absolute against ``base``, ``~`` expanded and symlinks
    resolved (``fileio.real_path``: a path that cannot be resolved stays as
    written, for its opener to refuse with the field's name)."""
    return Path(real_path(base / os.path.expanduser(value)))


def _merge_redis_conf(data: dict[Any, Any], base: Path, ctx: _Context) -> None:
    """Fill `server` from the redis_conf file; the scenario's own keys win."""
    keys = [k for k in data if k in ("redis_conf", "redis-conf")]
    if not keys or not isinstance(data[keys[0]], str) or not data[keys[0]].strip():
        return
    path = _resolve(base, data[keys[0]])
    for k in keys:
        del data[k]
    data["redis_conf"] = str(path)
    directives = read_redis_conf(path)
    server = data.get("server")
    if server is None:
        server = {}
    if not isinstance(server, dict):
        return  # the schema reports that server is not a mapping
    own = {_norm_key(k) for k in server}
    own_unmodelled = server.get("unmodelled")
    if isinstance(own_unmodelled, dict):
        own |= {_norm_key(k) for k in own_unmodelled}
    merged: dict[Any, Any] = {}
    unmodelled: dict[str, str] = {}
    for name, directive in directives.items():
        name = DIRECTIVE_ALIASES.get(name, name)  # hash-max-ziplist-* and the like
        if name in own:
            continue
        ctx.conf[name] = (directive.file, directive.line)
        if name in MODELLED_DIRECTIVES:
            # A list directive's arguments are one value (save, client-output-buffer-limit).
            merged[name] = (" ".join(directive.args) if name in MULTI_ARG_DIRECTIVES
                            else directive.args[0])
        else:
            unmodelled[name] = " ".join(quote_arg(a) for a in directive.args)
    merged.update(server)
    if unmodelled and (own_unmodelled is None or isinstance(own_unmodelled, dict)):
        merged["unmodelled"] = {**unmodelled, **(own_unmodelled or {})}
    data["server"] = merged


CALIBRATION_SECTIONS = ("engine", "disk", "host")
"""Scenario sections a calibration file (``redsim calibrate``) may fill."""


def _deep_merge(low: dict[Any, Any], high: dict[Any, Any]) -> dict[Any, Any]:
    """``low`` with ``high``'s keys on top, merging nested mappings."""
    out = dict(low)
    for key, value in high.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def resolve_distribution_files(node: Any, base: str | os.PathLike[str]) -> None:
    """Make the ``samples: FILE`` of every empirical distribution below ``node``
    (raw YAML data: a scenario, a calibration's values, a sweep's ``set:``) an
    absolute path, a relative one being relative to ``base``: the directory of
    the file that named it. In place; an absolute path stays as it is."""
    if isinstance(node, dict):
        kind = node.get("distribution")
        if (isinstance(kind, str) and kind.strip().lower() == "empirical"
                and isinstance(node.get("samples"), str)):
            node["samples"] = str(_resolve(Path(base), node["samples"]))
        for value in node.values():
            resolve_distribution_files(value, base)
    elif isinstance(node, list):
        for value in node:
            resolve_distribution_files(value, base)


def read_calibration(path: Path) -> tuple[dict[str, Any], dict[Path_, int]]:
    """A calibration file's ``values`` (validated, sample paths absolute) and their
    line numbers. Raises ScenarioError naming the calibration file and field."""
    file = str(path)
    data, lines = _read_yaml(_read_text(path, "calibration file"), file)
    if not isinstance(data, dict) or "redsim-calibration" not in data:
        raise ScenarioError(file=file, expected="a calibration file written by "
                            "`redsim calibrate` (a mapping with redsim-calibration: 1)",
                            found="an empty file" if data is None else show(
                                data if not isinstance(data, dict) else list(data)))
    if data["redsim-calibration"] != 1:
        raise ScenarioError(file=file, line=line_of(lines, ("redsim-calibration",)),
                            location="redsim-calibration", expected="format 1",
                            found=show(data["redsim-calibration"]))
    values = data.get("values") or {}
    if not isinstance(values, dict):
        raise ScenarioError(file=file, line=line_of(lines, ("values",)), location="values",
                            expected="a mapping of scenario sections", found=show(values))
    for key in values:
        if key not in CALIBRATION_SECTIONS:
            raise ScenarioError(
                file=file, line=line_of(lines, ("values", _norm_key(key))),
                location=f"values.{key}",
                expected="a section a calibration fills (" + ", ".join(CALIBRATION_SECTIONS)
                + ")", found=show(key), hint=did_you_mean(str(key), CALIBRATION_SECTIONS))
    # An empty section (``engine:`` with nothing under it, YAML's null) fills
    # nothing, as if it were absent.
    values = {k: v for k, v in copy.deepcopy(values).items() if v is not None}
    resolve_distribution_files(values, path.parent)
    own = {p[1:]: n for p, n in lines.items() if p[:1] == ("values",)}
    try:
        Scenario.model_validate(values)
    except ValidationError as exc:
        err = _from_validation_error(exc, _Context(file, own))
        raise ScenarioError(file=file, line=err.line, location=f"values.{err.location}",
                            expected=err.expected, found=err.found, hint=err.hint) from None
    return values, own


def _merge_calibration(data: dict[Any, Any], base: Path, ctx: _Context) -> None:
    """Fill engine/disk/host from the calibration file; the scenario's own keys win."""
    value = data.get("calibration")
    if value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise ctx.error(("calibration",), "the path of a calibration file", show(value))
    path = _resolve(base, value)
    values, _ = read_calibration(path)
    data["calibration"] = str(path)
    for section, fill in values.items():
        own = data.get(section)
        if own is None:
            own = {}
        if isinstance(own, dict):  # else the schema reports the scenario's own mistake
            data[section] = _deep_merge(fill, own)


def _resolve_traces(data: dict[Any, Any], base: Path) -> dict[int, str]:
    """Make trace paths absolute in place; return {group index: path as written}."""
    written: dict[int, str] = {}
    clients = data.get("clients")
    if not isinstance(clients, list):
        return written
    for i, group in enumerate(clients):
        if isinstance(group, dict) and isinstance(group.get("trace"), str):
            written[i] = group["trace"]
            group["trace"] = str(_resolve(base, group["trace"]))
    return written


def _check_traces(scenario: Scenario, written: dict[int, str], ctx: _Context) -> None:
    """Parse every trace group's file now, so a file the run could not replay (missing,
    not a regular file, too large, empty, an unknown command) is a ScenarioError at
    validation, naming the scenario's field and the trace file's own line (a binary
    trace's record). The run reuses the parse (``redsim.traces.load_trace`` and
    ``parse_trace`` keep the last ones)."""
    # Imported here: the trace readers live with the model they feed.
    from redsim.model.trace import TraceError
    from redsim.traces import BINARY_FORMATS, load_group_trace

    for i, group in enumerate(scenario.clients):
        if group.kind != "trace" or group.trace is None:
            continue
        try:
            load_group_trace(group)
        except TraceError as exc:
            unit = "record" if group.trace_format in BINARY_FORMATS else "line"
            where = f" {unit} {exc.line}" if exc.line is not None else ""
            raise ctx.error(
                ("clients", i, "trace"),
                exc.expected,
                f"{exc.found} (in {show(written.get(i, group.trace))}{where})",
            ) from None


# ---------------------------------------------------------------------------------
# Public API.


def load_scenario(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    overrides: Iterable[str] = (),
    values: Iterable[tuple[str, Any, str]] = (),
    base_dir: str | os.PathLike[str] | None = None,
    calibration: str | os.PathLike[str] | None = None,
) -> Scenario:
    """Load and validate a scenario from a YAML file path or a dict.

    Args:
        source: path of a scenario YAML file, or the scenario as a mapping.
        overrides: `key=value` strings (`server.hz=100`, `clients[0].rate=30k/s`);
            the value is read as a YAML scalar.
        values: (dotted path, value, label) triples set after the overrides, for
            programs (sweeps): the value is used as given and `label` (e.g.
            "sweep axis ttl") names the setter in errors.
        base_dir: directory for relative `redis_conf`/`trace` paths (default: the
            scenario file's directory, or the working directory for a mapping).
        calibration: a calibration file (``redsim calibrate``) to use instead of
            the scenario's own ``calibration`` key. Its values fill the scenario's
            engine/disk/host below the scenario's own keys and the overrides.

    Raises:
        ScenarioError: for any mistake in the file, its redis.conf or the overrides.
    """
    if isinstance(source, Mapping):
        file = None
        data: Any = copy.deepcopy(dict(source))
        ctx = _Context(None, {})
        base = Path(base_dir) if base_dir is not None else Path.cwd()
    else:
        path = Path(source)
        file = str(path)
        data, lines = _read_yaml(_read_text(path), file)
        ctx = _Context(file, lines)
        base = Path(base_dir) if base_dir is not None else path.resolve().parent
    if not isinstance(data, dict):
        found = "an empty file" if data is None else show(data)
        raise ScenarioError(file=file, expected="a mapping of scenario keys", found=found)

    for text in [overrides] if isinstance(overrides, str) else overrides:
        try:
            ctx.overrides.append((_apply_override(data, text), f"--set {text}"))
        except ScenarioError as exc:
            raise ScenarioError(
                file=file, location=exc.location, expected=exc.expected, found=exc.found
            ) from None
    for path, value, label in values:
        try:
            ctx.overrides.append((_set_path(data, field_path(path), copy.deepcopy(value),
                                            label), label))
        except ScenarioError as exc:
            raise ScenarioError(
                file=file, location=f"{path} (set by {label})", expected=exc.expected,
                found=exc.found) from None
    if calibration is not None:
        data["calibration"] = str(Path(calibration).resolve())
    _merge_redis_conf(data, base, ctx)
    resolve_distribution_files(data, base)  # empirical distributions' files, as traces
    _merge_calibration(data, base, ctx)
    written = _resolve_traces(data, base)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise _from_validation_error(exc, ctx) from None
    _check_traces(scenario, written, ctx)
    if scenario.server.unmodelled:
        _warn_unmodelled(scenario, file)
    _warn_not_yet_modelled(scenario, file)
    return scenario


# Files whose unmodelled directives were already warned about in this process: a
# sweep or a test suite loads the same scenario and redis.conf many times.
_WARNED: set[tuple[Any, ...]] = set()


def _first_time(key: tuple[Any, ...]) -> bool:
    """True the first time this process warns with ``key`` (then remembered)."""
    if key in _WARNED:
        return False
    _WARNED.add(key)
    return True


def unmodelled_report(unmodelled: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """Of a scenario's unmodelled directives: those that could change the answer
    whatever their value (``ANSWER_CHANGING``), and the others whose value is not
    Redis 7.2's default. Both sorted; the remaining ones are at their defaults and
    change nothing redsim reports."""
    changing = sorted(n for n in unmodelled if n in ANSWER_CHANGING)
    differing = sorted(n for n, text in unmodelled.items()
                       if n not in ANSWER_CHANGING and not is_default(n, text))
    return changing, differing


def _warn_unmodelled(scenario: Scenario, file: str | None) -> None:
    """One UnmodelledDirectiveWarning line per redis.conf (or scenario file) per
    process: how many directives redsim keeps without modelling them, naming only
    those that could change the answer or differ from Redis's defaults."""
    unmodelled = scenario.server.unmodelled
    source = scenario.redis_conf or file
    # Keyed by file; a mapping without one is keyed by its directives.
    if not _first_time((scenario.redis_conf, file, () if source is not None
                        else tuple(sorted(unmodelled.items())))):
        return
    changing, differing = unmodelled_report(unmodelled)
    n = len(unmodelled)
    text = (f"{source or 'scenario'}: {n} Redis directive{'s' if n != 1 else ''} redsim "
            "does not model (kept in server.unmodelled)")
    if changing:
        text += "; could change the answer: " + ", ".join(changing)
    if differing:
        text += "; not at Redis's default: " + ", ".join(differing)
    if not changing and not differing:
        text += ", all at Redis's defaults"
    text += " (`redsim validate --verbose` lists them)"
    warnings.warn(text, UnmodelledDirectiveWarning, stacklevel=3)


def not_yet_modelled(server: Any) -> dict[str, str]:
    """The ``NOT_YET_MODELLED`` directives a scenario sets to another value than
    Redis's default: {directive: what the model does instead}."""
    out = {}
    for name, instead in NOT_YET_MODELLED.items():
        attr = name.replace("-", "_")
        if getattr(server, attr) != type(server).model_fields[attr].get_default(
                call_default_factory=True):
            out[name] = instead
    return out


def _warn_not_yet_modelled(scenario: Scenario, file: str | None) -> None:
    """One UnmodelledDirectiveWarning per file per process naming the checked but
    not yet modelled directives it sets, and what the model does instead."""
    found = not_yet_modelled(scenario.server)
    if not found:
        return
    source = scenario.redis_conf or file
    if not _first_time(("not-yet", source, tuple(sorted(found)))):
        return
    text = (f"{source or 'scenario'}: {', '.join(sorted(found))} "
            + ("is checked but not modelled yet, and changes" if len(found) == 1 else
               "are checked but not modelled yet, and change")
            + " nothing in this run: " + "; ".join(f"{n}: {t}" for n, t in sorted(found.items())))
    warnings.warn(text, UnmodelledDirectiveWarning, stacklevel=3)


def forget_warnings() -> None:
    """Warn again about files already warned about (for tests)."""
    _WARNED.clear()


def _read_text(path: Path, what: str = "scenario file") -> str:
    """A YAML file's text (scenario, sweep, calibration): a regular file of at most
    MAX_CONFIG_BYTES, UTF-8 (a BOM is dropped). `what` names it in errors."""
    raw = read_regular_file(path, what=what)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            file=str(path),
            line=raw.count(b"\n", 0, exc.start) + 1,
            expected="UTF-8 text",
            found=f"the byte 0x{raw[exc.start]:02x}",
        ) from None


def validate_file(path: str | os.PathLike[str]) -> Scenario:
    """Load and validate a scenario file (raises ScenarioError on any mistake)."""
    return load_scenario(path)


def resolved_dict(scenario: Scenario) -> dict[str, Any]:
    """The fully resolved scenario as plain YAML/JSON-safe data with hyphenated keys:
    every default filled in, sizes as int bytes, durations as float seconds, costs
    as float µs, rates as float per second. It loads back to an equal Scenario."""
    return scenario.model_dump(mode="json", by_alias=True)


def scenario_hash(scenario: Scenario) -> str:
    """sha256 hex digest of the canonical JSON of `resolved_dict(scenario)`, with
    each trace path (and a calibration file's, and the redis_conf's) replaced by the
    sha256 of the file's bytes.

    The resolved trace path is absolute, so hashing it would give the same
    scenario a different hash in every checkout (and make committed results look
    stale on CI); what a run depends on is the trace's content, so that is hashed.
    """
    return resolved_hash(resolved_dict(scenario))


def resolved_hash(data: dict[str, Any]) -> str:
    """``scenario_hash`` of a resolved scenario's data (``resolved_dict``, possibly
    with fields left out or set, as ``keyspace_hash`` does);
    the trace, calibration and redis.conf paths in ``data`` are replaced."""
    for group in data["clients"]:
        if group.get("trace") is not None:
            group["trace"] = "sha256:" + _file_sha256(group["trace"])
    # A calibration's or a redis.conf's values are in the data already; their
    # content stands for the file so that moving it leaves the hash alone.
    for key in ("calibration", "redis_conf"):
        if data.get(key) is not None:
            data[key] = "sha256:" + _file_sha256(data[key])
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


NOT_KEYSPACE: tuple[tuple[str, ...], ...] = not_keyspace(Scenario)
"""Scenario fields (paths in ``resolved_dict``; ``*``: every list entry) that
do not shape the keyspace at time 0, from their declarations in ``schema/``
(``Directive(keyspace=False)``, ``NotKeyspace()``): runs differing only in these
share one preloaded keyspace (``model/keyspace_image.py``). Connections
(``pool``) change the spare rows and slabs only."""


def _drop(data: Any, path: tuple[str, ...]) -> None:
    """Delete the field at ``path`` (``*``: in every list entry) from ``data``."""
    if not path or data is None:
        return
    head, rest = path[0], path[1:]
    if head == "*":
        for item in data if isinstance(data, list) else ():
            _drop(item, rest)
    elif isinstance(data, dict) and head in data:
        if rest:
            _drop(data[head], rest)
        else:
            del data[head]


def keyspace_hash(scenario: Scenario, seed: int) -> str:
    """``scenario_hash`` of the scenario without ``NOT_KEYSPACE``'s fields and
    with the run's seed: runs with equal hashes start from the same keyspace, so
    one run's preloaded keyspace is kept under it for the others
    (``model.keyspace_image.KeyspaceImages``)."""
    data = resolved_dict(scenario)
    for path in NOT_KEYSPACE:
        _drop(data, path)
    data["seed"] = int(seed)
    return resolved_hash(data)


def _file_sha256(path: str) -> str:
    """The file's sha256 hex digest; if it can no longer be read (deleted since the
    scenario was loaded), "unreadable " and the path, so hashing never raises."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return f"unreadable {path}"
    return digest.hexdigest()
