"""The import graph of ``redsim/``: no circles, and the kernel at the bottom.

Every ``import`` and ``from ... import`` in the package is an edge, those inside
functions included (an import deferred into a function still ties the two
modules together: the later one cannot be understood, tested or moved without
the earlier). The graph is read from the sources with ``ast``, so the test sees
what a reader sees and needs no import.

ARCHITECTURE.md ("Imports") names the one edge that goes up and says why;
``UPWARD`` here is that list, and an edge it lists that no longer exists fails
too, so the list cannot outlive its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "redsim"

UPWARD = {
    # Compiling the kernel means running a small scenario through a driver
    # (driver.warm_up); in a process of its own normally, in this one only when
    # the cache cannot be written or a bench profiles the compile.
    ("redsim.kernel_compile", "redsim.driver"),
}

KERNEL = ("redsim.model", "redsim.observe")
"""The compiled simulation and its recorder: they import each other and the
leaves below them, never the layers that build, drive or read them."""

KERNEL_MAY_IMPORT = ("redsim.fileio",)
"""Leaves outside the kernel's packages it may use: the one opener of user files
(``model/trace.py`` reads command traces through it)."""


def _modules(root: Path) -> dict[str, Path]:
    out = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the redsim modules it imports (anywhere in its source)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for mod, path in modules.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                # `from pkg import sub` imports the submodule when there is one.
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                         for a in node.names]
            else:
                continue
            out |= {r for n in names if n.startswith("redsim")
                    if (r := _resolve(n, modules)) is not None}
        out.discard(mod)
        graph[mod] = out
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _without_upward(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: {t for t in out if (m, t) not in UPWARD} for m, out in graph.items()}


def test_the_scan_sees_circles_and_deferred_imports(tmp_path):
    # A hand-made package: a imports b at module level, b imports a inside a
    # function, c imports nothing of it. One circle, {a, b}.
    pkg = tmp_path / "redsim"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("from redsim.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from . import a\n    return a\n")
    (pkg / "c.py").write_text("import os\n")
    graph = import_graph(pkg)
    assert graph["redsim.sub.a"] == {"redsim.sub.b"}
    assert graph["redsim.sub.b"] == {"redsim.sub.a"}
    assert circles(graph) == [["redsim.sub.a", "redsim.sub.b"]]


def test_no_import_circles():
    found = circles(_without_upward(import_graph()))
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_named_upward_imports_exist():
    graph = import_graph()
    gone = sorted((m, t) for m, t in UPWARD if t not in graph.get(m, set()))
    assert not gone, f"UPWARD (and ARCHITECTURE.md) name edges that are gone: {gone}"


def test_the_kernel_imports_nothing_above_it():
    bad = sorted((m, t) for m, out in import_graph().items() if m.startswith(KERNEL)
                 for t in out if not t.startswith(KERNEL) and t not in KERNEL_MAY_IMPORT)
    assert not bad, "the kernel imports from above it:\n" + "\n".join(
        f"{m} -> {t}" for m, t in bad)
