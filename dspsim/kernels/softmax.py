"""int8 SOFTMAX over the last axis: TFLite's gemmlowp fixed-point reference (LiteRT BUILTIN_REF and TFLM).

``reference_ops::Softmax<int8_t, int8_t>`` (LiteRT ``kernels/internal/reference/softmax.h``; TFLM calls the
same function): per row, ``d = q - max(row)``; entries with ``d >= diff_min`` contribute
``exp_on_negative_values(MBQM>1(d))`` (Q5.26 in, Q0.31 out) rescaled to Q12.19 and summed; the sum is
inverted by ``GetReciprocal``; each output is ``RoundingDivideByPOT(SRDHM(recip, exp), nbu + 23) - 128``,
clamped; entries below ``diff_min`` give -128. Any rank, any beta (beta only enters the multiplier).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..fixedpoint import (
    rounding_divide_by_pot_scalar,
    saturating_rounding_doubling_high_mul_scalar,
    exp_on_negative_values,
    get_reciprocal,
    log_x_for_x_greater_than_or_equal_to_1,
    multiply_by_quantized_multiplier_scalar,
    quantize_multiplier,
    rescale,
    round_half_away_from_zero,
    wrap_scalar,
)
from ._common import check_tensor, zero_point
from .nonlinear import libm_f32

_INT8 = (np.dtype(np.int8),)
_SCALED_DIFF_INTEGER_BITS = 5
_ACCUMULATION_INTEGER_BITS = 12


@dataclass(frozen=True)
class SoftmaxParams:
    """TFLite ``SoftmaxParams`` of the int8 reference: ``input_multiplier``/``input_left_shift`` (beta times
    the input scale, in Q5.26 per input step) and ``diff_min`` (differences below it give exp 0)."""

    input_multiplier: int
    input_left_shift: int
    diff_min: int


def tflite_softmax_params(*, input_scale, beta=1.0):
    """TFLite ``PreprocessSoftmaxScaling(beta, s_in, 5)`` + ``CalculateInputRadius(5, shift)`` (default
    double-rounding build): ``real = min(double(beta) * double(s_in) * 2^26, 2^31 - 1)``,
    ``QuantizeMultiplierGreaterThanOne(real)`` (refused when ``real <= 1``, as TFLite's CHECK aborts),
    ``diff_min = -floor(31 * 2^26 / 2^shift)``. ``beta`` and ``s_in`` are float32 values, as in the model."""
    func = "tflite_softmax_params"
    for name, v in (("input_scale", input_scale), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
            raise TypeError(f"{func}: {name} must be a float, got {type(v).__name__}")
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"{func}: {name} must be finite and positive, got {v}")
    real = min(float(np.float32(beta)) * float(np.float32(input_scale)) * float(1 << 26), float((1 << 31) - 1))
    if not real > 1.0:
        raise ValueError(f"{func}: beta * input_scale * 2^26 = {real} must exceed 1 (QuantizeMultiplierGreaterThanOne)")
    m, shift = quantize_multiplier(real)
    if not 0 <= shift <= 31:
        raise ValueError(f"{func}: the left shift {shift} is outside [0, 31]")
    radius = math.floor(31.0 * 2.0**26 / 2.0**shift)
    return SoftmaxParams(int(m), int(shift), -radius)


@njit(cache=True)
def _softmax_rows(x, depth, multiplier, left_shift, diff_min, out_bits, out):
    for r in range(x.shape[0] // depth):
        row = x[r * depth:(r + 1) * depth]
        orow = out[r * depth:(r + 1) * depth]
        max_in_row = np.int64(-128)
        for c in range(depth):
            max_in_row = max(max_in_row, np.int64(row[c]))
        sum_of_exps = np.int64(0)
        for c in range(depth):
            d = np.int64(row[c]) - max_in_row
            if d >= diff_min:
                scaled = saturating_rounding_doubling_high_mul_scalar(wrap_scalar(d << left_shift, 32), multiplier)
                e = exp_on_negative_values(scaled, 5)
                sum_of_exps = wrap_scalar(sum_of_exps + rescale(e, 0, 12), 32)
        shifted_scale, num_bits_over_unit = get_reciprocal(sum_of_exps, 12)
        exponent = num_bits_over_unit + 31 - out_bits
        out_min = -(np.int64(1) << (out_bits - 1))
        for c in range(depth):
            d = np.int64(row[c]) - max_in_row
            if d >= diff_min:
                scaled = saturating_rounding_doubling_high_mul_scalar(wrap_scalar(d << left_shift, 32), multiplier)
                e = exp_on_negative_values(scaled, 5)
                o = rounding_divide_by_pot_scalar(saturating_rounding_doubling_high_mul_scalar(shifted_scale, e), exponent) + out_min
                orow[c] = min(max(o, out_min), -out_min - 1)
            else:
                orow[c] = out_min


def softmax(x, *, params, out_dtype="int8"):
    """TFLite int8 SOFTMAX over the last axis: see the module text. ``out_dtype`` "int8" (output scale 1/256,
    zero point -128; final shift ``nbu + 23``) or "int16" (``Softmax<int8_t, int16_t>``: scale 1/65536, zero
    point -32768; shift ``nbu + 15``).

    ``MBQM>1(d) = SRDHM(int32(d * 2^shift), multiplier)`` (TFLite's ``MultiplyByQuantizedMultiplierGreaterThanOne``
    in the default build: one rounding, ties toward +inf); the final shift ties away from zero; the sum of
    exps in Q12.19 cannot overflow for rows of fewer than 2^12 entries (each term is at most 1).
    ``params``: a :class:`SoftmaxParams` from :func:`tflite_softmax_params`.
    """
    func = "softmax"
    x = check_tensor(x, func, "x", allowed=_INT8)
    if x.ndim < 1:
        raise ValueError(f"{func}: x must have rank >= 1")
    if not isinstance(params, SoftmaxParams):
        raise TypeError(f"{func}: params must be a SoftmaxParams, got {type(params).__name__}")
    for name, v, lo, hi in (("input_multiplier", params.input_multiplier, 1 << 30, (1 << 31) - 1),
                            ("input_left_shift", params.input_left_shift, 0, 31),
                            ("diff_min", params.diff_min, -(1 << 31), 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
            raise ValueError(f"{func}: params.{name} must be an int in [{lo}, {hi}], got {v!r}")
    depth = x.shape[-1]
    if depth >= 1 << 12:
        raise ValueError(f"{func}: the last axis has {depth} entries; the Q12.19 sum of exps holds fewer than 4096")
    if out_dtype not in ("int8", "int16"):
        raise ValueError(f"{func}: out_dtype must be 'int8' or 'int16', got {out_dtype!r}")
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, np.dtype(out_dtype))
    _softmax_rows(flat, depth, int(params.input_multiplier), int(params.input_left_shift), int(params.diff_min),
                  8 * out.itemsize, out)
    return out.reshape(x.shape)



# --------------------------------------------------------------------------------------------
# LOG_SOFTMAX (LiteRT reference_integer_ops::LogSoftmax; TFLM the same)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogSoftmaxParams:
    """What ``PreprocessLogSoftmaxScalingExp(1.0, s_in, 5)`` derives: the Q5.26 input rescaling, the
    reverse rescaling (``reverse_scaling_right_shift >= 0``) and ``diff_min``."""

    input_multiplier: int
    input_left_shift: int
    reverse_scaling_divisor: int
    reverse_scaling_right_shift: int
    diff_min: int


def tflite_log_softmax_params(*, input_scale):
    """LiteRT ``LogSoftmaxPrepare`` / TFLM ``CalculateOpData`` (int8, beta 1): the softmax scaling of
    :func:`tflite_softmax_params`, then ``QuantizeMultiplierSmallerThanOneExp(2^(31 - shift) / multiplier)``
    (double; refused unless the quotient is in (0, 1), as TFLite's CHECK aborts)."""
    sp = tflite_softmax_params(input_scale=input_scale, beta=1.0)
    real = float(1 << (31 - sp.input_left_shift)) / float(sp.input_multiplier) if sp.input_left_shift <= 31 else 0.0
    if not 0.0 < real < 1.0:
        raise ValueError(f"tflite_log_softmax_params: the reverse scaling {real} must be in (0, 1) "
                         "(QuantizeMultiplierSmallerThanOneExp)")
    m, shift = quantize_multiplier(real)
    return LogSoftmaxParams(sp.input_multiplier, sp.input_left_shift, int(m), -int(shift), sp.diff_min)


@njit(cache=True)
def _log_softmax_rows(x, depth, multiplier, shift, rev_multiplier, rev_shift, diff_min, out):
    for r in range(x.shape[0] // depth):
        row = x[r * depth:(r + 1) * depth]
        orow = out[r * depth:(r + 1) * depth]
        max_in_row = np.int64(-128)
        for c in range(depth):
            max_in_row = max(max_in_row, np.int64(row[c]))
        sum_of_exps = np.int64(0)
        for c in range(depth):
            d = np.int64(row[c]) - max_in_row
            if d >= diff_min:
                e = exp_on_negative_values(multiply_by_quantized_multiplier_scalar(d, multiplier, shift), 5)
                sum_of_exps = wrap_scalar(sum_of_exps + rescale(e, 0, 12), 32)
        log_sum = log_x_for_x_greater_than_or_equal_to_1(sum_of_exps, 12, 5)
        shifted_log_sum = wrap_scalar(log_sum - (1 << 31), 32)
        adjusted_diff_min = max(diff_min - 1,
                                multiply_by_quantized_multiplier_scalar(shifted_log_sum, rev_multiplier, -rev_shift))
        for c in range(depth):
            d = np.int64(row[c]) - max_in_row
            if d > adjusted_diff_min:
                q5 = multiply_by_quantized_multiplier_scalar(d, multiplier, shift)
                o = rounding_divide_by_pot_scalar(wrap_scalar(q5 - log_sum, 32), 22) + 127
                orow[c] = min(max(o, -128), 127)
            else:
                orow[c] = -128


def log_softmax(x, *, params):
    """TFLite int8 LOG_SOFTMAX over the last axis (output scale 16/256, zero point 127).

    Per row: ``d = q - max``; ``S = sum exp_on_negative_values(MBQM(d))`` in Q12.19 over ``d >= diff_min``;
    ``L = log_x_for_x_greater_than_or_equal_to_1(S)`` in Q5.26; entries with ``d >
    max(diff_min - 1, MBQM(L - 2^31, reverse_multiplier, -reverse_shift))`` give
    ``clamp(RoundingDivideByPOT(MBQM(d) - L, 22) + 127)`` (ties away from zero), the others -128.
    MBQM is ``MultiplyByQuantizedMultiplier`` (double rounding). ``params`` from
    :func:`tflite_log_softmax_params`.
    """
    func = "log_softmax"
    x = check_tensor(x, func, "x", allowed=_INT8)
    if not isinstance(params, LogSoftmaxParams):
        raise TypeError(f"{func}: params must be a LogSoftmaxParams, got {type(params).__name__}")
    for name, v, lo, hi in (("input_multiplier", params.input_multiplier, 1 << 30, (1 << 31) - 1),
                            ("input_left_shift", params.input_left_shift, 0, 30),
                            ("reverse_scaling_divisor", params.reverse_scaling_divisor, 0, (1 << 31) - 1),
                            ("reverse_scaling_right_shift", params.reverse_scaling_right_shift, 0, 31),
                            ("diff_min", params.diff_min, -(1 << 31), 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
            raise ValueError(f"{func}: params.{name} must be an int in [{lo}, {hi}], got {v!r}")
    depth = x.shape[-1]
    if depth >= 1 << 12:
        raise ValueError(f"{func}: the last axis has {depth} entries; the Q12.19 sum of exps holds fewer than 4096")
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, np.int8)
    _log_softmax_rows(flat, depth, int(params.input_multiplier), int(params.input_left_shift),
                      int(params.reverse_scaling_divisor), int(params.reverse_scaling_right_shift),
                      int(params.diff_min), out)
    return out.reshape(x.shape)


# --------------------------------------------------------------------------------------------
# LiteRT's optimized SOFTMAX / LOG_SOFTMAX (the default interpreter: the XNNPACK delegate takes no int8 softmax)
# --------------------------------------------------------------------------------------------
def optimized_softmax_table(*, input_scale, beta=1.0):
    """LiteRT ``PopulateSoftmaxLookupTable``: ``table[255 - v] = expf(f32(-s_in * beta) * v)`` for v in 0..255
    (float32, glibc ``expf``): ``exp`` of ``v`` input steps below the row maximum."""
    func = "optimized_softmax_table"
    for name, v in (("input_scale", input_scale), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
            raise TypeError(f"{func}: {name} must be a float, got {type(v).__name__}")
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"{func}: {name} must be finite and positive, got {v}")
    scale = np.float32(-np.float32(input_scale) * np.float32(beta))
    table = np.empty(256, np.float32)
    for v in range(256):
        table[255 - v] = libm_f32("expf", np.float32(scale * np.float32(v)))
    return table


def _optimized_args(func, x, table, output_scale, output_zero_point, out_dtype):
    x = check_tensor(x, func, "x", allowed=_INT8)
    t = np.asarray(table)
    if t.dtype != np.float32 or t.shape != (256,):
        raise ValueError(f"{func}: table must be a float32 array of 256 entries, got {t.dtype} {t.shape}")
    if out_dtype not in ("int8", "int16"):
        raise ValueError(f"{func}: out_dtype must be 'int8' or 'int16', got {out_dtype!r}")
    if isinstance(output_scale, bool) or not isinstance(output_scale, (int, float, np.floating, np.integer)) \
            or not math.isfinite(output_scale) or output_scale <= 0:
        raise ValueError(f"{func}: output_scale must be a finite positive float, got {output_scale!r}")
    zo = zero_point(output_zero_point, np.dtype(out_dtype), func, "output_zero_point")
    return x, np.ascontiguousarray(t), np.float32(output_scale), zo


@njit(cache=True)
def _optimized_softmax_rows(x, depth, table, output_scale, zo, out_bits, out):
    hi = (np.int64(1) << (out_bits - 1)) - 1
    for r in range(x.shape[0] // depth):
        row = x[r * depth:(r + 1) * depth]
        max_val = np.int64(-128)
        for c in range(depth):
            max_val = max(max_val, np.int64(row[c]))
        sum_exp = np.float32(0.0)
        for c in range(depth):  # sequential float32 sum, as compiled (no reassociation)
            sum_exp = np.float32(sum_exp + table[255 - max_val + np.int64(row[c])])
        inv_sum_exp = np.float32(np.float32(1.0) / np.float32(sum_exp * output_scale))
        for c in range(depth):
            prob = np.float32(table[255 - max_val + np.int64(row[c])] * inv_sum_exp)
            q = np.int64(round_half_away_from_zero(np.float64(prob))) + zo
            out[r * depth + c] = min(max(q, -hi - 1), hi)


def optimized_softmax(x, *, table, output_scale, output_zero_point, out_dtype="int8"):
    """LiteRT ``optimized_ops::Softmax`` (int8 input, x86 build): float32 throughout.

    Per row: ``e_j = table[255 - max + q_j]`` (:func:`optimized_softmax_table`), ``S = e_0 + e_1 + ...``
    summed in order in float32, ``inv = f32(1 / f32(S * s_out))``, ``out_j = clamp(std::round(f32(e_j *
    inv)) + zo)``: ties away from zero; the output zero point IS used (the reference adds the type's
    minimum instead). ``out_dtype`` "int8" or "int16".
    """
    func = "optimized_softmax"
    x, t, s_out, zo = _optimized_args(func, x, table, output_scale, output_zero_point, out_dtype)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, np.dtype(out_dtype))
    _optimized_softmax_rows(flat, x.shape[-1], t, s_out, zo, 8 * out.itemsize, out)
    return out.reshape(x.shape)


def optimized_log_softmax(x, *, table, input_scale, output_scale, output_zero_point):
    """LiteRT ``optimized_ops::LogSoftmax`` (int8): per row ``S = sum e_j`` as in :func:`optimized_softmax`,
    ``L = logf(S)``, ``k = f32(s_in / s_out)``, ``p = f32(f32(f32(s_in * max) + L) / s_out)``,
    ``out_j = clamp(rint(f32(f32(k * q_j) - p)) + zo)``: ties to even (``std::rint``)."""
    func = "optimized_log_softmax"
    x, t, s_out, zo = _optimized_args(func, x, table, output_scale, output_zero_point, "int8")
    if isinstance(input_scale, bool) or not isinstance(input_scale, (int, float, np.floating, np.integer)) \
            or not math.isfinite(input_scale) or input_scale <= 0:
        raise ValueError(f"{func}: input_scale must be a finite positive float, got {input_scale!r}")
    s_in = np.float32(input_scale)
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1]).astype(np.int64)
    out = np.empty(rows.shape, np.int8)
    k = np.float32(s_in / s_out)
    for r, row in enumerate(rows):  # one logf per row: the prepare-time libm call keeps glibc's rounding
        m = int(row.max())
        total = np.float32(0.0)
        for q in row:
            total = np.float32(total + t[255 - m + int(q)])
        precomputed = np.float32(np.float32(np.float32(s_in * np.float32(m)) + libm_f32("logf", total)) / s_out)
        vals = np.rint((k * row.astype(np.float32)).astype(np.float32) - precomputed).astype(np.int64) + zo
        out[r] = np.clip(vals, -128, 127)
    return out.reshape(x.shape)

# --------------------------------------------------------------------------------------------
# descriptor (dspsim.registry)
# --------------------------------------------------------------------------------------------
def _softmax_case(p, rng):
    from ..registry import random_codes

    return dict(x=random_codes(rng, p["shape"], "int8"),
                params=tflite_softmax_params(input_scale=p["input_scale"], beta=p["beta"]), out_dtype=p["out_dtype"])


def _register():
    from .. import reference as ref
    from ..registry import Operator, SuiteCase, register

    rng = np.random.default_rng(0)
    register(Operator(
        "softmax", softmax, ref.softmax_oracle,
        lambda: [_softmax_case({"shape": [2, 5], "input_scale": 0.1, "beta": 1.0, "out_dtype": t}, rng)
                 for t in ("int8", "int16")],
        "TFLite int8 SOFTMAX over the last axis (gemmlowp reference: LiteRT BUILTIN_REF = TFLM)",
        generate=_softmax_case, params={"shape": [4, 64], "input_scale": 0.030747152864933014, "beta": 1.0,
                                        "out_dtype": "int8"}, choices={"out_dtype": ("int8", "int16")},
        cases=(SuiteCase("softmax-every-code-row", {"shape": [1, 256]}, 2200),
               SuiteCase("softmax-int16-output", {"shape": [1, 256], "out_dtype": "int16"}, 2204),
               SuiteCase("softmax-beta-0.1-wide", {"input_scale": 0.12298861145973206, "beta": 0.1}, 2201),
               SuiteCase("softmax-rank4-beta-3.7", {"shape": [2, 2, 4, 16], "beta": 3.7}, 2202),
               SuiteCase("softmax-pot-scale", {"input_scale": 0.125, "shape": [8, 32]}, 2203))))
    register(Operator(
        "log_softmax", log_softmax, ref.log_softmax_oracle,
        lambda: [_log_softmax_case({"shape": [2, 5], "input_scale": 0.1}, rng)],
        "TFLite int8 LOG_SOFTMAX over the last axis (gemmlowp reference: LiteRT BUILTIN_REF = TFLM)",
        generate=_log_softmax_case, params={"shape": [4, 64], "input_scale": 0.061685413122177124},
        cases=(SuiteCase("log-softmax-every-code-row", {"shape": [1, 256]}, 2220),
               SuiteCase("log-softmax-pot-scale", {"input_scale": 0.125, "shape": [8, 32]}, 2221),
               SuiteCase("log-softmax-wide", {"input_scale": 0.1654580533504486, "shape": [2, 2, 4, 16]}, 2222))))
    register(Operator(
        "optimized_softmax", optimized_softmax, ref.optimized_softmax_oracle,
        lambda: [_optimized_case({"shape": [2, 5], "input_scale": 0.1, "beta": 1.0, "out_dtype": t,
                                  "output_zero_point": -128 if t == "int8" else 0}, rng) for t in ("int8", "int16")],
        "LiteRT optimized int8 SOFTMAX (float32 exp table; engine xnnpack)",
        generate=_optimized_case, params={"shape": [4, 64], "input_scale": 0.030747152864933014, "beta": 1.0,
                                          "out_dtype": "int8", "output_zero_point": -128},
        choices={"out_dtype": ("int8", "int16")},
        cases=(SuiteCase("optimized-softmax-every-code-row", {"shape": [1, 256]}, 2210),
               SuiteCase("optimized-softmax-int16-zp0", {"shape": [16, 16], "out_dtype": "int16",
                                                         "output_zero_point": 0, "beta": 0.7}, 2211))))


def _log_softmax_case(p, rng):
    from ..registry import random_codes

    return dict(x=random_codes(rng, p["shape"], "int8"), params=tflite_log_softmax_params(input_scale=p["input_scale"]))


def _optimized_case(p, rng):
    from ..registry import random_codes

    scale = 1.0 / 256 if p["out_dtype"] == "int8" else 1.0 / 65536
    return dict(x=random_codes(rng, p["shape"], "int8"),
                table=optimized_softmax_table(input_scale=p["input_scale"], beta=p["beta"]), output_scale=scale,
                output_zero_point=p["output_zero_point"], out_dtype=p["out_dtype"])


_register()
