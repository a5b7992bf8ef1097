"""Reference documentation generated from the code, so it cannot drift from it.

Four Markdown pages under ``docs/``:

- ``scenario-reference.md``: every key a scenario file may hold, from the pydantic
  models in ``redsim/config/schema/`` (YAML key, path, type and unit, default,
  the field's docstring);
- ``cli.md``: the ``redsim`` command's ``--help`` text, from ``redsim.cli.build_parser``;
- ``model-map.md``: what each ``redsim/model/*.py`` module follows in the Redis
  source, and the deviations its docstrings declare;
- ``kernel-state.md``: every scalar, per-entity field and series of the kernel,
  from the ``FIELDS`` block of the mechanism that owns it.

``python -m redsim.docs`` rewrites the pages; ``python -m redsim.docs --check`` exits
1 naming the pages that differ from what the code generates (``tests/test_docs.py``
runs the same comparison). The output is deterministic: no timestamps, and a fixed
help width.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from redsim.docs._common import DOCS_DIR, REGENERATE, REPO_ROOT
from redsim.docs.cli_reference import cli_reference
from redsim.docs.kernel_state import kernel_state
from redsim.docs.model_map import model_map
from redsim.docs.scenario_reference import scenario_reference, walk_models

__all__ = ["DOCS_DIR", "PAGES", "REPO_ROOT", "cli_reference", "generate", "kernel_state",
           "main", "model_map",
           "scenario_reference", "stale", "walk_models"]

# ---------------------------------------------------------------------------------
# Writing and checking.

PAGES: dict[str, Callable[[], str]] = {
    "scenario-reference.md": scenario_reference,
    "cli.md": cli_reference,
    "model-map.md": model_map,
    "kernel-state.md": kernel_state,
}


def generate() -> dict[Path, str]:
    """Every page's path under docs/ and the text the code generates for it."""
    return {DOCS_DIR / name: build() for name, build in PAGES.items()}


def stale(pages: dict[Path, str] | None = None) -> list[Path]:
    """The pages whose file is missing or differs from what the code generates."""
    pages = generate() if pages is None else pages
    return [path for path, text in pages.items()
            if not path.is_file() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    """Write the pages, or with --check report the stale ones and return 1."""
    parser = argparse.ArgumentParser(prog="python -m redsim.docs",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a page differs from the code")
    args = parser.parse_args(argv)
    pages = generate()
    outdated = stale(pages)
    if args.check:
        for path in outdated:
            print(f"stale: {path.relative_to(REPO_ROOT)}", file=sys.stderr)
        if outdated:
            print(f"run `{REGENERATE}` to regenerate", file=sys.stderr)
        return 1 if outdated else 0
    DOCS_DIR.mkdir(exist_ok=True)
    for path in outdated:  # untouched pages keep their mtime
        # newline="\n": the same bytes on every platform, as the check compares them.
        path.write_text(pages[path], encoding="utf-8", newline="\n")
        print(f"wrote {path.relative_to(REPO_ROOT)}")
    if not outdated:
        print("docs are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
