"""ONNX quantize operators, standalone, with ONNX's type rules (the output type from the zero point).

* :func:`quantize_linear` / :func:`dequantize_linear`: every quantized type of QuantizeLinear-25
  (uint8, int8, uint16, int16, uint4, int4, uint2, int2, float8 e4m3fn/e4m3fnuz/e5m2/e5m2fnuz with
  ``saturate``, float4e2m1), per tensor, per axis or blocked (``block_size``).
* :func:`dynamic_quantize_linear`.

Integer QuantizeLinear is ONNX Runtime's MLAS formula (``f32(x / scale)``, ties to even, then
``+ zp``, saturate; :func:`dspsim.quantize_linear`); the onnx reference (``rint(x / scale) + zp``,
clip) gives the same codes on every finite input. NaN inputs are refused for integer outputs (the
reference casts ``rint(NaN)`` through an undefined int32 conversion). Float8/float4 outputs are
``f32(x / scale)`` rounded to nearest even by :func:`dspsim.onnx.types.encode_float`. The MAC operators
(MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv) are :mod:`dspsim.onnx.mac`.
"""
from __future__ import annotations

import numpy as np


from ..engines import ModelFormat, OnnxKernels
from ..engines import get as engine_profile
from ..quantize import dequantize_linear as _ort_dequantize, quantize_linear as _ort_quantize
from .types import INT_QUANT, MINIFLOATS, ElemType, QArray, code_dtype, decode_float, encode_float, from_numpy, \
    int_range, ml_dtypes_type, type_name

_NAMES = {t.name.lower(): t for t in ElemType}


def elem_type(value, func: str, name: str = "output_dtype") -> ElemType:
    """An :class:`ElemType` from an ElemType, its int value, its name ("int4", "float8e4m3fn"), a numpy dtype or an
    ml_dtypes type (``ml_dtypes.int4``)."""
    if isinstance(value, ElemType):
        return value
    if ml_dtypes_type(value) is not None:
        return ml_dtypes_type(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        try:
            return ElemType(int(value))
        except ValueError:
            raise ValueError(f"{func}: {name} {value} is not an ONNX data type") from None
    if isinstance(value, str) and value.lower() in _NAMES:
        return _NAMES[value.lower()]
    try:
        return from_numpy(value)
    except (TypeError, ValueError):
        raise ValueError(f"{func}: {name} {value!r} is not an ONNX data type") from None


def onnx_engine(engine, func):
    """The :class:`~dspsim.engines.EngineProfile` of ``engine`` (it must run ONNX models)."""
    return engine_profile(engine, func, ModelFormat.ONNX)


def runs_reference(profile) -> bool:
    """Whether the engine runs the ONNX reference evaluator's implementations."""
    return profile.onnx.kernels is OnnxKernels.ONNX_REFERENCE


def _typed(value, func: str, name: str):
    """(codes ndarray, ElemType) of a numpy array, an ml_dtypes array or a QArray (None stays None)."""
    if value is None:
        return None, None
    if ml_dtypes_type(value) is not None:
        value = QArray.from_ml_dtypes(value)
    if isinstance(value, QArray):
        return np.asarray(value.codes), value.type
    a = np.asarray(value)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"{func}: {name} must be a numeric array, an ml_dtypes array or a dspsim.onnx.QArray, "
                        f"got dtype {a.dtype}")
    if isinstance(value, (int, float)) and not isinstance(value, (np.generic, np.ndarray)):
        raise TypeError(f"{func}: {name} must carry its ONNX type: pass a numpy array/scalar "
                        f"(np.int8(3)) or a QArray, not a Python {type(value).__name__}")
    return a, from_numpy(a.dtype)


def scale_array(scale, func: str, name: str):
    s = np.asarray(scale)
    if s.dtype not in (np.float32, np.float16, np.float64):
        raise TypeError(f"{func}: {name} must be float32 or float16, got dtype {s.dtype}")
    s32 = s.astype(np.float32)
    if s.size == 0 or not np.all(np.isfinite(s32)) or np.any(s32 <= 0):
        raise ValueError(f"{func}: {name} must be positive and finite (in float32), got "
                         f"{s32.reshape(-1)[~(np.isfinite(s32.reshape(-1)) & (s32.reshape(-1) > 0))][:1]}")
    return s, s32


def _layout(x_shape, s_shape, zp_shape, axis, block_size, func):
    """'tensor' | 'axis' | 'blocked', and the normalized axis; ValueError for mismatched shapes."""
    for name, v in (("axis", axis), ("block_size", block_size)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{func}: {name} must be an int, got {v!r}"[:200])
    ndim = len(x_shape)
    if len(s_shape) == 0 or (len(s_shape) == 1 and s_shape[0] == 1 and not block_size):
        mode = "tensor"
    elif block_size:
        mode = "blocked"
    else:
        mode = "axis"
    ax = axis
    if mode != "tensor":
        if not -ndim <= axis < ndim:
            raise ValueError(f"{func}: axis {axis} is out of range for a {ndim}-D input")
        ax = axis % ndim
    if mode == "axis":
        if len(s_shape) != 1 or s_shape[0] != x_shape[ax]:
            raise ValueError(f"{func}: per-axis scale must be 1-D with {x_shape[ax]} values (axis {ax} of "
                             f"input shape {tuple(x_shape)}), got shape {tuple(s_shape)}")
    if mode == "blocked":
        if block_size < 0:
            raise ValueError(f"{func}: block_size must be >= 0, got {block_size}")
        want = list(x_shape)
        want[ax] = -(-x_shape[ax] // block_size)
        if tuple(s_shape) != tuple(want):
            raise ValueError(f"{func}: blocked scale must have shape {tuple(want)} (input {tuple(x_shape)}, "
                             f"axis {ax}, block_size {block_size}), got {tuple(s_shape)}")
    if zp_shape is not None and tuple(zp_shape) != tuple(s_shape) and \
            not (mode == "tensor" and int(np.prod(zp_shape)) == 1):
        raise ValueError(f"{func}: zero point shape {tuple(zp_shape)} does not match scale shape {tuple(s_shape)}")
    return mode, ax


def _expand(param, x_shape, mode, ax, block_size):
    """A parameter broadcast to the input's shape (blocked: repeated along ``ax``, the tail cut)."""
    p = np.asarray(param)
    if mode == "tensor":
        return np.broadcast_to(p.reshape(()), x_shape)
    if mode == "axis":
        shape = [1] * len(x_shape)
        shape[ax] = -1
        return np.broadcast_to(p.reshape(shape), x_shape)
    return np.repeat(p, block_size, axis=ax).take(range(x_shape[ax]), axis=ax)


def _check_zero_point(zp, t: ElemType, func: str, name: str):
    if t in INT_QUANT:
        lo, hi = int_range(t)
        z = zp.astype(np.int64)
        if z.size and (z.min() < lo or z.max() > hi):
            bad = int(z[(z < lo) | (z > hi)][0])
            raise ValueError(f"{func}: {name} must be in [{lo}, {hi}] for {t.name}, got {bad}")
    elif t in MINIFLOATS and t != ElemType.FLOAT4E2M1:
        if np.any(zp.astype(np.int64) != 0):
            raise ValueError(f"{func}: {name} must be +0 for {t.name} (float8 zero points are not used)")


def _container(t: ElemType) -> str:
    bits, signed = INT_QUANT[t]
    return ("int" if signed else "uint") + str(max(bits, 8))


def quantize_linear(x, scale, zero_point=None, *, axis=1, block_size=0, saturate=True, output_dtype=None,
                    engine="onnxruntime", as_ml_dtypes=False):
    """ONNX ``QuantizeLinear`` (opsets 10 to 25) with ONNX's type rules.

    ``y = saturate(round(x / scale) + zero_point)``: ``x / scale`` in float32, ties to even, the zero
    point added after rounding, saturated to the output type (integer types); float8 types round
    ``x / scale`` to nearest even (``saturate=True``: beyond the largest finite value gives it; False:
    +-inf for E5M2, NaN otherwise); float4e2m1 rounds ``x / scale + zero_point`` and saturates.

    Parameters
    ----------
    x : float array (float64/float16 are rounded to float32)
    scale : float32 or float16; a scalar or 1-element array (per tensor), a 1-D array of
        ``x.shape[axis]`` values (per axis) or, with ``block_size``, an array of x's rank whose
        ``axis`` dimension is ``ceil(x.shape[axis] / block_size)`` (blocked).
    zero_point : None, a numpy integer array/scalar, an ml_dtypes array/scalar (``ml_dtypes.int4(0)``) or a
        :class:`QArray`, same shape as ``scale``.
        **Its type is the output type** (ONNX): an ``np.int8`` zero point gives int8 codes.
    axis, block_size : int (ONNX attributes; axis may be negative)
    saturate : bool, float8 only (ONNX attribute)
    output_dtype : None or a type ("int4", ElemType.INT4, ml_dtypes.int4, np.int8 ...): the output type when no
        zero point is given (default uint8); it must agree with the zero point's type.
    engine : an engine that runs ONNX models (name or profile). ONNX Runtime and the onnx reference differ
        only for float8 without saturation just above the largest value (:func:`dspsim.onnx.types.encode_float`).
    as_ml_dtypes : bool. True: the types numpy lacks come back as an ``ml_dtypes`` array (``ml_dtypes.int4``,
        ``float8_e4m3fn``, ...: :meth:`QArray.to_ml_dtypes`) instead of a QArray.

    Returns
    -------
    ndarray of codes for uint8/int8/uint16/int16; a :class:`QArray` (or ml_dtypes array) for the others.
    """
    q = _quantize_linear(x, scale, zero_point, axis, block_size, saturate, output_dtype, engine)
    return q.to_ml_dtypes() if as_ml_dtypes and isinstance(q, QArray) else q


def _quantize_linear(x, scale, zero_point, axis, block_size, saturate, output_dtype, engine):
    func = "dspsim.onnx.quantize_linear"
    kernels = onnx_engine(engine, func).onnx.kernels.value
    xa = np.asarray(x)
    if xa.dtype.kind != "f":
        raise TypeError(f"{func}: x must be a float array, got dtype {xa.dtype}")
    xa = xa.astype(np.float32)
    s, s32 = scale_array(scale, func, "scale")
    zp, zt = _typed(zero_point, func, "zero_point")
    t = None if output_dtype is None else elem_type(output_dtype, func)
    if zt is not None and t is not None and zt != t:
        raise ValueError(f"{func}: output_dtype {t.name} differs from the zero point's type {zt.name}")
    t = zt or t or ElemType.UINT8
    if t not in INT_QUANT and t not in MINIFLOATS:
        raise ValueError(f"{func}: output type {type_name(t)} is not a quantized type of QuantizeLinear")
    mode, ax = _layout(xa.shape, s.shape, None if zp is None else zp.shape, axis, block_size, func)
    if zp is None:
        zp = np.zeros(s.shape, code_dtype(t))
    _check_zero_point(zp, t, func, "zero_point")
    if t in MINIFLOATS:
        v = (xa / _expand(s32, xa.shape, mode, ax, block_size)).astype(np.float32)
        if t == ElemType.FLOAT4E2M1:
            v = (v + _expand(decode_float(zp, t), xa.shape, mode, ax, block_size)).astype(np.float32)
        return QArray(encode_float(v, t, bool(saturate), kernels), t)
    if np.isnan(xa).any():
        raise ValueError(f"{func}: x contains NaN, which has no integer code")
    if mode == "blocked":
        q = _ort_quantize(xa.reshape(-1), _expand(s32, xa.shape, mode, ax, block_size).reshape(-1),
                               _expand(zp.astype(np.int64), xa.shape, mode, ax, block_size).reshape(-1),
                               axis=0, dtype=_container(t)).reshape(xa.shape)
    else:
        q = _ort_quantize(xa, s32.reshape(-1), zp.astype(np.int64).reshape(-1), axis=ax if mode == "axis" else 1,
                               dtype=_container(t))
    if INT_QUANT[t][0] < 8:  # clamp to the narrow type: saturations compose, zp lies inside
        lo, hi = int_range(t)
        return QArray(np.clip(q, lo, hi).astype(code_dtype(t)), t)
    return q


def dequantize_linear(x, scale, zero_point=None, *, axis=1, block_size=0, output_dtype=None):
    """ONNX ``DequantizeLinear``: ``y = (x - zero_point) * scale``.

    Integer codes: ``f32(float(int32(x - zp)) * f32(scale))`` (ONNX Runtime; :func:`dspsim.dequantize_linear`;
    the reference's ``(f32(x) - zp) * scale`` is the same for every 8/16-bit and sub-byte code);
    float8/float4: ``f32(decode(x) * scale)`` (float8 zero points must be 0; a float4 zero point
    is ignored, as the reference does). With a float16 scale the float32 product is rounded to
    float16 (the reference; ``output_dtype`` may ask for float32/float16 explicitly).

    ``x``: numpy int8/uint8/int16/uint16/int32 codes, an ml_dtypes array (int4, float8_e4m3fn, ...) or a
    :class:`QArray`; ``zero_point`` of the same type; ``scale``/``axis``/``block_size`` as :func:`quantize_linear`.
    """
    func = "dspsim.onnx.dequantize_linear"
    xa, xt = _typed(x, func, "x")
    if xa is None:
        raise TypeError(f"{func}: x must be an array of codes, got None")
    if xt not in INT_QUANT and xt not in MINIFLOATS and xt != ElemType.INT32:
        raise ValueError(f"{func}: x of type {type_name(xt)} is not a quantized type")
    s, s32 = scale_array(scale, func, "scale")
    zp, zt = _typed(zero_point, func, "zero_point")
    if zt is not None and zt != xt:
        raise ValueError(f"{func}: the zero point's type {zt.name} differs from x's type {xt.name}")
    mode, ax = _layout(xa.shape, s.shape, None if zp is None else zp.shape, axis, block_size, func)
    if zp is None:
        zp = np.zeros(s.shape, code_dtype(xt))
    if xt != ElemType.INT32:
        _check_zero_point(zp, xt, func, "zero_point")
    out_t = np.float16 if s.dtype == np.float16 else np.float32
    if output_dtype is not None:
        ot = elem_type(output_dtype, func)
        if ot not in (ElemType.FLOAT, ElemType.FLOAT16):
            raise ValueError(f"{func}: output_dtype must be FLOAT or FLOAT16, got {ot.name}")
        out_t = np.float16 if ot == ElemType.FLOAT16 else np.float32
    if xt in MINIFLOATS:
        y = (decode_float(xa, xt) * _expand(s32, xa.shape, mode, ax, block_size)).astype(np.float32)
    elif mode == "blocked":
        y = _ort_dequantize(xa.reshape(-1).astype(np.int64),
                                 _expand(s32, xa.shape, mode, ax, block_size).reshape(-1),
                                 _expand(zp.astype(np.int64), xa.shape, mode, ax, block_size).reshape(-1),
                                 axis=0).reshape(xa.shape)
    else:
        y = _ort_dequantize(xa, s32.reshape(-1), zp.astype(np.int64).reshape(-1), axis=ax if mode == "axis" else 1)
    return y.astype(out_t)


def dynamic_quantize_linear(x, *, engine="onnxruntime"):
    """ONNX ``DynamicQuantizeLinear``: ``(y uint8, y_scale float32, y_zero_point uint8)``.

    ``scale = f32(max(0, max x) - min(0, min x)) / 255`` in float32, ``zp =
    round_half_even(clip(f32(0 - min/scale), 0, 255))``, ``y = QuantizeLinear(x, scale, zp)``. An
    all-zero range gives ``scale = 1.0`` in ONNX Runtime (``dynamicquantizelinear.cc``) and
    ``1/255`` in the onnx reference (the codes are 0 either way). NaN inputs are refused.
    """
    func = "dspsim.onnx.dynamic_quantize_linear"
    reference = runs_reference(onnx_engine(engine, func))
    xa = np.asarray(x)
    if xa.dtype != np.float32:
        raise TypeError(f"{func}: x must be float32, got dtype {xa.dtype}")
    if xa.size == 0 or not np.all(np.isfinite(xa)):
        raise ValueError(f"{func}: x must be non-empty and finite")
    hi = np.float32(max(np.float32(0), xa.max()))
    lo = np.float32(min(np.float32(0), xa.min()))
    if hi == lo:
        scale = np.float32(1.0) / np.float32(255) if reference else np.float32(1.0)
    else:
        scale = np.float32(hi - lo) / np.float32(255)
    zp = np.float32(np.float32(0) - lo / scale)
    zp = np.uint8(np.rint(min(np.float32(255), max(np.float32(0), zp))))
    return quantize_linear(xa, scale, zp), np.float32(scale), zp
