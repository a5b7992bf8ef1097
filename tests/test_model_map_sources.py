"""docs/model-map.md names, for every kernel module, the Redis code it follows, or
says in words that it models none.

The rule (redsim/docs/model_map.py): Redis files and functions named in a module's
docstrings are listed as its "Redis source"; a module-docstring paragraph starting
"No Redis source:" is shown instead, with any Redis code it still names after it;
a module with neither reads "none named in its docstrings". The generator reads
the modules with `ast`, so nothing here compiles the kernel.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

# `redsim.docs` re-exports the page function under the module's name, so the
# module itself is imported by its full name.
mm = importlib.import_module("redsim.docs.model_map")

REPO = Path(__file__).resolve().parent.parent
HINT = "run `python -m redsim.docs` and commit the result"


def _sections(text: str) -> dict[str, str]:
    """`## heading` → the section's body, for every section of a Markdown page."""
    parts = re.split(r"^## (\S+)\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _module(tmp_path: Path, docstring: str, package: str = "model") -> Path:
    """A module file whose only content is ``docstring``, under ``package/``."""
    folder = tmp_path / package
    folder.mkdir(exist_ok=True)
    path = folder / "thing.py"
    path.write_text(f'"""{docstring}"""\n\nX = 1\n', encoding="utf-8")
    return path


def test_every_kernel_module_names_its_source_or_says_it_has_none():
    # Issue #17: the page said "none named" for 22 of 30 modules. Each module
    # now either names Redis functions or states what it is instead.
    sections = _sections((REPO / "docs" / "model-map.md").read_text(encoding="utf-8"))
    kernel = sorted(f"redsim/{p.parent.name}/{p.name}"
                    for d in ("model", "observe")
                    for p in (REPO / "redsim" / d).glob("*.py") if p.name != "__init__.py")
    assert sorted(sections) == kernel, f"model-map.md does not list the kernel: {HINT}"
    for name, body in sections.items():
        assert "none named" not in body, f"{name}: no Redis source and no 'No Redis source:'"
        assert "Redis source: `" in body or "\nNo Redis source: " in body, name


def test_a_module_following_redis_lists_files_and_functions(tmp_path):
    entry = "\n".join(mm.module_entry(_module(
        tmp_path, "Eviction.\n\nFollows ``src/evict.c:performEvictions`` and "
                  "``src/evict.c:evictionPoolPopulate``, with ``src/dict.c``.\n")))
    # Files sorted by name, each file's functions sorted, as _sources builds them.
    assert ("Redis source: `src/dict.c`, `src/evict.c` (`evictionPoolPopulate`, "
            "`performEvictions`).") in entry
    assert "No Redis source" not in entry


def test_no_redis_source_paragraph_replaces_the_list(tmp_path):
    entry = mm.module_entry(_module(
        tmp_path, "The disk.\n\nNo Redis source: the host's disk,\nnot Redis code.\n\nMore.\n"))
    # The heading names the module's package and file; the first paragraph follows;
    # the statement is joined onto one line.
    assert entry[:4] == ["", "## redsim/model/thing.py", "", "The disk."]
    assert "No Redis source: the host's disk, not Redis code." in entry
    assert not any(line.startswith("Redis source:") for line in entry)
    assert not any("none named" in line for line in entry)


def test_named_code_in_a_no_source_module_is_still_shown(tmp_path):
    # trace.py's case: a client-side format whose MONITOR form Redis writes.
    entry = mm.module_entry(_module(
        tmp_path, "Traces.\n\nNo Redis source: a client-side format; MONITOR's lines are "
                  "``src/replication.c:replicationFeedMonitors``'s.\n", package="observe"))
    assert entry[1] == "## redsim/observe/thing.py"
    assert ("Redis code it refers to: `src/replication.c` (`replicationFeedMonitors`)."
            in entry)


def test_a_module_with_neither_still_reads_none_named(tmp_path):
    # What the first test forbids in the shipped modules must still be visible
    # when a new module forgets it.
    entry = mm.module_entry(_module(tmp_path, "Something new.\n\nIt does things.\n"))
    assert "Redis source: none named in its docstrings." in entry


def test_no_source_statement_must_open_its_paragraph(tmp_path):
    # A passing mention ("... has no Redis source: ...") is not the statement.
    entry = mm.module_entry(_module(
        tmp_path, "Helper.\n\nThis helper has No Redis source: of its own.\n"))
    assert "Redis source: none named in its docstrings." in entry
