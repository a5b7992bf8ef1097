"""docs/model-map.md: what each kernel module follows in the Redis source.

The kernel is ``redsim/model`` and the recorder it writes into, ``redsim/observe``.
Each module's docstrings say which Redis functions it follows, as
``src/file.c:function``; a module that models no Redis code says so in a
paragraph starting "No Redis source:", which the page shows in place of a list.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from redsim.docs._common import MODEL_DIR, PACKAGE_DIR, REGENERATE, _code

# ---------------------------------------------------------------------------------
# model-map.md

# A Redis source file, optionally with a function: `src/evict.c:performEvictions`,
# `server.c:redisFork`, `ae.c`. The name must start with a letter so numbers and
# attribute accesses (`w.cn_req`) are not taken for files.
_SOURCE_RE = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[A-Za-z][\w-]*\.[ch])(?::(\w+))?(?!\w)")
# A section of the project's Redis reference: `§5.1`, `§5.2–5.4`.
_SECTION_RE = re.compile(r"§\s?(\d+(?:\.\d+)*(?:\s?[–-]\s?\d+(?:\.\d+)*)?)")
# A declared deviation: "Deviation: …", "Deviations, each small …", "Sampling
# deviation: …"; not a "standard deviation" in a parameter's description.
_DEVIATION_RE = re.compile(r"\bDeviations?\b|\bdeviations?\s*:")
# A module's statement that it models no Redis code (the client side, the host's
# disk, the simulator's own machinery): a module-docstring paragraph starting so.
NO_SOURCE = "No Redis source:"
# The packages whose modules the page lists, in order: the kernel, then the
# recorder it writes into.
KERNEL_DIRS = (MODEL_DIR, PACKAGE_DIR / "observe")


def _docstrings(tree: ast.Module) -> list[tuple[str | None, str]]:
    """(owner, docstring) for the module (owner None) and every class and function,
    in source order; owners are dotted (`Class.method`)."""
    out: list[tuple[str | None, str]] = []
    doc = ast.get_docstring(tree)
    if doc:
        out.append((None, doc))

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                text = ast.get_docstring(child)
                if text:
                    out.append((name, text))
                visit(child, name + ".")

    visit(tree, "")
    return out


def _paragraphs(text: str) -> list[str]:
    return [p.strip("\n") for p in re.split(r"\n[ \t]*\n", text) if p.strip()]


def _sources(docs: list[str]) -> dict[str, list[str]]:
    """Redis files named in the docstrings → the functions named with them."""
    found: dict[str, set[str]] = {}
    for text in docs:
        for match in _SOURCE_RE.finditer(text):
            found.setdefault(match.group(1), set())
            if match.group(2):
                found[match.group(1)].add(match.group(2))
    # `ae.c` beside `src/ae.c` is the same file: fold the bare name into the path.
    for bare in [f for f in found if "/" not in f]:
        full = sorted(f for f in found if f.endswith("/" + bare))
        if full:
            found[full[0]] |= found.pop(bare)
    return {f: sorted(found[f]) for f in sorted(found)}


def _section_key(section: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", section))


def _bullet(text: str) -> list[str]:
    """A docstring paragraph as one Markdown list item (its own lists nest inside)."""
    lines = text.splitlines()
    return ["- " + lines[0]] + [("  " + line) if line.strip() else "" for line in lines[1:]]


def _source_list(sources: dict[str, list[str]]) -> str:
    """`src/evict.c` (`performEvictions`, …), `src/server.c`: files, then functions."""
    return ", ".join(_code(f) + (" (" + ", ".join(_code(fn) for fn in fns) + ")" if fns else "")
                     for f, fns in sources.items())


def module_entry(path: Path) -> list[str]:
    """The model-map section of one module, from its docstrings (read, not imported:
    importing the kernel modules would compile numba code).

    Its Redis source is the list of the files and functions its docstrings name;
    a module-docstring paragraph starting "No Redis source:" is shown instead,
    followed by any Redis code it still refers to (the MONITOR format of a trace
    file, say). A module with neither reads "none named", which a test forbids.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docs = _docstrings(tree)
    module_doc = docs[0][1] if docs and docs[0][0] is None else ""
    lines = ["", f"## redsim/{path.parent.name}/{path.name}", ""]
    paragraphs = _paragraphs(module_doc)
    lines.append(paragraphs[0] if paragraphs else "(No module docstring.)")
    texts = [text for _, text in docs]
    sources = _sources(texts)
    no_source = [p for p in paragraphs if p.startswith(NO_SOURCE)]
    lines.append("")
    if no_source:
        lines.append(" ".join(no_source[0].split()))
        if sources:
            lines += ["", "Redis code it refers to: " + _source_list(sources) + "."]
    elif sources:
        lines.append("Redis source: " + _source_list(sources) + ".")
    else:
        lines.append("Redis source: none named in its docstrings.")
    sections = sorted({" ".join(m.group(1).split()) for t in texts
                       for m in _SECTION_RE.finditer(t)}, key=_section_key)
    if sections:
        lines += ["", "Reference sections cited: " + ", ".join(f"§{s}" for s in sections) + "."]
    deviations = [(owner, p) for owner, text in docs for p in _paragraphs(text)
                  if _DEVIATION_RE.search(p)]
    if deviations:
        lines += ["", "Known deviations:", ""]
        for owner, paragraph in deviations:
            if owner:  # say where a deviation outside the module docstring is declared
                paragraph = f"In `{owner}`: {paragraph}"
            lines += _bullet(paragraph)
    return lines


def model_map() -> str:
    """docs/model-map.md: each kernel module (``redsim/model``, then
    ``redsim/observe``) and the Redis source it follows."""
    lines = [
        "# Model map: redsim/model and the Redis source",
        "",
        "This page maps each module of `redsim/model` (and of `redsim/observe`, the "
        "recorder the kernel writes into) to the Redis source it follows: the "
        "first paragraph of its docstring, the Redis files (and functions) its docstrings "
        "name — or, for a module that models no Redis code, what it is instead — the "
        "sections of the project's Redis reference they cite, and the "
        f"deviations from Redis they declare. It is generated from the docstrings by "
        f"`{REGENERATE}`; do not edit by hand, edit the docstrings. The authoritative "
        "description of Redis behaviour is the project's Redis reference. "
        "ARCHITECTURE.md tells how the modules fit together.",
    ]
    for directory in KERNEL_DIRS:
        for path in sorted(directory.glob("*.py")):
            if path.name != "__init__.py":
                lines += module_entry(path)
    return "\n".join(lines) + "\n"


