"""Quantized fully connected (TFLite FULLY_CONNECTED / CMSIS-NN arm_fully_connected_s8 / FBGEMM linear).

``out[..., o] = clamp(requant(sum_d (x[..., d] - zx) * (w[o, d] - zw) + bias[o]) + zo, act_min, act_max)``
with the sum in the accumulator model (default int32, wrapping) and the requantization of
:class:`dspsim.Requant` (default TFLite's ``MultiplyByQuantizedMultiplier`` with double rounding).
"""
from __future__ import annotations

import numpy as np

from ..._errors import names_its_errors

from .._common import ACT_TYPES16, ConvPlan, ConvProblem, Geometry, resolve_quant, weights_and_pack
from .gemm import _choose_path, gemm_s32, pack_weights, prepare_gemm_s32
from .._checks import check_tensor, probe_array


def _fast(p, exact_bits):
    """The gemm fast path of :class:`ConvProblem` for ``p.x`` (M, 1, 1, K) and ``p.w`` (N, 1, 1, K)."""
    q = p.quant
    n, k = p.w.shape[0], p.w.shape[3]
    x2 = p.x.reshape(-1, k)
    pw = p.packed or pack_weights(p.w.reshape(n, k))
    if exact_bits == 32:  # zero points and bias folded into the gemm's store, modulo 2^32
        return gemm_s32(x2, pw, a_zero_point=q.zx, b_zero_point=q.zw, bias=p.bias)
    # The raw sum is exact (K * max|x| * max|w| < 2^31); the zero-point identity then holds in int64.
    s = gemm_s32(x2, pw).astype(np.int64)
    return s - q.zw * x2.sum(axis=1, dtype=np.int64)[:, None] + (-q.zx * pw.sums + k * q.zx * q.zw + p.bias)


@names_its_errors
def fully_connected(x, w, bias=None, *, input_zero_point, weight_zero_point=0, output_zero_point,
                    multiplier=None, shift=None, act_min=None, act_max=None, rounding="double",
                    accumulator=None, out_dtype="int8", requant=None, input_scale=None, weight_scale=None,
                    output_scale=None, tie=None, stats=False):
    """Quantized fully connected layer, bit-exact with TFLite's reference kernel (and its peers).

    Parameters
    ----------
    x : int8, uint8 or int16 array (..., K)
        int16 (TFLite's 16x8): the bias may be int64, the default accumulator is int64 (exact), and the
        engines requantize with ``requant=Requant.fixed_point(m, s, "int64")`` (TFLM, conv) or ``requant="litert"``
        (LiteRT's FC, in double).
    w : int8 or uint8 array (N, K), or ``dspsim.pack_weights(w)`` of an int8 one
        One row per output channel (TFLite layout). Packing reorders the weights for the gemm core
        (~N*K bytes of work): pack once per layer and pass the result to exclude it from timings,
        as FBGEMM's prepacked weights do. Raw arrays are packed on every call.
    bias : int32 array (N,) (int16 x: int64), float array (N,) (FBGEMM only), or None (= zero)
    input_zero_point, output_zero_point : int
    weight_zero_point : int or (N,) int array (per output channel, as ONNX Runtime allows)
        Zero points, not offsets: the kernel sums ``(x - zx) * (w - zw)`` and adds ``zo`` after
        requantization. TFLite/CMSIS offsets are the negated input/weight zero points.
    multiplier, shift : int or (N,) int arrays
        Q31 multiplier in [0, 2^31) and shift in [-31, 30] (shift > 0 = left shift, TFLite).
    rounding : "double" (TFLite default build, gemmlowp) | "single" (TFLITE_SINGLE_ROUNDING): how
        the fixed-point multiplier rounds.
    requant : Requant, engine or "shift", optional
        A :class:`dspsim.Requant`; or an engine (a name of :func:`dspsim.engines.names`: "tflm", "litert",
        "xnnpack", "fbgemm", "onednn", "onnxruntime", "onnx-reference", ...; or a profile) with ``input_scale``,
        ``weight_scale`` (scalar or per channel) and ``output_scale``: the parameters derived as the engine's
        Prepare does (``Requant.from_scales`` with op="fully_connected"); or "shift" with ``shift``
        (power-of-two scale) and ``tie``.
    tie : :class:`dspsim.Rounding` or its name, optional
        Tie rule of ``requant="shift"`` (default ``half_away_from_zero``): ``half_up`` (ARM VRSHL),
        ``half_to_even``, ``floor`` (plain ``>>``), ``toward_zero``.
    act_min, act_max : int, optional
        Activation clamp (fused ReLU etc.), default the full range of ``out_dtype``.
    accumulator : Accumulator, optional
        Default int32 wrapping (TFLite). Narrow, wide or saturating accumulators and x86 pair
        saturation are modelled exactly, MAC by MAC, when they can make a difference.
    out_dtype : "int8" | "uint8" | "int16"
    stats : bool
        Also return a :class:`dspsim.accumulator.KernelStats`.

    Returns
    -------
    ndarray (..., N) of ``out_dtype`` [, KernelStats]

    Order of operations (TFLite ``FullyConnected``): int32 sum over d, ``+ bias``, requantize,
    ``+ zo``, ``max(act_min)``, ``min(act_max)``. With the default accumulator the int32 sum wraps
    (no saturation); the requantization's only saturation is the final clamp.
    """
    problem = _fc_problem("fully_connected", x, w, bias, **{k: v for k, v in locals().items()
                                                            if k not in ("x", "w", "bias", "accumulator", "stats")})
    res = problem.run(accumulator, stats)  # one call: the separate requantization pass (see conv2d)
    out, st = (res if stats else (res, None))
    out = out.reshape(np.shape(x)[:-1] + (problem.w.shape[0],))
    return (out, st) if stats else out


class DensePlan:
    """:func:`fully_connected` prepared once for inputs of one shape and dtype (see
    :func:`fully_connected_plan`): ``plan(x)``, or ``plan.run(x, accumulator=None, stats=False)``."""

    def __init__(self, rows: ConvPlan, out_shape):
        self.rows = rows
        self.out_shape = out_shape
        self._rows_shape = rows.x_shape

    def stages(self, x, accumulator=None, tap=None):
        """:meth:`dspsim.kernels._common.ConvPlan.stages` with the output's shape; ``tap`` a flat index into
        it."""
        return self.rows.stages(x.reshape(self._rows_shape), accumulator, tap).reshape(self.out_shape)

    def run(self, x, accumulator=None, stats=False):
        res = self.rows.run(x.reshape(self._rows_shape), accumulator, stats)
        if stats:
            return res[0].reshape(self.out_shape), res[1]
        return res.reshape(self.out_shape)

    __call__ = run


@names_its_errors
def fully_connected_plan(x_shape, x_dtype, w, bias=None, **kw) -> DensePlan:
    """:func:`fully_connected` prepared once for inputs of ``x_shape`` (..., K) and ``x_dtype``, as
    TFLite's Prepare does: the keywords are those of :func:`fully_connected` except ``accumulator``
    and ``stats``, which ``plan.run(x, accumulator, stats)`` takes. ``fully_connected_plan(x.shape, x.dtype, w,
    bias, **kw)(x)`` is ``fully_connected(x, w, bias, **kw)``; raw int8 weights are packed here, once."""
    func = "fully_connected_plan"
    x = probe_array(x_shape, x_dtype, func)
    problem = _fc_problem(func, x, w, bias, **kw)
    return DensePlan(ConvPlan(problem, _prepare_fast, fused=True), x.shape[:-1] + (problem.w.shape[0],))


def _prepare_fast(p, epilogue):
    """:func:`_fast` prepared for a layer (the int32 case), requantizing in the gemm's store
    (``epilogue``, a :class:`~dspsim.kernels.mac.gemm.FusedRequant`): ``run(x) -> (M, N)`` codes."""
    q = p.quant
    n, k = p.w.shape[0], p.w.shape[3]
    pw = p.packed or pack_weights(p.w.reshape(n, k))  # p.w: signed int8 (ConvProblem.build)
    run = prepare_gemm_s32(p.x.shape[0], p.x.dtype, pw, q.zx + (128 if p.x.dtype == np.int8 else 0),
                           np.asarray(q.zw, np.int64), p.bias, _choose_path(None, "fully_connected"),
                           epilogue=epilogue)
    return lambda x: run(x.reshape(-1, k))


def _fc_problem(func, x, w, bias, *, input_zero_point, weight_zero_point=0, output_zero_point, multiplier=None,
                shift=None, act_min=None, act_max=None, rounding="double", out_dtype="int8", requant=None,
                input_scale=None, weight_scale=None, output_scale=None, tie=None):
    """The validated, resolved :class:`ConvProblem` of a :func:`fully_connected` call (x as (M, 1, 1, K))."""
    x = check_tensor(x, func, "x", allowed=ACT_TYPES16)
    if x.ndim == 0:
        raise ValueError(f"{func}: x must have shape (..., K), got a 0-d array")
    w, packed = weights_and_pack(w, func, 2)
    k = x.shape[-1]
    n, kw = w.shape
    if kw != k:
        raise ValueError(f"{func}: x has {k} features but w has shape {w.shape} (N, K)")
    q = resolve_quant(func, "fully_connected", x.dtype, w.dtype, n, input_zero_point=input_zero_point,
                      weight_zero_point=weight_zero_point, output_zero_point=output_zero_point, multiplier=multiplier,
                      shift=shift, rounding=rounding, tie=tie, requant=requant, input_scale=input_scale,
                      weight_scale=weight_scale, output_scale=output_scale, act_min=act_min, act_max=act_max,
                      out_dtype=out_dtype)
    return ConvProblem.build(func, q, x.reshape(-1, 1, 1, k), w.reshape(n, 1, 1, k), bias, np.zeros(n, np.int64),
                             Geometry(1, 1, (1, 1), (1, 1), 0, 0), _fast, packed=packed)
