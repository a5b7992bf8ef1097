"""The kernel's view of a ``World``: a table of raw pointers to its arrays.

Why not hand the kernel the namedtuple of arrays itself: numba passes a
namedtuple by value, flattened into its ~130 array descriptors, and counts a
reference for every array it touches. Measured on this machine, a call
between two compiled functions that both take the ``World`` cost 0.5–0.8 µs,
and even a struct of arrays (a numba ``StructRef``) left ~100 reference-count
calls in a function like ``generate_command`` (~150 ns of its ~180 ns).

So the kernel sees a ``WorldPtr``: one pointer to a table holding each
array's data address. ``w.cn_req`` is a typed pointer (numba ``CPointer``),
indexed like a 1-D array, with no reference counting and no bounds checks
(numba has none by default either). Two-dimensional arrays are indexed flat,
``row * n_columns + column``, with the sizes kept in ``I``.

Ownership: the numpy arrays belong to the Python ``World``; the address table
is a numpy array returned by ``pack``. The caller (``Simulation``) keeps both
alive while the kernel runs; the kernel never stores a pointer beyond a call.

Under ``NUMBA_DISABLE_JIT=1`` ``pack`` returns the same arrays as a namedtuple
of flat views, so the same kernel code indexes numpy arrays instead.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import config, types
from numba.core import cgutils
from numba.core.imputils import lower_getattr_generic
from numba.core.typing.templates import AttributeTemplate
from numba.extending import infer_getattr, intrinsic, models, register_model

from redsim.model.state import FLOAT_FIELDS, World


class WorldPtr(types.Type):
    """numba type of the kernel's world: a pointer to a table of array addresses."""

    def __init__(self, fields: tuple[tuple[str, types.Type], ...]) -> None:
        self.fields = fields
        self.index = {name: i for i, (name, _) in enumerate(fields)}
        self.dtypes = dict(fields)
        super().__init__(name="WorldPtr(" + ",".join(f"{n}:{t}" for n, t in fields) + ")")


WORLD_PTR = WorldPtr(tuple((name, types.float64 if name in FLOAT_FIELDS else types.int64)
                           for name in World._fields))

register_model(WorldPtr)(models.OpaqueModel)


@infer_getattr
class _WorldPtrAttributes(AttributeTemplate):
    key = WorldPtr

    def generic_resolve(self, typ, attr):
        if attr in typ.dtypes:
            return types.CPointer(typ.dtypes[attr])
        return None


@lower_getattr_generic(WorldPtr)
def _world_getattr(context, builder, typ, val, attr):
    table = builder.bitcast(val, ir.IntType(64).as_pointer())
    addr = builder.load(cgutils.gep(builder, table, typ.index[attr]))
    # The table never changes while the kernel runs: let LLVM hoist and merge loads.
    addr.set_metadata("invariant.load", builder.module.add_metadata([]))
    return builder.inttoptr(addr, context.get_value_type(types.CPointer(typ.dtypes[attr])))


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
        if arr.dtype != want or not arr.flags.c_contiguous:
            raise TypeError(f"World.{name}: expected a C-contiguous {np.dtype(want)} array, "
                            f"found {arr.dtype} {'C' if arr.flags.c_contiguous else 'strided'}")
        flat[name] = arr.reshape(-1)
    if config.DISABLE_JIT:
        return World(**flat)
    return np.array([a.ctypes.data for a in flat.values()], dtype=np.uint64)
