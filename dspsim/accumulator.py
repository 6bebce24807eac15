"""The accumulator model: width, overflow rule, x86 pair saturation, and when the fast path is exact.

An :class:`Accumulator` describes the register that sums a kernel's products: ``bits`` (16..64),
``overflow="wrap"`` (two's complement, what C int32 arithmetic does with -fwrapv and what TFLite
runs on) or ``"saturate"`` (a DSP's saturating MAC), and optionally ``pair_saturation`` (x86
``vpmaddubsw``: FBGEMM's AVX2/AVX-512 int8 paths multiply uint8 activations by int8 weights and add
ADJACENT PAIRS of products with int16 saturation before widening them into the int32 sum;
pytorch/pytorch#44939).

The emulated order is TFLite's, MAC by MAC: fully connected ``acc = sum over d`` then ``+ bias``;
conv ``acc = sum over filter_y, filter_x, in_channel`` then ``+ bias``; each addition is wrapped or
saturated to ``bits``. Padding taps contribute an exact zero (TFLite skips them).

Why the gemm fast path is exact, and when it is not used
--------------------------------------------------------
The fast path computes ``S = sum_k x_k * w_k`` on raw int8/uint8 values with ``gemm_s32`` (exact
modulo 2^32), and recovers the zero-point-adjusted accumulator by

    sum_k (x_k - zx)(w_k - zw) = S - zw * sum_k x_k - zx * sum_k w_k + K * zx * zw,

then adds the bias. (Padding taps are filled with ``zx``, so they add exactly 0.)

* Wrapping accumulators of any width are exact modulo 2^bits: wrapping after every MAC and wrapping
  once at the end give the same integer, because reduction mod 2^bits is a ring homomorphism. For
  ``bits <= 32`` the identity above, evaluated modulo 2^32 and then wrapped to ``bits``, is exact.
* If a worst-case bound ``B = max|x - zx| * sum_k |w_k - zw| + |bias|`` (per output channel; every
  partial sum in any order is bounded by it) satisfies ``B < 2^31``, the accumulator's value lies
  in int32, so the result modulo 2^32 IS the value; if also ``B <= 2^(bits-1) - 1`` no partial sum
  ever overflows, so saturation never fires and the fast path is exact for ``"saturate"`` too.
* Accumulators wider than 32 bits need the exact value: from ``B < 2^31`` as above, or from
  ``K * max|x| * max|w| < 2^31`` (the raw sum ``S`` is then exact and the identity holds in int64).
* Pair saturation never fires when ``max|x| * (|w_2j| + |w_2j+1|) <= 32767`` for every pair (uint8
  activations restricted to 7 bits, PyTorch's ``reduce_range``, guarantee it).

Otherwise (a saturating model that may overflow, a possible pair saturation, a wide accumulator
that int32 cannot hold, or event counting requested while overflow is possible) the kernels run the
checked kernel :func:`mac_by_mac_conv`, MAC by MAC.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


@dataclass(frozen=True)
class Accumulator:
    """An accumulator register: ``bits`` wide, ``overflow`` "wrap" or "saturate", optional pair saturation.

    Parameters
    ----------
    bits : int in [16, 64]
    overflow : "wrap" | "saturate"
        "wrap": each addition keeps the low ``bits`` bits (two's complement). "saturate": each
        addition that leaves ``[-2^(bits-1), 2^(bits-1) - 1]`` is clamped to the nearest bound.
    pair_saturation : bool
        Model x86 ``vpmaddubsw``: raw products ``x[2j]*w[2j] + x[2j+1]*w[2j+1]`` (uint8
        activations times int8 weights, pairs along the flattened ``(filter_y, filter_x,
        in_channel)`` index; padding taps hold the input zero point; an odd last element pairs with
        0) are saturated to int16, then added into the accumulator; the zero-point terms
        ``- zx*(sum w - K*zw) - zw*sum x`` (FBGEMM's column and row offsets) are added as one more
        accumulator addition before the bias.

    The default ``Accumulator()`` is TFLite's int32 with wrapping, which no valid TFLite model
    overflows.
    """

    bits: int = 32
    overflow: str = "wrap"
    pair_saturation: bool = False

    def __post_init__(self):
        func = "Accumulator"
        if isinstance(self.bits, bool) or not isinstance(self.bits, (int, np.integer)):
            raise TypeError(f"{func}: bits must be an integer, got {type(self.bits).__name__}")
        if not 16 <= self.bits <= 64:
            raise ValueError(f"{func}: bits must be in [16, 64], got {self.bits}")
        if self.overflow not in ("wrap", "saturate"):
            raise ValueError(f"{func}: overflow must be 'wrap' or 'saturate', got {self.overflow!r}")
        if not isinstance(self.pair_saturation, (bool, np.bool_)):
            raise TypeError(f"{func}: pair_saturation must be a bool")
        object.__setattr__(self, "bits", int(self.bits))

    @property
    def limit(self) -> int:
        """Largest value the accumulator holds, ``2^(bits-1) - 1``."""
        return (1 << (self.bits - 1)) - 1

    def exact_bits(self, bound: int, raw_bound: int, pair_bound: int, need_events: bool):
        """How the gemm fast path recovers the accumulator, or ``None`` if the checked kernel is needed.

        ``bound``: worst |partial sum| (zero-point adjusted, with bias); ``raw_bound``: worst |raw sum|
        ``K * max|x| * max|w|``; ``pair_bound``: worst |raw pair sum|. Returns 32 (the value modulo
        2^32 suffices) or 64 (the raw sum is exact). See the module docstring for the argument.
        """
        overflow_possible = bound > self.limit
        if self.pair_saturation and pair_bound > 32767:
            return None
        if overflow_possible and (self.overflow == "saturate" or need_events):
            return None
        if self.bits <= 32 or bound < 1 << 31:
            return 32
        if raw_bound < 1 << 31:
            return 64
        return None


@dataclass(frozen=True)
class KernelStats:
    """Events of one kernel call (``stats=True``).

    Attributes
    ----------
    overflow_events : int
        Accumulator additions that left the accumulator's range (and wrapped or saturated).
    overflowed_outputs : int
        Outputs whose accumulation overflowed at least once.
    pair_saturations : int
        int16 pair sums saturated by the ``pair_saturation`` model.
    requant_saturations : int
        Accumulators beyond int32 saturated before a fixed-point requantization.
    clamped_low, clamped_high : int
        Outputs clamped to act_min / act_max (the output type's range when unset).
    fast_path : bool
        True when the gemm fast path ran (no overflow possible, or wrapping), False for MAC by MAC.
    """

    overflow_events: int = 0
    overflowed_outputs: int = 0
    pair_saturations: int = 0
    requant_saturations: int = 0
    clamped_low: int = 0
    clamped_high: int = 0
    fast_path: bool = True


@njit(cache=True, inline="always")
def _acc_add(acc, term, bits, saturate):
    """``acc + term`` in a ``bits``-bit accumulator; returns (new acc, 1 if it overflowed else 0)."""
    # Every test is made before adding: LLVM takes a signed int64 add as never wrapping and folds a test
    # made on the sum (an int64 bias can take the sum beyond int64 even when bits < 64).
    hi = INT64_MAX if bits == 64 else (np.int64(1) << (bits - 1)) - 1
    lo = -hi - 1
    if not ((term > 0 and acc > hi - term) or (term < 0 and acc < lo - term)):
        return acc + term, 0
    if saturate:
        return (hi if term > 0 else lo), 1
    if term > 0 and acc > INT64_MAX - term:  # acc + term - 2^64: two halves in [-2^63, 0)
        s = (acc - INT64_MAX - 1) + (term - INT64_MAX - 1)
    elif term < 0 and acc < INT64_MIN - term:  # acc + term + 2^64: two halves in [0, 2^63)
        s = (acc + INT64_MAX + 1) + (term + INT64_MAX + 1)
    else:
        s = acc + term
    if bits == 64:
        return s, 1
    sh = 64 - bits
    return (s << sh) >> sh, 1


@njit(cache=True)
def mac_by_mac_conv(x, w, bias, zx, zw, stride_h, stride_w, dil_h, dil_w, pad_t, pad_l, ch_base,
                    bits, saturate, pair, acc_out, events_out, pre_bias_out, tap_at, taps_out):
    """The checked kernel, MAC by MAC in TFLite's order (filter_y, filter_x, in_channel, then bias),
    each addition wrapped or saturated to ``bits`` (:class:`Accumulator`).

    ``x`` (B, H, W, C) raw; ``w`` (OC, KH, KW, ICg) raw, ``zw`` (OC,) its zero points; output channel
    ``oc`` reads input channels ``ch_base[oc] .. ch_base[oc] + ICg``; ``acc_out`` (B, OH, OW, OC)
    int64 receives the accumulators, ``events_out`` (same shape) the overflow count of each. Padding taps are skipped,
    except in pair mode where they hold ``zx`` (FBGEMM im2col). Returns the pair-saturation count.
    Fully connected = 1x1 conv on (B, 1, 1, K). Never raises.

    Stage capture (:meth:`dspsim.kernels._common.ConvProblem.stages`): ``pre_bias_out`` (the shape of
    ``acc_out``, or None) receives each accumulator before the bias; for the output at flat index ``tap_at``
    (-1: none) row ``k`` of ``taps_out`` (KH*KW*ICg + 1, 4; or None) receives tap ``k`` in this loop's order
    as ``(x, w, kind, accumulator after the tap)``, kind 0 a MAC, 1 a padding tap (skipped: x shown as ``zx``,
    the sum unchanged; in pair mode the sum after the tap's pair, so a pair's first tap shows it unchanged), and the
    last row the zero-point correction of pair mode (kind 2; left untouched otherwise). Passing None compiles
    a specialization without them (numba prunes the ``is None`` branches): the checked path pays nothing.
    """
    n_b, in_h, in_w, _ = x.shape
    n_oc, k_h, k_w, icg = w.shape
    out_h, out_w = acc_out.shape[1], acc_out.shape[2]
    k_total = k_h * k_w * icg
    pair_events = 0
    for b in range(n_b):
        for oy in range(out_h):
            for ox in range(out_w):
                for oc in range(n_oc):
                    acc = np.int64(0)
                    ev = 0
                    pend = np.int64(0)
                    xsum = np.int64(0)
                    wsum = np.int64(0)
                    k = 0
                    base = ch_base[oc]
                    record = False
                    if taps_out is not None:  # None: this branch and every use of record compile away
                        record = tap_at == ((b * out_h + oy) * out_w + ox) * n_oc + oc
                    for fy in range(k_h):
                        iy = oy * stride_h - pad_t + dil_h * fy
                        for fx in range(k_w):
                            ix = ox * stride_w - pad_l + dil_w * fx
                            inside = iy >= 0 and iy < in_h and ix >= 0 and ix < in_w
                            for ic in range(icg):
                                wv = np.int64(w[oc, fy, fx, ic])
                                if pair:
                                    xv = np.int64(x[b, iy, ix, base + ic]) if inside else np.int64(zx)
                                    xsum += xv
                                    wsum += wv
                                    p = xv * wv
                                    if k % 2 == 0 and k + 1 < k_total:
                                        pend = p
                                    else:
                                        t = p + (pend if k % 2 == 1 else 0)
                                        if t > 32767 or t < -32768:
                                            pair_events += 1
                                            t = 32767 if t > 32767 else -32768
                                        acc, e = _acc_add(acc, t, bits, saturate)
                                        ev += e
                                elif inside:
                                    t = (wv - zw[oc]) * (np.int64(x[b, iy, ix, base + ic]) - zx)
                                    acc, e = _acc_add(acc, t, bits, saturate)
                                    ev += e
                                if taps_out is not None:
                                    if record:
                                        taps_out[k, 0] = np.int64(x[b, iy, ix, base + ic]) if inside else zx
                                        taps_out[k, 1] = wv
                                        taps_out[k, 2] = 0 if inside else 1
                                        taps_out[k, 3] = acc
                                k += 1
                    if pair:
                        corr = -zx * (wsum - k_total * zw[oc]) - zw[oc] * xsum
                        acc, e = _acc_add(acc, corr, bits, saturate)
                        ev += e
                        if taps_out is not None:
                            if record:
                                taps_out[k_total, 2] = 2
                                taps_out[k_total, 3] = acc
                    if pre_bias_out is not None:
                        pre_bias_out[b, oy, ox, oc] = acc
                    acc, e = _acc_add(acc, bias[oc], bits, saturate)
                    acc_out[b, oy, ox, oc] = acc
                    events_out[b, oy, ox, oc] = ev + e
    return pair_events
