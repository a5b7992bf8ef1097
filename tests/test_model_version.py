"""The model version and the kernel cache follow the kernel's code, not its
documentation: a docstring or comment edit keeps every committed result fresh
and the compiled kernel cached; any change of code makes both new."""

from __future__ import annotations

import shutil

from redsim.model import jit


def _replace(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _hash_of(tmp_path, monkeypatch, edit=None) -> str:
    pkg = tmp_path / "pkg"
    if not pkg.exists():
        for sub in jit.KERNEL_SOURCES:
            shutil.copytree(jit._PACKAGE / sub, pkg / sub)
    if edit:
        path = pkg / "model" / "rng.py"
        before = path.read_text()
        after = edit(before)
        assert after != before, "the edit did not apply"
        path.write_text(after)
    monkeypatch.setattr(jit, "_PACKAGE", pkg)
    jit.code_hash.cache_clear()
    try:
        return jit.code_hash()
    finally:
        jit.code_hash.cache_clear()


def test_docs_and_comments_do_not_change_the_code_hash_but_code_does(tmp_path, monkeypatch):
    base = _hash_of(tmp_path, monkeypatch)
    assert base == _hash_of(tmp_path, monkeypatch)  # the copy hashes as the package
    # A longer module docstring, a function docstring and a comment: same code.
    def document(t: str) -> str:
        t = _replace(t, '"""Random streams for the kernel',
                     '"""Random streams (edited) for the kernel')
        t = _replace(t, '"""Next uniform in [0, 1) from stream ``s``."""',
                     '"""Next uniform in [0, 1) from stream ``s``.\n\n    More words."""')
        return _replace(t, "    pos = w.rg_pos\n", "    # a new comment\n    pos = w.rg_pos\n")

    docs = _hash_of(tmp_path, monkeypatch, document)
    assert docs == base
    # One operator changed: new code, new hash.
    code = _hash_of(tmp_path, monkeypatch,
                    lambda t: _replace(t, "if p + 1 == n // 2:", "if p + 1 >= n // 2:"))
    assert code != base
