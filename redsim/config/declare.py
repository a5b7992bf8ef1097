"""What a scenario field declares about itself, and the lists made from it.

No Redis source: the schema's bookkeeping. A Redis directive is declared once,
on its ``Server`` field in ``schema/server.py``: its name is the field's name
hyphenated (old names stay in ``directives.DIRECTIVE_ALIASES``), its default
and unit are the field's default and attribute docstring, and a ``Directive``
in the field's ``Annotated[...]`` says the rest::

    hz: Annotated[int, _v(_hz), Directive("model/event_loop.py", keyspace=False)] = 10

Pydantic keeps metadata it does not know in ``FieldInfo.metadata``; the lists
other code used to keep by hand are read from there: the modelled directives
(``schema.DIRECTIVES``, ``MODELLED_DIRECTIVES``), what a ``config-set`` event
may change and which kernel scalar it writes (``schema.RUNTIME_SETTABLE``),
and the scenario fields runs may differ in while sharing a preloaded keyspace
(``loader.NOT_KEYSPACE``, from ``Directive.keyspace`` and ``NotKeyspace``).

Nothing here imports the schema or the model (``tests/test_layers.py``).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo


@dataclass(frozen=True)
class Directive:
    """A modelled Redis directive: the declaration every ``Server`` field but
    ``unmodelled`` carries.

    Attributes:
        reads: the module that models it, from the package's root
            (``"model/eviction.py"``): its ``configure`` reads the field, or its
            docstring says why the value has nothing to act on.
        runtime: the kernel's ``I`` scalar a ``CONFIG SET`` during the run writes
            (``"DF_ENABLED"``), so a ``config-set`` event may change it; None: not
            settable during a run.
        keyspace: False when the value does not shape the keyspace at time 0, so
            runs that differ only in it may start from one preloaded keyspace
            (``model/keyspace_image.py``). True, the default, is the safe side: a
            field wrongly left True only shares less.
    """

    reads: str
    runtime: str | None = None
    keyspace: bool = True


@dataclass(frozen=True)
class NotKeyspace:
    """A scenario field (not a directive) whose value does not shape the keyspace
    at time 0 (``Directive.keyspace=False`` for the rest). On a section's or a
    list's field it covers everything under it."""


def declaration(field: FieldInfo) -> Directive | None:
    """The field's ``Directive``, if it carries one."""
    found = [m for m in field.metadata if isinstance(m, Directive)]
    if len(found) > 1:
        raise TypeError(f"a field carries {len(found)} Directive declarations: {found}")
    return found[0] if found else None


def directives(model: type[BaseModel], exempt: tuple[str, ...] = ()) -> dict[str, Directive]:
    """Each field's Redis name (hyphenated) and declaration, in field order.
    Every field but those in ``exempt`` must carry a ``Directive``."""
    out: dict[str, Directive] = {}
    for name, field in model.model_fields.items():
        found = declaration(field)
        if found is None and name not in exempt:
            raise TypeError(f"{model.__name__}.{name} declares no Directive: add "
                            f"Directive(\"model/<module>.py\", ...) to its Annotated[...] "
                            "(redsim/config/declare.py says what it holds)")
        if found is not None:
            out[name.replace("_", "-")] = found
    return out


def _shapes_keyspace(field: FieldInfo) -> bool:
    for meta in field.metadata:
        if isinstance(meta, NotKeyspace) or (isinstance(meta, Directive) and not meta.keyspace):
            return False
    return True


def _key(model: type[BaseModel], name: str) -> str:
    # The key resolved_dict (model_dump by_alias) writes: the serialization
    # alias, else the alias, else what the alias generator makes of the name.
    field = model.model_fields[name]
    if field.serialization_alias or field.alias:
        return field.serialization_alias or field.alias or name
    generator = model.model_config.get("alias_generator")
    return generator(name) if callable(generator) else name


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def _sections(annotation: Any) -> Iterator[tuple[type[BaseModel], tuple[str, ...]]]:
    """The models a field holds, each with the path step that reaches it: a
    model (``()``), an optional one (``()``: its None is dropped as nothing), a
    list of them (``("*",)``). Other forms (``instances``: a count or a list)
    are not walked: a scenario with a list of instances runs on the host's
    driver, which builds each instance's keyspace."""
    if _is_model(annotation):
        yield annotation, ()
        return
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        yield from _sections(args[0])
    elif origin is list and args and _is_model(args[0]):
        yield args[0], ("*",)
    elif origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        yield from _sections(next(a for a in args if a is not type(None)))


def not_keyspace(model: type[BaseModel]) -> tuple[tuple[str, ...], ...]:
    """The paths (keys of ``resolved_dict``; ``*``: every list entry) of the
    fields under ``model`` declared not to shape the keyspace, depth-first in
    field order. A declared section is one path; the fields of the others are
    looked at one by one."""
    out: list[tuple[str, ...]] = []

    def visit(m: type[BaseModel], path: tuple[str, ...]) -> None:
        hints: dict[str, Any] | None = None
        for name, field in m.model_fields.items():
            here = (*path, _key(m, name))
            if not _shapes_keyspace(field):
                out.append(here)
                continue
            annotation = field.annotation
            if isinstance(annotation, (str, typing.ForwardRef)):
                # A field naming a class defined further down the schema keeps
                # a forward reference until pydantic rebuilds the model.
                hints = hints or typing.get_type_hints(m)
                annotation = hints[name]
            for sub, step in _sections(annotation):
                visit(sub, here + step)

    visit(model, ())
    return tuple(out)
