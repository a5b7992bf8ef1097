"""docs/scenario-reference.md: every key of a scenario file, from the schema."""

from __future__ import annotations

import functools
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any, Literal

from pydantic import BaseModel, BeforeValidator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from redsim.config import schema
from redsim.config import units as units_module
from redsim.config.directives import KNOWN_REDIS_DIRECTIVES
from redsim.config.schema import MODELLED_DIRECTIVES, RUNTIME_SETTABLE
from redsim.config.units import (
    DURATION_UNITS_NS,
    RATE_MULTIPLIERS,
    RATE_PER,
    SIZE_UNITS,
    parse_bandwidth,
    parse_bool,
    parse_cost_us,
    parse_duration,
    parse_float,
    parse_int,
    parse_rate,
    parse_size,
)
from redsim.docs._common import REGENERATE, _code

# ---------------------------------------------------------------------------------
# Small rendering helpers.


def _cell(text: str) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _anchor(model: type[BaseModel]) -> str:
    # GitHub's heading anchors: lower case; section headings are bare class names.
    return f"[{model.__name__}](#{model.__name__.lower()})"


def _number(x: float) -> str:
    """A number as a scenario file would write it: integral floats without `.0`."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


def _power(n: int) -> str:
    """`1024³` for 1024**3, `1000` for 1000: how SIZE_UNITS multipliers read best."""
    superscripts = {2: "²", 3: "³", 4: "⁴"}
    for base in (1024, 1000):
        k, m = 0, 1
        while m < n:
            m *= base
            k += 1
        if m == n and k >= 1:
            return str(base) + superscripts.get(k, "" if k == 1 else f"^{k}")
    return str(n)


def _flow(value: Any) -> str:
    """A default value in YAML flow style (`[{command: GET}]`, `yes`, `""`)."""
    if isinstance(value, schema._Dist):
        dumped = value.model_dump()
        if dumped.get("distribution") == "fixed":
            return _flow(dumped["value"])  # a fixed distribution is written as its value
        return _flow(dumped)
    if isinstance(value, BaseModel):
        # Only what differs from the model's defaults, by YAML key, as a user writes it.
        return _flow(value.model_dump(by_alias=True, exclude_defaults=True))
    if isinstance(value, bool):
        return "yes" if value else "no"  # the Redis spelling scenario files use
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return repr(value)


def _duration_hint(seconds: float) -> str:
    """` (500µs)` for a sub-second duration, so 0.0005 reads at a glance."""
    if not 0 < seconds < 1:
        return ""
    for factor, unit in ((1e3, "ms"), (1e6, "µs"), (1e9, "ns")):
        scaled = round(seconds * factor, 9)
        if scaled >= 1:
            return f" ({scaled:g}{unit})"
    return ""


def _size_hint(size: int) -> str:
    """` (64mb)` for a size that is a whole number of kb, mb or gb."""
    for unit in ("gb", "mb", "kb"):
        mult = SIZE_UNITS[unit]
        if size >= mult and size % mult == 0:
            return f" ({size // mult}{unit})"
    return ""


# ---------------------------------------------------------------------------------
# Walking the schema.


def _resolve(model: type[BaseModel], name: str, annotation: Any) -> Any:
    """The field's annotation with forward references evaluated.

    A model whose field names a class its module had not defined or imported when
    the model was created keeps a ForwardRef until pydantic rebuilds it on first
    use (none does today: each module of ``redsim/config/schema/`` imports the
    models its fields name); evaluating the hints here avoids mutating the model
    just to document it.
    """
    if isinstance(annotation, (typing.ForwardRef, str)):
        return typing.get_type_hints(model)[name]
    return annotation


def yaml_key(model: type[BaseModel], name: str) -> str:
    """The key a scenario file writes for `model`'s field `name`.

    The same rule as the loader's: the serialization alias, else the alias. A field
    whose annotation was a forward reference at class creation has no alias yet, so
    the model's alias generator is applied here.
    """
    field = model.model_fields[name]
    if field.serialization_alias or field.alias:
        return field.serialization_alias or field.alias or name
    generator = model.model_config.get("alias_generator")
    return generator(name) if callable(generator) else name


def _other_keys(model: type[BaseModel], name: str) -> list[str]:
    """Further spellings the field accepts (`redis-conf` beside `redis_conf`)."""
    field = model.model_fields[name]
    primary = yaml_key(model, name)
    choices = getattr(field.validation_alias, "choices", None) or []
    return [c for c in choices if isinstance(c, str) and c != primary]


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def _submodels(annotation: Any, suffix: str = "") -> Iterator[tuple[type[BaseModel], str]]:
    """Models inside an annotation, each with the path suffix that reaches it:
    `list[X]` → (X, "[]"), `dict[str, X]` → (X, ".<name>"), `X | None` → (X, "")."""
    if _is_model(annotation):
        yield annotation, suffix
        return
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        yield from _submodels(args[0], suffix)
    elif origin in (list, tuple, set, frozenset):
        for arg in args:
            yield from _submodels(arg, suffix + "[]")
    elif origin is dict and len(args) == 2:
        yield from _submodels(args[1], suffix + ".<name>")
    else:  # unions (Optional) and anything else: look inside as is
        for arg in args:
            yield from _submodels(arg, suffix)


def walk_models(root: type[BaseModel] = schema.Scenario) -> list[tuple[type[BaseModel], list[str]]]:
    """Every model reached from `root`, depth-first in field order, with the paths
    (`clients[].pool`) at which it occurs; `root`'s path is ""."""
    paths: dict[type[BaseModel], list[str]] = {}

    def visit(model: type[BaseModel], path: str, stack: frozenset[type]) -> None:
        if model in stack:  # a recursive schema would loop; none exists today
            return
        paths.setdefault(model, [])
        if path not in paths[model]:
            paths[model].append(path)
        for name, field in model.model_fields.items():
            key = yaml_key(model, name)
            here = f"{path}.{key}" if path else key
            for sub, suffix in _submodels(_resolve(model, name, field.annotation)):
                visit(sub, here + suffix, stack | {model})

    visit(root, "", frozenset())
    return list(paths.items())  # dicts keep first-visit order: the depth-first order


# ---------------------------------------------------------------------------------
# Field types in plain words.

# The unit parsers: the unit the model holds and how a file writes it.
_UNIT_WORDS: dict[Callable[..., Any], str] = {
    parse_size: "size (bytes; `64mb`)",
    parse_duration: "duration (s; `500us`, `2w`)",
    parse_rate: "rate (1/s; `25k/s`)",
    parse_bandwidth: "bandwidth (bytes/s; `200mb/s`)",
    parse_cost_us: "CPU cost (µs)",
}

# The schema's own validators whose meaning the annotation alone does not show.
# Referenced by object, so renaming one breaks this import instead of silently
# degrading the reference.
_VALIDATOR_WORDS: dict[Callable[..., Any], str] = {
    schema._duration_above_zero: "duration > 0 (s; `500us`, `2w`)",
    schema._whole_ms: "duration (whole ms; `100ms`, `1s`; a bare number is ms)",
    schema._hz: "integer (clamped to 1..500)",
    schema._quantum: "integer: `8` or `16`",
    schema.parse_save: 'save points: a list of [seconds, changes] pairs, or a string like '
                       '`"3600 1 300 100"`',
    schema.parse_unmodelled: "mapping: Redis directive → value",
    schema.parse_command_name: "command name (any command redsim models, e.g. `GET`)",
    schema._parse_commands: f"mapping: command name → {_anchor(schema.CommandCost)}",
    # The shorthands are the ones _parse_mix documents in its comment.
    schema._parse_mix: f"list of {_anchor(schema.MixEntry)}, or the shorthand "
                       "`{GET: 0.9, SET: 0.1}` / `[GET, SET]`",
    parse_bool: "boolean (`yes`/`no`)",
}


def _validator(field: FieldInfo) -> tuple[Callable[..., Any] | None, dict[str, Any], bool]:
    """The field's before-validator unwrapped: (function, keyword arguments,
    whether an `_optional` wrapper lets None through)."""
    fn: Any = None
    for meta in field.metadata:
        if isinstance(meta, BeforeValidator):
            fn = meta.func
    kwargs: dict[str, Any] = {}
    optional = False
    for _ in range(4):  # partial(…) inside _optional(…): a couple of layers at most
        if isinstance(fn, functools.partial):
            kwargs = {**fn.keywords, **kwargs}
            fn = fn.func
        elif isinstance(fn, types.FunctionType) and fn.__qualname__ == "_optional.<locals>.parse":
            optional = True
            fn = inspect.getclosurevars(fn).nonlocals["fn"]
        else:
            break
    return fn, kwargs, optional


def _range(kind: str, kwargs: dict[str, Any]) -> str:
    """`integer ≥ 1`, `integer 1..64`, `number > 0, ≤ 1` from parse_int/float bounds."""
    low, high = kwargs.get("minimum"), kwargs.get("maximum")
    strict = kwargs.get("exclusive_min", False)
    if low is not None and high is not None:
        return f"{kind} > {low}, ≤ {high}" if strict else f"{kind} {low}..{high}"
    if low is not None:
        return f"{kind} {'>' if strict else '≥'} {low}"
    if high is not None:
        return f"{kind} ≤ {high}"
    return kind


def _words(annotation: Any) -> str:
    """An annotation in plain words: `list of [MixEntry](#mixentry)`, `one of …`."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is type(None):
        return "`null`"
    if _is_model(annotation):
        return _anchor(annotation)
    if origin is typing.Annotated:
        return _words(args[0])
    if origin is Literal:
        return "one of " + ", ".join(_code(str(a)) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_words(a) for a in args)
    if origin in (list, set, frozenset):
        return "list of " + _words(args[0]) if args else "list"
    if origin is tuple:
        return "[" + ", ".join(_words(a) for a in args) + "]"
    if origin is dict:
        return f"mapping: {_words(args[0])} → {_words(args[1])}" if args else "mapping"
    plain = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if annotation in plain:
        return plain[annotation]
    return getattr(annotation, "__name__", str(annotation))


def type_text(model: type[BaseModel], name: str) -> str:
    """The Type column: the underlying Python type, or what the validator reads."""
    field = model.model_fields[name]
    annotation = _resolve(model, name, field.annotation)
    args = typing.get_args(annotation)
    nullable = typing.get_origin(annotation) in (typing.Union, types.UnionType) and (
        type(None) in args
    )
    core = [a for a in args if a is not type(None)] if nullable else [annotation]
    fn, kwargs, _ = _validator(field)
    if fn in _UNIT_WORDS:
        text = _UNIT_WORDS[fn]
    elif fn in _VALIDATOR_WORDS:
        text = _VALIDATOR_WORDS[fn]
    elif fn is parse_int:
        text = _range("integer", kwargs)
    elif fn is parse_float:
        text = _range("number", kwargs)
    elif isinstance(fn, types.FunctionType) and fn.__qualname__ == "_choice.<locals>.parse":
        options = inspect.getclosurevars(fn).nonlocals["options"]
        text = "one of " + ", ".join(_code(o) for o in options)
    else:
        # Normalisers (_parse_clients, _parse_profile, _parse_version) keep the
        # annotated type's meaning: say that.
        text = " or ".join(_words(a) for a in core)
    return f"{text}, or `null`" if nullable else text


# ---------------------------------------------------------------------------------
# Defaults.


def default_text(model: type[BaseModel], name: str) -> str:
    """The Default column: `required`, `—` for None, `(section)`, or the value."""
    field = model.model_fields[name]
    if field.default_factory is not None:
        if _is_model(field.default_factory):
            return "(section)"  # a nested section filled with its own defaults
        value = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if value is None:
        return "—"
    text = _code(_flow(value))
    fn, _, _ = _validator(field)
    # Sizes stay in bytes (what the model holds) with the unit spelling beside them.
    if fn is parse_size and isinstance(value, int) and not isinstance(value, bool):
        text += _size_hint(value)
    elif fn in (parse_duration, schema._duration_above_zero) and isinstance(value, float):
        text += _duration_hint(value)
    return text


# ---------------------------------------------------------------------------------
# scenario-reference.md


def _description(field: FieldInfo) -> str:
    return _cell(field.description or "")


def _class_doc(model: type[BaseModel]) -> str:
    """The model's docstring for its section, without a Google `Attributes:` block
    (distributions list their attributes in a table instead)."""
    parts = []
    for cls in reversed(model.__mro__):
        if cls is model or (cls is schema._Dist and issubclass(model, schema._Dist)):
            doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
            doc = re.split(r"\n\s*Attributes:\s*\n", doc)[0].strip()
            if doc:
                parts.append(doc)
    return "\n\n".join(parts)


def _google_attributes(doc: str) -> dict[str, str]:
    """Parse a Google-style `Attributes:` block: `name: text` (and `a, b: text`)."""
    match = re.search(r"\n\s*Attributes:\s*\n(.*)", inspect.cleandoc(doc), re.S)
    out: dict[str, str] = {}
    if not match:
        return out
    current: list[str] = []
    for line in match.group(1).splitlines():
        entry = re.match(r"\s{4}([\w, ]+):\s*(.*)", line)
        if entry and not line.startswith(" " * 5):
            current = [n.strip() for n in entry.group(1).split(",")]
            for n in current:
                out[n] = entry.group(2)
        elif line.strip() and current:
            for n in current:
                out[n] += " " + line.strip()
    return out


def _row_paths(paths: list[str]) -> list[str]:
    """The paths a section's rows show: a section an instance entry repeats
    (``instances[].server``) shows its top-level path only; the header lists all."""
    top = [p for p in paths if p and not p.startswith("instances[].")]
    return top or [p for p in paths if p] or paths


def _field_table(model: type[BaseModel], paths: list[str]) -> list[str]:
    directive_column = model is schema.Server
    head = ["YAML key"] + (["Redis directive"] if directive_column else [])
    head += ["Path", "Type", "Default", "Description"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, field in model.model_fields.items():
        key = yaml_key(model, name)
        key_text = _code(key)
        others = _other_keys(model, name)
        if others:
            key_text += " (also " + ", ".join(_code(o) for o in others) + ")"
        row = [key_text]
        if directive_column:
            if key in RUNTIME_SETTABLE:  # its Directive names a runtime scalar
                row.append(_code(key) + ", settable during a run (a `config-set` event)")
            elif key in MODELLED_DIRECTIVES or key in KNOWN_REDIS_DIRECTIVES:
                row.append(_code(key))
            else:
                row.append("—")
        row.append("<br>".join(_code(f"{p}.{key}" if p else key) for p in paths))
        row += [type_text(model, name), default_text(model, name), _description(field)]
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return lines


def _dist_tables(model: type[schema._Dist], paths: list[str]) -> list[str]:
    """A distribution's YAML form (scalar or mapping) and its normalised attributes.

    The model's fields (kind, mean, low, high, sigma) are what a scenario holds after
    validation, not keys a file may write; the file's keys come from `_DIST_KEYS`.
    """
    value_words = _UNIT_WORDS.get(model._parse, _words(float))
    kinds = list(schema._DIST_KEYS)
    lines = [
        f"Write a scalar for a fixed value (a {value_words.split(' (')[0]}), or a "
        "mapping with these keys:",
        "",
        "| YAML key | Path | Type | Used by | Description |",
        "|---|---|---|---|---|",
    ]
    keys: dict[str, list[str]] = {}
    for kind, needed in schema._DIST_KEYS.items():
        for key in needed:
            keys.setdefault(key, []).append(kind)
    rows = [("distribution", "one of " + ", ".join(_code(k) for k in kinds),
             "all", "The distribution; default `fixed`.")]
    for key, used in keys.items():
        words = "number ≥ 0" if key == "sigma" else value_words
        what = {
            "value": "The fixed value.",
            "mean": "The mean (for fixed: the value).",
            "min": "Lower bound.",
            "max": "Upper bound.",
            "sigma": "Standard deviation of the log.",
        }.get(key, "")
        rows.append((key, words, ", ".join(_code(k) for k in used), what))
    for key, words, used, what in rows:
        path = "<br>".join(_code(f"{p}.{key}") for p in paths)
        lines.append("| " + " | ".join(_cell(c) for c in (_code(key), path, words, used, what))
                     + " |")
    attributes = _google_attributes(schema._Dist.__doc__ or "")
    lines += [
        "",
        "After validation the model holds these attributes (not keys of a scenario file):",
        "",
        "| Attribute | Type | Default | Description |",
        "|---|---|---|---|",
    ]
    for name, field in model.model_fields.items():
        desc = field.description or attributes.get(name, "")
        row = (_code(name), type_text(model, name), default_text(model, name), desc)
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return lines


def _units_text() -> list[str]:
    """How values with units are written, from the tables in redsim.config.units."""

    def grouped(table: dict[str, Any]) -> list[list[str]]:
        by_value: dict[Any, list[str]] = {}
        for unit, value in table.items():
            by_value.setdefault(value, []).append(unit)
        return list(by_value.values())

    sizes = ", ".join(f"`{u}` = {_power(n)}" for u, n in SIZE_UNITS.items() if u not in ("", "b"))
    durations = []
    for names in grouped(DURATION_UNITS_NS):
        text = "/".join(f"`{n}`" for n in names)
        seconds = DURATION_UNITS_NS[names[0]] / DURATION_UNITS_NS["s"]
        durations.append(text + (f" ({seconds:g} s)" if seconds > 1 else ""))
    rate_units = ", ".join("/".join(f"`{n}`" for n in names) for names in grouped(RATE_PER))
    multipliers = ", ".join(f"`{k}` = {v}" for k, v in RATE_MULTIPLIERS.items() if k)
    true_words = "/".join(f"`{w}`" for w, v in units_module._BOOL_WORDS.items() if v)
    false_words = "/".join(f"`{w}`" for w, v in units_module._BOOL_WORDS.items() if not v)
    return [
        "Values with units are parsed by `redsim/config/units.py` and held in fixed units:",
        "",
        f"- **sizes** (bytes): a number, or a number with a unit written right after it as "
        f"Redis requires, case-insensitive: `b`, {sizes}; decimals are allowed (`1.5gb`);",
        "- **durations** (seconds unless the field says otherwise): a number, or a number "
        f"and a unit: {', '.join(durations)};",
        f"- **rates** (per second): a number, or `N[k|m][/unit]` with {multipliers} before "
        f"the slash and after it one of {rate_units} (`25k/s`, `90000/min`);",
        "- **bandwidths** (bytes/s): a number, or a size followed by `/s` (`200mb/s`);",
        "- **CPU costs** (µs): a bare number is µs; duration units work too (`500ns`, `1ms`);",
        f"- **booleans**: {true_words} or {false_words}.",
        "",
        "Integers and plain numbers may use `_` between digits (`10_000`). Negative "
        "sizes, durations and rates are errors.",
    ]


def scenario_reference() -> str:
    """docs/scenario-reference.md: every scenario key, from the schema's models."""
    models = walk_models()
    lines = [
        "# Scenario file reference",
        "",
        f"Generated by `{REGENERATE}` from `redsim/config/schema/`; do not edit by hand. "
        "Each section is one model of the schema, one row per key; the path shows where "
        "the key sits in a scenario file (`[]` is any item of a list, `<name>` any key of "
        "a mapping). Keys are hyphenated like Redis directives; defaults are Redis 7.2's. "
        "The default column shows what the model holds: sizes in bytes, durations in "
        "seconds, CPU costs in µs; `—` means unset (`null`), `(section)` a nested section "
        "with its own defaults.",
        "",
        *_units_text(),
        "",
        "Sections: " + " · ".join(_anchor(m) for m, _ in models) + ".",
    ]
    for model, paths in models:
        lines += ["", f"## {model.__name__}", ""]
        if paths == [""]:
            lines.append("The top level of a scenario file.")
        else:
            where = ", ".join(_code(p) for p in paths)
            lines.append(("Paths: " if len(paths) > 1 else "Path: ") + where + ".")
        doc = _class_doc(model)
        if doc:
            lines += ["", doc]
        if model is schema.Server:
            others = len(KNOWN_REDIS_DIRECTIVES - MODELLED_DIRECTIVES)
            lines += ["", f"The {others} other directives Redis 6.2/7.2 knows are accepted "
                          "under `server:` and kept in `unmodelled` as redis.conf text; a "
                          "module config (`module.name`) is accepted too."]
        lines.append("")
        if issubclass(model, schema._Dist):
            lines += _dist_tables(model, _row_paths(paths))
        else:
            lines += _field_table(model, _row_paths(paths))
    return "\n".join(lines) + "\n"


