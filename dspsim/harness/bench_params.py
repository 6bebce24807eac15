"""One operator's prepared parameters as a test bench reads them: numbers and names, nothing else.

:func:`bench_params` takes what the operator was prepared with (``Model.operator_params``: the objects its
kernel receives, never recomputed) and flattens it:

* every integer, boolean and float, every tuple and array of them, and every field of a parameter record
  (SOFTMAX's ``SoftmaxParams``, the int16 SOFTMAX's exp and 1/(1+x) tables, LSTM's ``LstmParams``, PRELU's,
  HARD_SWISH's) becomes a number array under its own name (0-d for a scalar). An array the operator holds keeps
  its dtype (the int8 ``table`` of LOGISTIC / TANH / EXP, the int16 ``exp_lut`` of the int16 SOFTMAX, the
  float32 exp ``table`` of LiteRT's optimized SOFTMAX); int64 arrays and Python integers become int32 where
  every value fits (as TFLite holds zero points, shifts, multipliers and bounds); booleans become 0 / 1;
* every string and enum becomes a name (``padding`` "SAME", ``requant_scheme`` "double", ``tie``
  "HALF_AWAY_FROM_ZERO", LSTM's ``arithmetic``);
* a window operator (``padding`` and ``stride``: conv, depthwise, transpose conv, pooling) gains the explicit
  padding ``pad_top``, ``pad_bottom``, ``pad_left``, ``pad_right``, computed by the kernels' own
  :func:`~dspsim.kernels._common.geometry` from the prepared stride, padding and dilation (the prepared plans
  hold the same numbers: the odd pixel of SAME at the bottom / right);
* ``rounding``: the rounding rule, named (:func:`rounding_rule`), where the parameters name a requantization.

Two parameters that become one name are refused (ValueError naming the operator), never merged.

Conventions (:data:`SHIFT_CONVENTION`, read off the kernels): every shift, whatever its name (``shift``,
``*_shift``, ``*_left_shift``, ``*_exponent``, ``cell_scale_power``), is a power-of-two exponent as TFLite's
``QuantizeMultiplier`` returns it and ``MultiplyByQuantizedMultiplier`` takes it, ``x * 2^shift``: > 0 a left
shift, < 0 a right shift (the int16 SOFTMAX's ``input_left_shift`` is negative for a small beta); the one
exception, ``*_right_shift`` (LOG_SOFTMAX's ``reverse_scaling_right_shift``), is a right shift amount >= 0. A
fixed-point multiplier is Q31: ``real = multiplier * 2^(shift - 31)``.
"""
from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass

import numpy as np

from ..kernels._common import geometry

SHIFT_CONVENTION = ("every shift (shift, *_shift, *_left_shift, *_exponent, cell_scale_power) is a power-of-two "
                    "exponent, x * 2^shift: > 0 a left shift, < 0 a right shift (TFLite's QuantizeMultiplier / "
                    "MultiplyByQuantizedMultiplier); *_right_shift is a right shift amount >= 0; a multiplier is "
                    "Q31: real = multiplier * 2^(shift - 31)")

_SCHEME_RULES = {
    "double": "MultiplyByQuantizedMultiplier, two roundings: acc * 2^max(shift, 0), "
              "SaturatingRoundingDoublingHighMul by multiplier (ties toward +inf), then RoundingDivideByPOT by "
              "max(-shift, 0) (ties {tie})",
    "single": "TFLITE_SINGLE_ROUNDING: (acc * multiplier + 2^(30 - shift)) >> (31 - shift), one rounding "
              "(ties {tie})",
    "int64": "MultiplyByQuantizedMultiplier of an int64 accumulator: multiplier reduced to 16 bits "
             "((m + 2^15) >> 16), (acc * m16 + 2^(14 - shift)) >> (15 - shift), ties toward +inf",
    "shift": "acc * 2^shift, rounded (ties {tie})",
    "float32": "float32(acc) * scale in float32, rounded (ties {tie})",
    "float64": "float64(acc) * scale + zero point in float64, rint (ties to even)",
    "double_scale": "std::round(double(acc) * scale) (ties away from zero)",
    "fbgemm": "FBGEMM: float32(acc) (+ bias / act_times_w) * scale, cvtps2dq (ties to even)",
    "onednn": "oneDNN: ((float32(acc) * act_times_w + bias) / s_out) + zero point in float32, ties to even",
}
_DEFAULT_TIES = {"double": "HALF_AWAY_FROM_ZERO", "single": "HALF_UP"}
_INT32 = np.iinfo(np.int32)


@dataclass(frozen=True)
class BenchParams:
    """One operator's parameters as numbers and names.

    Attributes
    ----------
    op_index : int
    op : str
        The operator's name (``CONV_2D``).
    numbers : dict
        name -> ndarray (0-d for a scalar), in the order prepared.
    names : dict
        name -> str: the named choices (padding mode, requantization scheme, tie rule, dtypes).
    rounding : str or None
        The rounding rule, named (:func:`rounding_rule`); None where the parameters name no requantization.
    """

    op_index: int
    op: str
    numbers: dict
    names: dict
    rounding: str | None


def rounding_rule(names: dict) -> str | None:
    """The rounding rule the named parameters select: ``requant_scheme`` (a MAC operator's
    :class:`~dspsim.Requant`) or ``rounding`` (a fixed-point requantization's), with ``tie``; None when neither
    is there."""
    scheme = names.get("requant_scheme", names.get("rounding"))
    if scheme not in _SCHEME_RULES:
        return None
    tie = names.get("tie", _DEFAULT_TIES.get(scheme, "HALF_TO_EVEN"))
    return f"{scheme}: " + _SCHEME_RULES[scheme].format(tie=tie.lower().replace("_", " "))


def _takes_tie(names: dict) -> bool:
    """Whether the requantization the names select rounds by a tie rule of its own (a float scheme other than
    float32 ignores ``tie``)."""
    return "{tie}" in _SCHEME_RULES.get(names.get("requant_scheme", names.get("rounding")), "{tie}")


def _number(v) -> np.ndarray:
    """A number or an array of numbers as an array: an array of integers up to 32 bits keeps its dtype, other
    integers become int32 where every value fits; booleans 0 / 1."""
    a = np.asarray(v)
    if a.dtype.kind == "b":
        return a.astype(np.int32)
    if isinstance(v, np.ndarray) and a.dtype.itemsize <= 4:
        return a
    if a.dtype.kind in "iu" and (a.size == 0 or (_INT32.min <= a.min() and a.max() <= _INT32.max)):
        return a.astype(np.int32)
    return a


def _flatten(name, v, numbers, names, where):
    """Put parameter ``name`` = ``v`` into ``numbers`` or ``names`` (a record's fields under their own names)."""
    if v is None:
        return
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        for f in dataclasses.fields(v):
            _flatten(f.name, getattr(v, f.name), numbers, names, where)
        return
    if name in numbers or name in names:
        raise ValueError(f"bench_params: {where} has two parameters named {name!r}")
    if isinstance(v, enum.Enum):
        names[name] = v.name
    elif isinstance(v, (str, np.str_)):
        names[name] = str(v)
    elif isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        names[name] = np.dtype(v).name
    else:
        a = _number(v)
        if a.dtype.kind not in "iuf":
            raise ValueError(f"bench_params: {where}'s parameter {name!r} is a {type(v).__name__}, not a number, "
                             "an array of numbers, a name or a record of them")
        numbers[name] = a


def _padding(model, op_index: int, numbers: dict, names: dict) -> dict:
    """The explicit padding of a window operator (``padding`` and ``stride`` among its parameters), as the
    kernels' :func:`geometry` resolves it; {} for any other operator."""
    if "padding" not in names or "stride" not in numbers:
        return {}
    ins = model.operator_inputs(op_index)
    if "filter_size" in numbers:  # pooling: the window is a parameter
        in_hw, k_hw = model.tensor_info(ins[0]).shape[1:3], tuple(numbers["filter_size"].tolist())
    elif "output_size" in numbers:  # transpose conv: the output is what the filter slides over
        in_hw, k_hw = tuple(numbers["output_size"].tolist()), model.tensor_info(ins[1]).shape[1:3]
    else:  # conv, depthwise: NHWC input, OHWI / 1HWC filter
        in_hw, k_hw = model.tensor_info(ins[0]).shape[1:3], model.tensor_info(ins[1]).shape[1:3]
    dilation = tuple(numbers["dilation"].tolist()) if "dilation" in numbers else 1
    g = geometry(in_hw, k_hw, tuple(numbers["stride"].tolist()), names["padding"], dilation, "bench_params")
    return {"pad_top": g.pad_top, "pad_bottom": g.pad_bottom, "pad_left": g.pad_left, "pad_right": g.pad_right}


def bench_params(model, op_index: int) -> BenchParams:
    """The prepared parameters of operator ``op_index`` of ``model`` as numbers and names (module docstring)."""
    op = dict(model.operators)[op_index]
    where = f"operator {op_index} ({op})"
    numbers, names = {}, {}
    for name, v in model.operator_params(op_index).items():
        _flatten(name, v, numbers, names, where)
    for name, v in _padding(model, op_index, numbers, names).items():
        _flatten(name, v, numbers, names, where)
    if "tie" in names and not _takes_tie(names):
        del names["tie"]
    return BenchParams(op_index, op, numbers, names, rounding_rule(names))
