"""Constants shared by the generated pages."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = PACKAGE_DIR.parent
DOCS_DIR = REPO_ROOT / "docs"
MODEL_DIR = PACKAGE_DIR / "model"

# Help text is wrapped at this width whatever the terminal, so cli.md is stable.
HELP_WIDTH = 100

REGENERATE = "python -m redsim.docs"


def _code(text: str) -> str:
    """An inline code span; a text holding backticks gets a longer fence."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
