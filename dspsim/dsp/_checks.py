"""The argument checks of dspsim.dsp: each returns the value in the form the kernel takes, or raises a TypeError /
ValueError that names the public function and the rule (``arm_shift_q15: shift_bits must be in [-31, 16], got
40``). Kernels never see unchecked input."""
from __future__ import annotations

import numpy as np

QTYPES = {"q7": np.dtype(np.int8), "q15": np.dtype(np.int16), "q31": np.dtype(np.int32)}
"""The C type of each fixed-point format (q7_t, q15_t, q31_t)."""


def check_q(a, func: str, name: str, q: str, ndim: int = 1) -> np.ndarray:
    """``a`` as an array of ``q``'s dtype (int8 / int16 / int32, exactly: no silent cast) and rank ``ndim``."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{func}: {name} must be a numpy array of dtype {QTYPES[q]} ({q}), got {type(a).__name__}")
    if a.dtype != QTYPES[q]:
        raise TypeError(f"{func}: {name} must have dtype {QTYPES[q]} ({q}), got {a.dtype}")
    if a.ndim != ndim:
        raise ValueError(f"{func}: {name} must have rank {ndim}, got shape {a.shape}")
    return np.ascontiguousarray(a)


def check_same_shape(a: np.ndarray, b: np.ndarray, func: str, names=("a", "b")) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{func}: {names[0]} and {names[1]} must have the same shape, got {a.shape} and {b.shape}")


def check_int(v, func: str, name: str, lo: int, hi: int) -> int:
    """An int (Python or numpy, not bool) in [lo, hi]."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{func}: {name} must be an int, got {type(v).__name__}")
    if not lo <= int(v) <= hi:
        raise ValueError(f"{func}: {name} must be in [{lo}, {hi}], got {int(v)}")
    return int(v)
