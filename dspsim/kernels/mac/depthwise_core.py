"""The depthwise convolution core: weights prepared once, int32 sums by ``vpmaddwd`` tap pairs.

:func:`prepare_depthwise_weights` turns TFLite depthwise weights into :class:`DepthwiseWeights` once
per layer; :func:`depthwise_accumulate` is the per-call core. Both take validated arguments only
(the public ``dspsim.depthwise_conv2d`` validates).

The sum of output channel ``oc = ic*M + m`` at output pixel ``(b, oy, ox)`` is TFLite's
``bias[oc] + sum over the taps inside the input of (x - zx) * (w - zw[oc])``. The tap-pair path
(AVX2, int32) computes it as ``(bias[oc] - zx * sum_taps (w - zw)) + sum_taps x * (w - zw)``
over every tap of an input padded with the code ``zx`` (a padding tap adds ``(zx - zx) * w = 0``,
exactly what TFLite's skipped tap adds); the first term once per call, the second with raw codes.
Two taps at a time: their bytes are interleaved and widened to int16, and one ``vpmaddwd`` against
the interleaved weights adds both products of 8 channels (ymm, AVX2) or 16 (zmm, AVX-512 BW: the level
``dspsim.simd.cpu.LEVEL`` chooses; ``vpdpwssd`` on a VNNI target) into int32 lanes (an odd last tap is
paired with a zero weight). Each product is at most ``255 * 255`` in magnitude and a pair at most
``2 * 255 * 255 < 2^31``: exact; the int32 lane adds wrap modulo 2^32 like a C ``int32`` accumulator
(``-fwrapv``), so the result is exact modulo 2^32, as the bias-first TFLite sum is. Output pixels
whose inputs are adjacent (a row at stride 1; a (T, 1, C) stream under a (KH, 1) kernel) are one run
worked 16 values at a time across pixel boundaries, so C = 8 fills the vectors too (a row at a larger stride with
C % 16 = 0 is one run too, its blocks skipping the pixels between two of its pixels); a run's (or a pixel's)
last ``n % 16`` values take one more block over its last 16 values, overlapping the previous one (the same sums
recomputed), so C = 30 or 60 stays in the pairs. A depth multiplier ``M > 1`` takes the pairs on the input with
each channel repeated M times (:func:`expand_channels`: micro_speech's 1 -> 8 channel layer, 198 -> 42 us). Hosts
without AVX2 (or the ``plain`` level), ``NUMBA_DISABLE_JIT`` and ``exact_bits = 64`` (a wide accumulator model that
needs the exact value, summed in int64) take a direct loop over the valid taps, vectorised by LLVM
(``vpmulld``). A padded input is read in place where a pixel's taps are all inside it and through a patch of the
pixel's taps elsewhere, or, where those patches would copy more than the padded input (small images), through a
cache-sized window of padded rows (:data:`RING_BYTES`; :func:`_read_mode`).

:func:`prepare_depthwise_requantize` (a prepared layer: ``dspsim.kernels.depthwise_conv2d_plan``) fuses
the requantization into the pairs' store: each block of about :data:`CHUNK_VALUES` sums is requantized
while it is in L1, by the int32 lanes of ``"double"`` or the float32 lanes of ``"fbgemm"``,
``"onnxruntime"`` and ``"xnnpack"`` (:mod:`dspsim.simd.requant_lanes`), and the codes are the only output.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic

from ..._jit import parallel_rows
from ...fixedpoint import wrap_scalar
from ...simd import requant_lanes
from ...simd.cpu import HAVE_AVX2, HAVE_AVX512

_I8, _I16, _I32, _I64 = (ir.IntType(b) for b in (8, 16, 32, 64))
USE_PAIRS = HAVE_AVX2 and not numba.config.DISABLE_JIT
"""Whether int32 sums take the ``vpmaddwd`` tap pairs (compiled code for an AVX2 target, ``DSPSIM_SIMD`` not
``plain``); zmm pairs where :data:`dspsim.simd.cpu.HAVE_AVX512`."""


LINE = 64
"""The bytes of a cache line: the arrays that the tap pairs read or write a vector at a time start on one, so no zmm
load or store splits across two lines (weights 16 or 48 bytes off one: 1.10-1.15x the time on Zen 4)."""


def _aligned(a):
    """A C-contiguous copy of ``a`` whose data starts on a :data:`LINE` (a view into a slightly larger buffer)."""
    buf = np.empty(a.nbytes + LINE, np.uint8)
    start = -buf.ctypes.data % LINE
    out = buf[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


@njit(cache=True)
def _aligned_int32(n):
    """``np.empty(n, np.int32)`` starting on a :data:`LINE` (numba's own arrays start 32 bytes into one)."""
    raw = np.empty(n + LINE // 4, np.int32)
    start = (LINE - raw.ctypes.data % LINE) % LINE // 4
    return raw[start:start + n]


@dataclass(frozen=True)
class DepthwiseWeights:
    """Depthwise weights prepared once per layer (:func:`prepare_depthwise_weights`).

    Attributes
    ----------
    taps : ndarray (KH, KW, OC) of int32
        ``w - zw`` per output channel (the direct loop's weights; |value| <= 255).
    taps64 : ndarray (KH, KW, OC) of int64
        The same in int64, for the exact int64 sums.
    tap_sum : ndarray (OC,) of int64
        ``sum over all taps of (w - zw)``: the pairs' zero-point term is ``zx * tap_sum``.
    pairs16 : ndarray (lcm(C, 16) / 16, P, 32) of int16
        For the ``vpmaddwd`` pairs, ``P = ceil(KH*KW / 2)``, over one period of the channels of a run of
        adjacent pixels: entry ``[k, p, 2j + h]`` is the weight of tap ``2p + h`` (taps in (fy, fx) order;
        0 past the last) of channel ``(16k + j) % C``.
    pairs8 : ndarray (2 or 0, P, 16) of int16
        The same for the channels ``0..7`` and ``C-8..C-1`` of one pixel when ``8 <= C < 16`` (else empty).
    depth_multiplier : int
    """

    taps: np.ndarray
    taps64: np.ndarray
    tap_sum: np.ndarray
    pairs16: np.ndarray
    pairs8: np.ndarray
    depth_multiplier: int

    @property
    def kernel(self) -> tuple:
        """(KH, KW)."""
        return self.taps.shape[0], self.taps.shape[1]


def prepare_depthwise_weights(w, weight_zero_point, depth_multiplier=1) -> DepthwiseWeights:
    """Prepare signed depthwise weights once per layer for :func:`depthwise_accumulate`.

    Parameters
    ----------
    w : int8 array (KH, KW, OC), ``OC = C * depth_multiplier``, output channel ``oc = ic*M + m``
        (TFLite's ``(1, KH, KW, OC)`` without its leading 1; uint8 weights enter as ``w - 128`` with
        zero points ``zw - 128``, which keeps every difference).
    weight_zero_point : int array (OC,)
    depth_multiplier : int >= 1
    """
    k_h, k_w, n_oc = w.shape
    diff = w.astype(np.int64) - np.asarray(weight_zero_point, np.int64).reshape(1, 1, n_oc)
    flat = diff.reshape(k_h * k_w, n_oc)
    n_pairs = (k_h * k_w + 1) // 2
    padded = np.zeros((2 * n_pairs, n_oc), np.int16)
    padded[:k_h * k_w] = flat
    # [pair, h, channel] -> [channel block, pair, channel in block, h]
    c = n_oc  # the pairs see an input of M > 1 with every channel repeated M times (expand_channels)
    period = c * 16 // math.gcd(c, 16) // 16  # blocks of 16 in one period of the channels
    pairs = padded.reshape(n_pairs, 2, n_oc)
    pairs16 = pairs[:, :, np.arange(16 * period) % c].reshape(n_pairs, 2, period, 16).transpose(2, 0, 3, 1)
    eights = np.r_[0:8, c - 8:c] if 8 <= c < 16 else np.arange(0)  # a pixel's first and last 8 channels
    pairs8 = pairs[:, :, eights].reshape(n_pairs, 2, eights.size // 8, 8).transpose(2, 0, 3, 1)
    pairs16 = pairs16.reshape(period, n_pairs, 32)
    pairs8 = pairs8.reshape(eights.size // 8, n_pairs, 16)
    return DepthwiseWeights(np.ascontiguousarray(diff.astype(np.int32)), np.ascontiguousarray(diff),
                            flat.sum(axis=0), _aligned(pairs16), _aligned(pairs8),
                            int(depth_multiplier))


# --------------------------------------------------------------------------------------------
# the vpmaddwd tap pairs (LLVM IR)
# --------------------------------------------------------------------------------------------
def _pair_sums(width, lanes, group, skipping=False):
    """An intrinsic ``f(x, base, offs, n_pairs, w, w_off, init, init_off, acc, acc_off, n_blocks, period)``, with a
    last argument ``skip`` when ``skipping`` (else ``skip = 0``):

    for ``n_blocks`` blocks of ``width`` (8 or 16) channels, block ``k`` of phase ``q = k % period``:
    ``acc[acc_off + width*k + j] = init[init_off + width*q + j] + sum_p sum_h x[base + width*k + skip*(k // period)
    + offs[2p + h] + j] * w[w_off + (q*n_pairs + p)*2*width + 2j + h]`` (int32, wrapping): the input skips ``skip``
    values at each wrap of the phase (the pixels a stride passes over), ``x`` int8 or uint8 (sign- or zero-extended),
    ``w`` int16. ``lanes`` int32 lanes per ``vpmaddwd`` + ``vpaddd``: 8 (AVX2, ymm) or 16 (AVX-512 BW, zmm); on an
    AVX-512 VNNI target LLVM fuses the two into ``vpdpwssd`` (the same int32 sums: each pair sum is exact and the
    lane add wraps, as ``vpaddd``). Blocks go ``group`` (a power of 2) at a time through the pairs (their sums in
    registers), the last ``n_blocks % group`` in groups of ``group / 2``, ``group / 4``, ..., 1. Without ``skip`` the
    blocks of a group are constant displacements from one pointer (a ``skip`` variable in their offsets costs
    registers in the pairs loop: 1.07-1.10x the time of 7x7x960 and 14x14x384 runs on Zen 4).
    Never raises; reads only the addressed elements.
    """
    halves = width // lanes  # instructions per block
    vacc, vw, vx = ir.VectorType(_I32, lanes), ir.VectorType(_I16, 2 * lanes), ir.VectorType(_I8, width)
    name = {8: "llvm.x86.avx2.pmadd.wd", 16: "llvm.x86.avx512.pmaddw.d.512"}[lanes]

    def code_for(signed):
        def codegen(context, builder, signature, args):
            b = builder
            at = signature.args

            def data(i, elem):
                ptr = context.make_array(at[i])(context, builder, args[i]).data
                return b.bitcast(ptr, elem.as_pointer())

            def i64(i):
                return context.cast(builder, args[i], at[i], types.int64)

            xp, op, wp, ip, ap = data(0, _I8), data(2, _I64), data(4, _I16), data(6, _I32), data(8, _I32)
            base_, npairs, woff, ioff, aoff, nblk, nper = i64(1), i64(3), i64(5), i64(7), i64(9), i64(10), i64(11)
            nskip = i64(12) if skipping else None
            madd = cgutils.get_or_insert_function(b.module, ir.FunctionType(vacc, [vw, vw]), name)
            ext = b.sext if signed else b.zext
            c = lambda v: ir.Constant(_I64, v)  # noqa: E731

            def wrap_phase(q):  # (q + 1) % period
                nxt = b.add(q, c(1))
                return b.select(b.icmp_signed("==", nxt, nper), c(0), nxt)

            def next_x(xo, q):  # the input offset of the block after the one at xo, the next of phase q
                return b.add(b.add(xo, c(width)), b.select(b.icmp_signed("==", q, c(0)), nskip, c(0)))

            def blocks(k, phases, x_offs):
                """Blocks k, k+1, ... of the given phases, at x_offs in the input, their sums in registers across the
                pairs loop."""
                accs, xks, wks = [], [], []
                for g, q in enumerate(phases):
                    for h in range(halves):
                        ptr = b.gep(ip, [b.add(ioff, b.add(b.mul(q, c(width)), c(lanes * h)))])
                        accs.append(cgutils.alloca_once_value(b, b.load(b.bitcast(ptr, vacc.as_pointer()), align=4)))
                    at_g = x_offs[g] if skipping else b.mul(b.add(k, c(g)), c(width))
                    xks.append(b.gep(xp, [b.add(base_, at_g)]))
                    wks.append(b.gep(wp, [b.add(woff, b.mul(q, b.mul(npairs, c(2 * width))))]))
                with cgutils.for_range(b, npairs) as pl:
                    p = pl.index
                    oa = b.load(b.gep(op, [b.mul(p, c(2))]))
                    ob = b.load(b.gep(op, [b.add(b.mul(p, c(2)), c(1))]))
                    for g in range(len(phases)):
                        va = b.load(b.bitcast(b.gep(xks[g], [oa]), vx.as_pointer()), align=1)
                        vb = b.load(b.bitcast(b.gep(xks[g], [ob]), vx.as_pointer()), align=1)
                        wpp = b.gep(wks[g], [b.mul(p, c(2 * width))])
                        for h in range(halves):
                            idx = [i for j in range(lanes * h, lanes * (h + 1)) for i in (j, j + width)]
                            inter = ext(b.shuffle_vector(va, vb, ir.Constant(ir.VectorType(_I32, 2 * lanes), idx)), vw)
                            wv = b.load(b.bitcast(b.gep(wpp, [c(2 * lanes * h)]), vw.as_pointer()), align=2)
                            a = accs[g * halves + h]
                            b.store(b.add(b.load(a), b.call(madd, [inter, wv])), a)
                for g in range(len(phases)):
                    for h in range(halves):
                        ch = b.add(b.mul(b.add(k, c(g)), c(width)), c(lanes * h))
                        ptr = b.bitcast(b.gep(ap, [b.add(aoff, ch)]), vacc.as_pointer())
                        b.store(b.load(accs[g * halves + h]), ptr, align=4)

            # `group` blocks per pass over the pairs (each tap offset loaded once, more independent sums), then
            # the last nblk % group in groups of group/2, group/4, ..., 1
            phase = cgutils.alloca_once_value(b, c(0))
            k = cgutils.alloca_once_value(b, c(0))
            x_at = cgutils.alloca_once_value(b, c(0))  # the input offset of block k

            def pass_of(size):
                qs, xs = [b.load(phase)], [b.load(x_at)]
                for _ in range(size):
                    qs.append(wrap_phase(qs[-1]))
                    if skipping:
                        xs.append(next_x(xs[-1], qs[-1]))
                b.store(qs[-1], phase)
                if skipping:
                    b.store(xs[-1], x_at)
                k0 = b.load(k)
                b.store(b.add(k0, c(size)), k)
                blocks(k0, qs[:-1], xs[:-1])

            with cgutils.for_range(b, b.sdiv(nblk, c(group))):
                pass_of(group)
            size = group // 2
            while size:
                with b.if_then(b.icmp_signed("!=", b.and_(b.srem(nblk, c(group)), c(size)), c(0))):
                    pass_of(size)
                size //= 2
            return context.get_dummy_value()

        return codegen

    if skipping:
        def generate(typingctx, x, base, offs, n_pairs, w, w_off, init, init_off, acc, acc_off, n_blocks, period,
                     skip):
            sig = types.void(x, base, offs, n_pairs, w, w_off, init, init_off, acc, acc_off, n_blocks, period, skip)
            return sig, code_for(x.dtype == types.int8)
    else:
        def generate(typingctx, x, base, offs, n_pairs, w, w_off, init, init_off, acc, acc_off, n_blocks, period):
            sig = types.void(x, base, offs, n_pairs, w, w_off, init, init_off, acc, acc_off, n_blocks, period)
            return sig, code_for(x.dtype == types.int8)

    generate.__name__ = f"_pair_sums{width}" + ("_skip" if skipping else "")
    return intrinsic(generate)


# Compiled only when called: on a target of the level (USE_PAIRS); a global that the cached _pair_rows reads,
# kept apart per level by dspsim.simd.cpu's cache directory.
# 8 accumulators: 8 blocks of 16 channels in zmm, 4 in ymm pairs (2 blocks, 4 ymm: 7% slower at 56x56x64 3x3 on
# Zen 4; zmm and ymm at 8 accumulators alike there, docs/engines.md); _pair_sums8 takes one block a call
_pair_sums16 = _pair_sums(16, 16, 8) if HAVE_AVX512 else _pair_sums(16, 8, 4)
_pair_sums16_skip = _pair_sums(16, 16, 8, True) if HAVE_AVX512 else _pair_sums(16, 8, 4, True)
_pair_sums8 = _pair_sums(8, 8, 1)


# --------------------------------------------------------------------------------------------
# the per-call core
# --------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _pixel_direct(xf, row0, in_h, in_w, c, taps, zx, bias, mult, iy0, ix0, dil_h, dil_w, acc, a0):
    """``acc[a0 + oc] = bias[oc] + sum over the valid taps of (x - zx) * taps[fy, fx, oc]`` of the pixel whose
    first tap reads input row ``row0 + iy0`` (``row0 = b * H``), column ``ix0``, in ``acc``'s dtype (int32
    wrapping, or int64). Slices (not ``a0 + i`` indices, which numba wraps when negative) let LLVM vectorize."""
    n_oc = bias.shape[0]
    bits = 8 * acc.itemsize  # the sums wrap to acc's width (explicitly: NUMBA_DISABLE_JIT runs this in numpy)
    a = acc[a0:a0 + n_oc]
    for oc in range(n_oc):
        a[oc] = bias[oc]
    for fy in range(taps.shape[0]):
        iy = iy0 + dil_h * fy
        if iy < 0 or iy >= in_h:
            continue
        for fx in range(taps.shape[1]):
            ix = ix0 + dil_w * fx
            if ix < 0 or ix >= in_w:
                continue
            x0 = ((row0 + iy) * in_w + ix) * c
            xpix = xf[x0:x0 + c]
            wrow = taps[fy, fx]
            if mult == 1:
                for i in range(c):
                    a[i] = wrap_scalar(a[i] + (np.int64(xpix[i]) - zx) * wrow[i], bits)
            else:
                for i in range(c):
                    xv = np.int64(xpix[i]) - zx
                    for m in range(mult):
                        a[i * mult + m] = wrap_scalar(a[i * mult + m] + xv * wrow[i * mult + m], bits)


@njit(cache=True, inline="always")
def _run_direct(xf, base, offs, n_taps, taps, k_w, init, c, acc, a0, q0, q1):
    """``acc[a0 + q] = init[q % C] + sum_t x[base + q + offs[t]] * taps[t // KW, t % KW, q % C]`` for ``q``
    in ``[q0, q1)`` of a run of adjacent interior pixels (the few channels the pairs leave), int32 wrapping."""
    for q in range(q0, q1):
        ch = q % c
        s = np.int64(init[ch])
        for t in range(n_taps):
            s += np.int64(xf[base + q + offs[t]]) * taps[t // k_w, t % k_w, ch]
        acc[a0 + q] = wrap_scalar(s, 32)


@njit(cache=True, inline="always")
def _short_run(img, base, offs, n_pairs, n_taps, taps, k_w, pairs8, init, c, sums, d0, n):
    """The sums of a run of ``n < 16`` values at ``img[base:]`` (whole pixels, channel 0 first) into ``sums[d0 + q]``:
    one pixel of ``8 <= C < 16`` as two overlapping 8-channel blocks (it recomputes ``16 - C`` sums, the same
    values; one block when C = 8), else directly (:func:`_run_direct`). Called only on this rare branch: an inlined call with array
    arguments costs their reference counts (~100 ns per call, a third of a 256-stream microWakeWord layer)."""
    if n == c and pairs8.shape[0] == 2:
        _pair_sums8(img, base, offs, n_pairs, pairs8, 0, init, 0, sums, d0, 1, 1)
        if c > 8:  # C = 8: the first block is the pixel
            _pair_sums8(img, base + c - 8, offs, n_pairs, pairs8, n_pairs * 16, init, c - 8, sums, d0 + c - 8, 1, 1)
    else:
        _run_direct(img, base, offs, n_taps, taps, k_w, init, c, sums, d0, 0, n)


@njit(cache=True, nogil=True)
def _direct_rows(xf, in_h, in_w, c, taps, zx, bias, mult, stride_h, stride_w, dil_h, dil_w, pad_t, pad_l, out_h,
                 out_w, acc, r0, r1):
    """Sums of output rows ``b*OH + oy`` in ``[r0, r1)`` into the flat ``acc``, pixel by pixel over the valid taps
    (``xf`` the flat NHWC input, ``bias`` int64; any depth multiplier, int32 wrapping or int64)."""
    n_oc = bias.shape[0]
    for r in range(r0, r1):
        b = r // out_h
        iy0 = (r % out_h) * stride_h - pad_t
        for ox in range(out_w):
            _pixel_direct(xf, b * in_h, in_h, in_w, c, taps, zx, bias, mult, iy0, ox * stride_w - pad_l, dil_h, dil_w,
                          acc, (r * out_w + ox) * n_oc)


@njit(cache=True, inline="always")
def _load_rows(xf, b, in_h, in_w, c, pad_t, pad_l, zx, buf, w_p, py0, py1):
    """Padded rows ``[py0, py1)`` of image ``b`` of the flat NHWC input ``xf`` (the image at (pad_t, pad_l)) into
    rows ``0, 1, ...`` of ``buf`` (rows of (WP, C) flat): a row outside the image all ``zx`` (a tap there adds
    ``(zx - zx) * w = 0``, as TFLite's skipped tap), else the image's columns only (the pad columns keep the
    ``zx`` the buffer starts with); input columns past ``WP`` are not read."""
    n_x = max(min(in_w, w_p - pad_l), 0) * c
    for py in range(py0, py1):
        row = buf[(py - py0) * w_p * c:(py - py0 + 1) * w_p * c]  # slices: plain memset / memcpy loops
        iy = py - pad_t
        if iy < 0 or iy >= in_h:
            for i in range(row.shape[0]):
                row[i] = zx
        else:
            src = xf[(b * in_h + iy) * in_w * c:(b * in_h + iy) * in_w * c + n_x]
            dst = row[pad_l * c:pad_l * c + n_x]
            for i in range(n_x):
                dst[i] = src[i]


@njit(cache=True, nogil=True)
def _store_lanes(blk, s0, p0, rows, n, lanes, out, o0):
    """The vector front of ``rows`` rows of ``n`` sums, row ``r`` at ``blk[s0 + r*n:]`` from lane position ``p0``,
    requantized into ``out[o0 + r*n:]`` by the lanes of :class:`StoreRequant` (``lanes[0]``: 1 the int32-lane fixed
    point, 2 the float lanes); returns how many of a row it did (``n - n % 8``). Not inlined: one compiled copy for
    every call site."""
    kind, _, _, fixed, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float = lanes
    src = blk[s0:]
    if kind == _FIXED_LANES:
        return requant_lanes.requantize_rows(src, n, rows, n, out, o0, n, fixed, p0, zp, lo, hi)
    return requant_lanes.requantize_float_rows(src, n, rows, n, out, o0, n, bias_a[p0:], bias_b[p0:], scale[p0:], zp,
                                               lo, hi, clamp_in_float)


@njit(cache=True, nogil=True, inline="always")
def _store_codes(blk, n, lanes, out, o0):
    """The ``n`` int32 sums ``blk[:n]`` (whole pixels from channel 0) requantized into ``out[o0:o0 + n]``, all in
    vector lanes: rows of ``lanes[2]`` values (a multiple of ``lcm(C, 16)``, each from lane position 0: the lane
    parameters of one row stay in L1), the rest (whole pixels) from lane position 0, a last ``n % 8`` by one more
    vector over the last 8 (it recomputes a few codes, the same; from lane position ``n - 8`` modulo a row, the
    parameters holding 8 positions past a row), fewer than 8 through 8 lanes of ``blk`` (which holds at least 16
    values; those past ``n`` are discarded) and a scratch vector."""
    if n >= 8:
        row = lanes[2]
        rows = n // row
        s0 = rows * row
        if rows > 0:
            _store_lanes(blk, 0, 0, rows, row, lanes, out, o0)
        if n - s0 >= 8:
            _store_lanes(blk, s0, 0, 1, n - s0, lanes, out, o0 + s0)
        if n % 8 != 0:
            _store_lanes(blk, n - 8, (n - 8) % row, 1, 8, lanes, out, o0 + n - 8)
    else:
        codes = np.empty(8, out.dtype)
        _store_lanes(blk, 0, 0, 1, 8, lanes, codes, 0)
        for i in range(n):
            out[o0 + i] = codes[i]


_IN_PLACE, _RING, _PATCHES = 0, 1, 2
"""How :func:`_pair_rows` reads its taps: the input in place (no padding), a window of padded rows (:func:`_load_rows`),
or the input in place where every tap of a pixel is inside and a patch of its taps (:func:`_load_patch`) elsewhere."""


@njit(cache=True, inline="always")
def _tap_offsets(k_h, k_w, dil_h, dil_w, width, c):
    """Tap ``t`` (in (fy, fx) order) of a pixel at ``image[pixel + offs[t]]`` in an image ``width`` pixels of ``C``
    wide, for ``2 * ceil(KH*KW / 2)`` taps: an odd last tap's partner repeats it."""
    n_taps = k_h * k_w
    offs = np.empty(2 * ((n_taps + 1) // 2), np.int64)
    for t in range(offs.shape[0]):
        tt = min(t, n_taps - 1)
        offs[t] = ((tt // k_w) * dil_h * width + (tt % k_w) * dil_w) * c
    return offs


@intrinsic
def _copy_bytes(typingctx, dst, d0, src, s0, n):
    """``dst[d0:d0 + n] = src[s0:s0 + n]`` (1-byte elements, ``llvm.memcpy``): no slices (each a reference count
    and its release in a per-pixel loop). Never raises; the caller keeps it in bounds."""
    def codegen(context, builder, signature, args):
        at = signature.args
        ptr = [builder.gep(context.make_array(at[i])(context, builder, args[i]).data,
                           [context.cast(builder, args[i + 1], at[i + 1], types.int64)]) for i in (0, 2)]
        cgutils.raw_memcpy(builder, ptr[0], ptr[1], context.cast(builder, args[4], at[4], types.int64), 1)
        return context.get_dummy_value()
    return types.void(dst, d0, src, s0, n), codegen


@intrinsic
def _fill_bytes(typingctx, dst, d0, n, value):
    """``dst[d0:d0 + n] = value`` (1-byte elements, ``llvm.memset``). Never raises; the caller keeps it in bounds."""
    def codegen(context, builder, signature, args):
        at = signature.args
        ptr = builder.gep(context.make_array(at[0])(context, builder, args[0]).data,
                          [context.cast(builder, args[1], at[1], types.int64)])
        byte = builder.trunc(context.cast(builder, args[3], at[3], types.int64), _I8)
        cgutils.memset(builder, ptr, context.cast(builder, args[2], at[2], types.int64), byte)
        return context.get_dummy_value()
    return types.void(dst, d0, n, value), codegen


@njit(cache=True, inline="always")
def _load_patch(xf, b, in_h, in_w, c, iy0, ix0, dil_h, k_h, k_cols, zx, patch):
    """The ``KH`` rows of ``k_cols`` pixels that the taps of the pixel whose first tap is input ``(iy0, ix0)`` of
    image ``b`` of the flat NHWC input ``xf`` read, into rows ``0, dil_h, 2*dil_h, ...`` of ``patch`` (rows of
    ``k_cols`` pixels of ``C``; :func:`_tap_offsets` of width ``k_cols``): the input's pixels, all ``zx`` outside the
    input (a tap there adds ``(zx - zx) * w = 0``, as TFLite's skipped tap). Other rows are neither written nor read."""
    x0, x1 = min(max(-ix0, 0), k_cols), max(min(in_w - ix0, k_cols), 0)  # the row's columns inside: [x0, x1)
    x1 = max(x0, x1)
    for fy in range(k_h):
        iy = iy0 + dil_h * fy
        d0 = fy * dil_h * k_cols * c
        if iy < 0 or iy >= in_h:
            _fill_bytes(patch, d0, k_cols * c, zx)
            continue
        _copy_bytes(patch, d0 + x0 * c, xf, ((b * in_h + iy) * in_w + ix0 + x0) * c, (x1 - x0) * c)
        if x0 > 0:
            _fill_bytes(patch, d0, x0 * c, zx)
        if x1 < k_cols:
            _fill_bytes(patch, d0 + x1 * c, (k_cols - x1) * c, zx)


@njit(cache=True, nogil=True)
def _pair_rows(xf, in_h, in_w, c, pad_t, pad_l, h_p, w_p, mode, ring, taps, tap_sum, pairs16, pairs8, zx, bias,
               stride_h, stride_w, dil_h, dil_w, out_h, out_w, acc, lanes, out, r0, r1):
    """Int32 sums of output rows ``b*OH + oy`` in ``[r0, r1)`` into the flat ``acc`` by the tap pairs (``xf``: the
    input of ``C`` channels, :func:`expand_channels` of the layer's);
    or, with fused ``lanes`` (a :class:`StoreRequant`'s, ``lanes[0] > 0``), their codes into the flat ``out``: the sums
    of consecutive runs and pixels (each a multiple of ``C`` values, starting at channel 0; a run cut at ``lanes[1]``
    values, a multiple of ``lcm(C, 16)``, so it restarts at phase 0) fill an L1-sized block of up to ``lanes[1]``,
    requantized from there when the next would not fit (:func:`_store_codes`; one block serves many one-pixel
    images, as the 256 streams of a microWakeWord layer), and no int32 array is written.

    The windows cover ``(HP, WP)`` pixels from (-pad_t, -pad_l). ``mode`` (:data:`_IN_PLACE`...) says where their taps
    are read: ``_RING``, a window of ``ring`` padded rows (:func:`_load_rows`, cache-sized, reloaded from the first row
    that an output row needs when it needs one past the window); ``_IN_PLACE`` (no padding), the input ``xf``;
    ``_PATCHES``, ``xf`` for the pixels whose taps are all inside it and a patch of its taps
    (:func:`_load_patch`) for each other pixel. Every tap is then inside. Output pixels whose inputs are adjacent
    form runs, worked 16 values at a time across pixel boundaries: a row's (inside) pixels at ``stride_w = 1``; all
    rows of an image when ``OW = WP = 1`` and ``stride_h = 1`` (a (T, 1, C) stream and a (KH, 1) kernel; not
    ``_PATCHES``); a row's inside pixels at ``stride_w > 1`` when ``C % 16 = 0`` (its blocks skip the ``stride_w - 1``
    pixels between two of them, :func:`_pair_sums`). Otherwise each pixel is a run of ``C`` values. A run's last
    ``n % 16`` values take one more 16-value block over its last 16 (overlapping: it recomputes a few sums, the same
    values), so any ``C >= 16`` stays in the pairs; a run shorter than 16 takes :func:`_short_run`.
    """
    n_oc = bias.shape[0]
    k_h, k_w = taps.shape[0], taps.shape[1]
    n_taps = k_h * k_w
    period = pairs16.shape[0]
    n_pairs = (n_taps + 1) // 2
    ww = w_p if mode == _RING else in_w  # the width of the image as read
    offs = _tap_offsets(k_h, k_w, dil_h, dil_w, ww, c)
    init = np.empty(n_oc, acc.dtype)  # bias - zx * tap_sum, wrapped to int32
    for oc in range(n_oc):
        init[oc] = wrap_scalar(bias[oc] - zx * tap_sum[oc], 32)
    init_run = _aligned_int32(16 * period)  # init over one period of a run of pixels
    for j in range(16 * period):
        init_run[j] = init[j % c]
    n16 = c // 16
    # a run's last n % 16 values (n >= 16, whole pixels) are channels (j - 16) mod C: the period's last block
    tail_w, tail_i = (period - 1) * n_pairs * 32, 16 * (period - 1)
    column = mode != _PATCHES and out_w == 1 and ww == 1 and stride_h == 1
    # a row's inside pixels are one run: adjacent at stride 1, else of whole 16-value blocks (C % 16 = 0) with the
    # (stride - 1) pixels between two of them skipped
    skip = 0 if column or stride_w == 1 else (stride_w - 1) * c
    k_rows, k_cols = (k_h - 1) * dil_h + 1, (k_w - 1) * dil_w + 1  # padded rows / columns that one output pixel reads
    ring = min(ring, (r1 - r0 - 1) * stride_h + k_rows)  # a chunk of rows reads no more than its own band
    buf = np.empty(ring * w_p * c if mode == _RING else 0, xf.dtype)
    for i in range(buf.shape[0]):  # the pad columns, once
        buf[i] = zx
    held_b, held0, held1 = -1, 0, 0  # buf holds padded rows [held0, held1) of image held_b
    patch = np.empty(k_rows * k_cols * c if mode == _PATCHES else 0, xf.dtype)
    offs_p = _tap_offsets(k_h, k_w, dil_h, dil_w, k_cols, c)  # the taps in a patch
    # the output columns [lo, hi) whose taps are all inside the input's columns
    lo = min(out_w, -(-pad_l // stride_w)) if mode == _PATCHES else 0
    hi = max(lo, min(out_w, (in_w - k_cols + pad_l) // stride_w + 1)) if mode == _PATCHES else out_w
    fused = lanes[0] != 0
    chunk = lanes[1]
    blk = _aligned_int32(chunk if fused else 0)
    sums = blk if fused else acc  # where the pairs store (chosen once: no array tuples in the loops)
    filled = 0  # blk holds the sums of the 'filled' outputs before the next one (consecutive rows share a block)
    img = buf if mode == _RING else xf  # the image the windows read (chosen once, as sums)
    r = r0
    while r < r1:
        b = r // out_h
        py0 = (r % out_h) * stride_h
        r_end = min(r1, (b + 1) * out_h) if column else r + 1
        lo_r, hi_r = lo, hi  # the row's pixels read in place (or from the window)
        iy0 = py0 - pad_t
        if mode == _RING:
            if column:
                r_end = min(r_end, r + ring - k_rows + 1)  # the output rows whose inputs the window holds
            if b != held_b or (r_end - 1 - b * out_h) * stride_h + k_rows > held1:
                held_b, held0, held1 = b, py0, min(h_p, py0 + ring)
                _load_rows(xf, b, in_h, in_w, c, pad_t, pad_l, zx, buf, w_p, held0, held1)
            base = (py0 - held0) * ww * c
        elif mode == _PATCHES:
            if iy0 < 0 or iy0 + k_rows > in_h:
                lo_r, hi_r = out_w, out_w
            base = ((b * in_h + iy0) * in_w + lo_r * stride_w - pad_l) * c
        else:
            base = (b * in_h + py0) * ww * c
        # the row's pieces: the pixels left of the inside ones, the inside ones, those right of them
        for piece in range(3):
            ox0, ox1 = (0, lo_r) if piece == 0 else (lo_r, hi_r) if piece == 1 else (hi_r, out_w)
            if ox1 <= ox0:
                continue
            a0 = (r * out_w + ox0) * n_oc
            if piece == 1 and (column or stride_w == 1 or c % 16 == 0):
                n_run = (r_end - r) * (ox1 - ox0) * c
                step = chunk if fused else n_run
                for s0 in range(0, n_run, step):
                    n = min(step, n_run - s0)
                    if fused and filled + n > chunk:
                        _store_codes(blk, filled, lanes, out, a0 + s0 - filled)
                        filled = 0
                    d0 = filled if fused else a0 + s0
                    x0 = base + s0 + s0 // c * skip  # s0 is a multiple of C
                    if skip == 0:
                        _pair_sums16(img, x0, offs, n_pairs, pairs16, 0, init_run, 0, sums, d0, n // 16, period)
                    else:
                        _pair_sums16_skip(img, x0, offs, n_pairs, pairs16, 0, init_run, 0, sums, d0, n // 16, period,
                                          skip)
                    if n % 16 != 0 and n > 16:  # the last 16 values again: one overlapping block (skip = 0)
                        _pair_sums16(img, x0 + n - 16, offs, n_pairs, pairs16, tail_w, init_run, tail_i, sums,
                                     d0 + n - 16, 1, 1)
                    elif n % 16 != 0:
                        _short_run(img, x0, offs, n_pairs, n_taps, taps, k_w, pairs8, init, c, sums, d0, n)
                    filled += n
                continue
            src, src_offs = (img, offs) if piece == 1 else (patch, offs_p)  # once a piece: no reference counts a pixel
            for i in range(ox1 - ox0):
                if fused and filled + n_oc > chunk:
                    _store_codes(blk, filled, lanes, out, a0 + i * n_oc - filled)
                    filled = 0
                px = base + i * stride_w * c
                if piece != 1:
                    _load_patch(xf, b, in_h, in_w, c, iy0, (ox0 + i) * stride_w - pad_l, dil_h, k_h, k_cols, zx, patch)
                    px = 0
                d0 = filled if fused else a0 + i * n_oc
                _pair_sums16(src, px, src_offs, n_pairs, pairs16, 0, init_run, 0, sums, d0, n16, period)
                if c % 16 != 0 and c > 16:
                    _pair_sums16(src, px + c - 16, src_offs, n_pairs, pairs16, tail_w, init_run, tail_i, sums,
                                 d0 + c - 16, 1, 1)
                elif c % 16 != 0:
                    _short_run(src, px, src_offs, n_pairs, n_taps, taps, k_w, pairs8, init, c, sums, d0, c)
                filled += n_oc
        r = r_end
    if fused and filled > 0:
        _store_codes(blk, filled, lanes, out, r1 * out_w * n_oc - filled)


def depthwise_accumulate(x, weights: DepthwiseWeights, input_zero_point, bias, stride, dilation, pad_top, pad_left,
                         out_h, out_w, exact_bits=32):
    """The depthwise sums ``(B*OH*OW, OC)``: int32 exact modulo 2^32 (``exact_bits`` 32) or exact int64 (64).

    Parameters
    ----------
    x : int8 or uint8 array (B, H, W, C), C-contiguous
    weights : :class:`DepthwiseWeights` of this layer
    input_zero_point : int
    bias : int64 array (OC,)
    stride, dilation : (h, w) ints >= 1
    pad_top, pad_left : ints >= 0; out_h, out_w : the output size (TFLite's index rule,
        ``in_y = out_y * stride_h - pad_top + dilation_h * filter_y``; taps outside add nothing)
    exact_bits : 32 | 64

    Threads split the output rows, in bands of :func:`_split_work` (:func:`dspsim._jit.parallel_rows`).
    """
    n_b, in_h, in_w, c = x.shape
    k_h, k_w = weights.kernel
    n_oc = weights.tap_sum.shape[0]
    wide = exact_bits != 32
    acc = np.empty((n_b * out_h * out_w, n_oc), np.int64 if wide else np.int32)
    work, grain = _split_work(acc.size * k_h * k_w, k_h, dilation[0], stride[0])
    if not wide and takes_pairs(x.shape, weights, stride, dilation, out_h, out_w):
        xe = expand_channels(x, weights.depth_multiplier)
        args = (xe.reshape(-1),) + _pair_args(x.shape, weights, input_zero_point, bias, stride, dilation, pad_top,
                                              pad_left, out_h, out_w, acc.reshape(-1), _UNFUSED)
        no_out = np.empty(0, x.dtype)
        parallel_rows(lambda r0, r1: _pair_rows(*args, no_out, r0, r1), n_b * out_h, work, grain)
        return acc
    args = (x.reshape(-1), in_h, in_w, c, weights.taps64 if wide else weights.taps, int(input_zero_point), bias,
            weights.depth_multiplier, stride[0], stride[1], dilation[0], dilation[1], pad_top, pad_left, out_h, out_w,
            acc.reshape(-1))
    parallel_rows(lambda r0, r1: _direct_rows(*args, r0, r1), n_b * out_h, work, grain)
    return acc



MACS_PER_ELEMENT = 4
"""A depthwise MAC counts as 1/4 of an element of work (:data:`dspsim._jit.PARALLEL_MIN`, ~0.4 ns): the tap pairs
run ~16 GMAC/s on one Zen 4 core."""


def _split_work(macs, k_h, dilation_h, stride_h):
    """(work, grain) of a layer's split over threads (:func:`dspsim._jit.parallel_rows`): its MACs in elements,
    and the rows a thread takes at least, a band whose halo (the ``(KH - 1) * dilation`` input rows that the
    band above reads too, reloaded into its window) is at most a quarter of the rows it reads."""
    halo = (k_h - 1) * dilation_h
    return macs // MACS_PER_ELEMENT, max(1, -(-3 * halo // stride_h))


RING_BYTES = 1 << 16
"""About the size of the window of padded input rows that the tap pairs read (a cache-sized copy)."""


def _padded_extent(kernel, stride, dilation, out_h, out_w):
    """(HP, WP): the rows and columns of the padded input that the windows cover."""
    return ((out_h - 1) * stride[0] + (kernel[0] - 1) * dilation[0] + 1,
            (out_w - 1) * stride[1] + (kernel[1] - 1) * dilation[1] + 1)


def takes_pairs(x_shape, weights: DepthwiseWeights, stride, dilation, out_h, out_w) -> bool:
    """Whether the int32 sums of this layer take the ``vpmaddwd`` tap pairs: AVX2 and jit, and a padded copy of
    at most ``4 * H * W + 4096`` pixels (not mostly padding, as a huge dilation makes it)."""
    h_p, w_p = _padded_extent(weights.kernel, stride, dilation, out_h, out_w)
    return USE_PAIRS and h_p * w_p <= 4 * x_shape[1] * x_shape[2] + 4096


def expand_channels(x, depth_multiplier):
    """``x`` (B, H, W, C) with every channel repeated ``depth_multiplier`` times (channel ``ic * M + m`` is
    ``x[..., ic]``): a depth multiplier M > 1 is then the tap pairs' ``M = 1`` over ``C * M`` channels, the same
    products ``(x[ic] - zx) * (w[oc] - zw[oc])`` of output channel ``oc = ic * M + m``. ``x`` itself when M = 1."""
    return x if depth_multiplier == 1 else np.repeat(x, depth_multiplier, axis=3)


def _inside(n_out, stride, pad, k_extent, n_in):
    """How many of ``n_out`` output positions read only input positions ``0..n_in-1`` (the first at ``o*stride - pad``,
    ``k_extent`` long)."""
    return sum(1 for o in range(n_out) if 0 <= o * stride - pad and o * stride - pad + k_extent <= n_in)


def _read_mode(x_shape, kernel, stride, dilation, pad_top, pad_left, out_h, out_w):
    """How :func:`_pair_rows` reads the taps: :data:`_IN_PLACE` without padding; with padding, :data:`_PATCHES` where
    the patches of the pixels that read some padding (``KH*KW`` pixels each) copy no more than the padded input
    (``HP*WP`` pixels, what the window of :data:`_RING` copies at least; MobileNetV2 batch 16 on Zen 4: its stride 2
    layers 112x112x96 to 14x14x576 in 0.75-0.9 of the window's time, 112x112x32 and 56x56x144 at stride 1 in ~0.9),
    else :data:`_RING` (its 7x7x960 and 14x14x384: patches 1.2x the window's time), and for a (T, 1, C) stream."""
    _, in_h, in_w, _ = x_shape
    h_p, w_p = _padded_extent(kernel, stride, dilation, out_h, out_w)
    if not (pad_top > 0 or pad_left > 0 or h_p > in_h or w_p > in_w):
        return _IN_PLACE
    k_rows, k_cols = ((k - 1) * d + 1 for k, d in zip(kernel, dilation))
    inside = (_inside(out_h, stride[0], pad_top, k_rows, in_h) * _inside(out_w, stride[1], pad_left, k_cols, in_w))
    patched = (out_h * out_w - inside) * kernel[0] * kernel[1]
    column = out_w == 1 and w_p == 1 and stride[0] == 1
    return _PATCHES if patched <= h_p * w_p and not column else _RING


def _pair_args(x_shape, weights, input_zero_point, bias, stride, dilation, pad_top, pad_left, out_h, out_w, acc,
               lanes):
    """The arguments of :func:`_pair_rows` but the input, the output and the row range (``x_shape`` the layer's
    input; the pairs read its :func:`expand_channels`, of ``OC`` channels)."""
    _, in_h, in_w, _ = x_shape
    c = weights.tap_sum.shape[0]
    h_p, w_p = _padded_extent(weights.kernel, stride, dilation, out_h, out_w)
    k_rows = (weights.kernel[0] - 1) * dilation[0] + 1
    ring = min(h_p, max(k_rows, RING_BYTES // (w_p * c)))
    mode = _read_mode(x_shape, weights.kernel, stride, dilation, pad_top, pad_left, out_h, out_w)
    return (in_h, in_w, c, pad_top, pad_left, h_p, w_p, mode, ring, weights.taps, weights.tap_sum, weights.pairs16,
            weights.pairs8, int(input_zero_point), bias, stride[0], stride[1], dilation[0], dilation[1], out_h, out_w,
            acc, lanes)


# --------------------------------------------------------------------------------------------
# the requantization fused into the tap pairs' store
# --------------------------------------------------------------------------------------------
_FIXED_LANES, _FLOAT_LANES = 1, 2  # lanes[0] of StoreRequant: requantize_blocks / requantize_float_row
CHUNK_VALUES = 4096
"""About how many int32 sums a block holds before its requantization (16 KB; smaller blocks cost more per block
than they save); the block is a multiple of ``lcm(C, 16)`` values."""
ROW_VALUES = 256
"""About how many positions the lane parameters cover (a multiple of ``lcm(C, 16)``, the block requantized in rows of
that many): 7 KB of fixed-point parameters, 3 KB of float ones, that stay in L1 beside the block."""
_NO_INT, _NO_FLOAT = np.empty(0, np.int32), np.empty(0, np.float32)
_NO_LANES = np.empty((0, 0), np.int32)  # the type of lane_parameters' array, no positions
_UNFUSED = (0, 0, 1, _NO_LANES, _NO_FLOAT, _NO_FLOAT, _NO_FLOAT, 0, 0, 0, False)


@dataclass(frozen=True, eq=False)
class StoreRequant:
    """A requantization fused into the store of the tap pairs (:func:`prepare_store_requant`), for one layer.

    Attributes
    ----------
    lanes : tuple
        ``(kind, chunk, row, fixed, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float)``: kind 1 the int32-lane
        fixed point (:func:`dspsim.simd.requant_lanes.requantize_rows` with ``fixed``, a ``(LANE_ROWS, row + 8)`` array
        of :func:`~dspsim.simd.requant_lanes.lane_parameters`), kind 2 the float lanes
        (:func:`dspsim.simd.requant_lanes.requantize_float_rows` with ``bias_a, bias_b, scale, clamp_in_float``); a
        block of up to ``chunk`` sums is requantized in rows of ``row`` (:data:`ROW_VALUES`), the arrays holding the
        parameters of the ``row + 8`` positions of a row and 8 past it (channel ``j % C``), the others are empty.
    dtype : numpy dtype
        The output type.
    """

    lanes: tuple
    dtype: np.dtype


def prepare_store_requant(epilogue, weights: DepthwiseWeights):
    """The :class:`StoreRequant` of ``epilogue`` (a :class:`dspsim.kernels.mac.gemm.FusedRequant` for ``OC``
    channels) for a layer of these weights, or None where there are no lanes to fuse: schemes other than
    ``"double"``, ``"fbgemm"``, ``"onnxruntime"`` and ``"xnnpack"``, sums wrapped to fewer than 32 bits,
    no tap pairs on this host (the caller then requantizes the int32 sums of :func:`depthwise_accumulate`)."""
    arith, float_bias, tie, wrap, _ = epilogue.key
    mult, shift, scale, fb_a, fb_b, zp, lo, hi = epilogue.params[:8]
    if wrap or not USE_PAIRS:
        return None
    n = epilogue.channels
    period = 16 * weights.pairs16.shape[0]  # lcm(C, 16)
    chunk = period * max(1, CHUNK_VALUES // period)
    row = period * max(1, ROW_VALUES // period)
    positions = np.arange(row + 8) % n  # a row's channels and 8 past it
    kind = requant_lanes.lane_kind(arith, float_bias, tie)
    if kind == requant_lanes.FIXED_LANES:
        ints = requant_lanes.lane_parameters(np.asarray(mult, np.int64), np.asarray(shift, np.int64), n, True)
        lanes = (_FIXED_LANES, chunk, row, _aligned(ints[:, positions])) + (_NO_FLOAT,) * 3 + (False,)
    else:
        if kind != requant_lanes.FLOAT_LANES:
            return None
        floats = requant_lanes.float_lane_parameters(arith, float_bias, scale, fb_a, fb_b)
        lanes = (_FLOAT_LANES, chunk, row, _NO_LANES) + tuple(_aligned(v[positions]) for v in floats[:3]) + floats[3:]
    return StoreRequant(lanes[:7] + (int(zp), int(lo), int(hi)) + lanes[7:], np.dtype(epilogue.dtype))


def prepare_depthwise_requantize(x_shape, weights: DepthwiseWeights, input_zero_point, bias, stride, dilation, pad_top,
                                 pad_left, out_h, out_w, store: StoreRequant):
    """``run(x)``: the depthwise codes ``(B*OH*OW, OC)`` of ``store.dtype`` for inputs ``x`` of ``x_shape``, the int32
    sums of :func:`depthwise_accumulate` requantized by ``store`` block by block while they are in L1 (no int32
    array, no second pass); bit-identical to :func:`dspsim.requant.requantize_into` on ``depthwise_accumulate(...,
    32)``. Arguments as :func:`depthwise_accumulate`, prepared once; only for layers that :func:`takes_pairs`."""
    n_oc, m = weights.tap_sum.shape[0], weights.depth_multiplier
    shape = (x_shape[0] * out_h * out_w, n_oc)
    args = _pair_args(x_shape, weights, input_zero_point, bias, stride, dilation, pad_top, pad_left, out_h, out_w,
                      _NO_INT, store.lanes)
    n_rows = x_shape[0] * out_h
    work, grain = _split_work(shape[0] * n_oc * weights.taps.shape[0] * weights.taps.shape[1], weights.taps.shape[0],
                              dilation[0], stride[0])

    def run(x):
        out = np.empty(shape, store.dtype)
        xf, of = expand_channels(x, m).reshape(-1), out.reshape(-1)
        parallel_rows(lambda r0, r1: _pair_rows(xf, *args, of, r0, r1), n_rows, work, grain)
        return out

    return run
