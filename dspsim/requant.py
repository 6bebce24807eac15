"""Requantization: from a wide integer accumulator to the output integer type.

One frozen value type, :class:`Requant`, names a scheme and holds its parameters (one value, or one
per output channel). :func:`requantize` is the one place where requantization happens; every kernel
calls its numba core (:func:`_requantized`, looped by :func:`_requantize_flat`) on each
accumulator.

Schemes (``Requant.scheme``) and their exact arithmetic, ``acc`` being the accumulator after the
bias (SEMANTICS 2, 5, 6, 7):

``"double"``  TFLite default / gemmlowp / CMSIS-NN: ``MultiplyByQuantizedMultiplier(acc, M, shift)``
              with two roundings (SRDHM ties toward +inf, then RoundingDivideByPOT ties away from
              zero), ``+ zp``, clamp.
``"single"``  ``TFLITE_SINGLE_ROUNDING``: ``(acc*M + 2^(30-shift)) >> (31-shift)``, one rounding, ties
              toward +inf, ``+ zp``, clamp.
``"shift"``   power-of-two DSP scale: ``acc * 2^shift`` (``shift < 0`` is a right shift) rounded by a
              :class:`~dspsim.fixedpoint.Rounding` tie rule, ``+ zp``, clamp. A left shift cannot
              lose anything: the value is exact, only the final clamp saturates.
``"fbgemm"``  PyTorch/FBGEMM ``ReQuantizeOutput``: int32 bias ``raw_f = float(acc)``; float bias,
              per-channel weights ``raw_f = f32(float(acc) + f32(bias / act_times_w))``, per-tensor
              weights ``raw_f = fma(bias, f32(1 / act_times_w), float(acc))`` (one rounding; found
              with golden vectors, ``reciprocal_bias``); ``cvtps2dq(f32(raw_f * C_mult))`` (ties to
              even) ``+ zp``, clamp.
``"onednn"``  torch's "x86" engine on conv (oneDNN, fitted on golden vectors):
              ``f32(f32(f32(f32(float(acc) * act_times_w) + bias) * f32(1 / s_out)) + zp)``, ties to
              even, saturating conversion, clamp: the zero point enters BEFORE rounding.
``"onnxruntime"`` / ``"xnnpack"``  MLAS ``MlasRequantizeOutput`` and XNNPACK fp32: ``f32(float(acc) *
              scale)``, ties to even, ``+ zp`` after rounding, clamp (the engines clamp in float to
              ``[qmin - zp, qmax - zp]`` before rounding, which gives the same integers).
``"onnx-reference"``  ONNX's Python reference: ``D = float64(acc) * float64(scale)``, ``D += zp``
              BEFORE rounding (float64), ``rint`` (ties to even), clip. An odd zp moves ties.
``"litert-fc"``  LiteRT 2.x reference FULLY_CONNECTED (found with golden vectors, docs/engines.md):
              ``int32(std::round(double(acc) * (double(s_in)*double(s_w)/double(s_out))))``, ties away
              from zero, ``+ zp``, clamp. Its conv/depthwise use ``"double"``. (LiteRT's per-channel FC
              takes the weight zero point as 0: pass 0.)

Out-of-range float-to-int conversions follow x86 (``cvtps2dq``/``cvttsd2si`` give INT32_MIN, the
"integer indefinite"): FBGEMM and LiteRT FC then clamp INT32_MIN + zp to the lower bound, so a huge
positive value comes out as act_min. ONNX Runtime and XNNPACK clamp in float first (no overflow);
ONNX's reference stays in float64.

``float(acc)`` is the int-to-float32 conversion (round to nearest even above 2^24). Float-scale
schemes take the accumulator as the engine's int32 holds it. The fixed-point schemes take an int32:
an accumulator wider than 32 bits is saturated to int32 first (a DSP's saturating store), and
:func:`requantize` counts that.

Extension point: an engine whose kernel requantizes differently for one op gets a scheme name
here and a branch in :func:`_requantized`; :meth:`Requant.from_scales` maps ``(engine, op)``
to it, as it maps ``("litert", "fully_connected")`` to ``"litert-fc"``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .dtypes import int_type
from .fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    Rounding,
    _mbqm_single,
    _saturate,
    as_int_array,
    quantize_multiplier,
    rounding_mode,
)
from .quantize import _fma_f32  # llvm.fma.f32 when compiled (vectorizes), exact emulation without JIT

SCHEMES = ("double", "single", "shift", "fbgemm", "onnxruntime", "xnnpack", "onnx-reference", "litert-fc", "onednn")
_CODE = {"double": 0, "single": 1, "shift": 2, "fbgemm": 3, "onnxruntime": 4, "xnnpack": 4,
         "onnx-reference": 5, "litert-fc": 6, "onednn": 7}
ENGINES = ("tflite", "cmsis-nn", "litert", "fbgemm", "onnxruntime", "onnx-reference", "xnnpack", "onednn")
FLOAT_ENGINES = ("fbgemm", "onnxruntime", "xnnpack", "onnx-reference", "onednn")
OPS = ("conv", "depthwise", "fully_connected", "relu")
_FLOAT_LIMIT = float(1 << 40)  # beyond any output range; keeps float -> int conversion defined
_TWO31 = float(1 << 31)


@dataclass(frozen=True)
class Requant:
    """A requantization scheme and its parameters (tuples: one value or one per output channel).

    Build one with :meth:`fixed_point`, :meth:`shift_only`, :meth:`float_scale` or
    :meth:`from_scales`; the fields are read-only and printable, so a run is reproducible from it.

    Attributes
    ----------
    scheme : str
        One of ``"double"``, ``"single"``, ``"shift"``, ``"fbgemm"``, ``"onnxruntime"``,
        ``"xnnpack"``, ``"onnx-reference"`` (see the module docstring for the arithmetic).
    multiplier, shift : tuple of int
        Q31 multiplier in [0, 2^31) and shift in [-31, 30] (> 0 = left) for the fixed-point
        schemes; ``shift`` in [-63, 31] alone for ``"shift"``.
    scale : tuple of float
        The float multiplier as the engine holds it (a float32 value; float64 for onnx-reference).
    act_times_w : tuple of float
        FBGEMM's and oneDNN's ``f32(s_in * s_w)`` (a float bias is divided by it / added after it).
    rounding : Rounding
        Tie rule of the ``"shift"`` scheme.
    reciprocal_bias : bool
        FBGEMM with per-tensor weights: the float bias enters as ``fma(bias, f32(1/act_times_w), acc)``.
    """

    scheme: str
    multiplier: tuple = ()
    shift: tuple = ()
    scale: tuple = ()
    act_times_w: tuple = ()
    rounding: Rounding = Rounding.HALF_AWAY_FROM_ZERO
    reciprocal_bias: bool = False

    @classmethod
    def fixed_point(cls, multiplier, shift, rounding="double") -> "Requant":
        """TFLite ``MultiplyByQuantizedMultiplier``; ``rounding`` "double" (default build) or "single"."""
        func = "Requant.fixed_point"
        if rounding not in ("double", "single"):
            raise ValueError(f"{func}: rounding must be 'double' or 'single', got {rounding!r}")
        m = as_int_array(multiplier, func, "multiplier", 0, INT32_MAX).reshape(-1)
        s = as_int_array(shift, func, "shift", -31, 30).reshape(-1)
        if m.size == 0 or s.size == 0 or (m.size != s.size and 1 not in (m.size, s.size)):
            raise ValueError(f"{func}: multiplier ({m.size}) and shift ({s.size}) must have one value or "
                             "equal lengths")
        m, s = np.broadcast_arrays(m, s)
        return cls(rounding, tuple(int(v) for v in m), tuple(int(v) for v in s))

    @classmethod
    def shift_only(cls, shift, rounding="half_away_from_zero") -> "Requant":
        """Power-of-two scale ``2^shift`` (``shift < 0`` = right shift, in [-63, 31]) rounded by ``rounding``.

        ``rounding`` is a :class:`Rounding` tie rule: ``half_up`` (ARM ``VRSHL``, ``(x + 2^(s-1)) >> s``),
        ``half_away_from_zero`` (gemmlowp ``RoundingDivideByPOT``), ``half_to_even``, ``floor``
        (plain ``>>``) or ``toward_zero``.
        """
        func = "Requant.shift_only"
        mode = rounding_mode(rounding, func)
        s = as_int_array(shift, func, "shift", -63, 31).reshape(-1)
        if s.size == 0:
            raise ValueError(f"{func}: shift must not be empty")
        return cls("shift", (), tuple(int(v) for v in s), rounding=mode)

    @classmethod
    def float_scale(cls, scale, engine="onnxruntime", act_times_w=None, reciprocal_bias=False) -> "Requant":
        """A float-scale scheme with the engine's stored multiplier ``scale`` (float32, float64 for
        onnx-reference; oneDNN: ``f32(1 / s_out)``) and, for FBGEMM float bias and oneDNN, ``act_times_w``."""
        func = "Requant.float_scale"
        if engine not in FLOAT_ENGINES:
            raise ValueError(f"{func}: engine must be one of {FLOAT_ENGINES}, got {engine!r}")
        sc = _float_array(scale, func, "scale")
        if engine != "onnx-reference":
            sc = sc.astype(np.float32)
        atw = () if act_times_w is None else tuple(float(v) for v in _float_array(act_times_w, func,
                                                                                   "act_times_w").astype(np.float32))
        if engine == "onednn" and not atw:
            raise ValueError(f"{func}: engine 'onednn' needs act_times_w")
        return cls(engine, scale=tuple(float(v) for v in sc), act_times_w=atw,
                   reciprocal_bias=bool(reciprocal_bias) and engine == "fbgemm")

    @classmethod
    def from_scales(cls, input_scale, weight_scale, output_scale, engine="tflite", op="conv",
                    rounding="double") -> "Requant":
        """Derive the scheme's parameters from float scales exactly as the engine's prepare step does.

        Every scale is first rounded to float32 (all engines store scales as float32).

        * ``engine="tflite"`` / ``"cmsis-nn"`` / ``"litert"`` (fixed point, ``rounding`` "double" or "single";
          SEMANTICS 3): ``QuantizeMultiplier`` of ``double(s_in)*double(s_w[c])/double(s_out)`` for
          ``op`` "conv", "depthwise" and per-channel "fully_connected" (``weight_scale`` an array);
          ``double(f32(s_in*s_w))/double(s_out)`` for per-tensor "fully_connected" (scalar
          ``weight_scale``); ``double(f32(s_in/s_out))`` for "relu" (``weight_scale`` ignored).
        * ``"litert"`` with op "fully_connected" (LiteRT 2.x reference kernel): scheme "litert-fc" with
          ``scale = double(s_in)*double(s_w[c])/double(s_out)`` for per-tensor and per-channel weights.
        * ``"fbgemm"``: ``act_times_w = f32(s_in*s_w[c])``, ``scale = f32(act_times_w/s_out)``;
          a scalar ``weight_scale`` sets ``reciprocal_bias``.
        * ``"onednn"``: ``act_times_w = f32(s_in*s_w[c])``, ``scale = f32(1/s_out)``.
        * ``"onnxruntime"``, ``"xnnpack"``, ``"onnx-reference"``: ``scale = f32(f32(s_in*s_w[c])/s_out)``
          (onnx-reference then multiplies in float64).
        """
        func = "Requant.from_scales"
        if engine not in ENGINES:
            raise ValueError(f"{func}: engine must be one of {ENGINES}, got {engine!r}")
        if op not in OPS:
            raise ValueError(f"{func}: op must be one of {OPS}, got {op!r}")
        if op == "relu" and engine not in ("tflite", "cmsis-nn", "litert"):
            raise ValueError(f"{func}: op 'relu' requantizes only in TFLite/CMSIS-NN (engine 'tflite')")
        s_in = _float_array(input_scale, func, "input_scale").astype(np.float32)
        s_out = _float_array(output_scale, func, "output_scale").astype(np.float32)
        if s_in.size != 1 or s_out.size != 1:
            raise ValueError(f"{func}: input_scale and output_scale must be scalars")
        s_in, s_out = s_in[0], s_out[0]
        if op == "relu":
            s_w = np.ones(1, np.float32)
            per_channel = False
        else:
            if weight_scale is None:
                raise ValueError(f"{func}: weight_scale is required for op {op!r}")
            per_channel = np.ndim(weight_scale) > 0
            s_w = _float_array(weight_scale, func, "weight_scale").astype(np.float32)
        if engine == "litert" and op == "fully_connected":
            real = np.float64(s_in) * s_w.astype(np.float64) / np.float64(s_out)
            return cls("litert-fc", scale=tuple(float(v) for v in real))
        if engine in ("tflite", "cmsis-nn", "litert"):
            if op == "relu":
                real = np.float64(np.float32(s_in / s_out))
                real = np.atleast_1d(real)
            elif op == "fully_connected" and not per_channel:
                real = np.float64(np.float32(s_in * s_w)) / np.float64(s_out)
            else:
                real = np.float64(s_in) * s_w.astype(np.float64) / np.float64(s_out)
            m, s = quantize_multiplier(np.asarray(real, np.float64).reshape(-1), rounding)
            return cls.fixed_point(m, s, rounding)
        prod = (s_in * s_w).astype(np.float32)  # float32 * float32, rounded once
        if engine == "onednn":
            return cls.float_scale(np.float32(1) / s_out, engine, prod)
        scale = (prod / s_out).astype(np.float32)
        return cls.float_scale(scale, engine, prod if engine == "fbgemm" else None,
                               reciprocal_bias=not per_channel)

    @property
    def channels(self) -> int:
        """Number of parameter values (1 = per tensor)."""
        return max(len(self.multiplier), len(self.shift), len(self.scale), 1)

    def arrays(self, n: int, func: str):
        """Parameters broadcast to ``n`` channels: (code, mult, shift, scale, act_times_w, rounding)."""
        if self.channels not in (1, n):
            raise ValueError(f"{func}: requantization has {self.channels} per-channel values but the "
                             f"output has {n} channels")

        def full(t, dtype):
            a = np.asarray(t if len(t) else (0,), dtype=dtype)
            return np.ascontiguousarray(np.broadcast_to(a, (n,)))

        return (_CODE[self.scheme], full(self.multiplier, np.int64), full(self.shift, np.int64),
                full(self.scale, np.float64), full(self.act_times_w, np.float32), int(self.rounding))


def _float_array(value, func, name):
    arr = np.asarray(value)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise TypeError(f"{func}: {name} must be a float or a float array, got {arr.dtype}")
    arr = arr.astype(np.float64).reshape(-1)
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{func}: {name} must be finite and positive")
    return arr


# --------------------------------------------------------------------------------------------
# numba core
# --------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _float_to_int_hte(v):
    """Round a float to the nearest integer, ties to even (rint), clamped to +-2^40 first."""
    v = min(max(v, -_FLOAT_LIMIT), _FLOAT_LIMIT)
    return np.int64(np.rint(v))


@njit(cache=True, inline="always")
def _x86_int32(v):
    """x86 float -> int32 of an already rounded value: out of range (>= 2^31 or < -2^31) gives INT32_MIN."""
    if v >= _TWO31 or v < -_TWO31:
        return np.int64(INT32_MIN)
    return np.int64(v)


@njit(cache=True, inline="always")
def _round_haz(d):
    """std::round on a double: nearest integer, ties away from zero (exact, no ``+ 0.5`` rounding error)."""
    r = np.floor(d)
    frac = d - r  # exact: r and d share the exponent range
    if frac > 0.5 or (frac == 0.5 and d > 0):
        r += 1.0
    return r


@njit(cache=True, inline="always")
def _mbqm_double_v(x, m, shift):
    """``MultiplyByQuantizedMultiplier`` (two roundings) of an int32-range ``x``, without branches.

    SRDHM: ``ab = x' * m`` is exact in int64 (``m`` in [0, 2^31), so its only saturating case,
    ``INT32_MIN * INT32_MIN``, cannot occur). gemmlowp adds the nudge ``2^30`` (``ab >= 0``) or
    ``1 - 2^30`` and divides by 2^31 truncating; for ``ab < 0`` truncation is
    ``floor((ab + 1 - 2^30 + 2^31 - 1) / 2^31)``, so both cases are ``(ab + 2^30) >> 31`` (ties
    toward +inf). RoundingDivideByPOT by ``r``: ``(hi + 2^(r-1) - [hi < 0]) >> r`` for ``r > 0``
    (ties away from zero: a negative tie is not rounded up). Same integers as
    ``fixedpoint._mbqm_double``.
    """
    left = max(shift, 0)
    right = max(-shift, 0)
    xl = ((x << left) << 32) >> 32  # the C kernel's int32 left shift wraps
    ab = xl * ((m << 32) >> 32)  # m < 2^31 is unchanged; both factors now sign-extended 32-bit (vpmuldq)
    hi = (ab + np.int64(1 << 30)) >> 31
    half = (np.int64(1) << right) >> 1  # 2^(r-1), or 0 when r = 0
    return (hi + half - ((hi < 0) & (half > 0))) >> right


@njit(cache=True, inline="always")
def _shift_v(a, shift, mode):
    """``a * 2^shift`` for ``shift`` in [-63, 31]: exact left shift of the int32-saturated ``a``, or a
    right shift rounded by the tie rule ``mode`` (:class:`Rounding`); same integers as
    ``fixedpoint._rounding_right_shift``, written with selects only."""
    left = _saturate(a, 32) << max(shift, 0)  # exact: |acc| >= 2^31 lies beyond every output range
    rs = max(-shift, 0)
    q = a >> rs
    rem = a & ((np.int64(1) << rs) - 1)  # the discarded fraction, times 2^rs
    half = np.int64(1) << max(rs - 1, 0)
    if mode == 0:  # HALF_UP
        up = rem >= half
    elif mode == 1:  # HALF_AWAY_FROM_ZERO
        up = rem + (a >= 0) > half
    elif mode == 2:  # HALF_TO_EVEN
        up = (rem > half) | ((rem == half) & ((q & 1) == 1))
    elif mode == 3:  # FLOOR
        up = False
    else:  # TOWARD_ZERO
        up = (a < 0) & (rem != 0)
    right = q + ((rs > 0) & up)
    return left if shift >= 0 else right


@njit(cache=True, inline="always")
def _requantized(acc, code, fb_mode, rounding, mult, shift, scale, fb_a, fb_b, zp):
    """The requantized value of the accumulator ``acc`` (int64) before the activation clamp, ``zp`` included.

    ``code`` is the scheme (``_CODE``). Float bias (FBGEMM/oneDNN), ``fb_mode``: 0 none; 1 add
    ``fb_a = f32(bias / act_times_w)``; 2 ``fma(fb_a = bias, fb_b = f32(1 / act_times_w), acc)``;
    3 oneDNN, ``fb_a = bias``. oneDNN reads ``fb_b = act_times_w``. Never raises.
    """
    if code == 0:  # fixed point: the C kernels take an int32
        return _mbqm_double_v(_saturate(acc, 32), mult, shift) + zp
    if code == 1:
        return _mbqm_single(_saturate(acc, 32), mult, shift) + zp
    if code == 2:
        return _shift_v(acc, shift, rounding) + zp
    if code == 5:  # onnx-reference: float64, zero point added before rounding
        return _float_to_int_hte(np.float64(acc) * scale + np.float64(zp))
    if code == 6:  # litert-fc: double, ties away, x86 truncating cast
        return _x86_int32(_round_haz(np.float64(acc) * scale)) + zp
    raw = np.float32(acc)
    if code == 7:  # oneDNN: dequantize, add the bias, scale by 1/s_out, zero point before rounding
        d = np.float32(raw * fb_b)
        if fb_mode == 3:
            d = np.float32(d + fb_a)
        return _float_to_int_hte(np.float64(np.float32(np.float32(d * np.float32(scale)) + np.float32(zp))))
    if fb_mode == 1:
        raw = np.float32(raw + fb_a)
    elif fb_mode == 2:
        raw = _fma_f32(fb_a, fb_b, raw)
    y = np.float64(np.float32(raw * np.float32(scale)))
    if code == 3:  # FBGEMM: cvtps2dq on the unclamped value
        return _x86_int32(np.rint(y)) + zp
    return _float_to_int_hte(y) + zp


def _make_rows(code, fb_mode, rounding, wrap, per_channel, count):
    """A requantization loop whose scheme, float-bias mode and tie rule, and whether it wraps the
    accumulator to ``acc_bits``, reads parameters per channel (else the first, hoisted out of the
    loop) and counts clamps and saturations, are compile-time constants.

    Each loop is straight, with no per-element tests of these, so LLVM vectorizes it (int64
    multiplies and shifts, selects). ``nogil``: :func:`_requantize_flat` runs row ranges of one call
    on several threads; ``cache=True`` keeps each compiled variant on disk.
    """

    @njit(cache=True, nogil=True)
    def rows(acc, n, acc_bits, mult, shift, scale, fb_a, fb_b, zp, lo, hi, out, r0, r1):
        sh = 64 - acc_bits if wrap else 0
        n_lo = 0
        n_hi = 0
        n_sat = 0
        for r in range(r0, r1):
            row = acc[r * n:(r + 1) * n]  # row slices: with ``r * n + j`` indices LLVM does not vectorize
            orow = out[r * n:(r + 1) * n]
            for j in range(row.shape[0]):
                a = np.int64(row[j])
                if wrap:
                    a = (a << sh) >> sh  # the accumulator wrapped to acc_bits
                c = j if per_channel else 0
                v = _requantized(a, code, fb_mode, rounding, mult[c], shift[c], scale[c], fb_a[c], fb_b[c], zp)
                if count:
                    if code <= 1:
                        n_sat += (a > INT32_MAX) | (a < INT32_MIN)
                    n_lo += v < lo
                    n_hi += v > hi
                orow[j] = min(max(v, lo), hi)
        return n_lo, n_hi, n_sat

    return rows


_ROWS = {}
_PARALLEL_MIN = 1 << 19  # elements of work; below this (~0.1 ms) handing work to a thread costs more
_POOL = []


def _pool():
    if not _POOL:
        from concurrent.futures import ThreadPoolExecutor
        _POOL.append(ThreadPoolExecutor(max_workers=8, thread_name_prefix="dspsim-requant"))
    return _POOL[0]


def _requantize_flat(acc, n, acc_bits, requant: "Requant", fb, zp, lo, hi, out, func, count=False):
    """Requantize the flat, contiguous ``acc`` (int32 or int64; channel = index % ``n``) into ``out``.

    ``acc`` is first wrapped to ``acc_bits``; ``fb = (fb_a, fb_b, fb_mode)`` from
    :func:`float_bias_arrays`. Returns (outputs clamped low, clamped high, accumulators saturated to
    int32 by a fixed-point scheme) when ``count``, else zeros. Large tensors are split by rows over
    threads.
    """
    fb_a, fb_b, fb_mode = fb
    size = acc.shape[0]
    per_channel = max(requant.channels, len(requant.act_times_w)) > 1 or fb_mode != 0
    if not per_channel:
        n = min(size, 1024)  # one parameter set: rows need not follow the channels
    code, mult, shift, scale, _, rnd = requant.arrays(n, func)
    key = (code, fb_mode, rnd if code == 2 else 0, acc_bits < 8 * acc.itemsize, per_channel, bool(count))
    if key not in _ROWS:
        _ROWS[key] = _make_rows(*key)
    rows = _ROWS[key]
    args = (acc, n, acc_bits, mult, shift, scale, fb_a, fb_b, zp, lo, hi, out)
    parts = _parallel_rows(lambda r0, r1: rows(*args, r0, r1), -(-size // n), size)
    return tuple(sum(p[i] for p in parts) for i in range(3))


def _parallel_rows(call, n_rows, size):
    """``[call(r0, r1), ...]`` over a split of ``range(n_rows)``: one chunk per thread
    (``numba.get_num_threads()``) when ``size`` (elements of work) is large, else one call.

    ``call`` must run a ``nogil`` numba function: the chunks run on a thread pool in parallel.
    Unlike ``prange``, this keeps the kernels cacheable.
    """
    import numba

    threads = min(numba.get_num_threads(), n_rows, size // (_PARALLEL_MIN // 2))
    if threads <= 1:
        return [call(0, n_rows)]
    cut = [n_rows * t // threads for t in range(threads + 1)]
    rest = [_pool().submit(call, cut[t], cut[t + 1]) for t in range(1, threads)]
    return [call(cut[0], cut[1])] + [f.result() for f in rest]  # the calling thread takes the first chunk


# --------------------------------------------------------------------------------------------
# public
# --------------------------------------------------------------------------------------------
def output_range(out_dtype, act_min, act_max, func):
    """(IntType, lo, hi): the output type and the activation clamp, checked against each other."""
    t = int_type(out_dtype, func, allowed={k: v for k, v in _OUT_TYPES.items()})
    lo = t.min if act_min is None else int(as_int_array(act_min, func, "act_min", t.min, t.max))
    hi = t.max if act_max is None else int(as_int_array(act_max, func, "act_max", t.min, t.max))
    if lo > hi:
        raise ValueError(f"{func}: act_min ({lo}) must not exceed act_max ({hi})")
    return t, lo, hi


_OUT_TYPES = {name: int_type(name) for name in ("int8", "uint8", "int16", "qint8", "quint8", "qint16")}


def float_bias_arrays(bias, requant: Requant, n: int, func: str):
    """``(fb_a, fb_b, fb_mode)`` of :func:`_requantized` for a float bias (or ``bias=None``)."""
    atw = np.ascontiguousarray(np.broadcast_to(np.asarray(requant.act_times_w or (0.0,), np.float32), (n,)))
    if bias is None:
        return np.zeros(n, np.float32), atw, 0
    if requant.scheme not in ("fbgemm", "onednn") or not requant.act_times_w:
        raise ValueError(f"{func}: a float bias needs requant='fbgemm' or 'onednn' (from_scales)")
    b = np.asarray(bias)
    if b.ndim != 1 or b.size != n:
        raise ValueError(f"{func}: bias must have shape ({n},), got {b.shape}")
    b = np.ascontiguousarray(b.astype(np.float32))
    if requant.scheme == "onednn":
        return b, atw, 3
    with np.errstate(divide="ignore", invalid="ignore"):
        if requant.reciprocal_bias:
            return b, (np.float32(1) / atw).astype(np.float32), 2
        return np.ascontiguousarray((b / atw).astype(np.float32)), atw, 1


def requantize(acc, requant: Requant, output_zero_point=0, act_min=None, act_max=None, *, out_dtype="int8",
               float_bias=None, axis=-1):
    """Requantize accumulators: the scheme of ``requant``, ``+ output_zero_point``, clamp, cast.

    Parameters
    ----------
    acc : integer array (int64 range)
        Accumulators after the bias. Per-channel parameters run along ``axis`` (default last).
    requant : Requant
    output_zero_point : int, inside ``out_dtype``
    act_min, act_max : int, optional
        Activation clamp (default the full range of ``out_dtype``); ``act_min > act_max`` is refused.
    out_dtype : "int8" | "uint8" | "int16"
    float_bias : float array, optional
        FBGEMM / oneDNN float bias (one per channel), added as the scheme says.

    Returns an array of ``out_dtype``. Saturation: only the final clamp (and, for the fixed-point
    schemes, int32 saturation of a wider accumulator).
    """
    func = "requantize"
    if not isinstance(requant, Requant):
        raise TypeError(f"{func}: requant must be a Requant, got {type(requant).__name__}")
    t, lo, hi = output_range(out_dtype, act_min, act_max, func)
    zp = int(as_int_array(output_zero_point, func, "output_zero_point", t.min, t.max))
    a = np.asarray(acc)
    if a.dtype not in (np.int32, np.int64):  # other integer types widen; floats, bools, uint64 > int64 refused
        a = as_int_array(acc, func, "acc")
    if a.ndim == 0:
        a = a.reshape(1)
    a = np.moveaxis(a, axis, -1)
    shape = a.shape
    n = shape[-1]
    fb = float_bias_arrays(float_bias, requant, n, func)
    flat = np.ascontiguousarray(a).reshape(-1)
    out = np.empty(flat.shape, t.dtype)
    _requantize_flat(flat, n, 64, requant, fb, zp, lo, hi, out, func)
    out = np.moveaxis(out.reshape(shape), -1, axis)
    if np.ndim(acc) == 0:
        return int(out.reshape(-1)[0])
    return out
