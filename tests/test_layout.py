"""The kernel's state is declared by its owners and laid out by state.py
(redsim/model/layout.py): indices dense and unique, one layout whatever is
imported first, nothing declared that no code reads, and a bad declaration
stopped with a message naming the owner and the field."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from redsim.model import layout as L
from redsim.model import state as S

ROOT = Path(__file__).resolve().parent.parent


def _parts() -> dict[str, bool]:
    return {pre: rows for pre, _name, rows, _doc in S.PARTS}


def test_indices_are_dense_and_unique():
    for where, n in (("F", S.N_F), ("I", S.N_I), ("wf", S.N_WF), ("wi", S.N_WI)):
        got = sorted(S.LAYOUT.index[f.name] for f in S.LAYOUT.fields if f.where == where)
        assert got == list(range(n)), where


def test_cpu_series_come_first_and_are_the_cpu_columns():
    from redsim.result import CPU_COLUMNS

    cpu = [f for f in S.LAYOUT.fields if f.kind == "cpu"]
    assert sorted(S.LAYOUT.index[f.name] for f in cpu) == list(range(S.N_CPU))
    # The columns users read, in the order the results have always shown them;
    # a new activity comes last.
    assert list(CPU_COLUMNS) == ["cpu_commands", "cpu_read", "cpu_write", "cpu_iteration",
                                 "cpu_cron", "cpu_connections", "cpu_eviction", "cpu_expire",
                                 "cpu_aof", "cpu_fsync", "cpu_fork", "cpu_repl", "cpu_cow",
                                 "cpu_defrag"]
    assert list(CPU_COLUMNS.values()) == list(range(S.N_CPU))


_PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
from redsim.model import state as S
print(json.dumps([S.LAYOUT.index, list(S.World._fields), sorted(S.FLOAT_FIELDS)]))
"""


def test_one_layout_whatever_is_imported_first():
    # The compiled kernel is cached per source hash, so the indices compiled into
    # it must follow from the sources alone, not from import order.
    def layout(*first: str):
        out = subprocess.run([sys.executable, "-c", _PROBE, *first], cwd=ROOT, check=True,
                             capture_output=True, text=True,
                             env={"NUMBA_DISABLE_JIT": "1", "PATH": "/usr/bin:/bin",
                                  "PYTHONPATH": str(ROOT)})
        return json.loads(out.stdout)

    plain = layout()
    assert layout("redsim.observe.bins") == plain
    assert layout("redsim.model.fork", "redsim.model.clients") == plain


def _reads(tree: ast.AST) -> set[str]:
    """Upper-case names a module reads: every use except as the index of an
    assignment's (or augmented assignment's) target, ``I[X] = ...``, ``I[X] += 1``;
    and names passed as a string to a call (``metrics.counter("STAT_HITS")``
    looks the scalar up in the layout by name)."""
    written: set[int] = set()
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AugAssign) else []
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Subscript):
                    written.update(id(n) for n in ast.walk(sub.slice))
    names = set()
    for node in ast.walk(tree):
        if id(node) in written:
            continue
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Call):
            names.update(a.value for a in node.args
                         if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return names


def test_every_declared_scalar_is_read_and_every_series_used():
    # A declared number nobody reads is dead state: the counted tuples carried
    # nine (an unused I[FREE_N], MAXCLIENTS set and never checked, counters
    # incremented and never reported). Writing it (I[X] += 1) is not reading it.
    read: set[str] = set()
    for p in (ROOT / "redsim").rglob("*.py"):
        read |= _reads(ast.parse(p.read_text(encoding="utf-8")))
    unread = [f.name for f in S.LAYOUT.fields if f.where in ("F", "I") and f.name not in read]
    assert unread == []
    unused = [f.name for f in S.LAYOUT.fields if f.where in ("wf", "wi") and f.name not in read]
    assert unused == []


def test_every_field_has_a_unit_and_a_doc():
    assert not [f for f in S.LAYOUT.fields if not f.unit.strip() or not f.doc.strip()
                or f.doc.startswith("TODO")]


def _field(owner="model.x", where="F", name="X_NEW", dtype="f8", unit="s", kind="state",
           doc="a new number"):
    return L.Field(owner, where, name, dtype, unit, kind, doc)


def test_a_new_declaration_reaches_the_layout():
    # What adding a mechanism's state costs: one line in its FIELDS block.
    new = (_field(name="X_NEW"), _field(where="cn", name="x_new", dtype="i8", unit="B"),
           _field(where="wf", name="W_CPU_X", kind="cpu", doc="time in x"),
           _field(where="wi", name="WI_X", dtype="i8", unit="-", kind="count", doc="x events"))
    lay = L.assemble(S.LAYOUT.fields + new, _parts())
    assert lay.index["X_NEW"] == S.N_F
    assert lay.index["W_CPU_X"] == S.N_CPU  # after the other cpu rows, before the rest
    assert lay.sizes["cpu"] == S.N_CPU + 1
    assert lay.index["W_CPU_COMMANDS"] == 0 and lay.index["W_LAT_SUM"] == S.W_LAT_SUM + 1
    assert lay.index["WI_X"] == S.N_WI
    assert lay.parts["cn"][-1].name == "x_new"


@pytest.mark.parametrize("bad, message", [
    (_field(owner="model.other", name="T"), "model.other: F 'T' is declared twice (also by "
                                            "model.main_thread)"),
    (_field(where="I", name="X_NEW", dtype="f8"), "dtype 'f8', expected 'i8'"),
    (_field(where="zz"), "unknown place 'zz'"),
    (_field(where="wf", name="W_X", kind="cpu"), "a cpu series is a float series (wf) named"),
    (_field(where="gp", name="x", dtype="i8[]"), "'[]' only applies in a part stored by rows"),
    (_field(kind="sometimes"), "kind 'sometimes', expected one of"),
    (_field(doc=" "), "give a unit ('-' for none) and a one-line doc"),
    (_field(where="wi", name="X_COUNT", dtype="i8", kind="count"), "must start with 'WI_'"),
    (_field(name="x_new"), "UPPER_CASE"),
])
def test_a_bad_declaration_names_its_owner_and_field(bad, message):
    with pytest.raises(RuntimeError) as e:
        L.assemble(S.LAYOUT.fields + (bad,), _parts())
    assert message in str(e.value)
    assert bad.owner in str(e.value)


def test_read_fields_reads_literal_blocks_only():
    text = 'x = 1\nFIELDS = (\n    ("F", "X_A", "f8", "s", "state", "a" "b"),\n)\n'
    assert L.read_fields("model.x", text) == (_field(name="X_A", doc="ab"),)
    with pytest.raises(RuntimeError, match="redsim/model/x.py declares no kernel state"):
        L.read_fields("model.x", "x = 1\n")
    with pytest.raises(RuntimeError, match="model.x.FIELDS is not literal data"):
        L.read_fields("model.x", 'FIELDS = (\n    ("F", NAME, "f8", "s", "state", "d"),\n)\n')
    with pytest.raises(RuntimeError, match=r"model.x.FIELDS\[0\]: expected"):
        L.read_fields("model.x", 'FIELDS = (\n    ("F", "X", "f8"),\n)\n')
