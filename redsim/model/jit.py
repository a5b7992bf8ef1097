"""The decorators every compiled kernel function uses, and where their code is cached.

No Redis source: how the kernel is compiled.

``leaf`` marks a small helper, ``hot_leaf`` one on the per-request path that
LLVM must inline, ``step`` a compiled call, ``entry`` a function Python calls.
All run as plain Python under ``NUMBA_DISABLE_JIT=1``.

How the compile is kept short (a cold compile of what a run needs: 681 s →
~50 s on the 2-vCPU Intel VM, ``bench/bench_compile.py --profile``):

- helpers are inlined by LLVM, not at numba's IR level: numba's IR inliner
  (``inline="always"``) typed a helper's body again at every call site, 351 s
  of the 681;
- ``KernelDispatcher`` compiles a function once per argument types, never per
  literal value (numba's own dispatcher made a copy of a callee and all it
  calls for each distinct constant at a call site);
- a callee (a function compiled while its caller is typed) is compiled for
  its callers only: no Python wrappers, no module-level optimisation, machine
  code for its own functions only, and nothing saved to the cache. Its caller
  links its code and optimises it again, down to the ``entry`` that Python
  calls, which optimises and emits the whole program once; that is what the
  cache keeps. numba did all four at every level of the call tree.

The callees' own machine code is slower than the ``entry``'s whole-program
code, and numba links later callers to it, so a process that compiled runs
~3× slower; ``redsim.kernel_compile`` therefore compiles in a process of its
own, and every run loads the cache. Run speed is unchanged
(``bench/bench_s0.py`` in the same sitting): the helpers LLVM left as calls on
S0's hot path are ``hot_leaf``.

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
from numba.core import caching as _caching
from numba.core import codegen as _codegen
from numba.core import sigutils, types
from numba.core.registry import CPUDispatcher

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
    first run compiles it (about 50 s on a 2-vCPU VM)."""
    return any(kernel_cache_dir().rglob("event_loop.run-*.nbi"))

_own_module_pass = []
"""One flag per kernel function being compiled, innermost last: True when its
library gets numba's module-level optimisation (an ``entry``, or any function
Python itself calls), False for a callee compiled while its caller is typed."""


def _whole() -> bool:
    """Whether the library being finished is compiled whole (``_own_module_pass``):
    outside any kernel compile, or for an entry or a function Python calls."""
    return not _own_module_pass or _own_module_pass[-1]


def _optimize_final_module(self) -> None:
    """numba's module-level optimisation of a finished library (its code with
    every library it calls linked in), skipped for a kernel callee: the caller
    links the callee's code and optimises it again, so each level of the call
    tree optimised the whole tree below it once more (16 of 68 s of a cold
    compile). The callee's functions still get numba's function passes one by
    one; the ``entry`` that Python calls optimises the whole program once.
    Numba's own libraries (overloads of numpy functions) compiled inside a
    callee are linked the same way."""
    if _whole():
        _numba_optimize_final_module(self)


_numba_optimize_final_module = _codegen.CPUCodeLibrary._optimize_final_module
_codegen.CPUCodeLibrary._optimize_final_module = _optimize_final_module


def _finalize(self) -> None:
    """numba's ``CPUCodeLibrary.finalize``, with one change for a kernel callee:
    the functions it links from the libraries it calls are declared
    ``available_externally`` before its machine code is made, so LLVM emits
    only the callee's own functions and calls the copies already loaded from
    the libraries they came from. numba made machine code for a callee's
    whole call tree once per level of the tree (12 of 73 s of a cold compile
    on the 2-vCPU VM, ``bench/bench_compile.py``). The module a caller links
    (``_get_module_for_linking``) is taken before the change, so it still
    carries every body for the caller's inliner, and an ``entry`` still has
    the whole program in its own machine code, which is what the cache keeps.
    Every other library is numba's ``finalize`` unchanged."""
    if _whole():
        return _numba_finalize(self)
    _codegen.require_global_compiler_lock()
    self._codegen._check_llvm_bugs()
    self._raise_if_finalized()
    own = {fn.name for fn in self._final_module.functions if not fn.is_declaration}
    seen = set()
    for library in self._linking_libraries:
        if library not in seen:
            self._reload_init.update(library._reload_init)
            seen.add(library)
            self._final_module.link_in(library._get_module_for_linking(), preserve=True)
    self._optimize_final_module()
    self._final_module.verify()
    # What a caller links: every body, own ones linkonce_odr (numba's rule).
    shared = self._final_module.clone()
    for fn in shared.functions:
        if not fn.is_declaration and fn.linkage == _codegen.ll.Linkage.external:
            fn.linkage = "linkonce_odr"
    self._shared_module = shared
    for fn in self._final_module.functions:
        # Only what another library exports: a private or internal function
        # has no symbol to call elsewhere, so it keeps its own copy here.
        if not fn.is_declaration and fn.name not in own and fn.linkage in _EXPORTED:
            fn.linkage = "available_externally"
    self._finalize_final_module()


_EXPORTED = {_codegen.ll.Linkage.external, _codegen.ll.Linkage.linkonce_odr,
             _codegen.ll.Linkage.weak_odr}
_numba_finalize = _codegen.CPUCodeLibrary.finalize
_codegen.CPUCodeLibrary.finalize = _finalize


class _NoSave:
    """A dispatcher's cache that loads but never saves: a kernel callee's
    machine code calls the functions below it in other libraries
    (``_finalize``), so a process that loaded it alone from disk could not
    run it. Its ``entry`` is saved whole."""

    def __init__(self, cache) -> None:
        self._cache = cache

    def load_overload(self, sig, target_context):
        return self._cache.load_overload(sig, target_context)

    def save_overload(self, sig, data) -> None:
        pass

    def __getattr__(self, name):
        return getattr(self._cache, name)


class KernelDispatcher(CPUDispatcher):
    """numba's CPU dispatcher with two changes for the kernel:

    - one machine-code copy per argument *types*, never per literal *value*:
      a call typed with a constant argument (``db_delete(w, k, False)``) is
      compiled as if the argument were computed. numba's own dispatcher
      specialises on the literal, so each distinct constant at a call site
      cost a whole compile of the callee and everything it calls (275 extra
      compiles of the 690 once ``leaf`` stopped inlining at numba's IR level);
    - a callee compiled while its caller is typed is compiled for callers
      only: no Python or C wrappers (11 s of a 60 s compile: the wrapper that
      unboxes the ``World`` is large), no module-level optimisation
      (``_optimize_final_module``), machine code for its own functions only
      (``_finalize``), not saved (``_NoSave``). An ``entry``, or a function
      Python itself calls first, is compiled whole. Python calling a
      signature compiled only for callers compiles it again, whole
      (``add_overload``); warm runs load whole code from the cache.
    """

    entry = False

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._callee_only: set[tuple] = set()
        """Signatures compiled only for callers, with no Python wrapper."""

    def compile(self, sig):
        whole = self.entry or not _own_module_pass
        args = tuple(sigutils.normalize_signature(sig)[0])
        if whole and args in self._callee_only:
            # Python calls a signature so far compiled only for callers:
            # compile it again with its wrappers (its callees are reused).
            del self.overloads[args]
            self._callee_only.discard(args)
        _own_module_pass.append(whole)
        cache, opts = self._cache, self._compiler.targetoptions
        if not whole:
            self._cache = _NoSave(cache)
            self._compiler.targetoptions = {**opts, "no_cpython_wrapper": True,
                                            "no_cfunc_wrapper": True}
        try:
            return super().compile(sig)
        finally:
            self._cache, self._compiler.targetoptions = cache, opts
            _own_module_pass.pop()

    def add_overload(self, cres) -> None:
        """numba's ``add_overload``, except that a callee's machine code (no
        Python wrapper) is kept for the callers that link it but is not
        callable from Python: a Python call of that signature finds no match
        and compiles it with its wrappers (``compile``)."""
        if not _whole():
            args = tuple(cres.signature.args)
            self.overloads[args] = cres
            self._callee_only.add(args)
        else:
            super().add_overload(cres)

    def get_call_template(self, args, kws):
        return super().get_call_template(
            tuple(types.unliteral(a) for a in args),
            {k: types.unliteral(v) for k, v in kws.items()})


def _kernel_jit(func, is_entry: bool = False, **options):
    """``func`` compiled by a ``KernelDispatcher`` in nopython mode with numpy's
    error model, cached on disk; plain Python under ``NUMBA_DISABLE_JIT=1``."""
    if numba.config.DISABLE_JIT:
        return func
    disp = KernelDispatcher(py_func=func, locals={},
                            targetoptions={"nopython": True, "error_model": "numpy", **options})
    disp.entry = is_entry
    disp.enable_caching()
    return disp


def leaf(func):
    """A small helper: compiled once per argument types; LLVM inlines it into
    its callers where its cost model says so."""
    return _kernel_jit(func)


def hot_leaf(func):
    """A small helper on the per-request path that LLVM must inline
    (``alwaysinline``). The 38 so marked are the helpers LLVM's cost model left
    as calls on S0's hot path or in the keyspace build (``bench/bench_profile.py``,
    three rounds): with none marked S0 ran ~10 % slower than with numba's
    IR-level inlining of every helper, with the first 27 still ~6 % slower
    (``bench/bench_s0.py``, pairs in one sitting). Each round costs compile
    time (59, 64, 75 s for 18, 27, 38); marking all 263 cost 87 s."""
    return _kernel_jit(func, forceinline=True)


def step(func):
    """A compiled function called from other kernel functions."""
    return _kernel_jit(func)


def entry(func):
    """A compiled function Python calls: its library is optimised whole."""
    return _kernel_jit(func, is_entry=True)
