"""ONNX tensor element types: codes, packing (int4/int2/float4 as ONNX stores them) and minifloats.

ONNX's quantized types that numpy has no dtype for are held in a :class:`QArray`: one code per
element in a plain numpy array (int8/uint8 for int4/uint4/int2/uint2, the uint8 bit pattern for
float8/float4) plus its :class:`ElemType`. :meth:`QArray.packed` gives the bytes of a TensorProto's
``raw_data`` (sub-byte types two or four per byte, the first element in the low bits).
:meth:`QArray.to_ml_dtypes` and :meth:`QArray.from_ml_dtypes` convert to and from the ``ml_dtypes`` arrays
that onnx, JAX and TensorFlow hold these types in (``ml_dtypes.int4``, ``float8_e4m3fn``, ...), bit for bit;
the ml_dtypes package is needed only to make one.

Minifloat rounding (:func:`encode_float`) is done against the table of every code's value, so it is
exact by construction: the nearest representable value, ties to the even code (IEEE
round-to-nearest-even; codes are monotone in magnitude, so an even code is an even mantissa). What
happens beyond the largest finite value is the format's rule (``saturate``: the largest finite
value; otherwise +-inf for E5M2 and NaN for the formats without an infinity).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from .._io import shape_size
from ..engines.profile import OnnxKernels


class ElemType(enum.IntEnum):
    """TensorProto.DataType values (onnx.proto). The members dspsim computes with are listed in
    :data:`QUANT_TYPES`, :data:`FLOAT_TYPES` and :data:`INDEX_TYPES`."""

    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E4M3FNUZ = 18
    FLOAT8E5M2 = 19
    FLOAT8E5M2FNUZ = 20
    UINT4 = 21
    INT4 = 22
    FLOAT4E2M1 = 23
    FLOAT8E8M0 = 24
    UINT2 = 25
    INT2 = 26


# Integer quantized types: (bits, signed); numpy-native ones first.
INT_QUANT = {ElemType.UINT8: (8, False), ElemType.INT8: (8, True), ElemType.UINT16: (16, False),
             ElemType.INT16: (16, True), ElemType.UINT4: (4, False), ElemType.INT4: (4, True),
             ElemType.UINT2: (2, False), ElemType.INT2: (2, True)}
NATIVE = {ElemType.FLOAT: np.float32, ElemType.UINT8: np.uint8, ElemType.INT8: np.int8,
          ElemType.UINT16: np.uint16, ElemType.INT16: np.int16, ElemType.INT32: np.int32,
          ElemType.INT64: np.int64, ElemType.BOOL: np.bool_, ElemType.FLOAT16: np.float16,
          ElemType.DOUBLE: np.float64, ElemType.UINT32: np.uint32, ElemType.UINT64: np.uint64}
_FROM_NUMPY = {np.dtype(v): k for k, v in NATIVE.items()}


@dataclass(frozen=True)
class MiniFloat:
    """A float8/float4 format: exponent and mantissa bits, bias, and its special-value rules."""

    exp_bits: int
    man_bits: int
    bias: int
    ieee_specials: bool  # all-ones exponent = inf (mantissa 0) / NaN, as IEEE (E5M2)
    fn: bool             # "finite": no inf; S.1111.111 is NaN (E4M3FN)
    uz: bool             # "unsigned zero": no -0, 0x80 is the only NaN (FNUZ)


MINIFLOATS = {
    ElemType.FLOAT8E4M3FN: MiniFloat(4, 3, 7, False, True, False),
    ElemType.FLOAT8E4M3FNUZ: MiniFloat(4, 3, 8, False, False, True),
    ElemType.FLOAT8E5M2: MiniFloat(5, 2, 15, True, False, False),
    ElemType.FLOAT8E5M2FNUZ: MiniFloat(5, 2, 16, False, False, True),
    ElemType.FLOAT4E2M1: MiniFloat(2, 1, 1, False, False, False),  # no inf, no NaN
}
QUANT_TYPES = tuple(INT_QUANT) + tuple(MINIFLOATS)
PACKED_BITS = {ElemType.UINT4: 4, ElemType.INT4: 4, ElemType.UINT2: 2, ElemType.INT2: 2, ElemType.FLOAT4E2M1: 4}
# The ml_dtypes type of each (its numpy dtype's name); ml_dtypes holds one value per byte, float4 in the low bits.
ML_DTYPES = {ElemType.INT4: "int4", ElemType.UINT4: "uint4", ElemType.INT2: "int2", ElemType.UINT2: "uint2",
             ElemType.FLOAT8E4M3FN: "float8_e4m3fn", ElemType.FLOAT8E4M3FNUZ: "float8_e4m3fnuz",
             ElemType.FLOAT8E5M2: "float8_e5m2", ElemType.FLOAT8E5M2FNUZ: "float8_e5m2fnuz",
             ElemType.FLOAT4E2M1: "float4_e2m1fn"}
_FROM_ML_DTYPES = {v: k for k, v in ML_DTYPES.items()}


def int_range(t: ElemType) -> tuple[int, int]:
    """``(min, max)`` of an integer quantized type."""
    bits, signed = INT_QUANT[t]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def code_dtype(t: ElemType) -> np.dtype:
    """The numpy dtype that holds one code of ``t`` (int8/uint8 for sub-byte integers, uint8 for minifloats)."""
    if t in NATIVE:
        return np.dtype(NATIVE[t])
    if t in INT_QUANT:
        return np.dtype(np.int8 if INT_QUANT[t][1] else np.uint8)
    if t in MINIFLOATS:
        return np.dtype(np.uint8)
    raise ValueError(f"dspsim.onnx: element type {type_name(t)} has no array representation in dspsim")


def type_name(t) -> str:
    try:
        return ElemType(t).name
    except ValueError:
        return f"data_type {int(t)}"


def ml_dtypes_type(value):
    """The ElemType of ``value`` if it is an ml_dtypes array, scalar or dtype of a type in :data:`ML_DTYPES`,
    else None."""
    if isinstance(value, (np.ndarray, np.generic)):
        return _FROM_ML_DTYPES.get(value.dtype.name)
    try:
        return _FROM_ML_DTYPES.get(np.dtype(value).name)
    except (TypeError, ValueError):
        return None


def from_numpy(dtype) -> ElemType:
    """The ElemType of a numpy dtype (ValueError for a dtype ONNX has no type for)."""
    try:
        return _FROM_NUMPY[np.dtype(dtype)]
    except KeyError:
        raise ValueError(f"dspsim.onnx: numpy dtype {np.dtype(dtype)} has no ONNX element type") from None


@dataclass(frozen=True, eq=False)
class QArray:
    """Codes of an ONNX type numpy has no dtype for (int4, uint4, int2, uint2, float8, float4).

    ``codes``: one value per element, :func:`code_dtype` of ``type`` (integers as their value,
    minifloats as their bit pattern). Build from ONNX storage with :meth:`from_packed`.
    """

    codes: np.ndarray
    type: ElemType

    @property
    def shape(self):
        return self.codes.shape

    def packed(self) -> bytes:
        """The TensorProto ``raw_data`` bytes (int4/float4: two per byte, int2: four, low bits first)."""
        return pack(self.codes, self.type)

    @classmethod
    def from_packed(cls, data: bytes, type: ElemType, shape) -> "QArray":
        return cls(unpack(data, type, shape), ElemType(type))

    def to_ml_dtypes(self) -> np.ndarray:
        """The codes as an ``ml_dtypes`` array of the same type (``ml_dtypes.int4``, ``ml_dtypes.float8_e4m3fn``, ...),
        bit for bit. ImportError without the ml_dtypes package (onnx installs it)."""
        try:
            import ml_dtypes
        except ImportError:
            raise ImportError("dspsim.onnx.QArray.to_ml_dtypes: needs the ml_dtypes package (pip install ml-dtypes; "
                              "onnx installs it)") from None
        dt = np.dtype(getattr(ml_dtypes, ML_DTYPES[self.type]))
        if self.type in MINIFLOATS:  # the bit pattern, as ml_dtypes stores it
            return np.asarray(self.codes, np.uint8).view(dt)
        return self.codes.astype(dt)

    @classmethod
    def from_ml_dtypes(cls, array) -> "QArray":
        """The QArray of an ``ml_dtypes`` array or scalar of an ONNX type (:data:`ML_DTYPES`), bit for bit;
        TypeError for any other value."""
        t = ml_dtypes_type(array)
        if t is None:
            raise TypeError(f"dspsim.onnx.QArray.from_ml_dtypes: needs an ml_dtypes array of one of "
                            f"{sorted(_FROM_ML_DTYPES)}, got {type(array).__name__} of dtype "
                            f"{getattr(array, 'dtype', None)}")
        a = np.asarray(array)
        if t in MINIFLOATS:
            f = MINIFLOATS[t]
            return cls(a.view(np.uint8) & np.uint8((1 << (1 + f.exp_bits + f.man_bits)) - 1), t)
        return cls(a.astype(code_dtype(t)), t)

    def to_float(self) -> np.ndarray:
        """float32 values (integers exactly; minifloats decoded exactly, NaN codes as NaN)."""
        if self.type in MINIFLOATS:
            return decode_float(self.codes, self.type)
        return self.codes.astype(np.float32)

    def __repr__(self):
        return f"QArray({self.type.name}, shape={self.codes.shape}, codes={self.codes.tolist()!r})"


def pack(codes: np.ndarray, t: ElemType) -> bytes:
    """ONNX storage of ``codes`` of type ``t``: sub-byte types packed from the low bits up."""
    codes = np.asarray(codes)
    bits = PACKED_BITS.get(t)
    if bits is None:
        return np.ascontiguousarray(codes, code_dtype(t)).tobytes()
    per = 8 // bits
    u = (codes.reshape(-1).astype(np.int64) & ((1 << bits) - 1)).astype(np.uint8)
    u = np.concatenate([u, np.zeros((-u.size) % per, np.uint8)]).reshape(-1, per)
    out = np.zeros(u.shape[0], np.uint8)
    for j in range(per):
        out |= (u[:, j] << (bits * j)).astype(np.uint8)
    return out.tobytes()


def unpack(data, t: ElemType, shape) -> np.ndarray:
    """Inverse of :func:`pack`: one code per element, shaped ``shape``. ValueError if ``data`` is short."""
    shape = tuple(int(d) for d in shape)
    n = shape_size(shape, "dspsim.onnx")
    bits = PACKED_BITS.get(t)
    dt = code_dtype(t)
    if bits is None:
        need = n * dt.itemsize
        if len(data) != need:
            raise ValueError(f"dspsim.onnx: {type_name(t)} tensor of shape {shape} needs {need} bytes, got {len(data)}")
        return np.frombuffer(bytes(data), dt).reshape(shape).copy()
    per = 8 // bits
    need = -(-n // per)
    if len(data) != need:
        raise ValueError(f"dspsim.onnx: {type_name(t)} tensor of shape {shape} needs {need} packed bytes, "
                         f"got {len(data)}")
    b = np.frombuffer(bytes(data), np.uint8)
    u = np.stack([(b >> (bits * j)) & ((1 << bits) - 1) for j in range(per)], axis=1).reshape(-1)[:n]
    u = u.astype(np.int16)
    if t in INT_QUANT and INT_QUANT[t][1]:
        u = np.where(u >= (1 << (bits - 1)), u - (1 << bits), u)
    return u.astype(dt).reshape(shape)


# ------------------------------------------------------------------------------------------------
# minifloats
# ------------------------------------------------------------------------------------------------
def _code_values(f: MiniFloat) -> np.ndarray:
    """float64 value of every code 0 .. 2^(1+e+m) - 1 (NaN codes NaN)."""
    n_codes = 1 << (1 + f.exp_bits + f.man_bits)
    vals = np.empty(n_codes, np.float64)
    e_max = (1 << f.exp_bits) - 1
    for code in range(n_codes):
        sign = -1.0 if code >> (f.exp_bits + f.man_bits) else 1.0
        e = (code >> f.man_bits) & e_max
        m = code & ((1 << f.man_bits) - 1)
        if e == 0:
            v = m * 2.0 ** (1 - f.bias - f.man_bits)
        else:
            v = (1 + m / (1 << f.man_bits)) * 2.0 ** (e - f.bias)
        if f.ieee_specials and e == e_max:
            v = np.inf if m == 0 else np.nan
        elif f.fn and e == e_max and m == (1 << f.man_bits) - 1:
            v = np.nan
        vals[code] = sign * v
    if f.uz:
        vals[n_codes // 2] = np.nan  # the "negative zero" code
    return vals


_TABLES = {t: _code_values(f) for t, f in MINIFLOATS.items()}


def minifloat_max(t: ElemType) -> float:
    """Largest finite value of a float8/float4 type (448, 240, 57344, 57344, 6)."""
    v = _TABLES[t]
    return float(np.nanmax(v[np.isfinite(v)]))


def decode_float(codes, t: ElemType) -> np.ndarray:
    """float32 value of each float8/float4 code (exact)."""
    return _TABLES[t][np.asarray(codes).astype(np.int64) & (len(_TABLES[t]) - 1)].astype(np.float32)


def _nan_code(t: ElemType, negative: np.ndarray) -> np.ndarray:
    f = MINIFLOATS[t]
    top = 1 << (f.exp_bits + f.man_bits)
    if f.uz:
        return np.full(negative.shape, top, np.int64)
    if f.fn:
        return np.where(negative, 2 * top - 1, top - 1)
    if f.ieee_specials:  # E5M2: quiet NaN S.11111.10
        return np.where(negative, top, 0) + (top - 1) - 1
    # FLOAT4E2M1 has no NaN. ml_dtypes (hence onnx.reference) casts NaN to the zero code of the
    # opposite sign (+NaN -> 0x8 "-0", -NaN -> 0x0); dspsim reproduces that artefact.
    return np.where(negative, 0, top)


def encode_float(x, t: ElemType, saturate: bool = True,
                 kernels: OnnxKernels = OnnxKernels.ONNX_REFERENCE) -> np.ndarray:
    """float8/float4 codes (uint8) of float values ``x``, rounded to nearest, ties to the even code.

    Beyond the largest finite value (after rounding) and for +-inf: with ``saturate`` the largest
    finite value (signed); otherwise +-inf (E5M2), NaN (E4M3FN, both FNUZ types); FLOAT4E2M1, which has
    neither, saturates always. NaN gives the format's NaN code (the sign kept where the format has
    two; FLOAT4E2M1: see :func:`_nan_code`); for FNUZ types -0 and negative values rounding to 0
    give +0.

    ``kernels=OnnxKernels.ONNXRUNTIME`` (an engine profile's ``onnx.kernels``) reproduces ONNX Runtime's
    bit-twiddling conversion
    (``include/onnxruntime/core/common/float8.h``), which differs only without saturation, just
    above the largest value: E4M3FN maps |x| in [480, 496) to +-448 (the truncated mantissa 111 is
    masked to 110 and no rounding follows) where IEEE rounding overflows to NaN; E5M2 maps |x| in
    [61440, 65536) (rounding up from 57344 into the infinity) to NaN (0x7B | 0x7C = 0x7F), not +-inf.
    """
    f = MINIFLOATS[t]
    x = np.asarray(x, np.float64)
    vals = _TABLES[t]
    top = 1 << (f.exp_bits + f.man_bits)
    pos = vals[:top]
    finite = np.isfinite(pos)
    mags = pos[finite]  # ascending, codes 0..k
    n_fin = mags.size
    # a virtual next value above the largest finite one: the rounding boundary of overflow
    last = mags[-1]
    ulp = last - mags[-2]
    ext = np.append(mags, last + ulp)
    a = np.abs(x)
    neg = np.signbit(x)
    nan = np.isnan(x)
    a_safe = np.where(nan | np.isinf(a), 0.0, a)
    i = np.clip(np.searchsorted(ext, a_safe, side="right") - 1, 0, n_fin)
    j = np.minimum(i + 1, n_fin)
    lo, hi = ext[i], ext[j]
    d_lo, d_hi = a_safe - lo, hi - a_safe
    up = (d_hi < d_lo) | ((d_hi == d_lo) & (i % 2 == 1) & (j != i))
    k = np.where(up, j, i)
    overflow = (k == n_fin) | np.isinf(a)
    k = np.where(overflow, n_fin - 1, k)
    if saturate or t == ElemType.FLOAT4E2M1:
        mag_code = k
    elif f.ieee_specials:
        mag_code = np.where(overflow, top - (1 << f.man_bits), k)  # S.11111.00 = inf
    else:
        mag_code = np.where(overflow, -1, k)
    code = np.where(neg, mag_code + top, mag_code)
    if f.uz:
        code = np.where(code == top, 0, code)  # no negative zero
    if not (saturate or t == ElemType.FLOAT4E2M1) and not f.ieee_specials:
        code = np.where(overflow, _nan_code(t, neg), code)
    code = np.where(nan, _nan_code(t, neg), code)
    if OnnxKernels(kernels) is OnnxKernels.ONNXRUNTIME and not saturate:
        sign = np.where(neg, top, 0)
        if t == ElemType.FLOAT8E4M3FN:
            code = np.where((a >= 480) & (a < 496), sign + top - 2, code)
        elif t == ElemType.FLOAT8E5M2:
            code = np.where((a >= 61440) & (a < 65536), sign + top - 1, code)
    return code.astype(np.uint8)
