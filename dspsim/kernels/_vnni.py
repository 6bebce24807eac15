"""AVX-512 VNNI micro-kernel for the exact int8 GEMM cores, written in LLVM IR through numba.

``vpdpbusd`` multiplies 4 unsigned bytes by 4 signed bytes and adds the 4 products to an int32 lane,
without intermediate saturation (``vpdpbusds`` is the saturating variant; ``vpmaddubsw`` saturates
int16 pairs): each product is at most 255 * 128 in magnitude, and the lane add wraps modulo 2^32,
exactly like a C int32 accumulator built with ``-fwrapv``. So one instruction does 64 exact MACs.

The tile computes an ``MR x NR`` block of ``C = A_u8 . B_s8^T`` (``NR = 16 * NV``) with the
accumulators in zmm registers, then stores ``acc + col_add[n] + row_add[m] * col_mul[n]`` (all
modulo 2^32) under a column mask. Callers choose the tile only when :data:`HAVE_VNNI` is true:
LLVM cannot select the instruction for a target without ``avx512vnni``.
"""
from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir
from numba import config
from numba.core import cgutils, types
from numba.extending import intrinsic

MR = 6
"""Rows of A per tile (one broadcast each per k-step)."""
NV = 4
"""zmm registers of B per tile; ``MR * NV`` accumulators plus ``NV`` B vectors fit in 32 registers."""
NR = 16 * NV
"""Columns of B per tile (the packing panel width)."""


def _host_has_vnni() -> bool:
    """True when numba compiles for a CPU with AVX-512 VNNI (and BW, for the byte masks)."""
    feats = llvm.get_host_cpu_features()
    host = all(feats.get(f, False) for f in ("avx512f", "avx512bw", "avx512vnni"))
    if config.CPU_NAME is None:
        return host
    # A pinned target (NUMBA_CPU_NAME, e.g. for portable caches) must name the features itself.
    wanted = config.CPU_FEATURES or ""
    return host and all(f"+{f}" in wanted for f in ("avx512f", "avx512bw", "avx512vnni"))


HAVE_VNNI = _host_has_vnni()

_I8, _I32, _I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
_V16 = ir.VectorType(_I32, 16)
_V64B = ir.VectorType(_I8, 64)
# LLVM 22 types the byte operands as <64 x i8>; older releases as <16 x i32>. LLVM 15 switched
# to opaque pointers, which changed the masked store's mangled name.
_OPND = _V64B if llvm.llvm_version_info[0] >= 22 else _V16
_MASKED_STORE = "llvm.masked.store.v16i32." + ("p0" if llvm.llvm_version_info[0] >= 15 else "p0v16i32")


def _data(context, builder, arrty, arr, elem):
    """Pointer to the first element of a numba array, as ``elem*``."""
    ptr = context.make_array(arrty)(context, builder, arr).data
    return builder.bitcast(ptr, elem.as_pointer())


@intrinsic
def tile_vnni(typingctx, a, rows, segs, k4, bp, b_off, c, c_off, ldc, mv, nv,
              col_add, col_mul, n0, row_add, m0):
    """One ``MR x NR`` tile: ``c[c_off + r*ldc + j] = sum + col_add[n0+j] + row_add[m0+r]*col_mul[n0+j]``.

    ``sum = sum_s sum_{q < 4*k4} a[rows[r] + segs[s] + q] * bp[b_off + ((s*k4 + q//4)*NR + j)*4 + q%4]``
    with ``a`` uint8, ``bp`` int8 packed ``[K/4][NR][4]``; rows ``r >= mv`` and columns ``j >= nv`` are
    not stored (their ``rows`` entries must still point at readable memory); ``col_add`` and
    ``col_mul`` are read for all ``NR`` columns from ``n0``.
    """
    sig = types.void(a, rows, segs, k4, bp, b_off, c, c_off, ldc, mv, nv, col_add, col_mul, n0, row_add, m0)

    def codegen(context, builder, signature, args):
        (a_, rows_, segs_, k4_, bp_, b_off_, c_, c_off_, ldc_, mv_, nv_,
         col_add_, col_mul_, n0_, row_add_, m0_) = args
        at = signature.args
        mod = builder.module
        dpbusd = cgutils.get_or_insert_function(
            mod, ir.FunctionType(_V16, [_V16, _OPND, _OPND]), "llvm.x86.avx512.vpdpbusd.512")
        abase = _data(context, builder, at[0], a_, _I8)
        rowp = _data(context, builder, at[1], rows_, _I64)
        segp = _data(context, builder, at[2], segs_, _I64)
        nseg = cgutils.unpack_tuple(builder, context.make_array(at[2])(context, builder, segs_).shape, 1)[0]
        bbase = builder.gep(_data(context, builder, at[4], bp_, _I8), [b_off_])
        k4v = context.cast(builder, k4_, at[3], types.int64)

        # Accumulators live in allocas that LLVM's mem2reg turns into zmm registers.
        accs = [[cgutils.alloca_once_value(builder, ir.Constant(_V16, [0] * 16)) for _ in range(NV)]
                for _ in range(MR)]
        bcur = cgutils.alloca_once_value(builder, bbase)
        row_ptrs = [builder.gep(abase, [builder.load(builder.gep(rowp, [ir.Constant(_I64, r)]))])
                    for r in range(MR)]

        with cgutils.for_range(builder, nseg) as sloop:
            soff = builder.load(builder.gep(segp, [sloop.index]))
            arows = [builder.bitcast(builder.gep(p, [soff]), _I32.as_pointer()) for p in row_ptrs]
            with cgutils.for_range(builder, k4v) as kloop:
                bk = builder.load(bcur)
                bvec = []
                for v in range(NV):
                    p = builder.bitcast(builder.gep(bk, [ir.Constant(_I64, 64 * v)]), _OPND.as_pointer())
                    bvec.append(builder.load(p, align=1))
                for r in range(MR):
                    word = builder.load(builder.gep(arows[r], [kloop.index]), align=1)
                    splat = builder.shuffle_vector(
                        builder.insert_element(ir.Constant(_V16, None), word, ir.Constant(_I32, 0)),
                        ir.Constant(_V16, None), ir.Constant(_V16, [0] * 16))
                    splat = builder.bitcast(splat, _OPND)
                    for v in range(NV):
                        acc = builder.load(accs[r][v])
                        builder.store(builder.call(dpbusd, [acc, splat, bvec[v]]), accs[r][v])
                builder.store(builder.gep(bk, [ir.Constant(_I64, 4 * NR)]), bcur)

        # Epilogue: masked stores of acc + col_add + row_add * col_mul, modulo 2^32.
        masked_store = cgutils.get_or_insert_function(
            mod, ir.FunctionType(ir.VoidType(), [_V16, _V16.as_pointer(), _I32, ir.VectorType(ir.IntType(1), 16)]),
            _MASKED_STORE)
        cbase = builder.gep(_data(context, builder, at[6], c_, _I32), [c_off_])
        cadd = builder.gep(_data(context, builder, at[11], col_add_, _I32), [n0_])
        cmul = builder.gep(_data(context, builder, at[12], col_mul_, _I32), [n0_])
        radd = builder.gep(_data(context, builder, at[14], row_add_, _I32), [m0_])
        nv32 = builder.trunc(context.cast(builder, nv_, at[10], types.int64), _I32)
        nvs = builder.shuffle_vector(builder.insert_element(ir.Constant(_V16, None), nv32, ir.Constant(_I32, 0)),
                                     ir.Constant(_V16, None), ir.Constant(_V16, [0] * 16))
        masks, adds, muls = [], [], []
        for v in range(NV):
            lanes = ir.Constant(_V16, list(range(16 * v, 16 * v + 16)))
            masks.append(builder.icmp_signed("<", lanes, nvs))
            adds.append(builder.load(builder.bitcast(builder.gep(cadd, [ir.Constant(_I64, 16 * v)]),
                                                     _V16.as_pointer()), align=4))
            muls.append(builder.load(builder.bitcast(builder.gep(cmul, [ir.Constant(_I64, 16 * v)]),
                                                     _V16.as_pointer()), align=4))
        mv64 = context.cast(builder, mv_, at[9], types.int64)
        ldc64 = context.cast(builder, ldc_, at[8], types.int64)
        for r in range(MR):
            with builder.if_then(builder.icmp_signed("<", ir.Constant(_I64, r), mv64)):
                rv = builder.load(builder.gep(radd, [ir.Constant(_I64, r)]))
                rvs = builder.shuffle_vector(builder.insert_element(ir.Constant(_V16, None), rv, ir.Constant(_I32, 0)),
                                             ir.Constant(_V16, None), ir.Constant(_V16, [0] * 16))
                crow = builder.gep(cbase, [builder.mul(ir.Constant(_I64, r), ldc64)])
                for v in range(NV):
                    val = builder.add(builder.add(builder.load(accs[r][v]), adds[v]), builder.mul(rvs, muls[v]))
                    ptr = builder.bitcast(builder.gep(crow, [ir.Constant(_I64, 16 * v)]), _V16.as_pointer())
                    builder.call(masked_store, [val, ptr, ir.Constant(_I32, 4), masks[v]])
        return context.get_dummy_value()

    return sig, codegen
