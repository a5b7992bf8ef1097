"""The fast lane, ``pytest -m "not slow"``, still reaches every module of redsim.

A static scan of the test files, without collecting them (collection imports
every test module and takes longer than the check): a module of ``redsim/``
is reached when a test file in the lane

- imports it (``import redsim.x``, ``from redsim.x import y``, ``from redsim
  import x``),
- imports a redsim module that imports it at module level, at any depth
  (importing the test file loads it: Python runs a module's top-level imports),
- or runs it as ``[..., "-m", "redsim.x", ...]`` (its ``__main__``).

A file is in the lane unless its ``pytestmark`` holds ``slow`` or it lies in one
of ``tests/conftest.py``'s ``SLOW_FOLDERS`` (marked there at collection); an
import inside a function counts unless that function is marked ``slow``. Imports inside
redsim's own functions are not followed: ``import redsim`` would otherwise
reach everything through ``redsim.__getattr__``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import SLOW_FOLDERS

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package) for every module under redsim/."""
    out = {}
    for path in sorted((ROOT / "redsim").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if package else parts)] = (path, package)
    return out


MODULES = _modules()


def _with_parents(name: str) -> set[str]:
    """``name`` and the packages importing it loads first, as far as they exist."""
    parts = name.split(".")
    return {n for n in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if n in MODULES}


def _loads(node: ast.Import | ast.ImportFrom, here: str = "", package: bool = False) -> set[str]:
    """The redsim modules one import statement loads (``here``: the importing
    module's name, to resolve relative imports)."""
    if isinstance(node, ast.Import):
        names = {a.name for a in node.names}
    else:
        base = node.module or ""
        if node.level:
            pkg = here.split(".") if package else here.split(".")[:-1]
            pkg = pkg[: len(pkg) - (node.level - 1)]
            base = ".".join([*pkg, base] if base else pkg)
        # `from p import x`: x is a submodule, or a name defined in p.
        names = {base} | {f"{base}.{a.name}" for a in node.names}
    return set().union(*(_with_parents(n) for n in names))


def _top_level(body: list[ast.stmt], here: str, package: bool) -> set[str]:
    out: set[str] = set()
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= _loads(node, here, package)
        elif isinstance(node, (ast.If, ast.Try)):
            blocks = [node.body, node.orelse]
            if isinstance(node, ast.Try):
                blocks += [node.finalbody, *(h.body for h in node.handlers)]
            for block in blocks:
                out |= _top_level(block, here, package)
    return out


GRAPH = {name: _top_level(ast.parse(path.read_text()).body, name, package)
         for name, (path, package) in MODULES.items()}


def _closure(start: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += GRAPH[name]
    return seen


def _marks(node: ast.AST) -> set[str]:
    """Names of ``pytest.mark.<name>`` in a decorator list or a ``pytestmark`` value."""
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Attribute) and n.value.attr == "mark"}


def _file_marks(tree: ast.Module) -> set[str]:
    return set().union(*(_marks(n.value) for n in tree.body if isinstance(n, ast.Assign)
                         and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)))


def _fast_imports(tree: ast.Module) -> set[str]:
    """redsim modules a test file in the fast lane loads: imports and ``-m`` runs
    outside functions marked slow."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if "slow" in set().union(*map(_marks, node.decorator_list)):
                return
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
            out.update(_loads(node))
        if isinstance(node, ast.List):
            words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            for flag, name in zip(words, words[1:], strict=False):
                if flag == "-m" and isinstance(name, str):
                    out.update(_with_parents(name) | _with_parents(f"{name}.__main__"))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def _test_files() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text()) for p in sorted(TESTS.rglob("*.py"))}


def _in_slow_folder(path: Path) -> bool:
    parts = path.relative_to(TESTS).parts
    return len(parts) > 1 and parts[0] in SLOW_FOLDERS


def test_every_redsim_module_is_reached_by_the_fast_lane() -> None:
    reached: set[str] = set()
    for path, tree in _test_files().items():
        if "slow" not in _file_marks(tree) and not _in_slow_folder(path):
            reached |= _closure(_fast_imports(tree))
    missing = sorted(set(MODULES) - reached)
    assert not missing, ("no test outside the slow lane imports these modules; "
                         f"add a quick test that does: {missing}")


def test_live_tests_are_in_the_slow_lane() -> None:
    # A live test measures a real redis-server for minutes and runs alone.
    for path, tree in _test_files().items():
        marks = _file_marks(tree)
        if "live" in marks:
            assert "slow" in marks, path.name
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                fn = set().union(*map(_marks, node.decorator_list))
                assert "live" not in fn or "slow" in fn | marks, f"{path.name}::{node.name}"


def test_the_scan_sees_what_it_must() -> None:
    # The scan itself, on cases written here: a top-level import, a slow
    # function's import (not counted), a `-m` run and a module-level chain.
    tree = ast.parse(
        "import pytest\nfrom redsim.config import units\n"
        "@pytest.mark.slow\ndef test_a():\n    import redsim.sweep.store\n"
        "def test_b():\n    run(['python', '-m', 'redsim.docs'])\n")
    found = _fast_imports(tree)
    assert {"redsim", "redsim.config", "redsim.config.units", "redsim.docs",
            "redsim.docs.__main__"} <= found
    assert "redsim.sweep.store" not in found
    assert _file_marks(ast.parse("pytestmark = [pytest.mark.live, pytest.mark.slow]\n")) == {
        "live", "slow"}
    # redsim.simulation imports the event loop at module level, which imports the heap
    # through the event list: reached without a test naming them.
    assert {"redsim.model.event_loop", "redsim.model.heap"} <= _closure({"redsim.simulation"})
