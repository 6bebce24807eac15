"""The LLVM IR pieces every SIMD module builds with: integer and float types, constants, splats, intrinsic calls.

The lowest room of :mod:`dspsim.simd`: the tiles (:mod:`.tiles`) and the lanes (:mod:`.requant_lanes`,
:mod:`.add_lanes`, :mod:`.lut_lanes`) import these, and it imports none of them.
"""
from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils

_I1, _I8, _I16, _I32, _I64 = (ir.IntType(b) for b in (1, 8, 16, 32, 64))
_F32 = ir.FloatType()


def _c(v):
    """``v`` as an i64 constant."""
    return ir.Constant(_I64, v)


def _splat(builder, value, vtype):
    """``value`` in every lane of ``vtype``."""
    n = vtype.count
    one = builder.insert_element(ir.Constant(vtype, None), value, ir.Constant(_I32, 0))
    return builder.shuffle_vector(one, ir.Constant(vtype, None), ir.Constant(ir.VectorType(_I32, n), [0] * n))


def _x86(b, name, ret, *args):
    """A call of the intrinsic ``name`` returning ``ret`` on ``args`` (declared in the module on first use)."""
    return b.call(cgutils.get_or_insert_function(b.module, ir.FunctionType(ret, [a.type for a in args]), name),
                  list(args))
