"""SIMD tiles for the exact int8 GEMM cores, written in LLVM IR through numba intrinsics.

The tiles compute an ``MR x nr`` block of ``C = A_u8 . B_s8^T`` (``A`` unsigned bytes: the bytes in memory
XOR ``flip``, 0x80 for int8 codes, so that no pass over the input makes them; :func:`tile_avx2_signed`
sums the int8 codes themselves and leaves ``128 * sum B`` to the caller; ``nr = 16 * nvec`` columns,
``nvec`` in 1..NV) exactly: every product fits its lane and the int32 lane adds wrap
modulo 2^32, like a C int32 accumulator built with ``-fwrapv``. They store ``acc + col_add[n] +
row_add[m] * col_mul[n]`` (modulo 2^32) under a column mask.

* :func:`tile_vnni` (AVX-512 VNNI, ``B`` packed ``[K/4][nr][4]`` signed bytes): ``vpdpbusd``
  multiplies 4 unsigned by 4 signed bytes and adds the 4 products to an int32 lane without
  intermediate saturation (``vpdpbusds`` is the saturating variant; ``vpmaddubsw`` saturates int16
  pairs and is not used). 64 exact MACs per instruction; the ``MR * nvec`` accumulators stay in zmm
  registers.
* :func:`tile_avx2` (AVX2, ``B`` as :meth:`dspsim.kernels.mac.gemm.PackedWeights.pairs`: int16 pairs
  ``(k0, k2)``, ``(k1, k3)`` of every column): ``vpmaddwd`` adds two int16 products into an int32
  lane; ``|u * b| <= 255 * 128`` so the pair sum is exact (the instruction's only overflow,
  ``-32768 * -32768 * 2``, cannot occur). A row's 4 bytes are broadcast once per k-step and split
  into its even and odd bytes (``vpand``, ``vpsrlw``: int16 pairs ``(a0, a2)``, ``(a1, a3)``; sign-extended by
  ``vpsllw``/``vpsraw`` in :func:`tile_avx2_signed`, for int8 codes), so
  each lane is one column's sum and no reduction is needed; all ``MR`` rows of a 16-column slice
  (12 accumulators) share each B load. One loop nest per row count of a short last tile; the
  slices run in a loop.
* :func:`tile_vnni_requant`: the VNNI tile that requantizes its sums in its registers, 16 lanes at a time (a
  float-scale scheme, :class:`_FloatCodes`: ``vcvtdq2ps``, the fma of a float bias only when there is one,
  ``vmulps``, the clamps, ``vcvtps2dq``; TFLite's fixed-point scheme, :class:`_FixedCodes`: the lanes of
  :func:`dspsim.simd.requant_lanes.fixed_lanes`, ``vpmuldq`` on zmm) and stores 8- or 16-bit codes: no int32
  block is stored and read back.

The VNNI tile holds one loop nest per (16-column vectors that hold stored columns, rows of a short
last tile) and branches to the one that fits, so narrow weights, a narrow last panel and short tiles
do no wasted work. Full vectors are stored plainly; only a partial one takes the masked store
(``vpmaskmovd`` costs ~16 cycles per store on Zen 2, a plain store one).

LLVM cannot select these instructions for a target without the feature: callers use a tile only
when :data:`dspsim.simd.cpu.HAVE_VNNI` / :data:`~dspsim.simd.cpu.HAVE_AVX2` is true.
"""
from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from ._ir import _F32, _I1, _I8, _I16, _I32, _I64, _c, _splat
from .requant_lanes import fixed_lanes, float_bounds, float_lanes


MR = 6
"""Rows of A per tile (one 4-byte broadcast each per k-step)."""
NV = 4
"""Most 16-column vectors per tile; VNNI holds ``MR * NV`` accumulators plus ``NV`` B vectors in 32 zmm."""
NR = 16 * NV
"""Widest packing panel (columns of B per tile); narrower weights get ``16 * ceil(N / 16)``."""



_LLVM = llvm.llvm_version_info[0]
_V16 = ir.VectorType(_I32, 16)
_V16F = ir.VectorType(_F32, 16)
# LLVM 22 types vpdpbusd's byte operands as <64 x i8>, older releases as <16 x i32>; LLVM 15 moved
# to opaque pointers, which changed the masked store's mangled name.
_OPND = ir.VectorType(_I8, 64) if _LLVM >= 22 else _V16
_ELEM = {types.int32: _I32, types.int16: _I16, types.int8: _I8, types.uint8: _I8}
"""The IR element type of each output array dtype the tiles store."""


def _masked_store_name(elem):
    """The masked store of 16 ``elem`` lanes: LLVM 15 moved to opaque pointers, which changed its mangled name."""
    vec = f"v16i{elem.width}"
    return f"llvm.masked.store.{vec}." + ("p0" if _LLVM >= 15 else f"p0{vec}")


class _Tile:
    """Pointers and loop-invariant vectors shared by the tiles' prologue and epilogue."""

    def __init__(self, context, builder, signature, args, b_elem, codes=False):
        """``b_elem``: the IR type of ``bp``'s entries (bytes for VNNI, int16 for AVX2); ``codes``: store the int32
        sums into ``c`` (False) or their codes (True: ``c`` int8 / uint8 / int16; :class:`_FixedCodes` when
        ``scale``, argument 20, is 2-D, else :class:`_FloatCodes`)."""
        (a, rows, segs, k4, bp, b_off, c, c_off, ldc, mv, nv, col_add, col_mul, n0, row_add, m0, nvec, weighted,
         flip) = args[:19]
        at = signature.args
        self.builder = b = builder

        def data(i, arr, elem):
            ptr = context.make_array(at[i])(context, builder, arr).data
            return b.bitcast(ptr, elem.as_pointer())

        def i64(i, v):
            return context.cast(builder, v, at[i], types.int64)

        self.segp = data(2, segs, _I64)
        self.nseg = cgutils.unpack_tuple(b, context.make_array(at[2])(context, builder, segs).shape, 1)[0]
        self.k4 = i64(3, k4)
        self.bbase = b.gep(data(4, bp, b_elem), [b_off])
        abase = data(0, a, _I8)
        rowp = data(1, rows, _I64)
        self.row_ptrs = [b.gep(abase, [b.load(b.gep(rowp, [_c(r)]))]) for r in range(MR)]
        self.out_elem = _ELEM[at[6].dtype]
        self.cbase = b.gep(data(6, c, self.out_elem), [c_off])
        self.ldc = i64(8, ldc)
        self.mv = i64(9, mv)
        self.nvec = i64(16, nvec)
        self.weighted = i64(17, weighted)
        # the byte XORed into each of A's bytes, in all four bytes of a k-step's word
        flip8 = context.cast(builder, flip, at[18], types.uint8)
        self.flip_word = b.mul(b.zext(flip8, _I32), ir.Constant(_I32, 0x01010101))
        cadd = b.gep(data(11, col_add, _I32), [n0])
        cmul = b.gep(data(12, col_mul, _I32), [n0])
        self.radd = b.gep(data(14, row_add, _I32), [m0])
        self.nv = i64(10, nv)
        # Vectors to compute: those holding stored columns (a narrow last panel computes fewer).
        self.nrun = b.sdiv(b.add(self.nv, _c(15)), _c(16))
        self.nvs = _splat(b, b.trunc(self.nv, _I32), _V16)
        self.cadd, self.cmul = cadd, cmul
        out_vec = ir.VectorType(self.out_elem, 16)
        self.masked_store = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [out_vec, out_vec.as_pointer(), _I32, ir.VectorType(_I1, 16)]),
            _masked_store_name(self.out_elem))
        fixed = codes and isinstance(at[20], types.Array) and at[20].ndim == 2
        self.codes = (_FixedCodes if fixed else _FloatCodes)(context, builder, signature, args) if codes else None

    def k_loops(self, bbase, step_len, mr=MR):
        """Nested loops over segments and 4-byte k-steps; yields (the first ``mr`` A row pointers as i8*
        of this step, ``bbase + step * step_len``: the B step pointer)."""
        b = self.builder
        with cgutils.for_range(b, self.nseg) as sloop:
            soff = b.load(b.gep(self.segp, [sloop.index]))
            with cgutils.for_range(b, self.k4) as kloop:
                step = b.add(b.mul(sloop.index, self.k4), kloop.index)
                bk = b.gep(bbase, [b.mul(step, step_len)])
                arows = [b.gep(p, [b.add(soff, b.mul(kloop.index, _c(4)))]) for p in self.row_ptrs[:mr]]
                yield arows, bk

    def store(self, r, vecs, v0):
        """Row ``r``: :meth:`store_terms` with the ``row_add * col_mul`` term only when ``weighted`` (the
        weights have a zero point; TFLite's symmetric weights have none, and skip the multiply)."""
        b = self.builder
        with b.if_else(b.icmp_signed("!=", self.weighted, _c(0))) as (with_rows, without):
            for block, flag in ((with_rows, True), (without, False)):
                with block:
                    self.store_terms(r, vecs, v0, flag)

    def store_terms(self, r, vecs, v0, weighted):
        """Row ``r`` (if ``r < mv``): ``vecs[i]`` (the sums of columns ``16 * (v0 + i)`` on, 16 each;
        ``v0`` an int or an i64 IR value) + the zero-point terms."""
        b = self.builder
        v0 = _c(v0) if isinstance(v0, int) else v0
        with b.if_then(b.icmp_signed("<", _c(r), self.mv)):
            rvs = _splat(b, b.load(b.gep(self.radd, [_c(r)])), _V16)
            crow = b.gep(self.cbase, [b.mul(_c(r), self.ldc)])
            cols = [b.mul(b.add(v0, _c(i)), _c(16)) for i in range(len(vecs))]
            vals = []
            for vec, col in zip(vecs, cols):
                # The column terms are read here (L1), not held in registers across the k-loops.
                add, mul = (b.load(b.bitcast(b.gep(p, [col]), _V16.as_pointer()), align=4)
                            for p in (self.cadd, self.cmul))
                val = b.add(vec, add)
                vals.append(b.add(val, b.mul(rvs, mul)) if weighted else val)
            if self.codes is not None:  # the row's vectors together: one branch per row, not per vector
                vals = self.codes.codes(b, vals, cols)
            for val, col in zip(vals, cols):
                ptr = b.bitcast(b.gep(crow, [col]), val.type.as_pointer())
                with b.if_else(b.icmp_signed(">=", self.nv, b.add(col, _c(16)))) as (full, partial):
                    with full:
                        b.store(val, ptr, align=self.out_elem.width // 8)
                    with partial:
                        lane_cols = b.add(_splat(b, b.trunc(col, _I32), _V16), ir.Constant(_V16, list(range(16))))
                        mask = b.icmp_signed("<", lane_cols, self.nvs)
                        b.call(self.masked_store, [val, ptr, ir.Constant(_I32, self.out_elem.width // 8), mask])


    def branch(self, selector, cases, emit):
        """``switch (selector)``: one block per value in ``cases`` (the last one is the default),
        each filled by ``emit(value)``."""
        b = self.builder
        end = b.append_basic_block("tile.join")
        blocks = [b.append_basic_block(f"tile.case{v}") for v in cases]
        switch = b.switch(selector, blocks[-1])
        for v, block in zip(cases[:-1], blocks):
            switch.add_case(_c(v), block)
        for v, block in zip(cases, blocks):
            b.position_at_end(block)
            emit(v)
            b.branch(end)
        b.position_at_end(end)


class _Codes:
    """The requantization of a tile's sums in its registers, 16 lanes at a time, from the requantizing tile's
    arguments 19 on: ``bias``, ``scale``, ``zp``, ``lo``, ``hi``, ``clamp_in_float`` (see
    :func:`tile_vnni_requant`); :meth:`values` (a subclass's) gives the int32 values before the code's clamp."""

    def __init__(self, context, builder, signature, args):
        from .requant_lanes import clamped_codes  # that module builds on this one's IR helpers
        b = builder
        at = signature.args
        self.n0 = context.cast(b, args[13], at[13], types.int64)
        zp, lo, hi = (_splat(b, context.cast(b, args[i], at[i], types.int32), _V16) for i in (21, 22, 23))
        self.zp, self.q_lo, self.q_hi = zp, b.sub(lo, zp), b.sub(hi, zp)
        self.elem = _ELEM[at[6].dtype]
        self.clamped_codes = clamped_codes

    def codes(self, b, accs, cols):
        """The codes ``min(max(q, lo - zp), hi - zp) + zp`` (16 each, in the output's type) of the int32 sums
        ``accs[i]`` of columns ``n0 + cols[i]`` on: the clamp before ``+ zp``, so nothing wraps."""
        return [self.clamped_codes(b, q, self.zp, self.q_lo, self.q_hi, self.elem) for q in self.values(b, accs, cols)]


class _FloatCodes(_Codes):
    """The float-scale schemes: :func:`dspsim.simd.requant_lanes.requantize_float_row`'s float operations in
    zmm. ``bias`` ``()`` (no float bias) or ``(bias_a, bias_b)``, ``scale``: float32 arrays read from ``n0``, like
    ``col_add``."""

    def __init__(self, context, builder, signature, args):
        super().__init__(context, builder, signature, args)
        b = builder
        at = signature.args

        def column_ptr(arr, t):
            return b.gep(b.bitcast(context.make_array(t)(context, b, arr).data, _F32.as_pointer()), [self.n0])

        bias_types = at[19].types
        bias = cgutils.unpack_tuple(b, args[19], len(bias_types))
        self.bias = [column_ptr(v, t) for v, t in zip(bias, bias_types)] or None
        self.scale = column_ptr(args[20], at[20])
        self.f_lo, self.f_hi = float_bounds(b, self.q_lo, self.q_hi, context.cast(b, args[24], at[24], types.boolean))
        self.float_lanes = float_lanes

    def values(self, b, accs, cols):
        def load(ptr, col):
            return b.load(b.bitcast(b.gep(ptr, [col]), _V16F.as_pointer()), align=4)

        return [self.float_lanes(b, acc, None if self.bias is None else [load(p, col) for p in self.bias],
                                 load(self.scale, col), self.f_lo, self.f_hi) for acc, col in zip(accs, cols)]


class _FixedCodes(_Codes):
    """TFLite's fixed-point scheme (gemmlowp's roundings): :func:`dspsim.simd.requant_lanes.fixed_lanes` in zmm,
    ``scale`` the int32 ``(LANE_ROWS, columns)`` array of :func:`~dspsim.simd.requant_lanes.lane_parameters`, read
    from column ``n0``; ``bias`` ``()``, ``clamp_in_float`` unused."""

    def __init__(self, context, builder, signature, args):
        super().__init__(context, builder, signature, args)
        b = builder
        params = context.make_array(signature.args[20])(context, b, args[20])
        self.row_len = cgutils.unpack_tuple(b, params.shape, 2)[1]
        self.p_base = b.gep(b.bitcast(params.data, _I32.as_pointer()), [self.n0])
        self.fixed_lanes = fixed_lanes

    def values(self, b, accs, cols):
        def param(row, k, vt):
            ptr = b.gep(self.p_base, [b.add(b.mul(self.row_len, _c(row)), cols[k])])
            return b.load(b.bitcast(ptr, vt.as_pointer()), align=4)

        return self.fixed_lanes(b, accs, param, self.elem.width == 8)


_TILE_DOC = """One ``MR x nr`` tile: ``c[c_off + r*ldc + j] = sum + col_add[n0+j] + row_add[m0+r]*col_mul[n0+j]``
    (the last term only when ``weighted`` is non-zero: otherwise ``col_mul`` must be zero).

    ``sum = sum_s sum_{q < 4*k4} (a[rows[r] + segs[s] + q] ^ flip) * B[s*4*k4 + q, j]`` with ``a`` uint8 (the
    AVX2 tiles ignore ``flip``: :func:`tile_avx2` reads the bytes as uint8, :func:`tile_avx2_signed` as int8,
    so its sum is the flip = 0x80 sum less ``128 * sum_q B[q, j]``, which the caller adds to ``col_add``) and
    ``B`` the panel at ``bp[b_off:]``: int8 ``bp[b_off + ((s*k4 + q//4)*nr + j)*4 + q%4]`` (VNNI), int16
    pairs (AVX2, :meth:`~dspsim.kernels.mac.gemm.PackedWeights.pairs`); ``nr = 16 * nvec`` (the panel's
    width; only the ``ceil(nv / 16)`` vectors holding columns ``j < nv`` are computed); rows ``r >= mv``
    and columns ``j >= nv`` are not stored (their ``rows`` entries must still point at readable
    memory); ``col_add`` and ``col_mul`` are read for ``NR`` columns from ``n0``.
    """


def _vnni_codegen(context, builder, signature, llargs, codes):
    """The VNNI tile's IR; ``codes``: store the float-scale codes (:class:`_FloatCodes`), not the int32 sums."""
    t = _Tile(context, builder, signature, llargs, _I8, codes)
    b = builder
    dpbusd = cgutils.get_or_insert_function(
        b.module, ir.FunctionType(_V16, [_V16, _OPND, _OPND]), "llvm.x86.avx512.vpdpbusd.512")

    # The flip in every lane, hidden from LLVM's optimizer (an empty inline asm): it would otherwise turn
    # xor(splat(load), splat(flip)) back into splat(xor(load, flip)): a scalar load, xor and a GPR -> zmm
    # vpbroadcastd per row and k-step, instead of one vpxord with the broadcast load folded in ({1to16}). The
    # same speed on Zen 4 (vpdpbusd-bound, double-pumped); fewer uops on Intel's port 5 (not measured there).
    flip_vec = b.asm(ir.FunctionType(_V16, [_V16]), "", "=v,0", [_splat(b, t.flip_word, _V16)], False)

    def emit_rows(nvec, mr):
        # Accumulators live in allocas that LLVM's mem2reg turns into zmm registers.
        accs = [[cgutils.alloca_once_value(b, ir.Constant(_V16, [0] * 16)) for _ in range(nvec)] for _ in range(mr)]
        for arows, bk in t.k_loops(t.bbase, b.mul(t.nvec, _c(64))):  # the panel's own width
            bvec = [b.load(b.bitcast(b.gep(bk, [_c(64 * v)]), _OPND.as_pointer()), align=1) for v in range(nvec)]
            for r in range(mr):
                word = b.load(b.bitcast(arows[r], _I32.as_pointer()), align=1)
                splat = b.bitcast(b.xor(_splat(b, word, _V16), flip_vec), _OPND)
                for v in range(nvec):
                    b.store(b.call(dpbusd, [b.load(accs[r][v]), splat, bvec[v]]), accs[r][v])
        for r in range(mr):
            t.store(r, [b.load(accs[r][v]) for v in range(nvec)], 0)

    t.branch(t.nrun, list(range(1, NV + 1)),
             lambda nvec: t.branch(t.mv, list(range(1, MR + 1)), lambda mr: emit_rows(nvec, mr)))
    return context.get_dummy_value()


@intrinsic
def tile_vnni(typingctx, a, rows, segs, k4, bp, b_off, c, c_off, ldc, mv, nv, col_add, col_mul, n0, row_add, m0,
              nvec, weighted, flip):
    def codegen(context, builder, signature, llargs):
        return _vnni_codegen(context, builder, signature, llargs, False)

    sig = types.void(a, rows, segs, k4, bp, b_off, c, c_off, ldc, mv, nv, col_add, col_mul, n0, row_add, m0, nvec,
                     weighted, flip)
    return sig, codegen


@intrinsic
def tile_vnni_requant(typingctx, a, rows, segs, k4, bp, b_off, c, c_off, ldc, mv, nv, col_add, col_mul, n0, row_add,
                      m0, nvec, weighted, flip, bias, scale, zp, lo, hi, clamp_in_float):
    """:func:`tile_vnni` with the requantization in its registers: ``c`` (int8 / uint8 / int16) takes the codes
    of the int32 values the plain tile stores, ``zp``, ``lo``, ``hi`` inside the output type. No int32 block is
    stored and read back.

    * a float-scale scheme (:class:`_FloatCodes`): the codes of :func:`dspsim.simd.requant_lanes.requantize_float_row`,
      ``bias`` ``()`` (no float bias) or ``(bias_a, bias_b)``, ``scale`` (float32 arrays read for ``NR`` columns
      from ``n0``, as ``col_add``) and ``clamp_in_float``;
    * TFLite's fixed-point scheme (:class:`_FixedCodes`, ``scale`` 2-D): those of
      :func:`dspsim.simd.requant_lanes.requantize_rows`, ``scale`` the int32
      :func:`~dspsim.simd.requant_lanes.lane_parameters` with ``NR`` columns from ``n0`` on, ``bias`` ``()``;
      ``clamp_in_float`` is not read."""
    def codegen(context, builder, signature, llargs):
        return _vnni_codegen(context, builder, signature, llargs, True)

    sig = types.void(a, rows, segs, k4, bp, b_off, c, c_off, ldc, mv, nv, col_add, col_mul, n0, row_add, m0, nvec,
                     weighted, flip, bias, scale, zp, lo, hi, clamp_in_float)
    return sig, codegen


def _make_tile_avx2(signed):
    """The AVX2 tile reading A's bytes as uint8 (zero-extended) or, ``signed``, as int8 (sign-extended)."""

    @intrinsic
    def tile(typingctx, a, rows, segs, k4, bp, b_off, c, c_off, ldc, mv, nv, col_add, col_mul, n0, row_add, m0,
             nvec, weighted, flip):
        def codegen(context, builder, signature, llargs):
            t = _Tile(context, builder, signature, llargs, _I16)
            b = builder
            v8, v16w = ir.VectorType(_I32, 8), ir.VectorType(_I16, 16)
            pmaddwd = cgutils.get_or_insert_function(b.module, ir.FunctionType(v8, [v16w, v16w]),
                                                     "llvm.x86.avx2.pmadd.wd")
            slice_len = b.mul(b.mul(t.nseg, t.k4), _c(64))  # int16 entries of one 16-column slice
            low_bytes = ir.Constant(v16w, [0xFF] * 16)
            eight = ir.Constant(v16w, [8] * 16)

            def rows_block(mr):
                # All mr rows at once: acc[r][h] lane j = the sum of column 16v + 8h + j (no reduction).
                with cgutils.for_range(b, t.nrun) as vloop:
                    bslice = b.gep(t.bbase, [b.mul(vloop.index, slice_len)])
                    accs = [[cgutils.alloca_once_value(b, ir.Constant(v8, [0] * 8)) for _ in range(2)]
                            for _ in range(mr)]
                    for arows, bk in t.k_loops(bslice, _c(64), mr):
                        for r in range(mr):
                            # A's 4 bytes in every lane (one broadcast load), split into int16 pairs
                            # (a0, a2) and (a1, a3): B holds (k0, k2) and (k1, k3) pairs to match.
                            four = b.load(b.bitcast(arows[r], _I32.as_pointer()), align=1)
                            words = b.bitcast(_splat(b, four, v8), v16w)
                            if signed:  # the bytes sign-extended: (u - 128) * b summed, see _TILE_DOC
                                pairs = (b.ashr(b.shl(words, eight), eight), b.ashr(words, eight))
                            else:
                                pairs = (b.and_(words, low_bytes), b.lshr(words, eight))
                            for e, pat in enumerate(pairs):
                                for h in range(2):
                                    bv = b.load(b.bitcast(b.gep(bk, [_c(32 * e + 16 * h)]), v16w.as_pointer()),
                                                align=2)
                                    b.store(b.add(b.load(accs[r][h]), b.call(pmaddwd, [pat, bv])), accs[r][h])
                    for r in range(mr):
                        lo, hi = (b.load(accs[r][h]) for h in range(2))
                        t.store(r, [b.shuffle_vector(lo, hi, ir.Constant(ir.VectorType(_I32, 16), list(range(16))))],
                                vloop.index)

            t.branch(t.mv, list(range(1, MR + 1)), rows_block)
            return context.get_dummy_value()

        sig = types.void(a, rows, segs, k4, bp, b_off, c, c_off, ldc, mv, nv, col_add, col_mul, n0, row_add, m0, nvec,
                         weighted, flip)
        return sig, codegen

    return tile


tile_avx2 = _make_tile_avx2(False)
tile_avx2_signed = _make_tile_avx2(True)

tile_vnni.__doc__ = tile_avx2.__doc__ = tile_avx2_signed.__doc__ = _TILE_DOC
