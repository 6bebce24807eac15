"""Calibration observers: record a float range from data, then hand it to :func:`choose_qparams`.

* :class:`MinMaxObserver`: the running minimum and maximum (torch ``MinMaxObserver`` /
  ``PerChannelMinMaxObserver``; the TFLite calibrator records the same plain min / max).
* :class:`MovingAverageMinMaxObserver`: the exponential moving average used in QAT (torch
  ``MovingAverageMinMaxObserver`` / ``MovingAveragePerChannelMinMaxObserver``): the first batch sets
  the range, every later one moves it by ``min += c * (batch_min - min)`` in float32.
* :class:`PercentileObserver`: clips outliers at a percentile of all observed values (exact
  nearest-rank, no histogram approximation; see its docstring).

Each observes per tensor (``axis=None``) or per channel (``axis`` = the channel axis) and stores
float32 statistics, as torch does (its buffers are float32 tensors); ``calculate_qparams`` calls
:func:`dspsim.choose_qparams` with the observer's ``dtype``, ``scheme`` and keyword options, so
``MinMaxObserver(dtype="quint8", scheme="torch_affine", reduce_range=True)`` gives exactly torch's
``MinMaxObserver(dtype=torch.quint8, reduce_range=True).calculate_qparams()``.

Differences from torch, on purpose: empty batches and batches holding NaN or +-inf are refused
(torch skips empty ones and lets NaN/inf poison the range), and ``calculate_qparams`` before any
data raises instead of returning torch's default ``(1.0, 0)`` with a warning.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .qparams import SCHEMES, QParams, choose_qparams

_F = np.float32


class _Observer:
    """Shared: argument checks, the per-channel layout and the hand-off to choose_qparams."""

    def __init__(self, dtype="quint8", scheme="torch_affine", axis=None, **qparam_options):
        name = type(self).__name__
        if scheme not in SCHEMES:
            raise ValueError(f"{name}: unknown scheme {scheme!r}; expected one of {list(SCHEMES)}")
        if axis is not None and (isinstance(axis, bool) or not isinstance(axis, (int, np.integer))):
            raise TypeError(f"{name}: axis must be an int or None, got {type(axis).__name__}")
        self.dtype, self.scheme, self.axis = dtype, scheme, None if axis is None else int(axis)
        self.qparam_options = dict(qparam_options)
        choose_qparams(-1.0, 1.0, dtype, scheme, **self.qparam_options)  # refuse bad options now
        self.reset()

    def reset(self):
        """Forget everything observed."""
        self.min_val = None
        self.max_val = None

    def _batch(self, x, func):
        """``x`` as float32, shaped (channels, -1) per channel or (1, -1) per tensor."""
        a = np.asarray(x)
        if a.dtype.kind != "f":
            raise TypeError(f"{func}: x must be a floating-point array, got dtype {a.dtype}")
        if a.size == 0:
            raise ValueError(f"{func}: x is empty; calibration needs data")
        a = a.astype(np.float32)
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{func}: x must be finite (NaN or inf would poison the range)")
        if self.axis is None:
            return a.reshape(1, -1)
        if not -a.ndim <= self.axis < a.ndim:
            raise ValueError(f"{func}: axis {self.axis} is out of bounds for an array of rank {a.ndim}")
        a = np.moveaxis(a, self.axis, 0)
        if self.min_val is not None and np.ndim(self.min_val) == 1 and a.shape[0] != np.size(self.min_val):
            raise ValueError(f"{func}: x has {a.shape[0]} channels along axis {self.axis}, "
                             f"earlier batches had {np.size(self.min_val)}")
        return a.reshape(a.shape[0], -1)

    def _store(self, lo, hi):
        if self.axis is None:
            lo, hi = _F(lo[0]), _F(hi[0])
        self.min_val, self.max_val = lo, hi

    def __call__(self, x):
        """Observe ``x`` and return it unchanged (torch's ``forward``)."""
        self.observe(x)
        return x

    def range(self):
        """The ``(min, max)`` handed to :func:`choose_qparams` (float32 scalars or arrays)."""
        if self.min_val is None:
            raise ValueError(f"{type(self).__name__}.range: no data observed yet")
        return self.min_val, self.max_val

    def calculate_qparams(self) -> QParams:
        """:func:`choose_qparams` of the observed range with this observer's dtype, scheme and options."""
        if self.min_val is None:
            raise ValueError(f"{type(self).__name__}.calculate_qparams: no data observed yet "
                             f"(torch would return scale 1.0, zero point 0)")
        lo, hi = self.range()
        return choose_qparams(lo, hi, self.dtype, self.scheme, **self.qparam_options)

    def __repr__(self):
        return (f"{type(self).__name__}(dtype={self.dtype!r}, scheme={self.scheme!r}, axis={self.axis}, "
                f"min_val={self.min_val}, max_val={self.max_val})")


class MinMaxObserver(_Observer):
    """Running min / max: ``min_val = min(min_val, min(x))`` and likewise for max, in float32.

    torch ``MinMaxObserver`` (``axis=None``) and ``PerChannelMinMaxObserver`` (``axis=ch_axis``):
    the data is cast to float32 first, so the statistics are float32 values of the data. Order of
    the batches does not matter.

    Parameters
    ----------
    dtype, scheme : passed to :func:`choose_qparams` (default torch's quint8 per-tensor affine)
    axis : int, optional
        Channel axis for per-channel statistics; None = per tensor.
    **qparam_options : reduce_range, quant_min, quant_max, eps, narrow_range, bits
        Keyword options of :func:`choose_qparams`.
    """

    def observe(self, x):
        """Fold the batch ``x`` into the running min / max."""
        b = self._batch(x, f"{type(self).__name__}.observe")
        lo, hi = b.min(axis=1), b.max(axis=1)
        if self.min_val is not None:
            lo, hi = np.minimum(lo, self.min_val), np.maximum(hi, self.max_val)
        self._store(lo, hi)


class MovingAverageMinMaxObserver(_Observer):
    """Exponential moving average of the batch min / max, as in quantization-aware training.

    torch ``MovingAverageMinMaxObserver`` / ``MovingAveragePerChannelMinMaxObserver``: the first
    batch sets ``min_val, max_val = min(x), max(x)``; each later batch does, in float32 with
    every operation rounded (no fused multiply-add)::

        min_val = min_val + f32(c) * (min(x) - min_val)
        max_val = max_val + f32(c) * (max(x) - max_val)

    with ``c = averaging_constant`` (torch's default 0.01, read as float32 0.0099999998). The order
    of the batches matters.
    """

    def __init__(self, dtype="quint8", scheme="torch_affine", axis=None, averaging_constant=0.01, **qparam_options):
        c = averaging_constant
        if isinstance(c, bool) or not isinstance(c, (int, float, np.floating)) or not 0 < c <= 1:
            raise ValueError(f"MovingAverageMinMaxObserver: averaging_constant must be in (0, 1], got {c!r}")
        self.averaging_constant = float(c)
        super().__init__(dtype, scheme, axis, **qparam_options)

    def observe(self, x):
        """Move the running range toward the batch's min / max."""
        b = self._batch(x, f"{type(self).__name__}.observe")
        lo, hi = b.min(axis=1), b.max(axis=1)
        if self.min_val is not None:
            c = _F(self.averaging_constant)
            lo = (self.min_val + c * (lo - self.min_val)).astype(np.float32)
            hi = (self.max_val + c * (hi - self.max_val)).astype(np.float32)
        self._store(np.atleast_1d(lo).astype(np.float32), np.atleast_1d(hi).astype(np.float32))


class PercentileObserver(_Observer):
    """Clip outliers: the range is a pair of nearest-rank percentiles of every value observed.

    All observed values are kept (float32; per channel when ``axis`` is set). With ``n`` values
    sorted ascending as ``v[1] <= ... <= v[n]`` and ``k = ceil(percentile / 100 * n)`` (computed
    exactly, in rationals, with ``percentile`` read as the decimal it prints as: 99.9 is 999/10,
    not the binary double just above it), the range is ``[v[n + 1 - k], v[k]]``: ``max`` is the smallest value
    with at least ``percentile`` % of the data at or below it (numpy's ``inverted_cdf`` method), and
    ``min`` the mirror image from the top. ``percentile=100`` gives the plain min / max. The result
    is always a data value (no interpolation), independent of the batch order and deterministic.
    Memory grows with the data: meant for calibration sets, not for training.
    """

    def __init__(self, dtype="quint8", scheme="torch_affine", axis=None, percentile=99.99, **qparam_options):
        p = percentile
        if isinstance(p, bool) or not isinstance(p, (int, float, np.floating)) or not 50 < p <= 100:
            raise ValueError(f"PercentileObserver: percentile must be in (50, 100], got {p!r}")
        self.percentile = float(p)
        super().__init__(dtype, scheme, axis, **qparam_options)

    def reset(self):
        super().reset()
        self._chunks = []

    def observe(self, x):
        """Keep the batch's values."""
        b = self._batch(x, f"{type(self).__name__}.observe")
        self._chunks.append(b)
        self.min_val, self.max_val = self._percentiles()

    def _percentiles(self):
        data = np.sort(np.concatenate(self._chunks, axis=1), axis=1)
        n = data.shape[1]
        k = max(1, math.ceil(Fraction(repr(self.percentile)) / 100 * n))
        lo, hi = data[:, n - k], data[:, k - 1]
        if self.axis is None:
            return _F(lo[0]), _F(hi[0])
        return lo.astype(np.float32), hi.astype(np.float32)
