"""int16 ADD on power-of-two scales: LiteRT's shift-only kernel (``reference_ops::Add`` int16 with
``pot_scale``, ``tflite/kernels/internal/reference/add.h``).

LiteRT's ADD takes this path when the model's ``pot_scale_int16`` option is set (the schema default;
the converter writes false) and the scales of both inputs and the output are powers of two
(``CheckedLog2``); zero points are 0. One input is on the output's scale; the other is divided by
``2^k`` (gemmlowp ``RoundingDivideByPOT``, ties away from zero) and the two are added with int16
saturation (gemmlowp ``SaturatingAdd`` on ``FixedPoint<int16_t, 0>``), then clamped to the fused
activation range. There is no multiplier, so it differs from the general path (``left_shift = 15``,
three multipliers, :func:`dspsim.kernels.arithmetic.elementwise.add`), which TFLite Micro always takes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from ...fixedpoint import rounding_divide_by_pot_scalar
from ...requant import output_range
from ..._errors import names_its_errors
from .._checks import float32_scale
from .._checks import check_spec, check_tensor

__all__ = ["PotAddParams", "checked_log2", "pot_add", "tflite_pot_add_params"]

_INT16 = (np.dtype(np.int16),)


@dataclass(frozen=True)
class PotAddParams:
    """Right shifts (``<= 0``, TFLite's sign: ``-k`` divides by ``2^k``) of input 1 and input 2; one of them is 0."""

    input1_shift: int
    input2_shift: int


def checked_log2(scale):
    """LiteRT ``CheckedLog2`` (float32): ``(round(log2(s)), |log2(s) - round(log2(s))| < 1e-3)``."""
    v = np.float32(np.log(np.float32(scale)) * np.float32(1.0 / np.log(np.float32(2.0))))
    r = np.float32(np.floor(np.abs(v) + np.float32(0.5)) * np.sign(v))  # TfLiteRound: ties away from zero
    return int(r), bool(abs(np.float32(v - r)) < np.float32(1e-3))


@names_its_errors
def tflite_pot_add_params(input1_scale, input2_scale, output_scale) -> PotAddParams:
    """LiteRT ADD Prepare, int16 power-of-two path: ``shift_i = log2(s_i) - log2(s_out)``.

    ValueError when a scale is not a power of two (``CheckedLog2``: the engine takes the general
    path instead), or when LiteRT's Prepare fails: both shifts non-zero, or a shift > 0 (an input
    scale finer than the output's); and for a shift below -15, which dspsim does not model.
    """
    func = "tflite_pot_add_params"
    logs = []
    for s, name in ((input1_scale, "input1_scale"), (input2_scale, "input2_scale"), (output_scale, "output_scale")):
        v = float(float32_scale(s, func, name))
        e, pot = checked_log2(v)
        if not pot:
            raise ValueError(f"{func}: {name} {v!r} is not a power of two (CheckedLog2)")
        logs.append(e)
    s1, s2 = logs[0] - logs[2], logs[1] - logs[2]
    if s1 != 0 and s2 != 0:
        raise ValueError(f"{func}: one input must have the output's scale (shifts {s1}, {s2}; LiteRT add.cc Prepare)")
    if s1 > 0 or s2 > 0:
        raise ValueError(f"{func}: an input scale finer than the output's (shift {max(s1, s2)} > 0) is refused by "
                         "LiteRT's Prepare")
    if min(s1, s2) < -15:
        raise ValueError(f"{func}: a shift of {min(s1, s2)} < -15 (gemmlowp's int16 RoundingDivideByPOT mask "
                         "overflows); not modelled")
    return PotAddParams(s1, s2)


@njit(cache=True)
def _pot_add(a, b, right1, right2, sign2, lo, hi, out):
    for i in range(out.size):
        v = rounding_divide_by_pot_scalar(np.int64(a[i]), right1) \
            + sign2 * rounding_divide_by_pot_scalar(np.int64(b[i]), right2)
        v = min(max(v, -32768), 32767)  # SaturatingAdd / SaturatingSub on int16
        out[i] = min(max(v, lo), hi)


def pot_add(x1, x2, params: PotAddParams, *, act_min=None, act_max=None, subtract=False):
    """LiteRT int16 ADD (``subtract`` False) or SUB (True: ``reference_ops::Sub16`` /
    ``BroadcastSub16POTSlow``, ``a - b``) on power-of-two scales, zero points 0.

    Per element::

        a = RoundingDivideByPOT(x1, -input1_shift)     # ties away from zero; one shift is 0
        b = RoundingDivideByPOT(x2, -input2_shift)
        out = clamp(saturate_int16(a + b), act_min, act_max)

    Saturation: the int16 sum, then the activation clamp. The inputs broadcast by numpy's rule
    (LiteRT's ``BroadcastAdd6DSlow`` / ``BroadcastSub16POTSlow``: the same per-element formula).

    Parameters
    ----------
    x1, x2 : int16 arrays of one shape
    params : PotAddParams
        From :func:`tflite_pot_add_params`.
    act_min, act_max : int, optional
        Fused activation range (default the int16 range).
    """
    if not isinstance(params, PotAddParams):
        raise TypeError(f"pot_add: params must be a PotAddParams (tflite_pot_add_params), got {type(params).__name__}")
    a = check_tensor(x1, "pot_add", "x1", allowed=_INT16)
    b = check_tensor(x2, "pot_add", "x2", allowed=_INT16)
    return pot_add_plan(a.shape, b.shape, a.dtype, params, act_min=act_min, act_max=act_max, subtract=subtract)(a, b)


def pot_add_plan(shape1, shape2, dtype, params: PotAddParams, *, act_min=None, act_max=None, subtract=False):
    """:func:`pot_add` prepared for int16 operands of shapes ``shape1`` and ``shape2`` (validated once);
    returns the lean ``run(x1, x2) -> out``."""
    func = "pot_add"
    if not isinstance(params, PotAddParams):
        raise TypeError(f"{func}: params must be a PotAddParams (tflite_pot_add_params), got {type(params).__name__}")
    shape, _ = check_spec(func, "x1", shape1, dtype, _INT16)
    shape2, _ = check_spec(func, "x2", shape2, dtype, _INT16)
    try:
        out_shape = np.broadcast_shapes(shape, shape2)  # BroadcastAdd6DSlow / BroadcastSub16POTSlow
    except ValueError:
        raise ValueError(f"{func}: shapes {shape} and {shape2} do not broadcast") from None
    same = shape == shape2
    shifts = (params.input1_shift, params.input2_shift)
    if any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) for s in shifts) \
            or not all(-15 <= s <= 0 for s in shifts) or min(shifts) < 0 and max(shifts) < 0:
        raise ValueError(f"{func}: shifts must be ints in [-15, 0] with one of them 0, got {shifts}")
    _, lo, hi = output_range("int16", act_min, act_max, func)
    if not isinstance(subtract, (bool, np.bool_)):
        raise TypeError(f"{func}: subtract must be a bool, got {type(subtract).__name__}")
    right1, right2, size = -int(shifts[0]), -int(shifts[1]), math.prod(out_shape)
    sign2 = -1 if subtract else 1

    def run(x1, x2):
        out = np.empty(size, np.int16)
        if not same:
            x1, x2 = (np.ascontiguousarray(v) for v in np.broadcast_arrays(x1, x2))
        _pot_add(np.ravel(x1), np.ravel(x2), right1, right2, sign2, lo, hi, out)
        return out.reshape(out_shape)

    return run
