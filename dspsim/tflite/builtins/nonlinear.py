"""The nonlinear family's builtins: LOGISTIC, TANH, ELU, EXP, HARD_SWISH, PRELU, RSQRT, L2_NORMALIZATION, SOFTMAX,
LOG_SOFTMAX.

LOGISTIC, TANH (int8, int16; uint8 on the LiteRT engines), ELU, EXP, HARD_SWISH, PRELU, RSQRT, L2_NORMALIZATION
(int8; HARD_SWISH and L2_NORMALIZATION also uint8 on the LiteRT engines), per kernel.

Per kernel (``g.kernel(op)``): TFLite's reference tables (LiteRT), TFLM's (gemmlowp per element for int8
LOGISTIC / TANH, its own ELU table and checks), XNNPACK's tables (the delegate takes every int8 LOGISTIC,
TANH and ELU; int16 ones run on LiteRT's optimized kernel, gemmlowp's fixed point on power-of-two scales).
The measurements: docs/engines.md, "Nonlinear operators".

Sources: LiteRT ``tflite/kernels/activations.cc`` (SigmoidPrepare, TanhPrepare, EluPrepare, HardSwishPrepare,
PreluPrepare), ``tflite/kernels/exp.cc``; tflite-micro ``micro/kernels/logistic_common.cc``, ``tanh.cc``,
``elu.cc``, ``hard_swish_common.cc``, ``prelu_common.cc``; LiteRT ``delegates/xnnpack/xnnpack_delegate.cc``
(VisitUnaryNode: int8 LOGISTIC, TANH and ELU) and XNNPACK ``src/reference/unary-elementwise.cc``.

SOFTMAX (int8 or int16, any rank, any beta) and LOG_SOFTMAX: the reference kernels of LiteRT BUILTIN_REF and TFLM.

Sources: LiteRT ``tflite/kernels/activations.cc`` (SoftmaxPrepare), tflite-micro
``micro/kernels/softmax_common.cc`` (CalculateSoftmaxParams: ``Kernel.TFLM``, an exact int8 output scale and its
own int16 parameters). ``Kernel.LITERT_OPTIMIZED`` (LiteRT's default interpreter) runs int8 SOFTMAX and
LOG_SOFTMAX on ``optimized_ops::Softmax`` / ``LogSoftmax`` (float32 exp tables; the XNNPACK delegate takes float32
softmax only): docs/engines.md, "Nonlinear operators".
"""
from __future__ import annotations

import numpy as np

from ...engines import Kernel
from ...kernels.nonlinear import pointwise as nonlinear, int16 as nl16
from ...kernels.nonlinear.normalization import l2_normalization
from ...kernels.nonlinear.softmax import (
    Int16SoftmaxPrepare, float_log_softmax, log_softmax, optimized_log_softmax, optimized_softmax, optimized_softmax_table, softmax,
    tflite_int16_softmax_params, tflite_log_softmax_params, tflite_softmax_params,
)
from ..prepare import (
    Prepared, at_prepare, at_run, builtin, check_arity, check_int_types, check_last_axis, check_rank,
    per_tensor_quant, refuse, check_dtype, approximate,
)
from ._lean import binary_run, unary_run


_INT8 = (np.dtype(np.int8),)
_UINT8 = (np.dtype(np.uint8),)
_BYTES = _INT8 + _UINT8  # LOGISTIC, TANH, HARD_SWISH: LiteRT's kernels over int8 or uint8 codes


def _unary_quant(op, g, allowed=_INT8):
    check_arity(op, 1)
    check_int_types(op, g, allowed=allowed)
    check_dtype(op, g.tensor(op.outputs[0]), (g.tensor(op.inputs[0]).dtype,), "output")
    s_in, zi = per_tensor_quant(op, g.tensor(op.inputs[0]), "input")
    s_out, zo = per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    return dict(input_scale=float(s_in), input_zero_point=zi, output_scale=float(s_out), output_zero_point=zo)


def _table_op(op, g, builder, function, q):
    """A lookup table over the input's codes (int8, or uint8: LiteRT's ``LUTPopulate<uint8_t>``, XNNPACK's qu8)."""
    table = at_prepare(op, builder, function, dtype=g.tensor(op.inputs[0]).dtype.name, **q)
    return Prepared(unary_run(op, g, nonlinear.lookup_table_plan, table), dict(q, function=function.value, table=table))


def _tflm_sigmoid(op, g, kernel, q):
    """TFLM's per-element gemmlowp function of an int8 code, tabulated once over the 256 codes at prepare
    time (the same integers as running ``kernel`` on every element)."""
    p = at_prepare(op, nonlinear.tflm_gemmlowp_input_params, q["input_scale"])
    kq = dict(input_zero_point=q["input_zero_point"], input_multiplier=p.input_multiplier,
              input_left_shift=p.input_left_shift, input_range_radius=p.input_range_radius)
    table = kernel(np.arange(-128, 128, dtype=np.int8), **kq)
    return Prepared(unary_run(op, g, nonlinear.lookup_table_plan, table), dict(kq, table=table))


def _int16_sigmoid(op, g, tanh):
    """int16 LOGISTIC / TANH (16x8): the input rescaled as TFLM's and LiteRT's Prepare do
    (:func:`~dspsim.kernels.nonlinear.int16.tflite_int16_sigmoid_rescale`), then the 256-entry table with
    linear interpolation (TFLM and LiteRT BUILTIN_REF). LiteRT's default interpreter (XNNPACK takes no
    int16 sigmoid) runs its optimized kernel, which on a power-of-two input scale (multiplier 0) takes
    gemmlowp's int16 fixed point instead: Q3.12 in, Q0.15 out (TANH with left shift 1: the input doubled
    with saturation first). Both zero points must be 0."""
    check_arity(op, 1)
    check_int_types(op, g, allowed=(np.dtype(np.int16),))
    (s_in, zi), (_, zo) = (per_tensor_quant(op, g.tensor(i), w) for i, w in ((op.inputs[0], "input"),
                                                                            (op.outputs[0], "output")))
    if zi or zo:
        refuse(op, f"int16 {op.name} needs zero points 0, got input {zi} and output {zo}")
    m, s = at_prepare(op, nl16.tflite_int16_sigmoid_rescale, float(s_in), tanh=tanh)
    params = {"input_multiplier": m, "input_left_shift": s}
    if g.kernel(op) in (Kernel.XNNPACK, Kernel.LITERT_OPTIMIZED) and m == 0:
        if not tanh:
            return Prepared(lambda inputs: nl16.fixedpoint16_logistic(inputs[0], 3), dict(params, integer_bits=3))

        def run(inputs):
            doubled = np.clip(inputs[0].astype(np.int32) << s, -32768, 32767).astype(np.int16)
            return nl16.fixedpoint16_tanh(doubled, 3)

        return Prepared(run, dict(params, integer_bits=3))
    plan = nl16.int16_tanh_plan if tanh else nl16.int16_logistic_plan
    return Prepared(unary_run(op, g, plan, m, s), params)


@builtin("LOGISTIC")
def prepare_logistic(op, g):
    if g.tensor(op.inputs[0]).dtype == np.int16:
        return _int16_sigmoid(op, g, tanh=False)
    q = _unary_quant(op, g, _BYTES)
    kernel = g.kernel(op)
    if kernel is Kernel.XNNPACK:  # the delegate takes every int8 / uint8 LOGISTIC (no scale condition)
        return _table_op(op, g, nonlinear.xnnpack_lut_table, nonlinear.LutFunction.XNNPACK_SIGMOID, q)
    if kernel is Kernel.TFLM:
        if q["output_zero_point"] != -128:
            refuse(op, f"TFLM requires the output zero point -128, got {q['output_zero_point']} "
                       "(logistic_common.cc)")
        return _tflm_sigmoid(op, g, nonlinear.tflm_logistic, q)
    if np.float64(np.float32(q["output_scale"])) != 1.0 / 256:
        refuse(op, f"LiteRT requires the output scale 1/256, got {q['output_scale']!r} (activations.cc "
                   "SigmoidPrepare)")
    return _table_op(op, g, nonlinear.tflite_lut_table, nonlinear.LutFunction.LOGISTIC, q)


@builtin("TANH")
def prepare_tanh(op, g):
    if g.tensor(op.inputs[0]).dtype == np.int16:
        return _int16_sigmoid(op, g, tanh=True)
    q = _unary_quant(op, g, _BYTES)
    kernel = g.kernel(op)
    if kernel is Kernel.XNNPACK:
        return _table_op(op, g, nonlinear.xnnpack_lut_table, nonlinear.LutFunction.TANH, q)
    if kernel is Kernel.TFLM:  # the output scale and zero point are ignored (steps of 1/128 around 0)
        return _tflm_sigmoid(op, g, nonlinear.tflm_tanh, q)
    return _table_op(op, g, nonlinear.tflite_lut_table, nonlinear.LutFunction.TANH, q)


@builtin("ELU")
def prepare_elu(op, g):
    if g.tensor(op.inputs[0]).dtype == np.float32:  # a float island: TFLite's reference Elu (expm1f)
        check_dtype(op, g.tensor(op.outputs[0]), (np.dtype(np.float32),), "output")
        note = {}
        if g.kernel(op) is Kernel.XNNPACK:  # the delegate takes float ELU
            note = approximate(op, g, "XNNPACK's f32 ELU (its own expm1 approximation) is not reproduced: measured "
                                      "1 ulp off expm1f on 750 of 32,768 values")
        return Prepared(lambda inputs: at_run(op, nonlinear.float_elu, inputs[0]), {"float32": True, **note})
    q = _unary_quant(op, g)
    if g.kernel(op) is Kernel.XNNPACK:  # the delegate takes int8 ELU (VisitUnaryNode: float or qint8)
        return _table_op(op, g, nonlinear.xnnpack_lut_table, nonlinear.LutFunction.XNNPACK_ELU, q)
    if g.kernel(op) is Kernel.LITERT_OPTIMIZED:  # LiteRT's own ELU (BUILTIN_REF registers none): expm1f
        return _table_op(op, g, nonlinear.tflite_lut_table, nonlinear.LutFunction.ELU, q)
    return _table_op(op, g, nonlinear.tflite_lut_table, nonlinear.LutFunction.TFLM_ELU, q)


@builtin("EXP")
def prepare_exp(op, g):
    q = _unary_quant(op, g)
    return _table_op(op, g, nonlinear.tflite_lut_table, nonlinear.LutFunction.EXP, q)


@builtin("HARD_SWISH")
def prepare_hard_swish(op, g):
    q = _unary_quant(op, g, _BYTES)  # LiteRT's HardSwish<T>: int8 and uint8 (TFLM: int8)
    params = at_prepare(op, nonlinear.tflite_hard_swish_params, dtype=g.tensor(op.inputs[0]).dtype.name, **q)
    return Prepared(unary_run(op, g, nonlinear.hard_swish_plan, params=params), dict(params=params))


@builtin("PRELU")
def prepare_prelu(op, g):
    check_arity(op, 2)
    t_in = g.tensor(op.inputs[0])
    check_dtype(op, t_in, _INT8 + _INT16, "input")
    check_dtype(op, g.tensor(op.inputs[1]), _INT8, "alpha")  # int8 alpha for int16 too (prelu_common.cc)
    check_dtype(op, g.tensor(op.outputs[0]), (t_in.dtype,), "output")
    s_in, zi = per_tensor_quant(op, t_in, "input")
    s_a, za = per_tensor_quant(op, g.tensor(op.inputs[1]), "alpha")
    s_out, zo = per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    params = at_prepare(op, nonlinear.tflite_prelu_params, input_scale=float(s_in), input_zero_point=zi,
                        alpha_scale=float(s_a), alpha_zero_point=za, output_scale=float(s_out), output_zero_point=zo,
                        dtype=t_in.dtype.name)
    return Prepared(binary_run(op, g, nonlinear.prelu_plan, params=params), dict(params=params))


@builtin("RSQRT")
def prepare_rsqrt(op, g):
    q = _unary_quant(op, g)  # LiteRT's default interpreter runs it on the same builtin (XNNPACK: float only)
    m, s = at_prepare(op, nonlinear.tflite_rsqrt_multiplier, input_scale=q["input_scale"],
                      output_scale=q["output_scale"])
    kq = dict(input_zero_point=q["input_zero_point"], output_zero_point=q["output_zero_point"], multiplier=m, shift=s)
    return Prepared(unary_run(op, g, nonlinear.rsqrt_plan, **kq), kq)


@builtin("L2_NORMALIZATION")
def prepare_l2_normalization(op, g):
    q = _unary_quant(op, g, _BYTES)  # uint8: LiteRT's legacy kernel (TFLM: int8)
    zo_required = 128 if g.tensor(op.inputs[0]).dtype == np.uint8 else 0
    check_last_axis(op, g.tensor(op.inputs[0]))
    if op.options.get("fused_activation_function", 0) != 0:
        refuse(op, "a fused activation is not supported (l2norm.cc requires NONE)")
    check_rank(op, g, g.tensor(op.inputs[0]))  # TFLM: rank <= 4 (l2norm.cc)
    if g.kernel(op) is not Kernel.TFLM and (q["output_scale"] != 1.0 / 128 or q["output_zero_point"] != zo_required):
        refuse(op, f"LiteRT requires the output scale 1/128 and zero point {zo_required}, got {q['output_scale']!r} "
                   f"and {q['output_zero_point']} (l2norm.cc)")
    kq = dict(input_zero_point=q["input_zero_point"])
    return Prepared(lambda inputs: at_run(op, l2_normalization, inputs[0], **kq), kq)


_INT16 = (np.dtype(np.int16),)


@builtin("SOFTMAX")
def prepare_softmax(op, g):
    check_arity(op, 1)
    check_last_axis(op, g.tensor(op.inputs[0]))
    in_dtype = check_dtype(op, g.tensor(op.inputs[0]), _INT8 + _UINT8 + _INT16, "input")
    if in_dtype == np.int16:
        return _prepare_int16_softmax(op, g)
    if in_dtype == np.uint8:
        return _prepare_uint8_softmax(op, g)
    out_dtype = check_dtype(op, g.tensor(op.outputs[0]), (np.dtype(np.int8), np.dtype(np.int16)), "output")
    s_in, _ = per_tensor_quant(op, g.tensor(op.inputs[0]), "input")
    s_out, zo = per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    want = np.float32(1.0 / 256) if out_dtype == np.int8 else np.float32(1.0 / 65536)
    near = abs(s_out - want) <= np.float32(0.001) * want
    tflm = g.kernel(op) is Kernel.TFLM
    if out_dtype == np.int8 and (zo != -128 or not (s_out == want if tflm else near)):
        rule = "exactly" if tflm else "within 0.1%"
        refuse(op, f"an int8 output needs zero point -128 and scale 1/256 ({rule}), got {zo} and {float(s_out)!r} "
                   "(TFLM softmax_common.cc; LiteRT activations.cc SoftmaxPrepare)")
    if out_dtype == np.int16 and tflm and (zo != -32768 or not near):
        refuse(op, f"TFLM needs an int16 output with zero point -32768 and scale 1/65536 within 0.1%, got {zo} and "
                   f"{float(s_out)!r} (softmax_common.cc)")
    beta = float(np.float32(op.options.get("beta", 1.0)))
    if g.kernel(op) is Kernel.LITERT_OPTIMIZED:  # float32 exp table, the output zero point used
        table = at_prepare(op, optimized_softmax_table, input_scale=float(s_in), beta=beta)
        kq = dict(table=table, output_scale=float(s_out), output_zero_point=zo, out_dtype=np.dtype(out_dtype).name)
        return Prepared(lambda inputs: at_run(op, optimized_softmax, inputs[0], **kq), kq)
    params = at_prepare(op, tflite_softmax_params, input_scale=float(s_in), beta=beta)
    kq = dict(params=params, out_dtype=np.dtype(out_dtype).name)
    return Prepared(lambda inputs: at_run(op, softmax, inputs[0], **kq), kq)


def _prepare_uint8_softmax(op, g):
    """uint8 in, uint8 or int16 out (``SoftmaxQuantized<uint8_t, uint8_t / int16_t>``): LiteRT's Prepare checks
    neither the output's scale nor its zero point. The reference adds the type's minimum (output scale 1/256 or
    1/65536 assumed); the optimized kernel a uint8 output ``int32_t(f32(p + 0.5f))`` with the output scale and no
    zero point (x86: ``QuantizeSoftmaxOutput<uint8_t>``), an int16 one ``std::round(p) + zp``."""
    check_int_types(op, g, allowed=_UINT8 + _INT16)
    out_dtype = g.tensor(op.outputs[0]).dtype.name
    s_in, _ = per_tensor_quant(op, g.tensor(op.inputs[0]), "input")
    s_out, zo = per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    beta = float(np.float32(op.options.get("beta", 1.0)))
    if g.kernel(op) is Kernel.LITERT_OPTIMIZED:
        table = at_prepare(op, optimized_softmax_table, input_scale=float(s_in), beta=beta)
        kq = dict(table=table, output_scale=float(s_out), output_zero_point=zo, out_dtype=out_dtype)
        return Prepared(lambda inputs: at_run(op, optimized_softmax, inputs[0], **kq), kq)
    params = at_prepare(op, tflite_softmax_params, input_scale=float(s_in), beta=beta)
    kq = dict(params=params, out_dtype=out_dtype)
    return Prepared(lambda inputs: at_run(op, softmax, inputs[0], **kq), kq)


def _prepare_int16_softmax(op, g):
    """int16 in and out (``SoftmaxInt16``): input and output zero point 0, output scale 1/32768 within 0.1%
    (both engines; LiteRT's default interpreter runs the same Prepare and kernel, XNNPACK takes no int16
    softmax). LiteRT would run an int16 input into an int8 output out of bounds; refused."""
    check_dtype(op, g.tensor(op.outputs[0]), _INT16, "output")
    s_in, zi = per_tensor_quant(op, g.tensor(op.inputs[0]), "input")
    s_out, zo = per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    want = np.float32(1.0 / 32768)
    if zi != 0 or zo != 0 or not abs(s_out - want) <= np.float32(0.001) * want:
        refuse(op, f"an int16 softmax needs input and output zero point 0 and output scale 1/32768 within 0.1%, "
                   f"got {zi}, {zo} and {float(s_out)!r} (LiteRT activations.cc SoftmaxPrepare; TFLM "
                   "softmax_common.cc)")
    prepare = Int16SoftmaxPrepare.TFLM if g.kernel(op) is Kernel.TFLM else Int16SoftmaxPrepare.LITERT
    params = at_prepare(op, tflite_int16_softmax_params, input_scale=float(s_in),
                        beta=float(np.float32(op.options.get("beta", 1.0))), prepare=prepare)
    return Prepared(lambda inputs: at_run(op, softmax, inputs[0], params=params), dict(params=params))


@builtin("LOG_SOFTMAX")
def prepare_log_softmax(op, g):
    check_arity(op, 1)
    check_last_axis(op, g.tensor(op.inputs[0]))
    if g.tensor(op.inputs[0]).dtype == np.float32:  # a float head (TFLM, LiteRT's reference kernel)
        check_dtype(op, g.tensor(op.outputs[0]), (np.dtype(np.float32),), "output")
        note = {}
        if g.kernel(op) is Kernel.LITERT_OPTIMIZED:
            note = approximate(op, g, "LiteRT's optimized float LogSoftmax (Eigen's vectorized exp, packet-order "
                                      "sum) is not reproduced: measured 1-510 ulp off the reference kernel on 10% "
                                      "of the values, the largest on outputs near 0")
        return Prepared(lambda inputs: at_run(op, float_log_softmax, inputs[0]), {"float32": True, **note})
    check_int_types(op, g, allowed=_INT8)
    s_in, _ = per_tensor_quant(op, g.tensor(op.inputs[0]), "input")
    s_out, zo = per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    if float(s_out) != 16.0 / 256 or zo != 127:
        refuse(op, f"the int8 output must have scale 16/256 and zero point 127, got {float(s_out)!r} and {zo} "
                   "(LogSoftmaxPrepare; TFLM log_softmax.cc)")
    if g.kernel(op) is Kernel.LITERT_OPTIMIZED:  # float32 exp table, logf, rint
        table = at_prepare(op, optimized_softmax_table, input_scale=float(s_in), beta=1.0)
        kq = dict(table=table, input_scale=float(s_in), output_scale=float(s_out), output_zero_point=zo)
        return Prepared(lambda inputs: at_run(op, optimized_log_softmax, inputs[0], **kq), kq)
    params = at_prepare(op, tflite_log_softmax_params, input_scale=float(s_in))
    return Prepared(lambda inputs: at_run(op, log_softmax, inputs[0], params=params), dict(params=params))
