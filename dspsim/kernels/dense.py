"""Quantized fully connected (TFLite FULLY_CONNECTED / CMSIS-NN arm_fully_connected_s8 / FBGEMM linear).

``out[..., o] = clamp(requant(sum_d (x[..., d] - zx) * (w[o, d] - zw) + bias[o]) + zo, act_min, act_max)``
with the sum in the accumulator model (default int32, wrapping) and the requantization of
:class:`dspsim.Requant` (default TFLite's ``MultiplyByQuantizedMultiplier`` with double rounding).
"""
from __future__ import annotations

import numpy as np

from ._common import Geometry, check_tensor, prepare, run, weights_and_pack
from .gemm import gemm_s32, pack_weights


def fully_connected(x, w, bias=None, *, input_zero_point, weight_zero_point=0, output_zero_point,
                    multiplier=None, shift=None, act_min=None, act_max=None, rounding="double",
                    accumulator=None, out_dtype="int8", requant=None, input_scale=None, weight_scale=None,
                    output_scale=None, stats=False):
    """Quantized fully connected layer, bit-exact with TFLite's reference kernel (and its peers).

    Parameters
    ----------
    x : int8 or uint8 array (..., K)
    w : int8 or uint8 array (N, K), or ``dspsim.pack_weights(w)`` of an int8 one
        One row per output channel (TFLite layout). Packing reorders the weights for the gemm core
        (~N*K bytes of work): pack once per layer and pass the result to exclude it from timings,
        as FBGEMM's prepacked weights do. Raw arrays are packed on every call.
    bias : int32 array (N,), float array (N,) (FBGEMM only), or None (= zero)
    input_zero_point, output_zero_point : int
    weight_zero_point : int or (N,) int array (per output channel, as ONNX Runtime allows)
        Zero points, not offsets: the kernel sums ``(x - zx) * (w - zw)`` and adds ``zo`` after
        requantization. TFLite/CMSIS offsets are the negated input/weight zero points.
    multiplier, shift : int or (N,) int arrays
        Q31 multiplier in [0, 2^31) and shift in [-31, 30] (shift > 0 = left shift, TFLite).
    rounding : "double" (TFLite default build, gemmlowp) | "single" (TFLITE_SINGLE_ROUNDING), or a
        tie-rule name with ``requant="shift"``.
    requant : Requant or name, optional
        A :class:`dspsim.Requant`; or "tflite", "cmsis-nn", "fbgemm", "onnxruntime", "onnx-reference",
        "xnnpack" with ``input_scale``, ``weight_scale`` (scalar or per channel) and ``output_scale``
        (parameters derived as the engine's prepare step does, ``Requant.from_scales`` with
        op="fully_connected"); or "shift" with ``shift`` (power-of-two scale).
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
    func = "fully_connected"
    x = check_tensor(x, func, "x")
    w, packed = weights_and_pack(w, func, 2)
    k = x.shape[-1]
    n, kw = w.shape
    if kw != k:
        raise ValueError(f"{func}: x has {k} features but w has shape {w.shape} (N, K)")
    q, ws, bias_i, fbias = prepare(func, "fully_connected", x, w, bias, n, locals())
    x2 = np.ascontiguousarray(x.reshape(-1, k))
    zx, zw = q.zx, q.zw

    def fast(exact_bits):
        pw = packed or pack_weights(ws)
        if exact_bits == 32:  # zero points and bias folded into the gemm's store, modulo 2^32
            return gemm_s32(x2, pw, a_zero_point=zx, b_zero_point=zw, bias=bias_i)
        # The raw sum is exact (K * max|x| * max|w| < 2^31); the zero-point identity then holds in int64.
        s = gemm_s32(x2, pw).astype(np.int64)
        return s - zw * x2.sum(axis=1, dtype=np.int64)[:, None] + (-zx * pw.sums + k * zx * zw + bias_i)

    res = run(func, q, accumulator, stats, x4=x2.reshape(-1, 1, 1, k), w4=ws.reshape(n, 1, 1, k),
              ch_base=np.zeros(n, np.int64), g=Geometry(1, 1, (1, 1), (1, 1), 0, 0), wm=ws, bias_i=bias_i,
              fbias=fbias, fast=fast, exact_fast=False, cache=None if packed is None else packed.cache)
    out, st = (res if stats else (res, None))
    out = out.reshape(x.shape[:-1] + (n,))
    return (out, st) if stats else out
