"""CMSIS-DSP's fixed-point MFCC, arm_mfcc_q15 / _q31 (Source/TransformFunctions/arm_mfcc_q15.c / _q31.c), bit for
bit with the library's generic C code (docs/dsp.md §MFCC). One frame of ``fft_len`` samples:

1. ``m = arm_absmax(x)``; unless m is 0 or the maximum, ``x`` is normalized to full scale: ``arm_divide(max, m)``
   gives (quotient, shift), then ``arm_scale(x, quotient, shift)``;
2. ``arm_mult(x, window)``;
3. ``arm_rfft`` (forward, bit reversal on), ``arm_cmplx_mag`` of the fft_len / 2 + 1 bins;
4. each mel filter ``arm_dot_prod(mag[pos:pos + len], coefs)`` (q15: the int64 sum of products, q31: of the
   products ``>> 14``), ``+ MICRO`` (q15 0x219, q31 0x08637BD0), ``>> 10`` (q31: ``>> 28``), cast to int32 and
   saturated to 31 bits;
5. the normalization undone: ``arm_scale_q31(., m << 16, 0)`` (q31: ``m``);
6. ``arm_vlog_q31``, ``+ (log2(fft_len) + 12) * 0x02C5C860`` (ln 2 in q26; saturating), ``>> 19`` (q31: ``>> 3``);
7. q15: each value cast to int16 (wrapping); ``arm_mat_vec_mult(dct, .)``.

The instance holds the C init's arrays: the DCT matrix (nb_dct_outputs x nb_mel_filters, row-major), the filters'
first bins and lengths, their packed coefficients and the window; and ``plan``, the same with the FFT's tables in one
int64 array, which :func:`_frame` (one compiled call a frame, through the stage kernels of basic, fft, complex_math,
fastmath and matrix) reads. A frame whose largest magnitude is 1 makes the
C code shift by more than it defines (q15: none; q31: ``arm_scale_q31`` with shift 31, a 32-bit shift by 32);
dspsim takes the host's result (x86 masks the count to 0), which the goldens measure.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .._errors import names_its_errors
from . import fft as _fft
from ._checks import check_int, check_q
from .basic import _binary, _dot, _offset, _scale_q31, _scale_short, _shift
from .complex_math import _mag_squares
from .fastmath import _divide_core, _sqrt, _vlog_q31, _wrap, sqrt_lut
from .matrix import _mat_vec

MFCC_LENGTHS = (32, 64, 128, 256, 512, 1024, 2048, 4096)
_LOG2TOLOG = 0x02C5C860
_MICRO = {"q15": 0x219, "q31": 0x08637BD0}
_MEL_SHIFT = 10


@dataclass(frozen=True)
class MfccInstance:
    """``arm_mfcc_instance_q15`` / ``_q31``."""

    q: str
    fft_len: int
    nb_mel_filters: int
    nb_dct_outputs: int
    dct_coefs: np.ndarray
    filter_pos: np.ndarray
    filter_lengths: np.ndarray
    filter_coefs: np.ndarray
    window_coefs: np.ndarray
    rfft: _fft.RfftInstance
    plan: np.ndarray
    """Everything a frame reads, one read-only int64 array (:func:`_plan`)."""


# the plan's header: sizes, then where each table starts
_N, _MELS, _DCTS, _Q31, _WINDOW, _TWIDDLES, _PERM, _COEF_A, _COEF_B, _POS, _LENGTHS, _COEFS, _DCT, _LUT = range(14)
_HEADER = 14


def _plan(q, n, mel, dct_n, dct, pos, lengths, coefs, window, rfft):
    """The frame's tables in one int64 array: a header (sizes, the offset of each table), the window, the complex
    FFT's twiddles and bit-reversal permutation, the split tables at the instance's stride (read with modifier 1),
    the filters' first bins, lengths and coefficients, the DCT (row-major) and arm_sqrt_q31's first-guess table."""
    a = rfft.coef_a.reshape(-1, 2)[::rfft.modifier][:n // 2].reshape(-1)
    b = rfft.coef_b.reshape(-1, 2)[::rfft.modifier][:n // 2].reshape(-1)
    tables = (window, rfft.cfft.twiddles, rfft.cfft.bit_rev, a, b, pos, lengths, coefs, dct, sqrt_lut("q31"))
    head = [n, mel, dct_n, int(q == "q31")]
    at = _HEADER
    for t in tables:
        head.append(at)
        at += t.shape[0]
    plan = np.concatenate([np.array(head, np.int64)] + [np.asarray(t, np.int64) for t in tables])
    plan.flags.writeable = False
    return plan


@njit(cache=True, nogil=True)
def _frame(x, plan, out):
    """arm_mfcc_q15 / _q31 of one frame (x: int16 / int32, fft_len samples) through the stage kernels: the
    nb_dct_outputs MFCCs into out (x's dtype)."""
    n, mels, dcts, is_q31 = plan[_N], plan[_MELS], plan[_DCTS], plan[_Q31] != 0
    bits = 32 if is_q31 else 16
    top = (np.int64(1) << (bits - 1)) - 1
    half = n >> 1
    bins = half + 1
    scratch = np.empty(5 * n + 3 * bins + 2 * mels, np.int64)             # (no stage runs in place: LLVM then
    src, buf, spec = scratch[:n], scratch[n:2 * n], scratch[2 * n:4 * n]  # keeps the vector loops)
    sq, root, status = scratch[4 * n:4 * n + bins], scratch[4 * n + bins:4 * n + 2 * bins], \
        scratch[4 * n + 2 * bins:4 * n + 3 * bins]
    mel, vec = scratch[4 * n + 3 * bins:4 * n + 3 * bins + mels], scratch[4 * n + 3 * bins + mels:]
    m = np.int64(0)                                                      # arm_absmax
    for i in range(n):
        v = np.int64(x[i])
        m = max(m, v if v >= 0 else -v)
    m = min(m, top)                                                      # |min| saturates
    normalize = m != 0 and m != top
    if normalize:                                                        # arm_divide, arm_scale
        _, quotient, shift = _divide_core(top, m, bits)
        if is_q31:  # shift 31 (m == 1) makes the C shift a 32-bit value by 32: x86 takes the count mod 32
            _scale_q31(x, src, quotient, (shift + 1) & 31)
        else:
            _scale_short(x, src, quotient, 15 - shift, 16)
    else:
        for i in range(n):
            src[i] = x[i]
    _binary(src, plan[plan[_WINDOW]:plan[_WINDOW] + n], buf, 2, bits)   # arm_mult
    _fft._cfft(buf, half, plan[plan[_TWIDDLES]:plan[_PERM]], is_q31, 1,  # arm_rfft: the complex FFT of n / 2,
               plan[plan[_PERM]:plan[_COEF_A]], True)
    _fft._split_rfft(buf, half, plan[plan[_COEF_A]:plan[_COEF_B]],       # the split
                     plan[plan[_COEF_B]:plan[_POS]], 1, is_q31, spec)
    _mag_squares(spec, not is_q31, sq)                                   # arm_cmplx_mag of bins 0 .. n / 2
    _sqrt(sq, root, status, plan[plan[_LUT]:], 32)
    if not is_q31:
        for k in range(bins):
            root[k] >>= 16
    pos, lengths = plan[_POS], plan[_LENGTHS]
    start = plan[_COEFS]
    for i in range(mels):                                                # arm_dot_prod per filter
        p, ln = plan[pos + i], plan[lengths + i]
        acc = _dot(root[p:p + ln], plan[start:start + ln], bits) + (0x08637BD0 if is_q31 else 0x219)
        start += ln
        acc = _wrap(acc >> (_MEL_SHIFT + (18 if is_q31 else 0)), 32)     # __SSAT takes an int32
        mel[i] = min(max(acc, -(np.int64(1) << 30)), (np.int64(1) << 30) - 1)
    if normalize:
        _scale_q31(mel, mel, m if is_q31 else m << 16, 1)
    _vlog_q31(mel, mel)
    fft_shift = np.int64(0)
    while (np.int64(1) << fft_shift) < n:
        fft_shift += 1
    _offset(mel, mel, (fft_shift + 2 + _MEL_SHIFT) * _LOG2TOLOG, 32)
    _shift(mel, mel, -3 if is_q31 else -19, 32)
    for i in range(mels):
        vec[i] = mel[i] if is_q31 else _wrap(mel[i], 16)                # (q15_t): wrapping
    _mat_vec(plan[plan[_DCT]:plan[_LUT]].reshape((dcts, mels)), vec, out, not is_q31)


def _init(func, fft_len, nb_mel_filters, nb_dct_outputs, dct_coefs, filter_pos, filter_lengths, filter_coefs,
          window_coefs, q):
    if isinstance(fft_len, (bool, np.bool_)) or not isinstance(fft_len, (int, np.integer)):
        raise TypeError(f"{func}: fft_len must be an int, got {type(fft_len).__name__}")
    if int(fft_len) not in MFCC_LENGTHS:
        raise ValueError(f"{func}: fft_len must be one of {', '.join(map(str, MFCC_LENGTHS))} "
                         f"(ARM_MATH_ARGUMENT_ERROR), got {int(fft_len)}")
    n = int(fft_len)
    mel = check_int(nb_mel_filters, func, "nb_mel_filters", 1, 2**31 - 1)
    dct_n = check_int(nb_dct_outputs, func, "nb_dct_outputs", 1, 2**31 - 1)
    dct = check_q(dct_coefs, func, "dct_coefs", q).copy()
    if dct.shape[0] != mel * dct_n:
        raise ValueError(f"{func}: dct_coefs must hold nb_dct_outputs * nb_mel_filters = {mel * dct_n} values, "
                         f"got {dct.shape[0]}")
    pos, lengths = (np.asarray(a) for a in (filter_pos, filter_lengths))
    for name, a in (("filter_pos", pos), ("filter_lengths", lengths)):
        if a.dtype.kind not in "iu" or a.shape != (mel,):
            raise ValueError(f"{func}: {name} must be nb_mel_filters = {mel} integers, got {a.dtype} {a.shape}")
    pos, lengths = pos.astype(np.int64), lengths.astype(np.int64)
    bins = n // 2 + 1
    if np.any(pos < 0) or np.any(lengths < 1) or np.any(pos + lengths > bins):
        raise ValueError(f"{func}: each filter must lie within the fft_len / 2 + 1 = {bins} magnitude bins")
    coefs = check_q(filter_coefs, func, "filter_coefs", q).copy()
    if coefs.shape[0] != int(lengths.sum()):
        raise ValueError(f"{func}: filter_coefs must hold sum(filter_lengths) = {int(lengths.sum())} values, got "
                         f"{coefs.shape[0]}")
    window = check_q(window_coefs, func, "window_coefs", q).copy()
    if window.shape[0] != n:
        raise ValueError(f"{func}: window_coefs must hold fft_len = {n} values, got {window.shape[0]}")
    rfft = _fft._rfft_init(func, n, False, True, q)
    return MfccInstance(q, n, mel, dct_n, dct, pos, lengths, coefs, window, rfft,
                        _plan(q, n, mel, dct_n, dct, pos, lengths, coefs, window, rfft))


def _run(func, S, x, q):
    if not isinstance(S, MfccInstance) or S.q != q:
        raise TypeError(f"{func}: S must be an MfccInstance of {q} (from arm_mfcc_init_{q}), got {S!r}"[:200])
    x = check_q(x, func, "x", q)
    if x.shape[0] != S.fft_len:
        raise ValueError(f"{func}: x must hold fft_len = {S.fft_len} samples, got {x.shape[0]}")
    out = np.empty(S.nb_dct_outputs, x.dtype)
    _frame(x, S.plan, out)
    return out


@names_its_errors
def arm_mfcc_init_q15(fft_len, nb_mel_filters, nb_dct_outputs, dct_coefs, filter_pos, filter_lengths, filter_coefs,
                      window_coefs) -> MfccInstance:
    """A q15 MFCC of fft_len in {32, ..., 4096} samples (the arrays as arm_mfcc_init_q15 takes them)."""
    return _init("arm_mfcc_init_q15", fft_len, nb_mel_filters, nb_dct_outputs, dct_coefs, filter_pos,
                 filter_lengths, filter_coefs, window_coefs, "q15")


@names_its_errors
def arm_mfcc_init_q31(fft_len, nb_mel_filters, nb_dct_outputs, dct_coefs, filter_pos, filter_lengths, filter_coefs,
                      window_coefs) -> MfccInstance:
    """A q31 MFCC of fft_len in {32, ..., 4096} samples."""
    return _init("arm_mfcc_init_q31", fft_len, nb_mel_filters, nb_dct_outputs, dct_coefs, filter_pos,
                 filter_lengths, filter_coefs, window_coefs, "q31")


@names_its_errors
def arm_mfcc_q15(S, x):
    """The nb_dct_outputs MFCCs (q8.7) of one frame of int16 samples."""
    return _run("arm_mfcc_q15", S, x, "q15")


@names_its_errors
def arm_mfcc_q31(S, x):
    """The nb_dct_outputs MFCCs (q8.23) of one frame of int32 samples."""
    return _run("arm_mfcc_q31", S, x, "q31")
