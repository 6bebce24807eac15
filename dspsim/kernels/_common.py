"""Shared by the kernels: argument checking, padding geometry, and the accumulate-requantize driver.

The driver :class:`ConvProblem` is where every matrix-shaped kernel (fully connected, conv, depthwise) meets
the accumulator model and the requantization: it bounds the accumulator, picks the fast path (the
gemm cores or a direct loop, finished modulo 2^32 or exactly, see ``dspsim.accumulator``) or the
checked MAC-by-MAC kernel, and requantizes in one pass (``dspsim.requant.requantize_into``).
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..accumulator import Accumulator, KernelStats, mac_by_mac_conv
from ..fixedpoint import as_int_array, requant_rounding
from ..requant import Requant, float_bias_arrays, output_range
from ._checks import channel_zero_points, check_tensor, pair, zero_point
from .mac.gemm import FusedRequant, PackedWeights
from .quantize.requantize import prepare_requantize_into, requantize_into

_ACT_TYPES = (np.dtype(np.int8), np.dtype(np.uint8))
ACT_TYPES16 = _ACT_TYPES + (np.dtype(np.int16),)
"""Activation types of the matrix kernels: 8-bit, and int16 (TFLite's 16x8: int64 bias and accumulator)."""


# --------------------------------------------------------------------------------------------
# argument checking
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Geometry:
    """Output size and padding of a 2-D window op (TFLite's index rule, docs/semantics.md §3).

    ``in_y = out_y * stride_h - pad_top + dilation_h * filter_y`` (same for x); taps outside the
    input contribute an exact zero.
    """

    out_h: int
    out_w: int
    stride: tuple
    dilation: tuple
    pad_top: int
    pad_left: int
    pad_bottom: int = 0
    pad_right: int = 0

    @property
    def pads(self):
        """(top, bottom, left, right), as :func:`dspsim.kernels.mac.gemm.conv2d_s32` takes them."""
        return self.pad_top, self.pad_bottom, self.pad_left, self.pad_right


def geometry(in_hw, k_hw, stride, padding, dilation, func) -> Geometry:
    """Resolve ``padding`` ("VALID", "SAME", an int, (ph, pw) or ((top, bottom), (left, right))).

    "SAME" follows TFLite/TensorFlow: ``out = ceil(in / stride)``, total padding
    ``max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0)``, the odd pixel at the bottom/right.
    """
    stride = pair(stride, func, "stride")
    dilation = pair(dilation, func, "dilation")
    eff = [(k - 1) * d + 1 for k, d in zip(k_hw, dilation)]
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            pads = [(0, 0), (0, 0)]
        elif mode == "SAME":
            pads = []
            for n, e, s in zip(in_hw, eff, stride):
                out = -(-n // s)
                total = max((out - 1) * s + e - n, 0)
                pads.append((total // 2, total - total // 2))
        else:
            raise ValueError(f"{func}: padding must be 'VALID', 'SAME' or explicit, got {padding!r}")
    else:
        try:
            if isinstance(padding, (int, np.integer)) or all(isinstance(p, (int, np.integer)) for p in padding):
                ph, pw = pair(padding, func, "padding", lo=0)
                pads = [(ph, ph), (pw, pw)]
            else:
                pads = [pair(p, func, "padding", lo=0) for p in padding]
                if len(pads) != 2:
                    raise TypeError
        except TypeError:
            raise TypeError(f"{func}: padding must be 'VALID', 'SAME', an int, (ph, pw) or "
                            f"((top, bottom), (left, right)), got {padding!r}") from None
    outs = [(n + a + b - e) // s + 1 for n, (a, b), e, s in zip(in_hw, pads, eff, stride)]
    if min(outs) < 1 or any(n + a + b < e for n, (a, b), e in zip(in_hw, pads, eff)):
        raise ValueError(f"{func}: the padded input {in_hw} is smaller than the dilated filter {tuple(eff)}; "
                         "no output")
    return Geometry(outs[0], outs[1], stride, dilation, pads[0][0], pads[1][0], pads[0][1], pads[1][1])


@dataclass(frozen=True)
class Quant:
    """Resolved quantization arguments of one kernel call."""

    requant: Requant
    zx: int
    zw: np.ndarray  # one per output channel
    zo: int
    lo: int
    hi: int
    out_dtype: np.dtype


def resolve_quant(func, op, x_dtype, w_dtype, n_out, *, input_zero_point, weight_zero_point, output_zero_point,
                  multiplier, shift, rounding, tie, requant, input_scale, weight_scale, output_scale, act_min,
                  act_max, out_dtype) -> Quant:
    """Turn the kernel keywords into a :class:`Quant`.

    Requantization is, by priority: ``requant`` a :class:`Requant`; ``requant`` an engine (a name of
    :func:`dspsim.engines.names` or an :class:`~dspsim.engines.EngineProfile`) with the three scales: the
    engine's rule for ``op``'s MAC family (:meth:`Requant.from_scales`); scales alone (TFLite's derivation,
    engine "tflm"); ``requant="shift"`` with ``shift`` and the tie rule ``tie`` (a
    :class:`~dspsim.fixedpoint.Rounding` or its name, default half away from zero); otherwise
    ``multiplier``/``shift``. ``rounding`` is the fixed-point build, "double" | "single".
    """
    requant_rounding(rounding, func)
    if tie is not None and requant != "shift":
        raise ValueError(f"{func}: tie= is the tie rule of requant='shift', got requant={requant!r}")
    t, lo, hi = output_range(out_dtype, act_min, act_max, func)
    zx = zero_point(input_zero_point, x_dtype, func, "input_zero_point")
    zw = channel_zero_points(weight_zero_point, w_dtype, n_out, func, "weight_zero_point")
    zo = zero_point(output_zero_point, t.dtype, func, "output_zero_point")
    scales = (input_scale, weight_scale, output_scale)
    if isinstance(requant, Requant):
        rq = requant
    elif requant == "shift":
        if shift is None:
            raise ValueError(f"{func}: requant='shift' needs shift=")
        if rounding != "double":
            raise ValueError(f"{func}: rounding={rounding!r} is a fixed-point build; requant='shift' takes tie=")
        try:
            rq = Requant.shift_only(shift, "half_away_from_zero" if tie is None else tie)
        except (ValueError, TypeError) as e:
            raise type(e)(f"{func}: {str(e).replace('Requant.shift_only: ', '')}") from None
    elif requant is not None or any(s is not None for s in scales):
        if any(s is None for s in scales):
            raise ValueError(f"{func}: float-scale requantization needs input_scale, weight_scale and output_scale")
        if multiplier is not None or shift is not None:
            raise ValueError(f"{func}: give either multiplier/shift or scales, not both")
        try:
            rq = Requant.from_scales(*scales, engine=requant or "tflm", op=op, rounding=rounding)
        except (ValueError, TypeError) as e:
            raise type(e)(f"{func}: {str(e).replace('Requant.from_scales: ', '')}") from None
    else:
        if multiplier is None or shift is None:
            raise ValueError(f"{func}: give multiplier and shift, or scales with requant=")
        try:
            rq = Requant.fixed_point(multiplier, shift, rounding)
        except (ValueError, TypeError) as e:
            raise type(e)(f"{func}: {str(e).replace('Requant.fixed_point: ', '')}") from None
    return Quant(rq, zx, zw, zo, lo, hi, t.dtype)


def bias_arrays(bias, n, q: Quant, func, bias_bits=32):
    """(int64 bias (n,), float-bias arrays ``(fb_a, fb_b, FloatBias)`` of ``requant.requantize_value``); an
    integer bias within ``bias_bits`` (32, or 64 for the 16x8 kernels)."""
    b = None if bias is None else np.asarray(bias)
    if b is not None and (b.ndim != 1 or b.size != n):
        raise ValueError(f"{func}: bias must have shape ({n},), got {b.shape}")
    if b is not None and b.dtype.kind == "f":
        if not np.all(np.isfinite(b)):
            raise ValueError(f"{func}: a float bias must be finite")
        return np.zeros(n, np.int64), float_bias_arrays(b, q.requant, n, func)
    fb = float_bias_arrays(None, q.requant, n, func)
    if b is None:
        return np.zeros(n, np.int64), fb
    return as_int_array(b, func, "bias", -(1 << (bias_bits - 1)), (1 << (bias_bits - 1)) - 1), fb


def signed_weights(w, q: Quant):
    """uint8 weights as int8 ``w - 128`` with zero points ``zw - 128`` (the same differences)."""
    if w.dtype == np.uint8:
        return np.ascontiguousarray((w.astype(np.int16) - 128).astype(np.int8)), dataclasses.replace(q, zw=q.zw - 128)
    return np.ascontiguousarray(w), q


# --------------------------------------------------------------------------------------------
# the driver
# --------------------------------------------------------------------------------------------
@njit(cache=True)
def _weight_bounds(wm, zw):
    """Per row: sum |w - zw|; overall: max |w| and the largest |w_2j| + |w_2j+1| (pairs along a row)."""
    n, k = wm.shape
    row_abs = np.zeros(n, np.int64)
    wmax = 0
    pmax = 0
    for i in range(n):
        acc = np.int64(0)
        for j in range(k):
            v = np.int64(wm[i, j])
            acc += abs(v - zw[i])
            wmax = max(wmax, abs(v))
        for j in range(0, k, 2):
            pmax = max(pmax, abs(np.int64(wm[i, j])) + (abs(np.int64(wm[i, j + 1])) if j + 1 < k else 0))
        row_abs[i] = acc
    return row_abs, wmax, pmax


def bounds(x, wm, zx, zw, bias_i, cache=None):
    """(B, raw_bound, pair_bound) of accumulator.Accumulator.exact_bits for patches of ``x`` and rows of ``wm``.

    ``cache`` (a PackedWeights' dict) keeps the weight terms per weight zero points.
    """
    xmin, xmax = int(x.min()), int(x.max())
    amax = max(abs(xmax - zx), abs(xmin - zx), 0)
    key = ("bounds", zw.tobytes())
    if cache is None or key not in cache:
        terms = _weight_bounds(wm, zw)
        if cache is None:
            cache = {}
        cache[key] = terms
    row_abs, wmax, pmax = cache[key]
    xabs = max(abs(xmin), abs(xmax), abs(zx))  # padding taps hold zx
    b = amax * row_abs + np.abs(bias_i)
    return int(b.max()), wm.shape[1] * xabs * int(wmax), xabs * int(pmax)


def weights_and_pack(w, func, ndim):
    """``(raw int8/uint8 weights, PackedWeights or None)``: ``w`` is an array or ``dspsim.pack_weights(w)``."""
    if isinstance(w, PackedWeights):
        if len(w.shape) != ndim:
            raise ValueError(f"{func}: packed weights must come from a {ndim}-D weight array, got shape {w.shape}")
        return w.weights, w
    return check_tensor(w, func, "w", ndim=ndim), None


_INT64 = np.iinfo(np.int64)


@dataclass(frozen=True)
class MacStages:
    """The stages of a MAC kernel's outputs (:meth:`ConvProblem.stages`), each int64 of the output's shape.

    Attributes
    ----------
    acc : ndarray
        The accumulator before the bias, as the engine's register holds it (wrapped or saturated to its width
        after every addition, in the kernel's loop order).
    acc_bias : ndarray
        The accumulator after the bias (one more addition in that register).
    requant : ndarray
        The requantized value before the output zero point and the activation clamp: the output is
        ``clip(requant + output_zero_point, act_min, act_max)``.
    taps : dict or None
        The chosen output's taps in accumulation order: arrays ``x``, ``w``, ``x_zero_point``,
        ``w_zero_point``, ``kind`` (0 a MAC, 1 a padding tap the engine skips, 2 pair mode's zero-point
        correction) and ``partial_sum`` (the accumulator after the tap; the last one is ``acc``).
    """

    acc: np.ndarray
    acc_bias: np.ndarray
    requant: np.ndarray
    taps: dict | None = None

    def map(self, fn) -> "MacStages":
        """The stages with ``fn`` applied to each array (the output's own shape or layout); the taps as they are."""
        return MacStages(fn(self.acc), fn(self.acc_bias), fn(self.requant), self.taps)

    def reshape(self, shape) -> "MacStages":
        """The stages with the output's ``shape`` (a kernel whose output is not (B, OH, OW, OC))."""
        return self.map(lambda a: a.reshape(shape))

    def named(self) -> dict:
        """``{"acc": .., "acc_bias": .., "requant": ..}``, as :class:`NamedStages` gives its arrays."""
        return {"acc": self.acc, "acc_bias": self.acc_bias, "requant": self.requant}


@dataclass(frozen=True)
class NamedStages:
    """The stages of an operator whose arithmetic has more steps than a MAC's (LSTM, SVDF): ``arrays`` maps each
    stage's name to its int64 array, in the order of the arithmetic; ``taps`` as :class:`MacStages`' (kind 3 a tap
    of the operator's second sum, whose partial sums start again: LSTM's recurrent FC, SVDF's time FC)."""

    arrays: dict
    taps: dict | None = None

    def named(self) -> dict:
        """``arrays``."""
        return self.arrays

    def _output_stage(self, name):
        if name not in self.arrays:
            raise TypeError(f"NamedStages: these stages have no {name!r} of the output (an LSTM's are per gate; "
                            "named() lists them)")
        return self.arrays[name]

    @property
    def acc(self):
        """:class:`MacStages`' ``acc`` where the operator has an output accumulator (SVDF), else a TypeError."""
        return self._output_stage("acc")

    @property
    def acc_bias(self):
        """:class:`MacStages`' ``acc_bias`` where the operator has one (SVDF), else a TypeError."""
        return self._output_stage("acc_bias")

    @property
    def requant(self):
        """:class:`MacStages`' ``requant`` where the operator has one (SVDF), else a TypeError."""
        return self._output_stage("requant")


def sum_taps(func, parts) -> dict:
    """The taps of one output's sums in accumulation order, checked against the kernel's own sums.

    ``parts``: per sum ``(x, w, x_zero_point, w_zero_point, kind, start, bits, acc)``: the operands (1-D), their
    zero points, the tap kind (1: a padding tap, which adds nothing), the register's start, its width (None: int64,
    exact) and the kernel's value of the sum (``acc``). Returns :class:`MacStages`' ``taps`` dict; a RuntimeError
    naming ``func`` where a last partial sum is not ``acc`` (the two would describe different arithmetic)."""
    fields = {name: [] for name in ("x", "w", "x_zero_point", "w_zero_point", "kind", "partial_sum")}
    for x, w, zx, zw, kind, start, bits, acc in parts:
        x, w, kind = np.asarray(x, np.int64), np.asarray(w, np.int64), np.broadcast_to(kind, np.shape(x))
        ps = int(start) + np.cumsum(np.where(kind == 1, 0, (x - zx) * (w - zw)))
        if bits is not None:
            ps = (ps + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
        if ps.size and ps[-1] != acc:
            raise RuntimeError(f"{func}: the taps sum to {int(ps[-1])}, the kernel's accumulator is {int(acc)}")
        for name, v in (("x", x), ("w", w), ("x_zero_point", np.full(x.size, zx, np.int64)),
                        ("w_zero_point", np.full(x.size, zw, np.int64)), ("kind", kind.astype(np.int64)),
                        ("partial_sum", ps)):
            fields[name].append(v)
    return {name: np.concatenate(v) for name, v in fields.items()}


@dataclass(frozen=True)
class ConvProblem:
    """One call of a conv-shaped kernel (fully connected is a 1x1 conv), resolved once by its wrapper.

    Build it with :meth:`build` and run it with :meth:`run`: the wrapper validates and resolves
    (quantization, weights, bias, geometry), the problem accumulates and requantizes.

    Attributes
    ----------
    func : str
        The public function, for error messages.
    quant : Quant
        Zero points (the weights' with the uint8 offset), clamp, output type and requantization.
    x : ndarray (B, H, W, C)
        The activations' raw codes (int8 or uint8).
    w : ndarray (OC, KH, KW, ICg) of int8
        The weights, uint8 ones as ``w - 128`` (:func:`signed_weights`), in the checked kernel's layout.
    channel_base : ndarray (OC,)
        First input channel that output channel ``oc`` reads.
    geometry : Geometry
    bias : ndarray (OC,) of int64
        The integer bias (zeros for none or a float bias).
    float_bias : tuple
        ``(fb_a, fb_b, FloatBias)`` of :func:`dspsim.requant.float_bias_arrays`.
    fast : callable
        ``fast(problem, exact_bits)``: the finished accumulators (M, OC), int32 modulo 2^32 when
        ``exact_bits`` is 32, exact int64 when it is 64, or None when it cannot (the checked kernel
        then runs, exact in int64).
    exact_fast : bool
        The fast path's sums are exact int64 (direct loops): no raw-sum bound applies.
    packed : PackedWeights or None
        The caller's packed weights (their cache keeps the weight bounds per zero point).
    """

    func: str
    quant: Quant
    x: np.ndarray
    w: np.ndarray
    channel_base: np.ndarray
    geometry: Geometry
    bias: np.ndarray
    float_bias: tuple
    fast: object
    exact_fast: bool = False
    packed: PackedWeights | None = None

    @classmethod
    def build(cls, func, quant: Quant, x, w, bias, channel_base, geometry: Geometry, fast, *, exact_fast=False,
              packed=None) -> "ConvProblem":
        """Resolve the bias (int32, float, or None) and sign the weights, once per call."""
        bias_i, fbias = bias_arrays(bias, w.shape[0], quant, func, 64 if x.dtype == np.int16 else 32)
        ws, quant = signed_weights(w, quant)
        return cls(func, quant, np.ascontiguousarray(x), ws, channel_base, geometry, bias_i, fbias, fast, exact_fast,
                   packed)

    def _accumulator(self, accumulator):
        """The accumulator model of a call (the default: int32, int64 for 16x8), checked."""
        func = self.func
        acc_model = Accumulator(64 if self.x.dtype == np.int16 else 32) if accumulator is None else accumulator
        if not isinstance(acc_model, Accumulator):
            raise TypeError(f"{func}: accumulator must be an Accumulator, got {type(acc_model).__name__}")
        if acc_model.pair_saturation and (self.x.dtype != np.uint8 or self.w.dtype != np.int8):
            raise ValueError(f"{func}: pair_saturation models vpmaddubsw: uint8 activations, int8 weights")
        return acc_model

    def _checked(self, acc_model, pre_bias=None, tap=-1, taps=None):
        """The checked kernel (:func:`~dspsim.accumulator.mac_by_mac_conv`): (accumulators after the bias,
        overflow events per output, pair saturations); ``pre_bias`` and ``taps`` receive the stages."""
        g, q = self.geometry, self.quant
        acc = np.empty((self.x.shape[0], g.out_h, g.out_w, self.w.shape[0]), np.int64)
        events = np.empty_like(acc)
        pair_ev = mac_by_mac_conv(self.x, self.w, self.bias, q.zx, q.zw, g.stride[0], g.stride[1], g.dilation[0],
                                  g.dilation[1], g.pad_top, g.pad_left, self.channel_base, acc_model.bits,
                                  acc_model.overflow == "saturate", acc_model.pair_saturation, acc, events,
                                  pre_bias, tap, taps)
        return acc, events, pair_ev

    def stages(self, accumulator=None, tap=None) -> MacStages:
        """The :class:`MacStages` of this call: every output's accumulator before and after the bias and its
        requantized value, MAC by MAC in the engine's order (the checked kernel that :meth:`run` takes for a
        narrow or saturating ``accumulator``), and with ``tap`` (a flat index into the (B, OH, OW, OC) output)
        that output's taps. The requantization is :meth:`run`'s own loop with the real zero point and no clamp;
        ``requant`` is its value minus the zero point, so ``clip(requant + zo, lo, hi)`` is the output."""
        q, n_oc = self.quant, self.w.shape[0]
        acc_model = self._accumulator(accumulator)
        k_total = int(np.prod(self.w.shape[1:]))
        pre = np.empty((self.x.shape[0], self.geometry.out_h, self.geometry.out_w, n_oc), np.int64)
        taps = np.zeros((k_total + 1, 4), np.int64)
        acc, _, _ = self._checked(acc_model, pre, -1 if tap is None else int(tap), taps)
        value = np.empty(acc.size, np.int64)
        requantize_into(acc.reshape(-1), n_oc, acc_model.bits, q.requant, self.float_bias, q.zo, _INT64.min,
                        _INT64.max, value, self.func)
        tap_rows = None
        if tap is not None:
            rows = taps if acc_model.pair_saturation else taps[:k_total]
            oc = int(tap) % n_oc
            tap_rows = {"x": rows[:, 0], "w": rows[:, 1], "x_zero_point": np.full(len(rows), q.zx, np.int64),
                        "w_zero_point": np.full(len(rows), q.zw[oc], np.int64), "kind": rows[:, 2],
                        "partial_sum": rows[:, 3]}
        return MacStages(pre, acc, value.reshape(acc.shape) - q.zo, tap_rows)

    def run(self, accumulator=None, stats=False):
        """Accumulate (fast path, or the checked kernel when ``accumulator`` needs it) and requantize.

        Returns the (B, OH, OW, OC) output of ``quant.out_dtype`` [, KernelStats].
        """
        func, q, g = self.func, self.quant, self.geometry
        wide = self.x.dtype == np.int16  # 16x8: TFLite accumulates in int64
        acc_model = self._accumulator(accumulator)
        n_b = self.x.shape[0]
        n_oc = self.w.shape[0]
        cache = None if self.packed is None else self.packed.cache
        bound, raw, pair_bound = bounds(self.x, self.w.reshape(n_oc, -1), q.zx, q.zw, self.bias, cache)
        e_bits = acc_model.exact_bits(bound, 0 if self.exact_fast else raw, pair_bound, bool(stats))
        ev = ovf = pair_ev = 0
        acc = None if e_bits is None or wide else self.fast(self, e_bits)  # the gemm cores take 8-bit codes
        fast_path = acc is not None
        if not fast_path:
            acc, events, pair_ev = self._checked(acc_model)
            ev, ovf = int(events.sum()), int(np.count_nonzero(events))
        # Wrapping to the accumulator's width finishes a result that is exact modulo 2^32 (bits <= 32),
        # and changes nothing in a value that already fits (see accumulator.py).
        out = np.empty(acc.size, q.out_dtype)
        n_lo, n_hi, n_sat = requantize_into(np.ascontiguousarray(acc).reshape(-1), n_oc, acc_model.bits, q.requant,
                                            self.float_bias, q.zo, q.lo, q.hi, out, func, count=stats)
        out = out.reshape(n_b, g.out_h, g.out_w, n_oc)
        if not stats:
            return out
        return out, KernelStats(ev, ovf, int(pair_ev), int(n_sat), int(n_lo), int(n_hi), fast_path)


class ConvPlan:
    """A :class:`ConvProblem` prepared for inputs of one shape and dtype, as TFLite's Prepare does:
    weights signed and packed, bias, quantization and geometry resolved, the fast path's index
    tables and the requantization loop chosen, all once. ``run(x)`` is then the kernel call alone.

    With the default accumulator (int32 wrapping; int64 for 16x8) and no statistics, ``run`` calls
    the prepared fast path and requantization; otherwise (an :class:`Accumulator` to simulate,
    ``stats=True``, a fast path that declines) it runs the problem as the public function does, so
    the result is always that of the public function with the same arguments.

    Parameters
    ----------
    problem : ConvProblem
        Built by the kernel's wrapper on an input of the layer's shape and dtype (its values unused).
    prepare_fast : callable or None
        ``prepare_fast(problem) -> run(x) -> int32 (M, OC)`` accumulators modulo 2^32, or None when
        the fast path does not apply to this layer; None: the problem's own ``fast(problem, 32)``.
    fused : bool
        ``prepare_fast`` takes a second argument, a :class:`~dspsim.kernels.mac.gemm.FusedRequant`, and its
        ``run(x)`` then returns the requantized codes (M, OC): the gemm cores requantize each tile
        while it is in L1, and the int32 matrix never exists.
    """

    def __init__(self, problem: ConvProblem, prepare_fast=None, fused=False):
        q, g = problem.quant, problem.geometry
        self.problem = problem
        self.x_shape, self.x_dtype = problem.x.shape, problem.x.dtype
        n_oc = problem.w.shape[0]
        self.out_shape = (self.x_shape[0], g.out_h, g.out_w, n_oc)
        size = int(np.prod(self.out_shape))
        narrow = problem.x.dtype != np.int16  # 16x8: int64 accumulation in the checked kernel
        self._fast = None
        self._fused = narrow and fused
        if self._fused:
            self._fast = prepare_fast(problem, FusedRequant.prepare(n_oc, 32, q.requant, problem.float_bias, q.zo,
                                                                    q.lo, q.hi, q.out_dtype, problem.func))
        elif narrow:
            self._fast = prepare_fast(problem) if prepare_fast is not None else self._own_fast
        self._requant = None if self._fused else prepare_requantize_into(
            size, n_oc, 32, False, q.requant, problem.float_bias, q.zo, q.lo, q.hi, problem.func)
        # the wrapper's input was a probe: keep its shape and dtype, not its memory
        object.__setattr__(problem, "x", np.broadcast_to(np.zeros((), self.x_dtype), self.x_shape))

    def _own_fast(self, x):
        return self.problem.fast(self._on(x), 32)

    def _on(self, x):
        p = copy.copy(self.problem)
        object.__setattr__(p, "x", np.ascontiguousarray(x))
        return p

    def _check_x(self, x):
        if x.shape != self.x_shape or x.dtype != self.x_dtype:
            raise ValueError(f"{self.problem.func}: the plan was prepared for {self.x_dtype} {self.x_shape}, got "
                             f"{x.dtype} {x.shape}")

    def stages(self, x, accumulator=None, tap=None) -> MacStages:
        """:meth:`ConvProblem.stages` on ``x`` (of the prepared shape and dtype): opt-in, never on ``run``'s
        path."""
        self._check_x(x)
        return self._on(x).stages(accumulator, tap)

    def run(self, x, accumulator=None, stats=False):
        """The plan on ``x`` (of the prepared shape and dtype): the output (B, OH, OW, OC) [, KernelStats].
        ``plan(x)`` is ``plan.run(x)``, as every kernel's ``*_plan`` runs."""
        self._check_x(x)
        acc = None
        if accumulator is None and not stats and self._fast is not None:
            acc = self._fast(x)
        if acc is None:
            return self._on(x).run(accumulator, stats)
        if self._fused:
            return acc.reshape(self.out_shape)
        out = np.empty(acc.size, self.problem.quant.out_dtype)
        self._requant(np.ascontiguousarray(acc).reshape(-1), out)
        return out.reshape(self.out_shape)

    __call__ = run
