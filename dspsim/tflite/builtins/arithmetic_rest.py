"""The rest of TFLite's builtins with an integer path (:mod:`dspsim.kernels.arithmetic.rest`): ABS, NEG,
FLOOR_DIV, FLOOR_MOD, DIV, ADD_N, CUMSUM, ARG_MIN, REDUCE_MIN, REDUCE_PROD, LOG and SQRT (int8 and int16, LiteRT), float32 DIV
and SQRT (IEEE division and square root, then the activation clamp to [-FLT_MAX, FLT_MAX], as LiteRT's and
tflite-micro's kernels run them; MoveNet's post-processing; refused under XNNPACK, whose f32 kernels are not
reproduced); and the
refusals of the float-only ones (SQUARE, SIN, COS, L2_POOL_2D).

Which engine runs which type (measured, tests/golden/ops/builtins2.npz; the profiles' ``types``): LiteRT runs
NEG, FLOOR_DIV, FLOOR_MOD on raw int8 / int16 / int32 codes (no rescaling), int32 ADD_N, CUMSUM, DIV and
REDUCE_PROD, quantized REDUCE_PROD; tflite-micro runs int8 ADD_N and CUMSUM (rescaled, one input quantization)
and registers no REDUCE_PROD. Quantized DIV and ABS run in both, each engine deriving DIV's multiplier its way.
"""
from __future__ import annotations

import numpy as np

from ...engines import Kernel
from ...kernels.arithmetic import rest as K
from ..prepare import (
    Prepared, activation_range, approximate, at_prepare, at_run, builtin, check_dtype, check_shape, constant,
    engine_types, per_tensor_quant, refuse,
)

_I8, _U8, _I16, _I32, _I64, _F32, _BOOL = (np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.int64,
                                                                  np.float32, np.bool_))
_INTS = (_I8, _U8, _I16, _I32, _I64)


def _arity(op, n_in):
    if len(op.inputs) != n_in or len(op.outputs) != 1 or min(op.inputs) < 0:
        refuse(op, f"expects {n_in} input(s) and one output, has {len(op.inputs)} and {len(op.outputs)}")


def _typed(op, g, allowed, k=0):
    """Input ``k``'s dtype, one the engine's kernel takes (``allowed``: LiteRT's; the profile may narrow it); float
    types dspsim does not model here are refused as such."""
    t = g.tensor(op.inputs[k])
    check_dtype(op, t, engine_types(op, g, allowed), "input", g)
    if t.dtype not in _INTS + (_BOOL,):
        refuse(op, f"{t.type_name} {op.name} is not modelled by dspsim (integer tensors only)")
    check_dtype(op, g.tensor(op.outputs[0]), (t.dtype,), "output")
    return t


def _same_shape(op, g):
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    if tuple(t_in.shape) != tuple(t_out.shape):
        refuse(op, f"output shape {tuple(t_out.shape)} differs from the input's {tuple(t_in.shape)}")


def _quantized(t):
    return t.dtype in (_I8, _U8, _I16) and t.scale.size > 0


@builtin("ABS")
def prepare_abs(op, g):
    _arity(op, 1)
    t = _typed(op, g, (_F32, _I8, _I16, _I32))
    _same_shape(op, g)
    if t.dtype == _I32 or not _quantized(t):
        return Prepared(lambda inputs: K.raw_abs(inputs[0]), {})
    (si, zi), (so, zo) = per_tensor_quant(op, t, "input"), per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    if t.dtype == _I16 and (zi, zo) != (0, 0):
        refuse(op, f"int16 ABS needs zero points 0, got {zi}, {zo} (elementwise.cc)")
    rescale = at_prepare(op, K.rescale_params, si, so)
    table = K.abs_table(t.dtype, zi, zo, rescale)
    lo = int(np.iinfo(t.dtype).min)
    return Prepared(lambda inputs: table[inputs[0].astype(np.int64) - lo],
                    {"input_zero_point": zi, "output_zero_point": zo, "rescale": rescale})


@builtin("NEG")
def prepare_neg(op, g):
    _arity(op, 1)
    _typed(op, g, (_I64, _I32, _F32, _I8, _I16))
    _same_shape(op, g)
    return Prepared(lambda inputs: K.negate(inputs[0]), {})


def _binary_out(op, g, fn):
    t1, t2, t_out = g.tensor(op.inputs[0]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    check_dtype(op, t2, (t1.dtype,), "input2")
    shape = at_prepare(op, K.broadcast_out, "load_model", t1.shape, t2.shape)
    if shape != tuple(t_out.shape):
        refuse(op, f"computes shape {shape}, the model declares {tuple(t_out.shape)}")

    def run(inputs):
        y = at_run(op, fn, inputs[0], inputs[1])
        return y if y.shape == shape else check_shape(op, y, t_out)

    return run


@builtin("FLOOR_DIV")
def prepare_floor_div(op, g):
    _arity(op, 2)
    _typed(op, g, (_F32, _I32, _I16, _I8))
    return Prepared(_binary_out(op, g, K.floor_div), {})


@builtin("FLOOR_MOD")
def prepare_floor_mod(op, g):
    _arity(op, 2)
    _typed(op, g, (_I8, _I16, _I32, _I64, _F32))
    return Prepared(_binary_out(op, g, K.floor_mod), {})


_FLT_MAX = float(np.finfo(np.float32).max)
# CalculateActivationRange<float>: no activation is [lowest, max], so an infinite quotient becomes -+FLT_MAX
_FLOAT_ACT = {0: (-_FLT_MAX, _FLT_MAX), 1: (0.0, _FLT_MAX), 2: (-1.0, 1.0), 3: (0.0, 6.0)}
# XNNPACK's output range of each fused activation (the delegate's ConvertActivationToOutputRange): infinite bounds
_XNNPACK_ACT = {0: (-np.inf, np.inf), 1: (0.0, np.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}


def _activation_min_max(y, lo, hi):
    """``ActivationFunctionWithMinMax``: ``std::min(std::max(y, lo), hi)``, which keeps a NaN and a -0."""
    y = np.where(y < lo, lo, y)
    return np.where(hi < y, hi, y).astype(np.float32)


def prepare_float_binary(op, g, ufunc, types):
    """A float32 DIV or MUL: one IEEE operation (``ufunc``) per element, broadcasting, then the fused
    activation's float range (``types``: what the op takes, for the engine's refusal message). XNNPACK's
    ``vmul`` / ``vdiv`` (:func:`dspsim.kernels.arithmetic.rest.xnnpack_f32_binary`): denormals as zero in and out,
    no clamp without an activation."""
    _arity(op, 2)
    check_dtype(op, g.tensor(op.inputs[0]), engine_types(op, g, types), "input", g)
    check_dtype(op, g.tensor(op.inputs[1]), (_F32,), "input 2")
    check_dtype(op, g.tensor(op.outputs[0]), (_F32,), "output")
    act = op.options.get("fused_activation_function", 0)
    if act not in _FLOAT_ACT:
        refuse(op, f"fused activation {act} is not supported")
    if g.kernel(op) is Kernel.XNNPACK:
        lo, hi = (np.float32(v) for v in _XNNPACK_ACT[act])
        return Prepared(_binary_out(op, g, lambda x1, x2: K.xnnpack_f32_binary(ufunc, x1, x2, lo, hi)),
                        {"fused_activation_function": act, "denormals": "flushed to zero (XNNPACK)"})
    lo, hi = (np.float32(v) for v in _FLOAT_ACT[act])

    def run(x1, x2):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            y = ufunc(x1, x2, dtype=np.float32)
        return _activation_min_max(y, lo, hi)

    return Prepared(_binary_out(op, g, run), {"fused_activation_function": act})


@builtin("DIV")
def prepare_div(op, g):
    _arity(op, 2)
    if g.tensor(op.inputs[0]).dtype == _F32:  # one IEEE division per element in every engine (reference, XNNPACK)
        return prepare_float_binary(op, g, np.divide, (_F32, _I32, _I8, _U8, _I16))
    t = _typed(op, g, (_F32, _I32, _I8, _U8, _I16))
    if t.dtype == _I32:
        if op.options.get("fused_activation_function", 0) != 0:
            refuse(op, "a fused activation on int32 DIV is not modelled")
        return Prepared(_binary_out(op, g, K.integer_div), {})
    if t.dtype not in (_I8, _U8):
        refuse(op, f"{t.type_name} DIV is not modelled by dspsim (int8, uint8, int32)")
    t2, t_out = g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    (s1, z1), (s2, z2), (so, zo) = (per_tensor_quant(op, x, w) for x, w in ((t, "input1"), (t2, "input2"),
                                                                          (t_out, "output")))
    quotient = g.tflite.quotient if g.kernel(op) is Kernel.TFLM else "float32"
    m, s = at_prepare(op, K.div_params, s1, s2, so, quotient)
    lo, hi = activation_range(op, op.options.get("fused_activation_function", 0), t_out)
    table = K.div_table(t.dtype, z1, z2, zo, m, s, lo, hi)
    base = int(np.iinfo(t.dtype).min)

    def div(x1, x2):
        if np.any(x2.astype(np.int64) == z2):
            raise ValueError(f"a divisor code equals its zero point {z2} (division by zero: undefined in the engines)")
        return table[x1.astype(np.int64) - base, x2.astype(np.int64) - base]

    params = {"multiplier": m, "shift": s, "input1_zero_point": z1, "input2_zero_point": z2, "output_zero_point": zo}
    return Prepared(_binary_out(op, g, div), params)


@builtin("ADD_N")
def prepare_add_n(op, g):
    if len(op.inputs) < 1 or len(op.outputs) != 1 or min(op.inputs) < 0:
        refuse(op, "expects at least one input and one output")
    t = _typed(op, g, (_F32, _I32))
    shape = tuple(t.shape)
    for k in range(1, len(op.inputs)):
        tk = g.tensor(op.inputs[k])
        check_dtype(op, tk, (t.dtype,), "input")
        if tuple(tk.shape) != shape:
            refuse(op, f"input {k} has shape {tuple(tk.shape)}, input 0 {shape}: ADD_N takes one shape")
    if tuple(g.tensor(op.outputs[0]).shape) != shape:
        refuse(op, "the output shape differs from the inputs'")
    if t.dtype == _I32:
        return Prepared(lambda inputs: K.wrap_to(np.sum([x.astype(np.int64) for x in inputs], axis=0), np.int32), {})
    q = per_tensor_quant(op, t, "input")
    for k in range(1, len(op.inputs)):
        if per_tensor_quant(op, g.tensor(op.inputs[k]), "input") != q:
            refuse(op, "every int8 input must have input 0's scale and zero point (add_n.cc)")
    so, zo = per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    at_prepare(op, K._add_n_params, q[0], so)
    return Prepared(lambda inputs: K.add_n_int8(inputs, q[1], q[0], zo, so), {"input_zero_point": q[1]})


@builtin("CUMSUM")
def prepare_cumsum(op, g):
    _arity(op, 2)
    t = _typed(op, g, (_I32, _I64, _F32))
    _same_shape(op, g)
    axis = constant(op, g, 1, "axis")
    if axis is None or axis.dtype != _I32 or axis.size != 1:
        refuse(op, "axis must be one constant int32")
    axis = int(axis.reshape(-1)[0])
    if not -len(t.shape) <= axis < len(t.shape):
        refuse(op, f"axis {axis} is out of range for rank {len(t.shape)}")
    ex, rev = bool(op.options.get("exclusive", 0)), bool(op.options.get("reverse", 0))
    params = {"axis": axis, "exclusive": ex, "reverse": rev}
    if t.dtype in (_I32, _I64):
        def run(inputs):
            x = inputs[0].astype(np.int64)
            x = np.flip(x, axis) if rev else x
            c = np.cumsum(x, axis=axis)
            if ex:
                c = c - x
            return K.wrap_to(np.flip(c, axis) if rev else c, t.dtype)
        return Prepared(run, params)
    (si, zi), (so, zo) = per_tensor_quant(op, t, "input"), per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    at_prepare(op, K._add_n_params, si, so)
    return Prepared(lambda inputs: K.cumsum_int8(inputs[0], axis, ex, rev, zi, si, zo, so), params)


def _axes(op, g, t):
    a = constant(op, g, 1, "axis")
    if a is None or a.dtype not in (_I32, _I64):
        refuse(op, "axis must be a constant int32 or int64 tensor")
    a = a.reshape(-1)
    rank = len(t.shape)
    if any(not -rank <= int(v) < rank for v in a):
        refuse(op, f"axis {a.tolist()} is out of range for rank {rank}")
    return sorted({int(v) % rank for v in a}) if rank else []


def _reduced_shape(op, g, t, axes, keep):
    shape = tuple(1 if k in axes else d for k, d in enumerate(t.shape)) if keep else \
        tuple(d for k, d in enumerate(t.shape) if k not in axes)
    if int(np.prod(shape)) != int(np.prod(g.tensor(op.outputs[0]).shape)):
        refuse(op, f"computes {shape}, the model declares {tuple(g.tensor(op.outputs[0]).shape)}")
    return tuple(g.tensor(op.outputs[0]).shape)


@builtin("ARG_MIN")
def prepare_arg_min(op, g):
    _arity(op, 2)
    t, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    check_dtype(op, t, engine_types(op, g, (_F32, _U8, _I8, _I32, _BOOL)), "input", g)
    if t.dtype == _F32:
        refuse(op, "float32 ARG_MIN is not modelled by dspsim (integer tensors only)")
    check_dtype(op, t_out, engine_types(op, g, (_I32, _I64), "output"), "output", g)
    axes = _axes(op, g, t)
    if len(axes) != 1:
        refuse(op, f"axis must hold one value, got {len(axes)}")
    ax = axes[0]
    shape = _reduced_shape(op, g, t, axes, False)
    return Prepared(lambda inputs: np.argmin(inputs[0], axis=ax).astype(t_out.dtype).reshape(shape), {"axis": ax})


@builtin("REDUCE_MIN")
def prepare_reduce_min(op, g):
    _arity(op, 2)
    t = _typed(op, g, (_F32, _I8, _U8, _I16, _I32, _I64))
    # XNNPACK's delegate takes an int8 REDUCE_MIN whatever the output quantization and copies the codes (measured:
    # builtins2.npz reduce_min_int8_requant); the builtin kernels check the quantizations are equal
    xnnpack = g.kernel(op) is Kernel.XNNPACK and t.dtype == _I8
    if _quantized(t) and not xnnpack and per_tensor_quant(op, t, "input") != per_tensor_quant(
            op, g.tensor(op.outputs[0]), "output"):
        refuse(op, "the output's scale and zero point must be the input's (LiteRT's reduce.cc and TFLM's "
                   "reduce_common.cc check it)")
    axes = _axes(op, g, t)
    shape = _reduced_shape(op, g, t, axes, bool(op.options.get("keep_dims", 0)))
    if not axes:
        return Prepared(lambda inputs: inputs[0].copy().reshape(shape), {"axis": axes})
    return Prepared(lambda inputs: np.min(inputs[0], axis=tuple(axes)).reshape(shape), {"axis": axes})


@builtin("REDUCE_PROD")
def prepare_reduce_prod(op, g):
    _arity(op, 2)
    t = _typed(op, g, (_F32, _I8, _I16, _I32, _I64))
    axes = _axes(op, g, t)
    shape = _reduced_shape(op, g, t, axes, bool(op.options.get("keep_dims", 0)))
    if t.dtype == _I32:
        return Prepared(lambda inputs: K.reduce_prod_int32(inputs[0], axes).reshape(shape), {"axis": axes})
    if not _quantized(t):
        refuse(op, f"{t.type_name} REDUCE_PROD without quantization is not modelled by dspsim")
    (si, zi), (so, zo) = per_tensor_quant(op, t, "input"), per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    if t.dtype == _I16 and (zi, zo) != (0, 0):
        refuse(op, f"int16 REDUCE_PROD needs zero points 0, got {zi}, {zo} (reduce.cc)")
    n = int(np.prod([t.shape[k] for k in axes], dtype=np.int64))
    if n == 0 or int(np.prod(shape)) == 0:
        refuse(op, "a REDUCE_PROD over no element is not modelled")
    m, s = at_prepare(op, K.prod_params, si, so, n)
    return Prepared(lambda inputs: K.reduce_prod_quantized(inputs[0], axes, zi, si, zo, so).reshape(shape),
                    {"axis": axes, "multiplier": m, "shift": s})


_FLOAT_ONLY = {"SQUARE": "elementwise.cc: Type {t} is unsupported by op Square",
               "SIN": "elementwise.cc: Type {t} is unsupported by op Sin",
               "COS": "elementwise.cc: Type {t} is unsupported by op Cos",
               "L2_POOL_2D": "pooling.cc / l2_pool_2d.cc: input->type != kTfLiteFloat32 ({t} != FLOAT32)"}


@builtin("SQUARE", "SIN", "COS", "L2_POOL_2D")
def prepare_float_only(op, g):
    """Float-only in every engine (LiteRT's and tflite-micro's kernels fail on any other type); dspsim models no
    float32 kernel of them either."""
    t = g.tensor(op.inputs[0]) if op.inputs and op.inputs[0] >= 0 else None
    name = "absent" if t is None else t.type_name
    refuse(op, f"{_FLOAT_ONLY[op.name].format(t=name)}: the engines run it on float32 only, which dspsim does not "
               "model")


def _table_run(table, lowest=-128):
    def run(inputs):
        x = inputs[0]
        if lowest > -128 and x.size and int(x.min()) < lowest:
            raise ValueError("Sqrt is only defined for non-negative values (a code below the input zero point)")
        return table[x.astype(np.int64) + 128]
    return run


@builtin("LOG", "SQRT")
def prepare_log_sqrt(op, g):
    """int8 / int16 LOG (a table of glibc's logf) and SQRT (float32 per element) as LiteRT's ``elementwise.cc`` runs them;
    tflite-micro takes float32 only (its profile's types)."""
    _arity(op, 1)
    t = g.tensor(op.inputs[0])
    if t.dtype == _F32 and op.name == "SQRT":  # IEEE sqrtf, correctly rounded in every engine
        check_dtype(op, g.tensor(op.outputs[0]), (_F32,), "output")
        _same_shape(op, g)
        if g.kernel(op) is Kernel.XNNPACK:
            note = approximate(op, g, "XNNPACK's f32 SQRT (a reciprocal-square-root estimate refined by Newton steps) "
                                      "is not reproduced: measured 1-2 ulp off sqrtf on a third of the inputs below "
                                      "2^126 and up to 50% off above, denormal inputs giving 0")
            def approx_sqrt(inputs):
                with np.errstate(invalid="ignore"):
                    return K.flush_denormals(np.sqrt(K.flush_denormals(inputs[0]), dtype=np.float32))
            return Prepared(approx_sqrt, note)

        def fsqrt(inputs):
            with np.errstate(invalid="ignore"):
                return np.sqrt(inputs[0], dtype=np.float32)

        return Prepared(fsqrt, {})
    t = _typed(op, g, (_F32, _I8, _I16))
    _same_shape(op, g)
    (si, zi), (so, zo) = per_tensor_quant(op, t, "input"), per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    if t.dtype == _I16:
        if op.name == "LOG":
            if (zi, zo) != (0, 0):
                refuse(op, f"int16 LOG needs zero points 0, got {zi}, {zo} (elementwise.cc)")
            lut = K.log_table_int16(si, so)
            return Prepared(lambda inputs: K.lookup_int16(inputs[0], lut), {"input_zero_point": 0,
                                                                           "output_zero_point": 0})
        return Prepared(lambda inputs: at_run(op, K.sqrt_int16, inputs[0], si, zi, so, zo),
                        {"input_zero_point": zi, "output_zero_point": zo})
    if op.name == "LOG":
        return Prepared(_table_run(K.log_table(si, zi, so, zo)), {"input_zero_point": zi, "output_zero_point": zo})
    table, lowest = K.sqrt_table(si, zi, so, zo)
    return Prepared(_table_run(table, lowest), {"input_zero_point": zi, "output_zero_point": zo})
