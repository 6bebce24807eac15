"""The depthwise convolution core: weights prepared once, int32 sums by ``vpmaddwd`` tap pairs.

:func:`prepare_depthwise_weights` turns TFLite depthwise weights into :class:`DepthwiseWeights` once
per layer; :func:`depthwise_accumulate` is the per-call core. Both take validated arguments only
(the public ``dspsim.depthwise_conv2d`` validates).

The sum of output channel ``oc = ic*M + m`` at output pixel ``(b, oy, ox)`` is TFLite's
``bias[oc] + sum over the taps inside the input of (x - zx) * (w - zw[oc])``. The tap-pair path
(AVX2, ``M = 1``, int32) computes it as ``(bias[oc] - zx * sum_taps (w - zw)) + sum_taps x * (w - zw)``
over every tap of an input padded with the code ``zx`` (a padding tap adds ``(zx - zx) * w = 0``,
exactly what TFLite's skipped tap adds); the first term once per call, the second with raw codes.
Two taps at a time: their bytes are interleaved and widened to int16, and one ``vpmaddwd`` against
the interleaved weights adds both products of 8 channels into 8 int32 lanes (an odd last tap is
paired with a zero weight). Each product is at most ``255 * 255`` in magnitude and a pair at most
``2 * 255 * 255 < 2^31``: exact; the int32 lane adds wrap modulo 2^32 like a C ``int32`` accumulator
(``-fwrapv``), so the result is exact modulo 2^32, as the bias-first TFLite sum is. Output pixels
whose inputs are adjacent (a row at stride 1; a (T, 1, C) stream under a (KH, 1) kernel) are one run
worked 16 values at a time across pixel boundaries, so C = 8 fills the vectors too. ``M > 1``,
hosts without AVX2, ``NUMBA_DISABLE_JIT`` and ``exact_bits = 64`` (a wide accumulator model that
needs the exact value, summed in int64) take a direct loop over the valid taps, vectorised by LLVM
(``vpmulld``).
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

from .._jit import parallel_rows
from ..fixedpoint import wrap_scalar
from ._simd import HAVE_AVX2

_I8, _I16, _I32, _I64 = (ir.IntType(b) for b in (8, 16, 32, 64))
USE_PAIRS = HAVE_AVX2 and not numba.config.DISABLE_JIT
"""Whether int32 sums with ``M = 1`` take the ``vpmaddwd`` tap pairs (compiled code for an AVX2 target)."""


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
    pairs8 : ndarray (1 or 0, P, 16) of int16
        The same for the 8 channels ``16 * (C // 16)`` on of one pixel (when ``C % 16 >= 8``).
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
    c = n_oc if depth_multiplier == 1 else 0  # the pairs serve M = 1 only
    period = c * 16 // math.gcd(c, 16) // 16 if c else 0  # blocks of 16 in one period of the channels
    n16, n8 = c // 16, (c % 16) // 8
    pairs = padded.reshape(n_pairs, 2, n_oc)
    pairs16 = pairs[:, :, np.arange(16 * period) % max(c, 1)].reshape(n_pairs, 2, period, 16).transpose(2, 0, 3, 1)
    pairs8 = pairs[:, :, 16 * n16:16 * n16 + 8 * n8].reshape(n_pairs, 2, n8, 8).transpose(2, 0, 3, 1)
    pairs16 = pairs16.reshape(period, n_pairs, 32)
    pairs8 = pairs8.reshape(n8, n_pairs, 16)
    return DepthwiseWeights(np.ascontiguousarray(diff.astype(np.int32)), np.ascontiguousarray(diff),
                            flat.sum(axis=0), np.ascontiguousarray(pairs16), np.ascontiguousarray(pairs8),
                            int(depth_multiplier))


# --------------------------------------------------------------------------------------------
# the vpmaddwd tap pairs (LLVM IR)
# --------------------------------------------------------------------------------------------
def _pair_sums(width):
    """An intrinsic ``f(x, base, offs, n_pairs, w, w_off, init, init_off, acc, acc_off, n_blocks, period)``:

    for ``n_blocks`` blocks of ``width`` (8 or 16) channels, block ``k`` of phase ``q = k % period``:
    ``acc[acc_off + width*k + j] = init[init_off + width*q + j] + sum_p sum_h x[base + width*k + offs[2p + h] + j]
    * w[w_off + (q*n_pairs + p)*2*width + 2j + h]`` (int32, wrapping), ``x`` int8 or uint8 (sign- or zero-extended),
    ``w`` int16. Blocks go two at a time through the pairs (their sums in registers), an odd last one alone.
    Never raises; reads only the addressed elements.
    """
    halves = width // 8  # vpmaddwd results (8 int32 lanes) per block
    v8, v16w, vx = ir.VectorType(_I32, 8), ir.VectorType(_I16, 16), ir.VectorType(_I8, width)

    def generate(typingctx, x, base, offs, n_pairs, w, w_off, init, init_off, acc, acc_off, n_blocks, period):
        signed = x.dtype == types.int8

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
            pmaddwd = cgutils.get_or_insert_function(b.module, ir.FunctionType(v8, [v16w, v16w]),
                                                     "llvm.x86.avx2.pmadd.wd")
            ext = b.sext if signed else b.zext
            c = lambda v: ir.Constant(_I64, v)  # noqa: E731

            def wrap_phase(q):  # (q + 1) % period
                nxt = b.add(q, c(1))
                return b.select(b.icmp_signed("==", nxt, nper), c(0), nxt)

            def blocks(k, phases):
                """Blocks k, k+1, ... of the given phases, their sums in registers across the pairs loop."""
                accs, xks, wks = [], [], []
                for g, q in enumerate(phases):
                    for h in range(halves):
                        ptr = b.gep(ip, [b.add(ioff, b.add(b.mul(q, c(width)), c(8 * h)))])
                        accs.append(cgutils.alloca_once_value(b, b.load(b.bitcast(ptr, v8.as_pointer()), align=4)))
                    xks.append(b.gep(xp, [b.add(base_, b.mul(b.add(k, c(g)), c(width)))]))
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
                            idx = [i for j in range(8 * h, 8 * h + 8) for i in (j, j + width)]
                            inter = b.shuffle_vector(va, vb, ir.Constant(ir.VectorType(_I32, 16), idx))
                            wv = b.load(b.bitcast(b.gep(wpp, [c(16 * h)]), v16w.as_pointer()), align=2)
                            a = accs[g * halves + h]
                            b.store(b.add(b.load(a), b.call(pmaddwd, [ext(inter, v16w), wv])), a)
                for g in range(len(phases)):
                    for h in range(halves):
                        ch = b.add(b.mul(b.add(k, c(g)), c(width)), c(8 * h))
                        ptr = b.bitcast(b.gep(ap, [b.add(aoff, ch)]), v8.as_pointer())
                        b.store(b.load(accs[g * halves + h]), ptr, align=4)

            # two blocks per pass over the pairs (each tap offset loaded once, twice the independent sums),
            # then an odd last block alone
            phase = cgutils.alloca_once_value(b, c(0))
            with cgutils.for_range(b, b.sdiv(nblk, c(2))) as two:
                q0 = b.load(phase)
                q1 = wrap_phase(q0)
                b.store(wrap_phase(q1), phase)
                blocks(b.mul(two.index, c(2)), [q0, q1])
            with b.if_then(b.icmp_signed("==", b.srem(nblk, c(2)), c(1))):
                blocks(b.sub(nblk, c(1)), [b.load(phase)])
            return context.get_dummy_value()

        sig = types.void(x, base, offs, n_pairs, w, w_off, init, init_off, acc, acc_off, n_blocks, period)
        return sig, codegen

    generate.__name__ = f"_pair_sums{width}"
    return intrinsic(generate)


_pair_sums16 = _pair_sums(16)  # compiled only when called: on an AVX2 target (USE_PAIRS)
_pair_sums8 = _pair_sums(8)


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
def _pad_image(xf, b, in_h, in_w, c, pad_t, pad_l, zx, buf, h_p, w_p, py0, py1):
    """Rows ``[py0, py1)`` of ``buf`` (HP, WP, C) flat = image ``b`` of the flat NHWC input ``xf`` at offset
    (pad_t, pad_l), ``zx`` elsewhere (a tap there adds ``(zx - zx) * w = 0``, as TFLite's skipped tap); input
    rows and columns past ``buf`` are not read."""
    rows = buf[py0 * w_p * c:py1 * w_p * c]  # a slice: ``buf[i]`` with i from a variable start is not a memset
    for i in range(rows.shape[0]):
        rows[i] = zx
    n_x = max(min(in_w, w_p - pad_l), 0) * c
    for iy in range(max(py0 - pad_t, 0), min(in_h, py1 - pad_t)):
        src = xf[(b * in_h + iy) * in_w * c:(b * in_h + iy) * in_w * c + n_x]
        dst = buf[((pad_t + iy) * w_p + pad_l) * c:((pad_t + iy) * w_p + pad_l) * c + n_x]
        for i in range(n_x):
            dst[i] = src[i]


@njit(cache=True, nogil=True)
def _pair_rows(xf, in_h, in_w, c, pad_t, pad_l, h_p, w_p, copy, taps, tap_sum, pairs16, pairs8, zx, bias, stride_h,
               stride_w, dil_h, dil_w, out_h, out_w, acc, r0, r1):
    """Int32 sums of output rows ``b*OH + oy`` in ``[r0, r1)`` into the flat ``acc`` by the tap pairs, ``M = 1``.

    The windows cover ``(HP, WP)`` pixels from (-pad_t, -pad_l); when ``copy``, each image is first padded into
    a scratch buffer (:func:`_pad_image`, cache-sized), else (no padding) the input ``xf`` is read in place.
    Every tap is then inside the image. Output pixels whose inputs are adjacent form runs, worked 16 values at a
    time across pixel boundaries: a row at ``stride_w = 1``; all rows of an image when ``OW = WP = 1`` and
    ``stride_h = 1`` (a (T, 1, C) stream and a (KH, 1) kernel). Otherwise each pixel takes 16-channel blocks, an
    8-channel block, and the rest directly.
    """
    n_oc = bias.shape[0]
    k_h, k_w = taps.shape[0], taps.shape[1]
    n_taps = k_h * k_w
    period = pairs16.shape[0]
    n_pairs = (n_taps + 1) // 2
    hh, ww = (h_p, w_p) if copy else (in_h, in_w)  # the image as read
    offs = np.empty(2 * n_pairs, np.int64)  # tap t at image[pixel + offs[t]]; an odd last tap's partner repeats it
    for t in range(2 * n_pairs):
        tt = min(t, n_taps - 1)
        offs[t] = ((tt // k_w) * dil_h * ww + (tt % k_w) * dil_w) * c
    init = np.empty(n_oc, acc.dtype)  # bias - zx * tap_sum, wrapped to int32
    for oc in range(n_oc):
        init[oc] = wrap_scalar(bias[oc] - zx * tap_sum[oc], 32)
    init_run = np.empty(16 * period, acc.dtype)  # init over one period of a run of pixels
    for j in range(16 * period):
        init_run[j] = init[j % c]
    n16 = c // 16
    n8 = pairs8.shape[0]
    column = out_w == 1 and ww == 1 and stride_h == 1
    buf = np.empty(h_p * w_p * c if copy else 0, xf.dtype)
    padded = -1  # the image in buf
    r = r0
    while r < r1:
        b = r // out_h
        if copy and b != padded:  # pad the rows of image b that this call's output rows read
            oy_end = min(r1, (b + 1) * out_h) - b * out_h
            _pad_image(xf, b, in_h, in_w, c, pad_t, pad_l, zx, buf, h_p, w_p, (r % out_h) * stride_h,
                       min(h_p, (oy_end - 1) * stride_h + (k_h - 1) * dil_h + 1))
            padded = b
        img = buf if copy else xf
        base = ((0 if copy else b * in_h) + (r % out_h) * stride_h) * ww * c
        a0 = r * out_w * n_oc
        r_end = min(r1, (b + 1) * out_h) if column else r + 1
        if column or stride_w == 1:
            n_run = (r_end - r) * out_w * c
            _pair_sums16(img, base, offs, n_pairs, pairs16, 0, init_run, 0, acc, a0, n_run // 16, period)
            _run_direct(img, base, offs, n_taps, taps, k_w, init, c, acc, a0, n_run // 16 * 16, n_run)
        else:
            for ox in range(out_w):
                px, a_px = base + ox * stride_w * c, a0 + ox * n_oc
                _pair_sums16(img, px, offs, n_pairs, pairs16, 0, init_run, 0, acc, a_px, n16, period)
                if n8 > 0:
                    _pair_sums8(img, px + 16 * n16, offs, n_pairs, pairs8, 0, init, 16 * n16, acc, a_px + 16 * n16, 1,
                                1)
                _run_direct(img, px, offs, n_taps, taps, k_w, init, c, acc, a_px, 16 * n16 + 8 * n8, c)
        r = r_end


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

    Threads split the output rows (:func:`dspsim._jit.parallel_rows`).
    """
    n_b, in_h, in_w, c = x.shape
    k_h, k_w = weights.kernel
    n_oc = weights.tap_sum.shape[0]
    wide = exact_bits != 32
    acc = np.empty((n_b * out_h * out_w, n_oc), np.int64 if wide else np.int32)
    work = acc.size * k_h * k_w
    # the padded input the pairs read: just the rows and columns the windows cover
    h_p = (out_h - 1) * stride[0] + (k_h - 1) * dilation[0] + 1
    w_p = (out_w - 1) * stride[1] + (k_w - 1) * dilation[1] + 1
    if USE_PAIRS and not wide and weights.depth_multiplier == 1 and h_p * w_p <= 4 * in_h * in_w + 4096:
        copy = pad_top > 0 or pad_left > 0 or h_p > in_h or w_p > in_w
        args = (x.reshape(-1), in_h, in_w, c, pad_top, pad_left, h_p, w_p, copy, weights.taps, weights.tap_sum,
                weights.pairs16, weights.pairs8, int(input_zero_point), bias, stride[0], stride[1], dilation[0],
                dilation[1], out_h, out_w, acc.reshape(-1))
        parallel_rows(lambda r0, r1: _pair_rows(*args, r0, r1), n_b * out_h, work)
        return acc
    args = (x.reshape(-1), in_h, in_w, c, weights.taps64 if wide else weights.taps, int(input_zero_point), bias,
            weights.depth_multiplier, stride[0], stride[1], dilation[0], dilation[1], pad_top, pad_left, out_h, out_w,
            acc.reshape(-1))
    parallel_rows(lambda r0, r1: _direct_rows(*args, r0, r1), n_b * out_h, work)
    return acc

