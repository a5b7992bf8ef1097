"""Kernel state declared by the mechanisms that own it, laid out in one place.

No Redis source: how the kernel's arrays are described and indexed.

Each mechanism module declares the kernel state it owns, next to its code, as
a literal tuple ``FIELDS`` of entries ``(where, name, dtype, unit, kind, doc)``:

- ``where``: ``"F"`` or ``"I"`` (a float or integer scalar, addressed
  ``w.F[NAME]`` / ``w.I[NAME]``); a part's prefix (``"cn"``, ``"ks"``, ... in
  ``state.PARTS``: one value per entity, read ``w.cn_name[c]``); or ``"wf"`` /
  ``"wi"`` (a float or integer series recorded per sample window, a row of
  ``rc_wf`` / ``rc_wi`` addressed ``W_NAME`` / ``WI_NAME``).
- ``dtype``: ``"f8"`` or ``"i8"``. In a part stored row by row, ``"f8[]"`` /
  ``"i8[]"`` marks an array of its own (a list or table segmented by entity)
  rather than a column of the row table.
- ``unit``: ``"s"``, ``"B"``, ``"s/B"``, ``"-"`` (a count, an id, a flag), ...
- ``kind``: for scalars and part fields, ``"config"`` (set from the scenario
  before the run and not changed by it), ``"state"`` (changes as the run goes),
  ``"counter"`` (a statistic that only grows), ``"size"`` (an array's length or
  capacity), ``"record"`` (a table the observers fill); for series, ``"cpu"``
  (main-thread time spent on one activity: these rows come first, and
  ``result.py`` names them ``cpu_*``), ``"count"`` (events or an amount added
  per window), ``"time"`` (a level integrated over the window, e.g. busy
  connections × s), ``"gauge"`` (a value at the window's end), ``"stat"`` (a
  figure computed per window: a maximum, a percentile).
- ``doc``: one line saying what it is (and the Redis variable it stands for).

Why literal data read from the source, not registered on import: numba
compiles the indices in as constants, read as module globals of ``state`` when
a kernel function is first compiled, and every kernel module imports them from
``state``. So ``state`` must know every index before any mechanism module is
imported, and the layout must not depend on which module happens to be
imported first (the compiled kernel is cached per source hash). ``state`` reads
the ``FIELDS`` blocks from the owners' files in the fixed order of
``state.OWNERS`` without importing them, which gives one layout per source.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

PACKAGE = Path(__file__).resolve().parent.parent
"""The ``redsim`` package directory: owners are named relative to it (``model.db``)."""

SCALARS = ("F", "I")
SERIES = ("wf", "wi")
DTYPES = ("f8", "i8", "f8[]", "i8[]")
FIELD_KINDS = ("config", "state", "counter", "size", "record")
SERIES_KINDS = ("cpu", "count", "time", "gauge", "stat")

_BLOCK = re.compile(r"^FIELDS = (\(\n.*?^\))$", re.M | re.S)


class Field(NamedTuple):
    """One declared piece of kernel state (see the module docstring)."""

    owner: str  # the declaring module, relative to redsim (``model.eviction``)
    where: str
    name: str
    dtype: str
    unit: str
    kind: str
    doc: str

    @property
    def is_float(self) -> bool:
        return self.dtype.startswith("f8")

    @property
    def own_array(self) -> bool:
        """True for a part's field kept as an array of its own (``"i8[]"``)."""
        return self.dtype.endswith("[]")


def read_fields(owner: str, text: str | None = None) -> tuple[Field, ...]:
    """The ``FIELDS`` declared by module ``owner`` (``"model.db"``), read from its
    source (or from ``text``) without importing it."""
    if text is None:
        text = (PACKAGE / (owner.replace(".", "/") + ".py")).read_text(encoding="utf-8")
    m = _BLOCK.search(text)
    if m is None:
        raise RuntimeError(f"redsim/{owner.replace('.', '/')}.py declares no kernel state: "
                           "expected a top-level 'FIELDS = (' block closed by ')' on a line "
                           "of its own")
    try:
        entries = ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError) as e:
        raise RuntimeError(f"{owner}.FIELDS is not literal data: {e}") from None
    out = []
    for i, entry in enumerate(entries):
        if not (isinstance(entry, tuple) and len(entry) == 6
                and all(isinstance(x, str) for x in entry)):
            raise RuntimeError(f"{owner}.FIELDS[{i}]: expected (where, name, dtype, unit, "
                               f"kind, doc), six strings; found {entry!r}")
        out.append(Field(owner, *entry))
    return tuple(out)


class Layout(NamedTuple):
    """What ``state`` builds from the declarations."""

    fields: tuple[Field, ...]  # every declaration, in layout order
    index: dict[str, int]  # scalar and series names -> their index
    sizes: dict[str, int]  # "F", "I", "wf", "wi" -> how many; "cpu" -> cpu series
    parts: dict[str, tuple[Field, ...]]  # part prefix -> its fields, in order


def assemble(fields: Iterable[Field], parts: dict[str, bool]) -> Layout:
    """Check the declarations and give every scalar and series its index.

    ``parts`` maps each part's prefix to whether it is stored row by row.
    Scalars are numbered in declaration order; series too, except that the
    ``cpu`` series come first (``observe.bins`` and ``result`` read the first
    ``N_CPU`` rows of ``rc_wf`` as the main thread's activities).
    """
    fields = tuple(fields)
    seen: dict[tuple[str, str], str] = {}
    for f in fields:
        where = f"{f.owner}: {f.where} {f.name!r}"
        key = ("scalar" if f.where in SCALARS + SERIES else f.where, f.name)
        if key in seen:
            raise RuntimeError(f"{where} is declared twice (also by {seen[key]})")
        seen[key] = f.owner
        if f.where not in SCALARS + SERIES and f.where not in parts:
            raise RuntimeError(f"{where}: unknown place {f.where!r}; expected F, I, wf, wi "
                               f"or a part: {', '.join(parts)}")
        if f.dtype not in DTYPES:
            raise RuntimeError(f"{where}: dtype {f.dtype!r}, expected one of {DTYPES}")
        want = {"F": "f8", "I": "i8", "wf": "f8", "wi": "i8"}.get(f.where)
        if want and f.dtype != want:
            raise RuntimeError(f"{where}: dtype {f.dtype!r}, expected {want!r}")
        if f.own_array and not parts.get(f.where):
            raise RuntimeError(f"{where}: '[]' only applies in a part stored by rows")
        kinds = SERIES_KINDS if f.where in SERIES else FIELD_KINDS
        if f.kind not in kinds:
            raise RuntimeError(f"{where}: kind {f.kind!r}, expected one of {kinds}")
        if f.kind == "cpu" and not (f.where == "wf" and f.name.startswith("W_CPU_")):
            raise RuntimeError(f"{where}: a cpu series is a float series (wf) named W_CPU_*")
        if f.where in SCALARS + SERIES and not re.fullmatch(r"[A-Z][A-Z0-9_]*", f.name):
            raise RuntimeError(f"{where}: a scalar's or series' name is UPPER_CASE")
        if f.where not in SCALARS + SERIES and not re.fullmatch(r"[a-z][a-z0-9_]*", f.name):
            raise RuntimeError(f"{where}: a part's field name is lower_case")
        if not f.unit.strip() or not f.doc.strip():
            raise RuntimeError(f"{where}: give a unit ('-' for none) and a one-line doc")
    index: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for where in SCALARS + SERIES:
        mine = [f for f in fields if f.where == where]
        if where == "wf":
            mine = [f for f in mine if f.kind == "cpu"] + [f for f in mine if f.kind != "cpu"]
            sizes["cpu"] = sum(f.kind == "cpu" for f in mine)
        prefix = {"wf": "W_", "wi": "WI_"}.get(where, "")
        for i, f in enumerate(mine):
            if not f.name.startswith(prefix):
                raise RuntimeError(f"{f.owner}: series {f.name!r} must start with {prefix!r}")
            index[f.name] = i
        sizes[where] = len(mine)
    clash = sorted(set(index) & {f"N_{w}" for w in ("F", "I", "WF", "WI", "CPU")})
    if clash:
        raise RuntimeError(f"{clash} are the layout's own names")
    by_part = {pre: tuple(f for f in fields if f.where == pre) for pre in parts}
    for pre, mine in by_part.items():
        if not mine:
            raise RuntimeError(f"part {pre!r}: no mechanism declares a field")
    order = [f for w in SCALARS for f in fields if f.where == w]
    order += [f for pre in parts for f in by_part[pre]]
    order += sorted((f for f in fields if f.where in SERIES),
                    key=lambda f: (f.where, index[f.name]))
    return Layout(tuple(order), index, sizes, by_part)
