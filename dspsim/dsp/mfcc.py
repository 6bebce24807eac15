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
first bins and lengths, their packed coefficients and the window. A frame whose largest magnitude is 1 makes the
C code shift by more than it defines (q15: none; q31: ``arm_scale_q31`` with shift 31, a 32-bit shift by 32);
dspsim takes the host's result (x86 masks the count to 0), which the goldens measure.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import names_its_errors
from . import fft as _fft
from ._checks import QTYPES, check_int, check_q
from .basic import _binary, _dot, _offset, _scale_q31, _scale_short, _shift
from .complex_math import _mag
from .fastmath import _divide, _vlog_q31
from .matrix import _mat_vec_run

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
    return MfccInstance(q, n, mel, dct_n, dct, pos, lengths, coefs, window, rfft)


def _run(func, S, x, q):
    if not isinstance(S, MfccInstance) or S.q != q:
        raise TypeError(f"{func}: S must be an MfccInstance of {q} (from arm_mfcc_init_{q}), got {S!r}"[:200])
    x = check_q(x, func, "x", q)
    if x.shape[0] != S.fft_len:
        raise ValueError(f"{func}: x must hold fft_len = {S.fft_len} samples, got {x.shape[0]}")
    bits = 16 if q == "q15" else 32
    top = (1 << (bits - 1)) - 1
    x = x.copy()
    m = int(np.minimum(np.abs(x.astype(np.int64)), top).max())          # arm_absmax
    normalize = m != 0 and m != top
    if normalize:                                                        # arm_divide, arm_scale
        _, quotient, shift = _divide(func, top, m, q)
        if q == "q15":
            _scale_short(x, x, np.int64(quotient), 15 - shift, 16)
        else:  # shift 31 (m == 1) makes the C shift a 32-bit value by 32: x86 takes the count mod 32
            _scale_q31(x, x, np.int64(quotient), (shift + 1) & 31)
    _binary(x, S.window_coefs, x, 2, bits)                               # arm_mult
    r = S.rfft
    spec = _fft._rfft(x.astype(np.int64), S.fft_len, False, r.cfft.twiddles, r.cfft.bit_rev, True, r.coef_a,
                      r.coef_b, r.modifier, q == "q31").astype(QTYPES[q])
    mag = _mag(func, spec[:2 * (S.fft_len // 2 + 1)], q)                 # arm_cmplx_mag
    mel = np.empty(S.nb_mel_filters, np.int32)
    start = 0
    for i in range(S.nb_mel_filters):                                    # arm_dot_prod per filter
        p, n = int(S.filter_pos[i]), int(S.filter_lengths[i])
        acc = int(_dot(mag[p:p + n], S.filter_coefs[start:start + n], bits)) + _MICRO[q]
        start += n
        acc >>= _MEL_SHIFT + (0 if q == "q15" else 18)
        acc = ((acc + 2**31) % 2**32) - 2**31                            # __SSAT takes an int32
        mel[i] = max(-2**30, min(2**30 - 1, acc))
    if normalize:
        _scale_q31(mel, mel, np.int64(m << 16 if q == "q15" else m), 1)
    _vlog_q31(mel, mel)
    fft_shift = S.fft_len.bit_length() - 1
    _offset(mel, mel, np.int64((fft_shift + 2 + _MEL_SHIFT) * _LOG2TOLOG), 32)
    _shift(mel, mel, -19 if q == "q15" else -3, 32)
    vec = mel.astype(np.int16) if q == "q15" else mel                    # (q15_t): wrapping
    return _mat_vec_run(func, S.dct_coefs.reshape(S.nb_dct_outputs, S.nb_mel_filters), vec, q)


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
