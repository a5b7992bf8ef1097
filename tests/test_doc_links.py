"""Every relative link in the README and docs/ leads somewhere: the file exists
and, for a link to a heading of a Markdown file (``guide.md#a-heading``), so does
the heading (issue #42 moved the README's reference sections into docs/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

CODE = re.compile(r"^```.*?^```[ \t]*$|`[^`\n]*`", re.S | re.M)
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def anchors(page: Path) -> set[str]:
    """The heading anchors GitHub makes for ``page``: lower case, punctuation
    but ``-`` and ``_`` dropped, spaces as ``-``, repeats numbered ``-1``, ``-2``."""
    text = CODE.sub("", page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for m in HEADING.finditer(text):
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(page: Path) -> list[str]:
    """The link targets of ``page`` outside code, as written."""
    return LINK.findall(CODE.sub("", page.read_text(encoding="utf-8")))


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_docs_index_lists_every_page():
    index = ROOT / "docs" / "README.md"
    listed = {(index.parent / t).resolve() for t in links(index)}
    missing = [p.name for p in (ROOT / "docs").glob("*.md")
               if p != index and p.resolve() not in listed]
    assert not missing, f"docs/README.md does not list {missing}"


def test_the_link_checker_sees_a_broken_link(tmp_path):
    (tmp_path / "a.md").write_text("# Top\n\nSee [b](b.md), [top](#top), `[x](nope.md)`.\n"
                                   "## Two words, and more\n")
    assert links(tmp_path / "a.md") == ["b.md", "#top"]
    assert anchors(tmp_path / "a.md") == {"top", "two-words-and-more"}
