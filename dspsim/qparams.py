"""Choosing a scale and zero point from a float range, as each framework does it.

:func:`choose_qparams` turns a calibrated range ``[min, max]`` (one pair per tensor, or 1-D arrays,
one pair per channel) into the ``(scale, zero_point)`` that a given framework would write, bit for
bit. The schemes differ in more than their formulas: float32 versus double arithmetic, which end
of the range the zero point is solved from, and the tie rule of the final rounding.

============== ================================================================ ===========================
scheme         rule (``qmin``/``qmax``: the integer range)                      matches
============== ================================================================ ===========================
tflite         int8: range widened to contain 0 (and by +-1e-6 when narrower     TF 2.21 converter (PTQ),
               than 1e-6); ``s = f32(f32(max) - f32(min)) / 255`` in float32;    30/30 golden ranges
               ``z = round(f32(qmin - min / s))``, ties away from zero, clamped.
               int16: symmetric, ``s = f32(max|.|) / 32767``, ``z = 0``          10/10 golden ranges
tflite_weight  symmetric int8 per channel, narrow: ``s = f32(2 m) / 254`` with    TF 2.21 converter,
               ``m = max|w|`` (a channel narrower than 1e-6 is widened to         160/160 golden channels
               +-5e-7), ``z = 0``
mlir_nudged    MLIR ``getNudgedScaleAndZeroPoint`` in double: ``s = (max - min)   the MLIR source; NOT what
               / (qmax - qmin)``, ``z`` from min or max (smaller error), ties     the PTQ converter writes
               away from zero, clamped; no widening to 0                          (10/30 golden differ)
torch_affine   ``torch.ao.quantization`` observers, float32 tensor math:          torch 2.13 observers
               ``s = max(f32(f32(max+ - min-) / (qmax - qmin)), eps)``,           (live tests)
               ``z = clamp(qmin - rint(f32(min- / s)))`` (ties to even)
torch_symmetric ``s = max(f32(max(-min-, max+) / ((qmax - qmin) / 2)), eps)``,   torch 2.13 observers
               ``z = 0`` (128 for quint8, 2^15 for uint16)
textbook       ``s = (b - a) / (bq - aq)``, ``z = int((b aq - a bq) / (b - a))``  the textbook formula
               in double; ``int`` truncates toward zero
symmetric      ``s = f32(max(|min|, |max|) / qmax)`` (double, stored float32),    generic; exact zero
               ``z = 0``; narrow range by default
pof2           ``s = 2^-f``, f from :func:`dspsim.pof2_frac_bits` (the smallest   Vitis AI pof2s style
               power-of-two range that holds both ends), ``z = 0``
============== ================================================================ ===========================

``min- = min(min, 0)``, ``max+ = max(max, 0)``. Every scheme except ``textbook`` and
``mlir_nudged`` first widens the range to contain 0, so that 0.0 has an exact code.

The ``textbook`` zero point truncates (``int()``) where the others round: it differs from the
rounded value whenever the exact zero point has a fractional part of 1/2 or more (about half of
all ranges; toward zero for negative ones). ``[-0.3, 1]`` on uint8 has the exact zero point
``0.3 * 255 / 1.3 = 58.846...``::

    >>> choose_qparams(-0.3, 1.0, "uint8", scheme="textbook").zero_point
    58
    >>> choose_qparams(-0.3, 1.0, "uint8", scheme="torch_affine").zero_point
    59
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ._errors import names_its_errors

from .dtypes import IntType, int_type
from .fixedpoint import tflite_round
from .quantize import pof2_frac_bits

SCHEMES = ("tflite", "tflite_weight", "mlir_nudged", "torch_affine", "torch_symmetric", "textbook",
           "symmetric", "pof2")
TORCH_EPS = float(np.finfo(np.float32).eps)
_F = np.float32


class QParams(NamedTuple):
    """A scale and zero point with the integer range they are meant for.

    ``scale`` is a float32 scalar (per tensor) or a float32 array (per channel); ``zero_point``
    an int or an int64 array; ``quant_min``/``quant_max`` the codes the scheme uses (narrow or
    reduced ranges included); ``dtype`` the integer type's name; ``scheme`` the rule that made them.
    """

    scale: np.float32 | np.ndarray
    zero_point: int | np.ndarray
    quant_min: int
    quant_max: int
    dtype: str
    scheme: str


def _clamp(v: int, lo: int, hi: int) -> int:
    return min(max(v, lo), hi)


# --------------------------------------------------------------------------------------------
# one channel per scheme: (lo, hi) are Python floats holding float32 values (double for textbook)
# --------------------------------------------------------------------------------------------
def _tflite(lo, hi, qmin, qmax, signed16):
    """TF 2.21 converter, MLIR quantizer with ``legacy_float_scale`` (``DownCastScale``)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if signed16:  # ConvertOpStatsToQDQs: int16 activations are symmetric, narrow range
        m = max(abs(lo), abs(hi))
        return _F(_F(_F(m) - _F(-m)) / _F(qmax - qmin)), 0
    if abs(hi - lo) < 1e-6:  # observed: ranges narrower than 1e-6 grow by 1e-6 on each side
        lo, hi = lo - 1e-6, hi + 1e-6
    s = _F(_F(_F(hi) - _F(lo)) / _F(qmax - qmin))  # float32 subtraction and division
    z = float(_F(qmin - lo / float(s)))  # double division, stored to float
    return s, qmin if z < qmin else qmax if z > qmax else tflite_round(z)


def _tflite_weight(lo, hi, qmin, qmax):
    """``ExtractMinMaxFromAttr`` (symmetric) + ``ExpandVerySmallRange`` + ``DownCastScale``."""
    m = max(abs(min(lo, 0.0)), abs(max(hi, 0.0)))
    lo, hi = -m, m
    if hi - lo <= 1e-6:  # kNearZeroTolerance: widen to at least +-kNearZeroTolerance / 2
        lo, hi = min(lo, -5e-7), max(hi, 5e-7)
    return _F(_F(_F(hi) - _F(lo)) / _F(qmax - qmin)), 0


def _mlir_nudged(lo, hi, qmin, qmax):
    """``getNudgedScaleAndZeroPoint`` (``FakeQuantSupport.cpp``), all in double."""
    if abs(hi - lo) < np.finfo(np.float64).eps:
        return _F(1.0), qmin
    s = (hi - lo) / (qmax - qmin)
    from_min, err_min = qmin - lo / s, abs(qmin) + abs(lo / s)
    from_max, err_max = qmax - hi / s, abs(qmax) + abs(hi / s)
    z = from_min if err_min < err_max else from_max
    return _F(s), qmin if z < qmin else qmax if z > qmax else tflite_round(z)


def _torch(lo, hi, qmin, qmax, symmetric, sym_zp, eps):
    """``UniformQuantizationObserverBase._calculate_qparams``: float32 tensors, HTE round."""
    lo, hi = _F(min(lo, 0.0)), _F(max(hi, 0.0))
    if symmetric:
        s = max(_F(max(-lo, hi) / _F((qmax - qmin) / 2)), _F(eps))
        return s, sym_zp
    s = max(_F(_F(hi - lo) / _F(qmax - qmin)), _F(eps))
    r = int(np.rint(_F(lo / s)))  # <= 0
    if r < -(1 << 31):  # .to(torch.int) beyond int32: x86 gives INT32_MIN (observed, qint32)
        r = -(1 << 31)
    z = (qmin - r + (1 << 31)) % (1 << 32) - (1 << 31)  # int32 subtraction, wraps
    return s, _clamp(z, qmin, qmax)


def _textbook(lo, hi, qmin, qmax):
    s = (hi - lo) / (qmax - qmin)
    return _F(s), int((hi * qmin - lo * qmax) / (hi - lo))


def _symmetric(lo, hi, qmax):
    m = max(abs(lo), abs(hi))
    return _F(m / qmax if m > 0 else 1.0), 0


# --------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------
def _range_arrays(min_val, max_val, func):
    arrs = []
    for name, v in (("min", min_val), ("max", max_val)):
        a = np.asarray(v)
        if a.dtype.kind not in "fiu" or a.dtype == np.bool_:
            raise TypeError(f"{func}: {name} must be a real number or a 1-D array of them, got dtype {a.dtype}")
        if a.ndim > 1:
            raise ValueError(f"{func}: {name} must be a scalar (per tensor) or 1-D (per channel), got shape {a.shape}")
        if a.size == 0:
            raise ValueError(f"{func}: {name} is empty (no calibration data?)")
        a = a.astype(np.float64)
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{func}: {name} must be finite, got {v!r}")
        arrs.append(a)
    lo, hi = arrs
    if lo.shape != hi.shape:
        raise ValueError(f"{func}: min and max must have the same shape, got {lo.shape} and {hi.shape}")
    if np.any(lo > hi):
        raise ValueError(f"{func}: min must be <= max, got min={min_val!r}, max={max_val!r}")
    return lo, hi


def _torch_range(t: IntType, reduce_range, quant_min, quant_max, func):
    """``calculate_qmin_qmax``: the default or custom range, halved by ``reduce_range``."""
    if (quant_min is None) != (quant_max is None):
        raise ValueError(f"{func}: give both quant_min and quant_max, or neither")
    if quant_min is not None:
        if not quant_min <= 0 <= quant_max or quant_min >= quant_max:
            raise ValueError(f"{func}: the custom range must satisfy quant_min <= 0 <= quant_max and "
                             f"quant_min < quant_max, got [{quant_min}, {quant_max}]")
        if quant_min < t.min or quant_max > t.max:
            raise ValueError(f"{func}: [{quant_min}, {quant_max}] does not fit {t.name} [{t.min}, {t.max}]")
        return (quant_min // 2, quant_max // 2) if reduce_range else (quant_min, quant_max)
    if reduce_range and t.bits == 8:
        return (-64, 63) if t.signed else (0, 127)
    return t.min, t.max


@names_its_errors
def choose_qparams(min_val, max_val, dtype="int8", scheme="tflite", *, narrow_range=None, reduce_range=False,
                   quant_min=None, quant_max=None, eps=TORCH_EPS, bits=None) -> QParams:
    """Scale and zero point for the range ``[min_val, max_val]``, as ``scheme``'s framework picks them.

    Parameters
    ----------
    min_val, max_val : float, or 1-D arrays of equal length (one range per channel)
        Finite, ``min_val <= max_val``. Float32 schemes (``tflite*``, ``torch_*``) read them as
        float32 (as the calibrators record them); ``textbook``/``mlir_nudged`` as double.
    dtype : integer type name ("int8", "uint8", "int16", "uint16", "int32", or TF/torch's
        "qint8", "quint8", "qint32", ...)
    scheme : one of :data:`SCHEMES`; the table in the module docstring gives each rule.
    narrow_range : bool, optional
        Drop the lowest code of a signed type (``[-127, 127]`` for int8). Default: True for
        ``symmetric``/``pof2``/``tflite_weight`` (which require it), False for ``mlir_nudged``/
        ``textbook``; ``tflite`` int16 is always narrow, int8 never; torch expresses narrow range as
        ``quant_min=-127, quant_max=127``.
    reduce_range : bool
        torch only: 8-bit ranges become ``[-64, 63]`` / ``[0, 127]``; a custom range is halved
        with floor division (``quant_min // 2``), as ``calculate_qmin_qmax`` does.
    quant_min, quant_max : int, optional
        torch and textbook only: a custom integer range (must contain 0 for torch).
    eps : float
        torch only: the lower bound of the scale (``torch.finfo(torch.float32).eps``).
    bits : int, optional
        pof2 only: the word length (default: the dtype's bits).

    Returns
    -------
    QParams
        Scalars for scalar inputs, arrays (float32 scales, int64 zero points) for 1-D inputs.

    Raises
    ------
    ValueError
        min > max, non-finite or empty ranges, an unknown scheme, a dtype the scheme does not
        define (e.g. unsigned with ``symmetric``), an invalid custom range; the message names
        ``choose_qparams`` and the rule.
    TypeError
        Non-numeric ranges or dtype.

    Examples
    --------
    >>> choose_qparams(-1.0, 1.0, "int8", "tflite")
    QParams(scale=np.float32(0.007843138), zero_point=-1, quant_min=-128, quant_max=127, dtype='int8', scheme='tflite')
    """
    func = "choose_qparams"
    if scheme not in SCHEMES:
        raise ValueError(f"{func}: unknown scheme {scheme!r}; expected one of {list(SCHEMES)}")
    t = int_type(dtype, func)
    lo, hi = _range_arrays(min_val, max_val, func)
    custom = quant_min is not None or quant_max is not None
    if custom and scheme not in ("torch_affine", "torch_symmetric", "textbook"):
        raise ValueError(f"{func}: quant_min/quant_max apply to the torch and textbook schemes only")
    if reduce_range and not scheme.startswith("torch"):
        raise ValueError(f"{func}: reduce_range applies to the torch schemes only")
    if narrow_range is not None and not isinstance(narrow_range, (bool, np.bool_)):
        raise TypeError(f"{func}: narrow_range must be a bool or None")
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, (float, int, np.floating, np.integer)):
        raise TypeError(f"{func}: eps must be a positive finite float, got {eps!r}")
    if bits is not None and (isinstance(bits, (bool, np.bool_)) or not isinstance(bits, (int, np.integer))):
        raise TypeError(f"{func}: bits must be an int or None, got {bits!r}")
    if scheme in ("tflite", "tflite_weight", "torch_affine", "torch_symmetric"):
        big = np.finfo(np.float32).max
        if np.any(np.abs(lo) > big) or np.any(np.abs(hi) > big):
            raise ValueError(f"{func}: scheme {scheme!r} keeps min and max in float32; they must be finite there "
                             f"(|value| <= {big:.6g})")
        lo, hi = lo.astype(np.float32).astype(np.float64), hi.astype(np.float32).astype(np.float64)

    if scheme == "tflite":
        if t.name not in ("int8", "qint8", "int16", "qint16"):
            raise ValueError(f"{func}: scheme 'tflite' defines int8 (asymmetric) and int16 (symmetric) "
                             f"activations only, got dtype {t.name!r}")
        sixteen = t.bits == 16
        if narrow_range is not None and bool(narrow_range) != sixteen:
            raise ValueError(f"{func}: scheme 'tflite' uses narrow range for int16 and full range for int8")
        if sixteen and np.any(np.maximum(np.abs(lo), np.abs(hi)) == 0):
            raise ValueError(f"{func}: scheme 'tflite' int16 of an all-zero range is degenerate "
                             f"(the converter writes scale 0)")
        qmin, qmax = (t.min + 1, t.max) if sixteen else (t.min, t.max)
        one = lambda a, b: _tflite(a, b, qmin, qmax, sixteen)  # noqa: E731
    elif scheme == "tflite_weight":
        if t.name not in ("int8", "qint8") or narrow_range is False:
            raise ValueError(f"{func}: scheme 'tflite_weight' is symmetric int8 with narrow range [-127, 127], "
                             f"got dtype {t.name!r}, narrow_range={narrow_range}")
        qmin, qmax = -127, 127
        one = lambda a, b: _tflite_weight(a, b, qmin, qmax)  # noqa: E731
    elif scheme == "mlir_nudged":
        qmin, qmax = (t.narrow_min if narrow_range else t.min), t.max
        one = lambda a, b: _mlir_nudged(a, b, qmin, qmax)  # noqa: E731
    elif scheme in ("torch_affine", "torch_symmetric"):
        if narrow_range is not None:
            raise ValueError(f"{func}: the torch schemes express narrow range as quant_min/quant_max")
        sym = scheme == "torch_symmetric"
        if sym and reduce_range and not t.signed and t.bits == 8:
            raise ValueError(f"{func}: torch cannot reduce range for symmetric quantization of quint8")
        if not (isinstance(eps, (float, int, np.floating)) and eps > 0 and math.isfinite(eps)):
            raise ValueError(f"{func}: eps must be a positive finite float, got {eps!r}")
        qmin, qmax = _torch_range(t, reduce_range, quant_min, quant_max, func)
        if not t.signed and t.bits == 8:  # custom ranges use the floor midpoint
            sym_zp = (qmin + qmax) // 2 if quant_min is not None else 128
        else:
            sym_zp = 1 << 15 if (not t.signed and t.bits == 16) else 0
        one = lambda a, b: _torch(a, b, qmin, qmax, sym, sym_zp, float(eps))  # noqa: E731
    elif scheme == "textbook":
        qmin, qmax = (quant_min, quant_max) if quant_min is not None else \
            ((t.narrow_min if narrow_range else t.min), t.max)
        if (quant_min is None) != (quant_max is None) or qmin >= qmax or qmin < t.min or qmax > t.max:
            raise ValueError(f"{func}: textbook needs t.min <= quant_min < quant_max <= t.max, got [{qmin}, {qmax}]")
        if np.any(lo > 0) or np.any(hi < 0) or np.any(lo == hi):
            raise ValueError(f"{func}: scheme 'textbook' needs min <= 0 <= max and min < max, else its zero "
                             f"point falls outside [quant_min, quant_max] or divides by zero")
        one = lambda a, b: _textbook(a, b, qmin, qmax)  # noqa: E731
    else:  # symmetric, pof2
        if not t.signed:
            raise ValueError(f"{func}: scheme {scheme!r} is symmetric around 0 and needs a signed dtype, "
                             f"got {t.name!r}")
        narrow = True if narrow_range is None else bool(narrow_range)
        qmin, qmax = (t.narrow_min if narrow else t.min), t.max
        if scheme == "symmetric":
            one = lambda a, b: _symmetric(a, b, qmax)  # noqa: E731
        else:
            nbits = t.bits if bits is None else bits
            if isinstance(nbits, bool) or not isinstance(nbits, (int, np.integer)) or not 2 <= nbits <= t.bits:
                raise ValueError(f"{func}: bits must be an int in [2, {t.bits}] for {t.name}, got {bits!r}")
            qmax = (1 << (nbits - 1)) - 1
            qmin = -qmax if narrow else -qmax - 1

            def one(a, b):
                f = pof2_frac_bits(np.array([a, b]), nbits, narrow)
                return _F(math.ldexp(1.0, -f)), 0

    pairs = [one(float(a), float(b)) for a, b in zip(lo.reshape(-1), hi.reshape(-1))]
    if lo.ndim == 0:
        s, z = pairs[0]
        return QParams(_F(s), int(z), int(qmin), int(qmax), t.name, scheme)
    return QParams(np.array([p[0] for p in pairs], np.float32), np.array([p[1] for p in pairs], np.int64),
                   int(qmin), int(qmax), t.name, scheme)
