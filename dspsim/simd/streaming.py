"""Non-temporal (streaming) stores for kernels that write an output larger than the caches.

A plain store to a line that is not in cache first reads the line (read-for-ownership): a quantizer
that reads 64 MB of float32 and writes 16 MB of codes moves 96 MB. A non-temporal store writes whole
lines straight to memory, so the output costs only its own 16 MB. The kernel writes each block of
codes into a small buffer that stays in L1, then :func:`stream_lines` copies the buffer's full lines
out with non-temporal stores (``vmovntdq`` / ``vmovntps``: 64-byte lines, destination aligned to a
line). :func:`store_fence` (a full fence: ``mfence`` on x86) orders those stores before every later
load and store, so the thread that joins the workers sees every code.

Measured on dspsim's fused torch-mode quantizer (16M float32, 1 thread, AMD EPYC Zen 4):
docs/engines.md, "quantize_per_tensor against torch.quantize_per_tensor".
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

LINE = 64
"""Bytes per cache line: the unit of a streaming store."""


def line_offset(a, i) -> int:
    """Byte offset of ``a[i]`` within its 64-byte cache line (``0 <= i <= a.size``, C-contiguous ``a``)."""
    return (a.ctypes.data + i * a.itemsize) % LINE


def stream_lines(src, dst, d0, n_lines) -> None:
    """Copy the first ``n_lines`` cache lines (64 bytes each) of ``src`` to ``dst`` from ``dst[d0]`` on,
    through non-temporal stores; ``src`` and ``dst`` have one dtype and ``dst[d0]`` starts a line
    (``line_offset(dst, d0) == 0``).

    Compiled: one 64-byte load and one non-temporal store (``vmovntps`` on AVX-512) per line. This Python body is the
    NUMBA_DISABLE_JIT path: a plain copy.
    """
    n = LINE * n_lines // dst.itemsize
    dst[d0:d0 + n] = src[:n]


def store_fence() -> None:
    """Order the streaming stores before every later load and store (LLVM ``fence seq_cst``:
    ``mfence`` on x86, which also drains the write-combining buffers); no effect on values.

    This Python body is the NUMBA_DISABLE_JIT path: nothing to do.
    """


def _data(context, builder, arytype, ary):
    return context.make_array(arytype)(context, builder, ary).data


@intrinsic
def _line_offset(typingctx, a, i):
    def codegen(context, builder, signature, args):
        ptr = builder.gep(_data(context, builder, signature.args[0], args[0]), [args[1]])
        address = builder.ptrtoint(ptr, ir.IntType(64))
        return builder.and_(address, ir.Constant(ir.IntType(64), LINE - 1))
    return types.int64(a, i), codegen


@intrinsic
def _stream_lines(typingctx, src, dst, d0, n_lines):
    def codegen(context, builder, signature, args):
        line = ir.VectorType(ir.IntType(8), LINE)
        byte = ir.IntType(8).as_pointer()
        sp = builder.bitcast(_data(context, builder, signature.args[0], args[0]), byte)
        dp = builder.bitcast(builder.gep(_data(context, builder, signature.args[1], args[1]), [args[2]]), byte)
        nontemporal = builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)])
        with cgutils.for_range(builder, args[3]) as loop:
            at = builder.mul(loop.index, ir.Constant(loop.index.type, LINE))
            value = builder.load(builder.bitcast(builder.gep(sp, [at]), line.as_pointer()), align=1)
            store = builder.store(value, builder.bitcast(builder.gep(dp, [at]), line.as_pointer()), align=LINE)
            store.set_metadata("nontemporal", nontemporal)
        return context.get_dummy_value()
    return types.void(src, dst, types.intp, types.intp), codegen


@intrinsic
def _fence(typingctx):
    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()
    return types.void(), codegen


@overload(line_offset, inline="always")
def _line_offset_jit(a, i):
    if isinstance(a, types.Array):
        return lambda a, i: _line_offset(a, i)


@overload(stream_lines, inline="always")
def _stream_lines_jit(src, dst, d0, n_lines):
    if isinstance(src, types.Array) and isinstance(dst, types.Array) and src.dtype == dst.dtype:
        return lambda src, dst, d0, n_lines: _stream_lines(src, dst, d0, n_lines)


@overload(store_fence, inline="always")
def _store_fence_jit():
    return lambda: _fence()
