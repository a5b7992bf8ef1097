"""The kernel's view of a ``World``: a table of raw pointers to its arrays.

No Redis source: how the compiled kernel reaches its arrays.

Why not hand the kernel the namedtuple of arrays itself: numba passes a
namedtuple by value, flattened into its ~130 array descriptors, and counts a
reference for every array it touches. Measured on this machine, a call
between two compiled functions that both take the ``World`` cost 0.5–0.8 µs,
and even a struct of arrays (a numba ``StructRef``) left ~100 reference-count
calls in a function like ``generate_command`` (~150 ns of its ~180 ns).

So the kernel sees a ``WorldPtr``: one pointer to a table holding each
array's data address. ``w.cn_req`` is a typed pointer, indexed like a 1-D
array, with no reference counting and no bounds checks (numba has none by
default either). Two-dimensional arrays are indexed flat,
``row * n_columns + column``, with the sizes kept in ``I``.

Fields of one entity kind (a connection, a request slot, a pool, an event)
are stored row by row (``state.ROWS``), so one entity's fields share cache
lines: a request touches a few lines instead of one per field, which at
10,000 connections halved the cache misses per request. The pointer for such
a field carries its row width as a compile-time stride.

Ownership: the numpy arrays belong to the Python ``World``; the address table
is a numpy array returned by ``pack``. The caller (``Simulation``) keeps both
alive while the kernel runs; the kernel never stores a pointer beyond a call.

Under ``NUMBA_DISABLE_JIT=1`` ``pack`` returns the same arrays as a namedtuple
of flat views, so the same kernel code indexes numpy arrays instead.
"""

from __future__ import annotations

import operator

import numpy as np
from llvmlite import ir
from numba import config, types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed, lower_builtin, lower_getattr_generic
from numba.core.typing.templates import AbstractTemplate, AttributeTemplate, infer_global, signature
from numba.extending import infer_getattr, intrinsic, models, register_model

from redsim.model.state import FLOAT_FIELDS, World, row_stride


class StridedPtr(types.Type):
    """A typed pointer whose element i lies ``stride`` elements after element i−1:
    one field (column) of a table of rows, indexed like a 1-D array."""

    def __init__(self, dtype: types.Type, stride: int) -> None:
        self.dtype = dtype
        self.stride = stride
        super().__init__(name=f"StridedPtr({dtype}, {stride})")


register_model(StridedPtr)(models.PointerModel)


@infer_global(operator.getitem)
class _StridedGetItem(AbstractTemplate):
    def generic(self, args, kws):
        ptr, idx = args
        if isinstance(ptr, StridedPtr) and isinstance(idx, types.Integer):
            return signature(ptr.dtype, ptr, types.intp)
        return None


@infer_global(operator.setitem)
class _StridedSetItem(AbstractTemplate):
    def generic(self, args, kws):
        ptr, idx, _val = args
        if isinstance(ptr, StridedPtr) and isinstance(idx, types.Integer):
            return signature(types.none, ptr, types.intp, ptr.dtype)
        return None


def _element(context, builder, ptr_type, ptr, idx):
    if ptr_type.stride != 1:
        idx = builder.mul(idx, context.get_constant(types.intp, ptr_type.stride))
    return builder.gep(ptr, [idx])


@lower_builtin(operator.getitem, StridedPtr, types.Integer)
def _strided_getitem(context, builder, sig, args):
    value = builder.load(_element(context, builder, sig.args[0], *args))
    return impl_ret_borrowed(context, builder, sig.return_type, value)


@lower_builtin(operator.setitem, StridedPtr, types.Integer, types.Any)
def _strided_setitem(context, builder, sig, args):
    ptr, idx, value = args
    builder.store(value, _element(context, builder, sig.args[0], ptr, idx))


@intrinsic
def _prefetch(typingctx, ptr, idx):
    """Ask the CPU to start loading element ``idx`` of a field into cache
    (``llvm.prefetch``: read, keep in all levels). No effect on values. On a
    plain array (tests that call a kernel step with a ``World`` of arrays) it
    does nothing."""
    if not isinstance(idx, types.Integer):
        return None
    if isinstance(ptr, types.Array):
        def nothing(context, builder, sig, args):
            return context.get_dummy_value()

        return signature(types.none, ptr, types.intp), nothing
    if not isinstance(ptr, StridedPtr):
        return None

    def codegen(context, builder, sig, args):
        addr = builder.bitcast(_element(context, builder, sig.args[0], args[0], args[1]),
                               ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fn = builder.module.declare_intrinsic(
            "llvm.prefetch", [addr.type],
            fnty=ir.FunctionType(ir.VoidType(), [addr.type, i32, i32, i32]))
        builder.call(fn, [addr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return signature(types.none, ptr, types.intp), codegen


def _no_prefetch(field, idx):
    return None


prefetch = _no_prefetch if config.DISABLE_JIT else _prefetch
"""``prefetch(w.field, i)``: start pulling a row into cache before it is needed."""


class WorldPtr(types.Type):
    """numba type of the kernel's world: a pointer to a table of array addresses."""

    def __init__(self, fields: tuple[tuple[str, types.Type, int], ...]) -> None:
        self.fields = fields
        self.index = {name: i for i, (name, _, _) in enumerate(fields)}
        self.ptr_types = {name: StridedPtr(dtype, stride) for name, dtype, stride in fields}
        super().__init__(name="WorldPtr(" + ",".join(f"{n}:{t}:{k}" for n, t, k in fields) + ")")


WORLD_PTR = WorldPtr(tuple((name, types.float64 if name in FLOAT_FIELDS else types.int64,
                            row_stride(name)) for name in World._fields))

register_model(WorldPtr)(models.OpaqueModel)


@infer_getattr
class _WorldPtrAttributes(AttributeTemplate):
    key = WorldPtr

    def generic_resolve(self, typ, attr):
        return typ.ptr_types.get(attr)


@lower_getattr_generic(WorldPtr)
def _world_getattr(context, builder, typ, val, attr):
    table = builder.bitcast(val, ir.IntType(64).as_pointer())
    addr = builder.load(cgutils.gep(builder, table, typ.index[attr]))
    # The table never changes while the kernel runs: let LLVM hoist and merge loads.
    addr.set_metadata("invariant.load", builder.module.add_metadata([]))
    return builder.inttoptr(addr, context.get_value_type(typ.ptr_types[attr]))


@intrinsic
def _as_world(typingctx, table):
    """The WorldPtr over an address table made by ``pack``."""
    if not (isinstance(table, types.Array) and table.dtype == types.uint64):
        return None

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, value=args[0])
        return builder.bitcast(ary.data, ir.IntType(8).as_pointer())

    return WORLD_PTR(table), codegen


def _identity(world):
    return world


as_world = _identity if config.DISABLE_JIT else _as_world
"""Inside an entry point: the kernel's world from what ``pack`` returned."""


def pack(world: World):
    """What the kernel's entry points take for ``world``.

    Compiled: a uint64 array of the arrays' data addresses, in ``World`` field
    order. Uncompiled: a ``World`` of flat views. Either way the arrays stay
    owned by ``world``, which the caller must keep alive.
    """
    flat = {}
    for name, arr in world._asdict().items():
        want = np.float64 if name in FLOAT_FIELDS else np.int64
        stride = row_stride(name)
        ok = arr.dtype == want and (arr.flags.c_contiguous if stride == 1 else
                                    arr.ndim == 1 and arr.strides[0] == 8 * stride)
        if not ok:
            raise TypeError(f"World.{name}: expected {np.dtype(want)} with an element stride "
                            f"of {stride}, found {arr.dtype} with strides {arr.strides}")
        flat[name] = arr.reshape(-1)
    if config.DISABLE_JIT:
        return World(**flat)
    return np.array([a.ctypes.data for a in flat.values()], dtype=np.uint64)
