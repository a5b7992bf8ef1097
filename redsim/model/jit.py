"""The decorators every compiled kernel function uses, and where their code is cached.

No Redis source: how the kernel is compiled.

``leaf`` (small helpers called on every request) inlines at numba's IR level;
``step`` is a normal compiled call; ``entry`` marks the functions Python
calls. All run as plain Python under ``NUMBA_DISABLE_JIT=1``.

A ``step`` called with a literal argument (``False``, ``0``, a module
constant) is compiled once per literal value and once more for a computed
one: ``db_delete(w, k, False)`` beside ``db_delete(w, k, lazy)`` cost a
second copy of ``db_delete`` and everything it inlines. Such call sites pass
``np.bool_(False)`` / ``np.int64(C)``, which numba types as plain values: the
copies of ``set_key``, ``db_add``, ``db_delete`` and the AOF flush this
removed were a third of a cold compile (591 s → 393 s on the reference VM).

All use numpy's error model: a division by zero gives inf/nan (0 for integers)
instead of raising, so numba adds no zero test and exception path to every
division; the kernel never divides by zero on purpose, and the ~10 % it saves
on the S0 run is measured by ``bench/bench_s0.py``.

Machine code is cached on disk. numba checks a cached function against its
own source file only, so a change in a function it calls from another module
(or in the ``World`` layout) would silently reuse stale code; the cache
directory is therefore keyed by a hash of every kernel source file's code
(``code_hash``) and the numba version: ``$REDSIM_CACHE_DIR`` or
``~/.cache/redsim``, then ``kernel-<hash>``. Old directories can be deleted
freely.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
from pathlib import Path

import numba
from numba import njit
from numba.core import caching as _caching

_PACKAGE = Path(__file__).resolve().parent.parent
KERNEL_SOURCES = ("model", "observe")


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` without the docstrings of its module, classes and functions."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                node.body = body[1:] or [ast.Pass()]
    return tree


@functools.cache
def code_hash(sources: tuple[str, ...] = KERNEL_SOURCES, skip: tuple[str, ...] = ()) -> str:
    """sha256 (hex) of the code of every module in ``sources`` (the kernel's,
    ``KERNEL_SOURCES``, by default; ``result.model_version`` adds the host's): each file's
    syntax tree without comments and docstrings, so documentation edits neither
    recompile the kernel nor make a run's model version (``result.model_version``)
    look new, while any change of code does. ``skip``: files left out, as
    ``"package/module.py"``."""
    h = hashlib.sha256()
    for sub in sources:
        for path in sorted((_PACKAGE / sub).glob("*.py")):
            if f"{sub}/{path.name}" in skip:
                continue
            h.update(f"{sub}/{path.name}\0".encode())
            h.update(ast.dump(_strip_docstrings(ast.parse(path.read_bytes()))).encode())
    return h.hexdigest()


NOT_COMPILED = ("model/keyspace_image.py",)
"""Model files with no compiled code, called only from Python around the kernel:
left out of the kernel's cache key (not out of ``result.model_version``)."""


def kernel_cache_dir() -> Path:
    """The on-disk cache directory for this exact kernel code and numba version."""
    h = hashlib.sha256(numba.__version__.encode())
    h.update(code_hash(skip=NOT_COMPILED).encode())
    base = os.environ.get("REDSIM_CACHE_DIR") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "redsim"
    return Path(base) / f"kernel-{h.hexdigest()[:16]}"


numba.config.CACHE_DIR = str(kernel_cache_dir())


class KernelCacheLocator(_caching._CacheLocator):
    """Where numba caches a kernel function: ``kernel_cache_dir()/<package>``
    (``model`` or ``observe``), whatever the checkout or venv the code was
    imported from. numba's own locator for ``CACHE_DIR`` files each source
    directory under a hash of its absolute path, so two checkouts, a venv's
    ``site-packages`` and a CI clone of the same commit each compiled from
    nothing; the directory here is already keyed by the code itself
    (``code_hash``). The stamp numba checks on load is the file's content
    hash (numba 0.68 does the same; 0.60 used the file's mtime, which a fresh
    clone changes)."""

    def __init__(self, py_func, py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(kernel_cache_dir() / Path(py_file).parent.name)

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> str:
        return hashlib.sha256(Path(self._py_file).read_bytes()).hexdigest()

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file: str):
        path = Path(py_file).resolve()
        if path.parent.parent != _PACKAGE or path.parent.name not in KERNEL_SOURCES:
            return None  # not kernel code: numba's own locators decide
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:
            return None  # unwritable: numba falls back to its own locators
        return self


_impl = getattr(_caching, "CacheImpl", None) or _caching._CacheImpl  # 0.68 / older
if KernelCacheLocator not in _impl._locator_classes:
    _impl._locator_classes.insert(0, KernelCacheLocator)


def kernel_compiled() -> bool:
    """True if the event loop's machine code is in the on-disk cache (so a run
    starts at once); False on a fresh install or after a code change, when the
    first run compiles it (about a minute)."""
    return any(kernel_cache_dir().rglob("event_loop.run-*.nbi"))

leaf = njit(cache=True, inline="always", error_model="numpy")
step = njit(cache=True, error_model="numpy")
entry = njit(cache=True, error_model="numpy")
