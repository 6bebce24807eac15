"""Software prefetch for streaming kernels: :func:`prefetch` is LLVM's ``llvm.prefetch`` (read, into L1).

A loop over an array larger than the caches, which does more work per cache line than a copy, keeps
fewer loads in flight than the memory system can serve: the out-of-order window fills with the
arithmetic of lines already loaded. Asking for the line a fixed distance ahead (tens of KB) keeps
the stream busy. Measured on dspsim's fused torch-mode quantizer (16M float32, 1 thread, AMD EPYC):
22-25 % more throughput (docs/engines.md, "quantize_per_tensor against torch.quantize_per_tensor").
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload


def prefetch(a, i) -> None:
    """Hint that ``a[i]`` (``0 <= i < a.size``, C-contiguous ``a``) will be read soon; no effect on values.

    Compiled: one ``prefetcht0`` of the line holding ``a[i]``. This Python body is the
    NUMBA_DISABLE_JIT path: nothing to do.
    """


@intrinsic
def _llvm_prefetch(typingctx, a, i):
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        ptr = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fn = builder.module.declare_intrinsic("llvm.prefetch", [ptr.type],
                                              ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32]))
        # read (0), highest locality (3: keep in every cache level), data cache (1)
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.void(a, i), codegen


@overload(prefetch, inline="always")
def _prefetch_jit(a, i):
    if isinstance(a, types.Array):
        return lambda a, i: _llvm_prefetch(a, i)

