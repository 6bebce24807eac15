"""Exact integer GEMM and convolution cores: int8/uint8 x int8 products summed in int32.

``gemm_s32(a, b)`` returns ``C[m, n] = sum_k a[m, k] * b[n, k]`` in int32, wrapping modulo 2^32
(each product is exact; the sum wraps exactly as a C int32 accumulator with -fwrapv would).
With zero points it returns ``sum_k (a[m, k] - za) * (b[n, k] - zb[n]) + bias[n]``, and
``conv2d_s32`` returns the same sum over the in-bounds taps of a convolution window: a padded tap
contributes exactly zero. Everything is exact modulo 2^32, so the result equals the int32 wrap of
the true integer sum, whatever the order of the additions.

How it is fast. Both cores are one blocked GEMM over packed operands:

* the weights are packed once (:func:`pack_weights`) into panels of ``nr`` output columns laid out
  ``[K/4][nr][4]``, each K-run padded with zeros to a multiple of 4 (``nr`` is 64, or 16/32/48 for
  narrower weights, so that few columns are computed in vain);
* the tiles read the activations as unsigned bytes ``u = a + 128`` (int8: the byte XOR 0x80 as it is
  loaded, or on AVX2 the int8 code itself with ``128 * sum_k b`` folded into the store; no pass over the
  input) or ``u = a`` (uint8); a padded convolution copies them once into a
  zero-point-padded NHWC buffer, an unpadded one reads its input as it is, and each output pixel's
  window is addressed in place (implicit GEMM: one K-segment per filter tap, no im2col);
* a tile computes ``MR`` rows by ``nr`` columns with the accumulators in registers, using the AVX-512
  VNNI instruction ``vpdpbusd`` or, without VNNI, AVX2 ``vpmaddwd`` on int16 pairs of the weights
  (:meth:`PackedWeights.pairs`, made once on first use) (:mod:`dspsim.simd.tiles`); a plain numba
  loop is the portable fallback;
* the zero-point algebra is folded into the tile's store. With ``alpha = za + offset``
  (``offset`` 128 for int8 activations, 0 for uint8) and padded taps holding ``u = alpha``::

      sum (a - za)(b - zb) = sum u*b - alpha * sum b - zb * sum u + K * alpha * zb

  so the tile stores ``raw + col_add[n] + row_add[m] * col_mul[n]`` with
  ``col_add = bias - alpha * sum_k b + K * alpha * zb``, ``row_add = sum_k u`` and ``col_mul = -zb``.
  Ring identities hold modulo 2^32, so the int32 result is exact;
* with ``epilogue=FusedRequant.prepare(...)`` each tile's int32 block is requantized while it is in L1
  (:func:`dspsim.requant.requantize_value`, the scheme's constants compiled in), so a layer writes its
  8-bit codes directly: no int32 matrix, no second pass. The float-scale schemes (XNNPACK, ONNX Runtime,
  FBGEMM) on the VNNI path requantize in the tile's registers, 16 lanes at a time, and store the codes
  (:func:`dspsim.simd.tiles.tile_vnni_requant`): no block either (MobileNetV2's 1x1 convs, batch 16:
  K=32 -> N=16 at 112x112 from 1.70 to 0.98 ms, K=16 -> N=96 from 4.86 to 3.76 ms on one Zen 4 core).

Threads: the driver runs a range of (group, column panel, row chunk) work items without the GIL;
:func:`dspsim._jit.parallel_rows` splits the items over threads (a MAC counts as 1/64 element of
work there, so two threads start at 2^26 MACs, ~0.3 ms on one core), a row chunk at least
:data:`MIN_CHUNK_TILES` row tiles of its panel (:func:`split_items`), and the driver stays cached on disk.
The tile is the best of :data:`PATHS` (``"vnni"``, ``"avx2"``, ``"plain"``: those this CPU runs at the SIMD level
:data:`dspsim.simd.cpu.LEVEL`, which ``DSPSIM_SIMD`` may lower) unless ``path=`` or the environment variable
``DSPSIM_GEMM_PATH`` names another; only ``"plain"`` runs under ``NUMBA_DISABLE_JIT=1``, where the LLVM intrinsics
cannot.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numba
import numpy as np

from ..._errors import names_its_errors
from numba import njit

from ..._jit import parallel_rows, split_threads
from ...fixedpoint import as_int_array, wrap_scalar
from ...requant import Arithmetic, FloatBias, loop_tie, requantize_value
from ...simd import requant_lanes
from ...simd.cpu import HAVE_AVX2, HAVE_VNNI
from ...simd.tiles import MR, NR, NV, tile_avx2, tile_avx2_signed, tile_vnni, tile_vnni_requant

_GEMM = "gemm_s32"
_CONV = "conv2d_s32"
_MACS_PER_ELEMENT = 64  # a VNNI tile's MAC (~200 GMAC/s on one Zen 4 core) costs about 1/64 of an element of work
MIN_CHUNK_TILES = 8
"""Row tiles (of :data:`~dspsim.simd.tiles.MR` rows) a work item takes at least when the rows of a panel are split:
a thread streams its panel of weights from L2 for at least that many tiles."""


# --------------------------------------------------------------------------------------------
# tiles and drivers (never raise)
# --------------------------------------------------------------------------------------------
@njit(cache=True)
def _tile_plain(a, rows, segs, k4, bp, b_off, c, c_off, ldc, mv, nv, col_add, col_mul, n0, row_add, m0, nvec,
                weighted, flip):
    """Portable twin of :func:`dspsim.simd.tiles.tile_vnni`: same arguments, same result."""
    nr = 16 * nvec
    acc = np.empty(nr, np.int32)
    for r in range(mv):
        acc[:] = 0
        for s in range(segs.shape[0]):
            base = rows[r] + segs[s]
            for q in range(k4):
                step = b_off + (s * k4 + q) * 4 * nr
                bq = bp[step:step + 4 * nr]
                a0 = np.int32(a[base + 4 * q] ^ flip)
                a1 = np.int32(a[base + 4 * q + 1] ^ flip)
                a2 = np.int32(a[base + 4 * q + 2] ^ flip)
                a3 = np.int32(a[base + 4 * q + 3] ^ flip)
                # |4 products| <= 4 * 255 * 128 < 2^31; the int32 add wraps like the VNNI lane.
                # Every term is cast to int32 so that LLVM keeps 32-bit lanes (vpmaddwd, vpdpwssd).
                for j in range(nr):
                    acc[j] = np.int32(acc[j] + np.int32(
                        a0 * np.int32(bq[4 * j]) + a1 * np.int32(bq[4 * j + 1])
                        + a2 * np.int32(bq[4 * j + 2]) + a3 * np.int32(bq[4 * j + 3])))
        ra = int(row_add[m0 + r]) if weighted else 0
        for j in range(nv):
            c[c_off + r * ldc + j] = wrap_scalar(int(acc[j]) + int(col_add[n0 + j]) + ra * int(col_mul[n0 + j]), 32)


@njit(cache=True, nogil=True, inline="always")
def _epilogue_columns(epi, n0, per_channel):
    """``epi``'s per-column parameters from column ``n0`` on (slices, made once per column panel: a slice
    costs a reference count, too much per tile; the int32 lanes' array is whole, read from ``n0``), then its
    ints and the output."""
    mult, shift, scale, fb_a, fb_b, zp, lo, hi, acc_bits, lanes, lane_ba, lane_bb, lane_s, out = epi
    c0 = n0 if per_channel else 0
    # Slices: indices j >= 0 need no wraparound test, so the column loop vectorizes.
    return ((mult[c0:], shift[c0:], scale[c0:], fb_a[c0:], fb_b[c0:], lanes, lane_ba[n0:], lane_bb[n0:], lane_s[n0:]),
            (zp, lo, hi, acc_bits, out))


@njit(cache=True, nogil=True, inline="always")
def _requant_block(cols, rest, block, ldb, m0, mv, n0, nv, ldc, arith, float_bias, tie, wrap, per_channel, float_in,
                   simd, float_simd, clamp_in_float):
    """Rows ``[0, mv)``, columns ``[0, nv)`` of the int32 ``block`` (row stride ``ldb``) requantized into
    ``out[m0 + r, n0 + j]`` (``out`` flat with ``ldc`` columns), as :func:`dspsim.requant.requantize_into`
    computes them: wrapped to ``acc_bits`` when ``wrap``, :func:`dspsim.requant.requantize_value` with the
    scheme's constants (``arith`` ... ``per_channel``, folded by LLVM once inlined), clamped to
    ``[lo, hi]``; with ``simd`` the front of each row runs in int32 lanes
    (:func:`dspsim.simd.requant_lanes.requantize_rows`), with ``float_simd`` in float32 lanes
    (:func:`dspsim.simd.requant_lanes.requantize_float_rows`): the same values. ``cols, rest =
    _epilogue_columns(epi, n0, per_channel)`` with ``epi = (mult, shift, scale, fb_a, fb_b, zp, lo, hi,
    acc_bits, lanes, lane_bias_a, lane_bias_b, lane_scale, out)``. Never raises."""
    mult, shift, scale, fb_a, fb_b, lanes, lane_ba, lane_bb, lane_s = cols
    zp, lo, hi, acc_bits, out = rest
    sh = 64 - acc_bits
    j0 = 0  # the lanes take the front of every row (a no-op, 0, unless the output is int8 / uint8 / int16)
    if simd == 1:
        j0 = requant_lanes.requantize_rows(block, ldb, mv, nv, out, m0 * ldc + n0, ldc, lanes, n0, zp, lo, hi)
    if float_simd == 1:
        j0 = requant_lanes.requantize_float_rows(block, ldb, mv, nv, out, m0 * ldc + n0, ldc, lane_ba, lane_bb,
                                                 lane_s, zp, lo, hi, clamp_in_float)
    if j0 == nv:
        return
    for r in range(mv):
        src = block[r * ldb:r * ldb + nv]  # slices: the column loop vectorizes without index wraparound tests
        dst = out[(m0 + r) * ldc + n0:(m0 + r) * ldc + n0 + nv]
        for j in range(j0, src.shape[0]):
            c = j if per_channel else 0
            if float_in:  # the int32 sum itself: int32 -> float vectorizes on AVX2, int64 -> float does not
                v = requantize_value(src[j], arith, float_bias, tie, mult[c], shift[c], scale[c], fb_a[c], fb_b[c],
                                     zp)
            else:
                acc = np.int64(src[j])
                if wrap:
                    acc = (acc << sh) >> sh  # the accumulator wrapped to acc_bits
                v = requantize_value(acc, arith, float_bias, tie, mult[c], shift[c], scale[c], fb_a[c], fb_b[c], zp)
            dst[j] = min(max(v, lo), hi)


_TILE_IDS = {"plain": 0, "avx2": 1, "vnni": 2}
_NARROW_CODES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
"""The output types the requantization lanes store (8- and 16-bit codes)."""


def _make_driver(path, epilogue_key=None, flip=0, narrow=False):
    """The blocked GEMM driver around the tile of ``path``, over the work items ``[item0, item1)``; the
    tiles read each byte of ``a`` XOR ``flip`` (the AVX2 path: :func:`~dspsim.simd.tiles.tile_avx2_signed`
    when ``flip`` is 128, see :func:`_prepare_run`).

    Without ``epilogue_key`` the tile stores the int32 sums into ``out`` (M, N). With one (a
    :attr:`FusedRequant.key`) each tile stores into an L1-resident ``MR x nr`` block, which
    :func:`_requant_block` requantizes into ``epi``'s output: the int32 matrix never exists. A scheme with lanes
    (:func:`~dspsim.simd.requant_lanes.lane_kind`: the float-scale schemes, TFLite's fixed point) into ``narrow``
    codes (8 or 16 bits) on the VNNI path skips the block: :func:`~dspsim.simd.tiles.tile_vnni_requant`
    requantizes the sums in its registers.

    The closure holds only ints and enums (their pickles, part of numba's cache key, are the same in
    every process; a closure over a dispatcher or an intrinsic would pickle a fresh uuid and miss the
    disk cache every time); the tile is chosen by a branch on the constant ``tile_id``, pruned at compile time.
    """
    tile_id = 3 if path == "avx2" and flip else _TILE_IDS[path]
    fused = epilogue_key is not None
    arith, float_bias, tie, wrap, per_channel = epilogue_key if fused else (0, 0, 0, False, False)
    # The float schemes convert the sum to float first: the same value whether it arrives as int32 or int64.
    float_in = fused and not wrap and arith in (Arithmetic.FBGEMM, Arithmetic.FLOAT32, Arithmetic.ONEDNN,
                                                Arithmetic.FLOAT64, Arithmetic.DOUBLE_SCALE)
    lanes = requant_lanes.lane_kind(arith, float_bias, tie) if fused and HAVE_AVX2 and not wrap \
        and not numba.config.DISABLE_JIT else 0
    simd = int(lanes == requant_lanes.FIXED_LANES)
    float_simd = int(lanes == requant_lanes.FLOAT_LANES)
    clamp_in_float = arith == Arithmetic.FLOAT32
    if tile_id == 2 and lanes and narrow:
        tile_id = 4  # the codes from the tile's registers
    has_bias = float_bias != FloatBias.NONE

    @njit(cache=True, nogil=True)
    def drive(a, row_off, group_stride, segs, k4, bp, nvec, groups, n_group, out, col_add, col_mul,
              row_add, weighted, n_chunks, epi, item0, item1):
        m_dim = row_off.shape[0]
        nr = 16 * nvec
        n_pan = (n_group + nr - 1) // nr
        panel_bytes = segs.shape[0] * k4 * 4 * nr
        m_tiles = (m_dim + MR - 1) // MR
        chunk = (m_tiles + n_chunks - 1) // n_chunks
        ldc = n_group * groups
        rows = np.empty(MR, np.int64)
        block = np.empty(MR * nr if fused and tile_id != 4 else 0, np.int32)
        if tile_id == 4:  # no float bias: no fma in the tile; TFLite's scheme: the int32 lane parameters
            fbias = (epi[10], epi[11]) if has_bias else ()
            tile_scale = epi[9] if simd else epi[12]
        for item in range(item0, item1):  # of groups * n_pan * n_chunks
            g = item // (n_pan * n_chunks)
            pan = (item // n_chunks) % n_pan
            n0 = pan * nr
            nv = min(nr, n_group - n0)
            col = g * n_group + n0
            b_off = (g * n_pan + pan) * panel_bytes
            if fused and tile_id != 4:
                cols, rest = _epilogue_columns(epi, col, per_channel)
            for t in range(item % n_chunks * chunk, min(m_tiles, (item % n_chunks + 1) * chunk)):
                m0 = t * MR
                mv = min(MR, m_dim - m0)
                for r in range(MR):
                    rows[r] = row_off[min(m0 + r, m_dim - 1)] + g * group_stride
                dest, c_off, ld = (block, 0, nr) if fused else (out, m0 * ldc + col, ldc)
                if tile_id == 4:  # epi: see FusedRequant.params
                    tile_vnni_requant(a, rows, segs, k4, bp, b_off, epi[13], m0 * ldc + col, ldc, mv, nv, col_add,
                                      col_mul, col, row_add, g * m_dim + m0, nvec, weighted, flip, fbias, tile_scale,
                                      epi[5], epi[6], epi[7], clamp_in_float)
                elif tile_id == 2:
                    tile_vnni(a, rows, segs, k4, bp, b_off, dest, c_off, ld, mv, nv, col_add, col_mul, col, row_add,
                              g * m_dim + m0, nvec, weighted, flip)
                elif tile_id == 3:  # int8 codes sign-extended in the tile: col_add holds + 128 * sum b
                    tile_avx2_signed(a, rows, segs, k4, bp, b_off, dest, c_off, ld, mv, nv, col_add, col_mul, col,
                                     row_add, g * m_dim + m0, nvec, weighted, flip)
                elif tile_id == 1:
                    tile_avx2(a, rows, segs, k4, bp, b_off, dest, c_off, ld, mv, nv, col_add, col_mul, col, row_add,
                              g * m_dim + m0, nvec, weighted, flip)
                else:
                    _tile_plain(a, rows, segs, k4, bp, b_off, dest, c_off, ld, mv, nv, col_add, col_mul, col,
                                row_add, g * m_dim + m0, nvec, weighted, flip)
                if fused and tile_id != 4:
                    _requant_block(cols, rest, block, nr, m0, mv, col, nv, ldc, arith, float_bias, tie, wrap,
                                   per_channel, float_in, simd, float_simd, clamp_in_float)

    return drive


_RUNNABLE = ("plain",) + (("avx2",) if HAVE_AVX2 else ()) + (("vnni",) if HAVE_VNNI else ())
_DRIVERS = {}  # (path, FusedRequant.key or None, flip, narrow) -> driver, made on first use


def _driver(path, epilogue_key=None, flip=0, narrow=False):
    key = (path, epilogue_key, flip, narrow)
    if key not in _DRIVERS:
        _DRIVERS[key] = _make_driver(*key)
    return _DRIVERS[key]


PATHS = tuple(p for p in ("vnni", "avx2", "plain") if p in _RUNNABLE and (p == "plain" or not numba.config.DISABLE_JIT))
"""Tiles this process can run, fastest first."""


@njit(cache=True)
def _window_sums(ubuf, flip, row_off, segs, cp, channels, groups, out):
    """``out[g, m] = sum over taps of the group's real channels of ubuf ^ flip`` (exact, int64).

    ``ubuf`` holds pixels of ``groups * cp`` bytes; row and tap offsets are whole pixels, so the
    channel sum of each pixel is taken once and each window adds ``len(segs)`` of them.
    """
    pix = groups * cp
    n_pix = ubuf.shape[0] // pix
    csum = np.empty((groups, n_pix), np.int64)
    for p in range(n_pix):
        for g in range(groups):
            px = ubuf[p * pix + g * cp:p * pix + g * cp + channels]  # a slice: unit-stride vector loads
            s = 0
            for c in range(channels):
                s += np.int64(px[c] ^ flip)
            csum[g, p] = s
    tap_pix = segs // pix
    for g in range(groups):
        for m in range(row_off.shape[0]):
            p0 = row_off[m] // pix
            s = 0
            for t in range(tap_pix.shape[0]):
                s += csum[g, p0 + tap_pix[t]]
            out[g, m] = s


# --------------------------------------------------------------------------------------------
# packing
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PackedWeights:
    """Weights packed once for :func:`gemm_s32` / :func:`conv2d_s32`; reuse across calls.

    Attributes
    ----------
    data : ndarray of int8
        ``[groups][panels][taps][channels_padded / 4][16 * nvec][4]``, zero-filled past the real sizes.
    shape : tuple
        The original weight shape: ``(N, K)`` for a GEMM, ``(O, KH, KW, I)`` (OHWI) for a conv.
    groups : int
        Convolution groups (1 for a GEMM).
    sums : ndarray of int64, shape (N,) or (O,)
        ``sum_k b[n, k]`` over the real entries, exact (take ``.astype(np.int32)`` for the wrap).
    nvec : int
        Panel width in 16-column vectors: ``min(NV, ceil(N_per_group / 16))``.
    weights : ndarray of int8
        A read-only copy of the original weights (the kernels' bounds and checked path read it).
    cache : dict
        Per-layer values the kernels derive from the weights once (accumulator bounds per zero point).
    """

    data: np.ndarray
    shape: tuple
    groups: int
    sums: np.ndarray
    nvec: int
    weights: np.ndarray
    cache: dict = field(default_factory=dict, repr=False)

    @property
    def taps(self) -> int:
        return 1 if len(self.shape) == 2 else self.shape[1] * self.shape[2]

    @property
    def channels(self) -> int:
        """Real K-entries per tap (K for a GEMM, I for a conv)."""
        return self.shape[-1]

    @property
    def channels_padded(self) -> int:
        return -(-self.channels // 4) * 4

    @property
    def n_group(self) -> int:
        return self.shape[0] // self.groups

    def pairs(self) -> np.ndarray:
        """The weights for the AVX2 tile (:func:`dspsim.simd.tiles.tile_avx2`), made once and kept
        in :attr:`cache`: int16, each panel's 16-column slices one after another, each
        ``[taps][channels_padded / 4][2][16][2]``: for every 4 k-entries, the pairs (k0, k2) then
        (k1, k3) of each column side by side, as ``vpmaddwd`` multiplies them with A's even and odd
        bytes; zeros past the real sizes."""
        if "pairs" not in self.cache:
            out = np.zeros(self.data.shape[0], np.int16)
            _pack_pairs(self.data, self.groups * -(-self.n_group // (16 * self.nvec)),
                        self.taps * self.channels_padded, 16 * self.nvec, out)
            self.cache["pairs"] = out
        return self.cache["pairs"]


@names_its_errors
def pack_weights(w, *, groups: int = 1) -> PackedWeights:
    """Pack int8 weights once: ``(N, K)`` for :func:`gemm_s32`, ``(O, KH, KW, I)`` for :func:`conv2d_s32`.

    For a grouped convolution, ``O`` splits into ``groups`` consecutive blocks, each reading ``I``
    input channels (so the input has ``groups * I`` channels). Raises ``TypeError`` unless ``w`` is
    int8, ``ValueError`` for a wrong rank, an empty axis or ``O`` not divisible by ``groups``.
    """
    func = "pack_weights"
    w = np.asarray(w)
    if w.dtype != np.int8:
        raise TypeError(f"{func}: weights must be int8, got {w.dtype}")
    if w.ndim not in (2, 4) or 0 in w.shape:
        raise ValueError(f"{func}: weights must be a non-empty (N, K) or (O, KH, KW, I) array, got shape {w.shape}")
    if not isinstance(groups, (int, np.integer)) or groups < 1 or w.shape[0] % groups:
        raise ValueError(f"{func}: groups must be a positive divisor of {w.shape[0]} output channels, got {groups}")
    if w.ndim == 2 and groups != 1:
        raise ValueError(f"{func}: a (N, K) GEMM weight takes groups=1, got {groups}")
    groups = int(groups)
    n_total, ch = w.shape[0], w.shape[-1]
    taps = 1 if w.ndim == 2 else w.shape[1] * w.shape[2]
    n_group = n_total // groups
    nvec = min(NV, -(-n_group // 16))
    panels = -(-n_group // (16 * nvec))
    ch_pad = -(-ch // 4) * 4
    w3 = np.ascontiguousarray(w).reshape(n_total, taps, ch)
    if ch_pad != ch:
        w3 = np.concatenate([w3, np.zeros((n_total, taps, ch_pad - ch), np.int8)], axis=2)
    data = np.zeros(groups * panels * taps * ch_pad * 16 * nvec, np.int8)
    sums = np.empty(n_total, np.int64)
    _pack(w3.view(np.uint32), groups, 16 * nvec, data.view(np.uint32))
    _sums(w3.reshape(n_total, -1), sums)
    raw = w.copy()
    raw.flags.writeable = False
    return PackedWeights(data, tuple(w.shape), groups, sums, nvec, raw)


@njit(cache=True)
def _pack(w4, groups, nr, data):
    """Copy the 4-byte words of ``w4 (N, taps, ch_pad/4)`` (uint32 view of the zero-padded weights)
    into the zeroed ``data`` laid out ``[g][panel][tap][ch_pad/4][nr]``. Never raises."""
    n_total, taps, k4 = w4.shape
    n_group = n_total // groups
    panels = (n_group + nr - 1) // nr
    for n in range(n_total):  # read rows in order, write with stride nr (the panel fits in L1/L2)
        g, nn = n // n_group, n % n_group
        base = (g * panels + nn // nr) * taps * k4 * nr + nn % nr
        for t in range(taps):
            for q in range(k4):
                data[base + (t * k4 + q) * nr] = w4[n, t, q]


@njit(cache=True)
def _pack_pairs(data, n_panels, k_total, nr, out):
    """``data`` (:func:`_pack`'s ``[g][panel][tap][cp/4][nr][4]`` bytes) re-laid into ``out``:
    ``[g][panel][nr/16][tap][cp/4][2][16][2]`` int16, entry ``k`` of a 4-block at ``[k % 2][.][k // 2]``.
    Never raises."""
    for pan in range(n_panels):
        base = pan * k_total * nr
        for k in range(k_total):
            for j in range(nr):
                out[base + (j // 16 * k_total + k - k % 4) * 16 + k % 2 * 32 + j % 16 * 2 + k % 4 // 2] = \
                    data[base + (k // 4 * nr + j) * 4 + k % 4]


@njit(cache=True)
def _sums(w2, sums):
    """``sums[n] = sum_k w2[n, k]``, exact in int64."""
    for n in range(w2.shape[0]):
        row = w2[n]
        s = 0
        for k in range(row.shape[0]):  # an in-range index: unit-stride vector loads
            s += np.int64(row[k])
        sums[n] = s


# --------------------------------------------------------------------------------------------
# public wrappers
# --------------------------------------------------------------------------------------------
def _choose_path(path, func):
    """``path``, else ``$DSPSIM_GEMM_PATH``, else the fastest of :data:`PATHS`; checked to be runnable."""
    path = path or os.environ.get("DSPSIM_GEMM_PATH") or PATHS[0]
    if path not in PATHS:
        raise ValueError(f"{func}: path must be one of {PATHS} on this CPU, got {path!r}")
    return path


def _activation(x, func, name):
    x = np.asarray(x)
    if x.dtype not in (np.int8, np.uint8):
        raise TypeError(f"{func}: {name} must be int8 or uint8, got {x.dtype}")
    return x, 128 if x.dtype == np.int8 else 0


def _per_column(value, n, func, name, lo, hi):
    """A scalar or an (n,) integer array, checked to lie in [lo, hi], as an int64 (n,) array."""
    arr = as_int_array(value, func, name, lo, hi)
    if arr.ndim == 0:
        return np.full(n, int(arr), np.int64)
    if arr.shape != (n,):
        raise ValueError(f"{func}: {name} must be a scalar or have shape ({n},), got {arr.shape}")
    return arr


def _packed(w, func, ndim, groups=1):
    """``w`` itself if it is PackedWeights of the right rank and groups, else ``pack_weights(w)``."""
    if not isinstance(w, PackedWeights):
        if np.asarray(w).dtype != np.int8:
            raise TypeError(f"{func}: weights must be int8 or PackedWeights, got {np.asarray(w).dtype}")
        w = pack_weights(w, groups=groups)
    if len(w.shape) != ndim or w.groups != groups:
        raise ValueError(f"{func}: weights must be packed from a {ndim}-D array with groups={groups}, "
                         f"got shape {w.shape}, groups={w.groups}")
    return w


def _quant_args(func, offset, n, zx, zw, bias, names):
    """Validated ``(alpha, zw (n,), bias (n,))``: alpha = zx + offset is the unsigned code of zx."""
    lo, hi = (-128, 127) if offset else (0, 255)
    if np.ndim(zx) != 0:
        raise ValueError(f"{func}: {names[0]} must be a scalar")
    alpha = int(as_int_array(zx, func, names[0], lo, hi)) + offset
    zw = _per_column(zw, n, func, names[1], -128, 127)
    bias = np.zeros(n, np.int64) if bias is None else _per_column(bias, n, func, "bias", -(1 << 31), (1 << 31) - 1)
    return alpha, zw, bias


@dataclass(frozen=True, eq=False)
class FusedRequant:
    """A requantization fused into the store of :func:`gemm_s32` / :func:`conv2d_s32`, prepared once per
    layer with :meth:`prepare`: the cores then return the requantized codes, bit-identical to
    :func:`dspsim.requant.requantize_into` on their int32 result, without the int32 matrix and the second
    pass over it (each ``MR x nr`` tile is requantized while it is in L1).

    Attributes
    ----------
    key : tuple
        The compile-time constants of the epilogue: (Arithmetic, FloatBias, tie, wrap, per_channel).
    params : tuple
        ``(mult, shift, scale, fb_a, fb_b, zp, lo, hi, acc_bits, lanes, lane_bias_a, lane_bias_b, lane_scale)``:
        arrays of length ``channels``, ints, then the lane parameters of :func:`dspsim.simd.requant_lanes.lane_parameters`
        (one ``(LANE_ROWS, channels + NR)`` array, the last channel's repeated past ``channels``) and
        :func:`~dspsim.simd.requant_lanes.float_lane_parameters` (float32, zeros past ``channels`` to ``channels +
        NR``): the requantizing tile reads whole vectors.
    dtype : numpy dtype
        The output type.
    channels : int
        Output channels (N of the GEMM, O of the convolution).
    """

    key: tuple
    params: tuple
    dtype: np.dtype
    channels: int

    @classmethod
    def prepare(cls, n, acc_bits, requant, float_bias, zero_point, lo, hi, out_dtype, func="FusedRequant.prepare"):
        """The epilogue that computes ``requantize_into(acc, n, acc_bits, requant, float_bias, zero_point, lo,
        hi, out, func)`` (same, already validated, arguments) into ``out_dtype``. ``acc_bits`` in [1, 32]:
        the int32 sums are wrapped to that width first, as ``requantize_into`` does; no counts.
        """
        fb_a, fb_b, fb_mode = float_bias
        per_channel = max(requant.channels, len(requant.act_times_w)) > 1 or fb_mode != FloatBias.NONE
        arith, mult, shift, scale, _, tie = requant.arrays(n, func)
        key = (arith, fb_mode, loop_tie(arith, tie), acc_bits < 32, per_channel)
        fb_a, fb_b = np.ascontiguousarray(fb_a, np.float32), np.ascontiguousarray(fb_b, np.float32)
        # Per column: the int32 lanes' parameters of the fixed-point front of each row, and the float
        # lanes' (bias_a, bias_b, scale) of the float schemes (zeros for the other schemes).
        lanes = (np.pad(requant_lanes.lane_parameters(mult, shift, n, per_channel), ((0, 0), (0, NR)), "edge"),)
        float_lanes = requant_lanes.float_lane_parameters(arith, fb_mode, scale, fb_a, fb_b)[:3] \
            if requant_lanes.lane_kind(arith, fb_mode, tie) == requant_lanes.FLOAT_LANES else (np.zeros(n, np.float32),) * 3
        params = (mult, shift, scale, fb_a, fb_b, int(zero_point), int(lo), int(hi), int(acc_bits)) + lanes + \
            tuple(_padded_columns(v, n) for v in float_lanes)
        return cls(key, params, np.dtype(out_dtype), int(n))


def _padded_columns(values, n):
    """``values`` (one or ``n``) as ``n + NR`` float32 columns, zeros past ``n``: a tile reads whole 16-column
    vectors (see :func:`~dspsim.simd.tiles.tile_vnni_requant`)."""
    out = np.zeros(n + NR, np.float32)
    out[:n] = values
    return out


def _check_epilogue(epilogue, n, func):
    if epilogue is not None and not isinstance(epilogue, FusedRequant):
        raise TypeError(f"{func}: epilogue must be a FusedRequant or None, got {type(epilogue).__name__}")
    if epilogue is not None and epilogue.channels != n:
        raise ValueError(f"{func}: epilogue is prepared for {epilogue.channels} channels, the output has {n}")


def _flip(dtype):
    """The byte XORed into each input byte to give the tiles' unsigned code: 128 for int8, 0 for uint8."""
    return 128 if np.dtype(dtype) == np.int8 else 0


def split_items(panels, m_tiles, work):
    """Row chunks per panel of a gemm of ``panels`` column panels, ``m_tiles`` row tiles and ``work`` elements: 1
    when the panels alone give each of the :func:`dspsim._jit.split_threads` threads 8 items, else enough for 8 per
    thread, each at least :data:`MIN_CHUNK_TILES` tiles (the work items are ``panels * chunks``)."""
    threads = split_threads(panels * m_tiles, work, MIN_CHUNK_TILES)
    if panels >= 8 * threads:
        return 1
    return max(1, min(m_tiles // MIN_CHUNK_TILES, -(-8 * threads // panels)))


def _prepare_run(row_off, group_stride, segs, packed, alpha, zb, bias, path, epilogue=None, tap_run=1, flip=0):
    """The shared tail of both cores, prepared once per shape: ``run(ubuf) -> (M, N) int32``, or the
    codes of ``epilogue`` (a :class:`FusedRequant`) in its dtype.

    ``ubuf`` holds the input's bytes as they are; the tiles read each one XOR ``flip`` (128 for int8
    codes: the unsigned code ``x + 128``, whose zero point is ``alpha``). ``segs``: each tap's offset;
    ``tap_run`` consecutive taps lie side by side in ``ubuf`` (a kernel row of a dense convolution) and
    the tile reads them as one K-segment. Zero-point terms folded into the store, then the threaded
    driver."""
    groups, n_group = packed.groups, packed.n_group
    m_dim, n_total = row_off.shape[0], packed.shape[0]
    k_real = packed.taps * packed.channels
    # col_add = bias - alpha*sum_k b + K*alpha*zb, then reduced mod 2^32; exact in int64 since
    # |bias| < 2^31 and both products are at most 255 * 128 * K in magnitude.
    # The AVX2 tile sums int8 codes as they are, (u - 128) * b: it gets the 128 * sum_k b back here.
    signed = 128 if path == "avx2" and flip else 0
    col_add = np.zeros(n_total + NR, np.int32)
    col_add[:n_total] = (bias - (alpha - signed) * packed.sums + k_real * alpha * zb).astype(np.int32)
    col_mul = np.zeros(n_total + NR, np.int32)
    col_mul[:n_total] = -zb
    weighted_rows = bool(zb.any())
    zero_rows = np.zeros(groups * m_dim, np.int32)
    # Work items are (group, panel, row chunk), panel-major so that a thread keeps its B panel in
    # cache; rows are split into chunks only when there are fewer than 8 panels per thread.
    panels = groups * -(-n_group // (16 * packed.nvec))
    drive = _driver(path, None if epilogue is None else epilogue.key, int(flip),
                    epilogue is not None and epilogue.dtype in _NARROW_CODES)
    flip = np.uint8(flip)
    work = m_dim * n_total * k_real // _MACS_PER_ELEMENT
    no_out = np.empty(0, np.int32)  # a fused driver writes epilogue's array instead
    k4 = tap_run * packed.channels_padded // 4
    tile_segs = np.ascontiguousarray(segs[::tap_run])
    weights = packed.pairs() if path == "avx2" else packed.data

    def run(ubuf):
        row_add = zero_rows
        if weighted_rows:
            sums = np.zeros((groups, m_dim), np.int64)
            _window_sums(ubuf, flip, row_off, segs, packed.channels_padded, packed.channels, groups, sums)
            row_add = sums.astype(np.int32).ravel()
        out = np.empty((m_dim, n_total), np.int32 if epilogue is None else epilogue.dtype)
        n_chunks = split_items(panels, -(-m_dim // MR), work)
        c32, epi = (out.ravel(), ()) if epilogue is None else (no_out, epilogue.params + (out.ravel(),))
        args = (ubuf, row_off, group_stride, tile_segs, k4, weights, packed.nvec, groups, n_group, c32,
                col_add, col_mul, row_add, int(weighted_rows), n_chunks, epi)
        parallel_rows(lambda i0, i1: drive(*args, i0, i1), panels * n_chunks, work)
        return out

    return run


def gemm_s32(a, b, *, a_zero_point=0, b_zero_point=0, bias=None, path=None, epilogue=None) -> np.ndarray:
    """Exact int32 GEMM ``C[m, n] = sum_k (a[m, k] - za) * (b[n, k] - zb[n]) + bias[n]`` modulo 2^32.

    Parameters
    ----------
    a : ndarray (M, K) of int8 or uint8
    b : ndarray (N, K) of int8, or :class:`PackedWeights` from ``pack_weights(b)`` (reuse it).
    a_zero_point : int, in the range of ``a``'s dtype (default 0).
    b_zero_point : int or (N,) ints in [-128, 127] (default 0), per output column.
    bias : None or (N,) integers in the int32 range.
    path : None (``$DSPSIM_GEMM_PATH`` or the fastest), or one of :data:`PATHS`; all give the same result.
    epilogue : None, or a :class:`FusedRequant` prepared for N channels: requantize in the store.

    Returns
    -------
    ndarray (M, N) of int32: the true integer sum wrapped to 32 bits (two's complement). With the
    defaults this is ``sum_k a[m, k] * b[n, k]``. With ``epilogue``: those sums requantized, in its dtype.
    """
    a, offset = _activation(a, _GEMM, "a")
    if a.ndim != 2:
        raise ValueError(f"{_GEMM}: a must be 2-D (M, K), got shape {a.shape}")
    packed = _packed(b, _GEMM, 2)
    m_dim, k_dim = a.shape
    n_dim = packed.shape[0]
    if k_dim != packed.shape[1]:
        raise ValueError(f"{_GEMM}: a has K={k_dim} columns but b has K={packed.shape[1]}")
    alpha, zb, bias = _quant_args(_GEMM, offset, n_dim, a_zero_point, b_zero_point, bias,
                                  ("a_zero_point", "b_zero_point"))
    _check_epilogue(epilogue, n_dim, _GEMM)
    return prepare_gemm_s32(m_dim, a.dtype, packed, alpha, zb, bias, _choose_path(path, _GEMM), epilogue)(a)


def prepare_gemm_s32(m_dim, dtype, packed, alpha, zb, bias, path, epilogue=None):
    """:func:`gemm_s32` for ``m_dim`` rows of ``dtype`` (int8/uint8) on ``packed``, prepared once from
    validated arguments (``alpha``: the unsigned code of the zero point, ``zb``/``bias`` (N,) int64):
    ``run(a) -> (M, N) int32`` (or ``epilogue``'s codes)."""
    kp, k_dim = packed.channels_padded, packed.shape[1]
    tail = _prepare_run(np.arange(m_dim, dtype=np.int64) * kp, 0, np.zeros(1, np.int64), packed, alpha, zb, bias, path,
                        epilogue, flip=_flip(dtype))

    def run(a):
        if kp != k_dim:  # the padding columns meet zero weights: any byte will do
            ubuf = np.zeros((m_dim, kp), np.uint8)
            ubuf[:, :k_dim] = a.view(np.uint8)
        else:  # the input itself (a read-only one would need another compile)
            ubuf = np.require(a.view(np.uint8), requirements=["C", "W"])
        return tail(ubuf.ravel())

    return run


def _pair(value, func, name, lo):
    vals = (value, value) if np.ndim(value) == 0 else tuple(value)
    if len(vals) != 2 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= lo for v in vals):
        raise ValueError(f"{func}: {name} must be an int >= {lo} or a pair of them, got {value!r}")
    return int(vals[0]), int(vals[1])


def conv2d_s32(x, w, *, stride=1, dilation=1, pads=(0, 0, 0, 0), groups=1, input_zero_point=0,
               weight_zero_point=0, bias=None, path=None, epilogue=None) -> np.ndarray:
    """Exact int32 convolution accumulators, NHWC x OHWI, modulo 2^32.

    ``out[b, oy, ox, o] = bias[o] + sum (x[b, iy, ix, c] - zx) * (w[o, ky, kx, ci] - zw[o])`` over the
    taps whose ``iy = oy*sh + ky*dh - pad_top``, ``ix = ox*sw + kx*dw - pad_left`` fall inside the
    input (a padded tap contributes exactly 0, as TFLite's ``if (is_point_inside_image)`` does), with
    ``c = g * I + ci`` for output channel ``o`` in group ``g``.

    Parameters
    ----------
    x : ndarray (N, H, W, groups * I) of int8 or uint8
    w : ndarray (O, KH, KW, I) of int8, or :class:`PackedWeights` from ``pack_weights(w, groups=...)``.
    stride, dilation : int or (h, w) pair of ints >= 1.
    pads : (top, bottom, left, right) ints >= 0.
    groups : int, must match the packed weights' groups.
    input_zero_point : int in the range of ``x``'s dtype; weight_zero_point : int or (O,) in [-128, 127].
    bias : None or (O,) integers in the int32 range.
    path, epilogue : as in :func:`gemm_s32` (``epilogue`` prepared for O channels).

    Returns
    -------
    ndarray (N, OH, OW, O) of int32 with ``OH = (H + top + bottom - dh*(KH-1) - 1) // sh + 1``.
    """
    x, offset = _activation(x, _CONV, "x")
    packed = _packed(w, _CONV, 4, groups)
    if x.ndim != 4 or x.shape[3] != groups * packed.channels:
        raise ValueError(f"{_CONV}: x must be NHWC with {groups * packed.channels} channels, got shape {x.shape}")
    sh, sw = _pair(stride, _CONV, "stride", 1)
    dh, dw = _pair(dilation, _CONV, "dilation", 1)
    if len(pads) != 4 or not all(isinstance(p, (int, np.integer)) and p >= 0 for p in pads):
        raise ValueError(f"{_CONV}: pads must be 4 ints >= 0 (top, bottom, left, right), got {pads!r}")
    pt, pb, pl, pr = (int(p) for p in pads)
    _, h, wd, _ = x.shape
    _, kh, kw, _ = packed.shape
    hp, wp = h + pt + pb, wd + pl + pr
    if (hp - dh * (kh - 1) - 1) // sh + 1 <= 0 or (wp - dw * (kw - 1) - 1) // sw + 1 <= 0:
        raise ValueError(f"{_CONV}: the dilated {kh}x{kw} kernel does not fit the padded {hp}x{wp} input")
    alpha, zw, bias = _quant_args(_CONV, offset, packed.shape[0], input_zero_point, weight_zero_point, bias,
                                  ("input_zero_point", "weight_zero_point"))
    _check_epilogue(epilogue, packed.shape[0], _CONV)
    return prepare_conv2d_s32(x.shape, x.dtype, packed, (sh, sw), (dh, dw), (pt, pb, pl, pr), alpha, zw, bias,
                              _choose_path(path, _CONV), epilogue)(x)


@njit(cache=True, nogil=True, inline="always")
def _spread_pixels(src, dst, n_pixels, ch, cp, fill):
    """``n_pixels`` pixels of ``ch`` bytes from ``src`` into ``cp``-byte pixels of ``dst``, the bytes past ``ch``
    set to ``fill``: indices, not a slice per pixel (a slice costs more than its few bytes), from the rows'
    starts (LLVM vectorizes the loop with constant counts and no offsets, ~10x)."""
    for p in range(n_pixels):
        for q in range(cp):
            dst[p * cp + q] = src[p * ch + q] if q < ch else fill


@njit(cache=True, nogil=True)
def _padded_codes(x, fill, h, w, c, pt, pl, out):
    """``out (N, HP, WP, G, CP)`` = the bytes of ``x (N, H, W, G, C)`` (both C-contiguous, given flat) at
    ``[:, pt:pt+H, pl:pl+W, :, :C]``, ``fill`` (the zero point's byte) elsewhere."""
    n_img = x.shape[0] // (h * w * c)  # c: G * C, the input's channels
    _, hp, wp, g, cp = out.shape
    ch = c // g
    flat = out.ravel()
    flat[:] = fill
    for b in range(n_img):
        for y in range(h):
            s0 = (b * h + y) * w * c  # one input row
            d0 = ((b * hp + pt + y) * wp + pl) * g * cp
            src, dst = x[s0:s0 + w * c], flat[d0:d0 + w * g * cp]
            if ch == cp:
                dst[:] = src
            elif cp == 4 and ch == 3:  # RGB images (constant counts: the pixel loop vectorizes)
                _spread_pixels(src, dst, w * g, 3, 4, fill)
            elif cp == 4 and ch == 1:  # grayscale images, spectrograms
                _spread_pixels(src, dst, w * g, 1, 4, fill)
            else:
                _spread_pixels(src, dst, w * g, ch, cp, fill)


def prepare_conv2d_s32(x_shape, dtype, packed, stride, dilation, pads, alpha, zw, bias, path, epilogue=None):
    """:func:`conv2d_s32` for inputs of ``x_shape`` and ``dtype`` on ``packed``, prepared once from
    validated arguments (pairs of ints, ``pads`` (top, bottom, left, right), ``alpha`` the unsigned
    code of the input zero point, ``zw``/``bias`` (O,) int64): ``run(x) -> (N, OH, OW, O) int32``."""
    flip = _flip(dtype)
    (sh, sw), (dh, dw), (pt, pb, pl, pr) = stride, dilation, pads
    n_img, h, wd, _ = x_shape
    n_out, kh, kw, ch = packed.shape
    groups, cp = packed.groups, packed.channels_padded
    hp, wp = h + pt + pb, wd + pl + pr
    oh, ow = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
    pix = wp * groups * cp
    row_off = ((np.arange(n_img)[:, None, None] * hp + np.arange(oh)[None, :, None] * sh) * pix
               + np.arange(ow)[None, None, :] * (sw * groups * cp)).astype(np.int64).ravel()
    segs = ((np.arange(kh)[:, None] * (dh * pix)) + np.arange(kw)[None, :] * (dw * groups * cp)).astype(np.int64).ravel()
    # Without groups and dilation along W, a kernel row's taps are one run of kw * cp bytes.
    tap_run = kw if groups == 1 and dw == 1 else 1
    tail = _prepare_run(row_off, cp, segs, packed, alpha, zw, bias, path, epilogue, tap_run, flip)
    direct = (pt, pb, pl, pr) == (0, 0, 0, 0) and cp == ch and groups == 1

    def run(x):
        # Padded buffer: every tap outside the image (and every padding channel) holds u = alpha,
        # i.e. x = zx, so it adds (x - zx) * (w - zw) = 0 once the zero-point terms are folded in.
        if direct:  # no padding: the input is the buffer
            ubuf = np.require(x.view(np.uint8), requirements=["C", "W"])
        else:
            ubuf = np.empty((n_img, hp, wp, groups, cp), np.uint8)
            _padded_codes(np.ascontiguousarray(x).view(np.uint8).ravel(), np.uint8(alpha ^ flip), h, wd,
                          groups * ch, pt, pl, ubuf)
        return tail(ubuf.ravel()).reshape(n_img, oh, ow, n_out)

    return run


def row_sums(a) -> np.ndarray:
    """``sum_k a[m, k]`` of an (M, K) int8/uint8 matrix, wrapped to int32 (exact while K < 2^23)."""
    a, _ = _activation(a, "row_sums", "a")
    if a.ndim != 2:
        raise ValueError(f"row_sums: a must be 2-D (M, K), got shape {a.shape}")
    sums = np.empty(a.shape[0], np.int64)
    _sums(np.ascontiguousarray(a), sums)
    return sums.astype(np.int32)


def warmup() -> None:
    """Compile every driver on tiny inputs (cached on disk), so that later calls pay no JIT time."""
    rng = np.random.default_rng(0)
    for dtype in (np.int8, np.uint8):
        a = rng.integers(0, 100, (3, 5)).astype(dtype)
        b = rng.integers(-9, 9, (2, 5)).astype(np.int8)
        x = rng.integers(0, 100, (1, 3, 3, 2)).astype(dtype)
        w = rng.integers(-9, 9, (2, 2, 2, 1)).astype(np.int8)
        for path in PATHS:
            gemm_s32(a, b, b_zero_point=1, path=path)
            conv2d_s32(x, w, groups=2, pads=(1, 0, 1, 0), weight_zero_point=1, path=path)
